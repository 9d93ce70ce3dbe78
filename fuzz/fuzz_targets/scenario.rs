//! Scenario TOML: parse, validate, size check, and a run when it is small.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(s) = railpath_scenario::parse_str(text, "fuzz.toml") {
            common::validate_and_run(&s);
        }
    }
});
