//! railpath-repro: each source paper's experiment run by the simulator and compared with the
//! paper's numbers, in a `summary.json` and an HTML report a reader can hold next to the paper.
//!
//! The frame ([`frame`]): a study (a paper's reproduction) implements [`frame::Study`]: it plans
//! its grid of runs, runs one, and analyses them into [`Findings`] (numbers with intervals,
//! claims with their evidence, the report's sections and figures). The frame runs the grid in
//! parallel, logs progress, builds the summary, renders the report through the one page
//! template ([`page`]) and writes `OUT/<study>/summary.json`, `OUT/<study>/report.html` and
//! `OUT/index.html`. Every simulator run goes through [`sim`]. Used by `railpath repro` and by
//! the Python package's `railpath.repro`, so both run the same code. A study joins by adding a
//! module and an entry to [`STUDIES`].

use std::path::{Path, PathBuf};

pub mod bloat;
pub mod bond;
pub mod findings;
pub mod frame;
pub mod page;
pub mod pha;
pub mod proxy_lb;
pub mod sim;
pub mod stats;
pub mod svg;
pub mod tcp_fs;

pub use findings::{Claim, Findings, Number, Summary, FORMAT};
pub use frame::{index, run, Entry, Reproduction};

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
    /// The simulator alone (no kernel side), `seeds` seeds, every core, into `out`.
    pub fn simulator(out: impl Into<PathBuf>, seeds: u64) -> Options {
        Options {
            out: out.into(),
            seeds,
            jobs: 0,
            kernel: None,
            kernel_runs: 0,
            kernel_side_by_side: false,
            kernel_duration_s: None,
            kernel_cars: None,
        }
    }

    pub fn threads(&self) -> usize {
        if self.jobs > 0 {
            self.jobs
        } else {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        }
    }
}

/// Every study reproduced so far, in the index's order.
pub const STUDIES: &[Entry] = &[
    Entry::of::<pha::Pha>(),
    Entry::of::<proxy_lb::ProxyLb>(),
    Entry::of::<tcp_fs::TcpFs>(),
    Entry::of::<bloat::Bloat>(),
    Entry::of::<bond::Bond>(),
];

/// Study names, for errors and help.
pub fn names() -> Vec<&'static str> {
    STUDIES.iter().map(|p| p.meta.name).collect()
}
