//! A hand-built MPTCP exchange (MP_CAPABLE handshake, an MP_JOIN, data with DSS on both
//! subflows, the data ACKs, an MP_PRIO) written to pcapng and pcap, read back byte for byte,
//! decoded back to the options it was built from, analysed, and dissected by tshark.

mod common;

use etherparse::TcpOptionElement as E;
use railpath_capture::file::{CaptureReader, CaptureWriter, Format, Interface};
use railpath_capture::frame::{parse, FrameBuilder, Host, Options, Parsed, TcpFields};
use railpath_capture::mptcp::{self, Dss, Mapping, MptcpOption, CAPABLE_HMAC_SHA256};
use std::net::Ipv4Addr;

const KEY_A: u64 = 0x0102_0304_0506_0708; // the train router's (it opens the subflows)
const KEY_B: u64 = 0x1112_1314_1516_1718; // the server's
const R_A: u32 = 0xaaaa_0001;
const R_B: u32 = 0xbbbb_0002;
const ISN_A: [u32; 2] = [1000, 2000];
const ISN_B: [u32; 2] = [u32::MAX - 500, 7_000_000];

fn host(ip: [u8; 4], port: u16, link: usize, sender_end: bool) -> Host {
    Host {
        mac: [2, 0x72, 0x70, 0, link as u8, if sender_end { 1 } else { 2 }],
        ip: Ipv4Addr::from(ip),
        port,
    }
}

struct Frame {
    iface: u32,
    t_ns: u64,
    bytes: Vec<u8>,
    mptcp: MptcpOption,
}

/// The exchange: (interface, time, frame, the MPTCP option it carries).
fn exchange() -> Vec<Frame> {
    let a = [
        host([10, 200, 0, 1], 40000, 0, false),
        host([10, 200, 1, 1], 40001, 1, false),
    ];
    let b = [
        host([10, 201, 0, 1], 5201, 0, true),
        host([10, 201, 0, 1], 5201, 1, true),
    ];
    let idsn_a = mptcp::idsn(KEY_A);
    let idsn_b = mptcp::idsn(KEY_B);
    let hmac_b = mptcp::join_hmac(KEY_B, KEY_A, R_B, R_A);
    let hmac_a = mptcp::join_hmac(KEY_A, KEY_B, R_A, R_B);
    let cap = |s, r| MptcpOption::Capable {
        version: 1,
        flags: CAPABLE_HMAC_SHA256,
        sender_key: s,
        receiver_key: r,
        data_len: None,
    };
    let data = |dsn: u64| {
        MptcpOption::Dss(Dss {
            data_ack: Some(idsn_a.wrapping_add(1)),
            ack64: true,
            mapping: Some(Mapping {
                dsn: idsn_b.wrapping_add(1).wrapping_add(dsn),
                dsn64: true,
                ssn: 1,
                len: 1000,
                checksum: None,
            }),
            data_fin: false,
        })
    };
    let data_ack = |n: u64| {
        MptcpOption::Dss(Dss {
            data_ack: Some(idsn_b.wrapping_add(1).wrapping_add(n)),
            ack64: true,
            mapping: None,
            data_fin: false,
        })
    };
    let mut hm = [0u8; 20];
    hm.copy_from_slice(&hmac_a[..20]);
    // (subflow, from the server, seq, ack, SYN, payload, option[s])
    type Step = (usize, bool, u32, Option<u32>, bool, usize, Vec<MptcpOption>);
    let steps: Vec<Step> = vec![
        (0, false, ISN_A[0], None, true, 0, vec![cap(None, None)]),
        (
            0,
            true,
            ISN_B[0],
            Some(ISN_A[0] + 1),
            true,
            0,
            vec![cap(Some(KEY_B), None)],
        ),
        (
            0,
            false,
            ISN_A[0] + 1,
            Some(ISN_B[0].wrapping_add(1)),
            false,
            0,
            vec![cap(Some(KEY_A), Some(KEY_B))],
        ),
        (
            1,
            false,
            ISN_A[1],
            None,
            true,
            0,
            vec![MptcpOption::JoinSyn {
                backup: true,
                addr_id: 2,
                token: mptcp::token(KEY_B),
                nonce: R_A,
            }],
        ),
        (
            1,
            true,
            ISN_B[1],
            Some(ISN_A[1] + 1),
            true,
            0,
            vec![MptcpOption::JoinSynAck {
                backup: false,
                addr_id: 0,
                hmac: u64::from_be_bytes(hmac_b[..8].try_into().unwrap()),
                nonce: R_B,
            }],
        ),
        (
            1,
            false,
            ISN_A[1] + 1,
            Some(ISN_B[1] + 1),
            false,
            0,
            vec![MptcpOption::JoinAck { hmac: hm }],
        ),
        (
            0,
            true,
            ISN_B[0].wrapping_add(1),
            Some(ISN_A[0] + 1),
            false,
            1000,
            vec![data(0)],
        ),
        (
            1,
            true,
            ISN_B[1] + 1,
            Some(ISN_A[1] + 1),
            false,
            1000,
            vec![data(1000)],
        ),
        (
            0,
            false,
            ISN_A[0] + 1,
            Some(ISN_B[0].wrapping_add(1001)),
            false,
            0,
            vec![data_ack(1000)],
        ),
        (
            1,
            false,
            ISN_A[1] + 1,
            Some(ISN_B[1] + 1001),
            false,
            0,
            vec![data_ack(2000), MptcpOption::Prio { backup: false }],
        ),
    ];
    let mut fb = FrameBuilder::default();
    let mut out = Vec::new();
    for (k, (sf, from_b, seq, ack, syn, payload, opts)) in steps.into_iter().enumerate() {
        let mut o = Options::default();
        let ts = (100 + k as u32, 50 + k as u32);
        if syn {
            o.push(&[
                E::MaximumSegmentSize(1448),
                E::SelectiveAcknowledgementPermitted,
                E::Timestamp(ts.0, ts.1),
                E::Noop,
                E::WindowScale(7),
            ]);
        } else {
            o.push(&[E::Noop, E::Noop, E::Timestamp(ts.0, ts.1)]);
        }
        for m in &opts {
            o.push_mptcp(m);
        }
        o.pad();
        let (src, dst) = if from_b {
            (&b[sf], &a[sf])
        } else {
            (&a[sf], &b[sf])
        };
        let f = fb
            .tcp(
                src,
                dst,
                &TcpFields {
                    seq,
                    ack,
                    syn,
                    fin: false,
                    psh: false,
                    window: 1000,
                    options: o.bytes(),
                    payload_len: payload,
                },
            )
            .unwrap();
        out.push(Frame {
            iface: sf as u32,
            t_ns: railpath_capture::EPOCH_S * 1_000_000_000 + 1_000_000 * k as u64,
            bytes: f.to_vec(),
            mptcp: *opts.last().unwrap(),
        });
    }
    out
}

fn write(dir: &std::path::Path, format: Format, frames: &[Frame]) -> Vec<std::path::PathBuf> {
    let ifs = |k: usize| Interface {
        name: format!("{}.sender", ["a", "b"][k]),
        description: "test".into(),
    };
    match format {
        Format::Pcapng => {
            let p = dir.join("sender.pcapng");
            let mut w = CaptureWriter::create(&p, format, 0, &[ifs(0), ifs(1)], "test").unwrap();
            for f in frames {
                w.write(f.iface, f.t_ns, &f.bytes).unwrap();
            }
            w.finish().unwrap();
            vec![p]
        }
        Format::Pcap => (0..2)
            .map(|k| {
                let p = dir.join(format!("{}.pcap", ifs(k).name));
                let mut w = CaptureWriter::create(&p, format, 0, &[ifs(k)], "test").unwrap();
                for f in frames.iter().filter(|f| f.iface == k as u32) {
                    w.write(0, f.t_ns, &f.bytes).unwrap();
                }
                w.finish().unwrap();
                p
            })
            .collect(),
    }
}

#[test]
fn written_and_read_back_byte_for_byte() {
    let frames = exchange();
    for format in [Format::Pcapng, Format::Pcap] {
        let dir = common::scratch(&format!("exchange-{}", format.extension()));
        let files = write(&dir, format, &frames);
        let mut got = Vec::new();
        for f in &files {
            let mut r = CaptureReader::open(f).unwrap();
            let mut buf = Vec::new();
            while let Some(rec) = r.next(&mut buf).unwrap() {
                assert_eq!(rec.orig_len as usize, buf.len());
                got.push((rec.t_ns, buf.clone()));
            }
        }
        got.sort();
        assert_eq!(got.len(), frames.len());
        for (f, (t, bytes)) in frames.iter().zip(&got) {
            assert_eq!((f.t_ns, &f.bytes), (*t, bytes), "{format:?}");
            // And the frame decodes to the options it was built from.
            let Parsed::Tcp { seg, .. } = parse(bytes, true).unwrap() else {
                panic!("not tcp")
            };
            assert_eq!(seg.mptcp.last(), Some(&f.mptcp));
        }
    }
}

#[test]
fn the_analysis_finds_the_connection_its_join_and_the_prio() {
    let dir = common::scratch("exchange-analysis");
    write(&dir, Format::Pcapng, &exchange());
    let a = railpath_capture::analyze(
        &[dir],
        &railpath_capture::AnalyzeOptions {
            flow_names: vec!["dl".into()],
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(a.summary.flows.len(), 1, "{:#?}", a.summary);
    let f = &a.summary.flows[0];
    assert_eq!((f.id.as_str(), f.kind, f.connections), ("dl", "mptcp", 1));
    assert_eq!(f.subflows.len(), 2);
    assert!(f.subflows[1].backup_at_join);
    // Both subflows' data, reassembled at the data level (captured at one end only).
    assert_eq!(f.delivered_bytes, 2000);
    assert_eq!((f.sent_packets, f.retransmitted_packets), (2, 0));
    assert_eq!(f.mp_prio.len(), 1);
    assert_eq!(
        (f.mp_prio[0].subflow.as_str(), f.mp_prio[0].backup),
        ("b", false)
    );
    // One RTT sample per subflow: 2 ms (data at 6 ms, ACK at 8 ms) and 2 ms.
    let rtt = f.subflows[0].rtt.unwrap();
    assert_eq!((rtt.samples, rtt.min_ms), (1, 2.0));
}

#[test]
fn tshark_dissects_the_exchange() {
    if !common::tshark_available("tshark_dissects_the_exchange") {
        return;
    }
    let dir = common::scratch("exchange-tshark");
    let p = write(&dir, Format::Pcapng, &exchange()).remove(0);
    assert_eq!(common::tshark_malformed(&p), 0);
    // Keys, token and the join: both streams are subflows of MPTCP stream 0; the data's
    // relative data sequence numbers are 1 and 1001; the MP_PRIO is there.
    let rows = common::tshark_fields(
        &p,
        "tcp.len > 0",
        &[
            "tcp.stream",
            "mptcp.stream",
            "mptcp.dsn",
            "mptcp.analysis.subflows",
        ],
    );
    assert_eq!(rows.len(), 2, "{rows:?}");
    assert_eq!(rows[0][1], "0");
    assert_eq!(rows[1][1], "0");
    assert_eq!((rows[0][2].as_str(), rows[1][2].as_str()), ("1", "1001"));
    assert!(
        rows[1][3].contains('0') && rows[1][3].contains('1'),
        "{rows:?}"
    );
    let prio = common::tshark_fields(&p, "tcp.options.mptcp.subtype == 5", &["frame.number"]);
    assert_eq!(prio.len(), 1);
    let keys = common::tshark_fields(
        &p,
        "tcp.options.mptcp.recvkey",
        &["tcp.options.mptcp.sendkey", "tcp.options.mptcp.recvkey"],
    );
    assert_eq!(keys, vec![vec![KEY_A.to_string(), KEY_B.to_string()]]);
}
