//! `railpath repro [PAPER|all] [--out DIR] [--seeds N] [--jobs N] [--testbed [--testbed-runs N]]`:
//! run the source papers' experiments in the simulator and write DIR/<paper>/summary.json,
//! DIR/<paper>/report.html and DIR/index.html (crates/repro; the same code as the Python
//! package's `railpath.repro`). With `--testbed` (root, kernel MPTCP), papers with a kernel side
//! also run it on the namespace testbed (PHA: MPTCP without and with PHA-D, the latter driven by
//! railpath-gateway's controller) and show it beside the simulator.

use crate::{print_stdout, CliError};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A paper (pha) or all.
    #[arg(default_value = "all")]
    pub paper: String,
    /// Output directory.
    #[arg(long, default_value = "out/repro")]
    pub out: PathBuf,
    /// Seeds per configuration (the confidence intervals are over them).
    #[arg(long, default_value_t = 10)]
    pub seeds: u64,
    /// Parallel runs [default: every core].
    #[arg(long, default_value_t = 0)]
    pub jobs: usize,
    /// Also run the kernel side on the namespace testbed (root; each run takes the scenario's
    /// duration in real time).
    #[arg(long)]
    pub testbed: bool,
    /// Runs per kernel configuration with --testbed (seeds 1..=N).
    #[arg(long, default_value_t = 3)]
    pub testbed_runs: u64,
    /// With --testbed, run each seed's kernel configurations at the same time, each on a
    /// testbed of its own: half the wall time, at the cost of sharing the machine between them.
    #[arg(long, requires = "testbed")]
    pub testbed_side_by_side: bool,
    /// With --testbed, seconds of each kernel run for papers whose kernel side is a shortened
    /// run (proxy-lb; default 120). PHA runs its scenario's duration.
    #[arg(long, requires = "testbed")]
    pub testbed_duration: Option<f64>,
    /// With --testbed, proxy-lb's kernel runs take 1..=N cars (default 5).
    #[arg(long, requires = "testbed")]
    pub testbed_cars: Option<usize>,
}

/// [`railpath_repro::KernelRun`] on this machine's testbed (`railpath_testbed::run`: cars
/// through the router's proxy or load balancer, other flows with PHA-D when asked); the run's
/// summary.json and timeseries.csv are written into `work`, as `railpath testbed run` writes them.
fn kernel_run(
    s: &railpath_scenario::Scenario,
    work: &std::path::Path,
) -> Result<railpath_repro::KernelResult, String> {
    let r = s.validate().map_err(|e| e.to_string())?;
    let o = railpath_testbed::run(&r, work).map_err(|e| e.to_string())?;
    crate::run::write_outputs(work, &o.results).map_err(|e| e.to_string())?;
    Ok(railpath_repro::KernelResult {
        note: o.note(),
        results: o.results,
    })
}

pub fn main(args: Args) -> Result<(), CliError> {
    if args.paper != "all" && !railpath_repro::names().contains(&args.paper.as_str()) {
        return Err(CliError::Input(format!(
            "unknown paper {:?}; expected all or one of {}",
            args.paper,
            railpath_repro::names().join(", ")
        )));
    }
    if !(1..=1000).contains(&args.seeds) {
        return Err(CliError::Input(format!(
            "--seeds: expected 1 ..= 1000, found {}",
            args.seeds
        )));
    }
    if args.testbed {
        if !(1..=100).contains(&args.testbed_runs) {
            return Err(CliError::Input(format!(
                "--testbed-runs: expected 1 ..= 100, found {}",
                args.testbed_runs
            )));
        }
        if let Some(d) = args.testbed_duration {
            if !(d.is_finite() && (5.0..=3600.0).contains(&d)) {
                return Err(CliError::Input(format!(
                    "--testbed-duration: expected 5 ..= 3600 seconds, found {d}"
                )));
            }
        }
        if let Some(n) = args.testbed_cars {
            if !(1..=5).contains(&n) {
                return Err(CliError::Input(format!(
                    "--testbed-cars: expected 1 ..= 5, found {n}"
                )));
            }
        }
        railpath_linkem::check_environment()
            .map_err(|e| CliError::Failed(format!("--testbed: {e}")))?;
        railpath_testbed::install_interrupt_handler();
    }
    let opts = railpath_repro::Options {
        out: args.out.clone(),
        seeds: args.seeds,
        jobs: args.jobs,
        kernel: args
            .testbed
            .then_some(kernel_run as railpath_repro::KernelRun),
        kernel_runs: args.testbed_runs,
        kernel_side_by_side: args.testbed_side_by_side,
        kernel_duration_s: args.testbed_duration,
        kernel_cars: args.testbed_cars,
    };
    let start = std::time::Instant::now();
    let done = railpath_repro::run(&args.paper, &opts, &mut |m| eprintln!("repro: {m}"))
        .map_err(CliError::Failed)?;
    let mut text = String::new();
    for r in &done {
        let s = &r.summary;
        let held = s.claims.iter().filter(|c| c.holds).count();
        text.push_str(&format!(
            "{}: {} runs, {held} of {} claims hold; {}\n",
            s.paper,
            s.runs,
            s.claims.len(),
            args.out.join(&s.paper).join("report.html").display()
        ));
    }
    text.push_str(&format!(
        "done in {:.1} s; open {}\n",
        start.elapsed().as_secs_f64(),
        args.out.join("index.html").display()
    ));
    print_stdout(&text)
}
