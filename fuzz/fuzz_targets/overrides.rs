//! `--set` overrides: each input line is one `key.path=value`, applied in order to a scenario
//! with links, carriers of two models and an MPTCP flow, then validated and run when small.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

const BASE: &str = include_str!("../../crates/cli/tests/scenarios/carriers.toml");

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut table: toml::Table = BASE.parse().expect("the base scenario parses");
    for line in text.lines().take(16) {
        if railpath_scenario::apply_override(&mut table, line).is_err() {
            return;
        }
    }
    if let Ok(s) = railpath_scenario::from_table(table, "fuzz.toml") {
        common::validate_and_run(&s);
    }
});
