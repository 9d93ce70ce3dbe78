//! Prometheus metrics: lock-free counters and a small hand-written text exposition
//! (format 0.0.4, https://prometheus.io/docs/instrumenting/exposition_formats/) served on
//! `GET /metrics`. A full HTTP stack is not needed for one read-only page.

use crate::figures::{iface_stat, StallBook};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Per-carrier counters.
#[derive(Debug, Default)]
pub struct CarrierMetrics {
    pub name: String,
    pub interface: Option<String>,
    /// 1 while the carrier's endpoint is backup.
    pub backup: AtomicI64,
    pub flips_to_backup: AtomicU64,
    pub flips_to_regular: AtomicU64,
    pub flip_errors: AtomicU64,
    pub handovers: AtomicU64,
    pub prediction_hits: AtomicU64,
    pub prediction_misses: AtomicU64,
    /// Last measured drain after a flip to backup, microseconds (crate::drain).
    pub drain_us: AtomicU64,
    pub drains_measured: AtomicU64,
    /// Flips after which the carrier was still receiving when its zone began.
    pub late_flips: AtomicU64,
    /// 1 while the carrier is up (link up, an address, probes answered).
    pub up: AtomicI64,
    /// Time up, down, and backup while up, microseconds (crate::figures).
    pub up_us: AtomicU64,
    pub down_us: AtomicU64,
    pub backup_us: AtomicU64,
    /// Times the carrier went down.
    pub failures: AtomicU64,
    /// Failover and failback times: last, sum and count, microseconds.
    pub failover_last_us: AtomicU64,
    pub failover_sum_us: AtomicU64,
    pub failovers: AtomicU64,
    pub failback_last_us: AtomicU64,
    pub failback_sum_us: AtomicU64,
    pub failbacks: AtomicU64,
    /// Unix times (milliseconds) of the last loss, failover, return and failback.
    pub last_down_unix_ms: AtomicU64,
    pub last_failover_unix_ms: AtomicU64,
    pub last_up_unix_ms: AtomicU64,
    pub last_failback_unix_ms: AtomicU64,
    /// Endpoint added, removed or moved to a new address by the gateway.
    pub endpoint_changes: AtomicU64,
    /// Probes that went unanswered.
    pub probe_failures: AtomicU64,
}

#[derive(Debug, Default)]
pub struct Metrics {
    pub conn_accepted: AtomicU64,
    pub conn_active: AtomicI64,
    pub conn_rejected: AtomicU64,
    pub conn_failed: AtomicU64,
    pub conn_mptcp: AtomicU64,
    pub conn_fallback: AtomicU64,
    pub conn_plain: AtomicU64,
    pub conn_idle_timeouts: AtomicU64,
    pub conn_errors: AtomicU64,
    pub bytes_up: AtomicU64,
    pub bytes_down: AtomicU64,
    pub position_valid: AtomicI64,
    /// Position along the track in millimetres (integer so it stays lock-free).
    pub position_mm: AtomicI64,
    pub position_fixes: AtomicU64,
    pub position_errors: AtomicU64,
    pub fallbacks_all_regular: AtomicU64,
    /// Smoothed RTT of the proxied MPTCP connections' slowest subflow, microseconds (0: none yet).
    pub rtt_est_us: AtomicU64,
    /// The PHA-D lead time in use, microseconds.
    pub lead_us: AtomicU64,
    /// 1 while the PHA-D controller runs.
    pub phad_active: AtomicI64,
    /// 1 while the position is dead-reckoned (no fresh fix); its error in millimetres.
    pub dead_reckoning: AtomicI64,
    pub position_error_mm: AtomicU64,
    /// SIGHUP reloads applied and refused; 1 while the last one was refused.
    pub reloads_ok: AtomicU64,
    pub reloads_refused: AtomicU64,
    pub reload_failed: AtomicI64,
    /// 1 while draining after SIGTERM; relays cut when the drain time ran out.
    pub draining: AtomicI64,
    pub drain_cut: AtomicU64,
    /// Stall-seconds per position bin (crate::figures).
    pub stalls: Mutex<StallBook>,
    pub carriers: Vec<CarrierMetrics>,
}

impl Metrics {
    pub fn new(carriers: &[(String, Option<String>)]) -> Arc<Metrics> {
        Metrics::with_bins(carriers, 100.0)
    }

    /// With stall bins of `bin_m` metres.
    pub fn with_bins(carriers: &[(String, Option<String>)], bin_m: f64) -> Arc<Metrics> {
        Arc::new(Metrics {
            carriers: carriers
                .iter()
                .map(|(n, i)| CarrierMetrics {
                    name: n.clone(),
                    interface: i.clone(),
                    up: AtomicI64::new(1),
                    ..Default::default()
                })
                .collect(),
            stalls: Mutex::new(StallBook::new(bin_m)),
            ..Default::default()
        })
    }

    /// The stall book (a poisoned lock is taken over: it holds only numbers).
    pub fn stall_book(&self) -> std::sync::MutexGuard<'_, StallBook> {
        self.stalls.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Folds an RTT sample (microseconds) into the estimate: the first sample is taken as is,
    /// later ones with gain 1/8 (RFC 6298 section 2: SRTT <- 7/8 SRTT + 1/8 R').
    pub fn observe_rtt_us(&self, sample: u64) {
        if sample == 0 {
            return;
        }
        let _ = self.rtt_est_us.fetch_update(Relaxed, Relaxed, |old| {
            Some(if old == 0 {
                sample
            } else {
                (old * 7 + sample) / 8
            })
        });
    }

    /// The RTT estimate, if any sample was taken.
    pub fn rtt_estimate(&self) -> Option<Duration> {
        match self.rtt_est_us.load(Relaxed) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }

    pub fn carrier(&self, name: &str) -> Option<&CarrierMetrics> {
        self.carriers.iter().find(|c| c.name == name)
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let mut one = |name: &str, kind: &str, help: &str, v: String| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
        };
        one(
            "railpath_gateway_connections_accepted_total",
            "counter",
            "Passenger connections accepted by the proxy.",
            self.conn_accepted.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_connections_active",
            "gauge",
            "Connections being relayed now.",
            self.conn_active.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_connections_rejected_total",
            "counter",
            "Connections reset because max_connections was reached.",
            self.conn_rejected.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_connections_failed_total",
            "counter",
            "Connections whose onward connect failed or timed out.",
            self.conn_failed.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_connections_idle_timeout_total",
            "counter",
            "Connections closed after idle_timeout_s without traffic.",
            self.conn_idle_timeouts.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_connections_error_total",
            "counter",
            "Relays ended by an I/O error (e.g. a reset from either side).",
            self.conn_errors.load(Relaxed).to_string(),
        );
        let _ = writeln!(
            o,
            "# HELP railpath_gateway_connections_onward_total Onward connections by transport: mptcp, fallback (MPTCP socket that fell back to TCP), tcp (plain TCP socket).\n# TYPE railpath_gateway_connections_onward_total counter"
        );
        for (k, v) in [
            ("mptcp", &self.conn_mptcp),
            ("fallback", &self.conn_fallback),
            ("tcp", &self.conn_plain),
        ] {
            let _ = writeln!(
                o,
                "railpath_gateway_connections_onward_total{{transport=\"{k}\"}} {}",
                v.load(Relaxed)
            );
        }
        let _ = writeln!(
            o,
            "# HELP railpath_gateway_relay_bytes_total Bytes relayed, up (passenger to server) and down.\n# TYPE railpath_gateway_relay_bytes_total counter"
        );
        for (k, v) in [("up", &self.bytes_up), ("down", &self.bytes_down)] {
            let _ = writeln!(
                o,
                "railpath_gateway_relay_bytes_total{{direction=\"{k}\"}} {}",
                v.load(Relaxed)
            );
        }
        let mut one = |name: &str, kind: &str, help: &str, v: String| {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
        };
        one(
            "railpath_gateway_rtt_estimate_seconds",
            "gauge",
            "Smoothed RTT of the proxied MPTCP connections' slowest subflow (0 before any sample).",
            format!("{}", self.rtt_est_us.load(Relaxed) as f64 / 1e6),
        );
        one(
            "railpath_gateway_lead_time_seconds",
            "gauge",
            "The PHA-D lead time in use (configured, one RTT, or adaptive).",
            format!("{}", self.lead_us.load(Relaxed) as f64 / 1e6),
        );
        one(
            "railpath_gateway_phad_active",
            "gauge",
            "1 while the PHA-D controller runs (0: disabled by configuration or by a start-up error).",
            self.phad_active.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_position_valid",
            "gauge",
            "1 while a fresh train position is known, 0 when lost or stale (all carriers regular).",
            self.position_valid.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_position_meters",
            "gauge",
            "Last train position along the track.",
            format!("{}", self.position_mm.load(Relaxed) as f64 / 1000.0),
        );
        one(
            "railpath_gateway_position_fixes_total",
            "counter",
            "Position fixes received.",
            self.position_fixes.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_position_errors_total",
            "counter",
            "Position input rejected (malformed sentence, bad checksum, off track, source error).",
            self.position_errors.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_fallback_all_regular_total",
            "counter",
            "Times PHA-D fell back to all carriers regular because the position was lost or stale.",
            self.fallbacks_all_regular.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_position_dead_reckoning",
            "gauge",
            "1 while the position is carried from the last fix (tunnel, GPS without fix), with a growing error.",
            self.dead_reckoning.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_position_error_meters",
            "gauge",
            "Dead-reckoning error of the position; the zones PHA-D tests are widened by it.",
            format!("{}", self.position_error_mm.load(Relaxed) as f64 / 1000.0),
        );
        one(
            "railpath_gateway_config_reload_failed",
            "gauge",
            "1 while the last SIGHUP reload was refused (the previous configuration and table are in use).",
            self.reload_failed.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_draining",
            "gauge",
            "1 while the daemon lets running relays finish after SIGTERM.",
            self.draining.load(Relaxed).to_string(),
        );
        one(
            "railpath_gateway_drain_cut_total",
            "counter",
            "Relays still running when the drain time ran out, cut at exit.",
            self.drain_cut.load(Relaxed).to_string(),
        );
        let _ = writeln!(
            o,
            "# HELP railpath_gateway_config_reloads_total SIGHUP reloads of the configuration and handover table, applied (ok) or refused.\n# TYPE railpath_gateway_config_reloads_total counter"
        );
        for (k, v) in [("ok", &self.reloads_ok), ("refused", &self.reloads_refused)] {
            let _ = writeln!(
                o,
                "railpath_gateway_config_reloads_total{{result=\"{k}\"}} {}",
                v.load(Relaxed)
            );
        }
        {
            let book = self.stall_book();
            let _ = writeln!(
                o,
                "# HELP railpath_gateway_stall_seconds_total Seconds passenger downloads were stalled mid-stream, per position bin along the track (bin start, metres; \"unknown\" without a position).\n# TYPE railpath_gateway_stall_seconds_total counter"
            );
            let bins = book.bins();
            let (us, un) = book.unknown();
            for (m, secs, _) in &bins {
                let _ = writeln!(
                    o,
                    "railpath_gateway_stall_seconds_total{{position_m=\"{}\"}} {secs}",
                    railpath_core::show_num(*m)
                );
            }
            let _ = writeln!(
                o,
                "railpath_gateway_stall_seconds_total{{position_m=\"unknown\"}} {us}"
            );
            let _ = writeln!(
                o,
                "# HELP railpath_gateway_stalls_total Passenger download stalls, per position bin where they began.\n# TYPE railpath_gateway_stalls_total counter"
            );
            for (m, _, n) in &bins {
                let _ = writeln!(
                    o,
                    "railpath_gateway_stalls_total{{position_m=\"{}\"}} {n}",
                    railpath_core::show_num(*m)
                );
            }
            let _ = writeln!(
                o,
                "railpath_gateway_stalls_total{{position_m=\"unknown\"}} {un}"
            );
        }
        type Get = fn(&CarrierMetrics) -> String;
        let per: [(&str, &str, &str, Get); 28] = [
            (
                "railpath_gateway_carrier_backup",
                "gauge",
                "1 while the carrier's MPTCP endpoint is backup.",
                |c| c.backup.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_backup_flips_total",
                "counter",
                "Endpoint flips to backup (MP_PRIO B=1 on every subflow).",
                |c| c.flips_to_backup.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_regular_flips_total",
                "counter",
                "Endpoint flips back to regular (MP_PRIO B=0).",
                |c| c.flips_to_regular.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_flip_errors_total",
                "counter",
                "Path-manager requests that failed.",
                |c| c.flip_errors.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_handovers_total",
                "counter",
                "Handovers observed from the modem side.",
                |c| c.handovers.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_prediction_hits_total",
                "counter",
                "Observed handovers inside a predicted zone.",
                |c| c.prediction_hits.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_prediction_misses_total",
                "counter",
                "Observed handovers outside every predicted zone (with a valid position).",
                |c| c.prediction_misses.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_backup_drain_seconds",
                "gauge",
                "Last drain after a flip to backup: how long the carrier's interface kept receiving data (the lead time must exceed it).",
                |c| format!("{}", c.drain_us.load(Relaxed) as f64 / 1e6),
            ),
            (
                "railpath_gateway_backup_drains_measured_total",
                "counter",
                "Flips to backup whose drain was measured (the carrier was receiving before).",
                |c| c.drains_measured.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_late_flips_total",
                "counter",
                "Flips to backup after which the carrier was still receiving when its predicted zone began: raise phad.lead_time_ms.",
                |c| c.late_flips.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_carrier_up",
                "gauge",
                "1 while the carrier is up (link up, a usable address, probes answered).",
                |c| c.up.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_carrier_up_seconds_total",
                "counter",
                "Time the carrier was up since the daemon started.",
                |c| us_s(&c.up_us),
            ),
            (
                "railpath_gateway_carrier_down_seconds_total",
                "counter",
                "Time the carrier was down since the daemon started.",
                |c| us_s(&c.down_us),
            ),
            (
                "railpath_gateway_carrier_availability_ratio",
                "gauge",
                "Time up over time observed since the daemon started.",
                |c| {
                    let (u, d) = (c.up_us.load(Relaxed), c.down_us.load(Relaxed));
                    if u + d == 0 {
                        "1".into()
                    } else {
                        format!("{}", u as f64 / (u + d) as f64)
                    }
                },
            ),
            (
                "railpath_gateway_carrier_backup_seconds_total",
                "counter",
                "Time the carrier's endpoint was backup while the carrier was up.",
                |c| us_s(&c.backup_us),
            ),
            (
                "railpath_gateway_carrier_failures_total",
                "counter",
                "Times the carrier went down (link down, address gone, probes unanswered).",
                |c| c.failures.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_carrier_last_failover_seconds",
                "gauge",
                "Last failover: from the carrier's loss to the first traffic on the other carriers after its endpoint was removed.",
                |c| us_s(&c.failover_last_us),
            ),
            (
                "railpath_gateway_carrier_failover_seconds_sum",
                "counter",
                "Sum of the measured failover times (with _count: the mean).",
                |c| us_s(&c.failover_sum_us),
            ),
            (
                "railpath_gateway_carrier_failover_seconds_count",
                "counter",
                "Failovers measured.",
                |c| c.failovers.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_carrier_last_failback_seconds",
                "gauge",
                "Last failback: from the carrier's return to the first traffic on it.",
                |c| us_s(&c.failback_last_us),
            ),
            (
                "railpath_gateway_carrier_failback_seconds_sum",
                "counter",
                "Sum of the measured failback times (with _count: the mean).",
                |c| us_s(&c.failback_sum_us),
            ),
            (
                "railpath_gateway_carrier_failback_seconds_count",
                "counter",
                "Failbacks measured.",
                |c| c.failbacks.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_carrier_last_down_timestamp_seconds",
                "gauge",
                "Unix time of the carrier's last loss (0: never).",
                |c| ms_s(&c.last_down_unix_ms),
            ),
            (
                "railpath_gateway_carrier_last_failover_timestamp_seconds",
                "gauge",
                "Unix time traffic last moved off the carrier to the others (0: never).",
                |c| ms_s(&c.last_failover_unix_ms),
            ),
            (
                "railpath_gateway_carrier_last_up_timestamp_seconds",
                "gauge",
                "Unix time of the carrier's last return (0: never).",
                |c| ms_s(&c.last_up_unix_ms),
            ),
            (
                "railpath_gateway_carrier_last_failback_timestamp_seconds",
                "gauge",
                "Unix time traffic last came back to the carrier (0: never).",
                |c| ms_s(&c.last_failback_unix_ms),
            ),
            (
                "railpath_gateway_endpoint_changes_total",
                "counter",
                "MPTCP endpoint of the carrier added, removed or moved to a new address by the gateway.",
                |c| c.endpoint_changes.load(Relaxed).to_string(),
            ),
            (
                "railpath_gateway_probe_failures_total",
                "counter",
                "Probes through the carrier that went unanswered.",
                |c| c.probe_failures.load(Relaxed).to_string(),
            ),
        ];
        for (name, kind, help, get) in per {
            let _ = writeln!(o, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for c in &self.carriers {
                let _ = writeln!(o, "{name}{{carrier=\"{}\"}} {}", escape(&c.name), get(c));
            }
        }
        let _ = writeln!(
            o,
            "# HELP railpath_gateway_carrier_bytes_total Bytes through the carrier's interface (kernel counters).\n# TYPE railpath_gateway_carrier_bytes_total counter"
        );
        for c in &self.carriers {
            if let Some(ifname) = &c.interface {
                for dir in ["rx", "tx"] {
                    if let Some(v) = iface_counter(ifname, dir) {
                        let _ = writeln!(
                            o,
                            "railpath_gateway_carrier_bytes_total{{carrier=\"{}\",direction=\"{dir}\"}} {v}",
                            escape(&c.name)
                        );
                    }
                }
            }
        }
        o
    }
}

fn us_s(a: &AtomicU64) -> String {
    format!("{}", a.load(Relaxed) as f64 / 1e6)
}

fn ms_s(a: &AtomicU64) -> String {
    format!("{}", a.load(Relaxed) as f64 / 1e3)
}

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A carrier interface's kernel byte counter (`dir`: "rx" or "tx"); `None` if unreadable.
pub fn iface_counter(ifname: &str, dir: &str) -> Option<u64> {
    iface_stat(ifname, &format!("{dir}_bytes"))
}

/// Serves `GET /metrics` until the task is dropped. Each request is bounded to 8 KiB and 5 s.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let m = metrics.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            let mut n = 0;
            let read = tokio::time::timeout(Duration::from_secs(5), async {
                while n < buf.len() {
                    let k = s.read(&mut buf[n..]).await?;
                    if k == 0 {
                        break;
                    }
                    n += k;
                    if buf[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                Ok::<_, std::io::Error>(())
            })
            .await;
            if !matches!(read, Ok(Ok(()))) {
                return;
            }
            let req = String::from_utf8_lossy(&buf[..n]);
            let first = req.lines().next().unwrap_or("");
            let resp = if first.starts_with("GET /metrics ") || first == "GET /metrics" {
                let body = m.render();
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                )
            } else {
                "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_string()
            };
            let _ =
                tokio::time::timeout(Duration::from_secs(5), s.write_all(resp.as_bytes())).await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rtt_estimate_is_an_rfc6298_average() {
        let m = Metrics::new(&[]);
        assert_eq!(m.rtt_estimate(), None);
        m.observe_rtt_us(0); // ignored
        m.observe_rtt_us(80_000);
        assert_eq!(m.rtt_estimate(), Some(Duration::from_millis(80)));
        // 7/8 * 80 ms + 1/8 * 160 ms = 90 ms
        m.observe_rtt_us(160_000);
        assert_eq!(m.rtt_estimate(), Some(Duration::from_millis(90)));
    }

    #[test]
    fn exposition_has_help_type_and_labels() {
        let m = Metrics::new(&[("A".into(), None), ("B\"x".into(), None)]);
        m.conn_accepted.fetch_add(3, Relaxed);
        m.carriers[0].flips_to_backup.fetch_add(2, Relaxed);
        let t = m.render();
        assert!(t.contains("# TYPE railpath_gateway_connections_accepted_total counter\nrailpath_gateway_connections_accepted_total 3\n"), "{t}");
        assert!(t.contains("railpath_gateway_backup_flips_total{carrier=\"A\"} 2\n"));
        assert!(t.contains("railpath_gateway_backup_flips_total{carrier=\"B\\\"x\"} 0\n"));
        // every sample line belongs to a declared family
        for line in t.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(t.contains(&format!("# TYPE {name} ")), "undeclared {name}");
        }
    }
}
