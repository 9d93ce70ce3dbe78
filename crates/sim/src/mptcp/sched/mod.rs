//! MPTCP packet schedulers behind one small trait, one algorithm per file.
//!
//! The connection calls [`Scheduler::pick`] whenever it has data to send (new data, or data to
//! reinject) and at least one subflow might take it. A scheduler sees a snapshot of every subflow
//! ([`SubflowInfo`]) and the connection ([`ConnInfo`]) and answers which subflow gets the next
//! segment, or to wait. A wrapper can filter subflows before the inner scheduler sees them
//! (PHA removes a subflow whose carrier is about to hand over: it sets `usable = false`).
//!
//! Conventions shared by every scheduler (as Linux `net/mptcp/` and the out-of-tree
//! multipath-tcp.org scheduler API do):
//! - a subflow with `usable == false` is never chosen;
//! - a backup subflow is chosen only when no usable non-backup subflow exists (RFC 8684 section
//!   3.3.8: "backup" means "use only if no regular subflow is available");
//! - `has_space` (in-flight below cwnd) is what "can send now" means.

use railpath_core::Time;

pub mod blest;
mod build;
mod common;
pub mod ecf;
pub mod linux_default;
pub mod minrtt;
pub mod peekaboo;
pub mod redundant;
pub mod round_robin;

pub use build::build;

/// A snapshot of one subflow for the scheduler.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SubflowInfo {
    /// Index of the subflow in the connection.
    pub id: usize,
    /// Smoothed RTT; zero before the first sample.
    pub srtt: Time,
    pub rttvar: Time,
    /// Minimum RTT seen; zero before the first sample.
    pub min_rtt: Time,
    /// Congestion window, packets.
    pub cwnd: u32,
    /// Packets in flight (Linux `tcp_packets_in_flight`).
    pub in_flight: u32,
    /// Payload bytes per segment.
    pub mss: u32,
    /// Marked backup (by either end, effective now).
    pub backup: bool,
    /// Established and not failed/stale; false also when a wrapper filtered it out.
    pub usable: bool,
    /// cwnd > in_flight (and pacing allows a packet now).
    pub has_space: bool,
    /// Pacing rate in bit/s of payload (Linux `sk_pacing_rate` x mss/size); 0 when unknown.
    pub pacing_rate_bps: u64,
    /// Payload bytes queued in the subflow's send queue and not yet acked
    /// (Linux `sk_wmem_queued` stand-in: in-flight bytes).
    pub queued_bytes: u64,
    /// Total retransmissions on this subflow so far (BLEST adapts lambda on these).
    pub retransmissions: u64,
    /// Retransmission timeouts on this subflow so far.
    pub rto_count: u64,
}

impl SubflowInfo {
    /// The light snapshot of a subflow ([`Scheduler::light_snapshot`]): the fields a light
    /// scheduler may read, every other at its default. The one definition the connection fills
    /// and the tests check schedulers against.
    #[inline(always)]
    pub fn light(id: usize, srtt: Time, backup: bool, usable: bool, has_space: bool) -> Self {
        SubflowInfo {
            id,
            srtt,
            backup,
            usable,
            has_space,
            ..SubflowInfo::default()
        }
    }
}

/// The connection's state as schedulers need it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ConnInfo {
    pub now: Time,
    /// Segments waiting at the connection level to be sent (unsent new data); `u64::MAX` for a
    /// bulk transfer with unlimited data.
    pub queued_segments: u64,
    /// Free space in the peer's (data-level) receive window, bytes.
    pub rcv_wnd_free: u64,
    /// Total data-level receive window (the shared receive buffer), bytes.
    pub rcv_wnd: u64,
    /// Data-level bytes in flight (sent, not data-acked).
    pub data_in_flight: u64,
    /// Payload bytes per segment.
    pub mss: u32,
}

impl ConnInfo {
    /// The light snapshot of the connection ([`Scheduler::light_snapshot`]): `now` and `mss`,
    /// every other field at its default.
    #[inline(always)]
    pub fn light(now: Time, mss: u32) -> Self {
        ConnInfo {
            now,
            mss,
            ..ConnInfo::default()
        }
    }
}

/// A scheduler's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Send the next segment on this subflow.
    Send(usize),
    /// Hold the segment back (e.g. ECF/BLEST/Peekaboo waiting for the fast subflow).
    Wait,
}

/// Feedback a learning scheduler may use (Peekaboo; BLEST's lambda).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Feedback {
    /// A subflow-level ACK arrived on subflow `id`.
    Ack {
        id: usize,
        acked_segments: u32,
        rtt: Option<Time>,
    },
    /// A segment was retransmitted on subflow `id` (loss or timeout).
    Retransmit { id: usize },
    /// The data-level ACK advanced by `segments`.
    DataAck { segments: u64 },
}

pub trait Scheduler: Send {
    fn name(&self) -> &'static str;
    /// Pick the subflow for the next segment, or wait. Only called when at least one subflow is
    /// usable; return `Wait` if none of the usable ones can take it.
    fn pick(&mut self, subs: &[SubflowInfo], conn: &ConnInfo) -> Decision;
    /// Redundant schedulers send each segment on every subflow with space.
    fn redundant(&self) -> bool {
        false
    }
    fn feedback(&mut self, _f: &Feedback, _subs: &[SubflowInfo], _conn: &ConnInfo) {}
    /// Whether `feedback` does anything (the connection skips building it otherwise).
    fn wants_feedback(&self) -> bool {
        false
    }
    /// Whether `pick` reads only the light part of its inputs: of each [`SubflowInfo`] its
    /// `id`, `srtt`, `backup`, `usable` and `has_space`, and of the [`ConnInfo`] its `now` and
    /// `mss`. When it says so (and does not want feedback), the connection may fill only those
    /// and leave every other field at its `Default` (zero), which spares it reading each
    /// subflow's pacing rate, RTT variance, counters and the connection's buffers once per
    /// segment. A scheduler that reads any other field must keep the default `false`; the test
    /// `light_schedulers_choose_the_same_from_a_light_snapshot` checks every scheduler that says
    /// `true`.
    fn light_snapshot(&self) -> bool {
        false
    }
    /// Whether `pick` is a function of its arguments alone: no state it keeps between calls, no
    /// random draws, so the same snapshot and connection view always get the same answer. The
    /// connection then asks once for a run of segments whose snapshot does not change. A
    /// scheduler with state (round-robin's position, a random draw) keeps the default `false`;
    /// the test `pure_schedulers_answer_the_same_whatever_came_before` checks every scheduler
    /// that says `true`.
    fn pure_pick(&self) -> bool {
        false
    }
}

/// `s` as a connection fills it for a scheduler that asks for a light snapshot
/// ([`SubflowInfo::light`]).
#[cfg(test)]
pub fn light_info(s: &SubflowInfo) -> SubflowInfo {
    SubflowInfo::light(s.id, s.srtt, s.backup, s.usable, s.has_space)
}

/// `c` as a connection fills it for a scheduler that asks for a light snapshot
/// ([`ConnInfo::light`]).
#[cfg(test)]
pub fn light_conn(c: &ConnInfo) -> ConnInfo {
    ConnInfo::light(c.now, c.mss)
}

#[cfg(test)]
mod tests {
    use super::*;
    use railpath_core::Rng;
    use railpath_scenario::SchedulerKind;

    /// A random snapshot of `n` subflows: every field drawn, so that a scheduler reading a field
    /// the light snapshot leaves out would (almost surely) choose differently somewhere.
    fn random_subs(rng: &mut Rng, n: usize) -> Vec<SubflowInfo> {
        let mut draw = |m: u64| rng.next_u64() % m;
        (0..n)
            .map(|id| {
                let cwnd = 1 + draw(40) as u32;
                let in_flight = draw(45) as u32;
                SubflowInfo {
                    id,
                    srtt: Time::from_ms(draw(4) * 10),
                    rttvar: Time::from_ms(draw(20)),
                    min_rtt: Time::from_ms(draw(30)),
                    cwnd,
                    in_flight,
                    mss: 1000 + draw(2) as u32 * 400,
                    backup: draw(4) == 0,
                    usable: draw(5) != 0,
                    has_space: in_flight < cwnd && draw(6) != 0,
                    pacing_rate_bps: draw(3) * 5_000_000,
                    queued_bytes: draw(60_000),
                    retransmissions: draw(5),
                    rto_count: draw(2),
                }
            })
            .collect()
    }

    fn random_conn(rng: &mut Rng) -> ConnInfo {
        let mut draw = |m: u64| rng.next_u64() % m;
        ConnInfo {
            now: Time::from_ms(draw(100_000)),
            queued_segments: if draw(3) == 0 { u64::MAX } else { draw(50) },
            rcv_wnd_free: draw(200_000),
            rcv_wnd: 200_000,
            data_in_flight: draw(200_000),
            mss: 1000,
        }
    }

    #[test]
    fn light_schedulers_choose_the_same_from_a_light_snapshot() {
        // Each scheduler that asks for a light snapshot, twice, in lockstep: one sees full
        // snapshots, the other their light form; every decision agrees. MinRTT and round-robin
        // must say light (the connection's fast path depends on it).
        let mut light = Vec::new();
        for kind in SchedulerKind::ALL {
            let mut full = build(kind, Rng::stream(1, "t"));
            let mut lite = build(kind, Rng::stream(1, "t"));
            if !full.light_snapshot() {
                continue;
            }
            assert!(!full.wants_feedback(), "{}", full.name());
            light.push(kind);
            let mut rng = Rng::stream(7, kind.as_str());
            for step in 0..20_000 {
                let n = 1 + (step % 4);
                let subs = random_subs(&mut rng, n);
                let conn = random_conn(&mut rng);
                let light_subs: Vec<SubflowInfo> = subs.iter().map(light_info).collect();
                let d = full.pick(&subs, &conn);
                assert_eq!(
                    lite.pick(&light_subs, &light_conn(&conn)),
                    d,
                    "{} step {step}",
                    full.name()
                );
            }
        }
        assert!(light.contains(&SchedulerKind::MinRtt));
        assert!(light.contains(&SchedulerKind::RoundRobin));
    }

    /// Whether `kind`'s answers depend only on their inputs: one instance asked a random
    /// sequence of snapshots answers each as a fresh instance does.
    fn answers_as_fresh(kind: SchedulerKind) -> bool {
        let mut used = build(kind, Rng::stream(1, "t"));
        let mut rng = Rng::stream(9, kind.as_str());
        (0..20_000).all(|step| {
            let subs = random_subs(&mut rng, 1 + step % 4);
            let conn = random_conn(&mut rng);
            // Sometimes the same snapshot twice in a row, as the connection's reuse asks.
            let d = used.pick(&subs, &conn);
            let again = step % 3 == 0 && used.pick(&subs, &conn) != d;
            !again && build(kind, Rng::stream(1, "t")).pick(&subs, &conn) == d
        })
    }

    #[test]
    fn pure_schedulers_answer_the_same_whatever_came_before() {
        // Each scheduler that says `pure_pick`: its answer to a snapshot does not depend on the
        // snapshots it answered before. MinRTT must say so (the connection's reuse of a pick
        // depends on it).
        let mut pure = Vec::new();
        for kind in SchedulerKind::ALL {
            if build(kind, Rng::stream(1, "t")).pure_pick() {
                assert!(answers_as_fresh(kind), "{}", kind.as_str());
                pure.push(kind);
            }
        }
        assert!(pure.contains(&SchedulerKind::MinRtt));
    }

    #[test]
    fn a_scheduler_with_state_is_caught() {
        // The check above can fail: round-robin's answer depends on where it stopped.
        let rr = build(SchedulerKind::RoundRobin, Rng::stream(1, "t"));
        assert!(!rr.pure_pick());
        assert!(!answers_as_fresh(SchedulerKind::RoundRobin));
    }

    #[test]
    fn a_scheduler_reading_more_is_caught() {
        // The check above can fail: ECF reads cwnd, RTT variance and the connection's queue, and
        // picks differently from their light (zeroed) form somewhere in the same draws.
        let mut full = build(SchedulerKind::Ecf, Rng::stream(1, "t"));
        let mut lite = build(SchedulerKind::Ecf, Rng::stream(1, "t"));
        assert!(!full.light_snapshot());
        let mut rng = Rng::stream(7, "ecf");
        let differs = (0..20_000).any(|step| {
            let subs = random_subs(&mut rng, 1 + step % 4);
            let conn = random_conn(&mut rng);
            let light_subs: Vec<SubflowInfo> = subs.iter().map(light_info).collect();
            full.pick(&subs, &conn) != lite.pick(&light_subs, &light_conn(&conn))
        });
        assert!(differs);
    }
}
