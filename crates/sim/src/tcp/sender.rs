//! The TCP sender: a segment scoreboard with Linux-like loss detection and recovery.
//!
//! Sources, by mechanism:
//! - RTT estimation and the retransmission timer: RFC 6298 (SRTT/RTTVAR, RTO = SRTT +
//!   max(G, 4 RTTVAR) clamped to [min_rto, max_rto], exponential backoff, Karn's rule), with RTT
//!   samples taken as Linux `tcp_clean_rtx_queue()`/`tcp_ack_update_rtt()` do: from the oldest
//!   newly acked never-retransmitted segment, else from the newest SACKed one, else from the
//!   timestamp echo (RFC 7323) when the ACK advances snd_una.
//! - Loss detection with SACK: RACK-TLP, RFC 8985 (Linux net/ipv4/tcp_recovery.c): a segment is
//!   lost when a segment sent after it has been delivered and it has been outstanding for longer
//!   than RACK.rtt + reo_wnd; reo_wnd = min_rtt/4 unless no reordering was seen and we are in
//!   recovery or DupThresh segments are SACKed (then 0). Tail loss probes (RFC 8985 section 7,
//!   Linux `tcp_schedule_loss_probe()`/`tcp_send_loss_probe()`): PTO = 2 SRTT (+ min RTO when one
//!   packet is outstanding), capped by the RTO.
//! - Alternatively RFC 6675 DupThresh loss marking (`loss_detection = "dupthresh"`), or
//!   (`"dupthresh-adaptive"`) with the threshold adapted to the reordering SACKs reveal as Linux did before RACK (3.x
//!   `tcp_sacktag_one()` -> `tcp_update_reordering()`, net/ipv4/tcp_input.c): a never
//!   retransmitted segment acknowledged below the highest SACKed one raises `reordering` to
//!   that distance (at most `tcp.max_reordering`: Linux `sysctl_tcp_max_reordering`, 300, or
//!   3.5's `TCP_MAX_REORDERING`, 127), and a segment is lost only with more than `reordering`
//!   SACKed segments above it. F-RTO and the undo of spurious recoveries are not
//!   modelled.
//! - Without SACK: NewReno, RFC 6582 (duplicate ACKs emulate SACKed segments as Linux's
//!   `tcp_add_reno_sack()` does; the head is retransmitted on the third and on partial ACKs).
//!   More duplicate ACKs than segments out beyond the holes mean reordering (or duplicates of
//!   spurious retransmissions) and raise the duplicate-ACK threshold to the segments out, as
//!   Linux `tcp_check_reno_reordering()`/`tcp_limit_reno_sacked()`; a timeout while few
//!   duplicates were seen brings it back (`tcp_enter_loss()`). Recovery and Loss end only
//!   once the cumulative ACK passes the recovery point (snd_una > high_seq, not >=): Linux
//!   `tcp_is_non_sack_preventing_reopen()` (net/ipv4/tcp_input.c, "for Reno it is a MUST to
//!   prevent false fast retransmits"; RFC 6582 section 4), so the duplicate ACKs that a
//!   timeout's go-back-N copies of data already received cause start no fast retransmit.
//! - Window reduction in recovery: Proportional Rate Reduction, RFC 6937, as Linux
//!   `tcp_cwnd_reduction()`; recovery ends with cwnd = ssthresh (`tcp_end_cwnd_reduction()`).
//! - Retransmission timeout: Linux `tcp_enter_loss()`: every un-SACKed segment marked lost,
//!   cwnd = 1, slow start, retransmissions in sequence order. F-RTO and undo are not modelled.
//!   ssthresh is cut once per loss episode (Linux: only on the first timeout, or when an RTT
//!   sample has cleared the backoff since); `tcp.timeout_ssthresh = "every-timeout"` cuts it
//!   at every timeout as ns-2's `TcpAgent::timeout()` does (`slowdown(CLOSE_SSTHRESH_HALF |
//!   CLOSE_CWND_RESTART)`, ns-2 tcp.cc), so a backed-off timeout at cwnd 1 sets it to 2.
//! - Delivery-rate sampling for BBR: Linux net/ipv4/tcp_rate.c
//!   (draft-cheng-iccrg-delivery-rate-estimation).
//! - A zero receive window: no new data; the persist timer (RFC 9293 3.8.6.1, Linux
//!   `tcp_probe_timer()`/`tcp_xmit_probe_skb()`) sends a probe without data every RTO, backed
//!   off, while nothing is outstanding, and the peer's answer carries its window.
//! - Timestamps (RFC 7323): data segments echo the newest TSval of the peer's ACKs, which lets a
//!   receiver measure the RTT (Linux `tcp_rcv_rtt_measure_ts()`).
//! - Pacing (when the congestion control asks for it): one packet every size/rate, like Linux's
//!   internal pacing; TSO/GSO bursts are not modelled.
//!
//! Sequence numbers count segments (every segment but a finite flow's last carries a full MSS);
//! the scoreboard is a ring of per-segment state from snd_una to snd_nxt, whose SACKED marks are
//! also kept as bits ([`super::sacked`]) so that RACK's walk and the SACK update pass SACKed runs
//! without reading their records, as Linux's RACK walks a list that SACKed skbs have left.

use super::cc::{
    AckInfo, CaState, CongestionControl, Coupling, CwndEvent, Hooks, RateSample, Window,
};
use super::sacked::SackedBits;
use crate::net::packet::{flags, unwrap_seg, Kind, Packet};
use railpath_core::Time;
use railpath_scenario::{LossDetection, RtoFormula, TcpConfig, TimeoutSsthresh};
use std::collections::{BTreeMap, VecDeque};

const SACKED: u8 = 1;
const LOST: u8 = 2;
/// A retransmission of this segment is in flight.
const RETRANS: u8 = 4;
const EVER_RETRANS: u8 = 8;

/// RFC 6675 DupThresh (Linux `sysctl_tcp_reordering`, the initial `tp->reordering`).
const DUPTHRESH: u32 = 3;
/// RFC 6298 clock granularity G.
const CLOCK_GRANULARITY: Time = Time::from_ms(1);
/// Linux `TCP_RTO_MIN` added to the PTO when a single packet is outstanding (delayed-ACK slack).
const TLP_SINGLE_PACKET_SLACK: Time = Time::from_ms(200);

/// A segment sent and not yet cumulatively acknowledged: 32 bytes aligned to 32, two to a cache
/// line, as a thousand flows keep a hundred thousand of them and read each back an RTT after
/// writing it (docs/performance.md, seventh and fourteenth rounds). The payload length fits 16
/// bits (a packet's does), and the delivered count is kept in 32 bits as Linux keeps it
/// (`tcp_skb_cb.tx.delivered`, a `u32`), read back near the sender's own count ([`unwrap_seg`]:
/// a segment's count at send is at most a window behind it), so it reads back exactly past 2^32
/// delivered segments too. The rate sample's two times at send (Linux `tx.delivered_mstamp`
/// and `tx.first_tx_mstamp`) are kept as how long before `xmit` they were, in nanoseconds, when
/// both are less than `u32::MAX` (4.3 s) before it; otherwise the record says [`FAR`] and the
/// times themselves are in the sender's `far_times` under the segment's number. Either way
/// they read back exactly ([`TcpSender::rate_times`]).
#[derive(Debug, Clone, Copy, PartialEq)]
#[repr(align(32))]
struct Seg {
    xmit: Time,
    dsn: u64,
    delivered: u32,
    /// `xmit - delivered_time` (the sender's last delivery before the segment was (re)sent).
    since_delivered: u32,
    /// `xmit - first_tx_time` (the start of the send window the segment was sent in).
    since_first_tx: u32,
    len: u16,
    flags: u8,
    app_limited: bool,
}

/// A record's `since_delivered` when its rate times are in `far_times`.
const FAR: u32 = u32::MAX;

/// Which timer holds the single retransmission-timer slot (Linux `icsk_pending`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum XmitTimer {
    Rto,
    Probe,
    Reorder,
    /// Zero-window persist timer (nothing outstanding).
    Persist,
}

/// Static configuration of a sender.
#[derive(Debug, Clone)]
pub struct SenderConfig {
    pub mss: u32,
    pub header: u32,
    pub initial_window: u32,
    pub min_rto: Time,
    pub initial_rto: Time,
    pub max_rto: Time,
    pub sack: bool,
    pub rack: bool,
    /// DupThresh mode: raise the threshold to the reordering seen (`dupthresh-adaptive`).
    pub adaptive: bool,
    pub tlp: bool,
    /// RTO = SRTT + max(4 RTTVAR, min_rto) as Linux `__tcp_set_rto()` instead of RFC 6298's
    /// max(SRTT + 4 RTTVAR, min_rto).
    pub linux_rto: bool,
    /// A fixed send buffer, segments: no new data while this many are sent and not acknowledged
    /// (`tcp.send_buffer_bytes`; ns-3's `TcpSocket::SndBufSize`).
    pub send_buffer_segs: Option<u32>,
    /// Cut ssthresh at every retransmission timeout (ns-2), not once per episode (Linux).
    pub ssthresh_every_timeout: bool,
    /// The most a detected reordering raises the threshold, packets (`tcp.max_reordering`).
    pub max_reordering: u32,
}

impl SenderConfig {
    pub fn from_tcp(c: &TcpConfig) -> SenderConfig {
        SenderConfig {
            mss: c.mss_bytes,
            header: c.header_bytes,
            initial_window: c.initial_window,
            min_rto: Time::from_ms_f64(c.min_rto_ms),
            initial_rto: Time::from_ms_f64(c.initial_rto_ms),
            max_rto: Time::from_ms_f64(c.max_rto_ms),
            sack: c.sack,
            rack: c.loss_detection == LossDetection::Rack,
            adaptive: c.loss_detection == LossDetection::DupthreshAdaptive,
            tlp: c.tlp && c.sack,
            linux_rto: c.rto_formula == RtoFormula::Linux,
            send_buffer_segs: c
                .send_buffer_bytes
                .map(|b| (b / c.mss_bytes as u64).clamp(1, u32::MAX as u64) as u32),
            ssthresh_every_timeout: c.timeout_ssthresh == TimeoutSsthresh::EveryTimeout,
            max_reordering: c.max_reordering,
        }
    }
}

/// Counters reported in summaries.
#[derive(Debug, Clone, Copy, Default)]
pub struct SenderStats {
    pub sent_packets: u64,
    pub retransmitted_packets: u64,
    pub rto_count: u64,
    pub tlp_count: u64,
    pub fast_recoveries: u64,
    /// Zero-window probes sent.
    pub window_probes: u64,
}

/// Whether the sender may put a new segment on the wire now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    Yes,
    /// The window (congestion or receive) is full.
    No,
    /// Pacing holds the next packet until this time.
    PacedUntil(Time),
}

pub struct TcpSender {
    pub cfg: SenderConfig,
    pub w: Window,
    cc: Box<dyn CongestionControl>,
    /// Does `cc` pace (BBR)? Asked once: an algorithm paces always or never (see
    /// [`CongestionControl::pacing_rate_bps`]), and unpaced ones skip the call per packet.
    paces: bool,
    /// Which per-ACK hooks `cc` implements, asked once ([`CongestionControl::hooks`]).
    hooks: Hooks,
    pub state: CaState,
    /// Route the data packets take.
    pub route: u32,
    snd_una: u64,
    snd_nxt: u64,
    segs: VecDeque<Seg>,
    /// The rate times at send of the segments whose record says [`FAR`], by segment number.
    far_times: BTreeMap<u64, (Time, Time)>,
    /// The SACKED marks of `segs` by sequence number, for the walks to pass SACKed runs by.
    sacked_bits: SackedBits,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    /// Lowest sequence that may hold a lost, not yet retransmitted segment.
    retx_hint: u64,
    /// Recovery point (RFC 6582 `recover`, Linux `high_seq`).
    high_seq: u64,
    /// Duplicate ACKs that start a fast retransmit without SACK (Linux `tp->reordering`).
    reordering: u32,
    /// Highest SACKed sequence + 1.
    highest_sacked: u64,
    // RTT (RFC 6298)
    srtt: Time,
    rttvar: Time,
    rto: Time,
    backoff: u32,
    min_rtt: Time,
    // RACK (RFC 8985)
    rack_xmit: Time,
    rack_end_seq: u64,
    rack_rtt: Time,
    rack_reord: bool,
    // TLP
    tlp_high_seq: Option<u64>,
    // Timers
    xmit_timer: Option<(Time, XmitTimer)>,
    pacing_next: Time,
    // PRR (RFC 6937)
    prr_delivered: u32,
    prr_out: u32,
    prior_cwnd: u32,
    // Delivery rate (tcp_rate.c)
    delivered: u64,
    delivered_time: Time,
    first_tx_time: Time,
    app_limited: u64,
    lost_total: u64,
    // cwnd-limited tracking (Linux tcp_cwnd_validate)
    cwnd_limited: bool,
    max_in_flight: u32,
    /// Receive window advertised by the peer, bytes.
    snd_wnd: u64,
    /// When false, the owner (MPTCP) enforces the receive window at the data level.
    pub use_rwnd: bool,
    /// Persist-timer backoff (probes sent since the window was last open).
    persist_backoff: u32,
    /// Newest TSval of the peer's ACKs, echoed on data (RFC 7323).
    peer_ts: Time,
    pub stats: SenderStats,
    /// Start of the current wake-up, for the owner's timer bookkeeping.
    pub armed: Option<Time>,
    /// Packets delivered since the last loss, and between the last two losses (OLIA).
    pub delivered_since_loss: u64,
    pub delivered_between_losses: u64,
    /// Tests: every ACK through the full path (see [`TcpSender::on_clean_ack`]).
    #[cfg(test)]
    full_path_only: bool,
    /// Tests: ACKs that took [`TcpSender::on_clean_ack`].
    #[cfg(test)]
    clean_acks: u64,
}

/// What an ACK did, for the owner (MPTCP needs the newly acked DSNs; TCP only the count).
#[derive(Debug, Clone, Copy, Default)]
pub struct AckOutcome {
    /// Segments newly cumulatively acked or SACKed.
    pub newly_acked: u32,
    /// Did the ACK advance snd_una?
    pub advanced: bool,
}

impl TcpSender {
    pub fn new(
        cfg: SenderConfig,
        cc: Box<dyn CongestionControl>,
        route: u32,
        rwnd: u64,
    ) -> TcpSender {
        let w = Window::new(cfg.initial_window, cfg.mss);
        let rto = cfg.initial_rto;
        let paces = cc.pacing_rate_bps().is_some();
        let hooks = cc.hooks();
        TcpSender {
            w,
            cc,
            paces,
            hooks,
            state: CaState::Open,
            route,
            snd_una: 0,
            snd_nxt: 0,
            segs: VecDeque::with_capacity(16),
            far_times: BTreeMap::new(),
            sacked_bits: SackedBits::default(),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            retx_hint: 0,
            high_seq: 0,
            reordering: DUPTHRESH,
            highest_sacked: 0,
            srtt: Time::ZERO,
            rttvar: Time::ZERO,
            rto,
            backoff: 0,
            min_rtt: Time::MAX,
            rack_xmit: Time::ZERO,
            rack_end_seq: 0,
            rack_rtt: Time::ZERO,
            rack_reord: false,
            tlp_high_seq: None,
            xmit_timer: None,
            pacing_next: Time::ZERO,
            prr_delivered: 0,
            prr_out: 0,
            prior_cwnd: 0,
            delivered: 0,
            delivered_time: Time::ZERO,
            first_tx_time: Time::ZERO,
            app_limited: 0,
            lost_total: 0,
            cwnd_limited: false,
            max_in_flight: 0,
            snd_wnd: rwnd,
            use_rwnd: true,
            persist_backoff: 0,
            peer_ts: Time::ZERO,
            stats: SenderStats::default(),
            armed: None,
            delivered_since_loss: 0,
            delivered_between_losses: 0,
            #[cfg(test)]
            full_path_only: false,
            #[cfg(test)]
            clean_acks: 0,
            cfg,
        }
    }

    // ---- observers ----

    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }
    pub fn packets_out(&self) -> u32 {
        (self.snd_nxt - self.snd_una) as u32
    }
    /// Linux `tcp_packets_in_flight()`: packets_out - (sacked_out + lost_out) + retrans_out.
    pub fn in_flight(&self) -> u32 {
        (self.packets_out() + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }
    pub fn srtt(&self) -> Time {
        self.srtt
    }
    pub fn rttvar(&self) -> Time {
        self.rttvar
    }
    pub fn min_rtt(&self) -> Time {
        if self.min_rtt == Time::MAX {
            Time::ZERO
        } else {
            self.min_rtt
        }
    }
    /// Current RTO without backoff (RFC 6298 formula, clamped).
    pub fn base_rto(&self) -> Time {
        self.rto
    }
    /// Current RTO with backoff applied.
    pub fn rto(&self) -> Time {
        self.backed_off(self.backoff)
    }
    /// The RTO doubled `n` times, at most `max_rto`.
    fn backed_off(&self, n: u32) -> Time {
        self.rto.mul(1u64 << n.min(30)).min(self.cfg.max_rto)
    }
    pub fn cwnd(&self) -> u32 {
        self.w.cwnd
    }
    pub fn ssthresh(&self) -> u32 {
        self.w.ssthresh
    }
    pub fn lost_out(&self) -> u32 {
        self.lost_out
    }
    /// The congestion control's pacing rate, bit/s of wire bytes; `None` when it does not pace.
    #[inline]
    pub fn pacing_rate_bps(&self) -> Option<u64> {
        if self.paces {
            self.cc.pacing_rate_bps()
        } else {
            None
        }
    }
    /// Replace the congestion control.
    pub fn set_cc(&mut self, cc: Box<dyn CongestionControl>) {
        self.paces = cc.pacing_rate_bps().is_some();
        self.hooks = cc.hooks();
        self.cc = cc;
    }
    pub fn wire_size(&self, len: u32) -> u32 {
        len + self.cfg.header
    }
    /// DSN and length of an outstanding segment (for MPTCP reinjection).
    pub fn outstanding(&self) -> impl Iterator<Item = (u64, u32, bool)> + '_ {
        self.segs
            .iter()
            .map(|s| (s.dsn, u32::from(s.len), s.flags & SACKED != 0))
    }
    /// Is nothing outstanding?
    pub fn idle(&self) -> bool {
        self.snd_nxt == self.snd_una
    }

    // ---- sending ----

    /// May a packet go out now (window, pacing)? New data additionally needs receive-window
    /// room, checked by [`TcpSender::rwnd_allows_new`].
    pub fn room(&mut self, now: Time) -> Room {
        let in_flight = self.in_flight();
        if in_flight >= self.w.cwnd {
            self.cwnd_limited = true;
            return Room::No;
        }
        if self.paces && self.pacing_next > now {
            return Room::PacedUntil(self.pacing_next);
        }
        Room::Yes
    }

    /// Room for one more new segment in the receive window and in a fixed send buffer (see
    /// [`Self::sndbuf_allows_new`]). A window smaller than one segment still takes one when
    /// nothing is outstanding; a zero window takes none (see [`Self::arm_persist`]).
    pub fn rwnd_allows_new(&self) -> bool {
        self.sndbuf_allows_new()
            && (!self.use_rwnd
                || (self.snd_wnd > 0
                    && (self.packets_out() as u64 + 1) * self.cfg.mss as u64
                        <= self.snd_wnd.max(self.cfg.mss as u64)))
    }

    /// Room in a fixed send buffer for one more new segment (always, without one).
    #[inline]
    pub fn sndbuf_allows_new(&self) -> bool {
        self.cfg
            .send_buffer_segs
            .is_none_or(|n| self.packets_out() < n)
    }

    /// A zero window with nothing outstanding: start the persist timer (RTO backed off per probe,
    /// at most `max_rto`) unless a timer runs. The owner calls this when it has data to send.
    pub fn arm_persist(&mut self, now: Time) {
        if !self.use_rwnd || self.snd_wnd > 0 || self.packets_out() > 0 {
            return;
        }
        if self.xmit_timer.is_none() {
            let t = self.backed_off(self.persist_backoff);
            self.xmit_timer = Some((now + t, XmitTimer::Persist));
        }
    }

    /// Is a lost segment waiting for retransmission?
    pub fn has_retransmit_pending(&mut self) -> bool {
        self.lost_out > 0 && self.next_lost().is_some()
    }

    /// Retransmit lost segments while the window allows. Returns the packets to send.
    pub fn retransmit_lost(&mut self, now: Time, out: &mut impl FnMut(Packet)) -> Room {
        loop {
            if !self.has_retransmit_pending() {
                return Room::Yes;
            }
            match self.room(now) {
                Room::Yes => {}
                r => return r,
            }
            let Some(seq) = self.next_lost() else {
                return Room::Yes;
            };
            self.retransmit(seq, now, out);
        }
    }

    fn next_lost(&mut self) -> Option<u64> {
        // `segs[k]` is segment snd_una + k; the scan starts at the hint.
        let start =
            ((self.retx_hint.max(self.snd_una) - self.snd_una) as usize).min(self.segs.len());
        match self
            .segs
            .range(start..)
            .position(|s| s.flags & (LOST | RETRANS) == LOST)
        {
            Some(k) => {
                let seq = self.snd_una + (start + k) as u64;
                self.retx_hint = seq;
                Some(seq)
            }
            None => {
                self.retx_hint = self.snd_nxt;
                None
            }
        }
    }

    /// Send a new segment carrying data-level `dsn` of `len` bytes. The caller checked `room()`
    /// and `rwnd_allows_new()`.
    pub fn send_new(&mut self, dsn: u64, len: u32, now: Time, out: &mut impl FnMut(Packet)) {
        self.send_new_in_burst(dsn, len, now, out);
        self.schedule_probe(now);
    }

    /// [`Self::send_new`] without scheduling the loss probe: a caller sending several new
    /// segments at the same `now` calls [`Self::end_burst`] after the last. The timer slot ends
    /// as after as many `send_new`: the probe's conditions (TLP on, state Open, no probe
    /// outstanding, no reordering timer) do not change while new segments go out, nothing reads
    /// the slot between them but the RTO arming of the first (which the probe then replaces),
    /// and the last probe scheduled is the one that counts.
    pub fn send_new_in_burst(
        &mut self,
        dsn: u64,
        len: u32,
        now: Time,
        out: &mut impl FnMut(Packet),
    ) {
        if matches!(self.xmit_timer, Some((_, XmitTimer::Persist))) {
            self.xmit_timer = None;
        }
        if self.packets_out() == 0 {
            // Restarting from idle (Linux tcp_event_data_sent / cwnd_event TX_START).
            self.cc.cwnd_event(&mut self.w, CwndEvent::TxStart, now);
            // A new sending window for the delivery rate starts when nothing is out (Linux
            // net/ipv4/tcp_rate.c `tcp_rate_skb_sent()`, which `__tcp_transmit_skb()` calls before
            // `tcp_event_new_data_sent()` counts the segment in `packets_out`; it tests
            // `packets_out`, not the packets in flight, which loss marking makes a guess).
            self.first_tx_time = now;
            self.delivered_time = now;
        }
        let seq = self.snd_nxt;
        self.snd_nxt += 1;
        let in_flight = self.in_flight();
        let (since_delivered, since_first_tx) = self.since_rate_times(seq, now);
        self.segs.push_back(Seg {
            xmit: now,
            dsn,
            // The packet's length is 16 bits too (`data_packet`).
            len: len as u16,
            flags: 0,
            delivered: self.delivered as u32,
            since_delivered,
            since_first_tx,
            app_limited: self.app_limited != 0,
        });
        if self.sacked_out > 0 && self.segs.len() > self.sacked_bits.capacity() {
            self.reserve_sacked_bits();
        }
        if self.state == CaState::Recovery {
            self.prr_out += 1;
        }
        self.stats.sent_packets += 1;
        let size = len + self.cfg.header;
        if let Some(rate) = self.pacing_rate_bps() {
            let base = self.pacing_next.max(now);
            self.pacing_next = base + Time::tx_time(size as u64, rate.max(1));
        }
        self.max_in_flight = self.max_in_flight.max(in_flight);
        out(self.data_packet(seq, dsn, len, 0, now));
        // Arm the retransmission timer if it is not running (RFC 6298 5.1).
        if self.xmit_timer.is_none() {
            self.rearm_rto(now);
        }
    }

    /// Data segment `seq` (data-level `dsn`, `len` payload bytes) as it goes on the wire at `now`.
    #[inline(always)]
    fn data_packet(&self, seq: u64, dsn: u64, len: u32, flags: u8, now: Time) -> Packet {
        Packet {
            route: self.route,
            kind: Kind::Data,
            flags,
            size: (len + self.cfg.header) as u16,
            seq: seq as u32,
            len: len as u16,
            dsn,
            ts: now,
            ts_ecr: self.peer_ts,
            ..Default::default()
        }
    }

    /// After new segments sent by [`Self::send_new_in_burst`] at `now`: schedule the loss probe.
    pub fn end_burst(&mut self, now: Time) {
        self.schedule_probe(now);
    }

    /// Put segment `seq` on the wire again (a retransmission).
    fn retransmit(&mut self, seq: u64, now: Time, out: &mut impl FnMut(Packet)) {
        // No new sending window here: `tcp_rate_skb_sent()`'s test (`packets_out == 0`) cannot
        // hold for a segment that is itself out, even when every segment is marked lost.
        let idx = (seq - self.snd_una) as usize;
        let app_limited = self.app_limited != 0;
        let delivered = self.delivered;
        if self.segs[idx].since_delivered == FAR {
            self.forget_far(seq);
        }
        let (since_delivered, since_first_tx) = self.since_rate_times(seq, now);
        let s = &mut self.segs[idx];
        s.xmit = now;
        s.delivered = delivered as u32;
        s.since_delivered = since_delivered;
        s.since_first_tx = since_first_tx;
        s.app_limited = app_limited;
        s.flags |= RETRANS | EVER_RETRANS;
        self.retrans_out += 1;
        self.stats.retransmitted_packets += 1;
        if self.state == CaState::Recovery {
            self.prr_out += 1;
        }
        let (dsn, len) = (s.dsn, u32::from(s.len));
        self.stats.sent_packets += 1;
        let size = len + self.cfg.header;
        if let Some(rate) = self.pacing_rate_bps() {
            let base = self.pacing_next.max(now);
            self.pacing_next = base + Time::tx_time(size as u64, rate.max(1));
        }
        let inf = self.in_flight();
        self.max_in_flight = self.max_in_flight.max(inf);
        out(self.data_packet(seq, dsn, len, flags::RETRANS, now));
        // Arm the retransmission timer if it is not running (RFC 6298 5.1). Retransmitting the
        // head restarts it unless the RACK reordering timer is pending (Linux
        // tcp_xmit_retransmit_queue()).
        let head_retrans = idx == 0 && !matches!(self.xmit_timer, Some((_, XmitTimer::Reorder)));
        if self.xmit_timer.is_none() || head_retrans {
            self.rearm_rto(now);
        }
    }

    /// The owner found no data to send although the window had room: the flow is
    /// application-limited (Linux `tcp_rate_check_app_limited()`).
    pub fn mark_app_limited(&mut self) {
        if self.in_flight() < self.w.cwnd && !self.has_retransmit_pending() {
            self.app_limited = (self.delivered + self.in_flight() as u64).max(1);
            self.cwnd_limited = false;
        }
    }

    // ---- timers ----

    fn rearm_rto(&mut self, now: Time) {
        if self.packets_out() == 0 {
            self.xmit_timer = None;
            return;
        }
        self.xmit_timer = Some((now + self.rto(), XmitTimer::Rto));
    }

    /// Linux `tcp_schedule_loss_probe()`.
    fn schedule_probe(&mut self, now: Time) {
        if !self.cfg.tlp
            || self.state != CaState::Open
            || self.packets_out() == 0
            || self.tlp_high_seq.is_some()
        {
            return;
        }
        if matches!(self.xmit_timer, Some((_, XmitTimer::Reorder))) {
            return;
        }
        let mut pto = if self.srtt > Time::ZERO {
            let mut t = self.srtt.mul(2);
            if self.packets_out() == 1 {
                t += TLP_SINGLE_PACKET_SLACK;
            } else {
                t += Time::from_ms(2);
            }
            t
        } else {
            self.cfg.initial_rto
        };
        // If the RTO would fire earlier, use it (relative to the head's transmission).
        let head_xmit = self.segs.front().map(|s| s.xmit).unwrap_or(now);
        let rto_at = head_xmit + self.rto();
        if rto_at > now {
            pto = pto.min(rto_at - now);
        }
        self.xmit_timer = Some((now + pto, XmitTimer::Probe));
    }

    /// The timer slot's deadline, if any.
    pub fn xmit_deadline(&self) -> Option<Time> {
        self.xmit_timer.map(|(t, _)| t)
    }

    /// Pacing release time when pacing holds back a packet.
    pub fn pacing_deadline(&self) -> Time {
        self.pacing_next
    }

    /// Run due timers. Returns true if anything fired (the owner then pushes data).
    pub fn on_timer(
        &mut self,
        now: Time,
        out: &mut impl FnMut(Packet),
        has_new_data: bool,
        next_new: impl FnOnce() -> Option<(u64, u32)>,
    ) -> bool {
        let Some((t, kind)) = self.xmit_timer else {
            return false;
        };
        if t > now {
            return false;
        }
        self.xmit_timer = None;
        match kind {
            XmitTimer::Rto => self.on_rto(now),
            XmitTimer::Reorder => {
                // RFC 8985 6.3: re-run detection; newly lost segments are retransmitted.
                let lost = self.rack_detect_loss(now);
                if lost > 0 {
                    self.enter_recovery_if_needed(now);
                }
                if self.xmit_timer.is_none() {
                    self.rearm_rto(now);
                }
            }
            XmitTimer::Probe => {
                self.send_probe(now, out, has_new_data, next_new);
            }
            XmitTimer::Persist => {
                self.stats.window_probes += 1;
                self.persist_backoff += 1;
                out(Packet {
                    route: self.route,
                    kind: Kind::Data,
                    flags: flags::WINDOW_UPDATE,
                    size: self.cfg.header as u16,
                    seq: self.snd_nxt as u32,
                    ts: now,
                    ts_ecr: self.peer_ts,
                    ..Default::default()
                });
                self.arm_persist(now);
            }
        }
        true
    }

    /// Linux `tcp_send_loss_probe()`: new data if possible, else the last segment again.
    fn send_probe<F: FnOnce() -> Option<(u64, u32)>>(
        &mut self,
        now: Time,
        out: &mut impl FnMut(Packet),
        has_new_data: bool,
        next_new: F,
    ) {
        if self.packets_out() == 0 {
            return;
        }
        self.stats.tlp_count += 1;
        if has_new_data && self.rwnd_allows_new() {
            if let Some((dsn, len)) = next_new() {
                self.tlp_high_seq = Some(self.snd_nxt + 1);
                self.send_new(dsn, len, now, out);
                self.rearm_rto(now);
                return;
            }
        }
        let seq = self.snd_nxt - 1;
        let f = self.segs[(seq - self.snd_una) as usize].flags;
        if f & SACKED == 0 {
            self.tlp_high_seq = Some(self.snd_nxt);
            if f & RETRANS != 0 {
                // Already a retransmission in flight: count it once.
                self.retrans_out -= 1;
            }
            self.retransmit(seq, now, out);
        }
        self.rearm_rto(now);
    }

    /// Retransmission timeout: Linux `tcp_retransmit_timer()` + `tcp_enter_loss()`.
    fn on_rto(&mut self, now: Time) {
        if self.packets_out() == 0 {
            return;
        }
        self.stats.rto_count += 1;
        if self.state <= CaState::Disorder && self.sacked_out >= DUPTHRESH {
            // A timeout after many duplicates: the reordering degree was overestimated.
            self.reordering = self.reordering.min(DUPTHRESH);
        }
        // Linux cuts ssthresh once per episode: on the first timeout, or on a later one after an
        // RTT sample cleared the backoff; ns-2 at every timeout.
        if self.cfg.ssthresh_every_timeout || self.state != CaState::Loss || self.backoff == 0 {
            self.w.ssthresh = self.cc.ssthresh(&self.w, now);
            self.note_loss_event();
        }
        self.cc.set_state(&mut self.w, CaState::Loss, now);
        self.cc.cwnd_event(&mut self.w, CwndEvent::Loss, now);
        self.state = CaState::Loss;
        self.w.cwnd = 1;
        self.w.cwnd_cnt = 0;
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        // Mark every un-SACKed segment lost; retransmissions in flight are presumed lost too.
        let mut lost = 0;
        for s in self.segs.iter_mut() {
            if s.flags & SACKED == 0 {
                if s.flags & LOST == 0 {
                    lost += 1;
                }
                s.flags = (s.flags | LOST) & !RETRANS;
            }
        }
        self.lost_total += lost as u64;
        self.lost_out += lost;
        self.retrans_out = 0;
        self.retx_hint = self.snd_una;
        self.backoff += 1;
        self.pacing_next = now;
        self.xmit_timer = Some((now + self.rto(), XmitTimer::Rto));
    }

    fn note_loss_event(&mut self) {
        self.delivered_between_losses = self.delivered_since_loss;
        self.delivered_since_loss = 0;
    }

    // ---- ACK processing ----

    /// Process an ACK. `coupling` gives coupled congestion controls their siblings.
    pub fn on_ack(&mut self, ack: &Packet, now: Time, coupling: &Coupling) -> AckOutcome {
        let mut outcome = AckOutcome::default();
        let cum = unwrap_seg(ack.ack, self.snd_una);
        if cum < self.snd_una || cum > self.snd_nxt {
            // Old (reordered) ACK or acknowledging unsent data: ignore.
            return outcome;
        }
        if cum > self.snd_una && ack.nsack == 0 && self.clean() {
            return self.on_clean_ack(ack, cum, now, coupling);
        }
        let prior_in_flight = self.in_flight();
        let prior_snd_una = self.snd_una;
        let prior_lost = self.lost_total;
        self.snd_wnd = ack.rwnd as u64;
        if self.snd_wnd > 0 {
            self.persist_backoff = 0;
        }
        self.peer_ts = self.peer_ts.max(ack.ts);

        let mut rs = RateSample {
            delivered: -1,
            ..Default::default()
        };
        let mut rs_prior_time = None::<Time>;
        let mut newly = 0u32;
        let mut sack_rtt: Option<Time> = None;
        let mut seq_rtt: Option<Time> = None;

        // 1. SACK blocks (RFC 2018 / 6675 scoreboard update).
        if self.cfg.sack && ack.nsack > 0 {
            if self.segs.len() > self.sacked_bits.capacity() {
                self.reserve_sacked_bits();
            }
            for &(start, end) in ack.sack_blocks() {
                let start = unwrap_seg(start, self.snd_una).max(self.snd_una).max(cum);
                let end = unwrap_seg(end, self.snd_una).min(self.snd_nxt);
                let mut seq = start;
                loop {
                    // Most of a block repeats what earlier ACKs reported: the runs SACKed
                    // before are passed by their bits.
                    seq = self.sacked_bits.next_clear(seq, end);
                    if seq >= end {
                        break;
                    }
                    let idx = (seq - self.snd_una) as usize;
                    let s = self.segs[idx];
                    debug_assert_eq!(s.flags & SACKED, 0);
                    self.mark_delivered(seq, &s, now, &mut rs, &mut rs_prior_time);
                    let s2 = &mut self.segs[idx];
                    s2.flags |= SACKED;
                    self.sacked_bits.set(seq);
                    self.sacked_out += 1;
                    if s.flags & LOST != 0 {
                        self.lost_out -= 1;
                    }
                    if s.flags & RETRANS != 0 {
                        self.retrans_out -= 1;
                    }
                    s2.flags &= !(LOST | RETRANS);
                    newly += 1;
                    if s.flags & EVER_RETRANS == 0 {
                        sack_rtt = Some(now - s.xmit);
                    }
                    self.rack_advance(s.xmit, seq + 1, s.flags & EVER_RETRANS != 0, now);
                    self.note_reordering(seq, s.flags);
                    self.highest_sacked = self.highest_sacked.max(seq + 1);
                    seq += 1;
                }
            }
        }

        // 2. Cumulative ACK.
        let mut dupack = false;
        if cum > self.snd_una {
            outcome.advanced = true;
            // `segs[0]` is segment snd_una: each one acknowledged leaves the queue first.
            while self.snd_una < cum {
                let Some(s) = self.segs.pop_front() else {
                    break;
                };
                let seq = self.snd_una;
                self.snd_una += 1;
                if s.flags & SACKED == 0 {
                    self.mark_delivered(seq, &s, now, &mut rs, &mut rs_prior_time);
                    newly += 1;
                    if s.flags & LOST != 0 {
                        self.lost_out -= 1;
                    }
                    if s.flags & RETRANS != 0 {
                        self.retrans_out -= 1;
                    }
                    if s.flags & EVER_RETRANS == 0 && seq_rtt.is_none() {
                        seq_rtt = Some(now - s.xmit);
                    }
                    self.rack_advance(s.xmit, seq + 1, s.flags & EVER_RETRANS != 0, now);
                    self.note_reordering(seq, s.flags);
                } else {
                    self.sacked_out -= 1;
                    self.sacked_bits.clear(seq);
                }
                if s.since_delivered == FAR {
                    self.forget_far(seq);
                }
            }
            if !self.cfg.sack && self.state == CaState::Recovery {
                // NewReno: a partial ACK removes the emulated SACKs it covers (tcp_remove_reno_sacks).
                let acked = (self.snd_una - prior_snd_una) as u32;
                self.sacked_out = self.sacked_out.saturating_sub(acked.saturating_sub(1));
                self.check_reno_reordering(acked);
            } else if !self.cfg.sack {
                self.sacked_out = 0;
            }
            if self.sacked_out > self.packets_out() {
                self.sacked_out = self.packets_out();
            }
            if self.highest_sacked < self.snd_una {
                self.highest_sacked = self.snd_una;
            }
            self.retx_hint = self.retx_hint.max(self.snd_una);
            if let Some(h) = self.tlp_high_seq {
                if self.snd_una >= h {
                    self.tlp_high_seq = None;
                }
            }
        } else if cum == self.snd_una && self.packets_out() > 0 && newly == 0 && ack.nsack == 0 {
            dupack = true;
            if !self.cfg.sack {
                // Each duplicate ACK means one segment left the network (Linux
                // tcp_add_reno_sack(): sacked_out and delivered both count it), unless there
                // were more duplicates than segments out.
                let prior = self.sacked_out;
                self.sacked_out += 1;
                self.check_reno_reordering(0);
                let d = self.sacked_out.saturating_sub(prior);
                self.delivered += d as u64;
                newly += d;
            }
        }
        outcome.newly_acked = newly;

        // 3. RTT sample (Karn; timestamps as the fallback when the ACK advanced snd_una).
        let rtt = seq_rtt.or(sack_rtt).or_else(|| {
            if outcome.advanced && ack.ts_ecr > Time::ZERO && ack.ts_ecr <= now {
                Some(now - ack.ts_ecr)
            } else {
                None
            }
        });
        if let Some(r) = rtt {
            self.rtt_sample(r);
        }
        self.delivered_since_loss += newly as u64;

        // 4. Loss detection.
        let mut newly_lost = 0;
        if self.cfg.sack {
            if self.cfg.rack {
                if self.sacked_out > 0 || self.retrans_out > 0 || self.lost_out > 0 {
                    newly_lost = self.rack_detect_loss(now);
                }
            } else if self.sacked_out > 0 {
                newly_lost = self.dupthresh_detect_loss();
            }
        } else {
            newly_lost = self.newreno_on_ack(outcome.advanced);
        }
        if newly_lost > 0 || (self.lost_out > 0 && self.state < CaState::Recovery) {
            self.enter_recovery_if_needed(now);
        } else if self.state == CaState::Open && (self.sacked_out > 0 || dupack) {
            self.state = CaState::Disorder;
        }

        // 5. End of recovery.
        match self.state {
            CaState::Recovery if self.past_recovery_point() => {
                if self.w.ssthresh < u32::MAX {
                    self.w.cwnd = self.w.ssthresh.max(1);
                }
                self.cc.cwnd_event(&mut self.w, CwndEvent::CompleteCwr, now);
                self.state = CaState::Open;
                self.cc.set_state(&mut self.w, CaState::Open, now);
            }
            CaState::Loss if self.past_recovery_point() => {
                self.state = CaState::Open;
                self.cc.set_state(&mut self.w, CaState::Open, now);
            }
            CaState::Disorder if self.sacked_out == 0 && self.lost_out == 0 => {
                self.state = CaState::Open;
            }
            _ => {}
        }
        if outcome.advanced && rtt.is_some() {
            // RFC 6298 5.7 / Linux tcp_ack_update_rtt: a valid sample clears the backoff.
            self.backoff = 0;
        }

        // 6. Delivery-rate sample (tcp_rate_gen).
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let in_flight = self.in_flight();
        // The rest of the sample only for an algorithm that reads it (`cong_control`).
        if self.hooks.cong_control {
            if let Some(prior_time) = rs_prior_time {
                rs.delivered = (self.delivered - rs.prior_delivered) as i64;
                let ack_elapsed = now - prior_time;
                rs.interval = rs.interval.max(ack_elapsed);
                if rs.interval < self.min_rtt() {
                    rs.interval = Time::ZERO;
                    rs.delivered = -1;
                }
            }
            rs.prior_in_flight = prior_in_flight;
            rs.acked_sacked = newly;
            rs.losses = (self.lost_total - prior_lost) as u32;
            rs.total_delivered = self.delivered;
            rs.total_lost = self.lost_total;
            rs.in_flight = in_flight;
            rs.ca_state = Some(self.state);
            rs.rtt = rtt;
        }

        // 7. Congestion control (Linux tcp_cong_control). Hooks the algorithm leaves at their
        // defaults (no effect) are not called.
        let info = self.ack_info(now, newly, rtt, prior_in_flight, in_flight);
        if self.hooks.pkts_acked && (newly > 0 || rtt.is_some()) {
            self.cc.pkts_acked(&self.w, &info);
        }
        if !(self.hooks.cong_control && self.cc.cong_control(&mut self.w, &rs, &info)) {
            if self.state == CaState::Recovery {
                self.prr_update(newly, newly_lost, outcome.advanced);
            } else if newly > 0 && outcome.advanced {
                // Linux tcp_may_raise_cwnd(): only when the ACK advanced snd_una
                // (FLAG_DATA_ACKED); a SACK-only ACK does not grow the window.
                self.cc.cong_avoid(&mut self.w, &info, coupling);
            }
        }
        if self.w.cwnd == 0 {
            self.w.cwnd = 1;
        }
        self.cwnd_limited = false;

        // 8. Timers (Linux tcp_set_xmit_timer).
        if self.packets_out() == 0 {
            self.xmit_timer = None;
        } else if outcome.advanced || self.xmit_timer.is_none() {
            self.rearm_rto(now);
            self.schedule_probe(now);
        }
        outcome
    }

    /// May an ACK that advances snd_una without SACK blocks take [`Self::on_clean_ack`]? With
    /// SACK on, in state Open, with nothing SACKed, marked lost or retransmitted (the counters
    /// count the SACKED, LOST and RETRANS marks of the scoreboard, so no segment bears one), and
    /// no SACKed segment at or above snd_una (`highest_sacked`, which RACK.reord's test
    /// compares with), for an algorithm that takes no rate sample (`cong_control`).
    #[inline]
    fn clean(&self) -> bool {
        #[cfg(test)]
        if self.full_path_only {
            return false;
        }
        self.cfg.sack
            && self.state == CaState::Open
            && (self.sacked_out | self.lost_out | self.retrans_out) == 0
            && self.highest_sacked <= self.snd_una
            && !self.hooks.cong_control
    }

    /// What the congestion control is told of an ACK (the arguments Linux's
    /// `tcp_cong_control` passes on): `newly` segments acknowledged, `rtt` if one was sampled,
    /// the flight before and after.
    #[inline(always)]
    fn ack_info(
        &self,
        now: Time,
        newly: u32,
        rtt: Option<Time>,
        prior_in_flight: u32,
        in_flight: u32,
    ) -> AckInfo {
        AckInfo {
            now,
            acked: newly,
            rtt,
            srtt: self.srtt,
            min_rtt: self.min_rtt(),
            prior_in_flight,
            in_flight,
            cwnd_limited: self.cwnd_limited
                || self.w.in_slow_start() && prior_in_flight * 2 >= self.w.cwnd,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
        }
    }

    /// The common ACK: [`Self::on_ack`] for a cumulative ACK that advances snd_una to `cum`,
    /// carries no SACK block, and finds the scoreboard clean ([`Self::clean`]). It makes the
    /// state changes the full path makes, in the same order, and skips what the guards make
    /// void there:
    /// - the SACK scoreboard update (no blocks), and per acked segment the SACKED, LOST and
    ///   RETRANS bookkeeping (no segment is marked) and RFC 8985's RACK.reord test (no segment
    ///   lies below `highest_sacked`);
    /// - loss detection: RACK (RFC 8985 6.2) marks a segment lost only when a segment sent
    ///   after it was delivered while it was not; with nothing SACKed every delivered segment
    ///   has left the scoreboard, so every segment still in it was sent after them all (or is
    ///   a retransmission, and none is). The full path's guard (something SACKed, lost or
    ///   retransmitted) is false after this ACK too, and DupThresh needs SACKed segments;
    /// - the state machine: Open stays Open (nothing lost, nothing SACKed, not a duplicate);
    /// - the rate sample, which only `cong_control` reads (the sender's `first_tx_time` and
    ///   `delivered_time`, which `mark_delivered` also sets, are set here the same way).
    ///
    /// The lockstep test `the_clean_ack_path_leaves_the_state_as_the_full_path` drives a sender
    /// taking this path against one forced through the full path.
    fn on_clean_ack(
        &mut self,
        ack: &Packet,
        cum: u64,
        now: Time,
        coupling: &Coupling,
    ) -> AckOutcome {
        #[cfg(test)]
        {
            self.clean_acks += 1;
        }
        let prior_in_flight = self.packets_out();
        self.snd_wnd = ack.rwnd as u64;
        if self.snd_wnd > 0 {
            self.persist_backoff = 0;
        }
        self.peer_ts = self.peer_ts.max(ack.ts);

        // 2. Cumulative ACK: `segs[0..n]` are segments snd_una..cum.
        let n = (cum - self.snd_una) as usize;
        let min_rtt = self.min_rtt();
        let mut seq_rtt: Option<Time> = None;
        // tcp_rate_skb_delivered: the sampled segment is the first, then any later one sent
        // with at least as much delivered; the sender's `first_tx_time` follows it.
        // Counts at send are 32 bits (as Linux's): compared modulo 2^32, as `after()` compares
        // sequence numbers.
        let mut prior_delivered = 0u32;
        let mut first = true;
        let mut end = self.snd_una;
        let (mut rack_xmit, mut rack_end_seq, mut rack_rtt) =
            (self.rack_xmit, self.rack_end_seq, self.rack_rtt);
        for s in self.segs.range(..n) {
            debug_assert_eq!(s.flags & (SACKED | LOST | RETRANS), 0);
            end += 1;
            if first || s.delivered.wrapping_sub(prior_delivered) as i32 >= 0 {
                first = false;
                prior_delivered = s.delivered;
                self.first_tx_time = s.xmit;
            }
            let ever_retrans = s.flags & EVER_RETRANS != 0;
            let rtt = now - s.xmit;
            if !ever_retrans && seq_rtt.is_none() {
                seq_rtt = Some(rtt);
            }
            // rack_advance
            if ever_retrans && rtt < min_rtt {
                continue;
            }
            if s.xmit > rack_xmit || (s.xmit == rack_xmit && end > rack_end_seq) {
                rack_xmit = s.xmit;
                rack_end_seq = end;
                rack_rtt = rtt;
            }
        }
        (self.rack_xmit, self.rack_end_seq, self.rack_rtt) = (rack_xmit, rack_end_seq, rack_rtt);
        self.segs.drain(..n);
        if !self.far_times.is_empty() {
            // The acknowledged segments' far rate times leave with them.
            self.forget_far_below(cum);
        }
        self.delivered += n as u64;
        self.delivered_time = now;
        self.snd_una = cum;
        if self.highest_sacked < self.snd_una {
            self.highest_sacked = self.snd_una;
        }
        self.retx_hint = self.retx_hint.max(self.snd_una);
        if let Some(h) = self.tlp_high_seq {
            if self.snd_una >= h {
                self.tlp_high_seq = None;
            }
        }
        let newly = n as u32;

        // 3. RTT sample.
        let rtt = seq_rtt.or_else(|| {
            if ack.ts_ecr > Time::ZERO && ack.ts_ecr <= now {
                Some(now - ack.ts_ecr)
            } else {
                None
            }
        });
        if let Some(r) = rtt {
            self.rtt_sample(r);
            // RFC 6298 5.7: a valid sample clears the backoff.
            self.backoff = 0;
        }
        self.delivered_since_loss += newly as u64;

        // 6. Delivery rate: the app-limited phase ends once its data is delivered.
        if self.app_limited != 0 && self.delivered > self.app_limited {
            self.app_limited = 0;
        }
        let in_flight = self.packets_out();

        // 7. Congestion control: not in recovery, the ACK advanced snd_una.
        let info = self.ack_info(now, newly, rtt, prior_in_flight, in_flight);
        if self.hooks.pkts_acked {
            self.cc.pkts_acked(&self.w, &info);
        }
        self.cc.cong_avoid(&mut self.w, &info, coupling);
        if self.w.cwnd == 0 {
            self.w.cwnd = 1;
        }
        self.cwnd_limited = false;

        // 8. Timers.
        if in_flight == 0 {
            self.xmit_timer = None;
        } else {
            self.rearm_rto(now);
            self.schedule_probe(now);
        }
        AckOutcome {
            newly_acked: newly,
            advanced: true,
        }
    }

    /// A record's rate times for a segment (re)sent as `seq` at `now`: how long before `now` the
    /// sender's `delivered_time` and `first_tx_time` are, or [`FAR`] with the times kept in
    /// `far_times` when either is `u32::MAX` ns or more before it.
    #[inline]
    fn since_rate_times(&mut self, seq: u64, now: Time) -> (u32, u32) {
        let since_delivered = now.ns() - self.delivered_time.ns();
        let since_first_tx = now.ns() - self.first_tx_time.ns();
        if since_delivered < u64::from(FAR) && since_first_tx < u64::from(FAR) {
            (since_delivered as u32, since_first_tx as u32)
        } else {
            self.keep_far(seq);
            (FAR, 0)
        }
    }

    /// Keep the rate times of segment `seq` aside (out of line: a segment sent 4.3 s or more
    /// after the sender's last delivery or its send window's start).
    #[cold]
    #[inline(never)]
    fn keep_far(&mut self, seq: u64) {
        self.far_times
            .insert(seq, (self.delivered_time, self.first_tx_time));
    }

    /// Segment `seq`'s rate times kept aside leave with it, or with a resend near.
    #[cold]
    #[inline(never)]
    fn forget_far(&mut self, seq: u64) {
        self.far_times.remove(&seq);
    }

    /// The far rate times of the segments below `cum`, cumulatively acknowledged, leave.
    #[cold]
    #[inline(never)]
    fn forget_far_below(&mut self, cum: u64) {
        self.far_times = self.far_times.split_off(&cum);
    }

    #[cold]
    #[inline(never)]
    fn far(&self, seq: u64) -> (Time, Time) {
        self.far_times[&seq]
    }

    /// The sender's `delivered_time` and `first_tx_time` when segment `seq` (record `s`) was
    /// last sent.
    #[inline]
    fn rate_times(&self, seq: u64, s: &Seg) -> (Time, Time) {
        if s.since_delivered == FAR {
            self.far(seq)
        } else {
            (
                Time::from_ns(s.xmit.ns() - u64::from(s.since_delivered)),
                Time::from_ns(s.xmit.ns() - u64::from(s.since_first_tx)),
            )
        }
    }

    /// Give the SACKED bits room for the whole window (out of line: at most a logarithmic number
    /// of times per flow).
    #[cold]
    #[inline(never)]
    fn reserve_sacked_bits(&mut self) {
        self.sacked_bits.reserve(
            self.snd_una,
            self.segs.len(),
            self.segs.iter().map(|s| s.flags & SACKED != 0),
        );
    }

    /// tcp_rate_skb_delivered for segment `s`, newly delivered.
    fn mark_delivered(
        &mut self,
        seq: u64,
        s: &Seg,
        now: Time,
        rs: &mut RateSample,
        prior_time: &mut Option<Time>,
    ) {
        self.delivered += 1;
        self.delivered_time = now;
        let delivered = unwrap_seg(s.delivered, self.delivered);
        if prior_time.is_none() || delivered >= rs.prior_delivered {
            rs.prior_delivered = delivered;
            let (delivered_time, first_tx_time) = self.rate_times(seq, s);
            *prior_time = Some(delivered_time);
            rs.is_app_limited = s.app_limited;
            rs.interval = s.xmit.saturating_sub(first_tx_time);
            self.first_tx_time = s.xmit;
        }
    }

    /// RFC 8985 6.2 (RACK.reord): a never-retransmitted segment delivered below the highest
    /// SACKed one arrived out of order.
    fn note_reordering(&mut self, seq: u64, seg_flags: u8) {
        if seg_flags & (EVER_RETRANS | LOST) == 0 && seq + 1 < self.highest_sacked {
            self.rack_reord = true;
            if self.cfg.sack && self.cfg.adaptive {
                // tcp_update_reordering(): the distance to the forward-most SACKed segment.
                let metric =
                    (self.highest_sacked - seq).min(u64::from(self.cfg.max_reordering)) as u32;
                self.reordering = self.reordering.max(metric);
            }
        }
    }

    /// RFC 6298 section 2.
    fn rtt_sample(&mut self, r: Time) {
        let r = r.max(Time::from_us(1));
        if self.srtt == Time::ZERO {
            self.srtt = r;
            self.rttvar = r.div(2);
        } else {
            let diff = if self.srtt > r {
                self.srtt - r
            } else {
                r - self.srtt
            };
            self.rttvar = Time((3 * self.rttvar.0 + diff.0) / 4);
            self.srtt = Time((7 * self.srtt.0 + r.0) / 8);
        }
        self.min_rtt = self.min_rtt.min(r);
        let rto = if self.cfg.linux_rto {
            self.srtt + self.rttvar.mul(4).max(self.cfg.min_rto)
        } else {
            (self.srtt + self.rttvar.mul(4).max(CLOCK_GRANULARITY)).max(self.cfg.min_rto)
        };
        self.rto = rto.min(self.cfg.max_rto);
    }

    /// RFC 8985 6.2 step 2 (RACK_update): remember the most recently sent delivered segment.
    fn rack_advance(&mut self, xmit: Time, end_seq: u64, ever_retrans: bool, now: Time) {
        let rtt = now - xmit;
        if ever_retrans && rtt < self.min_rtt() {
            // Possibly the ACK of the original transmission: not a valid sample.
            return;
        }
        if xmit > self.rack_xmit || (xmit == self.rack_xmit && end_seq > self.rack_end_seq) {
            self.rack_xmit = xmit;
            self.rack_end_seq = end_seq;
            self.rack_rtt = rtt;
        }
    }

    /// RFC 8985 6.2 step 4 (RACK_reo_wnd).
    fn rack_reo_wnd(&self) -> Time {
        if !self.rack_reord && (self.state >= CaState::Recovery || self.sacked_out >= DUPTHRESH) {
            return Time::ZERO;
        }
        self.min_rtt().div(4).min(self.srtt)
    }

    /// RFC 8985 6.2 step 5 (RACK_detect_loss); returns segments newly marked lost and arms the
    /// reordering timer for those not yet expired.
    fn rack_detect_loss(&mut self, now: Time) -> u32 {
        let reo_wnd = self.rack_reo_wnd();
        let (rack_xmit, rack_end_seq, rack_rtt) =
            (self.rack_xmit, self.rack_end_seq, self.rack_rtt);
        let mut timeout = Time::ZERO;
        let mut newly = 0;
        // The segments not SACKed, in sequence order (Linux walks its `tsorted_sent_queue`,
        // which SACKed skbs have left): each run of them [a, b) by iterator over `segs`
        // (`segs[k]` is segment snd_una + k), the SACKed runs between by their bits. `end` is
        // a segment's end, its sequence + 1.
        let (una, nxt) = (self.snd_una, self.snd_nxt);
        let mut a = una;
        'walk: loop {
            a = self.sacked_bits.next_clear(a, nxt);
            if a >= nxt {
                break;
            }
            let b = if self.sacked_out == 0 {
                nxt
            } else {
                self.sacked_bits.next_set(a, nxt)
            };
            let mut end = a;
            for s in self.segs.range_mut((a - una) as usize..(b - una) as usize) {
                end += 1;
                debug_assert_eq!(s.flags & SACKED, 0);
                let sent_before = s.xmit < rack_xmit || (s.xmit == rack_xmit && end < rack_end_seq);
                if !sent_before {
                    if s.flags & EVER_RETRANS == 0 {
                        // Sequence order equals send order for first transmissions: nothing
                        // later can have been sent before RACK.xmit (see module notes).
                        break 'walk;
                    }
                    continue;
                }
                if s.flags & LOST != 0 && s.flags & RETRANS == 0 {
                    continue; // already marked, awaiting retransmission
                }
                let deadline = s.xmit + rack_rtt + reo_wnd;
                if deadline <= now {
                    // A lost retransmission is marked for retransmission again; lost_out
                    // counts each segment once.
                    if s.flags & RETRANS != 0 {
                        s.flags &= !RETRANS;
                        self.retrans_out -= 1;
                    }
                    if s.flags & LOST == 0 {
                        self.lost_out += 1;
                    }
                    s.flags |= LOST;
                    newly += 1;
                    self.lost_total += 1;
                    if end - 1 < self.retx_hint {
                        self.retx_hint = end - 1;
                    }
                } else {
                    timeout = timeout.max(deadline - now);
                }
            }
            a = b;
        }
        if timeout > Time::ZERO {
            self.xmit_timer = Some((now + timeout, XmitTimer::Reorder));
        }
        newly
    }

    /// RFC 6675 IsLost: un-SACKed segments below the DupThresh-th highest SACKed segment, the
    /// threshold being `reordering` (3 until reordering is seen).
    fn dupthresh_detect_loss(&mut self) -> u32 {
        // Fewer SACKed segments in all than the threshold: none can have enough above it (and
        // the scan below would walk the whole window for nothing).
        if self.sacked_out < self.reordering {
            return 0;
        }
        let mut count = 0;
        let mut limit = None;
        for seq in (self.snd_una..self.highest_sacked.min(self.snd_nxt)).rev() {
            if self.segs[(seq - self.snd_una) as usize].flags & SACKED != 0 {
                count += 1;
                if count == self.reordering {
                    limit = Some(seq);
                    break;
                }
            }
        }
        let Some(limit) = limit else { return 0 };
        let mut newly = 0;
        for seq in self.snd_una..limit {
            let idx = (seq - self.snd_una) as usize;
            let f = self.segs[idx].flags;
            if f & (SACKED | LOST | EVER_RETRANS) == 0 {
                self.segs[idx].flags |= LOST;
                self.lost_out += 1;
                self.lost_total += 1;
                newly += 1;
                self.retx_hint = self.retx_hint.min(seq);
            }
        }
        newly
    }

    /// Whether Recovery or Loss may end: the cumulative ACK has reached the recovery point, and
    /// without SACK passed it. Linux `tcp_is_non_sack_preventing_reopen()`: a Reno sender holds
    /// its state while snd_una == high_seq, "until something *above* high_seq is ACKed", since
    /// the duplicate ACKs still to come may be those of its own retransmissions of data that had
    /// arrived (a timeout's go-back-N), which must not start a fast retransmit (RFC 6582 section 4).
    fn past_recovery_point(&self) -> bool {
        if self.cfg.sack {
            self.snd_una >= self.high_seq
        } else {
            self.snd_una > self.high_seq
        }
    }

    /// RFC 6582 with Linux's SACK emulation. Returns segments newly marked lost.
    fn newreno_on_ack(&mut self, advanced: bool) -> u32 {
        let head_unmarked = self.packets_out() > 0 && self.segs[0].flags & (LOST | RETRANS) == 0;
        let mut newly = 0;
        if self.state < CaState::Recovery {
            // Fast retransmit after DupThresh duplicates, unless still below `recover`
            // (RFC 6582 section 3.2 step 2).
            // Linux tcp_time_to_recover(): sacked_out + 1 > tp->reordering.
            if self.sacked_out >= self.reordering && head_unmarked && self.snd_una >= self.high_seq
            {
                self.segs[0].flags |= LOST;
                self.lost_out += 1;
                self.lost_total += 1;
                newly = 1;
                self.retx_hint = self.snd_una;
            }
        } else if self.state == CaState::Recovery
            && advanced
            && self.snd_una < self.high_seq
            && head_unmarked
        {
            // Partial ACK: the next hole is lost too (RFC 6582 section 3.2 step 5).
            self.segs[0].flags |= LOST;
            self.lost_out += 1;
            self.lost_total += 1;
            newly = 1;
            self.retx_hint = self.snd_una;
        }
        newly
    }

    /// Linux `tcp_limit_reno_sacked()` + `tcp_check_reno_reordering()`: duplicate ACKs beyond the
    /// segments out less the holes (at least one) cannot be losses; the segments out (plus
    /// `addend` just acked) become the duplicate-ACK threshold.
    fn check_reno_reordering(&mut self, addend: u32) {
        let out = self.packets_out();
        let holes = self.lost_out.max(1).min(out);
        if self.sacked_out + holes > out {
            self.sacked_out = out - holes;
            self.reordering = (out + addend).min(self.cfg.max_reordering);
        }
    }

    /// Enter fast recovery (Linux `tcp_enter_recovery()` + `tcp_init_cwnd_reduction()`).
    fn enter_recovery_if_needed(&mut self, now: Time) {
        if self.state >= CaState::Recovery {
            return;
        }
        self.stats.fast_recoveries += 1;
        self.note_loss_event();
        self.high_seq = self.snd_nxt;
        self.tlp_high_seq = None;
        self.prior_cwnd = self.w.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.w.ssthresh = self.cc.ssthresh(&self.w, now);
        self.w.cwnd_cnt = 0;
        self.state = CaState::Recovery;
        self.cc.set_state(&mut self.w, CaState::Recovery, now);
    }

    /// RFC 6937 PRR as Linux `tcp_cwnd_reduction()`.
    fn prr_update(&mut self, newly_acked: u32, newly_lost: u32, advanced: bool) {
        if newly_acked == 0 || self.prior_cwnd == 0 {
            return;
        }
        self.prr_delivered += newly_acked;
        let in_flight = self.in_flight() as i64;
        let delta = self.w.ssthresh as i64 - in_flight;
        let mut sndcnt: i64 = if delta < 0 {
            let dividend =
                self.w.ssthresh as u64 * self.prr_delivered as u64 + self.prior_cwnd as u64 - 1;
            (dividend / self.prior_cwnd as u64) as i64 - self.prr_out as i64
        } else if advanced && newly_lost == 0 {
            delta.min((self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked as i64) + 1)
        } else {
            delta.min(newly_acked as i64)
        };
        // Force a fast retransmit on entering recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        self.w.cwnd = (in_flight + sndcnt).max(1) as u32;
    }

    /// Update the peer's advertised window (window-update ACKs).
    pub fn set_snd_wnd(&mut self, w: u64) {
        self.snd_wnd = w;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::cc::newreno::NewReno;

    #[test]
    fn a_segment_record_is_32_bytes_two_to_a_cache_line() {
        // A thousand flows keep about a hundred thousand (docs/performance.md, seventh round).
        assert_eq!(std::mem::size_of::<Seg>(), 32);
        assert_eq!(std::mem::align_of::<Seg>(), 32);
    }

    #[test]
    fn rate_times_more_than_4_3_s_before_a_send_read_back_exactly() {
        let mut s = sender(true, true);
        let at = Time::from_ns;
        send_n(&mut s, 10, Time::ZERO);
        // Five delivered at 100 ms: the sender's delivered_time is 100 ms, first_tx_time 0.
        s.on_ack(
            &ack(5, &[], Time::ZERO),
            Time::from_ms(100),
            &Coupling::NONE,
        );
        // Segment 10 sent 4.2 s later: near (4 100 000 000 ns < 2^32 - 1), kept in the record.
        send_n(&mut s, 1, at(4_200_000_000));
        // Segment 11 sent at 9.9 s, 9.8 s after the last delivery: far, kept aside.
        send_n(&mut s, 1, at(9_900_000_000));
        let rec = |s: &TcpSender, seq: u64| s.segs[(seq - s.snd_una) as usize];
        assert_eq!(rec(&s, 10).since_delivered, 4_100_000_000);
        assert_eq!(rec(&s, 10).since_first_tx, 4_200_000_000);
        assert_eq!(rec(&s, 11).since_delivered, FAR);
        assert_eq!(s.far_times.len(), 1);
        for seq in [10, 11] {
            assert_eq!(
                s.rate_times(seq, &rec(&s, seq)),
                (Time::from_ms(100), Time::ZERO),
                "segment {seq}"
            );
        }
        // Segment 11 SACKed at 10 s, segments 5-10 cumulatively acknowledged at 10.1 s: the
        // SACKed far segment keeps its entry until it leaves the scoreboard.
        s.on_ack(
            &ack(5, &[(11, 12)], Time::ZERO),
            at(10_000_000_000),
            &Coupling::NONE,
        );
        s.on_ack(
            &ack(11, &[(11, 12)], Time::ZERO),
            at(10_100_000_000),
            &Coupling::NONE,
        );
        assert_eq!(s.far_times.keys().copied().collect::<Vec<_>>(), [11]);
        // Segments 12 and 13 sent at 20 s, 9.9 s after the last delivery: far.
        send_n(&mut s, 2, at(20_000_000_000));
        assert_eq!(
            s.far_times.keys().copied().collect::<Vec<_>>(),
            [11, 12, 13]
        );
        // first_tx_time: the send time of the last segment sampled at 10.1 s, segment 10.
        assert_eq!(
            s.rate_times(13, &rec(&s, 13)),
            (at(10_100_000_000), at(4_200_000_000))
        );
        // The ACK of 11 and 12 at 20.05 s takes their entries; 13 resent 10 ms after that
        // delivery is near again, and its entry goes.
        s.on_ack(
            &ack(13, &[], Time::ZERO),
            at(20_050_000_000),
            &Coupling::NONE,
        );
        assert_eq!(s.far_times.keys().copied().collect::<Vec<_>>(), [13]);
        s.retransmit(13, at(20_060_000_000), &mut |_| {});
        assert_eq!(rec(&s, 13).since_delivered, 10_000_000);
        assert!(s.far_times.is_empty());
        s.on_ack(
            &ack(14, &[], Time::ZERO),
            at(20_100_000_000),
            &Coupling::NONE,
        );
        assert!(s.segs.is_empty() && s.far_times.is_empty());
    }

    #[test]
    fn a_send_with_nothing_out_starts_a_rate_window_and_a_retransmission_never_does() {
        // Linux `tcp_rate_skb_sent()`: with `packets_out` 0 at a send, the delivery rate's
        // window (`delivered_mstamp`, `first_tx_mstamp`) restarts at the send time.
        let mut s = sender(true, true);
        let rec = |s: &TcpSender, seq: u64| s.segs[(seq - s.snd_una) as usize];
        let (t1, t2) = (Time::from_secs(1), Time::from_ms(1010));
        send_n(&mut s, 2, Time::ZERO);
        // Both delivered at 100 ms: nothing is out; the sender's delivered_time is 100 ms, its
        // first_tx_time 0 (the send time of the segment sampled).
        s.on_ack(
            &ack(2, &[], Time::ZERO),
            Time::from_ms(100),
            &Coupling::NONE,
        );
        assert_eq!(s.packets_out(), 0);
        // Segment 2 at 1 s, sent with nothing out: its window starts at 1 s (not at 100 ms and
        // 0, which would stretch its sample over the idle 900 ms) ...
        send_n(&mut s, 1, t1);
        assert_eq!(s.rate_times(2, &rec(&s, 2)), (t1, t1));
        // ... and segment 3, sent 10 ms later with segment 2 out, is in the same window.
        send_n(&mut s, 1, t2);
        assert_eq!(s.rate_times(3, &rec(&s, 3)), (t1, t1));
        // The loss probe (segment 3 again), then the retransmission timeout, which marks both
        // lost: nothing in flight, but two segments out.
        let mut t = Time::ZERO;
        while s.stats.rto_count == 0 {
            t = s.xmit_deadline().expect("a timer is armed");
            assert!(s.on_timer(t, &mut |_| {}, false, || None));
        }
        assert_eq!(
            (s.stats.tlp_count, s.in_flight(), s.packets_out()),
            (1, 0, 2)
        );
        // Segment 2's retransmission at the timeout keeps the window of 1 s.
        let mut resent = Vec::new();
        s.retransmit_lost(t, &mut |p| resent.push(p.seq));
        assert_eq!(resent, [2]);
        assert_eq!(rec(&s, 2).xmit, t);
        assert_eq!(s.rate_times(2, &rec(&s, 2)), (t1, t1));
    }

    fn cfg(sack: bool, rack: bool) -> SenderConfig {
        SenderConfig {
            mss: 1000,
            header: 50,
            initial_window: 10,
            min_rto: Time::from_ms(200),
            initial_rto: Time::from_secs(1),
            max_rto: Time::from_secs(120),
            sack,
            rack,
            adaptive: false,
            tlp: sack,
            linux_rto: false,
            send_buffer_segs: None,
            ssthresh_every_timeout: false,
            max_reordering: 300,
        }
    }

    fn sender(sack: bool, rack: bool) -> TcpSender {
        TcpSender::new(cfg(sack, rack), Box::new(NewReno), 0, 1 << 30)
    }

    fn send_n(s: &mut TcpSender, n: u64, now: Time) -> Vec<Packet> {
        let mut v = Vec::new();
        for _ in 0..n {
            let d = s.snd_nxt();
            s.send_new(d, 1000, now, &mut |p| v.push(p));
        }
        v
    }

    fn ack(cum: u32, sacks: &[(u32, u32)], ts_ecr: Time) -> Packet {
        let mut p = Packet {
            kind: Kind::Ack,
            ack: cum,
            rwnd: 1 << 30,
            ts_ecr,
            ..Default::default()
        };
        for (i, b) in sacks.iter().enumerate() {
            p.sack[i] = *b;
        }
        p.nsack = sacks.len() as u8;
        p
    }

    #[test]
    fn acks_and_sack_blocks_carry_on_across_2_32() {
        // A sender whose next segment is 2^32 - 4 (as if it had sent that many): segments
        // 2^32 - 4 .. 2^32 + 4 go out numbered 4294967292 .. 4294967295, 0 .. 3 on the wire.
        let w = 1u64 << 32;
        let start = w - 4;
        let mut s = sender(true, false);
        (s.snd_una, s.snd_nxt, s.retx_hint) = (start, start, start);
        (s.high_seq, s.highest_sacked, s.rack_end_seq) = (start, start, start);
        let t0 = Time::ZERO;
        let sent = send_n(&mut s, 8, t0);
        let wire: Vec<u32> = sent.iter().map(|p| p.seq).collect();
        assert_eq!(
            wire,
            vec![
                u32::MAX - 3,
                u32::MAX - 2,
                u32::MAX - 1,
                u32::MAX,
                0,
                1,
                2,
                3
            ]
        );
        // Cumulative ACK of 2^32 - 1 and a SACK of 2^32 + 1 .. 2^32 + 3 (1 .. 3 on the wire).
        let ms = Time::from_ms;
        s.on_ack(&ack((w - 1) as u32, &[(1, 3)], t0), ms(50), &Coupling::NONE);
        assert_eq!((s.snd_una, s.sacked_out), (w - 1, 2));
        // Everything acknowledged: ACK 2^32 + 4, which is 4 on the wire.
        let out = s.on_ack(&ack(4, &[], t0), ms(51), &Coupling::NONE);
        assert_eq!((s.snd_una, s.sacked_out, out.newly_acked), (w + 4, 0, 3));
        assert!(s.segs.is_empty());
    }

    #[test]
    fn dupthresh_adapts_to_the_reordering_sacks_reveal() {
        let adaptive = SenderConfig {
            adaptive: true,
            ..cfg(true, false)
        };
        let mut s = TcpSender::new(adaptive, Box::new(NewReno), 0, 1 << 30);
        let t0 = Time::ZERO;
        send_n(&mut s, 10, t0);
        let ms = Time::from_ms;
        // Segments 5 and 6 SACKed: 2 above the hole 0..5, not yet 3.
        s.on_ack(&ack(0, &[(5, 7)], t0), ms(50), &Coupling::NONE);
        assert_eq!(s.lost_out, 0);
        // Segment 1 arrives late (never retransmitted), 6 below the highest SACKed (7):
        // reordering 6. Segment 0 now has 3 SACKed above it, which no longer makes it lost.
        s.on_ack(&ack(0, &[(1, 2), (5, 7)], t0), ms(51), &Coupling::NONE);
        assert_eq!(s.reordering, 6);
        assert_eq!(s.lost_out, 0);
        // 1, 5, 6, 7, 8 SACKed: 5 above segment 0, fewer than 6.
        s.on_ack(&ack(0, &[(1, 2), (5, 9)], t0), ms(52), &Coupling::NONE);
        assert_eq!(s.lost_out, 0);
        // 1 and 5..10: 6 above segment 0 -> lost; 2, 3 and 4 have 5 above them -> not.
        s.on_ack(&ack(0, &[(1, 2), (5, 10)], t0), ms(53), &Coupling::NONE);
        assert_eq!(s.lost_out, 1);
        assert_eq!(s.segs[0].flags & LOST, LOST);
        // RFC 6675 as written keeps DupThresh 3: segment 0 is lost at once; RACK keeps its own
        // reordering window and leaves the threshold alone.
        for (rack, lost) in [(false, 1), (true, 0)] {
            let mut r = sender(true, rack);
            send_n(&mut r, 10, t0);
            r.on_ack(&ack(0, &[(5, 7)], t0), ms(50), &Coupling::NONE);
            r.on_ack(&ack(0, &[(1, 2), (5, 7)], t0), ms(51), &Coupling::NONE);
            assert_eq!(r.reordering, DUPTHRESH);
            assert_eq!(r.lost_out, lost, "rack = {rack}");
        }
    }

    #[test]
    fn max_reordering_caps_the_adapted_threshold() {
        // As above with the cap at 4 (Linux 3.5's TCP_MAX_REORDERING is 127; 4 keeps the
        // sequence short): the reordering of 6 raises the threshold to 4 only.
        let capped = SenderConfig {
            adaptive: true,
            max_reordering: 4,
            ..cfg(true, false)
        };
        let mut s = TcpSender::new(capped, Box::new(NewReno), 0, 1 << 30);
        let t0 = Time::ZERO;
        send_n(&mut s, 10, t0);
        let ms = Time::from_ms;
        s.on_ack(&ack(0, &[(5, 7)], t0), ms(50), &Coupling::NONE);
        s.on_ack(&ack(0, &[(1, 2), (5, 7)], t0), ms(51), &Coupling::NONE);
        assert_eq!(s.reordering, 4);
        // 1, 5, 6: 3 SACKed above segment 0, fewer than 4.
        assert_eq!(s.lost_out, 0);
        // 1, 5, 6, 7: 4 above segment 0 -> lost (with the threshold at 6 it took 6); 2, 3 and
        // 4 have 3 above them -> not.
        s.on_ack(&ack(0, &[(1, 2), (5, 8)], t0), ms(52), &Coupling::NONE);
        assert_eq!(s.lost_out, 1);
        assert_eq!(s.segs[0].flags & LOST, LOST);
    }

    #[test]
    fn zero_window_stops_new_data_and_the_persist_timer_probes() {
        let mut s = sender(false, false);
        let t0 = Time::ZERO;
        send_n(&mut s, 2, t0);
        // Both acked with a zero window: nothing outstanding, no new data allowed.
        let mut a = ack(2, &[], t0);
        a.rwnd = 0;
        a.ts = Time::from_ms(7);
        s.on_ack(&a, Time::from_ms(100), &Coupling::NONE);
        assert!(!s.rwnd_allows_new());
        // Persist timer: one RTO (the 1 s initial RTO; the ACK's RTT sample of 100 ms gives
        // 100 + 4 * 50 = 300 ms) after now, then doubled per probe.
        s.arm_persist(Time::from_ms(100));
        assert_eq!(s.xmit_deadline(), Some(Time::from_ms(400)));
        let mut out = Vec::new();
        assert!(s.on_timer(Time::from_ms(400), &mut |p| out.push(p), true, || None));
        assert_eq!(out.len(), 1);
        let probe = out[0];
        assert_eq!(
            (
                probe.len,
                probe.flags & flags::WINDOW_UPDATE != 0,
                probe.seq
            ),
            (0, true, 2)
        );
        assert_eq!(
            probe.ts_ecr,
            Time::from_ms(7),
            "data echoes the ACK's TSval"
        );
        assert_eq!(s.packets_out(), 0, "a probe carries no data");
        assert_eq!(
            s.xmit_deadline(),
            Some(Time::from_ms(1000)),
            "backed off: 400 + 600"
        );
        assert_eq!(s.stats.window_probes, 1);
        // The window opens: new data may go, and the next backoff starts over.
        let mut a = ack(2, &[], t0);
        a.rwnd = 65_535;
        s.on_ack(&a, Time::from_ms(1100), &Coupling::NONE);
        assert!(s.rwnd_allows_new());
        let sent = send_n(&mut s, 1, Time::from_ms(1100));
        assert_eq!(sent.len(), 1);
        assert_eq!(
            s.xmit_deadline(),
            Some(Time::from_ms(1400)),
            "sending replaced the persist timer by the RTO"
        );
    }

    #[test]
    fn rfc6298_rto_from_first_samples() {
        let mut s = sender(true, true);
        s.rtt_sample(Time::from_ms(100));
        // SRTT = 100, RTTVAR = 50, RTO = 100 + 4*50 = 300 ms.
        assert_eq!(
            (s.srtt(), s.rttvar(), s.rto()),
            (Time::from_ms(100), Time::from_ms(50), Time::from_ms(300))
        );
        s.rtt_sample(Time::from_ms(60));
        // RTTVAR = 3/4*50 + 1/4*40 = 47.5; SRTT = 7/8*100 + 1/8*60 = 95; RTO = 95 + 190 = 285.
        assert_eq!(s.rttvar(), Time::from_us(47_500));
        assert_eq!(s.srtt(), Time::from_ms(95));
        assert_eq!(s.rto(), Time::from_ms(285));
        // Small RTTs are clamped to the 200 ms minimum.
        let mut t = sender(true, true);
        t.rtt_sample(Time::from_ms(10));
        assert_eq!(t.rto(), Time::from_ms(200));
        // Linux's formula: SRTT + max(4 RTTVAR, 200 ms) = 10 + max(20, 200) = 210 ms.
        let mut l = sender(true, true);
        l.cfg.linux_rto = true;
        l.rtt_sample(Time::from_ms(10));
        assert_eq!(l.rto(), Time::from_ms(210));
    }

    #[test]
    fn initial_window_and_cumulative_ack() {
        let mut s = sender(true, true);
        let t0 = Time::ZERO;
        assert_eq!(send_n(&mut s, 10, t0).len(), 10);
        assert_eq!(s.room(t0), Room::No, "initial window of 10 is full");
        let t1 = Time::from_ms(50);
        let out = s.on_ack(&ack(2, &[], t0), t1, &Coupling::NONE);
        assert_eq!(out.newly_acked, 2);
        assert_eq!(s.srtt(), Time::from_ms(50));
        // Slow start: cwnd grows by the 2 packets acked.
        assert_eq!(s.cwnd(), 12);
        assert_eq!(s.in_flight(), 8);
    }

    #[test]
    fn rack_marks_hole_lost_after_three_sacks_and_prr_retransmits() {
        let mut s = sender(true, true);
        let t0 = Time::ZERO;
        send_n(&mut s, 10, t0);
        // Segment 0 lost; 1..4 SACKed at 50 ms. No reordering seen, SACKed >= DupThresh:
        // reo_wnd = 0, so seg 0 (sent before RACK.xmit, outstanding 50 ms >= RACK.rtt 50 ms)
        // is lost at once.
        let t1 = Time::from_ms(50);
        let _ = s.on_ack(&ack(0, &[(1, 3)], t0), t1, &Coupling::NONE);
        assert_eq!(s.state, CaState::Disorder, "two SACKed segments: not yet");
        let _ = s.on_ack(&ack(0, &[(1, 5)], t0), t1, &Coupling::NONE);
        assert_eq!(s.state, CaState::Recovery);
        assert_eq!(s.lost_out(), 1);
        // NewReno ssthresh = 10/2 = 5.
        assert_eq!(s.w.ssthresh, 5);
        // PRR: in_flight = 10 - 4 SACKed - 1 lost = 5 <= ssthresh 5 -> delta 0; forced 1.
        assert_eq!(s.cwnd(), 6);
        let mut sent = Vec::new();
        s.retransmit_lost(t1, &mut |p| sent.push(p));
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].seq, 0);
        assert_eq!(sent[0].flags & flags::RETRANS, flags::RETRANS);
        // The retransmission fills the hole: everything up to 10 acked except 5..10 in flight.
        let _ = s.on_ack(&ack(5, &[], t1), Time::from_ms(100), &Coupling::NONE);
        assert_eq!(s.state, CaState::Recovery, "high_seq is 10");
        let _ = s.on_ack(&ack(10, &[], t1), Time::from_ms(101), &Coupling::NONE);
        assert_eq!(s.state, CaState::Open);
        // Recovery ends with cwnd = ssthresh = 5. Congestion avoidance runs on the same ACK (as
        // Linux tcp_cong_control does) but the test never refilled the window, so the flow is
        // not cwnd-limited and Reno does not grow it.
        assert_eq!(s.cwnd(), 5);
    }

    #[test]
    fn rack_waits_reo_wnd_when_few_sacks() {
        let mut s = sender(true, true);
        s.rtt_sample(Time::from_ms(40)); // min_rtt 40 -> reo_wnd 10 ms
        let t0 = Time::from_ms(1000);
        send_n(&mut s, 3, t0);
        // Seg 2 SACKed at t0+40: seg 0, 1 sent at the same time but earlier in sequence.
        let _ = s.on_ack(
            &ack(0, &[(2, 3)], t0),
            t0 + Time::from_ms(40),
            &Coupling::NONE,
        );
        assert_eq!(s.lost_out(), 0, "within RACK.rtt + reo_wnd");
        // The reordering timer is set for RACK.rtt + reo_wnd = 50 ms after the send.
        assert_eq!(s.xmit_deadline(), Some(t0 + Time::from_ms(50)));
        let mut v = Vec::new();
        assert!(s.on_timer(t0 + Time::from_ms(50), &mut |p| v.push(p), false, || None));
        assert_eq!(s.lost_out(), 2);
        assert_eq!(s.state, CaState::Recovery);
    }

    #[test]
    fn newreno_without_sack_three_dupacks_then_partial_ack() {
        let mut s = sender(false, false);
        let t0 = Time::ZERO;
        send_n(&mut s, 10, t0);
        let t1 = Time::from_ms(50);
        for _ in 0..2 {
            s.on_ack(&ack(0, &[], t0), t1, &Coupling::NONE);
        }
        assert_eq!(s.lost_out(), 0);
        s.on_ack(&ack(0, &[], t0), t1, &Coupling::NONE);
        assert_eq!((s.state, s.lost_out()), (CaState::Recovery, 1));
        let mut v = Vec::new();
        s.retransmit_lost(t1, &mut |p| v.push(p));
        assert_eq!(v.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![0]);
        // Partial ACK up to 3 (segment 3 also lost): the head is marked lost. The emulated SACK
        // count drops by acked - 1 = 2 to 1, so in flight = 7 - (1 + 1) = 5 = ssthresh and PRR
        // (delta 0) sends nothing yet.
        s.on_ack(&ack(3, &[], t1), Time::from_ms(100), &Coupling::NONE);
        assert_eq!(s.state, CaState::Recovery);
        assert_eq!(s.lost_out(), 1);
        v.clear();
        s.retransmit_lost(Time::from_ms(100), &mut |p| v.push(p));
        assert!(v.is_empty());
        // The next duplicate ACK frees one packet: segment 3 is retransmitted.
        s.on_ack(&ack(3, &[], t1), Time::from_ms(101), &Coupling::NONE);
        s.retransmit_lost(Time::from_ms(101), &mut |p| v.push(p));
        assert_eq!(v.iter().map(|p| p.seq).collect::<Vec<_>>(), vec![3]);
    }

    #[test]
    fn a_fixed_send_buffer_stops_new_data_not_retransmissions() {
        // 4 segments sent and not acknowledged at most.
        let mut s = TcpSender::new(
            SenderConfig {
                send_buffer_segs: Some(4),
                ..cfg(true, true)
            },
            Box::new(NewReno),
            0,
            1 << 30,
        );
        send_n(&mut s, 3, Time::ZERO);
        assert!(s.sndbuf_allows_new() && s.rwnd_allows_new());
        send_n(&mut s, 1, Time::ZERO);
        assert!(!s.sndbuf_allows_new() && !s.rwnd_allows_new());
        // The window still has room: retransmissions are not held back.
        assert_eq!(s.room(Time::ZERO), Room::Yes);
        s.on_ack(&ack(2, &[], Time::ZERO), Time::from_ms(50), &Coupling::NONE);
        assert!(s.sndbuf_allows_new());
    }

    #[test]
    fn newreno_more_duplicates_than_segments_out_raise_the_threshold() {
        // Linux tcp_check_reno_reordering(): 4 out, 1 hole, so at most 3 duplicates can be
        // segments that left the network; the 4th is reordering and makes the threshold 4.
        let mut s = sender(false, false);
        let t0 = Time::ZERO;
        send_n(&mut s, 4, t0);
        let t1 = Time::from_ms(50);
        for _ in 0..3 {
            s.on_ack(&ack(0, &[], t0), t1, &Coupling::NONE);
        }
        assert_eq!(
            (s.state, s.reordering, s.sacked_out),
            (CaState::Recovery, 3, 3)
        );
        s.on_ack(&ack(0, &[], t0), t1, &Coupling::NONE);
        assert_eq!((s.reordering, s.sacked_out), (4, 3));
        // Everything is acked, up to the recovery point (4) but not past it: without SACK the
        // sender stays in Recovery (tcp_is_non_sack_preventing_reopen); the ACK of a new segment
        // ends it. Of 4 segments then out, 3 duplicates no longer start a fast retransmit.
        s.on_ack(&ack(4, &[], t0), Time::from_ms(60), &Coupling::NONE);
        assert_eq!(s.state, CaState::Recovery);
        send_n(&mut s, 5, Time::from_ms(60));
        s.on_ack(&ack(5, &[], t0), Time::from_ms(110), &Coupling::NONE);
        assert_eq!(s.state, CaState::Open);
        for _ in 0..3 {
            s.on_ack(&ack(5, &[], t0), Time::from_ms(110), &Coupling::NONE);
        }
        assert_eq!(
            (s.state, s.lost_out(), s.stats.fast_recoveries),
            (CaState::Disorder, 0, 1)
        );
    }

    #[test]
    fn rto_marks_all_lost_and_backs_off() {
        let mut s = sender(true, true);
        send_n(&mut s, 4, Time::ZERO);
        // Without RTT samples the timer is the initial RTO (1 s); the first send armed a probe
        // at the initial RTO as well.
        let t = s.xmit_deadline().unwrap();
        assert_eq!(t, Time::from_secs(1));
        let mut v = Vec::new();
        // Probe fires first (no SRTT yet -> PTO = initial RTO): retransmits the tail.
        s.on_timer(t, &mut |p| v.push(p), false, || None);
        assert_eq!(v.last().map(|p| p.seq), Some(3));
        let t2 = s.xmit_deadline().unwrap();
        s.on_timer(t2, &mut |p| v.push(p), false, || None);
        assert_eq!(s.state, CaState::Loss);
        assert_eq!(s.cwnd(), 1);
        assert_eq!(s.lost_out(), 4);
        assert_eq!(s.stats.rto_count, 1);
        // Backoff doubles the RTO.
        assert_eq!(s.rto(), Time::from_secs(2));
        v.clear();
        s.retransmit_lost(t2, &mut |p| v.push(p));
        assert_eq!(v.len(), 1, "cwnd 1 after RTO");
        assert_eq!(v[0].seq, 0);
    }

    /// Fire the pending timer (a retransmission timeout, no TLP without SACK) and retransmit
    /// what the window then allows; the retransmitted sequences.
    fn time_out(s: &mut TcpSender) -> (Time, Vec<u32>) {
        let t = s.xmit_deadline().unwrap();
        let mut v = Vec::new();
        s.on_timer(t, &mut |p| v.push(p), false, || None);
        s.retransmit_lost(t, &mut |p| v.push(p));
        (t, v.iter().map(|p| p.seq).collect())
    }

    #[test]
    fn newreno_go_back_n_duplicates_after_a_spurious_timeout_start_no_fast_retransmit() {
        // 10 segments all arrive, but their ACKs are held past the RTO (a handoff). The timeout
        // marks all 10 lost (high_seq = 10) and go-back-N resends 0; the late ACKs then let slow
        // start resend 1-2 and 3-6, copies of data the receiver has. The ACK of everything (10)
        // reaches the recovery point, not past it.
        let mut s = sender(false, false);
        send_n(&mut s, 10, Time::ZERO);
        let (t, resent) = time_out(&mut s);
        assert_eq!((s.state, resent), (CaState::Loss, vec![0]));
        let mut v = Vec::new();
        let mut seqs = |s: &mut TcpSender, cum: u32, at: Time| {
            s.on_ack(&ack(cum, &[], Time::ZERO), at, &Coupling::NONE);
            v.clear();
            s.retransmit_lost(at, &mut |p| v.push(p));
            v.iter().map(|p| p.seq).collect::<Vec<_>>()
        };
        // cwnd 1 -> 2 -> 4 in slow start (ssthresh 5).
        assert_eq!(seqs(&mut s, 1, t + Time::from_ms(10)), vec![1, 2]);
        assert_eq!(seqs(&mut s, 3, t + Time::from_ms(20)), vec![3, 4, 5, 6]);
        s.on_ack(
            &ack(10, &[], Time::ZERO),
            t + Time::from_ms(30),
            &Coupling::NONE,
        );
        assert_eq!(s.state, CaState::Loss, "held at snd_una == high_seq");
        // New data leaves; the copies 1-6 reach the receiver and each draws a duplicate of ACK 10.
        send_n(&mut s, 4, t + Time::from_ms(30));
        for _ in 0..6 {
            s.on_ack(
                &ack(10, &[], Time::ZERO),
                t + Time::from_ms(40),
                &Coupling::NONE,
            );
        }
        // Without the rule the sender would be Open here and the third duplicate would resend
        // segment 10, a fast recovery with ssthresh halved again.
        assert_eq!(
            (s.state, s.stats.fast_recoveries, s.lost_out(), s.w.ssthresh),
            (CaState::Loss, 0, 0, 5)
        );
        // The ACK of new data passes high_seq: the sender opens.
        s.on_ack(
            &ack(11, &[], Time::ZERO),
            t + Time::from_ms(50),
            &Coupling::NONE,
        );
        assert_eq!((s.state, s.stats.fast_recoveries), (CaState::Open, 0));
    }

    #[test]
    fn a_sack_sender_opens_at_the_recovery_point() {
        // With SACK, duplicates are told apart by their SACK blocks: no need to hold the state.
        let mut s = sender(true, false);
        send_n(&mut s, 4, Time::ZERO);
        // Skip the TLP to reach the RTO.
        let _ = time_out(&mut s);
        let (t, _) = time_out(&mut s);
        assert_eq!(s.state, CaState::Loss);
        s.on_ack(
            &ack(4, &[], Time::ZERO),
            t + Time::from_ms(10),
            &Coupling::NONE,
        );
        assert_eq!(s.state, CaState::Open);
    }

    #[test]
    fn ssthresh_is_cut_once_per_episode_as_linux_or_at_every_timeout_as_ns2() {
        // cwnd 20, no ACK comes back: timeouts at 1, 3 and 7 s (backoff 1, 2, 4 s).
        // Linux: the first cuts ssthresh to 20 / 2 = 10, the backed-off ones keep it.
        // ns-2: the first to 10, the second to max(1 / 2, 2) = 2 (cwnd 1 after the first), the
        // third to 2.
        for (every, expected) in [(false, [10, 10, 10]), (true, [10, 2, 2])] {
            let mut s = TcpSender::new(
                SenderConfig {
                    ssthresh_every_timeout: every,
                    ..cfg(false, false)
                },
                Box::new(NewReno),
                0,
                1 << 30,
            );
            s.w.cwnd = 20;
            send_n(&mut s, 20, Time::ZERO);
            let mut got = [0; 3];
            let mut at = [Time::ZERO; 3];
            for i in 0..3 {
                let (t, resent) = time_out(&mut s);
                assert_eq!((s.cwnd(), resent), (1, vec![0]));
                (got[i], at[i]) = (s.w.ssthresh, t);
            }
            assert_eq!(got, expected, "every timeout: {every}");
            assert_eq!(at, [1, 3, 7].map(Time::from_secs));
            assert_eq!(s.stats.rto_count, 3);
        }
    }

    #[test]
    fn rate_sample_over_one_round() {
        // From the start, and with 2^32 + 5 segments delivered before (their count at send
        // travels in 32 bits as 5: read back near the sender's own count, not as 5).
        for before in [0, (1u64 << 32) + 5] {
            rate_sample_over_one_round_after(before);
        }
    }

    fn rate_sample_over_one_round_after(before: u64) {
        let mut s = sender(true, true);
        s.delivered = before;
        let t0 = Time::from_ms(0);
        send_n(&mut s, 10, t0);
        // All 10 acked 100 ms later: 10 packets delivered over max(send 0, ack 100 ms).
        struct Probe(std::sync::Arc<std::sync::Mutex<Vec<RateSample>>>);
        impl CongestionControl for Probe {
            fn name(&self) -> &'static str {
                "probe"
            }
            fn ssthresh(&mut self, w: &Window, _: Time) -> u32 {
                w.cwnd / 2
            }
            fn cong_avoid(&mut self, _: &mut Window, _: &AckInfo, _: &Coupling) {}
            fn cong_control(&mut self, _: &mut Window, rs: &RateSample, _: &AckInfo) -> bool {
                self.0.lock().unwrap().push(*rs);
                true
            }
        }
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        s.set_cc(Box::new(Probe(log.clone())));
        s.on_ack(&ack(10, &[], t0), Time::from_ms(100), &Coupling::NONE);
        let rs = log.lock().unwrap()[0];
        assert_eq!(rs.delivered, 10, "{before} delivered before");
        assert_eq!(rs.interval, Time::from_ms(100));
        assert_eq!(rs.acked_sacked, 10);
        assert_eq!(s.delivered, before + 10);
    }

    /// The observable state of a sender, compared between two driven in lockstep.
    fn state_of(s: &TcpSender) -> impl PartialEq + std::fmt::Debug + '_ {
        // The SACKED bits mirror the marks, and no bit is set outside the window.
        for (seq, seg) in (s.snd_una..).zip(&s.segs) {
            assert_eq!(
                s.sacked_bits.get(seq),
                seg.flags & SACKED != 0,
                "segment {seq}"
            );
        }
        // `far_times` holds exactly the segments whose records say FAR.
        let far: Vec<u64> = (s.snd_una..)
            .zip(&s.segs)
            .filter(|(_, seg)| seg.since_delivered == FAR)
            .map(|(seq, _)| seq)
            .collect();
        assert_eq!(far, s.far_times.keys().copied().collect::<Vec<_>>());
        let cap = s.sacked_bits.capacity() as u64;
        if s.sacked_out > 0 && s.cfg.sack {
            assert!(cap >= s.snd_nxt - s.snd_una, "bits for the window");
        }
        for seq in s.snd_nxt..s.snd_una + cap {
            assert!(!s.sacked_bits.get(seq), "segment {seq} past the window");
        }
        (
            (s.cwnd(), s.ssthresh(), s.state, s.in_flight(), s.lost_out()),
            (s.srtt(), s.rttvar(), s.rto(), s.min_rtt()),
            (
                s.xmit_deadline(),
                s.pacing_deadline(),
                s.snd_una(),
                s.snd_nxt(),
            ),
            (s.stats.sent_packets, s.stats.retransmitted_packets),
            (
                s.stats.rto_count,
                s.stats.tlp_count,
                s.stats.fast_recoveries,
            ),
            (
                s.app_limited,
                s.delivered,
                s.first_tx_time,
                s.delivered_time,
            ),
            // The rest of the sender, whole: the scoreboard and every counter and variable.
            (
                (
                    &s.segs,
                    s.sacked_out,
                    s.retrans_out,
                    s.retx_hint,
                    s.high_seq,
                ),
                (s.reordering, s.highest_sacked, s.backoff, s.lost_total),
                (s.rack_xmit, s.rack_end_seq, s.rack_rtt, s.rack_reord),
                (s.tlp_high_seq, s.xmit_timer, s.prr_delivered, s.prr_out),
                (s.prior_cwnd, s.cwnd_limited, s.max_in_flight, s.snd_wnd),
                (s.persist_backoff, s.peer_ts, s.w, s.stats.window_probes),
                (s.delivered_since_loss, s.delivered_between_losses),
            ),
        )
    }

    /// Send what the windows allow, as `TcpFlow::push` does: new segments one by one with
    /// [`TcpSender::send_new`], or as a burst ([`TcpSender::send_new_in_burst`], then
    /// [`TcpSender::end_burst`]).
    fn push_all(s: &mut TcpSender, now: Time, burst: bool, out: &mut Vec<Packet>) {
        let mut o = |p| out.push(p);
        let mut room = s.retransmit_lost(now, &mut o);
        let mut sent = false;
        while room == Room::Yes {
            room = s.room(now);
            if room != Room::Yes || !s.rwnd_allows_new() {
                break;
            }
            let d = s.snd_nxt();
            if burst {
                s.send_new_in_burst(d, 1000, now, &mut o);
                sent = true;
            } else {
                s.send_new(d, 1000, now, &mut o);
            }
        }
        if sent {
            s.end_burst(now);
        }
    }

    /// Drive two senders with the same inputs over a lossy, reordering path (a receiver with
    /// delayed ACKs, SACK as the senders are configured, both senders' timers) for 20 simulated
    /// seconds: they must send the same packets and hold the same state after every step. The
    /// first pushes new data in bursts, as `TcpFlow::push` does, the second one at a time.
    fn lockstep(mut a: TcpSender, mut b: TcpSender, seed: u64, loss: f64) -> u64 {
        use crate::tcp::receiver::{AckDecision, ReceiverConfig, TcpReceiver};
        let mut rng = railpath_core::Rng::from_seed(seed);
        let mut rx = TcpReceiver::new(ReceiverConfig {
            mss: 1000,
            sack: a.cfg.sack,
            delayed_ack: true,
            delack_timeout: Time::from_ms(40),
            rwnd_bytes: 150_000,
            ack_bytes: 52,
        });
        // (arrival, order, packet, to the receiver?)
        let mut wire: Vec<(Time, u64, Packet, bool)> = Vec::new();
        let mut order = 0u64;
        let (mut pa, mut pb) = (Vec::new(), Vec::new());
        let mut now = Time::ZERO;
        push_all(&mut a, now, true, &mut pa);
        push_all(&mut b, now, false, &mut pb);
        let mut steps = 0;
        loop {
            assert_eq!(pa, pb, "seed {seed}: same packets at {now:?}");
            assert_eq!(
                state_of(&a),
                state_of(&b),
                "seed {seed}: same state at {now:?}"
            );
            for p in pa.drain(..) {
                if !rng.bernoulli(loss) {
                    // 20 ms and up to 3 ms of jitter: some segments overtake others.
                    let t = now + Time::from_ms(20) + Time::from_us(rng.below(3000));
                    wire.push((t, order, p, true));
                    order += 1;
                }
            }
            pb.clear();
            let next_wire = wire.iter().map(|w| (w.0, w.1)).min();
            let next = [
                next_wire.map(|w| w.0),
                a.xmit_deadline(),
                rx.delack_deadline(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(t) = next else { break };
            now = t.max(now);
            if now > Time::from_secs(20) {
                break;
            }
            steps += 1;
            if a.xmit_deadline().is_some_and(|d| d <= now) {
                let (da, db) = (a.snd_nxt(), b.snd_nxt());
                a.on_timer(now, &mut |p| pa.push(p), true, || Some((da, 1000)));
                b.on_timer(now, &mut |p| pb.push(p), true, || Some((db, 1000)));
            } else if rx.delack_deadline().is_some_and(|d| d <= now) {
                if rx.on_timer(now) {
                    let mut ack = rx.build_ack(0);
                    ack.ts = now;
                    wire.push((now + Time::from_ms(20), order, ack, false));
                    order += 1;
                }
                continue;
            } else {
                let i = wire
                    .iter()
                    .position(|w| Some((w.0, w.1)) == next_wire)
                    .unwrap();
                let (_, _, p, to_rx) = wire.swap_remove(i);
                if to_rx {
                    if rx.on_data(&p, now, &mut |_, _, _| {}) == AckDecision::Now {
                        let mut ack = rx.build_ack(0);
                        ack.ts = now;
                        wire.push((now + Time::from_ms(20), order, ack, false));
                        order += 1;
                    }
                    continue;
                }
                a.on_ack(&p, now, &Coupling::NONE);
                b.on_ack(&p, now, &Coupling::NONE);
            }
            push_all(&mut a, now, true, &mut pa);
            push_all(&mut b, now, false, &mut pb);
        }
        assert!(
            steps > 1000,
            "seed {seed}: the run went somewhere ({steps} steps)"
        );
        assert!(
            loss == 0.0 || a.stats.retransmitted_packets > 0,
            "seed {seed}: losses were recovered"
        );
        a.clean_acks
    }

    /// A congestion control that forwards to `inner` but says it implements every hook (the
    /// trait's default), so the sender calls the hooks `inner` leaves at their defaults.
    struct AllHooks<C>(C);

    impl<C: CongestionControl> CongestionControl for AllHooks<C> {
        fn name(&self) -> &'static str {
            self.0.name()
        }
        fn ssthresh(&mut self, w: &Window, now: Time) -> u32 {
            self.0.ssthresh(w, now)
        }
        fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo, c: &Coupling) {
            self.0.cong_avoid(w, ack, c)
        }
        fn set_state(&mut self, w: &mut Window, state: CaState, now: Time) {
            self.0.set_state(w, state, now)
        }
        fn pkts_acked(&mut self, w: &Window, ack: &AckInfo) {
            self.0.pkts_acked(w, ack)
        }
        fn cwnd_event(&mut self, w: &mut Window, ev: CwndEvent, now: Time) {
            self.0.cwnd_event(w, ev, now)
        }
        fn cong_control(&mut self, w: &mut Window, rs: &RateSample, ack: &AckInfo) -> bool {
            self.0.cong_control(w, rs, ack)
        }
        fn undo_cwnd(&mut self, w: &Window) -> u32 {
            self.0.undo_cwnd(w)
        }
        fn pacing_rate_bps(&self) -> Option<u64> {
            self.0.pacing_rate_bps()
        }
    }

    #[test]
    fn new_segments_sent_as_a_burst_leave_the_timers_as_one_by_one() {
        // Both NewReno: only the pushing differs (the probe scheduled once per burst).
        for (sack, rack) in [(true, true), (true, false), (false, false)] {
            for (seed, loss) in [(10, 0.03), (11, 0.01), (12, 0.002), (13, 0.0)] {
                let mk = || TcpSender::new(cfg(sack, rack), Box::new(NewReno), 0, 150_000);
                lockstep(mk(), mk(), seed, loss);
            }
        }
    }

    #[test]
    fn the_clean_ack_path_leaves_the_state_as_the_full_path() {
        // One sender takes `on_clean_ack` where its guards hold, the other every ACK through
        // the full path: the same packets and the same whole state after every step, over
        // lossy and reordering paths (recoveries, timeouts, loss probes, SACKed segments
        // cumulatively acked) and a clean one.
        use crate::mptcp::cc::lia::Lia;
        use crate::tcp::cc::cubic::Cubic;
        let mut clean = 0;
        for (sack, rack) in [(true, true), (true, false), (false, false)] {
            for (seed, loss) in [(30, 0.03), (31, 0.01), (32, 0.002), (33, 0.0)] {
                let algorithms: [fn() -> Box<dyn CongestionControl>; 3] = [
                    || Box::new(NewReno),
                    || Box::new(Cubic::new(true)),
                    || Box::<Lia>::default(),
                ];
                for mk_cc in algorithms {
                    let fast = TcpSender::new(cfg(sack, rack), mk_cc(), 0, 150_000);
                    let mut full = TcpSender::new(cfg(sack, rack), mk_cc(), 0, 150_000);
                    full.full_path_only = true;
                    clean += lockstep(fast, full, seed, loss);
                }
            }
        }
        assert!(clean > 10_000, "the clean path was taken ({clean} ACKs)");
    }

    #[test]
    fn a_clean_ack_with_an_rtt_sample_clears_the_backoff() {
        // A recovery that ends on an ACK without an RTT sample (only a retransmission acked, no
        // timestamp echo) leaves the backoff in Open; the next ACK, clean, samples 50 ms and
        // must clear it as the full path does (RFC 6298 5.7). The lockstep runs hardly reach
        // this: their ACKs echo timestamps.
        let mut s = sender(true, true);
        send_n(&mut s, 1, Time::ZERO);
        let mut v = Vec::new();
        // The probe (PTO = initial RTO, 1 s) retransmits the segment, then the RTO fires at 2 s.
        for _ in 0..2 {
            let t = s.xmit_deadline().unwrap();
            s.on_timer(t, &mut |p| v.push(p), false, || None);
        }
        let t2 = Time::from_secs(2);
        assert_eq!((s.state, s.backoff), (CaState::Loss, 1));
        s.retransmit_lost(t2, &mut |p| v.push(p));
        let t3 = t2 + Time::from_ms(10);
        s.on_ack(&ack(1, &[], Time::ZERO), t3, &Coupling::NONE);
        assert_eq!(
            (s.state, s.backoff, s.rto()),
            (CaState::Open, 1, Time::from_secs(2))
        );
        send_n(&mut s, 2, t3);
        s.on_ack(
            &ack(3, &[], Time::ZERO),
            t3 + Time::from_ms(50),
            &Coupling::NONE,
        );
        assert_eq!(s.clean_acks, 1);
        // SRTT 50 ms, RTTVAR 25 ms: RTO = max(50 + 4 x 25, 200) = 200 ms, not backed off.
        assert_eq!((s.backoff, s.rto()), (0, Time::from_ms(200)));
    }

    #[test]
    fn hooks_an_algorithm_leaves_at_their_defaults_are_skipped_without_effect() {
        use crate::tcp::cc::cubic::Cubic;
        assert_eq!(NewReno.hooks(), Hooks::CONG_AVOID_ONLY);
        assert_eq!(AllHooks(NewReno).hooks(), Hooks::ALL);
        for (sack, rack) in [(true, true), (true, false), (false, false)] {
            for (seed, loss) in [(0, 0.03), (1, 0.03), (2, 0.005), (3, 0.005)] {
                let mk = |cc: Box<dyn CongestionControl>| {
                    TcpSender::new(cfg(sack, rack), cc, 0, 150_000)
                };
                lockstep(
                    mk(Box::new(NewReno)),
                    mk(Box::new(AllHooks(NewReno))),
                    seed,
                    loss,
                );
                lockstep(
                    mk(Box::new(Cubic::new(true))),
                    mk(Box::new(AllHooks(Cubic::new(true)))),
                    seed,
                    loss,
                );
            }
        }
    }

    #[test]
    fn the_coupled_algorithms_leave_the_hooks_they_skip_at_their_defaults() {
        // LIA, OLIA and BALIA declare `cong_avoid` only; alone (no coupling) they run as Reno
        // through the same hooks, so a sender that calls every hook must do the same.
        use crate::mptcp::cc::{balia::Balia, lia::Lia, olia::Olia};
        assert_eq!(Lia::default().hooks(), Hooks::CONG_AVOID_ONLY);
        assert_eq!(Olia::default().hooks(), Hooks::CONG_AVOID_ONLY);
        assert_eq!(Balia::default().hooks(), Hooks::CONG_AVOID_ONLY);
        for (seed, loss) in [(20, 0.03), (21, 0.005)] {
            let mk =
                |cc: Box<dyn CongestionControl>| TcpSender::new(cfg(true, true), cc, 0, 150_000);
            lockstep(
                mk(Box::<Lia>::default()),
                mk(Box::new(AllHooks(Lia::default()))),
                seed,
                loss,
            );
            lockstep(
                mk(Box::<Olia>::default()),
                mk(Box::new(AllHooks(Olia::default()))),
                seed,
                loss,
            );
            lockstep(
                mk(Box::<Balia>::default()),
                mk(Box::new(AllHooks(Balia::default()))),
                seed,
                loss,
            );
        }
    }
}
