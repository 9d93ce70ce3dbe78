//! `railpath testbed run`: the scenario's flows as real kernel TCP/MPTCP connections over the
//! namespace testbed, measured into the simulator's result types so that `summary.json` and
//! `timeseries.csv` of the two can be compared line by line.
//!
//! Each flow is a download: the server (server namespace, service address 10.201.0.1, port
//! 5201 + flow index) sends, the router (the train's multihomed host) receives. A `tcp` flow's
//! socket is bound to the router's address on its one path; an `mptcp` flow is an
//! `IPPROTO_MPTCP` socket bound to its first path's address, and the kernel path manager opens a
//! subflow from every other carrier's `subflow` endpoint. Measurements:
//! - flow goodput per bin: bytes read by the receiving application, timestamped on read;
//! - per-subflow goodput, sent and retransmitted packets: the emulator's per-(link, port) TCP
//!   accounting (see `emu.rs`);
//! - `cwnd_bytes`, `srtt_ms`, RTO counts: the sender's `TCP_INFO` (Linux `include/uapi/linux/
//!   tcp.h`), for MPTCP per subflow through `MPTCP_TCPINFO` / `MPTCP_SUBFLOW_ADDRS`
//!   (`include/uapi/linux/mptcp.h`), sampled at the end of every bin.

use railpath_core::Time;
use railpath_linkem::emu::{EmuReport, LinkEventKind};
use railpath_linkem::testbed::{Testbed, TestbedSpec, SERVER_ADDR};
use railpath_linkem::TestbedError;
use railpath_scenario::{
    MptcpCc, MptcpMechanism, PrioBy, Resolved, ScenarioError, TcpCc, TcpRoute, Transport,
};
use railpath_sim::results::{
    AvgMax, FlowSummary, LinkSummary, RunResults, Series, SubflowSummary, Summary,
};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// End a running [`run_scenario`] early (it then fails with [`TestbedError::Interrupted`] after
/// tearing the testbed down). Only stores to an atomic, so a signal handler may call it.
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

extern "C" fn on_signal(_: libc::c_int) {
    interrupt();
}

/// Make SIGINT and SIGTERM end a running scenario through [`interrupt`] (the testbed is torn
/// down, every namespace removed) instead of killing the process on the spot.
pub fn install_interrupt_handler() {
    let handler = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGINT, handler);
        libc::signal(libc::SIGTERM, handler);
    }
}

/// Whether [`interrupt`] was called (a run in progress should end and tear down).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

fn running(deadline: Instant) -> bool {
    Instant::now() < deadline && !interrupted()
}

/// Sleep until `t` in short steps; false if interrupted meanwhile.
fn sleep_until(t: Instant) -> bool {
    loop {
        if interrupted() {
            return false;
        }
        let now = Instant::now();
        if now >= t {
            return true;
        }
        std::thread::sleep((t - now).min(Duration::from_millis(50)));
    }
}

/// First server port; flow i listens on `BASE_PORT + i`.
pub const BASE_PORT: u16 = 5201;
const SOL_MPTCP: libc::c_int = 284;
const MPTCP_TCPINFO: libc::c_int = 2;
const MPTCP_SUBFLOW_ADDRS: libc::c_int = 3;
/// Bytes of `struct tcp_info` this code reads (up to `tcpi_total_rto_time`, Linux 6.7+).
const TCP_INFO_LEN: usize = 248;

/// The kernel congestion control for a flow and the name reported in the summary.
pub fn kernel_cc(r: &Resolved, i: usize) -> Result<(String, String), ScenarioError> {
    let f = &r.flows[i];
    let kernel = |c: TcpCc| match c {
        TcpCc::NewReno => "reno",
        TcpCc::Cubic => "cubic",
        TcpCc::Bbr => "bbr",
    };
    match &f.transport {
        Transport::Tcp(t) => Ok((kernel(t.cc).to_string(), t.cc.as_str().to_string())),
        Transport::Udp(_) => Err(udp_unsupported(r, &f.id)),
        Transport::Mptcp(m) => match m.cc {
            MptcpCc::Uncoupled(c) => Ok((kernel(c).to_string(), m.cc.name())),
            MptcpCc::Coupled(c) => {
                // Upstream Linux MPTCP has no coupled congestion control (LIA, OLIA, BALIA):
                // each subflow runs the regular TCP one. Run cubic and say so.
                eprintln!(
                    "testbed: flow {:?}: upstream Linux MPTCP has no coupled congestion control ({}); subflows run uncoupled cubic",
                    f.id,
                    c.as_str()
                );
                Ok(("cubic".to_string(), "uncoupled-cubic".to_string()))
            }
        },
    }
}

fn sorted(v: &[String]) -> Vec<String> {
    let mut v = v.to_vec();
    v.sort();
    v
}

/// What every mptcp flow must agree on (the router's endpoints and sysctls act on the host):
/// sorted backup paths, the MP_PRIO script (time, path, backup) and `stale_loss_cnt`.
type HostWide = (Vec<String>, Vec<(f64, String, bool)>, Option<u32>);

/// The testbed's refusal of a udp flow.
fn udp_unsupported(r: &Resolved, id: &str) -> ScenarioError {
    ScenarioError::new(
        &r.source,
        format!("flow \"{id}\".kind"),
        "udp cross traffic runs in the simulator only: the testbed has no udp source and sink yet",
    )
}

/// What the testbed cannot run, as a scenario error naming the key: a match on each flow's
/// kind and route (a new kind is a compile error here until the testbed says what it does).
fn check_supported(r: &Resolved) -> Result<(), ScenarioError> {
    let err = |key: String, msg: &str| ScenarioError::new(&r.source, key, msg);
    if let Some(b) = r.bonds.first() {
        return Err(err(
            format!("bond \"{}\"", b.id),
            "link bonding runs in the simulator only: this kernel has no bonding driver",
        ));
    }
    if let Some(l) = r.links.iter().find(|l| l.link.wifi.is_some()) {
        return Err(err(
            format!("link \"{}\".wifi", l.id()),
            "the 802.11 MAC model runs in the simulator only: the testbed's links have a rate, give rate_mbps instead",
        ));
    }
    if let Some(l) = r.links.iter().find(|l| l.link.unplug) {
        return Err(err(
            format!("link \"{}\".unplug", l.id()),
            "an interface unplugged and plugged back runs in the simulator only: the testbed's outages take a link down, they remove no interface",
        ));
    }
    let mut mptcp_paths: Option<(&str, Vec<&String>)> = None;
    let mut mptcp_host: Option<(&str, HostWide)> = None;
    for f in &r.flows {
        let key = |k: &str| format!("flow \"{}\".{k}", f.id);
        let (access, balancer) = match &f.transport {
            Transport::Udp(_) => return Err(udp_unsupported(r, &f.id)),
            Transport::Tcp(t) => match &t.route {
                TcpRoute::Path { access, .. } => (access.is_some(), None),
                TcpRoute::Balancer {
                    balancer, access, ..
                } => (access.is_some(), Some(*balancer)),
                TcpRoute::Handoffs(_) => (false, None),
            },
            Transport::Mptcp(m) => (m.proxy.is_some(), None),
        };
        if access {
            return Err(err(
                key("access"),
                "a car (a flow with access) runs on the cars testbed (the router's proxy or load balancer; `railpath testbed run` dispatches it there), not here",
            ));
        }
        if let Some(b) = balancer {
            return Err(err(
                key("paths"),
                &format!(
                    "{:?} is a balancer: a flow through it is a car, give it access = \"<in-car link>\"",
                    r.balancers[b].id
                ),
            ));
        }
        if let Transport::Mptcp(m) = &f.transport {
            if m.bloat_monitor().is_some() {
                return Err(err(
                    key("mechanisms"),
                    "the bloat monitor lives in the MPTCP sender and runs in the simulator only: the kernel's MPTCP has no such mechanism",
                ));
            }
        }
        if f.tcp_config()
            .is_some_and(|t| t.send_buffer_bytes.is_some())
        {
            return Err(err(
                key("tcp.send_buffer_bytes"),
                "a fixed send buffer runs in the simulator only: the testbed's hosts autotune tcp_wmem",
            ));
        }
        if let Transport::Mptcp(m) = &f.transport {
            if m.subflow_window_bytes.is_some() {
                return Err(err(
                    key("subflow_window_bytes"),
                    "a fixed window per subflow (Kheirkhah's ns-3 MPTCP) runs in the simulator only: the kernel's MPTCP has the data-level window alone",
                ));
            }
        }
        let m = match &f.transport {
            Transport::Tcp(t) => {
                if let TcpRoute::Handoffs(_) = t.route {
                    return Err(err(
                        key("handoffs"),
                        "vertical handoffs (and TCP-FS) run in the simulator only: the testbed's clients have one interface each",
                    ));
                }
                continue;
            }
            Transport::Mptcp(m) => m,
            Transport::Udp(_) => continue,
        };
        for (j, sf) in m.subflows.iter().enumerate() {
            if m.subflows[..j].iter().any(|o| o.path_id == sf.path_id) {
                return Err(err(
                    key("paths"),
                    &format!(
                        "link {:?} repeats: the kernel path manager opens one subflow per link in the testbed",
                        sf.path_id
                    ),
                ));
            }
        }
        for (j, c) in m.prio_changes.iter().enumerate() {
            if c.by == PrioBy::Sender {
                return Err(err(
                    key(&format!("prio_changes[{j}].by")),
                    "the testbed sends MP_PRIO from the receiver (the router's endpoints); the server has one address for every subflow",
                ));
            }
        }
        let host_wide: HostWide = (
            sorted(&m.backup_paths),
            m.prio_changes
                .iter()
                .map(|c| (c.t_s, c.path.clone(), c.backup))
                .collect(),
            m.stale_loss_cnt,
        );
        match &mptcp_host {
            None => mptcp_host = Some((&f.id, host_wide)),
            Some((other, h)) if *h != host_wide => {
                return Err(err(
                    key("backup_paths"),
                    &format!(
                        "backup_paths, prio_changes and stale_loss_cnt act on the whole host in the testbed: every mptcp flow must give the same as flow {other:?}"
                    ),
                ))
            }
            _ => {}
        }
        let mut p: Vec<&String> = m.subflows.iter().map(|sf| &sf.path_id).collect();
        p.sort();
        match &mptcp_paths {
            None => mptcp_paths = Some((&f.id, p)),
            Some((other, q)) if *q != p => {
                return Err(err(
                    key("paths"),
                    &format!(
                        "the kernel path manager has one endpoint set per host: every mptcp flow must use the same links as flow {other:?}"
                    ),
                ))
            }
            _ => {}
        }
    }
    if r.flows.len() > 100 {
        return Err(err(
            "flow".to_string(),
            "the testbed runs at most 100 flows",
        ));
    }
    Ok(())
}

/// `[tcp]` settings the testbed applies to the kernel (as the namespaces' `net.ipv4.tcp_rmem`
/// and `tcp_wmem`), and bookkeeping that is no setting.
const APPLIED_TCP_OPTIONS: &[&str] = &["rmem_bytes", "wmem_bytes", "rto_formula_set"];

/// The `[tcp]` settings of flow `i` that differ from Linux's defaults: the testbed runs the
/// kernel's own TCP, so they are not applied (the caller warns). Compared field by field on the
/// resolved configuration's `Debug` form, so fields added to the schema later are covered too;
/// the settings in [`APPLIED_TCP_OPTIONS`] are left out.
pub fn unapplied_tcp_options(r: &Resolved, i: usize) -> Vec<String> {
    fn fields(dbg: &str) -> Vec<(String, String)> {
        let inner = dbg
            .split_once('{')
            .map(|x| x.1)
            .unwrap_or("")
            .trim_end_matches('}');
        inner
            .split(", ")
            .filter_map(|kv| kv.split_once(": "))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .filter(|(k, _)| !APPLIED_TCP_OPTIONS.contains(&k.as_str()))
            .collect()
    }
    let linux = fields(&format!(
        "{:?}",
        railpath_scenario::TcpOptions::default().resolved()
    ));
    let Some(tcp) = r.flows[i].tcp_config() else {
        return Vec::new();
    };
    let mine = fields(&format!("{:?}", tcp));
    mine.into_iter()
        .filter(|kv| !linux.contains(kv))
        .map(|(k, v)| format!("{k} = {v}"))
        .collect()
}

/// Raw `struct tcp_info` fields the testbed reads.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TcpInfo {
    pub snd_mss: u32,
    pub rto_us: u32,
    pub rtt_us: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    /// `tcpi_total_rto` (Linux 6.7+), when the kernel returned it.
    pub total_rto: Option<u16>,
}

impl TcpInfo {
    /// Parse the first `len` bytes of a `struct tcp_info` (offsets of include/uapi/linux/tcp.h).
    pub fn parse(b: &[u8]) -> Option<TcpInfo> {
        let u32_at = |o: usize| -> Option<u32> {
            b.get(o..o + 4)
                .map(|x| u32::from_ne_bytes(x.try_into().expect("4 bytes")))
        };
        Some(TcpInfo {
            rto_us: u32_at(8)?,
            snd_mss: u32_at(16)?,
            rtt_us: u32_at(68)?,
            snd_cwnd: u32_at(80)?,
            total_retrans: u32_at(100)?,
            total_rto: b.get(240..242).map(|x| u16::from_ne_bytes([x[0], x[1]])),
        })
    }
    pub fn cwnd_bytes(&self) -> f64 {
        self.snd_cwnd as f64 * self.snd_mss as f64
    }
}

fn getsockopt_bytes(
    fd: i32,
    level: libc::c_int,
    name: libc::c_int,
    buf: &mut [u8],
) -> Option<usize> {
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: buf is valid for len bytes; the kernel writes at most len and updates it.
    let r = unsafe {
        libc::getsockopt(
            fd,
            level,
            name,
            buf.as_mut_ptr() as *mut libc::c_void,
            &mut len,
        )
    };
    (r == 0).then_some(len as usize)
}

/// `TCP_INFO` of a TCP socket.
pub fn tcp_info(fd: i32) -> Option<TcpInfo> {
    let mut buf = [0u8; TCP_INFO_LEN];
    let n = getsockopt_bytes(fd, libc::IPPROTO_TCP, libc::TCP_INFO, &mut buf)?;
    TcpInfo::parse(&buf[..n])
}

/// Per-subflow (remote address, `TCP_INFO`) of an MPTCP socket, through `MPTCP_TCPINFO` and
/// `MPTCP_SUBFLOW_ADDRS` (both walk the subflow list in the same order).
pub fn mptcp_subflows(fd: i32) -> Vec<(Ipv4Addr, TcpInfo)> {
    const MAX: usize = 16;
    const HDR: usize = 16; // struct mptcp_subflow_data
    const ADDR: usize = 256; // struct mptcp_subflow_addrs: two sockaddr_storage
    let fetch = |name: libc::c_int, elem: usize| -> Option<(Vec<u8>, usize)> {
        let mut buf = vec![0u8; HDR + MAX * elem];
        buf[0..4].copy_from_slice(&(HDR as u32).to_ne_bytes());
        buf[12..16].copy_from_slice(&(elem as u32).to_ne_bytes());
        let n = getsockopt_bytes(fd, SOL_MPTCP, name, &mut buf)?;
        let num = u32::from_ne_bytes(buf[4..8].try_into().ok()?) as usize;
        let user = u32::from_ne_bytes(buf[12..16].try_into().ok()?) as usize;
        let shown = num.min(MAX).min(n.saturating_sub(HDR) / user.max(1));
        Some((buf, shown))
    };
    let (Some((info, n1)), Some((addrs, n2))) = (
        fetch(MPTCP_TCPINFO, TCP_INFO_LEN),
        fetch(MPTCP_SUBFLOW_ADDRS, ADDR),
    ) else {
        return Vec::new();
    };
    let user_info = u32::from_ne_bytes(info[12..16].try_into().expect("4 bytes")) as usize;
    let mut out = Vec::new();
    for k in 0..n1.min(n2) {
        let a = &addrs[HDR + k * ADDR..HDR + (k + 1) * ADDR];
        if u16::from_ne_bytes([a[0], a[1]]) as i32 != libc::AF_INET {
            continue;
        }
        // The remote address (second sockaddr_storage): the sender is the server, whose local
        // address is the same service address on every subflow.
        let r = &a[128..];
        if u16::from_ne_bytes([r[0], r[1]]) as i32 != libc::AF_INET {
            continue;
        }
        let ip = Ipv4Addr::new(r[4], r[5], r[6], r[7]);
        if let Some(ti) = TcpInfo::parse(&info[HDR + k * user_info..HDR + (k + 1) * user_info]) {
            out.push((ip, ti));
        }
    }
    out
}

/// SO_RCVBUFFORCE / SO_SNDBUFFORCE (root: not capped by net.core.rmem_max / wmem_max).
fn set_buf_force(sock: &Socket, opt: libc::c_int, bytes: usize) -> std::io::Result<()> {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    // SAFETY: setsockopt with a pointer to an int that outlives the call.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            opt,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn set_cc(sock: &Socket, cc: &str) -> Result<(), TestbedError> {
    // SAFETY: setsockopt with a pointer to the name's bytes, valid for the call.
    let r = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            cc.as_ptr() as *const libc::c_void,
            cc.len() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(TestbedError::io(
            format!("TCP_CONGESTION {cc}"),
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

struct FlowPlan {
    kernel_cc: String,
    port: u16,
    start: Duration,
    bytes: u64,
    mptcp: bool,
    bind: Ipv4Addr,
    /// mptcp `receive_buffer_packets` / `send_buffer_packets` in bytes (SO_RCVBUFFORCE /
    /// SO_SNDBUFFORCE; the kernel doubles the value for bookkeeping, as for any socket).
    rcvbuf: Option<usize>,
    sndbuf: Option<usize>,
}

#[derive(Default)]
struct ClientResult {
    per_bin: Vec<u64>,
    total: u64,
    fct: Option<Duration>,
    error: Option<String>,
}

/// Per-flow sender samples: for each subflow key ("" for tcp, link id for mptcp) and bin.
#[derive(Default)]
struct Samples {
    cwnd: std::collections::BTreeMap<String, Vec<f64>>,
    srtt: std::collections::BTreeMap<String, Vec<f64>>,
    last: std::collections::BTreeMap<String, TcpInfo>,
    rto_us_sum: f64,
    rto_n: u64,
}

impl Samples {
    fn record(&mut self, key: &str, bin: usize, nbins: usize, ti: TcpInfo) {
        for (map, v) in [
            (&mut self.cwnd, ti.cwnd_bytes()),
            (&mut self.srtt, ti.rtt_us as f64 / 1e3),
        ] {
            let s = map
                .entry(key.to_string())
                .or_insert_with(|| vec![f64::NAN; nbins]);
            if bin < s.len() {
                s[bin] = v;
            }
        }
        self.rto_us_sum += ti.rto_us as f64;
        self.rto_n += 1;
        self.last.insert(key.to_string(), ti);
    }
}

/// Run a scenario on a fresh testbed and measure it.
pub fn run_scenario(r: &Resolved) -> Result<RunResults, TestbedError> {
    Ok(run_scenario_with_report(r)?.0)
}

/// [`run_scenario`], also returning the emulator's own report (timing, per-direction counters,
/// outage events) for a record of how faithful the run was.
pub fn run_scenario_with_report(r: &Resolved) -> Result<(RunResults, EmuReport), TestbedError> {
    run_scenario_with(r, None)
}

/// Something that runs beside a testbed run, such as railpath-gateway's PHA-D controller in the
/// router namespace: called once the testbed is up (namespaces, links, MPTCP endpoints, sysctls)
/// and before any flow connects; what it returns is dropped when the flows are done, before the
/// testbed is torn down (so its `Drop` stops it). It is responsible for the flows' `mechanisms`,
/// which the testbed itself does not run.
pub type Sidecar<'a> =
    &'a (dyn Fn(&Testbed) -> Result<Box<dyn std::any::Any>, TestbedError> + Sync);

/// [`run_scenario_with_report`] with a [`Sidecar`].
pub fn run_scenario_with(
    s: &Resolved,
    sidecar: Option<Sidecar>,
) -> Result<(RunResults, EmuReport), TestbedError> {
    INTERRUPTED.store(false, Ordering::SeqCst);
    check_supported(s)?;
    if sidecar.is_none() {
        let with = s.flows.iter().find_map(|f| {
            let names: Vec<&str> = match &f.transport {
                Transport::Tcp(t) => t.mechanisms.iter().map(|m| m.name()).collect(),
                Transport::Mptcp(m) => m.mechanisms.iter().map(MptcpMechanism::name).collect(),
                Transport::Udp(_) => Vec::new(),
            };
            (!names.is_empty()).then_some((f, names))
        });
        if let Some((f, names)) = with {
            return Err(ScenarioError::new(
                &s.source,
                format!("flow \"{}\".mechanisms", f.id),
                format!(
                    "the kernel has no {names:?}: on the testbed, pha-d runs through railpath-gateway's controller (`railpath testbed run`); pha is a sender-side scheduler and exists only in the simulator"
                ),
            )
            .into());
        }
    }
    let wall = Instant::now();
    let ccs: Vec<(String, String)> = (0..s.flows.len())
        .map(|i| kernel_cc(s, i))
        .collect::<Result<_, _>>()?;
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control")
        .unwrap_or_default();
    for (k, _) in &ccs {
        if !available.split_whitespace().any(|a| a == k) {
            // Loading the module happens on first use when allowed; setsockopt reports failure.
            eprintln!(
                "testbed: congestion control {k} not loaded yet (available: {})",
                available.trim()
            );
        }
    }
    for (i, f) in s.flows.iter().enumerate() {
        let Some(mine) = f.tcp_config() else {
            continue;
        };
        let all = &s.tcp;
        if (mine.rmem_bytes, mine.wmem_bytes) != (all.rmem_bytes, all.wmem_bytes) {
            eprintln!(
                "testbed: flow {:?}: rmem_bytes/wmem_bytes act on the whole host in the testbed; [tcp]'s apply",
                f.id
            );
        }
        let diff = unapplied_tcp_options(s, i);
        if !diff.is_empty() {
            eprintln!(
                "testbed: flow {:?}: the kernel's TCP runs with its defaults, not {}",
                f.id,
                diff.join(", ")
            );
        }
    }
    let spec = TestbedSpec::from_resolved(s)?;
    let bin = spec.emu.bin;
    let duration = Duration::from_nanos(Time::from_secs_f64(s.run.duration_s).ns());
    let nbins = ((s.run.duration_s * 1000.0 / s.run.bin_ms).round() as usize).max(1);
    let tb = Testbed::new(&spec)?;
    // MPTCP endpoints only on the links MPTCP flows use.
    let used: Vec<&String> = s
        .flows
        .iter()
        .filter_map(|f| f.mptcp())
        .flat_map(|m| m.subflows.iter().map(|sf| &sf.path_id))
        .collect();
    for l in tb.link_ids().to_vec() {
        if !used.contains(&&l) {
            let id = tb.endpoint_id(&l)?.to_string();
            tb.exec(
                tb.router_ns(),
                "ip",
                &["mptcp", "endpoint", "delete", "id", &id],
            )?;
        }
    }
    // The kernel's buffer autotuning limits: the scenario's `[tcp]` rmem_bytes / wmem_bytes
    // (by default Linux 6.18's) on both hosts, whatever this machine's defaults are.
    let t = &s.tcp;
    let triple = |v: [u64; 3]| format!("{} {} {}", v[0], v[1], v[2]);
    for ns in [tb.router_ns(), tb.server_ns()] {
        tb.sysctl(ns, "net.ipv4.tcp_rmem", &triple(t.rmem_bytes))?;
        tb.sysctl(ns, "net.ipv4.tcp_wmem", &triple(t.wmem_bytes))?;
    }
    // Host-wide MPTCP settings (check_supported made every mptcp flow agree on them).
    let mut prio_script: Vec<(Duration, String, bool)> = Vec::new();
    if let Some(f) = s.flows.iter().find_map(|f| f.mptcp()) {
        for l in &f.backup_paths {
            let id = tb.endpoint_id(l)?.to_string();
            tb.exec(
                tb.router_ns(),
                "ip",
                &["mptcp", "endpoint", "change", "id", &id, "backup"],
            )?;
        }
        if let Some(n) = f.stale_loss_cnt {
            for ns in [tb.router_ns(), tb.server_ns()] {
                tb.sysctl(ns, "net.mptcp.stale_loss_cnt", &n.to_string())?;
            }
        }
        for c in &f.prio_changes {
            let at = Duration::from_nanos(Time::from_secs_f64(c.t_s).ns());
            prio_script.push((at, tb.endpoint_id(&c.path)?.to_string(), c.backup));
        }
        prio_script.sort_by_key(|p| p.0);
    }
    for f in &s.flows {
        let Some(m) = f.mptcp() else { continue };
        if m.scheduler != railpath_scenario::SchedulerKind::LinuxDefault {
            eprintln!(
                "testbed: flow {:?}: scheduler {:?} is not in upstream Linux; the kernel's default scheduler runs",
                f.id,
                m.scheduler.as_str()
            );
        }
    }
    let plans: Vec<FlowPlan> = s
        .flows
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let start = Duration::from_nanos(Time::from_secs_f64(f.start_s).ns());
            // check_supported refused every other kind and route.
            let (bytes, first, mptcp) = match &f.transport {
                Transport::Tcp(t) => match t.route {
                    TcpRoute::Path { path, .. } => (t.bytes, path, None),
                    _ => {
                        return Err(TestbedError::Other(format!(
                            "flow {:?}: not a plain tcp flow",
                            f.id
                        )))
                    }
                },
                Transport::Mptcp(m) => (m.bytes, m.subflows[0].path, Some(m)),
                Transport::Udp(_) => return Err(udp_unsupported(s, &f.id).into()),
            };
            let railpath_scenario::PathTarget::Link(first) = first else {
                return Err(TestbedError::Other(format!("flow {:?}: over a bond", f.id)));
            };
            let mss = f.tcp_config().map_or(1, |t| t.mss_bytes);
            let bytes_of = |n: u32| n as usize * mss as usize;
            Ok(FlowPlan {
                kernel_cc: ccs[i].0.clone(),
                port: BASE_PORT + i as u16,
                start,
                bytes,
                mptcp: mptcp.is_some(),
                bind: tb.router_addr(s.links[first].id())?,
                rcvbuf: mptcp.and_then(|m| m.receive_buffer_packets).map(bytes_of),
                sndbuf: mptcp.and_then(|m| m.send_buffer_packets).map(bytes_of),
            })
        })
        .collect::<Result<_, TestbedError>>()?;
    // Sockets are created inside their namespaces, then used from ordinary threads.
    let mut listeners = Vec::new();
    let mut clients = Vec::new();
    for p in &plans {
        let proto = if p.mptcp {
            Protocol::MPTCP
        } else {
            Protocol::TCP
        };
        let port = p.port;
        let l = tb.run_in(tb.server_ns(), || -> std::io::Result<Socket> {
            let l = Socket::new(Domain::IPV4, Type::STREAM, Some(proto))?;
            l.set_reuse_address(true)?;
            l.bind(&SockAddr::from(SocketAddrV4::new(SERVER_ADDR, port)))?;
            l.listen(16)?;
            l.set_nonblocking(true)?;
            Ok(l)
        })?;
        let l = l.map_err(|e| TestbedError::io(format!("server socket on port {port}"), e))?;
        set_cc(&l, &p.kernel_cc)?;
        if let Some(b) = p.sndbuf {
            // Inherited by the accepted connection.
            set_buf_force(&l, libc::SO_SNDBUFFORCE, b)
                .map_err(|e| TestbedError::io(format!("SO_SNDBUFFORCE on port {port}"), e))?;
        }
        listeners.push(l);
        let bind = p.bind;
        let rcvbuf = p.rcvbuf;
        let c = tb.run_in(tb.router_ns(), || -> std::io::Result<Socket> {
            let c = Socket::new(Domain::IPV4, Type::STREAM, Some(proto))?;
            if let Some(b) = rcvbuf {
                set_buf_force(&c, libc::SO_RCVBUFFORCE, b)?;
            }
            c.bind(&SockAddr::from(SocketAddrV4::new(bind, 0)))?;
            Ok(c)
        })?;
        clients.push(c.map_err(|e| TestbedError::io(format!("client socket bound to {bind}"), e))?);
    }
    let side = match sidecar {
        Some(start) => Some(start(&tb)?),
        None => None,
    };
    let origin = tb.origin();
    let deadline = origin + duration;
    let senders: Vec<Mutex<Option<Arc<Socket>>>> = plans.iter().map(|_| Mutex::new(None)).collect();
    let link_of_addr: Vec<(Ipv4Addr, String)> = tb
        .link_ids()
        .iter()
        .map(|l| (tb.router_addr(l).expect("known link"), l.clone()))
        .collect();
    let mut samples: Vec<Samples> = plans.iter().map(|_| Samples::default()).collect();
    let mut client_results: Vec<ClientResult> = Vec::new();
    let bin_d = Duration::from_nanos(bin.ns());
    std::thread::scope(|sc| {
        let mut server_handles = Vec::new();
        for ((p, l), slot) in plans.iter().zip(listeners).zip(&senders) {
            server_handles.push(sc.spawn(move || serve(p, l, slot, deadline)));
        }
        let mut client_handles = Vec::new();
        for (p, c) in plans.iter().zip(clients) {
            client_handles.push(sc.spawn(move || receive(p, c, origin, deadline, bin_d, nbins)));
        }
        // Scripted MP_PRIO: the router (the data receiver) flips its endpoint, and the kernel
        // sends MP_PRIO on the live subflows from that address.
        let rtr = tb.router_ns().to_string();
        let script = &prio_script;
        sc.spawn(move || {
            for (at, id, backup) in script {
                let due = origin + *at;
                if due > deadline {
                    break;
                }
                if !sleep_until(due) {
                    break;
                }
                let flag = if *backup { "backup" } else { "nobackup" };
                let r = railpath_linkem::netns::ip([
                    "-n", &rtr, "mptcp", "endpoint", "change", "id", id, flag,
                ]);
                match r {
                    Ok(()) => eprintln!(
                        "testbed: t = {:.3} s: endpoint {id} {flag}",
                        origin.elapsed().as_secs_f64()
                    ),
                    Err(e) => eprintln!("testbed: endpoint {id} {flag}: {e}"),
                }
            }
        });
        // Sample the senders at the end of every bin.
        let mut k = 1usize;
        loop {
            let due = origin + bin_d * k as u32;
            let now = Instant::now();
            if due > deadline + bin_d / 2 || (due > now && !sleep_until(due)) {
                break;
            }
            for (fi, slot) in senders.iter().enumerate() {
                let sock = slot.lock().expect("no poisoned locks").clone();
                let Some(sock) = sock else { continue };
                if plans[fi].mptcp {
                    for (ip, ti) in mptcp_subflows(sock.as_raw_fd()) {
                        let link = link_of_addr
                            .iter()
                            .find(|(a, _)| *a == ip)
                            .map(|(_, l)| l.as_str())
                            .unwrap_or("?");
                        samples[fi].record(link, k - 1, nbins, ti);
                    }
                } else if let Some(ti) = tcp_info(sock.as_raw_fd()) {
                    samples[fi].record("", k - 1, nbins, ti);
                }
            }
            k += 1;
        }
        for h in server_handles {
            let _ = h.join();
        }
        for h in client_handles {
            client_results.push(h.join().unwrap_or_else(|_| ClientResult {
                error: Some("receiver thread panicked".into()),
                ..ClientResult::default()
            }));
        }
    });
    drop(senders);
    drop(side);
    let report = tb.finish()?;
    if interrupted() {
        return Err(TestbedError::Interrupted);
    }
    let l = &report.lateness;
    eprintln!(
        "testbed: emulator timing: {} packets written {:.1} us late on average (p99 {:.0} us, max {:.0} us){}",
        l.packets,
        l.mean_us,
        l.p99_us,
        l.max_us,
        if report.realtime { "" } else { "; not SCHED_FIFO" }
    );
    for (f, r) in s.flows.iter().zip(&client_results) {
        if let Some(e) = &r.error {
            eprintln!("testbed: flow {:?}: {e}", f.id);
        }
    }
    let handovers = railpath_linkem::config::links_and_handovers(s)?.1;
    let mut results = assemble(s, &ccs, &plans, &client_results, &samples, &report, nbins);
    results.summary.handovers = handovers;
    results.summary.wall_s = wall.elapsed().as_secs_f64();
    Ok((results, report))
}

/// Server side of one flow: accept, then send `bytes` (or until the deadline).
fn serve(p: &FlowPlan, l: Socket, slot: &Mutex<Option<Arc<Socket>>>, deadline: Instant) {
    let conn = loop {
        match l.accept() {
            Ok((c, _)) => break c,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::Interrupted =>
            {
                if !running(deadline) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => {
                eprintln!("testbed: accept on port {}: {e}", p.port);
                return;
            }
        }
    };
    let _ = conn.set_nonblocking(false);
    let _ = conn.set_write_timeout(Some(Duration::from_millis(50)));
    let conn = Arc::new(conn);
    *slot.lock().expect("no poisoned locks") = Some(conn.clone());
    let buf = vec![0u8; 64 * 1024];
    let mut left = if p.bytes == 0 { u64::MAX } else { p.bytes };
    while left > 0 && running(deadline) {
        let n = (buf.len() as u64).min(left) as usize;
        match (&*conn).write(&buf[..n]) {
            Ok(w) => left -= w as u64,
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if left == 0 {
        let _ = conn.shutdown(std::net::Shutdown::Write);
    }
}

/// Receiving side of one flow: connect at its start time, count bytes per bin until EOF, the
/// flow's size, or the deadline.
fn receive(
    p: &FlowPlan,
    c: Socket,
    origin: Instant,
    deadline: Instant,
    bin: Duration,
    nbins: usize,
) -> ClientResult {
    let mut r = ClientResult {
        per_bin: vec![0; nbins],
        ..ClientResult::default()
    };
    let start = origin + p.start;
    if !sleep_until(start) || !running(deadline) {
        return r;
    }
    let to = SockAddr::from(SocketAddrV4::new(SERVER_ADDR, p.port));
    let wait = deadline
        .saturating_duration_since(Instant::now())
        .max(Duration::from_millis(1));
    if let Err(e) = c.connect_timeout(&to, wait) {
        r.error = Some(format!("connect to {SERVER_ADDR}:{}: {e}", p.port));
        return r;
    }
    let _ = c.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = vec![0u8; 256 * 1024];
    while running(deadline) {
        match (&c).read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                let t = origin.elapsed();
                let b = (t.as_nanos() / bin.as_nanos().max(1)) as usize;
                if b < r.per_bin.len() {
                    r.per_bin[b] += n as u64;
                    r.total += n as u64;
                }
                if p.bytes > 0 && r.total >= p.bytes {
                    r.fct = Some(t.saturating_sub(p.start));
                    break;
                }
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                r.error = Some(format!("read: {e}"));
                break;
            }
        }
    }
    r
}

fn avg_max(v: &[f64]) -> AvgMax {
    if v.is_empty() {
        return AvgMax { avg: 0.0, max: 0.0 };
    }
    AvgMax {
        avg: v.iter().sum::<f64>() / v.len() as f64,
        max: v.iter().cloned().fold(0.0, f64::max),
    }
}

fn fit(mut v: Vec<f64>, n: usize, fill: f64) -> Vec<f64> {
    v.resize(n, fill);
    v
}

/// Mean goodput over 1 s windows centred on each outage start of `links` (bins fully inside).
pub fn around_outages(goodput: &[f64], bin_s: f64, starts: &[f64]) -> Option<f64> {
    let vals: Vec<f64> = starts
        .iter()
        .filter_map(|&t| {
            let lo = ((t - 0.5) / bin_s).round().max(0.0) as usize;
            let hi = (((t + 0.5) / bin_s).round() as usize).min(goodput.len());
            (hi > lo).then(|| goodput[lo..hi].iter().sum::<f64>() / (hi - lo) as f64)
        })
        .collect();
    (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64)
}

fn assemble(
    s: &Resolved,
    ccs: &[(String, String)],
    plans: &[FlowPlan],
    clients: &[ClientResult],
    samples: &[Samples],
    rep: &EmuReport,
    nbins: usize,
) -> RunResults {
    let bin_s = s.run.bin_ms / 1000.0;
    let mut series = Vec::new();
    let mut flows = Vec::new();
    for (i, f) in s.flows.iter().enumerate() {
        let r = &clients[i];
        let gp: Vec<f64> = r.per_bin.iter().map(|&b| b as f64 * 8.0 / bin_s).collect();
        let active_s = match r.fct {
            Some(d) => d.as_secs_f64(),
            None => (s.run.duration_s - f.start_s).max(1e-9),
        };
        let paths: Vec<_> = rep
            .paths
            .iter()
            .filter(|p| p.server_port == plans[i].port)
            .collect();
        let sent: u64 = paths.iter().map(|p| p.sent_packets).sum();
        let retrans: u64 = paths.iter().map(|p| p.retransmitted_packets).sum();
        let sm = &samples[i];
        let rto_count: u64 = sm
            .last
            .values()
            .filter_map(|t| t.total_rto)
            .map(u64::from)
            .sum();
        // The flow's links, by id (a tcp flow's one, an mptcp flow's one per subflow).
        let link_ids: Vec<&str> = s.flow_links(f).iter().map(|&l| s.links[l].id()).collect();
        let outage_starts: Vec<f64> = rep
            .events
            .iter()
            .filter(|e| {
                matches!(e.kind, LinkEventKind::OutageStart { .. })
                    && link_ids.contains(&e.link.as_str())
            })
            .map(|e| e.t.secs_f64())
            .collect();
        let subflows = plans[i].mptcp.then(|| {
            link_ids
                .iter()
                .map(|&l| {
                    let l = l.to_string();
                    let ps: Vec<_> = paths.iter().filter(|p| p.link == l).collect();
                    SubflowSummary {
                        id: l.clone(),
                        link: l.clone(),
                        goodput_bps: ps.iter().map(|p| p.delivered_bytes).sum::<u64>() as f64 * 8.0
                            / active_s,
                        sent_packets: ps.iter().map(|p| p.sent_packets).sum(),
                        retransmitted_packets: ps.iter().map(|p| p.retransmitted_packets).sum(),
                    }
                })
                .collect()
        });
        flows.push(FlowSummary {
            id: f.id.clone(),
            kind: f.transport.kind_name().to_string(),
            cc: ccs[i].1.clone(),
            scheduler: plans[i].mptcp.then(|| "linux-default".to_string()),
            mechanisms: Vec::new(),
            goodput_bps: r.total as f64 * 8.0 / active_s,
            delivered_bytes: r.total,
            sent_packets: sent,
            retransmitted_packets: retrans,
            rto_count,
            handover_goodput_bps: around_outages(&gp, bin_s, &outage_starts),
            fct_s: r.fct.map(|d| d.as_secs_f64()),
            srtt_ms: if plans[i].mptcp {
                None
            } else {
                sm.last.get("").map(|t| t.rtt_us as f64 / 1e3)
            },
            rto_ms: (sm.rto_n > 0 && !plans[i].mptcp)
                .then(|| sm.rto_us_sum / sm.rto_n as f64 / 1e3),
            subflows,
            receive_buffer: None,
            send_buffer: None,
            send_buffer_held: None,
            reorder_delay_ms: None,
            pha: None,
            handoffs: None,
            bloat: None,
            udp: None,
            car: None,
        });
        series.push(Series {
            flow: f.id.clone(),
            subflow: String::new(),
            metric: "goodput_bps",
            values: fit(gp, nbins, 0.0),
        });
        if plans[i].mptcp {
            for &l in &link_ids {
                let l = l.to_string();
                let mut v = vec![0.0; nbins];
                for p in paths.iter().filter(|p| p.link == l) {
                    for (k, b) in p.delivered_bytes_per_bin.iter().enumerate().take(nbins) {
                        v[k] += *b as f64 * 8.0 / bin_s;
                    }
                }
                series.push(Series {
                    flow: f.id.clone(),
                    subflow: l.clone(),
                    metric: "goodput_bps",
                    values: v,
                });
            }
        }
        for (metric, map) in [("cwnd_bytes", &sm.cwnd), ("srtt_ms", &sm.srtt)] {
            for (sub, v) in map {
                series.push(Series {
                    flow: f.id.clone(),
                    subflow: sub.clone(),
                    metric,
                    values: fit(v.clone(), nbins, f64::NAN),
                });
            }
        }
    }
    let links = link_summaries(rep, nbins);
    series.extend(link_series(rep, nbins));
    let events = rep
        .links
        .iter()
        .map(|l| l.data.arrived_packets + l.reverse.arrived_packets)
        .sum();
    RunResults {
        summary: Summary {
            format: railpath_sim::results::SUMMARY_FORMAT.to_string(),
            railpath_version: railpath_sim::VERSION.to_string(),
            scenario: s.source.clone(),
            seed: s.run.seed,
            sim_duration_s: s.run.duration_s,
            wall_s: 0.0,
            events,
            flows,
            // The testbed runs no udp flows (check_supported refuses them).
            links,
            handovers: Vec::new(),
            bonds: Vec::new(),
        },
        bin_s,
        series,
    }
}

/// The emulator's per-link summaries, as the simulator's `summary.json` has them.
pub fn link_summaries(rep: &EmuReport, nbins: usize) -> Vec<LinkSummary> {
    rep.links
        .iter()
        .map(|l| {
            let d = &l.data;
            LinkSummary {
                id: l.id.clone(),
                forwarded_packets: d.forwarded_packets,
                dropped_packets: d.dropped_packets(),
                random_losses: d.random_losses,
                queue_bytes: avg_max(&l.queue_bytes[..l.queue_bytes.len().min(nbins)]),
                queue_delay_ms: AvgMax {
                    avg: if d.served_packets == 0 {
                        0.0
                    } else {
                        d.queue_delay_sum_ns as f64 / d.served_packets as f64 / 1e6
                    },
                    max: d.queue_delay_max_ns as f64 / 1e6,
                },
                outages: l.outages.iter().map(Into::into).collect(),
            }
        })
        .collect()
}

/// The links' queue series as the simulator writes them: flow "", subflow = link id.
pub fn link_series(rep: &EmuReport, nbins: usize) -> Vec<Series> {
    let mut series = Vec::new();
    for l in &rep.links {
        series.push(Series {
            flow: String::new(),
            subflow: l.id.clone(),
            metric: "queue_bytes",
            values: fit(l.queue_bytes.clone(), nbins, 0.0),
        });
    }
    series
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(flows: &str) -> railpath_scenario::Scenario {
        railpath_scenario::parse_str(
            &format!(
                "[run]\nduration_s = 1\n[[link]]\nid = \"a\"\nrate_mbps = 10\n[[link]]\nid = \"b\"\nrate_mbps = 10\n{flows}"
            ),
            "t.toml",
        )
        .unwrap()
    }

    #[test]
    fn cc_mapping() {
        let s =
            scenario("[[flow]]\nid = \"x\"\nkind = \"tcp\"\ncc = \"newreno\"\npaths = [\"a\"]\n");
        let r = s.validate().unwrap();
        assert_eq!(kernel_cc(&r, 0).unwrap(), ("reno".into(), "newreno".into()));
        let mut s2 = s.clone();
        s2.flows[0].kind = railpath_scenario::FlowKind::Mptcp;
        s2.flows[0].cc = "uncoupled-bbr".into();
        assert_eq!(kernel_cc(&s2.validate().unwrap(), 0).unwrap().0, "bbr");
        s2.flows[0].cc = "lia".into();
        assert_eq!(
            kernel_cc(&s2.validate().unwrap(), 0).unwrap(),
            ("cubic".into(), "uncoupled-cubic".into())
        );
    }

    #[test]
    fn mechanisms_need_a_sidecar() {
        // Refused before any namespace is made (no root needed to see the error): PHA-D on the
        // PHA paper's geometry, with a table learned from one run.
        let mut s = railpath_scenario::parse_str(
            include_str!("../../../scenarios/pha/mptcp.toml"),
            "mptcp.toml",
        )
        .unwrap();
        s.flows[0].mechanisms = vec!["pha-d".into()];
        s.flows[0].handover_table_learn_runs = Some(1);
        let id = s.flows[0].id.clone();
        match run_scenario(&s.validate().unwrap()) {
            Err(TestbedError::Scenario(e)) => {
                assert_eq!(e.key, format!("flow \"{id}\".mechanisms"));
                assert!(e.message.contains("railpath-gateway"), "{}", e.message);
            }
            other => panic!("expected a scenario error, got {other:?}"),
        }
    }

    #[test]
    fn udp_flows_are_refused_before_anything_starts() {
        let s = scenario(
            "[[flow]]\nid = \"x\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n\
             [[flow]]\nid = \"u\"\nkind = \"udp\"\npaths = [\"a\"]\nudp = { process = \"cbr\", mean_mbps = 2 }\n",
        );
        let s = s.validate().unwrap();
        let e = check_supported(&s).unwrap_err();
        assert_eq!(e.key, "flow \"u\".kind");
        assert!(e.message.contains("simulator only"), "{}", e.message);
        assert_eq!(kernel_cc(&s, 1).unwrap_err().key, "flow \"u\".kind");
        // Refused with no namespace made (no root needed to see the error).
        match run_scenario(&s) {
            Err(TestbedError::Scenario(e)) => assert_eq!(e.key, "flow \"u\".kind"),
            other => panic!("expected a scenario error, got {other:?}"),
        }
    }

    #[test]
    fn mptcp_flows_must_share_links() {
        let mut s = scenario(
            "[[flow]]\nid = \"x\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n[[flow]]\nid = \"y\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n",
        );
        let check = |s: &railpath_scenario::Scenario| check_supported(&s.validate().unwrap());
        for f in &mut s.flows {
            f.kind = railpath_scenario::FlowKind::Mptcp;
            f.cc = "lia".into();
        }
        s.flows[0].paths = vec!["a".into(), "b".into()];
        s.flows[1].paths = vec!["b".into(), "a".into()];
        assert!(check(&s).is_ok());
        s.flows[1].paths = vec!["a".into()];
        assert_eq!(check(&s).unwrap_err().key, "flow \"y\".paths");
        // Host-wide settings must agree too.
        s.flows[1].paths = vec!["a".into(), "b".into()];
        s.flows[1].backup_paths = vec!["b".into()];
        assert_eq!(check(&s).unwrap_err().key, "flow \"y\".backup_paths");
        s.flows[0].backup_paths = vec!["b".into()];
        assert!(check(&s).is_ok());
    }

    #[test]
    fn unsupported_mptcp_features_name_their_key() {
        let mut s =
            scenario("[[flow]]\nid = \"x\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n");
        let check = |s: &railpath_scenario::Scenario| check_supported(&s.validate().unwrap());
        s.flows[0].kind = railpath_scenario::FlowKind::Mptcp;
        s.flows[0].cc = "lia".into();
        s.flows[0].paths = vec!["a".into(), "b".into(), "a".into()];
        assert_eq!(check(&s).unwrap_err().key, "flow \"x\".paths");
        s.flows[0].paths = vec!["a".into(), "b".into()];
        s.flows[0].prio_changes = vec![
            railpath_scenario::PrioChange {
                t_s: 0.5,
                path: "b".into(),
                backup: true,
                by: PrioBy::Receiver,
            },
            railpath_scenario::PrioChange {
                t_s: 0.8,
                path: "b".into(),
                backup: false,
                by: PrioBy::Sender,
            },
        ];
        assert_eq!(check(&s).unwrap_err().key, "flow \"x\".prio_changes[1].by");
        s.flows[0].prio_changes.pop();
        assert!(check(&s).is_ok());
        // Kheirkhah's per-subflow window exists in the simulator only.
        s.flows[0].subflow_window_bytes = Some(65535);
        let e = check(&s).unwrap_err();
        assert_eq!(e.key, "flow \"x\".subflow_window_bytes");
        assert!(e.message.contains("simulator only"), "{}", e.message);
        s.flows[0].subflow_window_bytes = None;
        // So is an interface unplugged (a link's outages as the interface removed).
        s.links[1].outage_mode = railpath_scenario::OutageMode::Drop;
        s.links[1].unplug = true;
        let e = check(&s).unwrap_err();
        assert_eq!(e.key, "link \"b\".unplug");
        assert!(e.message.contains("simulator only"), "{}", e.message);
    }

    #[test]
    fn non_linux_tcp_options_are_listed() {
        let mut s =
            scenario("[[flow]]\nid = \"x\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n");
        assert!(unapplied_tcp_options(&s.validate().unwrap(), 0).is_empty());
        // Setting a Linux default explicitly is fine; other values are listed.
        s.tcp.min_rto_ms = Some(200.0);
        s.tcp.initial_window = Some(4);
        s.tcp.sack = Some(false);
        // Buffer limits are applied to the kernel, not listed.
        s.tcp.rmem_bytes = Some([4096, 87380, 6291456]);
        let d = unapplied_tcp_options(&s.validate().unwrap(), 0);
        assert_eq!(
            d,
            vec!["initial_window = 4".to_string(), "sack = false".to_string()]
        );
    }

    #[test]
    fn tcp_info_offsets() {
        let mut b = vec![0u8; TCP_INFO_LEN];
        b[8..12].copy_from_slice(&204_000u32.to_ne_bytes());
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[68..72].copy_from_slice(&45_500u32.to_ne_bytes());
        b[80..84].copy_from_slice(&10u32.to_ne_bytes());
        b[100..104].copy_from_slice(&3u32.to_ne_bytes());
        b[240..242].copy_from_slice(&2u16.to_ne_bytes());
        let t = TcpInfo::parse(&b).unwrap();
        assert_eq!(t.cwnd_bytes(), 14480.0);
        assert_eq!(
            (t.rto_us, t.rtt_us, t.total_retrans, t.total_rto),
            (204_000, 45_500, 3, Some(2))
        );
        // An older kernel's shorter struct: no total_rto.
        assert_eq!(TcpInfo::parse(&b[..232]).unwrap().total_rto, None);
        assert!(TcpInfo::parse(&b[..50]).is_none());
    }

    #[test]
    fn outage_window_mean() {
        // 10 bins of 0.1 s; outage at 0.5 s: window 0..1 s = all 10 bins.
        let g: Vec<f64> = (0..10).map(|k| k as f64).collect();
        assert_eq!(around_outages(&g, 0.1, &[0.5]), Some(4.5));
        assert_eq!(around_outages(&g, 0.1, &[]), None);
        // Window clipped at the start: outage at 0.1 s -> bins 0..6.
        assert_eq!(around_outages(&g, 0.1, &[0.1]), Some(2.5));
    }
}
