//! Shared by the fuzz targets: what a scenario may cost to be run inside a fuzz iteration.

use railpath_scenario::{Budget, Scenario};

/// A budget small enough for one fuzz iteration (the fuzzer's own limits are 10 s and 2 GB).
pub const SMALL: Budget = Budget {
    bytes: 50e6,
    events: 2e5,
};

/// Validate `s` as the CLI does and, when its estimate fits [`SMALL`] and it names no file,
/// run it: a valid scenario must never panic, hang or exhaust memory in the engine.
pub fn validate_and_run(s: &Scenario) {
    let Ok(r) = s.validate() else {
        return;
    };
    if s.check_size(SMALL).is_err() {
        return;
    }
    let names_files = s
        .links
        .iter()
        .any(|l| l.trace.is_some() || l.reverse_trace.is_some())
        || s.carriers
            .iter()
            .any(|c| c.csv.is_some() || c.mahimahi.is_some())
        || s.flows.iter().any(|f| f.handover_table.is_some());
    if !names_files {
        let _ = railpath_sim::run(&r);
    }
}
