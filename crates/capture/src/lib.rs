//! railpath-capture: packet captures of railpath's two stacks and one analysis for both.
//!
//! - [`sim`]: a [`railpath_sim::PacketTap`] that writes what crosses each end of every
//!   simulated link as Ethernet/IPv4/TCP-or-UDP frames with the TCP and MPTCP options the
//!   stack would put there (`railpath run --pcap DIR`), streamed to disk.
//! - [`live`]: the same files from a live emulator's packets (`railpath testbed run --pcap`).
//! - [`file`]: pcapng / pcap writing and streaming reading.
//! - [`frame`], [`mptcp`]: headers and options (etherparse for Ethernet/IPv4/TCP/UDP, RFC 8684
//!   options here).
//! - [`addr`]: the address plan both stacks share (the namespace testbed's).
//! - [`analyze`]: goodput, RTT samples, retransmissions, reinjections, stalls of the in-order
//!   data stream and MP_PRIO changes from captures of either stack (`railpath analyze`).
//!
//! docs/models/capture.md says what a simulator capture represents and what the capture writes
//! that the simulator does not model (the handshakes and their keys).

pub mod addr;
pub mod analyze;
pub mod file;
pub mod frame;
pub mod live;
pub mod mptcp;
pub mod sim;

pub use analyze::{analyze, Analysis, AnalyzeOptions};
pub use file::{CaptureError, CaptureReader, CaptureWriter, Format};
pub use sim::{run_with_capture, CaptureOptions, CaptureReport};

/// Every capture's timestamps count from this instant (2024-01-01T00:00:00Z, in seconds since
/// the Unix epoch): a simulator capture's packet at simulated time t, and a testbed capture's at
/// t after the emulator's origin, carry EPOCH + t, so the two stacks' captures line up.
pub const EPOCH_S: u64 = 1_704_067_200;

/// Nanoseconds since the Unix epoch of time `t` (since the run's start).
pub fn wall_ns(t: railpath_core::Time) -> u64 {
    EPOCH_S * 1_000_000_000 + t.ns()
}

/// The two capture points of a link: where its data direction enters it (the data sender's
/// end: the server's side of a carrier, the router's of an in-car link) and where it leaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum End {
    Sender,
    Receiver,
}

impl End {
    pub fn as_str(self) -> &'static str {
        match self {
            End::Sender => "sender",
            End::Receiver => "receiver",
        }
    }
    pub fn parse(s: &str) -> Option<End> {
        match s {
            "sender" => Some(End::Sender),
            "receiver" => Some(End::Receiver),
            _ => None,
        }
    }
}

/// The name of a capture point: `<link>.<end>` (a pcapng interface's name; a pcap file's stem).
pub fn point_name(link: &str, end: End) -> String {
    format!("{link}.{}", end.as_str())
}

/// The link and end of a capture point name (`a.sender` -> ("a", Sender)).
pub fn parse_point(name: &str) -> Option<(&str, End)> {
    let (link, end) = name.rsplit_once('.')?;
    Some((link, End::parse(end)?))
}
