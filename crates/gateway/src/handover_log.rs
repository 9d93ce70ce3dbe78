//! Handover logging, for learning the handover table on later runs (PHA, seeds.md section 1:
//! "the table is accumulated over every run so it adapts to physical changes").
//!
//! Handovers are observed from the modem side:
//! - per carrier, a `cell_command` polled every `cell_poll_ms` whose JSON output holds the serving
//!   cell id at `cell_pointer` (for ModemManager: `mmcli -m N --location-get -J` with
//!   `/modem/location/3gpp/cid`, once 3GPP location gathering is enabled with
//!   `mmcli -m N --location-enable-3gpp`); a change of cell id is a handover;
//! - an events file (JSON lines, followed as it grows; a FIFO works too) written by the testbed
//!   emulator or any modem helper: `{"carrier":"A","cell":"1234"}` (a handover when the cell
//!   changes) or `{"carrier":"A","event":"handover","interruption_ms":45.0}`.
//!
//! Each handover observed with a valid position is appended to the log as one JSON object per line
//! in the shape of `railpath_radio::HandoverRecord` (`t_s` is Unix time here), plus `speed_mps`
//! and `predicted` (whether the position was inside one of the carrier's table zones, which is
//! also counted as a prediction hit, else a miss). `railpath table learn` reads these records.

use crate::metrics::Metrics;
use crate::phad::Fix;
use crate::position::{read_line_bounded, PositionState, MAX_LINE};
use railpath_core::Time;
use railpath_radio::table::Predictor;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// One observation from the modem side.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    pub carrier: String,
    /// Serving cell now, if the source reports cells.
    pub cell: Option<String>,
    /// An explicit handover event (no cell comparison needed).
    pub handover: bool,
    pub interruption_ms: Option<f64>,
}

/// Parses one events-file line.
pub fn parse_event(line: &str) -> Result<Observation, String> {
    let v: Value = serde_json::from_str(line.trim()).map_err(|e| format!("not JSON: {e}"))?;
    let carrier = v
        .get("carrier")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or("expected a non-empty string `carrier`")?
        .to_string();
    let cell = match v.get("cell") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => return Err("`cell` must be a string or a number".into()),
    };
    let handover = match v.get("event").map(|e| e.as_str()) {
        None => false,
        Some(Some("handover")) => true,
        Some(_) => return Err("`event` must be \"handover\"".into()),
    };
    if cell.is_none() && !handover {
        return Err("expected `cell` or `\"event\": \"handover\"`".into());
    }
    let interruption_ms = v.get("interruption_ms").and_then(Value::as_f64);
    Ok(Observation {
        carrier,
        cell,
        handover,
        interruption_ms,
    })
}

/// Extracts a cell id from a command's JSON output.
pub fn cell_from_json(out: &str, pointer: &str) -> Result<String, String> {
    let v: Value = serde_json::from_str(out).map_err(|e| format!("output is not JSON: {e}"))?;
    match v.pointer(pointer) {
        Some(Value::String(s)) if !s.is_empty() && s != "--" => Ok(s.clone()),
        Some(Value::Number(n)) => Ok(n.to_string()),
        Some(other) => Err(format!("{pointer} is {other}, not a cell id")),
        None => Err(format!("{pointer} not found in the output")),
    }
}

/// Turns observations into handover records.
pub struct HandoverLogger {
    path: PathBuf,
    /// The controller's current table (replaced on a SIGHUP reload).
    predictor: watch::Receiver<Option<Predictor>>,
    position: watch::Receiver<PositionState>,
    stale: Duration,
    metrics: Arc<Metrics>,
    cells: BTreeMap<String, String>,
}

/// A record as written to the log: the simulator's handover record (so `railpath table learn`
/// reads it as is) plus the speed and whether the table predicted it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct LogRecord {
    #[serde(flatten)]
    pub handover: railpath_radio::HandoverRecord,
    pub speed_mps: f64,
    pub predicted: bool,
}

impl HandoverLogger {
    pub fn new(
        path: PathBuf,
        predictor: watch::Receiver<Option<Predictor>>,
        position: watch::Receiver<PositionState>,
        stale: Duration,
        metrics: Arc<Metrics>,
    ) -> HandoverLogger {
        HandoverLogger {
            path,
            predictor,
            position,
            stale,
            metrics,
            cells: BTreeMap::new(),
        }
    }

    /// Handles one observation: returns the record when it is a handover at a known position.
    pub fn observe(&mut self, o: Observation, now: Instant) -> Option<LogRecord> {
        let (from, to) = match &o.cell {
            Some(c) => {
                let prev = self.cells.insert(o.carrier.clone(), c.clone());
                match prev {
                    Some(p) if p != *c => (p, c.clone()),
                    // First sighting or same cell: not a handover unless the event says so.
                    _ if !o.handover => return None,
                    Some(p) => (p, c.clone()),
                    None => (String::new(), c.clone()),
                }
            }
            None => (String::new(), String::new()),
        };
        if let Some(m) = self.metrics.carrier(&o.carrier) {
            m.handovers.fetch_add(1, Relaxed);
        }
        let fix = match &*self.position.borrow() {
            PositionState::Fix { fix, at } if now.saturating_duration_since(*at) <= self.stale => {
                let age = now.saturating_duration_since(*at).as_secs_f64();
                Some(Fix {
                    position_m: fix.position_m + fix.speed_mps * age,
                    speed_mps: fix.speed_mps,
                })
            }
            _ => None,
        };
        let Some(fix) = fix else {
            warn!(carrier = %o.carrier, from = %from, to = %to, "handover observed without a valid position; not logged");
            return None;
        };
        let predicted = self.predictor.borrow().as_ref().is_some_and(|p| {
            p.predict_carrier(&o.carrier, fix.position_m, fix.speed_mps, Time::ZERO)
                .map(|v| v.iter().any(|z| z.in_zone))
                .unwrap_or(false)
        });
        if let Some(m) = self.metrics.carrier(&o.carrier) {
            if predicted {
                m.prediction_hits.fetch_add(1, Relaxed);
            } else {
                m.prediction_misses.fetch_add(1, Relaxed);
            }
        }
        let t_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        info!(carrier = %o.carrier, from = %from, to = %to, position_m = fix.position_m, predicted, "handover");
        Some(LogRecord {
            handover: railpath_radio::HandoverRecord {
                t_s,
                position_m: fix.position_m,
                carrier: o.carrier,
                from_cell: from,
                to_cell: to,
                interruption_ms: o.interruption_ms.unwrap_or(0.0),
                ..Default::default()
            },
            speed_mps: fix.speed_mps,
            predicted,
        })
    }

    /// Consumes observations until the channel closes, appending records to the log file.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Observation>) {
        while let Some(o) = rx.recv().await {
            let Some(rec) = self.observe(o, Instant::now()) else {
                continue;
            };
            let line = match serde_json::to_string(&rec) {
                Ok(l) => l + "\n",
                Err(e) => {
                    warn!(error = %e, "cannot encode handover record");
                    continue;
                }
            };
            let r = async {
                let mut f = tokio::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&self.path)
                    .await?;
                f.write_all(line.as_bytes()).await?;
                f.flush().await
            }
            .await;
            if let Err(e) = r {
                warn!(path = %self.path.display(), error = %e, "cannot append to the handover log");
            }
        }
    }
}

/// Follows an events file as it grows, sending observations.
pub async fn follow_events(path: PathBuf, tx: mpsc::Sender<Observation>) {
    let name = path.display().to_string();
    loop {
        let f = match tokio::fs::File::open(&path).await {
            Ok(f) => f,
            Err(e) => {
                debug!(path = %name, error = %e, "events file not available yet");
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        info!(path = %name, "following handover events");
        let mut r = BufReader::new(f);
        let mut bad = 0u64;
        loop {
            match read_line_bounded(&mut r, MAX_LINE).await {
                Ok(None) => tokio::time::sleep(Duration::from_millis(20)).await,
                Ok(Some(Ok(l))) if l.trim().is_empty() => {}
                Ok(Some(Ok(l))) => match parse_event(&l) {
                    Ok(o) => {
                        if tx.send(o).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        bad += 1;
                        if bad <= 10 {
                            warn!(path = %name, error = %e, "bad handover event ignored");
                        }
                    }
                },
                Ok(Some(Err(e))) => warn!(path = %name, error = %e, "bad handover event ignored"),
                Err(e) => {
                    warn!(path = %name, error = %e, "events file read error; reopening");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    break;
                }
            }
        }
    }
}

/// Polls a carrier's `cell_command`, sending its cell id after every poll.
pub async fn poll_cell(
    carrier: String,
    argv: Vec<String>,
    pointer: String,
    every: Duration,
    tx: mpsc::Sender<Observation>,
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failures = 0u64;
    loop {
        tick.tick().await;
        let out = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::process::Command::new(&argv[0])
                .args(&argv[1..])
                .kill_on_drop(true)
                .output(),
        )
        .await;
        let cell = match out {
            Ok(Ok(o)) if o.status.success() => {
                cell_from_json(&String::from_utf8_lossy(&o.stdout), &pointer)
            }
            Ok(Ok(o)) => Err(format!("exited with {}", o.status)),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err("timed out after 5 s".into()),
        };
        match cell {
            Ok(c) => {
                failures = 0;
                let o = Observation {
                    carrier: carrier.clone(),
                    cell: Some(c),
                    handover: false,
                    interruption_ms: None,
                };
                if tx.send(o).await.is_err() {
                    return;
                }
            }
            Err(e) => {
                failures += 1;
                if failures <= 3 || failures % 100 == 0 {
                    warn!(carrier = %carrier, command = ?argv, error = %e, "cell_command failed");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use railpath_radio::table::HandoverTable;

    #[test]
    fn events_parse_or_say_why() {
        assert_eq!(
            parse_event(r#"{"carrier":"A","cell":12}"#).unwrap(),
            Observation {
                carrier: "A".into(),
                cell: Some("12".into()),
                handover: false,
                interruption_ms: None
            }
        );
        let o = parse_event(r#"{"carrier":"B","event":"handover","interruption_ms":45}"#).unwrap();
        assert!(o.handover && o.interruption_ms == Some(45.0));
        for bad in [
            "",
            "{}",
            r#"{"carrier":""}"#,
            r#"{"carrier":"A"}"#,
            r#"{"carrier":"A","event":"x"}"#,
            r#"{"carrier":"A","cell":[1]}"#,
        ] {
            assert!(parse_event(bad).is_err(), "accepted {bad}");
        }
    }

    #[test]
    fn log_records_are_read_as_handover_records_and_learned() {
        let rec = LogRecord {
            handover: railpath_radio::HandoverRecord {
                t_s: 1.7e9,
                position_m: 1040.0,
                carrier: "A".into(),
                from_cell: "1".into(),
                to_cell: "2".into(),
                interruption_ms: 45.0,
                ..Default::default()
            },
            speed_mps: 80.0,
            predicted: true,
        };
        let line = serde_json::to_string(&rec).unwrap();
        // The documented line (docs/gateway.md): the simulator's fields, then speed and predicted.
        assert_eq!(
            line,
            r#"{"t_s":1700000000.0,"position_m":1040.0,"carrier":"A","from_cell":"1","to_cell":"2","interruption_ms":45.0,"speed_mps":80.0,"predicted":true}"#
        );
        let h: railpath_radio::HandoverRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(
            (h.carrier.as_str(), h.position_m, h.interruption_ms),
            ("A", 1040.0, 45.0)
        );
        // One run with this handover and a 20 m GPS error: zone [1020, 1060].
        let t = HandoverTable::learn(&[("run1".into(), vec![h])], 20.0).unwrap();
        let z = &t.carriers["A"].zones[0];
        assert_eq!((z.start_m, z.end_m, z.count), (1020.0, 1060.0, 1));
    }

    #[test]
    fn cell_id_from_mmcli_like_json() {
        let out = r#"{"modem":{"location":{"3gpp":{"cid":"0001A2B3","lac":"--"}}}}"#;
        assert_eq!(
            cell_from_json(out, "/modem/location/3gpp/cid").unwrap(),
            "0001A2B3"
        );
        assert!(cell_from_json(out, "/modem/location/3gpp/lac").is_err());
        assert!(cell_from_json(out, "/modem/x").is_err());
        assert!(cell_from_json("garbage", "/a").is_err());
    }

    #[test]
    fn cell_changes_become_records_with_hits_and_misses() {
        let t = HandoverTable::from_json_str(
            r#"{"format": "railpath-handover-table/1", "gps_error_m": 20.0, "runs": 1,
                "carriers": {"A": {"zones": [{"start_m": 1000.0, "end_m": 1100.0, "count": 1}], "runs": 1}}}"#,
            "t",
        )
        .unwrap();
        let now = Instant::now();
        let (tx, rx) = watch::channel(PositionState::Fix {
            fix: Fix {
                position_m: 1050.0,
                speed_mps: 0.0,
            },
            at: now,
        });
        let m = Metrics::new(&[("A".into(), None)]);
        let mut l = HandoverLogger::new(
            "/dev/null".into(),
            watch::channel(Some(Predictor::new(&t))).1,
            rx,
            Duration::from_secs(2),
            m.clone(),
        );
        let obs = |c: &str| Observation {
            carrier: "A".into(),
            cell: Some(c.into()),
            handover: false,
            interruption_ms: None,
        };
        assert!(l.observe(obs("1"), now).is_none()); // first sighting
        assert!(l.observe(obs("1"), now).is_none()); // same cell
        let r = l.observe(obs("2"), now).unwrap();
        assert_eq!(
            (
                r.handover.from_cell.as_str(),
                r.handover.to_cell.as_str(),
                r.handover.position_m,
                r.predicted
            ),
            ("1", "2", 1050.0, true)
        );
        tx.send_replace(PositionState::Fix {
            fix: Fix {
                position_m: 3000.0,
                speed_mps: 0.0,
            },
            at: now,
        });
        assert!(!l.observe(obs("3"), now).unwrap().predicted);
        assert_eq!(m.carriers[0].prediction_hits.load(Relaxed), 1);
        assert_eq!(m.carriers[0].prediction_misses.load(Relaxed), 1);
        // No valid position: counted as a handover, not logged.
        tx.send_replace(PositionState::Unknown("lost".into()));
        assert!(l.observe(obs("4"), now).is_none());
        assert_eq!(m.carriers[0].handovers.load(Relaxed), 3);
    }
}
