//! What goes wrong on a fast train, by 3GPP's own evaluation method: radio link monitoring and
//! radio link failure, handover failure, re-establishment, and the link's degradation as the
//! signal falls. Pure decision rules, each with unit tests on hand-computed sequences; the
//! carrier timeline (`timeline.rs`) runs them on the serving cell's SINR every sample.
//!
//! - **Radio link monitoring** (TS 36.133 §7.6; TS 36.331 §5.3.11, timers in §7.3, UE defaults
//!   in §9.2.5): every indication period (10 ms) the UE compares the serving cell's downlink
//!   quality over the last 200 ms (`T_Evaluate_Qout`) with Qout and over the last 100 ms
//!   (`T_Evaluate_Qin`) with Qin: below Qout is an out-of-sync indication, above Qin an in-sync
//!   one, neither in between. N310 consecutive out-of-sync indications start T310; N311
//!   consecutive in-sync indications stop it, as does triggering a handover; T310's expiry is a
//!   radio link failure. Qout and Qin are the hypothetical PDCCH's 10 % and 2 % block error
//!   rates; TR 36.839 (mobility evaluation) maps them to -8 and -6 dB of wideband SINR, the
//!   quality here being the mean linear SINR over the window.
//! - **Handover failure** (TR 36.839's two failure points): the handover command does not get
//!   through when, `prep` after the A3 report (report, preparation, command), the source cell's
//!   200 ms quality is below Qout: the UE stays on the failing source until T310 expires. Or the
//!   target cannot be accessed: random access needs the target's quality at least Qout; after
//!   the drawn execution time the UE keeps trying until T304 expires (TS 36.331 §5.3.5.6).
//! - **Re-establishment** (TS 36.331 §5.3.7): after a failure the UE selects the strongest cell
//!   and re-establishes there; the outage lasts a drawn duration, and what the carrier held is
//!   lost (the target has no forwarded data for an unprepared UE).
//! - **Degradation** ([`Degradation`]): HARQ retransmissions (8 ms apart in FDD, TS 36.213 §8)
//!   and RLC AM retransmissions (TS 36.322 §5.2) delay what gets through, and what exhausts
//!   both is lost, as the block error rate rises when the SINR falls below what the most robust
//!   modulation and coding scheme needs.
//!
//! docs/models/radio.md states every default and its source.

use railpath_core::{Rng, Time};
use serde::{Deserialize, Serialize};

/// A duration drawn afresh for each event: `{ dist = "constant", ms = 50 }`,
/// `{ dist = "uniform", min_ms = 20, max_ms = 50 }` or
/// `{ dist = "lognormal", median_ms = 60, sigma = 0.5, max_ms = 2000 }` (`max_ms` optional).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub enum DurationDist {
    Constant {
        ms: f64,
    },
    Uniform {
        min_ms: f64,
        max_ms: f64,
    },
    Lognormal {
        median_ms: f64,
        sigma: f64,
        #[serde(default)]
        max_ms: Option<f64>,
    },
}

impl DurationDist {
    /// One draw. A constant draws nothing from `rng`; the others draw one or two numbers.
    pub fn draw(&self, rng: &mut Rng) -> Time {
        let ms = match *self {
            DurationDist::Constant { ms } => ms,
            DurationDist::Uniform { min_ms, max_ms } => min_ms + (max_ms - min_ms) * rng.uniform(),
            DurationDist::Lognormal {
                median_ms,
                sigma,
                max_ms,
            } => {
                let v = median_ms * (sigma * rng.normal()).exp();
                max_ms.map_or(v, |m| v.min(m))
            }
        };
        Time::from_ms_f64(ms.max(0.0))
    }

    /// The largest value a draw can take, ms (infinite for an unbounded lognormal).
    pub fn max_ms(&self) -> f64 {
        match *self {
            DurationDist::Constant { ms } => ms,
            DurationDist::Uniform { max_ms, .. } => max_ms,
            DurationDist::Lognormal { max_ms, .. } => max_ms.unwrap_or(f64::INFINITY),
        }
    }

    /// The check of a distribution's values, as `(key suffix, message)` of its first problem.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        let ms_range = |v: f64| v.is_finite() && (0.0..=600_000.0).contains(&v);
        match *self {
            DurationDist::Constant { ms } if !ms_range(ms) => Some((
                "ms",
                format!("expected a duration in 0..=600000 ms, found {ms}"),
            )),
            DurationDist::Uniform { min_ms, max_ms } => {
                if !ms_range(min_ms) {
                    Some((
                        "min_ms",
                        format!("expected a duration in 0..=600000 ms, found {min_ms}"),
                    ))
                } else if !ms_range(max_ms) || max_ms < min_ms {
                    Some((
                        "max_ms",
                        format!("expected a duration >= min_ms ({min_ms}) and <= 600000 ms, found {max_ms}"),
                    ))
                } else {
                    None
                }
            }
            DurationDist::Lognormal {
                median_ms,
                sigma,
                max_ms,
            } => {
                if !(ms_range(median_ms) && median_ms > 0.0) {
                    Some((
                        "median_ms",
                        format!("expected a duration in (0, 600000] ms, found {median_ms}"),
                    ))
                } else if !(sigma.is_finite() && (0.0..=5.0).contains(&sigma)) {
                    Some((
                        "sigma",
                        format!("expected a log-standard deviation in 0..=5, found {sigma}"),
                    ))
                } else {
                    match max_ms {
                        Some(m) if !ms_range(m) || m < median_ms => Some((
                            "max_ms",
                            format!("expected a duration >= median_ms ({median_ms}) and <= 600000 ms, found {m}"),
                        )),
                        _ => None,
                    }
                }
            }
            _ => None,
        }
    }
}

/// The failure model's parameters with their defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailureParams {
    pub q_out_db: f64,
    pub q_in_db: f64,
    /// Indication period and the two evaluation windows.
    pub indication: Time,
    pub eval_out: Time,
    pub eval_in: Time,
    pub n310: u32,
    pub t310: Time,
    pub n311: u32,
    pub t304: Time,
    /// From the A3 report to the handover command at the UE.
    pub prep: Time,
    pub reestablish: DurationDist,
}

/// Radio link monitoring's state: T310 and the counters of consecutive indications.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rlm {
    out_count: u32,
    in_count: u32,
    /// When T310 expires, while it runs.
    t310_until: Option<Time>,
}

/// What one indication did to radio link monitoring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RlmEvent {
    /// N310 consecutive out-of-sync: T310 started.
    T310Started,
    /// N311 consecutive in-sync: T310 stopped.
    T310Stopped,
    /// T310 expired: radio link failure.
    Rlf,
}

/// One indication of radio link monitoring, from the two windows' qualities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Indication {
    OutOfSync,
    InSync,
    None,
}

/// The indication given by qualities `q200` (the `T_Evaluate_Qout` window) and `q100` (the
/// `T_Evaluate_Qin` window), dB: out-of-sync below Qout, in-sync above Qin, else none.
pub fn indication(p: &FailureParams, q200_db: f64, q100_db: f64) -> Indication {
    if q200_db < p.q_out_db {
        Indication::OutOfSync
    } else if q100_db > p.q_in_db {
        Indication::InSync
    } else {
        Indication::None
    }
}

impl Rlm {
    /// Whether T310 is running.
    pub fn t310_running(&self) -> bool {
        self.t310_until.is_some()
    }

    /// Stop T310 and clear the counters (a handover is triggered, or re-establishment starts:
    /// TS 36.331 §7.3).
    pub fn reset(&mut self) {
        *self = Rlm::default();
    }

    /// Radio link monitoring at time `now`, given that period's indication.
    pub fn update(&mut self, p: &FailureParams, now: Time, ind: Indication) -> Option<RlmEvent> {
        if let Some(until) = self.t310_until {
            if now >= until {
                self.reset();
                return Some(RlmEvent::Rlf);
            }
            match ind {
                Indication::InSync => {
                    self.in_count += 1;
                    if self.in_count >= p.n311 {
                        self.reset();
                        return Some(RlmEvent::T310Stopped);
                    }
                }
                // Consecutive: anything else breaks the run of in-sync indications.
                Indication::OutOfSync | Indication::None => self.in_count = 0,
            }
            return None;
        }
        match ind {
            Indication::OutOfSync => {
                self.out_count += 1;
                if self.out_count >= p.n310 {
                    self.out_count = 0;
                    self.in_count = 0;
                    self.t310_until = Some(now + p.t310);
                    return Some(RlmEvent::T310Started);
                }
            }
            Indication::InSync | Indication::None => self.out_count = 0,
        }
        None
    }
}

/// The serving cell's SINR samples over the longest evaluation window: the mean linear SINR
/// over the last 200 ms and the last 100 ms, in dB.
#[derive(Debug, Clone, Default)]
pub struct SinrWindow {
    /// (time, linear SINR), oldest first.
    samples: std::collections::VecDeque<(Time, f64)>,
}

impl SinrWindow {
    pub fn clear(&mut self) {
        self.samples.clear();
    }

    /// Add the sample at `now` and forget what is older than `keep`.
    pub fn push(&mut self, now: Time, sinr_db: f64, keep: Time) {
        self.samples.push_back((now, 10f64.powf(sinr_db / 10.0)));
        while let Some(&(t, _)) = self.samples.front() {
            if now.saturating_sub(t) >= keep {
                self.samples.pop_front();
            } else {
                break;
            }
        }
    }

    /// Mean of the samples within `span` before `now` (a sample at `now - span` is outside), dB;
    /// `-inf` when there is none.
    pub fn mean_db(&self, now: Time, span: Time) -> f64 {
        let (mut sum, mut n) = (0.0, 0u32);
        for &(t, v) in self.samples.iter().rev() {
            if now.saturating_sub(t) >= span {
                break;
            }
            sum += v;
            n += 1;
        }
        if n == 0 {
            f64::NEG_INFINITY
        } else {
            10.0 * (sum / n as f64).log10()
        }
    }
}

/// The link's degradation at a weak signal, with its defaults filled in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Degradation {
    /// HARQ round trip, FDD: 8 ms (TS 36.213 §8: a retransmission 8 subframes later).
    pub harq_rtt: Time,
    /// Transmissions of a transport block by HARQ before it is given up.
    pub max_harq_tx: u32,
    /// Block error rate link adaptation aims at for a first transmission.
    pub bler_target: f64,
    /// SINR the most robust modulation and coding scheme needs for `bler_target`, dB.
    pub sinr_min_db: f64,
    /// Below `sinr_min_db`, the block error rate grows tenfold per this many dB.
    pub bler_db_per_decade: f64,
    /// An RLC AM retransmission follows a lost block after this long (status report and
    /// scheduling).
    pub rlc_retx: Time,
    /// RLC AM retransmissions of a block before it is given up (`maxRetxThreshold`).
    pub rlc_max_retx: u32,
}

impl Degradation {
    /// The block error rate of one HARQ transmission at `sinr_db`.
    pub fn bler(&self, sinr_db: f64) -> f64 {
        if sinr_db >= self.sinr_min_db {
            self.bler_target
        } else {
            (self.bler_target * 10f64.powf((self.sinr_min_db - sinr_db) / self.bler_db_per_decade))
                .min(1.0)
        }
    }

    /// What the link adds at `sinr_db`: the mean extra delay of a packet that gets through,
    /// and the probability that a packet does not (both levels' retransmissions exhausted).
    ///
    /// With HARQ failure probability `p` per transmission and at most `N` transmissions, a
    /// block gets through HARQ with probability `1 - q`, `q = p^N`, after `k - 1`
    /// retransmissions with probability `p^(k-1) (1 - p)`; RLC AM then sends a lost block again
    /// after `rlc_retx`, at most `R` times, each attempt through HARQ again. A packet that gets
    /// through at RLC attempt `j` and HARQ transmission `k` waited
    /// `(j - 1) (N rtt + rlc_retx) + (k - 1) rtt`; the loss is `q^(R + 1)`.
    pub fn effect(&self, sinr_db: f64) -> (Time, f64) {
        let p = self.bler(sinr_db);
        let n = self.max_harq_tx.max(1);
        let q = p.powi(n as i32);
        let attempts = self.rlc_max_retx + 1;
        let loss = q.powi(attempts as i32);
        if loss >= 1.0 {
            return (Time::ZERO, 1.0);
        }
        let rtt = self.harq_rtt.ms_f64();
        // Mean extra HARQ transmissions of a block that got through HARQ.
        let mut harq = 0.0;
        for k in 1..=n {
            harq += (k - 1) as f64 * p.powi(k as i32 - 1) * (1.0 - p);
        }
        let harq = if q < 1.0 { harq / (1.0 - q) } else { 0.0 };
        // Mean failed RLC attempts before the one that got through, given one did.
        let mut failed = 0.0;
        for j in 1..=attempts {
            failed += (j - 1) as f64 * q.powi(j as i32 - 1) * (1.0 - q);
        }
        let failed = failed / (1.0 - loss);
        let per_failed = n as f64 * rtt + self.rlc_retx.ms_f64();
        (Time::from_ms_f64(failed * per_failed + harq * rtt), loss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> FailureParams {
        FailureParams {
            q_out_db: -8.0,
            q_in_db: -6.0,
            indication: Time::from_ms(10),
            eval_out: Time::from_ms(200),
            eval_in: Time::from_ms(100),
            n310: 3,
            t310: Time::from_ms(1000),
            n311: 2,
            t304: Time::from_ms(1000),
            prep: Time::from_ms(50),
            reestablish: DurationDist::Constant { ms: 500.0 },
        }
    }

    #[test]
    fn indications_compare_the_windows_with_qout_and_qin() {
        let p = params();
        // The 200 ms window below Qout is out-of-sync whatever the 100 ms one says.
        assert_eq!(indication(&p, -8.1, -5.0), Indication::OutOfSync);
        // Exactly Qout is not below it; the 100 ms window exactly Qin is not above it.
        assert_eq!(indication(&p, -8.0, -6.0), Indication::None);
        assert_eq!(indication(&p, -7.0, -5.9), Indication::InSync);
    }

    #[test]
    fn t310_starts_after_n310_and_stops_after_n311_consecutive_indications() {
        // N310 = 3, N311 = 2, T310 = 1 s, an indication every 10 ms.
        let p = params();
        let mut r = Rlm::default();
        let ms = Time::from_ms;
        use Indication::*;
        // Two out-of-sync, a gap (none), then three: T310 starts at the third of those, 60 ms.
        let seq = [OutOfSync, OutOfSync, None, OutOfSync, OutOfSync, OutOfSync];
        let mut ev = Vec::new();
        for (k, i) in seq.iter().enumerate() {
            ev.push(r.update(&p, ms(10 * k as u64 + 10), *i));
        }
        assert_eq!(ev[..5], [Option::None; 5]);
        assert_eq!(ev[5], Some(RlmEvent::T310Started));
        assert!(r.t310_running());
        // In-sync, out-of-sync (breaks the run), then two in-sync: stopped at 100 ms.
        assert_eq!(r.update(&p, ms(70), InSync), Option::None);
        assert_eq!(r.update(&p, ms(80), OutOfSync), Option::None);
        assert_eq!(r.update(&p, ms(90), InSync), Option::None);
        assert_eq!(r.update(&p, ms(100), InSync), Some(RlmEvent::T310Stopped));
        assert!(!r.t310_running());
    }

    #[test]
    fn t310_expiry_is_a_radio_link_failure() {
        let mut p = params();
        p.n310 = 1;
        let mut r = Rlm::default();
        let ms = Time::from_ms;
        // Started at 20 ms: expires at 1020 ms, not before.
        assert_eq!(
            r.update(&p, ms(20), Indication::OutOfSync),
            Some(RlmEvent::T310Started)
        );
        assert_eq!(r.update(&p, ms(1010), Indication::None), None);
        assert_eq!(
            r.update(&p, ms(1020), Indication::InSync),
            Some(RlmEvent::Rlf)
        );
        assert!(!r.t310_running());
    }

    #[test]
    fn the_windows_average_linear_sinr() {
        let mut w = SinrWindow::default();
        let keep = Time::from_ms(200);
        let ms = Time::from_ms;
        // 0 dB (1.0) for 100 ms, then -10 dB (0.1) for 100 ms, sampled every 10 ms.
        for k in 1..=10u64 {
            w.push(ms(10 * k), 0.0, keep);
        }
        for k in 11..=20u64 {
            w.push(ms(10 * k), -10.0, keep);
        }
        // 200 ms window at 200 ms: samples 10..=200 ms, mean 0.55 -> -2.596 dB.
        assert!((w.mean_db(ms(200), ms(200)) - 10.0 * 0.55f64.log10()).abs() < 1e-9);
        // 100 ms window: the last ten samples, -10 dB.
        assert!((w.mean_db(ms(200), ms(100)) + 10.0).abs() < 1e-9);
        // Samples older than 200 ms are forgotten.
        // At 210 ms the window is 20..=210 ms: nine samples of 1.0 and eleven of 0.1, mean
        // 10.1 / 20 = 0.505.
        w.push(ms(210), -10.0, keep);
        assert!((w.mean_db(ms(210), ms(200)) - 10.0 * 0.505f64.log10()).abs() < 1e-9);
        assert_eq!(
            SinrWindow::default().mean_db(ms(10), ms(200)),
            f64::NEG_INFINITY
        );
    }

    fn degradation() -> Degradation {
        Degradation {
            harq_rtt: Time::from_ms(8),
            max_harq_tx: 4,
            bler_target: 0.1,
            sinr_min_db: -6.9,
            bler_db_per_decade: 1.0,
            rlc_retx: Time::from_ms(40),
            rlc_max_retx: 8,
        }
    }

    #[test]
    fn the_block_error_rate_rises_a_decade_per_step_below_the_most_robust_scheme() {
        let d = degradation();
        assert_eq!(d.bler(0.0), 0.1);
        assert_eq!(d.bler(-6.9), 0.1);
        assert!((d.bler(-7.4) - 0.1 * 10f64.sqrt()).abs() < 1e-12);
        assert_eq!(d.bler(-7.9), 1.0);
        assert_eq!(d.bler(-20.0), 1.0);
    }

    #[test]
    fn harq_and_rlc_delay_and_loss_by_hand() {
        let d = degradation();
        // p = 0.1, N = 4: q = 1e-4. HARQ extra transmissions of a block that got through:
        // (1*0.1*0.9 + 2*0.01*0.9 + 3*0.001*0.9) / (1 - 1e-4) = 0.1107/0.9999 = 0.110711;
        // RLC: failed attempts (1 - q)(q + 2q^2 + ...) / (1 - q^9) ~ 1.0002e-4, each
        // 4 x 8 + 40 = 72 ms. Delay 0.110711 x 8 + 1.0002e-4 x 72 = 0.89289 ms; loss 1e-36.
        let (delay, loss) = d.effect(0.0);
        assert!((delay.ms_f64() - 0.892_89).abs() < 1e-4, "{delay:?}");
        assert!(loss < 1e-30);
        // p = 1: nothing gets through.
        assert_eq!(d.effect(-8.0), (Time::ZERO, 1.0));
        // p = 0.5 (SINR -6.9 - log10(5) dB): q = 0.0625, loss = q^9 = 1.455e-11.
        let s = -6.9 - 5f64.log10();
        let (delay, loss) = d.effect(s);
        assert!((loss - 0.0625f64.powi(9)).abs() < 1e-15);
        // HARQ: (0.5*0.5 + 2*0.25*0.5 + 3*0.125*0.5)/(1 - 0.0625) = 0.6875/0.9375 = 0.73333;
        // RLC: sum_{j=1..9} (j-1) q^(j-1)(1-q) / (1 - q^9) = 0.066667 (q/(1-q) to 1e-9).
        let want = 0.733_333 * 8.0 + 0.066_667 * 72.0;
        assert!(
            (delay.ms_f64() - want).abs() < 1e-3,
            "{} vs {want}",
            delay.ms_f64()
        );
    }

    #[test]
    fn durations_draw_within_their_bounds() {
        let mut rng = Rng::stream(1, "t");
        let c = DurationDist::Constant { ms: 50.0 };
        assert_eq!(c.draw(&mut rng), Time::from_ms(50));
        let u = DurationDist::Uniform {
            min_ms: 20.0,
            max_ms: 50.0,
        };
        for _ in 0..1000 {
            let v = u.draw(&mut rng).ms_f64();
            assert!((20.0..=50.0).contains(&v), "{v}");
        }
        let l = DurationDist::Lognormal {
            median_ms: 100.0,
            sigma: 1.0,
            max_ms: Some(300.0),
        };
        let mut v: Vec<f64> = (0..2001).map(|_| l.draw(&mut rng).ms_f64()).collect();
        v.sort_by(f64::total_cmp);
        assert!(v[2000] <= 300.0);
        assert!((v[1000] - 100.0).abs() < 10.0, "median {}", v[1000]);
        assert_eq!(
            DurationDist::Uniform {
                min_ms: 5.0,
                max_ms: 1.0
            }
            .problem()
            .map(|p| p.0),
            Some("max_ms")
        );
        assert_eq!(u.problem(), None);
    }
}
