//! railpath-gateway: the onboard daemon of railpath (docs/gateway.md).
//!
//! - [`proxy`]: transparent TCP -> MPTCP relay for passengers (train mode) and MPTCP -> TCP relay
//!   (ground mode);
//! - [`phad`]: the PHA-D decision rule, and [`controller`]: the loop that applies it to the
//!   kernel's MPTCP path manager ([`pm`]) from a position source ([`position`]); [`drain`]:
//!   how long a carrier keeps receiving after it goes backup (is the lead time long enough?);
//! - [`handover_log`]: observed handovers, logged for learning the table on later runs;
//! - [`config`], [`metrics`].

pub mod config;
pub mod controller;
pub mod drain;
pub mod figures;
pub mod handover_log;
pub mod health;
pub mod metrics;
pub mod netmon;
/// The PHA-D decision rule, shared with the simulator (`railpath_radio::phad`).
pub use railpath_radio::phad;
pub mod pm;
pub mod position;
pub mod proxy;
pub mod sockopt;
