//! Valkey 8.0's additions keel speaks under either Redis version (they
//! do not clash with Redis: each is an argument or subcommand Redis
//! refuses). No Valkey server runs here, so the expected replies are
//! written from Valkey 8.0.1's source (src/eval.c scriptCommand, src/db.c
//! scanGenericCommand), as docs/compatibility.md lists them.

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
