//! Property (issue 17): any scenario that validates and fits the budget finishes within a time
//! and a memory bound proportional to its size estimate (`Scenario::size_estimate`). Random
//! scenarios are drawn over the documented key ranges (links of 1 kbit/s to 1 Gbit/s, buffers
//! of 1 packet to 10^5, bins of 1 ms up, TCP and MPTCP flows, scripted and radio carriers with
//! dense grids and wide ranges), kept only when they validate and their estimate fits a test
//! budget, and run; the peak memory of the run (VmHWM, reset before each run through
//! /proc/self/clear_refs) and its wall time must stay within the bounds below.
//!
//! The bounds are loose on purpose (this is a hang and blow-up detector, not a benchmark): wall
//! time at most 10 s + 10 us per estimated event (the engine does 10-20 million events a second
//! in release builds, and the estimate is an upper bound of the events), memory at most
//! 2 x the estimate + 64 MB.

use railpath_core::Rng;
use std::time::Instant;

/// The test's budget: what a case may estimate at most (cases above it are refused by the
/// budget check in real use, which has its own tests).
const MAX_BYTES: f64 = 200e6;
const MAX_EVENTS: f64 = 2e7;

fn log_uniform(r: &mut Rng, lo: f64, hi: f64) -> f64 {
    (lo.ln() + r.uniform() * (hi.ln() - lo.ln())).exp()
}

/// A random scenario text over the documented ranges.
fn draw(r: &mut Rng) -> String {
    let duration = log_uniform(r, 0.5, 300.0);
    let bin = log_uniform(r, 1.0, 1000.0).min(duration * 1000.0);
    let mut t = format!(
        "[run]\nduration_s = {duration}\nbin_ms = {bin}\nseed = {}\n\n",
        r.below(1 << 40)
    );
    let radio = r.uniform() < 0.4;
    let mut carriers = Vec::new();
    if radio {
        t += &format!("[train]\nspeed_kmh = {}\n\n", log_uniform(r, 1.0, 600.0));
        let spacing = log_uniform(r, 50.0, 5000.0);
        t += &format!(
            "[[carrier]]\nid = \"r\"\nrate_mbps = {}\nenb_spacing_m = {spacing}\ncell_range_m = {}\n\n",
            log_uniform(r, 0.01, 200.0),
            spacing.max(log_uniform(r, 100.0, 50_000.0)),
        );
        let interruption = log_uniform(r, 1.0, 500.0);
        t += &format!(
            "[[carrier]]\nid = \"s\"\nmodel = \"scripted\"\nrate_mbps = {}\ninterruption_ms = {interruption}\nhandover_interval_s = {}\n\n",
            log_uniform(r, 0.01, 200.0),
            interruption / 1000.0 * (1.0 + log_uniform(r, 0.01, 100.0)),
        );
        carriers = vec!["r", "s"];
    }
    let nlinks = 1 + r.below(3) as usize;
    for i in 0..nlinks {
        t += &format!("[[link]]\nid = \"l{i}\"\n");
        if let Some(c) = carriers.get(i) {
            t += &format!("carrier = \"{c}\"\n");
        } else {
            t += &format!("rate_mbps = {}\n", log_uniform(r, 0.001, 1000.0));
        }
        t += &format!(
            "delay_ms = {}\nbuffer_packets = {}\n",
            log_uniform(r, 0.01, 500.0),
            log_uniform(r, 1.0, 1e5).round()
        );
        if r.uniform() < 0.3 {
            t += &format!("loss = {}\n", log_uniform(r, 1e-5, 0.3));
        }
        if r.uniform() < 0.3 {
            t += &format!(
                "outages = [{{ start_s = {}, duration_ms = {} }}]\n",
                duration * r.uniform(),
                log_uniform(r, 1.0, 10_000.0)
            );
        }
        t += "\n";
    }
    let mptcp = nlinks > 1 && r.uniform() < 0.6;
    let ccs = ["newreno", "cubic", "bbr"];
    if mptcp {
        let paths: Vec<String> = (0..nlinks).map(|i| format!("\"l{i}\"")).collect();
        let cc = ["lia", "olia", "balia", "uncoupled-cubic"][r.below(4) as usize];
        t += &format!(
            "[[flow]]\nid = \"m\"\nkind = \"mptcp\"\ncc = \"{cc}\"\npaths = [{}]\n",
            paths.join(", ")
        );
    } else {
        for i in 0..nlinks {
            t += &format!(
                "[[flow]]\nid = \"f{i}\"\nkind = \"tcp\"\ncc = \"{}\"\npaths = [\"l{i}\"]\n\n",
                ccs[r.below(3) as usize]
            );
        }
    }
    t
}

/// Peak resident memory of this process since the last reset, bytes.
fn peak_rss() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap();
    let kb: f64 = s
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap();
    kb * 1024.0
}

fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

#[test]
fn every_valid_scenario_within_budget_ends_within_its_estimate() {
    let mut r = Rng::from_seed(17);
    let (mut ran, mut tried) = (0, 0);
    // The largest estimate run, and the largest shares of their estimates used.
    let (mut max_est, mut max_mem_share, mut max_event_share, mut max_wall) =
        (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let can_measure_memory = reset_peak_rss();
    if !can_measure_memory {
        eprintln!(
            "NOTE: /proc/self/clear_refs cannot reset the peak RSS here; memory bound not checked"
        );
    }
    while ran < 100 {
        tried += 1;
        assert!(tried < 2000, "the generator gives too few valid cases");
        let text = draw(&mut r);
        let Ok(s) = railpath_scenario::parse_str(&text, "drawn.toml") else {
            continue;
        };
        if s.validate().is_err() {
            continue;
        }
        let parts = s.size_estimate();
        let bytes: f64 = parts.iter().map(|p| p.bytes).sum();
        let events: f64 = parts.iter().map(|p| p.work).sum();
        if bytes > MAX_BYTES || events > MAX_EVENTS {
            continue;
        }
        let base = if can_measure_memory {
            reset_peak_rss();
            peak_rss()
        } else {
            0.0
        };
        let start = Instant::now();
        let res = railpath_sim::run(&s.validate().unwrap());
        let wall = start.elapsed().as_secs_f64();
        let peak = peak_rss() - base;
        match res {
            Ok(out) => {
                max_event_share = max_event_share.max(out.summary.events as f64 / events);
                assert!(
                    out.summary.events as f64 <= events.max(1e4) * 1.5,
                    "{} events against an estimate of {events}:\n{text}",
                    out.summary.events
                );
            }
            // A run-time input error (no base station in reach) is allowed; a panic is not.
            Err(railpath_sim::SimError::Input(_)) => {}
            Err(e) => panic!("{e}:\n{text}"),
        }
        assert!(
            wall <= 10.0 + 1e-5 * events,
            "{wall:.1} s for an estimate of {events:.3e} events:\n{text}"
        );
        if can_measure_memory {
            assert!(
                peak <= 2.0 * bytes + 64e6,
                "peak {:.1} MB for an estimate of {:.1} MB:\n{text}",
                peak / 1e6,
                bytes / 1e6
            );
        }
        max_est = max_est.max(bytes);
        max_wall = max_wall.max(wall);
        if can_measure_memory && bytes > 10e6 {
            max_mem_share = max_mem_share.max(peak / bytes);
        }
        ran += 1;
    }
    eprintln!(
        "{ran} drawn scenarios ran within their estimates ({tried} drawn): largest estimate {:.1} MB, \
         peak memory up to {:.2} x the estimate (estimates over 10 MB), events up to {:.2} x, \
         longest run {max_wall:.2} s",
        max_est / 1e6,
        max_mem_share,
        max_event_share
    );
}
