//! MPTCP (RFC 8684 semantics): subflows that are TCP senders/receivers from `crate::tcp`, a
//! data-level sequence space with a shared, bounded receive buffer, schedulers and coupled
//! congestion control.

pub mod cc;
pub(crate) mod connection;
pub mod linux;
pub mod sched;

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
pub(crate) mod harness;
