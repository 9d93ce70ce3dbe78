//! BBR v1 congestion control.
//!
//! Sources: Cardwell, Cheng, Gunn, Hassas Yeganeh and Jacobson, "BBR: Congestion-Based
//! Congestion Control", ACM Queue 14(5), 2016; draft-cardwell-iccrg-bbr-congestion-control-00
//! (BBR v1); and the Linux implementation, net/ipv4/tcp_bbr.c (v6.x) with its windowed max
//! filter lib/win_minmax.c (Kathleen Nichols' algorithm), whose decision rules are followed:
//!
//! - Model: `bw` = windowed max of delivery-rate samples over 10 packet-timed rounds (a round
//!   ends when a packet sent after the previous round's end is delivered:
//!   `prior_delivered >= next_rtt_delivered`); application-limited samples only count if they
//!   raise the max. `min_rtt` = min RTT, refreshed when older than 10 s.
//! - STARTUP: pacing and cwnd gain 2/ln 2 = 2.885 (`bbr_high_gain` = 739/256). The pipe is
//!   full when, in 3 consecutive non-app-limited rounds, bw grew less than 25 %.
//! - DRAIN: pacing gain 1/2.885, cwnd gain 2.885, until packets in flight <= 1 x BDP; then
//!   ssthresh was set to that BDP.
//! - PROBE_BW: cwnd gain 2, pacing gain cycling through [5/4, 3/4, 1, 1, 1, 1, 1, 1], starting
//!   at a random phase other than 3/4 (`bbr_reset_probe_bw_mode()`). A phase lasts one min_rtt;
//!   the 5/4 phase also waits until in flight reaches 5/4 BDP (or a loss), the 3/4 phase ends
//!   early once in flight is down to 1 x BDP.
//! - PROBE_RTT: when min_rtt is 10 s old, cwnd = 4 packets until at least 200 ms and one round
//!   have passed at that flight size; then min_rtt's timestamp is renewed, cwnd restored and
//!   the flow returns to PROBE_BW (or STARTUP if the pipe was never full). Samples taken in
//!   PROBE_RTT are treated as application-limited, as Linux does by setting `tp->app_limited`.
//! - cwnd: `target = gain x BDP + extra_acked + 3 x tso_segs_goal`, rounded up to even, +2 in
//!   the 5/4 phase (`bbr_quantization_budget()`); cwnd grows by the packets acked towards the
//!   target (only snapping down once the pipe was full), never below 4.
//! - ACK aggregation (`bbr_update_ack_aggregation()`): the data ACKed in an ACK epoch beyond
//!   `bw x epoch` is max-filtered over 5-10 rounds and added to the cwnd target once the pipe
//!   is full, capped at cwnd and at 100 ms of bw; it keeps bursty deliveries (trace-driven
//!   cellular links, the burst after an outage, stretched ACKs) from being cwnd-limited.
//! - Loss: on entering fast recovery cwnd = in flight + acked (packet conservation) for one
//!   round; on leaving recovery cwnd is restored to the value saved in `ssthresh()`.
//! - Pacing: `rate = pacing_gain x bw x (1 - 1 %)`, the 1 % pacing margin of
//!   `bbr_rate_bytes_per_sec()`; before the pipe is full the rate only goes up. The initial rate
//!   is `2.885 x cwnd / srtt` (1 ms nominal before any RTT sample).
//!
//! Units. bw is kept as Linux does, packets per microsecond << 24 (integer maths: runs are
//! bit-identical). Linux's pacing rate is in payload bytes per second (bw x mss); here the
//! sender paces whole packets of `mss + header_bytes` wire bytes, so
//! `pacing_rate_bps() = rate_payload_bytes_per_s x 8 x (mss + header) / mss`: the same number of
//! packets per second as Linux, the rate BBR means. `tso_segs_goal` (the cwnd quanta) is
//! computed as in Linux from the payload-byte pacing rate (~1 ms of data, 2..127 segments; 2 at
//! payload rates from 1.2 to ~35 Mbit/s), although the simulator sends single segments.
//!
//! - Long-term ("policer") bandwidth (`bbr_lt_bw_sampling()`): from the first loss, intervals
//!   of 4-16 rounds ending on a loss are measured; an interval with >= 20 % loss yields its
//!   delivery rate, and two consecutive such rates within 1/8 (or 4 kbit/s) of each other make
//!   BBR pace at their average with gain 1 for 48 rounds. On a variable-rate cellular link this
//!   is what stops the 10-round max filter from over-driving a link whose rate just fell.
//!
//! Omitted, deliberately: the earliest-departure-time correction of
//! `bbr_packets_in_net_at_edt()` (assumes the next departure is now, so in flight in the
//! network = in flight, + one TSO goal when probing up); `rs->is_ack_delayed` (min_rtt
//! takes any sample once expired). `cwnd_event(TxStart)` is taken to mean an
//! application-limited restart from idle (Linux checks `tp->app_limited`).

use super::{AckInfo, CaState, CongestionControl, Coupling, CwndEvent, RateSample, Window};
use railpath_core::{Rng, Time};

const BW_SCALE: u32 = 24;
const BW_UNIT: u128 = 1 << BW_SCALE;
const BBR_SCALE: u32 = 8;
/// Gains are fractions of 256 (`BBR_UNIT`).
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;
const CYCLE_LEN: usize = 8;
/// Window of the max bw filter, rounds (`bbr_bw_rtts`).
pub const BW_RTTS: u64 = CYCLE_LEN as u64 + 2;
/// min_rtt filter window (`bbr_min_rtt_win_sec`).
pub const MIN_RTT_WIN: Time = Time::from_secs(10);
/// Time at cwnd 4 in PROBE_RTT (`bbr_probe_rtt_mode_ms`).
pub const PROBE_RTT_MODE: Time = Time::from_ms(200);
/// Below this pacing rate a TSO burst is one segment (`bbr_min_tso_rate`, bit/s).
const MIN_TSO_RATE_BPS: u64 = 1_200_000;
const PACING_MARGIN_PERCENT: u64 = 1;
/// 2/ln 2 (`bbr_high_gain` = 256 x 2885 / 1000 + 1 = 739).
pub const HIGH_GAIN: u32 = BBR_UNIT * 2885 / 1000 + 1;
/// 1/2.885 (`bbr_drain_gain` = 88).
pub const DRAIN_GAIN: u32 = BBR_UNIT * 1000 / 2885;
/// Steady-state cwnd gain (`bbr_cwnd_gain`).
pub const CWND_GAIN: u32 = BBR_UNIT * 2;
/// PROBE_BW pacing gains (`bbr_pacing_gain`).
pub const PACING_GAIN: [u32; CYCLE_LEN] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// The random start phase is drawn over this many phases (`bbr_cycle_rand`).
const CYCLE_RAND: u64 = 7;
/// Minimum cwnd, and the cwnd of PROBE_RTT (`bbr_cwnd_min_target`).
pub const CWND_MIN_TARGET: u32 = 4;
/// bw must grow by 25 % per round in STARTUP (`bbr_full_bw_thresh`).
const FULL_BW_THRESH: u32 = BBR_UNIT * 5 / 4;
/// Rounds without such growth before the pipe is full (`bbr_full_bw_cnt`).
const FULL_BW_CNT: u32 = 3;
/// Linux `TCP_INIT_CWND`.
const TCP_INIT_CWND: u32 = 10;
/// Gain on the ACK-aggregation extra (`bbr_extra_acked_gain`, 1.0).
const EXTRA_ACKED_GAIN: u32 = BBR_UNIT;
/// Rounds per half of the extra_acked window (`bbr_extra_acked_win_rtts`).
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
/// An ACK epoch is restarted after this many packets (`bbr_ack_epoch_acked_reset_thresh`).
const ACK_EPOCH_ACKED_RESET: u32 = 1 << 20;
/// The aggregation extra is at most this much of bw (`bbr_extra_acked_max_us`).
const EXTRA_ACKED_MAX: Time = Time::from_ms(100);
/// Minimum rounds in a long-term sampling interval (`bbr_lt_intvl_min_rtts`).
const LT_INTVL_MIN_RTTS: u32 = 4;
/// Loss ratio (/256) that makes an interval "lossy" (`bbr_lt_loss_thresh`, 50/256 = 20 %).
const LT_LOSS_THRESH: u64 = 50;
/// Two intervals' rates are consistent within 1/8 (`bbr_lt_bw_ratio`) ...
const LT_BW_RATIO: u64 = BBR_UNIT as u64 / 8;
/// ... or within 4 kbit/s, in payload bytes/s (`bbr_lt_bw_diff`).
const LT_BW_DIFF: u64 = 4000 / 8;
/// Rounds to use the long-term rate once a policer is detected (`bbr_lt_bw_max_rtts`).
const LT_BW_MAX_RTTS: u32 = 48;
/// Linux `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` (MAX_TCP_HEADER = 320 B on x86-64).
const TSO_MAX_BYTES: u64 = 65_536 - 1 - 320;

/// BBR's state machine (`enum bbr_mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Windowed running max of lib/win_minmax.c: best, 2nd and 3rd best samples, kept spread
/// over the window so the max decays gracefully when the best expires.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MaxFilter {
    s: [(u64, u64); 3],
}

impl MaxFilter {
    /// The current max.
    pub fn get(&self) -> u64 {
        self.s[0].1
    }

    fn reset(&mut self, t: u64, v: u64) -> u64 {
        self.s = [(t, v); 3];
        v
    }

    /// Add sample `v` taken at time `t` (here: round count), window `win`; returns the max.
    pub fn running_max(&mut self, win: u64, t: u64, v: u64) -> u64 {
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].1 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if v >= self.s[2].1 {
            self.s[2] = (t, v);
        }
        self.subwin_update(win, (t, v))
    }

    fn subwin_update(&mut self, win: u64, val: (u64, u64)) -> u64 {
        let dt = val.0.wrapping_sub(self.s[0].0);
        if dt > win {
            // The best sample left the window: promote the 2nd and 3rd (possibly twice).
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = val;
            if val.0.wrapping_sub(self.s[0].0) > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = val;
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            // A quarter of the window without a new max: take a 2nd choice from it.
            self.s[1] = val;
            self.s[2] = val;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            // Half the window without one: take a 3rd choice from the last half.
            self.s[2] = val;
        }
        self.s[0].1
    }
}

/// One BBR instance (Linux `struct bbr`).
#[derive(Debug, Clone)]
pub struct Bbr {
    rng: Rng,
    mss: u32,
    header_bytes: u32,
    mode: Mode,
    /// None = no RTT sample yet (Linux `~0U`).
    min_rtt: Option<Time>,
    min_rtt_stamp: Time,
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,
    bw: MaxFilter,
    rtt_cnt: u64,
    next_rtt_delivered: u64,
    cycle_mstamp: Time,
    cycle_idx: usize,
    prev_ca_state: CaState,
    packet_conservation: bool,
    round_start: bool,
    idle_restart: bool,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: bool,
    full_bw_cnt: u32,
    full_bw: u64,
    has_seen_rtt: bool,
    prior_cwnd: u32,
    /// Pacing rate, payload bytes per second (Linux `sk_pacing_rate`).
    pacing_rate: u64,
    /// Time of the latest delivery (`tp->delivered_mstamp`) and the count it raised.
    delivered_mstamp: Time,
    last_total_delivered: u64,
    /// Emulated `tp->app_limited` of PROBE_RTT: packets sent while `tp->delivered` was in
    /// `app_limited_from..=app_limited_until` carry app-limited rate samples.
    app_limited_from: u64,
    app_limited_until: u64,
    /// ACK aggregation: start of the sampling epoch and packets (S)ACKed in it.
    ack_epoch_mstamp: Time,
    ack_epoch_acked: u32,
    /// Max excess ACKed over the two halves of the window, and the current half.
    extra_acked: [u32; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,
    /// Long-term (policer) estimator: sampling now? using `lt_bw`? its rate, and the start of
    /// the current interval (ms stamp, delivered, lost) and its length in rounds.
    lt_is_sampling: bool,
    lt_use_bw: bool,
    lt_bw: u64,
    lt_last_stamp_ms: u64,
    lt_last_delivered: u64,
    lt_last_lost: u64,
    lt_rtt_cnt: u32,
    /// `tp->lost` as of the latest ACK.
    last_total_lost: u64,
}

impl Bbr {
    /// Linux `bbr_init()`; `rng` draws the random PROBE_BW start phases.
    pub fn new(w: &Window, header_bytes: u32, rng: Rng) -> Bbr {
        let mut b = Bbr {
            rng,
            mss: w.mss.max(1),
            header_bytes,
            mode: Mode::Startup,
            min_rtt: None,
            min_rtt_stamp: Time::ZERO,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            bw: MaxFilter::default(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            cycle_mstamp: Time::ZERO,
            cycle_idx: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            round_start: false,
            idle_restart: false,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            full_bw_reached: false,
            full_bw_cnt: 0,
            full_bw: 0,
            has_seen_rtt: false,
            prior_cwnd: 0,
            pacing_rate: 0,
            delivered_mstamp: Time::ZERO,
            last_total_delivered: 0,
            app_limited_from: 0,
            app_limited_until: 0,
            ack_epoch_mstamp: Time::ZERO,
            ack_epoch_acked: 0,
            extra_acked: [0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            lt_is_sampling: false,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_stamp_ms: 0,
            lt_last_delivered: 0,
            lt_last_lost: 0,
            lt_rtt_cnt: 0,
            last_total_lost: 0,
        };
        b.init_pacing_rate_from_rtt(w.cwnd, Time::ZERO);
        b
    }

    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The bandwidth BBR paces at (long-term rate when policed, else the max filter),
    /// packets per second.
    pub fn bw_pkts_per_s(&self) -> f64 {
        self.bbr_bw() as f64 * 1e6 / BW_UNIT as f64
    }

    /// Is the long-term (policer) rate in use?
    pub fn lt_use_bw(&self) -> bool {
        self.lt_use_bw
    }

    /// Linux `bbr_bw()`: the estimate used for pacing and cwnd.
    fn bbr_bw(&self) -> u64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.bw.get()
        }
    }

    /// Linux `bbr_reset_lt_bw_sampling_interval()`.
    fn reset_lt_bw_sampling_interval(&mut self) {
        self.lt_last_stamp_ms = self.delivered_mstamp.ns() / 1_000_000;
        self.lt_last_delivered = self.last_total_delivered;
        self.lt_last_lost = self.last_total_lost;
        self.lt_rtt_cnt = 0;
    }

    /// Linux `bbr_reset_lt_bw_sampling()`.
    fn reset_lt_bw_sampling(&mut self) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval();
    }

    /// Linux `bbr_lt_bw_interval_done()`: a lossy interval measured `bw`; two consistent ones
    /// in a row mean a policer.
    fn lt_bw_interval_done(&mut self, bw: u64) {
        if self.lt_bw != 0 {
            let diff = bw.abs_diff(self.lt_bw);
            if diff * BBR_UNIT as u64 <= LT_BW_RATIO * self.lt_bw
                || self.rate_bytes_per_sec(diff, BBR_UNIT) <= LT_BW_DIFF
            {
                self.lt_bw = (bw + self.lt_bw) >> 1;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval();
    }

    /// Linux `bbr_lt_bw_sampling()`; `losses`, `app_limited` from the rate sample.
    fn lt_bw_sampling(&mut self, losses: u32, app_limited: bool) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling();
                    self.reset_probe_bw_mode();
                }
            }
            return;
        }
        // Start on the first loss: the policer's token bucket is then empty.
        if !self.lt_is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval();
            self.lt_is_sampling = true;
        }
        if app_limited {
            self.reset_lt_bw_sampling();
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling();
            return;
        }
        // End the interval on a loss, when the tokens are exhausted.
        if losses == 0 {
            return;
        }
        let lost = self.last_total_lost.saturating_sub(self.lt_last_lost);
        let delivered = self
            .last_total_delivered
            .saturating_sub(self.lt_last_delivered);
        if delivered == 0 || (lost << BBR_SCALE) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t_ms = (self.delivered_mstamp.ns() / 1_000_000).saturating_sub(self.lt_last_stamp_ms);
        if t_ms < 1 {
            return;
        }
        if t_ms >= u32::MAX as u64 / 1000 {
            self.reset_lt_bw_sampling();
            return;
        }
        let bw = (delivered as u128 * BW_UNIT / (t_ms as u128 * 1000)) as u64;
        self.lt_bw_interval_done(bw);
    }

    pub fn min_rtt(&self) -> Option<Time> {
        self.min_rtt
    }

    pub fn pacing_gain(&self) -> u32 {
        self.pacing_gain
    }

    pub fn cwnd_gain(&self) -> u32 {
        self.cwnd_gain
    }

    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }

    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }

    /// Linux `bbr_rate_bytes_per_sec()`: payload bytes/s for `bw` and `gain`, with the 1 %
    /// pacing margin.
    fn rate_bytes_per_sec(&self, bw: u64, gain: u32) -> u64 {
        let mut rate = bw as u128 * self.mss as u128;
        rate = (rate * gain as u128) >> BBR_SCALE;
        rate *= (1_000_000 / 100 * (100 - PACING_MARGIN_PERCENT)) as u128;
        (rate >> BW_SCALE) as u64
    }

    /// Linux `bbr_init_pacing_rate_from_rtt()`: high_gain x cwnd / srtt.
    fn init_pacing_rate_from_rtt(&mut self, cwnd: u32, srtt: Time) {
        let rtt_us = if srtt > Time::ZERO {
            self.has_seen_rtt = true;
            srtt.us().max(1)
        } else {
            1_000
        };
        let bw = (cwnd as u128 * BW_UNIT / rtt_us as u128) as u64;
        self.pacing_rate = self.rate_bytes_per_sec(bw, HIGH_GAIN);
    }

    /// Linux `bbr_set_pacing_rate()`.
    fn set_pacing_rate(&mut self, bw: u64, gain: u32, cwnd: u32, srtt: Time) {
        let rate = self.rate_bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && srtt > Time::ZERO {
            self.init_pacing_rate_from_rtt(cwnd, srtt);
        }
        if self.full_bw_reached || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
    }

    /// Linux `bbr_tso_segs_goal()`: about 1 ms of data at the pacing rate, 2..=127 segments
    /// (1 below 1.2 Mbit/s).
    fn tso_segs_goal(&self) -> u32 {
        let bytes = (self.pacing_rate >> 10).min(TSO_MAX_BYTES);
        let min_segs = if self.pacing_rate < MIN_TSO_RATE_BPS / 8 {
            1
        } else {
            2
        };
        ((bytes / self.mss as u64) as u32).max(min_segs).min(0x7f)
    }

    /// Linux `bbr_bdp()`: ceil(bw x min_rtt x gain), packets.
    fn bdp(&self, bw: u64, gain: u32) -> u32 {
        let Some(min_rtt) = self.min_rtt else {
            return TCP_INIT_CWND;
        };
        // bw is packets/us << 24 and min_rtt is in ns, hence the 1000.
        let w = (bw as u128 * min_rtt.ns() as u128 * gain as u128) >> BBR_SCALE;
        w.div_ceil(1000 * BW_UNIT).min(u32::MAX as u128) as u32
    }

    /// Linux `bbr_quantization_budget()`.
    fn quantization_budget(&self, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.saturating_add(3 * self.tso_segs_goal());
        cwnd = cwnd.saturating_add(1) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// Linux `bbr_inflight()`.
    fn inflight(&self, bw: u64, gain: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// Linux `bbr_packets_in_net_at_edt()` with the next departure assumed to be now.
    fn packets_in_net_at_edt(&self, inflight_now: u32) -> u32 {
        if self.pacing_gain > BBR_UNIT {
            inflight_now + self.tso_segs_goal()
        } else {
            inflight_now
        }
    }

    /// Linux `bbr_save_cwnd()`.
    fn save_cwnd(&mut self, cwnd: u32) {
        if self.prev_ca_state < CaState::Recovery && self.mode != Mode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// Linux `bbr_update_bw()`.
    fn update_bw(&mut self, rs: &RateSample, app_limited: bool) {
        self.round_start = false;
        if rs.delivered < 0 || rs.interval == Time::ZERO {
            return;
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = rs.total_delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(rs.losses, app_limited);
        let bw = (rs.delivered as u128 * BW_UNIT * 1000 / rs.interval.ns() as u128) as u64;
        if !app_limited || bw >= self.bw.get() {
            self.bw.running_max(BW_RTTS, self.rtt_cnt, bw);
        }
    }

    /// Linux `bbr_update_ack_aggregation()`: how much more was ACKed in this epoch than bw
    /// explains, max-filtered over 5-10 rounds.
    fn update_ack_aggregation(&mut self, rs: &RateSample, cwnd: u32) {
        if EXTRA_ACKED_GAIN == 0 || rs.acked_sacked == 0 || rs.delivered < 0 {
            return;
        }
        if rs.interval == Time::ZERO {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        // Packets bw explains over the epoch (bw in packets/us << 24, epoch in ns).
        let epoch = self.delivered_mstamp.saturating_sub(self.ack_epoch_mstamp);
        let mut expected = (self.bbr_bw() as u128 * epoch.ns() as u128 / (1000 * BW_UNIT))
            .min(u32::MAX as u128) as u32;
        // A slow ACK stream (or a very long epoch) starts a new epoch.
        if self.ack_epoch_acked <= expected
            || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET
        {
            self.ack_epoch_acked = 0;
            self.ack_epoch_mstamp = self.delivered_mstamp;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected).min(cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// Linux `bbr_ack_aggregation_cwnd()`: the cwnd added for ACK aggregation.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if EXTRA_ACKED_GAIN == 0 || !self.full_bw_reached {
            return 0;
        }
        let max_aggr = self.bbr_bw() as u128 * EXTRA_ACKED_MAX.ns() as u128 / (1000 * BW_UNIT);
        let extra = self.extra_acked[0].max(self.extra_acked[1]);
        let aggr = (EXTRA_ACKED_GAIN as u128 * extra as u128) >> BBR_SCALE;
        aggr.min(max_aggr) as u32
    }

    /// Linux `bbr_is_next_cycle_phase()`.
    fn is_next_cycle_phase(&self, rs: &RateSample) -> bool {
        let min_rtt = self.min_rtt.unwrap_or(Time::MAX);
        let is_full_length = self.delivered_mstamp.saturating_sub(self.cycle_mstamp) > min_rtt;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(rs.prior_in_flight);
        let bw = self.bw.get();
        if self.pacing_gain > BBR_UNIT {
            return is_full_length
                && (rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT)
    }

    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) & (CYCLE_LEN - 1);
        self.cycle_mstamp = self.delivered_mstamp;
    }

    /// Linux `bbr_reset_probe_bw_mode()`: random phase, never the 3/4 one.
    fn reset_probe_bw_mode(&mut self) {
        self.mode = Mode::ProbeBw;
        self.cycle_idx = CYCLE_LEN - 1 - self.rng.below(CYCLE_RAND) as usize;
        self.advance_cycle_phase();
    }

    fn reset_mode(&mut self) {
        if self.full_bw_reached {
            self.reset_probe_bw_mode();
        } else {
            self.mode = Mode::Startup;
        }
    }

    /// Linux `bbr_check_full_bw_reached()`.
    fn check_full_bw_reached(&mut self, app_limited: bool) {
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        let thresh = (self.full_bw as u128 * FULL_BW_THRESH as u128) >> BBR_SCALE;
        if self.bw.get() as u128 >= thresh {
            self.full_bw = self.bw.get();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// Linux `bbr_check_drain()`.
    fn check_drain(&mut self, w: &mut Window, rs: &RateSample) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            w.ssthresh = self.inflight(self.bw.get(), BBR_UNIT);
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(rs.in_flight) <= self.inflight(self.bw.get(), BBR_UNIT)
        {
            self.reset_probe_bw_mode();
        }
    }

    /// Linux `bbr_check_probe_rtt_done()`.
    fn check_probe_rtt_done(&mut self, w: &mut Window, now: Time) {
        match self.probe_rtt_done_stamp {
            Some(done) if now > done => {}
            _ => return,
        }
        self.min_rtt_stamp = now;
        w.cwnd = w.cwnd.max(self.prior_cwnd);
        self.reset_mode();
    }

    /// Linux `bbr_update_min_rtt()`, including PROBE_RTT entry and exit.
    fn update_min_rtt(&mut self, w: &mut Window, rs: &RateSample, now: Time) {
        let filter_expired = now > self.min_rtt_stamp + MIN_RTT_WIN;
        if let Some(rtt) = rs.rtt {
            if self.min_rtt.is_none_or(|m| rtt < m) || filter_expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if filter_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(w.cwnd);
            self.probe_rtt_done_stamp = None;
        }
        if self.mode == Mode::ProbeRtt {
            // Linux: tp->app_limited = (tp->delivered + in_flight) ?: 1.
            if self.app_limited_until == 0 {
                self.app_limited_from = rs.total_delivered;
            }
            self.app_limited_until = (rs.total_delivered + rs.in_flight as u64).max(1);
            if self.probe_rtt_done_stamp.is_none() && rs.in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_MODE);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = rs.total_delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(w, now);
                }
            }
        }
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// Linux `bbr_update_gains()`.
    fn update_gains(&mut self) {
        (self.pacing_gain, self.cwnd_gain) = match self.mode {
            Mode::Startup => (HIGH_GAIN, HIGH_GAIN),
            Mode::Drain => (DRAIN_GAIN, HIGH_GAIN),
            Mode::ProbeBw if self.lt_use_bw => (BBR_UNIT, CWND_GAIN),
            Mode::ProbeBw => (PACING_GAIN[self.cycle_idx], CWND_GAIN),
            Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
        };
    }

    /// Linux `bbr_set_cwnd_to_recover_or_restore()`: the cwnd to start from, and whether
    /// packet conservation decides it alone.
    fn recover_or_restore(&mut self, w: &Window, rs: &RateSample, acked: u32) -> (u32, bool) {
        let state = rs.ca_state.unwrap_or(CaState::Open);
        let mut cwnd = w.cwnd;
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && self.prev_ca_state != CaState::Recovery {
            // First round of recovery: packet conservation.
            self.packet_conservation = true;
            self.next_rtt_delivered = rs.total_delivered;
            cwnd = rs.in_flight + acked;
        } else if self.prev_ca_state >= CaState::Recovery && state < CaState::Recovery {
            // Leaving recovery: restore the cwnd saved on entering it.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(rs.in_flight + acked), true);
        }
        (cwnd, false)
    }

    /// Linux `bbr_set_cwnd()`.
    fn set_cwnd(&mut self, w: &mut Window, rs: &RateSample, bw: u64) {
        let acked = rs.acked_sacked;
        let mut cwnd = w.cwnd;
        if acked > 0 {
            let (c, conserving) = self.recover_or_restore(w, rs, acked);
            cwnd = c;
            if !conserving {
                let target = self.bdp(bw, self.cwnd_gain) + self.ack_aggregation_cwnd();
                let target = self.quantization_budget(target);
                if self.full_bw_reached {
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || rs.total_delivered < TCP_INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        w.cwnd = cwnd.min(w.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(CWND_MIN_TARGET);
        }
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// Linux `bbr_ssthresh()`: note the cwnd to restore after recovery; ssthresh unchanged.
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        self.save_cwnd(w.cwnd);
        w.ssthresh
    }

    /// Never called by a sender honouring `cong_control() == true`, as in Linux's
    /// `tcp_cong_control()`: BBR sets cwnd there. Nothing to do.
    fn cong_avoid(&mut self, _w: &mut Window, _ack: &AckInfo, _c: &Coupling) {}

    /// Linux `bbr_set_state()`: an RTO counts as the end of a round with a loss.
    fn set_state(&mut self, _w: &mut Window, state: CaState, _now: Time) {
        if state == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0;
            self.round_start = true;
            self.lt_bw_sampling(1, false);
        }
    }

    /// Linux `bbr_cwnd_event()`: restarting from idle.
    fn cwnd_event(&mut self, w: &mut Window, ev: CwndEvent, now: Time) {
        if ev != CwndEvent::TxStart {
            return;
        }
        self.idle_restart = true;
        self.ack_epoch_mstamp = now;
        self.ack_epoch_acked = 0;
        match self.mode {
            Mode::ProbeBw => self.set_pacing_rate(self.bbr_bw(), BBR_UNIT, w.cwnd, Time::ZERO),
            Mode::ProbeRtt => self.check_probe_rtt_done(w, now),
            _ => {}
        }
    }

    /// Linux `bbr_main()`.
    fn cong_control(&mut self, w: &mut Window, rs: &RateSample, ack: &AckInfo) -> bool {
        let now = ack.now;
        if rs.total_delivered > self.last_total_delivered {
            self.last_total_delivered = rs.total_delivered;
            self.delivered_mstamp = now;
        }
        self.last_total_lost = rs.total_lost;
        // The sender's rate sampler clears tp->app_limited once delivered passes it.
        let marked = self.app_limited_until != 0
            && rs.prior_delivered >= self.app_limited_from
            && rs.prior_delivered <= self.app_limited_until;
        if self.app_limited_until != 0 && rs.total_delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        let app_limited = rs.is_app_limited || marked;

        // bbr_update_model()
        self.update_bw(rs, app_limited);
        self.update_ack_aggregation(rs, w.cwnd);
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(rs) {
            self.advance_cycle_phase();
        }
        self.check_full_bw_reached(app_limited);
        self.check_drain(w, rs);
        self.update_min_rtt(w, rs, now);
        self.update_gains();

        let bw = self.bbr_bw();
        self.set_pacing_rate(bw, self.pacing_gain, w.cwnd, ack.srtt);
        self.set_cwnd(w, rs, bw);
        true
    }

    /// Linux `bbr_undo_cwnd()`: a spurious loss restarts full-pipe detection.
    fn undo_cwnd(&mut self, w: &Window) -> u32 {
        self.full_bw = 0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling();
        w.cwnd
    }

    /// The pacing rate in wire bits per second: Linux's payload rate scaled by
    /// (mss + header) / mss, i.e. the same packets per second.
    fn pacing_rate_bps(&self) -> Option<u64> {
        let wire = self.pacing_rate as u128 * 8 * (self.mss + self.header_bytes) as u128;
        Some((wire / self.mss as u128).min(u64::MAX as u128) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1 packet per ms as BBR stores it: 10 packets over 10 ms = 2^24 / 1000 -> 16777.
    const BW_1PKT_PER_MS: u64 = 16_777;

    /// A BBR with a 10 ms min RTT at `now`, and a window of `cwnd`.
    fn bbr(cwnd: u32) -> (Bbr, Window) {
        let w = Window::new(cwnd, 1448);
        let b = Bbr::new(&w, 52, Rng::stream(7, "bbr-test"));
        (b, w)
    }

    /// Sender-side bookkeeping for crafted rate samples.
    struct Feed {
        delivered: u64,
        now: Time,
    }

    impl Feed {
        /// One ACK delivering `n` packets at `pkts_per_ms`, `rtt_ms`, `in_flight` after it;
        /// `new_round` makes the sampled packet one sent after the current round's end.
        fn ack(&mut self, b: &mut Bbr, w: &mut Window, p: AckParams) -> RateSample {
            self.now += Time::from_ms(p.advance_ms);
            let prior_delivered = if p.new_round { b.next_rtt_delivered } else { 0 };
            self.delivered += p.n as u64;
            let rs = RateSample {
                delivered: (p.pkts_per_ms * 10) as i64,
                interval: Time::from_ms(10),
                prior_delivered,
                prior_in_flight: p.prior_in_flight,
                rtt: Some(Time::from_ms(p.rtt_ms)),
                losses: p.losses,
                acked_sacked: p.n,
                is_app_limited: false,
                total_delivered: self.delivered,
                total_lost: 0,
                in_flight: p.in_flight,
                ca_state: Some(p.state),
            };
            let ack = AckInfo {
                now: self.now,
                srtt: Time::from_ms(p.rtt_ms),
                ..Default::default()
            };
            assert!(b.cong_control(w, &rs, &ack));
            rs
        }
    }

    #[derive(Clone, Copy)]
    struct AckParams {
        n: u32,
        pkts_per_ms: u64,
        rtt_ms: u64,
        in_flight: u32,
        prior_in_flight: u32,
        new_round: bool,
        advance_ms: u64,
        losses: u32,
        state: CaState,
    }

    const P: AckParams = AckParams {
        n: 2,
        pkts_per_ms: 1,
        rtt_ms: 10,
        in_flight: 30,
        prior_in_flight: 30,
        new_round: false,
        advance_ms: 1,
        losses: 0,
        state: CaState::Open,
    };

    /// Puts `b` in PROBE_BW at phase `idx` with bw 1 pkt/ms, min RTT 10 ms, fresh stamps.
    fn in_probe_bw(b: &mut Bbr, f: &Feed, idx: usize) {
        b.bw.reset(b.rtt_cnt, BW_1PKT_PER_MS);
        b.min_rtt = Some(Time::from_ms(10));
        b.min_rtt_stamp = f.now;
        b.full_bw_reached = true;
        b.mode = Mode::ProbeBw;
        b.cycle_idx = idx;
        b.cycle_mstamp = f.now;
        b.delivered_mstamp = f.now;
        b.next_rtt_delivered = f.delivered;
        b.update_gains();
        // Pacing at 1 pkt/ms: payload 1448 B x 1000/s x 0.99 -> tso goal = max(1399/1448, 2).
        b.pacing_rate = b.rate_bytes_per_sec(BW_1PKT_PER_MS, BBR_UNIT);
    }

    #[test]
    fn constants_match_linux() {
        assert_eq!(HIGH_GAIN, 739); // 256 x 2.885 = 738.56 -> 738 + 1
        assert_eq!(DRAIN_GAIN, 88); // 256 / 2.885 = 88.7
        assert_eq!(PACING_GAIN, [320, 192, 256, 256, 256, 256, 256, 256]);
        assert_eq!(CWND_GAIN, 512);
    }

    #[test]
    fn initial_pacing_rate_is_high_gain_cwnd_per_ms() {
        let (b, _) = bbr(10);
        // 10 pkts / 1 ms nominal: bw = 10 x 2^24 / 1000 = 167772; x 1448 x 739/256 x 0.99
        // = 41_381_651 payload B/s; x 8 x 1500/1448 = 342_941_859 wire bit/s.
        assert_eq!(b.pacing_rate, 41_381_651);
        assert_eq!(b.pacing_rate_bps(), Some(342_941_859));
    }

    #[test]
    fn pacing_rate_in_wire_bits_with_margin() {
        let (mut b, mut w) = bbr(10);
        let mut f = Feed {
            delivered: 0,
            now: Time::from_secs(1),
        };
        in_probe_bw(&mut b, &f, 2);
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                new_round: true,
                ..P
            },
        );
        assert_eq!(b.pacing_gain(), BBR_UNIT);
        // 1 pkt/ms: 16777 / 2^24 x 1e6 = 999.99 pkt/s x 1448 B x 0.99 = 1_433_501 B/s;
        // wire: x 8 x 1500 / 1448 = 11_879_842 bit/s (= 0.99 x 12 Mbit/s for 1500-B packets).
        assert_eq!(b.pacing_rate, 1_433_501);
        assert_eq!(b.pacing_rate_bps(), Some(11_879_842));
    }

    #[test]
    fn startup_then_drain_then_probe_bw() {
        let (mut b, mut w) = bbr(10);
        let mut f = Feed {
            delivered: 0,
            now: Time::from_secs(1),
        };
        assert_eq!(b.mode(), Mode::Startup);
        // Round 1 sets full_bw; rounds 2-4 bring no 25 % growth: full after the 3rd.
        for round in 1..=4 {
            assert_eq!(b.mode(), Mode::Startup, "round {round}");
            f.ack(
                &mut b,
                &mut w,
                AckParams {
                    new_round: true,
                    ..P
                },
            );
            assert_eq!(b.rtt_cnt, round);
        }
        assert!(b.full_bw_reached());
        // DRAIN: ssthresh = BDP (10) + 3 x 2 quanta = 16. 30 in flight (+2 while the startup
        // gain is still in force) > 16, so DRAIN holds.
        assert_eq!(b.mode(), Mode::Drain);
        assert_eq!(w.ssthresh, 16);
        assert_eq!((b.pacing_gain(), b.cwnd_gain()), (DRAIN_GAIN, HIGH_GAIN));
        f.ack(&mut b, &mut w, AckParams { in_flight: 17, ..P });
        assert_eq!(b.mode(), Mode::Drain);
        // In flight down to the BDP budget: PROBE_BW at a random phase other than 3/4.
        f.ack(&mut b, &mut w, AckParams { in_flight: 16, ..P });
        assert_eq!(b.mode(), Mode::ProbeBw);
        assert_ne!(b.cycle_idx(), 1);
        assert_eq!(b.cwnd_gain(), CWND_GAIN);
    }

    #[test]
    fn growing_bw_keeps_startup() {
        let (mut b, mut w) = bbr(10);
        let mut f = Feed {
            delivered: 0,
            now: Time::from_secs(1),
        };
        // Each round's bw is at least 1.25x the previous one: the pipe is never full.
        for rate in [4, 5, 7, 9, 12, 15] {
            f.ack(
                &mut b,
                &mut w,
                AckParams {
                    new_round: true,
                    pkts_per_ms: rate,
                    ..P
                },
            );
        }
        assert_eq!(b.mode(), Mode::Startup);
        assert_eq!(b.full_bw_cnt, 0);
        // App-limited rounds do not count towards the full pipe either.
        b.full_bw = 1 << 40;
        let mut f2 = Feed {
            delivered: f.delivered,
            now: f.now,
        };
        for _ in 0..3 {
            let prior = b.next_rtt_delivered;
            f2.now += Time::from_ms(1);
            f2.delivered += 2;
            let rs = RateSample {
                delivered: 10,
                interval: Time::from_ms(10),
                prior_delivered: prior,
                is_app_limited: true,
                acked_sacked: 2,
                total_delivered: f2.delivered,
                in_flight: 30,
                rtt: Some(Time::from_ms(10)),
                ..Default::default()
            };
            b.cong_control(
                &mut w,
                &rs,
                &AckInfo {
                    now: f2.now,
                    ..Default::default()
                },
            );
        }
        assert!(!b.full_bw_reached());
    }

    #[test]
    fn max_filter_windowing_by_hand() {
        let mut m = MaxFilter::default();
        m.reset(0, 100);
        // Round 1: 50 is no new max; too early (1 <= 10/4) for a 2nd choice.
        assert_eq!(m.running_max(10, 1, 50), 100);
        assert_eq!(m.s, [(0, 100); 3]);
        // Round 3 (> 10/4 = 2): 50 becomes the 2nd and 3rd choice.
        assert_eq!(m.running_max(10, 3, 50), 100);
        assert_eq!(m.s[1], (3, 50));
        // Round 6 (> 10/2): 40 becomes the 3rd choice.
        assert_eq!(m.running_max(10, 6, 40), 100);
        assert_eq!(m.s[2], (6, 40));
        // Round 10: the best is 10 rounds old, still inside the window.
        assert_eq!(m.running_max(10, 10, 30), 100);
        // Round 11: it expires; the 2nd choice (50, round 3) takes over.
        assert_eq!(m.running_max(10, 11, 30), 50);
        assert_eq!(m.s, [(3, 50), (6, 40), (11, 30)]);
        // A new max resets everything.
        assert_eq!(m.running_max(10, 12, 60), 60);
        assert_eq!(m.s, [(12, 60); 3]);
        // Nothing left in the window (3rd choice 11 rounds old): restart from the sample.
        assert_eq!(m.running_max(10, 24, 5), 5);
    }

    #[test]
    fn app_limited_samples_only_raise_bw() {
        let (mut b, mut w) = bbr(10);
        b.bw.reset(0, BW_1PKT_PER_MS);
        let rs = |prior, total, app| RateSample {
            delivered: 5, // 0.5 pkt/ms
            interval: Time::from_ms(10),
            prior_delivered: prior,
            total_delivered: total,
            acked_sacked: 1,
            is_app_limited: app,
            in_flight: 20,
            ..Default::default()
        };
        let ack = AckInfo {
            now: Time::from_secs(1),
            ..Default::default()
        };
        b.cong_control(&mut w, &rs(0, 1, true), &ack);
        assert_eq!(b.bw.get(), BW_1PKT_PER_MS);
        // 11 rounds later the same low sample, not app-limited, is all the filter has.
        b.rtt_cnt = 11;
        b.cong_control(&mut w, &rs(5, 6, false), &ack);
        assert_eq!(b.bw.get(), 5 * (1 << 24) * 1000 / 10_000_000);
    }

    #[test]
    fn gain_cycling_phases() {
        let (mut b, mut w) = bbr(30);
        let mut f = Feed {
            delivered: 100,
            now: Time::from_secs(1),
        };
        in_probe_bw(&mut b, &f, 0);
        assert_eq!(b.pacing_gain(), 320);
        // 5/4 phase: inflight target = ceil(12.5) = 13 + 6 = 19 -> 20 even, +2 in phase 0 = 22.
        // In flight 20 + one TSO goal (2) = 22 reaches it, but only 5 ms (< min_rtt) passed.
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                advance_ms: 5,
                prior_in_flight: 20,
                ..P
            },
        );
        assert_eq!(b.cycle_idx(), 0);
        // 11 ms in, in flight only 19 + 2 = 21 < 22, no loss: keep probing.
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                advance_ms: 6,
                prior_in_flight: 19,
                ..P
            },
        );
        assert_eq!(b.cycle_idx(), 0);
        // A loss ends the probe at full length.
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                prior_in_flight: 19,
                losses: 1,
                ..P
            },
        );
        assert_eq!(b.cycle_idx(), 1);
        assert_eq!(b.pacing_gain(), 192);
        // 3/4 phase ends early once in flight <= 1 x BDP budget (10 + 6 = 16).
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                prior_in_flight: 17,
                ..P
            },
        );
        assert_eq!(b.cycle_idx(), 1);
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                prior_in_flight: 16,
                ..P
            },
        );
        assert_eq!(b.cycle_idx(), 2);
        assert_eq!(b.pacing_gain(), 256);
        // Gain-1 phases last one min_rtt (10 ms) each, whatever is in flight.
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                advance_ms: 10,
                prior_in_flight: 0,
                ..P
            },
        );
        assert_eq!(b.cycle_idx(), 2);
        f.ack(&mut b, &mut w, AckParams { advance_ms: 1, ..P });
        assert_eq!(b.cycle_idx(), 3);
        // ... and the cycle wraps from 7 to 0.
        for _ in 0..5 {
            f.ack(
                &mut b,
                &mut w,
                AckParams {
                    advance_ms: 11,
                    ..P
                },
            );
        }
        assert_eq!(b.cycle_idx(), 0);
    }

    #[test]
    fn random_start_phase_covers_all_but_the_drain_phase() {
        let (mut b, _) = bbr(10);
        let mut seen = [0u32; CYCLE_LEN];
        for _ in 0..700 {
            b.reset_probe_bw_mode();
            seen[b.cycle_idx()] += 1;
        }
        assert_eq!(seen[1], 0);
        assert!(
            seen.iter().enumerate().all(|(i, &n)| i == 1 || n > 50),
            "{seen:?}"
        );
    }

    #[test]
    fn probe_rtt_entry_and_exit_timing() {
        let (mut b, mut w) = bbr(30);
        let mut f = Feed {
            delivered: 100,
            now: Time::ZERO,
        };
        in_probe_bw(&mut b, &f, 3);
        w.cwnd = 26;
        // Exactly 10 s after the min_rtt stamp the filter has not expired. cwnd 26 + 2 acked =
        // 28 = target (2 x BDP 10 + ACK-aggregation extra 2 + 6).
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                advance_ms: 10_000,
                rtt_ms: 12,
                ..P
            },
        );
        assert_eq!(b.mode(), Mode::ProbeBw);
        // 1 ms later it has: the 12 ms sample becomes min_rtt, PROBE_RTT caps cwnd at 4.
        f.ack(&mut b, &mut w, AckParams { rtt_ms: 12, ..P });
        assert_eq!(b.mode(), Mode::ProbeRtt);
        assert_eq!(b.min_rtt(), Some(Time::from_ms(12)));
        assert_eq!(w.cwnd, 4);
        assert_eq!(b.prior_cwnd, 28);
        assert_eq!(b.pacing_gain(), BBR_UNIT);
        // In flight still 30: the 200 ms clock has not started.
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                advance_ms: 300,
                ..P
            },
        );
        assert_eq!(b.mode(), Mode::ProbeRtt);
        assert_eq!(b.probe_rtt_done_stamp, None);
        // In flight down to 4 at t1: done at t1 + 200 ms, and after a full round.
        f.ack(&mut b, &mut w, AckParams { in_flight: 4, ..P });
        let t1 = f.now;
        assert_eq!(b.probe_rtt_done_stamp, Some(t1 + PROBE_RTT_MODE));
        // 250 ms but no round yet: stay.
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                advance_ms: 250,
                in_flight: 4,
                ..P
            },
        );
        assert_eq!(b.mode(), Mode::ProbeRtt);
        // The round ends: leave, renew the stamp, restore cwnd 28 towards the target.
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                in_flight: 4,
                new_round: true,
                ..P
            },
        );
        assert_eq!(b.mode(), Mode::ProbeBw);
        assert_eq!(b.min_rtt_stamp, f.now);
        // Target: 2 x BDP (12 ms: ceil(24) = 24) + extra 4 (4 packets ACKed within 1 ms) + 6 =
        // 34 (+2 in phase 0); 28 + 2 acked = 30.
        assert_eq!(w.cwnd, 30);
    }

    #[test]
    fn probe_rtt_round_alone_is_not_enough() {
        let (mut b, mut w) = bbr(30);
        let mut f = Feed {
            delivered: 100,
            now: Time::ZERO,
        };
        in_probe_bw(&mut b, &f, 3);
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                advance_ms: 10_001,
                in_flight: 4,
                ..P
            },
        );
        assert_eq!(b.mode(), Mode::ProbeRtt);
        let done = b.probe_rtt_done_stamp.unwrap();
        // A round completes 100 ms later, before the 200 ms: stay until after `done`.
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                advance_ms: 100,
                in_flight: 4,
                new_round: true,
                ..P
            },
        );
        assert_eq!(b.mode(), Mode::ProbeRtt);
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                advance_ms: 100,
                in_flight: 4,
                ..P
            },
        );
        assert_eq!(f.now, done);
        assert_eq!(b.mode(), Mode::ProbeRtt, "not after, at the stamp");
        f.ack(&mut b, &mut w, AckParams { in_flight: 4, ..P });
        assert_eq!(b.mode(), Mode::ProbeBw);
    }

    #[test]
    fn probe_rtt_samples_are_app_limited() {
        let (mut b, mut w) = bbr(30);
        let mut f = Feed {
            delivered: 100,
            now: Time::ZERO,
        };
        in_probe_bw(&mut b, &f, 3);
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                advance_ms: 10_001,
                in_flight: 20,
                ..P
            },
        );
        assert_eq!(b.mode(), Mode::ProbeRtt);
        // Marked: packets sent while delivered was in 102..=122.
        assert_eq!((b.app_limited_from, b.app_limited_until), (102, 122));
        // Eleven rounds of low-rate samples from packets sent in PROBE_RTT: bw holds.
        for _ in 0..11 {
            b.next_rtt_delivered = 110;
            let rs = RateSample {
                delivered: 2,
                interval: Time::from_ms(10),
                prior_delivered: 110,
                total_delivered: 112,
                acked_sacked: 1,
                in_flight: 4,
                ..Default::default()
            };
            b.cong_control(
                &mut w,
                &rs,
                &AckInfo {
                    now: f.now,
                    ..Default::default()
                },
            );
        }
        assert_eq!(b.bw.get(), BW_1PKT_PER_MS);
    }

    #[test]
    fn cwnd_targets() {
        // PROBE_BW, phase 2: target = 2 x BDP (10) + ACK-aggregation extra + 3 x 2.
        let (mut b, mut w) = bbr(10);
        let mut f = Feed {
            delivered: 100,
            now: Time::ZERO,
        };
        in_probe_bw(&mut b, &f, 2);
        f.ack(&mut b, &mut w, AckParams { n: 5, ..P });
        // Extra 5 (a new ACK epoch): target 20 + 5 + 6 = 31 -> 32.
        assert_eq!(w.cwnd, 15, "grows by the packets acked below target");
        w.cwnd = 40;
        f.ack(&mut b, &mut w, AckParams { n: 5, ..P });
        // 10 packets ACKed in 1 ms where bw explains 0: extra 10, target 20 + 10 + 6 = 36.
        assert_eq!(w.cwnd, 36, "snaps down to target once the pipe was full");

        // STARTUP: target = ceil(10 x 739/256 = 28.87) = 29 + 6 = 35 -> 36 even; never cut.
        let (mut b, mut w) = bbr(10);
        b.bw.reset(0, BW_1PKT_PER_MS);
        b.min_rtt = Some(Time::from_ms(10));
        b.min_rtt_stamp = Time::ZERO;
        b.has_seen_rtt = true;
        b.pacing_rate = b.rate_bytes_per_sec(BW_1PKT_PER_MS, HIGH_GAIN); // tso goal 2
        let mut f = Feed {
            delivered: 100,
            now: Time::ZERO,
        };
        assert_eq!(b.inflight(BW_1PKT_PER_MS, HIGH_GAIN), 36);
        w.cwnd = 40;
        f.ack(&mut b, &mut w, AckParams { n: 5, ..P });
        assert_eq!(w.cwnd, 40);
        w.cwnd = 20;
        f.ack(&mut b, &mut w, AckParams { n: 5, ..P });
        assert_eq!(w.cwnd, 25);
        // Without any RTT sample the BDP is the initial window, 10; the initial pacing rate
        // (41_381_651 B/s) makes the TSO goal 41_381_651 >> 10 = 40411 B / 1448 = 27 segments:
        // 10 + 3 x 27 = 91 -> 92.
        let (b, _) = bbr(10);
        assert_eq!(b.inflight(BW_1PKT_PER_MS, BBR_UNIT), 92);
    }

    #[test]
    fn ack_aggregation_extra_by_hand() {
        let (mut b, _) = bbr(10);
        b.bw.reset(0, BW_1PKT_PER_MS);
        let rs = |acked| RateSample {
            delivered: 10,
            interval: Time::from_ms(10),
            acked_sacked: acked,
            ..Default::default()
        };
        let at = |b: &mut Bbr, ms: u64, acked: u32, cwnd: u32| {
            b.delivered_mstamp = Time::from_ms(ms);
            b.update_ack_aggregation(&rs(acked), cwnd);
        };
        // 20 ACKed 10 ms into the epoch where bw explains 9: the epoch restarts (0 <= 9),
        // extra = 20.
        at(&mut b, 10, 20, 100);
        assert_eq!(
            (b.ack_epoch_mstamp, b.ack_epoch_acked),
            (Time::from_ms(10), 20)
        );
        assert_eq!(b.extra_acked, [20, 0]);
        // Not used before the pipe is full.
        assert_eq!(b.ack_aggregation_cwnd(), 0);
        b.full_bw_reached = true;
        assert_eq!(b.ack_aggregation_cwnd(), 20);
        // 5 ms later 3 more: 23 - 4 explained = 19, the max stays 20.
        at(&mut b, 15, 3, 100);
        assert_eq!((b.ack_epoch_acked, b.extra_acked), (23, [20, 0]));
        // 30 ms into the epoch bw explains 29 > 23: new epoch at 40 ms.
        at(&mut b, 40, 2, 100);
        assert_eq!(
            (b.ack_epoch_mstamp, b.ack_epoch_acked),
            (Time::from_ms(40), 2)
        );
        // The extra is capped by cwnd ...
        at(&mut b, 40, 30, 5);
        assert_eq!(b.extra_acked, [20, 0]);
        b.extra_acked[0] = 500;
        // ... and by 100 ms of bw: 16777 x 100 ms = 99.99 -> 99 packets.
        assert_eq!(b.ack_aggregation_cwnd(), 99);
        // Window: every 5 rounds the other half is cleared and becomes current. At 1000 ms the
        // epoch restarts (32 <= 959 explained), then each call adds 1 packet in no time: extra
        // 1, 2, 3, 4, then on the 5th round the flip to half 1, which records 5.
        b.extra_acked = [20, 0];
        for _ in 0..5 {
            b.round_start = true;
            at(&mut b, 1000, 1, 100);
        }
        assert_eq!(b.extra_acked_win_idx, 1);
        assert_eq!(b.extra_acked, [20, 5]);
        assert_eq!(b.ack_aggregation_cwnd(), 20);
        for _ in 0..5 {
            b.round_start = true;
            at(&mut b, 1000, 1, 100);
        }
        // Extra 6..9 into half 1, then on the 10th round half 0 is cleared and records 10: the
        // burst of 20 has aged out.
        assert_eq!(b.extra_acked_win_idx, 0);
        assert_eq!(b.extra_acked, [10, 9]);
        assert_eq!(b.ack_aggregation_cwnd(), 10);
    }

    /// One long-term sampling step: the sender's totals at `t_ms`, this ACK's losses.
    fn lt_step(b: &mut Bbr, t_ms: u64, delivered: u64, lost: u64, losses: u32) {
        b.delivered_mstamp = Time::from_ms(t_ms);
        b.last_total_delivered = delivered;
        b.last_total_lost = lost;
        b.round_start = true;
        b.lt_bw_sampling(losses, false);
    }

    #[test]
    fn long_term_policer_detection_by_hand() {
        let (mut b, _) = bbr(10);
        b.mode = Mode::ProbeBw;
        // No loss yet: no sampling.
        lt_step(&mut b, 100, 1000, 0, 0);
        assert!(!b.lt_is_sampling);
        // The first loss starts an interval (at 110 ms, delivered 1010, lost 5).
        lt_step(&mut b, 110, 1010, 5, 5);
        assert!(b.lt_is_sampling);
        assert_eq!(
            (b.lt_last_stamp_ms, b.lt_last_delivered, b.lt_last_lost),
            (110, 1010, 5)
        );
        // Interval 1: 4 rounds, 10 delivered and 3 lost each. After 4: 30 delivered, 9 lost,
        // 9 x 256 = 2304 >= 50 x 30: lossy; 30 packets in 30 ms = 1 pkt/ms = 16777.
        for (i, t) in [120, 130, 140].into_iter().enumerate() {
            let k = i as u64 + 1;
            lt_step(&mut b, t, 1010 + 10 * k, 5 + 3 * k, 3);
        }
        assert_eq!(b.lt_bw, 16_777);
        assert!(!b.lt_use_bw());
        // Interval 2: 11 delivered and 3 lost per round, 44 in 40 ms = 1.1 pkt/ms = 18454,
        // within 1/8 of 16777 (1677 x 256 <= 32 x 16777): policed, pace at the mean 17615.
        for (i, t) in [150, 160, 170, 180].into_iter().enumerate() {
            let k = i as u64 + 1;
            lt_step(&mut b, t, 1040 + 11 * k, 14 + 3 * k, 3);
        }
        assert!(b.lt_use_bw());
        assert_eq!(b.lt_bw, (18_454 + 16_777) / 2);
        assert_eq!(b.bbr_bw(), 17_615);
        assert_eq!(b.pacing_gain(), BBR_UNIT);
        // The long-term rate is used for 48 rounds of PROBE_BW, then gain cycling resumes.
        for k in 1..48 {
            lt_step(&mut b, 180 + 10 * k, 2000, 100, 0);
        }
        assert!(b.lt_use_bw());
        lt_step(&mut b, 700, 2000, 100, 0);
        assert!(!b.lt_use_bw());
        assert_eq!(b.lt_bw, 0);
    }

    #[test]
    fn long_term_rates_must_agree_and_intervals_be_lossy() {
        let (mut b, _) = bbr(10);
        lt_step(&mut b, 0, 0, 1, 1);
        // 10 % loss (4 of 40): not lossy, the interval goes on ...
        for k in 1..=4 {
            lt_step(&mut b, 10 * k, 10 * k, 1 + k, 1);
        }
        assert_eq!(b.lt_bw, 0);
        // ... and is abandoned after 16 rounds (the next loss would start a new one).
        for k in 5..=16 {
            lt_step(&mut b, 10 * k, 10 * k, 1 + k, 1);
        }
        assert!(!b.lt_is_sampling);
        // Two lossy intervals at 1 and 2 pkt/ms: not consistent, the second rate replaces the
        // first and a new interval starts. Interval 1: 30 packets, 15 lost, in 30 ms.
        lt_step(&mut b, 1000, 1000, 100, 1);
        for k in 1..=3 {
            lt_step(&mut b, 1000 + 10 * k, 1000 + 10 * k, 100 + 5 * k, 1);
        }
        assert_eq!(b.lt_bw, 16_777);
        // Interval 2: 80 packets, 20 lost, in 40 ms = 2 pkt/ms; |33554 - 16777| is neither
        // within 1/8 nor within 4 kbit/s.
        for k in 1..=4 {
            lt_step(&mut b, 1030 + 10 * k, 1030 + 20 * k, 115 + 5 * k, 1);
        }
        assert!(!b.lt_use_bw());
        assert_eq!(b.lt_bw, 33_554);
        // App-limited samples reset the estimator.
        b.lt_bw_sampling(1, true);
        assert_eq!((b.lt_bw, b.lt_is_sampling), (0, false));
    }

    #[test]
    fn packet_conservation_in_first_recovery_round() {
        let (mut b, mut w) = bbr(30);
        let mut f = Feed {
            delivered: 100,
            now: Time::ZERO,
        };
        in_probe_bw(&mut b, &f, 2);
        b.bw.reset(0, 3 * BW_1PKT_PER_MS); // target 2 x 30 + 6 = 66, far above cwnd
        w.cwnd = 30;
        assert_eq!(b.ssthresh(&w, f.now), w.ssthresh);
        assert_eq!(b.prior_cwnd, 30);
        // Entering recovery: cwnd = in flight 12 + acked 2 = 14 (losses are not in flight).
        let rec = AckParams {
            in_flight: 12,
            losses: 1,
            state: CaState::Recovery,
            ..P
        };
        f.ack(&mut b, &mut w, rec);
        assert_eq!(w.cwnd, 14);
        // Next ACK in the same round: cwnd = max(14 - 1 lost, 13 + 1) = 14.
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                n: 1,
                in_flight: 13,
                ..rec
            },
        );
        assert_eq!(w.cwnd, 14);
        // A new round ends conservation: grow by acked (14 -> 16) in recovery.
        let next = AckParams {
            in_flight: 13,
            new_round: true,
            state: CaState::Recovery,
            ..P
        };
        f.ack(&mut b, &mut w, next);
        assert_eq!(w.cwnd, 16);
        // Leaving recovery restores the saved 30, then + 2 acked.
        f.ack(&mut b, &mut w, AckParams { in_flight: 13, ..P });
        assert_eq!(w.cwnd, 32);
    }

    #[test]
    fn pacing_only_rises_before_the_pipe_is_full() {
        let (mut b, mut w) = bbr(10);
        let mut f = Feed {
            delivered: 0,
            now: Time::from_secs(1),
        };
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                new_round: true,
                pkts_per_ms: 4,
                ..P
            },
        );
        // srtt 10 ms re-initialised the rate: 739/256 x 10 pkt / 10 ms; the 4 pkt/ms x 2.885
        // sample is faster and wins.
        let r = b.pacing_rate;
        assert_eq!(
            r,
            b.rate_bytes_per_sec(40 * (1 << 24) * 1000 / 10_000_000, HIGH_GAIN)
        );
        b.bw.reset(b.rtt_cnt, 0);
        f.ack(
            &mut b,
            &mut w,
            AckParams {
                pkts_per_ms: 1,
                ..P
            },
        );
        assert_eq!(b.pacing_rate, r);
    }
}
