//! The TCP receiver: in-order delivery, an out-of-order store, SACK blocks and delayed ACKs.
//!
//! - SACK blocks, RFC 2018 section 4: the first block holds the most recently received segment;
//!   the others repeat the most recently reported blocks; at most 3 with timestamps.
//! - Timestamps, RFC 7323 section 4.3: TS.Recent is taken from the segment at the left edge of
//!   the window, so a delayed ACK echoes the earlier of the two segments it covers and an ACK for
//!   a retransmission that fills a hole echoes the retransmission.
//! - Delayed ACKs, RFC 1122 4.2.3.2 / RFC 5681 4.2 as Linux `__tcp_ack_snd_check()`: an ACK for
//!   every second full segment or after the delayed-ACK timeout (40 ms, Linux's minimum ATO); an
//!   immediate ACK for out-of-order data, for data that fills a hole, and for duplicates.
//! - Linux's quick-ACK mode and receive-window growth ([`LinuxAck`]), only where the owner turns
//!   them on (the MPTCP data receiver with an autotuned buffer, whose subflows are Linux TCP
//!   receivers): an ACK for every segment while the window the receiver offers grows toward its
//!   autotuned clamp, for the first 16 segments, and after a duplicate. A plain TCP flow's
//!   receiver (a fixed window) does not model them.
//! - Receive window: the configured buffer, relative to rcv_nxt; data held out of order lies
//!   inside it (the application reads in-order data at once, and Linux never moves the right
//!   edge of an offered window left), so held data never exceeds the buffer.
//!
//! The receiver hands every in-order segment to its owner with its data-level sequence number, so
//! an MPTCP connection can reassemble at the data level; the owner builds and may rewrite each
//! ACK (data ACK, shared window, held ACKs), which is where receiver-side mechanisms hook in.

use crate::net::packet::{unwrap_seg, Kind, Packet, MAX_SACK_BLOCKS};
use railpath_core::Time;
use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    pub mss: u32,
    pub sack: bool,
    pub delayed_ack: bool,
    pub delack_timeout: Time,
    pub rwnd_bytes: u64,
    /// Bytes of a pure ACK without SACK blocks.
    pub ack_bytes: u32,
}

impl ReceiverConfig {
    /// The receiver side of a flow's resolved TCP options.
    pub fn from_tcp(tcp: &railpath_scenario::TcpConfig) -> ReceiverConfig {
        ReceiverConfig {
            mss: tcp.mss_bytes,
            sack: tcp.sack,
            delayed_ack: tcp.delayed_ack,
            delack_timeout: Time::from_ms_f64(tcp.delack_timeout_ms),
            rwnd_bytes: tcp.receive_window_bytes,
            ack_bytes: tcp.ack_bytes,
        }
    }
}

/// Linux `TCP_MAX_QUICKACKS`: most ACKs sent at once after the first data or a duplicate.
pub const TCP_MAX_QUICKACKS: u32 = 16;

/// Linux's receiver-side quick-ACK mode and receive-window growth, for a receiver whose window
/// the owner autotunes. Sources, net/ipv4 (v6.x):
///
/// - `tcp_event_data_recv()`: the first data segment enters quick-ACK mode,
///   `tcp_incr_quickack(TCP_MAX_QUICKACKS)`: `quick = max(quick, min(max(rcv_wnd / (2 rcv_mss),
///   2), 16))`.
/// - `tcp_data_queue()`: a segment entirely below `rcv_nxt` (a duplicate) does the same
///   (`tcp_enter_quickack_mode()`).
/// - `tcp_grow_window()`: for a segment of 128 bytes or more, if `rcv_ssthresh` (the window the
///   receiver offers at most) is below `window_clamp` (the autotuned bound), it grows by
///   `min(room, max(2 advmss, 2 len))` and `quick |= 1`: the segment is ACKed at once. The
///   overhead check (`tcp_win_from_space(truesize) <= len`) is taken as passed, as it is for
///   full-sized segments once the receiver has measured its scaling ratio.
/// - `__tcp_ack_snd_check()`: in quick-ACK mode (`quick > 0`) every segment is ACKed at once.
/// - `tcp_dec_quickack_mode()` (include/net/tcp.h): each ACK sent counts one off `quick`.
/// - `__tcp_select_window()` (tcp_output.c): with less than half the space free, quick-ACK
///   mode ends (`quick = 0`); the window offered is at most `rcv_ssthresh`.
///
/// This is why Linux ACKs every segment through slow start while its autotuned window grows,
/// which makes CUBIC's HyStart ACK-train test fire (ACKs closer than 2 ms) where every other
/// segment's ACK would be too far apart (docs/models/mptcp.md, "Calibration").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinuxAck {
    /// `icsk_ack.quick`: ACKs still to send at once.
    pub quick: u32,
    /// `tp->rcv_ssthresh`, bytes: the largest window the receiver offers now.
    pub rcv_ssthresh: u64,
    /// `tp->window_clamp`, bytes: the owner's autotuned bound.
    pub window_clamp: u64,
    /// `tp->rcv_wnd`, bytes: the window last offered.
    pub rcv_wnd: u64,
    /// `tp->advmss` and `icsk_ack.rcv_mss`, bytes.
    pub mss: u64,
    /// `icsk_ack.ato != 0`: a data segment has arrived.
    started: bool,
}

impl LinuxAck {
    /// A receiver offering `window` bytes, its clamp as large (`tcp_select_initial_window()`:
    /// `rcv_ssthresh = rcv_wnd`).
    pub fn new(window: u64, mss: u32) -> LinuxAck {
        LinuxAck {
            quick: 0,
            rcv_ssthresh: window,
            window_clamp: window,
            rcv_wnd: window,
            mss: mss as u64,
            started: false,
        }
    }

    /// `tcp_incr_quickack()`.
    pub fn incr_quickack(&mut self, max_quickacks: u32) {
        let q = (self.rcv_wnd / (2 * self.mss.max(1))).min(u32::MAX as u64) as u32;
        let q = if q == 0 { 2 } else { q }.min(max_quickacks);
        self.quick = self.quick.max(q);
    }

    /// `tcp_grow_window()` for a segment of `len` payload bytes; true if the window grew.
    pub fn grow_window(&mut self, len: u64) -> bool {
        if len < 128 || self.rcv_ssthresh >= self.window_clamp {
            return false;
        }
        let room = self.window_clamp - self.rcv_ssthresh;
        self.rcv_ssthresh += room.min((2 * self.mss).max(2 * len));
        self.quick |= 1;
        true
    }

    /// An in-order data segment of `len` bytes arrived (`tcp_event_data_recv()`).
    pub fn on_in_order(&mut self, len: u64) {
        if !self.started {
            self.started = true;
            self.incr_quickack(TCP_MAX_QUICKACKS);
        }
        self.grow_window(len);
    }

    /// `tcp_dec_quickack_mode()`: an ACK was sent.
    pub fn ack_sent(&mut self) {
        self.quick = self.quick.saturating_sub(1);
    }

    /// `__tcp_select_window()`: the window to offer when `free` bytes of the receive space are
    /// free; with less than half the clamp free, quick-ACK mode ends.
    pub fn select_window(&mut self, free: u64) -> u64 {
        if free < self.window_clamp / 2 {
            self.quick = 0;
        }
        let w = free.min(self.rcv_ssthresh);
        self.rcv_wnd = w;
        w
    }
}

/// What the owner should do after a data segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckDecision {
    Now,
    /// ACK later; the delayed-ACK timer is due at this time.
    Delayed(Time),
}

pub struct TcpReceiver {
    pub cfg: ReceiverConfig,
    /// Next expected segment.
    rcv_nxt: u64,
    /// Out-of-order segments: slot i holds segment rcv_nxt + i (dsn, len, arrival time).
    ooo: VecDeque<Option<(u64, u32, Time)>>,
    ooo_bytes: u64,
    ooo_segs: usize,
    /// SACK blocks, most recent first.
    blocks: [(u64, u64); MAX_SACK_BLOCKS],
    nblocks: usize,
    ts_recent: Time,
    /// Full segments received since the last ACK.
    unacked: u32,
    delack_deadline: Option<Time>,
    /// Data segments received (including duplicates).
    pub segments_received: u64,
    pub duplicates: u64,
    /// Wake-up bookkeeping for the owner's timer.
    pub armed: Option<Time>,
    /// Linux's quick-ACK mode and window growth, where the owner turned them on.
    linux: Option<LinuxAck>,
}

impl TcpReceiver {
    pub fn new(cfg: ReceiverConfig) -> TcpReceiver {
        TcpReceiver {
            cfg,
            rcv_nxt: 0,
            ooo: VecDeque::with_capacity(16),
            ooo_bytes: 0,
            ooo_segs: 0,
            blocks: [(0, 0); MAX_SACK_BLOCKS],
            nblocks: 0,
            ts_recent: Time::ZERO,
            unacked: 0,
            delack_deadline: None,
            segments_received: 0,
            duplicates: 0,
            armed: None,
            linux: None,
        }
    }

    /// Turn on Linux's quick-ACK mode and window growth ([`LinuxAck`]).
    pub fn enable_linux_ack(&mut self, l: LinuxAck) {
        self.linux = Some(l);
    }

    /// Linux's quick-ACK and window state, if on.
    pub fn linux_ack(&mut self) -> Option<&mut LinuxAck> {
        self.linux.as_mut()
    }

    /// The same, to read.
    pub fn linux_ack_state(&self) -> Option<&LinuxAck> {
        self.linux.as_ref()
    }

    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// Bytes held out of order.
    pub fn ooo_bytes(&self) -> u64 {
        self.ooo_bytes
    }

    pub fn delack_deadline(&self) -> Option<Time> {
        self.delack_deadline
    }

    /// Segments held out of order.
    pub fn ooo_segments(&self) -> usize {
        self.ooo_segs
    }

    /// Accept a data segment; `deliver(dsn, len, arrival)` is called for every segment that
    /// becomes in-order, in order, with the time it arrived.
    pub fn on_data(
        &mut self,
        p: &Packet,
        now: Time,
        deliver: &mut impl FnMut(u64, u32, Time),
    ) -> AckDecision {
        self.segments_received += 1;
        let seq = unwrap_seg(p.seq, self.rcv_nxt);
        if seq < self.rcv_nxt {
            self.duplicates += 1;
            if let Some(l) = self.linux.as_mut() {
                l.incr_quickack(TCP_MAX_QUICKACKS);
            }
            return self.ack_now();
        }
        let had_ooo = self.ooo_bytes > 0;
        if seq == self.rcv_nxt {
            // RFC 7323: the segment at the left edge sets TS.Recent.
            if self.unacked == 0 {
                self.ts_recent = p.ts;
            }
            deliver(p.dsn, p.len as u32, now);
            self.rcv_nxt += 1;
            if !self.ooo.is_empty() {
                self.ooo.pop_front();
            }
            while let Some(Some((dsn, len, arrived))) = self.ooo.front().copied() {
                self.ooo.pop_front();
                self.ooo_bytes -= len as u64;
                self.ooo_segs -= 1;
                deliver(dsn, len, arrived);
                self.rcv_nxt += 1;
            }
            self.prune_blocks();
            let quick = match self.linux.as_mut() {
                Some(l) => {
                    l.on_in_order(p.len as u64);
                    l.quick > 0
                }
                None => false,
            };
            if had_ooo || !self.cfg.delayed_ack || quick {
                return self.ack_now();
            }
            self.unacked += 1;
            if self.unacked >= 2 {
                return self.ack_now();
            }
            let t = now + self.cfg.delack_timeout;
            self.delack_deadline = Some(t);
            return AckDecision::Delayed(t);
        }
        self.hold(p, seq, now)
    }

    /// Hold out-of-order segment `seq` and report it (out of line: the in-order path is the
    /// common one and keeps fewer registers without it).
    #[inline(never)]
    fn hold(&mut self, p: &Packet, seq: u64, now: Time) -> AckDecision {
        let off = (seq - self.rcv_nxt) as usize;
        if self.ooo.len() <= off {
            self.ooo.resize(off + 1, None);
        }
        if self.ooo[off].is_some() {
            self.duplicates += 1;
        } else {
            self.ooo[off] = Some((p.dsn, p.len as u32, now));
            self.ooo_bytes += p.len as u64;
            self.ooo_segs += 1;
        }
        if self.cfg.sack {
            self.report_block(seq);
            if let Some(l) = self.linux.as_mut() {
                // `tcp_data_queue_ofo()` grows the window too (with SACK).
                l.grow_window(p.len as u64);
            }
        }
        self.ack_now()
    }

    fn ack_now(&mut self) -> AckDecision {
        self.unacked = 0;
        self.delack_deadline = None;
        if let Some(l) = self.linux.as_mut() {
            l.ack_sent();
        }
        AckDecision::Now
    }

    /// The delayed-ACK timer: true if an ACK is due now.
    pub fn on_timer(&mut self, now: Time) -> bool {
        match self.delack_deadline {
            Some(t) if t <= now => {
                self.ack_now();
                true
            }
            _ => false,
        }
    }

    /// The contiguous out-of-order range containing `seq` (which must be held).
    fn range_of(&self, seq: u64) -> (u64, u64) {
        let off = (seq - self.rcv_nxt) as usize;
        let mut lo = off;
        while lo > 0 && self.ooo[lo - 1].is_some() {
            lo -= 1;
        }
        let mut hi = off + 1;
        while hi < self.ooo.len() && self.ooo[hi].is_some() {
            hi += 1;
        }
        (self.rcv_nxt + lo as u64, self.rcv_nxt + hi as u64)
    }

    /// [`Self::range_of`] for `seq` just held, before the stored blocks are updated: when the
    /// most recent block ends at `seq` it is the whole run below it (every stored block is its
    /// run's current extent, see [`Self::report_block`]), so only the held segments above
    /// `seq` are walked. Data arriving behind a hole extends the most recent block: without
    /// this the walk went back over the whole run for every segment.
    fn run_of_held(&self, seq: u64) -> (u64, u64) {
        let (lo, e) = self.blocks[0];
        if self.nblocks == 0 || e != seq || lo < self.rcv_nxt {
            return self.range_of(seq);
        }
        let mut hi = (seq - self.rcv_nxt) as usize + 1;
        while hi < self.ooo.len() && self.ooo[hi].is_some() {
            hi += 1;
        }
        let run = (lo, self.rcv_nxt + hi as u64);
        debug_assert_eq!(run, self.range_of(seq));
        run
    }

    /// RFC 2018: the block with `seq` first, then earlier blocks not covered by it.
    ///
    /// Every stored block is the whole run of held segments it starts (its current extent):
    /// holding `seq` changes no run but the ones it joins, which then start inside `seq`'s run,
    /// and in-order delivery removes runs only from below (see [`Self::prune_blocks`]). So an
    /// earlier block either starts inside `first` (covered by it) or is reported as stored;
    /// only `seq`'s run is walked.
    fn report_block(&mut self, seq: u64) {
        let first = self.run_of_held(seq);
        let mut out = [(0u64, 0u64); MAX_SACK_BLOCKS];
        out[0] = first;
        let mut n = 1;
        for i in 0..self.nblocks {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            let (s, e) = self.blocks[i];
            if s < self.rcv_nxt {
                continue;
            }
            // Report the block's current extent (it may have grown into `first`).
            let cur = if first.0 <= s && s < first.1 {
                first
            } else {
                (s, e)
            };
            debug_assert_eq!(cur, self.range_of(s));
            if cur.0 >= first.0 && cur.1 <= first.1 || out[..n].contains(&cur) {
                continue;
            }
            out[n] = cur;
            n += 1;
        }
        self.blocks = out;
        self.nblocks = n;
    }

    /// Drop blocks now below rcv_nxt. In-order delivery pops the run it completes whole and
    /// leaves rcv_nxt's slot empty, so every block at or above rcv_nxt keeps its extent (and
    /// its start is held): the others are kept as they are, in order.
    fn prune_blocks(&mut self) {
        if self.nblocks == 0 {
            return; // the common case: nothing was held out of order
        }
        let mut out = [(0u64, 0u64); MAX_SACK_BLOCKS];
        let mut n = 0;
        for &(s, e) in &self.blocks[..self.nblocks] {
            if s < self.rcv_nxt {
                continue;
            }
            debug_assert_eq!((s, e), self.range_of(s));
            out[n] = (s, e);
            n += 1;
        }
        self.blocks = out;
        self.nblocks = n;
    }

    /// Advertised receive window in bytes (relative to rcv_nxt; see the module notes).
    pub fn rwnd(&self) -> u64 {
        self.cfg.rwnd_bytes
    }

    /// Build a pure ACK on `route` (the owner may still rewrite window and data ACK).
    pub fn build_ack(&self, route: u32) -> Packet {
        let mut p = Packet {
            route,
            kind: Kind::Ack,
            ack: self.rcv_nxt as u32,
            ts_ecr: self.ts_recent,
            rwnd: Packet::window(self.rwnd()),
            size: self.cfg.ack_bytes as u16,
            ..Default::default()
        };
        if self.cfg.sack && self.nblocks > 0 {
            for (i, &(a, b)) in self.blocks[..self.nblocks].iter().enumerate() {
                p.sack[i] = (a as u32, b as u32);
            }
            p.nsack = self.nblocks as u8;
            // SACK option: 2 bytes kind/length + 8 per block, padded to 4 (RFC 2018).
            p.size += 4 + 8 * self.nblocks as u16;
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx(delayed: bool) -> TcpReceiver {
        TcpReceiver::new(ReceiverConfig {
            mss: 1000,
            sack: true,
            delayed_ack: delayed,
            delack_timeout: Time::from_ms(40),
            rwnd_bytes: 100_000,
            ack_bytes: 52,
        })
    }

    fn seg(seq: u64, ts_ms: u64) -> Packet {
        Packet {
            seq: seq as u32,
            dsn: seq,
            len: 1000,
            ts: Time::from_ms(ts_ms),
            ..Default::default()
        }
    }

    #[test]
    fn segment_numbers_carry_on_across_2_32() {
        // A receiver that has taken 2^32 - 2 segments in order: the next ones arrive numbered
        // 4294967294, 4294967295, 0, 1 on the wire and are the next in order, not old
        // duplicates (before the numbers were unwrapped, a flow stalled there for good).
        let w = 1u64 << 32;
        let mut r = rx(false);
        r.rcv_nxt = w - 2;
        let mut got = Vec::new();
        for seg in w - 2..w + 2 {
            let p = Packet {
                seq: seg as u32,
                dsn: seg,
                len: 1000,
                ..Default::default()
            };
            assert_eq!(
                r.on_data(&p, Time::from_ms(1), &mut |s, _, _| got.push(s)),
                AckDecision::Now
            );
        }
        assert_eq!(got, vec![w - 2, w - 1, w, w + 1]);
        assert_eq!((r.rcv_nxt, r.duplicates), (w + 2, 0));
        // The ACK carries 2^32 + 2 as 2; a segment sent again from before the wrap is a
        // duplicate.
        assert_eq!(r.build_ack(0).ack, 2);
        let old = Packet {
            seq: (w - 1) as u32,
            len: 1000,
            ..Default::default()
        };
        r.on_data(&old, Time::from_ms(2), &mut |s, _, _| got.push(s));
        assert_eq!((got.len(), r.duplicates), (4, 1));
    }

    #[test]
    fn delayed_ack_every_second_segment_echoing_the_first() {
        let mut r = rx(true);
        let mut got = Vec::new();
        let d = r.on_data(&seg(0, 1), Time::from_ms(10), &mut |s, _, _| got.push(s));
        assert_eq!(d, AckDecision::Delayed(Time::from_ms(50)));
        let d = r.on_data(&seg(1, 2), Time::from_ms(11), &mut |s, _, _| got.push(s));
        assert_eq!(d, AckDecision::Now);
        let a = r.build_ack(0);
        assert_eq!((a.ack, a.ts_ecr), (2, Time::from_ms(1)));
        assert_eq!(got, vec![0, 1]);
        // A lone segment is acked by the timer.
        r.on_data(&seg(2, 3), Time::from_ms(20), &mut |_, _, _| {});
        assert!(!r.on_timer(Time::from_ms(59)));
        assert!(r.on_timer(Time::from_ms(60)));
    }

    #[test]
    fn sack_blocks_most_recent_first() {
        let mut r = rx(true);
        let mut got = Vec::new();
        r.on_data(&seg(0, 0), Time::ZERO, &mut |s, _, _| got.push(s));
        // Segments 2, 3 arrive (1 lost), then 6, then 4.
        for s in [2, 3, 6, 4] {
            assert_eq!(
                r.on_data(&seg(s, 0), Time::ZERO, &mut |s, _, _| got.push(s)),
                AckDecision::Now
            );
        }
        let a = r.build_ack(0);
        assert_eq!(a.ack, 1);
        assert_eq!(a.sack_blocks(), &[(2, 5), (6, 7)]);
        assert_eq!(a.size, 52 + 4 + 16);
        assert_eq!(r.rwnd(), 100_000);
        assert_eq!((r.ooo_bytes(), r.ooo_segments()), (4000, 4));
        // The retransmission of 1 fills the hole: 1..5 delivered, block (6,7) remains.
        r.on_data(&seg(1, 9), Time::ZERO, &mut |s, _, _| got.push(s));
        let a = r.build_ack(0);
        assert_eq!(a.ack, 5);
        assert_eq!(
            a.ts_ecr,
            Time::from_ms(9),
            "echoes the hole-filling retransmission"
        );
        assert_eq!(a.sack_blocks(), &[(6, 7)]);
        assert_eq!(got, vec![0, 1, 2, 3, 4]);
    }

    #[test]
    fn blocks_grow_join_and_drop() {
        // Runs grow into the newest block and join; earlier blocks keep their extent; delivery
        // drops the runs it completes. Expected lists by hand (RFC 2018 section 4).
        let mut r = rx(true);
        r.on_data(&seg(0, 0), Time::ZERO, &mut |_, _, _| {});
        let steps: [(u64, &[(u32, u32)]); 8] = [
            (2, &[(2, 3)]),
            (5, &[(5, 6), (2, 3)]),
            (7, &[(7, 8), (5, 6), (2, 3)]),
            (3, &[(2, 4), (7, 8), (5, 6)]),
            (6, &[(5, 8), (2, 4)]),
            (4, &[(2, 8)]),
            (10, &[(10, 11), (2, 8)]),
            (1, &[(10, 11)]),
        ];
        for (s, want) in steps {
            r.on_data(&seg(s, 0), Time::ZERO, &mut |_, _, _| {});
            assert_eq!(r.build_ack(0).sack_blocks(), want, "after segment {s}");
        }
        assert_eq!(r.rcv_nxt(), 8);
    }

    #[test]
    fn blocks_are_whole_runs_under_scrambled_arrivals() {
        // Every reported block is a whole run of held segments above rcv_nxt (what
        // report_block and prune_blocks rely on instead of rescanning), whatever the order.
        let mut r = rx(true);
        let mut x = 12345u64;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let s = r.rcv_nxt() + (x >> 33) % 12;
            r.on_data(&seg(s, 0), Time::ZERO, &mut |_, _, _| {});
            let a = r.build_ack(0);
            for &(lo, hi) in a.sack_blocks() {
                let (lo, hi) = (lo as u64, hi as u64);
                assert!(lo > r.rcv_nxt() && lo < hi);
                let held = |q: u64| {
                    q >= r.rcv_nxt()
                        && r.ooo
                            .get((q - r.rcv_nxt()) as usize)
                            .is_some_and(|x| x.is_some())
                };
                assert!((lo..hi).all(held) && !held(lo - 1) && !held(hi));
            }
        }
    }

    #[test]
    fn at_most_three_blocks() {
        let mut r = rx(false);
        for s in [2, 4, 6, 8] {
            r.on_data(&seg(s, 0), Time::ZERO, &mut |_, _, _| {});
        }
        let a = r.build_ack(0);
        assert_eq!(a.sack_blocks(), &[(8, 9), (6, 7), (4, 5)]);
    }

    #[test]
    fn duplicate_gets_immediate_ack() {
        let mut r = rx(true);
        r.on_data(&seg(0, 0), Time::ZERO, &mut |_, _, _| {});
        assert_eq!(
            r.on_data(&seg(0, 0), Time::ZERO, &mut |_, _, _| {}),
            AckDecision::Now
        );
        assert_eq!(r.duplicates, 1);
    }

    #[test]
    fn linux_quickack_counts_by_hand() {
        // tcp_incr_quickack(): rcv_wnd / (2 rcv_mss), at least 2, at most 16, never lowered.
        let mut l = LinuxAck::new(65_536, 1448);
        l.incr_quickack(TCP_MAX_QUICKACKS);
        assert_eq!(l.quick, 16, "65536 / 2896 = 22, capped at 16");
        let mut l = LinuxAck::new(20_000, 1448);
        l.incr_quickack(TCP_MAX_QUICKACKS);
        assert_eq!(l.quick, 6, "20000 / 2896 = 6");
        l.quick = 10;
        l.incr_quickack(TCP_MAX_QUICKACKS);
        assert_eq!(l.quick, 10, "never lowered");
        let mut l = LinuxAck::new(1_000, 1448);
        l.incr_quickack(TCP_MAX_QUICKACKS);
        assert_eq!(l.quick, 2, "a window below two segments still gets 2");
        // tcp_dec_quickack_mode(): one per ACK, not below zero.
        l.ack_sent();
        l.ack_sent();
        l.ack_sent();
        assert_eq!(l.quick, 0);
    }

    #[test]
    fn linux_window_grows_by_two_segments_and_asks_for_an_ack() {
        // rcv_ssthresh 64000, clamp 70000, 1448-byte segments: +2896, +2896, +208, then full.
        let mut l = LinuxAck::new(64_000, 1448);
        l.window_clamp = 70_000;
        assert!(l.grow_window(1448));
        assert_eq!((l.rcv_ssthresh, l.quick), (66_896, 1));
        assert!(l.grow_window(1448));
        assert_eq!(l.rcv_ssthresh, 69_792);
        l.quick = 4;
        assert!(l.grow_window(1448));
        assert_eq!(l.rcv_ssthresh, 70_000, "room 208 < 2896");
        assert_eq!(l.quick, 5, "quick |= 1 sets the low bit");
        assert!(!l.grow_window(1448), "no room left");
        assert_eq!(l.quick, 5, "no growth, no quick ACK asked for");
        // An odd count stays as it is: 5 | 1 = 5.
        l.window_clamp = 80_000;
        assert!(l.grow_window(1448));
        assert_eq!(l.quick, 5);
        // Segments under 128 bytes never grow it; a larger segment grows it by 2 len.
        let mut l = LinuxAck::new(10_000, 1000);
        l.window_clamp = 20_000;
        assert!(!l.grow_window(127));
        assert!(l.grow_window(1448));
        assert_eq!(l.rcv_ssthresh, 12_896, "max(2 x 1000, 2 x 1448)");
    }

    #[test]
    fn linux_window_offered_and_quickack_cancelled_below_half_free() {
        let mut l = LinuxAck::new(40_000, 1000);
        l.window_clamp = 100_000;
        l.quick = 3;
        // 60000 free of a 100000 clamp: offers rcv_ssthresh, keeps quick-ACK mode.
        assert_eq!(l.select_window(60_000), 40_000);
        assert_eq!((l.rcv_wnd, l.quick), (40_000, 3));
        // 49999 free (< 50000): quick-ACK mode ends; 30000 free offers 30000.
        assert_eq!(l.select_window(49_999), 40_000);
        assert_eq!(l.quick, 0);
        assert_eq!(l.select_window(30_000), 30_000);
    }

    #[test]
    fn linux_receiver_acks_the_first_16_then_every_segment_while_the_window_grows() {
        let mut r = rx(true);
        // 32000-byte window of 1000-byte segments: 16 quick ACKs (32000 / 2000 = 16).
        r.enable_linux_ack(LinuxAck::new(32_000, 1000));
        let mut t = 0;
        let mut next = |r: &mut TcpReceiver, seq: u64| {
            t += 1;
            r.on_data(&seg(seq, t), Time::from_ms(t), &mut |_, _, _| {})
        };
        for seq in 0..16 {
            assert_eq!(next(&mut r, seq), AckDecision::Now, "quick ACK {seq}");
        }
        assert_eq!(r.linux_ack().unwrap().quick, 0);
        // Then every second segment, as without the rule.
        assert!(matches!(next(&mut r, 16), AckDecision::Delayed(_)));
        assert_eq!(next(&mut r, 17), AckDecision::Now);
        // The owner's autotuning raises the clamp by 5000: three segments grow the window
        // (+2000, +2000, +1000), each ACKed at once; then every second one again.
        r.linux_ack().unwrap().window_clamp = 37_000;
        for seq in 18..21 {
            assert_eq!(next(&mut r, seq), AckDecision::Now, "growth ACK {seq}");
        }
        assert_eq!(r.linux_ack().unwrap().rcv_ssthresh, 37_000);
        assert!(matches!(next(&mut r, 21), AckDecision::Delayed(_)));
        assert_eq!(next(&mut r, 22), AckDecision::Now);
        // A duplicate re-enters quick-ACK mode (16 more, less the duplicate's own ACK).
        assert_eq!(next(&mut r, 5), AckDecision::Now);
        assert_eq!(r.linux_ack().unwrap().quick, 15);
        for seq in 23..38 {
            assert_eq!(next(&mut r, seq), AckDecision::Now, "quick ACK {seq}");
        }
        assert!(matches!(next(&mut r, 38), AckDecision::Delayed(_)));
    }

    #[test]
    fn without_the_linux_rule_the_receiver_acks_every_second_segment_from_the_start() {
        let mut r = rx(true);
        for seq in 0..6 {
            let d = r.on_data(&seg(seq, 0), Time::ZERO, &mut |_, _, _| {});
            assert_eq!(d == AckDecision::Now, seq % 2 == 1, "segment {seq}: {d:?}");
        }
    }
}
