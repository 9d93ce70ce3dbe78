//! Single-path TCP: sender (loss recovery, RTT/RTO, pacing), receiver (SACK, delayed ACKs), and
//! congestion control behind a trait.

pub mod cc;
pub mod receiver;
mod sacked;
pub mod sender;
