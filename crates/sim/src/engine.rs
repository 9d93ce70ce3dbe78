//! The discrete-event core: a priority queue of events ordered by (time, insertion sequence).
//!
//! Ties at the same nanosecond are broken by insertion order (after bin ends, which go first),
//! so a run is bit-identical in any process. Events are small `Copy` values (no boxing): packets wait in the links that hold them,
//! and an event names only the component to wake. Timers are lazy (as in htsim and ns-3's TCP):
//! a component keeps its own deadlines and at most a few pending wake-ups, and a wake-up that
//! finds nothing due simply re-arms, so restarting a timer on every ACK costs no event.

use railpath_core::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// What to wake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A link direction finished serialising its head packet (or reached a delivery opportunity).
    LinkService { dir: u32 },
    /// The head of a link direction's propagation pipe reaches the far end.
    LinkArrival { dir: u32 },
    /// The next step of a link's schedule (rate/delay/loss change, outage start or end).
    LinkStep { link: u32 },
    /// A flow starts.
    FlowStart { flow: u32 },
    /// A flow endpoint's timers (RTO, TLP, RACK, pacing, delayed ACK).
    Timer { flow: u32, sub: u16, side: u8 },
    /// Scripted control of a flow (e.g. an MP_PRIO change) by index into the flow's script.
    FlowControl { flow: u32, idx: u32 },
    /// A bond's link monitoring check (Linux bonding `miimon`).
    BondCheck { bond: u32 },
    /// A load balancer's tracking sees a link go down (after its detection delay).
    BalancerCheck { balancer: u32 },
    /// End of a time-series bin.
    Sample,
}

/// A queued event. `key` packs the order into one integer: time in the high 64 bits, then a
/// same-time class bit (0 for bin ends, so a bin [t0, t1) closes before anything that happens at
/// t1, 1 for everything else), then the insertion sequence number.
#[derive(Debug, Clone, Copy)]
struct Entry {
    key: u128,
    ev: Event,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    // Reversed: BinaryHeap is a max-heap, we want the smallest key on top.
    fn cmp(&self, o: &Self) -> Ordering {
        o.key.cmp(&self.key)
    }
}

const CLASS_BIT: u64 = 1 << 63;

/// The event queue and the simulated clock.
///
/// Handling an event usually schedules another (a link's next service, the next pipe arrival),
/// so a popped event stays in the heap while it is handled: the first event scheduled then takes
/// its place with one sift down, instead of a pop's sift and a push's sift up. The order of events
/// is that of their keys whatever the heap's internal layout (keys are unique).
#[derive(Debug, Default)]
pub struct Scheduler {
    heap: BinaryHeap<Entry>,
    /// The heap's top is the event last returned by `pop`, already handled or being handled: the
    /// next `at` overwrites it, the next `pop` removes it first.
    popped_top: bool,
    seq: u64,
    now: Time,
    processed: u64,
}

impl Scheduler {
    pub fn new() -> Scheduler {
        Scheduler {
            heap: BinaryHeap::with_capacity(1024),
            ..Default::default()
        }
    }
    /// The current simulated time.
    #[inline]
    pub fn now(&self) -> Time {
        self.now
    }
    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }
    pub fn pending(&self) -> usize {
        self.heap.len() - self.popped_top as usize
    }
    /// Schedule `ev` at `time` (never before now).
    #[inline]
    pub fn at(&mut self, time: Time, ev: Event) {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let time = time.max(self.now);
        self.seq += 1;
        let class = if ev == Event::Sample { 0 } else { CLASS_BIT };
        let entry = Entry {
            key: ((time.ns() as u128) << 64) | (class | self.seq) as u128,
            ev,
        };
        if self.popped_top {
            self.popped_top = false;
            if let Some(mut top) = self.heap.peek_mut() {
                // Replaced in place; the heap is restored (sift down) when `top` is dropped.
                *top = entry;
                return;
            }
        }
        self.heap.push(entry);
    }
    /// Schedule `ev` after `delay`.
    #[inline]
    pub fn after(&mut self, delay: Time, ev: Event) {
        let t = self.now + delay;
        self.at(t, ev);
    }
    /// Pop the next event at or before `until`, advancing the clock to it.
    #[inline]
    pub fn pop(&mut self, until: Time) -> Option<Event> {
        if self.popped_top {
            self.popped_top = false;
            self.heap.pop();
        }
        let top = self.heap.peek()?;
        if (top.key >> 64) as u64 > until.ns() {
            return None;
        }
        let (key, ev) = (top.key, top.ev);
        self.popped_top = true;
        self.now = Time::from_ns((key >> 64) as u64);
        self.processed += 1;
        Some(ev)
    }
    /// Advance the clock to `t` with no event (end of run).
    pub fn advance_to(&mut self, t: Time) {
        if t > self.now {
            self.now = t;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_order_then_insertion_order() {
        let mut s = Scheduler::new();
        s.at(Time::from_ms(5), Event::FlowStart { flow: 3 });
        s.at(Time::from_ms(5), Event::Sample);
        s.at(Time::from_ms(1), Event::FlowStart { flow: 2 });
        s.at(Time::from_ms(1), Event::FlowStart { flow: 1 });
        s.at(Time::from_ms(3), Event::LinkStep { link: 0 });
        let order: Vec<Event> = std::iter::from_fn(|| s.pop(Time::MAX)).collect();
        assert_eq!(
            order,
            vec![
                Event::FlowStart { flow: 2 },
                Event::FlowStart { flow: 1 },
                Event::LinkStep { link: 0 },
                // A bin end goes first among same-time events, though inserted later.
                Event::Sample,
                Event::FlowStart { flow: 3 },
            ]
        );
        assert_eq!(s.now(), Time::from_ms(5));
        assert_eq!(s.processed(), 5);
    }

    #[test]
    fn scheduling_while_handling_keeps_key_order() {
        // Events scheduled while one is handled (the first into the handled event's slot) come
        // out as from a plain priority queue: by time, then insertion order. Ids count up in
        // insertion order, so (time, id) must increase strictly.
        let mut s = Scheduler::new();
        let mut rng = railpath_core::Rng::from_seed(7);
        let mut next = 0u32;
        for _ in 0..5 {
            s.at(
                Time::from_us(rng.below(100)),
                Event::FlowStart { flow: next },
            );
            next += 1;
        }
        let mut got = Vec::new();
        while let Some(ev) = s.pop(Time::MAX) {
            let Event::FlowStart { flow } = ev else {
                unreachable!("only flow starts are scheduled")
            };
            got.push((s.now(), flow));
            // Zero to three more events, some at the current time.
            let k = if next < 300 { rng.below(4) } else { 0 };
            for _ in 0..k {
                let t = s.now() + Time::from_us(rng.below(50));
                s.at(t, Event::FlowStart { flow: next });
                next += 1;
            }
            assert_eq!(
                s.pending(),
                next as usize - got.len(),
                "scheduled, not yet popped"
            );
        }
        assert_eq!(got.len(), next as usize);
        for w in got.windows(2) {
            assert!(w[0] < w[1], "out of order: {w:?}");
        }
        assert_eq!(s.pending(), 0);
    }

    #[test]
    fn pop_respects_horizon() {
        let mut s = Scheduler::new();
        s.at(Time::from_ms(10), Event::Sample);
        assert_eq!(s.pop(Time::from_ms(9)), None);
        assert_eq!(s.pop(Time::from_ms(10)), Some(Event::Sample));
    }
}
