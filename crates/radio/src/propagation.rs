//! Received signal of a carrier's cells along the track.
//!
//! - Site layout: a regular grid (`first_enb_m + i * enb_spacing_m`, each site jittered along the
//!   track by a draw fixed per place) or an explicit list, at `enb_offset_m` from the track.
//! - Path loss: log-distance, `PL(d) = PL(1 km) + 10 n log10(d / 1 km)`; the defaults
//!   (128.1 dB, n = 3.76) are the macro-cell model of 3GPP TR 36.942 §4.5 at 2 GHz.
//! - Shadowing: a Gaussian field along the track per cell with the exponential autocorrelation of
//!   Gudmundson (Electronics Letters 27(23), 1991), `R(Δx) = σ² exp(-|Δx| / d_corr)`, generated as
//!   a first-order autoregression on a 10 m grid and interpolated linearly (smooth below the grid step, as shadowing is). One field per cell is
//!   fixed per place (seeded by the carrier's place seed and id, never by the run); a second,
//!   small field per cell is seeded by the run (per-run variation), so handover places recur but
//!   not to the metre. Shadowing of different sites of a carrier is correlated with coefficient
//!   `shadowing_site_corr` (TR 36.942 §4.5: 0.5 between sites): each cell's fixed shadowing is
//!   `sqrt(ρ) common(x) + sqrt(1 - ρ) own(x)`, with `common` one field per carrier along the
//!   track from position 0.
//! - RSRP = rs_power_dbm - PL(d) + shadowing(x) + variation(x), with d the 3-D distance
//!   `sqrt((x - site)² + offset²)` (floored at 1 m).
//! - Layer-3 filtering of measurements, 3GPP TS 36.331 §5.5.3.2: `F_n = (1 - a) F_{n-1} + a M_n`,
//!   `a = 1 / 2^(k/4)`, defined for a 200 ms measurement period; for another sampling period `T`
//!   the coefficient is rescaled to keep the same time constant: `a_T = 1 - (1 - a)^(T / 200 ms)`.

use crate::config::CarrierConfig;
use railpath_core::{rng::fnv1a, Rng};

/// Log-distance path loss in dB at distance `d_m` (floored at 1 m).
pub fn pathloss_db(d_m: f64, pl_1km_db: f64, exponent: f64) -> f64 {
    pl_1km_db + 10.0 * exponent * (d_m.max(1.0) / 1000.0).log10()
}

/// A spatially correlated Gaussian field on `[origin_m, origin_m + (len - 1) * step]`.
#[derive(Debug, Clone)]
pub struct Field {
    origin_m: f64,
    step_m: f64,
    values: Vec<f64>,
}

impl Field {
    /// Gudmundson AR(1): `s_0 ~ N(0, σ²)`, `s_{k+1} = ρ s_k + σ sqrt(1 - ρ²) w_k`,
    /// `ρ = exp(-step / d_corr)`.
    pub fn generate(
        rng: &mut Rng,
        origin_m: f64,
        length_m: f64,
        step_m: f64,
        sigma: f64,
        corr_m: f64,
    ) -> Field {
        let n = (length_m / step_m).ceil() as usize + 1;
        let mut values = Vec::with_capacity(n);
        if sigma == 0.0 {
            values.push(0.0);
        } else {
            let rho = (-step_m / corr_m).exp();
            let innov = sigma * (1.0 - rho * rho).sqrt();
            let mut s = sigma * rng.normal();
            values.push(s);
            for _ in 1..n {
                s = rho * s + innov * rng.normal();
                values.push(s);
            }
        }
        Field {
            origin_m,
            step_m,
            values,
        }
    }

    /// Value at `x_m`, linear between grid points, held constant beyond the ends.
    pub fn at(&self, x_m: f64) -> f64 {
        let u = ((x_m - self.origin_m) / self.step_m).max(0.0);
        let i = u.floor() as usize;
        if i + 1 >= self.values.len() {
            return *self.values.last().unwrap_or(&0.0);
        }
        let f = u - i as f64;
        self.values[i] * (1.0 - f) + self.values[i + 1] * f
    }
}

/// One base station (one cell per site: sectors are not modelled).
#[derive(Debug, Clone)]
pub struct Site {
    /// Cell name, `<carrier>-<n>` with n counted from 1 along the track.
    pub name: String,
    pub position_m: f64,
}

/// Sites of a radio carrier that can serve a train between `from_m` and `to_m` (with
/// `cell_range_m` margin on both sides), sorted by position. Grid jitter is seeded per place.
pub fn sites(c: &CarrierConfig, from_m: f64, to_m: f64) -> Vec<Site> {
    let lo = from_m - c.cell_range_m;
    let hi = to_m + c.cell_range_m;
    let mut out = Vec::new();
    if let Some(list) = &c.sites_m {
        for (i, &x) in list.iter().enumerate() {
            if x >= lo && x <= hi {
                out.push(Site {
                    name: format!("{}-{}", c.id, i + 1),
                    position_m: x,
                });
            }
        }
    } else if let Some(segs) = &c.site_segments {
        // Sites are numbered along the line across its stretches; each stretch's sites run
        // from its start, every `spacing_m`, up to the next stretch's start (the last to `hi`).
        let mut n = 0u64;
        for (k, g) in segs.iter().enumerate() {
            let end = segs.get(k + 1).map_or(f64::INFINITY, |next| next.from_m);
            let mut i = 0u64;
            loop {
                let nominal = g.from_m + i as f64 * g.spacing_m;
                if nominal >= end || nominal - c.site_jitter_m > hi {
                    break;
                }
                n += 1;
                let x = nominal + jitter(c, n - 1);
                if x >= lo && x <= hi {
                    out.push(Site {
                        name: format!("{}-{n}", c.id),
                        position_m: x,
                    });
                }
                i += 1;
            }
            if g.from_m - c.site_jitter_m > hi {
                break;
            }
        }
    } else if let Some(spacing) = c.enb_spacing_m {
        let first = ((lo - c.first_enb_m - c.site_jitter_m) / spacing)
            .ceil()
            .max(0.0) as u64;
        let mut i = first;
        loop {
            let nominal = c.first_enb_m + i as f64 * spacing;
            if nominal - c.site_jitter_m > hi {
                break;
            }
            let x = nominal + jitter(c, i);
            if x >= lo && x <= hi {
                out.push(Site {
                    name: format!("{}-{}", c.id, i + 1),
                    position_m: x,
                });
            }
            i += 1;
        }
    }
    out
}

/// The fixed-per-place jitter of site `i` (0-based along the line), uniform in
/// +-`site_jitter_m`.
fn jitter(c: &CarrierConfig, i: u64) -> f64 {
    if c.site_jitter_m > 0.0 {
        let mut r = Rng::stream(place_seed(c), &format!("site-jitter:{}:{i}", c.id));
        (2.0 * r.uniform() - 1.0) * c.site_jitter_m
    } else {
        0.0
    }
}

/// Seed of the carrier's fixed-per-place draws.
pub fn place_seed(c: &CarrierConfig) -> u64 {
    c.place_seed ^ fnv1a(&c.id)
}

/// Grid step of the shadowing fields, metres.
pub const FIELD_STEP_M: f64 = 10.0;

/// The signal of one cell along the track.
#[derive(Debug, Clone)]
pub struct Cell {
    pub site: Site,
    fixed: Field,
    run: Field,
}

impl Cell {
    /// Cell at `site` of carrier `c`, with its fixed shadowing and the run's variation. The fields
    /// cover `site ± cell_range_m` from a place-fixed origin, so a place's value never depends on
    /// how far a run goes.
    pub fn new(c: &CarrierConfig, site: Site, run_seed: u64) -> Cell {
        let origin = site.position_m - c.cell_range_m;
        let len = 2.0 * c.cell_range_m;
        let mut fixed_rng =
            Rng::stream(place_seed(c), &format!("shadowing:{}:{}", c.id, site.name));
        let fixed = Field::generate(
            &mut fixed_rng,
            origin,
            len,
            FIELD_STEP_M,
            c.shadowing_sigma_db,
            c.shadowing_corr_m,
        );
        let mut run_rng = Rng::stream(run_seed, &format!("radio-variation:{}:{}", c.id, site.name));
        let run = Field::generate(
            &mut run_rng,
            origin,
            len,
            FIELD_STEP_M,
            c.run_variation_db,
            c.shadowing_corr_m,
        );
        Cell { site, fixed, run }
    }

    /// RSRP in dBm with the train at `x_m`; `common` is the carrier's [`common_field`].
    pub fn rsrp_dbm(&self, c: &CarrierConfig, common: &Field, x_m: f64) -> f64 {
        let rho = c.shadowing_site_corr;
        self.rsrp_dbm_at(c, rho.sqrt() * common.at(x_m), (1.0 - rho).sqrt(), x_m)
    }

    /// [`Cell::rsrp_dbm`] with the parts every cell shares at `x_m` worked out once by the
    /// caller: `common_db` is `sqrt(rho) * common.at(x_m)` and `own_weight` `sqrt(1 - rho)`
    /// (`rho`: `shadowing_site_corr`). The same operations on the same values: the same bits.
    pub fn rsrp_dbm_at(&self, c: &CarrierConfig, common_db: f64, own_weight: f64, x_m: f64) -> f64 {
        let dx = x_m - self.site.position_m;
        let d = (dx * dx + c.enb_offset_m * c.enb_offset_m).sqrt();
        let shadow = common_db + own_weight * self.fixed.at(x_m);
        c.rs_power_dbm - pathloss_db(d, c.pathloss_1km_db, c.pathloss_exponent)
            + shadow
            + self.run.at(x_m)
    }
}

/// The shadowing shared by all sites of carrier `c`, from position 0 to `to_m` (fixed per place:
/// generated sequentially from 0, so its value at a place does not depend on `to_m`).
pub fn common_field(c: &CarrierConfig, to_m: f64) -> Field {
    let mut rng = Rng::stream(place_seed(c), &format!("shadowing-common:{}", c.id));
    Field::generate(
        &mut rng,
        0.0,
        to_m.max(0.0),
        FIELD_STEP_M,
        c.shadowing_sigma_db,
        c.shadowing_corr_m,
    )
}

/// Layer-3 filter coefficient for filterCoefficient `k` at sampling period `period_ms`
/// (TS 36.331 §5.5.3.2, rescaled from its 200 ms reference period). `k = 0` gives 1 (no filter).
pub fn l3_coefficient(k: u32, period_ms: f64) -> f64 {
    let a = 1.0 / 2f64.powf(k as f64 / 4.0);
    1.0 - (1.0 - a).powf(period_ms / 200.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pathloss_hand_computed() {
        // 1 km: the reference value; 100 m: 37.6 dB less.
        assert!((pathloss_db(1000.0, 128.1, 3.76) - 128.1).abs() < 1e-12);
        assert!((pathloss_db(100.0, 128.1, 3.76) - 90.5).abs() < 1e-9);
        assert_eq!(pathloss_db(0.0, 128.1, 3.76), pathloss_db(1.0, 128.1, 3.76));
    }

    #[test]
    fn rsrp_at_site_and_midpoint() {
        let mut c = CarrierConfig::grid("A", 25.0, 1340.0, 0.0);
        c.shadowing_sigma_db = 0.0;
        c.run_variation_db = 0.0;
        let s = sites(&c, 0.0, 0.0);
        let cell = Cell::new(&c, s[0].clone(), 1);
        let common = common_field(&c, 1000.0);
        // At the site: d = 300 m, PL = 128.1 + 37.6 log10(0.3) = 108.440 dB, RSRP = -78.240 dBm.
        let r = cell.rsrp_dbm(&c, &common, 0.0);
        assert!((r - (30.2 - 108.4401)).abs() < 1e-3, "{r}");
        // 670 m along: d = sqrt(670² + 300²) = 734.1 m, PL = 128.1 + 37.6 log10(0.7341) = 123.0524 dB.
        let r = cell.rsrp_dbm(&c, &common, 670.0);
        assert!((r - (30.2 - 123.0524)).abs() < 1e-3, "{r}");
    }

    #[test]
    fn grid_sites_and_jitter_are_fixed_per_place() {
        let mut c = CarrierConfig::grid("A", 25.0, 1340.0, 670.0);
        c.cell_range_m = 1340.0;
        let s = sites(&c, 0.0, 3000.0);
        let xs: Vec<f64> = s.iter().map(|s| s.position_m).collect();
        assert_eq!(xs, vec![670.0, 2010.0, 3350.0]);
        assert_eq!(s[1].name, "A-2");
        c.site_jitter_m = 100.0;
        let a = sites(&c, 0.0, 3000.0);
        let b = sites(&c, 2000.0, 3000.0);
        // The same site has the same jittered position whatever the range asked for.
        let find = |v: &[Site], n: &str| v.iter().find(|s| s.name == n).map(|s| s.position_m);
        assert_eq!(find(&a, "A-3"), find(&b, "A-3"));
        assert!((find(&a, "A-3").unwrap() - 3350.0).abs() <= 100.0);
    }

    #[test]
    fn field_statistics_follow_gudmundson() {
        // Mean ~0, variance ~σ², lag-corr_m correlation ~e^-1, on a long field.
        let mut r = Rng::stream(3, "t");
        let f = Field::generate(&mut r, 0.0, 400_000.0, 1.0, 4.0, 50.0);
        let n = f.values.len() as f64;
        let mean = f.values.iter().sum::<f64>() / n;
        let var = f.values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let lag = 50;
        let cov = f
            .values
            .windows(lag + 1)
            .map(|w| (w[0] - mean) * (w[lag] - mean))
            .sum::<f64>()
            / (n - lag as f64);
        assert!(mean.abs() < 0.3, "{mean}");
        assert!((var - 16.0).abs() < 1.6, "{var}");
        assert!((cov / var - (-1.0f64).exp()).abs() < 0.05, "{}", cov / var);
        // Interpolation is linear between grid points.
        let g = Field {
            origin_m: 10.0,
            step_m: 2.0,
            values: vec![0.0, 4.0, 8.0],
        };
        assert_eq!(g.at(11.0), 2.0);
        assert_eq!(g.at(0.0), 0.0);
        assert_eq!(g.at(100.0), 8.0);
    }

    #[test]
    fn l3_coefficient_hand_computed() {
        // k = 4 at 200 ms: a = 1/2. At 10 ms: 1 - 0.5^(1/20) = 0.034064.
        assert!((l3_coefficient(4, 200.0) - 0.5).abs() < 1e-12);
        assert!((l3_coefficient(4, 10.0) - 0.034_064).abs() < 1e-6);
        assert_eq!(l3_coefficient(0, 10.0), 1.0);
    }
}
