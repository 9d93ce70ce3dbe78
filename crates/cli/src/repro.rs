//! `railpath repro [PAPER|all] [--out DIR] [--seeds N] [--jobs N]`: run the source papers'
//! experiments in the simulator and write DIR/<paper>/summary.json, DIR/<paper>/report.html and
//! DIR/index.html (crates/repro; the same code as the Python package's `railpath.repro`).

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
    let opts = railpath_repro::Options {
        out: args.out.clone(),
        seeds: args.seeds,
        jobs: args.jobs,
    };
    let start = std::time::Instant::now();
    let done = railpath_repro::run(&args.paper, &opts, &mut |m| eprintln!("repro: {m}"))
        .map_err(CliError::Failed)?;
    let mut text = String::new();
    for s in &done {
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
