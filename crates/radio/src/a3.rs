//! The A3 measurement event and its time-to-trigger, 3GPP TS 36.331 §5.5.4.4:
//! "neighbour becomes offset better than PCell". Entering condition (A3-1):
//! `Mn + Ofn + Ocn - Hys > Mp + Ofp + Ocp + Off`; railpath sets the frequency- and cell-specific
//! offsets Ofn, Ocn, Ofp, Ocp to 0, so it is `Mn - Hys > Mp + Off`. The event triggers for a
//! neighbour when the entering condition has held at every measurement for `timeToTrigger`
//! (§5.5.4.1); a measurement that fails it restarts that neighbour's timer. The handover that the
//! eNodeB then orders (X2, TS 36.300 §10.1.2.1) goes to the strongest triggered neighbour;
//! report and command latencies are not modelled (the interruption starts at the trigger).

use railpath_core::Time;

/// A3 parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct A3Params {
    pub hysteresis_db: f64,
    pub offset_db: f64,
    pub ttt: Time,
}

impl A3Params {
    /// Entering condition A3-1 with zero frequency/cell offsets.
    pub fn entering(&self, mn_dbm: f64, mp_dbm: f64) -> bool {
        mn_dbm - self.hysteresis_db > mp_dbm + self.offset_db
    }
}

/// Per-neighbour time-to-trigger timers.
#[derive(Debug, Clone, Default)]
pub struct A3Tracker {
    /// (neighbour id, time since which the entering condition has held).
    since: Vec<(usize, Time)>,
}

impl A3Tracker {
    /// Forget every timer (after a handover: new serving cell, new measurements).
    pub fn reset(&mut self) {
        self.since.clear();
    }

    /// Feed one measurement round at time `t`: the serving cell's `mp_dbm` and each neighbour's
    /// `(id, Mn)`. Neighbours not listed lose their timers. Returns the strongest neighbour whose
    /// entering condition has held for at least `ttt`, if any.
    pub fn update(
        &mut self,
        p: &A3Params,
        t: Time,
        mp_dbm: f64,
        neighbours: &[(usize, f64)],
    ) -> Option<usize> {
        let mut kept: Vec<(usize, Time)> = Vec::with_capacity(neighbours.len());
        let mut best: Option<(usize, f64)> = None;
        for &(id, mn) in neighbours {
            if !p.entering(mn, mp_dbm) {
                continue;
            }
            let since = self
                .since
                .iter()
                .find(|(n, _)| *n == id)
                .map(|(_, s)| *s)
                .unwrap_or(t);
            kept.push((id, since));
            if t.saturating_sub(since) >= p.ttt && best.is_none_or(|(_, b)| mn > b) {
                best = Some((id, mn));
            }
        }
        self.since = kept;
        best.map(|(id, _)| id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entering_condition_is_strict() {
        let p = A3Params {
            hysteresis_db: 3.0,
            offset_db: 1.0,
            ttt: Time::ZERO,
        };
        // Mn - 3 > -90 + 1  <=>  Mn > -86.
        assert!(!p.entering(-86.0, -90.0));
        assert!(p.entering(-85.9, -90.0));
    }

    #[test]
    fn hand_computed_sequence_triggers_when_ttt_says() {
        // Serving -90 dBm, hysteresis 3 dB, offset 0, TTT 256 ms, measurements every 40 ms.
        // The condition is Mn > -87. Neighbour 7's sequence:
        //   t=0: -88 (no), 40: -86.5 (yes, timer 40), ..., 200: -87.0 (no: not strictly better,
        //   timer cleared), 240: -86 (yes, timer 240), ... stays -86.
        // It triggers at the first measurement with t - 240 >= 256, i.e. t = 520 ms (t = 480 is
        // 240 ms, short of 256).
        let p = A3Params {
            hysteresis_db: 3.0,
            offset_db: 0.0,
            ttt: Time::from_ms(256),
        };
        let mut tr = A3Tracker::default();
        let mn = |t: u64| match t {
            0 => -88.0,
            200 => -87.0,
            40..=160 => -86.5,
            _ => -86.0,
        };
        let mut fired = None;
        for k in 0..20u64 {
            let t = k * 40;
            if let Some(id) = tr.update(&p, Time::from_ms(t), -90.0, &[(7, mn(t)), (8, -95.0)]) {
                fired = Some((t, id));
                break;
            }
        }
        assert_eq!(fired, Some((520, 7)));
    }

    #[test]
    fn without_the_dip_it_triggers_256_ms_after_entering() {
        // Entering at 40 ms; 40 + 256 = 296 -> first measurement at or after: 320 ms.
        let p = A3Params {
            hysteresis_db: 3.0,
            offset_db: 0.0,
            ttt: Time::from_ms(256),
        };
        let mut tr = A3Tracker::default();
        let mut fired = None;
        for k in 0..20u64 {
            let t = k * 40;
            let mn = if t == 0 { -88.0 } else { -86.5 };
            if tr.update(&p, Time::from_ms(t), -90.0, &[(1, mn)]).is_some() {
                fired = Some(t);
                break;
            }
        }
        assert_eq!(fired, Some(320));
    }

    #[test]
    fn strongest_triggered_neighbour_wins_and_ttt_zero_is_immediate() {
        let p = A3Params {
            hysteresis_db: 2.0,
            offset_db: 0.0,
            ttt: Time::ZERO,
        };
        let mut tr = A3Tracker::default();
        assert_eq!(
            tr.update(
                &p,
                Time::ZERO,
                -100.0,
                &[(1, -97.0), (2, -95.0), (3, -99.0)]
            ),
            Some(2)
        );
        tr.reset();
        assert_eq!(tr.update(&p, Time::ZERO, -100.0, &[(1, -98.0)]), None);
    }
}
