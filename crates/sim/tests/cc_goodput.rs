//! End-to-end checks of CUBIC and BBR through the whole simulator (sender with SACK/RACK/PRR
//! and delivery-rate sampling, drop-tail links, receiver with delayed ACKs).
//!
//! Expectations come from the algorithms' design goals (RFC 9438 Sections 1 and 5; Cardwell et
//! al., ACM Queue 2016): both fill a moderately buffered link; CUBIC's larger beta and cubic
//! growth beat Reno on a long, shallow-buffered path; on a deep buffer a loss-based algorithm
//! fills the buffer while BBR keeps about one BDP in flight and little queue.

mod common;
use common::*;
use railpath_sim::RunResults;

/// The flow's goodput, retransmissions and the link's queueing delay, for failure messages.
fn describe(r: &RunResults) -> String {
    let f = flow(r, "f");
    let l = link(r, "a");
    format!(
        "goodput {:.3} Mbit/s, retx {}, rto {}, srtt {:?} ms, queue delay avg {:.1} max {:.1} ms",
        f.goodput_bps / 1e6,
        f.retransmitted_packets,
        f.rto_count,
        f.srtt_ms,
        l.queue_delay_ms.avg,
        l.queue_delay_ms.max
    )
}

fn cwnd_packets(r: &RunResults) -> Vec<f64> {
    let s = r
        .series
        .iter()
        .find(|s| s.flow == "f" && s.metric == "cwnd_bytes")
        .expect("cwnd");
    s.values.iter().map(|v| v / 1448.0).collect()
}

#[test]
fn cubic_and_bbr_reach_95_percent_of_a_10_mbit_link() {
    let want = 0.95 * achievable_bps(10.0);
    for cc in ["cubic", "bbr"] {
        let r = run(&one_flow(cc, 10.0, 10.0, 100, 60.0, ""));
        let g = flow(&r, "f").goodput_bps;
        assert!(
            g >= want,
            "{cc}: {} (want >= {:.3} Mbit/s)",
            describe(&r),
            want / 1e6
        );
    }
}

#[test]
fn cubic_beats_newreno_on_a_long_shallow_path() {
    // 200 ms RTT, BDP 167 packets, buffer 50: Reno halves to ~108 packets and climbs one packet
    // per RTT; CUBIC keeps 0.7 of its window and climbs back along the cubic.
    let reno = run(&one_flow("newreno", 10.0, 100.0, 50, 60.0, ""));
    let cubic = run(&one_flow("cubic", 10.0, 100.0, 50, 60.0, ""));
    let (g_reno, g_cubic) = (flow(&reno, "f").goodput_bps, flow(&cubic, "f").goodput_bps);
    // Buffer < BDP: Reno's halved window drains the queue and leaves the link idle.
    assert!(
        g_reno < 0.95 * achievable_bps(10.0),
        "newreno not visibly below capacity: {}",
        describe(&reno)
    );
    assert!(
        g_cubic > g_reno,
        "cubic: {}\nnewreno: {}",
        describe(&cubic),
        describe(&reno)
    );
}

#[test]
fn deep_buffer_cubic_bloats_bbr_does_not() {
    // 1000 packets at 20 Mbit/s is 600 ms of queue.
    let cubic = run(&one_flow("cubic", 20.0, 10.0, 1000, 60.0, ""));
    let bbr = run(&one_flow("bbr", 20.0, 10.0, 1000, 60.0, ""));
    let qc = link(&cubic, "a").queue_delay_ms.avg;
    let qb = link(&bbr, "a").queue_delay_ms.avg;
    let gb = flow(&bbr, "f").goodput_bps;
    assert!(qc > 300.0, "cubic: {}", describe(&cubic));
    assert!(qb < 50.0, "bbr: {}", describe(&bbr));
    assert!(gb >= 0.9 * achievable_bps(20.0), "bbr: {}", describe(&bbr));
}

#[test]
fn hystart_avoids_the_slow_start_overshoot() {
    // Without HyStart slow start doubles until the 1000-packet buffer overflows by hundreds of
    // packets; with it, slow start ends on the queueing-delay increase first.
    let text = one_flow("cubic", 20.0, 10.0, 1000, 30.0, "");
    let with = run(&text);
    let without = run(&format!("{text}\n[tcp]\nhystart = false\n"));
    let (rw, ro) = (
        flow(&with, "f").retransmitted_packets,
        flow(&without, "f").retransmitted_packets,
    );
    assert!(
        rw * 5 < ro,
        "hystart: {}\nno hystart: {}",
        describe(&with),
        describe(&without)
    );
    // The early exit shows in the window: with HyStart cwnd stays below 200 packets in the
    // first second, without it slow start has passed 400.
    let (cw, co) = (cwnd_packets(&with), cwnd_packets(&without));
    assert!(cw[..10].iter().all(|&c| c < 200.0), "{:?}", &cw[..10]);
    assert!(co[..10].iter().any(|&c| c > 400.0), "{:?}", &co[..10]);
}

#[test]
fn bbr_probes_rtt_every_ten_seconds() {
    // PROBE_RTT: cwnd 4 packets for >= 200 ms whenever min_rtt is 10 s old. The queue never
    // drains on its own here, so over 60 s it happens 5 times (about 10.2, 20.5, ... s).
    let r = run(&one_flow("bbr", 20.0, 10.0, 1000, 60.0, ""));
    let cwnd = cwnd_packets(&r);
    let mut starts = vec![];
    for (i, w) in cwnd.windows(2).enumerate() {
        if w[0] > 4.5 && w[1] <= 4.5 {
            starts.push((i + 2) as f64 * 0.1);
        }
    }
    assert!((5..=6).contains(&starts.len()), "PROBE_RTT at {starts:?} s");
    for gap in starts.windows(2) {
        assert!(
            (10.0..11.0).contains(&(gap[1] - gap[0])),
            "PROBE_RTT at {starts:?} s"
        );
    }
}

#[test]
fn bbr_runs_are_reproducible() {
    let text = one_flow("bbr", 10.0, 10.0, 100, 20.0, "");
    let a = run(&text);
    let b = run(&text);
    assert_eq!(a.summary.flows, b.summary.flows);
    assert_eq!(a.series, b.series);
}
