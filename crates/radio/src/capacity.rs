//! Capacity of the serving cell from its signal: SINR over the other cells of the same carrier
//! (frequency reuse 1) and noise, then a capped, attenuated Shannon mapping after 3GPP TR 36.942
//! Annex A.2: `SE = 0` below `SINR_MIN` (-10 dB), `SE = α log2(1 + SINR)` with `α = 0.6`, capped
//! at `SE_MAX` = 4.4 bit/s/Hz. The carrier's peak rate is reached at `SE_MAX`:
//! `rate = rate_peak * SE / SE_MAX`, floored at the carrier's `min_rate_mbps` while connected.

/// Attenuation of Shannon capacity (TR 36.942 A.2).
pub const ALPHA: f64 = 0.6;
/// Maximum spectral efficiency, bit/s/Hz (TR 36.942 A.2).
pub const SE_MAX: f64 = 4.4;
/// SINR below which nothing gets through, dB (TR 36.942 A.2).
pub const SINR_MIN_DB: f64 = -10.0;

/// Power in mW of `dbm`.
pub fn mw(dbm: f64) -> f64 {
    10f64.powf(dbm / 10.0)
}

/// SINR in dB of a serving cell received at `serving_dbm` with interferers at `interferers_dbm`
/// transmitting `load` of the time, over noise `noise_dbm` (all per resource element).
pub fn sinr_db(serving_dbm: f64, interferers_dbm: &[f64], load: f64, noise_dbm: f64) -> f64 {
    sinr_db_mw(
        mw(serving_dbm),
        interferers_dbm.iter().map(|&x| mw(x)).sum::<f64>(),
        load,
        mw(noise_dbm),
    )
}

/// [`sinr_db`] from powers already in mW: `interferers_mw` is the interferers' sum (added in
/// their order, as [`sinr_db`] adds them), `noise_mw` the noise's. The radio timeline converts
/// the noise once per carrier rather than at every sample.
pub fn sinr_db_mw(serving_mw: f64, interferers_mw: f64, load: f64, noise_mw: f64) -> f64 {
    10.0 * (serving_mw / (interferers_mw * load + noise_mw)).log10()
}

/// Spectral efficiency in bit/s/Hz at `sinr_db`.
pub fn spectral_efficiency(sinr_db: f64) -> f64 {
    if sinr_db < SINR_MIN_DB {
        return 0.0;
    }
    (ALPHA * (1.0 + 10f64.powf(sinr_db / 10.0)).log2()).min(SE_MAX)
}

/// Link rate in bit/s at `sinr_db` for a carrier of peak `peak_bps`, floored at `min_bps`.
pub fn rate_bps(sinr_db: f64, peak_bps: f64, min_bps: f64) -> u64 {
    (peak_bps * spectral_efficiency(sinr_db) / SE_MAX)
        .max(min_bps)
        .round() as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sinr_hand_computed() {
        // One equal interferer at full load, negligible noise: 0 dB.
        assert!(sinr_db(-80.0, &[-80.0], 1.0, -200.0).abs() < 1e-9);
        // Half load: 3.0103 dB.
        assert!((sinr_db(-80.0, &[-80.0], 0.5, -200.0) - 3.0103).abs() < 1e-4);
        // Noise only, 20 dB below: 20 dB.
        assert!((sinr_db(-100.0, &[], 0.5, -120.0) - 20.0).abs() < 1e-9);
        // In mW: 1e-8 mW over 1e-8 x 0.5 + 1e-20: 2 (3.0103 dB), the same bits as from dBm.
        let from_mw = sinr_db_mw(mw(-80.0), mw(-80.0), 0.5, mw(-200.0));
        assert!((from_mw - 3.0103).abs() < 1e-4);
        assert_eq!(
            from_mw.to_bits(),
            sinr_db(-80.0, &[-80.0], 0.5, -200.0).to_bits()
        );
    }

    #[test]
    fn capped_shannon_hand_computed() {
        // 0 dB: 0.6 * log2(2) = 0.6 bit/s/Hz -> 25 Mbit/s * 0.6 / 4.4 = 3.409 Mbit/s.
        assert_eq!(rate_bps(0.0, 25e6, 0.5e6), 3_409_091);
        // 30 dB: 0.6 * log2(1001) = 5.98 > 4.4 -> the peak.
        assert_eq!(rate_bps(30.0, 25e6, 0.5e6), 25_000_000);
        // Below -10 dB: nothing, floored at the minimum.
        assert_eq!(spectral_efficiency(-10.5), 0.0);
        assert_eq!(rate_bps(-10.5, 25e6, 0.5e6), 500_000);
        // -10 dB exactly: 0.6 * log2(1.1) = 0.0825 bit/s/Hz.
        assert!((spectral_efficiency(-10.0) - 0.6 * 1.1f64.log2()).abs() < 1e-12);
    }
}
