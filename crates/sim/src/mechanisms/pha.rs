//! PHA and PHA-D: proactive handover-aware MPTCP (the PHA paper, seeds.md section 1).
//!
//! Both act on the train's position, sampled every 10 ms (the radio model's position sampling,
//! `train.sample_ms`), read against the learned handover table through the position predictor
//! (`railpath_radio::table::Predictor`), with the GPS error of the fix: the position the
//! mechanism sees is the true one plus a per-run offset drawn uniformly within +-`gps_error_m`
//! (a GPS error changes over tens of seconds, not between 10 ms samples).
//!
//! - **PHA** (Algorithm 1), at the sender: a wrapper over any scheduler that removes the subflow
//!   of a carrier while the train is in one of that carrier's predicted zones (`usable = false`
//!   in the scheduler's snapshot) and otherwise defers to the wrapped scheduler. The table's
//!   zones are already widened by the GPS error, so "in the zone" covers "about to hand over".
//! - **PHA-D**, at the receiver: the train sends MP_PRIO(B=1) for a carrier's subflows at least
//!   `lead` before a predicted zone and MP_PRIO(B=0) `back` before its predicted end, by the rule
//!   the onboard gateway runs (`railpath_radio::phad::decide`: one implementation of zone, lead
//!   and margin). The option reaches the sender one reverse one-way delay later; the sender is
//!   unmodified (RFC 8684 section 3.3.8: no new data on a backup subflow while a regular one is
//!   usable).
//!
//! Both are computed once, before the run, from the position timeline: the train's motion does
//! not depend on the packets.

use crate::mptcp::sched::{ConnInfo, Decision, Feedback, Scheduler, SubflowInfo};
use railpath_core::{Rng, Time};
use railpath_radio::phad::{self, Fix};
use railpath_radio::table::{HandoverTable, Predictor};
use railpath_radio::track::Motion;
use railpath_scenario::{
    BufferLimit, HandoverAware, MptcpMechanism, MptcpSpec, PathTarget, Radio, Resolved, TableSource,
};

/// Default GPS error of the position fix, metres (`railpath table learn`'s default too).
pub const DEFAULT_GPS_ERROR_M: f64 = 20.0;

/// Time intervals `[start, end)` during which each subflow is blocked, sorted, disjoint.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Blocks {
    per_sub: Vec<Vec<(Time, Time)>>,
}

impl Blocks {
    pub fn new(per_sub: Vec<Vec<(Time, Time)>>) -> Blocks {
        Blocks { per_sub }
    }

    /// Is subflow `i` blocked at `t`?
    pub fn blocked(&self, i: usize, t: Time) -> bool {
        let Some(v) = self.per_sub.get(i) else {
            return false;
        };
        let k = v.partition_point(|&(_, e)| e <= t);
        v.get(k).is_some_and(|&(s, _)| s <= t)
    }

    /// Every block's end (when the connection must look again).
    pub fn ends(&self) -> impl Iterator<Item = Time> + '_ {
        self.per_sub.iter().flatten().map(|&(_, e)| e)
    }

    /// Total blocked time over all subflows.
    pub fn total(&self) -> Time {
        self.per_sub
            .iter()
            .flatten()
            .fold(Time::ZERO, |a, &(s, e)| a + (e - s))
    }
}

/// [`Blocks`] asked at times that mostly move forward (a run's clock). Each subflow keeps how
/// many of its blocks ended by the last time asked, so a look costs a comparison or two
/// instead of a binary search over all of them (a PHA run asks once per subflow per
/// scheduling decision; 5 % of the train reproduction's time went to those searches). The
/// answer is [`Blocks::blocked`]'s for any time, an earlier one included.
#[derive(Debug, Clone)]
pub struct BlockReader {
    blocks: Blocks,
    /// Per subflow: the number of its blocks that end at or before the last time asked (the
    /// partition point of [`Blocks::blocked`] then).
    ended: Vec<usize>,
}

impl BlockReader {
    pub fn new(blocks: Blocks) -> BlockReader {
        BlockReader {
            ended: vec![0; blocks.per_sub.len()],
            blocks,
        }
    }

    pub fn blocks(&self) -> &Blocks {
        &self.blocks
    }

    /// Is subflow `i` blocked at `t`? ([`Blocks::blocked`].)
    #[inline]
    pub fn blocked(&mut self, i: usize, t: Time) -> bool {
        let Some(v) = self.blocks.per_sub.get(i) else {
            return false;
        };
        let k = &mut self.ended[i];
        // Ends increase (the blocks are sorted and disjoint): the partition point for `t` is
        // below `k` when the block before `k` is not over at `t`, else at or above it.
        if *k > 0 && v[*k - 1].1 > t {
            *k = v[..*k].partition_point(|&(_, e)| e <= t);
        } else if v.get(*k).is_some_and(|&(_, e)| e <= t) {
            *k += v[*k..].partition_point(|&(_, e)| e <= t);
        }
        v.get(*k).is_some_and(|&(s, _)| s <= t)
    }
}

/// The PHA scheduler: hides blocked subflows from the wrapped scheduler (Algorithm 1).
pub struct Pha {
    inner: Box<dyn Scheduler>,
    blocks: BlockReader,
    /// The snapshot with blocked subflows unusable (reused: no allocation per decision).
    view: Vec<SubflowInfo>,
}

impl Pha {
    pub fn new(inner: Box<dyn Scheduler>, blocks: Blocks) -> Pha {
        Pha {
            inner,
            blocks: BlockReader::new(blocks),
            view: Vec::new(),
        }
    }

    fn filtered(&mut self, subs: &[SubflowInfo], now: Time) {
        self.view.clear();
        self.view.extend_from_slice(subs);
        for s in &mut self.view {
            if self.blocks.blocked(s.id, now) {
                s.usable = false;
            }
        }
    }
}

impl Scheduler for Pha {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn pick(&mut self, subs: &[SubflowInfo], conn: &ConnInfo) -> Decision {
        self.filtered(subs, conn.now);
        if !self.view.iter().any(|s| s.usable) {
            return Decision::Wait;
        }
        let view = std::mem::take(&mut self.view);
        let d = self.inner.pick(&view, conn);
        self.view = view;
        d
    }

    fn redundant(&self) -> bool {
        self.inner.redundant()
    }

    fn feedback(&mut self, f: &Feedback, subs: &[SubflowInfo], conn: &ConnInfo) {
        self.inner.feedback(f, subs, conn);
    }

    fn wants_feedback(&self) -> bool {
        self.inner.wants_feedback()
    }

    /// PHA itself reads `id`, `usable` and `now`: light when the wrapped scheduler is.
    fn light_snapshot(&self) -> bool {
        self.inner.light_snapshot()
    }
}

/// Which of the two a plan is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanKind {
    Pha,
    PhaD,
}

/// What a flow's PHA or PHA-D does over the run, computed before it starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub kind: PlanKind,
    /// PHA: when each subflow is removed from scheduling.
    pub blocks: Blocks,
    /// PHA-D: MP_PRIO changes the receiver sends, (time, subflow, backup).
    pub prio: Vec<(Time, usize, bool)>,
    /// PHA-D: when each subflow is backup as the receiver sees it (for statistics).
    pub backup: Blocks,
    pub table: HandoverTable,
}

/// The table a flow uses: the one given with the scenario, or one learned from `runs`
/// preliminary runs (seeds `seed + 1 ..= seed + runs`: the radio model alone decides where
/// handovers happen, so no packets need to be simulated).
pub fn table_for(
    radio: &Radio,
    seed: u64,
    flow_id: &str,
    aware: &HandoverAware,
    end: Time,
) -> Result<HandoverTable, String> {
    match &aware.table {
        TableSource::Given(t) => Ok(t.clone()),
        TableSource::Learn { runs } => learn_table(
            radio,
            seed,
            *runs,
            aware.gps_error_m.unwrap_or(DEFAULT_GPS_ERROR_M),
            end,
        )
        .map_err(|e| format!("flow {flow_id:?}: {e}")),
    }
}

/// A handover table learned from `runs` runs of the radio model alone (seeds `seed + 1 ..=
/// seed + runs`), zones widened by `gps_error_m`.
pub fn learn_table(
    radio: &Radio,
    seed: u64,
    runs: u32,
    gps_error_m: f64,
    end: Time,
) -> Result<HandoverTable, String> {
    let mut logs = Vec::with_capacity(runs as usize);
    for k in 1..=u64::from(runs) {
        let seed = seed.wrapping_add(k);
        let tl = railpath_radio::carrier_timelines_shared(&radio.train, &radio.carriers, seed, end)
            .map_err(|e| format!("radio model: {}: {}", e.key, e.message))?;
        let hs = tl
            .iter()
            .flat_map(|t| t.handovers.iter().cloned())
            .collect();
        logs.push((format!("seed {seed}"), hs));
    }
    HandoverTable::learn(&logs, gps_error_m)
        .map_err(|e| format!("learning the handover table: {}", e.message))
}

/// The handover table of flow `fi` of `r`, an mptcp flow running PHA or PHA-D: the one given,
/// or one learned as [`table_for`] does.
pub fn table_of(r: &Resolved, fi: usize, end: Time) -> Result<HandoverTable, String> {
    let f = &r.flows[fi];
    let aware = f
        .mptcp()
        .and_then(|m| m.handover_aware())
        .and_then(|m| m.aware())
        .ok_or_else(|| format!("flow {:?} runs neither pha nor pha-d", f.id))?;
    let radio = r
        .radio
        .as_ref()
        .ok_or_else(|| format!("flow {:?}: pha and pha-d need the train radio model", f.id))?;
    table_for(radio, r.run.seed, &f.id, aware, end)
}

/// The run's GPS error: the offset of every position fix from the true position, drawn once
/// per run uniformly within +-`gps_error_m` (the testbed's replayed feed uses the same one).
pub fn gps_offset(seed: u64, flow_id: &str, aware: &HandoverAware) -> f64 {
    let gps = aware.gps_error_m.unwrap_or(DEFAULT_GPS_ERROR_M);
    let mut rng = Rng::stream(seed, &format!("pha/gps/{flow_id}"));
    (2.0 * rng.uniform() - 1.0) * gps
}

/// The PHA-D lead (how long before a predicted zone the carrier goes backup) and margin (how
/// long before its predicted end it comes back) of flow `m`: `phad_lead_ms` and `phad_back_ms`,
/// by default [`default_rtt`] and the lead (also for a flow without PHA-D).
pub fn phad_lead_back(r: &Resolved, m: &MptcpSpec) -> (Time, Time) {
    let (lead_ms, back_ms) = m
        .mechanisms
        .iter()
        .find_map(|x| match x {
            MptcpMechanism::PhaD {
                lead_ms, back_ms, ..
            } => Some((*lead_ms, *back_ms)),
            _ => None,
        })
        .unwrap_or((None, None));
    let lead = lead_ms.map_or(default_rtt(r, m), Time::from_ms_f64);
    (lead, back_ms.map_or(lead, Time::from_ms_f64))
}

/// The default PHA-D lead and margin: one round trip of the flow's slowest path with its
/// bottleneck queue full (2 x `delay_ms` + `buffer` at the carrier's peak rate).
pub fn default_rtt(r: &Resolved, m: &MptcpSpec) -> Time {
    let mut worst = 0.0f64;
    for sub in &m.subflows {
        let PathTarget::Link(li) = sub.path else {
            continue;
        };
        let l = &r.links[li].link;
        let rate = l
            .rate_mbps
            .or_else(|| r.carrier_of(li)?.rate_mbps)
            .unwrap_or(0.0);
        let queue_ms = match (l.buffer(), rate > 0.0) {
            (BufferLimit::Packets(n), true) => n as f64 * 1500.0 * 8.0 / (rate * 1e3),
            (BufferLimit::Bytes(b), true) => b as f64 * 8.0 / (rate * 1e3),
            _ => 0.0,
        };
        worst = worst.max(2.0 * l.delay_ms + queue_ms);
    }
    Time::from_ms_f64(worst)
}

/// Intervals where `on(t)` holds, from samples at `times` (each sample holds until the next).
fn intervals(times: &[Time], on: &[bool], end: Time) -> Vec<(Time, Time)> {
    let mut out = Vec::new();
    let mut start: Option<Time> = None;
    for (k, (&t, &o)) in times.iter().zip(on).enumerate() {
        match (o, start) {
            (true, None) => start = Some(t),
            (false, Some(s)) => {
                out.push((s, t));
                start = None;
            }
            _ => {}
        }
        if k + 1 == times.len() {
            if let Some(s) = start {
                out.push((s, end.max(t)));
            }
        }
    }
    out
}

/// The plan of mptcp flow `id` (`m`) if it runs PHA or PHA-D.
pub fn plan(r: &Resolved, id: &str, m: &MptcpSpec, end: Time) -> Result<Option<Plan>, String> {
    let (kind, aware) = match m.handover_aware() {
        Some(MptcpMechanism::Pha(a)) => (PlanKind::Pha, a),
        Some(MptcpMechanism::PhaD { aware, .. }) => (PlanKind::PhaD, aware),
        Some(MptcpMechanism::BloatMonitor(_)) | None => return Ok(None),
    };
    let radio = r
        .radio
        .as_ref()
        .ok_or_else(|| format!("flow {id:?}: pha and pha-d need the train radio model"))?;
    let train = &radio.train;
    let table = table_for(radio, r.run.seed, id, aware, end)?;
    let predictor = Predictor::new(&table);
    let motion = Motion::new(train);
    let offset = gps_offset(r.run.seed, id, aware);
    // The carrier of each subflow, and the flow's carriers in order.
    let sub_carrier: Vec<String> = m
        .subflows
        .iter()
        .map(|sf| {
            sf.carrier
                .map(|c| radio.carriers[c].id.clone())
                .ok_or_else(|| format!("flow {id:?}: path {:?} has no carrier", sf.path_id))
        })
        .collect::<Result<_, _>>()?;
    let mut carriers: Vec<String> = Vec::new();
    for c in &sub_carrier {
        if !carriers.contains(c) {
            carriers.push(c.clone());
        }
    }
    let times: Vec<Time> = motion.sample_times(end).take_while(|&t| t < end).collect();
    let fix = |t: Time| Fix {
        position_m: motion.position_at(t) + offset,
        speed_mps: motion.speed_at(t),
    };
    // Per carrier and sample: PHA's "in a predicted zone", PHA-D's "backup".
    let mut state: Vec<Vec<bool>> = vec![Vec::with_capacity(times.len()); carriers.len()];
    let (lead, back) = phad_lead_back(r, m);
    for &t in &times {
        let x = fix(t);
        if kind == PlanKind::Pha {
            for (ci, c) in carriers.iter().enumerate() {
                let inside = predictor
                    .predict_carrier(c, x.position_m, x.speed_mps, Time::ZERO)
                    .map(|ps| ps.iter().any(|p| p.in_zone))
                    .unwrap_or(false);
                state[ci].push(inside);
            }
        } else {
            let ds = phad::decide(
                &predictor,
                &carriers,
                Some((x, Time::ZERO)),
                lead,
                back,
                Time::MAX,
            );
            for (ci, d) in ds.iter().enumerate() {
                state[ci].push(d.backup);
            }
        }
    }
    let per_carrier: Vec<Vec<(Time, Time)>> =
        state.iter().map(|on| intervals(&times, on, end)).collect();
    let per_sub: Vec<Vec<(Time, Time)>> = sub_carrier
        .iter()
        .map(|c| per_carrier[carriers.iter().position(|x| x == c).expect("listed")].clone())
        .collect();
    let mut prio = Vec::new();
    if kind == PlanKind::PhaD {
        for (sub, iv) in per_sub.iter().enumerate() {
            for &(a, b) in iv {
                prio.push((a, sub, true));
                if b < end {
                    prio.push((b, sub, false));
                }
            }
        }
        prio.sort_by_key(|&(t, sub, _)| (t, sub));
    }
    let (blocks, backup) = if kind == PlanKind::Pha {
        (Blocks::new(per_sub), Blocks::default())
    } else {
        (Blocks::default(), Blocks::new(per_sub))
    };
    Ok(Some(Plan {
        kind,
        blocks,
        prio,
        backup,
        table,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mptcp::sched::build;
    use railpath_scenario::SchedulerKind;

    fn ms(x: u64) -> Time {
        Time::from_ms(x)
    }

    #[test]
    fn blocks_by_hand() {
        let b = Blocks::new(vec![vec![(ms(100), ms(200)), (ms(500), ms(510))], vec![]]);
        assert!(!b.blocked(0, ms(99)));
        assert!(b.blocked(0, ms(100)));
        assert!(b.blocked(0, ms(199)));
        assert!(!b.blocked(0, ms(200)), "the end is open");
        assert!(b.blocked(0, ms(505)));
        assert!(!b.blocked(1, ms(150)));
        assert!(
            !b.blocked(7, ms(150)),
            "an unknown subflow is never blocked"
        );
        assert_eq!(b.total(), ms(110));
    }

    #[test]
    fn a_reader_answers_as_the_blocks_at_any_time() {
        // By hand: blocks [100, 200) and [500, 510) on subflow 0, none on 1.
        let b = Blocks::new(vec![vec![(ms(100), ms(200)), (ms(500), ms(510))], vec![]]);
        let mut r = BlockReader::new(b.clone());
        let asked = [
            (0, 99, false),
            (0, 100, true),
            (0, 505, true), // past a block's end in one step
            (0, 510, false),
            (0, 150, true), // back in time
            (0, 200, false),
            (0, 99, false),
            (0, 509, true),
            (1, 150, false),
            (7, 150, false), // an unknown subflow is never blocked
        ];
        for (i, t, want) in asked {
            assert_eq!(r.blocked(i, ms(t)), want, "subflow {i} at {t} ms");
        }
        // Against the binary search: 200 random blocks, 5000 looks mostly forward in time,
        // some back, some on a block's edge.
        let mut rng = Rng::from_seed(5);
        let mut v = Vec::new();
        let mut t = 0;
        for _ in 0..200 {
            let s = t + rng.below(50);
            let e = s + 1 + rng.below(30);
            v.push((Time::from_us(s), Time::from_us(e)));
            t = e;
        }
        let b = Blocks::new(vec![v.clone(), vec![]]);
        let mut r = BlockReader::new(b.clone());
        let mut now = 0u64;
        for _ in 0..5000 {
            now = match rng.below(10) {
                0 => rng.below(t + 10),
                1 => v[rng.below(200) as usize].1.ns() / 1000,
                _ => now + rng.below(6),
            };
            let at = Time::from_us(now);
            assert_eq!(r.blocked(0, at), b.blocked(0, at), "at {at:?}");
        }
    }

    #[test]
    fn intervals_from_samples() {
        let t: Vec<Time> = (0..6).map(|k| ms(10 * k)).collect();
        let on = [false, true, true, false, true, true];
        assert_eq!(
            intervals(&t, &on, ms(60)),
            vec![(ms(10), ms(30)), (ms(40), ms(60))]
        );
    }

    #[test]
    fn pha_hides_the_blocked_subflow_and_defers_otherwise() {
        let sub = |id: usize, srtt: u64| SubflowInfo {
            id,
            srtt: ms(srtt),
            min_rtt: ms(srtt),
            cwnd: 10,
            in_flight: 0,
            mss: 1000,
            usable: true,
            has_space: true,
            ..SubflowInfo::default()
        };
        let conn = |now: Time| ConnInfo {
            now,
            queued_segments: u64::MAX,
            rcv_wnd_free: 1 << 20,
            rcv_wnd: 1 << 20,
            data_in_flight: 0,
            mss: 1000,
        };
        // minRTT prefers subflow 0 (10 ms); while 0 is blocked (100-200 ms) it takes 1.
        let blocks = Blocks::new(vec![vec![(ms(100), ms(200))], vec![]]);
        let mut p = Pha::new(build(SchedulerKind::MinRtt, Rng::stream(0, "t")), blocks);
        let subs = [sub(0, 10), sub(1, 30)];
        assert_eq!(p.pick(&subs, &conn(ms(50))), Decision::Send(0));
        assert_eq!(p.pick(&subs, &conn(ms(150))), Decision::Send(1));
        assert_eq!(p.pick(&subs, &conn(ms(200))), Decision::Send(0));
        // Both blocked: wait (never a blocked subflow).
        let both = Blocks::new(vec![vec![(ms(0), ms(10))], vec![(ms(0), ms(10))]]);
        let mut p = Pha::new(build(SchedulerKind::Ecf, Rng::stream(0, "t")), both);
        assert_eq!(p.pick(&subs, &conn(ms(5))), Decision::Wait);
        assert_eq!(p.name(), "ecf");
    }

    #[test]
    fn pha_is_light_when_the_wrapped_scheduler_is() {
        // PHA reads `id`, `usable` and `now`: it asks for a light snapshot exactly when the
        // scheduler it wraps does, and decides the same from one.
        use crate::mptcp::sched::{light_conn, light_info};
        let blocks = || Blocks::new(vec![vec![(ms(100), ms(200))], vec![]]);
        let pha = |k| Pha::new(build(k, Rng::stream(0, "t")), blocks());
        assert!(!pha(SchedulerKind::Ecf).light_snapshot());
        let (mut full, mut lite) = (pha(SchedulerKind::MinRtt), pha(SchedulerKind::MinRtt));
        assert!(full.light_snapshot());
        let sub = |id: usize, srtt: u64, space: bool| SubflowInfo {
            id,
            srtt: ms(srtt),
            rttvar: ms(3),
            min_rtt: ms(srtt / 2),
            cwnd: 10,
            in_flight: if space { 4 } else { 10 },
            mss: 1000,
            usable: true,
            has_space: space,
            pacing_rate_bps: 1_000_000,
            queued_bytes: 4000,
            ..SubflowInfo::default()
        };
        for now in [50, 150, 250] {
            for (s0, s1) in [(true, true), (false, true), (true, false)] {
                let subs = [sub(0, 10, s0), sub(1, 30, s1)];
                let conn = ConnInfo {
                    now: ms(now),
                    queued_segments: 7,
                    rcv_wnd_free: 1 << 20,
                    rcv_wnd: 1 << 20,
                    data_in_flight: 3000,
                    mss: 1000,
                };
                let light: Vec<SubflowInfo> = subs.iter().map(light_info).collect();
                assert_eq!(
                    full.pick(&subs, &conn),
                    lite.pick(&light, &light_conn(&conn)),
                    "{now} ms, space {s0} {s1}"
                );
            }
        }
    }
}
