//! railpath-repro: each source paper's experiment run by the simulator and compared with the
//! paper's numbers, in a `summary.json` and an HTML report a reader can hold next to the paper.
//!
//! The frame: a paper is a [`Paper`] (name, source file, a function that runs it); `run` runs
//! one or all of them into `OUT/<paper>/summary.json` and `OUT/<paper>/report.html`, and
//! writes `OUT/index.html`. Used by `railpath repro` and by the Python package's
//! `railpath.repro`, so both run the same code. Papers join by adding an entry to [`PAPERS`].

use serde::Serialize;
use std::path::{Path, PathBuf};

pub mod bloat;
pub mod bond;
pub mod pha;
pub mod proxy_lb;
pub mod stats;
pub mod svg;
pub mod tcp_fs;

/// The `format` of a reproduction summary.
pub const FORMAT: &str = "railpath-repro/1";

/// How a reproduction runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Output directory; each paper writes into `out/<paper>/`.
    pub out: PathBuf,
    /// Seeds per configuration (each configuration runs with seeds 1..=seeds).
    pub seeds: u64,
    /// Parallel runs (threads); 0 = every core.
    pub jobs: usize,
    /// The real kernel, when the caller can run it (root, `railpath repro --testbed`): papers
    /// that have a kernel side run it too and show it beside the simulator.
    pub kernel: Option<KernelRun>,
    /// Runs per kernel configuration (seeds 1..=kernel_runs); each takes the scenario's
    /// duration in real time.
    pub kernel_runs: u64,
    /// Run each seed's kernel configurations at the same time, each on a testbed of its own
    /// (half the wall time; the default runs them one after another, as the published
    /// campaigns were measured).
    pub kernel_side_by_side: bool,
    /// Length of a kernel run, s, for papers whose kernel side is a shortened run (PROXY-LB:
    /// default 120 s); PHA runs its scenario's duration.
    pub kernel_duration_s: Option<f64>,
    /// PROXY-LB: kernel runs with 1..=N cars (default 5).
    pub kernel_cars: Option<usize>,
}

/// Runs a scenario on the real kernel (the namespace testbed), in a work directory of its own,
/// with railpath-gateway's PHA-D controller for flows whose `mechanisms` ask for it.
pub type KernelRun = fn(&railpath_scenario::Scenario, &Path) -> Result<KernelResult, String>;

/// A kernel run's results (the simulator's result types, so both are summarised alike) and a
/// line saying what the controller did, if one ran.
#[derive(Debug, Clone)]
pub struct KernelResult {
    pub results: railpath_sim::RunResults,
    pub note: String,
}

impl Options {
    pub fn threads(&self) -> usize {
        if self.jobs > 0 {
            self.jobs
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    }
}

/// One claim of a paper and whether railpath's numbers bear it out.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Claim {
    pub id: String,
    pub text: String,
    pub holds: bool,
    /// What railpath measured that decides it.
    pub evidence: String,
}

/// One number the paper reports beside railpath's.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Number {
    pub id: String,
    /// The paper's value; null for railpath-only numbers (e.g. PHA-D, not in the paper's tables).
    pub paper: Option<f64>,
    pub railpath: f64,
    pub ci95: [f64; 2],
    pub unit: String,
}

/// A reproduction's `summary.json` (results.md "Reproduction output").
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub format: String,
    pub paper: String,
    pub source: String,
    pub railpath_version: String,
    pub seeds: u64,
    pub runs: u64,
    pub claims: Vec<Claim>,
    pub numbers: Vec<Number>,
}

/// Runs a paper's experiment into a directory (writing its report there), logging progress.
pub type RunFn = fn(&Options, &Path, &mut dyn FnMut(&str)) -> Result<Summary, String>;

/// A paper the frame can reproduce.
pub struct Paper {
    pub name: &'static str,
    pub title: &'static str,
    /// The original under shared/seeds/.
    pub source: &'static str,
    /// Runs the experiment: writes `dir/report.html` and returns the summary.
    pub run: RunFn,
}

/// Every paper reproduced so far.
pub const PAPERS: &[Paper] = &[
    Paper {
        name: "pha",
        title: "PHA: proactive handover-aware MPTCP scheduling on high-speed trains",
        source: "000_974d784f7c8d79bb.txt",
        run: pha::run,
    },
    Paper {
        name: "proxy-lb",
        title: "PROXY-LB: an MPTCP proxy on the train against the KTX load balancer",
        source: "001_6b2c89c274e8c693.txt",
        run: proxy_lb::run,
    },
    Paper {
        name: "tcp-fs",
        title: "TCP-FS: receiver-initiated slow start across vertical handoffs",
        source: "002_d893380a32320789.txt",
        run: tcp_fs::run,
    },
    Paper {
        name: "bloat",
        title: "BLOAT: sender-side transmission-status monitoring against bufferbloat in MPTCP",
        source: "003_e970a19d997de553.txt",
        run: bloat::run,
    },
    Paper {
        name: "bond",
        title: "BOND: link bonding against MPTCP over two Wi-Fi interfaces, and their power",
        source: "004_3aa6be496264816a.txt",
        run: bond::run,
    },
];

/// Paper names, for errors and help.
pub fn names() -> Vec<&'static str> {
    PAPERS.iter().map(|p| p.name).collect()
}

/// Run `which` ("all" or a paper name); returns each paper's summary. `log` gets progress lines.
pub fn run(which: &str, opts: &Options, log: &mut dyn FnMut(&str)) -> Result<Vec<Summary>, String> {
    let chosen: Vec<&Paper> = if which == "all" {
        PAPERS.iter().collect()
    } else {
        match PAPERS.iter().find(|p| p.name == which) {
            Some(p) => vec![p],
            None => {
                return Err(format!(
                    "unknown paper {which:?}; expected all or one of {}",
                    names().join(", ")
                ))
            }
        }
    };
    let mut out = Vec::new();
    for p in chosen {
        let dir = opts.out.join(p.name);
        std::fs::create_dir_all(&dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let s = (p.run)(opts, &dir, log)?;
        write_json(&dir.join("summary.json"), &s)?;
        out.push(s);
    }
    write_index(&opts.out, &out)?;
    Ok(out)
}

/// Run a scenario in the simulator: validated and resolved, then simulated. Every simulator run
/// of a reproduction goes through here.
pub(crate) fn simulate(
    s: &railpath_scenario::Scenario,
) -> Result<railpath_sim::RunResults, String> {
    let r = s.validate().map_err(|e| e.to_string())?;
    railpath_sim::run(&r).map_err(|e| e.to_string())
}

/// A number for a report's table: its mean with `digits` decimals and its 95% interval after it
/// (the mean alone when the interval is a point: one seed, or runs that do not vary).
pub(crate) fn fmt_number(n: &Number, digits: usize) -> String {
    if n.ci95[0] == n.ci95[1] {
        format!("{:.*}", digits, n.railpath)
    } else {
        format!(
            "{:.*} [{:.*}, {:.*}]",
            digits, n.railpath, digits, n.ci95[0], digits, n.ci95[1]
        )
    }
}

/// The claims of a summary as HTML table rows: claim, verdict, evidence.
pub fn claim_rows(s: &Summary) -> String {
    let mut out = String::new();
    for c in &s.claims {
        let (class, verdict) = if c.holds {
            ("holds", "holds")
        } else {
            ("fails", "does not hold")
        };
        out.push_str(&format!(
            "<tr><td>{}</td><td class=\"{class}\">{verdict}</td><td>{}</td></tr>\n",
            svg::esc(&c.text),
            svg::esc(&c.evidence)
        ));
    }
    out
}

pub fn write_json<T: Serialize>(path: &Path, v: &T) -> Result<(), String> {
    let mut text = serde_json::to_string_pretty(v).map_err(|e| e.to_string())?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `OUT/index.html`: every paper reproduced in this output directory, with its claims.
fn write_index(out: &Path, done: &[Summary]) -> Result<(), String> {
    // Papers reproduced earlier into the same directory stay listed.
    let mut all: Vec<(&Paper, usize, usize)> = Vec::new();
    for p in PAPERS {
        let counts = match done.iter().find(|s| s.paper == p.name) {
            Some(s) => Some((s.claims.iter().filter(|c| c.holds).count(), s.claims.len())),
            None => std::fs::read_to_string(out.join(p.name).join("summary.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| {
                    let c = v["claims"].as_array()?.clone();
                    Some((c.iter().filter(|x| x["holds"] == true).count(), c.len()))
                }),
        };
        if let Some((held, n)) = counts {
            all.push((p, held, n));
        }
    }
    let mut rows = String::new();
    for (p, held, n) in &all {
        let name = p.name;
        rows.push_str(&format!(
            "<tr><td><a href=\"{name}/report.html\">{name}</a></td><td>{}</td><td>{held} of {n}</td><td><a href=\"{name}/summary.json\">summary.json</a></td></tr>\n",
            svg::esc(p.title)
        ));
    }
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>railpath reproductions</title>\n<style>{CSS}</style></head><body>\n<h1>railpath: the source papers, reproduced</h1>\n<p>railpath {} ran each paper's experiment in its simulator. Each report puts the paper's numbers beside railpath's, with 95% confidence intervals over seeds, and says where and why they differ.</p>\n<table><tr><th>paper</th><th>title</th><th>claims that hold</th><th>data</th></tr>\n{rows}</table>\n</body></html>\n",
        env!("CARGO_PKG_VERSION")
    );
    let p = out.join("index.html");
    std::fs::write(&p, html).map_err(|e| format!("cannot write {}: {e}", p.display()))
}

/// Shared report style.
pub const CSS: &str = "body{font-family:sans-serif;max-width:980px;margin:2em auto;padding:0 1em;line-height:1.45;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}\
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}\
.holds{color:#106b21;font-weight:bold}.fails{color:#a4160b;font-weight:bold}\
figure{margin:1.5em 0}figcaption{font-size:0.9em;color:#444;max-width:640px}\
.note{background:#fff8e1;border-left:4px solid #e6a700;padding:0.5em 1em}";
