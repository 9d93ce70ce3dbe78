//! railpath-linkem: a userspace link emulator for network namespaces and the namespace testbed
//! that runs real kernel MPTCP over it, driven by the same scenario file as the simulator.
//!
//! - [`model`]: one direction of a carrier link (rate or Mahimahi trace, drop-tail buffer, random
//!   loss, outages, schedule, propagation delay); pure and deterministic, unit-tested.
//! - [`emu`]: the real-time loop forwarding packets between TUN devices through the model.
//! - [`testbed`]: namespaces (clients, router, server), addresses, routes, MPTCP endpoints,
//!   cleanup on drop. API for other crates (the gateway's end-to-end tests):
//!   [`Testbed::new`], [`Testbed::command`], [`Testbed::run_in`], [`Testbed::control`]
//!   (scripted outages), [`Testbed::take_events`] (outage events), [`Testbed::endpoint_id`].
//!
//! What runs over it (a scenario's flows as kernel TCP/MPTCP, the train's cars, PHA-D) is the
//! `railpath-testbed` crate's.
//!
//! See docs/testbed.md and docs/models/linkem.md.

pub mod config;
pub mod emu;
pub mod model;
pub mod netns;
pub mod testbed;

pub use config::LinkConfig;
pub use emu::{EmuOptions, EmuReport, LinkControl, LinkEvent, LinkEventKind};
pub use testbed::{check_environment, Testbed, TestbedSpec};

use railpath_scenario::ScenarioError;

/// Errors of the emulator and testbed.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    /// The scenario is not usable (exit status 2 in the CLI).
    #[error("{0}")]
    Scenario(#[from] ScenarioError),
    /// This machine cannot run the testbed (not root, no MPTCP, no TUN): a reason to skip.
    #[error("testbed unavailable: {0}")]
    Unavailable(String),
    #[error("command {cmd} failed: {stderr}")]
    Command { cmd: String, stderr: String },
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("unknown link {0:?}")]
    UnknownLink(String),
    #[error("the emulator has stopped")]
    Stopped,
    #[error("interrupted (the testbed was torn down)")]
    Interrupted,
    #[error("{0}")]
    Other(String),
}

impl TestbedError {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> TestbedError {
        TestbedError::Io {
            context: context.into(),
            source,
        }
    }
}
