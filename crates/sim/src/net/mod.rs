//! Packets, links and routes: the network part of the world, separate from the flows so that an
//! endpoint can send while the world holds it mutably.

pub mod link;
pub mod packet;

use crate::engine::{Event, Scheduler};
use link::{LinkDir, Wake};
use packet::Packet;
use railpath_core::Time;

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
    /// The endpoint the route ends at.
    Sink(Endpoint),
}

/// The network: event scheduler, link directions and the route table.
#[derive(Debug)]
pub struct Net {
    pub sched: Scheduler,
    pub dirs: Vec<LinkDir>,
    pub routes: Vec<Vec<Hop>>,
}

impl Net {
    pub fn new() -> Net {
        Net {
            sched: Scheduler::new(),
            dirs: Vec::new(),
            routes: Vec::new(),
        }
    }

    #[inline]
    pub fn now(&self) -> Time {
        self.sched.now()
    }

    /// Add a route; returns its index.
    pub fn add_route(&mut self, hops: Vec<Hop>) -> u32 {
        self.routes.push(hops);
        (self.routes.len() - 1) as u32
    }

    /// Send a packet from its route's start. (Every route starts at a link; a route that started
    /// at its sink would deliver nothing.)
    #[inline]
    pub fn send(&mut self, mut p: Packet) {
        p.hop = 0;
        if let Hop::Dir(d) = self.hop_of(&p) {
            self.enqueue(d, p);
        }
    }

    /// The hop a packet is at.
    #[inline]
    fn hop_of(&self, p: &Packet) -> Hop {
        self.routes[p.route as usize][p.hop as usize]
    }

    /// Offer a packet to link direction `d`, starting its server if idle.
    #[inline]
    fn enqueue(&mut self, d: u32, p: Packet) {
        let now = self.sched.now();
        if let Wake::Service(t) = self.dirs[d as usize].enqueue(p, now) {
            self.sched.at(t, Event::LinkService { dir: d });
        }
    }

    /// Serve a link direction (the `LinkService` event).
    pub fn service(&mut self, d: u32) {
        let now = self.sched.now();
        let (wake, arm) = self.dirs[d as usize].service(now);
        if let Wake::Service(t) = wake {
            self.sched.at(t, Event::LinkService { dir: d });
        }
        if let Some(t) = arm {
            self.sched.at(t, Event::LinkArrival { dir: d });
        }
    }

    /// Whether a `LinkArrival` event for `d` is the armed one (see `LinkDir::take_arrival_event`).
    pub fn take_arrival_event(&mut self, d: u32) -> bool {
        let now = self.sched.now();
        self.dirs[d as usize].take_arrival_event(now)
    }

    /// The packets arriving at the far end of `d` now, in order: each moves on to its next hop,
    /// a link (enqueued) or the endpoint its route ends at (`sink(net, endpoint, packet)`).
    /// Re-arms the arrival event when the pipe still holds packets. A packet is moved out of the
    /// pipe once and handed to the sink by reference.
    #[inline]
    pub fn arrivals(&mut self, d: u32, mut sink: impl FnMut(&mut Net, Endpoint, &Packet)) {
        let now = self.sched.now();
        loop {
            match self.dirs[d as usize].arrival_due(now) {
                Ok(true) => {}
                Ok(false) => return,
                Err(t) => {
                    self.sched.at(t, Event::LinkArrival { dir: d });
                    return;
                }
            }
            let Some(mut p) = self.dirs[d as usize].take_arrival() else {
                return;
            };
            p.hop += 1;
            match self.hop_of(&p) {
                Hop::Dir(next) => self.enqueue(next, p),
                Hop::Sink(e) => sink(self, e, &p),
            }
        }
    }

    pub fn outage_start(&mut self, d: u32, until: Time) {
        let now = self.sched.now();
        self.dirs[d as usize].outage_start(now, until);
    }

    pub fn outage_end(&mut self, d: u32) {
        let now = self.sched.now();
        let (wake, arm) = self.dirs[d as usize].outage_end(now);
        if let Wake::Service(t) = wake {
            self.sched.at(t, Event::LinkService { dir: d });
        }
        if let Some(t) = arm {
            self.sched.at(t, Event::LinkArrival { dir: d });
        }
    }
}

impl Default for Net {
    fn default() -> Self {
        Net::new()
    }
}
