//! Hostile and careless clients, as Redis 7.0 meets them: malformed RESP,
//! negative and huge lengths, garbage bytes, a declared gigabyte that never
//! comes, ten thousand idle connections, clients that never read their
//! replies or their messages, `maxclients`, `timeout`,
//! `client-query-buffer-limit` and `client-output-buffer-limit`.
//!
//! Every test keeps a well-behaved client on the side that must go on
//! getting right answers. Where a behaviour can be seen on the wire, the
//! same scenario runs against a real redis-server 7.0 and must give the
//! same replies; where keel is deliberately better (memory for a declared
//! bulk, for a client that does not read), the bound is asserted on keel
//! only. Nothing sleeps a fixed time or asserts a duration: a test waits
//! for a state (INFO polled, a reply, the end of a stream) and the deadline
//! only stops a hung test.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use crate::eqb;
use crate::harness::*;

const KB: u64 = 1 << 10;
const MB: u64 = 1 << 20;

// ---------------------------------------------------------------------------
// Helpers.

/// A real redis-server 7.0 with extra options (in a scratch-free way: no
/// save points, no log, so it writes nothing).
fn redis_with(extra: &[&str]) -> Server {
    require_tool("redis-server", "redis-server");
    let mut args = vec![
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--bind",
        "127.0.0.1",
        "--logfile",
        "",
    ];
    args.extend_from_slice(extra);
    Server::start_program("redis-server", "redis-server", &args)
}

fn wire<A: AsRef<[u8]>>(argv: &[A]) -> Vec<u8> {
    let mut out = Vec::new();
    resp::encode::command(&mut out, argv);
    out
}

fn connected_clients(r: &mut Raw) -> u64 {
    info_u64(r, "clients", "connected_clients")
}

fn used_memory(r: &mut Raw) -> u64 {
    info_u64(r, "memory", "used_memory")
}

/// The side client's check that the server still answers right: a
/// counter only it increments, and a value only it writes.
struct Bystander {
    r: Raw,
    n: i64,
}

impl Bystander {
    fn new(s: &Server) -> Bystander {
        let mut r = s.raw();
        r.cmd(&["DEL", "bystander:n"]);
        Bystander { r, n: 0 }
    }

    fn check(&mut self) {
        self.n += 1;
        let n = self.n.to_string();
        eqb!(
            self.r.cmd(&["INCR", "bystander:n"]),
            format!(":{n}\r\n").as_bytes()
        );
        let value = format!("value-{n}");
        eqb!(self.r.cmd(&["SET", "bystander:v", &value]), b"+OK\r\n");
        eqb!(
            self.r.cmd(&["GET", "bystander:v"]),
            wire_bulk(value.as_bytes())
        );
    }
}

/// Waits until the side client is the only one (the start-up probe's
/// connection may still be on its way out), so client counts mean what a
/// test makes of them.
fn wait_alone(side: &mut Bystander) {
    wait_for("the side client to be alone", || {
        match connected_clients(&mut side.r) {
            1 => Ok(()),
            n => Err(format!("{n} clients")),
        }
    });
}

/// Raises this process's open files limit as far as it goes (the soft
/// limit up to the hard one) and returns it.
fn raise_fd_limit() -> u64 {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit on one rlimit we own.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut l), 0);
        if l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &l), 0);
        }
    }
    l.rlim_cur
}

/// Bytes waiting in a socket's receive queue.
fn queued(s: &TcpStream) -> usize {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int we own, on an open socket.
    let rc = unsafe { libc::ioctl(s.as_raw_fd(), libc::FIONREAD, &mut n) };
    assert_eq!(rc, 0, "ioctl(FIONREAD)");
    n as usize
}

/// Reads a connection until the server closes it; returns the bytes read.
fn drain_to_eof(r: &mut Raw) -> u64 {
    let mut total = r.pending().len() as u64;
    let deadline = Instant::now() + WAIT_DEADLINE;
    let mut chunk = vec![0u8; 1 << 20];
    r.stream
        .set_read_timeout(Some(Duration::from_millis(200)))
        .expect("set_read_timeout");
    loop {
        match r.stream.read(&mut chunk) {
            Ok(0) => return total,
            Ok(n) => total += n as u64,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return total,
            Err(_) => {}
        }
        assert!(
            Instant::now() < deadline,
            "the server did not close the connection ({total} bytes read)"
        );
    }
}

/// Whether the server closed `r` (reads what is queued, without waiting
/// long for more).
fn closed(r: &mut Raw) -> bool {
    let saved = r.timeout;
    r.timeout = Duration::from_millis(10);
    let got = r.try_read_reply();
    r.timeout = saved;
    match got {
        Err(ReadError::Eof) => true,
        Err(ReadError::Timeout) => false,
        other => panic!("unexpected reply on a client waiting to be closed: {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Malformed requests.

/// What a server does with a hostile input sent after a PING on a fresh
/// connection.
struct Case {
    input: Vec<u8>,
    /// Replies after the PING's +PONG.
    replies: Vec<&'static [u8]>,
    /// The server then closes the connection (else it waits for more).
    closes: bool,
}

fn case(input: &[u8], replies: Vec<&'static [u8]>, closes: bool) -> Case {
    Case {
        input: input.to_vec(),
        replies,
        closes,
    }
}

fn malformed_cases() -> Vec<Case> {
    const MBULK: &[u8] = b"-ERR Protocol error: invalid multibulk length\r\n";
    const BULK: &[u8] = b"-ERR Protocol error: invalid bulk length\r\n";
    let mut nul_then_flood = b"\x00".to_vec();
    nul_then_flood.extend(vec![b'a'; 70 * 1024]);
    vec![
        // Counts: above INT_MAX, not a number, signed, zero-padded, empty.
        case(b"*2147483648\r\n", vec![MBULK], true),
        case(b"*9223372036854775807\r\n", vec![MBULK], true),
        case(b"*99999999999999999999\r\n", vec![MBULK], true),
        case(b"*abc\r\n", vec![MBULK], true),
        case(b"*+1\r\n$4\r\nPING\r\n", vec![MBULK], true),
        case(b"*01\r\n$4\r\nPING\r\n", vec![MBULK], true),
        case(b"*\r\n", vec![MBULK], true),
        // A negative or zero count is an empty request; what follows is
        // read as the next one.
        case(
            b"*-5\r\n$4\r\nPING\r\n",
            vec![
                b"-ERR unknown command '$4', with args beginning with: \r\n",
                b"+PONG\r\n",
            ],
            false,
        ),
        case(
            b"*-1\r\n*0\r\n*1\r\n$4\r\nPING\r\n",
            vec![b"+PONG\r\n"],
            false,
        ),
        // Huge counts wait for their arguments without allocating them.
        case(b"*2147483647\r\n", vec![], false),
        case(b"*1048577\r\n$4\r\nPING\r\n", vec![], false),
        // Bulk lengths: negative, past proto-max-bulk-len (512 MB, so a
        // declared gigabyte is refused at once), not numbers.
        case(b"*1\r\n$-1\r\n", vec![BULK], true),
        case(b"*1\r\n$-0\r\n", vec![BULK], true),
        case(b"*1\r\n$536870913\r\n", vec![BULK], true),
        case(b"*1\r\n$1073741824\r\n", vec![BULK], true),
        case(b"*1\r\n$9223372036854775808\r\n", vec![BULK], true),
        case(b"*1\r\n$ 4\r\nPING\r\n", vec![BULK], true),
        case(b"*1\r\n$04\r\nPING\r\n", vec![BULK], true),
        case(b"*1\r\n$\r\n", vec![BULK], true),
        // The largest allowed bulk is awaited.
        case(b"*1\r\n$536870912\r\n", vec![], false),
        // Not a bulk where one belongs.
        case(
            b"*1\r\nfoo\r\n",
            vec![b"-ERR Protocol error: expected '$', got 'f'\r\n"],
            true,
        ),
        case(
            b"*2\r\n$4\r\nECHO\r\n:1\r\n",
            vec![b"-ERR Protocol error: expected '$', got ':'\r\n"],
            true,
        ),
        case(
            b"*1\r\n\r\n",
            vec![b"-ERR Protocol error: expected '$', got ' '\r\n"],
            true,
        ),
        // A bulk's two bytes after its data are skipped unread.
        case(b"*1\r\n$4\r\nPINGxx\r\n", vec![b"+PONG\r\n"], false),
        case(
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nvv\r\n",
            vec![b"+OK\r\n"],
            false,
        ),
        // Other RESP types are inline commands.
        case(
            b"$4\r\nPING\r\n",
            vec![
                b"-ERR unknown command '$4', with args beginning with: \r\n",
                b"+PONG\r\n",
            ],
            false,
        ),
        case(
            b":1\r\n+PING\r\n",
            vec![
                b"-ERR unknown command ':1', with args beginning with: \r\n",
                b"-ERR unknown command '+PING', with args beginning with: \r\n",
            ],
            false,
        ),
        case(
            b"\x01\x02 garbage\r\n",
            vec![b"-ERR unknown command '\x01\x02', with args beginning with: 'garbage' \r\n"],
            false,
        ),
        case(b"\r\n\n \r\nPING\r\r\n", vec![b"+PONG\r\n"], false),
        // Inline quoting.
        case(
            b"SET k \"unterminated\r\n",
            vec![b"-ERR Protocol error: unbalanced quotes in request\r\n"],
            true,
        ),
        case(
            b"ECHO \"a\"b\r\n",
            vec![b"-ERR Protocol error: unbalanced quotes in request\r\n"],
            true,
        ),
        // A NUL byte hides the end of an inline request (Redis looks for
        // it with strchr): nothing is answered until the line is too big.
        case(b"\x00\x01\xff garbage\r\nPING\r\n", vec![], false),
        case(b"ECHO a\x00b\r\nPING\r\n", vec![], false),
        case(
            &nul_then_flood,
            vec![b"-ERR Protocol error: too big inline request\r\n"],
            true,
        ),
        // Endless header lines.
        case(
            &[b"*1".as_slice(), &vec![b'1'; 70 * 1024]].concat(),
            vec![b"-ERR Protocol error: too big mbulk count string\r\n"],
            true,
        ),
        case(
            &[b"*1\r\n$1".as_slice(), &vec![b'1'; 70 * 1024]].concat(),
            vec![b"-ERR Protocol error: too big bulk count string\r\n"],
            true,
        ),
        case(
            &vec![b'a'; 70 * 1024],
            vec![b"-ERR Protocol error: too big inline request\r\n"],
            true,
        ),
        // Half a request, then nothing.
        case(b"*1\r\n$4\r\nPING", vec![], false),
    ]
}

fn check_malformed(s: &Server) {
    let mut side = Bystander::new(s);
    for c in malformed_cases() {
        let mut r = s.raw();
        // The PING's reply leaves with those of the input's first read
        // (one write per batch), so once it is read, whatever else the
        // input drew is in the same read buffer or on its way.
        r.send_lossy(&[b"PING\r\n".as_slice(), &c.input].concat());
        let got = r.try_read_reply();
        assert_eq!(
            got.as_deref().map_err(|e| format!("{e:?}")),
            Ok(b"+PONG\r\n".as_slice()),
            "{}: PING before {}",
            s.name,
            escape(&c.input)
        );
        for want in &c.replies {
            let got = r.try_read_reply();
            assert_eq!(
                got.as_deref().map_err(|e| format!("{e:?}")),
                Ok(*want),
                "{}: input {}",
                s.name,
                escape(&c.input)
            );
        }
        if c.closes {
            r.expect_eof(Duration::from_secs(20));
        } else {
            // Still open, waiting: a new request on it is not answered if
            // the input left a request unfinished, so nothing is sent.
            assert!(
                r.pending().is_empty(),
                "{}: input {} drew more: {}",
                s.name,
                escape(&c.input),
                escape(r.pending())
            );
        }
        side.check();
    }
}

#[test]
fn malformed_requests_match_redis() {
    for s in [Server::keel(), Server::redis()] {
        check_malformed(&s);
    }
}

/// A bulk declared at a gigabyte (allowed with proto-max-bulk-len 2gb)
/// costs what was actually sent: the read buffer grows with the data
/// (Redis 7.0 reserves the whole declared length at once: used_memory
/// jumps by a gigabyte per client; only address space, but counted).
#[test]
fn declared_gigabyte_bulks_allocate_only_what_arrives() {
    let s = Server::keel_with(&["--proto-max-bulk-len", "2gb"]);
    let mut side = Bystander::new(&s);
    side.check();
    let used_before = used_memory(&mut side.r);
    let rss_before = s.rss();
    let input_before = info_u64(&mut side.r, "stats", "total_net_input_bytes");
    let sent_each = 256 * KB as usize;
    let mut hostile = Vec::new();
    let mut sent = 0;
    for _ in 0..8 {
        let mut r = s.raw();
        let mut req = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1073741824\r\n".to_vec();
        req.extend(vec![b'x'; sent_each]);
        r.send(&req);
        sent += req.len() as u64;
        hostile.push(r);
    }
    // Every byte sent has been read by the server.
    wait_for("the server to read the partial bulks", || {
        let read = info_u64(&mut side.r, "stats", "total_net_input_bytes");
        if read >= input_before + sent {
            Ok(())
        } else {
            Err(format!("read {} of {sent}", read - input_before))
        }
    });
    side.check();
    let used = used_memory(&mut side.r).saturating_sub(used_before);
    let resident = s.rss().saturating_sub(rss_before);
    // 8 x 256 KB arrived; the buffers may be up to twice that.
    assert!(
        used < 16 * MB,
        "used_memory grew by {used} bytes for 2 MB of partial bulks declared at 8 GB"
    );
    assert!(
        resident < 64 * MB,
        "RSS grew by {resident} bytes for 2 MB of partial bulks declared at 8 GB"
    );
    drop(hostile);
    wait_for(
        "the hostile clients to be gone",
        || match connected_clients(&mut side.r) {
            1 => Ok(()),
            n => Err(format!("{n} clients")),
        },
    );
    side.check();
}

// ---------------------------------------------------------------------------
// Idle connections.

/// Ten thousand clients that sent one PING and went quiet hold no buffers:
/// the connection gives its read and reply buffers back while it waits
/// (Redis frees an idle client's query buffer from its cron).
#[test]
fn ten_thousand_idle_connections_cost_little() {
    const N: usize = 10_000;
    let limit = raise_fd_limit();
    assert!(
        limit >= N as u64 + 1000,
        "this test needs {} open files (ulimit -n), the hard limit is {limit}",
        N + 1000
    );
    let s = Server::keel_with(&["--maxclients", "10100"]);
    let mut side = Bystander::new(&s);
    side.check();
    let used_before = used_memory(&mut side.r);
    // Resident memory without the allocator's cache of freed pages (the
    // ten thousand first requests' buffers come and go at once).
    eqb!(side.r.cmd(&["MEMORY", "PURGE"]), b"+OK\r\n");
    let rss_before = s.rss();
    let mut idle: Vec<TcpStream> = Vec::with_capacity(N);
    for _ in 0..N {
        let c = TcpStream::connect(("127.0.0.1", s.port)).expect("connect");
        idle.push(c);
    }
    for c in &mut idle {
        c.write_all(b"PING\r\n").expect("send PING");
    }
    for c in &mut idle {
        c.set_read_timeout(Some(REPLY_TIMEOUT)).expect("timeout");
        let mut pong = [0u8; 7];
        c.read_exact(&mut pong).expect("read +PONG");
        assert_eq!(&pong, b"+PONG\r\n");
    }
    wait_for(
        "every idle client to be registered",
        || match connected_clients(&mut side.r) {
            n if n == N as u64 + 1 => Ok(()),
            n => Err(format!("{n} clients")),
        },
    );
    side.check();
    let used = used_memory(&mut side.r).saturating_sub(used_before) / N as u64;
    eqb!(side.r.cmd(&["MEMORY", "PURGE"]), b"+OK\r\n");
    let resident = s.rss().saturating_sub(rss_before) / N as u64;
    eprintln!("per idle connection: used_memory {used} bytes, RSS {resident} bytes");
    // Client record, session, task and socket registration: about 3 KB;
    // a connection that kept its two 16 KB buffers held 36 KB, 11 KB of
    // it resident (Redis 7.0: 16 KB, its reply buffer).
    assert!(
        used < 6 * KB,
        "used_memory per idle connection: {used} bytes"
    );
    assert!(
        resident < 8 * KB,
        "RSS per idle connection: {resident} bytes"
    );
    // The idle ones still answer, with their buffers back.
    for i in [0, N / 2, N - 1] {
        idle[i].write_all(b"ECHO hello\r\n").expect("send");
        let mut reply = [0u8; 11];
        idle[i].read_exact(&mut reply).expect("read");
        assert_eq!(&reply, b"$5\r\nhello\r\n");
    }
    drop(idle);
    wait_for("the idle clients to be gone", || {
        match connected_clients(&mut side.r) {
            1 => Ok(()),
            n => Err(format!("{n} clients")),
        }
    });
    side.check();
}

// ---------------------------------------------------------------------------
// Clients that do not read.

/// A pipelining client that never reads (normal class, no limits): keel
/// reads its next requests only after their predecessors' replies are
/// written, so it holds about one flush of replies, where Redis would
/// build all of them (64 MB here). The replies all arrive, right, once
/// the client reads.
#[test]
fn pipelining_client_that_does_not_read_holds_little() {
    let s = Server::keel();
    let mut side = Bystander::new(&s);
    let value: Vec<u8> = (0..MB as usize).map(|i| b'a' + (i % 26) as u8).collect();
    eqb!(side.r.cmd(&[b"SET".as_slice(), b"big", &value]), b"+OK\r\n");
    let used_before = used_memory(&mut side.r);
    let mut slow = s.raw();
    let mut pipeline = Vec::new();
    for _ in 0..64 {
        pipeline.extend(wire(&["GET", "big"]));
    }
    slow.send(&pipeline);
    // The server has started writing (and soon cannot write more: the
    // kernel's buffers take a few MB).
    wait_for(
        "the replies to fill the slow client's socket",
        || match queued(&slow.stream) {
            n if n > 0 => Ok(()),
            n => Err(format!("{n} bytes queued")),
        },
    );
    let mut peak = 0;
    for _ in 0..20 {
        side.check();
        peak = peak.max(used_memory(&mut side.r).saturating_sub(used_before));
    }
    assert!(
        peak < 24 * MB,
        "used_memory grew by {peak} bytes while 64 MB of replies were unread"
    );
    let want = wire_bulk(&value);
    for i in 0..64 {
        let got = slow.read_reply();
        assert!(got == want, "reply {i} to GET big is wrong");
    }
    side.check();
}

/// Over the hard limit of its class, a client is closed at once, with
/// nothing of the replies sent: a reply larger than the limit, or a batch
/// of replies that together are.
fn check_hard_output_limit(s: &Server) {
    let mut side = Bystander::new(s);
    eqb!(
        side.r.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 1mb 0 0"
        ]),
        b"+OK\r\n"
    );
    let big = vec![b'x'; 2 * MB as usize];
    eqb!(side.r.cmd(&[b"SET".as_slice(), b"big", &big]), b"+OK\r\n");
    let mid = vec![b'y'; 200 * KB as usize];
    eqb!(side.r.cmd(&[b"SET".as_slice(), b"mid", &mid]), b"+OK\r\n");
    let mut r = s.raw();
    r.send_cmd(&["GET", "big"]);
    assert_eq!(drain_to_eof(&mut r), 0, "{}: GET big", s.name);
    let mut r = s.raw();
    let mut ten = Vec::new();
    for _ in 0..10 {
        ten.extend(wire(&["GET", "mid"]));
    }
    r.send(&ten);
    assert_eq!(drain_to_eof(&mut r), 0, "{}: 10 x GET mid", s.name);
    // Under the limit, a client reads what it asked for.
    let mut r = s.raw();
    eqb!(r.cmd(&["GET", "mid"]), wire_bulk(&mid));
    side.check();
    eqb!(
        side.r.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 0 0 0"
        ]),
        b"+OK\r\n"
    );
    eqb!(r.cmd(&["GET", "big"]), wire_bulk(&big));
}

#[test]
fn output_hard_limit_closes_at_once_as_redis() {
    for s in [Server::keel(), Server::redis()] {
        check_hard_output_limit(&s);
    }
}

/// Over the soft limit for longer than its seconds, a client that does not
/// read is closed (it goes on sending requests, as Redis checks the limit
/// when it adds a reply).
fn check_soft_output_limit(s: &Server) {
    let mut side = Bystander::new(s);
    eqb!(
        side.r.cmd(&[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 256mb 1mb 1"
        ]),
        b"+OK\r\n"
    );
    let big = vec![b'x'; 32 * MB as usize];
    eqb!(side.r.cmd(&[b"SET".as_slice(), b"big", &big]), b"+OK\r\n");
    wait_alone(&mut side);
    let mut slow = s.raw();
    eqb!(slow.cmd(&["PING"]), b"+PONG\r\n");
    wait_for(
        "the slow client to be counted",
        || match connected_clients(&mut side.r) {
            2 => Ok(()),
            n => Err(format!("{n} clients")),
        },
    );
    slow.send_cmd(&["GET", "big"]);
    // (keel's other clients on the slow one's worker may wait for its
    // unsent reply, up to 2 s: see `net::output_budget`.)
    wait_for("the client over the soft limit to be closed", || {
        slow.send_lossy(b"PING\r\n");
        side.check();
        match connected_clients(&mut side.r) {
            1 => Ok(()),
            n => Err(format!("{n} clients")),
        }
    });
    let got = drain_to_eof(&mut slow);
    assert!(
        got < big.len() as u64,
        "{}: the closed client read the whole reply ({got} bytes)",
        s.name
    );
    side.check();
}

#[test]
fn output_soft_limit_closes_a_client_that_does_not_read_as_redis() {
    for s in [Server::keel(), Server::redis()] {
        check_soft_output_limit(&s);
    }
}

/// A subscriber flooded with messages it does not read is disconnected at
/// the pubsub class's limits (PUBLISH then counts no receiver), and the
/// server's memory stays bounded meanwhile. Messages go `burst` at a time.
fn check_flooded_subscriber(s: &Server, limits: &str, message: usize, burst: usize) {
    let mut side = Bystander::new(s);
    eqb!(
        side.r
            .cmd(&["CONFIG", "SET", "client-output-buffer-limit", limits]),
        b"+OK\r\n"
    );
    let rss_before = s.rss();
    let mut sub = s.raw();
    eqb!(
        sub.cmd(&["SUBSCRIBE", "flood"]),
        b"*3\r\n$9\r\nsubscribe\r\n$5\r\nflood\r\n:1\r\n"
    );
    let payload = vec![b'm'; message];
    let publish = wire(&[b"PUBLISH".as_slice(), b"flood", &payload]).repeat(burst);
    let mut publisher = s.raw();
    let mut published: u64 = 0;
    let mut peak = 0;
    wait_for("PUBLISH to find no subscriber", || {
        publisher.send(&publish);
        let mut gone = false;
        for _ in 0..burst {
            match publisher.read_reply().as_slice() {
                b":0\r\n" => gone = true,
                b":1\r\n" => published += 1,
                other => panic!("PUBLISH: {}", escape(other)),
            }
        }
        peak = peak.max(s.rss().saturating_sub(rss_before));
        side.check();
        if gone {
            Ok(())
        } else {
            Err(format!("{published} messages published"))
        }
    });
    let bytes = published * message as u64;
    let got = drain_to_eof(&mut sub);
    assert!(
        got < bytes,
        "{}: the subscriber got everything ({got} of {bytes} bytes)",
        s.name
    );
    assert!(
        peak < 64 * MB,
        "{}: RSS grew by {peak} bytes during the flood",
        s.name
    );
    side.check();
}

#[test]
fn flooded_subscriber_is_disconnected_as_redis() {
    for s in [Server::keel(), Server::redis()] {
        // The hard limit, with large messages.
        check_flooded_subscriber(&s, "pubsub 4mb 1mb 60", 64 * KB as usize, 16);
        // The soft limit: about 3 MB of small messages a second fill the
        // kernel's socket buffers in a few seconds, then go over 256 KB for
        // a second or two, far from the hard limit.
        check_flooded_subscriber(&s, "pubsub 32mb 256kb 1", 100, 256);
    }
}

// ---------------------------------------------------------------------------
// Query buffer.

fn check_query_buffer_limit(s: &Server) {
    let mut side = Bystander::new(s);
    eqb!(
        side.r.cmd(&["CONFIG", "SET", "client-query-buffer-limit", "1000"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'client-query-buffer-limit') - argument must be between 1048576 and 9223372036854775807 inclusive\r\n"
    );
    eqb!(
        side.r.cmd(&["CONFIG", "GET", "client-query-buffer-limit"]),
        b"*2\r\n$25\r\nclient-query-buffer-limit\r\n$10\r\n1073741824\r\n"
    );
    eqb!(
        side.r
            .cmd(&["CONFIG", "SET", "client-query-buffer-limit", "1mb"]),
        b"+OK\r\n"
    );
    // An argument bigger than the limit: closed without a reply once the
    // unread part passes it.
    let mut r = s.raw();
    let mut req = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2000000\r\n".to_vec();
    req.extend(vec![b'x'; 1_500_000]);
    r.send_lossy(&req);
    r.expect_eof(Duration::from_secs(20));
    side.check();
    // Arguments already parsed are not the query buffer: a request of
    // 1.2 MB in two arguments passes, as Redis moves them to the argv.
    let mut r = s.raw();
    let v1 = vec![b'1'; 600_000];
    let v2 = vec![b'2'; 600_000];
    eqb!(
        r.cmd(&[b"MSET".as_slice(), b"k1", &v1, b"k2", &v2]),
        b"+OK\r\n"
    );
    eqb!(r.cmd(&["STRLEN", "k2"]), b":600000\r\n");
    // A blocked client goes on reading: what it sends counts too.
    let mut blocked = s.raw();
    blocked.send_cmd(&["BLPOP", "nothing", "0"]);
    wait_for("the client to block", || {
        match info_u64(&mut side.r, "clients", "blocked_clients") {
            1 => Ok(()),
            n => Err(format!("{n} blocked")),
        }
    });
    let junk = vec![b'j'; 64 * KB as usize];
    wait_for("the blocked client to be closed", || {
        for _ in 0..8 {
            blocked.send_lossy(&junk);
        }
        side.check();
        match info_u64(&mut side.r, "clients", "blocked_clients") {
            0 => Ok(()),
            n => Err(format!("{n} blocked")),
        }
    });
    blocked.expect_eof(Duration::from_secs(20));
    side.check();
}

#[test]
fn query_buffer_limit_as_redis() {
    for s in [Server::keel(), Server::redis()] {
        check_query_buffer_limit(&s);
    }
}

// ---------------------------------------------------------------------------
// maxclients, timeout.

fn check_maxclients(s: &Server) {
    let mut side = Bystander::new(s);
    wait_alone(&mut side);
    eqb!(
        side.r.cmd(&["CONFIG", "SET", "maxclients", "3"]),
        b"+OK\r\n"
    );
    let rejected = info_u64(&mut side.r, "stats", "rejected_connections");
    let mut a = s.raw();
    eqb!(a.cmd(&["PING"]), b"+PONG\r\n");
    let mut b = s.raw();
    eqb!(b.cmd(&["PING"]), b"+PONG\r\n");
    let mut c = s.raw();
    eqb!(
        c.read_reply(),
        b"-ERR max number of clients reached\r\n",
        "{}",
        s.name
    );
    c.expect_eof(Duration::from_secs(20));
    assert_eq!(
        info_u64(&mut side.r, "stats", "rejected_connections"),
        rejected + 1
    );
    side.check();
    drop(a);
    wait_for("a place to be free", || {
        match connected_clients(&mut side.r) {
            2 => Ok(()),
            n => Err(format!("{n} clients")),
        }
    });
    let mut d = s.raw();
    eqb!(d.cmd(&["PING"]), b"+PONG\r\n");
    eqb!(b.cmd(&["PING"]), b"+PONG\r\n");
    eqb!(
        side.r.cmd(&["CONFIG", "SET", "maxclients", "0"]),
        b"-ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive\r\n"
    );
    eqb!(
        side.r.cmd(&["CONFIG", "SET", "maxclients", "10000"]),
        b"+OK\r\n"
    );
    side.check();
}

#[test]
fn maxclients_as_redis() {
    for s in [Server::keel(), Server::redis()] {
        check_maxclients(&s);
    }
}

/// A maxclients the open files limit cannot fit: both servers raise the
/// limit as far as it goes (maxclients + 32) and answer, or lower
/// maxclients at start, the same way (the number depends on the hard limit
/// this test runs under, the same for both).
#[test]
fn maxclients_beyond_the_open_files_limit_as_redis() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit we own.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) }, 0);
    // Well above the hard limit (unless that is huge), and small enough
    // that Redis's steps of 16 down from it stay few.
    let want = (l.rlim_max + 1000).min(2_000_000).to_string();
    let mut replies = Vec::new();
    for s in [
        Server::keel_with(&["--maxclients", &want]),
        redis_with(&["--maxclients", &want]),
    ] {
        let mut r = s.raw();
        let at_start = r.cmd(&["CONFIG", "GET", "maxclients"]);
        let set = r.cmd(&["CONFIG", "SET", "maxclients", &want]);
        let after = r.cmd(&["CONFIG", "GET", "maxclients"]);
        eqb!(r.cmd(&["PING"]), b"+PONG\r\n");
        replies.push((escape(&at_start), escape(&set), escape(&after)));
    }
    assert_eq!(replies[0], replies[1], "keel, then redis");
}

/// `timeout`: clients parked between requests, or half-way through one,
/// are closed once idle for longer; blocked clients and subscribers are
/// not (Redis's clientsCronHandleTimeout). CONFIG SET reaches clients
/// already waiting.
fn check_timeout(s: &Server) {
    let mut side = Bystander::new(s);
    let mut idle = s.raw();
    eqb!(idle.cmd(&["PING"]), b"+PONG\r\n");
    let mut half = s.raw();
    half.send(b"*2\r\n$4\r\nECHO\r\n$10\r\nab");
    let mut sub = s.raw();
    eqb!(
        sub.cmd(&["SUBSCRIBE", "news"]),
        b"*3\r\n$9\r\nsubscribe\r\n$4\r\nnews\r\n:1\r\n"
    );
    let mut unsubscribed = s.raw();
    unsubscribed.cmd(&["SUBSCRIBE", "news"]);
    eqb!(
        unsubscribed.cmd(&["UNSUBSCRIBE"]),
        b"*3\r\n$11\r\nunsubscribe\r\n$4\r\nnews\r\n:0\r\n"
    );
    let mut blocked = s.raw();
    blocked.send_cmd(&["BLPOP", "queue", "0"]);
    wait_for("the client to block", || {
        match info_u64(&mut side.r, "clients", "blocked_clients") {
            1 => Ok(()),
            n => Err(format!("{n} blocked")),
        }
    });
    eqb!(side.r.cmd(&["CONFIG", "SET", "timeout", "1"]), b"+OK\r\n");
    let mut open = vec![
        ("idle", idle),
        ("half", half),
        ("unsubscribed", unsubscribed),
    ];
    wait_for("the idle clients to be closed", || {
        side.check();
        open.retain_mut(|(_, r)| !closed(r));
        if open.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "still open: {:?}",
                open.iter().map(|(n, _)| *n).collect::<Vec<_>>()
            ))
        }
    });
    // More than the timeout later, the subscriber and the blocked client
    // are still served.
    eqb!(side.r.cmd(&["PUBLISH", "news", "hello"]), b":1\r\n");
    eqb!(
        sub.read_reply(),
        b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
    );
    eqb!(side.r.cmd(&["RPUSH", "queue", "job"]), b":1\r\n");
    eqb!(blocked.read_reply(), b"*2\r\n$5\r\nqueue\r\n$3\r\njob\r\n");
    eqb!(side.r.cmd(&["CONFIG", "SET", "timeout", "0"]), b"+OK\r\n");
    side.check();
}

#[test]
fn timeout_as_redis() {
    for s in [Server::keel(), Server::redis()] {
        check_timeout(&s);
    }
}

// ---------------------------------------------------------------------------
// Unauthenticated clients.

/// A client that must still authenticate may send at most 10 arguments
/// and bulks of 16 KB (Redis 7.0's processMultibulkBuffer).
#[test]
fn unauthenticated_request_limits_as_redis() {
    for s in [
        Server::keel_with(&["--requirepass", "secret"]),
        redis_with(&["--requirepass", "secret"]),
    ] {
        let mut r = s.raw();
        r.send_lossy(b"*11\r\n");
        eqb!(
            r.read_reply(),
            b"-ERR Protocol error: unauthenticated multibulk length\r\n"
        );
        r.expect_eof(Duration::from_secs(20));
        let mut r = s.raw();
        r.send_lossy(b"*1\r\n$16385\r\n");
        eqb!(
            r.read_reply(),
            b"-ERR Protocol error: unauthenticated bulk length\r\n"
        );
        r.expect_eof(Duration::from_secs(20));
        let mut r = s.raw();
        eqb!(r.cmd(&["AUTH", "secret"]), b"+OK\r\n");
        let big = vec![b'v'; 20_000];
        let mut argv: Vec<&[u8]> = vec![b"MSET"];
        for _ in 0..6 {
            argv.push(b"k");
            argv.push(&big);
        }
        eqb!(r.cmd(&argv), b"+OK\r\n");
    }
}
