//! Replay position feeds (`t_s,position_m,speed_mps`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = railpath_gateway::position::replay::parse(text, "feed.csv");
    }
});
