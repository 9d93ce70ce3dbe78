//! railpath scenario files: the one TOML format read by the simulator, the link emulator and the
//! gateway's replay mode. The stable keys: docs/user-guide.md and docs/output-contract.md.
//!
//! Loading is two steps: [`parse_str`] deserialises (unknown keys are errors, serde names them)
//! and [`Scenario::validate`] checks ranges and cross references. Every error names the file, the
//! key path (e.g. `link[1].loss` or `flow "dl".paths`) and what was expected.

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

mod capture;
mod cars;
mod error;
mod locate;
mod overrides;
pub mod resolved;
mod size;
mod validate;

pub use capture::{Capture, CaptureFormat};
pub use cars::*;
pub use error::ScenarioError;
pub use overrides::apply_override;
pub use resolved::{
    BalancerSpec, BondSpec, CoupledCc, FlowSpec, HandoffPlan, HandoffSpec, HandoverAware, LinkSpec,
    MptcpCc, MptcpMechanism, MptcpSpec, PrioChangeSpec, ProxySpec, Radio, Resolved, SchedulerKind,
    SubflowSpec, TableSource, TcpCc, TcpMechanism, TcpRoute, TcpSpec, Transport, UdpSpec,
};
pub use size::Budget;
pub use validate::TCP_CCS;

/// A whole scenario: `[run]`, optional `[tcp]` defaults, links and flows.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    pub run: Run,
    #[serde(default)]
    pub tcp: TcpOptions,
    #[serde(default, rename = "link")]
    pub links: Vec<Link>,
    #[serde(default, rename = "flow")]
    pub flows: Vec<Flow>,
    /// Link bonding (`[[bond]]`): one virtual link over member links; a flow's path may name a
    /// bond as it names a link.
    #[serde(default, rename = "bond")]
    pub bonds: Vec<Bond>,
    /// Load balancers (`[[balancer]]`): a tcp flow whose path names one is a car's connection,
    /// given one of the balancer's links.
    #[serde(default, rename = "balancer")]
    pub balancers: Vec<Balancer>,
    /// The train of the radio model (`[train]`); required when any `[[carrier]]` is given.
    #[serde(default)]
    pub train: Option<railpath_radio::TrainConfig>,
    /// Carriers of the radio model (`[[carrier]]`); a link with `carrier = "<id>"` follows one
    /// (see `railpath_radio::carrier_timelines`).
    #[serde(default, rename = "carrier")]
    pub carriers: Vec<railpath_radio::CarrierConfig>,
    /// Packet captures of the run (`[capture]`); none without the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture: Option<Capture>,
    /// Where the scenario came from (file path or preset name); set by the loader.
    #[serde(skip)]
    pub source: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Run {
    /// Simulated seconds.
    pub duration_s: f64,
    /// Every random draw derives from it.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Time-series bin width.
    #[serde(default = "default_bin_ms")]
    pub bin_ms: f64,
}

fn default_seed() -> u64 {
    1
}
fn default_bin_ms() -> f64 {
    100.0
}

/// What a link does with queued packets during an outage.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum OutageMode {
    /// Queued packets wait and are sent after the outage; arrivals queue up to the buffer limit
    /// (an X2 handover that forwards buffered data to the new cell).
    #[default]
    Hold,
    /// The queue is flushed when the outage starts and arrivals are dropped until it ends.
    Drop,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Outage {
    pub start_s: f64,
    pub duration_ms: f64,
    /// Repeat every this many seconds until the end of the run (see [`Link::outage_list`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every_s: Option<f64>,
}

/// A piecewise-constant change of a link's data-direction parameters from `t_s` on.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ScheduleStep {
    pub t_s: f64,
    pub rate_mbps: Option<f64>,
    pub delay_ms: Option<f64>,
    pub loss: Option<f64>,
}

/// One carrier path between sender and receiver, both directions.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub id: String,
    /// Bottleneck rate in the data direction; required unless `trace` is given.
    pub rate_mbps: Option<f64>,
    /// One-way propagation delay, data direction.
    #[serde(default)]
    pub delay_ms: f64,
    /// Random loss probability per data packet.
    #[serde(default)]
    pub loss: f64,
    /// Drop-tail buffer at the bottleneck, in packets (default 100 when neither is given).
    pub buffer_packets: Option<u32>,
    /// Drop-tail buffer at the bottleneck, in bytes.
    pub buffer_bytes: Option<u64>,
    #[serde(default)]
    pub outages: Vec<Outage>,
    #[serde(default)]
    pub outage_mode: OutageMode,
    /// Its outages are its interface removed and added back (a USB adapter unplugged and
    /// plugged in again), not a carrier lost: a bond releases the member at once and enslaves
    /// it again when it returns (no link-monitor wait), and an MPTCP flow loses its subflow
    /// there (its data is sent again on the others) and opens a new one when it returns. Only
    /// with `outage_mode = "drop"`; simulator only.
    #[serde(default)]
    pub unplug: bool,
    #[serde(default)]
    pub schedule: Vec<ScheduleStep>,
    /// A one-way delay that varies over a range (see [`DelayRange`]); replaces `delay_ms`.
    pub delay_range: Option<DelayRange>,
    /// Mahimahi delivery-opportunity trace, path relative to the scenario file.
    pub trace: Option<String>,
    /// Id of the `[[carrier]]` that drives this link's rate, outages and extra delay/loss along
    /// the track (then `rate_mbps` and `trace` are not given).
    pub carrier: Option<String>,
    /// An 802.11a/g interface pair: the server's time per packet is the Wi-Fi MAC's (DCF
    /// backoff, OFDM frame, SIFS, link-layer ACK, retries) at a fixed PHY rate, instead of
    /// `rate_mbps` (see [`Wifi`]).
    pub wifi: Option<Wifi>,
    /// Reverse (ACK) direction rate; default: the data-direction rate (or 100 Mbit/s with a trace).
    pub reverse_rate_mbps: Option<f64>,
    /// Reverse (ACK) direction one-way delay; default: `delay_ms`.
    pub reverse_delay_ms: Option<f64>,
    /// Random loss probability per reverse-direction packet.
    #[serde(default)]
    pub reverse_loss: f64,
    /// Reverse direction buffer in packets; default: the data-direction buffer.
    pub reverse_buffer_packets: Option<u32>,
    /// Mahimahi trace for the reverse direction.
    pub reverse_trace: Option<String>,
    /// Loaded trace (delivery opportunities in ms); filled by [`load`], not read from TOML.
    #[serde(skip)]
    pub trace_ms: Option<Vec<u64>>,
    #[serde(skip)]
    pub reverse_trace_ms: Option<Vec<u64>>,
}

/// The 802.11 OFDM PHY a Wi-Fi link uses.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
pub enum WifiStandard {
    /// 802.11a, 5 GHz.
    #[serde(rename = "a")]
    A,
    /// 802.11g (ERP-OFDM, short slot, no protection), 2.4 GHz.
    #[serde(rename = "g")]
    G,
}

impl WifiStandard {
    pub fn as_str(&self) -> &'static str {
        match self {
            WifiStandard::A => "a",
            WifiStandard::G => "g",
        }
    }
}

/// The OFDM data rates of 802.11a/g, Mbit/s.
pub const WIFI_PHY_MBPS: [f64; 8] = [6.0, 9.0, 12.0, 18.0, 24.0, 36.0, 48.0, 54.0];

/// `wifi = { standard, phy_mbps, frame_error, snr_db, rate_control, doppler_hz, rician_k_db }`
/// on a link: both directions are a Wi-Fi interface (docs/models/wifi.md).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Wifi {
    pub standard: WifiStandard,
    /// One of [`WIFI_PHY_MBPS`].
    pub phy_mbps: f64,
    /// Chance that one transmission attempt of a frame fails (then it is retried with a doubled
    /// contention window, 7 attempts in all, as Linux's default short retry limit); default 0.
    /// With `snr_db`, a loss on top of the SNR's frame errors, whatever the rate.
    #[serde(default)]
    pub frame_error: f64,
    /// Mean signal-to-noise ratio over the 20 MHz channel at both stations, dB: frames then
    /// fail with the OFDM error model's chance at their rate and length (docs/models/wifi.md).
    /// Default: none, no SNR-dependent errors.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snr_db: Option<f64>,
    /// How each station picks its PHY rate: `"fixed"` (default, always `phy_mbps`) or
    /// `"minstrel"` (Linux mac80211's Minstrel over the OFDM rates up to `phy_mbps`; needs
    /// `snr_db`).
    #[serde(default, skip_serializing_if = "WifiRateControl::is_fixed")]
    pub rate_control: WifiRateControl,
    /// Doppler spread of the channel's slow fading, Hz (indoor: about 6 at 5 GHz, 3 at 2.4
    /// GHz); default 0, no fading. Needs `snr_db`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub doppler_hz: f64,
    /// Rician K factor of the fading, dB (power of the line of sight over the scattered
    /// power); default: none, Rayleigh fading. Needs `doppler_hz`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rician_k_db: Option<f64>,
    /// With Minstrel: the driver's limit of tries per rate of the retry chain (mac80211's
    /// `hw->max_rate_tries`), 1 to 15; default 7, mac80211's when the driver sets none
    /// (carl9170, the AR9170 USB driver, sets 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate_tries: Option<u8>,
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

/// A Wi-Fi station's rate control.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum WifiRateControl {
    /// Always the link's `phy_mbps`.
    #[default]
    Fixed,
    /// Minstrel, as Linux mac80211 (net/mac80211/rc80211_minstrel.c, Linux 3.5).
    Minstrel,
}

impl WifiRateControl {
    pub fn is_fixed(&self) -> bool {
        *self == WifiRateControl::Fixed
    }
}

/// How a bond spreads packets over its members.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum BondSplit {
    /// `weights[0]` packets on the first member, then `weights[1]` on the second, ... (Linux
    /// bonding's balance-rr generalised to m:n, as the BOND paper did).
    #[default]
    Weights,
    /// Each packet to member k with probability weights[k] / sum(weights) (the split the BOND
    /// paper's power model assumes).
    Random,
}

impl BondSplit {
    pub fn as_str(&self) -> &'static str {
        match self {
            BondSplit::Weights => "weights",
            BondSplit::Random => "random",
        }
    }
}

/// Default `miimon_ms` (Debian's ifenslave examples and most distributions' bonding setups).
pub const BOND_DEFAULT_MIIMON_MS: f64 = 100.0;
/// Default `sleep_after_ms`: the BOND paper's tau.
pub const BOND_DEFAULT_SLEEP_AFTER_MS: f64 = 200.0;

/// `[[bond]]`: one virtual link striping packets over member links, in both directions.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Bond {
    /// Unique among links and bonds; a flow's `paths` may name it.
    pub id: String,
    /// Link ids, at least one, each at most once.
    pub members: Vec<String>,
    /// Packets per member per turn (default all 1: round robin).
    #[serde(default)]
    pub weights: Option<Vec<u32>>,
    #[serde(default)]
    pub split: BondSplit,
    /// Link monitoring interval (Linux bonding `miimon`): a member that went down (an outage)
    /// is skipped from the first check after it, used again from the first check after it came
    /// back; 0 = no monitoring (a dead member keeps its share). Default 100.
    #[serde(default)]
    pub miimon_ms: Option<f64>,
    /// Drop duplicate ACKs for data already received at the bond's end where data enters it
    /// (the AP for downloads), as the BOND paper does; default false.
    #[serde(default)]
    pub ack_filter: bool,
    /// Power accounting: a member's data direction sleeps this long after its queue empties
    /// (the BOND paper's tau); default 200.
    #[serde(default)]
    pub sleep_after_ms: Option<f64>,
}

impl Bond {
    /// The weights in force (all 1 when not given).
    pub fn weights(&self) -> Vec<u32> {
        self.weights
            .clone()
            .unwrap_or_else(|| vec![1; self.members.len()])
    }
    pub fn miimon_ms(&self) -> f64 {
        self.miimon_ms.unwrap_or(BOND_DEFAULT_MIIMON_MS)
    }
    pub fn sleep_after_ms(&self) -> f64 {
        self.sleep_after_ms.unwrap_or(BOND_DEFAULT_SLEEP_AFTER_MS)
    }
}

/// What a flow's path names: a link or a bond.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathTarget {
    Link(usize),
    Bond(usize),
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum FlowKind {
    Tcp,
    Mptcp,
    /// Unresponsive cross traffic: UDP datagrams from a random or constant-rate source (see
    /// [`UdpOptions`]), no congestion control, no acknowledgements.
    Udp,
}

impl FlowKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            FlowKind::Tcp => "tcp",
            FlowKind::Mptcp => "mptcp",
            FlowKind::Udp => "udp",
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    pub id: String,
    pub kind: FlowKind,
    /// tcp: newreno | cubic | bbr ; mptcp: lia | olia | balia | uncoupled-<tcp cc>. Required for
    /// tcp and mptcp flows (validation says so when it is missing, i.e. ""); a udp flow has no
    /// congestion control and takes none.
    #[serde(default)]
    pub cc: String,
    /// tcp: one link; mptcp: one link per subflow, first = initial subflow (a link may repeat:
    /// several subflows over one path, as Linux's ndiffports path manager opens); udp: one link,
    /// crossed in its data direction.
    pub paths: Vec<String>,
    #[serde(default)]
    pub start_s: f64,
    /// udp: sending stops here, seconds (default: the end of the run); `> start_s` and
    /// `<= run.duration_s`.
    #[serde(default)]
    pub stop_s: Option<f64>,
    /// udp: the traffic source (required for udp flows, refused on the others).
    #[serde(default)]
    pub udp: Option<UdpOptions>,
    /// 0 = bulk transfer for the whole run.
    #[serde(default)]
    pub bytes: u64,
    /// Per-flow TCP options overriding `[tcp]`.
    #[serde(default)]
    pub tcp: Option<TcpOptions>,
    /// mptcp: packet scheduler (default "minrtt"); see `MPTCP_SCHEDULERS`.
    #[serde(default)]
    pub scheduler: Option<String>,
    /// mptcp: the shared data-level receive buffer, packets of one MSS (default: the TCP
    /// receive window, `receive_window_bytes / mss_bytes`).
    #[serde(default)]
    pub receive_buffer_packets: Option<u32>,
    /// mptcp: the connection-level send buffer (data sent or queued, not yet data-ACKed),
    /// packets; default unlimited (the peer's window bounds it).
    #[serde(default)]
    pub send_buffer_packets: Option<u32>,
    /// mptcp: a fixed window each subflow keeps against its own data, bytes: a subflow sends
    /// new data only while its segments sent and not cumulatively acknowledged at the subflow
    /// level, one more included, fit in it (whole segments). Kheirkhah's ns-3 MPTCP model
    /// (v1.0, 2015), which the BLOAT paper used, advertises 65535 bytes on every subflow
    /// (no window scaling) and checks it per subflow. Default: none (RFC 8684's data-level
    /// window alone). Simulator only.
    #[serde(default)]
    pub subflow_window_bytes: Option<u64>,
    /// mptcp: links whose subflows start as backup (RFC 8684 MP_JOIN with the B flag).
    #[serde(default)]
    pub backup_paths: Vec<String>,
    /// mptcp: scripted MP_PRIO changes.
    #[serde(default)]
    pub prio_changes: Vec<PrioChange>,
    /// mptcp: when a subflow's unacknowledged data is reinjected on other subflows (default:
    /// "linux" for `scheduler = "linux-default"`, else "rto"; see [`Flow::reinject_rule`]).
    #[serde(default)]
    pub reinject: Option<Reinject>,
    /// mptcp: with `reinject = "stale"`, RTOs without progress before a subflow is stale; with
    /// "linux", MPTCP-level retransmission intervals (Linux `net.mptcp.stale_loss_cnt`, default 4).
    #[serde(default)]
    pub stale_loss_cnt: Option<u32>,
    /// mptcp: the data receiver grows its buffer as Linux dynamic right-sizing does, from
    /// `tcp.rmem_bytes[1]` up to `tcp.rmem_bytes[2]` (default: true with `reinject = "linux"`,
    /// else false: a fixed buffer of `receive_buffer_packets`).
    #[serde(default)]
    pub receive_buffer_autotune: Option<bool>,
    /// Mechanisms switched on for this flow (`MECHANISMS`): mptcp "pha" (the PHA scheduler
    /// wrapper), "pha-d" (receiver-driven MP_PRIO around predicted handovers) or
    /// "bloat-monitor" (options in `bloat_monitor`); tcp "tcp-fs".
    #[serde(default)]
    pub mechanisms: Vec<String>,
    /// pha / pha-d: the handover table (from `railpath table learn`), relative to the scenario.
    #[serde(default)]
    pub handover_table: Option<String>,
    /// pha / pha-d: learn the table instead from this many preliminary runs of the same scenario
    /// with the seeds after `run.seed` (the PHA paper used 50).
    #[serde(default)]
    pub handover_table_learn_runs: Option<u32>,
    /// pha / pha-d: error of the train's position fix, metres: inline-learned zones are widened
    /// by it, and the position the mechanism samples is off by up to it (default 20).
    #[serde(default)]
    pub gps_error_m: Option<f64>,
    /// pha-d: MP_PRIO(B=1) this long before a predicted zone (default: one full-queue RTT of the
    /// flow's slowest path).
    #[serde(default)]
    pub phad_lead_ms: Option<f64>,
    /// pha-d: MP_PRIO(B=0) this long before the zone's predicted end (default: as the lead).
    #[serde(default)]
    pub phad_back_ms: Option<f64>,
    /// tcp: vertical handoffs, in time order: the flow's path moves from its current link to
    /// `to` (one of `paths`; the flow starts on `paths[0]`). See [`Handoff`].
    #[serde(default)]
    pub handoffs: Vec<Handoff>,
    /// The in-car link between the train's router and the passenger (a car's Wi-Fi/LAN): the
    /// flow's last hop. On an mptcp flow, MPTCP ends at the router and a proxy relays onto this
    /// link as TCP (options in `proxy`); on a tcp flow the link follows its path.
    #[serde(default)]
    pub access: Option<String>,
    /// mptcp with `access`: the router's proxy (see [`ProxyOptions`]).
    #[serde(default)]
    pub proxy: Option<ProxyOptions>,
    /// tcp-fs: the receiver's constants (see [`TcpFsOptions`]).
    #[serde(default)]
    pub tcp_fs: Option<TcpFsOptions>,
    /// bloat-monitor: its options (see [`BloatMonitorOptions`]).
    #[serde(default)]
    pub bloat_monitor: Option<BloatMonitorOptions>,
    /// The handover table read from `handover_table` when the scenario was loaded.
    #[serde(skip)]
    pub handover_table_data: Option<railpath_radio::table::HandoverTable>,
}

/// Mechanisms a flow may switch on, with the flow kind each needs.
pub const MECHANISMS: &[(&str, FlowKind)] = &[
    ("pha", FlowKind::Mptcp),
    ("pha-d", FlowKind::Mptcp),
    ("tcp-fs", FlowKind::Tcp),
    ("bloat-monitor", FlowKind::Mptcp),
];

/// How a udp flow's source decides when to send.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum UdpProcess {
    /// ns-3's OnOffApplication: exponential ON and OFF periods; constant bit rate `max_mbps`
    /// while ON, silent while OFF; the OFF mean is set so that the long-run rate is `mean_mbps`.
    #[default]
    Onoff,
    /// Constant bit rate `mean_mbps` from start to stop.
    Cbr,
    /// Poisson arrivals of mean rate `mean_mbps`: exponential gaps between packets (the
    /// traffic of the BOND paper's power model).
    Poisson,
}

impl UdpProcess {
    pub fn as_str(&self) -> &'static str {
        match self {
            UdpProcess::Onoff => "onoff",
            UdpProcess::Cbr => "cbr",
            UdpProcess::Poisson => "poisson",
        }
    }
}

/// IPv4 and UDP headers, bytes: a datagram of `packet_bytes` on the wire carries
/// `packet_bytes - UDP_HEADER_BYTES` bytes of payload.
pub const UDP_HEADER_BYTES: u32 = 28;
/// Default `udp.packet_bytes`.
pub const UDP_DEFAULT_PACKET_BYTES: u32 = 1400;
/// Default `udp.mean_on_ms`.
pub const UDP_DEFAULT_MEAN_ON_MS: f64 = 200.0;

/// A udp flow's source, `udp = { process, max_mbps, mean_mbps, mean_on_ms, packet_bytes }`.
/// Rates count whole packets on the wire (`packet_bytes`, headers included), as ns-3's
/// `DataRate` of an OnOffApplication does.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct UdpOptions {
    #[serde(default)]
    pub process: UdpProcess,
    /// onoff: the rate while ON (required, `>= mean_mbps`); cbr: optional and unused (checked
    /// alike, so that `process = "cbr"` may be set over an on/off source).
    pub max_mbps: Option<f64>,
    /// The long-run mean rate (required).
    pub mean_mbps: Option<f64>,
    /// onoff: mean ON period, ms (default [`UDP_DEFAULT_MEAN_ON_MS`]); cbr: unused.
    pub mean_on_ms: Option<f64>,
    /// Bytes of one datagram on the wire (default [`UDP_DEFAULT_PACKET_BYTES`]).
    pub packet_bytes: Option<u32>,
}

/// A udp flow's source with its defaults filled in (see [`Flow::udp_config`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UdpConfig {
    pub process: UdpProcess,
    /// The rate while sending, Mbit/s: `max_mbps` (onoff) or `mean_mbps` (cbr).
    pub peak_mbps: f64,
    pub mean_mbps: f64,
    /// Mean ON and OFF periods, ms; OFF = ON x (peak / mean - 1), 0 when the source never
    /// pauses (cbr, or onoff with `max_mbps = mean_mbps`).
    pub mean_on_ms: f64,
    pub mean_off_ms: f64,
    pub packet_bytes: u32,
}

impl UdpConfig {
    /// Whether the source sends from start to stop without OFF periods.
    pub fn always_on(&self) -> bool {
        self.mean_off_ms <= 0.0
    }
}

/// How a vertical handoff changes links.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum HandoffMode {
    /// Make-before-break: the new link is attached at `t_s`; the flow keeps the old one until
    /// the handoff completes at `t_s + duration_ms`, then takes the new one, and the old one
    /// delivers what it still holds for `overlap_ms` before it is released (what it holds then
    /// is lost).
    #[default]
    Soft,
    /// Break-before-make: the old link is released at `t_s` (what it holds is lost) and the new
    /// one carries from `t_s + gap_ms`.
    Hard,
}

impl HandoffMode {
    pub fn as_str(&self) -> &'static str {
        match self {
            HandoffMode::Soft => "soft",
            HandoffMode::Hard => "hard",
        }
    }
}

/// A vertical handoff of a tcp flow (TCP-FS paper, seeds.md section 3).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Handoff {
    pub t_s: f64,
    /// The link the flow moves to.
    pub to: String,
    #[serde(default)]
    pub mode: HandoffMode,
    /// soft: the handoff's execution, from its start to its completion (default 0).
    pub duration_ms: Option<f64>,
    /// soft: how long the old link delivers what it holds after completion (default 0).
    pub overlap_ms: Option<f64>,
    /// hard: how long neither link carries (default 0).
    pub gap_ms: Option<f64>,
}

impl Handoff {
    /// Start and completion, seconds: soft `[t, t + duration]`, hard `[t, t + gap]`.
    pub fn span_s(&self) -> (f64, f64) {
        let d = match self.mode {
            HandoffMode::Soft => self.duration_ms.unwrap_or(0.0),
            HandoffMode::Hard => self.gap_ms.unwrap_or(0.0),
        };
        (self.t_s, self.t_s + d / 1e3)
    }

    /// When the old link is released, seconds: soft at completion plus the overlap, hard at the
    /// start.
    pub fn release_s(&self) -> f64 {
        match self.mode {
            HandoffMode::Soft => self.span_s().1 + self.overlap_ms.unwrap_or(0.0) / 1e3,
            HandoffMode::Hard => self.t_s,
        }
    }
}

/// TCP-FS receiver constants (`mechanisms = ["tcp-fs"]`). The receiver estimates the sender's
/// RTO as `srtt + k rttvar` with `srtt <- (1-alpha) srtt + alpha rtt` and `rttvar <- (1-beta)
/// rttvar + beta |srtt - rtt|` (the paper's equations), floored at `min_rto_ms`, and holds its
/// ACKs for `(1 + margin) RTO` after a handoff completes.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TcpFsOptions {
    /// Mobility detector: the receiver learns of a handoff's start and completion this late.
    pub detect_ms: f64,
    pub alpha: f64,
    pub beta: f64,
    pub k: f64,
    pub margin: f64,
    /// Floor of the receiver's RTO estimate; default: the scenario's `tcp.min_rto_ms` (the stock
    /// sender's floor, which the holding time must exceed for the sender's timer to fire).
    pub min_rto_ms: Option<f64>,
    /// At completion, forget the old path's RTT samples: the holding is the initial RTO (RFC
    /// 6298 2.1's 1 s, floored) plus the margin, and later samples are the new path's alone.
    pub reset_rto: bool,
    /// Keep the zero window through the holding: no window update at completion; the window
    /// reopens with the first ACK after the holding (the paper's section 2.3 reading; the
    /// default reopens it at completion, its section 2.1).
    pub hold_closed: bool,
}

/// The BLOAT paper's transmission-status monitor at an MPTCP sender
/// (`mechanisms = ["bloat-monitor"]`).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct BloatMonitorOptions {
    /// Send the problem path's packets again on the normal path (the paper's mechanism);
    /// false: only watch (records, TransmitTimes, the episodes it would act on, the send
    /// buffer as the paper counts it) and change nothing.
    pub retransmit: bool,
    /// The average the suspicion test compares the send buffer with (the paper says only
    /// "average"): none (default), its time average since the flow began; a number of seconds,
    /// an exponentially weighted moving average with that time constant (docs/models/bloat.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub average_s: Option<f64>,
}

impl Default for BloatMonitorOptions {
    fn default() -> Self {
        BloatMonitorOptions {
            retransmit: true,
            average_s: None,
        }
    }
}

impl Default for TcpFsOptions {
    fn default() -> Self {
        // RFC 6298's constants: those of the stock sender whose timer the receiver predicts.
        TcpFsOptions {
            detect_ms: 0.0,
            alpha: 0.125,
            beta: 0.25,
            k: 4.0,
            margin: 0.1,
            min_rto_ms: None,
            reset_rto: false,
            hold_closed: false,
        }
    }
}

impl Flow {
    /// A udp flow's source with defaults filled in; `None` for other kinds and for a udp flow
    /// without `udp.mean_mbps` (which validation refuses).
    pub fn udp_config(&self) -> Option<UdpConfig> {
        if self.kind != FlowKind::Udp {
            return None;
        }
        let u = self.udp.as_ref()?;
        let mean = u.mean_mbps?;
        let peak = match u.process {
            UdpProcess::Onoff => u.max_mbps.unwrap_or(mean).max(mean),
            UdpProcess::Cbr | UdpProcess::Poisson => mean,
        };
        let mean_on_ms = u.mean_on_ms.unwrap_or(UDP_DEFAULT_MEAN_ON_MS);
        Some(UdpConfig {
            process: u.process,
            peak_mbps: peak,
            mean_mbps: mean,
            mean_on_ms,
            mean_off_ms: if peak > mean {
                mean_on_ms * (peak / mean - 1.0)
            } else {
                0.0
            },
            packet_bytes: u.packet_bytes.unwrap_or(UDP_DEFAULT_PACKET_BYTES),
        })
    }

    /// The reinjection rule in force: the flow's own, else "linux" for the upstream Linux
    /// scheduler and "rto" (multipath-tcp.org) for the others.
    pub fn reinject_rule(&self) -> Reinject {
        self.reinject
            .unwrap_or(if self.scheduler.as_deref() == Some("linux-default") {
                Reinject::Linux
            } else {
                Reinject::Rto
            })
    }

    /// Whether the data receiver autotunes its buffer (see `receive_buffer_autotune`).
    pub fn receive_buffer_autotuned(&self) -> bool {
        self.receive_buffer_autotune.unwrap_or(
            self.receive_buffer_packets.is_none() && self.reinject_rule() == Reinject::Linux,
        )
    }
}

/// Which end sends an MP_PRIO option.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum PrioBy {
    /// The data receiver (the train, for downlink: PHA-D): the option reaches the sender one
    /// one-way delay later.
    #[default]
    Receiver,
    /// The data sender: takes effect at once for its own scheduling.
    Sender,
}

/// A scripted MP_PRIO change (RFC 8684 section 3.3.8).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PrioChange {
    pub t_s: f64,
    /// The link of the subflow whose priority changes.
    pub path: String,
    /// true: backup; false: regular.
    pub backup: bool,
    #[serde(default)]
    pub by: PrioBy,
}

/// Reinjection rule (and, for "linux", the whole upstream Linux send path around it).
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Reinject {
    /// At every retransmission timeout of a subflow, its unacknowledged data is reinjected and
    /// the subflow is "potentially failed" (not used for new data) until it makes progress
    /// (multipath-tcp.org's mptcp_sub_timeout / pf rule).
    Rto,
    /// A subflow is stale after `stale_loss_cnt` timeouts without progress; then its data is
    /// reinjected and it is avoided until it makes progress (a simplified upstream rule).
    Stale,
    /// Upstream Linux (net/mptcp, v6.x): the MPTCP-level retransmit timer reinjects only onto a
    /// subflow whose queues are empty, a subflow is stale after `stale_loss_cnt` timer intervals
    /// without progress, subflows queue data beyond their cwnd up to an autotuned send buffer
    /// and the connection's send buffer is their sum (docs/models/mptcp.md).
    Linux,
}

/// A link direction's drop-tail buffer limit (it counts the packet in service).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferLimit {
    Packets(u32),
    Bytes(u64),
}

/// The buffer of a link that gives neither `buffer_packets` nor `buffer_bytes`.
pub const DEFAULT_BUFFER_PACKETS: u32 = 100;

impl Link {
    /// The data direction's buffer: `buffer_packets` or `buffer_bytes` (validation allows only
    /// one), else [`DEFAULT_BUFFER_PACKETS`]. The simulator and the emulator both take it here.
    pub fn buffer(&self) -> BufferLimit {
        match (self.buffer_packets, self.buffer_bytes) {
            (Some(p), _) => BufferLimit::Packets(p),
            (None, Some(b)) => BufferLimit::Bytes(b),
            (None, None) => BufferLimit::Packets(DEFAULT_BUFFER_PACKETS),
        }
    }
    /// The reverse direction's buffer: `reverse_buffer_packets`, else the data direction's.
    pub fn reverse_buffer(&self) -> BufferLimit {
        self.reverse_buffer_packets
            .map(BufferLimit::Packets)
            .unwrap_or_else(|| self.buffer())
    }
}

/// Schedulers an mptcp flow accepts.
pub const MPTCP_SCHEDULERS: &[&str] = &[
    "minrtt",
    "roundrobin",
    "redundant",
    "ecf",
    "blest",
    "peekaboo",
    "linux-default",
];

/// Coupled congestion controls an mptcp flow accepts (besides `uncoupled-<tcp cc>`).
pub const MPTCP_COUPLED_CCS: &[&str] = &["lia", "olia", "balia"];

/// Loss detection for SACK connections.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LossDetection {
    /// RACK-TLP, RFC 8985, as Linux does by default.
    Rack,
    /// RFC 6675 DupThresh (three SACKed segments above a hole).
    Dupthresh,
    /// RFC 6675 with the threshold raised to the reordering SACKs reveal, as Linux did before
    /// RACK (3.x `tcp_update_reordering()`).
    #[serde(rename = "dupthresh-adaptive")]
    DupthreshAdaptive,
}

impl LossDetection {
    pub fn as_str(&self) -> &'static str {
        match self {
            LossDetection::Rack => "rack",
            LossDetection::Dupthresh => "dupthresh",
            LossDetection::DupthreshAdaptive => "dupthresh-adaptive",
        }
    }
}

/// How the retransmission timeout is computed from the RTT estimates.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RtoFormula {
    /// RFC 6298: max(SRTT + 4 RTTVAR, min_rto).
    Rfc6298,
    /// Linux `__tcp_set_rto()`: SRTT + max(4 RTTVAR, min_rto), larger on short paths.
    Linux,
}

/// When a retransmission timeout cuts ssthresh.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum TimeoutSsthresh {
    /// Linux `tcp_enter_loss()`: once per loss episode (the first timeout, or a later one after
    /// an RTT sample cleared the backoff).
    PerEpisode,
    /// ns-2 `TcpAgent::timeout()`: at every timeout, backed-off ones included (ns-2 tcp.cc).
    EveryTimeout,
}

/// TCP options; every field optional so that `[tcp]` and a flow's `tcp` table can be layered.
/// Defaults follow Linux (see [`TcpOptions::resolved`]).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct TcpOptions {
    pub mss_bytes: Option<u32>,
    pub header_bytes: Option<u32>,
    pub initial_window: Option<u32>,
    pub min_rto_ms: Option<f64>,
    pub initial_rto_ms: Option<f64>,
    pub max_rto_ms: Option<f64>,
    pub sack: Option<bool>,
    pub loss_detection: Option<LossDetection>,
    pub tlp: Option<bool>,
    pub delayed_ack: Option<bool>,
    pub delack_timeout_ms: Option<f64>,
    pub receive_window_bytes: Option<u64>,
    pub hystart: Option<bool>,
    pub ack_bytes: Option<u32>,
    /// RTO formula (default "rfc6298"; "linux" for the subflows of a `reinject = "linux"` flow).
    pub rto_formula: Option<RtoFormula>,
    /// Linux `net.ipv4.tcp_rmem` (min, default, max), bytes: the autotuned receive buffer.
    pub rmem_bytes: Option<[u64; 3]>,
    /// Linux `net.ipv4.tcp_wmem` (min, default, max), bytes: the autotuned send buffer.
    pub wmem_bytes: Option<[u64; 3]>,
    /// A fixed socket send buffer, bytes: new data leaves only while the data sent and not yet
    /// acknowledged stays below it (ns-3's `TcpSocket::SndBufSize`, 131072 by default there;
    /// an MPTCP subflow has its own). Default: none (Linux autotunes `tcp_wmem` instead).
    pub send_buffer_bytes: Option<u64>,
    /// When a timeout cuts ssthresh (default "per-episode", Linux's; "every-timeout", ns-2's).
    pub timeout_ssthresh: Option<TimeoutSsthresh>,
    /// The most a reordering the sender detects raises its duplicate-ACK threshold, packets
    /// (Linux `net.ipv4.tcp_max_reordering`, 300 since 3.16; `TCP_MAX_REORDERING`, 127,
    /// before it, e.g. Linux 3.5). Default 300.
    pub max_reordering: Option<u32>,
}

/// TCP options with every default filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct TcpConfig {
    /// Payload bytes per segment (1448: 1500 MTU less IP, TCP and timestamp option headers).
    pub mss_bytes: u32,
    /// Header bytes per data packet on the wire (52 = 20 IP + 20 TCP + 12 timestamps).
    pub header_bytes: u32,
    /// Bytes of a pure ACK on the wire (52, plus SACK blocks when present: 8 each + 4).
    pub ack_bytes: u32,
    pub initial_window: u32,
    pub min_rto_ms: f64,
    pub initial_rto_ms: f64,
    pub max_rto_ms: f64,
    pub sack: bool,
    pub loss_detection: LossDetection,
    pub tlp: bool,
    pub delayed_ack: bool,
    pub delack_timeout_ms: f64,
    pub receive_window_bytes: u64,
    pub hystart: bool,
    pub rto_formula: RtoFormula,
    /// Whether `rto_formula` was given (else a model may choose its own).
    pub rto_formula_set: bool,
    pub rmem_bytes: [u64; 3],
    pub wmem_bytes: [u64; 3],
    pub send_buffer_bytes: Option<u64>,
    pub timeout_ssthresh: TimeoutSsthresh,
    /// Packets (`max_reordering`, default 300).
    pub max_reordering: u32,
}

/// Linux 6.18's `net.ipv4.tcp_rmem` (the kernel the testbed calibration ran on).
pub const LINUX_TCP_RMEM: [u64; 3] = [4096, 131_072, 33_554_432];
/// Linux's `net.ipv4.tcp_wmem`.
pub const LINUX_TCP_WMEM: [u64; 3] = [4096, 16_384, 4_194_304];

impl TcpOptions {
    /// `self` layered over `base` (fields set in `self` win).
    pub fn over(&self, base: &TcpOptions) -> TcpOptions {
        macro_rules! pick {
            ($($f:ident),*) => { TcpOptions { $($f: self.$f.clone().or_else(|| base.$f.clone())),* } };
        }
        pick!(
            mss_bytes,
            header_bytes,
            initial_window,
            min_rto_ms,
            initial_rto_ms,
            max_rto_ms,
            sack,
            loss_detection,
            tlp,
            delayed_ack,
            delack_timeout_ms,
            receive_window_bytes,
            hystart,
            ack_bytes,
            rto_formula,
            rmem_bytes,
            wmem_bytes,
            send_buffer_bytes,
            timeout_ssthresh,
            max_reordering
        )
    }

    /// Fill Linux defaults for unset fields.
    pub fn resolved(&self) -> TcpConfig {
        TcpConfig {
            mss_bytes: self.mss_bytes.unwrap_or(1448),
            header_bytes: self.header_bytes.unwrap_or(52),
            ack_bytes: self.ack_bytes.unwrap_or(52),
            initial_window: self.initial_window.unwrap_or(10),
            min_rto_ms: self.min_rto_ms.unwrap_or(200.0),
            initial_rto_ms: self.initial_rto_ms.unwrap_or(1000.0),
            max_rto_ms: self.max_rto_ms.unwrap_or(120_000.0),
            sack: self.sack.unwrap_or(true),
            loss_detection: self.loss_detection.unwrap_or(LossDetection::Rack),
            tlp: self.tlp.unwrap_or(true),
            delayed_ack: self.delayed_ack.unwrap_or(true),
            delack_timeout_ms: self.delack_timeout_ms.unwrap_or(40.0),
            // Linux tcp_rmem max (6 MiB) with autotuning.
            receive_window_bytes: self.receive_window_bytes.unwrap_or(6 * 1024 * 1024),
            hystart: self.hystart.unwrap_or(true),
            rto_formula: self.rto_formula.unwrap_or(RtoFormula::Rfc6298),
            rto_formula_set: self.rto_formula.is_some(),
            rmem_bytes: self.rmem_bytes.unwrap_or(LINUX_TCP_RMEM),
            wmem_bytes: self.wmem_bytes.unwrap_or(LINUX_TCP_WMEM),
            send_buffer_bytes: self.send_buffer_bytes,
            timeout_ssthresh: self.timeout_ssthresh.unwrap_or(TimeoutSsthresh::PerEpisode),
            max_reordering: self.max_reordering.unwrap_or(300),
        }
    }
}

impl Scenario {
    /// Read every flow's `handover_table` (relative to `base`) and check it knows the carriers
    /// of the flow's links. Errors in the table name the table file and its field.
    pub fn load_handover_tables(&mut self, base: &Path) -> Result<(), ScenarioError> {
        for i in 0..self.flows.len() {
            let Some(name) = self.flows[i].handover_table.clone() else {
                continue;
            };
            let path = base.join(&name);
            let t = railpath_radio::table::HandoverTable::load(&path)
                .map_err(|e| ScenarioError::new(&e.file, e.field, e.message))?;
            let key = format!("flow[{i}].handover_table");
            for p in &self.flows[i].paths {
                let carrier = self
                    .links
                    .iter()
                    .find(|l| &l.id == p)
                    .and_then(|l| l.carrier.clone());
                if let Some(c) = carrier {
                    if !t.carriers.contains_key(&c) {
                        return Err(ScenarioError::new(
                            &self.source,
                            &key,
                            format!(
                                "{}: has no zones of carrier {c:?} (link {p:?}); it knows {}",
                                path.display(),
                                t.known_carriers().join(", ")
                            ),
                        ));
                    }
                }
            }
            self.flows[i].handover_table_data = Some(t);
        }
        Ok(())
    }

    /// The TCP configuration of flow `i`: its own `tcp` table over `[tcp]` over Linux defaults.
    pub fn tcp_config(&self, i: usize) -> TcpConfig {
        match &self.flows[i].tcp {
            Some(t) => t.over(&self.tcp).resolved(),
            None => self.tcp.resolved(),
        }
    }

    /// Index of the link with this id.
    pub fn link_index(&self, id: &str) -> Option<usize> {
        self.links.iter().position(|l| l.id == id)
    }

    /// What a flow's path names: a link, else a bond.
    pub fn path_target(&self, id: &str) -> Option<PathTarget> {
        self.link_index(id).map(PathTarget::Link).or_else(|| {
            self.bonds
                .iter()
                .position(|b| b.id == id)
                .map(PathTarget::Bond)
        })
    }

    /// The balancer a path names, if it names one.
    pub fn balancer_index(&self, id: &str) -> Option<usize> {
        self.balancers.iter().position(|b| b.id == id)
    }

    /// The links a path crosses: the link itself, or a bond's members.
    pub fn path_links(&self, id: &str) -> Vec<usize> {
        match self.path_target(id) {
            Some(PathTarget::Link(i)) => vec![i],
            Some(PathTarget::Bond(b)) => self.bonds[b]
                .members
                .iter()
                .filter_map(|m| self.link_index(m))
                .collect(),
            None => match self.balancer_index(id) {
                Some(b) => self.balancers[b]
                    .links
                    .iter()
                    .filter_map(|m| self.link_index(m))
                    .collect(),
                None => Vec::new(),
            },
        }
    }
}

/// Parse scenario text; `file` is used in error messages. Does not validate ranges.
///
/// Errors carry the key path rebuilt from the text (`link[1].rat_mbps`) and the line and column.
pub fn parse_str(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
    let mut s: Scenario = toml::from_str(text).map_err(|e| located(&e, text, file))?;
    s.source = file.to_string();
    let table: toml::Table = text.parse().map_err(|e| located(&e, text, file))?;
    note_carrier_keys(&mut s, &table);
    Ok(s)
}

/// Record which keys each `[[carrier]]` table wrote, so that validation can refuse a key of
/// another carrier model (serde's defaults would hide it).
fn note_carrier_keys(s: &mut Scenario, table: &toml::Table) {
    let Some(toml::Value::Array(list)) = table.get("carrier") else {
        return;
    };
    for (c, v) in s.carriers.iter_mut().zip(list) {
        if let toml::Value::Table(t) = v {
            c.keys_given = t.keys().cloned().collect();
        }
    }
}

/// Deserialize an already parsed (and possibly overridden) TOML table. A table has no text, so
/// errors name no line; prefer [`parse_str`] for text.
pub fn from_table(table: toml::Table, file: &str) -> Result<Scenario, ScenarioError> {
    let mut s: Scenario = Scenario::deserialize(table.clone())
        .map_err(|e: toml::de::Error| ScenarioError::new(file, "", user_words(e.message())))?;
    s.source = file.to_string();
    note_carrier_keys(&mut s, &table);
    Ok(s)
}

pub use railpath_core::user_words;

/// A toml error as a [`ScenarioError`]: key path from the span, message prefixed with the line.
fn located(e: &toml::de::Error, text: &str, file: &str) -> ScenarioError {
    let (key, message) = toml_error(e, text);
    ScenarioError::new(file, key, message)
}

/// A TOML parse or type error of `text` (any TOML file railpath reads: scenarios, the gateway's
/// configuration) as (key path, message): the key the user wrote (`link[1].rat_mbps`, "" when
/// none applies), and serde's message in the user's words ([`user_words`]) after the line and
/// column.
pub fn toml_error(e: &toml::de::Error, text: &str) -> (String, String) {
    let message = user_words(e.message());
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|r| r.split('`').next());
    match e.span() {
        // A field missing from the document itself: its span is empty at 0, no line to show.
        Some(span) if !(span.is_empty() && span.start == 0 && missing.is_some()) => {
            let l = locate::locate(text, span, missing);
            (
                l.key,
                format!("line {}, column {}: {message}", l.line, l.column),
            )
        }
        _ => (missing.unwrap_or("").to_string(), message),
    }
}

/// Read, override, parse and validate a scenario file and load the traces it names.
///
/// `overrides` are `key.path=value` strings (see [`apply_override`]), applied in order; an
/// override that makes the scenario malformed is reported under the key `--set <override>`.
pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ScenarioError::new(&file, "", format!("cannot read scenario file: {e}")))?;
    let base = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    load_text(&text, &file, &base, overrides)
}

/// [`load`] for scenario text already read: `file` names it in errors, and the files it names
/// (traces, measured carriers) are relative to `base`.
pub fn load_text(
    text: &str,
    file: &str,
    base: &Path,
    overrides: &[String],
) -> Result<Scenario, ScenarioError> {
    let (text, file) = (text.to_string(), file.to_string());
    // The text first, so that its errors name lines; then each override on the table.
    let mut s = parse_str(&text, &file)?;
    if !overrides.is_empty() {
        let mut table: toml::Table = text.parse().map_err(|e| located(&e, &text, &file))?;
        for o in overrides {
            // The override names the key; a long one by its start and length.
            let shown: String = o.chars().take(60).collect();
            let key = if shown.len() < o.len() {
                format!("--set {shown}... ({} characters)", o.chars().count())
            } else {
                format!("--set {o}")
            };
            apply_override(&mut table, o).map_err(|m| ScenarioError::new(&file, &key, m))?;
            s = from_table(table.clone(), &file)
                .map_err(|e| ScenarioError::new(&file, &key, e.message))?;
        }
    }
    // Without overrides every key is where the file says; with them a line could mislead.
    let add_line = |e: ScenarioError| match overrides.is_empty() {
        true => locate::with_line(e, &text),
        false => e,
    };
    // Checked before the files it names are read; resolved (`validate`) by whoever runs it.
    s.check().map_err(add_line)?;
    s.load_traces(base).map_err(add_line)?;
    s.load_handover_tables(base).map_err(add_line)?;
    railpath_radio::measured::load_files(&mut s.carriers, base)
        .map_err(|e| radio_error(&file, e))?;
    // Last, with everything loaded: a run that would exhaust the machine is refused here.
    let budget = Budget::from_env().map_err(|m| ScenarioError::new(&file, "", m))?;
    s.check_size(budget)?;
    Ok(s)
}

/// A radio-model error as a scenario error: errors in a data file (CSV, trace) keep that file,
/// errors about keys name the scenario file.
pub fn radio_error(scenario_file: &str, e: railpath_radio::RadioError) -> ScenarioError {
    let file = if e.file.is_empty() {
        scenario_file
    } else {
        e.file.as_str()
    };
    ScenarioError::new(file, e.key, e.message)
}

impl Scenario {
    /// Read the Mahimahi traces that links name, relative to `base`.
    pub fn load_traces(&mut self, base: &Path) -> Result<(), ScenarioError> {
        let file = self.source.clone();
        for (i, l) in self.links.iter_mut().enumerate() {
            if let Some(t) = &l.trace {
                l.trace_ms = Some(read_mahimahi(
                    &base.join(t),
                    &file,
                    &format!("link[{i}].trace"),
                )?);
            }
            if let Some(t) = &l.reverse_trace {
                l.reverse_trace_ms = Some(read_mahimahi(
                    &base.join(t),
                    &file,
                    &format!("link[{i}].reverse_trace"),
                )?);
            }
        }
        Ok(())
    }
}

/// Parse a Mahimahi delivery-opportunity trace: one integer millisecond timestamp (at most 10^9) per
/// line, non-decreasing, each line one opportunity to deliver 1500 bytes; the trace repeats with
/// period equal to its last timestamp.
pub fn parse_mahimahi(text: &str, file: &str) -> Result<Vec<u64>, ScenarioError> {
    // One parser for every Mahimahi trace in railpath (links and measured carriers).
    railpath_radio::measured::parse_mahimahi(text, file)
        .map_err(|e| ScenarioError::new(file, e.key, e.message))
}

/// Read a trace named by `key` of the scenario file `scenario`; every error names the scenario
/// file and key, then the trace file and its line.
fn read_mahimahi(path: &Path, scenario: &str, key: &str) -> Result<Vec<u64>, ScenarioError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ScenarioError::new(scenario, key, format!("cannot read trace {shown}: {e}"))
    })?;
    parse_mahimahi(&text, &shown).map_err(|e| {
        let at = if e.key.is_empty() {
            String::new()
        } else {
            format!(" {}", e.key)
        };
        ScenarioError::new(scenario, key, format!("trace {shown}{at}: {}", e.message))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = "[run]\nduration_s = 10\n\n[[link]]\nid = \"a\"\nrate_mbps = 10\n\n\
        [[flow]]\nid = \"dl\"\nkind = \"tcp\"\ncc = \"newreno\"\npaths = [\"a\"]\n";

    fn parse_err(from: &str, to: &str) -> ScenarioError {
        parse_str(&BASE.replacen(from, to, 1), "s.toml").unwrap_err()
    }

    #[test]
    fn link_buffers_default_and_reverse() {
        let link = |extra: &str| {
            parse_str(
                &BASE.replacen("rate_mbps = 10", &format!("rate_mbps = 10\n{extra}"), 1),
                "s.toml",
            )
            .unwrap()
            .links
            .remove(0)
        };
        let l = link("");
        assert_eq!(l.buffer(), BufferLimit::Packets(100));
        assert_eq!(l.reverse_buffer(), BufferLimit::Packets(100));
        let l = link("buffer_bytes = 300000");
        assert_eq!(l.buffer(), BufferLimit::Bytes(300_000));
        assert_eq!(l.reverse_buffer(), BufferLimit::Bytes(300_000));
        let l = link("buffer_packets = 50\nreverse_buffer_packets = 7");
        assert_eq!(l.buffer(), BufferLimit::Packets(50));
        assert_eq!(l.reverse_buffer(), BufferLimit::Packets(7));
    }

    #[test]
    fn serde_errors_name_key_and_line() {
        let e = parse_err("rate_mbps", "rat_mbps");
        assert_eq!(e.key, "link[0].rat_mbps");
        assert!(
            e.message
                .starts_with("line 6, column 1: unknown field `rat_mbps`"),
            "{}",
            e.message
        );
        assert!(
            e.to_string()
                .starts_with("s.toml: link[0].rat_mbps: line 6"),
            "{e}"
        );

        let e = parse_err("\"tcp\"", "\"quic\"");
        assert_eq!(e.key, "flow[0].kind");
        assert!(
            e.message
                .contains("line 10, column 8: unknown variant `quic`"),
            "{}",
            e.message
        );

        let e = parse_err("[run]\nduration_s = 10\n", "");
        assert_eq!(e.key, "run");
        assert_eq!(e.message, "missing field `run`");

        let e = parse_err("duration_s = 10\n", "");
        assert_eq!(e.key, "run.duration_s");

        let e = parse_err("rate_mbps = 10", "rate_mbps = 10 10");
        assert_eq!(e.key, "link[0].rate_mbps");
        assert!(
            e.message.starts_with("line 6, column 13: "),
            "{}",
            e.message
        );

        let e = parse_err("id = \"a\"", "id = \"a\"\nbuffer_packets = -3");
        assert_eq!(e.key, "link[0].buffer_packets");
        assert!(
            e.message.contains(
                "expected a whole number from 0 to 4294967295, found the whole number -3"
            ),
            "{}",
            e.message
        );
    }

    #[test]
    fn serde_wording_in_the_users_words() {
        // Each with what serde says and what the user reads (hand-written expectations).
        let cases = [
            (
                "invalid type: string \"9223372036854775808\", expected u64",
                "expected a whole number from 0 to 9223372036854775807, found the text \"9223372036854775808\"",
            ),
            (
                "invalid value: integer `-1` as i128, expected u64",
                "expected a whole number from 0 to 9223372036854775807, found the whole number -1",
            ),
            (
                "invalid type: integer `3`, expected struct Link",
                "expected a table, found the whole number 3",
            ),
            (
                "invalid type: floating point `1.5`, expected u32",
                "expected a whole number from 0 to 4294967295, found the number 1.5",
            ),
            (
                "invalid type: string \"x\", expected a sequence",
                "expected an array [...], found the text \"x\"",
            ),
            ("unknown field `x`", "unknown field `x`"),
        ];
        for (serde, user) in cases {
            assert_eq!(user_words(serde), user);
        }
        let long = format!(
            "invalid type: string \"{}\", expected f64",
            "y".repeat(100_000)
        );
        let m = user_words(&long);
        assert!(m.len() < 120 && m.contains("100000 characters"), "{m}");
    }

    /// A scratch directory unique to this test process and test.
    fn scratch(name: &str) -> PathBuf {
        let d =
            std::env::temp_dir().join(format!("railpath-scenario-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn load_applies_overrides_in_order_and_names_the_bad_one() {
        let d = scratch("overrides");
        let p = d.join("s.toml");
        std::fs::write(&p, BASE).unwrap();
        let o = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let s = load(
            &p,
            &o(&[
                "run.seed=3",
                "link.a.rate_mbps=5",
                "flow.dl.cc=cubic",
                "run.seed=4",
            ]),
        )
        .unwrap();
        assert_eq!(s.run.seed, 4);
        assert_eq!(s.links[0].rate_mbps, Some(5.0));
        assert_eq!(s.flows[0].cc, "cubic");
        assert_eq!(s.source, p.display().to_string());

        let e = load(&p, &o(&["run.seed=2", "link.b.rate_mbps=5"])).unwrap_err();
        assert_eq!(e.key, "--set link.b.rate_mbps=5");
        assert!(
            e.message.contains("no entry with id \"b\""),
            "{}",
            e.message
        );
        let e = load(&p, &o(&["link.a.rat_mbps=5"])).unwrap_err();
        assert_eq!(e.key, "--set link.a.rat_mbps=5");
        assert!(
            e.message.contains("unknown field `rat_mbps`"),
            "{}",
            e.message
        );
        let e = load(&p, &o(&["link.a.loss=1"])).unwrap_err();
        assert_eq!(e.key, "link[0].loss");
        let e = load(&d.join("none.toml"), &[]).unwrap_err();
        assert!(e.message.contains("cannot read scenario file"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn traces_load_relative_to_the_scenario_and_errors_name_the_key() {
        let d = scratch("traces");
        let p = d.join("s.toml");
        std::fs::write(
            &p,
            BASE.replacen("rate_mbps = 10", "trace = \"t.trace\"", 1),
        )
        .unwrap();
        let e = load(&p, &[]).unwrap_err();
        assert_eq!(e.key, "link[0].trace");
        assert!(e.message.contains("cannot read trace"), "{}", e.message);
        std::fs::write(d.join("t.trace"), "1\n1\n\n5\n").unwrap();
        assert_eq!(
            load(&p, &[]).unwrap().links[0].trace_ms,
            Some(vec![1, 1, 5])
        );
        std::fs::write(d.join("t.trace"), "1\n2\nx3\n").unwrap();
        let e = load(&p, &[]).unwrap_err();
        assert_eq!(e.key, "link[0].trace");
        assert!(
            e.message
                .contains("t.trace line 3: expected an integer millisecond timestamp"),
            "{}",
            e.message
        );
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn mahimahi_rules() {
        assert_eq!(parse_mahimahi("0\n0\n3\n", "t").unwrap(), vec![0, 0, 3]);
        assert_eq!(parse_mahimahi("5\n3\n", "t").unwrap_err().key, "line 2");
        assert!(parse_mahimahi("\n\n", "t")
            .unwrap_err()
            .message
            .contains("no delivery"));
        assert!(parse_mahimahi("0\n", "t")
            .unwrap_err()
            .message
            .contains("at least 1 ms"));
        assert_eq!(parse_mahimahi("-1\n", "t").unwrap_err().key, "line 1");
    }

    #[test]
    fn tcp_layering() {
        let text = BASE.replacen("[run]", "[tcp]\nsack = false\nmss_bytes = 1000\n\n[run]", 1)
            + "tcp = { mss_bytes = 1200 }\n";
        let s = parse_str(&text, "s").unwrap();
        let c = s.tcp_config(0);
        assert_eq!((c.mss_bytes, c.sack, c.initial_window), (1200, false, 10));
    }
}
