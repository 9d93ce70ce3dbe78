//! A memo of carrier timelines, shared by every run of a process.
//!
//! [`carrier_timelines`] is a pure function of the train, the carriers, the run seed and the
//! duration: its random draws come from streams of the seed (`Rng::stream`), and measured data is
//! read into the configuration before it is called. A process that runs many scenarios over one
//! line (a reproduction's grid of mechanisms x seeds, a sweep, the PHA table's learning runs of
//! `seed + 1 ..= seed + N` for every seed) asks for the same timelines again and again; a line's
//! 600 s for two carriers take about 70 ms to compute (25 000 steps), often more than the
//! packets of the run that asks. [`carrier_timelines_shared`] computes each distinct request
//! once and hands out the same timelines behind an [`Arc`]: the results are those of
//! [`carrier_timelines`] exactly (the same function computes them).
//!
//! Memoisation (Michie, "'Memo' functions and machine learning", Nature 218, 1968) with
//! least-recently-used eviction under a byte budget and an entry count. The keys hold
//! floating-point settings, which have no `Hash`, so a lookup compares them with `==` against
//! each entry: a few hundred entries at most, tens in practice. A request whose carriers include measured data (CSV, Mahimahi) bypasses it:
//! those timelines cost little to build and their data would make every comparison long.
//!
//! Two threads that ask for the same timelines at once compute them once: the second waits for
//! the first (a [`OnceLock`] per entry), and requests for other timelines do not wait for either.

use crate::config::{CarrierConfig, CarrierModel, TrainConfig};
use crate::timeline::carrier_timelines;
use crate::{CarrierTimeline, HandoverRecord, LinkStep, RadioError};
use railpath_core::Time;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The timelines of a request, or the error they gave.
pub type Shared = Result<Arc<Vec<CarrierTimeline>>, RadioError>;

/// The process-wide memo's budget: 64 MiB of steps and handover records (a 600 s run of a
/// two-carrier line is about 1.6 MB, so some forty such runs).
pub const BUDGET_BYTES: usize = 64 << 20;

/// At most this many entries, whatever their size: a lookup compares the request with each
/// (a sweep of many short runs, or of configurations that fail, would otherwise pile up small
/// entries under the byte budget).
pub const MAX_ENTRIES: usize = 256;

/// [`carrier_timelines`], computed once per distinct (train, carriers, seed, duration) in the
/// process and shared (see the module's header).
pub fn carrier_timelines_shared(
    train: &TrainConfig,
    carriers: &[CarrierConfig],
    seed: u64,
    duration: Time,
) -> Shared {
    static MEMO: OnceLock<Memo> = OnceLock::new();
    MEMO.get_or_init(|| Memo::new(BUDGET_BYTES))
        .get(train, carriers, seed, duration)
}

/// A memo of [`carrier_timelines`] with a byte budget (the process-wide one is
/// [`carrier_timelines_shared`]'s).
#[derive(Debug)]
pub struct Memo {
    budget: usize,
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    entries: Vec<Entry>,
    /// The sum of the entries' weights.
    bytes: usize,
    /// Counts lookups; an entry's `used` is the count at its last lookup (least recent: least).
    clock: u64,
    hits: u64,
    misses: u64,
}

#[derive(Debug)]
struct Entry {
    train: TrainConfig,
    carriers: Vec<CarrierConfig>,
    seed: u64,
    duration: Time,
    cell: Arc<OnceLock<Shared>>,
    /// Bytes held, once computed (0 before).
    bytes: usize,
    used: u64,
}

impl Memo {
    /// An empty memo that keeps at most about `budget` bytes of timelines (the entry just
    /// computed is always kept, whatever its size).
    pub fn new(budget: usize) -> Memo {
        Memo {
            budget,
            inner: Mutex::new(Inner::default()),
        }
    }

    /// [`carrier_timelines`] of the request, from the memo when it holds it.
    pub fn get(
        &self,
        train: &TrainConfig,
        carriers: &[CarrierConfig],
        seed: u64,
        duration: Time,
    ) -> Shared {
        if carriers
            .iter()
            .any(|c| matches!(c.model, CarrierModel::Csv | CarrierModel::Mahimahi))
        {
            return carrier_timelines(train, carriers, seed, duration).map(Arc::new);
        }
        let cell = {
            let mut g = self.lock();
            g.clock += 1;
            let now = g.clock;
            let found = g.entries.iter_mut().find(|e| {
                e.seed == seed
                    && e.duration == duration
                    && e.train == *train
                    && e.carriers == carriers
            });
            match found {
                Some(e) => {
                    e.used = now;
                    let cell = e.cell.clone();
                    g.hits += 1;
                    cell
                }
                None => {
                    let cell = Arc::new(OnceLock::new());
                    g.entries.push(Entry {
                        train: train.clone(),
                        carriers: carriers.to_vec(),
                        seed,
                        duration,
                        cell: cell.clone(),
                        bytes: 0,
                        used: now,
                    });
                    g.misses += 1;
                    cell
                }
            }
        };
        // Computed outside the lock: other requests go on meanwhile, and the same request made
        // by another thread waits here for this one's result.
        let mut computed = false;
        let out = cell
            .get_or_init(|| {
                computed = true;
                carrier_timelines(train, carriers, seed, duration).map(Arc::new)
            })
            .clone();
        if computed {
            let bytes = weight(carriers.len(), &out);
            let mut g = self.lock();
            if let Some(e) = g.entries.iter_mut().find(|e| Arc::ptr_eq(&e.cell, &cell)) {
                e.bytes = bytes;
                g.bytes += bytes;
            }
            g.evict(self.budget, &cell);
        }
        out
    }

    /// (hits, misses) so far: lookups answered from the memo, and lookups that computed.
    pub fn stats(&self) -> (u64, u64) {
        let g = self.lock();
        (g.hits, g.misses)
    }

    /// The entries held.
    pub fn len(&self) -> usize {
        self.lock().entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The lock, whether or not a thread panicked while holding it: nothing is computed under
    /// it, and the entries stay consistent between its statements.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Inner {
    /// Drop the least recently used computed entries, other than `keep`, until the entries fit
    /// `budget` bytes and [`MAX_ENTRIES`].
    fn evict(&mut self, budget: usize, keep: &Arc<OnceLock<Shared>>) {
        while self.bytes > budget || self.entries.len() > MAX_ENTRIES {
            let victim = self
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.bytes > 0 && !Arc::ptr_eq(&e.cell, keep))
                .min_by_key(|(_, e)| e.used)
                .map(|(i, _)| i);
            let Some(i) = victim else {
                return;
            };
            let e = self.entries.swap_remove(i);
            self.bytes -= e.bytes;
        }
    }
}

/// The bytes an entry holds: its request's configurations and its result's steps and handover
/// records (never 0: a computed entry can be evicted).
fn weight(carriers: usize, r: &Shared) -> usize {
    let key = std::mem::size_of::<Entry>() + carriers * std::mem::size_of::<CarrierConfig>();
    key + match r {
        Ok(tl) => tl
            .iter()
            .map(|t| {
                t.steps.len() * std::mem::size_of::<LinkStep>()
                    + t.handovers.len() * std::mem::size_of::<HandoverRecord>()
            })
            .sum::<usize>(),
        Err(e) => e.message.len() + e.key.len() + e.file.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TrainConfig;

    /// The PHA paper's two carriers (25 Mbit/s, sites 1340 m apart, the second grid offset by
    /// half), 300 km/h.
    fn line() -> (TrainConfig, Vec<CarrierConfig>) {
        (
            TrainConfig::constant(300.0),
            vec![
                CarrierConfig::grid("A", 25.0, 1340.0, 0.0),
                CarrierConfig::grid("B", 25.0, 1340.0, 670.0),
            ],
        )
    }

    const RUN: Time = Time::from_secs(30);

    #[test]
    fn a_memoised_request_gives_what_the_function_gives() {
        let (t, cs) = line();
        let memo = Memo::new(BUDGET_BYTES);
        let first = memo.get(&t, &cs, 3, RUN).unwrap();
        let again = memo.get(&t, &cs, 3, RUN).unwrap();
        assert!(
            Arc::ptr_eq(&first, &again),
            "the second request is answered from the memo"
        );
        assert_eq!(*first, carrier_timelines(&t, &cs, 3, RUN).unwrap());
        assert!(first.iter().any(|c| !c.handovers.is_empty()));
        assert_eq!(memo.stats(), (1, 1));
    }

    #[test]
    fn any_difference_in_the_request_is_another_entry() {
        let (t, cs) = line();
        let memo = Memo::new(BUDGET_BYTES);
        let base = memo.get(&t, &cs, 3, RUN).unwrap();
        let seed = memo.get(&t, &cs, 4, RUN).unwrap();
        let longer = memo.get(&t, &cs, 3, RUN + Time::from_secs(1)).unwrap();
        let mut cs2 = cs.clone();
        cs2[1].hysteresis_db += 0.5;
        let carrier = memo.get(&t, &cs2, 3, RUN).unwrap();
        let faster = memo
            .get(&TrainConfig::constant(250.0), &cs, 3, RUN)
            .unwrap();
        assert_eq!(memo.stats(), (0, 5));
        assert_eq!(memo.len(), 5);
        for (other, want) in [
            (&seed, carrier_timelines(&t, &cs, 4, RUN)),
            (
                &longer,
                carrier_timelines(&t, &cs, 3, RUN + Time::from_secs(1)),
            ),
            (&carrier, carrier_timelines(&t, &cs2, 3, RUN)),
            (
                &faster,
                carrier_timelines(&TrainConfig::constant(250.0), &cs, 3, RUN),
            ),
        ] {
            assert_eq!(**other, want.unwrap());
            assert_ne!(**other, *base);
        }
    }

    #[test]
    fn errors_are_returned_as_the_function_returns_them() {
        let (t, mut cs) = line();
        cs[0].enb_spacing_m = Some(-1.0);
        let memo = Memo::new(BUDGET_BYTES);
        let want = carrier_timelines(&t, &cs, 1, RUN).unwrap_err();
        assert_eq!(memo.get(&t, &cs, 1, RUN).unwrap_err(), want);
        assert_eq!(memo.get(&t, &cs, 1, RUN).unwrap_err(), want);
        assert!(want.key.starts_with("carrier[0]."), "{want:?}");
    }

    #[test]
    fn the_least_recently_used_entry_goes_when_the_budget_is_passed() {
        let (t, cs) = line();
        // Room for two results of this size, not three.
        let one = weight(
            cs.len(),
            &Ok(Arc::new(carrier_timelines(&t, &cs, 1, RUN).unwrap())),
        );
        let memo = Memo::new(one * 5 / 2);
        let s1 = memo.get(&t, &cs, 1, RUN).unwrap();
        memo.get(&t, &cs, 2, RUN).unwrap();
        // Seed 1 is used again, so seed 2 is now the least recent.
        assert!(Arc::ptr_eq(&s1, &memo.get(&t, &cs, 1, RUN).unwrap()));
        memo.get(&t, &cs, 3, RUN).unwrap();
        assert_eq!(memo.len(), 2, "one entry evicted");
        let (hits, misses) = memo.stats();
        assert_eq!((hits, misses), (1, 3));
        // Seed 1 is still held; seed 2 is computed again.
        assert!(Arc::ptr_eq(&s1, &memo.get(&t, &cs, 1, RUN).unwrap()));
        memo.get(&t, &cs, 2, RUN).unwrap();
        assert_eq!(memo.stats(), (hits + 1, misses + 1));
    }

    #[test]
    fn failing_requests_do_not_pile_up() {
        // Requests that all fail (a negative site spacing): each is an entry of its own, and
        // the memo keeps the most recent MAX_ENTRIES.
        let (t, mut cs) = line();
        let memo = Memo::new(BUDGET_BYTES);
        for k in 0..MAX_ENTRIES as u64 + 10 {
            cs[0].enb_spacing_m = Some(-1.0 - k as f64);
            assert!(memo.get(&t, &cs, 1, RUN).is_err());
        }
        assert_eq!(memo.len(), MAX_ENTRIES);
        // The last request is still held; the first is not.
        let last = memo.stats();
        assert!(memo.get(&t, &cs, 1, RUN).is_err());
        cs[0].enb_spacing_m = Some(-1.0);
        assert!(memo.get(&t, &cs, 1, RUN).is_err());
        assert_eq!(memo.stats(), (last.0 + 1, last.1 + 1));
    }

    #[test]
    fn an_entry_larger_than_the_budget_is_kept_until_the_next() {
        let (t, cs) = line();
        let memo = Memo::new(1);
        memo.get(&t, &cs, 1, RUN).unwrap();
        assert_eq!(memo.len(), 1);
        memo.get(&t, &cs, 2, RUN).unwrap();
        assert_eq!(memo.len(), 1, "the older entry made room");
    }

    #[test]
    fn threads_asking_at_once_compute_once() {
        let (t, cs) = line();
        let memo = Memo::new(BUDGET_BYTES);
        let got: Vec<Arc<Vec<CarrierTimeline>>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| s.spawn(|| memo.get(&t, &cs, 7, RUN).unwrap()))
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for g in &got[1..] {
            assert!(Arc::ptr_eq(g, &got[0]));
        }
        assert_eq!(memo.stats(), (3, 1));
    }
}
