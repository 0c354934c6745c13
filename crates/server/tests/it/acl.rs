//! AUTH and ACL: passwords, users, permissions in every command path
//! (dispatch, MULTI/EXEC, scripts, functions), ACL LOG, the ACL file and
//! config `user` lines, and what changing or deleting a user does to its
//! connections. The replies that do not depend on hash-table order are
//! compared byte for byte in `compat`'s table; here, rule descriptions
//! are compared with redis-server's with the order of single commands
//! ignored (Redis lists them in the order of its randomly seeded table).

use std::time::{Duration, Instant};

use crate::eqb;
use crate::harness::*;

fn cmd(r: &mut Raw, line: &str) -> Vec<u8> {
    r.cmd(&split(line))
}

fn expect(r: &mut Raw, line: &str, want: &[u8]) {
    let got = cmd(r, line);
    assert!(
        got == want,
        "`{line}`\n  got:  {}\n  want: {}",
        escape(&got),
        escape(want)
    );
}

/// A rule description with its single-command rules sorted: `+@all`/
/// `-@all` and the categories keep their places (Redis picks them in a
/// fixed order), the `+cmd`/`-cmd` tokens after them are sorted.
/// Commands keel knows that Redis 7.0 does not (Redis 7.2 and 7.4's): a
/// category rule expands to them in keel's descriptions only, so they are
/// left out before comparing with a 7.0 server.
const NEWER_COMMANDS: &[&str] = &[
    "+hexpire",
    "+hpexpire",
    "+hexpireat",
    "+hpexpireat",
    "+httl",
    "+hpttl",
    "+hexpiretime",
    "+hpexpiretime",
    "+hpersist",
    "+waitaof",
    "+cluster|myshardid",
    "+client|no-touch",
    "+client|setinfo",
];

fn normalise_rules(rules: &str) -> String {
    let tokens: Vec<&str> = rules
        .split(' ')
        .filter(|t| !NEWER_COMMANDS.contains(t))
        .collect();
    let split_at = tokens
        .iter()
        .position(|t| !t.starts_with("+@") && !t.starts_with("-@"))
        .unwrap_or(tokens.len());
    let (cats, singles) = tokens.split_at(split_at);
    let mut singles = singles.to_vec();
    singles.sort_unstable();
    cats.iter()
        .chain(singles.iter())
        .copied()
        .collect::<Vec<_>>()
        .join(" ")
}

/// ACL LIST / GETUSER text with every rule run normalised (selectors'
/// parentheses too).
fn normalise_description(line: &str) -> String {
    // Split at selector boundaries, normalise each part's command rules.
    let mut out = String::new();
    for (i, part) in line.split('(').enumerate() {
        if i > 0 {
            out.push('(');
        }
        let (inner, tail) = match part.find(')') {
            Some(p) => (&part[..p], &part[p..]),
            None => (part, ""),
        };
        let at = inner.find(" +@").or_else(|| inner.find(" -@"));
        match at {
            Some(p) => {
                out.push_str(&inner[..=p]);
                out.push_str(&normalise_rules(&inner[p + 1..]));
            }
            None => out.push_str(inner),
        }
        out.push_str(tail);
    }
    out
}

fn getuser(r: &mut Raw, user: &str) -> Vec<(String, String)> {
    let v = r.call(&["ACL", "GETUSER", user]);
    let resp::Value::Array(items) = v else {
        panic!("GETUSER {user}: {v:?}")
    };
    items
        .chunks(2)
        .map(|kv| {
            let key = text_of(&kv[0]);
            let val = match &kv[1] {
                resp::Value::Array(a) => a
                    .iter()
                    .map(|x| match x {
                        resp::Value::Array(sel) => sel
                            .chunks(2)
                            .map(|p| {
                                let k = text_of(&p[0]);
                                let v = text_of(&p[1]);
                                if k == "commands" {
                                    format!("{k}={}", normalise_rules(&v))
                                } else {
                                    format!("{k}={v}")
                                }
                            })
                            .collect::<Vec<_>>()
                            .join(","),
                        other => text_of(other),
                    })
                    .collect::<Vec<_>>()
                    .join(" | "),
                other if key == "commands" => normalise_rules(&text_of(other)),
                other => text_of(other),
            };
            (key, val)
        })
        .collect()
}

fn text_of(v: &resp::Value) -> String {
    match v {
        resp::Value::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        resp::Value::Simple(s) => String::from_utf8_lossy(s).into_owned(),
        other => format!("{other:?}"),
    }
}

#[test]
fn rule_descriptions_match_redis() {
    let (keel, redis) = (Server::keel(), Server::redis());
    let (mut k, mut r) = (keel.raw(), redis.raw());
    let cases: &[&str] = &[
        "u1 on >p ~cache:* +get +set",
        "u2 on nopass allkeys allchannels +@all -@dangerous",
        "u3 on nopass +@all -flushall -flushdb -keys -debug -config|set",
        "u4 off -@all +@read +@write -keys +config|get +select|0 +select|1",
        "u5 on -@all +@hash +@list -lpush +client|id %R~r:* %W~w:* ~rw:* &news.*",
        "u6 on nopass ~a* +get (~b* +set &c*) (%R~x* +@read -@slow)",
        "u7 on nopass +@all -@all +@string +@bitmap -setbit +@fast",
        "u8 on nopass +@all -@write +set +del -@admin +client|kill",
        "u9 on nopass -@all +@geo +@hyperloglog +@stream -xadd +@scripting -eval",
        "u10 on nopass +@admin +@pubsub -@all +@keyspace -@read",
    ];
    for case in cases {
        let line = format!("ACL SETUSER {case}");
        let (got, want) = (cmd(&mut k, &line), cmd(&mut r, &line));
        assert_eq!(escape(&got), escape(&want), "`{line}`");
        let user = case.split(' ').next().unwrap();
        assert_eq!(
            getuser(&mut k, user),
            getuser(&mut r, user),
            "GETUSER {user}"
        );
    }
    let list = |c: &mut Raw| -> Vec<String> {
        let resp::Value::Array(items) = c.call(&["ACL", "LIST"]) else {
            panic!("ACL LIST")
        };
        items
            .iter()
            .map(|i| normalise_description(&text_of(i)))
            .collect()
    };
    assert_eq!(list(&mut k), list(&mut r));
}

#[test]
fn requirepass_gates_every_command_but_auth() {
    let s = Server::keel_with(&["--requirepass", "s3cret"]);
    let mut r = s.raw();
    expect(&mut r, "PING", b"-NOAUTH Authentication required.\r\n");
    expect(&mut r, "GET k", b"-NOAUTH Authentication required.\r\n");
    expect(
        &mut r,
        "HELLO 3",
        b"-NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time\r\n",
    );
    expect(
        &mut r,
        "AUTH wrong",
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    expect(
        &mut r,
        "AUTH default wrong",
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    expect(&mut r, "AUTH s3cret", b"+OK\r\n");
    expect(&mut r, "SET k v", b"+OK\r\n");
    expect(
        &mut r,
        "CONFIG GET requirepass",
        b"*2\r\n$11\r\nrequirepass\r\n$6\r\ns3cret\r\n",
    );

    // HELLO authenticates and switches protocol at once.
    let mut h = s.raw();
    let hello = cmd(&mut h, "HELLO 3 AUTH default s3cret");
    assert!(hello.starts_with(b"%7\r\n"), "{}", escape(&hello));
    expect(&mut h, "GET k", b"$1\r\nv\r\n");

    // RESET goes back to the default user, unauthenticated.
    expect(&mut h, "RESET", b"+RESET\r\n");
    expect(&mut h, "GET k", b"-NOAUTH Authentication required.\r\n");

    // A connection made while the server had no password keeps working
    // when one is set; new ones must authenticate; clearing it opens the
    // server again, as in Redis.
    expect(&mut r, "CONFIG SET requirepass \"\"", b"+OK\r\n");
    let mut old = s.raw();
    expect(&mut old, "PING", b"+PONG\r\n");
    expect(&mut r, "CONFIG SET requirepass other", b"+OK\r\n");
    expect(&mut old, "PING", b"+PONG\r\n");
    let mut fresh = s.raw();
    expect(&mut fresh, "PING", b"-NOAUTH Authentication required.\r\n");
    expect(
        &mut fresh,
        "AUTH s3cret",
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    expect(&mut fresh, "AUTH other", b"+OK\r\n");
}

#[test]
fn redis_cli_authenticates_as_a_user() {
    let s = Server::keel_with(&["--requirepass", "pw0"]);
    let mut r = s.raw();
    expect(&mut r, "AUTH pw0", b"+OK\r\n");
    expect(&mut r, "ACL SETUSER app on >apppw ~app:* +@all", b"+OK\r\n");
    let port = s.port.to_string();
    let out = std::process::Command::new("redis-cli")
        .args([
            "-p",
            &port,
            "--user",
            "app",
            "--pass",
            "apppw",
            "--no-auth-warning",
        ])
        .args(["SET", "app:1", "v"])
        .output()
        .expect("redis-cli");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
    let out = std::process::Command::new("redis-cli")
        .args([
            "-p",
            &port,
            "--user",
            "app",
            "--pass",
            "apppw",
            "--no-auth-warning",
        ])
        .args(["SET", "other", "v"])
        .output()
        .expect("redis-cli");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "NOPERM this user has no permissions to access one of the keys used as arguments"
    );
}

#[test]
fn permissions_hold_in_multi_scripts_and_functions() {
    let s = Server::keel();
    let mut admin = s.raw();
    expect(
        &mut admin,
        "ACL SETUSER app on >pw ~cache:* &chan:* +@all -flushall",
        b"+OK\r\n",
    );
    expect(
        &mut admin,
        "FUNCTION LOAD \"#!lua name=lib\nredis.register_function('getk', function(keys, args) return redis.call('get', keys[1]) end)\"",
        b"$3\r\nlib\r\n",
    );
    let mut c = s.raw();
    expect(&mut c, "AUTH app pw", b"+OK\r\n");
    expect(&mut c, "ACL WHOAMI", b"$3\r\napp\r\n");
    expect(&mut c, "SET cache:1 v", b"+OK\r\n");
    expect(
        &mut c,
        "GET other",
        b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n",
    );
    expect(
        &mut c,
        "FLUSHALL",
        b"-NOPERM this user has no permissions to run the 'flushall' command\r\n",
    );
    expect(
        &mut c,
        "PUBLISH other m",
        b"-NOPERM this user has no permissions to access one of the channels used as arguments\r\n",
    );
    expect(&mut c, "PUBLISH chan:1 m", b":0\r\n");

    // Refused while queueing: the transaction is doomed.
    expect(&mut c, "MULTI", b"+OK\r\n");
    expect(
        &mut c,
        "GET other",
        b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n",
    );
    expect(&mut c, "GET cache:1", b"+QUEUED\r\n");
    expect(
        &mut c,
        "EXEC",
        b"-EXECABORT Transaction discarded because of previous errors.\r\n",
    );

    // Changed between queueing and EXEC: that command fails, the rest run.
    expect(&mut c, "MULTI", b"+OK\r\n");
    expect(&mut c, "GET cache:1", b"+QUEUED\r\n");
    expect(&mut c, "INCR cache:n", b"+QUEUED\r\n");
    expect(&mut admin, "ACL SETUSER app -get", b"+OK\r\n");
    expect(
        &mut c,
        "EXEC",
        b"*2\r\n-NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: no permission to execute the command or subcommand\r\n:1\r\n",
    );
    expect(&mut admin, "ACL SETUSER app +get", b"+OK\r\n");

    // Scripts check each redis.call.
    let e = cmd(&mut c, "EVAL \"return redis.call('get','other')\" 0");
    assert!(
        e.starts_with(b"-ERR The user executing the script can't access at least one of the keys mentioned in the command arguments script:"),
        "{}",
        escape(&e)
    );
    let e = cmd(&mut c, "EVAL \"return redis.call('flushall')\" 0");
    assert!(
        e.starts_with(
            b"-ERR The user executing the script can't run this command or subcommand script:"
        ),
        "{}",
        escape(&e)
    );
    let e = cmd(
        &mut c,
        "EVAL \"return redis.pcall('publish','other','m')\" 0",
    );
    eqb!(
        e,
        b"-ERR The user executing the script can't publish to the channel mentioned in the command\r\n"
    );
    expect(
        &mut c,
        "EVAL \"return redis.call('get',KEYS[1])\" 1 cache:1",
        b"$1\r\nv\r\n",
    );
    // FCALL's own key is checked at the gate, the function's calls inside.
    expect(&mut c, "FCALL getk 1 cache:1", b"$1\r\nv\r\n");
    expect(
        &mut c,
        "FCALL getk 1 other",
        b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n",
    );
}

#[test]
fn acl_log_records_refusals() {
    let s = Server::keel();
    let mut admin = s.raw();
    expect(
        &mut admin,
        "ACL SETUSER lg on >pw ~k* +get +multi",
        b"+OK\r\n",
    );
    let mut c = s.raw();
    expect(
        &mut c,
        "AUTH lg nope",
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    expect(&mut c, "AUTH lg pw", b"+OK\r\n");
    for _ in 0..3 {
        cmd(&mut c, "GET other");
    }
    cmd(&mut c, "SET k1 v");
    expect(&mut c, "MULTI", b"+OK\r\n");
    cmd(&mut c, "GET x");
    let log = admin.call(&["ACL", "LOG"]);
    let resp::Value::Array(entries) = log else {
        panic!("{log:?}")
    };
    let fields = |e: &resp::Value| -> Vec<(String, String)> {
        let resp::Value::Array(kv) = e else {
            panic!("{e:?}")
        };
        kv.chunks(2)
            .map(|p| {
                let v = match &p[1] {
                    resp::Value::Integer(n) => n.to_string(),
                    other => text_of(other),
                };
                (text_of(&p[0]), v)
            })
            .collect()
    };
    let get = |f: &[(String, String)], k: &str| -> String {
        f.iter()
            .find(|(n, _)| n == k)
            .map(|(_, v)| v.clone())
            .unwrap()
    };
    let summary: Vec<String> = entries
        .iter()
        .map(|e| {
            let f = fields(e);
            format!(
                "{} {} {} {} {}",
                get(&f, "count"),
                get(&f, "reason"),
                get(&f, "context"),
                get(&f, "object"),
                get(&f, "username")
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            "1 key multi x lg",
            "1 command toplevel set lg",
            "3 key toplevel other lg",
            "1 auth toplevel AUTH lg",
        ]
    );
    let first = fields(&entries[0]);
    let info = get(&first, "client-info");
    assert!(info.contains(" user=lg "), "{info}");
    assert!(info.contains(" cmd=get "), "{info}");
    let age: f64 = get(&first, "age-seconds").parse().unwrap();
    assert!(age >= 0.0);
    // A count, then RESET; acllog-max-len trims.
    let two = admin.call(&["ACL", "LOG", "2"]);
    assert!(matches!(two, resp::Value::Array(ref a) if a.len() == 2));
    expect(&mut admin, "CONFIG SET acllog-max-len 1", b"+OK\r\n");
    let one = admin.call(&["ACL", "LOG"]);
    assert!(matches!(one, resp::Value::Array(ref a) if a.len() == 1));
    expect(&mut admin, "ACL LOG RESET", b"+OK\r\n");
    expect(&mut admin, "ACL LOG", b"*0\r\n");
}

/// Waits until the server reports `n` connected clients.
fn wait_clients(admin: &mut Raw, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = String::from_utf8_lossy(&cmd(admin, "INFO clients")).into_owned();
        if info_field(&info, "connected_clients").as_deref() == Some(n.to_string().as_str()) {
            return;
        }
        assert!(Instant::now() < deadline, "connected clients: {info}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn deleting_or_killing_a_user_closes_its_connections() {
    let s = Server::keel();
    let mut admin = s.raw();
    expect(
        &mut admin,
        "ACL SETUSER gone on nopass +@all ~*",
        b"+OK\r\n",
    );
    let mut a = s.raw();
    let mut b = s.raw();
    expect(&mut a, "AUTH gone x", b"+OK\r\n");
    expect(&mut b, "AUTH gone x", b"+OK\r\n");
    // The harness's readiness probe may still be closing.
    wait_clients(&mut admin, 3);
    let list = String::from_utf8_lossy(&cmd(&mut admin, "CLIENT LIST")).into_owned();
    assert_eq!(list.matches(" user=gone ").count(), 2, "{list}");
    assert_eq!(list.matches(" user=default ").count(), 1, "{list}");
    expect(&mut admin, "CLIENT KILL USER gone", b":2\r\n");
    a.expect_eof(Duration::from_secs(5));
    b.expect_eof(Duration::from_secs(5));
    wait_clients(&mut admin, 1);

    let mut c = s.raw();
    expect(&mut c, "AUTH gone x", b"+OK\r\n");
    // Deleting the user it runs as closes the connection after the reply.
    expect(&mut c, "ACL DELUSER gone", b":1\r\n");
    c.expect_eof(Duration::from_secs(5));
    let mut d = s.raw();
    expect(
        &mut d,
        "AUTH gone x",
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    // A disabled user cannot log in; its open connections stay.
    expect(&mut admin, "ACL SETUSER off1 on nopass +@all", b"+OK\r\n");
    expect(&mut d, "AUTH off1 x", b"+OK\r\n");
    expect(&mut admin, "ACL SETUSER off1 off", b"+OK\r\n");
    expect(&mut d, "PING", b"+PONG\r\n");
    expect(
        &mut s.raw(),
        "AUTH off1 x",
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
}

#[test]
fn revoking_channels_closes_subscribers() {
    let s = Server::keel();
    let mut admin = s.raw();
    expect(
        &mut admin,
        "ACL SETUSER sub on nopass +@all &news.* &sport",
        b"+OK\r\n",
    );
    let mut keep = s.raw();
    let mut lose = s.raw();
    expect(&mut keep, "AUTH sub x", b"+OK\r\n");
    expect(&mut lose, "AUTH sub x", b"+OK\r\n");
    expect(
        &mut keep,
        "SUBSCRIBE news.a",
        b"*3\r\n$9\r\nsubscribe\r\n$6\r\nnews.a\r\n:1\r\n",
    );
    expect(
        &mut lose,
        "SUBSCRIBE sport",
        b"*3\r\n$9\r\nsubscribe\r\n$5\r\nsport\r\n:1\r\n",
    );
    expect(
        &mut admin,
        "ACL SETUSER sub resetchannels &news.*",
        b"+OK\r\n",
    );
    lose.expect_eof(Duration::from_secs(5));
    expect(&mut admin, "PUBLISH news.a hi", b":1\r\n");
    eqb!(
        keep.read_reply(),
        b"*3\r\n$7\r\nmessage\r\n$6\r\nnews.a\r\n$2\r\nhi\r\n"
    );
}

#[test]
fn aclfile_save_and_load_round_trip() {
    let dir = std::env::temp_dir().join(format!("keel-acl-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("users.acl");
    std::fs::write(&file, "user default on nopass ~* &* +@all\nuser ops on #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b ~ops:* resetchannels -@all +get\n").unwrap();
    let path = file.to_string_lossy().into_owned();
    let s = Server::keel_with(&["--aclfile", &path]);
    let mut admin = s.raw();
    let mut ops = s.raw();
    // The hash is SHA-256("secret").
    expect(&mut ops, "AUTH ops secret", b"+OK\r\n");
    expect(&mut ops, "GET ops:1", b"$-1\r\n");
    expect(&mut admin, "ACL SETUSER new on >pw2 ~n:* +set", b"+OK\r\n");
    expect(&mut admin, "ACL SAVE", b"+OK\r\n");
    let saved = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        saved,
        "user default on nopass ~* &* +@all\n\
         user new on #93915a0a4bf8f634cb1856494dd4304472ad46b9827f541f76b6761c49cc55b0 ~n:* resetchannels -@all +set\n\
         user ops on #2bb80d537b1da3e38bd30361aa855686bde0eacd7162fef6a25fe97bf527a25b ~ops:* resetchannels -@all +get\n"
    );
    // A broken file changes nothing.
    std::fs::write(
        &file,
        "user default on nopass ~* &* +@all\nuser x on +nosuchcmd\nbogus line\n",
    )
    .unwrap();
    let e = cmd(&mut admin, "ACL LOAD");
    let want = format!("-ERR {path}:2: Unknown command or category name in ACL. {path}:3 should start with user keyword followed by the username. WARNING: ACL errors detected, no change to the previously active ACL rules was performed\r\n");
    eqb!(e, want.as_bytes());
    expect(&mut ops, "GET ops:1", b"$-1\r\n");
    // Loading a file without `ops` closes its connections.
    std::fs::write(&file, saved.replace("user ops", "user ops2")).unwrap();
    expect(&mut admin, "ACL LOAD", b"+OK\r\n");
    ops.expect_eof(Duration::from_secs(5));
    expect(
        &mut admin,
        "ACL USERS",
        b"*3\r\n$7\r\ndefault\r\n$3\r\nnew\r\n$4\r\nops2\r\n",
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const USERS: &[&str] = &[
    "--user",
    "default",
    "off",
    "--user",
    "alice",
    "on",
    ">wonderland",
    "~a:*",
    "+@read",
    "+@write",
    "+acl|list",
    "(~b:* +get)",
];

#[test]
fn config_user_lines() {
    // `--user ...` is the config line `user ...`, as with redis-server.
    let s = Server::keel_with(USERS);
    let mut c = s.raw();
    expect(&mut c, "PING", b"-NOAUTH Authentication required.\r\n");
    expect(
        &mut c,
        "AUTH default x",
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n",
    );
    expect(&mut c, "AUTH alice wonderland", b"+OK\r\n");
    expect(&mut c, "SET a:1 v", b"+OK\r\n");
    expect(&mut c, "GET b:1", b"$-1\r\n");
    expect(
        &mut c,
        "SET b:1 v",
        b"-NOPERM this user has no permissions to access one of the keys used as arguments\r\n",
    );
    // The users as redis-server builds them from the same lines.
    let redis = Server::start_program(
        "redis-server",
        "redis-server",
        &[USERS, &["--save", ""]].concat(),
    );
    let mut r = redis.raw();
    expect(&mut r, "AUTH alice wonderland", b"+OK\r\n");
    assert_eq!(
        escape(&cmd(&mut c, "ACL LIST")),
        escape(&cmd(&mut r, "ACL LIST"))
    );
}

/// A connection to the server from the local IPv4 address `from`.
fn connect_from(s: &Server, from: &str) -> Raw {
    use socket2::{Domain, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    let local: std::net::SocketAddr = format!("{from}:0").parse().unwrap();
    socket.bind(&local.into()).unwrap();
    let to: std::net::SocketAddr = format!("127.0.0.1:{}", s.port).parse().unwrap();
    socket.connect(&to.into()).unwrap();
    Raw::from_stream(socket.into())
}

#[test]
fn protected_mode_refuses_non_loopback_clients_without_a_password() {
    let (keel, redis) = (Server::keel(), Server::redis());
    // 127.0.0.2 is not the loopback address Redis lets in (127.0.0.1, ::1).
    let denied = {
        let mut r = connect_from(&redis, "127.0.0.2");
        r.cmd(&["PING"])
    };
    assert!(denied.starts_with(b"-DENIED Redis is running in protected mode"));
    let mut k = connect_from(&keel, "127.0.0.2");
    eqb!(k.cmd(&["PING"]), &denied);
    k.expect_eof(Duration::from_secs(5));
    let mut local = keel.raw();
    expect(&mut local, "PING", b"+PONG\r\n");
    // A password for the default user lifts it: AUTH is asked for instead.
    expect(&mut local, "CONFIG SET requirepass pw", b"+OK\r\n");
    let mut k = connect_from(&keel, "127.0.0.2");
    expect(&mut k, "PING", b"-NOAUTH Authentication required.\r\n");
    expect(&mut k, "AUTH pw", b"+OK\r\n");
    expect(&mut k, "PING", b"+PONG\r\n");
    // So does turning it off.
    expect(&mut local, "CONFIG SET requirepass \"\"", b"+OK\r\n");
    expect(&mut local, "CONFIG SET protected-mode no", b"+OK\r\n");
    let mut k = connect_from(&keel, "127.0.0.2");
    expect(&mut k, "PING", b"+PONG\r\n");
    let info = String::from_utf8_lossy(&cmd(&mut local, "INFO stats")).into_owned();
    assert_eq!(
        info_field(&info, "rejected_connections").as_deref(),
        Some("1")
    );
}

#[test]
fn config_rewrite_writes_the_users() {
    let dir =
        std::env::temp_dir().join(format!("keel-aclrw-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = dir.join("keel.conf");
    std::fs::write(&conf, "# users\nuser alice on >pw ~a* +get\nhz 10\n").unwrap();
    let conf_s = conf.to_string_lossy().into_owned();
    let s = Server::keel_with_file(&conf_s, &[]);
    let mut c = s.raw();
    expect(&mut c, "ACL SETUSER bob on >x ~b* +set", b"+OK\r\n");
    expect(&mut c, "CONFIG REWRITE", b"+OK\r\n");
    let text = std::fs::read_to_string(&conf).unwrap();
    // alice's line is rewritten in place; the other users follow.
    let users: Vec<&str> = text.lines().filter(|l| l.starts_with("user ")).collect();
    assert_eq!(
        users,
        [
            "user alice on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~a* resetchannels -@all +get",
            "user bob on #2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881 ~b* resetchannels -@all +set",
            "user default on nopass ~* &* +@all",
        ]
    );
    assert!(text.starts_with("# users\nuser alice "), "{text}");
    // A restart reads them back.
    drop(s);
    let s = Server::keel_with_file(&conf_s, &[]);
    let mut c = s.raw();
    expect(&mut c, "AUTH bob x", b"+OK\r\n");
    expect(&mut c, "SET b1 v", b"+OK\r\n");
    let _ = std::fs::remove_dir_all(&dir);
}
