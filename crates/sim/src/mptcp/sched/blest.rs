//! BLEST, Blocking Estimation: Ferlin, Alay, Mehani, Boreli, "BLEST: Blocking Estimation-based
//! MPTCP Scheduler for Heterogeneous Networks", IFIP Networking 2016, Section III; estimator,
//! constants and lambda adaptation as in the out-of-tree Linux module (multipath-tcp.org kernel,
//! `net/mptcp/mptcp_blest.c`: `blest_get_available_subflow`, `blestsched_estimate_linger_time`,
//! `blestsched_estimate_bytes`, `blestsched_update_lambda`).
//!
//! Rule. `x_f` = the fastest candidate subflow by sRTT (with or without space), `x_s` = the
//! minRTT choice (lowest sRTT with space). If there is no `x_s`, wait; if `x_s == x_f`, send.
//! Otherwise estimate whether sending this segment on `x_s` would block the fast subflow in the
//! MPTCP send window:
//!
//! 1. linger time of the slow subflow (per-subflow lifetime min/max sRTT):
//!    `inflight = in_flight_s + 1`; `t = max_srtt_s` if `inflight >= cwnd_s`, else
//!    `min_srtt_s + (max_srtt_s - min_srtt_s) * inflight / cwnd_s`; `t = max(t, srtt_s)`.
//! 2. packets the fast subflow sends meanwhile, Reno-style growth:
//!    `n = t / ((min_srtt_f + max_srtt_f) / 2) + 1` rounds;
//!    `packets = (cwnd_f + (n - 1) / 2) * n` (integer division, as Linux's congestion-avoidance
//!    branch); `X = packets * mss * lambda`.
//! 3. space: `W = data_in_flight + rcv_wnd_free` (the peer's data-level window measured from
//!    the data-level snd_una, Linux `meta_tp->snd_wnd`), `avail = W - (queued_bytes_s + mss)`
//!    (saturating); if `X > avail`: WAIT, else SEND on `x_s`.
//!
//! Lambda (Linux defaults, in thousandths): starts at 1.2 (`lambda = 12`), clamped to
//! [1.0, 1.3] (`min_lambda = 10`, `max_lambda = 13`). Each time the slow subflow is considered
//! and at least `min_srtt` of the slow subflow has passed since the last update: if a
//! retransmission happened since the last update, `lambda += 0.04` (`dyn_lambda_bad = 40`),
//! otherwise `lambda -= 0.01` (`dyn_lambda_good = 10`); the retransmission flag is then cleared.
//! The flag is set by a [`Feedback::Retransmit`] or by any candidate subflow's `retransmissions`
//! counter having grown since the previous pick (Linux sets it on its meta-level opportunistic
//! retransmission, i.e. a window-blocking event; the subflow retransmission is the closest signal
//! the snapshot carries).
//!
//! Simplifications: the slow-start branch of `blestsched_estimate_bytes`
//! (`cwnd * (2^n - 1)` when `ssthresh` is infinite) is not used because the snapshot carries no
//! ssthresh; the congestion-avoidance branch uses `cwnd_f` for `max(cwnd, ssthresh + 1)`.
//! The penalisation of the slow subflow (cwnd halving in `mptcp_blest_rcv_buf_optimization`)
//! belongs to the connection and is not done here.

use super::common::{candidates, fastest, min_rtt_with_space};
use super::{ConnInfo, Decision, Feedback, Scheduler, SubflowInfo};
use railpath_core::Time;

pub const LAMBDA_INIT_1000: i32 = 1200;
pub const LAMBDA_MIN_1000: i32 = 1000;
pub const LAMBDA_MAX_1000: i32 = 1300;
pub const DYN_LAMBDA_GOOD: i32 = 10;
pub const DYN_LAMBDA_BAD: i32 = 40;

#[derive(Debug, Clone, Copy)]
struct SrttRange {
    min: Time,
    max: Time,
}

#[derive(Debug)]
pub struct Blest {
    /// Lifetime min and max sRTT by subflow id (Linux `blestsched_priv`).
    range: Vec<Option<SrttRange>>,
    /// Retransmission counters seen at the previous pick, by subflow id.
    seen_retrans: Vec<u64>,
    lambda_1000: i32,
    last_lambda_update: Time,
    retrans_flag: bool,
}

impl Default for Blest {
    fn default() -> Self {
        Blest {
            range: Vec::new(),
            seen_retrans: Vec::new(),
            lambda_1000: LAMBDA_INIT_1000,
            last_lambda_update: Time::ZERO,
            retrans_flag: false,
        }
    }
}

impl Blest {
    /// Current lambda in thousandths.
    pub fn lambda_1000(&self) -> i32 {
        self.lambda_1000
    }

    fn observe(&mut self, s: &SubflowInfo) {
        if self.range.len() <= s.id {
            self.range.resize(s.id + 1, None);
        }
        if self.seen_retrans.len() <= s.id {
            self.seen_retrans.resize(s.id + 1, 0);
        }
        if s.retransmissions > self.seen_retrans[s.id] {
            self.retrans_flag = true;
        }
        self.seen_retrans[s.id] = s.retransmissions;
        if s.srtt == Time::ZERO {
            return;
        }
        let r = self.range[s.id].get_or_insert(SrttRange {
            min: s.srtt,
            max: s.srtt,
        });
        r.min = r.min.min(s.srtt);
        r.max = r.max.max(s.srtt);
    }

    fn range_of(&self, s: &SubflowInfo) -> SrttRange {
        self.range
            .get(s.id)
            .copied()
            .flatten()
            .unwrap_or(SrttRange {
                min: s.srtt,
                max: s.srtt,
            })
    }

    fn update_lambda(&mut self, now: Time, slow_min_srtt: Time) {
        if now.saturating_sub(self.last_lambda_update) < slow_min_srtt {
            return;
        }
        if self.retrans_flag {
            self.lambda_1000 += DYN_LAMBDA_BAD;
        } else {
            self.lambda_1000 -= DYN_LAMBDA_GOOD;
        }
        self.retrans_flag = false;
        self.lambda_1000 = self.lambda_1000.clamp(LAMBDA_MIN_1000, LAMBDA_MAX_1000);
        self.last_lambda_update = now;
    }

    /// Step 1: how long a segment sent now on `slow` stays unacknowledged.
    pub fn linger_time(&self, slow: &SubflowInfo) -> Time {
        let r = self.range_of(slow);
        let inflight = slow.in_flight as u64 + 1;
        let cwnd = slow.cwnd.max(1) as u64;
        let est = if inflight >= cwnd {
            r.max
        } else {
            let slope = r.max.saturating_sub(r.min).ns();
            Time::from_ns(r.min.ns() + slope * inflight / cwnd)
        };
        est.max(slow.srtt)
    }

    /// Step 2: bytes the fast subflow sends during `t`, scaled by lambda.
    pub fn fast_bytes(&self, fast: &SubflowInfo, t: Time) -> u64 {
        let r = self.range_of(fast);
        let avg = (r.min.ns() + r.max.ns()) / 2;
        let n = t.ns().checked_div(avg).map_or(1, |q| q + 1);
        let n = n as u128;
        let packets = (fast.cwnd as u128 + (n - 1) / 2) * n;
        let bytes = packets * fast.mss as u128 * self.lambda_1000 as u128 / 1000;
        bytes.min(u64::MAX as u128) as u64
    }
}

impl Scheduler for Blest {
    fn name(&self) -> &'static str {
        "blest"
    }

    fn pick(&mut self, subs: &[SubflowInfo], conn: &ConnInfo) -> Decision {
        let cands = candidates(subs);
        for s in &cands {
            self.observe(s);
        }
        let Some(best) = min_rtt_with_space(&cands) else {
            return Decision::Wait;
        };
        let Some(fast) = fastest(&cands) else {
            return Decision::Wait;
        };
        if fast.id == best.id {
            return Decision::Send(best.id);
        }
        let slow_min = self.range_of(best).min;
        self.update_lambda(conn.now, slow_min);
        let linger = self.linger_time(best);
        let fast_bytes = self.fast_bytes(fast, linger);
        let window = conn.data_in_flight.saturating_add(conn.rcv_wnd_free);
        let slow_bytes = best.queued_bytes + best.mss as u64;
        let avail = window.saturating_sub(slow_bytes);
        if fast_bytes > avail {
            Decision::Wait
        } else {
            Decision::Send(best.id)
        }
    }

    fn wants_feedback(&self) -> bool {
        true
    }

    fn feedback(&mut self, f: &Feedback, _subs: &[SubflowInfo], _conn: &ConnInfo) {
        if let Feedback::Retransmit { .. } = f {
            self.retrans_flag = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::test_util::{conn, sub};
    use super::*;

    #[test]
    fn linger_time_interpolates_between_min_and_max() {
        let mut b = Blest::default();
        let mut s = sub(1, 40, 10, 4);
        b.observe(&s);
        s.srtt = Time::from_ms(80);
        b.observe(&s);
        s.srtt = Time::from_ms(50);
        // min 40, max 80; inflight 5 of 10: 40 + 40 * 5 / 10 = 60 ms (> srtt 50).
        assert_eq!(b.linger_time(&s), Time::from_ms(60));
        // inflight 10 >= cwnd: max = 80 ms.
        s.in_flight = 9;
        assert_eq!(b.linger_time(&s), Time::from_ms(80));
        // inflight 1: 40 + 40/10 = 44 ms, below srtt 50 -> 50 ms.
        s.in_flight = 0;
        assert_eq!(b.linger_time(&s), Time::from_ms(50));
    }

    #[test]
    fn fast_bytes_reno_rounds_times_lambda() {
        let mut b = Blest::default();
        let f = sub(0, 10, 10, 10);
        b.observe(&f);
        // avg 10 ms; t = 40 ms -> n = 5 rounds; packets = (10 + 4/2) * 5 = 60;
        // bytes = 60 * 1000 * 1.2 = 72000.
        assert_eq!(b.fast_bytes(&f, Time::from_ms(40)), 72_000);
        // t = 45 ms -> n = 5 as well (integer division).
        assert_eq!(b.fast_bytes(&f, Time::from_ms(45)), 72_000);
        // t = 50 ms -> n = 6; packets = (10 + 5/2) * 6 = 72 -> 86400.
        assert_eq!(b.fast_bytes(&f, Time::from_ms(50)), 86_400);
    }

    /// Fast 10 ms cwnd 10 full; slow 40 ms cwnd 10 with 4 in flight (4000 B queued).
    fn setup(window_free: u64, in_flight: u64) -> ([SubflowInfo; 2], ConnInfo) {
        let subs = [sub(0, 10, 10, 10), sub(1, 40, 10, 4)];
        let mut c = conn();
        c.rcv_wnd_free = window_free;
        c.data_in_flight = in_flight;
        (subs, c)
    }

    #[test]
    fn waits_when_fast_would_be_blocked() {
        // Linger: min = max = 40 ms -> 40 ms; n = 5; X = 72000 B (lambda 1.2; the first
        // decision at t = 0 with last update 0 and min srtt 40 ms does not update lambda).
        // W = 14000 in flight + 60000 free = 74000; avail = 74000 - (4000 + 1000) = 69000.
        // 72000 > 69000 -> wait.
        let mut b = Blest::default();
        let (subs, c) = setup(60_000, 14_000);
        assert_eq!(b.pick(&subs, &c), Decision::Wait);
        assert_eq!(b.lambda_1000(), 1200);
        // 63000 free: W = 77000, avail = 72000, 72000 > 72000 is false -> send on slow.
        let (subs, c) = setup(63_000, 14_000);
        assert_eq!(b.pick(&subs, &c), Decision::Send(1));
    }

    #[test]
    fn lambda_adapts_once_per_slow_min_rtt() {
        let mut b = Blest::default();
        let (subs, mut c) = setup(1 << 30, 0);
        // 40 ms later, no retransmission: lambda 1.20 -> 1.19.
        c.now = Time::from_ms(40);
        assert_eq!(b.pick(&subs, &c), Decision::Send(1));
        assert_eq!(b.lambda_1000(), 1190);
        // 10 ms later: too soon, unchanged even with a retransmission.
        b.feedback(&Feedback::Retransmit { id: 1 }, &subs, &c);
        c.now = Time::from_ms(50);
        b.pick(&subs, &c);
        assert_eq!(b.lambda_1000(), 1190);
        // At 80 ms: the retransmission counts: +0.04 -> 1.23.
        c.now = Time::from_ms(80);
        b.pick(&subs, &c);
        assert_eq!(b.lambda_1000(), 1230);
        // A retransmission seen through the counters: +0.04 -> 1.27, then clamped at 1.30.
        let mut subs2 = subs;
        subs2[0].retransmissions = 1;
        c.now = Time::from_ms(120);
        b.pick(&subs2, &c);
        assert_eq!(b.lambda_1000(), 1270);
        subs2[0].retransmissions = 2;
        c.now = Time::from_ms(160);
        b.pick(&subs2, &c);
        assert_eq!(b.lambda_1000(), 1300);
        // Many quiet rounds: floor at 1.00.
        for i in 5..100 {
            c.now = Time::from_ms(40 * i);
            b.pick(&subs2, &c);
        }
        assert_eq!(b.lambda_1000(), 1000);
    }

    #[test]
    fn fast_with_space_is_used_directly() {
        let mut b = Blest::default();
        let subs = [sub(0, 10, 10, 3), sub(1, 40, 10, 0)];
        let mut c = conn();
        c.rcv_wnd_free = 0;
        assert_eq!(b.pick(&subs, &c), Decision::Send(0));
    }
}
