//! `railpath run` end to end: the files it writes (results.md: summary.json fields and the
//! long-format timeseries.csv) and determinism (same scenario and seed, same bytes).

use std::path::{Path, PathBuf};
use std::process::Command;

fn small() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios/small.toml")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("railpath-cli-run-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// `railpath run small.toml --out DIR extra...`; panics unless it exits 0. Returns stdout.
fn run_ok(out: &Path, extra: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .arg("run")
        .arg(small())
        .arg("--out")
        .arg(out)
        .args(extra)
        .output()
        .expect("run railpath");
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn summary(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("summary.json")).expect("summary.json");
    serde_json::from_str(&text).expect("summary.json is JSON")
}

#[test]
fn run_writes_summary_and_timeseries() {
    let out = scratch("files");
    let stdout = run_ok(&out, &[]);
    let s = summary(&out);
    for k in [
        "railpath_version",
        "scenario",
        "seed",
        "sim_duration_s",
        "wall_s",
        "events",
        "flows",
        "links",
        "handovers",
    ] {
        assert!(s.get(k).is_some(), "summary.json lacks {k}: {s}");
    }
    assert_eq!(s["seed"], 1);
    assert_eq!(s["sim_duration_s"], 3.0);
    assert!(s["wall_s"].as_f64().unwrap() > 0.0, "wall_s is measured");
    assert!(s["events"].as_u64().unwrap() > 0);
    let flows = s["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 1);
    let f = &flows[0];
    for k in [
        "id",
        "kind",
        "cc",
        "scheduler",
        "mechanisms",
        "goodput_bps",
        "delivered_bytes",
        "sent_packets",
        "retransmitted_packets",
        "handover_goodput_bps",
        "subflows",
        "receive_buffer",
        "send_buffer",
        "reorder_delay_ms",
    ] {
        assert!(f.get(k).is_some(), "flow lacks {k}: {f}");
    }
    assert_eq!(
        (f["id"].as_str(), f["kind"].as_str(), f["cc"].as_str()),
        (Some("dl"), Some("tcp"), Some("newreno"))
    );
    // A bulk flow on a 5 Mbit/s link moves data, and not faster than the link.
    let g = f["goodput_bps"].as_f64().unwrap();
    assert!(g > 0.0 && g <= 5e6, "goodput {g}");
    // The tcp-only flow has null mptcp objects.
    assert!(
        f["subflows"].is_null() && f["receive_buffer"].is_null(),
        "{f}"
    );

    let csv = std::fs::read_to_string(out.join("timeseries.csv")).expect("timeseries.csv");
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("t_s,flow,subflow,metric,value"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 5), "every row has 5 columns");
    for metric in ["goodput_bps", "cwnd_bytes", "srtt_ms", "queue_bytes"] {
        assert!(rows.iter().any(|r| r[3] == metric), "no {metric} rows");
    }
    // Bins of 100 ms over 3 s: the goodput series of flow dl has 30 rows ending at t = 3.
    let g: Vec<&Vec<&str>> = rows
        .iter()
        .filter(|r| r[1] == "dl" && r[3] == "goodput_bps")
        .collect();
    assert_eq!(g.len(), 30);
    assert_eq!(g.last().unwrap()[0].parse::<f64>().unwrap(), 3.0);

    // The printed table has the flow.
    assert!(
        stdout
            .lines()
            .any(|l| l.split_whitespace().next() == Some("dl")),
        "{stdout}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// summary.json without its `wall_s` line (the one field that depends on the machine).
fn summary_without_wall(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("\"wall_s\""))
        .collect();
    assert_eq!(
        kept.len() + 1,
        text.lines().count(),
        "exactly one wall_s line"
    );
    kept.join("\n")
}

#[test]
fn same_seed_same_bytes_other_seed_other_run() {
    let (a, b, c) = (scratch("a"), scratch("b"), scratch("c"));
    run_ok(&a, &[]);
    run_ok(&b, &["--seed", "1"]);
    run_ok(&c, &["--seed", "2"]);
    assert_eq!(summary_without_wall(&a), summary_without_wall(&b));
    let csv = |d: &Path| std::fs::read(d.join("timeseries.csv")).unwrap();
    assert!(
        csv(&a) == csv(&b),
        "timeseries.csv differs between two runs with seed 1"
    );
    // The link has 1 % random loss: another seed draws other losses.
    assert_eq!(summary(&c)["seed"], 2);
    assert_ne!(
        summary_without_wall(&a),
        summary_without_wall(&c).replace("\"seed\": 2", "\"seed\": 1")
    );
    for d in [a, b, c] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn set_overrides_reach_the_run() {
    let out = scratch("set");
    run_ok(
        &out,
        &["--set", "flow.dl.cc=cubic", "--set", "link[0].rate_mbps=2"],
    );
    let s = summary(&out);
    assert_eq!(s["flows"][0]["cc"], "cubic");
    let g = s["flows"][0]["goodput_bps"].as_f64().unwrap();
    assert!(g > 0.0 && g <= 2e6, "goodput {g} over a 2 Mbit/s link");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn bench_prints_one_json_line_per_selected_case() {
    let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args(["bench", "--case", "newreno", "--repeat", "1"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let stdout = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{stdout}");
    let v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    assert_eq!(v["case"], "tcp-newreno-10mbps-10ms-100pkt-60s");
    assert_eq!(v["sim_s"], 60.0);
    let (events, wall) = (v["events"].as_f64().unwrap(), v["wall_s"].as_f64().unwrap());
    assert!(events > 0.0 && wall > 0.0);
    let rate = v["events_per_s"].as_f64().unwrap();
    assert!((rate - events / wall).abs() <= 1e-9 * rate);
}
