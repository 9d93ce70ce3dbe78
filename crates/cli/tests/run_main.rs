//! scripts/run-main.sh (the main job of `make run`) runs every example scenario and writes
//! each one's summary.json and timeseries.csv; here with the test build of the binary.

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
