//! Packet captures (pcap and pcapng) as `railpath analyze` reads them: the file formats, the
//! frames' headers and TCP/MPTCP options, and the analysis of what they carry.
#![no_main]
use libfuzzer_sys::fuzz_target;
use railpath_capture::analyze::{analyze_bytes, AnalyzeOptions};

fuzz_target!(|data: &[u8]| {
    let opts = AnalyzeOptions::default();
    // The name makes a pcap's one capture point `a.receiver`: delivery is analysed from it.
    let _ = analyze_bytes("a.receiver.pcap", data, &opts);
});
