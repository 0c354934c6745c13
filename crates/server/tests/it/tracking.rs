//! Client-side caching (CLIENT TRACKING): the same multi-connection
//! scenarios run against keel and redis-server, every reply and push
//! message compared byte for byte. A connection's pushes are read in
//! order with its replies; a PING after the writer's reply was read shows
//! that nothing else was queued before it (keel, as Redis, puts a message
//! queued before a request ahead of that request's reply).

use crate::harness::*;

/// One connection in a transcript.
struct Conn {
    raw: Raw,
    name: &'static str,
}

struct Script<'a> {
    log: Vec<String>,
    server: &'a Server,
}

impl<'a> Script<'a> {
    fn new(server: &'a Server) -> Self {
        Script {
            log: Vec::new(),
            server,
        }
    }

    fn conn(&self, name: &'static str) -> Conn {
        Conn {
            raw: self.server.raw(),
            name,
        }
    }

    /// Sends a command and records its reply.
    fn cmd(&mut self, c: &mut Conn, argv: &[&str]) {
        let r = c.raw.cmd(argv);
        self.log
            .push(format!("{} {:?} -> {}", c.name, argv, escape(&r)));
    }

    /// Sends a command whose reply differs between servers (ids).
    fn quiet(&mut self, c: &mut Conn, argv: &[&str]) -> Vec<u8> {
        c.raw.cmd(argv)
    }

    /// Records the next message the connection receives.
    fn push(&mut self, c: &mut Conn) {
        let r = c.raw.read_reply();
        self.log.push(format!("{} <push> {}", c.name, escape(&r)));
    }
}

fn id_of(c: &mut Conn) -> String {
    let r = c.raw.cmd(&["CLIENT", "ID"]);
    String::from_utf8_lossy(&r[1..r.len() - 2]).into_owned()
}

fn scenario(server: &Server) -> Vec<String> {
    let mut s = Script::new(server);
    let mut w = s.conn("writer");

    // Default mode, RESP3: a key read, then written by another client;
    // the client's own write; MULTI; FLUSHALL.
    let mut a = s.conn("a");
    s.quiet(&mut a, &["HELLO", "3"]);
    s.cmd(&mut a, &["CLIENT", "TRACKING", "on"]);
    s.cmd(&mut a, &["CLIENT", "TRACKINGINFO"]);
    s.cmd(&mut a, &["GETREDIR"]);
    s.cmd(&mut a, &["CLIENT", "GETREDIR"]);
    s.cmd(&mut w, &["SET", "k1", "v"]);
    s.cmd(&mut a, &["GET", "k1"]);
    s.cmd(&mut a, &["MGET", "k2", "k3"]);
    s.cmd(&mut w, &["SET", "k1", "w"]);
    s.push(&mut a);
    s.cmd(&mut a, &["PING"]);
    // A second write: the key is no longer tracked.
    s.cmd(&mut w, &["SET", "k1", "x"]);
    s.cmd(&mut w, &["MSET", "k2", "1", "k3", "2"]);
    s.push(&mut a);
    s.push(&mut a);
    s.cmd(&mut a, &["PING"]);
    // Its own write: the invalidation follows the reply.
    s.cmd(&mut a, &["GET", "k1"]);
    s.cmd(&mut a, &["INCR", "k1"]);
    s.cmd(&mut a, &["SET", "k1", "1"]);
    s.cmd(&mut a, &["INCR", "k1"]);
    s.push(&mut a);
    s.cmd(&mut a, &["MULTI"]);
    s.cmd(&mut a, &["GET", "k2"]);
    s.cmd(&mut a, &["SET", "k2", "5"]);
    s.cmd(&mut a, &["EXEC"]);
    s.push(&mut a);
    // Reads that fail still track; a deleted key invalidates.
    s.cmd(&mut a, &["LRANGE", "k3", "0", "-1"]);
    s.cmd(&mut w, &["DEL", "k3"]);
    s.push(&mut a);
    s.cmd(&mut a, &["GET", "k4"]);
    s.cmd(&mut w, &["FLUSHALL"]);
    s.push(&mut a);
    s.cmd(&mut a, &["PING"]);
    s.cmd(&mut a, &["CLIENT", "TRACKING", "off"]);
    s.cmd(&mut a, &["GET", "k5"]);
    s.cmd(&mut w, &["SET", "k5", "1"]);
    s.cmd(&mut a, &["PING"]);

    // RESP2 with a redirect to a subscribed connection.
    let mut sub = s.conn("sub");
    let sub_id = id_of(&mut sub);
    s.cmd(&mut sub, &["SUBSCRIBE", "__redis__:invalidate"]);
    let mut c = s.conn("c");
    let r = s.quiet(&mut c, &["CLIENT", "TRACKING", "on", "REDIRECT", &sub_id]);
    s.log
        .push(format!("c TRACKING on REDIRECT <sub> -> {}", escape(&r)));
    s.cmd(&mut c, &["GET", "r1"]);
    s.cmd(&mut c, &["HGET", "r2", "f"]);
    s.cmd(&mut w, &["SET", "r1", "1"]);
    s.push(&mut sub);
    s.cmd(&mut w, &["HSET", "r2", "f", "1"]);
    s.push(&mut sub);
    s.cmd(&mut w, &["FLUSHDB"]);
    s.push(&mut sub);
    // RESP2 without a redirect: nothing is sent.
    let mut d = s.conn("d");
    s.cmd(&mut d, &["CLIENT", "TRACKING", "on"]);
    s.cmd(&mut d, &["GET", "r3"]);
    s.cmd(&mut w, &["SET", "r3", "1"]);
    s.cmd(&mut d, &["PING"]);

    // OPTIN / OPTOUT and CLIENT CACHING.
    let mut e = s.conn("e");
    s.quiet(&mut e, &["HELLO", "3"]);
    s.cmd(&mut e, &["CLIENT", "TRACKING", "on", "OPTIN"]);
    s.cmd(&mut e, &["CLIENT", "CACHING", "no"]);
    s.cmd(&mut e, &["GET", "o1"]);
    s.cmd(&mut e, &["CLIENT", "CACHING", "yes"]);
    s.cmd(&mut e, &["CLIENT", "TRACKINGINFO"]);
    s.cmd(&mut e, &["GET", "o2"]);
    s.cmd(&mut e, &["GET", "o3"]);
    s.cmd(&mut w, &["MSET", "o1", "1", "o2", "2", "o3", "3"]);
    s.push(&mut e);
    s.cmd(&mut e, &["PING"]);
    s.cmd(&mut e, &["CLIENT", "TRACKING", "on", "OPTOUT"]);
    s.cmd(&mut e, &["CLIENT", "TRACKING", "off"]);
    s.cmd(&mut e, &["CLIENT", "TRACKING", "on", "OPTOUT", "NOLOOP"]);
    s.cmd(&mut e, &["CLIENT", "CACHING", "yes"]);
    s.cmd(&mut e, &["CLIENT", "CACHING", "no"]);
    s.cmd(&mut e, &["GET", "o1"]);
    s.cmd(&mut e, &["GET", "o2"]);
    // NOLOOP: its own write sends nothing; another's does.
    s.cmd(&mut e, &["SET", "o2", "x"]);
    s.cmd(&mut e, &["GET", "o3"]);
    s.cmd(&mut w, &["SET", "o1", "1"]);
    s.cmd(&mut w, &["SET", "o3", "1"]);
    s.push(&mut e);
    s.cmd(&mut e, &["PING"]);

    // BCAST with prefixes; NOLOOP in BCAST.
    let mut b = s.conn("b");
    s.quiet(&mut b, &["HELLO", "3"]);
    s.cmd(
        &mut b,
        &[
            "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:", "PREFIX", "item:",
        ],
    );
    s.cmd(
        &mut b,
        &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "user:1"],
    );
    s.cmd(
        &mut b,
        &[
            "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "x", "PREFIX", "xy",
        ],
    );
    s.cmd(&mut b, &["CLIENT", "TRACKING", "on", "OPTIN"]);
    s.cmd(&mut b, &["CLIENT", "TRACKINGINFO"]);
    s.cmd(
        &mut w,
        &[
            "MSET", "user:2", "a", "user:1", "b", "other", "c", "item:9", "d",
        ],
    );
    s.push(&mut b);
    s.push(&mut b);
    s.cmd(&mut b, &["PING"]);
    s.cmd(&mut b, &["SET", "user:3", "own"]);
    s.push(&mut b);
    s.cmd(&mut b, &["CLIENT", "TRACKING", "off"]);
    s.cmd(&mut b, &["CLIENT", "TRACKING", "on", "BCAST", "NOLOOP"]);
    s.cmd(&mut b, &["SET", "any", "own"]);
    s.cmd(&mut w, &["SET", "any", "theirs"]);
    s.push(&mut b);
    s.cmd(&mut b, &["PING"]);

    // Errors.
    let mut x = s.conn("x");
    for argv in [
        &["CLIENT", "TRACKING", "maybe"][..],
        &["CLIENT", "TRACKING", "on", "foo"],
        &["CLIENT", "TRACKING", "on", "REDIRECT"],
        &["CLIENT", "TRACKING", "on", "REDIRECT", "abc"],
        &["CLIENT", "TRACKING", "on", "REDIRECT", "0"],
        &["CLIENT", "TRACKING", "on", "REDIRECT", "99999999"],
        &["CLIENT", "TRACKING", "on", "PREFIX", "a"],
        &["CLIENT", "TRACKING", "on", "BCAST", "OPTIN"],
        &["CLIENT", "TRACKING", "on", "OPTIN", "OPTOUT"],
        &[
            "CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "ab", "PREFIX", "a",
        ],
        &["CLIENT", "TRACKING"],
        &["CLIENT", "CACHING", "yes"],
        &["CLIENT", "CACHING", "yes", "no"],
        &["CLIENT", "GETREDIR", "x"],
        &["CLIENT", "TRACKINGINFO", "x"],
        &["CLIENT", "TRACKINGINFO"],
        &["CLIENT", "GETREDIR"],
    ] {
        s.cmd(&mut x, argv);
    }
    s.cmd(&mut x, &["CLIENT", "TRACKING", "on", "OPTIN"]);
    s.cmd(&mut x, &["CLIENT", "CACHING", "no"]);
    s.cmd(&mut x, &["CLIENT", "CACHING", "maybe"]);
    s.cmd(&mut x, &["RESET"]);
    s.cmd(&mut x, &["CLIENT", "TRACKINGINFO"]);

    // Scripts: a read inside one remembers every key the script declared,
    // not only the key it read; a script that only writes remembers
    // nothing; EVAL_RO's reads count the same.
    let mut sc = s.conn("sc");
    s.quiet(&mut sc, &["HELLO", "3"]);
    s.cmd(&mut sc, &["CLIENT", "TRACKING", "on"]);
    s.cmd(
        &mut sc,
        &["EVAL", "return redis.call('get', KEYS[1])", "2", "sa", "sb"],
    );
    s.cmd(&mut w, &["SET", "sb", "1"]);
    s.push(&mut sc);
    s.cmd(&mut w, &["SET", "sa", "1"]);
    s.push(&mut sc);
    s.cmd(&mut sc, &["PING"]);
    s.cmd(
        &mut sc,
        &[
            "EVAL",
            "return redis.call('set', KEYS[1], 'x')",
            "2",
            "sc1",
            "sc2",
        ],
    );
    s.cmd(&mut w, &["SET", "sc2", "1"]);
    s.cmd(&mut sc, &["PING"]);
    s.cmd(
        &mut sc,
        &[
            "EVAL_RO",
            "return redis.call('exists', KEYS[2])",
            "2",
            "sd1",
            "sd2",
        ],
    );
    s.cmd(&mut w, &["SET", "sd1", "1"]);
    s.push(&mut sc);
    s.cmd(&mut sc, &["PING"]);
    s.log
}

#[test]
fn tracking_matches_redis() {
    let redis = Server::redis();
    let keel = Server::under_test();
    let want = scenario(&redis);
    let got = scenario(&keel);
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(g, w, "keel differs from redis-server");
    }
    assert_eq!(got.len(), want.len());
}

/// Reads `key` on `a` once `w` has set it with a TTL of `px` ms, trying
/// again until the read saw the value (so `a` tracks a live key).
fn track_volatile(w: &mut Raw, a: &mut Raw, key: &str, px: &str) {
    loop {
        w.cmd(&["SET", key, "v", "PX", px]);
        if a.cmd(&["GET", key]) == b"$1\r\nv\r\n" {
            return;
        }
        // Expired under our feet (a slow machine): its own access
        // removed it; no invalidation is due for that one.
        assert_eq!(a.cmd(&["PING"]), b"+PONG\r\n");
    }
}

/// Keys removed by expiry invalidate, on access and by the active cycle;
/// INFO counts tracking clients and keys; a vanished redirect target is
/// reported to a RESP3 client and flagged in CLIENT LIST.
#[test]
fn tracking_expiry_info_and_broken_redirect() {
    let s = Server::under_test();
    let mut w = s.raw();
    let mut a = s.raw();
    a.cmd(&["HELLO", "3"]);
    assert_eq!(a.cmd(&["CLIENT", "TRACKING", "on"]), b"+OK\r\n");
    assert_eq!(a.cmd(&["GET", "n1"]), b"_\r\n");
    assert_eq!(a.cmd(&["GET", "n2"]), b"_\r\n");
    let info = String::from_utf8_lossy(&w.cmd(&["INFO"])).into_owned();
    assert_eq!(info_field(&info, "tracking_clients").as_deref(), Some("1"));
    assert_eq!(
        info_field(&info, "tracking_total_keys").as_deref(),
        Some("2")
    );
    assert_eq!(
        info_field(&info, "tracking_total_items").as_deref(),
        Some("2")
    );
    // The active expiry cycle removes e1: the push arrives by itself.
    track_volatile(&mut w, &mut a, "e1", "100");
    assert_eq!(
        a.read_reply(),
        b">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\ne1\r\n"
    );
    // Expired on access by another client.
    w.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
    track_volatile(&mut w, &mut a, "e3", "100");
    while w.cmd(&["GET", "e3"]) != b"$-1\r\n" {}
    assert_eq!(
        a.read_reply(),
        b">2\r\n$10\r\ninvalidate\r\n*1\r\n$2\r\ne3\r\n"
    );
    assert_eq!(a.cmd(&["PING"]), b"+PONG\r\n");

    // A redirect target that goes away.
    let mut target = s.raw();
    let tid = String::from_utf8_lossy(&target.cmd(&["CLIENT", "ID"])[1..])
        .trim()
        .to_string();
    let mut c = s.raw();
    c.cmd(&["HELLO", "3"]);
    assert_eq!(
        c.cmd(&["CLIENT", "TRACKING", "on", "REDIRECT", &tid]),
        b"+OK\r\n"
    );
    c.cmd(&["GET", "rb"]);
    target.cmd(&["QUIT"]);
    // Wait until the server has dropped it.
    while !w
        .cmd(&["CLIENT", "LIST", "ID", &tid])
        .starts_with(b"$0\r\n")
    {}
    w.cmd(&["SET", "rb", "1"]);
    let broken = format!(">2\r\n$21\r\ntracking-redir-broken\r\n:{tid}\r\n");
    assert_eq!(escape(&c.read_reply()), escape(broken.as_bytes()));
    let info = c.cmd(&["CLIENT", "INFO"]);
    let line = String::from_utf8_lossy(&info).into_owned();
    assert!(line.contains("flags=tR "), "{line}");
    assert!(line.contains(&format!("redir={tid} ")), "{line}");
}

/// `tracking-table-max-keys`: past it, keys are forgotten and their
/// clients told, so the table stays bounded.
#[test]
fn tracking_table_max_keys() {
    let s = Server::keel_with(&["--tracking-table-max-keys", "10"]);
    let mut a = s.raw();
    a.cmd(&["HELLO", "3"]);
    a.cmd(&["CLIENT", "TRACKING", "on"]);
    let mut pushes = 0;
    for i in 0..30 {
        a.send_cmd(&["GET", &format!("key:{i}")]);
        // The reply, then an invalidation for each key forgotten.
        loop {
            let r = a.read_reply();
            if r.starts_with(b">2") {
                pushes += 1;
            } else {
                assert_eq!(r, b"_\r\n");
                break;
            }
        }
    }
    // The invalidations of the last GET's evictions, then PING's reply.
    a.send_cmd(&["PING"]);
    loop {
        let r = a.read_reply();
        if r == b"+PONG\r\n" {
            break;
        }
        assert!(r.starts_with(b">2"), "{}", escape(&r));
        pushes += 1;
    }
    let mut w = s.raw();
    let info = String::from_utf8_lossy(&w.cmd(&["INFO", "stats"])).into_owned();
    let keys: usize = info_field(&info, "tracking_total_keys")
        .unwrap()
        .parse()
        .unwrap();
    assert!(keys <= 10, "{keys}");
    assert_eq!(pushes + keys, 30);
}

/// A BCAST client hears of keys under its prefix that the active expiry
/// cycle removes (gathered on the cron's thread, not a command's).
#[test]
fn bcast_hears_of_active_expiry() {
    let s = Server::under_test();
    let mut b = s.raw();
    b.cmd(&["HELLO", "3"]);
    assert_eq!(
        b.cmd(&["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "bx"]),
        b"+OK\r\n"
    );
    let mut w = s.raw();
    w.cmd(&["SET", "bx1", "v", "PX", "50"]);
    let push = b">2\r\n$10\r\ninvalidate\r\n*1\r\n$3\r\nbx1\r\n";
    // The SET, then its expiry.
    assert_eq!(b.read_reply(), push);
    assert_eq!(b.read_reply(), push);
}
