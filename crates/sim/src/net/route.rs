//! Where a packet goes: the elements of a route (link directions, bonds, the endpoint it ends
//! at). Apart from the network's table of routes (`super::Net`) so that a link can keep a
//! packet's next hop beside it without naming the network.

/// Which end of a transport connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Sender = 0,
    Receiver = 1,
}

/// A transport endpoint packets are delivered to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub flow: u32,
    pub sub: u16,
    pub side: Side,
}

/// One element of a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// A link direction (index into `Net::dirs`).
    Dir(u32),
    /// A bond's direction: bond `b`, direction `d` (0 = data, 1 = reverse) as `2 b + d`. The
    /// packet stays at this hop while it crosses the member the bond chose.
    Bond(u32),
    /// The endpoint the route ends at.
    Sink(Endpoint),
    /// A link direction with a capture at both ends: `Net::set_tap` puts these in place of
    /// every `Dir`, so that packets on plain `Dir` hops pay nothing for taps.
    TapDir(u32),
}
