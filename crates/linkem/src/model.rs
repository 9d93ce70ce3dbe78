//! The link model of one direction of one emulated carrier: a drop-tail bottleneck queue served
//! at a rate (or by Mahimahi delivery opportunities), random loss, outages, piecewise-constant
//! schedule steps, and a propagation delay line. Pure and deterministic: time is passed in, the
//! only randomness is a named seeded stream, so the same arrivals give the same output.
//!
//! Sources of the rules implemented here:
//! - Rate, drop-tail buffer and delay: the classic bottleneck link of ns-2/htsim (a FIFO queue
//!   served at a line rate, then a pipe of fixed latency); the queue limit counts the packet in
//!   service, like Mahimahi's `DroptailPacketQueue` (mahimahi `src/packet/droptail_packet_queue.cc`).
//! - Traces: Mahimahi's delivery-opportunity format and `LinkQueue::use_a_delivery_opportunity`
//!   (mahimahi `src/frontend/link_queue.cc`, Netravali et al., USENIX ATC 2015): each millisecond
//!   timestamp is one opportunity to send 1500 bytes from the head of the queue; a packet may use
//!   several opportunities; an opportunity that finds the queue empty is wasted; the trace repeats
//!   with a period equal to its last timestamp.
//! - Outages: a handover interruption (3GPP X2 handover, TS 36.300 §10.1.2.1) during which the
//!   radio delivers nothing. `hold`: the packet in service pauses, the queue waits and keeps
//!   accepting arrivals up to its limit (the source eNB forwards buffered data to the target);
//!   `drop`: the queue is flushed when the outage starts and arrivals are dropped until it ends.
//!   Packets already past the bottleneck (in the delay line) are unaffected.
//! - Random loss is drawn when a packet leaves the bottleneck, so a lost packet still used the
//!   link's capacity (a radio transmission that was not received).
//! - Schedule steps change rate, delay or loss from their time on; a packet's rate is fixed when
//!   its service starts, its delay and loss when its service ends.

use railpath_core::{Rng, Time};
use railpath_scenario::OutageMode;
pub use railpath_sim::net::link::{OutageLog, OUTAGE_LOG_ARRIVALS};
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

/// Bytes one Mahimahi delivery opportunity can send.
pub const TRACE_OPPORTUNITY_BYTES: u32 = 1500;

/// Drop-tail buffer limit (counts the packet in service): the scenario's type.
pub use railpath_scenario::BufferLimit as Buffer;

/// How the bottleneck serves its queue.
#[derive(Debug, Clone, PartialEq)]
pub enum Service {
    /// A constant line rate in bit/s (changeable by schedule steps).
    Rate(u64),
    /// Mahimahi delivery opportunities, ms timestamps, repeating with the last one as period.
    Trace(Arc<Vec<u64>>),
}

/// Static configuration of one direction.
#[derive(Debug, Clone, PartialEq)]
pub struct DirConfig {
    pub service: Service,
    pub delay: Time,
    pub loss: f64,
    pub buffer: Buffer,
    pub outage_mode: OutageMode,
}

/// A piecewise-constant change from `t` on (fields left `None` keep their value).
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    pub t: Time,
    pub rate_bps: Option<u64>,
    pub delay: Option<Time>,
    pub loss: Option<f64>,
}

/// Why a packet was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    Buffer,
    Loss,
    Outage,
}

/// What the model hands back while it advances.
#[derive(Debug, PartialEq)]
pub enum Output<P> {
    /// The packet reached the far end of the link at `t`.
    Deliver {
        t: Time,
        packet: P,
    },
    /// The packet was dropped at `t`.
    Drop {
        t: Time,
        packet: P,
        reason: DropReason,
    },
    /// An outage began at `t`, lasting (as known then) until `until`.
    OutageStart {
        t: Time,
        until: Time,
    },
    OutageEnd {
        t: Time,
    },
}

/// Counters of one direction.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DirStats {
    pub arrived_packets: u64,
    /// Left the bottleneck and were not lost.
    pub forwarded_packets: u64,
    pub forwarded_bytes: u64,
    pub delivered_packets: u64,
    pub buffer_drops: u64,
    pub outage_drops: u64,
    pub random_losses: u64,
    /// Sum and max of enqueue-to-start-of-service times, ns.
    pub queue_delay_sum_ns: u128,
    pub queue_delay_max_ns: u64,
    pub served_packets: u64,
}

impl DirStats {
    pub fn dropped_packets(&self) -> u64 {
        self.buffer_drops + self.outage_drops + self.random_losses
    }
}

struct Queued<P> {
    bytes: u32,
    enq: Time,
    packet: P,
}

struct InFlight<P> {
    at: Time,
    seq: u64,
    packet: P,
}
impl<P> PartialEq for InFlight<P> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<P> Eq for InFlight<P> {}
impl<P> PartialOrd for InFlight<P> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<P> Ord for InFlight<P> {
    // Reversed: BinaryHeap is a max-heap, the earliest delivery must come out first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    // Declaration order is the tie-break order at equal times.
    Step,
    OutageStart,
    QueueDrop,
    OutageEnd,
    Complete,
    Opportunity,
    Deliver,
}

/// One direction of one link. `P` is the packet payload the caller carries through.
pub struct LinkDir<P> {
    rate_bps: u64,
    trace: Option<Arc<Vec<u64>>>,
    delay: Time,
    loss: f64,
    buffer: Buffer,
    mode: OutageMode,
    steps: Vec<Step>,
    next_step: usize,
    /// Outage windows (start, end) not yet started, sorted by start.
    outages: Vec<(Time, Time)>,
    next_outage: usize,
    /// End of the outage in progress.
    active_until: Option<Time>,
    /// Failures not yet reached, sorted: at each, during an outage, the queue is lost and the
    /// rest of the outage drops.
    queue_drops: Vec<Time>,
    next_queue_drop: usize,
    /// The outage in progress drops (the mode is drop, or a failure dropped the queue).
    dropping: bool,
    rng: Rng,
    queue: VecDeque<Queued<P>>,
    queue_bytes: u64,
    /// Rate mode: end of the head packet's transmission, when it is in service.
    head_tx_end: Option<Time>,
    /// Rate mode, hold outage: transmission time left of the paused head packet.
    paused_left: Option<Time>,
    /// Whether the head's queue delay has been recorded (its service started).
    head_started: bool,
    /// Trace mode: bytes of the head packet still to send.
    head_left: u32,
    /// Trace mode: index of the next opportunity and the base of its period, ns.
    opp_idx: usize,
    opp_base: Time,
    line: BinaryHeap<InFlight<P>>,
    /// Delivery time of the last packet put on the delay line (FIFO across delay steps).
    last_at: Time,
    seq: u64,
    clock: Time,
    stats: DirStats,
    /// Every outage as it happened, with the arrivals during it (as the simulator's link keeps).
    outage_log: Vec<OutageLog>,
}

impl<P> LinkDir<P> {
    /// A direction starting at time zero; `rng` draws its random losses.
    pub fn new(cfg: DirConfig, rng: Rng) -> LinkDir<P> {
        let (rate_bps, trace) = match cfg.service {
            Service::Rate(r) => (r.max(1), None),
            Service::Trace(t) => (0, Some(t)),
        };
        LinkDir {
            rate_bps,
            trace,
            delay: cfg.delay,
            loss: cfg.loss,
            buffer: cfg.buffer,
            mode: cfg.outage_mode,
            steps: Vec::new(),
            next_step: 0,
            outages: Vec::new(),
            next_outage: 0,
            active_until: None,
            queue_drops: Vec::new(),
            next_queue_drop: 0,
            dropping: false,
            rng,
            queue: VecDeque::new(),
            queue_bytes: 0,
            head_tx_end: None,
            paused_left: None,
            head_started: false,
            head_left: 0,
            opp_idx: 0,
            opp_base: Time::ZERO,
            line: BinaryHeap::new(),
            last_at: Time::ZERO,
            seq: 0,
            clock: Time::ZERO,
            stats: DirStats::default(),
            outage_log: Vec::new(),
        }
    }

    /// Every outage so far, with the packets that arrived while it lasted.
    pub fn outage_log(&self) -> &[OutageLog] {
        &self.outage_log
    }

    /// Add a schedule step (steps in the past take effect at the next event).
    pub fn add_step(&mut self, step: Step) {
        let pos = self.steps[self.next_step..].partition_point(|s| s.t <= step.t) + self.next_step;
        self.steps.insert(pos, step);
    }

    /// Add an outage window; one that would start in the past starts now. Overlapping windows
    /// merge into one outage.
    pub fn add_outage(&mut self, start: Time, duration: Time) {
        let start = start.max(self.clock);
        let w = (start, start + duration);
        let pos =
            self.outages[self.next_outage..].partition_point(|o| o.0 <= w.0) + self.next_outage;
        self.outages.insert(pos, w);
    }

    /// Add a failure at `t`: if the link is in an outage then, what it holds is lost and so is
    /// what reaches it until the outage ends. One in the past happens now.
    pub fn add_queue_drop(&mut self, t: Time) {
        let t = t.max(self.clock);
        let pos = self.queue_drops[self.next_queue_drop..].partition_point(|&d| d <= t)
            + self.next_queue_drop;
        self.queue_drops.insert(pos, t);
    }

    pub fn stats(&self) -> DirStats {
        self.stats
    }
    /// Bytes in the bottleneck queue (including the packet in service).
    pub fn queue_bytes(&self) -> u64 {
        self.queue_bytes
    }
    pub fn queue_packets(&self) -> usize {
        self.queue.len()
    }
    /// Packets past the bottleneck, propagating.
    pub fn in_flight(&self) -> usize {
        self.line.len()
    }
    pub fn in_outage(&self) -> bool {
        self.active_until.is_some()
    }
    pub fn clock(&self) -> Time {
        self.clock
    }
    pub fn rate_bps(&self) -> Option<u64> {
        self.trace.is_none().then_some(self.rate_bps)
    }
    pub fn delay(&self) -> Time {
        self.delay
    }
    pub fn loss(&self) -> f64 {
        self.loss
    }

    /// A packet of `bytes` arrives at `now` (not before the last time given to the model).
    pub fn enqueue(&mut self, now: Time, bytes: u32, packet: P, out: &mut impl FnMut(Output<P>)) {
        self.advance(now, out);
        let now = self.clock;
        self.stats.arrived_packets += 1;
        if self.active_until.is_some() {
            if let Some(log) = self.outage_log.last_mut() {
                if log.arrivals.len() < OUTAGE_LOG_ARRIVALS {
                    log.arrivals.push(now);
                }
            }
        }
        if self.active_until.is_some() && self.dropping {
            self.stats.outage_drops += 1;
            out(Output::Drop {
                t: now,
                packet,
                reason: DropReason::Outage,
            });
            return;
        }
        let full = match self.buffer {
            Buffer::Packets(n) => self.queue.len() as u64 >= n as u64,
            Buffer::Bytes(b) => self.queue_bytes + bytes as u64 > b,
        };
        if full {
            self.stats.buffer_drops += 1;
            out(Output::Drop {
                t: now,
                packet,
                reason: DropReason::Buffer,
            });
            return;
        }
        let was_empty = self.queue.is_empty();
        self.queue.push_back(Queued {
            bytes,
            enq: now,
            packet,
        });
        self.queue_bytes += bytes as u64;
        if was_empty {
            self.new_head(now);
        }
    }

    /// The time of the next thing the model will do by itself, if any.
    pub fn next_event(&self) -> Option<Time> {
        self.next_internal().map(|(t, _)| t)
    }

    /// Process everything due at or before `now`, in time order.
    pub fn advance(&mut self, now: Time, out: &mut impl FnMut(Output<P>)) {
        while let Some((t, ev)) = self.next_internal() {
            if t > now {
                break;
            }
            self.clock = self.clock.max(t);
            self.handle(ev, out);
        }
        self.clock = self.clock.max(now);
    }

    fn next_internal(&self) -> Option<(Time, Ev)> {
        let mut best: Option<(Time, Ev)> = None;
        let mut consider = |t: Option<Time>, ev: Ev| {
            if let Some(t) = t {
                if best.is_none_or(|b| (t, ev) < b) {
                    best = Some((t, ev));
                }
            }
        };
        consider(self.steps.get(self.next_step).map(|s| s.t), Ev::Step);
        consider(
            self.outages.get(self.next_outage).map(|o| o.0),
            Ev::OutageStart,
        );
        consider(
            self.queue_drops.get(self.next_queue_drop).copied(),
            Ev::QueueDrop,
        );
        consider(self.active_until, Ev::OutageEnd);
        consider(self.head_tx_end, Ev::Complete);
        if self.trace.is_some() && !self.queue.is_empty() && self.active_until.is_none() {
            consider(Some(self.opportunity_time()), Ev::Opportunity);
        }
        consider(self.line.peek().map(|f| f.at), Ev::Deliver);
        best
    }

    fn handle(&mut self, ev: Ev, out: &mut impl FnMut(Output<P>)) {
        let t = self.clock;
        match ev {
            Ev::Step => {
                let s = self.steps[self.next_step].clone();
                self.next_step += 1;
                if let Some(r) = s.rate_bps {
                    self.rate_bps = r.max(1);
                }
                if let Some(d) = s.delay {
                    self.delay = d;
                }
                if let Some(l) = s.loss {
                    self.loss = l;
                }
            }
            Ev::OutageStart => {
                let (_, end) = self.outages[self.next_outage];
                self.next_outage += 1;
                if let Some(cur) = self.active_until {
                    // Overlapping window: the outage in progress lasts longer.
                    self.active_until = Some(cur.max(end));
                    if let Some(log) = self.outage_log.last_mut() {
                        log.until = log.until.max(end);
                    }
                    return;
                }
                self.active_until = Some(end);
                self.outage_log.push(OutageLog {
                    start: t,
                    until: end,
                    arrivals: Vec::new(),
                });
                out(Output::OutageStart { t, until: end });
                match self.mode {
                    OutageMode::Hold => {
                        if let Some(e) = self.head_tx_end.take() {
                            self.paused_left = Some(e - t);
                        }
                    }
                    OutageMode::Drop => {
                        self.dropping = true;
                        self.flush(t, out);
                    }
                }
            }
            Ev::QueueDrop => {
                self.next_queue_drop += 1;
                if self.active_until.is_some() {
                    self.dropping = true;
                    self.flush(t, out);
                }
            }
            Ev::OutageEnd => {
                self.active_until = None;
                self.dropping = false;
                out(Output::OutageEnd { t });
                if let Some(left) = self.paused_left.take() {
                    self.head_tx_end = Some(t + left);
                } else if self.trace.is_some() {
                    // Opportunities during the outage were lost; a partly sent head continues.
                    if !self.queue.is_empty() {
                        self.skip_opportunities_before(t);
                    }
                } else if !self.queue.is_empty() && self.head_tx_end.is_none() {
                    self.new_head(t);
                }
            }
            Ev::Complete => {
                self.head_tx_end = None;
                self.complete_head(t, out);
            }
            Ev::Opportunity => {
                self.record_start(t);
                let mut credit = TRACE_OPPORTUNITY_BYTES;
                while credit > 0 && !self.queue.is_empty() {
                    let take = credit.min(self.head_left);
                    self.head_left -= take;
                    credit -= take;
                    if self.head_left == 0 {
                        self.complete_head(t, out);
                    }
                }
                self.skip_opportunities_through(t);
            }
            Ev::Deliver => {
                if let Some(f) = self.line.pop() {
                    self.stats.delivered_packets += 1;
                    out(Output::Deliver {
                        t: f.at,
                        packet: f.packet,
                    });
                }
            }
        }
    }

    /// Everything queued is lost (an outage that drops, or a failure).
    fn flush(&mut self, t: Time, out: &mut impl FnMut(Output<P>)) {
        self.head_tx_end = None;
        self.paused_left = None;
        self.head_started = false;
        self.queue_bytes = 0;
        while let Some(q) = self.queue.pop_front() {
            self.stats.outage_drops += 1;
            out(Output::Drop {
                t,
                packet: q.packet,
                reason: DropReason::Outage,
            });
        }
    }

    /// The queue got a new head packet at `t`: start its service if the link is up.
    fn new_head(&mut self, t: Time) {
        let Some(h) = self.queue.front() else { return };
        self.head_started = false;
        if self.trace.is_some() {
            self.head_left = h.bytes;
            // Opportunities strictly before the arrival are gone.
            self.skip_opportunities_before(t);
            return;
        }
        if self.active_until.is_some() {
            return; // hold outage: starts at the outage end
        }
        let bytes = h.bytes as u64;
        self.record_start(t);
        self.head_tx_end = Some(t + Time::tx_time(bytes, self.rate_bps));
    }

    fn record_start(&mut self, t: Time) {
        if self.head_started {
            return;
        }
        if let Some(h) = self.queue.front() {
            self.head_started = true;
            let d = (t - h.enq).ns();
            self.stats.queue_delay_sum_ns += d as u128;
            self.stats.queue_delay_max_ns = self.stats.queue_delay_max_ns.max(d);
            self.stats.served_packets += 1;
        }
    }

    /// The head packet has left the bottleneck at `t`.
    fn complete_head(&mut self, t: Time, out: &mut impl FnMut(Output<P>)) {
        let Some(q) = self.queue.pop_front() else {
            return;
        };
        self.queue_bytes -= q.bytes as u64;
        if self.rng.bernoulli(self.loss) {
            self.stats.random_losses += 1;
            out(Output::Drop {
                t,
                packet: q.packet,
                reason: DropReason::Loss,
            });
        } else {
            self.stats.forwarded_packets += 1;
            self.stats.forwarded_bytes += q.bytes as u64;
            self.seq += 1;
            // First in, first out: after a delay step down, a packet leaves no earlier than the
            // one before it (a shaper's queue, not netem's reordering jitter).
            let at = (t + self.delay).max(self.last_at);
            self.last_at = at;
            self.line.push(InFlight {
                at,
                seq: self.seq,
                packet: q.packet,
            });
        }
        if !self.queue.is_empty() {
            self.new_head(t);
            if self.trace.is_some() {
                // The next packet may use the rest of this opportunity (handled by the caller's
                // loop); its queue delay starts counting now.
                self.record_start(t);
            }
        }
    }

    fn opportunity_time(&self) -> Time {
        let tr = self.trace.as_ref().expect("trace mode");
        self.opp_base + Time::from_ms(tr[self.opp_idx])
    }

    fn step_opportunity(&mut self) {
        let tr = self.trace.as_ref().expect("trace mode");
        self.opp_idx += 1;
        if self.opp_idx == tr.len() {
            self.opp_idx = 0;
            self.opp_base += Time::from_ms(*tr.last().expect("non-empty trace"));
        }
    }

    fn skip_opportunities_before(&mut self, t: Time) {
        while self.opportunity_time() < t {
            self.step_opportunity();
        }
    }

    fn skip_opportunities_through(&mut self, t: Time) {
        // Mahimahi uses one opportunity per trace line; several lines with the same timestamp are
        // several opportunities, so step exactly one (the next one may share `t`).
        if self.opportunity_time() <= t {
            self.step_opportunity();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(rate_mbps: u64, delay_ms: u64, buffer: Buffer) -> DirConfig {
        DirConfig {
            service: Service::Rate(rate_mbps * 1_000_000),
            delay: Time::from_ms(delay_ms),
            loss: 0.0,
            buffer,
            outage_mode: OutageMode::Hold,
        }
    }

    /// Run the model over arrivals (time, bytes, id) until `end`, collecting outputs.
    fn drive(l: &mut LinkDir<u32>, arrivals: &[(Time, u32, u32)], end: Time) -> Vec<Output<u32>> {
        let mut v = Vec::new();
        for &(t, b, id) in arrivals {
            l.enqueue(t, b, id, &mut |o| v.push(o));
        }
        l.advance(end, &mut |o| v.push(o));
        v
    }

    fn deliveries(v: &[Output<u32>]) -> Vec<(u64, u32)> {
        v.iter()
            .filter_map(|o| match o {
                Output::Deliver { t, packet } => Some((t.ns(), *packet)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn rate_then_delay() {
        // 1500 B at 12 Mbit/s = 1 ms on the wire; + 10 ms propagation.
        let mut l = LinkDir::new(cfg(12, 10, Buffer::Packets(10)), Rng::from_seed(1));
        let v = drive(
            &mut l,
            &[(Time::ZERO, 1500, 1), (Time::ZERO, 1500, 2)],
            Time::from_secs(1),
        );
        // Back-to-back: second finishes at 2 ms.
        assert_eq!(deliveries(&v), vec![(11_000_000, 1), (12_000_000, 2)]);
        let s = l.stats();
        assert_eq!(s.queue_delay_max_ns, 1_000_000);
        assert_eq!(s.forwarded_bytes, 3000);
    }

    #[test]
    fn idle_link_starts_at_arrival() {
        let mut l = LinkDir::new(cfg(12, 0, Buffer::Packets(10)), Rng::from_seed(1));
        let v = drive(
            &mut l,
            &[(Time::from_ms(5), 1500, 1), (Time::from_ms(50), 750, 2)],
            Time::from_secs(1),
        );
        assert_eq!(deliveries(&v), vec![(6_000_000, 1), (50_500_000, 2)]);
    }

    #[test]
    fn droptail_counts_packet_in_service() {
        let mut l = LinkDir::new(cfg(12, 0, Buffer::Packets(2)), Rng::from_seed(1));
        let arr: Vec<_> = (0..4).map(|i| (Time::ZERO, 1500, i)).collect();
        let v = drive(&mut l, &arr, Time::from_secs(1));
        assert_eq!(deliveries(&v).len(), 2);
        assert_eq!(l.stats().buffer_drops, 2);
        // Byte limit: 3000 B holds two 1500 B packets but not a third.
        let mut l = LinkDir::new(cfg(12, 0, Buffer::Bytes(3000)), Rng::from_seed(1));
        let v = drive(&mut l, &arr, Time::from_secs(1));
        assert_eq!(
            deliveries(&v).iter().map(|d| d.1).collect::<Vec<_>>(),
            vec![0, 1]
        );
    }

    #[test]
    fn hold_outage_pauses_service() {
        // Packet starts at 0, needs 1 ms; outage 0.5..10.5 ms pauses it: done at 11 ms.
        let mut l = LinkDir::new(cfg(12, 2, Buffer::Packets(10)), Rng::from_seed(1));
        l.add_outage(Time::from_us(500), Time::from_ms(10));
        let v = drive(
            &mut l,
            &[(Time::ZERO, 1500, 1), (Time::from_ms(3), 1500, 2)],
            Time::from_secs(1),
        );
        assert_eq!(deliveries(&v), vec![(13_000_000, 1), (14_000_000, 2)]);
        assert!(v.contains(&Output::OutageStart {
            t: Time::from_us(500),
            until: Time::from_us(10_500)
        }));
        assert!(v.contains(&Output::OutageEnd {
            t: Time::from_us(10_500)
        }));
    }

    #[test]
    fn drop_outage_flushes_and_refuses() {
        let mut c = cfg(12, 0, Buffer::Packets(10));
        c.outage_mode = OutageMode::Drop;
        let mut l = LinkDir::new(c, Rng::from_seed(1));
        l.add_outage(Time::from_us(500), Time::from_ms(10));
        let v = drive(
            &mut l,
            &[
                (Time::ZERO, 1500, 1),
                (Time::ZERO, 1500, 2),
                (Time::from_ms(5), 1500, 3),
                (Time::from_ms(20), 1500, 4),
            ],
            Time::from_secs(1),
        );
        assert_eq!(deliveries(&v), vec![(21_000_000, 4)]);
        assert_eq!(l.stats().outage_drops, 3);
    }

    #[test]
    fn a_queue_drop_in_a_hold_outage_flushes_and_refuses_until_its_end() {
        // Hold mode, outage 0.5..10.5 ms, a failure at 1 ms: packets 1 (paused in service) and 2
        // (queued) are lost, 3 (5 ms) is refused, 4 (20 ms) is carried: 1 ms on the wire.
        let mut l = LinkDir::new(cfg(12, 0, Buffer::Packets(10)), Rng::from_seed(1));
        l.add_outage(Time::from_us(500), Time::from_ms(10));
        l.add_queue_drop(Time::from_ms(1));
        let v = drive(
            &mut l,
            &[
                (Time::ZERO, 1500, 1),
                (Time::ZERO, 1500, 2),
                (Time::from_ms(5), 1500, 3),
                (Time::from_ms(20), 1500, 4),
            ],
            Time::from_secs(1),
        );
        assert_eq!(deliveries(&v), vec![(21_000_000, 4)]);
        assert_eq!(l.stats().outage_drops, 3);
        // Without the failure the same outage holds them all.
        let mut l = LinkDir::new(cfg(12, 0, Buffer::Packets(10)), Rng::from_seed(1));
        l.add_outage(Time::from_us(500), Time::from_ms(10));
        let v = drive(
            &mut l,
            &[
                (Time::ZERO, 1500, 1),
                (Time::ZERO, 1500, 2),
                (Time::from_ms(5), 1500, 3),
            ],
            Time::from_secs(1),
        );
        assert_eq!(
            deliveries(&v),
            vec![(11_000_000, 1), (12_000_000, 2), (13_000_000, 3)]
        );
    }

    #[test]
    fn merged_overlapping_outages() {
        let mut l = LinkDir::new(cfg(12, 0, Buffer::Packets(10)), Rng::from_seed(1));
        l.add_outage(Time::from_ms(1), Time::from_ms(4)); // 1..5
        l.add_outage(Time::from_ms(3), Time::from_ms(5)); // 3..8
        let v = drive(&mut l, &[(Time::from_ms(2), 1500, 1)], Time::from_secs(1));
        assert_eq!(deliveries(&v), vec![(9_000_000, 1)]);
        let starts = v
            .iter()
            .filter(|o| matches!(o, Output::OutageStart { .. }))
            .count();
        assert_eq!(starts, 1);
    }

    #[test]
    fn schedule_changes_rate_delay_loss() {
        let mut l = LinkDir::new(cfg(12, 10, Buffer::Packets(10)), Rng::from_seed(1));
        l.add_step(Step {
            t: Time::from_ms(100),
            rate_bps: Some(6_000_000),
            delay: Some(Time::from_ms(1)),
            loss: None,
        });
        let v = drive(
            &mut l,
            &[(Time::ZERO, 1500, 1), (Time::from_ms(200), 1500, 2)],
            Time::from_secs(1),
        );
        // Before: 1 + 10 ms. After: 2 ms on the wire + 1 ms.
        assert_eq!(deliveries(&v), vec![(11_000_000, 1), (203_000_000, 2)]);
        // Loss 1.0 is not a valid scenario value, but 0.999... drops practically everything.
        let mut l = LinkDir::new(cfg(12, 0, Buffer::Packets(1000)), Rng::from_seed(1));
        l.add_step(Step {
            t: Time::ZERO,
            rate_bps: None,
            delay: None,
            loss: Some(0.999_999_999),
        });
        let arr: Vec<_> = (0..50).map(|i| (Time::from_ms(i), 100, i as u32)).collect();
        let v = drive(&mut l, &arr, Time::from_secs(1));
        assert!(deliveries(&v).is_empty());
        assert_eq!(l.stats().random_losses, 50);
    }

    #[test]
    fn a_delay_step_down_never_reorders() {
        // 12 Mbit/s: 1 ms per 1500-byte packet; 50 ms delay, then 5 ms from t = 10 ms.
        let mut l = LinkDir::new(cfg(12, 50, Buffer::Packets(10)), Rng::from_seed(1));
        l.add_step(Step {
            t: Time::from_ms(10),
            rate_bps: None,
            delay: Some(Time::from_ms(5)),
            loss: None,
        });
        let arr = [(Time::from_ms(8), 1500, 1), (Time::from_ms(20), 1500, 2)];
        let v = drive(&mut l, &arr, Time::from_secs(1));
        // Packet 1 leaves the bottleneck at 9 ms (delivered at 59 ms); packet 2 at 21 ms would
        // arrive at 26 ms, ahead of packet 1: it waits for it, first in first out.
        assert_eq!(deliveries(&v), vec![(59_000_000, 1), (59_000_000, 2)]);
    }

    #[test]
    fn random_loss_is_seeded_and_near_p() {
        let run = |seed| {
            let mut c = cfg(100, 0, Buffer::Packets(100_000));
            c.loss = 0.1;
            let mut l = LinkDir::new(c, Rng::from_seed(seed));
            let arr: Vec<_> = (0..10_000)
                .map(|i| (Time::from_ms(i), 100, i as u32))
                .collect();
            deliveries(&drive(&mut l, &arr, Time::from_secs(100)))
        };
        let a = run(7);
        assert_eq!(a, run(7));
        assert_ne!(a, run(8));
        // 10 000 draws with p = 0.1: 1000 +- 30 (1 sd); allow 5 sd.
        let lost = 10_000 - a.len();
        assert!((850..=1150).contains(&lost), "lost {lost}");
    }

    #[test]
    fn trace_opportunities_mahimahi() {
        // Opportunities at 1, 1, 4 ms; period 4 ms: then 5, 5, 8, 9, 9, 12 ...
        let trace = Arc::new(vec![1, 1, 4]);
        let c = DirConfig {
            service: Service::Trace(trace),
            delay: Time::ZERO,
            loss: 0.0,
            buffer: Buffer::Packets(100),
            outage_mode: OutageMode::Hold,
        };
        let mut l = LinkDir::new(c, Rng::from_seed(1));
        // Four 1500 B packets at 0: out at 1, 1, 4, 5 ms. A 3000 B packet at 6 ms needs two
        // opportunities: 8 and 9 ms. A 100 B and a 1400 B packet at 10 ms share the 12 ms one.
        let v = drive(
            &mut l,
            &[
                (Time::ZERO, 1500, 1),
                (Time::ZERO, 1500, 2),
                (Time::ZERO, 1500, 3),
                (Time::ZERO, 1500, 4),
                (Time::from_ms(6), 3000, 5),
                (Time::from_ms(10), 100, 6),
                (Time::from_ms(10), 1400, 7),
            ],
            Time::from_secs(1),
        );
        let ms: Vec<_> = deliveries(&v)
            .iter()
            .map(|(t, p)| (t / 1_000_000, *p))
            .collect();
        assert_eq!(
            ms,
            vec![(1, 1), (1, 2), (4, 3), (5, 4), (9, 5), (12, 6), (12, 7)]
        );
    }

    #[test]
    fn wasted_opportunities_do_not_accumulate() {
        // Trace: one opportunity per ms. A burst after 100 idle ms still gets one per ms.
        let trace = Arc::new(vec![1]);
        let c = DirConfig {
            service: Service::Trace(trace),
            delay: Time::ZERO,
            loss: 0.0,
            buffer: Buffer::Packets(100),
            outage_mode: OutageMode::Hold,
        };
        let mut l = LinkDir::new(c, Rng::from_seed(1));
        let arr: Vec<_> = (0..3).map(|i| (Time::from_us(100_500), 1500, i)).collect();
        let v = drive(&mut l, &arr, Time::from_secs(1));
        let ms: Vec<_> = deliveries(&v).iter().map(|(t, _)| t / 1_000_000).collect();
        assert_eq!(ms, vec![101, 102, 103]);
    }

    #[test]
    fn next_event_reports_earliest() {
        let mut l = LinkDir::new(cfg(12, 10, Buffer::Packets(10)), Rng::from_seed(1));
        assert_eq!(l.next_event(), None);
        l.enqueue(Time::ZERO, 1500, 1, &mut |_| {});
        assert_eq!(l.next_event(), Some(Time::from_ms(1)));
        l.advance(Time::from_ms(1), &mut |_| {});
        assert_eq!(l.next_event(), Some(Time::from_ms(11)));
        assert_eq!(l.in_flight(), 1);
    }
}
