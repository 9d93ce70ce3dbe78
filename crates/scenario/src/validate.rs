//! Range and cross-reference checks of a parsed scenario. Each error names the file, the key
//! path (`link[1].loss`, `flow[0].paths[0]`, `flow[0].tcp.min_rto_ms`) and the allowed range;
//! the first problem found is returned. The ranges are documented in docs/user-guide.md.
//!
//! Ranges are physical or implementation limits: a loss probability of 1 would stall every flow
//! forever, ids are restricted so that they can be written unquoted in `--set link.<id>.x=...`
//! paths and in `timeseries.csv`, and TCP limits follow Linux (RFC 7323 section 2.3: a window of
//! at most 2^30 bytes; RFC 6298 section 2: an RTO is positive and may be capped).

use crate::{Bond, FlowKind, Link, PathTarget, Scenario, ScenarioError, TcpConfig, TcpOptions};

/// Congestion controls a `tcp` flow accepts.
pub const TCP_CCS: &[&str] = &["newreno", "cubic", "bbr"];

use railpath_core::{excerpt, show_num};
pub use railpath_core::{MAX_DURATION_S, MAX_RATE_MBPS, MIN_RATE_MBPS};
/// Longest one-way delay, ms.
pub const MAX_DELAY_MS: f64 = 10_000.0;
/// Largest buffer, packets.
pub const MAX_BUFFER_PACKETS: u32 = 1_000_000;
/// Largest buffer, bytes (1 GB).
pub const MAX_BUFFER_BYTES: u64 = 1_000_000_000;
/// Longest single outage, ms (one hour).
pub const MAX_OUTAGE_MS: f64 = 3_600_000.0;
/// Most outages of one link in a run, repetitions (`every_s`) counted.
pub const MAX_OUTAGES: u64 = 1_000_000;
/// Longest id of a link or flow, characters.
pub const MAX_ID_LEN: usize = 64;

struct Check<'a> {
    file: &'a str,
}

impl Check<'_> {
    fn err(&self, key: impl Into<String>, msg: impl Into<String>) -> ScenarioError {
        ScenarioError::new(self.file, key, msg)
    }

    /// `lo <= v <= hi` (`lo < v` when `open_lo`), finite.
    fn range(
        &self,
        key: &str,
        v: f64,
        lo: f64,
        open_lo: bool,
        hi: f64,
        unit: &str,
    ) -> Result<(), ScenarioError> {
        let ok = v.is_finite() && if open_lo { v > lo } else { v >= lo } && v <= hi;
        if ok {
            return Ok(());
        }
        let left = if open_lo {
            format!("> {lo}")
        } else {
            format!(">= {lo}")
        };
        let unit = if unit.is_empty() {
            String::new()
        } else {
            format!(" {unit}")
        };
        Err(self.err(
            key,
            format!(
                "expected a number {left} and <= {}{unit}, found {}",
                show_num(hi),
                show_num(v)
            ),
        ))
    }

    /// A link rate: [`MIN_RATE_MBPS`] to [`MAX_RATE_MBPS`] Mbit/s.
    fn rate(&self, key: &str, v: f64) -> Result<(), ScenarioError> {
        self.range(key, v, MIN_RATE_MBPS, false, MAX_RATE_MBPS, "Mbit/s")
    }

    fn probability(&self, key: &str, v: f64) -> Result<(), ScenarioError> {
        if v.is_finite() && (0.0..1.0).contains(&v) {
            Ok(())
        } else {
            Err(self.err(
                key,
                format!("expected a probability >= 0 and < 1, found {}", show_num(v)),
            ))
        }
    }

    fn int_range<T: PartialOrd + std::fmt::Display>(
        &self,
        key: &str,
        v: T,
        lo: T,
        hi: T,
        unit: &str,
    ) -> Result<(), ScenarioError> {
        if v >= lo && v <= hi {
            Ok(())
        } else {
            Err(self.err(
                key,
                format!(
                    "expected an integer from {lo} to {hi}{}, found {v}",
                    if unit.is_empty() {
                        String::new()
                    } else {
                        format!(" {unit}")
                    }
                ),
            ))
        }
    }

    fn id(&self, key: &str, id: &str) -> Result<(), ScenarioError> {
        let ok = !id.is_empty()
            && id.len() <= MAX_ID_LEN
            && id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if ok {
            Ok(())
        } else {
            Err(self.err(
                key,
                format!(
                    "expected 1 to {MAX_ID_LEN} letters, digits, '_' or '-', found {}",
                    excerpt(id)
                ),
            ))
        }
    }
}

impl Scenario {
    /// Check ranges and references (the first problem found is returned), then resolve the
    /// scenario into the typed form the engines consume.
    pub fn validate(&self) -> Result<crate::Resolved, ScenarioError> {
        self.check()?;
        crate::resolved::resolve(self)
    }

    /// Check ranges and references; the first problem found is returned.
    pub(crate) fn check(&self) -> Result<(), ScenarioError> {
        let c = Check { file: &self.source };
        c.range(
            "run.duration_s",
            self.run.duration_s,
            0.0,
            true,
            MAX_DURATION_S,
            "s",
        )?;
        // A TOML integer is at most 2^63-1, so a seed written in a scenario can be read back.
        c.int_range("run.seed", self.run.seed, 0, i64::MAX as u64, "")?;
        if let Some(cap) = &self.capture {
            cap.validate(&self.source)?;
        }
        let max_bin = self.run.duration_s * 1000.0;
        if !(self.run.bin_ms.is_finite() && self.run.bin_ms >= 1.0 && self.run.bin_ms <= max_bin) {
            return Err(c.err(
                "run.bin_ms",
                format!(
                    "expected a number >= 1 and <= run.duration_s x 1000 = {max_bin} ms, found {}",
                    show_num(self.run.bin_ms)
                ),
            ));
        }
        validate_tcp(&c, "tcp", &self.tcp)?;
        if self.links.is_empty() {
            return Err(c.err("link", "at least one [[link]] table is required"));
        }
        for (i, l) in self.links.iter().enumerate() {
            validate_link(&c, i, l)?;
            if let Some(j) = self.links[..i].iter().position(|o| o.id == l.id) {
                return Err(c.err(
                    format!("link[{i}].id"),
                    format!("duplicate link id {:?} (also link[{j}])", l.id),
                ));
            }
        }
        railpath_radio::validate(self.train.as_ref(), &self.carriers)
            .map_err(|e| c.err(e.key, e.message))?;
        for (i, l) in self.links.iter().enumerate() {
            if let Some(id) = &l.carrier {
                if !self.carriers.iter().any(|x| &x.id == id) {
                    let ids: Vec<String> = self
                        .carriers
                        .iter()
                        .map(|x| format!("{:?}", x.id))
                        .collect();
                    return Err(c.err(
                        format!("link[{i}].carrier"),
                        if ids.is_empty() {
                            format!("unknown carrier {id:?}: no [[carrier]] is defined")
                        } else {
                            format!(
                                "unknown carrier {id:?}; expected one of the [[carrier]] ids: {}",
                                ids.join(", ")
                            )
                        },
                    ));
                }
            }
        }
        for (i, b) in self.bonds.iter().enumerate() {
            self.validate_bond(&c, i, b)?;
        }
        for (i, b) in self.balancers.iter().enumerate() {
            self.validate_balancer(&c, i, b)?;
        }
        for (i, l) in self.links.iter().enumerate() {
            if l.outages.iter().any(|o| o.every_s.is_some()) {
                // Counted before they are listed: a tiny period must be an error, not a list
                // that fills the memory.
                let d = self.run.duration_s;
                let mut n = 0.0;
                for (j, o) in l.outages.iter().enumerate() {
                    n += match o.every_s {
                        Some(e) => ((d - o.start_s) / e).ceil().max(0.0),
                        None => 1.0,
                    };
                    if n > MAX_OUTAGES as f64 {
                        return Err(c.err(
                            format!("link[{i}].outages[{j}].every_s"),
                            format!(
                                "the outages repeat more than {MAX_OUTAGES} times in the run's {} s: expected a longer period",
                                show_num(d)
                            ),
                        ));
                    }
                }
                let all = l.outage_list(self.run.duration_s);
                for w in all.windows(2) {
                    if w[1].start_s < w[0].start_s + w[0].duration_ms / 1000.0 {
                        return Err(c.err(
                            format!("link[{i}].outages"),
                            format!(
                                "repeated outages overlap: one starts at {} s before the one from {} s ends",
                                show_num(w[1].start_s),
                                show_num(w[0].start_s)
                            ),
                        ));
                    }
                }
            }
        }
        if self.flows.is_empty() {
            return Err(c.err("flow", "at least one [[flow]] table is required"));
        }
        for (i, f) in self.flows.iter().enumerate() {
            let k = |x: &str| format!("flow[{i}].{x}");
            c.id(&k("id"), &f.id)?;
            if let Some(j) = self.flows[..i].iter().position(|o| o.id == f.id) {
                return Err(c.err(
                    k("id"),
                    format!("duplicate flow id {:?} (also flow[{j}])", f.id),
                ));
            }
            if f.kind != FlowKind::Udp {
                for (set, key) in [(f.udp.is_some(), "udp"), (f.stop_s.is_some(), "stop_s")] {
                    if set {
                        return Err(c.err(k(key), "only for kind = \"udp\" flows"));
                    }
                }
                if f.cc.is_empty() {
                    let ccs = match f.kind {
                        FlowKind::Mptcp => format!(
                            "{}, or uncoupled-<{}>",
                            crate::MPTCP_COUPLED_CCS.join(", "),
                            TCP_CCS.join("|")
                        ),
                        _ => TCP_CCS.join(", "),
                    };
                    return Err(c.err(
                        k("cc"),
                        format!(
                            "missing: a {} flow needs a congestion control, one of {ccs}",
                            f.kind.as_str()
                        ),
                    ));
                }
            }
            match f.kind {
                FlowKind::Udp => self.validate_udp(&c, i, f)?,
                FlowKind::Tcp => {
                    if !TCP_CCS.contains(&f.cc.as_str()) {
                        return Err(c.err(
                            k("cc"),
                            format!(
                                "unknown congestion control {:?} for a tcp flow; expected one of {}",
                                f.cc,
                                TCP_CCS.join(", ")
                            ),
                        ));
                    }
                    if f.paths.len() != 1 && f.handoffs.is_empty() {
                        return Err(c.err(
                            k("paths"),
                            format!(
                                "a tcp flow takes exactly one link (more only with handoffs), found {}",
                                f.paths.len()
                            ),
                        ));
                    }
                }
                FlowKind::Mptcp => {
                    let uncoupled_ok =
                        f.cc.strip_prefix("uncoupled-")
                            .is_some_and(|t| TCP_CCS.contains(&t));
                    if !(crate::MPTCP_COUPLED_CCS.contains(&f.cc.as_str()) || uncoupled_ok) {
                        return Err(c.err(
                            k("cc"),
                            format!(
                                "unknown congestion control {:?} for an mptcp flow; expected one of {}, or uncoupled-<{}>",
                                f.cc,
                                crate::MPTCP_COUPLED_CCS.join(", "),
                                TCP_CCS.join("|")
                            ),
                        ));
                    }
                    if f.paths.is_empty() {
                        return Err(c.err(k("paths"), "an mptcp flow needs at least one link"));
                    }
                    if f.paths.len() > 16 {
                        return Err(c.err(
                            k("paths"),
                            format!("at most 16 subflows, found {}", f.paths.len()),
                        ));
                    }
                    if let Some(sch) = &f.scheduler {
                        if !crate::MPTCP_SCHEDULERS.contains(&sch.as_str()) {
                            return Err(c.err(
                                k("scheduler"),
                                format!(
                                    "unknown scheduler {sch:?}; expected one of {}",
                                    crate::MPTCP_SCHEDULERS.join(", ")
                                ),
                            ));
                        }
                    }
                    if let Some(b) = f.receive_buffer_packets {
                        c.int_range(&k("receive_buffer_packets"), b, 2, 10_000_000, "packets")?;
                    }
                    if let Some(b) = f.send_buffer_packets {
                        c.int_range(&k("send_buffer_packets"), b, 1, 10_000_000, "packets")?;
                    }
                    if let Some(w) = f.subflow_window_bytes {
                        let mss = u64::from(self.tcp_config(i).mss_bytes);
                        c.int_range(
                            &k("subflow_window_bytes"),
                            w,
                            mss,
                            1 << 30,
                            "bytes (at least one segment, mss_bytes)",
                        )?;
                    }
                    for (j, p) in f.backup_paths.iter().enumerate() {
                        if !f.paths.contains(p) {
                            return Err(c.err(
                                k(&format!("backup_paths[{j}]")),
                                format!(
                                    "{p:?} is not one of this flow's paths ({})",
                                    f.paths.join(", ")
                                ),
                            ));
                        }
                    }
                    for (j, pc) in f.prio_changes.iter().enumerate() {
                        let pk = |x: &str| k(&format!("prio_changes[{j}].{x}"));
                        if !(pc.t_s.is_finite() && pc.t_s >= 0.0 && pc.t_s < self.run.duration_s) {
                            return Err(c.err(
                                pk("t_s"),
                                format!(
                                    "expected a time >= 0 and < run.duration_s = {} s, found {}",
                                    self.run.duration_s,
                                    show_num(pc.t_s)
                                ),
                            ));
                        }
                        if !f.paths.contains(&pc.path) {
                            return Err(c.err(
                                pk("path"),
                                format!(
                                    "{:?} is not one of this flow's paths ({})",
                                    pc.path,
                                    f.paths.join(", ")
                                ),
                            ));
                        }
                    }
                    if let Some(n) = f.stale_loss_cnt {
                        if f.reinject_rule() == crate::Reinject::Rto {
                            return Err(c.err(
                                k("stale_loss_cnt"),
                                "only meaningful with reinject = \"stale\" or \"linux\"",
                            ));
                        }
                        c.int_range(&k("stale_loss_cnt"), n, 1, 100, "timeouts")?;
                    }
                    if f.receive_buffer_autotune == Some(true) && f.receive_buffer_packets.is_some()
                    {
                        return Err(c.err(
                            k("receive_buffer_autotune"),
                            "an autotuned buffer has no fixed size: give either \
                             receive_buffer_autotune = true or receive_buffer_packets",
                        ));
                    }
                }
            }
            self.validate_mechanisms(&c, i, f)?;
            self.validate_handoffs(&c, i, f)?;
            if f.kind == FlowKind::Tcp {
                for (set, key) in mptcp_keys_set(f) {
                    if set {
                        return Err(c.err(k(key), "only for kind = \"mptcp\" flows"));
                    }
                }
            }
            self.validate_access(&c, i, f)?;
            for (j, p) in f.paths.iter().enumerate() {
                if self.balancer_index(p).is_some() {
                    if f.kind != FlowKind::Tcp || !f.handoffs.is_empty() || f.paths.len() != 1 {
                        return Err(c.err(
                            k(&format!("paths[{j}]")),
                            format!("{p:?} is a balancer: only a tcp flow without handoffs takes one, as its only path"),
                        ));
                    }
                    continue;
                }
                match self.path_target(p) {
                    None => {
                        let ids: Vec<String> = self
                            .links
                            .iter()
                            .map(|l| format!("{:?}", l.id))
                            .chain(self.bonds.iter().map(|b| format!("{:?}", b.id)))
                            .chain(self.balancers.iter().map(|b| format!("{:?}", b.id)))
                            .collect();
                        let tables = match (self.bonds.is_empty(), self.balancers.is_empty()) {
                            (true, true) => "[[link]]",
                            (false, true) => "[[link]] or [[bond]]",
                            (true, false) => "[[link]] or [[balancer]]",
                            (false, false) => "[[link]], [[bond]] or [[balancer]]",
                        };
                        return Err(c.err(
                            k(&format!("paths[{j}]")),
                            format!(
                                "unknown link {p:?}; expected one of the {tables} ids: {}",
                                ids.join(", ")
                            ),
                        ));
                    }
                    Some(PathTarget::Bond(_)) if !f.handoffs.is_empty() => {
                        return Err(c.err(
                            k(&format!("paths[{j}]")),
                            format!("{p:?} is a bond: a vertical handoff moves a flow between links, not bonds"),
                        ));
                    }
                    _ => {}
                }
                // An mptcp flow may open several subflows over one link (Linux's ndiffports
                // path manager); a link twice in a tcp flow is a mistake.
                if f.kind == FlowKind::Tcp && f.paths[..j].contains(p) {
                    return Err(c.err(
                        k(&format!("paths[{j}]")),
                        format!("link {p:?} is listed twice"),
                    ));
                }
            }
            let d = self.run.duration_s;
            if !(f.start_s.is_finite() && f.start_s >= 0.0 && f.start_s < d) {
                return Err(c.err(
                    k("start_s"),
                    format!(
                        "expected a number >= 0 and < run.duration_s = {d} s, found {}",
                        show_num(f.start_s)
                    ),
                ));
            }
            // udp flows only (refused on the others above).
            if let Some(stop) = f.stop_s {
                if !(stop.is_finite() && stop > f.start_s && stop <= d) {
                    return Err(c.err(
                        k("stop_s"),
                        format!(
                            "expected a number > start_s = {} s and <= run.duration_s = {d} s, found {}",
                            show_num(f.start_s),
                            show_num(stop)
                        ),
                    ));
                }
            }
            if let Some(t) = &f.tcp {
                validate_tcp(&c, &k("tcp"), t)?;
            }
            // Constraints between options hold for the layered result ([flow.tcp] over [tcp]).
            let key = if f.tcp.is_some() {
                k("tcp")
            } else {
                "tcp".to_string()
            };
            let cfg = self.tcp_config(i);
            validate_tcp_config(&c, &key, &cfg)?;
            // A byte-limited buffer must hold at least one full-sized packet of every flow
            // that crosses it, or that flow could never send a full segment.
            let (packet, what) = match f.udp_config() {
                Some(u) => (u64::from(u.packet_bytes), "udp.packet_bytes"),
                None => (
                    u64::from(cfg.mss_bytes) + u64::from(cfg.header_bytes),
                    "mss_bytes + header_bytes",
                ),
            };
            for li in f.paths.iter().flat_map(|p| self.path_links(p)) {
                if let Some(b) = self.links[li].buffer_bytes {
                    if b < packet {
                        return Err(c.err(
                            format!("link[{li}].buffer_bytes"),
                            format!(
                                "expected at least one packet of flow {:?} ({what} = {packet} bytes), found {b}",
                                f.id
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// The keys only an mptcp flow takes, each with whether `f` sets it (checked, in this order,
/// on tcp and udp flows).
fn mptcp_keys_set(f: &crate::Flow) -> [(bool, &'static str); 10] {
    [
        (f.proxy.is_some(), "proxy"),
        (f.scheduler.is_some(), "scheduler"),
        (f.receive_buffer_packets.is_some(), "receive_buffer_packets"),
        (f.send_buffer_packets.is_some(), "send_buffer_packets"),
        (f.subflow_window_bytes.is_some(), "subflow_window_bytes"),
        (!f.backup_paths.is_empty(), "backup_paths"),
        (!f.prio_changes.is_empty(), "prio_changes"),
        (f.reinject.is_some(), "reinject"),
        (f.stale_loss_cnt.is_some(), "stale_loss_cnt"),
        (
            f.receive_buffer_autotune.is_some(),
            "receive_buffer_autotune",
        ),
    ]
}

fn validate_link(c: &Check, i: usize, l: &Link) -> Result<(), ScenarioError> {
    let k = |f: &str| format!("link[{i}].{f}");
    c.id(&k("id"), &l.id)?;
    if l.carrier.is_some() {
        for (set, key) in [
            (l.rate_mbps.is_some(), "rate_mbps"),
            (l.trace.is_some(), "trace"),
            (l.schedule.iter().any(|s| s.rate_mbps.is_some()), "schedule"),
        ] {
            if set {
                return Err(c.err(
                    k(key),
                    "a link with carrier = \"...\" takes its rate from the carrier; remove this key or the carrier",
                ));
            }
        }
    }
    if l.unplug && l.outage_mode != crate::OutageMode::Drop {
        return Err(c.err(
            k("unplug"),
            "only with outage_mode = \"drop\" (an unplugged interface loses what it holds)",
        ));
    }
    if let Some(w) = &l.wifi {
        for (set, key) in [
            (l.rate_mbps.is_some(), "rate_mbps"),
            (l.trace.is_some(), "trace"),
            (l.carrier.is_some(), "carrier"),
            (l.schedule.iter().any(|s| s.rate_mbps.is_some()), "schedule"),
            (l.reverse_rate_mbps.is_some(), "reverse_rate_mbps"),
            (l.reverse_trace.is_some(), "reverse_trace"),
        ] {
            if set {
                return Err(c.err(
                    k(key),
                    "a link with wifi = { ... } takes its rate from its PHY rate and the 802.11 MAC; remove this key or wifi",
                ));
            }
        }
        if !crate::WIFI_PHY_MBPS.contains(&w.phy_mbps) {
            return Err(c.err(
                k("wifi.phy_mbps"),
                format!(
                    "expected one of the 802.11a/g OFDM rates 6, 9, 12, 18, 24, 36, 48, 54 (Mbit/s), found {}",
                    show_num(w.phy_mbps)
                ),
            ));
        }
        if !(w.frame_error.is_finite() && (0.0..=0.9).contains(&w.frame_error)) {
            return Err(c.err(
                k("wifi.frame_error"),
                format!(
                    "expected a probability >= 0 and <= 0.9 per transmission attempt, found {}",
                    show_num(w.frame_error)
                ),
            ));
        }
        wifi_channel(c, &k, w)?;
    }
    match (l.rate_mbps, &l.trace) {
        (None, None) if l.carrier.is_some() || l.wifi.is_some() => {}
        (Some(r), None) => c.rate(&k("rate_mbps"), r)?,
        (None, Some(t)) => {
            if t.trim().is_empty() {
                return Err(c.err(
                    k("trace"),
                    "expected the path of a Mahimahi trace file, found \"\"",
                ));
            }
        }
        (Some(_), Some(_)) => {
            return Err(c.err(k("rate_mbps"), "give either rate_mbps or trace, not both"));
        }
        (None, None) => {
            return Err(c.err(
                k("rate_mbps"),
                format!("required unless trace, carrier or wifi is given: a rate >= {MIN_RATE_MBPS} and <= {MAX_RATE_MBPS} Mbit/s"),
            ));
        }
    }
    c.range(&k("delay_ms"), l.delay_ms, 0.0, false, MAX_DELAY_MS, "ms")?;
    if let Some(r) = &l.delay_range {
        if l.delay_ms != 0.0 {
            return Err(c.err(
                k("delay_ms"),
                "give either delay_ms or delay_range, not both (the range sets the delay from time 0)",
            ));
        }
        c.range(
            &k("delay_range.min_ms"),
            r.min_ms,
            0.0,
            false,
            MAX_DELAY_MS,
            "ms",
        )?;
        c.range(
            &k("delay_range.max_ms"),
            r.max_ms,
            r.min_ms,
            false,
            MAX_DELAY_MS,
            "ms (at least min_ms)",
        )?;
        if let Some(e) = r.every_ms {
            c.range(
                &k("delay_range.every_ms"),
                e,
                1.0,
                false,
                MAX_OUTAGE_MS,
                "ms",
            )?;
        }
    }
    c.probability(&k("loss"), l.loss)?;
    if l.buffer_packets.is_some() && l.buffer_bytes.is_some() {
        return Err(c.err(
            k("buffer_bytes"),
            "give either buffer_packets or buffer_bytes, not both",
        ));
    }
    if let Some(b) = l.buffer_packets {
        c.int_range(&k("buffer_packets"), b, 1, MAX_BUFFER_PACKETS, "packets")?;
    }
    if let Some(b) = l.buffer_bytes {
        c.int_range(
            &k("buffer_bytes"),
            b,
            1500,
            MAX_BUFFER_BYTES,
            "bytes (at least one 1500-byte packet)",
        )?;
    }
    let mut prev_end = f64::NEG_INFINITY;
    for (j, o) in l.outages.iter().enumerate() {
        let ok = |f: &str| k(&format!("outages[{j}].{f}"));
        c.range(&ok("start_s"), o.start_s, 0.0, false, MAX_DURATION_S, "s")?;
        c.range(
            &ok("duration_ms"),
            o.duration_ms,
            0.0,
            true,
            MAX_OUTAGE_MS,
            "ms",
        )?;
        if let Some(e) = o.every_s {
            let min = o.duration_ms / 1000.0;
            if !(e.is_finite() && e > min && e <= MAX_DURATION_S) {
                return Err(c.err(
                    ok("every_s"),
                    format!(
                        "expected a period > duration_ms / 1000 = {} s (each outage ends before the next) and <= {MAX_DURATION_S} s, found {}",
                        show_num(min),
                        show_num(e)
                    ),
                ));
            }
        }
        if o.start_s < prev_end {
            return Err(c.err(
                ok("start_s"),
                format!(
                    "outages must be in time order and must not overlap: expected >= {prev_end} s (the end of outages[{}]), found {}",
                    j - 1,
                    o.start_s
                ),
            ));
        }
        prev_end = o.start_s + o.duration_ms / 1000.0;
    }
    let mut prev_t = f64::NEG_INFINITY;
    for (j, s) in l.schedule.iter().enumerate() {
        let sk = |f: &str| k(&format!("schedule[{j}].{f}"));
        c.range(&sk("t_s"), s.t_s, 0.0, false, MAX_DURATION_S, "s")?;
        if s.t_s <= prev_t {
            return Err(c.err(
                sk("t_s"),
                format!(
                    "schedule steps must be in strictly increasing time order: expected > {prev_t} s (schedule[{}].t_s), found {}",
                    j - 1,
                    s.t_s
                ),
            ));
        }
        prev_t = s.t_s;
        if let Some(r) = s.rate_mbps {
            if l.trace.is_some() {
                return Err(c.err(
                    sk("rate_mbps"),
                    "a trace-driven link has no rate to schedule",
                ));
            }
            c.rate(&sk("rate_mbps"), r)?;
        }
        if let Some(d) = s.delay_ms {
            c.range(&sk("delay_ms"), d, 0.0, false, MAX_DELAY_MS, "ms")?;
        }
        if let Some(p) = s.loss {
            c.probability(&sk("loss"), p)?;
        }
        if s.rate_mbps.is_none() && s.delay_ms.is_none() && s.loss.is_none() {
            return Err(c.err(
                sk("t_s"),
                "a schedule step must set rate_mbps, delay_ms or loss",
            ));
        }
    }
    if l.reverse_rate_mbps.is_some() && l.reverse_trace.is_some() {
        return Err(c.err(
            k("reverse_rate_mbps"),
            "give either reverse_rate_mbps or reverse_trace, not both",
        ));
    }
    if let Some(r) = l.reverse_rate_mbps {
        c.rate(&k("reverse_rate_mbps"), r)?;
    }
    if let Some(t) = &l.reverse_trace {
        if t.trim().is_empty() {
            return Err(c.err(
                k("reverse_trace"),
                "expected the path of a Mahimahi trace file, found \"\"",
            ));
        }
    }
    if let Some(d) = l.reverse_delay_ms {
        c.range(&k("reverse_delay_ms"), d, 0.0, false, MAX_DELAY_MS, "ms")?;
    }
    c.probability(&k("reverse_loss"), l.reverse_loss)?;
    if let Some(b) = l.reverse_buffer_packets {
        c.int_range(
            &k("reverse_buffer_packets"),
            b,
            1,
            MAX_BUFFER_PACKETS,
            "packets",
        )?;
    }
    Ok(())
}

/// Shortest mean ON period of a udp on/off source, ms (1 us): the source draws a period at a
/// time, so the periods must advance the clock (and the size estimate counts them).
pub const UDP_MIN_MEAN_ON_MS: f64 = 0.001;

impl Scenario {
    /// A udp flow: no TCP keys, one link, its source (`udp`) and `stop_s`.
    fn validate_udp(&self, c: &Check, i: usize, f: &crate::Flow) -> Result<(), ScenarioError> {
        let k = |x: &str| format!("flow[{i}].{x}");
        if !f.cc.is_empty() {
            return Err(c.err(
                k("cc"),
                "a udp flow has no congestion control: remove cc (it is for tcp and mptcp flows)",
            ));
        }
        let tcp_keys = [(f.bytes != 0, "bytes"), (f.tcp.is_some(), "tcp")];
        let others = [
            (!f.mechanisms.is_empty(), "mechanisms"),
            (f.handover_table.is_some(), "handover_table"),
            (
                f.handover_table_learn_runs.is_some(),
                "handover_table_learn_runs",
            ),
            (f.gps_error_m.is_some(), "gps_error_m"),
            (f.phad_lead_ms.is_some(), "phad_lead_ms"),
            (f.phad_back_ms.is_some(), "phad_back_ms"),
            (!f.handoffs.is_empty(), "handoffs"),
            (f.tcp_fs.is_some(), "tcp_fs"),
            (f.bloat_monitor.is_some(), "bloat_monitor"),
        ];
        for (set, key) in tcp_keys.into_iter().chain(mptcp_keys_set(f)).chain(others) {
            if set {
                return Err(c.err(
                    k(key),
                    "not for kind = \"udp\" flows (a udp flow takes id, kind, paths, start_s, stop_s and udp)",
                ));
            }
        }
        if f.paths.len() != 1 {
            return Err(c.err(
                k("paths"),
                format!(
                    "a udp flow takes exactly one link or bond (it sends in the data direction), found {}",
                    f.paths.len()
                ),
            ));
        }
        let Some(u) = &f.udp else {
            return Err(c.err(
                k("udp"),
                "missing: a udp flow needs its source, e.g. udp = { max_mbps = 23.0, mean_mbps = 16.0 } (on/off) or udp = { process = \"cbr\", mean_mbps = 16.0 }",
            ));
        };
        let uk = |x: &str| k(&format!("udp.{x}"));
        let Some(mean) = u.mean_mbps else {
            return Err(c.err(
                uk("mean_mbps"),
                format!("missing: the source's long-run mean rate, a number >= {MIN_RATE_MBPS} and <= {MAX_RATE_MBPS} Mbit/s"),
            ));
        };
        c.rate(&uk("mean_mbps"), mean)?;
        // A cbr source sends at mean_mbps and has no periods, but takes max_mbps and mean_on_ms
        // (checked alike, unused) so that `--set flow.<id>.udp.process=cbr` turns an on/off
        // source of a scenario into a constant one at its mean.
        match (u.process, u.max_mbps) {
            (crate::UdpProcess::Onoff, None) => {
                return Err(c.err(
                    uk("max_mbps"),
                    "missing: an on/off source needs max_mbps, its rate while on (>= mean_mbps); or give process = \"cbr\" for a constant rate",
                ));
            }
            (_, Some(max)) => {
                c.rate(&uk("max_mbps"), max)?;
                if max < mean {
                    return Err(c.err(
                        uk("max_mbps"),
                        format!(
                            "expected a number >= mean_mbps = {} Mbit/s (the rate while on is at least the mean), found {}",
                            show_num(mean),
                            show_num(max)
                        ),
                    ));
                }
            }
            (crate::UdpProcess::Cbr | crate::UdpProcess::Poisson, None) => {}
        }
        if let Some(on) = u.mean_on_ms {
            c.range(
                &uk("mean_on_ms"),
                on,
                UDP_MIN_MEAN_ON_MS,
                false,
                3_600_000.0,
                "ms",
            )?;
        }
        if let Some(b) = u.packet_bytes {
            c.int_range(
                &uk("packet_bytes"),
                b,
                crate::UDP_HEADER_BYTES,
                u32::from(u16::MAX),
                "bytes on the wire (IP and UDP headers, 28 bytes, included)",
            )?;
        }
        Ok(())
    }

    /// A `[[bond]]`: a unique id, known distinct members, weights, monitoring and sleep times.
    /// A load balancer: a unique id (among links, bonds and balancers), known links each once,
    /// the detection delay.
    fn validate_balancer(
        &self,
        c: &Check,
        i: usize,
        b: &crate::Balancer,
    ) -> Result<(), ScenarioError> {
        let k = |x: &str| format!("balancer[{i}].{x}");
        c.id(&k("id"), &b.id)?;
        if let Some(j) = self.balancers[..i].iter().position(|o| o.id == b.id) {
            return Err(c.err(
                k("id"),
                format!("duplicate balancer id {:?} (also balancer[{j}])", b.id),
            ));
        }
        if let Some(t) = self.path_target(&b.id) {
            let what = match t {
                PathTarget::Link(j) => format!("link[{j}]"),
                PathTarget::Bond(j) => format!("bond[{j}]"),
            };
            return Err(c.err(
                k("id"),
                format!(
                    "{:?} is also the id of {what}: a flow's paths name links, bonds and balancers alike",
                    b.id
                ),
            ));
        }
        self.link_list(c, &k("links"), &b.links, "links = [\"isp-a\", \"isp-b\"]")?;
        if let Some(d) = b.detect_ms {
            c.range(&k("detect_ms"), d, 0.0, false, MAX_OUTAGE_MS, "ms")?;
        }
        if b.policy == crate::BalancePolicy::Bandwidth {
            for (j, m) in b.links.iter().enumerate() {
                if self
                    .links
                    .iter()
                    .any(|l| &l.id == m && l.rate_mbps.is_none())
                {
                    return Err(c.err(
                        k(&format!("links[{j}]")),
                        format!("policy = \"bandwidth\" weighs the links by their rate_mbps, and link {m:?} has none (a trace, carrier or wifi link)"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A flow's in-car link (`access`) and the proxy's options.
    fn validate_access(&self, c: &Check, i: usize, f: &crate::Flow) -> Result<(), ScenarioError> {
        let k = |x: &str| format!("flow[{i}].{x}");
        let Some(a) = &f.access else {
            if f.proxy.is_some() {
                return Err(c.err(
                    k("proxy"),
                    "a proxy relays onto the in-car link: give access = \"<link id>\" too",
                ));
            }
            return Ok(());
        };
        if f.kind == FlowKind::Udp {
            return Err(c.err(k("access"), "only for tcp and mptcp flows"));
        }
        if self.link_index(a).is_none() {
            let ids: Vec<String> = self.links.iter().map(|l| format!("{:?}", l.id)).collect();
            return Err(c.err(
                k("access"),
                format!(
                    "unknown link {a:?}; expected one of the [[link]] ids: {}",
                    ids.join(", ")
                ),
            ));
        }
        if f.paths
            .iter()
            .flat_map(|p| self.path_links(p))
            .any(|li| self.links[li].id == *a)
        {
            return Err(c.err(
                k("access"),
                format!("link {a:?} is also one of the flow's paths: the in-car link is a hop of its own"),
            ));
        }
        if !f.handoffs.is_empty() {
            return Err(c.err(k("access"), "not with handoffs"));
        }
        if let Some(p) = &f.proxy {
            if let Some(b) = p.buffer_bytes {
                c.int_range(&k("proxy.buffer_bytes"), b, 1024, 1 << 30, "bytes")?;
            }
            if let Some(cc) = &p.access_cc {
                if !TCP_CCS.contains(&cc.as_str()) {
                    return Err(c.err(
                        k("proxy.access_cc"),
                        format!(
                            "unknown congestion control {cc:?}; expected one of {}",
                            TCP_CCS.join(", ")
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// A list of link ids (a bond's members, a balancer's links) at `key`: at least one, each
    /// a known link, each once; `example` shows the key written right.
    fn link_list(
        &self,
        c: &Check,
        key: &str,
        list: &[String],
        example: &str,
    ) -> Result<(), ScenarioError> {
        if list.is_empty() {
            return Err(c.err(
                key,
                format!("expected at least one link id, e.g. {example}"),
            ));
        }
        for (j, m) in list.iter().enumerate() {
            let mk = format!("{key}[{j}]");
            if self.link_index(m).is_none() {
                let ids: Vec<String> = self.links.iter().map(|l| format!("{:?}", l.id)).collect();
                return Err(c.err(
                    mk,
                    format!(
                        "unknown link {m:?}; expected one of the [[link]] ids: {}",
                        ids.join(", ")
                    ),
                ));
            }
            if list[..j].contains(m) {
                return Err(c.err(mk, format!("link {m:?} is listed twice")));
            }
        }
        Ok(())
    }

    fn validate_bond(&self, c: &Check, i: usize, b: &Bond) -> Result<(), ScenarioError> {
        let k = |x: &str| format!("bond[{i}].{x}");
        c.id(&k("id"), &b.id)?;
        if let Some(j) = self.bonds[..i].iter().position(|o| o.id == b.id) {
            return Err(c.err(
                k("id"),
                format!("duplicate bond id {:?} (also bond[{j}])", b.id),
            ));
        }
        if let Some(j) = self.link_index(&b.id) {
            return Err(c.err(
                k("id"),
                format!(
                    "{:?} is also the id of link[{j}]: a flow's paths name links and bonds alike",
                    b.id
                ),
            ));
        }
        self.link_list(
            c,
            &k("members"),
            &b.members,
            "members = [\"wlan-a\", \"wlan-g\"]",
        )?;
        if let Some(w) = &b.weights {
            if w.len() != b.members.len() {
                return Err(c.err(
                    k("weights"),
                    format!(
                        "expected one weight per member ({}), found {}",
                        b.members.len(),
                        w.len()
                    ),
                ));
            }
            for (j, &x) in w.iter().enumerate() {
                c.int_range(&k(&format!("weights[{j}]")), x, 1, 1000, "packets per turn")?;
            }
        }
        if let Some(m) = b.miimon_ms {
            c.range(
                &k("miimon_ms"),
                m,
                0.0,
                false,
                60_000.0,
                "ms (0: no monitoring)",
            )?;
        }
        if let Some(t) = b.sleep_after_ms {
            c.range(&k("sleep_after_ms"), t, 0.0, false, 3_600_000.0, "ms")?;
        }
        Ok(())
    }

    /// A flow's vertical handoffs and TCP-FS constants.
    fn validate_handoffs(&self, c: &Check, i: usize, f: &crate::Flow) -> Result<(), ScenarioError> {
        let k = |x: &str| format!("flow[{i}].{x}");
        let tcp_fs = f.mechanisms.iter().any(|m| m == "tcp-fs");
        if !f.handoffs.is_empty() && f.kind != FlowKind::Tcp {
            return Err(c.err(k("handoffs"), "only for kind = \"tcp\" flows"));
        }
        if f.tcp_fs.is_some() && !tcp_fs {
            return Err(c.err(k("tcp_fs"), "only with mechanisms = [\"tcp-fs\"]"));
        }
        if f.bloat_monitor.is_some() && !f.mechanisms.iter().any(|m| m == "bloat-monitor") {
            return Err(c.err(
                k("bloat_monitor"),
                "only with mechanisms = [\"bloat-monitor\"]",
            ));
        }
        if let Some(a) = f.bloat_monitor.and_then(|b| b.average_s) {
            c.range(
                &k("bloat_monitor.average_s"),
                a,
                0.0,
                true,
                3600.0,
                "s (the moving average's time constant; leave it out for the average since the flow began)",
            )?;
        }
        if tcp_fs && f.handoffs.is_empty() {
            return Err(c.err(
                k("mechanisms"),
                "\"tcp-fs\" acts at vertical handoffs: give the flow handoffs = [...]",
            ));
        }
        if f.handoffs.len() > 1000 {
            return Err(c.err(
                k("handoffs"),
                format!("at most 1000 handoffs, found {}", f.handoffs.len()),
            ));
        }
        if !f.handoffs.is_empty() {
            for (j, p) in f.paths.iter().enumerate() {
                if f.paths[..j].contains(p) {
                    return Err(c.err(
                        k(&format!("paths[{j}]")),
                        format!("{p:?} is given twice (a handoff flow lists each link once)"),
                    ));
                }
                // Releasing a link releases it for every flow on it: a handoff flow's links
                // are the mobile node's interfaces, its own.
                if let Some(other) = self
                    .flows
                    .iter()
                    .find(|o| o.id != f.id && o.paths.contains(p))
                {
                    return Err(c.err(
                        k(&format!("paths[{j}]")),
                        format!(
                            "link {p:?} is also used by flow {:?}: a handoff flow's links are its own (a handoff attaches and releases them)",
                            other.id
                        ),
                    ));
                }
            }
        }
        let (mut current, mut free_at) = (f.paths.first().cloned().unwrap_or_default(), 0.0_f64);
        for (j, h) in f.handoffs.iter().enumerate() {
            let hk = |x: &str| k(&format!("handoffs[{j}].{x}"));
            c.range(&hk("t_s"), h.t_s, 0.0, false, self.run.duration_s, "s")?;
            if h.t_s < free_at {
                return Err(c.err(
                    hk("t_s"),
                    format!(
                        "a handoff starts at {} s, before the one before it completes and releases its old link ({} s): give handoffs in time order, one at a time",
                        show_num(h.t_s),
                        show_num(free_at)
                    ),
                ));
            }
            if !f.paths.contains(&h.to) {
                return Err(c.err(
                    hk("to"),
                    format!(
                        "{:?} is not one of this flow's paths ({})",
                        h.to,
                        f.paths.join(", ")
                    ),
                ));
            }
            if h.to == current {
                return Err(c.err(
                    hk("to"),
                    format!("the flow is already on {current:?} at this handoff"),
                ));
            }
            match h.mode {
                crate::HandoffMode::Soft if h.gap_ms.is_some() => {
                    return Err(c.err(
                        hk("gap_ms"),
                        "only for mode = \"hard\" (a soft handoff has duration_ms and overlap_ms)",
                    ))
                }
                crate::HandoffMode::Hard if h.overlap_ms.is_some() || h.duration_ms.is_some() => {
                    let key = if h.overlap_ms.is_some() {
                        "overlap_ms"
                    } else {
                        "duration_ms"
                    };
                    return Err(c.err(
                        hk(key),
                        "only for mode = \"soft\" (a hard handoff has gap_ms)",
                    ));
                }
                _ => {}
            }
            for (key, v) in [
                ("duration_ms", h.duration_ms),
                ("overlap_ms", h.overlap_ms),
                ("gap_ms", h.gap_ms),
            ] {
                if let Some(v) = v {
                    c.range(&hk(key), v, 0.0, false, 3.6e6, "ms")?;
                }
            }
            current = h.to.clone();
            // The next handoff may start once this one completed and its old link is released.
            free_at = h.span_s().1.max(h.release_s());
        }
        if let Some(o) = &f.tcp_fs {
            let tk = |x: &str| k(&format!("tcp_fs.{x}"));
            c.range(&tk("detect_ms"), o.detect_ms, 0.0, false, 60_000.0, "ms")?;
            c.range(&tk("alpha"), o.alpha, 0.0, true, 1.0, "")?;
            c.range(&tk("beta"), o.beta, 0.0, true, 1.0, "")?;
            c.range(&tk("k"), o.k, 0.0, false, 100.0, "")?;
            c.range(&tk("margin"), o.margin, 0.0, false, 10.0, "")?;
            if let Some(m) = o.min_rto_ms {
                c.range(&tk("min_rto_ms"), m, 0.0, false, 60_000.0, "ms")?;
            }
        }
        Ok(())
    }

    /// A flow's `mechanisms` and the keys that go with them.
    fn validate_mechanisms(
        &self,
        c: &Check,
        i: usize,
        f: &crate::Flow,
    ) -> Result<(), ScenarioError> {
        let k = |x: &str| format!("flow[{i}].{x}");
        for (j, m) in f.mechanisms.iter().enumerate() {
            match crate::MECHANISMS.iter().find(|(n, _)| n == m) {
                None => {
                    let names: Vec<&str> = crate::MECHANISMS.iter().map(|(n, _)| *n).collect();
                    return Err(c.err(
                        k(&format!("mechanisms[{j}]")),
                        format!(
                            "unknown mechanism {m:?}; expected one of {}",
                            names.join(", ")
                        ),
                    ));
                }
                Some((_, kind)) if *kind != f.kind => {
                    return Err(c.err(
                        k(&format!("mechanisms[{j}]")),
                        format!("{m:?} is for kind = \"{}\" flows", kind.as_str()),
                    ));
                }
                _ => {}
            }
            if f.mechanisms[..j].contains(m) {
                return Err(c.err(
                    k(&format!("mechanisms[{j}]")),
                    format!("{m:?} is given twice"),
                ));
            }
        }
        let pha = f.mechanisms.iter().any(|m| m == "pha" || m == "pha-d");
        if f.mechanisms.iter().any(|m| m == "pha") && f.mechanisms.iter().any(|m| m == "pha-d") {
            return Err(c.err(
                k("mechanisms"),
                "\"pha\" (the sender's scheduler) and \"pha-d\" (the receiver's MP_PRIO) are alternatives: give one",
            ));
        }
        let keyed = [
            (f.handover_table.is_some(), "handover_table"),
            (
                f.handover_table_learn_runs.is_some(),
                "handover_table_learn_runs",
            ),
            (f.gps_error_m.is_some(), "gps_error_m"),
            (f.phad_lead_ms.is_some(), "phad_lead_ms"),
            (f.phad_back_ms.is_some(), "phad_back_ms"),
        ];
        // The table keys may stay when the mechanism is off (a scenario run with and without
        // it); they are still checked, and only pha / pha-d read them.
        if !pha && !keyed.iter().any(|(set, _)| *set) {
            return Ok(());
        }
        if f.kind != FlowKind::Mptcp {
            if let Some((_, key)) = keyed.iter().find(|(set, _)| *set) {
                return Err(c.err(k(key), "only for kind = \"mptcp\" flows"));
            }
        }
        if (f.phad_lead_ms.is_some() || f.phad_back_ms.is_some())
            && !f.mechanisms.iter().any(|m| m == "pha-d")
        {
            let key = if f.phad_lead_ms.is_some() {
                "phad_lead_ms"
            } else {
                "phad_back_ms"
            };
            return Err(c.err(k(key), "only with mechanisms = [\"pha-d\"]"));
        }
        match (&f.handover_table, f.handover_table_learn_runs) {
            // A table given by a caller (a reproduction) counts as given.
            (None, None) if pha && f.handover_table_data.is_none() => {
                return Err(c.err(
                    k("handover_table"),
                    "pha and pha-d need a handover table: handover_table = \"table.json\" (from railpath table learn) or handover_table_learn_runs = N",
                ))
            }
            (Some(_), Some(_)) => {
                return Err(c.err(
                    k("handover_table_learn_runs"),
                    "give either handover_table or handover_table_learn_runs, not both",
                ))
            }
            (Some(t), None) if t.trim().is_empty() => {
                return Err(c.err(k("handover_table"), "expected a file name"))
            }
            _ => {}
        }
        if let Some(n) = f.handover_table_learn_runs {
            c.int_range(&k("handover_table_learn_runs"), n, 1, 500, "runs")?;
        }
        if let Some(g) = f.gps_error_m {
            c.range(&k("gps_error_m"), g, 0.0, false, 1000.0, "m")?;
        }
        for (key, v) in [
            ("phad_lead_ms", f.phad_lead_ms),
            ("phad_back_ms", f.phad_back_ms),
        ] {
            if let Some(v) = v {
                c.range(&k(key), v, 0.0, false, 60_000.0, "ms")?;
            }
        }
        for (j, p) in f.paths.iter().enumerate() {
            let carrier = self
                .links
                .iter()
                .find(|l| &l.id == p)
                .and_then(|l| l.carrier.as_ref());
            if pha && matches!(self.path_target(p), Some(PathTarget::Bond(_))) {
                return Err(c.err(
                    k(&format!("paths[{j}]")),
                    format!("pha and pha-d predict handovers of one carrier per subflow: {p:?} is a bond"),
                ));
            }
            if pha && carrier.is_none() {
                return Err(c.err(
                    k(&format!("paths[{j}]")),
                    format!("pha and pha-d predict handovers of carriers: link {p:?} has no carrier (give it carrier = \"...\")"),
                ));
            }
        }
        Ok(())
    }
}

/// Ranges of each option that is set, in `[tcp]` or a flow's `tcp` table.
fn validate_tcp(c: &Check, prefix: &str, t: &TcpOptions) -> Result<(), ScenarioError> {
    let k = |f: &str| format!("{prefix}.{f}");
    if let Some(m) = t.mss_bytes {
        c.int_range(&k("mss_bytes"), m, 500, 9000, "bytes")?;
    }
    if let Some(h) = t.header_bytes {
        c.int_range(&k("header_bytes"), h, 0, 200, "bytes")?;
    }
    if let Some(a) = t.ack_bytes {
        c.int_range(&k("ack_bytes"), a, 1, 200, "bytes")?;
    }
    if let Some(w) = t.initial_window {
        c.int_range(&k("initial_window"), w, 1, 1000, "segments")?;
    }
    if let Some(v) = t.min_rto_ms {
        c.range(&k("min_rto_ms"), v, 0.0, true, 60_000.0, "ms")?;
    }
    if let Some(v) = t.initial_rto_ms {
        c.range(&k("initial_rto_ms"), v, 0.0, true, 120_000.0, "ms")?;
    }
    if let Some(v) = t.max_rto_ms {
        c.range(&k("max_rto_ms"), v, 0.0, true, 3_600_000.0, "ms")?;
    }
    if let Some(v) = t.delack_timeout_ms {
        c.range(&k("delack_timeout_ms"), v, 0.0, true, 1000.0, "ms")?;
    }
    if let Some(w) = t.receive_window_bytes {
        c.int_range(&k("receive_window_bytes"), w, 1000, 1 << 30, "bytes")?;
    }
    if let Some(w) = t.send_buffer_bytes {
        c.int_range(&k("send_buffer_bytes"), w, 1000, 1 << 31, "bytes")?;
    }
    if let Some(r) = t.max_reordering {
        c.int_range(&k("max_reordering"), u64::from(r), 3, 10_000, "packets")?;
    }
    for (key, v) in [("rmem_bytes", t.rmem_bytes), ("wmem_bytes", t.wmem_bytes)] {
        if let Some([lo, def, hi]) = v {
            for (i, x) in [lo, def, hi].into_iter().enumerate() {
                c.int_range(&k(&format!("{key}[{i}]")), x, 4096, 1 << 31, "bytes")?;
            }
            if !(lo <= def && def <= hi) {
                return Err(c.err(
                    k(key),
                    format!("expected min <= default <= max, found [{lo}, {def}, {hi}]"),
                ));
            }
        }
    }
    Ok(())
}

/// Constraints between TCP options, checked on a flow's resolved configuration.
fn validate_tcp_config(c: &Check, prefix: &str, t: &TcpConfig) -> Result<(), ScenarioError> {
    let k = |f: &str| format!("{prefix}.{f}");
    if t.min_rto_ms > t.max_rto_ms {
        return Err(c.err(
            k("min_rto_ms"),
            format!(
                "min_rto_ms ({} ms) must not exceed max_rto_ms ({} ms)",
                t.min_rto_ms, t.max_rto_ms
            ),
        ));
    }
    if t.initial_rto_ms > t.max_rto_ms {
        return Err(c.err(
            k("initial_rto_ms"),
            format!(
                "initial_rto_ms ({} ms) must not exceed max_rto_ms ({} ms)",
                t.initial_rto_ms, t.max_rto_ms
            ),
        ));
    }
    if let Some(b) = t.send_buffer_bytes.filter(|b| *b < u64::from(t.mss_bytes)) {
        return Err(c.err(
            k("send_buffer_bytes"),
            format!(
                "expected at least one segment (mss_bytes = {} bytes), found {b}",
                t.mss_bytes
            ),
        ));
    }
    let two_segments = 2 * u64::from(t.mss_bytes);
    if t.receive_window_bytes < two_segments {
        return Err(c.err(
            k("receive_window_bytes"),
            format!(
                "expected at least two segments (2 x mss_bytes = {two_segments} bytes), found {}",
                t.receive_window_bytes
            ),
        ));
    }
    Ok(())
}

/// The SNR, rate control and fading keys of a link's `wifi = { ... }`.
fn wifi_channel(
    c: &Check,
    k: &dyn Fn(&str) -> String,
    w: &crate::Wifi,
) -> Result<(), ScenarioError> {
    if let Some(snr) = w.snr_db {
        if !(snr.is_finite() && (-10.0..=60.0).contains(&snr)) {
            return Err(c.err(
                k("wifi.snr_db"),
                format!(
                    "expected a signal-to-noise ratio >= -10 and <= 60 dB, found {}",
                    show_num(snr)
                ),
            ));
        }
    }
    let needs_snr = |key: &str, why: &str| -> Result<(), ScenarioError> {
        if w.snr_db.is_none() {
            return Err(c.err(
                k(key),
                format!("{why}: give the link's wifi.snr_db (the mean signal-to-noise ratio, dB)"),
            ));
        }
        Ok(())
    };
    if w.rate_control == crate::WifiRateControl::Minstrel {
        needs_snr(
            "wifi.rate_control",
            "rate_control = \"minstrel\" adapts the rate to the frame errors a signal-to-noise ratio gives",
        )?;
    }
    if let Some(t) = w.max_rate_tries {
        if w.rate_control != crate::WifiRateControl::Minstrel {
            return Err(c.err(
                k("wifi.max_rate_tries"),
                "limits Minstrel's retry chain: only with rate_control = \"minstrel\"",
            ));
        }
        if !(1..=15).contains(&t) {
            return Err(c.err(
                k("wifi.max_rate_tries"),
                format!("expected 1 to 15 tries per rate, found {t}"),
            ));
        }
    }
    if !(w.doppler_hz.is_finite() && (0.0..=100.0).contains(&w.doppler_hz)) {
        return Err(c.err(
            k("wifi.doppler_hz"),
            format!(
                "expected a Doppler spread >= 0 and <= 100 Hz (0: no fading), found {}",
                show_num(w.doppler_hz)
            ),
        ));
    }
    if w.doppler_hz > 0.0 {
        needs_snr("wifi.doppler_hz", "fading varies a signal-to-noise ratio")?;
    }
    if let Some(kf) = w.rician_k_db {
        if !(kf.is_finite() && (-30.0..=30.0).contains(&kf)) {
            return Err(c.err(
                k("wifi.rician_k_db"),
                format!(
                    "expected a Rician K factor >= -30 and <= 30 dB, found {}",
                    show_num(kf)
                ),
            ));
        }
        if w.doppler_hz == 0.0 {
            return Err(c.err(
                k("wifi.rician_k_db"),
                "the K factor shapes the fading: give wifi.doppler_hz > 0 too, or remove this key",
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::parse_str;

    const BASE: &str = r#"
[run]
duration_s = 10

[[link]]
id = "a"
rate_mbps = 10
delay_ms = 10

[[link]]
id = "b"
rate_mbps = 20

[[flow]]
id = "dl"
kind = "tcp"
cc = "newreno"
paths = ["a"]
"#;

    /// Validate BASE with `from` replaced by `to`; the error's key and message.
    fn check(from: &str, to: &str) -> Result<(), (String, String)> {
        assert!(BASE.contains(from), "{from:?} not in BASE");
        let text = BASE.replacen(from, to, 1);
        let s = parse_str(&text, "t.toml").map_err(|e| (e.key.clone(), e.to_string()))?;
        // The rules only (`check`): resolution would also want the traces read from disk.
        s.check().map_err(|e| {
            assert!(e.to_string().starts_with("t.toml: "), "{e}");
            (e.key.clone(), e.message)
        })
    }

    fn fails(from: &str, to: &str, key: &str, msg: &str) {
        match check(from, to) {
            Ok(()) => panic!("{to:?} accepted"),
            Err((k, m)) => {
                assert_eq!(k, key, "{m}");
                assert!(m.contains(msg), "message {m:?} lacks {msg:?}");
            }
        }
    }

    #[test]
    fn bonds_and_wifi_links() {
        let flow = "[[flow]]\nid = \"dl\"";
        let bond = |keys: &str| format!("[[bond]]\nid = \"bd\"\n{keys}\n\n{flow}");
        // A flow may name a bond as a path.
        check(flow, &bond("members = [\"a\", \"b\"]")).unwrap();
        check(
            "paths = [\"a\"]",
            "paths = [\"bd\"]\n[[bond]]\nid = \"bd\"\nmembers = [\"a\", \"b\"]\nweights = [4, 3]\nsplit = \"random\"\nmiimon_ms = 0\nack_filter = true",
        )
        .unwrap();
        fails(
            flow,
            &bond("members = []"),
            "bond[0].members",
            "at least one link id",
        );
        fails(
            flow,
            &bond("members = [\"a\", \"x\"]"),
            "bond[0].members[1]",
            "unknown link \"x\"; expected one of the [[link]] ids: \"a\", \"b\"",
        );
        fails(
            flow,
            &bond("members = [\"a\", \"a\"]"),
            "bond[0].members[1]",
            "listed twice",
        );
        fails(
            flow,
            &bond("members = [\"a\", \"b\"]\nweights = [1]"),
            "bond[0].weights",
            "one weight per member (2), found 1",
        );
        fails(
            flow,
            &bond("members = [\"a\", \"b\"]\nweights = [0, 1]"),
            "bond[0].weights[0]",
            "an integer from 1 to 1000",
        );
        fails(
            flow,
            &bond("members = [\"a\", \"b\"]\nmiimon_ms = -1"),
            "bond[0].miimon_ms",
            ">= 0",
        );
        fails(
            flow,
            "[[bond]]\nid = \"a\"\nmembers = [\"b\"]\n\n[[flow]]\nid = \"dl\"",
            "bond[0].id",
            "also the id of link[0]",
        );
        fails(
            "paths = [\"a\"]",
            "paths = [\"zz\"]\n[[bond]]\nid = \"bd\"\nmembers = [\"a\"]",
            "flow[0].paths[0]",
            "expected one of the [[link]] or [[bond]] ids: \"a\", \"b\", \"bd\"",
        );
        // An unplugged interface loses what it holds.
        check(
            "rate_mbps = 20",
            "rate_mbps = 20\noutage_mode = \"drop\"\nunplug = true",
        )
        .unwrap();
        fails(
            "rate_mbps = 20",
            "rate_mbps = 20\nunplug = true",
            "link[1].unplug",
            "only with outage_mode = \"drop\"",
        );
        // An 802.11 link takes its rate from its PHY rate.
        check(
            "rate_mbps = 20",
            "wifi = { standard = \"g\", phy_mbps = 36, frame_error = 0.1 }",
        )
        .unwrap();
        fails(
            "rate_mbps = 20",
            "rate_mbps = 20\nwifi = { standard = \"g\", phy_mbps = 36 }",
            "link[1].rate_mbps",
            "takes its rate from its PHY rate",
        );
        fails(
            "rate_mbps = 20",
            "wifi = { standard = \"a\", phy_mbps = 11 }",
            "link[1].wifi.phy_mbps",
            "6, 9, 12, 18, 24, 36, 48, 54",
        );
        fails(
            "rate_mbps = 20",
            "wifi = { standard = \"a\", phy_mbps = 54, frame_error = 1.0 }",
            "link[1].wifi.frame_error",
            "<= 0.9",
        );
        assert!(check(
            "rate_mbps = 20",
            "wifi = { standard = \"n\", phy_mbps = 54 }"
        )
        .is_err());
    }

    #[test]
    fn wifi_snr_rate_control_and_fading() {
        let w = |body: &str| format!("wifi = {{ standard = \"a\", phy_mbps = 54, {body} }}");
        check(
            "rate_mbps = 20",
            &w("snr_db = 25, rate_control = \"minstrel\", doppler_hz = 6, rician_k_db = 3"),
        )
        .unwrap();
        check("rate_mbps = 20", &w("snr_db = 25, frame_error = 0.01")).unwrap();
        check("rate_mbps = 20", &w("rate_control = \"fixed\"")).unwrap();
        for (body, key, msg) in [
            ("snr_db = 61", "link[1].wifi.snr_db", ">= -10 and <= 60 dB"),
            ("snr_db = nan", "link[1].wifi.snr_db", "found NaN"),
            (
                "rate_control = \"minstrel\"",
                "link[1].wifi.rate_control",
                "give the link's wifi.snr_db",
            ),
            (
                "doppler_hz = 6",
                "link[1].wifi.doppler_hz",
                "give the link's wifi.snr_db",
            ),
            (
                "snr_db = 20, doppler_hz = -1",
                "link[1].wifi.doppler_hz",
                ">= 0 and <= 100 Hz",
            ),
            (
                "snr_db = 20, rician_k_db = 3",
                "link[1].wifi.rician_k_db",
                "give wifi.doppler_hz > 0 too",
            ),
            (
                "snr_db = 20, doppler_hz = 6, rician_k_db = 31",
                "link[1].wifi.rician_k_db",
                ">= -30 and <= 30 dB",
            ),
            (
                "snr_db = 20, max_rate_tries = 3",
                "link[1].wifi.max_rate_tries",
                "only with rate_control = \"minstrel\"",
            ),
            (
                "snr_db = 20, rate_control = \"minstrel\", max_rate_tries = 0",
                "link[1].wifi.max_rate_tries",
                "expected 1 to 15 tries per rate, found 0",
            ),
        ] {
            fails("rate_mbps = 20", &w(body), key, msg);
        }
        check(
            "rate_mbps = 20",
            &w("snr_db = 20, rate_control = \"minstrel\", max_rate_tries = 3"),
        )
        .unwrap();
        // An unknown rate control names its choices.
        let e = check("rate_mbps = 20", &w("rate_control = \"arf\"")).unwrap_err();
        assert!(format!("{e:?}").contains("minstrel"), "{e:?}");
    }

    #[test]
    fn base_is_valid() {
        check("", "").unwrap();
    }

    #[test]
    fn run_ranges() {
        fails(
            "duration_s = 10",
            "duration_s = 0",
            "run.duration_s",
            "expected a number > 0 and <= 1000000 s, found 0",
        );
        fails(
            "duration_s = 10",
            "duration_s = 1e7",
            "run.duration_s",
            "<= 1000000 s",
        );
        fails(
            "duration_s = 10",
            "duration_s = nan",
            "run.duration_s",
            "found NaN",
        );
        fails(
            "duration_s = 10",
            "duration_s = 10\nbin_ms = 0.5",
            "run.bin_ms",
            ">= 1 and <= run.duration_s x 1000 = 10000 ms",
        );
        fails(
            "duration_s = 10",
            "duration_s = 10\nbin_ms = 20000",
            "run.bin_ms",
            "found 20000",
        );
        check("duration_s = 10", "duration_s = 10\nbin_ms = 10000").unwrap();
    }

    #[test]
    fn link_ranges_at_their_boundaries() {
        fails(
            "rate_mbps = 10",
            "rate_mbps = -1",
            "link[0].rate_mbps",
            ">= 0.001 and <= 100000 Mbit/s, found -1",
        );
        fails(
            "rate_mbps = 10",
            "rate_mbps = 0",
            "link[0].rate_mbps",
            "found 0",
        );
        // Below 1 kbit/s a rate rounds towards 0 bit/s (issue 17: 1e-9 divided by zero).
        fails(
            "rate_mbps = 10",
            "rate_mbps = 1e-9",
            "link[0].rate_mbps",
            ">= 0.001 and <= 100000 Mbit/s, found 0.000000001",
        );
        check("rate_mbps = 10", "rate_mbps = 0.001").unwrap();
        check("rate_mbps = 10", "rate_mbps = 100000").unwrap();
        fails(
            "rate_mbps = 20",
            "rate_mbps = 100001",
            "link[1].rate_mbps",
            "found 100001",
        );
        fails(
            "delay_ms = 10",
            "delay_ms = -0.1",
            "link[0].delay_ms",
            ">= 0 and <= 10000 ms",
        );
        check("delay_ms = 10", "delay_ms = 0").unwrap();
        fails(
            "delay_ms = 10",
            "loss = 1.0",
            "link[0].loss",
            "probability >= 0 and < 1, found 1",
        );
        fails(
            "delay_ms = 10",
            "loss = -0.01",
            "link[0].loss",
            "found -0.01",
        );
        check("delay_ms = 10", "loss = 0.999").unwrap();
        fails(
            "delay_ms = 10",
            "reverse_loss = 1",
            "link[0].reverse_loss",
            "< 1",
        );
        fails(
            "delay_ms = 10",
            "buffer_packets = 0",
            "link[0].buffer_packets",
            "from 1 to 1000000 packets, found 0",
        );
        fails(
            "delay_ms = 10",
            "buffer_bytes = 1499",
            "link[0].buffer_bytes",
            "from 1500 to 1000000000",
        );
        fails(
            "delay_ms = 10",
            "buffer_bytes = 3000\nbuffer_packets = 2",
            "link[0].buffer_bytes",
            "not both",
        );
        fails(
            "delay_ms = 10",
            "reverse_buffer_packets = 0",
            "link[0].reverse_buffer_packets",
            "from 1",
        );
        fails(
            "delay_ms = 10",
            "reverse_delay_ms = 20000",
            "link[0].reverse_delay_ms",
            "<= 10000 ms",
        );
        fails(
            "delay_ms = 10",
            "reverse_rate_mbps = 0",
            "link[0].reverse_rate_mbps",
            ">= 0.001",
        );
        fails(
            "delay_ms = 10",
            "reverse_rate_mbps = 1e-7",
            "link[0].reverse_rate_mbps",
            ">= 0.001",
        );
        fails(
            "delay_ms = 10",
            "reverse_rate_mbps = 1\nreverse_trace = \"x\"",
            "link[0].reverse_rate_mbps",
            "not both",
        );
    }

    #[test]
    fn rate_or_trace() {
        fails(
            "rate_mbps = 10",
            "trace = \"x.trace\"\nrate_mbps = 10",
            "link[0].rate_mbps",
            "not both",
        );
        fails(
            "rate_mbps = 10\n",
            "",
            "link[0].rate_mbps",
            "required unless trace, carrier or wifi is given",
        );
        check("rate_mbps = 10", "trace = \"x.trace\"").unwrap();
        fails(
            "rate_mbps = 10",
            "trace = \" \"",
            "link[0].trace",
            "path of a Mahimahi trace",
        );
        fails(
            "rate_mbps = 10",
            "trace = \"x\"\nschedule = [{ t_s = 1, rate_mbps = 5 }]",
            "link[0].schedule[0].rate_mbps",
            "trace-driven",
        );
        fails(
            "rate_mbps = 10",
            "rate_mbps = 10\nschedule = [{ t_s = 1, rate_mbps = 1e-7 }]",
            "link[0].schedule[0].rate_mbps",
            ">= 0.001",
        );
    }

    #[test]
    fn ids_are_checked_and_unique() {
        fails(
            "id = \"b\"",
            "id = \"a\"",
            "link[1].id",
            "duplicate link id \"a\" (also link[0])",
        );
        fails(
            "id = \"b\"",
            "id = \"b,c\"",
            "link[1].id",
            "letters, digits, '_' or '-', found \"b,c\"",
        );
        fails("id = \"b\"", "id = \"\"", "link[1].id", "expected 1 to 64");
        fails("id = \"dl\"", "id = \"d l\"", "flow[0].id", "found \"d l\"");
        let two = BASE.to_string()
            + "\n[[flow]]\nid = \"dl\"\nkind = \"tcp\"\ncc = \"bbr\"\npaths = [\"b\"]\n";
        let e = parse_str(&two, "t.toml").unwrap().validate().unwrap_err();
        assert_eq!(e.key, "flow[1].id");
        assert!(e
            .message
            .contains("duplicate flow id \"dl\" (also flow[0])"));
    }

    #[test]
    fn outages_in_order_without_overlap() {
        let o = |s: &str| format!("delay_ms = 10\noutages = [{s}]");
        check(
            "delay_ms = 10",
            &o("{ start_s = 1, duration_ms = 500 }, { start_s = 1.5, duration_ms = 5 }"),
        )
        .unwrap();
        fails(
            "delay_ms = 10",
            &o("{ start_s = 1, duration_ms = 500 }, { start_s = 1.4, duration_ms = 5 }"),
            "link[0].outages[1].start_s",
            "expected >= 1.5 s (the end of outages[0]), found 1.4",
        );
        fails(
            "delay_ms = 10",
            &o("{ start_s = -1, duration_ms = 5 }"),
            "link[0].outages[0].start_s",
            ">= 0",
        );
        fails(
            "delay_ms = 10",
            &o("{ start_s = 1, duration_ms = 0 }"),
            "link[0].outages[0].duration_ms",
            "> 0 and <= 3600000 ms",
        );
    }

    #[test]
    fn schedule_strictly_increasing_and_not_empty() {
        let s = |x: &str| format!("delay_ms = 10\nschedule = [{x}]");
        check(
            "delay_ms = 10",
            &s("{ t_s = 1, rate_mbps = 5 }, { t_s = 2, loss = 0.1 }"),
        )
        .unwrap();
        fails(
            "delay_ms = 10",
            &s("{ t_s = 2, rate_mbps = 5 }, { t_s = 1, rate_mbps = 6 }"),
            "link[0].schedule[1].t_s",
            "strictly increasing time order: expected > 2 s (schedule[0].t_s), found 1",
        );
        fails(
            "delay_ms = 10",
            &s("{ t_s = 2, rate_mbps = 5 }, { t_s = 2, rate_mbps = 6 }"),
            "link[0].schedule[1].t_s",
            "found 2",
        );
        fails(
            "delay_ms = 10",
            &s("{ t_s = 2 }"),
            "link[0].schedule[0].t_s",
            "must set rate_mbps, delay_ms or loss",
        );
        fails(
            "delay_ms = 10",
            &s("{ t_s = 2, loss = 1 }"),
            "link[0].schedule[0].loss",
            "< 1",
        );
        fails(
            "delay_ms = 10",
            &s("{ t_s = 2, delay_ms = -5 }"),
            "link[0].schedule[0].delay_ms",
            ">= 0",
        );
    }

    #[test]
    fn handoffs_and_tcp_fs() {
        let p = "paths = [\"a\"]";
        let two = |rest: &str| format!("paths = [\"a\", \"b\"]\n{rest}");
        check(
            p,
            &two("handoffs = [{ t_s = 5.0, to = \"b\", overlap_ms = 500.0 }]"),
        )
        .unwrap();
        check(
            p,
            &two("handoffs = [{ t_s = 5.0, to = \"b\", mode = \"hard\", gap_ms = 100.0 }]\nmechanisms = [\"tcp-fs\"]\ntcp_fs = { detect_ms = 20.0 }"),
        )
        .unwrap();
        fails(
            p,
            &two("handoffs = [{ t_s = 5.0, to = \"c\" }]"),
            "flow[0].handoffs[0].to",
            "\"c\" is not one of this flow's paths (a, b)",
        );
        fails(
            p,
            &two("handoffs = [{ t_s = 5.0, to = \"a\" }]"),
            "flow[0].handoffs[0].to",
            "already on \"a\"",
        );
        fails(
            p,
            &two("handoffs = [{ t_s = 5.0, to = \"b\", duration_ms = 1000.0, overlap_ms = 1000.0 }, { t_s = 6.0, to = \"a\" }]"),
            "flow[0].handoffs[1].t_s",
            "releases its old link (7 s)",
        );
        fails(
            p,
            &two("handoffs = [{ t_s = 5.0, to = \"b\", gap_ms = 10.0 }]"),
            "flow[0].handoffs[0].gap_ms",
            "only for mode = \"hard\"",
        );
        fails(
            p,
            &two("handoffs = [{ t_s = 5.0, to = \"b\", mode = \"hard\", duration_ms = 10.0 }]"),
            "flow[0].handoffs[0].duration_ms",
            "only for mode = \"soft\"",
        );
        fails(
            p,
            &two("handoffs = [{ t_s = 11.0, to = \"b\" }]"),
            "flow[0].handoffs[0].t_s",
            "<= 10 s, found 11",
        );
        fails(
            p,
            "paths = [\"a\"]\nmechanisms = [\"tcp-fs\"]",
            "flow[0].mechanisms",
            "acts at vertical handoffs",
        );
        fails(
            p,
            &two("handoffs = [{ t_s = 5.0, to = \"b\" }]\ntcp_fs = { k = 4.0 }"),
            "flow[0].tcp_fs",
            "only with mechanisms = [\"tcp-fs\"]",
        );
        fails(
            p,
            &two("handoffs = [{ t_s = 5.0, to = \"b\" }]\nmechanisms = [\"tcp-fs\"]\ntcp_fs = { alpha = 0.0 }"),
            "flow[0].tcp_fs.alpha",
            "expected a number > 0",
        );
        fails(
            p,
            &two("handoffs = [{ t_s = 5.0, to = \"b\" }]\n[[flow]]\nid = \"x\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"b\"]"),
            "flow[0].paths[1]",
            "also used by flow \"x\"",
        );
    }

    #[test]
    fn flows_reference_links_and_fit_the_run() {
        fails(
            "paths = [\"a\"]",
            "paths = [\"z\"]",
            "flow[0].paths[0]",
            "unknown link \"z\"; expected one of the [[link]] ids: \"a\", \"b\"",
        );
        fails(
            "paths = [\"a\"]",
            "paths = [\"a\", \"b\"]",
            "flow[0].paths",
            "exactly one link (more only with handoffs), found 2",
        );
        fails("paths = [\"a\"]", "paths = []", "flow[0].paths", "found 0");
        fails(
            "cc = \"newreno\"",
            "cc = \"reno\"",
            "flow[0].cc",
            "expected one of newreno, cubic, bbr",
        );
        fails(
            "kind = \"tcp\"",
            "kind = \"mptcp\"",
            "flow[0].cc",
            "for an mptcp flow; expected one of lia, olia, balia, or uncoupled-<newreno|cubic|bbr>",
        );
        check(
            "kind = \"tcp\"\ncc = \"newreno\"",
            "kind = \"mptcp\"\ncc = \"uncoupled-newreno\"",
        )
        .unwrap();
        fails(
            "paths = [\"a\"]",
            "paths = [\"a\"]\nstart_s = 10",
            "flow[0].start_s",
            "< run.duration_s = 10 s, found 10",
        );
        check("paths = [\"a\"]", "paths = [\"a\"]\nstart_s = 9.99").unwrap();
        fails(
            "paths = [\"a\"]",
            "paths = [\"a\"]\nstart_s = -1",
            "flow[0].start_s",
            ">= 0",
        );
    }

    /// BASE plus a udp flow "x" over link "b" with `keys` (its udp table by default).
    fn udp(keys: &str) -> Result<(), (String, String)> {
        let keys = if keys.contains("udp =") || keys.contains("[flow.udp]") {
            keys.to_string()
        } else {
            format!("udp = {{ max_mbps = 23.0, mean_mbps = 16.0 }}\n{keys}")
        };
        check(
            "paths = [\"a\"]\n",
            &format!(
                "paths = [\"a\"]\n\n[[flow]]\nid = \"x\"\nkind = \"udp\"\npaths = [\"b\"]\n{keys}\n"
            ),
        )
    }

    fn udp_fails(keys: &str, key: &str, msg: &str) {
        match udp(keys) {
            Ok(()) => panic!("{keys:?} accepted"),
            Err((k, m)) => {
                assert_eq!(k, key, "{m}");
                assert!(m.contains(msg), "message {m:?} lacks {msg:?}");
            }
        }
    }

    #[test]
    fn udp_flows_and_their_source() {
        udp("").unwrap();
        udp("start_s = 2.5\nstop_s = 10").unwrap();
        udp("udp = { process = \"onoff\", max_mbps = 23.0, mean_mbps = 16.0, mean_on_ms = 200.0, packet_bytes = 1400 }").unwrap();
        udp("udp = { max_mbps = 16.0, mean_mbps = 16.0 }").unwrap();
        udp("udp = { process = \"cbr\", mean_mbps = 11.2 }").unwrap();
        udp("udp = { process = \"cbr\", mean_mbps = 11.2, max_mbps = 11.2 }").unwrap();
        udp("udp = { process = \"cbr\", mean_mbps = 1, packet_bytes = 28 }").unwrap();
        udp("udp = { process = \"cbr\", mean_mbps = 1, packet_bytes = 65535 }").unwrap();
        udp("[flow.udp]\nprocess = \"cbr\"\nmean_mbps = 2").unwrap();
        udp_fails(
            "udp = { max_mbps = 23.0 }",
            "flow[1].udp.mean_mbps",
            "missing: the source's long-run mean rate",
        );
        udp_fails(
            "udp = { max_mbps = 23.0, mean_mbps = 0 }",
            "flow[1].udp.mean_mbps",
            ">= 0.001 and <= 100000 Mbit/s, found 0",
        );
        udp_fails(
            "udp = { mean_mbps = 16.0 }",
            "flow[1].udp.max_mbps",
            "an on/off source needs max_mbps",
        );
        udp_fails(
            "udp = { max_mbps = 15.0, mean_mbps = 16.0 }",
            "flow[1].udp.max_mbps",
            "expected a number >= mean_mbps = 16 Mbit/s (the rate while on is at least the mean), found 15",
        );
        udp_fails(
            "udp = { max_mbps = 1e9, mean_mbps = 16.0 }",
            "flow[1].udp.max_mbps",
            "<= 100000 Mbit/s",
        );
        udp_fails(
            "udp = { max_mbps = 23.0, mean_mbps = 16.0, mean_on_ms = 0 }",
            "flow[1].udp.mean_on_ms",
            "expected a number >= 0.001 and <= 3600000 ms, found 0",
        );
        udp_fails(
            "udp = { max_mbps = 23.0, mean_mbps = 16.0, mean_on_ms = nan }",
            "flow[1].udp.mean_on_ms",
            "found NaN",
        );
        // A cbr source takes an on/off source's keys (unused), checked alike: process = "cbr"
        // may be set over an on/off source.
        udp("udp = { process = \"cbr\", mean_mbps = 16.0, max_mbps = 23.0, mean_on_ms = 100 }")
            .unwrap();
        udp_fails(
            "udp = { process = \"cbr\", mean_mbps = 16.0, max_mbps = 15.0 }",
            "flow[1].udp.max_mbps",
            "expected a number >= mean_mbps = 16 Mbit/s",
        );
        udp_fails(
            "udp = { process = \"cbr\", mean_mbps = 16.0, mean_on_ms = -1 }",
            "flow[1].udp.mean_on_ms",
            "expected a number >= 0.001",
        );
        udp_fails(
            "udp = { max_mbps = 23.0, mean_mbps = 16.0, packet_bytes = 27 }",
            "flow[1].udp.packet_bytes",
            "expected an integer from 28 to 65535 bytes on the wire",
        );
        udp_fails(
            "udp = { max_mbps = 23.0, mean_mbps = 16.0, packet_bytes = 65536 }",
            "flow[1].udp.packet_bytes",
            "found 65536",
        );
        // Unknown keys and processes are serde's errors, with their line.
        udp_fails(
            "udp = { max_mbps = 23.0, mean_mbps = 16.0, burst = 3 }",
            "flow[1].udp.burst",
            "unknown field `burst`",
        );
        udp_fails(
            "udp = { process = \"pareto\", max_mbps = 23.0, mean_mbps = 16.0 }",
            "flow[1].udp.process",
            "unknown variant `pareto`, expected one of `onoff`, `cbr`, `poisson`",
        );
        udp_fails("udp = 5", "flow[1].udp", "expected a table");
    }

    #[test]
    fn udp_flow_keys() {
        udp_fails(
            "stop_s = 3\nstart_s = 3",
            "flow[1].stop_s",
            "> start_s = 3 s",
        );
        udp_fails(
            "stop_s = 10.5",
            "flow[1].stop_s",
            "expected a number > start_s = 0 s and <= run.duration_s = 10 s, found 10.5",
        );
        udp_fails("start_s = 10", "flow[1].start_s", "< run.duration_s = 10 s");
        match check(
            "paths = [\"a\"]\n",
            "paths = [\"a\"]\n\n[[flow]]\nid = \"x\"\nkind = \"udp\"\npaths = [\"b\"]\n",
        ) {
            Err((k, m)) => {
                assert_eq!(k, "flow[1].udp");
                assert!(m.contains("missing: a udp flow needs its source"), "{m}");
            }
            Ok(()) => panic!("a udp flow without udp accepted"),
        }
        let two = |p: &str| {
            check(
                "paths = [\"a\"]\n",
                &format!("paths = [\"a\"]\n\n[[flow]]\nid = \"x\"\nkind = \"udp\"\npaths = {p}\nudp = {{ process = \"cbr\", mean_mbps = 1 }}\n"),
            )
            .unwrap_err()
        };
        let (k, m) = two("[\"a\", \"b\"]");
        assert_eq!(k, "flow[1].paths");
        assert!(
            m.contains("a udp flow takes exactly one link or bond"),
            "{m}"
        );
        assert!(m.contains("found 2"), "{m}");
        assert_eq!(two("[]").0, "flow[1].paths");
        assert_eq!(two("[\"z\"]").0, "flow[1].paths[0]");
        // TCP's keys are refused on a udp flow, each by its name.
        udp_fails(
            "cc = \"cubic\"",
            "flow[1].cc",
            "a udp flow has no congestion control: remove cc",
        );
        for (key, value) in [
            ("bytes", "1000"),
            ("tcp", "{ mss_bytes = 1000 }"),
            ("scheduler", "\"minrtt\""),
            ("receive_buffer_packets", "10"),
            ("send_buffer_packets", "10"),
            ("backup_paths", "[\"b\"]"),
            ("prio_changes", "[{ t_s = 1, path = \"b\", backup = true }]"),
            ("reinject", "\"stale\""),
            ("stale_loss_cnt", "3"),
            ("receive_buffer_autotune", "true"),
            ("mechanisms", "[\"pha\"]"),
            ("handover_table", "\"t.json\""),
            ("handover_table_learn_runs", "5"),
            ("gps_error_m", "5"),
            ("phad_lead_ms", "5"),
            ("phad_back_ms", "5"),
            ("handoffs", "[{ t_s = 1, to = \"a\" }]"),
            ("tcp_fs", "{ k = 4.0 }"),
            ("bloat_monitor", "{ retransmit = false }"),
        ] {
            udp_fails(
                &format!("{key} = {value}"),
                &format!("flow[1].{key}"),
                "not for kind = \"udp\" flows (a udp flow takes id, kind, paths, start_s, stop_s and udp)",
            );
        }
        // ... and udp's keys on tcp and mptcp flows.
        for kind in ["tcp", "mptcp"] {
            let cc = if kind == "tcp" { "newreno" } else { "lia" };
            for (key, value) in [
                ("udp", "{ process = \"cbr\", mean_mbps = 1 }"),
                ("stop_s", "5"),
            ] {
                fails(
                    "kind = \"tcp\"\ncc = \"newreno\"",
                    &format!("kind = \"{kind}\"\ncc = \"{cc}\"\n{key} = {value}"),
                    &format!("flow[0].{key}"),
                    "only for kind = \"udp\" flows",
                );
            }
        }
        // cc may be left out only on udp flows.
        fails(
            "cc = \"newreno\"\n",
            "",
            "flow[0].cc",
            "missing: a tcp flow needs a congestion control, one of newreno, cubic, bbr",
        );
        fails(
            "kind = \"tcp\"\ncc = \"newreno\"\n",
            "kind = \"mptcp\"\n",
            "flow[0].cc",
            "missing: a mptcp flow needs a congestion control, one of lia, olia, balia, or uncoupled-<newreno|cubic|bbr>",
        );
        // A byte buffer holds one of its packets.
        let text = |bytes: u32| {
            BASE.replacen("rate_mbps = 20", "rate_mbps = 20\nbuffer_bytes = 2000", 1)
                + &format!("\n[[flow]]\nid = \"x\"\nkind = \"udp\"\npaths = [\"b\"]\nudp = {{ process = \"cbr\", mean_mbps = 1, packet_bytes = {bytes} }}\n")
        };
        parse_str(&text(2000), "t.toml")
            .unwrap()
            .validate()
            .unwrap();
        let e = parse_str(&text(2001), "t.toml")
            .unwrap()
            .validate()
            .unwrap_err();
        assert_eq!(e.key, "link[1].buffer_bytes");
        assert!(
            e.message
                .contains("one packet of flow \"x\" (udp.packet_bytes = 2001 bytes), found 2000"),
            "{}",
            e.message
        );
    }

    #[test]
    fn mechanisms_by_kind() {
        let m = |kind: &str, cc: &str, mech: &str| {
            check(
                "kind = \"tcp\"\ncc = \"newreno\"",
                &format!("kind = \"{kind}\"\ncc = \"{cc}\"\nmechanisms = [\"{mech}\"]"),
            )
        };
        // bloat-monitor: an mptcp mechanism without keys of its own.
        m("mptcp", "lia", "bloat-monitor").unwrap();
        let (k, msg) = m("tcp", "cubic", "bloat-monitor").unwrap_err();
        assert_eq!(k, "flow[0].mechanisms[0]");
        assert!(
            msg.contains("\"bloat-monitor\" is for kind = \"mptcp\" flows"),
            "{msg}"
        );
        let (_, msg) = m("mptcp", "lia", "bloat").unwrap_err();
        assert!(
            msg.contains("expected one of pha, pha-d, tcp-fs, bloat-monitor"),
            "{msg}"
        );
    }

    #[test]
    fn bloat_monitor_options_and_a_fixed_send_buffer() {
        let mp = "kind = \"mptcp\"\ncc = \"lia\"";
        check(
            "kind = \"tcp\"\ncc = \"newreno\"",
            &format!(
                "{mp}\nmechanisms = [\"bloat-monitor\"]\nbloat_monitor = {{ retransmit = false }}"
            ),
        )
        .unwrap();
        fails(
            "kind = \"tcp\"\ncc = \"newreno\"",
            &format!("{mp}\nbloat_monitor = {{ retransmit = false }}"),
            "flow[0].bloat_monitor",
            "only with mechanisms = [\"bloat-monitor\"]",
        );
        // The suspicion's moving average: a time constant > 0 s.
        let bm =
            |x: &str| format!("{mp}\nmechanisms = [\"bloat-monitor\"]\nbloat_monitor = {{ {x} }}");
        check("kind = \"tcp\"\ncc = \"newreno\"", &bm("average_s = 2.5")).unwrap();
        for bad in ["average_s = 0", "average_s = -1", "average_s = 4000"] {
            fails(
                "kind = \"tcp\"\ncc = \"newreno\"",
                &bm(bad),
                "flow[0].bloat_monitor.average_s",
                "expected a number > 0 and <= 3600 s (the moving average's time constant",
            );
        }
        // Each subflow's own window (Kheirkhah's ns-3 MPTCP): at least one segment, mptcp only.
        check(
            "kind = \"tcp\"\ncc = \"newreno\"",
            &format!("{mp}\nsubflow_window_bytes = 65535"),
        )
        .unwrap();
        fails(
            "kind = \"tcp\"\ncc = \"newreno\"",
            &format!("{mp}\nsubflow_window_bytes = 1000"),
            "flow[0].subflow_window_bytes",
            "expected an integer from 1448 to 1073741824 bytes (at least one segment, mss_bytes), found 1000",
        );
        fails(
            "cc = \"newreno\"",
            "cc = \"newreno\"\nsubflow_window_bytes = 65535",
            "flow[0].subflow_window_bytes",
            "only for kind = \"mptcp\" flows",
        );
        let t = |x: &str| format!("[tcp]\n{x}\n\n[run]");
        check("[run]", &t("send_buffer_bytes = 131072")).unwrap();
        check("[run]", &t("max_reordering = 127")).unwrap();
        fails(
            "[run]",
            &t("max_reordering = 2"),
            "tcp.max_reordering",
            "expected an integer from 3 to 10000 packets, found 2",
        );
        fails(
            "[run]",
            &t("send_buffer_bytes = 999"),
            "tcp.send_buffer_bytes",
            "from 1000",
        );
        fails(
            "[run]",
            &t("mss_bytes = 1400\nsend_buffer_bytes = 1000"),
            "tcp.send_buffer_bytes",
            "at least one segment (mss_bytes = 1400 bytes), found 1000",
        );
    }

    #[test]
    fn no_links_or_no_flows() {
        let e = parse_str("[run]\nduration_s = 1\n", "t.toml")
            .unwrap()
            .validate()
            .unwrap_err();
        assert_eq!(e.key, "link");
        let text = BASE.split("[[flow]]").next().unwrap();
        let e = parse_str(text, "t.toml").unwrap().validate().unwrap_err();
        assert_eq!(e.key, "flow");
    }

    #[test]
    fn tcp_option_ranges_and_layering() {
        let t = |x: &str| format!("[tcp]\n{x}\n\n[run]");
        fails(
            "[run]",
            &t("mss_bytes = 499"),
            "tcp.mss_bytes",
            "from 500 to 9000 bytes, found 499",
        );
        check("[run]", &t("mss_bytes = 9000")).unwrap();
        fails(
            "[run]",
            &t("initial_window = 0"),
            "tcp.initial_window",
            "from 1 to 1000 segments",
        );
        fails("[run]", &t("min_rto_ms = 0"), "tcp.min_rto_ms", "> 0");
        fails(
            "[run]",
            &t("delack_timeout_ms = 1001"),
            "tcp.delack_timeout_ms",
            "<= 1000 ms",
        );
        fails(
            "[run]",
            &t("header_bytes = 201"),
            "tcp.header_bytes",
            "from 0 to 200",
        );
        fails(
            "[run]",
            &t("ack_bytes = 0"),
            "tcp.ack_bytes",
            "from 1 to 200",
        );
        fails(
            "[run]",
            &t("receive_window_bytes = 1073741825"),
            "tcp.receive_window_bytes",
            "to 1073741824",
        );
        // Constraints between options hold for the layered result.
        fails(
            "[run]",
            &t("min_rto_ms = 300\nmax_rto_ms = 200"),
            "tcp.min_rto_ms",
            "must not exceed max_rto_ms (200 ms)",
        );
        fails(
            "[run]",
            &t("max_rto_ms = 500"),
            "tcp.initial_rto_ms",
            "initial_rto_ms (1000 ms) must not exceed",
        );
        fails(
            "paths = [\"a\"]",
            "paths = [\"a\"]\ntcp = { max_rto_ms = 100 }",
            "flow[0].tcp.min_rto_ms",
            "min_rto_ms (200 ms)",
        );
        fails(
            "paths = [\"a\"]",
            "paths = [\"a\"]\ntcp = { receive_window_bytes = 2000 }",
            "flow[0].tcp.receive_window_bytes",
            "2 x mss_bytes = 2896 bytes",
        );
        fails(
            "paths = [\"a\"]",
            "paths = [\"a\"]\ntcp = { mss_bytes = 10000 }",
            "flow[0].tcp.mss_bytes",
            "found 10000",
        );
        // A byte buffer holds at least one packet of each flow over it: 1448 + 52 = 1500 fits.
        check("delay_ms = 10", "delay_ms = 10\nbuffer_bytes = 1500").unwrap();
        let text = |bytes: u32| {
            BASE.replacen(
                "delay_ms = 10",
                &format!("delay_ms = 10\nbuffer_bytes = {bytes}"),
                1,
            )
            .replacen(
                "paths = [\"a\"]",
                "paths = [\"a\"]\ntcp = { mss_bytes = 2000 }",
                1,
            )
        };
        parse_str(&text(2052), "t.toml")
            .unwrap()
            .validate()
            .unwrap();
        let e = parse_str(&text(2051), "t.toml")
            .unwrap()
            .validate()
            .unwrap_err();
        assert_eq!(e.key, "link[0].buffer_bytes");
        assert!(
            e.message.contains(
                "one packet of flow \"dl\" (mss_bytes + header_bytes = 2052 bytes), found 2051"
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn balancers_access_and_proxy() {
        let flow = "[[flow]]\nid = \"dl\"\nkind = \"tcp\"\ncc = \"newreno\"\npaths = [\"a\"]";
        // BASE's links, an in-car link "lan", the tables `tables` and the flow "dl" with `keys`.
        let cars = |tables: &str, keys: &str| {
            format!(
                "[[link]]\nid = \"lan\"\nrate_mbps = 1000\n\n{tables}\n[[flow]]\nid = \"dl\"\n{keys}"
            )
        };
        let lb = |keys: &str| format!("[[balancer]]\nid = \"lb\"\n{keys}\n");
        let two = lb("links = [\"a\", \"b\"]");
        let tcp = |rest: &str| format!("kind = \"tcp\"\ncc = \"cubic\"\n{rest}");
        let mptcp = |rest: &str| format!("kind = \"mptcp\"\ncc = \"lia\"\n{rest}");
        // A car's tcp flow names a balancer as its only path, with or without an in-car link.
        check(flow, &cars(&two, &tcp("paths = [\"lb\"]"))).unwrap();
        check(
            flow,
            &cars(&two, &tcp("paths = [\"lb\"]\naccess = \"lan\"")),
        )
        .unwrap();
        for policy in ["round-robin", "least-connection", "bandwidth", "ip-hash"] {
            for failover in ["reconnect", "keep-address"] {
                let b = lb(&format!(
                    "links = [\"a\", \"b\"]\npolicy = \"{policy}\"\nfailover = \"{failover}\""
                ));
                check(flow, &cars(&b, &tcp("paths = [\"lb\"]"))).unwrap();
            }
        }
        // The bandwidth policy weighs the links by their rate: each has rate_mbps.
        let wifi = "[[link]]\nid = \"w\"\nwifi = { standard = \"g\", phy_mbps = 36 }\n\n";
        let policy = |p: &str| {
            format!("{wifi}[[balancer]]\nid = \"lb\"\nlinks = [\"a\", \"w\"]\npolicy = \"{p}\"\n")
        };
        check(
            flow,
            &cars(&policy("round-robin"), &tcp("paths = [\"lb\"]")),
        )
        .unwrap();
        fails(
            flow,
            &cars(&policy("bandwidth"), &tcp("paths = [\"lb\"]")),
            "balancer[0].links[1]",
            "policy = \"bandwidth\" weighs the links by their rate_mbps, and link \"w\" has none",
        );
        // One link is enough; detect_ms from 0 to an hour.
        check(
            flow,
            &cars(&lb("links = [\"b\"]"), &tcp("paths = [\"lb\"]")),
        )
        .unwrap();
        for d in ["0", "3600000"] {
            let b = lb(&format!("links = [\"a\", \"b\"]\ndetect_ms = {d}"));
            check(flow, &cars(&b, &tcp("paths = [\"lb\"]"))).unwrap();
        }
        for (d, msg) in [
            ("-1", ">= 0"),
            ("3600000.5", "<= 3600000 ms, found 3600000.5"),
        ] {
            fails(
                flow,
                &cars(
                    &lb(&format!("links = [\"a\", \"b\"]\ndetect_ms = {d}")),
                    &tcp("paths = [\"lb\"]"),
                ),
                "balancer[0].detect_ms",
                msg,
            );
        }
        fails(
            flow,
            &cars(
                &lb("links = [\"a\"]\npolicy = \"random\""),
                &tcp("paths = [\"lb\"]"),
            ),
            "balancer[0].policy",
            "unknown variant `random`",
        );
        fails(
            flow,
            &cars(
                &lb("links = [\"a\"]\nfailover = \"drop\""),
                &tcp("paths = [\"lb\"]"),
            ),
            "balancer[0].failover",
            "unknown variant `drop`",
        );
        // The balancer's links.
        fails(
            flow,
            &cars(&lb("links = []"), &tcp("paths = [\"lb\"]")),
            "balancer[0].links",
            "expected at least one link id",
        );
        fails(
            flow,
            &cars(&lb("links = [\"a\", \"x\"]"), &tcp("paths = [\"lb\"]")),
            "balancer[0].links[1]",
            "unknown link \"x\"; expected one of the [[link]] ids: \"a\", \"b\", \"lan\"",
        );
        fails(
            flow,
            &cars(&lb("links = [\"a\", \"a\"]"), &tcp("paths = [\"lb\"]")),
            "balancer[0].links[1]",
            "link \"a\" is listed twice",
        );
        // Its id: well formed, unique among balancers, links and bonds.
        fails(
            flow,
            &cars(
                "[[balancer]]\nid = \"l b\"\nlinks = [\"a\"]\n",
                &tcp("paths = [\"a\"]"),
            ),
            "balancer[0].id",
            "letters, digits, '_' or '-', found \"l b\"",
        );
        fails(
            flow,
            &cars(&format!("{two}\n{two}"), &tcp("paths = [\"lb\"]")),
            "balancer[1].id",
            "duplicate balancer id \"lb\" (also balancer[0])",
        );
        fails(
            flow,
            &cars(
                "[[balancer]]\nid = \"b\"\nlinks = [\"a\"]\n",
                &tcp("paths = [\"a\"]"),
            ),
            "balancer[0].id",
            "\"b\" is also the id of link[1]: a flow's paths name links, bonds and balancers alike",
        );
        fails(
            flow,
            &cars(
                "[[bond]]\nid = \"bd\"\nmembers = [\"a\", \"b\"]\n\n[[balancer]]\nid = \"bd\"\nlinks = [\"a\"]\n",
                &tcp("paths = [\"a\"]"),
            ),
            "balancer[0].id",
            "\"bd\" is also the id of bond[0]",
        );
        // Only a tcp flow without handoffs takes a balancer, as its only path.
        let only =
            "\"lb\" is a balancer: only a tcp flow without handoffs takes one, as its only path";
        fails(
            flow,
            &cars(&two, &mptcp("paths = [\"lb\"]")),
            "flow[0].paths[0]",
            only,
        );
        fails(
            flow,
            &cars(&two, &mptcp("paths = [\"a\", \"lb\"]")),
            "flow[0].paths[1]",
            only,
        );
        fails(
            flow,
            &cars(
                &two,
                &tcp("paths = [\"lb\", \"lan\"]\nhandoffs = [{ t_s = 5.0, to = \"lan\" }]"),
            ),
            "flow[0].paths[0]",
            only,
        );
        fails(
            flow,
            &cars(
                &two,
                "kind = \"udp\"\npaths = [\"lb\"]\nudp = { process = \"cbr\", mean_mbps = 5 }",
            ),
            "flow[0].paths[0]",
            only,
        );
        // An unknown path lists the balancers' ids with the links' (and the bonds').
        fails(
            flow,
            &cars(&two, &tcp("paths = [\"zz\"]")),
            "flow[0].paths[0]",
            "unknown link \"zz\"; expected one of the [[link]] or [[balancer]] ids: \"a\", \"b\", \"lan\", \"lb\"",
        );
        fails(
            flow,
            &cars(
                &format!("[[bond]]\nid = \"bd\"\nmembers = [\"a\"]\n\n{two}"),
                &tcp("paths = [\"zz\"]"),
            ),
            "flow[0].paths[0]",
            "expected one of the [[link]], [[bond]] or [[balancer]] ids: \"a\", \"b\", \"lan\", \"bd\", \"lb\"",
        );

        // The in-car link and the proxy: an mptcp flow over both carriers, relayed onto "lan".
        let proxy = |p: &str| mptcp(&format!("paths = [\"a\", \"b\"]\naccess = \"lan\"\n{p}"));
        check(flow, &cars("", &proxy(""))).unwrap();
        check(
            flow,
            &cars(
                "",
                &proxy("proxy = { buffer_bytes = 1024, server_mptcp = false, access_cc = \"bbr\", verify = true }"),
            ),
        )
        .unwrap();
        check(
            flow,
            &cars("", &proxy("proxy = { buffer_bytes = 1073741824 }")),
        )
        .unwrap();
        check(flow, &cars("", &tcp("paths = [\"a\"]\naccess = \"lan\""))).unwrap();
        for (b, found) in [("1023", "found 1023"), ("1073741825", "found 1073741825")] {
            fails(
                flow,
                &cars("", &proxy(&format!("proxy = {{ buffer_bytes = {b} }}"))),
                "flow[0].proxy.buffer_bytes",
                &format!("expected an integer from 1024 to 1073741824 bytes, {found}"),
            );
        }
        fails(
            flow,
            &cars("", &proxy("proxy = { access_cc = \"vegas\" }")),
            "flow[0].proxy.access_cc",
            "unknown congestion control \"vegas\"; expected one of newreno, cubic, bbr",
        );
        fails(
            flow,
            &cars("", &proxy("proxy = { buffer = 4096 }")),
            "flow[0].proxy.buffer",
            "unknown field `buffer`",
        );
        fails(
            flow,
            &cars(
                "",
                &mptcp("paths = [\"a\", \"b\"]\nproxy = { verify = true }"),
            ),
            "flow[0].proxy",
            "a proxy relays onto the in-car link: give access = \"<link id>\" too",
        );
        fails(
            flow,
            &cars(
                "",
                &tcp("paths = [\"a\"]\naccess = \"lan\"\nproxy = { verify = true }"),
            ),
            "flow[0].proxy",
            "only for kind = \"mptcp\" flows",
        );
        fails(
            flow,
            &cars(
                "",
                "kind = \"udp\"\npaths = [\"a\"]\naccess = \"lan\"\nudp = { process = \"cbr\", mean_mbps = 5 }",
            ),
            "flow[0].access",
            "only for tcp and mptcp flows",
        );
        for (tables, paths, access) in [
            ("", "[\"a\", \"b\"]", "x"),
            // A balancer is not a link.
            (two.as_str(), "[\"a\", \"b\"]", "lb"),
        ] {
            fails(
                flow,
                &cars(tables, &mptcp(&format!("paths = {paths}\naccess = \"{access}\""))),
                "flow[0].access",
                &format!(
                    "unknown link \"{access}\"; expected one of the [[link]] ids: \"a\", \"b\", \"lan\""
                ),
            );
        }
        // The in-car link is none of the links the flow's paths cross (links, bonds' members,
        // balancers' links).
        let own = "is also one of the flow's paths: the in-car link is a hop of its own";
        for (tables, keys, access) in [
            ("", mptcp("paths = [\"a\", \"b\"]\naccess = \"b\""), "b"),
            ("", tcp("paths = [\"a\"]\naccess = \"a\""), "a"),
            (two.as_str(), tcp("paths = [\"lb\"]\naccess = \"b\""), "b"),
            (
                "[[bond]]\nid = \"bd\"\nmembers = [\"a\", \"lan\"]\n",
                tcp("paths = [\"bd\"]\naccess = \"lan\""),
                "lan",
            ),
        ] {
            fails(
                flow,
                &cars(tables, &keys),
                "flow[0].access",
                &format!("link \"{access}\" {own}"),
            );
        }
        fails(
            flow,
            &cars(
                "",
                &tcp("paths = [\"a\", \"b\"]\naccess = \"lan\"\nhandoffs = [{ t_s = 5.0, to = \"b\" }]"),
            ),
            "flow[0].access",
            "not with handoffs",
        );
    }

    #[test]
    fn delay_range_and_periodic_outages() {
        // Link "b" (no delay_ms) with a delay range.
        let range = |r: &str| format!("rate_mbps = 20\ndelay_range = {{ {r} }}");
        for r in [
            "min_ms = 45, max_ms = 75",
            "min_ms = 0, max_ms = 0",
            "min_ms = 50, max_ms = 50, every_ms = 1",
            "min_ms = 0, max_ms = 10000, every_ms = 3600000",
        ] {
            check("rate_mbps = 20", &range(r)).unwrap();
        }
        // A schedule step may still set the delay (until the range's next draw).
        check(
            "rate_mbps = 20",
            &format!(
                "{}\nschedule = [{{ t_s = 2.5, delay_ms = 5 }}]",
                range("min_ms = 45, max_ms = 75")
            ),
        )
        .unwrap();
        fails(
            "delay_ms = 10",
            "delay_ms = 10\ndelay_range = { min_ms = 45, max_ms = 75 }",
            "link[0].delay_ms",
            "give either delay_ms or delay_range, not both",
        );
        for (r, key, msg) in [
            (
                "min_ms = -1, max_ms = 75",
                "min_ms",
                "expected a number >= 0 and <= 10000 ms, found -1",
            ),
            (
                "min_ms = 10001, max_ms = 10002",
                "min_ms",
                "<= 10000 ms, found 10001",
            ),
            (
                "min_ms = 75, max_ms = 45",
                "max_ms",
                "expected a number >= 75 and <= 10000 ms (at least min_ms), found 45",
            ),
            ("min_ms = 45, max_ms = 10000.5", "max_ms", "found 10000.5"),
            (
                "min_ms = 45, max_ms = 75, every_ms = 0.5",
                "every_ms",
                "expected a number >= 1 and <= 3600000 ms, found 0.5",
            ),
            (
                "min_ms = 45, max_ms = 75, every_ms = 3600001",
                "every_ms",
                "found 3600001",
            ),
        ] {
            fails(
                "rate_mbps = 20",
                &range(r),
                &format!("link[1].delay_range.{key}"),
                msg,
            );
        }
        // (The key of a field missing from an inline table is not checked here: the parser's
        // locator names it without the inline table's key.)
        let (_, m) = check("rate_mbps = 20", &range("min_ms = 45")).unwrap_err();
        assert!(m.contains("missing field `max_ms`"), "{m}");
        fails(
            "rate_mbps = 20",
            &range("min_ms = 45, max_ms = 75, mean_ms = 60"),
            "link[1].delay_range.mean_ms",
            "unknown field `mean_ms`",
        );

        // Periodic outages on link "a" (run.duration_s = 10).
        let o = |s: &str| format!("delay_ms = 10\noutages = [{s}]");
        for s in [
            "{ start_s = 1, duration_ms = 1000, every_s = 2 }",
            // The period only just exceeds the outage.
            "{ start_s = 0, duration_ms = 1000, every_s = 1.001 }",
            "{ start_s = 0, duration_ms = 1000, every_s = 1000000 }",
            // Two series that touch without overlapping.
            "{ start_s = 0, duration_ms = 500, every_s = 1 }, { start_s = 0.5, duration_ms = 500, every_s = 1 }",
            // A single outage between two repetitions.
            "{ start_s = 1, duration_ms = 500, every_s = 3 }, { start_s = 2, duration_ms = 1000 }",
            // Repetitions stop at the end of the run: those at 10 and 10.2 s would overlap.
            "{ start_s = 0, duration_ms = 500, every_s = 5 }, { start_s = 0.5, duration_ms = 100, every_s = 9.7 }",
        ] {
            check("delay_ms = 10", &o(s)).unwrap();
        }
        for (s, msg) in [
            (
                "{ start_s = 1, duration_ms = 1000, every_s = 1 }",
                "expected a period > duration_ms / 1000 = 1 s (each outage ends before the next) and <= 1000000 s, found 1",
            ),
            (
                "{ start_s = 1, duration_ms = 500, every_s = 0 }",
                "> duration_ms / 1000 = 0.5 s",
            ),
            (
                "{ start_s = 1, duration_ms = 500, every_s = -2 }",
                "found -2",
            ),
            (
                "{ start_s = 1, duration_ms = 500, every_s = 1000001 }",
                "<= 1000000 s, found 1000001",
            ),
        ] {
            fails("delay_ms = 10", &o(s), "link[0].outages[0].every_s", msg);
        }
        // The listed outages are still in time order, the first of a series by its start.
        fails(
            "delay_ms = 10",
            &o("{ start_s = 3, duration_ms = 500, every_s = 4 }, { start_s = 1, duration_ms = 100 }"),
            "link[0].outages[1].start_s",
            "expected >= 3.5 s (the end of outages[0]), found 1",
        );
        // Repetitions that overlap one another or a single outage.
        for (s, msg) in [
            (
                "{ start_s = 0, duration_ms = 500, every_s = 2 }, { start_s = 1, duration_ms = 500, every_s = 3 }",
                "repeated outages overlap: one starts at 4 s before the one from 4 s ends",
            ),
            (
                "{ start_s = 1, duration_ms = 500, every_s = 3 }, { start_s = 4.2, duration_ms = 100 }",
                "repeated outages overlap: one starts at 4.2 s before the one from 4 s ends",
            ),
            (
                "{ start_s = 0, duration_ms = 900, every_s = 1 }, { start_s = 0.95, duration_ms = 100, every_s = 5 }",
                "one starts at 1 s before the one from 0.95 s ends",
            ),
        ] {
            fails("delay_ms = 10", &o(s), "link[0].outages", msg);
        }
    }
}
