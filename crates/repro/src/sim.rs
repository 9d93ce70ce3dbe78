//! The reproductions' one door to the simulator: every scenario they load and every run they
//! make goes through here, so the engine's entry point (and the form of scenario it takes)
//! changes in this file alone.

use railpath_radio::table::HandoverTable;
use railpath_scenario::Scenario;
use railpath_sim::{RunResults, Time};
use std::path::Path;

/// The version the summaries name.
pub const VERSION: &str = railpath_sim::VERSION;

/// Load a scenario embedded in the crate (`file` names it in errors), with `overrides` as a
/// user's `--set` would give them, validated.
pub fn load(text: &str, file: &str, overrides: &[String]) -> Result<Scenario, String> {
    railpath_scenario::load_text(text, file, Path::new("."), overrides).map_err(|e| e.to_string())
}

/// Check a scenario the study changed after loading it.
pub fn check(s: &Scenario) -> Result<(), String> {
    s.validate().map(|_| ()).map_err(|e| e.to_string())
}

/// Run a scenario in the simulator: validated and resolved, then simulated.
pub fn simulate(s: &Scenario) -> Result<RunResults, String> {
    let r = s.validate().map_err(|e| e.to_string())?;
    railpath_sim::run(&r).map_err(|e| e.to_string())
}

/// A handover table learned for flow `flow` of `s` from `runs` runs of the radio model alone
/// (seeds `seed + 1 ..= seed + runs`), zones widened by the flow's GPS error.
pub fn learn_table(
    s: &Scenario,
    flow: usize,
    seed: u64,
    runs: u32,
) -> Result<HandoverTable, String> {
    let r = s.validate().map_err(|e| e.to_string())?;
    let radio = r
        .radio
        .as_ref()
        .ok_or("the scenario has no train radio model")?;
    let f = &s.flows[flow];
    let gps = f
        .gps_error_m
        .unwrap_or(railpath_sim::mechanisms::pha::DEFAULT_GPS_ERROR_M);
    let end = Time::from_secs_f64(s.run.duration_s);
    railpath_sim::mechanisms::pha::learn_table(radio, seed, runs, gps, end)
        .map_err(|e| format!("flow {:?}: {e}", f.id))
}

/// PHA-D's lead and way back (how long before a predicted zone the controller flips a carrier
/// to backup, and before the zone's end back to regular) for flow `flow` of `s`, an mptcp flow.
pub fn phad_lead_back(s: &Scenario, flow: usize) -> Result<(Time, Time), String> {
    let r = s.validate().map_err(|e| e.to_string())?;
    let m = r.flows[flow]
        .mptcp()
        .ok_or_else(|| format!("flow {:?} is not an mptcp flow", s.flows[flow].id))?;
    Ok(railpath_sim::mechanisms::pha::phad_lead_back(&r, m))
}

/// The times (s) of each carrier's handovers on the scenario's train, for `seed`.
pub fn handover_times(s: &Scenario, seed: u64) -> Result<Vec<Vec<f64>>, String> {
    Ok(timelines(s, seed)?
        .iter()
        .map(|c| c.handovers.iter().map(|h| h.t_s).collect())
        .collect())
}

/// Every handover of the scenario's train for `seed` (the radio model alone, the carriers as
/// resolved: a profile's failure model applied), in the order of the carriers then time.
pub fn handovers(s: &Scenario, seed: u64) -> Result<Vec<railpath_radio::HandoverRecord>, String> {
    Ok(timelines(s, seed)?
        .iter()
        .flat_map(|t| t.handovers.iter().cloned())
        .collect())
}

/// Each carrier's timeline on the scenario's train for `seed`, from the resolved carriers (a
/// profile applied), over the run's duration.
fn timelines(
    s: &Scenario,
    seed: u64,
) -> Result<std::sync::Arc<Vec<railpath_radio::CarrierTimeline>>, String> {
    let r = s.validate().map_err(|e| e.to_string())?;
    let radio = r
        .radio
        .as_ref()
        .ok_or("the scenario has no train radio model")?;
    let end = Time::from_secs_f64(s.run.duration_s);
    railpath_radio::carrier_timelines_shared(&radio.train, &radio.carriers, seed, end)
        .map_err(|e| format!("radio model: {}: {}", e.key, e.message))
}
