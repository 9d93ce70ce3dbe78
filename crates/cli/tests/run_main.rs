//! scripts/run-main.sh (the main job of `make run`) runs every example scenario and writes
//! each one's summary.json and timeseries.csv; here with the test build of the binary.

#[path = "../../repro/tests/common/mod.rs"]
mod common;

use common::{assert_numbers_within_intervals, claim_holds, number};
use std::path::Path;
use std::process::Command;

#[test]
fn run_main_runs_every_example_scenario() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("railpath-run-main-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new("bash")
        .arg(root.join("scripts/run-main.sh"))
        .arg(&out)
        .env("RAILPATH_BIN", env!("CARGO_BIN_EXE_railpath"))
        .output()
        .expect("run bash");
    assert!(
        o.status.success(),
        "run-main.sh failed ({:?}): {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    let mut n = 0;
    for e in std::fs::read_dir(root.join("scenarios")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        for f in ["summary.json", "timeseries.csv"] {
            assert!(out.join(&name).join(f).is_file(), "no {f} for {name}");
        }
        n += 1;
    }
    assert!(n >= 3);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!("run-main: {n} scenarios")),
        "{stdout}"
    );
    // It ends with the reproductions and says where their index is.
    assert!(out.join("repro/index.html").is_file());
    assert!(out.join("repro/pha/report.html").is_file());
    let last = stdout.lines().last().unwrap_or("");
    assert!(last.contains("repro/index.html"), "{last}");
    check_train(&out.join("repro/train"));
    check_proxy_lb(&out.join("repro"));
    let _ = std::fs::remove_dir_all(&out);
}

/// `railpath repro train` as `make run` runs it (checked here rather than by a second run of
/// its 200 ten-minute runs): the summary's numbers, claims and per-run table, and a report with
/// every figure.
fn check_train(dir: &Path) {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    // At least 20 seeds whatever --seeds says (10 by default).
    assert_eq!(v["seeds"], 20);
    // The per-run table: 8 MPTCP configurations and 2 single carriers x 20 seeds, each row with
    // its seed, scheme, goodput and handovers with time, position and kind.
    let rows = v["runs_table"].as_array().expect("runs_table");
    assert_eq!(rows.len(), 10 * 20);
    let mut kinds = std::collections::BTreeSet::new();
    for row in rows {
        assert!(row["seed"].as_u64().is_some_and(|s| (1..=20).contains(&s)));
        assert!(
            row["goodput_mbps"].as_f64().is_some_and(|g| g > 0.0),
            "{row}"
        );
        for h in row["handovers"].as_array().expect("handovers") {
            assert!(h["t_s"].is_number() && h["position_m"].is_number());
            kinds.insert(h["kind"].as_str().unwrap().to_string());
        }
    }
    assert!(kinds.contains("success") && kinds.len() >= 2, "{kinds:?}");
    let schemes: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r["scheme"].as_str().unwrap()).collect();
    assert!(
        schemes.contains("mptcp linux-default olia none"),
        "{schemes:?}"
    );
    assert!(schemes.contains("tcp cubic carrier B"), "{schemes:?}");
    let n = |id: &str| -> f64 {
        v["numbers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id)
            .unwrap_or_else(|| panic!("no number {id}"))["railpath"]
            .as_f64()
            .unwrap_or(f64::NAN)
    };
    for id in [
        "handovers_per_min_b_250kmh",
        "subflow_goodput_handover_mbps",
        "subflow_srtt_handover_ms",
        "link_loss_handover_pct",
        "mptcp_vs_best_single_lia",
        "mptcp_vs_best_single_olia",
        "mptcp_vs_best_single_uncoupled_cubic",
        "pha_minrtt_whole_pct",
        "pha-d_linux-default_handover_pct",
        "pha-d_minrtt_handover_success_mbps",
        "pha-d_minrtt_handover_failure_mbps",
    ] {
        assert!(n(id).is_finite(), "{id}: {}", n(id));
    }
    // Handovers get more frequent with speed on the same line.
    assert!(n("handovers_per_min_a_200kmh") < n("handovers_per_min_a_300kmh"));
    // A failure's outage is the re-establishment's (at least 240 ms), a success's its execution.
    assert!(n("outage_ms_failure") >= 240.0 && n("outage_ms_success") <= 50.0);
    // Every claim says whose it is; one that fails says why.
    let claims = v["claims"].as_array().unwrap();
    assert_eq!(claims.len(), 5);
    for c in claims {
        assert!(c["basis"].is_string(), "{c}");
        if c["holds"] == false {
            assert!(
                c["explanation"].as_str().is_some_and(|e| !e.is_empty()),
                "{c}"
            );
        }
    }
    // The report: every figure drawn, the kernel side said not run.
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_eq!(page.matches("<svg class=\"plot\"").count(), 4);
    assert!(page.contains("railpath repro train --testbed"));
}

/// `railpath repro proxy-lb` as `make run` runs it, at its reference seeds (checked here rather
/// than by a second run of its 63 runs of 960 s): each number within its interval, the claims
/// following from the numbers, the index's row, and a report with every section and figure.
/// The report page's rendering in Chromium is checked on the other papers' reports
/// (`crates/repro/tests/reports.rs`), which share its template and plots.
fn check_proxy_lb(repro: &Path) {
    use railpath_repro::proxy_lb::{scenario, Mode};
    let dir = repro.join("proxy-lb");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(v["paper"], "proxy-lb");
    assert_eq!(v["format"], "railpath-repro/1");
    // Each 960 s run holds some 40 handovers per carrier: the reproduction takes 3 of the seeds.
    assert_eq!(v["seeds"], 3);
    // Load balancer and minRTT with 1-5 cars, ECF, BLEST and redundant with 1, 3 and 5, the
    // two runs whose handovers drop the queue (3 seeds each), and 3 x 5 validation runs.
    assert_eq!(v["runs"], 5 * 2 * 3 + 3 * 3 * 3 + 2 * 3 + 3 * 5);
    assert_numbers_within_intervals(&v);
    // The paper gives figures without numbers: every number is railpath's alone. A number
    // given twice (minRTT's totals at 1, 3 and 5 cars, in the cars' and the schedulers'
    // tables) has one value.
    let all = v["numbers"].as_array().unwrap();
    for n in all {
        assert!(n["paper"].is_null(), "{n}");
        for m in all.iter().filter(|m| m["id"] == n["id"]) {
            assert_eq!(m, n);
        }
    }
    // Without --testbed, the simulator's claims only.
    let claims = v["claims"].as_array().unwrap();
    let mut ids: Vec<&str> = claims.iter().map(|c| c["id"].as_str().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        [
            "lb-dips-at-own-handovers",
            "mptcp-above-lb",
            "mptcp-converges",
            "mptcp-sends-through-handovers",
            "per-car-falls",
            "redundant-does-not-beat-lb",
            "schedulers-beat-lb",
            "total-rises",
        ]
    );
    let num = |id: &str| number(&v, id);
    let holds = |id: &str| claim_holds(&v, id);
    for id in [
        "train-balia-mbps",
        "train-uncoupled-bbr-mbps",
        "train-uncoupled-cubic-mbps",
        "lb-3-cars-drop-handovers-total-mbps",
        "mptcp-ecf-3-cars-drop-handovers-total-mbps",
    ] {
        let g = num(id).0;
        assert!(g > 0.0 && g < 70.0, "{id}: {g}");
    }
    // Goodput against the number of cars: within the carriers' 70 Mbit/s, per car the total's
    // share, and the paired difference's mean the difference of the means.
    let total = |sys: &str, n: usize| num(&format!("{sys}-{n}-cars-total-mbps")).0;
    let per_car = |sys: &str, n: usize| num(&format!("{sys}-{n}-cars-per-car-mbps")).0;
    for n in 1..=5 {
        for sys in ["lb", "mptcp-minrtt"] {
            assert!(total(sys, n) > 0.0 && total(sys, n) < 70.0, "{sys} {n}");
            assert!((per_car(sys, n) - total(sys, n) / n as f64).abs() < 1e-9);
        }
        let d = num(&format!("mptcp-minus-lb-{n}-cars-mbps")).0;
        assert!((d - (total("mptcp-minrtt", n) - total("lb", n))).abs() < 1e-9);
    }
    // The claims follow from the numbers.
    let falls = |sys: &str| (1..5).all(|n| per_car(sys, n + 1) < per_car(sys, n));
    assert_eq!(holds("per-car-falls"), falls("lb") && falls("mptcp-minrtt"));
    let rises = |sys: &str| total(sys, 5) > total(sys, 1);
    assert_eq!(holds("total-rises"), rises("lb") && rises("mptcp-minrtt"));
    let above = (1..=5).all(|n| num(&format!("mptcp-minus-lb-{n}-cars-mbps")).1 > 0.0);
    assert_eq!(holds("mptcp-above-lb"), above);
    // The goodput the carriers can deliver: their rates less the segments' headers, while up.
    let s = scenario(Mode::Mptcp(0), 5, 1, None).unwrap();
    let tcp = s.tcp_config(0);
    let payload = tcp.mss_bytes as f64 / (tcp.mss_bytes + tcp.header_bytes) as f64;
    let d = s.run.duration_s;
    let usable: f64 = [("isp-a", 40.0), ("isp-b", 30.0)]
        .iter()
        .map(|(id, rate)| {
            let l = s.links.iter().find(|l| l.id == *id).unwrap();
            let down: f64 = l
                .outage_list(d)
                .iter()
                .map(|o| (o.duration_ms / 1000.0).min(d - o.start_s))
                .sum();
            rate * payload * (1.0 - down / d)
        })
        .sum();
    let share = |n: usize| total("mptcp-minrtt", n) / usable;
    assert_eq!(
        holds("mptcp-converges"),
        share(5) >= 0.9 && share(5) >= share(1),
        "usable {usable}"
    );
    // Two cars, goodput in a handover's second as a percentage of the car's mean.
    let dip = |sys: &str, car: usize, isp: &str| {
        num(&format!(
            "{sys}-2-cars-car{car}-goodput-at-{isp}-handovers-pct"
        ))
        .0
    };
    let (l1a, l1b, l2a, l2b) = (
        dip("lb", 1, "isp-a"),
        dip("lb", 1, "isp-b"),
        dip("lb", 2, "isp-a"),
        dip("lb", 2, "isp-b"),
    );
    assert_eq!(
        holds("lb-dips-at-own-handovers"),
        l1a < 50.0 && l2b < 50.0 && l1b > 80.0 && l2a > 80.0,
        "{l1a} {l1b} {l2a} {l2b}"
    );
    let mp_low = [1, 2]
        .iter()
        .flat_map(|&car| {
            [
                dip("mptcp-minrtt", car, "isp-a"),
                dip("mptcp-minrtt", car, "isp-b"),
            ]
        })
        .fold(f64::INFINITY, f64::min);
    assert_eq!(
        holds("mptcp-sends-through-handovers"),
        mp_low >= 25.0 && l1a < mp_low && l2b < mp_low,
        "{mp_low} {l1a} {l2b}"
    );
    // The schedulers: mean total over 1, 3 and 5 cars against the load balancer's.
    let over_135 = |sys: &str| [1, 3, 5].iter().map(|&n| total(sys, n)).sum::<f64>() / 3.0;
    let lb_mean = over_135("lb");
    let beats = |sched: &str| over_135(&format!("mptcp-{sched}")) > lb_mean;
    assert_eq!(
        holds("schedulers-beat-lb"),
        beats("minrtt") && beats("ecf") && beats("blest")
    );
    assert_eq!(holds("redundant-does-not-beat-lb"), !beats("redundant"));
    for sched in ["minrtt", "ecf", "blest", "redundant"] {
        for n in [1, 3, 5] {
            let g = total(&format!("mptcp-{sched}"), n);
            assert!(g > 0.0 && g < 70.0, "{sched} {n}: {g}");
        }
    }
    // Every claim that does not hold says why, and none is one never examined.
    for c in claims {
        assert_eq!(c["holds"] == true, c["explanation"].is_null(), "{c}");
        assert_ne!(
            c["explanation"].as_str(),
            Some(railpath_repro::findings::UNEXAMINED),
            "proxy-lb: claim {} does not hold at the reference seeds and was never examined",
            c["id"]
        );
    }
    // The index lists the paper with its claims.
    let rows = railpath_repro::index(repro, &[]);
    let row = rows
        .iter()
        .find(|row| row.name == "proxy-lb")
        .unwrap_or_else(|| panic!("proxy-lb not on the index: {rows:?}"));
    let held = claims.iter().filter(|c| c["holds"] == true).count();
    let explained = claims
        .iter()
        .filter(|c| c["holds"] == false && !c["cause"].is_null() && c["cause"] != "unexplained")
        .count();
    assert_eq!(
        (row.claims, row.held, row.not_held, row.explained),
        (claims.len(), held, claims.len() - held, explained)
    );
    // The report: total and per-car bars, and two cars' goodput over time for each system
    // (two systems x 5 car counts in each bar plot, two cars in each plot over time, and the
    // handovers of the first 120 s, ISP_A 4 and ISP_B 5, shaded in each); every section; the
    // kernel side said not run.
    let page = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert_eq!(page.matches("<svg class=\"plot\"").count(), 4);
    assert!(page.matches("class=\"bar\"").count() >= 20);
    assert!(page.matches("class=\"series\"").count() >= 4);
    assert!(page.matches("class=\"band\"").count() >= 18);
    for section in [
        "Goodput against the number of cars",
        "Handovers",
        "Schedulers",
        "The validation set",
        "The real kernel",
        "Discussion",
    ] {
        assert!(page.contains(&format!("<h2>{section}")), "no {section}");
    }
    let kernel = &page[page.find("<h2>The real kernel").unwrap()..];
    let kernel = &kernel[..kernel.find("<h2>Discussion").unwrap_or(kernel.len())];
    assert!(kernel.contains("Not run this time"), "{kernel}");
}

#[test]
fn run_main_reports_a_missing_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new("bash")
        .arg(root.join("scripts/run-main.sh"))
        .arg(std::env::temp_dir().join("railpath-run-main-unused"))
        .env("RAILPATH_BIN", "/nonexistent/railpath")
        .output()
        .expect("run bash");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no railpath binary at /nonexistent/railpath")
    );
}
