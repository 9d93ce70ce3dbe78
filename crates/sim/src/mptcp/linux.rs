//! The rules of upstream Linux MPTCP (net/mptcp, v6.x) that decide what a connection loses when
//! one of its paths dies, as small functions the connection calls (`reinject = "linux"`).
//!
//! Sources (Linux 6.18): net/mptcp/protocol.c `mptcp_subflow_get_retrans()`, `__mptcp_retrans()`,
//! `mptcp_set_timeout()`/`mptcp_timeout_from_subflow()`, `__mptcp_clean_una()`,
//! `__mptcp_retransmit_pending_data()`, `mptcp_rcv_space_adjust()`, `__mptcp_sync_sndbuf()`;
//! net/mptcp/pm.c `mptcp_pm_subflows_chk_stale()`; net/ipv4/tcp_output.c / tcp_input.c
//! `tcp_sndbuf_expand()`, `tcp_should_expand_sndbuf()`, `tcp_rcv_space_adjust()`;
//! Documentation/networking/mptcp-sysctl.rst (`stale_loss_cnt`). docs/models/mptcp.md says which
//! rule follows which function and what is simplified.

use railpath_core::Time;

/// Linux `TCP_RTO_MIN`: the MPTCP-level retransmit interval when no subflow has a timer.
pub const TCP_RTO_MIN: Time = Time::from_ms(200);

/// Linux `TCP_INIT_CWND`.
const TCP_INIT_CWND: u64 = 10;

/// Bytes of data one MPTCP data fragment (`struct mptcp_data_frag`) carries at most: the
/// socket's page fragment is an order-3 page (32 KiB, `SKB_FRAG_PAGE_ORDER`) and a bulk writer's
/// consecutive writes collapse into one fragment per page. `__mptcp_retrans()` resends one
/// fragment (the head of the MPTCP retransmit queue) per timer expiry.
pub const DFRAG_BYTES: u64 = 32 * 1024;

/// `tcp_sndbuf_expand()`'s worst-case memory per segment of `mss` payload bytes on x86_64:
/// `roundup_pow_of_two(mss + MAX_TCP_HEADER (320) + SKB_DATA_ALIGN(sizeof(skb_shared_info))
/// (320)) + SKB_DATA_ALIGN(sizeof(sk_buff)) (256)`; 4352 for an MSS of 1448.
pub fn per_mss(mss: u32) -> u64 {
    (mss as u64 + 320 + 320).next_power_of_two() + 256
}

/// `tcp_sndbuf_expand()`: the send buffer a subflow grows to, bytes: twice `max(cwnd,
/// TCP_INIT_CWND)` worst-case segments, at most `tcp_wmem[2]`. (The reordering term,
/// `reordering + 1` = 4 by default, never exceeds the initial window.)
pub fn sndbuf_target(cwnd: u32, mss: u32, wmem_max: u64) -> u64 {
    (2 * (cwnd as u64).max(TCP_INIT_CWND) * per_mss(mss)).min(wmem_max)
}

/// Memory one transmit skb costs beyond its payload (`skb->truesize` of an MPTCP tx skb:
/// `sk_buff_fclones`, 512 B aligned, plus a 1 KiB kmalloc head for `MAX_TCP_HEADER` and
/// `skb_shared_info`), bytes.
pub const SKB_OVERHEAD: u64 = 1536;

/// `sk_wmem_queued` per segment of `mss` payload bytes: the skb overhead shared by the segments
/// of one skb, whose size `tcp_tso_autosize()` sets to about 1 ms of data at the pacing rate
/// (`sk_pacing_rate >> sk_pacing_shift`, shift 10), at least `tcp_min_tso_segs` = 2.
/// `pacing_bytes_per_s` is the subflow's pacing rate (bytes/s).
///
/// Asked for every subflow at every scheduling decision on the Linux send path, so it divides
/// only where the clamp does not decide (a 10 Mbit/s pace is under 2 segments a millisecond) and
/// reads the overhead's share from a table: two hardware divisions were 4 % of the train
/// reproduction's time. The result is `mss + SKB_OVERHEAD / clamp(per_ms / mss, 2, 44)`.
#[inline]
pub fn wmem_per_segment(mss: u32, pacing_bytes_per_s: u64) -> u64 {
    let per_ms = pacing_bytes_per_s >> 10;
    let mss = mss as u64;
    let segs = if per_ms < MIN_TSO_SEGS * mss {
        MIN_TSO_SEGS
    } else if per_ms >= MAX_TSO_SEGS * mss {
        MAX_TSO_SEGS
    } else {
        per_ms / mss
    };
    mss + OVERHEAD_PER_SEGMENT[segs as usize]
}

/// `tcp_min_tso_segs` and the segments of a 64 KB GSO skb (`tcp_tso_autosize()`'s bounds).
const MIN_TSO_SEGS: u64 = 2;
const MAX_TSO_SEGS: u64 = 44;

/// `SKB_OVERHEAD / segs` for every `segs` up to [`MAX_TSO_SEGS`] (index 0 unused).
const OVERHEAD_PER_SEGMENT: [u64; MAX_TSO_SEGS as usize + 1] = {
    let mut t = [0; MAX_TSO_SEGS as usize + 1];
    let mut k = 1;
    while k < t.len() {
        t[k] = SKB_OVERHEAD / k as u64;
        k += 1;
    }
    t
};

/// What the MPTCP-level retransmission needs to know of one subflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetransView {
    /// Established and not closing (`__mptcp_subflow_active`).
    pub active: bool,
    /// `tcp_rtx_and_write_queues_empty()`: nothing sent unacknowledged, nothing queued.
    pub queues_empty: bool,
    /// Backup, by either end.
    pub backup: bool,
    /// MPTCP-level retransmission intervals without traffic while it had data outstanding.
    pub stale_count: u32,
}

/// `mptcp_subflow_get_retrans()`: the subflow an MPTCP-level retransmission may use. Only one
/// whose retransmit and write queues are empty; the first such regular subflow, else a backup,
/// and the backup only when no subflow with data outstanding has made progress lately
/// (their least `stale_count` above 1: "use backup only if there are no progresses anywhere").
pub fn pick_retrans(subs: &[RetransView]) -> Option<usize> {
    let mut backup = None;
    let mut min_stale = u32::MAX;
    for (i, s) in subs.iter().enumerate() {
        if !s.active {
            continue;
        }
        if !s.queues_empty {
            min_stale = min_stale.min(s.stale_count);
            continue;
        }
        if s.backup {
            backup = backup.or(Some(i));
            continue;
        }
        return Some(i);
    }
    if min_stale > 1 {
        backup
    } else {
        None
    }
}

/// `mptcp_pm_subflows_chk_stale()`: subflow `i` (with data outstanding) becomes stale once its
/// `stale_count` exceeds `stale_loss_cnt` and another active subflow is not in loss state (its
/// `stale_count` below `max(stale_loss_cnt - 1, 1)`). A stale subflow gets no new data and the
/// whole MPTCP retransmit queue is pushed again on the others.
pub fn becomes_stale(subs: &[RetransView], i: usize, stale_loss_cnt: u32) -> bool {
    if stale_loss_cnt == 0 || subs[i].stale_count <= stale_loss_cnt {
        return false;
    }
    let active_max = stale_loss_cnt.saturating_sub(1).max(1);
    subs.iter()
        .enumerate()
        .any(|(j, o)| j != i && o.active && o.stale_count < active_max)
}

/// `mptcp_set_timeout()`: the MPTCP-level retransmit interval is the longest time left on the
/// retransmission timer of a subflow that is not in loss state (`stale_count == 0`), or
/// `TCP_RTO_MIN` when none has a timer running. `left` is each subflow's (time left on its
/// timer, stale_count).
pub fn rtx_interval(left: impl IntoIterator<Item = (Option<Time>, u32)>) -> Time {
    let tout = left
        .into_iter()
        .filter(|(_, stale)| *stale == 0)
        .filter_map(|(l, _)| l)
        .max()
        .unwrap_or(Time::ZERO);
    if tout > Time::ZERO {
        tout
    } else {
        TCP_RTO_MIN
    }
}

/// The data receiver's dynamic right-sizing (`mptcp_rcv_space_adjust()`, the MPTCP form of
/// `tcp_rcv_space_adjust()`): once per receive RTT, if the application read more than in the
/// last measurement, the buffer grows so that the window is twice what was read plus room for
/// the sender to double its rate. The buffer never shrinks. The window is kept in payload
/// bytes: `window = win_from_space(rcvbuf)`, and the space the sender may fill is that window
/// less the data held (out of order) in it, as `__mptcp_space()` charges held data against
/// the buffer.
#[derive(Debug, Clone, PartialEq)]
pub struct Drs {
    /// `rcvq_space.space`: bytes read in the last measured interval that grew the buffer.
    pub space: u64,
    /// Window the buffer implies (`window_clamp`), bytes.
    pub window: u64,
    /// Largest window the buffer may reach: `win_from_space(tcp_rmem[2])`.
    pub window_max: u64,
    /// Bytes read since the measurement started, and when it started.
    copied: u64,
    since: Time,
    advmss: u64,
}

/// `TCP_DEFAULT_SCALING_RATIO`: window = half the buffer until the receiver has measured its
/// packets' overhead (`tcp_win_from_space()` with `scaling_ratio` 128/256).
pub fn win_from_space(space: u64) -> u64 {
    space / 2
}

impl Drs {
    /// A receiver with `tcp_rmem` and an MSS of `mss` bytes, at time `now`
    /// (`mptcp_rcv_space_init()`: space = TCP_INIT_CWND x TCP_MSS_DEFAULT, buffer tcp_rmem[1]).
    pub fn new(rmem: [u64; 3], mss: u32, now: Time) -> Drs {
        Drs {
            space: TCP_INIT_CWND * 536,
            window: win_from_space(rmem[1]),
            window_max: win_from_space(rmem[2]),
            copied: 0,
            since: now,
            advmss: mss as u64,
        }
    }

    /// The application read `bytes` at `now`; `rtt` is the receiver's RTT estimate (the largest
    /// of its subflows'). Returns true if the window grew.
    pub fn on_read(&mut self, bytes: u64, now: Time, rtt: Time) -> bool {
        self.copied += bytes;
        if rtt == Time::ZERO || now.saturating_sub(self.since) < rtt {
            return false;
        }
        let mut grew = false;
        if self.copied > self.space {
            // rcvwin = 2 x copied + 16 x advmss; grow = rcvwin x (copied - space) / space;
            // rcvwin += 2 x grow.
            let mut rcvwin = 2 * self.copied + 16 * self.advmss;
            let grow = rcvwin as u128 * (self.copied - self.space) as u128 / self.space as u128;
            rcvwin = rcvwin.saturating_add((2 * grow).min(u64::MAX as u128) as u64);
            let w = rcvwin.min(self.window_max);
            if w > self.window {
                self.window = w;
                grew = true;
            }
            self.space = self.copied;
        }
        self.copied = 0;
        self.since = now;
        grew
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(queues_empty: bool, backup: bool, stale_count: u32) -> RetransView {
        RetransView {
            active: true,
            queues_empty,
            backup,
            stale_count,
        }
    }

    #[test]
    fn wmem_per_segment_by_hand() {
        // 10 Mbit/s = 1.25e6 B/s: 1220 B per ms < 2 segments -> 2: 1448 + 768.
        assert_eq!(wmem_per_segment(1448, 1_250_000), 2216);
        // 100 Mbit/s: 12207 B per ms = 8 segments: 1448 + 192.
        assert_eq!(wmem_per_segment(1448, 12_500_000), 1640);
        // A 64 KB GSO skb at most (44 segments): 1448 + 34.
        assert_eq!(wmem_per_segment(1448, u64::MAX), 1482);
        // At the clamps' edges: 3 x 1448 B per ms (3 x 1448 x 1024 B/s) is 3 segments, 512 B
        // each; one byte a second less is 2 segments; 44 x 1448 B per ms is the most, 34 B.
        assert_eq!(wmem_per_segment(1448, 3 * 1448 * 1024), 1448 + 512);
        assert_eq!(wmem_per_segment(1448, 3 * 1448 * 1024 - 1), 1448 + 768);
        assert_eq!(wmem_per_segment(1448, 44 * 1448 * 1024 - 1), 1448 + 35);
        assert_eq!(wmem_per_segment(1448, 44 * 1448 * 1024), 1448 + 34);
        // The division it stands for, over paces from 0 to 1 Gbit/s and other segment sizes.
        for mss in [536, 1000, 1448, 8948] {
            for kbit in (0..1_000_000u64).step_by(997) {
                let pace = kbit * 125;
                let segs = ((pace >> 10) / mss as u64).clamp(2, 44);
                assert_eq!(
                    wmem_per_segment(mss, pace),
                    mss as u64 + SKB_OVERHEAD / segs
                );
            }
        }
    }

    #[test]
    fn sndbuf_by_hand() {
        assert_eq!(per_mss(1448), 4352);
        // cwnd 100: 2 x 100 x 4352 = 870400; cwnd 3 counts as 10: 87040; capped by wmem[2].
        assert_eq!(sndbuf_target(100, 1448, 4_194_304), 870_400);
        assert_eq!(sndbuf_target(3, 1448, 4_194_304), 87_040);
        assert_eq!(sndbuf_target(1000, 1448, 4_194_304), 4_194_304);
    }

    #[test]
    fn retransmission_only_on_an_empty_subflow() {
        // a busy (queue not empty), b dead: nothing may carry the retransmission.
        assert_eq!(
            pick_retrans(&[v(false, false, 0), v(false, false, 3)]),
            None
        );
        // a drained: a.
        assert_eq!(
            pick_retrans(&[v(true, false, 0), v(false, false, 3)]),
            Some(0)
        );
        // The first empty regular subflow wins over an earlier empty backup.
        assert_eq!(
            pick_retrans(&[v(true, true, 0), v(false, false, 2), v(true, false, 0)]),
            Some(2)
        );
        // Only a backup is empty: used when no busy subflow progressed (least stale_count 2),
        // not when one did (1).
        assert_eq!(
            pick_retrans(&[v(true, true, 0), v(false, false, 2)]),
            Some(0)
        );
        assert_eq!(
            pick_retrans(&[v(true, true, 0), v(false, false, 2), v(false, false, 1)]),
            None
        );
        // An inactive subflow is never picked.
        let mut dead = v(true, false, 0);
        dead.active = false;
        assert_eq!(pick_retrans(&[dead, v(false, false, 0)]), None);
    }

    #[test]
    fn stale_after_stale_loss_cnt_intervals_with_an_alternative() {
        // stale_loss_cnt 4: stale once stale_count is 5, if another subflow's count is below 3.
        let subs = [v(false, false, 0), v(false, false, 4)];
        assert!(!becomes_stale(&subs, 1, 4));
        let subs = [v(false, false, 2), v(false, false, 5)];
        assert!(becomes_stale(&subs, 1, 4));
        let subs = [v(false, false, 3), v(false, false, 5)];
        assert!(
            !becomes_stale(&subs, 1, 4),
            "no alternative out of loss state"
        );
        // stale_loss_cnt 1: max(0, 1) = 1: the alternative must have stale_count 0.
        assert!(becomes_stale(
            &[v(false, false, 0), v(false, false, 2)],
            1,
            1
        ));
        assert!(!becomes_stale(
            &[v(false, false, 1), v(false, false, 2)],
            1,
            1
        ));
        assert!(!becomes_stale(&subs, 1, 0), "0 disables the rule");
    }

    #[test]
    fn rtx_interval_by_hand() {
        let ms = Time::from_ms;
        // Longest time left among subflows not in loss state; a stale one does not count.
        assert_eq!(
            rtx_interval([(Some(ms(120)), 0), (Some(ms(900)), 2), (Some(ms(300)), 0)]),
            ms(300)
        );
        assert_eq!(rtx_interval([(None, 0), (Some(ms(900)), 1)]), TCP_RTO_MIN);
        assert_eq!(rtx_interval([]), TCP_RTO_MIN);
    }

    #[test]
    fn autotuned_window_after_given_reads() {
        let ms = Time::from_ms;
        // tcp_rmem 4096 131072 33554432, MSS 1448: window 65536 at first; space 5360.
        let mut d = Drs::new([4096, 131_072, 33_554_432], 1448, Time::ZERO);
        assert_eq!((d.window, d.space), (65_536, 5_360));
        // Reads within one RTT (100 ms) do not measure.
        assert!(!d.on_read(20_000, ms(50), ms(100)));
        // At 100 ms: copied 40000 > 5360: rcvwin = 80000 + 23168 = 103168;
        // grow = 103168 x 34640 / 5360 = 666742; rcvwin = 103168 + 1333484 = 1436652.
        assert!(d.on_read(20_000, ms(100), ms(100)));
        assert_eq!((d.window, d.space), (1_436_652, 40_000));
        // Next RTT reads 30000 (less): no growth, space kept.
        assert!(!d.on_read(30_000, ms(200), ms(100)));
        assert_eq!((d.window, d.space), (1_436_652, 40_000));
        // 400000 in one RTT: rcvwin = 823168, grow = 823168 x 360000 / 40000 = 7408512,
        // rcvwin = 15640192: below the cap (16777216).
        assert!(d.on_read(400_000, ms(300), ms(100)));
        assert_eq!(d.window, 15_640_192);
        // Never above win_from_space(tcp_rmem[2]) = 16777216.
        assert!(d.on_read(4_000_000, ms(400), ms(100)));
        assert_eq!(d.window, 16_777_216);
    }
}
