//! `railpath power`: the BOND paper's analytic power model of two bonded interfaces
//! (`railpath_sim::power`, docs/models/power.md) at one or more packet arrival rates. Prints one
//! JSON object per rate and line: `{"lambda", "p_avg_mw", "both_asleep", "only_1_active",
//! "only_2_active", "both_active"}`.

use crate::{print_stdout, CliError};
use railpath_sim::power::{analytic, Inputs, Profile, PROFILES};
use serde::Serialize;

#[derive(clap::Args)]
pub struct Args {
    /// Packet arrival rates, packets/s: a list (`10,50,100`) or a range `from:to:step`.
    #[arg(long)]
    pub lambda: String,
    /// Service rate of interface 1 (802.11a in the paper), packets/s.
    #[arg(long)]
    pub mu1: f64,
    /// Service rate of interface 2 (802.11g), packets/s.
    #[arg(long)]
    pub mu2: f64,
    /// Scheduling weight of interface 1 (alpha); interface 2 gets 1 - alpha.
    #[arg(long, default_value_t = 0.5)]
    pub alpha: f64,
    /// gamma >= 1: the pair serves at mu / gamma (the paper: MPTCP 1.12 and bonding 1.39 at
    /// 50 ms, MPTCP 1.84 at 100 ms).
    #[arg(long)]
    pub gamma: f64,
    /// Idle time before an interface sleeps, ms.
    #[arg(long, default_value_t = 200.0)]
    pub tau_ms: f64,
    /// Queue limits P and Q, packets (`P,Q`).
    #[arg(long, default_value = "100,100")]
    pub queues: String,
    /// Power profile: 1 (AR5213, 1.8 V) or 2 (AR9170, 5 V), the paper's Table 1.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub profile: u8,
}

#[derive(Serialize)]
struct Line {
    lambda: f64,
    p_avg_mw: f64,
    both_asleep: f64,
    only_1_active: f64,
    only_2_active: f64,
    both_active: f64,
}

/// `10,50,100` or `from:to:step` (both ends included, within a millionth of a step).
fn rates(s: &str) -> Result<Vec<f64>, String> {
    let num = |t: &str| -> Result<f64, String> {
        t.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("--lambda: expected a number, found {t:?}"))
    };
    if s.contains(':') {
        let p: Vec<&str> = s.split(':').collect();
        let [a, b, step] = p[..] else {
            return Err(format!("--lambda: expected from:to:step, found {s:?}"));
        };
        let (a, b, step) = (num(a)?, num(b)?, num(step)?);
        if step <= 0.0 || b < a {
            return Err(format!(
                "--lambda: expected from <= to and step > 0, found {s:?}"
            ));
        }
        let n = ((b - a) / step + 1e-6).floor() as u64 + 1;
        if n > 100_000 {
            return Err(format!("--lambda: {n} rates; at most 100000"));
        }
        Ok((0..n).map(|k| a + k as f64 * step).collect())
    } else {
        s.split(',').map(num).collect()
    }
}

fn queues(s: &str) -> Result<(u32, u32), String> {
    let p: Vec<&str> = s.split(',').collect();
    let q = |t: &str| {
        t.trim()
            .parse::<u32>()
            .map_err(|_| format!("--queues: expected two packet counts P,Q, found {s:?}"))
    };
    match p[..] {
        [a, b] => Ok((q(a)?, q(b)?)),
        _ => Err(format!(
            "--queues: expected two packet counts P,Q, found {s:?}"
        )),
    }
}

pub fn main(args: Args) -> Result<(), CliError> {
    let lambdas = rates(&args.lambda).map_err(CliError::Input)?;
    let (queue_1, queue_2) = queues(&args.queues).map_err(CliError::Input)?;
    let profile: Profile = PROFILES[args.profile as usize - 1];
    let mut out = String::new();
    for lambda in lambdas {
        let o = analytic(&Inputs {
            lambda,
            mu1: args.mu1,
            mu2: args.mu2,
            alpha: args.alpha,
            gamma: args.gamma,
            tau_s: args.tau_ms / 1e3,
            queue_1,
            queue_2,
            profile,
        })
        .map_err(|e| CliError::Input(format!("lambda {lambda}: {e}")))?;
        let l = Line {
            lambda,
            p_avg_mw: o.p_avg_mw,
            both_asleep: o.both_asleep,
            only_1_active: o.only_1_active,
            only_2_active: o.only_2_active,
            both_active: o.both_active,
        };
        out.push_str(&serde_json::to_string(&l).map_err(|e| CliError::Failed(e.to_string()))?);
        out.push('\n');
    }
    print_stdout(&out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_lists_and_ranges() {
        assert_eq!(rates("10,50, 100").unwrap(), vec![10.0, 50.0, 100.0]);
        assert_eq!(rates("0:1:0.25").unwrap(), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
        assert_eq!(rates("5:5:1").unwrap(), vec![5.0]);
        assert!(rates("1:0:1").unwrap_err().contains("from <= to"));
        assert!(rates("1:2").unwrap_err().contains("from:to:step"));
        assert!(rates("ten").unwrap_err().contains("\"ten\""));
        assert!(rates("0:1e9:1").unwrap_err().contains("at most"));
    }

    #[test]
    fn queues_are_two_counts() {
        assert_eq!(queues("100,50").unwrap(), (100, 50));
        assert!(queues("100").is_err());
        assert!(queues("a,b").is_err());
    }
}
