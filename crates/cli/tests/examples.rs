//! The example scenarios under scenarios/ (run by `make run`) stay valid against the schema,
//! traces included.

use std::path::Path;

#[test]
fn every_example_scenario_loads_and_validates() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("scenarios/ exists") {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("toml") {
            continue;
        }
        railpath_scenario::load(&p, &[]).unwrap_or_else(|e| panic!("{e}"));
        n += 1;
    }
    assert!(n >= 3, "expected at least 3 example scenarios, found {n}");
}
