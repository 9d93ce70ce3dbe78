//! ECF, Earliest Completion First: Lim, Nahum, Towsley, Gibbens, "ECF: An MPTCP Path Scheduler
//! to Manage Heterogeneous Paths", ACM CoNEXT 2017, Algorithm 1; decision rule and integer form
//! as in the out-of-tree Linux module (multipath-tcp.org kernel, `net/mptcp/mptcp_ecf.c`,
//! `ecf_get_available_subflow`, `mptcp_ecf_r_beta = 4`).
//!
//! Rule. `x_f` = the fastest candidate subflow by sRTT (with or without space); `x_s` = the
//! minRTT choice (lowest sRTT with space). If there is no `x_s`, wait; if `x_s == x_f`, send.
//! Otherwise, with `k` bytes queued at the connection, `delta = max(rttvar_f, rttvar_s)`,
//! `beta = 1/4` and the hysteresis flag `waiting` (0 or 1):
//!
//! ```text
//! X_f = max(k, cwnd_f*mss)           X_s = max(k, cwnd_s*mss)
//! if srtt_f * (X_f + cwnd_f*mss) < (1 + waiting*beta) * cwnd_f*mss * (srtt_s + delta):
//!     if srtt_s * X_s >= cwnd_s*mss * (2*srtt_f + delta):  waiting = 1; WAIT
//!     else: SEND on x_s
//! else: waiting = 0; SEND on x_s
//! ```
//!
//! i.e. the paper's `n = 1 + k/cwnd_f` rounds on the fast path against one slow-path RTT (plus
//! the deviation margin), and waiting only if the slow path would itself finish later than two
//! fast RTTs. The comparison is done exactly in integers (ns x bytes, u128), multiplied by
//! `r_beta = 4` as Linux does (`4*lhs < 4*rhs + waiting*rhs`).
//!
//! Choices (documented in docs/models/mptcp-schedulers.md):
//! - `k`: Linux uses the bytes in the meta send queue not yet handed to a subflow
//!   (`sk_wmem_queued` of the meta socket minus the subflows'), which the kernel bounds by the
//!   auto-tuned send buffer (about 2 x the sum of the subflow cwnds, `tcp_sndbuf_expand`). Here
//!   `k = mss * min(queued_segments, 2*sum(cwnd) - sum(in_flight), rcv_wnd_free/mss)` over the
//!   candidate subflows: the unsent data that the send buffer (and the peer's window) allow, so a
//!   bulk transfer (`queued_segments = u64::MAX`) does not make `k` infinite.
//! - `delta`: the paper's standard deviation sigma is taken as RFC 6298 RTTVAR (`rttvar`).
//!   Linux uses `rttvar_us >> 1`, which includes the 200 ms RTO floor; that is not modelled.

use super::common::{candidates, fastest, min_rtt_with_space};
use super::{ConnInfo, Decision, Scheduler, SubflowInfo};

/// Linux `mptcp_ecf_r_beta`: beta = 1 / R_BETA = 0.25.
pub const R_BETA: u128 = 4;

#[derive(Debug, Default)]
pub struct Ecf {
    /// The paper's `waiting` flag (Linux `switching_margin`).
    waiting: bool,
}

impl Ecf {
    pub fn waiting(&self) -> bool {
        self.waiting
    }
}

/// The unsent bytes `k` ECF reasons about (see the module docs).
pub fn queued_bytes(cands: &[&SubflowInfo], conn: &ConnInfo) -> u64 {
    let cwnds: u64 = cands.iter().map(|s| s.cwnd as u64).sum();
    let in_flight: u64 = cands.iter().map(|s| s.in_flight as u64).sum();
    let sndbuf_room = (2 * cwnds).saturating_sub(in_flight);
    let mss = conn.mss.max(1) as u64;
    let segs = conn
        .queued_segments
        .min(sndbuf_room)
        .min(conn.rcv_wnd_free / mss);
    segs * mss
}

impl Scheduler for Ecf {
    fn name(&self) -> &'static str {
        "ecf"
    }

    fn pick(&mut self, subs: &[SubflowInfo], conn: &ConnInfo) -> Decision {
        let cands = candidates(subs);
        let Some(best) = min_rtt_with_space(&cands) else {
            return Decision::Wait;
        };
        let Some(fast) = fastest(&cands) else {
            return Decision::Wait;
        };
        if fast.id == best.id {
            return Decision::Send(best.id);
        }
        let mss = best.mss.max(1) as u128; // Linux: "assuming equal MSS"
        let k = queued_bytes(&cands, conn) as u128;
        let (srtt_f, srtt_s) = (fast.srtt.ns() as u128, best.srtt.ns() as u128);
        let delta = fast.rttvar.max(best.rttvar).ns() as u128;
        let cwnd_f = fast.cwnd as u128 * mss;
        let cwnd_s = best.cwnd as u128 * mss;
        let x_f = k.max(cwnd_f);
        let lhs = srtt_f * (x_f + cwnd_f);
        let rhs = cwnd_f * (srtt_s + delta);
        let w = self.waiting as u128;
        if R_BETA * lhs < R_BETA * rhs + w * rhs {
            let x_s = k.max(cwnd_s);
            if srtt_s * x_s >= cwnd_s * (2 * srtt_f + delta) {
                self.waiting = true;
                return Decision::Wait;
            }
        } else {
            self.waiting = false;
        }
        Decision::Send(best.id)
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::test_util::{conn, sub};
    use super::*;
    use railpath_core::Time;

    /// Fast 10 ms / cwnd 10 (full), slow 40 ms / cwnd 10 (free), mss 1000.
    fn pair(k_segments: u64) -> ([SubflowInfo; 2], ConnInfo) {
        let subs = [sub(0, 10, 10, 10), sub(1, 40, 10, 0)];
        let mut c = conn();
        c.queued_segments = k_segments;
        (subs, c)
    }

    #[test]
    fn sends_on_fast_when_it_has_space() {
        let mut s = Ecf::default();
        let subs = [sub(0, 10, 10, 5), sub(1, 40, 10, 0)];
        assert_eq!(s.pick(&subs, &conn()), Decision::Send(0));
    }

    #[test]
    fn waits_for_fast_when_little_is_queued() {
        let mut s = Ecf::default();
        // k = 5 segments = 5000 B: X_f = max(5000, 10000) = 10000.
        // lhs = 10 ms * 20000 = 200000 ms*B; rhs = 10000 * 40 ms = 400000 -> 4*200k < 4*400k.
        // X_s = 10000: 40 ms * 10000 = 400000 >= 10000 * (20 ms + 0) = 200000 -> wait.
        let (subs, c) = pair(5);
        assert_eq!(s.pick(&subs, &c), Decision::Wait);
        assert!(s.waiting());
    }

    #[test]
    fn uses_slow_when_much_is_queued_and_clears_waiting() {
        let mut s = Ecf { waiting: true };
        // k = 25 segments (cap: 2*20 - 10 = 30 segments): X_f = 25000.
        // lhs = 10 * 35000 = 350000; rhs = 10000 * 40 = 400000.
        // waiting: 4*350000 = 1.4M < 4*400000 + 400000 = 2.0M -> second test:
        // X_s = 25000: 40 * 25000 = 1.0M >= 10000 * 20 = 200000 -> still wait.
        let (subs, c) = pair(25);
        assert_eq!(s.pick(&subs, &c), Decision::Wait);
        // k = 30 (the cap): lhs = 10 * 40000 = 400000 = rhs; 1.6M < 2.0M -> wait (hysteresis).
        let (subs, c) = pair(1000);
        assert_eq!(queued_bytes(&candidates(&subs), &c), 30_000);
        assert_eq!(s.pick(&subs, &c), Decision::Wait);
        // Without the hysteresis: 1.6M < 1.6M is false -> waiting = 0, send on slow.
        s.waiting = false;
        assert_eq!(s.pick(&subs, &c), Decision::Send(1));
        assert!(!s.waiting());
    }

    #[test]
    fn delta_and_slow_path_rule() {
        let mut s = Ecf::default();
        // Fast 10 ms, slow 15 ms, k = 5 segments, rttvar 2 ms on the slow path.
        // lhs = 10 * 20000 = 200000 < rhs = 10000 * (15 + 2) = 170000? No -> send slow.
        let mut subs = [sub(0, 10, 10, 10), sub(1, 15, 10, 0)];
        subs[1].rttvar = Time::from_ms(2);
        let mut c = conn();
        c.queued_segments = 5;
        assert_eq!(s.pick(&subs, &c), Decision::Send(1));
        // Slow 25 ms: rhs = 10000 * 27 = 270000 > 200000 -> check slow:
        // 25 * 10000 = 250000 >= 10000 * (20 + 2) = 220000 -> wait.
        subs[1].srtt = Time::from_ms(25);
        assert_eq!(s.pick(&subs, &c), Decision::Wait);
        // Slow 21 ms: rhs = 230000 > 200000; 21 * 10000 = 210000 < 220000 -> send slow.
        let mut s = Ecf::default();
        subs[1].srtt = Time::from_ms(21);
        assert_eq!(s.pick(&subs, &c), Decision::Send(1));
    }

    #[test]
    fn waits_when_nothing_has_space() {
        let mut s = Ecf::default();
        let subs = [sub(0, 10, 10, 10), sub(1, 40, 10, 10)];
        assert_eq!(s.pick(&subs, &conn()), Decision::Wait);
    }
}
