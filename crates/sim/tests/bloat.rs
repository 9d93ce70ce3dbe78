//! The BLOAT monitor end to end (issue 13) on the paper's setting (scenarios/bloat/paper.toml),
//! shortened to its first cross-traffic period (10-20 s, then 10 s for the queue to drain): the
//! monitor detects the bloat within 2 s of its onset, raises Round Robin's and Lowest-RTT's
//! throughput and at least halves the receiver's mean out-of-order occupancy and reordering
//! time; without cross traffic it never fires and changes nothing; runs are deterministic.

use railpath_scenario::{FlowKind, Scenario};
use railpath_sim::results::FlowSummary;
use railpath_sim::RunResults;
use std::path::Path;

const PAPER: &str = include_str!("../../../scenarios/bloat/paper.toml");
const MONITOR: &str = "flow.mp.mechanisms=[\"bloat-monitor\"]";

/// The paper's scenario, 30 s long with only the first cross traffic (or none): the udp flows
/// are the scenario's last tables, cut from the text.
fn load(over: &[&str], cross: bool) -> Scenario {
    let mut over: Vec<String> = over.iter().map(|o| o.to_string()).collect();
    over.push("run.duration_s=30".into());
    let cut = if cross {
        "id = \"cross2\""
    } else {
        "id = \"cross1\""
    };
    let end = PAPER.find(cut).expect("the udp flows");
    let text = &PAPER[..PAPER[..end].rfind("[[flow]]").expect("a flow table")];
    let s = railpath_scenario::load_text(text, "bloat.toml", Path::new("."), &over).expect("valid");
    assert_eq!(
        s.flows.iter().filter(|f| f.kind == FlowKind::Udp).count(),
        usize::from(cross)
    );
    s
}

fn mp(r: &RunResults) -> &FlowSummary {
    r.summary.flows.iter().find(|f| f.id == "mp").expect("mp")
}

fn run(over: &[&str], cross: bool) -> RunResults {
    railpath_sim::run(&(load(over, cross)).validate().unwrap()).expect("run")
}

#[test]
fn the_monitor_detects_the_bloat_and_undoes_its_head_of_line_blocking() {
    for sched in ["roundrobin", "minrtt"] {
        let s = format!("flow.mp.scheduler=\"{sched}\"");
        let off = run(&[&s], true);
        let on = run(&[&s, MONITOR], true);
        let (a, b) = (mp(&off), mp(&on));
        let bloat = b.bloat.as_ref().expect("bloat stats");
        let first = bloat.episodes.first().expect("a detection");
        assert!(
            (10.0..=12.0).contains(&first.start_s),
            "{sched}: detected at {} s, the cross traffic starts at 10 s",
            first.start_s
        );
        assert_eq!(
            (first.problem.as_str(), first.normal.as_str()),
            ("p2", "p1")
        );
        assert!(bloat.hol_retransmissions > 0);
        assert!(
            b.goodput_bps > a.goodput_bps,
            "{sched}: {} with the monitor, {} without",
            b.goodput_bps,
            a.goodput_bps
        );
        let (ra, rb) = (
            a.receive_buffer.unwrap().avg_packets,
            b.receive_buffer.unwrap().avg_packets,
        );
        assert!(rb <= ra / 2.0, "{sched}: receive buffer {ra} -> {rb}");
        let (da, db) = (
            a.reorder_delay_ms.unwrap().avg,
            b.reorder_delay_ms.unwrap().avg,
        );
        assert!(db <= da / 2.0, "{sched}: reordering {da} ms -> {db} ms");
        assert!(a.bloat.is_none());
    }
}

#[test]
fn without_cross_traffic_the_monitor_never_fires_and_changes_nothing() {
    for sched in ["roundrobin", "minrtt"] {
        let s = format!("flow.mp.scheduler=\"{sched}\"");
        let off = run(&[&s], false);
        let on = run(&[&s, MONITOR], false);
        let bloat = mp(&on).bloat.clone().expect("bloat stats");
        assert!(bloat.episodes.is_empty(), "{sched}: {:?}", bloat.episodes);
        assert_eq!(bloat.hol_retransmissions, 0);
        // Everything else is identical, series included (the monitor adds its own).
        assert_same_run(&off, &on, sched);
    }
}

/// `on` equals `off` but for the mechanism's own statistics and series.
fn assert_same_run(off: &RunResults, on: &RunResults, what: &str) {
    let mut a = mp(off).clone();
    let mut b = mp(on).clone();
    for f in [&mut a, &mut b] {
        f.bloat = None;
        f.send_buffer_held = None;
        f.mechanisms.clear();
    }
    assert_eq!(a, b, "{what}");
    for s in &off.series {
        let t = on
            .series
            .iter()
            .find(|x| x.flow == s.flow && x.subflow == s.subflow && x.metric == s.metric)
            .expect("same series");
        assert_eq!(
            s.values, t.values,
            "{what}: {} {} {}",
            s.flow, s.subflow, s.metric
        );
    }
}

#[test]
fn watching_only_changes_nothing_and_sees_the_bloat() {
    let off = run(&[], true);
    let watch = run(
        &[MONITOR, "flow.mp.bloat_monitor={ retransmit = false }"],
        true,
    );
    assert_same_run(&off, &watch, "watching only");
    let b = mp(&watch).bloat.as_ref().expect("bloat stats");
    assert_eq!(b.hol_retransmissions, 0);
    assert!(b
        .episodes
        .first()
        .is_some_and(|e| (10.0..=12.0).contains(&e.start_s)));
    // The send buffer as the paper counts it: the healthy path's packets wait for the data ACK
    // behind path 2's head of line, up to the 3000-packet window.
    let held = mp(&watch).send_buffer_held.expect("held");
    assert!(held.max_packets > 1000.0, "{held:?}");
}

#[test]
fn bloat_runs_are_deterministic() {
    let a = run(&[MONITOR], true);
    let b = run(&[MONITOR], true);
    assert_eq!(a.summary, b.summary);
    assert_eq!(a.timeseries_csv(), b.timeseries_csv());
}
