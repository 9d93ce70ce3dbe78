//! The TCP receiver: in-order delivery, an out-of-order store, SACK blocks and delayed ACKs.
//!
//! - SACK blocks, RFC 2018 section 4: the first block holds the most recently received segment;
//!   the others repeat the most recently reported blocks; at most 3 with timestamps.
//! - Timestamps, RFC 7323 section 4.3: TS.Recent is taken from the segment at the left edge of
//!   the window, so a delayed ACK echoes the earlier of the two segments it covers and an ACK for
//!   a retransmission that fills a hole echoes the retransmission.
//! - Delayed ACKs, RFC 1122 4.2.3.2 / RFC 5681 4.2 as Linux `__tcp_ack_snd_check()`: an ACK for
//!   every second full segment or after the delayed-ACK timeout (40 ms, Linux's minimum ATO); an
//!   immediate ACK for out-of-order data, for data that fills a hole, and for duplicates. Linux's
//!   quick-ACK mode at connection start is not modelled.
//! - Receive window: the configured buffer, relative to rcv_nxt; data held out of order lies
//!   inside it (the application reads in-order data at once, and Linux never moves the right
//!   edge of an offered window left), so held data never exceeds the buffer.
//!
//! The receiver hands every in-order segment to its owner with its data-level sequence number, so
//! an MPTCP connection can reassemble at the data level; the owner builds and may rewrite each
//! ACK (data ACK, shared window, held ACKs), which is where receiver-side mechanisms hook in.

use crate::net::packet::{Kind, Packet, MAX_SACK_BLOCKS};
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
}

impl TcpReceiver {
    pub fn new(cfg: ReceiverConfig) -> TcpReceiver {
        TcpReceiver {
            cfg,
            rcv_nxt: 0,
            ooo: VecDeque::with_capacity(256),
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
        }
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
        let seq = p.seq as u64;
        if seq < self.rcv_nxt {
            self.duplicates += 1;
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
            if had_ooo || !self.cfg.delayed_ack {
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
        // Out of order.
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
        }
        self.ack_now()
    }

    fn ack_now(&mut self) -> AckDecision {
        self.unacked = 0;
        self.delack_deadline = None;
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

    /// RFC 2018: the block with `seq` first, then earlier blocks not covered by it.
    fn report_block(&mut self, seq: u64) {
        let first = self.range_of(seq);
        let mut out = [(0u64, 0u64); MAX_SACK_BLOCKS];
        out[0] = first;
        let mut n = 1;
        for i in 0..self.nblocks {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            let (s, _) = self.blocks[i];
            if s < self.rcv_nxt {
                continue;
            }
            // Report the block's current extent (it may have grown).
            let cur = self.range_of(s);
            if cur.0 >= first.0 && cur.1 <= first.1 || out[..n].contains(&cur) {
                continue;
            }
            out[n] = cur;
            n += 1;
        }
        self.blocks = out;
        self.nblocks = n;
    }

    /// Drop blocks now below rcv_nxt (and refresh the rest).
    fn prune_blocks(&mut self) {
        if self.nblocks == 0 {
            return; // the common case: nothing was held out of order
        }
        let mut out = [(0u64, 0u64); MAX_SACK_BLOCKS];
        let mut n = 0;
        for i in 0..self.nblocks {
            let (s, _) = self.blocks[i];
            if s < self.rcv_nxt
                || (s - self.rcv_nxt) as usize >= self.ooo.len()
                || self.ooo[(s - self.rcv_nxt) as usize].is_none()
            {
                continue;
            }
            let cur = self.range_of(s);
            if !out[..n].contains(&cur) {
                out[n] = cur;
                n += 1;
            }
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
}
