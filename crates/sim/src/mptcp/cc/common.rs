//! What the coupled algorithms read from the connection: this subflow and its active siblings
//! (established, with an RTT sample and a non-zero window), in window units of packets.

use crate::tcp::cc::{AckInfo, Coupling, Window};

/// One subflow as the coupled increase rules see it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Path {
    /// Congestion window, packets.
    pub cwnd: u32,
    /// Smoothed RTT, ns (non-zero).
    pub rtt_ns: u64,
    /// Payload bytes per packet.
    pub mss: u32,
    /// OLIA's l_r = max(delivered between the last two losses, delivered since the last loss).
    pub l: u64,
}

impl Path {
    pub fn rtt_s(&self) -> f64 {
        self.rtt_ns as f64 / 1e9
    }
}

/// The paths to couple over, and the index of this subflow among them. `None` when this
/// subflow has no RTT sample yet or the coupling is empty (single-path TCP): the caller then
/// behaves as Reno. This subflow's window and RTT come from `w` and `ack` (the view in
/// `coupling` may be a snapshot taken before this ACK).
/// At most this many subflows (the scenario validator's limit); kept on the stack so a
/// per-ACK window update does not allocate.
pub(crate) type Paths = arrayvec::ArrayVec<Path, 16>;

// Inlined so the list is built in the caller's frame rather than copied out (per ACK).
#[inline(always)]
pub(crate) fn paths(w: &Window, ack: &AckInfo, c: &Coupling) -> Option<(Paths, usize)> {
    let me_view = c.subflows.get(c.me)?;
    let my_rtt = if ack.srtt.ns() > 0 {
        ack.srtt
    } else {
        me_view.srtt
    };
    if my_rtt.ns() == 0 {
        return None;
    }
    let mut out = Paths::new();
    let mut me = 0;
    for (i, v) in c.subflows.iter().enumerate() {
        let l = v.delivered_since_loss.max(v.delivered_between_losses);
        if i == c.me {
            me = out.len();
            out.push(Path {
                cwnd: w.cwnd.max(1),
                rtt_ns: my_rtt.ns(),
                mss: w.mss.max(1),
                l,
            });
        } else if v.active && v.srtt.ns() > 0 && v.cwnd > 0 && !out.is_full() {
            out.push(Path {
                cwnd: v.cwnd,
                rtt_ns: v.srtt.ns(),
                mss: v.mss.max(1),
                l,
            });
        }
    }
    Some((out, me))
}

/// Acks per one-packet increase when the per-ack increase is `inc` packets: the integer
/// `cwnd_cnt` threshold (an increase of 1/31.25 per ack becomes one packet per 32 acks). A
/// relative 1e-9 is taken off before rounding up so that a threshold that is an integer in exact
/// arithmetic is not pushed up by floating-point noise.
pub(crate) fn acks_per_packet(t: f64) -> u32 {
    if !t.is_finite() || t >= u32::MAX as f64 {
        return u32::MAX;
    }
    (t * (1.0 - 1e-9)).ceil().max(1.0) as u32
}

#[cfg(test)]
pub(crate) mod test_util {
    use crate::tcp::cc::{AckInfo, SubflowView, Window};
    use railpath_core::Time;

    pub fn view(cwnd: u32, rtt_ms: u64) -> SubflowView {
        SubflowView {
            cwnd,
            srtt: Time::from_ms(rtt_ms),
            mss: 1000,
            delivered_since_loss: 0,
            delivered_between_losses: 0,
            active: true,
        }
    }

    /// A window in congestion avoidance (ssthresh below cwnd).
    pub fn ca_window(cwnd: u32) -> Window {
        let mut w = Window::new(cwnd, 1000);
        w.ssthresh = 2;
        w
    }

    pub fn ack(acked: u32, srtt_ms: u64) -> AckInfo {
        AckInfo {
            acked,
            cwnd_limited: true,
            srtt: Time::from_ms(srtt_ms),
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;

    #[test]
    fn includes_me_with_current_window_and_skips_inactive() {
        let mut v = [view(99, 100), view(20, 50), view(30, 40), view(5, 0)];
        v[2].active = false;
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let w = ca_window(10);
        let (p, me) = paths(&w, &ack(1, 100), &c).unwrap();
        assert_eq!(me, 0);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].cwnd, 10);
        assert_eq!(p[1].cwnd, 20);
        assert!(paths(&w, &ack(1, 0), &Coupling::NONE).is_none());
    }

    #[test]
    fn threshold_rounding() {
        assert_eq!(acks_per_packet(31.25), 32);
        assert_eq!(acks_per_packet(40.0), 40);
        assert_eq!(acks_per_packet(40.000_000_000_01), 40);
        assert_eq!(acks_per_packet(0.3), 1);
    }
}
