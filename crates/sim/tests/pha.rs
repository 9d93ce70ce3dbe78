//! PHA and PHA-D (issue 10): the plan from positions and zones by hand, and the rules on every
//! send of radio-model runs.

mod common;
use common::*;
use railpath_radio::table::HandoverTable;
use railpath_sim::mechanisms::pha::plan;
use railpath_sim::Time;

/// The PHA geometry at 360 km/h (100 m/s: positions turn into times by hand), 30 s.
fn geometry(mechanism: &str, extra: &str) -> String {
    format!(
        r#"
[run]
duration_s = 30
seed = 1
[train]
speed_kmh = 360
start_m = 0
[[carrier]]
id = "A"
rate_mbps = 25
enb_spacing_m = 1340
enb_offset_m = 300
first_enb_m = 0
interruption_ms = 50
[[carrier]]
id = "B"
rate_mbps = 25
enb_spacing_m = 1340
enb_offset_m = 300
first_enb_m = 670
interruption_ms = 50
[[link]]
id = "a"
carrier = "A"
delay_ms = 20
buffer_packets = 200
[[link]]
id = "b"
carrier = "B"
delay_ms = 20
buffer_packets = 200
[[flow]]
id = "m"
kind = "mptcp"
cc = "lia"
scheduler = "minrtt"
paths = ["a", "b"]
mechanisms = [{mechanism}]
handover_table_learn_runs = 10
{extra}
"#
    )
}

fn hand_table() -> HandoverTable {
    HandoverTable::from_json_str(
        r#"{"format": "railpath-handover-table/1", "gps_error_m": 0.0, "runs": 1,
            "carriers": {"A": {"zones": [{"start_m": 1000.0, "end_m": 1100.0, "count": 1}], "runs": 1},
                         "B": {"zones": [{"start_m": 2000.0, "end_m": 2040.0, "count": 1}], "runs": 1}}}"#,
        "hand.json",
    )
    .unwrap()
}

#[test]
fn pha_blocks_a_carrier_exactly_while_the_train_is_in_its_zone() {
    let mut s = scenario(&geometry("\"pha\"", "gps_error_m = 0"));
    s.flows[0].handover_table_data = Some(hand_table());
    let r = s.validate().unwrap();
    let p = plan(&r, "m", r.flows[0].mptcp().unwrap(), Time::from_secs(30))
        .unwrap()
        .unwrap();
    assert_eq!(p.kind, railpath_sim::mechanisms::pha::PlanKind::Pha);
    // 100 m/s, no GPS error: in A's zone [1000, 1100] m from 10.00 s to 11.00 s (the sample
    // at 11.00 s is at 1100 m, still in; out at 11.01 s); B's [2000, 2040] m: 20.00-20.41 s.
    let ms = Time::from_ms;
    assert!(!p.blocks.blocked(0, ms(9_990)));
    assert!(p.blocks.blocked(0, ms(10_000)));
    assert!(p.blocks.blocked(0, ms(11_000)));
    assert!(!p.blocks.blocked(0, ms(11_010)));
    assert!(!p.blocks.blocked(1, ms(10_500)));
    assert!(p.blocks.blocked(1, ms(20_000)) && p.blocks.blocked(1, ms(20_400)));
    assert!(!p.blocks.blocked(1, ms(20_410)));
    assert_eq!(p.blocks.total(), ms(1_010 + 410));
    assert!(p.prio.is_empty());
}

#[test]
fn pha_d_sends_mp_prio_a_lead_ahead_and_a_margin_before_the_end() {
    let mut s = scenario(&geometry(
        "\"pha-d\"",
        "phad_lead_ms = 200\nphad_back_ms = 100\ngps_error_m = 0",
    ));
    s.flows[0].handover_table_data = Some(hand_table());
    let r = s.validate().unwrap();
    let p = plan(&r, "m", r.flows[0].mptcp().unwrap(), Time::from_secs(30))
        .unwrap()
        .unwrap();
    // Backup once the zone is entered within 200 ms (20 m at 100 m/s: from 980 m, 9.80 s)
    // until it is left within 100 ms (from 1100 - 10 = 1090 m, 10.90 s); B: 1980 m to 2030 m,
    // 19.80 s to 20.30 s. MP_PRIO(B=1) and (B=0) at exactly those times, from the receiver.
    let ms = Time::from_ms;
    assert_eq!(
        p.prio,
        vec![
            (ms(9_800), 0, true),
            (ms(10_900), 0, false),
            (ms(19_800), 1, true),
            (ms(20_300), 1, false),
        ]
    );
    // The lead is at least the RTT the option needs: default = one full-queue RTT of the
    // slowest path, 2 x 20 ms + 200 packets x 1500 B at 25 Mbit/s = 136 ms.
    let s2 = scenario(&geometry("\"pha-d\"", "")).validate().unwrap();
    assert_eq!(
        railpath_sim::mechanisms::pha::default_rtt(&s2, s2.flows[0].mptcp().unwrap()),
        ms(136)
    );
}

#[test]
fn on_every_send_pha_avoids_the_zone_and_pha_d_the_backup() {
    for m in ["\"pha\"", "\"pha-d\""] {
        let r = run(&geometry(m, ""));
        let f = flow(&r, "m");
        let st = f.pha.expect("pha statistics");
        assert!(!r.summary.handovers.is_empty());
        assert_eq!(
            st.sends_in_zone, 0,
            "{m}: new data sent on a subflow in its zone"
        );
        assert_eq!(st.sends_on_backup, 0, "{m}: new data on a backup subflow");
        if m == "\"pha\"" {
            assert!(st.blocked_s > 0.0);
        } else {
            assert!(st.backup_s > 0.0 && st.prio_changes >= 2);
        }
        assert_eq!(f.mechanisms, vec![m.trim_matches('"').to_string()]);
    }
    // The same runs without a mechanism report no statistics.
    let plain = run(&geometry("", ""));
    assert!(flow(&plain, "m").pha.is_none());
}

#[test]
fn learned_tables_are_deterministic() {
    let a = run(&geometry("\"pha\"", ""));
    let b = run(&geometry("\"pha\"", ""));
    assert_eq!(a.summary.flows, b.summary.flows);
}
