//! The one error type of the CLI and its exit status (results.md: 2 invalid input, 1 otherwise).

use railpath_scenario::ScenarioError;
use railpath_sim::SimError;
use std::fmt;

#[derive(Debug)]
pub enum CliError {
    /// The user's input is wrong (scenario file, override, argument): exit status 2.
    Input(String),
    /// Anything else (simulation error, I/O): exit status 1.
    Failed(String),
}

impl CliError {
    pub fn exit_code(&self) -> i32 {
        match self {
            CliError::Input(_) => 2,
            CliError::Failed(_) => 1,
        }
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CliError::Input(m) | CliError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CliError {}

impl From<ScenarioError> for CliError {
    fn from(e: ScenarioError) -> Self {
        CliError::Input(e.to_string())
    }
}

impl From<SimError> for CliError {
    fn from(e: SimError) -> Self {
        CliError::Failed(format!("simulation failed: {e}"))
    }
}
