//! TLS on `tls-port`: redis-cli and the `redis` crate over TLS with a CA
//! made here, client certificates required, optional or not asked for,
//! a certificate from another CA refused, certificates reloaded with
//! CONFIG SET, the plaintext port beside the TLS one.

use std::path::{Path, PathBuf};
use std::process::Command;

use rcgen::{
    BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};

use crate::eqb;
use crate::harness::*;

/// A certificate authority that signs server and client certificates.
struct Ca {
    cert: rcgen::Certificate,
    key: KeyPair,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    /// A certificate (PEM) and its key (PEM).
    fn issue(&self, names: &[&str], purpose: ExtendedKeyUsagePurpose) -> (String, String) {
        let mut params =
            CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .unwrap();
        params.extended_key_usages = vec![purpose];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        (cert.pem(), key.serialize_pem())
    }
}

/// A scratch directory with the files of two CAs: `ca.crt`, `server.*`,
/// `client.*` from the first; `ca2.crt`, `server2.*`, `other.*` (a
/// client certificate) from the second.
fn pki() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("keel-tls-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.join(name), text).unwrap();
    for (ca_file, server, client, ca_name) in [
        ("ca.crt", "server", "client", "keel test CA"),
        ("ca2.crt", "server2", "other", "another CA"),
    ] {
        let ca = Ca::new(ca_name);
        write(ca_file, &ca.cert.pem());
        let (c, k) = ca.issue(
            &["localhost", "127.0.0.1"],
            ExtendedKeyUsagePurpose::ServerAuth,
        );
        write(&format!("{server}.crt"), &c);
        write(&format!("{server}.key"), &k);
        let (c, k) = ca.issue(&["client"], ExtendedKeyUsagePurpose::ClientAuth);
        write(&format!("{client}.crt"), &c);
        write(&format!("{client}.key"), &k);
    }
    dir
}

fn p(dir: &Path, name: &str) -> String {
    dir.join(name).to_string_lossy().into_owned()
}

fn tls_server(dir: &Path, tls_port: u16, extra: &[&str]) -> Server {
    let port = tls_port.to_string();
    let (cert, key, ca) = (p(dir, "server.crt"), p(dir, "server.key"), p(dir, "ca.crt"));
    let mut args = vec![
        "--tls-port",
        port.as_str(),
        "--tls-cert-file",
        cert.as_str(),
        "--tls-key-file",
        key.as_str(),
        "--tls-ca-cert-file",
        ca.as_str(),
    ];
    args.extend_from_slice(extra);
    Server::keel_with(&args)
}

/// redis-cli over TLS: its output (stdout and stderr) and success.
fn cli(dir: &Path, port: u16, ca: &str, client: Option<&str>, args: &[&str]) -> (String, bool) {
    let mut cmd = Command::new("redis-cli");
    cmd.args(["--tls", "--cacert", &p(dir, ca), "-p", &port.to_string()]);
    if let Some(c) = client {
        cmd.args([
            "--cert",
            &p(dir, &format!("{c}.crt")),
            "--key",
            &p(dir, &format!("{c}.key")),
        ]);
    }
    let out = cmd.args(args).output().expect("redis-cli");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (text.trim().to_string(), out.status.success())
}

#[test]
fn redis_cli_over_tls_with_client_certificates() {
    require_tool("redis-cli", "redis-tools");
    let dir = pki();
    let tls_port = free_port();
    let s = tls_server(&dir, tls_port, &[]);
    // tls-auth-clients yes (the default): a certificate from the CA.
    assert_eq!(
        cli(&dir, tls_port, "ca.crt", Some("client"), &["SET", "k", "v"]).0,
        "OK"
    );
    assert_eq!(
        cli(&dir, tls_port, "ca.crt", Some("client"), &["GET", "k"]).0,
        "v"
    );
    // No certificate, or one from another CA: the handshake fails.
    let (out, _) = cli(&dir, tls_port, "ca.crt", None, &["PING"]);
    assert_ne!(out, "PONG");
    let (out, _) = cli(&dir, tls_port, "ca.crt", Some("other"), &["PING"]);
    assert_ne!(out, "PONG");
    // The plaintext port serves beside it, the same data.
    let mut plain = s.raw();
    eqb!(plain.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    // optional: no certificate is fine, a bad one still is not.
    eqb!(
        plain.cmd(&["CONFIG", "SET", "tls-auth-clients", "optional"]),
        b"+OK\r\n"
    );
    assert_eq!(cli(&dir, tls_port, "ca.crt", None, &["PING"]).0, "PONG");
    let (out, _) = cli(&dir, tls_port, "ca.crt", Some("other"), &["PING"]);
    assert_ne!(out, "PONG");
    // no: certificates are not asked for.
    eqb!(
        plain.cmd(&["CONFIG", "SET", "tls-auth-clients", "no"]),
        b"+OK\r\n"
    );
    assert_eq!(cli(&dir, tls_port, "ca.crt", None, &["PING"]).0, "PONG");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn certificates_reload_with_config_set() {
    require_tool("redis-cli", "redis-tools");
    let dir = pki();
    let tls_port = free_port();
    let s = tls_server(&dir, tls_port, &["--tls-auth-clients", "no"]);
    let mut plain = s.raw();
    assert_eq!(cli(&dir, tls_port, "ca.crt", None, &["PING"]).0, "PONG");
    // A file that does not exist: refused, nothing changes.
    let e = plain.cmd(&["CONFIG", "SET", "tls-cert-file", "/nonexistent.crt"]);
    eqb!(
        e,
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs.\r\n"
    );
    let got = plain.cmd(&["CONFIG", "GET", "tls-cert-file"]);
    let want = p(&dir, "server.crt");
    assert!(
        String::from_utf8_lossy(&got).contains(&want),
        "{}",
        escape(&got)
    );
    assert_eq!(cli(&dir, tls_port, "ca.crt", None, &["PING"]).0, "PONG");
    // Applying fails for one parameter of several: all of them get their
    // old values back (Redis's configSetCommand), the error names it.
    eqb!(
        plain.cmd(&[
            "CONFIG",
            "SET",
            "timeout",
            "9",
            "maxmemory-policy",
            "allkeys-lru",
            "tls-cert-file",
            "/nonexistent.crt",
            "maxmemory",
            "1gb"
        ]),
        b"-ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs.\r\n"
    );
    eqb!(
        plain.cmd(&["CONFIG", "GET", "timeout"]),
        b"*2\r\n$7\r\ntimeout\r\n$1\r\n0\r\n"
    );
    eqb!(
        plain.cmd(&["CONFIG", "GET", "maxmemory-policy"]),
        b"*2\r\n$16\r\nmaxmemory-policy\r\n$10\r\nnoeviction\r\n"
    );
    eqb!(
        plain.cmd(&["CONFIG", "GET", "maxmemory"]),
        b"*2\r\n$9\r\nmaxmemory\r\n$1\r\n0\r\n"
    );
    assert_eq!(cli(&dir, tls_port, "ca.crt", None, &["PING"]).0, "PONG");
    // The second CA's certificate: clients that trust only the first
    // now fail, those that trust the second succeed.
    let (cert, key) = (p(&dir, "server2.crt"), p(&dir, "server2.key"));
    eqb!(
        plain.cmd(&[
            "CONFIG",
            "SET",
            "tls-cert-file",
            &cert,
            "tls-key-file",
            &key
        ]),
        b"+OK\r\n"
    );
    assert_eq!(cli(&dir, tls_port, "ca2.crt", None, &["PING"]).0, "PONG");
    let (out, _) = cli(&dir, tls_port, "ca.crt", None, &["PING"]);
    assert_ne!(out, "PONG");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn redis_crate_over_tls() {
    let dir = pki();
    let tls_port = free_port();
    let _s = tls_server(&dir, tls_port, &[]);
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let certs = redis::TlsCertificates {
        client_tls: Some(redis::ClientTlsConfig {
            client_cert: read("client.crt"),
            client_key: read("client.key"),
        }),
        root_cert: Some(read("ca.crt")),
    };
    let url = format!("rediss://127.0.0.1:{tls_port}");
    let client = redis::Client::build_with_tls(url, certs).unwrap();
    let mut con = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("SET")
        .arg("tls-key")
        .arg("over tls")
        .query_async(&mut con)
        .await
        .unwrap();
    let v: String = redis::cmd("GET")
        .arg("tls-key")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(v, "over tls");
    // A large value crosses many TLS records both ways.
    let big = "x".repeat(3 << 20);
    let _: () = redis::cmd("SET")
        .arg("big")
        .arg(&big)
        .query_async(&mut con)
        .await
        .unwrap();
    let back: String = redis::cmd("GET")
        .arg("big")
        .query_async(&mut con)
        .await
        .unwrap();
    assert_eq!(back.len(), big.len());
    let _ = std::fs::remove_dir_all(&dir);
}

/// CPU ticks a thread of `pid` named `name` has used.
fn thread_ticks(pid: u32, name: &str) -> u64 {
    let mut total = 0;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .flatten()
    {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        if &stat[open + 1..close] != name {
            continue;
        }
        let f: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        total += f[11].parse::<u64>().unwrap() + f[12].parse::<u64>().unwrap();
    }
    total
}

#[tokio::test]
async fn tls_connections_move_between_workers() {
    let dir = pki();
    let tls_port = free_port();
    let s = tls_server(
        &dir,
        tls_port,
        &["--threads", "2", "--tls-auth-clients", "no"],
    );
    let read = |name: &str| std::fs::read(dir.join(name)).unwrap();
    let url = format!("rediss://127.0.0.1:{tls_port}");
    let mut conns = Vec::new();
    for _ in 0..20 {
        let certs = redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(read("ca.crt")),
        };
        let client = redis::Client::build_with_tls(url.clone(), certs).unwrap();
        conns.push(client.get_multiplexed_async_connection().await.unwrap());
    }
    // All on the one active worker; a second one takes half of them.
    let mut plain = s.raw();
    eqb!(
        plain.cmd(&["CONFIG", "SET", "active-threads-min", "2"]),
        b"+OK\r\n"
    );
    let start = thread_ticks(s.pid(), "keel-worker-1");
    let big = "v".repeat(100_000);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        for (i, con) in conns.iter_mut().enumerate() {
            let key = format!("k{i}");
            let _: () = redis::cmd("SET")
                .arg(&key)
                .arg(&big)
                .query_async(con)
                .await
                .unwrap();
            let back: String = redis::cmd("GET").arg(&key).query_async(con).await.unwrap();
            assert_eq!(back, big);
        }
        // Moved connections are served by the second worker.
        if thread_ticks(s.pid(), "keel-worker-1") > start + 5 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no TLS connection moved to the second worker"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `tls-replication yes`: a keel replica reaches its primary's `tls-port`
/// with the CA and a client certificate, and the stream flows over TLS.
#[test]
fn replica_over_tls() {
    let dir = pki();
    let tls_port = free_port();
    let primary = tls_server(&dir, tls_port, &[]);
    let (cert, key, ca) = (
        p(&dir, "client.crt"),
        p(&dir, "client.key"),
        p(&dir, "ca.crt"),
    );
    let replica = Server::keel_with(&[
        "--tls-replication",
        "yes",
        "--tls-ca-cert-file",
        &ca,
        "--tls-client-cert-file",
        &cert,
        "--tls-client-key-file",
        &key,
    ]);
    let mut r = replica.raw();
    eqb!(
        r.cmd(&["REPLICAOF", "127.0.0.1", &tls_port.to_string()]),
        b"+OK\r\n"
    );
    let mut m = primary.raw();
    eqb!(m.cmd(&["SET", "k", "over tls"]), b"+OK\r\n");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let link = info_field(&info(&mut r, "replication"), "master_link_status");
        if link.as_deref() == Some("up") && r.cmd(&["GET", "k"]) == b"$8\r\nover tls\r\n" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the replica never synced over TLS: {:?}",
            link
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let list = String::from_utf8(m.cmd(&["CLIENT", "LIST", "TYPE", "replica"])).unwrap();
    assert!(list.contains("flags=S"), "{list}");
}

/// CONFIG SET tls-port moves the TLS port while the server runs, and sets
/// one up on a server started without (its certificates set first).
#[test]
fn config_set_tls_port_at_run_time() {
    require_tool("redis-cli", "redis-tools");
    let dir = pki();
    let s = Server::keel();
    let mut plain = s.raw();
    for (param, file) in [
        ("tls-cert-file", "server.crt"),
        ("tls-key-file", "server.key"),
        ("tls-ca-cert-file", "ca.crt"),
    ] {
        eqb!(
            plain.cmd(&["CONFIG", "SET", param, &p(&dir, file)]),
            b"+OK\r\n"
        );
    }
    let first = free_port();
    eqb!(
        plain.cmd(&["CONFIG", "SET", "tls-port", &first.to_string()]),
        b"+OK\r\n"
    );
    assert_eq!(
        cli(&dir, first, "ca.crt", Some("client"), &["PING"]).0,
        "PONG"
    );
    let second = free_port();
    eqb!(
        plain.cmd(&["CONFIG", "SET", "tls-port", &second.to_string()]),
        b"+OK\r\n"
    );
    assert_eq!(
        cli(&dir, second, "ca.crt", Some("client"), &["PING"]).0,
        "PONG"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", first)).is_err(),
        "the old TLS port is closed"
    );
    // A new `bind` rebinds the TLS port too.
    eqb!(
        plain.cmd(&["CONFIG", "SET", "bind", "127.0.0.1"]),
        b"+OK\r\n"
    );
    assert_eq!(
        cli(&dir, second, "ca.crt", Some("client"), &["PING"]).0,
        "PONG"
    );
    eqb!(plain.cmd(&["CONFIG", "SET", "tls-port", "0"]), b"+OK\r\n");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", second)).is_err(),
        "tls-port 0 closes it"
    );
    eqb!(plain.cmd(&["PING"]), b"+PONG\r\n");
}
