//! The simulated world: links, flows and the event loop.

use crate::results::RunResults;
use railpath_scenario::Scenario;
use std::fmt;

/// An error that stops a run (the scenario was valid but cannot be simulated as given).
#[derive(Debug, Clone, PartialEq)]
pub struct SimError(pub String);

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for SimError {}

/// Run a validated scenario to completion.
pub fn run(s: &Scenario) -> Result<RunResults, SimError> {
    run_with_progress(s, &mut |_| {})
}

/// Run, calling `progress` with the simulated fraction done (0..=1) about every simulated second.
pub fn run_with_progress(_s: &Scenario, _progress: &mut dyn FnMut(f64)) -> Result<RunResults, SimError> {
    Err(SimError("the simulator is being built".into()))
}
