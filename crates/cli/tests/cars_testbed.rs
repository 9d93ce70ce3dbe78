//! Cars on the namespace testbed (the PROXY-LB paper, seeds.md section 2): the scenarios
//! scenarios/proxy-lb/lb.toml and mptcp.toml cut to their first cars and to a short run, through
//! `railpath testbed run` (crates/cli/src/cars_testbed.rs). Checked: every car receives bytes;
//! the load balancer gives car 1 isp-a and car 2 isp-b (round robin) and each car's bytes cross
//! only its carrier (the emulator's per-link, per-port accounting); the proxy carries each car
//! over both carriers; a long outage moves a car to the other carrier after `detect_ms`, its
//! connection is reset and opened again, and it keeps receiving; a server without MPTCP still
//! serves a proxied car (fallback to TCP, RFC 8684 section 3.7) on one carrier.
//!
//! Needs root, TUN and kernel MPTCP; otherwise each test prints "SKIP <name>: <reason>" and
//! passes. The runs take real time (10-20 s each) and run one at a time.

use railpath_scenario::{Outage, ProxyOptions, Scenario};
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

#[path = "../../repro/tests/common/mod.rs"]
mod common;

/// One testbed at a time: runs side by side would share the two cores and the emulator's timing.
static SERIAL: Mutex<()> = Mutex::new(());

fn unavailable(name: &str) -> bool {
    match railpath_linkem::check_environment() {
        Ok(()) => false,
        Err(e) => {
            println!("SKIP {name}: {e}");
            true
        }
    }
}

/// The first `cars` cars of scenarios/proxy-lb/<file>, run for `duration_s`.
fn scenario(file: &str, cars: usize, duration_s: f64) -> Scenario {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/proxy-lb")
        .join(file);
    let mut s = railpath_scenario::load(&p, &[]).expect("scenario loads");
    s.flows.truncate(cars);
    s.run.duration_s = duration_s;
    s
}

struct Run {
    summary: serde_json::Value,
    cars: serde_json::Value,
    /// (t_s, flow, subflow, metric, value) rows of timeseries.csv.
    series: Vec<(f64, String, String, String, f64)>,
}

impl Run {
    fn car<'a>(&'a self, id: &str) -> &'a serde_json::Value {
        self.cars["cars"]
            .as_array()
            .expect("cars")
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no car {id} in {}", self.cars))
    }
    fn carrier_bytes(&self, car: &str, link: &str) -> u64 {
        self.car(car)["carrier_bytes"][link].as_u64().unwrap_or(0)
    }
    /// Bytes the car's application read in bins ending after `from_s`.
    fn read_after(&self, car: &str, from_s: f64, bin_s: f64) -> f64 {
        self.series
            .iter()
            .filter(|r| r.1 == car && r.2.is_empty() && r.3 == "goodput_bps" && r.0 > from_s)
            .map(|r| r.4 * bin_s / 8.0)
            .sum()
    }
}

/// Write the scenario, run it with `railpath testbed run`, read what it wrote.
fn run(name: &str, s: &Scenario) -> Run {
    let (tmp, _) = common::out_dir(&format!("cars-{name}"));
    let dir = tmp.path();
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, toml::to_string(s).expect("scenario as TOML")).expect("write scenario");
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args(["testbed", "run"])
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .output()
        .expect("run railpath");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    println!("{text}");
    assert!(o.status.success(), "railpath testbed run failed:\n{text}");
    let json = |f: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(out.join(f)).expect("read output"))
            .expect("JSON")
    };
    let csv = std::fs::read_to_string(out.join("timeseries.csv")).expect("timeseries.csv");
    let series = csv
        .lines()
        .skip(1)
        .filter_map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            Some((
                c.first()?.parse().ok()?,
                c.get(1)?.to_string(),
                c.get(2)?.to_string(),
                c.get(3)?.to_string(),
                c.get(4)?.parse().ok()?,
            ))
        })
        .collect();
    Run {
        summary: json("summary.json"),
        cars: json("cars.json"),
        series,
    }
}

fn delivered(r: &Run, car: &str) -> u64 {
    r.summary["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .find(|f| f["id"] == car)
        .and_then(|f| f["delivered_bytes"].as_u64())
        .unwrap_or(0)
}

#[test]
fn load_balancer_gives_each_car_one_carrier_round_robin() {
    let name = "load_balancer_gives_each_car_one_carrier_round_robin";
    if unavailable(name) {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let r = run("lb", &scenario("lb.toml", 2, 15.0));
    for car in ["car1", "car2"] {
        assert!(delivered(&r, car) > 1_000_000, "{car}: {}", r.summary);
    }
    assert_eq!(r.car("car1")["carrier"], "isp-a", "{}", r.cars);
    assert_eq!(r.car("car2")["carrier"], "isp-b", "{}", r.cars);
    // Each car's bytes crossed only its carrier (the 1 s handovers are far below detect_ms).
    assert!(r.carrier_bytes("car1", "isp-a") > 1_000_000, "{}", r.cars);
    assert_eq!(r.carrier_bytes("car1", "isp-b"), 0, "{}", r.cars);
    assert!(r.carrier_bytes("car2", "isp-b") > 1_000_000, "{}", r.cars);
    assert_eq!(r.carrier_bytes("car2", "isp-a"), 0, "{}", r.cars);
    assert!(
        r.cars["failovers"].as_array().unwrap().is_empty(),
        "{}",
        r.cars
    );
}

#[test]
fn proxy_carries_each_car_over_both_carriers() {
    let name = "proxy_carries_each_car_over_both_carriers";
    if unavailable(name) {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let r = run("mptcp", &scenario("mptcp.toml", 2, 15.0));
    for car in ["car1", "car2"] {
        assert!(delivered(&r, car) > 1_000_000, "{car}: {}", r.summary);
        assert_eq!(
            r.car(car)["transport"],
            serde_json::json!(["mptcp"]),
            "{}",
            r.cars
        );
        for link in ["isp-a", "isp-b"] {
            assert!(
                r.carrier_bytes(car, link) > 500_000,
                "{car} on {link}: {}",
                r.cars
            );
        }
    }
}

#[test]
fn failover_moves_the_car_and_it_reconnects() {
    let name = "failover_moves_the_car_and_it_reconnects";
    if unavailable(name) {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = scenario("lb.toml", 2, 20.0);
    s.balancers[0].detect_ms = Some(1000.0);
    for l in &mut s.links {
        l.outages.clear();
    }
    let a = s.links.iter().position(|l| l.id == "isp-a").expect("isp-a");
    s.links[a].outages = vec![Outage {
        start_s: 5.0,
        duration_ms: 10_000.0,
        every_s: None,
    }];
    let r = run("failover", &s);
    let f = r.cars["failovers"].as_array().expect("failovers");
    assert_eq!(f.len(), 1, "{}", r.cars);
    assert_eq!(
        (
            f[0]["car"].as_str(),
            f[0]["from"].as_str(),
            f[0]["to"].as_str()
        ),
        (Some("car1"), Some("isp-a"), Some("isp-b"))
    );
    // Down after detect_ms (1 s) plus a probe interval or two.
    let t = f[0]["t_s"].as_f64().unwrap();
    assert!((5.9..7.5).contains(&t), "failover at {t} s");
    // The car's connection was reset and opened again on isp-b, after the move.
    let connects = r.car("car1")["connects_s"].as_array().unwrap().clone();
    assert_eq!(connects.len(), 2, "{}", r.cars);
    let again = connects[1].as_f64().unwrap();
    assert!(again > t && again < t + 3.0, "reconnected at {again} s");
    assert!(r.carrier_bytes("car1", "isp-b") > 1_000_000, "{}", r.cars);
    // It keeps receiving after the failover (isp-a is still out until 15 s).
    let after = r.read_after("car1", again + 1.0, 1.0);
    assert!(
        after > 1_000_000.0,
        "car1 read {after} bytes after reconnecting"
    );
    // Car 2 was on isp-b all along.
    assert_eq!(r.carrier_bytes("car2", "isp-a"), 0, "{}", r.cars);
    assert!(delivered(&r, "car2") > 1_000_000);
}

#[test]
fn proxy_falls_back_to_tcp_when_the_server_lacks_mptcp() {
    let name = "proxy_falls_back_to_tcp_when_the_server_lacks_mptcp";
    if unavailable(name) {
        return;
    }
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut s = scenario("mptcp.toml", 1, 10.0);
    s.flows[0].proxy = Some(ProxyOptions {
        server_mptcp: Some(false),
        ..ProxyOptions::default()
    });
    let r = run("fallback", &s);
    assert!(delivered(&r, "car1") > 1_000_000, "{}", r.summary);
    assert_eq!(
        r.car("car1")["transport"],
        serde_json::json!(["fallback"]),
        "{}",
        r.cars
    );
    // Plain TCP on the first path only.
    assert!(r.carrier_bytes("car1", "isp-a") > 1_000_000, "{}", r.cars);
    assert_eq!(r.carrier_bytes("car1", "isp-b"), 0, "{}", r.cars);
}
