//! Vertical handoffs (the TCP-FS paper, seeds.md section 3): a tcp flow's path moves from one
//! link to another at given times.
//!
//! - Soft (make-before-break) at `t`, lasting `d`, with overlap `o`: the new link is attached at
//!   `t`; data and the mobile node's ACKs keep the old link until the handoff completes at
//!   `t + d` (the correspondent learns the new address then) and take the new one from then on;
//!   the old link delivers what it still holds until `t + d + o`, when it is released.
//! - Hard (break-before-make) at `t` with gap `g`: the old link is released at `t`; the new one
//!   is attached, and carries the flow, from `t + g`. Completion is `t + g`.
//!
//! A released (or not yet attached) link is in an outage that drops: what it holds, and what is
//! sent to it, is lost, as a radio interface that has gone away. A flow's links other than its
//! first start released. The mobility detector (TCP-FS) signals start and completion to the
//! receiver `tcp_fs.detect_ms` late; without TCP-FS the receiver is not told.

use crate::flow::{HandoffStep, Handoffs};
use crate::mechanisms::tcp_fs::TcpFs;
use crate::results::HandoffRecord;
use crate::world::StepAction;
use railpath_core::Time;
use railpath_scenario::{Flow, HandoffMode, Scenario, TcpConfig};

/// Index of link `id` among the flow's paths (validation made every `to` one of them).
fn path_index(f: &Flow, id: &str) -> usize {
    f.paths.iter().position(|p| p == id).unwrap_or(0)
}

/// Attached intervals `[from, to)` of each of the flow's paths, by path index.
fn attached(f: &Flow, end: Time) -> Vec<Vec<(Time, Time)>> {
    let mut out = vec![Vec::new(); f.paths.len()];
    let (mut cur, mut since) = (0usize, Time::ZERO);
    for h in &f.handoffs {
        let (t, tc) = h.span_s();
        let (t, tc) = (Time::from_secs_f64(t), Time::from_secs_f64(tc));
        let to = path_index(f, &h.to);
        let release = Time::from_secs_f64(h.release_s());
        let attach = match h.mode {
            HandoffMode::Soft => t,
            HandoffMode::Hard => tc,
        };
        out[cur].push((since, release.min(end)));
        cur = to;
        since = attach;
    }
    out[cur].push((since, end));
    out
}

/// Steps that attach and release links used by vertical handoffs, by link index (empty for
/// links no handoff flow uses). Validation gives each handoff flow's links to it alone.
pub(crate) fn link_steps(s: &Scenario, end: Time) -> Vec<Vec<(Time, StepAction)>> {
    let mut out = vec![Vec::new(); s.links.len()];
    for f in s.flows.iter().filter(|f| !f.handoffs.is_empty()) {
        for (j, spans) in attached(f, end).into_iter().enumerate() {
            let Some(li) = s.link_index(&f.paths[j]) else {
                continue;
            };
            // Released between attached spans (and before the first, after the last).
            let (mut t, mut steps) = (Time::ZERO, Vec::new());
            for (a, d) in spans.into_iter().chain(std::iter::once((end, end))) {
                if a > t {
                    steps.push((t, StepAction::OutageStart(a)));
                    steps.push((a, StepAction::OutageEnd));
                }
                t = t.max(d);
            }
            out[li] = steps;
        }
    }
    out
}

/// A handoff flow's routes, steps, records and TCP-FS receiver.
pub(crate) fn flow_handoffs(
    f: &Flow,
    tcp: &TcpConfig,
    routes: Vec<(u32, u32)>,
    nbins: usize,
) -> Handoffs {
    let tcp_fs = f
        .mechanisms
        .iter()
        .any(|m| m == "tcp-fs")
        .then(|| f.tcp_fs.unwrap_or_default());
    let detect = Time::from_ms_f64(tcp_fs.map_or(0.0, |o| o.detect_ms));
    let mut steps = Vec::new();
    let mut records = Vec::new();
    let mut cur = 0usize;
    for (k, h) in f.handoffs.iter().enumerate() {
        let (t, tc) = h.span_s();
        let (ts, tcs) = (Time::from_secs_f64(t), Time::from_secs_f64(tc));
        let to = path_index(f, &h.to);
        // Both ways the flow moves when the handoff completes.
        steps.push((tcs, HandoffStep::Route(to)));
        if tcp_fs.is_some() {
            steps.push((ts + detect, HandoffStep::Start(k)));
            steps.push((tcs + detect, HandoffStep::Complete(k)));
        }
        records.push(HandoffRecord {
            from: f.paths[cur].clone(),
            to: h.to.clone(),
            mode: h.mode.as_str().into(),
            start_s: t,
            complete_s: tc,
            frozen_s: None,
            reopened_s: None,
            hold_until_s: None,
            receiver_rto_ms: None,
        });
        cur = to;
    }
    // Stable: at equal times the route changes before the receiver is told.
    steps.sort_by_key(|(t, _)| *t);
    let fs = tcp_fs.map(|o| TcpFs::new(&o, Time::from_ms_f64(tcp.min_rto_ms)));
    Handoffs::new(routes, steps, records, fs, nbins)
}

#[cfg(test)]
mod tests {
    use super::*;
    use railpath_scenario::Handoff;

    const SCENARIO: &str = r#"
[run]
duration_s = 100
[[link]]
id = "a"
rate_mbps = 10
[[link]]
id = "b"
rate_mbps = 1
[[flow]]
id = "f"
kind = "tcp"
cc = "newreno"
paths = ["a", "b"]
handoffs = [{ t_s = 10.0, to = "b" }]
"#;

    fn flow(handoffs: Vec<Handoff>) -> Flow {
        let mut s = railpath_scenario::parse_str(SCENARIO, "t.toml").unwrap();
        s.flows[0].handoffs = handoffs;
        s.flows[0].clone()
    }

    fn h(t_s: f64, to: &str, mode: HandoffMode, ms: f64) -> Handoff {
        Handoff {
            t_s,
            to: to.into(),
            mode,
            duration_ms: (mode == HandoffMode::Soft).then_some(ms),
            overlap_ms: (mode == HandoffMode::Soft).then_some(1000.0),
            gap_ms: (mode == HandoffMode::Hard).then_some(ms),
        }
    }

    fn secs(v: f64) -> Time {
        Time::from_secs_f64(v)
    }

    #[test]
    fn soft_overlaps_and_hard_leaves_a_gap() {
        let end = secs(100.0);
        // Soft at 10 s lasting 2 s, overlap 1 s: a until 13 (released after completion plus the
        // overlap), b attached from 10 until 50; hard back to a: b released at 50, a attached
        // at 50.5.
        let f = flow(vec![
            h(10.0, "b", HandoffMode::Soft, 2000.0),
            h(50.0, "a", HandoffMode::Hard, 500.0),
        ]);
        let spans = attached(&f, end);
        assert_eq!(spans[0], vec![(Time::ZERO, secs(13.0)), (secs(50.5), end)]);
        assert_eq!(spans[1], vec![(secs(10.0), secs(50.0))]);
    }

    #[test]
    fn links_are_released_outside_their_spans() {
        let text = SCENARIO.replace(
            "handoffs = [{ t_s = 10.0, to = \"b\" }]",
            "handoffs = [{ t_s = 10.0, to = \"b\", mode = \"hard\", gap_ms = 500.0 }]",
        );
        let mut s = railpath_scenario::parse_str(&text, "t.toml").unwrap();
        let steps = link_steps(&s, secs(100.0));
        assert_eq!(
            steps[0],
            vec![
                (secs(10.0), StepAction::OutageStart(secs(100.0))),
                (secs(100.0), StepAction::OutageEnd)
            ]
        );
        assert_eq!(
            steps[1],
            vec![
                (Time::ZERO, StepAction::OutageStart(secs(10.5))),
                (secs(10.5), StepAction::OutageEnd)
            ]
        );
        s.flows[0].handoffs.clear();
        s.flows[0].paths.truncate(1);
        assert!(link_steps(&s, secs(100.0)).iter().all(|v| v.is_empty()));
    }

    #[test]
    fn steps_with_tcp_fs_and_a_detection_delay() {
        let mut f = flow(vec![h(10.0, "b", HandoffMode::Soft, 1000.0)]);
        f.mechanisms = vec!["tcp-fs".into()];
        f.tcp_fs = Some(railpath_scenario::TcpFsOptions {
            detect_ms: 100.0,
            ..Default::default()
        });
        let tcp = railpath_scenario::TcpOptions::default().resolved();
        let h = flow_handoffs(&f, &tcp, vec![(0, 1), (2, 3)], 10);
        assert_eq!(
            h.steps,
            vec![
                (secs(10.1), HandoffStep::Start(0)),
                (secs(11.0), HandoffStep::Route(1)),
                (secs(11.1), HandoffStep::Complete(0)),
            ]
        );
        assert_eq!(
            (h.records[0].start_s, h.records[0].complete_s),
            (10.0, 11.0)
        );
        assert!(h.fs.is_some());
    }
}
