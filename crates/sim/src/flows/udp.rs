//! UDP cross traffic: an unresponsive source that sends datagrams over one link's data direction
//! to a sink at its far end, sharing the link's drop-tail queue with the TCP and MPTCP flows.
//!
//! The source (`udp.process`):
//! - `"onoff"`: ns-3's `OnOffApplication` (src/applications/model/onoff-application.cc):
//!   ON periods send constant-bit-rate packets at the peak rate `max_mbps`, OFF periods are
//!   silent; ON and OFF durations are exponential with means `mean_on_ms` and
//!   `mean_off_ms = mean_on_ms x (max_mbps / mean_mbps - 1)`, so the long-run mean rate is
//!   `mean_mbps`. As in ns-3, a packet leaves when the ON time since the last one reaches one
//!   packet's transmission time at the peak rate, and the part of an interval an ON period ends
//!   in carries over to the next ON period (`m_residualBits`): the k-th packet leaves when the
//!   cumulative ON time reaches `k x packet_bytes x 8 / max_mbps`, exactly (integer
//!   nanoseconds, no drift). One difference: ns-3 starts with an OFF period, here the first
//!   period is ON and starts at `start_s`.
//! - `"cbr"`: the same always ON at `mean_mbps` (the k-th packet leaves `k` intervals after
//!   `start_s`).
//! - `"poisson"`: packets leave as a Poisson process of rate `mean_mbps / (packet_bytes x 8)`:
//!   independent exponential gaps, the first one after `start_s` (the arrivals of the BOND
//!   paper's power model).
//!
//! Why on/off: the bufferbloat paper this serves (simulated in ns-3; its router has a buffer of
//! thousands of packets in front of a 10 Mbit/s bottleneck) says of its cross traffic only that
//! it is random UDP traffic with a maximum and a mean rate. A source at the peak rate with
//! exponential ON and OFF periods, ns-3's own OnOffApplication, has exactly that maximum and that
//! mean.
//!
//! Randomness: one stream, `udp/<flow id>` of the run seed, drawn in period order, so a run is
//! bit-identical for a scenario and seed. Events: one `Timer` per packet sent; OFF periods cost
//! no event (the source jumps to the next ON period's first packet).

use super::common::{arm, take_wake, FlowOps};
use crate::net::packet::{Kind, Packet};
use crate::net::{Net, Side};
use crate::results::{AvgMax, FlowSummary, Series, UdpStats};
use railpath_core::{Rng, Time};
use railpath_scenario::{UdpConfig, UDP_HEADER_BYTES};

/// When the source's packets leave: ON/OFF periods and the exact packet clock within them.
#[derive(Debug, Clone)]
pub(crate) struct Source {
    /// Bits of one packet on the wire, and the peak rate (bit/s).
    bits: u64,
    rate_bps: u64,
    always_on: bool,
    /// Poisson: mean gap between packets, s, and when the next packet leaves.
    poisson: Option<(f64, Time)>,
    mean_on_s: f64,
    mean_off_s: f64,
    rng: Rng,
    /// The current ON period [on_start, on_end) (`on_end` = `Time::MAX` when always on).
    on_start: Time,
    on_end: Time,
    /// ON time before the current ON period, ns.
    on_before_ns: u64,
    /// Packets sent so far.
    sent: u64,
    /// ON periods begun before the stop (statistics).
    pub periods: u64,
}

impl Source {
    pub fn new(cfg: &UdpConfig, rng: Rng) -> Source {
        Source {
            // Validation keeps packets at least the headers long; a packet of 0 bytes would
            // leave every packet at one instant.
            bits: u64::from(cfg.packet_bytes.max(UDP_HEADER_BYTES)) * 8,
            rate_bps: ((cfg.peak_mbps * 1e6).round() as u64).max(1),
            always_on: cfg.always_on(),
            poisson: (cfg.process == railpath_scenario::UdpProcess::Poisson).then(|| {
                let bits = f64::from(cfg.packet_bytes.max(UDP_HEADER_BYTES)) * 8.0;
                (bits / (cfg.mean_mbps * 1e6), Time::ZERO)
            }),
            mean_on_s: cfg.mean_on_ms / 1e3,
            mean_off_s: cfg.mean_off_ms / 1e3,
            rng,
            on_start: Time::ZERO,
            on_end: Time::ZERO,
            on_before_ns: 0,
            sent: 0,
            periods: 0,
        }
    }

    /// An exponential duration of mean `mean_s`.
    fn exp(&mut self, mean_s: f64) -> Time {
        // 1 - U is in (0, 1]: the logarithm is finite.
        Time::from_secs_f64(-(1.0 - self.rng.uniform()).ln() * mean_s)
    }

    /// The first ON period starts at `t`.
    pub fn begin(&mut self, t: Time) {
        self.on_start = t;
        self.on_end = if self.always_on {
            Time::MAX
        } else {
            t + self.exp(self.mean_on_s)
        };
        self.periods = 1;
        if let Some((gap, _)) = self.poisson {
            let first = t + self.exp(gap);
            self.poisson = Some((gap, first));
        }
    }

    /// Cumulative ON time at which packet `n` (1-based) leaves, ns.
    fn due_ns(&self, n: u64) -> u64 {
        let ns = (n as u128 * self.bits as u128 * 1_000_000_000).div_ceil(self.rate_bps as u128);
        ns.min(u64::MAX as u128) as u64
    }

    /// When the next packet leaves, if before `stop`: OFF periods are skipped (their periods are
    /// drawn here, without events).
    pub fn next_send(&mut self, stop: Time) -> Option<Time> {
        if let Some((_, t)) = self.poisson {
            return (t < stop).then_some(t);
        }
        let due = self.due_ns(self.sent + 1);
        loop {
            if self.on_start >= stop {
                return None;
            }
            let t = self.on_start + Time::from_ns(due.saturating_sub(self.on_before_ns));
            if t < self.on_end {
                return (t < stop).then_some(t);
            }
            // The packet falls after this ON period: carry its ON time over, skip the OFF
            // period, and draw the next ON period.
            self.on_before_ns += (self.on_end - self.on_start).ns();
            self.on_start = self.on_end + self.exp(self.mean_off_s);
            self.on_end = self.on_start + self.exp(self.mean_on_s);
            if self.on_start < stop {
                self.periods += 1;
            }
        }
    }

    /// The packet [`Source::next_send`] returned has left.
    pub fn sent(&mut self) {
        self.sent += 1;
        if let Some((gap, t)) = self.poisson {
            let next = t + self.exp(gap);
            self.poisson = Some((gap, next));
        }
    }
}

/// A udp flow: its source, its route (the link's data direction, then the sink) and what the
/// sink received.
pub(crate) struct UdpFlow {
    pub idx: u32,
    pub id: String,
    cfg: UdpConfig,
    route: u32,
    /// The link directions the route may cross (one, or a bond's members; for the packets
    /// still in them at the end).
    dirs: Vec<u32>,
    start: Time,
    /// `stop_s`, or the end of the run.
    stop: Time,
    source: Source,
    /// The armed send wake-up.
    armed: Option<Time>,
    sent_packets: u64,
    delivered_packets: u64,
    /// Payload bytes delivered.
    delivered_bytes: u64,
    delay_sum: Time,
    delay_max: Time,
    /// This bin: payload bytes delivered, bytes put on the wire.
    bin_delivered: u64,
    bin_sent: u64,
    goodput_bps: Vec<f64>,
    sent_bps: Vec<f64>,
}

impl UdpFlow {
    /// Flow `idx` sending `source`'s packets on `route` (which crosses `dirs`) from `start`
    /// until `stop`.
    pub fn new(
        idx: u32,
        id: &str,
        source: UdpConfig,
        (route, dirs): (u32, Vec<u32>),
        (start, stop): (Time, Time),
        seed: u64,
        nbins: usize,
    ) -> UdpFlow {
        UdpFlow {
            idx,
            id: id.to_string(),
            cfg: source,
            route,
            dirs,
            start,
            stop,
            source: Source::new(&source, Rng::stream(seed, &format!("udp/{id}"))),
            armed: None,
            sent_packets: 0,
            delivered_packets: 0,
            delivered_bytes: 0,
            delay_sum: Time::ZERO,
            delay_max: Time::ZERO,
            bin_delivered: 0,
            bin_sent: 0,
            goodput_bps: Vec::with_capacity(nbins),
            sent_bps: Vec::with_capacity(nbins),
        }
    }

    fn schedule(&mut self, net: &mut Net) {
        let t = self.source.next_send(self.stop);
        arm(net, &mut self.armed, t, self.idx, 0, Side::Sender);
    }
}

impl FlowOps for UdpFlow {
    fn start(&mut self, net: &mut Net) {
        self.source.begin(net.now());
        self.schedule(net);
    }

    /// A datagram reached the sink.
    fn on_packet(&mut self, _sub: u16, side: Side, p: &Packet, net: &mut Net) {
        let now = net.now();
        if side != Side::Receiver {
            return;
        }
        self.delivered_packets += 1;
        self.delivered_bytes += u64::from(p.len);
        self.bin_delivered += u64::from(p.len);
        let d = now.saturating_sub(p.ts);
        self.delay_sum += d;
        self.delay_max = self.delay_max.max(d);
    }

    fn on_timer(&mut self, _sub: u16, _side: u8, net: &mut Net) {
        let now = net.now();
        if !take_wake(&mut self.armed, now) {
            return;
        }
        let size = self.cfg.packet_bytes.min(u32::from(u16::MAX));
        let k = self.sent_packets;
        net.send(Packet {
            route: self.route,
            seq: k as u32,
            dsn: k,
            size: size as u16,
            len: size.saturating_sub(UDP_HEADER_BYTES) as u16,
            kind: Kind::Data,
            ts: now,
            ..Default::default()
        });
        self.sent_packets += 1;
        self.bin_sent += u64::from(size);
        self.source.sent();
        self.schedule(net);
    }

    /// A udp flow schedules no control events.
    fn control(&mut self, _idx: u32, _net: &mut Net) {}

    fn sample(&mut self, width: Time) {
        let w = width.secs_f64();
        let rate = |bytes: u64| if w > 0.0 { bytes as f64 * 8.0 / w } else { 0.0 };
        self.goodput_bps.push(rate(self.bin_delivered));
        self.sent_bps.push(rate(self.bin_sent));
        self.bin_delivered = 0;
        self.bin_sent = 0;
    }

    fn summarize(&self, end: Time, net: &Net) -> (FlowSummary, Vec<Series>) {
        let active = self.stop.min(end).saturating_sub(self.start).secs_f64();
        let per_s = |x: f64| if active > 0.0 { x / active } else { 0.0 };
        let in_flight = self
            .dirs
            .iter()
            .map(|&d| net.dirs[d as usize].held_on_route(self.route))
            .sum();
        let stats = UdpStats {
            process: self.cfg.process.as_str().to_string(),
            offered_bps: per_s(self.sent_packets as f64 * f64::from(self.cfg.packet_bytes) * 8.0),
            sent_packets: self.sent_packets,
            delivered_packets: self.delivered_packets,
            dropped_packets: self
                .sent_packets
                .saturating_sub(self.delivered_packets + in_flight),
            in_flight_packets: in_flight,
            on_periods: self.source.periods,
            delay_ms: (self.delivered_packets > 0).then(|| AvgMax {
                avg: self.delay_sum.ms_f64() / self.delivered_packets as f64,
                max: self.delay_max.ms_f64(),
            }),
        };
        let summary = FlowSummary {
            id: self.id.clone(),
            kind: "udp".into(),
            cc: "none".into(),
            scheduler: None,
            mechanisms: Vec::new(),
            goodput_bps: per_s(self.delivered_bytes as f64 * 8.0),
            delivered_bytes: self.delivered_bytes,
            sent_packets: self.sent_packets,
            // No retransmissions, RTT, subflows or mechanisms: the TCP and MPTCP fields stay
            // 0 and null.
            udp: Some(stats),
            car: None,
            ..Default::default()
        };
        let mk = |metric: &'static str, values: &Vec<f64>| Series {
            flow: self.id.clone(),
            subflow: String::new(),
            metric,
            values: values.clone(),
        };
        let series = vec![
            mk("goodput_bps", &self.goodput_bps),
            mk("sent_bps", &self.sent_bps),
        ];
        (summary, series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use railpath_scenario::UdpProcess;

    fn config(process: UdpProcess, peak: f64, mean: f64, on_ms: f64, bytes: u32) -> UdpConfig {
        UdpConfig {
            process,
            peak_mbps: peak,
            mean_mbps: mean,
            mean_on_ms: on_ms,
            mean_off_ms: if peak > mean {
                on_ms * (peak / mean - 1.0)
            } else {
                0.0
            },
            packet_bytes: bytes,
        }
    }

    /// Every send time before `stop` from a source started at `start`.
    fn sends(cfg: &UdpConfig, seed: u64, start: Time, stop: Time) -> (Vec<Time>, Source) {
        let mut s = Source::new(cfg, Rng::stream(seed, "udp/x"));
        s.begin(start);
        let mut out = Vec::new();
        while let Some(t) = s.next_send(stop) {
            out.push(t);
            s.sent();
        }
        (out, s)
    }

    #[test]
    fn cbr_packets_are_exactly_one_interval_apart() {
        // 1400 B at 11.2 Mbit/s: 11200 bits / 11.2e6 bit/s = 1 ms exactly.
        let cfg = config(UdpProcess::Cbr, 11.2, 11.2, 200.0, 1400);
        let start = Time::from_ms(2500);
        let (t, s) = sends(&cfg, 1, start, Time::from_secs(4));
        assert_eq!(
            t.len(),
            1499,
            "1.5 s of 1 ms intervals, the last at the stop excluded"
        );
        assert_eq!(
            t[0],
            start + Time::from_ms(1),
            "as ns-3: one interval after the start"
        );
        for w in t.windows(2) {
            assert_eq!(w[1] - w[0], Time::from_ms(1));
        }
        assert_eq!(s.periods, 1);
    }

    #[test]
    fn poisson_gaps_are_exponential_with_the_mean_rate() {
        // 1250 B at 1 Mbit/s: 100 packets/s, mean gap 10 ms.
        let cfg = config(UdpProcess::Poisson, 1.0, 1.0, 200.0, 1250);
        let (t, _) = sends(&cfg, 5, Time::ZERO, Time::from_secs(200));
        // 20000 expected (standard deviation 141).
        assert!((t.len() as i64 - 20_000).abs() < 700, "{}", t.len());
        // Exponential: the share of gaps above the mean is e^-1 = 0.368, above 3 means e^-3.
        let gaps: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]).ms_f64()).collect();
        let above = |x: f64| gaps.iter().filter(|&&g| g > x).count() as f64 / gaps.len() as f64;
        assert!(
            (above(10.0) - (-1.0f64).exp()).abs() < 0.015,
            "{}",
            above(10.0)
        );
        assert!(
            (above(30.0) - (-3.0f64).exp()).abs() < 0.006,
            "{}",
            above(30.0)
        );
        // The first packet comes a random gap after the start, not at it.
        assert!(t[0] > Time::ZERO);
    }

    #[test]
    fn a_rate_that_does_not_divide_keeps_its_mean_without_drift() {
        // 1000 B at 3 Mbit/s: 8000 / 3e6 s = 2.6667 ms, not a whole number of ns; after
        // 3000 packets exactly 8 s (k x 8e12 / 3e6 ns, rounded up per packet, not summed).
        let cfg = config(UdpProcess::Cbr, 3.0, 3.0, 200.0, 1000);
        let (t, _) = sends(&cfg, 1, Time::ZERO, Time::from_secs(100));
        assert_eq!(t[2999], Time::from_secs(8));
        assert_eq!(t[0], Time::from_ns(2_666_667));
        assert_eq!(t[1], Time::from_ns(5_333_334));
    }

    #[test]
    fn onoff_long_run_mean_rate_and_periods() {
        // The bufferbloat paper's source: peak 23, mean 16 Mbit/s, ON 200 ms on average (so OFF
        // 87.5 ms). Over 2000 s (about 7000 ON/OFF cycles) the offered rate is the mean within
        // a few per cent, and the ON periods have their mean length.
        let cfg = config(UdpProcess::Onoff, 23.0, 16.0, 200.0, 1400);
        let dur = Time::from_secs(2000);
        let (t, s) = sends(&cfg, 7, Time::ZERO, dur);
        let rate = t.len() as f64 * 1400.0 * 8.0 / dur.secs_f64();
        assert!(
            (rate / 16e6 - 1.0).abs() < 0.03,
            "long-run rate {:.3} Mbit/s",
            rate / 1e6
        );
        let cycle_s = dur.secs_f64() / s.periods as f64;
        assert!(
            (cycle_s / 0.2875 - 1.0).abs() < 0.05,
            "mean ON + OFF {cycle_s} s over {} periods",
            s.periods
        );
        // While ON, packets are the peak rate's interval apart (11200 bits / 23e6 bit/s =
        // 486957 ns, rounded per packet); a gap longer than two intervals is an OFF period.
        let interval = 11200.0 / 23e6;
        let gaps: Vec<f64> = t.windows(2).map(|w| (w[1] - w[0]).secs_f64()).collect();
        let on_gaps = gaps.iter().filter(|g| **g <= interval * 1.000_01).count();
        assert!(
            on_gaps as f64 > 0.9 * gaps.len() as f64,
            "{on_gaps} of {}",
            gaps.len()
        );
        let off: Vec<f64> = gaps
            .iter()
            .copied()
            .filter(|g| *g > 2.0 * interval)
            .collect();
        let off_mean = off.iter().sum::<f64>() / off.len() as f64;
        // Each OFF gap is an OFF period plus up to one interval of ON time around it.
        assert!(
            (off_mean / (0.0875 + interval / 2.0) - 1.0).abs() < 0.08,
            "mean OFF gap {off_mean} s over {} gaps",
            off.len()
        );
    }

    #[test]
    fn onoff_is_repeatable_and_seeded() {
        let cfg = config(UdpProcess::Onoff, 23.0, 16.0, 200.0, 1400);
        let stop = Time::from_secs(20);
        let a = sends(&cfg, 3, Time::from_secs(1), stop).0;
        let b = sends(&cfg, 3, Time::from_secs(1), stop).0;
        let c = sends(&cfg, 4, Time::from_secs(1), stop).0;
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a[0] > Time::from_secs(1) && *a.last().unwrap() < stop);
    }

    #[test]
    fn on_periods_shorter_than_a_packet_carry_their_time_over() {
        // 1 ms ON periods, 10 ms packet intervals (1250 B at 1 Mbit/s), mean 0.5 Mbit/s: most
        // ON periods send nothing, yet the ON time adds up across them (ns-3's residual bits)
        // and the long-run rate is still the mean.
        let cfg = config(UdpProcess::Onoff, 1.0, 0.5, 1.0, 1250);
        let dur = Time::from_secs(1000);
        let (t, s) = sends(&cfg, 1, Time::ZERO, dur);
        let rate = t.len() as f64 * 1250.0 * 8.0 / dur.secs_f64();
        assert!((rate / 0.5e6 - 1.0).abs() < 0.03, "{rate}");
        assert!(s.periods as usize > 10 * t.len(), "{} periods", s.periods);
    }

    #[test]
    fn mean_equal_to_max_never_pauses() {
        let cfg = config(UdpProcess::Onoff, 11.2, 11.2, 200.0, 1400);
        let (t, s) = sends(&cfg, 1, Time::ZERO, Time::from_secs(10));
        assert_eq!(t.len(), 9999);
        assert_eq!(s.periods, 1);
    }
}
