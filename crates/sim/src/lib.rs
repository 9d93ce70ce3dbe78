//! railpath-sim: a deterministic packet-level discrete-event simulator of TCP and MPTCP (with
//! UDP cross traffic) over the cellular carriers of a train.
//!
//! The core does no I/O and reads no clock: [`run`] takes a scenario resolved by
//! [`railpath_scenario::Scenario::validate`] and returns [`results::RunResults`].

mod build;
pub mod engine;
mod flows;
pub mod mechanisms;
pub mod mptcp;
pub mod net;
pub mod power;
pub mod results;
pub mod tcp;
mod world;

pub use railpath_core::{Rng, Time};
pub use results::{RunResults, VERSION};
pub use world::SimError;

/// Run a resolved scenario (`Scenario::validate`'s result) to completion.
pub fn run(r: &railpath_scenario::Resolved) -> Result<RunResults, SimError> {
    run_with_progress(r, &mut |_| {})
}

/// Run, calling `progress` with the simulated fraction done (0..=1) about every simulated second.
pub fn run_with_progress(
    r: &railpath_scenario::Resolved,
    progress: &mut dyn FnMut(f64),
) -> Result<RunResults, SimError> {
    let mut w = build::world(r)?;
    w.run(progress);
    Ok(w.finish(r))
}
