//! `railpath bench [--case SUBSTR] [--repeat N]`: time the simulator on embedded scenarios.
//! Prints one JSON object per case and line: `{"case", "wall_s", "events", "events_per_s",
//! "sim_s", "packets", "ns_per_packet"}` (docs/output-contract.md). Each scenario is parsed and
//! validated once; `wall_s` is the best of N runs of `railpath_sim::run` alone, the least
//! disturbed by other load; `packets` are what the links carried in the data direction.

use crate::{print_stdout, CliError};
use std::time::Instant;

#[derive(clap::Args)]
pub struct Args {
    /// Only the cases whose name contains this text.
    #[arg(long)]
    pub case: Option<String>,
    /// Runs per case; the best (shortest) wall time is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
}

/// One bulk flow over a 10 Mbit/s, 10 ms, 100-packet link for 60 s, with congestion control `cc`.
fn single_bulk(cc: &str) -> String {
    format!(
        r#"
[run]
duration_s = 60
seed = 1

[[link]]
id = "a"
rate_mbps = 10
delay_ms = 10
buffer_packets = 100

[[flow]]
id = "dl"
kind = "tcp"
cc = "{cc}"
paths = ["a"]
"#
    )
}

/// One bulk MPTCP flow (LIA, minRTT scheduler) over two 10 Mbit/s, 10 ms, 100-packet links for
/// 60 s.
fn mptcp_two_links() -> String {
    let link = |id: &str| {
        format!("[[link]]\nid = \"{id}\"\nrate_mbps = 10\ndelay_ms = 10\nbuffer_packets = 100\n\n")
    };
    format!(
        "[run]\nduration_s = 60\nseed = 1\n\n{}{}[[flow]]\nid = \"dl\"\nkind = \"mptcp\"\n\
         cc = \"lia\"\nscheduler = \"minrtt\"\npaths = [\"a\", \"b\"]\n",
        link("a"),
        link("b")
    )
}

/// The upstream Linux send path (linux-default, uncoupled CUBIC: subflow write queues,
/// autotuned buffers, the MPTCP-level retransmit timer) over the same two links for 60 s, link b
/// out for 6 s at 20 s.
fn mptcp_linux_outage() -> String {
    mptcp_two_links()
        .replace("cc = \"lia\"", "cc = \"uncoupled-cubic\"")
        .replace("scheduler = \"minrtt\"", "scheduler = \"linux-default\"")
        .replace(
            "[[link]]\nid = \"b\"\n",
            "[[link]]\nid = \"b\"\noutages = [{ start_s = 20.0, duration_ms = 6000 }]\n",
        )
}

/// The BLOAT paper's setting (scenarios/bloat/paper.toml): MPTCP LIA, Round Robin, with the
/// transmission-status monitor, while on/off UDP cross traffic bloats one path's
/// 10000-packet buffer twice.
fn bloat_monitor() -> String {
    include_str!("../../../scenarios/bloat/paper.toml").replace(
        "receive_buffer_packets = 3000\n",
        "receive_buffer_packets = 3000\nmechanisms = [\"bloat-monitor\"]\n",
    )
}

/// The BOND paper's setting (scenarios/bond/paper.toml): TCP CUBIC over two bonded 802.11
/// members (per-packet MAC backoff), round robin, with the AP's duplicate-ACK filter. The
/// members at fixed rates, 802.11a at 54 and 802.11g at 36 Mbit/s, without the scenario's SNR,
/// fading and Minstrel: the case measures the MAC and the bond as it always has.
fn bond_filter() -> String {
    include_str!("../../../scenarios/bond/paper.toml")
        .replace("miimon_ms = 100\n", "miimon_ms = 100\nack_filter = true\n")
        .replace(
            "wifi = { standard = \"a\", phy_mbps = 54, snr_db = 28, rate_control = \"minstrel\", doppler_hz = 6, rician_k_db = 6, max_rate_tries = 3 }",
            "wifi = { standard = \"a\", phy_mbps = 54 }",
        )
        .replace(
            "wifi = { standard = \"g\", phy_mbps = 54, snr_db = 20, rate_control = \"minstrel\", doppler_hz = 3, rician_k_db = 6, max_rate_tries = 3 }",
            "wifi = { standard = \"g\", phy_mbps = 36 }",
        )
}

/// The PROXY-LB paper's Table 4 (scenarios/proxy-lb/), its five cars for 60 s of the 960: each
/// car's TCP relayed by the router's proxy onto MPTCP over two shaped carriers with handovers
/// (`mptcp`), or given one carrier by the load balancer (`lb`).
fn proxy_lb(which: &str) -> String {
    let text = match which {
        "lb" => include_str!("../../../scenarios/proxy-lb/lb.toml"),
        _ => include_str!("../../../scenarios/proxy-lb/mptcp.toml"),
    };
    text.replace("duration_s = 960\n", "duration_s = 60\n")
}

/// The scaling cases' duration, s.
const SCALE_S: u32 = 20;

/// `n` bulk CUBIC flows, all from 0 s, sharing one link of `n` x 10 Mbit/s, 10 ms, `n` x 100
/// packets, for [`SCALE_S`] s: the work per flow stays the same as `n` grows, so the cost per
/// delivered packet shows what the simulator's own cost does with the number of flows.
fn scale_tcp(n: usize) -> String {
    let mut t = format!(
        "[run]\nduration_s = {SCALE_S}\nseed = 1\n\n[[link]]\nid = \"a\"\nrate_mbps = {}\n\
         delay_ms = 10\nbuffer_packets = {}\n",
        10 * n,
        100 * n
    );
    for i in 0..n {
        t += &format!(
            "\n[[flow]]\nid = \"f{i}\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n"
        );
    }
    t
}

/// `n` bulk MPTCP connections (LIA, minRTT), all from 0 s, each with a subflow over both of two
/// shared carriers of `n` x 10 Mbit/s, 10 ms, `n` x 100 packets, for [`SCALE_S`] s.
fn scale_mptcp(n: usize) -> String {
    let mut t = format!("[run]\nduration_s = {SCALE_S}\nseed = 1\n");
    for id in ["a", "b"] {
        t += &format!(
            "\n[[link]]\nid = \"{id}\"\nrate_mbps = {}\ndelay_ms = 10\nbuffer_packets = {}\n",
            10 * n,
            100 * n
        );
    }
    for i in 0..n {
        t += &format!(
            "\n[[flow]]\nid = \"m{i}\"\nkind = \"mptcp\"\ncc = \"lia\"\n\
             scheduler = \"minrtt\"\npaths = [\"a\", \"b\"]\n"
        );
    }
    t
}

/// The flow counts of the scaling cases: TCP, MPTCP.
pub const SCALE_TCP: [usize; 4] = [1, 10, 100, 1000];
pub const SCALE_MPTCP: [usize; 3] = [1, 10, 100];

/// A benchmark case's scenario TOML, made only for the cases that run (the largest scaling
/// case's text is 100 kB).
pub type Text = Box<dyn Fn() -> String>;

/// The benchmark cases: (name, scenario TOML).
pub fn cases() -> Vec<(String, Text)> {
    let fixed: Vec<(&str, Text)> = vec![
        (
            "tcp-newreno-10mbps-10ms-100pkt-60s",
            Box::new(|| single_bulk("newreno")),
        ),
        (
            "tcp-cubic-10mbps-10ms-100pkt-60s",
            Box::new(|| single_bulk("cubic")),
        ),
        (
            "tcp-bbr-10mbps-10ms-100pkt-60s",
            Box::new(|| single_bulk("bbr")),
        ),
        (
            "mptcp-lia-minrtt-2x10mbps-10ms-100pkt-60s",
            Box::new(mptcp_two_links),
        ),
        (
            "mptcp-uncoupled-cubic-linux-default-2x10mbps-10ms-100pkt-outage-60s",
            Box::new(mptcp_linux_outage),
        ),
        (
            "mptcp-lia-roundrobin-bloat-monitor-udp-cross-traffic-60s",
            Box::new(bloat_monitor),
        ),
        (
            "tcp-cubic-bond-wifi-a54-g36-ack-filter-60s",
            Box::new(bond_filter),
        ),
        (
            "proxy-lb-5-cars-mptcp-proxy-minrtt-60s",
            Box::new(|| proxy_lb("mptcp")),
        ),
        (
            "proxy-lb-5-cars-load-balancer-60s",
            Box::new(|| proxy_lb("lb")),
        ),
        // More cases: add a (name, TOML) pair here.
    ];
    let mut v: Vec<(String, Text)> = fixed.into_iter().map(|(n, t)| (n.to_string(), t)).collect();
    // The scaling cases: the same work per flow, more flows.
    for n in SCALE_TCP {
        let name = format!("scale-tcp-{n}-cubic-shared-link-{SCALE_S}s");
        v.push((name, Box::new(move || scale_tcp(n))));
    }
    for n in SCALE_MPTCP {
        let name = format!("scale-mptcp-{n}-lia-minrtt-2-shared-links-{SCALE_S}s");
        v.push((name, Box::new(move || scale_mptcp(n))));
    }
    v
}

pub fn main(args: Args) -> Result<(), CliError> {
    let selected: Vec<_> = cases()
        .into_iter()
        .filter(|(name, _)| args.case.as_deref().is_none_or(|c| name.contains(c)))
        .collect();
    if selected.is_empty() {
        let names: Vec<String> = cases().into_iter().map(|(n, _)| n).collect();
        return Err(CliError::Input(format!(
            "--case {:?} matches no benchmark case; cases: {}",
            args.case.unwrap_or_default(),
            names.join(", ")
        )));
    }
    for (name, text) in selected {
        let file = format!("bench case {name}");
        let scenario = railpath_scenario::parse_str(&text(), &file)?;
        let scenario = scenario.validate()?;
        let mut best = f64::INFINITY;
        let mut summary = None;
        for _ in 0..args.repeat {
            let t0 = Instant::now();
            let r = railpath_sim::run(&scenario)?;
            best = best.min(t0.elapsed().as_secs_f64());
            summary = Some(r.summary);
        }
        let Some(s) = summary else { continue };
        // Packets the links carried to their far end in the data direction.
        let packets = s.links.iter().map(|l| l.forwarded_packets).sum();
        print_stdout(&format!(
            "{}\n",
            line(&name, best, s.events, s.sim_duration_s, packets)
        ))?;
    }
    Ok(())
}

/// One case's result, serialised in the field order of results.md.
#[derive(serde::Serialize)]
struct Line<'a> {
    case: &'a str,
    wall_s: f64,
    events: u64,
    events_per_s: f64,
    sim_s: f64,
    packets: u64,
    ns_per_packet: f64,
}

/// The JSON line of one case.
fn line(case: &str, wall_s: f64, events: u64, sim_s: f64, packets: u64) -> String {
    let events_per_s = if wall_s > 0.0 {
        events as f64 / wall_s
    } else {
        0.0
    };
    let ns_per_packet = if packets > 0 {
        wall_s * 1e9 / packets as f64
    } else {
        0.0
    };
    let l = Line {
        case,
        wall_s,
        events,
        events_per_s,
        sim_s,
        packets,
        ns_per_packet,
    };
    serde_json::to_string(&l)
        .unwrap_or_else(|e| format!("{{\"case\":{case:?},\"error\":{:?}}}", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_case_is_a_valid_scenario() {
        for (name, text) in cases() {
            let name = name.as_str();
            let s = railpath_scenario::parse_str(&text(), name).unwrap_or_else(|e| panic!("{e}"));
            s.validate().unwrap_or_else(|e| panic!("{e}"));
            // The scaling cases: the flows the name says, on links of 10 Mbit/s and 100
            // packets per flow, every flow over every link.
            if let Some(rest) = name.strip_prefix("scale-") {
                let mut words = rest.split('-');
                let kind = words.next().unwrap();
                let n: usize = words.next().unwrap().parse().unwrap();
                assert_eq!(s.run.duration_s, f64::from(SCALE_S), "{name}");
                assert_eq!(s.flows.len(), n, "{name}");
                assert_eq!(s.links.len(), if kind == "mptcp" { 2 } else { 1 }, "{name}");
                for l in &s.links {
                    let (rate, buffer) = (10.0 * n as f64, 100 * n as u64);
                    assert_eq!(
                        (l.rate_mbps, l.delay_ms, l.buffer_packets.map(u64::from)),
                        (Some(rate), 10.0, Some(buffer)),
                        "{name}"
                    );
                }
                for f in &s.flows {
                    assert_eq!(f.kind.as_str(), kind, "{name}");
                    assert!(name.contains(&f.cc), "{name} runs {}", f.cc);
                    assert_eq!(f.paths.len(), s.links.len(), "{name}");
                }
                continue;
            }
            assert_eq!(s.run.duration_s, 60.0, "{name}");
            // The PROXY-LB cases: the cars the name says, each behind the proxy (mptcp flows)
            // or the balancer (tcp flows through it), each with its in-car link.
            if let Some(rest) = name.strip_prefix("proxy-lb-") {
                let cars: usize = rest.split('-').next().unwrap().parse().unwrap();
                assert_eq!(s.flows.len(), cars, "{name}");
                let (kind, balanced) = if name.contains("load-balancer") {
                    (railpath_scenario::FlowKind::Tcp, true)
                } else {
                    (railpath_scenario::FlowKind::Mptcp, false)
                };
                for f in &s.flows {
                    assert!(f.access.is_some(), "{name}");
                    assert_eq!(f.kind, kind, "{name}");
                    assert_eq!(s.balancer_index(&f.paths[0]).is_some(), balanced, "{name}");
                }
                if !balanced {
                    assert!(
                        name.contains(s.flows[0].scheduler.as_deref().unwrap()),
                        "{name}"
                    );
                }
                continue;
            }
            // One measured flow; any other is cross traffic, which the name says.
            let cross = s.flows[1..]
                .iter()
                .all(|f| f.kind == railpath_scenario::FlowKind::Udp);
            assert!(cross, "{name}");
            assert_eq!(
                s.flows.len() > 1,
                name.contains("udp-cross-traffic"),
                "{name}"
            );
            assert!(
                name.starts_with(s.flows[0].kind.as_str()),
                "{name} runs {}",
                s.flows[0].kind.as_str()
            );
            assert!(
                name.contains(&s.flows[0].cc),
                "{name} runs {}",
                s.flows[0].cc
            );
            // The BOND case: what its name says, 802.11a at 54 and 802.11g at 36 Mbit/s bonded
            // with the ACK filter (the paper's 51 ms and txqueuelen 1000).
            if name.contains("bond") {
                let phy: Vec<(&str, f64)> = s
                    .links
                    .iter()
                    .filter_map(|l| l.wifi.map(|w| (w.standard.as_str(), w.phy_mbps)))
                    .collect();
                assert_eq!(phy, [("a", 54.0), ("g", 36.0)], "{name}");
                assert!(
                    s.links
                        .iter()
                        .filter_map(|l| l.wifi)
                        .all(|w| w.snr_db.is_none() && w.rate_control.is_fixed()),
                    "{name}"
                );
                assert_eq!(s.bonds.len(), 1, "{name}");
                assert_eq!(s.bonds[0].ack_filter, name.contains("ack-filter"), "{name}");
                assert_eq!(s.flows[0].paths, [s.bonds[0].id.clone()], "{name}");
                continue;
            }
            // A case that says its links' rate, delay and buffer has them: 10 Mbit/s, 10 ms, 100
            // packets (the BLOAT case: the paper's, one path's buffer 10000 packets).
            for l in &s.links {
                let buffer = if name.contains("bloat") && l.id == "p2" {
                    10000
                } else {
                    100
                };
                assert_eq!(
                    (l.rate_mbps, l.delay_ms, l.buffer_packets),
                    (Some(10.0), 10.0, Some(buffer)),
                    "{name}"
                );
            }
            assert_eq!(s.links.len(), s.flows[0].paths.len(), "{name}");
        }
    }

    #[test]
    fn case_names_are_unique() {
        let c = cases();
        for (i, (a, _)) in c.iter().enumerate() {
            assert!(c[..i].iter().all(|(b, _)| b != a), "duplicate case {a}");
        }
    }

    #[test]
    fn line_computes_rate() {
        let v: serde_json::Value = serde_json::from_str(&line("x", 0.5, 1000, 60.0, 250)).unwrap();
        assert_eq!(v["case"], "x");
        assert_eq!(v["events"], 1000);
        assert_eq!(v["events_per_s"], 2000.0);
        assert_eq!(v["sim_s"], 60.0);
        assert_eq!(v["wall_s"], 0.5);
        assert_eq!(v["packets"], 250);
        assert_eq!(v["ns_per_packet"], 2e6);
    }

    #[test]
    fn line_keeps_the_documented_field_order() {
        assert_eq!(
            line("x", 0.5, 1000, 60.0, 250),
            r#"{"case":"x","wall_s":0.5,"events":1000,"events_per_s":2000.0,"sim_s":60.0,"packets":250,"ns_per_packet":2000000.0}"#
        );
    }
}
