//! A run's summary.json as `railpath table learn` reads it, then learning a table from it.
#![no_main]
use libfuzzer_sys::fuzz_target;
use railpath_radio::table::handovers_from_summary;
use railpath_radio::HandoverTable;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(hs) = handovers_from_summary(text, "summary.json") {
        let runs = vec![("fuzz".to_string(), hs)];
        if let Ok(t) = HandoverTable::learn(&runs, 20.0) {
            let _ = t.validate("learned");
        }
    }
});
