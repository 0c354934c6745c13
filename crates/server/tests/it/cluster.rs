//! Cluster mode: keel nodes on 127.0.0.x addresses with their topology in
//! a real etcd started by the test, made into a cluster by keel-ctl, and
//! driven by real cluster clients (the `redis` crate's, redis-py's
//! RedisCluster, redis-benchmark --cluster, redis-cli --cluster). Reply
//! shapes are compared with a real redis-server cluster made in the test.
//!
//! Failure cases: kill -9 of a primary under WAIT-acknowledged writes,
//! SIGSTOP of a primary past its lease, a primary cut from etcd (its etcd
//! traffic goes through a proxy the test cuts), and a node restarted with
//! an empty directory. Every wait polls a state.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use resp::Value;

use crate::harness::*;

/// A single-member etcd on free ports, in a scratch directory.
struct Etcd {
    child: Child,
    port: u16,
    dir: PathBuf,
}

impl Etcd {
    fn start() -> Etcd {
        require_tool("etcd", "etcd-server");
        let dir = scratch_dir("etcd");
        let (client, peer) = (free_port(), free_port());
        let c = format!("http://127.0.0.1:{client}");
        let p = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(dir.join("etcd.log")).expect("etcd log");
        let child = Command::new("etcd")
            .args(["--name", "it", "--data-dir"])
            .arg(dir.join("data"))
            .args(["--listen-client-urls", &c, "--advertise-client-urls", &c])
            .args([
                "--listen-peer-urls",
                &p,
                "--initial-advertise-peer-urls",
                &p,
            ])
            .args(["--initial-cluster", &format!("it={p}")])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("spawn etcd");
        let etcd = Etcd {
            child,
            port: client,
            dir,
        };
        wait_for("etcd to answer /health", || {
            let body = http_get(client, "/health")?;
            if body.contains("\"health\":\"true\"") {
                Ok(())
            } else {
                Err(body)
            }
        });
        etcd
    }

    fn endpoint(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn http_get(port: u16, path: &str) -> Result<String, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(2)))
        .map_err(|e| e.to_string())?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").map_err(|e| e.to_string())?;
    let mut body = String::new();
    s.read_to_string(&mut body).map_err(|e| e.to_string())?;
    Ok(body)
}

/// keel nodes of one cluster, node `i` bound to 127.0.0.(11+i) (and to
/// 127.0.0.1, which the harness probes).
struct KeelCluster {
    etcd: Etcd,
    name: String,
    nodes: Vec<Option<Server>>,
    ips: Vec<String>,
    ports: Vec<u16>,
}

fn node_args(ip: &str, etcd: &str, name: &str) -> Vec<String> {
    [
        "--bind",
        &format!("{ip} 127.0.0.1"),
        "--cluster-enabled",
        "yes",
        "--cluster-etcd-endpoints",
        etcd,
        "--cluster-name",
        name,
        "--repl-diskless-sync-delay",
        "0",
        "--threads",
        "2",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

impl KeelCluster {
    /// `n` nodes, not yet a cluster.
    fn start(n: usize) -> KeelCluster {
        let etcd = Etcd::start();
        KeelCluster::start_with(etcd, n, |_| None, |_| Vec::new())
    }

    /// `n` nodes; `etcd_for(i)` may give node `i` another etcd address
    /// (a proxy), `extra(i)` more arguments.
    fn start_with(
        etcd: Etcd,
        n: usize,
        etcd_for: impl Fn(usize) -> Option<String>,
        extra: impl Fn(usize) -> Vec<String>,
    ) -> KeelCluster {
        let name = format!("it{}", free_port());
        let mut c = KeelCluster {
            etcd,
            name,
            nodes: Vec::new(),
            ips: Vec::new(),
            ports: Vec::new(),
        };
        for i in 0..n {
            let ip = format!("127.0.0.{}", 11 + i);
            let ep = etcd_for(i).unwrap_or_else(|| c.etcd.endpoint());
            let mut args = node_args(&ip, &ep, &c.name);
            args.extend(extra(i));
            let argv: Vec<&str> = args.iter().map(String::as_str).collect();
            let s = Server::keel_with(&argv);
            c.ports.push(s.port);
            c.ips.push(ip);
            c.nodes.push(Some(s));
        }
        c
    }

    fn addr(&self, i: usize) -> String {
        format!("{}:{}", self.ips[i], self.ports[i])
    }

    fn raw(&self, i: usize) -> Raw {
        Raw::connect(self.ports[i])
    }

    fn ctl(&self, args: &[&str]) -> (bool, String) {
        keel_ctl(&self.etcd.endpoint(), &self.name, args)
    }

    /// keel-ctl create over every node, `replicas` per primary.
    fn create(&self, replicas: usize) {
        let addrs: Vec<String> = (0..self.nodes.len()).map(|i| self.addr(i)).collect();
        let r = replicas.to_string();
        let mut args = vec!["create"];
        args.extend(addrs.iter().map(String::as_str));
        args.extend(["--replicas", &r]);
        let (ok, out) = self.ctl(&args);
        assert!(ok, "keel-ctl create failed:\n{out}");
        assert!(out.contains("[OK] All 16384 slots covered."), "{out}");
    }

    fn kill(&mut self, i: usize) {
        if let Some(s) = self.nodes[i].take() {
            // SAFETY: kill(2) on our own child's pid, not yet reaped.
            unsafe {
                libc::kill(s.pid() as libc::pid_t, libc::SIGKILL);
            }
            drop(s);
        }
    }

    /// Restarts node `i` at its old address, in a new empty directory.
    fn restart_empty(&mut self, i: usize) {
        let args = node_args(&self.ips[i], &self.etcd.endpoint(), &self.name);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        self.nodes[i] = Some(Server::keel_at(self.ports[i], &argv));
    }

    fn index_of_port(&self, port: u16) -> usize {
        self.ports
            .iter()
            .position(|&p| p == port)
            .expect("a node's port")
    }

    /// (node index, node id) of each shard's primary and its replicas, as
    /// node `via` reports in CLUSTER SHARDS.
    fn primary_of_slot(&self, via: usize, slot: usize) -> usize {
        let nodes = cluster_nodes(&mut self.raw(via));
        let line = nodes
            .iter()
            .find(|l| l.flags.contains("master") && !l.flags.contains("fail") && l.serves(slot))
            .unwrap_or_else(|| panic!("no primary for slot {slot} in {nodes:?}"));
        self.index_of_port(line.port)
    }
}

/// keel-ctl, from the keel-ctl package of this workspace: `cargo test`
/// of the workspace builds it beside this test's own binaries.
fn keel_ctl_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's path");
    // target/<profile>/deps/it-<hash>
    let dir = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("the target directory");
    let ctl = dir.join("keel-ctl");
    assert!(
        ctl.exists(),
        "{} is missing: `cargo test --workspace` (or `cargo build -p keel-ctl`) builds it",
        ctl.display()
    );
    ctl
}

fn keel_ctl(etcd: &str, name: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(keel_ctl_binary())
        .args(["--etcd", etcd, "--cluster", name])
        .args(args)
        .output()
        .expect("run keel-ctl");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// One CLUSTER NODES line.
#[derive(Debug, Clone)]
struct NodeLine {
    id: String,
    ip: String,
    port: u16,
    flags: String,
    master: String,
    epoch: u64,
    link: String,
    slots: Vec<(usize, usize)>,
}

impl NodeLine {
    fn serves(&self, slot: usize) -> bool {
        self.slots.iter().any(|&(a, b)| a <= slot && slot <= b)
    }
}

fn cluster_nodes(raw: &mut Raw) -> Vec<NodeLine> {
    let text = match raw.call(&["CLUSTER", "NODES"]) {
        Value::Bulk(b) | Value::Verbatim(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("CLUSTER NODES: {other:?}"),
    };
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split(' ').collect();
            let addr = f[1].split('@').next().expect("addr");
            let (ip, port) = addr.rsplit_once(':').expect("ip:port");
            NodeLine {
                id: f[0].to_string(),
                ip: ip.to_string(),
                port: port.parse().expect("port"),
                flags: f[2].to_string(),
                master: f[3].to_string(),
                epoch: f[6].parse().expect("epoch"),
                link: f[7].to_string(),
                // `[slot->-id]` / `[slot-<-id]`: open slots, not owned ones.
                slots: f[8..]
                    .iter()
                    .filter(|r| !r.starts_with('['))
                    .map(|r| match r.split_once('-') {
                        Some((a, b)) => (a.parse().expect("slot"), b.parse().expect("slot")),
                        None => {
                            let s = r.parse().expect("slot");
                            (s, s)
                        }
                    })
                    .collect(),
            }
        })
        .collect()
}

fn cluster_info(raw: &mut Raw, field: &str) -> String {
    let text = match raw.call(&["CLUSTER", "INFO"]) {
        Value::Bulk(b) | Value::Verbatim(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("CLUSTER INFO: {other:?}"),
    };
    info_field(&text, field).unwrap_or_default()
}

/// Polls until node `i` says `cluster_state:ok` and, for a replica, its
/// link is up.
fn wait_ok(c: &KeelCluster, i: usize) {
    wait_for(&format!("node {} to be ok", c.addr(i)), || {
        let mut r = c.raw(i);
        let state = cluster_info(&mut r, "cluster_state");
        let repl = info(&mut r, "replication");
        let link = info_field(&repl, "master_link_status");
        if state == "ok" && link.as_deref().is_none_or(|l| l == "up") {
            Ok(())
        } else {
            Err(format!("state {state}, link {link:?}"))
        }
    });
}

/// Node `i` holds its replicas' promises (a primary whose replicas have
/// synced and acknowledged) or hears its primary (a replica).
fn wait_promised(c: &KeelCluster, i: usize) {
    wait_for(
        &format!("node {} to hold promises", c.addr(i)),
        || match keel_info(&mut c.raw(i), "keel_cluster_promised").as_str() {
            "1" => Ok(()),
            other => Err(other.to_string()),
        },
    );
}

/// A key in the given slot, from the slot's own hash-tag table.
fn key_in_slot(slot: usize, n: usize) -> String {
    let tag = (0..)
        .map(|i| format!("t{i}"))
        .find(|t| resp::slot::key_slot(t.as_bytes()) == slot)
        .expect("a tag for every slot");
    format!("{{{tag}}}:{n}")
}

// ---------------------------------------------------------------------------
// Real clients on a 3 + 3 cluster
// ---------------------------------------------------------------------------

#[test]
fn three_primaries_three_replicas_serve_real_cluster_clients() {
    let c = KeelCluster::start(6);
    c.create(1);
    for i in 0..6 {
        wait_ok(&c, i);
    }
    // Roles as keel-ctl laid them out: the first three primaries.
    let lines = cluster_nodes(&mut c.raw(0));
    assert_eq!(lines.len(), 6);
    for l in &lines {
        let i = c.index_of_port(l.port);
        assert_eq!(l.ip, c.ips[i], "announced address {l:?}");
        assert_eq!(l.flags.contains("master"), i < 3, "{l:?}");
        assert_eq!(l.link, "connected");
    }

    // The redis crate's cluster client: 100,000 keys written, read back.
    let seeds: Vec<String> = (0..3).map(|i| format!("redis://{}/", c.addr(i))).collect();
    let client = redis::cluster::ClusterClient::new(seeds).expect("cluster client");
    let mut con = client.get_connection().expect("cluster connection");
    for chunk in 0..100 {
        let mut pipe = redis::cluster::cluster_pipe();
        for n in chunk * 1000..(chunk + 1) * 1000 {
            pipe.set(format!("rs:{n}"), n).ignore();
        }
        pipe.query::<()>(&mut con).expect("pipelined SETs");
    }
    for chunk in 0..100 {
        let mut pipe = redis::cluster::cluster_pipe();
        for n in chunk * 1000..(chunk + 1) * 1000 {
            pipe.get(format!("rs:{n}"));
        }
        let got: Vec<u64> = pipe.query(&mut con).expect("pipelined GETs");
        let want: Vec<u64> = (chunk * 1000..(chunk + 1) * 1000).collect();
        assert_eq!(got, want);
    }

    // redis-py's RedisCluster: another 100,000 keys.
    require_tool("python3", "python3");
    let script = r#"
import sys
from redis.cluster import RedisCluster, ClusterNode
host, port = sys.argv[1].split(':')
rc = RedisCluster(startup_nodes=[ClusterNode(host, int(port))], decode_responses=True)
for start in range(0, 100000, 1000):
    p = rc.pipeline()
    for n in range(start, start + 1000):
        p.set(f"py:{n}", n)
    p.execute()
bad = 0
for start in range(0, 100000, 1000):
    p = rc.pipeline()
    for n in range(start, start + 1000):
        p.get(f"py:{n}")
    got = p.execute()
    bad += sum(1 for n, v in zip(range(start, start + 1000), got) if v != str(n))
print(f"bad={bad} nodes={len(rc.get_nodes())}")
"#;
    let out = Command::new("python3")
        .args(["-c", script, &c.addr(1)])
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "redis-py failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.trim(), "bad=0 nodes=6");

    // Each primary holds its slots' share; the replicas catch up.
    let mut total = 0;
    for i in 0..3 {
        let n = as_i(&c.raw(i).call(&["DBSIZE"]));
        assert!(n > 0);
        total += n;
    }
    assert_eq!(total, 200_000);
    for i in 3..6 {
        let primary = lines
            .iter()
            .find(|l| c.index_of_port(l.port) == i)
            .map(|l| l.master.clone())
            .expect("replica line");
        let p = lines
            .iter()
            .find(|l| l.id == primary)
            .expect("primary line");
        let pi = c.index_of_port(p.port);
        wait_for("replica to catch up", || {
            let (a, b) = (
                as_i(&c.raw(pi).call(&["DBSIZE"])),
                as_i(&c.raw(i).call(&["DBSIZE"])),
            );
            if a == b {
                Ok(())
            } else {
                Err(format!("primary {a} keys, replica {b}"))
            }
        });
    }

    // redis-benchmark --cluster with the seed's tests: no error.
    require_tool("redis-benchmark", "redis-tools");
    let out = Command::new("redis-benchmark")
        .args(["--cluster", "-h", &c.ips[0], "-p", &c.ports[0].to_string()])
        .args(["-t", "set,get,incr,lpush,mset", "-n", "20000", "-q"])
        .output()
        .expect("redis-benchmark");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    assert!(!text.to_lowercase().contains("error"), "{text}");
    for t in ["SET:", "GET:", "INCR:", "LPUSH:", "MSET (10 keys):"] {
        assert!(text.contains(t), "no {t} line in:\n{text}");
    }

    // redis-cli --cluster check / info, and keel-ctl's own.
    require_tool("redis-cli", "redis-tools");
    let out = Command::new("redis-cli")
        .args(["--cluster", "check", &c.addr(2)])
        .output()
        .expect("redis-cli");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("[OK] All nodes agree about slots configuration."),
        "{text}"
    );
    assert!(text.contains("[OK] All 16384 slots covered."), "{text}");
    assert_eq!(text.matches("M: ").count(), 3, "{text}");
    assert_eq!(text.matches("S: ").count(), 3, "{text}");
    let out = Command::new("redis-cli")
        .args(["--cluster", "info", &c.addr(0)])
        .output()
        .expect("redis-cli");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(text.contains("keys in 3 masters."), "{text}");
    let (ok, text) = c.ctl(&["check"]);
    assert!(ok, "{text}");
    assert!(
        text.contains("[OK] All nodes agree about slots configuration."),
        "{text}"
    );
    let (ok, text) = c.ctl(&["info"]);
    assert!(ok && text.contains("keys in 3 masters."), "{text}");
}

fn as_i(v: &Value) -> i64 {
    match v {
        Value::Integer(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Reply shapes and errors against a real Redis Cluster
// ---------------------------------------------------------------------------

/// Three cluster-enabled redis-servers made a cluster by redis-cli.
fn redis_cluster() -> Vec<Server> {
    require_tool("redis-cli", "redis-tools");
    let nodes: Vec<Server> = (0..3)
        .map(|_| {
            // The bus port given: port + 10000 may pass 65535.
            let bus = free_port().to_string();
            Server::redis_with(&[
                "--cluster-enabled",
                "yes",
                "--cluster-node-timeout",
                "5000",
                "--cluster-port",
                &bus,
            ])
        })
        .collect();
    let mut args = vec!["--cluster".to_string(), "create".to_string()];
    args.extend(nodes.iter().map(|n| n.addr()));
    args.push("--cluster-yes".into());
    let out = Command::new("redis-cli")
        .args(&args)
        .output()
        .expect("redis-cli");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    for n in &nodes {
        wait_for("redis cluster ok", || {
            let state = cluster_info(&mut n.raw(), "cluster_state");
            let known = cluster_info(&mut n.raw(), "cluster_known_nodes");
            if state == "ok" && known == "3" {
                Ok(())
            } else {
                Err(format!("{state} {known}"))
            }
        });
    }
    nodes
}

/// A reply with what differs between two clusters (ids, addresses,
/// replication offsets) blanked, keeping types, lengths, keys and slots.
fn shape(v: &Value, addrs: &[(String, String)]) -> String {
    match v {
        Value::Array(items) => {
            let mut parts = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let after_offset =
                    i > 0 && items[i - 1] == Value::Bulk(b"replication-offset".to_vec());
                parts.push(if after_offset {
                    ":offset".into()
                } else {
                    shape(item, addrs)
                });
            }
            format!("[{}]", parts.join(","))
        }
        Value::Map(pairs) => format!(
            "{{{}}}",
            pairs
                .iter()
                .map(|(k, v)| {
                    let value = if *k == Value::Bulk(b"replication-offset".to_vec()) {
                        ":offset".into()
                    } else {
                        shape(v, addrs)
                    };
                    format!("{}:{value}", shape(k, addrs))
                })
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Bulk(b) => {
            let s = String::from_utf8_lossy(b).into_owned();
            if s.len() == 40 && s.bytes().all(|c| c.is_ascii_hexdigit()) {
                "$id".into()
            } else if addrs.iter().any(|(ip, _)| *ip == s) {
                "$ip".into()
            } else {
                format!("${s}")
            }
        }
        Value::Integer(n) if addrs.iter().any(|(_, p)| *p == n.to_string()) => ":port".into(),
        Value::Integer(n) => format!(":{n}"),
        other => format!("{other:?}"),
    }
}

fn addr_list(ips: &[String], ports: &[u16]) -> Vec<(String, String)> {
    ips.iter()
        .zip(ports)
        .map(|(i, p)| (i.clone(), p.to_string()))
        .collect()
}

/// Replaces each address with its node's index.
fn normalize(text: &str, addrs: &[(String, String)]) -> String {
    let mut t = text.to_string();
    for (i, (ip, port)) in addrs.iter().enumerate() {
        t = t.replace(&format!("{ip}:{port}"), &format!("node{i}"));
    }
    t
}

#[test]
fn replies_and_errors_match_a_redis_cluster() {
    let redis = redis_cluster();
    let redis_addrs: Vec<(String, String)> = redis
        .iter()
        .map(|s| ("127.0.0.1".to_string(), s.port.to_string()))
        .collect();
    let c = KeelCluster::start(3);
    c.create(0);
    for i in 0..3 {
        wait_ok(&c, i);
    }
    let keel_addrs = addr_list(&c.ips, &c.ports);

    // CLUSTER MYSHARDID (Redis 7.2): each primary its own shard's id, 40
    // hex characters, as Redis's.
    let shard_ids: Vec<String> = (0..3)
        .map(|i| match c.raw(i).call(&["CLUSTER", "MYSHARDID"]) {
            Value::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("CLUSTER MYSHARDID on node {i}: {other:?}"),
        })
        .collect();
    for id in &shard_ids {
        assert!(
            id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()),
            "{id}"
        );
    }
    let mut distinct = shard_ids.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 3, "{shard_ids:?}");

    // CLUSTER SLOTS and SHARDS, RESP2 and RESP3: same shapes, same slots.
    for hello in [None, Some("3")] {
        let mut k = c.raw(0);
        let mut r = redis[0].raw();
        if let Some(v) = hello {
            k.call(&["HELLO", v]);
            r.call(&["HELLO", v]);
        }
        let ks = shape(&k.call(&["CLUSTER", "SLOTS"]), &keel_addrs);
        let rs = shape(&r.call(&["CLUSTER", "SLOTS"]), &redis_addrs);
        assert_eq!(ks, rs, "CLUSTER SLOTS (HELLO {hello:?})");
        // SHARDS' order is Redis's dict order: compare as sorted sets.
        let sorted = |v: Value, a: &[(String, String)]| {
            let Value::Array(items) = v else {
                panic!("SHARDS not an array")
            };
            let mut s: Vec<String> = items.iter().map(|i| shape(i, a)).collect();
            s.sort();
            s
        };
        assert_eq!(
            sorted(k.call(&["CLUSTER", "SHARDS"]), &keel_addrs),
            sorted(r.call(&["CLUSTER", "SHARDS"]), &redis_addrs),
            "CLUSTER SHARDS (HELLO {hello:?})"
        );
    }

    // CLUSTER NODES: the same fields, flags and slots per node.
    let strip = |lines: Vec<NodeLine>| {
        let mut v: Vec<String> = lines
            .iter()
            .map(|l| format!("{} {} {} {:?}", l.flags, l.master, l.link, l.slots))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        strip(cluster_nodes(&mut c.raw(0))),
        strip(cluster_nodes(&mut redis[0].raw()))
    );
    let raw_line = |raw: &mut Raw| match raw.call(&["CLUSTER", "NODES"]) {
        Value::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("{other:?}"),
    };
    let (kl, rl) = (raw_line(&mut c.raw(0)), raw_line(&mut redis[0].raw()));
    assert!(kl.ends_with('\n') && rl.ends_with('\n') && !kl.contains('\r'));
    assert_eq!(
        kl.lines().map(|l| l.split(' ').count()).collect::<Vec<_>>(),
        rl.lines().map(|l| l.split(' ').count()).collect::<Vec<_>>()
    );

    // CLUSTER INFO: the same fields, in the same order.
    let fields = |raw: &mut Raw| -> Vec<String> {
        match raw.call(&["CLUSTER", "INFO"]) {
            Value::Bulk(b) => String::from_utf8_lossy(&b)
                .lines()
                .filter_map(|l| l.split(':').next().map(str::to_string))
                // Redis adds a line per gossip message type; keel has none.
                .filter(|f| {
                    !f.starts_with("cluster_stats_messages_")
                        || f == "cluster_stats_messages_sent"
                        || f == "cluster_stats_messages_received"
                })
                .collect(),
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(fields(&mut c.raw(0)), fields(&mut redis[0].raw()));
    for f in [
        "cluster_state",
        "cluster_slots_assigned",
        "cluster_known_nodes",
        "cluster_size",
    ] {
        assert_eq!(
            cluster_info(&mut c.raw(1), f),
            cluster_info(&mut redis[1].raw(), f),
            "{f}"
        );
    }

    // The same requests on each node: the same replies, addresses aside.
    let probes: Vec<Vec<&str>> = vec![
        vec!["GET", "foo"],
        vec!["SET", "foo", "bar"],
        vec!["MSET", "k1", "v1", "k2", "v2"],
        vec!["MSET", "{a}1", "x", "{a}2", "y"],
        vec!["MGET", "{a}1", "{a}2"],
        vec!["SELECT", "1"],
        vec!["SELECT", "0"],
        vec!["MOVE", "{a}1", "1"],
        vec!["SWAPDB", "0", "1"],
        vec!["COPY", "{a}1", "{a}3", "DB", "1"],
        vec!["REPLICAOF", "127.0.0.1", "1"],
        vec!["REPLICAOF", "NO", "ONE"],
        vec!["FAILOVER"],
        vec!["FAILOVER", "TO", "127.0.0.1", "1"],
        vec!["CLUSTER", "KEYSLOT", "{user1}.a"],
        vec!["CLUSTER", "COUNTKEYSINSLOT", "99999"],
        vec!["CLUSTER", "COUNTKEYSINSLOT", "abc"],
        vec!["CLUSTER", "GETKEYSINSLOT", "12182", "-1"],
        vec!["CLUSTER", "GETKEYSINSLOT", "16384", "1"],
        vec![
            "CLUSTER",
            "REPLICAS",
            "0000000000000000000000000000000000000000",
        ],
        vec!["CLUSTER", "FOO"],
        vec!["CLUSTER"],
        vec!["READONLY"],
        vec!["READWRITE"],
        vec!["ASKING"],
        vec!["SPUBLISH", "chan", "m"],
        vec!["PUBLISH", "chan", "m"],
        vec!["EVAL", "return redis.call('get',KEYS[1])", "1", "foo"],
        vec!["EVAL", "return redis.call('get','k2')", "1", "foo"],
        vec!["EVAL", "return redis.call('get','k2')", "0"],
        vec!["EVAL", "return redis.call('set','k2','x')", "0"],
        vec!["EVAL", "return redis.call('get','{b}1')", "0"],
        vec!["MULTI"],
        vec!["SET", "{a}1", "q"],
        vec!["SET", "foo", "q"],
        vec!["EXEC"],
        vec!["MULTI"],
        vec!["SET", "{a}1", "q"],
        vec!["SET", "{b}1", "q"],
        vec!["EXEC"],
        vec!["EXEC"],
    ];
    for (i, node) in redis.iter().enumerate() {
        let mut k = c.raw(i);
        let mut r = node.raw();
        for p in &probes {
            let kr = normalize(&escape(&k.cmd(p)), &keel_addrs);
            let rr = normalize(&escape(&r.cmd(p)), &redis_addrs);
            assert_eq!(kr, rr, "node {i}: {}", show(p));
        }
    }
    // Keys of every slot answer where they live.
    let mut k = c.raw(0);
    for n in 0..200 {
        let key = format!("key:{n}");
        let reply = escape(&k.cmd(&["SET", key.as_str(), "v"]));
        let slot = resp::slot::key_slot(key.as_bytes());
        let owner = c.primary_of_slot(0, slot);
        if owner == 0 {
            assert_eq!(reply, "+OK\\r\\n");
        } else {
            assert_eq!(reply, format!("-MOVED {slot} {}\\r\\n", c.addr(owner)));
        }
    }
    // COUNTKEYSINSLOT / GETKEYSINSLOT on the owner.
    let slot = resp::slot::key_slot(b"foo");
    let owner = c.primary_of_slot(0, slot);
    let mut o = c.raw(owner);
    for n in 0..3 {
        o.call(&["SET", &key_in_slot(slot, n), "v"]);
    }
    assert_eq!(
        o.call(&["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]),
        Value::Integer(4)
    );
    match o.call(&["CLUSTER", "GETKEYSINSLOT", &slot.to_string(), "2"]) {
        Value::Array(keys) => assert_eq!(keys.len(), 2),
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Failover
// ---------------------------------------------------------------------------

/// Writes keys of one slot to whoever serves it, finding the new primary
/// through the nodes' CLUSTER NODES after a failure. A write counts as
/// acknowledged once `WAIT 1 100` says a replica has it.
struct Writer {
    acked: Arc<Mutex<Vec<String>>>,
    /// Writes accepted (+OK) since `mark_kill`.
    accepted_after_kill: Arc<std::sync::atomic::AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// How long after `mark_kill` the first write was accepted.
    first_after_kill: Arc<Mutex<Option<Duration>>>,
    killed_at: Arc<Mutex<Option<Instant>>>,
}

impl Writer {
    fn start(c: &KeelCluster, slot: usize) -> Writer {
        let w = Writer {
            acked: Arc::default(),
            accepted_after_kill: Arc::default(),
            stop: Arc::default(),
            thread: None,
            first_after_kill: Arc::default(),
            killed_at: Arc::default(),
        };
        let ports = c.ports.clone();
        let (acked, accepted, stop, first, killed_at) = (
            w.acked.clone(),
            w.accepted_after_kill.clone(),
            w.stop.clone(),
            w.first_after_kill.clone(),
            w.killed_at.clone(),
        );
        let thread = std::thread::spawn(move || {
            let mut n = 0usize;
            let mut target: Option<Raw> = None;
            while !stop.load(Ordering::Relaxed) {
                let Some(con) = target.as_mut() else {
                    target = find_primary(&ports, slot)
                        .and_then(|p| TcpStream::connect(("127.0.0.1", p)).ok())
                        .map(Raw::from_stream);
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                con.timeout = Duration::from_secs(5);
                let key = key_in_slot(slot, n);
                n += 1;
                match con.try_cmd(&["SET", key.as_str(), "v"]) {
                    Ok(r) if r == b"+OK\r\n" => {}
                    _ => {
                        target = None;
                        continue;
                    }
                }
                if let Some(t) = *killed_at.lock().expect("kill time") {
                    first.lock().expect("first").get_or_insert(t.elapsed());
                    accepted.fetch_add(1, Ordering::Relaxed);
                }
                match con.try_cmd(&["WAIT", "1", "100"]).map(|r| parse(&r)) {
                    Ok(Value::Integer(1..)) => acked.lock().expect("acked").push(key),
                    Ok(_) => {}
                    Err(_) => target = None,
                }
            }
        });
        Writer {
            thread: Some(thread),
            ..w
        }
    }

    fn acked(&self) -> usize {
        self.acked.lock().expect("acked").len()
    }

    fn accepted_after_kill(&self) -> usize {
        self.accepted_after_kill.load(Ordering::Relaxed)
    }

    fn mark_kill(&self) {
        *self.killed_at.lock().expect("kill time") = Some(Instant::now());
    }

    fn finish(mut self) -> (Vec<String>, Option<Duration>) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            t.join().expect("writer thread");
        }
        let first = *self.first_after_kill.lock().expect("first");
        (self.acked.lock().expect("acked").clone(), first)
    }
}

/// The port of the live node that says it is the primary serving `slot`,
/// asking each node that answers.
fn find_primary(ports: &[u16], slot: usize) -> Option<u16> {
    for &p in ports {
        let Ok(s) = TcpStream::connect_timeout(
            &format!("127.0.0.1:{p}").parse().ok()?,
            Duration::from_millis(200),
        ) else {
            continue;
        };
        let mut raw = Raw::from_stream(s);
        raw.timeout = Duration::from_secs(2);
        let Ok(reply) = raw.try_cmd(&["CLUSTER", "NODES"]) else {
            continue;
        };
        let Value::Bulk(text) = parse(&reply) else {
            continue;
        };
        for l in String::from_utf8_lossy(&text).lines() {
            let f: Vec<&str> = l.split(' ').collect();
            if f.len() < 9 || !f[2].contains("master") || f[2].contains("fail") {
                continue;
            }
            let serves = f[8..].iter().any(|r| {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                a.parse::<usize>().is_ok_and(|a| a <= slot)
                    && b.parse::<usize>().is_ok_and(|b| slot <= b)
            });
            if serves {
                let port = f[1].split('@').next()?.rsplit_once(':')?.1.parse().ok()?;
                return Some(port);
            }
        }
    }
    None
}

#[test]
fn kill_9_of_a_primary_promotes_a_replica_and_loses_no_acknowledged_write() {
    let mut c = KeelCluster::start(6);
    c.create(1);
    for i in 0..6 {
        wait_ok(&c, i);
    }
    let slot = 100;
    let victim = c.primary_of_slot(0, slot);
    let writer = Writer::start(&c, slot);
    wait_for("acknowledged writes before the kill", || {
        if writer.acked() >= 200 {
            Ok(())
        } else {
            Err(format!("{} acked", writer.acked()))
        }
    });
    writer.mark_kill();
    c.kill(victim);
    // The shard has no replica left to acknowledge with WAIT: what is
    // waited for is writes the new primary accepts.
    wait_for("writes accepted by the new primary", || {
        if writer.accepted_after_kill() >= 100 {
            Ok(())
        } else {
            Err(format!("{} accepted", writer.accepted_after_kill()))
        }
    });
    let (acked, first) = writer.finish();
    let first = first.expect("a write after the kill");
    eprintln!("kill -9 to first acknowledged write: {first:?}");
    let now = c.primary_of_slot((victim + 1) % 6, slot);
    assert_ne!(now, victim);
    // Every acknowledged write is on the new primary.
    let mut raw = c.raw(now);
    let mut missing = Vec::new();
    for key in &acked {
        if raw.call(&["EXISTS", key.as_str()]) != Value::Integer(1) {
            missing.push(key.clone());
        }
    }
    assert!(
        missing.is_empty(),
        "{} of {} acknowledged writes lost: {:?}",
        missing.len(),
        acked.len(),
        &missing[..missing.len().min(5)]
    );
    // The new primary's epoch is the cluster's highest.
    let lines = cluster_nodes(&mut c.raw(now));
    let me = lines
        .iter()
        .find(|l| l.flags.contains("myself"))
        .expect("myself");
    let top = lines.iter().map(|l| l.epoch).max().unwrap_or(0);
    assert_eq!(me.epoch, top);
    assert_eq!(
        cluster_info(&mut c.raw(now), "cluster_current_epoch"),
        top.to_string()
    );
}

/// Polls until node `i` says it is a primary.
fn wait_promoted(c: &KeelCluster, i: usize) {
    wait_for("the replica's promotion", || {
        let l = cluster_nodes(&mut c.raw(i));
        let me = l
            .iter()
            .find(|l| l.flags.contains("myself"))
            .expect("myself");
        if me.flags.contains("master") {
            Ok(())
        } else {
            Err(format!("{me:?}"))
        }
    });
}

/// Node indexes of the shard serving `slot`: its primary and replica.
fn shard_pair(c: &KeelCluster, slot: usize) -> (usize, usize) {
    let lines = cluster_nodes(&mut c.raw(0));
    let p = lines.iter().find(|l| l.serves(slot)).expect("owner");
    let r = lines
        .iter()
        .find(|l| l.master == p.id)
        .expect("its replica");
    (c.index_of_port(p.port), c.index_of_port(r.port))
}

#[test]
fn a_primary_paused_past_its_lease_accepts_no_write_after_it_resumes() {
    let c = KeelCluster::start(2);
    c.create(1);
    wait_ok(&c, 0);
    wait_ok(&c, 1);
    let (p, r) = shard_pair(&c, 0);
    let mut old = c.raw(p);
    old.timeout = Duration::from_secs(30);
    assert_eq!(old.cmd(&["SET", "before", "1"]), b"+OK\r\n");
    assert_eq!(old.call(&["WAIT", "1", "0"]), Value::Integer(1));
    let pid = c.nodes[p].as_ref().expect("primary").pid() as libc::pid_t;
    // SAFETY: signals to our own child's pid, not yet reaped.
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
    }
    wait_promoted(&c, r);
    // A write sent while it is stopped waits in its socket buffer.
    old.send_cmd(&["SET", "while-stopped", "1"]);
    // SAFETY: as above.
    unsafe {
        libc::kill(pid, libc::SIGCONT);
    }
    let reply = old.read_reply();
    assert!(
        reply.starts_with(b"-CLUSTERDOWN") || reply.starts_with(b"-MOVED"),
        "{}",
        escape(&reply)
    );
    // Until it has become the new primary's replica, every write is
    // refused; then it redirects.
    wait_for("the old primary to redirect", || {
        let reply = old.cmd(&["SET", "after", "1"]);
        assert_ne!(reply, b"+OK\r\n", "the fenced primary took a write");
        if reply.starts_with(b"-MOVED") {
            Ok(())
        } else {
            Err(escape(&reply))
        }
    });
    let mut new = c.raw(r);
    assert_eq!(new.call(&["EXISTS", "while-stopped"]), Value::Integer(0));
    assert_eq!(new.call(&["EXISTS", "after"]), Value::Integer(0));
    assert_eq!(new.call(&["EXISTS", "before"]), Value::Integer(1));
}

/// A TCP proxy the test can cut: the node behind it loses that link (its
/// etcd, or its replica's link to it) and nothing else. Connections made
/// while it is cut are dropped; while it refuses, its port is closed (a
/// connection is refused, as to a process that is gone).
struct Proxy {
    port: u16,
    cut: Arc<AtomicBool>,
    refuse: Arc<AtomicBool>,
    to: Arc<AtomicU16>,
}

impl Proxy {
    /// Listens on `ip`, forwarding to 127.0.0.1:`to` (0: set later with
    /// `retarget`).
    fn start(ip: &str, to: u16) -> Proxy {
        let listener = TcpListener::bind((ip, 0)).expect("proxy bind");
        let port = listener.local_addr().expect("addr").port();
        let cut = Arc::new(AtomicBool::new(false));
        let refuse = Arc::new(AtomicBool::new(false));
        let target = Arc::new(AtomicU16::new(to));
        let (c, r, t) = (cut.clone(), refuse.clone(), target.clone());
        let ip = ip.to_string();
        std::thread::spawn(move || {
            let mut listener = Some(listener);
            loop {
                // Closed while refusing, bound again after.
                match (r.load(Ordering::Relaxed), listener.is_some()) {
                    (true, true) => listener = None,
                    (false, false) => {
                        listener = TcpListener::bind((ip.as_str(), port)).ok();
                    }
                    _ => {}
                }
                let Some(l) = &listener else {
                    std::thread::sleep(Duration::from_millis(2));
                    continue;
                };
                l.set_nonblocking(true).expect("nonblocking");
                let inbound = match l.accept() {
                    Ok((inbound, _)) => inbound,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(2));
                        continue;
                    }
                    Err(_) => continue,
                };
                inbound.set_nonblocking(false).expect("blocking");
                if c.load(Ordering::Relaxed) {
                    continue;
                }
                let Ok(outbound) = TcpStream::connect(("127.0.0.1", t.load(Ordering::Relaxed)))
                else {
                    continue;
                };
                for (mut from, mut to) in [
                    (
                        inbound.try_clone().expect("clone"),
                        outbound.try_clone().expect("clone"),
                    ),
                    (outbound, inbound),
                ] {
                    let c = c.clone();
                    std::thread::spawn(move || {
                        let mut buf = [0u8; 16384];
                        from.set_read_timeout(Some(Duration::from_millis(50))).ok();
                        loop {
                            if c.load(Ordering::Relaxed) {
                                let _ = from.shutdown(std::net::Shutdown::Both);
                                let _ = to.shutdown(std::net::Shutdown::Both);
                                return;
                            }
                            match from.read(&mut buf) {
                                Ok(0) => return,
                                Ok(n) => {
                                    if to.write_all(&buf[..n]).is_err() {
                                        return;
                                    }
                                }
                                Err(e)
                                    if matches!(
                                        e.kind(),
                                        std::io::ErrorKind::WouldBlock
                                            | std::io::ErrorKind::TimedOut
                                    ) => {}
                                Err(_) => return,
                            }
                        }
                    });
                }
            }
        });
        Proxy {
            port,
            cut,
            refuse,
            to: target,
        }
    }

    /// Cuts every connection and closes the port (or opens it again).
    fn set_refusing(&self, refuse: bool) {
        self.cut.store(refuse, Ordering::Relaxed);
        self.refuse.store(refuse, Ordering::Relaxed);
    }

    fn retarget(&self, to: u16) {
        self.to.store(to, Ordering::Relaxed);
    }

    fn set_cut(&self, cut: bool) {
        self.cut.store(cut, Ordering::Relaxed);
    }
}

/// The etcd revision node `id`'s `alive` key was created at (one per
/// lease it took), if it is there.
fn alive_since(etcd: &Etcd, name: &str, id: &str) -> Option<i64> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("rt");
    rt.block_on(async {
        let mut store =
            keel_cluster::Store::connect(&[etcd.endpoint()], name, Duration::from_secs(5))
                .await
                .expect("etcd");
        let snap = store.snapshot().await.expect("snapshot");
        snap.alive_since.get(id).copied()
    })
}

fn keel_info(raw: &mut Raw, field: &str) -> String {
    info_field(&info(raw, "keel"), field).unwrap_or_default()
}

/// SET of `key` then WAIT 1 (1 s): the reply to the SET, and whether the
/// replica acknowledged it.
fn set_and_wait(raw: &mut Raw, key: &str) -> (Vec<u8>, bool) {
    let reply = raw.cmd(&["SET", key, "1"]);
    if reply != b"+OK\r\n" {
        return (reply, false);
    }
    let acked = raw.call(&["WAIT", "1", "1000"]) == Value::Integer(1);
    (reply, acked)
}

/// A primary (node 0) and its replica (node 1), the replica's link to it
/// through a proxy the test can cut (node 0 announces the proxy's port),
/// node 0 reaching etcd at `etcd_for_primary` when given; settled, the
/// replica's promise held. Returns node 0's id.
fn primary_behind_a_link_proxy(
    etcd: Etcd,
    etcd_for_primary: Option<String>,
) -> (KeelCluster, Proxy, String) {
    let link_proxy = Proxy::start("127.0.0.11", 0);
    let announce = link_proxy.port.to_string();
    let c = KeelCluster::start_with(
        etcd,
        2,
        |i| etcd_for_primary.clone().filter(|_| i == 0),
        |i| {
            if i == 0 {
                vec!["--cluster-announce-port".into(), announce.clone()]
            } else {
                Vec::new()
            }
        },
    );
    link_proxy.retarget(c.ports[0]);
    c.create(1);
    wait_ok(&c, 0);
    wait_ok(&c, 1);
    wait_promised(&c, 0);
    let id = match c.raw(0).call(&["CLUSTER", "MYID"]) {
        Value::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("{other:?}"),
    };
    (c, link_proxy, id)
}

/// The primary (node 0) loses etcd, its lease lapses, and it goes on
/// taking writes on its replica's promise, with no failover; then it also
/// loses its replica and stops taking writes before the replica is
/// promoted. Node 0's etcd traffic and its replica's link to it each go
/// through a proxy the test cuts (the replica reaches node 0 at its
/// announced port, the link proxy's).
#[test]
fn a_primary_cut_from_etcd_serves_on_its_replicas_promise_and_stops_before_a_promotion() {
    let etcd = Etcd::start();
    let etcd_proxy = Proxy::start("127.0.0.1", etcd.port);
    let proxied = format!("127.0.0.1:{}", etcd_proxy.port);
    let (c, link_proxy, id) = primary_behind_a_link_proxy(etcd, Some(proxied));
    let mut p = c.raw(0);
    let mut waited = Vec::new();
    let mut n = 0;
    let mut next_key = || {
        n += 1;
        format!("k{n}")
    };
    etcd_proxy.set_cut(true);
    // Its lease lapses and etcd drops its `alive` key: every write is
    // still taken (and reaches the replica), and no failover happens.
    wait_for("etcd to expire the cut primary's lease", || {
        let key = next_key();
        let (reply, acked) = set_and_wait(&mut p, &key);
        assert_eq!(reply, b"+OK\r\n", "{}", escape(&reply));
        if acked {
            waited.push(key);
        }
        if alive_since(&c.etcd, &c.name, &id).is_some()
            || keel_info(&mut p, "keel_cluster_lease_valid") != "0"
        {
            Err("the lease still lives".into())
        } else {
            Ok(())
        }
    });
    for _ in 0..50 {
        let key = next_key();
        let (reply, acked) = set_and_wait(&mut p, &key);
        assert_eq!(reply, b"+OK\r\n", "{}", escape(&reply));
        assert!(acked, "the replica stopped acknowledging");
        waited.push(key);
    }
    assert_eq!(keel_info(&mut p, "keel_cluster_promised"), "1");
    assert_eq!(
        role(&c, 1),
        "slave",
        "a replica bound by its promise was promoted"
    );
    // Now cut from its replica too: it stops taking writes, and only then
    // is the replica promoted.
    link_proxy.set_cut(true);
    let fenced = wait_for("the primary to fence itself", || {
        let reply = p.cmd(&["SET", &next_key(), "1"]);
        if reply == b"-CLUSTERDOWN The cluster is down\r\n" {
            Ok(Instant::now())
        } else {
            assert_eq!(reply, b"+OK\r\n", "{}", escape(&reply));
            Err("still taking writes".into())
        }
    });
    assert_eq!(
        role(&c, 1),
        "slave",
        "the replica was promoted before the primary stopped taking writes"
    );
    wait_promoted(&c, 1);
    eprintln!(
        "fenced {} ms before the replica's promotion was seen",
        fenced.elapsed().as_millis()
    );
    // Every write the replica acknowledged is on the new primary.
    let mut new = c.raw(1);
    for key in &waited {
        assert_eq!(
            new.call(&["GET", key.as_str()]),
            Value::Bulk(b"1".to_vec()),
            "{key}"
        );
    }
    // Reconnected, the old primary becomes the new one's replica.
    etcd_proxy.set_cut(false);
    link_proxy.set_cut(false);
    wait_for("the old primary to rejoin as a replica", || {
        match role(&c, 0).as_str() {
            "slave" => Ok(()),
            other => Err(other.to_string()),
        }
    });
    wait_ok(&c, 0);
}

/// A primary cut from etcd alone serves on its replica's promise; the
/// replica, which hears it, vouches for it in etcd, so the other shards'
/// nodes do not count its slots as failing and go on serving (with
/// `cluster-require-full-coverage`, the default).
#[test]
fn a_primary_cut_from_etcd_alone_does_not_take_the_other_shards_down() {
    let etcd = Etcd::start();
    let etcd_proxy = Proxy::start("127.0.0.1", etcd.port);
    let proxied = format!("127.0.0.1:{}", etcd_proxy.port);
    let c = KeelCluster::start_with(
        etcd,
        4,
        |i| (i == 0).then(|| proxied.clone()),
        |_| Vec::new(),
    );
    c.create(1);
    for i in 0..4 {
        wait_ok(&c, i);
        wait_promised(&c, i);
    }
    let (a, b) = (shard_pair(&c, 0).0, shard_pair(&c, 16383).0);
    assert!(a == 0 || b == 0, "node 0 is expected to be a primary");
    let (cut_slot, other, other_slot) = if a == 0 { (0, b, 16383) } else { (16383, a, 0) };
    let id = match c.raw(0).call(&["CLUSTER", "MYID"]) {
        Value::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("{other:?}"),
    };
    etcd_proxy.set_cut(true);
    wait_for("the other primary to see the cut one's lease gone", || {
        let lines = cluster_nodes(&mut c.raw(other));
        match lines.iter().find(|l| l.id == id) {
            Some(l) if l.flags.contains("fail") => Ok(()),
            l => Err(format!("{l:?}")),
        }
    });
    // With the lease gone, only the vouch keeps the slots counted as
    // served.
    wait_for("the other primary to count no failing slot", || {
        let mut r = c.raw(other);
        let (state, fail) = (
            cluster_info(&mut r, "cluster_state"),
            cluster_info(&mut r, "cluster_slots_fail"),
        );
        if state == "ok" && fail == "0" {
            Ok(())
        } else {
            Err(format!("state {state}, failing slots {fail}"))
        }
    });
    let key = key_in_slot(other_slot, 0);
    assert_eq!(c.raw(other).cmd(&["SET", &key, "1"]), b"+OK\r\n");
    let key = key_in_slot(cut_slot, 0);
    assert_eq!(c.raw(0).cmd(&["SET", &key, "1"]), b"+OK\r\n");
    etcd_proxy.set_cut(false);
    wait_ok(&c, 0);
}

/// A replica that finds its primary's port closed revokes the primary's
/// lease rather than wait for it to expire. Here the primary is alive and
/// talks to etcd: only its replica's link to it is refused. It takes a
/// new lease at once and keeps its place (the replica revokes once per
/// loss of its link); the replica follows it again once it can.
#[test]
fn a_live_primary_whose_replica_finds_its_port_closed_keeps_its_place() {
    let (c, link_proxy, id) = primary_behind_a_link_proxy(Etcd::start(), None);
    let mut p = c.raw(0);
    let before = alive_since(&c.etcd, &c.name, &id).expect("alive");
    link_proxy.set_refusing(true);
    wait_for(
        "the replica to revoke the primary's lease and the primary to take a new one",
        || match alive_since(&c.etcd, &c.name, &id) {
            Some(r) if r != before => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
    link_proxy.set_refusing(false);
    wait_for("the replica's link to be up again", || {
        let repl = info(&mut c.raw(1), "replication");
        match info_field(&repl, "master_link_status").as_deref() {
            Some("up") => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });
    assert_eq!(role(&c, 0), "master");
    assert_eq!(role(&c, 1), "slave");
    wait_ok(&c, 0);
    assert_eq!(p.cmd(&["SET", "after", "1"]), b"+OK\r\n");
    assert_eq!(p.call(&["WAIT", "1", "5000"]), Value::Integer(1));
    // Nor does a handover from any client detach the replica: in a
    // cluster the topology says who is primary.
    let mut r = c.raw(1);
    let replid = info_field(&info(&mut r, "replication"), "master_replid").expect("replid");
    assert_eq!(
        r.cmd(&["PSYNC", &replid, "1", "FAILOVER"]),
        b"-ERR PSYNC FAILOVER not allowed in cluster mode.\r\n"
    );
    assert_eq!(role(&c, 1), "slave");
}

/// etcd stopped (SIGSTOP) well past every lease: no node failed, so no
/// client sees a difference; the cluster keeps working after etcd resumes.
#[test]
fn a_stalled_etcd_refuses_no_write() {
    let mut c = KeelCluster::start(4);
    c.create(1);
    for i in 0..4 {
        wait_ok(&c, i);
        wait_promised(&c, i);
    }
    let slots = [0, 16383];
    let mut writers: Vec<(Raw, String)> = slots
        .iter()
        .map(|&slot| {
            let (p, _) = shard_pair(&c, slot);
            (c.raw(p), key_in_slot(slot, 0))
        })
        .collect();
    let pid = c.etcd.child.id() as libc::pid_t;
    // SAFETY: signals to our own child's pid, not yet reaped.
    unsafe {
        libc::kill(pid, libc::SIGSTOP);
    }
    // Until every node has lost its lease, and on for a while: every
    // write is taken.
    let mut after_leases = 0;
    wait_for("every node's lease to lapse, writes going on", || {
        for (raw, key) in writers.iter_mut() {
            let reply = raw.cmd(&["SET", key.as_str(), "1"]);
            assert_eq!(reply, b"+OK\r\n", "{}", escape(&reply));
        }
        let lapsed = (0..4).all(|i| keel_info(&mut c.raw(i), "keel_cluster_lease_valid") == "0");
        after_leases += lapsed as usize;
        if after_leases >= 200 {
            Ok(())
        } else {
            Err(format!("{after_leases} rounds since every lease lapsed"))
        }
    });
    // SAFETY: as above.
    unsafe {
        libc::kill(pid, libc::SIGCONT);
    }
    wait_for("every node to renew its lease", || {
        for (raw, key) in writers.iter_mut() {
            let reply = raw.cmd(&["SET", key.as_str(), "1"]);
            assert_eq!(reply, b"+OK\r\n", "{}", escape(&reply));
        }
        if (0..4).all(|i| keel_info(&mut c.raw(i), "keel_cluster_lease_valid") == "1") {
            Ok(())
        } else {
            Err("a lease not renewed yet".into())
        }
    });
    // A failover still works afterwards.
    let (p, r) = shard_pair(&c, 0);
    c.kill(p);
    wait_promoted(&c, r);
}

#[test]
fn a_node_restarted_with_an_empty_directory_rejoins_and_resyncs() {
    let mut c = KeelCluster::start(2);
    c.create(1);
    wait_ok(&c, 0);
    wait_ok(&c, 1);
    let (p, r) = shard_pair(&c, 0);
    let mut primary = c.raw(p);
    for n in 0..1000 {
        primary.call(&["SET", &format!("k{n}"), "v"]);
    }
    let id = |raw: &mut Raw| match raw.call(&["CLUSTER", "MYID"]) {
        Value::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("{other:?}"),
    };
    let old_id = id(&mut c.raw(r));
    c.kill(r);
    for n in 1000..2000 {
        primary.call(&["SET", &format!("k{n}"), "v"]);
    }
    c.restart_empty(r);
    // Until it has reached etcd it goes by a provisional id.
    wait_ok(&c, r);
    assert_eq!(
        id(&mut c.raw(r)),
        old_id,
        "the restarted node took its old id"
    );
    wait_for("the replica to resync", || {
        let n = as_i(&c.raw(r).call(&["DBSIZE"]));
        if n == 2000 {
            Ok(())
        } else {
            Err(format!("{n} keys"))
        }
    });
    let lines = cluster_nodes(&mut c.raw(p));
    assert_eq!(lines.len(), 2);
    let me = lines
        .iter()
        .find(|l| l.id == old_id)
        .expect("the replica's line");
    assert!(
        me.flags.contains("slave") && me.link == "connected",
        "{me:?}"
    );
}

// ---------------------------------------------------------------------------
// Online resharding
// ---------------------------------------------------------------------------

/// A cluster client over every node of `c`, after it wrote `pre:<n>` = n
/// for n below `count`.
fn preloaded(c: &KeelCluster, count: usize) -> redis::cluster::ClusterClient {
    let seeds: Vec<String> = (0..c.nodes.len())
        .map(|i| format!("redis://{}/", c.addr(i)))
        .collect();
    let client = redis::cluster::ClusterClient::new(seeds).expect("cluster client");
    let mut con = client.get_connection().expect("cluster connection");
    let mut pipe = redis::cluster::cluster_pipe();
    for n in 0..count {
        pipe.set(format!("pre:{n}"), n).ignore();
    }
    pipe.query::<()>(&mut con).expect("preload");
    client
}

/// Waits until both nodes of `c` show nodes 0 and 1 holding `want`
/// slots (each node reads a new layout from etcd on its own).
fn wait_for_slot_counts(c: &KeelCluster, want: (usize, usize)) {
    for i in 0..2 {
        wait_for("the new layout", || {
            let l = cluster_nodes(&mut c.raw(i));
            let slots = |port: u16| -> usize {
                l.iter()
                    .find(|x| x.port == port)
                    .map(|x| x.slots.iter().map(|(a, b)| b - a + 1).sum())
                    .unwrap_or(0)
            };
            match (slots(c.ports[0]), slots(c.ports[1])) {
                got if got == want => Ok(()),
                other => Err(format!("node {i}: {other:?}")),
            }
        });
    }
}

#[test]
fn resharding_under_a_writing_client_loses_no_key_and_leaves_one_copy() {
    let c = KeelCluster::start(2);
    c.create(0);
    wait_ok(&c, 0);
    wait_ok(&c, 1);
    let (from, to) = (myid(&c, 0), myid(&c, 1));
    let client = preloaded(&c, 20_000);

    // A client writing (and reading back) all along.
    let stop = Arc::new(AtomicBool::new(false));
    let (s, cl) = (stop.clone(), client.clone());
    let writer = std::thread::spawn(move || {
        let mut con = cl.get_connection().expect("writer connection");
        let (mut acked, mut errors) = (0usize, Vec::new());
        while !s.load(Ordering::Relaxed) {
            let key = format!("w:{acked}");
            match redis::cmd("SET").arg(&key).arg(acked).query::<()>(&mut con) {
                Ok(()) => acked += 1,
                Err(e) => errors.push(e.to_string()),
            }
            if acked % 10 == 0 {
                let got: Result<Option<u64>, _> = redis::cmd("GET").arg("w:0").query(&mut con);
                if let Err(e) = got {
                    errors.push(e.to_string());
                }
            }
        }
        (acked, errors)
    });
    // Half of node 0's slots move to node 1, 256 at a time.
    let (ok, out) = c.ctl(&[
        "reshard", "--from", &from, "--to", &to, "--slots", "4096", "--batch", "256",
    ]);
    assert!(ok, "keel-ctl reshard failed:\n{out}");
    stop.store(true, Ordering::Relaxed);
    let (acked, errors) = writer.join().expect("writer");
    assert!(
        errors.is_empty(),
        "the client saw errors: {:?}",
        &errors[..errors.len().min(5)]
    );
    assert!(acked > 0);

    // The new layout, on both nodes (once each has read it from etcd).
    wait_for_slot_counts(&c, (4096, 12288));
    let (ok, out) = c.ctl(&["check"]);
    assert!(ok, "{out}");
    // Every key, once: readable through the cluster, and the two
    // primaries' key counts add up to exactly the keys written. (The
    // crate's cluster pipelines do not follow MOVED: a new connection
    // reads the new slot map.)
    let mut con = client.get_connection().expect("cluster connection");
    let mut pipe = redis::cluster::cluster_pipe();
    for n in 0..20_000 {
        pipe.get(format!("pre:{n}"));
    }
    let got: Vec<u64> = pipe.query(&mut con).expect("read back");
    assert_eq!(got, (0..20_000).collect::<Vec<u64>>());
    let mut pipe = redis::cluster::cluster_pipe();
    for n in 0..acked {
        pipe.get(format!("w:{n}"));
    }
    let got: Vec<Option<u64>> = pipe.query(&mut con).expect("read back");
    assert!(
        got.iter().enumerate().all(|(n, v)| *v == Some(n as u64)),
        "an acknowledged write is missing"
    );
    let total = as_i(&c.raw(0).call(&["DBSIZE"])) + as_i(&c.raw(1).call(&["DBSIZE"]));
    assert_eq!(total as usize, 20_000 + acked, "a key is on both primaries");
    // The moved slots hold nothing on the source.
    assert_eq!(
        c.raw(0).call(&["CLUSTER", "COUNTKEYSINSLOT", "100"]),
        Value::Integer(0)
    );
}

/// Resharding a node whose values are on disk (`tiering-dir`): MIGRATE
/// reads them back off the worker, and every value arrives exact.
#[test]
fn resharding_moves_values_on_disk_exact() {
    let tier = ["--tiering-dir".to_string(), "tier".to_string()];
    let c = KeelCluster::start_with(Etcd::start(), 2, |_| None, |_| tier.to_vec());
    c.create(0);
    wait_ok(&c, 0);
    wait_ok(&c, 1);
    let (from, to) = (myid(&c, 0), myid(&c, 1));
    let seeds: Vec<String> = (0..2).map(|i| format!("redis://{}/", c.addr(i))).collect();
    let client = redis::cluster::ClusterClient::new(seeds).expect("cluster client");
    let value = |n: usize| format!("{n:06}-").repeat(30);
    let keys = 5_000;
    let mut con = client.get_connection().expect("cluster connection");
    let mut pipe = redis::cluster::cluster_pipe();
    for n in 0..keys {
        pipe.set(format!("t:{n}"), value(n)).ignore();
    }
    pipe.query::<()>(&mut con).expect("preload");
    let mut src = c.raw(0);
    assert!(matches!(src.call(&["DEBUG", "SPILL"]), Value::Integer(n) if n > 1000));
    let tier_stat = |raw: &mut Raw, field: &str| -> u64 {
        info_field(&info(raw, "tiering"), field)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {field} in INFO tiering"))
    };
    let inline = tier_stat(&mut src, "tiering_inline_loads");
    let (ok, out) = c.ctl(&[
        "reshard", "--from", &from, "--to", &to, "--slots", "4096", "--batch", "512",
    ]);
    assert!(ok, "keel-ctl reshard failed:\n{out}");
    assert_eq!(tier_stat(&mut src, "tiering_inline_loads"), inline);
    assert!(tier_stat(&mut src, "tiering_loads") > 0);
    // The new layout on both nodes (once each has read it from etcd): the
    // crate's cluster pipelines do not follow MOVED.
    wait_for_slot_counts(&c, (4096, 12288));
    let mut con = client.get_connection().expect("cluster connection");
    let mut pipe = redis::cluster::cluster_pipe();
    for n in 0..keys {
        pipe.get(format!("t:{n}"));
    }
    let got: Vec<String> = pipe.query(&mut con).expect("read back");
    assert!(
        got.iter().enumerate().all(|(n, v)| *v == value(n)),
        "a value came back different"
    );
    let total = as_i(&c.raw(0).call(&["DBSIZE"])) + as_i(&c.raw(1).call(&["DBSIZE"]));
    assert_eq!(total as usize, keys, "a key is on both primaries, or none");
}

/// A kill -9 of the source's primary in the middle of a reshard: the
/// replica takes over and keel-ctl goes on moving from it, so the
/// migration ends closed, every key once, none lost.
#[test]
fn a_reshard_goes_on_through_a_failover_of_its_source() {
    let mut c = KeelCluster::start(4);
    c.create(1);
    for i in 0..4 {
        wait_ok(&c, i);
    }
    let source = c.primary_of_slot(0, 0);
    let target = c.primary_of_slot(0, 16383);
    let (from, to) = (myid(&c, source), myid(&c, target));
    let client = preloaded(&c, 20_000);
    wait_promised(&c, source);
    let (_, replica) = shard_pair(&c, 0);

    // One key per MIGRATE: the move is long, and the kill lands early in it.
    let mut reshard = Command::new(keel_ctl_binary())
        .args(["--etcd", &c.etcd.endpoint(), "--cluster", &c.name])
        .args(["reshard", "--from", &from, "--to", &to, "--slots", "4096"])
        .args(["--batch", "64", "--pipeline", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run keel-ctl reshard");
    // Its output, line by line, as it goes.
    let stdout = reshard.stdout.take().expect("keel-ctl's stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line.clone());
        }
    });
    let mut text = String::new();
    for line in rx.iter() {
        text.push_str(&line);
        text.push('\n');
        if line.starts_with("Moved slots") {
            break;
        }
    }
    c.kill(source);
    assert!(
        reshard.try_wait().expect("keel-ctl's state").is_none(),
        "the reshard ended before the kill: the test needs a longer move"
    );
    let out = reshard.wait_with_output().expect("keel-ctl reshard");
    reader.join().expect("the output reader");
    text.extend(rx.try_iter().map(|l| l + "\n"));
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "keel-ctl reshard failed:\n{text}");
    assert!(
        text.contains("trying again"),
        "no failover was met:\n{text}"
    );
    // The promoted replica reads the final layout from etcd.
    wait_for("the new layout", || {
        match (
            c.primary_of_slot(replica, 4095),
            c.primary_of_slot(replica, 4096),
        ) {
            (t, r) if t == target && r == replica => Ok(()),
            other => Err(format!("{other:?}")),
        }
    });

    // The killed node comes back empty, as a replica of its old shard.
    c.restart_empty(source);
    for i in 0..4 {
        wait_ok(&c, i);
    }
    let (ok, out) = c.ctl(&["check"]);
    assert!(ok, "{out}");
    let (ok, out) = c.ctl(&["fix"]);
    assert!(ok && out.contains("No slots are moving"), "{out}");
    let mut con = client.get_connection().expect("cluster connection");
    let mut pipe = redis::cluster::cluster_pipe();
    for n in 0..20_000 {
        pipe.get(format!("pre:{n}"));
    }
    let got: Vec<u64> = pipe.query(&mut con).expect("read back");
    assert_eq!(got, (0..20_000).collect::<Vec<u64>>());
    let total = as_i(&c.raw(replica).call(&["DBSIZE"])) + as_i(&c.raw(target).call(&["DBSIZE"]));
    assert_eq!(total, 20_000, "a key is on both primaries, or lost");
}

/// The id node `i` gives for itself.
fn myid(c: &KeelCluster, i: usize) -> String {
    match c.raw(i).call(&["CLUSTER", "MYID"]) {
        Value::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("{other:?}"),
    }
}

fn role(c: &KeelCluster, i: usize) -> String {
    match c.raw(i).call(&["ROLE"]) {
        Value::Array(v) => match v.first() {
            Some(Value::Bulk(b)) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
}

#[test]
fn keel_ctl_adds_rebalances_fails_over_and_removes_nodes() {
    let c = KeelCluster::start(4);
    let (ok, out) = c.ctl(&["create", &c.addr(0), &c.addr(1)]);
    assert!(ok, "{out}");
    let seeds = vec![format!("redis://{}/", c.addr(0))];
    let client = redis::cluster::ClusterClient::new(seeds).expect("cluster client");
    let mut con = client.get_connection().expect("connection");
    let mut pipe = redis::cluster::cluster_pipe();
    for n in 0..5000 {
        pipe.set(format!("k:{n}"), n).ignore();
    }
    pipe.query::<()>(&mut con).expect("load");
    let read_all = |client: &redis::cluster::ClusterClient| {
        let mut con = client.get_connection().expect("connection");
        let mut pipe = redis::cluster::cluster_pipe();
        for n in 0..5000 {
            pipe.get(format!("k:{n}"));
        }
        let got: Vec<u64> = pipe.query(&mut con).expect("read back");
        assert_eq!(got, (0..5000).collect::<Vec<u64>>());
    };

    // A third primary, then the slots evened out over the three.
    let (ok, out) = c.ctl(&["add-node", &c.addr(2)]);
    assert!(ok, "{out}");
    let (ok, out) = c.ctl(&["rebalance", "--batch", "512"]);
    assert!(ok, "{out}");
    wait_for("three even primaries", || {
        let mut counts: Vec<usize> = cluster_nodes(&mut c.raw(2))
            .iter()
            .map(|l| l.slots.iter().map(|(a, b)| b - a + 1).sum())
            .collect();
        counts.sort();
        if counts == [5461, 5461, 5462] {
            Ok(())
        } else {
            Err(format!("{counts:?}"))
        }
    });
    read_all(&client);
    let total: i64 = (0..3).map(|i| as_i(&c.raw(i).call(&["DBSIZE"]))).sum();
    assert_eq!(total, 5000);

    // A replica for it; then a manual failover to that replica.
    let (id2, id3) = (myid(&c, 2), myid(&c, 3));
    let (ok, out) = c.ctl(&["add-node", &c.addr(3), "--replica-of", &id2]);
    assert!(ok, "{out}");
    assert_eq!(role(&c, 3), "slave");
    let (ok, out) = c.ctl(&["failover", &id3]);
    assert!(ok, "{out}");
    assert_eq!(role(&c, 3), "master");
    wait_for("the old primary to follow", || match role(&c, 2).as_str() {
        "slave" => Ok(()),
        r => Err(r.to_string()),
    });
    wait_ok(&c, 2);
    read_all(&client);

    // The demoted node leaves the cluster.
    let (ok, out) = c.ctl(&["del-node", &id2]);
    assert!(ok, "{out}");
    wait_for("three nodes left", || {
        let n = cluster_nodes(&mut c.raw(0)).len();
        if n == 3 {
            Ok(())
        } else {
            Err(format!("{n} nodes"))
        }
    });
    wait_for("the removed node to stop replicating", || {
        match role(&c, 2).as_str() {
            "master" => Ok(()),
            r => Err(r.to_string()),
        }
    });
    // A primary with slots cannot leave.
    let (ok, out) = c.ctl(&["del-node", &id3]);
    assert!(!ok && out.contains("is not empty"), "{out}");
    let (ok, out) = c.ctl(&["check"]);
    assert!(ok, "{out}");
    read_all(&client);
}

// ---------------------------------------------------------------------------
// Valkey 8.0's CLUSTER SLOT-STATS
// ---------------------------------------------------------------------------

/// CLUSTER SLOT-STATS as Valkey 8.0.1 answers it (replies and errors
/// recorded from valkey-server 8.0.1 in cluster mode): key counts always,
/// CPU time and request/reply bytes per slot with
/// `cluster-slot-stats-enabled`, only for the slots of the node's shard.
#[test]
fn cluster_slot_stats_count_keys_time_and_bytes_of_the_nodes_slots() {
    let c = KeelCluster::start(2);
    c.create(0);
    for i in 0..2 {
        wait_ok(&c, i);
    }
    // Slot 15495 is key "a"'s.
    let p = c.primary_of_slot(0, 15495);
    let other = 1 - p;
    let mut r = c.raw(p);
    let one = |keys: u8| format!("*1\r\n*2\r\n:15495\r\n*2\r\n$9\r\nkey-count\r\n:{keys}\r\n");
    assert_eq!(
        r.cmd(&["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "15495", "15495"]),
        one(0).as_bytes()
    );
    assert_eq!(
        c.raw(other)
            .cmd(&["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "15495", "15495"]),
        b"*0\r\n"
    );
    // Every slot of the shard, in slot order.
    let all = r.cmd(&["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "16383"]);
    assert!(all.starts_with(b"*8192\r\n"), "{}", escape(&all));
    assert_eq!(r.cmd(&["SET", "a", "1"]), b"+OK\r\n");
    assert_eq!(
        r.cmd(&["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "15495", "15495"]),
        one(1).as_bytes()
    );
    let top = r.cmd(&[
        "CLUSTER",
        "SLOT-STATS",
        "ORDERBY",
        "KEY-COUNT",
        "LIMIT",
        "1",
    ]);
    assert_eq!(top, one(1).as_bytes());
    // Without the switch only key-count sorts.
    let unknown = b"-ERR Unrecognized sort metric for ORDERBY.\r\n";
    assert_eq!(
        r.cmd(&["CLUSTER", "SLOT-STATS", "ORDERBY", "cpu-usec"]),
        unknown
    );

    assert_eq!(
        r.cmd(&["CONFIG", "SET", "cluster-slot-stats-enabled", "yes"]),
        b"+OK\r\n"
    );
    assert_eq!(r.cmd(&["CONFIG", "RESETSTAT"]), b"+OK\r\n");
    // GET a: 20 bytes in, `$1\r\n1\r\n` out; MULTI, SET a 2, EXEC: the
    // queued SET's 27 bytes and +QUEUED, EXEC's 14 and MULTI's 15, and
    // EXEC's reply.
    assert_eq!(r.cmd(&["GET", "a"]), b"$1\r\n1\r\n");
    assert_eq!(r.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(r.cmd(&["SET", "a", "2"]), b"+QUEUED\r\n");
    assert_eq!(r.cmd(&["EXEC"]), b"*1\r\n+OK\r\n");
    let stats = r.cmd(&[
        "CLUSTER",
        "SLOT-STATS",
        "ORDERBY",
        "network-bytes-in",
        "LIMIT",
        "1",
    ]);
    let text = String::from_utf8_lossy(&stats).to_string();
    let cpu_at = text.find("$8\r\ncpu-usec\r\n:").expect("cpu-usec") + 15;
    let cpu_end = cpu_at + text[cpu_at..].find("\r\n").expect("end");
    let cpu: u64 = text[cpu_at..cpu_end].parse().expect("a count");
    assert_eq!(
        text,
        format!(
            "*1\r\n*2\r\n:15495\r\n*8\r\n$9\r\nkey-count\r\n:1\r\n$8\r\ncpu-usec\r\n:{cpu}\r\n$16\r\nnetwork-bytes-in\r\n:76\r\n$17\r\nnetwork-bytes-out\r\n:25\r\n"
        )
    );
    // Ties by slot ascending, either order.
    let asc = r.cmd(&[
        "CLUSTER",
        "SLOT-STATS",
        "ORDERBY",
        "network-bytes-out",
        "LIMIT",
        "2",
        "ASC",
    ]);
    let first = c
        .raw(p)
        .cmd(&["CLUSTER", "SLOT-STATS", "SLOTSRANGE", "0", "16383"]);
    let lowest = String::from_utf8_lossy(&first)
        .split("\r\n")
        .nth(2)
        .expect("the first slot")
        .to_string();
    assert!(
        String::from_utf8_lossy(&asc).starts_with(&format!("*2\r\n*2\r\n{lowest}\r\n")),
        "{}",
        escape(&asc)
    );

    // Valkey's errors.
    for (args, err) in [
        (
            &["ORDERBY", "key-count", "LIMIT", "0"][..],
            "ERR Limit has to lie in between 1 and 16384 (maximum number of slots).",
        ),
        (
            &["ORDERBY", "key-count", "LIMIT", "2", "LIMIT", "3"],
            "ERR Multiple filters of the same type are disallowed.",
        ),
        (
            &["ORDERBY", "key-count", "ASC", "DESC"],
            "ERR Multiple filters of the same type are disallowed.",
        ),
        (&["ORDERBY", "key-count", "foo"], "ERR syntax error"),
        (
            &["SLOTSRANGE", "5", "1"],
            "ERR Start slot number 5 is greater than end slot number 1",
        ),
        (
            &["SLOTSRANGE", "5", "16384"],
            "ERR Invalid or out of range slot",
        ),
        (
            &["SLOTSRANGE", "5"],
            "ERR unknown subcommand or wrong number of arguments for 'SLOT-STATS'. Try CLUSTER HELP.",
        ),
        (
            &["foo"],
            "ERR wrong number of arguments for 'cluster|slot-stats' command",
        ),
    ] {
        let mut argv = vec!["CLUSTER", "SLOT-STATS"];
        argv.extend_from_slice(args);
        assert_eq!(r.cmd(&argv), format!("-{err}\r\n").as_bytes(), "{args:?}");
    }
}
