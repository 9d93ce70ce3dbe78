//! An MPTCP connection (RFC 8684 semantics) over several subflows.
//!
//! Each subflow is a real TCP sender/receiver pair from `crate::tcp` with its own cwnd, RTT and
//! loss recovery. Above them:
//! - Data sequence numbers (DSN, in segments) and a data-level cumulative ACK carried on every
//!   subflow ACK (RFC 8684 3.3.2); the data receiver delivers in DSN order to the application and
//!   holds out-of-order data in a shared, bounded receive buffer. The window it advertises is
//!   that buffer, relative to the data ACK, so the sender never has more than one buffer of data
//!   beyond the oldest undelivered segment: head-of-line blocking emerges when a slow subflow
//!   holds the data ACK back.
//! - The connection-level send buffer keeps data until it is data-ACKed.
//! - A scheduler (`super::sched`) chooses the subflow for each segment; backups only when no
//!   regular subflow is usable (RFC 8684 3.3.8).
//! - Reinjection: at a subflow's retransmission timeout its unacknowledged data is queued for
//!   other subflows and the subflow is "potentially failed" until it makes progress
//!   (multipath-tcp.org `mptcp_sub_timeout()`/`tp->pf`), or, with `reinject = "stale"`, only after
//!   `stale_loss_cnt` timeouts without progress (upstream Linux net/mptcp/pm.c
//!   `mptcp_pm_subflows_chk_stale()`, `net.mptcp.stale_loss_cnt`).
//! - MP_PRIO (RFC 8684 3.3.8): the data sender's own change applies at once; the data receiver's
//!   travels as an option on a pure ACK of that subflow and applies when it reaches the sender.
//!
//! Not modelled: option bytes beyond a fixed header, the MP_CAPABLE/MP_JOIN handshakes (subflows
//! exist from the start), middleboxes, DSS checksums, data FIN, ADD_ADDR/REMOVE_ADDR.

use super::linux::{self, Drs, RetransView};
use super::sched::{self, ConnInfo, Decision, Feedback, Scheduler, SubflowInfo};
use crate::flows::common::{arm, take_wake, App, FlowOps};
use crate::net::packet::{flags, Kind, Packet};
use crate::net::{Net, Side};
use crate::results::{AvgMax, BufferStats, FlowSummary, Series, SubflowSummary};
use crate::tcp::cc::{self, Coupling, SubflowView, Window};
use crate::tcp::receiver::{AckDecision, LinuxAck, ReceiverConfig, TcpReceiver};
use crate::tcp::sender::{Room, SenderConfig, TcpSender};
use railpath_core::{Rng, Time};
use railpath_scenario::{MptcpCc, MptcpSpec, PrioBy, Reinject};
use std::collections::VecDeque;

/// Bytes of an MP_PRIO option (RFC 8684 3.3.8, with the address ID).
const MP_PRIO_BYTES: u16 = 4;

/// The timer id of the connection-level (MPTCP) retransmit timer.
const MSK_TIMER: u16 = u16::MAX;

pub(crate) struct Subflow {
    /// Subflow id: the link id, with "#k" when the flow has several subflows on that link.
    pub link_id: String,
    /// The link it runs over.
    pub link_name: String,
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub ack_route: u32,
    /// Backup as the data sender sees it (what scheduling obeys).
    pub backup: bool,
    /// Potentially failed / stale: not offered to the scheduler until it makes progress.
    pub failed: bool,
    /// Its interface is unplugged (`unplug` links): the subflow is gone, what arrives for it is
    /// discarded, until a new one replaces it.
    pub removed: bool,
    rto_seen: u64,
    retrans_seen: u64,
    rtos_without_progress: u32,
    pace_wait: Option<Time>,
    /// Redundant scheduling: the next DSN this subflow has not carried yet.
    red_next: u64,
    /// Linux send path: data the scheduler gave this subflow and it has not sent yet (its write
    /// queue), and its payload bytes.
    wq: VecDeque<(u64, u32)>,
    wq_bytes: u64,
    /// Linux send path: the subflow's autotuned send buffer, bytes (`sk_sndbuf`).
    sndbuf: u64,
    /// Linux send path: no new data (MPTCP-level loss state) until an ACK arrives on it.
    stale: bool,
    /// MPTCP-level retransmission intervals without an ACK while data was outstanding.
    stale_count: u32,
    /// ACKs received, and their count at the last MPTCP-level timer expiry.
    acks: u64,
    acks_at_expiry: u64,
    /// Payload bytes this subflow delivered in order to the data level.
    pub delivered_bytes: u64,
    bin_bytes: u64,
    goodput: Vec<f64>,
    cwnd: Vec<f64>,
    srtt: Vec<f64>,
}

impl Subflow {
    /// Whether the subflow may send a segment now; when pacing holds it, notes until when.
    #[inline]
    fn has_room(&mut self, now: Time) -> bool {
        if !self.sender.sndbuf_allows_new() {
            return false;
        }
        match self.sender.room(now) {
            Room::Yes => true,
            Room::PacedUntil(t) => {
                self.pace_wait = Some(t);
                false
            }
            Room::No => false,
        }
    }
}

/// A scripted MP_PRIO change.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PrioScript {
    pub t: Time,
    pub sub: usize,
    pub backup: bool,
    pub by: PrioBy,
}

/// Static settings of a connection.
pub(crate) struct MptcpSetup<'a> {
    pub idx: u32,
    pub id: &'a str,
    pub start: Time,
    pub spec: &'a MptcpSpec,
    /// (data route, ack route) per subflow.
    pub routes: Vec<(u32, u32)>,
    pub seed: u64,
    pub nbins: usize,
    /// PHA / PHA-D, computed from the train's position timeline before the run.
    pub plan: Option<crate::mechanisms::pha::Plan>,
    /// Interfaces unplugged and plugged back: (time, subflow, plugged back).
    pub unplugs: Vec<(Time, usize, bool)>,
}

pub(crate) struct MptcpFlow {
    pub idx: u32,
    pub id: String,
    cc_name: String,
    sched_name: String,
    pub start: Time,
    pub app: App,
    mss: u32,
    pub subflows: Vec<Subflow>,
    scheduler: Box<dyn Scheduler>,
    /// The scheduler learns from feedback (else none is built).
    learns: bool,
    /// The scheduler sends every segment on every subflow (`Scheduler::redundant`).
    redundant: bool,
    /// The scheduler reads only the light part of the snapshot (`Scheduler::light_snapshot`)
    /// and wants no feedback: the rest of each entry is left at its default.
    light: bool,
    /// The scheduler's pick depends on its inputs alone (`Scheduler::pure_pick`) and reads a
    /// light snapshot: `push_scheduled` reuses a pick while the snapshot it answered is
    /// unchanged (tests turn it off to check the two ways agree).
    pub(crate) reuse_pick: bool,
    /// `push_scheduled` sends each run of new segments on one subflow as a burst, its loss
    /// probe scheduled once after the run (`TcpSender::send_new_in_burst`), where `send_new`
    /// schedules it after every segment (tests turn it off to check the two ways agree).
    pub(crate) burst_sends: bool,
    /// `push_scheduled` takes its loop for new data only (`push_new_data`) when no
    /// reinjection is queued (tests turn it off to check the two loops agree).
    pub(crate) fast_new_data: bool,
    /// Coupled congestion control (else no sibling views are built per ACK).
    coupled: bool,
    reinject_rule: Reinject,
    stale_loss_cnt: u32,
    /// The upstream Linux send path (`reinject = "linux"`).
    linux: Option<LinuxSend>,
    /// Dynamic right-sizing of the data receiver's buffer (else a fixed `rcv_buf_segs`), and
    /// the bytes the application had read when it last looked.
    drs: Option<Drs>,
    drs_read: u64,
    // data-level sender
    data_una: u64,
    /// Right edge of the peer's data-level window (first DSN it cannot take).
    peer_right_edge: u64,
    send_buffer_limit: Option<u64>,
    /// DSNs queued for reinjection with the subflow they came from.
    reinject_q: VecDeque<(u64, u16)>,
    /// The DSNs in [data_una, app.next) queued for reinjection once already, ascending (each
    /// segment is reinjected at most once). Written only when a subflow fails or is unplugged
    /// and pruned when the data ACK passes it, so new data and data ACKs do not touch it.
    reinjected: Vec<u64>,
    reinjections: u64,
    // data-level receiver
    rx: DataReceiver,
    /// The segments the subflow receivers hold out of order, summed ([`Self::subflow_held`]),
    /// kept in step as each receiver takes data (the only way their count changes) and when
    /// a subflow's receiver is replaced, so a data packet does not sum over every subflow.
    pub(crate) subflow_ooo: u64,
    rcv_buf_segs: u64,
    /// Bytes the application has read, when it reads at its own pace (a relay): what was
    /// delivered in order and not read keeps its room in the receive buffer, so the advertised
    /// window shrinks by it. None: the application reads everything at once.
    pub app_read: Option<u64>,
    /// The right edge of the window the last ACK advertised, in delivered bytes.
    adv_edge: u64,
    pub completed_at: Option<Time>,
    // scripted control
    pub prio_script: Vec<PrioScript>,
    /// Interfaces unplugged and plugged back: (time, subflow, plugged back): `control`
    /// indices after the prio script's.
    pub unplugs: Vec<(Time, usize, bool)>,
    /// Per entry of `unplugs` that plugs back: the new subflow's TCP sender and receiver,
    /// built at the start as the first ones were.
    spares: Vec<Option<Box<(TcpSender, TcpReceiver)>>>,
    /// Times to look again at scheduling (when a PHA block ends): `control` indices after the
    /// unplugs.
    pub wakes: Vec<Time>,
    /// PHA's blocks (also checked on every new send) and PHA-D's backup times, for statistics.
    pha_blocks: Option<crate::mechanisms::pha::BlockReader>,
    phad_backup: Option<crate::mechanisms::pha::Blocks>,
    mechanisms: Vec<String>,
    pha_stats: crate::results::PhaStats,
    /// The BLOAT paper's transmission-status monitoring buffer and its detection and
    /// retransmission (`mechanisms = ["bloat-monitor"]`).
    monitor: Option<crate::mechanisms::bloat::Monitor>,
    bloat: Option<Box<crate::mechanisms::bloat::BloatState>>,
    // statistics
    goodput: Vec<f64>,
    rcv_buf_samples: Vec<f64>,
    snd_buf_samples: Vec<f64>,
    rcv_buf_max: u64,
    snd_buf_max: u64,
    /// With the monitor: packets not yet covered by both their subflow-level and the data-level
    /// ACK (the BLOAT paper's MPTCP send buffer: its records), per bin, and the largest sample.
    held_samples: Vec<f64>,
    held_max: u64,
    // scratch, reused so the hot path does not allocate
    /// The coupled congestion control's view of every subflow (`fill_views`), kept in step:
    /// after an ACK only the ACKed subflow's entry is rewritten (`refresh_view`); any other
    /// change of a sender or of the flags `active` reads marks them all stale.
    views: Vec<SubflowView>,
    /// The views must be rebuilt before they are read.
    views_stale: bool,
    infos: Vec<SubflowInfo>,
}

/// The coupled congestion control's view of a subflow's sender (`active` as the caller
/// decides it): what `fill_views` writes for every subflow and `refresh_view` for one.
#[inline(always)]
fn view_of(s: &TcpSender, active: bool) -> SubflowView {
    SubflowView {
        cwnd: s.cwnd(),
        srtt: s.srtt(),
        mss: s.cfg.mss,
        delivered_since_loss: s.delivered_since_loss,
        delivered_between_losses: s.delivered_between_losses,
        active,
    }
}

/// Linux send path: a subflow's `(sk_stream_memory_free, sk_wmem_queued)`: skb memory, payload
/// plus each skb's overhead, against its send buffer. Out of line: the other send paths' hot
/// `info()` stays small.
#[inline(never)]
fn linux_memory(sf: &Subflow, pacing_bps: u64) -> (bool, u64) {
    let s = &sf.sender;
    let mss = s.cfg.mss;
    let per_seg = linux::wmem_per_segment(
        mss,
        super::sched::linux_default::pacing_rate(&SubflowInfo {
            srtt: s.srtt(),
            cwnd: s.cwnd(),
            mss,
            pacing_rate_bps: pacing_bps,
            ..SubflowInfo::default()
        }),
    );
    let wmem = (s.packets_out() as u64 + sf.wq.len() as u64) * per_seg;
    (wmem < sf.sndbuf, wmem)
}

/// The scheduler's view of subflow `sf` (index `i`) now: light (only what a light scheduler
/// reads, `SubflowInfo::light`) or full; `linux`: the Linux send path's space rule.
#[inline(always)]
fn info(sf: &mut Subflow, i: usize, now: Time, light: bool, linux: bool) -> SubflowInfo {
    let room = sf.sender.room(now);
    if let Room::PacedUntil(t) = room {
        sf.pace_wait = Some(t);
    }
    let s = &sf.sender;
    if light && !linux {
        return SubflowInfo::light(
            i,
            s.srtt(),
            sf.backup,
            !sf.failed && !sf.stale,
            room == Room::Yes && s.sndbuf_allows_new(),
        );
    }
    let mss = s.cfg.mss;
    let pacing = s
        .pacing_rate_bps()
        .map_or(0, |r| r * mss as u64 / (mss + s.cfg.header) as u64);
    // Linux send path: a subflow takes data while its send buffer has room (it queues beyond
    // its cwnd); what it holds is all it has not had acknowledged plus its write queue.
    let (has_space, queued_bytes) = if linux {
        linux_memory(sf, pacing)
    } else {
        (
            room == Room::Yes && s.sndbuf_allows_new(),
            s.in_flight() as u64 * mss as u64,
        )
    };
    SubflowInfo {
        id: i,
        srtt: s.srtt(),
        rttvar: s.rttvar(),
        min_rtt: s.min_rtt(),
        cwnd: s.cwnd(),
        in_flight: s.in_flight(),
        mss,
        backup: sf.backup,
        usable: !sf.failed && !sf.stale,
        has_space,
        pacing_rate_bps: pacing,
        queued_bytes,
        retransmissions: s.stats.retransmitted_packets,
        rto_count: s.stats.rto_count,
    }
}

/// State of the upstream Linux send path (`reinject = "linux"`, see `super::linux`).
struct LinuxSend {
    /// The MPTCP-level retransmit timer's deadline, and the wake-up armed for it.
    rtx_at: Option<Time>,
    armed: Option<Time>,
    /// `tcp_wmem`.
    wmem: [u64; 3],
    /// Segments per MPTCP data fragment (one is resent per timer expiry).
    dfrag_segs: u64,
    /// After a subflow went stale, the retransmit queue is pushed again from the start
    /// (`__mptcp_retransmit_pending_data()`): the next DSN to push again and the end.
    repush: Option<(u64, u64)>,
}

/// The data-level receiver: reassembly in DSN order; what is out of order waits in the shared
/// receive buffer.
struct DataReceiver {
    /// Next DSN to deliver to the application.
    rcv_nxt: u64,
    /// Out-of-order data: slot i holds DSN rcv_nxt + i (len, arrival).
    ooo: VecDeque<Option<(u32, Time)>>,
    ooo_count: u64,
    delivered_bytes: u64,
    bin_bytes: u64,
    reorder_sum: Time,
    reorder_max: Time,
    reorder_count: u64,
    /// Segments delivered in order, (DSN, bytes), when a relay reads them.
    tap: Option<Vec<(u64, u32)>>,
}

impl DataReceiver {
    /// A segment became in-order at subflow level (it arrived at `arrived`). Returns false for a
    /// copy of data already delivered (a reinjection or redundant scheduling), which changes
    /// nothing.
    fn arrive(&mut self, dsn: u64, len: u32, arrived: Time, now: Time) -> bool {
        if dsn < self.rcv_nxt {
            return false;
        }
        if dsn == self.rcv_nxt {
            self.deliver(len, arrived, now);
            if !self.ooo.is_empty() {
                self.ooo.pop_front();
            }
            while let Some(Some((l, a))) = self.ooo.front().copied() {
                self.ooo.pop_front();
                self.ooo_count -= 1;
                self.deliver(l, a, now);
            }
        } else {
            let off = (dsn - self.rcv_nxt) as usize;
            // Usually one slot more (data arrives out of order one segment at a time).
            while self.ooo.len() <= off {
                self.ooo.push_back(None);
            }
            if self.ooo[off].is_none() {
                self.ooo[off] = Some((len, arrived));
                self.ooo_count += 1;
            }
        }
        true
    }

    fn deliver(&mut self, len: u32, arrived: Time, now: Time) {
        if let Some(t) = &mut self.tap {
            t.push((self.rcv_nxt, len));
        }
        self.rcv_nxt += 1;
        self.delivered_bytes += len as u64;
        self.bin_bytes += len as u64;
        let d = now - arrived;
        self.reorder_sum += d;
        self.reorder_max = self.reorder_max.max(d);
        self.reorder_count += 1;
    }
}

impl MptcpFlow {
    pub fn new(setup: MptcpSetup) -> MptcpFlow {
        let f = setup.spec;
        let tcp = &f.tcp;
        // Subflow j's TCP sender and receiver; `generation` > 0 for the new subflows that replace
        // one whose interface was unplugged (their own random streams).
        let build = |j: usize, data_route: u32, generation: usize| {
            let mut scfg = SenderConfig::from_tcp(tcp);
            if let Some(wb) = f.subflow_window_bytes {
                // Each subflow's own fixed window (Kheirkhah's ns-3 MPTCP,
                // `MpTcpSocketBase::AvailableWindow`: min(the peer's 65535, cwnd) less the
                // subflow's unacknowledged bytes, no new segment in less than an MSS) bounds
                // what a fixed send buffer bounds: segments sent and not cumulatively acked.
                let segs = (wb / u64::from(tcp.mss_bytes)).clamp(1, u64::from(u32::MAX)) as u32;
                scfg.send_buffer_segs = Some(scfg.send_buffer_segs.map_or(segs, |s| s.min(segs)));
            }
            let w = Window::new(scfg.initial_window, scfg.mss);
            let stream = match generation {
                0 => format!("cc/{}/{j}", setup.id),
                g => format!("cc/{}/{j}/{g}", setup.id),
            };
            let cc = match f.cc {
                MptcpCc::Uncoupled(single) => cc::build(
                    single,
                    &w,
                    cc::CcParams {
                        hystart: tcp.hystart,
                        header_bytes: tcp.header_bytes,
                        rng: Rng::stream(setup.seed, &stream),
                    },
                ),
                MptcpCc::Coupled(c) => super::cc::build_coupled(c),
            };
            let mut sender = TcpSender::new(scfg, cc, data_route, tcp.receive_window_bytes);
            sender.use_rwnd = false;
            let receiver = TcpReceiver::new(ReceiverConfig::from_tcp(tcp));
            (sender, receiver)
        };
        let mut subflows = Vec::with_capacity(f.subflows.len());
        for (j, (sub, &(data_route, ack_route))) in f.subflows.iter().zip(&setup.routes).enumerate()
        {
            let (sender, receiver) = build(j, data_route, 0);
            subflows.push(Subflow {
                link_id: sub.name.clone(),
                link_name: sub.path_id.clone(),
                sender,
                receiver,
                ack_route,
                backup: sub.backup,
                failed: false,
                removed: false,
                rto_seen: 0,
                retrans_seen: 0,
                rtos_without_progress: 0,
                pace_wait: None,
                red_next: 0,
                wq: VecDeque::new(),
                wq_bytes: 0,
                sndbuf: linux::sndbuf_target(tcp.initial_window, tcp.mss_bytes, tcp.wmem_bytes[2])
                    .max(tcp.wmem_bytes[1]),
                stale: false,
                stale_count: 0,
                acks: 0,
                acks_at_expiry: 0,
                delivered_bytes: 0,
                bin_bytes: 0,
                goodput: Vec::with_capacity(setup.nbins),
                cwnd: Vec::with_capacity(setup.nbins),
                srtt: Vec::with_capacity(setup.nbins),
            });
        }
        let mut spares: Vec<Option<Box<(TcpSender, TcpReceiver)>>> = Vec::new();
        for (k, &(_, j, plugged)) in setup.unplugs.iter().enumerate() {
            spares.push(plugged.then(|| Box::new(build(j, subflows[j].sender.route, k + 1))));
        }
        let sched_name = f.scheduler.as_str().to_string();
        let mut scheduler = sched::build(
            f.scheduler,
            Rng::stream(setup.seed, &format!("sched/{}", setup.id)),
        );
        let plan = setup.plan;
        let mut wakes = Vec::new();
        let mut pha_blocks = None;
        let mut phad_backup = None;
        if let Some(p) = &plan {
            if p.kind == crate::mechanisms::pha::PlanKind::Pha {
                // Algorithm 1: the wrapped scheduler never sees a blocked subflow; the
                // connection looks again when a block ends.
                scheduler = Box::new(crate::mechanisms::pha::Pha::new(
                    scheduler,
                    p.blocks.clone(),
                ));
                wakes = p.blocks.ends().collect();
                wakes.sort();
                wakes.dedup();
                pha_blocks = Some(crate::mechanisms::pha::BlockReader::new(p.blocks.clone()));
            } else {
                phad_backup = Some(p.backup.clone());
            }
        }
        let mss = tcp.mss_bytes;
        let rcv_buf_segs = f
            .receive_buffer_packets
            .map(u64::from)
            .unwrap_or((tcp.receive_window_bytes / mss as u64).max(2));
        // A change names a link: it applies to every subflow over that link.
        let mut prio_script = Vec::new();
        // PHA-D: the receiver's MP_PRIO around each predicted handover.
        for &(t, sub, backup) in plan.iter().flat_map(|p| p.prio.iter()) {
            prio_script.push(PrioScript {
                t,
                sub,
                backup,
                by: PrioBy::Receiver,
            });
        }
        for pc in &f.prio_changes {
            // A change names a path: it applies to every subflow over that path.
            for &sub in &pc.subflows {
                prio_script.push(PrioScript {
                    t: Time::from_secs_f64(pc.t_s),
                    sub,
                    backup: pc.backup,
                    by: pc.by,
                });
            }
        }
        let n = subflows.len();
        let reinject_rule = f.reinject;
        let linux = (reinject_rule == Reinject::Linux).then(|| LinuxSend {
            rtx_at: None,
            armed: None,
            wmem: tcp.wmem_bytes,
            dfrag_segs: (linux::DFRAG_BYTES / mss as u64).max(1),
            repush: None,
        });
        if linux.is_some() && !tcp.rto_formula_set {
            // Subflows are Linux TCP: RTO = SRTT + max(4 RTTVAR, min_rto) (`__tcp_set_rto()`).
            for sf in &mut subflows {
                sf.sender.cfg.linux_rto = true;
            }
            for sp in spares.iter_mut().flatten() {
                sp.0.cfg.linux_rto = true;
            }
        }
        let drs = f
            .receive_buffer_autotune
            .then(|| Drs::new(tcp.rmem_bytes, mss, setup.start));
        let rcv_buf_segs = match &drs {
            Some(d) => (d.window / mss as u64).max(2),
            None => rcv_buf_segs,
        };
        if let Some(d) = &drs {
            // The subflows are Linux TCP receivers: quick ACKs while their window grows.
            for sf in &mut subflows {
                sf.receiver.enable_linux_ack(LinuxAck::new(d.window, mss));
            }
            for sp in spares.iter_mut().flatten() {
                sp.1.enable_linux_ack(LinuxAck::new(d.window, mss));
            }
        }
        let bloat = f.bloat_monitor();
        MptcpFlow {
            idx: setup.idx,
            id: setup.id.to_string(),
            cc_name: f.cc.name(),
            sched_name,
            start: setup.start,
            app: App::new(f.bytes, mss),
            mss,
            subflows,
            learns: scheduler.wants_feedback(),
            redundant: scheduler.redundant(),
            light: scheduler.light_snapshot() && !scheduler.wants_feedback(),
            reuse_pick: scheduler.light_snapshot()
                && !scheduler.wants_feedback()
                && scheduler.pure_pick()
                && reinject_rule != Reinject::Linux,
            burst_sends: true,
            fast_new_data: true,
            scheduler,
            coupled: f.cc.coupled(),
            reinject_rule,
            stale_loss_cnt: f.stale_loss_cnt(),
            linux,
            drs,
            drs_read: 0,
            data_una: 0,
            peer_right_edge: rcv_buf_segs,
            send_buffer_limit: f.send_buffer_packets.map(u64::from),
            reinject_q: VecDeque::new(),
            reinjected: Vec::new(),
            reinjections: 0,
            rx: DataReceiver {
                rcv_nxt: 0,
                ooo: VecDeque::with_capacity(16),
                ooo_count: 0,
                delivered_bytes: 0,
                bin_bytes: 0,
                reorder_sum: Time::ZERO,
                reorder_max: Time::ZERO,
                reorder_count: 0,
                tap: None,
            },
            subflow_ooo: 0,
            rcv_buf_segs,
            app_read: None,
            adv_edge: 0,
            completed_at: None,
            prio_script,
            unplugs: setup.unplugs,
            spares,
            wakes,
            pha_blocks,
            phad_backup,
            mechanisms: f.mechanisms.iter().map(|m| m.name().to_string()).collect(),
            pha_stats: Default::default(),
            monitor: bloat.map(|_| crate::mechanisms::bloat::Monitor::new(n)),
            bloat: bloat.map(|o| {
                Box::new(crate::mechanisms::bloat::BloatState::new(
                    n,
                    setup.start,
                    setup.nbins,
                    o.retransmit,
                    o.average_s.map(Time::from_secs_f64),
                ))
            }),
            goodput: Vec::with_capacity(setup.nbins),
            rcv_buf_samples: Vec::with_capacity(setup.nbins),
            snd_buf_samples: Vec::with_capacity(setup.nbins),
            rcv_buf_max: 0,
            snd_buf_max: 0,
            held_samples: Vec::with_capacity(setup.nbins),
            held_max: 0,
            views: Vec::with_capacity(n),
            views_stale: true,
            infos: Vec::with_capacity(n),
        }
    }

    /// Segments held at the receiver waiting for earlier data (data and subflow level).
    fn rcv_held(&self) -> u64 {
        self.rx.ooo_count + self.subflow_held()
    }

    /// Segments held out of order by the subflow receivers.
    pub(crate) fn subflow_held(&self) -> u64 {
        self.subflows
            .iter()
            .map(|s| s.receiver.ooo_segments() as u64)
            .sum::<u64>()
    }

    fn send_buffered(&self) -> u64 {
        self.app.next - self.data_una
    }

    /// The span of the send buffer when data leaves it only once both the subflow-level and the
    /// data-level ACK cover it, and only from its head (a stream buffer): from the oldest DSN
    /// at the head of the data level or of a subflow's unacknowledged segments, to the newest
    /// sent. The monitor's suspicion test reads it.
    fn held_both_levels(&self) -> u64 {
        let oldest = self
            .subflows
            .iter()
            .filter_map(|s| s.sender.outstanding().next().map(|(d, _, _)| d))
            .fold(self.data_una, u64::min);
        self.app.next - oldest.min(self.app.next)
    }

    /// The monitor: a segment the scheduler gave subflow `i` went out as its segment `seq`.
    #[inline]
    fn note_assign(&mut self, i: usize, dsn: u64, seq: u64, len: u32, now: Time) {
        if let Some(m) = self.monitor.as_mut() {
            m.assign(i, dsn, seq, len, now);
        }
    }

    /// BLOAT after an ACK: the detection runs (and queues packets to send again).
    #[cold]
    fn bloat_on_ack(&mut self, now: Time) {
        let held = self.held_both_levels();
        let data_una = self.data_una;
        let (Some(b), Some(m)) = (self.bloat.as_mut(), self.monitor.as_ref()) else {
            return;
        };
        let paths = self
            .subflows
            .iter()
            .map(|s| (s.sender.cwnd(), s.sender.min_rtt(), !s.failed && !s.stale));
        b.on_ack(m, now, held, data_una, paths);
    }

    /// BLOAT: send the queued packets of the problem path on the normal path, while it has room.
    #[cold]
    fn push_hol(&mut self, now: Time, net: &mut Net) {
        loop {
            let Some(&(dsn, to)) = self.bloat.as_ref().and_then(|b| b.queue.front()) else {
                return;
            };
            if dsn >= self.data_una {
                let sf = &mut self.subflows[to];
                if sf.failed || sf.stale || !sf.has_room(now) {
                    return;
                }
                let len = self.app.len_of(dsn);
                let seq = sf.sender.snd_nxt();
                sf.sender.send_new(dsn, len, now, &mut |p| {
                    net.send(p);
                });
                self.note_assign(to, dsn, seq, len, now);
                if let Some(b) = self.bloat.as_mut() {
                    b.stats.hol_retransmissions += 1;
                }
            }
            if let Some(b) = self.bloat.as_mut() {
                b.queue.pop_front();
            }
        }
    }

    /// The data receiver's whole window, bytes: the autotuned one, or the fixed buffer.
    fn rcv_window_bytes(&self) -> u64 {
        match &self.drs {
            Some(d) => d.window,
            None => self.rcv_buf_segs * self.mss as u64,
        }
    }

    /// The window an ACK advertises, relative to the data ACK. With a fixed buffer, the whole
    /// buffer (held data lies inside it); autotuned, as Linux `__mptcp_space()`: the window less
    /// the data held out of order, which is charged against the receive buffer.
    fn advertised_window(&self) -> u64 {
        let w = match &self.drs {
            Some(d) => d.window.saturating_sub(self.rx.ooo_count * self.mss as u64),
            None => self.rcv_buf_segs * self.mss as u64,
        };
        w.saturating_sub(self.unread())
    }

    /// Delivered in order and not read by the application, bytes.
    fn unread(&self) -> u64 {
        self.app_read
            .map_or(0, |r| self.rx.delivered_bytes.saturating_sub(r))
    }

    /// What is left of the window the last ACK advertised, bytes (Linux
    /// `tcp_receive_window()`).
    pub fn advertised_left(&self) -> u64 {
        self.adv_edge.saturating_sub(self.rx.delivered_bytes)
    }

    /// The data-level window the receiver would advertise now, bytes: with Linux receivers, at
    /// most the largest of the subflows' `rcv_ssthresh` (the sender keeps the largest edge).
    pub fn receive_window(&self) -> u64 {
        let free = self.advertised_window();
        self.subflows
            .iter()
            .filter_map(|sf| sf.receiver.linux_ack_state().map(|l| l.rcv_ssthresh))
            .max()
            .map_or(free, |m| free.min(m))
    }

    /// Record the segments the data level delivers in order, for [`MptcpFlow::take_delivered`].
    pub fn tap_deliveries(&mut self) {
        self.rx.tap = Some(Vec::new());
    }

    /// The segments delivered in order since the last call, (DSN, bytes).
    pub fn take_delivered(&mut self, into: &mut Vec<(u64, u32)>) {
        if let Some(t) = &mut self.rx.tap {
            into.append(t);
        }
    }

    /// A window update (the application read and the window opened): an ACK on every subflow
    /// still working, so that one lost with a path in an outage does not leave the sender
    /// waiting for its persist timer.
    pub fn window_update(&mut self, net: &mut Net) {
        for j in 0..self.subflows.len() {
            if !self.subflows[j].failed {
                self.send_ack(j, net);
            }
        }
    }

    /// The receiver's RTT estimate for dynamic right-sizing: the largest of its subflows'
    /// (`mptcp_rcv_space_adjust()`; the simulator reads the senders' smoothed RTTs, which the
    /// receiver's timestamp-based estimate follows).
    fn receiver_rtt(&self) -> Time {
        self.subflows
            .iter()
            .map(|s| s.sender.srtt())
            .max()
            .unwrap_or(Time::ZERO)
    }

    /// Linux `sk_stream_memory_free()` of the connection: what it keeps (sent or queued, not
    /// data-ACKed) is below its send buffer, `tcp_wmem[0]` plus its subflows' buffers
    /// (`__mptcp_sync_sndbuf()`).
    fn msk_memory_free(&self, ls: &LinuxSend) -> bool {
        let sndbuf = ls.wmem[0] + self.subflows.iter().map(|s| s.sndbuf).sum::<u64>();
        self.send_buffered() * (self.mss as u64) < sndbuf
    }

    /// The scheduler's choice for the next segment, if some usable subflow has space and the
    /// scheduler picks one of those (both send paths ask the same way).
    fn pick_subflow(&mut self, now: Time) -> Option<usize> {
        let light = ConnInfo::light(now, self.mss);
        self.pick_subflow_with(now, &light)
    }

    /// [`Self::pick_subflow`] with the light connection snapshot `light` made once by the
    /// caller (it holds only `now` and the MSS, the same for every segment of one push).
    #[inline(always)]
    fn pick_subflow_with(&mut self, now: Time, light: &ConnInfo) -> Option<usize> {
        // Nothing can take a segment now: no decision to ask for.
        if !self.infos.iter().any(|i| i.usable && i.has_space) {
            return None;
        }
        let i = self.ask_scheduler(now, light)?;
        self.infos
            .get(i)
            .is_some_and(|x| x.usable && x.has_space)
            .then_some(i)
    }

    /// The scheduler's answer on the snapshot in `infos`, with the light connection view
    /// `light` or, for a scheduler that reads more, the full one: the subflow it sends on, if
    /// it sends.
    #[inline(always)]
    fn ask_scheduler(&mut self, now: Time, light: &ConnInfo) -> Option<usize> {
        let full;
        let conn = if self.light {
            light
        } else {
            full = self.conn_info(now);
            &full
        };
        match self.scheduler.pick(&self.infos, conn) {
            Decision::Send(i) => Some(i),
            Decision::Wait => None,
        }
    }

    /// [`Self::pick_subflow_with`] given which entries can take a segment (`ready`, bit i for
    /// entry i, as [`Self::snapshot`] returns it; at most 64 subflows).
    #[inline(always)]
    fn pick_ready(&mut self, now: Time, light: &ConnInfo, ready: u64) -> Option<usize> {
        if ready == 0 {
            return None;
        }
        let i = self.ask_scheduler(now, light)?;
        (i < 64 && ready >> i & 1 != 0).then_some(i)
    }

    fn conn_info(&self, now: Time) -> ConnInfo {
        let queued = match self.app.total_segs {
            None => u64::MAX,
            Some(n) => n - self.app.next,
        }
        .saturating_add(self.reinject_q.len() as u64);
        ConnInfo {
            now,
            queued_segments: queued,
            rcv_wnd_free: self.peer_right_edge.saturating_sub(self.app.next) * self.mss as u64,
            rcv_wnd: self.rcv_window_bytes(),
            data_in_flight: self.send_buffered() * self.mss as u64,
            mss: self.mss,
        }
    }

    /// Rebuild the scheduler's snapshot of every subflow, in place. Returns the entries that
    /// can take a segment (`usable && has_space`) as a bit mask, bit i for entry i (entries
    /// beyond 64 are not in it: the callers that read it have at most 64 subflows).
    #[inline(always)]
    fn snapshot(&mut self, now: Time) -> u64 {
        let n = self.subflows.len();
        if self.infos.len() != n {
            self.infos.clear();
            self.infos.resize(n, SubflowInfo::default());
        }
        let (light, linux) = (self.light, self.linux.is_some());
        let mut ready = 0u64;
        if light && !linux {
            // A light entry is written only here and by `refresh_after_send` (its `has_space`)
            // and the reinjection's hiding (its `usable`): every other field stays at its
            // default, so only the light fields are written again (`SubflowInfo::light`).
            for (i, (sf, slot)) in self.subflows.iter_mut().zip(&mut self.infos).enumerate() {
                let room = sf.sender.room(now);
                if let Room::PacedUntil(t) = room {
                    sf.pace_wait = Some(t);
                }
                let s = &sf.sender;
                slot.id = i;
                slot.srtt = s.srtt();
                slot.backup = sf.backup;
                slot.usable = !sf.failed && !sf.stale;
                slot.has_space = room == Room::Yes && s.sndbuf_allows_new();
                ready |= ((slot.usable && slot.has_space) as u64) << (i & 63);
            }
            return ready;
        }
        for (i, (sf, slot)) in self.subflows.iter_mut().zip(&mut self.infos).enumerate() {
            *slot = info(sf, i, now, light, linux);
            ready |= ((slot.usable && slot.has_space) as u64) << (i & 63);
        }
        ready
    }

    /// The scheduler's view of subflow `i` now.
    #[inline(always)]
    fn info(&mut self, i: usize, now: Time) -> SubflowInfo {
        info(
            &mut self.subflows[i],
            i,
            now,
            self.light,
            self.linux.is_some(),
        )
    }

    /// Refresh subflow `i`'s entry after it sent a segment. A send changes only what the room
    /// depends on (in flight, pacing, counters), not the sRTT, backup or usable flags: a light
    /// entry needs only its `has_space` again.
    /// Returns the entry's new `has_space`.
    #[inline(always)]
    fn refresh_after_send(&mut self, i: usize, now: Time) -> bool {
        if self.light && self.linux.is_none() {
            let sf = &mut self.subflows[i];
            let room = sf.sender.room(now);
            if let Room::PacedUntil(t) = room {
                sf.pace_wait = Some(t);
            }
            let has_space = room == Room::Yes && sf.sender.sndbuf_allows_new();
            if let Some(e) = self.infos.get_mut(i) {
                e.has_space = has_space;
            }
            has_space
        } else {
            let e = self.info(i, now);
            self.infos[i] = e;
            e.has_space
        }
    }

    /// Next segment to schedule: a reinjection first, then new data within the windows.
    fn next_segment(&mut self) -> Option<(u64, u32, Option<usize>)> {
        while let Some(&(dsn, from)) = self.reinject_q.front() {
            if dsn < self.data_una {
                self.reinject_q.pop_front();
                continue;
            }
            return Some((dsn, self.app.len_of(dsn), Some(from as usize)));
        }
        if !self.app.has_data() || self.app.next >= self.peer_right_edge {
            return None;
        }
        if self
            .send_buffer_limit
            .is_some_and(|l| self.send_buffered() >= l)
        {
            return None;
        }
        Some((self.app.next, self.app.len_of(self.app.next), None))
    }

    /// The first DSN of new data that [`Self::next_segment`] would refuse: the peer's window,
    /// the application's data (all of it, or what a relay fed) and the send buffer limit. None of
    /// them moves while one push sends (only `app.next` does), so there its test of new data
    /// is `app.next < new_data_end()`.
    fn new_data_end(&self) -> u64 {
        let mut end = self.peer_right_edge;
        match &self.app.fed {
            Some(q) => end = end.min(self.app.next + q.segments.len() as u64),
            None => {
                if let Some(n) = self.app.total_segs {
                    end = end.min(n);
                }
            }
        }
        if let Some(l) = self.send_buffer_limit {
            // send_buffered() >= l, i.e. app.next - data_una >= l.
            end = end.min(self.data_una.saturating_add(l));
        }
        end
    }

    /// [`Self::next_segment`] within one push, given its [`Self::new_data_end`].
    #[inline(always)]
    fn next_segment_before(&mut self, new_end: u64) -> Option<(u64, u32, Option<usize>)> {
        if !self.reinject_q.is_empty() {
            return self.next_segment();
        }
        let dsn = self.app.next;
        (dsn < new_end).then(|| (dsn, self.app.len_of(dsn), None))
    }

    fn push(&mut self, net: &mut Net) {
        let now = net.now();
        for sf in &mut self.subflows {
            sf.pace_wait = None;
            let r = sf.sender.retransmit_lost(now, &mut |p| {
                net.send(p);
            });
            if let Room::PacedUntil(t) = r {
                sf.pace_wait = Some(t);
            }
        }
        if self.bloat.as_ref().is_some_and(|b| !b.queue.is_empty()) {
            self.push_hol(now, net);
        }
        if self.redundant {
            self.push_redundant(now, net);
        } else if self.linux.is_some() {
            self.push_linux(now, net);
        } else {
            self.push_scheduled(now, net);
        }
        if self.linux.is_some() {
            // A subflow with nothing queued is application-limited (its own write queue).
            for sf in &mut self.subflows {
                if sf.wq.is_empty() {
                    sf.sender.mark_app_limited();
                }
            }
        } else if !self.app.has_data() || self.app.next >= self.peer_right_edge {
            for sf in &mut self.subflows {
                sf.sender.mark_app_limited();
            }
        }
        for j in 0..self.subflows.len() {
            self.arm_sender(j, net);
        }
    }

    /// The next segment the Linux send path pushes through the scheduler: the retransmit queue
    /// again after a subflow went stale, else new data while the connection's send buffer and the
    /// peer's window allow. `(dsn, len, again)`.
    fn next_linux_segment(&mut self) -> Option<(u64, u32, bool)> {
        let ls = self.linux.as_mut()?;
        if let Some((next, end)) = ls.repush {
            let next = next.max(self.data_una);
            if next < end {
                ls.repush = Some((next, end));
                return Some((next, self.app.len_of(next), true));
            }
            ls.repush = None;
        }
        let ls = self.linux.as_ref()?;
        if !self.app.has_data()
            || self.app.next >= self.peer_right_edge
            || !self.msk_memory_free(ls)
            || self
                .send_buffer_limit
                .is_some_and(|l| self.send_buffered() >= l)
        {
            return None;
        }
        Some((self.app.next, self.app.len_of(self.app.next), false))
    }

    /// Upstream Linux `__mptcp_push_pending()`: the scheduler gives each segment to a subflow's
    /// write queue while that subflow's send buffer has room; each subflow then sends from its
    /// queue as its cwnd allows (`tcp_push()`).
    fn push_linux(&mut self, now: Time, net: &mut Net) {
        let mut have_snapshot = false;
        let mut pushed = false;
        while let Some((dsn, len, again)) = self.next_linux_segment() {
            if !have_snapshot {
                self.snapshot(now);
                have_snapshot = true;
            }
            let Some(i) = self.pick_subflow(now) else {
                break;
            };
            let sf = &mut self.subflows[i];
            sf.wq.push_back((dsn, len));
            sf.wq_bytes += len as u64;
            self.note_new_send(i, now);
            self.infos[i] = self.info(i, now);
            pushed = true;
            if again {
                if let Some(ls) = self.linux.as_mut() {
                    if let Some((next, end)) = ls.repush {
                        ls.repush = Some((next + 1, end));
                    }
                }
                self.reinjections += 1;
            } else {
                self.app.take();
            }
        }
        for j in 0..self.subflows.len() {
            self.xmit_queue(j, now, net);
        }
        if pushed {
            // `__mptcp_push_pending()`: make sure the MPTCP-level retransmit timer runs.
            if self.linux.as_ref().is_some_and(|ls| ls.rtx_at.is_none()) {
                self.reset_rtx_timer(now, net);
            }
        }
    }

    /// A subflow sends from its write queue while its cwnd (and pacing) allows.
    fn xmit_queue(&mut self, j: usize, now: Time, net: &mut Net) {
        let sf = &mut self.subflows[j];
        let mut sent = false;
        while let Some(&(dsn, len)) = sf.wq.front() {
            if !sf.has_room(now) {
                break;
            }
            sf.wq.pop_front();
            sf.wq_bytes -= len as u64;
            let seq = sf.sender.snd_nxt();
            // The loss probe once after the burst (`TcpSender::send_new_in_burst`).
            sf.sender.send_new_in_burst(dsn, len, now, &mut |p| {
                net.send(p);
            });
            sent = true;
            if let Some(m) = self.monitor.as_mut() {
                m.assign(j, dsn, seq, len, now);
            }
        }
        if sent {
            sf.sender.end_burst(now);
        }
    }

    /// A segment was given to subflow `i`: check it against the mechanisms' rules (statistics
    /// that tests and users read; nothing is changed).
    #[inline]
    fn note_new_send(&mut self, i: usize, now: Time) {
        if self.pha_blocks.is_some() || self.phad_backup.is_some() {
            self.note_mechanism_send(i, now);
        }
    }

    #[cold]
    fn note_mechanism_send(&mut self, i: usize, now: Time) {
        let mut blocked = |j: usize| self.pha_blocks.as_mut().is_some_and(|b| b.blocked(j, now));
        if blocked(i) {
            self.pha_stats.sends_in_zone += 1;
        }
        let regular_usable = self
            .subflows
            .iter()
            .enumerate()
            .any(|(j, o)| j != i && !o.backup && !o.failed && !o.stale && !blocked(j));
        if self.subflows[i].backup && regular_usable {
            self.pha_stats.sends_on_backup += 1;
        }
    }

    /// (Re)start the MPTCP-level retransmit timer (`mptcp_reset_rtx_timer()`), with the
    /// interval of `mptcp_set_timeout()`.
    fn reset_rtx_timer(&mut self, now: Time, net: &mut Net) {
        let ival = linux::rtx_interval(self.subflows.iter().map(|s| {
            (
                s.sender.xmit_deadline().map(|t| t.saturating_sub(now)),
                s.stale_count,
            )
        }));
        let Some(ls) = self.linux.as_mut() else {
            return;
        };
        let at = now + ival;
        ls.rtx_at = Some(at);
        arm(
            net,
            &mut ls.armed,
            Some(at),
            self.idx,
            MSK_TIMER,
            Side::Sender,
        );
    }

    /// The MPTCP-level retransmit timer fired (`mptcp_retransmit_timer()` -> `__mptcp_retrans()`).
    fn on_rtx_timer(&mut self, now: Time, net: &mut Net) {
        let Some(ls) = self.linux.as_mut() else {
            return;
        };
        self.views_stale = true;
        if !take_wake(&mut ls.armed, now) {
            return;
        }
        match ls.rtx_at {
            Some(t) if t <= now => ls.rtx_at = None,
            Some(t) => {
                // Reset since this wake-up was armed: wait for the new deadline.
                arm(
                    net,
                    &mut ls.armed,
                    Some(t),
                    self.idx,
                    MSK_TIMER,
                    Side::Sender,
                );
                return;
            }
            None => return,
        }
        if self.data_una >= self.app.next {
            return; // nothing outstanding: the timer stays off
        }
        // Stale accounting: an interval with data outstanding and no ACK counts against a
        // subflow (net.mptcp.stale_loss_cnt); one with traffic clears its count.
        for sf in &mut self.subflows {
            let outstanding = sf.sender.packets_out() > 0 || !sf.wq.is_empty();
            if outstanding && sf.acks == sf.acks_at_expiry {
                sf.stale_count += 1;
            } else {
                sf.stale_count = 0;
            }
            sf.acks_at_expiry = sf.acks;
        }
        let views: Vec<RetransView> = self
            .subflows
            .iter()
            .map(|sf| RetransView {
                active: true,
                queues_empty: sf.sender.packets_out() == 0 && sf.wq.is_empty(),
                backup: sf.backup,
                stale_count: sf.stale_count,
            })
            .collect();
        // `mptcp_pm_subflows_chk_stale()` for each busy subflow.
        let mut repush = false;
        for i in 0..views.len() {
            if !views[i].queues_empty
                && !self.subflows[i].stale
                && linux::becomes_stale(&views, i, self.stale_loss_cnt)
            {
                self.subflows[i].stale = true;
                repush = true;
            }
        }
        if repush {
            // `__mptcp_retransmit_pending_data()`: everything not data-ACKed goes through the
            // scheduler again.
            let end = self.app.next;
            if let Some(ls) = self.linux.as_mut() {
                ls.repush = Some((self.data_una, end));
            }
            self.push(net);
        }
        // Resend the head fragment of the retransmit queue on a subflow with empty queues.
        if let Some(i) = linux::pick_retrans(&views) {
            let dfrag = self.linux.as_ref().map_or(1, |ls| ls.dfrag_segs);
            let head = self.data_una;
            let end = ((head / dfrag + 1) * dfrag).min(self.app.next);
            let sf = &mut self.subflows[i];
            for dsn in head..end {
                let len = self.app.len_of(dsn);
                sf.wq.push_back((dsn, len));
                sf.wq_bytes += len as u64;
                self.reinjections += 1;
            }
            self.xmit_queue(i, now, net);
            self.arm_sender(i, net);
        }
        if self.linux.as_ref().is_some_and(|ls| ls.rtx_at.is_none()) {
            self.reset_rtx_timer(now, net);
        }
    }

    /// mptcp_redundant.c: every segment goes on every usable subflow; each subflow walks the
    /// data stream at its own pace (a subflow short of window catches up later), skipping what
    /// the peer has already data-ACKed.
    fn push_redundant(&mut self, now: Time, net: &mut Net) {
        // PHA: a subflow in a predicted handover zone carries nothing new (at most 16 subflows).
        let mut blocked = [false; 16];
        if let Some(b) = &mut self.pha_blocks {
            for (j, x) in blocked.iter_mut().enumerate().take(self.subflows.len()) {
                *x = b.blocked(j, now);
            }
        }
        let any_regular = (0..self.subflows.len())
            .any(|j| !self.subflows[j].backup && !self.subflows[j].failed && !blocked[j]);
        for (j, &skip) in blocked.iter().enumerate().take(self.subflows.len()) {
            if skip {
                continue;
            }
            loop {
                let sf = &self.subflows[j];
                if sf.failed || (sf.backup && any_regular) {
                    break;
                }
                let dsn = sf.red_next.max(self.data_una);
                if dsn >= self.peer_right_edge {
                    break;
                }
                let full = self
                    .send_buffer_limit
                    .is_some_and(|l| self.send_buffered() >= l);
                if dsn >= self.app.next && (!self.app.has_data() || full) {
                    break;
                }
                let len = self.app.len_of(dsn);
                let sf = &mut self.subflows[j];
                if !sf.has_room(now) {
                    break;
                }
                let seq = sf.sender.snd_nxt();
                sf.sender.send_new(dsn, len, now, &mut |p| {
                    net.send(p);
                });
                sf.red_next = dsn + 1;
                self.note_assign(j, dsn, seq, len, now);
                self.note_new_send(j, now);
                if dsn == self.app.next {
                    self.app.take();
                }
            }
        }
    }

    /// Ask the scheduler for each segment in turn. The snapshot is taken once; after each send
    /// only the subflow that sent changes, so only its entry is refreshed.
    fn push_scheduled(&mut self, now: Time, net: &mut Net) {
        if self.fast_new_data && self.reinject_q.is_empty() && self.subflows.len() <= 64 {
            self.push_new_data(now, net);
            return;
        }
        let mut have_snapshot = false;
        // A reinjected segment must go on another subflow than the one that lost it: that one is
        // hidden from the scheduler (usable = false). Every other entry has usable = !failed
        // from the snapshot and its refreshes, so only a change of the hidden subflow is written.
        let mut hidden: Option<usize> = None;
        // With a pure scheduler and a light snapshot (`reuse_pick`), the subflow just chosen, if
        // it still has space, is the scheduler's answer again: the send changed only that
        // entry's `has_space`, so the snapshot is the one it answered, and the light connection
        // view is the same for the whole push. Cleared when the hidden subflow changes.
        let mut again: Option<usize> = None;
        let light = ConnInfo::light(now, self.mss);
        // Per segment, the monitor's and the mechanisms' bookkeeping only when one is on.
        let watched =
            self.monitor.is_some() || self.pha_blocks.is_some() || self.phad_backup.is_some();
        let new_end = self.new_data_end();
        // The subflow whose run of new segments has not had its loss probe scheduled yet
        // (`burst_sends`): ended when another subflow sends and after the loop. A run of
        // `send_new_in_burst` then `end_burst` leaves the sender as that many `send_new` do
        // (nothing between them reads its timer slot: the room, the snapshot and the
        // monitor's bookkeeping do not), and each subflow's sender is its own.
        let mut burst: Option<usize> = None;
        while let Some((dsn, len, from)) = self.next_segment_before(new_end) {
            if !have_snapshot {
                self.snapshot(now);
                have_snapshot = true;
            }
            if from != hidden {
                if let Some((info, sf)) =
                    hidden.and_then(|k| self.infos.get_mut(k).zip(self.subflows.get(k)))
                {
                    info.usable = !sf.failed;
                }
                if let Some(info) = from.and_then(|k| self.infos.get_mut(k)) {
                    info.usable = false;
                }
                hidden = from;
                again = None;
            }
            let i = match again {
                Some(i) => i,
                None => match self.pick_subflow_with(now, &light) {
                    Some(i) => i,
                    None => break,
                },
            };
            let has_space = self.send_on(i, dsn, len, now, net, &mut burst, watched);
            again = (self.reuse_pick && has_space).then_some(i);
            if from.is_some() {
                self.reinject_q.pop_front();
                self.reinjections += 1;
            } else {
                self.app.take();
            }
        }
        if let Some(k) = burst {
            self.subflows[k].sender.end_burst(now);
        }
    }

    /// [`Self::push_scheduled`] with no reinjection queued, which is how it stays for the whole
    /// push (only an ACK, a timer or an unplug queues one): every segment is new data, none
    /// hides a subflow, so the loop is the general one without the reinjection's bookkeeping.
    #[inline(always)]
    fn push_new_data(&mut self, now: Time, net: &mut Net) {
        let new_end = self.new_data_end();
        if self.app.next >= new_end {
            return;
        }
        let light = ConnInfo::light(now, self.mss);
        let watched =
            self.monitor.is_some() || self.pha_blocks.is_some() || self.phad_backup.is_some();
        // Bit i: entry i can take a segment (`usable && has_space`), kept in step with the
        // snapshot: in this loop only a send changes an entry (its `has_space`).
        let mut ready = self.snapshot(now);
        let mut again: Option<usize> = None;
        let mut burst: Option<usize> = None;
        loop {
            let dsn = self.app.next;
            let len = self.app.len_of(dsn);
            let i = match again {
                Some(i) => i,
                None => match self.pick_ready(now, &light, ready) {
                    Some(i) => i,
                    None => break,
                },
            };
            let has_space = self.send_on(i, dsn, len, now, net, &mut burst, watched);
            ready = ready & !(1 << i) | (has_space as u64) << i;
            again = (self.reuse_pick && has_space).then_some(i);
            self.app.take();
            if self.app.next >= new_end {
                break;
            }
        }
        if let Some(k) = burst {
            self.subflows[k].sender.end_burst(now);
        }
    }

    /// Send segment `dsn` (`len` bytes) on subflow `i`, which the scheduler chose, and refresh
    /// its snapshot entry; returns the entry's new `has_space`. `burst`: the subflow whose run
    /// of new segments has not had its loss probe scheduled yet (see `push_scheduled`).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn send_on(
        &mut self,
        i: usize,
        dsn: u64,
        len: u32,
        now: Time,
        net: &mut Net,
        burst: &mut Option<usize>,
        watched: bool,
    ) -> bool {
        let seq = self.subflows[i].sender.snd_nxt();
        if self.burst_sends {
            if let Some(k) = burst.filter(|&k| k != i) {
                self.subflows[k].sender.end_burst(now);
            }
            *burst = Some(i);
            self.subflows[i]
                .sender
                .send_new_in_burst(dsn, len, now, &mut |p| {
                    net.send(p);
                });
        } else {
            self.subflows[i].sender.send_new(dsn, len, now, &mut |p| {
                net.send(p);
            });
        }
        if watched {
            self.note_assign(i, dsn, seq, len, now);
            self.note_new_send(i, now);
        }
        self.refresh_after_send(i, now)
    }

    fn arm_sender(&mut self, j: usize, net: &mut Net) {
        let sf = &mut self.subflows[j];
        let d = match (sf.sender.xmit_deadline(), sf.pace_wait) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        arm(
            net,
            &mut sf.sender.armed,
            d,
            self.idx,
            j as u16,
            Side::Sender,
        );
    }

    /// Count a subflow's new retransmissions and timeouts: feedback to a learning scheduler;
    /// at a timeout, reinject and mark the subflow failed per the rule. Called after every ACK
    /// and timer, almost always with nothing new.
    #[inline(always)]
    fn note_retransmissions(&mut self, j: usize, now: Time) {
        let sf = &self.subflows[j];
        if sf.sender.stats.rto_count != sf.rto_seen
            || sf.sender.stats.retransmitted_packets != sf.retrans_seen
        {
            self.note_new_retransmissions(j, now);
        }
    }

    #[inline(never)]
    fn note_new_retransmissions(&mut self, j: usize, now: Time) {
        // It may mark the subflow failed (the coupled views' `active`).
        self.views_stale = true;
        let sf = &mut self.subflows[j];
        let rtos = sf.sender.stats.rto_count;
        let retrans = sf.sender.stats.retransmitted_packets;
        let new_rtos = rtos - sf.rto_seen;
        let new_retrans = retrans - sf.retrans_seen;
        sf.rto_seen = rtos;
        sf.retrans_seen = retrans;
        if new_retrans > 0 && self.learns {
            let conn = self.conn_info(now);
            self.scheduler
                .feedback(&Feedback::Retransmit { id: j }, &self.infos, &conn);
        }
        if new_rtos == 0 || self.linux.is_some() {
            // The Linux send path reinjects from the MPTCP-level timer only.
            return;
        }
        let sf = &mut self.subflows[j];
        sf.rtos_without_progress += new_rtos as u32;
        let trigger = match self.reinject_rule {
            Reinject::Rto => true,
            Reinject::Stale => sf.rtos_without_progress >= self.stale_loss_cnt,
            Reinject::Linux => false, // returned above
        };
        if !trigger || self.subflows.len() < 2 {
            return;
        }
        self.subflows[j].failed = true;
        // Queue this subflow's unacknowledged data (not yet data-ACKed, not yet reinjected).
        let data_una = self.data_una;
        let mut dsns: Vec<u64> = Vec::new();
        for (dsn, _len, sacked) in self.subflows[j].sender.outstanding() {
            if !sacked && dsn >= data_una {
                dsns.push(dsn);
            }
        }
        for dsn in dsns {
            if self.mark_reinjected(dsn) {
                self.reinject_q.push_back((dsn, j as u16));
            }
        }
    }

    /// Note that `dsn` is queued for reinjection: true if it is outstanding at the data level
    /// (in [data_una, app.next)) and was not queued before.
    fn mark_reinjected(&mut self, dsn: u64) -> bool {
        if dsn < self.data_una || dsn >= self.app.next {
            return false;
        }
        match self.reinjected.binary_search(&dsn) {
            Ok(_) => false,
            Err(at) => {
                self.reinjected.insert(at, dsn);
                true
            }
        }
    }

    fn send_ack(&mut self, j: usize, net: &mut Net) {
        let free = self.advertised_window();
        let sf = &mut self.subflows[j];
        // A Linux subflow offers at most its `rcv_ssthresh` (`__tcp_select_window()`); the
        // sender keeps the largest right edge any subflow announced (`mptcp_set_rwin()`).
        let w = match sf.receiver.linux_ack() {
            Some(l) => l.select_window(free),
            None => free,
        };
        let mut ack = sf.receiver.build_ack(sf.ack_route);
        ack.data_ack = self.rx.rcv_nxt;
        ack.rwnd = Packet::window(w);
        self.adv_edge = self.rx.delivered_bytes + w;
        ack.size += 8; // DSS option with a data ACK (RFC 8684 3.3)
        net.send(ack);
    }

    /// Entry `k` of `unplugs`. Unplugged: the interface's address is gone, and the path
    /// manager closes the subflow over it (Linux `mptcp_pm_nl_rm_addr_or_subflow()` ->
    /// `mptcp_close_ssk()`), whose data not yet acknowledged at the data level is sent again on
    /// the others (`__mptcp_retransmit_pending_data()`): here at once, as the rto rule does at a
    /// timeout. Plugged back: a new subflow over it, a fresh TCP connection (initial window,
    /// no RTT estimate), without the MP_JOIN handshake (which the model leaves out for every
    /// subflow).
    fn unplug(&mut self, k: usize, net: &mut Net) {
        let (_, j, plugged) = self.unplugs[k];
        self.views_stale = true;
        if plugged {
            let Some(pair) = self.spares[k].take() else {
                return;
            };
            let data_una = self.data_una;
            let sf = &mut self.subflows[j];
            (sf.sender, sf.receiver) = *pair;
            self.subflow_ooo = self.subflow_held();
            let sf = &mut self.subflows[j];
            sf.removed = false;
            sf.failed = false;
            sf.stale = false;
            sf.stale_count = 0;
            sf.rto_seen = 0;
            sf.retrans_seen = 0;
            sf.rtos_without_progress = 0;
            sf.pace_wait = None;
            sf.red_next = sf.red_next.max(data_una);
            sf.acks = 0;
            sf.acks_at_expiry = 0;
        } else {
            let data_una = self.data_una;
            let sf = &mut self.subflows[j];
            if sf.removed {
                return;
            }
            sf.removed = true;
            sf.failed = true;
            sf.stale = true;
            // Its timers will find nothing armed.
            sf.sender.armed = None;
            sf.receiver.armed = None;
            let mut dsns: Vec<u64> = sf
                .sender
                .outstanding()
                .filter(|&(dsn, _, sacked)| !sacked && dsn >= data_una)
                .map(|(dsn, _, _)| dsn)
                .collect();
            dsns.extend(sf.wq.drain(..).map(|(dsn, _)| dsn));
            sf.wq_bytes = 0;
            for dsn in dsns {
                if self.mark_reinjected(dsn) {
                    self.reinject_q.push_back((dsn, j as u16));
                }
            }
        }
        self.push(net);
    }

    /// The coupled congestion control's view of every subflow, rewritten in place (before an
    /// ACK when `views_stale`; an ACK then rewrites its own subflow's, `refresh_view`).
    fn fill_views(&mut self) {
        let n = self.subflows.len();
        if self.views.len() != n {
            self.views.clear();
            self.views.resize(n, SubflowView::default());
        }
        // A subflow is active unless it is a backup or failed; when every one is, all are
        // active. One pass writes the first rule; the second case (rare) is fixed up after.
        let mut any_active = false;
        for (v, sf) in self.views.iter_mut().zip(&self.subflows) {
            let active = !(sf.backup || sf.failed);
            any_active |= active;
            *v = view_of(&sf.sender, active);
        }
        if !any_active {
            for v in &mut self.views {
                v.active = true;
            }
        }
        self.views_stale = false;
    }

    /// Rewrite subflow `j`'s view after an event that changed only its sender (an ACK on it):
    /// its window, RTT and loss counts. `active` depends on the flags of every subflow, which
    /// such an event does not change (a change marks the views stale instead).
    #[inline(always)]
    fn refresh_view(&mut self, j: usize) {
        if let (Some(v), Some(sf)) = (self.views.get_mut(j), self.subflows.get(j)) {
            *v = view_of(&sf.sender, v.active);
        }
    }

    /// Tests: the views kept in step are the ones `fill_views` builds afresh.
    #[cfg(test)]
    fn check_views(&mut self) {
        let kept = self.views.clone();
        self.fill_views();
        assert_eq!(
            kept, self.views,
            "views kept in step differ from fresh ones"
        );
    }
}

impl FlowOps for MptcpFlow {
    fn start(&mut self, net: &mut Net) {
        self.push(net);
    }

    fn on_packet(&mut self, sub: u16, side: Side, p: &Packet, net: &mut Net) {
        let now = net.now();
        let j = sub as usize;
        if self.subflows[j].removed {
            // Its interface is gone: the host has no socket for it.
            return;
        }
        match side {
            Side::Sender => {
                debug_assert_eq!(p.kind, Kind::Ack);
                if p.flags & flags::MP_PRIO != 0 {
                    // The peer's MP_PRIO: the option names the subflow it refers to.
                    if let Some(sf) = self.subflows.get_mut(p.dsn as usize) {
                        sf.backup = p.flags & flags::BACKUP != 0;
                    }
                    self.views_stale = true;
                    self.push(net);
                    return;
                }
                if self.coupled && self.views_stale {
                    self.fill_views();
                }
                #[cfg(test)]
                if self.coupled {
                    self.check_views();
                }
                let me = j;
                let out = {
                    let coupling = Coupling {
                        subflows: &self.views,
                        me,
                    };
                    self.subflows[j].sender.on_ack(p, now, &coupling)
                };
                if out.advanced {
                    // A failed subflow becomes active again: every view's `active` may change.
                    self.views_stale |= self.subflows[j].failed;
                    let sf = &mut self.subflows[j];
                    sf.failed = false;
                    sf.rtos_without_progress = 0;
                }
                if self.coupled && !self.views_stale {
                    self.refresh_view(j);
                }
                let sf = &mut self.subflows[j];
                if self.linux.is_some() {
                    // Any ACK: the subflow is no longer stale (`mptcp_subflow_active()` sees its
                    // rcv_tstamp move).
                    sf.acks += 1;
                    sf.stale = false;
                }
                // Data-level ACK and window (ACKs on different subflows may be reordered).
                if p.data_ack > self.data_una {
                    let adv = p.data_ack - self.data_una;
                    self.data_una = p.data_ack;
                    if self.reinjected.first().is_some_and(|&d| d < p.data_ack) {
                        let acked = self.reinjected.partition_point(|&d| d < p.data_ack);
                        self.reinjected.drain(..acked);
                    }
                    if let Some(ls) = self.linux.as_mut() {
                        // `__mptcp_clean_una()`: all data acknowledged stops the MPTCP-level
                        // retransmit timer, anything still outstanding restarts it.
                        if self.data_una >= self.app.next {
                            ls.rtx_at = None;
                        } else {
                            self.reset_rtx_timer(now, net);
                        }
                    }
                    if self.learns {
                        let conn = self.conn_info(now);
                        self.scheduler.feedback(
                            &Feedback::DataAck { segments: adv },
                            &self.infos,
                            &conn,
                        );
                    }
                }
                let edge = p.data_ack + p.rwnd as u64 / self.mss as u64;
                self.peer_right_edge = self.peer_right_edge.max(edge);
                if out.newly_acked > 0 && self.learns {
                    let conn = self.conn_info(now);
                    let rtt = Some(self.subflows[j].sender.srtt()).filter(|t| *t > Time::ZERO);
                    let fb = Feedback::Ack {
                        id: j,
                        acked_segments: out.newly_acked,
                        rtt,
                    };
                    self.scheduler.feedback(&fb, &self.infos, &conn);
                }
                self.note_retransmissions(j, now);
                if let Some(m) = self.monitor.as_mut() {
                    // The monitor forgets what both ACK levels now cover, then detects.
                    m.subflow_acked(j, self.subflows[j].sender.snd_una());
                    m.data_acked(self.data_una);
                    self.bloat_on_ack(now);
                }
                self.push(net);
                if let Some(ls) = &self.linux {
                    // `tcp_check_space()` after the ACK's transmissions: the send buffer grows
                    // only while the subflow cannot fill its cwnd (`tcp_should_expand_sndbuf()`).
                    let sf = &mut self.subflows[j];
                    let s = &sf.sender;
                    if s.in_flight() < s.cwnd() {
                        let t = linux::sndbuf_target(s.cwnd(), s.cfg.mss, ls.wmem[2]);
                        sf.sndbuf = sf.sndbuf.max(t);
                    }
                }
            }
            Side::Receiver => {
                // Segments the subflow releases in order go straight to data-level reassembly.
                // The receive buffer's high-water mark is taken after each new segment, with
                // the subflow receivers as they are once this packet is processed: the highest
                // data-level count in this batch plus what the subflows hold then.
                let sf = &mut self.subflows[j];
                let rx = &mut self.rx;
                let mut peak: Option<u64> = None;
                let ooo_before = sf.receiver.ooo_segments() as u64;
                let decision = sf.receiver.on_data(p, now, &mut |dsn, len, arrived| {
                    sf.delivered_bytes += len as u64;
                    sf.bin_bytes += len as u64;
                    if rx.arrive(dsn, len, arrived, now) {
                        peak = Some(peak.map_or(rx.ooo_count, |m| m.max(rx.ooo_count)));
                    }
                });
                self.subflow_ooo =
                    self.subflow_ooo - ooo_before + sf.receiver.ooo_segments() as u64;
                if let Some(peak) = peak {
                    if self.drs.is_some() {
                        let rtt = self.receiver_rtt();
                        let read = self.rx.delivered_bytes - self.drs_read;
                        self.drs_read = self.rx.delivered_bytes;
                        if let Some(d) = self.drs.as_mut() {
                            if read > 0 && d.on_read(read, now, rtt) {
                                self.rcv_buf_segs = (d.window / self.mss as u64).max(2);
                                // `mptcp_rcv_space_adjust()`: the subflows follow the
                                // connection's window clamp.
                                for sf in &mut self.subflows {
                                    if let Some(l) = sf.receiver.linux_ack() {
                                        l.window_clamp = d.window;
                                    }
                                }
                            }
                        }
                    }
                    let held = peak + self.subflow_ooo;
                    self.rcv_buf_max = self.rcv_buf_max.max(held);
                    if self.completed_at.is_none()
                        && self.app.total_bytes > 0
                        && self.rx.delivered_bytes >= self.app.total_bytes
                    {
                        self.completed_at = Some(now);
                    }
                }
                match decision {
                    AckDecision::Now => self.send_ack(j, net),
                    AckDecision::Delayed(t) => {
                        let sf = &mut self.subflows[j];
                        arm(
                            net,
                            &mut sf.receiver.armed,
                            Some(t),
                            self.idx,
                            sub,
                            Side::Receiver,
                        );
                    }
                }
            }
        }
    }

    fn on_timer(&mut self, sub: u16, side: u8, net: &mut Net) {
        let now = net.now();
        let j = sub as usize;
        if sub == MSK_TIMER {
            self.on_rtx_timer(now, net);
        } else if side == Side::Sender as u8 {
            if !take_wake(&mut self.subflows[j].sender.armed, now) {
                return;
            }
            let Subflow {
                sender,
                wq,
                wq_bytes,
                ..
            } = &mut self.subflows[j];
            // A tail-loss probe sends new data from the write queue if there is some
            // (`tcp_send_loss_probe()`); without a write queue, the last segment again.
            sender.on_timer(
                now,
                &mut |p| {
                    net.send(p);
                },
                !wq.is_empty(),
                || {
                    let x = wq.pop_front();
                    if let Some((_, l)) = x {
                        *wq_bytes -= l as u64;
                    }
                    x
                },
            );
            // A timeout or a recovery entered at a timer changes the window.
            self.views_stale = true;
            self.note_retransmissions(j, now);
            self.push(net);
        } else {
            let sf = &mut self.subflows[j];
            if !take_wake(&mut sf.receiver.armed, now) {
                return;
            }
            if sf.receiver.on_timer(now) {
                self.send_ack(j, net);
            } else {
                let d = sf.receiver.delack_deadline();
                arm(
                    net,
                    &mut sf.receiver.armed,
                    d,
                    self.idx,
                    sub,
                    Side::Receiver,
                );
            }
        }
    }

    /// A scripted MP_PRIO change.
    fn control(&mut self, idx: u32, net: &mut Net) {
        let Some(pc) = self.prio_script.get(idx as usize).copied() else {
            let k = idx as usize - self.prio_script.len();
            if k < self.unplugs.len() {
                self.unplug(k, net);
                return;
            }
            // A wake-up: a PHA block ended, a subflow may take data again.
            self.push(net);
            return;
        };
        match pc.by {
            PrioBy::Sender => {
                self.subflows[pc.sub].backup = pc.backup;
                self.views_stale = true;
                self.push(net);
            }
            PrioBy::Receiver => {
                let sf = &self.subflows[pc.sub];
                let mut p = sf.receiver.build_ack(sf.ack_route);
                p.nsack = 0;
                p.size = sf.receiver.cfg.ack_bytes as u16 + MP_PRIO_BYTES;
                p.flags = flags::MP_PRIO | if pc.backup { flags::BACKUP } else { 0 };
                p.dsn = pc.sub as u64;
                p.data_ack = self.rx.rcv_nxt;
                net.send(p);
            }
        }
    }

    fn sample(&mut self, width: Time) {
        let w = width.secs_f64();
        let rate = |b: u64| if w > 0.0 { b as f64 * 8.0 / w } else { 0.0 };
        self.goodput.push(rate(self.rx.bin_bytes));
        self.rx.bin_bytes = 0;
        for sf in &mut self.subflows {
            sf.goodput.push(rate(sf.bin_bytes));
            sf.bin_bytes = 0;
            sf.cwnd
                .push(sf.sender.cwnd() as f64 * sf.sender.cfg.mss as f64);
            sf.srtt.push(sf.sender.srtt().ms_f64());
        }
        let held = self.rcv_held();
        self.rcv_buf_samples.push(held as f64);
        let sb = self.send_buffered();
        self.snd_buf_max = self.snd_buf_max.max(sb);
        self.snd_buf_samples.push(sb as f64);
        if let Some(m) = &self.monitor {
            let held = m.len();
            self.held_max = self.held_max.max(held);
            self.held_samples.push(held as f64);
            if let Some(b) = self.bloat.as_mut() {
                b.sample(m);
            }
        }
    }

    fn summarize(&self, end: Time, _net: &Net) -> (FlowSummary, Vec<Series>) {
        let stop = self.completed_at.unwrap_or(end);
        let active = stop.saturating_sub(self.start).secs_f64();
        let gp = |b: u64| {
            if active > 0.0 {
                b as f64 * 8.0 / active
            } else {
                0.0
            }
        };
        let mean = |v: &Vec<f64>| {
            if v.is_empty() {
                0.0
            } else {
                v.iter().sum::<f64>() / v.len() as f64
            }
        };
        let sent: u64 = self
            .subflows
            .iter()
            .map(|s| s.sender.stats.sent_packets)
            .sum();
        let retrans: u64 = self
            .subflows
            .iter()
            .map(|s| s.sender.stats.retransmitted_packets)
            .sum::<u64>()
            + self.reinjections;
        let summary = FlowSummary {
            id: self.id.clone(),
            kind: "mptcp".into(),
            cc: self.cc_name.clone(),
            scheduler: Some(self.sched_name.clone()),
            mechanisms: self.mechanisms.clone(),
            goodput_bps: gp(self.rx.delivered_bytes),
            delivered_bytes: self.rx.delivered_bytes,
            sent_packets: sent,
            retransmitted_packets: retrans,
            rto_count: self.subflows.iter().map(|s| s.sender.stats.rto_count).sum(),
            handover_goodput_bps: None,
            fct_s: self.completed_at.map(|t| (t - self.start).secs_f64()),
            srtt_ms: None,
            rto_ms: None,
            subflows: Some(
                self.subflows
                    .iter()
                    .map(|s| SubflowSummary {
                        id: s.link_id.clone(),
                        link: s.link_name.clone(),
                        goodput_bps: gp(s.delivered_bytes),
                        sent_packets: s.sender.stats.sent_packets,
                        retransmitted_packets: s.sender.stats.retransmitted_packets,
                    })
                    .collect(),
            ),
            receive_buffer: Some(BufferStats {
                max_packets: self.rcv_buf_max as f64,
                avg_packets: mean(&self.rcv_buf_samples),
            }),
            send_buffer: Some(BufferStats {
                max_packets: self.snd_buf_max as f64,
                avg_packets: mean(&self.snd_buf_samples),
            }),
            send_buffer_held: self.monitor.is_some().then(|| BufferStats {
                max_packets: self.held_max as f64,
                avg_packets: mean(&self.held_samples),
            }),
            reorder_delay_ms: Some(AvgMax {
                avg: if self.rx.reorder_count == 0 {
                    0.0
                } else {
                    self.rx.reorder_sum.ms_f64() / self.rx.reorder_count as f64
                },
                max: self.rx.reorder_max.ms_f64(),
            }),
            pha: (self.pha_blocks.is_some() || self.phad_backup.is_some()).then(|| {
                let mut st = self.pha_stats;
                st.blocked_s = self
                    .pha_blocks
                    .as_ref()
                    .map_or(0.0, |b| b.blocks().total().secs_f64());
                st.backup_s = self
                    .phad_backup
                    .as_ref()
                    .map_or(0.0, |b| b.total().secs_f64());
                st.prio_changes = self.prio_script.len() as u64;
                st
            }),
            handoffs: None,
            bloat: self.bloat.as_ref().map(|b| {
                let ids: Vec<String> = self.subflows.iter().map(|s| s.link_id.clone()).collect();
                b.finish(stop, &ids)
            }),
            udp: None,
            car: None,
        };
        let mut series = vec![
            Series {
                flow: self.id.clone(),
                subflow: String::new(),
                metric: "goodput_bps",
                values: self.goodput.clone(),
            },
            Series {
                flow: self.id.clone(),
                subflow: String::new(),
                metric: "receive_buffer_packets",
                values: self.rcv_buf_samples.clone(),
            },
            Series {
                flow: self.id.clone(),
                subflow: String::new(),
                metric: "send_buffer_packets",
                values: self.snd_buf_samples.clone(),
            },
        ];
        if let Some(b) = &self.bloat {
            series.push(Series {
                flow: self.id.clone(),
                subflow: String::new(),
                metric: "send_buffer_held_packets",
                values: self.held_samples.clone(),
            });
            series.push(Series {
                flow: self.id.clone(),
                subflow: String::new(),
                metric: "bloat_detected",
                values: b.active_series.clone(),
            });
            for (s, v) in self.subflows.iter().zip(&b.tt_series) {
                series.push(Series {
                    flow: self.id.clone(),
                    subflow: s.link_id.clone(),
                    metric: "transmit_times",
                    values: v.clone(),
                });
            }
        }
        for s in &self.subflows {
            for (metric, v) in [
                ("goodput_bps", &s.goodput),
                ("cwnd_bytes", &s.cwnd),
                ("srtt_ms", &s.srtt),
            ] {
                series.push(Series {
                    flow: self.id.clone(),
                    subflow: s.link_id.clone(),
                    metric,
                    values: v.clone(),
                });
            }
        }
        (summary, series)
    }
}

#[cfg(test)]
mod tests {
    use super::super::harness::Harness;
    use railpath_core::Rng;

    /// Within a push, `next_segment_before(new_data_end())` offers what `next_segment` offers
    /// after each new segment taken: random windows, data sizes, relay feeds, send buffer
    /// limits and data ACKs, each followed through a run of takes.
    #[test]
    fn new_data_end_bounds_new_data_as_next_segment_does() {
        let mut rng = Rng::stream(3, "new-data-end");
        let mut draw = |m: u64| rng.next_u64() % m;
        let mut offered = 0;
        for case in 0..5_000 {
            let mut h = Harness::new(&["a", "b"], "cc = \"lia\"\nscheduler = \"minrtt\"");
            let f = &mut h.flow;
            let mss = f.mss;
            if draw(3) == 0 {
                f.app = crate::flows::common::App::fed(mss);
                for _ in 0..draw(6) {
                    f.app.feed(mss);
                }
            } else if draw(2) == 0 {
                f.app = crate::flows::common::App::new(1 + draw(30 * mss as u64), mss);
            }
            f.app.next = draw(12);
            f.data_una = f.app.next.saturating_sub(draw(10));
            f.peer_right_edge = f.data_una + draw(25);
            f.send_buffer_limit = (draw(2) == 0).then(|| draw(12));
            let end = f.new_data_end();
            for step in 0..40 {
                let general = f.next_segment();
                assert_eq!(
                    f.next_segment_before(end),
                    general,
                    "case {case} step {step}"
                );
                if general.is_none() {
                    break;
                }
                offered += 1;
                f.app.take();
            }
        }
        assert!(offered > 10_000, "the draws offer data ({offered})");
    }

    /// The coupled control's views mark a subflow active unless it is a backup or failed, and
    /// every subflow active when all are backups or failed (LIA couples over the backups then):
    /// each combination of backup and failed over three subflows, against that rule written out.
    #[test]
    fn views_active_unless_backup_or_failed_all_when_none_is_left() {
        let mut h = Harness::new(&["a", "b", "c"], "cc = \"lia\"\nscheduler = \"minrtt\"");
        for mask in 0u32..(1 << 6) {
            for (j, sf) in h.flow.subflows.iter_mut().enumerate() {
                sf.backup = mask >> (2 * j) & 1 != 0;
                sf.failed = mask >> (2 * j) & 2 != 0;
            }
            h.flow.fill_views();
            let out = |j: usize| mask >> (2 * j) & 3 != 0;
            let none_left = (0..3).all(out);
            for (j, v) in h.flow.views.iter().enumerate() {
                assert_eq!(
                    v.active,
                    none_left || !out(j),
                    "mask {mask:#x}, subflow {j}"
                );
            }
        }
    }
}
