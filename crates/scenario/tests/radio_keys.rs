//! The radio model's scenario keys (`[train]`, `[[carrier]]`, `link.carrier`): the example of
//! results.md loads, and each kind of mistake names its key.

use railpath_scenario::{load, parse_str};
use std::path::PathBuf;

const BASE: &str = r#"
[run]
duration_s = 70
seed = 1

[train]
speed_kmh = 300
track_length_m = 6000
start_m = 0

[[carrier]]
id = "A"
rate_mbps = 25
enb_spacing_m = 1340
enb_offset_m = 300
first_enb_m = 0
hysteresis_db = 3
ttt_ms = 256
interruption_ms = 50

[[carrier]]
id = "B"
rate_mbps = 25
enb_spacing_m = 1340
first_enb_m = 670

[[link]]
id = "a"
carrier = "A"
delay_ms = 20
buffer_packets = 200

[[link]]
id = "b"
carrier = "B"
delay_ms = 20

[[flow]]
id = "dl"
kind = "tcp"
cc = "cubic"
paths = ["a"]
"#;

fn check(text: &str) -> Result<(), (String, String)> {
    let s = parse_str(text, "pha.toml").map_err(|e| (e.key, e.message))?;
    s.validate().map(|_| ()).map_err(|e| (e.key, e.message))
}

#[test]
fn results_md_example_validates() {
    check(BASE).unwrap();
    let s = parse_str(BASE, "pha.toml").unwrap();
    assert_eq!(s.carriers.len(), 2);
    assert_eq!(s.links[0].carrier.as_deref(), Some("A"));
    assert_eq!(s.train.as_ref().unwrap().speed_kmh, Some(300.0));
}

#[test]
fn mistakes_name_their_key() {
    let e = check(&BASE.replace("carrier = \"B\"", "carrier = \"C\"")).unwrap_err();
    assert_eq!(e.0, "link[1].carrier");
    assert!(e.1.contains("\"A\", \"B\""), "{}", e.1);
    let e = check(&BASE.replace("first_enb_m = 670", "first_enb_m = 670\nenb_spacing_m = 0"))
        .unwrap_err();
    // A duplicated TOML key is a parse error naming the key.
    assert_eq!(e.0, "carrier[1].enb_spacing_m");
    let e = check(&BASE.replace(
        "enb_spacing_m = 1340\nfirst_enb_m = 670",
        "enb_spacing_m = -1\nfirst_enb_m = 670",
    ))
    .unwrap_err();
    assert_eq!(e.0, "carrier[1].enb_spacing_m");
    let e = check(&BASE.replace("ttt_ms = 256", "ttt_ms = 250")).unwrap_err();
    assert_eq!(e.0, "carrier[0].ttt_ms");
    let e = check(&BASE.replace("[train]\nspeed_kmh = 300", "[train]\nspeed_kmh = 0")).unwrap_err();
    assert_eq!(e.0, "train.speed_kmh");
    let e = check(&BASE.replace("hysteresis_db = 3", "hysteresis = 3")).unwrap_err();
    assert!(e.1.contains("hysteresis"), "{e:?}");
    let e = check(&BASE.replace("carrier = \"A\"", "carrier = \"A\"\nrate_mbps = 10")).unwrap_err();
    assert_eq!(e.0, "link[0].rate_mbps");
    let no_train = BASE.replace(
        "[train]\nspeed_kmh = 300\ntrack_length_m = 6000\nstart_m = 0\n",
        "",
    );
    let e = check(&no_train).unwrap_err();
    assert_eq!(e.0, "train");
}

#[test]
fn measured_csv_is_loaded_and_a_bad_row_is_named() {
    let dir = std::env::temp_dir().join(format!("railpath-scenario-radio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = BASE.replace(
        "[[carrier]]\nid = \"B\"\nrate_mbps = 25\nenb_spacing_m = 1340\nfirst_enb_m = 670",
        "[[carrier]]\nid = \"B\"\nmodel = \"csv\"\ncsv = \"b.csv\"",
    );
    let path: PathBuf = dir.join("s.toml");
    std::fs::write(&path, &scenario).unwrap();
    std::fs::write(
        dir.join("b.csv"),
        "t_s,position_m,throughput_mbps,handover\n0,0,20,0\n12,1000,18,1\n",
    )
    .unwrap();
    let s = load(&path, &[]).unwrap();
    assert!(s.carriers[1].measured.is_some());
    std::fs::write(
        dir.join("b.csv"),
        "t_s,position_m,throughput_mbps,handover\n0,0,20,0\n12,1000,x,1\n",
    )
    .unwrap();
    let e = load(&path, &[]).unwrap_err();
    assert!(e.file.ends_with("b.csv"), "{e}");
    assert_eq!(e.key, "line 3, column throughput_mbps");
    std::fs::remove_file(dir.join("b.csv")).unwrap();
    let e = load(&path, &[]).unwrap_err();
    assert_eq!(e.key, "carrier[1].csv");
    std::fs::remove_dir_all(&dir).unwrap();
}
