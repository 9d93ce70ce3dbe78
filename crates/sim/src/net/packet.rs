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

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Packet {
    /// Index into the world's route table.
    pub route: u32,
    /// Position along the route.
    pub hop: u16,
    pub kind: Kind,
    pub flags: u8,
    /// Bytes on the wire (headers included).
    pub size: u32,
    /// Data: subflow-level segment number. ACK: unused.
    pub seq: u64,
    /// Data: payload bytes.
    pub len: u32,
    /// Data: data-level sequence number (MPTCP DSN, in segments); equal to `seq` for TCP.
    pub dsn: u64,
    /// Timestamp option TSval (RFC 7323): the sender's clock when sent.
    pub ts: Time,
    /// ACK: echoed TSval (TSecr).
    pub ts_ecr: Time,
    /// ACK: cumulative acknowledgement (next expected segment).
    pub ack: u64,
    /// ACK: SACK blocks [start, end) in segments, most recent first.
    pub sack: [(u64, u64); MAX_SACK_BLOCKS],
    pub nsack: u8,
    /// ACK: advertised receive window, bytes.
    pub rwnd: u64,
    /// ACK: MPTCP data-level cumulative ACK (next expected DSN); 0 for TCP.
    pub data_ack: u64,
    /// When the packet entered its current link queue (queueing-delay statistics).
    pub enq: Time,
}

impl Packet {
    pub fn sack_blocks(&self) -> &[(u64, u64)] {
        &self.sack[..self.nsack as usize]
    }
}
