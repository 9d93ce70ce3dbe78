//! How long a carrier keeps receiving after PHA-D makes it backup: the measure that tells an
//! operator whether `lead_time_ms` is long enough.
//!
//! Why: an MP_PRIO B=1 stops the sender from *scheduling* new data on the subflow (RFC 8684
//! section 3.3.8), but what the sender has already queued on that subflow still goes out on it.
//! A bulk Linux sender keeps its subflows' write queues full (0.75-1.6 MB at 20 Mbit/s in the
//! testbed, docs/gateway.md), so the carrier goes quiet only after a drain time of
//! RTT + queue / rate. If the zone (the handover) begins before that, the queued data is caught
//! in the interruption and MPTCP's in-order delivery stalls the whole connection: the flip came
//! too late.
//!
//! Rule, from the carrier interface's received-byte counter sampled every controller tick:
//! - the reference rate is the counter's rate over the `window` before the flip; below
//!   `min_rate` there is nothing to drain and no measurement is made;
//! - after the flip a tick is *active* while the rate since the previous sample is above
//!   `max(fraction * reference, min_rate)`;
//! - the drain ends once no tick has been active for `window`; the drain time is from the flip
//!   to the end of the last active tick;
//! - the slack is the predicted zone start minus that end: negative means the carrier was still
//!   receiving when its zone began (a late flip);
//! - a flip back to regular before the drain ended closes the measurement with what it saw.
//!
//! Adaptive lead ([`LeadAdapter`], `phad.adaptive_lead`): lead = RTT + 1.25 x the largest of the
//! last 8 drains (of any carrier: the drain is the sender's queue, much the same on every
//! carrier of one connection), at least one RTT and at most 5 s; until the first measurement the
//! configured lead. A late flip's drain is cut short by the interruption itself (the carrier goes
//! quiet because the link is down), so it is a lower bound and enters doubled.

use railpath_core::Time;
use std::collections::VecDeque;

/// The thresholds of the rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DrainParams {
    /// Span over which the reference rate is taken and quiet is confirmed.
    pub window: Time,
    /// Share of the reference rate below which a tick is quiet.
    pub fraction: f64,
    /// Bytes per second below which a tick is quiet whatever the reference.
    pub min_rate: f64,
}

impl Default for DrainParams {
    fn default() -> Self {
        DrainParams {
            window: Time::from_ms(100),
            fraction: 0.1,
            // 200 kbit/s: above a carrier's background (pings, MPTCP keep-alives), far below data.
            min_rate: 25_000.0,
        }
    }
}

/// A finished measurement.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drain {
    /// From the flip to the end of the last tick that still received data.
    pub drain: Time,
    /// Predicted zone start minus the drain's end, in seconds (negative: late flip).
    pub slack_s: f64,
    /// The receive rate before the flip, bytes per second.
    pub reference_rate: f64,
}

#[derive(Debug, Clone, Copy)]
struct Running {
    flipped_at: Time,
    zone_at: Time,
    threshold: f64,
    reference_rate: f64,
    last_active_end: Time,
}

/// Per-carrier drain tracker, fed with (time, received bytes) samples.
#[derive(Debug, Clone)]
pub struct DrainTracker {
    params: DrainParams,
    history: VecDeque<(Time, u64)>,
    running: Option<Running>,
}

impl DrainTracker {
    pub fn new(params: DrainParams) -> DrainTracker {
        DrainTracker {
            params,
            history: VecDeque::new(),
            running: None,
        }
    }

    /// Whether a measurement is under way.
    pub fn measuring(&self) -> bool {
        self.running.is_some()
    }

    /// The carrier went backup at `now`; its zone is predicted to begin at `zone_at`.
    pub fn flipped_to_backup(&mut self, now: Time, zone_at: Time) {
        self.running = None;
        let (Some(&(t_last, b_last)), Some(first)) = (self.history.back(), self.first_in_window())
        else {
            return;
        };
        let (t0, b0) = first;
        if t_last <= t0 {
            return;
        }
        let reference = b_last.saturating_sub(b0) as f64 / (t_last - t0).secs_f64();
        if reference < self.params.min_rate {
            return;
        }
        self.running = Some(Running {
            flipped_at: now,
            zone_at,
            threshold: (self.params.fraction * reference).max(self.params.min_rate),
            reference_rate: reference,
            last_active_end: now,
        });
    }

    /// The oldest sample within `window` of the newest (the newest itself if it is alone).
    fn first_in_window(&self) -> Option<(Time, u64)> {
        let &(t_last, _) = self.history.back()?;
        self.history
            .iter()
            .find(|(t, _)| *t + self.params.window >= t_last)
            .copied()
    }

    /// A counter sample. Returns the measurement when it finishes with this sample.
    pub fn sample(&mut self, now: Time, rx_bytes: u64) -> Option<Drain> {
        let prev = self.history.back().copied();
        self.history.push_back((now, rx_bytes));
        while self
            .history
            .front()
            .is_some_and(|(t, _)| *t + self.params.window + self.params.window < now)
        {
            self.history.pop_front();
        }
        let r = self.running.as_mut()?;
        if let Some((tp, bp)) = prev {
            if now > tp {
                let rate = rx_bytes.saturating_sub(bp) as f64 / (now - tp).secs_f64();
                if rate > r.threshold {
                    r.last_active_end = now;
                }
            }
        }
        if now >= r.last_active_end + self.params.window {
            return self.finish();
        }
        None
    }

    /// Closes a measurement early (the carrier went back to regular).
    pub fn finish(&mut self) -> Option<Drain> {
        let r = self.running.take()?;
        Some(Drain {
            drain: r.last_active_end.saturating_sub(r.flipped_at),
            slack_s: r.zone_at.secs_f64() - r.last_active_end.secs_f64(),
            reference_rate: r.reference_rate,
        })
    }
}

/// The adaptive lead time from recent drains (rule in the module header).
#[derive(Debug, Clone, Default)]
pub struct LeadAdapter {
    recent: VecDeque<Time>,
}

impl LeadAdapter {
    /// Drains remembered.
    pub const KEEP: usize = 8;
    /// Upper bound of the lead.
    pub const MAX: Time = Time::from_secs(5);

    pub fn observe(&mut self, d: &Drain) {
        let v = if d.slack_s < 0.0 {
            d.drain + d.drain
        } else {
            d.drain
        };
        if self.recent.len() == Self::KEEP {
            self.recent.pop_front();
        }
        self.recent.push_back(v);
    }

    /// The lead for `rtt`; `initial` until the first drain was measured.
    pub fn lead(&self, rtt: Time, initial: Time) -> Time {
        match self.recent.iter().max() {
            None => initial,
            Some(&m) => (rtt + m + m.div(4)).max(rtt).min(Self::MAX.max(rtt)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(ms_: u64, slack_s: f64) -> Drain {
        Drain {
            drain: Time::from_ms(ms_),
            slack_s,
            reference_rate: 2.5e6,
        }
    }

    #[test]
    fn adaptive_lead_is_rtt_plus_a_quarter_over_the_largest_recent_drain() {
        let mut a = LeadAdapter::default();
        let rtt = ms(40);
        // No measurement: the configured lead.
        assert_eq!(a.lead(rtt, ms(800)), ms(800));
        // Drains 280, 343, 300 ms: 40 + 343 x 1.25 = 468.75 ms.
        for d in [280, 343, 300] {
            a.observe(&drain(d, 0.5));
        }
        assert_eq!(a.lead(rtt, ms(800)), Time::from_us(468_750));
        // A late flip with a 150 ms drain counts as 300 ms: still 343 the largest.
        a.observe(&drain(150, -0.05));
        assert_eq!(a.lead(rtt, ms(800)), Time::from_us(468_750));
        // A late flip with 300 ms counts as 600: 40 + 750 = 790 ms.
        a.observe(&drain(300, -0.01));
        assert_eq!(a.lead(rtt, ms(800)), ms(790));
        // Eight more short drains push the old ones out: 40 + 1.25 x 100 = 165 ms.
        for _ in 0..LeadAdapter::KEEP {
            a.observe(&drain(100, 0.5));
        }
        assert_eq!(a.lead(rtt, ms(800)), ms(165));
        // Zero drains: one RTT. Huge drains: capped at 5 s.
        let mut z = LeadAdapter::default();
        z.observe(&drain(0, 1.0));
        assert_eq!(z.lead(rtt, ms(800)), rtt);
        z.observe(&drain(10_000, 1.0));
        assert_eq!(z.lead(rtt, ms(800)), Time::from_secs(5));
    }

    fn ms(x: u64) -> Time {
        Time::from_ms(x)
    }

    /// Feeds 10 ms ticks at `rate` bytes/s from `from` to `to` (exclusive), continuing `bytes`.
    fn feed(d: &mut DrainTracker, from: u64, to: u64, rate: f64, bytes: &mut u64) -> Option<Drain> {
        let mut out = None;
        let mut t = from;
        while t < to {
            *bytes += (rate * 0.010) as u64;
            if let Some(x) = d.sample(ms(t), *bytes) {
                out = Some(x);
            }
            t += 10;
        }
        out
    }

    #[test]
    fn drain_time_and_slack_of_a_queue_draining_before_the_zone() {
        // 2.5 MB/s (20 Mbit/s) until the flip at 1000 ms, still 2.5 MB/s until 1500 ms (the
        // sender's queue), then 1 kB/s of background. Zone predicted at 1800 ms.
        let mut d = DrainTracker::new(DrainParams::default());
        let mut b = 0;
        assert_eq!(feed(&mut d, 0, 1000, 2_500_000.0, &mut b), None);
        d.flipped_to_backup(ms(1000), ms(1800));
        assert!(d.measuring());
        assert_eq!(feed(&mut d, 1000, 1500, 2_500_000.0, &mut b), None);
        let out = feed(&mut d, 1500, 2000, 1_000.0, &mut b).expect("finished");
        // Last active tick ends at 1490 ms (the 1490 sample covers 1480-1490): drain 490 ms,
        // slack 1800 - 1490 = 310 ms; finished at 1590 ms (100 ms quiet).
        assert_eq!(out.drain, ms(490));
        assert!((out.slack_s - 0.31).abs() < 1e-9, "{out:?}");
        // Reference: samples 890 and 990 ms (the window back from the last sample): 10 ticks of
        // 25 000 bytes over 100 ms = 2.5 MB/s.
        assert!((out.reference_rate - 2_500_000.0).abs() < 1.0, "{out:?}");
        assert!(!d.measuring());
    }

    #[test]
    fn a_late_flip_has_negative_slack() {
        // Still receiving when the zone begins at 1200 ms; the link goes silent at 1300 ms
        // (the handover itself).
        let mut d = DrainTracker::new(DrainParams::default());
        let mut b = 0;
        feed(&mut d, 0, 1000, 2_500_000.0, &mut b);
        d.flipped_to_backup(ms(1000), ms(1200));
        feed(&mut d, 1000, 1300, 2_500_000.0, &mut b);
        let out = feed(&mut d, 1300, 1600, 0.0, &mut b).expect("finished");
        assert_eq!(out.drain, ms(290));
        assert!((out.slack_s + 0.09).abs() < 1e-9, "{out:?}");
    }

    #[test]
    fn quiet_ticks_are_below_a_tenth_of_the_reference() {
        // After the flip the rate falls to 200 kB/s: above min_rate (25 kB/s) but below 10% of
        // 2.5 MB/s -> quiet at once: drain 0, finished 100 ms later.
        let mut d = DrainTracker::new(DrainParams::default());
        let mut b = 0;
        feed(&mut d, 0, 1000, 2_500_000.0, &mut b);
        d.flipped_to_backup(ms(1000), ms(2000));
        let out = feed(&mut d, 1000, 1200, 200_000.0, &mut b).expect("finished");
        assert_eq!(out.drain, Time::ZERO);
        assert!((out.slack_s - 1.0).abs() < 1e-9);
        // 300 kB/s stays above 10% of 2.5 MB/s (250 kB/s) -> still active.
        let mut d = DrainTracker::new(DrainParams::default());
        let mut b = 0;
        feed(&mut d, 0, 1000, 2_500_000.0, &mut b);
        d.flipped_to_backup(ms(1000), ms(2000));
        assert_eq!(feed(&mut d, 1000, 1200, 300_000.0, &mut b), None);
        assert!(d.measuring());
    }

    #[test]
    fn an_idle_carrier_is_not_measured() {
        // 20 kB/s before the flip is below min_rate: nothing to drain.
        let mut d = DrainTracker::new(DrainParams::default());
        let mut b = 0;
        feed(&mut d, 0, 1000, 20_000.0, &mut b);
        d.flipped_to_backup(ms(1000), ms(1500));
        assert!(!d.measuring());
        // No samples at all: nothing either.
        let mut d = DrainTracker::new(DrainParams::default());
        d.flipped_to_backup(ms(1000), ms(1500));
        assert!(!d.measuring());
    }

    #[test]
    fn going_regular_early_closes_the_measurement() {
        let mut d = DrainTracker::new(DrainParams::default());
        let mut b = 0;
        feed(&mut d, 0, 1000, 2_500_000.0, &mut b);
        d.flipped_to_backup(ms(1000), ms(1100));
        feed(&mut d, 1000, 1200, 2_500_000.0, &mut b);
        let out = d.finish().expect("closed");
        assert_eq!(out.drain, ms(190));
        assert!((out.slack_s + 0.09).abs() < 1e-9);
        assert_eq!(d.finish(), None);
    }
}
