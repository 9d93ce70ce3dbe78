//! Shared by the capture tests: scratch directories and tshark.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh scratch directory under the target's tmp dir.
pub fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("capture-{name}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether tshark runs here; prints a loud SKIP line when not.
pub fn tshark_available(test: &str) -> bool {
    match Command::new("tshark").arg("--version").output() {
        Ok(o) if o.status.success() => true,
        _ => {
            eprintln!(
                "SKIP {test}: tshark is not installed (scripts/setup.sh installs Debian's tshark)"
            );
            false
        }
    }
}

/// `tshark -r FILE -Y FILTER -T fields -e F...` with MPTCP analysis on; one Vec per packet.
pub fn tshark_fields(file: &Path, filter: &str, fields: &[&str]) -> Vec<Vec<String>> {
    let mut c = Command::new("tshark");
    c.arg("-r")
        .arg(file)
        .args(["-o", "mptcp.analyze_mappings:TRUE"])
        .args(["-o", "mptcp.analyze_mptcp:TRUE"])
        .args(["-o", "mptcp.relative_sequence_numbers:TRUE"])
        .args(["-o", "tcp.relative_sequence_numbers:TRUE"])
        .args(["-Y", filter, "-T", "fields", "-E", "separator=|"]);
    for f in fields {
        c.args(["-e", f]);
    }
    let o = c.output().expect("tshark runs");
    assert!(
        o.status.success(),
        "tshark failed on {}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split('|').map(str::to_string).collect())
        .collect()
}

/// Packets tshark marks malformed (`_ws.malformed`) or with an error-level expert info.
pub fn tshark_malformed(file: &Path) -> usize {
    tshark_fields(
        file,
        "_ws.malformed || _ws.expert.severity == error",
        &["frame.number"],
    )
    .len()
}
