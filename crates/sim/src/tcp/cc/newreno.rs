//! NewReno congestion avoidance (RFC 5681 with RFC 6582 recovery done by the sender), as Linux's
//! `tcp_reno_cong_avoid()` / `tcp_reno_ssthresh()` in net/ipv4/tcp_cong.c: slow start by packets
//! acked (appropriate byte counting, RFC 3465, L = unlimited like Linux), then one packet per
//! window of packets acked; ssthresh = max(cwnd / 2, 2).

use super::{AckInfo, CongestionControl, Coupling, Hooks, Window};
use railpath_core::Time;

#[derive(Debug, Default)]
pub struct NewReno;

impl CongestionControl for NewReno {
    fn name(&self) -> &'static str {
        "newreno"
    }

    fn ssthresh(&mut self, w: &Window, _now: Time) -> u32 {
        (w.cwnd >> 1).max(2)
    }

    fn cong_avoid(&mut self, w: &mut Window, ack: &AckInfo, _c: &Coupling) {
        let Some(acked) = w.reno_prologue(ack) else {
            return;
        };
        let cwnd = w.cwnd;
        w.cong_avoid_ai(cwnd, acked);
    }

    fn hooks(&self) -> Hooks {
        Hooks::CONG_AVOID_ONLY
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ack(acked: u32) -> AckInfo {
        AckInfo {
            acked,
            cwnd_limited: true,
            ..Default::default()
        }
    }

    #[test]
    fn slow_start_then_linear() {
        let mut cc = NewReno;
        let mut w = Window::new(10, 1448);
        w.ssthresh = 12;
        // 10 + 4 acked: slow start reaches 12, the 2 left count toward linear growth.
        cc.cong_avoid(&mut w, &ack(4), &Coupling::NONE);
        assert_eq!((w.cwnd, w.cwnd_cnt), (12, 2));
        // 10 more acks at cwnd 12 -> cnt 12 -> +1 packet.
        cc.cong_avoid(&mut w, &ack(10), &Coupling::NONE);
        assert_eq!((w.cwnd, w.cwnd_cnt), (13, 0));
    }

    #[test]
    fn halves_on_loss_floor_two() {
        let mut cc = NewReno;
        let mut w = Window::new(10, 1448);
        assert_eq!(cc.ssthresh(&w, Time::ZERO), 5);
        w.cwnd = 3;
        assert_eq!(cc.ssthresh(&w, Time::ZERO), 2);
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut cc = NewReno;
        let mut w = Window::new(10, 1448);
        let a = AckInfo {
            acked: 5,
            cwnd_limited: false,
            ..Default::default()
        };
        cc.cong_avoid(&mut w, &a, &Coupling::NONE);
        assert_eq!(w.cwnd, 10);
    }
}
