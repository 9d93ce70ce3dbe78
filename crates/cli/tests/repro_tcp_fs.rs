//! `railpath repro tcp-fs` (issue 12): the TCP-FS paper's reproduction writes a summary whose
//! claims follow from its numbers (Table 1 with the paper's values beside railpath's), a report
//! with every plot that renders in headless Chromium, and is deterministic and quick.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

fn out_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("railpath-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn repro(out: &Path, seeds: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_railpath"))
        .args(["repro", "tcp-fs", "--seeds", seeds, "--out"])
        .arg(out)
        .output()
        .expect("run railpath")
}

fn summary(out: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("tcp-fs/summary.json")).unwrap())
        .unwrap()
}

#[test]
fn tcp_fs_reproduction_summary_claims_and_report() {
    let out = out_dir("repro-tcp-fs");
    let t = Instant::now();
    let o = repro(&out, "10");
    let took = t.elapsed();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The budget; the run takes about a second (docs/performance.md).
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let v = summary(&out);
    assert_eq!(v["paper"], "tcp-fs");
    assert_eq!(v["format"], "railpath-repro/1");
    assert_eq!(v["seeds"], 10);
    let numbers = v["numbers"].as_array().unwrap();
    let num = |id: &str| -> (f64, f64, f64) {
        let n = numbers
            .iter()
            .find(|n| n["id"] == id)
            .unwrap_or_else(|| panic!("no number {id}"));
        (
            n["railpath"].as_f64().unwrap(),
            n["ci95"][0].as_f64().unwrap(),
            n["ci95"][1].as_f64().unwrap(),
        )
    };
    for n in numbers {
        let id = n["id"].as_str().unwrap();
        let (m, lo, hi) = num(id);
        assert!(lo <= m && m <= hi, "{n}");
    }
    // Table 1, with the paper's values.
    let paper = |id: &str| {
        numbers.iter().find(|n| n["id"] == id).unwrap()["paper"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(paper("downward-blocked-sent-kb-newreno"), 200.0);
    assert_eq!(paper("downward-blocked-sent-kb-tcp-fs"), 0.0);
    assert_eq!(paper("downward-after-sent-kb-newreno"), 1018.0);
    assert_eq!(paper("downward-after-sent-kb-tcp-fs"), 1387.0);
    // TCP-FS sends nothing new while it cannot: what it sends then is retransmissions and the
    // segments that left before the zero window reached the sender, far less than NewReno.
    assert!(num("downward-blocked-sent-kb-tcp-fs").0 < num("downward-blocked-sent-kb-newreno").0);
    // The claims follow from the numbers.
    let claims = v["claims"].as_array().unwrap();
    let holds = |id: &str| -> bool {
        claims
            .iter()
            .find(|c| c["id"] == id)
            .unwrap_or_else(|| panic!("no claim {id}"))["holds"]
            .as_bool()
            .unwrap()
    };
    for dir in ["upward", "downward"] {
        let (_, lo, _) = num(&format!("{dir}-after-delivered-kb-tcp-fs-minus-newreno"));
        assert_eq!(
            holds(&format!("{dir}-tcp-fs-delivers-more-after-holding")),
            lo > 0.0
        );
    }
    let rates = railpath_repro::tcp_fs::WLAN_MBPS;
    let gain = |dir: &str, w: f64| num(&format!("{dir}-gain-pct-wlan{w}"));
    let every = ["upward", "downward"]
        .iter()
        .all(|d| rates.iter().all(|&w| gain(d, w).1 > 0.0));
    assert_eq!(holds("tcp-fs-beats-newreno-at-every-wlan-rate"), every);
    let last = rates[rates.len() - 1];
    let grows = ["upward", "downward"]
        .iter()
        .all(|d| gain(d, last).0 > gain(d, rates[0]).0);
    assert_eq!(holds("tcp-fs-gain-grows-with-wlan-rate"), grows);
    let avg = |d: &str| rates.iter().map(|&w| gain(d, w).0).sum::<f64>() / rates.len() as f64;
    assert_eq!(
        holds("tcp-fs-gain-larger-upward"),
        avg("upward") > avg("downward")
    );
    let fr = num("downward-fast-retransmits-after-handoff-tcp-fs");
    assert_eq!(
        holds("downward-tcp-fs-no-fast-retransmit"),
        fr.1 == 0.0 && fr.2 == 0.0
    );
    let html = std::fs::read_to_string(out.join("tcp-fs/report.html")).unwrap();
    assert_eq!(html.matches("<svg class=\"plot\"").count(), 6);
    for section in [
        "Table 1",
        "Figs. 8-9",
        "How much the unstated choices matter",
        "differ",
    ] {
        assert!(html.contains(section), "no {section}");
    }
    let index = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(index.contains("href=\"tcp-fs/report.html\""));
}

#[test]
fn tcp_fs_reproduction_is_deterministic() {
    let (a, b) = (out_dir("repro-tcp-fs-a"), out_dir("repro-tcp-fs-b"));
    assert!(repro(&a, "3").status.success());
    assert!(repro(&b, "3").status.success());
    assert_eq!(summary(&a), summary(&b));
    let report = |d: &Path| std::fs::read(d.join("tcp-fs/report.html")).unwrap();
    assert_eq!(report(&a), report(&b));
}

/// The report as a person sees it: headless Chromium loads it with no console errors and every
/// plot has drawn lines (`CHROMIUM` overrides the browser).
#[test]
fn tcp_fs_report_renders_in_headless_chromium() {
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "chromium".into());
    if Command::new(&chromium).arg("--version").output().is_err() {
        use std::io::Write;
        let msg = format!("no {chromium}: scripts/setup.sh installs Debian's chromium");
        if std::env::var_os("CI").is_some() {
            panic!("{msg}");
        }
        let _ = writeln!(std::io::stderr(), "SKIP tcp-fs report render test: {msg}");
        return;
    }
    let out = out_dir("repro-tcp-fs-shot");
    assert!(repro(&out, "3").status.success());
    let url = format!("file://{}", out.join("tcp-fs/report.html").display());
    let profile = out.join("chromium-profile");
    let dom = Command::new(&chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--virtual-time-budget=2000", "--dump-dom"])
        .arg(&url)
        .output()
        .expect("run chromium");
    let page = String::from_utf8_lossy(&dom.stdout);
    let log = String::from_utf8_lossy(&dom.stderr);
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    assert_eq!(page.matches("<svg class=\"plot\"").count(), 6, "{page}");
    // Four traces in each cwnd plot, two in each sequence plot, four and two in the sweep's.
    assert!(page.matches("class=\"series\"").count() >= 18);
}
