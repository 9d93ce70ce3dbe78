//! The discrete-event core: a priority queue of events ordered by (time, insertion sequence).
//!
//! Ties at the same nanosecond are broken by insertion order (after bin ends, which go first),
//! so a run is bit-identical in any process. Events are small `Copy` values (no boxing): packets wait in the links that hold them,
//! and an event names only the component to wake. Timers are lazy (as in htsim and ns-3's TCP):
//! a component keeps its own deadlines and at most a few pending wake-ups, and a wake-up that
//! finds nothing due simply re-arms, so restarting a timer on every ACK costs no event.

use railpath_core::Time;

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
    /// Scripted control of a flow (e.g. an MP_PRIO change): `ctl` numbers a (flow, index into
    /// the flow's script) pair the scheduler keeps ([`Scheduler::at_control`],
    /// [`Scheduler::control`]), so that every event fits in 8 bytes and travels in a register.
    FlowControl { ctl: u32 },
    /// A bond's link monitoring check (Linux bonding `miimon`).
    BondCheck { bond: u32 },
    /// A load balancer's tracking sees a link go down (after its detection delay).
    BalancerCheck { balancer: u32 },
    /// End of a time-series bin.
    Sample,
}

/// A queued event. Its order is that of the 128-bit integer whose high 64 bits are the time
/// and whose low 64 are a same-time class bit (0 for bin ends, so a bin [t0, t1) closes before
/// anything that happens at t1, 1 for everything else) then the insertion sequence number. The
/// two halves are kept as two `u64` and joined into the `u128` when compared ([`Entry::key`]):
/// a `u128` field would align the entry to 16 bytes and make it 32 bytes long, where it is 24,
/// and with a thousand flows' timers the heap is some 2 000 entries, sifted through 11 levels.
#[derive(Debug, Clone, Copy)]
struct Entry {
    time: u64,
    order: u64,
    ev: Event,
}

impl Entry {
    #[inline(always)]
    fn key(&self) -> u128 {
        ((self.time as u128) << 64) | self.order as u128
    }
}

const CLASS_BIT: u64 = 1 << 63;

/// The event queue and the simulated clock.
///
/// A binary min-heap on the entries' keys (J. W. J. Williams, "Algorithm 232: Heapsort", CACM 7(6),
/// 1964; Knuth, TAOCP vol. 3, 5.2.3), written out rather than `std::collections::BinaryHeap`: an
/// entry being placed stays in registers until its slot is found (the hole method), where
/// `BinaryHeap`'s in-place replacement of the top writes the entry and then reads it back with wide
/// loads, which wait for the narrow stores (no store-to-load forwarding; docs/performance.md).
/// Handling an event usually schedules another (a link's next service, the next pipe arrival),
/// so a popped event stays in the heap while it is handled: the first event scheduled then takes
/// its place with one sift down, instead of a pop's sift and a push's sift up. The order of events
/// is that of their keys whatever the heap's internal layout (keys are unique).
#[derive(Debug, Default)]
pub struct Scheduler {
    heap: Vec<Entry>,
    /// The heap's top is the event last returned by `pop`, already handled or being handled: the
    /// next `at` overwrites it, the next `pop` removes it first.
    popped_top: bool,
    seq: u64,
    now: Time,
    /// The horizon of the last `pop`: no event after it is handled.
    until: Time,
    processed: u64,
    /// The (flow, script index) of each `FlowControl` scheduled, by its `ctl`.
    controls: Vec<(u32, u32)>,
}

impl Scheduler {
    pub fn new() -> Scheduler {
        Scheduler {
            heap: Vec::with_capacity(1024),
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
            time: time.ns(),
            order: class | self.seq,
            ev,
        };
        self.place(entry);
    }

    /// Put `entry` in the heap; returns its slot (0: it is the least pending).
    #[inline(always)]
    fn place(&mut self, entry: Entry) -> usize {
        if self.popped_top {
            // The top is handled: the new entry takes its place.
            self.popped_top = false;
            self.sift_down_from_top(entry)
        } else {
            self.push(entry)
        }
    }

    /// [`Scheduler::at`] for an event its handler schedules as the last thing it does, which
    /// the handler then handles itself if it is the next event: returns true, with the event
    /// popped (the clock at `time`, the event counted as processed), exactly as the next `pop`
    /// would have returned it, when it went to the top of the heap and `time` is within the
    /// last `pop`'s horizon. It then costs one sift instead of a sift, a return to the event
    /// loop and its dispatch. A link's next arrival is often the next event: its pipe's packets
    /// arrive one transmission time apart (docs/models/engine.md).
    #[inline]
    pub fn at_or_take(&mut self, time: Time, ev: Event) -> bool {
        debug_assert!(time >= self.now, "event scheduled in the past");
        let time = time.max(self.now);
        self.seq += 1;
        let class = if ev == Event::Sample { 0 } else { CLASS_BIT };
        let entry = Entry {
            time: time.ns(),
            order: class | self.seq,
            ev,
        };
        if self.place(entry) != 0 || time > self.until {
            return false;
        }
        self.popped_top = true;
        self.now = time;
        self.processed += 1;
        true
    }
    /// Schedule control `idx` of flow `flow` (`Event::FlowControl`) at `time`.
    pub fn at_control(&mut self, time: Time, flow: u32, idx: u32) {
        let ctl = u32::try_from(self.controls.len()).expect("fewer than 2^32 scripted controls");
        self.controls.push((flow, idx));
        self.at(time, Event::FlowControl { ctl });
    }
    /// The (flow, script index) of a `FlowControl` event's `ctl`.
    pub fn control(&self, ctl: u32) -> (u32, u32) {
        self.controls[ctl as usize]
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
            self.remove_top();
        }
        self.until = until;
        let top = self.heap.first()?;
        if top.time > until.ns() {
            return None;
        }
        let (time, ev) = (top.time, top.ev);
        self.popped_top = true;
        self.now = Time::from_ns(time);
        self.processed += 1;
        Some(ev)
    }
    /// Advance the clock to `t` with no event (end of run).
    pub fn advance_to(&mut self, t: Time) {
        if t > self.now {
            self.now = t;
        }
    }

    /// Add `e` at the bottom and move it up past every parent with a larger key.
    #[inline]
    fn push(&mut self, e: Entry) -> usize {
        let mut hole = self.heap.len();
        self.heap.push(e);
        while hole > 0 {
            let parent = (hole - 1) / 2;
            if self.heap[parent].key() <= e.key() {
                break;
            }
            self.heap[hole] = self.heap[parent];
            hole = parent;
        }
        self.heap[hole] = e;
        hole
    }

    /// Put `e` in the top's place and move it down past every smaller child (the heap is not
    /// empty: `popped_top` holds its top).
    #[inline]
    fn sift_down_from_top(&mut self, e: Entry) -> usize {
        let heap = &mut self.heap[..];
        let len = heap.len();
        let mut hole = 0;
        loop {
            let mut child = 2 * hole + 1;
            if child >= len {
                break;
            }
            if child + 1 < len && heap[child + 1].key() < heap[child].key() {
                child += 1;
            }
            if heap[child].key() >= e.key() {
                break;
            }
            heap[hole] = heap[child];
            hole = child;
        }
        if let Some(slot) = heap.get_mut(hole) {
            *slot = e;
        }
        hole
    }

    /// Remove the top: the last entry takes its place.
    #[inline]
    fn remove_top(&mut self) {
        if let Some(last) = self.heap.pop() {
            if !self.heap.is_empty() {
                self.sift_down_from_top(last);
            }
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

    /// A queue with `n` flow starts (ids 0..n) at random times in the first 100 us, the
    /// generator that drew them, and the next id.
    fn seeded(seed: u64, n: u32) -> (Scheduler, railpath_core::Rng, u32) {
        let mut s = Scheduler::new();
        let mut rng = railpath_core::Rng::from_seed(seed);
        for flow in 0..n {
            s.at(Time::from_us(rng.below(100)), Event::FlowStart { flow });
        }
        (s, rng, n)
    }

    #[test]
    fn scheduling_while_handling_keeps_key_order() {
        // Events scheduled while one is handled (the first into the handled event's slot) come
        // out as from a plain priority queue: by time, then insertion order. Ids count up in
        // insertion order, so (time, id) must increase strictly.
        let (mut s, mut rng, mut next) = seeded(7, 5);
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
    fn an_event_is_taken_at_once_only_when_it_is_next() {
        let mut s = Scheduler::new();
        s.at(Time::from_ms(5), Event::FlowStart { flow: 1 });
        s.at(Time::from_ms(2), Event::FlowStart { flow: 0 });
        s.at(Time::from_ms(9), Event::Sample);
        assert_eq!(s.pop(Time::from_ms(10)), Some(Event::FlowStart { flow: 0 }));
        // Handling the 2 ms event: an arrival at 3 ms comes before the 5 ms start: taken.
        assert!(s.at_or_take(Time::from_ms(3), Event::LinkArrival { dir: 0 }));
        assert_eq!(
            (s.now(), s.processed(), s.pending()),
            (Time::from_ms(3), 2, 2)
        );
        // At 5 ms it would tie with the start scheduled before it: the start goes first.
        assert!(!s.at_or_take(Time::from_ms(5), Event::LinkArrival { dir: 0 }));
        assert_eq!(
            (s.now(), s.processed(), s.pending()),
            (Time::from_ms(3), 2, 3)
        );
        assert_eq!(s.pop(Time::from_ms(10)), Some(Event::FlowStart { flow: 1 }));
        assert_eq!(s.pop(Time::from_ms(7)), Some(Event::LinkArrival { dir: 0 }));
        // Next, but past the horizon of the last pop (7 ms): scheduled, not taken.
        assert!(!s.at_or_take(Time::from_ms(8), Event::LinkArrival { dir: 1 }));
        assert_eq!(s.pop(Time::from_ms(7)), None);
        assert_eq!(
            s.pop(Time::from_ms(10)),
            Some(Event::LinkArrival { dir: 1 })
        );
        // A bin end goes before anything else at its time, though scheduled earlier.
        assert!(!s.at_or_take(Time::from_ms(9), Event::LinkArrival { dir: 2 }));
        assert_eq!(s.pop(Time::from_ms(10)), Some(Event::Sample));
        assert_eq!(
            s.pop(Time::from_ms(10)),
            Some(Event::LinkArrival { dir: 2 })
        );
        assert_eq!(s.processed(), 7);
    }

    #[test]
    fn taking_events_at_once_keeps_the_order_of_a_plain_queue() {
        // Two runs of one random schedule: one with `at` only, one where every event's handler
        // schedules its last event with `at_or_take` and handles it itself when taken. Both
        // must handle the same events at the same times in the same order, and count them.
        fn run(take: bool) -> (Vec<(Time, u32)>, u64) {
            let (mut s, mut rng, mut next) = seeded(11, 4);
            let horizon = Time::from_ms(40);
            let mut got = Vec::new();
            while let Some(mut ev) = s.pop(horizon) {
                loop {
                    let Event::FlowStart { flow } = ev else {
                        unreachable!("only flow starts are scheduled")
                    };
                    got.push((s.now(), flow));
                    if next >= 2000 {
                        break;
                    }
                    for _ in 0..rng.below(3) {
                        let t = s.now() + Time::from_us(rng.below(60));
                        s.at(t, Event::FlowStart { flow: next });
                        next += 1;
                    }
                    let t = s.now() + Time::from_us(rng.below(40));
                    ev = Event::FlowStart { flow: next };
                    next += 1;
                    if !take {
                        s.at(t, ev);
                        break;
                    }
                    if !s.at_or_take(t, ev) {
                        break;
                    }
                }
            }
            (got, s.processed())
        }
        let (plain, n_plain) = run(false);
        let (taken, n_taken) = run(true);
        assert!(plain.len() > 1000, "{}", plain.len());
        assert_eq!(plain, taken);
        assert_eq!(n_plain, n_taken);
        assert_eq!(n_plain as usize, plain.len());
    }

    #[test]
    fn an_event_fits_in_a_register() {
        // Passed by value in one register, not through memory (docs/performance.md).
        assert_eq!(std::mem::size_of::<Event>(), 8);
    }

    #[test]
    fn a_queued_event_is_24_bytes_and_keeps_the_128_bit_order() {
        assert_eq!(std::mem::size_of::<Entry>(), 24);
        // Time first, then the class bit, then the sequence: a bin end at t goes before an
        // earlier-inserted event at t, and both after anything at t - 1 ns.
        let e = |time: u64, order: u64| Entry {
            time,
            order,
            ev: Event::Sample,
        };
        let late_seq = e(5, CLASS_BIT | 1);
        let bin_end = e(5, 7);
        let earlier = e(4, CLASS_BIT | u64::MAX >> 1);
        assert!(earlier.key() < bin_end.key() && bin_end.key() < late_seq.key());
        assert_eq!(late_seq.key(), (5u128 << 64) | (CLASS_BIT | 1) as u128);
    }

    #[test]
    fn controls_come_back_with_their_flow_and_index() {
        let mut s = Scheduler::new();
        s.at_control(Time::from_ms(2), 7, u32::MAX);
        s.at_control(Time::from_ms(1), 3, 5);
        s.at(Time::from_ms(1), Event::FlowStart { flow: 9 });
        let mut got = Vec::new();
        while let Some(ev) = s.pop(Time::MAX) {
            got.push(match ev {
                Event::FlowControl { ctl } => s.control(ctl),
                Event::FlowStart { flow } => (flow, 0),
                other => unreachable!("{other:?}"),
            });
        }
        // By time, then insertion order; the largest index (a car's reconnection) intact.
        assert_eq!(got, vec![(3, 5), (9, 0), (7, u32::MAX)]);
    }

    #[test]
    fn pop_respects_horizon() {
        let mut s = Scheduler::new();
        s.at(Time::from_ms(10), Event::Sample);
        assert_eq!(s.pop(Time::from_ms(9)), None);
        assert_eq!(s.pop(Time::from_ms(10)), Some(Event::Sample));
    }
}
