//! LATENCY LATEST / HISTORY / RESET / DOCTOR / GRAPH / HELP (the monitor:
//! `crate::observe::latency`), and LATENCY HISTOGRAM (the per-command latency
//! histograms of `crate::observe::stats`).

use super::error::{CmdError, CmdResult};
use super::table::Registry;
use super::Ctx;
use crate::observe::latency;

pub(super) fn register(r: &mut Registry) {
    r.add("latency|latest", latency_latest);
    r.add("latency|history", latency_history);
    r.add("latency|reset", latency_reset);
    r.add("latency|doctor", latency_doctor);
    r.add("latency|graph", latency_graph);
    r.add("latency|help", latency_help);
    r.add("latency|histogram", latency_histogram);
}

/// LATENCY HISTOGRAM [command ...]: per command with a histogram (all of
/// them, or those named and their subcommands; unknown names are
/// skipped), its calls and the cumulative distribution over power-of-two
/// microsecond buckets (Redis's latency*FillCDF).
fn latency_histogram(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let hists = cx.server.stats.histograms();
    let all = cx.server.commands.all();
    let mut chosen: Vec<usize> = Vec::new();
    if argv.len() == 2 {
        chosen = hists.iter().map(|(id, _)| *id).collect();
    } else {
        for name in &argv[2..] {
            let name = String::from_utf8_lossy(name).to_ascii_lowercase();
            let prefix = format!("{name}|");
            for (id, _) in &hists {
                let Some(cmd) = all.get(*id) else { continue };
                if cmd.name == name || cmd.name.starts_with(&prefix) {
                    chosen.push(*id);
                }
            }
        }
    }
    cx.map(chosen.len());
    for id in chosen {
        let Some((_, h)) = hists.iter().find(|(i, _)| *i == id) else {
            continue;
        };
        let name = all.get(id).map_or("", |c| c.name.as_str());
        cx.bulk(name.as_bytes());
        cx.map(2);
        cx.bulk(b"calls");
        cx.int(h.len() as i64);
        cx.bulk(b"histogram_usec");
        let buckets = crate::observe::stats::cumulative_buckets(h);
        cx.map(buckets.len());
        for (usec, count) in buckets {
            cx.int(usec as i64);
            cx.int(count as i64);
        }
    }
    Ok(())
}

fn now_secs() -> u64 {
    super::unix_ms() / 1000
}

/// LATENCY LATEST: per event [name, time of the latest sample, its ms,
/// the all-time high ms].
fn latency_latest(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let events = cx.server.latency.snapshot();
    cx.array(events.len());
    for (name, series) in &events {
        let last = series.latest();
        cx.array(4);
        cx.bulk(name.as_bytes());
        cx.int(last.time as i64);
        cx.int(last.latency as i64);
        cx.int(series.max as i64);
    }
    Ok(())
}

/// LATENCY HISTORY event: [[time, ms]...], oldest first (empty for an
/// unknown event).
fn latency_history(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let samples = cx
        .server
        .latency
        .series(argv[2])
        .map(|(_, s)| s.samples())
        .unwrap_or_default();
    cx.array(samples.len());
    for s in samples {
        cx.array(2);
        cx.int(s.time as i64);
        cx.int(s.latency as i64);
    }
    Ok(())
}

/// LATENCY RESET [event ...]: how many events were reset.
fn latency_reset(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let m = &cx.server.latency;
    let n = if argv.len() == 2 {
        m.reset(None)
    } else {
        argv[2..].iter().map(|e| m.reset(Some(e))).sum()
    };
    cx.int(n as i64);
    Ok(())
}

/// LATENCY DOCTOR: the human-readable report (a verbatim string in RESP3).
fn latency_doctor(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let events = cx.server.latency.snapshot();
    let cfg = {
        let c = cx.server.settings();
        latency::ReportConfig {
            threshold_ms: cx.server.latency.threshold_ms(),
            slowlog_slower_than: cx.server.slowlog.slower_than(),
            appendfsync_always: c.appendfsync == crate::persistence::aof::Fsync::Always,
            hz: c.hz,
        }
    };
    let text = latency::report(&events, &cfg, now_secs());
    cx.verbatim(text.as_bytes());
    Ok(())
}

/// LATENCY GRAPH event: an ASCII sparkline of the event's samples.
fn latency_graph(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let Some((name, series)) = cx.server.latency.series(argv[2]) else {
        return Err(CmdError::new(format!(
            "ERR No samples available for event '{}'",
            String::from_utf8_lossy(argv[2])
        )));
    };
    let text = latency::graph(&name, &series, now_secs());
    cx.verbatim(text.as_bytes());
    Ok(())
}

/// LATENCY HELP (Redis 7.0's text, HISTOGRAM included).
fn latency_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.help(&[
        "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
        "    If no commands are specified then all histograms are replied.",
        "HELP",
        "    Prints this help.",
    ]);
    Ok(())
}
