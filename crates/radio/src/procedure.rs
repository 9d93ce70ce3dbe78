//! A carrier's handover procedure, sample by sample: the decision rules of handover execution,
//! handover failure, radio link failure and re-establishment, apart from the geometry that
//! feeds them (the timeline, [`crate::timeline`], measures the cells and runs A3).
//!
//! Without the failure model (the PHA paper's gentle radio): an A3 trigger starts the handover at
//! once and the target serves after the execution time (`interruption_ms`, or a draw of
//! `interruption`), whatever the radio conditions.
//!
//! With the failure model (`failures`; 3GPP TR 36.839 §5.2's mobility evaluation, after TS
//! 36.331 §5.3.7 and §5.3.10.3 and TS 36.133 §7.6):
//! - **radio link monitoring**: the serving cell's wideband SINR, averaged (linear) over the last
//!   200 ms (out-of-sync below Qout) and 100 ms (in-sync above Qin), gives an indication every
//!   sample once the window has filled since the cell began serving; N310 consecutive
//!   out-of-sync start T310, N311 consecutive in-sync stop it, its expiry is a **radio link
//!   failure** ([`crate::failure::Rlm`]);
//! - **handover preparation**: the A3 report goes out at the trigger and the command reaches the
//!   UE `prep` later, if the source still carries it: TR 36.839 counts the handover as failed
//!   when the source's 200 ms SINR is below Qout then; the UE stays on the source, A3 may report
//!   again, and T310 (still running, or started later) ends it in a failure;
//! - **execution**: the UE leaves the source at the command (triggering a handover stops T310)
//!   and reaches the target after the execution time, if the target's SINR is at least Qout
//!   (random access); otherwise it keeps trying until T304 expires: a **handover failure**;
//! - **re-establishment** (after either failure): the link is out and what its queue held is lost
//!   (no X2 forwarding); it returns after the re-establishment time, on the strongest cell (by
//!   filtered RSRP) whose SINR is at least Qout, or at the first sample after that when one is.
//!
//! The timeline turns the [`Event`]s into the link's steps (outage, queue dropped) and the
//! handover log.

use crate::failure::{indication, DurationDist, FailureParams, Rlm, RlmEvent, SinrWindow};
use crate::HandoverKind;
use railpath_core::{Rng, Time};

/// Where the carrier's link is in its procedure.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    /// Served by a cell.
    Connected,
    /// The A3 report went out (at position `onset_m`); the command reaches the UE at
    /// `command_at` if the source cell still carries it.
    Preparing {
        target: usize,
        command_at: Time,
        onset_m: f64,
    },
    /// Executing a handover (the link in outage) since `since`: the target is reached at
    /// `done_at`, or later while T304 runs (until `t304_end`), if its quality allows random
    /// access.
    Executing {
        target: usize,
        since: Time,
        done_at: Time,
        t304_end: Time,
    },
    /// Re-establishing after a failure (the link in outage, its queue lost) since `since`, until
    /// `until` at the earliest.
    Reestablishing { since: Time, until: Time },
}

/// What a sample does to the link and its log.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Event {
    /// A handover's execution began toward `target`: the link is out for `exec` (at least).
    /// `onset_m`: where its A3 report went out (with the failure model).
    Started {
        target: usize,
        exec: Time,
        onset_m: Option<f64>,
    },
    /// A handover without execution time: `target` serves from now.
    Switched { target: usize },
    /// The link is back on `cell`, after an outage that began at `since`: a handover completed
    /// (`after_failure` false) or re-establishment ended.
    Back {
        cell: usize,
        since: Time,
        after_failure: bool,
    },
    /// A failure: the link is out from now and what it holds is lost. `Failure`: a handover
    /// failed (its execution ran out of T304, `in_execution`, or its command was lost or its
    /// preparation cut short by a radio link failure); `Rlf`: a radio link failure with no
    /// handover under way. `onset_m`: where the procedure began (the handover's A3 report, or
    /// T310's start).
    Failed {
        kind: HandoverKind,
        onset_m: f64,
        in_execution: bool,
    },
}

/// Whether the rest of the sample runs (the serving cell measured, A3, the rate) or the link is
/// in outage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Go,
    Out,
}

/// One carrier's procedure.
#[derive(Debug, Clone)]
pub struct Procedure {
    fail: Option<FailureParams>,
    /// The execution time: a constant, or a distribution drawn per handover.
    exec: Result<DurationDist, Time>,
    period: Time,
    phase: Phase,
    rlm: Rlm,
    window: SinrWindow,
    /// Since when the serving cell's window fills (no indication before it has).
    window_since: Time,
    t310_onset_m: Option<f64>,
    /// The report position of a handover whose command was lost (the UE waits on the source).
    command_lost: Option<f64>,
}

impl Procedure {
    /// A procedure with the failure model `fail` (none: every handover succeeds), execution
    /// times `exec` (a distribution) or else the constant `interruption`, samples every
    /// `period`.
    pub fn new(
        fail: Option<FailureParams>,
        exec: Option<DurationDist>,
        interruption: Time,
        period: Time,
    ) -> Procedure {
        Procedure {
            fail,
            exec: exec.ok_or(interruption),
            period,
            phase: Phase::Connected,
            rlm: Rlm::default(),
            window: SinrWindow::default(),
            window_since: Time::ZERO,
            t310_onset_m: None,
            command_lost: None,
        }
    }

    /// Whether a cell serves and no handover is being prepared (A3 may trigger).
    pub fn connected(&self) -> bool {
        self.phase == Phase::Connected
    }

    /// Whether the link is in outage (executing a handover or re-establishing).
    pub fn out(&self) -> bool {
        matches!(
            self.phase,
            Phase::Executing { .. } | Phase::Reestablishing { .. }
        )
    }

    fn draw_exec(&self, rng: &mut Rng) -> Time {
        match self.exec {
            Ok(d) => d.draw(rng),
            Err(t) => t,
        }
    }

    /// A cell begins serving at `t`: radio link monitoring starts afresh.
    pub fn attach(&mut self, t: Time) {
        self.rlm.reset();
        self.window.clear();
        self.window_since = t;
    }

    /// The start of sample `t` at position `x`: the outage in progress ends or goes on, or a
    /// prepared handover's command arrives. `sinr(j)` is cell j's SINR now; `best()` the
    /// strongest cell now (for re-establishment).
    pub fn begin(
        &mut self,
        t: Time,
        sinr: &mut dyn FnMut(usize) -> f64,
        best: &mut dyn FnMut() -> Option<usize>,
        rng: &mut Rng,
    ) -> (Flow, Option<Event>) {
        let q_out = self.fail.map(|p| p.q_out_db);
        match self.phase {
            Phase::Executing {
                target,
                since,
                done_at,
                t304_end,
            } => {
                if t < done_at {
                    return (Flow::Out, None);
                }
                // Random access needs the target's quality at least Qout (always, without the
                // failure model).
                if q_out.is_none_or(|q| sinr(target) >= q) {
                    self.phase = Phase::Connected;
                    self.attach(t);
                    let ev = Event::Back {
                        cell: target,
                        since,
                        after_failure: false,
                    };
                    return (Flow::Go, Some(ev));
                }
                if t >= t304_end {
                    // T304 expired: a handover failure; the UE re-establishes.
                    let p = self.fail.expect("T304 runs only with the failure model");
                    self.phase = Phase::Reestablishing {
                        since,
                        until: t + p.reestablish.draw(rng),
                    };
                    let ev = Event::Failed {
                        kind: HandoverKind::Failure,
                        onset_m: f64::NAN,
                        in_execution: true,
                    };
                    return (Flow::Out, Some(ev));
                }
                (Flow::Out, None)
            }
            Phase::Reestablishing { since, until } => {
                if t < until {
                    return (Flow::Out, None);
                }
                let q = q_out.expect("re-establishment only with the failure model");
                let Some(j) = best().filter(|&j| sinr(j) >= q) else {
                    return (Flow::Out, None);
                };
                self.phase = Phase::Connected;
                self.attach(t);
                let ev = Event::Back {
                    cell: j,
                    since,
                    after_failure: true,
                };
                (Flow::Go, Some(ev))
            }
            Phase::Preparing {
                target,
                command_at,
                onset_m,
            } if t >= command_at => {
                let p = self.fail.expect("preparation only with the failure model");
                if self.window.mean_db(t, p.eval_out) < p.q_out_db {
                    // The source no longer carries the command: the UE stays on it until T310
                    // expires (or the signal comes back and A3 reports again).
                    self.command_lost = Some(onset_m);
                    self.phase = Phase::Connected;
                    return (Flow::Go, None);
                }
                // Triggering the handover stops T310 (TS 36.331 §7.3).
                self.rlm.reset();
                self.t310_onset_m = None;
                self.command_lost = None;
                let exec = self.draw_exec(rng);
                self.phase = Phase::Executing {
                    target,
                    since: t,
                    done_at: t + exec,
                    t304_end: t + p.t304,
                };
                let ev = Event::Started {
                    target,
                    exec,
                    onset_m: Some(onset_m),
                };
                (Flow::Out, Some(ev))
            }
            Phase::Preparing { .. } | Phase::Connected => (Flow::Go, None),
        }
    }

    /// Whether the command of the handover prepared last was lost (the report position).
    pub fn command_lost(&self) -> Option<f64> {
        self.command_lost
    }

    /// Radio link monitoring of the serving cell at sample `t`, position `x`, its SINR
    /// `sinr_db` (failure model only; else nothing). A radio link failure is `Failed` (the link
    /// is out from now).
    pub fn monitor(&mut self, t: Time, x: f64, sinr_db: f64, rng: &mut Rng) -> Option<Event> {
        let p = self.fail?;
        self.window.push(t, sinr_db, p.eval_out);
        let age = t - self.window_since + self.period;
        let q200 = if age >= p.eval_out {
            self.window.mean_db(t, p.eval_out)
        } else {
            f64::INFINITY
        };
        let q100 = if age >= p.eval_in {
            self.window.mean_db(t, p.eval_in)
        } else {
            f64::NEG_INFINITY
        };
        match self.rlm.update(&p, t, indication(&p, q200, q100))? {
            RlmEvent::T310Started => {
                self.t310_onset_m = Some(x);
                None
            }
            RlmEvent::T310Stopped => {
                self.t310_onset_m = None;
                None
            }
            RlmEvent::Rlf => {
                // A handover under way (its report sent, or its command lost) fails with it.
                let preparing = match self.phase {
                    Phase::Preparing { onset_m, .. } => Some(onset_m),
                    _ => None,
                };
                let failed_ho = preparing.or(self.command_lost);
                let onset_m = failed_ho.or(self.t310_onset_m).unwrap_or(x).min(x);
                self.phase = Phase::Reestablishing {
                    since: t,
                    until: t + p.reestablish.draw(rng),
                };
                self.t310_onset_m = None;
                self.command_lost = None;
                Some(Event::Failed {
                    kind: if failed_ho.is_some() {
                        HandoverKind::Failure
                    } else {
                        HandoverKind::Rlf
                    },
                    onset_m,
                    in_execution: false,
                })
            }
        }
    }

    /// A3 triggered toward `target` at sample `t`, position `x` (only when [`Self::connected`]).
    /// With the failure model the report goes out and the command follows `prep` later (no
    /// event); without it the handover starts now.
    pub fn trigger(&mut self, t: Time, x: f64, target: usize, rng: &mut Rng) -> Option<Event> {
        if let Some(p) = &self.fail {
            self.phase = Phase::Preparing {
                target,
                command_at: t + p.prep,
                onset_m: x,
            };
            return None;
        }
        let exec = self.draw_exec(rng);
        if exec == Time::ZERO {
            return Some(Event::Switched { target });
        }
        self.phase = Phase::Executing {
            target,
            since: t,
            done_at: t + exec,
            t304_end: Time::MAX,
        };
        Some(Event::Started {
            target,
            exec,
            onset_m: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Time = Time::from_ms;

    /// Qout -8, Qin -6, N310 1, T310 1 s, N311 1, T304 500 ms, 50 ms preparation,
    /// re-establishment a constant 700 ms, samples every 10 ms.
    fn params() -> FailureParams {
        FailureParams {
            q_out_db: -8.0,
            q_in_db: -6.0,
            indication: MS(10),
            eval_out: MS(200),
            eval_in: MS(100),
            n310: 1,
            t310: MS(1000),
            n311: 1,
            t304: MS(500),
            prep: MS(50),
            reestablish: DurationDist::Constant { ms: 700.0 },
        }
    }

    fn procedure() -> Procedure {
        Procedure::new(
            Some(params()),
            Some(DurationDist::Constant { ms: 40.0 }),
            MS(50),
            MS(10),
        )
    }

    /// Drive `p` (serving cell 0, one other cell 1) over samples 0, 10, ... ms up to `end_ms`,
    /// the serving cell's SINR `serving(t_ms)`, every other cell's `other(t_ms)`, A3 toward cell
    /// 1 at `a3_ms`; the events with their times (ms) and where the link was out.
    fn drive(
        p: &mut Procedure,
        end_ms: u64,
        serving: &dyn Fn(u64) -> f64,
        other: &dyn Fn(u64) -> f64,
        a3_ms: Option<u64>,
    ) -> (Vec<(u64, Event)>, Vec<u64>) {
        let mut rng = Rng::stream(1, "test");
        let (mut events, mut out) = (Vec::new(), Vec::new());
        let mut cell = 0usize;
        for k in 0..=end_ms / 10 {
            let ms = 10 * k;
            let t = MS(ms);
            let x = ms as f64; // 1 m per ms
            let sinr_of = |j: usize, cell: usize| if j == cell { serving(ms) } else { other(ms) };
            let on = cell;
            let (flow, ev) = p.begin(t, &mut |j| sinr_of(j, on), &mut || Some(1), &mut rng);
            if let Some(e) = ev {
                if let Event::Back { cell: c, .. } = e {
                    cell = c;
                }
                events.push((ms, e));
            }
            if flow == Flow::Out {
                out.push(ms);
                continue;
            }
            if let Some(e) = p.monitor(t, x, sinr_of(cell, cell), &mut rng) {
                events.push((ms, e));
                out.push(ms);
                continue;
            }
            if p.connected() && a3_ms == Some(ms) {
                if let Some(e) = p.trigger(t, x, 1, &mut rng) {
                    if let Event::Started { .. } = e {
                        out.push(ms);
                    }
                    events.push((ms, e));
                }
            }
        }
        (events, out)
    }

    #[test]
    fn t310_runs_from_the_first_out_of_sync_window_and_expires_in_a_radio_link_failure() {
        // The serving SINR is 0 dB until 500 ms, then -20 dB. Monitoring starts at 0 (attach);
        // the 200 ms window is full from 190 ms. Its mean at t >= 500 has (t - 490) / 10
        // samples of 0.01 and the rest of 1 among 20: below Qout (0.158) once the -20 dB
        // samples are more than (1 - 0.158) / (1 - 0.01) * 20 = 17.0 of 20, i.e. 18 of them:
        // at 670 ms. T310 (1 s) expires at 1670 ms: a radio link failure, the link out from then,
        // re-established 700 ms later (2370 ms) on the strongest cell, cell 1, at 0 dB.
        let mut p = procedure();
        p.attach(MS(0));
        let (ev, out) = drive(
            &mut p,
            2500,
            &|ms| if ms < 500 { 0.0 } else { -20.0 },
            &|_| 0.0,
            None,
        );
        assert_eq!(
            ev,
            vec![
                (
                    1670,
                    Event::Failed {
                        kind: HandoverKind::Rlf,
                        onset_m: 670.0,
                        in_execution: false
                    }
                ),
                (
                    2370,
                    Event::Back {
                        cell: 1,
                        since: MS(1670),
                        after_failure: true
                    }
                ),
            ]
        );
        // Out from the failure to the end of re-establishment: 1670, ..., 2360 ms (70 samples).
        assert_eq!(out.first(), Some(&1670));
        assert_eq!(out.last(), Some(&2360));
        assert_eq!(out.len(), 70);
    }

    #[test]
    fn in_sync_stops_t310_before_it_expires() {
        // -20 dB from 500 to 900 ms: T310 starts at 670 ms (above); from 900 ms the 100 ms
        // window's mean rises above Qin (0.2512) once 0 dB samples are more than
        // (0.2512 - 0.01) / 0.99 * 10 = 2.4 of 10: at 920 ms, when the 200 ms window's mean,
        // (3 + 17 * 0.01) / 20 = 0.1585, is just not below Qout (0.15849): the first in-sync
        // indication stops T310. No failure.
        let mut p = procedure();
        p.attach(MS(0));
        let (ev, out) = drive(
            &mut p,
            2500,
            &|ms| if (500..900).contains(&ms) { -20.0 } else { 0.0 },
            &|_| 0.0,
            None,
        );
        assert_eq!(ev, vec![]);
        assert!(out.is_empty());
        assert!(!p.rlm.t310_running());
    }

    #[test]
    fn a_handover_fails_when_the_source_is_lost_before_the_command() {
        // The serving SINR falls to -20 dB at 800 ms: T310 starts when 18 of the window's 20
        // samples are low, at 970 ms. A3 reports at 1000 ms (position 1000 m); at the command
        // (1050 ms) the 200 ms window (860..1050 ms) is all -20 dB: below Qout, the command is
        // lost and the UE stays on the source. T310 expires at 1970 ms: a handover failure (its
        // command lost), whose procedure began at the report (1000 m); re-established 700 ms
        // later.
        let mut p = procedure();
        p.attach(MS(0));
        let (ev, _) = drive(
            &mut p,
            3000,
            &|ms| if ms < 800 { 0.0 } else { -20.0 },
            &|_| 0.0,
            Some(1000),
        );
        assert_eq!(p.command_lost(), None);
        assert_eq!(
            ev,
            vec![
                (
                    1970,
                    Event::Failed {
                        kind: HandoverKind::Failure,
                        onset_m: 1000.0,
                        in_execution: false
                    }
                ),
                (
                    2670,
                    Event::Back {
                        cell: 1,
                        since: MS(1970),
                        after_failure: true
                    }
                ),
            ]
        );
    }

    #[test]
    fn a_command_that_gets_through_starts_the_handover_and_stops_t310() {
        // The serving SINR is -5 dB (in-sync: T310 never starts), A3 at 1000 ms:
        // the command at 1050 ms starts a 40 ms execution (the constant draw), the target
        // (0 dB >= Qout) serves from 1090 ms.
        let mut p = procedure();
        p.attach(MS(0));
        let (ev, out) = drive(&mut p, 1500, &|_| -5.0, &|_| 0.0, Some(1000));
        assert_eq!(
            ev,
            vec![
                (
                    1050,
                    Event::Started {
                        target: 1,
                        exec: MS(40),
                        onset_m: Some(1000.0)
                    }
                ),
                (
                    1090,
                    Event::Back {
                        cell: 1,
                        since: MS(1050),
                        after_failure: false
                    }
                ),
            ]
        );
        assert_eq!(out, vec![1050, 1060, 1070, 1080]);
    }

    #[test]
    fn a_target_out_of_reach_until_t304_expires_is_a_handover_failure() {
        // As above but the target is at -10 dB (below Qout): random access fails from 1090 ms
        // until T304 (500 ms from the command) expires at 1550 ms; re-establishment (700 ms)
        // ends at 2250 ms, on cell 1 if it is then at least Qout: it is from 2000 ms on.
        let mut p = procedure();
        p.attach(MS(0));
        let (ev, out) = drive(
            &mut p,
            2500,
            &|_| -5.0,
            &|ms| if ms < 2000 { -10.0 } else { 0.0 },
            Some(1000),
        );
        let kinds: Vec<(u64, Event)> = ev.into_iter().skip(1).collect();
        assert!(matches!(
            kinds[0],
            (
                1550,
                Event::Failed {
                    kind: HandoverKind::Failure,
                    in_execution: true,
                    ..
                }
            )
        ));
        assert_eq!(
            kinds[1],
            (
                2250,
                Event::Back {
                    cell: 1,
                    since: MS(1050),
                    after_failure: true
                }
            )
        );
        // Out from the command to re-establishment: 1050 .. 2240 ms.
        assert_eq!((out[0], *out.last().unwrap()), (1050, 2240));
        assert_eq!(out.len(), 120);
    }

    #[test]
    fn re_establishment_waits_for_a_cell_at_least_qout() {
        // A radio link failure at 1670 ms (as in the first test) with every cell at -20 dB
        // until 3000 ms: re-establishment cannot end at 2370 ms; it ends at the first sample a
        // cell is at least Qout, 3000 ms.
        let mut p = procedure();
        p.attach(MS(0));
        let (ev, _) = drive(
            &mut p,
            3500,
            &|ms| if ms < 500 { 0.0 } else { -20.0 },
            &|ms| if ms < 3000 { -20.0 } else { 0.0 },
            None,
        );
        assert_eq!(ev.len(), 2);
        assert_eq!(
            ev[1],
            (
                3000,
                Event::Back {
                    cell: 1,
                    since: MS(1670),
                    after_failure: true
                }
            )
        );
    }

    #[test]
    fn without_the_failure_model_every_handover_succeeds_after_its_execution() {
        let mut p = Procedure::new(None, None, MS(50), MS(10));
        let (ev, out) = drive(&mut p, 500, &|_| -30.0, &|_| -30.0, Some(100));
        assert_eq!(
            ev,
            vec![
                (
                    100,
                    Event::Started {
                        target: 1,
                        exec: MS(50),
                        onset_m: None
                    }
                ),
                (
                    150,
                    Event::Back {
                        cell: 1,
                        since: MS(100),
                        after_failure: false
                    }
                ),
            ]
        );
        assert_eq!(out, vec![100, 110, 120, 130, 140]);
        let mut p = Procedure::new(None, None, Time::ZERO, MS(10));
        let (ev, _) = drive(&mut p, 500, &|_| 0.0, &|_| 0.0, Some(100));
        assert_eq!(ev, vec![(100, Event::Switched { target: 1 })]);
    }
}
