//! The single-path algorithm a flow's `cc` names, built behind [`CongestionControl`] (the one
//! place that knows every algorithm; `mod.rs` holds the trait they share).

use super::{bbr, cubic, newreno, CongestionControl, Window};
use railpath_core::Rng;
use railpath_scenario::TcpCc;

/// What an algorithm's constructor may need beyond the window.
#[derive(Debug, Clone)]
pub struct CcParams {
    /// CUBIC: use HyStart (Linux `hystart=1`).
    pub hystart: bool,
    /// Header bytes per data packet on the wire: BBR paces wire bytes (`pacing_rate_bps`).
    pub header_bytes: u32,
    /// BBR: the stream for its random PROBE_BW start phase, e.g.
    /// `Rng::stream(seed, "cc/<flow>/<subflow>")`.
    pub rng: Rng,
}

/// Build the single-path algorithm `cc` over window `w`.
pub fn build(cc: TcpCc, w: &Window, p: CcParams) -> Box<dyn CongestionControl> {
    match cc {
        TcpCc::NewReno => Box::new(newreno::NewReno),
        TcpCc::Cubic => Box::new(cubic::Cubic::new(p.hystart)),
        TcpCc::Bbr => Box::new(bbr::Bbr::new(w, p.header_bytes, p.rng)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_scenario_name_builds_its_algorithm() {
        // The scenario's list of names and the enum agree, and each builds what it names.
        let names: Vec<&str> = TcpCc::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names, railpath_scenario::TCP_CCS);
        let w = Window::new(10, 1448);
        for cc in TcpCc::ALL {
            let p = CcParams {
                hystart: true,
                header_bytes: 52,
                rng: Rng::stream(0, "t"),
            };
            assert_eq!(build(cc, &w, p).name(), cc.as_str());
        }
    }
}
