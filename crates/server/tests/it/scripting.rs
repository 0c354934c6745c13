//! Lua scripting and functions: conversions both ways, error texts, the
//! sandbox, the script cache, FUNCTION/FCALL, the bundled libraries,
//! SCRIPT KILL of a busy script, keys not declared in KEYS, and a
//! byte-for-byte comparison with redis-server 7.0.

use std::time::{Duration, Instant};

use redis::Value;

use crate::harness::*;

/// Runs `argv` (arguments may contain spaces) and returns the reply.
async fn run(c: &mut redis::aio::MultiplexedConnection, argv: &[&str]) -> Reply {
    query(c, argv).await
}

fn ints(v: &[i64]) -> Reply {
    arr(v.iter().map(|&n| Value::Int(n)).collect())
}

#[tokio::test]
async fn lua_values_become_replies() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let cases: Vec<(&str, Reply)> = vec![
        ("return 1", int(1)),
        ("return 3.99", int(3)),
        ("return -3.99", int(-3)),
        ("return 'hello'", bulk("hello")),
        ("return true", int(1)),
        ("return false", nil()),
        ("return nil", nil()),
        (
            "return {1, 2, {3, 'x'}, nil, 4}",
            arr(vec![
                Value::Int(1),
                Value::Int(2),
                Value::Array(vec![Value::Int(3), b("x")]),
            ]),
        ),
        ("return {ok='fine'}", status("fine")),
        ("return redis.status_reply('x')", status("x")),
        ("return {err='MY boom'}", err("MY boom")),
        ("return redis.error_reply('MY err')", err("MY err")),
        ("return redis.error_reply('plain')", err("ERR plain")),
        ("return {double=3.5}", bulk("3.5")),
        ("return {map={a=1}}", arr(vec![b("a"), Value::Int(1)])),
        ("return {set={a=true}}", arr(vec![b("a")])),
        ("return {big_number='123'}", bulk("123")),
        ("return 1e30", int(i64::MIN)),
    ];
    for (script, want) in cases {
        assert_eq!(run(&mut c, &["EVAL", script, "0"]).await, want, "{script}");
    }
}

#[tokio::test]
async fn lua_values_become_resp3_replies() {
    let s = Server::under_test();
    let mut c = s.client3().await;
    assert_eq!(
        run(&mut c, &["EVAL", "return {double=3.5}", "0"]).await,
        Ok(Value::Double(3.5))
    );
    assert_eq!(
        run(&mut c, &["EVAL", "return {map={a=1}}", "0"]).await,
        Ok(Value::Map(vec![(b("a"), Value::Int(1))]))
    );
    assert_eq!(
        run(&mut c, &["EVAL", "redis.setresp(3); return true", "0"]).await,
        Ok(Value::Boolean(true))
    );
    assert_eq!(
        run(&mut c, &["EVAL", "redis.setresp(3); return false", "0"]).await,
        Ok(Value::Boolean(false))
    );
    // Without setresp(3), booleans follow Redis 6 rules.
    assert_eq!(run(&mut c, &["EVAL", "return true", "0"]).await, int(1));
    // Commands called from the script reply in RESP2 unless setresp(3).
    run(&mut c, &["HSET", "h", "a", "1"]).await.unwrap();
    assert_eq!(
        run(
            &mut c,
            &["EVAL", "return type(redis.call('hgetall','h').map)", "0"]
        )
        .await,
        bulk("nil")
    );
    assert_eq!(
        run(
            &mut c,
            &[
                "EVAL",
                "redis.setresp(3); return redis.call('hgetall','h').map.a",
                "0"
            ]
        )
        .await,
        bulk("1")
    );
}

#[tokio::test]
async fn replies_become_lua_values() {
    let s = Server::under_test();
    let mut c = s.client().await;
    run(&mut c, &["SET", "s", "abc"]).await.unwrap();
    let cases: Vec<(&str, Reply)> = vec![
        ("return type(redis.call('get','s'))", bulk("string")),
        ("return type(redis.call('get','nosuch'))", bulk("boolean")),
        ("return redis.call('get','nosuch') == false", int(1)),
        ("return type(redis.call('strlen','s'))", bulk("number")),
        ("return redis.call('set','t','1').ok", bulk("OK")),
        (
            "return redis.pcall('incr','s').err",
            bulk("ERR value is not an integer or out of range"),
        ),
        (
            "redis.call('rpush','l','a','b') return redis.call('lrange','l',0,-1)",
            arr(vec![b("a"), b("b")]),
        ),
        ("return #redis.call('lrange','nolist',0,-1)", int(0)),
        // Numbers sent to commands are formatted with %.17g.
        (
            "redis.call('set','n',0.1) return redis.call('get','n')",
            bulk("0.10000000000000001"),
        ),
        (
            "redis.call('set','n',123456789012345) return redis.call('get','n')",
            bulk("123456789012345"),
        ),
    ];
    for (script, want) in cases {
        assert_eq!(run(&mut c, &["EVAL", script, "0"]).await, want, "{script}");
    }
}

#[tokio::test]
async fn script_errors_have_redis_texts() {
    let s = Server::under_test();
    let mut c = s.client().await;
    run(&mut c, &["SET", "s", "abc"]).await.unwrap();
    let cases: Vec<(&str, &str)> = vec![
        ("return redis.call('incr','s')", "ERR value is not an integer or out of range script: c243b9f46db13ba8f69da41b45a77708832babed, on @user_script:1."),
        ("return redis.call('nosuch')", "ERR Unknown Redis command called from script script: 206396248e12c6e742fd7296250433c8d7343b74, on @user_script:1."),
        ("return redis.call('get')", "ERR Wrong number of args calling Redis command from script script: f187dee77f607f7cff00bbabc9df38507582c78d, on @user_script:1."),
        ("return redis.call('multi')", "ERR This Redis command is not allowed from script script: c329a1a294be6bf95b44144f7502610661ae925a, on @user_script:1."),
        ("return redis.call()", "ERR Please specify at least one argument for this redis lib call script: 0a907e1429221a4d85516cab7fd219a82a9439d8, on @user_script:1."),
        ("return redis.call({})", "ERR Lua redis lib command arguments must be strings or integers script: 80747816df1f4411f7c442b928fce6a814214839, on @user_script:1."),
        ("error('boom')", "ERR user_script:1: boom script: 82903a0434f1503e152f89c03c9acd881a0e8150, on @user_script:1."),
        ("error({err='MY boom'})", "MY boom script: 4c2ee35ef37c857625d6ec6d812eab72377cfa97, on @user_script:1."),
        ("return nosuchvar", "ERR user_script:1: Script attempted to access nonexistent global variable 'nosuchvar' script: 3760de6215cfaea2540c14931183da92462bc404, on @user_script:1."),
        ("syntax error here", "ERR Error compiling script (new function): user_script:1: '=' expected near 'error'"),
    ];
    for (script, want) in cases {
        assert_eq!(
            run(&mut c, &["EVAL", script, "0"]).await,
            err(want),
            "{script}"
        );
    }
    assert_eq!(
        run(&mut c, &["EVAL", "return 1", "-1"]).await,
        err("ERR Number of keys can't be negative")
    );
    assert_eq!(
        run(&mut c, &["EVAL", "return 1", "2", "a"]).await,
        err("ERR Number of keys can't be greater than number of args")
    );
    assert_eq!(
        run(&mut c, &["EVAL", "return 1", "x"]).await,
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        run(&mut c, &["EVAL_RO", "return redis.call('set','k','v')", "0"]).await,
        err("ERR Write commands are not allowed from read-only scripts. script: d223ed8c7345b684e8ed044ed472601f536fa58b, on @user_script:1.")
    );
    assert_eq!(
        run(&mut c, &["EVAL", "#!lua flags=no-writes\nreturn redis.call('set','a','b')", "0"]).await,
        err("ERR Write commands are not allowed from read-only scripts. script: 6acb400a50fe96e33eca4e0af6e9dcfb21193726, on @user_script:2.")
    );
    assert_eq!(
        run(&mut c, &["EVAL_RO", "#!lua\nreturn 1", "0"]).await,
        err("ERR Can not execute a script with write flag using *_ro command.")
    );
    assert_eq!(
        run(&mut c, &["EVAL", "#!lua flags=bad\nreturn 1", "0"]).await,
        err("ERR Unexpected flag in script shebang: bad")
    );
}

#[tokio::test]
async fn sandbox_refuses_escapes() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let nonexistent = |name: &str| {
        format!(
            "ERR user_script:1: Script attempted to access nonexistent global variable '{name}'"
        )
    };
    let cases: Vec<(&str, String)> = vec![
        ("return os.execute('ls')", nonexistent("os")),
        ("return io.open('/etc/passwd')", nonexistent("io")),
        ("return loadfile('/etc/passwd')", nonexistent("loadfile")),
        ("return dofile('/etc/passwd')", nonexistent("dofile")),
        ("return require('os')", nonexistent("require")),
        ("return package.loaded", nonexistent("package")),
        ("return getfenv()", nonexistent("getfenv")),
        ("print('x')", nonexistent("print")),
        ("return debug.getinfo(1)", nonexistent("debug")),
        (
            "x = 1",
            "ERR user_script:1: Attempt to modify a readonly table".to_string(),
        ),
        (
            "_G.x = 1",
            "ERR user_script:1: Attempt to modify a readonly table".to_string(),
        ),
        (
            "string.len = nil",
            "ERR user_script:1: Attempt to modify a readonly table".to_string(),
        ),
        (
            "redis.call = nil",
            "ERR user_script:1: Attempt to modify a readonly table".to_string(),
        ),
        (
            "getmetatable('').__index = {}",
            "ERR user_script:1: Attempt to modify a readonly table".to_string(),
        ),
        (
            "rawset(_G, 'x', 1)",
            "ERR Attempt to modify a readonly table".to_string(),
        ),
        (
            "setmetatable(_G, nil)",
            "ERR Attempt to modify a readonly table".to_string(),
        ),
    ];
    for (script, want) in cases {
        match run(&mut c, &["EVAL", script, "0"]).await {
            Err(e) => assert!(e.starts_with(&want), "{script}: {e}"),
            other => panic!("{script}: expected an error, got {other:?}"),
        }
    }
    // Bytecode cannot be loaded.
    assert_eq!(
        run(
            &mut c,
            &[
                "EVAL",
                "return loadstring(string.dump(function() return 1 end))",
                "0"
            ]
        )
        .await,
        nil()
    );
    // Locals, tables, closures and library functions still work.
    assert_eq!(
        run(
            &mut c,
            &[
                "EVAL",
                "local t = {} t.x = 2 return t.x + #string.rep('a', 3)",
                "0"
            ]
        )
        .await,
        int(5)
    );
    // Nothing leaked into the globals of later scripts.
    assert_eq!(
        run(&mut c, &["EVAL", "return rawget(_G, 'x') == nil", "0"]).await,
        int(1)
    );
}

#[tokio::test]
async fn pcall_catches_errors() {
    let s = Server::under_test();
    let mut c = s.client().await;
    run(&mut c, &["SET", "s", "abc"]).await.unwrap();
    assert_eq!(
        run(
            &mut c,
            &["EVAL", "return {pcall(function() error('x') end)}", "0"]
        )
        .await,
        arr(vec![Value::Nil, b("user_script:1: x")])
    );
    assert_eq!(
        run(
            &mut c,
            &[
                "EVAL",
                "local ok, e = pcall(redis.call, 'nosuch') return e",
                "0"
            ]
        )
        .await,
        bulk("ERR Unknown Redis command called from script")
    );
    assert_eq!(
        run(
            &mut c,
            &["EVAL", "local r = redis.pcall('incr', 's') return r", "0"]
        )
        .await,
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        run(
            &mut c,
            &["EVAL", "redis.pcall('incr', 's') return 'went on'", "0"]
        )
        .await,
        bulk("went on")
    );
}

#[tokio::test]
async fn script_cache() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db";
    assert_eq!(
        run(&mut c, &["SCRIPT", "LOAD", "return 1"]).await,
        bulk(sha)
    );
    assert_eq!(
        run(
            &mut c,
            &["SCRIPT", "EXISTS", sha, "nosuch", &sha.to_uppercase()]
        )
        .await,
        ints(&[1, 0, 1])
    );
    assert_eq!(run(&mut c, &["EVALSHA", sha, "0"]).await, int(1));
    assert_eq!(
        run(&mut c, &["EVALSHA", &sha.to_uppercase(), "0"]).await,
        int(1)
    );
    assert_eq!(run(&mut c, &["EVALSHA_RO", sha, "0"]).await, int(1));
    // EVAL caches the script too.
    run(&mut c, &["EVAL", "return 2", "0"]).await.unwrap();
    let sha2 = "7f923f79fe76194c868d7e1d0820de36700eb649";
    assert_eq!(run(&mut c, &["EVALSHA", sha2, "0"]).await, int(2));
    assert_eq!(run(&mut c, &["SCRIPT", "FLUSH"]).await, ok());
    assert_eq!(
        run(&mut c, &["EVALSHA", sha, "0"]).await,
        err("NOSCRIPT No matching script. Please use EVAL.")
    );
    assert_eq!(run(&mut c, &["SCRIPT", "EXISTS", sha]).await, ints(&[0]));
    assert_eq!(
        run(&mut c, &["EVALSHA", "abc", "0"]).await,
        err("NOSCRIPT No matching script. Please use EVAL.")
    );
    assert_eq!(run(&mut c, &["SCRIPT", "FLUSH", "ASYNC"]).await, ok());
    assert_eq!(
        run(&mut c, &["SCRIPT", "FLUSH", "x"]).await,
        err("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    );
    assert_eq!(
        run(&mut c, &["SCRIPT", "LOAD", "syntax err"]).await,
        err("ERR Error compiling script (new function): user_script:1: '=' expected near 'err'")
    );
    assert_eq!(
        run(&mut c, &["SCRIPT", "KILL"]).await,
        err("NOTBUSY No scripts in execution right now.")
    );
}

#[tokio::test]
async fn scripts_are_shared_by_all_threads() {
    let s = Server::keel_with(&["--threads", "2", "--active-threads-min", "2"]);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut conns = Vec::new();
    for _ in 0..4 {
        conns.push(s.client().await);
    }
    let sha = text(
        &run(&mut conns[0], &["SCRIPT", "LOAD", "return ARGV[1]"])
            .await
            .unwrap(),
    );
    for c in conns.iter_mut() {
        assert_eq!(run(c, &["EVALSHA", &sha, "0", "v"]).await, bulk("v"));
    }
    run(&mut conns[1], &["SCRIPT", "FLUSH"]).await.unwrap();
    for c in conns.iter_mut() {
        assert_eq!(
            run(c, &["EVALSHA", &sha, "0", "v"]).await,
            err("NOSCRIPT No matching script. Please use EVAL.")
        );
    }
    let lib = "#!lua name=t\nredis.register_function('echo1', function(k, a) return a[1] end)";
    run(&mut conns[2], &["FUNCTION", "LOAD", lib])
        .await
        .unwrap();
    for c in conns.iter_mut() {
        assert_eq!(run(c, &["FCALL", "echo1", "0", "x"]).await, bulk("x"));
    }
}

#[tokio::test]
async fn functions() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let lib = "#!lua name=mylib\n\
        redis.register_function('f1', function(keys, args) return {keys, args} end)\n\
        redis.register_function{function_name='f2', callback=function(keys, args) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='desc'}";
    assert_eq!(run(&mut c, &["FUNCTION", "LOAD", lib]).await, bulk("mylib"));
    assert_eq!(
        run(&mut c, &["FUNCTION", "LOAD", lib]).await,
        err("ERR Library 'mylib' already exists")
    );
    assert_eq!(
        run(&mut c, &["FUNCTION", "LOAD", "REPLACE", lib]).await,
        bulk("mylib")
    );
    assert_eq!(
        run(&mut c, &["FCALL", "f1", "2", "a", "b", "c"]).await,
        arr(vec![
            Value::Array(vec![b("a"), b("b")]),
            Value::Array(vec![b("c")])
        ])
    );
    run(&mut c, &["SET", "a", "va"]).await.unwrap();
    assert_eq!(run(&mut c, &["FCALL_RO", "f2", "1", "a"]).await, bulk("va"));
    assert_eq!(run(&mut c, &["FCALL", "F2", "1", "a"]).await, bulk("va"));
    let writer = "#!lua name=lib2\nredis.register_function('f3', function(keys) return redis.call('set', keys[1], 'x') end)";
    run(&mut c, &["FUNCTION", "LOAD", writer]).await.unwrap();
    assert_eq!(run(&mut c, &["FCALL", "f3", "1", "k"]).await, ok());
    assert_eq!(
        run(&mut c, &["FCALL_RO", "f3", "1", "k"]).await,
        err("ERR Can not execute a script with write flag using *_ro command.")
    );
    assert_eq!(
        run(&mut c, &["FCALL", "nosuch", "0"]).await,
        err("ERR Function not found")
    );
    assert_eq!(
        run(&mut c, &["FCALL", "f1", "x"]).await,
        err("ERR Bad number of keys provided")
    );
    let list = run(&mut c, &["FUNCTION", "LIST", "LIBRARYNAME", "my*"])
        .await
        .unwrap();
    let Value::Array(libs) = list else {
        panic!("{list:?}")
    };
    assert_eq!(libs.len(), 1);
    let Value::Array(fields) = &libs[0] else {
        panic!("{libs:?}")
    };
    assert_eq!(fields[0], b("library_name"));
    assert_eq!(fields[1], b("mylib"));
    assert_eq!(fields[3], b("LUA"));
    let errors: Vec<(&str, &str)> = vec![
        ("return 1", "ERR Missing library metadata"),
        ("#!lua name=x", "ERR Invalid library metadata"),
        ("#!lua\nreturn 1", "ERR Library name was not given"),
        ("#!js name=x\n", "ERR Engine 'js' not found"),
        ("#!lua name=x\n", "ERR No functions registered"),
        ("#!lua name=x-y\n", "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"),
        ("#!lua name=x\nredis.register_function('a', function() end)\nredis.register_function('a', function() end)", "ERR Error registering functions: ERR Function already exists in the library"),
        ("#!lua name=x\nredis.register_function{function_name='a', callback=function() end, flags={'bad'}}", "ERR Error registering functions: ERR unknown flag given"),
        ("#!lua name=x\nredis.call('ping')", "ERR Error registering functions: ERR user_function:2: Script attempted to access nonexistent global variable 'call'"),
        ("#!lua name=x\nsyntax error", "ERR Error compiling function: user_function:2: '=' expected near 'error'"),
        ("#!lua name=x\nredis.register_function('f1', function() end)", "ERR Function f1 already exists"),
    ];
    for (code, want) in errors {
        assert_eq!(
            run(&mut c, &["FUNCTION", "LOAD", code]).await,
            err(want),
            "{code}"
        );
    }
    let failing = "#!lua name=w\nredis.register_function('e', function() error('boom') end)";
    run(&mut c, &["FUNCTION", "LOAD", failing]).await.unwrap();
    assert_eq!(
        run(&mut c, &["FCALL", "e", "0"]).await,
        err("ERR user_function:2: boom script: e, on @user_function:2.")
    );
    assert_eq!(run(&mut c, &["FUNCTION", "DELETE", "mylib"]).await, ok());
    assert_eq!(
        run(&mut c, &["FUNCTION", "DELETE", "mylib"]).await,
        err("ERR Library not found")
    );
    assert_eq!(
        run(&mut c, &["FCALL", "f1", "0"]).await,
        err("ERR Function not found")
    );
    assert_eq!(run(&mut c, &["FUNCTION", "FLUSH"]).await, ok());
    assert_eq!(run(&mut c, &["FUNCTION", "LIST"]).await, arr(vec![]));
    assert_eq!(
        run(&mut c, &["FCALL", "f3", "1", "k"]).await,
        err("ERR Function not found")
    );
}

#[tokio::test]
async fn libraries_round_trip() {
    let s = Server::under_test();
    let mut c = s.client().await;
    let cases: Vec<(&str, Reply)> = vec![
        ("return cjson.encode({1, 2, 3})", bulk("[1,2,3]")),
        (
            "return cjson.encode({a={b='c/d'}})",
            bulk("{\"a\":{\"b\":\"c\\/d\"}}"),
        ),
        (
            "return cjson.encode(cjson.decode('{\"a\":[1,2.5,true,null]}'))",
            bulk("{\"a\":[1,2.5,true,null]}"),
        ),
        ("return cjson.decode('[1,2,3]')[3]", int(3)),
        ("return cjson.decode('\"\\\\u00e9\"')", bulk("\u{e9}")),
        (
            "return cmsgpack.unpack(cmsgpack.pack({1, 2, {x=3}}))[3].x",
            int(3),
        ),
        (
            "return cmsgpack.pack(1, 'abc', true)",
            bulk(b"\x01\xa3abc\xc3"),
        ),
        (
            "return {cmsgpack.unpack(cmsgpack.pack(1, 300, -5))}",
            ints(&[1, 300, -5]),
        ),
        ("return bit.band(0xff, 0x0f)", int(15)),
        ("return bit.bor(1, 2, 4)", int(7)),
        ("return bit.bxor(5, 3)", int(6)),
        ("return bit.bnot(0)", int(-1)),
        ("return bit.lshift(1, 31)", int(i32::MIN as i64)),
        ("return bit.rshift(-1, 28)", int(15)),
        ("return bit.arshift(-16, 2)", int(-4)),
        ("return bit.rol(0x80000001, 1)", int(3)),
        ("return bit.tohex(255)", bulk("000000ff")),
        ("return bit.tohex(255, -2)", bulk("FF")),
        ("return bit.tobit(2^32 + 5)", int(5)),
        (
            "return {struct.unpack('>i2 s', struct.pack('>i2 s', -2, 'hi'))}",
            arr(vec![Value::Int(-2), b("hi"), Value::Int(6)]),
        ),
        ("return struct.pack('<I4', 1)", bulk(b"\x01\x00\x00\x00")),
        ("return struct.size('!8 b d')", int(16)),
        (
            "return redis.sha1hex('')",
            bulk("da39a3ee5e6b4b0d3255bfef95601890afd80709"),
        ),
    ];
    for (script, want) in cases {
        assert_eq!(run(&mut c, &["EVAL", script, "0"]).await, want, "{script}");
    }
    assert!(run(&mut c, &["EVAL", "return cjson.decode('[1,')", "0"])
        .await
        .unwrap_err()
        .starts_with("ERR user_script:1: Expected value but found T_END at character 4"));
}

#[tokio::test]
async fn undeclared_keys_and_transactions() {
    let s = Server::under_test();
    let mut c = s.client().await;
    for k in ["a", "b", "c", "d"] {
        run(&mut c, &["SET", k, k]).await.unwrap();
    }
    // Keys not in KEYS are reachable (keel runs the script again with
    // their shards locked).
    for _ in 0..3 {
        assert_eq!(
            run(
                &mut c,
                &[
                    "EVAL",
                    "return {redis.call('get','a'), redis.call('get','b'), redis.call('get','c')}",
                    "0"
                ]
            )
            .await,
            arr(vec![b("a"), b("b"), b("c")])
        );
    }
    assert_eq!(
        run(
            &mut c,
            &[
                "EVAL",
                "redis.call('incr','n') return redis.call('incr','n')",
                "0"
            ]
        )
        .await,
        int(2)
    );
    assert_eq!(
        run(&mut c, &["EVAL", "return redis.call('dbsize')", "0"]).await,
        int(5)
    );
    assert_eq!(
        run(
            &mut c,
            &["EVAL", "return #redis.call('keys','*')", "1", "a"]
        )
        .await,
        int(5)
    );
    // In a transaction, with the keys declared.
    run(&mut c, &["MULTI"]).await.unwrap();
    run(
        &mut c,
        &["EVAL", "return redis.call('incr', KEYS[1])", "1", "n"],
    )
    .await
    .unwrap();
    run(&mut c, &["INCR", "n"]).await.unwrap();
    assert_eq!(run(&mut c, &["EXEC"]).await, ints(&[3, 4]));
    // SELECT inside a script does not change the caller's database.
    assert_eq!(
        run(
            &mut c,
            &[
                "EVAL",
                "redis.call('select', 1) return redis.call('get', KEYS[1])",
                "1",
                "a"
            ]
        )
        .await,
        nil()
    );
    assert_eq!(run(&mut c, &["GET", "a"]).await, bulk("a"));
    // Blocking commands do not block in scripts.
    assert_eq!(
        run(
            &mut c,
            &[
                "EVAL",
                "return redis.call('blmpop', 0, 1, KEYS[1], 'LEFT')",
                "1",
                "nolist"
            ]
        )
        .await,
        nil()
    );
}

/// Sends EVAL of a script that loops until killed on `a`, waits until
/// `b` (another connection, on another worker) can kill it, and returns
/// the reply of SCRIPT KILL and then the script's own reply.
#[test]
fn script_kill_stops_a_busy_script() {
    let s = Server::keel_with(&["--threads", "2", "--active-threads-min", "2"]);
    // Both connections exist before the script starts: the second lands
    // on the other worker (the busy one runs nothing else meanwhile).
    std::thread::sleep(Duration::from_millis(600));
    let mut a = s.raw();
    // A round trip first: `a` is counted on its worker before `b` is
    // placed, so `b` lands on the other one.
    assert_eq!(a.cmd(&["PING"]), b"+PONG\r\n");
    let mut b = s.raw();
    let _ = b.cmd(&["CONFIG", "SET", "busy-reply-threshold", "200"]);
    assert_eq!(
        b.cmd(&["SCRIPT", "KILL"]),
        b"-NOTBUSY No scripts in execution right now.\r\n"
    );
    a.send_cmd(&["EVAL", "local i = 0 while true do i = i + 1 end", "0"]);
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let r = b.cmd(&["SCRIPT", "KILL"]);
        if r == b"+OK\r\n" {
            break;
        }
        assert_eq!(
            r, b"-NOTBUSY No scripts in execution right now.\r\n",
            "unexpected SCRIPT KILL reply"
        );
        assert!(Instant::now() < deadline, "the script never became busy");
        std::thread::sleep(Duration::from_millis(100));
    }
    let reply = a.read_reply();
    assert_eq!(
        escape(&reply),
        "-ERR Script killed by user with SCRIPT KILL... script: 3fcf51a9b854b8f66cb8685600b0d7df968f4398, on @user_script:1.\\r\\n"
    );
    // Both connections work afterwards.
    assert_eq!(a.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(
        b.cmd(&["SCRIPT", "KILL"]),
        b"-NOTBUSY No scripts in execution right now.\r\n"
    );
}

#[test]
fn busy_script_that_wrote_is_unkillable() {
    let s = Server::keel_with(&["--threads", "2", "--active-threads-min", "2"]);
    std::thread::sleep(Duration::from_millis(600));
    let mut a = s.raw();
    // A round trip first: `a` is counted on its worker before `b` is
    // placed, so `b` lands on the other one.
    assert_eq!(a.cmd(&["PING"]), b"+PONG\r\n");
    let mut b = s.raw();
    let _ = b.cmd(&["CONFIG", "SET", "busy-reply-threshold", "200"]);
    // Writes, then spins for a bounded time.
    let script = "redis.call('set', KEYS[1], 'x') \
        local t0 = tonumber(redis.call('time')[1]) \
        while tonumber(redis.call('time')[1]) < t0 + 9 do end \
        return 'done'";
    a.send_cmd(&["EVAL", script, "1", "w"]);
    let deadline = Instant::now() + Duration::from_secs(9);
    let mut saw = false;
    while Instant::now() < deadline {
        let r = b.cmd(&["SCRIPT", "KILL"]);
        if r.starts_with(b"-UNKILLABLE") {
            saw = true;
            assert_eq!(
                escape(&r),
                "-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\\r\\n"
            );
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(saw, "SCRIPT KILL never answered UNKILLABLE");
    assert_eq!(a.read_reply(), b"$4\r\ndone\r\n");
}

/// Replies compared byte for byte with redis-server 7.0 (commands whose
/// reply is deterministic).
const SAME_AS_REDIS: &[&str] = &[
    r##"EVAL "return {1,2,{3,'x'},nil,4}" 0"##,
    r##"EVAL "return {true,false,1}" 0"##,
    r##"EVAL "return {ok='a'}" 0"##,
    r##"EVAL "return {err='E z'}" 0"##,
    r##"EVAL "return {1,2,3,'x',{ok='y'},{err='E z'}}" 0"##,
    r##"EVAL "return {double=0.1}" 0"##,
    r##"EVAL "return {double=1/0}" 0"##,
    r##"EVAL "return redis.call('ping')" 0"##,
    r##"EVAL "return redis.call('hgetall','nohash')" 0"##,
    r##"EVAL "redis.call('zadd','z',1.5,'a') return redis.call('zincrby','z',0.1,'a')" 1 z"##,
    r##"EVAL "redis.setresp(3) return redis.call('zscore','z','a')" 1 z"##,
    r##"EVAL "return redis.setresp(4)" 0"##,
    r##"EVAL "return redis.log(redis.LOG_WARNING,'hello')" 0"##,
    r##"EVAL "return redis.log(9,'x')" 0"##,
    r##"EVAL "return redis.set_repl(redis.REPL_ALL)" 0"##,
    r##"EVAL "return redis.set_repl(77)" 0"##,
    r##"EVAL "return redis.replicate_commands()" 0"##,
    r##"EVAL "return {redis.REPL_NONE,redis.REPL_AOF,redis.REPL_SLAVE,redis.REPL_REPLICA,redis.REPL_ALL}" 0"##,
    r##"EVAL "return redis.REDIS_VERSION" 0"##,
    r##"EVAL "return redis.REDIS_VERSION_NUM" 0"##,
    r##"EVAL "local t = {} for k,v in pairs(_G) do t[#t+1]=k end table.sort(t) return t" 0"##,
    r##"EVAL "local t = {} for k,v in pairs(redis) do t[#t+1]=k end table.sort(t) return t" 0"##,
    r##"EVAL "local t = {} for k,v in pairs(string) do t[#t+1]=k end table.sort(t) return t" 0"##,
    r##"EVAL "local t = {} for k,v in pairs(cjson) do t[#t+1]=k..type(v) end table.sort(t) return t" 0"##,
    r##"EVAL "return {pcall(function() error({err='ERR a'}) end)}" 0"##,
    r##"EVAL "error()" 0"##,
    r##"EVAL "error(12)" 0"##,
    r##"EVAL "local function f() error('deep') end f()" 0"##,
    r##"EVAL "return KEYS" 2 a b c d"##,
    r##"EVAL "return ARGV" 2 a b c d"##,
    r##"EVAL "return cjson.encode({[1]=1,[20]=3})" 0"##,
    r##"EVAL "return cjson.decode('{1:2}')" 0"##,
    r##"EVAL "return cjson.encode(string.char(1,127,200,8,9,10,12,13,34,92))" 0"##,
    r##"EVAL "return cmsgpack.pack(1, -1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649)" 0"##,
    r##"EVAL "return cmsgpack.pack(1.5, 0.1, -0.0, 1/0, 1e300)" 0"##,
    r##"EVAL "return cmsgpack.unpack(string.char(0xcd, 1))" 0"##,
    r##"EVAL "return struct.pack('>i2<i2bBhHlLT', 1, 2, -1, 255, -2, 65535, -3, 4, 5)" 0"##,
    r##"EVAL "return struct.pack('i40', 1)" 0"##,
    r##"EVAL "return bit.tobit('x')" 0"##,
    r##"EVAL "#!lua\nerror('x')" 0"##,
    r##"EVAL "#!lua foo=bar\nreturn 1" 0"##,
    r##"SCRIPT HELP"##,
    r##"FUNCTION HELP"##,
    r##"FUNCTION STATS"##,
    r##"FUNCTION KILL"##,
    r##"FUNCTION LOAD "#!lua name=x\nredis.register_function('a', function() end)\nredis.register_function('a', function() end)""##,
    r##"FUNCTION LOAD "#!lua name=x\nredis.register_function{function_name='a', callback=function() end, foo=1}""##,
    r##"FUNCTION LOAD "#!lua name=x\nx = 1""##,
    r##"FUNCTION LOAD "#!lua name=x foo=bar\n""##,
    r##"FUNCTION FLUSH a b"##,
    r##"FUNCTION LIST foo"##,
    r##"FUNCTION LOAD "#!lua name=lib1\nredis.register_function('one', function(k, a) return {k, a} end)""##,
    r##"FCALL one 1 k a"##,
    r##"FUNCTION LIST WITHCODE"##,
    r##"FUNCTION STATS"##,
    // Scripts do not block: XREAD's BLOCK answers at once.
    r##"EVAL "return redis.call('xread','block','100','streams','nostream','$')" 0"##,
    r##"XGROUP CREATE xs g $ MKSTREAM"##,
    r##"EVAL "return redis.call('xreadgroup','group','g','c','block','100','streams','xs','>')" 0"##,
    // BY a constant: a list keeps its order; a set is sorted (as for STORE).
    r##"RPUSH sl 3 1 2"##,
    r##"EVAL "return redis.call('sort','sl','by','nosort')" 0"##,
    r##"EVAL "return redis.call('sort','sl','by','nosort','limit','1','5')" 0"##,
    r##"SADD ss c a b 10 2"##,
    r##"EVAL "return redis.call('sort','ss','by','nosort')" 0"##,
    r##"EVAL "return redis.call('sort_ro','ss','by','nosort')" 0"##,
    r##"ZADD sz 3 a 1 b 2 c"##,
    r##"EVAL "return redis.call('sort','sz','by','nosort')" 0"##,
    // min-replicas-to-write unmet: a script that may write is refused up front.
    r##"CONFIG SET min-replicas-to-write 1"##,
    r##"EVAL "#!lua\nreturn 1" 0"##,
    r##"EVAL "#!lua flags=no-writes\nreturn 1" 0"##,
    r##"EVAL "return redis.call('get','x')" 0"##,
    r##"EVAL "return redis.call('set','x','1')" 0"##,
    r##"CONFIG SET min-replicas-to-write 0"##,
    // redis.acl_check_cmd answers by the calling user's rules (last: it
    // authenticates the connection as that user).
    r##"ACL SETUSER acs on nopass +eval +get +config|get ~k*"##,
    r##"AUTH acs x"##,
    r##"EVAL "return redis.acl_check_cmd('get','k1')" 0"##,
    r##"EVAL "return redis.acl_check_cmd('get','other')" 0"##,
    r##"EVAL "return redis.acl_check_cmd('set','k1','v')" 0"##,
    r##"EVAL "return redis.acl_check_cmd('config','get','x')" 0"##,
    r##"EVAL "return redis.acl_check_cmd('config','set','x','y')" 0"##,
    r##"EVAL "return redis.acl_check_cmd('get')" 0"##,
    r##"EVAL "return redis.acl_check_cmd('nosuch')" 0"##,
    r##"EVAL "return redis.acl_check_cmd('config','nosuch')" 0"##,
    r##"EVAL "return redis.acl_check_cmd()" 0"##,
];

#[test]
fn same_replies_as_redis() {
    let keel = Server::keel();
    let redis = Server::redis();
    let mut k = keel.raw();
    let mut r = redis.raw();
    let mut diffs = Vec::new();
    for line in SAME_AS_REDIS {
        let argv = split(line);
        let (kr, rr) = (k.cmd(&argv), r.cmd(&argv));
        if kr != rr {
            diffs.push(format!(
                "{line}\n    keel:  {}\n    redis: {}",
                escape(&kr),
                escape(&rr)
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "differences from redis-server:\n{}",
        diffs.join("\n")
    );
}

/// Other clients get -BUSY for the shards of a script past the threshold,
/// and a new connection can still reach SCRIPT KILL (it is placed away
/// from the stuck worker; the cron never waits for a held shard).
#[test]
fn busy_script_answers_busy_to_others() {
    let s = Server::keel();
    let mut a = s.raw();
    assert_eq!(
        a.cmd(&["CONFIG", "SET", "busy-reply-threshold", "100"]),
        b"+OK\r\n"
    );
    a.send_cmd(&[
        "EVAL",
        "redis.call('get', KEYS[1]) while true do end",
        "1",
        "foo",
    ]);
    std::thread::sleep(Duration::from_millis(500));
    // A new connection, while the script's worker is stuck.
    let mut b = s.raw();
    assert_eq!(
        escape(&b.cmd(&["GET", "foo"])),
        "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\\r\\n"
    );
    assert_eq!(b.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(
        escape(&b.cmd(&["FUNCTION", "KILL"])),
        "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\\r\\n"
    );
    assert_eq!(b.cmd(&["SCRIPT", "KILL"]), b"+OK\r\n");
    assert!(a
        .read_reply()
        .starts_with(b"-ERR Script killed by user with SCRIPT KILL..."));
    assert_eq!(b.cmd(&["GET", "foo"]), b"$-1\r\n");
}

/// With one worker, a script past busy-reply-threshold does not make the
/// server deaf: connections that share its thread get -BUSY (a MULTI among
/// them ends in EXECABORT, nothing applied), and a new connection gets
/// SCRIPT KILL through. As Redis (`KEEL_IT_AGAINST_REDIS=1` passes).
#[test]
fn busy_script_on_the_only_worker_leaves_the_server_reachable() {
    let s = if std::env::var("KEEL_IT_AGAINST_REDIS").is_ok_and(|v| v == "1") {
        Server::redis()
    } else {
        Server::keel_with(&["--threads", "1"])
    };
    let busy = "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n";
    let mut a = s.raw();
    // `b` shares the script's thread: it exists before the script runs.
    let mut b = s.raw();
    assert_eq!(
        b.cmd(&["CONFIG", "SET", "busy-reply-threshold", "100"]),
        b"+OK\r\n"
    );
    a.send_cmd(&["EVAL", "while true do end", "0"]);
    // Whenever it arrives, PING is answered once the script is busy.
    assert_eq!(escape(&b.cmd(&["PING"])), escape(busy.as_bytes()));
    assert_eq!(b.cmd(&["MULTI"]), b"+OK\r\n");
    assert_eq!(escape(&b.cmd(&["SET", "x", "1"])), escape(busy.as_bytes()));
    assert_eq!(
        escape(&b.cmd(&["EXEC"])),
        "-EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\\r\\n"
    );
    // A connection made now: saving would wait for the script.
    let mut c = s.raw();
    assert_eq!(escape(&c.cmd(&["SHUTDOWN"])), escape(busy.as_bytes()));
    assert_eq!(c.cmd(&["SCRIPT", "KILL"]), b"+OK\r\n");
    assert!(a
        .read_reply()
        .starts_with(b"-ERR Script killed by user with SCRIPT KILL..."));
    assert_eq!(b.cmd(&["GET", "x"]), b"$-1\r\n");
    assert_eq!(b.cmd(&["EXEC"]), b"-ERR EXEC without MULTI\r\n");
    assert_eq!(b.cmd(&["PING"]), b"+PONG\r\n");
    assert_eq!(a.cmd(&["PING"]), b"+PONG\r\n");
}

/// SHUTDOWN NOSAVE from a connection on the busy script's own thread
/// stops the server.
#[test]
fn shutdown_nosave_reaches_a_server_stuck_in_a_script() {
    let mut s = Server::keel_with(&["--threads", "1"]);
    let mut a = s.raw();
    let mut b = s.raw();
    assert_eq!(
        b.cmd(&["CONFIG", "SET", "busy-reply-threshold", "100"]),
        b"+OK\r\n"
    );
    a.send_cmd(&["EVAL", "while true do end", "0"]);
    assert!(b.cmd(&["PING"]).starts_with(b"-BUSY"));
    b.send_cmd(&["SHUTDOWN", "NOSAVE"]);
    let status = s.wait_exit(Duration::from_secs(20));
    assert!(
        status.is_some(),
        "keel-server still running after SHUTDOWN NOSAVE"
    );
}
