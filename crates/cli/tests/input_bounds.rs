//! Issue 17's defects, one regression test each, through the real `railpath` binary: every value
//! a user can type is range-checked, a key of another carrier model is refused, a run that would
//! exhaust the machine is refused before it starts, and each is exit status 2 with the file and
//! key named, within seconds (a hang or a panic fails the test).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn scenario() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/scenarios/carriers.toml")
        .display()
        .to_string()
}

/// Run `railpath run carriers.toml --set ...` with a fixed 4 GB memory budget; (exit code,
/// stderr). A run that does not end within 60 s is killed and fails the test.
fn run_with(sets: &[&str], extra: &[&str]) -> (i32, String) {
    // Removed when this returns (the child has ended by then, or been killed).
    let tmp = tempfile::Builder::new()
        .prefix("railpath-bounds-")
        .tempdir()
        .unwrap();
    let cwd = tmp.path();
    let mut args = vec!["run".to_string(), scenario(), "--out".into(), "o".into()];
    for s in sets {
        args.push("--set".into());
        args.push(s.to_string());
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args(&args)
        .current_dir(cwd)
        .env("RAILPATH_MEMORY_BUDGET_MB", "4000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run railpath");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code().unwrap_or(-1), err);
        }
        if start.elapsed() > Duration::from_secs(60) {
            child.kill().unwrap();
            panic!("railpath run with {sets:?} did not end within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Each override of the list, the key the error must name and a part of its message.
const REFUSED: &[(&[&str], &str, &str)] = &[
    // Panics (divide by zero in the serialisation time).
    (
        &["link.plain.rate_mbps=1e-9"],
        "link[2].rate_mbps",
        "expected a number >= 0.001 and <= 100000 Mbit/s, found 0.000000001",
    ),
    (
        &["link.plain.reverse_rate_mbps=1e-7"],
        "link[2].reverse_rate_mbps",
        ">= 0.001",
    ),
    (
        &["link.plain.schedule=[{ t_s = 1, rate_mbps = 1e-7 }]"],
        "link[2].schedule[0].rate_mbps",
        ">= 0.001",
    ),
    // Hangs.
    (
        &["carrier.s.handover_interval_s=0.05"],
        "carrier[1].handover_interval_s",
        "expected more than interruption_ms = 50 ms",
    ),
    (
        &["carrier.s.handover_interval_s=0.04"],
        "carrier[1].handover_interval_s",
        "expected more than interruption_ms = 50 ms",
    ),
    (
        &["train.start_m=1e300"],
        "train.start_m",
        "in 0..=10000000, found 1e300",
    ),
    // Memory.
    (&["train.start_m=1e9"], "train.start_m", "found 1000000000"),
    (
        &["run.duration_s=1000000", "run.bin_ms=1"],
        "run.duration_s / run.bin_ms",
        "more than the budget of 4.0 GB",
    ),
    (
        &["carrier.r.enb_spacing_m=50", "carrier.r.cell_range_m=1000000"],
        "cell_range_m",
        "the largest part is the radio model of carrier \"r\"",
    ),
    // Accepted though invalid: keys of another carrier model.
    (
        &["carrier.s.pathloss_1km_db=nan"],
        "carrier[1].pathloss_1km_db",
        "only used with model = \"radio\"; this carrier's model is \"scripted\"",
    ),
    (
        &["carrier.s.low_rsrp_dbm=1e308"],
        "carrier[1].low_rsrp_dbm",
        "only used with model = \"radio\"",
    ),
    (
        &["carrier.s.mahimahi_bin_ms=-1e308"],
        "carrier[1].mahimahi_bin_ms",
        "only used with model = \"mahimahi\"",
    ),
    (
        &["carrier.s.ttt_ms=41"],
        "carrier[1].ttt_ms",
        "only used with model = \"radio\"",
    ),
    (
        &["carrier.r.ttt_ms=41"],
        "carrier[0].ttt_ms",
        "expected a TimeToTrigger of TS 36.331",
    ),
    (
        &["train.initial_speed_kmh=nan"],
        "train.initial_speed_kmh",
        "only used with [[train.segment]]",
    ),
    // Absurd values.
    (
        &["carrier.s.rate_mbps=1e30"],
        "carrier[1].rate_mbps",
        "in 0.001..=100000, found 1e30",
    ),
    (
        &["train.late_start_s=1e300"],
        "train.late_start_s",
        "found 1e300",
    ),
    (
        &["train.track_length_m=1e-300"],
        "train.track_length_m",
        "in 1..=10000000, found 1e-300",
    ),
    // Exit 1 for the input's fault: now 2, naming the scenario and key.
    (
        &["carrier.r.first_enb_m=1e6"],
        "carrier[0].first_enb_m",
        "no base station within cell_range_m",
    ),
    // serde's wording.
    (
        &["run.seed=9223372036854775808"],
        "--set run.seed=9223372036854775808",
        "expected a whole number from 0 to 9223372036854775807, found the text \"9223372036854775808\"",
    ),
];

#[test]
fn every_defect_of_the_list_is_refused_naming_file_and_key() {
    let prefix = format!("error: {}: ", scenario());
    let mut failures = Vec::new();
    for (sets, key, msg) in REFUSED {
        let (code, err) = run_with(sets, &[]);
        if code != 2 || !err.starts_with(&prefix) || !err.contains(key) || !err.contains(msg) {
            failures.push(format!(
                "{sets:?}: exit {code}, stderr {err:?}; wanted {key:?} and {msg:?}"
            ));
        }
        assert!(err.len() < 600, "{sets:?}: a long message: {err}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_base_scenario_and_in_range_neighbours_run() {
    // The base, a scripted interval just above its interruption, and a Mahimahi-style bin are
    // accepted: the checks refuse only what is out of range.
    for sets in [
        &[][..],
        &["carrier.s.handover_interval_s=0.051"][..],
        &["link.plain.rate_mbps=0.001"][..],
    ] {
        let (code, err) = run_with(sets, &[]);
        assert_eq!(code, 0, "{sets:?}: {err}");
    }
}

#[test]
fn a_seed_above_two_to_the_63_is_an_argument_error() {
    let (code, err) = run_with(&[], &["--seed", "18446744073709551615"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--seed"), "{err}");
}

#[test]
fn a_long_bad_value_is_quoted_as_a_short_excerpt() {
    let long = format!("link.plain.id={}", "x".repeat(100_000));
    let (code, err) = run_with(&[&long], &[]);
    assert_eq!(code, 2, "{}", &err[..err.len().min(300)]);
    assert!(err.len() < 400, "{} bytes", err.len());
    assert!(err.contains("(100000 characters)"), "{err}");
    // Whatever message a value lands in (here an unknown congestion control, an unknown
    // scheduler, a number of 400 digits), it is quoted short.
    for set in [
        format!("flow.f.cc={}", "c".repeat(100_000)),
        format!("flow.f.scheduler={}", "s".repeat(100_000)),
        format!("run.duration_s={}", "9".repeat(400)),
    ] {
        let (code, err) = run_with(&[&set], &[]);
        assert_eq!(code, 2, "{}", &err[..err.len().min(300)]);
        assert!(err.len() < 500, "{} bytes: {}", err.len(), &err[..300]);
    }
}
