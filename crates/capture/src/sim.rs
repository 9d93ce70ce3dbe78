//! The simulator's packet capture (`railpath run --pcap DIR`): a [`PacketTap`] that writes every
//! packet crossing either end of every link as the frame a capture point on that wire would
//! see, streamed to disk as it comes (nothing is held but each connection's state).
//!
//! What it writes (docs/models/capture.md):
//! - per end of the links (`sender`: where the data direction enters a link and the reverse
//!   leaves it; `receiver`: the other end) one pcapng file with one interface per link named
//!   `<link>.<end>`, or with `format = "pcap"` one file per link and end;
//! - Ethernet II / IPv4 / TCP frames with the testbed's addresses ([`crate::addr`]), byte
//!   sequence numbers (the simulator counts segments: every connection keeps the lengths of the
//!   segments that are not a full MSS, a finite transfer's last and a relay's shorter ones, so
//!   that segment k starts at the sum of the lengths before it), the receive window scaled by
//!   the window scale the handshake announced, timestamps (TSval = the sender's clock in ms
//!   plus a per-connection offset, as Linux), SACK blocks as many as the option space leaves,
//!   and for MPTCP a DSS option on every segment (64-bit data ACK; data: 64-bit DSN, relative
//!   subflow sequence number, data-level length) and MP_PRIO where the simulator sends one;
//!   UDP datagrams for udp flows;
//! - the handshakes the simulator does not model (its connections exist from the start): a
//!   connection's SYN, SYN/ACK and ACK are written at the instant of its first packet on a
//!   link, with MP_CAPABLE (version 1, keys) on an MPTCP connection's first subflow and MP_JOIN
//!   (token, nonces, HMACs) on the others, every subflow of the connection at once. Keys,
//!   nonces, initial sequence numbers and timestamp offsets are derived from the scenario's
//!   seed and the flow's id (SHA-256), so a capture is reproducible; they are the capture's,
//!   not the simulator's.

use crate::addr;
use crate::file::{CaptureWriter, Format, Interface};
use crate::frame::{FrameBuilder, Host, Options, TcpFields};
use crate::mptcp::{self, Dss, Mapping, MptcpOption};
use crate::End;
use etherparse::TcpOptionElement as E;
use railpath_core::Time;
use railpath_scenario::{Capture, FlowKind, PathTarget, Resolved, TcpRoute, Transport};
use railpath_sim::net::packet::{flags, unwrap_seg, Kind, Packet};
use railpath_sim::net::{Endpoint, Side};
use railpath_sim::{PacketTap, RunResults, SimError};
use sha2::{Digest, Sha256};
use std::cell::RefCell;
use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::rc::Rc;

/// The endpoint number of a relay's onward leg (crates/sim/src/cars.rs `ACCESS_SUB`).
const ACCESS_SUB: u16 = 0x8000;

/// Where and how to capture.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureOptions {
    pub dir: PathBuf,
    pub format: Format,
    /// Bytes kept of each frame; 0 keeps whole frames.
    pub snaplen: u32,
}

impl CaptureOptions {
    /// Default snap length: every header (14 + 20 + 60) with room to spare, no payload.
    pub const DEFAULT_SNAPLEN: u32 = 128;

    /// The scenario's `[capture]` as it stands (its `dir` relative to the working directory; a
    /// caller that runs the scenario resolves it first, see [`CaptureOptions::for_run`]).
    pub fn of_resolved(s: &Resolved) -> Option<Self> {
        s.capture.as_ref().map(|c| CaptureOptions {
            dir: PathBuf::from(c.dir()),
            format: c.format().into(),
            snaplen: c.snaplen_bytes(),
        })
    }

    /// The capture a run asks for: `dir` (a `--pcap DIR` argument) or the scenario's
    /// `[capture]` (its `dir` relative to the run's output directory `out`); `None` for neither.
    /// The format and snap length are the scenario's (or the defaults).
    pub fn for_run(
        capture: Option<&Capture>,
        out: &std::path::Path,
        dir: Option<PathBuf>,
    ) -> Option<Self> {
        let c = capture.cloned();
        let dir = dir.or_else(|| c.as_ref().map(|c| out.join(c.dir())))?;
        let c = c.unwrap_or_default();
        Some(CaptureOptions {
            dir,
            format: c.format().into(),
            snaplen: c.snaplen_bytes(),
        })
    }
}

/// The files a capture wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct CaptureReport {
    /// Each file and the packets in it.
    pub files: Vec<(PathBuf, u64)>,
}

/// A run with a capture that failed.
#[derive(Debug)]
pub enum CaptureRunError {
    Sim(SimError),
    /// Writing the capture failed (the run itself completed).
    Capture(String),
}

impl std::fmt::Display for CaptureRunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureRunError::Sim(e) => write!(f, "{e}"),
            CaptureRunError::Capture(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CaptureRunError {}

/// Run `s` (as [`railpath_sim::run_with_progress`]) writing its capture into `opts.dir`.
pub fn run_with_capture(
    s: &Resolved,
    progress: &mut dyn FnMut(f64),
    opts: &CaptureOptions,
) -> Result<(RunResults, CaptureReport), CaptureRunError> {
    let cap = SimCapture::new(s, opts).map_err(CaptureRunError::Capture)?;
    let shared = Rc::new(RefCell::new(cap));
    let tap = Box::new(Tap(shared.clone()));
    let results = railpath_sim::run_with_tap(s, progress, tap).map_err(CaptureRunError::Sim)?;
    let cap = Rc::try_unwrap(shared)
        .map_err(|_| CaptureRunError::Capture("the capture is still in use".into()))?
        .into_inner();
    let report = cap.finish().map_err(CaptureRunError::Capture)?;
    Ok((results, report))
}

struct Tap(Rc<RefCell<SimCapture>>);

impl PacketTap for Tap {
    fn enter(&mut self, now: Time, dir: u32, to: Endpoint, p: &Packet) {
        self.0.borrow_mut().packet(now, dir, to, p, true);
    }
    fn leave(&mut self, now: Time, dir: u32, to: Endpoint, p: &Packet) {
        self.0.borrow_mut().packet(now, dir, to, p, false);
    }
}

/// The bytes before each segment of a stream counted in segments: every segment a full `mss`
/// but those noted otherwise.
#[derive(Debug, Clone)]
pub(crate) struct SegMap {
    mss: u64,
    /// (segment, sum over noted segments up to and including it of (length - mss)).
    ex: Vec<(u64, i64)>,
}

impl SegMap {
    pub(crate) fn new(mss: u32) -> SegMap {
        SegMap {
            mss: mss as u64,
            ex: Vec::new(),
        }
    }
    /// Segment `seg` is `len` bytes long.
    pub(crate) fn note(&mut self, seg: u64, len: u32) {
        let d = len as i64 - self.mss as i64;
        if d == 0 {
            return;
        }
        let i = self.ex.partition_point(|e| e.0 < seg);
        if self.ex.get(i).is_some_and(|e| e.0 == seg) {
            return;
        }
        let before = if i == 0 { 0 } else { self.ex[i - 1].1 };
        self.ex.insert(i, (seg, before + d));
        for e in &mut self.ex[i + 1..] {
            e.1 += d;
        }
    }
    /// Bytes before segment `k`.
    pub(crate) fn offset(&self, k: u64) -> u64 {
        let i = self.ex.partition_point(|e| e.0 < k);
        let cum = if i == 0 { 0 } else { self.ex[i - 1].1 };
        ((k * self.mss) as i64 + cum) as u64
    }
}

/// A flow as the capture sees it.
struct FlowInfo {
    id: String,
    kind: FlowKind,
    /// The server side runs MPTCP (an mptcp flow, unless a proxy falls back to TCP).
    mptcp: bool,
    mss: u32,
    /// Per path: (link to write its handshake on, the train side's address, backup).
    paths: Vec<(usize, Ipv4Addr, bool)>,
    /// The in-car link and the car's number.
    access: Option<(usize, usize)>,
    /// A car's connection through a balancer: the address follows the link it is given.
    balanced: bool,
    wscale: u8,
    /// The window the server advertises (bytes).
    server_window: u64,
}

/// A flow's MPTCP connection: keys and the data-level sequence map.
struct Mp {
    key_s: u64,
    key_t: u64,
    idsn_s: u64,
    idsn_t: u64,
    dsn: SegMap,
    opened: bool,
}

/// One TCP connection (a subflow, a tcp flow, a relay's onward leg).
struct Conn {
    flow: usize,
    /// The subflow index of an MPTCP connection.
    mp_sub: Option<usize>,
    train_addr: Option<Ipv4Addr>,
    train_port: u16,
    isn_s: u32,
    isn_t: u32,
    ts_s: u32,
    ts_t: u32,
    segs: SegMap,
    /// The highest data segment seen, near which the packets' 32-bit segment numbers are
    /// unwrapped (`unwrap_seg`: they travel modulo 2^32).
    seg_hi: u64,
    /// Handshake written: [carrier view, in-car view].
    opened: [bool; 2],
}

/// The connections, found by (flow, endpoint number): one hash per packet at most, none for a
/// packet of the connection the last one belonged to.
#[derive(Default)]
struct Conns {
    list: Vec<Conn>,
    index: HashMap<(u32, u16), usize>,
    last: Option<((u32, u16), usize)>,
}

impl Conns {
    fn find(&mut self, key: (u32, u16)) -> Option<usize> {
        if let Some((k, i)) = self.last {
            if k == key {
                return Some(i);
            }
        }
        let i = *self.index.get(&key)?;
        self.last = Some((key, i));
        Some(i)
    }
    fn insert(&mut self, key: (u32, u16), c: Conn) -> usize {
        self.list.push(c);
        let i = self.list.len() - 1;
        self.index.insert(key, i);
        i
    }
}

struct SimCapture {
    writers: Vec<CaptureWriter>,
    format: Format,
    flows: Vec<FlowInfo>,
    mp: Vec<Option<Mp>>,
    conns: Conns,
    seed: u64,
    fb: FrameBuilder,
    opts: Options,
    error: Option<String>,
}

/// 8 bytes of SHA-256 over the parts: the capture's deterministic draws.
fn draw(seed: u64, parts: &[&str]) -> u64 {
    let mut h = Sha256::new();
    h.update(b"railpath-capture");
    h.update(seed.to_be_bytes());
    for p in parts {
        h.update((p.len() as u32).to_be_bytes());
        h.update(p.as_bytes());
    }
    let d: [u8; 32] = h.finalize().into();
    u64::from_be_bytes(d[..8].try_into().expect("8 bytes"))
}

/// The smallest window scale that fits `bytes` into 16 bits (RFC 7323 2.3: at most 14).
fn wscale_for(bytes: u64) -> u8 {
    let mut s = 0u8;
    while s < 14 && (bytes >> s) > 65_535 {
        s += 1;
    }
    s
}

/// The car number of a plain tcp car (a flow with an in-car link and no balancer): its place
/// among the scenario's cars, as the resolved routes number them.
fn car_of(s: &Resolved, f: &railpath_scenario::FlowSpec) -> usize {
    let mut n = 0;
    for g in &s.flows {
        if std::ptr::eq(g, f) {
            return n;
        }
        let is_car = match &g.transport {
            Transport::Tcp(t) => match &t.route {
                TcpRoute::Path { access, .. } => access.is_some(),
                TcpRoute::Balancer { .. } => true,
                TcpRoute::Handoffs(_) => false,
            },
            Transport::Mptcp(m) => m.proxy.is_some(),
            Transport::Udp(_) => false,
        };
        n += usize::from(is_car);
    }
    n
}

fn ms32(t: Time) -> u32 {
    (t.ns() / 1_000_000) as u32
}

impl SimCapture {
    fn new(s: &Resolved, o: &CaptureOptions) -> Result<SimCapture, String> {
        std::fs::create_dir_all(&o.dir)
            .map_err(|e| format!("cannot create {}: {e}", o.dir.display()))?;
        let links: Vec<String> = s.links.iter().map(|l| l.id().to_string()).collect();
        let app = format!(
            "railpath {} simulator: scenario {}, seed {}",
            railpath_sim::VERSION,
            s.source,
            s.run.seed
        );
        let describe = |l: &str, end: End| {
            Interface {
            name: crate::point_name(l, end),
            description: format!(
                "railpath simulator, link {l}: the data {}'s end (the data direction {}, the reverse {})",
                end.as_str(),
                if end == End::Sender { "enters" } else { "leaves" },
                if end == End::Sender { "leaves" } else { "enters" },
            ),
        }
        };
        let mut writers = Vec::new();
        let open = |path: PathBuf, ifs: &[Interface]| {
            CaptureWriter::create(&path, o.format, o.snaplen, ifs, &app)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))
        };
        match o.format {
            Format::Pcapng => {
                for end in [End::Sender, End::Receiver] {
                    let ifs: Vec<Interface> = links.iter().map(|l| describe(l, end)).collect();
                    writers.push(open(o.dir.join(format!("{}.pcapng", end.as_str())), &ifs)?);
                }
            }
            Format::Pcap => {
                for l in &links {
                    for end in [End::Sender, End::Receiver] {
                        let name = crate::point_name(l, end);
                        writers.push(open(
                            o.dir.join(format!("{name}.pcap")),
                            &[describe(l, end)],
                        )?);
                    }
                }
            }
        }
        let mut flows = Vec::new();
        let mut mp = Vec::new();
        for f in &s.flows {
            let tcp = f.tcp_config().unwrap_or(&s.tcp).clone();
            // Per path: the link its handshake is written on, the train side's address, backup.
            let on = |p: PathTarget, backup: bool| match p {
                PathTarget::Link(k) => (k, addr::router_addr(k), backup),
                PathTarget::Bond(b) => (
                    s.bonds[b].members.first().copied().unwrap_or(0),
                    addr::bond_addr(b),
                    backup,
                ),
            };
            let (kind, paths, access, balanced, mptcp, rbuf) = match &f.transport {
                Transport::Tcp(t) => {
                    let (paths, access, balanced) = match &t.route {
                        TcpRoute::Path { path, access } => (vec![on(*path, false)], *access, None),
                        TcpRoute::Handoffs(h) => (
                            h.links
                                .iter()
                                .map(|&k| on(PathTarget::Link(k), false))
                                .collect(),
                            None,
                            None,
                        ),
                        // A balancer: the link is known when the connection opens.
                        TcpRoute::Balancer { car, access, .. } => {
                            (vec![(0, addr::router_addr(0), false)], *access, Some(*car))
                        }
                    };
                    let car = balanced.or_else(|| access.map(|_| car_of(s, f)));
                    (
                        FlowKind::Tcp,
                        paths,
                        access.zip(car),
                        balanced.is_some(),
                        false,
                        0,
                    )
                }
                Transport::Mptcp(m) => {
                    let paths = m.subflows.iter().map(|sf| on(sf.path, sf.backup)).collect();
                    let access = m.proxy.as_ref().map(|p| (p.access, p.car));
                    let mptcp = m.proxy.as_ref().is_none_or(|p| p.options.server_mptcp());
                    let rbuf = m.receive_buffer_packets.unwrap_or(0);
                    (FlowKind::Mptcp, paths, access, false, mptcp, rbuf)
                }
                Transport::Udp(u) => (
                    FlowKind::Udp,
                    vec![on(u.path, false)],
                    None,
                    false,
                    false,
                    0,
                ),
            };
            let rcv_max = [
                tcp.receive_window_bytes,
                tcp.rmem_bytes[2],
                rbuf as u64 * tcp.mss_bytes as u64,
            ]
            .into_iter()
            .max()
            .unwrap_or(65_535);
            flows.push(FlowInfo {
                id: f.id.clone(),
                kind,
                mptcp,
                mss: tcp.mss_bytes,
                paths,
                access,
                balanced,
                wscale: wscale_for(rcv_max),
                server_window: tcp.rmem_bytes[1],
            });
            mp.push(mptcp.then(|| {
                let key_s = draw(s.run.seed, &[&f.id, "key", "server"]);
                let key_t = draw(s.run.seed, &[&f.id, "key", "train"]);
                Mp {
                    key_s,
                    key_t,
                    idsn_s: mptcp::idsn(key_s),
                    idsn_t: mptcp::idsn(key_t),
                    dsn: SegMap::new(tcp.mss_bytes),
                    opened: false,
                }
            }));
        }
        Ok(SimCapture {
            writers,
            format: o.format,

            flows,
            mp,
            conns: Conns::default(),
            seed: s.run.seed,
            fb: FrameBuilder::default(),
            opts: Options::default(),
            error: None,
        })
    }

    fn finish(self) -> Result<CaptureReport, String> {
        if let Some(e) = self.error {
            return Err(e);
        }
        let mut files = Vec::new();
        for w in self.writers {
            let path = w.path().to_path_buf();
            let n = w
                .finish()
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            files.push((path, n));
        }
        Ok(CaptureReport { files })
    }

    /// Write the frame in the builder's buffer to `link`'s `end`.
    fn emit(&mut self, link: usize, end: End, now: Time, frame: Result<(), String>) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = frame {
            self.error = Some(format!("capture: {e}"));
            return;
        }
        let (w, iface) = match self.format {
            Format::Pcapng => (end as usize, link as u32),
            Format::Pcap => (2 * link + end as usize, 0),
        };
        let data = self.fb.last();
        if let Err(e) = self.writers[w].write(iface, crate::wall_ns(now), data) {
            self.error = Some(format!(
                "cannot write {}: {e}",
                self.writers[w].path().display()
            ));
        }
    }

    fn packet(&mut self, now: Time, dir: u32, to: Endpoint, p: &Packet, entering: bool) {
        if self.error.is_some() || to.flow as usize >= self.flows.len() {
            return;
        }
        let link = (dir / 2) as usize;
        let reverse = dir % 2 == 1;
        let end = if reverse == entering {
            End::Receiver
        } else {
            End::Sender
        };
        let fi = to.flow as usize;
        if self.flows[fi].kind == FlowKind::Udp {
            self.udp(now, link, end, fi, p);
            return;
        }
        let view = self.flows[fi].access.is_some_and(|(a, _)| a == link) as usize;
        let key = (to.flow, to.sub);
        let ci = match self.conns.find(key) {
            Some(i) => i,
            None => self.open(fi, to.sub, link),
        };
        if !self.conns.list[ci].opened[view] {
            self.handshake(now, key, link, view);
        }
        let r = self.segment(fi, ci, to.side, link, view, now, p);
        self.emit(link, end, now, r);
    }

    fn udp(&mut self, now: Time, link: usize, end: End, fi: usize, p: &Packet) {
        let f = &self.flows[fi];
        let src = Host {
            mac: addr::mac(link, End::Sender),
            ip: addr::SERVER_ADDR,
            port: addr::server_port(fi),
        };
        let dst = Host {
            mac: addr::mac(link, End::Receiver),
            ip: f.paths.first().map_or(addr::router_addr(link), |p| p.1),
            port: addr::client_port(fi, 0),
        };
        let r = self
            .fb
            .udp(&src, &dst, p.len as usize)
            .map(|_| ())
            .map_err(|e| e.0);
        self.emit(link, end, now, r);
    }

    /// Connection `(flow, sub)` is first seen, on `link`; its index.
    fn open(&mut self, fi: usize, sub: u16, link: usize) -> usize {
        let f = &self.flows[fi];
        let mp_sub = (f.mptcp && sub != ACCESS_SUB && (sub as usize) < f.paths.len())
            .then_some(sub as usize);
        let on_access = f.access.is_some_and(|(a, _)| a == link);
        let train_addr = if sub == ACCESS_SUB {
            None
        } else if f.balanced {
            (!on_access).then(|| addr::router_addr(link))
        } else {
            let j = mp_sub.unwrap_or(0);
            f.paths.get(j).map(|p| p.1)
        };
        let tag = format!("{sub}");
        let d = |what: &str| draw(self.seed, &[&f.id, &tag, what]);
        let conn = Conn {
            flow: fi,
            mp_sub,
            train_addr,
            train_port: addr::client_port(fi, if sub == ACCESS_SUB { 63 } else { sub as usize }),
            isn_s: d("isn-server") as u32,
            isn_t: d("isn-train") as u32,
            ts_s: d("ts-server") as u32,
            ts_t: d("ts-train") as u32,
            segs: SegMap::new(f.mss),
            seg_hi: 0,
            opened: [false; 2],
        };
        self.conns.insert((fi as u32, sub), conn)
    }

    /// The two hosts of a connection as seen on `link` in `view` (1: the in-car link).
    fn hosts(&self, c: &Conn, link: usize, view: usize) -> (Host, Host) {
        let f = &self.flows[c.flow];
        let train_ip = if view == 1 {
            addr::passenger_addr(f.access.map_or(0, |(_, car)| car))
        } else {
            c.train_addr.unwrap_or_else(|| addr::router_addr(link))
        };
        (
            Host {
                mac: addr::mac(link, End::Sender),
                ip: addr::SERVER_ADDR,
                port: addr::server_port(c.flow),
            },
            Host {
                mac: addr::mac(link, End::Receiver),
                ip: train_ip,
                port: c.train_port,
            },
        )
    }

    /// Write the handshake of connection `key` on `link` (both ends), and for an MPTCP
    /// connection seen for the first time every other subflow's too (MP_CAPABLE first).
    fn handshake(&mut self, now: Time, key: (u32, u16), link: usize, view: usize) {
        let fi = key.0 as usize;
        let Some(ci) = self.conns.find(key) else {
            return;
        };
        let mp_sub = self.conns.list[ci].mp_sub;
        if mp_sub.is_some() && view == 0 {
            if let Some(m) = self.mp[fi].as_mut().filter(|m| !m.opened) {
                m.opened = true;
                for j in 0..self.flows[fi].paths.len() {
                    let k = (key.0, j as u16);
                    let l = if j == mp_sub.unwrap_or(0) {
                        link
                    } else {
                        self.flows[fi].paths[j].0
                    };
                    let cj = match self.conns.find(k) {
                        Some(i) => i,
                        None => self.open(fi, j as u16, l),
                    };
                    if !self.conns.list[cj].opened[0] {
                        self.write_handshake(now, cj, l, 0);
                    }
                }
                return;
            }
        }
        self.write_handshake(now, ci, link, view);
    }

    fn write_handshake(&mut self, now: Time, ci: usize, link: usize, view: usize) {
        self.conns.list[ci].opened[view] = true;
        let c = &self.conns.list[ci];
        let (server, train) = self.hosts(c, link, view);
        let f = &self.flows[c.flow];
        let (isn_s, isn_t) = (c.isn_s, c.isn_t);
        let (tv_s, tv_t) = (
            c.ts_s.wrapping_add(ms32(now)),
            c.ts_t.wrapping_add(ms32(now)),
        );
        let (mss, ws) = (f.mss.min(65_535) as u16, f.wscale);
        let backup = c.mp_sub.is_some_and(|j| f.paths[j].2);
        let addr_id = c.mp_sub.map_or(0, |j| f.paths[j].0 as u8 + 1);
        let mptcp: Option<[MptcpOption; 3]> = match (c.mp_sub, &self.mp[c.flow]) {
            (Some(0), Some(m)) => Some([
                MptcpOption::Capable {
                    version: 1,
                    flags: mptcp::CAPABLE_HMAC_SHA256,
                    sender_key: None,
                    receiver_key: None,
                    data_len: None,
                },
                MptcpOption::Capable {
                    version: 1,
                    flags: mptcp::CAPABLE_HMAC_SHA256,
                    sender_key: Some(m.key_s),
                    receiver_key: None,
                    data_len: None,
                },
                MptcpOption::Capable {
                    version: 1,
                    flags: mptcp::CAPABLE_HMAC_SHA256,
                    sender_key: Some(m.key_t),
                    receiver_key: Some(m.key_s),
                    data_len: None,
                },
            ]),
            (Some(j), Some(m)) => {
                let tag = format!("{j}");
                let r_a = draw(self.seed, &[&f.id, &tag, "nonce-train"]) as u32;
                let r_b = draw(self.seed, &[&f.id, &tag, "nonce-server"]) as u32;
                let hb = mptcp::join_hmac(m.key_s, m.key_t, r_b, r_a);
                let ha = mptcp::join_hmac(m.key_t, m.key_s, r_a, r_b);
                let mut hmac = [0u8; 20];
                hmac.copy_from_slice(&ha[..20]);
                Some([
                    MptcpOption::JoinSyn {
                        backup,
                        addr_id,
                        token: mptcp::token(m.key_s),
                        nonce: r_a,
                    },
                    MptcpOption::JoinSynAck {
                        backup: false,
                        addr_id: 0,
                        hmac: u64::from_be_bytes(hb[..8].try_into().expect("8 bytes")),
                        nonce: r_b,
                    },
                    MptcpOption::JoinAck { hmac },
                ])
            }
            _ => None,
        };
        let syn_window = (f.server_window.min(65_535)) as u16;
        let window = (f.server_window >> ws).min(65_535) as u16;
        // SYN (train -> server), SYN/ACK, ACK: written at both ends of the link.
        // (from the server, seq, ack, SYN, (TSval, TSecr))
        type Step = (bool, u32, Option<u32>, bool, (u32, u32));
        let steps: [Step; 3] = [
            (false, isn_t, None, true, (tv_t, 0)),
            (true, isn_s, Some(isn_t.wrapping_add(1)), true, (tv_s, tv_t)),
            (
                false,
                isn_t.wrapping_add(1),
                Some(isn_s.wrapping_add(1)),
                false,
                (tv_t, tv_s),
            ),
        ];
        for (k, (from_server, seq, ack, syn, ts)) in steps.into_iter().enumerate() {
            self.opts.clear();
            if syn {
                self.opts.push(&[
                    E::MaximumSegmentSize(mss),
                    E::SelectiveAcknowledgementPermitted,
                    E::Timestamp(ts.0, ts.1),
                    E::Noop,
                    E::WindowScale(ws),
                ]);
            } else {
                self.opts
                    .push(&[E::Noop, E::Noop, E::Timestamp(ts.0, ts.1)]);
            }
            if let Some(m) = &mptcp {
                self.opts.push_mptcp(&m[k]);
            }
            self.opts.pad();
            let (src, dst) = if from_server {
                (&server, &train)
            } else {
                (&train, &server)
            };
            let fields = TcpFields {
                seq,
                ack,
                syn,
                fin: false,
                psh: false,
                window: if syn { syn_window } else { window },
                options: self.opts.bytes(),
                payload_len: 0,
            };
            let r = self.fb.tcp(src, dst, &fields).map(|_| ()).map_err(|e| e.0);
            self.emit(link, End::Sender, now, r.clone());
            self.emit(link, End::Receiver, now, r);
        }
    }

    /// Build a simulated packet of connection `key` into the frame buffer.
    #[allow(clippy::too_many_arguments)]
    fn segment(
        &mut self,
        fi: usize,
        ci: usize,
        side: Side,
        link: usize,
        view: usize,
        now: Time,
        p: &Packet,
    ) -> Result<(), String> {
        let c = &mut self.conns.list[ci];
        let data = side == Side::Receiver && p.kind == Kind::Data;
        let seg = unwrap_seg(p.seq, c.seg_hi);
        if data && p.len > 0 {
            c.seg_hi = c.seg_hi.max(seg);
            c.segs.note(seg, p.len as u32);
        }
        let c = &self.conns.list[ci];
        if data && p.len > 0 && c.mp_sub.is_some() {
            if let Some(m) = &mut self.mp[fi] {
                m.dsn.note(p.dsn, p.len as u32);
            }
        }
        let c = &self.conns.list[ci];
        let f = &self.flows[fi];
        let (server, train) = self.hosts(c, link, view);
        let mp = c.mp_sub.and(self.mp[fi].as_ref());
        let seq_s = |k: u32| {
            c.isn_s
                .wrapping_add(1)
                .wrapping_add(c.segs.offset(unwrap_seg(k, c.seg_hi)) as u32)
        };
        self.opts.clear();
        let fields;
        if data {
            let tsv = c.ts_s.wrapping_add(ms32(now));
            let tse = c.ts_t.wrapping_add(ms32(p.ts_ecr));
            self.opts.push(&[E::Noop, E::Noop, E::Timestamp(tsv, tse)]);
            let probe = p.flags & flags::WINDOW_UPDATE != 0 || p.len == 0;
            if let Some(m) = mp {
                let mapping = (!probe).then(|| Mapping {
                    dsn: m.idsn_s.wrapping_add(1).wrapping_add(m.dsn.offset(p.dsn)),
                    dsn64: true,
                    ssn: 1u32.wrapping_add(c.segs.offset(seg) as u32),
                    len: p.len,
                    checksum: None,
                });
                self.opts.push_mptcp(&MptcpOption::Dss(Dss {
                    data_ack: Some(m.idsn_t.wrapping_add(1)),
                    ack64: true,
                    mapping,
                    data_fin: false,
                }));
            }
            self.opts.pad();
            fields = TcpFields {
                // A window probe carries no data and the sequence number before snd_nxt
                // (Linux `tcp_xmit_probe_skb()`).
                seq: if probe {
                    seq_s(p.seq).wrapping_sub(1)
                } else {
                    seq_s(p.seq)
                },
                ack: Some(c.isn_t.wrapping_add(1)),
                syn: false,
                fin: false,
                psh: false,
                window: (f.server_window >> f.wscale).min(65_535) as u16,
                options: self.opts.bytes(),
                payload_len: if probe { 0 } else { p.len as usize },
            };
            self.fb
                .tcp(&server, &train, &fields)
                .map(|_| ())
                .map_err(|e| e.0)
        } else {
            let tsv = c.ts_t.wrapping_add(ms32(now));
            let tse = c.ts_s.wrapping_add(ms32(p.ts_ecr));
            self.opts.push(&[E::Noop, E::Noop, E::Timestamp(tsv, tse)]);
            if let Some(m) = mp {
                self.opts.push_mptcp(&MptcpOption::Dss(Dss {
                    data_ack: Some(
                        m.idsn_s
                            .wrapping_add(1)
                            .wrapping_add(m.dsn.offset(p.data_ack)),
                    ),
                    ack64: true,
                    mapping: None,
                    data_fin: false,
                }));
                if p.flags & flags::MP_PRIO != 0 {
                    self.opts.push_mptcp(&MptcpOption::Prio {
                        backup: p.flags & flags::BACKUP != 0,
                    });
                }
            }
            let mut blocks = [(0u32, 0u32); 3];
            let n = p.sack_blocks().len();
            for (k, &(a, b)) in p.sack_blocks().iter().enumerate() {
                blocks[k] = (seq_s(a), seq_s(b));
            }
            self.opts.push_sack(&blocks[..n]);
            self.opts.pad();
            fields = TcpFields {
                seq: c.isn_t.wrapping_add(1),
                ack: Some(seq_s(p.ack)),
                syn: false,
                fin: false,
                psh: false,
                window: (p.rwnd as u64 >> f.wscale).min(65_535) as u16,
                options: self.opts.bytes(),
                payload_len: 0,
            };
            self.fb
                .tcp(&train, &server, &fields)
                .map(|_| ())
                .map_err(|e| e.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_offsets_follow_short_segments() {
        // MSS 1000; segment 3 is 400 bytes (a relay's short one), segment 7 is 10.
        let mut m = SegMap::new(1000);
        assert_eq!(m.offset(5), 5000);
        m.note(3, 400);
        m.note(3, 400); // seen again (a retransmission): no change
        m.note(4, 1000);
        assert_eq!(m.offset(3), 3000);
        assert_eq!(m.offset(4), 3400);
        assert_eq!(m.offset(6), 5400);
        // Noted out of order: the later ones shift.
        m.note(7, 10);
        m.note(1, 500);
        assert_eq!(m.offset(2), 1500);
        assert_eq!(m.offset(4), 2900);
        assert_eq!(m.offset(8), 2900 + 3000 + 10);
    }

    #[test]
    fn window_scale_fits_the_largest_window() {
        assert_eq!(wscale_for(65_535), 0);
        assert_eq!(wscale_for(65_536), 1);
        // Linux's default tcp_rmem max, 6 MB: 6291456 >> 7 = 49152.
        assert_eq!(wscale_for(6_291_456), 7);
        assert_eq!(wscale_for(u64::MAX), 14);
    }
}
