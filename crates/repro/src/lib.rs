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
//! module and an entry to [`STUDIES`] (crate::studies).

pub mod bloat;
pub mod bond;
pub mod findings;
pub mod frame;
pub mod page;
pub mod pha;
pub mod proxy_lb;
pub mod sim;
pub mod stats;
pub mod studies;
pub mod svg;
pub mod tcp_fs;
pub mod train;

pub use findings::{Claim, Findings, Meta, Number, Summary, FORMAT};
pub use frame::{Entry, KernelResult, KernelRun, Options, Reproduction};
pub use studies::{index, names, run, STUDIES};
