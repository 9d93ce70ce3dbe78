//! The high-speed line of `railpath repro train` (scenarios/train/, issue 27): its runs are
//! deterministic, its handovers include failures (the `hsr` profile's failure model), and the
//! handover table learned on it holds failure zones where those failures happened.

use railpath_radio::{HandoverKind, ZoneKind};
use railpath_scenario::Resolved;
use railpath_sim::mechanisms::pha::learn_table;

mod common;

fn line(file: &str, over: &[&str]) -> Resolved {
    common::scenario_file(&format!("train/{file}"), over)
}

#[test]
fn the_line_runs_deterministically_with_failures() {
    // Two minutes of the line (10 km) are enough for several failures and keep the test short.
    let r = line("line.toml", &["run.duration_s=120"]);
    let a = railpath_sim::run(&r).expect("run");
    let b = railpath_sim::run(&r).expect("run");
    assert_eq!(
        serde_json::to_string(&a.summary.flows).unwrap(),
        serde_json::to_string(&b.summary.flows).unwrap()
    );
    assert_eq!(a.timeseries_csv(), b.timeseries_csv());
    assert_eq!(a.summary.handovers, b.summary.handovers);
    let kinds: Vec<HandoverKind> = a.summary.handovers.iter().filter_map(|h| h.kind).collect();
    assert_eq!(
        kinds.len(),
        a.summary.handovers.len(),
        "every handover has a kind"
    );
    assert!(kinds.contains(&HandoverKind::Success));
    assert!(
        kinds.iter().any(|k| *k != HandoverKind::Success),
        "no failure in 2 minutes of the line: {kinds:?}"
    );
    // A failure's outage is a re-establishment: at least TS 36.133's 240 ms.
    for h in &a.summary.handovers {
        if h.kind != Some(HandoverKind::Success) {
            assert!(h.interruption_ms >= 240.0, "{h:?}");
        }
    }
}

#[test]
fn the_table_learned_on_the_line_holds_its_failure_zones() {
    for file in ["line.toml", "line-3.toml"] {
        let r = line(file, &["run.duration_s=120"]);
        let radio = r.radio.as_ref().expect("the radio model");
        let end = railpath_core::Time::from_secs_f64(120.0);
        let t = learn_table(radio, 1, 5, 20.0, end).expect("learned");
        assert_eq!(t.format, railpath_radio::table::FORMAT_2, "{file}");
        assert_eq!(
            t.known_carriers().len(),
            if file == "line.toml" { 2 } else { 3 }
        );
        // Every failure of the learning runs lies inside a failure zone of its carrier.
        let mut failures = 0;
        for k in 2..=6u64 {
            let tl = railpath_radio::carrier_timelines(&radio.train, &radio.carriers, k, end)
                .expect("timelines");
            for h in tl.into_iter().flat_map(|t| t.handovers) {
                if h.kind == Some(HandoverKind::Success) {
                    continue;
                }
                failures += 1;
                let z = t.carriers[&h.carrier]
                    .zones
                    .iter()
                    .find(|z| z.start_m <= h.position_m && h.position_m <= z.end_m)
                    .unwrap_or_else(|| panic!("{file}: no zone holds {h:?}"));
                assert_ne!(z.kind(), ZoneKind::Handover, "{file}: {h:?} in {z:?}");
                assert!(z.failures + z.rlfs >= 1);
            }
        }
        assert!(failures > 0, "{file}: no failure in 5 learning runs");
    }
}
