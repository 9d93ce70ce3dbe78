//! railpath's train radio model and handover table.
//!
//! - [`table`]: the learned handover table (PHA) and its position-based predictor, also read by
//!   the onboard gateway.
//!
//! See docs/models/radio.md for every formula, default and simplification.

use serde::{Deserialize, Serialize};

pub mod table;

pub use table::{HandoverTable, Prediction, Predictor, TableError, Zone};

/// One handover as logged in `summary.json`'s `handovers` array (results.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HandoverRecord {
    /// Start of the handover (the interruption), seconds from run start.
    pub t_s: f64,
    /// Train position along the track at that time, metres.
    pub position_m: f64,
    pub carrier: String,
    pub from_cell: String,
    pub to_cell: String,
    /// Length of the interruption during which the carrier's link delivers nothing.
    pub interruption_ms: f64,
}
