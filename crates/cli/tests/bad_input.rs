//! Malformed input through the real `railpath` binary: exit status 2 and a message on stderr
//! that names the file and the key (results.md, section CLI).

use std::path::{Path, PathBuf};
use std::process::Command;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests")
}

/// Run `railpath` with `args` in a scratch working directory (so that a run that wrongly
/// succeeded would write there); (exit code, stderr).
fn railpath(args: &[&str]) -> (i32, String) {
    // Removed when this returns, with anything a wrongly successful run wrote.
    let tmp = tempfile::Builder::new()
        .prefix("railpath-cli-bad-")
        .tempdir()
        .unwrap();
    let cwd = tmp.path();
    let o = Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run railpath");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// Each malformed scenario in tests/bad_scenarios/ and what its error message must contain.
const CASES: &[(&str, &[&str])] = &[
    (
        "misspelled_key.toml",
        &["link[0].rat_mbps: line 8, column 1: unknown field `rat_mbps`"],
    ),
    (
        "negative_rate.toml",
        &["link[0].rate_mbps: line 8: expected a number >= 0.001 and <= 100000 Mbit/s, found -10"],
    ),
    (
        "loss_one.toml",
        &["link[0].loss: line 10: expected a probability >= 0 and < 1, found 1"],
    ),
    (
        "flow_unknown_link.toml",
        &["flow[0].paths[0]: line 16: unknown link \"b\"; expected one of the [[link]] ids: \"a\""],
    ),
    (
        "duplicate_link_id.toml",
        &["link[1].id: line 13: duplicate link id \"a\" (also link[0])"],
    ),
    ("missing_run.toml", &["run: missing field `run`"]),
    (
        "zero_duration.toml",
        &["run.duration_s: line 3: expected a number > 0 and <= 1000000 s, found 0"],
    ),
    (
        "unknown_cc.toml",
        &[
            "flow[0].cc: line 15: unknown congestion control \"vegas\"",
            "newreno, cubic, bbr",
        ],
    ),
    (
        "syntax_error.toml",
        &["link[0].rate_mbps: line 8, column 13: "],
    ),
    (
        "tcp_two_paths.toml",
        &["flow[0].paths: line 20: a tcp flow takes exactly one link (more only with handoffs), found 2"],
    ),
    (
        "both_buffers.toml",
        &["link[0].buffer_bytes: line 11: give either buffer_packets or buffer_bytes, not both"],
    ),
    (
        "schedule_out_of_order.toml",
        &[
            "link[0].schedule[1].t_s: line 11: ",
            "expected > 5 s (schedule[0].t_s), found 3",
        ],
    ),
    (
        "missing_trace.toml",
        &["link[0].trace: line 8: cannot read trace ", "no-such-file.trace"],
    ),
    (
        "trace_bad_row.toml",
        &[
            "link[0].trace: line 8: trace ",
            "bad_row.trace line 3: ",
            "found \"3.5\"",
        ],
    ),
    (
        "unknown_kind.toml",
        &["flow[0].kind: line 14, column 8: unknown variant `quic`"],
    ),
    (
        "outage_misspelled.toml",
        &[
            "link[0].outages[1].durration_ms: line 11",
            "unknown field `durration_ms`",
        ],
    ),
    (
        "outages_overlap.toml",
        &[
            "link[0].outages[1].start_s: line 11: ",
            "expected >= 2.5 s (the end of outages[0]), found 2.2",
        ],
    ),
    (
        "flow_starts_after_end.toml",
        &["flow[0].start_s: line 17: expected a number >= 0 and < run.duration_s = 10 s, found 12"],
    ),
    (
        "negative_buffer.toml",
        &["link[0].buffer_packets: line 10, column 18: expected a whole number from 0 to 4294967295, found the whole number -1"],
    ),
    (
        "unknown_tcp_option.toml",
        &["tcp.nagle: line 4, column 1: unknown field `nagle`"],
    ),
    (
        "udp_with_cc.toml",
        &["flow[0].cc: line 15: a udp flow has no congestion control: remove cc"],
    ),
    (
        "bond_unknown_member.toml",
        &["bond[0].members[1]: line 12: unknown link \"c\"; expected one of the [[link]] ids: \"a\""],
    ),
    (
        "wifi_bad_phy_rate.toml",
        &["link[0].wifi.phy_mbps: line 8: expected one of the 802.11a/g OFDM rates"],
    ),
    (
        "wifi_minstrel_without_snr.toml",
        &["link[0].wifi.rate_control: line 8: rate_control = \"minstrel\" adapts the rate", "give the link's wifi.snr_db"],
    ),
    (
        "udp_max_below_mean.toml",
        &["flow[0].udp.max_mbps: line 18: expected a number >= mean_mbps = 16 Mbit/s"],
    ),
    (
        "balancer_unknown_link.toml",
        &["balancer[0].links[1]: line 12: unknown link \"isp-c\"; expected one of the [[link]] ids: \"isp-a\""],
    ),
    (
        "proxy_without_access.toml",
        &["flow[0].proxy: line 19: a proxy relays onto the in-car link: give access = \"<link id>\" too"],
    ),
    (
        "periodic_outages_overlap.toml",
        &["link[0].outages: line 10: repeated outages overlap: one starts at 24 s before the one from 24 s ends"],
    ),
    (
        "delay_range_min_above_max.toml",
        &["link[0].delay_range.max_ms: line 9: expected a number >= 85 and <= 10000 ms (at least min_ms), found 45"],
    ),
];

#[test]
fn every_bad_scenario_exits_2_naming_file_and_key() {
    let mut failures = Vec::new();
    for (file, wanted) in CASES {
        let path = dir().join("bad_scenarios").join(file);
        assert!(path.exists(), "{} missing", path.display());
        let (code, err) = railpath(&["run", path.to_str().unwrap()]);
        let prefix = format!("error: {}: ", path.display());
        if code != 2 || !err.starts_with(&prefix) || !wanted.iter().all(|w| err.contains(w)) {
            failures.push(format!(
                "{file}: exit {code}, stderr {err:?}, wanted {prefix:?} and {wanted:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_file_in_bad_scenarios_has_a_case() {
    for e in std::fs::read_dir(dir().join("bad_scenarios")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".toml") {
            assert!(
                CASES.iter().any(|(f, _)| *f == name),
                "{name} has no case in CASES"
            );
        }
    }
}

fn small() -> String {
    dir().join("scenarios/small.toml").display().to_string()
}

#[test]
fn bad_set_paths_exit_2_naming_the_override() {
    let s = small();
    let cases: &[(&str, &str)] = &[
        (
            "link.zz.rate_mbps=1",
            "--set link.zz.rate_mbps=1: `link` has no entry with id \"zz\"; ids: \"a\"",
        ),
        (
            "link[3].loss=0.1",
            "--set link[3].loss=0.1: `link` has 1 entries; index 3 is out of range",
        ),
        (
            "link.a.rat_mbps=1",
            "--set link.a.rat_mbps=1: unknown field `rat_mbps`",
        ),
        (
            "run.duration_s=abc",
            "--set run.duration_s=abc: expected a number, found the text \"abc\"",
        ),
        ("run.seed", "--set run.seed: expected key.path=value"),
        ("flw.dl.cc=bbr", "--set flw.dl.cc=bbr: unknown field `flw`"),
    ];
    for (set, wanted) in cases {
        let (code, err) = railpath(&["run", &s, "--set", set]);
        assert_eq!(code, 2, "--set {set}: {err}");
        assert!(err.starts_with(&format!("error: {s}: ")), "{err}");
        assert!(
            err.contains(wanted),
            "--set {set}: {err:?} lacks {wanted:?}"
        );
    }
    // An override that is well formed but out of range is reported by the key it sets.
    let (code, err) = railpath(&["run", &s, "--set", "link.a.loss=1"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("link[0].loss: expected a probability"),
        "{err}"
    );
}

#[test]
fn missing_file_and_bad_arguments_exit_2() {
    let (code, err) = railpath(&["run", "/nonexistent/scenario.toml"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("/nonexistent/scenario.toml: cannot read scenario file"),
        "{err}"
    );
    let (code, err) = railpath(&["run", &small(), "--seed", "many"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("invalid value 'many' for '--seed <SEED>'"),
        "{err}"
    );
    let (code, err) = railpath(&["bench", "--case", "no-such-case", "--repeat", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("matches no benchmark case"), "{err}");
}
