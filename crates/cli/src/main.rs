//! `railpath`: the command line of railpath (the verbs and outputs other tools rely on: docs/output-contract.md).
//!
//! Each subcommand is one module file with a `clap::Args` struct named `Args` and a
//! `pub fn main(args: Args) -> Result<(), CliError>`. Exit status: 0 success, 2 invalid input
//! ([`CliError::Input`], and clap's own usage errors), 1 anything else.

use clap::{Parser, Subcommand};

mod analyze;
mod bench;
mod calibrate;
mod error;
mod power;
mod repro;
mod run;
mod table;
mod testbed;
// ADD A SUBCOMMAND: (1) `mod <name>;` here,

pub use error::{print_stdout, CliError};

#[derive(Parser)]
#[command(
    name = "railpath",
    version,
    about = "Handover-aware multipath connectivity for trains"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one scenario; write DIR/summary.json and DIR/timeseries.csv.
    Run(run::Args),
    /// Time the simulator on embedded benchmark cases; one JSON object per line.
    Bench(bench::Args),
    /// Run a scenario over real kernel TCP/MPTCP in network namespaces (root).
    Testbed(testbed::Args),
    /// Learn per-carrier handover zones from earlier runs (the PHA handover table).
    Table(table::Args),
    /// Simulator vs kernel MPTCP when a path dies: side-by-side outage cases (testbed if root).
    Calibrate(calibrate::Args),
    /// Reproduce the source papers' experiments: summary.json and an HTML report per paper.
    Repro(repro::Args),
    /// The BOND paper's analytic power model of two bonded interfaces; one JSON line per rate.
    Power(power::Args),
    /// Analyse packet captures of either stack: goodput, RTT, retransmissions, stalls, MP_PRIO.
    Analyze(analyze::Args),
    // ADD A SUBCOMMAND: (2) a variant here, with a `///` line for --help,
}

fn main() {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(a) => run::main(a),
        Command::Bench(a) => bench::main(a),
        Command::Testbed(a) => testbed::main(a),
        Command::Table(a) => table::main(a),
        Command::Calibrate(a) => calibrate::main(a),
        Command::Repro(a) => repro::main(a),
        Command::Power(a) => power::main(a),
        Command::Analyze(a) => analyze::main(a),
        // ADD A SUBCOMMAND: (3) and its match arm here.
    };
    if let Err(e) = result {
        eprintln!("error: {}", railpath_core::shorten(&e.to_string()));
        std::process::exit(e.exit_code());
    }
}
