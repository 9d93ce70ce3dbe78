//! Transport flows hosted by the world. Each kind is a file of its own implementing
//! [`common::FlowOps`] (`tcp.rs`, `udp.rs`, `cars.rs`, and the MPTCP connection in
//! `crate::mptcp::connection`); [`Flow`] is the enum over them, and its one dispatch point is
//! [`each_kind!`]: a new kind is a variant here, its line in that macro, and its builder in
//! `crate::build`. The kinds share `common.rs` (the application's data, series, timers) and
//! never import this file.

pub(crate) mod cars;
pub(crate) mod common;
pub(crate) mod handoff;
pub(crate) mod tcp;
pub(crate) mod udp;

use crate::mptcp::connection::MptcpFlow;
use crate::net::packet::Packet;
use crate::net::{Net, Side};
use crate::results::{FlowSummary, Series};
use common::FlowOps;
use railpath_core::Time;

/// Every kind of flow the world hosts.
pub(crate) enum Flow {
    Tcp(Box<tcp::TcpFlow>),
    Mptcp(Box<MptcpFlow>),
    Udp(Box<udp::UdpFlow>),
    /// A car's TCP through a load balancer.
    Balanced(Box<cars::BalancedFlow>),
    /// A car behind the train router's MPTCP proxy.
    Relay(Box<cars::RelayFlow>),
}

/// `$body` with `$f` bound to the flow's kind (static dispatch: each arm calls the kind's own
/// method, which the compiler may inline into the event loop).
macro_rules! each_kind {
    ($flow:expr, $f:ident => $body:expr) => {
        match $flow {
            Flow::Tcp($f) => $body,
            Flow::Mptcp($f) => $body,
            Flow::Udp($f) => $body,
            Flow::Balanced($f) => $body,
            Flow::Relay($f) => $body,
        }
    };
}

impl Flow {
    #[inline]
    pub fn start(&mut self, net: &mut Net) {
        each_kind!(self, f => f.start(net))
    }
    #[inline(always)]
    pub fn on_packet(&mut self, sub: u16, side: Side, p: &Packet, net: &mut Net) {
        each_kind!(self, f => f.on_packet(sub, side, p, net))
    }
    #[inline]
    pub fn on_timer(&mut self, sub: u16, side: u8, net: &mut Net) {
        each_kind!(self, f => f.on_timer(sub, side, net))
    }
    pub fn control(&mut self, idx: u32, net: &mut Net) {
        each_kind!(self, f => f.control(idx, net))
    }
    pub fn sample(&mut self, width: Time) {
        each_kind!(self, f => f.sample(width))
    }
    /// The flow's summary and its time series.
    pub fn summarize(&self, end: Time, net: &Net) -> (FlowSummary, Vec<Series>) {
        each_kind!(self, f => f.summarize(end, net))
    }
}
