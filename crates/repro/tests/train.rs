//! `railpath repro train` (issue 27) end to end, without the kernel: the summary's numbers,
//! claims and per-run table, and a report with every figure.

use railpath_repro::Options;

#[test]
fn train_study_reports_calibration_single_carrier_and_pha() {
    let out = std::env::temp_dir().join(format!("railpath-repro-train-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    // One seed asked for: the study still runs its minimum of 20.
    let mut done = railpath_repro::run("train", &Options::simulator(&out, 1), &mut |_| {})
        .unwrap_or_else(|e| panic!("repro train: {e}"));
    let r = done.remove(0);
    assert_eq!(r.summary.seeds, railpath_repro::train::MIN_SEEDS);
    let v = serde_json::to_value(&r.summary).unwrap();
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
    // The numbers the issue asks for.
    let ids: Vec<&str> = r.summary.numbers.iter().map(|n| n.id.as_str()).collect();
    for id in [
        "handovers_per_min_a_200kmh",
        "handovers_per_min_b_300kmh",
        "subflow_goodput_handover_mbps",
        "subflow_srtt_handover_ms",
        "link_loss_handover_pct",
        "outage_ms_success",
        "outage_ms_failure",
        "mptcp_vs_best_single_lia",
        "mptcp_vs_best_single_olia",
        "mptcp_vs_best_single_uncoupled_cubic",
        "pha_minrtt_whole_pct",
        "pha-d_linux-default_handover_pct",
        "pha-d_minrtt_handover_success_mbps",
        "pha-d_minrtt_handover_failure_mbps",
    ] {
        assert!(ids.contains(&id), "no number {id}: {ids:?}");
    }
    // Handovers get more frequent with speed on the same line.
    let n = |id: &str| {
        r.summary
            .numbers
            .iter()
            .find(|n| n.id == id)
            .unwrap()
            .railpath
    };
    assert!(n("handovers_per_min_a_200kmh") < n("handovers_per_min_a_300kmh"));
    // A failure's outage is the re-establishment's (at least 240 ms), a success's its execution.
    assert!(n("outage_ms_failure") >= 240.0 && n("outage_ms_success") <= 50.0);
    assert_eq!(r.summary.claims.len(), 5);
    // The report: every figure drawn, the kernel side said not run.
    assert_eq!(r.report.figures().len(), 4);
    let page = std::fs::read_to_string(out.join("train/report.html")).unwrap();
    assert_eq!(page.matches("<svg class=\"plot\"").count(), 4);
    assert!(page.contains("railpath repro train --testbed"));
    assert!(out.join("index.html").is_file());
    std::fs::remove_dir_all(&out).unwrap();
}
