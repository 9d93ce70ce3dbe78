//! MPTCP packet schedulers behind one small trait, one algorithm per file.
//!
//! The connection calls [`Scheduler::pick`] whenever it has data to send (new data, or data to
//! reinject) and at least one subflow might take it. A scheduler sees a snapshot of every subflow
//! ([`SubflowInfo`]) and the connection ([`ConnInfo`]) and answers which subflow gets the next
//! segment, or to wait. A wrapper can filter subflows before the inner scheduler sees them
//! (PHA removes a subflow whose carrier is about to hand over: it sets `usable = false`).
//!
//! Conventions shared by every scheduler (as Linux `net/mptcp/` and the out-of-tree
//! multipath-tcp.org scheduler API do):
//! - a subflow with `usable == false` is never chosen;
//! - a backup subflow is chosen only when no usable non-backup subflow exists (RFC 8684 section
//!   3.3.8: "backup" means "use only if no regular subflow is available");
//! - `has_space` (in-flight below cwnd) is what "can send now" means.

use railpath_core::Time;

pub mod blest;
mod build;
mod common;
pub mod ecf;
pub mod linux_default;
pub mod minrtt;
pub mod peekaboo;
pub mod redundant;
pub mod round_robin;

pub use build::build;

/// A snapshot of one subflow for the scheduler.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SubflowInfo {
    /// Index of the subflow in the connection.
    pub id: usize,
    /// Smoothed RTT; zero before the first sample.
    pub srtt: Time,
    pub rttvar: Time,
    /// Minimum RTT seen; zero before the first sample.
    pub min_rtt: Time,
    /// Congestion window, packets.
    pub cwnd: u32,
    /// Packets in flight (Linux `tcp_packets_in_flight`).
    pub in_flight: u32,
    /// Payload bytes per segment.
    pub mss: u32,
    /// Marked backup (by either end, effective now).
    pub backup: bool,
    /// Established and not failed/stale; false also when a wrapper filtered it out.
    pub usable: bool,
    /// cwnd > in_flight (and pacing allows a packet now).
    pub has_space: bool,
    /// Pacing rate in bit/s of payload (Linux `sk_pacing_rate` x mss/size); 0 when unknown.
    pub pacing_rate_bps: u64,
    /// Payload bytes queued in the subflow's send queue and not yet acked
    /// (Linux `sk_wmem_queued` stand-in: in-flight bytes).
    pub queued_bytes: u64,
    /// Total retransmissions on this subflow so far (BLEST adapts lambda on these).
    pub retransmissions: u64,
    /// Retransmission timeouts on this subflow so far.
    pub rto_count: u64,
}

/// The connection's state as schedulers need it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ConnInfo {
    pub now: Time,
    /// Segments waiting at the connection level to be sent (unsent new data); `u64::MAX` for a
    /// bulk transfer with unlimited data.
    pub queued_segments: u64,
    /// Free space in the peer's (data-level) receive window, bytes.
    pub rcv_wnd_free: u64,
    /// Total data-level receive window (the shared receive buffer), bytes.
    pub rcv_wnd: u64,
    /// Data-level bytes in flight (sent, not data-acked).
    pub data_in_flight: u64,
    /// Payload bytes per segment.
    pub mss: u32,
}

/// A scheduler's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Send the next segment on this subflow.
    Send(usize),
    /// Hold the segment back (e.g. ECF/BLEST/Peekaboo waiting for the fast subflow).
    Wait,
}

/// Feedback a learning scheduler may use (Peekaboo; BLEST's lambda).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Feedback {
    /// A subflow-level ACK arrived on subflow `id`.
    Ack {
        id: usize,
        acked_segments: u32,
        rtt: Option<Time>,
    },
    /// A segment was retransmitted on subflow `id` (loss or timeout).
    Retransmit { id: usize },
    /// The data-level ACK advanced by `segments`.
    DataAck { segments: u64 },
}

pub trait Scheduler: Send {
    fn name(&self) -> &'static str;
    /// Pick the subflow for the next segment, or wait. Only called when at least one subflow is
    /// usable; return `Wait` if none of the usable ones can take it.
    fn pick(&mut self, subs: &[SubflowInfo], conn: &ConnInfo) -> Decision;
    /// Redundant schedulers send each segment on every subflow with space.
    fn redundant(&self) -> bool {
        false
    }
    fn feedback(&mut self, _f: &Feedback, _subs: &[SubflowInfo], _conn: &ConnInfo) {}
    /// Whether `feedback` does anything (the connection skips building it otherwise).
    fn wants_feedback(&self) -> bool {
        false
    }
}
