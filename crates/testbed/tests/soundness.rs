//! The testbed's own soundness (issue 9): its bottleneck queue is the emulated carrier's, not
//! the sender's qdisc (where TCP small queues would keep it empty). One Reno flow over
//! 10 Mbit/s, 100 ms each way, a 50-packet buffer, 60 s: Linux shows the AIMD sawtooth with the
//! emulator's queue filling to its limit and draining, at about 8.6 Mbit/s, as the simulator
//! does (8.60). Root and /dev/net/tun needed; skips loudly otherwise.

use railpath_linkem::check_environment;
use railpath_testbed::plain::run_scenario_with_report;

const RENO: &str = r#"
[run]
duration_s = 60
seed = 1
bin_ms = 100

[[link]]
id = "a"
rate_mbps = 10
delay_ms = 100
buffer_packets = 50

[[flow]]
id = "reno"
kind = "tcp"
cc = "newreno"
paths = ["a"]
"#;

#[test]
fn reno_sawtooth_fills_the_emulated_queue() {
    if let Err(e) = check_environment() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIP testbed soundness test: {e}");
        return;
    }
    let s = railpath_scenario::parse_str(RENO, "reno-sawtooth.toml").unwrap();
    s.validate().unwrap();
    let sim = railpath_sim::run(&s.validate().unwrap()).unwrap();
    let (tb, report) = run_scenario_with_report(&s.validate().unwrap()).expect("testbed run");
    let (gs, gt) = (
        sim.summary.flows[0].goodput_bps,
        tb.summary.flows[0].goodput_bps,
    );
    eprintln!("reno goodput: simulator {gs:.0} bit/s, testbed {gt:.0} bit/s");
    assert!((8.0e6..9.2e6).contains(&gt), "testbed goodput {gt}");
    assert!(
        (gt / gs - 1.0).abs() < 0.05,
        "testbed {gt} vs simulator {gs}"
    );
    // The queue is the emulator's: its samples come near the 50-packet limit (IP packets of 1500 B),
    // it overflows there, and it is not empty on average.
    let link = &report.links[0];
    let qmax = link.queue_bytes.iter().cloned().fold(0.0, f64::max);
    let qmean = link.queue_bytes.iter().sum::<f64>() / link.queue_bytes.len() as f64;
    assert!(qmax >= 40.0 * 1500.0, "queue max {qmax} B");
    assert!(qmean >= 5.0 * 1500.0, "queue mean {qmean} B");
    assert!(
        link.data.buffer_drops > 0,
        "no overflow at the emulated queue"
    );
    // The sawtooth: the sender's cwnd (TCP_INFO) falls by a fifth or more at least 3 times.
    let cwnd = &tb
        .series
        .iter()
        .find(|x| x.flow == "reno" && x.metric == "cwnd_bytes")
        .expect("cwnd series")
        .values;
    let cuts = cwnd
        .windows(2)
        .filter(|w| w[0].is_finite() && w[1].is_finite() && w[1] < 0.8 * w[0])
        .count();
    assert!(cuts >= 3, "{cuts} cwnd reductions: {cwnd:?}");
}
