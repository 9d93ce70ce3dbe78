//! A simulator run's capture: it leaves the run as it was, it is reproducible, the analysis
//! of it gives the run's own counts, delivery and stalls, and tshark dissects it.

mod common;

use railpath_capture::analyze::series_stalls;
use railpath_capture::{AnalyzeOptions, CaptureOptions, Format};
use railpath_sim::results::RunResults;
use std::path::{Path, PathBuf};

fn load(rel: &str, overrides: &[&str]) -> railpath_scenario::Scenario {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    railpath_scenario::load(&common::repo().join(rel), &o).unwrap()
}

fn capture(s: &railpath_scenario::Scenario, dir: &Path, format: Format) -> RunResults {
    let o = CaptureOptions {
        dir: dir.to_path_buf(),
        format,
        snaplen: CaptureOptions::DEFAULT_SNAPLEN,
    };
    railpath_capture::run_with_capture(&s.validate().unwrap(), &mut |_| {}, &o)
        .unwrap()
        .0
}

fn names(s: &railpath_scenario::Scenario) -> AnalyzeOptions {
    AnalyzeOptions {
        flow_names: s.flows.iter().map(|f| f.id.clone()).collect(),
        bin_s: s.run.bin_ms / 1000.0,
        duration_s: Some(s.run.duration_s),
        ..Default::default()
    }
}

fn series<'a>(r: &'a RunResults, flow: &str, sub: &str) -> &'a [f64] {
    &r.series
        .iter()
        .find(|x| x.flow == flow && x.subflow == sub && x.metric == "goodput_bps")
        .unwrap_or_else(|| panic!("no goodput series {flow}/{sub}"))
        .values
}

#[test]
fn the_mptcp_capture_gives_the_runs_counts_delivery_and_stalls() {
    let s = load("scenarios/mptcp-backup-outage.toml", &[]);
    let dir = common::scratch("sim-mptcp");
    let with = capture(&s, &dir, Format::Pcapng);
    // The capture changes nothing of the run.
    let without = railpath_sim::run(&s.validate().unwrap()).unwrap();
    assert_eq!(with, without);
    let a = railpath_capture::analyze(std::slice::from_ref(&dir), &names(&s)).unwrap();
    assert_eq!(a.summary.points.len(), 4, "{:?}", a.summary.points);
    let (f, sim) = (&a.summary.flows[0], &with.summary.flows[0]);
    assert_eq!(a.summary.flows.len(), 1);
    assert_eq!((f.id.as_str(), f.kind), ("m", "mptcp"));
    assert_eq!(f.sent_packets, sim.sent_packets);
    // The summary counts a flow's reinjections with its retransmissions.
    assert_eq!(f.retransmitted_packets, sim.retransmitted_packets);
    assert!(
        f.reinjected_packets > 0,
        "the outage makes the sender reinject"
    );
    assert_eq!(f.delivered_bytes, sim.delivered_bytes);
    let subs = sim.subflows.as_ref().unwrap();
    for (x, y) in f.subflows.iter().zip(subs) {
        assert_eq!(x.id, y.id);
        assert_eq!(
            (x.sent_packets, x.retransmitted_packets),
            (y.sent_packets, y.retransmitted_packets),
            "subflow {}",
            x.id
        );
    }
    // The in-order stream bin by bin, and its stalls.
    let g = |r: &railpath_capture::Analysis, sub: &str| {
        r.series
            .iter()
            .find(|x| x.flow == "m" && x.subflow == sub && x.metric == "goodput_bps")
            .unwrap()
            .values
            .clone()
    };
    assert_eq!(g(&a, ""), series(&with, "m", ""));
    assert_eq!(g(&a, "a"), series(&with, "m", "a"));
    assert_eq!(g(&a, "b"), series(&with, "m", "b"));
    let bin = s.run.bin_ms / 1000.0;
    let stalls = series_stalls(series(&with, "m", ""), bin, 0.2);
    assert!(!stalls.is_empty(), "the 5 s outage of a stalls the stream");
    assert_eq!(series_stalls(&g(&a, ""), bin, 0.2), stalls);
    // Packet-level stalls lie within a bin of the binned ones.
    for st in &stalls {
        assert!(
            f.stalls
                .iter()
                .any(|p| (p.start_s - st.start_s).abs() <= bin + 1e-9
                    && p.duration_s + bin + 1e-9 >= st.duration_s),
            "{st:?} in {:?}",
            f.stalls
        );
    }
    // The scenario's two MP_PRIO changes, from the receiver on subflow b.
    let prio: Vec<(f64, &str, bool)> = f
        .mp_prio
        .iter()
        .map(|p| (p.t_s, p.subflow.as_str(), p.backup))
        .collect();
    assert_eq!(prio, vec![(20.0, "b", false), (25.0, "b", true)]);
    assert!(f.subflows[1].backup_at_join);
    // RTT samples: at least the links' two-way delay (a: 2 x 25 ms).
    let rtt = f.subflows[0].rtt.unwrap();
    assert!(rtt.min_ms >= 50.0 && rtt.samples > 1000, "{rtt:?}");
}

#[test]
fn finite_transfers_map_short_segments_to_bytes_and_captures_repeat() {
    // Three 1 MB page loads (1 MB is not a multiple of the MSS: each ends in a short segment),
    // in pcap files, captured twice.
    let s = load("scenarios/tcp-rate-schedule.toml", &[]);
    let one = common::scratch("sim-tcp-1");
    let two = common::scratch("sim-tcp-2");
    let r = capture(&s, &one, Format::Pcap);
    capture(&s, &two, Format::Pcap);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&one)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2 * s.links.len());
    for f in &files {
        let g = two.join(f.file_name().unwrap());
        assert!(
            std::fs::read(f).unwrap() == std::fs::read(&g).unwrap(),
            "{} differs between two captures of one run",
            f.display()
        );
    }
    let a = railpath_capture::analyze(&[one], &names(&s)).unwrap();
    for sim in &r.summary.flows {
        let f = a
            .summary
            .flows
            .iter()
            .find(|f| f.id == sim.id)
            .unwrap_or_else(|| panic!("flow {} not found", sim.id));
        assert_eq!(f.kind, "tcp");
        assert_eq!(
            (f.delivered_bytes, f.sent_packets, f.retransmitted_packets),
            (
                sim.delivered_bytes,
                sim.sent_packets,
                sim.retransmitted_packets
            ),
            "flow {}",
            sim.id
        );
        let g = &a
            .series
            .iter()
            .find(|x| x.flow == sim.id && x.subflow.is_empty())
            .unwrap()
            .values;
        assert_eq!(g.as_slice(), series(&r, &sim.id, ""), "flow {}", sim.id);
    }
}

#[test]
fn tshark_reads_the_run_as_mptcp_with_the_runs_counts() {
    if !common::tshark_available("tshark_reads_the_run_as_mptcp_with_the_runs_counts") {
        return;
    }
    let s = load("scenarios/mptcp-backup-outage.toml", &[]);
    let dir = common::scratch("sim-tshark");
    let r = capture(&s, &dir, Format::Pcapng);
    let sim = &r.summary.flows[0];
    let subs = sim.subflows.as_ref().unwrap();
    for end in ["sender", "receiver"] {
        let p = dir.join(format!("{end}.pcapng"));
        assert_eq!(common::tshark_malformed(&p), 0, "{end}");
    }
    let p = dir.join("sender.pcapng");
    // Every data segment with its subflow (TCP stream), MPTCP stream and relative DSN.
    let rows = common::tshark_fields(
        &p,
        "tcp.len > 0",
        &[
            "tcp.stream",
            "tcp.seq",
            "tcp.len",
            "mptcp.stream",
            "mptcp.dsn",
        ],
    );
    let mut sent = [0u64; 2];
    let mut retrans = [0u64; 2];
    let mut high = [0u64; 2];
    for row in &rows {
        let k: usize = row[0].parse().unwrap();
        let end: u64 = row[1].parse::<u64>().unwrap() + row[2].parse::<u64>().unwrap();
        sent[k] += 1;
        if end <= high[k] {
            retrans[k] += 1;
        } else {
            high[k] = end;
        }
        assert_eq!(row[3], "0", "one MPTCP connection");
        assert!(!row[4].is_empty(), "a data sequence number mapped");
    }
    for k in 0..2 {
        assert_eq!(
            (sent[k], retrans[k]),
            (subs[k].sent_packets, subs[k].retransmitted_packets),
            "subflow {}",
            subs[k].id
        );
    }
    // Wireshark's MPTCP analysis sees both subflows in the connection.
    let s1 = common::tshark_fields(
        &p,
        "tcp.stream == 1 && tcp.len > 0",
        &["mptcp.analysis.subflows"],
    );
    assert!(s1.iter().all(|r| r[0].contains('0') && r[0].contains('1')));
    // The two MP_PRIO options the receiver sent.
    let prio = common::tshark_fields(
        &dir.join("receiver.pcapng"),
        "tcp.options.mptcp.subtype == 5",
        &["frame.time_relative", "tcp.options.mptcp.backup.flag"],
    );
    assert_eq!(prio.len(), s.flows[0].prio_changes.len());
}

#[test]
fn a_bonds_members_are_captured_as_the_bond_gave_them_packets() {
    // The BOND paper's setting (TCP over two bonded 802.11 links, the AP's duplicate-ACK
    // filter), 10 s: every packet the bond gave a member in either direction entered that
    // member's link, and the connection, one address over both members, is one flow.
    let s = load("scenarios/bond/paper.toml", &["run.duration_s=10"]);
    let dir = common::scratch("sim-bond");
    let r = capture(&s, &dir, Format::Pcap);
    let a = railpath_capture::analyze(std::slice::from_ref(&dir), &names(&s)).unwrap();
    let from_server = |f: &[u8]| f[26..30] == [10, 201, 0, 1];
    let syn = |f: &[u8]| f[14 + 20 + 13] & 0x02 != 0;
    for m in &r.summary.bonds[0].members {
        // Data enter a member at its sender end (from the server), ACKs at its receiver end
        // (from the train); the capture's handshake (SYN, SYN/ACK and the ACK after them) is
        // not the bond's.
        let mut entered = [0u64; 2];
        for (k, end) in ["sender", "receiver"].into_iter().enumerate() {
            let p = dir.join(format!("{}.{end}.pcap", m.link));
            let mut rd = railpath_capture::CaptureReader::open(&p).unwrap();
            let mut buf = Vec::new();
            let mut after_synack = false;
            while rd.next(&mut buf).unwrap().is_some() {
                if syn(&buf) {
                    after_synack = from_server(&buf);
                    continue;
                }
                if after_synack && !from_server(&buf) {
                    after_synack = false;
                    continue;
                }
                if from_server(&buf) == (k == 0) {
                    entered[k] += 1;
                }
            }
        }
        assert_eq!(
            (entered[0], entered[1]),
            (m.data_packets, m.reverse_packets),
            "{}",
            m.link
        );
    }
    assert_eq!(a.summary.flows.len(), 1);
    assert_eq!(
        a.summary.flows[0].sent_packets,
        r.summary.flows[0].sent_packets
    );
}
