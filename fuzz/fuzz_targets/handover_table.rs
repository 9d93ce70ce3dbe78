//! Handover table JSON: parse and validate, then predict along a stretch of track both ways.
#![no_main]
use libfuzzer_sys::fuzz_target;
use railpath_core::Time;
use railpath_radio::{HandoverTable, Predictor};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(t) = HandoverTable::from_json_str(text, "fuzz.json") else {
        return;
    };
    let p = Predictor::new(&t);
    for k in 0..50 {
        let x = f64::from(k) * 200.0;
        let _ = p.predict(x, 80.0, Time::from_secs(2));
        let _ = p.predict(x, -80.0, Time::from_secs(2));
    }
    for c in t.carriers.keys() {
        let _ = t.coverage(c, 0.0, 10_000.0);
    }
});
