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

pub mod balia;
mod common;
pub mod lia;
pub mod olia;

/// Build a coupled algorithm for one subflow by its scenario name (`cc = "lia" | "olia" |
/// "balia"`). Each subflow gets its own instance; the connection passes the siblings in
/// `Coupling` on every `cong_avoid` call.
pub fn coupled_by_name(name: &str) -> Option<Box<dyn CongestionControl>> {
    match name {
        "lia" => Some(Box::new(lia::Lia::default())),
        "olia" => Some(Box::new(olia::Olia::default())),
        "balia" => Some(Box::new(balia::Balia::default())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_build() {
        // Every coupled name the scenario accepts (its list is the one source of the names).
        for &n in railpath_scenario::MPTCP_COUPLED_CCS {
            assert_eq!(coupled_by_name(n).expect(n).name(), n);
        }
        assert!(coupled_by_name("cubic").is_none());
    }
}
