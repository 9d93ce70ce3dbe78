//! `railpath power` through the real binary: one JSON line per rate with the model's values, and
//! bad arguments as input errors (exit status 2) that name the argument.

use std::process::Command;

fn railpath(args: &[&str]) -> (i32, String, String) {
    let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .arg("power")
        .args(args)
        .output()
        .expect("run railpath");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn one_line_per_rate_with_the_models_values() {
    // The first input set of crates/sim/src/power.rs's tests (hand-computed, 141.990... mW),
    // then two more rates of the range.
    let (code, out, err) = railpath(&[
        "--lambda",
        "5:15:5",
        "--mu1",
        "20",
        "--mu2",
        "10",
        "--gamma",
        "1.12",
        "--queues",
        "3,3",
        "--profile",
        "1",
    ]);
    assert_eq!(code, 0, "{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["lambda"], 5.0);
    let p = lines[0]["p_avg_mw"].as_f64().unwrap();
    assert!((p - 141.99038984702418).abs() < 1e-9, "{p}");
    for l in &lines {
        let total: f64 = [
            "both_asleep",
            "only_1_active",
            "only_2_active",
            "both_active",
        ]
        .iter()
        .map(|k| l[k].as_f64().unwrap())
        .sum();
        assert!((total - 1.0).abs() < 1e-12, "{l}");
    }
    assert!(lines[2]["p_avg_mw"].as_f64().unwrap() > p);
}

#[test]
fn bad_arguments_are_input_errors() {
    let base = ["--mu1", "20", "--mu2", "10", "--gamma", "1.12"];
    for (extra, needle) in [
        (vec!["--lambda", "40"], "unstable"),
        (vec!["--lambda", "x"], "--lambda"),
        (vec!["--lambda", "5", "--alpha", "2"], "alpha"),
        (vec!["--lambda", "5", "--queues", "3"], "--queues"),
    ] {
        let args: Vec<&str> = base.iter().copied().chain(extra).collect();
        let (code, _, err) = railpath(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let (code, _, err) = railpath(&[
        "--lambda",
        "5",
        "--mu1",
        "20",
        "--mu2",
        "10",
        "--gamma",
        "1",
        "--profile",
        "3",
    ]);
    assert_eq!(code, 2, "{err}");
}
