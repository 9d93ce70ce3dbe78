//! `railpath analyze`: one analysis of captures from either stack (the simulator's, the
//! testbed's, or any pcap/pcapng of Ethernet or raw IPv4 frames), per TCP subflow, per MPTCP
//! connection and per flow: goodput series, RTT samples, retransmissions, reinjections, the
//! stalls of the in-order data stream and MP_PRIO changes. Streams: the files are merged by
//! timestamp, each packet is seen once, and only per-connection state (reassembly ranges,
//! unacknowledged segments, per-bin counters) is kept.
//!
//! Rules (docs/models/capture.md):
//! - Capture points are named `<link>.<end>` (pcapng interface names; pcap file stems). The
//!   `sender` end sees packets where the data sender puts them on the link: the data sender's
//!   figures (sent, retransmitted, RTT, reinjections) come from there; the `receiver` end sees
//!   what the data receiver gets: in-order delivery (goodput, stalls) comes from there. A flow
//!   captured at one end only gets every figure from that end. A capture point without such a
//!   name counts as a `sender` end of a link named after it.
//! - The data sender of a TCP connection is its passive opener (the SYN/ACK's sender); without
//!   a handshake in the capture, the first side seen sending payload; else the lower port.
//! - Sequence numbers relative to the initial ones (RFC 9293 3.4 arithmetic, 32-bit values
//!   unwrapped near the highest seen). A data segment whose end is at or below the highest end
//!   sent before is a retransmission (as the emulator's accounting, crates/linkem/src/emu.rs).
//! - RTT samples (RFC 6298 Karn's rule, as tcptrace): an ACK that advances the cumulative ACK
//!   gives one sample, from the newest segment it covers that was sent once.
//! - In-order delivery: subflow-level reassembly of what reaches the receiver, then for MPTCP
//!   data-level reassembly of what the subflows release, through the DSS mappings (RFC 8684
//!   3.3.1); data-level sequence numbers are relative to the IDSN of the data sender's key
//!   (MP_CAPABLE) or, without keys, to the first mapping seen.
//! - A reinjection is a segment new on its subflow whose data-level range overlaps data already
//!   sent on any subflow (RFC 8684 3.3.6).
//! - A stall is a gap of at least `stall_s` between two advances of a flow's in-order data
//!   stream, or from the last advance to the end of the capture while data still arrived.
//! - Subflows join their MPTCP connection by token (MP_JOIN's token is the most significant 32
//!   bits of SHA-256 of the peer's key, RFC 8684 3.2).

use crate::file::{CaptureError, CaptureReader, Record};
use crate::frame::{parse, Parsed, Segment};
use crate::mptcp::{self, MptcpOption};
use crate::End;
use railpath_sim::net::packet::unwrap_seg;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

/// The `format` of an analysis's JSON.
pub const ANALYSIS_FORMAT: &str = "railpath-analysis/1";

/// How to analyse.
#[derive(Debug, Clone, PartialEq)]
pub struct AnalyzeOptions {
    /// Width of the series' bins, seconds.
    pub bin_s: f64,
    /// The shortest gap of the in-order stream reported as a stall, seconds.
    pub stall_s: f64,
    /// Length of the series, seconds (else up to the last packet).
    pub duration_s: Option<f64>,
    /// Flow names by server port - 5201 (a scenario's flow ids, in order).
    pub flow_names: Vec<String>,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        AnalyzeOptions {
            bin_s: 0.1,
            stall_s: 0.2,
            duration_s: None,
            flow_names: Vec::new(),
        }
    }
}

/// A stall of an in-order data stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Stall {
    pub start_s: f64,
    pub duration_s: f64,
}

/// An MP_PRIO option: when (at the end nearest its sender), on which subflow, which way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PrioChange {
    pub t_s: f64,
    pub subflow: String,
    pub backup: bool,
    /// `"receiver"` (the data receiver asked) or `"sender"`.
    pub from: &'static str,
}

/// RTT samples of a subflow, ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RttStats {
    pub samples: u64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubflowReport {
    pub id: String,
    /// The links it was seen on.
    pub links: Vec<String>,
    /// The data receiver's side, `address:port`.
    pub client: String,
    pub sent_packets: u64,
    pub retransmitted_packets: u64,
    /// Bytes the subflow delivered in order (to the data level for MPTCP).
    pub delivered_bytes: u64,
    pub rtt: Option<RttStats>,
    /// It opened as a backup (MP_JOIN with the backup bit).
    pub backup_at_join: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowReport {
    pub id: String,
    /// The data sender, `address:port`.
    pub server: String,
    /// `"mptcp"` when any of its connections carried MPTCP options, else `"tcp"`.
    pub kind: &'static str,
    pub connections: u64,
    pub delivered_bytes: u64,
    /// Delivered bytes x 8 over the time from its first to its last in-order delivery.
    pub goodput_bps: f64,
    pub sent_packets: u64,
    /// Subflow retransmissions plus reinjections (as the simulator's summary counts them).
    pub retransmitted_packets: u64,
    pub reinjected_packets: u64,
    pub stalls: Vec<Stall>,
    pub mp_prio: Vec<PrioChange>,
    pub subflows: Vec<SubflowReport>,
    /// Which end the sender's figures and the delivery came from.
    pub sender_figures_from: &'static str,
    pub delivery_from: &'static str,
}

/// The short JSON of an analysis.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AnalysisSummary {
    pub format: &'static str,
    pub files: Vec<String>,
    /// The capture points (`<link>.<end>`) seen.
    pub points: Vec<String>,
    pub packets: u64,
    /// Unix time of t = 0 of the series.
    pub origin_unix_s: f64,
    pub duration_s: f64,
    pub bin_s: f64,
    pub stall_min_s: f64,
    pub flows: Vec<FlowReport>,
}

/// A time series, as `timeseries.csv` has them.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    pub flow: String,
    pub subflow: String,
    pub metric: &'static str,
    pub values: Vec<f64>,
}

/// What `analyze` found.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub summary: AnalysisSummary,
    pub series: Vec<Series>,
}

impl Analysis {
    /// The series in the run's `timeseries.csv` format (`t_s,flow,subflow,metric,value`, `t_s`
    /// the end of the bin).
    pub fn write_csv(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        w.write_all(b"t_s,flow,subflow,metric,value\n")?;
        let bin = self.summary.bin_s;
        for s in &self.series {
            for (k, v) in s.values.iter().enumerate() {
                let t = ((k + 1) as f64 * bin * 1e9).round() / 1e9;
                writeln!(w, "{t},{},{},{},{v}", s.flow, s.subflow, s.metric)?;
            }
        }
        Ok(())
    }
}

/// Stalls of a binned in-order stream: runs of empty bins of at least `min_s`, between its first
/// and its last non-empty bin (the same rule on a run's own `goodput_bps` series and on an
/// analysis's, at bin resolution).
pub fn series_stalls(values: &[f64], bin_s: f64, min_s: f64) -> Vec<Stall> {
    let Some(first) = values.iter().position(|v| *v > 0.0) else {
        return Vec::new();
    };
    let last = values.iter().rposition(|v| *v > 0.0).unwrap_or(first);
    let mut out = Vec::new();
    let mut k = first;
    while k <= last {
        if values[k] > 0.0 {
            k += 1;
            continue;
        }
        let start = k;
        while k <= last && values[k] <= 0.0 {
            k += 1;
        }
        let len = (k - start) as f64 * bin_s;
        if len + 1e-9 >= min_s {
            out.push(Stall {
                start_s: start as f64 * bin_s,
                duration_s: len,
            });
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// State.

/// Most unacknowledged segments kept per connection for RTT samples.
const MAX_OUTSTANDING: usize = 1 << 17;
/// Most bins of a series (23 days of 1 s bins, 2.3 days of 100 ms ones).
const MAX_BINS: u64 = 2_000_000;
/// Most values all series together may hold (one series per flow, four per connection, each
/// as many values as bins): 160 MB of output, and a bound on the working memory whatever a
/// capture holds (a 40 kB file of 300 connections with one late packet once asked for 2.3 GB).
const MAX_VALUES: u64 = 20_000_000;

fn grow<T: Default + Clone>(v: &mut Vec<T>, k: usize) -> &mut T {
    if v.len() <= k {
        v.resize(k + 1, T::default());
    }
    &mut v[k]
}

/// In-order reassembly of a byte stream given as ranges [start, end).
#[derive(Debug, Clone, Default)]
struct Reasm {
    nxt: u64,
    ooo: BTreeMap<u64, u64>,
}

impl Reasm {
    /// Add a range; returns the new in-order ranges (nxt before, after) if it advanced.
    fn add(&mut self, start: u64, end: u64) -> Option<(u64, u64)> {
        if end <= self.nxt {
            return None;
        }
        if start > self.nxt {
            // Merge into the out-of-order set.
            let e = self.ooo.entry(start).or_insert(end);
            if *e < end {
                *e = end;
            }
            return None;
        }
        let before = self.nxt;
        self.nxt = end;
        while let Some((&s, &e)) = self.ooo.first_key_value() {
            if s > self.nxt {
                break;
            }
            self.ooo.pop_first();
            self.nxt = self.nxt.max(e);
        }
        Some((before, self.nxt))
    }
}

/// A set of byte ranges, merged.
#[derive(Debug, Clone, Default)]
struct Ranges(BTreeMap<u64, u64>);

impl Ranges {
    /// Whether [a, b) overlaps the set.
    fn overlaps(&self, a: u64, b: u64) -> bool {
        if let Some((_, &e)) = self.0.range(..=a).next_back() {
            if e > a {
                return true;
            }
        }
        self.0.range(a..b).next().is_some()
    }
    fn insert(&mut self, mut a: u64, mut b: u64) {
        if let Some((&s, &e)) = self.0.range(..=a).next_back() {
            if e >= a {
                a = s;
                b = b.max(e);
            }
        }
        let inside: Vec<(u64, u64)> = self.0.range(a..=b).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in inside {
            self.0.remove(&s);
            b = b.max(e);
        }
        self.0.insert(a, b);
    }
}

#[derive(Debug, Clone, Copy)]
struct Outstanding {
    start: u64,
    end: u64,
    t: u64,
    retx: bool,
}

/// One TCP connection at one end: the data direction (server -> client) and its ACKs.
#[derive(Debug, Default)]
struct EndConn {
    seen: bool,
    // sender role
    hi: Option<u64>,
    sent: u64,
    retrans: u64,
    sent_bins: Vec<f64>,
    retrans_bins: Vec<f64>,
    out: VecDeque<Outstanding>,
    hi_ack: Option<u64>,
    rtt_n: u64,
    rtt_sum: f64,
    rtt_min: f64,
    rtt_max: f64,
    rtt_bins: Vec<(f64, u32)>,
    // receiver role
    reasm: Reasm,
    delivered: u64,
    deliv_bins: Vec<f64>,
    // MPTCP mappings: subflow offset -> (relative DSN, length)
    maps: BTreeMap<u64, (u64, u64)>,
    maps_since_prune: u32,
    prio: Vec<(u64, bool, bool)>,
}

/// One TCP connection.
#[derive(Debug)]
struct Conn {
    server: (Ipv4Addr, u16),
    client: (Ipv4Addr, u16),
    /// Sequence numbers of the first payload byte each way (ISN + 1), once known.
    base_s: Option<u32>,
    base_c: Option<u32>,
    links: Vec<String>,
    flow: Option<usize>,
    mp: Option<usize>,
    backup_at_join: bool,
    ends: [EndConn; 2],
    /// Last relative sequence seen each way (for unwrapping).
    near_s: u64,
}

/// One end of an MPTCP connection's data level.
#[derive(Debug, Default)]
struct MpEnd {
    /// Data-level ranges sent so far (on any subflow).
    sent: Ranges,
    reinjected: u64,
    reasm: Reasm,
}

#[derive(Debug, Default)]
struct Mp {
    key_server: Option<u64>,
    tokens: Vec<u32>,
    /// Raw DSN of relative 0.
    dsn_base: Option<u64>,
    dsn_near: u64,
    ends: [MpEnd; 2],
    flow: Option<usize>,
}

/// One flow at one end: in-order delivery of its data.
#[derive(Debug, Default)]
struct FlowEnd {
    delivered: u64,
    bins: Vec<f64>,
    first: Option<u64>,
    last: Option<u64>,
    last_payload: Option<u64>,
    stalls: Vec<(u64, u64)>,
    has_packets: bool,
}

#[derive(Debug)]
struct Flow {
    server: (Ipv4Addr, u16),
    in_car: bool,
    ends: [FlowEnd; 2],
    mptcp: bool,
}

struct State {
    opts: AnalyzeOptions,
    origin: u64,
    bin_ns: f64,
    stall_ns: u64,
    conns: Vec<Conn>,
    by_tuple: HashMap<(Ipv4Addr, u16, Ipv4Addr, u16), usize>,
    mps: Vec<Mp>,
    by_token: HashMap<u32, usize>,
    flows: Vec<Flow>,
    by_flow: HashMap<(Ipv4Addr, u16, bool), usize>,
    last_t: u64,
    packets: u64,
}

fn ei(end: End) -> usize {
    end as usize
}

/// `seq - base` unwrapped to 64 bits near `near`.
fn rel(seq: u32, base: u32, near: u64) -> u64 {
    unwrap_seg(seq.wrapping_sub(base), near)
}

fn in_car(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    o[0] == 10 && o[1] == 99
}

impl State {
    /// An error if the series would hold more than [`MAX_VALUES`] values with `bins` bins each.
    fn check_values(&self, bins: u64) -> Result<(), String> {
        let series = self.flows.len() as u64 + 4 * self.conns.len() as u64;
        if series.saturating_mul(bins) <= MAX_VALUES {
            return Ok(());
        }
        Err(format!(
            "{} flows and {} connections over {bins} bins of {} s: their series would hold more \
             than {MAX_VALUES} values; analyse a shorter capture or pass wider bins (--bin-ms)",
            self.flows.len(),
            self.conns.len(),
            self.opts.bin_s
        ))
    }

    fn bin(&self, t: u64) -> usize {
        (t.saturating_sub(self.origin) as f64 / self.bin_ns) as usize
    }

    fn flow_of(&mut self, server: (Ipv4Addr, u16), car: bool) -> usize {
        *self
            .by_flow
            .entry((server.0, server.1, car))
            .or_insert_with(|| {
                self.flows.push(Flow {
                    server,
                    in_car: car,
                    ends: Default::default(),
                    mptcp: false,
                });
                self.flows.len() - 1
            })
    }

    /// The connection of a segment from `src` to `dst` (created on first sight).
    fn conn(&mut self, src: (Ipv4Addr, u16), dst: (Ipv4Addr, u16), seg: &Segment) -> (usize, bool) {
        if let Some(&c) = self.by_tuple.get(&(src.0, src.1, dst.0, dst.1)) {
            let from_server = self.conns[c].server == src;
            return (c, from_server);
        }
        // The passive opener serves; else the payload sender; else the lower port.
        let src_serves = if seg.syn {
            seg.ack.is_some()
        } else if seg.payload_len > 0 {
            true
        } else {
            src.1 < dst.1
        };
        let (server, client) = if src_serves { (src, dst) } else { (dst, src) };
        let c = self.conns.len();
        self.conns.push(Conn {
            server,
            client,
            base_s: None,
            base_c: None,
            links: Vec::new(),
            flow: None,
            mp: None,
            backup_at_join: false,
            ends: Default::default(),
            near_s: 0,
        });
        self.by_tuple.insert((src.0, src.1, dst.0, dst.1), c);
        self.by_tuple.insert((dst.0, dst.1, src.0, src.1), c);
        (c, src_serves)
    }

    fn mp_of_token(&mut self, token: u32) -> usize {
        *self.by_token.entry(token).or_insert_with(|| {
            self.mps.push(Mp {
                tokens: vec![token],
                ..Mp::default()
            });
            self.mps.len() - 1
        })
    }

    fn packet(
        &mut self,
        t: u64,
        link: &str,
        end: End,
        src: Ipv4Addr,
        dst: Ipv4Addr,
        seg: &Segment,
    ) {
        self.last_t = self.last_t.max(t);
        let (c, from_server) = self.conn((src, seg.sport), (dst, seg.dport), seg);
        if !self.conns[c].links.iter().any(|l| l == link) {
            self.conns[c].links.push(link.to_string());
        }
        // Bases of the relative sequence numbers.
        {
            let conn = &mut self.conns[c];
            let base = if from_server {
                &mut conn.base_s
            } else {
                &mut conn.base_c
            };
            if seg.syn {
                *base = Some(seg.seq.wrapping_add(1));
            } else if base.is_none() {
                *base = Some(seg.seq);
            }
            if let Some(a) = seg.ack {
                let other = if from_server {
                    &mut conn.base_c
                } else {
                    &mut conn.base_s
                };
                if other.is_none() {
                    *other = Some(a);
                }
            }
        }
        // MPTCP: which connection, keys, mappings.
        for o in &seg.mptcp {
            match *o {
                MptcpOption::Capable {
                    sender_key,
                    receiver_key,
                    ..
                } => {
                    // The server's key: the SYN/ACK's sender key, or the third ACK's receiver key.
                    let ks = if from_server {
                        sender_key
                    } else {
                        receiver_key
                    };
                    let kc = if from_server {
                        receiver_key
                    } else {
                        sender_key
                    };
                    if let Some(ks) = ks {
                        let m = self.mp_of_token(mptcp::token(ks));
                        let mp = &mut self.mps[m];
                        mp.key_server = Some(ks);
                        if let Some(kc) = kc {
                            let tc = mptcp::token(kc);
                            if !mp.tokens.contains(&tc) {
                                mp.tokens.push(tc);
                                self.by_token.insert(tc, m);
                            }
                        }
                        self.conns[c].mp = Some(m);
                    }
                }
                MptcpOption::JoinSyn { token, backup, .. } => {
                    let m = self.mp_of_token(token);
                    self.conns[c].mp = Some(m);
                    self.conns[c].backup_at_join = backup;
                }
                MptcpOption::Dss(_) | MptcpOption::Prio { .. } if self.conns[c].mp.is_none() => {
                    // MPTCP without a handshake in the capture: a connection of its own.
                    self.mps.push(Mp::default());
                    self.conns[c].mp = Some(self.mps.len() - 1);
                }
                _ => {}
            }
        }
        // The flow.
        if self.conns[c].flow.is_none() {
            let flow = match self.conns[c].mp.and_then(|m| self.mps[m].flow) {
                Some(f) => f,
                None => {
                    let (server, client) = (self.conns[c].server, self.conns[c].client);
                    let f = self.flow_of(server, in_car(client.0));
                    if let Some(m) = self.conns[c].mp {
                        self.mps[m].flow = Some(f);
                    }
                    f
                }
            };
            self.conns[c].flow = Some(flow);
        }
        let f = self.conns[c].flow.expect("set above");
        if self.conns[c].mp.is_some() {
            self.flows[f].mptcp = true;
        }
        self.flows[f].ends[ei(end)].has_packets = true;
        self.conns[c].ends[ei(end)].seen = true;
        let k = self.bin(t);
        if from_server {
            self.data(t, k, c, f, end, seg);
        } else {
            self.ack(t, k, c, end, seg);
        }
        for o in &seg.mptcp {
            if let MptcpOption::Prio { backup } = *o {
                self.conns[c].ends[ei(end)]
                    .prio
                    .push((t, backup, from_server));
            }
        }
    }

    /// A segment from the server (data direction).
    fn data(&mut self, t: u64, k: usize, c: usize, f: usize, end: End, seg: &Segment) {
        let Some(base) = self.conns[c].base_s else {
            return;
        };
        let near = self.conns[c].near_s;
        let start = rel(seg.seq, base, near);
        let len = seg.payload_len as u64;
        let stop = start.saturating_add(len);
        self.conns[c].near_s = stop.max(near);
        let mp = self.conns[c].mp;
        // The DSS mapping this segment carries.
        for o in &seg.mptcp {
            if let MptcpOption::Dss(d) = o {
                if let (Some(map), Some(m)) = (d.mapping, mp) {
                    let mp = &mut self.mps[m];
                    let raw = if map.dsn64 {
                        map.dsn
                    } else {
                        unwrap_seg(map.dsn as u32, mp.dsn_near)
                    };
                    mp.dsn_near = raw;
                    let b = *mp.dsn_base.get_or_insert_with(|| match mp.key_server {
                        Some(key) => mptcp::idsn(key).wrapping_add(1),
                        None => raw,
                    });
                    let dsn_rel = raw.wrapping_sub(b);
                    let ssn_off = rel(map.ssn, 1, start);
                    let e = &mut self.conns[c].ends[ei(end)];
                    e.maps.insert(ssn_off, (dsn_rel, map.len as u64));
                    e.maps_since_prune += 1;
                }
            }
        }
        if len == 0 {
            return;
        }
        self.flows[f].ends[ei(end)].last_payload = Some(t);
        // Sender role.
        let e = &mut self.conns[c].ends[ei(end)];
        let new = e.hi.is_none_or(|h| stop > h);
        if new {
            e.hi = Some(stop);
            if e.out.len() >= MAX_OUTSTANDING {
                // A capture without the ACKs: forget the oldest rather than grow.
                e.out.pop_front();
            }
            e.out.push_back(Outstanding {
                start,
                end: stop,
                t,
                retx: false,
            });
        } else {
            e.retrans += 1;
            *grow(&mut e.retrans_bins, k) += 1.0;
            for o in e.out.iter_mut() {
                if o.end > start && o.start < stop {
                    o.retx = true;
                }
            }
        }
        e.sent += 1;
        *grow(&mut e.sent_bins, k) += 1.0;
        if new {
            if let Some(m) = mp {
                if let Some(dsn) = dsn_at(&e.maps, start) {
                    let me = &mut self.mps[m].ends[ei(end)];
                    if me.sent.overlaps(dsn, dsn.saturating_add(len)) {
                        me.reinjected += 1;
                    }
                    me.sent.insert(dsn, dsn.saturating_add(len));
                }
            }
        }
        // Receiver role: subflow-level reassembly, then the data level.
        let Some((a, b)) = e.reasm.add(start, stop) else {
            return;
        };
        e.delivered = e.delivered.saturating_add(b - a);
        *grow(&mut e.deliv_bins, k) += (b - a) as f64;
        match mp {
            None => self.deliver(t, k, f, end, b - a),
            Some(m) => {
                let mut ranges: Vec<(u64, u64)> = Vec::new();
                let e = &self.conns[c].ends[ei(end)];
                for (&s, &(d, l)) in e.maps.range(..b).rev() {
                    if s.saturating_add(l) <= a {
                        break;
                    }
                    let lo = s.max(a);
                    let hi = s.saturating_add(l).min(b);
                    if lo < hi {
                        ranges.push((d.saturating_add(lo - s), d.saturating_add(hi - s)));
                    }
                }
                let mut adv: u64 = 0;
                for (ds, de) in ranges {
                    if let Some((x, y)) = self.mps[m].ends[ei(end)].reasm.add(ds, de) {
                        adv = adv.saturating_add(y - x);
                    }
                }
                if adv > 0 {
                    self.deliver(t, k, f, end, adv);
                }
                let e = &mut self.conns[c].ends[ei(end)];
                if e.maps_since_prune > 64 {
                    e.maps_since_prune = 0;
                    let keep = e.reasm.nxt.min(e.hi.unwrap_or(0));
                    while let Some((&s, &(_, l))) = e.maps.first_key_value() {
                        if s.saturating_add(l) > keep {
                            break;
                        }
                        e.maps.pop_first();
                    }
                }
            }
        }
    }

    /// The flow's in-order stream advanced by `bytes` at `t`.
    fn deliver(&mut self, t: u64, k: usize, f: usize, end: End, bytes: u64) {
        let stall = self.stall_ns;
        let fe = &mut self.flows[f].ends[ei(end)];
        fe.delivered = fe.delivered.saturating_add(bytes);
        *grow(&mut fe.bins, k) += bytes as f64;
        if let Some(last) = fe.last {
            if t.saturating_sub(last) >= stall {
                fe.stalls.push((last, t.saturating_sub(last)));
            }
        }
        fe.first.get_or_insert(t);
        fe.last = Some(t);
    }

    /// A segment from the client (ACKs of the data direction).
    fn ack(&mut self, t: u64, k: usize, c: usize, end: End, seg: &Segment) {
        let (Some(a), Some(base)) = (seg.ack, self.conns[c].base_s) else {
            return;
        };
        let near = self.conns[c].near_s;
        let acked = rel(a, base, near);
        let e = &mut self.conns[c].ends[ei(end)];
        if e.hi_ack.is_some_and(|h| acked <= h) {
            return;
        }
        e.hi_ack = Some(acked);
        let mut sample = None;
        while let Some(o) = e.out.front() {
            if o.end > acked {
                break;
            }
            if !o.retx {
                sample = Some(t.saturating_sub(o.t));
            }
            e.out.pop_front();
        }
        if let Some(r) = sample {
            let ms = r as f64 / 1e6;
            if e.rtt_n == 0 {
                e.rtt_min = ms;
                e.rtt_max = ms;
            }
            e.rtt_n += 1;
            e.rtt_sum += ms;
            e.rtt_min = e.rtt_min.min(ms);
            e.rtt_max = e.rtt_max.max(ms);
            let b = grow(&mut e.rtt_bins, k);
            b.0 += ms;
            b.1 += 1;
        }
    }
}

/// The relative DSN of subflow offset `off` through the mappings.
fn dsn_at(maps: &BTreeMap<u64, (u64, u64)>, off: u64) -> Option<u64> {
    let (&s, &(d, l)) = maps.range(..=off).next_back()?;
    (off < s.saturating_add(l) || l == 0).then_some(d.saturating_add(off - s))
}

// ---------------------------------------------------------------------------------------------
// Files.

/// The capture files among `paths` (a directory stands for its `.pcap` and `.pcapng` files).
pub fn capture_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CaptureError> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let rd = std::fs::read_dir(p).map_err(|e| CaptureError {
                file: p.display().to_string(),
                record: None,
                message: format!("cannot list: {e}"),
            })?;
            let mut found: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|f| f.extension().is_some_and(|x| x == "pcap" || x == "pcapng"))
                .collect();
            if found.is_empty() {
                return Err(CaptureError {
                    file: p.display().to_string(),
                    record: None,
                    message: "a directory without .pcap or .pcapng files".into(),
                });
            }
            found.sort();
            out.extend(found);
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

struct Source {
    reader: CaptureReader,
    /// Point of each interface: (link, end).
    stem: String,
    buf: Vec<u8>,
    head: Option<Record>,
}

impl Source {
    fn point(&self, iface: usize) -> (String, End) {
        let name = self
            .reader
            .interfaces()
            .get(iface)
            .and_then(|i| i.name.clone())
            .unwrap_or_else(|| self.stem.clone());
        match crate::parse_point(&name) {
            Some((l, e)) => (l.to_string(), e),
            None => (name, End::Sender),
        }
    }
}

/// Analyse the captures in `paths` (files, or directories of them).
pub fn analyze(paths: &[PathBuf], opts: &AnalyzeOptions) -> Result<Analysis, CaptureError> {
    let files = capture_files(paths)?;
    if files.is_empty() {
        return Err(CaptureError {
            file: String::new(),
            record: None,
            message: "no capture given".into(),
        });
    }
    let mut readers = Vec::new();
    for f in &files {
        readers.push(CaptureReader::open(f)?);
    }
    analyze_readers(readers, opts)
}

/// One capture held in memory (a fuzz target's input), named `name` (a point name as a pcap
/// file's stem: `a.sender.pcap`).
pub fn analyze_bytes(
    name: &str,
    data: &[u8],
    opts: &AnalyzeOptions,
) -> Result<Analysis, CaptureError> {
    let r = CaptureReader::from_reader(name, std::io::Cursor::new(data.to_vec()))?;
    analyze_readers(vec![r], opts)
}

/// [`analyze`] of open readers.
pub fn analyze_readers(
    readers: Vec<CaptureReader>,
    opts: &AnalyzeOptions,
) -> Result<Analysis, CaptureError> {
    let files: Vec<PathBuf> = readers.iter().map(|r| PathBuf::from(r.file())).collect();
    let mut sources = Vec::new();
    for reader in readers {
        let stem = Path::new(reader.file())
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut s = Source {
            reader,
            stem,
            buf: Vec::new(),
            head: None,
        };
        s.head = s.reader.next(&mut s.buf)?;
        sources.push(s);
    }
    const EPOCH_NS: u64 = crate::EPOCH_S * 1_000_000_000;
    let first = sources
        .iter()
        .filter_map(|s| s.head.map(|r| r.t_ns))
        .min()
        .unwrap_or(EPOCH_NS);
    // railpath's captures count from its epoch; others from their first packet.
    let origin = if (EPOCH_NS..EPOCH_NS + 365 * 86_400 * 1_000_000_000).contains(&first) {
        EPOCH_NS
    } else {
        first
    };
    if !(opts.bin_s.is_finite() && opts.bin_s > 0.0) {
        return Err(CaptureError {
            file: String::new(),
            record: None,
            message: format!("bin width {} s: expected > 0", opts.bin_s),
        });
    }
    let mut st = State {
        opts: opts.clone(),
        origin,
        bin_ns: opts.bin_s * 1e9,
        stall_ns: (opts.stall_s.max(0.0) * 1e9) as u64,
        conns: Vec::new(),
        by_tuple: HashMap::new(),
        mps: Vec::new(),
        by_token: HashMap::new(),
        flows: Vec::new(),
        by_flow: HashMap::new(),
        last_t: origin,
        packets: 0,
    };
    let mut points: Vec<String> = Vec::new();
    let mut heap: BinaryHeap<Reverse<(u64, usize, u64)>> = sources
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.head.map(|r| Reverse((r.t_ns, i, r.index))))
        .collect();
    while let Some(Reverse((_, i, _))) = heap.pop() {
        let s = &mut sources[i];
        let rec = s.head.take().expect("a head");
        let eth = s
            .reader
            .interfaces()
            .get(rec.iface)
            .is_none_or(|x| x.ethernet);
        if rec.t_ns.saturating_sub(origin) as f64 / st.bin_ns > MAX_BINS as f64 {
            return Err(CaptureError {
                file: s.reader.file().to_string(),
                record: Some(rec.index),
                message: format!(
                    "timestamp {:.3} s after the first packet: more than {MAX_BINS} bins of {} s",
                    rec.t_ns.saturating_sub(origin) as f64 / 1e9,
                    opts.bin_s
                ),
            });
        }
        let (link, end) = s.point(rec.iface);
        let pn = crate::point_name(&link, end);
        if !points.contains(&pn) {
            points.push(pn);
        }
        st.packets += 1;
        // The series' size is checked before the packet can grow them (the flows and
        // connections seen so far up to its bin) and after (any it added).
        let fits = |st: &State| {
            st.check_values(st.bin(st.last_t.max(rec.t_ns)) as u64 + 1)
                .map_err(|message| CaptureError {
                    file: s.reader.file().to_string(),
                    record: Some(rec.index),
                    message,
                })
        };
        fits(&st)?;
        match parse(&s.buf, eth) {
            Ok(Parsed::Tcp { src, dst, seg }) => st.packet(rec.t_ns, &link, end, src, dst, &seg),
            Ok(_) => st.last_t = st.last_t.max(rec.t_ns),
            Err(e) => {
                return Err(CaptureError {
                    file: s.reader.file().to_string(),
                    record: Some(rec.index),
                    message: e.0,
                })
            }
        }
        fits(&st)?;
        s.head = s.reader.next(&mut s.buf)?;
        if let Some(r) = s.head {
            heap.push(Reverse((r.t_ns, i, r.index)));
        }
    }
    points.sort();
    let duration_s = st
        .opts
        .duration_s
        .unwrap_or((st.last_t.saturating_sub(st.origin)) as f64 / 1e9);
    let nbins = ((duration_s / st.opts.bin_s) - 1e-9)
        .ceil()
        .clamp(0.0, MAX_BINS as f64) as usize;
    // A duration given with the options shapes the series too.
    st.check_values(nbins as u64)
        .map_err(|message| CaptureError {
            file: files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            record: None,
            message,
        })?;
    Ok(st.finish(files, points, duration_s, nbins))
}

impl State {
    fn finish(
        self,
        files: Vec<PathBuf>,
        points: Vec<String>,
        duration_s: f64,
        nbins: usize,
    ) -> Analysis {
        let bin_s = self.opts.bin_s;
        let fit = |v: &[f64], scale: f64| -> Vec<f64> {
            (0..nbins)
                .map(|k| v.get(k).copied().unwrap_or(0.0) * scale)
                .collect()
        };
        let rate = 8.0 / bin_s;
        let t_s = |t: u64| (t.saturating_sub(self.origin)) as f64 / 1e9;
        // The end a role's figures come from: its own if it saw the flow, else the other.
        let pick = |want: End, has: &dyn Fn(End) -> bool| -> End {
            let other = if want == End::Sender {
                End::Receiver
            } else {
                End::Sender
            };
            if has(want) || !has(other) {
                want
            } else {
                other
            }
        };
        let mut series = Vec::new();
        let mut reports = Vec::new();
        let mut names: HashMap<String, usize> = HashMap::new();
        for (fi, fl) in self.flows.iter().enumerate() {
            let mut id = match fl.server.1.checked_sub(crate::addr::BASE_PORT) {
                Some(k) if (k as usize) < self.opts.flow_names.len() => {
                    self.opts.flow_names[k as usize].clone()
                }
                _ => format!("{}:{}", fl.server.0, fl.server.1),
            };
            if fl.in_car {
                id.push_str("/car");
            }
            let n = names.entry(id.clone()).or_insert(0);
            *n += 1;
            if *n > 1 {
                id = format!("{id}#{n}");
            }
            let s_end = pick(End::Sender, &|e| fl.ends[ei(e)].has_packets);
            let r_end = pick(End::Receiver, &|e| fl.ends[ei(e)].has_packets);
            let fe = &fl.ends[ei(r_end)];
            let mut stalls: Vec<Stall> = fe
                .stalls
                .iter()
                .map(|&(a, d)| Stall {
                    start_s: t_s(a),
                    duration_s: d as f64 / 1e9,
                })
                .collect();
            if let (Some(last), Some(lp)) = (fe.last, fe.last_payload) {
                let end_t = self.last_t.max(lp);
                if lp > last && end_t - last >= self.stall_ns {
                    stalls.push(Stall {
                        start_s: t_s(last),
                        duration_s: (end_t - last) as f64 / 1e9,
                    });
                }
            }
            let goodput = match (fe.first, fe.last) {
                (Some(a), Some(b)) if b > a => fe.delivered as f64 * 8.0 / ((b - a) as f64 / 1e9),
                _ => 0.0,
            };
            series.push(Series {
                flow: id.clone(),
                subflow: String::new(),
                metric: "goodput_bps",
                values: fit(&fe.bins, rate),
            });
            let conns: Vec<usize> = (0..self.conns.len())
                .filter(|&c| self.conns[c].flow == Some(fi))
                .collect();
            let mut subflows = Vec::new();
            let mut prio = Vec::new();
            let mut per_link: HashMap<String, usize> = HashMap::new();
            for &c in &conns {
                let cn = &self.conns[c];
                let link = cn.links.join("+");
                let k = per_link.entry(link.clone()).or_insert(0);
                *k += 1;
                let sub_id = if *k > 1 {
                    format!("{link}#{k}")
                } else {
                    link.clone()
                };
                let se = &cn.ends[ei(s_end)];
                let re = &cn.ends[ei(r_end)];
                series.push(Series {
                    flow: id.clone(),
                    subflow: sub_id.clone(),
                    metric: "goodput_bps",
                    values: fit(&re.deliv_bins, rate),
                });
                series.push(Series {
                    flow: id.clone(),
                    subflow: sub_id.clone(),
                    metric: "rtt_ms",
                    values: (0..nbins)
                        .map(|k| match se.rtt_bins.get(k) {
                            Some(&(s, n)) if n > 0 => s / n as f64,
                            _ => f64::NAN,
                        })
                        .collect(),
                });
                series.push(Series {
                    flow: id.clone(),
                    subflow: sub_id.clone(),
                    metric: "sent_packets",
                    values: fit(&se.sent_bins, 1.0),
                });
                series.push(Series {
                    flow: id.clone(),
                    subflow: sub_id.clone(),
                    metric: "retransmitted_packets",
                    values: fit(&se.retrans_bins, 1.0),
                });
                // MP_PRIO at the end nearest its sender: the data receiver's at the receiver end.
                for &(t, backup, from_server) in &cn.ends[ei(s_end)].prio {
                    if from_server {
                        prio.push(PrioChange {
                            t_s: t_s(t),
                            subflow: sub_id.clone(),
                            backup,
                            from: "sender",
                        });
                    }
                }
                for &(t, backup, from_server) in &cn.ends[ei(r_end)].prio {
                    if !from_server {
                        prio.push(PrioChange {
                            t_s: t_s(t),
                            subflow: sub_id.clone(),
                            backup,
                            from: "receiver",
                        });
                    }
                }
                subflows.push(SubflowReport {
                    id: sub_id,
                    links: cn.links.clone(),
                    client: format!("{}:{}", cn.client.0, cn.client.1),
                    sent_packets: se.sent,
                    retransmitted_packets: se.retrans,
                    delivered_bytes: re.delivered,
                    rtt: (se.rtt_n > 0).then(|| RttStats {
                        samples: se.rtt_n,
                        min_ms: se.rtt_min,
                        mean_ms: se.rtt_sum / se.rtt_n as f64,
                        max_ms: se.rtt_max,
                    }),
                    backup_at_join: cn.backup_at_join,
                });
            }
            prio.sort_by(|a, b| a.t_s.total_cmp(&b.t_s));
            let mut mps: Vec<usize> = conns.iter().filter_map(|&c| self.conns[c].mp).collect();
            mps.sort();
            mps.dedup();
            let reinjected: u64 = mps
                .iter()
                .map(|&m| self.mps[m].ends[ei(s_end)].reinjected)
                .sum();
            let sent: u64 = subflows.iter().map(|s| s.sent_packets).sum();
            let retrans: u64 = subflows.iter().map(|s| s.retransmitted_packets).sum();
            let n_conns = if fl.mptcp {
                mps.len().max(1)
            } else {
                conns.len()
            } as u64;
            reports.push(FlowReport {
                id,
                server: format!("{}:{}", fl.server.0, fl.server.1),
                kind: if fl.mptcp { "mptcp" } else { "tcp" },
                connections: n_conns,
                delivered_bytes: fe.delivered,
                goodput_bps: goodput,
                sent_packets: sent,
                retransmitted_packets: retrans + reinjected,
                reinjected_packets: reinjected,
                stalls,
                mp_prio: prio,
                subflows,
                sender_figures_from: s_end.as_str(),
                delivery_from: r_end.as_str(),
            });
        }
        Analysis {
            summary: AnalysisSummary {
                format: ANALYSIS_FORMAT,
                files: files.iter().map(|f| f.display().to_string()).collect(),
                points,
                packets: self.packets,
                origin_unix_s: self.origin as f64 / 1e9,
                duration_s,
                bin_s,
                stall_min_s: self.opts.stall_s,
                flows: reports,
            },
            series,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reassembly_releases_in_order() {
        let mut r = Reasm::default();
        assert_eq!(r.add(0, 10), Some((0, 10)));
        assert_eq!(r.add(20, 30), None);
        assert_eq!(r.add(25, 40), None);
        assert_eq!(r.add(5, 10), None, "a duplicate");
        // The hole [10, 20) fills: everything up to 40 is released at once.
        assert_eq!(r.add(10, 20), Some((10, 40)));
        assert!(r.ooo.is_empty());
    }

    #[test]
    fn stalls_of_a_binned_stream() {
        // 0.1 s bins: idle at the start (not a stall), a 0.3 s gap, a 0.1 s gap, idle at the end.
        let v = [0.0, 5.0, 0.0, 0.0, 0.0, 5.0, 0.0, 5.0, 0.0, 0.0];
        let s = series_stalls(&v, 0.1, 0.2);
        assert_eq!(s.len(), 1);
        assert!((s[0].start_s - 0.2).abs() < 1e-9 && (s[0].duration_s - 0.3).abs() < 1e-9);
        assert_eq!(series_stalls(&v, 0.1, 0.1).len(), 2);
        assert!(series_stalls(&[0.0; 4], 0.1, 0.1).is_empty());
    }

    #[test]
    fn sent_ranges_merge_and_overlap() {
        let mut r = Ranges::default();
        r.insert(0, 10);
        r.insert(20, 30);
        assert!(!r.overlaps(10, 20), "the gap between two ranges");
        assert!(r.overlaps(5, 6) && r.overlaps(15, 21) && r.overlaps(29, 40));
        r.insert(10, 20);
        assert_eq!(r.0.len(), 1, "{r:?}");
        r.insert(40, 50);
        r.insert(35, 45);
        assert_eq!(r.0.get(&35), Some(&50));
    }

    #[test]
    fn dsn_lookup_through_mappings() {
        let mut m = BTreeMap::new();
        m.insert(0, (100, 1000));
        m.insert(1000, (5000, 500));
        assert_eq!(dsn_at(&m, 10), Some(110));
        assert_eq!(dsn_at(&m, 1200), Some(5200));
        assert_eq!(dsn_at(&m, 1500), None);
    }

    #[test]
    fn relative_sequence_numbers_unwrap() {
        // ISN near the top of the space: relative numbers keep growing past the wrap.
        let base = u32::MAX - 10;
        assert_eq!(rel(base.wrapping_add(20), base, 15), 20);
        assert_eq!(rel(base, base, 0), 0);
    }
}
