//! `keel-benchmark report RESULTS.json... -o report.md`: renders saved
//! results as a markdown comparison (ratio columns against the first
//! series) and a hand-written SVG chart of the latency percentile spectrum,
//! written beside the report.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Parser;

use crate::results::{ResultsFile, TestResult};
use crate::server::ServerStamp;

#[derive(Parser, Debug)]
#[command(
    name = "keel-benchmark report",
    about = "Render keel-benchmark --json results as markdown + SVG"
)]
struct Args {
    /// Results files written with --json.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// Markdown output; the SVG chart is written beside it.
    #[arg(short = 'o', long = "output", default_value = "report.md")]
    output: PathBuf,
    /// Title of the report.
    #[arg(long, default_value = "keel-benchmark report")]
    title: String,
}

/// One column group of the report: one file, or one server of a file.
struct Series {
    label: String,
    file: ResultsFile,
    stamp: Option<ServerStamp>,
    /// Test name → result.
    tests: BTreeMap<String, TestResult>,
    order: Vec<String>,
}

pub fn main(argv: &[String]) -> Result<i32> {
    let args = Args::try_parse_from(
        std::iter::once("keel-benchmark report".to_string()).chain(argv.iter().cloned()),
    )
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut loaded = Vec::new();
    for f in &args.files {
        let text =
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let file: ResultsFile =
            serde_json::from_str(&text).with_context(|| format!("parsing {}", f.display()))?;
        loaded.push((f.clone(), file));
    }
    let series = build_series(loaded);
    if series.is_empty() {
        bail!("no results in the given files");
    }
    let svg_path = svg_path_for(&args.output);
    let svg_name = svg_path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let md = render_markdown(&args.title, &series, &args.files, &svg_name);
    let svg = render_svg(&series);
    if let Some(dir) = args.output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&args.output, md)
        .with_context(|| format!("writing {}", args.output.display()))?;
    std::fs::write(&svg_path, svg).with_context(|| format!("writing {}", svg_path.display()))?;
    println!("wrote {} and {}", args.output.display(), svg_path.display());
    Ok(0)
}

fn svg_path_for(md: &Path) -> PathBuf {
    let stem = md
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "report".into());
    md.with_file_name(format!("{stem}-latency.svg"))
}

/// Strips the " [host:port]" suffix `--compare` adds to titles.
fn base_name(r: &TestResult) -> String {
    let suffix = format!(" [{}]", r.target);
    r.test.strip_suffix(&suffix).unwrap_or(&r.test).to_string()
}

fn build_series(files: Vec<(PathBuf, ResultsFile)>) -> Vec<Series> {
    let multi_file = files.len() > 1;
    let mut out: Vec<Series> = Vec::new();
    for (path, file) in files {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut targets: Vec<String> = Vec::new();
        for r in &file.results {
            if !targets.contains(&r.target) {
                targets.push(r.target.clone());
            }
        }
        for t in &targets {
            let label = match (multi_file, targets.len() > 1) {
                (true, true) => format!("{stem} {t}"),
                (true, false) => stem.clone(),
                (false, _) => t.clone(),
            };
            let mut s = Series {
                label,
                stamp: file.servers.iter().find(|st| &st.target == t).cloned(),
                file: file.clone(),
                tests: BTreeMap::new(),
                order: Vec::new(),
            };
            for r in file.results.iter().filter(|r| &r.target == t) {
                let name = base_name(r);
                if !s.tests.contains_key(&name) {
                    s.order.push(name.clone());
                }
                // With -l, later loops overwrite: the last run wins.
                s.tests.insert(name, r.clone());
            }
            out.push(s);
        }
    }
    out
}

fn all_tests(series: &[Series]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for s in series {
        for n in &s.order {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    names
}

fn render_markdown(title: &str, series: &[Series], files: &[PathBuf], svg: &str) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# {title}\n");
    let _ = writeln!(
        md,
        "Rendered by keel-benchmark {} from {}.\n",
        env!("CARGO_PKG_VERSION"),
        files
            .iter()
            .map(|f| format!("`{}`", f.display()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(md, "## Setup\n");
    let _ = writeln!(
        md,
        "| series | server | persistence | server threads | client cores | clients | pipeline | payload | mode |"
    );
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|");
    for s in series {
        let st = s.stamp.clone().unwrap_or_default();
        let server = match (&st.keel_version, &st.redis_version) {
            (Some(k), _) => format!("keel {k}"),
            (None, Some(r)) => format!("redis {r}"),
            _ => "?".into(),
        };
        let c = &s.file.config;
        let mode = match (c.rate, c.duration) {
            (Some(r), _) => format!("open loop {r} req/s"),
            (None, Some(d)) => format!("closed loop, {d} s"),
            (None, None) => format!("closed loop, {} requests", c.requests),
        };
        let _ = writeln!(
            md,
            "| {} | {} @ {} | save=\"{}\" appendonly={} appendfsync={} | {} | {} | {} | {} | {} B | {} |",
            s.label,
            server,
            st.target,
            st.save.unwrap_or_default(),
            st.appendonly.unwrap_or_else(|| "?".into()),
            st.appendfsync.unwrap_or_else(|| "?".into()),
            st.server_threads.map(|t| t.to_string()).unwrap_or_else(|| "?".into()),
            s.file.machine.cores,
            c.clients,
            c.pipeline,
            c.datasize,
            mode
        );
    }
    let base = &series[0];
    let _ = writeln!(md, "\n## Throughput and latency\n");
    let mut header = String::from("| test |");
    let mut sep = String::from("|---|");
    for s in series {
        let _ = write!(header, " rps {} |", s.label);
        sep += "---:|";
    }
    for s in &series[1..] {
        let _ = write!(header, " {} / {} |", s.label, base.label);
        sep += "---:|";
    }
    for p in ["p50", "p99", "p99.9"] {
        for s in series {
            let _ = write!(header, " {p} ms {} |", s.label);
            sep += "---:|";
        }
    }
    let _ = writeln!(md, "{header}\n{sep}");
    for name in all_tests(series) {
        let mut row = format!("| {name} |");
        for s in series {
            match s.tests.get(&name) {
                Some(r) => {
                    let _ = write!(row, " {:.0} |", r.rps);
                }
                None => row += " – |",
            }
        }
        for s in &series[1..] {
            match (base.tests.get(&name), s.tests.get(&name)) {
                (Some(a), Some(b)) if a.rps > 0.0 => {
                    let _ = write!(row, " {:.2}× |", b.rps / a.rps);
                }
                _ => row += " – |",
            }
        }
        for pick in [0usize, 1, 2] {
            for s in series {
                match s.tests.get(&name) {
                    Some(r) => {
                        let l = &r.latency_ms;
                        let v = [l.p50, l.p99, l.p999][pick];
                        let _ = write!(row, " {v:.3} |");
                    }
                    None => row += " – |",
                }
            }
        }
        let _ = writeln!(md, "{row}");
    }
    let _ = writeln!(md, "\n## Latency by percentile\n");
    let _ = writeln!(md, "![latency percentile spectrum]({svg})\n");
    let _ = writeln!(md, "## Checks\n");
    let mut any = false;
    for s in series {
        for name in &s.order {
            let Some(r) = s.tests.get(name) else { continue };
            let mut notes = Vec::new();
            if r.client.client_bound {
                notes.push(format!(
                    "client-bound: busiest client thread at {:.0}% of a core",
                    r.client.max_thread_core_pct
                ));
            }
            if let Some(c) = &r.commandstats {
                if !c.ok {
                    notes.push(format!(
                        "commandstats mismatch: server counted {}, expected {}",
                        c.server_delta, c.expected
                    ));
                }
            }
            if r.errors > 0 {
                notes.push(format!("{} error replies", r.errors));
            }
            for n in notes {
                any = true;
                let _ = writeln!(md, "- {} / {}: {}", s.label, name, n);
            }
        }
    }
    if !any {
        let _ = writeln!(
            md,
            "All runs: no error replies, request counts match the server's commandstats \
             (where available), and no client thread above 90% of a core."
        );
    }
    md
}

const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// x position of a percentile on the "number of nines" scale.
fn nines(p: f64) -> f64 {
    let x = -(1.0 - p / 100.0).max(1e-6).log10();
    x.clamp(0.0, 5.0)
}

fn nice_ceiling(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let mag = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if v <= m * mag {
            return m * mag;
        }
    }
    10.0 * mag
}

/// Small multiples: one panel per test, one polyline per series.
fn render_svg(series: &[Series]) -> String {
    let tests = all_tests(series);
    let (pw, ph, cols) = (380.0, 230.0, 3usize);
    let rows = tests.len().div_ceil(cols).max(1);
    let legend_h = 30.0 + 18.0 * series.len() as f64;
    let (w, h) = (pw * cols as f64 + 20.0, ph * rows as f64 + legend_h + 10.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="10" y="18" font-size="14" font-weight="bold">Latency by percentile (ms; x axis: 0%, 90%, 99%, 99.9%, ...)</text>"#
    );
    for (i, se) in series.iter().enumerate() {
        let y = 36.0 + 18.0 * i as f64;
        let c = COLORS[i % COLORS.len()];
        let _ = writeln!(
            s,
            r#"<line x1="14" y1="{y}" x2="40" y2="{y}" stroke="{c}" stroke-width="2.5"/><text x="46" y="{}">{}</text>"#,
            y + 4.0,
            esc(&se.label)
        );
    }
    for (ti, name) in tests.iter().enumerate() {
        let ox = 10.0 + pw * (ti % cols) as f64;
        let oy = legend_h + ph * (ti / cols) as f64;
        let (l, r, t, b) = (ox + 45.0, ox + pw - 15.0, oy + 22.0, oy + ph - 30.0);
        let ymax = nice_ceiling(
            series
                .iter()
                .filter_map(|se| se.tests.get(name))
                .flat_map(|r| r.percentiles.iter().map(|p| p.latency_ms))
                .fold(0.0, f64::max),
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" font-weight="bold">{}</text>"#,
            l,
            oy + 14.0,
            esc(name)
        );
        let _ = writeln!(
            s,
            r##"<rect x="{l}" y="{t}" width="{}" height="{}" fill="none" stroke="#999"/>"##,
            r - l,
            b - t
        );
        for (k, lab) in ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]
            .iter()
            .enumerate()
        {
            let x = l + (r - l) * k as f64 / 5.0;
            let _ = writeln!(
                s,
                r##"<line x1="{x}" y1="{t}" x2="{x}" y2="{b}" stroke="#eee"/><text x="{x}" y="{}" text-anchor="middle" font-size="9">{lab}</text>"##,
                b + 12.0
            );
        }
        for k in 0..=4 {
            let v = ymax * k as f64 / 4.0;
            let y = b - (b - t) * k as f64 / 4.0;
            let _ = writeln!(
                s,
                r##"<line x1="{l}" y1="{y}" x2="{r}" y2="{y}" stroke="#eee"/><text x="{}" y="{}" text-anchor="end" font-size="9">{}</text>"##,
                l - 4.0,
                y + 3.0,
                fmt_ms(v)
            );
        }
        for (si, se) in series.iter().enumerate() {
            let Some(res) = se.tests.get(name) else {
                continue;
            };
            let pts: Vec<String> = res
                .percentiles
                .iter()
                .map(|p| {
                    let x = l + (r - l) * nines(p.percentile) / 5.0;
                    let y = b - (b - t) * (p.latency_ms / ymax).min(1.0);
                    format!("{x:.1},{y:.1}")
                })
                .collect();
            let _ = writeln!(
                s,
                r#"<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>"#,
                COLORS[si % COLORS.len()],
                pts.join(" ")
            );
        }
    }
    s += "</svg>\n";
    s
}

fn fmt_ms(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else if v >= 1.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}
