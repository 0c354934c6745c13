//! Test harness: starting keel-server and redis-server on free ports, a
//! raw-socket client that reads exactly one reply at a time, and helpers
//! for the `redis` crate client.
//!
//! Every test starts its own server (dropped, and so terminated, at the end
//! of the test), so tests run in parallel without sharing state.

#![allow(dead_code)]

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use redis::aio::MultiplexedConnection;
use redis::Value;

/// How long a server may take to accept connections after it is spawned.
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a raw client waits for one reply.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(20);

/// A new empty directory under the temporary directory, for one server.
pub fn scratch_dir(kind: &str) -> std::path::PathBuf {
    // A counter, not a free port: two tests can be handed the same port.
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("keel-it-{kind}-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    dir
}

/// How long a test waits for a state before it fails.
pub const WAIT_DEADLINE: Duration = Duration::from_secs(60);

/// Polls `probe` until it returns `Ok`, failing with its last `Err` (the
/// state it saw) after [`WAIT_DEADLINE`].
pub fn wait_for<T>(what: &str, mut probe: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + WAIT_DEADLINE;
    loop {
        match probe() {
            Ok(v) => return v,
            Err(last) => {
                if Instant::now() > deadline {
                    panic!("waited {WAIT_DEADLINE:?} for {what}; last seen:\n{last}");
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local_addr").port()
}

/// Compiles the LD_PRELOAD shim `src` (C) into a shared object named
/// after `name` in the temporary directory (gcc is needed anyway: the
/// vendored Lua is C).
pub fn compile_shim(src: &std::path::Path, name: &str) -> std::path::PathBuf {
    let out = std::env::temp_dir().join(format!("keel-{name}-{}.so", std::process::id()));
    let status = std::process::Command::new("gcc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(src)
        .arg("-ldl")
        .status()
        .expect("gcc is needed to build the test's LD_PRELOAD shim (apt-get install -y gcc)");
    assert!(status.success(), "gcc failed on {}", src.display());
    out
}

/// Panics with a clear message unless `tool` can be run. Tests that need
/// redis-server / redis-cli / redis-benchmark fail (never skip) without
/// them: CI installs redis-server and redis-tools.
pub fn require_tool(tool: &str, package: &str) {
    let ok = Command::new(tool)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "`{tool}` is not installed or not on PATH: this test runs the real {tool}. \
         Install it with `apt-get install -y {package}` (scripts/test.sh does)."
    );
}

/// A running server process, terminated (SIGTERM, then SIGKILL after 10 s)
/// when dropped.
pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub name: &'static str,
    /// Unique scratch directory (redis-server runs in it).
    dir: Option<std::path::PathBuf>,
}

/// The Redis version keel presents in the integration tests: 7.0.15, the
/// version of the redis-server they compare with (Debian's), unless the
/// test names one (`--redis-version` in `extra`) or `KEEL_IT_REDIS_VERSION`
/// says otherwise (to run the keel-only tests in another dialect; those
/// that compare with redis-server 7.0 then fail where 7.4 differs). The
/// default dialect, 7.4.1, is checked against replies recorded from a
/// redis-server 7.4.1 (`compat::same_replies_as_redis_74_*`, `redis74.rs`).
fn dialect(extra: &[&str]) -> &'static [&'static str] {
    static PINNED: std::sync::OnceLock<[&'static str; 2]> = std::sync::OnceLock::new();
    if extra.contains(&"--redis-version") {
        return &[];
    }
    PINNED.get_or_init(|| {
        let version = std::env::var("KEEL_IT_REDIS_VERSION").unwrap_or_else(|_| "7.0.15".into());
        ["--redis-version", Box::leak(version.into_boxed_str())]
    })
}

impl Server {
    /// The keel-server built for this test run, with the debug command on
    /// and no snapshots, presenting Redis 7.0.15 (see [`dialect`]).
    pub fn keel() -> Server {
        Server::keel_with(&[])
    }

    /// keel-server with extra `--name value` options.
    /// Runs in a scratch directory of its own (what it saves stays
    /// there; a `--dir` in `extra` takes precedence).
    pub fn keel_with(extra: &[&str]) -> Server {
        let dir = scratch_dir("keel");
        let d = dir.to_string_lossy().into_owned();
        let mut args = vec![
            "--enable-debug-command",
            "yes",
            "--save",
            "",
            "--dir",
            d.as_str(),
        ];
        args.extend_from_slice(dialect(extra));
        args.extend_from_slice(extra);
        Server::start(
            "keel-server",
            env!("CARGO_BIN_EXE_keel-server"),
            &args,
            Some(dir.clone()),
            &[],
        )
    }

    /// keel-server on a given port (a node restarted at its old address),
    /// in a new scratch directory, with extra options.
    pub fn keel_at(port: u16, extra: &[&str]) -> Server {
        let dir = scratch_dir("keel");
        let d = dir.to_string_lossy().into_owned();
        let mut args = vec!["--save", "", "--dir", d.as_str()];
        args.extend_from_slice(dialect(extra));
        args.extend_from_slice(extra);
        Server::start_on(
            "keel-server",
            env!("CARGO_BIN_EXE_keel-server"),
            &args,
            Some(dir.clone()),
            &[],
            Some(port),
        )
    }

    /// keel-server with the metrics endpoint on (`--metrics-port`, on a
    /// free port of its own) and extra options; returns the metrics port.
    pub fn keel_with_metrics(extra: &[&str]) -> (Server, u16) {
        let metrics_port = free_port();
        let mp = metrics_port.to_string();
        let mut args = vec!["--metrics-port", mp.as_str()];
        args.extend_from_slice(extra);
        (Server::keel_with(&args), metrics_port)
    }

    /// Any server program with the given options, in the current directory.
    pub fn start_program(name: &'static str, program: &str, args: &[&str]) -> Server {
        Server::start(name, program, args, None, &[])
    }

    /// keel-server with only the given options (and the dialect, see
    /// [`dialect`]).
    pub fn keel_raw(args: &[&str]) -> Server {
        Server::keel_raw_env(args, &[])
    }

    /// keel-server with only the given options (and the dialect), with
    /// extra environment variables (an LD_PRELOAD shim, say).
    pub fn keel_raw_env(args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut all = args.to_vec();
        all.extend_from_slice(dialect(args));
        Server::start(
            "keel-server",
            env!("CARGO_BIN_EXE_keel-server"),
            &all,
            None,
            env,
        )
    }

    /// keel-server exactly as given: nothing added, its defaults (the
    /// default dialect included).
    pub fn keel_as_shipped(args: &[&str]) -> Server {
        Server::start(
            "keel-server",
            env!("CARGO_BIN_EXE_keel-server"),
            args,
            None,
            &[],
        )
    }

    /// The server the integration tests target: keel, or real Redis when
    /// `KEEL_IT_AGAINST_REDIS=1` (to check the tests' own expectations
    /// against Redis; keel-only checks then fail, as they should).
    pub fn under_test() -> Server {
        if std::env::var("KEEL_IT_AGAINST_REDIS").is_ok_and(|v| v == "1") {
            Server::redis()
        } else {
            Server::keel()
        }
    }

    /// A real redis-server (7.0) for the differential tests.
    pub fn redis() -> Server {
        Server::redis_with(&[])
    }

    /// A redis-server 7.4.1 when `KEEL_REDIS74` names one (CI has none:
    /// the tests that use it compare with replies recorded from it).
    pub fn redis74() -> Option<Server> {
        let program = std::env::var("KEEL_REDIS74").ok()?;
        Some(Server::redis_program(
            Box::leak(program.into_boxed_str()),
            &[],
        ))
    }

    /// A real redis-server with extra options.
    pub fn redis_with(extra: &[&str]) -> Server {
        require_tool("redis-server", "redis-server");
        Server::redis_program("redis-server", extra)
    }

    fn redis_program(program: &'static str, extra: &[&str]) -> Server {
        let dir = scratch_dir("redis");
        let d = dir.to_string_lossy().into_owned();
        let args = [
            "--save",
            "",
            "--appendonly",
            "no",
            "--enable-debug-command",
            "yes",
            "--daemonize",
            "no",
            "--bind",
            "127.0.0.1",
            "--dir",
            d.as_str(),
            "--logfile",
            "",
        ];
        let mut args = args.to_vec();
        args.extend_from_slice(extra);
        Server::start("redis-server", program, &args, Some(dir.clone()), &[])
    }

    /// keel-server started with a config file (which must come first on
    /// the command line) and extra options.
    pub fn keel_with_file(file: &str, extra: &[&str]) -> Server {
        let mut args = vec![file, "--save", ""];
        args.extend_from_slice(dialect(extra));
        args.extend_from_slice(extra);
        Server::start(
            "keel-server",
            env!("CARGO_BIN_EXE_keel-server"),
            &args,
            None,
            &[],
        )
    }

    fn start(
        name: &'static str,
        program: &str,
        args: &[&str],
        dir: Option<std::path::PathBuf>,
        env: &[(&str, &str)],
    ) -> Server {
        Server::start_on(name, program, args, dir, env, None)
    }

    /// As `start`, on `fixed_port` when given (one attempt: the caller
    /// needs that address).
    fn start_on(
        name: &'static str,
        program: &str,
        args: &[&str],
        dir: Option<std::path::PathBuf>,
        env: &[(&str, &str)],
        fixed_port: Option<u16>,
    ) -> Server {
        let mut last_err = String::new();
        let attempts = if fixed_port.is_some() { 1 } else { 5 };
        for _attempt in 0..attempts {
            let port = fixed_port.unwrap_or_else(free_port);
            let mut cmd = Command::new(program);
            // A config file must be the first argument.
            let (file, rest) = match args.first() {
                Some(f) if !f.starts_with("--") => (Some(*f), &args[1..]),
                _ => (None, args),
            };
            cmd.args(file)
                .arg("--port")
                .arg(port.to_string())
                .args(rest)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .envs(env.iter().copied());
            if let Some(d) = &dir {
                cmd.current_dir(d);
            }
            let child = match cmd.spawn() {
                Ok(c) => c,
                Err(e) => panic!("cannot spawn {program}: {e}"),
            };
            let mut server = Server {
                child: Some(child),
                port,
                name,
                dir: dir.clone(),
            };
            match server.wait_ready() {
                Ok(()) => return server,
                Err(e) => {
                    last_err = e;
                    // Drop kills it; try another port, in the same
                    // directory (which the drop must not remove).
                    server.dir = None;
                }
            }
        }
        panic!("{name} did not start: {last_err}");
    }

    /// Waits until the server accepts connections and is really our
    /// process (another test's server may have taken the port first).
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        let pid = self.pid();
        loop {
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                return Err(format!("exited at start with {status}"));
            }
            if let Ok(s) = TcpStream::connect_timeout(
                &format!("127.0.0.1:{}", self.port).parse().expect("addr"),
                Duration::from_millis(200),
            ) {
                let mut raw = Raw::from_stream(s);
                raw.timeout = Duration::from_secs(5);
                if let Ok(reply) = raw.try_cmd(&[b"INFO".as_slice(), b"server"]) {
                    // A server that wants a password cannot tell its pid
                    // yet; it answers, which is what is waited for.
                    if reply.starts_with(b"-NOAUTH") {
                        return Ok(());
                    }
                    let text = String::from_utf8_lossy(&reply).into_owned();
                    let their_pid = text
                        .lines()
                        .find_map(|l| l.strip_prefix("process_id:"))
                        .map(|p| p.trim().to_string());
                    if their_pid.as_deref() == Some(pid.to_string().as_str()) {
                        return Ok(());
                    }
                    return Err(format!(
                        "port {} answered for another process ({their_pid:?})",
                        self.port
                    ));
                }
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "not accepting connections on port {} after {START_TIMEOUT:?}",
                    self.port
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(|c| c.id()).unwrap_or(0)
    }

    /// The server process's resident set (VmRSS), in bytes.
    pub fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("read /proc/<pid>/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmRSS")
            * 1024
    }

    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A new raw connection.
    pub fn raw(&self) -> Raw {
        Raw::connect(self.port)
    }

    /// A new `redis` crate connection speaking RESP2.
    pub async fn client(&self) -> MultiplexedConnection {
        connect(self.port, false).await
    }

    /// A new `redis` crate connection that switched to RESP3 with HELLO 3.
    pub async fn client3(&self) -> MultiplexedConnection {
        connect(self.port, true).await
    }

    /// Waits up to `timeout` for the process to exit by itself.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            // SAFETY: kill(2) on the pid of a child we spawned and have not
            // reaped yet, so it cannot name another process.
            unsafe {
                libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
            }
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                match child.try_wait() {
                    Ok(Some(_)) => break,
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(10))
                    }
                    _ => {
                        let _ = child.kill();
                        let _ = child.wait();
                        break;
                    }
                }
            }
        }
        if let Some(d) = self.dir.take() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Why a raw read returned no reply.
#[derive(Debug, PartialEq, Eq)]
pub enum ReadError {
    /// The server closed the connection (read returned 0 or reset).
    Eof,
    Timeout,
    Malformed,
    Io(String),
}

/// A raw TCP client: sends bytes, reads exactly one complete reply.
pub struct Raw {
    pub stream: TcpStream,
    buf: Vec<u8>,
    pub timeout: Duration,
}

impl Raw {
    pub fn connect(port: u16) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port))
            .unwrap_or_else(|e| panic!("connect to 127.0.0.1:{port}: {e}"));
        Raw::from_stream(s)
    }

    pub fn from_stream(stream: TcpStream) -> Raw {
        stream.set_nodelay(true).expect("nodelay");
        Raw {
            stream,
            buf: Vec::new(),
            timeout: REPLY_TIMEOUT,
        }
    }

    pub fn local_addr(&self) -> String {
        self.stream.local_addr().expect("local_addr").to_string()
    }

    pub fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("write to server");
    }

    /// Sends bytes, ignoring a write error (the server may already have
    /// closed the connection; the next read tells).
    pub fn send_lossy(&mut self, bytes: &[u8]) {
        let _ = self.stream.write_all(bytes);
    }

    /// Sends a command to a connection the server may have closed, and
    /// asserts that it is closed without a reply.
    pub fn expect_closed_after<A: AsRef<[u8]>>(&mut self, argv: &[A], timeout: Duration) {
        let mut out = Vec::new();
        resp::encode::command(&mut out, argv);
        self.send_lossy(&out);
        self.expect_eof(timeout);
    }

    pub fn send_cmd<A: AsRef<[u8]>>(&mut self, argv: &[A]) {
        let mut out = Vec::new();
        resp::encode::command(&mut out, argv);
        self.send(&out);
    }

    /// Bytes already received but not yet returned as a reply.
    pub fn pending(&self) -> &[u8] {
        &self.buf
    }

    /// Reads exactly one complete reply (its raw bytes).
    pub fn try_read_reply(&mut self) -> Result<Vec<u8>, ReadError> {
        let deadline = Instant::now() + self.timeout;
        loop {
            match resp::skip_reply(&self.buf) {
                Ok(Some(n)) => return Ok(self.buf.drain(..n).collect()),
                Ok(None) => {}
                Err(_) => return Err(ReadError::Malformed),
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(ReadError::Timeout);
            }
            self.stream
                .set_read_timeout(Some(left))
                .expect("set_read_timeout");
            let mut chunk = [0u8; 64 * 1024];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Err(ReadError::Eof),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(ReadError::Timeout)
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
                    ) =>
                {
                    return Err(ReadError::Eof)
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(ReadError::Io(e.to_string())),
            }
        }
    }

    pub fn read_reply(&mut self) -> Vec<u8> {
        match self.try_read_reply() {
            Ok(r) => r,
            Err(e) => panic!(
                "no reply from server: {e:?} (received so far: {})",
                escape(&self.buf)
            ),
        }
    }

    /// Sends a command and reads its reply.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, argv: &[A]) -> Vec<u8> {
        self.send_cmd(argv);
        self.read_reply()
    }

    pub fn try_cmd<A: AsRef<[u8]>>(&mut self, argv: &[A]) -> Result<Vec<u8>, ReadError> {
        // A server killed or gone answers the write with a reset: the read
        // after it reports that, for the caller to handle.
        let mut out = Vec::new();
        resp::encode::command(&mut out, argv);
        self.send_lossy(&out);
        self.try_read_reply()
    }

    /// Sends a command and parses its reply.
    pub fn call<A: AsRef<[u8]>>(&mut self, argv: &[A]) -> resp::Value {
        parse(&self.cmd(argv))
    }

    /// Asserts that the server closes the connection (after any replies
    /// already read) within `timeout`, without sending anything more.
    pub fn expect_eof(&mut self, timeout: Duration) {
        let saved = self.timeout;
        self.timeout = timeout;
        let r = self.try_read_reply();
        self.timeout = saved;
        match r {
            Err(ReadError::Eof) => {}
            Ok(reply) => panic!(
                "expected the server to close the connection, got another reply: {}",
                escape(&reply)
            ),
            Err(e) => panic!(
                "expected the server to close the connection, got {e:?} (pending bytes: {})",
                escape(&self.buf)
            ),
        }
    }

    /// Asserts that nothing arrives within `wait`.
    pub fn expect_silence(&mut self, wait: Duration) {
        let saved = self.timeout;
        self.timeout = wait;
        let r = self.try_read_reply();
        self.timeout = saved;
        match r {
            Err(ReadError::Timeout) if self.buf.is_empty() => {}
            other => panic!(
                "expected no reply, got {other:?} (pending bytes: {})",
                escape(&self.buf)
            ),
        }
    }

    pub fn shutdown_write(&self) {
        let _ = self.stream.shutdown(Shutdown::Write);
    }
}

/// A bulk string reply as it is sent.
pub fn wire_bulk(v: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", v.len()).into_bytes();
    out.extend_from_slice(v);
    out.extend_from_slice(b"\r\n");
    out
}

/// Parses one complete reply.
pub fn parse(bytes: &[u8]) -> resp::Value {
    match resp::parse_reply(bytes) {
        Ok(Some((v, n))) if n == bytes.len() => v,
        other => panic!("cannot parse reply {}: {other:?}", escape(bytes)),
    }
}

/// Bytes as a readable string: printable ASCII as is, the rest escaped.
pub fn escape(b: &[u8]) -> String {
    let mut s = String::new();
    for &c in b {
        match c {
            b'\r' => s.push_str("\\r"),
            b'\n' => s.push_str("\\n"),
            b'\t' => s.push_str("\\t"),
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            0x20..=0x7e => s.push(c as char),
            _ => s.push_str(&format!("\\x{c:02x}")),
        }
    }
    s
}

/// Splits a command line with Redis's inline quoting rules
/// (`SET "a b" "\x00"`), as redis-cli does.
pub fn split(line: &str) -> Vec<Vec<u8>> {
    let mut buf = Vec::new();
    let mut ranges = Vec::new();
    resp::request::split_args(line.as_bytes(), &mut buf, &mut ranges)
        .unwrap_or_else(|e| panic!("bad test command line {line:?}: {e}"));
    ranges
        .iter()
        .map(|&(s, l)| buf[s..s + l].to_vec())
        .collect()
}

// ---------------------------------------------------------------------------
// The `redis` crate client.

pub async fn connect(port: u16, resp3: bool) -> MultiplexedConnection {
    let url = if resp3 {
        format!("redis://127.0.0.1:{port}/?protocol=resp3")
    } else {
        format!("redis://127.0.0.1:{port}/")
    };
    let client = redis::Client::open(url).expect("client url");
    tokio::time::timeout(
        Duration::from_secs(10),
        client.get_multiplexed_async_connection(),
    )
    .await
    .expect("connect timed out")
    .expect("connect")
}

/// A reply as the tests compare it: the value, or the full error line
/// (`ERR syntax error`, `WRONGPASS ...`).
pub type Reply = Result<Value, String>;

/// Sends `argv` and returns the typed reply or the error text.
pub async fn query<A: AsRef<[u8]>>(con: &mut MultiplexedConnection, argv: &[A]) -> Reply {
    let mut c = redis::cmd(std::str::from_utf8(argv[0].as_ref()).expect("command name is UTF-8"));
    for a in &argv[1..] {
        c.arg(a.as_ref());
    }
    let fut = c.query_async::<Value>(con);
    match tokio::time::timeout(REPLY_TIMEOUT, fut).await {
        Err(_) => Err(format!("TIMEOUT waiting for reply to {:?}", show(argv))),
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => match (e.code(), e.detail()) {
            (Some(code), Some(detail)) => Err(format!("{code} {detail}")),
            (Some(code), None) => Err(code.to_string()),
            _ => Err(format!("CLIENT-ERROR {e}")),
        },
    }
}

pub fn show<A: AsRef<[u8]>>(argv: &[A]) -> String {
    argv.iter()
        .map(|a| escape(a.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn ok() -> Reply {
    Ok(Value::Okay)
}
pub fn nil() -> Reply {
    Ok(Value::Nil)
}
pub fn int(n: i64) -> Reply {
    Ok(Value::Int(n))
}
pub fn bulk(s: impl AsRef<[u8]>) -> Reply {
    Ok(Value::BulkString(s.as_ref().to_vec()))
}
pub fn status(s: &str) -> Reply {
    Ok(Value::SimpleString(s.to_string()))
}
pub fn err(s: &str) -> Reply {
    Err(s.to_string())
}
pub fn arr(items: Vec<Value>) -> Reply {
    Ok(Value::Array(items))
}
pub fn b(s: impl AsRef<[u8]>) -> Value {
    Value::BulkString(s.as_ref().to_vec())
}

/// Text of a bulk / verbatim / simple reply.
pub fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::VerbatimString { text, .. } => text.clone(),
        Value::Okay => "OK".into(),
        other => panic!("expected a string reply, got {other:?}"),
    }
}

/// Runs a whitespace-separated command (no quoting) and asserts its reply.
#[macro_export]
macro_rules! ck {
    ($con:expr, $cmd:expr, $want:expr) => {{
        let line: &str = &$cmd;
        let argv: Vec<&[u8]> = line.split_whitespace().map(|s| s.as_bytes()).collect();
        let got = $crate::harness::query(&mut $con, &argv).await;
        let want: $crate::harness::Reply = $want;
        assert_eq!(got, want, "reply to `{}`", line);
    }};
}

/// Runs a whitespace-separated command and returns its reply.
#[macro_export]
macro_rules! q {
    ($con:expr, $cmd:expr) => {{
        let line: &str = &$cmd;
        let argv: Vec<&[u8]> = line.split_whitespace().map(|s| s.as_bytes()).collect();
        $crate::harness::query(&mut $con, &argv).await
    }};
}

/// The integer of an `Ok(Int)` reply.
pub fn as_int(r: &Reply) -> i64 {
    match r {
        Ok(Value::Int(n)) => *n,
        other => panic!("expected an integer reply, got {other:?}"),
    }
}

/// The text of `INFO section` through a raw connection.
pub fn info(raw: &mut Raw, section: &str) -> String {
    match raw.call(&["INFO", section]) {
        resp::Value::Bulk(b) => String::from_utf8(b).expect("INFO is text"),
        other => panic!("INFO {section}: {other:?}"),
    }
}

/// An integer field of `INFO section` through a raw connection.
pub fn info_u64(raw: &mut Raw, section: &str, field: &str) -> u64 {
    let text = info(raw, section);
    info_field(&text, field)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no integer {field} in INFO {section}:\n{text}"))
}

/// The field `name` of an INFO text.
pub fn info_field(info: &str, name: &str) -> Option<String> {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .map(|v| v.trim_end().to_string())
}

pub fn unix_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

pub fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_millis() as i64
}

/// Asserts two byte strings are equal, showing both escaped on failure.
#[macro_export]
macro_rules! eqb {
    ($got:expr, $want:expr $(,)?) => {{
        let got: Vec<u8> = $got.to_vec();
        let want: Vec<u8> = $want.to_vec();
        assert!(
            got == want,
            "\n  got:  {}\n  want: {}",
            $crate::harness::escape(&got),
            $crate::harness::escape(&want)
        );
    }};
    ($got:expr, $want:expr, $($msg:tt)+) => {{
        let got: Vec<u8> = $got.to_vec();
        let want: Vec<u8> = $want.to_vec();
        assert!(
            got == want,
            "{}\n  got:  {}\n  want: {}",
            format!($($msg)+),
            $crate::harness::escape(&got),
            $crate::harness::escape(&want)
        );
    }};
}

/// Waits until INFO's `blocked_clients` is `n` (a client's request has
/// reached its wait).
pub fn wait_blocked(r: &mut Raw, n: u64) {
    wait_for(&format!("blocked_clients:{n}"), || {
        let info = String::from_utf8_lossy(&r.cmd(&["INFO", "clients"])).into_owned();
        match info_field(&info, "blocked_clients") {
            Some(v) if v == n.to_string() => Ok(()),
            other => Err(format!("{other:?}")),
        }
    })
}

/// The (event, key) pairs of the next `n` keyevent messages a
/// `PSUBSCRIBE __keyevent@*` connection receives.
pub fn read_events(sub: &mut Raw, n: usize) -> Vec<(String, String)> {
    (0..n)
        .map(|_| match parse(&sub.read_reply()) {
            resp::Value::Array(v) | resp::Value::Push(v) if v.len() == 4 => {
                let s = |x: &resp::Value| match x {
                    resp::Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                    other => panic!("not a bulk: {other:?}"),
                };
                let channel = s(&v[2]);
                let event = channel.rsplit(':').next().unwrap_or_default().to_string();
                (event, s(&v[3]))
            }
            other => panic!("not a pmessage: {other:?}"),
        })
        .collect()
}

/// Runs `lines` (redis-cli quoting) with every keyspace event on, and
/// asserts the key events of database 0 they publish: `want`, in order,
/// and nothing more.
pub fn assert_keyevents(server: &Server, lines: &[&str], want: &[(&str, &str)]) {
    let mut c = server.raw();
    let mut sub = server.raw();
    c.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    sub.cmd(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    for line in lines {
        c.cmd(&split(line));
    }
    let got = read_events(&mut sub, want.len());
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(e, k)| (e.to_string(), k.to_string()))
        .collect();
    assert_eq!(got, want);
    sub.expect_silence(Duration::from_millis(100));
}

/// A command from its words (no quoting).
pub fn argv(words: &[&str]) -> Vec<Vec<u8>> {
    words.iter().map(|w| w.as_bytes().to_vec()).collect()
}

/// Sends `cmds` pipelined, 1000 per write, and returns every raw reply.
pub fn pipeline(raw: &mut Raw, cmds: &[Vec<Vec<u8>>]) -> Vec<Vec<u8>> {
    let mut replies = Vec::with_capacity(cmds.len());
    for chunk in cmds.chunks(1000) {
        let mut wire = Vec::new();
        for c in chunk {
            resp::encode::command(&mut wire, c);
        }
        raw.send(&wire);
        for _ in chunk {
            replies.push(raw.read_reply());
        }
    }
    replies
}
