//! Connection commands: PING, ECHO, QUIT, RESET, HELLO and CLIENT.

use std::time::Duration;

use redis::Value;

use crate::harness::*;
use crate::{ck, eqb, q};

#[tokio::test]
async fn ping_echo() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(c, "PING", status("PONG"));
    ck!(c, "ping hello", bulk("hello"));
    ck!(
        c,
        "PING a b",
        err("ERR wrong number of arguments for 'ping' command")
    );
    ck!(c, "ECHO hi", bulk("hi"));
    assert_eq!(query(&mut c, &["ECHO", ""]).await, bulk(""));
    ck!(
        c,
        "ECHO",
        err("ERR wrong number of arguments for 'echo' command")
    );
    ck!(
        c,
        "ECHO a b",
        err("ERR wrong number of arguments for 'echo' command")
    );
}

#[test]
fn quit_replies_ok_then_closes() {
    let s = Server::under_test();
    let mut r = s.raw();
    r.send(b"*1\r\n$4\r\nQUIT\r\n*1\r\n$4\r\nPING\r\n");
    eqb!(r.read_reply(), b"+OK\r\n");
    r.expect_eof(Duration::from_secs(5));
    // The server itself goes on.
    eqb!(s.raw().cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn reset_restores_connection_state() {
    let s = Server::under_test();
    let mut r = s.raw();
    eqb!(r.cmd(&["SELECT", "3"]), b"+OK\r\n");
    eqb!(r.cmd(&["SET", "k", "in3"]), b"+OK\r\n");
    eqb!(r.cmd(&["CLIENT", "SETNAME", "named"]), b"+OK\r\n");
    let hello = r.cmd(&["HELLO", "3"]);
    assert!(hello.starts_with(b"%7\r\n"), "{}", escape(&hello));
    eqb!(r.cmd(&["GET", "missing"]), b"_\r\n");
    eqb!(r.cmd(&["RESET"]), b"+RESET\r\n");
    // Back to RESP2, database 0, no name.
    eqb!(r.cmd(&["GET", "missing"]), b"$-1\r\n");
    eqb!(r.cmd(&["GET", "k"]), b"$-1\r\n");
    eqb!(r.cmd(&["CLIENT", "GETNAME"]), b"$-1\r\n");
    eqb!(r.cmd(&["SELECT", "3"]), b"+OK\r\n");
    eqb!(r.cmd(&["GET", "k"]), b"$3\r\nin3\r\n");
    // RESET also turns CLIENT REPLY back on.
    r.send_cmd(&["CLIENT", "REPLY", "OFF"]);
    eqb!(r.cmd(&["RESET"]), b"+RESET\r\n");
    eqb!(r.cmd(&["PING"]), b"+PONG\r\n");
    eqb!(
        r.cmd(&["RESET", "x"]),
        b"-ERR wrong number of arguments for 'reset' command\r\n"
    );
}

/// The pairs of a HELLO reply (RESP2 flat array or RESP3 map).
fn hello_fields(reply: &[u8]) -> Vec<(String, resp::Value)> {
    let v = parse(reply);
    let pairs: Vec<(resp::Value, resp::Value)> = match v {
        resp::Value::Map(p) => p,
        resp::Value::Array(items) => items
            .chunks(2)
            .map(|c| (c[0].clone(), c[1].clone()))
            .collect(),
        other => panic!("HELLO reply {other:?}"),
    };
    pairs
        .into_iter()
        .map(|(k, v)| match k {
            resp::Value::Bulk(k) => (String::from_utf8(k).unwrap(), v),
            other => panic!("HELLO key {other:?}"),
        })
        .collect()
}

#[test]
fn hello_versions_and_errors() {
    let s = Server::under_test();
    let mut r = s.raw();
    let id = match r.call(&["CLIENT", "ID"]) {
        resp::Value::Integer(n) => n,
        other => panic!("CLIENT ID {other:?}"),
    };
    // HELLO without a version answers in the current protocol (RESP2).
    let h = r.cmd(&["HELLO"]);
    assert!(h.starts_with(b"*14\r\n"), "{}", escape(&h));
    let h = r.cmd(&["HELLO", "3"]);
    assert!(h.starts_with(b"%7\r\n"), "{}", escape(&h));
    let fields = hello_fields(&h);
    let names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        names,
        ["server", "version", "proto", "id", "mode", "role", "modules"]
    );
    assert_eq!(fields[0].1, resp::Value::Bulk(b"redis".to_vec()));
    assert_eq!(fields[1].1, resp::Value::Bulk(b"7.0.15".to_vec()));
    assert_eq!(fields[2].1, resp::Value::Integer(3));
    assert_eq!(fields[3].1, resp::Value::Integer(id));
    assert_eq!(fields[4].1, resp::Value::Bulk(b"standalone".to_vec()));
    assert_eq!(fields[5].1, resp::Value::Bulk(b"master".to_vec()));
    assert_eq!(fields[6].1, resp::Value::Array(vec![]));
    // RESP3 replies from here on.
    eqb!(r.cmd(&["GET", "missing"]), b"_\r\n");
    eqb!(r.cmd(&["MGET", "a", "b"]), b"*2\r\n_\r\n_\r\n");
    eqb!(
        r.cmd(&["CONFIG", "GET", "timeout"]),
        b"%1\r\n$7\r\ntimeout\r\n$1\r\n0\r\n"
    );
    // Errors leave the protocol unchanged.
    eqb!(
        r.cmd(&["HELLO", "4"]),
        b"-NOPROTO unsupported protocol version\r\n"
    );
    eqb!(
        r.cmd(&["HELLO", "1"]),
        b"-NOPROTO unsupported protocol version\r\n"
    );
    eqb!(
        r.cmd(&["HELLO", "abc"]),
        b"-ERR Protocol version is not an integer or out of range\r\n"
    );
    eqb!(
        r.cmd(&["HELLO", "3", "FOO"]),
        b"-ERR Syntax error in HELLO option 'FOO'\r\n"
    );
    eqb!(
        r.cmd(&["HELLO", "3", "AUTH", "default"]),
        b"-ERR Syntax error in HELLO option 'AUTH'\r\n"
    );
    eqb!(
        r.cmd(&["HELLO", "2", "AUTH", "nobody", "pw"]),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    eqb!(
        r.cmd(&["HELLO", "2", "SETNAME", "a b"]),
        b"-ERR Client names cannot contain spaces, newlines or special characters.\r\n"
    );
    eqb!(r.cmd(&["GET", "missing"]), b"_\r\n");
    eqb!(r.cmd(&["CLIENT", "GETNAME"]), b"_\r\n");
    // AUTH as the default user (no password configured) and SETNAME.
    let h = r.cmd(&[
        "HELLO", "2", "AUTH", "default", "anything", "SETNAME", "conn-1",
    ]);
    assert!(h.starts_with(b"*14\r\n"), "{}", escape(&h));
    eqb!(r.cmd(&["GET", "missing"]), b"$-1\r\n");
    eqb!(r.cmd(&["CLIENT", "GETNAME"]), b"$6\r\nconn-1\r\n");
}

#[tokio::test]
async fn resp3_through_the_redis_crate() {
    let s = Server::under_test();
    let mut c = s.client3().await;
    ck!(c, "GET missing", nil());
    ck!(c, "SET k v", ok());
    ck!(c, "GET k", bulk("v"));
    let r = q!(c, "CONFIG GET timeout");
    assert_eq!(r, Ok(Value::Map(vec![(b("timeout"), b("0"))])));
    let r = q!(c, "HELLO 3");
    let Ok(Value::Map(pairs)) = &r else {
        panic!("HELLO 3 {r:?}")
    };
    assert_eq!(pairs[0], (b("server"), b("redis")));
    assert_eq!(pairs[2], (b("proto"), Value::Int(3)));
    let r = q!(c, "INFO server");
    match r {
        Ok(Value::VerbatimString { text, .. }) => {
            assert!(text.contains("redis_version:7.0.15\r\n"), "{text}")
        }
        other => panic!("INFO in RESP3 should be a verbatim string: {other:?}"),
    }
    ck!(c, "CLIENT GETNAME", nil());
    ck!(c, "OBJECT ENCODING missing", nil());
    ck!(c, "MGET k missing", arr(vec![b("v"), Value::Nil]));
}

fn client_id(r: &mut Raw) -> i64 {
    match r.call(&["CLIENT", "ID"]) {
        resp::Value::Integer(n) => n,
        other => panic!("CLIENT ID {other:?}"),
    }
}

fn text_of(v: resp::Value) -> String {
    match v {
        resp::Value::Bulk(b) | resp::Value::Verbatim(b) => String::from_utf8(b).unwrap(),
        other => panic!("expected text, got {other:?}"),
    }
}

#[tokio::test]
async fn client_id_name_list_info() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let mut r1 = s.raw();
    let mut r2 = s.raw();
    let id1 = client_id(&mut r1);
    let id2 = client_id(&mut r2);
    assert!(id1 > 0 && id2 > id1, "ids {id1} {id2}");
    assert_eq!(client_id(&mut r1), id1);

    ck!(c, "CLIENT GETNAME", nil());
    ck!(c, "CLIENT SETNAME my-conn", ok());
    ck!(c, "CLIENT GETNAME", bulk("my-conn"));
    assert_eq!(
        query(&mut c, &["CLIENT", "SETNAME", "a b"]).await,
        err("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    assert_eq!(
        query(&mut c, &["CLIENT", "SETNAME", "a\nb"]).await,
        err("ERR Client names cannot contain spaces, newlines or special characters.")
    );
    ck!(c, "CLIENT GETNAME", bulk("my-conn"));
    assert_eq!(query(&mut c, &["CLIENT", "SETNAME", ""]).await, ok());
    ck!(c, "CLIENT GETNAME", nil());
    ck!(
        c,
        "CLIENT SETNAME",
        err("ERR wrong number of arguments for 'client|setname' command")
    );

    eqb!(r1.cmd(&["CLIENT", "SETNAME", "first"]), b"+OK\r\n");
    eqb!(r2.cmd(&["SELECT", "4"]), b"+OK\r\n");
    let list = text_of(r1.call(&["CLIENT", "LIST"]));
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 3, "{list}");
    assert!(list.ends_with('\n'), "{list:?}");
    let line1 = lines
        .iter()
        .find(|l| l.starts_with(&format!("id={id1} ")))
        .unwrap_or_else(|| panic!("no id={id1} in {list}"));
    assert!(line1.contains(" name=first "), "{line1}");
    assert!(
        line1.contains(&format!(" addr={} ", r1.local_addr())),
        "{line1}"
    );
    assert!(line1.contains(&format!(" laddr={} ", s.addr())), "{line1}");
    assert!(line1.contains(" cmd=client|list "), "{line1}");
    assert!(line1.contains(" db=0 "), "{line1}");
    let line2 = lines
        .iter()
        .find(|l| l.starts_with(&format!("id={id2} ")))
        .unwrap_or_else(|| panic!("no id={id2} in {list}"));
    assert!(line2.contains(" db=4 "), "{line2}");
    assert!(line2.contains(" cmd=select "), "{line2}");
    let normal = text_of(r1.call(&["CLIENT", "LIST", "TYPE", "normal"]));
    assert_eq!(normal.lines().count(), 3, "{normal}");
    let one = text_of(r1.call(&["CLIENT", "LIST", "ID", &id2.to_string()]));
    assert_eq!(one.lines().count(), 1, "{one}");
    assert!(one.starts_with(&format!("id={id2} ")), "{one}");
    let two = text_of(r1.call(&[
        "CLIENT",
        "LIST",
        "ID",
        &id1.to_string(),
        &id2.to_string(),
        "999999",
    ]));
    assert_eq!(two.lines().count(), 2, "{two}");
    eqb!(
        r1.cmd(&["CLIENT", "LIST", "TYPE", "foo"]),
        b"-ERR Unknown client type 'foo'\r\n"
    );
    eqb!(
        r1.cmd(&["CLIENT", "LIST", "ID", "abc"]),
        b"-ERR Invalid client ID\r\n"
    );
    eqb!(r1.cmd(&["CLIENT", "LIST", "FOO"]), b"-ERR syntax error\r\n");

    let info = text_of(r2.call(&["CLIENT", "INFO"]));
    assert_eq!(info.lines().count(), 1, "{info}");
    assert!(
        info.starts_with(&format!("id={id2} addr={} ", r2.local_addr())),
        "{info}"
    );
    assert!(info.contains(" db=4 "), "{info}");
    assert!(info.contains(" cmd=client|info "), "{info}");
    assert!(info.contains(" resp=2"), "{info}");
    assert!(info.ends_with('\n'), "{info:?}");

    // CLIENT INFO shows library info set with CLIENT SETINFO, and NO-EVICT.
    eqb!(
        r2.cmd(&["CLIENT", "SETINFO", "LIB-NAME", "mylib"]),
        b"+OK\r\n"
    );
    eqb!(
        r2.cmd(&["CLIENT", "SETINFO", "lib-ver", "1.2.3"]),
        b"+OK\r\n"
    );
    eqb!(r2.cmd(&["CLIENT", "NO-EVICT", "on"]), b"+OK\r\n");
    let info = text_of(r2.call(&["CLIENT", "INFO"]));
    assert!(info.contains(" lib-name=mylib lib-ver=1.2.3"), "{info}");
    assert!(info.contains(" flags=e "), "{info}");
    eqb!(r2.cmd(&["CLIENT", "NO-EVICT", "off"]), b"+OK\r\n");
    let info = text_of(r2.call(&["CLIENT", "INFO"]));
    assert!(info.contains(" flags=N "), "{info}");
    eqb!(
        r2.cmd(&["CLIENT", "NO-EVICT", "maybe"]),
        b"-ERR syntax error\r\n"
    );
    eqb!(
        r2.cmd(&["CLIENT", "SETINFO", "FOO", "x"]),
        b"-ERR Unrecognized option 'FOO'\r\n"
    );
    eqb!(
        r2.cmd(&["CLIENT", "SETINFO", "lib-name", "a b"]),
        b"-ERR lib-name cannot contain spaces, newlines or special characters.\r\n"
    );
    eqb!(
        r2.cmd(&["CLIENT", "SETINFO", "lib-name"]),
        b"-ERR wrong number of arguments for 'client|setinfo' command\r\n"
    );
}

#[test]
fn client_kill_by_id_and_addr() {
    let s = Server::under_test();
    let mut killer = s.raw();
    let mut v1 = s.raw();
    let mut v2 = s.raw();
    let mut v3 = s.raw();
    let id1 = client_id(&mut v1);
    assert!(client_id(&mut v2) > id1);
    eqb!(v3.cmd(&["PING"]), b"+PONG\r\n");

    eqb!(
        killer.cmd(&["CLIENT", "KILL", "ID", &id1.to_string()]),
        b":1\r\n"
    );
    v1.expect_closed_after(&["PING"], Duration::from_secs(5));
    eqb!(
        killer.cmd(&["CLIENT", "KILL", "ID", &id1.to_string()]),
        b":0\r\n"
    );

    let addr2 = v2.local_addr();
    eqb!(killer.cmd(&["CLIENT", "KILL", "ADDR", &addr2]), b":1\r\n");
    v2.expect_closed_after(&["PING"], Duration::from_secs(5));

    // The old form: CLIENT KILL ip:port.
    let addr3 = v3.local_addr();
    eqb!(killer.cmd(&["CLIENT", "KILL", &addr3]), b"+OK\r\n");
    v3.expect_closed_after(&["PING"], Duration::from_secs(5));
    eqb!(
        killer.cmd(&["CLIENT", "KILL", &addr3]),
        b"-ERR No such client\r\n"
    );

    // SKIPME: by default the caller is not killed.
    let me = killer.local_addr();
    eqb!(killer.cmd(&["CLIENT", "KILL", "ADDR", &me]), b":0\r\n");
    eqb!(killer.cmd(&["CLIENT", "KILL", "ID", "999999"]), b":0\r\n");
    eqb!(
        killer.cmd(&["CLIENT", "KILL", "ID", "abc"]),
        b"-ERR client-id should be greater than 0\r\n"
    );
    eqb!(
        killer.cmd(&["CLIENT", "KILL", "FOO", "bar"]),
        b"-ERR syntax error\r\n"
    );
    // Three arguments is the old form: "ID" is taken for an address.
    eqb!(
        killer.cmd(&["CLIENT", "KILL", "ID"]),
        b"-ERR No such client\r\n"
    );
    eqb!(
        killer.cmd(&["CLIENT", "KILL", "ID", "1", "SKIPME"]),
        b"-ERR syntax error\r\n"
    );
    eqb!(
        killer.cmd(&["CLIENT", "KILL", "TYPE", "foo"]),
        b"-ERR Unknown client type 'foo'\r\n"
    );
    eqb!(killer.cmd(&["PING"]), b"+PONG\r\n");
    // Killing oneself with SKIPME no: the reply, then the connection closes.
    eqb!(
        killer.cmd(&["CLIENT", "KILL", "ADDR", &me, "SKIPME", "no"]),
        b":1\r\n"
    );
    killer.expect_eof(Duration::from_secs(5));
    eqb!(s.raw().cmd(&["PING"]), b"+PONG\r\n");
}

#[test]
fn client_reply_off_on_skip() {
    let s = Server::under_test();
    let mut r = s.raw();
    r.send_cmd(&["CLIENT", "REPLY", "OFF"]);
    r.send_cmd(&["SET", "k", "1"]);
    r.send_cmd(&["GET", "k"]);
    r.send_cmd(&["NOSUCHCMD"]);
    r.expect_silence(Duration::from_millis(200));
    eqb!(r.cmd(&["CLIENT", "REPLY", "ON"]), b"+OK\r\n");
    eqb!(r.cmd(&["GET", "k"]), b"$1\r\n1\r\n");
    // SKIP drops the reply of the next command only.
    r.send_cmd(&["CLIENT", "REPLY", "SKIP"]);
    r.send_cmd(&["INCR", "k"]);
    eqb!(r.cmd(&["INCR", "k"]), b":3\r\n");
    eqb!(r.cmd(&["CLIENT", "REPLY", "FOO"]), b"-ERR syntax error\r\n");
    eqb!(r.cmd(&["PING"]), b"+PONG\r\n");
}

#[tokio::test]
async fn client_errors_and_help() {
    let s = Server::under_test();
    let mut c = s.client().await;
    ck!(
        c,
        "CLIENT FOO",
        err("ERR unknown subcommand 'FOO'. Try CLIENT HELP.")
    );
    ck!(
        c,
        "CLIENT",
        err("ERR wrong number of arguments for 'client' command")
    );
    ck!(
        c,
        "CLIENT ID x",
        err("ERR wrong number of arguments for 'client|id' command")
    );
    ck!(
        c,
        "CLIENT REPLY",
        err("ERR wrong number of arguments for 'client|reply' command")
    );
    let help = q!(c, "CLIENT HELP");
    let Ok(Value::Array(lines)) = &help else {
        panic!("CLIENT HELP {help:?}")
    };
    assert_eq!(
        lines[0],
        Value::SimpleString(
            "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into()
        )
    );
    assert!(
        lines.contains(&Value::SimpleString("GETNAME".into())),
        "{lines:?}"
    );
}

/// Subscribe confirmations and messages are pushes: they arrive under
/// CLIENT REPLY OFF (RESP3 and RESP2 alike, as Redis 7.0), the ordinary
/// replies do not.
#[test]
fn pushes_arrive_with_replies_off() {
    let s = Server::under_test();
    let mut publisher = s.raw();
    for (proto, head) in [("3", b'>'), ("2", b'*')] {
        let mut sub = s.raw();
        sub.cmd(&["HELLO", proto]);
        sub.send_cmd(&["CLIENT", "REPLY", "OFF"]);
        sub.send_cmd(&["SUBSCRIBE", "ch"]);
        let confirm = sub.read_reply();
        assert_eq!(confirm[0], head, "{}", escape(&confirm));
        assert!(
            confirm.ends_with(b"$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n"),
            "{}",
            escape(&confirm)
        );
        sub.send_cmd(&["PING"]);
        assert_eq!(publisher.cmd(&["PUBLISH", "ch", "hello"]), b":1\r\n");
        let msg = sub.read_reply();
        assert_eq!(msg[0], head, "{}", escape(&msg));
        assert!(
            msg.ends_with(b"$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n"),
            "{}",
            escape(&msg)
        );
        sub.send_cmd(&["UNSUBSCRIBE", "ch"]);
        let confirm = sub.read_reply();
        assert!(
            confirm.ends_with(b"$11\r\nunsubscribe\r\n$2\r\nch\r\n:0\r\n"),
            "{}",
            escape(&confirm)
        );
        sub.send_cmd(&["CLIENT", "REPLY", "ON"]);
        assert_eq!(sub.read_reply(), b"+OK\r\n");
    }
}

/// CLIENT PAUSE WRITE holds writes (and PUBLISH) back until CLIENT
/// UNPAUSE, reads go on; ALL holds everything until the pause ends;
/// MONITOR's connection is never paused.
#[test]
fn client_pause_and_unpause() {
    let s = Server::under_test();
    let mut a = s.raw();
    let mut b = s.raw();
    eqb!(a.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]), b"+OK\r\n");
    eqb!(b.cmd(&["GET", "x"]), b"$-1\r\n");
    b.send_cmd(&["SET", "x", "1"]);
    b.expect_silence(Duration::from_millis(200));
    eqb!(a.cmd(&["GET", "x"]), b"$-1\r\n");
    eqb!(a.cmd(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    eqb!(b.read_reply(), b"+OK\r\n");
    eqb!(a.cmd(&["GET", "x"]), b"$1\r\n1\r\n");
    // A transaction of writes waits at EXEC; queueing a write waits too.
    eqb!(b.cmd(&["MULTI"]), b"+OK\r\n");
    eqb!(b.cmd(&["GET", "x"]), b"+QUEUED\r\n");
    eqb!(a.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]), b"+OK\r\n");
    b.send_cmd(&["INCR", "x"]);
    b.expect_silence(Duration::from_millis(200));
    eqb!(a.cmd(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    eqb!(b.read_reply(), b"+QUEUED\r\n");
    eqb!(b.cmd(&["EXEC"]), b"*2\r\n$1\r\n1\r\n:2\r\n");
    // Scripts by what they declare: no-writes runs; a script that may
    // write, or declares nothing (so may replicate), waits.
    eqb!(a.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]), b"+OK\r\n");
    eqb!(
        b.cmd(&[
            "EVAL",
            "#!lua flags=no-writes\nreturn redis.call('get','x')",
            "0"
        ]),
        b"$1\r\n2\r\n"
    );
    eqb!(
        b.cmd(&["FCALL_RO", "nosuch", "0"]),
        b"-ERR Function not found\r\n"
    );
    for script in ["#!lua\nreturn 1", "return 1"] {
        b.send_cmd(&["EVAL", script, "0"]);
        b.expect_silence(Duration::from_millis(100));
        eqb!(a.cmd(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
        eqb!(b.read_reply(), b":1\r\n");
        eqb!(a.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]), b"+OK\r\n");
    }
    eqb!(a.cmd(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    // ALL: every command waits, until the pause's end.
    eqb!(a.cmd(&["CLIENT", "PAUSE", "300", "ALL"]), b"+OK\r\n");
    eqb!(b.cmd(&["PING"]), b"+PONG\r\n");
    // Errors.
    eqb!(
        a.cmd(&["CLIENT", "PAUSE", "abc"]),
        b"-ERR timeout is not an integer or out of range\r\n"
    );
    eqb!(
        a.cmd(&["CLIENT", "PAUSE", "-1"]),
        b"-ERR timeout is negative\r\n"
    );
    eqb!(
        a.cmd(&["CLIENT", "PAUSE", "1", "some"]),
        b"-ERR CLIENT PAUSE mode must be WRITE or ALL\r\n"
    );
}

/// CLIENT NO-TOUCH (Redis 7.2): the client's commands, in scripts and
/// transactions too, leave the keys' access frequency alone; TOUCH still
/// touches; the client shows flag T. The replies are redis-server 7.4.1's
/// to the same requests (LFU with log factor 0, so every access counts).
#[test]
fn client_no_touch_leaves_access_alone() {
    let s = Server::under_test();
    let mut c = s.raw();
    let steps: &[(&[&str], &[u8])] = &[
        (
            &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
            b"+OK\r\n",
        ),
        (&["CONFIG", "SET", "lfu-log-factor", "0"], b"+OK\r\n"),
        (&["SET", "k", "v"], b"+OK\r\n"),
        (&["OBJECT", "FREQ", "k"], b":5\r\n"),
        (&["CLIENT", "NO-TOUCH", "ON"], b"+OK\r\n"),
        (&["GET", "k"], b"$1\r\nv\r\n"),
        (&["STRLEN", "k"], b":1\r\n"),
        (&["APPEND", "k", "x"], b":2\r\n"),
        (
            &["EVAL", "return redis.call('get', KEYS[1])", "1", "k"],
            b"$2\r\nvx\r\n",
        ),
        (&["MULTI"], b"+OK\r\n"),
        (&["GET", "k"], b"+QUEUED\r\n"),
        (&["EXEC"], b"*1\r\n$2\r\nvx\r\n"),
        (&["OBJECT", "FREQ", "k"], b":5\r\n"),
        (&["TOUCH", "k"], b":1\r\n"),
        (&["OBJECT", "FREQ", "k"], b":6\r\n"),
        (&["CLIENT", "NO-TOUCH", "OFF"], b"+OK\r\n"),
        (&["GET", "k"], b"$2\r\nvx\r\n"),
        (&["OBJECT", "FREQ", "k"], b":7\r\n"),
        (&["CLIENT", "NO-TOUCH", "YES"], b"-ERR syntax error\r\n"),
        (
            &["CLIENT", "NO-TOUCH"],
            b"-ERR wrong number of arguments for 'client|no-touch' command\r\n",
        ),
    ];
    for (argv, want) in steps {
        eqb!(c.cmd(argv), *want, "{argv:?}");
    }
    c.cmd(&["CLIENT", "NO-TOUCH", "ON"]);
    let info = String::from_utf8_lossy(&c.cmd(&["CLIENT", "INFO"])).into_owned();
    assert!(info.contains(" flags=T "), "{info}");
}

/// INFO's blocked_clients counts clients held by CLIENT PAUSE and by WAIT
/// beside those blocked on keys, as Redis counts every blocked client.
#[test]
fn paused_and_waiting_clients_count_as_blocked() {
    let s = Server::under_test();
    let mut a = s.raw();
    let mut b = s.raw();
    let mut c = s.raw();
    eqb!(a.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]), b"+OK\r\n");
    b.send_cmd(&["SET", "x", "1"]);
    wait_blocked(&mut a, 1);
    // WAIT for a replica that does not exist.
    c.send_cmd(&["WAIT", "1", "100000"]);
    wait_blocked(&mut a, 2);
    eqb!(a.cmd(&["CLIENT", "UNPAUSE"]), b"+OK\r\n");
    eqb!(b.read_reply(), b"+OK\r\n");
    // The WAIT is still held.
    wait_blocked(&mut a, 1);
}

/// CLIENT UNBLOCK: a blocked client answered as by its timeout, or with
/// an error; a client not blocked is not touched.
#[test]
fn client_unblock() {
    let s = Server::under_test();
    let mut a = s.raw();
    let mut c = s.raw();
    let id = String::from_utf8_lossy(&c.cmd(&["CLIENT", "ID"])[1..])
        .trim()
        .to_string();
    eqb!(a.cmd(&["CLIENT", "UNBLOCK", &id]), b":0\r\n");
    for (cmd, how, want) in [
        (&["BLPOP", "nolist", "0"][..], None, &b"*-1\r\n"[..]),
        (
            &["BLPOP", "nolist", "0"],
            Some("ERROR"),
            b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n",
        ),
        (&["BZPOPMIN", "nozset", "0"], Some("timeout"), b"*-1\r\n"),
        (
            &["BLMOVE", "a", "b", "LEFT", "LEFT", "0"],
            Some("TIMEOUT"),
            b"*-1\r\n",
        ),
    ] {
        c.send_cmd(cmd);
        wait_blocked(&mut a, 1);
        let mut argv = vec!["CLIENT", "UNBLOCK", id.as_str()];
        argv.extend(how);
        eqb!(a.cmd(&argv), b":1\r\n");
        eqb!(c.read_reply(), want);
    }
    eqb!(
        a.cmd(&["CLIENT", "UNBLOCK", "abc"]),
        b"-ERR value is not an integer or out of range\r\n"
    );
    eqb!(
        a.cmd(&["CLIENT", "UNBLOCK", &id, "foo"]),
        b"-ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR\r\n"
    );
}

/// CLIENT LIST's flags and counts for subscribers, transactions and
/// blocked clients, as redis-server reports them.
#[test]
fn client_list_state_fields_match_redis() {
    fn fields(server: &Server) -> Vec<String> {
        let mut out = Vec::new();
        let mut w = server.raw();
        let mut a = server.raw();
        let id = String::from_utf8_lossy(&a.cmd(&["CLIENT", "ID"])[1..])
            .trim()
            .to_string();
        let mut show = |w: &mut Raw| {
            let line = String::from_utf8_lossy(&w.cmd(&["CLIENT", "LIST", "ID", &id])).into_owned();
            let keep: Vec<&str> = line
                .split_whitespace()
                .filter(|f| {
                    ["flags=", "sub=", "psub=", "ssub=", "multi="]
                        .iter()
                        .any(|p| f.starts_with(p))
                })
                .collect();
            out.push(keep.join(" "));
        };
        show(&mut w);
        a.cmd(&["MULTI"]);
        a.cmd(&["GET", "x"]);
        a.cmd(&["SET", "x", "1"]);
        show(&mut w);
        a.cmd(&["EXEC"]);
        show(&mut w);
        a.cmd(&["SUBSCRIBE", "c1", "c2"]);
        a.cmd(&["PSUBSCRIBE", "p*"]);
        show(&mut w);
        a.cmd(&["RESET"]);
        a.send_cmd(&["BLPOP", "nolist", "0"]);
        wait_blocked(&mut w, 1);
        show(&mut w);
        w.cmd(&["CLIENT", "UNBLOCK", &id]);
        a.read_reply();
        show(&mut w);
        out
    }
    let want = fields(&Server::redis());
    let got = fields(&Server::under_test());
    assert_eq!(got, want);
}
