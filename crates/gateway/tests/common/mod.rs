//! Shared fixtures for the gateway's integration tests: namespace helpers, the daemon as a child
//! process, deterministic payloads and a tiny metrics scraper. Every namespace is named
//! `rp-gw-<pid>-<tag>` and deleted on drop, also when a test panics.
#![allow(dead_code)]

pub mod dashboard;

use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Why an environment test cannot run here (printed as SKIP), or None.
pub fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root (needs CAP_NET_ADMIN for namespaces)".into());
    }
    match std::fs::read_to_string("/proc/sys/net/mptcp/enabled") {
        Ok(v) if v.trim() == "1" => {}
        _ => return Some("kernel MPTCP absent or disabled (net.mptcp.enabled != 1)".into()),
    }
    for tool in ["ip", "nft"] {
        if Command::new(tool).arg("-V").output().is_err() {
            return Some(format!("`{tool}` is not installed"));
        }
    }
    None
}

#[macro_export]
macro_rules! skip_if_unavailable {
    ($name:expr) => {
        if let Some(why) = common::skip_reason() {
            println!("SKIP {}: {}", $name, why);
            eprintln!("SKIP {}: {}", $name, why);
            return;
        }
    };
}

/// Runs a command, panicking with its stderr on failure.
pub fn sh(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

pub fn sh_out(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Namespaces deleted on drop.
pub struct Namespaces {
    pub names: Vec<String>,
}

impl Namespaces {
    pub fn new(tags: &[&str]) -> Namespaces {
        let pid = std::process::id();
        let mut ns = Namespaces { names: vec![] };
        for t in tags {
            let n = format!("rp-gw-{pid}-{t}");
            let _ = Command::new("ip").args(["netns", "del", &n]).output();
            sh(&["ip", "netns", "add", &n]);
            ns.names.push(n.clone());
            sh(&["ip", "-n", &n, "link", "set", "lo", "up"]);
        }
        ns
    }
    pub fn name(&self, tag: &str) -> String {
        format!("rp-gw-{}-{tag}", std::process::id())
    }
    /// `ip -n <ns> args...`
    pub fn ip(&self, tag: &str, args: &[&str]) {
        let n = self.name(tag);
        let mut v = vec!["ip", "-n", n.as_str()];
        v.extend_from_slice(args);
        sh(&v);
    }
    /// A veth pair between two namespaces, with addresses, up.
    pub fn veth(&self, a: &str, a_dev: &str, a_addr: &str, b: &str, b_dev: &str, b_addr: &str) {
        let (na, nb) = (self.name(a), self.name(b));
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp_a = format!("rpg{}x{n}a", std::process::id() % 1_000_000);
        let tmp_b = format!("rpg{}x{n}b", std::process::id() % 1_000_000);
        sh(&[
            "ip", "link", "add", &tmp_a, "type", "veth", "peer", "name", &tmp_b,
        ]);
        sh(&["ip", "link", "set", &tmp_a, "netns", &na, "name", a_dev]);
        sh(&["ip", "link", "set", &tmp_b, "netns", &nb, "name", b_dev]);
        self.ip(a, &["addr", "add", a_addr, "dev", a_dev]);
        self.ip(b, &["addr", "add", b_addr, "dev", b_dev]);
        self.ip(a, &["link", "set", a_dev, "up"]);
        self.ip(b, &["link", "set", b_dev, "up"]);
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).output();
        }
    }
}

/// Runs `f` on a fresh thread inside namespace `ns`; sockets it creates live there.
pub fn in_ns<R: Send + 'static, F: FnOnce() -> R + Send + 'static>(ns: &str, f: F) -> R {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on this thread only, with a valid namespace fd.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
    .join()
    .expect("namespace thread panicked")
}

/// The daemon, run inside a namespace; killed on drop.
pub struct Daemon {
    pub child: Child,
    pub log: PathBuf,
}

impl Daemon {
    pub fn start(ns: &str, config_text: &str, dir: &Path) -> Daemon {
        let cfg = dir.join("gateway.toml");
        std::fs::write(&cfg, config_text).unwrap();
        let log = dir.join("gateway.log");
        let child = Command::new("ip")
            .args([
                "netns",
                "exec",
                ns,
                env!("CARGO_BIN_EXE_railpath-gateway"),
                "run",
                "-c",
            ])
            .arg(&cfg)
            .stdout(Stdio::null())
            .stderr(File::create(&log).unwrap())
            .spawn()
            .expect("spawn railpath-gateway");
        Daemon { child, log }
    }
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
    /// SIGTERM, then wait up to 10 s; returns the exit status success.
    pub fn stop(&mut self) -> bool {
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let t = Instant::now();
        while t.elapsed() < Duration::from_secs(10) {
            if let Ok(Some(st)) = self.child.try_wait() {
                return st.success();
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        false
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);
impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        let p = std::env::temp_dir().join(format!("rp-gw-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Deterministic payload bytes (xorshift64*), `len` bytes from `seed`, fed in chunks.
pub struct Payload {
    state: u64,
    left: u64,
}
impl Payload {
    pub fn new(seed: u64, len: u64) -> Payload {
        Payload {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            left: len,
        }
    }
    /// Fills `buf` with the next bytes; returns how many (0 at the end).
    pub fn fill(&mut self, buf: &mut [u8]) -> usize {
        let n = (buf.len() as u64).min(self.left) as usize;
        for chunk in buf[..n].chunks_mut(8) {
            self.state ^= self.state >> 12;
            self.state ^= self.state << 25;
            self.state ^= self.state >> 27;
            let v = self.state.wrapping_mul(0x2545_F491_4F6C_DD1D).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        self.left -= n as u64;
        n
    }
    pub fn sha256(seed: u64, len: u64) -> [u8; 32] {
        let mut p = Payload::new(seed, len);
        let mut h = Sha256::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = p.fill(&mut buf);
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
        }
        h.finalize().into()
    }
}

/// GET /metrics from inside a namespace; returns the body.
pub fn scrape(ns: &str, addr: &str) -> String {
    let addr = addr.to_string();
    in_ns(ns, move || {
        let mut s = std::net::TcpStream::connect(&addr).expect("connect to metrics");
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out.split_once("\r\n\r\n")
            .map(|(_, b)| b.to_string())
            .unwrap_or_default()
    })
}

/// The value of one sample line (`name{labels}` exactly) in an exposition.
pub fn metric(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series).and_then(|r| r.strip_prefix(' ')))
        .and_then(|v| v.trim().parse().ok())
}

/// Waits (bounded) until `f` is true.
pub fn wait_until(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < timeout {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

// ---- the transfer protocol shared by the proxy tests ----

pub fn listener(service: &str, port: u16, mptcp: bool) -> tokio::net::TcpListener {
    let addr: std::net::SocketAddr = format!("{service}:{port}").parse().unwrap();
    let (s, _) = railpath_gateway::sockopt::stream_socket(&addr, mptcp).unwrap();
    s.set_reuse_address(true).unwrap();
    s.bind(&addr.into()).unwrap();
    s.listen(1024).unwrap();
    tokio::net::TcpListener::from_std(s.into()).unwrap()
}

/// Per connection: read an 8-byte download size, hash the upload until EOF, answer with the
/// upload's SHA-256, then send the download (payload seeded by its size) and close.
pub async fn server_main(
    service: String,
    mptcp_port: u16,
    tcp_port: u16,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let mp = listener(&service, mptcp_port, true);
    let tcp = listener(&service, tcp_port, false);
    let serve = |l: tokio::net::TcpListener| async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let mut hdr = [0u8; 8];
                if s.read_exact(&mut hdr).await.is_err() {
                    return;
                }
                let down = u64::from_be_bytes(hdr);
                let mut h = Sha256::new();
                let mut buf = vec![0u8; 64 * 1024];
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) => break,
                        Ok(n) => h.update(&buf[..n]),
                        Err(_) => return,
                    }
                }
                let d: [u8; 32] = h.finalize().into();
                if s.write_all(&d).await.is_err() {
                    return;
                }
                let mut p = Payload::new(down, down);
                loop {
                    let n = p.fill(&mut buf);
                    if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                let _ = s.shutdown().await;
            });
        }
    };
    tokio::select! {
        _ = stop => {}
        _ = serve(mp) => {}
        _ = serve(tcp) => {}
    }
}

/// One passenger transfer through the proxy; returns whether both digests matched.
pub async fn transfer(
    service: &str,
    port: u16,
    seed: u64,
    up: u64,
    down: u64,
) -> Result<(), String> {
    let s = tokio::net::TcpStream::connect((service, port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    transfer_on(s, seed, up, down).await
}

/// The transfer protocol on a connected stream.
pub async fn transfer_on(
    mut s: tokio::net::TcpStream,
    seed: u64,
    up: u64,
    down: u64,
) -> Result<(), String> {
    s.write_all(&down.to_be_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut p = Payload::new(seed, up);
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = p.fill(&mut buf);
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        s.write_all(&buf[..n])
            .await
            .map_err(|e| format!("upload: {e}"))?;
    }
    s.shutdown().await.map_err(|e| e.to_string())?;
    let want_up: [u8; 32] = h.finalize().into();
    let mut got_up = [0u8; 32];
    s.read_exact(&mut got_up)
        .await
        .map_err(|e| format!("digest: {e}"))?;
    if got_up != want_up {
        return Err(format!("upload of {up} B: SHA-256 mismatch at the far end"));
    }
    let mut h = Sha256::new();
    let mut n_down = 0u64;
    loop {
        let n = s
            .read(&mut buf)
            .await
            .map_err(|e| format!("download: {e}"))?;
        if n == 0 {
            break;
        }
        n_down += n as u64;
        h.update(&buf[..n]);
    }
    let got: [u8; 32] = h.finalize().into();
    if n_down != down || got != Payload::sha256(down, down) {
        return Err(format!(
            "download: got {n_down} of {down} B or SHA-256 mismatch"
        ));
    }
    Ok(())
}

/// MPTcpExtMPPrioTx of the namespace the calling thread is in.
pub fn mpprio_tx() -> u64 {
    mptcp_mib("MPPrioTx")
}

/// One MPTcpExt counter of the namespace the calling thread is in.
pub fn mptcp_mib(key: &str) -> u64 {
    let t = std::fs::read_to_string("/proc/thread-self/net/netstat").unwrap();
    let mut lines = t.lines();
    while let (Some(h), Some(v)) = (lines.next(), lines.next()) {
        if h.starts_with("MPTcpExt:") {
            let i = h.split_whitespace().position(|k| k == key).unwrap();
            return v.split_whitespace().nth(i).unwrap().parse().unwrap();
        }
    }
    panic!("no MPTcpExt in netstat")
}

/// Runs one [`transfer`] per `(up, down)` pair concurrently (seeds `seed_base + i`), each within
/// `timeout`; the results in order.
pub async fn transfers(
    service: &str,
    port: u16,
    seed_base: u64,
    sizes: &[(u64, u64)],
    timeout: Duration,
) -> Vec<Result<(), String>> {
    let mut tasks = Vec::new();
    for (i, &(up, down)) in sizes.iter().enumerate() {
        let svc = service.to_string();
        tasks.push(tokio::spawn(async move {
            tokio::time::timeout(
                timeout,
                transfer(&svc, port, seed_base + i as u64, up, down),
            )
            .await
            .unwrap_or_else(|_| Err("timed out".into()))
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap_or_else(|e| Err(e.to_string())));
    }
    out
}

/// Asserts that every transfer succeeded; on failure shows up to five and the daemon's log.
pub fn assert_all_transferred(results: &[Result<(), String>], log: &str) {
    let failed: Vec<_> = results
        .iter()
        .enumerate()
        .filter(|(_, r)| r.is_err())
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} failed, e.g. {:?}\n{log}",
        failed.len(),
        results.len(),
        &failed[..failed.len().min(5)],
    );
}

/// `ip mptcp monitor` in a namespace, each line stamped with the instant it was read.
pub struct MptcpMonitor {
    child: Child,
    lines: std::sync::Arc<std::sync::Mutex<Vec<(Instant, String)>>>,
}

impl MptcpMonitor {
    pub fn start(ns: &str) -> MptcpMonitor {
        let mut child = Command::new("ip")
            .args(["netns", "exec", ns, "ip", "mptcp", "monitor"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("ip mptcp monitor");
        let out = child.stdout.take().expect("monitor stdout");
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let l2 = lines.clone();
        std::thread::spawn(move || {
            use std::io::BufRead;
            for l in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                l2.lock().unwrap().push((Instant::now(), l));
            }
        });
        // The monitor subscribes asynchronously; give it a moment before events matter.
        std::thread::sleep(Duration::from_millis(300));
        MptcpMonitor { child, lines }
    }
    /// Every line so far.
    pub fn lines(&self) -> Vec<(Instant, String)> {
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for MptcpMonitor {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The router's MPTCP endpoints (`ip mptcp endpoint show`), one line each.
pub fn endpoints(ns: &str) -> Vec<String> {
    sh_out(&["ip", "-n", ns, "mptcp", "endpoint", "show"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// The JSON log lines of the daemon whose `fields.message` is `msg`.
pub fn log_events(log: &str, msg: &str) -> Vec<serde_json::Value> {
    log.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["fields"]["message"] == msg)
        .collect()
}

// ---- a length-framed transfer that keeps both directions open (no half-close) ----
//
// The kernel adds subflows (a new address, a carrier back) only to MPTCP connections that are
// still established both ways (`__mptcp_subflow_connect`); a passenger that half-closes after
// its request puts the onward connection in FIN_WAIT, which keeps its subflows but gets no new
// ones. HTTP clients do not half-close, so the tests of address changes and carrier returns use
// this framing: a 24-byte header (download size, upload size, download pace in bytes per 100 ms,
// 0 for as fast as possible), the upload, the server's SHA-256 of it, the download, and the
// client closes first.

/// Serves the framed protocol on `service:port` until `stop`.
pub async fn framed_server_main(
    service: String,
    port: u16,
    stop: tokio::sync::oneshot::Receiver<()>,
) {
    let l = listener(&service, port, true);
    let serve = async move {
        loop {
            let Ok((mut s, _)) = l.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let mut hdr = [0u8; 24];
                if s.read_exact(&mut hdr).await.is_err() {
                    return;
                }
                let down = u64::from_be_bytes(hdr[..8].try_into().unwrap());
                let up = u64::from_be_bytes(hdr[8..16].try_into().unwrap());
                let pace = u64::from_be_bytes(hdr[16..].try_into().unwrap()) as usize;
                let mut h = Sha256::new();
                let mut buf = vec![0u8; 64 * 1024];
                let mut left = up;
                while left > 0 {
                    let n = (left as usize).min(buf.len());
                    match s.read(&mut buf[..n]).await {
                        Ok(0) | Err(_) => return,
                        Ok(k) => {
                            h.update(&buf[..k]);
                            left -= k as u64;
                        }
                    }
                }
                let d: [u8; 32] = h.finalize().into();
                if s.write_all(&d).await.is_err() {
                    return;
                }
                let mut p = Payload::new(down, down);
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                loop {
                    let chunk = if pace > 0 {
                        tick.tick().await;
                        pace.min(buf.len())
                    } else {
                        buf.len()
                    };
                    let n = p.fill(&mut buf[..chunk]);
                    if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
                // Wait for the client to close first.
                let _ = s.read(&mut buf[..1]).await;
            });
        }
    };
    tokio::select! {
        _ = stop => {}
        _ = serve => {}
    }
}

/// One framed transfer through the proxy: upload `up` bytes, download `down` (at `pace` bytes per
/// 100 ms, 0: at once), both SHA-checked.
pub async fn framed_transfer(
    service: &str,
    port: u16,
    seed: u64,
    up: u64,
    down: u64,
    pace: u64,
) -> Result<(), String> {
    let mut s = tokio::net::TcpStream::connect((service, port))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let mut hdr = [0u8; 24];
    hdr[..8].copy_from_slice(&down.to_be_bytes());
    hdr[8..16].copy_from_slice(&up.to_be_bytes());
    hdr[16..].copy_from_slice(&pace.to_be_bytes());
    s.write_all(&hdr).await.map_err(|e| e.to_string())?;
    let mut p = Payload::new(seed, up);
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = p.fill(&mut buf);
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        s.write_all(&buf[..n])
            .await
            .map_err(|e| format!("upload: {e}"))?;
    }
    let want_up: [u8; 32] = h.finalize().into();
    let mut got_up = [0u8; 32];
    s.read_exact(&mut got_up)
        .await
        .map_err(|e| format!("digest: {e}"))?;
    if got_up != want_up {
        return Err(format!("upload of {up} B: SHA-256 mismatch at the far end"));
    }
    let mut h = Sha256::new();
    let mut n_down = 0u64;
    while n_down < down {
        let want = ((down - n_down) as usize).min(buf.len());
        let n = s
            .read(&mut buf[..want])
            .await
            .map_err(|e| format!("download: {e}"))?;
        if n == 0 {
            break;
        }
        n_down += n as u64;
        h.update(&buf[..n]);
    }
    let got: [u8; 32] = h.finalize().into();
    if n_down != down || got != Payload::sha256(down, down) {
        return Err(format!(
            "download: got {n_down} of {down} B or SHA-256 mismatch"
        ));
    }
    Ok(())
}

/// Framed transfers (`pace` as in [`framed_transfer`]), `per_batch` started every `gap` (so that a
/// thousand SYNs do not all meet in one emulated queue), each within `timeout`; the results in
/// order.
#[allow(clippy::too_many_arguments)]
pub async fn framed_transfers(
    service: &str,
    port: u16,
    seed_base: u64,
    sizes: &[(u64, u64)],
    pace: u64,
    per_batch: usize,
    gap: Duration,
    timeout: Duration,
) -> Vec<Result<(), String>> {
    let mut tasks = Vec::new();
    for (i, &(up, down)) in sizes.iter().enumerate() {
        if i > 0 && per_batch > 0 && i % per_batch == 0 {
            tokio::time::sleep(gap).await;
        }
        let svc = service.to_string();
        tasks.push(tokio::spawn(async move {
            tokio::time::timeout(
                timeout,
                framed_transfer(&svc, port, seed_base + i as u64, up, down, pace),
            )
            .await
            .unwrap_or_else(|_| Err("timed out".into()))
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.unwrap_or_else(|e| Err(e.to_string())));
    }
    out
}
