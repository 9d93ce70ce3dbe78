//! A single-path TCP flow: a sender and a receiver joined by routes, the application above
//! them (a bulk or finite transfer) and per-flow statistics; with vertical handoffs (and TCP-FS)
//! when it moves between links.

use super::common::{arm, take_wake, App, FlowOps, FlowSeries};
use super::handoff::{HandoffStep, Handoffs};
use crate::net::packet::{flags, Kind, Packet};
use crate::net::{Net, Side};
use crate::results::{FlowSummary, HandoffStats, Series};
use crate::tcp::cc::{self, Coupling, Window};
use crate::tcp::receiver::{AckDecision, ReceiverConfig, TcpReceiver};
use crate::tcp::sender::{Room, SenderConfig, TcpSender};
use railpath_core::Time;
use railpath_scenario::{TcpCc, TcpConfig};

/// What a tcp endpoint pair is built from: the narrow part of a flow's settings its sender,
/// receiver and application need (kept by a car's connection to open a new one).
#[derive(Debug, Clone)]
pub(crate) struct TcpParams {
    pub id: String,
    pub cc: TcpCc,
    pub start: Time,
    /// Bytes to transfer; 0 = bulk.
    pub bytes: u64,
    pub tcp: TcpConfig,
    pub seed: u64,
    /// Time-series bins to reserve room for.
    pub nbins: usize,
}

/// Send through `net`, noting data packets in the handoff traces.
#[inline(always)]
fn send_noted(net: &mut Net, h: &mut Option<Box<Handoffs>>, mss: u32, p: Packet) {
    if let Some(h) = h {
        h.note_sent(&p, mss);
    }
    net.send(p);
}

pub(crate) struct TcpFlow {
    pub idx: u32,
    pub id: String,
    pub cc_name: String,
    pub start: Time,
    pub started: bool,
    pub app: App,
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub ack_route: u32,
    /// Pacing release the sender is waiting for.
    pace_wait: Option<Time>,
    pub delivered_bytes: u64,
    pub completed_at: Option<Time>,
    pub series: FlowSeries,
    /// Vertical handoffs (and TCP-FS), if the flow has any.
    pub handoffs: Option<Box<Handoffs>>,
    /// The endpoint number its routes and timers carry: 0, or the relay's onward leg, or a
    /// reconnected car's connection (packets and timers of an earlier one are ignored).
    pub sub: u16,
    /// Segments the receiver delivered in order, (segment, bytes), when someone listens (a
    /// relay reading them, a digest).
    pub tap: Option<Vec<(u64, u32)>>,
    /// Bytes the application has read, when it reads at its own pace (a relay): delivered data
    /// it has not read keep their room in the receive buffer, and the window shrinks by them.
    pub app_read: Option<u64>,
    /// The right edge of the window the last ACK advertised, in delivered bytes.
    adv_edge: u64,
}

impl TcpFlow {
    /// Endpoint pair `idx` of the world, sending on `data_route` and acknowledging on
    /// `ack_route`.
    pub fn new(idx: u32, p: &TcpParams, data_route: u32, ack_route: u32) -> TcpFlow {
        let tcp = &p.tcp;
        let scfg = SenderConfig::from_tcp(tcp);
        let w = Window::new(scfg.initial_window, scfg.mss);
        let params = cc::CcParams {
            hystart: tcp.hystart,
            header_bytes: tcp.header_bytes,
            rng: railpath_core::Rng::stream(p.seed, &format!("cc/{}/0", p.id)),
        };
        let cc = cc::build(p.cc, &w, params);
        let sender = TcpSender::new(scfg, cc, data_route, tcp.receive_window_bytes);
        let receiver = TcpReceiver::new(ReceiverConfig::from_tcp(tcp));
        TcpFlow {
            idx,
            id: p.id.clone(),
            cc_name: p.cc.as_str().to_string(),
            start: p.start,
            started: false,
            app: App::new(p.bytes, tcp.mss_bytes),
            sender,
            receiver,
            ack_route,
            pace_wait: None,
            delivered_bytes: 0,
            completed_at: None,
            series: FlowSeries {
                goodput_bps: Vec::with_capacity(p.nbins),
                cwnd_bytes: Vec::with_capacity(p.nbins),
                srtt_ms: Vec::with_capacity(p.nbins),
                ..Default::default()
            },
            handoffs: None,
            sub: 0,
            tap: None,
            app_read: None,
            adv_edge: 0,
        }
    }

    /// Send what the windows allow: retransmissions first, then new data.
    pub(crate) fn push(&mut self, net: &mut Net) {
        let now = net.now();
        self.pace_wait = None;
        let (h, mss) = (&mut self.handoffs, self.app.mss);
        let mut out = |p: Packet| send_noted(net, h, mss, p);
        let mut room = self.sender.retransmit_lost(now, &mut out);
        let mut sent_new = false;
        if room == Room::Yes {
            loop {
                room = self.sender.room(now);
                if room != Room::Yes {
                    break;
                }
                if !self.app.has_data() {
                    self.sender.mark_app_limited();
                    break;
                }
                if !self.sender.rwnd_allows_new() {
                    break;
                }
                let (dsn, len) = self.app.take().expect("has data");
                self.sender.send_new_in_burst(dsn, len, now, &mut out);
                sent_new = true;
            }
        }
        if sent_new {
            self.sender.end_burst(now);
        }
        if let Room::PacedUntil(t) = room {
            self.pace_wait = Some(t);
        }
        if self.app.has_data() {
            self.sender.arm_persist(now);
        }
        self.arm_sender(net);
    }

    fn arm_sender(&mut self, net: &mut Net) {
        let d = match (self.sender.xmit_deadline(), self.pace_wait) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        arm(
            net,
            &mut self.sender.armed,
            d,
            self.idx,
            self.sub,
            Side::Sender,
        );
    }

    /// Send an ACK now, unless TCP-FS holds it.
    fn send_ack(&mut self, net: &mut Net) {
        if let Some(fs) = self.handoffs.as_mut().and_then(|h| h.fs.as_mut()) {
            if !fs.may_ack(net.now()) {
                return;
            }
        }
        self.emit_ack(net);
    }

    /// Put an ACK on the wire; its window is TCP-FS's (zero while frozen). ACKs carry the
    /// receiver's clock as TSval (RFC 7323), which the sender echoes on data.
    pub(crate) fn emit_ack(&mut self, net: &mut Net) {
        let mut ack = self.receiver.build_ack(self.ack_route);
        if self.app_read.is_some() {
            let w = self.receive_window();
            ack.rwnd = Packet::window(w);
            self.adv_edge = self.delivered_bytes + w;
        }
        if let Some(fs) = self.handoffs.as_ref().and_then(|h| h.fs.as_ref()) {
            ack.rwnd = Packet::window(fs.window(self.receiver.rwnd()));
        }
        ack.ts = net.now();
        net.send(ack);
    }

    /// With `tcp_fs.hold_closed`, wake the receiver when the holding ends (a delayed-ACK wake
    /// armed earlier re-arms it).
    fn arm_reopen(&mut self, net: &mut Net) {
        let t = self
            .handoffs
            .as_ref()
            .and_then(|h| h.fs.as_ref())
            .and_then(|fs| fs.reopen_at());
        if t.is_some() {
            arm(
                net,
                &mut self.receiver.armed,
                t,
                self.idx,
                self.sub,
                Side::Receiver,
            );
        }
    }
}

impl FlowOps for TcpFlow {
    fn start(&mut self, net: &mut Net) {
        self.started = true;
        self.push(net);
    }

    // Always inlined: the plain tcp flow's hot path, which the balanced and relayed flows call
    // too (out of line it cost 0.5% more instructions on the TCP bench case).
    #[inline(always)]
    fn on_packet(&mut self, sub: u16, side: Side, p: &Packet, net: &mut Net) {
        if sub != self.sub {
            // A packet of a connection this flow has replaced.
            return;
        }
        let now = net.now();
        match side {
            Side::Sender => {
                debug_assert_eq!(p.kind, Kind::Ack);
                self.sender.on_ack(p, now, &Coupling::NONE);
                self.push(net);
            }
            Side::Receiver => {
                if p.flags & flags::WINDOW_UPDATE != 0 && p.len == 0 {
                    // A zero-window probe: answered with the current window.
                    self.send_ack(net);
                    return;
                }
                if let Some(fs) = self.handoffs.as_mut().and_then(|h| h.fs.as_mut()) {
                    fs.on_data(now, p.ts_ecr);
                }
                let (bytes, series_bytes) = (&mut self.delivered_bytes, &mut self.series.bin_bytes);
                let tap = &mut self.tap;
                let decision = self.receiver.on_data(p, now, &mut |seg, len, _| {
                    *bytes += len as u64;
                    *series_bytes += len as u64;
                    if let Some(t) = tap {
                        t.push((seg, len));
                    }
                });
                if self.completed_at.is_none()
                    && self.app.total_bytes > 0
                    && self.delivered_bytes >= self.app.total_bytes
                {
                    self.completed_at = Some(now);
                }
                match decision {
                    AckDecision::Now => self.send_ack(net),
                    AckDecision::Delayed(t) => {
                        arm(
                            net,
                            &mut self.receiver.armed,
                            Some(t),
                            self.idx,
                            self.sub,
                            Side::Receiver,
                        );
                    }
                }
            }
        }
    }

    fn on_timer(&mut self, sub: u16, side: u8, net: &mut Net) {
        if sub != self.sub {
            return;
        }
        let now = net.now();
        if side == Side::Sender as u8 {
            if !take_wake(&mut self.sender.armed, now) {
                return;
            }
            let has_data = self.app.has_data();
            let app = &mut self.app;
            let (h, mss) = (&mut self.handoffs, app.mss);
            let mut out = |p: Packet| send_noted(net, h, mss, p);
            self.sender.on_timer(now, &mut out, has_data, || app.take());
            self.push(net);
        } else {
            if !take_wake(&mut self.receiver.armed, now) {
                return;
            }
            let reopen = self
                .handoffs
                .as_ref()
                .and_then(|h| h.fs.as_ref())
                .and_then(|fs| fs.reopen_at())
                .is_some_and(|t| t <= now);
            if reopen {
                // `hold_closed`: the holding is over; this ACK reopens the window.
                self.send_ack(net);
            } else if self.receiver.on_timer(now) {
                self.send_ack(net);
                self.arm_reopen(net);
            } else {
                let d = self.receiver.delack_deadline();
                arm(
                    net,
                    &mut self.receiver.armed,
                    d,
                    self.idx,
                    self.sub,
                    Side::Receiver,
                );
                self.arm_reopen(net);
            }
        }
    }

    /// A vertical-handoff step (scheduled by the world).
    fn control(&mut self, idx: u32, net: &mut Net) {
        let now = net.now();
        let Some(h) = self.handoffs.as_mut() else {
            return;
        };
        let Some(&(_, step)) = h.steps.get(idx as usize) else {
            return;
        };
        match step {
            HandoffStep::Route(j) => (self.sender.route, self.ack_route) = h.routes[j],
            HandoffStep::Start(k) => {
                if let Some(fs) = h.fs.as_mut() {
                    fs.start(now);
                    h.records[k].frozen_s = Some(now.secs_f64());
                    // The zero window goes out at once (a window update).
                    self.send_ack(net);
                }
            }
            HandoffStep::Complete(k) => {
                if let Some(fs) = h.fs.as_mut() {
                    let until = fs.complete(now);
                    let r = &mut h.records[k];
                    r.reopened_s = Some(now.secs_f64());
                    r.hold_until_s = Some(until.secs_f64());
                    r.receiver_rto_ms = fs.records.last().map(|x| x.rto.ms_f64());
                    if fs.reopen_at().is_some() {
                        // `hold_closed`: the window stays shut; it reopens when holding ends.
                        self.arm_reopen(net);
                    } else {
                        // The window update that ends the freeze: holding starts after it.
                        self.emit_ack(net);
                    }
                }
            }
        }
    }

    fn sample(&mut self, width: Time) {
        if let Some(h) = self.handoffs.as_mut() {
            h.sample(self.sender.ssthresh() as f64 * self.sender.cfg.mss as f64);
        }
        let s = &mut self.series;
        let w = width.secs_f64();
        s.goodput_bps.push(if w > 0.0 {
            s.bin_bytes as f64 * 8.0 / w
        } else {
            0.0
        });
        s.bin_bytes = 0;
        s.cwnd_bytes
            .push(self.sender.cwnd() as f64 * self.sender.cfg.mss as f64);
        s.srtt_ms.push(self.sender.srtt().ms_f64());
        if self.sender.srtt() > Time::ZERO {
            s.rto_sum_ms += self.sender.base_rto().ms_f64();
            s.rto_samples += 1;
        }
    }

    fn summarize(&self, end: Time, _net: &Net) -> (FlowSummary, Vec<Series>) {
        let stop = self.completed_at.unwrap_or(end);
        let active = stop.saturating_sub(self.start).secs_f64();
        let st = &self.sender.stats;
        let summary = FlowSummary {
            id: self.id.clone(),
            kind: "tcp".into(),
            cc: self.cc_name.clone(),
            scheduler: None,
            mechanisms: Vec::new(),
            goodput_bps: if active > 0.0 {
                self.delivered_bytes as f64 * 8.0 / active
            } else {
                0.0
            },
            delivered_bytes: self.delivered_bytes,
            sent_packets: st.sent_packets,
            retransmitted_packets: st.retransmitted_packets,
            rto_count: st.rto_count,
            handover_goodput_bps: None,
            fct_s: self.completed_at.map(|t| (t - self.start).secs_f64()),
            srtt_ms: if self.sender.srtt() > Time::ZERO {
                Some(self.sender.srtt().ms_f64())
            } else {
                None
            },
            rto_ms: if self.series.rto_samples > 0 {
                Some(self.series.rto_sum_ms / self.series.rto_samples as f64)
            } else {
                None
            },
            subflows: None,
            receive_buffer: None,
            send_buffer: None,
            send_buffer_held: None,
            reorder_delay_ms: None,
            pha: None,
            handoffs: self.handoffs.as_ref().map(|h| {
                let fs = h.fs.as_ref();
                HandoffStats {
                    events: h.records.clone(),
                    window_probes: st.window_probes,
                    fast_recoveries: st.fast_recoveries,
                    zero_window_acks: fs.map_or(0, |f| f.zero_window_acks),
                    held_acks: fs.map_or(0, |f| f.held_acks),
                }
            }),
            bloat: None,
            udp: None,
            car: None,
        };
        let mk = |metric: &'static str, values: &Vec<f64>| Series {
            flow: self.id.clone(),
            subflow: String::new(),
            metric,
            values: values.clone(),
        };
        let mut series = vec![
            mk("goodput_bps", &self.series.goodput_bps),
            mk("cwnd_bytes", &self.series.cwnd_bytes),
            mk("srtt_ms", &self.series.srtt_ms),
        ];
        if let Some(h) = &self.handoffs {
            series.push(mk("ssthresh_bytes", &h.ssthresh_bytes));
            series.push(mk("seq_bytes", &h.seq_bytes));
            series.push(mk("sent_bytes", &h.sent_bytes));
        }
        (summary, series)
    }
}

impl TcpFlow {
    /// What is left of the window the last ACK advertised, bytes.
    pub(crate) fn advertised_left(&self) -> u64 {
        self.adv_edge.saturating_sub(self.delivered_bytes)
    }

    /// The window the receiver would advertise now, bytes.
    pub(crate) fn receive_window(&self) -> u64 {
        let unread = self
            .app_read
            .map_or(0, |r| self.delivered_bytes.saturating_sub(r));
        self.receiver.rwnd().saturating_sub(unread)
    }
}
