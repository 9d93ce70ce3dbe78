//! A harness that runs one MPTCP connection ([`MptcpFlow`]) with no network: the test plays the
//! network by hand (tests only).
//!
//! The connection is built from a scenario snippet as a run builds it, but each of its routes is
//! a single `Hop::Sink`: what either end sends stays on the wire (`Net::wire`, test-only) until
//! the test takes it, and reaches the other end only when the test delivers it, at the time the
//! test has advanced to. Time moves only when the test says so; the connection's own timers
//! (RTO, delayed ACK, pacing, the MPTCP-level retransmit timer) and its scripted MP_PRIO changes
//! fire then, in time order. The model is smoltcp's socket tests (`src/socket/tcp.rs`): a socket,
//! the segments it is given and the segments it sends written out in each test.
//!
//! Subflow `j`'s data route is route `2 j` (to the data receiver's endpoint `j`), its ACK route
//! `2 j + 1` (to the data sender's endpoint `j`).

use super::connection::{MptcpFlow, MptcpSetup};
use crate::engine::Event;
use crate::flows::common::FlowOps;
use crate::net::packet::{flags, Kind, Packet};
use crate::net::{Endpoint, Hop, Net, Side};
use crate::results::FlowSummary;
use railpath_core::Time;

/// One MPTCP connection, both its ends, and a wire the test reads and delivers from.
pub(crate) struct Harness {
    pub net: Net,
    pub flow: MptcpFlow,
}

impl Harness {
    /// The connection of a scenario with one link per distinct name in `paths` and one mptcp
    /// flow `m` over `paths` with the keys `flow` (everything but `id`, `kind` and `paths`). The
    /// links' own rates and delays are never used. Not started: see [`Harness::start`].
    pub fn new(paths: &[&str], flow: &str) -> Harness {
        let mut text = String::from("[run]\nduration_s = 100\n");
        let mut links: Vec<&str> = Vec::new();
        for p in paths {
            if !links.contains(p) {
                links.push(p);
                text += &format!("[[link]]\nid = \"{p}\"\nrate_mbps = 10\n");
            }
        }
        let list: Vec<String> = paths.iter().map(|p| format!("\"{p}\"")).collect();
        text += &format!(
            "[[flow]]\nid = \"m\"\nkind = \"mptcp\"\npaths = [{}]\n{flow}\n",
            list.join(", ")
        );
        let r = railpath_scenario::parse_str(&text, "t.toml")
            .and_then(|s| s.validate())
            .unwrap_or_else(|e| panic!("harness scenario: {e}\n{text}"));
        let spec = r.flows[0].mptcp().expect("an mptcp flow");
        let mut net = Net::new();
        let mut routes = Vec::new();
        for j in 0..spec.subflows.len() as u16 {
            let end = |side| {
                Hop::Sink(Endpoint {
                    flow: 0,
                    sub: j,
                    side,
                })
            };
            let data = net.add_route(vec![end(Side::Receiver)]);
            let ack = net.add_route(vec![end(Side::Sender)]);
            routes.push((data, ack));
        }
        let flow = MptcpFlow::new(MptcpSetup {
            idx: 0,
            id: "m",
            start: Time::ZERO,
            spec,
            routes,
            seed: r.run.seed,
            nbins: 0,
            plan: None,
            unplugs: Vec::new(),
        });
        // Scripted control, as `build::World` schedules it.
        let controls = flow.prio_script.iter().map(|pc| pc.t);
        for (k, t) in controls.chain(flow.wakes.iter().copied()).enumerate() {
            let idx = k as u32;
            net.sched.at_control(t, 0, idx);
        }
        Harness { net, flow }
    }

    /// The connection starts (its `FlowStart`): the sender sends what its windows allow.
    pub fn start(&mut self) {
        self.flow.start(&mut self.net);
    }

    pub fn now(&self) -> Time {
        self.net.now()
    }

    /// Advance the clock to `t` (not before now), firing every timer and scripted control due
    /// until then, in time order.
    pub fn advance_to(&mut self, t: Time) {
        assert!(t >= self.now(), "time goes forward");
        while let Some(ev) = self.net.sched.pop(t) {
            match ev {
                Event::Timer { sub, side, .. } => self.flow.on_timer(sub, side, &mut self.net),
                Event::FlowControl { ctl } => {
                    let (_, idx) = self.net.sched.control(ctl);
                    self.flow.control(idx, &mut self.net)
                }
                other => panic!("the harness has no links or samples: {other:?}"),
            }
        }
        self.net.sched.advance_to(t);
    }

    /// Advance the clock to `ms` milliseconds.
    pub fn at_ms(&mut self, ms: u64) {
        self.advance_to(Time::from_ms(ms));
    }

    /// The endpoint a packet's route ends at.
    fn endpoint(&self, p: &Packet) -> Endpoint {
        match self.net.route(p.route).last() {
            Some(Hop::Sink(e)) => *e,
            _ => unreachable!("every harness route is a sink"),
        }
    }

    /// Take off the wire what the connection sent on subflow `sub` of `kind`, in order.
    fn take(&mut self, sub: u16, kind: Kind) -> Vec<Packet> {
        let wire = std::mem::take(&mut self.net.wire);
        let (mine, rest) = wire
            .into_iter()
            .partition(|p| p.kind == kind && self.endpoint(p).sub == sub);
        self.net.wire = rest;
        mine
    }

    /// The data segments the sender put on subflow `sub` since they were last taken.
    pub fn take_data(&mut self, sub: u16) -> Vec<Packet> {
        self.take(sub, Kind::Data)
    }

    /// The ACKs the receiver put on subflow `sub` since they were last taken.
    pub fn take_acks(&mut self, sub: u16) -> Vec<Packet> {
        self.take(sub, Kind::Ack)
    }

    /// Packets on the wire not taken yet.
    pub fn on_wire(&self) -> usize {
        self.net.wire.len()
    }

    /// `p` reaches the end its route leads to, now: a data segment the data receiver, an ACK the
    /// data sender.
    pub fn deliver(&mut self, p: &Packet) {
        let e = self.endpoint(p);
        self.flow.on_packet(e.sub, e.side, p, &mut self.net);
    }

    pub fn deliver_all(&mut self, ps: &[Packet]) {
        for p in ps {
            self.deliver(p);
        }
    }

    /// A data segment of `len` bytes the test writes itself: subflow `sub`'s segment `seq`
    /// carrying data-level segment `dsn`, sent now.
    pub fn segment(&self, sub: u16, seq: u32, dsn: u64, len: u16) -> Packet {
        Packet {
            route: 2 * sub as u32,
            kind: Kind::Data,
            seq,
            dsn,
            len,
            size: len + 52,
            ts: self.now(),
            ..Default::default()
        }
    }

    /// A full segment the test writes reaches the data receiver now: subflow `sub`'s segment
    /// `seq` carrying data-level segment `dsn`.
    pub fn arrive(&mut self, sub: u16, seq: u32, dsn: u64) {
        let p = self.segment(sub, seq, dsn, MSS as u16);
        self.deliver(&p);
    }

    /// The connection's summary now.
    pub fn summary(&self) -> FlowSummary {
        self.flow.summarize(self.now(), &self.net).0
    }
}

/// A data segment as tests compare it: subflow sequence number, DSN, payload bytes, and whether
/// the subflow sent it before (`flags::RETRANS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seg {
    pub seq: u32,
    pub dsn: u64,
    pub len: u16,
    pub retrans: bool,
}

/// A first transmission of a full segment of `MSS` bytes.
pub(crate) fn seg(seq: u32, dsn: u64) -> Seg {
    Seg {
        seq,
        dsn,
        len: MSS as u16,
        retrans: false,
    }
}

impl Seg {
    /// The same segment sent again by its subflow.
    pub fn again(self) -> Seg {
        Seg {
            retrans: true,
            ..self
        }
    }
}

pub(crate) fn segs(ps: &[Packet]) -> Vec<Seg> {
    ps.iter()
        .map(|p| {
            assert_eq!(p.kind, Kind::Data);
            Seg {
                seq: p.seq,
                dsn: p.dsn,
                len: p.len,
                retrans: p.flags & flags::RETRANS != 0,
            }
        })
        .collect()
}

/// An ACK as tests compare it: the subflow's cumulative ACK, the DATA_ACK, the advertised
/// window (bytes), the SACK blocks, and an MP_PRIO option (the subflow it names, backup or not).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ack {
    pub ack: u32,
    pub data_ack: u64,
    pub rwnd: u32,
    pub sack: Vec<(u32, u32)>,
    pub mp_prio: Option<(u64, bool)>,
}

/// A plain ACK: no SACK blocks, no MP_PRIO.
pub(crate) fn ack(ack: u32, data_ack: u64, rwnd: u32) -> Ack {
    Ack {
        ack,
        data_ack,
        rwnd,
        sack: Vec::new(),
        mp_prio: None,
    }
}

impl Ack {
    pub fn sack(self, blocks: &[(u32, u32)]) -> Ack {
        Ack {
            sack: blocks.to_vec(),
            ..self
        }
    }
    pub fn mp_prio(self, sub: u64, backup: bool) -> Ack {
        Ack {
            mp_prio: Some((sub, backup)),
            ..self
        }
    }
}

pub(crate) fn acks(ps: &[Packet]) -> Vec<Ack> {
    ps.iter()
        .map(|p| {
            assert_eq!(p.kind, Kind::Ack);
            Ack {
                ack: p.ack,
                data_ack: p.data_ack,
                rwnd: p.rwnd,
                sack: p.sack_blocks().to_vec(),
                mp_prio: (p.flags & flags::MP_PRIO != 0)
                    .then_some((p.dsn, p.flags & flags::BACKUP != 0)),
            }
        })
        .collect()
}

/// The segment size of every fixture (`tcp.mss_bytes`).
pub(crate) const MSS: u32 = 1000;
