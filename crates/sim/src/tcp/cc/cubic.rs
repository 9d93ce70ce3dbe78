//! CUBIC congestion control with HyStart.
//!
//! Sources: RFC 9438 (CUBIC for Fast and Long-Distance Networks), Sections 4.1-4.8; Ha, Rhee and
//! Xu, "CUBIC: A New TCP-Friendly High-Speed TCP Variant", ACM SIGOPS OSR 42(5), 2008; Ha and
//! Rhee, "Taming the Elephants: New TCP Slow Start" (HyStart), Computer Networks 55(9), 2011;
//! and the Linux implementation, net/ipv4/tcp_cubic.c (v6.x), whose decision rules are followed
//! step by step:
//!
//! - `bictcp_update()`: at the start of an epoch (first growth after a reduction) record
//!   `origin = max(W_max, cwnd)` and `K = cbrt((W_max - cwnd) / C)`; then the target for one RTT
//!   ahead is `W_cubic(t + min_rtt) = origin + C (t + min_rtt - K)^3` (RFC 9438 eq. 1-2) and
//!   `cnt = cwnd / (target - cwnd)` ACKs per one-packet increase (`100 * cwnd` when the target is
//!   not above cwnd). While no loss has been seen (`W_max = 0`) `cnt <= 20` (5 % per RTT).
//! - TCP-friendly region (RFC 9438 Section 4.3): a Reno-emulating window `tcp_cwnd` grows by one
//!   packet per `cwnd * 15 / 8` ACKs (Linux's integer `beta_scale` = 8(1 + beta)/(3(1 - beta))
//!   = 15, i.e. alpha = 0.53 per RTT); if it is above cwnd, `cnt <= cwnd / (tcp_cwnd - cwnd)`.
//! - Maximum increment: `cnt >= 2`, at most one packet per two ACKed, cwnd x1.5 per RTT (the
//!   clamp of RFC 9438 Section 4.2, `target <= 1.5 cwnd`).
//! - Loss (`ssthresh()`, RFC 9438 Sections 4.6-4.7): the epoch ends; with fast convergence,
//!   `W_max = cwnd (1 + beta) / 2` if cwnd is below the previous `W_max`, else `W_max = cwnd`;
//!   `ssthresh = max(cwnd * beta, 2)`, beta = 717/1024.
//! - Idle (`cwnd_event(TxStart)`): the epoch start is shifted by the idle time, so the curve
//!   does not jump after an application-limited pause (RFC 9438 Section 5.8).
//! - RTO (`set_state(Loss)`): everything is reset, including `W_max` and HyStart.
//! - HyStart (`hystart_update()`): in slow start with cwnd >= 16, per round (a round ends when
//!   `snd_una` passes the `snd_nxt` recorded at its start) exit slow start (ssthresh = cwnd) when
//!   (a) ACK train: ACKs keep arriving within 2 ms of each other for longer than min_rtt / 2
//!   since the round started, or (b) delay increase: after 8 RTT samples in the round, the
//!   round's minimum RTT exceeds `min_rtt + clamp(min_rtt / 8, 4 ms, 16 ms)`. RTT samples within
//!   1 s of an epoch start are ignored, as in `cubictcp_acked()`.
//!
//! Differences from Linux, all deliberate:
//! - Linux computes `K` and `C (t - K)^3` in fixed point (C = bic_scale 41 x 10 / 1024 =
//!   0.4004, time in 1/1024 s, a table-plus-Newton cube root with ~0.2 % error). Here C = 0.4
//!   exactly (RFC 9438), time is in nanoseconds and the cube root is a Newton iteration on f64
//!   that uses only IEEE-754 +, -, *, / (correctly rounded, so bit-identical on every platform;
//!   no libm). `C (t - K)^3` is truncated to whole packets, like Linux's integer `delta`.
//! - Linux updates `cnt` at most once per jiffy and skips the update while cwnd is unchanged
//!   for HZ/32 jiffies; modelled with HZ = 1000 (1 ms jiffies, 31 ms skip).
//! - The idle shift uses the time since the last ACK (when the pipe emptied) instead of
//!   Linux's `tp->lsndtime` (last transmission), which would also count the final RTT as idle.
//! - HyStart's ACK-train threshold has no TSO/GRO cushion (`hystart_ack_delay()` = 0: the
//!   simulator sends single segments) and is halved because CUBIC is unpaced
//!   (`SK_PACING_NONE`).
//! - `pkts_acked` cannot write the window, so a HyStart exit found there sets ssthresh at the
//!   start of the same ACK's `cong_avoid` (the sender calls `pkts_acked` then `cong_avoid`).
//!   RFC 9438's switch of the Reno-emulation alpha to 1 above `W_max` is not in Linux and not
//!   here.

use super::{AckInfo, CaState, CongestionControl, Coupling, CwndEvent, Hooks, Window};
use railpath_core::Time;

/// Multiplicative decrease, scaled by 1024 (Linux `beta`).
pub const BETA: u32 = 717;
const BETA_SCALE: u32 = 1024;
/// Cubic scaling constant C, packets / s^3 (RFC 9438 Section 5.1).
pub const C: f64 = 0.4;
/// Linux `beta_scale` = 8 * (1024 + 717) / 3 / (1024 - 717), integer division.
const FRIENDLY_SCALE: u32 = 8 * (BETA_SCALE + BETA) / 3 / (BETA_SCALE - BETA);
/// HyStart is only consulted from this window on (Linux `hystart_low_window`).
pub const HYSTART_LOW_WINDOW: u32 = 16;
/// ACKs closer than this form a train (Linux `hystart_ack_delta_us`).
pub const HYSTART_ACK_DELTA: Time = Time::from_ms(2);
/// RTT samples per round before the delay test (Linux `HYSTART_MIN_SAMPLES`).
const HYSTART_MIN_SAMPLES: u32 = 8;
const HYSTART_DELAY_MIN: Time = Time::from_ms(4);
const HYSTART_DELAY_MAX: Time = Time::from_ms(16);
/// Linux jiffy with HZ = 1000.
const JIFFY_NS: u64 = 1_000_000;

/// Cube root of `a >= 0` by Newton's method from above, using only correctly rounded IEEE
/// operations, so the result is the same on every platform.
pub fn cbrt(a: f64) -> f64 {
    if a <= 0.0 || a.is_nan() {
        return 0.0;
    }
    // 1 + a/3 >= cbrt(a) for all a >= 0, and Newton's iteration for the convex x^3 - a
    // decreases monotonically from above the root; stop when it no longer decreases.
    let mut x = 1.0 + a / 3.0;
    for _ in 0..200 {
        let next = (2.0 * x + a / (x * x)) / 3.0;
        if next >= x {
            break;
        }
        x = next;
    }
    x
}

/// `K` of RFC 9438 eq. 2, seconds: time for the curve to climb from `cwnd` back to `w_max`.
pub fn k_secs(w_max: u32, cwnd: u32) -> f64 {
    if w_max <= cwnd {
        return 0.0;
    }
    cbrt((w_max - cwnd) as f64 / C)
}

/// `W_cubic(t)` of RFC 9438 eq. 1, in whole packets (the cubic term truncated like Linux's
/// integer `delta`), for `t` seconds since the epoch start.
pub fn w_cubic(t: f64, k: f64, origin: u32) -> u32 {
    let offs = (t - k).abs();
    let delta = (C * offs * offs * offs).min(u32::MAX as f64) as u32;
    if t < k {
        origin.saturating_sub(delta)
    } else {
        origin.saturating_add(delta)
    }
}

/// One CUBIC instance (Linux `struct bictcp`).
#[derive(Debug, Clone)]
pub struct Cubic {
    hystart: bool,
    /// ACKs per one-packet increase.
    cnt: u32,
    /// `W_max`, packets (0 until the first loss).
    last_max_cwnd: u32,
    last_cwnd: u32,
    last_time: Option<Time>,
    origin_point: u32,
    /// K, seconds.
    k: f64,
    /// Minimum RTT seen (`delay_min`); zero = none yet.
    delay_min: Time,
    epoch_start: Option<Time>,
    ack_cnt: u32,
    /// Reno-emulation window (`tcp_cwnd`).
    tcp_cwnd: u32,
    // HyStart.
    found: bool,
    round_start: Time,
    end_seq: u64,
    last_ack: Time,
    curr_rtt: Time,
    sample_cnt: u32,
    /// HyStart exit found in `pkts_acked`, applied in the next `cong_avoid`.
    pending_ssthresh: Option<u32>,
    // Bookkeeping the trait does not hand over directly.
    last_ack_time: Time,
    last_snd_nxt: u64,
}

impl Cubic {
    pub fn new(hystart: bool) -> Cubic {
        Cubic {
            hystart,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: None,
            origin_point: 0,
            k: 0.0,
            delay_min: Time::ZERO,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            found: false,
            round_start: Time::ZERO,
            end_seq: 0,
            last_ack: Time::ZERO,
            curr_rtt: Time::MAX,
            sample_cnt: 0,
            pending_ssthresh: None,
            last_ack_time: Time::ZERO,
            last_snd_nxt: 0,
        }
    }

    /// ACKs needed per one-packet cwnd increase, as last computed.
    pub fn cnt(&self) -> u32 {
        self.cnt
    }

    /// `W_max`, packets.
    pub fn w_max(&self) -> u32 {
        self.last_max_cwnd
    }

    /// Did HyStart find the slow-start exit point?
    pub fn hystart_found(&self) -> bool {
        self.found
    }

    /// Linux `bictcp_reset()`.
    fn reset(&mut self) {
        let (hystart, last_ack_time, last_snd_nxt) =
            (self.hystart, self.last_ack_time, self.last_snd_nxt);
        *self = Cubic::new(hystart);
        self.last_ack_time = last_ack_time;
        self.last_snd_nxt = last_snd_nxt;
    }

    /// Linux `bictcp_hystart_reset()`: start a new HyStart round.
    fn hystart_reset(&mut self, now: Time, snd_nxt: u64) {
        self.round_start = now;
        self.last_ack = now;
        self.end_seq = snd_nxt;
        self.curr_rtt = Time::MAX;
        self.sample_cnt = 0;
    }

    /// Linux `bictcp_update()`: recompute `cnt` for the current window.
    fn update(&mut self, cwnd: u32, acked: u32, now: Time) {
        self.ack_cnt = self.ack_cnt.saturating_add(acked);
        let jiffies = now.ns() / JIFFY_NS;
        let last_jiffies = self.last_time.map(|t| t.ns() / JIFFY_NS);
        if self.last_cwnd == cwnd && last_jiffies.is_some_and(|l| jiffies - l <= 1000 / 32) {
            return;
        }
        // The cubic function is evaluated at most once per jiffy; the Reno emulation always.
        if !(self.epoch_start.is_some() && last_jiffies == Some(jiffies)) {
            self.last_cwnd = cwnd;
            self.last_time = Some(now);
            if self.epoch_start.is_none() {
                self.epoch_start = Some(now);
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k = 0.0;
                    self.origin_point = cwnd;
                } else {
                    self.k = k_secs(self.last_max_cwnd, cwnd);
                    self.origin_point = self.last_max_cwnd;
                }
            }
            let epoch = self.epoch_start.unwrap_or(now);
            let t = (now.saturating_sub(epoch) + self.delay_min).secs_f64();
            let target = w_cubic(t, self.k, self.origin_point);
            self.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                100 * cwnd
            };
            if self.last_max_cwnd == 0 && self.cnt > 20 {
                self.cnt = 20;
            }
        }
        // TCP-friendly region: Reno emulation (RFC 9438 Section 4.3).
        let per_packet = ((cwnd as u64 * FRIENDLY_SCALE as u64) >> 3).max(1) as u32;
        if self.ack_cnt > per_packet {
            let n = (self.ack_cnt - 1) / per_packet;
            self.ack_cnt -= n * per_packet;
            self.tcp_cwnd = self.tcp_cwnd.saturating_add(n);
        }
        if self.tcp_cwnd > cwnd {
            let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
            self.cnt = self.cnt.min(max_cnt);
        }
        // Maximum increment: one packet per two ACKed.
        self.cnt = self.cnt.max(2);
    }

    /// Linux `hystart_update()`.
    fn hystart_update(&mut self, w: &Window, delay: Time, ack: &AckInfo) {
        let now = ack.now;
        if ack.snd_una > self.end_seq {
            self.hystart_reset(now, ack.snd_nxt);
        }
        if w.cwnd < HYSTART_LOW_WINDOW {
            return;
        }
        // ACK train: ACKs closely spaced for longer than min_rtt / 2 (unpaced: threshold >>= 1).
        if now.saturating_sub(self.last_ack) <= HYSTART_ACK_DELTA {
            self.last_ack = now;
            let threshold = self.delay_min.div(2);
            if now.saturating_sub(self.round_start) > threshold {
                self.found = true;
                self.pending_ssthresh = Some(w.cwnd);
            }
        }
        // Delay increase over the round's minimum RTT.
        self.curr_rtt = self.curr_rtt.min(delay);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let thresh = self
                .delay_min
                .div(8)
                .clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX);
            if self.curr_rtt > self.delay_min + thresh {
                self.found = true;
                self.pending_ssthresh = Some(w.cwnd);
            }
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    /// `pkts_acked` (HyStart, the delay minimum), no `cong_control`.
    fn hooks(&self) -> Hooks {
        Hooks {
            pkts_acked: true,
            cong_control: false,
        }
    }

    /// Linux `cubictcp_recalc_ssthresh()`.
    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        self.epoch_start = None;
        self.pending_ssthresh = None;
        let cwnd = w.cwnd as u64;
        self.last_max_cwnd = if w.cwnd < self.last_max_cwnd {
            (cwnd * (BETA_SCALE + BETA) as u64 / (2 * BETA_SCALE) as u64) as u32
        } else {
            w.cwnd
        };
        ((cwnd * BETA as u64 / BETA_SCALE as u64) as u32).max(2)
    }

    /// Linux `cubictcp_cong_avoid()`.
    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo, _c: &Coupling) {
        self.last_ack_time = ack.now;
        if let Some(ss) = self.pending_ssthresh.take() {
            w.ssthresh = ss;
        }
        if !ack.cwnd_limited {
            return;
        }
        let mut acked = ack.acked;
        if w.in_slow_start() {
            acked = w.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        self.update(w.cwnd, acked, ack.now);
        w.cong_avoid_ai(self.cnt, acked);
    }

    /// Linux `cubictcp_state()`: an RTO resets everything.
    fn set_state(&mut self, _w: &mut Window, state: CaState, now: Time) {
        if state == CaState::Loss {
            self.reset();
            self.hystart_reset(now, self.last_snd_nxt);
        }
    }

    /// Linux `cubictcp_acked()`: min RTT and HyStart.
    fn pkts_acked(&mut self, w: &Window, ack: &AckInfo) {
        self.last_ack_time = ack.now;
        self.last_snd_nxt = ack.snd_nxt;
        let Some(rtt) = ack.rtt else { return };
        // Discard delay samples right after a reduction.
        if let Some(e) = self.epoch_start {
            if ack.now.saturating_sub(e) < Time::from_secs(1) {
                return;
            }
        }
        let delay = rtt.max(Time::from_ns(1));
        if self.delay_min == Time::ZERO || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found && w.in_slow_start() && self.hystart {
            self.hystart_update(w, delay, ack);
        }
    }

    /// Linux `cubictcp_cwnd_event()`: shift the epoch over an idle period.
    fn cwnd_event(&mut self, _w: &mut Window, ev: CwndEvent, now: Time) {
        if ev != CwndEvent::TxStart {
            return;
        }
        if let Some(e) = self.epoch_start {
            let idle = now.saturating_sub(self.last_ack_time);
            if idle > Time::ZERO {
                self.epoch_start = Some((e + idle).min(now));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack_at(now: Time, acked: u32) -> AckInfo {
        AckInfo {
            now,
            acked,
            cwnd_limited: true,
            ..Default::default()
        }
    }

    fn rtt_ack(now: Time, rtt_ms: u64, snd_una: u64, snd_nxt: u64) -> AckInfo {
        AckInfo {
            now,
            acked: 1,
            rtt: Some(Time::from_ms(rtt_ms)),
            cwnd_limited: true,
            snd_una,
            snd_nxt,
            ..Default::default()
        }
    }

    fn window(cwnd: u32, ssthresh: u32) -> Window {
        let mut w = Window::new(cwnd, 1448);
        w.ssthresh = ssthresh;
        w
    }

    #[test]
    fn cube_root_is_exact_enough() {
        assert!((cbrt(27.0) - 3.0).abs() < 1e-12);
        assert!((cbrt(75.0) - 4.217_163_326_508_746).abs() < 1e-12);
        assert!((cbrt(1e-6) - 0.01).abs() < 1e-15);
        assert_eq!(cbrt(0.0), 0.0);
    }

    #[test]
    fn k_and_w_cubic_by_hand() {
        // W_max 100, cwnd 70 after the loss: K = cbrt(30 / 0.4) = cbrt(75) = 4.2172 s.
        let k = k_secs(100, 70);
        assert!((k - 4.217_163).abs() < 1e-6);
        // The curve starts at cwnd, plateaus at W_max at t = K, then probes above.
        assert_eq!(w_cubic(0.0, k, 100), 70);
        assert_eq!(w_cubic(k, k, 100), 100);
        // t = 2 s: 0.4 * 2.2172^3 = 4.36 -> 100 - 4 = 96.
        assert_eq!(w_cubic(2.0, k, 100), 96);
        // t = 8 s: 0.4 * 3.7828^3 = 21.65 -> 121.
        assert_eq!(w_cubic(8.0, k, 100), 121);
        assert_eq!(k_secs(50, 60), 0.0);
    }

    #[test]
    fn ssthresh_and_cnt_after_a_loss() {
        let mut c = Cubic::new(false);
        let mut w = window(100, 50);
        // One RTT sample of 100 ms (no epoch yet, so it is kept).
        c.pkts_acked(&w, &rtt_ack(Time::from_secs(9), 100, 0, 0));
        assert_eq!(c.delay_min, Time::from_ms(100));
        // Loss at cwnd 100: ssthresh = 100 * 717 / 1024 = 70; W_max = 100 (no fast convergence).
        assert_eq!(c.ssthresh(&w, Time::from_secs(10)), 70);
        assert_eq!(c.w_max(), 100);
        w.cwnd = 70;
        w.ssthresh = 70;
        // First ACK of the new epoch: K = 4.2172 s, t = 0 + 0.1 s (min RTT ahead),
        // 0.4 * 4.1172^3 = 27.9 -> target 100 - 27 = 73, cnt = 70 / 3 = 23.
        c.cong_avoid(&mut w, &ack_at(Time::from_secs(10), 1), &Coupling::NONE);
        assert_eq!(c.origin_point, 100);
        assert_eq!(c.cnt(), 23);
        assert_eq!((w.cwnd, w.cwnd_cnt), (70, 1));
    }

    #[test]
    fn fast_convergence_lowers_w_max() {
        let mut c = Cubic::new(false);
        c.last_max_cwnd = 100;
        // cwnd 80 < W_max 100: W_max = 80 * 1741 / 2048 = 68; ssthresh = 80 * 717 / 1024 = 56.
        assert_eq!(c.ssthresh(&window(80, 50), Time::ZERO), 56);
        assert_eq!(c.w_max(), 68);
        // cwnd 120 above W_max: W_max = cwnd.
        assert_eq!(c.ssthresh(&window(120, 50), Time::ZERO), 84);
        assert_eq!(c.w_max(), 120);
        // Floor of 2 packets.
        assert_eq!(c.ssthresh(&window(2, 50), Time::ZERO), 2);
    }

    #[test]
    fn reno_friendly_region_wins_at_small_windows() {
        let mut c = Cubic::new(false);
        c.last_max_cwnd = 10;
        c.delay_min = Time::from_ms(10);
        let mut w = window(10, 10);
        // Epoch start at cwnd = W_max = 10: K = 0, the cubic target one RTT ahead is
        // 10 + 0.4 * 0.01^3 -> 10, so cubic alone gives cnt = 100 * 10 = 1000.
        // 40 ACKs: Reno emulation grows tcp_cwnd by one per (10 * 15) >> 3 = 18 ACKs:
        // 40 -> 22 -> 4, tcp_cwnd = 12 > 10, so cnt = 10 / 2 = 5.
        c.cong_avoid(&mut w, &ack_at(Time::from_secs(1), 40), &Coupling::NONE);
        assert_eq!(c.tcp_cwnd, 12);
        assert_eq!(c.ack_cnt, 4);
        assert_eq!(c.cnt(), 5);
        // cong_avoid_ai(5, 40): 40 ACKs at 5 per packet -> +8.
        assert_eq!(w.cwnd, 18);

        // Same ACKs at a large window: (1000 * 15) >> 3 = 1875 per Reno packet, no Reno
        // growth, cubic's cnt stands.
        let mut c = Cubic::new(false);
        c.last_max_cwnd = 1000;
        let mut w = window(1000, 1000);
        c.cong_avoid(&mut w, &ack_at(Time::from_secs(1), 40), &Coupling::NONE);
        assert_eq!(c.tcp_cwnd, 1000);
        assert_eq!(c.cnt(), 100_000);
    }

    #[test]
    fn growth_is_capped_at_one_packet_per_two_acks() {
        let mut c = Cubic::new(false);
        c.last_max_cwnd = 10;
        let mut w = window(10, 10);
        c.cong_avoid(&mut w, &ack_at(Time::ZERO, 1), &Coupling::NONE);
        // 10 s into the epoch: target 10 + 0.4 * 1000 = 410, cwnd / 400 = 0 -> clamped to 2.
        c.cong_avoid(&mut w, &ack_at(Time::from_secs(10), 1), &Coupling::NONE);
        assert_eq!(c.cnt(), 2);
    }

    #[test]
    fn no_loss_yet_caps_cnt_at_20() {
        let mut c = Cubic::new(false);
        let mut w = window(100, 100);
        // W_max = 0: K = 0, origin = 100, target 100 -> cnt 10000, capped at 20.
        c.cong_avoid(&mut w, &ack_at(Time::from_secs(1), 1), &Coupling::NONE);
        assert_eq!(c.cnt(), 20);
    }

    #[test]
    fn cnt_recomputed_at_most_once_per_jiffy() {
        let mut c = Cubic::new(false);
        c.last_max_cwnd = 100;
        let mut w = window(70, 70);
        c.cong_avoid(&mut w, &ack_at(Time::from_secs(1), 1), &Coupling::NONE);
        let first = c.cnt();
        // Same cwnd within 31 ms: no recomputation even though the curve moved.
        c.k = 0.0;
        c.cong_avoid(
            &mut w,
            &ack_at(Time::from_secs(1) + Time::from_ms(20), 1),
            &Coupling::NONE,
        );
        assert_eq!(c.cnt(), first);
    }

    #[test]
    fn idle_shifts_the_epoch() {
        let mut c = Cubic::new(false);
        c.last_max_cwnd = 100;
        let mut w = window(70, 70);
        c.cong_avoid(&mut w, &ack_at(Time::from_secs(10), 1), &Coupling::NONE);
        c.cong_avoid(&mut w, &ack_at(Time::from_secs(12), 1), &Coupling::NONE);
        // Pipe empty since the ACK at 12 s; sending resumes at 15 s: epoch 10 s -> 13 s.
        c.cwnd_event(&mut w, CwndEvent::TxStart, Time::from_secs(15));
        assert_eq!(c.epoch_start, Some(Time::from_secs(13)));
    }

    #[test]
    fn rto_resets_w_max_and_hystart() {
        let mut c = Cubic::new(true);
        let mut w = window(100, 50);
        c.ssthresh(&w, Time::ZERO);
        c.found = true;
        c.set_state(&mut w, CaState::Loss, Time::from_secs(3));
        assert_eq!(c.w_max(), 0);
        assert!(!c.hystart_found());
        assert_eq!(c.round_start, Time::from_secs(3));
    }

    /// Feeds `n` RTT samples 5 ms apart (too far apart for an ACK train).
    fn feed(c: &mut Cubic, w: &Window, t: &mut Time, n: usize, rtt: u64, una: u64, nxt: u64) {
        for _ in 0..n {
            *t += Time::from_ms(5);
            c.pkts_acked(w, &rtt_ack(*t, rtt, una, nxt));
        }
    }

    #[test]
    fn hystart_exits_on_delay_increase() {
        let mut c = Cubic::new(true);
        let mut w = window(20, u32::MAX);
        let mut t = Time::from_secs(1);
        // Round 1: 9 samples of 100 ms; the first ACK (snd_una 1 > end_seq 0) opens the round.
        feed(&mut c, &w, &mut t, 9, 100, 1, 21);
        assert_eq!(c.end_seq, 21);
        assert!(!c.hystart_found());
        // Round 2 (snd_una 22 > 21): threshold = 100 + clamp(12.5, 4, 16) = 112.5 ms.
        // Eight samples of 112 ms, then the 9th is tested: 112 <= 112.5, no exit.
        feed(&mut c, &w, &mut t, 9, 112, 22, 41);
        assert!(!c.hystart_found());
        // Round 3: 113 ms > 112.5 ms on the 9th sample.
        feed(&mut c, &w, &mut t, 8, 113, 42, 61);
        assert!(!c.hystart_found());
        feed(&mut c, &w, &mut t, 1, 113, 42, 61);
        assert!(c.hystart_found());
        // The exit takes effect on this ACK's cong_avoid: ssthresh = cwnd, growth stops
        // being exponential.
        c.cong_avoid(&mut w, &ack_at(t, 1), &Coupling::NONE);
        assert_eq!(w.ssthresh, 20);
        assert_eq!(w.cwnd, 20);
    }

    #[test]
    fn hystart_exits_on_ack_train() {
        let mut c = Cubic::new(true);
        let w = window(32, u32::MAX);
        let t0 = Time::from_secs(1);
        // min RTT 40 ms; ACKs every 1 ms: the train must last more than 40 / 2 = 20 ms.
        for i in 0..=20 {
            c.pkts_acked(&w, &rtt_ack(t0 + Time::from_ms(i), 40, 1, 100));
        }
        assert!(!c.hystart_found(), "20 ms is not more than 20 ms");
        c.pkts_acked(&w, &rtt_ack(t0 + Time::from_ms(21), 40, 1, 100));
        assert!(c.hystart_found());
        assert_eq!(c.pending_ssthresh, Some(32));
    }

    #[test]
    fn hystart_ignored_below_low_window_and_when_off() {
        let mut c = Cubic::new(true);
        let w = window(15, u32::MAX);
        let t0 = Time::from_secs(1);
        for i in 0..40 {
            c.pkts_acked(&w, &rtt_ack(t0 + Time::from_ms(i), 40 + 2 * i, 1, 100));
        }
        assert!(!c.hystart_found());
        let mut c = Cubic::new(false);
        let w = window(32, u32::MAX);
        for i in 0..40 {
            c.pkts_acked(&w, &rtt_ack(t0 + Time::from_ms(i), 40 + 2 * i, 1, 100));
        }
        assert!(!c.hystart_found());
    }
}
