//! The train's cars (the PROXY-LB paper, seeds.md §2; docs/models/cars.md): how each car's
//! passenger traffic reaches its server.
//!
//! - **Load balancer** (`[[balancer]]`, what KTX trains run): a car's plain TCP connection is
//!   given one carrier when it opens, by round robin, least connection, bandwidth or IP hash
//!   (the policies the paper lists, as OpenWrt mwan3 / Linux IPVS name them). A carrier down for
//!   the detection delay (mwan3's tracking: `interval` x `down` lost pings) is failed over: its
//!   cars move to a carrier that is up. With per-carrier masquerading (mwan3) the car's packets
//!   then carry another source address, the server resets the connection it does not know, and
//!   the passenger's application opens a new one (one handshake later, from slow start); with
//!   `failover = "keep-address"` the connection itself moves and recovers by its RTO.
//! - **MPTCP proxy** (`access` + `proxy` on an mptcp flow, the paper's proposal, as
//!   railpath-gateway does it): MPTCP from the server to the train's router, the passenger's TCP
//!   from the router over the in-car link, and the proxy between them reading from one socket
//!   into a bounded buffer and writing to the other. A full buffer stops the reading: the unread
//!   data keep their room in the MPTCP receive buffer and the window the server sees shrinks to
//!   zero (back-pressure, no unbounded queue). Reading again opens it, and the receiver says so
//!   when the window at least doubled from below half (Linux `tcp_cleanup_rbuf()`, net/ipv4/
//!   tcp.c). A server without MPTCP answers the MP_CAPABLE SYN without the option and the proxy
//!   falls back to plain TCP over the first path (RFC 8684 §3.1).

use super::common::{App, FlowOps};
use super::tcp::{TcpFlow, TcpParams};
use crate::mptcp::connection::MptcpFlow;
use crate::net::packet::Packet;
use crate::net::{Endpoint, Hop, Net, Side};
use crate::results::{CarFailover, CarStats, FlowSummary, ProxyStats, Series};
use railpath_core::Time;
use railpath_scenario::{BalancePolicy, Failover};
use sha2::{Digest, Sha256};
use std::collections::VecDeque;

/// The endpoint number of a relay's onward leg (the passenger's connection): the server side's
/// subflows are 0..16.
pub(crate) const ACCESS_SUB: u16 = 0x8000;

/// The `FlowControl` index that starts a balanced car's new connection after a failover.
pub(crate) const RECONNECTED: u32 = u32::MAX;

/// A load balancer during the run.
pub(crate) struct BalancerRt {
    pub policy: BalancePolicy,
    /// Scenario link index of each of its links.
    pub links: Vec<usize>,
    pub rates: Vec<f64>,
    /// Per link, the times its tracking sees it down: [outage start + detect, outage end).
    pub down: Vec<Vec<(Time, Time)>>,
    /// Connections it has placed so far (initial assignments and failovers): the round-robin
    /// position of the next (`railpath_scenario::assign`'s `order`).
    pub order: usize,
    /// Flow indices of its cars, in flow order.
    pub cars: Vec<usize>,
}

impl BalancerRt {
    /// Whether the tracking sees link `k` up at `now`.
    pub fn up(&self, k: usize, now: Time) -> bool {
        !self.down[k].iter().any(|&(a, b)| a <= now && now < b)
    }
}

/// A car's connection through a load balancer.
pub(crate) struct BalancedFlow {
    pub flow: Box<TcpFlow>,
    pub balancer: usize,
    /// The car's number among the scenario's cars (its client address for `ip-hash`, as the
    /// testbed numbers its client namespaces).
    pub car: usize,
    /// The balancer link it is on.
    pub link: Option<usize>,
    pub assigned: Option<usize>,
    /// Per balancer link: the hops of a connection's data and ACK routes, before the sink.
    pub hops: Vec<(Vec<Hop>, Vec<Hop>)>,
    /// What a new connection (after a reconnecting failover) is built from.
    pub params: TcpParams,
    pub failovers: Vec<CarFailover>,
    /// Counters of the connections it replaced: sent, retransmitted, timeouts.
    prior: (u64, u64, u64),
    pub link_names: Vec<String>,
    pub access: Option<String>,
    pub failover_mode: Failover,
    pub balancer_id: String,
}

/// Where a balanced car runs: its balancer, its number, and its balancer's links.
pub(crate) struct CarPlace {
    pub balancer: usize,
    pub balancer_id: String,
    pub car: usize,
    /// Per balancer link: the hops of a connection's data and ACK routes, before the sink.
    pub hops: Vec<(Vec<Hop>, Vec<Hop>)>,
    pub link_names: Vec<String>,
    pub access: Option<String>,
    pub failover: Failover,
}

impl BalancedFlow {
    pub fn new(flow: Box<TcpFlow>, params: TcpParams, place: CarPlace) -> BalancedFlow {
        BalancedFlow {
            flow,
            balancer: place.balancer,
            car: place.car,
            link: None,
            assigned: None,
            hops: place.hops,
            params: TcpParams { nbins: 0, ..params },
            failovers: Vec::new(),
            prior: (0, 0, 0),
            link_names: place.link_names,
            access: place.access,
            failover_mode: place.failover,
            balancer_id: place.balancer_id,
        }
    }

    /// Routes of the current connection over balancer link `k`.
    fn route(&self, k: usize, net: &mut Net) -> (u32, u32) {
        let (fwd, rev) = &self.hops[k];
        let end = |side| {
            Hop::Sink(Endpoint {
                flow: self.flow.idx,
                sub: self.flow.sub,
                side,
            })
        };
        let mut d = fwd.clone();
        d.push(end(Side::Receiver));
        let mut a = rev.clone();
        a.push(end(Side::Sender));
        (net.add_route(d), net.add_route(a))
    }

    /// The connection opens on link `k` (the balancer's pick when the car's flow starts).
    pub fn assign(&mut self, k: usize, net: &mut Net) {
        let (d, a) = self.route(k, net);
        self.flow.sender.route = d;
        self.flow.ack_route = a;
        self.link = Some(k);
        self.assigned = Some(k);
    }

    /// The balancer moves the car to link `k` at `now`. Returns when the new connection's data
    /// may start (reconnect: after its handshake), or None when the same connection goes on.
    pub fn fail_over(&mut self, k: usize, now: Time, net: &mut Net) -> Option<Time> {
        let from = self.link.map(|j| self.link_names[j].clone());
        self.failovers.push(CarFailover {
            t_s: now.secs_f64(),
            from: from.unwrap_or_default(),
            to: self.link_names[k].clone(),
        });
        self.link = Some(k);
        match self.failover_mode {
            Failover::KeepAddress => {
                let (d, a) = self.route(k, net);
                self.flow.sender.route = d;
                self.flow.ack_route = a;
                None
            }
            Failover::Reconnect => {
                let st = &self.flow.sender.stats;
                self.prior.0 += st.sent_packets;
                self.prior.1 += st.retransmitted_packets;
                self.prior.2 += st.rto_count;
                let sub = self.flow.sub + 1;
                let mut fresh = TcpFlow::new(self.flow.idx, &self.params, 0, 0);
                fresh.sub = sub;
                // The application asks for the rest (a finite transfer resumes where the
                // passenger's data stopped, as an HTTP range request does; a bulk one goes on).
                fresh.app.next = self.flow.delivered_bytes / fresh.app.mss as u64;
                fresh.delivered_bytes = self.flow.delivered_bytes;
                fresh.series = std::mem::take(&mut self.flow.series);
                fresh.start = self.flow.start;
                *self.flow = fresh;
                let (d, a) = self.route(k, net);
                self.flow.sender.route = d;
                self.flow.ack_route = a;
                // SYN (ACK direction), SYN/ACK (data direction), the request (ACK direction):
                // the server sends from then on.
                let one_way = |hops: &[Hop]| {
                    hops.iter()
                        .map(|h| match h {
                            Hop::Dir(d) => net.dirs[*d as usize].delay(),
                            _ => Time::ZERO,
                        })
                        .fold(Time::ZERO, |a, b| a + b)
                };
                let (fwd, rev) = &self.hops[k];
                let (f, r) = (one_way(fwd), one_way(rev));
                Some(now + r + f + r)
            }
        }
    }
}

impl FlowOps for BalancedFlow {
    fn start(&mut self, net: &mut Net) {
        self.flow.start(net)
    }
    #[inline]
    fn on_packet(&mut self, sub: u16, side: Side, p: &Packet, net: &mut Net) {
        self.flow.on_packet(sub, side, p, net)
    }
    fn on_timer(&mut self, sub: u16, side: u8, net: &mut Net) {
        self.flow.on_timer(sub, side, net)
    }
    fn control(&mut self, idx: u32, net: &mut Net) {
        if idx == RECONNECTED {
            // The new connection's handshake is done: the server sends.
            self.flow.start(net)
        } else {
            self.flow.control(idx, net)
        }
    }
    fn sample(&mut self, width: Time) {
        self.flow.sample(width)
    }
    fn summarize(&self, end: Time, net: &Net) -> (FlowSummary, Vec<Series>) {
        let balancer = self.balancer_id.as_str();
        let (mut s, series) = self.flow.summarize(end, net);
        s.sent_packets += self.prior.0;
        s.retransmitted_packets += self.prior.1;
        s.rto_count += self.prior.2;
        s.car = Some(CarStats {
            access: self.access.clone(),
            balancer: Some(balancer.to_string()),
            carrier: self.assigned.map(|k| self.link_names[k].clone()),
            failovers: self.failovers.clone(),
            proxy: None,
        });
        (s, series)
    }
}

/// The server's side of a proxied car: MPTCP, or plain TCP after a fallback.
pub(crate) enum Up {
    Mptcp(Box<MptcpFlow>),
    Tcp(Box<TcpFlow>),
}

/// A car behind the MPTCP proxy: the server's connection to the router (`up`), the router's
/// relay buffer, the passenger's TCP from the router (`down`).
pub(crate) struct RelayFlow {
    pub up: Up,
    pub down: Box<TcpFlow>,
    pub access: String,
    buffer: u64,
    /// Delivered in order by the server's side, not yet read by the proxy: (segment, bytes).
    unread: VecDeque<(u64, u32)>,
    unread_bytes: u64,
    /// Bytes the proxy has read from the server's side.
    read_total: u64,
    /// Bytes read by the proxy that the passenger's connection has not taken yet.
    held: u64,
    stats: RelayStats,
    verify: Option<Box<Verify>>,
    scratch: Vec<(u64, u32)>,
}

#[derive(Default)]
struct RelayStats {
    max_held: u64,
    max_unread: u64,
    window_updates: u64,
}

/// The payload check: each server segment's bytes are a function of its number; the passenger
/// hashes what arrives (through the relay's record of which server segment each of its
/// segments carries) and the server side hashes what it sent, over the same length.
struct Verify {
    seed: u64,
    /// Server segment carried by each passenger segment not yet delivered, from `base`.
    map: VecDeque<u64>,
    base: u64,
    sent: Sha256,
    sent_next: u64,
    received: Sha256,
    buf: Vec<u8>,
}

impl Verify {
    /// The payload of server segment `seg`, `len` bytes, into `buf`.
    fn payload(seed: u64, seg: u64, len: u32, buf: &mut Vec<u8>) {
        buf.clear();
        let mut x = seed ^ seg.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        while buf.len() < len as usize {
            // splitmix64
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^= z >> 31;
            buf.extend_from_slice(&z.to_le_bytes());
        }
        buf.truncate(len as usize);
    }
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

impl RelayFlow {
    pub fn new(
        mut up: Up,
        mut down: Box<TcpFlow>,
        access: String,
        buffer: u64,
        verify: bool,
        seed: u64,
    ) -> RelayFlow {
        match &mut up {
            Up::Mptcp(m) => {
                m.tap_deliveries();
                m.app_read = Some(0);
            }
            Up::Tcp(t) => {
                t.tap = Some(Vec::new());
                t.app_read = Some(0);
            }
        }
        down.app = App::fed(down.app.mss);
        down.sub = ACCESS_SUB;
        if verify {
            down.tap = Some(Vec::new());
        }
        RelayFlow {
            up,
            down,
            access,
            buffer,
            unread: VecDeque::new(),
            unread_bytes: 0,
            read_total: 0,
            held: 0,
            stats: RelayStats::default(),
            verify: verify.then(|| {
                Box::new(Verify {
                    seed,
                    map: VecDeque::new(),
                    base: 0,
                    sent: Sha256::new(),
                    sent_next: 0,
                    received: Sha256::new(),
                    buf: Vec::with_capacity(2048),
                })
            }),
            scratch: Vec::new(),
        }
    }

    /// What the server's side delivered joins the unread data; the proxy reads.
    fn after_up(&mut self, net: &mut Net) {
        self.scratch.clear();
        match &mut self.up {
            Up::Mptcp(m) => m.take_delivered(&mut self.scratch),
            Up::Tcp(t) => {
                if let Some(tap) = &mut t.tap {
                    self.scratch.append(tap);
                }
            }
        }
        for &(seg, len) in &self.scratch {
            self.unread.push_back((seg, len));
            self.unread_bytes += len as u64;
        }
        self.stats.max_unread = self.stats.max_unread.max(self.unread_bytes);
        self.read(net);
    }

    /// The passenger's side moved: its deliveries are checked, and the proxy reads again if
    /// its buffer drained.
    fn after_down(&mut self, net: &mut Net) {
        if let Some(v) = self.verify.as_mut() {
            if let Some(tap) = &mut self.down.tap {
                for (dseg, len) in tap.drain(..) {
                    // Delivered in order: dseg is the next one the map holds.
                    let useg = if dseg == v.base {
                        v.base += 1;
                        v.map.pop_front()
                    } else {
                        None
                    };
                    let useg = useg.unwrap_or(u64::MAX);
                    Verify::payload(v.seed, useg, len, &mut v.buf);
                    v.received.update(&v.buf);
                    let slen = match &self.up {
                        Up::Mptcp(m) => m.app.len_of(v.sent_next),
                        Up::Tcp(t) => t.app.len_of(v.sent_next),
                    };
                    Verify::payload(v.seed, v.sent_next, slen, &mut v.buf);
                    v.sent.update(&v.buf);
                    v.sent_next += 1;
                }
            }
        }
        self.read(net);
    }

    fn up_window(&self) -> u64 {
        match &self.up {
            Up::Mptcp(m) => m.receive_window(),
            Up::Tcp(t) => t.receive_window(),
        }
    }

    /// The proxy reads from the server's side into its buffer while the buffer has room, and
    /// the passenger's connection takes what its windows allow; until neither moves.
    fn read(&mut self, net: &mut Net) {
        self.held = self.down_fed();
        let fits =
            matches!(self.unread.front(), Some(&(_, len)) if self.held + len as u64 <= self.buffer);
        if !fits {
            // Nothing to read (most calls: an ACK from the car, data still out of order): what
            // the loop below leaves when nothing moves, without the windows it would compute
            // for a window update that only a read can trigger.
            self.stats.max_held = self.stats.max_held.max(self.held);
            self.set_app_read();
            return;
        }
        let clamp = self.up_window() + self.unread_bytes;
        let mut read_any = false;
        loop {
            self.held = self.down_fed();
            let mut moved = false;
            while let Some(&(seg, len)) = self.unread.front() {
                if self.held + len as u64 > self.buffer {
                    break;
                }
                self.unread.pop_front();
                self.unread_bytes -= len as u64;
                self.read_total += len as u64;
                self.held += len as u64;
                self.down.app.feed(len);
                if let Some(v) = self.verify.as_mut() {
                    v.map.push_back(seg);
                }
                moved = true;
            }
            self.stats.max_held = self.stats.max_held.max(self.held);
            if !moved {
                break;
            }
            read_any = true;
            self.down.push(net);
        }
        self.set_app_read();
        // Linux tcp_cleanup_rbuf(): after a read, a window update when what is left of the
        // window last advertised is at most half the buffer and the window now is at least
        // twice that.
        let left = match &self.up {
            Up::Mptcp(m) => m.advertised_left(),
            Up::Tcp(t) => t.advertised_left(),
        };
        let now = self.up_window();
        if read_any && left * 2 <= clamp && now > 0 && now >= 2 * left {
            self.stats.window_updates += 1;
            match &mut self.up {
                Up::Mptcp(m) => m.window_update(net),
                Up::Tcp(t) => t.emit_ack(net),
            }
        }
    }

    /// The server side's receiver learns what the proxy has read.
    fn set_app_read(&mut self) {
        match &mut self.up {
            Up::Mptcp(m) => m.app_read = Some(self.read_total),
            Up::Tcp(t) => t.app_read = Some(self.read_total),
        }
    }

    fn down_fed(&self) -> u64 {
        self.down.app.fed.as_ref().map_or(0, |f| f.bytes)
    }
}

impl FlowOps for RelayFlow {
    fn start(&mut self, net: &mut Net) {
        self.down.start(net);
        match &mut self.up {
            Up::Mptcp(m) => m.start(net),
            Up::Tcp(t) => t.start(net),
        }
    }

    fn on_packet(&mut self, sub: u16, side: Side, p: &Packet, net: &mut Net) {
        if sub == ACCESS_SUB {
            self.down.on_packet(sub, side, p, net);
            self.after_down(net);
        } else {
            match &mut self.up {
                Up::Mptcp(m) => m.on_packet(sub, side, p, net),
                Up::Tcp(t) => t.on_packet(sub, side, p, net),
            }
            self.after_up(net);
        }
    }

    fn on_timer(&mut self, sub: u16, side: u8, net: &mut Net) {
        if sub == ACCESS_SUB {
            self.down.on_timer(sub, side, net);
            self.after_down(net);
        } else {
            match &mut self.up {
                Up::Mptcp(m) => m.on_timer(sub, side, net),
                Up::Tcp(t) => t.on_timer(sub, side, net),
            }
            self.after_up(net);
        }
    }

    fn control(&mut self, idx: u32, net: &mut Net) {
        match &mut self.up {
            Up::Mptcp(m) => m.control(idx, net),
            Up::Tcp(t) => t.control(idx, net),
        }
        self.after_up(net);
    }

    fn sample(&mut self, width: Time) {
        self.down.sample(width);
        match &mut self.up {
            Up::Mptcp(m) => m.sample(width),
            Up::Tcp(t) => t.sample(width),
        }
    }

    /// The server side's summary and series (its subflows, its congestion windows), with the
    /// flow's goodput the passenger's: what arrived at the car.
    fn summarize(&self, end: Time, net: &Net) -> (FlowSummary, Vec<Series>) {
        let (mut s, mut series) = match &self.up {
            Up::Mptcp(m) => m.summarize(end, net),
            Up::Tcp(t) => t.summarize(end, net),
        };
        let (d, dseries) = self.down.summarize(end, net);
        let server_goodput = s.goodput_bps;
        s.goodput_bps = d.goodput_bps;
        s.delivered_bytes = d.delivered_bytes;
        s.fct_s = d.fct_s;
        for x in series.iter_mut() {
            if x.subflow.is_empty() && x.metric == "goodput_bps" {
                if let Some(g) = dseries.iter().find(|y| y.metric == "goodput_bps") {
                    x.values = g.values.clone();
                }
            }
        }
        let fallback = matches!(self.up, Up::Tcp(_));
        let (sent, received) = match &self.verify {
            Some(v) => (
                Some(hex(&v.sent.clone().finalize())),
                Some(hex(&v.received.clone().finalize())),
            ),
            None => (None, None),
        };
        s.car = Some(CarStats {
            access: Some(self.access.clone()),
            balancer: None,
            carrier: None,
            failovers: Vec::new(),
            proxy: Some(ProxyStats {
                fallback,
                buffer_bytes: self.buffer,
                max_buffered_bytes: self.stats.max_held,
                max_unread_bytes: self.stats.max_unread,
                window_updates: self.stats.window_updates,
                server_goodput_bps: server_goodput,
                access_srtt_ms: d.srtt_ms,
                access_retransmitted_packets: d.retransmitted_packets,
                sha256_sent: sent,
                sha256_received: received,
            }),
        });
        (s, series)
    }
}
