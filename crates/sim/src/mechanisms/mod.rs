//! Mechanisms of the source papers, as switches on a flow (`mechanisms = [...]`): they wrap or
//! steer the engine's parts (schedulers, receivers), never fork them.

pub mod bloat;
pub mod pha;
pub mod tcp_fs;
