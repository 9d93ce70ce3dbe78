//! NMEA sentences from a serial GPS receiver, line by line.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for line in String::from_utf8_lossy(data).lines() {
        let _ = railpath_gateway::position::nmea::parse_line(line);
    }
});
