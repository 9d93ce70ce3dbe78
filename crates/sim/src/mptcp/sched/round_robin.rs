//! Round-robin: the out-of-tree Linux MPTCP `roundrobin` scheduler (multipath-tcp.org kernel,
//! `net/mptcp/mptcp_rr.c`, `mptcp_rr_next_segment`) with its defaults `num_segments = 1` and
//! `cwnd_limited = 1`.
//!
//! Rule (quota per subflow, in segments): walk the available subflows (usable, with cwnd space)
//! in order; a subflow with quota 0 is a candidate and the LAST such subflow in the walk is
//! chosen (Linux overwrites `choose_sk` on each unused subflow); a subflow whose quota reached
//! `num_segments` is full. When every available subflow is full, all their quotas are reset to 0
//! and the walk is repeated. The chosen subflow's quota grows by one per segment. With two
//! subflows both open this sends 1, 0, 1, 0, ... .
//!
//! Backups: `mptcp_rr.c` itself ignores the backup flag; here (as for every scheduler in this
//! crate) backups are used only when no regular subflow is usable ("backups last"). When no
//! available subflow has space the scheduler waits.

use super::common::candidates;
use super::{ConnInfo, Decision, Scheduler, SubflowInfo};

/// Linux `num_segments` module parameter (default 1).
pub const NUM_SEGMENTS: u32 = 1;

#[derive(Debug, Default)]
pub struct RoundRobin {
    /// Segments sent in the current round, by subflow id.
    quota: Vec<u32>,
}

impl RoundRobin {
    fn quota_mut(&mut self, id: usize) -> &mut u32 {
        if self.quota.len() <= id {
            self.quota.resize(id + 1, 0);
        }
        &mut self.quota[id]
    }
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "roundrobin"
    }

    fn pick(&mut self, subs: &[SubflowInfo], _conn: &ConnInfo) -> Decision {
        let avail: arrayvec::ArrayVec<usize, { super::common::MAX_SUBFLOWS }> = candidates(subs)
            .iter()
            .filter(|s| s.has_space)
            .map(|s| s.id)
            .collect();
        if avail.is_empty() {
            return Decision::Wait;
        }
        for _round in 0..2 {
            let mut choose = None;
            let mut full = 0;
            for &id in &avail {
                let q = *self.quota_mut(id);
                if q > 0 && q < NUM_SEGMENTS {
                    choose = Some(id);
                    break;
                }
                if q == 0 {
                    choose = Some(id);
                }
                if q >= NUM_SEGMENTS {
                    full += 1;
                }
            }
            if let Some(id) = choose {
                *self.quota_mut(id) += 1;
                return Decision::Send(id);
            }
            if full == avail.len() {
                for &id in &avail {
                    *self.quota_mut(id) = 0;
                }
            }
        }
        // Unreachable: after the reset every available subflow has quota 0.
        Decision::Wait
    }

    /// Reads `usable`, `backup`, `has_space` and `id` only.
    fn light_snapshot(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::test_util::{conn, sub};
    use super::*;

    fn picks(s: &mut RoundRobin, subs: &[SubflowInfo], n: usize) -> Vec<Decision> {
        (0..n).map(|_| s.pick(subs, &conn())).collect()
    }

    #[test]
    fn alternates_last_unused_first() {
        let mut s = RoundRobin::default();
        let subs = [sub(0, 10, 10, 0), sub(1, 50, 10, 0)];
        use Decision::Send;
        assert_eq!(
            picks(&mut s, &subs, 5),
            vec![Send(1), Send(0), Send(1), Send(0), Send(1)]
        );
    }

    #[test]
    fn three_subflows_cycle() {
        let mut s = RoundRobin::default();
        let subs = [sub(0, 10, 10, 0), sub(1, 10, 10, 0), sub(2, 10, 10, 0)];
        use Decision::Send;
        // Round 1: last unused each time: 2, then 1, then 0; then reset.
        assert_eq!(
            picks(&mut s, &subs, 6),
            vec![Send(2), Send(1), Send(0), Send(2), Send(1), Send(0)]
        );
    }

    #[test]
    fn skips_full_subflow_and_waits_when_none_has_space() {
        let mut s = RoundRobin::default();
        let subs = [sub(0, 10, 10, 0), sub(1, 10, 10, 10)];
        use Decision::Send;
        assert_eq!(picks(&mut s, &subs, 3), vec![Send(0), Send(0), Send(0)]);
        let subs = [sub(0, 10, 10, 10), sub(1, 10, 10, 10)];
        assert_eq!(s.pick(&subs, &conn()), Decision::Wait);
    }

    #[test]
    fn backups_last() {
        let mut s = RoundRobin::default();
        let mut b = sub(1, 10, 10, 0);
        b.backup = true;
        let subs = [sub(0, 10, 10, 0), b];
        use Decision::Send;
        assert_eq!(picks(&mut s, &subs, 3), vec![Send(0), Send(0), Send(0)]);
    }
}
