//! Command-line parsing: every redis-benchmark 7.0 option, with the same
//! spelling, defaults and lenient `atoi` semantics, plus keel's extensions.
//!
//! Hand-written rather than clap-derived because redis-benchmark's grammar
//! is unusual: `-h` is the host (not help), `-3` is a flag, and the first
//! argument not starting with `-` begins a free-form command whose own
//! arguments may start with `-`.

use std::path::PathBuf;

/// Where the server is.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub socket: Option<String>,
}

impl Target {
    pub fn label(&self) -> String {
        match &self.socket {
            Some(s) => s.clone(),
            None => format!("{}:{}", self.host, self.port),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPattern {
    Uniform,
    Gaussian,
    Zipfian,
    Sequential,
}

#[derive(Debug, Clone, Default)]
pub struct TlsOptions {
    pub enabled: bool,
    pub sni: Option<String>,
    pub cacert: Option<String>,
    pub cacertdir: Option<String>,
    pub insecure: bool,
    pub cert: Option<String>,
    pub key: Option<String>,
    pub ciphers: Option<String>,
    pub ciphersuites: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Config {
    pub target: Target,
    pub auth: Option<String>,
    pub user: Option<String>,
    pub clients: usize,
    pub requests: u64,
    pub datasize: usize,
    pub dbnum: i64,
    pub resp3: bool,
    pub threads: usize,
    pub cluster: bool,
    pub tracking: bool,
    pub keepalive: bool,
    pub randomkeys: bool,
    pub keyspacelen: u64,
    pub pipeline: usize,
    pub showerrors: bool,
    pub quiet: bool,
    pub csv: bool,
    pub loop_forever: bool,
    /// `-t` list as redis-benchmark stores it: `",a,b,"`, lowercased.
    pub tests: Option<String>,
    pub idle: bool,
    pub stdinarg: bool,
    pub precision: u8,
    pub tls: TlsOptions,
    /// Free-form command (after the options), raw bytes.
    pub command: Vec<Vec<u8>>,
    // ---- keel extensions ----
    pub rate: Option<f64>,
    pub duration: Option<f64>,
    pub warmup: f64,
    pub ratio: Option<(u32, u32)>,
    pub key_pattern: KeyPattern,
    pub key_pattern_given: bool,
    pub key_maximum: Option<u64>,
    pub data_size_range: Option<(usize, usize)>,
    pub json: Option<PathBuf>,
    pub compare: Option<Target>,
    pub progress: Option<bool>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            target: Target {
                host: "127.0.0.1".into(),
                port: 6379,
                socket: None,
            },
            auth: None,
            user: None,
            clients: 50,
            requests: 100_000,
            datasize: 3,
            dbnum: 0,
            resp3: false,
            threads: 0,
            cluster: false,
            tracking: false,
            keepalive: true,
            randomkeys: false,
            keyspacelen: 0,
            pipeline: 1,
            showerrors: false,
            quiet: false,
            csv: false,
            loop_forever: false,
            tests: None,
            idle: false,
            stdinarg: false,
            precision: 3,
            tls: TlsOptions::default(),
            command: Vec::new(),
            rate: None,
            duration: None,
            warmup: 0.0,
            ratio: None,
            key_pattern: KeyPattern::Uniform,
            key_pattern_given: false,
            key_maximum: None,
            data_size_range: None,
            json: None,
            compare: None,
            progress: None,
        }
    }
}

impl Config {
    /// True if the named test was selected with `-t` (or no `-t` given),
    /// the same substring test redis-benchmark performs.
    pub fn test_is_selected(&self, name: &str) -> bool {
        match &self.tests {
            None => true,
            Some(t) => t.contains(&format!(",{name},")),
        }
    }

    /// Keyspace size used for `__rand_int__`: `--key-maximum` wins over `-r`.
    pub fn keyspace(&self) -> u64 {
        self.key_maximum.unwrap_or(self.keyspacelen)
    }
}

pub enum Parsed {
    Run(Box<Config>),
    Help,
    Version,
    /// `report` subcommand, with its own arguments.
    Report(Vec<String>),
    /// Bad option: message for the user.
    Invalid(String),
}

fn invalid(opt: &str) -> String {
    format!("Invalid option \"{opt}\" or option argument missing")
}

/// C `atoi`: leading whitespace, optional sign, digits; junk stops parsing.
pub fn atoi(s: &str) -> i64 {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for c in digits.bytes() {
        if !c.is_ascii_digit() {
            break;
        }
        v = v.saturating_mul(10).saturating_add((c - b'0') as i64);
    }
    if neg {
        -v
    } else {
        v
    }
}

fn parse_f64(opt: &str, v: &str) -> Result<f64, String> {
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .ok_or_else(|| format!("Invalid value \"{v}\" for {opt}"))
}

/// Parses `redis://[[user]:pass@]host[:port][/db]` (or `rediss://`).
fn parse_uri(cfg: &mut Config, uri: &str) -> Result<(), String> {
    let rest = if let Some(r) = uri.strip_prefix("redis://") {
        r
    } else if let Some(r) = uri.strip_prefix("rediss://") {
        cfg.tls.enabled = true;
        r
    } else {
        return Err(format!("Invalid URI scheme: {uri}"));
    };
    let (userinfo, hostpart) = match rest.rfind('@') {
        Some(at) => (Some(&rest[..at]), &rest[at + 1..]),
        None => (None, rest),
    };
    if let Some(ui) = userinfo {
        match ui.find(':') {
            Some(c) => {
                if c > 0 {
                    cfg.user = Some(percent_decode(&ui[..c]));
                }
                cfg.auth = Some(percent_decode(&ui[c + 1..]));
            }
            None => cfg.auth = Some(percent_decode(ui)),
        }
    }
    let (hostport, db) = match hostpart.find('/') {
        Some(s) => (&hostpart[..s], Some(&hostpart[s + 1..])),
        None => (hostpart, None),
    };
    let (host, port) = match hostport.rfind(':') {
        Some(c) if !hostport.ends_with(']') => (&hostport[..c], Some(&hostport[c + 1..])),
        _ => (hostport, None),
    };
    if !host.is_empty() {
        cfg.target.host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
    }
    if let Some(p) = port {
        cfg.target.port = atoi(p).clamp(0, 65535) as u16;
    }
    if let Some(d) = db.filter(|d| !d.is_empty()) {
        cfg.dbnum = atoi(d);
    }
    Ok(())
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_host_port(s: &str) -> Result<Target, String> {
    if s.starts_with('/') {
        return Ok(Target {
            host: String::new(),
            port: 0,
            socket: Some(s.to_string()),
        });
    }
    let (h, p) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("--compare wants host:port, got \"{s}\""))?;
    let port = p
        .parse::<u16>()
        .map_err(|_| format!("--compare: bad port in \"{s}\""))?;
    Ok(Target {
        host: if h.is_empty() {
            "127.0.0.1".into()
        } else {
            h.into()
        },
        port,
        socket: None,
    })
}

/// Parses `argv` (including the program name at index 0).
pub fn parse(args: &[std::ffi::OsString]) -> Parsed {
    use std::os::unix::ffi::OsStrExt;
    let strs: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if strs.get(1).map(String::as_str) == Some("report") {
        return Parsed::Report(strs[2..].to_vec());
    }
    let mut cfg = Config::default();
    let mut i = 1;
    while i < strs.len() {
        let a = strs[i].as_str();
        let lastarg = i == strs.len() - 1;
        // Options that take a value; `next` is only valid when !lastarg.
        macro_rules! next {
            () => {{
                if lastarg {
                    return Parsed::Invalid(invalid(a));
                }
                i += 1;
                strs[i].as_str()
            }};
        }
        macro_rules! bad {
            ($e:expr) => {
                match $e {
                    Ok(v) => v,
                    Err(m) => return Parsed::Invalid(m),
                }
            };
        }
        match a {
            "-c" => cfg.clients = atoi(next!()).max(0) as usize,
            "-v" | "--version" => return Parsed::Version,
            "-n" => cfg.requests = atoi(next!()).max(0) as u64,
            "-k" => cfg.keepalive = atoi(next!()) != 0,
            "-h" => cfg.target.host = next!().to_string(),
            "-p" => cfg.target.port = atoi(next!()).clamp(0, 65535) as u16,
            "-s" => cfg.target.socket = Some(next!().to_string()),
            "-a" => cfg.auth = Some(next!().to_string()),
            "--user" => cfg.user = Some(next!().to_string()),
            "-u" => {
                let u = next!();
                bad!(parse_uri(&mut cfg, u))
            }
            "-d" => cfg.datasize = atoi(next!()).clamp(1, 1024 * 1024 * 1024) as usize,
            "-P" => cfg.pipeline = atoi(next!()).max(1) as usize,
            "-r" => {
                let v = next!();
                let b = v.as_bytes();
                if b.first() == Some(&b'-') && !b.get(1).is_some_and(u8::is_ascii_digit) {
                    return Parsed::Invalid(invalid(v));
                }
                cfg.randomkeys = true;
                cfg.keyspacelen = atoi(v).max(0) as u64;
            }
            "-q" => cfg.quiet = true,
            "--csv" => cfg.csv = true,
            "-l" => cfg.loop_forever = true,
            "-I" => cfg.idle = true,
            "-e" => cfg.showerrors = true,
            "-x" => cfg.stdinarg = true,
            "-3" => cfg.resp3 = true,
            "-t" => cfg.tests = Some(format!(",{},", next!().to_lowercase())),
            "--dbnum" => cfg.dbnum = atoi(next!()),
            "--precision" => {
                let p = atoi(next!());
                cfg.precision = if p < 0 { 3 } else { p.min(4) as u8 };
            }
            "--threads" => {
                let t = atoi(next!());
                if t > 500 {
                    println!("WARNING: too many threads, limiting threads to 500.");
                }
                cfg.threads = t.clamp(0, 500) as usize;
            }
            "--cluster" => cfg.cluster = true,
            "--enable-tracking" => cfg.tracking = true,
            "--help" => return Parsed::Help,
            "--tls" => cfg.tls.enabled = true,
            "--sni" => cfg.tls.sni = Some(next!().into()),
            "--cacert" => cfg.tls.cacert = Some(next!().into()),
            "--cacertdir" => cfg.tls.cacertdir = Some(next!().into()),
            "--insecure" => cfg.tls.insecure = true,
            "--cert" => cfg.tls.cert = Some(next!().into()),
            "--key" => cfg.tls.key = Some(next!().into()),
            "--tls-ciphers" => cfg.tls.ciphers = Some(next!().into()),
            "--tls-ciphersuites" => cfg.tls.ciphersuites = Some(next!().into()),
            // ---- keel extensions ----
            "--rate" => {
                let v = next!();
                let r = bad!(parse_f64(a, v));
                if r <= 0.0 {
                    return Parsed::Invalid(format!("--rate must be > 0, got {v}"));
                }
                cfg.rate = Some(r);
            }
            "--duration" => {
                let v = next!();
                cfg.duration = Some(bad!(parse_f64(a, v)));
            }
            "--warmup" => {
                let v = next!();
                cfg.warmup = bad!(parse_f64(a, v));
            }
            "--ratio" => {
                let v = next!();
                let parsed = v
                    .split_once(':')
                    .and_then(|(s, g)| Some((s.parse::<u32>().ok()?, g.parse::<u32>().ok()?)));
                match parsed {
                    Some((s, g)) if s + g > 0 => cfg.ratio = Some((s, g)),
                    _ => return Parsed::Invalid(format!("--ratio wants SET:GET, got \"{v}\"")),
                }
            }
            "--key-pattern" => {
                cfg.key_pattern_given = true;
                cfg.key_pattern = match next!().to_ascii_lowercase().as_str() {
                    "uniform" | "r" | "random" => KeyPattern::Uniform,
                    "gaussian" | "g" => KeyPattern::Gaussian,
                    "zipfian" | "z" | "zipf" => KeyPattern::Zipfian,
                    "sequential" | "s" => KeyPattern::Sequential,
                    other => {
                        return Parsed::Invalid(format!(
                            "--key-pattern: unknown pattern \"{other}\" \
                             (uniform|gaussian|zipfian|sequential)"
                        ))
                    }
                };
            }
            "--key-maximum" => {
                let v = atoi(next!());
                if v <= 0 {
                    return Parsed::Invalid("--key-maximum must be > 0".into());
                }
                cfg.key_maximum = Some(v as u64);
            }
            "--data-size-range" => {
                let v = next!();
                let parsed = v.split_once('-').and_then(|(lo, hi)| {
                    Some((lo.parse::<usize>().ok()?, hi.parse::<usize>().ok()?))
                });
                match parsed {
                    Some((lo, hi)) if lo >= 1 && lo <= hi => cfg.data_size_range = Some((lo, hi)),
                    _ => {
                        return Parsed::Invalid(format!(
                            "--data-size-range wants MIN-MAX with 1 <= MIN <= MAX, got \"{v}\""
                        ))
                    }
                }
            }
            "--json" => cfg.json = Some(PathBuf::from(next!())),
            "--compare" => {
                let v = next!();
                cfg.compare = Some(bad!(parse_host_port(v)));
            }
            "--progress" => cfg.progress = Some(true),
            "--no-progress" => cfg.progress = Some(false),
            _ => {
                if a.starts_with('-') {
                    return Parsed::Invalid(invalid(a));
                }
                cfg.command = args[i..].iter().map(|s| s.as_bytes().to_vec()).collect();
                break;
            }
        }
        i += 1;
    }
    if cfg.ratio.is_some() || cfg.key_pattern_given || cfg.key_maximum.is_some() {
        // The memtier-style options imply random keys.
        cfg.randomkeys = true;
        if cfg.key_maximum.is_none() && cfg.keyspacelen == 0 {
            cfg.key_maximum = Some(10_000_000);
        }
    }
    Parsed::Run(Box::new(cfg))
}

pub const USAGE: &str = "\
Usage: keel-benchmark [OPTIONS] [COMMAND ARGS...]
       keel-benchmark report RESULTS.json... [-o report.md]

Options:
 -h <hostname>      Server hostname (default 127.0.0.1)
 -p <port>          Server port (default 6379)
 -s <socket>        Server socket (overrides host and port)
 -a <password>      Password for Redis Auth
 --user <username>  Used to send ACL style 'AUTH username pass'. Needs -a.
 -u <uri>           Server URI.
 -c <clients>       Number of parallel connections (default 50)
 -n <requests>      Total number of requests (default 100000)
 -d <size>          Data size of SET/GET value in bytes (default 3)
 --dbnum <db>       SELECT the specified db number (default 0)
 -3                 Start session in RESP3 protocol mode.
 --threads <num>    Enable multi-thread mode.
 --cluster          Enable cluster mode.
                    If the command is supplied on the command line in cluster
                    mode, the key must contain \"{tag}\". Otherwise, the
                    command will not be sent to the right cluster node.
 --enable-tracking  Send CLIENT TRACKING on before starting benchmark.
 -k <boolean>       1=keep alive 0=reconnect (default 1)
 -r <keyspacelen>   Use random keys for SET/GET/INCR, random values for SADD,
                    random members and scores for ZADD.
                    Using this option the benchmark will expand the string
                    __rand_int__ inside an argument with a 12 digits number in
                    the specified range from 0 to keyspacelen-1. The
                    substitution changes every time a command is executed.
                    Default tests use this to hit random keys in the
                    specified range.
                    Note: If -r is omitted, all commands in a benchmark will
                    use the same key.
 -P <numreq>        Pipeline <numreq> requests. Default 1 (no pipeline).
 -e                 If server replies with errors, show them on stdout.
                    (no more than 1 error per second is displayed)
 -q                 Quiet. Just show query/sec values
 --precision        Number of decimal places to display in latency output (default 0)
 --csv              Output in CSV format
 -l                 Loop. Run the tests forever
 -t <tests>         Only run the comma separated list of tests. The test
                    names are the same as the ones produced as output.
                    The -t option is ignored if a specific command is supplied
                    on the command line.
 -I                 Idle mode. Just open N idle connections and wait.
 -x                 Read last argument from STDIN.
 --tls              Establish a secure TLS connection.
 --sni <host>       Server name indication for TLS.
 --cacert <file>    CA Certificate file to verify with.
 --cacertdir <dir>  Directory where trusted CA certificates are stored.
 --insecure         Allow insecure TLS connection by skipping cert validation.
 --cert <file>      Client certificate to authenticate with.
 --key <file>       Private key file to authenticate with.
 --tls-ciphers <list> Sets the list of preferred ciphers (TLSv1.2 and below).
 --tls-ciphersuites <list> Sets the list of preferred ciphersuites (TLSv1.3).
                    (keel-benchmark uses rustls: both cipher options are
                    accepted and ignored, with a warning.)
 --help             Output this help and exit.
 --version          Output version and exit.

keel extensions:
 --rate <N>         Open loop: send N requests/s in total, on a fixed schedule.
                    Latency is measured from each request's intended send time
                    (coordinated-omission corrected).
 --duration <secs>  Run each test for this long instead of -n requests.
 --warmup <secs>    Run the workload this long before measuring.
 --ratio <S:G>      memtier-style mixed workload: S SETs for every G GETs.
 --key-pattern <p>  uniform|gaussian|zipfian|sequential key choice for
                    __rand_int__ and --ratio (default uniform).
 --key-maximum <n>  Keyspace size for --ratio/--key-pattern (default: -r, or 10M).
 --data-size-range <min-max>  Value sizes for --ratio SETs, uniformly chosen.
 --json <file>      Write every figure (percentiles, CPU, server stamp) as JSON.
 --compare <host:port>  Run every test against this second server too,
                    alternately, and print throughput/latency ratios.
 --progress / --no-progress  Force the live progress line on/off
                    (default: on only when stdout is a terminal).

Examples:

 Run the benchmark with the default configuration against 127.0.0.1:6379:
   $ keel-benchmark

 Use 20 parallel clients, for a total of 100k requests, against 192.168.1.1:
   $ keel-benchmark -h 192.168.1.1 -p 6379 -n 100000 -c 20

 Benchmark 127.0.0.1:6379 for a few commands producing CSV output:
   $ keel-benchmark -t ping,set,get -n 100000 --csv

 Benchmark a specific command line:
   $ keel-benchmark -r 10000 -n 10000 eval 'return redis.call(\"ping\")' 0

 Open loop at 20k req/s for 10 s, 1 SET per 10 GETs, zipfian keys:
   $ keel-benchmark --rate 20000 --duration 10 --ratio 1:10 --key-pattern zipfian

 Compare two servers and render a report:
   $ keel-benchmark -p 6379 --compare 127.0.0.1:6380 -t set,get --json r.json
   $ keel-benchmark report r.json -o report.md

 On user specified command lines __rand_int__ is replaced with a random integer
 with a range of values selected by the -r option.
";

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> Config {
        let v: Vec<std::ffi::OsString> = std::iter::once("keel-benchmark")
            .chain(args.iter().copied())
            .map(Into::into)
            .collect();
        match parse(&v) {
            Parsed::Run(c) => *c,
            _ => panic!("not a run"),
        }
    }

    #[test]
    fn redis_benchmark_semantics() {
        let c = p(&[
            "-c", "7", "-n", "10x", "-P", "0", "-d", "0", "-t", "SET,Get",
        ]);
        assert_eq!(c.clients, 7);
        assert_eq!(c.requests, 10);
        assert_eq!(c.pipeline, 1);
        assert_eq!(c.datasize, 1);
        assert!(c.test_is_selected("get"));
        assert!(!c.test_is_selected("ping"));
        let c = p(&["-r", "100", "eval", "return 1", "0", "-x"]);
        assert_eq!(c.command.len(), 4);
        assert_eq!(c.command[3], b"-x");
        assert!(!c.stdinarg);
    }

    #[test]
    fn uri() {
        let c = p(&["-u", "redis://bob:s%40cret@example:7000/3"]);
        assert_eq!(c.user.as_deref(), Some("bob"));
        assert_eq!(c.auth.as_deref(), Some("s@cret"));
        assert_eq!(c.target.host, "example");
        assert_eq!(c.target.port, 7000);
        assert_eq!(c.dbnum, 3);
    }
}
