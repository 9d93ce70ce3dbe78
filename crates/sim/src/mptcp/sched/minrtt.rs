//! minRTT: the out-of-tree Linux MPTCP default scheduler (multipath-tcp.org kernel,
//! `net/mptcp/mptcp_sched.c`, `get_available_subflow` / `get_subflow_from_selectors`).
//!
//! Rule: among the usable regular (non-backup) subflows, send on the one with the lowest sRTT
//! that has cwnd space. If regular subflows are usable but none has space, wait (Linux returns
//! NULL because an "unused" active subflow is only temporarily unavailable). Backup subflows are
//! considered only when no regular subflow is usable. Ties go to the first subflow.
//!
//! Not modelled: the reinjection `path_mask` bookkeeping (the connection decides what to
//! reinject; a reinjected segment may go on any subflow), the DATA_FIN rule, and
//! `mptcp_rcv_buf_optimization` (opportunistic retransmission and penalisation belong to the
//! connection).
//!
//! The rule is evaluated in one pass over the subflows (it runs once per segment sent): the best
//! regular and the best backup subflow with space are tracked side by side, and the class is
//! chosen at the end. This is `min_rtt_with_space(&candidates(subs))` of `super::common` without
//! building the candidate list; the test `same_choice_as_candidate_list` checks the two agree.

use super::{ConnInfo, Decision, Scheduler, SubflowInfo};

#[derive(Debug, Default)]
pub struct MinRtt;

/// Lowest sRTT with cwnd space among the usable regular subflows, or, when no regular subflow is
/// usable, among the usable backups; ties go to the first. `None`: wait.
fn pick_min_rtt(subs: &[SubflowInfo]) -> Option<&SubflowInfo> {
    let mut any_regular = false;
    let mut regular: Option<&SubflowInfo> = None;
    let mut backup: Option<&SubflowInfo> = None;
    for s in subs.iter().filter(|s| s.usable) {
        if !s.backup {
            any_regular = true;
            if s.has_space && regular.is_none_or(|b| s.srtt < b.srtt) {
                regular = Some(s);
            }
        } else if s.has_space && backup.is_none_or(|b| s.srtt < b.srtt) {
            backup = Some(s);
        }
    }
    if any_regular {
        regular
    } else {
        backup
    }
}

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "minrtt"
    }

    fn pick(&mut self, subs: &[SubflowInfo], _conn: &ConnInfo) -> Decision {
        match pick_min_rtt(subs) {
            Some(s) => Decision::Send(s.id),
            None => Decision::Wait,
        }
    }

    /// Reads `usable`, `backup`, `has_space`, `srtt` and `id` only.
    fn light_snapshot(&self) -> bool {
        true
    }

    /// No state: the rule reads the snapshot only.
    fn pure_pick(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::test_util::{conn, sub};
    use super::*;

    #[test]
    fn lowest_rtt_with_space() {
        let mut s = MinRtt;
        // 30 ms with space, 10 ms with space, 20 ms with space -> 10 ms.
        let subs = [sub(0, 30, 10, 0), sub(1, 10, 10, 3), sub(2, 20, 10, 0)];
        assert_eq!(s.pick(&subs, &conn()), Decision::Send(1));
        // The 10 ms subflow is full -> next lowest with space, 20 ms.
        let subs = [sub(0, 30, 10, 0), sub(1, 10, 10, 10), sub(2, 20, 10, 0)];
        assert_eq!(s.pick(&subs, &conn()), Decision::Send(2));
    }

    #[test]
    fn waits_when_all_regular_full_even_if_backup_free() {
        let mut s = MinRtt;
        let mut b = sub(1, 5, 10, 0);
        b.backup = true;
        let subs = [sub(0, 30, 10, 10), b];
        assert_eq!(s.pick(&subs, &conn()), Decision::Wait);
    }

    #[test]
    fn backup_when_no_regular_usable() {
        let mut s = MinRtt;
        let mut a = sub(0, 5, 10, 0);
        a.usable = false; // e.g. PHA filtered it before a handover
        let mut b = sub(1, 50, 10, 0);
        b.backup = true;
        let mut c = sub(2, 40, 10, 0);
        c.backup = true;
        assert_eq!(s.pick(&[a, b, c], &conn()), Decision::Send(2));
    }

    #[test]
    fn same_choice_as_candidate_list() {
        use super::super::common::{candidates, min_rtt_with_space};
        // Every combination of usable/backup/space over four subflows with tied and distinct
        // RTTs: the one-pass rule picks what the candidate list and its minimum pick.
        let rtts = [20, 10, 20, 10];
        for mask in 0u32..(1 << 12) {
            let subs: Vec<SubflowInfo> = (0..4)
                .map(|i| {
                    let bits = mask >> (3 * i);
                    let mut s = sub(i, rtts[i], 10, if bits & 1 != 0 { 0 } else { 10 });
                    s.usable = bits & 2 != 0;
                    s.backup = bits & 4 != 0;
                    s
                })
                .collect();
            let want = min_rtt_with_space(&candidates(&subs)).map(|s| s.id);
            assert_eq!(pick_min_rtt(&subs).map(|s| s.id), want, "mask {mask:#x}");
        }
    }

    #[test]
    fn unusable_never_chosen() {
        let mut s = MinRtt;
        let mut a = sub(0, 5, 10, 0);
        a.usable = false;
        let subs = [a, sub(1, 50, 10, 10)];
        assert_eq!(s.pick(&subs, &conn()), Decision::Wait);
    }
}
