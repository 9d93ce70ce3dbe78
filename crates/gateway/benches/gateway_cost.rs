//! The gateway's own cost (issue 11): `cargo bench -p railpath-gateway --bench gateway_cost`.
//! Numbers and their reading: docs/performance.md, "2026-11-26: the gateway's own cost".
//!
//! Topology: network namespaces joined by plain veth pairs (no emulated carrier, no netem), the
//! same as crates/gateway/tests/proxy.rs:
//!
//! ```text
//!  cli 10.98.0.2 --veth-- rtr lan0 10.98.0.1: nftables redirect of :7000 -> railpath-gateway :3129
//!                          rtr a0 10.97.1.1 --veth-- srv a0 10.97.1.2   (carrier A, endpoint 1)
//!                          rtr b0 10.97.2.1 --veth-- srv b0 10.97.2.2   (carrier B, endpoint 2)
//!                                                    srv lo 10.96.0.1  (the service)
//! ```
//!
//! The daemon is the real `railpath-gateway` binary (release build), proxy in train mode with
//! its defaults (64 KiB relay buffer per direction); its onward connections are MPTCP with one
//! subflow per carrier. The reference paths are the same namespaces without the proxy: the
//! client's TCP routed by `rtr` to the service on port 7010 (not redirected), and an MPTCP
//! connection opened in `rtr` itself (the proxy's onward leg alone).
//!
//! Measured, each printed as one JSON line (`"bench":"gateway_cost"`) and a `#` human line:
//! 1. `throughput`: one connection, 1 GiB downloaded and 1 GiB uploaded, median of 5 (repeats
//!    interleaved across paths), through the proxy and on both reference paths; with the daemon's
//!    CPU use (/proc/<pid>/stat, proc(5)).
//! 2. `latency`: 64-byte request/response over one connection (TCP_NODELAY at both ends), 20 000
//!    round trips after 2 000 of warm-up; p50/p99/max, and through-proxy minus routed-TCP. Then
//!    300 round trips with each request written in two parts (8 + 56 bytes), which would show a
//!    Nagle/delayed-ACK stall in the relay (RFC 896; RFC 1122 section 4.2.3.2).
//! 3. `concurrent`: 1000 connections at once through the proxy, each uploading and downloading
//!    a deterministic pseudo-random payload whose SHA-256 (FIPS 180-4) is checked at the far end
//!    (upload: the server returns the digest; download: the client recomputes it).
//! 4. `actuation`: PHA-D, from the decision to the MP_PRIO option on the wire. MP_PRIO (RFC 8684
//!    section 3.3.8) is TCP option kind 30 with subtype 5 in the high nibble of its third byte
//!    and the B (backup) flag in its low bit. It is captured on the router's carrier B interface
//!    with an AF_PACKET socket (packet(7)); outgoing frames are timestamped by the kernel with
//!    SO_TIMESTAMPNS (socket(7); CLOCK_REALTIME, taken when the frame reaches the packet taps of
//!    the device's transmit path) and compared with CLOCK_REALTIME read just before the decision.
//!    Two ways: `controller`: `Controller::step` called in this process with a fix inside carrier
//!    B's zone (the decision tick itself; the controller's netlink request makes the kernel send
//!    MP_PRIO, see src/pm.rs), with 1, 100 and 1000 open passenger connections (first and
//!    last MP_PRIO); `daemon`: the daemon with a gpsd position source served by this process, from
//!    writing the gpsd TPV report that puts the train in the zone to the MP_PRIO (the daemon's
//!    controller wakes on every new fix, so this is the whole path: gpsd parsing, projection
//!    onto the track, decision, netlink, kernel).
//!
//! Needs root, kernel MPTCP (net.mptcp.enabled=1), `ip`, `nft` and `sysctl`; otherwise prints SKIP
//! and exits 0. Arguments that do not start with `--` select measurements by name (`throughput`,
//! `latency`, `concurrent`, `actuation`); none selects all. Takes 50-80 s on 2 vCPUs. No assertion
//! on any timing: the numbers are printed, the aims are judged in docs/performance.md. Byte counts
//! and digests are checked (a mismatch is an error, not a number).

// The integration tests' fixtures (commands, payloads, scratch directories, the metrics scraper,
// the environment check), shared rather than copied.
#[path = "../tests/common/mod.rs"]
mod common;

use common::{metric, sh, Payload, TempDir};
use railpath_gateway::config::Config;
use railpath_gateway::controller::Controller;
use railpath_gateway::metrics::Metrics;
use railpath_gateway::phad::Fix;
use railpath_gateway::position::track::Track;
use railpath_gateway::position::PositionState;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SERVICE: &str = "10.96.0.1";
/// The service's MPTCP port; connections from `cli` to it are redirected to the proxy.
const PROXIED_PORT: u16 = 7000;
/// The service's plain TCP port, not redirected: the routed reference path.
const ROUTED_PORT: u16 = 7010;
const PROXY_METRICS: &str = "127.0.0.1:9464";
const PHAD_METRICS: &str = "127.0.0.1:9466";
const GPSD_ADDR: &str = "127.0.0.1:2947";
const BULK_BYTES: u64 = 1 << 30;
const BULK_REPEATS: usize = 5;
const PING_BYTES: usize = 64;
const PING_WARMUP: usize = 2_000;
const PING_ROUNDS: usize = 20_000;
/// Requests written in two parts: fewer, in case each waits for a delayed ACK.
const SPLIT_WARMUP: usize = 20;
const SPLIT_ROUNDS: usize = 300;
const CONCURRENT: usize = 1000;
const ACTUATIONS: usize = 50;
/// Carrier B's handover zone in the bench's handover table (metres along the track).
const ZONE: (f64, f64) = (1000.0, 5000.0);
/// A position inside the zone, and one past it with no zone ahead.
const IN_ZONE_M: f64 = 2500.0;
const CLEAR_M: f64 = 8000.0;

// ---------------------------------------------------------------------------------------------
// Environment: namespaces, commands, the daemon.

/// Why the bench cannot run here, or None: the tests' conditions, and `sysctl`.
fn skip_reason() -> Option<String> {
    common::skip_reason().or_else(|| {
        Command::new("sysctl")
            .arg("-V")
            .output()
            .is_err()
            .then(|| "`sysctl` is not installed (scripts/setup.sh)".to_string())
    })
}

/// The bench's namespaces (`rp-gwb-<pid>-<tag>`), deleted on drop, also after a panic.
struct Net {
    names: Vec<String>,
}

impl Net {
    /// Creates the namespaces `tags`, each with its loopback up.
    fn new(tags: &[&str]) -> Net {
        let mut net = Net { names: vec![] };
        for t in tags {
            let n = Net::name(t);
            let _ = Command::new("ip").args(["netns", "del", &n]).output();
            sh(&["ip", "netns", "add", &n]);
            net.names.push(n.clone());
            sh(&["ip", "-n", &n, "link", "set", "lo", "up"]);
        }
        net
    }

    /// The full name of namespace `tag`.
    fn name(tag: &str) -> String {
        format!("rp-gwb-{}-{tag}", std::process::id())
    }

    /// `ip -n <ns> args...`
    fn ip(&self, tag: &str, args: &[&str]) {
        let n = Net::name(tag);
        let mut v = vec!["ip", "-n", n.as_str()];
        v.extend_from_slice(args);
        sh(&v);
    }

    /// `ip netns exec <ns> args...`
    fn exec(&self, tag: &str, args: &[&str]) {
        let n = Net::name(tag);
        let mut v = vec!["ip", "netns", "exec", n.as_str()];
        v.extend_from_slice(args);
        sh(&v);
    }

    /// A veth pair from `a`'s `a_dev` to `b`'s `b_dev`, addressed and up.
    fn veth(&self, (a, a_dev, a_addr): (&str, &str, &str), (b, b_dev, b_addr): (&str, &str, &str)) {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id() % 1_000_000;
        let (ta, tb) = (format!("rpb{pid}x{n}a"), format!("rpb{pid}x{n}b"));
        sh(&[
            "ip", "link", "add", &ta, "type", "veth", "peer", "name", &tb,
        ]);
        sh(&[
            "ip",
            "link",
            "set",
            &ta,
            "netns",
            &Net::name(a),
            "name",
            a_dev,
        ]);
        sh(&[
            "ip",
            "link",
            "set",
            &tb,
            "netns",
            &Net::name(b),
            "name",
            b_dev,
        ]);
        self.ip(a, &["addr", "add", a_addr, "dev", a_dev]);
        self.ip(b, &["addr", "add", b_addr, "dev", b_dev]);
        self.ip(a, &["link", "set", a_dev, "up"]);
        self.ip(b, &["link", "set", b_dev, "up"]);
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// Runs `f` on a new thread that has entered namespace `tag`; sockets it opens live there (and
/// may be used from any thread afterwards).
fn in_ns<R: Send + 'static>(tag: &str, f: impl FnOnce() -> R + Send + 'static) -> R {
    let path = format!("/run/netns/{}", Net::name(tag));
    std::thread::spawn(move || {
        enter_ns(&path);
        f()
    })
    .join()
    .expect("namespace thread panicked")
}

/// Moves the calling thread into the network namespace at `path` (setns(2)).
fn enter_ns(path: &str) {
    let file = File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    // SAFETY: setns on the calling thread with a valid namespace fd.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
}

/// `railpath-gateway run` inside a namespace; killed on drop.
struct Daemon {
    child: Child,
    log: PathBuf,
}

impl Daemon {
    /// Writes `config` to `dir/<name>.toml` and starts the daemon in namespace `tag`, then waits
    /// (at most 10 s) until its metrics port at `metrics` answers, which it opens last.
    fn start(tag: &str, name: &str, config: &str, dir: &Path, metrics: &'static str) -> Daemon {
        let cfg = dir.join(format!("{name}.toml"));
        std::fs::write(&cfg, config).unwrap();
        let log = dir.join(format!("{name}.log"));
        // `ip netns exec` execs the daemon: the child's pid is the daemon's.
        let child = Command::new("ip")
            .args(["netns", "exec", &Net::name(tag)])
            .arg(env!("CARGO_BIN_EXE_railpath-gateway"))
            .args(["run", "-c"])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .expect("spawn railpath-gateway");
        let mut d = Daemon { child, log };
        let t = Instant::now();
        let up = loop {
            let ok = in_ns(tag, move || TcpStream::connect(metrics).is_ok());
            if ok || t.elapsed() > Duration::from_secs(10) {
                break ok;
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        assert!(
            up && matches!(d.child.try_wait(), Ok(None)),
            "railpath-gateway did not start:\n{}",
            d.log_text()
        );
        d
    }

    /// The daemon's stderr so far.
    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// User + system CPU time of the daemon so far, in seconds (proc(5), /proc/<pid>/stat
    /// fields 14 and 15, in clock ticks).
    fn cpu_s(&self) -> f64 {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap_or_default();
        // The command name may hold spaces; the fields after it start at field 3 (state).
        let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
        let f: Vec<u64> = rest
            .split_whitespace()
            .map(|x| x.parse().unwrap_or(0))
            .collect();
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        (f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)) as f64 / hz
    }

    /// SIGTERM, then up to 10 s for a clean exit; true when it exited with success.
    fn stop(&mut self) -> bool {
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.success();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// GET /metrics from the daemon in namespace `tag` (the tests' scraper).
fn scrape(tag: &str, addr: &'static str) -> String {
    common::scrape(&Net::name(tag), addr)
}

/// A counter of the kernel's MPTcpExt statistics (/proc/net/netstat) in namespace `tag`.
fn mptcp_counter(tag: &str, key: &'static str) -> u64 {
    in_ns(tag, move || {
        let t = std::fs::read_to_string("/proc/thread-self/net/netstat").unwrap();
        let mut lines = t.lines();
        while let (Some(h), Some(v)) = (lines.next(), lines.next()) {
            if h.starts_with("MPTcpExt:") {
                let i = h.split_whitespace().position(|k| k == key)?;
                return v.split_whitespace().nth(i)?.parse().ok();
            }
        }
        None
    })
    .unwrap_or_else(|| panic!("no MPTcpExt {key} in /proc/net/netstat"))
}

/// CLOCK_REALTIME in nanoseconds: the clock of SO_TIMESTAMPNS.
fn realtime_ns() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

// ---------------------------------------------------------------------------------------------
// The bed: namespaces, routes, MPTCP endpoints, the redirect, the server and the proxy.

struct Bed {
    _net: Net,
    dir: TempDir,
    proxy: Daemon,
    stop_server: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Bed {
    fn drop(&mut self) {
        drop(self.stop_server.take());
        if let Some(h) = self.server.take() {
            let _ = h.join();
        }
    }
}

/// Builds the topology of the module doc, starts the server in `srv` and the proxy in `rtr`.
fn build_bed() -> Bed {
    let net = Net::new(&["cli", "rtr", "srv"]);
    net.veth(
        ("cli", "eth0", "10.98.0.2/24"),
        ("rtr", "lan0", "10.98.0.1/24"),
    );
    net.veth(("rtr", "a0", "10.97.1.1/24"), ("srv", "a0", "10.97.1.2/24"));
    net.veth(("rtr", "b0", "10.97.2.1/24"), ("srv", "b0", "10.97.2.2/24"));
    net.ip("cli", &["route", "add", "default", "via", "10.98.0.1"]);
    net.ip("srv", &["addr", "add", "10.96.0.1/32", "dev", "lo"]);
    // The routed reference path needs the way back to the passengers.
    net.ip("srv", &["route", "add", "10.98.0.0/24", "via", "10.97.1.1"]);
    net.exec("rtr", &["sysctl", "-qw", "net.ipv4.ip_forward=1"]);
    net.ip("rtr", &["route", "add", "10.96.0.1/32", "via", "10.97.1.2"]);
    // Source routing: a subflow from carrier B's address leaves through carrier B.
    net.ip(
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
    net.ip("rtr", &["rule", "add", "from", "10.97.2.1", "table", "102"]);
    for ns in ["rtr", "srv"] {
        net.ip(
            ns,
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
    }
    for (addr, dev, id) in [("10.97.1.1", "a0", "1"), ("10.97.2.1", "b0", "2")] {
        net.ip(
            "rtr",
            &[
                "mptcp", "endpoint", "add", addr, "dev", dev, "id", id, "subflow",
            ],
        );
    }
    net.exec(
        "rtr",
        &[
            "nft",
            &format!(
                "add table ip rpgwb; add chain ip rpgwb pre {{ type nat hook prerouting priority dstnat; }}; \
                 add rule ip rpgwb pre iifname \"lan0\" tcp dport {PROXIED_PORT} redirect to :3129"
            ),
        ],
    );
    let dir = TempDir::new("gwb");
    let cfg = format!(
        "[proxy]\nmode = \"train\"\nlisten = \"0.0.0.0:3129\"\n[metrics]\nlisten = \"{PROXY_METRICS}\"\n\
         [log]\nformat = \"json\"\nlevel = \"info\"\n"
    );
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let srv = format!("/run/netns/{}", Net::name("srv"));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        enter_ns(&srv);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(server_main(stop_rx, ready_tx));
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("server listening");
    let proxy = Daemon::start("rtr", "proxy", &cfg, &dir.0, PROXY_METRICS);
    Bed {
        _net: net,
        dir,
        proxy,
        stop_server: Some(stop_tx),
        server: Some(server),
    }
}

// ---------------------------------------------------------------------------------------------
// The server (in `srv`): one byte of operation, then
//   'D' n: send n bytes, close;            'U' n: count the upload until EOF, answer the count;
//   'E': echo 64-byte messages until EOF;  'H' seed n: hash the upload until EOF, answer its
//   SHA-256, then send n pseudo-random bytes from `seed` and close.

/// Opens a listener on the service address: MPTCP (it also accepts plain TCP) or TCP.
fn listen(port: u16, mptcp: bool) -> tokio::net::TcpListener {
    let addr: SocketAddr = format!("{SERVICE}:{port}").parse().unwrap();
    let (s, _) = railpath_gateway::sockopt::stream_socket(&addr, mptcp).unwrap();
    s.set_reuse_address(true).unwrap();
    s.bind(&addr.into()).unwrap();
    s.listen(4096).unwrap();
    tokio::net::TcpListener::from_std(s.into()).unwrap()
}

/// Serves both ports until `stop` fires (or its sender is dropped).
async fn server_main(stop: tokio::sync::oneshot::Receiver<()>, ready: std::sync::mpsc::Sender<()>) {
    let mp = listen(PROXIED_PORT, true);
    let tcp = listen(ROUTED_PORT, false);
    let _ = ready.send(());
    let serve = |l: tokio::net::TcpListener| async move {
        loop {
            if let Ok((s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let _ = serve_conn(s).await;
                });
            }
        }
    };
    tokio::select! {
        _ = stop => {}
        _ = serve(mp) => {}
        _ = serve(tcp) => {}
    }
}

/// One server connection (see the protocol above).
async fn serve_conn(mut s: tokio::net::TcpStream) -> std::io::Result<()> {
    let op = s.read_u8().await?;
    let mut buf = vec![0u8; 256 * 1024];
    match op {
        b'D' => {
            let mut left = s.read_u64().await?;
            buf.fill(0x5a);
            while left > 0 {
                let k = left.min(buf.len() as u64) as usize;
                s.write_all(&buf[..k]).await?;
                left -= k as u64;
            }
            s.shutdown().await?;
        }
        b'U' => {
            let mut n = 0u64;
            loop {
                match s.read(&mut buf).await? {
                    0 => break,
                    k => n += k as u64,
                }
            }
            s.write_u64(n).await?;
            s.shutdown().await?;
        }
        b'E' => {
            // Request/response: no Nagle delay at this end (the client sets it too).
            let _ = s.set_nodelay(true);
            let mut m = [0u8; PING_BYTES];
            loop {
                match s.read_exact(&mut m).await {
                    Ok(_) => s.write_all(&m).await?,
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e),
                }
            }
        }
        b'H' => {
            let seed = s.read_u64().await?;
            let down = s.read_u64().await?;
            let mut h = Sha256::new();
            loop {
                match s.read(&mut buf).await? {
                    0 => break,
                    k => h.update(&buf[..k]),
                }
            }
            s.write_all(&h.finalize()).await?;
            let mut p = Payload::new(seed, down);
            loop {
                let k = p.fill(&mut buf);
                if k == 0 {
                    break;
                }
                s.write_all(&buf[..k]).await?;
            }
            s.shutdown().await?;
        }
        _ => {}
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Clients.

/// Which way the bulk bytes go.
#[derive(Clone, Copy)]
enum Dir {
    Download,
    Upload,
}

/// A reference or measured path from a client to the service.
#[derive(Clone, Copy, PartialEq)]
enum PathKind {
    /// `cli` -> redirected to the proxy in `rtr` -> MPTCP to the service.
    Proxy,
    /// `cli` -> routed by `rtr` -> plain TCP to the service (no proxy).
    Routed,
    /// MPTCP opened in `rtr` itself to the service: the proxy's onward leg alone.
    RouterMptcp,
}

impl PathKind {
    /// The name used in the JSON lines.
    fn name(self) -> &'static str {
        match self {
            PathKind::Proxy => "proxy",
            PathKind::Routed => "routed_tcp",
            PathKind::RouterMptcp => "router_mptcp",
        }
    }

    /// The namespace the client runs in.
    fn ns(self) -> &'static str {
        match self {
            PathKind::RouterMptcp => "rtr",
            _ => "cli",
        }
    }

    /// Connects (blocking) from the calling thread, which must be in [`PathKind::ns`].
    fn connect(self) -> TcpStream {
        let port = if self == PathKind::Routed {
            ROUTED_PORT
        } else {
            PROXIED_PORT
        };
        let addr: SocketAddr = format!("{SERVICE}:{port}").parse().unwrap();
        let (s, _) =
            railpath_gateway::sockopt::stream_socket(&addr, self == PathKind::RouterMptcp).unwrap();
        s.set_nonblocking(false).unwrap();
        s.connect_timeout(&addr.into(), Duration::from_secs(5))
            .unwrap_or_else(|e| panic!("connect over {}: {e}", self.name()));
        s.into()
    }
}

/// One bulk transfer of `bytes` over `path`; seconds from the request to the last byte (download:
/// EOF; upload: the server's byte count, which is checked).
fn bulk(path: PathKind, dir: Dir, bytes: u64) -> f64 {
    in_ns(path.ns(), move || {
        let mut s = path.connect();
        let mut buf = vec![0u8; 256 * 1024];
        let t = Instant::now();
        match dir {
            Dir::Download => {
                s.write_all(b"D").unwrap();
                s.write_all(&bytes.to_be_bytes()).unwrap();
                let mut n = 0u64;
                loop {
                    match s.read(&mut buf).unwrap() {
                        0 => break,
                        k => n += k as u64,
                    }
                }
                assert_eq!(n, bytes, "download over {} cut short", path.name());
            }
            Dir::Upload => {
                s.write_all(b"U").unwrap();
                let mut left = bytes;
                while left > 0 {
                    let k = left.min(buf.len() as u64) as usize;
                    s.write_all(&buf[..k]).unwrap();
                    left -= k as u64;
                }
                s.shutdown(std::net::Shutdown::Write).unwrap();
                let mut n = [0u8; 8];
                s.read_exact(&mut n).unwrap();
                assert_eq!(
                    u64::from_be_bytes(n),
                    bytes,
                    "upload over {} cut short",
                    path.name()
                );
            }
        }
        t.elapsed().as_secs_f64()
    })
}

/// 64-byte request/responses over one connection on `path` (the request in one write, or with
/// `split` in two: 8 then 56 bytes): the round-trip times in microseconds, sorted, after `warmup`
/// unrecorded ones.
fn pingpong(path: PathKind, split: bool, warmup: usize, rounds: usize) -> Vec<f64> {
    in_ns(path.ns(), move || {
        let mut s = path.connect();
        s.set_nodelay(true).unwrap();
        s.write_all(b"E").unwrap();
        let mut m = [0x42u8; PING_BYTES];
        let mut rtts = Vec::with_capacity(rounds);
        for i in 0..warmup + rounds {
            let t = Instant::now();
            if split {
                s.write_all(&m[..8]).unwrap();
                s.write_all(&m[8..]).unwrap();
            } else {
                s.write_all(&m).unwrap();
            }
            s.read_exact(&mut m).unwrap();
            if i >= warmup {
                rtts.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        rtts.sort_by(f64::total_cmp);
        rtts
    })
}

/// The `q` quantile (0..=1) of sorted values (nearest rank).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let i = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i]
}

/// The median of a few values.
fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    quantile(&s, 0.5)
}

/// One hashed transfer through the proxy: uploads `up` bytes from `seed`, checks the server's
/// SHA-256 of them, downloads `down` bytes from `seed + 1` and checks their SHA-256.
async fn hashed_transfer(seed: u64, up: u64, down: u64) -> Result<(), String> {
    let mut s = tokio::net::TcpStream::connect((SERVICE, PROXIED_PORT))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let mut hdr = vec![b'H'];
    hdr.extend_from_slice(&(seed + 1).to_be_bytes());
    hdr.extend_from_slice(&down.to_be_bytes());
    s.write_all(&hdr).await.map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut p = Payload::new(seed, up);
    let mut h = Sha256::new();
    loop {
        let k = p.fill(&mut buf);
        if k == 0 {
            break;
        }
        h.update(&buf[..k]);
        s.write_all(&buf[..k])
            .await
            .map_err(|e| format!("upload: {e}"))?;
    }
    s.shutdown().await.map_err(|e| e.to_string())?;
    let mut got = [0u8; 32];
    s.read_exact(&mut got)
        .await
        .map_err(|e| format!("digest: {e}"))?;
    if got[..] != h.finalize()[..] {
        return Err(format!("upload of {up} B: SHA-256 differs at the server"));
    }
    let (mut h, mut want) = (Sha256::new(), Sha256::new());
    let mut p = Payload::new(seed + 1, down);
    let mut exp = vec![0u8; 64 * 1024];
    let mut n = 0u64;
    loop {
        let k = s
            .read(&mut buf)
            .await
            .map_err(|e| format!("download: {e}"))?;
        if k == 0 {
            break;
        }
        n += k as u64;
        h.update(&buf[..k]);
    }
    while let k @ 1.. = p.fill(&mut exp) {
        want.update(&exp[..k]);
    }
    if n != down || h.finalize() != want.finalize() {
        return Err(format!("download: {n} of {down} B, or SHA-256 differs"));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// MP_PRIO capture (AF_PACKET) and the PHA-D inputs.

/// One MP_PRIO option seen leaving the router: kernel timestamp (CLOCK_REALTIME, ns) and B flag.
#[derive(Clone, Copy, Debug)]
struct Prio {
    ts_ns: i64,
    backup: bool,
}

/// The B flag of the MP_PRIO option in an Ethernet/IPv4/TCP frame, if it carries one (RFC 8684
/// section 3.3.8: kind 30, length 3 or 4, subtype 5 in the high nibble of the third byte).
fn mp_prio(frame: &[u8]) -> Option<bool> {
    if frame.get(12..14)? != [0x08, 0x00] {
        return None;
    }
    let ip = frame.get(14..)?;
    if *ip.get(9)? != 6 {
        return None;
    }
    let tcp = ip.get(((ip[0] & 0x0f) as usize) * 4..)?;
    let opts = tcp.get(20..((*tcp.get(12)? >> 4) as usize) * 4)?;
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => break,
            1 => i += 1,
            kind => {
                let len = *opts.get(i + 1)? as usize;
                if len < 2 || i + len > opts.len() {
                    return None;
                }
                if kind == 30 && len >= 3 && opts[i + 2] >> 4 == 5 {
                    return Some(opts[i + 2] & 1 == 1);
                }
                i += len;
            }
        }
    }
    None
}

/// An AF_PACKET capture of MP_PRIO options sent on one interface, running on its own thread.
struct Capture {
    stop: Arc<AtomicBool>,
    handle: std::thread::JoinHandle<Vec<Prio>>,
}

impl Capture {
    /// Starts capturing outgoing frames on `ifname` in namespace `tag`; returns once the socket
    /// is bound.
    fn start(tag: &str, ifname: &'static str) -> Capture {
        let path = format!("/run/netns/{}", Net::name(tag));
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let handle = std::thread::spawn(move || {
            enter_ns(&path);
            let fd = packet_socket(ifname);
            let _ = ready_tx.send(());
            let mut out = Vec::new();
            while !stop2.load(Ordering::Relaxed) {
                if let Some((frame, ts_ns, outgoing)) = recv_frame(&fd) {
                    if let (true, Some(backup)) = (outgoing, mp_prio(&frame)) {
                        out.push(Prio { ts_ns, backup });
                    }
                }
            }
            out
        });
        ready_rx
            .recv_timeout(Duration::from_secs(5))
            .expect("capture socket bound");
        Capture { stop, handle }
    }

    /// Stops the capture; every MP_PRIO seen.
    fn finish(self) -> Vec<Prio> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.join().expect("capture thread")
    }
}

/// A raw AF_PACKET socket bound to `ifname` (all protocols), with kernel timestamps
/// (SO_TIMESTAMPNS) and a 50 ms receive timeout so that the capture loop can stop.
fn packet_socket(ifname: &str) -> std::os::fd::OwnedFd {
    use std::os::fd::FromRawFd;
    let proto = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: plain socket(2) call; the fd is owned below.
    let raw = unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            proto as i32,
        )
    };
    assert!(
        raw >= 0,
        "AF_PACKET socket: {}",
        std::io::Error::last_os_error()
    );
    // SAFETY: `raw` is a fresh, valid fd that nothing else owns.
    let fd = unsafe { std::os::fd::OwnedFd::from_raw_fd(raw) };
    let name = std::ffi::CString::new(ifname).unwrap();
    // SAFETY: a NUL-terminated name.
    let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
    assert!(index > 0, "no interface {ifname}");
    // SAFETY: an all-zero sockaddr_ll is valid; the fields that matter are set below.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = index as i32;
    // SAFETY: binding a valid fd to a sockaddr_ll of the size passed.
    let rc = unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    assert_eq!(rc, 0, "bind AF_PACKET: {}", std::io::Error::last_os_error());
    let one: libc::c_int = 1;
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 50_000,
    };
    // SAFETY: setsockopt with values of the sizes passed.
    unsafe {
        assert_eq!(
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_TIMESTAMPNS,
                (&one as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            ),
            0
        );
        assert_eq!(
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            ),
            0
        );
    }
    fd
}

/// Receives one frame: its bytes, its kernel timestamp (ns, CLOCK_REALTIME) and whether it was
/// outgoing (PACKET_OUTGOING); None on timeout.
fn recv_frame(fd: &std::os::fd::OwnedFd) -> Option<(Vec<u8>, i64, bool)> {
    let mut buf = vec![0u8; 2048];
    let mut ctrl = [0u64; 16];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: all-zero sockaddr_ll and msghdr are valid starting values.
    let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = (&mut from as *mut libc::sockaddr_ll).cast();
    msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = ctrl.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&ctrl);
    // SAFETY: msg points at live buffers of the lengths it states.
    let n = unsafe { libc::recvmsg(fd.as_raw_fd(), &mut msg, 0) };
    if n < 0 {
        return None;
    }
    let mut ts = None;
    // SAFETY: walking the control messages the kernel wrote into `ctrl`, per cmsg(3).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                let t: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast());
                ts = Some(t.tv_sec * 1_000_000_000 + t.tv_nsec);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    buf.truncate(n as usize);
    Some((
        buf,
        ts.unwrap_or_else(realtime_ns),
        from.sll_pkttype == libc::PACKET_OUTGOING,
    ))
}

/// One actuation: CLOCK_REALTIME (ns) at the decision, and the state wanted for carrier B.
#[derive(Clone, Copy)]
struct Actuation {
    t0_ns: i64,
    backup: bool,
}

/// For each actuation, the MP_PRIO options with its B flag sent after it and before the next
/// one: (first - t0, last - t0) in microseconds, and how many.
fn match_prio(acts: &[Actuation], prios: &[Prio]) -> Vec<(f64, f64, usize)> {
    acts.iter()
        .enumerate()
        .map(|(k, a)| {
            let end = acts.get(k + 1).map(|n| n.t0_ns).unwrap_or(i64::MAX);
            let mine: Vec<i64> = prios
                .iter()
                .filter(|p| p.ts_ns >= a.t0_ns && p.ts_ns < end && p.backup == a.backup)
                .map(|p| p.ts_ns)
                .collect();
            match (mine.iter().min(), mine.iter().max()) {
                (Some(f), Some(l)) => (
                    (f - a.t0_ns) as f64 / 1e3,
                    (l - a.t0_ns) as f64 / 1e3,
                    mine.len(),
                ),
                _ => (f64::NAN, f64::NAN, 0),
            }
        })
        .collect()
}

/// Writes the handover table (carrier B: one zone, `ZONE`; A: none), a track 0.1 degree of
/// latitude long due north from 0,0 (about 11 km) and a dummy replay file into `dir`.
fn write_phad_inputs(dir: &Path) {
    let table = format!(
        "{{\"format\": \"railpath-handover-table/1\", \"gps_error_m\": 20.0, \"runs\": 1, \"carriers\": \
         {{\"A\": {{\"zones\": [], \"runs\": 1}}, \"B\": {{\"zones\": [{{\"start_m\": {}, \"end_m\": {}, \"count\": 1}}], \"runs\": 1}}}}}}",
        ZONE.0, ZONE.1
    );
    std::fs::write(dir.join("table.json"), table).unwrap();
    std::fs::write(dir.join("track.csv"), "0.0,0.0\n0.1,0.0\n").unwrap();
    std::fs::write(dir.join("feed.csv"), "t_s,position_m,speed_mps\n0,0,0\n").unwrap();
}

/// The `[phad]` section and carriers: fixed RTT 10 ms and lead 100 ms; `position` as given.
fn phad_config(dir: &Path, position: &str) -> String {
    format!(
        "[phad]\ntable = {:?}\nrtt_ms = 10\nlead_time_ms = 100\nposition = {position}\n\
         [[carrier]]\nname = \"A\"\nendpoint_id = 1\ninterface = \"a0\"\n\
         [[carrier]]\nname = \"B\"\nendpoint_id = 2\ninterface = \"b0\"\n",
        dir.join("table.json").display().to_string()
    )
}

/// A gpsd TPV report putting the train at `position_m` along the bench track, 20 m/s northward.
fn tpv(track_len_m: f64, position_m: f64) -> String {
    let lat = 0.1 * position_m / track_len_m;
    format!("{{\"class\":\"TPV\",\"mode\":3,\"lat\":{lat:.9},\"lon\":0.0,\"speed\":20.0,\"track\":0.0}}\n")
}

/// Opens `n` passenger connections through the proxy (an echo round trip on each) and waits
/// until the router has completed `n` more MP_JOINs (each has its carrier B subflow).
fn open_passengers(n: usize) -> Vec<TcpStream> {
    let joins0 = mptcp_counter("rtr", "MPJoinSynAckRx");
    let conns = in_ns("cli", move || {
        (0..n)
            .map(|_| {
                let mut s = PathKind::Proxy.connect();
                s.write_all(b"E").unwrap();
                let mut m = [1u8; PING_BYTES];
                s.write_all(&m).unwrap();
                s.read_exact(&mut m).unwrap();
                s
            })
            .collect::<Vec<_>>()
    });
    let t = Instant::now();
    while mptcp_counter("rtr", "MPJoinSynAckRx") < joins0 + n as u64 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "carrier B subflows did not come up"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    conns
}

// ---------------------------------------------------------------------------------------------
// Output.

/// Prints one measurement: its JSON line, then a human line starting with `#`.
fn report(measure: &str, mut fields: Value, human: String) {
    let obj = fields.as_object_mut().unwrap();
    obj.insert("bench".into(), json!("gateway_cost"));
    obj.insert("measure".into(), json!(measure));
    println!("{fields}");
    println!("# {human}");
}

/// Rounds to `d` decimals for the JSON lines.
fn r(x: f64, d: i32) -> f64 {
    let f = 10f64.powi(d);
    (x * f).round() / f
}

/// p50, p99 and max of `v` (any order), rounded to 0.1.
fn summary(v: &[f64]) -> (f64, f64, f64) {
    let mut s: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    s.sort_by(f64::total_cmp);
    if s.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    (
        r(quantile(&s, 0.5), 1),
        r(quantile(&s, 0.99), 1),
        r(*s.last().unwrap(), 1),
    )
}

// ---------------------------------------------------------------------------------------------
// The measurements.

/// Measurement 1: bulk throughput of one connection, each path and direction; the repeats are
/// interleaved (every path and direction once, then again) so that a slow spell of the machine does
/// not fall on one path only.
fn measure_throughput(bed: &Bed) {
    let cases: Vec<(PathKind, Dir, &str)> =
        [PathKind::Proxy, PathKind::Routed, PathKind::RouterMptcp]
            .into_iter()
            .flat_map(|p| [(p, Dir::Download, "download"), (p, Dir::Upload, "upload")])
            .collect();
    let mut gbps = vec![Vec::new(); cases.len()];
    let mut cpu = vec![Vec::new(); cases.len()];
    for _ in 0..BULK_REPEATS {
        for (i, &(path, dir, _)) in cases.iter().enumerate() {
            let c0 = bed.proxy.cpu_s();
            let s = bulk(path, dir, BULK_BYTES);
            let c1 = bed.proxy.cpu_s();
            gbps[i].push(BULK_BYTES as f64 * 8.0 / s / 1e9);
            cpu[i].push((c1 - c0) / s * 100.0);
        }
    }
    for (i, &(path, _, dname)) in cases.iter().enumerate() {
        let m = median(&gbps[i]);
        let mut f = json!({
            "path": path.name(), "direction": dname, "bytes": BULK_BYTES,
            "repeats": BULK_REPEATS, "gbit_s_median": r(m, 2),
            "gbit_s": gbps[i].iter().map(|x| r(*x, 2)).collect::<Vec<_>>(),
        });
        let mut human = format!(
            "throughput {} {dname}: {m:.2} Gbit/s (median of {BULK_REPEATS} x 1 GiB; {})",
            path.name(),
            gbps[i]
                .iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if path == PathKind::Proxy {
            let c = median(&cpu[i]);
            f["proxy_cpu_percent_median"] = json!(r(c, 0));
            human.push_str(&format!("; daemon CPU {c:.0} % of one core"));
        }
        report("throughput", f, human);
    }
}

/// Measurement 2: request/response latency through the proxy and without it: whole 64-byte
/// requests, then requests written in two parts (8 + 56 bytes, as a client writing a header and
/// then a body).
fn measure_latency() {
    for (split, warmup, rounds) in [
        (false, PING_WARMUP, PING_ROUNDS),
        (true, SPLIT_WARMUP, SPLIT_ROUNDS),
    ] {
        let mut q = std::collections::HashMap::new();
        let kind = if split { "8+56" } else { "64" };
        for path in [PathKind::Proxy, PathKind::Routed, PathKind::RouterMptcp] {
            let v = pingpong(path, split, warmup, rounds);
            let (a, b, c) = (quantile(&v, 0.5), quantile(&v, 0.99), *v.last().unwrap());
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            q.insert(path.name(), (a, b));
            report(
                "latency",
                json!({"path": path.name(), "request": kind, "message_bytes": PING_BYTES, "round_trips": rounds,
                       "p50_us": r(a, 1), "p99_us": r(b, 1), "max_us": r(c, 1), "mean_us": r(mean, 1)}),
                format!(
                    "latency {}, {kind} B requests: {rounds} round trips, p50 {a:.1} us, p99 {b:.1} us, max {c:.0} us",
                    path.name()
                ),
            );
        }
        let (pp, rt) = (q["proxy"], q["routed_tcp"]);
        report(
            "latency_added",
            json!({"path": "proxy_minus_routed_tcp", "request": kind, "p50_us": r(pp.0 - rt.0, 1), "p99_us": r(pp.1 - rt.1, 1)}),
            format!(
                "latency added by the proxy, {kind} B requests (through it minus routed TCP): p50 {:.1} us, p99 {:.1} us (aim: p99 < 200 us)",
                pp.0 - rt.0,
                pp.1 - rt.1
            ),
        );
    }
}

/// Measurement 3: 1000 concurrent hashed transfers through the proxy.
fn measure_concurrent(bed: &Bed) {
    let mut rng = railpath_core::Rng::stream(11, "gateway/bench/concurrent-sizes");
    let sizes: Vec<(u64, u64)> = (0..CONCURRENT)
        .map(|_| (rng.below(256 * 1024 + 1), rng.below(1024 * 1024 + 1)))
        .collect();
    let total: u64 = sizes.iter().map(|(u, d)| u + d).sum();
    let m0 = scrape("rtr", PROXY_METRICS);
    let c0 = bed.proxy.cpu_s();
    let sz = sizes.clone();
    let (wall, results) = in_ns("cli", move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let t = Instant::now();
            let tasks: Vec<_> = sz
                .iter()
                .enumerate()
                .map(|(i, &(up, down))| {
                    tokio::spawn(async move {
                        tokio::time::timeout(
                            Duration::from_secs(300),
                            hashed_transfer(1000 + 2 * i as u64, up, down),
                        )
                        .await
                        .unwrap_or_else(|_| Err("timed out".into()))
                    })
                })
                .collect();
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.unwrap_or_else(|e| Err(e.to_string())));
            }
            (t.elapsed().as_secs_f64(), out)
        })
    });
    let cpu = bed.proxy.cpu_s() - c0;
    let m1 = scrape("rtr", PROXY_METRICS);
    let delta = |s: &str| metric(&m1, s).unwrap_or(f64::NAN) - metric(&m0, s).unwrap_or(f64::NAN);
    let mptcp = delta("railpath_gateway_connections_onward_total{transport=\"mptcp\"}");
    let fallback = delta("railpath_gateway_connections_onward_total{transport=\"fallback\"}");
    let failed: Vec<(usize, &String)> = results
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.as_ref().err().map(|e| (i, e)))
        .collect();
    report(
        "concurrent",
        json!({"connections": CONCURRENT, "verified": CONCURRENT - failed.len(), "failed": failed.len(),
               "bytes_total": total, "wall_s": r(wall, 2), "gbit_s": r(total as f64 * 8.0 / wall / 1e9, 2),
               "onward_mptcp": mptcp, "onward_fallback": fallback, "proxy_cpu_s": r(cpu, 2)}),
        format!(
            "concurrent: {CONCURRENT} connections through the proxy, {:.0} MB in all, {} verified by SHA-256, {wall:.2} s wall ({mptcp} onward over MPTCP, {fallback} fell back; daemon CPU {cpu:.2} s)",
            total as f64 / 1e6,
            CONCURRENT - failed.len()
        ),
    );
    assert!(
        failed.is_empty(),
        "{} of {CONCURRENT} transfers failed, e.g. {:?}\n{}",
        failed.len(),
        &failed[..failed.len().min(5)],
        bed.proxy.log_text()
    );
}

/// Measurement 4a: `Controller::step` in this process (in `rtr`), `ACTUATIONS` times into the zone
/// and out again, with `passengers` connections open; reports the delay to the first and last
/// MP_PRIO.
fn actuation_controller(bed: &Bed, passengers: usize) {
    let dir = bed.dir.0.clone();
    let cfg_text = phad_config(
        &dir,
        &format!(
            "{{ source = \"replay\", path = {:?} }}",
            dir.join("feed.csv").display().to_string()
        ),
    );
    let prio0 = mptcp_counter("rtr", "MPPrioTx");
    let cap = Capture::start("rtr", "b0");
    let (acts, step_us) = in_ns("rtr", move || {
        let cfg = Config::parse(&cfg_text, "bench-phad.toml").expect("bench PHA-D config");
        let metrics = Metrics::new(&[("A".into(), None), ("B".into(), None)]);
        let mut ctl = Controller::new(&cfg, metrics).expect("controller");
        let mut acts = Vec::new();
        let mut step_us = Vec::new();
        for k in 0..2 * ACTUATIONS {
            let backup = k % 2 == 0;
            let pos = if backup { IN_ZONE_M } else { CLEAR_M };
            let now = tokio::time::Instant::now();
            let st = PositionState::Fix {
                fix: Fix {
                    position_m: pos,
                    speed_mps: 20.0,
                },
                at: now,
            };
            let t0_ns = realtime_ns();
            let d = ctl.step(&st, now);
            step_us.push(now.elapsed().as_secs_f64() * 1e6);
            assert_eq!(d[1].backup, backup, "decision {d:?}");
            acts.push(Actuation { t0_ns, backup });
            // Apart enough that each actuation's options are alone on the wire; not a multiple
            // of any periodic work.
            std::thread::sleep(Duration::from_millis(20 + (k % 7) as u64));
        }
        ctl.set_all_regular("bench end");
        (acts, step_us)
    });
    std::thread::sleep(Duration::from_millis(50));
    let prios = cap.finish();
    let prio_tx = mptcp_counter("rtr", "MPPrioTx") - prio0;
    let m = match_prio(&acts, &prios);
    for (dir_name, backup) in [("to_backup", true), ("to_regular", false)] {
        let sel: Vec<&(f64, f64, usize)> = acts
            .iter()
            .zip(&m)
            .filter(|(a, _)| a.backup == backup)
            .map(|(_, x)| x)
            .collect();
        let first: Vec<f64> = sel.iter().map(|x| x.0).collect();
        let last: Vec<f64> = sel.iter().map(|x| x.1).collect();
        let seen: Vec<usize> = sel.iter().map(|x| x.2).collect();
        let complete = seen.iter().filter(|&&n| n == passengers).count();
        let (f50, f99, fmax) = summary(&first);
        let (l50, l99, lmax) = summary(&last);
        let (s50, s99, smax) = summary(&step_us);
        report(
            "actuation",
            json!({"source": "controller_step", "direction": dir_name, "passengers": passengers,
                   "actuations": sel.len(), "with_all_mp_prio": complete,
                   "first_p50_us": f50, "first_p99_us": f99, "first_max_us": fmax,
                   "last_p50_us": l50, "last_p99_us": l99, "last_max_us": lmax,
                   "step_p50_us": s50, "step_p99_us": s99, "step_max_us": smax,
                   "mpprio_tx": prio_tx}),
            format!(
                "actuation {dir_name}, decision (Controller::step) to MP_PRIO on rtr b0, {passengers} connection(s), {} flips ({complete} with all {passengers} options): first p50 {f50} us, p99 {f99} us, max {fmax} us; last p50 {l50} us, p99 {l99} us, max {lmax} us; step() itself p50 {s50} us",
                sel.len()
            ),
        );
    }
}

/// Measurement 4b: the daemon with a gpsd source served from here: from writing a TPV report to
/// MP_PRIO.
fn actuation_daemon(bed: &Bed) {
    let dir = bed.dir.0.clone();
    let track = Track::load(&dir.join("track.csv")).unwrap();
    let len = track.length_m();
    let gpsd = in_ns("rtr", || {
        let l = std::net::TcpListener::bind(GPSD_ADDR).expect("bind the fake gpsd");
        l.set_nonblocking(true).unwrap();
        l
    });
    let cfg = format!(
        "[metrics]\nlisten = \"{PHAD_METRICS}\"\n[log]\nformat = \"json\"\nlevel = \"info\"\n{}",
        phad_config(
            &dir,
            &format!(
                "{{ source = \"gpsd\", address = \"{GPSD_ADDR}\", track = {:?} }}",
                dir.join("track.csv").display().to_string()
            )
        )
    );
    let mut daemon = Daemon::start("rtr", "phad", &cfg, &dir, PHAD_METRICS);
    let t = Instant::now();
    let mut feed = loop {
        match gpsd.accept() {
            Ok((s, _)) => break s,
            Err(_) if t.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            Err(e) => panic!(
                "the daemon never connected to gpsd: {e}\n{}",
                daemon.log_text()
            ),
        }
    };
    feed.set_nonblocking(false).unwrap();
    feed.set_nodelay(true).unwrap();
    feed.write_all(tpv(len, CLEAR_M).as_bytes()).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let prio0 = mptcp_counter("rtr", "MPPrioTx");
    let cap = Capture::start("rtr", "b0");
    let mut acts = Vec::new();
    for k in 0..2 * ACTUATIONS {
        let backup = k % 2 == 0;
        let line = tpv(len, if backup { IN_ZONE_M } else { CLEAR_M });
        let t0_ns = realtime_ns();
        feed.write_all(line.as_bytes()).unwrap();
        acts.push(Actuation { t0_ns, backup });
        std::thread::sleep(Duration::from_millis(30 + (k % 7) as u64));
    }
    std::thread::sleep(Duration::from_millis(50));
    let prios = cap.finish();
    let prio_tx = mptcp_counter("rtr", "MPPrioTx") - prio0;
    let m = scrape("rtr", PHAD_METRICS);
    let flips =
        metric(&m, "railpath_gateway_backup_flips_total{carrier=\"B\"}").unwrap_or(f64::NAN);
    assert!(
        daemon.stop(),
        "PHA-D daemon did not stop cleanly:\n{}",
        daemon.log_text()
    );
    let matched = match_prio(&acts, &prios);
    for (dir_name, backup) in [("to_backup", true), ("to_regular", false)] {
        let first: Vec<f64> = acts
            .iter()
            .zip(&matched)
            .filter(|(a, _)| a.backup == backup)
            .map(|(_, x)| x.0)
            .collect();
        let seen = first.iter().filter(|x| x.is_finite()).count();
        let (f50, f99, fmax) = summary(&first);
        report(
            "actuation",
            json!({"source": "daemon_gpsd", "direction": dir_name, "passengers": 1,
                   "actuations": first.len(), "with_mp_prio": seen,
                   "first_p50_us": f50, "first_p99_us": f99, "first_max_us": fmax,
                   "mpprio_tx": prio_tx, "daemon_flips_to_backup": flips}),
            format!(
                "actuation {dir_name}, gpsd TPV written to MP_PRIO on rtr b0 (whole daemon), {} fixes ({seen} with MP_PRIO): p50 {f50} us, p99 {f99} us, max {fmax} us (aim: < 5 ms)",
                first.len()
            ),
        );
    }
}

/// Measurement 4: both actuation measurements: 1 passenger connection; then the controller's with
/// 100 and 1000.
fn measure_actuation(bed: &Bed) {
    write_phad_inputs(&bed.dir.0);
    let mut conns = open_passengers(1);
    actuation_controller(bed, 1);
    actuation_daemon(bed);
    conns.extend(open_passengers(99));
    actuation_controller(bed, 100);
    conns.extend(open_passengers(900));
    actuation_controller(bed, 1000);
    drop(conns);
}

/// Raises the soft open-file limit to the hard one (1000 connections need about 2000 fds here:
/// client and server run in this process; the daemon inherits the limit).
fn raise_nofile() {
    let mut l = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut l) == 0 && l.rlim_cur < l.rlim_max {
            l.rlim_cur = l.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &l);
        }
    }
}

fn main() {
    if let Some(why) = skip_reason() {
        println!("SKIP gateway_cost: {why}");
        eprintln!("SKIP gateway_cost: {why}");
        return;
    }
    let selected: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let want = |m: &str| selected.is_empty() || selected.iter().any(|s| s == m);
    raise_nofile();
    let started = Instant::now();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let cc =
        std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap_or_default();
    report(
        "machine",
        json!({"cpus": cpus, "kernel": kernel.trim(), "loadavg_1m": load.split_whitespace().next().unwrap_or(""),
               "tcp_congestion_control": cc.trim()}),
        format!(
            "gateway_cost: {cpus} CPUs, kernel {}, load {}, congestion control {}",
            kernel.trim(),
            load.split_whitespace().next().unwrap_or("?"),
            cc.trim()
        ),
    );
    let bed = build_bed();
    // Warm-up: first connections, ARP, the daemon's first relay.
    bulk(PathKind::Proxy, Dir::Download, 8 << 20);
    bulk(PathKind::Routed, Dir::Download, 8 << 20);
    if want("throughput") {
        measure_throughput(&bed);
    }
    if want("latency") {
        measure_latency();
    }
    if want("concurrent") {
        measure_concurrent(&bed);
    }
    if want("actuation") {
        measure_actuation(&bed);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load.split_whitespace().next().unwrap_or("?").to_string();
    report(
        "done",
        json!({"wall_s": r(started.elapsed().as_secs_f64(), 1), "loadavg_1m": load}),
        format!(
            "gateway_cost done in {:.0} s, load {load} (the bench itself loads the machine; \
             a load far above 2 means something else ran too)",
            started.elapsed().as_secs_f64()
        ),
    );
    let mut bed = bed;
    assert!(
        bed.proxy.stop(),
        "the proxy did not stop cleanly:\n{}",
        bed.proxy.log_text()
    );
}
