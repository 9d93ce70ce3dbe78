//! Coupled congestion control for MPTCP, each behind `crate::tcp::cc::CongestionControl`, reading
//! sibling subflows through `Coupling`.
//!
//! - [`lia::Lia`]: RFC 6356 Linked Increases (Linux "coupled").
//! - [`olia::Olia`]: Opportunistic LIA (Khalili et al., CoNEXT 2012 / ToN 2013).
//! - [`balia::Balia`]: Balanced LIA (Peng, Walid, Hwang, Low, ToN 2016).
//!
//! All three slow-start like Linux `tcp_slow_start` below ssthresh and reduce to Reno with one
//! active subflow. See docs/models/mptcp-cc.md.

use crate::tcp::cc::CongestionControl;
use railpath_scenario::CoupledCc;

pub mod balia;
mod common;
pub mod lia;
pub mod olia;

/// Build the coupled algorithm `cc` for one subflow (`cc = "lia" | "olia" | "balia"`). Each
/// subflow gets its own instance; the connection passes the siblings in `Coupling` on every
/// `cong_avoid` call.
pub fn build_coupled(cc: CoupledCc) -> Box<dyn CongestionControl> {
    match cc {
        CoupledCc::Lia => Box::new(lia::Lia::default()),
        CoupledCc::Olia => Box::new(olia::Olia::default()),
        CoupledCc::Balia => Box::new(balia::Balia::default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_build() {
        // The scenario's coupled names and the enum agree, and each builds what it names.
        let names: Vec<&str> = CoupledCc::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names, railpath_scenario::MPTCP_COUPLED_CCS);
        for cc in CoupledCc::ALL {
            assert_eq!(build_coupled(cc).name(), cc.as_str());
        }
    }
}
