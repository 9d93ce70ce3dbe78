//! From a scenario `[[link]]` to the emulator's per-direction link configuration. The defaults of
//! the reverse (ACK) direction follow the scenario schema (`crates/scenario`): reverse rate =
//! data rate (100 Mbit/s when the data direction is a trace), reverse delay = `delay_ms`, reverse
//! buffer = the data buffer; `schedule` steps change the data direction only; `outages` cut both
//! directions (a handover interrupts the radio both ways). A link's `delay_range` and periodic
//! outages (`outages[].every_s`) come from the scenario crate's `Link::schedule_steps`,
//! `Link::outage_list` and `Link::initial_delay_ms`, the same draws and repeats the simulator
//! uses. A link with `carrier = "<id>"` follows
//! the radio model's timeline of that carrier (`railpath_radio::carrier_timelines`, the same the
//! simulator uses): its rate steps, extra delay/loss and handover interruptions.

use crate::model::{DirConfig, Service, Step};
use railpath_core::Time;
use railpath_radio::{CarrierTimeline, HandoverRecord};
use railpath_scenario::{OutageMode, Resolved, ScenarioError};
use std::sync::Arc;

pub use railpath_scenario::DEFAULT_BUFFER_PACKETS;
/// Reverse rate used when the data direction is a trace and no `reverse_rate_mbps` is given.
pub const DEFAULT_TRACE_REVERSE_RATE_MBPS: f64 = 100.0;

/// Everything the emulator needs to know about one carrier link.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkConfig {
    pub id: String,
    /// Server -> train (the scenario's data direction).
    pub data: DirConfig,
    /// Train -> server (ACKs, uploads).
    pub reverse: DirConfig,
    /// Data-direction schedule steps.
    pub steps: Vec<Step>,
    /// Outage windows (start, duration) from the start of the run, both directions.
    pub outages: Vec<(Time, Time)>,
    /// Failures: at each of these times, during an outage, what both directions hold is lost
    /// and so is what reaches them until the outage ends (the radio model's `drop_queue`).
    pub queue_drops: Vec<Time>,
}

impl LinkConfig {
    /// Link `i` of a resolved scenario (one a carrier does not drive: see
    /// [`links_and_handovers`]). Its values were checked by validation; what the emulator
    /// cannot do is refused with the key named.
    pub fn from_spec(r: &Resolved, i: usize) -> Result<LinkConfig, ScenarioError> {
        let l = &r.links[i].link;
        let k = |f: &str| format!("link[{i}].{f}");
        let data_service = match (&l.trace_ms, l.rate_mbps) {
            (Some(t), _) => Service::Trace(Arc::new(t.clone())),
            (None, Some(r)) => Service::Rate(bps(r)),
            (None, None) => {
                return Err(ScenarioError::new(
                    &r.source,
                    k("wifi"),
                    "the 802.11 MAC model runs in the simulator only: the testbed's links have a rate, give rate_mbps instead",
                ))
            }
        };
        let reverse_service = match (&l.reverse_trace_ms, l.reverse_rate_mbps) {
            (Some(t), _) => Service::Trace(Arc::new(t.clone())),
            (None, Some(r)) => Service::Rate(bps(r)),
            (None, None) => match &data_service {
                Service::Rate(r) => Service::Rate(*r),
                Service::Trace(_) => Service::Rate((DEFAULT_TRACE_REVERSE_RATE_MBPS * 1e6) as u64),
            },
        };
        let (seed, end_s) = (r.run.seed, r.run.duration_s);
        let data = DirConfig {
            service: data_service,
            delay: Time::from_ms_f64(l.initial_delay_ms(seed, end_s)),
            loss: l.loss,
            buffer: l.buffer(),
            outage_mode: l.outage_mode,
        };
        let reverse = DirConfig {
            service: reverse_service,
            delay: Time::from_ms_f64(l.reverse_delay_ms.unwrap_or(l.delay_ms)),
            loss: l.reverse_loss,
            buffer: l.reverse_buffer(),
            outage_mode: l.outage_mode,
        };
        // The steps run are those of `schedule_steps`: the schedule with the `delay_range`
        // draws merged in, as the simulator runs them.
        let mut steps: Vec<Step> = l
            .schedule_steps(seed, end_s)
            .iter()
            .map(|st| Step {
                t: Time::from_secs_f64(st.t_s),
                rate_bps: st.rate_mbps.map(bps),
                delay: st.delay_ms.map(Time::from_ms_f64),
                loss: st.loss,
            })
            .collect();
        steps.sort_by_key(|s| s.t);
        let outages = l
            .outage_list(end_s)
            .iter()
            .map(|o| {
                (
                    Time::from_secs_f64(o.start_s),
                    Time::from_ms_f64(o.duration_ms),
                )
            })
            .collect();
        Ok(LinkConfig {
            id: l.id.clone(),
            data,
            reverse,
            steps,
            outages,
            queue_drops: Vec::new(),
        })
    }

    /// Every link of a resolved scenario; links with a carrier follow its timeline.
    pub fn all(r: &Resolved) -> Result<Vec<LinkConfig>, ScenarioError> {
        Ok(links_and_handovers(r)?.0)
    }
}

/// A rate in Mbit/s (validated, > 0) in bit/s, at least 1.
fn bps(mbps: f64) -> u64 {
    (mbps * 1e6).round().max(1.0) as u64
}

/// The radio model's carrier timelines of a scenario (empty without `[[carrier]]`), in the
/// carriers' order.
pub fn carrier_timelines(r: &Resolved) -> Result<Vec<CarrierTimeline>, ScenarioError> {
    let Some(radio) = &r.radio else {
        return Ok(Vec::new());
    };
    let duration = Time::from_secs_f64(r.run.duration_s);
    railpath_radio::carrier_timelines(&radio.train, &radio.carriers, r.run.seed, duration)
        .map_err(|e| railpath_scenario::radio_error(&r.source, e))
}

/// Every link of a scenario and the handovers of the carriers that drive links.
pub fn links_and_handovers(
    r: &Resolved,
) -> Result<(Vec<LinkConfig>, Vec<HandoverRecord>), ScenarioError> {
    let timelines = if r.links.iter().any(|l| l.carrier.is_some()) {
        carrier_timelines(r)?
    } else {
        Vec::new()
    };
    let mut links = Vec::new();
    let mut handovers: Vec<HandoverRecord> = Vec::new();
    let mut carriers_seen = Vec::new();
    for (i, l) in r.links.iter().enumerate() {
        match l.carrier {
            None => links.push(LinkConfig::from_spec(r, i)?),
            Some(c) => {
                let tl = &timelines[c];
                let mode = r.carrier_of(i).and_then(|k| k.outage_mode);
                links.push(carrier_link(r, i, tl, mode)?);
                if !carriers_seen.contains(&c) {
                    carriers_seen.push(c);
                    handovers.extend(tl.handovers.iter().cloned());
                }
            }
        }
    }
    handovers.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    Ok((links, handovers))
}

/// Link `i` driven by carrier timeline `tl`: the timeline's rate steps, extra delay and loss on
/// top of the link's own `delay_ms` and `loss`, and its interruptions as outages. Outage mode:
/// the link's when it says `drop`, else the carrier's `outage_mode`, else hold.
fn carrier_link(
    r: &Resolved,
    i: usize,
    tl: &CarrierTimeline,
    carrier_mode: Option<railpath_radio::OutageMode>,
) -> Result<LinkConfig, ScenarioError> {
    let l = &r.links[i].link;
    let first_rate = tl.steps.iter().find_map(|st| st.rate_bps).ok_or_else(|| {
        ScenarioError::new(
            &r.source,
            format!("link[{i}].carrier"),
            format!("carrier {:?} gives no rate", tl.carrier),
        )
    })?;
    let mode = match (l.outage_mode, carrier_mode) {
        (OutageMode::Drop, _) => OutageMode::Drop,
        (_, Some(railpath_radio::OutageMode::Drop)) => OutageMode::Drop,
        _ => OutageMode::Hold,
    };
    let buffer = l.buffer();
    let delay = Time::from_ms_f64(l.delay_ms);
    let reverse_rate = l.reverse_rate_mbps.map_or(first_rate, bps);
    let duration = Time::from_secs_f64(r.run.duration_s);
    let mut steps = Vec::new();
    let mut outages = Vec::new();
    let mut queue_drops = Vec::new();
    let mut open: Option<Time> = None;
    for st in &tl.steps {
        if st.rate_bps.is_some() || st.extra_delay.is_some() || st.extra_loss.is_some() {
            steps.push(Step {
                t: st.t,
                rate_bps: st.rate_bps.map(|r| r.max(1)),
                delay: st.extra_delay.map(|e| delay + e),
                loss: st.extra_loss.map(|e| (l.loss + e).clamp(0.0, 0.999_999)),
            });
        }
        match (st.outage, open) {
            (Some(true), None) => open = Some(st.t),
            (Some(false), Some(start)) => {
                outages.push((start, st.t - start));
                open = None;
            }
            _ => {}
        }
        if st.drop_queue {
            queue_drops.push(st.t);
        }
    }
    if let Some(start) = open {
        outages.push((start, duration.saturating_sub(start)));
    }
    let data = DirConfig {
        service: Service::Rate(first_rate),
        delay,
        loss: l.loss,
        buffer,
        outage_mode: mode,
    };
    let reverse = DirConfig {
        service: Service::Rate(reverse_rate),
        delay: Time::from_ms_f64(l.reverse_delay_ms.unwrap_or(l.delay_ms)),
        loss: l.reverse_loss,
        buffer: l.reverse_buffer(),
        outage_mode: mode,
    };
    Ok(LinkConfig {
        id: l.id.clone(),
        data,
        reverse,
        steps,
        outages,
        queue_drops,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Buffer;
    use railpath_radio::LinkStep;
    use railpath_scenario::parse_str;

    #[test]
    fn defaults_and_reverse_direction() {
        let s = parse_str(
            r#"
[run]
duration_s = 10
[[link]]
id = "a"
rate_mbps = 40
delay_ms = 45
loss = 0.01
buffer_bytes = 300000
outages = [{ start_s = 2.5, duration_ms = 50 }]
schedule = [{ t_s = 5.0, rate_mbps = 10 }]
[[link]]
id = "b"
rate_mbps = 30
delay_ms = 85
reverse_rate_mbps = 5
reverse_delay_ms = 20
reverse_buffer_packets = 7
outage_mode = "drop"
[[flow]]
id = "f"
kind = "tcp"
cc = "cubic"
paths = ["a"]
"#,
            "t.toml",
        )
        .unwrap();
        let l = LinkConfig::all(&s.validate().unwrap()).unwrap();
        assert_eq!(l[0].data.service, Service::Rate(40_000_000));
        assert_eq!(l[0].reverse.service, Service::Rate(40_000_000));
        assert_eq!(l[0].reverse.delay, Time::from_ms(45));
        assert_eq!(l[0].reverse.loss, 0.0);
        assert_eq!(l[0].reverse.buffer, Buffer::Bytes(300_000));
        assert_eq!(l[0].outages, vec![(Time::from_ms(2500), Time::from_ms(50))]);
        assert_eq!(l[0].steps[0].rate_bps, Some(10_000_000));
        assert_eq!(l[1].data.buffer, Buffer::Packets(DEFAULT_BUFFER_PACKETS));
        assert_eq!(l[1].reverse.service, Service::Rate(5_000_000));
        assert_eq!(l[1].reverse.delay, Time::from_ms(20));
        assert_eq!(l[1].reverse.buffer, Buffer::Packets(7));
        assert_eq!(l[1].reverse.outage_mode, OutageMode::Drop);
    }

    #[test]
    fn delay_range_and_periodic_outages_as_the_scenario_crate_draws_them() {
        let s = parse_str(
            "[run]\nduration_s = 50\nseed = 4\n[[link]]\nid = \"a\"\nrate_mbps = 40\n\
             delay_range = { min_ms = 45, max_ms = 75 }\nreverse_delay_ms = 1\n\
             outages = [{ start_s = 24, duration_ms = 1000, every_s = 24 }]\n[[flow]]\nid = \"f\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n",
            "t.toml",
        )
        .unwrap();
        let l = LinkConfig::all(&s.validate().unwrap()).unwrap().remove(0);
        let want = s.links[0].schedule_steps(4, 50.0);
        assert_eq!(l.steps.len(), 50);
        assert_eq!(l.steps.len(), want.len());
        for (a, b) in l.steps.iter().zip(&want) {
            assert_eq!(a.t, Time::from_secs_f64(b.t_s));
            assert_eq!(a.delay, Some(Time::from_ms_f64(b.delay_ms.unwrap())));
        }
        assert_eq!(
            l.data.delay,
            Time::from_ms_f64(s.links[0].initial_delay_ms(4, 50.0))
        );
        assert_eq!(l.reverse.delay, Time::from_ms(1));
        assert_eq!(
            l.outages,
            vec![
                (Time::from_secs(24), Time::from_ms(1000)),
                (Time::from_secs(48), Time::from_ms(1000))
            ]
        );
    }

    #[test]
    fn unloaded_trace_is_an_error_naming_the_key() {
        let s = parse_str(
            "[run]\nduration_s = 1\n[[link]]\nid = \"a\"\ntrace = \"x.trace\"\n[[flow]]\nid = \"f\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n",
            "t.toml",
        )
        .unwrap();
        // Resolution refuses it, before any engine sees the link.
        let e = s.validate().unwrap_err();
        assert_eq!(e.key, "link[0].trace");
    }

    #[test]
    fn carrier_timeline_becomes_steps_and_outages() {
        let s = parse_str(
            "[run]\nduration_s = 10\n[[link]]\nid = \"a\"\nrate_mbps = 1\ndelay_ms = 20\nloss = 0.01\n[[flow]]\nid = \"f\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n",
            "t.toml",
        )
        .unwrap()
        .validate()
        .unwrap();
        let step = |t_ms: u64| LinkStep {
            t: Time::from_ms(t_ms),
            ..LinkStep::default()
        };
        let tl = CarrierTimeline {
            carrier: "A".into(),
            steps: vec![
                LinkStep {
                    rate_bps: Some(25_000_000),
                    extra_delay: Some(Time::ZERO),
                    extra_loss: Some(0.0),
                    ..step(0)
                },
                LinkStep {
                    outage: Some(true),
                    ..step(2000)
                },
                LinkStep {
                    outage: Some(false),
                    rate_bps: Some(10_000_000),
                    ..step(2050)
                },
                LinkStep {
                    extra_delay: Some(Time::from_ms(30)),
                    extra_loss: Some(0.05),
                    ..step(5000)
                },
                LinkStep {
                    outage: Some(true),
                    ..step(9500)
                },
            ],
            handovers: vec![],
        };
        let l = carrier_link(&s, 0, &tl, Some(railpath_radio::OutageMode::Drop)).unwrap();
        assert_eq!(l.data.service, Service::Rate(25_000_000));
        assert_eq!(l.reverse.service, Service::Rate(25_000_000));
        assert_eq!(l.data.outage_mode, OutageMode::Drop);
        // The unterminated interruption at 9.5 s lasts to the end of the run.
        assert_eq!(
            l.outages,
            vec![
                (Time::from_ms(2000), Time::from_ms(50)),
                (Time::from_ms(9500), Time::from_ms(500))
            ]
        );
        assert_eq!(l.steps.len(), 3);
        assert_eq!(l.steps[1].rate_bps, Some(10_000_000));
        assert_eq!(l.steps[2].delay, Some(Time::from_ms(50)));
        assert!((l.steps[2].loss.unwrap() - 0.06).abs() < 1e-12);
        let l = carrier_link(&s, 0, &tl, None).unwrap();
        assert_eq!(l.data.outage_mode, OutageMode::Hold);
    }
}
