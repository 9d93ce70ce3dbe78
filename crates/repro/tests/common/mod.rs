//! Readers of a reproduction's summary.json and the tests' scratch directories, shared by the
//! reproductions' tests here and the CLI's (`crates/cli/tests`, which include this file by path);
//! each test file uses some of them.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// A test's scratch directory: removed when the test passes, kept when it fails (its path on
/// stderr), for a look at what the run wrote.
pub struct Scratch(tempfile::TempDir);

impl Scratch {
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.disable_cleanup(true);
            eprintln!(
                "test failed: its scratch directory is kept: {}",
                self.0.path().display()
            );
        }
    }
}

/// A fresh scratch directory for test `name` (see [`Scratch`]) and an output path in it that
/// does not exist yet (the command creates it).
pub fn out_dir(name: &str) -> (Scratch, PathBuf) {
    let prefix = format!("railpath-{name}-");
    let tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir()
        .expect("temp dir");
    let path = tmp.path().join("out");
    (Scratch(tmp), path)
}

/// A reproduction summary's number `id`: (railpath, its 95% interval's ends, the paper's).
pub fn number(v: &serde_json::Value, id: &str) -> (f64, f64, f64, Option<f64>) {
    let n = v["numbers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == id)
        .unwrap_or_else(|| panic!("no number {id}"));
    (
        n["railpath"].as_f64().unwrap(),
        n["ci95"][0].as_f64().unwrap(),
        n["ci95"][1].as_f64().unwrap(),
        n["paper"].as_f64(),
    )
}

/// Whether a reproduction summary's claim `id` holds.
pub fn claim_holds(v: &serde_json::Value, id: &str) -> bool {
    v["claims"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no claim {id}"))["holds"]
        .as_bool()
        .unwrap()
}

/// Every number of a reproduction summary lies within its own interval.
pub fn assert_numbers_within_intervals(v: &serde_json::Value) {
    for n in v["numbers"].as_array().unwrap() {
        let (m, lo, hi, _) = number(v, n["id"].as_str().unwrap());
        assert!(lo <= m && m <= hi, "{n}");
    }
}
