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

pub use net::PacketTap;
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
    run_tapped(r, progress, None)
}

/// [`run_with_progress`] with a packet capture at both ends of every link direction (see
/// [`crate::net::PacketTap`]); its `end` is called when the run ends. The results are those of
/// the same run without it.
pub fn run_with_tap(
    r: &railpath_scenario::Resolved,
    progress: &mut dyn FnMut(f64),
    tap: Box<dyn PacketTap>,
) -> Result<RunResults, SimError> {
    run_tapped(r, progress, Some(tap))
}

/// The one body of both (so that the event loop has one caller and is inlined there, as it was
/// before taps).
fn run_tapped(
    r: &railpath_scenario::Resolved,
    progress: &mut dyn FnMut(f64),
    tap: Option<Box<dyn PacketTap>>,
) -> Result<RunResults, SimError> {
    let mut w = build::world(r)?;
    if let Some(t) = tap {
        w.net.set_tap(t);
    }
    w.run(progress);
    if let Some(mut t) = w.net.tap.take() {
        t.end(w.end);
    }
    Ok(w.finish(r))
}
