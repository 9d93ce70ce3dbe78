//! The scenario files under testbed/ load, validate and convert into a testbed (no root needed).

use railpath_linkem::TestbedSpec;
use std::path::Path;

#[test]
fn testbed_scenarios_load_and_convert() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testbed");
    let mut n = 0;
    for e in std::fs::read_dir(&dir).expect("testbed/ exists") {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "toml") {
            let s = railpath_scenario::load(&p, &[]).unwrap_or_else(|e| panic!("{e}"));
            let r = s.validate().unwrap_or_else(|e| panic!("{e}"));
            let spec =
                TestbedSpec::from_resolved(&r).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert_eq!(spec.links.len(), s.links.len());
            n += 1;
        }
    }
    assert!(n >= 1, "no scenario files in {}", dir.display());
}
