//! scripts/run-main.sh (the main job of `make run`) runs every example scenario and writes
//! each one's summary.json and timeseries.csv; here with the test build of the binary.

use std::path::Path;
use std::process::Command;

#[test]
fn run_main_runs_every_example_scenario() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::env::temp_dir().join(format!("railpath-run-main-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let o = Command::new("bash")
        .arg(root.join("scripts/run-main.sh"))
        .arg(&out)
        .env("RAILPATH_BIN", env!("CARGO_BIN_EXE_railpath"))
        .output()
        .expect("run bash");
    assert!(
        o.status.success(),
        "run-main.sh failed ({:?}): {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    let mut n = 0;
    for e in std::fs::read_dir(root.join("scenarios")).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        let name = p.file_stem().unwrap().to_str().unwrap().to_string();
        for f in ["summary.json", "timeseries.csv"] {
            assert!(out.join(&name).join(f).is_file(), "no {f} for {name}");
        }
        n += 1;
    }
    assert!(n >= 3);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains(&format!("run-main: {n} scenarios")),
        "{stdout}"
    );
    // It ends with the reproductions and says where their index is.
    assert!(out.join("repro/index.html").is_file());
    assert!(out.join("repro/pha/report.html").is_file());
    let last = stdout.lines().last().unwrap_or("");
    assert!(last.contains("repro/index.html"), "{last}");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn run_main_reports_a_missing_binary() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let o = Command::new("bash")
        .arg(root.join("scripts/run-main.sh"))
        .arg(std::env::temp_dir().join("railpath-run-main-unused"))
        .env("RAILPATH_BIN", "/nonexistent/railpath")
        .output()
        .expect("run bash");
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no railpath binary at /nonexistent/railpath")
    );
}
