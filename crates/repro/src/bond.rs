//! The BOND paper (seeds.md section 5; shared/seeds/004_3aa6be496264816a.txt) reproduced: link
//! bonding against MPTCP over an 802.11a and an 802.11g interface pair (scenarios/bond/paper.toml),
//! over seeds 1..=N (a seed draws the Wi-Fi MAC's backoffs, frame errors, fading and Minstrel's
//! sample tables).
//!
//! - Throughput per scheme (each interface alone, bonding, bonding with the AP's duplicate-ACK
//!   filter, MPTCP) for TCP at 50 and 100 ms of wired delay, and for UDP (the interfaces alone
//!   and bonded); bonding and MPTCP again under two other loss detections (RFC 6675 as written,
//!   and today's RACK), since how the sender takes reordering decides what the filter gains.
//! - The same TCP schemes at 50 ms with the members' SNRs held constant (no fading): what the
//!   results owe to the fading, railpath's guess.
//! - The weight table: 1:1, 2:1, 1:2, 4:3 at four places A-D (member SNRs, see `PLACES`).
//! - The 300 s failure run: the 802.11g adapter unplugged from 100 to 200 s, bonding and MPTCP,
//!   the stall at each event measured in 100 ms bins.
//! - Power (Figs. 11-12): the analytic model (railpath_sim::power) against lambda for MPTCP and
//!   bonding at 50 and 100 ms, gamma from the paper and from railpath's own throughputs, and the
//!   simulated counterpart: Poisson packets over a random-split bond whose members serve at
//!   mu_i / gamma, each member's awake and asleep time measured from the packets.

use crate::findings::{
    fmt_number, number, Block, Cause, Cell, Claim, Findings, Meta, Number, Table,
};
use crate::frame::{Context, Plan, Runs, Study};
use crate::sim;
use crate::stats::mean;
use crate::svg::Plot;
use railpath_scenario::{FlowKind, LossDetection, Scenario};
use railpath_sim::power::{self, Inputs, PROFILES};

const PAPER: &str = include_str!("../../../scenarios/bond/paper.toml");
const FILE: &str = "scenarios/bond/paper.toml";
const FAILURE: &str = include_str!("../../../scenarios/bond/failure.toml");
const FAILURE_FILE: &str = "scenarios/bond/failure.toml";
const POWER: &str = include_str!("../../../scenarios/bond/power.toml");
const POWER_FILE: &str = "scenarios/bond/power.toml";

/// TCP schemes: (id, name).
const SCHEMES: [(&str, &str); 5] = [
    ("a", "802.11a alone"),
    ("g", "802.11g alone"),
    ("bond", "bonding"),
    ("bond-filter", "bonding + ACK filter"),
    ("mptcp", "MPTCP"),
];
/// Loss detections: (scenario value, name). The first is the scenario's (Linux 3.5's).
const LOSS: [(LossDetection, &str); 3] = [
    (
        LossDetection::DupthreshAdaptive,
        "Linux 3.5: DupThresh adapted to reordering",
    ),
    (LossDetection::Dupthresh, "RFC 6675 DupThresh 3"),
    (LossDetection::Rack, "RACK (Linux today)"),
];
/// Places A-D: (name, 802.11a mean SNR, 802.11g mean SNR), dB, railpath's guesses: 802.11a
/// holds 28 dB while the 2.4 GHz member steps down so that the fixed-rate table (10 % frame
/// errors, 1500-byte packets) gives 48, 36, 24 and 18 Mbit/s, railpath's earlier guess of the
/// places' rates.
pub const PLACES: [(&str, f64, f64); 4] = [
    ("A", 28.0, 22.0),
    ("B", 28.0, 20.0),
    ("C", 28.0, 16.0),
    ("D", 28.0, 13.0),
];
/// Weights m:n (802.11a : 802.11g).
pub const WEIGHTS: [[u32; 2]; 4] = [[1, 1], [2, 1], [1, 2], [4, 3]];
/// The paper's best weights per place (Fig. 8).
const BEST: [[u32; 2]; 4] = [[4, 3], [4, 3], [2, 1], [2, 1]];
/// Arrival rates of the power curves, packets/s.
pub const LAMBDAS: [f64; 11] = [
    1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0, 1000.0, 1500.0,
];
const TAU_S: f64 = 0.2;
const PACKET: u32 = 1500;

#[derive(Debug, Clone, Copy)]
pub enum Job {
    Thr {
        scheme: usize,
        udp: bool,
        delay_ms: f64,
        loss: usize,
        /// The members' SNRs held constant (no fading): how much the results owe to the
        /// fading, railpath's guess.
        still: bool,
        seed: u64,
    },
    Weight {
        place: usize,
        w: usize,
        seed: u64,
    },
    Failure {
        mptcp: bool,
        seed: u64,
    },
    /// Poisson packets at `lambda` over a random-split bond with service mu_i / gamma.
    Power {
        lambda: f64,
        gamma: f64,
        mu: [f64; 2],
        /// The bond's round robin instead of the model's random split.
        rr: bool,
    },
}

#[derive(Debug, Clone, Default)]
pub struct Out {
    mbps: f64,
    /// Goodput per second (failure runs), and per 100 ms bin.
    per_s: Vec<f64>,
    bins: Vec<f64>,
    /// Awake fraction of each member (power runs).
    awake: [f64; 2],
}

fn load(text: &str, file: &str) -> Result<Scenario, String> {
    sim::load(text, file, &[])
}

fn set_paths(s: &mut Scenario, kind: FlowKind, paths: &[&str]) {
    let f = &mut s.flows[0];
    f.kind = kind;
    f.paths = paths.iter().map(|p| p.to_string()).collect();
    if kind == FlowKind::Mptcp {
        f.cc = "lia".into();
    }
}

fn set_delay(s: &mut Scenario, delay_ms: f64) {
    for l in &mut s.links {
        // The wired delay plus 1 ms over the air (as the scenario file).
        l.delay_ms = delay_ms + 1.0;
    }
}

fn scenario(job: &Job) -> Result<Scenario, String> {
    let mut s = match job {
        Job::Failure { .. } => load(FAILURE, FAILURE_FILE)?,
        Job::Power { .. } => load(POWER, POWER_FILE)?,
        _ => load(PAPER, FILE)?,
    };
    match *job {
        Job::Thr {
            scheme,
            udp,
            delay_ms,
            loss,
            still,
            seed,
        } => {
            s.run.seed = seed;
            set_delay(&mut s, delay_ms);
            if still {
                for w in s.links.iter_mut().filter_map(|l| l.wifi.as_mut()) {
                    w.doppler_hz = 0.0;
                    w.rician_k_db = None;
                }
            }
            s.tcp.loss_detection = Some(LOSS[loss].0);
            match SCHEMES[scheme].0 {
                "a" => set_paths(&mut s, FlowKind::Tcp, &["wlan-a"]),
                "g" => set_paths(&mut s, FlowKind::Tcp, &["wlan-g"]),
                "bond" => {}
                "bond-filter" => s.bonds[0].ack_filter = true,
                _ => set_paths(&mut s, FlowKind::Mptcp, &["wlan-a", "wlan-g"]),
            }
            if udp {
                // iperf -u at a rate above what both members carry.
                let f = &mut s.flows[0];
                f.kind = FlowKind::Udp;
                f.cc.clear();
                f.udp = Some(railpath_scenario::UdpOptions {
                    process: railpath_scenario::UdpProcess::Cbr,
                    mean_mbps: Some(80.0),
                    packet_bytes: Some(PACKET),
                    ..Default::default()
                });
            }
        }
        Job::Weight { place, w, seed } => {
            s.run.seed = seed;
            s.links[0]
                .wifi
                .as_mut()
                .ok_or("wlan-a is a wifi link")?
                .snr_db = Some(PLACES[place].1);
            s.links[1]
                .wifi
                .as_mut()
                .ok_or("wlan-g is a wifi link")?
                .snr_db = Some(PLACES[place].2);
            s.bonds[0].weights = Some(WEIGHTS[w].to_vec());
        }
        Job::Failure { mptcp, seed } => {
            s.run.seed = seed;
            if mptcp {
                set_paths(&mut s, FlowKind::Mptcp, &["wlan-a", "wlan-g"]);
            }
        }
        Job::Power {
            lambda,
            gamma,
            mu,
            rr,
        } => {
            s.run.seed = 1;
            s.run.duration_s = (2000.0 / lambda).clamp(60.0, 2000.0);
            s.run.bin_ms = s.run.duration_s * 1000.0;
            for (k, l) in s.links.iter_mut().enumerate() {
                l.rate_mbps = Some(mu[k] / gamma * f64::from(PACKET) * 8.0 / 1e6);
            }
            if rr {
                s.bonds[0].split = railpath_scenario::BondSplit::Weights;
            }
            s.bonds[0].sleep_after_ms = Some(TAU_S * 1e3);
            let u = s.flows[0]
                .udp
                .as_mut()
                .ok_or("the power scenario's flow is a udp source")?;
            u.mean_mbps = Some(lambda * f64::from(PACKET) * 8.0 / 1e6);
            u.packet_bytes = Some(PACKET);
        }
    }
    sim::check(&s)?;
    Ok(s)
}

fn one(job: &Job) -> Result<Out, String> {
    let s = scenario(job)?;
    let r = sim::simulate(&s)?;
    let f = &r.summary.flows[0];
    let mut out = Out {
        mbps: f.goodput_bps / 1e6,
        ..Default::default()
    };
    if matches!(job, Job::Failure { .. }) {
        if let Some(g) = r
            .series
            .iter()
            .find(|x| x.flow == f.id && x.subflow.is_empty() && x.metric == "goodput_bps")
        {
            out.bins = g.values.iter().map(|v| v / 1e6).collect();
            let per = ((1.0 / r.bin_s).round() as usize).max(1);
            out.per_s = out.bins.chunks(per).map(mean).collect();
        }
    }
    if let (Job::Power { .. }, Some(b)) = (job, r.summary.bonds.first()) {
        let d = r.summary.sim_duration_s;
        for (k, m) in b.members.iter().enumerate().take(2) {
            out.awake[k] = m.awake_s / d;
        }
    }
    Ok(out)
}

/// The fixed-rate table's rate at a mean SNR, Mbit/s: the fastest OFDM rate with under 10 %
/// errors for 1500-byte packets (1536 MAC bytes).
fn table_rate(snr_db: f64) -> f64 {
    use railpath_sim::net::wifi_phy::{ideal_rate, RATES_MBPS};
    RATES_MBPS[ideal_rate(snr_db, 1536, 0.1, RATES_MBPS.len() - 1)]
}

/// Packets per second one member serves at saturation (1500-byte packets).
fn mu_of(standard: railpath_scenario::WifiStandard, phy: f64) -> f64 {
    let mac = railpath_sim::net::wifi::WifiMac::new(&railpath_scenario::Wifi {
        standard,
        phy_mbps: phy,
        frame_error: 0.0,
        snr_db: None,
        rate_control: Default::default(),
        doppler_hz: 0.0,
        rician_k_db: None,
        max_rate_tries: None,
    });
    mac.saturation_bps(PACKET) / (f64::from(PACKET) * 8.0)
}

/// Analytic average power, mW (None where the load has no steady state).
fn analytic(lambda: f64, gamma: f64, mu: [f64; 2], profile: usize) -> Option<f64> {
    power::analytic(&Inputs {
        lambda,
        mu1: mu[0],
        mu2: mu[1],
        alpha: 0.5,
        gamma,
        tau_s: TAU_S,
        queue_1: 1000,
        queue_2: 1000,
        profile: PROFILES[profile],
    })
    .ok()
    .map(|o| o.p_avg_mw)
}

/// Two single-interface models summed, each interface fed the whole lambda (the "separate"
/// model of Fig. 12 as railpath reads it).
fn separate(lambda: f64, gamma: f64, mu: [f64; 2], profile: usize) -> Option<f64> {
    let p = PROFILES[profile];
    let one = |alpha: f64| {
        power::analytic(&Inputs {
            lambda,
            mu1: mu[0],
            mu2: mu[1],
            alpha,
            gamma,
            tau_s: TAU_S,
            queue_1: 1000,
            queue_2: 1000,
            profile: p,
        })
        .ok()
        .map(|o| o.p_avg_mw)
    };
    // alpha = 1: interface 2 never wakes (its sleep draw is in the sum once, removed here).
    Some(one(1.0)? - p.sleep_2_mw + one(0.0)? - p.sleep_1_mw)
}

/// Simulated power from the members' awake fractions, mW.
fn simulated(awake: [f64; 2], profile: usize) -> f64 {
    let p = PROFILES[profile];
    awake[0] * p.active_1_mw
        + (1.0 - awake[0]) * p.sleep_1_mw
        + awake[1] * p.active_2_mw
        + (1.0 - awake[1]) * p.sleep_2_mw
}

/// Seconds from `from` until the per-second goodput first reaches `level`.
fn time_to(per_s: &[f64], from: usize, level: f64) -> Option<f64> {
    per_s
        .iter()
        .enumerate()
        .skip(from)
        .find(|(_, v)| **v >= level)
        .map(|(k, _)| (k + 1 - from) as f64)
}

/// Seconds of 100 ms bins (`bin_s` wide) in [from, from + span) s whose goodput is below
/// `level`: how long a scheme stalled after an event.
fn stalled_s(bins: &[f64], bin_s: f64, from: f64, span: f64, level: f64) -> f64 {
    let a = (from / bin_s).round() as usize;
    let b = ((from + span) / bin_s).round() as usize;
    bins.get(a..b.min(bins.len())).map_or(0.0, |v| {
        v.iter().filter(|x| **x < level).count() as f64 * bin_s
    })
}

/// The report's setup: the power model's service rates `mu` (packets/s) and the places.
fn setup(mu: [f64; 2]) -> String {
    let places: String = PLACES
        .iter()
        .map(|(p, a, g)| {
            format!(
                "{p} {a:.0}/{g:.0} dB ({:.0}/{:.0} Mbit/s)",
                table_rate(*a),
                table_rate(*g)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        r#"<p>As in the paper: a bulk TCP download from a server behind 50 ms (or 100 ms) of wired delay to a client joined to
its AP by an 802.11a and an 802.11g interface pair, bonded (round robin unless weighted) or used by MPTCP (LIA, one
subflow per interface). Choices the paper does not state, argued in <code>scenarios/bond/</code> (<code>paper.toml</code>,
<code>failure.toml</code>, <code>power.toml</code>) and
<code>docs/models/bond.md</code>: each interface is railpath's 802.11 MAC model (DCF timing of IEEE 802.11-2012), the AP
and the client contending for each channel under the DCF (the client's TCP ACKs take airtime); each station picks its
rate per frame with Minstrel as Linux 3.5's mac80211 does, at most 3 tries per rate as the AR9170 adapters' driver
(carl9170) allows; frames fail with the OFDM error model's chance (ns-3's NIST model) at the channel's SNR, which fades
slowly (Rician, K = 6 dB, Doppler 6 Hz at 5 GHz and 3 Hz at 2.4 GHz, after the IEEE 802.11 TGn indoor channel models;
<code>docs/models/wifi.md</code>). <b>The SNRs are railpath's guess</b> (the paper gives neither signal levels nor
rates): 28 dB on 802.11a and 20 dB on 802.11g, where the fixed-rate table (the fastest rate with under 10% frame errors
for 1500-byte packets) gives 54 and 36 Mbit/s, about 4:3 in saturation throughput as the paper's "weights like the
throughput ratio" suggests; so is the fading, and the report's constant-SNR rows show what the results owe to it.
1000-packet interface queues; Linux 3.5's TCP (CUBIC, SACK, DupThresh adapted to the reordering seen, capped at that
kernel's 127). Places A-D (802.11a / 802.11g mean SNR, and the fixed-rate table's rates): {places}: 802.11g's SNR
steps down, railpath's guess. The failure: 802.11g's USB adapter unplugged (its queue lost) from 100 to 200 s: the
bonding driver releases it at once and enslaves it again on return; MPTCP's path manager closes its subflow (its data
sent again on 802.11a) and joins a new one on return. Power: tau 200 ms, Table 1's profiles, queues of 1000, alpha =
beta = 0.5, service rates the members' saturation at 54 and 36 Mbit/s ({mu1:.0} and {mu2:.0} packets/s of 1500
bytes). No value was tuned to the paper's results.</p>"#,
        mu1 = mu[0],
        mu2 = mu[1],
    )
}

/// The BOND study.
pub struct Bond {
    seeds: u64,
    /// Packets per second each member serves at saturation (802.11a at 54, 802.11g at 36).
    mu: [f64; 2],
    /// The paper's gammas, each once (the simulated power runs').
    gammas: Vec<f64>,
}

type BondRuns = Runs<Job, Out>;

/// The paper's gammas per scheme and delay (the report's cases): (label, gamma).
const PAPER_GAMMAS: [(&str, f64); 4] = [
    ("MPTCP, 50 ms", 1.12),
    ("bonding, 50 ms", 1.39),
    ("MPTCP, 100 ms", 1.84),
    ("bonding, 100 ms", 1.39),
];

impl Study for Bond {
    const META: Meta = Meta {
        name: "bond",
        title: "BOND: link bonding against MPTCP over two Wi-Fi interfaces, and their power",
        page_title: "railpath: the BOND paper reproduced",
        heading: "BOND: link bonding against MPTCP over two Wi-Fi interfaces, reproduced",
        source: "shared/seeds/004_3aa6be496264816a.txt",
        digest: "English digest in railpath's seeds.md §5",
        no_kernel: Some("this kernel has no bonding driver"),
    };
    type Job = Job;
    type Out = Out;

    fn plan(cx: &mut Context) -> Result<Plan<Self>, String> {
        let seeds: Vec<u64> = (1..=cx.opts().seeds.max(2)).collect();
        let few: Vec<u64> = (1..=cx.opts().seeds.clamp(2, 5)).collect();
        let mut jobs = Vec::new();
        for delay_ms in [50.0, 100.0] {
            for scheme in 0..SCHEMES.len() {
                jobs.extend(seeds.iter().map(|&seed| Job::Thr {
                    scheme,
                    udp: false,
                    delay_ms,
                    loss: 0,
                    still: false,
                    seed,
                }));
            }
        }
        for scheme in 0..SCHEMES.len() {
            jobs.extend(few.iter().map(|&seed| Job::Thr {
                scheme,
                udp: false,
                delay_ms: 50.0,
                loss: 0,
                still: true,
                seed,
            }));
        }
        for loss in 1..LOSS.len() {
            for scheme in 2..SCHEMES.len() {
                jobs.extend(few.iter().map(|&seed| Job::Thr {
                    scheme,
                    udp: false,
                    delay_ms: 50.0,
                    loss,
                    still: false,
                    seed,
                }));
            }
        }
        for scheme in 0..3 {
            jobs.extend(few.iter().map(|&seed| Job::Thr {
                scheme,
                udp: true,
                delay_ms: 50.0,
                loss: 0,
                still: false,
                seed,
            }));
        }
        for place in 0..PLACES.len() {
            for w in 0..WEIGHTS.len() {
                jobs.extend(few.iter().map(|&seed| Job::Weight { place, w, seed }));
            }
        }
        for mptcp in [false, true] {
            jobs.extend(few.iter().map(|&seed| Job::Failure { mptcp, seed }));
        }
        let thr_runs = jobs.len();
        let mu = [
            mu_of(railpath_scenario::WifiStandard::A, 54.0),
            mu_of(railpath_scenario::WifiStandard::G, 36.0),
        ];
        // Simulated counterparts of the power model: one per distinct paper gamma (random
        // split, as the model), and bonding's with the bond's own round robin.
        let mut gammas: Vec<f64> = PAPER_GAMMAS.iter().map(|c| c.1).collect();
        gammas.sort_by(f64::total_cmp);
        gammas.dedup();
        for &gamma in &gammas {
            for &lambda in &LAMBDAS {
                if analytic(lambda, gamma, mu, 0).is_some() {
                    jobs.push(Job::Power {
                        lambda,
                        gamma,
                        mu,
                        rr: false,
                    });
                }
            }
        }
        for &lambda in &LAMBDAS {
            jobs.push(Job::Power {
                lambda,
                gamma: 1.39,
                mu,
                rr: true,
            });
        }
        let grid = format!(
            "{thr_runs} throughput runs and {} power runs",
            jobs.len() - thr_runs
        );
        Ok(Plan {
            study: Bond {
                seeds: seeds.len() as u64,
                mu,
                gammas,
            },
            jobs,
            grid,
        })
    }

    fn run(&self, job: &Job) -> Result<Out, String> {
        one(job)
    }

    fn analyse(&self, runs: BondRuns, _cx: &mut Context) -> Result<Findings, String> {
        let mut f = Findings::new(self.seeds);
        let (mut thr_table, means) = throughput(&runs, &mut f);
        let (still_means, still_gain) = still(&runs, &mut thr_table, &mut f);
        let (mut filter_table, gains) = filter(&runs, &mut f);
        filter_table.row([
            "Linux 3.5, constant SNR (no fading)".to_string(),
            format!("{:.2}", still_means[2]),
            format!("{:.2}", still_means[3]),
            format!("{:.2}", still_means[4]),
            "+15".to_string(),
            fmt_number(&still_gain, 1),
        ]);
        delay(&means, &mut f);
        let (weight_table, weight_fig) = weights(&runs, &mut f);
        let a = means[0][0];
        let (fail_table, fail_figs) = failure(&runs, a, &mut f);
        let power = self.power(&runs, &means, &mut f);
        f.report.method = format!(
            "{} seeds for the throughput table (5 for the loss-detection, UDP, weight and failure runs); numbers are means with\n\
             95% confidence intervals over seeds.",
            self.seeds
        );
        f.report.setup = setup(self.mu);
        f.section("Throughput per scheme (Mbit/s)", vec![thr_table.into()]);
        f.section(
            "Duplicate-ACK filtering, by the sender's loss detection (50 ms)",
            vec![filter_table.into()],
        );
        f.section(
            "Weights m:n by place (TCP bonding, 50 ms, Mbit/s)",
            vec![weight_table.into()],
        );
        f.section(
            "Interface failure (300 s, 802.11g's adapter unplugged from 100 to 200 s)",
            vec![
                Block::prose(
                    "<p>Stalled: the time, in 100 ms bins within 10 s of the event, with goodput below half of what the scheme carries on\n\
                     802.11a alone (150-200 s). Settles and recovers: whole seconds until the goodput is back to 80% of that level\n\
                     after the unplug, 90% of the level before it after the return.</p>",
                ),
                fail_table.into(),
            ],
        );
        f.section(
            "Power: analytic against simulated (profile 2, mW; the paper's gammas: MPTCP 1.12 at 50 ms, 1.84 at 100 ms, bonding 1.39)",
            vec![
                Block::prose(
                    "<p>Simulated: Poisson packets of 1500 bytes at lambda over a bond whose members serve at mu_i / gamma, split at random\n\
                     half and half as the model assumes; the last column splits by the bond's round robin instead (gamma 1.39).</p>",
                ),
                power.table.into(),
            ],
        );
        f.section(
            "Where railpath and the paper differ, and why",
            vec![Block::Prose(discussion(
                &means,
                &gains,
                &Still {
                    means: still_means,
                    gain: still_gain.railpath,
                },
                a,
                power.worst,
                power.worst_rr,
            ))],
        );
        let mut figs = fail_figs;
        figs.extend(power.figs);
        figs.push(weight_fig);
        f.section("Plots", figs);
        Ok(f)
    }
}

/// Goodputs (Mbit/s) of the throughput runs of `scheme` (UDP or TCP, wired delay, loss
/// detection), by seed.
fn thr(runs: &BondRuns, scheme: usize, udp: bool, delay: f64, loss: usize) -> Vec<f64> {
    thr_of(runs, scheme, udp, delay, loss, false)
}

/// As [`thr`], of the runs with (`still`) or without constant SNRs.
fn thr_of(
    runs: &BondRuns,
    scheme: usize,
    udp: bool,
    delay: f64,
    loss: usize,
    still: bool,
) -> Vec<f64> {
    runs.iter()
        .filter_map(|(j, o)| match *j {
            Job::Thr {
                scheme: s,
                udp: u,
                delay_ms,
                loss: l,
                still: st,
                ..
            } if s == scheme && u == udp && delay_ms == delay && l == loss && st == still => {
                Some(o.mbps)
            }
            _ => None,
        })
        .collect()
}

/// Throughput per scheme and delay, and UDP; the claims on aggregation. Returns the table and
/// the TCP means [delay][scheme].
fn throughput(runs: &BondRuns, f: &mut Findings) -> (Table, [[f64; 5]; 2]) {
    let mut table = Table::new(["traffic", "wired delay", "scheme", "railpath"]);
    let mut means = [[0.0; 5]; 2];
    for (di, delay) in [50.0, 100.0].into_iter().enumerate() {
        for (k, (id, name)) in SCHEMES.iter().enumerate() {
            let n = number(
                &format!("tcp-{id}-{delay}ms-mbps"),
                None,
                &thr(runs, k, false, delay, 0),
                "Mbit/s",
            );
            means[di][k] = n.railpath;
            table.row([
                "TCP".to_string(),
                format!("{delay:.0} ms"),
                name.to_string(),
                fmt_number(&n, 2),
            ]);
            f.numbers.push(n);
        }
    }
    let mut udp_means = [0.0; 3];
    for (k, (id, name)) in SCHEMES.iter().enumerate().take(3) {
        let n = number(
            &format!("udp-{id}-mbps"),
            None,
            &thr(runs, k, true, 50.0, 0),
            "Mbit/s",
        );
        udp_means[k] = n.railpath;
        table.row([
            "UDP".to_string(),
            "50 ms".to_string(),
            name.to_string(),
            fmt_number(&n, 2),
        ]);
        f.numbers.push(n);
    }
    let [a, g, bond, _, mp] = means[0];
    let sum = a + g;
    f.claims.push(
        Claim::paper(
            "aggregation-beats-single",
            "Aggregation (bonding, MPTCP) beats either interface alone",
            bond > a.max(g) && mp > a.max(g),
            format!(
                "TCP at 50 ms: 802.11a {a:.2}, 802.11g {g:.2}, bonding {bond:.2}, MPTCP {mp:.2} Mbit/s"
            ),
        )
        .unexamined(),
    );
    f.claims.push(
        Claim::railpath(
            "mptcp-near-sum",
            "MPTCP's throughput is close to the sum of the two interfaces alone (within 10%)",
            mp >= 0.9 * sum,
            format!(
                "MPTCP {mp:.2} of a sum of {sum:.2} Mbit/s ({:.0}%)",
                mp / sum * 100.0
            ),
        )
        .unexamined(),
    );
    f.claims.push(
        Claim::paper(
            "mptcp-beats-bonding",
            "Bonding (TCP, no filter) is lower than MPTCP at 50 ms",
            bond < mp,
            format!("bonding {bond:.2} vs MPTCP {mp:.2} Mbit/s"),
        )
        .unexamined(),
    );
    let usum = udp_means[0] + udp_means[1];
    f.claims.push(
        Claim::railpath(
            "udp-bonding-near-sum",
            "With UDP, bonding reaches about the sum of its members (within 5%)",
            udp_means[2] >= 0.95 * usum,
            format!(
                "UDP bonded {:.2} of a sum of {usum:.2} Mbit/s ({:.0}%)",
                udp_means[2],
                udp_means[2] / usum * 100.0
            ),
        )
        .unexamined(),
    );
    (table, means)
}

/// The TCP schemes at 50 ms with the members' SNRs held constant (no fading): rows of the
/// throughput table, and the filter's gain (Linux 3.5's sender), paired by seed. Returns the
/// means per scheme and the gain.
fn still(runs: &BondRuns, table: &mut Table, f: &mut Findings) -> ([f64; 5], Number) {
    let mut means = [0.0; 5];
    for (k, (id, name)) in SCHEMES.iter().enumerate() {
        let n = number(
            &format!("tcp-{id}-50ms-still-mbps"),
            None,
            &thr_of(runs, k, false, 50.0, 0, true),
            "Mbit/s",
        );
        means[k] = n.railpath;
        table.row([
            "TCP, constant SNR (no fading)".to_string(),
            "50 ms".to_string(),
            name.to_string(),
            fmt_number(&n, 2),
        ]);
        f.numbers.push(n);
    }
    let b = thr_of(runs, 2, false, 50.0, 0, true);
    let fl = thr_of(runs, 3, false, 50.0, 0, true);
    let gain = paired_gain_pct(&fl, &b);
    let n = number("filter-gain-still-pct", Some(15.0), &gain, "%");
    f.numbers.push(n.clone());
    (means, n)
}

/// The gain of `with` over `without`, %, seed by seed (the runs paired by seed).
fn paired_gain_pct(with: &[f64], without: &[f64]) -> Vec<f64> {
    with.iter()
        .zip(without)
        .map(|(x, y)| (x / y - 1.0) * 100.0)
        .collect()
}

/// The filter's gain under each loss detection, paired by seed.
fn filter(runs: &BondRuns, f: &mut Findings) -> (Table, [f64; 3]) {
    let mut table = Table::new([
        "loss detection",
        "bonding",
        "bonding + filter",
        "MPTCP",
        "paper: filter gain (%)",
        "railpath: gain (%), paired",
    ]);
    let mut gains = [0.0; 3];
    for (l, (_, lname)) in LOSS.iter().enumerate() {
        let b = thr(runs, 2, false, 50.0, l);
        let fl = thr(runs, 3, false, 50.0, l);
        let m = thr(runs, 4, false, 50.0, l);
        let gain = paired_gain_pct(&fl, &b);
        let n = number(
            &format!("filter-gain-{}-pct", LOSS[l].0.as_str()),
            Some(15.0),
            &gain,
            "%",
        );
        gains[l] = n.railpath;
        table.row([
            lname.to_string(),
            format!("{:.2}", mean(&b)),
            format!("{:.2}", mean(&fl)),
            format!("{:.2}", mean(&m)),
            "+15".to_string(),
            fmt_number(&n, 1),
        ]);
        if l == 0 {
            f.claims.push(
                Claim::paper(
                    "filter-gain",
                    "Duplicate-ACK filtering gives bonding about +15% (the scenario's sender, Linux 3.5's)",
                    n.ci95[0] > 5.0,
                    format!("{} % (paired over seeds, 95%)", fmt_number(&n, 1)),
                )
                .otherwise(
                Cause::Railpath,
                "With the scenario's Linux 3.5 sender, which raises its duplicate-ACK threshold to the reordering it sees, \
                 the filter gains only as much as the members' rate changes on their fading channels (railpath's guess of \
                 the fading; the paper gives no signal levels) make the reordering irregular: with constant SNRs it gains \
                 nothing (the table's last row), and a sender with RFC 6675's fixed threshold gains more.",
            ),
            );
        }
        f.numbers.push(n);
    }
    (table, gains)
}

/// Delay 50 -> 100 ms. `filtered`: bonding with the filter at 50 and 100 ms.
fn delay(means: &[[f64; 5]; 2], f: &mut Findings) {
    let d_bond = means[1][2] - means[0][2];
    let d_filter = means[1][3] - means[0][3];
    let d_mp = means[1][4] - means[0][4];
    f.claims.push(
        Claim::railpath(
            "delay-bonding-steady",
            "From 50 to 100 ms, bonding barely changes (within 2 Mbit/s)",
            d_bond.abs() <= 2.0,
            format!(
                "bonding {:.2} -> {:.2} Mbit/s ({d_bond:+.2}); with the filter {:.2} -> {:.2} ({d_filter:+.2})",
                means[0][2], means[1][2], means[0][3], means[1][3]
            ),
        )
        .otherwise(
            Cause::Railpath,
            format!(
                "On railpath's fading members (its guess) bonding's sender takes reordering for loss and cuts its \
                 window, and at 100 ms regrowing it takes twice as long; with the duplicate-ACK filter, which removes \
                 most of those cuts, bonding moves by {d_filter:+.2} Mbit/s only, so the paper's steady bonding suggests \
                 members that reordered less than railpath's guessed fading makes them."
            ),
        ),
    );
    f.claims.push(
        Claim::paper(
            "delay-mptcp-drops",
            "From 50 to 100 ms, MPTCP drops by about 13 Mbit/s (at least 6.5)",
            d_mp <= -6.5,
            format!(
                "MPTCP {:.2} -> {:.2} Mbit/s ({d_mp:+.2})",
                means[0][4], means[1][4]
            ),
        )
        .otherwise(
            Cause::Railpath,
            format!(
                "railpath's members now change rate (Minstrel on slowly fading channels) and MPTCP does lose at 100 ms \
                 ({d_mp:+.2} Mbit/s), but far less than 13: how much a sender that reacts late loses depends on how \
                 fast and how deep the links change, which the paper does not give and railpath guesses (TGn's indoor \
                 Doppler of 3-6 Hz, K = 6 dB)."
            ),
        ),
    );
}

/// The weight table: each ratio at each place, and the best.
fn weights(runs: &BondRuns, f: &mut Findings) -> (Table, Block) {
    let mut table = Table::new([
        "place",
        "mean SNR a / g, dB (fixed-rate table, Mbit/s)",
        "1:1",
        "2:1",
        "1:2",
        "4:3",
        "paper: best",
        "railpath: best",
    ]);
    let mut groups = Vec::new();
    let mut vals = Vec::new();
    for (p, (pname, ra, rg)) in PLACES.iter().enumerate() {
        let ns: Vec<Number> = (0..WEIGHTS.len())
            .map(|w| {
                let v: Vec<f64> = runs
                    .iter()
                    .filter_map(|(j, o)| match *j {
                        Job::Weight { place, w: ww, .. } if place == p && ww == w => Some(o.mbps),
                        _ => None,
                    })
                    .collect();
                number(
                    &format!("weights-{pname}-{}-{}-mbps", WEIGHTS[w][0], WEIGHTS[w][1]),
                    None,
                    &v,
                    "Mbit/s",
                )
            })
            .collect();
        let best = (0..WEIGHTS.len())
            .max_by(|x, y| ns[*x].railpath.total_cmp(&ns[*y].railpath))
            .unwrap_or(0);
        let (ia, ig) = (table_rate(*ra), table_rate(*rg));
        let mut row = vec![
            Cell::from(*pname),
            Cell::from(format!("{ra:.0} / {rg:.0} ({ia:.0} / {ig:.0})")),
        ];
        row.extend(ns.iter().enumerate().map(|(w, n)| {
            if w == best {
                Cell::strong(fmt_number(n, 2))
            } else {
                Cell::from(fmt_number(n, 2))
            }
        }));
        row.push(format!("{}:{}", BEST[p][0], BEST[p][1]).into());
        row.push(format!("{}:{}", WEIGHTS[best][0], WEIGHTS[best][1]).into());
        table.rows.push(row);
        f.claims.push(
            Claim::paper(
                format!("weights-best-{pname}"),
                format!(
                    "At place {pname}, weights {}:{} give bonding its best throughput",
                    BEST[p][0], BEST[p][1]
                ),
                WEIGHTS[best] == BEST[p],
                format!(
                    "best {}:{} ({:.2} Mbit/s); {}{}",
                    WEIGHTS[best][0],
                    WEIGHTS[best][1],
                    ns[best].railpath,
                    ns.iter()
                        .enumerate()
                        .map(|(w, n)| format!("{}:{} {:.2}", WEIGHTS[w][0], WEIGHTS[w][1], n.railpath))
                        .collect::<Vec<_>>()
                        .join(", "),
                    if p == 0 {
                        format!(
                            " (depends on railpath's guess of the place's mean SNRs, {ra:.0} / {rg:.0} dB: the paper gives none, and at A the members are nearly equal)"
                        )
                    } else {
                        String::new()
                    }
                ),
            )
            .otherwise(
                Cause::Railpath,
                format!(
                    "The places' signal levels are railpath's guess (the paper gives none), and the best ratio follows \
                     the members' throughputs: with mean SNRs of {ra:.0} dB on 802.11a and {rg:.0} dB on 802.11g (the \
                     fixed-rate table's {ia:.0} and {ig:.0} Mbit/s), {}:{} does best.",
                    WEIGHTS[best][0], WEIGHTS[best][1]
                ),
            ),
        );
        groups.push(format!("{pname} ({ra:.0}/{rg:.0} dB)"));
        vals.push(ns.iter().map(Number::triple).collect::<Vec<_>>());
        if p == 0 {
            f.claims.push(
                Claim::paper(
                    "weights-A-1to1-beats-2to1",
                    "At place A, 1:1 beats 2:1",
                    ns[0].railpath > ns[1].railpath,
                    format!(
                        "1:1 {:.2} vs 2:1 {:.2} Mbit/s",
                        ns[0].railpath, ns[1].railpath
                    ),
                )
                .unexamined(),
            );
        }
        if p == 3 {
            f.claims.push(
                Claim::paper(
                    "weights-D-2to1-beats-1to1",
                    "At place D, 2:1 beats 1:1",
                    ns[1].railpath > ns[0].railpath,
                    format!(
                        "2:1 {:.2} vs 1:1 {:.2} Mbit/s",
                        ns[1].railpath, ns[0].railpath
                    ),
                )
                .unexamined(),
            );
        }
        f.numbers.extend(ns);
    }
    let fig = Block::figure(
        Plot::bars(
            "Weights m:n (802.11a:802.11g) by place, TCP bonding at 50 ms",
            "Mbit/s",
            groups,
            WEIGHTS
                .iter()
                .map(|w| format!("{}:{}", w[0], w[1]))
                .collect(),
            vals,
        ),
        "",
    );
    (table, fig)
}

/// The 300 s failure run: goodput before, during and after 802.11g's unplugging, the stall at
/// each event in 100 ms bins, and how soon each scheme settles and recovers. `a`: 802.11a alone
/// at 50 ms.
fn failure(runs: &BondRuns, a: f64, f: &mut Findings) -> (Table, Vec<Block>) {
    let mut table = Table::new([
        "scheme",
        "20-100 s (Mbit/s)",
        "150-200 s",
        "250-300 s",
        "stalled after the unplug (s, 100 ms bins)",
        "stalled after the return (s)",
        "settles after the unplug (s)",
        "recovers after the return (s)",
    ]);
    let mut series = Vec::new();
    let mut zoom = [Vec::new(), Vec::new()];
    // Per scheme: (settle, recover, 150-200 s level, unplug stall, return stall).
    let mut react = [(0.0, 0.0, 0.0, 0.0, 0.0); 2];
    let mut stalls: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for (k, (mptcp, name)) in [(false, "bonding"), (true, "MPTCP")]
        .into_iter()
        .enumerate()
    {
        let outs: Vec<&Out> = runs
            .iter()
            .filter_map(|(j, o)| match *j {
                Job::Failure { mptcp: m, .. } if m == mptcp => Some(o),
                _ => None,
            })
            .collect();
        let window = |v: &[f64], a: usize, b: usize| mean(&v[a.min(v.len())..b.min(v.len())]);
        let before: Vec<f64> = outs.iter().map(|o| window(&o.per_s, 20, 100)).collect();
        let during: Vec<f64> = outs.iter().map(|o| window(&o.per_s, 150, 200)).collect();
        let after: Vec<f64> = outs.iter().map(|o| window(&o.per_s, 250, 300)).collect();
        // Reaction: seconds until the goodput is back to 80% of what it settles at (on 802.11a
        // alone after the failure, on both after the return).
        let down: Vec<f64> = outs
            .iter()
            .zip(&during)
            .map(|(o, d)| time_to(&o.per_s, 100, 0.8 * d).unwrap_or(100.0))
            .collect();
        let up: Vec<f64> = outs
            .iter()
            .zip(&before)
            .map(|(o, b)| time_to(&o.per_s, 200, 0.9 * b).unwrap_or(100.0))
            .collect();
        // Stall: 100 ms bins in the 10 s after each event below half of what 802.11a alone
        // carries in the run (150-200 s).
        let width = |o: &Out| 300.0 / o.bins.len().max(1) as f64;
        let stall_down: Vec<f64> = outs
            .iter()
            .zip(&during)
            .map(|(o, d)| stalled_s(&o.bins, width(o), 100.0, 10.0, 0.5 * d))
            .collect();
        let stall_up: Vec<f64> = outs
            .iter()
            .zip(&during)
            .map(|(o, d)| stalled_s(&o.bins, width(o), 200.0, 10.0, 0.5 * d))
            .collect();
        let id = if mptcp { "mptcp" } else { "bond" };
        let nd = number(&format!("failure-{id}-settle-s"), None, &down, "s");
        let nu = number(&format!("failure-{id}-recover-s"), None, &up, "s");
        let nsd = number(
            &format!("failure-{id}-stall-unplug-s"),
            None,
            &stall_down,
            "s",
        );
        let nsu = number(
            &format!("failure-{id}-stall-return-s"),
            None,
            &stall_up,
            "s",
        );
        react[k] = (
            nd.railpath,
            nu.railpath,
            mean(&during),
            nsd.railpath,
            nsu.railpath,
        );
        stalls[k] = stall_down;
        table.row([
            name.to_string(),
            format!("{:.2}", mean(&before)),
            format!("{:.2}", mean(&during)),
            format!("{:.2}", mean(&after)),
            fmt_number(&nsd, 2),
            fmt_number(&nsu, 2),
            fmt_number(&nd, 1),
            fmt_number(&nu, 1),
        ]);
        if let Some(o) = outs.first() {
            series.push((
                name.to_string(),
                o.per_s
                    .iter()
                    .enumerate()
                    .map(|(t, x)| ((t + 1) as f64, *x))
                    .collect::<Vec<_>>(),
            ));
            // The 100 ms series from 2 s before to 6 s after each event.
            let per = o.bins.len() as f64 / 300.0;
            for (z, at) in [100.0, 200.0].into_iter().enumerate() {
                let a = ((at - 2.0) * per).round() as usize;
                let b = (((at + 6.0) * per).round() as usize).min(o.bins.len());
                zoom[z].push((
                    name.to_string(),
                    (a..b)
                        .map(|i| ((i + 1) as f64 / per, o.bins[i]))
                        .collect::<Vec<_>>(),
                ));
            }
        }
        f.numbers.extend([nsd, nsu, nd, nu]);
    }
    failure_claims(&react, &stalls, a, f);
    let [z_down, z_up] = zoom;
    let figs = vec![
        Block::figure(
            Plot::lines(
                "Failure run (seed 1): goodput per second, 802.11g unplugged from 100 to 200 s",
                "time (s)",
                "Mbit/s",
                series,
            ),
            "",
        ),
        Block::figure(
            Plot::lines(
                "Failure run (seed 1): the unplug at 100 s in 100 ms bins",
                "time (s)",
                "Mbit/s",
                z_down,
            ),
            "",
        ),
        Block::figure(
            Plot::lines(
                "Failure run (seed 1): the return at 200 s in 100 ms bins",
                "time (s)",
                "Mbit/s",
                z_up,
            ),
            "",
        ),
    ];
    (table, figs)
}

/// Per scheme (bonding, MPTCP): (settle, recover, 150-200 s level, unplug stall, return stall).
type Reaction = (f64, f64, f64, f64, f64);

/// The failure run's claims, from each scheme's reaction and its per-seed unplug stalls.
fn failure_claims(react: &[Reaction; 2], stalls: &[Vec<f64>; 2], a: f64, f: &mut Findings) {
    f.claims.push(
        Claim::paper(
            "failure-both-survive",
            "With 802.11g out (100-200 s), both schemes keep running on 802.11a",
            react[0].2 > 0.5 * a && react[1].2 > 0.5 * a,
            format!(
                "150-200 s: bonding {:.2}, MPTCP {:.2} Mbit/s (802.11a alone {a:.2})",
                react[0].2, react[1].2
            ),
        )
        .unexamined(),
    );
    let shorter = stalls[0]
        .iter()
        .zip(&stalls[1])
        .filter(|(b, m)| b < m)
        .count();
    f.claims.push(
        Claim::paper(
            "failure-bonding-faster-down",
            "Bonding reacts to the failure faster than MPTCP",
            react[0].3 < react[1].3,
            format!(
                "after the unplug bonding stalls {:.2} s, MPTCP {:.2} s (100 ms bins below half of the 802.11a-only level, mean over seeds; bonding shorter on {shorter} of {} seeds); back to 80% of that level in whole seconds: bonding {:.1} s, MPTCP {:.1} s",
                react[0].3,
                react[1].3,
                stalls[0].len(),
                react[0].0,
                react[1].0
            ),
        )
        .otherwise(
            Cause::Railpath,
            "Both react at once to an unplug (the bond releases the member on NETDEV_UNREGISTER, MPTCP closes the \
             subflow and sends its data again on the other); on railpath's fading members bonding's goodput also dips \
             below half of the 802.11a level now and then, before the unplug as after it (its sender cuts its window on \
             reordering), and railpath's measure counts such dips within the 10 s after the event as stall.",
        ),
    );
    f.claims.push(
        Claim::paper(
            "failure-bonding-faster-up",
            "Bonding takes the returning interface back faster than MPTCP",
            react[0].1 < react[1].1,
            format!(
                "back to 90% of its two-interface level {:.1} s after the return, MPTCP {:.1} s (stalled after the return: bonding {:.2} s, MPTCP {:.2} s)",
                react[0].1, react[1].1, react[0].4, react[1].4
            ),
        )
        .unexamined(),
    );
}

/// What the power part gives the report.
struct Power {
    table: Table,
    figs: Vec<Block>,
    /// Largest deviation of the simulated power from the model, %: random split, round robin.
    worst: f64,
    worst_rr: f64,
}

impl Bond {
    /// Simulated awake fractions by (gamma, round robin), per lambda.
    fn awake(&self, runs: &BondRuns, gamma: f64, rr: bool) -> Vec<(f64, [f64; 2])> {
        runs.iter()
            .filter_map(|(j, o)| match *j {
                Job::Power {
                    lambda,
                    gamma: g,
                    rr: r,
                    ..
                } if g == gamma && r == rr => Some((lambda, o.awake)),
                _ => None,
            })
            .collect()
    }

    /// Power (Figs. 11-12): the analytic model against lambda beside its simulated counterpart;
    /// the claims on how they compare and on MPTCP against bonding, and the gammas.
    fn power(&self, runs: &BondRuns, means: &[[f64; 5]; 2], f: &mut Findings) -> Power {
        let mu = self.mu;
        // (label, gamma) per scheme and delay: the paper's and railpath's own (sum of the two
        // interfaces alone over the scheme's throughput).
        // The model needs gamma >= 1: a scheme at (or, by noise, above) the sum gets 1.
        let own = |di: usize, k: usize| ((means[di][0] + means[di][1]) / means[di][k]).max(1.0);
        let own_of = [own(0, 4), own(0, 2), own(1, 4), own(1, 2)];
        let mut worst: f64 = 0.0;
        let mut worst_rr: f64 = 0.0;
        for profile in 0..2 {
            for &gamma in &self.gammas {
                for (l, aw) in self.awake(runs, gamma, false) {
                    if let Some(an) = analytic(l, gamma, mu, profile) {
                        worst = worst.max((simulated(aw, profile) / an - 1.0).abs() * 100.0);
                    }
                }
            }
            for (l, aw) in self.awake(runs, 1.39, true) {
                if let Some(an) = analytic(l, 1.39, mu, profile) {
                    worst_rr = worst_rr.max((simulated(aw, profile) / an - 1.0).abs() * 100.0);
                }
            }
        }
        let table = self.power_table(runs);
        let figs = self.power_figs(runs, own_of[1]);
        // MPTCP over bonding, profile 2, paper gammas: the largest relative difference over
        // lambda.
        let rel = |gm: f64, gb: f64| -> (f64, f64) {
            LAMBDAS
                .iter()
                .filter_map(|&l| Some((l, analytic(l, gm, mu, 1)? / analytic(l, gb, mu, 1)? - 1.0)))
                .fold(
                    (0.0, 0.0),
                    |acc, (l, d)| if d.abs() > acc.1.abs() { (l, d) } else { acc },
                )
        };
        let (l50, d50) = rel(1.12, 1.39);
        let (l100, d100) = rel(1.84, 1.39);
        f.claims.push(
            Claim::railpath(
                "power-simulated-matches-analytic",
                "The simulated power agrees with the analytic model (within 10%) for Poisson traffic",
                worst <= 10.0,
                format!(
                    "largest deviation {worst:.1}% over both profiles, the paper's three gammas and every lambda (random split, as the model assumes; with the bond's round robin: {worst_rr:.1}%)"
                ),
            )
            .unexamined(),
        );
        f.claims.push(
            Claim::railpath(
                "power-50ms-equal",
                "Profile 2 at 50 ms: MPTCP and bonding draw about the same (within 2%)",
                d50.abs() <= 0.02,
                format!(
                    "MPTCP / bonding - 1 at most {:+.3}% (at lambda {l50:.0}/s; paper gammas 1.12 and 1.39)",
                    d50 * 100.0
                ),
            )
            .unexamined(),
        );
        f.claims.push(
            Claim::railpath(
                "power-100ms-mptcp-more",
                "Profile 2 at 100 ms: MPTCP draws more than bonding (by more than 1% somewhere)",
                d100 > 0.01,
                format!(
                    "MPTCP / bonding - 1 at most {:+.3}% (at lambda {l100:.0}/s; paper gammas 1.84 and 1.39)",
                    d100 * 100.0
                ),
            )
            .otherwise(
            Cause::Railpath,
            "At the service rates of railpath's 802.11 members (about 2500 and 1900 packets/s; the paper gives none) gamma \
             hardly moves the power, since an interface sleeps only when lambda tau is small and its queue is then nearly \
             always empty whatever gamma is; the paper's difference needs service rates near the arrival rates of its \
             sleep regime.",
        ),
        );
        for ((name, gp), go) in PAPER_GAMMAS.iter().zip(own_of) {
            f.numbers.push(Number {
                id: format!("gamma-{}", name.replace(", ", "-").replace(' ', "")),
                paper: Some(*gp),
                railpath: go,
                ci95: [go, go],
                unit: "".into(),
            });
        }
        Power {
            table,
            figs,
            worst,
            worst_rr,
        }
    }

    /// Per lambda, analytic and simulated power for each paper gamma (profile 2), and with the
    /// bond's round robin.
    fn power_table(&self, runs: &BondRuns) -> Table {
        let mu = self.mu;
        let mut head = vec!["lambda (packets/s)".to_string()];
        for g in &self.gammas {
            head.push(format!("analytic, gamma {g:.2}"));
            head.push("simulated".into());
        }
        head.push("simulated, round robin".into());
        let mut table = Table::new(head);
        let at = |gamma: f64, rr: bool, l: f64| {
            self.awake(runs, gamma, rr)
                .into_iter()
                .find(|(x, _)| *x == l)
                .map(|(_, aw)| simulated(aw, 1))
        };
        for &l in &LAMBDAS {
            let mut row = vec![format!("{l:.0}")];
            for &gamma in &self.gammas {
                match (analytic(l, gamma, mu, 1), at(gamma, false, l)) {
                    (Some(a), Some(s)) => {
                        row.push(format!("{a:.1}"));
                        row.push(format!("{s:.1} ({:+.1}%)", (s / a - 1.0) * 100.0));
                    }
                    _ => row.extend(["-".to_string(), "-".to_string()]),
                }
            }
            row.push(match (analytic(l, 1.39, mu, 1), at(1.39, true, l)) {
                (Some(a), Some(s)) => format!("{s:.1} ({:+.1}%)", (s / a - 1.0) * 100.0),
                _ => "-".into(),
            });
            table.row(row);
        }
        table
    }

    /// Figs. 11-12 per profile: the model for MPTCP and bonding with the paper's gammas and
    /// bonding's own (`own_bond`), the simulated counterparts and the separate models.
    fn power_figs(&self, runs: &BondRuns, own_bond: f64) -> Vec<Block> {
        let mu = self.mu;
        let mut figs = Vec::new();
        for (profile, prof) in PROFILES.iter().enumerate() {
            let curve = |gamma: f64| -> Vec<(f64, f64)> {
                LAMBDAS
                    .iter()
                    .filter_map(|&l| analytic(l, gamma, mu, profile).map(|p| (l.log10(), p)))
                    .collect()
            };
            let sim = |gamma: f64, rr: bool| -> Vec<(f64, f64)> {
                self.awake(runs, gamma, rr)
                    .into_iter()
                    .map(|(l, aw)| (l.log10(), simulated(aw, profile)))
                    .collect()
            };
            let series = vec![
                ("MPTCP 50 ms, g 1.12".to_string(), curve(1.12)),
                ("bonding, g 1.39".to_string(), curve(1.39)),
                ("MPTCP 100 ms, g 1.84".to_string(), curve(1.84)),
                (format!("bond 50 ms, own g {own_bond:.2}"), curve(own_bond)),
                ("simulated, g 1.39".to_string(), sim(1.39, false)),
                ("simulated, round robin".to_string(), sim(1.39, true)),
                (
                    "separate models".to_string(),
                    LAMBDAS
                        .iter()
                        .filter_map(|&l| separate(l, 1.39, mu, profile).map(|p| (l.log10(), p)))
                        .collect(),
                ),
            ];
            figs.push(Block::figure(
                Plot::lines(
                    &format!(
                        "Figs. 11-12, profile {} ({}): average power against log10 lambda",
                        profile + 1,
                        prof.name
                    ),
                    "log10 lambda (packets/s)",
                    "mW",
                    series,
                ),
                "",
            ));
        }
        figs
    }
}

/// The constant-SNR runs at 50 ms: means per scheme and the filter's gain, %.
struct Still {
    means: [f64; 5],
    gain: f64,
}

fn discussion(
    means: &[[f64; 5]; 2],
    gains: &[f64; 3],
    still: &Still,
    a: f64,
    worst: f64,
    worst_rr: f64,
) -> String {
    let [sa, sg, sb, _, _] = still.means;
    let [fa, fg, fb, _, _] = means[0];
    format!(
        r#"<ul>
<li><b>Why bonding (TCP) stays below MPTCP, and what the filter repairs.</b> With the SNRs held constant, round robin
gives each member half the packets, so a TCP flow over the bond is held to about twice the slower member (2 x {sg:.2}
= {:.2} Mbit/s against bonding's {sb:.2}, {:.0}% of the members' sum); a sender that adapts its duplicate-ACK threshold
to the reordering it sees (Linux 3.5, the scenario's) takes the regular reordering in its stride, and the filter has
little to repair ({:+.1}%). On the fading channels of the scenario the members' rates change (Minstrel follows the
SNR from one 100 ms update to the next, and its retry chain falls to slower rates frame by frame), their delays jump
against each other, and the sender takes the irregular reordering for loss: bonding falls to {fb:.2} Mbit/s, {:.0}% of the members' sum (the paper's gamma of 1.39 says 72%),
and the AP's duplicate-ACK filter gains {:+.1}% (the paper: +15%). How much is railpath's guess of the fading (K =
6 dB, TGn's Doppler), which the paper does not give. Senders that take more of the reordering for loss fare far worse
on the fading members, and the filter's percentages are of little (the table's bonding column): RFC 6675 as written
(DupThresh 3) {:+.1}%; today's RACK {:+.1}%, widely spread over seeds, where railpath's RACK keeps its reordering
window at min_rtt / 4 (RFC 8985's DSACK-driven growth of it, Linux's <code>tcp_rack_update_reo_wnd()</code>, is not
modelled), so every delay jump beyond about 13 ms between the members is taken for a loss. The filter sits at the AP,
where the client's ACKs arrive after crossing the air: it saves them no airtime.</li>
<li><b>Delay.</b> From 50 to 100 ms MPTCP loses {:+.2} Mbit/s and bonding {:+.2}: on the fading members a sender's
window cuts take twice as long to regrow at 100 ms (bonding with the filter, which avoids most of them, moves by
{:+.2}). The paper's MPTCP lost 13 Mbit/s and its bonding nothing; railpath's numbers depend on its guess of how fast
and how deep the links change, and the constant-SNR runs were made at 50 ms only.</li>
<li><b>Failure.</b> The adapter is unplugged: the bonding driver releases it at once and the bond stripes over
802.11a alone from that instant, losing only what 802.11g held; the TCP flow over the bond repairs that burst of losses
by fast recovery. MPTCP's path manager closes the 802.11g subflow and sends its unacknowledged data again on 802.11a, but
the data receiver waits for the lost data in order, so MPTCP stalls until those copies arrive: the table's 100 ms bins
show how long each stalls. On the return the bond uses 802.11g at once, while MPTCP opens a new subflow (one MP_JOIN
exchange) that starts in slow start and, overshooting into 802.11g's 1000-packet queue, can hold the data level back
again for a while.</li>
<li><b>Weights.</b> The best ratio roughly follows the members' throughput ratio: 4:3 or 1:1 (within each other's
confidence intervals) where 802.11g is close to 802.11a, 2:1 as it falls behind; 1:2 never wins, as it feeds more to
the slower member. Where the ranking differs from the
paper's, the places' signal levels are railpath's choice (the paper gives none), and neighbouring ratios are often
within each other's confidence intervals.</li>
<li><b>Power.</b> The simulated counterpart differs from the analytic model by at most {worst:.1}%: the model treats each
member as an M/M/1 queue (exponential service) that sleeps tau after emptying, which is exact for the sleep part
with Poisson arrivals and a random split; the simulated members serve at a constant rate. With the bond's round robin instead
of a random split each member sees more regular arrivals (every other packet) and sleeps less than the model says:
up to {worst_rr:.1}% more power. With service rates of
802.11 interfaces (about 2500 and 1900 packets/s) gamma hardly moves the power: an interface sleeps only when lambda
tau is small, and then its queue is nearly always empty whatever gamma is; by the load at which gamma fills the
queues (lambda near mu / gamma) both interfaces are awake all the time. So MPTCP and bonding draw the same here, at 50
and at 100 ms; the paper's Fig. 11 difference needs service rates near the arrival rates of its sleep regime, which
it does not give. The paper's gamma and railpath's own differ because railpath's throughputs differ (802.11a alone
{a:.2} Mbit/s).</li>
</ul>"#,
        2.0 * sg,
        sb / (sa + sg) * 100.0,
        still.gain,
        fb / (fa + fg) * 100.0,
        gains[0],
        gains[1],
        gains[2],
        means[1][4] - means[0][4],
        means[1][2] - means[0][2],
        means[1][3] - means[0][3],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_to_counts_seconds_from_the_event() {
        let v = [10.0, 10.0, 0.0, 2.0, 9.0, 10.0];
        assert_eq!(time_to(&v, 2, 8.0), Some(3.0));
        assert_eq!(time_to(&v, 2, 20.0), None);
    }

    #[test]
    fn simulated_power_weighs_awake_time() {
        // Profile 1: 126 / 10.8 mW on both; half awake each: 2 x 68.4.
        assert!((simulated([0.5, 0.5], 0) - 136.8).abs() < 1e-9);
        assert!((simulated([0.0, 0.0], 1) - 1750.0).abs() < 1e-9);
    }

    #[test]
    fn every_job_kind_builds_a_valid_scenario() {
        for job in [
            Job::Thr {
                scheme: 4,
                udp: false,
                delay_ms: 100.0,
                loss: 2,
                still: true,
                seed: 1,
            },
            Job::Thr {
                scheme: 2,
                udp: true,
                delay_ms: 50.0,
                loss: 0,
                still: false,
                seed: 1,
            },
            Job::Weight {
                place: 3,
                w: 3,
                seed: 2,
            },
            Job::Failure {
                mptcp: true,
                seed: 1,
            },
            Job::Power {
                lambda: 5.0,
                gamma: 1.39,
                mu: [2541.0, 1883.0],
                rr: true,
            },
        ] {
            scenario(&job).unwrap();
        }
    }
}
