//! Building the world from a resolved scenario: its links (both directions and the steps that
//! change them), bonds, balancers and flows, one kind of part at a time. Every reference was
//! resolved by `railpath_scenario` (`Resolved`); here nothing is looked up by name, and a flow is
//! built by matching on its kind and route (a new kind is a compile error here until it is
//! handled).

use crate::engine::Event;
use crate::flows::cars::{BalancedFlow, BalancerRt, CarPlace, RelayFlow, Up, ACCESS_SUB};
use crate::flows::handoff::{flow_handoffs, link_steps};
use crate::flows::tcp::{TcpFlow, TcpParams};
use crate::flows::udp::UdpFlow;
use crate::flows::Flow;
use crate::mptcp::connection::{MptcpFlow, MptcpSetup};
use crate::net::link::{LinkDir, Trace};
use crate::net::{Endpoint, Hop, Net, Side, StepAction};
use crate::results::Handover;
use crate::world::{LinkRuntime, LossSamples, SimError, World};
use railpath_core::{Rng, Time};
use railpath_scenario::{
    BalancerSpec, BondSpec, FlowSpec, HandoffPlan, LinkSpec, MptcpSpec, PathTarget, Resolved,
    TcpCc, TcpMechanism, TcpRoute, TcpSpec, Transport, UdpSpec,
};
use std::sync::Arc;

/// Build the world of a resolved scenario, every flow's start scheduled.
pub(crate) fn world(r: &Resolved) -> Result<World, SimError> {
    let end = Time::from_secs_f64(r.run.duration_s);
    let bin = Time::from_ms_f64(r.run.bin_ms);
    if bin == Time::ZERO {
        return Err(SimError::Internal(
            "run.bin_ms must be at least 1 ns".into(),
        ));
    }
    let nbins = end.ns().div_ceil(bin.ns()) as usize;
    // The radio model: one timeline per carrier (in the carriers' order), for the links that
    // follow a carrier; computed once per process for runs that share the train, the carriers,
    // the seed and the duration (`railpath_radio::memo`).
    let timelines = match &r.radio {
        Some(radio) => {
            railpath_radio::carrier_timelines_shared(&radio.train, &radio.carriers, r.run.seed, end)
                .map_err(|e| SimError::Input(railpath_scenario::radio_error(&r.source, e)))?
        }
        None => Arc::new(Vec::new()),
    };
    let mut handovers: Vec<Handover> = timelines
        .iter()
        .flat_map(|t| t.handovers.iter())
        .cloned()
        .collect();
    handovers.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
    let mut b = Builder {
        r,
        end,
        nbins,
        net: Net::new(),
        links: Vec::with_capacity(r.links.len()),
        flows: Vec::with_capacity(r.flows.len()),
        timelines,
        balancers: Vec::with_capacity(r.balancers.len()),
    };
    // Links a vertical handoff attaches and releases.
    let mut attach = link_steps(r, end);
    for (i, l) in r.links.iter().enumerate() {
        b.link(i, l, std::mem::take(&mut attach[i]))?;
    }
    for (i, bond) in r.bonds.iter().enumerate() {
        b.bond(i, bond);
    }
    for (i, bal) in r.balancers.iter().enumerate() {
        b.balancer(i, bal);
    }
    for (fi, f) in r.flows.iter().enumerate() {
        let flow = b.flow(fi, f)?;
        b.flows.push(flow);
        b.net.sched.at(
            Time::from_secs_f64(f.start_s),
            Event::FlowStart { flow: fi as u32 },
        );
    }
    let mut net = b.net;
    // Links with no step to come: their directions' departures follow from their rate.
    let mut dynamic = vec![false; net.dirs.len()];
    for l in b.links.iter().filter(|l| l.next_step < l.steps.len()) {
        for d in [l.fwd, l.rev] {
            dynamic[d as usize] = true;
        }
    }
    net.fix_dirs(|d| dynamic[d as usize]);
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

/// What `world` assembles, one kind of part at a time.
struct Builder<'a> {
    r: &'a Resolved,
    end: Time,
    nbins: usize,
    net: Net,
    links: Vec<LinkRuntime>,
    flows: Vec<Flow>,
    timelines: Arc<Vec<railpath_radio::CarrierTimeline>>,
    balancers: Vec<BalancerRt>,
}

fn mbps(r: f64) -> u64 {
    (r * 1e6).round() as u64
}

impl Builder<'_> {
    /// One `[[link]]`: both directions, and the steps that change it over the run (its
    /// schedule, outages, carrier timeline, and `attach`: a vertical handoff's releases).
    fn link(
        &mut self,
        i: usize,
        spec: &LinkSpec,
        attach: Vec<(Time, StepAction)>,
    ) -> Result<(), SimError> {
        let (l, seed) = (&spec.link, self.r.run.seed);
        let carrier = spec.carrier.map(|c| {
            let cfg = &self
                .r
                .radio
                .as_ref()
                .expect("a link's carrier has a radio")
                .carriers[c];
            (cfg, &self.timelines[c])
        });
        let limit = l.buffer();
        let rate_bps = l.rate_mbps.map(mbps).unwrap_or(0);
        let mut fwd = LinkDir::new(
            i as u32,
            rate_bps,
            Time::from_ms_f64(l.delay_ms),
            l.loss,
            limit,
            Rng::stream(seed, &format!("link:{}:fwd", l.id)),
        );
        fwd.outage_mode = l.outage_mode;
        let wifi = l.wifi.as_ref().map(crate::net::wifi::WifiMac::new);
        if let Some(mac) = wifi {
            fwd.wifi = Some(mac);
            fwd.rate_bps = mac.saturation_bps(1500).round() as u64;
        }
        // Resolution refused a trace it did not read.
        if let Some(t) = &l.trace_ms {
            fwd.trace = Some(Trace::new(Arc::from(t.as_slice())));
        }
        if let Some((cc, _)) = carrier {
            // Drop if either the link or its carrier says so (as the emulator does).
            if cc.outage_mode == Some(railpath_radio::OutageMode::Drop) {
                fwd.outage_mode = railpath_scenario::OutageMode::Drop;
            }
        }
        let rev_rate = match (l.reverse_rate_mbps, l.rate_mbps, carrier) {
            (Some(r), _, _) => mbps(r),
            (None, Some(r), _) => mbps(r),
            // A carrier's uplink: its peak rate unless reverse_rate_mbps says otherwise.
            (None, None, Some((cc, _))) => cc.rate_mbps.map(mbps).unwrap_or(100_000_000),
            (None, None, None) => 100_000_000,
        };
        let mut rev = LinkDir::new(
            i as u32,
            rev_rate,
            Time::from_ms_f64(l.reverse_delay_ms.unwrap_or(l.delay_ms)),
            l.reverse_loss,
            l.reverse_buffer(),
            Rng::stream(seed, &format!("link:{}:rev", l.id)),
        );
        rev.outage_mode = fwd.outage_mode;
        if let (Some(mac), Some(w)) = (wifi, &l.wifi) {
            rev.wifi = Some(mac);
            rev.rate_bps = mac.saturation_bps(1500).round() as u64;
            if w.rate_control == railpath_scenario::WifiRateControl::Minstrel {
                for (d, name) in [(&mut fwd, "fwd"), (&mut rev, "rev")] {
                    let mut rng = Rng::stream(seed, &format!("link:{}:{name}:minstrel", l.id));
                    let tries = w
                        .max_rate_tries
                        .unwrap_or(crate::net::minstrel::DEFAULT_MAX_RETRY);
                    d.wifi = d.wifi.map(|m| m.with_minstrel(tries, &mut rng));
                }
            }
            let fading = (w.doppler_hz > 0.0).then(|| {
                let k = w.rician_k_db.map_or(0.0, crate::net::wifi_phy::from_db);
                let rng = Rng::stream(seed, &format!("link:{}:fading", l.id));
                crate::net::wifi_phy::Fading::new(w.doppler_hz, k, rng)
            });
            // The AP's and the client's stations share the link's channel.
            let ch = std::rc::Rc::new(crate::net::wifi::Channel::new(fading));
            fwd.channel = Some(std::rc::Rc::clone(&ch));
            rev.channel = Some(ch);
        }
        if let Some(t) = &l.reverse_trace_ms {
            rev.trace = Some(Trace::new(Arc::from(t.as_slice())));
        }
        self.net.dirs.push(fwd);
        self.net.dirs.push(rev);
        let mut steps = link_schedule(l, seed, self.r.run.duration_s);
        if let Some((_, tl)) = carrier {
            carrier_steps(tl, self.end, &mut steps);
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
        let (fwd, rev) = ((2 * i) as u32, (2 * i + 1) as u32);
        let mut first = 0;
        while first < steps.len() && steps[first].0 == Time::ZERO {
            self.net.apply_step(fwd, rev, steps[first].1);
            first += 1;
        }
        if carrier.is_some()
            && self.net.dirs[fwd as usize].rate_bps == 0
            && self.net.dirs[fwd as usize].trace.is_none()
        {
            return Err(SimError::Input(railpath_scenario::ScenarioError::new(
                &self.r.source,
                format!("link[{i}].carrier"),
                format!("carrier {:?} gives no rate at time 0", l.carrier),
            )));
        }
        if let Some(&(t, _)) = steps.get(first) {
            self.net.sched.at(t, Event::LinkStep { link: i as u32 });
        }
        self.links.push(LinkRuntime {
            id: l.id.clone(),
            fwd,
            rev,
            steps,
            next_step: first,
            queue_samples: Vec::with_capacity(self.nbins),
            unplug: l.unplug,
            loss_samples: carrier
                .is_some_and(|(cfg, _)| cfg.failures.is_some())
                .then(LossSamples::default),
        });
        Ok(())
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

    /// Routes of endpoint pair `sub` of flow `fi` over a path, then an in-car link if given:
    /// (data, ACK).
    fn routes(&mut self, fi: usize, sub: u16, t: PathTarget, access: Option<usize>) -> (u32, u32) {
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

    /// A `[[balancer]]`: its links, and a tracking check at each time a link has been down
    /// for the detection delay.
    fn balancer(&mut self, bi: usize, b: &BalancerSpec) {
        let detect = Time::from_ms_f64(b.detect_ms);
        let mut rates = Vec::new();
        let mut down = Vec::new();
        for &li in &b.links {
            rates.push(self.r.links[li].link.rate_mbps.unwrap_or(0.0));
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
        self.balancers.push(BalancerRt {
            policy: b.policy,
            links: b.links.clone(),
            rates,
            down,
            order: 0,
            cars: Vec::new(),
        });
    }

    /// One `[[bond]]` over links already built: its members, their power clocks, and a
    /// monitoring check at the first tick after each change of a member's carrier.
    fn bond(&mut self, bi: usize, b: &BondSpec) {
        use crate::net::bond::{next_check, Bond, Member};
        let mut members = Vec::with_capacity(b.members.len());
        let tau = Time::from_ms_f64(b.sleep_after_ms);
        let interval = Time::from_ms_f64(b.miimon_ms);
        let mut checks = Vec::new();
        for &li in &b.members {
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
            b.weights.clone(),
            b.split,
            b.ack_filter,
            Rng::stream(self.r.run.seed, &format!("bond:{}", b.id)),
        );
        // Members already out at the start (an outage from time 0) are seen at enslaving.
        let dirs = &self.net.dirs;
        bond.monitor(Time::ZERO, |m| dirs[m.fwd as usize].down == 0);
        bond.stats.events.clear();
        self.net.add_bond(bond);
    }

    /// Flow `fi`, by its kind and route.
    fn flow(&mut self, fi: usize, f: &FlowSpec) -> Result<Flow, SimError> {
        Ok(match &f.transport {
            Transport::Tcp(t) => match &t.route {
                TcpRoute::Path { path, access } => {
                    let (d, a) = self.routes(fi, 0, *path, *access);
                    Flow::Tcp(Box::new(TcpFlow::new(
                        fi as u32,
                        &self.tcp_params(f, t),
                        d,
                        a,
                    )))
                }
                TcpRoute::Handoffs(plan) => self.handoff_flow(fi, f, t, plan),
                TcpRoute::Balancer {
                    balancer,
                    car,
                    access,
                } => self.balanced_flow(fi, f, t, (*balancer, *car), *access),
            },
            Transport::Mptcp(m) => match &m.proxy {
                None => Flow::Mptcp(self.mptcp_flow(fi, f, m)?),
                Some(_) => self.relay_flow(fi, f, m)?,
            },
            Transport::Udp(u) => self.udp_flow(fi, f, u),
        })
    }

    fn tcp_params(&self, f: &FlowSpec, t: &TcpSpec) -> TcpParams {
        TcpParams {
            id: f.id.clone(),
            cc: t.cc,
            start: Time::from_secs_f64(f.start_s),
            bytes: t.bytes,
            tcp: t.tcp.clone(),
            seed: self.r.run.seed,
            nbins: self.nbins,
        }
    }

    /// A tcp flow whose path moves between links (vertical handoffs), with TCP-FS if switched
    /// on: a route per link, and a `FlowControl` event per handoff step.
    fn handoff_flow(&mut self, fi: usize, f: &FlowSpec, t: &TcpSpec, plan: &HandoffPlan) -> Flow {
        let routes: Vec<(u32, u32)> = plan
            .links
            .iter()
            .map(|&li| self.routes(fi, 0, PathTarget::Link(li), None))
            .collect();
        let mut flow = TcpFlow::new(fi as u32, &self.tcp_params(f, t), routes[0].0, routes[0].1);
        // TCP-FS is the one mechanism of tcp flows (a new one is a compile error here).
        let tcp_fs = t
            .mechanisms
            .iter()
            .map(|m| match m {
                TcpMechanism::TcpFs(o) => o,
            })
            .next();
        let ids: Vec<&str> = plan.links.iter().map(|&li| self.r.links[li].id()).collect();
        let h = flow_handoffs(plan, &ids, tcp_fs, &t.tcp, routes, self.nbins);
        for (k, (t, _)) in h.steps.iter().enumerate() {
            self.net.sched.at_control(*t, fi as u32, k as u32);
        }
        flow.handoffs = Some(Box::new(h));
        Flow::Tcp(Box::new(flow))
    }

    /// A car's tcp flow through balancer `bi`: a connection whose routes the balancer sets when
    /// it starts (and again at a failover).
    fn balanced_flow(
        &mut self,
        fi: usize,
        f: &FlowSpec,
        t: &TcpSpec,
        (bi, car): (usize, usize),
        access: Option<usize>,
    ) -> Flow {
        let params = self.tcp_params(f, t);
        let flow = TcpFlow::new(fi as u32, &params, 0, 0);
        let bal = &self.r.balancers[bi];
        let hops = bal
            .links
            .iter()
            .map(|&li| self.hops(PathTarget::Link(li), access))
            .collect();
        let link_names = bal
            .links
            .iter()
            .map(|&li| self.r.links[li].id().to_string())
            .collect();
        self.balancers[bi].cars.push(fi);
        let place = CarPlace {
            balancer: bi,
            balancer_id: bal.id.clone(),
            car,
            hops,
            link_names,
            access: access.map(|a| self.r.links[a].id().to_string()),
            failover: bal.failover,
        };
        Flow::Balanced(Box::new(BalancedFlow::new(Box::new(flow), params, place)))
    }

    /// A car behind the router's MPTCP proxy: the server's MPTCP connection to the router (or
    /// plain TCP over the first path when the server has no MPTCP), the relay, and the
    /// passenger's TCP over the in-car link.
    fn relay_flow(&mut self, fi: usize, f: &FlowSpec, m: &MptcpSpec) -> Result<Flow, SimError> {
        let proxy = m.proxy.as_ref().expect("a relay has a proxy");
        let start = Time::from_secs_f64(f.start_s);
        let up = if proxy.options.server_mptcp() {
            Up::Mptcp(self.mptcp_flow(fi, f, m)?)
        } else {
            // The fallback's plain TCP runs the host's congestion control: the subflows' own
            // when uncoupled, else Linux's default, CUBIC.
            let cc = match m.cc {
                railpath_scenario::MptcpCc::Uncoupled(c) => c,
                railpath_scenario::MptcpCc::Coupled(_) => TcpCc::Cubic,
            };
            let params = TcpParams {
                id: f.id.clone(),
                cc,
                start,
                bytes: m.bytes,
                tcp: m.tcp.clone(),
                seed: self.r.run.seed,
                nbins: self.nbins,
            };
            let (d, a) = self.routes(fi, 0, m.subflows[0].path, None);
            Up::Tcp(Box::new(TcpFlow::new(fi as u32, &params, d, a)))
        };
        let passenger = TcpParams {
            id: f.id.clone(),
            cc: proxy.access_cc,
            start,
            bytes: 0,
            tcp: m.tcp.clone(),
            seed: self.r.run.seed,
            nbins: self.nbins,
        };
        let (d, a) = self.routes(fi, ACCESS_SUB, PathTarget::Link(proxy.access), None);
        let down = TcpFlow::new(fi as u32, &passenger, d, a);
        Ok(Flow::Relay(Box::new(RelayFlow::new(
            up,
            Box::new(down),
            self.r.links[proxy.access].id().to_string(),
            proxy.options.buffer_bytes(),
            proxy.options.verify,
            self.r.run.seed,
        ))))
    }

    /// A udp source over its one link's (or bond's) data direction, to a sink at the far end;
    /// it sends from `start_s` (its `FlowStart`) until `stop_s` or the end of the run.
    fn udp_flow(&mut self, fi: usize, f: &FlowSpec, u: &UdpSpec) -> Flow {
        let (hop, dirs) = match u.path {
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
        let stop = u.stop_s.map_or(self.end, Time::from_secs_f64).min(self.end);
        Flow::Udp(Box::new(UdpFlow::new(
            fi as u32,
            &f.id,
            u.source,
            (route, dirs),
            (Time::from_secs_f64(f.start_s), stop),
            self.r.run.seed,
            self.nbins,
        )))
    }

    /// An MPTCP connection: a subflow per path, PHA / PHA-D if switched on.
    fn mptcp_flow(
        &mut self,
        fi: usize,
        f: &FlowSpec,
        m: &MptcpSpec,
    ) -> Result<Box<MptcpFlow>, SimError> {
        let routes = m
            .subflows
            .iter()
            .enumerate()
            .map(|(j, s)| self.routes(fi, j as u16, s.path, None))
            .collect();
        let plan =
            crate::mechanisms::pha::plan(self.r, &f.id, m, self.end).map_err(SimError::Internal)?;
        // Subflows over a link whose outages are its interface unplugged: (time, subflow,
        // plugged back). Plugged back, the client joins a new subflow (MP_JOIN: its SYN, the
        // server's SYN/ACK, its ACK), and the server sends on it once that ACK has arrived: one
        // data-direction and two reverse-direction delays after the interface returns.
        let mut unplugs = Vec::new();
        for (j, sub) in m.subflows.iter().enumerate() {
            if let railpath_scenario::PathTarget::Link(li) = sub.path {
                if self.links[li].unplug {
                    let l = &self.r.links[li].link;
                    let join = Time::from_ms_f64(
                        l.delay_ms + 2.0 * l.reverse_delay_ms.unwrap_or(l.delay_ms),
                    );
                    for (t, a) in &self.links[li].steps {
                        match a {
                            StepAction::OutageStart(_) => unplugs.push((*t, j, false)),
                            StepAction::OutageEnd => unplugs.push((*t + join, j, true)),
                            _ => {}
                        }
                    }
                }
            }
        }
        let flow = MptcpFlow::new(MptcpSetup {
            idx: fi as u32,
            id: &f.id,
            start: Time::from_secs_f64(f.start_s),
            spec: m,
            routes,
            seed: self.r.run.seed,
            nbins: self.nbins,
            plan,
            unplugs,
        });
        let controls = flow
            .prio_script
            .iter()
            .map(|pc| pc.t)
            .chain(flow.unplugs.iter().map(|u| u.0));
        for (k, t) in controls.chain(flow.wakes.iter().copied()).enumerate() {
            self.net.sched.at_control(t, fi as u32, k as u32);
        }
        Ok(Box::new(flow))
    }
}

/// A link's own steps: its schedule (with `delay_range` drawn) and its outages.
fn link_schedule(
    l: &railpath_scenario::Link,
    seed: u64,
    duration_s: f64,
) -> Vec<(Time, StepAction)> {
    let mut steps = Vec::new();
    for st in &l.schedule_steps(seed, duration_s) {
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
    for o in &l.outage_list(duration_s) {
        let t = Time::from_secs_f64(o.start_s);
        let until = t + Time::from_ms_f64(o.duration_ms);
        steps.push((t, StepAction::OutageStart(until)));
        steps.push((until, StepAction::OutageEnd));
    }
    steps
}

/// A carrier timeline's steps added to a link's (`end`: the run's end, for an outage still
/// open when the timeline stops).
fn carrier_steps(
    tl: &railpath_radio::CarrierTimeline,
    end: Time,
    steps: &mut Vec<(Time, StepAction)>,
) {
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
            // An outage already open continues (a timeline whose next outage starts when the
            // last ends merges the two): starting it again would leave one start without an
            // end, and the link down for good.
            Some(true) if open.is_some() => {}
            Some(true) => {
                open = Some(steps.len());
                steps.push((st.t, StepAction::OutageStart(end)));
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
        if st.drop_queue {
            // A failure: what the link holds (and receives until the outage ends) is lost.
            steps.push((st.t, StepAction::DropQueue));
        }
    }
}
