//! Coupled congestion control for MPTCP, each behind `crate::tcp::cc::CongestionControl`, reading
//! sibling subflows through `Coupling`.
