//! Link bonding: one virtual link that stripes packets over member links, in both directions,
//! with member monitoring and an optional duplicate-ACK filter.
//!
//! - Striping with weights m:n (`split = "weights"`): `weights[0]` packets on the first member,
//!   then `weights[1]` on the second, and so on round the members; all 1 is Linux bonding's
//!   balance-rr (drivers/net/bonding/bond_main.c, `bond_xmit_roundrobin_slave_id`), other
//!   weights are the BOND paper's m:n (section III-3: "m packets over 802.11a, the next n over
//!   802.11g"). A member the bond sees as down is skipped, its turn passing to the next. Each
//!   end of the bond (each direction) keeps its own turn. `split = "random"` sends each packet
//!   to member k with probability weights[k] / sum over the members up (the split the paper's
//!   power model assumes). A bond without a member up drops the packet (as a bond without an
//!   active slave does).
//! - Monitoring (Linux `miimon`, `bond_mii_monitor`): the world checks the members' carriers
//!   every `miimon_ms` from time 0; a member in an outage at a check is marked down from then,
//!   one that is up again is used again from the check after it came back (`updelay` and
//!   `downdelay` 0, the defaults). The world schedules a check only at the first tick after a
//!   member's carrier changed, so monitoring costs no events while nothing changes.
//! - Duplicate-ACK filter (the BOND paper's section III-1, "like Snoop"): at the end where data
//!   enters the bond (the AP for downloads), a pure ACK leaving the bond that repeats the last
//!   acknowledgement number (and MPTCP data ACK) of its connection is dropped when the segment it
//!   asks for was already received there, i.e. entered a member's queue at this end: the hole it
//!   reports is then reordering over the members, not loss before the bond. A segment the
//!   member's queue refused was not received, and its duplicate ACKs pass. ACKs with an MP_PRIO
//!   option or window updates always pass.

use super::packet::{flags, unwrap_seg, Kind, Packet};
use railpath_core::{Rng, Time};
use railpath_scenario::BondSplit;

/// One member link: its index and its two directions (`Net::dirs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Member {
    pub link: u32,
    pub fwd: u32,
    pub rev: u32,
}

/// A member's state change as the bond's monitoring saw it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemberEvent {
    pub t: Time,
    pub member: usize,
    pub up: bool,
}

#[derive(Debug, Clone, Default)]
pub struct BondStats {
    /// Packets each member took, per direction (0 = data, 1 = reverse).
    pub sent: [Vec<u64>; 2],
    /// Packets dropped because no member was up.
    pub no_member_drops: u64,
    /// Duplicate ACKs the filter dropped.
    pub filtered_acks: u64,
    pub events: Vec<MemberEvent>,
}

/// What the filter knows of one connection (one subflow of a flow).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Conn {
    key: (u32, u16),
    /// Highest segment received + 1 (segment numbers unwrapped: [`unwrap_seg`]).
    high: u64,
    last_ack: u64,
    last_data_ack: u64,
    acked: bool,
}

/// The duplicate-ACK filter at the bond's data-entry end.
#[derive(Debug, Clone, Default)]
pub struct AckFilter {
    conns: Vec<Conn>,
}

impl AckFilter {
    fn conn(&mut self, key: (u32, u16)) -> &mut Conn {
        let i = match self.conns.iter().position(|c| c.key == key) {
            Some(i) => i,
            None => {
                self.conns.push(Conn {
                    key,
                    high: 0,
                    last_ack: 0,
                    last_data_ack: 0,
                    acked: false,
                });
                self.conns.len() - 1
            }
        };
        &mut self.conns[i]
    }

    /// Data segment `seq` of connection `key` was received (entered a member's queue).
    pub fn data(&mut self, key: (u32, u16), seq: u32) {
        let c = self.conn(key);
        c.high = c.high.max(unwrap_seg(seq, c.high).saturating_add(1));
    }

    /// Whether to drop this ACK of connection `key` leaving the bond.
    pub fn drop_ack(&mut self, key: (u32, u16), p: &Packet) -> bool {
        if p.kind != Kind::Ack || p.flags & (flags::MP_PRIO | flags::WINDOW_UPDATE) != 0 {
            return false;
        }
        let c = self.conn(key);
        // Near the last ACK, or before the first one near the data seen (ACKs follow data).
        let ack = unwrap_seg(p.ack, if c.acked { c.last_ack } else { c.high });
        if !c.acked || ack > c.last_ack || p.data_ack > c.last_data_ack {
            c.acked = true;
            c.last_ack = c.last_ack.max(ack);
            c.last_data_ack = c.last_data_ack.max(p.data_ack);
            return false;
        }
        // An older ACK (reordered over the members) passes: the sender ignores it.
        ack == c.last_ack && p.data_ack == c.last_data_ack && ack < c.high
    }
}

/// A bond.
#[derive(Debug)]
pub struct Bond {
    pub id: String,
    pub members: Vec<Member>,
    weights: Vec<u32>,
    split: BondSplit,
    /// Members as the bond sees them (after monitoring).
    pub up: Vec<bool>,
    /// Per direction: the member whose turn it is and the packets it has had in this turn.
    turn: [(usize, u32); 2],
    rng: Rng,
    pub filter: Option<AckFilter>,
    pub stats: BondStats,
}

impl Bond {
    pub fn new(
        id: &str,
        members: Vec<Member>,
        weights: Vec<u32>,
        split: BondSplit,
        ack_filter: bool,
        rng: Rng,
    ) -> Bond {
        let n = members.len();
        Bond {
            id: id.to_string(),
            members,
            weights,
            split,
            up: vec![true; n],
            turn: [(0, 0); 2],
            rng,
            filter: ack_filter.then(AckFilter::default),
            stats: BondStats {
                sent: [vec![0; n], vec![0; n]],
                ..Default::default()
            },
        }
    }

    /// The member to carry the next packet in direction `d` (0 = data, 1 = reverse); `None`
    /// when no member is up.
    pub fn pick(&mut self, d: usize) -> Option<usize> {
        let n = self.members.len();
        match self.split {
            BondSplit::Weights => {
                let (mut k, mut used) = self.turn[d];
                for _ in 0..=n {
                    if self.up[k] && used < self.weights[k] {
                        self.turn[d] = (k, used + 1);
                        return Some(k);
                    }
                    k = (k + 1) % n;
                    used = 0;
                }
                self.turn[d] = (k, 0);
                None
            }
            BondSplit::Random => {
                let total: u64 = (0..n)
                    .filter(|&k| self.up[k])
                    .map(|k| u64::from(self.weights[k]))
                    .sum();
                if total == 0 {
                    return None;
                }
                let mut x = self.rng.below(total);
                for k in (0..n).filter(|&k| self.up[k]) {
                    let w = u64::from(self.weights[k]);
                    if x < w {
                        return Some(k);
                    }
                    x -= w;
                }
                None
            }
        }
    }

    /// A monitoring check at `now`: `carrier[k]` is whether member k's link is up.
    pub fn monitor(&mut self, now: Time, carrier: impl Fn(&Member) -> bool) {
        for k in 0..self.members.len() {
            let up = carrier(&self.members[k]);
            if up != self.up[k] {
                self.up[k] = up;
                self.stats.events.push(MemberEvent {
                    t: now,
                    member: k,
                    up,
                });
            }
        }
    }
}

/// The first monitoring check strictly after `t` with checks every `interval` from time 0
/// (`None` without monitoring).
pub fn next_check(t: Time, interval: Time) -> Option<Time> {
    if interval == Time::ZERO {
        return None;
    }
    Some(Time::from_ns((t.ns() / interval.ns() + 1) * interval.ns()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bond(weights: Vec<u32>, split: BondSplit) -> Bond {
        let members = (0..weights.len() as u32)
            .map(|i| Member {
                link: i,
                fwd: 2 * i,
                rev: 2 * i + 1,
            })
            .collect();
        Bond::new("b", members, weights, split, true, Rng::from_seed(3))
    }

    fn order(b: &mut Bond, d: usize, n: usize) -> Vec<usize> {
        (0..n).map(|_| b.pick(d).unwrap()).collect()
    }

    #[test]
    fn striping_follows_the_weights() {
        // 1:1 is round robin.
        let mut b = bond(vec![1, 1], BondSplit::Weights);
        assert_eq!(order(&mut b, 0, 6), [0, 1, 0, 1, 0, 1]);
        // 2:1: two on the first member, one on the second.
        let mut b = bond(vec![2, 1], BondSplit::Weights);
        assert_eq!(order(&mut b, 0, 9), [0, 0, 1, 0, 0, 1, 0, 0, 1]);
        // 4:3.
        let mut b = bond(vec![4, 3], BondSplit::Weights);
        assert_eq!(
            order(&mut b, 0, 14),
            [0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1]
        );
        // 1:2, and the reverse direction keeps its own turn.
        let mut b = bond(vec![1, 2], BondSplit::Weights);
        assert_eq!(order(&mut b, 0, 4), [0, 1, 1, 0]);
        assert_eq!(order(&mut b, 1, 3), [0, 1, 1]);
        assert_eq!(order(&mut b, 0, 2), [1, 1]);
    }

    #[test]
    fn a_member_down_is_skipped_and_none_up_drops() {
        let mut b = bond(vec![2, 1], BondSplit::Weights);
        assert_eq!(order(&mut b, 0, 1), [0]);
        b.monitor(Time::from_secs(1), |m| m.link != 0);
        assert_eq!(b.stats.events.len(), 1);
        assert!(!b.stats.events[0].up);
        assert_eq!(order(&mut b, 0, 3), [1, 1, 1]);
        b.monitor(Time::from_secs(2), |_| true);
        // The first member starts a new turn of 2.
        assert_eq!(order(&mut b, 0, 4), [0, 0, 1, 0]);
        b.monitor(Time::from_secs(3), |_| false);
        assert_eq!(b.pick(0), None);
        assert_eq!(b.stats.events.len(), 4);
    }

    #[test]
    fn random_split_follows_the_weights_on_average() {
        let mut b = bond(vec![3, 1], BondSplit::Random);
        let n = 40_000;
        let first = order(&mut b, 0, n).iter().filter(|&&k| k == 0).count();
        // Expected 30000, standard deviation sqrt(40000 x 0.75 x 0.25) = 87.
        assert!((first as i64 - 30_000).abs() < 450, "{first}");
        b.monitor(Time::ZERO, |m| m.link == 1);
        assert!(order(&mut b, 0, 100).iter().all(|&k| k == 1));
    }

    fn ack(ack: u32) -> Packet {
        Packet {
            kind: Kind::Ack,
            ack,
            ..Default::default()
        }
    }

    #[test]
    fn the_filter_drops_exactly_the_duplicates_of_data_it_received() {
        let mut f = AckFilter::default();
        let c = (0, 0);
        for seq in 0..10 {
            f.data(c, seq);
        }
        // New ACKs pass; the first duplicate of ACK 5 asks for segment 5, received: dropped.
        assert!(!f.drop_ack(c, &ack(3)));
        assert!(!f.drop_ack(c, &ack(5)));
        assert!(f.drop_ack(c, &ack(5)));
        assert!(f.drop_ack(c, &ack(5)));
        // An older ACK (reordered) passes, and does not make 5 new again.
        assert!(!f.drop_ack(c, &ack(4)));
        assert!(f.drop_ack(c, &ack(5)));
        // Progress passes.
        assert!(!f.drop_ack(c, &ack(10)));
        // Duplicates of 10 ask for segment 10, never received here (refused or never sent):
        // they pass, so the sender can repair a loss before the bond.
        assert!(!f.drop_ack(c, &ack(10)));
        assert!(!f.drop_ack(c, &ack(10)));
        // Another connection has its own state; MP_PRIO ACKs and window updates always pass.
        assert!(!f.drop_ack((1, 0), &ack(0)));
        f.data(c, 10);
        assert!(f.drop_ack(c, &ack(10)));
        let mut prio = ack(10);
        prio.flags = flags::MP_PRIO;
        assert!(!f.drop_ack(c, &prio));
        let mut upd = ack(10);
        upd.flags = flags::WINDOW_UPDATE;
        assert!(!f.drop_ack(c, &upd));
        // An MPTCP subflow ACK whose data ACK advances is not a duplicate.
        let mut dack = ack(10);
        dack.data_ack = 7;
        assert!(!f.drop_ack(c, &dack));
        assert!(f.drop_ack(c, &dack));
    }

    #[test]
    fn the_ack_filter_follows_segment_numbers_across_2_32() {
        // Segment numbers travel modulo 2^32: 2^32 - 2 .. 2^32 + 2 arrive as 4294967294,
        // 4294967295, 0, 1, 2.
        let mut f = AckFilter::default();
        let c = (0, 0);
        let w = 1u64 << 32;
        // A connection that has seen segments up to 2^32 - 9 (set, not sent: 4 G of them).
        f.data(c, 0);
        f.conns[0].high = w - 8;
        for seg in w - 8..w + 3 {
            f.data(c, seg as u32);
        }
        assert_eq!(f.conns[0].high, w + 3);
        let ack = |a: u64| Packet {
            kind: Kind::Ack,
            ack: a as u32,
            ..Default::default()
        };
        assert!(!f.drop_ack(c, &ack(w - 5)));
        // ACK 2^32 + 1 (1 on the wire) is progress, not an old ACK below 2^32 - 5.
        assert!(!f.drop_ack(c, &ack(w + 1)));
        assert_eq!(f.conns[0].last_ack, w + 1);
        // Its duplicate asks for a segment received: dropped; an older one passes.
        assert!(f.drop_ack(c, &ack(w + 1)));
        assert!(!f.drop_ack(c, &ack(w - 1)));
        assert_eq!(f.conns[0].last_ack, w + 1);
    }

    #[test]
    fn checks_fall_on_the_monitoring_grid() {
        let ms = Time::from_ms;
        assert_eq!(next_check(ms(100_000), ms(100)), Some(ms(100_100)));
        assert_eq!(next_check(ms(100_001), ms(100)), Some(ms(100_100)));
        assert_eq!(next_check(ms(0), ms(100)), Some(ms(100)));
        assert_eq!(next_check(ms(5), Time::ZERO), None);
    }
}
