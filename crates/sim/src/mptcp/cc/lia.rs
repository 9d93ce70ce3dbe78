//! LIA, the Linked Increases Algorithm: RFC 6356 (Raiciu, Handley, Wischik, 2011), section 3;
//! packet form and `snd_cwnd_cnt` accounting as the out-of-tree Linux "coupled" module
//! (multipath-tcp.org kernel, `net/mptcp/mptcp_coupled.c`, `mptcp_fc_cong_avoid` /
//! `mptcp_recalc_alpha`).
//!
//! RFC 6356 in bytes, for subflow i, per ACK of `bytes_acked`:
//! `cwnd_i += min(alpha * bytes_acked * MSS_i / cwnd_total, bytes_acked * MSS_i / cwnd_i)` with
//! `alpha = cwnd_total * max_k(cwnd_k / rtt_k^2) / (sum_k cwnd_k / rtt_k)^2` over the active
//! subflows. Per packet acked, in packets (W_k = cwnd_k * MSS_k bytes) this is an increase of
//! `1 / T` with
//!
//! ```text
//! T = max( (sum_k W_k / rtt_k)^2 / (MSS_i * max_k W_k / rtt_k^2),  cwnd_i )
//! ```
//!
//! i.e. one packet per `T` packets acked (for equal MSS, Linux's `snd_cwnd` threshold
//! `max(2^12 / alpha, cwnd)` with `alpha = 2^12 * cwnd_best / (sum_k cwnd_k rtt_best / rtt_k)^2`).
//! The accumulator is the window's `cwnd_cnt` (`Window::cong_avoid_ai`, Linux
//! `tcp_cong_avoid_ai`) with the integer threshold `ceil(T)`. With one active subflow `T = cwnd`:
//! Reno. As Linux caches `alpha`, the threshold is recomputed only when a window of this or
//! an active sibling subflow changed since the last computation, reading the RTTs then (the RFC
//! allows either; recomputing on every ACK cost 3% of an MPTCP run's instructions).
//!
//! Slow start below ssthresh as Linux `tcp_slow_start`; loss: `ssthresh = max(cwnd / 2, 2)`
//! (`tcp_reno_ssthresh`); no growth unless cwnd-limited (`tcp_is_cwnd_limited`).

use super::common::{acks_per_packet, paths, Path};
use crate::tcp::cc::{AckInfo, CongestionControl, Coupling, Hooks, Window};
use railpath_core::Time;

#[derive(Debug, Default)]
pub struct Lia {
    /// The windows (own first, then every active sibling's) `t` was computed for, and `t`.
    /// As Linux `mptcp_coupled.c`, the increase threshold is recomputed when a window changes,
    /// not on every ACK (RTTs are read at that moment).
    cache: Option<(WindowKey, u32)>,
}

/// The siblings whose windows the cached threshold's key holds (beyond them a change goes
/// unseen until the subflow's own window or one of these changes).
const KEY_SIBLINGS: usize = 16;

/// The windows of the subflows the threshold depends on: the subflow's own, then its siblings'.
type WindowKey = arrayvec::ArrayVec<u32, { KEY_SIBLINGS + 1 }>;

/// `T`, the packets to be acked on path `me` for one packet of increase (not rounded).
pub(crate) fn acks_per_increase(p: &[Path], me: usize) -> f64 {
    let mine = p[me];
    if p.len() <= 1 {
        return mine.cwnd as f64;
    }
    let mut sum = 0.0;
    let mut best = 0.0f64;
    for q in p {
        let bytes = q.cwnd as f64 * q.mss as f64;
        let r = q.rtt_s();
        sum += bytes / r;
        best = best.max(bytes / (r * r));
    }
    let t = sum * sum / (mine.mss as f64 * best);
    t.max(mine.cwnd as f64)
}

impl CongestionControl for Lia {
    fn name(&self) -> &'static str {
        "lia"
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
        let t = match &self.cache {
            Some((k, t)) if key_matches(k, w.cwnd, c) => *t,
            _ => self.recompute(w, ack, c),
        };
        w.cong_avoid_ai(t, acked);
    }
}

impl Lia {
    /// The threshold computed afresh and cached with the windows it was computed for. Out of
    /// line: it runs on a window change (about one ACK in 30), and the path list it builds on
    /// the stack would otherwise make every ACK's frame large.
    #[cold]
    #[inline(never)]
    fn recompute(&mut self, w: &Window, ack: &AckInfo, c: &Coupling) -> u32 {
        let t = match paths(w, ack, c) {
            Some((p, me)) => acks_per_packet(acks_per_increase(&p, me)),
            None => w.cwnd,
        };
        let mut key = WindowKey::new();
        key.push(w.cwnd);
        key.extend(sibling_windows(c));
        self.cache = Some((key, t));
        t
    }
}

/// Whether `key` holds `cwnd` and then exactly the windows [`sibling_windows`] yields (its first
/// 16 active siblings'), compared in one pass without building the list (once per ACK).
#[inline]
fn key_matches(key: &WindowKey, cwnd: u32, c: &Coupling) -> bool {
    if key.first() != Some(&cwnd) {
        return false;
    }
    let mut n = 1;
    for (i, v) in c.subflows.iter().enumerate() {
        if i == c.me || !v.active {
            continue;
        }
        if n == KEY_SIBLINGS + 1 {
            break; // as `sibling_windows`
        }
        if key.get(n) != Some(&v.cwnd) {
            return false;
        }
        n += 1;
    }
    n == key.len()
}

/// The windows of the active siblings, in order: with this subflow's own window first, the key
/// of the cached threshold (compared on every ACK, so not collected unless it changed).
fn sibling_windows<'a>(c: &Coupling<'a>) -> impl Iterator<Item = u32> + 'a {
    let me = c.me;
    c.subflows
        .iter()
        .enumerate()
        .filter(move |(i, v)| *i != me && v.active)
        .map(|(_, v)| v.cwnd)
        .take(KEY_SIBLINGS)
}

#[cfg(test)]
mod tests {
    use super::super::common::test_util::*;
    use super::*;
    use crate::tcp::cc::newreno::NewReno;
    use crate::tcp::cc::SubflowView;

    #[test]
    fn two_subflows_threshold_by_hand() {
        // Me: 10 pkts / 100 ms; other: 20 pkts / 50 ms; MSS 1000.
        // sum W/rtt = 100 + 400 = 500 pkt/s; max W/rtt^2 = max(1000, 8000) = 8000.
        // T = 500^2 / 8000 = 31.25 (> cwnd 10) -> one packet per 32 acks.
        let v = [view(10, 100), view(20, 50)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let w = ca_window(10);
        let (p, me) = paths(&w, &ack(1, 100), &c).unwrap();
        assert!((acks_per_increase(&p, me) - 31.25).abs() < 1e-9);
        let mut cc = Lia::default();
        let mut w = ca_window(10);
        cc.cong_avoid(&mut w, &ack(31, 100), &c);
        assert_eq!((w.cwnd, w.cwnd_cnt), (10, 31));
        cc.cong_avoid(&mut w, &ack(1, 100), &c);
        assert_eq!((w.cwnd, w.cwnd_cnt), (11, 0));
        // The other subflow: T = max(31.25, 20) -> 32 as well.
        let c2 = Coupling {
            subflows: &v,
            me: 1,
        };
        let w2 = ca_window(20);
        let (p, me) = paths(&w2, &ack(1, 50), &c2).unwrap();
        assert!((acks_per_increase(&p, me) - 31.25).abs() < 1e-9);
    }

    #[test]
    fn equal_paths_quarter_packet_per_rtt_each() {
        // Two subflows of w = 20, same RTT: alpha = 1/2, T = (2w)^2 / w = 4w = 80.
        let v = [view(20, 60), view(20, 60)];
        let c = Coupling {
            subflows: &v,
            me: 1,
        };
        let mut cc = Lia::default();
        let mut w = ca_window(20);
        cc.cong_avoid(&mut w, &ack(79, 60), &c);
        assert_eq!(w.cwnd, 20);
        cc.cong_avoid(&mut w, &ack(1, 60), &c);
        assert_eq!(w.cwnd, 21);
    }

    #[test]
    fn cwnd_cap_when_me_is_the_best_path() {
        // Me: 50 pkts / 10 ms, other: 2 pkts / 200 ms: sum = 5000 + 10 = 5010,
        // max = 500000 -> T = 5010^2 / 500000 = 50.2002 (> cwnd 50) -> 51 acks.
        let v = [view(50, 10), view(2, 200)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let w = ca_window(50);
        let (p, me) = paths(&w, &ack(1, 10), &c).unwrap();
        assert!((acks_per_increase(&p, me) - 50.2002).abs() < 1e-9);
        // Alone (other inactive): T = cwnd = 50 (Reno).
        let mut v = v;
        v[1].active = false;
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let (p, me) = paths(&w, &ack(1, 10), &c).unwrap();
        assert_eq!(acks_per_increase(&p, me), 50.0);
    }

    #[test]
    fn single_subflow_is_reno() {
        let v = [view(12, 40)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let (mut a, mut b) = (Window::new(10, 1000), Window::new(10, 1000));
        a.ssthresh = 12;
        b.ssthresh = 12;
        for n in [4, 10, 7, 30, 1, 13] {
            Lia::default().cong_avoid(&mut a, &ack(n, 40), &c);
            NewReno.cong_avoid(&mut b, &ack(n, 40), &Coupling::NONE);
            assert_eq!(a, b);
        }
        assert_eq!(
            Lia::default().ssthresh(&a, Time::ZERO),
            NewReno.ssthresh(&b, Time::ZERO)
        );
    }

    #[test]
    fn slow_start_and_halving() {
        let v = [view(10, 100), view(20, 50)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let mut w = Window::new(10, 1000);
        w.ssthresh = 14;
        // Slow start to 14, then the 2 left over count toward the coupled increase.
        Lia::default().cong_avoid(&mut w, &ack(6, 100), &c);
        assert_eq!((w.cwnd, w.cwnd_cnt), (14, 2));
        assert_eq!(Lia::default().ssthresh(&w, Time::ZERO), 7);
        w.cwnd = 3;
        assert_eq!(Lia::default().ssthresh(&w, Time::ZERO), 2);
        // Not cwnd-limited: no growth.
        let mut a = ack(50, 100);
        a.cwnd_limited = false;
        Lia::default().cong_avoid(&mut w, &a, &c);
        assert_eq!(w.cwnd, 3);
    }

    #[test]
    fn key_matches_what_sibling_windows_yields() {
        // Every combination of active flags and windows over up to 18 subflows (beyond the 16
        // siblings the key holds): the one-pass comparison agrees with comparing the list.
        let mut rng = railpath_core::Rng::stream(3, "lia-key");
        for step in 0..20_000u64 {
            let n = 1 + (step % 18) as usize;
            let mut v: Vec<SubflowView> = (0..n)
                .map(|_| {
                    let mut x = view(1 + (rng.next_u64() % 3) as u32, 10);
                    x.active = rng.next_u64() % 4 != 0;
                    x
                })
                .collect();
            let me = (rng.next_u64() % n as u64) as usize;
            let c = Coupling { subflows: &v, me };
            let cwnd = 1 + (rng.next_u64() % 3) as u32;
            let mut key = WindowKey::new();
            key.push(cwnd);
            key.extend(sibling_windows(&c));
            assert!(key_matches(&key, cwnd, &c), "step {step}");
            // A different own window, or a key missing its last entry, never matches; after
            // a change of one window the answer is that of comparing the lists again.
            assert!(!key_matches(&key, cwnd + 1, &c));
            let mut shorter = key.clone();
            shorter.pop();
            assert!(!key_matches(&shorter, cwnd, &c));
            let k = (rng.next_u64() % n as u64) as usize;
            v[k].cwnd += 1;
            let c = Coupling { subflows: &v, me };
            let mut now = WindowKey::new();
            now.push(cwnd);
            now.extend(sibling_windows(&c));
            assert_eq!(key_matches(&key, cwnd, &c), now == key, "step {step}");
        }
    }

    #[test]
    fn threshold_cached_until_a_window_changes() {
        // As two_subflows_threshold_by_hand: T = 31.25 -> 32 acks per packet.
        let mut cc = Lia::default();
        let v = [view(10, 100), view(20, 50)];
        let c = Coupling {
            subflows: &v,
            me: 0,
        };
        let mut w = ca_window(10);
        cc.cong_avoid(&mut w, &ack(1, 100), &c);
        assert_eq!(cc.cache.as_ref().unwrap().1, 32);
        // The sibling's RTT doubles but no window changed: the threshold is kept (as Linux
        // keeps alpha); computed afresh it would be 300 000^2 / (1000 * 2e6) = 45.
        let v2 = [view(10, 100), view(20, 100)];
        let c2 = Coupling {
            subflows: &v2,
            me: 0,
        };
        cc.cong_avoid(&mut w, &ack(1, 100), &c2);
        assert_eq!(cc.cache.as_ref().unwrap().1, 32);
        // The sibling's window grows to 21: recomputed with the RTTs now. W/rtt: 100 000 and
        // 210 000 B/s, sum 310 000; max W/rtt^2 = 21 000 / 0.01 = 2.1e6;
        // T = 310 000^2 / (1000 * 2.1e6) = 45.76 -> 46.
        let v3 = [view(10, 100), view(21, 100)];
        let c3 = Coupling {
            subflows: &v3,
            me: 0,
        };
        cc.cong_avoid(&mut w, &ack(1, 100), &c3);
        assert_eq!(cc.cache.as_ref().unwrap().1, 46);
    }
}
