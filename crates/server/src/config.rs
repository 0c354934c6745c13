//! Configuration: the parameter table, redis.conf parsing, command-line
//! overrides, and the rules CONFIG GET/SET/REWRITE apply.
//!
//! Names, value syntax and error texts are Redis's, so existing config
//! files and tools work unchanged. Values are kept in their normalised
//! string form (what CONFIG GET shows); typed getters parse them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::glob;

#[derive(Debug, Clone, Copy)]
enum Kind {
    Int {
        min: i64,
        max: i64,
    },
    /// Integer written in octal (unixsocketperm).
    Octal,
    Bool,
    Enum(&'static [&'static str]),
    Memory {
        min: i64,
    },
    Str,
    Save,
    /// `class hard soft seconds` groups; setting some classes keeps the
    /// others.
    BufferLimits,
    /// notify-keyspace-events class letters.
    NotifyFlags,
}

struct Param {
    name: &'static str,
    kind: Kind,
    default: &'static str,
    mutable: bool,
}

const I32MAX: i64 = i32::MAX as i64;

const fn p(name: &'static str, kind: Kind, default: &'static str, mutable: bool) -> Param {
    Param {
        name,
        kind,
        default,
        mutable,
    }
}

/// Every parameter keel knows. `threads` is keel's own; the rest are
/// Redis's names with Redis's defaults (bind: loopback only, as asked of a
/// server that "just works" on a developer machine).
const PARAMS: &[Param] = &[
    p("port", Kind::Int { min: 0, max: 65535 }, "6379", false),
    p("bind", Kind::Str, "127.0.0.1", false),
    p("unixsocket", Kind::Str, "", false),
    p("unixsocketperm", Kind::Octal, "0", false),
    p(
        "databases",
        Kind::Int {
            min: 1,
            max: I32MAX,
        },
        "16",
        false,
    ),
    p("dir", Kind::Str, "", true),
    p("logfile", Kind::Str, "", false),
    p(
        "loglevel",
        Kind::Enum(&["debug", "verbose", "notice", "warning"]),
        "notice",
        true,
    ),
    p(
        "timeout",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "0",
        true,
    ),
    p(
        "tcp-keepalive",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "300",
        true,
    ),
    p(
        "tcp-backlog",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "511",
        false,
    ),
    p(
        "maxclients",
        Kind::Int {
            min: 1,
            max: u32::MAX as i64,
        },
        "10000",
        true,
    ),
    // Redis accepts any int and clamps it to 1..500 (see `normalise`).
    p(
        "hz",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "10",
        true,
    ),
    p(
        "proto-max-bulk-len",
        Kind::Memory { min: 1024 * 1024 },
        "536870912",
        true,
    ),
    p("threads", Kind::Int { min: 1, max: 256 }, "0", false),
    p(
        "active-threads-min",
        Kind::Int { min: 1, max: 256 },
        "1",
        true,
    ),
    p("daemonize", Kind::Enum(&["no"]), "no", false),
    p("pidfile", Kind::Str, "", false),
    p("protected-mode", Kind::Bool, "yes", true),
    p("save", Kind::Save, "", true),
    p("appendonly", Kind::Bool, "no", true),
    p("aof-load-truncated", Kind::Bool, "yes", true),
    p("aof-use-rdb-preamble", Kind::Bool, "yes", true),
    p("no-appendfsync-on-rewrite", Kind::Bool, "no", true),
    p(
        "auto-aof-rewrite-percentage",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "100",
        true,
    ),
    p(
        "auto-aof-rewrite-min-size",
        Kind::Memory { min: 0 },
        "67108864",
        true,
    ),
    p(
        "appendfsync",
        Kind::Enum(&["everysec", "always", "no"]),
        "everysec",
        true,
    ),
    p("appendfilename", Kind::Str, "appendonly.aof", false),
    p("appenddirname", Kind::Str, "appendonlydir", false),
    p("dbfilename", Kind::Str, "dump.rdb", true),
    p(
        "enable-debug-command",
        Kind::Enum(&["no", "yes", "local"]),
        "no",
        false,
    ),
    p(
        "hash-max-listpack-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "512",
        true,
    ),
    p(
        "hash-max-listpack-value",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "64",
        true,
    ),
    p(
        "set-max-intset-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "512",
        true,
    ),
    p(
        "zset-max-listpack-entries",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "128",
        true,
    ),
    p(
        "zset-max-listpack-value",
        Kind::Int {
            min: 0,
            max: i64::MAX,
        },
        "64",
        true,
    ),
    p(
        "list-max-listpack-size",
        Kind::Int {
            min: i32::MIN as i64,
            max: I32MAX,
        },
        "-2",
        true,
    ),
    p(
        "list-compress-depth",
        Kind::Int {
            min: 0,
            max: I32MAX,
        },
        "0",
        true,
    ),
    p(
        "client-output-buffer-limit",
        Kind::BufferLimits,
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        true,
    ),
    p("notify-keyspace-events", Kind::NotifyFlags, "", true),
];

/// Old names Redis still accepts and reports, and the parameter each one
/// stands for.
const ALIASES: &[(&str, &str)] = &[
    ("hash-max-ziplist-entries", "hash-max-listpack-entries"),
    ("hash-max-ziplist-value", "hash-max-listpack-value"),
    ("zset-max-ziplist-entries", "zset-max-listpack-entries"),
    ("zset-max-ziplist-value", "zset-max-listpack-value"),
    ("list-max-ziplist-size", "list-max-listpack-size"),
];

fn param(name: &str) -> Option<&'static Param> {
    let name = ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
        .map_or(name, |(_, canonical)| canonical);
    PARAMS.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

#[derive(Debug, Clone)]
pub struct Config {
    values: BTreeMap<&'static str, String>,
    /// The config file the server was started with, for CONFIG REWRITE.
    pub file: Option<PathBuf>,
}

fn parse_memory(s: &str) -> Option<i64> {
    let lower = s.to_ascii_lowercase();
    let units: &[(&str, i64)] = &[
        ("kb", 1024),
        ("mb", 1024 * 1024),
        ("gb", 1024 * 1024 * 1024),
        ("k", 1000),
        ("m", 1000 * 1000),
        ("g", 1000 * 1000 * 1000),
        ("b", 1),
    ];
    for (suffix, mul) in units {
        if let Some(num) = lower.strip_suffix(suffix) {
            return resp::parse_i64(num.as_bytes())?.checked_mul(*mul);
        }
    }
    resp::parse_i64(lower.as_bytes())
}

/// Checks and normalises `value` for `p`; the error is the text after
/// "CONFIG SET failed (possibly related to argument 'x') - ".
fn normalise(p: &Param, value: &str) -> Result<String, String> {
    match p.kind {
        Kind::Int { min, max } => {
            let n = resp::parse_i64(value.as_bytes())
                .ok_or_else(|| "argument couldn't be parsed into an integer".to_string())?;
            if n < min || n > max {
                return Err(format!("argument must be between {min} and {max} inclusive"));
            }
            if p.name == "hz" {
                return Ok(n.clamp(1, 500).to_string());
            }
            Ok(n.to_string())
        }
        Kind::Octal => i64::from_str_radix(value, 8)
            .map(|n| format!("{n:o}"))
            .map_err(|_| "argument couldn't be parsed into an integer".to_string()),
        Kind::Bool => match value.to_ascii_lowercase().as_str() {
            "yes" => Ok("yes".into()),
            "no" => Ok("no".into()),
            _ => Err("argument must be 'yes' or 'no'".into()),
        },
        Kind::Enum(options) => options
            .iter()
            .find(|o| o.eq_ignore_ascii_case(value))
            .map(|o| o.to_string())
            .ok_or_else(|| {
                if options.len() == 1 {
                    format!("argument must be '{}' (other values are not available in this version of keel)", options[0])
                } else {
                    format!("argument(s) must be one of the following: {}", options.join(", "))
                }
            }),
        Kind::Memory { min } => {
            let n = parse_memory(value).ok_or_else(|| "argument must be a memory value".to_string())?;
            if n < min {
                return Err(format!("argument must be between {min} and {} inclusive", i64::MAX));
            }
            Ok(n.to_string())
        }
        Kind::Str => Ok(value.to_string()),
        Kind::NotifyFlags => crate::notify::parse(value)
            .map(crate::notify::to_string)
            .ok_or_else(|| "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()),
        Kind::BufferLimits => {
            let parts: Vec<&str> = value.split_whitespace().collect();
            if parts.is_empty() || !parts.len().is_multiple_of(4) {
                return Err("Wrong number of arguments in buffer limit configuration.".into());
            }
            let mut out = Vec::new();
            for c in parts.chunks(4) {
                let class = match c[0].to_ascii_lowercase().as_str() {
                    "normal" => "normal",
                    "slave" | "replica" => "slave",
                    "pubsub" => "pubsub",
                    _ => return Err("Invalid client class specified in buffer limit configuration.".into()),
                };
                let hard = parse_memory(c[1]).filter(|n| *n >= 0);
                let soft = parse_memory(c[2]).filter(|n| *n >= 0);
                let secs = resp::parse_i64(c[3].as_bytes()).filter(|n| *n >= 0);
                match (hard, soft, secs) {
                    (Some(h), Some(s), Some(t)) => out.push(format!("{class} {h} {s} {t}")),
                    _ => return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into()),
                }
            }
            Ok(out.join(" "))
        }
        Kind::Save => {
            let parts: Vec<&str> = value.split_whitespace().collect();
            if !parts.len().is_multiple_of(2) || parts.iter().any(|x| resp::parse_i64(x.as_bytes()).is_none_or(|n| n < 0)) {
                return Err("Invalid save parameters".into());
            }
            Ok(parts.join(" "))
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("Bad directive or wrong number of arguments")]
    UnknownDirective,
    #[error("{0}")]
    Invalid(String),
    #[error("can't read config file {0}: {1}")]
    Io(PathBuf, std::io::Error),
}

impl Default for Config {
    fn default() -> Self {
        let mut values: BTreeMap<&'static str, String> = PARAMS
            .iter()
            .map(|p| (p.name, p.default.to_string()))
            .collect();
        let cwd = std::env::current_dir()
            .map(|d| d.display().to_string())
            .unwrap_or_default();
        values.insert("dir", cwd);
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        values.insert("threads", cores.to_string());
        Config { values, file: None }
    }
}

impl Config {
    /// Builds the configuration from `keel-server [file] [--name value...]`,
    /// the same shape redis-server accepts.
    pub fn from_args(args: &[String]) -> Result<Config, ConfigError> {
        let mut cfg = Config::default();
        let mut rest = args;
        if let Some(first) = rest.first() {
            if !first.starts_with("--") {
                let path = PathBuf::from(first);
                let text =
                    std::fs::read_to_string(&path).map_err(|e| ConfigError::Io(path.clone(), e))?;
                cfg.load_text(&text)?;
                cfg.file = Some(std::fs::canonicalize(&path).unwrap_or(path));
                rest = &rest[1..];
            }
        }
        // "--port 6380 --save ''" becomes the config lines "port 6380",
        // "save ''", as redis-server does.
        let mut lines = String::new();
        for a in rest {
            if let Some(name) = a.strip_prefix("--") {
                lines.push('\n');
                lines.push_str(name);
            } else {
                lines.push(' ');
                lines.push_str(&quote(a));
            }
        }
        cfg.load_text(&lines)?;
        Ok(cfg)
    }

    /// Applies redis.conf-syntax text.
    pub fn load_text(&mut self, text: &str) -> Result<(), ConfigError> {
        for (lineno, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut buf = Vec::new();
            let mut ranges = Vec::new();
            resp::request::split_args(line.as_bytes(), &mut buf, &mut ranges).map_err(|_| {
                ConfigError::Invalid(format!("line {}: unbalanced quotes", lineno + 1))
            })?;
            let args: Vec<String> = ranges
                .iter()
                .map(|&(s, l)| String::from_utf8_lossy(&buf[s..s + l]).into_owned())
                .collect();
            let Some((name, values)) = args.split_first() else {
                continue;
            };
            let name = name.to_ascii_lowercase();
            let value = values.join(" ");
            // Lines Redis accepts that have no effect here.
            if name == "include" || name == "rename-command" {
                return Err(ConfigError::Invalid(format!(
                    "line {}: '{name}' is not supported",
                    lineno + 1
                )));
            }
            let p = param(&name).ok_or_else(|| {
                ConfigError::Invalid(format!(
                    "line {}: '{}': Bad directive or wrong number of arguments",
                    lineno + 1,
                    line
                ))
            })?;
            let v = normalise(p, &value).map_err(|e| {
                ConfigError::Invalid(format!("line {}: '{}': {e}", lineno + 1, line))
            })?;
            let v = if matches!(p.kind, Kind::BufferLimits) {
                merge_limits(self.get(p.name), &v)
            } else {
                v
            };
            self.values.insert(p.name, v);
        }
        Ok(())
    }

    pub fn get(&self, name: &str) -> &str {
        param(name)
            .and_then(|p| self.values.get(p.name))
            .map(String::as_str)
            .unwrap_or("")
    }

    pub fn get_int(&self, name: &str) -> i64 {
        let v = self.get(name);
        match param(name).map(|p| p.kind) {
            Some(Kind::Octal) => i64::from_str_radix(v, 8).unwrap_or(0),
            _ => v.parse().unwrap_or(0),
        }
    }

    /// CONFIG GET: (name, value) for every parameter matching any pattern.
    pub fn matching(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for pat in patterns {
            let is_glob = pat.iter().any(|c| matches!(c, b'*' | b'?' | b'['));
            if !is_glob {
                // An exact name is echoed as written, as Redis does.
                let name = String::from_utf8_lossy(pat).into_owned();
                if param(&name).is_some() && !out.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name))
                {
                    let value = self.get(&name).to_string();
                    out.push((name, value));
                }
                continue;
            }
            let names = PARAMS
                .iter()
                .map(|p| p.name)
                .chain(ALIASES.iter().map(|(alias, _)| *alias));
            for name in names {
                if glob::matches(pat, name.as_bytes(), true)
                    && !out.iter().any(|(n, _)| n.eq_ignore_ascii_case(name))
                {
                    out.push((name.to_string(), self.get(name).to_string()));
                }
            }
        }
        out
    }

    /// CONFIG SET of several pairs, all or nothing. The error is the full
    /// reply text.
    pub fn set_many(&mut self, pairs: &[(&[u8], &[u8])]) -> Result<Vec<&'static str>, String> {
        let mut staged = Vec::new();
        for (name, value) in pairs {
            let name_s = String::from_utf8_lossy(name);
            let Some(p) = param(&name_s) else {
                return Err(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{name_s}'"
                ));
            };
            if staged.iter().any(|(n, _)| *n == p.name) {
                return Err(format!("ERR CONFIG SET failed (possibly related to argument '{name_s}') - duplicate parameter"));
            }
            let fail = |why: &str| {
                format!("ERR CONFIG SET failed (possibly related to argument '{name_s}') - {why}")
            };
            if !p.mutable {
                return Err(fail("can't set immutable config"));
            }
            let v = normalise(p, &String::from_utf8_lossy(value)).map_err(|e| fail(&e))?;
            if p.name == "dir" && std::env::set_current_dir(&v).is_err() {
                return Err(fail("No such file or directory"));
            }
            let v = if matches!(p.kind, Kind::BufferLimits) {
                merge_limits(self.get(p.name), &v)
            } else {
                v
            };
            staged.push((p.name, v));
        }
        let names = staged.iter().map(|(n, _)| *n).collect();
        for (n, v) in staged {
            self.values.insert(n, v);
        }
        Ok(names)
    }

    /// CONFIG REWRITE: rewrites the config file in place, keeping comments
    /// and unknown lines, updating known parameters, and appending those
    /// that differ from their defaults.
    pub fn rewrite(&self) -> Result<(), String> {
        let Some(path) = &self.file else {
            return Err("ERR The server is running without a config file".into());
        };
        let old = std::fs::read_to_string(path).unwrap_or_default();
        let mut out = String::new();
        let mut written = std::collections::HashSet::new();
        for line in old.lines() {
            let name = line
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_ascii_lowercase();
            match param(&name) {
                Some(p) if !line.trim_start().starts_with('#') => {
                    if written.insert(p.name) {
                        out.push_str(&format!("{} {}\n", p.name, quote(self.get(p.name))));
                    }
                }
                _ => {
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        for p in PARAMS {
            if !written.contains(p.name)
                && self.get(p.name) != p.default
                && p.name != "dir"
                && p.name != "threads"
            {
                out.push_str(&format!("{} {}\n", p.name, quote(self.get(p.name))));
            }
        }
        write_atomically(path, out.as_bytes())
            .map_err(|e| format!("ERR Rewriting config file: {e}"))
    }
}

/// Replaces the classes `new` names in `old`, keeping the others, in
/// Redis's order (normal, slave, pubsub).
fn merge_limits(old: &str, new: &str) -> String {
    let parse = |s: &str| -> Vec<(String, String)> {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .chunks(4)
            .filter(|c| c.len() == 4)
            .map(|c| (c[0].to_string(), c[1..].join(" ")))
            .collect()
    };
    let mut classes = parse(old);
    for (class, rest) in parse(new) {
        match classes.iter_mut().find(|(c, _)| *c == class) {
            Some(entry) => entry.1 = rest,
            None => classes.push((class, rest)),
        }
    }
    classes
        .iter()
        .map(|(c, r)| format!("{c} {r}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn quote(s: &str) -> String {
    if !s.is_empty()
        && !s
            .bytes()
            .any(|c| c.is_ascii_whitespace() || c == b'"' || c == b'\'' || c == b'\\')
    {
        return s.to_string();
    }
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\r' => q.push_str("\\r"),
            '\t' => q.push_str("\\t"),
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

fn write_atomically(path: &Path, data: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp-rewrite");
    std::fs::write(&tmp, data)?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_and_file_syntax() {
        let args: Vec<String> = ["--port", "6390", "--save", "", "--loglevel", "warning"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let c = Config::from_args(&args).unwrap();
        assert_eq!(c.get("port"), "6390");
        assert_eq!(c.get("save"), "");
        assert_eq!(c.get("loglevel"), "warning");
        let mut c = Config::default();
        c.load_text("# comment\nsave 900 1 300 10\nproto-max-bulk-len 2mb\n")
            .unwrap();
        assert_eq!(c.get("save"), "900 1 300 10");
        assert_eq!(c.get_int("proto-max-bulk-len"), 2 * 1024 * 1024);
        assert!(c.load_text("nonsense 1").is_err());
    }

    #[test]
    fn set_errors_are_redis_texts() {
        let mut c = Config::default();
        assert_eq!(
            c.set_many(&[(b"timeout", b"abc")]).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'timeout') - argument couldn't be parsed into an integer"
        );
        assert_eq!(
            c.set_many(&[(b"databases", b"3")]).unwrap_err(),
            "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"
        );
        assert_eq!(
            c.set_many(&[(b"foo", b"bar")]).unwrap_err(),
            "ERR Unknown option or number of arguments for CONFIG SET - 'foo'"
        );
        // All or nothing.
        assert!(c.set_many(&[(b"timeout", b"5"), (b"hz", b"abc")]).is_err());
        assert_eq!(c.get("timeout"), "0");
    }
}
