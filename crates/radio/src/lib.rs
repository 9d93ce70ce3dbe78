//! railpath's train radio model and handover table.
//!
//! A train runs along a track past the base stations of several carriers; each carrier becomes a
//! [`CarrierTimeline`]: the changes of its link's rate, extra delay, extra loss and handover
//! outages over the run, plus a log of its handovers. The simulator maps a timeline onto the
//! schedule of the link whose `carrier` key names it.
//!
//! - [`config`]: the `[train]` and `[[carrier]]` scenario keys, defaults and checks.
//! - [`track`]: speed profile, late running, position sampling (10 ms, the PHA paper's rate).
//! - [`propagation`]: sites, log-distance path loss, Gudmundson shadowing fixed per place plus
//!   per-run variation, layer-3 filtering.
//! - [`a3`]: the A3 event with hysteresis, offset and time-to-trigger (TS 36.331).
//! - [`capacity`]: SINR and the capped Shannon mapping (TR 36.942 A.2).
//! - [`timeline`]: the radio and scripted carrier models producing timelines.
//! - [`measured`]: measured per-carrier CSV and Mahimahi traces as timelines.
//! - [`memo`]: each distinct run's timelines computed once per process and shared.
//! - [`table`]: the learned handover table (PHA) and its position-based predictor, also read by
//!   the onboard gateway.
//!
//! See docs/models/radio.md for every formula, default and simplification.

use railpath_core::Time;
use serde::{Deserialize, Serialize};
use std::fmt;

pub mod a3;
pub mod capacity;
pub mod config;
pub mod failure;
pub mod measured;
pub mod memo;
pub mod phad;
pub mod procedure;
pub mod propagation;
pub mod size;
pub mod table;
pub mod timeline;
pub mod track;

pub use config::{
    validate, CapacityModel, CarrierConfig, CarrierModel, OutageMode, SpeedSegment, TrainConfig,
};
pub use memo::carrier_timelines_shared;
pub use table::{HandoverTable, Prediction, Predictor, TableError, Zone, ZoneKind};
pub use timeline::carrier_timelines;

/// One handover as logged in `summary.json`'s `handovers` array (results.md).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HandoverRecord {
    /// Start of the handover's outage (the interruption, or the failure's), seconds from run
    /// start.
    pub t_s: f64,
    /// Train position along the track at that time, metres.
    pub position_m: f64,
    pub carrier: String,
    pub from_cell: String,
    pub to_cell: String,
    /// How long the carrier's link delivered nothing: the interruption of a handover that
    /// succeeded, or the outage of a failure until re-establishment ended, ms.
    pub interruption_ms: f64,
    /// With a carrier's failure model (`failures`): how it went. Absent otherwise (every
    /// handover succeeds there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<HandoverKind>,
    /// With the failure model: where the procedure began (the A3 report of a handover, the
    /// start of T310 of a radio link failure), metres.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub onset_position_m: Option<f64>,
    /// With the failure model: where the outage ended, metres.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_position_m: Option<f64>,
}

/// How a handover (or a radio link) went, with a carrier's failure model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HandoverKind {
    /// The command got through and the target was reached: an interruption, queue forwarded.
    Success,
    /// A handover that failed (its command did not get through, or the target could not be
    /// accessed before T304 expired), then re-establishment: queue lost.
    Failure,
    /// A radio link failure without a handover (T310 expired), then re-establishment: queue
    /// lost.
    Rlf,
}

impl HandoverKind {
    pub const ALL: [HandoverKind; 3] = [
        HandoverKind::Success,
        HandoverKind::Failure,
        HandoverKind::Rlf,
    ];
    pub fn as_str(&self) -> &'static str {
        match self {
            HandoverKind::Success => "success",
            HandoverKind::Failure => "failure",
            HandoverKind::Rlf => "rlf",
        }
    }
}

/// A change of the carrier link's conditions at time `t` (absolute, from run start). Fields left
/// `None` keep their previous value. The first step of a timeline is at time 0 and sets the
/// rate, extra delay and extra loss.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LinkStep {
    pub t: Time,
    /// Data-direction rate from `t` on.
    pub rate_bps: Option<u64>,
    /// Delay added to the link's own `delay_ms` (weak signal).
    pub extra_delay: Option<Time>,
    /// Loss probability added to the link's own `loss` (weak signal).
    pub extra_loss: Option<f64>,
    /// `Some(true)`: a handover interruption (or measured outage) starts; `Some(false)`: it ends.
    pub outage: Option<bool>,
    /// What the link holds now, and what reaches it until the outage ends, is lost (a failure:
    /// nothing is forwarded), whatever the link's outage mode.
    pub drop_queue: bool,
}

/// Everything a carrier does to its link over a run. Steps are sorted by `t`, at most one per
/// time; handovers are sorted by time.
#[derive(Debug, Clone, PartialEq)]
pub struct CarrierTimeline {
    pub carrier: String,
    pub steps: Vec<LinkStep>,
    pub handovers: Vec<HandoverRecord>,
}

impl CarrierTimeline {
    /// The outages as `[start, end)` intervals, from the `outage` steps (an outage still open at
    /// the last step ends at `Time::MAX`).
    pub fn outages(&self) -> Vec<(Time, Time)> {
        let mut out = Vec::new();
        let mut open: Option<Time> = None;
        for s in &self.steps {
            match (s.outage, open) {
                (Some(true), None) => open = Some(s.t),
                (Some(false), Some(start)) => {
                    out.push((start, s.t));
                    open = None;
                }
                _ => {}
            }
        }
        if let Some(start) = open {
            out.push((start, Time::MAX));
        }
        out
    }
}

/// A problem with the radio configuration or its input files: the file (empty for the scenario
/// file itself, which the caller names), the key path (`carrier[1].enb_spacing_m`, `line 7`) and
/// what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct RadioError {
    pub file: String,
    pub key: String,
    pub message: String,
}

impl RadioError {
    /// An error about a scenario key.
    pub fn key(key: impl Into<String>, message: impl Into<String>) -> RadioError {
        RadioError {
            file: String::new(),
            key: key.into(),
            message: railpath_core::shorten(&message.into()),
        }
    }

    /// An error in a data file (CSV, trace).
    pub fn in_file(file: &str, key: impl Into<String>, message: impl Into<String>) -> RadioError {
        RadioError {
            file: file.to_string(),
            key: key.into(),
            message: railpath_core::shorten(&message.into()),
        }
    }
}

impl fmt::Display for RadioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.file.is_empty() {
            write!(f, "{}: ", self.file)?;
        }
        if self.key.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.key, self.message)
        }
    }
}

impl std::error::Error for RadioError {}

/// Builds a sorted step list, merging changes at the same time into one step.
#[derive(Debug, Default)]
pub(crate) struct Steps {
    pub(crate) v: Vec<LinkStep>,
}

impl Steps {
    /// The step at `t` (times must be pushed in non-decreasing order).
    pub(crate) fn at(&mut self, t: Time) -> &mut LinkStep {
        if self.v.last().is_none_or(|s| s.t != t) {
            self.v.push(LinkStep {
                t,
                ..LinkStep::default()
            });
        }
        let n = self.v.len() - 1;
        &mut self.v[n]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outage_intervals_from_steps() {
        let step = |ms: u64, outage: Option<bool>| LinkStep {
            t: Time::from_ms(ms),
            outage,
            ..LinkStep::default()
        };
        let tl = CarrierTimeline {
            carrier: "A".into(),
            steps: vec![
                step(0, None),
                step(100, Some(true)),
                step(150, Some(false)),
                step(200, None),
                step(300, Some(true)),
            ],
            handovers: vec![],
        };
        assert_eq!(
            tl.outages(),
            vec![
                (Time::from_ms(100), Time::from_ms(150)),
                (Time::from_ms(300), Time::MAX)
            ]
        );
    }
}
