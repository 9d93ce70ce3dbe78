//! The typed, resolved form of a validated scenario: what the simulator, the testbed and the
//! reproductions consume ([`Scenario::validate`] returns it).
//!
//! The TOML form ([`Scenario`]) is flat, as a file is written: a `[[flow]]` table has every key
//! of every kind, names point at links, bonds and balancers by id, and mechanisms, congestion
//! controls and schedulers are strings. Here each flow kind is a variant with only its own
//! fields ([`Transport`]; a tcp flow's route is one of [`TcpRoute`]), every reference is an index
//! into [`Resolved::links`], [`Resolved::bonds`], [`Resolved::balancers`] or the radio model's
//! carriers, defaults are filled in, and names are enums ([`TcpCc`], [`MptcpCc`],
//! [`SchedulerKind`], [`MptcpMechanism`], [`TcpMechanism`]) with their parameters. A consumer
//! matches on them: adding a flow kind, a route, a mechanism, a congestion control or a scheduler
//! is a compile error everywhere it is not yet handled.
//!
//! Resolution runs after the checks of `validate.rs`; it looks every name up once, here, and
//! the engines never do again.

use crate::{
    BloatMonitorOptions, BondSplit, Failover, Handoff, Link, PathTarget, PrioBy, ProxyOptions,
    Reinject, Run, Scenario, ScenarioError, TcpConfig, TcpFsOptions, UdpConfig,
};
use railpath_radio::table::HandoverTable;
use railpath_radio::{CarrierConfig, TrainConfig};

/// A validated scenario, resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// Where the scenario came from (file path or preset name), for messages.
    pub source: String,
    pub run: Run,
    /// `[tcp]` with Linux's defaults filled in: what acts on a whole host (the testbed's
    /// `tcp_rmem`/`tcp_wmem`); each flow has its own layered configuration.
    pub tcp: TcpConfig,
    pub links: Vec<LinkSpec>,
    pub bonds: Vec<BondSpec>,
    pub balancers: Vec<BalancerSpec>,
    /// The train and its carriers, when any `[[carrier]]` is given.
    pub radio: Option<Radio>,
    pub flows: Vec<FlowSpec>,
    /// `[capture]`: packet captures of the run, if asked for.
    pub capture: Option<crate::Capture>,
}

/// The radio model's train and carriers (`[train]`, `[[carrier]]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Radio {
    pub train: TrainConfig,
    pub carriers: Vec<CarrierConfig>,
}

/// A `[[link]]`: its table as written (validated; traces loaded) and its carrier.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    pub link: Link,
    /// Index into [`Radio::carriers`] of the carrier that drives it.
    pub carrier: Option<usize>,
}

impl LinkSpec {
    pub fn id(&self) -> &str {
        &self.link.id
    }
}

/// A `[[bond]]` with its members resolved and its defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct BondSpec {
    pub id: String,
    /// Link indices, in the order given.
    pub members: Vec<usize>,
    /// Packets per member per turn.
    pub weights: Vec<u32>,
    pub split: BondSplit,
    pub miimon_ms: f64,
    pub ack_filter: bool,
    pub sleep_after_ms: f64,
}

/// A `[[balancer]]` with its links resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct BalancerSpec {
    pub id: String,
    /// Link indices, in the order given.
    pub links: Vec<usize>,
    pub policy: crate::BalancePolicy,
    pub detect_ms: f64,
    pub failover: Failover,
}

/// One `[[flow]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    pub id: String,
    pub start_s: f64,
    pub transport: Transport,
}

impl FlowSpec {
    /// The flow's tcp settings, if it is a tcp flow.
    pub fn tcp(&self) -> Option<&TcpSpec> {
        match &self.transport {
            Transport::Tcp(t) => Some(t),
            _ => None,
        }
    }
    /// The flow's mptcp settings, if it is an mptcp flow.
    pub fn mptcp(&self) -> Option<&MptcpSpec> {
        match &self.transport {
            Transport::Mptcp(m) => Some(m),
            _ => None,
        }
    }
    /// The flow's TCP configuration (its `tcp` over `[tcp]` over Linux's defaults); a udp flow
    /// has none.
    pub fn tcp_config(&self) -> Option<&TcpConfig> {
        match &self.transport {
            Transport::Tcp(t) => Some(&t.tcp),
            Transport::Mptcp(m) => Some(&m.tcp),
            Transport::Udp(_) => None,
        }
    }
    /// The flow's udp settings, if it is a udp flow.
    pub fn udp(&self) -> Option<&UdpSpec> {
        match &self.transport {
            Transport::Udp(u) => Some(u),
            _ => None,
        }
    }
}

/// What a flow is, with only the fields of its kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Tcp(TcpSpec),
    Mptcp(MptcpSpec),
    Udp(UdpSpec),
}

impl Transport {
    /// The scenario's name of the kind (`kind = "..."`).
    pub fn kind_name(&self) -> &'static str {
        match self {
            Transport::Tcp(_) => "tcp",
            Transport::Mptcp(_) => "mptcp",
            Transport::Udp(_) => "udp",
        }
    }
}

/// A single-path TCP congestion control (`cc` of a tcp flow).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpCc {
    NewReno,
    Cubic,
    Bbr,
}

impl TcpCc {
    pub const ALL: [TcpCc; 3] = [TcpCc::NewReno, TcpCc::Cubic, TcpCc::Bbr];
    pub fn as_str(&self) -> &'static str {
        match self {
            TcpCc::NewReno => "newreno",
            TcpCc::Cubic => "cubic",
            TcpCc::Bbr => "bbr",
        }
    }
    pub fn from_name(name: &str) -> Option<TcpCc> {
        TcpCc::ALL.into_iter().find(|c| c.as_str() == name)
    }
}

/// A coupled MPTCP congestion control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CoupledCc {
    Lia,
    Olia,
    Balia,
}

impl CoupledCc {
    pub const ALL: [CoupledCc; 3] = [CoupledCc::Lia, CoupledCc::Olia, CoupledCc::Balia];
    pub fn as_str(&self) -> &'static str {
        match self {
            CoupledCc::Lia => "lia",
            CoupledCc::Olia => "olia",
            CoupledCc::Balia => "balia",
        }
    }
}

/// An MPTCP congestion control (`cc` of an mptcp flow): coupled, or a TCP one per subflow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MptcpCc {
    Coupled(CoupledCc),
    Uncoupled(TcpCc),
}

impl MptcpCc {
    /// The scenario's name (`"lia"`, `"uncoupled-cubic"`).
    pub fn name(&self) -> String {
        match self {
            MptcpCc::Coupled(c) => c.as_str().to_string(),
            MptcpCc::Uncoupled(t) => format!("uncoupled-{}", t.as_str()),
        }
    }
    pub fn from_name(name: &str) -> Option<MptcpCc> {
        match name.strip_prefix("uncoupled-") {
            Some(t) => TcpCc::from_name(t).map(MptcpCc::Uncoupled),
            None => CoupledCc::ALL
                .into_iter()
                .find(|c| c.as_str() == name)
                .map(MptcpCc::Coupled),
        }
    }
    /// Whether the subflows' windows are coupled.
    pub fn coupled(&self) -> bool {
        matches!(self, MptcpCc::Coupled(_))
    }
}

/// An MPTCP packet scheduler (`scheduler` of an mptcp flow; default minRTT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchedulerKind {
    #[default]
    MinRtt,
    RoundRobin,
    Redundant,
    Ecf,
    Blest,
    Peekaboo,
    LinuxDefault,
}

impl SchedulerKind {
    pub const ALL: [SchedulerKind; 7] = [
        SchedulerKind::MinRtt,
        SchedulerKind::RoundRobin,
        SchedulerKind::Redundant,
        SchedulerKind::Ecf,
        SchedulerKind::Blest,
        SchedulerKind::Peekaboo,
        SchedulerKind::LinuxDefault,
    ];
    pub fn as_str(&self) -> &'static str {
        match self {
            SchedulerKind::MinRtt => "minrtt",
            SchedulerKind::RoundRobin => "roundrobin",
            SchedulerKind::Redundant => "redundant",
            SchedulerKind::Ecf => "ecf",
            SchedulerKind::Blest => "blest",
            SchedulerKind::Peekaboo => "peekaboo",
            SchedulerKind::LinuxDefault => "linux-default",
        }
    }
    pub fn from_name(name: &str) -> Option<SchedulerKind> {
        SchedulerKind::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// A tcp flow.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpSpec {
    pub cc: TcpCc,
    /// Bytes to transfer; 0 = bulk for the whole run.
    pub bytes: u64,
    /// `[tcp]` layered with the flow's own `tcp`, Linux defaults filled in.
    pub tcp: TcpConfig,
    pub route: TcpRoute,
    pub mechanisms: Vec<TcpMechanism>,
}

/// How a tcp flow reaches its receiver.
#[derive(Debug, Clone, PartialEq)]
pub enum TcpRoute {
    /// Over one link or bond, then (a car's connection) over an in-car link.
    Path {
        path: PathTarget,
        access: Option<usize>,
    },
    /// Moving between links at vertical handoffs (the TCP-FS paper).
    Handoffs(HandoffPlan),
    /// A car's connection through a load balancer, which gives it one of its links.
    Balancer {
        balancer: usize,
        /// The car's number among the scenario's cars (flows with an in-car link or a
        /// balancer, in flow order), as the testbed numbers its client namespaces.
        car: usize,
        access: Option<usize>,
    },
}

/// A handoff flow's links and handoffs.
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffPlan {
    /// Link indices of the flow's `paths`, in order; the flow starts on the first.
    pub links: Vec<usize>,
    pub handoffs: Vec<HandoffSpec>,
}

/// One vertical handoff: as written, and the index (into [`HandoffPlan::links`]) of its `to`.
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffSpec {
    pub handoff: Handoff,
    pub to: usize,
}

/// A mechanism of a tcp flow.
#[derive(Debug, Clone, PartialEq)]
pub enum TcpMechanism {
    /// The TCP-FS receiver (freeze, then ACK holding) at vertical handoffs.
    TcpFs(TcpFsOptions),
}

impl TcpMechanism {
    pub fn name(&self) -> &'static str {
        match self {
            TcpMechanism::TcpFs(_) => "tcp-fs",
        }
    }
}

/// An mptcp flow.
#[derive(Debug, Clone, PartialEq)]
pub struct MptcpSpec {
    pub cc: MptcpCc,
    pub scheduler: SchedulerKind,
    /// Bytes to transfer; 0 = bulk for the whole run.
    pub bytes: u64,
    pub tcp: TcpConfig,
    pub subflows: Vec<SubflowSpec>,
    pub receive_buffer_packets: Option<u32>,
    /// Dynamic right-sizing of the data receiver's buffer (resolved default).
    pub receive_buffer_autotune: bool,
    pub send_buffer_packets: Option<u32>,
    /// Each subflow's own fixed window, bytes (`subflow_window_bytes`).
    pub subflow_window_bytes: Option<u64>,
    /// The reinjection rule in force (resolved default).
    pub reinject: Reinject,
    /// As written (`None`: the rule's default, 4).
    pub stale_loss_cnt: Option<u32>,
    /// The flow's `backup_paths`, as written.
    pub backup_paths: Vec<String>,
    pub prio_changes: Vec<PrioChangeSpec>,
    pub mechanisms: Vec<MptcpMechanism>,
    /// A car behind the train router's MPTCP proxy.
    pub proxy: Option<ProxySpec>,
}

impl MptcpSpec {
    /// `stale_loss_cnt` in force (Linux's `net.mptcp.stale_loss_cnt` default, 4).
    pub fn stale_loss_cnt(&self) -> u32 {
        self.stale_loss_cnt.unwrap_or(4)
    }
    /// PHA or PHA-D, if the flow runs one.
    pub fn handover_aware(&self) -> Option<&MptcpMechanism> {
        self.mechanisms
            .iter()
            .find(|m| matches!(m, MptcpMechanism::Pha(_) | MptcpMechanism::PhaD { .. }))
    }
    /// The bloat monitor's options, if the flow runs it.
    pub fn bloat_monitor(&self) -> Option<BloatMonitorOptions> {
        self.mechanisms.iter().find_map(|m| match m {
            MptcpMechanism::BloatMonitor(o) => Some(*o),
            _ => None,
        })
    }
}

/// One subflow of an mptcp flow.
#[derive(Debug, Clone, PartialEq)]
pub struct SubflowSpec {
    /// Its id in summaries: the path's id, with `#k` when the flow has several subflows over
    /// that path.
    pub name: String,
    /// The path's id as written in `paths`.
    pub path_id: String,
    pub path: PathTarget,
    /// Starts as backup (`backup_paths`).
    pub backup: bool,
    /// The carrier (index into [`Radio::carriers`]) of the link it runs over, if any.
    pub carrier: Option<usize>,
}

/// A scripted MP_PRIO change, with the subflows it applies to.
#[derive(Debug, Clone, PartialEq)]
pub struct PrioChangeSpec {
    pub t_s: f64,
    /// The path as written.
    pub path: String,
    /// Every subflow over that path, by index.
    pub subflows: Vec<usize>,
    pub backup: bool,
    pub by: PrioBy,
}

/// The router's proxy of a car's mptcp flow.
#[derive(Debug, Clone, PartialEq)]
pub struct ProxySpec {
    /// The in-car link (index).
    pub access: usize,
    /// The car's number among the scenario's cars (see [`TcpRoute::Balancer`]).
    pub car: usize,
    pub options: ProxyOptions,
    /// The passenger's TCP congestion control.
    pub access_cc: TcpCc,
}

/// Where PHA and PHA-D get their handover table.
#[derive(Debug, Clone, PartialEq)]
pub enum TableSource {
    /// Read with the scenario (`handover_table`) or given by the caller.
    Given(HandoverTable),
    /// Learned from this many preliminary runs of the radio model
    /// (`handover_table_learn_runs`).
    Learn { runs: u32 },
}

/// What PHA and PHA-D share: the handover table and the GPS error of the position fix.
#[derive(Debug, Clone, PartialEq)]
pub struct HandoverAware {
    pub table: TableSource,
    /// As written (`None`: the default of the predictor, 20 m).
    pub gps_error_m: Option<f64>,
}

/// A mechanism of an mptcp flow.
#[derive(Debug, Clone, PartialEq)]
pub enum MptcpMechanism {
    /// The sender's scheduler skips a carrier's subflow in its predicted handover zones.
    Pha(HandoverAware),
    /// The receiver sends MP_PRIO around predicted handovers.
    PhaD {
        aware: HandoverAware,
        lead_ms: Option<f64>,
        back_ms: Option<f64>,
    },
    /// The BLOAT paper's transmission-status monitor.
    BloatMonitor(BloatMonitorOptions),
}

impl MptcpMechanism {
    pub fn name(&self) -> &'static str {
        match self {
            MptcpMechanism::Pha(_) => "pha",
            MptcpMechanism::PhaD { .. } => "pha-d",
            MptcpMechanism::BloatMonitor(_) => "bloat-monitor",
        }
    }
    /// The table and GPS error of PHA or PHA-D.
    pub fn aware(&self) -> Option<&HandoverAware> {
        match self {
            MptcpMechanism::Pha(a) | MptcpMechanism::PhaD { aware: a, .. } => Some(a),
            MptcpMechanism::BloatMonitor(_) => None,
        }
    }
}

/// A udp flow.
#[derive(Debug, Clone, PartialEq)]
pub struct UdpSpec {
    pub source: UdpConfig,
    pub path: PathTarget,
    /// Sending stops here (`stop_s`), else at the end of the run.
    pub stop_s: Option<f64>,
}

impl Resolved {
    /// The links a path crosses: the link itself or a bond's members.
    pub fn path_links(&self, p: PathTarget) -> Vec<usize> {
        match p {
            PathTarget::Link(l) => vec![l],
            PathTarget::Bond(b) => self.bonds[b].members.clone(),
        }
    }

    /// Every link a flow's data can cross, in path order (an in-car link not included).
    pub fn flow_links(&self, f: &FlowSpec) -> Vec<usize> {
        match &f.transport {
            Transport::Tcp(t) => match &t.route {
                TcpRoute::Path { path, .. } => self.path_links(*path),
                TcpRoute::Handoffs(h) => h.links.clone(),
                TcpRoute::Balancer { balancer, .. } => self.balancers[*balancer].links.clone(),
            },
            Transport::Mptcp(m) => m
                .subflows
                .iter()
                .flat_map(|s| self.path_links(s.path))
                .collect(),
            Transport::Udp(u) => self.path_links(u.path),
        }
    }

    /// The carrier configuration of link `l`, if a carrier drives it.
    pub fn carrier_of(&self, l: usize) -> Option<&CarrierConfig> {
        let c = self.links[l].carrier?;
        self.radio.as_ref().map(|r| &r.carriers[c])
    }

    /// The index of the link with this id.
    pub fn link_index(&self, id: &str) -> Option<usize> {
        self.links.iter().position(|l| l.link.id == id)
    }
}

/// Resolution of a scenario whose checks passed (`validate.rs`). A name that does not resolve is
/// reported as validation would report it (it cannot happen after the checks; this is the one
/// place that looks names up).
pub(crate) fn resolve(s: &Scenario) -> Result<Resolved, ScenarioError> {
    let err = |key: String, msg: String| ScenarioError::new(&s.source, key, msg);
    let radio = match (&s.train, s.carriers.is_empty()) {
        (Some(train), false) => Some(Radio {
            train: train.clone(),
            // A carrier's `profile` fills the keys it bundles that the carrier leaves out.
            carriers: s
                .carriers
                .iter()
                .map(|c| {
                    let mut c = c.clone();
                    c.apply_profile();
                    c
                })
                .collect(),
        }),
        _ => None,
    };
    let carrier_index = |id: &str| s.carriers.iter().position(|c| c.id == id);
    let mut links = Vec::with_capacity(s.links.len());
    for (i, l) in s.links.iter().enumerate() {
        for (name, key, loaded) in [
            (&l.trace, "trace", l.trace_ms.is_some()),
            (
                &l.reverse_trace,
                "reverse_trace",
                l.reverse_trace_ms.is_some(),
            ),
        ] {
            if let (Some(file), false) = (name, loaded) {
                return Err(err(
                    format!("link[{i}].{key}"),
                    format!(
                        "the trace {file:?} was not read (load the scenario with railpath_scenario::load)"
                    ),
                ));
            }
        }
        let carrier = match &l.carrier {
            Some(c) => Some(carrier_index(c).ok_or_else(|| {
                err(
                    format!("link[{i}].carrier"),
                    format!("unknown carrier {c:?}"),
                )
            })?),
            None => None,
        };
        let mut link = l.clone();
        // A link without a buffer of its own gets its carrier's eNodeB queue, if it gives one.
        if let (Some(c), None, None) = (carrier, l.buffer_packets, l.buffer_bytes) {
            let enb = radio
                .as_ref()
                .and_then(|r| r.carriers.get(c))
                .and_then(|c| c.enb_buffer_packets);
            if let Some(b) = enb {
                link.buffer_packets = Some(b);
            }
        }
        links.push(LinkSpec { link, carrier });
    }
    let link = |key: &str, id: &str| {
        s.link_index(id)
            .ok_or_else(|| err(key.to_string(), format!("unknown link {id:?}")))
    };
    let mut bonds = Vec::with_capacity(s.bonds.len());
    for (i, b) in s.bonds.iter().enumerate() {
        let members = b
            .members
            .iter()
            .enumerate()
            .map(|(j, m)| link(&format!("bond[{i}].members[{j}]"), m))
            .collect::<Result<_, _>>()?;
        bonds.push(BondSpec {
            id: b.id.clone(),
            members,
            weights: b.weights(),
            split: b.split,
            miimon_ms: b.miimon_ms(),
            ack_filter: b.ack_filter,
            sleep_after_ms: b.sleep_after_ms(),
        });
    }
    let mut balancers = Vec::with_capacity(s.balancers.len());
    for (i, b) in s.balancers.iter().enumerate() {
        let links = b
            .links
            .iter()
            .enumerate()
            .map(|(j, m)| link(&format!("balancer[{i}].links[{j}]"), m))
            .collect::<Result<_, _>>()?;
        balancers.push(BalancerSpec {
            id: b.id.clone(),
            links,
            policy: b.policy,
            detect_ms: b.detect_ms(),
            failover: b.failover,
        });
    }
    let mut flows = Vec::with_capacity(s.flows.len());
    let mut cars = 0usize;
    for (i, f) in s.flows.iter().enumerate() {
        let k = |x: &str| format!("flow[{i}].{x}");
        let path = |j: usize, p: &str| {
            s.path_target(p)
                .ok_or_else(|| err(k(&format!("paths[{j}]")), format!("unknown link {p:?}")))
        };
        let access = match &f.access {
            Some(a) => Some(link(&k("access"), a)?),
            None => None,
        };
        let balancer = f.paths.first().and_then(|p| s.balancer_index(p));
        // Cars are numbered in flow order, as the testbed numbers its client namespaces.
        let car = cars;
        if access.is_some() || balancer.is_some() {
            cars += 1;
        }
        let transport = match f.kind {
            crate::FlowKind::Tcp => {
                let cc = TcpCc::from_name(&f.cc).ok_or_else(|| {
                    err(k("cc"), format!("unknown congestion control {:?}", f.cc))
                })?;
                let route = if let Some(b) = balancer {
                    TcpRoute::Balancer {
                        balancer: b,
                        car,
                        access,
                    }
                } else if !f.handoffs.is_empty() {
                    let links = f
                        .paths
                        .iter()
                        .enumerate()
                        .map(|(j, p)| link(&k(&format!("paths[{j}]")), p))
                        .collect::<Result<Vec<_>, _>>()?;
                    let handoffs = f
                        .handoffs
                        .iter()
                        .enumerate()
                        .map(|(j, h)| {
                            let to = f.paths.iter().position(|p| *p == h.to).ok_or_else(|| {
                                err(
                                    k(&format!("handoffs[{j}].to")),
                                    format!("{:?} is not one of this flow's paths", h.to),
                                )
                            })?;
                            Ok(HandoffSpec {
                                handoff: h.clone(),
                                to,
                            })
                        })
                        .collect::<Result<Vec<_>, ScenarioError>>()?;
                    TcpRoute::Handoffs(HandoffPlan { links, handoffs })
                } else {
                    let p = f
                        .paths
                        .first()
                        .ok_or_else(|| err(k("paths"), "a tcp flow takes one link".into()))?;
                    TcpRoute::Path {
                        path: path(0, p)?,
                        access,
                    }
                };
                let mechanisms = f
                    .mechanisms
                    .iter()
                    .enumerate()
                    .map(|(j, m)| match m.as_str() {
                        "tcp-fs" => Ok(TcpMechanism::TcpFs(f.tcp_fs.unwrap_or_default())),
                        other => Err(err(
                            k(&format!("mechanisms[{j}]")),
                            format!("{other:?} is not a mechanism of tcp flows"),
                        )),
                    })
                    .collect::<Result<_, _>>()?;
                Transport::Tcp(TcpSpec {
                    cc,
                    bytes: f.bytes,
                    tcp: s.tcp_config(i),
                    route,
                    mechanisms,
                })
            }
            crate::FlowKind::Mptcp => {
                Transport::Mptcp(resolve_mptcp(s, i, f, &links, access, car, &err)?)
            }
            crate::FlowKind::Udp => {
                let source = f
                    .udp_config()
                    .ok_or_else(|| err(k("udp"), "missing: a udp flow needs its source".into()))?;
                let p = f
                    .paths
                    .first()
                    .ok_or_else(|| err(k("paths"), "a udp flow takes one link".into()))?;
                Transport::Udp(UdpSpec {
                    source,
                    path: path(0, p)?,
                    stop_s: f.stop_s,
                })
            }
        };
        flows.push(FlowSpec {
            id: f.id.clone(),
            start_s: f.start_s,
            transport,
        });
    }
    Ok(Resolved {
        source: s.source.clone(),
        run: s.run.clone(),
        tcp: s.tcp.resolved(),
        links,
        bonds,
        balancers,
        radio,
        flows,
        capture: s.capture.clone(),
    })
}

fn resolve_mptcp(
    s: &Scenario,
    i: usize,
    f: &crate::Flow,
    links: &[LinkSpec],
    access: Option<usize>,
    car: usize,
    err: &dyn Fn(String, String) -> ScenarioError,
) -> Result<MptcpSpec, ScenarioError> {
    let k = |x: &str| format!("flow[{i}].{x}");
    let cc = MptcpCc::from_name(&f.cc)
        .ok_or_else(|| err(k("cc"), format!("unknown congestion control {:?}", f.cc)))?;
    let scheduler = match &f.scheduler {
        Some(name) => SchedulerKind::from_name(name)
            .ok_or_else(|| err(k("scheduler"), format!("unknown scheduler {name:?}")))?,
        None => SchedulerKind::default(),
    };
    let mut subflows = Vec::with_capacity(f.paths.len());
    for (j, p) in f.paths.iter().enumerate() {
        let path = s
            .path_target(p)
            .ok_or_else(|| err(k(&format!("paths[{j}]")), format!("unknown link {p:?}")))?;
        // Subflows over a repeated link are told apart as "a#1", "a#2", ...
        let repeats = f.paths.iter().filter(|q| *q == p).count();
        let name = if repeats > 1 {
            let n = f.paths[..j].iter().filter(|q| *q == p).count();
            format!("{p}#{}", n + 1)
        } else {
            p.clone()
        };
        let carrier = match path {
            PathTarget::Link(l) => links[l].carrier,
            PathTarget::Bond(_) => None,
        };
        subflows.push(SubflowSpec {
            name,
            path_id: p.clone(),
            path,
            backup: f.backup_paths.contains(p),
            carrier,
        });
    }
    let prio_changes = f
        .prio_changes
        .iter()
        .enumerate()
        .map(|(j, pc)| {
            let subs: Vec<usize> = (0..f.paths.len())
                .filter(|&n| f.paths[n] == pc.path)
                .collect();
            if subs.is_empty() {
                return Err(err(
                    k(&format!("prio_changes[{j}].path")),
                    format!("{:?} is not one of this flow's paths", pc.path),
                ));
            }
            Ok(PrioChangeSpec {
                t_s: pc.t_s,
                path: pc.path.clone(),
                subflows: subs,
                backup: pc.backup,
                by: pc.by,
            })
        })
        .collect::<Result<_, _>>()?;
    let aware = || -> Result<HandoverAware, ScenarioError> {
        let table = match (&f.handover_table_data, f.handover_table_learn_runs) {
            (Some(t), _) => TableSource::Given(t.clone()),
            (None, Some(runs)) => TableSource::Learn { runs },
            (None, None) => {
                return Err(err(
                    k("handover_table"),
                    match &f.handover_table {
                        Some(t) => format!(
                            "the table {t:?} was not read (load the scenario with railpath_scenario::load)"
                        ),
                        None => "pha and pha-d need a handover table".into(),
                    },
                ))
            }
        };
        Ok(HandoverAware {
            table,
            gps_error_m: f.gps_error_m,
        })
    };
    let mechanisms = f
        .mechanisms
        .iter()
        .enumerate()
        .map(|(j, m)| match m.as_str() {
            "pha" => Ok(MptcpMechanism::Pha(aware()?)),
            "pha-d" => Ok(MptcpMechanism::PhaD {
                aware: aware()?,
                lead_ms: f.phad_lead_ms,
                back_ms: f.phad_back_ms,
            }),
            "bloat-monitor" => Ok(MptcpMechanism::BloatMonitor(
                f.bloat_monitor.unwrap_or_default(),
            )),
            other => Err(err(
                k(&format!("mechanisms[{j}]")),
                format!("{other:?} is not a mechanism of mptcp flows"),
            )),
        })
        .collect::<Result<_, _>>()?;
    let proxy = match access {
        Some(a) => {
            let options = f.proxy.clone().unwrap_or_default();
            let access_cc = TcpCc::from_name(options.access_cc()).ok_or_else(|| {
                err(
                    k("proxy.access_cc"),
                    format!("unknown congestion control {:?}", options.access_cc()),
                )
            })?;
            Some(ProxySpec {
                access: a,
                car,
                options,
                access_cc,
            })
        }
        None => None,
    };
    Ok(MptcpSpec {
        cc,
        scheduler,
        bytes: f.bytes,
        tcp: s.tcp_config(i),
        subflows,
        receive_buffer_packets: f.receive_buffer_packets,
        receive_buffer_autotune: f.receive_buffer_autotuned(),
        send_buffer_packets: f.send_buffer_packets,
        subflow_window_bytes: f.subflow_window_bytes,
        reinject: f.reinject_rule(),
        stale_loss_cnt: f.stale_loss_cnt,
        backup_paths: f.backup_paths.clone(),
        prio_changes,
        mechanisms,
        proxy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_str;

    fn resolve(text: &str) -> Resolved {
        parse_str(text, "t.toml").unwrap().validate().unwrap()
    }

    fn specs(s: &Scenario) -> Vec<LinkSpec> {
        s.links
            .iter()
            .map(|l| LinkSpec {
                link: l.clone(),
                carrier: None,
            })
            .collect()
    }

    const LINKS: &str = r#"
[run]
duration_s = 10
[[link]]
id = "a"
rate_mbps = 10
[[link]]
id = "b"
rate_mbps = 5
[[link]]
id = "car"
rate_mbps = 100
[[link]]
id = "car2"
rate_mbps = 100
"#;

    #[test]
    fn names_are_the_scenarios_own() {
        // Each enum knows exactly the names validation accepts, in the same order.
        let tcp: Vec<&str> = TcpCc::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(tcp, crate::TCP_CCS);
        let coupled: Vec<&str> = CoupledCc::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(coupled, crate::MPTCP_COUPLED_CCS);
        let sched: Vec<&str> = SchedulerKind::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(sched, crate::MPTCP_SCHEDULERS);
        assert_eq!(
            MptcpCc::from_name("uncoupled-bbr"),
            Some(MptcpCc::Uncoupled(TcpCc::Bbr))
        );
        assert_eq!(MptcpCc::from_name("uncoupled-lia"), None);
        assert_eq!(MptcpCc::Uncoupled(TcpCc::Cubic).name(), "uncoupled-cubic");
        assert_eq!(SchedulerKind::default().as_str(), "minrtt");
    }

    #[test]
    fn subflows_prio_changes_and_defaults() {
        let r = resolve(&format!(
            "{LINKS}[[flow]]\nid = \"m\"\nkind = \"mptcp\"\ncc = \"olia\"\npaths = [\"a\", \"b\", \"a\"]\n\
             backup_paths = [\"b\"]\nprio_changes = [{{ t_s = 2.0, path = \"a\", backup = true }}]\n\
             mechanisms = [\"bloat-monitor\"]\nbloat_monitor = {{ retransmit = false }}\n"
        ));
        let m = r.flows[0].mptcp().unwrap();
        assert_eq!(m.cc, MptcpCc::Coupled(CoupledCc::Olia));
        assert_eq!(m.scheduler, SchedulerKind::MinRtt);
        let names: Vec<&str> = m.subflows.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a#1", "b", "a#2"]);
        assert_eq!(m.subflows[2].path, PathTarget::Link(0));
        assert!(m.subflows[1].backup && !m.subflows[0].backup);
        // A change on "a" applies to both subflows over it.
        assert_eq!(m.prio_changes[0].subflows, [0, 2]);
        assert_eq!(m.reinject, Reinject::Rto);
        assert!(!m.receive_buffer_autotune);
        assert_eq!(m.stale_loss_cnt(), 4);
        assert_eq!(
            m.bloat_monitor(),
            Some(BloatMonitorOptions {
                retransmit: false,
                average_s: None
            })
        );
        assert!(m.proxy.is_none() && m.handover_aware().is_none());
        assert_eq!(r.flow_links(&r.flows[0]), [0, 1, 0]);
    }

    #[test]
    fn routes_and_cars_are_resolved() {
        let r = resolve(&format!(
            "{LINKS}[[balancer]]\nid = \"lb\"\nlinks = [\"a\", \"b\"]\n\
             [[flow]]\nid = \"plain\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n\
             [[flow]]\nid = \"c0\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"lb\"]\naccess = \"car\"\n\
             [[flow]]\nid = \"c1\"\nkind = \"mptcp\"\ncc = \"lia\"\npaths = [\"a\", \"b\"]\naccess = \"car2\"\n\
             proxy = {{ access_cc = \"bbr\" }}\n"
        ));
        assert_eq!(
            r.flows[0].tcp().unwrap().route,
            TcpRoute::Path {
                path: PathTarget::Link(0),
                access: None
            }
        );
        // Cars are numbered in flow order among the flows with a balancer or an in-car link.
        assert_eq!(
            r.flows[1].tcp().unwrap().route,
            TcpRoute::Balancer {
                balancer: 0,
                car: 0,
                access: Some(2)
            }
        );
        let p = r.flows[2].mptcp().unwrap().proxy.as_ref().unwrap();
        assert_eq!((p.access, p.car, p.access_cc), (3, 1, TcpCc::Bbr));
        assert_eq!(r.balancers[0].links, [0, 1]);
        assert_eq!(r.flow_links(&r.flows[1]), [0, 1]);
        assert_eq!(r.flows[2].transport.kind_name(), "mptcp");
    }

    #[test]
    fn mechanisms_carry_their_parameters() {
        let mut s = parse_str(
            &format!(
                "{LINKS}[[flow]]\nid = \"m\"\nkind = \"mptcp\"\ncc = \"lia\"\npaths = [\"a\", \"b\"]\n"
            ),
            "t.toml",
        )
        .unwrap();
        // PHA needs carriers: checked by validation, so build the resolved flow from keys.
        s.flows[0].handover_table_learn_runs = Some(7);
        s.flows[0].gps_error_m = Some(5.0);
        s.flows[0].phad_lead_ms = Some(120.0);
        s.flows[0].mechanisms = vec!["pha-d".into()];
        let m = resolve_mptcp(&s, 0, &s.flows[0], &specs(&s), None, 0, &|k, m| {
            ScenarioError::new("t.toml", k, m)
        })
        .unwrap();
        assert_eq!(
            m.mechanisms,
            [MptcpMechanism::PhaD {
                aware: HandoverAware {
                    table: TableSource::Learn { runs: 7 },
                    gps_error_m: Some(5.0)
                },
                lead_ms: Some(120.0),
                back_ms: None
            }]
        );
        assert_eq!(m.mechanisms[0].name(), "pha-d");
        // The names of MECHANISMS are those of the enums.
        let names: Vec<&str> = crate::MECHANISMS.iter().map(|(n, _)| *n).collect();
        assert_eq!(names, ["pha", "pha-d", "tcp-fs", "bloat-monitor"]);
        assert_eq!(TcpMechanism::TcpFs(Default::default()).name(), "tcp-fs");
    }

    #[test]
    fn a_table_named_but_not_read_is_an_error_naming_it() {
        let mut s = parse_str(
            &format!(
                "{LINKS}[[flow]]\nid = \"m\"\nkind = \"mptcp\"\ncc = \"lia\"\npaths = [\"a\"]\n"
            ),
            "t.toml",
        )
        .unwrap();
        s.flows[0].handover_table = Some("zones.json".into());
        s.flows[0].mechanisms = vec!["pha".into()];
        let e = resolve_mptcp(&s, 0, &s.flows[0], &specs(&s), None, 0, &|k, m| {
            ScenarioError::new("t.toml", k, m)
        })
        .unwrap_err();
        assert_eq!(e.key, "flow[0].handover_table");
        assert!(e.message.contains("\"zones.json\" was not read"), "{e}");
    }
}
