//! The wire protocol on raw sockets: split requests, inline commands,
//! pipelining, protocol errors, large values, disconnects, RESP3.

use std::time::Duration;

use crate::eqb;
use crate::harness::*;

fn wire<A: AsRef<[u8]>>(argv: &[A]) -> Vec<u8> {
    let mut out = Vec::new();
    resp::encode::command(&mut out, argv);
    out
}

#[test]
fn request_sent_byte_by_byte() {
    let s = Server::under_test();
    let mut r = s.raw();
    let value: Vec<u8> = b"v\r\n\0x".to_vec();
    let cases: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (
            wire(&[b"SET".as_slice(), b"key", &value]),
            b"+OK\r\n".to_vec(),
        ),
        (wire(&["GET", "key"]), b"$5\r\nv\r\n\0x\r\n".to_vec()),
        (
            wire(&["MGET", "key", "nokey"]),
            b"*2\r\n$5\r\nv\r\n\0x\r\n$-1\r\n".to_vec(),
        ),
        (b"PING\r\n".to_vec(), b"+PONG\r\n".to_vec()),
        (b"ECHO \"a b\"\r\n".to_vec(), b"$3\r\na b\r\n".to_vec()),
        (wire(&["INCRBY", "n", "1234567"]), b":1234567\r\n".to_vec()),
    ];
    for (req, want) in &cases {
        for &byte in req {
            r.send(&[byte]);
            std::thread::sleep(Duration::from_micros(300));
        }
        eqb!(r.read_reply(), *want, "reply to {}", escape(req));
    }
    // A whole pipeline byte by byte.
    let all: Vec<u8> = cases.iter().flat_map(|(req, _)| req.clone()).collect();
    for &byte in &all {
        r.send(&[byte]);
    }
    for (req, want) in &cases {
        let got = r.read_reply();
        if req.starts_with(b"*3\r\n$6\r\nINCRBY") {
            eqb!(got, b":2469134\r\n");
        } else {
            eqb!(got, want, "reply to {}", escape(req));
        }
    }
}

#[test]
fn request_split_at_every_boundary() {
    let s = Server::under_test();
    let mut r = s.raw();
    let req = wire(&["SET", "split-key", "some value\r\n"]);
    for cut in 1..req.len() {
        r.send(&req[..cut]);
        std::thread::sleep(Duration::from_millis(2));
        r.send(&req[cut..]);
        eqb!(r.read_reply(), b"+OK\r\n", "split at {cut}");
    }
    let req = wire(&["APPEND", "split-key", "x"]);
    let mut len = 12;
    for cut in 1..req.len() {
        r.send(&req[..cut]);
        std::thread::sleep(Duration::from_millis(2));
        r.send(&req[cut..]);
        len += 1;
        eqb!(
            r.read_reply(),
            format!(":{len}\r\n").into_bytes(),
            "split at {cut}"
        );
    }
    let inline = b"SET inline-key \"q v\"\r\n";
    for cut in 1..inline.len() {
        r.send(&inline[..cut]);
        std::thread::sleep(Duration::from_millis(2));
        r.send(&inline[cut..]);
        eqb!(r.read_reply(), b"+OK\r\n", "inline split at {cut}");
    }
    eqb!(r.cmd(&["GET", "inline-key"]), b"$3\r\nq v\r\n");
}

#[test]
fn inline_commands() {
    let s = Server::under_test();
    let mut r = s.raw();
    r.send(b"PING\r\n");
    eqb!(r.read_reply(), b"+PONG\r\n");
    r.send(b"PING\n");
    eqb!(r.read_reply(), b"+PONG\r\n");
    r.send(b"SET k \"a b\"\r\n");
    eqb!(r.read_reply(), b"+OK\r\n");
    r.send(b"GET k\r\n");
    eqb!(r.read_reply(), b"$3\r\na b\r\n");
    r.send(b"set   k2    '  x '  \r\n");
    eqb!(r.read_reply(), b"+OK\r\n");
    eqb!(r.cmd(&["GET", "k2"]), b"$4\r\n  x \r\n");
    r.send(b"SET k3 \"\\x41\\n\\t\\\"\" \r\n");
    eqb!(r.read_reply(), b"+OK\r\n");
    eqb!(r.cmd(&["GET", "k3"]), b"$4\r\nA\n\t\"\r\n");
    r.send(b"ECHO 'it\\'s'\r\n");
    eqb!(r.read_reply(), b"$4\r\nit's\r\n");
    r.send(b"ECHO \"\"\r\n");
    eqb!(r.read_reply(), b"$0\r\n\r\n");
    // Empty lines, *0 and *-1 are skipped without a reply.
    r.send(b"\r\n\r\n   \r\n*0\r\n*-1\r\nPING\r\n");
    eqb!(r.read_reply(), b"+PONG\r\n");
    // Inline and multibulk mixed in one write.
    r.send(b"INCR n\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\nINCR n\n");
    eqb!(r.read_reply(), b":1\r\n");
    eqb!(r.read_reply(), b":2\r\n");
    eqb!(r.read_reply(), b":3\r\n");
    r.send(b"GET missing\r\n");
    eqb!(r.read_reply(), b"$-1\r\n");
    r.send(b"NOSUCH a\r\n");
    eqb!(
        r.read_reply(),
        b"-ERR unknown command 'NOSUCH', with args beginning with: 'a' \r\n"
    );
    r.expect_silence(Duration::from_millis(100));
}

#[test]
fn pipeline_of_ten_thousand() {
    let s = Server::under_test();
    let mut r = s.raw();
    let n = 10_000;
    let mut all = Vec::new();
    for i in 0..n {
        if i % 2 == 0 {
            all.extend(wire(&["INCR", "counter"]));
        } else {
            all.extend(wire(&["ECHO", &i.to_string()]));
        }
    }
    // Write from another thread so a server that answers while we are
    // still writing cannot deadlock the test.
    let mut writer = r.stream.try_clone().unwrap();
    let t = std::thread::spawn(move || {
        use std::io::Write;
        writer.write_all(&all).unwrap();
    });
    for i in 0..n {
        let got = r.read_reply();
        let want = if i % 2 == 0 {
            format!(":{}\r\n", i / 2 + 1)
        } else {
            let s = i.to_string();
            format!("${}\r\n{s}\r\n", s.len())
        };
        eqb!(got, want.as_bytes(), "reply {i}");
    }
    t.join().unwrap();
    r.expect_silence(Duration::from_millis(100));
    eqb!(r.cmd(&["GET", "counter"]), b"$4\r\n5000\r\n");
}

/// Sends `input` on a fresh connection and expects exactly `replies`,
/// then the connection closed by the server.
fn expect_protocol_error(s: &Server, input: &[u8], replies: &[&[u8]]) {
    let mut r = s.raw();
    r.send_lossy(input);
    for want in replies {
        let got = r.try_read_reply();
        assert_eq!(
            got.as_deref().map_err(|e| format!("{e:?}")),
            Ok(*want),
            "input {}",
            escape(input)
        );
    }
    r.expect_eof(Duration::from_secs(5));
}

#[test]
fn protocol_errors_close_the_connection() {
    let s = Server::under_test();
    let mut other = s.raw();
    eqb!(other.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    let cases: Vec<(Vec<u8>, Vec<&[u8]>)> = vec![
        (
            b"*abc\r\n".to_vec(),
            vec![b"-ERR Protocol error: invalid multibulk length\r\n"],
        ),
        (
            b"*3000000000\r\n".to_vec(),
            vec![b"-ERR Protocol error: invalid multibulk length\r\n"],
        ),
        (
            b"*1\r\n$-2\r\n".to_vec(),
            vec![b"-ERR Protocol error: invalid bulk length\r\n"],
        ),
        (
            b"*1\r\n$abc\r\n".to_vec(),
            vec![b"-ERR Protocol error: invalid bulk length\r\n"],
        ),
        (
            b"*1\r\n$600000000\r\n".to_vec(),
            vec![b"-ERR Protocol error: invalid bulk length\r\n"],
        ),
        (
            b"*1\r\nfoo\r\n".to_vec(),
            vec![b"-ERR Protocol error: expected '$', got 'f'\r\n"],
        ),
        (
            b"*2\r\n$4\r\nECHO\r\n:1\r\n".to_vec(),
            vec![b"-ERR Protocol error: expected '$', got ':'\r\n"],
        ),
        (
            b"SET k \"abc\r\n".to_vec(),
            vec![b"-ERR Protocol error: unbalanced quotes in request\r\n"],
        ),
        (
            b"SET k 'abc\r\n".to_vec(),
            vec![b"-ERR Protocol error: unbalanced quotes in request\r\n"],
        ),
        (
            b"ECHO \"a\"b\r\n".to_vec(),
            vec![b"-ERR Protocol error: unbalanced quotes in request\r\n"],
        ),
        // Commands before the bad frame are answered first.
        (
            b"PING\r\n*1\r\n$4\r\nPING\r\n*x\r\nPING\r\n".to_vec(),
            vec![
                b"+PONG\r\n",
                b"+PONG\r\n",
                b"-ERR Protocol error: invalid multibulk length\r\n",
            ],
        ),
        (
            vec![b'a'; 70 * 1024],
            vec![b"-ERR Protocol error: too big inline request\r\n"],
        ),
    ];
    for (input, replies) in &cases {
        expect_protocol_error(&s, input, replies);
    }
    // The server kept serving the other client all along.
    eqb!(other.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
}

#[test]
fn ten_megabyte_value_round_trips() {
    let s = Server::under_test();
    let mut r = s.raw();
    let big: Vec<u8> = (0..10 * 1024 * 1024u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    eqb!(r.cmd(&[b"SET".as_slice(), b"big", &big]), b"+OK\r\n");
    eqb!(
        r.cmd(&["STRLEN", "big"]),
        format!(":{}\r\n", big.len()).into_bytes()
    );
    let got = r.cmd(&["GET", "big"]);
    let mut want = format!("${}\r\n", big.len()).into_bytes();
    want.extend_from_slice(&big);
    want.extend_from_slice(b"\r\n");
    assert!(got == want, "10 MB GET differs (got {} bytes)", got.len());
    eqb!(
        r.cmd(&["GETRANGE", "big", "5000000", "5000003"]),
        [b"$4\r\n".as_slice(), &big[5_000_000..5_000_004], b"\r\n"].concat()
    );
    eqb!(r.cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn disconnect_mid_frame_does_not_disturb_others() {
    let s = Server::under_test();
    let mut other = s.raw();
    eqb!(other.cmd(&["PING"]), b"+PONG\r\n");
    {
        let mut quitter = s.raw();
        quitter.send(b"*3\r\n$3\r\nSET\r\n$4\r\nhalf\r\n$10\r\nabc");
        std::thread::sleep(Duration::from_millis(50));
    }
    {
        // In the middle of a large bulk.
        let mut quitter = s.raw();
        quitter.send(b"*3\r\n$3\r\nSET\r\n$4\r\nhuge\r\n$20000000\r\n");
        quitter.send(&vec![b'x'; 1024 * 1024]);
        std::thread::sleep(Duration::from_millis(50));
    }
    {
        // In the middle of an inline command.
        let mut quitter = s.raw();
        quitter.send(b"SET inl");
    }
    std::thread::sleep(Duration::from_millis(100));
    eqb!(other.cmd(&["EXISTS", "half", "huge", "inl"]), b":0\r\n");
    eqb!(other.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    eqb!(other.cmd(&["GET", "k"]), b"$1\r\nv\r\n");
    let mut fresh = s.raw();
    eqb!(fresh.cmd(&["DBSIZE"]), b":1\r\n");
}

#[test]
fn resp3_wire_format() {
    let s = Server::under_test();
    let mut r = s.raw();
    eqb!(r.cmd(&["GET", "missing"]), b"$-1\r\n");
    let hello = r.cmd(&["HELLO", "3"]);
    assert!(
        hello.starts_with(b"%7\r\n$6\r\nserver\r\n$5\r\nredis\r\n"),
        "{}",
        escape(&hello)
    );
    eqb!(r.cmd(&["GET", "missing"]), b"_\r\n");
    eqb!(r.cmd(&["OBJECT", "ENCODING", "missing"]), b"_\r\n");
    eqb!(
        r.cmd(&["CONFIG", "GET", "hz"]),
        b"%1\r\n$2\r\nhz\r\n$2\r\n10\r\n"
    );
    let two = r.call(&["CONFIG", "GET", "hz", "timeout"]);
    let resp::Value::Map(mut pairs) = two else {
        panic!("CONFIG GET in RESP3 must be a map: {two:?}")
    };
    pairs.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
    assert_eq!(
        pairs,
        vec![
            (
                resp::Value::Bulk(b"hz".to_vec()),
                resp::Value::Bulk(b"10".to_vec())
            ),
            (
                resp::Value::Bulk(b"timeout".to_vec()),
                resp::Value::Bulk(b"0".to_vec())
            ),
        ]
    );
    eqb!(r.cmd(&["CONFIG", "GET", "nosuch"]), b"%0\r\n");
    eqb!(r.cmd(&["SET", "k", "v"]), b"+OK\r\n");
    eqb!(r.cmd(&["MGET", "k", "missing"]), b"*2\r\n$1\r\nv\r\n_\r\n");
    eqb!(r.cmd(&["SET", "k", "w", "NX"]), b"_\r\n");
    eqb!(r.cmd(&["RANDOMKEY"]), b"$1\r\nk\r\n");
    let info = r.cmd(&["INFO", "server"]);
    assert!(
        info.starts_with(b"="),
        "INFO is a verbatim string in RESP3: {}",
        escape(&info[..20])
    );
    assert!(
        parse(&info) != resp::Value::Null
            && info[info.iter().position(|&c| c == b'\n').unwrap() + 1..].starts_with(b"txt:"),
        "{}",
        escape(&info[..30])
    );
    let h2 = r.cmd(&["HELLO", "2"]);
    assert!(h2.starts_with(b"*14\r\n"), "{}", escape(&h2));
    eqb!(r.cmd(&["GET", "missing"]), b"$-1\r\n");
    eqb!(
        r.cmd(&["CONFIG", "GET", "hz"]),
        b"*2\r\n$2\r\nhz\r\n$2\r\n10\r\n"
    );
}
