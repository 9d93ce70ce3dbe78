//! Minstrel, the rate control of Linux's mac80211 for 802.11a/b/g stations, as in the kernels of
//! the BOND paper's era (Linux 3.5, Ubuntu 12.10): net/mac80211/rc80211_minstrel.c,
//! `minstrel_rate_init`, `minstrel_update_stats`, `minstrel_get_rate`, `minstrel_tx_status`,
//! with `minstrel_alloc`'s defaults (cw 15..1023, segment 6000 us, statistics every 100 ms,
//! EWMA weight 75 % on the past, look-around 10 % of frames with multi-rate retry) and the
//! driver's limit of tries per rate (`hw->max_rate_tries`: 7 when the driver sets none; the
//! BOND paper's AR9170 USB adapters, driver carl9170, set CARL9170_TX_USER_RATE_TRIES = 3).
//! Decision rules:
//!
//! - Every 100 ms each rate's success probability over the interval, p = successes /
//!   attempts, updates its average, P <- 0.25 p + 0.75 P (only rates that were tried); its
//!   throughput is P / t_1200 (t_1200: the air time of a 1200-byte frame at that rate), or
//!   0 when P < 10 %. The best and second-best throughput rates and the most probable rate are
//!   kept. A rate with P > 95 % or P < 10 % retries at most twice per chain segment (half its
//!   retry count) and is sampled at most 4 times until the next update.
//! - A rate's retry count: attempts while their worst-case air time (frame, ACK, a slot and the
//!   whole contention window in us, as the kernel adds them) stays under the 6000-us segment,
//!   at most the driver's limit.
//! - Each frame gets a retry chain of four (rate, tries): best throughput, second best, most
//!   probable, lowest. Look-around: while fewer than 10 % of the frames sent were samples, the
//!   next rate of a random sample table (ten random permutations of the rates but the lowest)
//!   is tried: first in the chain if it is faster than the best rate (then the best follows),
//!   second if slower (a "deferred" sample, counted as half until its status comes back).
//! - The status: each rate tried adds its tries to its attempts, the last one a success if
//!   the frame was acknowledged (the kernel credits no success to the fourth segment).

use railpath_core::{Rng, Time};

/// Rates a station can have (the eight OFDM rates).
pub const MAX_RATES: usize = 8;
const UPDATE_INTERVAL: Time = Time::from_ms(100);
const EWMA_LEVEL: f64 = 0.75;
const LOOKAROUND_PERCENT: u32 = 10;
const SEGMENT_US: u32 = 6000;
/// mac80211's limit of tries per rate when the driver gives none.
pub const DEFAULT_MAX_RETRY: u8 = 7;
const SAMPLE_COLUMNS: usize = 10;

/// One segment of a retry chain: a rate index and its tries.
pub type Segment = (u8, u8);

#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct RateStats {
    /// Air time of a 1200-byte frame, us.
    perfect_us: u32,
    retry_count: u8,
    adjusted_retry_count: u8,
    /// Samples left until the next update (-1: unlimited).
    sample_limit: i8,
    attempts: u32,
    success: u32,
    /// Average success probability, 0..=1.
    prob: f64,
    cur_tp: f64,
}

/// The per-station state of Minstrel.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Minstrel {
    n: usize,
    r: [RateStats; MAX_RATES],
    max_tp: usize,
    max_tp2: usize,
    max_prob: usize,
    packet_count: u32,
    sample_count: u32,
    sample_deferred: i32,
    sample_table: [[u8; MAX_RATES]; SAMPLE_COLUMNS],
    sample_idx: usize,
    sample_column: usize,
    stats_update: Time,
}

impl Minstrel {
    /// A station with `n` rates (lowest first): `perfect_us[i]` the air time of a 1200-byte
    /// frame at rate i, `ack_us[i]` of a 10-byte frame, `sp_ack_us` that at the lowest rate;
    /// `max_retry` is the driver's limit of tries per rate; `rng` draws the sample table.
    pub fn new(
        n: usize,
        perfect_us: &[u32],
        ack_us: &[u32],
        sp_ack_us: u32,
        max_retry: u8,
        rng: &mut Rng,
    ) -> Minstrel {
        let mut r = [RateStats::default(); MAX_RATES];
        for i in 0..n {
            let rc = retry_count(perfect_us[i], ack_us[i], sp_ack_us, max_retry);
            r[i] = RateStats {
                perfect_us: perfect_us[i],
                retry_count: rc,
                adjusted_retry_count: rc,
                sample_limit: -1,
                ..RateStats::default()
            };
        }
        Minstrel {
            n,
            r,
            max_tp: 0,
            max_tp2: 0,
            max_prob: 0,
            packet_count: 0,
            sample_count: 0,
            sample_deferred: 0,
            sample_table: sample_table(n, rng),
            sample_idx: 0,
            sample_column: 0,
            stats_update: Time::ZERO,
        }
    }

    /// `minstrel_update_stats`.
    fn update_stats(&mut self, now: Time) {
        self.stats_update = now;
        for mr in &mut self.r[..self.n] {
            if mr.attempts > 0 {
                let p = f64::from(mr.success) / f64::from(mr.attempts);
                mr.prob = p * (1.0 - EWMA_LEVEL) + mr.prob * EWMA_LEVEL;
            }
            mr.attempts = 0;
            mr.success = 0;
            mr.cur_tp = if mr.prob < 0.10 {
                0.0
            } else {
                mr.prob / f64::from(mr.perfect_us.max(1))
            };
            if mr.prob > 0.95 || mr.prob < 0.10 {
                mr.adjusted_retry_count = (mr.retry_count >> 1).min(2);
                mr.sample_limit = 4;
            } else {
                mr.sample_limit = -1;
                mr.adjusted_retry_count = mr.retry_count;
            }
            if mr.adjusted_retry_count == 0 {
                mr.adjusted_retry_count = 2;
            }
        }
        let (mut max_tp, mut max_prob) = (0.0, 0.0);
        let (mut i_tp, mut i_prob, mut i_tp2) = (0, 0, 0);
        for (i, mr) in self.r[..self.n].iter().enumerate() {
            if max_tp < mr.cur_tp {
                i_tp = i;
                max_tp = mr.cur_tp;
            }
            if max_prob < mr.prob {
                i_prob = i;
                max_prob = mr.prob;
            }
        }
        max_tp = 0.0;
        for (i, mr) in self.r[..self.n].iter().enumerate() {
            if i != i_tp && max_tp < mr.cur_tp {
                i_tp2 = i;
                max_tp = mr.cur_tp;
            }
        }
        self.max_tp = i_tp;
        self.max_tp2 = i_tp2;
        self.max_prob = i_prob;
    }

    fn next_sample(&mut self) -> usize {
        let s = usize::from(self.sample_table[self.sample_column][self.sample_idx]);
        self.sample_idx += 1;
        if self.sample_idx + 2 > self.n {
            self.sample_idx = 0;
            self.sample_column = (self.sample_column + 1) % SAMPLE_COLUMNS;
        }
        s
    }

    /// `minstrel_get_rate` with multi-rate retry: the chain for the next frame at `now`, and
    /// whether it carries a deferred (slower) sample.
    pub fn chain(&mut self, now: Time) -> ([Segment; 4], bool) {
        if now >= self.stats_update + UPDATE_INTERVAL {
            self.update_stats(now);
        }
        let mut ndx = self.max_tp;
        self.packet_count += 1;
        let delta = (self.packet_count * LOOKAROUND_PERCENT / 100) as i64
            - (i64::from(self.sample_count) + i64::from(self.sample_deferred / 2));
        let (mut sample, mut slower, mut sample_ndx) = (false, false, 0);
        if delta > 0 && self.n > 1 {
            if self.packet_count >= 10_000 {
                self.sample_deferred = 0;
                self.sample_count = 0;
                self.packet_count = 0;
            } else if delta > 2 * self.n as i64 {
                // Do not sample too often after a long idle spell.
                self.sample_count += (delta - 2 * self.n as i64) as u32;
            }
            sample_ndx = self.next_sample();
            sample = true;
            slower = self.r[sample_ndx].perfect_us > self.r[ndx].perfect_us;
            if !slower {
                let msr = &mut self.r[sample_ndx];
                if msr.sample_limit != 0 {
                    ndx = sample_ndx;
                    self.sample_count += 1;
                    if msr.sample_limit > 0 {
                        msr.sample_limit -= 1;
                    }
                } else {
                    sample = false;
                }
            } else {
                self.sample_deferred += 1;
            }
        }
        let second = match (sample, slower) {
            (true, true) => sample_ndx,
            (true, false) => self.max_tp,
            (false, _) => self.max_tp2,
        };
        let seg = |i: usize| (i as u8, self.r[i].adjusted_retry_count);
        (
            [seg(ndx), seg(second), seg(self.max_prob), seg(0)],
            sample && slower,
        )
    }

    /// `minstrel_tx_status`: `tries[k]` attempts were made on segment k of `chain`, and the
    /// frame was acknowledged or not; `probe`: the chain carried a deferred sample.
    pub fn status(&mut self, chain: &[Segment; 4], tries: &[u8; 4], acked: bool, probe: bool) {
        let last = tries.iter().rposition(|&t| t > 0);
        for (k, (&(rate, _), &t)) in chain.iter().zip(tries).enumerate() {
            if t == 0 {
                break;
            }
            let mr = &mut self.r[usize::from(rate)];
            mr.attempts += u32::from(t);
            if acked && Some(k) == last && k != 3 {
                mr.success += 1;
            }
        }
        if probe {
            self.sample_count += 1;
        }
        if self.sample_deferred > 0 {
            self.sample_deferred -= 1;
        }
    }

    /// The rate with the best throughput now.
    pub fn best(&self) -> usize {
        self.max_tp
    }
}

/// `minstrel_rate_init`'s retry count: tries whose worst-case air time fits the segment.
fn retry_count(perfect_us: u32, ack_us: u32, sp_ack_us: u32, max_retry: u8) -> u8 {
    let mut count = 1;
    let mut cw = 15u32;
    let mut tx = perfect_us + sp_ack_us;
    loop {
        tx += ack_us + perfect_us + 9 + cw.min(1023);
        cw = (cw << 1) | 1;
        if tx >= SEGMENT_US {
            break;
        }
        count += 1;
        if count >= max_retry {
            break;
        }
    }
    count
}

/// `init_sample_table`: per column, the rates 1..n placed at random positions (linear probing
/// from a random offset).
fn sample_table(n: usize, rng: &mut Rng) -> [[u8; MAX_RATES]; SAMPLE_COLUMNS] {
    let mut t = [[0u8; MAX_RATES]; SAMPLE_COLUMNS];
    let m = n.saturating_sub(1);
    if m == 0 {
        return t;
    }
    for col in &mut t {
        for i in 0..m {
            let mut j = (i + rng.below(256) as usize) % m;
            while col[j] != 0 {
                j = (j + 1) % m;
            }
            col[j] = (i + 1) as u8;
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Air times of a 1200-byte and a 10-byte frame at 802.11a's rates, us (20 us preamble and
    /// SIGNAL, 4 us per symbol of 24 x rate / 6 bits, 22 service and tail bits).
    fn times(n: usize) -> (Vec<u32>, Vec<u32>) {
        let t = |bytes: u32, mbps: u32| 20 + 4 * (22 + 8 * bytes).div_ceil(4 * mbps);
        let rates = [6, 9, 12, 18, 24, 36, 48, 54];
        (
            rates[..n].iter().map(|&r| t(1200, r)).collect(),
            rates[..n].iter().map(|&r| t(10, r)).collect(),
        )
    }

    fn station(n: usize) -> Minstrel {
        let (p, a) = times(n);
        Minstrel::new(
            n,
            &p,
            &a,
            a[0],
            DEFAULT_MAX_RETRY,
            &mut Rng::stream(1, "minstrel"),
        )
    }

    #[test]
    fn retry_counts_fill_the_6000_us_segment() {
        // 54 Mbit/s: 1200 bytes = 9622 bits / 216 = 45 symbols -> 200 us, ACK 24 us, at 6
        // Mbit/s 40 us. 240, then + 24 + 200 + 9 + cw for cw = 15, 31, 63, 127, 255, 511:
        // 488, 752, 1048, 1408, 1896, 2640 us: under 6000 each time, capped at 7 tries.
        assert_eq!(retry_count(200, 24, 40, 7), 7);
        // carl9170 allows 3.
        assert_eq!(retry_count(200, 24, 40, 3), 3);
        // 6 Mbit/s: 1624 us, ACK 40: 1664, + 1688 = 3352, + 1704 = 5056, + 1736 = 6792 > 6000:
        // 3 tries.
        let (p, a) = times(1);
        assert_eq!((p[0], a[0]), (1624, 40));
        assert_eq!(retry_count(1624, 40, 40, 7), 3);
        assert_eq!(retry_count(1624, 40, 40, 2), 2);
        let (p, _) = times(8);
        assert_eq!(p[7], 200);
    }

    #[test]
    fn sample_table_columns_are_permutations_of_all_but_the_lowest_rate() {
        let m = station(8);
        for col in &m.sample_table {
            let mut seen: Vec<u8> = col[..7].to_vec();
            seen.sort();
            assert_eq!(seen, vec![1, 2, 3, 4, 5, 6, 7]);
            assert_eq!(col[7], 0);
        }
    }

    #[test]
    fn ewma_throughput_and_the_chain_by_hand() {
        let mut m = station(8);
        // Interval 1: 54 Mbit/s (index 7) 8 of 10, 48 (6) 10 of 10, 36 (5) 1 of 20.
        m.r[7].attempts = 10;
        m.r[7].success = 8;
        m.r[6].attempts = 10;
        m.r[6].success = 10;
        m.r[5].attempts = 20;
        m.r[5].success = 1;
        m.update_stats(Time::from_ms(100));
        // P = 0.25 p (no history): 0.2, 0.25, 0.0125.
        assert!((m.r[7].prob - 0.2).abs() < 1e-12);
        assert!((m.r[6].prob - 0.25).abs() < 1e-12);
        assert!((m.r[5].prob - 0.0125).abs() < 1e-12);
        // Throughput P / t_1200: 54: 0.2 / 200; 48: 1200 bytes at 48 = 9622 / 192 = 51
        // symbols -> 224 us: 0.25 / 224 = 1.116e-3 > 1e-3; 36: under 10 % -> 0.
        assert!((m.r[6].cur_tp - 0.25 / 224.0).abs() < 1e-15);
        assert_eq!(m.r[5].cur_tp, 0.0);
        assert_eq!((m.max_tp, m.max_tp2, m.max_prob), (6, 7, 6));
        // Below 10 % or above 95 %: at most 2 tries a segment, 4 samples; between: all.
        assert_eq!(m.r[5].adjusted_retry_count, 2);
        assert_eq!(m.r[5].sample_limit, 4);
        assert_eq!(m.r[7].adjusted_retry_count, 7);
        assert_eq!(m.r[7].sample_limit, -1);
        // Interval 2: 54 all 10 succeed: P = 0.25 + 0.75 x 0.2 = 0.4; 48 untried keeps 0.25.
        m.r[7].attempts = 10;
        m.r[7].success = 10;
        m.update_stats(Time::from_ms(200));
        assert!((m.r[7].prob - 0.4).abs() < 1e-12);
        assert!((m.r[6].prob - 0.25).abs() < 1e-12);
        assert_eq!((m.max_tp, m.max_tp2, m.max_prob), (7, 6, 7));
        // No sample due on the first frame (10 % of 1 rounds to 0): best, second, most
        // probable, lowest; the lowest rate (never tried, P = 0 < 10 %) gets half its 3 tries.
        let (c, probe) = m.chain(Time::from_ms(250));
        assert!(!probe);
        assert_eq!(c, [(7, 7), (6, 7), (7, 7), (0, 1)]);
    }

    #[test]
    fn one_frame_in_ten_is_a_sample_and_slower_samples_go_second() {
        let mut m = station(8);
        m.r[7].attempts = 10;
        m.r[7].success = 10;
        m.update_stats(Time::from_ms(100));
        assert_eq!(m.max_tp, 7);
        // Every rate but 54 is slower than the best: a sample of one of them is deferred to the
        // second segment (a probe); a sample of 54 itself goes first, followed by the best, 54
        // again. 10 % of the frames are samples, from the tenth on.
        let mut samples = 0;
        for k in 1..=100u32 {
            let (c, probe) = m.chain(Time::from_ms(150));
            assert_eq!(c[0].0, 7);
            if probe {
                assert_ne!(c[1].0, 7);
            }
            if probe || c[1].0 == 7 {
                samples += 1;
            } else {
                assert_eq!(c[1].0, m.max_tp2 as u8);
            }
            // Acknowledged at once: statuses come back before the next frame.
            m.status(&c, &[1, 0, 0, 0], true, probe);
            assert_eq!(samples, k / 10, "{k}");
        }
        // The status credited 100 attempts and successes to 54.
        assert_eq!((m.r[7].attempts, m.r[7].success), (100, 100));
    }

    #[test]
    fn status_credits_tries_per_segment_and_the_success_to_the_last() {
        let mut m = station(8);
        let c = [(7, 2), (6, 2), (4, 2), (0, 2)];
        m.status(&c, &[2, 2, 1, 0], true, false);
        assert_eq!((m.r[7].attempts, m.r[7].success), (2, 0));
        assert_eq!((m.r[6].attempts, m.r[6].success), (2, 0));
        assert_eq!((m.r[4].attempts, m.r[4].success), (1, 1));
        // The kernel credits no success to the fourth segment.
        m.status(&c, &[2, 2, 2, 1], true, false);
        assert_eq!((m.r[0].attempts, m.r[0].success), (1, 0));
    }
}
