//! BALIA, the Balanced Linked Adaptation algorithm: Peng, Walid, Hwang, Low, "Multipath TCP:
//! Analysis, Design, and Implementation", IEEE/ACM ToN 24(1) 2016, section VI (equations for
//! the increase and decrease); packet form as the out-of-tree Linux module (multipath-tcp.org
//! kernel, `net/mptcp/mptcp_balia.c`, `mptcp_balia_recalc_ai`, `mptcp_balia_ssthresh`).
//!
//! With `x_k = w_k / tau_k` (packets per second over the active subflows) and
//! `alpha_r = max_k x_k / x_r`:
//!
//! ```text
//! per ACK on r:  w_r += (x_r / (tau_r (sum_k x_k)^2)) * ((1 + alpha_r) / 2) * ((4 + alpha_r) / 5)
//! per loss on r: w_r -= (w_r / 2) * min(alpha_r, 1.5)
//! ```
//!
//! The increase is `1 / T` packet per packet acked, with
//! `T = 10 w_r (sum x)^2 / ((x_r + max x)(4 x_r + max x))` (Linux's `ai`), applied through the
//! window's `cwnd_cnt` (`Window::cong_avoid_ai`) with the integer threshold `ceil(T)`. The
//! decrease uses `alpha_r` as computed at this subflow's latest ACK (the loss callback sees no
//! siblings; Linux also uses the `md` cached at its last recalculation):
//! `ssthresh = max(cwnd - floor(cwnd * min(alpha, 1.5) / 2), 2)`. Linux computes
//! `alpha` with an integer division (`max_rate / rate`, so 1.0 to 1.99 all count as 1); the
//! paper's real-valued `alpha` is used here. The floor of 2 packets is `tcp_reno_ssthresh`'s
//! (Linux's BALIA floors at 1).
//!
//! With one active subflow `alpha = 1`, `T = w` and the decrease is `w / 2`: Reno. Slow start
//! below ssthresh as Linux `tcp_slow_start`; no growth unless cwnd-limited.

use super::common::{acks_per_packet, paths, Path};
use crate::tcp::cc::{AckInfo, CongestionControl, Coupling, Hooks, Window};
use railpath_core::Time;

#[derive(Debug)]
pub struct Balia {
    /// `alpha_r` at the latest ACK; 1 before any (or with a single subflow).
    alpha: f64,
    /// Number of active subflows at the latest ACK.
    n_active: usize,
}

impl Default for Balia {
    fn default() -> Self {
        Balia {
            alpha: 1.0,
            n_active: 1,
        }
    }
}

impl Balia {
    pub fn alpha(&self) -> f64 {
        self.alpha
    }
}

/// `(alpha_r, T)` for path `me` (see the module docs).
pub(crate) fn alpha_and_acks(p: &[Path], me: usize) -> (f64, f64) {
    let x: Vec<f64> = p.iter().map(|q| q.cwnd as f64 / q.rtt_s()).collect();
    let xr = x[me];
    let sum: f64 = x.iter().sum();
    let max = x.iter().cloned().fold(0.0, f64::max);
    let alpha = max / xr;
    let t = 10.0 * p[me].cwnd as f64 * sum * sum / ((xr + max) * (4.0 * xr + max));
    (alpha, t)
}

impl CongestionControl for Balia {
    fn name(&self) -> &'static str {
        "balia"
    }

    fn hooks(&self) -> Hooks {
        Hooks::CONG_AVOID_ONLY
    }

    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        if self.n_active <= 1 {
            return (w.cwnd >> 1).max(2);
        }
        let md = (w.cwnd as f64 * self.alpha.min(1.5) / 2.0).floor() as u32;
        w.cwnd.saturating_sub(md).max(2)
    }

    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo, c: &Coupling) {
        let coupled = paths(w, ack, c);
        match &coupled {
            Some((p, me)) if p.len() > 1 => {
                self.alpha = alpha_and_acks(p, *me).0;
                self.n_active = p.len();
            }
            _ => {
                self.alpha = 1.0;
                self.n_active = 1;
            }
        }
        let Some(acked) = w.reno_prologue(ack) else {
            return;
        };
        let t = match coupled {
            Some((p, me)) if p.len() > 1 => {
                // The window may have grown in slow start just above.
                let mut p = p;
                p[me].cwnd = w.cwnd;
                acks_per_packet(alpha_and_acks(&p, me).1)
            }
            _ => w.cwnd,
        };
        w.cong_avoid_ai(t, acked);
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::test_util::*;
    use super::*;
    use crate::tcp::cc::newreno::NewReno;

    #[test]
    fn increase_and_decrease_by_hand() {
        // Me: 10 pkts / 100 ms -> x = 100; other: 20 / 50 ms -> x = 400. sum 500, max 400.
        // alpha_me = 4; T = 10 * 10 * 500^2 / ((100 + 400)(400 + 400)) = 25e6 / 4e5 = 62.5
        //   -> 63 acks per packet. (Check against the paper's form: x_r/(tau_r S^2) =
        //   100 / (0.1 * 250000) = 0.004; (1 + 4)/2 = 2.5; (4 + 4)/5 = 1.6 -> 0.016 = 1/62.5.)
        // Loss: md = floor(10 * 1.5 / 2) = 7 -> ssthresh 3.
        let v = [view(10, 100), view(20, 50)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let w = ca_window(10);
        let (p, me) = paths(&w, &ack(1, 100), &c).unwrap();
        let (a, t) = alpha_and_acks(&p, me);
        assert!((a - 4.0).abs() < 1e-12);
        assert!((t - 62.5).abs() < 1e-9);
        let mut cc = Balia::default();
        let mut w = ca_window(10);
        cc.cong_avoid(&mut w, &ack(62, 100), &c);
        assert_eq!((w.cwnd, w.cwnd_cnt), (10, 62));
        cc.cong_avoid(&mut w, &ack(1, 100), &c);
        assert_eq!((w.cwnd, w.cwnd_cnt), (11, 0));
        w.cwnd = 10;
        assert_eq!(cc.ssthresh(&w, Time::ZERO), 3);

        // The other: alpha = 1, T = 10 * 20 * 250000 / ((800)(2000)) = 31.25 -> 32;
        // loss: md = floor(20 * 1 / 2) = 10 -> ssthresh 10.
        let c2 = Coupling {
            subflows: &v,
            me: 1,
        };
        let mut cc2 = Balia::default();
        let mut w2 = ca_window(20);
        cc2.cong_avoid(&mut w2, &ack(31, 50), &c2);
        assert_eq!(w2.cwnd, 20);
        cc2.cong_avoid(&mut w2, &ack(1, 50), &c2);
        assert_eq!(w2.cwnd, 21);
        assert_eq!(cc2.alpha(), 1.0);
        w2.cwnd = 20;
        assert_eq!(cc2.ssthresh(&w2, Time::ZERO), 10);
    }

    #[test]
    fn alpha_between_one_and_one_and_a_half() {
        // Me: 10 / 100 ms (x 100), other 12 / 100 ms (x 120): alpha = 1.2;
        // md = floor(10 * 1.2 / 2) = 6 -> ssthresh 4.
        let v = [view(10, 100), view(12, 100)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let mut cc = Balia::default();
        let mut w = ca_window(10);
        cc.cong_avoid(&mut w, &ack(1, 100), &c);
        assert!((cc.alpha() - 1.2).abs() < 1e-12);
        w.cwnd = 10;
        assert_eq!(cc.ssthresh(&w, Time::ZERO), 4);
    }

    #[test]
    fn single_subflow_is_reno() {
        let v = [view(12, 40)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let mut cc = Balia::default();
        let (mut a, mut b) = (Window::new(10, 1000), Window::new(10, 1000));
        a.ssthresh = 12;
        b.ssthresh = 12;
        for n in [4, 10, 7, 30, 1, 13] {
            cc.cong_avoid(&mut a, &ack(n, 40), &c);
            NewReno.cong_avoid(&mut b, &ack(n, 40), &Coupling::NONE);
            assert_eq!(a, b);
        }
        assert_eq!(
            cc.ssthresh(&a, Time::ZERO),
            NewReno.ssthresh(&b, Time::ZERO)
        );
        // Two equal subflows: alpha = 1, T = 10 w (2x)^2 / (2x * 5x) = 4 w.
        let v = [view(20, 60), view(20, 60)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let w = ca_window(20);
        let (p, me) = paths(&w, &ack(1, 60), &c).unwrap();
        assert!((alpha_and_acks(&p, me).1 - 80.0).abs() < 1e-9);
    }
}
