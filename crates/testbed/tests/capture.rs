//! One scenario on both stacks with captures (issue 30): the simulator's `--pcap` and the
//! testbed's give captures of the same shape (the same capture points, the same flow and
//! subflows, series of the same length, the outage's stall in both), and the testbed capture's
//! counts agree with the emulator's own accounting. Needs root and kernel MPTCP; otherwise
//! prints SKIP and passes.

use railpath_capture::{AnalyzeOptions, CaptureOptions, Format};
use railpath_linkem::check_environment;
use std::collections::BTreeSet;
use std::path::Path;

fn scenario(pcap: &Path) -> railpath_scenario::Resolved {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut s = railpath_scenario::load(
        &root.join("testbed/two-carriers-mptcp.toml"),
        &["run.duration_s=10".to_string()],
    )
    .expect("the testbed's reference scenario");
    s.capture = Some(railpath_scenario::Capture {
        dir: Some(pcap.display().to_string()),
        ..Default::default()
    });
    s.validate().expect("the reference scenario resolves")
}

fn opts(s: &railpath_scenario::Resolved) -> AnalyzeOptions {
    AnalyzeOptions {
        flow_names: s.flows.iter().map(|f| f.id.clone()).collect(),
        duration_s: Some(s.run.duration_s),
        ..Default::default()
    }
}

#[test]
fn simulator_and_testbed_captures_have_the_same_shape() {
    if let Err(e) = check_environment() {
        eprintln!("SKIP simulator_and_testbed_captures_have_the_same_shape: {e}");
        return;
    }
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("testbed-capture");
    let _ = std::fs::remove_dir_all(&base);
    let (sim_dir, tb_dir) = (base.join("sim"), base.join("testbed"));
    let s = scenario(&sim_dir);
    let c = CaptureOptions::of_resolved(&s).unwrap();
    assert_eq!(c.format, Format::Pcapng);
    railpath_capture::run_with_capture(&s, &mut |_| {}, &c).expect("simulator run");
    let t = scenario(&tb_dir);
    let (results, report) =
        railpath_testbed::plain::run_scenario_with_report(&t).expect("testbed run");
    let cap = report.capture.expect("the testbed captured");
    assert_eq!(cap.error, None);
    let a = railpath_capture::analyze(&[sim_dir], &opts(&s)).unwrap();
    let b = railpath_capture::analyze(&[tb_dir], &opts(&t)).unwrap();
    // The same capture points, flow and subflows, series.
    assert_eq!(a.summary.points, b.summary.points);
    assert_eq!(a.summary.points.len(), 4);
    let shape = |x: &railpath_capture::Analysis| {
        let f: Vec<(String, &str, Vec<String>)> = x
            .summary
            .flows
            .iter()
            .map(|f| {
                (
                    f.id.clone(),
                    f.kind,
                    f.subflows.iter().map(|s| s.id.clone()).collect(),
                )
            })
            .collect();
        let series: BTreeSet<(String, String, &str, usize)> = x
            .series
            .iter()
            .map(|s| (s.flow.clone(), s.subflow.clone(), s.metric, s.values.len()))
            .collect();
        (f, series)
    };
    assert_eq!(shape(&a), shape(&b));
    assert_eq!(shape(&a).0[0].2, vec!["a".to_string(), "b".to_string()]);
    // The outage of a at 6 s stalls the in-order stream on both stacks.
    for x in [&a, &b] {
        let f = &x.summary.flows[0];
        assert!(
            f.stalls
                .iter()
                .any(|st| (5.9..7.0).contains(&st.start_s) && st.duration_s >= 0.2),
            "{:?}",
            f.stalls
        );
        assert!(f.subflows.iter().all(|s| s.rtt.is_some()));
    }
    // The testbed capture's counts are the emulator's accounting's (the same packets, counted
    // where they enter the link), when it captured every packet.
    let fb = &b.summary.flows[0];
    let subs = results.summary.flows[0].subflows.as_ref().unwrap();
    if cap.dropped == 0 {
        for (x, y) in fb.subflows.iter().zip(subs) {
            assert_eq!(
                (x.sent_packets, x.retransmitted_packets),
                (y.sent_packets, y.retransmitted_packets),
                "subflow {}",
                x.id
            );
        }
    } else {
        eprintln!(
            "the capture writer fell behind: {} packets not captured",
            cap.dropped
        );
    }
    // What the network delivered in order is at least what the application had read.
    let read = results.summary.flows[0].delivered_bytes;
    assert!(
        fb.delivered_bytes >= read && fb.delivered_bytes as f64 <= read as f64 * 1.05,
        "delivered {} read {read}",
        fb.delivered_bytes
    );
}

#[test]
fn the_captures_address_plan_is_the_testbeds() {
    use railpath_capture::addr;
    assert_eq!(addr::SERVER_ADDR, railpath_linkem::testbed::SERVER_ADDR);
    assert_eq!(addr::BASE_PORT, railpath_testbed::plain::BASE_PORT);
    // The router's side of carrier k is 10.200.k.1 (crates/linkem/src/testbed.rs).
    assert_eq!(addr::router_addr(2), std::net::Ipv4Addr::new(10, 200, 2, 1));
}
