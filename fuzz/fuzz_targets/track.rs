//! Track files (`lat,lon` per line), then projecting positions onto the track.
#![no_main]
use libfuzzer_sys::fuzz_target;
use railpath_gateway::position::track::Track;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = Track::parse(text, "track.csv") {
        let _ = t.length_m();
        for (lat, lon) in [(0.0, 0.0), (48.1, 11.5), (-33.9, 151.2), (90.0, 180.0)] {
            let _ = t.project(lat, lon);
        }
    }
});
