//! Helpers shared by the integration tests.
#![allow(dead_code)]

use railpath_scenario::{parse_str, Scenario};
use railpath_sim::results::{FlowSummary, LinkSummary, RunResults};

pub fn scenario(text: &str) -> Scenario {
    let s = parse_str(text, "test.toml").expect("parse");
    s.validate().expect("valid");
    s
}

/// The example scenario at `rel` under scenarios/, with `--set` overrides, resolved.
pub fn scenario_file(rel: &str, over: &[&str]) -> railpath_scenario::Resolved {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios")
        .join(rel);
    let over: Vec<String> = over.iter().map(|o| o.to_string()).collect();
    railpath_scenario::load(&p, &over)
        .unwrap_or_else(|e| panic!("{e}"))
        .validate()
        .unwrap_or_else(|e| panic!("{e}"))
}

pub fn run(text: &str) -> RunResults {
    railpath_sim::run(&(scenario(text)).validate().unwrap()).expect("run")
}

pub fn flow<'a>(r: &'a RunResults, id: &str) -> &'a FlowSummary {
    r.summary.flows.iter().find(|f| f.id == id).expect("flow")
}

/// The values of one series (`subflow` "" for a whole flow, the link id for link metrics).
pub fn series<'a>(r: &'a RunResults, flow: &str, subflow: &str, metric: &str) -> &'a [f64] {
    &r.series
        .iter()
        .find(|s| s.flow == flow && s.subflow == subflow && s.metric == metric)
        .unwrap_or_else(|| panic!("no series {flow}/{subflow}/{metric}"))
        .values
}

pub fn link<'a>(r: &'a RunResults, id: &str) -> &'a LinkSummary {
    r.summary.links.iter().find(|l| l.id == id).expect("link")
}

/// One bulk TCP flow over one link.
pub fn one_flow(
    cc: &str,
    rate_mbps: f64,
    delay_ms: f64,
    buffer: u32,
    duration_s: f64,
    extra_link: &str,
) -> String {
    format!(
        r#"
[run]
duration_s = {duration_s}
seed = 1

[[link]]
id = "a"
rate_mbps = {rate_mbps}
delay_ms = {delay_ms}
buffer_packets = {buffer}
{extra_link}

[[flow]]
id = "f"
kind = "tcp"
cc = "{cc}"
paths = ["a"]
"#
    )
}

/// rate x 1448/1500: what TCP with timestamps can deliver to the application.
pub fn achievable_bps(rate_mbps: f64) -> f64 {
    rate_mbps * 1e6 * 1448.0 / 1500.0
}
