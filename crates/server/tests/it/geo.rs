//! Geo commands beyond the differential table: thousands of random points
//! and searches compared with redis-server byte for byte (scan order,
//! partial sorts among equal distances, ANY's early stop), GEOADD logged as
//! the ZADD Redis runs, the keyspace events of the family, and blocked
//! clients woken by a search that stores its result.

use crate::harness::*;
use crate::propagation::{holds, incremental_log, log_on, wait_blocked};
use crate::{ck, q};

/// xorshift64: the same sequence on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [lo, hi).
    fn range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (self.next() >> 11) as f64 / (1u64 << 53) as f64 * (hi - lo)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Points where searches are hard: clusters (many per box), exact
/// duplicates (equal distances), the antimeridian, near the latitude
/// limits, and a coarse grid (many points on one meridian or parallel).
fn random_points(rng: &mut Rng, n: usize) -> Vec<(f64, f64)> {
    let mut pts: Vec<(f64, f64)> = Vec::with_capacity(n);
    for _ in 0..n {
        let p = match rng.below(10) {
            0..=2 => (rng.range(-180.0, 180.0), rng.range(-85.05, 85.05)),
            3 | 4 => (rng.range(12.0, 14.0), rng.range(40.0, 42.0)),
            5 => {
                let side = if rng.below(2) == 0 { 179.95 } else { -179.95 };
                (side + rng.range(-0.05, 0.05), rng.range(-10.0, 10.0))
            }
            6 => {
                let side = if rng.below(2) == 0 { 84.9 } else { -84.9 };
                (rng.range(-180.0, 180.0), side + rng.range(-0.1, 0.1))
            }
            7 if !pts.is_empty() => pts[rng.below(pts.len())],
            _ => (
                (rng.range(-5.0, 5.0) * 10.0).round() / 10.0,
                (rng.range(-5.0, 5.0) * 10.0).round() / 10.0,
            ),
        };
        pts.push(p);
    }
    pts
}

/// Sends `argv` to both servers; records a difference.
fn compare(k: &mut Raw, r: &mut Raw, argv: &[String], diffs: &mut Vec<String>) {
    let (kr, rr) = (k.cmd(argv), r.cmd(argv));
    if kr != rr && diffs.len() < 10 {
        diffs.push(format!(
            "{}\n    keel:  {}\n    redis: {}",
            argv.join(" "),
            escape(&kr[..kr.len().min(600)]),
            escape(&rr[..rr.len().min(600)])
        ));
    }
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// A random search: GEOSEARCH, GEOSEARCHSTORE or a GEORADIUS form, from
/// a member or from coordinates near the points, with random options.
fn random_query(rng: &mut Rng, pts: &[(f64, f64)], key: &str, members: usize) -> Vec<String> {
    let unit = rng.pick(&["m", "km", "mi", "ft"]);
    let scale = match unit {
        "km" => 1000.0,
        "mi" => 1609.34,
        "ft" => 0.3048,
        _ => 1.0,
    };
    // 10 m to 20000 km, evenly in log scale.
    let meters = 10f64.powf(rng.range(1.0, 7.3));
    let size = |m: f64| format!("{:.6}", m / scale);
    let member = format!("m{}", rng.below(members));
    let (lon, lat) = pts[rng.below(pts.len())];
    let lon = format!("{:.5}", (lon + rng.range(-0.5, 0.5)).clamp(-180.0, 180.0));
    let lat = format!("{:.5}", (lat + rng.range(-0.5, 0.5)).clamp(-85.05, 85.05));
    let mut opts: Vec<String> = Vec::new();
    if rng.below(2) == 0 {
        opts.push(rng.pick(&["ASC", "DESC"]).into());
    }
    if rng.below(5) < 2 {
        opts.push("COUNT".into());
        opts.push(rng.pick(&["1", "2", "3", "5", "10", "50", "300"]).into());
        if rng.below(3) == 0 {
            opts.push("ANY".into());
        }
    }
    let store = rng.below(6) == 0;
    if !store {
        for w in ["WITHDIST", "WITHCOORD", "WITHHASH"] {
            if rng.below(5) < 2 {
                opts.push(w.into());
            }
        }
    }
    let mut argv: Vec<String> = match rng.below(5) {
        0 => strings(&["GEORADIUS", key, &lon, &lat, &size(meters), unit]),
        1 => strings(&["GEORADIUSBYMEMBER", key, &member, &size(meters), unit]),
        _ => {
            let mut a = if store {
                strings(&["GEOSEARCHSTORE", "dst", key])
            } else {
                strings(&["GEOSEARCH", key])
            };
            if rng.below(2) == 0 {
                a.extend(strings(&["FROMLONLAT", &lon, &lat]));
            } else {
                a.extend(strings(&["FROMMEMBER", &member]));
            }
            if rng.below(2) == 0 {
                a.extend(strings(&["BYRADIUS", &size(meters), unit]));
            } else {
                let other = meters * rng.range(0.2, 3.0);
                a.extend(strings(&["BYBOX", &size(meters), &size(other), unit]));
            }
            if store && rng.below(2) == 0 {
                a.push("STOREDIST".into());
            }
            a.extend(opts);
            return a;
        }
    };
    argv.extend(opts);
    if store {
        argv.extend(strings(&[rng.pick(&["STORE", "STOREDIST"]), "dst"]));
    }
    argv
}

/// Thousands of random points in a skiplist-encoded set and 50 in a
/// listpack one, then random searches of every form, GEODIST, GEOPOS and
/// GEOHASH: the same bytes as redis-server, in RESP2 and RESP3.
#[test]
fn searches_match_redis_on_random_points() {
    let keel = Server::keel();
    let redis = Server::redis();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let pts = random_points(&mut rng, 3000);
    let mut diffs = Vec::new();
    let (mut k, mut r) = (keel.raw(), redis.raw());
    for (key, n) in [("geo", pts.len()), ("small", 50)] {
        for chunk in (0..n).collect::<Vec<_>>().chunks(100) {
            let mut argv = strings(&["GEOADD", key]);
            for &i in chunk {
                let (lon, lat) = pts[i];
                argv.extend([format!("{lon:.6}"), format!("{lat:.6}"), format!("m{i}")]);
            }
            compare(&mut k, &mut r, &argv, &mut diffs);
        }
    }
    let (mut k3, mut r3) = (keel.raw(), redis.raw());
    k3.cmd(&["HELLO", "3"]);
    r3.cmd(&["HELLO", "3"]);
    for i in 0..1500 {
        let (key, members) = if i % 5 == 0 {
            ("small", 50)
        } else {
            ("geo", pts.len())
        };
        let argv = random_query(&mut rng, &pts, key, members);
        let (kc, rc) = if i % 3 == 0 {
            (&mut k3, &mut r3)
        } else {
            (&mut k, &mut r)
        };
        compare(kc, rc, &argv, &mut diffs);
        if argv
            .iter()
            .any(|a| a.starts_with("STORE") || a == "GEOSEARCHSTORE")
        {
            compare(
                kc,
                rc,
                &strings(&["ZRANGE", "dst", "0", "-1", "WITHSCORES"]),
                &mut diffs,
            );
        }
    }
    for _ in 0..500 {
        let a = format!("m{}", rng.below(pts.len()));
        let b = format!("m{}", rng.below(pts.len()));
        let unit = rng.pick(&["m", "km", "mi", "ft"]);
        compare(
            &mut k,
            &mut r,
            &strings(&["GEODIST", "geo", &a, &b, unit]),
            &mut diffs,
        );
    }
    for chunk in (0..pts.len()).collect::<Vec<_>>().chunks(300) {
        for cmd in ["GEOPOS", "GEOHASH"] {
            let mut argv = strings(&[cmd, "geo"]);
            argv.extend(chunk.iter().map(|i| format!("m{i}")));
            compare(&mut k, &mut r, &argv, &mut diffs);
            compare(&mut k3, &mut r3, &argv, &mut diffs);
        }
    }
    assert!(
        diffs.is_empty(),
        "replies differ from redis-server:\n{}",
        diffs.join("\n")
    );
}

/// The server under test with its files in a scratch directory, not in
/// the working directory other tests' servers start (and load) from.
fn isolated_server() -> (Server, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "keel-it-geo-{}-{}",
        std::process::id(),
        free_port()
    ));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    let s = if std::env::var("KEEL_IT_AGAINST_REDIS").is_ok_and(|v| v == "1") {
        Server::redis()
    } else {
        Server::keel_with(&["--dir", &dir.to_string_lossy()])
    };
    (s, dir)
}

/// GEOADD is logged as the ZADD Redis runs (scores computed, options
/// kept); a search that stores is logged as sent.
#[tokio::test]
async fn geoadd_is_logged_as_zadd() {
    let (s, dir) = isolated_server();
    let mut c = s.client().await;
    log_on(&mut c).await;
    ck!(c, "GEOADD geo 13.361389 38.115556 Palermo", int(1));
    ck!(c, "GEOADD geo CH XX 15.087269 37.502669 Palermo", int(1));
    // Nothing changed: nothing logged.
    ck!(c, "GEOADD geo NX 1 1 Palermo", int(0));
    ck!(
        c,
        "GEOSEARCHSTORE near geo FROMLONLAT 15 37 BYRADIUS 200 km STOREDIST",
        int(1)
    );
    let log = incremental_log(&mut c).await;
    let shown = || String::from_utf8_lossy(&log).into_owned();
    assert!(
        holds(
            &log,
            b"*4\r\n$4\r\nzadd\r\n$3\r\ngeo\r\n$16\r\n3479099956230698\r\n$7\r\nPalermo\r\n"
        ),
        "{}",
        shown()
    );
    assert!(
        holds(
            &log,
            b"*6\r\n$4\r\nzadd\r\n$3\r\ngeo\r\n$2\r\nCH\r\n$2\r\nXX\r\n$16\r\n3479447370796909\r\n$7\r\nPalermo\r\n"
        ),
        "{}",
        shown()
    );
    assert!(!holds(&log, b"$2\r\nNX\r\n"), "{}", shown());
    assert!(!holds(&log, b"GEOADD"), "{}", shown());
    assert!(
        holds(&log, b"$14\r\nGEOSEARCHSTORE\r\n$4\r\nnear\r\n"),
        "{}",
        shown()
    );
    drop(c);
    drop(s);
    let _ = std::fs::remove_dir_all(dir);
}

/// Reads one pmessage and returns (event, key).
fn event(sub: &mut Raw) -> (String, String) {
    match parse(&sub.read_reply()) {
        resp::Value::Array(v) if v.len() == 4 => {
            let channel = text_of(&v[2]);
            let event = channel.rsplit(':').next().unwrap_or("").to_string();
            (event, text_of(&v[3]))
        }
        other => panic!("not a pmessage: {other:?}"),
    }
}

fn text_of(v: &resp::Value) -> String {
    match v {
        resp::Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// GEOADD publishes `zadd`, a stored search `geosearchstore` or
/// `georadiusstore`, an empty one `del` for the destination it removes;
/// searches that store nothing publish nothing.
#[tokio::test]
async fn keyspace_events_are_redis_names() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "CONFIG SET notify-keyspace-events KEA", ok());
    let mut sub = s.raw();
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    ck!(
        c,
        "GEOADD geo 13.361389 38.115556 Palermo 15.087269 37.502669 Catania",
        int(2)
    );
    assert_eq!(event(&mut sub), ("zadd".into(), "geo".into()));
    ck!(c, "GEOADD geo NX 1 1 Palermo", int(0));
    q!(c, "GEOSEARCH geo FROMLONLAT 15 37 BYRADIUS 200 km").unwrap();
    ck!(
        c,
        "GEOSEARCHSTORE d1 geo FROMLONLAT 15 37 BYRADIUS 200 km",
        int(2)
    );
    assert_eq!(event(&mut sub), ("geosearchstore".into(), "d1".into()));
    ck!(c, "GEORADIUS geo 15 37 200 km STOREDIST d2", int(2));
    assert_eq!(event(&mut sub), ("georadiusstore".into(), "d2".into()));
    ck!(c, "GEORADIUSBYMEMBER geo Palermo 1 km STORE d3", int(1));
    assert_eq!(event(&mut sub), ("georadiusstore".into(), "d3".into()));
    ck!(
        c,
        "GEOSEARCHSTORE d1 geo FROMLONLAT 50 50 BYRADIUS 1 m",
        int(0)
    );
    assert_eq!(event(&mut sub), ("del".into(), "d1".into()));
    ck!(c, "GEORADIUS nokey 0 0 1 km STORE d2", int(0));
    assert_eq!(event(&mut sub), ("del".into(), "d2".into()));
    // A marker: nothing was published in between.
    ck!(c, "SET marker x", ok());
    assert_eq!(event(&mut sub), ("set".into(), "marker".into()));
}

/// BZPOPMIN waiting on a key is served when a stored search creates it,
/// also when the destination is a second STORE the key specs do not name.
#[tokio::test]
async fn stored_searches_wake_blocked_pops() {
    for write in [
        "GEOSEARCHSTORE dst src FROMLONLAT 15 37 BYRADIUS 100 km",
        "GEORADIUS src 15 37 100 km STORE dst",
        "GEORADIUSBYMEMBER src Catania 1 km STORE other STORE dst",
    ] {
        let s = Server::under_test();
        let mut c = s.client().await;
        ck!(c, "GEOADD src 15.087269 37.502669 Catania", int(1));
        let mut waiter = s.client().await;
        let pop = tokio::spawn(async move { q!(waiter, "BZPOPMIN dst 0") });
        wait_blocked(&mut c, 1).await;
        ck!(c, write, int(1));
        assert_eq!(
            pop.await.unwrap(),
            arr(vec![b("dst"), b("Catania"), b("3479447370796909")]),
            "after {write}"
        );
    }
}
