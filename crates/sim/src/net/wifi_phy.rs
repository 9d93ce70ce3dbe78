//! The 802.11a/g OFDM PHY's frame errors at a signal-to-noise ratio, and the slow fading of an
//! indoor channel.
//!
//! Rates: IEEE Std 802.11-2012 clause 18.3.2.3, Table 18-4 (6 BPSK 1/2, 9 BPSK 3/4, 12 QPSK
//! 1/2, 18 QPSK 3/4, 24 16-QAM 1/2, 36 16-QAM 3/4, 48 64-QAM 2/3, 54 64-QAM 3/4; the SIGNAL
//! field, 24 bits, always at 6 Mbit/s, clause 18.3.4).
//!
//! Error model: the one ns-3 calls NistErrorRateModel (G. Pei and T. R. Henderson, "Validation
//! of OFDM error rate model in ns-3", Boeing Research & Technology, 2010). The uncoded bit
//! error rate of each constellation at the SNR over the 20 MHz channel (Gray-coded square
//! M-QAM, J. G. Proakis, Digital Communications, 4th ed., section 5.2.9): BPSK
//! Q(sqrt(2 snr)), QPSK Q(sqrt(snr)), 16-QAM 3/4 erfc(sqrt(snr / 10)) / 2, 64-QAM 7/12
//! erfc(sqrt(snr / 42)) / 2. The coded (Viterbi, hard decision) error per bit is bounded by
//! the union bound over the code's distance spectrum with the Bhattacharyya bound on each
//! pairwise error, P_d <= D^d with D = sqrt(4 p (1 - p)) (M. B. Pursley and D. J. Taipale,
//! "Error probabilities for spread-spectrum packet radio with convolutional codes and Viterbi
//! decoding", IEEE Trans. Commun. 35(1), 1987): Pe <= 1 / (2 b) x sum_d c_d D^d, with c_d the
//! information-error weights of the 802.11 K = 7 (133, 171) code at rate 1/2 (d = 10, 12, ...,
//! 26; b = 1) and of its punctured rates 2/3 (d = 6..15, b = 2) and 3/4 (d = 5..14, b = 3) from
//! D. Haccoun and G. Begin, "High-rate punctured convolutional codes for Viterbi and sequential
//! decoding", IEEE Trans. Commun. 37(11), 1989. A chunk of n bits gets through with
//! probability (1 - Pe)^n.
//!
//! Fading: a Rician channel (K = 0: Rayleigh) whose scattered part is a complex Gaussian
//! first-order autoregressive (Gauss-Markov) process, h(t + dt) = rho h(t) + sqrt(1 - rho^2) w
//! (K. E. Baddour and N. C. Beaulieu, "Autoregressive modeling for fading channel simulation",
//! IEEE Trans. Wireless Commun. 4(4), 2005, the first-order case). Its correlation over a lag
//! t is rho^(t / dt), exponential; Clarke's model (R. H. Clarke, Bell Syst. Tech. J. 47(6),
//! 1968) has J0(2 pi f_d t). Matching the two at one step, as the first-order AR fit does,
//! would decorrelate the channel a hundred times too slowly at a 1-ms step; railpath matches
//! them where Clarke's correlation falls to 1/2, t_half = 1.5211 / (2 pi f_d) (J0(1.5211) =
//! 0.5): rho = 2^(-dt / t_half), a coherence time of 40 ms at 6 Hz. Indoor Wi-Fi
//! channels fade slowly, moved by people and objects near a still laptop: the IEEE 802.11 TGn
//! channel models (V. Erceg et al., IEEE 802.11-03/940r4, 2004) use an environment speed of
//! 1.2 km/h, a Doppler spread of about 6 Hz at 5.25 GHz and 3 Hz at 2.4 GHz, and a K factor
//! of 0 to 6 dB on the first tap in line of sight.

use railpath_core::{Rng, Time};

/// The OFDM rates, Mbit/s, in order (index 0 is the lowest, the SIGNAL field's rate): the
/// scenario's list of PHY rates.
pub const RATES_MBPS: [f64; 8] = railpath_scenario::WIFI_PHY_MBPS;

/// Bits of the SIGNAL field (the PLCP header), sent at 6 Mbit/s (BPSK 1/2).
pub const SIGNAL_BITS: u32 = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Constellation {
    Bpsk,
    Qpsk,
    Qam16,
    Qam64,
}

/// Code rate b / (b + 1): 1/2, 2/3, 3/4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    Half,
    TwoThirds,
    ThreeQuarters,
}

/// Constellation and code of each of [`RATES_MBPS`] (802.11-2012 Table 18-4).
const MODES: [(Constellation, Code); 8] = [
    (Constellation::Bpsk, Code::Half),
    (Constellation::Bpsk, Code::ThreeQuarters),
    (Constellation::Qpsk, Code::Half),
    (Constellation::Qpsk, Code::ThreeQuarters),
    (Constellation::Qam16, Code::Half),
    (Constellation::Qam16, Code::ThreeQuarters),
    (Constellation::Qam64, Code::TwoThirds),
    (Constellation::Qam64, Code::ThreeQuarters),
];

/// The index of `mbps` in [`RATES_MBPS`] (the scenario checked it is one of them).
pub fn rate_index(mbps: f64) -> usize {
    RATES_MBPS.iter().position(|&r| r == mbps).unwrap_or(0)
}

fn uncoded_ber(c: Constellation, snr: f64) -> f64 {
    let half_erfc = |x: f64| 0.5 * libm::erfc(x.sqrt());
    match c {
        Constellation::Bpsk => half_erfc(snr),
        Constellation::Qpsk => half_erfc(snr / 2.0),
        Constellation::Qam16 => 0.75 * half_erfc(snr / 10.0),
        Constellation::Qam64 => 7.0 / 12.0 * half_erfc(snr / 42.0),
    }
}

/// Union-Bhattacharyya bound on the decoded error per bit at channel bit error `p`.
fn coded_pe(code: Code, p: f64) -> f64 {
    // (first distance, step of d, b, information-error weights c_d).
    const HALF: [f64; 9] = [
        36.0,
        211.0,
        1404.0,
        11633.0,
        77433.0,
        502690.0,
        3322763.0,
        21292910.0,
        134365911.0,
    ];
    const TWO_THIRDS: [f64; 10] = [
        3.0, 70.0, 285.0, 1276.0, 6160.0, 27128.0, 117019.0, 498860.0, 2103891.0, 8784123.0,
    ];
    const THREE_QUARTERS: [f64; 10] = [
        42.0,
        201.0,
        1492.0,
        10469.0,
        62935.0,
        379644.0,
        2253373.0,
        13073811.0,
        75152755.0,
        428005675.0,
    ];
    let (d0, step, b, weights): (i32, i32, f64, &[f64]) = match code {
        Code::Half => (10, 2, 1.0, &HALF),
        Code::TwoThirds => (6, 1, 2.0, &TWO_THIRDS),
        Code::ThreeQuarters => (5, 1, 3.0, &THREE_QUARTERS),
    };
    let d = (4.0 * p * (1.0 - p)).sqrt();
    // D^d term by term: D^d0, then times D^step.
    let ds = if step == 1 { d } else { d * d };
    let mut dd = d.powi(d0);
    let mut sum = 0.0;
    for c in weights {
        sum += c * dd;
        dd *= ds;
    }
    (sum / (2.0 * b)).min(1.0)
}

/// The decoded error per bit at rate `rate` (index into [`RATES_MBPS`]) and linear SNR `snr`.
pub fn bit_error(rate: usize, snr: f64) -> f64 {
    let (c, code) = MODES[rate];
    coded_pe(code, uncoded_ber(c, snr))
}

/// The chance that `bits` bits at `rate` all get through at linear SNR `snr`.
pub fn chunk_success(rate: usize, snr: f64, bits: u32) -> f64 {
    (1.0 - bit_error(rate, snr)).powf(f64::from(bits))
}

/// The fixed-rate table (ns-3's IdealWifiManager idea): the highest rate whose frames of
/// `bytes` MAC bytes fail less often than `per` at `snr_db`, up to `top` (index); the lowest if
/// none does.
pub fn ideal_rate(snr_db: f64, bytes: u32, per: f64, top: usize) -> usize {
    let bits = 16 + 8 * bytes + 6;
    (0..=top)
        .rev()
        .find(|&r| 1.0 - chunk_success(r, from_db(snr_db), bits) < per)
        .unwrap_or(0)
}

/// dB to linear.
pub fn from_db(db: f64) -> f64 {
    10f64.powf(db / 10.0)
}

/// Fading step: the channel is held constant for 1 ms, far below the coherence time of an
/// indoor channel (40 ms at 6 Hz).
pub const FADING_STEP: Time = Time::from_ns(1_000_000);

/// Where J0 falls to 1/2.
const J0_HALF: f64 = 1.5211;

/// A Rician channel with a Gauss-Markov scattered part, stepped every [`FADING_STEP`].
#[derive(Debug, Clone)]
pub struct Fading {
    /// Power of the line-of-sight part, K / (K + 1), and amplitude of the scattered part,
    /// sqrt(1 / (K + 1)).
    los: f64,
    scatter: f64,
    /// Correlation of the scattered part over one step, 2^(-dt / t_half).
    rho: f64,
    /// The scattered part (unit mean power), in phase and quadrature.
    h: (f64, f64),
    /// The step `h` belongs to.
    step: u64,
    rng: Rng,
}

impl Fading {
    /// `doppler_hz` > 0, `k` the linear Rician factor (0: Rayleigh).
    pub fn new(doppler_hz: f64, k: f64, mut rng: Rng) -> Fading {
        let t_half = J0_HALF / (2.0 * std::f64::consts::PI * doppler_hz);
        let h = (
            rng.normal() * std::f64::consts::FRAC_1_SQRT_2,
            rng.normal() * std::f64::consts::FRAC_1_SQRT_2,
        );
        Fading {
            los: (k / (k + 1.0)).sqrt(),
            scatter: (1.0 / (k + 1.0)).sqrt(),
            rho: 0.5f64.powf(FADING_STEP.secs_f64() / t_half),
            h,
            step: 0,
            rng,
        }
    }

    /// The channel's power gain (mean 1) at `now`, and the step it belongs to.
    pub fn gain_at(&mut self, now: Time) -> (f64, u64) {
        let step = now.ns() / FADING_STEP.ns();
        if step > self.step {
            // n steps of the AR(1) process at once: correlation rho^n.
            let n = (step - self.step).min(i32::MAX as u64) as i32;
            let r = self.rho.powi(n);
            let s = ((1.0 - r * r).max(0.0) / 2.0).sqrt();
            self.h = (
                r * self.h.0 + s * self.rng.normal(),
                r * self.h.1 + s * self.rng.normal(),
            );
            self.step = step;
        }
        let i = self.los + self.scatter * self.h.0;
        let q = self.scatter * self.h.1;
        (i * i + q * q, self.step)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncoded_bit_errors_by_hand() {
        // BPSK at 0 dB: Q(sqrt 2) = erfc(1) / 2 = 0.157299 / 2 = 0.0786496.
        assert!((uncoded_ber(Constellation::Bpsk, 1.0) - 0.078_649_6).abs() < 1e-6);
        // QPSK at 3 dB (snr 2): erfc(1) / 2 again, per bit.
        assert!((uncoded_ber(Constellation::Qpsk, 2.0) - 0.078_649_6).abs() < 1e-6);
        // 16-QAM at snr 10: 3/4 x erfc(1) / 2 = 0.0589872.
        assert!((uncoded_ber(Constellation::Qam16, 10.0) - 0.058_987_2).abs() < 1e-6);
        // 64-QAM at snr 42: 7/12 x erfc(1) / 2 = 0.0458789.
        assert!((uncoded_ber(Constellation::Qam64, 42.0) - 0.045_878_9).abs() < 1e-6);
    }

    #[test]
    fn coded_errors_follow_the_first_terms_of_the_distance_spectrum() {
        // p = 1e-3: D = sqrt(4 x 1e-3 x 0.999) = 0.0632139; rate 1/2: 36 D^10 / 2 dominates:
        // D^10 = 1.0197e-12 -> 1.8355e-11, next term 211 D^12 / 2 = 4.3e-13.
        let d: f64 = (4.0e-3f64 * 0.999).sqrt();
        let half = 0.5 * (36.0 * d.powi(10) + 211.0 * d.powi(12));
        assert!((coded_pe(Code::Half, 1e-3) / half - 1.0).abs() < 1e-3);
        assert!((coded_pe(Code::Half, 1e-3) - 1.8787e-11).abs() < 1e-14);
        // Punctured rates at p = 1e-4 (D = 0.0199990), where the first terms dominate. Rate
        // 3/4, b = 3: (42 D^5 + 201 D^6 + 1492 D^7 + ...) / 6 = (1.3439e-7 + 1.2862e-8 +
        // 1.909e-9 + 2.7e-10 + ...) / 6 = 2.49e-8.
        let d: f64 = (4.0e-4f64 * 0.9999).sqrt();
        let tq = (42.0 * d.powi(5) + 201.0 * d.powi(6) + 1492.0 * d.powi(7)) / 6.0;
        assert!((coded_pe(Code::ThreeQuarters, 1e-4) / tq - 1.0).abs() < 0.005);
        assert!((coded_pe(Code::ThreeQuarters, 1e-4) - 2.49e-8).abs() < 1e-10);
        // Rate 2/3, b = 2: (3 D^6 + 70 D^7 + 285 D^8 + ...) / 4 = (1.9197e-10 + 8.958e-11 +
        // 7.29e-12 + ...) / 4 = 7.3e-11.
        let tt = (3.0 * d.powi(6) + 70.0 * d.powi(7) + 285.0 * d.powi(8)) / 4.0;
        assert!((coded_pe(Code::TwoThirds, 1e-4) / tt - 1.0).abs() < 0.01);
        // Hopeless channels are capped: p = 1/2 gives D = 1.
        assert_eq!(coded_pe(Code::Half, 0.5), 1.0);
    }

    #[test]
    fn frame_success_falls_with_rate_and_length_and_rises_with_snr() {
        // A 1500-byte frame (12022 bits with service and tail) at 54 Mbit/s.
        let bits = 16 + 8 * 1536 + 6;
        let at = |rate: f64, db: f64, b: u32| chunk_success(rate_index(rate), from_db(db), b);
        // Hand check at 25 dB (snr 316.23): 64-QAM p = 7/12 x erfc(sqrt(316.23 / 42)) / 2 =
        // 7/24 x erfc(2.74394) = 7/24 x 1.04232e-4 = 3.0401e-5; D = 0.0110272; Pe = (42 D^5 +
        // 201 D^6 + ...) / 6 = (6.9e-9 + 3.6e-10 + ...) / 6 = 1.21e-9; (1 - Pe)^12310 = 0.999985.
        let p = 7.0 / 24.0 * libm::erfc((from_db(25.0) / 42.0).sqrt());
        assert!((p - 3.0401e-5).abs() < 1e-9, "{p}");
        let s = at(54.0, 25.0, bits);
        assert!((s - 0.999_985).abs() < 2e-6, "{s}");
        // Lower rates survive lower SNRs: at 15 dB, 54 fails, 24 gets through.
        assert!(at(54.0, 15.0, bits) < 0.01);
        assert!(at(24.0, 15.0, bits) > 0.99);
        // Monotone in SNR at every rate, and longer frames fail more.
        for &r in &RATES_MBPS {
            let mut last = 0.0;
            for db in 0..40 {
                let s = at(r, f64::from(db), bits);
                assert!(s >= last, "{r} {db}");
                last = s;
            }
            assert!(at(r, 8.0, 1000) >= at(r, 8.0, 10000));
        }
    }

    #[test]
    fn the_rate_table_picks_the_fastest_rate_under_the_error_threshold() {
        // 1536-byte frames, 10 %: 54 needs 22.63 dB, 48 21.36, 36 16.62, 24 13.52, 18 9.87
        // (the thresholds of the model, found by bisection).
        let at = |db: f64| RATES_MBPS[ideal_rate(db, 1536, 0.1, 7)];
        assert_eq!(at(28.0), 54.0);
        assert_eq!(at(22.0), 48.0);
        assert_eq!(at(20.0), 36.0);
        assert_eq!(at(16.0), 24.0);
        assert_eq!(at(13.0), 18.0);
        assert_eq!(at(-5.0), 6.0);
        // Capped at the station's top rate.
        assert_eq!(RATES_MBPS[ideal_rate(28.0, 1536, 0.1, 5)], 36.0);
        let per = |r: usize, db: f64| 1.0 - chunk_success(r, from_db(db), 16 + 8 * 1536 + 6);
        assert!(per(7, 22.62) > 0.1 && per(7, 22.64) < 0.1);
        assert!(per(5, 16.61) > 0.1 && per(5, 16.63) < 0.1);
    }

    #[test]
    fn fading_is_rician_with_unit_mean_power_and_correlated_over_its_coherence_time() {
        assert!((libm::j0(J0_HALF) - 0.5).abs() < 1e-4);
        // Rayleigh, 6 Hz: t_half = 1.5211 / (2 pi 6) = 40.349 ms; rho = 2^(-1 / 40.349) =
        // exp(-0.0171787) = 0.982968; over t_half the correlation is 1/2.
        let mut f = Fading::new(6.0, 0.0, Rng::stream(3, "fading"));
        assert!((f.rho - 0.982_968).abs() < 1e-6, "{}", f.rho);
        assert!((f.rho.powf(40.349) - 0.5).abs() < 1e-4);
        let n = 200_000u64;
        let (mut sum, mut sq, mut lag) = (0.0, 0.0, 0.0);
        let mut last = f.gain_at(Time::ZERO).0;
        for i in 1..=n {
            let (g, step) = f.gain_at(Time::from_ns(i * 10_000_000));
            assert_eq!(step, i * 10);
            sum += g;
            sq += g * g;
            lag += g * last;
            last = g;
        }
        let mean = sum / n as f64;
        assert!((mean - 1.0).abs() < 0.03, "{mean}");
        // Rayleigh power: exponential, variance 1; the power's correlation over a lag is the
        // square of the gain's: rho^(2 x 10) = 0.982968^20 = 0.7088 at 10 ms.
        let var = sq / n as f64 - mean * mean;
        assert!((var - 1.0).abs() < 0.1, "{var}");
        let corr = (lag / n as f64 - mean * mean) / var;
        assert!((corr - 0.7088).abs() < 0.03, "{corr}");
        // Within one step the gain does not move.
        let t = Time::from_ns(n * 10_000_000 + 100);
        assert_eq!(f.gain_at(t).0, f.gain_at(t).0);
        // A strong line of sight (K = 100) keeps the gain near 1.
        let mut los = Fading::new(6.0, 100.0, Rng::stream(3, "fading"));
        for i in 0..1000 {
            let g = los.gain_at(Time::from_ms(i * 7)).0;
            assert!((0.5..1.6).contains(&g), "{g}");
        }
    }
}
