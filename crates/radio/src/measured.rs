//! Measured carrier data as timelines: a per-carrier CSV of drive-test measurements, or a
//! Mahimahi delivery-opportunity trace (Netravali et al., "Mahimahi: Accurate Record-and-Replay
//! for HTTP", USENIX ATC 2015: one line per 1500-byte delivery opportunity, a millisecond
//! timestamp, the trace repeating with the period of its last timestamp).
//!
//! CSV (`model = "csv"`, `csv = "file.csv"`): a header naming the columns, then one row per
//! measurement, rows in increasing time. Columns:
//! - `t_s` (required): seconds from run start; the row's values hold until the next row (the
//!   first row's also before it, the last row's until the end of the run);
//! - `position_m` (required): train position (logged with handovers);
//! - exactly one of `throughput_mbps` (rate from `t_s` on) or `opportunities` (1500-byte
//!   deliveries between this row and the next; the last row uses the previous interval);
//!   a rate of 0 is an outage;
//! - `handover` (optional, 0 or 1): a handover starts at `t_s`; it interrupts the link for the
//!   row's `interruption_ms` column if present, else the carrier's `interruption_ms`;
//! - `cell` (optional): serving cell after the row (names `from_cell`/`to_cell` in the log).
//!
//! Lines that are empty or start with `#` are skipped. A Mahimahi trace (`model = "mahimahi"`)
//! is binned into `mahimahi_bin_ms` bins (rate = opportunities x 1500 B x 8 / bin; an empty bin
//! is an outage); it carries no handover marks, so the log is empty. For a packet-exact replay,
//! give the trace to the link's own `trace` key instead; this carrier form exists so measured
//! traces can be mixed with radio carriers and keep the carrier's name.

use crate::config::{CarrierConfig, CarrierModel};
use crate::{CarrierTimeline, HandoverRecord, LinkStep, RadioError};
use railpath_core::Time;
use std::collections::BTreeMap;
use std::path::Path;

/// Bytes per Mahimahi delivery opportunity.
pub const OPPORTUNITY_BYTES: u64 = 1500;

pub use crate::config::{CsvRow, MeasuredData};

const COLUMNS: [&str; 7] = [
    "t_s",
    "position_m",
    "throughput_mbps",
    "opportunities",
    "handover",
    "interruption_ms",
    "cell",
];

/// Parse a measured CSV; errors name `file`, the line and the column.
pub fn parse_csv(text: &str, file: &str) -> Result<Vec<CsvRow>, RadioError> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
    let Some((hn, header)) = lines.next() else {
        return Err(RadioError::in_file(
            file,
            "",
            "empty CSV: expected a header line naming the columns",
        ));
    };
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    for (j, c) in cols.iter().enumerate() {
        if !COLUMNS.contains(c) {
            return Err(RadioError::in_file(
                file,
                format!("line {hn}"),
                format!(
                    "unknown column {c:?}; expected columns among {}",
                    COLUMNS.join(", ")
                ),
            ));
        }
        if cols[..j].contains(c) {
            return Err(RadioError::in_file(
                file,
                format!("line {hn}"),
                format!("duplicate column {c:?}"),
            ));
        }
    }
    let col = |name: &str| cols.iter().position(|c| *c == name);
    let (Some(ct), Some(cp)) = (col("t_s"), col("position_m")) else {
        return Err(RadioError::in_file(
            file,
            format!("line {hn}"),
            "the columns t_s and position_m are required",
        ));
    };
    let (cthr, copp) = (col("throughput_mbps"), col("opportunities"));
    if cthr.is_some() == copp.is_some() {
        return Err(RadioError::in_file(
            file,
            format!("line {hn}"),
            "expected exactly one of the columns throughput_mbps or opportunities",
        ));
    }
    let (cho, cint, ccell) = (col("handover"), col("interruption_ms"), col("cell"));

    struct Raw {
        line: usize,
        row: CsvRow,
        opps: Option<u64>,
    }
    let mut raw: Vec<Raw> = Vec::new();
    for (n, line) in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let at = |c: &str| format!("line {n}, column {c}");
        if f.len() != cols.len() {
            return Err(RadioError::in_file(
                file,
                format!("line {n}"),
                format!(
                    "expected {} fields as in the header, found {}",
                    cols.len(),
                    f.len()
                ),
            ));
        }
        let num = |j: usize, c: &str| -> Result<f64, RadioError> {
            f[j].parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| {
                    RadioError::in_file(
                        file,
                        at(c),
                        format!("expected a finite number, found {:?}", f[j]),
                    )
                })
        };
        let t_s = num(ct, "t_s")?;
        if t_s < 0.0 {
            return Err(RadioError::in_file(
                file,
                at("t_s"),
                format!("expected a time >= 0, found {t_s}"),
            ));
        }
        if let Some(prev) = raw.last() {
            if t_s <= prev.row.t_s {
                return Err(RadioError::in_file(
                    file,
                    at("t_s"),
                    format!(
                        "times must increase from row to row ({t_s} after {})",
                        prev.row.t_s
                    ),
                ));
            }
        }
        let position_m = num(cp, "position_m")?;
        let mut rate_bps = 0;
        let mut opps = None;
        if let Some(j) = cthr {
            let r = num(j, "throughput_mbps")?;
            if r < 0.0 {
                return Err(RadioError::in_file(
                    file,
                    at("throughput_mbps"),
                    format!("expected a rate >= 0, found {r}"),
                ));
            }
            rate_bps = (r * 1e6).round() as u64;
        }
        if let Some(j) = copp {
            opps = Some(f[j].parse::<u64>().map_err(|_| {
                RadioError::in_file(
                    file,
                    at("opportunities"),
                    format!("expected a non-negative integer count, found {:?}", f[j]),
                )
            })?);
        }
        let handover = match cho.map(|j| f[j]) {
            None | Some("0") | Some("false") | Some("") => false,
            Some("1") | Some("true") => true,
            Some(o) => {
                return Err(RadioError::in_file(
                    file,
                    at("handover"),
                    format!("expected 0 or 1, found {o:?}"),
                ))
            }
        };
        let interruption_ms = match cint {
            Some(j) if !f[j].is_empty() => {
                let v = num(j, "interruption_ms")?;
                if !(0.0..=10_000.0).contains(&v) {
                    return Err(RadioError::in_file(
                        file,
                        at("interruption_ms"),
                        format!("expected 0..=10000 ms, found {v}"),
                    ));
                }
                Some(v)
            }
            _ => None,
        };
        let cell = ccell.map(|j| f[j].to_string()).filter(|s| !s.is_empty());
        raw.push(Raw {
            line: n,
            row: CsvRow {
                t_s,
                position_m,
                rate_bps,
                handover,
                interruption_ms,
                cell,
            },
            opps,
        });
    }
    if raw.is_empty() {
        return Err(RadioError::in_file(
            file,
            "",
            "no data rows after the header",
        ));
    }
    if copp.is_some() {
        if raw.len() < 2 {
            return Err(RadioError::in_file(
                file,
                format!("line {}", raw[0].line),
                "an opportunities column needs at least two rows (the count is per interval between rows)",
            ));
        }
        for i in 0..raw.len() {
            let dt = if i + 1 < raw.len() {
                raw[i + 1].row.t_s - raw[i].row.t_s
            } else {
                raw[i].row.t_s - raw[i - 1].row.t_s
            };
            let n = raw[i].opps.unwrap_or(0);
            raw[i].row.rate_bps = ((n * OPPORTUNITY_BYTES * 8) as f64 / dt).round() as u64;
        }
    }
    Ok(raw.into_iter().map(|r| r.row).collect())
}

/// Latest timestamp of a Mahimahi trace, ms: the longest run (a longer period never repeats).
pub const MAX_TRACE_MS: f64 = railpath_core::MAX_DURATION_S * 1000.0;

/// Parse a Mahimahi trace: integer ms timestamps up to [`MAX_TRACE_MS`], non-decreasing, last
/// one > 0.
pub fn parse_mahimahi(text: &str, file: &str) -> Result<Vec<u64>, RadioError> {
    let mut out = Vec::new();
    let mut last = 0u64;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let v: u64 = line
            .parse()
            .ok()
            .filter(|&v| v as f64 <= MAX_TRACE_MS)
            .ok_or_else(|| {
                RadioError::in_file(
                    file,
                    format!("line {}", n + 1),
                    format!(
                        "expected an integer millisecond timestamp from 0 to {MAX_TRACE_MS} (the longest run), found {}",
                        railpath_core::excerpt(line)
                    ),
                )
            })?;
        if v < last {
            return Err(RadioError::in_file(
                file,
                format!("line {}", n + 1),
                format!("timestamps must not decrease ({v} after {last})"),
            ));
        }
        last = v;
        out.push(v);
    }
    if out.is_empty() {
        return Err(RadioError::in_file(
            file,
            "",
            "trace has no delivery opportunities",
        ));
    }
    if last == 0 {
        return Err(RadioError::in_file(
            file,
            "",
            "trace must span at least 1 ms (last timestamp is 0)",
        ));
    }
    Ok(out)
}

impl CarrierConfig {
    /// Read the carrier's measured data file (CSV or Mahimahi), relative to `base` (the scenario
    /// file's directory). `idx` is the carrier's index, for the key in errors.
    pub fn load_files(&mut self, idx: usize, base: &Path) -> Result<(), RadioError> {
        let (key, name) = match (self.model, &self.csv, &self.mahimahi) {
            (CarrierModel::Csv, Some(f), _) => ("csv", f.clone()),
            (CarrierModel::Mahimahi, _, Some(f)) => ("mahimahi", f.clone()),
            _ => return Ok(()),
        };
        let path = base.join(&name);
        let file = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| {
            RadioError::key(
                format!("carrier[{idx}].{key}"),
                format!("cannot read {file}: {e}"),
            )
        })?;
        self.measured = Some(match self.model {
            CarrierModel::Csv => MeasuredData::Csv {
                rows: parse_csv(&text, &file)?,
                file,
            },
            _ => MeasuredData::Mahimahi {
                opportunities_ms: parse_mahimahi(&text, &file)?,
                file,
            },
        });
        Ok(())
    }
}

/// Load the data files of every measured carrier, relative to `base`.
pub fn load_files(carriers: &mut [CarrierConfig], base: &Path) -> Result<(), RadioError> {
    for (i, c) in carriers.iter_mut().enumerate() {
        c.load_files(i, base)?;
    }
    Ok(())
}

/// Steps keyed by time, merged at equal times.
#[derive(Default)]
struct StepMap(BTreeMap<Time, LinkStep>);

impl StepMap {
    fn at(&mut self, t: Time) -> &mut LinkStep {
        self.0.entry(t).or_insert_with(|| LinkStep {
            t,
            ..LinkStep::default()
        })
    }
    /// Emit outage start/end steps for `intervals` (any order, may overlap: they are united).
    fn outages(&mut self, mut intervals: Vec<(Time, Time)>) {
        intervals.sort();
        let mut merged: Vec<(Time, Time)> = Vec::new();
        for (s, e) in intervals {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        for (s, e) in merged {
            if e > s {
                self.at(s).outage = Some(true);
                self.at(e).outage = Some(false);
            }
        }
    }
}

/// Timeline of a measured carrier (data loaded by [`load_files`]).
pub(crate) fn timeline(
    c: &CarrierConfig,
    idx: usize,
    duration: Time,
) -> Result<CarrierTimeline, RadioError> {
    let mut steps = StepMap::default();
    let mut handovers = Vec::new();
    let mut outages = Vec::new();
    match &c.measured {
        None => {
            let key = if c.model == CarrierModel::Csv {
                "csv"
            } else {
                "mahimahi"
            };
            return Err(RadioError::key(
                format!("carrier[{idx}].{key}"),
                "the measured data file was not loaded (load the scenario with railpath_scenario::load)",
            ));
        }
        Some(MeasuredData::Csv { rows, .. }) => {
            let first = steps.at(Time::ZERO);
            first.extra_delay = Some(Time::ZERO);
            first.extra_loss = Some(0.0);
            let mut last_rate = None;
            let mut cell = format!("{}-1", c.id);
            let mut k = 1;
            for (i, r) in rows.iter().enumerate() {
                let t = if i == 0 {
                    Time::ZERO
                } else {
                    Time::from_secs_f64(r.t_s)
                };
                if t >= duration && i > 0 {
                    break;
                }
                let end = rows
                    .get(i + 1)
                    .map(|n| Time::from_secs_f64(n.t_s))
                    .unwrap_or(duration)
                    .min(duration);
                if r.rate_bps == 0 {
                    outages.push((t, end));
                } else if last_rate != Some(r.rate_bps) {
                    steps.at(t).rate_bps = Some(r.rate_bps);
                    last_rate = Some(r.rate_bps);
                }
                let next_cell = r.cell.clone();
                if r.handover {
                    let ts = Time::from_secs_f64(r.t_s);
                    let intr = r.interruption_ms.unwrap_or(c.interruption_ms);
                    k += 1;
                    let to = next_cell.clone().unwrap_or_else(|| format!("{}-{k}", c.id));
                    handovers.push(HandoverRecord {
                        t_s: r.t_s,
                        position_m: r.position_m,
                        carrier: c.id.clone(),
                        from_cell: cell.clone(),
                        to_cell: to,
                        interruption_ms: intr,
                        ..Default::default()
                    });
                    outages.push((ts, (ts + Time::from_ms_f64(intr)).min(duration)));
                }
                if let Some(nc) = next_cell {
                    cell = nc;
                } else if r.handover {
                    cell = format!("{}-{k}", c.id);
                }
            }
        }
        Some(MeasuredData::Mahimahi {
            opportunities_ms, ..
        }) => {
            let period = opportunities_ms.last().copied().unwrap_or(0);
            if period == 0 || opportunities_ms.windows(2).any(|w| w[1] < w[0]) {
                return Err(RadioError::key(
                    format!("carrier[{idx}].mahimahi"),
                    "expected non-decreasing delivery opportunities spanning at least 1 ms",
                ));
            }
            let bin = Time::from_ms_f64(c.mahimahi_bin_ms.max(1.0));
            let nbins = duration.ns().div_ceil(bin.ns()).max(1) as usize;
            let mut counts = vec![0u64; nbins];
            let mut rep = 0u64;
            'outer: loop {
                for &ms in opportunities_ms {
                    let t = Time::from_ms(ms + rep * period);
                    if t >= duration {
                        break 'outer;
                    }
                    counts[(t.ns() / bin.ns()) as usize] += 1;
                }
                rep += 1;
            }
            let first = steps.at(Time::ZERO);
            first.extra_delay = Some(Time::ZERO);
            first.extra_loss = Some(0.0);
            let mut last_rate = None;
            for (b, &n) in counts.iter().enumerate() {
                let t = bin.mul(b as u64);
                let end = (t + bin).min(duration);
                if n == 0 {
                    outages.push((t, end));
                    continue;
                }
                let rate = (n * OPPORTUNITY_BYTES * 8) as f64 / (end - t).secs_f64();
                let rate = rate.round() as u64;
                if last_rate != Some(rate) {
                    steps.at(t).rate_bps = Some(rate);
                    last_rate = Some(rate);
                }
            }
        }
    }
    // The link needs a rate from time 0 even when the data begin with an outage (an empty first
    // bin, a first row of rate 0): the first rate the data give, which is not used before that
    // outage ends; one opportunity per second when the data never give one.
    if steps.at(Time::ZERO).rate_bps.is_none() {
        let first = steps.0.values().find_map(|s| s.rate_bps);
        steps.at(Time::ZERO).rate_bps = Some(first.unwrap_or(OPPORTUNITY_BYTES * 8));
    }
    steps.outages(outages);
    Ok(CarrierTimeline {
        carrier: c.id.clone(),
        steps: steps.0.into_values().collect(),
        handovers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv_carrier(text: &str) -> CarrierConfig {
        let mut c = CarrierConfig::grid("A", 25.0, 1340.0, 0.0);
        c.model = CarrierModel::Csv;
        c.enb_spacing_m = None;
        c.rate_mbps = None;
        c.csv = Some("m.csv".into());
        c.measured = Some(MeasuredData::Csv {
            file: "m.csv".into(),
            rows: parse_csv(text, "m.csv").unwrap(),
        });
        c
    }

    #[test]
    fn csv_bad_row_names_line_and_column() {
        let text = "t_s,position_m,throughput_mbps,handover\n0,0,20,0\n1.0,83,abc,0\n";
        let e = parse_csv(text, "m.csv").unwrap_err();
        assert_eq!(e.file, "m.csv");
        assert_eq!(e.key, "line 3, column throughput_mbps");
        assert!(e.message.contains("\"abc\""), "{e}");
        let e = parse_csv("t_s,position_m,throughput_mbps\n0,0,20\n0,1,20\n", "m.csv").unwrap_err();
        assert_eq!(e.key, "line 3, column t_s");
        let e = parse_csv("t_s,position_m,throughput_mbps\n0,0\n", "m.csv").unwrap_err();
        assert_eq!(e.key, "line 2");
        let e = parse_csv("t_s,position_m,speed\n", "m.csv").unwrap_err();
        assert!(e.message.contains("unknown column \"speed\""), "{e}");
        let e = parse_csv(
            "t_s,position_m,throughput_mbps,handover\n0,0,20,yes\n",
            "m.csv",
        )
        .unwrap_err();
        assert_eq!(e.key, "line 2, column handover");
        let e = parse_csv("t_s,position_m\n0,0\n", "m.csv").unwrap_err();
        assert!(e.message.contains("exactly one"), "{e}");
    }

    #[test]
    fn csv_timeline_hand_computed() {
        let c = csv_carrier(
            "# drive test\nt_s,position_m,throughput_mbps,handover,cell\n\
             0,0,20,0,A-7\n1,83,10,1,A-8\n2,166,0,0,A-8\n3,250,15,0,A-8\n",
        );
        let tl = timeline(&c, 0, Time::from_secs(5)).unwrap();
        assert_eq!(tl.handovers.len(), 1);
        let h = &tl.handovers[0];
        assert_eq!(
            (
                h.t_s,
                h.position_m,
                h.from_cell.as_str(),
                h.to_cell.as_str()
            ),
            (1.0, 83.0, "A-7", "A-8")
        );
        let s = |ms: u64| {
            tl.steps
                .iter()
                .find(|s| s.t == Time::from_ms(ms))
                .cloned()
                .unwrap()
        };
        assert_eq!(s(0).rate_bps, Some(20_000_000));
        assert_eq!(
            (s(1000).rate_bps, s(1000).outage),
            (Some(10_000_000), Some(true))
        );
        assert_eq!(s(1050).outage, Some(false));
        assert_eq!(s(2000).outage, Some(true));
        assert_eq!(
            (s(3000).rate_bps, s(3000).outage),
            (Some(15_000_000), Some(false))
        );
        assert!(tl.steps.windows(2).all(|w| w[0].t < w[1].t));
    }

    #[test]
    fn csv_opportunities_give_rates() {
        // 100 opportunities in 1 s = 1.2 Mbit/s; the last row reuses the previous interval.
        let rows = parse_csv("t_s,position_m,opportunities\n0,0,100\n1,10,50\n", "m").unwrap();
        assert_eq!(rows[0].rate_bps, 1_200_000);
        assert_eq!(rows[1].rate_bps, 600_000);
    }

    #[test]
    fn mahimahi_binned_with_outages() {
        // Period 100 ms: 10 opportunities in the first 50 ms; bins of 50 ms.
        let mut c = CarrierConfig::grid("M", 25.0, 1340.0, 0.0);
        c.model = CarrierModel::Mahimahi;
        c.mahimahi_bin_ms = 50.0;
        let ts: Vec<u64> = (0..10).map(|i| i * 5).chain([100]).collect();
        c.measured = Some(MeasuredData::Mahimahi {
            file: "t".into(),
            opportunities_ms: ts,
        });
        let tl = timeline(&c, 0, Time::from_ms(200)).unwrap();
        // Bin [0,50): 10 opps = 15000 B in 50 ms = 2.4 Mbit/s. [50,100): empty -> outage.
        // [100,150): 10 (from the repetition at 100..145) plus the 100 ms stamp of rep 0? The
        // stamp 100 of rep 0 lands at 100 ms too: 11 -> 2.64 Mbit/s.
        assert_eq!(tl.steps[0].rate_bps, Some(2_400_000));
        assert_eq!(
            (tl.steps[1].t, tl.steps[1].outage),
            (Time::from_ms(50), Some(true))
        );
        assert_eq!(tl.steps[2].t, Time::from_ms(100));
        assert_eq!(
            (tl.steps[2].rate_bps, tl.steps[2].outage),
            (Some(2_640_000), Some(false))
        );
        assert!(tl.handovers.is_empty());
        let e = parse_mahimahi("5\n3\n", "t").unwrap_err();
        assert_eq!(e.key, "line 2");
        // Issue 17: a period of 2^64-1 ms was accepted; timestamps stop at the longest run.
        let e = parse_mahimahi("5\n18446744073709551615\n", "t").unwrap_err();
        assert_eq!(e.key, "line 2");
        assert!(e.message.contains("from 0 to 1000000000"), "{}", e.message);
        assert!(parse_mahimahi("5\n1000000000\n", "t").is_ok());
        // Data handed in through the API is checked too (an empty trace would never end).
        c.measured = Some(MeasuredData::Mahimahi {
            file: "t".into(),
            opportunities_ms: vec![],
        });
        assert_eq!(
            timeline(&c, 2, Time::from_ms(200)).unwrap_err().key,
            "carrier[2].mahimahi"
        );
    }

    #[test]
    fn data_that_begin_in_an_outage_still_give_the_link_a_rate_at_time_0() {
        // Opportunities at 3 and 10 ms, period 10 ms; bins of 1 ms: bins 0..3 are empty, so the
        // trace begins with an outage [0, 3 ms). The rate at time 0 is the first bin's that has
        // one (1 opportunity of 1500 B in 1 ms = 12 Mbit/s), unused before the outage ends.
        let mut c = CarrierConfig::grid("M", 25.0, 1340.0, 0.0);
        c.model = CarrierModel::Mahimahi;
        c.mahimahi_bin_ms = 1.0;
        c.measured = Some(MeasuredData::Mahimahi {
            file: "t".into(),
            opportunities_ms: vec![3, 10],
        });
        let tl = timeline(&c, 0, Time::from_ms(20)).unwrap();
        assert_eq!(tl.steps[0].t, Time::ZERO);
        assert_eq!(tl.steps[0].rate_bps, Some(12_000_000));
        assert_eq!(tl.steps[0].outage, Some(true));
        // A CSV whose first row has no throughput: the rate of the second row from time 0.
        let c = csv_carrier("t_s,position_m,throughput_mbps\n0,0,0\n1,10,4\n");
        let tl = timeline(&c, 0, Time::from_secs(2)).unwrap();
        assert_eq!(tl.steps[0].rate_bps, Some(4_000_000));
        assert_eq!(tl.steps[0].outage, Some(true));
    }

    #[test]
    fn unloaded_data_is_an_error() {
        let mut c = csv_carrier("t_s,position_m,throughput_mbps\n0,0,1\n");
        c.measured = None;
        let e = timeline(&c, 3, Time::from_secs(1)).unwrap_err();
        assert_eq!(e.key, "carrier[3].csv");
    }
}
