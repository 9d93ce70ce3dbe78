//! The scheduler a flow's `scheduler` names, built behind [`Scheduler`] (the one place that
//! knows every scheduler; `mod.rs` holds the trait and snapshots they share).

use super::{blest, ecf, linux_default, minrtt, peekaboo, redundant, round_robin, Scheduler};
use railpath_core::Rng;
use railpath_scenario::SchedulerKind;

/// Build scheduler `kind`. `rng` is used only by the schedulers that draw random numbers
/// (Peekaboo); pass a stream of its own, e.g. `Rng::stream(seed, "sched/<flow>")`.
pub fn build(kind: SchedulerKind, rng: Rng) -> Box<dyn Scheduler> {
    match kind {
        SchedulerKind::MinRtt => Box::new(minrtt::MinRtt),
        SchedulerKind::RoundRobin => Box::new(round_robin::RoundRobin::default()),
        SchedulerKind::Redundant => Box::new(redundant::Redundant),
        SchedulerKind::Ecf => Box::new(ecf::Ecf::default()),
        SchedulerKind::Blest => Box::new(blest::Blest::default()),
        SchedulerKind::Peekaboo => Box::new(peekaboo::Peekaboo::new(rng)),
        SchedulerKind::LinuxDefault => Box::new(linux_default::LinuxDefault::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_name_builds_and_reports_its_name() {
        // The scenario's list of names and the enum agree, and each builds what it names.
        let names: Vec<&str> = SchedulerKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names, railpath_scenario::MPTCP_SCHEDULERS);
        for kind in SchedulerKind::ALL {
            let s = build(kind, Rng::stream(0, "t"));
            assert_eq!(s.name(), kind.as_str());
            assert_eq!(s.redundant(), kind == SchedulerKind::Redundant);
        }
    }
}
