//! Tunnels: the GPS fix is lost for tens of seconds, just where handovers cluster. A replayed
//! trip (the real replay source and the real controller loop, on tokio's paused clock so that a
//! 170 s trip runs in a moment and every instant is exact) is run twice: with continuous GPS,
//! and with the fix lost in two tunnels. Where the fix is lost the controller dead-reckons from
//! the last fix and widens the zones by the growing error; it must flip at the same places as
//! with continuous GPS, within that error, and fall back to all regular once the bound is
//! passed. The train brakes inside the first tunnel, so the dead-reckoned position really drifts
//! from the truth. With root and kernel MPTCP the flips go to real MPTCP endpoints in a
//! namespace; otherwise (printed) the controller runs in dry-run mode.

mod common;

use common::*;
use railpath_gateway::config::Config;
use railpath_gateway::controller::{Controller, FlipEvent};
use railpath_gateway::metrics::Metrics;
use railpath_gateway::position::{PositionSource, PositionState};
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

/// The true position: 50 m/s, braking at 0.2 m/s^2 from 20 s to 60 s (to 42 m/s), then 42 m/s.
fn truth(t: f64) -> (f64, f64) {
    if t < 20.0 {
        (50.0 * t, 50.0)
    } else if t < 60.0 {
        let d = t - 20.0;
        (1000.0 + 50.0 * d - 0.1 * d * d, 50.0 - 0.2 * d)
    } else {
        (2840.0 + 42.0 * (t - 60.0), 42.0)
    }
}

const TUNNELS: [(f64, f64); 2] = [(25.0, 65.0), (95.0, 1e9)];
const END_S: f64 = 170.0;
const TICK_S: f64 = 0.01;
/// Dead reckoning: 60 s at most, error 1 m/s x t + 0.3 m/s^2 x t^2 / 2 (600 m at 60 s, under
/// the 1000 m error bound: the time bound ends it).
const DR_MAX_S: f64 = 60.0;

fn feed(tunnels: bool) -> String {
    let mut out = String::from("t_s,position_m,speed_mps\n");
    let mut lost = false;
    for k in 0..=(END_S * 10.0) as u64 {
        let t = k as f64 / 10.0;
        let inside = tunnels && TUNNELS.iter().any(|(a, b)| t >= *a && t < *b);
        if inside {
            if !lost {
                out.push_str(&format!("{t:.1},,\n"));
                lost = true;
            }
            continue;
        }
        lost = false;
        let (p, v) = truth(t);
        out.push_str(&format!("{t:.1},{p:.3},{v:.3}\n"));
    }
    out
}

/// Zones far enough apart that, widened, no two carriers' overlap (else the rule keeps one
/// carrier regular and the flips differ in kind, not only in place).
const TABLE: &str = r#"{"format": "railpath-handover-table/1", "gps_error_m": 20.0, "runs": 5,
 "carriers": {
  "A": {"zones": [{"start_m": 600, "end_m": 700, "count": 5}, {"start_m": 1800, "end_m": 1900, "count": 5},
                  {"start_m": 2750, "end_m": 2800, "count": 5}, {"start_m": 3600, "end_m": 3700, "count": 5},
                  {"start_m": 5000, "end_m": 5100, "count": 5}], "runs": 5},
  "B": {"zones": [{"start_m": 1400, "end_m": 1450, "count": 5}, {"start_m": 2100, "end_m": 2150, "count": 5},
                  {"start_m": 4000, "end_m": 4100, "count": 5}, {"start_m": 6500, "end_m": 6600, "count": 5}], "runs": 5}}}"#;

struct Trip {
    /// (seconds from the start, flip)
    flips: Vec<(f64, FlipEvent)>,
    fallbacks: u64,
    position_valid: i64,
}

fn trip(dir: &std::path::Path, tunnels: bool, kernel: bool) -> Trip {
    let name = if tunnels { "tunnel" } else { "gps" };
    std::fs::write(dir.join(format!("{name}.csv")), feed(tunnels)).unwrap();
    std::fs::write(dir.join("table.json"), TABLE).unwrap();
    let text = format!(
        "[phad]\ntable = {:?}\nrtt_ms = 100\nlead_time_ms = 500\ntick_ms = {}\ndry_run = {}\n\
         position = {{ source = \"replay\", path = {:?} }}\n\
         dead_reckoning = {{ max_s = {DR_MAX_S}, max_error_m = 1000, speed_error_mps = 1.0, accel_mps2 = 0.3 }}\n\
         [[carrier]]\nname = \"A\"\nendpoint_id = 1\n[[carrier]]\nname = \"B\"\nendpoint_id = 2\n",
        dir.join("table.json").display().to_string(),
        TICK_S * 1000.0,
        !kernel,
        dir.join(format!("{name}.csv")).display().to_string(),
    );
    let cfg = Config::parse(&text, "tunnel.toml").unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let metrics = Metrics::new(&[("A".into(), None), ("B".into(), None)]);
        let mut ctl = Controller::new(&cfg, metrics.clone()).expect("controller");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        ctl.on_flip(tx);
        let src = PositionSource::open(&cfg.phad.as_ref().unwrap().position).unwrap();
        let (pos_tx, pos_rx) = tokio::sync::watch::channel(PositionState::Unknown("start".into()));
        let t0 = tokio::time::Instant::now();
        tokio::spawn(src.run(pos_tx, metrics.clone()));
        ctl.run(pos_rx, tokio::time::sleep(Duration::from_secs_f64(END_S)))
            .await;
        let mut flips = Vec::new();
        while let Ok(f) = rx.try_recv() {
            flips.push(((f.at - t0).as_secs_f64(), f));
        }
        Trip {
            flips,
            fallbacks: metrics.fallbacks_all_regular.load(Relaxed),
            position_valid: metrics.position_valid.load(Relaxed),
        }
    })
}

/// The speed of the last fix before `t` (the truth's, at the last 0.1 s step before a tunnel).
fn last_fix_speed(t: f64) -> f64 {
    match TUNNELS.iter().find(|(a, b)| t >= *a && t < *b) {
        Some((a, _)) => truth(a - 0.1).1,
        None => truth(t).1,
    }
}

fn error_m(age_s: f64) -> f64 {
    age_s + 0.15 * age_s * age_s
}

#[test]
fn tunnels_flip_where_gps_flips_within_the_widened_error_and_fall_back_after_the_bound() {
    let kernel = skip_reason().is_none();
    let dir = TempDir::new("tunnel");
    let run = |tunnels: bool| {
        if !kernel {
            return trip(&dir.0, tunnels, false);
        }
        // A namespace with two MPTCP endpoints for the controller to flip.
        let ns = Namespaces::new(&[if tunnels { "tun" } else { "gps" }]);
        let n = ns.names[0].clone();
        for (a, id) in [("10.9.0.1", "1"), ("10.9.0.2", "2")] {
            sh(&[
                "ip",
                "-n",
                &n,
                "addr",
                "add",
                &format!("{a}/32"),
                "dev",
                "lo",
            ]);
            sh(&[
                "ip", "-n", &n, "mptcp", "endpoint", "add", a, "id", id, "subflow",
            ]);
        }
        let d = dir.0.clone();
        let t = in_ns(&n, move || trip(&d, tunnels, true));
        // The last flip left the kernel's endpoints as the controller says (all regular at the
        // end: the shutdown sets them so).
        assert!(
            endpoints(&n).iter().all(|l| !l.contains("backup")),
            "{:?}",
            endpoints(&n)
        );
        t
    };
    if !kernel {
        println!("tunnel replay in dry-run mode: {}", skip_reason().unwrap());
    }
    let gps = run(false);
    let tun = run(true);
    let show = |t: &Trip| {
        t.flips
            .iter()
            .map(|(s, f)| {
                format!(
                    "{s:.2}s {} {} at {:?} (err {:.0} m{})",
                    f.carrier,
                    if f.backup { "backup" } else { "regular" },
                    f.position_m.map(|p| p.round()),
                    f.error_m,
                    if f.dead_reckoning { ", DR" } else { "" }
                )
            })
            .collect::<Vec<_>>()
    };
    println!("continuous GPS: {:#?}", show(&gps));
    println!("tunnels: {:#?}", show(&tun));
    // The same flips, in the same order (9 zones: in and out of each).
    let seq = |t: &Trip| {
        t.flips
            .iter()
            .map(|(_, f)| (f.carrier.clone(), f.backup))
            .collect::<Vec<_>>()
    };
    assert_eq!(seq(&gps), seq(&tun));
    assert_eq!(gps.flips.len(), 18);
    let mut dead_reckoned = 0;
    let speed_max = 50.0;
    for ((tg, g), (tt, f)) in gps.flips.iter().zip(&tun.flips) {
        let Some(est) = f.position_m else {
            // The fall-back at the bound: checked below.
            continue;
        };
        let (p_true, _) = truth(*tt);
        let (p_gps, v_gps) = truth(*tg);
        // The rule looks ahead by a time (the lead before a zone, one RTT before its end), so
        // the place of a flip also moves with the speed it assumes: the last fix's in a tunnel.
        let ahead_s = if f.backup { 0.5 } else { 0.1 };
        let v_rule = last_fix_speed(*tt);
        // The dead-reckoned position is within its error of the truth (the braking is within
        // the error model), and the flip is where continuous GPS flipped, within the widened
        // error (plus one tick of travel).
        assert!(
            (est - p_true).abs() <= f.error_m + speed_max * TICK_S + 1e-6,
            "{} at {tt:.2} s: estimate {est:.1} m, truth {p_true:.1} m, error {:.1} m",
            f.carrier,
            f.error_m
        );
        assert!(
            (est - p_gps).abs()
                <= f.error_m + ahead_s * (v_rule - v_gps).abs() + speed_max * TICK_S + 1e-6,
            "{} {}: flipped at {est:.1} m (error {:.1} m), with GPS at {p_gps:.1} m",
            f.carrier,
            if f.backup { "backup" } else { "regular" },
            f.error_m
        );
        // Without a fix, the flips do use the widened zones.
        if f.dead_reckoning {
            dead_reckoned += 1;
            assert!(f.error_m > 1.0, "{f:?}");
        } else {
            assert_eq!(f.error_m, 0.0);
        }
        let _ = g;
    }
    assert!(
        dead_reckoned >= 6,
        "only {dead_reckoned} flips without a fix"
    );
    // The bound: in the second tunnel (from 95 s, last fix at 94.9 s) dead reckoning ends 60 s
    // after the last fix; B, backup by then (its widened zone), goes regular at the first tick
    // past the bound, with no position.
    let (t_fb, fb) = tun
        .flips
        .iter()
        .find(|(_, f)| f.position_m.is_none())
        .expect("a fall-back flip");
    assert!(!fb.backup && fb.carrier == "B", "{fb:?}");
    let last_fix = 94.9;
    assert!(
        *t_fb > last_fix + DR_MAX_S && *t_fb <= last_fix + DR_MAX_S + TICK_S + 1e-6,
        "fell back at {t_fb:.3} s"
    );
    assert!((error_m(DR_MAX_S) - 600.0).abs() < 1e-9);
    assert_eq!(tun.position_valid, 0);
    assert!(tun.fallbacks >= 1);
    assert_eq!(gps.position_valid, 1);
}
