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

impl From<std::io::Error> for CliError {
    fn from(e: std::io::Error) -> Self {
        CliError::Failed(e.to_string())
    }
}

/// Write `text` to standard output. A closed pipe (`railpath bench | head -1`) ends the program
/// quietly with status 0 instead of panicking as `print!` would.
pub fn print_stdout(text: &str) -> Result<(), CliError> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(CliError::Failed(format!(
            "cannot write to standard output: {e}"
        ))),
    }
}

impl From<SimError> for CliError {
    fn from(e: SimError) -> Self {
        match e {
            SimError::Input(e) => CliError::Input(e.to_string()),
            SimError::Internal(m) => CliError::Failed(format!("simulation failed: {m}")),
        }
    }
}
