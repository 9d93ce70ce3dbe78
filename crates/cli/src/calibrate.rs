//! `railpath calibrate`: the simulator's MPTCP against the kernel's when a path dies (the cases,
//! their measures and targets: `railpath_testbed::calibrate`). Picks the cases, runs both sides
//! (the kernel's on the testbed when root and kernel MPTCP are there, else from the committed
//! fixture), and prints and writes the comparison.

use crate::{print_stdout, CliError};
use railpath_testbed::calibrate::{
    cases, kernel_release, kernel_side, machine, parse_fixture, rows, sim_side, table, today, Case,
    Fixture, Metrics, Output, CAPTURE_STALL_MS, EMBEDDED_FIXTURE, FIXTURE_FORMAT, OUTPUT_FORMAT,
};
use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Output directory: calibrate.json, calibrate.txt and each case's runs.
    #[arg(long, default_value = "out/calibrate")]
    pub out: PathBuf,
    /// Run only these cases (repeatable); `--list` shows the names.
    #[arg(long = "case", value_name = "NAME")]
    pub cases: Vec<String>,
    /// List the cases and exit.
    #[arg(long)]
    pub list: bool,
    /// Do not run the testbed; compare with the kernel fixture.
    #[arg(long)]
    pub sim_only: bool,
    /// Kernel fixture to compare with when the testbed does not run [default: the committed
    /// one, testbed/calibrate-kernel.json].
    #[arg(long, value_name = "FILE")]
    pub kernel: Option<PathBuf>,
    /// After a testbed run, write its kernel side as a fixture to FILE.
    #[arg(long, value_name = "FILE")]
    pub write_fixture: Option<PathBuf>,
    /// Exit with status 1 if a target is missed.
    #[arg(long)]
    pub check: bool,
    /// Capture every run (DIR/<case>/sim/pcap, DIR/<case>/kernel/pcap) and show the stalls of
    /// the in-order data stream the captures of both stacks show.
    #[arg(long)]
    pub pcap: bool,
    /// Testbed cases run this many at a time, each on namespaces of its own (the cases' links
    /// are 10 Mbit/s, far below what the emulator carries; 1 runs them one after another).
    #[arg(long, default_value_t = 2, value_name = "N")]
    pub jobs: usize,
}

pub fn main(args: Args) -> Result<(), CliError> {
    let all = cases();
    if args.list {
        let mut t = String::new();
        for c in &all {
            t.push_str(&format!("{:<20} {}\n", c.name, c.description));
        }
        return print_stdout(&t);
    }
    if !(1..=8).contains(&args.jobs) {
        return Err(CliError::Input(format!(
            "--jobs: expected 1 ..= 8, found {}",
            args.jobs
        )));
    }
    for n in &args.cases {
        if !all.iter().any(|c| &c.name == n) {
            return Err(CliError::Input(format!(
                "--case {n}: no such case (railpath calibrate --list shows them)"
            )));
        }
    }
    // A flip case needs its no-flip twin for the gain.
    let mut wanted: Vec<&Case> = Vec::new();
    for c in &all {
        let named = args.cases.is_empty() || args.cases.contains(&c.name);
        let twin_of_named = all
            .iter()
            .any(|f| f.flip_of.as_deref() == Some(c.name.as_str()) && args.cases.contains(&f.name));
        if named || twin_of_named {
            wanted.push(c);
        }
    }
    let testbed = if args.sim_only {
        None
    } else {
        match railpath_linkem::check_environment() {
            Ok(()) => Some(()),
            Err(e) => {
                eprintln!(
                    "calibrate: NOT running the testbed ({e}); the kernel side is the fixture"
                );
                None
            }
        }
    };
    let fixture = match (&testbed, &args.kernel) {
        (Some(()), None) => None,
        (_, Some(p)) => {
            let text = std::fs::read_to_string(p)
                .map_err(|e| CliError::Input(format!("{}: cannot read: {e}", p.display())))?;
            Some(parse_fixture(&text, &p.display().to_string()).map_err(CliError::Input)?)
        }
        (None, None) => Some(
            parse_fixture(EMBEDDED_FIXTURE, "testbed/calibrate-kernel.json")
                .map_err(CliError::Input)?,
        ),
    };
    if testbed.is_some() {
        railpath_testbed::install_interrupt_handler();
    }
    let mut sims: BTreeMap<String, Metrics> = BTreeMap::new();
    let mut kernels: BTreeMap<String, Metrics> = BTreeMap::new();
    let mut cap_stalls: BTreeMap<String, (f64, Option<f64>)> = BTreeMap::new();
    for c in &wanted {
        let dir = args.out.join(&c.name);
        let pdir = dir.join("sim").join("pcap");
        let (r, m, stall) =
            sim_side(c, args.pcap.then_some(pdir.as_path())).map_err(CliError::Failed)?;
        if let Some(st) = stall {
            cap_stalls.insert(c.name.clone(), (st, None));
        }
        crate::run::write_outputs(&dir.join("sim"), &r)?;
        std::fs::write(dir.join("scenario.toml"), &c.toml)?;
        sims.insert(c.name.clone(), m);
        if testbed.is_none() {
            if let Some(m) = fixture.as_ref().and_then(|f| f.cases.get(&c.name)) {
                kernels.insert(c.name.clone(), m.clone());
            }
        }
    }
    if testbed.is_some() {
        let out = &args.out;
        let write = |c: &Case, r: &railpath_sim::RunResults| {
            crate::run::write_outputs(&out.join(&c.name).join("kernel"), r)
                .map_err(|e| e.to_string())
        };
        let pcap_dir = |c: &Case| out.join(&c.name).join("kernel").join("pcap");
        let side = kernel_side(
            &wanted,
            args.jobs,
            &write,
            args.pcap
                .then_some(&pcap_dir as railpath_testbed::calibrate::CaptureDir),
        )
        .map_err(CliError::Failed)?;
        for (name, (m, st)) in side {
            if let (Some(st), Some(x)) = (st, cap_stalls.get_mut(&name)) {
                x.1 = Some(st);
            }
            kernels.insert(name, m);
        }
    }
    let rows = rows(&wanted, &sims, &kernels, &cap_stalls);
    let met = rows
        .iter()
        .flat_map(|r| &r.checks)
        .filter(|c| c.holds)
        .count();
    let missed = rows
        .iter()
        .flat_map(|r| &r.checks)
        .filter(|c| !c.holds)
        .count();
    let (source, kernel, date) = match (&testbed, &fixture) {
        (Some(()), _) => ("testbed".to_string(), kernel_release(), today()),
        (None, Some(f)) => ("fixture".to_string(), f.kernel.clone(), f.date.clone()),
        (None, None) => unreachable!("no testbed means a fixture"),
    };
    if let (Some(p), Some(())) = (&args.write_fixture, &testbed) {
        let f = Fixture {
            format: FIXTURE_FORMAT.into(),
            kernel: kernel.clone(),
            date: date.clone(),
            machine: machine(),
            cases: kernels.clone(),
        };
        let mut json = serde_json::to_string_pretty(&f)
            .map_err(|e| CliError::Failed(format!("cannot serialise the fixture: {e}")))?;
        json.push('\n');
        std::fs::write(p, json)
            .map_err(|e| CliError::Failed(format!("cannot write {}: {e}", p.display())))?;
    } else if args.write_fixture.is_some() {
        return Err(CliError::Failed(
            "--write-fixture needs the testbed (root and kernel MPTCP)".into(),
        ));
    }
    let mut text = format!(
        "kernel side: {source} (Linux {kernel}, {date})\n{}",
        table(&rows)
    );
    for r in &rows {
        if let (Some(gs), Some(gk)) = (r.flip_gain_sim, r.flip_gain_kernel) {
            text.push_str(&format!(
                "flip gain on {}: sim {:+.1}%, kernel {:+.1}%\n",
                r.name,
                gs * 100.0,
                gk * 100.0
            ));
        }
    }
    if args.pcap {
        text.push_str(&format!(
            "stalls of the in-order stream in the captures (gaps >= {CAPTURE_STALL_MS} ms within 4 s of each onset), s:\n"
        ));
        let opt = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.2}"));
        for r in &rows {
            text.push_str(&format!(
                "  {:<20} sim {:>6}  kernel {:>6}\n",
                r.name,
                opt(r.capture_stall_sim_s),
                opt(r.capture_stall_kernel_s)
            ));
        }
    }
    text.push_str(&format!("targets: {met} met, {missed} missed\n"));
    let out = Output {
        format: OUTPUT_FORMAT,
        kernel_source: source,
        kernel,
        kernel_date: date,
        cases: rows,
        targets_met: met,
        targets_missed: missed,
    };
    std::fs::create_dir_all(&args.out)?;
    let mut json = serde_json::to_string_pretty(&out)
        .map_err(|e| CliError::Failed(format!("cannot serialise: {e}")))?;
    json.push('\n');
    std::fs::write(args.out.join("calibrate.json"), json)?;
    std::fs::write(args.out.join("calibrate.txt"), &text)?;
    print_stdout(&format!(
        "{text}results in {}\n",
        args.out.join("calibrate.json").display()
    ))?;
    if args.check && missed > 0 {
        return Err(CliError::Failed(format!(
            "{missed} calibration targets missed (see {})",
            args.out.join("calibrate.txt").display()
        )));
    }
    Ok(())
}
