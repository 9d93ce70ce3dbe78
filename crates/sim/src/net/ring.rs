//! A FIFO ring buffer of `Copy` values with a power-of-two capacity, for a link direction's
//! packets (queue and pipe in one ring, `crate::net::link::LinkDir`).
//!
//! The classic circular buffer (Knuth, TAOCP vol. 1, 2.2.2, "sequential allocation" of a queue in
//! a circle) with the wrap done by a mask instead of a comparison, as in Linux's `kfifo`
//! (lib/kfifo.c: "the size is a power of 2 so that a mask replaces the modulo"). It does what
//! `std::collections::VecDeque` does for the link, with fewer instructions per operation: a
//! slot's place is `(head + i) & mask`, and a push hands back the slot it wrote so that the
//! caller can complete it in place (docs/performance.md). It grows by doubling when full and never
//! shrinks; the order of its elements never depends on its capacity.
//!
//! Each slot may have a side part `W` in a parallel buffer (the same capacity, the same physical
//! index), written only by [`Ring::push_back_with`] (when asked to) and read only by [`Ring::side`]: a link keeps
//! an ACK's acknowledgement fields there, so that a data packet's slot is one cache line and the
//! side buffer's lines are never touched by data packets (docs/performance.md, seventh round).
//! The ring does not know which side parts are meaningful (the caller marks them in `T`); it moves
//! all of them with their slots when it grows or removes. With `W = ()` (the default) the side
//! buffer costs nothing.

/// A FIFO ring of `T`, each with a side part `W` (see the module's header).
#[derive(Debug, Clone)]
pub struct Ring<T, W = ()> {
    /// The slots; its length is the capacity, a power of two.
    buf: Vec<T>,
    /// The side parts, parallel to `buf` (the same length).
    side: Vec<W>,
    /// The physical index of the front element.
    head: usize,
    len: usize,
}

impl<T: Copy + Default, W: Copy + Default> Ring<T, W> {
    /// An empty ring with room for at least `cap` elements before it grows.
    pub fn with_capacity(cap: usize) -> Ring<T, W> {
        let cap = cap.max(1).next_power_of_two();
        Ring {
            buf: vec![T::default(); cap],
            side: vec![W::default(); cap],
            head: 0,
            len: 0,
        }
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The physical slot of logical index `i` (any `i`: the mask wraps it).
    #[inline(always)]
    fn slot(&self, i: usize) -> usize {
        (self.head + i) & (self.buf.len() - 1)
    }

    /// Append `v`; returns the slot it now occupies, for the caller to complete in place.
    #[inline]
    pub fn push_back(&mut self, v: T) -> &mut T {
        if self.len == self.buf.len() {
            self.grow();
        }
        let i = self.slot(self.len);
        self.len += 1;
        let s = &mut self.buf[i];
        *s = v;
        s
    }

    /// [`Ring::push_back`], with the slot's side part `w` when `has_side` (otherwise the side
    /// slot is not written).
    #[inline(always)]
    pub fn push_back_with(&mut self, v: T, has_side: bool, w: W) -> &mut T {
        if self.len == self.buf.len() {
            self.grow();
        }
        let i = self.slot(self.len);
        self.len += 1;
        if has_side {
            if let Some(s) = self.side.get_mut(i) {
                *s = w;
            }
        }
        let s = &mut self.buf[i];
        *s = v;
        s
    }

    /// The side part of logical index `i` (as its last [`Ring::push_back_with`] left it; the
    /// default, or a stale value, for a slot pushed by [`Ring::push_back`]).
    #[inline]
    pub fn side(&self, i: usize) -> Option<&W> {
        if i < self.len {
            Some(&self.side[self.slot(i)])
        } else {
            None
        }
    }

    /// Double the capacity, the elements moved to the front of the new slots in order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let mut buf = vec![T::default(); self.buf.len() * 2];
        let mut side = vec![W::default(); self.buf.len() * 2];
        for k in 0..self.len {
            let from = self.slot(k);
            buf[k] = self.buf[from];
            side[k] = self.side[from];
        }
        self.buf = buf;
        self.side = side;
        self.head = 0;
    }

    #[inline]
    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i < self.len {
            Some(&self.buf[self.slot(i)])
        } else {
            None
        }
    }

    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i < self.len {
            let s = self.slot(i);
            Some(&mut self.buf[s])
        } else {
            None
        }
    }

    #[inline]
    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = self.buf[self.head];
        self.head = self.slot(1);
        self.len -= 1;
        Some(v)
    }

    /// [`Ring::pop_front`], with the front's side part when `has_side` says it has one, and
    /// `none` when it has none (its side slot is then not read).
    #[inline(always)]
    pub fn pop_front_with(
        &mut self,
        has_side: impl FnOnce(&T) -> bool,
        none: &W,
    ) -> Option<(T, W)> {
        if self.len == 0 {
            return None;
        }
        let i = self.head;
        let v = self.buf[i];
        let w = if has_side(&v) {
            self.side.get(i).unwrap_or(none)
        } else {
            none
        };
        let w = *w;
        self.head = self.slot(1);
        self.len -= 1;
        Some((v, w))
    }

    #[inline]
    pub fn pop_back(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(self.buf[self.slot(self.len)])
    }

    /// Remove the element at logical index `i` (the ones behind it move up); `None` past the end.
    pub fn remove(&mut self, i: usize) -> Option<T> {
        let v = *self.get(i)?;
        for k in i..self.len - 1 {
            let (to, from) = (self.slot(k), self.slot(k + 1));
            self.buf[to] = self.buf[from];
            self.side[to] = self.side[from];
        }
        self.len -= 1;
        Some(v)
    }

    /// The elements, front to back.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len).map(move |k| &self.buf[self.slot(k)])
    }
}

impl<T: Copy + Default, W: Copy + Default> std::ops::Index<usize> for Ring<T, W> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        self.get(i).expect("ring index in bounds")
    }
}

impl<T: Copy + Default, W: Copy + Default> std::ops::IndexMut<usize> for Ring<T, W> {
    fn index_mut(&mut self, i: usize) -> &mut T {
        self.get_mut(i).expect("ring index in bounds")
    }
}

#[cfg(test)]
mod tests {
    use super::Ring;
    use std::collections::VecDeque;

    #[test]
    fn capacity_is_a_power_of_two_and_grows_in_order() {
        let mut r: Ring<u32> = Ring::with_capacity(3);
        assert_eq!(r.buf.len(), 4);
        // Wrap the head first, so that growing must unwrap.
        for v in 0..3 {
            r.push_back(v);
        }
        assert_eq!(r.pop_front(), Some(0));
        assert_eq!(r.pop_front(), Some(1));
        for v in 3..9 {
            r.push_back(v);
        }
        assert_eq!(r.buf.len(), 8);
        assert_eq!(
            r.iter().copied().collect::<Vec<_>>(),
            vec![2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(r[0], 2);
        assert_eq!(r[6], 8);
        assert_eq!(r.get(7), None);
    }

    #[test]
    fn a_push_returns_the_slot_it_wrote() {
        let mut r: Ring<(u8, u8)> = Ring::with_capacity(2);
        r.push_back((1, 0));
        r.push_back((2, 0)).1 = 9;
        assert_eq!(r.pop_back(), Some((2, 9)));
        assert_eq!(r.pop_back(), Some((1, 0)));
        assert_eq!(r.pop_back(), None);
        assert!(r.is_empty());
    }

    #[test]
    fn behaves_as_a_vecdeque_on_random_operations() {
        // Every operation the links use, checked against std's deque on a random sequence.
        let mut rng = railpath_core::Rng::from_seed(29);
        let mut r: Ring<u64> = Ring::with_capacity(1);
        let mut q: VecDeque<u64> = VecDeque::new();
        for v in 0..20_000u64 {
            match rng.below(7) {
                0..=2 => {
                    r.push_back(v);
                    q.push_back(v);
                }
                3 => assert_eq!(r.pop_front(), q.pop_front()),
                4 => assert_eq!(r.pop_back(), q.pop_back()),
                5 => {
                    let i = rng.below(q.len() as u64 + 2) as usize;
                    assert_eq!(r.remove(i), q.remove(i));
                }
                _ => {
                    let i = rng.below(q.len() as u64 + 2) as usize;
                    if let (Some(a), Some(b)) = (r.get_mut(i), q.get_mut(i)) {
                        *a += 1;
                        *b += 1;
                    }
                    assert_eq!(r.get(i), q.get(i));
                }
            }
            assert_eq!(r.len(), q.len());
            assert_eq!(r.front(), q.front());
        }
        assert!(r.iter().eq(q.iter()));
    }
    #[test]
    fn side_parts_follow_their_slots() {
        // Side parts written with a push stay with their slot through wraps, growth and
        // removals; checked against std's deque of (value, side part) on a random sequence.
        let mut rng = railpath_core::Rng::from_seed(7);
        let mut r: Ring<u64, u32> = Ring::with_capacity(2);
        let mut q: VecDeque<(u64, Option<u32>)> = VecDeque::new();
        for v in 0..20_000u64 {
            match rng.below(6) {
                0 => {
                    r.push_back(v);
                    q.push_back((v, None));
                }
                1 | 2 => {
                    let w = (v as u32).wrapping_mul(2_654_435_761);
                    r.push_back_with(v, true, w);
                    q.push_back((v, Some(w)));
                }
                3 => {
                    // The side part is read when asked for, and only then.
                    let asked = rng.below(2) == 0;
                    let want = q.pop_front();
                    let got = r.pop_front_with(|_| asked, &u32::MAX);
                    match (got, want) {
                        (Some(g), Some((v, Some(w)))) if asked => assert_eq!(g, (v, w)),
                        (Some(g), Some((v, _))) if !asked => assert_eq!(g, (v, u32::MAX)),
                        (got, want) => assert_eq!(got.map(|g| g.0), want.map(|w| w.0)),
                    }
                }
                4 => assert_eq!(r.pop_back(), q.pop_back().map(|e| e.0)),
                _ => {
                    let i = rng.below(q.len() as u64 + 2) as usize;
                    assert_eq!(r.remove(i), q.remove(i).map(|e| e.0));
                }
            }
            assert_eq!(r.len(), q.len());
            for (i, &(v, w)) in q.iter().enumerate() {
                assert_eq!(r.get(i), Some(&v));
                if let Some(w) = w {
                    assert_eq!(r.side(i), Some(&w), "element {i} of {}", q.len());
                }
            }
            assert_eq!(r.side(q.len()), None);
        }
    }
}
