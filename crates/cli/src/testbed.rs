//! `railpath testbed run SCENARIO.toml [--out DIR] [--seed N] [--set key=value ...]`: run the
//! scenario's flows as real kernel TCP/MPTCP connections in network namespaces over the userspace
//! link emulator (crates/linkem, docs/testbed.md) and write `DIR/summary.json` and
//! `DIR/timeseries.csv` in the simulator's format. Needs root (CAP_NET_ADMIN) and kernel MPTCP.
//! It also writes `DIR/testbed.json`: the emulator's timing (write lateness against the schedule),
//! both directions' counters per link and the outages as they happened.
//! `railpath testbed compare A B`: goodput per flow and subflow of two runs side by side.

use crate::{print_stdout, CliError};
use railpath_linkem::TestbedError;
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// Run one scenario over real kernel TCP/MPTCP in network namespaces (root only).
    Run(RunArgs),
    /// Compare two runs' summary.json (e.g. simulator vs testbed): goodput per flow and subflow.
    Compare(CompareArgs),
}

#[derive(clap::Args)]
pub struct CompareArgs {
    /// First run: a summary.json or the directory holding it (e.g. the simulator's).
    pub a: PathBuf,
    /// Second run (e.g. the testbed's).
    pub b: PathBuf,
}

#[derive(clap::Args)]
pub struct RunArgs {
    /// Scenario file (TOML).
    pub scenario: PathBuf,
    /// Seed of the emulator's random losses (same as --set run.seed=N), 0 to 2^63-1.
    #[arg(long, value_parser = clap::value_parser!(u64).range(..=i64::MAX as u64))]
    pub seed: Option<u64>,
    /// Output directory [default: out/<scenario file stem>-testbed].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Override a scenario key, e.g. --set link.a.rate_mbps=5.
    #[arg(long = "set", value_name = "KEY.PATH=VALUE")]
    pub set: Vec<String>,
    /// Capture both ends of every emulated link into DIR, as `railpath run --pcap` does for
    /// the simulator's (format and snap length from the scenario's [capture] table).
    #[arg(long, value_name = "DIR")]
    pub pcap: Option<PathBuf>,
}

pub fn main(args: Args) -> Result<(), CliError> {
    match args.command {
        Command::Run(a) => run(a),
        Command::Compare(a) => compare(a),
    }
}

fn read_summary(p: &Path) -> Result<serde_json::Value, CliError> {
    let file = if p.is_dir() {
        p.join("summary.json")
    } else {
        p.to_path_buf()
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| CliError::Input(format!("{}: cannot read: {e}", file.display())))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| CliError::Input(format!("{}: not JSON: {e}", file.display())))?;
    if !v.get("flows").is_some_and(|f| f.is_array()) {
        return Err(CliError::Input(format!(
            "{}: flows: expected an array (a railpath summary.json)",
            file.display()
        )));
    }
    Ok(v)
}

/// (flow, subflow link or "", goodput bit/s) of every flow and subflow of a summary.
fn goodputs(v: &serde_json::Value) -> Vec<(String, String, f64)> {
    let mut out = Vec::new();
    for f in v["flows"].as_array().into_iter().flatten() {
        let id = f["id"].as_str().unwrap_or("?").to_string();
        out.push((
            id.clone(),
            String::new(),
            f["goodput_bps"].as_f64().unwrap_or(f64::NAN),
        ));
        for sf in f["subflows"].as_array().into_iter().flatten() {
            let link = sf["link"].as_str().unwrap_or("?").to_string();
            out.push((
                id.clone(),
                link,
                sf["goodput_bps"].as_f64().unwrap_or(f64::NAN),
            ));
        }
    }
    out
}

/// Side-by-side goodput table of two summaries; rows of either, matched by flow and subflow.
fn compare_table(a: &serde_json::Value, b: &serde_json::Value) -> String {
    let (ga, gb) = (goodputs(a), goodputs(b));
    let mut keys: Vec<(String, String)> = ga.iter().map(|r| (r.0.clone(), r.1.clone())).collect();
    for r in &gb {
        if !keys.iter().any(|k| k.0 == r.0 && k.1 == r.1) {
            keys.push((r.0.clone(), r.1.clone()));
        }
    }
    let find = |g: &[(String, String, f64)], k: &(String, String)| {
        g.iter().find(|r| r.0 == k.0 && r.1 == k.1).map(|r| r.2)
    };
    let mbit = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{:.3}", v / 1e6));
    let mut t = format!(
        "{:<16}  {:<8}  {:>12}  {:>12}  {:>8}\n",
        "flow", "subflow", "a_Mbit/s", "b_Mbit/s", "b/a-1"
    );
    for k in &keys {
        let (x, y) = (find(&ga, k), find(&gb, k));
        let rel = match (x, y) {
            (Some(x), Some(y)) if x > 0.0 => format!("{:+.1}%", (y / x - 1.0) * 100.0),
            _ => "-".to_string(),
        };
        t.push_str(&format!(
            "{:<16}  {:<8}  {:>12}  {:>12}  {:>8}\n",
            k.0,
            k.1,
            mbit(x),
            mbit(y),
            rel
        ));
    }
    t
}

fn compare(args: CompareArgs) -> Result<(), CliError> {
    let (a, b) = (read_summary(&args.a)?, read_summary(&args.b)?);
    print_stdout(&compare_table(&a, &b))
}

fn default_out(scenario: &Path) -> PathBuf {
    let stem = scenario
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "run".to_string());
    Path::new("out").join(format!("{stem}-testbed"))
}

fn cli_error(e: TestbedError) -> CliError {
    match e {
        TestbedError::Scenario(e) => CliError::Input(e.to_string()),
        other => CliError::Failed(format!("testbed: {other}")),
    }
}

fn run(args: RunArgs) -> Result<(), CliError> {
    let mut overrides = args.set.clone();
    if let Some(seed) = args.seed {
        overrides.push(format!("run.seed={seed}"));
    }
    let mut scenario = railpath_scenario::load(&args.scenario, &overrides)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&args.scenario));
    // Captures: `--pcap DIR` or `[capture]` (its dir under DIR), resolved here so that the
    // emulator, which reads `[capture]`, writes where this run's outputs go.
    if let Some(c) = railpath_capture::CaptureOptions::for_run(
        scenario.capture.as_ref(),
        &out,
        args.pcap.clone(),
    ) {
        let mut cap = scenario.capture.clone().unwrap_or_default();
        cap.dir = Some(c.dir.display().to_string());
        scenario.capture = Some(cap);
    }
    railpath_linkem::check_environment().map_err(cli_error)?;
    eprintln!(
        "testbed: running {} for {} s in network namespaces",
        scenario.source, scenario.run.duration_s
    );
    // Ctrl-C / SIGTERM end the run cleanly: every namespace is removed before exiting.
    railpath_testbed::install_interrupt_handler();
    // A flow with mechanisms = ["pha-d"] runs with railpath-gateway's controller in the router
    // namespace (its table, feed and configuration under DIR/phad/).
    // Cars (flows with `access`) run through the router's proxy or load balancer; the record
    // of what ran (assignments, failovers) is DIR/cars.json.
    let resolved = scenario.validate()?;
    let o = railpath_testbed::run(&resolved, &out).map_err(cli_error)?;
    crate::run::write_outputs(&out, &o.results)?;
    let mut json = serde_json::to_string_pretty(&o.record_json())
        .map_err(|e| CliError::Failed(format!("cannot serialise the emulator report: {e}")))?;
    json.push('\n');
    let p = out.join("testbed.json");
    std::fs::write(&p, json)
        .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", p.display())))?;
    let results = &o.results;
    let cars = o.cars.as_ref();
    let captured = match &o.report.capture {
        Some(c) => {
            if let Some(e) = &c.error {
                return Err(CliError::Failed(format!("testbed capture: {e}")));
            }
            format!(
                "; captures ({} packets, {} not captured) in {}",
                c.files.files.iter().map(|f| f.1).sum::<u64>(),
                c.dropped,
                scenario.capture.as_ref().map_or("", |c| c.dir())
            )
        }
        None => String::new(),
    };
    print_stdout(&format!(
        "{}{}{} packets through the emulator in {:.1} s wall; results in {}{captured}\n",
        flow_table(&results.summary),
        cars.map(|(_, n)| format!("cars: {n}\n"))
            .unwrap_or_default(),
        results.summary.events,
        results.summary.wall_s,
        out.display()
    ))
}

/// One line per flow (and per MPTCP subflow): goodput in Mbit/s, sent and retransmitted packets.
fn flow_table(s: &railpath_sim::results::Summary) -> String {
    let mut t = format!(
        "{:<16}  {:<5}  {:<16}  {:>14}  {:>10}  {:>13}\n",
        "flow", "kind", "cc", "goodput_Mbit/s", "sent", "retransmitted"
    );
    for f in &s.flows {
        t.push_str(&format!(
            "{:<16}  {:<5}  {:<16}  {:>14.3}  {:>10}  {:>13}\n",
            f.id,
            f.kind,
            f.cc,
            f.goodput_bps / 1e6,
            f.sent_packets,
            f.retransmitted_packets
        ));
        for sf in f.subflows.iter().flatten() {
            t.push_str(&format!(
                "{:<16}  {:<5}  {:<16}  {:>14.3}  {:>10}  {:>13}\n",
                format!("  {}", sf.link),
                "",
                "",
                sf.goodput_bps / 1e6,
                sf.sent_packets,
                sf.retransmitted_packets
            ));
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_out_has_testbed_suffix() {
        assert_eq!(
            default_out(Path::new("scenarios/tcp-outage.toml")),
            Path::new("out/tcp-outage-testbed")
        );
    }

    #[test]
    fn table_lists_flows_and_subflows() {
        use railpath_sim::results::{FlowSummary, SubflowSummary, Summary};
        let sub = |l: &str, g: f64| SubflowSummary {
            id: l.into(),
            link: l.into(),
            goodput_bps: g,
            sent_packets: 10,
            retransmitted_packets: 1,
        };
        let f = FlowSummary {
            id: "dl".into(),
            kind: "mptcp".into(),
            cc: "uncoupled-cubic".into(),
            scheduler: Some("linux-default".into()),
            mechanisms: vec![],
            goodput_bps: 59_500_000.0,
            delivered_bytes: 0,
            sent_packets: 20,
            retransmitted_packets: 2,
            rto_count: 0,
            handover_goodput_bps: None,
            fct_s: None,
            srtt_ms: None,
            rto_ms: None,
            subflows: Some(vec![sub("a", 35e6), sub("b", 24.5e6)]),
            receive_buffer: None,
            send_buffer: None,
            send_buffer_held: None,
            reorder_delay_ms: None,
            pha: None,
            handoffs: None,
            bloat: None,
            udp: None,
            car: None,
        };
        let s = Summary {
            format: railpath_sim::results::SUMMARY_FORMAT.into(),
            railpath_version: "0".into(),
            scenario: "s".into(),
            seed: 1,
            sim_duration_s: 1.0,
            wall_s: 0.0,
            events: 0,
            flows: vec![f],
            links: vec![],
            handovers: vec![],
            bonds: vec![],
        };
        let t = flow_table(&s);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines[1].contains("59.500"));
        assert!(lines[2].trim_start().starts_with("a") && lines[2].contains("35.000"));
    }

    #[test]
    fn compare_matches_flows_and_subflows() {
        let a = serde_json::json!({"flows": [
            {"id": "dl", "goodput_bps": 50e6, "subflows": [
                {"link": "a", "goodput_bps": 30e6}, {"link": "b", "goodput_bps": 20e6}]},
            {"id": "t", "goodput_bps": 10e6, "subflows": null}]});
        let b = serde_json::json!({"flows": [
            {"id": "dl", "goodput_bps": 60e6, "subflows": [
                {"link": "b", "goodput_bps": 24e6}, {"link": "a", "goodput_bps": 36e6}]}]});
        let t = compare_table(&a, &b);
        let rows: Vec<Vec<&str>> = t
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows[0], vec!["dl", "50.000", "60.000", "+20.0%"]);
        assert_eq!(rows[1], vec!["dl", "a", "30.000", "36.000", "+20.0%"]);
        assert_eq!(rows[2], vec!["dl", "b", "20.000", "24.000", "+20.0%"]);
        assert_eq!(rows[3], vec!["t", "10.000", "-", "-"]);
    }

    #[test]
    fn compare_rejects_a_non_summary() {
        let dir = std::env::temp_dir().join(format!("rp-cmp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("summary.json"), "{\"x\": 1}").unwrap();
        let e = read_summary(&dir).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("flows"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn scenario_errors_are_input_errors() {
        let e = railpath_scenario::ScenarioError::new("s.toml", "flow \"x\".cc", "bad");
        assert_eq!(cli_error(TestbedError::Scenario(e)).exit_code(), 2);
        assert_eq!(
            cli_error(TestbedError::Unavailable("not root".into())).exit_code(),
            1
        );
    }
}
