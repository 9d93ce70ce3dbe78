//! The learned handover table and its position-based predictor.
//!
//! Source: the PHA paper (seeds.md §1, "Handover table" and Algorithm 1): per carrier, the track
//! zones where handovers happen, learned from preliminary runs (50 in the paper), each zone widened
//! by the GPS error, and accumulated over every later run so the table follows physical changes.
//! Prediction is by position, not time, because trains run late.
//!
//! Learning rule (see docs/models/radio.md): every logged handover start at position `p` of
//! carrier `c` contributes the interval `[p - gps_error_m, p + gps_error_m]`; a failure (a
//! handover failure or a radio link failure, with the radio model's failure model) contributes
//! the stretch where it happened, from where its procedure began (the A3 report, or T310's start)
//! to where the link came back, widened the same way: the carrier is unusable over all of it.
//! Overlapping (or touching) intervals of the same carrier are united into one zone whose `count`
//! is the number of handovers it holds, `failures` and `rlfs` how many of them failed. Merging two tables unites their zones the same way and adds the counts and
//! run numbers. The predictor, for a train at `position_m` moving at `speed_mps`, reports every zone
//! the train is in, or will enter within `horizon` at constant speed.
//!
//! File format (JSON, also read by the onboard gateway):
//! ```json
//! {"format": "railpath-handover-table/1", "gps_error_m": 20.0, "runs": 50,
//!  "carriers": {"A": {"zones": [{"start_m": 1005.0, "end_m": 1090.0, "count": 50}], "runs": 50}}}
//! ```
//! Zones of a carrier are sorted by `start_m` and do not overlap; `start_m <= end_m`. Format 2
//! (`railpath-handover-table/2`) adds to a zone the counts of handover failures and radio link
//! failures it holds (`"failures": 3, "rlfs": 1`, each absent when 0); a table with no failure is
//! written in format 1, and both are read.

use crate::{HandoverKind, HandoverRecord};
use railpath_core::{show_num, Time, MAX_TRACK_M};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

/// The `format` string of a handover table without failures (the first format).
pub const FORMAT: &str = "railpath-handover-table/1";
/// The `format` string of a handover table whose zones count failures.
pub const FORMAT_2: &str = "railpath-handover-table/2";

/// Largest GPS error a table may assume, metres (a zone is a handover place +- this much; a
/// positioning error of a kilometre is far beyond any GPS receiver's and would blank the track).
pub const MAX_GPS_ERROR_M: f64 = 1000.0;

/// One track zone where a carrier's handovers start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Zone {
    /// Start of the zone along the track, metres.
    pub start_m: f64,
    /// End of the zone along the track, metres (`>= start_m`).
    pub end_m: f64,
    /// Handovers observed in this zone, over all runs (failures included).
    pub count: u64,
    /// Of those, handovers that failed (command lost, T304 expired, or cut short by a radio
    /// link failure while being prepared).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failures: u64,
    /// Of those, radio link failures with no handover under way.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rlfs: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a zone mostly holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ZoneKind {
    /// Handovers that succeeded, only.
    Handover,
    /// Handover failures (at least as many as radio link failures).
    HandoverFailure,
    /// Radio link failures.
    RadioLinkFailure,
}

impl Zone {
    /// A zone of `count` handovers, none failed.
    pub fn new(start_m: f64, end_m: f64, count: u64) -> Zone {
        Zone {
            start_m,
            end_m,
            count,
            failures: 0,
            rlfs: 0,
        }
    }

    /// Its kind: a failure zone if any failure happened in it.
    pub fn kind(&self) -> ZoneKind {
        match (self.failures, self.rlfs) {
            (0, 0) => ZoneKind::Handover,
            (f, r) if f >= r => ZoneKind::HandoverFailure,
            _ => ZoneKind::RadioLinkFailure,
        }
    }
}

/// The zones of one carrier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CarrierZones {
    /// Sorted by `start_m`, non-overlapping.
    pub zones: Vec<Zone>,
    /// Runs that contributed to this carrier's zones.
    pub runs: u64,
}

/// A learned handover table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoverTable {
    /// Always [`FORMAT`].
    pub format: String,
    /// Half-width by which each observed handover position was widened, metres.
    pub gps_error_m: f64,
    /// Runs learned from, in total.
    pub runs: u64,
    /// Per carrier id.
    pub carriers: BTreeMap<String, CarrierZones>,
}

/// A problem with a handover table or with the records it is learned from: the file (or run),
/// the field path (e.g. `carriers.A.zones[2].end_m`) and what was expected.
#[derive(Debug, Clone, PartialEq)]
pub struct TableError {
    pub file: String,
    pub field: String,
    pub message: String,
}

impl TableError {
    pub fn new(file: &str, field: impl Into<String>, message: impl Into<String>) -> TableError {
        TableError {
            file: file.to_string(),
            field: field.into(),
            message: railpath_core::shorten(&message.into()),
        }
    }
}

impl fmt::Display for TableError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.file.is_empty(), self.field.is_empty()) {
            (true, true) => write!(f, "{}", self.message),
            (true, false) => write!(f, "{}: {}", self.field, self.message),
            (false, true) => write!(f, "{}: {}", self.file, self.message),
            (false, false) => write!(f, "{}: {}: {}", self.file, self.field, self.message),
        }
    }
}

impl std::error::Error for TableError {}

/// Unite zones (any order) into sorted, non-overlapping zones; overlapping or touching zones
/// become one whose count is the sum.
fn unite(mut zones: Vec<Zone>) -> Vec<Zone> {
    zones.sort_by(|a, b| {
        a.start_m
            .total_cmp(&b.start_m)
            .then(a.end_m.total_cmp(&b.end_m))
    });
    let mut out: Vec<Zone> = Vec::with_capacity(zones.len());
    for z in zones {
        match out.last_mut() {
            Some(cur) if z.start_m <= cur.end_m => {
                cur.end_m = cur.end_m.max(z.end_m);
                cur.count += z.count;
                cur.failures += z.failures;
                cur.rlfs += z.rlfs;
            }
            _ => out.push(z),
        }
    }
    out
}

impl HandoverTable {
    /// A table with no carriers and no runs.
    pub fn empty(gps_error_m: f64) -> HandoverTable {
        HandoverTable {
            format: FORMAT.to_string(),
            gps_error_m,
            runs: 0,
            carriers: BTreeMap::new(),
        }
    }

    /// Learn zones from the handover logs of earlier runs: `records[i] = (run id, handovers)`.
    /// Every run counts towards every carrier seen in any of the runs (a run in which a carrier
    /// did not hand over is evidence too). Errors name the run and the record field.
    pub fn learn(
        records: &[(String, Vec<HandoverRecord>)],
        gps_error_m: f64,
    ) -> Result<HandoverTable, TableError> {
        if !(gps_error_m.is_finite() && (0.0..=MAX_GPS_ERROR_M).contains(&gps_error_m)) {
            return Err(TableError::new(
                "",
                "gps_error_m",
                format!(
                    "expected metres from 0 to {MAX_GPS_ERROR_M}, found {}",
                    show_num(gps_error_m)
                ),
            ));
        }
        let mut per: BTreeMap<String, Vec<Zone>> = BTreeMap::new();
        for (run, hs) in records {
            for (i, h) in hs.iter().enumerate() {
                if h.carrier.is_empty() {
                    return Err(TableError::new(
                        run,
                        format!("handovers[{i}].carrier"),
                        "expected a non-empty carrier id",
                    ));
                }
                if !(h.position_m.is_finite() && h.position_m.abs() <= MAX_TRACK_M) {
                    return Err(TableError::new(
                        run,
                        format!("handovers[{i}].position_m"),
                        format!(
                            "expected a position in metres from -{MAX_TRACK_M} to {MAX_TRACK_M}, found {}",
                            show_num(h.position_m)
                        ),
                    ));
                }
                let mut z = Zone::new(h.position_m - gps_error_m, h.position_m + gps_error_m, 1);
                match h.kind {
                    Some(k @ (HandoverKind::Failure | HandoverKind::Rlf)) => {
                        // The stretch of the failure: from its onset to where the link came
                        // back (the log's position when either is missing).
                        for (key, v) in [
                            ("onset_position_m", h.onset_position_m),
                            ("end_position_m", h.end_position_m),
                        ] {
                            if let Some(v) =
                                v.filter(|v| !(v.is_finite() && v.abs() <= MAX_TRACK_M))
                            {
                                return Err(TableError::new(
                                    run,
                                    format!("handovers[{i}].{key}"),
                                    format!(
                                        "expected a position in metres from -{MAX_TRACK_M} to {MAX_TRACK_M}, found {}",
                                        show_num(v)
                                    ),
                                ));
                            }
                        }
                        let ends = [
                            h.position_m,
                            h.onset_position_m.unwrap_or(h.position_m),
                            h.end_position_m.unwrap_or(h.position_m),
                        ];
                        let lo = ends.iter().copied().fold(f64::INFINITY, f64::min);
                        let hi = ends.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        z.start_m = lo - gps_error_m;
                        z.end_m = hi + gps_error_m;
                        if k == HandoverKind::Failure {
                            z.failures = 1;
                        } else {
                            z.rlfs = 1;
                        }
                    }
                    Some(HandoverKind::Success) | None => {}
                }
                per.entry(h.carrier.clone()).or_default().push(z);
            }
        }
        let runs = records.len() as u64;
        let carriers = per
            .into_iter()
            .map(|(c, zs)| {
                (
                    c,
                    CarrierZones {
                        zones: unite(zs),
                        runs,
                    },
                )
            })
            .collect();
        let mut t = HandoverTable {
            format: FORMAT.to_string(),
            gps_error_m,
            runs,
            carriers,
        };
        t.format = t.format_needed().to_string();
        Ok(t)
    }

    /// The oldest format that holds this table: 2 if a zone counts failures, else 1.
    pub fn format_needed(&self) -> &'static str {
        let failures = self
            .carriers
            .values()
            .flat_map(|c| &c.zones)
            .any(|z| z.failures > 0 || z.rlfs > 0);
        if failures {
            FORMAT_2
        } else {
            FORMAT
        }
    }

    /// Accumulate `other` into `self`: zones of the same carrier are united (counts added), run
    /// numbers are added, and the GPS error becomes the larger of the two.
    pub fn merge(&mut self, other: &HandoverTable) {
        self.gps_error_m = self.gps_error_m.max(other.gps_error_m);
        self.runs += other.runs;
        for (c, oz) in &other.carriers {
            let e = self.carriers.entry(c.clone()).or_insert(CarrierZones {
                zones: Vec::new(),
                runs: 0,
            });
            let mut all = std::mem::take(&mut e.zones);
            all.extend(oz.zones.iter().cloned());
            e.zones = unite(all);
            e.runs += oz.runs;
        }
        self.format = self.format_needed().to_string();
    }

    /// Carrier ids in the table, sorted.
    pub fn known_carriers(&self) -> Vec<&str> {
        self.carriers.keys().map(String::as_str).collect()
    }

    /// Check the table against the carriers a scenario (or a gateway) knows: every carrier of the
    /// table must be one of `known`, and every carrier in `required` must be in the table.
    /// `file` names the table in errors.
    pub fn check_carriers(
        &self,
        file: &str,
        known: &[&str],
        required: &[&str],
    ) -> Result<(), TableError> {
        for c in self.carriers.keys() {
            if !known.contains(&c.as_str()) {
                return Err(TableError::new(
                    file,
                    format!("carriers.{c}"),
                    format!("the table is for carrier {c:?}, which is unknown here; expected carriers among: {}", known.join(", ")),
                ));
            }
        }
        for c in required {
            if !self.carriers.contains_key(*c) {
                return Err(TableError::new(
                    file,
                    "carriers",
                    format!(
                        "no zones for carrier {c:?}; the table has: {} (learn it from runs that use {c:?})",
                        self.known_carriers().join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Share of `[from_m, to_m]` covered by the zones of `carrier` (0 for an unknown carrier).
    pub fn coverage(&self, carrier: &str, from_m: f64, to_m: f64) -> f64 {
        let Some(cz) = self.carriers.get(carrier) else {
            return 0.0;
        };
        if to_m <= from_m {
            return 0.0;
        }
        let covered: f64 = cz
            .zones
            .iter()
            .map(|z| (z.end_m.min(to_m) - z.start_m.max(from_m)).max(0.0))
            .sum();
        covered / (to_m - from_m)
    }

    /// Check the invariants of the format; `file` names the source in errors.
    pub fn validate(&self, file: &str) -> Result<(), TableError> {
        if self.format != FORMAT && self.format != FORMAT_2 {
            return Err(TableError::new(
                file,
                "format",
                format!(
                    "expected {FORMAT:?} or {FORMAT_2:?}, found {:?}",
                    self.format
                ),
            ));
        }
        if self.format == FORMAT && self.format_needed() == FORMAT_2 {
            return Err(TableError::new(
                file,
                "format",
                format!("zones count failures, which needs {FORMAT_2:?}, not {FORMAT:?}"),
            ));
        }
        if !(self.gps_error_m.is_finite() && (0.0..=MAX_GPS_ERROR_M).contains(&self.gps_error_m)) {
            return Err(TableError::new(
                file,
                "gps_error_m",
                format!(
                    "expected metres from 0 to {MAX_GPS_ERROR_M}, found {}",
                    show_num(self.gps_error_m)
                ),
            ));
        }
        let reach = MAX_TRACK_M + MAX_GPS_ERROR_M;
        for (c, cz) in &self.carriers {
            if c.is_empty() {
                return Err(TableError::new(
                    file,
                    "carriers",
                    "carrier ids must be non-empty",
                ));
            }
            let mut prev_end = f64::NEG_INFINITY;
            for (i, z) in cz.zones.iter().enumerate() {
                let k = |f: &str| format!("carriers.{c}.zones[{i}].{f}");
                for (key, v) in [("start_m", z.start_m), ("end_m", z.end_m)] {
                    if !(v.is_finite() && v.abs() <= reach) {
                        return Err(TableError::new(
                            file,
                            k(key),
                            format!(
                                "expected a position in metres from -{reach} to {reach}, found {}",
                                show_num(v)
                            ),
                        ));
                    }
                }
                if z.end_m < z.start_m {
                    return Err(TableError::new(
                        file,
                        k("end_m"),
                        format!(
                            "expected end_m >= start_m ({}), found {}",
                            z.start_m, z.end_m
                        ),
                    ));
                }
                if z.failures + z.rlfs > z.count {
                    return Err(TableError::new(
                        file,
                        k("count"),
                        format!(
                            "expected at least failures + rlfs ({}) handovers, found {}",
                            z.failures + z.rlfs,
                            z.count
                        ),
                    ));
                }
                if z.start_m <= prev_end {
                    return Err(TableError::new(
                        file,
                        k("start_m"),
                        format!(
                            "zones must be sorted by start_m and must not overlap; {} is not after the previous zone's end {}",
                            z.start_m, prev_end
                        ),
                    ));
                }
                prev_end = z.end_m;
            }
        }
        Ok(())
    }

    /// Parse table JSON; `file` names the source in errors. Every field is checked by name.
    pub fn from_json_str(text: &str, file: &str) -> Result<HandoverTable, TableError> {
        let v: Value = serde_json::from_str(text)
            .map_err(|e| TableError::new(file, "", format!("not valid JSON: {e}")))?;
        let top = object(&v, file, "")?;
        only_keys(
            top,
            &["format", "gps_error_m", "runs", "carriers"],
            file,
            "",
        )?;
        let format = string(get(top, "format", file, "")?, file, "format")?;
        if format != FORMAT && format != FORMAT_2 {
            return Err(TableError::new(
                file,
                "format",
                format!("expected {FORMAT:?} or {FORMAT_2:?}, found {format:?}"),
            ));
        }
        let gps_error_m = number(get(top, "gps_error_m", file, "")?, file, "gps_error_m")?;
        let runs = count(get(top, "runs", file, "")?, file, "runs")?;
        let cs = object(get(top, "carriers", file, "")?, file, "carriers")?;
        let mut carriers = BTreeMap::new();
        for (c, cv) in cs {
            let p = format!("carriers.{c}");
            let co = object(cv, file, &p)?;
            only_keys(co, &["zones", "runs"], file, &p)?;
            let runs = count(get(co, "runs", file, &p)?, file, &format!("{p}.runs"))?;
            let zp = format!("{p}.zones");
            let zs = get(co, "zones", file, &p)?
                .as_array()
                .ok_or_else(|| TableError::new(file, &zp, "expected an array of zones"))?;
            let mut zones = Vec::with_capacity(zs.len());
            for (i, zv) in zs.iter().enumerate() {
                let q = format!("{zp}[{i}]");
                let zo = object(zv, file, &q)?;
                let keys: &[&str] = if format == FORMAT {
                    &["start_m", "end_m", "count"]
                } else {
                    &["start_m", "end_m", "count", "failures", "rlfs"]
                };
                only_keys(zo, keys, file, &q)?;
                let optional = |key: &str| -> Result<u64, TableError> {
                    zo.get(key)
                        .map_or(Ok(0), |v| count(v, file, &format!("{q}.{key}")))
                };
                zones.push(Zone {
                    start_m: number(get(zo, "start_m", file, &q)?, file, &format!("{q}.start_m"))?,
                    end_m: number(get(zo, "end_m", file, &q)?, file, &format!("{q}.end_m"))?,
                    count: count(get(zo, "count", file, &q)?, file, &format!("{q}.count"))?,
                    failures: optional("failures")?,
                    rlfs: optional("rlfs")?,
                });
            }
            carriers.insert(c.clone(), CarrierZones { zones, runs });
        }
        let t = HandoverTable {
            format,
            gps_error_m,
            runs,
            carriers,
        };
        t.validate(file)?;
        Ok(t)
    }

    /// Read and check a table file.
    pub fn load(path: &Path) -> Result<HandoverTable, TableError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .map_err(|e| TableError::new(&file, "", format!("cannot read handover table: {e}")))?;
        HandoverTable::from_json_str(&text, &file)
    }

    /// Pretty JSON text of the table (stable field and carrier order), in the format it needs.
    pub fn to_json_string(&self) -> String {
        if self.format != self.format_needed() {
            let mut t = self.clone();
            t.format = self.format_needed().to_string();
            return t.to_json_string();
        }
        // Serialising plain structs of strings, numbers and maps cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Write the table to `path`.
    pub fn save(&self, path: &Path) -> Result<(), TableError> {
        let file = path.display().to_string();
        self.validate(&file)?;
        std::fs::write(path, self.to_json_string())
            .map_err(|e| TableError::new(&file, "", format!("cannot write handover table: {e}")))
    }
}

fn join(prefix: &str, key: &str) -> String {
    if prefix.is_empty() {
        key.to_string()
    } else {
        format!("{prefix}.{key}")
    }
}

fn object<'a>(v: &'a Value, file: &str, path: &str) -> Result<&'a Map<String, Value>, TableError> {
    v.as_object().ok_or_else(|| {
        TableError::new(
            file,
            path,
            format!("expected a JSON object, found {}", kind(v)),
        )
    })
}

fn get<'a>(
    o: &'a Map<String, Value>,
    key: &str,
    file: &str,
    prefix: &str,
) -> Result<&'a Value, TableError> {
    o.get(key)
        .ok_or_else(|| TableError::new(file, join(prefix, key), "missing required field"))
}

fn only_keys(
    o: &Map<String, Value>,
    allowed: &[&str],
    file: &str,
    prefix: &str,
) -> Result<(), TableError> {
    for k in o.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(TableError::new(
                file,
                join(prefix, k),
                format!("unknown field; expected one of {}", allowed.join(", ")),
            ));
        }
    }
    Ok(())
}

fn number(v: &Value, file: &str, path: &str) -> Result<f64, TableError> {
    v.as_f64().filter(|x| x.is_finite()).ok_or_else(|| {
        TableError::new(
            file,
            path,
            format!("expected a finite number, found {}", kind(v)),
        )
    })
}

fn count(v: &Value, file: &str, path: &str) -> Result<u64, TableError> {
    v.as_u64().ok_or_else(|| {
        TableError::new(
            file,
            path,
            format!("expected a non-negative integer, found {v}"),
        )
    })
}

fn string(v: &Value, file: &str, path: &str) -> Result<String, TableError> {
    v.as_str()
        .map(str::to_string)
        .ok_or_else(|| TableError::new(file, path, format!("expected a string, found {}", kind(v))))
}

fn kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// A carrier's handover zone that the train is in or will enter within the horizon.
#[derive(Debug, Clone, PartialEq)]
pub struct Prediction {
    pub carrier: String,
    pub zone_start_m: f64,
    pub zone_end_m: f64,
    /// The train is inside the zone now (bounds inclusive).
    pub in_zone: bool,
    /// Time until the train enters the zone at its current speed; `Some(Time::ZERO)` when in it.
    pub enters_in: Option<Time>,
    /// Time until the train leaves the zone at its current speed; `None` when it is stopped.
    pub leaves_in: Option<Time>,
    /// What the zone holds (handovers that succeed, or failures).
    pub kind: ZoneKind,
    /// Handovers learned in the zone, and how many failed (handover and radio link failures).
    pub count: u64,
    pub failed: u64,
}

/// Position-based handover predictor over a table (PHA's `predict(HO_table, location)`).
///
/// Both directions of travel are supported: `speed_mps > 0` moves towards larger positions,
/// `speed_mps < 0` towards smaller ones; a stopped train (speed 0) only reports zones it is in.
#[derive(Debug, Clone)]
pub struct Predictor {
    carriers: Vec<(String, Vec<Zone>)>,
}

impl Predictor {
    pub fn new(table: &HandoverTable) -> Predictor {
        let carriers = table
            .carriers
            .iter()
            .map(|(c, cz)| (c.clone(), unite(cz.zones.clone())))
            .collect();
        Predictor { carriers }
    }

    /// Carrier ids the table knows, sorted.
    pub fn known_carriers(&self) -> Vec<&str> {
        self.carriers.iter().map(|(c, _)| c.as_str()).collect()
    }

    /// An error naming the carrier and the known ones when `carrier` is not in the table.
    pub fn check_carrier(&self, carrier: &str) -> Result<(), TableError> {
        if self.carriers.iter().any(|(c, _)| c == carrier) {
            Ok(())
        } else {
            Err(TableError::new(
                "",
                format!("carriers.{carrier}"),
                format!(
                    "carrier {carrier:?} is not in the handover table; known carriers: {}",
                    self.known_carriers().join(", ")
                ),
            ))
        }
    }

    /// Every zone, of every carrier, that the train at `position_m` moving at `speed_mps` is in or
    /// enters within `horizon`, ordered by entry time then carrier. Non-finite inputs give no
    /// predictions.
    pub fn predict(&self, position_m: f64, speed_mps: f64, horizon: Time) -> Vec<Prediction> {
        let mut out = Vec::new();
        if !position_m.is_finite() || !speed_mps.is_finite() {
            return out;
        }
        for (c, zones) in &self.carriers {
            predict_zones(c, zones, position_m, speed_mps, horizon, &mut out);
        }
        out.sort_by(|a, b| {
            a.enters_in
                .cmp(&b.enters_in)
                .then_with(|| a.carrier.cmp(&b.carrier))
        });
        out
    }

    /// Like [`Predictor::predict`] for one carrier; an unknown carrier is an error.
    pub fn predict_carrier(
        &self,
        carrier: &str,
        position_m: f64,
        speed_mps: f64,
        horizon: Time,
    ) -> Result<Vec<Prediction>, TableError> {
        self.check_carrier(carrier)?;
        let mut out = Vec::new();
        if position_m.is_finite() && speed_mps.is_finite() {
            if let Some((c, zones)) = self.carriers.iter().find(|(c, _)| c == carrier) {
                predict_zones(c, zones, position_m, speed_mps, horizon, &mut out);
            }
        }
        Ok(out)
    }
}

fn secs(d_m: f64, speed: f64) -> Time {
    Time::from_secs_f64(d_m / speed)
}

fn predict_zones(
    c: &str,
    zones: &[Zone],
    pos: f64,
    v: f64,
    horizon: Time,
    out: &mut Vec<Prediction>,
) {
    let mk =
        |z: &Zone, in_zone: bool, enters_in: Option<Time>, leaves_in: Option<Time>| Prediction {
            carrier: c.to_string(),
            zone_start_m: z.start_m,
            zone_end_m: z.end_m,
            in_zone,
            enters_in,
            leaves_in,
            kind: z.kind(),
            count: z.count,
            failed: z.failures + z.rlfs,
        };
    if v >= 0.0 {
        // Zones ending at or after the position, in travel order.
        let first = zones.partition_point(|z| z.end_m < pos);
        for z in &zones[first..] {
            if z.start_m <= pos {
                let leaves = (v > 0.0).then(|| secs(z.end_m - pos, v));
                out.push(mk(z, true, Some(Time::ZERO), leaves));
                continue;
            }
            if v == 0.0 {
                break;
            }
            let t = secs(z.start_m - pos, v);
            if t > horizon {
                break;
            }
            out.push(mk(z, false, Some(t), Some(secs(z.end_m - pos, v))));
        }
    } else {
        let s = -v;
        // Zones starting at or before the position, in travel order (decreasing position).
        let end = zones.partition_point(|z| z.start_m <= pos);
        for z in zones[..end].iter().rev() {
            if z.end_m >= pos {
                out.push(mk(
                    z,
                    true,
                    Some(Time::ZERO),
                    Some(secs(pos - z.start_m, s)),
                ));
                continue;
            }
            let t = secs(pos - z.end_m, s);
            if t > horizon {
                break;
            }
            out.push(mk(z, false, Some(t), Some(secs(pos - z.start_m, s))));
        }
    }
}

/// The handovers of one run from the text of its `summary.json` (what `railpath table learn`
/// reads); `name` names the file in errors, which say which field is wrong and what was expected.
pub fn handovers_from_summary(text: &str, name: &str) -> Result<Vec<HandoverRecord>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "{name}: not valid JSON: {}",
            railpath_core::user_words(&e.to_string())
        )
    })?;
    let hs = v.get("handovers").ok_or_else(|| {
        format!(
            "{name}: handovers: missing (expected the array of handovers that railpath run writes)"
        )
    })?;
    let arr = match hs {
        Value::Array(a) => a,
        Value::Null => return Err(format!("{name}: handovers: expected an array, found null")),
        _ => {
            return Err(format!(
                "{name}: handovers: expected an array of handover objects"
            ))
        }
    };
    let mut out = Vec::with_capacity(arr.len());
    for (i, h) in arr.iter().enumerate() {
        let r: HandoverRecord = serde_json::from_value(h.clone()).map_err(|e| {
            format!(
                "{name}: handovers[{i}]: {} (expected t_s, position_m, carrier, from_cell, to_cell, interruption_ms)",
                railpath_core::user_words(&e.to_string())
            )
        })?;
        out.push(r);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ho(carrier: &str, position_m: f64) -> HandoverRecord {
        HandoverRecord {
            t_s: position_m / 100.0,
            position_m,
            carrier: carrier.to_string(),
            from_cell: format!("{carrier}-0"),
            to_cell: format!("{carrier}-1"),
            interruption_ms: 50.0,
            ..Default::default()
        }
    }

    fn sample() -> HandoverTable {
        let runs = vec![
            (
                "r1".to_string(),
                vec![ho("A", 1000.0), ho("A", 3000.0), ho("B", 2000.0)],
            ),
            ("r2".to_string(), vec![ho("A", 1010.0), ho("B", 2040.0)]),
        ];
        HandoverTable::learn(&runs, 20.0).unwrap()
    }

    #[test]
    fn learn_widens_and_unites_hand_computed() {
        let t = sample();
        assert_eq!(t.runs, 2);
        assert_eq!(t.known_carriers(), vec!["A", "B"]);
        // A: [980,1020] and [990,1030] overlap -> [980,1030] x2; [2980,3020] x1.
        let a = &t.carriers["A"];
        assert_eq!(a.runs, 2);
        assert_eq!(
            a.zones,
            vec![Zone::new(980.0, 1030.0, 2), Zone::new(2980.0, 3020.0, 1),]
        );
        // B: [1980,2020] and [2020,2060] touch at 2020 -> one zone.
        assert_eq!(t.carriers["B"].zones, vec![Zone::new(1980.0, 2060.0, 2)]);
        // Coverage of A over [0, 5000]: (50 + 40) / 5000.
        assert!((t.coverage("A", 0.0, 5000.0) - 90.0 / 5000.0).abs() < 1e-12);
        assert_eq!(t.coverage("Z", 0.0, 5000.0), 0.0);
    }

    #[test]
    fn learn_rejects_bad_input() {
        let e = HandoverTable::learn(&[], -1.0).unwrap_err();
        assert_eq!(e.field, "gps_error_m");
        let runs = vec![(
            "out/run7".to_string(),
            vec![ho("A", 1.0), ho("A", f64::NAN)],
        )];
        let e = HandoverTable::learn(&runs, 20.0).unwrap_err();
        assert_eq!(e.file, "out/run7");
        assert_eq!(e.field, "handovers[1].position_m");
        let runs = vec![("r".to_string(), vec![ho("", 1.0)])];
        assert_eq!(
            HandoverTable::learn(&runs, 20.0).unwrap_err().field,
            "handovers[0].carrier"
        );
    }

    #[test]
    fn merge_accumulates() {
        let mut t = sample();
        let other = HandoverTable::learn(
            &[("r3".to_string(), vec![ho("A", 1040.0), ho("C", 500.0)])],
            30.0,
        )
        .unwrap();
        t.merge(&other);
        assert_eq!(t.runs, 3);
        assert_eq!(t.gps_error_m, 30.0);
        // [1010,1070] overlaps [980,1030] -> [980,1070], count 3.
        assert_eq!(t.carriers["A"].zones[0], Zone::new(980.0, 1070.0, 3));
        assert_eq!(t.carriers["A"].runs, 3);
        assert_eq!(t.carriers["B"].runs, 2);
        assert_eq!(t.carriers["C"].runs, 1);
        assert_eq!(t.carriers["C"].zones, vec![Zone::new(470.0, 530.0, 1)]);
        t.validate("x").unwrap();
    }

    #[test]
    fn json_round_trip_and_example_format() {
        let t = sample();
        let back = HandoverTable::from_json_str(&t.to_json_string(), "mem").unwrap();
        assert_eq!(back, t);
        let example = r#"{"format": "railpath-handover-table/1", "gps_error_m": 20.0, "runs": 50,
            "carriers": {"A": {"zones": [{"start_m": 1005.0, "end_m": 1090.0, "count": 50}], "runs": 50}}}"#;
        let t = HandoverTable::from_json_str(example, "ex.json").unwrap();
        assert_eq!(t.carriers["A"].zones[0].end_m, 1090.0);
    }

    #[test]
    fn save_and_load_file() {
        let dir = std::env::temp_dir().join(format!("railpath-radio-table-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.json");
        let t = sample();
        t.save(&p).unwrap();
        assert_eq!(HandoverTable::load(&p).unwrap(), t);
        let e = HandoverTable::load(&dir.join("missing.json")).unwrap_err();
        assert!(e.file.ends_with("missing.json"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn load_errors_name_the_field() {
        let bad = |s: &str| HandoverTable::from_json_str(s, "t.json").unwrap_err();
        let e = bad(r#"{"format": "other/2", "gps_error_m": 20, "runs": 1, "carriers": {}}"#);
        assert_eq!((e.file.as_str(), e.field.as_str()), ("t.json", "format"));
        let e = bad(
            r#"{"format": "railpath-handover-table/1", "gps_error_m": 20, "runs": 1, "carriers": {}, "x": 1}"#,
        );
        assert_eq!(e.field, "x");
        let e = bad(
            r#"{"format": "railpath-handover-table/1", "gps_error_m": "20", "runs": 1, "carriers": {}}"#,
        );
        assert_eq!(e.field, "gps_error_m");
        let e =
            bad(r#"{"format": "railpath-handover-table/1", "gps_error_m": 20, "carriers": {}}"#);
        assert_eq!(e.field, "runs");
        let e = bad(
            r#"{"format": "railpath-handover-table/1", "gps_error_m": 20, "runs": 1,
               "carriers": {"A": {"runs": 1, "zones": [{"start_m": 10, "end_m": 5, "count": 1}]}}}"#,
        );
        assert_eq!(e.field, "carriers.A.zones[0].end_m");
        let e = bad(
            r#"{"format": "railpath-handover-table/1", "gps_error_m": 20, "runs": 1,
               "carriers": {"A": {"runs": 1, "zones": [{"start_m": 10, "end_m": 50, "count": 1},
                                                      {"start_m": 40, "end_m": 60, "count": 1}]}}}"#,
        );
        assert_eq!(e.field, "carriers.A.zones[1].start_m");
        let e = bad(
            r#"{"format": "railpath-handover-table/1", "gps_error_m": 20, "runs": 1,
               "carriers": {"A": {"runs": 1, "zones": [{"start_m": 10, "end_m": 50, "count": -1}]}}}"#,
        );
        assert_eq!(e.field, "carriers.A.zones[0].count");
        let e = bad("{not json");
        assert!(e.message.contains("not valid JSON"), "{e}");
    }

    fn failed(
        carrier: &str,
        position_m: f64,
        kind: HandoverKind,
        onset: f64,
        end: f64,
    ) -> HandoverRecord {
        HandoverRecord {
            kind: Some(kind),
            onset_position_m: Some(onset),
            end_position_m: Some(end),
            interruption_ms: 1500.0,
            ..ho(carrier, position_m)
        }
    }

    #[test]
    fn failures_give_wider_zones_hand_computed() {
        // Run 1: a handover failure whose A3 report came at 950 m, outage from 1000 m, link back
        // at 1120 m -> [950-20, 1120+20] = [930, 1140]. A successful handover at 1130 m
        // ([1110, 1150]) overlaps it -> one zone [930, 1150], count 2, one failure.
        // Run 2: a radio link failure, T310 from 3000 m, outage from 3030 m, back at 3100 m
        // -> [2980, 3120], count 1, one RLF.
        let runs = vec![
            (
                "r1".to_string(),
                vec![
                    failed("A", 1000.0, HandoverKind::Failure, 950.0, 1120.0),
                    ho("A", 1130.0),
                ],
            ),
            (
                "r2".to_string(),
                vec![failed("A", 3030.0, HandoverKind::Rlf, 3000.0, 3100.0)],
            ),
        ];
        let t = HandoverTable::learn(&runs, 20.0).unwrap();
        let z = &t.carriers["A"].zones;
        assert_eq!(z.len(), 2);
        assert_eq!((z[0].start_m, z[0].end_m, z[0].count), (930.0, 1150.0, 2));
        assert_eq!((z[0].failures, z[0].rlfs), (1, 0));
        assert_eq!(z[0].kind(), ZoneKind::HandoverFailure);
        assert_eq!((z[1].start_m, z[1].end_m, z[1].count), (2980.0, 3120.0, 1));
        assert_eq!((z[1].failures, z[1].rlfs), (0, 1));
        assert_eq!(z[1].kind(), ZoneKind::RadioLinkFailure);
        assert_eq!(Zone::new(0.0, 1.0, 4).kind(), ZoneKind::Handover);
        // A table with failures is written in format 2 and reads back the same.
        assert_eq!(t.format, FORMAT_2);
        let text = t.to_json_string();
        assert!(text.contains("railpath-handover-table/2"), "{text}");
        assert!(text.contains("\"rlfs\": 1"), "{text}");
        assert_eq!(HandoverTable::from_json_str(&text, "mem").unwrap(), t);
        // The predictor tells the kind and the counts: a train at 900 m at 100 m/s, horizon 1 s.
        let p = Predictor::new(&t);
        let pr = p.predict(900.0, 100.0, Time::from_secs_f64(1.0));
        assert_eq!(pr.len(), 1);
        assert_eq!(
            (pr[0].kind, pr[0].count, pr[0].failed),
            (ZoneKind::HandoverFailure, 2, 1)
        );
        // Merging a gentle table into it keeps format 2; a gentle table alone stays format 1.
        let gentle = sample();
        assert_eq!(gentle.format, FORMAT);
        assert!(!gentle.to_json_string().contains("failures"));
        let mut m = gentle.clone();
        m.merge(&t);
        assert_eq!(m.format, FORMAT_2);
        assert_eq!(m.carriers["A"].zones[0].failures, 1);
        m.validate("m").unwrap();
    }

    #[test]
    fn failure_records_and_format_2_fields_are_checked() {
        let mut r = failed("A", 1000.0, HandoverKind::Rlf, f64::INFINITY, 1100.0);
        let e = HandoverTable::learn(&[("log".to_string(), vec![r.clone()])], 20.0).unwrap_err();
        assert_eq!(
            (e.file.as_str(), e.field.as_str()),
            ("log", "handovers[0].onset_position_m")
        );
        r.onset_position_m = None; // missing ends fall back to the outage's position
        let t = HandoverTable::learn(&[("log".to_string(), vec![r])], 20.0).unwrap();
        assert_eq!(
            (
                t.carriers["A"].zones[0].start_m,
                t.carriers["A"].zones[0].end_m
            ),
            (980.0, 1120.0)
        );
        let bad = |s: &str| HandoverTable::from_json_str(s, "t.json").unwrap_err();
        // Failure counts need format 2.
        let e = bad(
            r#"{"format": "railpath-handover-table/1", "gps_error_m": 20, "runs": 1,
               "carriers": {"A": {"runs": 1, "zones": [{"start_m": 10, "end_m": 50, "count": 1, "rlfs": 1}]}}}"#,
        );
        assert_eq!(e.field, "carriers.A.zones[0].rlfs");
        // More failures than handovers.
        let e = bad(
            r#"{"format": "railpath-handover-table/2", "gps_error_m": 20, "runs": 1,
               "carriers": {"A": {"runs": 1, "zones": [{"start_m": 10, "end_m": 50, "count": 1, "failures": 1, "rlfs": 1}]}}}"#,
        );
        assert_eq!(e.field, "carriers.A.zones[0].count");
        let e = bad(
            r#"{"format": "railpath-handover-table/2", "gps_error_m": 20, "runs": 1,
               "carriers": {"A": {"runs": 1, "zones": [{"start_m": 10, "end_m": 50, "count": 1, "failures": "x"}]}}}"#,
        );
        assert_eq!(e.field, "carriers.A.zones[0].failures");
    }

    #[test]
    fn predictor_forward_hand_computed() {
        let p = Predictor::new(&sample());
        // A zones [980,1030], [2980,3020]; B [1980,2060]. Train at 900 m, 100 m/s, horizon 1 s:
        // A's first zone enters in 0.8 s, leaves in 1.3 s; nothing else within 1 s.
        let r = p.predict(900.0, 100.0, Time::from_secs(1));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].carrier, "A");
        assert!(!r[0].in_zone);
        assert_eq!(r[0].enters_in, Some(Time::from_ms(800)));
        assert_eq!(r[0].leaves_in, Some(Time::from_ms(1300)));
        // Horizon 0.5 s: not yet.
        assert!(p.predict(900.0, 100.0, Time::from_ms(500)).is_empty());
        // In the zone at 1000 m: leaves in 0.3 s.
        let r = p.predict(1000.0, 100.0, Time::ZERO);
        assert_eq!(r.len(), 1);
        assert!(r[0].in_zone);
        assert_eq!(r[0].enters_in, Some(Time::ZERO));
        assert_eq!(r[0].leaves_in, Some(Time::from_ms(300)));
        // Bounds are inclusive.
        assert!(p.predict(1030.0, 100.0, Time::ZERO)[0].in_zone);
        assert!(p.predict(1030.1, 100.0, Time::ZERO).is_empty());
        // Horizon 11 s from 1000 m: A zone 1 (in), B (9.8 s), A zone 2 in 19.8 s is beyond.
        let r = p.predict(1000.0, 100.0, Time::from_secs(11));
        let got: Vec<(&str, Option<Time>)> = r
            .iter()
            .map(|x| (x.carrier.as_str(), x.enters_in))
            .collect();
        assert_eq!(
            got,
            vec![("A", Some(Time::ZERO)), ("B", Some(Time::from_ms(9800)))]
        );
    }

    #[test]
    fn predictor_backward_and_stopped() {
        let p = Predictor::new(&sample());
        // Moving down the track at 100 m/s from 1100 m: A's zone [980,1030] enters in 0.7 s,
        // leaves in 1.2 s.
        let r = p.predict(1100.0, -100.0, Time::from_secs(1));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].enters_in, Some(Time::from_ms(700)));
        assert_eq!(r[0].leaves_in, Some(Time::from_ms(1200)));
        // In zone moving backwards from 1000 m: leaves at 980 m in 0.2 s.
        let r = p.predict(1000.0, -100.0, Time::ZERO);
        assert_eq!(r[0].leaves_in, Some(Time::from_ms(200)));
        // Stopped in a zone: never leaves; stopped outside: nothing.
        let r = p.predict(1000.0, 0.0, Time::from_secs(100));
        assert_eq!((r.len(), r[0].leaves_in), (1, None));
        assert!(p.predict(1500.0, 0.0, Time::from_secs(100)).is_empty());
        assert!(p.predict(f64::NAN, 10.0, Time::from_secs(100)).is_empty());
    }

    #[test]
    fn table_for_an_unknown_carrier_is_an_error() {
        let t = sample();
        t.check_carriers("t.json", &["A", "B", "C"], &["A"])
            .unwrap();
        let e = t.check_carriers("t.json", &["A", "C"], &[]).unwrap_err();
        assert_eq!(
            (e.file.as_str(), e.field.as_str()),
            ("t.json", "carriers.B")
        );
        assert!(e.message.contains("unknown here"), "{e}");
        let e = t
            .check_carriers("t.json", &["A", "B", "C"], &["C"])
            .unwrap_err();
        assert_eq!(e.field, "carriers");
        assert!(e.message.contains("no zones for carrier \"C\""), "{e}");
    }

    #[test]
    fn predictor_unknown_carrier_is_an_error() {
        let p = Predictor::new(&sample());
        assert_eq!(p.known_carriers(), vec!["A", "B"]);
        let e = p.check_carrier("Z").unwrap_err();
        assert!(e.message.contains("known carriers: A, B"), "{e}");
        assert!(p.predict_carrier("Z", 0.0, 1.0, Time::ZERO).is_err());
        let r = p.predict_carrier("B", 1990.0, 1.0, Time::ZERO).unwrap();
        assert!(r[0].in_zone);
    }
}
