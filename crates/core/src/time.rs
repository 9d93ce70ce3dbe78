//! Simulated time: integer nanoseconds behind a newtype, so runs are bit-identical everywhere.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// An instant or a duration in simulated nanoseconds.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(pub u64);

impl Time {
    pub const ZERO: Time = Time(0);
    pub const MAX: Time = Time(u64::MAX);

    pub const fn from_ns(ns: u64) -> Time {
        Time(ns)
    }
    pub const fn from_us(us: u64) -> Time {
        Time(us * 1_000)
    }
    pub const fn from_ms(ms: u64) -> Time {
        Time(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Time {
        Time(s * 1_000_000_000)
    }
    /// Rounds to the nearest nanosecond; negative and NaN inputs give zero.
    pub fn from_secs_f64(s: f64) -> Time {
        Time((s * 1e9).round().max(0.0) as u64)
    }
    pub fn from_ms_f64(ms: f64) -> Time {
        Time((ms * 1e6).round().max(0.0) as u64)
    }
    pub const fn ns(self) -> u64 {
        self.0
    }
    pub const fn us(self) -> u64 {
        self.0 / 1_000
    }
    pub fn secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
    pub fn ms_f64(self) -> f64 {
        self.0 as f64 / 1e6
    }
    pub fn saturating_sub(self, o: Time) -> Time {
        Time(self.0.saturating_sub(o.0))
    }
    /// Serialisation time of `bytes` at `rate_bps` (rounded up to a whole nanosecond).
    pub fn tx_time(bytes: u64, rate_bps: u64) -> Time {
        debug_assert!(rate_bps > 0);
        let bits = bytes as u128 * 8 * 1_000_000_000;
        Time(bits.div_ceil(rate_bps as u128) as u64)
    }
    /// `self` times `k`, saturating.
    #[allow(clippy::should_implement_trait)]
    pub fn mul(self, k: u64) -> Time {
        Time(self.0.saturating_mul(k))
    }
    /// `self` divided by `k`, rounded down.
    #[allow(clippy::should_implement_trait)]
    pub fn div(self, k: u64) -> Time {
        Time(self.0 / k)
    }
}

impl Add for Time {
    type Output = Time;
    fn add(self, o: Time) -> Time {
        Time(self.0.saturating_add(o.0))
    }
}
impl AddAssign for Time {
    fn add_assign(&mut self, o: Time) {
        self.0 = self.0.saturating_add(o.0);
    }
}
impl Sub for Time {
    type Output = Time;
    fn sub(self, o: Time) -> Time {
        debug_assert!(self.0 >= o.0, "time went backwards: {} - {}", self.0, o.0);
        Time(self.0.saturating_sub(o.0))
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tx_time_rounds_up() {
        // 1500 B at 10 Mbit/s = 1.2 ms exactly.
        assert_eq!(Time::tx_time(1500, 10_000_000), Time::from_us(1200));
        // 1 B at 3 bit/s = 8/3 s -> rounded up.
        assert_eq!(Time::tx_time(1, 3).0, 2_666_666_667);
    }

    #[test]
    fn conversions() {
        assert_eq!(Time::from_secs_f64(1.5), Time::from_ms(1500));
        assert_eq!(Time::from_ms_f64(0.25), Time::from_us(250));
        assert_eq!(Time::from_secs_f64(-1.0), Time::ZERO);
        assert_eq!(Time::from_ms(3).secs_f64(), 0.003);
    }
}
