//! Connection commands: PING, ECHO, QUIT, RESET, SELECT, HELLO and CLIENT.

use std::sync::atomic::Ordering::Relaxed;

use super::args::{self, is, Args};
use super::error::{self, CmdError, CmdResult};
use super::table::{flag, Registry, WhileBusy};
use super::Ctx;
use resp::encode;

use crate::client::{ClientInfo, ReplyMode};

pub(super) fn register(r: &mut Registry) {
    r.add_flagged("ping", ping, flag::SUBSCRIBED_OK | flag::MISCONF_TOO);
    r.add("echo", echo);
    r.add_flagged("quit", quit, flag::SUBSCRIBED_OK | flag::TX_CONTROL);
    r.while_busy("quit", WhileBusy::Close);
    r.add_flagged("reset", reset, flag::SUBSCRIBED_OK | flag::TX_CONTROL);
    r.add("select", select);
    r.add("hello", hello);
    r.add("client|id", client_id);
    r.add("client|setname", client_setname);
    r.add("client|getname", client_getname);
    r.add("client|list", client_list);
    r.add("client|info", client_info);
    r.add("client|kill", client_kill);
    r.add("client|setinfo", client_setinfo);
    r.add("client|no-evict", client_no_evict);
    r.add("client|no-touch", client_no_touch);
    r.add("client|capa", client_capa);
    r.add("client|reply", client_reply);
    r.add("client|help", client_help);
    r.add("monitor", monitor);
    r.add("client|pause", client_pause);
    r.add("client|unpause", client_unpause);
    r.add("client|unblock", client_unblock);
    r.add("client|tracking", client_tracking);
    r.add("client|caching", client_caching);
    r.add("client|getredir", client_getredir);
    r.add("client|trackinginfo", client_trackinginfo);
}

/// PING [message]
fn ping(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len() > 2 {
        return Err(error::wrong_arity("ping"));
    }
    // A RESP2 client in subscribed mode gets PING as a pub/sub-style
    // array, as in Redis.
    if cx.client.proto == 2 && cx.client.subscriptions() > 0 {
        cx.array(2);
        cx.bulk(b"pong");
        cx.bulk(argv.get(1).copied().unwrap_or(b""));
        return Ok(());
    }
    match argv.get(1) {
        Some(msg) => cx.bulk(msg),
        None => cx.simple(b"PONG"),
    }
    Ok(())
}

/// ECHO message
fn echo(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    cx.bulk(argv[1]);
    Ok(())
}

/// QUIT
fn quit(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.ok();
    cx.close_after_reply();
    Ok(())
}

/// RESET
fn reset(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    super::multi::discard_transaction(cx.server, cx.client);
    super::pubsub::unsubscribe_all(cx.server, cx.client);
    cx.server.tracking.disable(&cx.client.info);
    cx.server.monitors.remove(&cx.client.info);
    cx.client.set_db(0);
    cx.client.set_proto(2);
    cx.client.reply_mode = ReplyMode::On;
    cx.client.info.name.lock().clear();
    cx.client.info.no_evict.store(false, Relaxed);
    cx.client.info.no_touch.store(false, Relaxed);
    cx.client.asking = false;
    cx.client.cluster_readonly = false;
    cx.client.logout(&cx.server.acl);
    cx.simple(b"RESET");
    Ok(())
}

/// SELECT index
fn select(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if cx.server.cluster.enabled() && resp::parse_i64(argv[1]).is_some_and(|n| n != 0) {
        return Err(CmdError::new("ERR SELECT is not allowed in cluster mode"));
    }
    let n = args::db_index(argv[1], cx.server.keyspace.databases())?;
    cx.client.set_db(n);
    cx.ok();
    Ok(())
}

/// Client and library names may hold only printable ASCII without spaces.
fn valid_name(name: &[u8]) -> bool {
    name.iter().all(|&c| (b'!'..=b'~').contains(&c))
}

/// HELLO [protover [AUTH username password] [SETNAME clientname]]
fn hello(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let mut proto = cx.client.proto;
    if let Some(v) = argv.get(1) {
        let v = resp::parse_i64(v).ok_or_else(|| {
            CmdError::new("ERR Protocol version is not an integer or out of range")
        })?;
        if !(2..=3).contains(&v) {
            return Err(CmdError::new("NOPROTO unsupported protocol version"));
        }
        proto = v as u8;
    }
    let mut setname = None;
    let mut credentials = None;
    let mut a = Args::new(argv, 2);
    while let Some(opt) = a.take() {
        if is(opt, "AUTH") && a.left() >= 2 {
            credentials = Some((a.value(), a.value()));
        } else if is(opt, "SETNAME") && a.more() {
            let name = a.value();
            // Redis 7.2 checks the name as it reads it, before AUTH.
            if crate::speaks_7_4() && !valid_name(name) {
                a.fail(CmdError::new(BAD_CLIENT_NAME));
            }
            setname = Some(name);
        } else {
            a.fail(CmdError::new(format!(
                "ERR Syntax error in HELLO option '{}'",
                args::lossy(opt)
            )));
        }
    }
    a.finish()?;
    if let Some((user, password)) = credentials {
        super::acl::authenticate(cx, argv[0], user, password)?;
    }
    if !cx.client.auth.authenticated {
        return Err(CmdError::new("NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time"));
    }
    if let Some(name) = setname {
        if !valid_name(name) {
            return Err(CmdError::new(BAD_CLIENT_NAME));
        }
        *cx.client.info.name.lock() = name.to_vec();
    }
    cx.client.set_proto(proto);
    let id = cx.client.info.id as i64;
    cx.map(7);
    cx.bulk(b"server");
    cx.bulk(b"redis");
    cx.bulk(b"version");
    cx.bulk(crate::redis_version().as_bytes());
    cx.bulk(b"proto");
    cx.int(proto as i64);
    cx.bulk(b"id");
    cx.int(id);
    cx.bulk(b"mode");
    cx.bulk(b"standalone");
    cx.bulk(b"role");
    cx.bulk(b"master");
    cx.bulk(b"modules");
    cx.array(0);
    Ok(())
}

/// CLIENT ID
fn client_id(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let id = cx.client.info.id as i64;
    cx.int(id);
    Ok(())
}

/// Redis's validateClientName error.
const BAD_CLIENT_NAME: &str =
    "ERR Client names cannot contain spaces, newlines or special characters.";

/// CLIENT SETNAME connection-name
fn client_setname(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if !valid_name(argv[2]) {
        return Err(CmdError::new(BAD_CLIENT_NAME));
    }
    *cx.client.info.name.lock() = argv[2].to_vec();
    cx.ok();
    Ok(())
}

/// CLIENT GETNAME
fn client_getname(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let name = cx.client.info.name.lock().clone();
    if name.is_empty() {
        cx.null();
    } else {
        cx.bulk(&name);
    }
    Ok(())
}

/// One CLIENT LIST line, with Redis's fields in Redis's order.
/// A client's CLIENT LIST line (also ACL LOG's `client-info`).
pub(super) fn describe(server: &crate::server::Server, c: &ClientInfo) -> String {
    let age = c.created.elapsed().as_secs();
    let cmd = match c.last_cmd.load(Relaxed) {
        u32::MAX => "NULL".to_string(),
        id => server.commands.get(id as usize).name.clone(),
    };
    let mut flags = String::new();
    if c.monitor.load(Relaxed) {
        flags.push('O');
    }
    match c.kind.load(Relaxed) {
        crate::client::KIND_REPLICA => flags.push('S'),
        crate::client::KIND_PRIMARY => flags.push('M'),
        _ => {}
    }
    if c.subscribed.load(Relaxed) {
        flags.push('P');
    }
    if c.multi_len.load(Relaxed) >= 0 {
        flags.push('x');
    }
    if c.blocked.load(Relaxed) {
        flags.push('b');
    }
    {
        use crate::clients::tracking::flag as tf;
        let t = c.tracking.flags.load(Relaxed);
        if t & tf::ON != 0 {
            flags.push('t');
        }
        if t & tf::BROKEN_REDIR != 0 {
            flags.push('R');
        }
        if t & tf::BCAST != 0 {
            flags.push('B');
        }
    }
    // Redis's order: ... U (Unix socket), r, e (no-evict), T (no-touch).
    if c.unix {
        flags.push('U');
    }
    if c.no_evict.load(Relaxed) {
        flags.push('e');
    }
    if c.no_touch.load(Relaxed) {
        flags.push('T');
    }
    if flags.is_empty() {
        flags.push('N');
    }
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub={} psub={} ssub={} multi={} qbuf={} qbuf-free={} argv-mem=0 multi-mem=0 rbs={} rbp=0 obl=0 oll=0 omem={} tot-mem={} events=r cmd={} user={} redir={} resp={} lib-name={} lib-ver={}\n",
        c.id,
        c.addr,
        c.laddr,
        c.fd,
        String::from_utf8_lossy(&c.name.lock()),
        age,
        c.idle_secs(),
        flags,
        c.db.load(Relaxed),
        c.sub_counts[0].load(Relaxed),
        c.sub_counts[1].load(Relaxed),
        c.sub_counts[2].load(Relaxed),
        c.multi_len.load(Relaxed),
        // The buffers as of the client's last batch.
        c.unread.load(Relaxed),
        c.qbuf.load(Relaxed).saturating_sub(c.unread.load(Relaxed)),
        c.obuf.load(Relaxed),
        c.unsent.load(Relaxed),
        c.memory(),
        cmd,
        String::from_utf8_lossy(&c.user.lock()),
        redirect_of(c),
        c.resp.load(Relaxed),
        String::from_utf8_lossy(&c.lib_name.lock()),
        String::from_utf8_lossy(&c.lib_ver.lock()),
    )
}

/// CLIENT LIST [TYPE NORMAL | MASTER | REPLICA | PUBSUB] [ID client-id ...]
fn client_list(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let mut ids: Option<Vec<u64>> = None;
    let mut only_type = None;
    if argv.len() == 4 && is(argv[2], "TYPE") {
        only_type = Some(parse_client_type(argv[3])?);
    } else if argv.len() > 3 && is(argv[2], "ID") {
        let mut v = Vec::new();
        for a in &argv[3..] {
            match resp::parse_i64(a) {
                // Ids that cannot exist match nothing, as in Redis.
                Some(n) => v.push(if n > 0 { n as u64 } else { 0 }),
                None => return Err(CmdError::new("ERR Invalid client ID")),
            }
        }
        ids = Some(v);
    } else if argv.len() != 2 {
        return Err(error::SYNTAX);
    }
    let mut text = String::new();
    for c in cx.server.clients.snapshot() {
        if ids.as_ref().is_some_and(|ids| !ids.contains(&c.id))
            || only_type.is_some_and(|t| t != client_type(&c))
        {
            continue;
        }
        text.push_str(&describe(cx.server, &c));
    }
    cx.verbatim(text.as_bytes());
    Ok(())
}

/// A client's class, as Redis's getClientType: the primary's link, a
/// replica (not a MONITOR), a subscriber, or normal.
const TYPE_NORMAL: u8 = 0;
const TYPE_REPLICA: u8 = 1;
const TYPE_MASTER: u8 = 2;
const TYPE_PUBSUB: u8 = 3;

fn client_type(c: &ClientInfo) -> u8 {
    match c.kind.load(Relaxed) {
        crate::client::KIND_PRIMARY => TYPE_MASTER,
        crate::client::KIND_REPLICA => TYPE_REPLICA,
        _ if c.subscribed.load(Relaxed) => TYPE_PUBSUB,
        _ => TYPE_NORMAL,
    }
}

fn parse_client_type(t: &[u8]) -> Result<u8, CmdError> {
    if is(t, "normal") {
        Ok(TYPE_NORMAL)
    } else if is(t, "master") || is(t, "primary") {
        // `primary`: Valkey 8.0's name, which Redis does not know.
        Ok(TYPE_MASTER)
    } else if is(t, "replica") || is(t, "slave") {
        Ok(TYPE_REPLICA)
    } else if is(t, "pubsub") {
        Ok(TYPE_PUBSUB)
    } else {
        Err(CmdError::new(format!(
            "ERR Unknown client type '{}'",
            args::lossy(t)
        )))
    }
}

/// CLIENT INFO
fn client_info(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let line = describe(cx.server, &cx.client.info.clone());
    cx.verbatim(line.as_bytes());
    Ok(())
}

/// CLIENT KILL ip:port | CLIENT KILL [ID client-id] [TYPE type] [USER
/// username] [ADDR ip:port] [LADDR ip:port] [SKIPME yes/no] [MAXAGE secs]
fn client_kill(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let me = cx.client.info.id;
    if argv.len() == 3 {
        let addr = argv[2];
        let mut killed_self = false;
        let n = cx.server.clients.kill_where(|c| {
            let hit = c.addr.as_bytes() == addr;
            if hit && c.id == me {
                killed_self = true;
                return false;
            }
            hit
        });
        if n == 0 && !killed_self {
            return Err(CmdError::new("ERR No such client"));
        }
        if killed_self {
            cx.close_after_reply();
        }
        cx.ok();
        return Ok(());
    }
    let mut id: Option<u64> = None;
    let mut addr: Option<&[u8]> = None;
    let mut laddr: Option<&[u8]> = None;
    let mut user: Option<&[u8]> = None;
    let mut maxage: Option<u64> = None;
    let mut only_type = None;
    let mut skipme = true;
    // Filters come in pairs: `<filter> <value>`.
    let mut a = Args::new(argv, 2);
    while a.more() {
        if a.left() < 2 {
            a.fail(error::SYNTAX);
            break;
        }
        let (opt, val) = (a.value(), a.value());
        if is(opt, "ID") {
            match resp::parse_i64(val) {
                Some(n) if n > 0 => id = Some(n as u64),
                _ => a.fail(CmdError::new("ERR client-id should be greater than 0")),
            }
        } else if is(opt, "TYPE") {
            only_type = a.check(parse_client_type(val));
        } else if is(opt, "ADDR") {
            addr = Some(val);
        } else if is(opt, "LADDR") {
            laddr = Some(val);
        } else if is(opt, "USER") {
            user = Some(val);
        } else if is(opt, "SKIPME") {
            if is(val, "yes") {
                skipme = true;
            } else if is(val, "no") {
                skipme = false;
            } else {
                a.fail(error::SYNTAX);
            }
        } else if is(opt, "MAXAGE") {
            maxage = a.check(args::int(val)).map(|n| n.max(0) as u64);
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    if let Some(u) = user {
        if cx.server.acl.get(u).is_none() {
            return Err(CmdError::new(format!(
                "ERR No such user '{}'",
                args::lossy(u)
            )));
        }
    }
    let mut killed_self = false;
    let mut n = cx.server.clients.kill_where(|c| {
        let hit = only_type.is_none_or(|t| t == client_type(c))
            && id.is_none_or(|i| i == c.id)
            && addr.is_none_or(|a| a == c.addr.as_bytes())
            && laddr.is_none_or(|a| a == c.laddr.as_bytes())
            && user.is_none_or(|u| u == c.user.lock().as_slice())
            && maxage.is_none_or(|m| c.created.elapsed().as_secs() >= m);
        if hit && c.id == me {
            if !skipme {
                killed_self = true;
            }
            return false;
        }
        hit
    });
    if killed_self {
        n += 1;
        cx.close_after_reply();
    }
    cx.int(n as i64);
    Ok(())
}

/// CLIENT SETINFO <LIB-NAME libname | LIB-VER libver>
fn client_setinfo(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let (attr, val) = (argv[2], argv[3]);
    let slot = if is(attr, "lib-name") {
        &cx.client.info.lib_name
    } else if is(attr, "lib-ver") {
        &cx.client.info.lib_ver
    } else {
        return Err(CmdError::new(format!(
            "ERR Unrecognized option '{}'",
            args::lossy(attr)
        )));
    };
    if !valid_name(val) {
        return Err(CmdError::new(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            args::lossy(attr).to_ascii_lowercase()
        )));
    }
    *slot.lock() = val.to_vec();
    cx.ok();
    Ok(())
}

/// An `ON | OFF` argument (CLIENT NO-EVICT, NO-TOUCH): a syntax error
/// otherwise.
fn on_off(arg: &[u8]) -> Result<bool, CmdError> {
    if is(arg, "on") {
        Ok(true)
    } else if is(arg, "off") {
        Ok(false)
    } else {
        Err(error::SYNTAX)
    }
}

/// CLIENT NO-EVICT <ON | OFF>
fn client_no_evict(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let on = on_off(argv[2])?;
    cx.client.info.no_evict.store(on, Relaxed);
    cx.ok();
    Ok(())
}

/// CLIENT NO-TOUCH <ON | OFF> (Redis 7.2)
fn client_no_touch(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let on = on_off(argv[2])?;
    cx.client.info.no_touch.store(on, Relaxed);
    cx.ok();
    Ok(())
}

/// CLIENT CAPA capability [capability ...] (Valkey 8.0): `redirect` is the
/// one capability; others are ignored, as Valkey does.
fn client_capa(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv[2..].iter().any(|a| is(a, "redirect")) {
        cx.client.capa_redirect = true;
    }
    cx.ok();
    Ok(())
}

/// CLIENT REPLY <ON | OFF | SKIP>
fn client_reply(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if is(argv[2], "on") {
        cx.client.reply_mode = ReplyMode::On;
        cx.ok();
    } else if is(argv[2], "off") {
        cx.client.reply_mode = ReplyMode::Off;
    } else if is(argv[2], "skip") {
        if cx.client.reply_mode == ReplyMode::On {
            cx.client.reply_mode = ReplyMode::SkipNext;
        }
    } else {
        return Err(error::SYNTAX);
    }
    Ok(())
}

/// CLIENT HELP (Redis 7.0's text, plus SETINFO from 7.2)
fn client_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    // Redis 7.0's text lacks what 7.2 and 7.4 added (keel answers those
    // subcommands under either version).
    const NEWER: &[&str] = &[
        "SETINFO <option> <value>",
        "    Set client meta attr. Options are:",
        "    * LIB-NAME: the client lib name.",
        "    * LIB-VER: the client lib version.",
        "    * ID <client-id>",
        "      Kill connections by client id.",
        "    * MAXAGE <maxage>",
        "      Kill connections older than the specified age.",
        "NO-TOUCH (ON|OFF)",
        "    Will not touch LRU/LFU stats when this mode is on.",
    ];
    let lines: Vec<&str> = CLIENT_HELP
        .iter()
        .copied()
        .filter(|l| crate::speaks_7_4() || !NEWER.contains(l))
        .collect();
    cx.help(&lines);
    Ok(())
}

const CLIENT_HELP: &[&str] = &[
    "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CACHING (YES|NO)",
    "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
    "GETREDIR",
    "    Return the client ID we are redirecting to when tracking is enabled.",
    "GETNAME",
    "    Return the name of the current connection.",
    "ID",
    "    Return the ID of the current connection.",
    "INFO",
    "    Return information about the current client connection.",
    "KILL <ip:port>",
    "    Kill connection made from <ip:port>.",
    "KILL <option> <value> [<option> <value> [...]]",
    "    Kill connections. Options are:",
    "    * ADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made from the specified address",
    "    * LADDR (<ip:port>|<unixsocket>:0)",
    "      Kill connections made to specified local address",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Kill connections by type.",
    "    * USER <username>",
    "      Kill connections authenticated by <username>.",
    "    * SKIPME (YES|NO)",
    "      Skip killing current connection (default: yes).",
    "    * ID <client-id>",
    "      Kill connections by client id.",
    "    * MAXAGE <maxage>",
    "      Kill connections older than the specified age.",
    "LIST [options ...]",
    "    Return information about client connections. Options:",
    "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
    "      Return clients of specified type.",
    "UNPAUSE",
    "    Stop the current client pause, resuming traffic.",
    "PAUSE <timeout> [WRITE|ALL]",
    "    Suspend all, or just write, clients for <timeout> milliseconds.",
    "REPLY (ON|OFF|SKIP)",
    "    Control the replies sent to the current connection.",
    "SETNAME <name>",
    "    Assign the name <name> to the current connection.",
    "SETINFO <option> <value>",
    "    Set client meta attr. Options are:",
    "    * LIB-NAME: the client lib name.",
    "    * LIB-VER: the client lib version.",
    "UNBLOCK <clientid> [TIMEOUT|ERROR]",
    "    Unblock the specified blocked client.",
    "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
    "         [OPTIN] [OPTOUT] [NOLOOP]",
    "    Control server assisted client side caching.",
    "TRACKINGINFO",
    "    Report tracking status for the current connection.",
    "NO-EVICT (ON|OFF)",
    "    Protect current client connection from eviction.",
    "NO-TOUCH (ON|OFF)",
    "    Will not touch LRU/LFU stats when this mode is on.",
    "HELP",
    "    Prints this help.",
];

/// CLIENT PAUSE timeout [WRITE | ALL]
fn client_pause(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len() > 4 {
        return Err(error::subcommand_syntax(argv));
    }
    let mode = match argv.get(3) {
        None => crate::clients::pause::ALL,
        Some(a) if is(a, "write") => crate::clients::pause::WRITE,
        Some(a) if is(a, "all") => crate::clients::pause::ALL,
        Some(_) => return Err(CmdError::new("ERR CLIENT PAUSE mode must be WRITE or ALL")),
    };
    let ms = resp::parse_i64(argv[2])
        .ok_or_else(|| CmdError::new("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(CmdError::new("ERR timeout is negative"));
    }
    let end = (super::unix_ms() as i64).saturating_add(ms);
    cx.server.pause_clients(end as u64, mode);
    cx.client.pause_barrier = true;
    cx.ok();
    Ok(())
}

/// CLIENT UNPAUSE
fn client_unpause(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.server.unpause_clients();
    cx.ok();
    Ok(())
}

/// CLIENT UNBLOCK client-id [TIMEOUT | ERROR]
fn client_unblock(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let id = resp::parse_i64(argv[2]).ok_or(error::NOT_INTEGER)?;
    let how = match argv.get(3) {
        None => crate::clients::blocking::UNBLOCK_TIMEOUT,
        Some(a) if is(a, "timeout") => crate::clients::blocking::UNBLOCK_TIMEOUT,
        Some(a) if is(a, "error") => crate::clients::blocking::UNBLOCK_ERROR,
        Some(_) => {
            return Err(CmdError::new(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    let done = id > 0 && cx.server.blocking.unblock(id as u64, how);
    cx.int(done as i64);
    Ok(())
}

/// MONITOR: the connection receives every command run from now on. A
/// second MONITOR gets no reply, as in Redis.
fn monitor(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let info = cx.client.info.clone();
    if cx.server.monitors.add(&info) {
        cx.ok();
    }
    Ok(())
}

/// CLIENT TRACKING <ON | OFF> [REDIRECT id] [PREFIX prefix ...] [BCAST]
/// [OPTIN] [OPTOUT] [NOLOOP], with Redis 7.0's checks in its order.
fn client_tracking(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    use crate::clients::tracking::flag as tf;
    let mut options = 0u8;
    let mut redirect = 0u64;
    let mut prefixes: Vec<Vec<u8>> = Vec::new();
    let mut a = Args::new(argv, 3);
    while a.more() {
        if let Some(target) = a.option("redirect") {
            if redirect != 0 {
                a.fail(CmdError::new(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            match a.check(resp::parse_i64(target).ok_or(error::NOT_INTEGER)) {
                Some(id) if id > 0 && cx.server.clients.get(id as u64).is_some() => {
                    redirect = id as u64;
                }
                Some(_) => a.fail(CmdError::new(
                    "ERR The client ID you want redirect to does not exist",
                )),
                None => {}
            }
        } else if a.word("bcast") {
            options |= tf::BCAST;
        } else if a.word("optin") {
            options |= tf::OPTIN;
        } else if a.word("optout") {
            options |= tf::OPTOUT;
        } else if a.word("noloop") {
            options |= tf::NOLOOP;
        } else if let Some(prefix) = a.option("prefix") {
            prefixes.push(prefix.to_vec());
        } else {
            a.fail(error::SYNTAX);
        }
    }
    a.finish()?;
    let t = &cx.client.info.tracking;
    if is(argv[2], "on") {
        if options & tf::BCAST == 0 && !prefixes.is_empty() {
            return Err(CmdError::new(
                "ERR PREFIX option requires BCAST mode to be enabled",
            ));
        }
        if t.has(tf::ON) && t.has(tf::BCAST) != (options & tf::BCAST != 0) {
            return Err(CmdError::new("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."));
        }
        if options & tf::BCAST != 0 && options & (tf::OPTIN | tf::OPTOUT) != 0 {
            return Err(CmdError::new(
                "ERR OPTIN and OPTOUT are not compatible with BCAST",
            ));
        }
        if options & tf::OPTIN != 0 && options & tf::OPTOUT != 0 {
            return Err(CmdError::new(
                "ERR You can't specify both OPTIN mode and OPTOUT mode",
            ));
        }
        if (options & tf::OPTIN != 0 && t.has(tf::OPTOUT))
            || (options & tf::OPTOUT != 0 && t.has(tf::OPTIN))
        {
            return Err(CmdError::new("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."));
        }
        if options & tf::BCAST != 0 {
            prefix_collisions(&t.prefixes.lock(), &prefixes)?;
        }
        let info = cx.client.info.clone();
        cx.server
            .tracking
            .enable(&info, redirect, options, &prefixes);
    } else if is(argv[2], "off") {
        cx.server.tracking.disable(&cx.client.info);
    } else {
        return Err(error::SYNTAX);
    }
    cx.ok();
    Ok(())
}

/// Redis's checkPrefixCollisionsOrReply: a client's prefixes may not
/// overlap (one a prefix of another), among those it has and those given.
fn prefix_collisions(existing: &[Vec<u8>], given: &[Vec<u8>]) -> Result<(), CmdError> {
    let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    let text = |b: &[u8]| {
        // Redis prints them with %s: up to a NUL byte.
        let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
        String::from_utf8_lossy(&b[..end]).into_owned()
    };
    for (i, p) in given.iter().enumerate() {
        if let Some(e) = existing.iter().find(|e| overlap(e, p)) {
            return Err(CmdError::new(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                text(p),
                text(e)
            )));
        }
        if let Some(q) = given[i + 1..].iter().find(|q| overlap(p, q)) {
            return Err(CmdError::new(format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                text(p),
                text(q)
            )));
        }
    }
    Ok(())
}

/// CLIENT CACHING <YES | NO>
fn client_caching(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    use crate::clients::tracking::flag as tf;
    let t = &cx.client.info.tracking;
    if !t.has(tf::ON) {
        return Err(CmdError::new("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"));
    }
    if is(argv[2], "yes") {
        if !t.has(tf::OPTIN) {
            return Err(CmdError::new(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            ));
        }
    } else if is(argv[2], "no") {
        if !t.has(tf::OPTOUT) {
            return Err(CmdError::new(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            ));
        }
    } else {
        return Err(error::SYNTAX);
    }
    t.flags.fetch_or(tf::CACHING, Relaxed);
    cx.ok();
    Ok(())
}

/// The redirect as CLIENT GETREDIR and TRACKINGINFO report it: -1 when
/// not tracking, 0 for none.
fn redirect_of(c: &ClientInfo) -> i64 {
    if c.tracking.has(crate::clients::tracking::flag::ON) {
        c.tracking.redirect.load(Relaxed) as i64
    } else {
        -1
    }
}

/// CLIENT GETREDIR
fn client_getredir(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let r = redirect_of(&cx.client.info);
    cx.int(r);
    Ok(())
}

/// CLIENT TRACKINGINFO
fn client_trackinginfo(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    use crate::clients::tracking::flag as tf;
    let info = cx.client.info.clone();
    let t = &info.tracking;
    let proto = cx.client.proto;
    let mut flags: Vec<&[u8]> = Vec::new();
    if !t.has(tf::ON) {
        flags.push(b"off");
    } else {
        flags.push(b"on");
        if t.has(tf::BCAST) {
            flags.push(b"bcast");
        }
        if t.has(tf::OPTIN) {
            flags.push(b"optin");
            if t.has(tf::CACHING) {
                flags.push(b"caching-yes");
            }
        }
        if t.has(tf::OPTOUT) {
            flags.push(b"optout");
            if t.has(tf::CACHING) {
                flags.push(b"caching-no");
            }
        }
        if t.has(tf::NOLOOP) {
            flags.push(b"noloop");
        }
        if t.has(tf::BROKEN_REDIR) {
            flags.push(b"broken_redirect");
        }
    }
    let out = &mut *cx.out;
    encode::map(out, 3, proto);
    encode::bulk(out, b"flags");
    encode::set(out, flags.len(), proto);
    for f in flags {
        encode::bulk(out, f);
    }
    encode::bulk(out, b"redirect");
    encode::integer(out, redirect_of(&info));
    encode::bulk(out, b"prefixes");
    let prefixes = t.prefixes.lock();
    encode::array(out, prefixes.len());
    for p in prefixes.iter() {
        encode::bulk(out, p);
    }
    Ok(())
}
