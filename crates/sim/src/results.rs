//! What a run returns: the `summary.json` fields of docs/output-contract.md (JSON Schema:
//! docs/schema/summary.schema.json) and the time series behind `timeseries.csv`. Plain data;
//! writing files is the caller's business.

use serde::Serialize;

/// The version recorded in every summary.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `format` of `summary.json`: bumped when a field is renamed or dropped.
pub const SUMMARY_FORMAT: &str = "railpath-summary/1";

/// `summary.json`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    /// [`SUMMARY_FORMAT`].
    pub format: String,
    pub railpath_version: String,
    pub scenario: String,
    pub seed: u64,
    pub sim_duration_s: f64,
    /// Wall-clock seconds; the engine has no clock, so the caller fills it in (0 until then).
    pub wall_s: f64,
    pub events: u64,
    pub flows: Vec<FlowSummary>,
    pub links: Vec<LinkSummary>,
    pub handovers: Vec<Handover>,
    /// The scenario's bonds (`[[bond]]`), in its order; empty without.
    pub bonds: Vec<BondSummary>,
}

/// One bond of `summary.json`.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BondSummary {
    pub id: String,
    /// `"weights"` or `"random"`.
    pub split: String,
    pub weights: Vec<u32>,
    pub ack_filter: bool,
    /// Duplicate ACKs the filter dropped.
    pub filtered_acks: u64,
    /// Packets dropped because no member was up.
    pub no_member_drops: u64,
    pub members: Vec<BondMemberSummary>,
    /// Members marked down or up by the bond's monitoring, in time order.
    pub member_events: Vec<BondMemberEvent>,
}

/// A bond member: what it carried and its power state (data direction).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BondMemberSummary {
    pub link: String,
    /// Packets the bond gave it in the data direction (refused by its queue included).
    pub data_packets: u64,
    /// Packets the bond gave it in the reverse direction.
    pub reverse_packets: u64,
    /// Seconds its data direction was awake (packets queued, or less than the bond's
    /// `sleep_after_ms` since its queue emptied) and asleep, over the run.
    pub awake_s: f64,
    pub asleep_s: f64,
}

/// A member's state change as the bond's monitoring saw it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct BondMemberEvent {
    pub t_s: f64,
    pub link: String,
    pub up: bool,
}

impl Summary {
    /// The [`UdpStats`] of the flow with this id (`None` for a flow of another kind).
    pub fn udp(&self, flow_id: &str) -> Option<&UdpStats> {
        self.flows.iter().find(|f| f.id == flow_id)?.udp.as_ref()
    }
}

/// A udp flow's source and what became of its packets (`summary.json`: the flow's `udp`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct UdpStats {
    /// `"onoff"`, `"cbr"` or `"poisson"` (the scenario's `udp.process`).
    pub process: String,
    /// Bits put on the wire (whole packets, headers included) / seconds from `start_s` to
    /// `stop_s` (or the end of the run): the load the source offered, comparable with the
    /// scenario's `mean_mbps` and the link's rate.
    pub offered_bps: f64,
    pub sent_packets: u64,
    /// Packets that reached the sink.
    pub delivered_packets: u64,
    /// Packets the link lost: buffer overflow, random loss, drop-mode outages (sent, less
    /// delivered, less still in the link at the end).
    pub dropped_packets: u64,
    /// Packets still queued or propagating at the end of the run.
    pub in_flight_packets: u64,
    /// ON periods begun (1 for a source that never pauses).
    pub on_periods: u64,
    /// One-way delay of the delivered packets, sending to arrival (queueing, serialisation,
    /// propagation), ms; null when none was delivered.
    pub delay_ms: Option<AvgMax>,
}

/// One flow of `summary.json`. `Default` is the empty summary every field of which a flow kind
/// does not report is left at (`null`, 0, empty).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct FlowSummary {
    pub id: String,
    pub kind: String,
    pub cc: String,
    pub scheduler: Option<String>,
    pub mechanisms: Vec<String>,
    /// Application bytes delivered in order x 8 / time the flow was active.
    pub goodput_bps: f64,
    pub delivered_bytes: u64,
    pub sent_packets: u64,
    pub retransmitted_packets: u64,
    /// Retransmission timeouts that fired.
    pub rto_count: u64,
    /// Mean goodput over 1 s windows centred on each handover of a carrier the flow uses.
    pub handover_goodput_bps: Option<f64>,
    /// Finite flows: seconds from start to the last byte delivered; null for bulk or unfinished.
    pub fct_s: Option<f64>,
    /// Smoothed RTT at the end of the run, ms (tcp; null before the first RTT sample).
    pub srtt_ms: Option<f64>,
    /// Mean retransmission timeout over the run (sampled every bin, without backoff), ms.
    pub rto_ms: Option<f64>,
    pub subflows: Option<Vec<SubflowSummary>>,
    pub receive_buffer: Option<BufferStats>,
    pub send_buffer: Option<BufferStats>,
    /// mptcp: packets sent and not yet covered by both their subflow-level and the data-level
    /// ACK (the BLOAT paper's MPTCP send buffer: a copy sent on another subflow counts again),
    /// sampled per bin.
    pub send_buffer_held: Option<BufferStats>,
    pub reorder_delay_ms: Option<AvgMax>,
    /// mptcp with `mechanisms` "pha" or "pha-d": what the mechanism did; null otherwise.
    pub pha: Option<PhaStats>,
    /// tcp with `handoffs`: each vertical handoff and what TCP-FS did; null otherwise.
    pub handoffs: Option<HandoffStats>,
    /// mptcp with `mechanisms` "bloat-monitor": its episodes and retransmissions; null otherwise.
    pub bloat: Option<crate::mechanisms::bloat::BloatStats>,
    /// udp: what the source offered and what became of its packets; null otherwise.
    pub udp: Option<UdpStats>,
    /// A car's connection (a flow with `access`, or through a balancer): its in-car link, the
    /// balancer's carrier and failovers, or the proxy's relay; null otherwise.
    pub car: Option<CarStats>,
}

/// A car's connection (`summary.json`: the flow's `car`).
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CarStats {
    /// The in-car link.
    pub access: Option<String>,
    /// The load balancer the car's connection went through, if any.
    pub balancer: Option<String>,
    /// The carrier's link the balancer gave the connection when it opened.
    pub carrier: Option<String>,
    /// Each time the balancer moved the car to another carrier.
    pub failovers: Vec<CarFailover>,
    /// The MPTCP proxy's relay, if the car is behind it.
    pub proxy: Option<ProxyStats>,
}

/// A load balancer's failover of one car.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct CarFailover {
    pub t_s: f64,
    pub from: String,
    pub to: String,
}

/// The proxy's relay between the server's MPTCP connection and the passenger's TCP.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct ProxyStats {
    /// The server did not speak MPTCP: plain TCP over the first path.
    pub fallback: bool,
    pub buffer_bytes: u64,
    /// Most bytes the relay buffer held (never above `buffer_bytes`).
    pub max_buffered_bytes: u64,
    /// Most bytes delivered by the server's connection that the full relay had not read.
    pub max_unread_bytes: u64,
    /// Window updates sent to the server after the relay read again.
    pub window_updates: u64,
    /// What the server's connection delivered to the router, bit/s over the flow's time.
    pub server_goodput_bps: f64,
    pub access_srtt_ms: Option<f64>,
    pub access_retransmitted_packets: u64,
    /// With `proxy.verify`: SHA-256 of the payload the server sent, over as many bytes as the
    /// passenger received, and of what the passenger received (hex).
    pub sha256_sent: Option<String>,
    pub sha256_received: Option<String>,
}

/// A tcp flow's vertical handoffs.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct HandoffStats {
    pub events: Vec<HandoffRecord>,
    /// Zero-window probes the sender sent.
    pub window_probes: u64,
    /// Fast retransmits (recoveries entered on duplicate ACKs or SACKs) over the run.
    pub fast_recoveries: u64,
    /// TCP-FS: ACKs sent with a zero window, and ACKs withheld while holding.
    pub zero_window_acks: u64,
    pub held_acks: u64,
}

/// One vertical handoff.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct HandoffRecord {
    pub from: String,
    pub to: String,
    pub mode: String,
    /// Start and completion (soft: end of the overlap; hard: end of the gap), seconds.
    pub start_s: f64,
    pub complete_s: f64,
    /// TCP-FS: when the receiver froze and reopened its window (the mobility detector's
    /// signals), when ACK holding ended, and the RTO estimate it came from; null without TCP-FS.
    pub frozen_s: Option<f64>,
    pub reopened_s: Option<f64>,
    pub hold_until_s: Option<f64>,
    pub receiver_rto_ms: Option<f64>,
}

/// What PHA or PHA-D did over a run.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct PhaStats {
    /// PHA: subflow-seconds removed from scheduling (in a predicted zone).
    pub blocked_s: f64,
    /// PHA-D: subflow-seconds the receiver asked to be backup.
    pub backup_s: f64,
    /// PHA-D: MP_PRIO options the receiver sent.
    pub prio_changes: u64,
    /// New data sent on a subflow while PHA had it removed (the rule says 0).
    pub sends_in_zone: u64,
    /// New data sent on a backup subflow while a regular one was usable (RFC 8684: 0).
    pub sends_on_backup: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SubflowSummary {
    pub id: String,
    pub link: String,
    pub goodput_bps: f64,
    pub sent_packets: u64,
    pub retransmitted_packets: u64,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct BufferStats {
    pub max_packets: f64,
    pub avg_packets: f64,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct AvgMax {
    pub avg: f64,
    pub max: f64,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LinkSummary {
    pub id: String,
    /// Packets that left the data-direction bottleneck.
    pub forwarded_packets: u64,
    /// Data-direction packets dropped: buffer overflow, random loss, outage (drop mode).
    pub dropped_packets: u64,
    pub random_losses: u64,
    /// Mean and max data-direction queue, sampled every bin.
    pub queue_bytes: AvgMax,
    /// Queueing delay of data-direction packets (enqueue to start of service), ms.
    pub queue_delay_ms: AvgMax,
    /// Every outage of the data direction as it happened, with the packets that arrived at the
    /// link while it was out (a sender's retries into a dead path).
    pub outages: Vec<OutageRecord>,
}

/// One outage of a link's data direction and the arrivals during it.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct OutageRecord {
    pub start_s: f64,
    pub duration_ms: f64,
    /// Arrival times of data-direction packets during the outage, ms after its start (at most
    /// 64: the first ones).
    pub arrivals_ms: Vec<f64>,
}

impl From<&crate::net::link::OutageLog> for OutageRecord {
    fn from(o: &crate::net::link::OutageLog) -> OutageRecord {
        OutageRecord {
            start_s: o.start.secs_f64(),
            duration_ms: (o.until - o.start).ms_f64(),
            arrivals_ms: o.arrivals.iter().map(|&t| (t - o.start).ms_f64()).collect(),
        }
    }
}

/// One handover in `summary.json` (results.md): the radio model's record.
pub use railpath_radio::HandoverRecord as Handover;

/// One time series: a value per bin.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Flow id; "" for link metrics (`queue_bytes`).
    pub flow: String,
    /// Subflow id of an MPTCP flow (its link id, "a#2" for a repeated link), the link id for link
    /// metrics, or "" for a whole flow.
    pub subflow: String,
    pub metric: &'static str,
    pub values: Vec<f64>,
}

/// Everything a run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResults {
    pub summary: Summary,
    /// Bin width of every series, seconds; bin k covers [k*bin_s, (k+1)*bin_s).
    pub bin_s: f64,
    pub series: Vec<Series>,
}

impl RunResults {
    /// The long-format CSV of `results.md`: `t_s,flow,subflow,metric,value`, one row per bin
    /// and series, `t_s` = end of the bin.
    pub fn timeseries_csv(&self) -> String {
        let mut out = Vec::new();
        self.write_timeseries_csv(&mut out)
            .expect("writing to memory cannot fail");
        String::from_utf8(out).expect("the CSV is ASCII")
    }

    /// [`RunResults::timeseries_csv`] written to `w` row by row: a long run's CSV (tens of
    /// bytes per bin and series) is never held in memory whole.
    pub fn write_timeseries_csv(&self, w: &mut impl std::io::Write) -> std::io::Result<()> {
        w.write_all(b"t_s,flow,subflow,metric,value\n")?;
        for s in &self.series {
            for (k, v) in s.values.iter().enumerate() {
                let t = (k + 1) as f64 * self.bin_s;
                writeln!(
                    w,
                    "{},{},{},{},{}",
                    round9(t),
                    s.flow,
                    s.subflow,
                    s.metric,
                    v
                )?;
            }
        }
        Ok(())
    }
}

fn round9(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}
