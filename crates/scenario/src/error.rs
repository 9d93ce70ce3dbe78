//! The error every check of a scenario returns: file, key path and what was expected.

use std::fmt;

/// An error in a scenario file or an override: file, key path and what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    pub file: String,
    pub key: String,
    pub message: String,
}

impl ScenarioError {
    pub fn new(file: &str, key: impl Into<String>, message: impl Into<String>) -> Self {
        ScenarioError {
            file: file.to_string(),
            key: key.into(),
            message: railpath_core::shorten(&message.into()),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.key.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: {}: {}", self.file, self.key, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}
