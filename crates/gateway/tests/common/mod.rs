//! Shared fixtures for the gateway's integration tests: namespace helpers, the daemon as a child
//! process, deterministic payloads and a tiny metrics scraper. Every namespace is named
//! `rp-gw-<pid>-<tag>` and deleted on drop, also when a test panics.
#![allow(dead_code)]

use sha2::{Digest, Sha256};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
