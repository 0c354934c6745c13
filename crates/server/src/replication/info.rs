//! INFO replication, field for field as Redis 7.0's.

use std::fmt::Write;
use std::sync::atomic::Ordering::Relaxed;

use super::{LINK_SYNC, LINK_UP};
use crate::server::Server;

pub fn section(server: &Server) -> String {
    let repl = &server.repl;
    let mut o = String::from("# Replication\r\n");
    let now_ms = crate::command::unix_ms();
    let secs_since = |ms: u64| (now_ms.saturating_sub(ms) / 1000) as i64;
    match repl.primary() {
        None => o.push_str("role:master\r\n"),
        Some(p) => {
            let state = repl.link_state.load(Relaxed);
            let up = state == LINK_UP;
            let offset = repl.offset();
            let last_io = if up {
                secs_since(repl.link_last_io_ms.load(Relaxed))
            } else {
                -1
            };
            let _ = write!(
                o,
                "role:slave\r\nmaster_host:{}\r\nmaster_port:{}\r\nmaster_link_status:{}\r\nmaster_last_io_seconds_ago:{last_io}\r\nmaster_sync_in_progress:{}\r\nslave_read_repl_offset:{offset}\r\nslave_repl_offset:{offset}\r\n",
                p.host,
                p.port,
                if up { "up" } else { "down" },
                u8::from(state == LINK_SYNC),
            );
            if state == LINK_SYNC {
                let total = repl.sync_total.load(Relaxed);
                let read = repl.sync_read.load(Relaxed) as i64;
                let (total, left, perc) = if total < 0 {
                    (-1, -1, 0.0)
                } else {
                    let perc = if total > 0 {
                        read as f64 * 100.0 / total as f64
                    } else {
                        0.0
                    };
                    (total, total - read, perc)
                };
                let _ = write!(
                    o,
                    "master_sync_total_bytes:{total}\r\nmaster_sync_read_bytes:{read}\r\nmaster_sync_left_bytes:{left}\r\nmaster_sync_perc:{perc:.2}\r\nmaster_sync_last_io_seconds_ago:{}\r\n",
                    secs_since(repl.link_last_io_ms.load(Relaxed)),
                );
            }
            if !up {
                let since = repl.link_down_since_ms.load(Relaxed);
                let v = if since == 0 { -1 } else { secs_since(since) };
                let _ = write!(o, "master_link_down_since_seconds:{v}\r\n");
            }
            let c = server.settings();
            let _ = write!(
                o,
                "slave_priority:{}\r\nslave_read_only:{}\r\nreplica_announced:{}\r\n",
                c.replica_priority,
                u8::from(c.replica_read_only),
                u8::from(c.replica_announced),
            );
        }
    }
    let replicas = repl.replicas.read().clone();
    let _ = write!(o, "connected_slaves:{}\r\n", replicas.len());
    let (min, lag) = (
        repl.min_replicas.load(Relaxed),
        repl.min_replicas_max_lag.load(Relaxed),
    );
    if min > 0 && lag > 0 {
        let _ = write!(
            o,
            "min_slaves_good_slaves:{}\r\n",
            repl.good_replicas.load(Relaxed)
        );
    }
    for (i, r) in replicas.iter().enumerate() {
        let _ = write!(
            o,
            "slave{i}:ip={},port={},state={},offset={},lag={}\r\n",
            r.ip,
            r.port.load(Relaxed),
            r.state_name(),
            r.ack.load(Relaxed),
            secs_since(r.ack_ms.load(Relaxed)),
        );
    }
    let ids = repl.ids();
    let (active, size, first, histlen) = repl.backlog_info();
    let _ = write!(
        o,
        "master_failover_state:{}\r\nmaster_replid:{}\r\nmaster_replid2:{}\r\nmaster_repl_offset:{}\r\nsecond_repl_offset:{}\r\nrepl_backlog_active:{}\r\nrepl_backlog_size:{size}\r\nrepl_backlog_first_byte_offset:{}\r\nrepl_backlog_histlen:{}\r\n",
        repl.failover.state_name(),
        ids.replid,
        ids.replid2,
        repl.offset(),
        ids.second_offset,
        u8::from(active),
        if active { first } else { 0 },
        if active { histlen } else { 0 },
    );
    o
}
