//! Packets, links and routes: the network part of the world, separate from the flows so that an
//! endpoint can send while the world holds it mutably.

pub mod bond;
pub mod link;
pub mod minstrel;
pub mod packet;
pub mod ring;
mod route;
pub mod wifi;
pub mod wifi_phy;

use crate::engine::{Event, Scheduler};
use link::{LinkDir, Wake};
use packet::Packet;
use railpath_core::Time;
pub use route::{Endpoint, Hop, Side};

/// A change of a link's conditions at a point in time (a schedule step, an outage, a carrier's
/// radio, a vertical handoff's release): the world applies a link's steps in time order with
/// [`Net::apply_step`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepAction {
    /// Data-direction rate, bit/s.
    Rate(u64),
    /// Data-direction base one-way delay.
    Delay(Time),
    /// Data-direction random loss probability.
    Loss(f64),
    /// Both directions stop delivering until the given time.
    OutageStart(Time),
    OutageEnd,
    /// A failure during the outage in progress: both directions lose what they hold and what
    /// reaches them until it ends (no forwarding).
    DropQueue,
    /// Radio model: delay added to both directions (weak signal).
    ExtraDelay(Time),
    /// Radio model: loss probability added in the data direction (weak signal).
    ExtraLoss(f64),
}

/// A capture point at both ends of every link direction (a packet capture, `railpath run
/// --pcap`): told of each packet offered to a direction's queue and of each packet leaving its
/// far end, in simulated-time order. Link `i`'s data direction is `dir` `2 i`, its reverse
/// `2 i + 1` (the order `World::build` makes them in); `to` is the endpoint the packet's route
/// ends at. The network holds at most one ([`Net::set_tap`]); without one, no loop a packet
/// runs has more than a test of the tap (docs/performance.md).
pub trait PacketTap {
    /// `p` is offered to `dir`'s queue at `now`: the host (or hop) at the near end sent it onto
    /// the link, whether the queue then keeps or drops it.
    fn enter(&mut self, now: Time, dir: u32, to: Endpoint, p: &Packet);
    /// `p` leaves `dir` at its far end at `now`.
    fn leave(&mut self, now: Time, dir: u32, to: Endpoint, p: &Packet);
    /// The run ended at `now`; nothing more will come.
    fn end(&mut self, _now: Time) {}
}

/// The network: event scheduler, link directions and the route table.
pub struct Net {
    pub sched: Scheduler,
    pub dirs: Vec<LinkDir>,
    /// Tests only: the packets sent on a route that starts at its sink (no link), in order, for
    /// a test that plays the network by hand (`crate::mptcp::harness`). Not in other builds.
    #[cfg(test)]
    pub wire: Vec<Packet>,
    /// Every route's hops, one after another: a route's number is the index of its first hop,
    /// so the hop a packet is at is `hops[route + hop]`, one load from the table (a table of
    /// per-route vectors took two dependent loads, on every packet's path; docs/performance.md).
    /// Routes are only appended, and never change once added.
    hops: Vec<Hop>,
    /// Each route's first hop in `hops`, in order (routes' numbers).
    route_starts: Vec<u32>,
    pub bonds: Vec<bond::Bond>,
    /// Per link direction: whether the packets leaving it take [`Net::exits`] (it is a bond's
    /// member, or the run is tapped); set by [`Net::add_bond`] and [`Net::set_tap`]. A
    /// direction past its end is plain unless the run is tapped.
    exit_special: Vec<bool>,
    /// A packet capture, if the run has one.
    pub tap: Option<Box<dyn PacketTap>>,
}

impl std::fmt::Debug for Net {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Net")
            .field("sched", &self.sched)
            .field("dirs", &self.dirs)
            .field(
                "routes",
                &self
                    .route_starts
                    .iter()
                    .map(|&r| self.route(r))
                    .collect::<Vec<_>>(),
            )
            .field("bonds", &self.bonds)
            .field("tap", &self.tap.is_some())
            .finish()
    }
}

impl Net {
    pub fn new() -> Net {
        Net {
            sched: Scheduler::new(),
            dirs: Vec::new(),
            #[cfg(test)]
            wire: Vec::new(),
            hops: Vec::new(),
            route_starts: Vec::new(),
            bonds: Vec::new(),
            exit_special: Vec::new(),
            tap: None,
        }
    }

    #[inline]
    pub fn now(&self) -> Time {
        self.sched.now()
    }

    /// Add a route; returns its number (the index of its first hop in the flat table). A route
    /// ends at its sink, and only there: a link's queue reads the hop after the one it serves
    /// (`Net::enqueue`), which in the flat table must be the same route's.
    pub fn add_route(&mut self, mut hops: Vec<Hop>) -> u32 {
        debug_assert!(
            matches!(hops.last(), Some(Hop::Sink(_)))
                && hops.iter().filter(|h| matches!(h, Hop::Sink(_))).count() == 1,
            "a route ends at its sink, and only there: {hops:?}"
        );
        if self.tap.is_some() {
            tap_hops(&mut hops);
        }
        let start = u32::try_from(self.hops.len()).expect("fewer than 2^32 hops in all routes");
        self.hops.extend_from_slice(&hops);
        self.route_starts.push(start);
        start
    }

    /// Route `r`'s hops (`r` as [`Net::add_route`] returned it).
    pub fn route(&self, r: u32) -> &[Hop] {
        let k = self.route_starts.partition_point(|&s| s <= r);
        let end = self
            .route_starts
            .get(k)
            .map_or(self.hops.len(), |&e| e as usize);
        self.hops.get(r as usize..end).unwrap_or(&[])
    }

    /// Add a bond over link directions already added; returns its index.
    pub fn add_bond(&mut self, bond: bond::Bond) -> u32 {
        let tapped = self.tap.is_some();
        self.exit_special.resize(self.dirs.len(), tapped);
        for m in &bond.members {
            for d in [m.fwd, m.rev] {
                if let Some(f) = self.exit_special.get_mut(d as usize) {
                    *f = true;
                }
            }
        }
        self.bonds.push(bond);
        (self.bonds.len() - 1) as u32
    }

    /// Give the network a tap (before the run; routes added later are tapped as they come).
    pub fn set_tap(&mut self, tap: Box<dyn PacketTap>) {
        self.tap = Some(tap);
        self.exit_special.clear();
        self.exit_special.resize(self.dirs.len(), true);
        tap_hops(&mut self.hops);
    }

    /// Send a packet from its route's start. (Every route of a run starts at a link; a route
    /// that starts at its sink delivers nothing: in tests, the packet stays in `wire`.)
    #[inline]
    pub fn send(&mut self, mut p: Packet) {
        // The first hop; the queue's copy of the packet is told its hop (`LinkDir::push_stamped`).
        match self.hops[p.route as usize] {
            Hop::Dir(d) => self.enqueue(d, p, 0),
            Hop::Bond(b) => {
                p.hop = 0;
                self.bond_enter(b, p)
            }
            #[cfg(test)]
            Hop::Sink(_) => {
                p.hop = 0;
                self.wire.push(p)
            }
            #[cfg(not(test))]
            Hop::Sink(_) => {}
            Hop::TapDir(d) => {
                p.hop = 0;
                self.enqueue_tapped(d, p)
            }
        }
    }

    /// The connection (flow, subflow) a packet belongs to: its route's endpoint.
    fn conn_of(&self, p: &Packet) -> (u32, u16) {
        match self.route(p.route).last() {
            Some(Hop::Sink(e)) => (e.flow, e.sub),
            _ => (u32::MAX, 0),
        }
    }

    /// A packet enters bond direction `bd` (`Hop::Bond`): the bond picks a member and the
    /// packet joins that member's queue (the data-entry end's filter notes data it accepted).
    fn bond_enter(&mut self, bd: u32, p: Packet) {
        let (b, d) = ((bd / 2) as usize, (bd % 2) as usize);
        let Some(k) = self.bonds[b].pick(d) else {
            self.bonds[b].stats.no_member_drops += 1;
            return;
        };
        let m = self.bonds[b].members[k];
        let dir = if d == 0 { m.fwd } else { m.rev };
        let refused = |l: &LinkDir| l.stats.drops_overflow + l.stats.drops_outage;
        let before = refused(&self.dirs[dir as usize]);
        let (kind, seq) = (p.kind, p.seq);
        let key = if self.bonds[b].filter.is_some() && kind == packet::Kind::Data {
            Some(self.conn_of(&p))
        } else {
            None
        };
        if self.tap.is_some() {
            self.enqueue_tapped(dir, p);
        } else {
            let hop = p.hop;
            self.enqueue(dir, p, hop);
        }
        self.bonds[b].stats.sent[d][k] += 1;
        if let Some(key) = key {
            if refused(&self.dirs[dir as usize]) == before {
                if let Some(f) = &mut self.bonds[b].filter {
                    f.data(key, seq);
                }
            }
        }
    }

    /// A packet leaves bond direction `bd` at its far end: false when the filter there drops it.
    #[inline]
    fn bond_exit(&mut self, bd: u32, p: &Packet) -> bool {
        let b = (bd / 2) as usize;
        if self.bonds[b].filter.is_none() || p.kind != packet::Kind::Ack {
            return true;
        }
        let key = self.conn_of(p);
        let f = self.bonds[b].filter.as_mut().expect("checked");
        if f.drop_ack(key, p) {
            self.bonds[b].stats.filtered_acks += 1;
            false
        } else {
            true
        }
    }

    /// The hop a packet is at.
    #[inline]
    fn hop_of(&self, p: &Packet) -> Hop {
        self.hops[p.route as usize + p.hop as usize]
    }

    /// Offer a packet at position `hop` of its route to link direction `d`, starting its server
    /// if idle (the packet's own `hop` field is not read: the queue's copy is told `hop`).
    #[inline]
    fn enqueue(&mut self, d: u32, p: Packet, hop: u16) {
        let now = self.sched.now();
        // `LinkDir::enqueue`'s dispatch written out, each kind scheduling its own event: one
        // three-way match on the returned `Wake` cost the BOND bench case 0.15 % by layout.
        // Where the packet goes when it leaves this direction: the hop after `hop`.
        let next = self.hops[p.route as usize + hop as usize + 1];
        let dir = &mut self.dirs[d as usize];
        if dir.is_fixed() {
            if let Wake::Arrival(t) = dir.enqueue_fixed(p, now, hop, next) {
                self.sched.at(t, Event::LinkArrival { dir: d });
            }
        } else if let Wake::Service(t) = dir.enqueue_evented(p, now, hop, next) {
            self.sched.at(t, Event::LinkService { dir: d });
        }
    }

    /// Make every link direction that can be fixed ([`LinkDir::make_fixed`]) fixed, except
    /// the directions `dynamic` names (links with steps to come); before the run.
    pub fn fix_dirs(&mut self, dynamic: impl Fn(u32) -> bool) {
        for (i, d) in self.dirs.iter_mut().enumerate() {
            if !dynamic(i as u32) {
                d.make_fixed();
            }
        }
    }

    /// The fixed directions' departures up to `now` (inclusive: the end of a run, after every
    /// event at `now`).
    pub fn depart_all(&mut self, now: Time) {
        for d in self.dirs.iter_mut().filter(|d| d.is_fixed()) {
            d.depart(now, true);
        }
    }

    /// Events of the run so far: those the queue processed and the fixed directions'
    /// departures, each of which is a service event on a direction that is not fixed (so that
    /// the count does not depend on how a direction is simulated).
    pub fn events(&self) -> u64 {
        self.sched.processed() + self.dirs.iter().map(|d| d.departures).sum::<u64>()
    }

    #[cold]
    #[inline(never)]
    fn enqueue_tapped(&mut self, d: u32, p: Packet) {
        let (now, to) = (self.sched.now(), self.sink_of(&p));
        if let Some(t) = self.tap.as_deref_mut() {
            t.enter(now, d, to, &p);
        }
        let hop = p.hop;
        self.enqueue(d, p, hop);
    }

    /// The endpoint `p`'s route ends at.
    fn sink_of(&self, p: &Packet) -> Endpoint {
        match self.route(p.route).last() {
            Some(Hop::Sink(e)) => *e,
            // Every route ends at its sink (`World::build`).
            _ => Endpoint {
                flow: u32::MAX,
                sub: 0,
                side: Side::Receiver,
            },
        }
    }

    #[cold]
    #[inline(never)]
    fn tap_leave(&mut self, d: u32, p: &Packet) {
        let (now, to) = (self.sched.now(), self.sink_of(p));
        if let Some(t) = self.tap.as_deref_mut() {
            t.leave(now, d, to, p);
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
    ///
    /// A plain link direction (no bond member, no tap) runs a loop with nothing but the next
    /// hop to decide ([`Net::plain_arrivals`]); a bond member's or a tapped run's packets take
    /// [`Net::exits`], so that neither bonds nor taps cost plain links an instruction
    /// (docs/performance.md). The event loop calls the two itself, each with its own sink, so
    /// that the sink is inlined in both.
    pub fn arrivals(&mut self, d: u32, sink: impl FnMut(&mut Net, Endpoint, &Packet)) {
        if self.is_plain_exit(d) {
            self.plain_arrivals(d, sink)
        } else {
            self.exits(d, sink)
        }
    }

    /// Whether link direction `d`'s far end is plain: no bond's member, no tap.
    #[inline]
    pub fn is_plain_exit(&self, d: u32) -> bool {
        match self.exit_special.get(d as usize) {
            Some(&special) => !special,
            None => self.tap.is_none(),
        }
    }

    /// [`Net::arrivals`] at a plain far end ([`Net::is_plain_exit`]).
    #[inline]
    pub fn plain_arrivals(&mut self, d: u32, mut sink: impl FnMut(&mut Net, Endpoint, &Packet)) {
        let mut now = self.sched.now();
        loop {
            let (next, mut p) = match self.dirs[d as usize].arrival_due(now) {
                Ok(true) => match self.dirs[d as usize].take_arrival_next() {
                    Some(x) => x,
                    None => return,
                },
                Ok(false) => return,
                Err(t) => {
                    // The pipe's next arrival: when it is the next event, it is popped at once
                    // and handled here, as the event loop would (`Scheduler::at_or_take`).
                    if !self.sched.at_or_take(t, Event::LinkArrival { dir: d })
                        || !self.dirs[d as usize].take_arrival_event(t)
                    {
                        return;
                    }
                    now = t;
                    continue;
                }
            };
            // The next hop. A packet going on to a link is not written before the queue copies
            // it (`LinkDir::push_stamped`); the sink does not read `hop`.
            let hop = p.hop + 1;
            match next {
                Hop::Dir(next) => self.enqueue(next, p, hop),
                Hop::Bond(bd) => {
                    p.hop = hop;
                    self.bond_enter(bd, p)
                }
                Hop::Sink(e) => sink(self, e, &p),
                Hop::TapDir(next) => {
                    p.hop = hop;
                    self.enqueue_tapped(next, p)
                }
            }
        }
    }

    /// [`Net::arrivals`] at a bond member's far end or in a tapped run: the tap is told of each
    /// packet leaving, and the bond's duplicate-ACK filter may drop it.
    /// (Its next-hop match is written out as in [`Net::plain_arrivals`]: a shared
    /// `#[inline(always)]` helper cost the BOND bench case +1.2 % instructions by layout.)
    #[inline]
    pub fn exits(&mut self, d: u32, mut sink: impl FnMut(&mut Net, Endpoint, &Packet)) {
        let now = self.sched.now();
        loop {
            let Some(mut p) = self.next_arrival(d, now) else {
                return;
            };
            if self.tap.is_some() {
                self.tap_leave(d, &p);
            }
            if let Hop::Bond(bd) = self.hop_of(&p) {
                if !self.bond_exit(bd, &p) {
                    continue;
                }
            }
            let hop = p.hop + 1;
            match self.hops[p.route as usize + hop as usize] {
                Hop::Dir(next) => self.enqueue(next, p, hop),
                Hop::Bond(bd) => {
                    p.hop = hop;
                    self.bond_enter(bd, p)
                }
                Hop::Sink(e) => sink(self, e, &p),
                Hop::TapDir(next) => {
                    p.hop = hop;
                    self.enqueue_tapped(next, p)
                }
            }
        }
    }

    /// The next packet due at `d`'s far end now; none (the arrival event re-armed if the pipe
    /// holds more) when none is.
    #[inline(always)]
    fn next_arrival(&mut self, d: u32, now: Time) -> Option<Packet> {
        match self.dirs[d as usize].arrival_due(now) {
            Ok(true) => self.dirs[d as usize].take_arrival(),
            Ok(false) => None,
            Err(t) => {
                self.sched.at(t, Event::LinkArrival { dir: d });
                None
            }
        }
    }

    /// Apply one step to a link's two directions (`fwd` carries data, `rev` ACKs).
    pub fn apply_step(&mut self, fwd: u32, rev: u32, action: StepAction) {
        match action {
            StepAction::Rate(r) => self.dirs[fwd as usize].rate_bps = r,
            StepAction::Delay(d) => self.dirs[fwd as usize].base_delay = d,
            StepAction::Loss(p) => self.dirs[fwd as usize].loss = p,
            StepAction::ExtraDelay(d) => {
                self.dirs[fwd as usize].extra_delay = d;
                self.dirs[rev as usize].extra_delay = d;
            }
            StepAction::ExtraLoss(p) => self.dirs[fwd as usize].extra_loss = p,
            StepAction::OutageStart(until) => {
                self.outage_start(fwd, until);
                self.outage_start(rev, until);
            }
            StepAction::OutageEnd => {
                self.outage_end(fwd);
                self.outage_end(rev);
            }
            StepAction::DropQueue => {
                let now = self.sched.now();
                self.dirs[fwd as usize].drop_queue(now);
                self.dirs[rev as usize].drop_queue(now);
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

/// A tapped route: every `Dir` becomes `TapDir`.
fn tap_hops(hops: &mut [Hop]) {
    for h in hops {
        if let Hop::Dir(d) = *h {
            *h = Hop::TapDir(d);
        }
    }
}

impl Default for Net {
    fn default() -> Self {
        Net::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoTap;
    impl PacketTap for NoTap {
        fn enter(&mut self, _: Time, _: u32, _: Endpoint, _: &Packet) {}
        fn leave(&mut self, _: Time, _: u32, _: Endpoint, _: &Packet) {}
    }

    fn sink(flow: u32) -> Hop {
        Hop::Sink(Endpoint {
            flow,
            sub: 0,
            side: Side::Receiver,
        })
    }

    #[test]
    fn routes_are_numbered_by_their_first_hop_and_keep_their_hops() {
        let mut net = Net::new();
        let a = net.add_route(vec![Hop::Dir(0), Hop::Dir(2), sink(1)]);
        let b = net.add_route(vec![sink(2)]);
        let c = net.add_route(vec![Hop::Bond(1), sink(3)]);
        // Numbers are offsets in the flat table: 0, then 3 (after a's three hops), then 4.
        assert_eq!((a, b, c), (0, 3, 4));
        assert_eq!(net.route(a), &[Hop::Dir(0), Hop::Dir(2), sink(1)]);
        assert_eq!(net.route(b), &[sink(2)]);
        assert_eq!(net.route(c), &[Hop::Bond(1), sink(3)]);
        // A packet at hop 1 of route a is at its second link.
        let p = Packet {
            route: a,
            hop: 1,
            ..Default::default()
        };
        assert_eq!(net.hop_of(&p), Hop::Dir(2));
        assert_eq!(net.sink_of(&p).flow, 1);
        assert_eq!(net.conn_of(&Packet { route: c, ..p }), (3, 0));
        // A tap turns every link hop into a tapped one, in routes added before and after it.
        net.set_tap(Box::new(NoTap));
        let d = net.add_route(vec![Hop::Dir(5), sink(4)]);
        assert_eq!(net.route(a), &[Hop::TapDir(0), Hop::TapDir(2), sink(1)]);
        assert_eq!(net.route(c), &[Hop::Bond(1), sink(3)]);
        assert_eq!(net.route(d), &[Hop::TapDir(5), sink(4)]);
    }
}
