//! `railpath table learn RUN_DIR... --out table.json [--merge old.json] [--gps-error-m 20]`:
//! learn per-carrier handover zones from the `handovers` array of earlier runs' `summary.json`
//! (PHA paper, seeds.md §1: the handover table is built from preliminary runs and accumulated
//! run after run). The table format and the learning rule are `railpath_radio::table`'s.
//!
//! `railpath table show TABLE [--position-m X --speed-kmh V --horizon-s S]`: check a table, list
//! its zones, and optionally what the predictor says for a train at X moving at V.

use crate::CliError;
use railpath_core::Time;
use railpath_radio::{HandoverRecord, HandoverTable, Predictor};
use std::path::{Path, PathBuf};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(clap::Subcommand)]
pub enum Command {
    /// Learn handover zones from runs' summary.json `handovers`; write a handover table.
    Learn(LearnArgs),
    /// Check a handover table, list its zones, optionally predict for a train position.
    Show(ShowArgs),
}

#[derive(clap::Args)]
pub struct ShowArgs {
    /// The table (JSON, format railpath-handover-table/1).
    pub table: PathBuf,
    /// Train position along the track, metres: print the zones it is in or enters.
    #[arg(long, requires = "speed_kmh")]
    pub position_m: Option<f64>,
    /// Train speed, km/h (negative: towards smaller positions).
    #[arg(long, requires = "position_m", allow_negative_numbers = true)]
    pub speed_kmh: Option<f64>,
    /// How far ahead to look, seconds.
    #[arg(long, default_value_t = 10.0)]
    pub horizon_s: f64,
}

#[derive(clap::Args)]
pub struct LearnArgs {
    /// Run output directories (each with a summary.json), or summary.json files.
    #[arg(required = true, value_name = "RUN_DIR")]
    pub runs: Vec<PathBuf>,
    /// Where to write the table (JSON, format railpath-handover-table/1).
    #[arg(long)]
    pub out: PathBuf,
    /// An earlier table to accumulate into (zones united, counts and runs added).
    #[arg(long, value_name = "OLD_TABLE")]
    pub merge: Option<PathBuf>,
    /// Half-width by which each observed handover position is widened, metres.
    #[arg(long, default_value_t = 20.0)]
    pub gps_error_m: f64,
}

pub fn main(args: Args) -> Result<(), CliError> {
    match args.command {
        Command::Learn(a) => learn(a),
        Command::Show(a) => {
            let text = show(&a)?;
            print!("{text}");
            Ok(())
        }
    }
}

fn show(a: &ShowArgs) -> Result<String, CliError> {
    use std::fmt::Write;
    let t = HandoverTable::load(&a.table).map_err(|e| CliError::Input(e.to_string()))?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} runs, GPS error {} m",
        a.table.display(),
        t.runs,
        t.gps_error_m
    );
    for (c, cz) in &t.carriers {
        let _ = writeln!(out, "carrier {c} ({} runs):", cz.runs);
        for z in &cz.zones {
            let _ = writeln!(
                out,
                "  {:>10.1} .. {:>10.1} m  ({} handovers)",
                z.start_m, z.end_m, z.count
            );
        }
    }
    if let (Some(x), Some(v)) = (a.position_m, a.speed_kmh) {
        if !x.is_finite() {
            return Err(CliError::Input(format!(
                "--position-m: expected a finite number of metres, found {x}"
            )));
        }
        if !v.is_finite() || v.abs() > 1000.0 {
            return Err(CliError::Input(format!(
                "--speed-kmh: expected a speed in -1000..=1000 km/h, found {v}"
            )));
        }
        if !(a.horizon_s.is_finite() && (0.0..=86_400.0).contains(&a.horizon_s)) {
            return Err(CliError::Input(format!(
                "--horizon-s: expected 0..=86400 s, found {}",
                a.horizon_s
            )));
        }
        let p = Predictor::new(&t).predict(x, v / 3.6, Time::from_secs_f64(a.horizon_s));
        let _ = writeln!(
            out,
            "at {x} m, {v} km/h, within {} s: {} zone(s)",
            a.horizon_s,
            p.len()
        );
        for z in &p {
            let secs = |d: Option<Time>| {
                d.map_or("never".to_string(), |d| format!("{:.2} s", d.secs_f64()))
            };
            let _ = writeln!(
                out,
                "  carrier {}: {:.1} .. {:.1} m, {}, leaves in {}",
                z.carrier,
                z.zone_start_m,
                z.zone_end_m,
                if z.in_zone {
                    "in the zone".to_string()
                } else {
                    format!("enters in {}", secs(z.enters_in))
                },
                secs(z.leaves_in)
            );
        }
    }
    Ok(out)
}

fn learn(a: LearnArgs) -> Result<(), CliError> {
    let runs = a
        .runs
        .iter()
        .map(|p| read_run(p))
        .collect::<Result<Vec<_>, _>>()?;
    // A table without zones would make PHA and PHA-D do nothing, silently: refuse it.
    if runs.iter().all(|r| r.1.is_empty()) {
        return Err(CliError::Input(format!(
            "{}: no handovers in any of these runs: learning needs runs of a scenario with the train radio model ([train], [[carrier]] and links with `carrier`); {} not written",
            a.runs
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            a.out.display()
        )));
    }
    let learned = HandoverTable::learn(&runs, a.gps_error_m).map_err(|e| {
        if e.field == "gps_error_m" {
            CliError::Input(format!("--gps-error-m: {}", e.message))
        } else {
            CliError::Input(e.to_string())
        }
    })?;
    let table = match &a.merge {
        Some(old) => {
            let mut t = HandoverTable::load(old).map_err(|e| CliError::Input(e.to_string()))?;
            t.merge(&learned);
            t
        }
        None => learned,
    };
    table
        .save(&a.out)
        .map_err(|e| CliError::Failed(e.to_string()))?;
    println!(
        "{} runs learned ({} in the table), GPS error {} m, wrote {}",
        runs.len(),
        table.runs,
        table.gps_error_m,
        a.out.display()
    );
    for (c, cz) in &table.carriers {
        let covered: f64 = cz.zones.iter().map(|z| z.end_m - z.start_m).sum();
        let seen: u64 = cz.zones.iter().map(|z| z.count).sum();
        println!(
            "  carrier {c}: {} zones, {covered:.0} m of track, {seen} handovers over {} runs",
            cz.zones.len(),
            cz.runs
        );
    }
    Ok(())
}

/// The handovers of one run: `path` is a run directory holding `summary.json`, or the file.
/// Returns (run id = the path given, handovers).
pub fn read_run(path: &Path) -> Result<(String, Vec<HandoverRecord>), CliError> {
    let file = if path.is_dir() {
        path.join("summary.json")
    } else {
        path.to_path_buf()
    };
    let name = file.display().to_string();
    let text = std::fs::read_to_string(&file)
        .map_err(|e| CliError::Input(format!("{name}: cannot read run summary: {e}")))?;
    let out =
        railpath_radio::table::handovers_from_summary(&text, &name).map_err(CliError::Input)?;
    Ok((path.display().to_string(), out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("railpath-cli-table-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn summary(handovers: &str) -> String {
        format!(
            r#"{{"railpath_version": "0.1.0", "seed": 1, "flows": [], "handovers": {handovers}}}"#
        )
    }

    const H: &str = r#"[{"t_s": 12.3, "position_m": 1025.0, "carrier": "A", "from_cell": "A-1",
                          "to_cell": "A-2", "interruption_ms": 50.0}]"#;

    #[test]
    fn learns_and_merges_from_run_dirs() {
        let d = tmp("ok");
        for (run, pos) in [("r1", 1025.0), ("r2", 1035.0)] {
            let rd = d.join(run);
            std::fs::create_dir_all(&rd).unwrap();
            std::fs::write(
                rd.join("summary.json"),
                summary(&H.replace("1025.0", &format!("{pos}"))),
            )
            .unwrap();
        }
        let out = d.join("t.json");
        learn(LearnArgs {
            runs: vec![d.join("r1"), d.join("r2")],
            out: out.clone(),
            merge: None,
            gps_error_m: 20.0,
        })
        .unwrap();
        let t = HandoverTable::load(&out).unwrap();
        assert_eq!(t.runs, 2);
        let z = &t.carriers["A"].zones;
        // [1005, 1045] and [1015, 1055] unite.
        assert_eq!(
            (z.len(), z[0].start_m, z[0].end_m, z[0].count),
            (1, 1005.0, 1055.0, 2)
        );
        // Merge a third run (given as the summary file itself) into the table.
        let out2 = d.join("t2.json");
        learn(LearnArgs {
            runs: vec![d.join("r1").join("summary.json")],
            out: out2.clone(),
            merge: Some(out.clone()),
            gps_error_m: 20.0,
        })
        .unwrap();
        let t2 = HandoverTable::load(&out2).unwrap();
        assert_eq!((t2.runs, t2.carriers["A"].zones[0].count), (3, 3));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn runs_without_handovers_are_refused_and_nothing_is_written() {
        let d = tmp("none");
        std::fs::write(d.join("summary.json"), summary("[]")).unwrap();
        let out = d.join("t.json");
        let e = learn(LearnArgs {
            runs: vec![d.clone()],
            out: out.clone(),
            merge: None,
            gps_error_m: 20.0,
        })
        .unwrap_err();
        assert!(
            matches!(&e, CliError::Input(m) if m.contains("no handovers") && m.contains("not written")),
            "{e}"
        );
        assert!(!out.exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn show_lists_zones_and_predicts() {
        let d = tmp("show");
        let p = d.join("t.json");
        std::fs::write(
            &p,
            r#"{"format": "railpath-handover-table/1", "gps_error_m": 20.0, "runs": 50,
                "carriers": {"A": {"zones": [{"start_m": 1005.0, "end_m": 1090.0, "count": 50}], "runs": 50}}}"#,
        )
        .unwrap();
        let args = |x: Option<f64>, v: Option<f64>| ShowArgs {
            table: p.clone(),
            position_m: x,
            speed_kmh: v,
            horizon_s: 10.0,
        };
        let out = show(&args(None, None)).unwrap();
        assert!(out.contains("50 runs, GPS error 20 m"), "{out}");
        assert!(
            out.contains("1005.0 ..     1090.0 m  (50 handovers)"),
            "{out}"
        );
        // 905 m at 360 km/h (100 m/s): enters in 1.00 s, leaves in 1.85 s.
        let out = show(&args(Some(905.0), Some(360.0))).unwrap();
        assert!(
            out.contains("carrier A: 1005.0 .. 1090.0 m, enters in 1.00 s, leaves in 1.85 s"),
            "{out}"
        );
        let e = show(&args(Some(905.0), Some(f64::NAN))).unwrap_err();
        assert!(
            matches!(&e, CliError::Input(m) if m.starts_with("--speed-kmh")),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn bad_inputs_are_input_errors_naming_file_and_field() {
        let d = tmp("bad");
        let f = d.join("summary.json");
        std::fs::write(&f, r#"{"flows": []}"#).unwrap();
        let e = read_run(&d).unwrap_err();
        assert!(
            matches!(&e, CliError::Input(m) if m.contains("summary.json: handovers: missing")),
            "{e}"
        );
        std::fs::write(&f, summary(&H.replace(r#""position_m": 1025.0, "#, ""))).unwrap();
        let e = read_run(&d).unwrap_err();
        assert!(
            matches!(&e, CliError::Input(m) if m.contains("handovers[0]") && m.contains("position_m")),
            "{e}"
        );
        let e = read_run(&d.join("nope")).unwrap_err();
        assert!(matches!(e, CliError::Input(_)));
        std::fs::write(&f, summary(H)).unwrap();
        let e = learn(LearnArgs {
            runs: vec![d.clone()],
            out: d.join("t.json"),
            merge: None,
            gps_error_m: -1.0,
        })
        .unwrap_err();
        assert!(
            matches!(&e, CliError::Input(m) if m.starts_with("--gps-error-m")),
            "{e}"
        );
        // Issue 17: a GPS error of 1e308 m was accepted, and a position of 1e308 m overflowed
        // into an error naming the output file: both are the input's, named as such.
        let e = learn(LearnArgs {
            runs: vec![d.clone()],
            out: d.join("t.json"),
            merge: None,
            gps_error_m: 1e308,
        })
        .unwrap_err();
        assert!(
            matches!(&e, CliError::Input(m) if m.starts_with("--gps-error-m") && m.contains("from 0 to 1000, found 1e308")),
            "{e}"
        );
        std::fs::write(&f, summary(&H.replace("1025.0", "1e308"))).unwrap();
        let e = learn(LearnArgs {
            runs: vec![d.clone()],
            out: d.join("t.json"),
            merge: None,
            gps_error_m: 20.0,
        })
        .unwrap_err();
        assert!(
            matches!(&e, CliError::Input(m) if m.contains(&d.display().to_string()) && m.contains("handovers[0].position_m") && !m.contains("t.json")),
            "{e}"
        );
        assert!(!d.join("t.json").exists());
        std::fs::write(&f, summary(H)).unwrap();
        std::fs::write(d.join("old.json"), r#"{"format": "x"}"#).unwrap();
        let e = learn(LearnArgs {
            runs: vec![d.clone()],
            out: d.join("t.json"),
            merge: Some(d.join("old.json")),
            gps_error_m: 20.0,
        })
        .unwrap_err();
        assert!(
            matches!(&e, CliError::Input(m) if m.contains("old.json") && m.contains("format")),
            "{e}"
        );
        std::fs::remove_dir_all(&d).unwrap();
    }
}
