//! BLOAT: the sender-side transmission-status monitor against bufferbloat on one MPTCP path,
//! with head-of-line (HoL) retransmission (the BLOAT paper, seeds.md section 4: its section 3,
//! Figs. 4-5 and equation 1). Only the MPTCP sender changes; it works under any scheduler.
//!
//! 1. The monitoring buffer: when the scheduler gives data to a subflow, a record {subflow, DSN,
//!    length, time assigned} is appended; it is removed once both the subflow-level ACK and the
//!    data-level ACK cover that data (the paper's send structure: data leaves the MPTCP-level
//!    send buffer only then). Records are in assignment order, so the head is the oldest data
//!    still waiting: the HoL packet and the subflow it went on.
//! 2. Detection (Fig. 5): suspicion when the MPTCP-level send buffer (data sent and not yet
//!    covered by both ACKs) is above its running average; then, per subflow i,
//!    `TransmitTimes_i = NoPkt_i / MaxCwnd_i` (equation 1: its records in the monitor over the
//!    largest cwnd it has had, i.e. the round trips it would need to clear them). Bufferbloat
//!    when some TransmitTimes_i exceeds `Bufferbloat_Th`. It is the healthy path whose count
//!    rises (its data is subflow-ACKed but waits for the data ACK behind the bloated path's HoL
//!    packet; the paper's Fig. 9 plots subflow 1's), so the problem path is read from the
//!    monitor's head, as the paper's section 3.3 does.
//! 3. `Bufferbloat_Th` from the paths' bloat-free sRTT ratio r = max / min: 3 when they are
//!    equal, rising in proportion to 10 at r = 2 and beyond: `3 + 7 (min(r, 2) - 1)`. The
//!    bloat-free sRTT is each subflow's minimum RTT (no queue in it).
//! 4. Retransmission: the HoL packet, then every packet of the problem path not yet data-ACKed,
//!    is sent again on the normal path (with several others, the one with the most records in
//!    the monitor: it has carried the most data); while the condition lasts every new packet of
//!    the problem path is copied too, and new data keeps going to the problem path, which acts
//!    as the probe that lets the scheduler use it again as soon as its queue drains.
//! 5. "While the condition lasts": Fig. 5 nests the TransmitTimes test inside the suspicion
//!    test; an episode starts when both hold and lasts while the suspicion does (the send
//!    buffer above its average: the problem path's packets stuck in its queue keep it there
//!    until the queue drains). The TransmitTimes test cannot be the lasting condition: the
//!    healthy path's count falls as soon as the HoL packets it carries release its data, which
//!    ends the episode within a round trip and leaves the receiver blocked until the count
//!    climbs back (measured on the paper's setting, seed 1, Round Robin: 33 episodes of about
//!    110 ms and 14.4 Mbit/s, against 13.3 without the monitor).
//!
//! The running average of the send buffer is its time average since the flow started (the
//! paper says "average" and nothing more), or, with `bloat_monitor.average_s`, an exponentially
//! weighted moving average of the send buffer over time with that time constant (the quantity
//! held constant between updates, as the load averages of Unix, e.g. Linux `calc_load()`, weigh
//! theirs): a shorter memory, so that an earlier bloat does not keep the average high.

use railpath_core::Time;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// One assignment of data to a subflow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record {
    pub sub: usize,
    pub dsn: u64,
    /// Subflow-level sequence number of the segment.
    pub seq: u64,
    pub len: u32,
    pub assigned: Time,
}

/// The transmission-status monitoring buffer (section 3.2, Fig. 4).
#[derive(Debug, Clone, Default)]
pub struct Monitor {
    /// Records by assignment number from `base`; `None` once removed.
    recs: VecDeque<Option<Record>>,
    base: u64,
    /// Per subflow: assignment numbers not yet covered by the subflow-level ACK, in order.
    unacked: Vec<VecDeque<u64>>,
    /// Subflow-ACKed records waiting for the data ACK, by DSN.
    waiting: BinaryHeap<Reverse<(u64, u64)>>,
    count: Vec<u64>,
    data_una: u64,
}

impl Monitor {
    pub fn new(subflows: usize) -> Monitor {
        Monitor {
            unacked: vec![VecDeque::new(); subflows],
            count: vec![0; subflows],
            ..Monitor::default()
        }
    }

    /// The scheduler gave `dsn` to subflow `sub`, which sent it as segment `seq`. Returns the
    /// record's assignment number.
    pub fn assign(&mut self, sub: usize, dsn: u64, seq: u64, len: u32, now: Time) -> u64 {
        let id = self.base + self.recs.len() as u64;
        self.recs.push_back(Some(Record {
            sub,
            dsn,
            seq,
            len,
            assigned: now,
        }));
        self.unacked[sub].push_back(id);
        self.count[sub] += 1;
        id
    }

    /// Subflow `sub`'s cumulative ACK is now `snd_una`.
    pub fn subflow_acked(&mut self, sub: usize, snd_una: u64) {
        while let Some(&id) = self.unacked[sub].front() {
            let Some(r) = self.get(id) else {
                self.unacked[sub].pop_front();
                continue;
            };
            if r.seq >= snd_una {
                break;
            }
            self.unacked[sub].pop_front();
            if r.dsn < self.data_una {
                self.remove(id);
            } else {
                self.waiting.push(Reverse((r.dsn, id)));
            }
        }
    }

    /// The data-level cumulative ACK is now `data_una`.
    pub fn data_acked(&mut self, data_una: u64) {
        self.data_una = self.data_una.max(data_una);
        while let Some(&Reverse((dsn, id))) = self.waiting.peek() {
            if dsn >= self.data_una {
                break;
            }
            self.waiting.pop();
            self.remove(id);
        }
    }

    fn get(&self, id: u64) -> Option<Record> {
        id.checked_sub(self.base)
            .and_then(|k| self.recs.get(k as usize))
            .copied()
            .flatten()
    }

    fn remove(&mut self, id: u64) {
        let k = (id - self.base) as usize;
        if let Some(r) = self.recs[k].take() {
            self.count[r.sub] -= 1;
        }
        while let Some(None) = self.recs.front() {
            self.recs.pop_front();
            self.base += 1;
        }
    }

    /// The HoL record: the oldest assignment still waiting.
    pub fn head(&self) -> Option<Record> {
        self.recs.front().copied().flatten()
    }

    /// Records of subflow `sub` in the monitor (`NoPkt_i`).
    pub fn count(&self, sub: usize) -> u64 {
        self.count[sub]
    }

    pub fn len(&self) -> u64 {
        self.count.iter().sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Subflow `sub`'s records not yet subflow-ACKed with an assignment number above `after`
    /// (all when `None`), in order: `(assignment number, record)`.
    pub fn unacked_after(
        &self,
        sub: usize,
        after: Option<u64>,
    ) -> impl Iterator<Item = (u64, Record)> + '_ {
        let q = &self.unacked[sub];
        let from = after.map_or(0, |a| q.partition_point(|&id| id <= a));
        q.range(from..)
            .filter_map(move |&id| self.get(id).map(|r| (id, r)))
    }
}

/// Equation 1: the round trips subflow i would need to clear what it has in the monitor.
pub fn transmit_times(records: u64, max_cwnd: u32) -> f64 {
    records as f64 / max_cwnd.max(1) as f64
}

/// `Bufferbloat_Th` from the bloat-free sRTT ratio (>= 1): 3 at 1, in proportion to 10 at 2.
pub fn threshold(srtt_ratio: f64) -> f64 {
    3.0 + 7.0 * (srtt_ratio.clamp(1.0, 2.0) - 1.0)
}

/// The normal path for a problem path: among the other usable subflows, the one with the most
/// records in the monitor (the lowest index on a tie).
pub fn normal_path(problem: usize, counts: &[u64], usable: &[bool]) -> Option<usize> {
    (0..counts.len())
        .filter(|&i| i != problem && usable[i])
        .max_by_key(|&i| (counts[i], Reverse(i)))
}

/// The average of a quantity over time: since a start time, or exponentially weighted with a
/// time constant (a moving average). The quantity is piecewise constant: it holds its last
/// value until the next update.
#[derive(Debug, Clone, Copy)]
pub struct TimeAverage {
    start: Time,
    last: Time,
    value: f64,
    integral: f64,
    /// The moving average's time constant, s (`None`: the average since `start`).
    tau_s: Option<f64>,
    /// The moving average up to `last` (0 before the start: the quantity was 0).
    ewma: f64,
}

impl TimeAverage {
    /// The average since `start`.
    pub fn new(start: Time) -> TimeAverage {
        TimeAverage {
            start,
            last: start,
            value: 0.0,
            integral: 0.0,
            tau_s: None,
            ewma: 0.0,
        }
    }

    /// The exponentially weighted moving average with time constant `tau` from `start` on:
    /// after the quantity held v for dt, `avg = v + (avg - v) e^(-dt / tau)`.
    pub fn moving(start: Time, tau: Time) -> TimeAverage {
        TimeAverage {
            tau_s: Some(tau.secs_f64().max(1e-9)),
            ..TimeAverage::new(start)
        }
    }

    /// The quantity is `v` from `now` on; returns the average up to `now`.
    pub fn update(&mut self, now: Time, v: f64) -> f64 {
        let dt = now.saturating_sub(self.last).secs_f64();
        self.integral += self.value * dt;
        if let Some(tau) = self.tau_s {
            if dt > 0.0 {
                self.ewma = self.value + (self.ewma - self.value) * (-dt / tau).exp();
            }
        }
        self.last = self.last.max(now);
        self.value = v;
        self.average()
    }

    pub fn average(&self) -> f64 {
        if self.tau_s.is_some() {
            return self.ewma;
        }
        let span = self.last.saturating_sub(self.start).secs_f64();
        if span > 0.0 {
            self.integral / span
        } else {
            self.value
        }
    }
}

/// Per-subflow inputs of one detection step.
#[derive(Debug, Clone, Copy)]
pub struct PathView {
    pub max_cwnd: u32,
    pub min_rtt: Time,
    pub usable: bool,
}

/// What one detection step found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub suspicion: bool,
    /// The largest TransmitTimes and the threshold it was held against.
    pub transmit_times: f64,
    pub threshold: f64,
    /// (problem path, normal path) when bufferbloat is detected and some other path is usable.
    pub bloat: Option<(usize, usize)>,
}

/// Fig. 5's decision on the monitor as it is: `send_buffer` and `average` in packets.
pub fn detect(monitor: &Monitor, send_buffer: f64, average: f64, paths: &[PathView]) -> Verdict {
    let rtts = paths
        .iter()
        .map(|p| p.min_rtt)
        .filter(|t| *t > Time::ZERO && *t < Time::MAX);
    let (lo, hi) = rtts.fold((Time::MAX, Time::ZERO), |(lo, hi), t| {
        (lo.min(t), hi.max(t))
    });
    let ratio = if lo < Time::MAX && lo > Time::ZERO {
        hi.secs_f64() / lo.secs_f64()
    } else {
        1.0
    };
    let th = threshold(ratio);
    let tt = (0..paths.len())
        .map(|i| transmit_times(monitor.count(i), paths[i].max_cwnd))
        .fold(0.0, f64::max);
    let suspicion = send_buffer > average;
    let bloat = if suspicion && tt > th {
        monitor.head().and_then(|h| {
            // On the stack: this runs on ACKs (a flow has at most 16 subflows).
            let n = paths.len().min(16);
            let (mut counts, mut usable) = ([0u64; 16], [false; 16]);
            for i in 0..n {
                counts[i] = monitor.count(i);
                usable[i] = paths[i].usable;
            }
            normal_path(h.sub, &counts[..n], &usable[..n]).map(|n| (h.sub, n))
        })
    } else {
        None
    };
    Verdict {
        suspicion,
        transmit_times: tt,
        threshold: th,
        bloat,
    }
}

/// One bufferbloat episode: from detection until the condition no longer holds.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BloatEpisode {
    pub start_s: f64,
    pub end_s: f64,
    /// Subflow ids of the problem path and of the normal path its packets were sent again on.
    pub problem: String,
    pub normal: String,
}

/// What the monitor did over a run (the flow summary's `bloat`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct BloatStats {
    pub episodes: Vec<BloatEpisode>,
    /// Seconds the condition held, over all episodes.
    pub bloat_s: f64,
    /// Packets of a problem path sent again on a normal path (the HoL packet first).
    pub hol_retransmissions: u64,
    /// The largest TransmitTimes seen.
    pub max_transmit_times: f64,
}

/// The monitor's state in an MPTCP sender with `mechanisms = ["bloat-monitor"]`.
#[derive(Debug, Clone)]
pub struct BloatState {
    avg: TimeAverage,
    /// Largest cwnd per subflow, segments.
    pub max_cwnd: Vec<u32>,
    /// (problem, normal) while bufferbloat is detected, and since when.
    pub active: Option<(usize, usize, Time)>,
    /// Per subflow: the last assignment already queued to be sent again.
    copied_upto: Vec<Option<u64>>,
    /// DSNs to send again, with the subflow to send them on.
    pub queue: VecDeque<(u64, usize)>,
    pub stats: BloatStats,
    episode_subs: Vec<(usize, usize)>,
    /// Per bin: TransmitTimes per subflow at the bin's end, and whether bloat was detected at
    /// any moment of the bin.
    pub tt_series: Vec<Vec<f64>>,
    pub active_series: Vec<f64>,
    active_in_bin: bool,
    paths: Vec<PathView>,
    /// Send the problem path's packets again (else only watch).
    retransmit: bool,
}

impl BloatState {
    /// `average`: the moving average's time constant (`None`: the average since `start`).
    pub fn new(
        subflows: usize,
        start: Time,
        nbins: usize,
        retransmit: bool,
        average: Option<Time>,
    ) -> BloatState {
        BloatState {
            avg: average.map_or(TimeAverage::new(start), |tau| {
                TimeAverage::moving(start, tau)
            }),
            max_cwnd: vec![0; subflows],
            active: None,
            copied_upto: vec![None; subflows],
            queue: VecDeque::new(),
            stats: BloatStats::default(),
            episode_subs: Vec::new(),
            tt_series: vec![Vec::with_capacity(nbins); subflows],
            active_series: Vec::with_capacity(nbins),
            active_in_bin: false,
            paths: Vec::with_capacity(subflows),
            retransmit,
        }
    }

    /// After an ACK (the monitor `m` already up to date): update the average, run the
    /// detection, and queue what must be sent again. `paths` yields subflow i's (cwnd, minimum
    /// RTT, usable); `send_buffer` in packets.
    pub fn on_ack(
        &mut self,
        m: &Monitor,
        now: Time,
        send_buffer: u64,
        data_una: u64,
        paths: impl Iterator<Item = (u32, Time, bool)>,
    ) {
        self.paths.clear();
        for (i, (cwnd, min_rtt, usable)) in paths.enumerate() {
            self.max_cwnd[i] = self.max_cwnd[i].max(cwnd);
            self.paths.push(PathView {
                max_cwnd: self.max_cwnd[i],
                min_rtt,
                usable,
            });
        }
        let before = self.avg.average();
        self.avg.update(now, send_buffer as f64);
        let v = detect(m, send_buffer as f64, before, &self.paths);
        self.stats.max_transmit_times = self.stats.max_transmit_times.max(v.transmit_times);
        // Detection needs both tests; the episode then lasts while the suspicion does.
        match (self.active, v.bloat) {
            (Some(_), _) if !v.suspicion => self.end_episode(now),
            (None, Some((p, n))) => self.active = Some((p, n, now)),
            _ => {}
        }
        if let Some((p, n, _)) = self.active {
            self.active_in_bin = true;
            if !self.retransmit {
                return;
            }
            let mut last = self.copied_upto[p];
            for (id, r) in m.unacked_after(p, last) {
                last = Some(id);
                if r.dsn >= data_una {
                    self.queue.push_back((r.dsn, n));
                }
            }
            self.copied_upto[p] = last;
        }
    }

    fn end_episode(&mut self, now: Time) {
        if let Some((p, n, t0)) = self.active.take() {
            self.stats.bloat_s += (now - t0).secs_f64();
            self.stats.episodes.push(BloatEpisode {
                start_s: t0.secs_f64(),
                end_s: now.secs_f64(),
                problem: String::new(),
                normal: String::new(),
            });
            self.episode_subs.push((p, n));
        }
    }

    /// Close the bin: TransmitTimes per subflow and the detection flag.
    pub fn sample(&mut self, m: &Monitor) {
        for (i, s) in self.tt_series.iter_mut().enumerate() {
            s.push(transmit_times(m.count(i), self.max_cwnd[i]));
        }
        self.active_series
            .push(if self.active_in_bin { 1.0 } else { 0.0 });
        self.active_in_bin = self.active.is_some();
    }

    /// The run's statistics, with subflow ids for the episodes (one still open ends at `end`).
    pub fn finish(&self, end: Time, ids: &[String]) -> BloatStats {
        let mut me = self.clone();
        me.end_episode(end);
        for (e, &(p, n)) in me.stats.episodes.iter_mut().zip(&me.episode_subs) {
            e.problem = ids[p].clone();
            e.normal = ids[n].clone();
        }
        me.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Time {
        Time::from_ms(v)
    }

    #[test]
    fn records_leave_only_when_both_acks_cover_them() {
        let mut m = Monitor::new(2);
        // DSN 0 on subflow 0 (seq 0), DSN 1 on subflow 1 (seq 0), DSN 2 on subflow 0 (seq 1).
        m.assign(0, 0, 0, 1400, ms(0));
        m.assign(1, 1, 0, 1400, ms(1));
        m.assign(0, 2, 1, 1400, ms(2));
        assert_eq!((m.count(0), m.count(1), m.len()), (2, 1, 3));
        // Subflow 0 acks both its segments; the data ACK is still 0: nothing leaves.
        m.subflow_acked(0, 2);
        assert_eq!(m.len(), 3);
        assert_eq!(m.head().map(|r| r.dsn), Some(0));
        // Data ACK 1: DSN 0 (both ACKs) leaves; DSN 2 waits for the data ACK.
        m.data_acked(1);
        assert_eq!((m.count(0), m.count(1)), (1, 1));
        assert_eq!(m.head().map(|r| (r.sub, r.dsn)), Some((1, 1)));
        // Data ACK 3 covers DSN 1 and 2, but subflow 1 has not acked its segment: it stays.
        m.data_acked(3);
        assert_eq!((m.count(0), m.count(1)), (0, 1));
        m.subflow_acked(1, 1);
        assert!(m.is_empty());
        assert_eq!(m.head(), None);
    }

    #[test]
    fn a_copy_is_a_new_record_and_the_original_waits_for_its_subflow() {
        let mut m = Monitor::new(2);
        m.assign(1, 0, 0, 1400, ms(0)); // the HoL packet, stuck on subflow 1
        m.assign(0, 1, 0, 1400, ms(1));
        let copy = m.assign(0, 0, 1, 1400, ms(5)); // sent again on subflow 0
        assert_eq!(copy, 2);
        m.subflow_acked(0, 2);
        m.data_acked(2);
        // Only the original on subflow 1 is left, and it is the head.
        assert_eq!((m.count(0), m.count(1)), (0, 1));
        assert_eq!(m.head().map(|r| (r.sub, r.dsn, r.seq)), Some((1, 0, 0)));
        let left: Vec<u64> = m.unacked_after(1, None).map(|(id, _)| id).collect();
        assert_eq!(left, vec![0]);
        assert_eq!(m.unacked_after(1, Some(0)).count(), 0);
    }

    #[test]
    fn transmit_times_and_the_threshold() {
        // 120 records over a largest cwnd of 40 segments: 3 round trips.
        assert_eq!(transmit_times(120, 40), 3.0);
        assert_eq!(transmit_times(5, 0), 5.0);
        assert_eq!(threshold(1.0), 3.0);
        assert_eq!(threshold(0.5), 3.0);
        // Half way to a 2x ratio: 3 + 7 x 0.5.
        assert_eq!(threshold(1.5), 6.5);
        assert!((threshold(1.2) - 4.4).abs() < 1e-12);
        assert_eq!(threshold(2.0), 10.0);
        assert_eq!(threshold(7.0), 10.0);
    }

    #[test]
    fn the_normal_path_has_the_most_records() {
        assert_eq!(normal_path(1, &[10, 50], &[true, true]), Some(0));
        assert_eq!(normal_path(0, &[10, 50, 70], &[true, true, true]), Some(2));
        assert_eq!(normal_path(0, &[10, 50, 70], &[true, true, false]), Some(1));
        // A tie goes to the lower index.
        assert_eq!(normal_path(0, &[9, 30, 30], &[true, true, true]), Some(1));
        assert_eq!(normal_path(0, &[9], &[true]), None);
    }

    #[test]
    fn detection_needs_suspicion_and_transmit_times_above_the_threshold() {
        let mut m = Monitor::new(2);
        // The HoL packet on subflow 1, then 100 packets on subflow 0 acked at subflow level.
        m.assign(1, 0, 0, 1400, ms(0));
        for d in 1..=100 {
            m.assign(0, d, d - 1, 1400, ms(d));
        }
        m.subflow_acked(0, 100);
        let paths = [
            PathView {
                max_cwnd: 25,
                min_rtt: ms(20),
                usable: true,
            },
            PathView {
                max_cwnd: 25,
                min_rtt: ms(20),
                usable: true,
            },
        ];
        // TransmitTimes_0 = 100 / 25 = 4 > 3 (equal RTTs), but no suspicion yet.
        let v = detect(&m, 101.0, 150.0, &paths);
        assert_eq!(
            (v.suspicion, v.transmit_times, v.threshold),
            (false, 4.0, 3.0)
        );
        assert_eq!(v.bloat, None);
        // Send buffer above its average: bloat on subflow 1 (the head's), normal path 0.
        let v = detect(&m, 101.0, 60.0, &paths);
        assert_eq!(v.bloat, Some((1, 0)));
        // With a 1.5x RTT ratio the threshold is 6.5 and 4 round trips are not enough.
        let mut slow = paths;
        slow[1].min_rtt = ms(30);
        let v = detect(&m, 101.0, 60.0, &slow);
        assert_eq!((v.threshold, v.bloat), (6.5, None));
        // No other usable path: nothing to retransmit on.
        let mut down = paths;
        down[0].usable = false;
        assert_eq!(detect(&m, 101.0, 60.0, &down).bloat, None);
    }

    #[test]
    fn an_episode_lasts_while_the_suspicion_does() {
        let mut b = BloatState::new(2, ms(0), 0, true, None);
        let mut m = Monitor::new(2);
        let paths = |c0: u32| [(c0, ms(20), true), (10, ms(20), true)].into_iter();
        // HoL on subflow 1 (seq 0), 40 packets on subflow 0 acked there, not at data level.
        m.assign(1, 0, 0, 1400, ms(0));
        for d in 1..=40 {
            m.assign(0, d, d - 1, 1400, ms(0));
        }
        m.subflow_acked(0, 40);
        // An empty send buffer at t = 0: no suspicion.
        b.on_ack(&m, ms(0), 0, 0, paths(10));
        assert_eq!(b.active, None);
        // 100 ms later the buffer is 200 > its average 0, TransmitTimes_0 = 40 / 10 = 4 > 3:
        // detected; the HoL packet (DSN 0) is queued for subflow 0.
        b.on_ack(&m, ms(100), 200, 0, paths(10));
        assert_eq!(b.active.map(|a| (a.0, a.1)), Some((1, 0)));
        assert_eq!(b.queue.iter().copied().collect::<Vec<_>>(), vec![(0, 0)]);
        // The copy is delivered: the data ACK jumps to 41, the monitor empties but for the
        // original on subflow 1, TransmitTimes falls to 0 - and the episode goes on, since the
        // buffer (still 200: the original is not acknowledged) is above its average (100).
        m.assign(0, 0, 40, 1400, ms(100));
        m.subflow_acked(0, 41);
        m.data_acked(41);
        b.on_ack(&m, ms(200), 200, 41, paths(10));
        assert!(b.active.is_some());
        // A new packet on subflow 1 while it lasts is copied too.
        m.assign(1, 41, 1, 1400, ms(210));
        b.on_ack(&m, ms(220), 200, 41, paths(10));
        assert_eq!(b.queue.back(), Some(&(41, 0)));
        // The buffer falls below its average (200 x 0.2 s / 0.3 s = 133): the episode ends.
        b.on_ack(&m, ms(300), 10, 41, paths(10));
        assert_eq!(b.active, None);
        let st = b.finish(ms(400), &["a".into(), "b".into()]);
        assert_eq!(st.episodes.len(), 1);
        assert_eq!(
            (
                st.episodes[0].problem.as_str(),
                st.episodes[0].normal.as_str()
            ),
            ("b", "a")
        );
        assert!(
            (st.episodes[0].start_s - 0.1).abs() < 1e-12
                && (st.episodes[0].end_s - 0.3).abs() < 1e-12
        );
    }

    #[test]
    fn watching_only_records_the_episode_and_queues_nothing() {
        let mut b = BloatState::new(2, ms(0), 0, false, None);
        let mut m = Monitor::new(2);
        m.assign(1, 0, 0, 1400, ms(0));
        for d in 1..=40 {
            m.assign(0, d, d - 1, 1400, ms(0));
        }
        m.subflow_acked(0, 40);
        let paths = || [(10, ms(20), true), (10, ms(20), true)].into_iter();
        b.on_ack(&m, ms(0), 0, 0, paths());
        b.on_ack(&m, ms(100), 200, 0, paths());
        assert!(b.active.is_some());
        assert!(b.queue.is_empty());
    }

    #[test]
    fn moving_average_by_hand() {
        // Time constant 1 s; the quantity 0 until 1 s, 10 until 2 s, then 0.
        let mut a = TimeAverage::moving(ms(0), ms(1000));
        assert_eq!(a.update(ms(1000), 10.0), 0.0);
        // 10 held for 1 s: 10 + (0 - 10) e^-1 = 10 (1 - e^-1) = 6.3212...
        let e = (-1.0f64).exp();
        assert!((a.update(ms(2000), 0.0) - 10.0 * (1.0 - e)).abs() < 1e-12);
        // 0 held for 1 s: 6.3212 e^-1 = 2.3254...; half a second more: x e^-0.5.
        assert!((a.update(ms(3000), 0.0) - 10.0 * (1.0 - e) * e).abs() < 1e-12);
        let x = 10.0 * (1.0 - e) * e * (-0.5f64).exp();
        assert!((a.update(ms(3500), 0.0) - x).abs() < 1e-12);
        // Updates at one instant change nothing but the value held from then on.
        assert!((a.update(ms(3500), 7.0) - x).abs() < 1e-12);
    }

    #[test]
    fn a_moving_average_forgets_an_earlier_bloat() {
        // The send buffer at 1000 packets from 10 to 20 s, 50 otherwise; at 35 s it jumps to
        // 300. Since the start (0-35 s): (10 x 50 + 10 x 1000 + 15 x 50) / 35 = 321.4 > 300:
        // no suspicion. With a time constant of 1 s, 15 s after the first bloat the average is
        // back to 50 + 950 e^-15 = 50.0003 < 300: suspicion.
        let mut since = TimeAverage::new(ms(0));
        let mut moving = TimeAverage::moving(ms(0), ms(1000));
        for a in [&mut since, &mut moving] {
            a.update(ms(0), 50.0);
            a.update(ms(10_000), 1000.0);
            a.update(ms(20_000), 50.0);
        }
        let (s, m) = (
            since.update(ms(35_000), 300.0),
            moving.update(ms(35_000), 300.0),
        );
        assert!((s - 11_250.0 / 35.0).abs() < 1e-9, "{s}");
        // From 0 to 10 s at 50 the average reaches 50 (1 - e^-10); then 1000 for 10 s and 50
        // for 15 s.
        let e = |t: f64| (-t).exp();
        let at20 = 1000.0 + (50.0 * (1.0 - e(10.0)) - 1000.0) * e(10.0);
        let at35 = 50.0 + (at20 - 50.0) * e(15.0);
        assert!((m - at35).abs() < 1e-9, "{m}");
        let m1 = Monitor::new(2);
        let paths = [PathView {
            max_cwnd: 10,
            min_rtt: ms(20),
            usable: true,
        }; 2];
        assert!(!detect(&m1, 300.0, s, &paths).suspicion);
        assert!(detect(&m1, 300.0, m, &paths).suspicion);
    }

    #[test]
    fn time_average() {
        let mut a = TimeAverage::new(ms(0));
        assert_eq!(a.update(ms(0), 10.0), 10.0);
        // 10 for 1 s, then 30 for 1 s: 20.
        a.update(ms(1000), 30.0);
        assert_eq!(a.update(ms(2000), 0.0), 20.0);
        // 0 for 2 s more: 40 / 4 = 10.
        assert_eq!(a.update(ms(4000), 5.0), 10.0);
    }
}
