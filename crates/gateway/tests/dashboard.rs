//! The Grafana dashboard in packaging/ checked without a Grafana (none can be installed here):
//! every query parsed as PromQL and matched against the daemon's exposition (common::dashboard).
//! This test uses the exposition of a `Metrics` filled by hand; tests/carriers.rs checks the
//! same dashboard against the scrape of a real run on the namespace testbed.

mod common;

use railpath_gateway::metrics::Metrics;
use std::sync::atomic::Ordering::Relaxed;

const DASHBOARD: &str = include_str!("../../../packaging/grafana-dashboard.json");

fn exposition() -> String {
    let m = Metrics::with_bins(
        &[
            ("A".into(), Some("lo".into())),
            ("B".into(), Some("lo".into())),
        ],
        100.0,
    );
    m.carriers[0].failovers.store(1, Relaxed);
    let now = tokio::time::Instant::now();
    {
        let mut b = m.stall_book();
        b.position(now, Some(1250.0));
        b.stall(now, now + std::time::Duration::from_secs(1));
    }
    m.render()
}

#[test]
fn every_panel_query_reads_metrics_and_labels_the_daemon_exports() {
    let (problems, checked) = common::dashboard::check(DASHBOARD, &exposition());
    assert!(problems.is_empty(), "{problems:#?}");
    assert!(checked >= 20, "only {checked} queries checked");
}

#[test]
fn the_check_finds_a_misspelt_metric_a_missing_label_and_a_bad_legend() {
    let bad = DASHBOARD
        .replacen(
            "railpath_gateway_carrier_last_failover_seconds",
            "railpath_gateway_carrier_last_failover_secs",
            1,
        )
        .replacen("sum by (position_m)", "sum by (position)", 1)
        .replacen(
            "\"{{carrier}} {{direction}}\"",
            "\"{{carrier}} {{dir}}\"",
            1,
        );
    let (problems, _) = common::dashboard::check(&bad, &exposition());
    let all = problems.join("\n");
    assert!(
        all.contains("railpath_gateway_carrier_last_failover_secs is not in the scrape"),
        "{all}"
    );
    assert!(all.contains("groups by \"position\""), "{all}");
    assert!(all.contains("legend names \"dir\""), "{all}");
    // A selector that matches nothing in the scrape.
    let none = DASHBOARD.replacen(
        "position_m!=\\\"unknown\\\"",
        "position_m=\\\"nowhere\\\"",
        1,
    );
    let (problems, _) = common::dashboard::check(&none, &exposition());
    assert!(
        problems.iter().any(|p| p.contains("selects no series")),
        "{problems:#?}"
    );
}
