//! The simulated world: builds links, routes and flows from a scenario, runs the event loop, and
//! gathers the results.

use crate::engine::Event;
use crate::flow::{Flow, TcpFlow};
use crate::net::link::{Limit, LinkDir, Trace};
use crate::net::{Endpoint, Hop, Net, Side};
use crate::results::{AvgMax, LinkSummary, RunResults, Series, Summary};
use railpath_core::{Rng, Time};
use railpath_scenario::{FlowKind, Scenario};
use std::fmt;
use std::sync::Arc;

/// An error that stops a run (the scenario was valid but cannot be simulated as given).
#[derive(Debug, Clone, PartialEq)]
pub struct SimError(pub String);

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for SimError {}

/// Run a validated scenario to completion.
pub fn run(s: &Scenario) -> Result<RunResults, SimError> {
    run_with_progress(s, &mut |_| {})
}

/// Run, calling `progress` with the simulated fraction done (0..=1) about every simulated second.
pub fn run_with_progress(
    s: &Scenario,
    progress: &mut dyn FnMut(f64),
) -> Result<RunResults, SimError> {
    let mut w = World::build(s)?;
    w.run(progress);
    Ok(w.finish(s))
}

/// A change of a link's conditions at a point in time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StepAction {
    /// Data-direction rate, bit/s.
    Rate(u64),
    /// Data-direction base one-way delay.
    Delay(Time),
    /// Data-direction random loss probability.
    Loss(f64),
    /// Both directions stop delivering until the given time.
    OutageStart(Time),
    OutageEnd,
}

struct LinkRuntime {
    id: String,
    fwd: u32,
    rev: u32,
    steps: Vec<(Time, StepAction)>,
    next_step: usize,
    queue_samples: Vec<f64>,
}

pub(crate) struct World {
    pub(crate) net: Net,
    flows: Vec<Flow>,
    links: Vec<LinkRuntime>,
    end: Time,
    bin: Time,
    nbins: usize,
    bins_done: usize,
}

impl World {
    fn build(s: &Scenario) -> Result<World, SimError> {
        let end = Time::from_secs_f64(s.run.duration_s);
        let bin = Time::from_ms_f64(s.run.bin_ms);
        if bin == Time::ZERO {
            return Err(SimError("run.bin_ms must be at least 1 ns".into()));
        }
        let nbins = end.ns().div_ceil(bin.ns()) as usize;
        let mut net = Net::new();
        let mut links = Vec::with_capacity(s.links.len());
        for (i, l) in s.links.iter().enumerate() {
            let limit = match (l.buffer_packets, l.buffer_bytes) {
                (_, Some(b)) => Limit::Bytes(b),
                (Some(p), None) => Limit::Packets(p),
                (None, None) => Limit::Packets(100),
            };
            let rate_bps = l.rate_mbps.map(mbps).unwrap_or(0);
            let mut fwd = LinkDir::new(
                i as u32,
                rate_bps,
                Time::from_ms_f64(l.delay_ms),
                l.loss,
                limit,
                Rng::stream(s.run.seed, &format!("link:{}:fwd", l.id)),
            );
            fwd.outage_mode = l.outage_mode;
            if let Some(t) = &l.trace_ms {
                fwd.trace = Some(Trace::new(Arc::from(t.as_slice())));
            } else if l.trace.is_some() {
                return Err(SimError(format!(
                    "link {:?}: trace {:?} was not loaded",
                    l.id, l.trace
                )));
            }
            let rev_rate = match (l.reverse_rate_mbps, l.rate_mbps) {
                (Some(r), _) => mbps(r),
                (None, Some(r)) => mbps(r),
                (None, None) => 100_000_000,
            };
            let rev_limit = l
                .reverse_buffer_packets
                .map(Limit::Packets)
                .unwrap_or(limit);
            let mut rev = LinkDir::new(
                i as u32,
                rev_rate,
                Time::from_ms_f64(l.reverse_delay_ms.unwrap_or(l.delay_ms)),
                l.reverse_loss,
                rev_limit,
                Rng::stream(s.run.seed, &format!("link:{}:rev", l.id)),
            );
            rev.outage_mode = l.outage_mode;
            if let Some(t) = &l.reverse_trace_ms {
                rev.trace = Some(Trace::new(Arc::from(t.as_slice())));
            }
            net.dirs.push(fwd);
            net.dirs.push(rev);
            let mut steps: Vec<(Time, StepAction)> = Vec::new();
            for st in &l.schedule {
                let t = Time::from_secs_f64(st.t_s);
                if let Some(r) = st.rate_mbps {
                    steps.push((t, StepAction::Rate(mbps(r))));
                }
                if let Some(d) = st.delay_ms {
                    steps.push((t, StepAction::Delay(Time::from_ms_f64(d))));
                }
                if let Some(p) = st.loss {
                    steps.push((t, StepAction::Loss(p)));
                }
            }
            for o in &l.outages {
                let t = Time::from_secs_f64(o.start_s);
                let until = t + Time::from_ms_f64(o.duration_ms);
                steps.push((t, StepAction::OutageStart(until)));
                steps.push((until, StepAction::OutageEnd));
            }
            // Stable: equal times keep file order (schedule before outages).
            steps.sort_by_key(|(t, _)| *t);
            if let Some(&(t, _)) = steps.first() {
                net.sched.at(t, Event::LinkStep { link: i as u32 });
            }
            links.push(LinkRuntime {
                id: l.id.clone(),
                fwd: (2 * i) as u32,
                rev: (2 * i + 1) as u32,
                steps,
                next_step: 0,
                queue_samples: Vec::with_capacity(nbins),
            });
        }
        let mut flows = Vec::with_capacity(s.flows.len());
        for (fi, f) in s.flows.iter().enumerate() {
            let tcp = s.tcp_config(fi);
            match f.kind {
                FlowKind::Tcp => {
                    let li = s.link_index(&f.paths[0]).ok_or_else(|| {
                        SimError(format!("flow {:?}: unknown link {:?}", f.id, f.paths[0]))
                    })?;
                    let data_route = net.add_route(vec![
                        Hop::Dir(links[li].fwd),
                        Hop::Sink(Endpoint {
                            flow: fi as u32,
                            sub: 0,
                            side: Side::Receiver,
                        }),
                    ]);
                    let ack_route = net.add_route(vec![
                        Hop::Dir(links[li].rev),
                        Hop::Sink(Endpoint {
                            flow: fi as u32,
                            sub: 0,
                            side: Side::Sender,
                        }),
                    ]);
                    let flow =
                        TcpFlow::new(fi as u32, f, &tcp, data_route, ack_route, s.run.seed, nbins)
                            .map_err(SimError)?;
                    flows.push(Flow::Tcp(Box::new(flow)));
                }
                FlowKind::Mptcp => {
                    return Err(SimError(format!(
                        "flow {:?}: mptcp is not available in this version",
                        f.id
                    )));
                }
            }
            net.sched.at(
                Time::from_secs_f64(f.start_s),
                Event::FlowStart { flow: fi as u32 },
            );
        }
        if nbins > 0 {
            net.sched.at(bin.min(end), Event::Sample);
        }
        Ok(World {
            net,
            flows,
            links,
            end,
            bin,
            nbins,
            bins_done: 0,
        })
    }

    fn run(&mut self, progress: &mut dyn FnMut(f64)) {
        let end = self.end;
        let mut next_progress = Time::from_secs(1);
        while let Some(ev) = self.net.sched.pop(end) {
            match ev {
                Event::LinkService { dir } => self.net.service(dir),
                Event::LinkArrival { dir } => {
                    if self.net.take_arrival_event(dir) {
                        while let Some(p) = self.net.arrival(dir) {
                            if let Some((e, p)) = self.net.forward(p) {
                                self.deliver(e, p);
                            }
                        }
                    }
                }
                Event::Timer { flow, sub, side } => {
                    let f = &mut self.flows[flow as usize];
                    f.on_timer(sub, side, &mut self.net);
                }
                Event::FlowStart { flow } => self.flows[flow as usize].start(&mut self.net),
                Event::FlowControl { flow, idx } => {
                    self.flows[flow as usize].control(idx, &mut self.net)
                }
                Event::LinkStep { link } => self.link_step(link as usize),
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
        progress(1.0);
    }

    #[inline]
    fn deliver(&mut self, e: Endpoint, p: crate::net::packet::Packet) {
        self.flows[e.flow as usize].on_packet(e.sub, e.side, &p, &mut self.net);
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
            match action {
                StepAction::Rate(r) => self.net.dirs[fwd as usize].rate_bps = r,
                StepAction::Delay(d) => self.net.dirs[fwd as usize].base_delay = d,
                StepAction::Loss(p) => self.net.dirs[fwd as usize].loss = p,
                StepAction::OutageStart(until) => {
                    self.net.outage_start(fwd, until);
                    self.net.outage_start(rev, until);
                }
                StepAction::OutageEnd => {
                    self.net.outage_end(fwd);
                    self.net.outage_end(rev);
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
            l.queue_samples
                .push(self.net.dirs[l.fwd as usize].queued_bytes as f64);
        }
        self.bins_done += 1;
        if self.bins_done < self.nbins {
            let next = (now + self.bin).min(self.end);
            self.net.sched.at(next, Event::Sample);
        }
    }

    fn finish(mut self, s: &Scenario) -> RunResults {
        // A final partial bin (when the duration is not a multiple of the bin width) was
        // scheduled at the end time; nothing to add here.
        while self.bins_done < self.nbins {
            self.sample();
        }
        let end = self.end;
        let mut series = Vec::new();
        let mut flows = Vec::new();
        for f in &self.flows {
            let (summary, mut fs) = f.summarize(end);
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
            });
            series.push(Series {
                flow: String::new(),
                subflow: l.id.clone(),
                metric: "queue_bytes",
                values: l.queue_samples.clone(),
            });
        }
        RunResults {
            summary: Summary {
                railpath_version: crate::VERSION.to_string(),
                scenario: s.source.clone(),
                seed: s.run.seed,
                sim_duration_s: end.secs_f64(),
                wall_s: 0.0,
                events: self.net.sched.processed(),
                flows,
                links,
                handovers: Vec::new(),
            },
            bin_s: self.bin.secs_f64(),
            series,
        }
    }
}

fn mbps(r: f64) -> u64 {
    (r * 1e6).round() as u64
}
