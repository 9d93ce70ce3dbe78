//! What a run will allocate and compute, estimated from its keys before it starts, and the
//! budget it must fit (issue 17: nothing a user types may exhaust the machine or run for days).
//!
//! The parts follow the code that allocates or loops: the time series (`run.duration_s /
//! run.bin_ms` bins of 8 bytes for each series, kept twice while results are gathered), the
//! link queues and pipes (112 bytes per packet), the MPTCP receive buffers (96-byte packets),
//! the traces, the measured carriers' binned rates, and the radio model (`railpath_radio::size`). Work is counted in
//! simulator events: a full-rate link moves `rate / (8 x 1500 B)` packets a second, and each
//! packet costs about 6 events (service and arrival of the packet and of its acknowledgement).
//!
//! The memory budget defaults to half of the machine's memory (`MemTotal` in /proc/meminfo,
//! 4 GiB where that cannot be read), the work budget to 10^11 events (hours at the engine's
//! 10-20 million events a second); `RAILPATH_MEMORY_BUDGET_MB` and `RAILPATH_WORK_BUDGET_EVENTS`
//! change them.

use crate::{FlowKind, Scenario, ScenarioError};
use railpath_core::SizePart;
use railpath_radio::measured::MeasuredData;
use railpath_radio::CarrierModel;

/// Bytes of one packet in a link queue or pipe (the simulator's `Packet` and its time stamp).
const PACKET_BYTES: f64 = 96.0;
/// Bytes a link holds per packet: the packet, its arrival time and its next hop (crates/sim's
/// link ring slot).
const SLOT_BYTES: f64 = 112.0;
/// Events per packet moved (the packet's service and arrival, and its acknowledgement's).
const EVENTS_PER_PACKET: f64 = 6.0;
/// Bits of one full-sized packet.
const PACKET_BITS: f64 = 1500.0 * 8.0;
/// Default work budget, events.
pub const DEFAULT_WORK_BUDGET: f64 = 1e11;

/// The budget a run must fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Budget {
    pub bytes: f64,
    pub events: f64,
}

impl Budget {
    /// The budget from the environment, else the defaults (half the machine's memory, 10^11
    /// events). A malformed variable is an error naming it.
    pub fn from_env() -> Result<Budget, String> {
        let var = |name: &str| -> Result<Option<f64>, String> {
            match std::env::var(name) {
                Ok(v) => match v.trim().parse::<f64>() {
                    Ok(x) if x.is_finite() && x > 0.0 => Ok(Some(x)),
                    _ => Err(format!(
                        "environment variable {name}: expected a number > 0, found {}",
                        railpath_core::excerpt(&v)
                    )),
                },
                Err(_) => Ok(None),
            }
        };
        let bytes = match var("RAILPATH_MEMORY_BUDGET_MB")? {
            Some(mb) => mb * 1e6,
            None => machine_memory_bytes().unwrap_or(4.0 * 1024f64.powi(3)) / 2.0,
        };
        let events = var("RAILPATH_WORK_BUDGET_EVENTS")?.unwrap_or(DEFAULT_WORK_BUDGET);
        Ok(Budget { bytes, events })
    }
}

/// `MemTotal` of /proc/meminfo in bytes.
fn machine_memory_bytes() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0)
}

fn human_bytes(b: f64) -> String {
    if b >= 1e9 {
        format!("{:.1} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else {
        format!("{:.0} kB", b / 1e3)
    }
}

impl Scenario {
    /// What this (validated, loaded) scenario's run will allocate and compute, part by part.
    pub fn size_estimate(&self) -> Vec<SizePart> {
        let d = self.run.duration_s;
        let mut parts = Vec::new();
        let nbins = (d * 1000.0 / self.run.bin_ms).ceil();
        let series: f64 = self
            .flows
            .iter()
            .map(|f| match f.kind {
                FlowKind::Tcp => 3.0,
                FlowKind::Mptcp => 3.0 + 3.0 * f.paths.len() as f64,
                FlowKind::Udp => 2.0,
            })
            .sum::<f64>()
            + self.links.len() as f64;
        parts.push(SizePart {
            what: format!("time series ({series} series of {nbins} bins)"),
            keys: "run.duration_s / run.bin_ms".into(),
            bytes: 16.0 * series * nbins,
            work: series * nbins,
        });
        for (i, l) in self.links.iter().enumerate() {
            let carrier = l
                .carrier
                .as_ref()
                .and_then(|id| self.carriers.iter().find(|c| &c.id == id));
            let trace_bps = |t: &Option<Vec<u64>>| {
                t.as_ref().map(|v| {
                    let period_s = v.last().copied().unwrap_or(1).max(1) as f64 / 1000.0;
                    v.len() as f64 * PACKET_BITS / period_s
                })
            };
            let carrier_bps = carrier.map(|c| match (&c.measured, c.rate_mbps) {
                (_, Some(r)) => r * 1e6,
                (Some(MeasuredData::Csv { rows, .. }), _) => {
                    rows.iter().map(|r| r.rate_bps as f64).fold(0.0, f64::max)
                }
                (
                    Some(MeasuredData::Mahimahi {
                        opportunities_ms, ..
                    }),
                    _,
                ) => trace_bps(&Some(opportunities_ms.clone())).unwrap_or(0.0),
                _ => 0.0,
            });
            let schedule_max = l
                .schedule
                .iter()
                .filter_map(|s| s.rate_mbps)
                .fold(0.0, f64::max)
                * 1e6;
            let fwd_bps = l
                .rate_mbps
                .map(|r| r * 1e6)
                .or_else(|| trace_bps(&l.trace_ms))
                .or(carrier_bps)
                // An 802.11 link carries less than its PHY rate: an upper bound.
                .or(l.wifi.map(|w| w.phy_mbps * 1e6))
                .unwrap_or(0.0)
                .max(schedule_max);
            let rev_bps = l
                .reverse_rate_mbps
                .map(|r| r * 1e6)
                .or_else(|| trace_bps(&l.reverse_trace_ms))
                .unwrap_or(fwd_bps);
            let packets_per_s = (fwd_bps + rev_bps) / PACKET_BITS;
            let queue = |b: crate::BufferLimit| match b {
                crate::BufferLimit::Packets(n) => n as f64,
                crate::BufferLimit::Bytes(n) => n as f64 / 64.0,
            };
            let delay_s = (l.delay_ms + l.reverse_delay_ms.unwrap_or(l.delay_ms)) / 1000.0;
            let traces = l.trace_ms.as_ref().map_or(0, Vec::len)
                + l.reverse_trace_ms.as_ref().map_or(0, Vec::len);
            parts.push(SizePart {
                what: format!("link {:?} (queues, pipes, traces)", l.id),
                keys: format!(
                    "link[{i}] rate, buffer and delay; run.duration_s for the packets it moves"
                ),
                bytes: SLOT_BYTES
                    * (queue(l.buffer()) + queue(l.reverse_buffer()) + packets_per_s * delay_s)
                    + 8.0 * traces as f64,
                work: EVENTS_PER_PACKET / 2.0 * packets_per_s * d,
            });
        }
        for (i, l) in self.links.iter().enumerate() {
            // A delay range's draws and repeated outages: a step each (and an event each).
            let draws = l
                .delay_range
                .map_or(0.0, |r| (d * 1000.0 / r.every_ms().max(1e-9)).ceil());
            let repeats: f64 = l
                .outages
                .iter()
                .filter_map(|o| {
                    o.every_s
                        .map(|e| ((d - o.start_s) / e.max(1e-9)).ceil().max(0.0))
                })
                .sum();
            if draws + repeats > 0.0 {
                parts.push(SizePart {
                    what: format!("link {:?} delay draws and repeated outages", l.id),
                    keys: format!("link[{i}].delay_range.every_ms, link[{i}].outages[].every_s"),
                    bytes: 48.0 * (draws + 2.0 * repeats),
                    work: draws + 2.0 * repeats,
                });
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            if let (FlowKind::Mptcp, Some(n)) = (f.kind, f.receive_buffer_packets) {
                parts.push(SizePart {
                    what: format!("receive buffer of flow {:?}", f.id),
                    keys: format!("flow[{i}].receive_buffer_packets"),
                    bytes: PACKET_BYTES * n as f64,
                    work: 0.0,
                });
            }
        }
        for (i, f) in self.flows.iter().enumerate() {
            // A udp source costs an event per packet it sends, carried or dropped (the link's
            // part counts what the link carries), and a draw per ON or OFF period.
            if let Some(u) = f.udp_config() {
                let active_s = (f.stop_s.unwrap_or(d).min(d) - f.start_s).max(0.0);
                let packets_per_s = u.mean_mbps * 1e6 / (8.0 * f64::from(u.packet_bytes.max(1)));
                let periods_per_s = if u.always_on() {
                    0.0
                } else {
                    2.0 * 1000.0 / (u.mean_on_ms + u.mean_off_ms)
                };
                parts.push(SizePart {
                    what: format!("udp source of flow {:?}", f.id),
                    keys: format!(
                        "flow[{i}].udp (mean_mbps, packet_bytes, mean_on_ms) and its start_s to stop_s"
                    ),
                    bytes: 0.0,
                    work: (packets_per_s + periods_per_s) * active_s,
                });
            }
        }
        for (i, c) in self.carriers.iter().enumerate() {
            if c.model == CarrierModel::Mahimahi {
                let bins = (d * 1000.0 / c.mahimahi_bin_ms).ceil();
                let (len, period_ms) = match &c.measured {
                    Some(MeasuredData::Mahimahi {
                        opportunities_ms, ..
                    }) => (
                        opportunities_ms.len() as f64,
                        opportunities_ms.last().copied().unwrap_or(1).max(1) as f64,
                    ),
                    _ => (0.0, 1.0),
                };
                parts.push(SizePart {
                    what: format!("binned trace of carrier {:?}", c.id),
                    keys: format!("run.duration_s / carrier[{i}].mahimahi_bin_ms"),
                    bytes: 56.0 * bins,
                    work: bins + len * (d * 1000.0 / period_ms).ceil(),
                });
            }
        }
        if let Some(t) = &self.train {
            parts.extend(railpath_radio::size::estimate(t, &self.carriers, d));
        }
        parts
    }

    /// Refuse a run whose estimate exceeds `budget`, naming the keys of its largest part.
    pub fn check_size(&self, budget: Budget) -> Result<(), ScenarioError> {
        let parts = self.size_estimate();
        let bytes: f64 = parts.iter().map(|p| p.bytes).sum();
        let work: f64 = parts.iter().map(|p| p.work).sum();
        let largest = |f: fn(&SizePart) -> f64| {
            parts
                .iter()
                .max_by(|a, b| f(a).total_cmp(&f(b)))
                .expect("the time series part is always there")
        };
        if bytes > budget.bytes {
            let p = largest(|p| p.bytes);
            return Err(ScenarioError::new(
                &self.source,
                p.keys.clone(),
                format!(
                    "this run would need about {} of memory, more than the budget of {} (half this machine's memory unless RAILPATH_MEMORY_BUDGET_MB says otherwise); the largest part is the {}: {}",
                    human_bytes(bytes),
                    human_bytes(budget.bytes),
                    p.what,
                    human_bytes(p.bytes)
                ),
            ));
        }
        if work > budget.events {
            let p = largest(|p| p.work);
            return Err(ScenarioError::new(
                &self.source,
                p.keys.clone(),
                format!(
                    "this run would take about {work:.1e} simulator events, more than the budget of {:.1e} (hours of computing; RAILPATH_WORK_BUDGET_EVENTS changes it); the largest part is the {}: {:.1e} events",
                    budget.events, p.what, p.work
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::parse_str;

    const BASE: &str = "[run]\nduration_s = 10\nbin_ms = 100\n\n[[link]]\nid = \"a\"\nrate_mbps = 12\ndelay_ms = 10\n\n\
        [[flow]]\nid = \"dl\"\nkind = \"tcp\"\ncc = \"newreno\"\npaths = [\"a\"]\n";

    #[test]
    fn parts_follow_the_keys() {
        // 100 bins x 4 series (3 of the flow, 1 of the link) x 16 B = 6400 B.
        // The link: 12 Mbit/s both ways = 2000 packets/s; queues 2 x 100 packets and
        // 2000/s x 20 ms = 40 in the pipes: 240 x 112 B. Work 3 x 2000 x 10 s = 60000 events.
        let s = parse_str(BASE, "t.toml").unwrap();
        let p = s.size_estimate();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].bytes, 6400.0);
        assert_eq!(p[0].work, 400.0);
        assert!((p[1].bytes - 240.0 * 112.0).abs() < 1e-6, "{}", p[1].bytes);
        assert!((p[1].work - 60000.0).abs() < 1e-6, "{}", p[1].work);
    }

    #[test]
    fn a_udp_source_counts_its_packets_and_periods() {
        // 11.2 Mbit/s of 1400-byte packets = 1000 packets/s; ON 200 ms and OFF 200 x (22.4 /
        // 11.2 - 1) = 200 ms: 2 draws per 400 ms = 5 a second; from 2 s to 8 s.
        let text = BASE.to_string()
            + "\n[[flow]]\nid = \"x\"\nkind = \"udp\"\npaths = [\"a\"]\nstart_s = 2.0\nstop_s = 8.0\n\
               udp = { max_mbps = 22.4, mean_mbps = 11.2 }\n";
        let s = parse_str(&text, "t.toml").unwrap();
        s.validate().unwrap();
        let p = s.size_estimate();
        let u = p.iter().find(|p| p.what.contains("udp")).unwrap();
        assert_eq!(
            u.keys,
            "flow[1].udp (mean_mbps, packet_bytes, mean_on_ms) and its start_s to stop_s"
        );
        assert!((u.work - 1005.0 * 6.0).abs() < 1e-6, "{}", u.work);
        // 2 series of the udp flow beside the tcp flow's 3 and the link's 1, 100 bins.
        assert_eq!(p[0].bytes, 16.0 * 6.0 * 100.0);
    }

    #[test]
    fn a_long_run_in_small_bins_is_refused_naming_its_keys() {
        // Issue 17: duration_s = 1e6 with bin_ms = 1 (both in range) aborted allocating 8 GB.
        let s = parse_str(
            &BASE.replace(
                "duration_s = 10\nbin_ms = 100",
                "duration_s = 1000000\nbin_ms = 1",
            ),
            "t.toml",
        )
        .unwrap();
        s.validate().unwrap();
        let budget = super::Budget {
            bytes: 4e9,
            events: 1e20,
        };
        let e = s.check_size(budget).unwrap_err();
        assert_eq!(e.key, "run.duration_s / run.bin_ms");
        assert!(e.message.contains("64.0 GB"), "{}", e.message);
        // The same run in 1 s bins fits.
        let ok = parse_str(
            &BASE.replace(
                "duration_s = 10\nbin_ms = 100",
                "duration_s = 1000000\nbin_ms = 1000",
            ),
            "t.toml",
        )
        .unwrap();
        ok.check_size(budget).unwrap();
        // ... but not a work budget of 10^9 events (it moves 1.2e10 packets' events).
        let e = ok
            .check_size(super::Budget {
                bytes: 4e9,
                events: 1e9,
            })
            .unwrap_err();
        assert_eq!(
            e.key,
            "link[0] rate, buffer and delay; run.duration_s for the packets it moves"
        );
    }
}
