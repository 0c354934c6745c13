//! MEMORY USAGE/STATS/DOCTOR/MALLOC-STATS/PURGE and INFO's memory
//! section: one [`Overhead`] computation feeds all of them, as Redis's
//! getMemoryOverheadData.

use std::fmt::Write as _;

use super::args;
use super::error::{self, CmdError, CmdResult};
use super::table::{flag, Registry};
use super::Ctx;
use crate::memory::alloc::size_class;
use crate::memory::{human, lazyfree};
use crate::server::Server;
use crate::storage::keymap::KeyMap;
use crate::storage::keyspace::View;
use crate::storage::value::Value;

pub fn register(r: &mut Registry) {
    r.add("memory|usage", memory_usage);
    r.add_flagged("memory|stats", memory_stats, flag::EVERY_SHARD);
    r.add_flagged("memory|doctor", memory_doctor, flag::EVERY_SHARD);
    r.add("memory|malloc-stats", memory_malloc_stats);
    r.add("memory|purge", memory_purge);
    r.add("memory|help", memory_help);
}

/// Bytes a value holds on the heap, in the allocator's size classes.
pub fn value_bytes(v: &Value) -> usize {
    use std::mem::size_of;
    let boxed = |n: usize| size_class(n);
    match v {
        Value::Str(s) if s.heap_size() == 0 => 0,
        Value::Str(s) => size_class(s.heap_size()),
        Value::List(l) => boxed(size_of::<crate::storage::value::List>()) + l.heap_size(),
        Value::Hash(h) => h.heap_size(),
        Value::Set(s) => boxed(size_of::<crate::storage::value::Set>()) + s.heap_size(),
        Value::ZSet(z) => boxed(size_of::<crate::storage::value::ZSet>()) + z.heap_size(),
        Value::Stream(s) => boxed(size_of::<crate::storage::value::Stream>()) + s.heap_size(),
        // On disk: nothing but the stub, held inside the value.
        Value::Spilled(_) => 0,
    }
}

/// What a key costs: its node (entry + key bytes), its share of the slot
/// table (a pointer and a control byte, at the table's typical load), and
/// its value.
pub fn key_bytes(key: &[u8], v: &Value) -> usize {
    KeyMap::node_bytes(key) + 16 + value_bytes(v)
}

/// MEMORY USAGE key [SAMPLES count]
fn memory_usage(cx: &mut Ctx, argv: &[&[u8]]) -> CmdResult {
    let mut a = args::Args::new(argv, 3);
    while a.more() {
        match a.option("samples") {
            // keel sizes the whole value (every element is visited), so
            // the count is only validated.
            Some(n) => {
                if a.check(args::int(n)).is_some_and(|n| n < 0) {
                    a.fail(error::SYNTAX);
                }
            }
            None => a.fail(error::SYNTAX),
        }
    }
    a.finish()?;
    let (db, now) = (cx.db(), cx.now_ms);
    // Redis finds the key without the expiry check (dictFind).
    match cx.view.peek(db, argv[2], now) {
        Some(e) => {
            let n = key_bytes(argv[2], e.value);
            cx.int(n as i64);
        }
        None => cx.null(),
    }
    Ok(())
}

/// Redis's redisMemOverhead, from keel's numbers.
pub struct Overhead {
    pub used: usize,
    pub peak: usize,
    pub startup: usize,
    pub clients_normal: usize,
    pub aof_buffer: usize,
    /// Cached scripts and function libraries.
    pub scripting: crate::scripting::ScriptMemory,
    /// Slot tables per database.
    pub dbs: Vec<usize>,
    /// Keys per database.
    pub db_keys: Vec<usize>,
    pub keys: usize,
    pub total: usize,
    pub dataset: usize,
    pub allocated: usize,
    pub active: usize,
    pub resident: usize,
    pub rss: usize,
    pub clients: usize,
}

impl Overhead {
    /// `held`: the caller's view (see `Keyspace::stats`).
    pub fn compute(server: &Server, held: &View) -> Overhead {
        let used = server.memory.observe();
        let (allocated, active, resident) = allocator_stats();
        let clients = server.clients.snapshot();
        let clients_normal: usize = clients.iter().map(|c| c.memory() as usize).sum();
        let scripts = crate::scripting::memory(server);
        let dbs = server.keyspace.table_bytes(held);
        let (_, sizes) = server.keyspace.stats(held);
        let keys = sizes.iter().map(|d| d.keys).sum();
        let db_keys = sizes.iter().map(|d| d.keys).collect();
        let startup = server.memory.startup();
        let aof_buffer = server.aof.buffered();
        let total = startup
            + clients_normal
            + aof_buffer
            + scripts.scripts_bytes
            + scripts.functions_bytes
            + dbs.iter().sum::<usize>();
        Overhead {
            used,
            peak: server.memory.peak().max(used),
            startup,
            clients_normal,
            aof_buffer,
            scripting: scripts,
            dbs,
            db_keys,
            keys,
            total,
            dataset: used.saturating_sub(total),
            allocated,
            active,
            resident,
            rss: rss_bytes(),
            clients: clients.len(),
        }
    }

    fn net(&self) -> usize {
        self.used.saturating_sub(self.startup)
    }

    fn dataset_perc(&self) -> f64 {
        pct(self.dataset, self.net())
    }

    fn peak_perc(&self) -> f64 {
        pct(self.used, self.peak)
    }
}

fn pct(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 * 100.0 / b as f64
    }
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// (allocated, active, resident) bytes from jemalloc.
fn allocator_stats() -> (usize, usize, usize) {
    use tikv_jemalloc_ctl::{epoch, stats};
    let _ = epoch::advance();
    (
        stats::allocated::read().unwrap_or(0),
        stats::active::read().unwrap_or(0),
        stats::resident::read().unwrap_or(0),
    )
}

pub fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn total_system_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let pages = unsafe { libc::sysconf(libc::_SC_PHYS_PAGES) };
    // SAFETY: as above.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    (pages.max(0) as u64) * (size.max(0) as u64)
}

/// INFO's `# Memory` section, Redis 7.0's fields in its order.
pub fn info(server: &Server, held: &View, o: &mut String) {
    let m = Overhead::compute(server, held);
    let scripts = &m.scripting;
    let (vm_eval, vm_functions) = crate::scripting::lua_memory();
    let total_mem = total_system_memory();
    let maxmemory = server.memory.maxmemory();
    let h = |n: usize| human(n as u64);
    let _ = write!(
        o,
        "# Memory\r\n\
         used_memory:{}\r\nused_memory_human:{}\r\n\
         used_memory_rss:{}\r\nused_memory_rss_human:{}\r\n\
         used_memory_peak:{}\r\nused_memory_peak_human:{}\r\nused_memory_peak_perc:{:.2}%\r\n\
         used_memory_overhead:{}\r\nused_memory_startup:{}\r\n\
         used_memory_dataset:{}\r\nused_memory_dataset_perc:{:.2}%\r\n\
         allocator_allocated:{}\r\nallocator_active:{}\r\nallocator_resident:{}\r\n\
         total_system_memory:{}\r\ntotal_system_memory_human:{}\r\n\
         used_memory_lua:{}\r\nused_memory_vm_eval:{}\r\nused_memory_lua_human:{}\r\n\
         used_memory_scripts_eval:{}\r\nnumber_of_cached_scripts:{}\r\n\
         number_of_functions:{}\r\nnumber_of_libraries:{}\r\n\
         used_memory_vm_functions:{}\r\nused_memory_vm_total:{}\r\nused_memory_vm_total_human:{}\r\n\
         used_memory_functions:{}\r\nused_memory_scripts:{}\r\nused_memory_scripts_human:{}\r\n\
         maxmemory:{}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\n\
         allocator_frag_ratio:{:.2}\r\nallocator_frag_bytes:{}\r\n\
         allocator_rss_ratio:{:.2}\r\nallocator_rss_bytes:{}\r\n\
         rss_overhead_ratio:{:.2}\r\nrss_overhead_bytes:{}\r\n\
         mem_fragmentation_ratio:{:.2}\r\nmem_fragmentation_bytes:{}\r\n\
         mem_not_counted_for_evict:{}\r\nmem_replication_backlog:{}\r\n\
         mem_total_replication_buffers:{}\r\nmem_clients_slaves:0\r\n\
         mem_clients_normal:{}\r\nmem_cluster_links:0\r\nmem_aof_buffer:{}\r\n\
         mem_allocator:jemalloc-5.3.0\r\nactive_defrag_running:0\r\n\
         lazyfree_pending_objects:{}\r\nlazyfreed_objects:{}\r\n",
        m.used,
        h(m.used),
        m.rss,
        h(m.rss),
        m.peak,
        h(m.peak),
        m.peak_perc(),
        m.total,
        m.startup,
        m.dataset,
        m.dataset_perc(),
        m.allocated,
        m.active,
        m.resident,
        total_mem,
        human(total_mem),
        vm_eval,
        vm_eval,
        h(vm_eval),
        scripts.scripts_bytes,
        scripts.scripts,
        scripts.functions,
        scripts.libraries,
        vm_functions,
        vm_eval + vm_functions,
        h(vm_eval + vm_functions),
        scripts.functions_bytes,
        scripts.scripts_bytes + scripts.functions_bytes,
        h(scripts.scripts_bytes + scripts.functions_bytes),
        maxmemory,
        human(maxmemory),
        server.memory.policy().name(),
        ratio(m.active, m.allocated),
        m.active as i64 - m.allocated as i64,
        ratio(m.resident, m.active),
        m.resident as i64 - m.active as i64,
        ratio(m.rss, m.resident),
        m.rss as i64 - m.resident as i64,
        ratio(m.rss, m.used),
        m.rss as i64 - m.used as i64,
        crate::memory::evict::not_counted(server),
        server.repl.backlog_memory(),
        server.repl.backlog_memory(),
        m.clients_normal,
        m.aof_buffer,
        lazyfree::pending(),
        lazyfree::freed(),
    );
}

/// MEMORY STATS
fn memory_stats(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let m = Overhead::compute(cx.server, &cx.view);
    // Databases with keys, as Redis lists them.
    let dbs: Vec<(usize, usize)> = m
        .dbs
        .iter()
        .copied()
        .enumerate()
        .filter(|(db, _)| m.db_keys[*db] > 0)
        .collect();
    cx.map(27 + dbs.len());
    let int = |cx: &mut Ctx, name: &str, n: i64| {
        cx.bulk(name.as_bytes());
        cx.int(n);
    };
    int(cx, "peak.allocated", m.peak as i64);
    int(cx, "total.allocated", m.used as i64);
    int(cx, "startup.allocated", m.startup as i64);
    int(cx, "replication.backlog", 0);
    int(cx, "clients.slaves", 0);
    int(cx, "clients.normal", m.clients_normal as i64);
    int(cx, "cluster.links", 0);
    int(cx, "aof.buffer", m.aof_buffer as i64);
    int(cx, "lua.caches", m.scripting.scripts_bytes as i64);
    int(cx, "functions.caches", m.scripting.functions_bytes as i64);
    for (db, bytes) in &dbs {
        cx.bulk(format!("db.{db}").as_bytes());
        cx.map(3);
        int(cx, "overhead.hashtable.main", *bytes as i64);
        // Expiry times live in the entries, and the slot tables are the
        // main table: no second or third table.
        int(cx, "overhead.hashtable.expires", 0);
        int(cx, "overhead.hashtable.slot-to-keys", 0);
    }
    int(cx, "overhead.total", m.total as i64);
    int(cx, "keys.count", m.keys as i64);
    let per_key = m.net().checked_div(m.keys).unwrap_or(0);
    int(cx, "keys.bytes-per-key", per_key as i64);
    int(cx, "dataset.bytes", m.dataset as i64);
    let double = |cx: &mut Ctx, name: &str, v: f64| {
        cx.bulk(name.as_bytes());
        let proto = cx.proto();
        resp::encode::double_text(cx.out, format!("{v}").as_bytes(), proto);
    };
    double(cx, "dataset.percentage", m.dataset_perc());
    double(cx, "peak.percentage", m.peak_perc());
    int(cx, "allocator.allocated", m.allocated as i64);
    int(cx, "allocator.active", m.active as i64);
    int(cx, "allocator.resident", m.resident as i64);
    double(
        cx,
        "allocator-fragmentation.ratio",
        ratio(m.active, m.allocated),
    );
    int(
        cx,
        "allocator-fragmentation.bytes",
        m.active as i64 - m.allocated as i64,
    );
    double(cx, "allocator-rss.ratio", ratio(m.resident, m.active));
    int(
        cx,
        "allocator-rss.bytes",
        m.resident as i64 - m.active as i64,
    );
    double(cx, "rss-overhead.ratio", ratio(m.rss, m.resident));
    int(cx, "rss-overhead.bytes", m.rss as i64 - m.resident as i64);
    double(cx, "fragmentation", ratio(m.rss, m.used));
    int(cx, "fragmentation.bytes", m.rss as i64 - m.used as i64);
    Ok(())
}

/// MEMORY DOCTOR: Redis's getMemoryDoctorReport, on keel's numbers.
fn memory_doctor(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let report = doctor_report(&Overhead::compute(cx.server, &cx.view));
    cx.verbatim(report.as_bytes());
    Ok(())
}

fn doctor_report(m: &Overhead) -> String {
    const MB10: i64 = 10 << 20;
    if m.used < 5 * 1024 * 1024 {
        return "Hi Sam, this instance is empty or is using very little memory, my issues detector can't be used in these conditions. Please, leave for your mission on Earth and fill it with some data. The new Sam and I will be back to our programming as soon as I finished rebooting.\n".into();
    }
    let mut issues = Vec::new();
    if m.peak as f64 / m.used as f64 > 1.5 {
        issues.push(" * Peak memory: In the past this instance used more than 150% the memory that is currently using. The allocator is normally not able to release memory after a peak, so you can expect to see a big fragmentation ratio, however this is actually harmless and is only due to the memory peak, and if the Redis instance Resident Set Size (RSS) is currently bigger than expected, the memory will be used as soon as you fill the Redis instance with more data. If the memory peak was only occasional and you want to try to reclaim memory, please try the MEMORY PURGE command, otherwise the only other option is to shutdown and restart the instance.\n\n".to_string());
    }
    if ratio(m.rss, m.used) > 1.4 && m.rss as i64 - m.used as i64 > MB10 {
        issues.push(" * High total RSS: This instance has a memory fragmentation and RSS overhead greater than 1.4 (this means that the Resident Set Size of the Redis process is much larger than the sum of the logical allocations Redis performed). This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. If the problem is a large peak memory, then there is no issue. Otherwise, make sure you are using the Jemalloc allocator and not the default libc malloc. Note: The currently used allocator is \"jemalloc-5.3.0\".\n\n".to_string());
    }
    if ratio(m.active, m.allocated) > 1.1 && m.active as i64 - m.allocated as i64 > MB10 {
        issues.push(" * High allocator fragmentation: This instance has an allocator external fragmentation greater than 1.1. This problem is usually due either to a large peak memory (check if there is a peak memory entry above in the report) or may result from a workload that causes the allocator to fragment memory a lot. You can try enabling 'activedefrag' config option.\n\n".to_string());
    }
    if ratio(m.resident, m.active) > 1.1 && m.resident as i64 - m.active as i64 > MB10 {
        issues.push(" * High allocator RSS overhead: This instance has an RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the allocator is much larger than the sum what the allocator actually holds). This problem is usually due to a large peak memory (check if there is a peak memory entry above in the report), you can try the MEMORY PURGE command to reclaim it.\n\n".to_string());
    }
    if ratio(m.rss, m.resident) > 1.1 && m.rss as i64 - m.resident as i64 > MB10 {
        issues.push(" * High process RSS overhead: This instance has non-allocator RSS memory overhead is greater than 1.1 (this means that the Resident Set Size of the Redis process is much larger than the RSS the allocator holds). This problem may be due to Lua scripts or Modules.\n\n".to_string());
    }
    if m.clients > 0 && m.clients_normal / m.clients > 200 * 1024 {
        issues.push(" * Big client buffers: The clients output buffers in this instance are greater than 200K per client (on average). This may result from different causes, like Pub/Sub clients subscribed to channels bot not receiving data fast enough, so that data piles on the Redis instance output buffer, or clients sending commands with large replies or very large sequences of commands in the same pipeline. Please use the CLIENT LIST command in order to investigate the issue if it causes problems in your instance, or to understand better why certain clients are using a big amount of memory.\n\n".to_string());
    }
    if m.scripting.scripts > 1000 {
        issues.push(" * Many scripts: There seem to be many cached scripts in this instance (more than 1000). This may be because scripts are generated and `EVAL`ed, instead of being parameterized (with KEYS and ARGV), `SCRIPT LOAD`ed and `EVALSHA`ed. Unless `SCRIPT FLUSH` is called periodically, the scripts' caches may end up consuming most of your memory.\n\n".to_string());
    }
    if issues.is_empty() {
        return "Hi Sam, I can't find any memory issue in your instance. I can only account for what occurs on this base.\n".into();
    }
    let mut s =
        String::from("Sam, I detected a few issues in this Redis instance memory implants:\n\n");
    for i in issues {
        s.push_str(&i);
    }
    s.push_str("I'm here to keep you safe, Sam. I want to help you.\n");
    s
}

/// MEMORY MALLOC-STATS: jemalloc's own statistics report.
fn memory_malloc_stats(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    let mut text: Vec<u8> = Vec::new();
    unsafe extern "C" fn write_cb(opaque: *mut std::ffi::c_void, s: *const std::ffi::c_char) {
        // SAFETY: `opaque` is the `text` vector passed below, alive for
        // the whole call; jemalloc passes NUL-terminated strings.
        unsafe {
            let text = &mut *(opaque as *mut Vec<u8>);
            text.extend_from_slice(std::ffi::CStr::from_ptr(s).to_bytes());
        }
    }
    // SAFETY: the callback only appends to `text`, which outlives the
    // call; a null options string asks for the default report.
    unsafe {
        tikv_jemalloc_sys::malloc_stats_print(
            Some(write_cb),
            &mut text as *mut Vec<u8> as *mut std::ffi::c_void,
            std::ptr::null(),
        );
    }
    cx.verbatim(&text);
    Ok(())
}

/// MEMORY PURGE: jemalloc returns dirty pages of every arena to the OS.
fn memory_purge(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    if !crate::memory::purge() {
        return Err(CmdError::new("ERR Error purging dirty pages"));
    }
    cx.ok();
    Ok(())
}

fn memory_help(cx: &mut Ctx, _argv: &[&[u8]]) -> CmdResult {
    cx.help(&[
        "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return memory problems reports.",
        "MALLOC-STATS",
        "    Return internal statistics report from the memory allocator.",
        "PURGE",
        "    Attempt to purge dirty pages for reclamation by the allocator.",
        "STATS",
        "    Return information about the memory usage of the server.",
        "USAGE <key> [SAMPLES <count>]",
        "    Return memory in bytes used by <key> and its value. Nested values are",
        "    sampled up to <count> times (default: 5, 0 means sample all).",
        "HELP",
        "    Prints this help.",
    ]);
    Ok(())
}
