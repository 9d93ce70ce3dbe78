//! The PROXY-LB paper's Table 4 setting, cut to 240 s (scenarios/proxy-lb/, through the
//! reproduction's own scenario builder): the MPTCP proxy carries more than the load balancer
//! for 1 to 5 cars, a load-balanced car's goodput dips at its carrier's handovers, and an MPTCP
//! car's does not fall to zero there.

use railpath_repro::proxy_lb::{out_of, scenario, Mode};
use railpath_repro::sim::simulate;

const DURATION_S: f64 = 240.0;
const SEEDS: [u64; 2] = [1, 2];

fn total(mode: Mode, cars: usize) -> f64 {
    SEEDS
        .iter()
        .map(|&seed| {
            let s = scenario(mode, cars, seed, Some(DURATION_S)).unwrap();
            out_of(&s, &simulate(&s).unwrap()).total
        })
        .sum::<f64>()
        / SEEDS.len() as f64
}

#[test]
fn the_proxy_beats_the_load_balancer_for_one_to_five_cars() {
    for cars in 1..=5 {
        let (lb, mp) = (total(Mode::Lb, cars), total(Mode::Mptcp(0), cars));
        assert!(
            mp > lb,
            "{cars} cars: MPTCP {mp:.1} <= load balancer {lb:.1} Mbit/s"
        );
        // Neither carries more than the carriers' 70 Mbit/s.
        assert!(mp < 70.0 && lb < 70.0, "{cars} cars: {mp} {lb}");
    }
}

#[test]
fn a_balanced_car_dips_at_its_carriers_handovers_and_an_mptcp_car_does_not_stop() {
    let lb = scenario(Mode::Lb, 2, 1, Some(DURATION_S)).unwrap();
    let o = out_of(&lb, &simulate(&lb).unwrap());
    // Round robin: car 1 on ISP_A, car 2 on ISP_B.
    assert_eq!(o.carriers, ["isp-a", "isp-b"]);
    // dip[car][carrier].0: goodput in the second of that carrier's handovers over the car's
    // mean. A car loses (nearly) everything at its own carrier's handovers, nothing at the
    // other's.
    assert!(o.dip[0][0].0 < 0.1, "{:?}", o.dip);
    assert!(o.dip[1][1].0 < 0.1, "{:?}", o.dip);
    assert!(o.dip[0][1].0 > 0.7 && o.dip[1][0].0 > 0.7, "{:?}", o.dip);
    // Per second, around ISP_A's handover at 48 s: car 1 at zero in [48, 49), not before.
    assert!(
        o.series[0][48] < 0.05 && o.series[0][46] > 5.0,
        "{:?}",
        &o.series[0][40..52]
    );

    let mp = scenario(Mode::Mptcp(0), 2, 1, Some(DURATION_S)).unwrap();
    let o = out_of(&mp, &simulate(&mp).unwrap());
    for car in 0..2 {
        for carrier in 0..2 {
            // On average over the handovers an MPTCP car keeps sending through either
            // carrier's handover second.
            assert!(o.dip[car][carrier].0 > 0.2, "{:?}", o.dip);
        }
        // Both carriers carried each car.
        assert!(o.sub[car][0] > 5.0 && o.sub[car][1] > 2.0, "{:?}", o.sub);
    }
}
