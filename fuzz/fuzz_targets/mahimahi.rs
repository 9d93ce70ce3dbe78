//! Mahimahi traces: parse, then bin into a carrier's rate steps over a short run.
#![no_main]
use libfuzzer_sys::fuzz_target;
use railpath_core::Time;
use railpath_radio::measured::MeasuredData;
use railpath_radio::{CarrierConfig, CarrierModel, TrainConfig};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(opportunities_ms) = railpath_scenario::parse_mahimahi(text, "fuzz.trace") else {
        return;
    };
    let mut c = CarrierConfig::grid("m", 10.0, 1000.0, 0.0);
    c.model = CarrierModel::Mahimahi;
    c.rate_mbps = None;
    c.enb_spacing_m = None;
    c.mahimahi = Some("fuzz.trace".into());
    c.mahimahi_bin_ms = 1.0 + (data.len() % 200) as f64;
    c.measured = Some(MeasuredData::Mahimahi {
        file: "fuzz.trace".into(),
        opportunities_ms,
    });
    let _ = railpath_radio::carrier_timelines(
        &TrainConfig::constant(100.0),
        &[c],
        1,
        Time::from_secs(5),
    );
});
