//! A packet tap (`run_with_tap`, what `railpath run --pcap` uses) watches a run without changing
//! it: a tapped run's results are the untapped run's, byte for byte, on plain links and on a
//! bond's members with its duplicate-ACK filter (whose packets leave through their own loop,
//! `Net::exits`); and the tap is told of every packet at both ends of every link direction.

mod common;
use common::scenario_file as scenario;
use railpath_scenario::Resolved;
use railpath_sim::net::packet::Packet;
use railpath_sim::net::Endpoint;
use railpath_sim::{PacketTap, RunResults, Time};
use std::cell::RefCell;
use std::rc::Rc;

/// Per link direction: packets offered to its queue, and packets leaving its far end.
#[derive(Default, Debug)]
struct Counts {
    entered: Vec<u64>,
    left: Vec<u64>,
    last: Time,
    ended: bool,
}

struct CountingTap(Rc<RefCell<Counts>>);

fn bump(v: &mut Vec<u64>, dir: u32) {
    let i = dir as usize;
    if v.len() <= i {
        v.resize(i + 1, 0);
    }
    v[i] += 1;
}

impl PacketTap for CountingTap {
    fn enter(&mut self, now: Time, dir: u32, _to: Endpoint, _p: &Packet) {
        let mut c = self.0.borrow_mut();
        assert!(now >= c.last, "told out of time order");
        c.last = now;
        bump(&mut c.entered, dir);
    }
    fn leave(&mut self, now: Time, dir: u32, _to: Endpoint, _p: &Packet) {
        let mut c = self.0.borrow_mut();
        assert!(now >= c.last, "told out of time order");
        c.last = now;
        bump(&mut c.left, dir);
    }
    fn end(&mut self, _now: Time) {
        self.0.borrow_mut().ended = true;
    }
}

/// The run untapped and tapped: both results, and what the tap counted.
fn both(r: &Resolved) -> (RunResults, RunResults, Counts) {
    let plain = railpath_sim::run(r).expect("untapped run");
    let counts = Rc::new(RefCell::new(Counts::default()));
    let tapped = railpath_sim::run_with_tap(r, &mut |_| {}, Box::new(CountingTap(counts.clone())))
        .expect("tapped run");
    let c = Rc::try_unwrap(counts)
        .expect("the run dropped its tap")
        .into_inner();
    (plain, tapped, c)
}

fn assert_same(a: &RunResults, b: &RunResults) {
    assert_eq!(
        serde_json::to_string(&a.summary).unwrap(),
        serde_json::to_string(&b.summary).unwrap()
    );
    assert_eq!(a.timeseries_csv(), b.timeseries_csv());
}

#[test]
fn a_tap_changes_nothing_on_plain_links() {
    let r = scenario("mptcp-heterogeneous-paths.toml", &["run.duration_s=10"]);
    let (plain, tapped, c) = both(&r);
    assert_same(&plain, &tapped);
    assert!(c.ended);
    // Both directions of both links carried packets, and none left a link it did not enter.
    assert_eq!(c.entered.len(), 4);
    for d in 0..4 {
        assert!(c.left[d] > 0, "direction {d} told of no packet leaving");
        assert!(c.left[d] <= c.entered[d], "direction {d}: {c:?}");
    }
}

#[test]
fn a_tap_changes_nothing_on_a_bonds_filtered_members() {
    // The BOND paper's bond with the AP's duplicate-ACK filter: the ACKs it drops leave their
    // member first (the tap is told), then the filter drops them; nothing else changes.
    let r = scenario(
        "bond/paper.toml",
        &["run.duration_s=10", "bond.bond0.ack_filter=true"],
    );
    let (plain, tapped, c) = both(&r);
    assert_same(&plain, &tapped);
    assert!(
        plain.summary.bonds[0].filtered_acks > 0,
        "the filter dropped no ACK"
    );
    let members = &plain.summary.bonds[0].members;
    assert_eq!(c.left.len(), 2 * members.len());
    for (k, m) in members.iter().enumerate() {
        // Link k's data direction is 2k, its reverse 2k + 1: what the bond gave the member is
        // what entered it.
        assert_eq!(c.entered[2 * k], m.data_packets, "{}", m.link);
        assert_eq!(c.entered[2 * k + 1], m.reverse_packets, "{}", m.link);
        assert!(c.left[2 * k + 1] > 0 && c.left[2 * k + 1] <= c.entered[2 * k + 1]);
    }
}
