//! Valkey 8.0's additions keel speaks under either Redis version (they
//! do not clash with Redis: each is an argument, subcommand or parameter
//! Redis refuses). No Valkey server runs in CI, so the expected replies
//! were recorded from valkey-server 8.0.1 (built from its 8.0.1 tag) or
//! written from its source (src/eval.c scriptCommand, src/db.c
//! scanGenericCommand, src/server.c processCommand's REDIRECT), as
//! docs/compatibility.md lists them. CLUSTER SLOT-STATS is in cluster.rs.

use crate::harness::*;

fn valkey_additions(server: &Server) {
    let mut c = server.raw();
    // SCRIPT SHOW: the cached body; the SHA1 matched in any case.
    let sha = c.cmd(&["SCRIPT", "LOAD", "return 'shown'"]);
    let sha = String::from_utf8(sha[5..45].to_vec()).expect("hex");
    assert_eq!(
        c.cmd(&["SCRIPT", "SHOW", &sha]),
        b"$14\r\nreturn 'shown'\r\n"
    );
    assert_eq!(
        c.cmd(&["SCRIPT", "SHOW", &sha.to_uppercase()]),
        b"$14\r\nreturn 'shown'\r\n"
    );
    let missing = b"-NOSCRIPT No matching script. Please use EVAL.\r\n";
    assert_eq!(c.cmd(&["SCRIPT", "SHOW", "abc"]), missing);
    assert_eq!(c.cmd(&["SCRIPT", "SHOW", &"0".repeat(40)]), missing);
    assert_eq!(
        c.cmd(&["SCRIPT", "SHOW"]),
        b"-ERR wrong number of arguments for 'script|show' command\r\n"
    );
    c.cmd(&["SCRIPT", "FLUSH"]);
    assert_eq!(c.cmd(&["SCRIPT", "SHOW", &sha]), missing);
    // ZSCAN NOSCORES: members only; the other SCANs refuse it as Redis.
    c.cmd(&["ZADD", "vz", "1", "a", "2", "b"]);
    assert_eq!(
        c.cmd(&["ZSCAN", "vz", "0", "NOSCORES"]),
        b"*2\r\n$1\r\n0\r\n*2\r\n$1\r\na\r\n$1\r\nb\r\n"
    );
    assert_eq!(
        c.cmd(&["ZSCAN", "vz", "0", "MATCH", "b", "noscores", "COUNT", "5"]),
        b"*2\r\n$1\r\n0\r\n*1\r\n$1\r\nb\r\n"
    );
    c.cmd(&["SADD", "vs", "a"]);
    assert_eq!(
        c.cmd(&["SSCAN", "vs", "0", "NOSCORES"]),
        b"-ERR syntax error\r\n"
    );
    assert_eq!(c.cmd(&["SCAN", "0", "NOSCORES"]), b"-ERR syntax error\r\n");
    c.cmd(&["DEL", "vz", "vs"]);
    // TYPE primary: Valkey's name for CLIENT LIST's and KILL's `master`.
    assert_eq!(c.cmd(&["CLIENT", "LIST", "TYPE", "primary"]), b"$0\r\n\r\n");
    assert_eq!(c.cmd(&["CLIENT", "KILL", "TYPE", "PRIMARY"]), b":0\r\n");
    assert_eq!(
        c.cmd(&["CLIENT", "KILL", "TYPE", "primaries"]),
        b"-ERR Unknown client type 'primaries'\r\n"
    );
}

#[test]
fn valkey_additions_under_redis_70() {
    valkey_additions(&Server::keel());
}

#[test]
fn valkey_additions_under_redis_74() {
    valkey_additions(&Server::keel_with(&["--redis-version", "7.4.1"]));
}

/// CLIENT CAPA redirect: on a replica, the client's writes, and its reads
/// until it sends READONLY, answer `-REDIRECT host:port` (the primary);
/// replies recorded from a valkey-server 8.0.1 replica.
#[test]
fn client_capa_redirect_sends_a_replicas_clients_to_the_primary() {
    let primary = Server::keel();
    let port = primary.port.to_string();
    let replica = Server::keel_with(&["--replicaof", "127.0.0.1", port.as_str()]);
    wait_for("the replica's link", || {
        let text =
            String::from_utf8_lossy(&replica.raw().cmd(&["INFO", "replication"])).to_string();
        if text.contains("master_link_status:up") {
            Ok(())
        } else {
            Err(text)
        }
    });
    let redirect = format!("-REDIRECT 127.0.0.1:{port}\r\n");
    let redirect = redirect.as_bytes();
    let mut c = replica.raw();
    // Before CAPA: Redis's replies (READONLY stays Redis's error).
    assert_eq!(
        c.cmd(&["SET", "k", "v"]),
        b"-READONLY You can't write against a read only replica.\r\n"
    );
    assert_eq!(c.cmd(&["GET", "k"]), b"$-1\r\n");
    assert_eq!(
        c.cmd(&["READONLY"]),
        b"-ERR This instance has cluster support disabled\r\n"
    );
    assert_eq!(
        c.cmd(&["CLIENT", "CAPA"]),
        b"-ERR wrong number of arguments for 'client|capa' command\r\n"
    );
    // Unknown capabilities are ignored.
    assert_eq!(c.cmd(&["CLIENT", "CAPA", "foo"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["GET", "k"]), b"$-1\r\n");
    assert_eq!(c.cmd(&["CLIENT", "CAPA", "REDIRECT", "x"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["SET", "k", "v"]), redirect);
    assert_eq!(c.cmd(&["GET", "k"]), redirect);
    assert_eq!(c.cmd(&["DBSIZE"]), redirect);
    assert_eq!(c.cmd(&["PING"]), b"+PONG\r\n");
    // Queued: the transaction is doomed; EXEC of reads only is redirected.
    assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["SET", "k", "1"]), redirect);
    assert_eq!(c.cmd(&["PING"]), b"+QUEUED\r\n");
    assert_eq!(
        c.cmd(&["EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["PING"]), b"+QUEUED\r\n");
    assert_eq!(c.cmd(&["EXEC"]), b"*1\r\n+PONG\r\n");
    assert_eq!(c.cmd(&["EVAL", "return 1", "0"]), b":1\r\n");
    assert_eq!(
        c.cmd(&["EVAL_RO", "return redis.call('get', KEYS[1])", "1", "a"]),
        redirect
    );
    // READONLY: reads are served, writes still redirected.
    assert_eq!(c.cmd(&["READONLY"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["GET", "k"]), b"$-1\r\n");
    assert_eq!(c.cmd(&["SET", "k", "v"]), redirect);
    assert_eq!(c.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["GET", "k"]), b"+QUEUED\r\n");
    assert_eq!(c.cmd(&["EXEC"]), b"*1\r\n$-1\r\n");
    assert_eq!(c.cmd(&["READWRITE"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["GET", "k"]), redirect);
    // RESET keeps the capability and drops READONLY.
    assert_eq!(c.cmd(&["READONLY"]), b"+OK\r\n");
    assert_eq!(c.cmd(&["RESET"]), b"+RESET\r\n");
    assert_eq!(c.cmd(&["GET", "k"]), redirect);
    // The primary's own clients are served whatever they claim.
    let mut p = primary.raw();
    assert_eq!(p.cmd(&["CLIENT", "CAPA", "redirect"]), b"+OK\r\n");
    assert_eq!(p.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    // Outside cluster mode, CLUSTER SLOT-STATS is Valkey's disabled error.
    assert_eq!(
        p.cmd(&["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "1", "2"]),
        b"-ERR This instance has cluster support disabled\r\n"
    );
}

/// Valkey 8.0's parameters keel takes: `primaryauth`/`primaryuser`
/// (aliases of Redis's `masterauth`/`masteruser`), `availability-zone`
/// (INFO server's `availability_zone`), `cluster-slot-stats-enabled`,
/// `unixsocketgroup`.
#[test]
fn valkey_parameters() {
    let dir = scratch_dir("unixgroup");
    let sock = dir.join("keel.sock");
    let sock = sock.to_str().expect("utf-8 path");
    let s = Server::keel_with(&["--unixsocket", sock, "--unixsocketgroup", "root"]);
    let mut c = s.raw();
    assert_eq!(c.cmd(&["CONFIG", "SET", "primaryauth", "pw"]), b"+OK\r\n");
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "masterauth"]),
        b"*2\r\n$10\r\nmasterauth\r\n$2\r\npw\r\n"
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "primaryuser"]),
        b"*2\r\n$11\r\nprimaryuser\r\n$0\r\n\r\n"
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "cluster-slot-stats-enabled"]),
        b"*2\r\n$26\r\ncluster-slot-stats-enabled\r\n$2\r\nno\r\n"
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "unixsocketgroup"]),
        b"*2\r\n$15\r\nunixsocketgroup\r\n$4\r\nroot\r\n"
    );
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "unixsocketgroup", "root"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'unixsocketgroup') - can't set immutable config\r\n"
    );
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "server"])).to_string();
    assert!(!info.contains("availability_zone"), "{info}");
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "availability-zone", "us-east-1a"]),
        b"+OK\r\n"
    );
    let info = String::from_utf8_lossy(&c.cmd(&["INFO", "server"])).to_string();
    assert!(
        info.contains("\r\navailability_zone:us-east-1a\r\n"),
        "{info}"
    );
    // The socket belongs to the group named.
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(sock).expect("the socket").gid(), 0);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A group the system does not know stops the start, as Valkey.
#[test]
fn an_unknown_unixsocketgroup_stops_the_start() {
    let dir = scratch_dir("unixgroup-unknown");
    let sock = dir.join("keel.sock");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keel-server"))
        .args(["--port", "0", "--unixsocket"])
        .arg(&sock)
        .args(["--unixsocketgroup", "no-such-group-here"])
        .output()
        .expect("run keel");
    assert!(!out.status.success());
    let log =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("getgrnam error for group 'no-such-group-here'"),
        "{log}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
