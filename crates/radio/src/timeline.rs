//! Carrier timelines: the radio model (sites, RSRP, A3 handovers, SINR capacity, weak signal)
//! and the scripted model (handovers at fixed times, the PROXY-LB testbed: every 24 s per
//! carrier, ISP_A at 24, 48, ... s and ISP_B at 12, 36, ... s; seeds.md §2).
//!
//! Radio model, per position sample (every `train.sample_ms`, 10 ms by default as in the PHA
//! paper): measure every cell within `cell_range_m` (RSRP, layer-3 filtered), run the A3 event of
//! the serving cell against the others (see [`crate::a3`]); on a trigger, log a handover and
//! start an interruption of `interruption_ms` during which the link delivers nothing
//! (`outage = Some(true)`), after which the target cell serves. While connected, the rate follows
//! the serving cell's SINR ([`crate::capacity`]) and, below `low_rsrp_dbm` serving RSRP, the link
//! gets `low_rsrp_extra_delay_ms` and `low_rsrp_loss` (PROXY-LB: "below -110 dBm there is high
//! delay and intermittent link loss"; the amounts are railpath's defaults, not the paper's).

use crate::a3::{A3Params, A3Tracker};
use crate::capacity;
use crate::config::{validate, CapacityModel, CarrierConfig, CarrierModel, TrainConfig};
use crate::failure::{Degradation, FailureParams};
use crate::measured;
use crate::procedure::{Event, Flow, Procedure};
use crate::propagation::{common_field, l3_coefficient, sites, Cell};
use crate::track::Motion;
use crate::{CarrierTimeline, HandoverKind, HandoverRecord, RadioError, Steps};
use railpath_core::{Rng, Time};

/// The timeline of every carrier for a run of `duration` with run seed `seed`. The
/// configuration is validated first; errors name the key (`carrier[1].enb_spacing_m`).
pub fn carrier_timelines(
    train: &TrainConfig,
    carriers: &[CarrierConfig],
    seed: u64,
    duration: Time,
) -> Result<Vec<CarrierTimeline>, RadioError> {
    validate(Some(train), carriers)?;
    let motion = Motion::new(train);
    carriers
        .iter()
        .enumerate()
        .map(|(i, c)| match c.model {
            CarrierModel::Radio => radio_timeline(c, i, &motion, seed, duration),
            CarrierModel::Scripted => Ok(scripted_timeline(c, &motion, seed, duration)),
            CarrierModel::Csv | CarrierModel::Mahimahi => measured::timeline(c, i, duration),
        })
        .collect()
}

/// Whether a rate change from `last` to `new` is worth a step: by at least `rate_step_fraction`
/// of `last` or `rate_step_mbps`, whichever is smaller.
fn rate_changed(c: &CarrierConfig, last: u64, new: u64) -> bool {
    let diff = (new as f64 - last as f64).abs();
    diff > 0.0 && diff >= (c.rate_step_fraction * last as f64).min(c.rate_step_mbps * 1e6)
}

/// The degradation steps are emitted when the extra delay moves by this much...
const DEGRADATION_DELAY_STEP: Time = Time::from_ms(1);
/// ... or the extra loss by this much.
const DEGRADATION_LOSS_STEP: f64 = 0.001;

fn radio_timeline(
    c: &CarrierConfig,
    idx: usize,
    motion: &Motion,
    seed: u64,
    duration: Time,
) -> Result<CarrierTimeline, RadioError> {
    let times: Vec<Time> = motion.sample_times(duration).collect();
    let xs: Vec<f64> = times.iter().map(|&t| motion.position_at(t)).collect();
    let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let cells: Vec<Cell> = sites(c, lo, hi)
        .into_iter()
        .map(|s| Cell::new(c, s, seed))
        .collect();
    if cells.is_empty() {
        let key = if c.sites_m.is_some() {
            "sites_m"
        } else if c.site_segments.is_some() {
            "site_segments"
        } else {
            "first_enb_m"
        };
        return Err(RadioError::key(
            format!("carrier[{idx}].{key}"),
            format!(
                "no base station within cell_range_m ({} m) of the track section the train runs ({lo:.0}..{hi:.0} m)",
                c.cell_range_m
            ),
        ));
    }
    let common = common_field(c, hi + c.cell_range_m);
    let params = A3Params {
        hysteresis_db: c.hysteresis_db,
        offset_db: c.a3_offset_db,
        ttt: Time::from_ms(c.ttt_ms as u64),
    };
    let a = l3_coefficient(c.l3_filter_k, motion.sample_period().ms_f64());
    let peak = c.rate_mbps.unwrap_or(0.0) * 1e6;
    let min_rate = c.min_rate_mbps * 1e6;
    let fail: Option<FailureParams> = c.failures.map(|f| f.params(motion.sample_period()));
    let deg: Option<Degradation> = c.degradation.map(|d| d.model());
    let mut proc = Procedure::new(
        fail,
        c.interruption,
        Time::from_ms_f64(c.interruption_ms),
        motion.sample_period(),
    );
    // The draws of handover execution and re-establishment times, in the order they happen.
    let mut rng = Rng::stream(seed, &format!("radio:{}:events", c.id));

    let mut filt: Vec<Option<f64>> = vec![None; cells.len()];
    // The samples themselves (for radio link monitoring, which is not layer-3 filtered).
    let mut raw: Vec<f64> = vec![f64::NEG_INFINITY; cells.len()];
    let mut tracker = A3Tracker::default();
    let mut serving: Option<usize> = None;
    let mut last_rate: Option<u64> = None;
    let mut weak: Option<bool> = None;
    let mut last_extra: Option<(Time, f64)> = None;
    let mut steps = Steps::default();
    let mut handovers: Vec<HandoverRecord> = Vec::new();
    // The log entry of the outage in progress (a handover's, or a failure's).
    let mut open: Option<usize> = None;
    let mut neigh: Vec<(usize, f64)> = Vec::new();
    // Worked out once, not per sample or per cell (the same values: the same bits).
    let noise_mw = capacity::mw(c.noise_dbm);
    let rho = c.shadowing_site_corr;
    let (common_weight, own_weight) = (rho.sqrt(), (1.0 - rho).sqrt());

    // Cells w_lo..w_hi are within cell_range_m of the train (sites sorted, positions never
    // decrease).
    let (mut w_lo, mut w_hi) = (0usize, 0usize);
    for (&t, &x) in times.iter().zip(&xs) {
        while w_hi < cells.len() && cells[w_hi].site.position_m <= x + c.cell_range_m {
            w_hi += 1;
        }
        while w_lo < w_hi && cells[w_lo].site.position_m < x - c.cell_range_m {
            if serving != Some(w_lo) {
                filt[w_lo] = None;
            }
            w_lo += 1;
        }
        // Measure the cells in range and the serving cell wherever it is; layer-3 filter.
        let outside = serving.filter(|&s| s < w_lo || s >= w_hi);
        let common_db = common_weight * common.at(x);
        for j in (w_lo..w_hi).chain(outside) {
            let m = cells[j].rsrp_dbm_at(c, common_db, own_weight, x);
            raw[j] = m;
            filt[j] = Some(match filt[j] {
                None => m,
                Some(f) => (1.0 - a) * f + a * m,
            });
        }
        // The wideband SINR of cell `j` from this sample's measurements (failure model only).
        let raw_sinr = |j: usize| {
            let interf = (w_lo..w_hi)
                .chain(outside)
                .filter(|&k| k != j)
                .map(|k| capacity::mw(raw[k]))
                .sum::<f64>();
            capacity::sinr_db_mw(capacity::mw(raw[j]), interf, c.interference_load, noise_mw)
        };
        // The strongest cell in range by filtered RSRP (attach and re-establishment).
        let strongest = || {
            (w_lo..w_hi)
                .filter_map(|j| filt[j].map(|f| (j, f)))
                .max_by(|p, q| p.1.total_cmp(&q.1).then(q.0.cmp(&p.0)))
                .map(|(j, _)| j)
        };
        let (flow, ev) = proc.begin(t, &mut |j| raw_sinr(j), &mut || strongest(), &mut rng);
        match ev {
            Some(Event::Back {
                cell,
                since,
                after_failure,
            }) => {
                steps.at(t).outage = Some(false);
                serving = Some(cell);
                tracker.reset();
                if fail.is_some() {
                    let h = &mut handovers[open.take().expect("an outage in progress")];
                    if after_failure {
                        h.to_cell = cells[cell].site.name.clone();
                    }
                    h.interruption_ms = (t - since).ms_f64();
                    h.end_position_m = Some(x);
                }
            }
            Some(Event::Failed { kind, .. }) => {
                // A handover ran out of T304: what the source forwarded is lost.
                steps.at(t).drop_queue = true;
                handovers[open.expect("the handover in execution")].kind = Some(kind);
            }
            Some(Event::Started {
                target,
                exec,
                onset_m,
            }) => {
                let s = serving.expect("a handover from a serving cell");
                handovers.push(HandoverRecord {
                    t_s: t.secs_f64(),
                    position_m: x,
                    carrier: c.id.clone(),
                    from_cell: cells[s].site.name.clone(),
                    to_cell: cells[target].site.name.clone(),
                    interruption_ms: exec.ms_f64(),
                    kind: Some(HandoverKind::Success),
                    onset_position_m: onset_m,
                    end_position_m: None,
                });
                open = Some(handovers.len() - 1);
                steps.at(t).outage = Some(true);
            }
            Some(Event::Switched { .. }) | None => {}
        }
        if flow == Flow::Out {
            continue;
        }
        let s = match serving {
            Some(s) => s,
            None => {
                // Initial attach to the strongest cell (no handover).
                let Some(j) = strongest() else { continue };
                serving = Some(j);
                proc.attach(t);
                j
            }
        };
        if fail.is_some() {
            // Radio link monitoring on the serving cell.
            let sinr = raw_sinr(s);
            if let Some(Event::Failed { kind, onset_m, .. }) = proc.monitor(t, x, sinr, &mut rng) {
                // The link is out and what it holds is lost until re-establishment ends.
                handovers.push(HandoverRecord {
                    t_s: t.secs_f64(),
                    position_m: x,
                    carrier: c.id.clone(),
                    from_cell: cells[s].site.name.clone(),
                    to_cell: String::new(),
                    interruption_ms: 0.0,
                    kind: Some(kind),
                    onset_position_m: Some(onset_m),
                    end_position_m: None,
                });
                open = Some(handovers.len() - 1);
                let st = steps.at(t);
                st.outage = Some(true);
                st.drop_queue = true;
                continue;
            }
        }
        let mp = filt[s].unwrap_or(f64::NEG_INFINITY);
        if proc.connected() {
            neigh.clear();
            neigh.extend(
                (w_lo..w_hi)
                    .filter(|&j| j != s)
                    .filter_map(|j| filt[j].map(|f| (j, f))),
            );
            if let Some(target) = tracker.update(&params, t, mp, &neigh) {
                match proc.trigger(t, x, target, &mut rng) {
                    Some(Event::Started { exec, .. }) => {
                        handovers.push(HandoverRecord {
                            t_s: t.secs_f64(),
                            position_m: x,
                            carrier: c.id.clone(),
                            from_cell: cells[s].site.name.clone(),
                            to_cell: cells[target].site.name.clone(),
                            interruption_ms: match c.interruption {
                                Some(_) => exec.ms_f64(),
                                None => c.interruption_ms,
                            },
                            ..Default::default()
                        });
                        open = Some(handovers.len() - 1);
                        steps.at(t).outage = Some(true);
                        continue;
                    }
                    Some(Event::Switched { target }) => {
                        serving = Some(target);
                        tracker.reset();
                    }
                    // With the failure model: the report went out, the command follows.
                    _ => {}
                }
            }
        }
        let s = serving.unwrap_or(s);
        let mp = filt[s].unwrap_or(f64::NEG_INFINITY);
        let interf = (w_lo..w_hi)
            .filter(|&j| j != s)
            .filter_map(|j| filt[j])
            .map(capacity::mw)
            .sum::<f64>();
        let sinr = capacity::sinr_db_mw(capacity::mw(mp), interf, c.interference_load, noise_mw);
        let rate = match c.capacity {
            CapacityModel::Sinr => capacity::rate_bps(sinr, peak, min_rate),
            CapacityModel::Peak => peak.round() as u64,
        };
        if last_rate.is_none_or(|l| rate_changed(c, l, rate)) {
            steps.at(t).rate_bps = Some(rate);
            last_rate = Some(rate);
        }
        let is_weak = mp < c.low_rsrp_dbm;
        match &deg {
            None => {
                if weak != Some(is_weak) {
                    let st = steps.at(t);
                    st.extra_delay = Some(if is_weak {
                        Time::from_ms_f64(c.low_rsrp_extra_delay_ms)
                    } else {
                        Time::ZERO
                    });
                    st.extra_loss = Some(if is_weak { c.low_rsrp_loss } else { 0.0 });
                    weak = Some(is_weak);
                }
            }
            Some(d) => {
                // HARQ/RLC at this SINR, on top of the weak-signal rule.
                let (delay, loss) = d.effect(sinr);
                let (wd, wl) = if is_weak {
                    (
                        Time::from_ms_f64(c.low_rsrp_extra_delay_ms),
                        c.low_rsrp_loss,
                    )
                } else {
                    (Time::ZERO, 0.0)
                };
                let extra = (delay + wd, (1.0 - (1.0 - loss) * (1.0 - wl)).min(0.999_999));
                let moved = last_extra.is_none_or(|(d0, l0)| {
                    d0.ns().abs_diff(extra.0.ns()) >= DEGRADATION_DELAY_STEP.ns()
                        || (l0 - extra.1).abs() >= DEGRADATION_LOSS_STEP
                        || (l0 > 0.0) != (extra.1 > 0.0)
                });
                if moved {
                    let st = steps.at(t);
                    st.extra_delay = Some(extra.0);
                    st.extra_loss = Some(extra.1);
                    last_extra = Some(extra);
                }
            }
        }
    }
    Ok(CarrierTimeline {
        carrier: c.id.clone(),
        steps: steps.v,
        handovers,
    })
}

fn scripted_timeline(
    c: &CarrierConfig,
    motion: &Motion,
    seed: u64,
    duration: Time,
) -> CarrierTimeline {
    let interval = Time::from_secs_f64(c.handover_interval_s.unwrap_or(f64::INFINITY));
    let offset = c
        .handover_offset_s
        .map(Time::from_secs_f64)
        .unwrap_or(interval);
    let interruption = Time::from_ms_f64(c.interruption_ms);
    let mut rng = Rng::stream(seed, &format!("radio:{}:events", c.id));
    let mut steps = Steps::default();
    let first = steps.at(Time::ZERO);
    first.rate_bps = Some((c.rate_mbps.unwrap_or(0.0) * 1e6).round() as u64);
    first.extra_delay = Some(Time::ZERO);
    first.extra_loss = Some(0.0);
    let mut handovers = Vec::new();
    let mut k = 0u64;
    loop {
        let t = offset + interval.mul(k);
        if t >= duration || interval == Time::ZERO {
            break;
        }
        let exec = c.interruption.map_or(interruption, |d| d.draw(&mut rng));
        handovers.push(HandoverRecord {
            t_s: t.secs_f64(),
            position_m: motion.position_at(t),
            carrier: c.id.clone(),
            from_cell: format!("{}-{}", c.id, k + 1),
            to_cell: format!("{}-{}", c.id, k + 2),
            interruption_ms: match c.interruption {
                Some(_) => exec.ms_f64(),
                None => c.interruption_ms,
            },
            ..Default::default()
        });
        if exec > Time::ZERO {
            steps.at(t).outage = Some(true);
            // A following handover cannot start before this one ends.
            steps.at((t + exec).min(t + interval)).outage = Some(false);
        }
        k += 1;
    }
    CarrierTimeline {
        carrier: c.id.clone(),
        steps: steps.v,
        handovers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::OutageMode;

    #[test]
    fn rate_change_threshold() {
        let c = CarrierConfig::grid("A", 25.0, 1340.0, 0.0);
        // At 25 Mbit/s: min(2% = 0.5, 0.5) Mbit/s.
        assert!(!rate_changed(&c, 25_000_000, 24_600_000));
        assert!(rate_changed(&c, 25_000_000, 24_500_000));
        // At 5 Mbit/s: 2% = 0.1 Mbit/s.
        assert!(rate_changed(&c, 5_000_000, 5_100_000));
        assert!(!rate_changed(&c, 5_000_000, 5_090_000));
    }

    #[test]
    fn peak_capacity_keeps_the_rate_between_handovers() {
        let t = TrainConfig::constant(300.0);
        let mut a = CarrierConfig::grid("A", 25.0, 1340.0, 0.0);
        let sinr = carrier_timelines(&t, std::slice::from_ref(&a), 1, Time::from_secs(30)).unwrap();
        a.capacity = CapacityModel::Peak;
        let peak = carrier_timelines(&t, &[a], 1, Time::from_secs(30)).unwrap();
        // Same handovers (capacity does not steer them); one rate step, the peak.
        assert_eq!(sinr[0].handovers, peak[0].handovers);
        let rates: Vec<u64> = peak[0].steps.iter().filter_map(|s| s.rate_bps).collect();
        assert_eq!(rates, vec![25_000_000]);
        assert!(
            sinr[0]
                .steps
                .iter()
                .filter(|s| s.rate_bps.is_some())
                .count()
                > 10
        );
    }

    #[test]
    fn scripted_proxy_lb_schedule() {
        let t = TrainConfig::constant(300.0);
        let mut a = CarrierConfig::grid("ISP_A", 40.0, 1340.0, 0.0);
        a.model = CarrierModel::Scripted;
        a.enb_spacing_m = None;
        a.handover_interval_s = Some(24.0);
        a.outage_mode = Some(OutageMode::Hold);
        let mut b = a.clone();
        b.id = "ISP_B".into();
        b.rate_mbps = Some(30.0);
        b.handover_offset_s = Some(12.0);
        let tl = carrier_timelines(&t, &[a, b], 1, Time::from_secs(60)).unwrap();
        let ta: Vec<f64> = tl[0].handovers.iter().map(|h| h.t_s).collect();
        let tb: Vec<f64> = tl[1].handovers.iter().map(|h| h.t_s).collect();
        assert_eq!(ta, vec![24.0, 48.0]);
        assert_eq!(tb, vec![12.0, 36.0]);
        // 300 km/h for 24 s = 2000 m.
        assert!((tl[0].handovers[0].position_m - 2000.0).abs() < 1e-6);
        assert_eq!(tl[0].steps[0].rate_bps, Some(40_000_000));
        assert_eq!(tl[0].steps[1].t, Time::from_secs(24));
        assert_eq!(tl[0].steps[1].outage, Some(true));
        assert_eq!(tl[0].steps[2].t, Time::from_ms(24_050));
        assert_eq!(tl[0].steps[2].outage, Some(false));
    }
}
