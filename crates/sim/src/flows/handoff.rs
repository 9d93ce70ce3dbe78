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

use crate::mechanisms::tcp_fs::TcpFs;
use crate::net::packet::{unwrap_seg, Packet};
use crate::net::StepAction;
use crate::results::HandoffRecord;
use railpath_core::Time;
use railpath_scenario::{HandoffMode, HandoffPlan, Resolved, TcpConfig, TcpFsOptions};

/// What a vertical handoff does at a point in time (the world schedules one `FlowControl` event
/// per step, in order).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum HandoffStep {
    /// Data and ACKs take path `j` from now on (packets already on a link stay on it).
    Route(usize),
    /// The mobility detector signals handoff `k`'s start / completion to the receiver.
    Start(usize),
    Complete(usize),
}

/// A tcp flow's vertical handoffs: its paths' routes, the steps, and per-bin traces.
pub(crate) struct Handoffs {
    /// (data route, ACK route) per path.
    pub routes: Vec<(u32, u32)>,
    pub steps: Vec<(Time, HandoffStep)>,
    pub records: Vec<HandoffRecord>,
    pub fs: Option<TcpFs>,
    /// Per bin: ssthresh (bytes), the sequence number of the last segment sent (bytes; a
    /// retransmission shows as a step back), bytes put on the wire.
    pub ssthresh_bytes: Vec<f64>,
    pub seq_bytes: Vec<f64>,
    pub sent_bytes: Vec<f64>,
    last_seq: u64,
    bin_sent: u64,
}

impl Handoffs {
    pub fn new(
        routes: Vec<(u32, u32)>,
        steps: Vec<(Time, HandoffStep)>,
        records: Vec<HandoffRecord>,
        fs: Option<TcpFs>,
        nbins: usize,
    ) -> Handoffs {
        Handoffs {
            routes,
            steps,
            records,
            fs,
            ssthresh_bytes: Vec::with_capacity(nbins),
            seq_bytes: Vec::with_capacity(nbins),
            sent_bytes: Vec::with_capacity(nbins),
            last_seq: 0,
            bin_sent: 0,
        }
    }

    /// A bin ended: its ssthresh (bytes), last sequence number sent and bytes sent.
    pub(crate) fn sample(&mut self, ssthresh_bytes: f64) {
        self.ssthresh_bytes.push(ssthresh_bytes);
        self.seq_bytes.push(self.last_seq as f64);
        self.sent_bytes.push(self.bin_sent as f64);
        self.bin_sent = 0;
    }

    pub(crate) fn note_sent(&mut self, p: &Packet, mss: u32) {
        if p.len > 0 {
            // The packet's 32-bit segment number, unwrapped near the last one sent.
            let mss = u64::from(mss);
            self.last_seq = unwrap_seg(p.seq, self.last_seq / mss) * mss;
            self.bin_sent += p.len as u64;
        }
    }
}

/// Attached intervals `[from, to)` of each of the flow's links, by index into `plan.links`.
fn attached(plan: &HandoffPlan, end: Time) -> Vec<Vec<(Time, Time)>> {
    let mut out = vec![Vec::new(); plan.links.len()];
    let (mut cur, mut since) = (0usize, Time::ZERO);
    for hs in &plan.handoffs {
        let h = &hs.handoff;
        let (t, tc) = h.span_s();
        let (t, tc) = (Time::from_secs_f64(t), Time::from_secs_f64(tc));
        let release = Time::from_secs_f64(h.release_s());
        let attach = match h.mode {
            HandoffMode::Soft => t,
            HandoffMode::Hard => tc,
        };
        out[cur].push((since, release.min(end)));
        cur = hs.to;
        since = attach;
    }
    out[cur].push((since, end));
    out
}

/// Steps that attach and release links used by vertical handoffs, by link index (empty for
/// links no handoff flow uses). Validation gives each handoff flow's links to it alone.
pub(crate) fn link_steps(r: &Resolved, end: Time) -> Vec<Vec<(Time, StepAction)>> {
    let mut out = vec![Vec::new(); r.links.len()];
    let plans = r.flows.iter().filter_map(|f| match &f.transport {
        railpath_scenario::Transport::Tcp(t) => match &t.route {
            railpath_scenario::TcpRoute::Handoffs(h) => Some(h),
            _ => None,
        },
        _ => None,
    });
    for plan in plans {
        for (j, spans) in attached(plan, end).into_iter().enumerate() {
            // Released between attached spans (and before the first, after the last).
            let (mut t, mut steps) = (Time::ZERO, Vec::new());
            for (a, d) in spans.into_iter().chain(std::iter::once((end, end))) {
                if a > t {
                    steps.push((t, StepAction::OutageStart(a)));
                    steps.push((a, StepAction::OutageEnd));
                }
                t = t.max(d);
            }
            out[plan.links[j]] = steps;
        }
    }
    out
}

/// A handoff flow's routes (one per link of `plan.links`), steps, records and TCP-FS receiver
/// (with `tcp_fs` its constants); `link_ids` names the links in the records.
pub(crate) fn flow_handoffs(
    plan: &HandoffPlan,
    link_ids: &[&str],
    tcp_fs: Option<&TcpFsOptions>,
    tcp: &TcpConfig,
    routes: Vec<(u32, u32)>,
    nbins: usize,
) -> Handoffs {
    let detect = Time::from_ms_f64(tcp_fs.map_or(0.0, |o| o.detect_ms));
    let mut steps = Vec::new();
    let mut records = Vec::new();
    let mut cur = 0usize;
    for (k, hs) in plan.handoffs.iter().enumerate() {
        let h = &hs.handoff;
        let (t, tc) = h.span_s();
        let (ts, tcs) = (Time::from_secs_f64(t), Time::from_secs_f64(tc));
        // Both ways the flow moves when the handoff completes.
        steps.push((tcs, HandoffStep::Route(hs.to)));
        if tcp_fs.is_some() {
            steps.push((ts + detect, HandoffStep::Start(k)));
            steps.push((tcs + detect, HandoffStep::Complete(k)));
        }
        records.push(HandoffRecord {
            from: link_ids[cur].to_string(),
            to: link_ids[hs.to].to_string(),
            mode: h.mode.as_str().into(),
            start_s: t,
            complete_s: tc,
            frozen_s: None,
            reopened_s: None,
            hold_until_s: None,
            receiver_rto_ms: None,
        });
        cur = hs.to;
    }
    // Stable: at equal times the route changes before the receiver is told.
    steps.sort_by_key(|(t, _)| *t);
    let fs = tcp_fs.map(|o| TcpFs::new(o, Time::from_ms_f64(tcp.min_rto_ms)));
    Handoffs::new(routes, steps, records, fs, nbins)
}

#[cfg(test)]
mod tests {
    use super::*;
    use railpath_scenario::{Handoff, TcpRoute, Transport};

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

    fn resolved(handoffs: Vec<Handoff>, tcp_fs: Option<&str>) -> Resolved {
        let mut s = railpath_scenario::parse_str(SCENARIO, "t.toml").unwrap();
        s.flows[0].handoffs = handoffs;
        if let Some(m) = tcp_fs {
            s.flows[0].mechanisms = vec![m.into()];
            s.flows[0].tcp_fs = Some(railpath_scenario::TcpFsOptions {
                detect_ms: 100.0,
                ..Default::default()
            });
        }
        s.validate().unwrap()
    }

    fn plan(r: &Resolved) -> &HandoffPlan {
        match &r.flows[0].transport {
            Transport::Tcp(t) => match &t.route {
                TcpRoute::Handoffs(h) => h,
                other => panic!("not a handoff flow: {other:?}"),
            },
            other => panic!("not a tcp flow: {other:?}"),
        }
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
        let r = resolved(
            vec![
                h(10.0, "b", HandoffMode::Soft, 2000.0),
                h(50.0, "a", HandoffMode::Hard, 500.0),
            ],
            None,
        );
        let spans = attached(plan(&r), end);
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
        let steps = link_steps(&s.validate().unwrap(), secs(100.0));
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
        assert!(link_steps(&s.validate().unwrap(), secs(100.0))
            .iter()
            .all(|v| v.is_empty()));
    }

    #[test]
    fn steps_with_tcp_fs_and_a_detection_delay() {
        let r = resolved(
            vec![h(10.0, "b", HandoffMode::Soft, 1000.0)],
            Some("tcp-fs"),
        );
        let Transport::Tcp(t) = &r.flows[0].transport else {
            unreachable!("a tcp flow")
        };
        let railpath_scenario::TcpMechanism::TcpFs(o) = &t.mechanisms[0];
        let tcp = railpath_scenario::TcpOptions::default().resolved();
        let h = flow_handoffs(
            plan(&r),
            &["a", "b"],
            Some(o),
            &tcp,
            vec![(0, 1), (2, 3)],
            10,
        );
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
        assert_eq!(
            (h.records[0].from.as_str(), h.records[0].to.as_str()),
            ("a", "b")
        );
        assert!(h.fs.is_some());
    }
}
