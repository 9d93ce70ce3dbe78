//! `[capture]`: packet captures of a run (`railpath run`, `railpath testbed run`; the writing is
//! crates/capture's, docs/models/capture.md). Its presence switches them on.

use crate::ScenarioError;
use serde::{Deserialize, Serialize};

/// Smallest snap length that keeps every header (Ethernet 14, IPv4 20, TCP with options 60).
pub const MIN_SNAPLEN: u32 = 94;
/// Largest snap length (libpcap's maximum).
pub const MAX_SNAPLEN: u32 = 262_144;

/// The container format of the capture files.
#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum CaptureFormat {
    /// Two files (one per end of the links), one interface per link.
    #[default]
    Pcapng,
    /// One file per link and end.
    Pcap,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct Capture {
    /// Directory of the files, relative to the run's output directory (default `pcap`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dir: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<CaptureFormat>,
    /// Bytes kept of each frame: 0 keeps whole frames (default 128: every header, no payload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snaplen_bytes: Option<u32>,
}

impl Capture {
    pub fn dir(&self) -> &str {
        self.dir.as_deref().unwrap_or("pcap")
    }
    pub fn format(&self) -> CaptureFormat {
        self.format.unwrap_or_default()
    }
    pub fn snaplen_bytes(&self) -> u32 {
        self.snaplen_bytes.unwrap_or(128)
    }

    pub(crate) fn validate(&self, file: &str) -> Result<(), ScenarioError> {
        if let Some(n) = self.snaplen_bytes {
            if n != 0 && !(MIN_SNAPLEN..=MAX_SNAPLEN).contains(&n) {
                return Err(ScenarioError::new(
                    file,
                    "capture.snaplen_bytes",
                    format!(
                        "expected 0 (whole frames) or {MIN_SNAPLEN} to {MAX_SNAPLEN} bytes (every header must fit), found {n}"
                    ),
                ));
            }
        }
        if let Some(d) = &self.dir {
            if d.trim().is_empty() {
                return Err(ScenarioError::new(
                    file,
                    "capture.dir",
                    "expected a directory name, found an empty string",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::parse_str;

    fn scenario(capture: &str) -> Result<crate::Scenario, crate::ScenarioError> {
        let s = parse_str(
            &format!(
                "[run]\nduration_s = 1\n[[link]]\nid = \"a\"\nrate_mbps = 10\n\
                 [[flow]]\nid = \"x\"\nkind = \"tcp\"\ncc = \"cubic\"\npaths = [\"a\"]\n\
                 [capture]\n{capture}\n"
            ),
            "t.toml",
        )?;
        s.validate().map(|_| s)
    }

    #[test]
    fn capture_keys() {
        let s = scenario("").unwrap();
        let c = s.capture.unwrap();
        assert_eq!((c.dir(), c.snaplen_bytes()), ("pcap", 128));
        assert_eq!(c.format(), super::CaptureFormat::Pcapng);
        let s = scenario("format = \"pcap\"\nsnaplen_bytes = 0\ndir = \"caps\"").unwrap();
        assert_eq!(s.capture.unwrap().format(), super::CaptureFormat::Pcap);
        let e = scenario("snaplen_bytes = 60").unwrap_err();
        assert_eq!(e.key, "capture.snaplen_bytes");
        assert!(e.message.contains("94"), "{}", e.message);
        assert!(scenario("format = \"erf\"").is_err());
        assert!(scenario("snap = 1").is_err());
        assert_eq!(scenario("dir = \" \"").unwrap_err().key, "capture.dir");
    }
}
