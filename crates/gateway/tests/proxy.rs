//! The transparent proxy end to end, with real kernel MPTCP in network namespaces:
//!
//! ```text
//!  cli (10.98.0.2) --veth-- rtr: nftables redirect -> railpath-gateway :3129
//!                           rtr a0 10.97.1.1 --veth-- srv a0 10.97.1.2    (carrier A, endpoint 1)
//!                           rtr b0 10.97.2.1 --veth-- srv b0 10.97.2.2    (carrier B, endpoint 2)
//!                                                     srv lo 10.96.0.1 (service)
//! ```
//! The carriers are plain veth pairs so that 200 transfers of up to 10 MB finish in seconds (the
//! rate-limited emulated carriers are exercised by tests/phad_e2e.rs). Needs root and kernel
//! MPTCP; otherwise prints SKIP and passes. The tests run one at a time.

mod common;

use common::*;
use railpath_core::Rng;
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

static SERIAL: Mutex<()> = Mutex::new(());

const SERVICE: &str = "10.96.0.1";
const MPTCP_PORT: u16 = 7000;
const TCP_PORT: u16 = 7001;
const MAX_BYTES: u64 = 10 * 1024 * 1024;

struct Bed {
    ns: Namespaces,
    _dir: TempDir,
    daemon: Daemon,
    server: Option<std::thread::JoinHandle<()>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Bed {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(h) = self.server.take() {
            let _ = h.join();
        }
    }
}

fn build(tag: &str) -> Bed {
    let ns = Namespaces::new(&["cli", "rtr", "srv"]);
    ns.veth("cli", "eth0", "10.98.0.2/24", "rtr", "lan0", "10.98.0.1/24");
    ns.veth("rtr", "a0", "10.97.1.1/24", "srv", "a0", "10.97.1.2/24");
    ns.veth("rtr", "b0", "10.97.2.1/24", "srv", "b0", "10.97.2.2/24");
    ns.ip("cli", &["route", "add", "default", "via", "10.98.0.1"]);
    ns.ip("srv", &["addr", "add", "10.96.0.1/32", "dev", "lo"]);
    ns.ip("rtr", &["route", "add", "10.96.0.1/32", "via", "10.97.1.2"]);
    // Source routing so that a subflow from carrier B's address leaves through carrier B.
    ns.ip(
        "rtr",
        &[
            "route",
            "add",
            "10.96.0.1/32",
            "via",
            "10.97.2.2",
            "table",
            "102",
        ],
    );
    ns.ip("rtr", &["rule", "add", "from", "10.97.2.1", "table", "102"]);
    ns.ip(
        "rtr",
        &[
            "mptcp",
            "limits",
            "set",
            "subflow",
            "4",
            "add_addr_accepted",
            "4",
        ],
    );
    ns.ip(
        "srv",
        &[
            "mptcp",
            "limits",
            "set",
            "subflow",
            "4",
            "add_addr_accepted",
            "4",
        ],
    );
    ns.ip(
        "rtr",
        &[
            "mptcp",
            "endpoint",
            "add",
            "10.97.1.1",
            "dev",
            "a0",
            "id",
            "1",
            "subflow",
        ],
    );
    ns.ip(
        "rtr",
        &[
            "mptcp",
            "endpoint",
            "add",
            "10.97.2.1",
            "dev",
            "b0",
            "id",
            "2",
            "subflow",
        ],
    );
    let rtr = ns.name("rtr");
    sh(&[
        "ip", "netns", "exec", &rtr, "nft",
        "add table ip rpgw; add chain ip rpgw pre { type nat hook prerouting priority dstnat; }; add rule ip rpgw pre iifname \"lan0\" tcp dport { 7000, 7001, 7002 } redirect to :3129",
    ]);
    let dir = TempDir::new(tag);
    let cfg = r#"
[proxy]
mode = "train"
listen = "0.0.0.0:3129"
idle_timeout_s = 60
[metrics]
listen = "127.0.0.1:9464"
[log]
format = "text"
level = "debug"
"#;
    let daemon = Daemon::start(&rtr, cfg, &dir.0);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let srv = ns.name("srv");
    let server = std::thread::spawn(move || {
        let path = format!("/run/netns/{srv}");
        let f = std::fs::File::open(&path).unwrap();
        use std::os::fd::AsRawFd;
        // SAFETY: this thread only, valid fd.
        assert_eq!(unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(server_main(
            SERVICE.to_string(),
            MPTCP_PORT,
            TCP_PORT,
            stop_rx,
        ));
    });
    let mut bed = Bed {
        ns,
        _dir: dir,
        daemon,
        server: Some(server),
        stop: Some(stop_tx),
    };
    let rtr = bed.ns.name("rtr");
    let up = wait_until(Duration::from_secs(10), || {
        in_ns(&rtr, || {
            std::net::TcpStream::connect("127.0.0.1:9464").is_ok()
        })
    });
    assert!(
        up && bed.daemon.alive(),
        "daemon did not start:\n{}",
        bed.daemon.log_text()
    );
    bed
}

fn in_cli<F, R>(bed: &Bed, f: F) -> R
where
    F: FnOnce() -> std::pin::Pin<Box<dyn std::future::Future<Output = R>>> + Send + 'static,
    R: Send + 'static,
{
    in_ns(&bed.ns.name("cli"), move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(f())
    })
}

#[test]
fn two_hundred_concurrent_transfers_keep_every_byte() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    skip_if_unavailable!("two_hundred_concurrent_transfers_keep_every_byte");
    let mut bed = build("p200");
    let results: Vec<Result<(), String>> = in_cli(&bed, || {
        Box::pin(async {
            let mut rng = Rng::stream(5, "gateway/proxy-test/sizes");
            // A random size up to 10 MB in the direction chosen by parity, small the other way.
            let sizes: Vec<(u64, u64)> = (0..200u64)
                .map(|i| {
                    let big = rng.below(MAX_BYTES + 1);
                    let small = rng.below(64 * 1024);
                    if i % 2 == 0 {
                        (big, small)
                    } else {
                        (small, big)
                    }
                })
                .collect();
            transfers(SERVICE, MPTCP_PORT, 1000, &sizes, Duration::from_secs(120)).await
        })
    });
    assert_all_transferred(&results, &bed.daemon.log_text());
    let m = scrape(&bed.ns.name("rtr"), "127.0.0.1:9464");
    assert_eq!(
        metric(&m, "railpath_gateway_connections_accepted_total"),
        Some(200.0),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "railpath_gateway_connections_onward_total{transport=\"mptcp\"}"
        ),
        Some(200.0),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "railpath_gateway_connections_onward_total{transport=\"fallback\"}"
        ),
        Some(0.0)
    );
    assert_eq!(
        metric(&m, "railpath_gateway_connections_error_total"),
        Some(0.0)
    );
    // The kernel saw MPTCP joins on the second carrier: its endpoint was used.
    let nstat = sh_out(&[
        "ip",
        "netns",
        "exec",
        &bed.ns.name("rtr"),
        "nstat",
        "-az",
        "MPTcpExtMPJoinSynAckRx",
    ]);
    let joins: u64 = nstat
        .lines()
        .find_map(|l| {
            l.strip_prefix("MPTcpExtMPJoinSynAckRx").map(|r| {
                r.split_whitespace()
                    .next()
                    .unwrap_or("0")
                    .parse()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0);
    assert!(
        joins >= 1,
        "no MP_JOIN completed on the second carrier:\n{nstat}"
    );
    assert!(bed.daemon.alive());
    assert!(
        bed.daemon.stop(),
        "daemon did not exit cleanly on SIGTERM:\n{}",
        bed.daemon.log_text()
    );
}

#[test]
fn falls_back_to_tcp_against_a_server_without_mptcp_and_survives_a_reset() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    skip_if_unavailable!("falls_back_to_tcp_against_a_server_without_mptcp_and_survives_a_reset");
    let mut bed = build("pfb");
    // 1. A plain-TCP server: the MPTCP connect falls back, bytes still intact, fallback counted.
    let r = in_cli(&bed, || {
        Box::pin(async { transfer(SERVICE, TCP_PORT, 7, 3_000_000, 2_000_000).await })
    });
    assert_eq!(r, Ok(()));
    let m = scrape(&bed.ns.name("rtr"), "127.0.0.1:9464");
    assert_eq!(
        metric(
            &m,
            "railpath_gateway_connections_onward_total{transport=\"fallback\"}"
        ),
        Some(1.0),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "railpath_gateway_connections_onward_total{transport=\"mptcp\"}"
        ),
        Some(0.0),
        "{m}"
    );

    // 2. A passenger resets mid-upload: the relay ends with an error, the daemon lives on.
    let reset_ok = in_cli(&bed, || {
        Box::pin(async {
            let mut s = tokio::net::TcpStream::connect((SERVICE, MPTCP_PORT))
                .await
                .map_err(|e| e.to_string())?;
            s.write_all(&(1u64 << 20).to_be_bytes())
                .await
                .map_err(|e| e.to_string())?;
            let mut p = Payload::new(9, 4 << 20);
            let mut buf = vec![0u8; 64 * 1024];
            for _ in 0..16 {
                let n = p.fill(&mut buf);
                s.write_all(&buf[..n]).await.map_err(|e| e.to_string())?;
            }
            socket2::SockRef::from(&s)
                .set_linger(Some(Duration::ZERO))
                .map_err(|e| e.to_string())?;
            drop(s);
            Ok::<(), String>(())
        })
    });
    assert_eq!(reset_ok, Ok(()));
    let rtr = bed.ns.name("rtr");
    let counted = wait_until(Duration::from_secs(10), || {
        let m = scrape(&rtr, "127.0.0.1:9464");
        metric(&m, "railpath_gateway_connections_error_total") == Some(1.0)
            && metric(&m, "railpath_gateway_connections_active") == Some(0.0)
    });
    assert!(
        counted,
        "reset not seen as a relay error:\n{}",
        scrape(&rtr, "127.0.0.1:9464")
    );
    assert!(
        bed.daemon.alive(),
        "daemon died after a client reset:\n{}",
        bed.daemon.log_text()
    );
    // 3. And it still relays afterwards, over MPTCP.
    let r = in_cli(&bed, || {
        Box::pin(async { transfer(SERVICE, MPTCP_PORT, 11, 500_000, 500_000).await })
    });
    assert_eq!(r, Ok(()));
    let m = scrape(&rtr, "127.0.0.1:9464");
    assert_eq!(
        metric(
            &m,
            "railpath_gateway_connections_onward_total{transport=\"mptcp\"}"
        ),
        Some(2.0),
        "{m}"
    );
    // 4. A connection to a port the server does not serve: refused onward, client reset, counted.
    let r = in_cli(&bed, || {
        Box::pin(async { transfer(SERVICE, 7002, 1, 10, 10).await })
    });
    assert!(r.is_err());
    let m = scrape(&rtr, "127.0.0.1:9464");
    assert_eq!(
        metric(&m, "railpath_gateway_connections_failed_total"),
        Some(1.0),
        "{m}"
    );
    assert!(bed.daemon.alive());
    assert!(bed.daemon.stop());
}

#[test]
fn ground_mode_terminates_mptcp_and_enforces_the_connection_limit() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    skip_if_unavailable!("ground_mode_terminates_mptcp_and_enforces_the_connection_limit");
    let ns = Namespaces::new(&["gnd"]);
    let gnd = ns.name("gnd");
    let dir = TempDir::new("gnd");
    let cfg = "[proxy]\nmode = \"ground\"\nlisten = \"127.0.0.1:8443\"\nupstream = \"127.0.0.1:7101\"\nmax_connections = 2\n[metrics]\nlisten = \"127.0.0.1:9464\"\n[log]\nformat = \"text\"\nlevel = \"debug\"\n";
    let mut daemon = Daemon::start(&gnd, cfg, &dir.0);
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let g2 = gnd.clone();
    let server = std::thread::spawn(move || {
        in_ns(&g2, move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(server_main("127.0.0.1".into(), 7100, 7101, stop_rx));
        })
    });
    assert!(wait_until(Duration::from_secs(10), || in_ns(&gnd, || {
        std::net::TcpStream::connect("127.0.0.1:9464").is_ok()
    })));
    let gnd_c = gnd.clone();
    let (was_mptcp, transfer_ok, third, after) = in_ns(&gnd, move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let addr: std::net::SocketAddr = "127.0.0.1:8443".parse().unwrap();
            let timeout = Duration::from_secs(5);
            // An MPTCP client (a train) through the ground proxy to a plain-TCP upstream.
            let (s, _) = railpath_gateway::proxy::connect(addr, true, timeout)
                .await
                .unwrap();
            let was_mptcp = railpath_gateway::sockopt::is_mptcp(&s).unwrap();
            let transfer_ok = transfer_on(s, 3, 2_000_000, 1_000_000).await;
            // The daemon tears the first relay down after the client has finished: wait until
            // it no longer counts toward the limit (on a loaded machine this takes a moment).
            let idle = wait_until(Duration::from_secs(5), || {
                let m = scrape(&gnd_c, "127.0.0.1:9464");
                metric(&m, "railpath_gateway_connections_active") == Some(0.0)
            });
            assert!(idle, "the first relay never ended");
            // Two idle connections fill the limit; the third is reset.
            let (h1, _) = railpath_gateway::proxy::connect(addr, true, timeout)
                .await
                .unwrap();
            let (h2, _) = railpath_gateway::proxy::connect(addr, true, timeout)
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(300)).await;
            // The daemon accepts the third and resets it at once. On loopback the reset can
            // arrive before the client's connect has returned, which then reports it (CI saw
            // ECONNRESET from connect); either way the connection must end without data.
            let third = match railpath_gateway::proxy::connect(addr, true, timeout).await {
                Ok((mut s3, _)) => {
                    let mut b = [0u8; 1];
                    let r = tokio::time::timeout(timeout, s3.read(&mut b)).await;
                    matches!(r, Ok(Ok(0)) | Ok(Err(_)))
                }
                Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
            };
            drop((h1, h2));
            let idle = wait_until(Duration::from_secs(5), || {
                let m = scrape(&gnd_c, "127.0.0.1:9464");
                metric(&m, "railpath_gateway_connections_active") == Some(0.0)
            });
            assert!(idle, "the held relays never ended");
            let (s4, _) = railpath_gateway::proxy::connect(addr, true, timeout)
                .await
                .unwrap();
            let after = transfer_on(s4, 4, 10_000, 10_000).await;
            (was_mptcp, transfer_ok, third, after)
        })
    });
    assert!(was_mptcp, "the ground listener did not accept MPTCP");
    assert_eq!(transfer_ok, Ok(()), "daemon log:\n{}", daemon.log_text());
    assert!(third, "third connection over the limit was not closed");
    assert_eq!(after, Ok(()), "daemon log:\n{}", daemon.log_text());
    let m = scrape(&gnd, "127.0.0.1:9464");
    assert_eq!(
        metric(&m, "railpath_gateway_connections_rejected_total"),
        Some(1.0),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "railpath_gateway_connections_onward_total{transport=\"tcp\"}"
        ),
        Some(4.0),
        "{m}"
    );
    assert!(daemon.alive());
    assert!(daemon.stop(), "{}", daemon.log_text());
    drop(stop_tx);
    let _ = server.join();
}

/// The peak resident memory of a process, kB (`VmHWM`, proc(5)).
fn peak_rss_kb(pid: u32) -> u64 {
    let t = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    t.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[test]
fn a_slow_passenger_gets_every_byte_in_order_and_the_proxy_holds_only_its_buffer() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    skip_if_unavailable!(
        "a_slow_passenger_gets_every_byte_in_order_and_the_proxy_holds_only_its_buffer"
    );
    let mut bed = build("pslow");
    let pid = bed.daemon.child.id();
    let before = peak_rss_kb(pid);
    const DOWN: u64 = 48 * 1024 * 1024;
    // The passenger reads 64 KiB every 5 ms (about 13 MB/s) while the server could send at
    // veth speed: the proxy must hold the server back (its relay buffer is 64 KiB) rather than
    // take the whole download into its memory.
    let r: Result<Duration, String> = in_cli(&bed, || {
        Box::pin(async {
            let t0 = std::time::Instant::now();
            let mut s = tokio::net::TcpStream::connect((SERVICE, MPTCP_PORT))
                .await
                .map_err(|e| format!("connect: {e}"))?;
            s.write_all(&DOWN.to_be_bytes())
                .await
                .map_err(|e| e.to_string())?;
            s.shutdown().await.map_err(|e| e.to_string())?;
            let mut digest = [0u8; 32];
            s.read_exact(&mut digest)
                .await
                .map_err(|e| format!("digest: {e}"))?;
            let mut h = <sha2::Sha256 as sha2::Digest>::new();
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = 0u64;
            loop {
                let n = s
                    .read(&mut buf)
                    .await
                    .map_err(|e| format!("download: {e}"))?;
                if n == 0 {
                    break;
                }
                sha2::Digest::update(&mut h, &buf[..n]);
                got += n as u64;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            let d: [u8; 32] = sha2::Digest::finalize(h).into();
            if got != DOWN || d != Payload::sha256(DOWN, DOWN) {
                return Err(format!("got {got} of {DOWN} B or SHA-256 mismatch"));
            }
            Ok(t0.elapsed())
        })
    });
    let took = r.unwrap_or_else(|e| panic!("{e}\n{}", bed.daemon.log_text()));
    // The reader's pace set the time (48 MiB at most 64 KiB per 5 ms: at least 3.8 s).
    assert!(took >= Duration::from_secs(3), "{took:?}");
    // The daemon's peak memory grew by far less than the 48 MiB it relayed.
    let grew_kb = peak_rss_kb(pid).saturating_sub(before);
    assert!(
        grew_kb < 8 * 1024,
        "the proxy's peak memory grew by {grew_kb} kB"
    );
    assert!(bed.daemon.alive());
}
