//! Crash tests for the append-only log: concurrent writers under
//! `appendfsync always`, the server killed with SIGKILL at a random moment
//! (also in the middle of a rewrite); after restart every acknowledged
//! write is there, nothing unacknowledged is half-applied, and every
//! MULTI/EXEC is all or nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::harness::{Raw, Server};

const WRITERS: usize = 6;

fn start(dir: &str) -> Server {
    Server::keel_raw(&[
        "--dir",
        dir,
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--save",
        "",
    ])
}

fn int_of(reply: &[u8]) -> Option<i64> {
    match crate::harness::parse(reply) {
        resp::Value::Integer(n) => Some(n),
        resp::Value::Bulk(b) => std::str::from_utf8(&b).ok()?.parse().ok(),
        resp::Value::Null => Some(0),
        _ => None,
    }
}

/// Writer `i` increments `c{i}` and, in transactions, `a{i}` and `b{i}`
/// together, until the server dies, starting from the values that
/// survived the last round. Returns (acked c, sent c, acked tx, sent tx)
/// as absolute counter values.
fn writer(port: u16, i: usize, stop: Arc<AtomicBool>, base: (i64, i64)) -> (i64, i64, i64, i64) {
    let mut raw = Raw::connect(port);
    let (mut acked, mut sent, mut tx_acked, mut tx_sent) = (base.0, base.0, base.1, base.1);
    let c = format!("c{i}");
    let (a, b) = (format!("a{i}"), format!("b{i}"));
    while !stop.load(Ordering::Relaxed) {
        sent += 1;
        match raw.try_cmd(&["INCR", c.as_str()]) {
            Ok(r) if int_of(&r) == Some(acked + 1) => acked += 1,
            Ok(r) => panic!("unexpected INCR reply {}", crate::harness::escape(&r)),
            Err(_) => break,
        }
        tx_sent += 1;
        let ok = raw.try_cmd(&["MULTI"]).is_ok()
            && raw.try_cmd(&["INCR", a.as_str()]).is_ok()
            && raw.try_cmd(&["INCR", b.as_str()]).is_ok();
        if !ok {
            break;
        }
        match raw.try_cmd(&["EXEC"]) {
            Ok(_) => tx_acked += 1,
            Err(_) => break,
        }
    }
    (acked, sent, tx_acked, tx_sent)
}

fn crash_round(
    dir: &str,
    kill_after: Duration,
    rewrite: bool,
    expected: &mut [(i64, i64, i64, i64)],
) {
    let server = start(dir);
    let port = server.port;
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..WRITERS)
        .map(|i| {
            let stop = stop.clone();
            let base = (expected[i].0, expected[i].2);
            std::thread::spawn(move || writer(port, i, stop, base))
        })
        .collect();
    if rewrite {
        std::thread::sleep(kill_after / 2);
        let mut admin = Raw::connect(port);
        let r = admin.cmd(&["BGREWRITEAOF"]);
        assert!(
            r.starts_with(b"+Background"),
            "{}",
            crate::harness::escape(&r)
        );
        // A snapshot at the same time: killed half-way or not, it must
        // neither lose nor corrupt anything.
        let r = admin.cmd(&["BGSAVE"]);
        assert!(
            r.starts_with(b"+Background saving started"),
            "{}",
            crate::harness::escape(&r)
        );
        std::thread::sleep(kill_after / 2);
    } else {
        std::thread::sleep(kill_after);
    }
    // SAFETY: kill(2) on the pid of the child the harness spawned.
    unsafe {
        libc::kill(server.pid() as libc::pid_t, libc::SIGKILL);
    }
    stop.store(true, Ordering::Relaxed);
    for (i, h) in handles.into_iter().enumerate() {
        expected[i] = h.join().unwrap();
    }
    drop(server);
}

fn verify(dir: &str, expected: &mut [(i64, i64, i64, i64)], round: usize) {
    let server = start(dir);
    let mut raw = server.raw();
    for (i, e) in expected.iter_mut().enumerate() {
        let c = int_of(&raw.cmd(&["GET", format!("c{i}").as_str()])).unwrap();
        let a = int_of(&raw.cmd(&["GET", format!("a{i}").as_str()])).unwrap();
        let b = int_of(&raw.cmd(&["GET", format!("b{i}").as_str()])).unwrap();
        assert!(
            c >= e.0 && c <= e.1,
            "round {round}: c{i}: {c} not in acknowledged..sent {}..{}",
            e.0,
            e.1
        );
        assert_eq!(a, b, "transaction {i} half applied: a={a} b={b}");
        assert!(a >= e.2 && a <= e.3, "a{i}: {a} not in {}..{}", e.2, e.3);
        // What survived is the new baseline for the next round.
        *e = (c, c, a, a);
    }
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let dir = std::env::temp_dir().join(format!("keel-it-aof-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_string_lossy().into_owned();
    let mut expected = vec![(0, 0, 0, 0); WRITERS];
    let kills = [(150, false), (400, true), (90, false), (300, true)];
    for (round, (ms, rewrite)) in kills.into_iter().enumerate() {
        crash_round(&d, Duration::from_millis(ms), rewrite, &mut expected);
        verify(&d, &mut expected, round);
    }
    let written: i64 = expected.iter().map(|e| e.0).sum();
    assert!(written > 0, "no write was acknowledged");
    // The files must also be valid for Redis's own checker.
    let out = std::process::Command::new("redis-check-aof")
        .arg(dir.join("appendonlydir").join("appendonly.aof.manifest"))
        .output()
        .expect("redis-check-aof (package redis-tools) must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("are valid"), "redis-check-aof: {text}");
    // A snapshot that completed is valid for redis-check-rdb too (one cut
    // short by the kill is only a temp file, never dump.rdb).
    let dump = dir.join("dump.rdb");
    if dump.exists() {
        let out = std::process::Command::new("redis-check-rdb")
            .arg(&dump)
            .output()
            .expect("redis-check-rdb (package redis-tools) must be installed");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("RDB looks OK"), "redis-check-rdb: {text}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Seconds per fdatasync in `dir`, the median of 20 (the log's fsync
/// policy changes with it, see persistence::aof).
fn fdatasync_secs(dir: &std::path::Path) -> f64 {
    use std::io::Write;
    let path = dir.join("probe");
    let mut f = std::fs::File::create(&path).unwrap();
    let mut times: Vec<f64> = (0..20)
        .map(|_| {
            f.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
            let t = std::time::Instant::now();
            f.sync_data().unwrap();
            t.elapsed().as_secs_f64()
        })
        .collect();
    let _ = std::fs::remove_file(&path);
    times.sort_by(f64::total_cmp);
    times[10]
}

fn info_field(raw: &mut Raw, field: &str) -> u64 {
    let text = String::from_utf8(raw.cmd(&["INFO", "persistence"])).unwrap();
    crate::harness::info_field(&text, field)
        .unwrap_or_else(|| panic!("no {field} in INFO: {text}"))
        .parse()
        .unwrap()
}

/// `always` with many writers at once: each write is acknowledged only
/// once on disk, and the writers share fsyncs (group commit) instead of
/// taking turns at one fsync each.
#[test]
fn concurrent_always_writers_share_fsyncs() {
    let dir = std::env::temp_dir().join(format!("keel-it-group-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let slow_disk = fdatasync_secs(&dir) >= 0.001;
    let server = start(&dir.to_string_lossy());
    let clients = 20;
    let per_client = 150;
    let before = info_field(&mut server.raw(), "aof_fsyncs");
    let writers: Vec<_> = (0..clients)
        .map(|i| {
            let port = server.port;
            std::thread::spawn(move || {
                let mut raw = Raw::connect(port);
                for n in 0..per_client {
                    let reply = raw.cmd(&["SET", &format!("k{i}:{n}"), "v"]);
                    assert_eq!(reply, b"+OK\r\n");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    let fsyncs = info_field(&mut server.raw(), "aof_fsyncs") - before;
    let writes = (clients * per_client) as u64;
    assert!(fsyncs > 0, "no fsync for {writes} acknowledged writes");
    // A fast disk gathers a round of the clients into one fsync; a slow
    // one overlaps fsyncs, each started for whoever arrived in the last
    // 1/16 of an fsync: fewer per group, but still shared.
    let bound = if slow_disk {
        writes * 9 / 10
    } else {
        writes / 3
    };
    assert!(
        fsyncs <= bound,
        "{fsyncs} fsyncs for {writes} writes from {clients} clients (slow disk: {slow_disk})"
    );
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Bytes of `data` up to and including its last non-zero byte.
fn without_zero_tail(data: &[u8]) -> &[u8] {
    &data[..data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1)]
}

/// The live incremental file is written with zeros ahead of the log (an
/// fsync then commits no new file size). After a crash they follow the
/// last record: `--check-aof` and a restart skip them and lose nothing; a
/// clean shutdown cuts them, leaving plain Redis AOF.
#[test]
fn preallocated_log_survives_a_crash_and_is_cut_at_shutdown() {
    let dir = std::env::temp_dir().join(format!("keel-it-prealloc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let d = dir.to_string_lossy().into_owned();
    let incr = dir.join("appendonlydir").join("appendonly.aof.1.incr.aof");
    let manifest = dir.join("appendonlydir").join("appendonly.aof.manifest");

    let server = start(&d);
    let mut raw = server.raw();
    for i in 0..100 {
        assert_eq!(
            raw.cmd(&["SET", &format!("k{i}"), &format!("v{i}")]),
            b"+OK\r\n"
        );
    }
    // The log thread preallocates within a few of its 10 ms rounds.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let data = loop {
        let data = std::fs::read(&incr).unwrap();
        if data.len() > without_zero_tail(&data).len() {
            break data;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no zeros written ahead of the log"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(without_zero_tail(&data).ends_with(b"$3\r\nv99\r\n"));
    // The zeros are not part of the log's size.
    assert_eq!(
        info_field(&mut raw, "aof_current_size"),
        without_zero_tail(&data).len() as u64
    );
    assert_eq!(info_field(&mut raw, "aof_buffer_length"), 0);
    // SAFETY: kill(2) on the pid of the child the harness spawned.
    unsafe {
        libc::kill(server.pid() as libc::pid_t, libc::SIGKILL);
    }
    drop(raw);
    drop(server);
    let data = std::fs::read(&incr).unwrap();
    assert!(data.ends_with(&[0; 64]), "the crash left the zeros");

    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keel-server"))
        .arg("--check-aof")
        .arg(&manifest)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("are valid"), "{text}");
    // --fix cuts them (a copy: the original is restarted from below).
    let copy = dir.join("copy");
    std::fs::create_dir_all(&copy).unwrap();
    for f in ["appendonly.aof.manifest", "appendonly.aof.1.incr.aof"] {
        std::fs::copy(dir.join("appendonlydir").join(f), copy.join(f)).unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keel-server"))
        .arg("--check-aof")
        .arg(copy.join("appendonly.aof.manifest"))
        .arg("--fix")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("Cut the preallocated zeros"),
        "{text}"
    );
    let fixed = std::fs::read(copy.join("appendonly.aof.1.incr.aof")).unwrap();
    assert_eq!(fixed, without_zero_tail(&data));
    let out = std::process::Command::new("redis-check-aof")
        .arg(copy.join("appendonly.aof.manifest"))
        .output()
        .expect("redis-check-aof (package redis-tools) must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("are valid"), "redis-check-aof: {text}");

    let server = start(&d);
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["DBSIZE"]), b":100\r\n");
    assert_eq!(raw.cmd(&["GET", "k99"]), b"$3\r\nv99\r\n");
    // Appending continues where the log ended, over the zeros.
    assert_eq!(raw.cmd(&["SET", "after", "crash"]), b"+OK\r\n");
    drop(raw);
    drop(server); // SIGTERM: a clean shutdown
    let data = std::fs::read(&incr).unwrap();
    assert!(
        data.ends_with(b"$5\r\nafter\r\n$5\r\ncrash\r\n"),
        "zeros left at shutdown"
    );
    let out = std::process::Command::new("redis-check-aof")
        .arg(&manifest)
        .output()
        .expect("redis-check-aof (package redis-tools) must be installed");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("are valid"), "redis-check-aof: {text}");
    let server = start(&d);
    assert_eq!(server.raw().cmd(&["DBSIZE"]), b":101\r\n");
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A power loss may write an unsynced record out beyond zeros the log had
/// not yet overwritten. Zeros where a record should start end the log:
/// the rest is a cut-off tail, dropped as `aof-load-truncated yes` says
/// and refused with `no`; a record not starting with `*` is corrupt.
#[test]
fn zeros_inside_an_incremental_file_end_the_log() {
    let dir = std::env::temp_dir().join(format!("keel-it-zerohole-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let aof_dir = dir.join("appendonlydir");
    std::fs::create_dir_all(&aof_dir).unwrap();
    std::fs::write(
        aof_dir.join("appendonly.aof.manifest"),
        "file appendonly.aof.1.incr.aof seq 1 type i\n",
    )
    .unwrap();
    let mut log = Vec::new();
    for (k, v) in [("a", "1"), ("b", "2")] {
        resp::encode::command(&mut log, &[b"SET".as_slice(), k.as_bytes(), v.as_bytes()]);
    }
    let good = log.len();
    log.extend_from_slice(&[0; 4096]);
    resp::encode::command(&mut log, &[b"SET".as_slice(), b"c", b"3"]);
    log.extend_from_slice(&[0; 1000]);
    let incr = aof_dir.join("appendonly.aof.1.incr.aof");
    std::fs::write(&incr, &log).unwrap();
    let d = dir.to_string_lossy().into_owned();

    // `aof-load-truncated no`: the start is refused and the file kept.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keel-server"))
        .args(["--port", "0", "--dir", &d, "--appendonly", "yes"])
        .args(["--aof-load-truncated", "no", "--save", ""])
        .output()
        .unwrap();
    assert!(!out.status.success(), "started on a log with a hole");
    assert_eq!(std::fs::read(&incr).unwrap(), log);

    // `yes` (the default): the log ends at the hole.
    let server = start(&d);
    let mut raw = server.raw();
    assert_eq!(
        raw.cmd(&["MGET", "a", "b", "c"]),
        b"*3\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n"
    );
    assert_eq!(raw.cmd(&["SET", "d", "4"]), b"+OK\r\n");
    drop(raw);
    drop(server);
    let data = std::fs::read(&incr).unwrap();
    assert_eq!(&data[..good], &log[..good]);
    assert!(
        data[good..].starts_with(b"*2\r\n$6\r\nSELECT"),
        "appended after the cut"
    );
    let server = start(&d);
    assert_eq!(
        server.raw().cmd(&["MGET", "a", "b", "c", "d"]),
        b"*4\r\n$1\r\n1\r\n$1\r\n2\r\n$-1\r\n$1\r\n4\r\n"
    );
    drop(server);

    // A record that is not a RESP array is corrupt, whatever the setting.
    let mut bad = log[..good].to_vec();
    bad.extend_from_slice(b"SET e 5\r\n");
    std::fs::write(&incr, &bad).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keel-server"))
        .args([
            "--port",
            "0",
            "--dir",
            &d,
            "--appendonly",
            "yes",
            "--save",
            "",
        ])
        .output()
        .unwrap();
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success() && all.contains("Bad file format"),
        "{all}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
