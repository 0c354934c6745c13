//! SLOWLOG GET [count] / LEN / RESET / HELP (the log: `crate::observe::slowlog`).

use super::error::{self, CmdError, CmdResult};
use super::table::Registry;
use super::Ctx;

pub(super) fn register(r: &mut Registry) {
    r.add("slowlog|get", slowlog_get);
    r.add("slowlog|len", slowlog_len);
    r.add("slowlog|reset", slowlog_reset);
    r.add("slowlog|help", slowlog_help);
}

/// SLOWLOG GET [count]: the newest `count` entries (10; -1: all), each
/// [id, unix time, microseconds, [args...], client addr, client name].
fn slowlog_get(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    if argv.len() > 3 {
        return Err(error::subcommand_syntax(argv));
    }
    let log = &cx.server.slowlog;
    let count = match argv.get(2) {
        None => 10,
        Some(a) => match resp::parse_i64(a) {
            Some(-1) => usize::MAX,
            Some(n) if n >= 0 => n as usize,
            _ => {
                return Err(CmdError::new(
                    "ERR count should be greater than or equal to -1",
                ))
            }
        },
    };
    let entries = log.newest(count);
    cx.array(entries.len());
    for e in entries {
        cx.array(6);
        cx.int(e.id as i64);
        cx.int(e.time as i64);
        cx.int(e.duration as i64);
        cx.array(e.argv.len());
        for a in &e.argv {
            cx.bulk(a);
        }
        cx.bulk(e.peer.as_bytes());
        cx.bulk(&e.name);
    }
    Ok(())
}

/// SLOWLOG LEN
fn slowlog_len(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let n = cx.server.slowlog.len();
    cx.int(n as i64);
    Ok(())
}

/// SLOWLOG RESET (the ids keep counting, as Redis's).
fn slowlog_reset(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.server.slowlog.reset();
    cx.ok();
    Ok(())
}

/// SLOWLOG HELP
fn slowlog_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.help(&[
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        "HELP",
        "    Prints this help.",
    ]);
    Ok(())
}
