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
