//! OLIA, the Opportunistic Linked-Increases Algorithm: Khalili, Gast, Popovic, Le Boudec, "MPTCP
//! is not Pareto-optimal: performance issues and a possible solution", ACM CoNEXT 2012 and
//! IEEE/ACM ToN 21(5) 2013, section V (equation (5)); sets and epsilon as the out-of-tree Linux
//! module (multipath-tcp.org kernel, `net/mptcp/mptcp_olia.c`, `mptcp_get_epsilon`,
//! `mptcp_get_rate`, `mptcp_olia_cong_avoid`).
//!
//! Per ACK on path r (windows in packets), in congestion avoidance:
//!
//! ```text
//! w_r += (w_r / rtt_r^2) / (sum_p w_p / rtt_p)^2  +  alpha_r / w_r
//! ```
//!
//! with `l_r = max(l1_r, l2_r)` (packets delivered between the last two losses, and since the
//! last loss), the best paths `B = argmax_p l_p / rtt_p^2`, the max-window paths
//! `M = argmax_p w_p`, `n` = number of active paths, and
//! `alpha_r = 1 / (n |B \ M|)` if `r in B \ M`, `-1 / (n |M|)` if `r in M` and `B \ M` is not
//! empty, `0` otherwise. The membership tests compare `l_a rtt_b^2` with `l_b rtt_a^2` exactly
//! in integers (ns, u128). The increase is accumulated in a fractional counter of packets
//! (`cnt += inc * acked`); whole packets (within 1e-9) move the window (down to 1 packet at the
//! least). Linux keeps a scaled counter and zeroes it after each step; here the remainder is
//! kept.
//!
//! With one active path: `alpha = 0` and the increase is `1 / w`: Reno. Slow start below
//! ssthresh as Linux `tcp_slow_start`; loss: `ssthresh = max(cwnd / 2, 2)`
//! (`tcp_reno_ssthresh`); no growth unless cwnd-limited. l1/l2 are the connection's
//! (`SubflowView::delivered_between_losses` / `delivered_since_loss`).

use super::common::{paths, Path};
use crate::tcp::cc::{AckInfo, CongestionControl, Coupling, Hooks, Window};
use railpath_core::Time;

/// Tolerance on the fractional counter so that, e.g., 20 increases of 1/20 make a packet despite
/// floating-point rounding.
const EPS: f64 = 1e-9;

#[derive(Debug, Default)]
pub struct Olia {
    /// Fractional window increase not yet applied, packets.
    cnt: f64,
}

impl Olia {
    pub fn pending_fraction(&self) -> f64 {
        self.cnt
    }
}

/// `l / rtt^2` of `a` compared with `b`, exactly.
fn cmp_quality(a: &Path, b: &Path) -> std::cmp::Ordering {
    let lhs = a.l as u128 * (b.rtt_ns as u128 * b.rtt_ns as u128);
    let rhs = b.l as u128 * (a.rtt_ns as u128 * a.rtt_ns as u128);
    lhs.cmp(&rhs)
}

/// OLIA's `alpha_r` for path `me`.
pub(crate) fn alpha(p: &[Path], me: usize) -> f64 {
    let n = p.len();
    let max_w = p.iter().map(|q| q.cwnd).max().unwrap_or(0);
    let mut best = &p[0];
    for q in p {
        if cmp_quality(q, best).is_gt() {
            best = q;
        }
    }
    let in_b = |q: &Path| cmp_quality(q, best).is_eq();
    let m = p.iter().filter(|q| q.cwnd == max_w).count();
    let b_not_m = p.iter().filter(|q| q.cwnd < max_w && in_b(q)).count();
    if b_not_m == 0 {
        return 0.0;
    }
    let r = &p[me];
    if r.cwnd < max_w && in_b(r) {
        1.0 / (n * b_not_m) as f64
    } else if r.cwnd == max_w {
        -1.0 / (n * m) as f64
    } else {
        0.0
    }
}

/// OLIA's per-ack increase for path `me`, packets.
pub(crate) fn increase(p: &[Path], me: usize) -> f64 {
    let r = p[me];
    let sum: f64 = p.iter().map(|q| q.cwnd as f64 / q.rtt_s()).sum();
    let rtt = r.rtt_s();
    let w = r.cwnd as f64;
    (w / (rtt * rtt)) / (sum * sum) + alpha(p, me) / w
}

impl CongestionControl for Olia {
    fn name(&self) -> &'static str {
        "olia"
    }

    fn hooks(&self) -> Hooks {
        Hooks::CONG_AVOID_ONLY
    }

    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        (w.cwnd >> 1).max(2)
    }

    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo, c: &Coupling) {
        let Some(acked) = w.reno_prologue(ack) else {
            return;
        };
        let Some((p, me)) = paths(w, ack, c) else {
            let cwnd = w.cwnd;
            w.cong_avoid_ai(cwnd, acked);
            return;
        };
        self.cnt += increase(&p, me) * acked as f64;
        if self.cnt >= 1.0 - EPS {
            let k = (self.cnt + EPS).floor();
            self.cnt -= k;
            w.cwnd = (w.cwnd as u64 + k as u64).min(w.cwnd_clamp as u64) as u32;
        } else if self.cnt <= -1.0 + EPS {
            let k = (-self.cnt + EPS).floor();
            self.cnt += k;
            w.cwnd = (w.cwnd as i64 - k as i64).max(1) as u32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::test_util::*;
    use super::*;
    use crate::tcp::cc::SubflowView;

    fn lview(cwnd: u32, rtt_ms: u64, between: u64, since: u64) -> SubflowView {
        let mut v = view(cwnd, rtt_ms);
        v.delivered_between_losses = between;
        v.delivered_since_loss = since;
        v
    }

    #[test]
    fn best_path_in_max_set_gives_zero_alpha() {
        // Me: 10 pkts / 100 ms, l = max(1000, 200) = 1000 -> l/rtt^2 = 1e5.
        // Other: 20 pkts / 50 ms, l = 500 -> 2e5: best, and it has the max window -> B\M empty.
        // inc = (10 / 0.01) / (100 + 400)^2 = 1000 / 250000 = 0.004 per ack.
        let v = [lview(10, 100, 1000, 200), lview(20, 50, 500, 100)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let w = ca_window(10);
        let (p, me) = paths(&w, &ack(1, 100), &c).unwrap();
        assert_eq!(alpha(&p, me), 0.0);
        assert!((increase(&p, me) - 0.004).abs() < 1e-15);
    }

    #[test]
    fn best_path_not_in_max_set_gets_the_bonus() {
        // Me: l = 4000 -> 4e5 > 2e5: B = {me}, M = {other}, n = 2.
        // alpha_me = 1 / (2 * 1) = 0.5: inc = 0.004 + 0.5 / 10 = 0.054 per ack.
        // alpha_other = -1 / (2 * 1) = -0.5: inc = (20 / 0.0025) / 250000 - 0.5 / 20
        //   = 0.032 - 0.025 = 0.007.
        let v = [lview(10, 100, 4000, 0), lview(20, 50, 500, 100)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let mut cc = Olia::default();
        let mut w = ca_window(10);
        cc.cong_avoid(&mut w, &ack(20, 100), &c);
        // 20 * 0.054 = 1.08 -> +1 packet, 0.08 left.
        assert_eq!(w.cwnd, 11);
        assert!((cc.pending_fraction() - 0.08).abs() < 1e-12);
        let c2 = Coupling {
            subflows: &v,
            me: 1,
        };
        let w2 = ca_window(20);
        let (p, me) = paths(&w2, &ack(1, 50), &c2).unwrap();
        assert_eq!(alpha(&p, me), -0.5);
        assert!((increase(&p, me) - 0.007).abs() < 1e-15);
    }

    #[test]
    fn max_window_path_can_shrink() {
        // Me: 40 pkts / 200 ms, l = 100 -> 2500; other: 10 pkts / 20 ms, l = 1000 -> 2.5e6.
        // B = {other} (not max), M = {me}: alpha_me = -0.5.
        // sum = 200 + 500 = 700; inc = (40 / 0.04) / 490000 - 0.5 / 40
        //   = 0.00204082 - 0.0125 = -0.01045918 per ack; 100 acks -> -1.0459 -> cwnd 39.
        let v = [lview(40, 200, 100, 0), lview(10, 20, 1000, 0)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let mut cc = Olia::default();
        let mut w = ca_window(40);
        cc.cong_avoid(&mut w, &ack(100, 200), &c);
        assert_eq!(w.cwnd, 39);
        let expect = -(1000.0 / 490000.0 - 0.0125) * 100.0 - 1.0;
        assert!((cc.pending_fraction() + expect).abs() < 1e-12);
    }

    #[test]
    fn two_best_paths_share_the_bonus() {
        // Three paths, n = 3. A: 10 / 100 ms, l 100 (1e4); B: 5 / 100 ms, l 100 (1e4);
        // C: 30 / 100 ms, l 50 (5e3). B set = {A, B}, M = {C}, B\M = {A, B}:
        // alpha_A = alpha_B = 1 / (3 * 2) = 1/6, alpha_C = -1 / (3 * 1) = -1/3.
        let v = [
            lview(10, 100, 100, 0),
            lview(5, 100, 0, 100),
            lview(30, 100, 50, 0),
        ];
        for (me, want) in [(0, 1.0 / 6.0), (1, 1.0 / 6.0), (2, -1.0 / 3.0)] {
            let c = Coupling { subflows: &v, me };
            let w = ca_window(v[me].cwnd);
            let (p, i) = paths(&w, &ack(1, 100), &c).unwrap();
            assert_eq!(alpha(&p, i), want);
        }
    }

    #[test]
    fn single_path_is_reno() {
        // inc = (w / rtt^2) / (w / rtt)^2 = 1 / w: 20 acks at w = 20 -> +1.
        let v = [lview(20, 30, 7, 9)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let mut cc = Olia::default();
        let mut w = ca_window(20);
        cc.cong_avoid(&mut w, &ack(19, 30), &c);
        assert_eq!(w.cwnd, 20);
        cc.cong_avoid(&mut w, &ack(1, 30), &c);
        assert_eq!(w.cwnd, 21);
        assert_eq!(cc.ssthresh(&w, Time::ZERO), 10);
        // Slow start below ssthresh.
        let mut w = Window::new(10, 1000);
        w.ssthresh = 100;
        cc.cong_avoid(&mut w, &ack(5, 30), &c);
        assert_eq!(w.cwnd, 15);
    }
}
