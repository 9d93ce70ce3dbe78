//! Congestion control behind a small trait, one algorithm per file.
//!
//! The interface follows Linux's `struct tcp_congestion_ops` (include/net/tcp.h): window in
//! packets, `ssthresh()` on loss, `cong_avoid()` on ACKs in the Open state, `set_state()` on
//! state changes, `pkts_acked()` with an RTT sample, and `cong_control()` for algorithms that
//! take over cwnd and pacing entirely (BBR). The sender (`tcp::sender`) owns the scoreboard, loss
//! recovery (RFC 6675/8985) and PRR (RFC 6937); an algorithm only decides the window.
//!
//! MPTCP's coupled algorithms (LIA, OLIA, BALIA) implement the same trait and read their sibling
//! subflows through [`Coupling`]; a single-path connection passes an empty one.

use railpath_core::Time;

pub mod bbr;
mod build;
pub mod cubic;
pub mod newreno;

pub use build::{build, CcParams};

/// Linux `tcp_ca_state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CaState {
    /// Nothing outstanding is suspected lost.
    Open,
    /// SACKs or dupacks seen, nothing marked lost yet.
    Disorder,
    /// Fast recovery after a loss was detected (RFC 6675 / RFC 6582).
    Recovery,
    /// After a retransmission timeout.
    Loss,
}

/// The window variables an algorithm may read and write (Linux `tcp_sock` fields), in packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// Congestion window, packets (`snd_cwnd`).
    pub cwnd: u32,
    /// Slow-start threshold, packets (`snd_ssthresh`); `u32::MAX` means "infinite" initially.
    pub ssthresh: u32,
    /// Linear-increase counter (`snd_cwnd_cnt`).
    pub cwnd_cnt: u32,
    /// Upper clamp on cwnd (`snd_cwnd_clamp`).
    pub cwnd_clamp: u32,
    /// Payload bytes per packet.
    pub mss: u32,
}

impl Window {
    pub fn new(initial_window: u32, mss: u32) -> Window {
        Window {
            cwnd: initial_window,
            ssthresh: u32::MAX,
            cwnd_cnt: 0,
            cwnd_clamp: 1 << 20,
            mss,
        }
    }
    /// Linux `tcp_in_slow_start()`.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }

    /// Linux `tcp_slow_start()`: grow by `acked` up to ssthresh; returns the acks left over.
    pub fn slow_start(&mut self, acked: u32) -> u32 {
        let cwnd = self.cwnd.saturating_add(acked).min(self.ssthresh);
        let left = acked - (cwnd - self.cwnd).min(acked);
        self.cwnd = cwnd.min(self.cwnd_clamp);
        left
    }

    /// The common start of Linux `tcp_reno_cong_avoid()` (and the coupled algorithms built on
    /// it): nothing unless the sender is cwnd-limited, then slow start up to ssthresh. Returns
    /// the packets acked that are left for congestion avoidance, or `None` when none are.
    pub fn reno_prologue(&mut self, ack: &AckInfo) -> Option<u32> {
        if !ack.cwnd_limited {
            return None;
        }
        let mut acked = ack.acked;
        if self.in_slow_start() {
            acked = self.slow_start(acked);
        }
        (acked > 0).then_some(acked)
    }

    /// Linux `tcp_cong_avoid_ai()`: one packet per `w` packets acked.
    pub fn cong_avoid_ai(&mut self, w: u32, acked: u32) {
        let w = w.max(1);
        if self.cwnd_cnt >= w {
            self.cwnd_cnt = 0;
            self.cwnd += 1;
        }
        self.cwnd_cnt += acked;
        if self.cwnd_cnt >= w {
            let delta = self.cwnd_cnt / w;
            self.cwnd_cnt -= delta * w;
            self.cwnd += delta;
        }
        self.cwnd = self.cwnd.min(self.cwnd_clamp);
    }
}

/// What an ACK told the sender, handed to the algorithm.
#[derive(Debug, Clone, Copy, Default)]
pub struct AckInfo {
    pub now: Time,
    /// Packets newly cumulatively acked or SACKed by this ACK.
    pub acked: u32,
    /// RTT sample from this ACK, if any (Karn's rule / timestamps applied).
    pub rtt: Option<Time>,
    /// Smoothed RTT after this ACK (zero before the first sample).
    pub srtt: Time,
    /// Minimum RTT seen by the connection.
    pub min_rtt: Time,
    /// Packets in flight before this ACK was processed.
    pub prior_in_flight: u32,
    /// Packets in flight now.
    pub in_flight: u32,
    /// Was the sender using its whole window before this ACK (Linux `tcp_is_cwnd_limited`)?
    pub cwnd_limited: bool,
    /// First unacknowledged sequence number after this ACK (`tp->snd_una`), in any unit that
    /// `snd_nxt` shares (packets or bytes): CUBIC's HyStart ends a round when it passes the
    /// `snd_nxt` recorded at the round's start.
    pub snd_una: u64,
    /// Next sequence number to be sent (`tp->snd_nxt`), same unit as `snd_una`.
    pub snd_nxt: u64,
}

/// A delivery-rate sample (Linux `struct rate_sample`, net/ipv4/tcp_rate.c;
/// draft-cheng-iccrg-delivery-rate-estimation).
#[derive(Debug, Clone, Copy, Default)]
pub struct RateSample {
    /// Packets delivered over the sampling interval; negative when there is no sample.
    pub delivered: i64,
    /// Length of the sampling interval; zero when there is no sample.
    pub interval: Time,
    /// `tp->delivered` when the sampled packet was sent.
    pub prior_delivered: u64,
    /// Packets in flight before this ACK.
    pub prior_in_flight: u32,
    /// RTT of the most recently sent packet this ACK delivered.
    pub rtt: Option<Time>,
    /// Packets newly marked lost by this ACK.
    pub losses: u32,
    /// Packets newly acked or SACKed by this ACK.
    pub acked_sacked: u32,
    /// Was the sampled packet sent while the sender was application-limited?
    pub is_app_limited: bool,
    /// Total packets delivered by the connection so far (`tp->delivered`).
    pub total_delivered: u64,
    /// Total packets marked lost so far (`tp->lost`).
    pub total_lost: u64,
    /// Packets in flight after this ACK.
    pub in_flight: u32,
    /// The sender's current state.
    pub ca_state: Option<CaState>,
}

/// Which per-ACK hooks an algorithm implements (see [`CongestionControl::hooks`]). The sender
/// asks once when it takes the algorithm and skips the calls to the others, and building the
/// [`RateSample`] when `cong_control` is off: an algorithm that does not override a hook has the
/// trait's default (no effect), so skipping it changes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hooks {
    /// Does it override [`CongestionControl::pkts_acked`]?
    pub pkts_acked: bool,
    /// Does it override [`CongestionControl::cong_control`] (and read the rate sample)?
    pub cong_control: bool,
}

impl Hooks {
    /// Every hook called: the default, always correct.
    pub const ALL: Hooks = Hooks {
        pkts_acked: true,
        cong_control: true,
    };
    /// Only `cong_avoid` (and the state, event and loss hooks, called whatever this says).
    pub const CONG_AVOID_ONLY: Hooks = Hooks {
        pkts_acked: false,
        cong_control: false,
    };
}

/// Events Linux reports through `cwnd_event()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CwndEvent {
    /// First transmission after the connection was idle (nothing in flight).
    TxStart,
    /// Recovery ended and cwnd was restored to ssthresh.
    CompleteCwr,
    /// A retransmission timeout fired.
    Loss,
}

/// A sibling subflow's state, for coupled MPTCP congestion control.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SubflowView {
    pub cwnd: u32,
    pub srtt: Time,
    pub mss: u32,
    /// Packets delivered (acked) since the subflow's last loss: OLIA's l_r.
    pub delivered_since_loss: u64,
    /// Packets delivered between the subflow's last two losses: OLIA's l_r^1.
    pub delivered_between_losses: u64,
    /// Is the subflow established and not a backup in use-only-when-needed mode?
    pub active: bool,
}

/// The subflows of the MPTCP connection a congestion control instance belongs to.
#[derive(Debug, Clone, Copy, Default)]
pub struct Coupling<'a> {
    /// Every subflow of the connection, this one included.
    pub subflows: &'a [SubflowView],
    /// Index of this subflow in `subflows`.
    pub me: usize,
}

impl Coupling<'_> {
    /// No siblings: single-path TCP.
    pub const NONE: Coupling<'static> = Coupling {
        subflows: &[],
        me: 0,
    };
}

/// One congestion-control algorithm instance (one per TCP connection or subflow).
pub trait CongestionControl: Send {
    fn name(&self) -> &'static str;

    /// New slow-start threshold after a loss (Linux `ssthresh()`).
    fn ssthresh(&mut self, w: &Window, now: Time) -> u32;

    /// Grow the window on an ACK in the Open or Disorder state (Linux `cong_avoid()`).
    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo, coupling: &Coupling);

    /// State change (Linux `set_state()`); e.g. CUBIC resets on `Loss`.
    fn set_state(&mut self, _w: &mut Window, _state: CaState, _now: Time) {}

    /// Per-ACK RTT sample and acked count (Linux `pkts_acked()`), before `cong_avoid`.
    fn pkts_acked(&mut self, _w: &Window, _ack: &AckInfo) {}

    /// Linux `cwnd_event()`.
    fn cwnd_event(&mut self, _w: &mut Window, _ev: CwndEvent, _now: Time) {}

    /// Full control of cwnd and pacing (Linux `cong_control()`, used by BBR). Return `true` if
    /// the algorithm set the window itself, in which case the sender skips `cong_avoid` and PRR.
    fn cong_control(&mut self, _w: &mut Window, _rs: &RateSample, _ack: &AckInfo) -> bool {
        false
    }

    /// Window to restore after a spurious loss (Linux `undo_cwnd()`).
    fn undo_cwnd(&mut self, w: &Window) -> u32 {
        w.cwnd
    }

    /// Pacing rate in bit/s of wire bytes, if the algorithm paces (BBR); `None` = unpaced. An
    /// algorithm paces always or never: the sender asks once whether it does.
    fn pacing_rate_bps(&self) -> Option<u64> {
        None
    }

    /// Which of `pkts_acked` and `cong_control` the algorithm overrides: the sender asks once
    /// and calls only those (a hook left at its default does nothing). An algorithm that
    /// overrides a hook must say so; the default, [`Hooks::ALL`], is always correct.
    fn hooks(&self) -> Hooks {
        Hooks::ALL
    }
}
