//! `railpath analyze CAPTURE... [--scenario FILE] [--out DIR] [--bin-ms MS] [--stall-ms MS]`:
//! the analysis of crates/capture over packet captures of either stack (a simulator run's
//! `--pcap`, a testbed run's `--pcap`, or any pcap/pcapng), written as `DIR/analysis.json` (per
//! flow and subflow: sent, retransmitted, reinjected, delivered, RTT samples, stalls, MP_PRIO)
//! and `DIR/analysis.csv` (series in `timeseries.csv`'s format), with a table on stdout.

use crate::{print_stdout, CliError};
use railpath_capture::analyze::{Analysis, AnalyzeOptions};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    /// Capture files, or directories of them (.pcap, .pcapng).
    #[arg(required = true)]
    pub captures: Vec<PathBuf>,
    /// The scenario the captures are of: its flow ids name the flows (by server port 5201 + i),
    /// its bin width and duration shape the series.
    #[arg(long)]
    pub scenario: Option<PathBuf>,
    /// Override a key of --scenario, as `railpath run --set`.
    #[arg(long = "set", value_name = "KEY.PATH=VALUE", requires = "scenario")]
    pub set: Vec<String>,
    /// Output directory [default: <first capture's directory>/analysis].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Bin width of the series, ms [default: the scenario's run.bin_ms, else 100].
    #[arg(long)]
    pub bin_ms: Option<f64>,
    /// The shortest gap of the in-order data stream reported as a stall, ms.
    #[arg(long, default_value_t = 200.0)]
    pub stall_ms: f64,
}

pub fn main(args: Args) -> Result<(), CliError> {
    let mut opts = AnalyzeOptions {
        stall_s: args.stall_ms / 1000.0,
        ..AnalyzeOptions::default()
    };
    if !(args.stall_ms.is_finite() && args.stall_ms >= 0.0) {
        return Err(CliError::Input(format!(
            "--stall-ms: expected a duration >= 0 ms, found {}",
            args.stall_ms
        )));
    }
    if let Some(p) = &args.scenario {
        let s = railpath_scenario::load(p, &args.set)?;
        opts.flow_names = s.flows.iter().map(|f| f.id.clone()).collect();
        opts.bin_s = s.run.bin_ms / 1000.0;
        opts.duration_s = Some(s.run.duration_s);
    }
    if let Some(b) = args.bin_ms {
        if !(b.is_finite() && b >= 0.001) {
            return Err(CliError::Input(format!(
                "--bin-ms: expected a width of at least 0.001 ms, found {b}"
            )));
        }
        opts.bin_s = b / 1000.0;
    }
    let a = railpath_capture::analyze(&args.captures, &opts)
        .map_err(|e| CliError::Input(e.to_string()))?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&args.captures));
    write(&out, &a)?;
    print_stdout(&format!("{}results in {}\n", table(&a), out.display()))
}

/// `<first capture's directory>/analysis` (a directory given is its own).
fn default_out(captures: &[PathBuf]) -> PathBuf {
    let first = &captures[0];
    let dir = if first.is_dir() {
        first.clone()
    } else {
        first
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("."))
    };
    dir.join("analysis")
}

fn write(out: &Path, a: &Analysis) -> Result<(), CliError> {
    let io = |what: &str, p: &Path, e: std::io::Error| {
        CliError::Failed(format!("cannot {what} {}: {e}", p.display()))
    };
    std::fs::create_dir_all(out).map_err(|e| io("create directory", out, e))?;
    let p = out.join("analysis.json");
    let mut json = serde_json::to_string_pretty(&a.summary)
        .map_err(|e| CliError::Failed(format!("cannot serialise the analysis: {e}")))?;
    json.push('\n');
    std::fs::write(&p, json).map_err(|e| io("write", &p, e))?;
    let p = out.join("analysis.csv");
    let f = std::fs::File::create(&p).map_err(|e| io("write", &p, e))?;
    let mut w = std::io::BufWriter::new(f);
    a.write_csv(&mut w)
        .and_then(|()| std::io::Write::flush(&mut w))
        .map_err(|e| io("write", &p, e))
}

/// One line per flow and subflow.
fn table(a: &Analysis) -> String {
    let mut t = format!(
        "{:<14} {:<10} {:>12} {:>9} {:>9} {:>9} {:>9} {:>7} {:>6}\n",
        "flow", "subflow", "Mbit/s", "sent", "retrans", "reinj", "rtt_ms", "stalls", "prio"
    );
    for f in &a.summary.flows {
        let stalled: f64 = f.stalls.iter().map(|s| s.duration_s).sum();
        t += &format!(
            "{:<14} {:<10} {:>12.3} {:>9} {:>9} {:>9} {:>9} {:>7} {:>6}\n",
            f.id,
            "",
            f.goodput_bps / 1e6,
            f.sent_packets,
            f.retransmitted_packets,
            f.reinjected_packets,
            "",
            format!("{}/{stalled:.1}s", f.stalls.len()),
            f.mp_prio.len()
        );
        for s in &f.subflows {
            t += &format!(
                "{:<14} {:<10} {:>12} {:>9} {:>9} {:>9} {:>9} {:>7} {:>6}\n",
                "",
                s.id,
                "",
                s.sent_packets,
                s.retransmitted_packets,
                "",
                s.rtt
                    .map_or("-".to_string(), |r| format!("{:.1}", r.mean_ms)),
                "",
                ""
            );
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_out_sits_beside_the_captures() {
        assert_eq!(
            default_out(&[PathBuf::from("runs/x/sender.pcapng")]),
            Path::new("runs/x/analysis")
        );
        assert_eq!(
            default_out(&[PathBuf::from("capture.pcap")]),
            Path::new("analysis")
        );
    }
}
