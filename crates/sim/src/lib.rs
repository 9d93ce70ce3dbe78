//! railpath-sim: a deterministic packet-level discrete-event simulator of TCP and MPTCP (with
//! UDP cross traffic) over the cellular carriers of a train.
//!
//! The core does no I/O and reads no clock: [`run`] takes a validated
//! [`railpath_scenario::Scenario`] and returns [`results::RunResults`].

mod cars;
pub mod engine;
mod flow;
mod handoff;
pub mod mechanisms;
pub mod mptcp;
pub mod net;
pub mod power;
pub mod results;
pub mod tcp;
mod udp;
mod world;

pub use net::PacketTap;
pub use railpath_core::{Rng, Time};
pub use results::RunResults;
pub use world::{run, run_with_progress, run_with_tap, SimError};

/// The version recorded in every summary.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
