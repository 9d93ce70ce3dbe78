//! Range and cross-reference checks. Each error names the key path and the allowed range.

use crate::{FlowKind, Scenario, ScenarioError};

/// Congestion controls a `tcp` flow accepts.
pub const TCP_CCS: &[&str] = &["newreno", "cubic", "bbr"];

struct Check<'a> {
    file: &'a str,
}

impl Check<'_> {
    fn err(&self, key: impl Into<String>, msg: impl Into<String>) -> ScenarioError {
        ScenarioError::new(self.file, key, msg)
    }
    fn finite(&self, key: &str, v: f64) -> Result<(), ScenarioError> {
        if v.is_finite() {
            Ok(())
        } else {
            Err(self.err(key, format!("expected a finite number, found {v}")))
        }
    }
    fn positive(&self, key: &str, v: f64) -> Result<(), ScenarioError> {
        self.finite(key, v)?;
        if v > 0.0 {
            Ok(())
        } else {
            Err(self.err(key, format!("expected a number > 0, found {v}")))
        }
    }
    fn non_negative(&self, key: &str, v: f64) -> Result<(), ScenarioError> {
        self.finite(key, v)?;
        if v >= 0.0 {
            Ok(())
        } else {
            Err(self.err(key, format!("expected a number >= 0, found {v}")))
        }
    }
    fn probability(&self, key: &str, v: f64) -> Result<(), ScenarioError> {
        self.finite(key, v)?;
        if (0.0..1.0).contains(&v) {
            Ok(())
        } else {
            Err(self.err(key, format!("expected a probability in [0, 1), found {v}")))
        }
    }
}

impl Scenario {
    /// Check ranges and references; the first problem found is returned.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        let c = Check { file: &self.source };
        c.positive("run.duration_s", self.run.duration_s)?;
        if self.run.duration_s > 1e6 {
            return Err(c.err("run.duration_s", "expected at most 1000000 s"));
        }
        c.positive("run.bin_ms", self.run.bin_ms)?;
        if self.run.bin_ms < 1.0 {
            return Err(c.err(
                "run.bin_ms",
                format!("expected >= 1 ms, found {}", self.run.bin_ms),
            ));
        }
        self.validate_tcp(&c, "tcp", &self.tcp)?;
        if self.links.is_empty() {
            return Err(c.err("link", "at least one [[link]] is required"));
        }
        for (i, l) in self.links.iter().enumerate() {
            let k = |f: &str| format!("link[{i}].{f}");
            if l.id.is_empty() {
                return Err(c.err(k("id"), "expected a non-empty id"));
            }
            if self.links[..i].iter().any(|o| o.id == l.id) {
                return Err(c.err(k("id"), format!("duplicate link id {:?}", l.id)));
            }
            match (l.rate_mbps, &l.trace) {
                (Some(r), None) => c.positive(&k("rate_mbps"), r)?,
                (None, Some(_)) => {}
                (Some(_), Some(_)) => {
                    return Err(c.err(k("rate_mbps"), "give either rate_mbps or trace, not both"))
                }
                (None, None) => {
                    return Err(c.err(
                        k("rate_mbps"),
                        "required (a rate in Mbit/s > 0) unless trace is given",
                    ))
                }
            }
            c.non_negative(&k("delay_ms"), l.delay_ms)?;
            c.probability(&k("loss"), l.loss)?;
            if l.buffer_packets.is_some() && l.buffer_bytes.is_some() {
                return Err(c.err(
                    k("buffer_packets"),
                    "give either buffer_packets or buffer_bytes, not both",
                ));
            }
            if l.buffer_packets == Some(0) {
                return Err(c.err(k("buffer_packets"), "expected at least 1 packet"));
            }
            if let Some(b) = l.buffer_bytes {
                if b < 1500 {
                    return Err(c.err(
                        k("buffer_bytes"),
                        format!("expected at least 1500 bytes (one packet), found {b}"),
                    ));
                }
            }
            for (j, o) in l.outages.iter().enumerate() {
                c.non_negative(&k(&format!("outages[{j}].start_s")), o.start_s)?;
                c.positive(&k(&format!("outages[{j}].duration_ms")), o.duration_ms)?;
            }
            let mut last_t = f64::NEG_INFINITY;
            for (j, s) in l.schedule.iter().enumerate() {
                let sk = |f: &str| k(&format!("schedule[{j}].{f}"));
                c.non_negative(&sk("t_s"), s.t_s)?;
                if s.t_s < last_t {
                    return Err(c.err(sk("t_s"), "schedule steps must be in time order"));
                }
                last_t = s.t_s;
                if let Some(r) = s.rate_mbps {
                    if l.trace.is_some() {
                        return Err(c.err(
                            sk("rate_mbps"),
                            "a trace-driven link has no rate to schedule",
                        ));
                    }
                    c.positive(&sk("rate_mbps"), r)?;
                }
                if let Some(d) = s.delay_ms {
                    c.non_negative(&sk("delay_ms"), d)?;
                }
                if let Some(p) = s.loss {
                    c.probability(&sk("loss"), p)?;
                }
                if s.rate_mbps.is_none() && s.delay_ms.is_none() && s.loss.is_none() {
                    return Err(c.err(
                        sk("t_s"),
                        "a schedule step must change rate_mbps, delay_ms or loss",
                    ));
                }
            }
            if let Some(r) = l.reverse_rate_mbps {
                c.positive(&k("reverse_rate_mbps"), r)?;
            }
            if let Some(d) = l.reverse_delay_ms {
                c.non_negative(&k("reverse_delay_ms"), d)?;
            }
            c.probability(&k("reverse_loss"), l.reverse_loss)?;
            if l.reverse_buffer_packets == Some(0) {
                return Err(c.err(k("reverse_buffer_packets"), "expected at least 1 packet"));
            }
            if l.reverse_rate_mbps.is_some() && l.reverse_trace.is_some() {
                return Err(c.err(
                    k("reverse_rate_mbps"),
                    "give either reverse_rate_mbps or reverse_trace, not both",
                ));
            }
        }
        if self.flows.is_empty() {
            return Err(c.err("flow", "at least one [[flow]] is required"));
        }
        for (i, f) in self.flows.iter().enumerate() {
            let k = |x: &str| format!("flow[{i}].{x}");
            if f.id.is_empty() {
                return Err(c.err(k("id"), "expected a non-empty id"));
            }
            if self.flows[..i].iter().any(|o| o.id == f.id) {
                return Err(c.err(k("id"), format!("duplicate flow id {:?}", f.id)));
            }
            match f.kind {
                FlowKind::Tcp => {
                    if !TCP_CCS.contains(&f.cc.as_str()) {
                        return Err(c.err(
                            k("cc"),
                            format!("unknown congestion control {:?} for a tcp flow; expected one of {}", f.cc, TCP_CCS.join(", ")),
                        ));
                    }
                    if f.paths.len() != 1 {
                        return Err(c.err(
                            k("paths"),
                            format!("a tcp flow takes exactly one link, found {}", f.paths.len()),
                        ));
                    }
                }
                FlowKind::Mptcp => {
                    return Err(c.err(k("kind"), "mptcp flows are not available in this version of railpath; expected \"tcp\""));
                }
            }
            for (j, p) in f.paths.iter().enumerate() {
                if self.link_index(p).is_none() {
                    let ids: Vec<&str> = self.links.iter().map(|l| l.id.as_str()).collect();
                    return Err(c.err(
                        k(&format!("paths[{j}]")),
                        format!("unknown link {p:?}; defined links: {}", ids.join(", ")),
                    ));
                }
            }
            c.non_negative(&k("start_s"), f.start_s)?;
            if f.start_s >= self.run.duration_s {
                return Err(c.err(
                    k("start_s"),
                    format!(
                        "expected a start before the end of the run ({} s)",
                        self.run.duration_s
                    ),
                ));
            }
            if let Some(t) = &f.tcp {
                self.validate_tcp(&c, &k("tcp"), t)?;
            }
        }
        Ok(())
    }

    fn validate_tcp(
        &self,
        c: &Check,
        prefix: &str,
        t: &crate::TcpOptions,
    ) -> Result<(), ScenarioError> {
        let k = |f: &str| format!("{prefix}.{f}");
        if let Some(m) = t.mss_bytes {
            if !(500..=9000).contains(&m) {
                return Err(c.err(
                    k("mss_bytes"),
                    format!("expected 500..=9000 bytes, found {m}"),
                ));
            }
        }
        if let Some(h) = t.header_bytes {
            if h > 200 {
                return Err(c.err(
                    k("header_bytes"),
                    format!("expected 0..=200 bytes, found {h}"),
                ));
            }
        }
        if let Some(w) = t.initial_window {
            if !(1..=1000).contains(&w) {
                return Err(c.err(
                    k("initial_window"),
                    format!("expected 1..=1000 segments, found {w}"),
                ));
            }
        }
        for (name, v) in [
            ("min_rto_ms", t.min_rto_ms),
            ("initial_rto_ms", t.initial_rto_ms),
            ("max_rto_ms", t.max_rto_ms),
            ("delack_timeout_ms", t.delack_timeout_ms),
        ] {
            if let Some(v) = v {
                c.positive(&k(name), v)?;
            }
        }
        if let (Some(lo), Some(hi)) = (t.min_rto_ms, t.max_rto_ms) {
            if lo > hi {
                return Err(c.err(k("min_rto_ms"), "must not exceed max_rto_ms"));
            }
        }
        if let Some(w) = t.receive_window_bytes {
            if w < 2 * 9000 {
                return Err(c.err(
                    k("receive_window_bytes"),
                    format!("expected at least 18000 bytes, found {w}"),
                ));
            }
        }
        Ok(())
    }
}
