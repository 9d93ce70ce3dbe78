//! PHA-D on the testbed: railpath-gateway's controller (crates/gateway/src/controller.rs, the
//! loop the onboard daemon runs: the shared decision rule `railpath_radio::phad::decide`, the
//! kernel path manager over netlink, a position source) runs in the router namespace of a
//! `railpath testbed run`, fed a replayed position feed of the scenario's train, and flips the
//! router's MPTCP endpoints to backup and back (the kernel sends MP_PRIO on the live subflows).
//!
//! What the controller is given, so that the kernel run and the simulator's `pha-d` differ only
//! in the stack:
//! - the handover table the simulator would use (`handover_table`, or learned inline from
//!   `handover_table_learn_runs` preliminary runs), written as JSON;
//! - the feed: the train's true position every `train.sample_ms` (10 ms by default) plus the
//!   run's GPS offset (`railpath_sim::mechanisms::pha::gps_offset`, the same draw as the
//!   simulator's), as a replay file aligned with the testbed clock when the controller starts;
//! - `lead_time_ms` = the flow's lead and `rtt_ms` = its margin
//!   (`railpath_sim::mechanisms::pha::phad_lead_back`): the gateway returns a carrier to regular
//!   one `rtt_ms` before a zone's predicted end, and goes backup `lead_time_ms` before it;
//! - tick 10 ms, no adaptive lead (the simulator's rule has none).

use crate::plain::Sidecar;
use railpath_core::Time;
use railpath_gateway::config::Config;
use railpath_gateway::controller::Controller;
use railpath_gateway::metrics::Metrics;
use railpath_gateway::position::{PositionSource, PositionState};
use railpath_linkem::{Testbed, TestbedError};
use railpath_radio::track::Motion;
use railpath_scenario::{MptcpMechanism, Resolved, ScenarioError, TcpMechanism, Transport};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};

/// A testbed run's PHA-D: the scenario the testbed runs and the controller beside it.
pub struct Phad {
    /// The scenario without its flows' `mechanisms` (the controller is the mechanism).
    pub scenario: Resolved,
    dir: PathBuf,
    table: PathBuf,
    lead_ms: f64,
    back_ms: f64,
    feed: Feed,
    /// (carrier, link) of each of the flow's paths.
    carriers: Vec<(String, String)>,
    metrics: Mutex<Option<Arc<Metrics>>>,
}

/// What the controller did in one run, per carrier.
#[derive(Debug, Clone, serde::Serialize)]
pub struct CarrierFlips {
    pub carrier: String,
    pub to_backup: u64,
    pub to_regular: u64,
    pub errors: u64,
}

/// The PHA-D of scenario `s`, if one of its flows asks for it; `dir` receives the table, the
/// feed and the controller's configuration. Errors name the scenario key.
pub fn prepare(s: &Resolved, dir: &Path) -> Result<Option<Phad>, TestbedError> {
    let err =
        |key: String, msg: &str| TestbedError::Scenario(ScenarioError::new(&s.source, key, msg));
    let failed = |m: String| TestbedError::Other(m);
    let not_here = |name: &str| {
        format!("{name:?} is not on the real kernel: the testbed runs pha-d, through railpath-gateway's controller (pha is a sender-side scheduler, simulator only)")
    };
    let mut with: Option<usize> = None;
    for (i, f) in s.flows.iter().enumerate() {
        let key = format!("flow \"{}\".mechanisms", f.id);
        let m = match &f.transport {
            Transport::Mptcp(m) => m,
            Transport::Tcp(t) => match t.mechanisms.first() {
                Some(TcpMechanism::TcpFs(_)) => return Err(err(key, &not_here("tcp-fs"))),
                None => continue,
            },
            Transport::Udp(_) => continue,
        };
        for x in &m.mechanisms {
            match x {
                MptcpMechanism::PhaD { .. } => {}
                MptcpMechanism::Pha(_) | MptcpMechanism::BloatMonitor(_) => {
                    return Err(err(key, &not_here(x.name())))
                }
            }
        }
        if m.mechanisms.is_empty() {
            continue;
        }
        if let Some(j) = with {
            let paths = |i: usize| -> Vec<&str> {
                s.flows[i]
                    .mptcp()
                    .map(|m| m.subflows.iter().map(|sf| sf.path_id.as_str()).collect())
                    .unwrap_or_default()
            };
            if paths(j) != paths(i) {
                return Err(err(
                    key,
                    "the controller flips the router's endpoints for every MPTCP connection: pha-d flows must share their paths",
                ));
            }
        } else {
            with = Some(i);
        }
    }
    let Some(fi) = with else {
        return Ok(None);
    };
    let f = &s.flows[fi];
    let spec = f
        .mptcp()
        .ok_or_else(|| failed(format!("flow {:?} is not an mptcp flow", f.id)))?;
    let radio = s.radio.as_ref().ok_or_else(|| {
        err(
            format!("flow \"{}\".mechanisms", f.id),
            "pha-d needs the train radio model ([train] and [[carrier]])",
        )
    })?;
    if let Some(g) = s
        .flows
        .iter()
        .find(|g| g.mptcp().is_some_and(|m| m.mechanisms.is_empty()))
    {
        return Err(err(
            format!("flow \"{}\".mechanisms", g.id),
            "on the testbed the controller acts on every MPTCP connection of the router: give every mptcp flow pha-d, or none",
        ));
    }
    let end = Time::from_secs_f64(s.run.duration_s);
    let table = railpath_sim::mechanisms::pha::table_of(s, fi, end).map_err(failed)?;
    std::fs::create_dir_all(dir)
        .map_err(|e| failed(format!("cannot create {}: {e}", dir.display())))?;
    let table_path = dir.join("handover-table.json");
    table.save(&table_path).map_err(|e| failed(e.to_string()))?;
    let (lead, back) = railpath_sim::mechanisms::pha::phad_lead_back(s, spec);
    let mut carriers = Vec::new();
    for sf in &spec.subflows {
        let c = sf.carrier.ok_or_else(|| {
            err(
                format!("flow \"{}\".paths", f.id),
                &format!(
                    "pha-d needs every path on a carrier; link {:?} has none",
                    sf.path_id
                ),
            )
        })?;
        carriers.push((radio.carriers[c].id.clone(), sf.path_id.clone()));
    }
    let mut scenario = s.clone();
    for g in &mut scenario.flows {
        if let Transport::Mptcp(m) = &mut g.transport {
            m.mechanisms.clear();
        }
    }
    let motion = Motion::new(&radio.train);
    let offset_m = spec
        .handover_aware()
        .and_then(|m| m.aware())
        .map_or(0.0, |a| {
            railpath_sim::mechanisms::pha::gps_offset(s.run.seed, &f.id, a)
        });
    Ok(Some(Phad {
        feed: Feed {
            offset_m,
            sample: motion.sample_period(),
            motion,
            end,
            path: dir.join("feed.csv"),
        },
        scenario,
        dir: dir.to_path_buf(),
        table: table_path,
        lead_ms: lead.ms_f64(),
        back_ms: back.ms_f64(),
        carriers,
        metrics: Mutex::new(None),
    }))
}

/// The replayed position feed: the train's true position every sample plus the run's GPS offset.
#[derive(Debug, Clone)]
struct Feed {
    motion: Motion,
    offset_m: f64,
    sample: Time,
    end: Time,
    path: PathBuf,
}

impl Feed {
    /// Writes the feed from testbed time `from` (its t_s = 0) to a second past the run's end.
    fn write(&self, from: Time) -> Result<(), String> {
        let mut text = String::from("t_s,position_m,speed_mps\n");
        let last = self.end + Time::from_secs(1);
        let mut k = 0u64;
        loop {
            let dt = self.sample.mul(k);
            let t = from + dt;
            if t > last {
                break;
            }
            text.push_str(&format!(
                "{:.3},{:.3},{:.3}\n",
                dt.secs_f64(),
                self.motion.position_at(t) + self.offset_m,
                self.motion.speed_at(t)
            ));
            k += 1;
        }
        std::fs::write(&self.path, text)
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

/// Stops the controller (every carrier back to regular) when dropped.
struct Running {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Phad {
    /// The gateway configuration for testbed `tb`.
    fn config(&self, tb: &Testbed) -> Result<Config, TestbedError> {
        let mut text = format!(
            "[phad]\ntable = {:?}\nrtt_ms = {}\nlead_time_ms = {}\ntick_ms = 10\nstale_after_ms = 2000\nposition = {{ source = \"replay\", path = {:?} }}\n",
            self.table.display().to_string(),
            self.back_ms,
            self.lead_ms,
            self.feed.path.display().to_string(),
        );
        let mut seen: Vec<&str> = Vec::new();
        for (c, link) in &self.carriers {
            if seen.contains(&c.as_str()) {
                continue;
            }
            seen.push(c);
            text.push_str(&format!(
                "[[carrier]]\nname = {c:?}\nendpoint_id = {}\ninterface = {:?}\n",
                tb.endpoint_id(link)?,
                tb.link_dev(link)?
            ));
        }
        let p = self.dir.join("gateway.toml");
        std::fs::write(&p, &text)
            .map_err(|e| TestbedError::io(format!("cannot write {}", p.display()), e))?;
        Config::parse(&text, &p.display().to_string())
            .map_err(|e| TestbedError::Other(format!("PHA-D controller: {e}")))
    }

    /// The controller as a testbed [`Sidecar`].
    pub fn start(&self, tb: &Testbed) -> Result<Box<dyn std::any::Any>, TestbedError> {
        let cfg = self.config(tb)?;
        let names: Vec<(String, Option<String>)> = cfg
            .carriers
            .iter()
            .map(|c| (c.name.clone(), c.interface.clone()))
            .collect();
        let metrics = Metrics::new(&names);
        *self.metrics.lock().expect("no poisoned lock") = Some(metrics.clone());
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
        let origin = tb.origin();
        // The feed is written inside the thread, just before the source starts playing it, so
        // that its clock and the testbed's agree to within a few milliseconds.
        let feed = self.feed.clone();
        let thread = railpath_linkem::netns::spawn_in(tb.router_ns(), "pha-d", move || {
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    let _ = ready_tx.send(Err(format!("cannot start a runtime: {e}")));
                    return;
                }
            };
            rt.block_on(async move {
                let ctl = match Controller::new(&cfg, metrics.clone()) {
                    Ok(c) => c,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let Some(ph) = cfg.phad.as_ref() else {
                    let _ = ready_tx.send(Err("no [phad] section".into()));
                    return;
                };
                let from = Time(origin.elapsed().as_nanos() as u64);
                let src = feed
                    .write(from)
                    .and_then(|()| PositionSource::open(&ph.position));
                let src = match src {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let (pos_tx, pos_rx) =
                    tokio::sync::watch::channel(PositionState::Unknown("no position yet".into()));
                tokio::spawn(src.run(pos_tx, metrics.clone()));
                let _ = ready_tx.send(Ok(()));
                ctl.run(pos_rx, async {
                    let _ = stop_rx.await;
                })
                .await;
            });
        })?;
        let running = Running {
            stop: Some(stop_tx),
            thread: Some(thread),
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(Box::new(running)),
            Ok(Err(e)) => Err(TestbedError::Other(format!("PHA-D controller: {e}"))),
            Err(_) => Err(TestbedError::Other(
                "PHA-D controller: its thread ended before starting".into(),
            )),
        }
    }

    /// What the controller did in the last run.
    pub fn flips(&self) -> Vec<CarrierFlips> {
        let m = self.metrics.lock().expect("no poisoned lock").clone();
        m.map(|m| {
            m.carriers
                .iter()
                .map(|c| CarrierFlips {
                    carrier: c.name.clone(),
                    to_backup: c.flips_to_backup.load(Relaxed),
                    to_regular: c.flips_to_regular.load(Relaxed),
                    errors: c.flip_errors.load(Relaxed),
                })
                .collect()
        })
        .unwrap_or_default()
    }
}

/// Runs scenario `s` on the testbed, with railpath-gateway's PHA-D controller when a flow asks
/// for `pha-d` (its table, feed and configuration under `work`); the results and the
/// controller's flips (empty without PHA-D).
pub fn run(
    s: &Resolved,
    work: &Path,
) -> Result<
    (
        railpath_sim::RunResults,
        railpath_linkem::EmuReport,
        Vec<CarrierFlips>,
    ),
    TestbedError,
> {
    match prepare(s, work)? {
        None => {
            let (r, rep) = crate::plain::run_scenario_with(s, None)?;
            Ok((r, rep, Vec::new()))
        }
        Some(p) => {
            let start = |tb: &Testbed| p.start(tb);
            let side: Sidecar = &start;
            let (r, rep) = crate::plain::run_scenario_with(&p.scenario, Some(side))?;
            Ok((r, rep, p.flips()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(mechanisms: &str, extra_flow: &str) -> Resolved {
        let text = format!(
            "[run]\nduration_s = 2\nseed = 3\n[train]\nspeed_kmh = 360\n\
             [[carrier]]\nid = \"A\"\nrate_mbps = 25\nenb_spacing_m = 1340\nenb_offset_m = 300\n\
             [[link]]\nid = \"a\"\ncarrier = \"A\"\ndelay_ms = 20\nbuffer_packets = 100\n\
             [[flow]]\nid = \"m\"\nkind = \"mptcp\"\ncc = \"uncoupled-cubic\"\nscheduler = \"linux-default\"\npaths = [\"a\"]\n\
             mechanisms = {mechanisms}\nhandover_table_learn_runs = 2\ngps_error_m = 20\n{extra_flow}"
        );
        railpath_scenario::parse_str(&text, "t.toml")
            .expect("scenario parses")
            .validate()
            .expect("valid")
    }

    fn dir(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("rp-phad-tb-{name}-{}", std::process::id()))
    }

    #[test]
    fn feed_is_the_true_position_plus_the_runs_gps_offset_from_the_start_time() {
        let d = dir("feed");
        let p = prepare(&scenario("[\"pha-d\"]", ""), &d)
            .unwrap()
            .expect("pha-d asked for");
        // The controller runs the plain scenario; its table was written.
        assert!(p.scenario.flows[0].mptcp().unwrap().mechanisms.is_empty());
        assert!(d.join("handover-table.json").exists());
        let offset = p.feed.offset_m;
        assert!(offset.abs() <= 20.0, "{offset}");
        // 360 km/h = 100 m/s, samples every 10 ms: started at testbed time 0.5 s, the feed's
        // t_s = 0 row is the position at 0.5 s (50 m) and t_s = 1.5 its last within 2 s + 1 s.
        p.feed.write(Time::from_ms(500)).unwrap();
        let text = std::fs::read_to_string(d.join("feed.csv")).unwrap();
        let rows: Vec<Vec<f64>> = text
            .lines()
            .skip(1)
            .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
            .collect();
        assert_eq!(rows.len(), 251, "0.5 s .. 3.0 s every 10 ms");
        assert_eq!(rows[0][0], 0.0);
        assert!((rows[0][1] - (50.0 + offset)).abs() < 1e-3, "{:?}", rows[0]);
        assert!(
            (rows[100][1] - (150.0 + offset)).abs() < 1e-3,
            "{:?}",
            rows[100]
        );
        assert!((rows[100][2] - 100.0).abs() < 1e-9);
        // The same offset as the simulator draws for this seed and flow.
        let s = scenario("[\"pha-d\"]", "");
        let aware = s.flows[0].mptcp().unwrap().mechanisms[0].aware().unwrap();
        assert_eq!(
            offset,
            railpath_sim::mechanisms::pha::gps_offset(s.run.seed, &s.flows[0].id, aware)
        );
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn refuses_what_the_kernel_cannot_run() {
        let d = dir("refuse");
        assert!(prepare(&scenario("[]", ""), &d).unwrap().is_none());
        let e = prepare(&scenario("[\"pha\"]", ""), &d)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("flow \"m\".mechanisms") && e.contains("simulator"),
            "{e}"
        );
        // A second MPTCP flow without pha-d would be flipped too: refused, naming it.
        let other =
            "[[flow]]\nid = \"n\"\nkind = \"mptcp\"\ncc = \"uncoupled-cubic\"\npaths = [\"a\"]\n";
        let e = prepare(&scenario("[\"pha-d\"]", other), &d)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("flow \"n\".mechanisms"), "{e}");
        let _ = std::fs::remove_dir_all(d);
    }
}
