//! `railpath run --pcap` and `railpath analyze` through the real binary.

use std::path::{Path, PathBuf};
use std::process::Command;

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("cli-capture-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn railpath(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args(args)
        .output()
        .expect("run railpath");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn repo(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn run_captures_and_analyze_reads_them() {
    let d = scratch("run");
    let out = d.join("out");
    let scen = repo("scenarios/mptcp-backup-outage.toml");
    // The scenario key: [capture] with pcap files, whole frames, into <out>/caps.
    let (code, stdout, stderr) = railpath(&[
        "run",
        &scen,
        "--out",
        out.to_str().unwrap(),
        "--set",
        "capture.format=pcap",
        "--set",
        "capture.dir=caps",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("captures ("), "{stdout}");
    for f in [
        "a.sender.pcap",
        "a.receiver.pcap",
        "b.sender.pcap",
        "b.receiver.pcap",
    ] {
        assert!(out.join("caps").join(f).exists(), "{f}");
    }
    // --pcap DIR: pcapng, two files.
    let pcap = d.join("pcap");
    let (code, _, stderr) = railpath(&[
        "run",
        &scen,
        "--out",
        out.to_str().unwrap(),
        "--pcap",
        pcap.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let an = d.join("analysis");
    let (code, stdout, stderr) = railpath(&[
        "analyze",
        pcap.to_str().unwrap(),
        "--scenario",
        &scen,
        "--out",
        an.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.starts_with("flow"), "{stdout}");
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(an.join("analysis.json")).unwrap()).unwrap();
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(j["format"], "railpath-analysis/1");
    assert_eq!(j["flows"][0]["id"], "m");
    assert_eq!(j["flows"][0]["sent_packets"], s["flows"][0]["sent_packets"]);
    assert_eq!(
        j["flows"][0]["retransmitted_packets"],
        s["flows"][0]["retransmitted_packets"]
    );
    let csv = std::fs::read_to_string(an.join("analysis.csv")).unwrap();
    assert!(csv.starts_with("t_s,flow,subflow,metric,value\n0.1,m,,goodput_bps,"));
    // 30 s of 100 ms bins per series.
    assert_eq!(
        csv.lines()
            .filter(|l| l.contains(",m,,goodput_bps,"))
            .count(),
        300
    );
}

#[test]
fn analyze_refuses_bad_captures_with_status_2() {
    let d = scratch("bad");
    let g = d.join("notes.pcap");
    std::fs::write(&g, "a text file, not a capture\n").unwrap();
    let (code, _, stderr) = railpath(&["analyze", g.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("notes.pcap: not a capture"), "{stderr}");
    let (code, _, stderr) = railpath(&["analyze", d.join("missing.pcap").to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("missing.pcap: cannot open"), "{stderr}");
    // A scenario key out of range names it.
    let (code, _, stderr) = railpath(&[
        "run",
        &repo("scenarios/tcp-outage.toml"),
        "--out",
        d.join("o").to_str().unwrap(),
        "--set",
        "capture.snaplen_bytes=10",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("capture.snaplen_bytes"), "{stderr}");
}
