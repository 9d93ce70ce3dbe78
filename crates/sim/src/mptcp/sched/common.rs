//! Helpers shared by the schedulers: the candidate class (regular subflows, or backups when no
//! regular subflow is usable) and the minimum-RTT choice of the out-of-tree Linux default
//! scheduler (multipath-tcp.org `net/mptcp/mptcp_sched.c`, `get_available_subflow` /
//! `get_subflow_from_selectors`), which ECF and BLEST start from.
//!
//! Ties are broken by position in the slice (the first subflow wins), as Linux's strict `<`
//! over its subflow list does.

use super::SubflowInfo;

/// The subflows a scheduler may use now: the usable non-backup subflows, or, when there is none,
/// the usable backups (RFC 8684 section 3.3.8; `get_available_subflow` tries the
/// `subflow_is_active` selector first and falls back to `subflow_is_backup` only when no active
/// subflow is usable at all; an active subflow that is merely out of cwnd space makes it wait).
/// At most this many subflows (the scenario validator's limit); candidate lists live on the
/// stack so that a scheduling decision does not allocate.
pub(crate) const MAX_SUBFLOWS: usize = 16;

pub(crate) type Cands<'a> = arrayvec::ArrayVec<&'a SubflowInfo, MAX_SUBFLOWS>;

pub(crate) fn candidates(subs: &[SubflowInfo]) -> Cands<'_> {
    let regular: Cands = subs
        .iter()
        .filter(|s| s.usable && !s.backup)
        .take(MAX_SUBFLOWS)
        .collect();
    if !regular.is_empty() {
        return regular;
    }
    subs.iter()
        .filter(|s| s.usable && s.backup)
        .take(MAX_SUBFLOWS)
        .collect()
}

/// Lowest sRTT among `cands` that have cwnd space (Linux `get_available_subflow`); `None` when
/// none has space.
pub(crate) fn min_rtt_with_space<'a>(cands: &[&'a SubflowInfo]) -> Option<&'a SubflowInfo> {
    let mut best: Option<&SubflowInfo> = None;
    for s in cands.iter().copied().filter(|s| s.has_space) {
        if best.is_none_or(|b| s.srtt < b.srtt) {
            best = Some(s);
        }
    }
    best
}

/// Lowest sRTT among `cands`, with or without space (ECF's and BLEST's `minsk`).
pub(crate) fn fastest<'a>(cands: &[&'a SubflowInfo]) -> Option<&'a SubflowInfo> {
    let mut best: Option<&SubflowInfo> = None;
    for s in cands.iter().copied() {
        if best.is_none_or(|b| s.srtt < b.srtt) {
            best = Some(s);
        }
    }
    best
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::super::{ConnInfo, SubflowInfo};
    use railpath_core::Time;

    /// A usable regular subflow with the given sRTT (ms), cwnd and in-flight packets.
    pub fn sub(id: usize, srtt_ms: u64, cwnd: u32, in_flight: u32) -> SubflowInfo {
        SubflowInfo {
            id,
            srtt: Time::from_ms(srtt_ms),
            rttvar: Time::ZERO,
            min_rtt: Time::from_ms(srtt_ms),
            cwnd,
            in_flight,
            mss: 1000,
            backup: false,
            usable: true,
            has_space: in_flight < cwnd,
            pacing_rate_bps: 0,
            queued_bytes: in_flight as u64 * 1000,
            retransmissions: 0,
            rto_count: 0,
        }
    }

    pub fn conn() -> ConnInfo {
        ConnInfo {
            now: Time::ZERO,
            queued_segments: u64::MAX,
            rcv_wnd_free: 1 << 30,
            rcv_wnd: 1 << 30,
            data_in_flight: 0,
            mss: 1000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::sub;
    use super::*;

    #[test]
    fn backups_only_when_no_regular_usable() {
        let mut a = sub(0, 10, 10, 10); // regular, full
        let mut b = sub(1, 5, 10, 0);
        b.backup = true;
        let subs = [a, b];
        let c = candidates(&subs);
        assert_eq!(c.iter().map(|s| s.id).collect::<Vec<_>>(), vec![0]);
        assert!(min_rtt_with_space(&c).is_none());
        a.usable = false;
        let subs = [a, b];
        let c = candidates(&subs);
        assert_eq!(c.iter().map(|s| s.id).collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn min_rtt_ties_go_to_first() {
        let subs = [sub(0, 20, 10, 0), sub(1, 10, 10, 10), sub(2, 20, 10, 0)];
        let c = candidates(&subs);
        assert_eq!(min_rtt_with_space(&c).map(|s| s.id), Some(0));
        assert_eq!(fastest(&c).map(|s| s.id), Some(1));
    }
}
