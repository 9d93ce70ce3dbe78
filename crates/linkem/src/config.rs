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
use railpath_scenario::{Link, OutageMode, Scenario, ScenarioError};
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
}

fn mbps_to_bps(file: &str, key: &str, mbps: f64) -> Result<u64, ScenarioError> {
    if !(mbps.is_finite() && mbps > 0.0) {
        return Err(ScenarioError::new(
            file,
            key,
            format!("expected a rate in Mbit/s > 0, found {mbps}"),
        ));
    }
    Ok((mbps * 1e6).round().max(1.0) as u64)
}

fn ms(file: &str, key: &str, v: f64) -> Result<Time, ScenarioError> {
    if !(v.is_finite() && v >= 0.0) {
        return Err(ScenarioError::new(
            file,
            key,
            format!("expected milliseconds >= 0, found {v}"),
        ));
    }
    Ok(Time::from_ms_f64(v))
}

impl LinkConfig {
    /// The link `i` of a (validated, traces loaded) scenario.
    pub fn from_scenario_link(s: &Scenario, i: usize) -> Result<LinkConfig, ScenarioError> {
        let l: &Link = &s.links[i];
        let file = s.source.as_str();
        let k = |f: &str| format!("link[{i}].{f}");
        let data_service = match (&l.trace, &l.trace_ms, l.rate_mbps) {
            (Some(_), Some(t), _) => Service::Trace(Arc::new(t.clone())),
            (Some(_), None, _) => {
                return Err(ScenarioError::new(
                    file,
                    k("trace"),
                    "trace file named but not loaded (use railpath_scenario::load)",
                ))
            }
            (None, _, Some(r)) => Service::Rate(mbps_to_bps(file, &k("rate_mbps"), r)?),
            (None, _, None) => {
                return Err(ScenarioError::new(
                    file,
                    k("rate_mbps"),
                    "required (a rate in Mbit/s > 0) unless trace is given",
                ))
            }
        };
        let buffer = l.buffer();
        let reverse_service = match (&l.reverse_trace, &l.reverse_trace_ms, l.reverse_rate_mbps) {
            (Some(_), Some(t), _) => Service::Trace(Arc::new(t.clone())),
            (Some(_), None, _) => {
                return Err(ScenarioError::new(
                    file,
                    k("reverse_trace"),
                    "trace file named but not loaded (use railpath_scenario::load)",
                ))
            }
            (None, _, Some(r)) => Service::Rate(mbps_to_bps(file, &k("reverse_rate_mbps"), r)?),
            (None, _, None) => match &data_service {
                Service::Rate(r) => Service::Rate(*r),
                Service::Trace(_) => Service::Rate((DEFAULT_TRACE_REVERSE_RATE_MBPS * 1e6) as u64),
            },
        };
        let end_s = s.run.duration_s;
        let data = DirConfig {
            service: data_service,
            delay: ms(file, &k("delay_ms"), l.initial_delay_ms(s.run.seed, end_s))?,
            loss: l.loss,
            buffer,
            outage_mode: l.outage_mode,
        };
        let reverse = DirConfig {
            service: reverse_service,
            delay: ms(
                file,
                &k("reverse_delay_ms"),
                l.reverse_delay_ms.unwrap_or(l.delay_ms),
            )?,
            loss: l.reverse_loss,
            buffer: l.reverse_buffer(),
            outage_mode: l.outage_mode,
        };
        // The schedule as written is checked key by key; the steps run are those of
        // `schedule_steps` (the schedule with the `delay_range` draws merged in).
        for (j, st) in l.schedule.iter().enumerate() {
            let sk = |f: &str| format!("link[{i}].schedule[{j}].{f}");
            if !(st.t_s.is_finite() && st.t_s >= 0.0) {
                return Err(ScenarioError::new(
                    file,
                    sk("t_s"),
                    format!("expected seconds >= 0, found {}", st.t_s),
                ));
            }
            if let Some(r) = st.rate_mbps {
                mbps_to_bps(file, &sk("rate_mbps"), r)?;
                if l.trace.is_some() {
                    return Err(ScenarioError::new(
                        file,
                        sk("rate_mbps"),
                        "a traced link has no rate to change",
                    ));
                }
            }
            if let Some(d) = st.delay_ms {
                ms(file, &sk("delay_ms"), d)?;
            }
        }
        let mut steps = Vec::new();
        for st in l.schedule_steps(s.run.seed, end_s) {
            steps.push(Step {
                t: Time::from_secs_f64(st.t_s),
                rate_bps: st
                    .rate_mbps
                    .map(|r| mbps_to_bps(file, &k("schedule"), r))
                    .transpose()?,
                delay: st
                    .delay_ms
                    .map(|d| ms(file, &k("delay_range"), d))
                    .transpose()?,
                loss: st.loss,
            });
        }
        steps.sort_by_key(|s| s.t);
        for (j, o) in l.outages.iter().enumerate() {
            if !(o.start_s.is_finite() && o.start_s >= 0.0) {
                return Err(ScenarioError::new(
                    file,
                    format!("link[{i}].outages[{j}].start_s"),
                    format!("expected seconds >= 0, found {}", o.start_s),
                ));
            }
            ms(
                file,
                &format!("link[{i}].outages[{j}].duration_ms"),
                o.duration_ms,
            )?;
        }
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
        })
    }

    /// Every link of a scenario; links with `carrier = "<id>"` follow that carrier's timeline.
    pub fn all_from_scenario(s: &Scenario) -> Result<Vec<LinkConfig>, ScenarioError> {
        Ok(links_and_handovers(s)?.0)
    }
}

/// The radio model's carrier timelines of a scenario (empty without `[[carrier]]`).
pub fn carrier_timelines(s: &Scenario) -> Result<Vec<CarrierTimeline>, ScenarioError> {
    if s.carriers.is_empty() {
        return Ok(Vec::new());
    }
    let Some(train) = &s.train else {
        return Err(ScenarioError::new(
            &s.source,
            "train",
            "required when [[carrier]] is given",
        ));
    };
    let duration = Time::from_secs_f64(s.run.duration_s);
    railpath_radio::carrier_timelines(train, &s.carriers, s.run.seed, duration).map_err(|e| {
        let file = if e.file.is_empty() {
            s.source.clone()
        } else {
            e.file.clone()
        };
        ScenarioError::new(&file, e.key, e.message)
    })
}

/// Every link of a scenario and the handovers of the carriers that drive links.
pub fn links_and_handovers(
    s: &Scenario,
) -> Result<(Vec<LinkConfig>, Vec<HandoverRecord>), ScenarioError> {
    let timelines = if s.links.iter().any(|l| l.carrier.is_some()) {
        carrier_timelines(s)?
    } else {
        Vec::new()
    };
    let mut links = Vec::new();
    let mut handovers: Vec<HandoverRecord> = Vec::new();
    for (i, l) in s.links.iter().enumerate() {
        match &l.carrier {
            None => links.push(LinkConfig::from_scenario_link(s, i)?),
            Some(c) => {
                let Some(tl) = timelines.iter().find(|t| &t.carrier == c) else {
                    return Err(ScenarioError::new(
                        &s.source,
                        format!("link[{i}].carrier"),
                        format!("no [[carrier]] with id {c:?}"),
                    ));
                };
                let cfg = s.carriers.iter().find(|k| &k.id == c);
                links.push(carrier_link(s, i, tl, cfg.and_then(|k| k.outage_mode))?);
                if !handovers.iter().any(|h| &h.carrier == c) {
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
    s: &Scenario,
    i: usize,
    tl: &CarrierTimeline,
    carrier_mode: Option<railpath_radio::OutageMode>,
) -> Result<LinkConfig, ScenarioError> {
    let l = &s.links[i];
    let file = s.source.as_str();
    let k = |f: &str| format!("link[{i}].{f}");
    let first_rate = tl.steps.iter().find_map(|st| st.rate_bps).ok_or_else(|| {
        ScenarioError::new(
            file,
            k("carrier"),
            format!("carrier {:?} gives no rate", tl.carrier),
        )
    })?;
    let mode = match (l.outage_mode, carrier_mode) {
        (OutageMode::Drop, _) => OutageMode::Drop,
        (_, Some(railpath_radio::OutageMode::Drop)) => OutageMode::Drop,
        _ => OutageMode::Hold,
    };
    let buffer = l.buffer();
    let delay = ms(file, &k("delay_ms"), l.delay_ms)?;
    let reverse_rate = match l.reverse_rate_mbps {
        Some(r) => mbps_to_bps(file, &k("reverse_rate_mbps"), r)?,
        None => first_rate,
    };
    let duration = Time::from_secs_f64(s.run.duration_s);
    let mut steps = Vec::new();
    let mut outages = Vec::new();
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
        delay: ms(
            file,
            &k("reverse_delay_ms"),
            l.reverse_delay_ms.unwrap_or(l.delay_ms),
        )?,
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
"#,
            "t.toml",
        )
        .unwrap();
        let l = LinkConfig::all_from_scenario(&s).unwrap();
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
             outages = [{ start_s = 24, duration_ms = 1000, every_s = 24 }]\n",
            "t.toml",
        )
        .unwrap();
        let l = LinkConfig::all_from_scenario(&s).unwrap().remove(0);
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
            "[run]\nduration_s = 1\n[[link]]\nid = \"a\"\ntrace = \"x.trace\"\n",
            "t.toml",
        )
        .unwrap();
        let e = LinkConfig::from_scenario_link(&s, 0).unwrap_err();
        assert_eq!(e.key, "link[0].trace");
    }

    #[test]
    fn carrier_timeline_becomes_steps_and_outages() {
        let s = parse_str(
            "[run]\nduration_s = 10\n[[link]]\nid = \"a\"\nrate_mbps = 1\ndelay_ms = 20\nloss = 0.01\n",
            "t.toml",
        )
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
