//! railpath-testbed: a scenario on the real kernel. The namespace testbed and its user-space
//! link emulator are `railpath-linkem`'s; what runs over them is here, each with results in the
//! simulator's shape (`railpath_sim::RunResults`) so that the two stacks compare line by line:
//!
//! - [`plain`]: the scenario's flows as kernel TCP/MPTCP connections (`railpath testbed run`);
//! - [`phad`]: the same with railpath-gateway's PHA-D controller in the router namespace, for
//!   flows with `mechanisms = ["pha-d"]`;
//! - [`cars`]: the train's cars (flows with an in-car link) through railpath-gateway's proxy or
//!   a load balancer (the PROXY-LB paper).
//!
//! [`run`] picks the one a scenario needs; [`calibrate`] holds the simulator-against-kernel
//! outage cases (`railpath calibrate`). Needs root, TUN and kernel MPTCP
//! (`railpath_linkem::check_environment` says what is missing). See docs/testbed.md.

pub mod calibrate;
pub mod cars;
pub mod phad;
pub mod plain;

pub use plain::{install_interrupt_handler, interrupt, interrupted};

use railpath_linkem::{EmuReport, LinkEventKind, TestbedError};
use railpath_scenario::Resolved;
use railpath_sim::RunResults;
use std::path::Path;

/// What a testbed run gives: its results, the emulator's report, and what the gateway did.
pub struct Outcome {
    pub results: RunResults,
    pub report: EmuReport,
    /// PHA-D: the controller's flips per carrier (empty without PHA-D).
    pub flips: Vec<phad::CarrierFlips>,
    /// Cars: the record of what ran (assignments, failovers) and its one-line note.
    pub cars: Option<(cars::CarsRecord, String)>,
}

impl Outcome {
    /// One line saying what the gateway did: the cars' note, or the controller's flips per
    /// carrier (empty when neither ran).
    pub fn note(&self) -> String {
        if let Some((_, note)) = &self.cars {
            return note.clone();
        }
        self.flips
            .iter()
            .map(|f| {
                format!(
                    "carrier {}: {} to backup, {} to regular{}",
                    f.carrier,
                    f.to_backup,
                    f.to_regular,
                    if f.errors > 0 {
                        format!(", {} failed", f.errors)
                    } else {
                        String::new()
                    }
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }

    /// `testbed.json`: how faithful the run was (the emulator's timing), both directions'
    /// counters of every link, the outages as they happened, and the gateway's record.
    pub fn record_json(&self) -> serde_json::Value {
        let mut v = emulator_json(&self.report);
        if !self.flips.is_empty() {
            v["phad_flips"] = serde_json::json!(self.flips);
        }
        if let Some((record, _)) = &self.cars {
            v["cars"] = serde_json::json!(record);
        }
        v
    }
}

/// Run a resolved scenario on a fresh testbed: its cars through the router's proxy or load
/// balancer when it has cars (the record under `work`), else its flows with PHA-D by the
/// gateway's controller when asked (under `work/phad`), else its flows alone.
pub fn run(r: &Resolved, work: &Path) -> Result<Outcome, TestbedError> {
    if cars::has_cars(r) {
        let c = cars::run(r, work)?;
        return Ok(Outcome {
            results: c.results,
            report: c.report,
            flips: Vec::new(),
            cars: Some((c.record, c.note)),
        });
    }
    let (results, report, flips) = phad::run(r, &work.join("phad"))?;
    Ok(Outcome {
        results,
        report,
        flips,
        cars: None,
    })
}

/// The emulator's report as JSON: timing, per-direction counters per link, outages.
fn emulator_json(r: &EmuReport) -> serde_json::Value {
    use railpath_linkem::model::DirStats;
    use serde_json::json;
    let dir = |d: &DirStats| {
        json!({
            "arrived_packets": d.arrived_packets,
            "forwarded_packets": d.forwarded_packets,
            "forwarded_bytes": d.forwarded_bytes,
            "buffer_drops": d.buffer_drops,
            "outage_drops": d.outage_drops,
            "random_losses": d.random_losses,
            "queue_delay_ms_avg": if d.served_packets == 0 { 0.0 } else {
                d.queue_delay_sum_ns as f64 / d.served_packets as f64 / 1e6
            },
            "queue_delay_ms_max": d.queue_delay_max_ns as f64 / 1e6,
        })
    };
    let l = &r.lateness;
    let capture = r.capture.as_ref().map(|c| {
        json!({
            "files": c.files.files.iter().map(|(p, n)| json!({
                "file": p.display().to_string(), "packets": n,
            })).collect::<Vec<_>>(),
            "dropped_packets": c.dropped,
            "error": c.error,
        })
    });
    json!({
        "ran_for_s": r.ran_for.secs_f64(),
        "capture": capture,
        "realtime": r.realtime,
        "write_lateness_us": {
            "packets": l.packets, "mean": l.mean_us, "p50": l.p50_us, "p99": l.p99_us,
            "p999": l.p999_us, "max": l.max_us,
        },
        "write_errors": r.write_errors,
        "links": r.links.iter().map(|k| json!({
            "id": k.id, "data": dir(&k.data), "reverse": dir(&k.reverse),
        })).collect::<Vec<_>>(),
        "outages": r.events.iter().map(|e| match e.kind {
            LinkEventKind::OutageStart { until } => json!({
                "link": e.link, "start_s": e.t.secs_f64(), "until_s": until.secs_f64(),
            }),
            LinkEventKind::OutageEnd => json!({
                "link": e.link, "end_s": e.t.secs_f64(),
            }),
        }).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emulator_report_json() {
        use railpath_core::Time;
        use railpath_linkem::emu::{Lateness, LinkReport};
        use railpath_linkem::LinkEvent;
        let stats = railpath_linkem::model::DirStats {
            served_packets: 4,
            queue_delay_sum_ns: 8_000_000,
            queue_delay_max_ns: 5_000_000,
            ..Default::default()
        };
        let r = EmuReport {
            capture: None,
            bin: Time::from_ms(100),
            ran_for: Time::from_secs(2),
            links: vec![LinkReport {
                id: "a".into(),
                data: stats,
                reverse: Default::default(),
                queue_bytes: vec![],
                outages: vec![],
            }],
            paths: vec![],
            events: vec![
                LinkEvent {
                    t: Time::from_ms(500),
                    link: "a".into(),
                    kind: LinkEventKind::OutageStart {
                        until: Time::from_ms(550),
                    },
                },
                LinkEvent {
                    t: Time::from_ms(550),
                    link: "a".into(),
                    kind: LinkEventKind::OutageEnd,
                },
            ],
            lateness: Lateness {
                packets: 10,
                mean_us: 12.0,
                p50_us: 10.0,
                p99_us: 40.0,
                p999_us: 90.0,
                max_us: 900.0,
            },
            write_errors: 0,
            realtime: true,
        };
        let v = emulator_json(&r);
        assert_eq!(v["write_lateness_us"]["p99"], 40.0);
        assert_eq!(v["links"][0]["data"]["queue_delay_ms_avg"], 2.0);
        assert_eq!(v["links"][0]["data"]["queue_delay_ms_max"], 5.0);
        assert_eq!(v["outages"][0]["start_s"], 0.5);
        assert_eq!(v["outages"][0]["until_s"], 0.55);
        assert_eq!(v["outages"][1]["end_s"], 0.55);
    }
}
