//! One direction of a link: a drop-tail FIFO in front of a server (constant rate, or a Mahimahi
//! delivery-opportunity trace), followed by a propagation pipe with a fixed one-way delay.
//!
//! Model (see docs/models/links.md):
//! - The buffer limit counts the packet being serialised (as htsim's queues do).
//! - Random loss is applied when a packet leaves the server, so a lost packet still used capacity
//!   (like ns-3's receive error model).
//! - The pipe is FIFO: after a delay decrease a packet never overtakes the one before it.
//! - During an outage nothing is delivered: the server stops, and pipe arrivals due during the
//!   outage are held until it ends (`hold`, an X2 handover forwarding its buffer) or dropped with
//!   the queue (`drop`). A packet already being serialised completes serialisation.
//! - Mahimahi traces follow mahimahi's `LinkQueue`: each line is one opportunity to deliver 1500
//!   bytes; a packet larger than what is left of an opportunity continues in the next one; unused
//!   opportunities are lost; the trace repeats with period = its last timestamp.

use super::packet::Packet;
use super::ring::Ring;
use super::route::Hop;
use railpath_core::{Rng, Time};
use railpath_scenario::OutageMode;
use std::sync::Arc;

/// Bytes one Mahimahi delivery opportunity carries.
pub const MAHIMAHI_OPPORTUNITY_BYTES: u32 = 1500;

/// A direction's drop-tail limit: the scenario's type.
pub use railpath_scenario::BufferLimit as Limit;

/// A delivery-opportunity schedule.
#[derive(Debug, Clone)]
pub struct Trace {
    /// Opportunity times within one period, ms, non-decreasing.
    pub opps_ms: Arc<[u64]>,
    pub period_ms: u64,
    /// Absolute index of the next opportunity not yet consumed or skipped.
    cursor: u64,
    /// Bytes of the head packet already carried by earlier opportunities.
    head_done: u32,
}

impl Trace {
    pub fn new(opps_ms: Arc<[u64]>) -> Trace {
        let period_ms = *opps_ms.last().expect("validated non-empty trace");
        Trace {
            opps_ms,
            period_ms,
            cursor: 0,
            head_done: 0,
        }
    }
    fn time_of(&self, k: u64) -> Time {
        let n = self.opps_ms.len() as u64;
        Time::from_ms((k / n) * self.period_ms + self.opps_ms[(k % n) as usize])
    }
    /// Skip opportunities before `now`; the time of the next usable one.
    fn next_at_or_after(&mut self, now: Time) -> Time {
        while self.time_of(self.cursor) < now {
            self.cursor += 1;
        }
        self.time_of(self.cursor)
    }
    /// Mean rate of the trace, bit/s.
    pub fn mean_rate_bps(&self) -> f64 {
        self.opps_ms.len() as f64 * MAHIMAHI_OPPORTUNITY_BYTES as f64 * 8.0
            / (self.period_ms as f64 / 1e3)
    }
}

#[derive(Debug, Clone, Default)]
pub struct DirStats {
    pub forwarded: u64,
    pub forwarded_bytes: u64,
    pub drops_overflow: u64,
    pub drops_random: u64,
    pub drops_outage: u64,
    pub queue_delay_sum: Time,
    pub queue_delay_max: Time,
    pub max_queue_bytes: u64,
}

/// Most arrivals one outage keeps in its log (retransmission attempts are few: one per backed-off
/// RTO, plus probes; a sender that keeps sending into an outage is represented by its first ones).
pub const OUTAGE_LOG_ARRIVALS: usize = 64;

/// One outage of a direction as it happened, with the times packets arrived at the link while it
/// was out: a sender's retransmission schedule into a dead path (calibration against the kernel).
#[derive(Debug, Clone, PartialEq)]
pub struct OutageLog {
    pub start: Time,
    pub until: Time,
    /// Arrival times (absolute), at most [`OUTAGE_LOG_ARRIVALS`].
    pub arrivals: Vec<Time>,
}

/// A packet a direction holds, with its arrival time (in the pipe; the `LOST` bit for a fixed
/// direction's packet lost at the server) and the hop of its route it goes to when it arrives,
/// looked up when it was enqueued (the route's hops are adjacent there, and the arrival then
/// needs no lookup in the route table).
#[derive(Debug, Clone, Copy)]
struct Slot {
    t: Time,
    next: Hop,
    p: Packet,
}

/// The next hop of a packet enqueued without one ([`LinkDir::enqueue`], which tests use).
const NO_HOP: Hop = Hop::Dir(u32::MAX);

impl Default for Slot {
    fn default() -> Slot {
        Slot {
            t: Time::ZERO,
            next: NO_HOP,
            p: Packet::default(),
        }
    }
}

/// One direction of a link.
///
/// Laid out in declaration order (`repr(C)`), on cache-line boundaries: the fields every packet
/// of a fixed direction touches (its ring, arrival, departures, drop-tail test and statistics)
/// come first, in the struct's first four lines, and the rest (Wi-Fi, traces, outages) after
/// them. The compiler's own order spread them over the 1 kB struct, and an event's first touch
/// of a direction waited on several lines (docs/performance.md).
#[derive(Debug)]
#[repr(C, align(64))]
pub struct LinkDir {
    /// Every packet of this direction in FIFO order: first the pipe's (propagating, with their
    /// arrival times), then the queue's (the first one at the server; the time is unused). One
    /// ring buffer, so that a packet leaving the server enters the pipe where it is, unmoved
    /// (packets are copied at every move).
    packets: Ring<Slot>,
    arrival_armed: Option<Time>,
    /// How many of `packets` are in the pipe.
    in_pipe: usize,
    pub queued_bytes: u64,
    /// Fixed direction: when the server finishes the last packet enqueued.
    last_dep: Time,
    /// Fixed direction: its loss probability and one-way delay (constant for the run).
    fixed_loss: f64,
    fixed_delay: Time,
    /// Fixed direction: the serialisation time of the last size served (the rate is constant;
    /// most packets of a direction have one size, and the time is a 128-bit division).
    tx_memo: (u16, Time),
    /// Fixed direction: departures passed so far, the service events a direction with a
    /// service event per packet would have processed ([`crate::net::Net::events`]).
    pub departures: u64,
    pub stats: DirStats,
    pub limit: Limit,
    /// A fixed direction ([`LinkDir::make_fixed`]): each packet's departure from the server is
    /// computed when it is enqueued, and no service event is scheduled.
    fixed: bool,
    /// The server is serialising the head packet (or waiting for a delivery opportunity).
    pub busy: bool,
    /// The head packet's MAC attempts all failed: it is lost when it leaves the server.
    head_lost: bool,
    /// Whether the outage in progress loses what the link holds and receives (the link's
    /// `outage_mode` is drop, or a failure dropped its queue: [`LinkDir::drop_queue`]).
    outage_drops: bool,
    /// Nesting count of outages in force.
    pub down: u32,
    rng: Rng,
    /// Index of the link this direction belongs to.
    pub link: u32,
    pub rate_bps: u64,
    pub base_delay: Time,
    /// Extra delay from the radio model (weak signal), added to `base_delay`.
    pub extra_delay: Time,
    pub loss: f64,
    pub extra_loss: f64,
    last_arrival: Time,
    /// End of the current outage (for re-arming held pipe arrivals).
    pub down_until: Time,
    pub outage_mode: OutageMode,
    pub trace: Option<Trace>,
    /// The channel this direction's Wi-Fi station shares with the link's other direction.
    pub channel: Option<std::rc::Rc<super::wifi::Channel>>,
    /// Power accounting of a bond member's data direction (awake and asleep time).
    pub awake: Option<crate::power::AwakeClock>,
    /// Every outage of this direction with the arrivals during it (bounded per outage).
    pub outage_log: Vec<OutageLog>,
    /// An 802.11a/g interface: each packet's service time is the MAC's (instead of `rate_bps`,
    /// which then holds the saturation rate for 1500-byte packets, for reference).
    pub wifi: Option<super::wifi::WifiMac>,
}

/// What the world must do after a link operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wake {
    None,
    /// Schedule a service event at this time.
    Service(Time),
    /// Schedule the pipe's arrival event at this time (a fixed direction's enqueue).
    Arrival(Time),
}

/// A fixed direction's mark, in the time of a packet the server will lose (random loss): it
/// occupies the server but never arrives. No simulated time reaches 2^63 ns (292 years).
const LOST: u64 = 1 << 63;

impl LinkDir {
    pub fn new(
        link: u32,
        rate_bps: u64,
        delay: Time,
        loss: f64,
        limit: Limit,
        rng: Rng,
    ) -> LinkDir {
        LinkDir {
            link,
            rate_bps,
            base_delay: delay,
            extra_delay: Time::ZERO,
            loss,
            extra_loss: 0.0,
            limit,
            trace: None,
            wifi: None,
            channel: None,
            head_lost: false,
            awake: None,
            outage_mode: OutageMode::Hold,
            outage_drops: false,
            down: 0,
            down_until: Time::ZERO,
            // The ring doubles when full: its memory follows what the direction holds (a ring
            // sized for the buffer limit up front would write every slot of it). It cycles
            // through every slot it has, so it starts small: an ACK direction holding a few
            // packets then keeps to a few cache lines (64 slots were 7 kB cycled through).
            packets: Ring::with_capacity(8),
            in_pipe: 0,
            queued_bytes: 0,
            busy: false,
            arrival_armed: None,
            last_arrival: Time::ZERO,
            fixed: false,
            last_dep: Time::ZERO,
            fixed_loss: 0.0,
            fixed_delay: Time::ZERO,
            tx_memo: (0, Time::ZERO),
            departures: 0,
            rng,
            stats: DirStats::default(),
            outage_log: Vec::new(),
        }
    }

    /// Packets in the queue (the one being served included).
    pub fn queue_len(&self) -> usize {
        self.packets.len() - self.in_pipe
    }

    fn fits(&self, size: u32) -> bool {
        match self.limit {
            Limit::Packets(n) => (self.queue_len() as u64) < n as u64,
            Limit::Bytes(b) => self.queued_bytes + size as u64 <= b,
        }
    }

    /// Offer a packet to the queue. Returns when to schedule the server, if it must start (or,
    /// on a fixed direction, the pipe's arrival event, if none is armed).
    #[inline(always)]
    pub fn enqueue(&mut self, p: Packet, now: Time) -> Wake {
        let hop = p.hop;
        if self.fixed {
            self.enqueue_fixed(p, now, hop, NO_HOP)
        } else {
            self.enqueue_evented(p, now, hop, NO_HOP)
        }
    }

    /// Queue `p` (with time `t`), then give the queue's copy its position on its route and its
    /// enqueue time. They are written into the copy, after it is made, in the slot the ring
    /// hands back: a field written into the packet just before the copy would make the copy's
    /// wide loads wait for that narrow store (no store-to-load forwarding), which cost the
    /// sending path about a tenth of its wall time (docs/performance.md).
    #[inline(always)]
    fn push_stamped(&mut self, t: Time, p: Packet, hop: u16, next: Hop, now: Time) {
        let q = self.packets.push_back(Slot { t, next, p });
        q.p.hop = hop;
        q.p.enq = now;
    }

    /// [`LinkDir::enqueue`] on a direction with service events.
    #[inline(never)]
    pub fn enqueue_evented(&mut self, p: Packet, now: Time, hop: u16, next: Hop) -> Wake {
        if self.down > 0 {
            self.log_outage_arrival(now);
            if self.outage_drops {
                self.stats.drops_outage += 1;
                return Wake::None;
            }
        }
        if !self.fits(p.size as u32) {
            self.stats.drops_overflow += 1;
            return Wake::None;
        }
        self.queued_bytes += p.size as u64;
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.queued_bytes);
        self.push_stamped(Time::ZERO, p, hop, next, now);
        if let Some(a) = &mut self.awake {
            a.packet(now);
        }
        if !self.busy && self.down == 0 {
            self.start(now)
        } else {
            Wake::None
        }
    }

    /// Make this direction fixed, if it can be: a constant rate, delay and loss for the whole
    /// run (its link has no step left), no delivery trace, Wi-Fi MAC or power clock, no outage,
    /// nothing enqueued yet. A fixed direction's server is a function of its input: packet k
    /// leaves at `dep_k = max(enq_k, dep_{k-1}) + size_k / rate` and arrives `delay` later, so
    /// both are computed at enqueue and the direction needs one event per arrival time instead
    /// of a service event per packet besides (docs/models/links.md, "fixed directions").
    /// Returns whether it is fixed.
    pub fn make_fixed(&mut self) -> bool {
        self.fixed = self.trace.is_none()
            && self.wifi.is_none()
            && self.awake.is_none()
            && self.down == 0
            && self.rate_bps > 0
            && self.packets.is_empty();
        self.fixed_loss = self.loss + self.extra_loss - self.loss * self.extra_loss;
        self.fixed_delay = self.base_delay + self.extra_delay;
        self.fixed
    }

    /// Whether this direction is fixed ([`LinkDir::make_fixed`]).
    #[inline]
    pub fn is_fixed(&self) -> bool {
        self.fixed
    }

    /// [`LinkDir::enqueue`] on a fixed direction: the departures due by `now` pass first (a
    /// departure precedes any other event at its time but a bin end), then the drop-tail test;
    /// the packet's departure, its random loss (drawn in departure order, as at the server) and
    /// its arrival are decided now.
    #[inline]
    pub fn enqueue_fixed(&mut self, p: Packet, now: Time, hop: u16, next: Hop) -> Wake {
        self.depart(now, true);
        let size = u64::from(p.size);
        if !self.fits(size as u32) {
            self.stats.drops_overflow += 1;
            return Wake::None;
        }
        self.queued_bytes += size;
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(self.queued_bytes);
        if self.tx_memo.0 != p.size {
            self.tx_memo = (p.size, Time::tx_time(size, self.rate_bps));
        }
        let dep = now.max(self.last_dep) + self.tx_memo.1;
        self.last_dep = dep;
        let lost = self.fixed_loss > 0.0 && self.rng.bernoulli(self.fixed_loss);
        // The delay is constant, so arrivals keep departure order (no `last_arrival` bound).
        let at = dep + self.fixed_delay;
        if lost {
            self.push_stamped(Time::from_ns(at.ns() | LOST), p, hop, next, now);
            return Wake::None;
        }
        self.push_stamped(at, p, hop, next, now);
        if self.arrival_armed.is_none() {
            self.arrival_armed = Some(at);
            Wake::Arrival(at)
        } else {
            Wake::None
        }
    }

    /// Fixed direction: the packets whose departure is before `now` (or at `now`, when
    /// `inclusive`) leave the server: the statistics a service event would have kept. (Nothing
    /// on a direction that is not fixed: its service events do this.)
    #[inline]
    pub fn depart(&mut self, now: Time, inclusive: bool) {
        if !self.fixed {
            return;
        }
        let delay = self.fixed_delay;
        while let Some(&Slot { t, ref p, .. }) = self.packets.get(self.in_pipe) {
            let lost = t.ns() & LOST != 0;
            let dep = Time::from_ns(t.ns() & !LOST) - delay;
            if dep > now || (dep == now && !inclusive) {
                return;
            }
            let size = u64::from(p.size);
            let sojourn = dep - p.enq;
            self.queued_bytes -= size;
            self.stats.queue_delay_sum += sojourn;
            self.stats.queue_delay_max = self.stats.queue_delay_max.max(sojourn);
            if lost {
                self.stats.drops_random += 1;
            } else {
                self.stats.forwarded += 1;
                self.stats.forwarded_bytes += size;
            }
            self.in_pipe += 1;
            self.departures += 1;
        }
    }

    /// [`LinkDir::arrival_due`] on a fixed direction when the pipe's head was lost at the
    /// server: lost packets that have departed are dropped, and the event is armed for the
    /// first packet that will arrive.
    #[cold]
    #[inline(never)]
    fn arrival_due_lost(&mut self, now: Time) -> Result<bool, Time> {
        self.depart(now, true);
        while let Some(&Slot { t, .. }) = self.packets.front() {
            if t.ns() & LOST == 0 || self.in_pipe == 0 {
                break;
            }
            self.packets.pop_front();
            self.in_pipe -= 1;
        }
        match self.packets.front() {
            Some(&Slot { t, .. }) if t <= now => return Ok(true),
            _ => {}
        }
        if self.arrival_armed.is_some() {
            return Ok(false);
        }
        match self.packets.iter().find(|s| s.t.ns() & LOST == 0) {
            Some(&Slot { t: at, .. }) => {
                self.arrival_armed = Some(at);
                Err(at)
            }
            None => Ok(false),
        }
    }

    /// A packet arrived during an outage: note it in the outage's log (bounded).
    #[cold]
    fn log_outage_arrival(&mut self, now: Time) {
        if let Some(log) = self.outage_log.last_mut() {
            if log.arrivals.len() < OUTAGE_LOG_ARRIVALS {
                log.arrivals.push(now);
            }
        }
    }

    /// Start serving the head packet.
    fn start(&mut self, now: Time) -> Wake {
        // The packet at the server: the queue's head.
        let Some(Slot { p: head, .. }) = self.packets.get(self.in_pipe) else {
            self.busy = false;
            return Wake::None;
        };
        self.busy = true;
        if self.wifi.is_some() {
            return self.start_wifi(now, u32::from(head.size));
        }
        match &mut self.trace {
            None => Wake::Service(now + Time::tx_time(head.size as u64, self.rate_bps)),
            Some(tr) => Wake::Service(tr.next_at_or_after(now)),
        }
    }

    /// [`LinkDir::start`] for a Wi-Fi station: the MAC's time for the head packet of `size`
    /// bytes (out of line, so that the other links' hot path does not carry it).
    #[inline(never)]
    fn start_wifi(&mut self, now: Time, size: u32) -> Wake {
        let Some(mac) = &mut self.wifi else {
            return Wake::None;
        };
        let (from, rival) = match &self.channel {
            Some(c) => c.access(now),
            None => (now, None),
        };
        let (t, delivered, slots) = if mac.has_snr() {
            let gain = self.channel.as_ref().map_or((1.0, 0), |c| c.gain_at(from));
            mac.serve_at(size, &mut self.rng, rival, from, gain)
        } else {
            mac.serve(size, &mut self.rng, rival)
        };
        self.head_lost = !delivered;
        if let Some(c) = &self.channel {
            c.occupy(from, slots, from + t);
        }
        Wake::Service(from + t)
    }

    /// The server event: with a rate, the head packet is serialised; with a trace, one delivery
    /// opportunity is used. Finished packets enter the pipe. Returns (next service wake, pipe
    /// arrival to arm).
    pub fn service(&mut self, now: Time) -> (Wake, Option<Time>) {
        let mut arm = None;
        if self.trace.is_none() {
            if self.queue_len() > 0 {
                arm = self.finish(now);
            }
        } else {
            let mut budget = MAHIMAHI_OPPORTUNITY_BYTES;
            {
                let tr = self.trace.as_mut().expect("trace");
                tr.cursor += 1; // this opportunity is used
            }
            while budget > 0 {
                let Some(Slot { p: head, .. }) = self.packets.get(self.in_pipe) else {
                    break;
                };
                let tr = self.trace.as_mut().expect("trace");
                let left = head.size as u32 - tr.head_done;
                if left > budget {
                    tr.head_done += budget;
                    budget = 0;
                } else {
                    budget -= left;
                    tr.head_done = 0;
                    if let Some(a) = self.finish(now) {
                        arm.get_or_insert(a);
                    }
                }
            }
        }
        if self.queue_len() == 0 {
            if let Some(a) = &mut self.awake {
                a.idle(now);
            }
        }
        if self.down > 0 {
            self.busy = false;
            return (Wake::None, arm);
        }
        (self.start(now), arm)
    }

    /// The head packet (there is one) leaves the server: random loss, then the pipe.
    fn finish(&mut self, now: Time) -> Option<Time> {
        let i = self.in_pipe;
        let (enq, size) = {
            let p = &self.packets[i].p;
            (p.enq, p.size as u64)
        };
        self.queued_bytes -= size;
        let sojourn = now - enq;
        self.stats.queue_delay_sum += sojourn;
        self.stats.queue_delay_max = self.stats.queue_delay_max.max(sojourn);
        let p_loss = self.loss + self.extra_loss - self.loss * self.extra_loss;
        let mac_lost = std::mem::take(&mut self.head_lost);
        if mac_lost || (p_loss > 0.0 && self.rng.bernoulli(p_loss)) {
            self.packets.remove(i);
            self.stats.drops_random += 1;
            return None;
        }
        self.stats.forwarded += 1;
        self.stats.forwarded_bytes += size;
        let at = (now + self.base_delay + self.extra_delay).max(self.last_arrival);
        self.last_arrival = at;
        self.packets[i].t = at;
        self.in_pipe += 1;
        if self.arrival_armed.is_none() {
            self.arrival_armed = Some(at);
            Some(at)
        } else {
            None
        }
    }

    /// Called when a `LinkArrival` event fires: true if it is the armed one (stale duplicates,
    /// which cannot normally happen, are ignored).
    pub fn take_arrival_event(&mut self, now: Time) -> bool {
        if self.arrival_armed == Some(now) {
            self.arrival_armed = None;
            true
        } else {
            false
        }
    }

    /// Pop the next packet whose arrival is due at `now`. `Err(t)` means the caller must arm the
    /// arrival event at `t` (recorded as armed); `Ok(None)` means nothing is due: the pipe is
    /// empty, or its head is held by a `hold` outage whose end re-arms the event.
    pub fn pop_arrival(&mut self, now: Time) -> Result<Option<Packet>, Time> {
        Ok(if self.arrival_due(now)? {
            self.take_arrival()
        } else {
            None
        })
    }

    /// Whether the pipe's head packet arrives at `now` (then take it with
    /// [`LinkDir::take_arrival`]): packets due during a `drop` outage are dropped first. `Err(t)`
    /// means the caller must arm the arrival event at `t` (recorded as armed); `Ok(false)` means
    /// nothing is due: the pipe is empty, or its head is held by a `hold` outage that ends now
    /// (its end re-arms the event). Split from the taking so that the packet is moved out of the pipe once,
    /// straight to where it goes next (packets are copied at every move).
    #[inline(always)]
    pub fn arrival_due(&mut self, now: Time) -> Result<bool, Time> {
        if self.fixed {
            self.arrival_due_fixed(now)
        } else {
            self.arrival_due_evented(now)
        }
    }

    /// [`LinkDir::arrival_due`] on a fixed direction.
    #[inline(always)]
    fn arrival_due_fixed(&mut self, now: Time) -> Result<bool, Time> {
        // A lost packet's time has the `LOST` bit: never due, never the head's arrival.
        match self.packets.front() {
            Some(&Slot { t, .. }) if t.ns() & LOST == 0 => {
                if t <= now {
                    // It has departed (its departure is `delay` before); the departures'
                    // bookkeeping is lazy, done when something needs it.
                    if self.in_pipe == 0 {
                        self.depart(now, true);
                    }
                    Ok(true)
                } else if self.arrival_armed.is_some() {
                    Ok(false)
                } else {
                    self.arrival_armed = Some(t);
                    Err(t)
                }
            }
            Some(_) => self.arrival_due_lost(now),
            None => Ok(false),
        }
    }

    /// [`LinkDir::arrival_due`] on a direction with service events.
    #[inline(always)]
    fn arrival_due_evented(&mut self, now: Time) -> Result<bool, Time> {
        loop {
            if self.in_pipe == 0 {
                return Ok(false);
            }
            let at = self.packets[0].t;
            if at > now {
                self.arrival_armed = Some(at);
                return Err(at);
            }
            if self.down > 0 {
                match self.outage_drops {
                    false => {
                        // Held until the outage ends. When its end is due now (or was missed),
                        // arming at `now` would fire this same event again and again at one
                        // instant: leave the event unarmed, `outage_end` re-arms it.
                        if self.down_until <= now {
                            self.arrival_armed = None;
                            return Ok(false);
                        }
                        self.arrival_armed = Some(self.down_until);
                        return Err(self.down_until);
                    }
                    true => {
                        self.packets.pop_front();
                        self.in_pipe -= 1;
                        self.stats.drops_outage += 1;
                        continue;
                    }
                }
            }
            return Ok(true);
        }
    }

    /// Remove the pipe's head packet (after [`LinkDir::arrival_due`] said it is due).
    #[inline]
    pub fn take_arrival(&mut self) -> Option<Packet> {
        if self.in_pipe == 0 {
            return None;
        }
        self.in_pipe -= 1;
        self.packets.pop_front().map(|s| s.p)
    }

    /// [`LinkDir::take_arrival`], with the hop the packet goes to next (as its enqueuer said:
    /// [`LinkDir::enqueue_fixed`]).
    #[inline]
    pub fn take_arrival_next(&mut self) -> Option<(Hop, Packet)> {
        if self.in_pipe == 0 {
            return None;
        }
        self.in_pipe -= 1;
        self.packets.pop_front().map(|s| (s.next, s.p))
    }

    /// An outage starts (nested outages are counted).
    pub fn outage_start(&mut self, now: Time, until: Time) {
        if self.down == 0 {
            self.outage_log.push(OutageLog {
                start: now,
                until,
                arrivals: Vec::new(),
            });
        } else if let Some(log) = self.outage_log.last_mut() {
            log.until = log.until.max(until);
        }
        self.down += 1;
        self.down_until = self.down_until.max(until);
        if self.outage_mode == OutageMode::Drop {
            self.outage_drops = true;
            self.flush(now);
        }
    }

    /// A failure during the outage in progress: what the link holds is lost, and so is what
    /// reaches it until the outage ends, whatever its outage mode (nothing is forwarded).
    pub fn drop_queue(&mut self, now: Time) {
        if self.down == 0 {
            return;
        }
        self.outage_drops = true;
        self.flush(now);
    }

    /// Everything waiting is lost; a packet being serialised finishes (it is on the air).
    fn flush(&mut self, now: Time) {
        let keep = if self.busy && self.trace.is_none() {
            1
        } else {
            0
        };
        while self.queue_len() > keep {
            let Slot { p, .. } = self.packets.pop_back().expect("len > keep");
            self.queued_bytes -= p.size as u64;
            self.stats.drops_outage += 1;
        }
        if let Some(tr) = &mut self.trace {
            tr.head_done = 0;
        }
        if self.queue_len() == 0 {
            if let Some(a) = &mut self.awake {
                a.idle(now);
            }
        }
    }

    /// An outage ends; returns a wake for the server if it has work, and an arrival to arm.
    pub fn outage_end(&mut self, now: Time) -> (Wake, Option<Time>) {
        self.down = self.down.saturating_sub(1);
        if self.down > 0 {
            return (Wake::None, None);
        }
        self.outage_drops = false;
        let mut arm = None;
        if self.arrival_armed.is_none() {
            arm = (self.in_pipe > 0).then(|| self.packets[0].t.max(now));
            self.arrival_armed = arm;
        }
        let wake = if !self.busy && self.queue_len() > 0 {
            self.start(now)
        } else {
            Wake::None
        };
        (wake, arm)
    }

    pub fn delay(&self) -> Time {
        self.base_delay + self.extra_delay
    }

    /// Packets on route `route` this direction holds, queued or propagating.
    /// (On a fixed direction, as of its last departures ([`LinkDir::depart`]): packets lost at
    /// the server that departed are not held.)
    pub fn held_on_route(&self, route: u32) -> u64 {
        self.packets
            .iter()
            .enumerate()
            .filter(|&(i, s)| {
                s.p.route == route && !(self.fixed && i < self.in_pipe && s.t.ns() & LOST != 0)
            })
            .count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pkt(size: u16) -> Packet {
        Packet {
            size,
            ..Default::default()
        }
    }

    fn dir(limit: Limit) -> LinkDir {
        LinkDir::new(
            0,
            10_000_000,
            Time::from_ms(10),
            0.0,
            limit,
            Rng::from_seed(1),
        )
    }

    /// Two Wi-Fi stations (802.11a at 54 Mbit/s) on one channel; station k draws from
    /// `Rng::stream(3, "station k")`.
    fn stations() -> (LinkDir, LinkDir) {
        let mac = super::super::wifi::WifiMac::new(&railpath_scenario::Wifi {
            standard: railpath_scenario::WifiStandard::A,
            phy_mbps: 54.0,
            frame_error: 0.0,
            snr_db: None,
            rate_control: Default::default(),
            doppler_hz: 0.0,
            rician_k_db: None,
            max_rate_tries: None,
        });
        let ch = std::rc::Rc::new(super::super::wifi::Channel::default());
        let station = |k: usize| {
            let mut d = LinkDir::new(
                0,
                0,
                Time::from_ms(1),
                0.0,
                Limit::Packets(1000),
                Rng::stream(3, &format!("station {k}")),
            );
            d.wifi = Some(mac);
            d.channel = Some(std::rc::Rc::clone(&ch));
            d
        };
        (station(0), station(1))
    }

    fn wake(w: Wake) -> Time {
        match w {
            Wake::Service(t) => t,
            Wake::None | Wake::Arrival(_) => panic!("no service wake"),
        }
    }

    #[test]
    fn wifi_stations_on_one_channel_count_down_together() {
        // 802.11a at 54 Mbit/s: a 1500-byte packet's attempt is 326 us without backoff, a
        // 52-byte ACK's 34 + 36 + 16 + 28 = 114 us (88 MAC bytes: 726 bits, 4 symbols). The
        // stations' first backoffs, drawn as `serve` draws them:
        let mut r0 = Rng::stream(3, "station 0");
        let mut r1 = Rng::stream(3, "station 1");
        let b_ap = r0.below(16) as u32;
        let b_ack = r1.below(16) as u32;
        let (mut ap, mut sta) = stations();
        // The AP's data frame and the client's ACK reach their heads at 0 and count together;
        // the data frame is served first, after its b_ap slots.
        let t1 = wake(ap.enqueue(pkt(1500), Time::ZERO));
        assert_eq!(t1.ns(), 326_000 + 9_000 * u64::from(b_ap));
        let t2 = wake(sta.enqueue(pkt(52), Time::ZERO));
        if b_ack != b_ap {
            // The ACK counts only the slots beyond the AP's: the two idle max(b_ap, b_ack).
            let left = b_ack.saturating_sub(b_ap);
            assert_eq!(t2.ns() - t1.ns(), 114_000 + 9_000 * u64::from(left));
        } else {
            // Equal counts collide: a failed attempt, then one with a fresh draw from 0..=31.
            let b2 = r1.below(32);
            assert_eq!(t2.ns() - t1.ns(), 2 * 114_000 + 9_000 * b2);
        }
        // The AP's next frame, queued meanwhile, starts counting when the data frame's exchange
        // ends, as the ACK's contention does: it contends with the ACK and goes after it.
        assert_eq!(ap.enqueue(pkt(1500), Time::from_us(10)), Wake::None);
        let (w, _) = ap.service(t1);
        assert!(wake(w).ns() >= t2.ns() + 326_000);
        // A frame that comes while an exchange is on the air, after its contention began,
        // defers to its end and counts a fresh backoff alone.
        let (mut ap, mut sta) = stations();
        let t1 = wake(ap.enqueue(pkt(1500), Time::ZERO));
        let b = Rng::stream(3, "station 1").below(16);
        let t2 = wake(sta.enqueue(pkt(52), Time::from_us(1)));
        assert_eq!(t2.ns(), t1.ns() + 114_000 + 9_000 * b);
    }

    /// Bianchi's (IEEE JSAC 2000) time per successful frame of `n` saturated stations, us, with
    /// a collision as long as a success (`t_s`), W = 16, m = 6, slot 9 us.
    fn bianchi_us_per_frame(n: i32, t_s: f64) -> f64 {
        let (w, m) = (16.0, 6);
        let tau = |p: f64| {
            2.0 * (1.0 - 2.0 * p)
                / ((1.0 - 2.0 * p) * (w + 1.0) + p * w * (1.0 - (2.0 * p).powi(m)))
        };
        let (mut lo, mut hi) = (0.0f64, 0.5f64);
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if mid < 1.0 - (1.0 - tau(mid)).powi(n - 1) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let t = tau(lo);
        let p_tr = 1.0 - (1.0 - t).powi(n);
        let p_s = f64::from(n) * t * (1.0 - t).powi(n - 1) / p_tr;
        ((1.0 - p_tr) * 9.0 + p_tr * t_s) / (p_tr * p_s)
    }

    #[test]
    fn two_saturated_wifi_stations_share_the_air_as_bianchi_says() {
        // Bianchi for two stations, 802.11a at 54 Mbit/s, 1500-byte frames (T_s = 326 us): tau
        // = p = 0.10462, P_tr = 1 - (1 - tau)^2 = 0.19829, P_s = 2 tau (1 - tau) / P_tr =
        // 0.94481; per success (0.80171 x 9 + 0.19829 x 326) / (0.19829 x 0.94481) = 383.6 us:
        // 31.3 Mbit/s together, against 393.5 us (30.5 Mbit/s) for one station alone.
        let bianchi = bianchi_us_per_frame(2, 326.0);
        assert!((bianchi - 383.6).abs() < 0.1, "{bianchi}");
        let (mut a, mut b) = stations();
        let mut next = [
            a.enqueue(pkt(1500), Time::ZERO),
            b.enqueue(pkt(1500), Time::ZERO),
        ]
        .map(wake);
        for _ in 0..3 {
            a.enqueue(pkt(1500), Time::ZERO);
            b.enqueue(pkt(1500), Time::ZERO);
        }
        let n = 40_000;
        let mut now = Time::ZERO;
        for _ in 0..n {
            let k = usize::from(next[1] < next[0]);
            now = next[k];
            let d = if k == 0 { &mut a } else { &mut b };
            d.enqueue(pkt(1500), now);
            let (w, _) = d.service(now);
            next[k] = wake(w);
            while d.pop_arrival(Time::MAX).is_ok_and(|x| x.is_some()) {}
        }
        let delivered = a.stats.forwarded + b.stats.forwarded;
        let per_frame_us = now.secs_f64() * 1e6 / delivered as f64;
        // The model keeps the order frames reached their heads and lets a collision fail the
        // later frame alone (which then retries on its own): 395 us per frame, within 4% of
        // Bianchi's and between it and one station alone.
        assert!(
            (per_frame_us / bianchi - 1.0).abs() < 0.04,
            "{per_frame_us} us per frame against Bianchi's {bianchi}"
        );
        let share = a.stats.forwarded as f64 / delivered as f64;
        assert!((share - 0.5).abs() < 0.01, "{share}");
    }

    #[test]
    fn serialises_then_propagates() {
        let mut d = dir(Limit::Packets(10));
        assert_eq!(
            d.enqueue(pkt(1500), Time::ZERO),
            Wake::Service(Time::from_us(1200))
        );
        // A second packet waits; no new service wake while busy.
        assert_eq!(d.enqueue(pkt(1500), Time::from_us(100)), Wake::None);
        let (w, arm) = d.service(Time::from_us(1200));
        assert_eq!(w, Wake::Service(Time::from_us(2400)));
        assert_eq!(arm, Some(Time::from_us(11_200)));
        let (_, arm2) = d.service(Time::from_us(2400));
        assert_eq!(arm2, None, "pipe arrival already armed");
        assert!(d.take_arrival_event(Time::from_us(11_200)));
        assert!(d.pop_arrival(Time::from_us(11_200)).unwrap().is_some());
        assert_eq!(
            d.pop_arrival(Time::from_us(11_200)),
            Err(Time::from_us(12_400))
        );
        assert!(
            !d.take_arrival_event(Time::from_us(11_300)),
            "not the armed time"
        );
    }

    #[test]
    fn a_slot_is_the_size_the_run_estimate_counts() {
        // crates/scenario/src/size.rs counts 112 bytes a packet in a link's queue or pipe.
        assert_eq!(std::mem::size_of::<Slot>(), 112);
    }

    #[test]
    fn a_packet_arrives_with_the_next_hop_it_was_enqueued_with() {
        // Both kinds of direction keep each packet's next hop beside it, through losses.
        let sink = |flow| {
            Hop::Sink(super::super::Endpoint {
                flow,
                sub: 0,
                side: super::super::Side::Receiver,
            })
        };
        for fixed in [true, false] {
            let mut d = dir(Limit::Packets(100));
            d.loss = 0.3;
            assert!(d.make_fixed());
            d.fixed = fixed;
            let mut wake = Wake::None;
            for k in 0..40u32 {
                let p = Packet {
                    seq: k,
                    size: 1500,
                    ..Default::default()
                };
                let next = if k % 3 == 0 { Hop::Dir(k) } else { sink(k) };
                let w = if fixed {
                    d.enqueue_fixed(p, Time::ZERO, 0, next)
                } else {
                    d.enqueue_evented(p, Time::ZERO, 0, next)
                };
                if w != Wake::None {
                    wake = w;
                }
            }
            // A direction with service events serves its queue into the pipe.
            while let Wake::Service(t) = wake {
                wake = d.service(t).0;
            }
            let mut got = 0;
            loop {
                match d.arrival_due(Time::MAX) {
                    Ok(true) => {
                        let (next, p) = d.take_arrival_next().expect("due");
                        let want = if p.seq % 3 == 0 {
                            Hop::Dir(p.seq)
                        } else {
                            sink(p.seq)
                        };
                        assert_eq!(next, want, "packet {}", p.seq);
                        got += 1;
                    }
                    Ok(false) => break,
                    Err(t) => panic!("everything is due at the end of time, not at {t:?}"),
                }
            }
            // About 70 % of 40 arrive (30 % random loss at the server).
            assert!((15..40).contains(&got), "{got} arrived");
        }
    }

    #[test]
    fn a_fixed_direction_decides_departures_and_arrivals_at_enqueue() {
        // 10 Mbit/s, 10 ms, two packets: 1500 B take 1.2 ms on the wire.
        let mut d = dir(Limit::Packets(2));
        assert!(d.make_fixed());
        let p = |seq| Packet {
            seq,
            size: 1500,
            ..Default::default()
        };
        // Leaves at 1.2 ms, arrives at 11.2 ms: the arrival event is armed at once.
        assert_eq!(
            d.enqueue(p(0), Time::ZERO),
            Wake::Arrival(Time::from_us(11_200))
        );
        // Leaves at 2.4 ms; the event is armed already. A third finds two in the queue.
        assert_eq!(d.enqueue(p(1), Time::ZERO), Wake::None);
        assert_eq!(d.enqueue(p(2), Time::ZERO), Wake::None);
        assert_eq!((d.queue_len(), d.stats.drops_overflow), (2, 1));
        // At 1.2 ms the first departure comes before the enqueue: room for one, which leaves
        // at 2.4 + 1.2 = 3.6 ms.
        assert_eq!(d.enqueue(p(3), Time::from_us(1200)), Wake::None);
        assert_eq!((d.queue_len(), d.stats.drops_overflow), (2, 1));
        // A bin end at 3.6 ms comes before the departure at 3.6 ms.
        d.depart(Time::from_us(3600), false);
        assert_eq!((d.departures, d.queue_len()), (2, 1));
        // Each arrival event delivers its packet and arms the next packet's arrival.
        for (at_us, seq, next_us) in [(11_200, 0, 12_400), (12_400, 1, 13_600)] {
            let at = Time::from_us(at_us);
            assert!(d.take_arrival_event(at));
            assert_eq!(d.arrival_due(at), Ok(true));
            assert_eq!(d.take_arrival().map(|p| p.seq), Some(seq));
            assert_eq!(d.arrival_due(at), Err(Time::from_us(next_us)));
        }
        d.depart(Time::from_us(3600), true);
        // Queueing delays 1.2, 2.4 and 3.6 - 1.2 = 2.4 ms.
        assert_eq!(d.stats.queue_delay_sum, Time::from_us(6000));
        assert_eq!(d.stats.queue_delay_max, Time::from_us(2400));
        assert_eq!((d.stats.forwarded, d.departures, d.queue_len()), (3, 3, 0));
        // What cannot be fixed stays with service events.
        let mut t = dir(Limit::Packets(2));
        t.trace = Some(Trace::new(Arc::from(vec![1u64, 2].as_slice())));
        assert!(!t.make_fixed());
    }

    /// Drive a direction with `arrivals` (time, seq, size) through a minimal event loop (service
    /// events when it is not fixed, arrival events); the deliveries (time, seq).
    fn drive(d: &mut LinkDir, arrivals: &[(Time, u32, u16)]) -> Vec<(Time, u32)> {
        let (mut next, mut service, mut armed) = (0, None::<Time>, None::<Time>);
        let mut out = Vec::new();
        loop {
            let t_in = arrivals.get(next).map_or(Time::MAX, |a| a.0);
            let (t_srv, t_arr) = (service.unwrap_or(Time::MAX), armed.unwrap_or(Time::MAX));
            let now = t_in.min(t_srv).min(t_arr);
            if now == Time::MAX {
                return out;
            }
            if t_srv == now {
                let (w, arm) = d.service(now);
                service = match w {
                    Wake::Service(t) => Some(t),
                    _ => None,
                };
                armed = arm.or(armed);
            } else if t_arr == now {
                armed = None;
                assert!(d.take_arrival_event(now));
                loop {
                    match d.arrival_due(now) {
                        Ok(true) => out.push((now, d.take_arrival().expect("due").seq)),
                        Ok(false) => break,
                        Err(t) => {
                            armed = Some(t);
                            break;
                        }
                    }
                }
            } else {
                let (_, seq, size) = arrivals[next];
                next += 1;
                let p = Packet {
                    seq,
                    size,
                    ..Default::default()
                };
                match d.enqueue(p, now) {
                    Wake::Service(t) => service = Some(t),
                    Wake::Arrival(t) => armed = Some(t),
                    Wake::None => {}
                }
            }
        }
    }

    #[test]
    fn a_fixed_direction_delivers_and_counts_what_service_events_do() {
        // Bursts of mixed sizes at odd nanoseconds (no two events at one time), a buffer that
        // overflows and 20 % random loss: the same deliveries at the same times, the same
        // statistics, and a departure for each service event.
        let mut rng = Rng::from_seed(11);
        let mut t = Time::ZERO;
        let arrivals: Vec<(Time, u32, u16)> = (0..3000)
            .map(|seq| {
                t += Time::from_ns(1 + 2 * rng.below(400_000));
                (t, seq, [52u16, 700, 1500][rng.below(3) as usize])
            })
            .collect();
        let make = || {
            LinkDir::new(
                0,
                10_000_000,
                Time::from_ms(5),
                0.2,
                Limit::Packets(8),
                Rng::from_seed(4),
            )
        };
        let (mut evented, mut fixed) = (make(), make());
        assert!(fixed.make_fixed());
        let a = drive(&mut evented, &arrivals);
        let b = drive(&mut fixed, &arrivals);
        fixed.depart(Time::MAX, true);
        assert!(a.len() > 1000, "{}", a.len());
        assert_eq!(a, b);
        let (x, y) = (&evented.stats, &fixed.stats);
        assert!(x.drops_overflow > 100 && x.drops_random > 100, "{x:?}");
        assert_eq!(
            (
                x.forwarded,
                x.forwarded_bytes,
                x.drops_overflow,
                x.drops_random
            ),
            (
                y.forwarded,
                y.forwarded_bytes,
                y.drops_overflow,
                y.drops_random
            )
        );
        assert_eq!(
            (x.queue_delay_sum, x.queue_delay_max, x.max_queue_bytes),
            (y.queue_delay_sum, y.queue_delay_max, y.max_queue_bytes)
        );
        assert_eq!(fixed.departures, x.forwarded + x.drops_random);
        assert_eq!(fixed.queue_len(), 0);
    }

    #[test]
    fn drop_tail_counts_the_packet_in_service() {
        let mut d = dir(Limit::Packets(2));
        d.enqueue(pkt(1500), Time::ZERO);
        d.enqueue(pkt(1500), Time::ZERO);
        d.enqueue(pkt(1500), Time::ZERO);
        assert_eq!(d.queue_len(), 2);
        assert_eq!(d.stats.drops_overflow, 1);
        let mut b = dir(Limit::Bytes(3000));
        b.enqueue(pkt(1500), Time::ZERO);
        b.enqueue(pkt(1400), Time::ZERO);
        b.enqueue(pkt(200), Time::ZERO);
        assert_eq!((b.queue_len(), b.stats.drops_overflow), (2, 1));
    }

    #[test]
    fn hold_outage_delays_pipe_and_queue() {
        let mut d = dir(Limit::Packets(10));
        d.enqueue(pkt(1500), Time::ZERO);
        let (_, arm) = d.service(Time::from_us(1200));
        assert_eq!(arm, Some(Time::from_us(11_200)));
        d.outage_start(Time::from_us(1200), Time::from_ms(50));
        // Arrival due during the outage is held until its end.
        assert!(d.take_arrival_event(Time::from_us(11_200)));
        assert_eq!(
            d.pop_arrival(Time::from_us(11_200)).unwrap_err(),
            Time::from_ms(50)
        );
        // A packet arriving during the outage queues but is not served; its arrival is logged.
        assert_eq!(d.enqueue(pkt(1500), Time::from_ms(20)), Wake::None);
        assert_eq!(
            d.outage_log,
            vec![OutageLog {
                start: Time::from_us(1200),
                until: Time::from_ms(50),
                arrivals: vec![Time::from_ms(20)]
            }]
        );
        let (w, arm) = d.outage_end(Time::from_ms(50));
        assert_eq!(w, Wake::Service(Time::from_us(51_200)));
        assert_eq!(
            arm, None,
            "the held arrival is already armed at the outage end"
        );
        assert!(d.take_arrival_event(Time::from_ms(50)));
        assert!(d.pop_arrival(Time::from_ms(50)).unwrap().is_some());
    }

    #[test]
    fn a_held_arrival_at_the_outage_end_waits_for_the_end_not_the_same_instant() {
        // The head packet is due at 11.2 ms inside an outage that ends at 50 ms. If the arrival
        // event fires at 50 ms before the outage's end is processed (or that end never comes),
        // it must not be re-armed at 50 ms again (which would loop at one instant): it stays
        // unarmed, and the outage end arms it.
        let mut d = dir(Limit::Packets(10));
        d.enqueue(pkt(1500), Time::ZERO);
        d.service(Time::from_us(1200));
        d.outage_start(Time::from_us(1200), Time::from_ms(50));
        assert!(d.take_arrival_event(Time::from_us(11_200)));
        assert_eq!(d.pop_arrival(Time::from_us(11_200)), Err(Time::from_ms(50)));
        assert!(d.take_arrival_event(Time::from_ms(50)));
        assert_eq!(d.pop_arrival(Time::from_ms(50)), Ok(None));
        assert_eq!(d.arrival_armed, None);
        let (_, arm) = d.outage_end(Time::from_ms(50));
        assert_eq!(
            arm,
            Some(Time::from_ms(50)),
            "the end arms the held arrival"
        );
        assert!(d.take_arrival_event(Time::from_ms(50)));
        assert!(d.pop_arrival(Time::from_ms(50)).unwrap().is_some());
    }

    #[test]
    fn drop_outage_flushes() {
        let mut d = dir(Limit::Packets(10));
        d.outage_mode = OutageMode::Drop;
        d.enqueue(pkt(1500), Time::ZERO);
        d.enqueue(pkt(1500), Time::ZERO);
        d.enqueue(pkt(1500), Time::ZERO);
        d.outage_start(Time::ZERO, Time::from_ms(50));
        assert_eq!(d.queue_len(), 1, "the packet on the air stays");
        assert_eq!(d.stats.drops_outage, 2);
        assert_eq!(d.enqueue(pkt(1500), Time::from_ms(1)), Wake::None);
        assert_eq!(d.stats.drops_outage, 3);
        // The in-service packet finishes but its arrival (11.2 ms) falls in the outage: dropped.
        let (_, arm) = d.service(Time::from_us(1200));
        assert!(arm.is_some());
        assert_eq!(d.pop_arrival(Time::from_us(11_200)), Ok(None));
        assert_eq!(d.stats.drops_outage, 4);
    }

    #[test]
    fn a_failure_drops_a_hold_links_queue_and_what_reaches_it_until_the_outage_ends() {
        // A hold link in outage keeps its queue; a failure (drop_queue) loses it but for the
        // packet on the air, and refuses arrivals until the outage ends; then it carries again.
        let mut d = dir(Limit::Packets(10));
        for _ in 0..3 {
            d.enqueue(pkt(1500), Time::ZERO);
        }
        d.outage_start(Time::ZERO, Time::from_ms(50));
        assert_eq!(d.enqueue(pkt(1500), Time::from_us(500)), Wake::None);
        assert_eq!((d.queue_len(), d.stats.drops_outage), (4, 0), "held");
        d.drop_queue(Time::from_ms(1));
        assert_eq!((d.queue_len(), d.stats.drops_outage), (1, 3));
        assert_eq!(d.enqueue(pkt(1500), Time::from_ms(2)), Wake::None);
        assert_eq!((d.queue_len(), d.stats.drops_outage), (1, 4));
        // The packet on the air finished at 1.2 ms; its arrival (11.2 ms) is in the outage.
        let (_, arm) = d.service(Time::from_us(1200));
        assert_eq!(arm, Some(Time::from_us(11_200)));
        assert!(d.take_arrival_event(Time::from_us(11_200)));
        assert_eq!(d.pop_arrival(Time::from_us(11_200)), Ok(None));
        assert_eq!(d.stats.drops_outage, 5);
        d.outage_end(Time::from_ms(50));
        // After the outage the link holds and serves again.
        assert_eq!(
            d.enqueue(pkt(1500), Time::from_ms(60)),
            Wake::Service(Time::from_us(61_200))
        );
        // Outside an outage drop_queue does nothing.
        d.drop_queue(Time::from_ms(61));
        assert_eq!((d.queue_len(), d.stats.drops_outage), (1, 5));
    }

    #[test]
    fn mahimahi_opportunities() {
        // Two opportunities per 10 ms period at 3 ms and 10 ms.
        let mut d = dir(Limit::Packets(10));
        d.trace = Some(Trace::new(Arc::from(vec![3u64, 10])));
        assert_eq!(
            d.enqueue(pkt(1000), Time::from_ms(1)),
            Wake::Service(Time::from_ms(3))
        );
        d.enqueue(pkt(1000), Time::from_ms(2));
        // Opportunity at 3 ms: first packet (1000 B) done, 500 B of the second carried.
        let (w, arm) = d.service(Time::from_ms(3));
        assert_eq!(arm, Some(Time::from_ms(13)));
        assert_eq!(w, Wake::Service(Time::from_ms(10)));
        assert_eq!(d.queue_len(), 1);
        // At 10 ms the rest (500 B) goes.
        let (w, _) = d.service(Time::from_ms(10));
        assert_eq!(w, Wake::None);
        assert_eq!(d.queue_len(), 0);
        // Idle until 14 ms: the 13 ms opportunity is skipped, next is 20 ms.
        assert_eq!(
            d.enqueue(pkt(100), Time::from_ms(14)),
            Wake::Service(Time::from_ms(20))
        );
        assert_eq!(
            d.trace.as_ref().unwrap().mean_rate_bps(),
            2.0 * 1500.0 * 8.0 / 0.010
        );
    }

    #[test]
    fn pipe_keeps_order_through_losses() {
        // Packets lost at the server leave the others in order, whether the pipe holds packets
        // or not; every forwarded packet arrives once.
        let mut d = LinkDir::new(
            0,
            10_000_000,
            Time::from_ms(5),
            0.3,
            Limit::Packets(1000),
            Rng::from_seed(5),
        );
        let mut t = Time::ZERO;
        let mut arrived = Vec::new();
        for seq in 0..300u32 {
            d.enqueue(
                Packet {
                    seq,
                    size: 1500,
                    ..Default::default()
                },
                t,
            );
            if seq % 3 == 2 {
                // Serve a few, then let time pass so that some arrivals are due.
                for _ in 0..3 {
                    t += Time::from_us(1200);
                    d.service(t);
                }
                while d.arrival_due(t) == Ok(true) {
                    arrived.push(d.take_arrival().expect("due").seq);
                }
            }
        }
        t += Time::from_secs(1);
        while d.arrival_due(t) == Ok(true) {
            arrived.push(d.take_arrival().expect("due").seq);
        }
        assert_eq!(arrived.len() as u64, d.stats.forwarded);
        assert_eq!(d.stats.forwarded + d.stats.drops_random, 300);
        assert!(arrived.windows(2).all(|w| w[0] < w[1]), "{arrived:?}");
        assert_eq!(d.take_arrival(), None);
    }

    #[test]
    fn random_loss_rate() {
        let mut d = LinkDir::new(
            0,
            1_000_000_000,
            Time::ZERO,
            0.1,
            Limit::Packets(100_000),
            Rng::from_seed(3),
        );
        let mut t = Time::ZERO;
        for _ in 0..20_000 {
            d.enqueue(pkt(100), t);
            t += Time::from_us(1);
            d.service(t);
        }
        let lost = d.stats.drops_random as f64 / 20_000.0;
        assert!((lost - 0.1).abs() < 0.01, "{lost}");
    }
}
