//! Unit tests of one MPTCP connection (`super::connection::MptcpFlow`) driven by hand through
//! `super::harness`: data-level reassembly, the data ACK, the receive window, reinjection and
//! MP_PRIO (RFC 8684 sections 3.3.1-3.3.8; Linux net/mptcp for `reinject = "linux"`). Grouped
//! by what they test, each with the arithmetic of its expectations.
//!
//! Every fixture: two subflows, "a" (subflow 0) and "b" (subflow 1); MSS 1000 B; no delayed ACKs
//! and no tail-loss probes (each data segment is ACKed at once, and a subflow's only timer is its
//! RTO: 1 s before an RTT sample, RFC 6298 2.1); uncoupled NewReno (slow start: cwnd + 1 per
//! segment ACKed); the round-robin scheduler, which with both subflows open picks 1, 0, 1, 0, ...
//! (`mptcp_rr.c`: the last subflow with quota left first). The harness's wire has no delay: a
//! packet arrives when the test delivers it.

use super::harness::{ack, acks, seg, segs, Harness, MSS};
use crate::net::packet::Packet;

/// The fixture connection with an initial window of `iw` segments and `extra` flow keys.
fn conn(iw: u32, extra: &str) -> Harness {
    conn_tcp(iw, "", extra)
}

/// The same with more `tcp` keys (`tcp`, written out, then `key = value, ...`).
fn conn_tcp(iw: u32, tcp: &str, extra: &str) -> Harness {
    Harness::new(
        &["a", "b"],
        &format!(
            "cc = \"uncoupled-newreno\"\nscheduler = \"roundrobin\"\n\
             tcp = {{ mss_bytes = {MSS}, initial_window = {iw}, delayed_ack = false, \
             tlp = false{tcp} }}\n{extra}"
        ),
    )
}

/// The data receiver alone (the connection is not started, so its sender sends nothing): a
/// shared receive buffer of 8 segments.
fn receiver() -> Harness {
    conn(10, "receive_buffer_packets = 8")
}

// ===== Data-level reassembly =====================================================================

#[test]
fn out_of_order_dsns_wait_in_the_shared_buffer_until_the_hole_fills() {
    let mut h = receiver();
    // DSN 0 on subflow 0: in order at both levels.
    h.arrive(0, 0, 0);
    assert_eq!(acks(&h.take_acks(0)), [ack(1, 1, 8000)]);
    // DSNs 2 and 3 on subflow 1 (its segments 0 and 1, in order there): held at the data level
    // behind the missing DSN 1; its ACKs carry DATA_ACK 1.
    h.at_ms(10);
    h.arrive(1, 0, 2);
    h.at_ms(15);
    h.arrive(1, 1, 3);
    assert_eq!(acks(&h.take_acks(1)), [ack(1, 1, 8000), ack(2, 1, 8000)]);
    let s = h.summary();
    assert_eq!(
        s.delivered_bytes, 1000,
        "only DSN 0 reached the application"
    );
    assert_eq!(s.receive_buffer.unwrap().max_packets, 2.0, "DSNs 2, 3 held");
    // DSN 1 fills the hole at 30 ms: DSNs 1, 2, 3 go to the application together.
    h.at_ms(30);
    h.arrive(0, 1, 1);
    assert_eq!(acks(&h.take_acks(0)), [ack(2, 4, 8000)]);
    let s = h.summary();
    assert_eq!(s.delivered_bytes, 4000);
    // Reordering delay, arrival to delivery: DSN 0 0 ms, DSN 1 0 ms, DSN 2 30 - 10 = 20 ms,
    // DSN 3 30 - 15 = 15 ms: average 35 / 4 = 8.75 ms, maximum 20 ms.
    let r = s.reorder_delay_ms.unwrap();
    assert_eq!((r.avg, r.max), (8.75, 20.0));
}

#[test]
fn a_second_copy_of_a_delivered_dsn_is_not_delivered_again() {
    // What a reinjection (or the redundant scheduler) produces: the same DSN on both subflows.
    let mut h = receiver();
    h.arrive(0, 0, 0);
    h.at_ms(5);
    h.arrive(1, 0, 0);
    // Subflow 1 ACKs its own segment 0; the data level still expects DSN 1.
    assert_eq!(acks(&h.take_acks(0)), [ack(1, 1, 8000)]);
    assert_eq!(acks(&h.take_acks(1)), [ack(1, 1, 8000)]);
    let s = h.summary();
    assert_eq!(s.delivered_bytes, 1000, "delivered once");
    // One delivery, after 0 ms.
    assert_eq!(s.reorder_delay_ms.unwrap().max, 0.0);
}

#[test]
fn a_subflow_hole_holds_data_before_the_data_level_sees_it() {
    let mut h = receiver();
    // Subflow 0's segment 1 (DSN 1) before its segment 0: held by the subflow, SACKed; the data
    // level has seen nothing, DATA_ACK stays 0.
    h.arrive(0, 1, 1);
    assert_eq!(acks(&h.take_acks(0)), [ack(0, 0, 8000).sack(&[(1, 2)])]);
    // DSN 2 on subflow 1 at 5 ms: in order there, held at the data level. The receive buffer
    // then holds 2 segments: DSN 2 (data level) + subflow 0's segment 1.
    h.at_ms(5);
    h.arrive(1, 0, 2);
    assert_eq!(acks(&h.take_acks(1)), [ack(1, 0, 8000)]);
    assert_eq!(h.summary().receive_buffer.unwrap().max_packets, 2.0);
    // Subflow 0's segment 0 (DSN 0) at 10 ms releases its segment 1 (DSN 1), then DSN 2 follows.
    h.at_ms(10);
    h.arrive(0, 0, 0);
    assert_eq!(acks(&h.take_acks(0)), [ack(2, 3, 8000)]);
    let s = h.summary();
    assert_eq!(s.delivered_bytes, 3000);
    // From arrival at the receiver: DSN 0 0 ms, DSN 1 10 - 0 = 10 ms, DSN 2 10 - 5 = 5 ms:
    // average 15 / 3 = 5 ms, maximum 10 ms.
    let r = s.reorder_delay_ms.unwrap();
    assert_eq!((r.avg, r.max), (5.0, 10.0));
}

// ===== The data ACK ==============================================================================

#[test]
fn every_subflow_ack_carries_the_connection_data_ack() {
    // A bulk sender and an 8-segment receive buffer: the window allows DSNs 0..8 at start, dealt
    // 1, 0, 1, 0, ...: subflow 1 carries the even DSNs, subflow 0 the odd.
    let mut h = conn(10, "receive_buffer_packets = 8");
    h.start();
    let d0 = h.take_data(0);
    let d1 = h.take_data(1);
    assert_eq!(segs(&d0), [seg(0, 1), seg(1, 3), seg(2, 5), seg(3, 7)]);
    assert_eq!(segs(&d1), [seg(0, 0), seg(1, 2), seg(2, 4), seg(3, 6)]);
    assert_eq!(h.on_wire(), 0);
    // Subflow 0's data first: in order at its level (ACK 1..4), all held at the data level behind
    // DSN 0: DATA_ACK 0 on each.
    h.at_ms(10);
    h.deliver_all(&d0);
    let a0 = h.take_acks(0);
    assert_eq!(
        acks(&a0),
        [
            ack(1, 0, 8000),
            ack(2, 0, 8000),
            ack(3, 0, 8000),
            ack(4, 0, 8000)
        ]
    );
    // Then subflow 1's: DSN 0 releases 0, 1 (DATA_ACK 2), DSN 2 releases 2, 3 (4), and so on:
    // subflow 1's ACKs carry what subflow 0 delivered too.
    h.at_ms(20);
    h.deliver_all(&d1);
    let a1 = h.take_acks(1);
    assert_eq!(
        acks(&a1),
        [
            ack(1, 2, 8000),
            ack(2, 4, 8000),
            ack(3, 6, 8000),
            ack(4, 8, 8000)
        ]
    );
    // At the sender, the newest DATA_ACK (8) opens the window to 8 + 8 = 16: DSNs 8..16, dealt
    // 1, 0, ... again (subflow 1: cwnd 10 + 4 = 14, nothing in flight; subflow 0: 4 of 10 in
    // flight, room for 6, takes 4).
    h.at_ms(30);
    h.deliver(&a1[3]);
    assert_eq!(
        segs(&h.take_data(1)),
        [seg(4, 8), seg(5, 10), seg(6, 12), seg(7, 14)]
    );
    assert_eq!(
        segs(&h.take_data(0)),
        [seg(4, 9), seg(5, 11), seg(6, 13), seg(7, 15)]
    );
    assert_eq!(h.on_wire(), 0);
}

#[test]
fn a_late_older_data_ack_does_not_pull_the_window_back() {
    // Initial windows of 2 and a 6-segment buffer: the cwnds limit first: DSNs 0..4 at start.
    let mut h = conn(2, "receive_buffer_packets = 6");
    h.start();
    let d0 = h.take_data(0);
    let d1 = h.take_data(1);
    assert_eq!(segs(&d0), [seg(0, 1), seg(1, 3)]);
    assert_eq!(segs(&d1), [seg(0, 0), seg(1, 2)]);
    // Subflow 1's data first (DSN 0: DATA_ACK 1; DSN 2 held: 1), then subflow 0's (DSN 1
    // releases 1, 2: 3; DSN 3: 4).
    h.at_ms(10);
    h.deliver_all(&d1);
    h.deliver_all(&d0);
    let a1 = h.take_acks(1);
    let a0 = h.take_acks(0);
    assert_eq!(acks(&a1), [ack(1, 1, 6000), ack(2, 1, 6000)]);
    assert_eq!(acks(&a0), [ack(1, 3, 6000), ack(2, 4, 6000)]);
    // Subflow 0's last ACK reaches the sender first: DATA_ACK 4, right edge 4 + 6 = 10; subflow
    // 0's cwnd 2 + 2 = 4, all free, takes DSNs 4..8 (subflow 1 is full).
    h.at_ms(20);
    h.deliver(&a0[1]);
    assert_eq!(
        segs(&h.take_data(0)),
        [seg(2, 4), seg(3, 5), seg(4, 6), seg(5, 7)]
    );
    assert_eq!(h.on_wire(), 0);
    // Then subflow 1's first ACK, late: it frees subflow 1's cwnd (3, 1 in flight) and carries
    // the older DATA_ACK 1 (1 + 6 = 7). The right edge stays 10: DSNs 8, 9 go on subflow 1.
    h.deliver(&a1[0]);
    assert_eq!(segs(&h.take_data(1)), [seg(2, 8), seg(3, 9)]);
    assert_eq!(h.on_wire(), 0);
}

// ===== The receive window ========================================================================

#[test]
fn the_window_is_one_buffer_beyond_the_data_ack_and_a_slow_subflow_blocks_the_line() {
    // A 4-segment buffer and cwnds of 10: the data-level window, not the cwnds, limits.
    let mut h = conn(10, "receive_buffer_packets = 4");
    h.start();
    // Right edge at start: 0 + 4: DSNs 0..4 only, though 20 segments of cwnd are free.
    let d0 = h.take_data(0);
    let d1 = h.take_data(1);
    assert_eq!(segs(&d0), [seg(0, 1), seg(1, 3)]);
    assert_eq!(segs(&d1), [seg(0, 0), seg(1, 2)]);
    // Subflow 0 is fast: DSNs 1 and 3 arrive and wait for DSN 0. The window advertised is the
    // whole buffer, 4 x 1000 B, relative to DATA_ACK 0: the held segments lie inside it.
    h.at_ms(10);
    h.deliver_all(&d0);
    let a0 = h.take_acks(0);
    assert_eq!(acks(&a0), [ack(1, 0, 4000), ack(2, 0, 4000)]);
    // At the sender, subflow 0 has all its cwnd free (12 segments) but the right edge is still
    // 0 + 4: head-of-line blocking, nothing is sent.
    h.at_ms(20);
    h.deliver_all(&a0);
    assert_eq!(h.on_wire(), 0);
    assert_eq!(h.flow.subflows[0].sender.in_flight(), 0);
    // Subflow 1 is slow: DSN 0 at 30 ms releases DSNs 0, 1; DSN 2 releases 2, 3.
    h.at_ms(30);
    h.deliver_all(&d1);
    let a1 = h.take_acks(1);
    assert_eq!(acks(&a1), [ack(1, 2, 4000), ack(2, 4, 4000)]);
    // Each DATA_ACK moves the right edge: 2 + 4 = 6 lets DSNs 4, 5 go (dealt 1, 0), then
    // 4 + 4 = 8 lets DSNs 6, 7 go.
    h.at_ms(40);
    h.deliver(&a1[0]);
    assert_eq!(segs(&h.take_data(1)), [seg(2, 4)]);
    assert_eq!(segs(&h.take_data(0)), [seg(2, 5)]);
    h.deliver(&a1[1]);
    assert_eq!(segs(&h.take_data(1)), [seg(3, 6)]);
    assert_eq!(segs(&h.take_data(0)), [seg(3, 7)]);
    assert_eq!(h.on_wire(), 0);
}

#[test]
fn an_autotuned_window_shrinks_by_the_data_held_out_of_order() {
    // Dynamic right-sizing from tcp_rmem[1] = 8000 B: window = 8000 / 2 = 4000 B
    // (`win_from_space`). It cannot grow here: the receiver has no RTT estimate (its subflows'
    // senders have no sample), and right-sizing measures once per RTT.
    let mut h = conn_tcp(
        10,
        ", rmem_bytes = [4096, 8000, 100000]",
        "receive_buffer_autotune = true",
    );
    // Held out of order data is charged to the buffer (`__mptcp_space()`): DSN 1 held: 4000 -
    // 1000; DSN 2 too: 4000 - 2000.
    h.arrive(1, 0, 1);
    h.arrive(1, 1, 2);
    assert_eq!(acks(&h.take_acks(1)), [ack(1, 0, 3000), ack(2, 0, 2000)]);
    // DSN 0 delivers 0, 1, 2: nothing held, the whole window again, relative to DATA_ACK 3.
    h.arrive(0, 0, 0);
    assert_eq!(acks(&h.take_acks(0)), [ack(1, 3, 4000)]);
}

// ===== Reinjection ===============================================================================

/// A 4-segment transfer (DSNs 0..4) with an 8-segment buffer, started: subflow 1 carries DSNs
/// 0, 2 and subflow 0 DSNs 1, 3. Subflow 1's segments are lost (never delivered); subflow 0's
/// arrive at 10 ms and their ACKs (DATA_ACK 0: DSN 0 is missing) reach the sender at 20 ms.
fn subflow_1_lost(reinject: &str) -> Harness {
    let mut h = conn(
        10,
        &format!("bytes = 4000\nreceive_buffer_packets = 8\nreinject = \"{reinject}\""),
    );
    h.start();
    assert_eq!(segs(&h.take_data(1)), [seg(0, 0), seg(1, 2)]);
    let d0 = h.take_data(0);
    assert_eq!(segs(&d0), [seg(0, 1), seg(1, 3)]);
    h.at_ms(10);
    h.deliver_all(&d0);
    let a0 = h.take_acks(0);
    assert_eq!(acks(&a0), [ack(1, 0, 8000), ack(2, 0, 8000)]);
    h.at_ms(20);
    h.deliver_all(&a0);
    assert_eq!(h.on_wire(), 0);
    h
}

#[test]
fn rto_rule_reinjects_a_timed_out_subflows_data_on_the_other() {
    let mut h = subflow_1_lost("rto");
    // Subflow 1 has no RTT sample: its RTO is the initial 1 s. Nothing happens before.
    h.at_ms(999);
    assert_eq!(h.on_wire(), 0);
    // At 1 s it times out: it resends its head itself (cwnd 1), is marked potentially failed,
    // and its unacknowledged DSNs 0, 2 are queued for reinjection on subflow 0, where they are
    // new segments 2, 3 (cwnd 10 + 2, nothing in flight).
    h.at_ms(1000);
    assert_eq!(segs(&h.take_data(1)), [seg(0, 0).again()]);
    let d0 = h.take_data(0);
    assert_eq!(segs(&d0), [seg(2, 0), seg(3, 2)]);
    assert!(h.flow.subflows[1].failed);
    // The reinjected data completes the transfer: DSN 0 releases 0, 1; DSN 2 releases 2, 3.
    h.at_ms(1010);
    h.deliver_all(&d0);
    assert_eq!(acks(&h.take_acks(0)), [ack(3, 2, 8000), ack(4, 4, 8000)]);
    let s = h.summary();
    assert_eq!((s.delivered_bytes, s.fct_s), (4000, Some(1.01)));
    // Retransmissions: subflow 1's own 1 + 2 reinjections.
    assert_eq!(s.retransmitted_packets, 3);
    assert_eq!(s.subflows.as_ref().unwrap()[1].retransmitted_packets, 1);
    assert_eq!(h.on_wire(), 0);
}

#[test]
fn rto_rule_subflow_usable_again_once_it_makes_progress() {
    let mut h = subflow_1_lost("rto");
    h.at_ms(1000);
    let r1 = h.take_data(1);
    assert_eq!(segs(&r1), [seg(0, 0).again()]);
    let d0 = h.take_data(0);
    assert!(h.flow.subflows[1].failed);
    // The retransmission on subflow 1 arrives first: DSN 0 releases the held DSN 1 (DATA_ACK
    // 2), and its ACK is progress at subflow level: snd_una advances, the failure mark clears.
    h.at_ms(1010);
    h.deliver_all(&r1);
    let a1 = h.take_acks(1);
    assert_eq!(acks(&a1), [ack(1, 2, 8000)]);
    h.deliver_all(&a1);
    assert!(!h.flow.subflows[1].failed);
    // Subflow 1 goes on recovering its own loss: after the RTO its cwnd is 1 and both its
    // segments were marked lost; the ACK of segment 0 (slow start: cwnd 2, nothing in flight)
    // lets it resend segment 1 (DSN 2).
    assert_eq!(segs(&h.take_data(1)), [seg(1, 2).again()]);
    // The reinjected copies on subflow 0 are then copies too: DSN 0 changes nothing (DATA_ACK
    // stays 2), DSN 2 releases 2, 3.
    h.deliver_all(&d0);
    assert_eq!(acks(&h.take_acks(0)), [ack(3, 2, 8000), ack(4, 4, 8000)]);
    assert_eq!(h.summary().delivered_bytes, 4000);
}

#[test]
fn linux_rule_resends_the_head_fragment_on_a_subflow_whose_queues_are_empty() {
    let mut h = subflow_1_lost("linux");
    // At 1 s the MPTCP-level retransmit timer (armed at the first push with the longest subflow
    // timer left, 1 s) fires first: subflow 1 had data out and no ACK in the interval
    // (stale_count 1, not stale: at most stale_loss_cnt = 4), subflow 0 has empty queues, so
    // `mptcp_subflow_get_retrans()` picks it and `__mptcp_retrans()` resends the head data
    // fragment: 32 KiB / 1000 B = 32 segments from DSN 0, capped by what was sent: DSNs 0..4,
    // those the receiver holds (1, 3) included. Then subflow 1's own RTO resends its head on
    // subflow 1: a subflow timeout reinjects nothing under this rule.
    h.at_ms(999);
    assert_eq!(h.on_wire(), 0);
    h.at_ms(1000);
    let d0 = h.take_data(0);
    assert_eq!(segs(&d0), [seg(2, 0), seg(3, 1), seg(4, 2), seg(5, 3)]);
    assert_eq!(segs(&h.take_data(1)), [seg(0, 0).again()]);
    assert!(
        !h.flow.subflows[1].failed,
        "no failure mark under this rule"
    );
    // At the receiver: DSN 0 releases 0, 1 (DATA_ACK 2), DSN 1 is a copy (2), DSN 2 releases
    // 2, 3 (4), DSN 3 is a copy (4).
    h.at_ms(1010);
    h.deliver_all(&d0);
    assert_eq!(
        acks(&h.take_acks(0)),
        [
            ack(3, 2, 8000),
            ack(4, 2, 8000),
            ack(5, 4, 8000),
            ack(6, 4, 8000)
        ]
    );
    // Retransmissions: subflow 1's 1 + 4 resent at the MPTCP level.
    assert_eq!(h.summary().retransmitted_packets, 5);
}

#[test]
fn linux_rule_resends_nothing_while_every_subflow_is_busy() {
    // Both subflows' data is lost: at 1 s neither has empty queues, so the MPTCP-level timer
    // resends nothing (the rto rule would reinject here); each subflow's RTO resends its own
    // head.
    let mut h = conn(
        10,
        "bytes = 4000\nreceive_buffer_packets = 8\nreinject = \"linux\"",
    );
    h.start();
    assert_eq!(segs(&h.take_data(0)), [seg(0, 1), seg(1, 3)]);
    assert_eq!(segs(&h.take_data(1)), [seg(0, 0), seg(1, 2)]);
    h.at_ms(1000);
    assert_eq!(segs(&h.take_data(0)), [seg(0, 1).again()]);
    assert_eq!(segs(&h.take_data(1)), [seg(0, 0).again()]);
    assert_eq!(h.on_wire(), 0);
    assert_eq!(h.summary().retransmitted_packets, 2, "no reinjection");
}

// ===== MP_PRIO (RFC 8684 3.3.8) ==================================================================

/// A bulk transfer with initial windows of 2 and a 100-segment buffer, and `prio` as its
/// `prio_changes`; started: DSNs 0, 2 on subflow 1, DSNs 1, 3 on subflow 0, both cwnds full.
/// Returns the data of subflows 0 and 1.
fn prio_fixture(prio: &str) -> (Harness, Vec<Packet>, Vec<Packet>) {
    let mut h = conn(
        2,
        &format!("receive_buffer_packets = 100\nprio_changes = [{prio}]"),
    );
    h.start();
    let d0 = h.take_data(0);
    let d1 = h.take_data(1);
    assert_eq!(segs(&d0), [seg(0, 1), seg(1, 3)]);
    assert_eq!(segs(&d1), [seg(0, 0), seg(1, 2)]);
    (h, d0, d1)
}

#[test]
fn receiver_mp_prio_goes_out_on_an_ack_and_applies_when_it_arrives() {
    let (mut h, d0, d1) =
        prio_fixture("{ t_s = 0.5, path = \"b\", backup = true, by = \"receiver\" }");
    // At 0.5 s the data receiver sends MP_PRIO(B=1) naming subflow 1, on subflow 1's ACK path
    // (a pure ACK: nothing received yet, ACK 0, DATA_ACK 0). The sender does not know yet.
    h.at_ms(500);
    let prio = h.take_acks(1);
    assert_eq!(prio.len(), 1);
    let a = &acks(&prio)[0];
    assert_eq!((a.ack, a.data_ack, a.mp_prio), (0, 0, Some((1, true))));
    assert_eq!(h.on_wire(), 0);
    assert!(!h.flow.subflows[1].backup);
    // The data arrives: subflow 0's DSNs 1, 3 are held; subflow 1's DSN 0 releases 0, 1 and
    // DSN 2 releases 2, 3.
    h.at_ms(510);
    h.deliver_all(&d0);
    h.deliver_all(&d1);
    let a0 = h.take_acks(0);
    let a1 = h.take_acks(1);
    assert_eq!(acks(&a0), [ack(1, 0, 100_000), ack(2, 0, 100_000)]);
    assert_eq!(acks(&a1), [ack(1, 2, 100_000), ack(2, 4, 100_000)]);
    // Subflow 1's first ACK reaches the sender before the MP_PRIO: subflow 1 is still regular
    // and the only one with room (cwnd 3, 1 in flight): DSNs 4, 5 go on it.
    h.at_ms(520);
    h.deliver(&a1[0]);
    assert_eq!(segs(&h.take_data(1)), [seg(2, 4), seg(3, 5)]);
    // The MP_PRIO arrives: subflow 1 is a backup from now on.
    h.at_ms(530);
    h.deliver(&prio[0]);
    assert!(h.flow.subflows[1].backup);
    assert_eq!(h.on_wire(), 0);
    // Subflow 1's next ACK opens its cwnd (4, 2 in flight) but a backup gets no new data while
    // a regular subflow is usable, even one without room: the scheduler waits for subflow 0.
    h.deliver(&a1[1]);
    assert_eq!(h.on_wire(), 0);
    // Subflow 0's ACKs open its cwnd: 3 with 1 in flight, then 4 with 2: DSNs 6, 7, then 8, 9.
    h.deliver_all(&a0);
    assert_eq!(
        segs(&h.take_data(0)),
        [seg(2, 6), seg(3, 7), seg(4, 8), seg(5, 9)]
    );
    assert_eq!(h.on_wire(), 0);
}

#[test]
#[ignore = "defect, reported: the MP_PRIO ACK advertises the subflow's tcp.receive_window_bytes \
            (6 MiB), not the data-level window every other ACK carries; the sender ignores an \
            MP_PRIO ACK's window, so no output changes, but a packet capture shows it"]
fn receiver_mp_prio_ack_advertises_the_data_level_window() {
    let (mut h, _, _) =
        prio_fixture("{ t_s = 0.5, path = \"b\", backup = true, by = \"receiver\" }");
    h.at_ms(500);
    // As every ACK of this connection: the 100-segment buffer, 100 x 1000 B, relative to
    // DATA_ACK 0 (Linux sends MP_PRIO on an ordinary ACK of the subflow, with its window).
    assert_eq!(acks(&h.take_acks(1)), [ack(0, 0, 100_000).mp_prio(1, true)]);
}

#[test]
fn sender_mp_prio_applies_at_once_without_a_packet() {
    let (mut h, d0, d1) =
        prio_fixture("{ t_s = 0.5, path = \"b\", backup = true, by = \"sender\" }");
    h.at_ms(500);
    assert!(h.flow.subflows[1].backup, "in force at 0.5 s");
    assert_eq!(h.on_wire(), 0, "the data sender's own change sends nothing");
    // As above, subflow 1's ACKs give it room (cwnd 4, nothing in flight) and no data.
    h.at_ms(510);
    h.deliver_all(&d1);
    let a1 = h.take_acks(1);
    h.deliver_all(&a1);
    assert_eq!(h.on_wire(), 0);
    // Subflow 0's ACKs: DSNs 4, 5, then 6, 7 on subflow 0.
    h.deliver_all(&d0);
    let a0 = h.take_acks(0);
    h.deliver_all(&a0);
    assert_eq!(
        segs(&h.take_data(0)),
        [seg(2, 4), seg(3, 5), seg(4, 6), seg(5, 7)]
    );
    assert_eq!(h.on_wire(), 0);
}

#[test]
fn a_backup_carries_data_only_when_no_regular_subflow_is_usable() {
    // Subflow 1 ("b") starts as backup: all data goes on subflow 0 (cwnd 2: DSNs 0, 1), none on
    // the backup though its cwnd is free.
    let mut h = conn(2, "receive_buffer_packets = 100\nbackup_paths = [\"b\"]");
    h.start();
    assert_eq!(segs(&h.take_data(0)), [seg(0, 0), seg(1, 1)]);
    assert_eq!(h.on_wire(), 0);
    // Subflow 0's data is lost; at its RTO (1 s) it is marked potentially failed and its DSNs
    // 0, 1 are reinjected: with no regular subflow usable, on the backup (its cwnd 2: both).
    h.at_ms(1000);
    assert_eq!(segs(&h.take_data(0)), [seg(0, 0).again()]);
    let d1 = h.take_data(1);
    assert_eq!(segs(&d1), [seg(0, 0), seg(1, 1)]);
    assert_eq!(h.on_wire(), 0);
    // Its ACKs bring new data onto the backup while subflow 0 is still failed: DSN 0 releases
    // DATA_ACK 1, DSN 1 DATA_ACK 2; at the sender, backup cwnd 3 then 4: DSNs 2, 3, then 4, 5.
    h.at_ms(1010);
    h.deliver_all(&d1);
    let a1 = h.take_acks(1);
    assert_eq!(acks(&a1), [ack(1, 1, 100_000), ack(2, 2, 100_000)]);
    h.deliver_all(&a1);
    assert_eq!(
        segs(&h.take_data(1)),
        [seg(2, 2), seg(3, 3), seg(4, 4), seg(5, 5)]
    );
}

// ===== The scheduler asked once per run of segments ==============================================

/// One run of a minRTT connection over a small network the test plays: subflow "a" 10-14 ms one
/// way, "b" 30-50 ms, each packet lost with probability `loss_pct` %, arrivals in time order (so
/// packets on a path may overtake each other); with `outages`, "a" carries nothing for 1.5 s in
/// every 6 s (its subflow times out, its data is reinjected on "b", then it recovers). Two
/// connections, the second changed by `other` (a shortcut turned off), go in lockstep: what
/// both put on the wire and every subflow sender's timer deadline must be the same after every
/// step.
fn lockstep(
    seed: u64,
    loss_pct: u64,
    outages: bool,
    extra: &str,
    other: fn(&mut crate::mptcp::connection::MptcpFlow),
) {
    use railpath_core::{Rng, Time};
    let flow = format!(
        "cc = \"lia\"\nscheduler = \"minrtt\"\n\
         tcp = {{ mss_bytes = {MSS}, initial_window = 10 }}\n{extra}"
    );
    let mut x = Harness::new(&["a", "b"], &flow);
    let mut y = Harness::new(&["a", "b"], &flow);
    assert!(
        x.flow.reuse_pick,
        "minRTT with a light snapshot reuses its pick"
    );
    assert!(x.flow.burst_sends, "new segments go out in bursts");
    other(&mut y.flow);
    x.start();
    y.start();
    let mut rng = Rng::stream(seed, "reuse-lockstep");
    let mut pending: Vec<(Time, u64, Packet)> = Vec::new();
    let mut order = 0u64;
    let mut sent = 0usize;
    for step in 0..20_000 {
        let a = std::mem::take(&mut x.net.wire);
        let b = std::mem::take(&mut y.net.wire);
        assert_eq!(a, b, "seed {seed} step {step}");
        // The receivers' out-of-order count kept in step is their sum.
        assert_eq!(x.flow.subflow_ooo, x.flow.subflow_held(), "step {step}");
        for (sx, sy) in x.flow.subflows.iter().zip(&y.flow.subflows) {
            assert_eq!(
                sx.sender.xmit_deadline(),
                sy.sender.xmit_deadline(),
                "seed {seed} step {step}"
            );
            // The wake-up armed for it (what `arm_sender` last scheduled).
            assert_eq!(sx.sender.armed, sy.sender.armed, "seed {seed} step {step}");
        }
        sent += a.len();
        for p in a {
            let dark = outages && p.route / 2 == 0 && x.now().us() / 1000 % 3000 >= 2000;
            if rng.next_u64() % 100 < loss_pct || dark {
                continue;
            }
            // Routes 2j (data) and 2j + 1 (ACKs) belong to subflow j.
            let ms = if p.route / 2 == 0 {
                10 + rng.next_u64() % 5
            } else {
                30 + rng.next_u64() % 21
            };
            pending.push((x.now() + Time::from_ms(ms), order, p));
            order += 1;
        }
        // The earliest arrival (ties in sending order); with nothing in flight, time passes
        // until a timer sends again.
        let first = pending
            .iter()
            .enumerate()
            .min_by_key(|(_, (t, o, _))| (*t, *o))
            .map(|(k, _)| k);
        match first {
            Some(k) => {
                let (t, _, p) = pending.remove(k);
                x.advance_to(t);
                y.advance_to(t);
                x.deliver(&p);
                y.deliver(&p);
            }
            None => {
                let t = x.now() + Time::from_ms(200);
                x.advance_to(t);
                y.advance_to(t);
            }
        }
    }
    assert!(
        sent > 15_000,
        "seed {seed}: the run carried traffic ({sent} packets)"
    );
    assert_eq!(x.summary(), y.summary(), "seed {seed}");
}

/// [`lockstep`] without loss, with loss, with a send buffer that runs out between two segments
/// of one push, and with outages (timeouts: the reinjected segments hide the subflow they came
/// from from the scheduler, which must clear a reused pick; tail-loss probes and RTOs).
fn lockstep_cases(other: fn(&mut crate::mptcp::connection::MptcpFlow)) {
    for seed in 0..3 {
        lockstep(seed, 0, false, "", other);
        lockstep(seed, 3, false, "", other);
        lockstep(seed, 2, false, "send_buffer_packets = 12", other);
        lockstep(seed, 1, true, "", other);
        lockstep(seed, 1, true, "reinject = \"stale\"", other);
    }
}

#[test]
fn reusing_a_pure_schedulers_pick_sends_what_asking_each_time_sends() {
    lockstep_cases(|f| f.reuse_pick = false);
}

#[test]
fn the_loop_for_new_data_only_sends_what_the_general_loop_sends() {
    // With no reinjection queued a push takes `push_new_data` (its own loop, which keeps the
    // entries that can take a segment as a bit mask); the general loop must send the same.
    // The outage cases queue reinjections, so both loops alternate there.
    lockstep_cases(|f| f.fast_new_data = false);
}

#[test]
fn a_burst_of_new_segments_leaves_the_senders_as_one_send_each() {
    // The loss probe scheduled once per run of new segments on a subflow, or after each: the
    // same packets and the same timer deadlines (a probe deadline moved by the burst would
    // show as a deadline here, and later as a probe sent at another time).
    lockstep_cases(|f| f.burst_sends = false);
}
