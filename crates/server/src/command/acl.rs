//! AUTH and ACL: the commands over `crate::acl`, with Redis 7.0's replies
//! and error texts; and the refusals every other command path reports
//! (dispatch's gate, EXEC, scripts) with their ACL LOG entries.

use std::sync::Arc;

use super::error::{self, CmdError};
use super::table::{Command, Registry};
use super::{args, CmdResult, Ctx};
use crate::acl::log::{Context, Entry, Reason};
use crate::acl::{self, Denied, UserCell};
use crate::client::Client;
use crate::server::Server;

pub(super) fn register(r: &mut Registry) {
    r.add("auth", auth);
    r.add("acl|setuser", setuser);
    r.add("acl|getuser", getuser);
    r.add("acl|deluser", deluser);
    r.add("acl|list", list);
    r.add("acl|users", users);
    r.add("acl|whoami", whoami);
    r.add("acl|cat", cat);
    r.add("acl|genpass", genpass);
    r.add("acl|log", log);
    r.add("acl|save", save);
    r.add("acl|load", load);
    r.add("acl|dryrun", dryrun);
    r.add("acl|help", help);
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

/// The NOPERM reply of a command refused by dispatch's gate (`user`: the
/// client's user, which Redis 7.2 names).
pub fn denied_error(cmd: &Command, d: Denied, user: &[u8]) -> CmdError {
    if crate::speaks_7_4() {
        return CmdError::new(match d {
            Denied::Command => format!(
                "NOPERM User {} has no permissions to run the '{}' command",
                args::lossy(user),
                cmd.name
            ),
            Denied::Key(_) => "NOPERM No permissions to access a key".to_string(),
            Denied::Channel(_) => "NOPERM No permissions to access a channel".to_string(),
        });
    }
    match d {
        Denied::Command => CmdError::new(format!(
            "NOPERM this user has no permissions to run the '{}' command",
            cmd.name
        )),
        Denied::Key(_) => CmdError::new(
            "NOPERM this user has no permissions to access one of the keys used as arguments",
        ),
        Denied::Channel(_) => CmdError::new(
            "NOPERM this user has no permissions to access one of the channels used as arguments",
        ),
    }
}

/// The NOPERM reply of a queued command EXEC finds no longer allowed.
pub fn exec_denied_error(d: Denied) -> CmdError {
    let reason = match d {
        Denied::Command => "no permission to execute the command or subcommand",
        Denied::Key(_) => "no permission to touch the specified keys",
        Denied::Channel(_) => "no permission to access one of the channels used as arguments",
    };
    CmdError::new(format!(
        "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}"
    ))
}

/// The error a script's `redis.call` raises for a refused command.
pub fn script_denied_message(d: Denied) -> &'static str {
    match d {
        Denied::Command => "The user executing the script can't run this command or subcommand",
        Denied::Key(_) => "The user executing the script can't access at least one of the keys mentioned in the command arguments",
        Denied::Channel(_) => {
            "The user executing the script can't publish to the channel mentioned in the command"
        }
    }
}

/// Checks `cmd` against the client's user; a refusal is logged.
#[inline]
pub fn check(
    server: &Server,
    client: &Client,
    cmd: &Command,
    argv: &[&[u8]],
    context: Context,
) -> Result<(), Denied> {
    let Some(rules) = &client.auth.rules else {
        return Ok(());
    };
    let r = rules.check(cmd, argv);
    if let Err(d) = r {
        log_denied(server, client, cmd, argv, d, context);
    }
    r
}

#[cold]
fn log_denied(
    server: &Server,
    client: &Client,
    cmd: &Command,
    argv: &[&[u8]],
    d: Denied,
    context: Context,
) {
    let (reason, object) = match d {
        Denied::Command => (Reason::Command, cmd.name.as_bytes().to_vec()),
        Denied::Key(p) => (Reason::Key, argv.get(p).map_or(Vec::new(), |a| a.to_vec())),
        Denied::Channel(p) => (
            Reason::Channel,
            argv.get(p).map_or(Vec::new(), |a| a.to_vec()),
        ),
    };
    add_log(
        server,
        client,
        reason,
        context,
        object,
        client.auth.user_name().to_vec(),
    );
}

fn add_log(
    server: &Server,
    client: &Client,
    reason: Reason,
    context: Context,
    object: Vec<u8>,
    username: Vec<u8>,
) {
    let entry = Entry {
        count: 1,
        reason,
        context,
        object,
        username,
        ctime_ms: super::unix_ms(),
        client_info: super::connection::describe(server, &client.info)
            .trim_end()
            .to_string(),
    };
    let max = server.settings().acllog_max_len;
    server.acl.log.lock().add(entry, max);
}

/// Logs a failed authentication: the command name typed and the user
/// tried.
fn log_auth_failure(server: &Server, client: &Client, typed: &[u8], username: &[u8]) {
    let context = if client.tx.is_some() {
        Context::Multi
    } else {
        Context::Toplevel
    };
    add_log(
        server,
        client,
        Reason::Auth,
        context,
        typed.to_vec(),
        username.to_vec(),
    );
}

/// Authenticates the connection as `user` with `password` (AUTH, HELLO
/// AUTH); a failure is logged and answered WRONGPASS.
pub fn authenticate(
    cx: &mut Ctx,
    typed: &[u8],
    user: &[u8],
    password: &[u8],
) -> Result<(), CmdError> {
    match cx.server.acl.check_credentials(user, password) {
        Some(cell) => {
            cx.client.login(&cx.server.acl, cell);
            Ok(())
        }
        None => {
            log_auth_failure(cx.server, cx.client, typed, user);
            Err(CmdError::new(WRONGPASS))
        }
    }
}

/// AUTH [username] password
fn auth(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len() > 3 {
        return Err(error::SYNTAX);
    }
    let (user, password): (&[u8], &[u8]) = if argv.len() == 2 {
        if cx.server.acl.default_user().nopass {
            return Err(CmdError::new("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"));
        }
        (b"default", argv[1])
    } else {
        (argv[1], argv[2])
    };
    authenticate(cx, argv[0], user, password)?;
    cx.ok();
    Ok(())
}

/// Closes the connections of users that are gone (Redis's
/// ACLFreeUserAndKillClients); the calling connection closes after its
/// reply.
fn kill_clients_of(cx: &mut Ctx, gone: &[Arc<UserCell>]) {
    if gone.is_empty() {
        return;
    }
    let names: Vec<&[u8]> = gone.iter().map(|c| c.name.as_slice()).collect();
    let me = cx.client.info.id;
    let mut close_me = false;
    cx.server.clients.kill_where(|c| {
        let hit = names.contains(&c.user.lock().as_slice());
        if hit && c.id == me {
            close_me = true;
            return false;
        }
        hit
    });
    if close_me
        || cx
            .client
            .auth
            .user
            .as_ref()
            .is_some_and(|u| acl::Acl::is_deleted(u))
    {
        cx.client.logout(&cx.server.acl);
        cx.client.auth.authenticated = false;
        cx.close_after_reply();
    }
}

/// ACL SETUSER username [rule ...]
fn setuser(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let name = argv[2];
    if acl::has_spaces(name) {
        return Err(CmdError::new(
            "ERR Usernames can't contain spaces or null characters",
        ));
    }
    let ops = acl::merge_selector_args(&argv[3..]).map_err(|i| {
        CmdError::new(format!(
            "ERR Unmatched parenthesis in acl selector starting at '{}'.",
            args::lossy(argv[3 + i])
        ))
    })?;
    let cat = &cx.server.commands.acl;
    let (old, new) = cx.server.acl.set_user(cat, name, &ops).map_err(|(op, e)| {
        CmdError::new(format!(
            "ERR Error in ACL SETUSER modifier '{}': {}",
            args::lossy(&op),
            e.message()
        ))
    })?;
    if let Some(old) = old {
        kill_pubsub_clients(cx, &old, &new);
    }
    cx.ok();
    Ok(())
}

/// Redis's ACLKillPubsubClientsIfNeeded: when a user's channels shrink,
/// its pub/sub connections subscribed to what is no longer allowed close.
fn kill_pubsub_clients(cx: &mut Ctx, old: &acl::User, new: &acl::User) {
    if new.all_channels() {
        return;
    }
    let upcoming: Vec<&Vec<u8>> = new.channel_patterns().collect();
    if !old.all_channels() && old.channel_patterns().all(|p| upcoming.contains(&p)) {
        return;
    }
    let allowed = |ch: &[u8], literal: bool| {
        upcoming.iter().any(|p| {
            if literal {
                p.as_slice() == ch
            } else {
                crate::glob::matches(p, ch, false)
            }
        })
    };
    let me = cx.client.info.id;
    let violating = cx.server.pubsub.clients_violating(&allowed);
    let mut close_me = false;
    cx.server.clients.kill_where(|c| {
        let hit = violating.contains(&c.id) && c.user.lock().as_slice() == new.name.as_slice();
        if hit && c.id == me {
            close_me = true;
            return false;
        }
        hit
    });
    if close_me {
        cx.close_after_reply();
    }
}

/// ACL GETUSER username
fn getuser(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let Some(cell) = cx.server.acl.get(argv[2]) else {
        cx.null();
        return Ok(());
    };
    let u = cell.rules();
    let cat = &cx.server.commands.acl;
    cx.map(6);
    cx.bulk(b"flags");
    let flags = u.flags();
    cx.set(flags.len());
    for f in flags {
        cx.bulk(f.as_bytes());
    }
    cx.bulk(b"passwords");
    cx.array(u.passwords.len());
    for p in &u.passwords {
        cx.bulk(p.as_bytes());
    }
    let selector = |cx: &mut Ctx, s: &acl::Selector| {
        cx.bulk(b"commands");
        cx.bulk(&s.describe_commands(cat));
        cx.bulk(b"keys");
        cx.bulk(&s.describe_keys());
        cx.bulk(b"channels");
        cx.bulk(&s.describe_channels());
    };
    selector(cx, &u.selectors[0]);
    cx.bulk(b"selectors");
    cx.array(u.selectors.len() - 1);
    for s in &u.selectors[1..] {
        cx.map(3);
        selector(cx, s);
    }
    Ok(())
}

/// ACL DELUSER username [username ...]
fn deluser(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv[2..].iter().any(|n| *n == b"default") {
        return Err(CmdError::new("ERR The 'default' user cannot be removed"));
    }
    let gone = cx.server.acl.delete_users(&argv[2..]);
    kill_clients_of(cx, &gone);
    cx.int(gone.len() as i64);
    Ok(())
}

/// ACL LIST
fn list(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let text = acl::file_text(&cx.server.acl, &cx.server.commands.acl);
    let lines: Vec<&[u8]> = text
        .split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    cx.array(lines.len());
    for l in lines {
        cx.bulk(l);
    }
    Ok(())
}

/// ACL USERS
fn users(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let all = cx.server.acl.all();
    cx.array(all.len());
    for u in all {
        cx.bulk(&u.name);
    }
    Ok(())
}

/// ACL WHOAMI
fn whoami(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let name = cx.client.auth.user_name().to_vec();
    cx.bulk(&name);
    Ok(())
}

/// ACL CAT [category]
fn cat(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    use crate::acl::catalog::category;
    match argv.get(2) {
        None => {
            cx.array(category::NAMES.len());
            for n in category::NAMES {
                cx.bulk(n.as_bytes());
            }
        }
        Some(name) => {
            let bit = std::str::from_utf8(name)
                .ok()
                .filter(|n| !n.starts_with('@'))
                .map_or(0, category::from_name);
            if bit == 0 {
                return Err(CmdError::new(format!(
                    "ERR Unknown category '{}'",
                    error::truncate(name, 128)
                )));
            }
            let names: Vec<&str> = cx.server.commands.acl.in_category(bit).collect();
            let names: Vec<Vec<u8>> = names.iter().map(|n| n.as_bytes().to_vec()).collect();
            cx.array(names.len());
            for n in names {
                cx.bulk(&n);
            }
        }
    }
    Ok(())
}

/// ACL GENPASS [bits]
fn genpass(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    use rand::RngCore;
    const MAX_BITS: i64 = 4096;
    let bits = match argv.get(2) {
        Some(a) => args::int(a)?,
        None => 256,
    };
    if bits <= 0 || bits > MAX_BITS {
        return Err(CmdError::new(format!(
            "ERR ACL GENPASS argument must be the number of bits for the output password, a positive number up to {MAX_BITS}"
        )));
    }
    let chars = ((bits + 3) / 4) as usize;
    let mut bytes = vec![0u8; chars.div_ceil(2)];
    // The operating system's generator: these are passwords.
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    let mut hex = Vec::with_capacity(chars + 1);
    for b in bytes {
        hex.push(b"0123456789abcdef"[(b >> 4) as usize]);
        hex.push(b"0123456789abcdef"[(b & 15) as usize]);
    }
    hex.truncate(chars);
    cx.bulk(&hex);
    Ok(())
}

/// ACL LOG [count | RESET]
fn log(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len() > 3 {
        return Err(super::error::subcommand_syntax(argv));
    }
    let mut count = 10i64;
    if let Some(a) = argv.get(2) {
        if a.eq_ignore_ascii_case(b"reset") {
            cx.server.acl.log.lock().reset();
            cx.ok();
            return Ok(());
        }
        count = args::int(a)?.max(0);
    }
    let now = super::unix_ms();
    let proto = cx.proto();
    let log = cx.server.acl.log.lock();
    let n = (count as usize).min(log.len());
    let mut out = Vec::new();
    resp::encode::array(&mut out, n);
    for e in log.entries().take(n) {
        resp::encode::map(&mut out, 7, proto);
        resp::encode::bulk(&mut out, b"count");
        resp::encode::integer(&mut out, e.count as i64);
        resp::encode::bulk(&mut out, b"reason");
        resp::encode::bulk(&mut out, e.reason.name().as_bytes());
        resp::encode::bulk(&mut out, b"context");
        resp::encode::bulk(&mut out, e.context.name().as_bytes());
        resp::encode::bulk(&mut out, b"object");
        resp::encode::bulk(&mut out, &e.object);
        resp::encode::bulk(&mut out, b"username");
        resp::encode::bulk(&mut out, &e.username);
        resp::encode::bulk(&mut out, b"age-seconds");
        let age = now.saturating_sub(e.ctime_ms) as f64 / 1000.0;
        crate::num::double::reply_double(&mut out, age, proto);
        resp::encode::bulk(&mut out, b"client-info");
        resp::encode::bulk(&mut out, e.client_info.as_bytes());
    }
    drop(log);
    cx.out.extend_from_slice(&out);
    Ok(())
}

const NO_ACLFILE: &str = "ERR This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";

fn aclfile(cx: &Ctx) -> Result<String, CmdError> {
    cx.server
        .config
        .read()
        .settings()
        .aclfile
        .clone()
        .ok_or_else(|| CmdError::new(NO_ACLFILE))
}

/// ACL SAVE
fn save(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let path = aclfile(cx)?;
    let text = acl::file_text(&cx.server.acl, &cx.server.commands.acl);
    crate::persistence::atomic_file::write(std::path::Path::new(&path), "tmp", &text).map_err(|e| {
        tracing::warn!("ACL SAVE: writing {path}: {e}");
        CmdError::new("ERR There was an error trying to save the ACLs. Please check the server logs for more information")
    })?;
    cx.ok();
    Ok(())
}

/// ACL LOAD
fn load(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let path = aclfile(cx)?;
    let gone = load_file(cx.server, &path).map_err(|e| CmdError::new(format!("ERR {e}")))?;
    kill_clients_of(cx, &gone);
    cx.ok();
    Ok(())
}

/// Replaces every user with the ACL file's, all or nothing (Redis's
/// ACLLoadFromFile); returns the users that are gone.
pub fn load_file(server: &Server, path: &str) -> Result<Vec<Arc<UserCell>>, String> {
    let text = std::fs::read(path)
        .map_err(|e| format!("Error loading ACLs, opening file '{path}': {e}"))?;
    // Lines split on single spaces, as Redis splits them (no quoting).
    let lines: Vec<(usize, Vec<Vec<u8>>)> = text
        .split(|&c| c == b'\n')
        .enumerate()
        .filter_map(|(i, line)| {
            let line = trim(line, b" \t\r\n");
            if line.is_empty() {
                return None;
            }
            let args = line
                .split(|&c| c == b' ')
                .map(|a| trim(a, b"\t\r\n").to_vec())
                .collect();
            Some((i + 1, args))
        })
        .collect();
    let cat = &server.commands.acl;
    let pubsub_all = server
        .acl
        .pubsub_all
        .load(std::sync::atomic::Ordering::Relaxed);
    let users = acl::parse_users(cat, &lines, pubsub_all, Some(path)).map_err(|e| {
        format!("{e}WARNING: ACL errors detected, no change to the previously active ACL rules was performed")
    })?;
    Ok(server.acl.replace_all(users, cat))
}

fn trim<'a>(s: &'a [u8], set: &[u8]) -> &'a [u8] {
    let start = s.iter().position(|c| !set.contains(c)).unwrap_or(s.len());
    let end = s
        .iter()
        .rposition(|c| !set.contains(c))
        .map_or(start, |e| e + 1);
    &s[start..end]
}

/// ACL DRYRUN username command [arg ...]
fn dryrun(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let Some(cell) = cx.server.acl.get(argv[2]) else {
        return Err(CmdError::new(format!(
            "ERR User '{}' not found",
            args::lossy(argv[2])
        )));
    };
    let cmd_argv = &argv[3..];
    let cmd = match super::lookup(&cx.server.commands, cmd_argv) {
        Ok(cmd) => cmd,
        Err(super::Unresolved::Arity(cmd)) => return Err(super::error::wrong_arity(&cmd.name)),
        Err(_) => {
            return Err(CmdError::new(format!(
                "ERR Command '{}' not found",
                args::lossy(argv[3])
            )))
        }
    };
    // Redis 7.2 names the user where 7.0 said "This user".
    let who = if crate::speaks_7_4() {
        format!("User {}", args::lossy(argv[2]))
    } else {
        "This user".to_string()
    };
    match cell.rules().check(cmd, cmd_argv) {
        Ok(()) => cx.ok(),
        Err(Denied::Command) => cx
            .bulk(format!("{who} has no permissions to run the '{}' command", cmd.name).as_bytes()),
        Err(Denied::Key(p)) => cx.bulk(
            format!(
                "{who} has no permissions to access the '{}' key",
                args::lossy(cmd_argv[p])
            )
            .as_bytes(),
        ),
        Err(Denied::Channel(p)) => cx.bulk(
            format!(
                "{who} has no permissions to access the '{}' channel",
                args::lossy(cmd_argv[p])
            )
            .as_bytes(),
        ),
    }
    Ok(())
}

/// ACL HELP
fn help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.help(&[
        "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CAT [<category>]",
        "    List all commands that belong to <category>, or all command categories",
        "    when no category is specified.",
        "DELUSER <username> [<username> ...]",
        "    Delete a list of users.",
        "DRYRUN <username> <command> [<arg> ...]",
        "    Returns whether the user can execute the given command without executing the command.",
        "GETUSER <username>",
        "    Get the user's details.",
        "GENPASS [<bits>]",
        "    Generate a secure 256-bit user password. The optional `bits` argument can",
        "    be used to specify a different size.",
        "LIST",
        "    Show users details in config file format.",
        "LOAD",
        "    Reload users from the ACL file.",
        "LOG [<count> | RESET]",
        "    Show the ACL log entries.",
        "SAVE",
        "    Save the current config to the ACL file.",
        "SETUSER <username> <attribute> [<attribute> ...]",
        "    Create or modify a user with the specified attributes.",
        "USERS",
        "    List all the registered usernames.",
        "WHOAMI",
        "    Return the current connection username.",
        "HELP",
        "    Prints this help.",
    ]);
    Ok(())
}
