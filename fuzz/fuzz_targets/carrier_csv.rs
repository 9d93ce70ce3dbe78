//! Measured carrier CSV: parse, then turn into a carrier timeline over a short run.
#![no_main]
use libfuzzer_sys::fuzz_target;
use railpath_core::Time;
use railpath_radio::measured::{parse_csv, MeasuredData};
use railpath_radio::{CarrierConfig, CarrierModel, TrainConfig};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(rows) = parse_csv(text, "fuzz.csv") else {
        return;
    };
    let mut c = CarrierConfig::grid("c", 10.0, 1000.0, 0.0);
    c.model = CarrierModel::Csv;
    c.rate_mbps = None;
    c.enb_spacing_m = None;
    c.csv = Some("fuzz.csv".into());
    c.measured = Some(MeasuredData::Csv {
        file: "fuzz.csv".into(),
        rows,
    });
    let _ = railpath_radio::carrier_timelines(
        &TrainConfig::constant(100.0),
        &[c],
        1,
        Time::from_secs(5),
    );
});
