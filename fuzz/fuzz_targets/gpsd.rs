//! gpsd's JSON reports, line by line (a network peer).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for line in String::from_utf8_lossy(data).lines() {
        let _ = railpath_gateway::position::gpsd::parse_line(line);
    }
});
