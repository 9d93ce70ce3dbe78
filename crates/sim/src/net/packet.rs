//! The packet: a small `Copy` value that lives in link queues and pipes (never boxed), so the hot
//! path does not allocate. It carries its route (an index into the world's route table) and the
//! hop it is at, as in htsim: a route is a list of link directions ending at an endpoint.

use railpath_core::Time;

/// Data segment or pure ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    #[default]
    Data,
    Ack,
}

/// At most this many SACK blocks fit in an ACK (RFC 2018 with the timestamp option: 3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// Flag bits.
pub mod flags {
    /// A retransmission (for statistics only; the receiver cannot tell).
    pub const RETRANS: u8 = 1;
    /// MPTCP MP_PRIO option on this packet: the sending end asks the peer to treat the subflow it
    /// travels on as backup (with `BACKUP`) or regular (without). RFC 8684 section 3.3.8.
    pub const MP_PRIO: u8 = 2;
    pub const BACKUP: u8 = 4;
    /// Zero-window probe / window update only (no data).
    pub const WINDOW_UPDATE: u8 = 8;
}

/// A packet. Fields are ordered to pack into 96 bytes: packets are copied at every hop.
/// Segment numbers travel as 32-bit values (as TCP sequence numbers do); endpoints keep 64-bit
/// counters and read a packet's numbers back near them ([`unwrap_seg`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Packet {
    /// Index into the world's route table.
    pub route: u32,
    /// Data: subflow-level segment number. ACK: unused.
    pub seq: u32,
    /// ACK: cumulative acknowledgement (next expected segment).
    pub ack: u32,
    /// ACK: advertised receive window, bytes (saturating).
    pub rwnd: u32,
    /// ACK: SACK blocks [start, end) in segments, most recent first.
    pub sack: [(u32, u32); MAX_SACK_BLOCKS],
    /// Bytes on the wire (headers included).
    pub size: u16,
    /// Data: payload bytes.
    pub len: u16,
    /// Position along the route.
    pub hop: u16,
    pub kind: Kind,
    pub flags: u8,
    pub nsack: u8,
    /// Data: data-level sequence number (MPTCP DSN, in segments); equal to `seq` for TCP.
    /// MP_PRIO ACKs: the index of the subflow the option refers to (RFC 8684 AddrID).
    pub dsn: u64,
    /// ACK: MPTCP data-level cumulative ACK (next expected DSN); 0 for TCP.
    pub data_ack: u64,
    /// Timestamp option TSval (RFC 7323): the sender's clock when sent.
    pub ts: Time,
    /// ACK: echoed TSval (TSecr).
    pub ts_ecr: Time,
    /// When the packet entered its current link queue (queueing-delay statistics).
    pub enq: Time,
}

impl Packet {
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.nsack as usize]
    }

    /// Saturating conversion of a window in bytes to the 32-bit field.
    pub fn window(bytes: u64) -> u32 {
        bytes.min(u32::MAX as u64) as u32
    }
}

/// The 64-bit segment number whose low 32 bits are `v` and which lies nearest `near`, the
/// reader's own 64-bit counter (`rcv_nxt`, `snd_una`): segment numbers travel modulo 2^32, as
/// TCP's sequence numbers do, and are compared in that arithmetic (RFC 9293 section 3.4; Linux
/// `before()`/`after()` in include/net/tcp.h); the capture analysis widens MPTCP's 4-octet DSNs
/// and data ACKs with it too (RFC 8684 section 3.3.1: they are the low bits of the 64-bit
/// sequence space). Exact whenever the true number is within 2^31 of
/// `near`, which a window (at most 2^30 bytes, far fewer segments) guarantees: a flow may send
/// any number of segments, not only 2^32 (6.2 TB at 1448 bytes, which one 100 Gbit/s flow sends
/// in under nine simulated minutes). Below 2^31 it is the plain widening, so runs that never get
/// there are unchanged.
#[inline(always)]
pub fn unwrap_seg(v: u32, near: u64) -> u64 {
    near.wrapping_add(v.wrapping_sub(near as u32) as i32 as i64 as u64)
}

#[cfg(test)]
mod tests {
    use super::unwrap_seg;

    #[test]
    fn unwrap_seg_is_the_nearest_number_with_those_low_bits() {
        // Below 2^31 it is the widening.
        assert_eq!(unwrap_seg(0, 0), 0);
        assert_eq!(unwrap_seg(7, 3), 7);
        assert_eq!(unwrap_seg(3, 7), 3);
        // Across the first wrap: 2^32 - 2 is near 2^32 + 1, and 1 near 2^32 - 2.
        let w = 1u64 << 32;
        assert_eq!(unwrap_seg((w - 2) as u32, w + 1), w - 2);
        assert_eq!(unwrap_seg(1, w - 2), w + 1);
        assert_eq!(unwrap_seg(0, w - 1), w);
        // Far into the run: the fifth wrap, 100 below and 100 above.
        let n = 5 * w + 50;
        assert_eq!(unwrap_seg((n - 100) as u32, n), n - 100);
        assert_eq!(unwrap_seg((n + 100) as u32, n), n + 100);
        // The capture analysis's MPTCP cases: a 4-octet DSN near its 64-bit neighbour, and just
        // past a wrap of the low 32 bits either way.
        assert_eq!(unwrap_seg(5, 0x1_0000_0003), 0x1_0000_0005);
        assert_eq!(unwrap_seg(2, 0x1_ffff_fff0), 0x2_0000_0002);
        assert_eq!(unwrap_seg(0xffff_fff0, 0x2_0000_0002), 0x1_ffff_fff0);
        // The limit: 2^31 - 1 above and 2^31 below are still exact.
        assert_eq!(unwrap_seg((n + (1 << 31) - 1) as u32, n), n + (1 << 31) - 1);
        assert_eq!(unwrap_seg((n - (1 << 31)) as u32, n), n - (1 << 31));
    }

    #[test]
    fn packet_is_96_bytes() {
        assert_eq!(std::mem::size_of::<super::Packet>(), 96);
    }
}
