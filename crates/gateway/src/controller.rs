//! The PHA-D controller: every tick, the latest position goes through the decision rule
//! ([`crate::phad::decide`]) and each carrier whose wanted state differs from its endpoint's is
//! flipped through the kernel path manager ([`crate::pm`]), which sends MP_PRIO on every live
//! subflow of that endpoint. At start and at shutdown every carrier is set regular, so a stopped
//! or crashed-and-restarted daemon leaves plain MPTCP behind.

use crate::config::{millis, CarrierConfig, Config, PhadConfig};
use crate::drain::{Drain, DrainParams, DrainTracker, LeadAdapter};
use crate::metrics::{iface_counter, Metrics};
use crate::phad::{self, CarrierDecision, Reason};
use crate::pm::{PathManager, PmError};
use crate::position::PositionState;
use railpath_core::Time;
use railpath_radio::table::{HandoverTable, Predictor};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;
use tracing::{error, info, warn};

/// The table checked against the configured carriers.
pub struct CheckedTable {
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
        predictor,
        unknown,
        unused,
    })
}

struct CarrierRt {
    name: String,
    id: u8,
    backup: bool,
    /// The carrier's interface (received-byte counter for the drain measurement).
    interface: Option<String>,
    drain: DrainTracker,
}

/// What applies a decision: the kernel, or nothing (dry run).
enum Backend {
    Kernel(PathManager),
    DryRun,
}

pub struct Controller {
    carriers: Vec<CarrierRt>,
    names: Vec<String>,
    predictor: Predictor,
    /// Fixed lead time, or `None`: one measured RTT (see [`Metrics::rtt_estimate`]).
    lead: Option<Time>,
    /// Fixed RTT (the return margin before a zone's end), or `None`: measured.
    rtt: Option<Time>,
    stale: Time,
    tick: Duration,
    backend: Backend,
    metrics: Arc<Metrics>,
    fallback_logged: Option<String>,
    /// Time base of the drain measurements.
    origin: std::time::Instant,
    /// `Some` with `phad.adaptive_lead`.
    adaptive: Option<LeadAdapter>,
    /// The lead of the previous tick: while a carrier is backup the lead may grow, not shrink
    /// (a shrinking lead would bring a carrier back ahead of its zone, only to flip it again).
    last_lead: Time,
}

fn to_time(d: Duration) -> Time {
    Time::from_ns(d.as_nanos().min(u64::MAX as u128) as u64)
}

impl Controller {
    /// Loads the table, opens the path manager, resolves and checks every endpoint, and sets
    /// every carrier regular. Errors say what to fix.
    pub fn new(cfg: &Config, metrics: Arc<Metrics>) -> Result<Controller, String> {
        let ph = cfg.phad.as_ref().ok_or("no [phad] section")?;
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
        let mut backend = if ph.dry_run {
            Backend::DryRun
        } else {
            Backend::Kernel(PathManager::open().map_err(|e| e.to_string())?)
        };
        let mut carriers = Vec::new();
        for c in &cfg.carriers {
            let id = match (&mut backend, c.endpoint_id, c.endpoint_addr) {
                (_, Some(id), _) => id,
                (Backend::Kernel(pm), None, Some(a)) => pm
                    .endpoint_id_for(a)
                    .map_err(|e| format!("carrier {:?}: endpoint_addr {a}: {e}", c.name))?,
                (Backend::DryRun, None, Some(_)) => 0,
                (_, None, None) => {
                    return Err(format!(
                        "carrier {:?}: expected endpoint_id or endpoint_addr",
                        c.name
                    ))
                }
            };
            carriers.push(CarrierRt {
                name: c.name.clone(),
                id,
                backup: false, // set for real by init_regular below
                interface: c.interface.clone(),
                drain: DrainTracker::new(DrainParams::default()),
            });
        }
        let mut ctl = Controller {
            names: carriers.iter().map(|c| c.name.clone()).collect(),
            carriers,
            predictor: t.predictor,
            lead: ph.lead_time().map(to_time),
            rtt: ph.rtt().map(to_time),
            stale: to_time(millis(ph.stale_after_ms)),
            tick: millis(ph.tick_ms),
            backend,
            metrics,
            fallback_logged: None,
            origin: std::time::Instant::now(),
            adaptive: ph.adaptive_lead.then(LeadAdapter::default),
            last_lead: Time::ZERO,
        };
        if let Backend::Kernel(pm) = &mut ctl.backend {
            for c in &ctl.carriers {
                let e = pm
                    .endpoint(c.id)
                    .map_err(|e| format!("carrier {:?}: {e}", c.name))?;
                info!(carrier = %c.name, endpoint = e.id, addr = ?e.addr, backup = e.is_backup(), "carrier endpoint");
            }
        }
        ctl.init_regular();
        Ok(ctl)
    }

    pub fn predictor(&self) -> &Predictor {
        &self.predictor
    }

    fn set(&mut self, i: usize, backup: bool, why: &str) -> Result<(), PmError> {
        let c = &self.carriers[i];
        if let Backend::Kernel(pm) = &mut self.backend {
            pm.set_backup(c.id, backup)?;
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
        info!(carrier = %c.name, endpoint = c.id, state = if backup { "backup" } else { "regular" }, reason = why, "PHA-D flip");
        Ok(())
    }

    /// At start the endpoints' state is unknown: make every carrier regular without counting
    /// flips.
    fn init_regular(&mut self) {
        for i in 0..self.carriers.len() {
            let id = self.carriers[i].id;
            let r = match &mut self.backend {
                Backend::Kernel(pm) => pm.set_backup(id, false),
                Backend::DryRun => Ok(()),
            };
            match r {
                Ok(()) => self.carriers[i].backup = false,
                Err(e) => self.flip_error(i, &e),
            }
        }
    }

    /// Sets every backup carrier regular (shutdown).
    pub fn set_all_regular(&mut self, why: &str) {
        for i in 0..self.carriers.len() {
            if self.carriers[i].backup {
                if let Err(e) = self.set(i, false, why) {
                    self.flip_error(i, &e);
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

    /// One decision from a position state; applies the changes. Returns the decisions.
    pub fn step(&mut self, st: &PositionState, now: std::time::Instant) -> Vec<CarrierDecision> {
        let fix = match st {
            PositionState::Fix { fix, at } => {
                Some((*fix, to_time(now.saturating_duration_since(*at))))
            }
            PositionState::Unknown(_) => None,
        };
        let rtt = self.rtt.unwrap_or_else(|| {
            self.metrics
                .rtt_estimate()
                .map(to_time)
                .unwrap_or(Time::from_ms_f64(crate::config::DEFAULT_RTT_MS))
        });
        let mut lead = self.lead.unwrap_or(rtt);
        if let Some(a) = &self.adaptive {
            lead = a.lead(rtt, lead);
        }
        if self.carriers.iter().any(|c| c.backup) {
            lead = lead.max(self.last_lead);
        }
        self.last_lead = lead;
        self.metrics.lead_us.store(lead.ns() / 1000, Relaxed);
        let ds = phad::decide(&self.predictor, &self.names, fix, lead, rtt, self.stale);
        let fallback = ds.iter().find_map(|d| match &d.reason {
            Reason::Fallback(r) => Some(match (r, st) {
                (_, PositionState::Unknown(why)) => why.clone(),
                (phad::FallbackReason::Stale, _) => "position is stale".to_string(),
                _ => "no usable position".to_string(),
            }),
            _ => None,
        });
        match (&fallback, &self.fallback_logged) {
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
        self.fallback_logged = fallback;
        let t = to_time(now.saturating_duration_since(self.origin));
        for i in 0..self.carriers.len() {
            let c = &mut self.carriers[i];
            let sample = c.interface.as_deref().and_then(|f| iface_counter(f, "rx"));
            if let Some(done) = sample.and_then(|rx| c.drain.sample(t, rx)) {
                self.report_drain(i, done, lead);
            }
        }
        for (i, d) in ds.iter().enumerate() {
            if d.backup != self.carriers[i].backup {
                let why = format!("{:?}", d.reason);
                match self.set(i, d.backup, &why) {
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

    /// Publishes a finished drain measurement; a late flip is a warning naming the fix.
    fn report_drain(&mut self, i: usize, d: Drain, lead: Time) {
        if let Some(a) = &mut self.adaptive {
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

    /// Runs until `shutdown` resolves, then sets every carrier regular.
    pub async fn run(
        mut self,
        mut rx: watch::Receiver<PositionState>,
        shutdown: impl std::future::Future<Output = ()>,
    ) {
        tokio::pin!(shutdown);
        let mut tick = tokio::time::interval(self.tick);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // When the source ends (a replay without `loop`), keep ticking: its last fix goes stale
        // and the rule falls back to all regular.
        let mut source_open = true;
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
            }
            let st = rx.borrow_and_update().clone();
            // A flip is a synchronous netlink request in which the kernel sends MP_PRIO on every
            // live subflow of the endpoint (about 11 us each: 10-25 ms with 1000 connections).
            // On a multi-threaded runtime the worker hands its other tasks (the proxy's relays)
            // to the other workers for that time instead of stalling them.
            let multi = tokio::runtime::Handle::current().runtime_flavor()
                == tokio::runtime::RuntimeFlavor::MultiThread;
            if multi {
                tokio::task::block_in_place(|| self.step(&st, std::time::Instant::now()));
            } else {
                self.step(&st, std::time::Instant::now());
            }
        }
        self.set_all_regular("shutdown");
        info!("PHA-D controller stopped; all carriers regular");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::phad::Fix;

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
        let now = std::time::Instant::now();
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
        c.adaptive.as_mut().unwrap().observe(&Drain {
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
        let now = std::time::Instant::now();
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
        let now = std::time::Instant::now();
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
        // Stale fix (3 s old with stale_after 2 s): still regular.
        let old = PositionState::Fix {
            fix: Fix {
                position_m: 1050.0,
                speed_mps: 0.0,
            },
            at: now,
        };
        let d = c.step(&old, now + Duration::from_secs(3));
        assert!(!d[0].backup);
        std::fs::remove_dir_all(dir).unwrap();
    }
}
