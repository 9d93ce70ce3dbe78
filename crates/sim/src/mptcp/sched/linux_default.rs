//! linux-default: the upstream Linux MPTCP packet scheduler, `mptcp_subflow_get_send()` in
//! net/mptcp/protocol.c (v5.19 - v6.x), with the send burst of `__mptcp_push_pending`.
//!
//! Rule. For every usable subflow compute its "linger time", the time to drain what it has
//! queued at its (averaged) pacing rate: `linger = (wmem_queued << 32) / avg_pacing_rate`, and
//! keep the lowest per class (regular, backup). Use the best regular subflow; the best backup
//! only when no regular subflow is usable. A subflow whose pacing rate is 0 is skipped.
//! Once a subflow is chosen, the connection keeps sending on it for a burst of
//! `burst = min(MPTCP_SEND_BURST_SIZE = 65428, peer window free)` bytes; when the burst starts,
//! the subflow's averaged pacing rate is updated as Linux does:
//! `avg = (avg * wmem + pacing_rate * burst) / (burst + wmem)` (with `avg = pacing_rate` the
//! first time).
//!
//! Mapping to the snapshot and simplifications (see docs/models/mptcp-schedulers.md):
//! - `wmem_queued` is `queued_bytes` (bytes in flight on the subflow: the simulator keeps no
//!   unsent data on subflows).
//! - Only subflows with cwnd space are candidates (Linux would queue data on a subflow whose cwnd
//!   is full; the simulator cannot). If regular subflows are usable but none has space, wait.
//! - The burst continues on the same subflow only while it is usable and has space; otherwise a
//!   new choice is made (Linux would leave the data queued on that subflow).
//! - `pacing_rate`: `pacing_rate_bps / 8` bytes/s; when 0 (unknown) it is estimated as Linux's
//!   `tcp_update_pacing_rate` in congestion avoidance, `1.2 * cwnd * mss / srtt`; a subflow with
//!   no RTT sample yet gets an unbounded rate (linger 0), so a fresh subflow is tried first.

use super::common::candidates;
use super::{ConnInfo, Decision, Scheduler, SubflowInfo};

/// Linux `MPTCP_SEND_BURST_SIZE` (bytes).
pub const SEND_BURST_SIZE: u64 = 65428;

#[derive(Debug, Default)]
pub struct LinuxDefault {
    /// `subflow->avg_pacing_rate` by id, bytes/s (0 = not initialised).
    avg_pacing: Vec<u64>,
    /// The subflow of the current burst and the bytes left in it (`msk->snd_burst`).
    last_snd: Option<usize>,
    snd_burst: u64,
}

/// Current pacing rate of a subflow in bytes/s (see module docs).
pub fn pacing_rate(s: &SubflowInfo) -> u64 {
    if s.pacing_rate_bps > 0 {
        return s.pacing_rate_bps / 8;
    }
    if s.srtt.ns() == 0 {
        return u64::MAX;
    }
    // 120 % of cwnd * mss per sRTT, in bytes/s: in 64 bits when the product fits (any window
    // below about 10^6 segments of 1448 bytes), the same quotient as in 128 bits, whose
    // division is a library call (asked per subflow per scheduling decision on the Linux send
    // path).
    let bytes = s.cwnd as u64 * s.mss as u64;
    if let (Some(n), Some(d)) = (
        bytes.checked_mul(12_000_000_000),
        s.srtt.ns().checked_mul(10),
    ) {
        return n / d;
    }
    let r = s.cwnd as u128 * s.mss as u128 * 1_000_000_000 * 12 / (s.srtt.ns() as u128 * 10);
    r.min(u64::MAX as u128) as u64
}

impl LinuxDefault {
    fn avg_mut(&mut self, id: usize) -> &mut u64 {
        if self.avg_pacing.len() <= id {
            self.avg_pacing.resize(id + 1, 0);
        }
        &mut self.avg_pacing[id]
    }

    /// The averaged pacing rate of subflow `id`, bytes/s (0 before its first use).
    pub fn avg_pacing_rate(&self, id: usize) -> u64 {
        self.avg_pacing.get(id).copied().unwrap_or(0)
    }

    /// Linger time in 2^-32 s units (Linux's fixed point), `u128::MAX` if the pace is 0.
    /// A subflow without an RTT sample has linger 0 and its average stays uninitialised: in
    /// Linux every subflow has a pacing rate from its handshake's RTT before it carries data,
    /// so an "unbounded" rate must not become its average.
    fn linger(&mut self, s: &SubflowInfo) -> u128 {
        let mut pace = *self.avg_mut(s.id);
        if pace == 0 {
            pace = pacing_rate(s);
            if pace == u64::MAX {
                return 0;
            }
            *self.avg_mut(s.id) = pace;
        }
        if pace == 0 {
            return u128::MAX;
        }
        ((s.queued_bytes as u128) << 32) / pace as u128
    }
}

impl Scheduler for LinuxDefault {
    fn name(&self) -> &'static str {
        "linux-default"
    }

    fn pick(&mut self, subs: &[SubflowInfo], conn: &ConnInfo) -> Decision {
        let cands = candidates(subs);
        // Continue the current burst.
        if let Some(id) = self.last_snd {
            if self.snd_burst > 0 {
                if let Some(s) = cands.iter().find(|s| s.id == id && s.has_space) {
                    self.snd_burst = self.snd_burst.saturating_sub(s.mss as u64);
                    return Decision::Send(id);
                }
            }
        }
        self.last_snd = None;
        self.snd_burst = 0;
        // The lowest linger time of the class in use; if that subflow cannot take data now,
        // wait for it (Linux returns no subflow rather than the second best).
        let mut best: Option<(&SubflowInfo, u128)> = None;
        for s in cands.iter().copied() {
            let l = self.linger(s);
            if l == u128::MAX {
                continue;
            }
            if best.is_none_or(|(_, bl)| l < bl) {
                best = Some((s, l));
            }
        }
        let Some((s, _)) = best.filter(|(s, _)| s.has_space) else {
            return Decision::Wait;
        };
        let burst = SEND_BURST_SIZE.min(conn.rcv_wnd_free);
        if burst > 0 {
            let now_rate = pacing_rate(s);
            let avg = self.avg_pacing_rate(s.id);
            if now_rate != u64::MAX {
                let new_avg = if avg == 0 {
                    now_rate as u128
                } else {
                    let (wmem, b) = (s.queued_bytes as u128, burst as u128);
                    (avg as u128 * wmem + now_rate as u128 * b) / (b + wmem)
                };
                *self.avg_mut(s.id) = new_avg.min(u64::MAX as u128) as u64;
            }
            self.last_snd = Some(s.id);
            self.snd_burst = burst.saturating_sub(s.mss as u64);
        }
        Decision::Send(s.id)
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::test_util::{conn, sub};
    use super::*;

    fn paced(id: usize, in_flight: u32, rate_bps: u64) -> SubflowInfo {
        let mut s = sub(id, 10, 100, in_flight);
        s.pacing_rate_bps = rate_bps;
        s
    }

    #[test]
    fn lowest_linger_time_wins() {
        let mut s = LinuxDefault::default();
        // A: 20000 B queued at 8 Mbit/s (1e6 B/s) -> 20 ms; B: 30000 B at 16 Mbit/s -> 15 ms.
        let subs = [paced(0, 20, 8_000_000), paced(1, 30, 16_000_000)];
        assert_eq!(s.pick(&subs, &conn()), Decision::Send(1));
        // The burst sticks to B even though A is now better (B: 60 segments queued).
        let subs = [paced(0, 20, 8_000_000), paced(1, 60, 16_000_000)];
        assert_eq!(s.pick(&subs, &conn()), Decision::Send(1));
    }

    #[test]
    fn burst_length_and_pacing_average() {
        let mut s = LinuxDefault::default();
        // Window free 3000 B -> burst 3000 B = 3 segments of 1000 B, then a new choice.
        let mut c = conn();
        c.rcv_wnd_free = 3000;
        let subs = [paced(0, 10, 8_000_000), paced(1, 30, 8_000_000)];
        for _ in 0..3 {
            assert_eq!(s.pick(&subs, &c), Decision::Send(0));
        }
        // At the burst start: avg = (1e6 * 10000 + 1e6 * 3000) / 13000 = 1e6 B/s.
        assert_eq!(s.avg_pacing_rate(0), 1_000_000);
        // New choice with A's rate now 16 Mbit/s: avg_A stays 1e6 for the linger comparison
        // (A: 10000 B / 1e6 = 10 ms, B: 30000 / 1e6 = 30 ms) -> A again; then
        // avg_A = (1e6 * 10000 + 2e6 * 3000) / 13000 = 1230769 B/s.
        let subs = [paced(0, 10, 16_000_000), paced(1, 30, 8_000_000)];
        assert_eq!(s.pick(&subs, &c), Decision::Send(0));
        assert_eq!(s.avg_pacing_rate(0), 1_230_769);
    }

    #[test]
    fn burst_breaks_when_subflow_full_and_backup_rule() {
        let mut s = LinuxDefault::default();
        let subs = [paced(0, 10, 8_000_000), paced(1, 30, 8_000_000)];
        assert_eq!(s.pick(&subs, &conn()), Decision::Send(0));
        let mut full = subs;
        full[0].in_flight = 100;
        full[0].queued_bytes = 100 * 1000;
        full[0].has_space = false;
        assert_eq!(s.pick(&full, &conn()), Decision::Send(1));
        // Linux waits for the lowest-linger subflow when it is full, rather than take the
        // second best: A (10 segments queued, full) beats B (30 queued) -> wait.
        let mut s = LinuxDefault::default();
        let mut lowest_full = subs;
        lowest_full[0].has_space = false;
        assert_eq!(s.pick(&lowest_full, &conn()), Decision::Wait);
        // Regular subflows usable but full, backup free -> wait.
        let mut s = LinuxDefault::default();
        let mut b = paced(1, 0, 8_000_000);
        b.backup = true;
        let subs = [full[0], b];
        assert_eq!(s.pick(&subs, &conn()), Decision::Wait);
        // No regular subflow usable -> the backup.
        let mut a = full[0];
        a.usable = false;
        assert_eq!(s.pick(&[a, b], &conn()), Decision::Send(1));
    }

    #[test]
    fn pacing_fallback_from_cwnd_and_srtt() {
        // cwnd 100 * 1000 B / 10 ms = 1e7 B/s, x 1.2 = 1.2e7 B/s.
        assert_eq!(pacing_rate(&sub(0, 10, 100, 0)), 12_000_000);
        let mut fresh = sub(1, 0, 10, 0);
        fresh.srtt = railpath_core::Time::ZERO;
        assert_eq!(pacing_rate(&fresh), u64::MAX);
        // Past 64 bits (cwnd * mss * 1.2e10 > 2^64): the 128-bit quotient. 2^31 segments of
        // 1000 B per 1 s: 1.2 x 2.147483648e12 B/s.
        let mut huge = sub(2, 1000, 100, 0);
        huge.cwnd = 1 << 31;
        assert_eq!(pacing_rate(&huge), 2_576_980_377_600);
        // Either way, the quotient of the same operands: 64-bit cases checked against 128.
        for (cwnd, srtt_us) in [
            (1, 1),
            (3, 7),
            (10, 1_000),
            (97, 12_345),
            (1 << 20, 999_999),
        ] {
            let mut x = sub(3, 10, cwnd, 0);
            x.srtt = railpath_core::Time::from_us(srtt_us);
            let wide = cwnd as u128 * 1000 * 12_000_000_000 / (srtt_us as u128 * 10_000);
            assert_eq!(
                pacing_rate(&x) as u128,
                wide,
                "cwnd {cwnd}, srtt {srtt_us} us"
            );
        }
    }
}
