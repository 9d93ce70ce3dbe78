//! The train's cars (docs/models/cars.md): the MPTCP proxy's relay (every byte in order under
//! back-pressure, the fallback to TCP) and the load balancer's assignment and failover, end to
//! end in the simulator.

mod common;
use common::*;

/// Two carriers and one slow in-car link: the passenger, not the carriers, limits the car, so
/// the relay's buffer fills and the server must be held back.
fn proxied(extra_proxy: &str, duration: f64) -> String {
    format!(
        r#"
[run]
duration_s = {duration}
seed = 3
bin_ms = 1000

[[link]]
id = "isp-a"
rate_mbps = 40
delay_ms = 20
loss = 0.001
outages = [{{ start_s = 6, duration_ms = 1000, every_s = 7 }}]

[[link]]
id = "isp-b"
rate_mbps = 30
delay_range = {{ min_ms = 20, max_ms = 40, every_ms = 500 }}
loss = 0.002

[[link]]
id = "lan1"
rate_mbps = 8
delay_ms = 2
buffer_packets = 50

[[flow]]
id = "car1"
kind = "mptcp"
cc = "uncoupled-cubic"
scheduler = "minrtt"
paths = ["isp-a", "isp-b"]
access = "lan1"
proxy = {{ buffer_bytes = 16384, verify = true {extra_proxy} }}
"#
    )
}

#[test]
fn the_proxy_relays_every_byte_in_order_under_back_pressure() {
    let d = 20.0;
    let r = run(&proxied("", d));
    let f = flow(&r, "car1");
    let p = f.car.as_ref().unwrap().proxy.as_ref().unwrap();
    assert!(!p.fallback);
    // Every byte the passenger got is the server's, in order.
    let (sent, got) = (
        p.sha256_sent.as_ref().unwrap(),
        p.sha256_received.as_ref().unwrap(),
    );
    assert_eq!(sent, got);
    assert_eq!(sent.len(), 64);
    // The passenger's 8 Mbit/s link is the bottleneck, and it is kept busy.
    assert!(
        f.goodput_bps > 6.5e6 && f.goodput_bps < 8e6,
        "{}",
        f.goodput_bps
    );
    // The relay never holds more than its buffer; it did fill, and the data the full relay
    // could not read waited in the MPTCP receive buffer (whose window the server saw shrink).
    assert!(p.max_buffered_bytes <= 16384 && p.max_buffered_bytes > 16384 - 1448);
    assert!(p.max_unread_bytes > 100_000, "{}", p.max_unread_bytes);
    assert!(p.window_updates > 0);
    // Back-pressure: the carriers carried what the passenger took, plus at most the relay
    // buffer and the receive window (6 MiB by default) ahead of it, plus retransmissions; not
    // their 70 Mbit/s.
    let carried: u64 = ["isp-a", "isp-b"]
        .iter()
        .map(|l| link(&r, l).forwarded_packets)
        .sum();
    let ahead =
        carried.saturating_sub(f.retransmitted_packets) as f64 * 1448.0 - f.delivered_bytes as f64;
    assert!(ahead < 16384.0 + 6.0 * 1048576.0, "{ahead}");
    assert!((carried as f64 * 1500.0 * 8.0 / d) < 12e6);
    // The unread data never exceed the MPTCP receive buffer (6 MiB by default): the server
    // was stopped by the window, not queued without bound.
    assert!(p.max_unread_bytes <= 6 * 1048576, "{}", p.max_unread_bytes);
    // Both carriers carried the car's data.
    for sf in f.subflows.as_ref().unwrap() {
        assert!(sf.goodput_bps > 1e5, "{sf:?}");
    }
}

#[test]
fn a_fast_passenger_takes_what_the_carriers_give() {
    // The in-car link at 1 Gbit/s: the relay passes everything on.
    let text = proxied("", 20.0).replace("rate_mbps = 8", "rate_mbps = 1000");
    let r = run(&text);
    let f = flow(&r, "car1");
    let p = f.car.as_ref().unwrap().proxy.as_ref().unwrap();
    assert_eq!(p.sha256_sent, p.sha256_received);
    assert!(f.goodput_bps > 20e6, "{}", f.goodput_bps);
    // The passenger got all but what was still on its way at the end.
    assert!((p.server_goodput_bps - f.goodput_bps).abs() < 0.02 * f.goodput_bps);
}

#[test]
fn the_proxy_falls_back_to_tcp_against_a_server_without_mptcp() {
    let r = run(&proxied(", server_mptcp = false", 15.0));
    let f = flow(&r, "car1");
    let p = f.car.as_ref().unwrap().proxy.as_ref().unwrap();
    assert!(p.fallback);
    assert_eq!(f.kind, "tcp");
    assert_eq!(f.cc, "cubic");
    assert_eq!(p.sha256_sent, p.sha256_received);
    assert!(f.goodput_bps > 2e6, "{}", f.goodput_bps);
    // One path only: the second carrier carries nothing.
    assert_eq!(link(&r, "isp-b").forwarded_packets, 0);
    assert!(link(&r, "isp-a").forwarded_packets > 1000);
    // The server's TCP ends at the router: the in-car link carries the passenger's segments
    // only (the proxy's, one per 1448 bytes delivered, and their retransmissions), not the
    // server's too.
    let passenger = f.delivered_bytes.div_ceil(1448) + p.access_retransmitted_packets;
    let lan = link(&r, "lan1").forwarded_packets;
    assert!(lan <= passenger + 100, "{lan} packets for {passenger}");
}

fn balanced(policy: &str, failover: &str, cars: usize) -> String {
    let mut t = format!(
        r#"
[run]
duration_s = 30
seed = 1
bin_ms = 1000

[[link]]
id = "isp-a"
rate_mbps = 40
delay_ms = 30
outages = [{{ start_s = 5, duration_ms = 10000 }}]

[[link]]
id = "isp-b"
rate_mbps = 30
delay_ms = 30

[[balancer]]
id = "lb"
links = ["isp-a", "isp-b"]
policy = "{policy}"
detect_ms = 1000
failover = "{failover}"
"#
    );
    for k in 1..=cars {
        t.push_str(&format!(
            "\n[[link]]\nid = \"lan{k}\"\nrate_mbps = 1000\ndelay_ms = 0.1\n\n[[flow]]\nid = \"car{k}\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"lb\"]\naccess = \"lan{k}\"\n"
        ));
    }
    t
}

fn carrier(r: &railpath_sim::RunResults, id: &str) -> String {
    flow(r, id).car.as_ref().unwrap().carrier.clone().unwrap()
}

#[test]
fn the_balancer_assigns_by_policy() {
    // Round robin: A, B, A. Bandwidth with 40 and 30 Mbit/s: (n+1)/rate gives A, B, A, B, A.
    let r = run(&balanced("round-robin", "reconnect", 3));
    let got: Vec<String> = (1..=3).map(|k| carrier(&r, &format!("car{k}"))).collect();
    assert_eq!(got, ["isp-a", "isp-b", "isp-a"]);
    let r = run(&balanced("bandwidth", "reconnect", 5));
    let got: Vec<String> = (1..=5).map(|k| carrier(&r, &format!("car{k}"))).collect();
    assert_eq!(got, ["isp-a", "isp-b", "isp-a", "isp-b", "isp-a"]);
    // Least connection with every car open at once: A, B, A.
    let r = run(&balanced("least-connection", "reconnect", 3));
    let got: Vec<String> = (1..=3).map(|k| carrier(&r, &format!("car{k}"))).collect();
    assert_eq!(got, ["isp-a", "isp-b", "isp-a"]);
    // IP hash of 10.99.k.2 (FNV-1a mod 2): cars 0..2 hash to 0, 1, 0 (crates/sim/src/cars.rs).
    let r = run(&balanced("ip-hash", "reconnect", 3));
    let got: Vec<String> = (1..=3).map(|k| carrier(&r, &format!("car{k}"))).collect();
    assert_eq!(got, ["isp-a", "isp-b", "isp-a"]);
}

#[test]
fn a_failover_reconnects_the_car_on_the_other_carrier() {
    let r = run(&balanced("round-robin", "reconnect", 2));
    let c1 = flow(&r, "car1").car.clone().unwrap();
    // ISP_A down from 5 s; seen after the 1 s detection delay; car 1 moves to ISP_B.
    assert_eq!(c1.failovers.len(), 1);
    assert!((c1.failovers[0].t_s - 6.0).abs() < 1e-9);
    assert_eq!(
        (c1.failovers[0].from.as_str(), c1.failovers[0].to.as_str()),
        ("isp-a", "isp-b")
    );
    assert!(flow(&r, "car2").car.as_ref().unwrap().failovers.is_empty());
    let g = series(&r, "car1", "", "goodput_bps");
    // Nothing while ISP_A is out and undetected (in [5, 6) only what had already left the
    // queue arrives); from a handshake after the failover, the new connection gets bytes
    // through ISP_B while ISP_A is still out (until 15 s).
    assert!(g[5] < g[4] / 10.0, "{g:?}");
    let during: f64 = g[7..15].iter().sum::<f64>() / 8.0;
    assert!(during > 5e6, "{during}");
    // Car 2 shares ISP_B with it then.
    let g2 = series(&r, "car2", "", "goodput_bps");
    assert!(g2[10] < 30e6);
}

#[test]
fn keep_address_moves_the_same_connection() {
    let r = run(&balanced("round-robin", "keep-address", 2));
    let f = flow(&r, "car1");
    assert_eq!(f.car.as_ref().unwrap().failovers.len(), 1);
    let g = series(&r, "car1", "", "goodput_bps");
    // The connection recovers on ISP_B by its retransmission timer (backed off during the
    // outage), so it resumes some time after the failover, before ISP_A returns.
    let first = g
        .iter()
        .enumerate()
        .skip(6)
        .find(|(_, v)| **v > 0.0)
        .map(|(k, _)| k)
        .unwrap();
    assert!(first < 15, "{g:?}");
    assert!(f.rto_count >= 1);
}

#[test]
fn cars_are_deterministic() {
    let a = run(&proxied("", 10.0));
    let b = run(&proxied("", 10.0));
    assert_eq!(
        serde_json::to_string(&a.summary.flows).unwrap(),
        serde_json::to_string(&b.summary.flows).unwrap()
    );
    assert_eq!(a.series, b.series);
    let a = run(&balanced("round-robin", "reconnect", 2));
    let b = run(&balanced("round-robin", "reconnect", 2));
    assert_eq!(a.series, b.series);
}

#[test]
fn a_reconnected_finite_transfer_asks_for_the_rest() {
    // Car 1 downloads 40 MB; ISP_A fails at 5 s with about 25 MB delivered; the new connection
    // over ISP_B fetches the remainder only, and the transfer completes with every byte once.
    let text = balanced("round-robin", "reconnect", 2).replace(
        "id = \"car1\"\nkind = \"tcp\"\n",
        "id = \"car1\"\nkind = \"tcp\"\nbytes = 40000000\n",
    );
    let r = run(&text);
    let f = flow(&r, "car1");
    assert_eq!(f.car.as_ref().unwrap().failovers.len(), 1);
    assert_eq!(f.delivered_bytes, 40_000_000);
    let fct = f.fct_s.expect("completed");
    assert!(fct > 6.0 && fct < 30.0, "{fct}");
}

#[test]
fn a_plain_tcp_car_crosses_its_carrier_then_its_in_car_link() {
    let text = r#"
[run]
duration_s = 5
[[link]]
id = "isp-a"
rate_mbps = 20
delay_ms = 20
[[link]]
id = "lan1"
rate_mbps = 5
delay_ms = 1
[[flow]]
id = "car1"
kind = "tcp"
cc = "cubic"
paths = ["isp-a"]
access = "lan1"
"#;
    let r = run(text);
    let f = flow(&r, "car1");
    let c = f.car.as_ref().unwrap();
    assert_eq!(c.access.as_deref(), Some("lan1"));
    assert!(c.balancer.is_none() && c.proxy.is_none());
    // The slower in-car link is the bottleneck of the two hops.
    assert!(
        f.goodput_bps < 5e6 && f.goodput_bps > 3.5e6,
        "{}",
        f.goodput_bps
    );
    assert!(link(&r, "lan1").forwarded_packets > 1000);
}
