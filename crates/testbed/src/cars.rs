//! Cars on the namespace testbed (the PROXY-LB paper, seeds.md section 2): a scenario whose
//! flows are cars (`access = "<in-car link>"`), each a passenger client downloading from its own
//! server (iperf3 --reverse), through the train router's MPTCP proxy or its load balancer.
//!
//! ```text
//!  car i: client ns 10.99.i.2 --veth lan<i>-- router --car<k> (emulated carrier k)-- server
//! ```
//!
//! - The in-car link (`access`) is the client's veth to the router, not emulated (a veth is
//!   faster than the 1 Gbit/s, 0.1 ms of the paper's VLANs; it is never the bottleneck). Every
//!   other link is an emulated carrier `car<k>`, in scenario order.
//! - Server: one sender per car on 10.201.0.1, port 5201 + flow index, writing for the whole run
//!   (a new connection is served the same way); MPTCP listener for a proxied car unless
//!   `proxy.server_mptcp = false`, plain TCP otherwise. Congestion control: the flow's `cc` as
//!   `crate::plain::kernel_cc` maps it (upstream Linux has no coupled MPTCP cc).
//! - Client: connects at `start_s`, reads and counts bytes per bin until the end; a connection
//!   that breaks is opened again at once and the count goes on. TCP keepalive every 1 s: the
//!   passenger's application notices a dead connection within a second, as an app's own timeout
//!   would, which is what lets a failover's reset reach it (a receiver sends nothing otherwise).
//! - MPTCP car: railpath-gateway's transparent proxy (crates/gateway/src/proxy.rs), one instance
//!   per car in the router namespace (its `proxy.buffer_bytes`, its `proxy.access_cc` towards the
//!   passenger), an nftables `redirect` of the car's TCP to the server's port; the proxy opens
//!   MPTCP to the server, the router's path manager adds a subflow per carrier of the flow's
//!   `paths` (first path: the router's default route). A server without MPTCP answers without
//!   MP_CAPABLE and the kernel falls back to TCP on the first path (RFC 8684 section 3.7).
//!   Scheduler: the kernel's default (roughly minRTT); the note says when the flow asked another.
//! - TCP car through a `[[balancer]]`: policy routing (`ip rule from 10.99.i.0/24` to a table
//!   whose default route is the car's carrier) and masquerade on every carrier, as OpenWrt mwan3
//!   does it; the carrier is chosen by `railpath_scenario::assign` (the simulator's rule) in the
//!   order the cars connect. Tracking and failover follow mwan3: a tracker in the router probes
//!   every carrier (a UDP echo to the server namespace every 100 ms, or a quarter of
//!   `detect_ms` when shorter); a carrier with no reply for `detect_ms` is down, and the cars on
//!   it are moved (their table's default route) to the carrier `assign` picks among those up.
//!   `failover = "reconnect"`: mwan3 flushes the moved car's connection tracking, so the car's
//!   next packet leaves from the new carrier's address and the server resets the unknown
//!   connection. This testbed has no conntrack tool: the router resets the car's connections
//!   of the old carrier itself (nftables `reject with tcp reset` on packets of connections
//!   marked with the old carrier), which the client sees at its next keepalive probe, as it
//!   would see the server's reset. `keep-address` (a tunnel keeping the car's address across
//!   carriers) is not built here: refused with the key named.

use crate::plain::{around_outages, kernel_cc, link_series, link_summaries, BASE_PORT};
use railpath_core::Time;
use railpath_linkem::{EmuReport, LinkConfig, LinkEventKind, Testbed, TestbedError, TestbedSpec};
use railpath_scenario::{
    assign, BalancePolicy, Failover, FlowSpec, LinkLoad, ProxyOptions, Resolved, ScenarioError,
    TcpRoute, Transport,
};
use railpath_sim::results::{FlowSummary, RunResults, Series, SubflowSummary, Summary};
use serde::Serialize;
use socket2::{Domain, Protocol, SockAddr, Socket, TcpKeepalive, Type};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Car i's proxy listens on `PROXY_BASE_PORT + i` in the router namespace.
pub const PROXY_BASE_PORT: u16 = 3200;
/// The server namespace's UDP echo responder for the balancer's tracker.
pub const ECHO_PORT: u16 = 7007;
/// The tracker's probe interval (mwan3 pings every few seconds; a shorter interval lets short
/// `detect_ms` values be honoured within a probe).
const PROBE_MS: f64 = 100.0;
/// The nftables table the router's rules live in.
const NFT_TABLE: &str = "railpath_cars";

/// Whether `r` is a scenario of cars (some flow has an in-car link): [`run`] runs it.
pub fn has_cars(r: &Resolved) -> bool {
    r.flows.iter().any(|f| access_of(f).is_some())
}

/// A flow's in-car link (`access`), if it has one.
fn access_of(f: &FlowSpec) -> Option<usize> {
    match &f.transport {
        Transport::Tcp(t) => match &t.route {
            TcpRoute::Path { access, .. } | TcpRoute::Balancer { access, .. } => *access,
            TcpRoute::Handoffs(_) => None,
        },
        Transport::Mptcp(m) => m.proxy.as_ref().map(|p| p.access),
        Transport::Udp(_) => None,
    }
}

/// How a car reaches the ground.
#[derive(Debug, Clone)]
enum Via {
    Proxy(ProxyOptions),
    /// Index into `s.balancers`.
    Balancer(usize),
}

#[derive(Debug, Clone)]
struct Car {
    /// Flow index (= client namespace index).
    i: usize,
    id: String,
    kind: &'static str,
    /// The in-car link's id.
    access: String,
    /// The carriers its data may take: an mptcp car's paths, in order, or its balancer's links.
    paths: Vec<String>,
    start_s: f64,
    via: Via,
    server_cc: String,
    summary_cc: String,
    start: Duration,
    port: u16,
    server_mptcp: bool,
}

/// What ran: per car, per failover, and what the kernel does differently from the scenario.
#[derive(Debug, Clone, Serialize, Default)]
pub struct CarsRecord {
    pub cars: Vec<CarRecord>,
    pub failovers: Vec<FailoverRecord>,
    /// Carriers the tracker saw go down (link id, time s).
    pub carriers_down: Vec<(String, f64)>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct CarRecord {
    pub id: String,
    /// "proxy" or "balancer <id>".
    pub via: String,
    /// Balancer: the carrier given when the car first connected.
    pub carrier: Option<String>,
    /// Proxy: how the onward connections ran ("mptcp", "fallback" to TCP).
    pub transport: Vec<String>,
    /// Connections the client opened (more than one: it reconnected).
    pub connects_s: Vec<f64>,
    /// Bytes the emulator delivered for this car, per carrier.
    pub carrier_bytes: BTreeMap<String, u64>,
    pub delivered_bytes: u64,
    /// The client's connection errors (at most 10).
    pub errors: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FailoverRecord {
    pub t_s: f64,
    pub balancer: String,
    pub car: String,
    pub from: String,
    pub to: String,
}

/// A run of cars: the results in the simulator's shape, the emulator's report, the record and
/// its one-line note.
pub struct CarsRun {
    pub results: RunResults,
    pub report: EmuReport,
    pub record: CarsRecord,
    pub note: String,
}

fn input(r: &Resolved, key: impl Into<String>, msg: impl Into<String>) -> TestbedError {
    TestbedError::Scenario(ScenarioError::new(&r.source, key, msg))
}

fn failed(msg: String) -> TestbedError {
    TestbedError::Other(msg)
}

/// The scenario's carriers, as indices into `s.links`: the links no flow has as `access` that
/// some car uses (an mptcp car's paths, the links of a balancer a car goes through). A link no
/// car uses is not built (a scenario cut to its first cars keeps the other cars' links).
fn carriers(r: &Resolved) -> Vec<usize> {
    let used = |j: usize| r.flows.iter().any(|f| r.flow_links(f).contains(&j));
    (0..r.links.len())
        .filter(|&j| !r.flows.iter().any(|f| access_of(f) == Some(j)) && used(j))
        .collect()
}

/// Check the scenario and plan its cars; errors name the key.
fn plan(r: &Resolved) -> Result<(Vec<Car>, Vec<String>), TestbedError> {
    let mut notes = Vec::new();
    let carrier_ids: Vec<&str> = carriers(r).into_iter().map(|j| r.links[j].id()).collect();
    if carrier_ids.is_empty() {
        return Err(input(
            r,
            "link",
            "no carrier: every link is some car's access link",
        ));
    }
    if r.flows.len() > 50 {
        return Err(input(r, "flow", "the testbed runs at most 50 cars"));
    }
    for (bi, b) in r.balancers.iter().enumerate() {
        if b.failover == Failover::KeepAddress {
            return Err(input(
                r,
                format!("balancer[{bi}].failover"),
                "keep-address needs a tunnel keeping the car's address across carriers; the testbed masquerades each car behind its carrier's address (OpenWrt mwan3): use \"reconnect\"",
            ));
        }
        for (j, &l) in b.links.iter().enumerate() {
            let id = r.links[l].id();
            if !carrier_ids.contains(&id) {
                return Err(input(
                    r,
                    format!("balancer[{bi}].links[{j}]"),
                    format!("{id:?} is a car's access link, not a carrier"),
                ));
            }
        }
    }
    let mut cars = Vec::new();
    let mut mptcp_paths: Option<(&str, Vec<String>, Vec<String>)> = None;
    for (i, f) in r.flows.iter().enumerate() {
        let key = |k: &str| format!("flow \"{}\".{k}", f.id);
        let Some(access) = access_of(f) else {
            return Err(input(
                r,
                key("access"),
                "a scenario with cars runs every flow as a car (the testbed's clients are the cars): give this flow access = \"<in-car link>\", or run it in a scenario of its own",
            ));
        };
        let (mechanisms, bytes) = match &f.transport {
            Transport::Tcp(t) => (!t.mechanisms.is_empty(), t.bytes),
            Transport::Mptcp(m) => (!m.mechanisms.is_empty(), m.bytes),
            Transport::Udp(_) => (false, 0),
        };
        if mechanisms {
            return Err(input(
                r,
                key("mechanisms"),
                "mechanisms do not run on the cars testbed",
            ));
        }
        if bytes != 0 {
            return Err(input(
                r,
                key("bytes"),
                "a car downloads for the whole run on the testbed (iperf3 --reverse): give bytes = 0",
            ));
        }
        if f.mptcp()
            .is_some_and(|m| !m.backup_paths.is_empty() || !m.prio_changes.is_empty())
        {
            return Err(input(
                r,
                key("backup_paths"),
                "backup_paths and prio_changes are not run on the cars testbed",
            ));
        }
        let (server_cc, summary_cc) = kernel_cc(r, i)?;
        let (via, paths) = match &f.transport {
            Transport::Mptcp(m) => {
                let paths: Vec<String> = m.subflows.iter().map(|sf| sf.path_id.clone()).collect();
                for p in &paths {
                    if !carrier_ids.contains(&p.as_str()) {
                        return Err(input(
                            r,
                            key("paths"),
                            format!("{p:?} is not a carrier (a link no car has as access)"),
                        ));
                    }
                }
                let mut sorted = paths.clone();
                sorted.sort();
                sorted.dedup();
                if sorted.len() != paths.len() {
                    return Err(input(
                        r,
                        key("paths"),
                        "a link repeats: the router's path manager opens one subflow per carrier",
                    ));
                }
                match &mptcp_paths {
                    None => mptcp_paths = Some((&f.id, sorted, paths.clone())),
                    Some((other, q, first)) if *q != sorted || first.first() != paths.first() => {
                        return Err(input(
                            r,
                            key("paths"),
                            format!("the router has one set of MPTCP endpoints and one default route: every mptcp car must have the paths of car {other:?}, in the same order"),
                        ))
                    }
                    _ => {}
                }
                if m.scheduler != railpath_scenario::SchedulerKind::LinuxDefault {
                    let n = format!(
                        "{}: scheduler {:?} asked, the kernel's default (roughly minRTT) ran",
                        f.id,
                        m.scheduler.as_str()
                    );
                    notes.push(n);
                }
                if m.cc.name() != summary_cc {
                    notes.push(format!(
                        "{}: cc {:?} asked, the kernel has no coupled MPTCP cc: uncoupled {server_cc}",
                        f.id,
                        m.cc.name()
                    ));
                }
                let options = m
                    .proxy
                    .as_ref()
                    .map(|p| p.options.clone())
                    .unwrap_or_default();
                (Via::Proxy(options), paths)
            }
            Transport::Tcp(t) => match t.route {
                TcpRoute::Balancer { balancer, .. } => {
                    let paths = r.balancers[balancer]
                        .links
                        .iter()
                        .map(|&l| r.links[l].id().to_string())
                        .collect();
                    (Via::Balancer(balancer), paths)
                }
                TcpRoute::Path { .. } | TcpRoute::Handoffs(_) => {
                    return Err(input(
                        r,
                        key("paths"),
                        "a tcp car goes through a load balancer: paths = [\"<balancer id>\"]",
                    ))
                }
            },
            Transport::Udp(_) => return Err(input(r, key("kind"), "a car is a tcp or mptcp flow")),
        };
        let server_mptcp = match &via {
            Via::Proxy(o) => o.server_mptcp(),
            Via::Balancer(_) => false,
        };
        cars.push(Car {
            i,
            id: f.id.clone(),
            kind: f.transport.kind_name(),
            access: r.links[access].id().to_string(),
            paths,
            start_s: f.start_s,
            via,
            server_cc,
            summary_cc,
            start: Duration::from_nanos(Time::from_secs_f64(f.start_s).ns()),
            port: BASE_PORT + i as u16,
            server_mptcp,
        });
    }
    Ok((cars, notes))
}

/// A balancer as the tracker runs it.
#[derive(Debug, Clone)]
struct BalancerRun {
    id: String,
    policy: BalancePolicy,
    detect: Duration,
    /// (link id, carrier index k on the testbed, rate Mbit/s).
    links: Vec<(String, usize, f64)>,
    /// (car index i, car id, position in `links` now).
    cars: Vec<(usize, String, usize)>,
    /// Connections opened so far (the round robin's turn).
    order: usize,
}

impl BalancerRun {
    fn loads(&self, up: &[bool], except_car: usize) -> Vec<LinkLoad> {
        self.links
            .iter()
            .enumerate()
            .map(|(j, l)| LinkLoad {
                rate_mbps: l.2,
                open: self
                    .cars
                    .iter()
                    .filter(|c| c.2 == j && c.0 != except_car)
                    .count(),
                up: up[j],
            })
            .collect()
    }
}

/// Initial assignment: every balancer's cars in the order they connect (start time, then
/// scenario order), all carriers up.
fn initial_assignment(
    r: &Resolved,
    cars: &[Car],
    carrier_of: &dyn Fn(&str) -> usize,
) -> Vec<BalancerRun> {
    let mut runs = Vec::new();
    for (bi, b) in r.balancers.iter().enumerate() {
        let mut run = BalancerRun {
            id: b.id.clone(),
            policy: b.policy,
            detect: Duration::from_secs_f64(b.detect_ms / 1000.0),
            links: b
                .links
                .iter()
                .map(|&l| {
                    let link = &r.links[l].link;
                    let rate = link.rate_mbps.unwrap_or(0.0);
                    (link.id.clone(), carrier_of(&link.id), rate)
                })
                .collect(),
            cars: Vec::new(),
            order: 0,
        };
        let mut mine: Vec<&Car> = cars
            .iter()
            .filter(|c| matches!(c.via, Via::Balancer(x) if x == bi))
            .collect();
        mine.sort_by_key(|c| (c.start, c.i));
        let up = vec![true; run.links.len()];
        for c in mine {
            let loads = run.loads(&up, usize::MAX);
            // Every link is up here, so assign always picks one.
            let j = assign(run.policy, c.i, run.order, &loads).unwrap_or(0);
            run.order += 1;
            run.cars.push((c.i, c.id.clone(), j));
        }
        runs.push(run);
    }
    runs
}

fn nft_ruleset(cars: &[Car], ncarriers: usize, runs: &[BalancerRun]) -> String {
    let mut pre = String::new();
    let mut post = String::new();
    let mut fwd = String::new();
    let mut chains = String::new();
    for c in cars {
        if let Via::Proxy(_) = c.via {
            pre.push_str(&format!(
                "    iifname \"lan{}\" ip daddr {} tcp dport {} redirect to :{}\n",
                c.i,
                railpath_linkem::testbed::SERVER_ADDR,
                c.port,
                PROXY_BASE_PORT + c.i as u16
            ));
        }
    }
    if !runs.is_empty() {
        for k in 0..ncarriers {
            post.push_str(&format!(
                "    ip saddr 10.99.0.0/16 oifname \"car{k}\" masquerade\n"
            ));
            // The carrier a connection was opened on, kept in its conntrack entry.
            fwd.push_str(&format!(
                "    ct state new oifname \"car{k}\" ct mark set {}\n",
                k + 1
            ));
        }
        for r in runs {
            for (i, _, _) in &r.cars {
                fwd.push_str(&format!("    iifname \"lan{i}\" jump lb_car{i}\n"));
                chains.push_str(&format!("  chain lb_car{i} {{\n  }}\n"));
            }
        }
    }
    format!(
        "table ip {NFT_TABLE} {{\n  chain prerouting {{\n    type nat hook prerouting priority dstnat; policy accept;\n{pre}  }}\n  chain postrouting {{\n    type nat hook postrouting priority srcnat; policy accept;\n{post}  }}\n  chain forward {{\n    type filter hook forward priority filter; policy accept;\n{fwd}  }}\n{chains}}}\n"
    )
}

fn nft(ns: &str, text: &str, work: &Path, name: &str) -> Result<(), TestbedError> {
    let p = work.join(name);
    std::fs::write(&p, text).map_err(|e| failed(format!("cannot write {}: {e}", p.display())))?;
    let out = std::process::Command::new("ip")
        .args(["netns", "exec", ns, "nft", "-f"])
        .arg(&p)
        .output()
        .map_err(|e| failed(format!("cannot run nft: {e}")))?;
    if !out.status.success() {
        return Err(failed(format!(
            "nft -f {}: {}",
            p.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Run the cars of `s` on a fresh namespace testbed; `work` receives the router's nftables rules
/// and `cars.json` (the record). Errors in the scenario are [`TestbedError::Scenario`] naming
/// the key.
pub fn run(s: &Resolved, work: &Path) -> Result<CarsRun, TestbedError> {
    let wall = Instant::now();
    let (cars, mut notes) = plan(s)?;
    railpath_linkem::check_environment()?;
    std::fs::create_dir_all(work)
        .map_err(|e| failed(format!("cannot create {}: {e}", work.display())))?;
    let carrier_idx = carriers(s);
    let all = LinkConfig::all(s)?;
    let links: Vec<LinkConfig> = carrier_idx.iter().map(|&j| all[j].clone()).collect();
    let carrier_ids: Vec<String> = links.iter().map(|l| l.id.clone()).collect();
    let carrier_of = |id: &str| carrier_ids.iter().position(|c| c == id).unwrap_or(0);
    for f in &s.flows {
        if let Some(a) = access_of(f).map(|a| &s.links[a].link) {
            if a.rate_mbps.is_some_and(|r| r < 1000.0) || a.delay_ms > 1.0 || a.loss > 0.0 {
                notes.push(format!(
                    "{}: access link {:?} is the client's veth, not emulated (its rate, delay and loss are not applied)",
                    f.id, a.id
                ));
            }
        }
    }
    let proxied: Vec<&Car> = cars
        .iter()
        .filter(|c| matches!(c.via, Via::Proxy(_)))
        .collect();
    let runs = initial_assignment(s, &cars, &carrier_of);
    let spec = TestbedSpec {
        links,
        clients: cars.len(),
        mptcp_endpoints: !proxied.is_empty(),
        emu: railpath_linkem::EmuOptions {
            seed: s.run.seed,
            bin: Time::from_ms_f64(s.run.bin_ms),
            pcap: railpath_capture::CaptureOptions::of_resolved(s),
            ..railpath_linkem::EmuOptions::default()
        },
    };
    let bin = Duration::from_nanos(spec.emu.bin.ns());
    let duration = Duration::from_nanos(Time::from_secs_f64(s.run.duration_s).ns());
    let nbins = ((s.run.duration_s * 1000.0 / s.run.bin_ms).round() as usize).max(1);
    let tb = Testbed::new(&spec)?;
    let rtr = tb.router_ns().to_string();
    let srv = tb.server_ns().to_string();
    // Buffer autotuning limits of the scenario's [tcp] on every host (the clients receive).
    let t = &s.tcp;
    let triple = |v: [u64; 3]| format!("{} {} {}", v[0], v[1], v[2]);
    let mut hosts = vec![rtr.clone(), srv.clone()];
    hosts.extend((0..cars.len()).filter_map(|i| tb.client_ns(i).map(str::to_string)));
    for ns in &hosts {
        tb.sysctl(ns, "net.ipv4.tcp_rmem", &triple(t.rmem_bytes))?;
        tb.sysctl(ns, "net.ipv4.tcp_wmem", &triple(t.wmem_bytes))?;
    }
    if let Some(c) = proxied.first() {
        // The first path carries the initial subflow: the router's default route.
        let first = c
            .paths
            .first()
            .ok_or_else(|| input(s, format!("flow \"{}\".paths", c.id), "expected a carrier"))?;
        let first = tb.link_dev(first)?;
        tb.exec(&rtr, "ip", &["route", "replace", "default", "dev", &first])?;
        for l in &carrier_ids {
            if !c.paths.contains(l) {
                let id = tb.endpoint_id(l)?.to_string();
                tb.exec(&rtr, "ip", &["mptcp", "endpoint", "delete", "id", &id])?;
            }
        }
    }
    nft(
        &rtr,
        &nft_ruleset(&cars, carrier_ids.len(), &runs),
        work,
        "router.nft",
    )?;
    for r in &runs {
        for (i, _, j) in &r.cars {
            let table = (200 + i).to_string();
            let dev = format!("car{}", r.links[*j].1);
            tb.exec(
                &rtr,
                "ip",
                &["route", "add", "default", "dev", &dev, "table", &table],
            )?;
            tb.exec(
                &rtr,
                "ip",
                &[
                    "rule",
                    "add",
                    "from",
                    &format!("10.99.{i}.0/24"),
                    "table",
                    &table,
                    "pref",
                    &(500 + i).to_string(),
                ],
            )?;
        }
    }
    // Server listeners (made inside the server namespace, used from plain threads).
    let mut listeners = Vec::new();
    for c in &cars {
        let proto = if c.server_mptcp {
            Protocol::MPTCP
        } else {
            Protocol::TCP
        };
        let port = c.port;
        let l = tb
            .run_in(&srv, || -> std::io::Result<Socket> {
                let l = Socket::new(Domain::IPV4, Type::STREAM, Some(proto))?;
                l.set_reuse_address(true)?;
                l.bind(&SockAddr::from(SocketAddrV4::new(
                    railpath_linkem::testbed::SERVER_ADDR,
                    port,
                )))?;
                l.listen(16)?;
                l.set_nonblocking(true)?;
                Ok(l)
            })?
            .map_err(|e| failed(format!("server socket on port {port}: {e}")))?;
        l.set_tcp_congestion(c.server_cc.as_bytes()).map_err(|e| {
            failed(format!(
                "TCP_CONGESTION {} on port {port}: {e}",
                c.server_cc
            ))
        })?;
        listeners.push(l);
    }
    let stop = Arc::new(AtomicBool::new(false));
    // The echo responder stops when this run ends, also on an early error.
    let _stop_guard = StopOnDrop(stop.clone());
    let echo = if runs.is_empty() {
        None
    } else {
        let sock = tb
            .run_in(&srv, || {
                UdpSocket::bind((railpath_linkem::testbed::SERVER_ADDR, ECHO_PORT))
            })?
            .map_err(|e| failed(format!("echo responder: {e}")))?;
        let stop = stop.clone();
        Some(std::thread::spawn(move || echo_responder(sock, &stop)))
    };
    let proxies = start_proxies(&tb, &proxied)?;
    let origin = tb.origin();
    let deadline = origin + duration;
    let tracker = if runs.is_empty() {
        None
    } else {
        let socks = (0..carrier_ids.len())
            .map(|k| {
                tb.run_in(&rtr, || -> std::io::Result<UdpSocket> {
                    let u = UdpSocket::bind((Ipv4Addr::new(10, 200, k as u8, 1), 0))?;
                    u.connect((railpath_linkem::testbed::SERVER_ADDR, ECHO_PORT))?;
                    u.set_nonblocking(true)?;
                    Ok(u)
                })?
                .map_err(|e| failed(format!("tracker socket on car{k}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let tr = Tracker {
            rtr: rtr.clone(),
            work: work.to_path_buf(),
            runs: runs.clone(),
            origin,
            deadline,
        };
        Some(std::thread::spawn(move || tr.run(socks)))
    };
    let mut clients = Vec::new();
    for c in &cars {
        let ns = tb
            .client_ns(c.i)
            .ok_or_else(|| failed(format!("no client namespace {}", c.i)))?;
        let (port, start) = (c.port, origin + c.start);
        let h = railpath_linkem::netns::spawn_in(ns, &format!("car{}", c.i), move || {
            car_client(port, origin, start, deadline, bin, nbins)
        })?;
        clients.push(h);
    }
    std::thread::scope(|sc| {
        for (c, l) in cars.iter().zip(listeners) {
            let port = c.port;
            sc.spawn(move || serve(port, l, deadline));
        }
    });
    let client_results: Vec<ClientResult> = clients
        .into_iter()
        .map(|h| {
            h.join().unwrap_or_else(|_| ClientResult {
                errors: vec!["client thread panicked".into()],
                ..ClientResult::default()
            })
        })
        .collect();
    let mut record = CarsRecord::default();
    if let Some(h) = tracker {
        let (failovers, down) = h
            .join()
            .map_err(|_| failed("the balancer's tracker panicked".into()))?;
        record.failovers = failovers;
        record.carriers_down = down;
    }
    stop.store(true, Ordering::SeqCst);
    if let Some(h) = echo {
        let _ = h.join();
    }
    let transports = proxies.stop();
    let report = tb.finish()?;
    if crate::plain::interrupted() {
        return Err(failed(format!("testbed: {}", TestbedError::Interrupted)));
    }
    let initial = runs;
    let bin_s = s.run.bin_ms / 1000.0;
    let mut flows = Vec::new();
    let mut series = Vec::new();
    let mut carrier_series = Vec::new();
    for (c, r) in cars.iter().zip(&client_results) {
        let gp: Vec<f64> = r.per_bin.iter().map(|&b| b as f64 * 8.0 / bin_s).collect();
        let active_s = (s.run.duration_s - c.start_s).max(1e-9);
        let paths: Vec<_> = report
            .paths
            .iter()
            .filter(|p| p.server_port == c.port)
            .collect();
        let mut carrier_bytes = BTreeMap::new();
        for l in &carrier_ids {
            let b: u64 = paths
                .iter()
                .filter(|p| &p.link == l)
                .map(|p| p.delivered_bytes)
                .sum();
            let mut v = vec![0.0; nbins];
            for p in paths.iter().filter(|p| &p.link == l) {
                for (k, x) in p.delivered_bytes_per_bin.iter().enumerate().take(nbins) {
                    v[k] += *x as f64 * 8.0 / bin_s;
                }
            }
            let mine = c.paths.contains(l);
            if mine || b > 0 {
                carrier_bytes.insert(l.clone(), b);
                carrier_series.push(Series {
                    flow: c.id.clone(),
                    subflow: l.clone(),
                    metric: "goodput_bps",
                    values: v,
                });
            }
        }
        let used: Vec<&String> = carrier_bytes
            .iter()
            .filter(|(_, b)| **b > 0)
            .map(|(l, _)| l)
            .collect();
        let outage_starts: Vec<f64> = report
            .events
            .iter()
            .filter(|e| {
                matches!(e.kind, LinkEventKind::OutageStart { .. }) && used.contains(&&e.link)
            })
            .map(|e| e.t.secs_f64())
            .collect();
        let mptcp = matches!(c.via, Via::Proxy(_));
        flows.push(FlowSummary {
            id: c.id.clone(),
            kind: c.kind.to_string(),
            cc: c.summary_cc.clone(),
            scheduler: mptcp.then(|| "linux-default".to_string()),
            mechanisms: Vec::new(),
            goodput_bps: r.total as f64 * 8.0 / active_s,
            delivered_bytes: r.total,
            sent_packets: paths.iter().map(|p| p.sent_packets).sum(),
            retransmitted_packets: paths.iter().map(|p| p.retransmitted_packets).sum(),
            rto_count: 0,
            handover_goodput_bps: around_outages(&gp, bin_s, &outage_starts),
            fct_s: None,
            srtt_ms: None,
            rto_ms: None,
            subflows: mptcp.then(|| {
                c.paths
                    .iter()
                    .map(|l| {
                        let ps: Vec<_> = paths.iter().filter(|p| &p.link == l).collect();
                        SubflowSummary {
                            id: l.clone(),
                            link: l.clone(),
                            goodput_bps: ps.iter().map(|p| p.delivered_bytes).sum::<u64>() as f64
                                * 8.0
                                / active_s,
                            sent_packets: ps.iter().map(|p| p.sent_packets).sum(),
                            retransmitted_packets: ps.iter().map(|p| p.retransmitted_packets).sum(),
                        }
                    })
                    .collect()
            }),
            receive_buffer: None,
            send_buffer: None,
            send_buffer_held: None,
            reorder_delay_ms: None,
            pha: None,
            handoffs: None,
            bloat: None,
            udp: None,
            // Filled in below, once the car's record is known.
            car: None,
        });
        let mut v = gp;
        v.resize(nbins, 0.0);
        series.push(Series {
            flow: c.id.clone(),
            subflow: String::new(),
            metric: "goodput_bps",
            values: v,
        });
        let (via, carrier) = match &c.via {
            Via::Proxy(_) => ("proxy".to_string(), None),
            Via::Balancer(b) => {
                let run = &initial[*b];
                let first = run
                    .cars
                    .iter()
                    .find(|x| x.0 == c.i)
                    .map(|x| run.links[x.2].0.clone());
                (format!("balancer {}", run.id), first)
            }
        };
        let fallback = transports
            .get(&c.i)
            .is_some_and(|t| !t.is_empty() && t.iter().all(|x| x == "fallback"));
        if let Some(last) = flows.last_mut() {
            last.car = Some(railpath_sim::results::CarStats {
                access: Some(c.access.clone()),
                balancer: match &c.via {
                    Via::Balancer(b) => Some(s.balancers[*b].id.clone()),
                    Via::Proxy(_) => None,
                },
                carrier: carrier.clone(),
                failovers: record
                    .failovers
                    .iter()
                    .filter(|x| x.car == c.id)
                    .map(|x| railpath_sim::results::CarFailover {
                        t_s: x.t_s,
                        from: x.from.clone(),
                        to: x.to.clone(),
                    })
                    .collect(),
                proxy: match &c.via {
                    Via::Proxy(p) => Some(railpath_sim::results::ProxyStats {
                        fallback,
                        buffer_bytes: p.buffer_bytes(),
                        ..Default::default()
                    }),
                    Via::Balancer(_) => None,
                },
            });
        }
        record.cars.push(CarRecord {
            id: c.id.clone(),
            via,
            carrier,
            transport: transports.get(&c.i).cloned().unwrap_or_default(),
            connects_s: r.connects_s.clone(),
            carrier_bytes,
            delivered_bytes: r.total,
            errors: r.errors.clone(),
        });
    }
    // Every car's goodput, then each car's per carrier, then the links' queues.
    series.extend(carrier_series);
    series.extend(link_series(&report, nbins));
    record.notes = notes;
    let note = note_line(&record);
    let results = RunResults {
        summary: Summary {
            format: railpath_sim::results::SUMMARY_FORMAT.to_string(),
            railpath_version: railpath_sim::VERSION.to_string(),
            scenario: s.source.clone(),
            seed: s.run.seed,
            sim_duration_s: s.run.duration_s,
            wall_s: wall.elapsed().as_secs_f64(),
            events: report
                .links
                .iter()
                .map(|l| l.data.arrived_packets + l.reverse.arrived_packets)
                .sum(),
            flows,
            links: link_summaries(&report, nbins),
            handovers: Vec::new(),
            bonds: Vec::new(),
        },
        bin_s,
        series,
    };
    let mut json = serde_json::to_string_pretty(&record)
        .map_err(|e| failed(format!("cannot serialise the cars record: {e}")))?;
    json.push('\n');
    let p = work.join("cars.json");
    std::fs::write(&p, json).map_err(|e| failed(format!("cannot write {}: {e}", p.display())))?;
    Ok(CarsRun {
        results,
        report,
        record,
        note,
    })
}

/// Until `deadline`, unless the run was interrupted (Ctrl-C: `crate::plain::interrupt`).
fn live(deadline: Instant) -> bool {
    Instant::now() < deadline && !crate::plain::interrupted()
}

/// Sets its flag when dropped.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// One line: what ran for each car, the failovers, what the kernel did differently.
pub fn note_line(r: &CarsRecord) -> String {
    let mut parts: Vec<String> = r
        .cars
        .iter()
        .map(|c| match &c.carrier {
            Some(l) => format!("{} {} -> {l}", c.id, c.via),
            None => {
                let mut t = c.transport.clone();
                t.dedup();
                format!(
                    "{} proxy ({})",
                    c.id,
                    if t.is_empty() {
                        "no connection".to_string()
                    } else {
                        t.join(", ")
                    }
                )
            }
        })
        .collect();
    let mut text = parts.join("; ");
    parts.clear();
    if r.failovers.is_empty() {
        text.push_str("; no failover");
    } else {
        for f in &r.failovers {
            parts.push(format!(
                "{} {} -> {} at {:.2} s",
                f.car, f.from, f.to, f.t_s
            ));
        }
        text.push_str(&format!("; failovers: {}", parts.join(", ")));
    }
    if !r.notes.is_empty() {
        text.push_str(&format!("; {}", r.notes.join("; ")));
    }
    text
}

/// The UDP echo responder of the tracker's probes (server namespace).
fn echo_responder(sock: UdpSocket, stop: &AtomicBool) {
    let _ = sock.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = [0u8; 64];
    while !stop.load(Ordering::SeqCst) {
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            let _ = sock.send_to(&buf[..n], from);
        }
    }
}

struct Tracker {
    rtr: String,
    work: std::path::PathBuf,
    runs: Vec<BalancerRun>,
    origin: Instant,
    deadline: Instant,
}

type TrackerOut = (Vec<FailoverRecord>, Vec<(String, f64)>);

impl Tracker {
    /// Probe every carrier until the deadline; move the cars off a carrier that is down.
    fn run(mut self, socks: Vec<UdpSocket>) -> TrackerOut {
        let shortest = self
            .runs
            .iter()
            .map(|r| r.detect.as_secs_f64() * 1000.0 / 4.0)
            .fold(PROBE_MS, f64::min)
            .max(10.0);
        let every = Duration::from_secs_f64(shortest / 1000.0);
        // A carrier is up until it has missed replies for detect_ms from the first probe.
        let mut last = vec![Instant::now(); socks.len()];
        let mut was_up: Vec<Vec<bool>> = self
            .runs
            .iter()
            .map(|r| vec![true; r.links.len()])
            .collect();
        let mut failovers = Vec::new();
        let mut down_log = Vec::new();
        let mut seq: u64 = 0;
        let mut buf = [0u8; 64];
        let mut next = Instant::now();
        while live(self.deadline) {
            for s in &socks {
                let _ = s.send(&seq.to_be_bytes());
            }
            seq += 1;
            next += every;
            while Instant::now() < next {
                for (k, s) in socks.iter().enumerate() {
                    while s.recv(&mut buf).is_ok() {
                        last[k] = Instant::now();
                    }
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            let now = Instant::now();
            let t = now.duration_since(self.origin).as_secs_f64();
            for (bi, run) in self.runs.iter_mut().enumerate() {
                let up: Vec<bool> = run
                    .links
                    .iter()
                    .map(|l| now.duration_since(last[l.1]) <= run.detect)
                    .collect();
                for j in 0..up.len() {
                    if was_up[bi][j] && !up[j] {
                        down_log.push((run.links[j].0.clone(), t));
                        let on_it: Vec<usize> = run
                            .cars
                            .iter()
                            .enumerate()
                            .filter(|(_, c)| c.2 == j)
                            .map(|(n, _)| n)
                            .collect();
                        for n in on_it {
                            let car = run.cars[n].0;
                            let loads = run.loads(&up, car);
                            let Some(to) = assign(run.policy, car, run.order, &loads) else {
                                continue;
                            };
                            run.order += 1;
                            run.cars[n].2 = to;
                            let (from_id, to_id) =
                                (run.links[j].0.clone(), run.links[to].0.clone());
                            match move_car(&self.rtr, &self.work, car, run.links[to].1) {
                                Ok(()) => eprintln!(
                                    "testbed: t = {t:.2} s: balancer {}: {from_id} down, car {} moved to {to_id}",
                                    run.id, run.cars[n].1
                                ),
                                Err(e) => eprintln!("testbed: moving car {car}: {e}"),
                            }
                            failovers.push(FailoverRecord {
                                t_s: t,
                                balancer: run.id.clone(),
                                car: run.cars[n].1.clone(),
                                from: from_id,
                                to: to_id,
                            });
                        }
                    }
                }
                was_up[bi] = up;
            }
        }
        (failovers, down_log)
    }
}

/// Move car `i` to carrier `k`: its table's default route, and a reset for its connections
/// opened on any other carrier (their conntrack entries carry the carrier's mark, k + 1).
fn move_car(rtr: &str, work: &Path, i: usize, k: usize) -> Result<(), TestbedError> {
    let text = format!(
        "flush chain ip {NFT_TABLE} lb_car{i}\nadd rule ip {NFT_TABLE} lb_car{i} ct mark != {} tcp flags & rst == 0 reject with tcp reset\n",
        k + 1
    );
    nft(rtr, &text, work, &format!("move-car{i}.nft"))?;
    let table = (200 + i).to_string();
    let out = std::process::Command::new("ip")
        .args(["-n", rtr, "route", "replace", "default", "dev"])
        .arg(format!("car{k}"))
        .args(["table", &table])
        .output()
        .map_err(|e| failed(format!("cannot run ip: {e}")))?;
    if !out.status.success() {
        return Err(failed(format!(
            "ip route replace (table {table}): {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// The proxies of the proxied cars, in the router namespace.
struct Proxies {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<BTreeMap<usize, Vec<String>>>>,
}

impl Proxies {
    /// Stop the proxies; per car, how its onward connections ran.
    fn stop(mut self) -> BTreeMap<usize, Vec<String>> {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Proxies {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn start_proxies(tb: &Testbed, cars: &[&Car]) -> Result<Proxies, TestbedError> {
    use railpath_gateway::config::{ProxyConfig, ProxyMode};
    use railpath_gateway::metrics::Metrics;
    if cars.is_empty() {
        return Ok(Proxies {
            stop: None,
            thread: None,
        });
    }
    let cfgs: Vec<(usize, ProxyConfig, String)> = cars
        .iter()
        .map(|c| {
            let o = match &c.via {
                Via::Proxy(o) => o.clone(),
                Via::Balancer(_) => ProxyOptions::default(),
            };
            let cfg = ProxyConfig {
                mode: ProxyMode::Train,
                listen: std::net::SocketAddr::from(([0, 0, 0, 0], PROXY_BASE_PORT + c.i as u16)),
                upstream: None,
                mptcp: true,
                max_connections: 64,
                idle_timeout_s: 3600.0,
                connect_timeout_s: 10.0,
                buffer_bytes: o.buffer_bytes().min(usize::MAX as u64) as usize,
            };
            (c.i, cfg, o.access_cc().to_string())
        })
        .collect();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), String>>();
    let thread = railpath_linkem::netns::spawn_in(tb.router_ns(), "car-proxies", move || {
        let mut out: BTreeMap<usize, Vec<String>> = BTreeMap::new();
        let rt = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                let _ = ready_tx.send(Err(format!("tokio runtime: {e}")));
                return out;
            }
        };
        let metrics: Vec<(usize, Arc<Metrics>)> = rt.block_on(async {
            let mut metrics = Vec::new();
            for (i, cfg, cc) in cfgs {
                let l = match railpath_gateway::proxy::bind(&cfg) {
                    Ok(l) => l,
                    Err(e) => {
                        let _ = ready_tx.send(Err(format!("proxy of car {i}: {e}")));
                        return metrics;
                    }
                };
                // Accepted connections inherit the listener's congestion control.
                if let Err(e) = socket2::SockRef::from(&l).set_tcp_congestion(cc.as_bytes()) {
                    let _ = ready_tx.send(Err(format!("proxy of car {i}: access_cc {cc}: {e}")));
                    return metrics;
                }
                let m = Metrics::new(&[]);
                metrics.push((i, m.clone()));
                tokio::spawn(railpath_gateway::proxy::run(
                    l,
                    cfg,
                    m,
                    std::future::pending::<()>(),
                ));
            }
            let _ = ready_tx.send(Ok(()));
            let _ = stop_rx.await;
            metrics
        });
        for (i, m) in metrics {
            use std::sync::atomic::Ordering::Relaxed;
            let mut t = Vec::new();
            for (name, n) in [
                ("mptcp", m.conn_mptcp.load(Relaxed)),
                ("fallback", m.conn_fallback.load(Relaxed)),
                ("tcp", m.conn_plain.load(Relaxed)),
                ("failed", m.conn_failed.load(Relaxed)),
            ] {
                t.extend(std::iter::repeat_n(name.to_string(), n as usize));
            }
            out.insert(i, t);
        }
        out
    })?;
    let p = Proxies {
        stop: Some(stop_tx),
        thread: Some(thread),
    };
    match ready_rx.recv() {
        Ok(Ok(())) => Ok(p),
        Ok(Err(e)) => Err(failed(format!("testbed: {e}"))),
        Err(_) => Err(failed("testbed: the proxies' thread died".into())),
    }
}

#[derive(Default)]
struct ClientResult {
    per_bin: Vec<u64>,
    total: u64,
    connects_s: Vec<f64>,
    errors: Vec<String>,
}

/// A car's passenger application (in its client namespace): connect at `start`, read and count
/// until `deadline`, reconnect when the connection breaks.
fn car_client(
    port: u16,
    origin: Instant,
    start: Instant,
    deadline: Instant,
    bin: Duration,
    nbins: usize,
) -> ClientResult {
    let mut r = ClientResult {
        per_bin: vec![0; nbins],
        ..ClientResult::default()
    };
    let err = |r: &mut ClientResult, e: String| {
        if r.errors.len() < 10 {
            r.errors.push(e);
        }
    };
    while Instant::now() < start && !crate::plain::interrupted() {
        std::thread::sleep((start - Instant::now()).min(Duration::from_millis(20)));
    }
    let to = SockAddr::from(SocketAddrV4::new(
        railpath_linkem::testbed::SERVER_ADDR,
        port,
    ));
    let mut buf = vec![0u8; 256 * 1024];
    while live(deadline) {
        let c = match Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP)) {
            Ok(c) => c,
            Err(e) => {
                err(&mut r, format!("socket: {e}"));
                return r;
            }
        };
        let ka = TcpKeepalive::new()
            .with_time(Duration::from_secs(1))
            .with_interval(Duration::from_secs(1))
            .with_retries(120);
        let _ = c.set_tcp_keepalive(&ka);
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .min(Duration::from_secs(3))
            .max(Duration::from_millis(1));
        let t = origin.elapsed().as_secs_f64();
        if let Err(e) = c.connect_timeout(&to, wait) {
            err(&mut r, format!("t = {t:.2} s: connect: {e}"));
            std::thread::sleep(Duration::from_millis(100));
            continue;
        }
        r.connects_s.push(t);
        let _ = c.set_read_timeout(Some(Duration::from_millis(20)));
        while live(deadline) {
            match (&c).read(&mut buf) {
                Ok(0) => {
                    err(
                        &mut r,
                        format!(
                            "t = {:.2} s: closed by the server",
                            origin.elapsed().as_secs_f64()
                        ),
                    );
                    break;
                }
                Ok(n) => {
                    let b = (origin.elapsed().as_nanos() / bin.as_nanos().max(1)) as usize;
                    if b < r.per_bin.len() {
                        r.per_bin[b] += n as u64;
                        r.total += n as u64;
                    }
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    err(
                        &mut r,
                        format!("t = {:.2} s: read: {e}", origin.elapsed().as_secs_f64()),
                    );
                    break;
                }
            }
        }
    }
    r
}

/// A car's server: accept every connection on `l` and write to each until it breaks or the
/// deadline.
fn serve(port: u16, l: Socket, deadline: Instant) {
    std::thread::scope(|sc| {
        while live(deadline) {
            match l.accept() {
                Ok((conn, _)) => {
                    sc.spawn(move || {
                        let _ = conn.set_nonblocking(false);
                        let _ = conn.set_write_timeout(Some(Duration::from_millis(50)));
                        let buf = vec![0u8; 64 * 1024];
                        while live(deadline) {
                            match (&conn).write(&buf) {
                                Ok(_) => {}
                                Err(e)
                                    if e.kind() == std::io::ErrorKind::WouldBlock
                                        || e.kind() == std::io::ErrorKind::TimedOut
                                        || e.kind() == std::io::ErrorKind::Interrupted => {}
                                Err(_) => break,
                            }
                        }
                    });
                }
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::Interrupted =>
                {
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(e) => {
                    eprintln!("testbed: accept on port {port}: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(name: &str) -> railpath_scenario::Scenario {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../scenarios/proxy-lb")
            .join(name);
        railpath_scenario::load(&p, &[]).expect("scenario loads")
    }

    fn resolve(s: &railpath_scenario::Scenario) -> Resolved {
        s.validate().expect("valid")
    }

    fn refused(s: &railpath_scenario::Scenario) -> String {
        match plan(&resolve(s)) {
            Err(TestbedError::Scenario(e)) => e.to_string(),
            other => panic!("{:?}", other.err()),
        }
    }

    #[test]
    fn carriers_are_the_links_no_car_has_as_access() {
        let s = resolve(&load("lb.toml"));
        let c: Vec<&str> = carriers(&s).into_iter().map(|j| s.links[j].id()).collect();
        assert_eq!(c, vec!["isp-a", "isp-b"]);
        assert!(has_cars(&s));
    }

    #[test]
    fn round_robin_gives_the_cars_the_carriers_in_turn() {
        let s = resolve(&load("lb.toml"));
        let (cars, _) = plan(&s).unwrap();
        let ids = ["isp-a".to_string(), "isp-b".to_string()];
        let of = |id: &str| ids.iter().position(|c| c == id).unwrap();
        let runs = initial_assignment(&s, &cars, &of);
        let got: Vec<usize> = runs[0].cars.iter().map(|c| c.2).collect();
        assert_eq!(got, vec![0, 1, 0, 1, 0]);
        let rules = nft_ruleset(&cars, 2, &runs);
        assert!(rules.contains("oifname \"car1\" masquerade"), "{rules}");
        assert!(!rules.contains("redirect"), "{rules}");
    }

    #[test]
    fn proxied_cars_are_redirected_to_their_proxy() {
        let s = resolve(&load("mptcp.toml"));
        let (cars, notes) = plan(&s).unwrap();
        assert_eq!(cars.len(), 5);
        assert!(cars.iter().all(|c| c.server_mptcp));
        assert!(notes.iter().any(|n| n.contains("minrtt")), "{notes:?}");
        let rules = nft_ruleset(&cars, 2, &[]);
        assert!(
            rules.contains("iifname \"lan1\" ip daddr 10.201.0.1 tcp dport 5202 redirect to :3201"),
            "{rules}"
        );
        assert!(!rules.contains("masquerade"), "{rules}");
    }

    #[test]
    fn refusals_name_the_key() {
        let mut s = load("lb.toml");
        s.balancers[0].failover = Failover::KeepAddress;
        let m = refused(&s);
        assert!(m.contains("balancer[0].failover"), "{m}");
        let mut s = load("lb.toml");
        s.flows[1].access = None;
        let m = refused(&s);
        assert!(m.contains("flow \"car2\".access"), "{m}");
        let mut s = load("mptcp.toml");
        s.flows[1].paths = vec!["isp-b".into(), "isp-a".into()];
        let m = refused(&s);
        assert!(m.contains("flow \"car2\".paths"), "{m}");
    }
}
