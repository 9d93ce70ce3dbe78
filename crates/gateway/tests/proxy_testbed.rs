//! The proxy over the linkem testbed: a passenger namespace, the router with nftables redirect and
//! the daemon, two emulated carriers (100 Mbit/s, 5 ms one way each) and the server. 200
//! concurrent passenger connections, each moving a random size up to 10 MB (size = 10 MB x u^3,
//! so the 200 transfers total about 0.5 GB and fit the emulated capacity in tens of seconds), with
//! SHA-256 checked at the far end in both directions; every onward connection runs MPTCP and both
//! carriers carry bytes. Needs root, TUN and kernel MPTCP; otherwise prints SKIP and passes.

mod common;

use common::*;
use railpath_core::Rng;
use railpath_linkem::{check_environment, Testbed, TestbedSpec};
use std::time::Duration;

const MAX_BYTES: f64 = 10.0 * 1024.0 * 1024.0;

fn scenario() -> railpath_scenario::Scenario {
    let link = |id: &str| {
        format!("[[link]]\nid = \"{id}\"\nrate_mbps = 100\ndelay_ms = 5\nbuffer_packets = 300\n")
    };
    let text = format!(
        "[run]\nduration_s = 60\nseed = 1\nbin_ms = 100\n\n{}\n{}\n[[flow]]\nid = \"dl\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"A\"]\n",
        link("A"),
        link("B")
    );
    railpath_scenario::parse_str(&text, "proxy-testbed.toml").expect("scenario parses")
}

#[test]
fn two_hundred_transfers_through_the_proxy_over_emulated_carriers() {
    let name = "two_hundred_transfers_through_the_proxy_over_emulated_carriers";
    skip_if_unavailable!(name);
    if let Err(e) = check_environment() {
        println!("SKIP {name}: {e}");
        return;
    }
    let mut spec = TestbedSpec::from_resolved(&scenario().validate().unwrap()).unwrap();
    spec.clients = 1;
    let tb = Testbed::new(&spec).expect("testbed");
    // Kernel 6.18 can stall an MPTCP connection for good when its receive buffer fills with
    // out-of-order data while the data needed next sits in (or was lost with) another subflow:
    // observed here once in a few runs under 200 concurrent transfers (the server's msk held
    // 1 MB out of order with the default 128 KiB-start buffer, one subflow reset, the other
    // subflow's 2.5 MB receive queue no longer drained, its window closed). That is the
    // kernel's receive path, not the proxy (which was correctly blocked on a full socket);
    // 16 MiB starting buffers on both receiving ends keep this test about the proxy.
    for ns in [tb.router_ns().to_string(), tb.server_ns().to_string()] {
        tb.sysctl(&ns, "net.ipv4.tcp_rmem", "4096 16777216 33554432")
            .expect("tcp_rmem");
    }
    let rtr = tb.router_ns().to_string();
    let service = tb.server_addr().to_string();
    sh(&[
        "ip", "netns", "exec", &rtr, "nft",
        "add table ip rpgw; add chain ip rpgw pre { type nat hook prerouting priority dstnat; }; add rule ip rpgw pre iifname \"lan0\" tcp dport 7000 redirect to :3129",
    ]);
    let dir = TempDir::new("ptb");
    let cfg = "[proxy]\nmode = \"train\"\nlisten = \"0.0.0.0:3129\"\n[metrics]\nlisten = \"127.0.0.1:9464\"\n[log]\nformat = \"text\"\nlevel = \"railpath_gateway=debug\"\n[[carrier]]\nname = \"A\"\nendpoint_id = 1\ninterface = \"car0\"\n[[carrier]]\nname = \"B\"\nendpoint_id = 2\ninterface = \"car1\"\n";
    let mut daemon = Daemon::start(&rtr, cfg, &dir.0);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let srv = tb.server_ns().to_string();
    let svc = service.clone();
    let server = std::thread::spawn(move || {
        in_ns(&srv, move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(server_main(svc, 7000, 7001, stop_rx));
        })
    });
    let up = wait_until(Duration::from_secs(10), || {
        in_ns(&rtr, || {
            std::net::TcpStream::connect("127.0.0.1:9464").is_ok()
        })
    });
    assert!(
        up && daemon.alive(),
        "daemon did not start:\n{}",
        daemon.log_text()
    );

    let cli = tb.client_ns(0).unwrap().to_string();
    let svc = service.clone();
    let (results, retried): (Vec<Result<(), String>>, Vec<usize>) = in_ns(&cli, move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut rng = Rng::stream(7, "gateway/proxy-testbed/sizes");
            let sizes: Vec<(u64, u64)> = (0..200u64)
                .map(|i| {
                    let big = (MAX_BYTES * rng.uniform().powi(3)) as u64;
                    let small = rng.below(32 * 1024);
                    if i % 2 == 0 {
                        (big, small)
                    } else {
                        (small, big)
                    }
                })
                .collect();
            let mut results = transfers(&svc, 7000, 5000, &sizes, Duration::from_secs(180)).await;
            // A transfer the kernel's MPTCP reset under this load (seen in CI: 2 of 200, each a
            // reset the proxy passed on while the client waited for its digest) is retried once
            // on a new connection, as a passenger's application would: the proxy's contract is
            // that no byte is lost or altered silently, and a reset is not silent. Anything
            // other than a reset, or more than 2% of them, still fails the test below.
            let reset = |r: &Result<(), String>| {
                matches!(r, Err(e) if e.contains("reset by peer") || e.contains("Broken pipe"))
            };
            let again: Vec<usize> = (0..results.len()).filter(|&i| reset(&results[i])).collect();
            if !again.is_empty() && again.len() <= 4 {
                let retry: Vec<(u64, u64)> = again.iter().map(|&i| sizes[i]).collect();
                let seeds = 6000;
                let second = transfers(&svc, 7000, seeds, &retry, Duration::from_secs(120)).await;
                for (&i, r) in again.iter().zip(second) {
                    results[i] = r.map_err(|e| format!("retried after a reset: {e}"));
                }
            }
            (results, again)
        })
    });
    println!("reset and retried: {retried:?}");
    assert_all_transferred(&results, &daemon.log_text());
    let m = scrape(&rtr, "127.0.0.1:9464");
    assert_eq!(
        metric(&m, "railpath_gateway_connections_accepted_total"),
        Some(200.0 + retried.len() as f64),
        "{m}"
    );
    // Each reset the client saw was one the proxy passed on (a relay ended by an I/O error on
    // the far side, or an onward connect that failed), never one it made up.
    let ended = metric(&m, "railpath_gateway_connections_error_total").unwrap_or(0.0)
        + metric(&m, "railpath_gateway_connections_failed_total").unwrap_or(0.0);
    assert!(
        ended >= retried.len() as f64,
        "{} resets seen by clients, {ended} relays ended by an error\n{m}",
        retried.len()
    );
    // Every onward connection was opened on an MPTCP socket. The kernel falls back to plain TCP
    // when an MP_CAPABLE SYN has been retransmitted (net.mptcp.syn_retrans_before_tcp_fallback,
    // 2 here): 200 simultaneous SYNs into a 300-packet emulated buffer can lose a few, so some
    // fallbacks are expected and must be counted as such; most connections stay MPTCP.
    let onward = |t: &str| {
        metric(
            &m,
            &format!("railpath_gateway_connections_onward_total{{transport=\"{t}\"}}"),
        )
        .unwrap_or(0.0)
    };
    let (mptcp, fallback) = (onward("mptcp"), onward("fallback"));
    println!("onward: {mptcp} mptcp, {fallback} fallback");
    assert_eq!(mptcp + fallback, 200.0 + retried.len() as f64, "{m}");
    assert_eq!(onward("tcp"), 0.0, "{m}");
    // Observed 0 to 33 fallbacks per run on an idle machine: require a majority.
    assert!(mptcp >= 100.0, "only {mptcp} of 200 stayed MPTCP\n{m}");
    // Both carriers carried a real share (kernel interface counters, received bytes).
    let rx = |c: &str| {
        metric(
            &m,
            &format!("railpath_gateway_carrier_bytes_total{{carrier=\"{c}\",direction=\"rx\"}}"),
        )
        .unwrap_or(0.0)
    };
    let tx = |c: &str| {
        metric(
            &m,
            &format!("railpath_gateway_carrier_bytes_total{{carrier=\"{c}\",direction=\"tx\"}}"),
        )
        .unwrap_or(0.0)
    };
    let (a, b) = (rx("A") + tx("A"), rx("B") + tx("B"));
    println!("carrier bytes: A {:.0} MB, B {:.0} MB", a / 1e6, b / 1e6);
    assert!(a > 20e6 && b > 20e6, "one carrier idle: A {a}, B {b}\n{m}");
    // The RTT estimate (PHA-D's default lead time) comes from the subflows: at least the 10 ms
    // of propagation, at most what the queues can add.
    let rtt = metric(&m, "railpath_gateway_rtt_estimate_seconds").unwrap();
    println!("RTT estimate: {:.1} ms", rtt * 1e3);
    assert!((0.010..1.0).contains(&rtt), "RTT estimate {rtt} s");
    assert!(daemon.alive());
    assert!(daemon.stop(), "{}", daemon.log_text());
    drop(stop_tx);
    let _ = server.join();
}
