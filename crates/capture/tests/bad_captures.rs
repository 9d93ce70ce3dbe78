//! Bad captures: a clear error naming the file and the record, never a panic.

mod common;

use railpath_capture::file::{CaptureWriter, Format, Interface};
use railpath_capture::{analyze, AnalyzeOptions};

fn one_frame_capture(dir: &std::path::Path, frames: &[&[u8]]) -> std::path::PathBuf {
    let p = dir.join("a.sender.pcap");
    let i = Interface {
        name: "a.sender".into(),
        description: String::new(),
    };
    let mut w = CaptureWriter::create(&p, Format::Pcap, 0, &[i], "test").unwrap();
    for (k, f) in frames.iter().enumerate() {
        w.write(0, k as u64, f).unwrap();
    }
    w.finish().unwrap();
    p
}

#[test]
fn a_broken_header_names_the_file_and_the_record() {
    let dir = common::scratch("bad-header");
    // Ethernet + an IPv4 header claiming TCP, then a TCP header cut short (data offset 15
    // words in 20 bytes).
    let mut f = vec![0u8; 14 + 20 + 20];
    f[12] = 0x08; // IPv4
    f[14] = 0x45;
    f[16..18].copy_from_slice(&40u16.to_be_bytes());
    f[23] = 6;
    f[14 + 20 + 12] = 0xf0;
    let good: Vec<u8> = {
        let mut g = f.clone();
        g[14 + 20 + 12] = 0x50;
        g
    };
    let p = one_frame_capture(&dir, &[&good, &f]);
    let e = analyze(&[p], &AnalyzeOptions::default()).unwrap_err();
    assert_eq!(e.record, Some(2), "{e}");
    let m = e.to_string();
    assert!(m.contains("a.sender.pcap: record 2: TCP header"), "{m}");
}

#[test]
fn garbage_truncation_and_link_types_are_errors_not_panics() {
    let dir = common::scratch("bad-files");
    let g = dir.join("garbage.pcapng");
    std::fs::write(&g, [0x0a, 0x0d, 0x0d, 0x0a, 1, 2, 3]).unwrap();
    let e = analyze(&[g], &AnalyzeOptions::default()).unwrap_err();
    assert!(e.to_string().contains("garbage.pcapng"), "{e}");
    // A directory without captures.
    let empty = common::scratch("bad-empty-dir");
    let e = analyze(&[empty], &AnalyzeOptions::default()).unwrap_err();
    assert!(e.message.contains("without .pcap"), "{e}");
    // Every prefix of a good capture is an error or a shorter analysis, never a panic.
    let good = one_frame_capture(&dir, &[&[0u8; 60], &[1u8; 60]]);
    let bytes = std::fs::read(&good).unwrap();
    for cut in 0..bytes.len() {
        let p = dir.join("cut.pcap");
        std::fs::write(&p, &bytes[..cut]).unwrap();
        if let Err(e) = analyze(&[p], &AnalyzeOptions::default()) {
            assert!(
                e.to_string()
                    .starts_with(&dir.join("cut.pcap").display().to_string()),
                "{e}"
            );
        }
    }
}

#[test]
fn fuzz_findings_stay_fixed() {
    // A data segment whose relative sequence number lies just below the stream's start, with a
    // payload (found by `make fuzz`): an error or an analysis, not an overflow.
    let data = include_bytes!("data/fuzz-seq-overflow.bin");
    let _ = railpath_capture::analyze::analyze_bytes(
        "a.receiver.pcap",
        data,
        &AnalyzeOptions::default(),
    );
}

/// An Ethernet/IPv4/TCP frame with 10 bytes of payload from the server (port 5201) to `port`.
fn data_frame(port: u16, seq: u32) -> Vec<u8> {
    let b = etherparse::PacketBuilder::ethernet2([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2])
        .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
        .tcp(5201, port, seq, 65535)
        .ack(1);
    let mut f = Vec::new();
    b.write(&mut f, &[7u8; 10]).unwrap();
    f
}

/// A capture at `p` (one interface named after the file's stem) of `(time ns, frame)` packets.
fn capture_at(p: &std::path::Path, format: Format, packets: &[(u64, Vec<u8>)]) {
    let i = Interface {
        name: p.file_stem().unwrap().to_string_lossy().into_owned(),
        description: String::new(),
    };
    let mut w = CaptureWriter::create(p, format, 0, &[i], "test").unwrap();
    for (t, f) in packets {
        w.write(0, *t, f).unwrap();
    }
    w.finish().unwrap();
}

#[test]
fn a_capture_whose_series_would_not_fit_is_an_error() {
    // 60 connections at 0 s, then one more packet of the first 100 000 s later: 241 series of a
    // million 0.1-s bins each (a 40 kB file of this shape once asked for gigabytes).
    let dir = common::scratch("bad-series-size");
    let p = dir.join("a.receiver.pcap");
    let mut packets: Vec<(u64, Vec<u8>)> = (0..60)
        .map(|k| (1_000_000_000, data_frame(10_000 + k, 1)))
        .collect();
    packets.push((100_001_000_000_000, data_frame(10_000, 11)));
    capture_at(&p, Format::Pcap, &packets);
    let e = analyze(std::slice::from_ref(&p), &AnalyzeOptions::default()).unwrap_err();
    assert_eq!(e.record, Some(61), "{e}");
    let m = e.to_string();
    assert!(
        m.contains("a.receiver.pcap: record 61: 1 flows and 60 connections over 1000001 bins"),
        "{m}"
    );
    assert!(m.contains("--bin-ms"), "{m}");
    // Wider bins: the same capture is analysed (241 series of 1000 bins of 100 s).
    let wide = AnalyzeOptions {
        bin_s: 100.0,
        ..AnalyzeOptions::default()
    };
    let a = analyze(std::slice::from_ref(&p), &wide).unwrap();
    assert_eq!(a.series.len(), 241);
    assert!(a.series.iter().all(|s| s.values.len() == 1000));
    // A duration given with the options counts too: the 60 connections without the late packet,
    // over 10 000 bins of 100 s, then 2 million (the most) of 0.1 s.
    let q = dir.join("b.receiver.pcap");
    capture_at(&q, Format::Pcap, &packets[..60]);
    let long = AnalyzeOptions {
        duration_s: Some(1e6),
        ..wide
    };
    assert!(analyze(std::slice::from_ref(&q), &long).is_ok());
    let long = AnalyzeOptions { bin_s: 0.1, ..long };
    let e = analyze(std::slice::from_ref(&q), &long).unwrap_err();
    assert_eq!(e.record, None, "{e}");
    let m = e.to_string();
    assert!(
        m.contains("b.receiver.pcap") && m.contains("over 2000000 bins"),
        "{m}"
    );
}

#[test]
fn a_block_shorter_than_its_header_is_an_error() {
    // A pcapng file with one packet, then a Process Information Block (type 0x80000001) whose
    // length says 8 bytes: pcap-parser 0.17.0 would subtract 12 from it (an overflow panic under
    // `make fuzz`, which found it). The reader refuses it first, naming the record.
    let dir = common::scratch("bad-short-block");
    let p = dir.join("a.receiver.pcapng");
    capture_at(
        &p,
        Format::Pcapng,
        &[(1_000_000_000, data_frame(10_000, 1))],
    );
    let mut bytes = std::fs::read(&p).unwrap();
    bytes.extend_from_slice(&[1, 0, 0, 0x80, 8, 0, 0, 0]);
    bytes.extend_from_slice(&[0; 8]);
    std::fs::write(&p, &bytes).unwrap();
    let e = analyze(std::slice::from_ref(&p), &AnalyzeOptions::default()).unwrap_err();
    assert_eq!(e.record, Some(2), "{e}");
    let m = e.to_string();
    assert!(
        m.contains("a.receiver.pcapng: record 2: malformed block (type 0x80000001): its length 8"),
        "{m}"
    );
    // The fuzz finding itself (a simulator capture with such a block): an error, not a panic.
    let found = include_bytes!("data/fuzz-short-block.bin");
    let e =
        railpath_capture::analyze::analyze_bytes("a.receiver.pcapng", found, &Default::default())
            .unwrap_err();
    assert!(e.message.contains("less than the 12 bytes"), "{e}");
}
