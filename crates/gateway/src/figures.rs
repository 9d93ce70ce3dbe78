//! The figures an operator watches: per carrier, when it died, when its traffic moved to the
//! other carriers (failover), when it came back and when traffic returned to it (failback), its
//! availability and its time as backup; per position bin along the track, the stall-seconds of
//! passenger traffic.
//!
//! Rules (docs/gateway.md, "What the operator sees"):
//! - **Traffic on a carrier** in one controller tick: the interface's counters (kernel
//!   `statistics/{rx,tx}_{bytes,packets}`) show data, i.e. in either direction the bytes beyond
//!   `CONTROL_BYTES` per packet exceed `DATA_BYTES`. A TCP/MPTCP control segment (SYN, ACK,
//!   MP_JOIN, a probe) is at most 100 bytes at the IP layer (20 + 60 header bytes with every
//!   option, plus a few MPTCP option bytes), so handshakes and probes never count as traffic and
//!   one full-size data segment does. A tick that mixes many control segments with little data
//!   can be missed; the next one counts.
//! - **Failover**: from the carrier's loss (link down or address gone: the kernel event's time;
//!   failed probes: the sending time of the first unanswered probe) to the first tick, after the
//!   gateway removed the carrier's endpoint (so that no connection could use it any more), in
//!   which another carrier that is up carries traffic.
//! - **Failback**: from the carrier's return (link up and an address: the event's time; probes:
//!   the sending time of the first answered probe) to the first tick in which it carries traffic.
//! - A failover still pending when the carrier returns, or a failback still pending when it
//!   dies again, is dropped (and logged), not measured.
//! - **Availability**: time up over time observed, from the daemon's start; **backup time**: time
//!   the carrier's endpoint was backup while up.
//! - **Stall-seconds** ([`StallBook`]): a passenger connection's downlink is stalled while the
//!   proxy waits at least `stall_after_ms` (and at most `STALL_MAX`) for the server's next bytes,
//!   mid-stream (not before its first bytes) and with no byte from the passenger during the wait
//!   (so a request waiting for its answer is not a stall); the stall is the whole wait. Its
//!   seconds go to the position bins the train crossed during it, from the controller's
//!   position history; time without a position goes to the bin "unknown".

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;
use tokio::time::Instant;

/// Per-packet allowance for headers and control segments.
pub const CONTROL_BYTES: u64 = 100;
/// Data bytes in one tick that make it a tick with traffic (about one full-size segment).
pub const DATA_BYTES: u64 = 1000;
/// A wait longer than this is an idle connection, not a stall.
pub const STALL_MAX: Duration = Duration::from_secs(30);

/// One sample of an interface's kernel counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counters {
    pub rx_bytes: u64,
    pub rx_packets: u64,
    pub tx_bytes: u64,
    pub tx_packets: u64,
}

/// Whether the change from `prev` to `cur` is traffic (rule in the module header).
pub fn is_traffic(prev: &Counters, cur: &Counters) -> bool {
    let data = |b0: u64, b1: u64, p0: u64, p1: u64| {
        let bytes = b1.saturating_sub(b0);
        let packets = p1.saturating_sub(p0);
        bytes.saturating_sub(packets.saturating_mul(CONTROL_BYTES)) >= DATA_BYTES
    };
    data(prev.rx_bytes, cur.rx_bytes, prev.rx_packets, cur.rx_packets)
        || data(prev.tx_bytes, cur.tx_bytes, prev.tx_packets, cur.tx_packets)
}

/// Reads an interface's counters; `None` if it does not exist (or the name is not a plain name).
pub fn read_counters(ifname: &str) -> Option<Counters> {
    let c = |k: &str| iface_stat(ifname, k);
    Some(Counters {
        rx_bytes: c("rx_bytes")?,
        rx_packets: c("rx_packets")?,
        tx_bytes: c("tx_bytes")?,
        tx_packets: c("tx_packets")?,
    })
}

/// Something that happened to a carrier, for the log and the metrics.
#[derive(Debug, Clone, PartialEq)]
pub enum CarrierEvent {
    /// Traffic moved to other carriers `failover` after the loss at `lost_at`.
    Failover {
        lost_at: Instant,
        failover: Duration,
    },
    /// Traffic came back `failback` after the return at `back_at`.
    Failback {
        back_at: Instant,
        failback: Duration,
    },
    /// A failover could not be measured: the carrier came back first (or no other carrier
    /// carried anything meanwhile).
    FailoverDropped { lost_at: Instant },
    /// A failback could not be measured: the carrier died again before it carried traffic.
    FailbackDropped { back_at: Instant },
}

/// The figures of one carrier (rules in the module header).
#[derive(Debug, Clone)]
pub struct CarrierFigures {
    up: bool,
    /// Start of the current accounting step.
    last: Instant,
    pub up_time: Duration,
    pub down_time: Duration,
    pub backup_time: Duration,
    pending_failover: Option<Instant>,
    pending_failback: Option<Instant>,
}

impl CarrierFigures {
    pub fn new(now: Instant, up: bool) -> CarrierFigures {
        CarrierFigures {
            up,
            last: now,
            up_time: Duration::ZERO,
            down_time: Duration::ZERO,
            backup_time: Duration::ZERO,
            pending_failover: None,
            pending_failback: None,
        }
    }

    pub fn is_up(&self) -> bool {
        self.up
    }

    /// Accounts the time from the last step to `now` in the state held until now.
    fn account(&mut self, now: Instant, backup: bool) {
        let d = now.saturating_duration_since(self.last);
        self.last = self.last.max(now);
        if self.up {
            self.up_time += d;
            if backup {
                self.backup_time += d;
            }
        } else {
            self.down_time += d;
        }
    }

    /// Up time over observed time (1 before any time has passed).
    pub fn availability(&self) -> f64 {
        let total = (self.up_time + self.down_time).as_secs_f64();
        if total <= 0.0 {
            1.0
        } else {
            self.up_time.as_secs_f64() / total
        }
    }

    /// The carrier was lost at `lost_at` (observed at `now`).
    pub fn down(&mut self, now: Instant, lost_at: Instant, backup: bool) -> Option<CarrierEvent> {
        self.account(now, backup);
        if !self.up {
            return None;
        }
        self.up = false;
        self.pending_failover = Some(lost_at);
        self.pending_failback
            .take()
            .map(|back_at| CarrierEvent::FailbackDropped { back_at })
    }

    /// The carrier came back at `back_at` (observed at `now`).
    pub fn up(&mut self, now: Instant, back_at: Instant, backup: bool) -> Option<CarrierEvent> {
        self.account(now, backup);
        if self.up {
            return None;
        }
        self.up = true;
        self.pending_failback = Some(back_at);
        self.pending_failover
            .take()
            .map(|lost_at| CarrierEvent::FailoverDropped { lost_at })
    }

    /// One controller tick at `now`: `removed` says the carrier's endpoint is out of the kernel,
    /// `own_traffic` whether this carrier carried traffic in the tick, `other_traffic` whether
    /// another carrier that is up did.
    pub fn tick(
        &mut self,
        now: Instant,
        backup: bool,
        removed: bool,
        own_traffic: bool,
        other_traffic: bool,
    ) -> Option<CarrierEvent> {
        self.account(now, backup);
        if let Some(lost_at) = self.pending_failover {
            if removed && other_traffic {
                self.pending_failover = None;
                return Some(CarrierEvent::Failover {
                    lost_at,
                    failover: now.saturating_duration_since(lost_at),
                });
            }
        }
        if let Some(back_at) = self.pending_failback {
            if self.up && own_traffic {
                self.pending_failback = None;
                return Some(CarrierEvent::Failback {
                    back_at,
                    failback: now.saturating_duration_since(back_at),
                });
            }
        }
        None
    }
}

/// Stall-seconds per position bin, and the train's recent positions to attribute them.
#[derive(Debug)]
pub struct StallBook {
    bin_m: f64,
    /// (instant, position along the track or none), one entry per `HISTORY_STEP` at most.
    history: VecDeque<(Instant, Option<f64>)>,
    /// Bin index (floor(position / bin_m)) -> (seconds, stalls started in it).
    bins: BTreeMap<i64, (f64, u64)>,
    unknown: (f64, u64),
}

impl Default for StallBook {
    fn default() -> Self {
        StallBook::new(100.0)
    }
}

impl StallBook {
    /// Position history resolution.
    pub const HISTORY_STEP: Duration = Duration::from_millis(100);
    /// How far back the history goes (the longest stall that is attributed in full).
    pub const HISTORY: Duration = Duration::from_secs(60);

    pub fn new(bin_m: f64) -> StallBook {
        StallBook {
            bin_m,
            history: VecDeque::new(),
            bins: BTreeMap::new(),
            unknown: (0.0, 0),
        }
    }

    /// The bin width (metres).
    pub fn bin_m(&self) -> f64 {
        self.bin_m
    }

    /// Records where the train is at `now` (none: position unknown).
    pub fn position(&mut self, now: Instant, pos: Option<f64>) {
        if let Some(&(t, _)) = self.history.back() {
            if now < t + Self::HISTORY_STEP {
                return;
            }
        }
        self.history.push_back((now, pos.filter(|p| p.is_finite())));
        while self
            .history
            .front()
            .is_some_and(|(t, _)| *t + Self::HISTORY + Self::HISTORY_STEP < now)
        {
            self.history.pop_front();
        }
    }

    fn bin_of(&self, pos: Option<f64>) -> Option<i64> {
        pos.map(|p| (p / self.bin_m).floor() as i64)
    }

    fn add(&mut self, bin: Option<i64>, secs: f64, count: u64) {
        let e = match bin {
            Some(b) => self.bins.entry(b).or_insert((0.0, 0)),
            None => &mut self.unknown,
        };
        e.0 += secs;
        e.1 += count;
    }

    /// A stall from `from` to `to`: its seconds go to the bins of the positions recorded during
    /// it (each history entry holds until the next), the time before the oldest entry to
    /// "unknown"; the stall itself is counted in the bin where it began.
    pub fn stall(&mut self, from: Instant, to: Instant) {
        if to <= from {
            return;
        }
        let start_bin = self
            .history
            .iter()
            .rev()
            .find(|(t, _)| *t <= from)
            .and_then(|(_, p)| self.bin_of(*p));
        self.add(start_bin, 0.0, 1);
        let mut spans: Vec<(Option<i64>, f64)> = Vec::new();
        let first = self.history.front().map(|(t, _)| *t);
        match first {
            Some(t0) if t0 > from => spans.push((None, (t0.min(to) - from).as_secs_f64())),
            None => spans.push((None, (to - from).as_secs_f64())),
            _ => {}
        }
        let n = self.history.len();
        for k in 0..n {
            let (t, p) = self.history[k];
            let end = if k + 1 < n { self.history[k + 1].0 } else { to };
            let (a, b) = (t.max(from), end.min(to));
            if b > a {
                spans.push((self.bin_of(p), (b - a).as_secs_f64()));
            }
        }
        for (bin, secs) in spans {
            self.add(bin, secs, 0);
        }
    }

    /// Every bin with stalls: (bin start in metres, seconds, stalls), in track order.
    pub fn bins(&self) -> Vec<(f64, f64, u64)> {
        self.bins
            .iter()
            .map(|(b, (s, n))| (*b as f64 * self.bin_m, *s, *n))
            .collect()
    }

    /// Stall seconds and stalls without a known position.
    pub fn unknown(&self) -> (f64, u64) {
        self.unknown
    }
}

/// One of an interface's kernel statistics (`rx_bytes`, `tx_packets`, ...); `None` if
/// unreadable or if the name is not a plain interface name.
pub fn iface_stat(ifname: &str, key: &str) -> Option<u64> {
    if ifname.contains('/') || ifname.contains("..") || key.contains('/') {
        return None;
    }
    let p = std::path::PathBuf::from(format!("/sys/class/net/{ifname}/statistics/{key}"));
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(rx_b: u64, rx_p: u64, tx_b: u64, tx_p: u64) -> Counters {
        Counters {
            rx_bytes: rx_b,
            rx_packets: rx_p,
            tx_bytes: tx_b,
            tx_packets: tx_p,
        }
    }

    #[test]
    fn traffic_is_data_beyond_control_segments() {
        let z = c(0, 0, 0, 0);
        // One 1500-byte data segment: 1400 beyond the allowance >= 1000.
        assert!(is_traffic(&z, &c(1500, 1, 0, 0)));
        // 1000 MP_JOIN SYN-ACKs of 80 bytes: control only.
        assert!(!is_traffic(&z, &c(80_000, 1000, 0, 0)));
        // Probes and ACKs both ways: no.
        assert!(!is_traffic(&z, &c(120, 2, 60, 1)));
        // Uploads count through tx.
        assert!(is_traffic(&z, &c(0, 0, 3000, 2)));
        // Counter reset (interface re-created): no traffic, no panic.
        assert!(!is_traffic(&c(5000, 5, 5000, 5), &c(10, 1, 10, 1)));
    }

    fn at(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    #[tokio::test(start_paused = true)]
    async fn failover_counts_from_the_loss_to_traffic_elsewhere_after_removal() {
        let t = Instant::now();
        let mut f = CarrierFigures::new(t, true);
        assert_eq!(f.tick(at(t, 10), false, false, true, true), None);
        // Lost at 100 ms (first failed probe), declared down at 1600 ms.
        assert_eq!(f.down(at(t, 1600), at(t, 100), false), None);
        // Others carry traffic, but the endpoint is not removed yet: nothing.
        assert_eq!(f.tick(at(t, 1610), false, false, false, true), None);
        // Removed, others quiet: nothing yet.
        assert_eq!(f.tick(at(t, 1620), false, true, false, false), None);
        // Removed and others carry: failover 1630 - 100 = 1530 ms.
        assert_eq!(
            f.tick(at(t, 1630), false, true, false, true),
            Some(CarrierEvent::Failover {
                lost_at: at(t, 100),
                failover: Duration::from_millis(1530)
            })
        );
        // Back at 5000 ms; traffic on it at 5200 ms: failback 200 ms.
        assert_eq!(f.up(at(t, 5000), at(t, 5000), false), None);
        assert_eq!(f.tick(at(t, 5100), false, false, false, true), None);
        assert_eq!(
            f.tick(at(t, 5200), false, false, true, true),
            Some(CarrierEvent::Failback {
                back_at: at(t, 5000),
                failback: Duration::from_millis(200)
            })
        );
        // Up 1600 + 200 ms... : up from 0 to 1600 and 5000 to 5200 = 1800 ms; down 3400 ms.
        assert_eq!(f.up_time, Duration::from_millis(1800));
        assert_eq!(f.down_time, Duration::from_millis(3400));
        assert!((f.availability() - 1800.0 / 5200.0).abs() < 1e-12);
    }

    #[tokio::test(start_paused = true)]
    async fn pending_figures_are_dropped_not_invented() {
        let t = Instant::now();
        let mut f = CarrierFigures::new(t, true);
        f.down(at(t, 10), at(t, 10), false);
        // Back before any other carrier carried anything: the failover is dropped.
        assert_eq!(
            f.up(at(t, 500), at(t, 500), false),
            Some(CarrierEvent::FailoverDropped { lost_at: at(t, 10) })
        );
        // Dies again before it carried traffic: the failback is dropped.
        assert_eq!(
            f.down(at(t, 700), at(t, 700), false),
            Some(CarrierEvent::FailbackDropped {
                back_at: at(t, 500)
            })
        );
        // Repeated downs and ups change nothing.
        assert_eq!(f.down(at(t, 800), at(t, 800), false), None);
    }

    #[tokio::test(start_paused = true)]
    async fn backup_time_counts_only_while_up() {
        let t = Instant::now();
        let mut f = CarrierFigures::new(t, true);
        f.tick(at(t, 1000), true, false, false, false);
        f.down(at(t, 1500), at(t, 1500), true);
        f.tick(at(t, 2500), true, true, false, false);
        assert_eq!(f.backup_time, Duration::from_millis(1500));
        assert_eq!(f.down_time, Duration::from_millis(1000));
    }

    #[tokio::test(start_paused = true)]
    async fn stalls_go_to_the_bins_crossed() {
        let t = Instant::now();
        let mut b = StallBook::new(100.0);
        // The train at 50 m/s: 0 m at 0 s ... a history entry every 100 ms.
        for k in 0..=40 {
            b.position(at(t, k * 100), Some(k as f64 * 5.0));
        }
        // Entries closer than 100 ms are not kept.
        b.position(at(t, 4050), Some(1e9));
        // A stall from 1.0 s (50 m) to 3.0 s (150 m): 1 s in bin 0 (50-100 m), 1 s in bin 100.
        b.stall(at(t, 1000), at(t, 3000));
        let bins = b.bins();
        assert_eq!(bins.len(), 2, "{bins:?}");
        assert_eq!(bins[0].0, 0.0);
        assert!((bins[0].1 - 1.0).abs() < 1e-9 && bins[0].2 == 1, "{bins:?}");
        assert_eq!(bins[1].0, 100.0);
        assert!((bins[1].1 - 1.0).abs() < 1e-9 && bins[1].2 == 0, "{bins:?}");
        // Before the history began: unknown.
        let mut e = StallBook::new(100.0);
        e.position(at(t, 1000), Some(250.0));
        e.stall(at(t, 500), at(t, 1500));
        assert_eq!(e.unknown(), (0.5, 1));
        assert_eq!(e.bins(), vec![(200.0, 0.5, 0)]);
        // No position: unknown.
        let mut u = StallBook::new(100.0);
        u.position(at(t, 0), None);
        u.stall(at(t, 100), at(t, 600));
        assert_eq!(u.unknown(), (0.5, 1));
    }
}
