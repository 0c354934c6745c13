//! The append-only log on a failing disk: an LD_PRELOAD shim
//! (`faildisk.c`) makes the log's writes fail with ENOSPC or its fsyncs
//! with EIO while a control file exists. Writes are then refused with
//! Redis's MISCONF reply, nothing acknowledged is lost, and the server
//! recovers by itself when the disk does; under `always`, a failed fsync
//! stops the server as it stops Redis.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::harness::{Raw, ReadError, Server};

/// The shim, compiled once per test run.
fn shim() -> &'static Path {
    static SHIM: OnceLock<PathBuf> = OnceLock::new();
    SHIM.get_or_init(|| {
        crate::harness::compile_shim(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/faildisk.c"),
            "faildisk",
        )
    })
}

/// A scratch directory and the control file inside it.
struct Disk {
    dir: PathBuf,
    control: PathBuf,
}

impl Disk {
    fn new(name: &str) -> Disk {
        let dir = std::env::temp_dir().join(format!("keel-it-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let control = dir.join("faildisk-control");
        Disk { dir, control }
    }

    /// 'w': the log's writes fail (ENOSPC); 'f': its fsyncs fail (EIO).
    fn fail(&self, mode: char) {
        std::fs::write(&self.control, mode.to_string()).unwrap();
    }

    fn heal(&self) {
        std::fs::remove_file(&self.control).unwrap();
    }

    fn start(&self, fsync: &str) -> Server {
        self.start_failing(fsync, ".aof")
    }

    /// Failures hit the files whose path contains `which`.
    fn start_failing(&self, fsync: &str, which: &str) -> Server {
        let dir = self.dir.to_string_lossy().into_owned();
        let log = self.dir.join("keel.log").to_string_lossy().into_owned();
        let control = self.control.to_string_lossy().into_owned();
        let shim = shim().to_string_lossy().into_owned();
        Server::keel_raw_env(
            &[
                "--dir",
                &dir,
                "--appendonly",
                "yes",
                "--appendfsync",
                fsync,
                "--save",
                "",
                "--logfile",
                &log,
            ],
            &[
                ("LD_PRELOAD", shim.as_str()),
                ("FAILDISK_CONTROL", control.as_str()),
                ("FAILDISK_MATCH", which),
            ],
        )
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(self.dir.join("keel.log")).unwrap_or_default()
    }
}

impl Drop for Disk {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn kill9(server: &mut Server) {
    // SAFETY: kill(2) on the pid of the child the harness spawned.
    unsafe {
        libc::kill(server.pid() as libc::pid_t, libc::SIGKILL);
    }
    server
        .wait_exit(Duration::from_secs(10))
        .expect("killed server exits");
}

fn persistence_field(raw: &mut Raw, field: &str) -> String {
    let text = String::from_utf8(raw.cmd(&["INFO", "persistence"])).unwrap();
    crate::harness::info_field(&text, field).unwrap_or_else(|| panic!("no {field} in INFO: {text}"))
}

/// Sends `SET key value` on a new connection every 10 ms until the reply
/// is `want`, for at most 5 s; returns every reply seen before it.
fn set_until(port: u16, key: &str, want: &[u8]) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen = Vec::new();
    loop {
        let mut raw = Raw::connect(port);
        let reply = raw.try_cmd(&["SET", key, "v"]);
        match reply {
            Ok(r) if r == want => return seen,
            Ok(r) => seen.push(r),
            Err(e) => seen.push(format!("{e:?}").into_bytes()),
        }
        assert!(
            Instant::now() < deadline,
            "SET {key} never answered {}; saw {:?}",
            crate::harness::escape(want),
            seen.iter()
                .map(|r| crate::harness::escape(r))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

const MISCONF_ENOSPC: &[u8] =
    b"-MISCONF Errors writing to the AOF file: No space left on device\r\n";
const MISCONF_EIO: &[u8] = b"-MISCONF Errors writing to the AOF file: Input/output error\r\n";

/// `everysec`, disk full: the write whose flush failed was acknowledged
/// (as in Redis, its reply was ready), later writes get MISCONF, reads go
/// on; once the disk has room the kept bytes are written and writes are
/// accepted again. After a crash every acknowledged write is there.
#[test]
fn everysec_disk_full_refuses_writes_until_it_recovers() {
    let disk = Disk::new("enospc-everysec");
    let mut server = disk.start("everysec");
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["SET", "before", "1"]), b"+OK\r\n");
    disk.fail('w');
    assert_eq!(raw.cmd(&["SET", "acked", "2"]), b"+OK\r\n");
    // The log thread may hold the file when the write above tried it
    // (then its flush fails a few ms later): a SET before that is
    // acknowledged too, and must survive like the others.
    let early = set_until(server.port, "refused", MISCONF_ENOSPC);
    let early_acked = early.iter().any(|r| r == b"+OK\r\n");
    assert!(
        early.iter().all(|r| r == b"+OK\r\n"),
        "{:?}",
        early
            .iter()
            .map(|r| crate::harness::escape(r))
            .collect::<Vec<_>>()
    );
    assert_eq!(raw.cmd(&["GET", "before"]), b"$1\r\n1\r\n");
    assert_eq!(persistence_field(&mut raw, "aof_last_write_status"), "err");
    assert_eq!(raw.cmd(&["INCR", "n"]), MISCONF_ENOSPC);
    disk.heal();
    set_until(server.port, "after", b"+OK\r\n");
    assert_eq!(persistence_field(&mut raw, "aof_last_write_status"), "ok");
    kill9(&mut server);
    drop(server);

    let server = disk.start("everysec");
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["GET", "before"]), b"$1\r\n1\r\n");
    assert_eq!(raw.cmd(&["GET", "acked"]), b"$1\r\n2\r\n");
    assert_eq!(raw.cmd(&["GET", "after"]), b"$1\r\nv\r\n");
    assert_eq!(raw.cmd(&["EXISTS", "n"]), b":0\r\n");
    let (exists, dbsize): (&[u8], &[u8]) = if early_acked {
        (b":1\r\n", b":4\r\n")
    } else {
        (b":0\r\n", b":3\r\n")
    };
    assert_eq!(raw.cmd(&["EXISTS", "refused"]), exists);
    assert_eq!(raw.cmd(&["DBSIZE"]), dbsize);
}

/// `always`, disk full: a write that cannot reach the disk is never
/// acknowledged (its connection ends without the reply), nobody reads it
/// before it is on disk, and later writes get MISCONF. When the disk has
/// room again the write lands in order and is readable.
#[test]
fn always_disk_full_withholds_replies_until_it_recovers() {
    let disk = Disk::new("enospc-always");
    let mut server = disk.start("always");
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["SET", "before", "1"]), b"+OK\r\n");
    disk.fail('w');
    assert_eq!(raw.try_cmd(&["SET", "pending", "2"]), Err(ReadError::Eof));
    // Reading it now would show a write the disk does not hold.
    let mut reader = server.raw();
    assert_eq!(reader.try_cmd(&["GET", "pending"]), Err(ReadError::Eof));
    let mut admin = server.raw();
    assert_eq!(admin.cmd(&["SET", "refused", "3"]), MISCONF_ENOSPC);
    assert_eq!(
        persistence_field(&mut admin, "aof_last_write_status"),
        "err"
    );
    // As Redis's processCommand: PING is refused too, so a health check
    // sees the server cannot persist.
    assert_eq!(admin.cmd(&["PING"]), MISCONF_ENOSPC);
    disk.heal();
    set_until(server.port, "after", b"+OK\r\n");
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["GET", "pending"]), b"$1\r\n2\r\n");
    assert_eq!(persistence_field(&mut raw, "aof_last_write_status"), "ok");
    kill9(&mut server);
    drop(server);

    let server = disk.start("always");
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["GET", "before"]), b"$1\r\n1\r\n");
    assert_eq!(raw.cmd(&["GET", "pending"]), b"$1\r\n2\r\n");
    assert_eq!(raw.cmd(&["GET", "after"]), b"$1\r\nv\r\n");
    assert_eq!(raw.cmd(&["EXISTS", "refused"]), b":0\r\n");
}

/// `always`, fsync fails: after a failed fsync the kernel may have dropped
/// the pages it could not write, so no later fsync proves them durable;
/// the server exits as Redis does, without acknowledging the write.
#[test]
fn always_fsync_error_stops_the_server() {
    let disk = Disk::new("eio-always");
    let mut server = disk.start("always");
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["SET", "before", "1"]), b"+OK\r\n");
    disk.fail('f');
    assert_eq!(raw.try_cmd(&["SET", "lost", "2"]), Err(ReadError::Eof));
    let status = server
        .wait_exit(Duration::from_secs(10))
        .expect("the server exits after a failed fsync under always");
    assert_eq!(status.code(), Some(1), "{status}");
    assert!(
        disk.log_text()
            .contains("Can't persist append only file: Input/output error. Exiting..."),
        "log: {}",
        disk.log_text()
    );
    drop(server);
    disk.heal();

    let server = disk.start("always");
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["GET", "before"]), b"$1\r\n1\r\n");
}

/// `everysec`, fsync fails: writes are refused until an fsync succeeds
/// (Redis's aof_bio_fsync_status), not merely until the next write.
#[test]
fn everysec_fsync_error_refuses_writes_until_an_fsync_succeeds() {
    let disk = Disk::new("eio-everysec");
    let server = disk.start("everysec");
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["SET", "before", "1"]), b"+OK\r\n");
    disk.fail('f');
    // The next once-a-second fsync fails.
    set_until(server.port, "refused", MISCONF_EIO);
    // Still refused 300 ms later: the writer thread's 10 ms rounds write
    // nothing new, and only a good fsync clears the error.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(raw.cmd(&["SET", "refused", "2"]), MISCONF_EIO);
    assert_eq!(persistence_field(&mut raw, "aof_last_write_status"), "err");
    assert_eq!(raw.cmd(&["GET", "before"]), b"$1\r\n1\r\n");
    disk.heal();
    set_until(server.port, "after", b"+OK\r\n");
    assert_eq!(persistence_field(&mut raw, "aof_last_write_status"), "ok");
}

fn wait_rewrite_end(raw: &mut Raw) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while persistence_field(raw, "aof_rewrite_in_progress") != "0" {
        assert!(Instant::now() < deadline, "rewrite did not end");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A rewrite on a disk that fails to write `which` (a part of a file
/// name): BGREWRITEAOF replies `start_reply`; the rewrite fails without
/// touching the live log (INFO reports it); writes go on; after a crash
/// and restart every key is there; a rewrite on a healthy disk succeeds.
fn rewrite_fails_on(name: &str, which: &str, start_reply: &[u8]) {
    let disk = Disk::new(name);
    let mut server = disk.start_failing("always", which);
    let mut raw = server.raw();
    for i in 0..2000 {
        assert_eq!(
            raw.cmd(&["SET", &format!("k{i}"), &format!("{i}")]),
            b"+OK\r\n"
        );
    }
    disk.fail('w');
    assert_eq!(raw.cmd(&["BGREWRITEAOF"]), start_reply);
    wait_rewrite_end(&mut raw);
    assert_eq!(
        persistence_field(&mut raw, "aof_last_bgrewrite_status"),
        "err"
    );
    assert_eq!(
        persistence_field(&mut raw, "aof_rewrites_consecutive_failures"),
        "1"
    );
    assert_eq!(persistence_field(&mut raw, "aof_last_write_status"), "ok");
    assert_eq!(raw.cmd(&["SET", "k-after", "x"]), b"+OK\r\n");
    disk.heal();
    kill9(&mut server);
    drop(server);

    let server = disk.start("always");
    let mut raw = server.raw();
    assert_eq!(raw.cmd(&["DBSIZE"]), b":2001\r\n");
    assert_eq!(raw.cmd(&["GET", "k1999"]), b"$4\r\n1999\r\n");
    assert_eq!(raw.cmd(&["GET", "k-after"]), b"$1\r\nx\r\n");
    assert_eq!(
        raw.cmd(&["BGREWRITEAOF"]),
        b"+Background append only file rewriting started\r\n"
    );
    wait_rewrite_end(&mut raw);
    assert_eq!(
        persistence_field(&mut raw, "aof_last_bgrewrite_status"),
        "ok"
    );
    assert_eq!(
        persistence_field(&mut raw, "aof_rewrites_consecutive_failures"),
        "0"
    );
}

/// The new base (`<name>.base.rdb.tmp`) cannot be written: the rewrite
/// starts, then fails.
#[test]
fn failed_rewrite_base_keeps_the_old_log() {
    rewrite_fails_on(
        "rewrite-base",
        "base.rdb.tmp",
        b"+Background append only file rewriting started\r\n",
    );
}

/// The new manifest (`appendonly.aof.tmp`, renamed over the manifest)
/// cannot be written: the rewrite does not start and the log stays in
/// its current file.
#[test]
fn failed_rewrite_manifest_keeps_the_old_log() {
    rewrite_fails_on(
        "rewrite-manifest",
        "aof.tmp",
        b"-ERR Can't execute an AOF background rewriting. Please check the server logs for more information.\r\n",
    );
}

/// MISCONF is a dispatch gate, as in Redis's processCommand: a write
/// queued while writes are refused dooms its MULTI, and an EXEC of writes
/// queued before the failure is refused, discarding the transaction.
#[test]
fn misconf_inside_multi_aborts_the_transaction() {
    let disk = Disk::new("enospc-multi");
    let server = disk.start("everysec");
    let mut tx = server.raw();
    assert_eq!(tx.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(tx.cmd(&["SET", "queued", "1"]), b"+QUEUED\r\n");
    disk.fail('w');
    set_until(server.port, "refused", MISCONF_ENOSPC);
    let mut want = b"-EXECABORT Transaction discarded because of: ".to_vec();
    want.extend_from_slice(&MISCONF_ENOSPC[1..]);
    assert_eq!(tx.cmd(&["EXEC"]), want);
    assert_eq!(tx.cmd(&["EXEC"]), b"-ERR EXEC without MULTI\r\n");
    // Queued while refused: the transaction is doomed; reads still queue.
    assert_eq!(tx.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(tx.cmd(&["SET", "x", "1"]), MISCONF_ENOSPC);
    assert_eq!(tx.cmd(&["GET", "x"]), b"+QUEUED\r\n");
    assert_eq!(
        tx.cmd(&["EXEC"]),
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    );
    disk.heal();
    set_until(server.port, "after", b"+OK\r\n");
    assert_eq!(tx.cmd(&["EXISTS", "queued", "x"]), b":0\r\n");
}
