//! Packets and links.

pub mod link;
pub mod packet;
