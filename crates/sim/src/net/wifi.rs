//! The time an 802.11a/g interface takes to deliver one packet: the distributed coordination
//! function (DCF) of IEEE 802.11-2012 with the OFDM PHY, at a fixed PHY rate.
//!
//! Sources: IEEE Std 802.11-2012 clause 9.3 (DCF: DIFS, random backoff of 0..=CW slots, SIFS,
//! the link-layer ACK; CW doubles after a failed attempt from aCWmin = 15 up to aCWmax = 1023),
//! clause 18 (OFDM PHY: 16 us preamble, 4 us SIGNAL, 4 us symbols carrying N_DBPS = rate x 4
//! bits, 16 service and 6 tail bits, slot 9 us, SIFS 16 us) and clause 19 (ERP-OFDM in 2.4 GHz:
//! SIFS 10 us and a 6 us signal extension after each frame; short slot 9 us in a BSS without
//! 802.11b stations). The control response (the ACK) goes at the highest mandatory rate (6, 12
//! or 24 Mbit/s) not above the data rate (clause 9.7.6.5). The retry limit is Linux mac80211's
//! default short retry limit, 7 attempts (net/mac80211/main.c). The saturation throughput these
//! timings give is the "theoretical maximum throughput" of Jun, Peddabachagari and Sichitiu
//! (IEEE NCA 2003), about 30 Mbit/s at 54 Mbit/s for 1500-byte packets.
//!
//! One interface sends alone on its channel: no collisions, no other stations, and the two
//! directions of a link do not share the air (docs/models/wifi.md says what that leaves out).

use railpath_core::{Rng, Time};
use railpath_scenario::{Wifi, WifiStandard};

/// MAC header (24), LLC/SNAP (8) and FCS (4) bytes around an IP packet.
pub const MAC_OVERHEAD_BYTES: u32 = 36;
/// An ACK frame, bytes.
pub const ACK_FRAME_BYTES: u32 = 14;
/// Transmission attempts per frame (mac80211's default short retry limit).
pub const MAX_ATTEMPTS: u32 = 7;
const CW_MIN: u32 = 15;
const CW_MAX: u32 = 1023;

/// One interface's MAC timing at its PHY rate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WifiMac {
    /// ns.
    slot: u64,
    sifs: u64,
    difs: u64,
    /// After each OFDM frame (802.11g), ns.
    ext: u64,
    /// Data bits per OFDM symbol at the data rate and the ACK rate.
    dbps: u32,
    ack_dbps: u32,
    pub frame_error: f64,
}

impl WifiMac {
    pub fn new(w: &Wifi) -> WifiMac {
        let (sifs, ext) = match w.standard {
            WifiStandard::A => (16_000, 0),
            WifiStandard::G => (10_000, 6_000),
        };
        let slot = 9_000;
        let rate = w.phy_mbps;
        let ack_rate = [24.0, 12.0, 6.0]
            .into_iter()
            .find(|&r| r <= rate)
            .unwrap_or(6.0);
        WifiMac {
            slot,
            sifs,
            difs: sifs + 2 * slot,
            ext,
            dbps: (rate * 4.0).round() as u32,
            ack_dbps: (ack_rate * 4.0).round() as u32,
            frame_error: w.frame_error,
        }
    }

    /// Air time of an OFDM frame of `bytes` MAC bytes at `dbps`, ns: preamble and SIGNAL (20
    /// us), whole symbols of 4 us for service, data and tail bits, and the signal extension.
    fn frame_ns(&self, bytes: u32, dbps: u32) -> u64 {
        let bits = 16 + 8 * u64::from(bytes) + 6;
        20_000 + 4_000 * bits.div_ceil(u64::from(dbps)) + self.ext
    }

    /// One attempt of a packet of `size` IP bytes after `backoff` slots, ns: DIFS, backoff, the
    /// data frame, SIFS and the ACK (a failed attempt waits as long for an ACK that never comes).
    pub fn attempt_ns(&self, size: u32, backoff: u32) -> u64 {
        self.difs
            + u64::from(backoff) * self.slot
            + self.frame_ns(size + MAC_OVERHEAD_BYTES, self.dbps)
            + self.sifs
            + self.frame_ns(ACK_FRAME_BYTES, self.ack_dbps)
    }

    /// Mean time of a first attempt (backoff of CWmin / 2 slots), ns.
    pub fn mean_attempt_ns(&self, size: u32) -> f64 {
        self.attempt_ns(size, 0) as f64 + f64::from(CW_MIN) / 2.0 * self.slot as f64
    }

    /// Saturation throughput of IP bytes without frame errors, bit/s.
    pub fn saturation_bps(&self, size: u32) -> f64 {
        f64::from(size) * 8.0 / (self.mean_attempt_ns(size) / 1e9)
    }

    /// Serve one packet: the time all its attempts take, and whether one of them got through
    /// (false after [`MAX_ATTEMPTS`] failures: the packet is lost).
    pub fn serve(&self, size: u32, rng: &mut Rng) -> (Time, bool) {
        let mut total = 0;
        let mut cw = CW_MIN;
        for _ in 0..MAX_ATTEMPTS {
            let backoff = rng.below(u64::from(cw) + 1) as u32;
            total += self.attempt_ns(size, backoff.min(cw));
            if self.frame_error <= 0.0 || !rng.bernoulli(self.frame_error) {
                return (Time::from_ns(total), true);
            }
            cw = (2 * (cw + 1) - 1).min(CW_MAX);
        }
        (Time::from_ns(total), false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mac(standard: WifiStandard, phy_mbps: f64) -> WifiMac {
        WifiMac::new(&Wifi {
            standard,
            phy_mbps,
            frame_error: 0.0,
        })
    }

    #[test]
    fn attempt_times_by_hand() {
        // 802.11a, 54 Mbit/s, a 1500-byte IP packet: 1536 MAC bytes = 16 + 12288 + 6 = 12310
        // bits = 57 symbols of 216 bits -> 20 + 228 = 248 us. ACK at 24 Mbit/s: 134 bits = 2
        // symbols of 96 -> 28 us. DIFS 34 + SIFS 16: 34 + 248 + 16 + 28 = 326 us without backoff.
        let a = mac(WifiStandard::A, 54.0);
        assert_eq!(a.attempt_ns(1500, 0), 326_000);
        assert_eq!(a.attempt_ns(1500, 3), 326_000 + 27_000);
        // Mean: + 7.5 slots = 67.5 us -> 393.5 us, 1500 x 8 / 393.5 us = 30.495... Mbit/s.
        assert!((a.mean_attempt_ns(1500) - 393_500.0).abs() < 1e-6);
        assert!((a.saturation_bps(1500) - 12_000.0 / 393.5e-6).abs() < 1e-3);
        // 802.11g, 24 Mbit/s: 12310 bits / 96 = 129 symbols -> 20 + 516 + 6 = 542 us; ACK at
        // 24: 28 + 6 = 34 us; DIFS 28, SIFS 10: 28 + 542 + 10 + 34 = 614 us.
        let g = mac(WifiStandard::G, 24.0);
        assert_eq!(g.attempt_ns(1500, 0), 614_000);
        // 802.11a, 9 Mbit/s: ACK at 6 (134 bits / 24 = 6 symbols -> 44 us); data 12310 / 36 =
        // 342 symbols -> 1388 us; 34 + 1388 + 16 + 44 = 1482 us.
        assert_eq!(mac(WifiStandard::A, 9.0).attempt_ns(1500, 0), 1_482_000);
    }

    #[test]
    fn backoff_is_uniform_over_the_window_and_retries_double_it() {
        let a = mac(WifiStandard::A, 54.0);
        let mut rng = Rng::stream(7, "wifi");
        let n = 20_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let (t, ok) = a.serve(1500, &mut rng);
            assert!(ok);
            let slots = (t.ns() - a.attempt_ns(1500, 0)) / 9_000;
            assert!(slots <= 15);
            sum += slots as f64;
        }
        // Mean of 0..=15 is 7.5 (standard error 4.6 / sqrt(20000) = 0.03).
        assert!((sum / n as f64 - 7.5).abs() < 0.15, "{}", sum / n as f64);
        // Every attempt fails: 7 attempts with windows 15, 31, ..., 1023, then lost.
        let lossy = WifiMac {
            frame_error: 1.0,
            ..a
        };
        let (t, ok) = lossy.serve(1500, &mut rng);
        assert!(!ok);
        let least = 7 * a.attempt_ns(1500, 0);
        let most = least + (15 + 31 + 63 + 127 + 255 + 511 + 1023) * 9_000;
        assert!(t.ns() >= least && t.ns() <= most, "{}", t.ns());
    }
}
