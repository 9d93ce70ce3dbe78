//! The simulated world: builds links, routes and flows from a scenario, runs the event loop, and
//! gathers the results.

use crate::engine::Event;
use crate::flow::{Flow, TcpFlow};
use crate::mptcp::connection::{MptcpFlow, MptcpSetup};
use crate::net::link::{LinkDir, Trace};
use crate::net::{Endpoint, Hop, Net, Side};
use crate::results::{
    AvgMax, BondMemberEvent, BondMemberSummary, BondSummary, Handover, LinkSummary, RunResults,
    Series, Summary,
};
use crate::udp::UdpFlow;
use railpath_core::{Rng, Time};
use railpath_scenario::{FlowKind, PathTarget, Scenario};
use std::fmt;
use std::sync::Arc;

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

/// Run a validated scenario to completion.
pub fn run(s: &Scenario) -> Result<RunResults, SimError> {
    run_with_progress(s, &mut |_| {})
}

/// Run, calling `progress` with the simulated fraction done (0..=1) about every simulated second.
pub fn run_with_progress(
    s: &Scenario,
    progress: &mut dyn FnMut(f64),
) -> Result<RunResults, SimError> {
    run_tapped(s, progress, None)
}

/// [`run_with_progress`] with a packet capture at both ends of every link direction (see
/// [`crate::net::PacketTap`]); its `end` is called when the run ends. The results are those of
/// the same run without it.
pub fn run_with_tap(
    s: &Scenario,
    progress: &mut dyn FnMut(f64),
    tap: Box<dyn crate::net::PacketTap>,
) -> Result<RunResults, SimError> {
    run_tapped(s, progress, Some(tap))
}

/// The one body of both (so that the event loop has one caller and is inlined there, as it was
/// before taps).
fn run_tapped(
    s: &Scenario,
    progress: &mut dyn FnMut(f64),
    tap: Option<Box<dyn crate::net::PacketTap>>,
) -> Result<RunResults, SimError> {
    let mut w = World::build(s)?;
    if let Some(t) = tap {
        w.net.set_tap(t);
    }
    w.run(progress);
    if let Some(mut t) = w.net.tap.take() {
        t.end(w.end);
    }
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
    /// Radio model: delay added to both directions (weak signal).
    ExtraDelay(Time),
    /// Radio model: loss probability added in the data direction (weak signal).
    ExtraLoss(f64),
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
    handovers: Vec<Handover>,
    balancers: Vec<crate::cars::BalancerRt>,
}

/// What `World::build` assembles, one kind of part at a time: each kind of link or flow has its
/// own builder method (and, for vertical handoffs, its own module), so a new kind touches one
/// place.
struct Builder<'a> {
    s: &'a Scenario,
    end: Time,
    nbins: usize,
    net: Net,
    links: Vec<LinkRuntime>,
    flows: Vec<Flow>,
    timelines: Vec<railpath_radio::CarrierTimeline>,
    balancers: Vec<crate::cars::BalancerRt>,
}

impl Builder<'_> {
    /// One `[[link]]`: both directions, and the steps that change it over the run (its
    /// schedule, outages, carrier timeline, and `attach`: a vertical handoff's releases).
    fn link(
        &mut self,
        i: usize,
        l: &railpath_scenario::Link,
        attach: Vec<(Time, StepAction)>,
    ) -> Result<(), SimError> {
        let s = self.s;
        let limit = l.buffer();
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
        let wifi = l.wifi.as_ref().map(crate::net::wifi::WifiMac::new);
        if let Some(mac) = wifi {
            fwd.wifi = Some(mac);
            fwd.rate_bps = mac.saturation_bps(1500).round() as u64;
        }
        if let Some(t) = &l.trace_ms {
            fwd.trace = Some(Trace::new(Arc::from(t.as_slice())));
        } else if l.trace.is_some() {
            return Err(SimError::Internal(format!(
                "link {:?}: trace {:?} was not loaded",
                l.id, l.trace
            )));
        }
        let carrier = l.carrier.as_ref().map(|c| {
            let ci = s.carriers.iter().position(|x| x.id == *c);
            (
                ci.map(|i| &s.carriers[i]),
                self.timelines.iter().find(|t| t.carrier == *c),
            )
        });
        if let Some((Some(cc), _)) = carrier {
            // Drop if either the link or its carrier says so (as the emulator does).
            if cc.outage_mode == Some(railpath_radio::OutageMode::Drop) {
                fwd.outage_mode = railpath_scenario::OutageMode::Drop;
            }
        }
        let rev_rate = match (l.reverse_rate_mbps, l.rate_mbps, carrier) {
            (Some(r), _, _) => mbps(r),
            (None, Some(r), _) => mbps(r),
            // A carrier's uplink: its peak rate unless reverse_rate_mbps says otherwise.
            (None, None, Some((Some(cc), _))) => cc.rate_mbps.map(mbps).unwrap_or(100_000_000),
            (None, None, _) => 100_000_000,
        };
        let rev_limit = l.reverse_buffer();
        let mut rev = LinkDir::new(
            i as u32,
            rev_rate,
            Time::from_ms_f64(l.reverse_delay_ms.unwrap_or(l.delay_ms)),
            l.reverse_loss,
            rev_limit,
            Rng::stream(s.run.seed, &format!("link:{}:rev", l.id)),
        );
        rev.outage_mode = fwd.outage_mode;
        if let Some(mac) = wifi {
            rev.wifi = Some(mac);
            rev.rate_bps = mac.saturation_bps(1500).round() as u64;
        }
        if let Some(t) = &l.reverse_trace_ms {
            rev.trace = Some(Trace::new(Arc::from(t.as_slice())));
        }
        self.net.dirs.push(fwd);
        self.net.dirs.push(rev);
        let mut steps: Vec<(Time, StepAction)> = Vec::new();
        for st in &l.schedule_steps(s.run.seed, s.run.duration_s) {
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
        for o in &l.outage_list(s.run.duration_s) {
            let t = Time::from_secs_f64(o.start_s);
            let until = t + Time::from_ms_f64(o.duration_ms);
            steps.push((t, StepAction::OutageStart(until)));
            steps.push((until, StepAction::OutageEnd));
        }
        if let Some((_, tl)) = carrier {
            let tl = tl.ok_or_else(|| {
                SimError::Internal(format!(
                    "link {:?}: carrier {:?} has no timeline",
                    l.id, l.carrier
                ))
            })?;
            let mut open: Option<usize> = None;
            for st in &tl.steps {
                if let Some(r) = st.rate_bps {
                    steps.push((st.t, StepAction::Rate(r.max(1))));
                }
                if let Some(d) = st.extra_delay {
                    steps.push((st.t, StepAction::ExtraDelay(d)));
                }
                if let Some(p) = st.extra_loss {
                    steps.push((st.t, StepAction::ExtraLoss(p)));
                }
                match st.outage {
                    // An outage already open continues (a timeline whose next outage
                    // starts when the last ends merges the two): starting it again would
                    // leave one start without an end, and the link down for good.
                    Some(true) if open.is_some() => {}
                    Some(true) => {
                        open = Some(steps.len());
                        steps.push((st.t, StepAction::OutageStart(self.end)));
                    }
                    Some(false) => {
                        // The start learns its end so held packets are re-armed then.
                        if let Some(k) = open.take() {
                            steps[k].1 = StepAction::OutageStart(st.t);
                        }
                        steps.push((st.t, StepAction::OutageEnd));
                    }
                    None => {}
                }
            }
        }
        if !attach.is_empty() {
            // A link a vertical handoff uses: released means what it holds is lost.
            self.net.dirs[2 * i].outage_mode = railpath_scenario::OutageMode::Drop;
            self.net.dirs[2 * i + 1].outage_mode = railpath_scenario::OutageMode::Drop;
            steps.extend(attach);
        }
        // Stable: equal times keep insertion order (schedule before outages).
        steps.sort_by_key(|(t, _)| *t);
        // Steps at time zero (a carrier's initial rate) apply before anything is sent.
        let mut first = 0;
        while first < steps.len() && steps[first].0 == Time::ZERO {
            apply_step(
                &mut self.net,
                (2 * i) as u32,
                (2 * i + 1) as u32,
                steps[first].1,
            );
            first += 1;
        }
        if l.carrier.is_some()
            && self.net.dirs[2 * i].rate_bps == 0
            && self.net.dirs[2 * i].trace.is_none()
        {
            return Err(SimError::Input(railpath_scenario::ScenarioError::new(
                &s.source,
                format!("link[{i}].carrier"),
                format!("carrier {:?} gives no rate at time 0", l.carrier),
            )));
        }
        if let Some(&(t, _)) = steps.get(first) {
            self.net.sched.at(t, Event::LinkStep { link: i as u32 });
        }
        self.links.push(LinkRuntime {
            id: l.id.clone(),
            fwd: (2 * i) as u32,
            rev: (2 * i + 1) as u32,
            steps,
            next_step: first,
            queue_samples: Vec::with_capacity(self.nbins),
        });
        Ok(())
    }

    /// Routes of subflow `sub` of flow `fi` over a link or a bond: (data, ACK).
    fn routes(&mut self, fi: usize, sub: u16, t: PathTarget) -> (u32, u32) {
        self.routes_via(fi, sub, t, None)
    }

    /// The hops of a path and then, if given, of an in-car link: (data, ACK) before the sink.
    fn hops(&self, t: PathTarget, access: Option<usize>) -> (Vec<Hop>, Vec<Hop>) {
        let (fwd, rev) = match t {
            PathTarget::Link(li) => (Hop::Dir(self.links[li].fwd), Hop::Dir(self.links[li].rev)),
            PathTarget::Bond(b) => (Hop::Bond(2 * b as u32), Hop::Bond(2 * b as u32 + 1)),
        };
        match access {
            Some(a) => (
                vec![fwd, Hop::Dir(self.links[a].fwd)],
                vec![Hop::Dir(self.links[a].rev), rev],
            ),
            None => (vec![fwd], vec![rev]),
        }
    }

    /// [`Builder::routes`] continued over an in-car link `access` (data: the path then the
    /// in-car link; ACKs the other way).
    fn routes_via(
        &mut self,
        fi: usize,
        sub: u16,
        t: PathTarget,
        access: Option<usize>,
    ) -> (u32, u32) {
        let (mut fwd, mut rev) = self.hops(t, access);
        let flow = fi as u32;
        fwd.push(Hop::Sink(Endpoint {
            flow,
            sub,
            side: Side::Receiver,
        }));
        rev.push(Hop::Sink(Endpoint {
            flow,
            sub,
            side: Side::Sender,
        }));
        (self.net.add_route(fwd), self.net.add_route(rev))
    }

    fn access_of(&self, f: &railpath_scenario::Flow) -> Result<Option<usize>, SimError> {
        f.access
            .as_ref()
            .map(|a| {
                self.s.link_index(a).ok_or_else(|| {
                    SimError::Internal(format!("flow {:?}: unknown access link {a:?}", f.id))
                })
            })
            .transpose()
    }

    /// A `[[balancer]]`: its links, and a tracking check at each time a link has been down
    /// for the detection delay.
    fn balancer(&mut self, bi: usize, b: &railpath_scenario::Balancer) -> Result<(), SimError> {
        let detect = Time::from_ms_f64(b.detect_ms());
        let mut links = Vec::new();
        let mut rates = Vec::new();
        let mut down = Vec::new();
        for id in &b.links {
            let li = self.s.link_index(id).ok_or_else(|| {
                SimError::Internal(format!("balancer {:?}: unknown link {id:?}", b.id))
            })?;
            links.push(li);
            rates.push(self.s.links[li].rate_mbps.unwrap_or(0.0));
            let mut spans = Vec::new();
            for (t, a) in &self.links[li].steps {
                if let StepAction::OutageStart(until) = a {
                    if *until > *t + detect {
                        spans.push((*t + detect, *until));
                        if *t + detect < self.end {
                            self.net.sched.at(
                                *t + detect,
                                Event::BalancerCheck {
                                    balancer: bi as u32,
                                },
                            );
                        }
                    }
                }
            }
            down.push(spans);
        }
        self.balancers.push(crate::cars::BalancerRt {
            id: b.id.clone(),
            policy: b.policy,
            failover: b.failover,
            links,
            rates,
            down,
            order: 0,
            cars: Vec::new(),
        });
        Ok(())
    }

    /// A car's tcp flow through balancer `bi`: a connection whose routes the balancer sets when
    /// it starts (and again at a failover).
    fn balanced_flow(
        &mut self,
        fi: usize,
        f: &railpath_scenario::Flow,
        bi: usize,
    ) -> Result<Flow, SimError> {
        let tcp = self.s.tcp_config(fi);
        let access = self.access_of(f)?;
        let flow = TcpFlow::new(fi as u32, f, &tcp, 0, 0, self.s.run.seed, self.nbins)
            .map_err(SimError::Internal)?;
        let bal = &self.balancers[bi];
        // Cars are numbered in flow order, as the testbed numbers its client namespaces.
        let car = self.s.flows[..fi]
            .iter()
            .filter(|g| {
                g.access.is_some() || g.paths.iter().any(|p| self.s.balancer_index(p).is_some())
            })
            .count();
        let links = bal.links.clone();
        let failover = bal.failover;
        let id = bal.id.clone();
        let hops = links
            .iter()
            .map(|&li| self.hops(PathTarget::Link(li), access))
            .collect();
        let names = links
            .iter()
            .map(|&li| self.s.links[li].id.clone())
            .collect();
        self.balancers[bi].cars.push(fi);
        let mut b = crate::cars::BalancedFlow::new(
            Box::new(flow),
            bi,
            car,
            hops,
            f.clone(),
            tcp,
            self.s.run.seed,
            names,
            failover,
        );
        b.balancer_id = id;
        Ok(Flow::Balanced(Box::new(b)))
    }

    /// A car behind the router's MPTCP proxy: the server's MPTCP connection to the router (or
    /// plain TCP over the first path when the server has no MPTCP), the relay, and the
    /// passenger's TCP over the in-car link.
    fn relay_flow(&mut self, fi: usize, f: &railpath_scenario::Flow) -> Result<Flow, SimError> {
        let opts = f.proxy.clone().unwrap_or_default();
        let access = self.access_of(f)?.ok_or_else(|| {
            SimError::Internal(format!("flow {:?}: a proxied flow without access", f.id))
        })?;
        let up = if opts.server_mptcp() {
            let Flow::Mptcp(m) = self.mptcp_flow(fi, f)? else {
                unreachable!("mptcp_flow builds an mptcp flow")
            };
            crate::cars::Up::Mptcp(m)
        } else {
            // The fallback's plain TCP runs the host's congestion control: the subflows' own
            // when uncoupled, else Linux's default, CUBIC.
            let mut single = f.clone();
            single.cc =
                f.cc.strip_prefix("uncoupled-")
                    .unwrap_or("cubic")
                    .to_string();
            single.paths.truncate(1);
            let Flow::Tcp(t) = self.tcp_flow(fi, &single)? else {
                unreachable!("tcp_flow builds a tcp flow")
            };
            crate::cars::Up::Tcp(t)
        };
        let tcp = self.s.tcp_config(fi);
        let mut passenger = f.clone();
        passenger.cc = opts.access_cc().to_string();
        passenger.bytes = 0;
        let (d, a) = self.routes_via(fi, crate::cars::ACCESS_SUB, PathTarget::Link(access), None);
        let down = TcpFlow::new(
            fi as u32,
            &passenger,
            &tcp,
            d,
            a,
            self.s.run.seed,
            self.nbins,
        )
        .map_err(SimError::Internal)?;
        Ok(Flow::Relay(Box::new(crate::cars::RelayFlow::new(
            up,
            Box::new(down),
            self.s.links[access].id.clone(),
            opts.buffer_bytes(),
            opts.verify,
            self.s.run.seed,
        ))))
    }

    fn link_of(&self, f: &railpath_scenario::Flow, p: &str) -> Result<PathTarget, SimError> {
        self.s
            .path_target(p)
            .ok_or_else(|| SimError::Internal(format!("flow {:?}: unknown link {:?}", f.id, p)))
    }

    /// One `[[bond]]` over links already built: its members, their power clocks, and a
    /// monitoring check at the first tick after each change of a member's carrier.
    fn bond(&mut self, bi: usize, b: &railpath_scenario::Bond) -> Result<(), SimError> {
        use crate::net::bond::{next_check, Bond, Member};
        let mut members = Vec::with_capacity(b.members.len());
        let tau = Time::from_ms_f64(b.sleep_after_ms());
        let interval = Time::from_ms_f64(b.miimon_ms());
        let mut checks = Vec::new();
        for m in &b.members {
            let li = self.s.link_index(m).ok_or_else(|| {
                SimError::Internal(format!("bond {:?}: unknown member {m:?}", b.id))
            })?;
            let (fwd, rev) = (self.links[li].fwd, self.links[li].rev);
            self.net.dirs[fwd as usize].awake = Some(crate::power::AwakeClock::new(tau));
            members.push(Member {
                link: li as u32,
                fwd,
                rev,
            });
            for (t, a) in &self.links[li].steps {
                if matches!(a, StepAction::OutageStart(_) | StepAction::OutageEnd) {
                    checks.extend(next_check(*t, interval).filter(|c| *c < self.end));
                }
            }
        }
        checks.sort();
        checks.dedup();
        for t in checks {
            self.net.sched.at(t, Event::BondCheck { bond: bi as u32 });
        }
        let mut bond = Bond::new(
            &b.id,
            members,
            b.weights(),
            b.split,
            b.ack_filter,
            Rng::stream(self.s.run.seed, &format!("bond:{}", b.id)),
        );
        // Members already out at the start (an outage from time 0) are seen at enslaving.
        let dirs = &self.net.dirs;
        bond.monitor(Time::ZERO, |m| dirs[m.fwd as usize].down == 0);
        bond.stats.events.clear();
        self.net.bonds.push(bond);
        Ok(())
    }

    /// A tcp flow over one link.
    fn tcp_flow(&mut self, fi: usize, f: &railpath_scenario::Flow) -> Result<Flow, SimError> {
        let tcp = self.s.tcp_config(fi);
        let t = self.link_of(f, &f.paths[0])?;
        let access = self.access_of(f)?;
        let (data_route, ack_route) = self.routes_via(fi, 0, t, access);
        let flow = TcpFlow::new(
            fi as u32,
            f,
            &tcp,
            data_route,
            ack_route,
            self.s.run.seed,
            self.nbins,
        )
        .map_err(SimError::Internal)?;
        Ok(Flow::Tcp(Box::new(flow)))
    }

    /// A tcp flow whose path moves between links (vertical handoffs), with TCP-FS if switched
    /// on: a route per path, and a `FlowControl` event per handoff step.
    fn handoff_flow(&mut self, fi: usize, f: &railpath_scenario::Flow) -> Result<Flow, SimError> {
        let Flow::Tcp(mut flow) = self.tcp_flow(fi, f)? else {
            unreachable!("tcp_flow builds a tcp flow")
        };
        let mut routes = Vec::with_capacity(f.paths.len());
        routes.push((flow.sender.route, flow.ack_route));
        for p in &f.paths[1..] {
            let t = self.link_of(f, p)?;
            routes.push(self.routes(fi, 0, t));
        }
        let tcp = self.s.tcp_config(fi);
        let h = crate::handoff::flow_handoffs(f, &tcp, routes, self.nbins);
        for (k, (t, _)) in h.steps.iter().enumerate() {
            self.net.sched.at(
                *t,
                Event::FlowControl {
                    flow: fi as u32,
                    idx: k as u32,
                },
            );
        }
        flow.handoffs = Some(Box::new(h));
        Ok(Flow::Tcp(flow))
    }

    /// A udp source over its one link's data direction, to a sink at the link's far end; it
    /// sends from `start_s` (its `FlowStart`) until `stop_s` or the end of the run.
    fn udp_flow(&mut self, fi: usize, f: &railpath_scenario::Flow) -> Result<Flow, SimError> {
        let cfg = f.udp_config().ok_or_else(|| {
            SimError::Internal(format!("flow {:?}: a udp flow without udp.mean_mbps", f.id))
        })?;
        let p = f
            .paths
            .first()
            .ok_or_else(|| SimError::Internal(format!("flow {:?}: no link", f.id)))?;
        let t = self.link_of(f, p)?;
        let (hop, dirs) = match t {
            PathTarget::Link(li) => (Hop::Dir(self.links[li].fwd), vec![self.links[li].fwd]),
            PathTarget::Bond(b) => (
                Hop::Bond(2 * b as u32),
                self.net.bonds[b].members.iter().map(|m| m.fwd).collect(),
            ),
        };
        let sink = Hop::Sink(Endpoint {
            flow: fi as u32,
            sub: 0,
            side: Side::Receiver,
        });
        let route = self.net.add_route(vec![hop, sink]);
        let stop = f.stop_s.map_or(self.end, Time::from_secs_f64).min(self.end);
        Ok(Flow::Udp(Box::new(UdpFlow::new(
            fi as u32,
            f,
            cfg,
            route,
            dirs,
            stop,
            self.s.run.seed,
            self.nbins,
        ))))
    }

    /// An MPTCP connection: a subflow per path, PHA / PHA-D if switched on.
    fn mptcp_flow(&mut self, fi: usize, f: &railpath_scenario::Flow) -> Result<Flow, SimError> {
        let tcp = self.s.tcp_config(fi);
        let mut paths = Vec::with_capacity(f.paths.len());
        for (j, p) in f.paths.iter().enumerate() {
            let t = self.link_of(f, p)?;
            let (data_route, ack_route) = self.routes(fi, j as u16, t);
            // Subflows over a repeated link are told apart as "a#1", "a#2", ...
            let repeats = f.paths.iter().filter(|q| *q == p).count();
            let name = if repeats > 1 {
                let k = f.paths[..j].iter().filter(|q| *q == p).count();
                format!("{p}#{}", k + 1)
            } else {
                p.clone()
            };
            paths.push((name, data_route, ack_route));
        }
        let plan = crate::mechanisms::pha::plan(self.s, f, self.end).map_err(SimError::Internal)?;
        let flow = MptcpFlow::new(MptcpSetup {
            idx: fi as u32,
            flow: f,
            tcp: &tcp,
            paths,
            seed: self.s.run.seed,
            nbins: self.nbins,
            plan,
        })
        .map_err(SimError::Internal)?;
        let controls = flow.prio_script.iter().map(|pc| pc.t);
        for (k, t) in controls.chain(flow.wakes.iter().copied()).enumerate() {
            self.net.sched.at(
                t,
                Event::FlowControl {
                    flow: fi as u32,
                    idx: k as u32,
                },
            );
        }
        Ok(Flow::Mptcp(Box::new(flow)))
    }
}

impl World {
    fn build(s: &Scenario) -> Result<World, SimError> {
        let end = Time::from_secs_f64(s.run.duration_s);
        let bin = Time::from_ms_f64(s.run.bin_ms);
        if bin == Time::ZERO {
            return Err(SimError::Internal(
                "run.bin_ms must be at least 1 ns".into(),
            ));
        }
        let nbins = end.ns().div_ceil(bin.ns()) as usize;
        // The radio model: one timeline per carrier, for the links that follow a carrier.
        let timelines = match (&s.train, s.carriers.is_empty()) {
            (Some(train), false) => {
                railpath_radio::carrier_timelines(train, &s.carriers, s.run.seed, end)
                    .map_err(|e| SimError::Input(railpath_scenario::radio_error(&s.source, e)))?
            }
            _ => Vec::new(),
        };
        let mut handovers: Vec<Handover> = timelines
            .iter()
            .flat_map(|t| t.handovers.iter())
            .cloned()
            .collect();
        handovers.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
        let mut b = Builder {
            s,
            end,
            nbins,
            net: Net::new(),
            links: Vec::with_capacity(s.links.len()),
            flows: Vec::with_capacity(s.flows.len()),
            timelines,
            balancers: Vec::with_capacity(s.balancers.len()),
        };
        // Links a vertical handoff attaches and releases.
        let mut attach = crate::handoff::link_steps(s, end);
        for (i, l) in s.links.iter().enumerate() {
            b.link(i, l, std::mem::take(&mut attach[i]))?;
        }
        for (i, bond) in s.bonds.iter().enumerate() {
            b.bond(i, bond)?;
        }
        for (i, bal) in s.balancers.iter().enumerate() {
            b.balancer(i, bal)?;
        }
        for (fi, f) in s.flows.iter().enumerate() {
            let balancer = f.paths.first().and_then(|p| s.balancer_index(p));
            let flow = match f.kind {
                FlowKind::Tcp if balancer.is_some() => {
                    b.balanced_flow(fi, f, balancer.expect("checked"))?
                }
                FlowKind::Tcp if !f.handoffs.is_empty() => b.handoff_flow(fi, f)?,
                FlowKind::Tcp => b.tcp_flow(fi, f)?,
                FlowKind::Mptcp if f.access.is_some() => b.relay_flow(fi, f)?,
                FlowKind::Mptcp => b.mptcp_flow(fi, f)?,
                FlowKind::Udp => b.udp_flow(fi, f)?,
            };
            b.flows.push(flow);
            b.net.sched.at(
                Time::from_secs_f64(f.start_s),
                Event::FlowStart { flow: fi as u32 },
            );
        }
        let mut net = b.net;
        if nbins > 0 {
            net.sched.at(bin.min(end), Event::Sample);
        }
        Ok(World {
            net,
            flows: b.flows,
            links: b.links,
            end,
            bin,
            nbins,
            bins_done: 0,
            handovers,
            balancers: b.balancers,
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
                        let flows = &mut self.flows;
                        self.net.arrivals(dir, |net, e, p| {
                            flows[e.flow as usize].on_packet(e.sub, e.side, p, net)
                        });
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
                Event::FlowControl { flow, idx } => {
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
                    self.net.sched.at(
                        t,
                        Event::FlowControl {
                            flow: fi as u32,
                            idx: crate::flow::RECONNECTED,
                        },
                    );
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
            apply_step(&mut self.net, fwd, rev, action);
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
        for (fi, f) in self.flows.iter().enumerate() {
            let (mut summary, mut fs) = f.summarize(end, &self.net);
            // Handovers of the carriers this flow's links follow.
            let carriers: Vec<&str> = s.flows[fi]
                .paths
                .iter()
                .flat_map(|p| s.path_links(p))
                .filter_map(|li| s.links[li].carrier.as_deref())
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
            if summary.car.is_none() && s.flows[fi].access.is_some() {
                // A car's plain tcp flow over a link (no balancer, no proxy).
                summary.car = Some(crate::results::CarStats {
                    access: s.flows[fi].access.clone(),
                    ..Default::default()
                });
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
        }
        let bonds = self
            .net
            .bonds
            .iter()
            .zip(&s.bonds)
            .map(|(b, cfg)| {
                let name = |k: usize| s.links[b.members[k].link as usize].id.clone();
                BondSummary {
                    id: b.id.clone(),
                    split: cfg.split.as_str().to_string(),
                    weights: cfg.weights(),
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
                railpath_version: crate::VERSION.to_string(),
                scenario: s.source.clone(),
                seed: s.run.seed,
                sim_duration_s: end.secs_f64(),
                wall_s: 0.0,
                events: self.net.sched.processed(),
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

/// Apply one link step to the link's two directions.
fn apply_step(net: &mut Net, fwd: u32, rev: u32, action: StepAction) {
    match action {
        StepAction::Rate(r) => net.dirs[fwd as usize].rate_bps = r,
        StepAction::Delay(d) => net.dirs[fwd as usize].base_delay = d,
        StepAction::Loss(p) => net.dirs[fwd as usize].loss = p,
        StepAction::ExtraDelay(d) => {
            net.dirs[fwd as usize].extra_delay = d;
            net.dirs[rev as usize].extra_delay = d;
        }
        StepAction::ExtraLoss(p) => net.dirs[fwd as usize].extra_loss = p,
        StepAction::OutageStart(until) => {
            net.outage_start(fwd, until);
            net.outage_start(rev, until);
        }
        StepAction::OutageEnd => {
            net.outage_end(fwd);
            net.outage_end(rev);
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

fn mbps(r: f64) -> u64 {
    (r * 1e6).round() as u64
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
