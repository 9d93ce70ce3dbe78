//! Prometheus metrics: lock-free counters and a small hand-written text exposition
//! (format 0.0.4, https://prometheus.io/docs/instrumenting/exposition_formats/) served on
//! `GET /metrics`. A full HTTP stack is not needed for one read-only page.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
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
    pub carriers: Vec<CarrierMetrics>,
}

impl Metrics {
    pub fn new(carriers: &[(String, Option<String>)]) -> Arc<Metrics> {
        Arc::new(Metrics {
            carriers: carriers
                .iter()
                .map(|(n, i)| CarrierMetrics {
                    name: n.clone(),
                    interface: i.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
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
        type Get = fn(&CarrierMetrics) -> String;
        let per: [(&str, &str, &str, Get); 10] = [
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

fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A carrier interface's kernel byte counter (`dir`: "rx" or "tx"); `None` if unreadable.
pub fn iface_counter(ifname: &str, dir: &str) -> Option<u64> {
    if ifname.contains('/') || ifname.contains("..") {
        return None;
    }
    let p = PathBuf::from(format!("/sys/class/net/{ifname}/statistics/{dir}_bytes"));
    std::fs::read_to_string(p).ok()?.trim().parse().ok()
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
