//! `railpath calibrate` (issue 9): the simulator's MPTCP against the kernel's when a path dies.
//!
//! - Against the committed kernel fixture (testbed/calibrate-kernel.json, measured on the CI
//!   machine kind), the simulator meets the targets on the 1 s and 6 s outages at 100 packets:
//!   window goodput within 10%, stall within 0.5-2x, the retry schedule (backed-off RTOs).
//! - As root with kernel MPTCP, the full side-by-side runs on the namespace testbed (13 cases,
//!   about 2.5 minutes, two cases at a time); without them it says so loudly and skips.

use std::path::Path;
use std::process::Command;

#[path = "../../repro/tests/common/mod.rs"]
mod common;

fn calibrate(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_railpath"))
        .arg("calibrate")
        .args(args)
        .output()
        .expect("run railpath")
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("json")
}

#[test]
fn simulator_meets_the_targets_against_the_kernel_fixture() {
    let (_tmp, out) = common::out_dir("calibrate-fixture");
    let o = calibrate(&[
        "--sim-only",
        "--check",
        "--case",
        "o1000-b100-r20",
        "--case",
        "o6000-b100-r20",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "targets missed:\n{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v = json(&out.join("calibrate.json"));
    assert_eq!(v["kernel_source"], "fixture");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 2);
    for c in cases {
        let checks = c["checks"].as_array().unwrap();
        let targets: Vec<&str> = checks
            .iter()
            .map(|x| x["target"].as_str().unwrap())
            .collect();
        assert!(
            targets.contains(&"window goodput within 10%"),
            "{targets:?}"
        );
        assert!(targets.iter().any(|t| t.starts_with("stall within")));
        assert!(targets.iter().any(|t| t.contains("retries")));
        assert!(checks.iter().all(|x| x["holds"] == true), "{c}");
        // The kernel stalls for about 1-1.5 s here, and so must the simulator.
        let stall = c["sim"]["stall_s"].as_f64().unwrap();
        assert!(stall >= 0.5, "{} stalls only {stall} s", c["name"]);
    }
    assert!(stdout.contains("o6000-b100-r20"), "{stdout}");
}

#[test]
fn bad_arguments_are_input_errors() {
    let o = calibrate(&["--sim-only", "--case", "no-such-case"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--case no-such-case"));
    let o = calibrate(&["--sim-only", "--kernel", "/nonexistent/fixture.json"]);
    assert_eq!(o.status.code(), Some(2));
    let o = calibrate(&["--sim-only", "--jobs", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--jobs"));
    let o = calibrate(&["--list"]);
    assert!(o.status.success());
    let list = String::from_utf8_lossy(&o.stdout);
    for c in [
        "o50-b100-r20",
        "o1000-b100-r100",
        "o6000-b100-r20-flip",
        "o3000-b300-r20-drop",
        "o8000-b300-r20-drop",
        "radio-x2",
    ] {
        assert!(list.contains(c), "{list}");
    }
}

#[test]
fn full_side_by_side_on_the_testbed() {
    if let Err(e) = railpath_linkem::check_environment() {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIP calibrate side-by-side on the testbed: {e}"
        );
        return;
    }
    let (_tmp, out) = common::out_dir("calibrate-testbed");
    let o = calibrate(&["--out", out.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    println!("{stdout}");
    let v = json(&out.join("calibrate.json"));
    assert_eq!(v["kernel_source"], "testbed");
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 13);
    for c in cases {
        let k = &c["kernel"];
        assert!(k.is_object(), "no kernel side for {}", c["name"]);
        let g = k["goodput_mbps"].as_f64().unwrap();
        assert!(g > 5.0, "{}: kernel goodput {g}", c["name"]);
        assert!(!c["checks"].as_array().unwrap().is_empty());
    }
    // The calibration holds against this run of this kernel, not only against the fixture:
    // most targets are met (one run of the kernel varies from the next, so not all).
    let (met, missed) = (
        v["targets_met"].as_u64().unwrap(),
        v["targets_missed"].as_u64().unwrap(),
    );
    assert!(
        met as f64 >= 0.75 * (met + missed) as f64,
        "{met} met, {missed} missed:\n{stdout}"
    );
}

#[test]
fn stall_figures_from_captures_of_both_stacks() {
    // The 1 s outage of path b: both stacks' captures show the in-order stream stalling. Without
    // the testbed only the simulator's side is captured (the fixture has no packets).
    let testbed = railpath_linkem::check_environment();
    if let Err(e) = &testbed {
        eprintln!("SKIP the kernel side of stall_figures_from_captures_of_both_stacks: {e}");
    }
    let (_tmp, out) = common::out_dir("calibrate-pcap");
    let mut args = vec!["--case", "o1000-b100-r20", "--pcap", "--out"];
    args.push(out.to_str().unwrap());
    if testbed.is_err() {
        args.push("--sim-only");
    }
    let o = calibrate(&args);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        stdout.contains("stalls of the in-order stream in the captures"),
        "{stdout}"
    );
    assert!(out.join("o1000-b100-r20/sim/pcap/receiver.pcapng").exists());
    let v = json(&out.join("calibrate.json"));
    let c = &v["cases"][0];
    let sim = c["capture_stall_sim_s"]
        .as_f64()
        .expect("a simulator figure");
    assert!(sim > 0.2 && sim <= 4.0, "{sim}");
    if testbed.is_ok() {
        let k = c["capture_stall_kernel_s"]
            .as_f64()
            .expect("a kernel figure");
        assert!(k > 0.2 && k <= 4.0, "{k}");
        assert!(out
            .join("o1000-b100-r20/kernel/pcap/sender.pcapng")
            .exists());
    } else {
        assert!(c["capture_stall_kernel_s"].is_null());
    }
}
