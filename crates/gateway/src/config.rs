//! The gateway's TOML configuration: schema, defaults and validation.
//!
//! Every table rejects unknown keys (a misspelt key is an error, never a silent default), and
//! every error names the file, the key and what was expected. See docs/gateway.md for a
//! commented example; packaging/gateway.toml is the installed default.

use railpath_core::show_num;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A configuration error: the file and a message that names the key and what was expected.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Parse { file: String, message: String },
    #[error("{file}: key `{key}`: {message}")]
    Invalid {
        file: String,
        key: String,
        message: String,
    },
}

/// Which side of the MPTCP path the proxy sits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProxyMode {
    /// On the train: accept passengers' TCP redirected by nftables, read the original
    /// destination and relay it over MPTCP (plain TCP if the far end lacks MPTCP).
    Train,
    /// On the ground: accept MPTCP (or TCP) and relay plain TCP to a fixed upstream.
    Ground,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyConfig {
    pub mode: ProxyMode,
    /// Address the proxy listens on (the nftables `redirect to :port` target in train mode).
    pub listen: SocketAddr,
    /// Ground mode only: where accepted connections are relayed (plain TCP).
    #[serde(default)]
    pub upstream: Option<SocketAddr>,
    /// Train mode: open the outgoing connection with IPPROTO_MPTCP (default true).
    #[serde(default = "yes")]
    pub mptcp: bool,
    /// Connections beyond this many are accepted and reset at once (and counted).
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    /// A connection with no byte in either direction for this long is closed.
    #[serde(default = "default_idle_timeout_s")]
    pub idle_timeout_s: f64,
    #[serde(default = "default_connect_timeout_s")]
    pub connect_timeout_s: f64,
    /// Relay buffer per direction; bounds memory per connection (back-pressure beyond it).
    #[serde(default = "default_buffer_bytes")]
    pub buffer_bytes: usize,
}

/// What SIGTERM does.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShutdownConfig {
    /// The proxy stops accepting and lets running relays finish for this long; the ones still
    /// running then are reset (0: at once).
    #[serde(default = "default_drain_timeout_s")]
    pub drain_s: f64,
}

impl Default for ShutdownConfig {
    fn default() -> Self {
        ShutdownConfig {
            drain_s: default_drain_timeout_s(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Where the Prometheus text exposition is served (`GET /metrics`).
    pub listen: SocketAddr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    #[default]
    Json,
    Text,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    #[serde(default)]
    pub format: LogFormat,
    /// A tracing filter directive, e.g. "info" or "railpath_gateway=debug".
    #[serde(default = "default_log_level")]
    pub level: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            format: LogFormat::Json,
            level: default_log_level(),
        }
    }
}

/// One cellular carrier: its name in the handover table and its MPTCP endpoint.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CarrierConfig {
    /// The carrier's key in the handover table (e.g. "A").
    pub name: String,
    /// The kernel MPTCP endpoint id (`ip mptcp endpoint show`).
    #[serde(default)]
    pub endpoint_id: Option<u8>,
    /// Or the endpoint's local address; resolved to an id at start through the path manager.
    #[serde(default)]
    pub endpoint_addr: Option<IpAddr>,
    /// The carrier's network interface, for per-carrier byte counters (optional).
    #[serde(default)]
    pub interface: Option<String>,
    /// A command printing JSON that contains the serving cell id, polled for handover logging
    /// (e.g. ["mmcli", "-m", "0", "--location-get", "-J"]).
    #[serde(default)]
    pub cell_command: Option<Vec<String>>,
    /// JSON pointer to the cell id in `cell_command`'s output (e.g. "/modem/location/3gpp/cid").
    #[serde(default)]
    pub cell_pointer: Option<String>,
    /// With `interface`: the gateway keeps the carrier's MPTCP endpoint on the interface's
    /// current address (a modem that re-attaches with a new address, an address removed and back)
    /// and removes it while the carrier is down (link down, no address, failed probes). Set false
    /// when another daemon (mptcpd, NetworkManager) manages the endpoints.
    #[serde(default = "yes")]
    pub manage_endpoint: bool,
}

/// Where the train's position comes from.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, tag = "source", rename_all = "lowercase")]
pub enum PositionConfig {
    /// gpsd's JSON protocol over TCP (`?WATCH={"enable":true,"json":true}`).
    Gpsd {
        #[serde(default = "default_gpsd")]
        address: SocketAddr,
        /// Track polyline the lat/lon fixes are projected onto.
        track: PathBuf,
        #[serde(default = "default_max_offtrack_m")]
        max_offtrack_m: f64,
    },
    /// NMEA 0183 sentences (RMC) from a serial device or a file/FIFO.
    Nmea {
        path: PathBuf,
        /// Serial line speed; set when `path` is a tty (omit for files and FIFOs).
        #[serde(default)]
        baud: Option<u32>,
        track: PathBuf,
        #[serde(default = "default_max_offtrack_m")]
        max_offtrack_m: f64,
    },
    /// A replay file of `t_s,position_m,speed_mps` lines, played against the wall clock.
    Replay {
        path: PathBuf,
        /// Play the file from its start again when it ends.
        #[serde(default)]
        r#loop: bool,
    },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhadConfig {
    /// The handover table (JSON, "railpath-handover-table/1", written by `railpath table learn`).
    pub table: PathBuf,
    /// Round-trip time of the carriers' paths in ms. When absent, the RTT is measured: the
    /// smoothed RTT of the proxied MPTCP connections' subflows (largest subflow per sample,
    /// averaged with gain 1/8 as RFC 6298 does for SRTT), and 100 ms until the first sample.
    #[serde(default)]
    pub rtt_ms: Option<f64>,
    /// How long before a predicted zone the carrier goes backup; defaults to one RTT (PHA-D,
    /// seeds.md section 1). On a real stack it must also cover the drain of the data the sender
    /// has already queued on the subflow (docs/gateway.md). The return to regular before the
    /// zone's predicted end is always one RTT (`rtt_ms` or measured).
    #[serde(default)]
    pub lead_time_ms: Option<f64>,
    /// A position older than this is stale: every carrier goes back to regular.
    #[serde(default = "default_stale_after_ms")]
    pub stale_after_ms: f64,
    /// Controller period.
    #[serde(default = "default_tick_ms")]
    pub tick_ms: f64,
    /// Only log decisions; do not change the path manager (for trials).
    #[serde(default)]
    pub dry_run: bool,
    /// Lead = RTT + 1.25 x the largest recent measured drain (crate::drain), starting from
    /// `lead_time_ms`; needs the carriers' `interface`.
    #[serde(default)]
    pub adaptive_lead: bool,
    pub position: PositionConfig,
    /// Between fixes (a tunnel, a GPS without fix) the position is carried along the track from
    /// the last speed, with an error that grows with the time since the last fix.
    #[serde(default)]
    pub dead_reckoning: DeadReckoningConfig,
}

/// How far the position is carried from the last fix (crate::position::estimate).
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeadReckoningConfig {
    /// The longest time since the last fix the position is carried (0: never; a position older
    /// than `stale_after_ms` is then lost at once).
    #[serde(default = "default_dr_max_s")]
    pub max_s: f64,
    /// The largest error the position may have; beyond it the position is lost.
    #[serde(default = "default_dr_max_error_m")]
    pub max_error_m: f64,
    /// Uncertainty of the last speed (GPS speed noise, a speed that was already changing).
    #[serde(default = "default_dr_speed_error_mps")]
    pub speed_error_mps: f64,
    /// The largest acceleration or braking the train may do unseen.
    #[serde(default = "default_dr_accel_mps2")]
    pub accel_mps2: f64,
}

impl Default for DeadReckoningConfig {
    fn default() -> Self {
        DeadReckoningConfig {
            max_s: default_dr_max_s(),
            max_error_m: default_dr_max_error_m(),
            speed_error_mps: default_dr_speed_error_mps(),
            accel_mps2: default_dr_accel_mps2(),
        }
    }
}

/// Active probing of each carrier (crate::health).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HealthConfig {
    /// TCP target of the probes, sent from each carrier's address and interface; an answer of
    /// any kind (SYN-ACK or RST) means the carrier works.
    pub probe: SocketAddr,
    #[serde(default = "default_probe_interval_ms")]
    pub interval_ms: f64,
    /// A probe unanswered for this long failed.
    #[serde(default = "default_probe_timeout_ms")]
    pub timeout_ms: f64,
    /// Consecutive failed probes after which the carrier is down.
    #[serde(default = "default_probe_failures")]
    pub failures: u32,
}

/// The operator's figures (crate::figures).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FiguresConfig {
    /// A passenger download that receives nothing for this long mid-stream is stalled.
    #[serde(default = "default_stall_after_ms")]
    pub stall_after_ms: f64,
    /// Width of the position bins of the stall figures.
    #[serde(default = "default_position_bin_m")]
    pub position_bin_m: f64,
    /// Period of the figures' lines in the JSON log (0: never).
    #[serde(default = "default_log_every_s")]
    pub log_every_s: f64,
}

impl Default for FiguresConfig {
    fn default() -> Self {
        FiguresConfig {
            stall_after_ms: default_stall_after_ms(),
            position_bin_m: default_position_bin_m(),
            log_every_s: default_log_every_s(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoverLogConfig {
    /// JSON-lines file appended with one record per observed handover.
    pub path: PathBuf,
    /// A JSON-lines file/FIFO of emulator or modem events (`{"carrier":"A","cell":"..."}`)
    /// followed as it grows; optional, in addition to each carrier's `cell_command`.
    #[serde(default)]
    pub events: Option<PathBuf>,
    /// Poll period for `cell_command`s.
    #[serde(default = "default_cell_poll_ms")]
    pub cell_poll_ms: f64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub proxy: Option<ProxyConfig>,
    pub metrics: Option<MetricsConfig>,
    #[serde(default)]
    pub log: LogConfig,
    pub phad: Option<PhadConfig>,
    #[serde(default, rename = "carrier")]
    pub carriers: Vec<CarrierConfig>,
    pub handover_log: Option<HandoverLogConfig>,
    pub health: Option<HealthConfig>,
    #[serde(default)]
    pub figures: FiguresConfig,
    #[serde(default)]
    pub shutdown: ShutdownConfig,
}

fn yes() -> bool {
    true
}
fn default_max_connections() -> usize {
    4096
}
fn default_idle_timeout_s() -> f64 {
    300.0
}
fn default_connect_timeout_s() -> f64 {
    10.0
}
fn default_buffer_bytes() -> usize {
    64 * 1024
}
fn default_log_level() -> String {
    "info".into()
}
fn default_gpsd() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 2947))
}
fn default_max_offtrack_m() -> f64 {
    200.0
}
/// The RTT assumed before the first measurement when `rtt_ms` is not configured.
pub const DEFAULT_RTT_MS: f64 = 100.0;
fn default_stale_after_ms() -> f64 {
    2000.0
}
fn default_tick_ms() -> f64 {
    10.0
}
fn default_cell_poll_ms() -> f64 {
    1000.0
}
fn default_drain_timeout_s() -> f64 {
    30.0
}
fn default_dr_max_s() -> f64 {
    120.0
}
fn default_dr_max_error_m() -> f64 {
    500.0
}
fn default_dr_speed_error_mps() -> f64 {
    1.0
}
fn default_dr_accel_mps2() -> f64 {
    0.3
}
fn default_probe_interval_ms() -> f64 {
    500.0
}
fn default_probe_timeout_ms() -> f64 {
    1000.0
}
fn default_probe_failures() -> u32 {
    3
}
fn default_stall_after_ms() -> f64 {
    500.0
}
fn default_position_bin_m() -> f64 {
    100.0
}
fn default_log_every_s() -> f64 {
    60.0
}

pub fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s.max(0.0))
}
pub fn millis(ms: f64) -> Duration {
    Duration::from_secs_f64(ms.max(0.0) / 1000.0)
}

impl PhadConfig {
    /// The configured lead time: `lead_time_ms`, else `rtt_ms`; `None` means one measured RTT.
    pub fn lead_time(&self) -> Option<Duration> {
        self.lead_time_ms.or(self.rtt_ms).map(millis)
    }
    /// The configured RTT (the return margin before a zone's end); `None` means measured.
    pub fn rtt(&self) -> Option<Duration> {
        self.rtt_ms.map(millis)
    }
}

impl Config {
    /// Reads and validates a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            file: file.clone(),
            source,
        })?;
        Config::parse(&text, &file)
    }

    /// Parses and validates configuration text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| {
            // The key the user wrote and the line, in the user's words (one rule with the
            // scenario files): not serde's type names, not the whole offending line echoed.
            let (key, message) = railpath_scenario::toml_error(&e, text);
            if key.is_empty() {
                ConfigError::Parse {
                    file: file.to_string(),
                    message,
                }
            } else {
                ConfigError::Invalid {
                    file: file.to_string(),
                    key,
                    message,
                }
            }
        })?;
        cfg.validate(file)?;
        Ok(cfg)
    }

    fn validate(&self, file: &str) -> Result<(), ConfigError> {
        let bad = |key: &str, message: String| ConfigError::Invalid {
            file: file.to_string(),
            key: key.to_string(),
            message,
        };
        // Every duration and distance has a physical floor as well as a ceiling: a tick of
        // 5e-324 ms passes "> 0" but would spin the controller.
        let in_range = |key: &str, v: f64, min: f64, max: f64| {
            if v.is_finite() && v >= min && v <= max {
                Ok(())
            } else {
                Err(bad(
                    key,
                    format!(
                        "expected a number from {} to {}, got {}",
                        show_num(min),
                        show_num(max),
                        show_num(v)
                    ),
                ))
            }
        };
        if self.proxy.is_none() && self.phad.is_none() {
            return Err(bad(
                "proxy/phad",
                "nothing to do: configure [proxy], [phad] or both".into(),
            ));
        }
        if let Some(p) = &self.proxy {
            match (p.mode, p.upstream) {
                (ProxyMode::Ground, None) => {
                    return Err(bad(
                        "proxy.upstream",
                        "ground mode needs `upstream = \"host:port\"` (where to relay)".into(),
                    ))
                }
                (ProxyMode::Train, Some(_)) => {
                    return Err(bad(
                        "proxy.upstream",
                        "train mode relays to each connection's original destination; remove `upstream`".into(),
                    ))
                }
                _ => {}
            }
            if p.max_connections == 0 || p.max_connections > 1_000_000 {
                return Err(bad(
                    "proxy.max_connections",
                    format!("expected 1..=1000000, got {}", p.max_connections),
                ));
            }
            in_range("proxy.idle_timeout_s", p.idle_timeout_s, 0.001, 86_400.0)?;
            in_range("proxy.connect_timeout_s", p.connect_timeout_s, 0.001, 600.0)?;
            if !(1024..=16 * 1024 * 1024).contains(&p.buffer_bytes) {
                return Err(bad(
                    "proxy.buffer_bytes",
                    format!("expected 1024..=16777216, got {}", p.buffer_bytes),
                ));
            }
        }
        if self
            .log
            .level
            .parse::<tracing_subscriber::EnvFilter>()
            .is_err()
        {
            return Err(bad(
                "log.level",
                format!(
                    "expected a tracing filter such as \"info\", got {:?}",
                    self.log.level
                ),
            ));
        }
        let mut names = BTreeSet::new();
        for (i, c) in self.carriers.iter().enumerate() {
            let key = |k: &str| format!("carrier[{i}].{k}");
            if c.name.is_empty() {
                return Err(bad(
                    &key("name"),
                    "expected a non-empty carrier name".into(),
                ));
            }
            if !names.insert(c.name.clone()) {
                return Err(bad(&key("name"), format!("duplicate carrier {:?}", c.name)));
            }
            match (c.endpoint_id, c.endpoint_addr) {
                (None, None) => {
                    return Err(bad(
                        &key("endpoint_id"),
                        "expected `endpoint_id` (1..=255) or `endpoint_addr`".into(),
                    ))
                }
                (Some(0), _) => {
                    return Err(bad(
                        &key("endpoint_id"),
                        "expected 1..=255 (id 0 is the initial subflow's implicit endpoint)".into(),
                    ))
                }
                (Some(_), Some(_)) => {
                    return Err(bad(
                        &key("endpoint_addr"),
                        "give `endpoint_id` or `endpoint_addr`, not both".into(),
                    ))
                }
                _ => {}
            }
            if let Some(cmd) = &c.cell_command {
                if cmd.is_empty() {
                    return Err(bad(
                        &key("cell_command"),
                        "expected a non-empty argv list".into(),
                    ));
                }
                match &c.cell_pointer {
                    Some(p) if p.starts_with('/') => {}
                    _ => {
                        return Err(bad(
                            &key("cell_pointer"),
                            "`cell_command` needs `cell_pointer`, a JSON pointer starting with '/'"
                                .into(),
                        ))
                    }
                }
            }
        }
        if let Some(ph) = &self.phad {
            if self.carriers.is_empty() {
                return Err(bad(
                    "carrier",
                    "[phad] needs at least one [[carrier]] with its MPTCP endpoint".into(),
                ));
            }
            if let Some(r) = ph.rtt_ms {
                in_range("phad.rtt_ms", r, 0.01, 10_000.0)?;
            }
            if let Some(l) = ph.lead_time_ms {
                in_range("phad.lead_time_ms", l, 0.01, 60_000.0)?;
            }
            if ph.adaptive_lead {
                if let Some(c) = self.carriers.iter().find(|c| c.interface.is_none()) {
                    return Err(bad(
                        "phad.adaptive_lead",
                        format!("needs every carrier's `interface` (its received-byte counter measures the drain); carrier {:?} has none", c.name),
                    ));
                }
            }
            in_range("phad.stale_after_ms", ph.stale_after_ms, 1.0, 600_000.0)?;
            in_range("phad.tick_ms", ph.tick_ms, 1.0, 10_000.0)?;
            match &ph.position {
                PositionConfig::Gpsd { max_offtrack_m, .. }
                | PositionConfig::Nmea { max_offtrack_m, .. } => in_range(
                    "phad.position.max_offtrack_m",
                    *max_offtrack_m,
                    0.1,
                    100_000.0,
                )?,
                PositionConfig::Replay { .. } => {}
            }
            let dr = &ph.dead_reckoning;
            in_range("phad.dead_reckoning.max_s", dr.max_s, 0.0, 3600.0)?;
            in_range(
                "phad.dead_reckoning.max_error_m",
                dr.max_error_m,
                0.0,
                100_000.0,
            )?;
            in_range(
                "phad.dead_reckoning.speed_error_mps",
                dr.speed_error_mps,
                0.0,
                100.0,
            )?;
            in_range("phad.dead_reckoning.accel_mps2", dr.accel_mps2, 0.0, 20.0)?;
            if let PositionConfig::Nmea { baud: Some(b), .. } = &ph.position {
                if ![4800u32, 9600, 19200, 38400, 57600, 115200].contains(b) {
                    return Err(bad(
                        "phad.position.baud",
                        format!("unsupported serial speed {b}; expected one of 4800, 9600, 19200, 38400, 57600, 115200"),
                    ));
                }
            }
        }
        if let Some(h) = &self.health {
            in_range("health.interval_ms", h.interval_ms, 10.0, 600_000.0)?;
            in_range("health.timeout_ms", h.timeout_ms, 10.0, 600_000.0)?;
            if !(1..=1000).contains(&h.failures) {
                return Err(bad(
                    "health.failures",
                    format!("expected 1..=1000, got {}", h.failures),
                ));
            }
            if h.probe.port() == 0 {
                return Err(bad(
                    "health.probe",
                    "expected a target with a port other than 0".into(),
                ));
            }
            if !self.carriers.iter().any(|c| c.interface.is_some()) {
                return Err(bad(
                    "health",
                    "probes go out through each carrier's `interface`; no carrier has one".into(),
                ));
            }
        }
        in_range("shutdown.drain_s", self.shutdown.drain_s, 0.0, 3600.0)?;
        let f = &self.figures;
        in_range("figures.stall_after_ms", f.stall_after_ms, 10.0, 600_000.0)?;
        in_range("figures.position_bin_m", f.position_bin_m, 1.0, 1_000_000.0)?;
        in_range("figures.log_every_s", f.log_every_s, 0.0, 86_400.0)?;
        if let Some(h) = &self.handover_log {
            if self.phad.is_none() {
                return Err(bad(
                    "handover_log",
                    "needs [phad] (its position source gives each handover's position)".into(),
                ));
            }
            in_range(
                "handover_log.cell_poll_ms",
                h.cell_poll_ms,
                1.0,
                3_600_000.0,
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
[proxy]
mode = "train"
listen = "0.0.0.0:3129"

[metrics]
listen = "127.0.0.1:9464"

[phad]
table = "/etc/railpath/table.json"
rtt_ms = 80
position = { source = "replay", path = "/tmp/feed.csv" }

[[carrier]]
name = "A"
endpoint_id = 1
interface = "wwan0"

[[carrier]]
name = "B"
endpoint_addr = "10.2.0.2"
"#;

    fn err(text: &str) -> String {
        Config::parse(text, "gw.toml").unwrap_err().to_string()
    }

    #[test]
    fn good_config_parses_with_defaults() {
        let c = Config::parse(GOOD, "gw.toml").unwrap();
        let p = c.proxy.unwrap();
        assert_eq!(p.mode, ProxyMode::Train);
        assert!(p.mptcp);
        assert_eq!(p.max_connections, 4096);
        let ph = c.phad.unwrap();
        // lead time defaults to one RTT
        assert_eq!(ph.lead_time(), Some(Duration::from_millis(80)));
        assert_eq!(c.carriers.len(), 2);
        assert_eq!(c.log.format, LogFormat::Json);
    }

    #[test]
    fn adaptive_lead_needs_every_carrier_interface() {
        let adaptive = GOOD.replace("rtt_ms = 80", "rtt_ms = 80\nadaptive_lead = true");
        let both = adaptive.replace(
            "endpoint_addr = \"10.2.0.2\"",
            "endpoint_addr = \"10.2.0.2\"\ninterface = \"wwan1\"",
        );
        assert!(
            Config::parse(&both, "gw.toml")
                .unwrap()
                .phad
                .unwrap()
                .adaptive_lead
        );
        // Carrier B has no interface.
        let e = err(&adaptive);
        assert!(
            e.contains("phad.adaptive_lead") && e.contains("interface") && e.contains("\"B\""),
            "{e}"
        );
    }

    #[test]
    fn lead_time_is_measured_when_no_rtt_is_configured() {
        let c = Config::parse(&GOOD.replace("rtt_ms = 80\n", ""), "gw.toml").unwrap();
        assert_eq!(c.phad.unwrap().lead_time(), None);
        let c =
            Config::parse(&GOOD.replace("rtt_ms = 80", "lead_time_ms = 30"), "gw.toml").unwrap();
        assert_eq!(c.phad.unwrap().lead_time(), Some(Duration::from_millis(30)));
    }

    #[test]
    fn misspelt_key_is_named() {
        let e = err(&GOOD.replace("rtt_ms = 80", "rtt_msec = 80"));
        assert!(e.contains("gw.toml") && e.contains("rtt_msec"), "{e}");
    }

    #[test]
    fn ground_mode_needs_upstream() {
        let e = err("[proxy]\nmode = \"ground\"\nlisten = \"0.0.0.0:1\"\n");
        assert!(e.contains("proxy.upstream"), "{e}");
    }

    #[test]
    fn bad_mode_and_address_are_errors() {
        let e = err("[proxy]\nmode = \"plane\"\nlisten = \"0.0.0.0:1\"\n");
        assert!(e.contains("plane") && e.contains("gw.toml"), "{e}");
        let e = err("[proxy]\nmode = \"train\"\nlisten = \"nowhere\"\n");
        assert!(e.contains("listen") || e.contains("address"), "{e}");
    }

    #[test]
    fn carrier_needs_endpoint_and_unique_name() {
        let e = err(&GOOD.replace("endpoint_id = 1\n", ""));
        assert!(e.contains("carrier[0].endpoint_id"), "{e}");
        let e = err(&GOOD.replace("name = \"B\"", "name = \"A\""));
        assert!(e.contains("duplicate carrier"), "{e}");
        let e = err(&GOOD.replace("endpoint_id = 1", "endpoint_id = 0"));
        assert!(e.contains("1..=255"), "{e}");
    }

    #[test]
    fn out_of_range_numbers_are_named() {
        let e = err(&GOOD.replace("rtt_ms = 80", "rtt_ms = -3"));
        assert!(e.contains("phad.rtt_ms") && e.contains("-3"), "{e}");
        let e = err(&GOOD.replace("mode = \"train\"", "mode = \"train\"\nbuffer_bytes = 10"));
        assert!(e.contains("proxy.buffer_bytes"), "{e}");
    }

    #[test]
    fn durations_have_a_physical_floor() {
        // Issue 17: a tick of 5e-324 ms was accepted ("> 0") and would spin the controller.
        let e = err(&GOOD.replace("[phad]", "[phad]\ntick_ms = 5e-324"));
        assert!(
            e.contains("key `phad.tick_ms`: expected a number from 1 to 10000, got 5e-324"),
            "{e}"
        );
        assert!(Config::parse(&GOOD.replace("[phad]", "[phad]\ntick_ms = 1"), "gw.toml").is_ok());
    }

    #[test]
    fn type_errors_name_the_key_in_the_users_words() {
        // Issue 17: parse errors gave a line but no key, and serde's type names.
        let e = err(&GOOD.replace("rtt_ms = 80", "rtt_ms = \"fast\""));
        assert!(
            e.contains("key `phad.rtt_ms`: line ")
                && e.contains("expected a number, found the text \"fast\""),
            "{e}"
        );
        let e = err(&GOOD.replace("endpoint_id = 1", "endpoint_id = -1"));
        assert!(
            e.contains("key `carrier[0].endpoint_id`") && !e.contains("u8"),
            "{e}"
        );
        let long = "x".repeat(100_000);
        let e = err(&GOOD.replace("rtt_ms = 80", &format!("rtt_ms = \"{long}\"")));
        assert!(
            e.len() < 300,
            "the value is quoted in full: {} bytes",
            e.len()
        );
    }

    #[test]
    fn service_keys_have_defaults_and_ranges() {
        let c = Config::parse(GOOD, "gw.toml").unwrap();
        assert_eq!(c.shutdown.drain_s, 30.0);
        assert_eq!(c.figures.stall_after_ms, 500.0);
        assert!(c.carriers[0].manage_endpoint);
        let dr = c.phad.unwrap().dead_reckoning;
        assert_eq!(
            (dr.max_s, dr.max_error_m, dr.accel_mps2),
            (120.0, 500.0, 0.3)
        );
        let e = err(&GOOD.replace(
            "rtt_ms = 80",
            "rtt_ms = 80\ndead_reckoning = { max_s = -1 }",
        ));
        assert!(e.contains("phad.dead_reckoning.max_s"), "{e}");
        let e = err(&GOOD.replace(
            "rtt_ms = 80",
            "rtt_ms = 80\ndead_reckoning = { max_sec = 1 }",
        ));
        assert!(e.contains("max_sec"), "{e}");
        let e = err(&format!("{GOOD}\n[shutdown]\ndrain_s = 7200\n"));
        assert!(e.contains("shutdown.drain_s"), "{e}");
        let e = err(&format!("{GOOD}\n[figures]\nposition_bin_m = 0\n"));
        assert!(e.contains("figures.position_bin_m"), "{e}");
        // Probes need a target with a port, and a carrier with an interface to go out of.
        let ok = format!("{GOOD}\n[health]\nprobe = \"192.0.2.1:443\"\n");
        assert_eq!(
            Config::parse(&ok, "gw.toml")
                .unwrap()
                .health
                .unwrap()
                .failures,
            3
        );
        let e = err(&ok.replace(":443", ":0"));
        assert!(e.contains("health.probe"), "{e}");
        let e = err(&ok.replace("interface = \"wwan0\"\n", ""));
        assert!(e.contains("key `health`") && e.contains("interface"), "{e}");
        let e = err(&format!("{ok}failures = 0\n"));
        assert!(e.contains("health.failures"), "{e}");
    }

    #[test]
    fn empty_config_is_an_error() {
        let e = err("");
        assert!(e.contains("nothing to do"), "{e}");
    }

    #[test]
    fn unknown_position_source_is_an_error() {
        let e = err(&GOOD.replace("source = \"replay\"", "source = \"glonass\""));
        assert!(e.contains("glonass"), "{e}");
    }
}

#[cfg(test)]
mod packaging_tests {
    use super::*;

    #[test]
    fn shipped_example_configs_are_valid() {
        let c = Config::parse(
            include_str!("../../../packaging/gateway.toml"),
            "packaging/gateway.toml",
        )
        .unwrap();
        assert_eq!(c.carriers.len(), 2);
        assert!(matches!(
            c.phad.unwrap().position,
            PositionConfig::Gpsd { .. }
        ));
        let g = Config::parse(
            include_str!("../../../packaging/ground.toml"),
            "packaging/ground.toml",
        )
        .unwrap();
        assert_eq!(g.proxy.unwrap().mode, ProxyMode::Ground);
    }
}
