//! UDP cross traffic end to end: what a source offers and a link delivers, a deep buffer that
//! bloats and drains at the link's rate, determinism, and TCP sharing a link with it.

mod common;
use common::*;
use railpath_sim::results::UdpStats;
use railpath_sim::RunResults;

fn udp<'a>(r: &'a RunResults, id: &str) -> &'a UdpStats {
    r.summary.udp(id).expect("udp stats")
}

/// Mean of the bins covering [from_s, to_s) (bins of `bin_s`).
fn mean(v: &[f64], bin_s: f64, from_s: f64, to_s: f64) -> f64 {
    let (a, b) = (
        (from_s / bin_s).round() as usize,
        (to_s / bin_s).round() as usize,
    );
    v[a..b].iter().sum::<f64>() / (b - a) as f64
}

/// One link of 10 Mbit/s, 10 ms, with `buffer` packets, and the flows given.
fn link_with(duration_s: f64, buffer: u32, flows: &str) -> String {
    format!(
        r#"
[run]
duration_s = {duration_s}
seed = 1

[[link]]
id = "a"
rate_mbps = 10
delay_ms = 10
buffer_packets = {buffer}
{flows}
"#
    )
}

fn udp_flow(id: &str, start_s: f64, stop_s: f64, source: &str) -> String {
    format!(
        "\n[[flow]]\nid = \"{id}\"\nkind = \"udp\"\npaths = [\"a\"]\nstart_s = {start_s}\nstop_s = {stop_s}\nudp = {{ {source} }}\n"
    )
}

/// Payload over wire of a 1400-byte datagram (28 bytes of IP and UDP headers).
const PAYLOAD: f64 = 1372.0 / 1400.0;

/// Relative standard deviation of an on/off source's mean rate over `duration_s`: the ON
/// fraction over n = duration / (on + off) cycles of exponential periods (coefficient of
/// variation 1) is ON / (ON + OFF); to first order its relative variance is
/// (1 - p)^2 (1/n + 1/n) with p = mean / peak.
fn onoff_rel_sd(peak: f64, mean: f64, on_ms: f64, duration_s: f64) -> f64 {
    let p = mean / peak;
    let cycle_s = on_ms / 1e3 / p;
    let n = duration_s / cycle_s;
    (1.0 - p) * (2.0 / n).sqrt()
}

#[test]
fn below_the_link_rate_a_udp_flow_gets_all_it_offers() {
    // A deep buffer (10000 packets: an ON period at 23 Mbit/s would have to last 8.6 s to fill
    // it) and 10 s after the source stops to drain: every packet arrives.
    for (source, mean_mbps) in [
        ("process = \"cbr\", mean_mbps = 5.0", 5.0),
        ("max_mbps = 23.0, mean_mbps = 6.0", 6.0),
    ] {
        let r = run(&link_with(100.0, 10_000, &udp_flow("x", 0.0, 90.0, source)));
        let f = flow(&r, "x");
        let u = udp(&r, "x");
        assert_eq!((f.kind.as_str(), f.cc.as_str()), ("udp", "none"));
        assert_eq!(f.sent_packets, u.sent_packets);
        assert_eq!(
            (u.delivered_packets, u.dropped_packets, u.in_flight_packets),
            (u.sent_packets, 0, 0),
            "{source}"
        );
        assert_eq!(f.delivered_bytes, u.delivered_packets * 1372);
        // The source offers its mean: a cbr source exactly, an on/off one within its spread
        // over 90 s.
        let tol = if u.process == "cbr" {
            1e-3
        } else {
            4.0 * onoff_rel_sd(23.0, mean_mbps, 200.0, 90.0)
        };
        assert!(
            (u.offered_bps / (mean_mbps * 1e6) - 1.0).abs() < tol,
            "{source}: offered {:.3} Mbit/s",
            u.offered_bps / 1e6
        );
        // All of it arrives: goodput is the offer in payload bits.
        assert!(
            (f.goodput_bps / (u.offered_bps * PAYLOAD) - 1.0).abs() < 1e-9,
            "{source}: goodput {:.3} Mbit/s",
            f.goodput_bps / 1e6
        );
        // The offered-rate series has the same mean over the source's 90 s.
        let sent = series(&r, "x", "", "sent_bps");
        let m = mean(sent, 0.1, 0.0, 90.0);
        assert!((m / u.offered_bps - 1.0).abs() < 1e-9, "{m}");
        assert!(sent[900..].iter().all(|&v| v == 0.0));
    }
}

#[test]
fn above_the_link_rate_a_udp_flow_gets_the_link_and_loses_the_excess() {
    // 20 Mbit/s of cbr traffic into a 10 Mbit/s link with a 1000-packet buffer (full after
    // 11.2 Mbit / 10 Mbit/s = 1.1 s): the link carries 10 Mbit/s, the rest is dropped.
    let r = run(&link_with(
        100.0,
        1000,
        &udp_flow("x", 0.0, 100.0, "process = \"cbr\", mean_mbps = 20.0"),
    ));
    let f = flow(&r, "x");
    let u = udp(&r, "x");
    assert_eq!(
        u.sent_packets,
        u.delivered_packets + u.dropped_packets + u.in_flight_packets
    );
    assert_eq!(link(&r, "a").dropped_packets, u.dropped_packets);
    // The link is busy from the first packet to the end; what it serialised in the last 10 ms
    // is still propagating, and the full queue is still waiting.
    assert!(
        (u.in_flight_packets as f64 - (1000.0 + 10e6 * 0.01 / 11200.0)).abs() <= 1.0,
        "{} in flight",
        u.in_flight_packets
    );
    let carried = 10e6 * PAYLOAD;
    assert!(
        (f.goodput_bps / carried - 1.0).abs() < 1e-3,
        "goodput {:.4} Mbit/s, the link carries {:.4}",
        f.goodput_bps / 1e6,
        carried / 1e6
    );
    let dropped = u.dropped_packets as f64 / u.sent_packets as f64;
    assert!(
        (dropped - 0.5).abs() < 0.01,
        "dropped {dropped:.4} of the packets"
    );
}

#[test]
fn a_cbr_flow_on_an_idle_link_has_the_path_delay() {
    // 11.2 Mbit/s of 1400 B = one packet a ms; at 100 Mbit/s a packet takes 0.112 ms to
    // serialise, then 10 ms to propagate: every packet 10.112 ms, none queued behind another.
    let text = link_with(
        10.0,
        100,
        &udp_flow("x", 1.0, 9.0, "process = \"cbr\", mean_mbps = 11.2"),
    )
    .replace("rate_mbps = 10", "rate_mbps = 100");
    let r = run(&text);
    let u = udp(&r, "x");
    assert_eq!(
        u.sent_packets, 7999,
        "8 s at one a ms, the one at 9 s not sent"
    );
    assert_eq!(u.delivered_packets, 7999);
    assert_eq!((u.on_periods, u.process.as_str()), (1, "cbr"));
    let d = u.delay_ms.expect("delay");
    assert!(
        (d.avg - 10.112).abs() < 1e-6 && (d.max - 10.112).abs() < 1e-6,
        "{d:?}"
    );
    // Offered over [1, 9) s exactly.
    assert!((u.offered_bps - 7999.0 * 11200.0 / 8.0).abs() < 1e-6);
    // Nothing is sent before start_s or after stop_s.
    let sent = series(&r, "x", "", "sent_bps");
    assert!(sent[..10].iter().all(|&v| v == 0.0) && sent[90..].iter().all(|&v| v == 0.0));
    assert!(sent[10..90]
        .iter()
        .all(|&v| (v - 11.2e6).abs() < 11200.0 / 0.1 + 1e-6));
}

#[test]
fn cross_traffic_into_a_deep_buffer_bloats_it_and_it_drains_at_the_link_rate() {
    // The bufferbloat paper's setting: mean 16 (peak 23) Mbit/s for 10 s into a 10 Mbit/s
    // link with a 10000-packet buffer. The excess, about 6 Mbit/s x 10 s = 60 Mbit (7.5 MB,
    // some 5400 packets: the buffer never overflows), queues up: seconds of delay, which drain
    // at 10 Mbit/s (about 6 s) once the source stops.
    let r = run(&link_with(
        40.0,
        10_000,
        &udp_flow(
            "x",
            10.0,
            20.0,
            "max_mbps = 23.0, mean_mbps = 16.0, mean_on_ms = 200.0, packet_bytes = 1400",
        ),
    ));
    let u = udp(&r, "x");
    assert_eq!(u.dropped_packets, 0);
    assert_eq!(u.in_flight_packets, 0, "drained by the end");
    // This run's offer is the mean within the on/off process's spread over 10 s.
    let sd = onoff_rel_sd(23.0, 16.0, 200.0, 10.0);
    assert!(
        (u.offered_bps / 16e6 - 1.0).abs() < 4.0 * sd,
        "offered {:.2} Mbit/s (relative sd {sd:.3})",
        u.offered_bps / 1e6
    );
    let q = series(&r, "", "a", "queue_bytes");
    // The link is busy from the first packet on (the queue never empties before 20 s), so at
    // 20 s it holds what was sent less 10 s at the link's rate, within a packet.
    assert!(q[101..200].iter().all(|&v| v > 0.0), "the queue emptied");
    let backlog = u.sent_packets as f64 * 1400.0 - 10e6 / 8.0 * 10.0;
    let at_stop = q[199];
    assert!(
        (at_stop - backlog).abs() <= 2.0 * 1400.0,
        "{at_stop} B queued at 20 s, {backlog} B expected"
    );
    assert!(
        at_stop > 2.0 * 10e6 / 8.0,
        "seconds of backlog expected, {at_stop} B"
    );
    // The worst one-way delay is the deepest queue's, plus serialisation and propagation: at
    // least the deepest sampled queue's, at most that of a bin more at the peak rate.
    let peak = q.iter().copied().fold(0.0, f64::max);
    let peak_bin = q.iter().position(|&v| v == peak).unwrap();
    assert!((100..200).contains(&peak_bin), "peak at bin {peak_bin}");
    let d = u.delay_ms.expect("delay");
    let path_ms = 10.0 + 1.12;
    let (lo, hi) = (
        peak * 8.0 / 10e6 * 1e3 + path_ms,
        (peak + 0.1 * (23e6 - 10e6) / 8.0) * 8.0 / 10e6 * 1e3 + path_ms,
    );
    assert!(
        d.max >= lo - 1e-6 && d.max <= hi && d.max > 2000.0,
        "max one-way delay {:.1} ms, expected {lo:.1} to {hi:.1} ms",
        d.max
    );
    // After 20 s the queue shrinks by the link's rate every bin (10 Mbit/s x 0.1 s = 125000 B,
    // within a packet) and is empty when that has carried what it held at 20 s.
    let empty_at = 199.0 + at_stop / 125_000.0;
    let mut k = 200;
    while (k as f64) < empty_at - 1.0 {
        let step = q[k - 1] - q[k];
        assert!(
            (step - 125_000.0).abs() <= 1400.0,
            "bin {k}: the queue fell by {step} B"
        );
        k += 1;
    }
    let empty = q.iter().skip(200).position(|&v| v == 0.0).unwrap() + 200;
    assert!(
        ((empty as f64) - empty_at).abs() <= 1.0,
        "empty at bin {empty}, expected about {empty_at:.1}"
    );
}

#[test]
fn same_seed_same_results_other_seed_other_traffic() {
    let text = link_with(
        30.0,
        200,
        &(udp_flow("x", 2.0, 25.0, "max_mbps = 23.0, mean_mbps = 8.0")
            + &udp_flow(
                "y",
                0.0,
                30.0,
                "max_mbps = 5.0, mean_mbps = 3.0, mean_on_ms = 50",
            )
            + "\n[[flow]]\nid = \"t\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n"),
    );
    let a = run(&text);
    let b = run(&text);
    assert_eq!(a, b);
    assert_eq!(a.timeseries_csv(), b.timeseries_csv());
    assert_eq!(
        serde_json::to_string(&a.summary).unwrap(),
        serde_json::to_string(&b.summary).unwrap()
    );
    let c = railpath_sim::run(
        &({
            let mut s = scenario(&text);
            s.run.seed = 2;
            s
        })
        .validate()
        .unwrap(),
    )
    .unwrap();
    assert_ne!(udp(&a, "x").sent_packets, udp(&c, "x").sent_packets);
    // Each source draws from its own stream: another flow's changes leave it alone.
    let alone = run(&link_with(
        30.0,
        200,
        &udp_flow("x", 2.0, 25.0, "max_mbps = 23.0, mean_mbps = 8.0"),
    ));
    assert_eq!(udp(&a, "x").sent_packets, udp(&alone, "x").sent_packets);
    assert_eq!(
        series(&a, "x", "", "sent_bps"),
        series(&alone, "x", "", "sent_bps")
    );
}

#[test]
fn tcp_gives_way_to_udp_while_it_runs() {
    // CUBIC alone fills the link; 6 Mbit/s of unresponsive cbr traffic from 20 to 40 s takes
    // its share of the link, and CUBIC gets the link back afterwards.
    let text = link_with(
        60.0,
        100,
        &(udp_flow("x", 20.0, 40.0, "process = \"cbr\", mean_mbps = 6.0")
            + "\n[[flow]]\nid = \"t\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n"),
    );
    let r = run(&text);
    let g = series(&r, "t", "", "goodput_bps");
    let before = mean(g, 0.1, 5.0, 20.0);
    let during = mean(g, 0.1, 25.0, 40.0);
    let after = mean(g, 0.1, 45.0, 60.0);
    assert!(
        before > 0.9 * achievable_bps(10.0),
        "CUBIC alone {:.2} Mbit/s",
        before / 1e6
    );
    let u = udp(&r, "x");
    let udp_goodput = flow(&r, "x").goodput_bps;
    // The link carries both: CUBIC gets what UDP leaves of it (UDP's wire rate is its goodput
    // x 1400 / 1372; CUBIC's goodput its wire rate x 1448 / 1500).
    let left = (10e6 - udp_goodput / PAYLOAD) * 1448.0 / 1500.0;
    assert!(
        during < 0.6 * before && (during / left - 1.0).abs() < 0.05,
        "CUBIC {:.2} Mbit/s beside UDP {:.2} Mbit/s ({:.2} left)",
        during / 1e6,
        udp_goodput / 1e6,
        left / 1e6
    );
    // UDP does not back off: it loses only what finds the shared queue full.
    assert!(
        udp_goodput > 0.9 * u.offered_bps * PAYLOAD,
        "UDP delivered {:.2} of {:.2} Mbit/s offered",
        udp_goodput / 1e6,
        u.offered_bps / 1e6
    );
    assert!(
        after > 0.9 * before,
        "CUBIC after {:.2} Mbit/s",
        after / 1e6
    );
    // The tcp flow's summary has no udp part, the udp flow's no TCP part.
    assert!(r.summary.udp("t").is_none());
    let f = flow(&r, "x");
    assert_eq!(
        (f.retransmitted_packets, f.rto_count, f.srtt_ms, f.fct_s),
        (0, 0, None, None)
    );
}

#[test]
fn summary_json_has_udp_in_each_flow() {
    let r = run(&link_with(
        5.0,
        100,
        &(udp_flow("x", 1.0, 4.0, "process = \"cbr\", mean_mbps = 2")
            + "\n[[flow]]\nid = \"t\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n"),
    ));
    let v: serde_json::Value = serde_json::to_value(&r.summary).unwrap();
    let flows = v["flows"].as_array().unwrap();
    let x = &flows[0];
    assert_eq!(
        (x["id"].as_str(), x["kind"].as_str()),
        (Some("x"), Some("udp"))
    );
    assert_eq!(x["cc"], "none");
    for key in [
        "scheduler",
        "subflows",
        "srtt_ms",
        "fct_s",
        "pha",
        "handoffs",
    ] {
        assert!(x[key].is_null(), "{key}: {}", x[key]);
    }
    let u = &x["udp"];
    for key in [
        "process",
        "offered_bps",
        "sent_packets",
        "delivered_packets",
        "dropped_packets",
        "in_flight_packets",
        "on_periods",
        "delay_ms",
    ] {
        assert!(!u[key].is_null(), "udp.{key} missing: {u}");
    }
    assert_eq!(u["sent_packets"], x["sent_packets"]);
    let t = &flows[1];
    assert_eq!(t["kind"], "tcp");
    assert!(t.get("udp").is_some_and(|u| u.is_null()), "{t}");
    assert!(!t["srtt_ms"].is_null());
    // The udp flow's time series: goodput and the offered rate.
    let csv = r.timeseries_csv();
    assert!(csv.contains(",x,,goodput_bps,") && csv.contains(",x,,sent_bps,"));
    assert!(!csv.contains(",x,,cwnd_bytes,"));
}
