//! The control connection: a blocking client used outside the measured
//! window to stamp results with the server's identity and persistence
//! settings, and to read `INFO commandstats` before and after each test so
//! the request count can be cross-checked against what the server executed.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Result};
use resp::Value;
use serde::{Deserialize, Serialize};

use crate::cli::{Config, Target};
use crate::conn::{self, Stream};

pub struct Control {
    stream: Stream,
    buf: Vec<u8>,
}

impl Control {
    /// Connects with AUTH (but no SELECT/HELLO: INFO and CONFIG are global).
    pub fn connect(target: &Target, cfg: &Config) -> Result<Control> {
        let mut stream = Stream::connect(target)
            .map_err(|e| anyhow!("Could not connect to Redis at {}: {}", target.label(), e))?;
        let mut cmds = conn::handshake_commands(cfg, true);
        cmds.retain(|c| c[0] == b"AUTH");
        conn::handshake(&mut stream, &cmds, target)?;
        Ok(Control {
            stream,
            buf: Vec::new(),
        })
    }

    pub fn call(&mut self, argv: &[&[u8]]) -> Result<Value> {
        let mut out = Vec::new();
        resp::encode::command(&mut out, argv);
        self.stream.write_all(&out)?;
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some((v, n)) = resp::parse_reply(&self.buf)? {
                self.buf.drain(..n);
                if matches!(v, Value::Push(_)) {
                    continue;
                }
                return Ok(v);
            }
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                bail!("server closed the control connection");
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn text(&mut self, argv: &[&[u8]]) -> Result<String> {
        match self.call(argv)? {
            Value::Bulk(b) | Value::Verbatim(b) | Value::Simple(b) => {
                Ok(String::from_utf8_lossy(&b).into_owned())
            }
            Value::Error(e) => bail!("{}", String::from_utf8_lossy(&e)),
            other => bail!("unexpected reply {other:?}"),
        }
    }

    /// `CONFIG GET name` → value, None if unsupported.
    pub fn config_get(&mut self, name: &str) -> Option<String> {
        match self.call(&[b"CONFIG", b"GET", name.as_bytes()]).ok()? {
            Value::Array(items) if items.len() >= 2 => match &items[1] {
                Value::Bulk(b) | Value::Simple(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            },
            Value::Map(pairs) => match pairs.first().map(|p| &p.1) {
                Some(Value::Bulk(b)) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            },
            _ => None,
        }
    }

    pub fn info(&mut self, section: &str) -> Result<BTreeMap<String, String>> {
        let text = if section.is_empty() {
            self.text(&[b"INFO"])?
        } else {
            self.text(&[b"INFO", section.as_bytes()])?
        };
        Ok(parse_info(&text))
    }

    /// Total commands the server executed or rejected, from commandstats.
    pub fn total_calls(&mut self) -> Option<u64> {
        let info = self.info("commandstats").ok()?;
        let mut total = 0u64;
        let mut any = false;
        for (k, v) in info {
            if !k.starts_with("cmdstat_") {
                continue;
            }
            for field in v.split(',') {
                if let Some((name, n)) = field.split_once('=') {
                    if name == "calls" || name == "rejected_calls" {
                        total += n.parse::<u64>().unwrap_or(0);
                        any = true;
                    }
                }
            }
        }
        any.then_some(total)
    }
}

pub fn parse_info(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

/// Identity and settings of the server a result was measured against.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ServerStamp {
    pub target: String,
    pub redis_version: Option<String>,
    pub keel_version: Option<String>,
    pub redis_mode: Option<String>,
    pub os: Option<String>,
    pub save: Option<String>,
    pub appendonly: Option<String>,
    pub appendfsync: Option<String>,
    /// `io_threads_active` (redis) if reported.
    pub io_threads_active: Option<String>,
    /// `io-threads` config (redis) if readable.
    pub io_threads: Option<String>,
    /// `keel_threads` (keel) if reported.
    pub keel_threads: Option<String>,
    /// Best guess at the server's worker thread count.
    pub server_threads: Option<u64>,
}

impl ServerStamp {
    pub fn collect(ctrl: &mut Control, target: &Target) -> ServerStamp {
        let info = ctrl.info("").unwrap_or_default();
        let get = |k: &str| info.get(k).cloned();
        let save = ctrl.config_get("save");
        let appendonly = ctrl.config_get("appendonly");
        let appendfsync = ctrl.config_get("appendfsync");
        let io_threads = ctrl.config_get("io-threads");
        let keel_threads = get("keel_threads").or_else(|| get("threads"));
        let server_threads = keel_threads
            .as_deref()
            .and_then(|s| s.parse().ok())
            .or_else(|| io_threads.as_deref().and_then(|s| s.parse().ok()));
        ServerStamp {
            target: target.label(),
            redis_version: get("redis_version"),
            keel_version: get("keel_version"),
            redis_mode: get("redis_mode"),
            os: get("os"),
            save,
            appendonly,
            appendfsync,
            io_threads_active: get("io_threads_active"),
            io_threads,
            keel_threads,
            server_threads,
        }
    }

    pub fn summary(&self) -> String {
        let mut s = String::new();
        if let Some(v) = &self.keel_version {
            s.push_str(&format!("keel {v}"));
        } else if let Some(v) = &self.redis_version {
            s.push_str(&format!("redis {v}"));
        } else {
            s.push_str("unknown server");
        }
        if self.keel_version.is_some() {
            if let Some(v) = &self.redis_version {
                s.push_str(&format!(" (redis_version {v})"));
            }
        }
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "?".into());
        s.push_str(&format!(
            ", save=\"{}\" appendonly={} appendfsync={}",
            opt(&self.save),
            opt(&self.appendonly),
            opt(&self.appendfsync)
        ));
        if let Some(t) = self.server_threads {
            s.push_str(&format!(" threads={t}"));
        }
        s
    }
}
