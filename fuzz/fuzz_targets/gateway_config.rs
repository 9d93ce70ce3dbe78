//! The gateway's TOML configuration (`railpath-gateway check`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = railpath_gateway::config::Config::parse(text, "gateway.toml");
    }
});
