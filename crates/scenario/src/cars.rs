//! The train's cars and how their traffic reaches the ground (the PROXY-LB paper, seeds.md §2):
//! a load balancer that gives each car one carrier (`[[balancer]]`), an MPTCP proxy on the
//! train's router that relays each car's TCP onto MPTCP (`access` + `proxy` on an mptcp flow),
//! and the two link keys the paper's shapers need: a delay that varies over a range
//! (`delay_range`) and periodic outages (`outages[].every_s`).

use crate::{Link, Outage, ScheduleStep};
use railpath_core::Rng;
use serde::{Deserialize, Serialize};

/// `delay_range = { min_ms, max_ms, every_ms }` on a link: the data direction's one-way delay is
/// piecewise constant, a new value drawn uniformly from `[min_ms, max_ms]` every `every_ms`
/// (default [`DELAY_RANGE_DEFAULT_EVERY_MS`]) from time 0, from the seeded stream
/// `link:<id>:delay`. A shaper that replays measured delays sets one delay per measurement
/// interval for every packet that follows; the link stays first in, first out (a packet never
/// overtakes an earlier one when the delay falls), as a shaper's queue does. A per-packet random
/// delay would reorder packets, which no shaper does.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DelayRange {
    pub min_ms: f64,
    pub max_ms: f64,
    pub every_ms: Option<f64>,
}

/// Default `delay_range.every_ms`: one value per second, the granularity of the per-second
/// measurement logs a shaper replays.
pub const DELAY_RANGE_DEFAULT_EVERY_MS: f64 = 1000.0;

impl DelayRange {
    pub fn every_ms(&self) -> f64 {
        self.every_ms.unwrap_or(DELAY_RANGE_DEFAULT_EVERY_MS)
    }
}

impl Link {
    /// Every outage of the link up to `end_s`, periodic ones (`every_s`) repeated: an outage
    /// with `every_s` starts at `start_s`, `start_s + every_s`, ... while before `end_s`.
    pub fn outage_list(&self, end_s: f64) -> Vec<Outage> {
        let mut out = Vec::new();
        for o in &self.outages {
            match o.every_s {
                Some(every) if every > 0.0 => {
                    let mut k = 0u64;
                    loop {
                        let t = o.start_s + k as f64 * every;
                        if t >= end_s {
                            break;
                        }
                        out.push(Outage {
                            start_s: t,
                            duration_ms: o.duration_ms,
                            every_s: None,
                        });
                        k += 1;
                    }
                }
                _ => out.push(Outage {
                    every_s: None,
                    ..o.clone()
                }),
            }
        }
        out.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
        out
    }

    /// The link's schedule up to `end_s`, with its `delay_range` drawn (seed `seed`): the steps
    /// of `schedule` and, every `every_ms` from 0, a delay step; a step of `schedule` that sets
    /// `delay_ms` wins over a drawn delay until the next draw. Sorted by time, one step per time.
    pub fn schedule_steps(&self, seed: u64, end_s: f64) -> Vec<ScheduleStep> {
        let Some(r) = self.delay_range else {
            return self.schedule.clone();
        };
        let mut rng = Rng::stream(seed, &format!("link:{}:delay", self.id));
        let every = r.every_ms() / 1000.0;
        let mut steps: Vec<ScheduleStep> = Vec::new();
        let mut k = 0u64;
        loop {
            let t = k as f64 * every;
            if t >= end_s || every <= 0.0 {
                break;
            }
            let d = r.min_ms + (r.max_ms - r.min_ms) * rng.uniform();
            steps.push(ScheduleStep {
                t_s: t,
                rate_mbps: None,
                delay_ms: Some(d),
                loss: None,
            });
            k += 1;
        }
        for s in &self.schedule {
            match steps.iter_mut().find(|x| x.t_s == s.t_s) {
                Some(x) => {
                    x.rate_mbps = s.rate_mbps.or(x.rate_mbps);
                    x.delay_ms = s.delay_ms.or(x.delay_ms);
                    x.loss = s.loss.or(x.loss);
                }
                None => steps.push(s.clone()),
            }
        }
        steps.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        steps
    }

    /// The data direction's delay at time 0: the range's first draw, else `delay_ms`.
    pub fn initial_delay_ms(&self, seed: u64, end_s: f64) -> f64 {
        match self.delay_range {
            Some(_) => self
                .schedule_steps(seed, end_s)
                .first()
                .filter(|s| s.t_s == 0.0)
                .and_then(|s| s.delay_ms)
                .unwrap_or(self.delay_ms),
            None => self.delay_ms,
        }
    }
}

/// How a load balancer picks a car's carrier when the car's connection starts.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum BalancePolicy {
    /// The links in turn, one per new connection.
    #[default]
    RoundRobin,
    /// The link with the fewest connections open now (ties: the first listed).
    LeastConnection,
    /// In proportion to the links' rates: the link with the least (connections + 1) / rate.
    Bandwidth,
    /// A hash of the car's client address picks the link (the same car always gets the same
    /// carrier while both are up).
    IpHash,
}

impl BalancePolicy {
    pub fn as_str(&self) -> &'static str {
        match self {
            BalancePolicy::RoundRobin => "round-robin",
            BalancePolicy::LeastConnection => "least-connection",
            BalancePolicy::Bandwidth => "bandwidth",
            BalancePolicy::IpHash => "ip-hash",
        }
    }
    pub const ALL: [BalancePolicy; 4] = [
        BalancePolicy::RoundRobin,
        BalancePolicy::LeastConnection,
        BalancePolicy::Bandwidth,
        BalancePolicy::IpHash,
    ];
}

/// What a failover does to the car's TCP connection.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Failover {
    /// The router masquerades each car behind its carrier's address (OpenWrt mwan3): moved to
    /// another carrier, the car's packets carry another source address, the server answers the
    /// unknown connection with a reset, and the car's application opens a new connection (one
    /// handshake later, from slow start). What was in flight is lost.
    #[default]
    Reconnect,
    /// The car keeps its address across carriers (a tunnel to a ground gateway): the same
    /// connection continues over the new carrier after its retransmission timer fires.
    KeepAddress,
}

impl Failover {
    pub fn as_str(&self) -> &'static str {
        match self {
            Failover::Reconnect => "reconnect",
            Failover::KeepAddress => "keep-address",
        }
    }
}

/// Default `detect_ms`: OpenWrt mwan3's default tracking (a ping every 5 s, an interface down
/// after 3 lost replies).
pub const BALANCER_DEFAULT_DETECT_MS: f64 = 15_000.0;

/// `[[balancer]]`: the KORAIL load balancer. A tcp flow whose `paths` is `["<balancer id>"]` is a
/// car's connection: when it starts, the balancer assigns it one of `links` by `policy`; when that
/// link has been down for `detect_ms`, the balancer moves the car to a link that is up, and the
/// connection pays what `failover` says. Cars moved away stay where they were moved (connection
/// tracking pins a connection to its interface).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Balancer {
    /// Unique among links, bonds and balancers.
    pub id: String,
    /// The carriers' links, at least one.
    pub links: Vec<String>,
    #[serde(default)]
    pub policy: BalancePolicy,
    /// How long a link is down before the balancer sees it (default
    /// [`BALANCER_DEFAULT_DETECT_MS`]).
    pub detect_ms: Option<f64>,
    #[serde(default)]
    pub failover: Failover,
}

impl Balancer {
    pub fn detect_ms(&self) -> f64 {
        self.detect_ms.unwrap_or(BALANCER_DEFAULT_DETECT_MS)
    }
}

/// The address of the passenger client of car `k` (0-based), as on the namespace testbed:
/// `10.99.k.2`. The `ip-hash` policy hashes it.
pub fn car_address(k: usize) -> [u8; 4] {
    [10, 99, (k % 256) as u8, 2]
}

/// One of a balancer's links as [`assign`] sees it when a connection opens.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkLoad {
    /// The link's rate, Mbit/s (the `bandwidth` policy's weight; a link without a usable rate,
    /// 0 or not finite, is never picked by `bandwidth`).
    pub rate_mbps: f64,
    /// The balancer's connections open on it now.
    pub open: usize,
    /// Whether the balancer's tracker sees it up (a link that is down is never picked).
    pub up: bool,
}

/// FNV-1a, 32 bits (Fowler, Noll, Vo; offset basis 0x811c9dc5, prime 0x01000193): the `ip-hash`
/// policy's hash of a car's address.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The link a load balancer gives a new connection: an index into `links` (the balancer's
/// `links`, in order), or None when no link is up. `car` is the car (its address is
/// [`car_address`]`(car)`), `order` the connection's place (0-based) among the connections the
/// balancer has opened, in the order they opened. The one rule of the simulator and the
/// testbed (OpenWrt mwan3 and the KORAIL balancer's policies, seeds.md section 2):
/// - round robin: `links[order mod n]`;
/// - least connection: the fewest open connections, ties to the first listed;
/// - bandwidth: the least `(open + 1) / rate_mbps` (the share a new connection would get,
///   inverted), ties to the first listed;
/// - ip-hash: `links[fnv1a32(car_address(car)) mod n]`.
///
/// Round robin and ip-hash skip a link that is down for the next one up in list order
/// (cyclically); the other two choose among the links that are up.
pub fn assign(
    policy: BalancePolicy,
    car: usize,
    order: usize,
    links: &[LinkLoad],
) -> Option<usize> {
    let n = links.len();
    if n == 0 {
        return None;
    }
    let from = |start: usize| (0..n).map(|j| (start + j) % n).find(|&i| links[i].up);
    match policy {
        BalancePolicy::RoundRobin => from(order % n),
        BalancePolicy::IpHash => from(fnv1a32(&car_address(car)) as usize % n),
        BalancePolicy::LeastConnection => {
            let mut best: Option<usize> = None;
            for (i, l) in links.iter().enumerate().filter(|(_, l)| l.up) {
                if best.is_none_or(|b| l.open < links[b].open) {
                    best = Some(i);
                }
            }
            best
        }
        BalancePolicy::Bandwidth => {
            let mut best: Option<usize> = None;
            let usable = |l: &LinkLoad| l.up && l.rate_mbps.is_finite() && l.rate_mbps > 0.0;
            for (i, l) in links.iter().enumerate().filter(|(_, l)| usable(l)) {
                // (open_i + 1) / rate_i < (open_b + 1) / rate_b, without dividing (exact ties).
                let better = best.is_none_or(|b| {
                    (l.open as f64 + 1.0) * links[b].rate_mbps
                        < (links[b].open as f64 + 1.0) * l.rate_mbps
                });
                if better {
                    best = Some(i);
                }
            }
            best
        }
    }
}

/// Default `proxy.buffer_bytes`: railpath-gateway's relay buffer per direction.
pub const PROXY_DEFAULT_BUFFER_BYTES: u64 = 64 * 1024;

/// `proxy = { ... }` on an mptcp flow with `access`: the train router's proxy that relays
/// between the MPTCP connection to the server and the passenger's TCP over the in-car link.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ProxyOptions {
    /// The relay's own buffer, bytes (default [`PROXY_DEFAULT_BUFFER_BYTES`]): data the proxy
    /// has read from the server's side and not yet written to the passenger's connection. Full,
    /// the proxy stops reading and the server's window closes (back-pressure).
    pub buffer_bytes: Option<u64>,
    /// Whether the server speaks MPTCP (default true); false: the SYN/ACK carries no
    /// MP_CAPABLE, and the proxy falls back to one plain TCP connection over the first path.
    pub server_mptcp: Option<bool>,
    /// The passenger's TCP congestion control (default "cubic").
    pub access_cc: Option<String>,
    /// Carry a payload through the relay and check its SHA-256 at the passenger (slower; for
    /// tests); the summary reports both digests.
    #[serde(default)]
    pub verify: bool,
}

impl ProxyOptions {
    pub fn buffer_bytes(&self) -> u64 {
        self.buffer_bytes.unwrap_or(PROXY_DEFAULT_BUFFER_BYTES)
    }
    pub fn server_mptcp(&self) -> bool {
        self.server_mptcp.unwrap_or(true)
    }
    pub fn access_cc(&self) -> &str {
        self.access_cc.as_deref().unwrap_or("cubic")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(extra: &str) -> Link {
        let s = crate::parse_str(
            &format!("[run]\nduration_s = 10\n[[link]]\nid = \"a\"\nrate_mbps = 10\n{extra}\n[[flow]]\nid = \"f\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n"),
            "t.toml",
        )
        .unwrap();
        s.links[0].clone()
    }

    #[test]
    fn periodic_outages_repeat_until_the_end() {
        let l = link("outages = [{ start_s = 2.0, duration_ms = 300, every_s = 3.0 }, { start_s = 3.0, duration_ms = 50 }]");
        let o = l.outage_list(10.0);
        let starts: Vec<f64> = o.iter().map(|x| x.start_s).collect();
        // 2, 5, 8 (11 is past the end), and the single one at 3, in time order.
        assert_eq!(starts, vec![2.0, 3.0, 5.0, 8.0]);
        assert!(o.iter().all(|x| x.every_s.is_none()));
        assert_eq!(o[2].duration_ms, 300.0);
    }

    #[test]
    fn delay_range_draws_one_delay_per_interval_within_the_range() {
        let l = link("delay_range = { min_ms = 45, max_ms = 75, every_ms = 2500 }\nschedule = [{ t_s = 5.0, loss = 0.1 }, { t_s = 6.0, delay_ms = 10 }]");
        let s = l.schedule_steps(7, 10.0);
        let t: Vec<f64> = s.iter().map(|x| x.t_s).collect();
        assert_eq!(t, vec![0.0, 2.5, 5.0, 6.0, 7.5]);
        for x in [&s[0], &s[1], &s[2], &s[4]] {
            let d = x.delay_ms.unwrap();
            assert!((45.0..=75.0).contains(&d), "{d}");
        }
        // The schedule's own step at 5 s joins the draw there; its delay step at 6 s stays.
        assert_eq!(s[2].loss, Some(0.1));
        assert_eq!(s[3].delay_ms, Some(10.0));
        // Same seed, same draws; another seed, others.
        assert_eq!(s, l.schedule_steps(7, 10.0));
        assert_ne!(s, l.schedule_steps(8, 10.0));
        assert_eq!(l.initial_delay_ms(7, 10.0), s[0].delay_ms.unwrap());
    }

    fn up(rates: &[f64]) -> Vec<LinkLoad> {
        rates
            .iter()
            .map(|&r| LinkLoad {
                rate_mbps: r,
                open: 0,
                up: true,
            })
            .collect()
    }

    /// Cars 0..n connect in order; each keeps its connection open.
    fn sequence(policy: BalancePolicy, rates: &[f64], cars: usize) -> Vec<usize> {
        let mut links = up(rates);
        (0..cars)
            .map(|k| {
                let i = assign(policy, k, k, &links).unwrap();
                links[i].open += 1;
                i
            })
            .collect()
    }

    #[test]
    fn fnv1a_of_car_addresses() {
        // Independent check, Python:
        // def f(bs):
        //   h = 0x811c9dc5
        //   for b in bs: h ^= b; h = (h * 0x01000193) & 0xffffffff
        //   return h
        // [hex(f([10, 99, k, 2])) for k in range(5)]
        // -> 0xcd60b284, 0xf7633339, 0x855bc3fe, 0xa75e381b, 0x656a9c28
        let want = [
            0xcd60_b284u32,
            0xf763_3339,
            0x855b_c3fe,
            0xa75e_381b,
            0x656a_9c28,
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(fnv1a32(&car_address(k)), *w, "car {k}");
        }
        // The FNV reference value of the empty input is the offset basis; "a" -> 0xe40c292c.
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
    }

    #[test]
    fn round_robin_takes_the_links_in_turn() {
        let p = BalancePolicy::RoundRobin;
        assert_eq!(sequence(p, &[40.0, 30.0], 5), vec![0, 1, 0, 1, 0]);
        assert_eq!(sequence(p, &[1.0, 1.0, 1.0], 4), vec![0, 1, 2, 0]);
        // A link that is down: the next one up.
        let mut l = up(&[40.0, 30.0, 20.0]);
        l[1].up = false;
        assert_eq!(assign(p, 7, 1, &l), Some(2));
        l[2].up = false;
        assert_eq!(assign(p, 7, 1, &l), Some(0));
        l[0].up = false;
        assert_eq!(assign(p, 7, 1, &l), None);
        assert_eq!(assign(p, 0, 0, &[]), None);
    }

    #[test]
    fn least_connection_fills_the_emptiest_first_listed_on_ties() {
        let p = BalancePolicy::LeastConnection;
        assert_eq!(sequence(p, &[40.0, 30.0], 5), vec![0, 1, 0, 1, 0]);
        let mut l = up(&[40.0, 30.0, 20.0]);
        l[0].open = 2;
        l[1].open = 1;
        l[2].open = 1;
        assert_eq!(assign(p, 0, 4, &l), Some(1));
        l[1].up = false;
        assert_eq!(assign(p, 0, 4, &l), Some(2));
    }

    #[test]
    fn bandwidth_weighs_connections_by_rate() {
        let p = BalancePolicy::Bandwidth;
        // 40 and 30 Mbit/s: car 0: 1/40 < 1/30 -> A; car 1: 2/40 > 1/30 -> B; car 2: 2/40 <
        // 2/30 -> A; car 3: 3/40 > 2/30 -> B; car 4: 3/40 < 3/30 -> A.
        assert_eq!(sequence(p, &[40.0, 30.0], 5), vec![0, 1, 0, 1, 0]);
        // 10 and 20: 1/10 > 1/20 -> B; 1/10 = 2/20, a tie -> A; 2/10 > 2/20 -> B;
        // 2/10 < 3/20? no, 0.2 > 0.15 -> B; then 2/10 = 4/20 tie -> A.
        assert_eq!(sequence(p, &[10.0, 20.0], 5), vec![1, 0, 1, 1, 0]);
        // A link without a rate is never picked.
        let mut l = up(&[0.0, 5.0]);
        assert_eq!(assign(p, 0, 0, &l), Some(1));
        l[1].up = false;
        assert_eq!(assign(p, 0, 0, &l), None);
    }

    #[test]
    fn ip_hash_follows_the_cars_address() {
        let p = BalancePolicy::IpHash;
        // mod 2 of the hashes above: 0, 1, 0, 1, 0; mod 3: 2, 1, 1, 2, 1.
        assert_eq!(sequence(p, &[40.0, 30.0], 5), vec![0, 1, 0, 1, 0]);
        assert_eq!(sequence(p, &[1.0, 1.0, 1.0], 5), vec![2, 1, 1, 2, 1]);
        // Not the connection order: car 3 gets the same link whenever it connects.
        let l = up(&[1.0, 1.0, 1.0]);
        assert_eq!(assign(p, 3, 0, &l), Some(2));
        assert_eq!(assign(p, 3, 9, &l), Some(2));
        // Its link down: the next one up (cyclically).
        let mut l = l;
        l[2].up = false;
        assert_eq!(assign(p, 3, 0, &l), Some(0));
    }

    #[test]
    fn car_addresses_follow_the_testbed() {
        assert_eq!(car_address(0), [10, 99, 0, 2]);
        assert_eq!(car_address(4), [10, 99, 4, 2]);
    }
}
