//! The controller: the gateway's hand on its carriers. Every tick the latest position goes
//! through the PHA-D decision rule ([`crate::phad::decide`]) and each carrier whose wanted state
//! differs from its endpoint's is flipped through the kernel path manager ([`crate::pm`]), which
//! sends MP_PRIO on every live subflow of that endpoint. At start and at shutdown every carrier
//! is set regular, so a stopped or crashed-and-restarted daemon leaves plain MPTCP behind.
//!
//! It also keeps each carrier's endpoint in service (carriers with an `interface` and
//! `manage_endpoint`): a carrier is *up* while its interface is up ([`crate::netmon`]), has a
//! usable address, and answers its probes ([`crate::health`]). While up, its endpoint is on the
//! interface's current address (a modem that re-attaches with a new address gets its endpoint
//! moved: removed and added again on the new address, bound to the interface, with the carrier's
//! current backup state, and the kernel opens a subflow from it on every live connection);
//! while down, its endpoint is removed, which closes its subflows and tells the peer
//! (REMOVE_ADDR), so traffic moves to the other carriers at once instead of after
//! retransmission timeouts. Changes are read from kernel events, and every 5 s in case one was
//! missed. The figures of [`crate::figures`] are kept here, from each tick's interface counters.
//!
//! Dead reckoning ([`crate::position::estimate`]): while the position is carried from the last
//! fix, the zones the rule tests are widened by the position's error on both sides (the table's
//! zones, each start lowered and end raised by the error, then united: the one predictor,
//! `railpath_radio::table::Predictor`, run on a widened table).

use crate::config::{millis, CarrierConfig, Config, DeadReckoningConfig, HealthConfig, PhadConfig};
use crate::drain::{Drain, DrainParams, DrainTracker, LeadAdapter};
use crate::figures::{self, CarrierEvent, CarrierFigures, Counters};
use crate::health::{ProbeResult, ProbeState, Verdict};
use crate::metrics::Metrics;
use crate::netmon::{self, NetEvent};
use crate::phad::{self, CarrierDecision, Reason};
use crate::pm::{self, PathManager, PmError};
use crate::position::{self, Estimate, PositionState};
use railpath_core::Time;
use railpath_radio::table::{HandoverTable, Predictor};
use std::net::IpAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{error, info, warn};

/// The table checked against the configured carriers.
pub struct CheckedTable {
    pub table: HandoverTable,
    pub predictor: Predictor,
    /// Configured carriers missing from the table (they are never flipped).
    pub unknown: Vec<String>,
    /// Table carriers with no configured endpoint (ignored).
    pub unused: Vec<String>,
}

/// Loads the handover table and compares its carriers with the configured ones.
pub fn load_table(ph: &PhadConfig, carriers: &[CarrierConfig]) -> Result<CheckedTable, String> {
    let table = HandoverTable::load(&ph.table).map_err(|e| e.to_string())?;
    let predictor = Predictor::new(&table);
    let known = predictor.known_carriers();
    let unknown: Vec<String> = carriers
        .iter()
        .filter(|c| !known.contains(&c.name.as_str()))
        .map(|c| c.name.clone())
        .collect();
    let unused = known
        .iter()
        .filter(|k| !carriers.iter().any(|c| c.name == **k))
        .map(|k| k.to_string())
        .collect();
    Ok(CheckedTable {
        table,
        predictor,
        unknown,
        unused,
    })
}

/// The table with every zone widened by `w` metres on both sides (then united by the predictor).
pub fn widened_table(t: &HandoverTable, w: f64) -> HandoverTable {
    let mut out = t.clone();
    for cz in out.carriers.values_mut() {
        for z in &mut cz.zones {
            z.start_m -= w;
            z.end_m += w;
        }
    }
    out
}

/// A reload of PHA-D's configuration and table (SIGHUP), already validated.
pub struct Reload {
    pub phad: PhadConfig,
    pub table: CheckedTable,
}

/// One flip as it happened, for the log and for tests.
#[derive(Debug, Clone, PartialEq)]
pub struct FlipEvent {
    pub carrier: String,
    pub backup: bool,
    pub at: Instant,
    /// The position the decision used (dead-reckoned to `at`), if any.
    pub position_m: Option<f64>,
    /// Its error (the zones' widening), metres.
    pub error_m: f64,
    pub dead_reckoning: bool,
}

struct CarrierRt {
    name: String,
    id: u8,
    /// The carrier's interface (counters, drain, link state, probes).
    interface: Option<String>,
    /// The gateway adds, moves and removes the endpoint.
    manage: bool,
    /// The endpoint's flags without BACKUP (as found at start; `subflow` for a new one).
    base_flags: u32,
    v6: Option<bool>,
    ifindex: Option<u32>,
    /// The endpoint's address in the kernel (`None`: removed, for a managed carrier).
    endpoint: Option<IpAddr>,
    /// The interface's address the endpoint should use (`None`: no usable address).
    iface_addr: Option<IpAddr>,
    /// For the probes: the current address.
    probe_src: Arc<Mutex<Option<IpAddr>>>,
    link_up: bool,
    probe: ProbeState,
    /// Wanted PHA-D state (applied to the endpoint while it exists).
    backup: bool,
    drain: DrainTracker,
    counters: Option<Counters>,
    figures: CarrierFigures,
    /// Why it is down, for the log.
    down_why: Option<String>,
}

impl CarrierRt {
    fn follows_interface(&self) -> bool {
        self.interface.is_some()
    }
    fn serviceable(&self) -> bool {
        !self.follows_interface()
            || (self.link_up && self.iface_addr.is_some() && !self.probe.is_down())
    }
}

/// What applies a decision: the kernel, or nothing (dry run).
enum Backend {
    Kernel(PathManager),
    DryRun,
}

/// PHA-D's part: the table, the rule's parameters and its state.
struct Phad {
    table: HandoverTable,
    predictor: Predictor,
    /// The predictor on the table widened by this many metres (dead reckoning).
    widened: Option<(f64, Predictor)>,
    /// Fixed lead time, or `None`: one measured RTT (see [`Metrics::rtt_estimate`]).
    lead: Option<Time>,
    /// Fixed RTT (the return margin before a zone's end), or `None`: measured.
    rtt: Option<Time>,
    stale: Duration,
    dr: DeadReckoningConfig,
    /// `Some` with `phad.adaptive_lead`.
    adaptive: Option<LeadAdapter>,
    /// The lead of the previous tick: while a carrier is backup the lead may grow, not shrink
    /// (a shrinking lead would bring a carrier back ahead of its zone, only to flip it again).
    last_lead: Time,
    fallback_logged: Option<String>,
    dead_reckoning_logged: bool,
    predictor_tx: watch::Sender<Option<Predictor>>,
}

impl Phad {
    fn new(ph: &PhadConfig, t: CheckedTable) -> Phad {
        let (predictor_tx, _) = watch::channel(Some(t.predictor.clone()));
        Phad {
            table: t.table,
            predictor: t.predictor,
            widened: None,
            lead: ph.lead_time().map(to_time),
            rtt: ph.rtt().map(to_time),
            stale: millis(ph.stale_after_ms),
            dr: ph.dead_reckoning,
            adaptive: ph.adaptive_lead.then(LeadAdapter::default),
            last_lead: Time::ZERO,
            fallback_logged: None,
            dead_reckoning_logged: false,
            predictor_tx,
        }
    }

    /// The predictor for zones widened by `error_m`. The widening is exact, not rounded: the
    /// error grows far slower than a moving train, so a zone's widened end stays ahead of the
    /// train only while it is really in it; a rounded widening that jumps by more than the
    /// train moves in a tick would pull the end forward past it and flip the carrier back and
    /// forth.
    fn predictor_for(&mut self, error_m: f64) -> &Predictor {
        if error_m <= 0.0 || !error_m.is_finite() {
            return &self.predictor;
        }
        if self.widened.as_ref().map(|(x, _)| *x) != Some(error_m) {
            let p = Predictor::new(&widened_table(&self.table, error_m));
            self.widened = Some((error_m, p));
        }
        &self.widened.as_ref().expect("set above").1
    }
}

pub struct Controller {
    carriers: Vec<CarrierRt>,
    names: Vec<String>,
    phad: Option<Phad>,
    tick: Duration,
    backend: Backend,
    metrics: Arc<Metrics>,
    /// Time base of the drain measurements.
    origin: Instant,
    health: Option<HealthConfig>,
    figures_every: Option<Duration>,
    figures_logged_at: Instant,
    /// Stall totals per bin at the last figures line.
    stalls_logged: Vec<(f64, f64, u64)>,
    flips_tx: Option<mpsc::UnboundedSender<FlipEvent>>,
    /// Kernel link and address events (managed carriers only).
    net_rx: Option<mpsc::UnboundedReceiver<NetEvent>>,
}

fn to_time(d: Duration) -> Time {
    Time::from_ns(d.as_nanos().min(u64::MAX as u128) as u64)
}

/// Unix time, in milliseconds, of `at` (an instant of the past or now).
fn unix_ms(at: Instant) -> u64 {
    let back = Instant::now().saturating_duration_since(at);
    SystemTime::now()
        .checked_sub(back)
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

impl Controller {
    /// Whether `cfg` gives the controller anything to do: PHA-D, or carriers with an interface to
    /// follow.
    pub fn needed(cfg: &Config) -> bool {
        cfg.phad.is_some() || cfg.carriers.iter().any(|c| c.interface.is_some())
    }

    /// Loads the table, opens the path manager, resolves and checks every endpoint, sets every
    /// carrier regular and reads the carriers' interfaces. Errors say what to fix.
    pub fn new(cfg: &Config, metrics: Arc<Metrics>) -> Result<Controller, String> {
        let now = Instant::now();
        let phad = match &cfg.phad {
            Some(ph) => {
                let t = load_table(ph, &cfg.carriers)?;
                for u in &t.unknown {
                    error!(
                        carrier = %u,
                        table = %ph.table.display(),
                        known = ?t.predictor.known_carriers(),
                        "carrier is not in the handover table: it will stay regular (never flipped)"
                    );
                }
                for u in &t.unused {
                    warn!(carrier = %u, "handover table carrier has no [[carrier]] entry; ignored");
                }
                Some(Phad::new(ph, t))
            }
            None => None,
        };
        let dry_run = cfg.phad.as_ref().is_some_and(|p| p.dry_run);
        let mut backend = if dry_run {
            Backend::DryRun
        } else {
            Backend::Kernel(PathManager::open().map_err(|e| e.to_string())?)
        };
        let existing = match &mut backend {
            Backend::Kernel(pm) => pm.endpoints().map_err(|e| e.to_string())?,
            Backend::DryRun => Vec::new(),
        };
        let failures = cfg.health.as_ref().map(|h| h.failures).unwrap_or(1);
        let mut carriers = Vec::new();
        for c in &cfg.carriers {
            let manage = c.interface.is_some() && c.manage_endpoint && !dry_run;
            let id = match (dry_run, c.endpoint_id, c.endpoint_addr) {
                (_, Some(id), _) => id,
                (false, None, Some(a)) => existing
                    .iter()
                    .find(|e| e.addr == Some(a))
                    .map(|e| e.id)
                    .ok_or_else(|| {
                        format!(
                            "carrier {:?}: endpoint_addr {a}: MPTCP endpoint with address {a} is not configured (see `ip mptcp endpoint show`){}",
                            c.name,
                            if manage { "; give `endpoint_id` to let the gateway create it" } else { "" }
                        )
                    })?,
                (true, None, Some(_)) => 0,
                (_, None, None) => {
                    return Err(format!(
                        "carrier {:?}: expected endpoint_id or endpoint_addr",
                        c.name
                    ))
                }
            };
            let found = existing.iter().find(|e| e.id == id);
            if !dry_run && found.is_none() && !manage {
                return Err(format!(
                    "carrier {:?}: {}",
                    c.name,
                    PmError::NoEndpoint(format!("id {id}"))
                ));
            }
            match found {
                Some(e) => {
                    info!(carrier = %c.name, endpoint = e.id, addr = ?e.addr, backup = e.is_backup(), managed = manage, "carrier endpoint")
                }
                None if !dry_run => {
                    info!(carrier = %c.name, endpoint = id, "carrier endpoint not configured yet: the gateway adds it when the interface has an address")
                }
                None => {}
            }
            let addr = found.and_then(|e| e.addr);
            carriers.push(CarrierRt {
                name: c.name.clone(),
                id,
                interface: c.interface.clone(),
                manage,
                base_flags: found
                    .map(|e| e.flags & !pm::MPTCP_PM_ADDR_FLAG_BACKUP)
                    .unwrap_or(pm::MPTCP_PM_ADDR_FLAG_SUBFLOW),
                v6: addr.map(|a| a.is_ipv6()),
                ifindex: found.and_then(|e| e.ifindex).map(|i| i as u32),
                endpoint: addr,
                iface_addr: addr,
                probe_src: Arc::new(Mutex::new(addr)),
                link_up: true,
                probe: ProbeState::new(failures),
                backup: false, // set for real by init_regular below
                drain: DrainTracker::new(DrainParams::default()),
                counters: None,
                figures: CarrierFigures::new(now, true),
                down_why: None,
            });
        }
        let net_rx = if carriers.iter().any(|c| c.follows_interface()) && !dry_run {
            let (tx, rx) = mpsc::unbounded_channel();
            netmon::watch(tx)
                .map_err(|e| format!("cannot follow the carriers' interfaces (rtnetlink): {e}"))?;
            Some(rx)
        } else {
            None
        };
        let mut ctl = Controller {
            names: carriers.iter().map(|c| c.name.clone()).collect(),
            carriers,
            tick: cfg
                .phad
                .as_ref()
                .map(|p| millis(p.tick_ms))
                .unwrap_or(Duration::from_millis(10)),
            phad,
            backend,
            metrics,
            origin: now,
            health: cfg.health.clone(),
            figures_every: (cfg.figures.log_every_s > 0.0)
                .then(|| Duration::from_secs_f64(cfg.figures.log_every_s)),
            figures_logged_at: now,
            stalls_logged: Vec::new(),
            flips_tx: None,
            net_rx,
        };
        ctl.init_regular();
        if ctl.net_rx.is_some() {
            ctl.reconcile(now, now);
        }
        Ok(ctl)
    }

    /// The handover table's predictor in use (replaced on reload), for the handover logger.
    pub fn predictor(&self) -> watch::Receiver<Option<Predictor>> {
        match &self.phad {
            Some(p) => p.predictor_tx.subscribe(),
            None => watch::channel(None).1,
        }
    }

    /// Every flip is also sent to `tx`.
    pub fn on_flip(&mut self, tx: mpsc::UnboundedSender<FlipEvent>) {
        self.flips_tx = Some(tx);
    }

    /// Applies a validated reload: the new table and PHA-D parameters (the tick period stays).
    pub fn reload(&mut self, r: Reload) {
        let Some(p) = &mut self.phad else {
            warn!("reload: [phad] was not configured at start; a restart is needed to add it");
            return;
        };
        let adaptive = if r.phad.adaptive_lead {
            p.adaptive.take().or_else(|| Some(LeadAdapter::default()))
        } else {
            None
        };
        let tx = p.predictor_tx.clone();
        let mut n = Phad::new(&r.phad, r.table);
        n.adaptive = adaptive;
        n.last_lead = p.last_lead;
        n.fallback_logged = p.fallback_logged.take();
        tx.send_replace(Some(n.predictor.clone()));
        n.predictor_tx = tx;
        *p = n;
        info!(table = %r.phad.table.display(), "PHA-D reloaded: new table and parameters in use");
    }

    fn metric(&self, i: usize) -> Option<&crate::metrics::CarrierMetrics> {
        self.metrics.carrier(&self.carriers[i].name)
    }

    /// Records the wanted state of carrier `i` and applies it to its endpoint if it exists.
    fn set(
        &mut self,
        i: usize,
        backup: bool,
        why: &str,
        flip: Option<&FlipEvent>,
    ) -> Result<(), PmError> {
        let c = &self.carriers[i];
        let present = !c.manage || c.endpoint.is_some();
        if present {
            if let Backend::Kernel(pm) = &mut self.backend {
                pm.set_backup(c.id, backup)?;
            }
        }
        let c = &mut self.carriers[i];
        let was = c.backup;
        c.backup = backup;
        if let Some(m) = self.metrics.carriers.iter().find(|m| m.name == c.name) {
            m.backup.store(backup as i64, Relaxed);
            if was != backup {
                if backup {
                    m.flips_to_backup.fetch_add(1, Relaxed);
                } else {
                    m.flips_to_regular.fetch_add(1, Relaxed);
                }
            }
        }
        let (position_m, error_m, dr) = flip
            .map(|f| (f.position_m, f.error_m, f.dead_reckoning))
            .unwrap_or((None, 0.0, false));
        info!(carrier = %c.name, endpoint = c.id, state = if backup { "backup" } else { "regular" }, reason = why,
            position_m, error_m, dead_reckoning = dr, endpoint_present = present, "PHA-D flip");
        if let (Some(tx), Some(f)) = (&self.flips_tx, flip) {
            let _ = tx.send(f.clone());
        }
        Ok(())
    }

    /// At start the endpoints' state is unknown: make every carrier regular without counting
    /// flips.
    fn init_regular(&mut self) {
        for i in 0..self.carriers.len() {
            let (id, present) = (
                self.carriers[i].id,
                !self.carriers[i].manage || self.carriers[i].endpoint.is_some(),
            );
            let r = match &mut self.backend {
                Backend::Kernel(pm) if present => pm.set_backup(id, false),
                _ => Ok(()),
            };
            match r {
                Ok(()) => self.carriers[i].backup = false,
                Err(e) => self.flip_error(i, &e),
            }
        }
    }

    /// Sets every backup carrier regular, and puts back the endpoints of managed carriers that
    /// have an address (shutdown: the kernel carries on alone).
    pub fn set_all_regular(&mut self, why: &str) {
        for i in 0..self.carriers.len() {
            if self.carriers[i].backup {
                if let Err(e) = self.set(i, false, why, None) {
                    self.flip_error(i, &e);
                }
            }
            let c = &self.carriers[i];
            if c.manage && c.endpoint.is_none() {
                if let Some(a) = c.iface_addr {
                    self.add_endpoint(i, a, "shutdown: plain MPTCP without the daemon");
                }
            }
        }
    }

    fn flip_error(&self, i: usize, e: &PmError) {
        let c = &self.carriers[i];
        if let Some(m) = self.metrics.carrier(&c.name) {
            let n = m.flip_errors.fetch_add(1, Relaxed) + 1;
            if n <= 10 || n % 1000 == 0 {
                error!(carrier = %c.name, endpoint = c.id, error = %e, count = n, "path manager request failed");
            }
        }
    }

    fn add_endpoint(&mut self, i: usize, addr: IpAddr, why: &str) {
        let c = &self.carriers[i];
        let flags = c.base_flags
            | if c.backup {
                pm::MPTCP_PM_ADDR_FLAG_BACKUP
            } else {
                0
            };
        let (id, ifindex) = (c.id, c.ifindex);
        let r = match &mut self.backend {
            Backend::Kernel(pm) => pm.add_endpoint(id, addr, flags, ifindex),
            Backend::DryRun => Ok(()),
        };
        match r {
            Ok(()) => {
                let c = &mut self.carriers[i];
                c.endpoint = Some(addr);
                c.v6 = Some(addr.is_ipv6());
                info!(carrier = %c.name, endpoint = id, addr = %addr, backup = c.backup, reason = why, "endpoint added");
                if let Some(m) = self.metric(i) {
                    m.endpoint_changes.fetch_add(1, Relaxed);
                }
            }
            Err(e) => self.flip_error(i, &e),
        }
    }

    fn del_endpoint(&mut self, i: usize, why: &str) {
        let id = self.carriers[i].id;
        let r = match &mut self.backend {
            Backend::Kernel(pm) => pm.del_endpoint(id).or_else(|e| match pm.endpoint(id) {
                // Already gone (removed by hand or by another daemon): the aim is reached.
                Err(PmError::NoEndpoint(_)) => Ok(()),
                _ => Err(e),
            }),
            Backend::DryRun => Ok(()),
        };
        match r {
            Ok(()) => {
                let c = &mut self.carriers[i];
                info!(carrier = %c.name, endpoint = id, addr = ?c.endpoint, reason = why, "endpoint removed");
                c.endpoint = None;
                if let Some(m) = self.metric(i) {
                    m.endpoint_changes.fetch_add(1, Relaxed);
                }
            }
            Err(e) => self.flip_error(i, &e),
        }
    }

    /// Reads the carriers' interfaces afresh and brings every carrier in line; `at` is when the
    /// change that prompted it happened.
    fn reconcile(&mut self, now: Instant, at: Instant) {
        let names: Vec<String> = self
            .carriers
            .iter()
            .filter_map(|c| c.interface.clone())
            .collect();
        if names.is_empty() {
            return;
        }
        let snap = match netmon::snapshot(&names) {
            Ok(s) => s,
            Err(e) => {
                error!(error = %e, "cannot read the carriers' interfaces");
                return;
            }
        };
        for i in 0..self.carriers.len() {
            let Some(ifname) = self.carriers[i].interface.clone() else {
                continue;
            };
            let st = snap.get(&ifname);
            let c = &mut self.carriers[i];
            let link_up = st.is_some_and(|s| s.up);
            let addr = st.and_then(|s| s.endpoint_addr(c.endpoint.or(c.iface_addr), c.v6));
            if link_up && !c.link_up {
                // A link that comes back starts again as working; the probes judge it anew.
                c.probe.reset();
            }
            c.link_up = link_up;
            c.iface_addr = addr;
            if let Some(s) = st {
                c.ifindex = Some(s.index);
            }
            *c.probe_src.lock().unwrap_or_else(|e| e.into_inner()) = addr;
            c.down_why = if st.is_none() {
                Some(format!("interface {ifname} is gone"))
            } else if !link_up {
                Some(format!("interface {ifname} is down"))
            } else if addr.is_none() {
                Some(format!("interface {ifname} has no usable address"))
            } else if c.probe.is_down() {
                Some("probes unanswered".to_string())
            } else {
                None
            };
            self.apply(i, now, at);
        }
    }

    /// Brings carrier `i`'s figures and endpoint in line with its state.
    fn apply(&mut self, i: usize, now: Instant, at: Instant) {
        let serviceable = self.carriers[i].serviceable();
        let c = &mut self.carriers[i];
        if serviceable != c.figures.is_up() {
            let ev = if serviceable {
                c.figures.up(now, at, c.backup)
            } else {
                c.figures.down(now, at, c.backup)
            };
            let (name, why) = (c.name.clone(), c.down_why.clone());
            if let Some(m) = self.metric(i) {
                m.up.store(serviceable as i64, Relaxed);
                if serviceable {
                    m.last_up_unix_ms.store(unix_ms(at), Relaxed);
                } else {
                    m.failures.fetch_add(1, Relaxed);
                    m.last_down_unix_ms.store(unix_ms(at), Relaxed);
                }
            }
            if serviceable {
                info!(carrier = %name, event = "up", at_unix_s = unix_ms(at) as f64 / 1e3, "carrier up");
            } else {
                warn!(carrier = %name, event = "down", reason = why.as_deref().unwrap_or(""), at_unix_s = unix_ms(at) as f64 / 1e3, "carrier down");
            }
            if let Some(e) = ev {
                self.carrier_event(i, e);
            }
        }
        let c = &self.carriers[i];
        if !c.manage {
            return;
        }
        match (c.endpoint, serviceable, c.iface_addr) {
            (Some(a), true, Some(b)) if a == b => {}
            (Some(a), true, Some(b)) => {
                let why = format!("address changed from {a} to {b}");
                self.del_endpoint(i, &why);
                if self.carriers[i].endpoint.is_none() {
                    self.add_endpoint(i, b, &why);
                }
            }
            (Some(_), false, _) => {
                let why = self.carriers[i]
                    .down_why
                    .clone()
                    .unwrap_or_else(|| "carrier down".into());
                self.del_endpoint(i, &why);
            }
            (None, true, Some(b)) => self.add_endpoint(i, b, "carrier up"),
            _ => {}
        }
    }

    fn carrier_event(&self, i: usize, e: CarrierEvent) {
        let name = &self.carriers[i].name;
        let m = self.metric(i);
        match e {
            CarrierEvent::Failover { lost_at, failover } => {
                if let Some(m) = m {
                    let us = failover.as_micros() as u64;
                    m.failover_last_us.store(us, Relaxed);
                    m.failover_sum_us.fetch_add(us, Relaxed);
                    m.failovers.fetch_add(1, Relaxed);
                    m.last_failover_unix_ms
                        .store(unix_ms(Instant::now()), Relaxed);
                }
                info!(carrier = %name, event = "failover", lost_at_unix_s = unix_ms(lost_at) as f64 / 1e3,
                    failover_s = failover.as_secs_f64(), "traffic moved to the other carriers");
            }
            CarrierEvent::Failback { back_at, failback } => {
                if let Some(m) = m {
                    let us = failback.as_micros() as u64;
                    m.failback_last_us.store(us, Relaxed);
                    m.failback_sum_us.fetch_add(us, Relaxed);
                    m.failbacks.fetch_add(1, Relaxed);
                    m.last_failback_unix_ms
                        .store(unix_ms(Instant::now()), Relaxed);
                }
                info!(carrier = %name, event = "failback", back_at_unix_s = unix_ms(back_at) as f64 / 1e3,
                    failback_s = failback.as_secs_f64(), "traffic back on the carrier");
            }
            CarrierEvent::FailoverDropped { lost_at } => {
                info!(carrier = %name, event = "failover_not_measured", lost_at_unix_s = unix_ms(lost_at) as f64 / 1e3,
                    "carrier back before traffic moved elsewhere: no failover time");
            }
            CarrierEvent::FailbackDropped { back_at } => {
                info!(carrier = %name, event = "failback_not_measured", back_at_unix_s = unix_ms(back_at) as f64 / 1e3,
                    "carrier down again before traffic came back: no failback time");
            }
        }
    }

    /// A probe's result.
    fn probe_result(&mut self, r: ProbeResult, now: Instant) {
        let Some(c) = self.carriers.get_mut(r.carrier) else {
            return;
        };
        if !r.ok {
            if let Some(m) = self.metrics.carrier(&c.name) {
                m.probe_failures.fetch_add(1, Relaxed);
            }
        }
        let at = match c.probe.result(r) {
            Some(Verdict::Down { since }) => {
                c.down_why = Some("probes unanswered".into());
                since
            }
            Some(Verdict::Up { since }) => {
                c.down_why = None;
                since
            }
            None => return,
        };
        self.apply(r.carrier, now, at);
    }

    /// The rule's parameters for this tick: (lead, back).
    fn margins(&mut self) -> Option<(Time, Time)> {
        let any_backup = self.carriers.iter().any(|c| c.backup);
        let m = self.metrics.clone();
        let p = self.phad.as_mut()?;
        let rtt = p.rtt.unwrap_or_else(|| {
            m.rtt_estimate()
                .map(to_time)
                .unwrap_or(Time::from_ms_f64(crate::config::DEFAULT_RTT_MS))
        });
        let mut lead = p.lead.unwrap_or(rtt);
        if let Some(a) = &p.adaptive {
            lead = a.lead(rtt, lead);
        }
        if any_backup {
            lead = lead.max(p.last_lead);
        }
        p.last_lead = lead;
        m.lead_us.store(lead.ns() / 1000, Relaxed);
        Some((lead, rtt))
    }

    /// One tick at `now` with position state `st`: the carriers' counters and figures, then the
    /// PHA-D decision, applied. Returns the decisions (one per carrier, in configuration order;
    /// empty without PHA-D).
    pub fn step(&mut self, st: &PositionState, now: Instant) -> Vec<CarrierDecision> {
        self.sample_carriers(now);
        let est = self
            .phad
            .as_ref()
            .map(|p| position::estimate(st, now, p.stale, &p.dr));
        // Where the train is now, for the stall figures.
        let here = match &est {
            Some(Estimate::Known { fix, age, .. }) => {
                Some(fix.position_m + fix.speed_mps * age.as_secs_f64())
            }
            _ => None,
        };
        self.metrics.stall_book().position(now, here);
        self.log_figures(now);
        let Some((lead, rtt)) = self.margins() else {
            return Vec::new();
        };
        let est = est.expect("PHA-D configured");
        let (fix, error_m, dr, why_lost) = match &est {
            Estimate::Known {
                fix,
                age,
                error_m,
                dead_reckoning,
            } => (Some((*fix, to_time(*age))), *error_m, *dead_reckoning, None),
            Estimate::Lost(why) => (None, 0.0, false, Some(why.clone())),
        };
        self.metrics.dead_reckoning.store(dr as i64, Relaxed);
        self.metrics
            .position_error_mm
            .store((error_m * 1000.0) as u64, Relaxed);
        let p = self.phad.as_mut().expect("PHA-D configured");
        match (dr, p.dead_reckoning_logged) {
            (true, false) => {
                warn!(reason = ?st_reason(st), "no fresh position: dead reckoning from the last fix, zones widened by the growing error")
            }
            (false, true) if fix.is_some() => info!("fresh position again: dead reckoning ended"),
            _ => {}
        }
        p.dead_reckoning_logged = dr;
        let serviceable: Vec<String> = self
            .carriers
            .iter()
            .filter(|c| c.serviceable())
            .map(|c| c.name.clone())
            .collect();
        let down_exist = serviceable.len() < self.names.len();
        let p = self.phad.as_mut().expect("PHA-D configured");
        let stale = Time::MAX;
        let pred = p.predictor_for(error_m);
        let live = phad::decide(pred, &serviceable, fix, lead, rtt, stale);
        // A carrier that is down keeps the state the rule would give it with every carrier, so
        // that it comes back in it.
        let all = if down_exist {
            phad::decide(pred, &self.names, fix, lead, rtt, stale)
        } else {
            Vec::new()
        };
        let ds: Vec<CarrierDecision> = self
            .names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                live.iter()
                    .find(|d| d.carrier == *n)
                    .or_else(|| all.get(i))
                    .cloned()
                    .expect("a decision per carrier")
            })
            .collect();
        let fallback = why_lost.map(|why| match st {
            PositionState::Unknown(w) if w == &why => why,
            _ => why,
        });
        match (&fallback, &p.fallback_logged) {
            (Some(why), None) => {
                warn!(reason = %why, "position lost or stale: all carriers regular");
                self.metrics.fallbacks_all_regular.fetch_add(1, Relaxed);
                self.metrics.position_valid.store(0, Relaxed);
            }
            (None, Some(_)) => {
                info!("position back: PHA-D active");
                self.metrics.position_valid.store(1, Relaxed);
            }
            (None, None) => self.metrics.position_valid.store(1, Relaxed),
            _ => {}
        }
        p.fallback_logged = fallback;
        let t = to_time(now.saturating_duration_since(self.origin));
        let position_m = fix.map(|(f, age)| f.position_m + f.speed_mps * age.secs_f64());
        for (i, d) in ds.iter().enumerate() {
            if d.backup != self.carriers[i].backup {
                let why = format!("{:?}", d.reason);
                let flip = FlipEvent {
                    carrier: d.carrier.clone(),
                    backup: d.backup,
                    at: now,
                    position_m,
                    error_m,
                    dead_reckoning: dr,
                };
                match self.set(i, d.backup, &why, Some(&flip)) {
                    Err(e) => self.flip_error(i, &e),
                    Ok(()) if d.backup => {
                        let zone_at = match d.reason {
                            Reason::ZoneAhead { enters_in, .. } => t + enters_in,
                            _ => t,
                        };
                        self.carriers[i].drain.flipped_to_backup(t, zone_at);
                    }
                    Ok(()) => {
                        if let Some(done) = self.carriers[i].drain.finish() {
                            self.report_drain(i, done, lead);
                        }
                    }
                }
            }
        }
        ds
    }

    /// Reads every carrier's counters: drain measurements, traffic, figures.
    fn sample_carriers(&mut self, now: Instant) {
        let t = to_time(now.saturating_duration_since(self.origin));
        let lead = self
            .phad
            .as_ref()
            .map(|p| p.last_lead)
            .unwrap_or(Time::ZERO);
        let mut traffic = vec![false; self.carriers.len()];
        let mut drains = Vec::new();
        for (i, (c, busy)) in self.carriers.iter_mut().zip(&mut traffic).enumerate() {
            let Some(cur) = c.interface.as_deref().and_then(figures::read_counters) else {
                continue;
            };
            if let Some(prev) = c.counters.replace(cur) {
                *busy = figures::is_traffic(&prev, &cur);
            }
            if let Some(done) = c.drain.sample(t, cur.rx_bytes) {
                drains.push((i, done));
            }
        }
        for (i, done) in drains {
            self.report_drain(i, done, lead);
        }
        for i in 0..self.carriers.len() {
            let other = (0..self.carriers.len())
                .any(|j| j != i && traffic[j] && self.carriers[j].figures.is_up());
            let c = &mut self.carriers[i];
            let removed = !c.manage || c.endpoint.is_none();
            let present_backup = c.backup && !removed;
            let ev = c.figures.tick(
                now,
                present_backup || (!c.manage && c.backup),
                removed,
                traffic[i],
                other,
            );
            if let Some(m) = self.metrics.carriers.iter().find(|m| m.name == c.name) {
                m.up_us.store(c.figures.up_time.as_micros() as u64, Relaxed);
                m.down_us
                    .store(c.figures.down_time.as_micros() as u64, Relaxed);
                m.backup_us
                    .store(c.figures.backup_time.as_micros() as u64, Relaxed);
            }
            if let Some(e) = ev {
                self.carrier_event(i, e);
            }
        }
    }

    /// The figures' lines in the JSON log, every `figures.log_every_s`.
    fn log_figures(&mut self, now: Instant) {
        let Some(every) = self.figures_every else {
            return;
        };
        if now < self.figures_logged_at + every {
            return;
        }
        self.figures_logged_at = now;
        for c in &self.carriers {
            let f = &c.figures;
            let m = self.metrics.carrier(&c.name);
            let get = |g: fn(&crate::metrics::CarrierMetrics) -> u64| m.map(g).unwrap_or(0);
            info!(
                carrier = %c.name,
                figures = "carrier",
                up = f.is_up(),
                availability = f.availability(),
                up_s = f.up_time.as_secs_f64(),
                down_s = f.down_time.as_secs_f64(),
                backup_s = f.backup_time.as_secs_f64(),
                failures = get(|m| m.failures.load(Relaxed)),
                last_failover_s = get(|m| m.failover_last_us.load(Relaxed)) as f64 / 1e6,
                failovers = get(|m| m.failovers.load(Relaxed)),
                last_failback_s = get(|m| m.failback_last_us.load(Relaxed)) as f64 / 1e6,
                failbacks = get(|m| m.failbacks.load(Relaxed)),
                "carrier figures"
            );
        }
        let (bins, unknown) = {
            let b = self.metrics.stall_book();
            (b.bins(), b.unknown())
        };
        for (m, secs, n) in &bins {
            let before = self
                .stalls_logged
                .iter()
                .find(|(x, _, _)| x == m)
                .map(|(_, s, k)| (*s, *k))
                .unwrap_or((0.0, 0));
            if *secs > before.0 || *n > before.1 {
                info!(
                    figures = "stall",
                    position_m = *m,
                    stall_s = secs - before.0,
                    stalls = n - before.1,
                    stall_s_total = *secs,
                    "stall figures"
                );
            }
        }
        if unknown.1 > 0 {
            info!(
                figures = "stall",
                position_m = "unknown",
                stall_s_total = unknown.0,
                stalls_total = unknown.1,
                "stall figures"
            );
        }
        self.stalls_logged = bins;
    }

    /// Publishes a finished drain measurement; a late flip is a warning naming the fix.
    fn report_drain(&mut self, i: usize, d: Drain, lead: Time) {
        if let Some(a) = self.phad.as_mut().and_then(|p| p.adaptive.as_mut()) {
            a.observe(&d);
        }
        let c = &self.carriers[i];
        let late = d.slack_s < 0.0;
        if let Some(m) = self.metrics.carriers.iter().find(|m| m.name == c.name) {
            m.drain_us.store(d.drain.ns() / 1000, Relaxed);
            m.drains_measured.fetch_add(1, Relaxed);
            if late {
                m.late_flips.fetch_add(1, Relaxed);
            }
        }
        let (drain_ms, slack_ms) = (d.drain.ms_f64(), d.slack_s * 1000.0);
        let rate_mbps = d.reference_rate * 8.0 / 1e6;
        if late {
            warn!(carrier = %c.name, drain_ms, slack_ms, rate_mbps, lead_ms = lead.ms_f64(),
                "carrier still receiving when its zone began: the sender's queue outlasted the lead; raise phad.lead_time_ms above the drain time");
        } else {
            info!(carrier = %c.name, drain_ms, slack_ms, rate_mbps, "backup drain measured");
        }
    }

    /// Starts one probe task per carrier with an interface (with `[health]`); results come back
    /// on the returned channel.
    fn start_probes(&self) -> Option<mpsc::UnboundedReceiver<ProbeResult>> {
        let h = self.health.clone()?;
        if matches!(self.backend, Backend::DryRun) {
            return None;
        }
        let (tx, rx) = mpsc::unbounded_channel();
        for (i, c) in self.carriers.iter().enumerate() {
            let Some(ifname) = c.interface.clone() else {
                continue;
            };
            let (tx, src, h) = (tx.clone(), c.probe_src.clone(), h.clone());
            tokio::spawn(async move {
                let mut every = tokio::time::interval(millis(h.interval_ms));
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                let mut seq = 0u64;
                loop {
                    every.tick().await;
                    if tx.is_closed() {
                        return;
                    }
                    let Some(addr) = *src.lock().unwrap_or_else(|e| e.into_inner()) else {
                        continue;
                    };
                    let (tx, ifname, s) = (tx.clone(), ifname.clone(), seq);
                    seq += 1;
                    let timeout = millis(h.timeout_ms);
                    tokio::spawn(async move {
                        let sent = Instant::now();
                        let ok = crate::health::probe(addr, &ifname, h.probe, timeout)
                            .await
                            .unwrap_or(false);
                        let _ = tx.send(ProbeResult {
                            carrier: i,
                            seq: s,
                            sent,
                            ok,
                        });
                    });
                }
            });
        }
        Some(rx)
    }

    /// Runs `f` on this worker without stalling the runtime's other tasks (netlink requests
    /// block; on a multi-threaded runtime the worker hands its other tasks, the proxy's relays,
    /// to the other workers meanwhile).
    fn blocking<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let multi = tokio::runtime::Handle::current().runtime_flavor()
            == tokio::runtime::RuntimeFlavor::MultiThread;
        if multi {
            tokio::task::block_in_place(|| f(self))
        } else {
            f(self)
        }
    }

    /// Runs until `shutdown` resolves, then sets every carrier regular.
    pub async fn run(
        self,
        rx: watch::Receiver<PositionState>,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        let (_keep, reloads) = mpsc::unbounded_channel();
        self.run_with_reloads(rx, reloads, shutdown).await
    }

    /// [`Controller::run`], taking SIGHUP reloads from `reloads`.
    pub async fn run_with_reloads(
        mut self,
        mut rx: watch::Receiver<PositionState>,
        mut reloads: mpsc::UnboundedReceiver<Reload>,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        let mut tick = tokio::time::interval(self.tick);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut resync = tokio::time::interval(Duration::from_secs(5));
        resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut net_rx = self.net_rx.take();
        let mut probes = self.start_probes();
        // When the source ends (a replay without `loop`), keep ticking: its last fix goes stale
        // and the rule falls back to all regular.
        let mut source_open = true;
        let mut reloads_open = true;
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                _ = tick.tick() => {}
                r = rx.changed(), if source_open => {
                    if r.is_err() {
                        info!("position source ended");
                        source_open = false;
                    }
                }
                ev = async { net_rx.as_mut()?.recv().await }, if net_rx.is_some() => {
                    match ev {
                        Some(ev) => {
                            // Take every event already queued: one reconciliation for a burst.
                            let mut at = ev.at;
                            if let Some(r) = net_rx.as_mut() {
                                while let Ok(e) = r.try_recv() {
                                    at = at.min(e.at);
                                }
                            }
                            self.blocking(|c| c.reconcile(Instant::now(), at));
                        }
                        None => net_rx = None,
                    }
                    continue;
                }
                _ = resync.tick(), if self.carriers.iter().any(|c| c.manage) => {
                    let now = Instant::now();
                    self.blocking(|c| c.reconcile(now, now));
                    continue;
                }
                r = async { probes.as_mut()?.recv().await }, if probes.is_some() => {
                    match r {
                        Some(r) => self.blocking(|c| c.probe_result(r, Instant::now())),
                        None => probes = None,
                    }
                    continue;
                }
                r = reloads.recv(), if reloads_open => {
                    match r {
                        Some(r) => self.reload(r),
                        None => reloads_open = false,
                    }
                    continue;
                }
            }
            let st = rx.borrow_and_update().clone();
            // A flip is a synchronous netlink request in which the kernel sends MP_PRIO on every
            // live subflow of the endpoint (about 11 us each: 10-25 ms with 1000 connections).
            self.blocking(|c| c.step(&st, Instant::now()));
        }
        self.blocking(|c| c.set_all_regular("shutdown"));
        info!("controller stopped; all carriers regular");
    }
}

/// The source's own reason for having no fresh fix, for the log.
fn st_reason(st: &PositionState) -> String {
    match st {
        PositionState::Lost { why, .. } | PositionState::Unknown(why) => why.clone(),
        PositionState::Fix { .. } => "no fix for longer than phad.stale_after_ms".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::phad::Fix;
    use std::time::Duration;

    fn setup(table: &str) -> (Config, std::path::PathBuf) {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, Relaxed);
        let dir = std::env::temp_dir().join(format!("rp-gw-ctl-{}-{n}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let t = dir.join("table.json");
        std::fs::write(&t, table).unwrap();
        let cfg = Config::parse(
            &format!(
                "[phad]\ntable = {:?}\nrtt_ms = 100\ndry_run = true\nposition = {{ source = \"replay\", path = \"/nonexistent\" }}\n\
                 [[carrier]]\nname = \"A\"\nendpoint_id = 1\n[[carrier]]\nname = \"B\"\nendpoint_id = 2\n[[carrier]]\nname = \"Q\"\nendpoint_id = 3\n",
                t.display().to_string()
            ),
            "t.toml",
        )
        .unwrap();
        (cfg, dir)
    }

    const TABLE: &str = r#"{"format": "railpath-handover-table/1", "gps_error_m": 20.0, "runs": 1,
        "carriers": {"A": {"zones": [{"start_m": 1000.0, "end_m": 1100.0, "count": 1}], "runs": 1},
                     "B": {"zones": [], "runs": 1}, "Z": {"zones": [], "runs": 1}}}"#;

    #[test]
    fn adaptive_lead_shrinks_only_between_zones() {
        let (mut cfg, dir) = setup(TABLE);
        let ph = cfg.phad.as_mut().unwrap();
        ph.lead_time_ms = Some(800.0);
        ph.adaptive_lead = true;
        let m = Metrics::new(&[("A".into(), None), ("B".into(), None), ("Q".into(), None)]);
        let mut c = Controller::new(&cfg, m.clone()).unwrap();
        let now = Instant::now();
        let at = |pos: f64| PositionState::Fix {
            fix: Fix {
                position_m: pos,
                speed_mps: 100.0,
            },
            at: now,
        };
        // 925 m: zone A [1000, 1100] in 750 ms <= 800 ms -> backup.
        assert!(c.step(&at(925.0), now)[0].backup);
        // A 100 ms drain: adaptive lead RTT 100 + 125 = 225 ms. At 930 m (700 ms ahead) A stays
        // backup: the lead does not shrink while a carrier is backup.
        c.phad
            .as_mut()
            .unwrap()
            .adaptive
            .as_mut()
            .unwrap()
            .observe(&Drain {
                drain: Time::from_ms(100),
                slack_s: 0.6,
                reference_rate: 2.5e6,
            });
        assert!(c.step(&at(930.0), now)[0].backup);
        assert_eq!(m.lead_us.load(Relaxed), 800_000);
        // Past the zone: regular, and from the next tick on the lead is 225 ms.
        assert!(!c.step(&at(1101.0), now)[0].backup);
        c.step(&at(1101.0), now);
        assert_eq!(m.lead_us.load(Relaxed), 225_000);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn lead_time_follows_the_measured_rtt_when_not_configured() {
        let (cfg, dir) = setup(TABLE);
        let mut cfg = cfg;
        cfg.phad.as_mut().unwrap().rtt_ms = None;
        let m = Metrics::new(&[("A".into(), None), ("B".into(), None), ("Q".into(), None)]);
        let mut c = Controller::new(&cfg, m.clone()).unwrap();
        let now = Instant::now();
        // 985 m at 100 m/s: zone A starts in 150 ms.
        let st = PositionState::Fix {
            fix: Fix {
                position_m: 985.0,
                speed_mps: 100.0,
            },
            at: now,
        };
        // No sample yet: 100 ms default -> not yet.
        assert!(!c.step(&st, now)[0].backup);
        // Measured 200 ms -> backup.
        m.observe_rtt_us(200_000);
        assert!(c.step(&st, now)[0].backup);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn table_check_reports_unknown_and_unused_carriers() {
        let (cfg, dir) = setup(TABLE);
        let t = load_table(cfg.phad.as_ref().unwrap(), &cfg.carriers).unwrap();
        assert_eq!(t.unknown, ["Q"]);
        assert_eq!(t.unused, ["Z"]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn malformed_table_is_a_clear_error() {
        let (cfg, dir) = setup(r#"{"format": "railpath-handover-table/1", "gps_error_m": "x"}"#);
        let e = load_table(cfg.phad.as_ref().unwrap(), &cfg.carriers)
            .err()
            .unwrap();
        assert!(e.contains("table.json") && e.contains("gps_error_m"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn dry_run_controller_flips_counts_and_falls_back() {
        let (cfg, dir) = setup(TABLE);
        let m = Metrics::new(&[("A".into(), None), ("B".into(), None), ("Q".into(), None)]);
        let mut c = Controller::new(&cfg, m.clone()).unwrap();
        let now = Instant::now();
        let fix = |p: f64| PositionState::Fix {
            fix: Fix {
                position_m: p,
                speed_mps: 100.0,
            },
            at: now,
        };
        let d = c.step(&fix(995.0), now);
        assert!(d[0].backup && !d[1].backup && !d[2].backup);
        assert_eq!(m.carriers[0].flips_to_backup.load(Relaxed), 1);
        assert_eq!(m.carriers[0].backup.load(Relaxed), 1);
        // Same state again: no new flip.
        c.step(&fix(996.0), now);
        assert_eq!(m.carriers[0].flips_to_backup.load(Relaxed), 1);
        // Position lost: A back to regular, fallback counted once.
        c.step(
            &PositionState::Unknown("gpsd closed the connection".into()),
            now,
        );
        c.step(
            &PositionState::Unknown("gpsd closed the connection".into()),
            now,
        );
        assert_eq!(m.carriers[0].flips_to_regular.load(Relaxed), 1);
        assert_eq!(m.fallbacks_all_regular.load(Relaxed), 1);
        assert_eq!(m.position_valid.load(Relaxed), 0);
        // A fix 3 s old (stale_after 2 s), stopped in A's zone: dead-reckoned (error 3 x 1 m/s +
        // 0.3 x 9 / 2 = 4.35 m), so A is backup again.
        let old = PositionState::Fix {
            fix: Fix {
                position_m: 1050.0,
                speed_mps: 0.0,
            },
            at: now,
        };
        let d = c.step(&old, now + Duration::from_secs(3));
        assert!(d[0].backup);
        assert_eq!(m.dead_reckoning.load(Relaxed), 1);
        assert_eq!(m.position_error_mm.load(Relaxed), 4350);
        // Without dead reckoning the stale fix is no position: regular.
        let (mut cfg, dir2) = setup(TABLE);
        cfg.phad.as_mut().unwrap().dead_reckoning.max_s = 0.0;
        let m2 = Metrics::new(&[("A".into(), None), ("B".into(), None), ("Q".into(), None)]);
        let mut c2 = Controller::new(&cfg, m2.clone()).unwrap();
        let d = c2.step(&old, now + Duration::from_secs(3));
        assert!(!d[0].backup);
        assert_eq!(m2.position_valid.load(Relaxed), 0);
        std::fs::remove_dir_all(dir2).unwrap();
        std::fs::remove_dir_all(dir).unwrap();
    }
}
