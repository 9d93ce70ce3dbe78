//! The SACKED marks of a sender's scoreboard as one bit per segment, so that the walks over the
//! scoreboard pass a run of SACKed segments 64 at a time without reading their records.
//!
//! Linux gives RACK the same shortcut by keeping a second list of the sent skbs,
//! `tp->tsorted_sent_queue` ("time-sorted sent but un-SACKed skbs", include/linux/tcp.h):
//! `tcp_sacktag_walk()` unlinks an skb from it once SACKed (net/ipv4/tcp_input.c), and
//! `tcp_rack_detect_loss()` (net/ipv4/tcp_recovery.c) walks only what is left. In railpath the
//! scoreboard's records are in sequence order in one ring, and a record is 40 bytes: with a
//! hundred SACKed segments ahead of a hole, RACK read 4 kB of records per ACK to find the few
//! that are not SACKed, and with a thousand flows those reads come from beyond the L2 cache
//! (docs/performance.md, fourteenth round). The bits make the same walk touch 8 bytes per 64
//! segments for the SACKed runs; it visits the same segments in the same order, so every
//! decision is the one the flag-by-flag walk made.
//!
//! Segment `seq`'s bit is bit `seq mod capacity` (capacity a power of two, at least 64), so the
//! bits ride along with the window: nothing moves when the cumulative ACK advances, a bit is
//! cleared when its SACKed segment leaves the scoreboard. The capacity holds the whole window
//! whenever a bit is set; with no segment SACKed every bit is clear whatever the window.

/// One bit per segment of the window: set if the segment is SACKed.
#[derive(Debug, Clone, Default)]
pub(crate) struct SackedBits {
    /// A power-of-two number of words, or none (no segment was ever SACKed).
    words: Vec<u64>,
}

impl SackedBits {
    /// Segments the bits can tell apart: the most the window may hold while a bit is set.
    #[inline]
    pub(crate) fn capacity(&self) -> usize {
        self.words.len() << 6
    }

    #[inline]
    fn slot(&self, seq: u64) -> (usize, u32) {
        let i = seq as usize & (self.capacity() - 1);
        (i >> 6, (i & 63) as u32)
    }

    /// Mark segment `seq` SACKed (the capacity holds the window).
    #[inline]
    pub(crate) fn set(&mut self, seq: u64) {
        let (w, b) = self.slot(seq);
        self.words[w] |= 1 << b;
    }

    /// Segment `seq`, SACKed, leaves the scoreboard.
    #[inline]
    pub(crate) fn clear(&mut self, seq: u64) {
        let (w, b) = self.slot(seq);
        self.words[w] &= !(1 << b);
    }

    /// Is segment `seq` marked?
    #[cfg(test)]
    pub(crate) fn get(&self, seq: u64) -> bool {
        if self.words.is_empty() {
            return false;
        }
        let (w, b) = self.slot(seq);
        self.words[w] >> b & 1 != 0
    }

    /// The first segment of `from..to` that is not SACKed, or `to`.
    #[inline]
    pub(crate) fn next_clear(&self, from: u64, to: u64) -> u64 {
        if self.words.is_empty() {
            return from.min(to);
        }
        self.scan(from, to, !0)
    }

    /// The first segment of `from..to` that is SACKed, or `to`.
    #[inline]
    pub(crate) fn next_set(&self, from: u64, to: u64) -> u64 {
        if self.words.is_empty() {
            return to;
        }
        self.scan(from, to, 0)
    }

    /// The first segment of `from..to` whose bit, XORed with `invert`'s, is set; or `to`. A
    /// word's bits above the one looked for are shifted out, so each step ends at a word's end.
    #[inline]
    fn scan(&self, mut seq: u64, to: u64, invert: u64) -> u64 {
        while seq < to {
            let (w, b) = self.slot(seq);
            let found = (self.words[w] ^ invert) >> b;
            if found != 0 {
                return (seq + u64::from(found.trailing_zeros())).min(to);
            }
            seq += u64::from(64 - b);
        }
        to
    }

    /// Make room for a window of `len` segments from `first`, whose SACKED marks are `sacked`
    /// (in sequence order), if the capacity is less: the bits are laid out again for the larger
    /// capacity. The capacity at least doubles, so a window that grows one segment at a time
    /// is laid out again a logarithmic number of times.
    pub(crate) fn reserve(&mut self, first: u64, len: usize, sacked: impl Iterator<Item = bool>) {
        if len <= self.capacity() {
            return;
        }
        let words = len
            .div_ceil(64)
            .next_power_of_two()
            .max(2 * self.words.len())
            .max(1);
        self.words.clear();
        self.words.resize(words, 0);
        for (seq, s) in (first..).zip(sacked) {
            if s {
                self.set(seq);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(first: u64, marks: &[bool]) -> SackedBits {
        let mut b = SackedBits::default();
        b.reserve(first, marks.len(), marks.iter().copied());
        b
    }

    #[test]
    fn empty_bits_say_nothing_is_sacked() {
        let b = SackedBits::default();
        assert_eq!(b.capacity(), 0);
        assert_eq!(b.next_clear(5, 9), 5);
        assert_eq!(b.next_clear(9, 9), 9);
        assert_eq!(b.next_set(5, 9), 9);
        assert!(!b.get(7));
    }

    #[test]
    fn runs_found_within_a_word() {
        // Segments 10..20: 12, 13, 14 and 17 SACKed.
        let marks: Vec<bool> = (10..20).map(|s| [12, 13, 14, 17].contains(&s)).collect();
        let b = with(10, &marks);
        assert_eq!(b.capacity(), 64);
        assert_eq!(b.next_set(10, 20), 12);
        assert_eq!(b.next_clear(12, 20), 15);
        assert_eq!(b.next_set(15, 20), 17);
        assert_eq!(b.next_clear(17, 20), 18);
        assert_eq!(b.next_set(18, 20), 20);
        // The bound cuts a run short.
        assert_eq!(b.next_set(10, 12), 12);
        assert_eq!(b.next_clear(12, 14), 14);
    }

    #[test]
    fn runs_cross_words_and_the_ring_end() {
        // 200 segments from 1000: capacity 256, so segment 1000 is bit 232 (1000 mod 256), and
        // the window wraps past bit 255 at segment 1024. SACKed: 1010..1150.
        let marks: Vec<bool> = (1000..1200).map(|s| (1010..1150).contains(&s)).collect();
        let mut b = with(1000, &marks);
        assert_eq!(b.capacity(), 256);
        assert_eq!(b.next_set(1000, 1200), 1010);
        assert_eq!(b.next_clear(1010, 1200), 1150);
        assert_eq!(b.next_set(1150, 1200), 1200);
        // The cumulative ACK takes 1000..1100 off: their bits clear, the ring moves on.
        for s in 1010..1100 {
            b.clear(s);
        }
        assert_eq!(b.next_clear(1100, 1300), 1150);
        // New segments 1200..1300 reuse the bits of 944..1044, all clear.
        assert_eq!(b.next_set(1150, 1300), 1300);
        b.set(1299);
        assert_eq!(b.next_set(1150, 1300), 1299);
        assert!(b.get(1299) && !b.get(1298) && !b.get(1300));
    }

    #[test]
    fn reserve_lays_the_marks_out_again_and_at_least_doubles() {
        let marks: Vec<bool> = (0..64).map(|i| i % 3 == 0).collect();
        let mut b = with(40, &marks);
        assert_eq!(b.capacity(), 64);
        // Room already: nothing changes.
        b.reserve(40, 64, std::iter::repeat(false));
        assert!(b.get(40) && b.get(43) && !b.get(41));
        let marks: Vec<bool> = (0..65).map(|i| i % 3 == 0).collect();
        b.reserve(40, 65, marks.iter().copied());
        assert_eq!(b.capacity(), 128);
        for (i, &m) in marks.iter().enumerate() {
            assert_eq!(b.get(40 + i as u64), m, "segment {}", 40 + i);
        }
        assert_eq!(b.next_clear(40, 105), 41);
        assert_eq!(b.next_set(101, 105), 103);
        // 300 segments need 5 words: 8, a power of two.
        b.reserve(40, 300, std::iter::empty());
        assert_eq!(b.capacity(), 512);
    }

    #[test]
    fn scans_agree_with_the_marks_one_by_one() {
        // Windows of random marks at random offsets, every (from, to) pair of a few.
        let mut rng = railpath_core::rng::Rng::from_seed(29);
        let mut next = || rng.next_u64();
        for _ in 0..200 {
            let first = next() % 100_000;
            let len = (next() % 300) as usize + 1;
            let density = next() % 4;
            let marks: Vec<bool> = (0..len).map(|_| next() % 4 < density).collect();
            let b = with(first, &marks);
            for _ in 0..20 {
                let from = first + next() % len as u64;
                let to = from + next() % (first + len as u64 - from + 1);
                let want_clear = (from..to)
                    .find(|&s| !marks[(s - first) as usize])
                    .unwrap_or(to);
                let want_set = (from..to)
                    .find(|&s| marks[(s - first) as usize])
                    .unwrap_or(to);
                assert_eq!(b.next_clear(from, to), want_clear);
                assert_eq!(b.next_set(from, to), want_set);
            }
        }
    }
}
