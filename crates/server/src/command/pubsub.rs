//! Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH,
//! PUBSUB. Delivery and limits live in `crate::clients::pubsub`.

use std::sync::atomic::Ordering::Relaxed;

use resp::encode;

use super::error::CmdResult;
use super::table::{flag, Registry};
use super::Ctx;
use crate::client::PubSubState;
use crate::clients::pubsub::Kind;

pub(super) fn register(r: &mut Registry) {
    r.add_flagged("subscribe", subscribe, flag::SUBSCRIBED_OK);
    r.add_flagged("psubscribe", psubscribe, flag::SUBSCRIBED_OK);
    r.add_flagged("ssubscribe", ssubscribe, flag::SUBSCRIBED_OK);
    r.add_flagged("unsubscribe", unsubscribe, flag::SUBSCRIBED_OK);
    r.add_flagged("punsubscribe", punsubscribe, flag::SUBSCRIBED_OK);
    r.add_flagged("sunsubscribe", sunsubscribe, flag::SUBSCRIBED_OK);
    r.add("publish", publish);
    r.add("spublish", spublish);
    r.add("pubsub|channels", pubsub_channels);
    r.add("pubsub|numsub", pubsub_numsub);
    r.add("pubsub|numpat", pubsub_numpat);
    r.add("pubsub|shardchannels", pubsub_shardchannels);
    r.add("pubsub|shardnumsub", pubsub_shardnumsub);
    r.add("pubsub|help", pubsub_help);
}

fn state<'c>(cx: &'c mut Ctx) -> &'c mut PubSubState {
    cx.client.pubsub.get_or_insert_with(Default::default)
}

fn list_of(ps: &mut PubSubState, kind: Kind) -> &mut Vec<Vec<u8>> {
    match kind {
        Kind::Channel => &mut ps.channels,
        Kind::Pattern => &mut ps.patterns,
        Kind::Shard => &mut ps.shard_channels,
    }
}

/// The count Redis reports after a (un)subscription: channels + patterns,
/// or shard channels alone for the shard commands.
fn count(ps: &PubSubState, kind: Kind) -> usize {
    match kind {
        Kind::Shard => ps.shard_channels.len(),
        _ => ps.channels.len() + ps.patterns.len(),
    }
}

fn confirm(out: &mut Vec<u8>, proto: u8, what: &[u8], name: Option<&[u8]>, n: usize) {
    encode::push(out, 3, proto);
    encode::bulk(out, what);
    match name {
        Some(n) => encode::bulk(out, n),
        None => encode::null(out, proto),
    }
    encode::integer(out, n as i64);
}

fn subscribe_generic(cx: &mut Ctx, argv: &[&[u8]], kind: Kind, what: &[u8]) -> CmdResult {
    let proto = cx.client.proto;
    let server = cx.server;
    let info = cx.client.info.clone();
    let mut out = Vec::new();
    let ps = state(cx);
    for name in &argv[1..] {
        let list = list_of(ps, kind);
        if !list.iter().any(|c| c == name) {
            list.push(name.to_vec());
            server.pubsub.subscribe(kind, name, &info);
        }
        confirm(&mut out, proto, what, Some(name), count(ps, kind));
    }
    cx.out.extend_from_slice(&out);
    cx.pushing = true;
    publish_counts(cx.client);
    Ok(())
}

/// The client's subscription counts, for other clients' CLIENT LIST and
/// tracking redirects.
fn publish_counts(client: &crate::client::Client) {
    let info = &client.info;
    let (c, p, s) = client.pubsub.as_ref().map_or((0, 0, 0), |ps| {
        (
            ps.channels.len(),
            ps.patterns.len(),
            ps.shard_channels.len(),
        )
    });
    info.sub_counts[0].store(c as u32, Relaxed);
    info.sub_counts[1].store(p as u32, Relaxed);
    info.sub_counts[2].store(s as u32, Relaxed);
    info.subscribed.store(c + p + s > 0, Relaxed);
}

fn unsubscribe_generic(cx: &mut Ctx, argv: &[&[u8]], kind: Kind, what: &[u8]) -> CmdResult {
    let proto = cx.client.proto;
    let server = cx.server;
    let info = cx.client.info.clone();
    let mut out = Vec::new();
    let ps = state(cx);
    let names: Vec<Vec<u8>> = if argv.len() > 1 {
        argv[1..].iter().map(|a| a.to_vec()).collect()
    } else {
        list_of(ps, kind).clone()
    };
    if names.is_empty() {
        confirm(&mut out, proto, what, None, count(ps, kind));
    }
    for name in &names {
        let list = list_of(ps, kind);
        if let Some(i) = list.iter().position(|c| c == name) {
            list.remove(i);
            server.pubsub.unsubscribe(kind, name, &info);
        }
        confirm(&mut out, proto, what, Some(name), count(ps, kind));
    }
    cx.out.extend_from_slice(&out);
    cx.pushing = true;
    publish_counts(cx.client);
    Ok(())
}

/// Drops every subscription of a closing or RESET client.
pub fn unsubscribe_all(server: &crate::server::Server, client: &mut crate::client::Client) {
    client.info.subscribed.store(false, Relaxed);
    for n in &client.info.sub_counts {
        n.store(0, Relaxed);
    }
    if let Some(ps) = client.pubsub.take() {
        for c in &ps.channels {
            server.pubsub.unsubscribe(Kind::Channel, c, &client.info);
        }
        for p in &ps.patterns {
            server.pubsub.unsubscribe(Kind::Pattern, p, &client.info);
        }
        for c in &ps.shard_channels {
            server.pubsub.unsubscribe(Kind::Shard, c, &client.info);
        }
    }
}

/// SUBSCRIBE channel [channel ...]
fn subscribe(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    subscribe_generic(cx, argv, Kind::Channel, b"subscribe")
}

/// PSUBSCRIBE pattern [pattern ...]
fn psubscribe(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    subscribe_generic(cx, argv, Kind::Pattern, b"psubscribe")
}

/// SSUBSCRIBE shardchannel [shardchannel ...]
fn ssubscribe(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    subscribe_generic(cx, argv, Kind::Shard, b"ssubscribe")
}

/// UNSUBSCRIBE [channel [channel ...]]
fn unsubscribe(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    unsubscribe_generic(cx, argv, Kind::Channel, b"unsubscribe")
}

/// PUNSUBSCRIBE [pattern [pattern ...]]
fn punsubscribe(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    unsubscribe_generic(cx, argv, Kind::Pattern, b"punsubscribe")
}

/// SUNSUBSCRIBE [shardchannel [shardchannel ...]]
fn sunsubscribe(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    unsubscribe_generic(cx, argv, Kind::Shard, b"sunsubscribe")
}

/// PUBLISH channel message
fn publish(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let n = cx.server.pubsub.publish(false, argv[1], argv[2]);
    cx.int(n as i64);
    to_replicas(cx, argv);
    Ok(())
}

/// SPUBLISH shardchannel message
fn spublish(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let n = cx.server.pubsub.publish(true, argv[1], argv[2]);
    cx.int(n as i64);
    to_replicas(cx, argv);
    Ok(())
}

/// A message also goes to the replicas (not the log), whose subscribers
/// get it too, as Redis's forceCommandPropagation(PROPAGATE_REPL).
fn to_replicas(cx: &mut Ctx, argv: &[&[u8]]) {
    let repl = &cx.server.repl;
    if repl.takes_own_writes() && !cx.client.from_primary {
        let record = (cx.client.db, argv.iter().map(|a| a.to_vec()).collect());
        cx.client.repl_offset = repl.feed_records(&[record]);
    }
}

fn channels_reply(cx: &mut Ctx, argv: &[&[u8]], shard: bool) -> CmdResult {
    if argv.len() > 3 {
        return Err(super::error::subcommand_syntax(argv));
    }
    let list = cx.server.pubsub.channels(shard, argv.get(2).copied());
    cx.array(list.len());
    for c in &list {
        cx.bulk(c);
    }
    Ok(())
}

/// PUBSUB CHANNELS [pattern]
fn pubsub_channels(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    channels_reply(cx, argv, false)
}

/// PUBSUB SHARDCHANNELS [pattern]
fn pubsub_shardchannels(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    channels_reply(cx, argv, true)
}

/// A flat array of channel/count pairs, in RESP3 too (as Redis).
fn numsub_reply(cx: &mut Ctx, argv: &[&[u8]], shard: bool) -> CmdResult {
    cx.array(2 * (argv.len() - 2));
    for c in &argv[2..] {
        let n = cx.server.pubsub.numsub(shard, c);
        cx.bulk(c);
        cx.int(n as i64);
    }
    Ok(())
}

/// PUBSUB NUMSUB [channel [channel ...]]
fn pubsub_numsub(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    numsub_reply(cx, argv, false)
}

/// PUBSUB SHARDNUMSUB [shardchannel [shardchannel ...]]
fn pubsub_shardnumsub(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    numsub_reply(cx, argv, true)
}

/// PUBSUB NUMPAT
fn pubsub_numpat(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let n = cx.server.pubsub.numpat();
    cx.int(n as i64);
    Ok(())
}

/// PUBSUB HELP
fn pubsub_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.help(&[
        "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CHANNELS [<pattern>]",
        "    Return the currently active channels matching a <pattern> (default: '*').",
        "NUMPAT",
        "    Return number of subscriptions to patterns.",
        "NUMSUB [<channel> ...]",
        "    Return the number of subscribers for the specified channels, excluding",
        "    pattern subscriptions(default: no channels).",
        "SHARDCHANNELS [<pattern>]",
        "    Return the currently active shard level channels matching a <pattern> (default: '*').",
        "SHARDNUMSUB [<shardchannel> ...]",
        "    Return the number of subscribers for the specified shard level channel(s)",
        "HELP",
        "    Prints this help.",
    ]);
    Ok(())
}
