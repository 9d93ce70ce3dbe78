//! What the radio model of a run will allocate and compute, estimated from the keys before the
//! run starts, so that a scenario whose keys ask for more than the machine has is refused with
//! the keys to change instead of exhausting memory or running for days.
//!
//! The counts follow the code that allocates: per radio carrier the sample times and positions
//! ([`crate::track::Motion::sample_times`]: 16 bytes per sample), the cells within
//! `cell_range_m` of the track section the train runs ([`crate::propagation::sites`]), each with
//! two shadowing fields of `2 cell_range_m / FIELD_STEP_M` points ([`crate::propagation::Cell`]),
//! the carrier's common field from 0 to the farthest position, and the work of measuring every
//! cell in range at every sample ([`crate::timeline`]).

use crate::config::{CarrierConfig, CarrierModel, TrainConfig};
use crate::propagation::FIELD_STEP_M;
use crate::track::Motion;
use railpath_core::{SizePart, Time};

/// The radio model's parts of a run of `duration_s` (train and carriers validated).
pub fn estimate(train: &TrainConfig, carriers: &[CarrierConfig], duration_s: f64) -> Vec<SizePart> {
    let motion = Motion::new(train);
    let duration = Time::from_secs_f64(duration_s);
    let lo = motion.position_at(Time::ZERO);
    let hi = motion.position_at(duration);
    let samples = (duration_s * 1000.0 / train.sample_ms).floor() + 1.0;
    let mut parts = Vec::new();
    for c in carriers {
        if c.model != CarrierModel::Radio {
            continue;
        }
        let range = c.cell_range_m;
        let (cells, in_range) = match (&c.sites_m, c.enb_spacing_m) {
            (Some(list), _) => {
                let n = list
                    .iter()
                    .filter(|&&x| x >= lo - range && x <= hi + range)
                    .count() as f64;
                (n, n)
            }
            (None, Some(spacing)) => (
                ((hi - lo + 2.0 * range) / spacing).floor() + 1.0,
                (2.0 * range / spacing).floor() + 1.0,
            ),
            (None, None) => match &c.site_segments {
                // The densest stretch bounds both counts.
                Some(segs) => {
                    let spacing = segs
                        .iter()
                        .map(|g| g.spacing_m)
                        .fold(f64::INFINITY, f64::min);
                    (
                        ((hi - lo + 2.0 * range) / spacing).floor() + 1.0,
                        (2.0 * range / spacing).floor() + 1.0,
                    )
                }
                None => (0.0, 0.0),
            },
        };
        let field_points = 2.0 * (2.0 * range / FIELD_STEP_M + 1.0);
        let common_points = (hi + range) / FIELD_STEP_M + 1.0;
        parts.push(SizePart {
            what: format!("radio model of carrier {:?}", c.id),
            keys: "run.duration_s, train.sample_ms, train speed, carrier enb_spacing_m and cell_range_m"
                .into(),
            bytes: 16.0 * samples + 8.0 * (cells * field_points + common_points) + 64.0 * cells,
            work: samples * in_range.min(cells) + cells * field_points + common_points,
        });
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_follow_the_keys() {
        // 100 s at 36 km/h = 10 m/s from 0: positions 0..1000 m. Grid of 500 m, range 1000 m:
        // cells over -1000..2000 m = 3000 / 500 + 1 = 7, 5 within range of a position.
        // Samples every 10 ms: 10001. Fields: 2 x (2000 / 10 + 1) = 402 points per cell; the
        // common field 0..2000 m: 201 points.
        let train = TrainConfig::constant(36.0);
        let mut c = CarrierConfig::grid("a", 10.0, 500.0, 0.0);
        c.cell_range_m = 1000.0;
        let p = estimate(&train, &[c], 100.0);
        assert_eq!(p.len(), 1);
        let bytes = 16.0 * 10001.0 + 8.0 * (7.0 * 402.0 + 201.0) + 64.0 * 7.0;
        assert!(
            (p[0].bytes - bytes).abs() < 1e-6,
            "{} vs {bytes}",
            p[0].bytes
        );
        let work = 10001.0 * 5.0 + 7.0 * 402.0 + 201.0;
        assert!((p[0].work - work).abs() < 1e-6, "{} vs {work}", p[0].work);
    }

    #[test]
    fn a_wide_range_on_a_dense_grid_is_large() {
        // Issue 17: enb_spacing_m = 50 with cell_range_m = 1e6 took more than 4 GiB.
        let train = TrainConfig::constant(300.0);
        let mut c = CarrierConfig::grid("a", 10.0, 50.0, 0.0);
        c.cell_range_m = 1e6;
        let p = estimate(&train, &[c], 10.0);
        assert!(p[0].bytes > 4.0 * 1024f64.powi(3), "{}", p[0].bytes);
    }
}
