//! The simulated world: builds links, routes and flows from a scenario, runs the event loop, and
//! gathers the results.

use crate::engine::Event;
use crate::flows::cars::BalancerRt;
use crate::flows::Flow;
use crate::net::{Net, StepAction};
use crate::results::{
    AvgMax, BondMemberEvent, BondMemberSummary, BondSummary, Handover, LinkSummary, RunResults,
    Series, Summary,
};
use railpath_core::Time;
use railpath_scenario::{Resolved, TcpRoute, Transport};
use std::fmt;

/// An error that stops a run.
#[derive(Debug, Clone, PartialEq)]
pub enum SimError {
    /// The scenario's fault, found only when the run is built (no base station within reach of
    /// the track the train runs, measured data that never give a rate): names file and key, and
    /// is the user's to fix like a validation error (exit status 2).
    Input(railpath_scenario::ScenarioError),
    /// The run cannot go on for a reason that is not the input's (a bug): exit status 1.
    Internal(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Input(e) => write!(f, "{e}"),
            SimError::Internal(m) => f.write_str(m),
        }
    }
}
impl std::error::Error for SimError {}

/// A link during the run: its two directions and the steps that change it.
pub(crate) struct LinkRuntime {
    pub id: String,
    pub fwd: u32,
    pub rev: u32,
    pub steps: Vec<(Time, StepAction)>,
    pub next_step: usize,
    pub queue_samples: Vec<f64>,
    /// Its outages are its interface unplugged (`unplug`): bonds see them at once.
    pub unplug: bool,
    /// Per bin, the forward direction's packets dropped and forwarded (`dropped_packets`,
    /// `forwarded_packets`): kept for links of a carrier with the failure model only, so runs
    /// without it write the series they always did.
    pub loss_samples: Option<LossSamples>,
}

/// A link's per-bin drop and forward counts, and the counters at the last bin's end.
#[derive(Default)]
pub(crate) struct LossSamples {
    pub dropped: Vec<f64>,
    pub forwarded: Vec<f64>,
    last_dropped: u64,
    last_forwarded: u64,
}

impl LossSamples {
    fn sample(&mut self, dropped: u64, forwarded: u64) {
        self.dropped.push((dropped - self.last_dropped) as f64);
        self.forwarded
            .push((forwarded - self.last_forwarded) as f64);
        (self.last_dropped, self.last_forwarded) = (dropped, forwarded);
    }
}

/// The world during a run (built by `crate::build::world`).
pub(crate) struct World {
    pub net: Net,
    pub flows: Vec<Flow>,
    pub links: Vec<LinkRuntime>,
    pub end: Time,
    pub bin: Time,
    pub nbins: usize,
    pub bins_done: usize,
    pub handovers: Vec<Handover>,
    pub balancers: Vec<BalancerRt>,
}

impl World {
    pub fn run(&mut self, progress: &mut dyn FnMut(f64)) {
        let end = self.end;
        let mut next_progress = Time::from_secs(1);
        while let Some(ev) = self.net.sched.pop(end) {
            match ev {
                Event::LinkService { dir } => self.net.service(dir),
                Event::LinkArrival { dir } => {
                    if self.net.take_arrival_event(dir) {
                        // Two sinks of the same body, so that each call site inlines its own.
                        let flows = &mut self.flows;
                        if self.net.is_plain_exit(dir) {
                            self.net.plain_arrivals(dir, |net, e, p| {
                                flows[e.flow as usize].on_packet(e.sub, e.side, p, net)
                            });
                        } else {
                            self.net.exits(dir, |net, e, p| {
                                flows[e.flow as usize].on_packet(e.sub, e.side, p, net)
                            });
                        }
                    }
                }
                Event::Timer { flow, sub, side } => {
                    let f = &mut self.flows[flow as usize];
                    f.on_timer(sub, side, &mut self.net);
                }
                Event::FlowStart { flow } => {
                    self.balance(flow as usize);
                    self.flows[flow as usize].start(&mut self.net)
                }
                Event::BalancerCheck { balancer } => self.balancer_check(balancer as usize),
                Event::FlowControl { ctl } => {
                    let (flow, idx) = self.net.sched.control(ctl);
                    self.flows[flow as usize].control(idx, &mut self.net)
                }
                Event::LinkStep { link } => self.link_step(link as usize),
                Event::BondCheck { bond } => {
                    let now = self.net.now();
                    let Net { bonds, dirs, .. } = &mut self.net;
                    bonds[bond as usize].monitor(now, |m| dirs[m.fwd as usize].down == 0);
                }
                Event::Sample => {
                    self.sample();
                    let now = self.net.now();
                    if now >= next_progress {
                        progress(now.secs_f64() / end.secs_f64());
                        next_progress = now + Time::from_secs(1);
                    }
                }
            }
        }
        self.net.sched.advance_to(end);
        self.net.depart_all(end);
        progress(1.0);
    }

    /// Balancer `bi`'s links as its rule sees them: rate, connections open there now (cars
    /// placed there and not finished, other than `except`), and whether its tracking sees
    /// them up.
    fn balancer_view(
        &self,
        bi: usize,
        now: Time,
        except: usize,
    ) -> Vec<railpath_scenario::LinkLoad> {
        let bal = &self.balancers[bi];
        let mut loads: Vec<railpath_scenario::LinkLoad> = (0..bal.links.len())
            .map(|k| railpath_scenario::LinkLoad {
                rate_mbps: bal.rates[k],
                open: 0,
                up: bal.up(k, now),
            })
            .collect();
        for &fi in bal.cars.iter().filter(|&&fi| fi != except) {
            if let Flow::Balanced(c) = &self.flows[fi] {
                if let (Some(k), None) = (c.link, c.flow.completed_at) {
                    loads[k].open += 1;
                }
            }
        }
        loads
    }

    /// A car's connection opens: its balancer gives it a link (none up: its first, where it
    /// waits like any connection on a dead link).
    fn balance(&mut self, fi: usize) {
        let Flow::Balanced(c) = &self.flows[fi] else {
            return;
        };
        let (bi, car) = (c.balancer, c.car);
        let now = self.net.now();
        let loads = self.balancer_view(bi, now, fi);
        let bal = &mut self.balancers[bi];
        let k = railpath_scenario::assign(bal.policy, car, bal.order, &loads).unwrap_or(0);
        bal.order += 1;
        if let Flow::Balanced(c) = &mut self.flows[fi] {
            c.assign(k, &mut self.net);
        }
    }

    /// The balancer's tracking saw a link go down: its cars move to a link that is up.
    fn balancer_check(&mut self, bi: usize) {
        let now = self.net.now();
        let cars = self.balancers[bi].cars.clone();
        for fi in cars {
            let Flow::Balanced(c) = &self.flows[fi] else {
                continue;
            };
            let (Some(k), car) = (c.link, c.car) else {
                continue;
            };
            if self.balancers[bi].up(k, now) || c.flow.completed_at.is_some() {
                continue;
            }
            let loads = self.balancer_view(bi, now, fi);
            let bal = &mut self.balancers[bi];
            let Some(j) = railpath_scenario::assign(bal.policy, car, bal.order, &loads) else {
                continue;
            };
            bal.order += 1;
            if let Flow::Balanced(c) = &mut self.flows[fi] {
                if let Some(t) = c.fail_over(j, now, &mut self.net) {
                    self.net
                        .sched
                        .at_control(t, fi as u32, crate::flows::cars::RECONNECTED);
                }
            }
        }
    }

    fn link_step(&mut self, li: usize) {
        let now = self.net.now();
        loop {
            let l = &mut self.links[li];
            let Some(&(t, action)) = l.steps.get(l.next_step) else {
                return;
            };
            if t > now {
                self.net.sched.at(t, Event::LinkStep { link: li as u32 });
                return;
            }
            l.next_step += 1;
            let (fwd, rev) = (l.fwd, l.rev);
            let unplugged =
                l.unplug && matches!(action, StepAction::OutageStart(_) | StepAction::OutageEnd);
            self.net.apply_step(fwd, rev, action);
            if unplugged {
                // The interface is removed (the bonding driver releases a slave whose device
                // unregisters, `bond_netdev_event()` on NETDEV_UNREGISTER) or added back
                // (enslaved again, its carrier checked at once): every bond over it sees the
                // change now, not at its next link-monitor check.
                let Net { bonds, dirs, .. } = &mut self.net;
                for b in bonds
                    .iter_mut()
                    .filter(|b| b.members.iter().any(|m| m.fwd == fwd))
                {
                    b.monitor(now, |m| dirs[m.fwd as usize].down == 0);
                }
            }
        }
    }

    fn sample(&mut self) {
        let now = self.net.now();
        let bin_start = self.bin.mul(self.bins_done as u64);
        let width = now - bin_start;
        for f in &mut self.flows {
            f.sample(width);
        }
        for l in &mut self.links {
            // A bin end comes before the departures at its time.
            self.net.dirs[l.fwd as usize].depart(now, false);
            let d = &self.net.dirs[l.fwd as usize];
            l.queue_samples.push(d.queued_bytes as f64);
            if let Some(ls) = &mut l.loss_samples {
                let st = &d.stats;
                ls.sample(
                    st.drops_overflow + st.drops_random + st.drops_outage,
                    st.forwarded,
                );
            }
        }
        self.bins_done += 1;
        if self.bins_done < self.nbins {
            let next = (now + self.bin).min(self.end);
            self.net.sched.at(next, Event::Sample);
        }
    }

    pub fn finish(mut self, r: &Resolved) -> RunResults {
        // A final partial bin (when the duration is not a multiple of the bin width) was
        // scheduled at the end time; nothing to add here.
        while self.bins_done < self.nbins {
            self.sample();
        }
        let end = self.end;
        let mut series = Vec::new();
        let mut flows = Vec::new();
        for (fi, f) in self.flows.iter().enumerate() {
            let (mut summary, mut fs) = f.summarize(end, &self.net);
            // Handovers of the carriers this flow's links follow.
            let spec = &r.flows[fi];
            let carriers: Vec<&str> = r
                .flow_links(spec)
                .into_iter()
                .filter_map(|li| r.carrier_of(li).map(|c| c.id.as_str()))
                .collect();
            let starts: Vec<f64> = self
                .handovers
                .iter()
                .filter(|h| carriers.contains(&h.carrier.as_str()))
                .map(|h| h.t_s)
                .collect();
            if let Some(g) = fs
                .iter()
                .find(|x| x.subflow.is_empty() && x.metric == "goodput_bps")
            {
                summary.handover_goodput_bps =
                    handover_goodput(&g.values, self.bin.secs_f64(), &starts);
            }
            if let Transport::Tcp(t) = &spec.transport {
                if let TcpRoute::Path {
                    access: Some(a), ..
                } = t.route
                {
                    // A car's plain tcp flow over a link (no balancer, no proxy).
                    summary.car = Some(crate::results::CarStats {
                        access: Some(r.links[a].id().to_string()),
                        ..Default::default()
                    });
                }
            }
            flows.push(summary);
            series.append(&mut fs);
        }
        let mut links = Vec::new();
        for l in &self.links {
            let d = &self.net.dirs[l.fwd as usize];
            let served = d.stats.forwarded + d.stats.drops_random;
            let q = &l.queue_samples;
            links.push(LinkSummary {
                id: l.id.clone(),
                forwarded_packets: d.stats.forwarded,
                dropped_packets: d.stats.drops_overflow
                    + d.stats.drops_random
                    + d.stats.drops_outage,
                random_losses: d.stats.drops_random,
                queue_bytes: AvgMax {
                    avg: if q.is_empty() {
                        0.0
                    } else {
                        q.iter().sum::<f64>() / q.len() as f64
                    },
                    max: d.stats.max_queue_bytes as f64,
                },
                queue_delay_ms: AvgMax {
                    avg: if served == 0 {
                        0.0
                    } else {
                        d.stats.queue_delay_sum.ms_f64() / served as f64
                    },
                    max: d.stats.queue_delay_max.ms_f64(),
                },
                outages: d.outage_log.iter().map(Into::into).collect(),
            });
            series.push(Series {
                flow: String::new(),
                subflow: l.id.clone(),
                metric: "queue_bytes",
                values: l.queue_samples.clone(),
            });
            if let Some(ls) = &l.loss_samples {
                for (metric, values) in [
                    ("dropped_packets", &ls.dropped),
                    ("forwarded_packets", &ls.forwarded),
                ] {
                    series.push(Series {
                        flow: String::new(),
                        subflow: l.id.clone(),
                        metric,
                        values: values.clone(),
                    });
                }
            }
        }
        let bonds = self
            .net
            .bonds
            .iter()
            .zip(&r.bonds)
            .map(|(b, cfg)| {
                let name = |k: usize| r.links[b.members[k].link as usize].id().to_string();
                BondSummary {
                    id: b.id.clone(),
                    split: cfg.split.as_str().to_string(),
                    weights: cfg.weights.clone(),
                    ack_filter: cfg.ack_filter,
                    filtered_acks: b.stats.filtered_acks,
                    no_member_drops: b.stats.no_member_drops,
                    members: (0..b.members.len())
                        .map(|k| {
                            let awake = self.net.dirs[b.members[k].fwd as usize]
                                .awake
                                .map_or(0.0, |a| a.awake_s(end));
                            BondMemberSummary {
                                link: name(k),
                                data_packets: b.stats.sent[0][k],
                                reverse_packets: b.stats.sent[1][k],
                                awake_s: awake,
                                asleep_s: (end.secs_f64() - awake).max(0.0),
                            }
                        })
                        .collect(),
                    member_events: b
                        .stats
                        .events
                        .iter()
                        .map(|e| BondMemberEvent {
                            t_s: e.t.secs_f64(),
                            link: name(e.member),
                            up: e.up,
                        })
                        .collect(),
                }
            })
            .collect();
        RunResults {
            summary: Summary {
                format: crate::results::SUMMARY_FORMAT.to_string(),
                railpath_version: crate::results::VERSION.to_string(),
                scenario: r.source.clone(),
                seed: r.run.seed,
                sim_duration_s: end.secs_f64(),
                wall_s: 0.0,
                events: self.net.events(),
                flows,
                links,
                handovers: self.handovers.clone(),
                bonds,
            },
            bin_s: self.bin.secs_f64(),
            series,
        }
    }
}

/// Mean goodput over 1 s windows centred on each handover start: each window is averaged from
/// the per-bin goodput, weighting bins by their overlap with it (results.md
/// `handover_goodput_bps`).
fn handover_goodput(goodput: &[f64], bin_s: f64, starts: &[f64]) -> Option<f64> {
    if starts.is_empty() || goodput.is_empty() {
        return None;
    }
    let mut total = 0.0;
    for &t in starts {
        let (lo, hi) = (
            (t - 0.5).max(0.0),
            (t + 0.5).min(goodput.len() as f64 * bin_s),
        );
        let (mut acc, mut width) = (0.0, 0.0);
        let first = (lo / bin_s).floor() as usize;
        for (k, &g) in goodput.iter().enumerate().skip(first) {
            let (b0, b1) = (k as f64 * bin_s, (k + 1) as f64 * bin_s);
            if b0 >= hi {
                break;
            }
            let w = b1.min(hi) - b0.max(lo);
            if w > 0.0 {
                acc += g * w;
                width += w;
            }
        }
        if width > 0.0 {
            total += acc / width;
        }
    }
    Some(total / starts.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::handover_goodput;

    #[test]
    fn handover_window_weights_partial_bins() {
        // 100 ms bins of 1, 2, 3, ... Mbit/s; a handover at 1.05 s: window [0.55, 1.55) covers
        // half of bin 5 (6), bins 6..=14 (7..=15) and half of bin 15 (16):
        // (0.05*6 + 0.1*(7+...+15) + 0.05*16) / 1.0 = 0.3 + 9.9 + 0.8 = 11.0.
        let g: Vec<f64> = (1..=30).map(|x| x as f64).collect();
        let v = handover_goodput(&g, 0.1, &[1.05]).unwrap();
        assert!((v - 11.0).abs() < 1e-9, "{v}");
        // Near the start the window is cut at 0: [0, 0.5) = bins 0..=4 -> mean 3.
        assert!((handover_goodput(&g, 0.1, &[0.0]).unwrap() - 3.0).abs() < 1e-9);
        assert_eq!(handover_goodput(&g, 0.1, &[]), None);
    }
}
