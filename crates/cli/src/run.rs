//! `railpath run SCENARIO.toml [--seed N] [--out DIR] [--set key.path=value ...]`: load and
//! validate a scenario, simulate it, write `DIR/summary.json` and `DIR/timeseries.csv`
//! (formats in docs/output-contract.md) and print a per-flow table. With `--pcap DIR` (or a
//! `[capture]` table) it also writes packet captures of every link (crates/capture).

use crate::{print_stdout, CliError};
use indicatif::{ProgressBar, ProgressStyle};
use railpath_sim::results::{FlowSummary, Summary};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(clap::Args)]
pub struct Args {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// Seed of every random draw (same as --set run.seed=N), 0 to 2^63-1.
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=i64::MAX as u64))]
    pub seed: Option<u64>,
    /// Output directory [default: out/<scenario file stem>].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override a scenario key, e.g. --set link.a.rate_mbps=5 --set flow[0].cc=cubic.
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    pub set: Vec<String>,
    /// Print what the run would allocate and compute (its size estimate, part by part) and
    /// exit without running it.
    #[arg(long)]
    pub estimate: bool,
    /// Write packet captures of both ends of every link into DIR (pcapng; format and snap
    /// length from the scenario's [capture] table, docs/models/capture.md).
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
}

/// The progress bar appears only once a run has taken this much wall time.
const PROGRESS_AFTER: Duration = Duration::from_secs(1);

pub fn main(args: Args) -> Result<(), CliError> {
    let overrides = overrides(&args);
    let scenario = railpath_scenario::load(&args.scenario, &overrides)?;
    if args.estimate {
        return print_stdout(&estimate_table(&scenario));
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&args.scenario));

    let start = Instant::now();
    let mut bar: Option<ProgressBar> = None;
    let mut progress = |fraction: f64| {
        if bar.is_none() && start.elapsed() >= PROGRESS_AFTER {
            let b = ProgressBar::new(1000).with_elapsed(start.elapsed());
            if let Ok(style) = ProgressStyle::with_template(
                "{spinner} [{elapsed_precise}] {wide_bar} {percent}% {msg}",
            ) {
                b.set_style(style);
            }
            bar = Some(b);
        }
        if let Some(b) = &bar {
            let f = fraction.clamp(0.0, 1.0);
            b.set_position((f * 1000.0) as u64);
            // Remaining wall time if the rest runs as fast as the run so far.
            if f > 0.0 {
                let left = start.elapsed().as_secs_f64() * (1.0 - f) / f;
                b.set_message(format!("about {left:.0} s left"));
            }
        }
    };
    let resolved = scenario.validate()?;
    let capture = railpath_capture::CaptureOptions::for_run(
        resolved.capture.as_ref(),
        &out,
        args.pcap.clone(),
    );
    let result = match &capture {
        None => railpath_sim::run_with_progress(&resolved, &mut progress)
            .map(|r| (r, None))
            .map_err(CliError::from),
        Some(o) => railpath_capture::run_with_capture(&resolved, &mut progress, o)
            .map(|(r, rep)| (r, Some(rep)))
            .map_err(|e| match e {
                railpath_capture::sim::CaptureRunError::Sim(e) => CliError::from(e),
                railpath_capture::sim::CaptureRunError::Capture(m) => {
                    CliError::Failed(format!("capture: {m}"))
                }
            }),
    };
    let wall = start.elapsed();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let (mut results, report) = result?;
    results.summary.wall_s = wall.as_secs_f64();

    write_outputs(&out, &results)?;
    let captured = match (&capture, report) {
        (Some(c), Some(rep)) => format!(
            "; captures ({} packets) in {}",
            rep.files.iter().map(|f| f.1).sum::<u64>(),
            c.dir.display()
        ),
        _ => String::new(),
    };
    print_stdout(&format!(
        "{}{} events in {:.3} s wall; results in {}{captured}\n",
        summary_table(&results.summary),
        results.summary.events,
        results.summary.wall_s,
        out.display()
    ))
}

/// The size estimate of a loaded scenario, one line per part and the totals.
fn estimate_table(s: &railpath_scenario::Scenario) -> String {
    let parts = s.size_estimate();
    let mut out = format!("{:>12} {:>12}  part (keys)\n", "memory MB", "events");
    for p in &parts {
        out += &format!(
            "{:>12.1} {:>12.3e}  {} ({})\n",
            p.bytes / 1e6,
            p.work,
            p.what,
            p.keys
        );
    }
    out += &format!(
        "{:>12.1} {:>12.3e}  total\n",
        parts.iter().map(|p| p.bytes).sum::<f64>() / 1e6,
        parts.iter().map(|p| p.work).sum::<f64>()
    );
    out
}

/// `--seed N` is `run.seed=N`, applied after the `--set` overrides so that it wins.
fn overrides(args: &Args) -> Vec<String> {
    let mut o = args.set.clone();
    if let Some(seed) = args.seed {
        o.push(format!("run.seed={seed}"));
    }
    o
}

/// `out/<scenario file stem>`.
pub fn default_out(scenario: &Path) -> PathBuf {
    let stem = scenario
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".to_string());
    Path::new("out").join(stem)
}

/// Write a run's `summary.json` and `timeseries.csv` into `out` (created if needed).
pub fn write_outputs(out: &Path, results: &railpath_sim::RunResults) -> Result<(), CliError> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        CliError::Failed(format!("cannot {what} {}: {e}", p.display()))
    };
    std::fs::create_dir_all(out).map_err(|e| io("create directory", out, e))?;
    let mut json = serde_json::to_string_pretty(&results.summary)
        .map_err(|e| CliError::Failed(format!("cannot serialise the summary: {e}")))?;
    json.push('\n');
    let p = out.join("summary.json");
    std::fs::write(&p, json).map_err(|e| io("write", &p, e))?;
    let p = out.join("timeseries.csv");
    let file = std::fs::File::create(&p).map_err(|e| io("write", &p, e))?;
    let mut w = std::io::BufWriter::new(file);
    results
        .write_timeseries_csv(&mut w)
        .and_then(|()| std::io::Write::flush(&mut w))
        .map_err(|e| io("write", &p, e))?;
    Ok(())
}

/// What the table shows of one flow.
pub struct Row<'a> {
    pub id: &'a str,
    pub kind: &'a str,
    pub cc: &'a str,
    pub goodput_bps: f64,
    pub retransmitted: u64,
    pub fct_s: Option<f64>,
}

impl<'a> From<&'a FlowSummary> for Row<'a> {
    fn from(f: &'a FlowSummary) -> Self {
        Row {
            id: &f.id,
            kind: &f.kind,
            cc: &f.cc,
            goodput_bps: f.goodput_bps,
            retransmitted: f.retransmitted_packets,
            fct_s: f.fct_s,
        }
    }
}

/// The flows of a summary as a table.
pub fn summary_table(s: &Summary) -> String {
    let rows: Vec<Row> = s.flows.iter().map(Row::from).collect();
    flow_table(&rows)
}

/// One line per flow: id, kind, cc, goodput in Mbit/s, retransmitted packets, completion time.
pub fn flow_table(rows: &[Row]) -> String {
    let id_w = rows.iter().map(|f| f.id.len()).max().unwrap_or(0).max(4);
    let cc_w = rows.iter().map(|f| f.cc.len()).max().unwrap_or(0).max(2);
    let mut t = format!(
        "{:<id_w$}  {:<5}  {:<cc_w$}  {:>14}  {:>13}  {:>8}\n",
        "flow", "kind", "cc", "goodput_Mbit/s", "retransmitted", "fct_s"
    );
    for f in rows {
        let fct = match f.fct_s {
            Some(x) => format!("{x:.3}"),
            None => "-".to_string(),
        };
        t.push_str(&format!(
            "{:<id_w$}  {:<5}  {:<cc_w$}  {:>14.3}  {:>13}  {:>8}\n",
            f.id,
            f.kind,
            f.cc,
            f.goodput_bps / 1e6,
            f.retransmitted,
            fct
        ));
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &'static str, goodput_bps: f64, fct_s: Option<f64>) -> Row<'static> {
        Row {
            id,
            kind: "tcp",
            cc: "cubic",
            goodput_bps,
            retransmitted: 7,
            fct_s,
        }
    }

    #[test]
    fn default_out_is_out_slash_stem() {
        assert_eq!(
            default_out(Path::new("scenarios/tcp-outage.toml")),
            Path::new("out/tcp-outage")
        );
        assert_eq!(default_out(Path::new("x")), Path::new("out/x"));
    }

    #[test]
    fn seed_flag_becomes_last_override() {
        let a = Args {
            scenario: "s.toml".into(),
            seed: Some(9),
            out: None,
            set: vec!["run.seed=3".into(), "link.a.loss=0.1".into()],
            estimate: false,
            pcap: None,
        };
        assert_eq!(
            overrides(&a),
            vec!["run.seed=3", "link.a.loss=0.1", "run.seed=9"]
        );
    }

    #[test]
    fn table_shows_mbits_and_dash_for_bulk() {
        let t = flow_table(&[
            row("dl", 9_500_000.0, None),
            row("web", 1_000_000.0, Some(2.5)),
        ]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].starts_with("flow"));
        let dl: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(dl, ["dl", "tcp", "cubic", "9.500", "7", "-"]);
        let web: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(web, ["web", "tcp", "cubic", "1.000", "7", "2.500"]);
    }
}
