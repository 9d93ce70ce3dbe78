//! `railpath repro`: the command writes each paper's summary, report and the index, the same
//! bytes on every run; bad arguments are input errors; with `--testbed` (root, kernel MPTCP) the
//! kernel sides of PHA and PROXY-LB run on the namespace testbed. The reproductions' findings,
//! their reports and their rendering are checked in-process by `crates/repro/tests/reports.rs`,
//! PROXY-LB's and the train study's on `make run`'s output by `run_main.rs`.

#[path = "../../repro/tests/common/mod.rs"]
mod common;

use common::{claim_holds, number};
use std::path::Path;
use std::process::Command;
use std::sync::RwLock;

/// The testbed tests' share of the machine. The PHA test's controller acts on a replayed
/// position feed in real time (so does the emulator) and the test bounds its flips: beside
/// another testbed test on the two cores it flipped a carrier 10 times where the track has 4-5
/// handovers (2 of 4 runs of this binary on 2026-11-29; alone it passed). So it runs alone (the
/// write lock); the other testbed tests may run beside each other (read locks), as before.
static TESTBED: RwLock<()> = RwLock::new(());

fn repro_paper(paper: &str, out: &Path, seeds: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args(["repro", paper, "--seeds", seeds, "--out"])
        .arg(out)
        .output()
        .expect("run railpath")
}

fn summary_of(paper: &str, out: &Path) -> serde_json::Value {
    let p = out.join(paper).join("summary.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn repro(out: &Path, seeds: &str) -> std::process::Output {
    repro_paper("pha", out, seeds)
}

fn summary(out: &Path) -> serde_json::Value {
    summary_of("pha", out)
}

#[test]
fn reproduction_is_deterministic_and_bad_arguments_are_input_errors() {
    let ((_tmp_a, a), (_tmp_b, b)) = (
        common::out_dir("repro-det-a"),
        common::out_dir("repro-det-b"),
    );
    assert!(repro(&a, "3").status.success());
    assert!(repro(&b, "3").status.success());
    assert_eq!(summary(&a), summary(&b));
    for d in [&a, &b] {
        for f in ["pha/summary.json", "pha/report.html", "index.html"] {
            assert!(d.join(f).is_file(), "no {f} in {}", d.display());
        }
    }
    let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args(["repro", "nope"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("pha"));
    let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args(["repro", "pha", "--testbed-side-by-side"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--testbed"));
}

/// `railpath repro pha --testbed` (root, kernel MPTCP): the kernel side runs, with
/// railpath-gateway's controller flipping both carriers around their handovers, and the report
/// shows the kernel's numbers beside the simulator's. One kernel run per configuration, the two
/// side by side (70 s).
#[test]
fn pha_kernel_side_on_the_testbed() {
    if let Err(e) = railpath_linkem::check_environment() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIP repro pha --testbed: {e}");
        return;
    }
    let _alone = TESTBED.write().unwrap_or_else(|e| e.into_inner());
    let (_tmp, out) = common::out_dir("repro-pha-testbed");
    let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args([
            "repro",
            "pha",
            "--seeds",
            "2",
            "--testbed",
            "--testbed-runs",
            "1",
            "--testbed-side-by-side",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("run railpath");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let s = summary(&out);
    let num = |id: &str| -> f64 {
        s["numbers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id)
            .unwrap_or_else(|| panic!("no number {id}"))["railpath"]
            .as_f64()
            .unwrap()
    };
    // The kernel carried the download over both emulated 25 Mbit/s carriers, with and without
    // PHA-D (the radio model's rates sit below the peak for much of the track).
    for m in ["plain", "phad"] {
        let g = num(&format!("linux-kernel-goodput-mbps-{m}"));
        assert!((10.0..50.0).contains(&g), "kernel goodput {m}: {g}");
        let h = num(&format!("linux-kernel-inst-throughput-mbps-{m}"));
        assert!(h.is_finite() && h > 0.0, "kernel at handover {m}: {h}");
        let sim = num(&format!("linux-sim-goodput-mbps-{m}"));
        assert!((10.0..50.0).contains(&sim), "simulator goodput {m}: {sim}");
    }
    let claims = s["claims"].as_array().unwrap();
    assert!(claims
        .iter()
        .any(|c| c["id"] == "kernel-phad-raises-handover-throughput"));
    // Agreement within the kernel's interval needs two runs at least: with one, no such claim.
    assert!(!claims
        .iter()
        .any(|c| c["id"] == "kernel-and-simulator-agree-on-phad"));
    // The controller flipped both carriers, to backup and back, around their handovers
    // (70 s at 83.3 m/s pass 4-5 of each carrier's sites), and nothing failed: the PHA-D run's
    // note, as the frame logs it when the run is done (and the report shows it).
    let flips = stderr
        .lines()
        .find(|l| l.contains("kernel run (pha-d, seed 1) done: "))
        .unwrap_or_else(|| panic!("no controller note: {stderr}"));
    for c in ["A", "B"] {
        let n: u64 = flips
            .split(&format!("carrier {c}: "))
            .nth(1)
            .unwrap_or_else(|| panic!("no flips of carrier {c}: {flips}"))
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!((3..=8).contains(&n), "carrier {c}: {n} flips to backup");
    }
    assert!(!flips.contains("failed"), "{flips}");
    // The seed's plain and PHA-D runs ran at the same time. (The report's kernel section, its
    // table and its two figures: the unit test of crates/repro/src/pha.rs with a stand-in kernel.)
    assert!(
        stderr.contains("kernel runs (none, seed 1; pha-d, seed 1) side by side"),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn tcp_fs_reproduction_is_deterministic() {
    let ((_tmp_a, a), (_tmp_b, b)) = (
        common::out_dir("repro-tcp-fs-a"),
        common::out_dir("repro-tcp-fs-b"),
    );
    assert!(repro_paper("tcp-fs", &a, "3").status.success());
    assert!(repro_paper("tcp-fs", &b, "3").status.success());
    assert_eq!(summary_of("tcp-fs", &a), summary_of("tcp-fs", &b));
    let report = |d: &Path| std::fs::read(d.join("tcp-fs/report.html")).unwrap();
    assert_eq!(report(&a), report(&b));
}

/// `--testbed-cars` and `--testbed-duration` are checked before the testbed's environment, so
/// out-of-range values are input errors (exit 2, the flag named) on any machine.
#[test]
fn proxy_lb_testbed_flags_out_of_range_are_input_errors() {
    let (_tmp, out) = common::out_dir("repro-proxy-lb-flags");
    let cases: &[(&[&str], &str)] = &[
        (
            &["--testbed-cars", "9"],
            "--testbed-cars: expected 1 ..= 5, found 9",
        ),
        (
            &["--testbed-cars", "0"],
            "--testbed-cars: expected 1 ..= 5, found 0",
        ),
        (
            &["--testbed-duration", "1"],
            "--testbed-duration: expected 5 ..= 3600 seconds, found 1",
        ),
        (
            &["--testbed-duration", "3601"],
            "--testbed-duration: expected 5 ..= 3600 seconds, found 3601",
        ),
        (
            &["--testbed-duration", "inf"],
            "--testbed-duration: expected 5 ..= 3600 seconds, found inf",
        ),
    ];
    for (flag, wanted) in cases {
        let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
            .args(["repro", "proxy-lb", "--testbed"])
            .args(*flag)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag:?}: {err}");
        assert!(err.contains(wanted), "{flag:?}: {err:?} lacks {wanted:?}");
        assert!(!out.exists(), "{flag:?} wrote {}", out.display());
    }
    // Without --testbed the flags are usage errors (clap's; --seeds 0 would be refused too,
    // so that nothing runs if clap let them through, but without naming --testbed).
    for flag in ["--testbed-cars", "--testbed-duration"] {
        let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
            .args(["repro", "proxy-lb", "--seeds", "0", flag, "5", "--out"])
            .arg(&out)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.contains("required arguments were not provided:\n  --testbed\n"),
            "{flag}: {err}"
        );
    }
}

/// `railpath repro proxy-lb --testbed` (root, kernel MPTCP): the kernel side runs the load
/// balancer and railpath-gateway's proxy with 1 and 2 car namespaces for 20 s each, and the
/// report shows the kernel's totals beside the simulator's of the same length.
#[test]
fn proxy_lb_kernel_side_on_the_testbed() {
    if let Err(e) = railpath_linkem::check_environment() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIP repro proxy-lb --testbed: {e}");
        return;
    }
    let _shared = TESTBED.read().unwrap_or_else(|e| e.into_inner());
    let (_tmp, out) = common::out_dir("repro-proxy-lb-testbed");
    let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args([
            "repro",
            "proxy-lb",
            "--seeds",
            "2",
            "--testbed",
            "--testbed-runs",
            "1",
            "--testbed-cars",
            "2",
            "--testbed-duration",
            "20",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("run railpath");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    let v = summary_of("proxy-lb", &out);
    for cars in 1..=2 {
        for m in ["lb", "mptcp"] {
            let (k, _, _, _) = number(&v, &format!("kernel-{m}-{cars}-cars-total-mbps"));
            let (s, _, _, _) = number(&v, &format!("kernel-sim-{m}-{cars}-cars-total-mbps"));
            // Both carried the cars' downloads over the emulated 40 + 30 Mbit/s carriers.
            assert!((5.0..70.0).contains(&k), "kernel {m}, {cars} cars: {k}");
            assert!((5.0..70.0).contains(&s), "simulator {m}, {cars} cars: {s}");
        }
    }
    // The kernel's claim is computed from its own numbers.
    let above = (1..=2).all(|n| {
        number(&v, &format!("kernel-mptcp-{n}-cars-total-mbps")).0
            > number(&v, &format!("kernel-lb-{n}-cars-total-mbps")).0
    });
    assert_eq!(claim_holds(&v, "kernel-mptcp-above-lb"), above);
    // One car count more has no numbers: the kernel ran 1 and 2 cars only. (The report's kernel
    // section, a row per car count with the per-car goodputs and the runs' notes: the unit test
    // of crates/repro/src/proxy_lb.rs with a stand-in kernel.)
    assert!(!v["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .any(|n| n["id"] == "kernel-lb-3-cars-total-mbps"));
    // The runs' notes, as the frame logs each run's when it is done: the balancer gave car 1
    // ISP_A, the proxy carried car 2.
    assert!(stderr.contains("car1 balancer lb -> isp-a"), "{stderr}");
    assert!(stderr.contains("car2 proxy"), "{stderr}");
}

/// `railpath repro train --testbed`: PHA-D by railpath-gateway's controller on the namespace
/// testbed over the line's first 20 s (seed 1), beside the simulator on the same seed; the
/// simulator's study runs as without `--testbed`.
#[test]
fn train_kernel_side_on_the_testbed() {
    if let Err(e) = railpath_linkem::check_environment() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "SKIP repro train --testbed: {e}");
        return;
    }
    let _shared = TESTBED.read().unwrap_or_else(|e| e.into_inner());
    let (_tmp, out) = common::out_dir("repro-train-testbed");
    let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args([
            "repro",
            "train",
            "--testbed",
            "--testbed-runs",
            "1",
            "--testbed-duration",
            "20",
            "--out",
        ])
        .arg(&out)
        .output()
        .expect("run railpath");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    // The controller flipped carriers to backup and back on the kernel.
    assert!(stderr.contains("to backup"), "{stderr}");
    let v = summary_of("train", &out);
    for stack in ["simulator", "kernel"] {
        let (whole, ..) = number(&v, &format!("kernel_side_{stack}_whole_pct"));
        // A paired change of the whole run's goodput: finite and far from -100 % (the kernel
        // carried the download with and without PHA-D).
        assert!(whole.is_finite() && whole > -50.0, "{stack}: {whole}");
    }
    let page = std::fs::read_to_string(out.join("train/report.html")).unwrap();
    assert!(page.contains("The kernel side") && page.contains("railpath-gateway"));
    assert!(!page.contains("Not run: <code>railpath repro train --testbed"));
    std::fs::remove_dir_all(&out).unwrap();
}
