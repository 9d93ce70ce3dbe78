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

/// A FIFO ring of `T` (see the module's header).
#[derive(Debug, Clone)]
pub struct Ring<T> {
    /// The slots; its length is the capacity, a power of two.
    buf: Vec<T>,
    /// The physical index of the front element.
    head: usize,
    len: usize,
}

impl<T: Copy + Default> Ring<T> {
    /// An empty ring with room for at least `cap` elements before it grows.
    pub fn with_capacity(cap: usize) -> Ring<T> {
        Ring {
            buf: vec![T::default(); cap.max(1).next_power_of_two()],
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

    /// Double the capacity, the elements moved to the front of the new slots in order.
    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let mut buf = vec![T::default(); self.buf.len() * 2];
        for (k, s) in buf.iter_mut().take(self.len).enumerate() {
            *s = self.buf[self.slot(k)];
        }
        self.buf = buf;
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
        }
        self.len -= 1;
        Some(v)
    }

    /// The elements, front to back.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        (0..self.len).map(move |k| &self.buf[self.slot(k)])
    }
}

impl<T: Copy + Default> std::ops::Index<usize> for Ring<T> {
    type Output = T;
    fn index(&self, i: usize) -> &T {
        self.get(i).expect("ring index in bounds")
    }
}

impl<T: Copy + Default> std::ops::IndexMut<usize> for Ring<T> {
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
}
