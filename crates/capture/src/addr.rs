//! The address plan both stacks' captures use: the namespace testbed's (crates/linkem/src/
//! testbed.rs, docs/testbed.md), so that a simulator capture and a testbed capture of one
//! scenario name the same hosts.
//!
//! - the server's service address 10.201.0.1, flow i on port 5201 + i;
//! - the train router's address on carrier link k (scenario order) 10.200.k.1, the server's
//!   side of that link 10.200.k.2;
//! - passenger (car) i 10.99.i.2 behind the router's 10.99.i.1;
//! - a bond (simulator only) 10.202.b.1;
//! - link-layer addresses (TUN devices have none; the captures give both stacks the same):
//!   02:72:70:HH:LL:0E, HHLL the link's index and E 1 at the data sender's end, 2 at the
//!   receiver's.

use crate::End;
use std::net::Ipv4Addr;

pub const SERVER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 201, 0, 1);
/// Flow i's server port is `BASE_PORT + i`.
pub const BASE_PORT: u16 = 5201;

pub fn server_port(flow: usize) -> u16 {
    BASE_PORT.wrapping_add(flow as u16)
}

/// The train router's address on link `k`.
pub fn router_addr(k: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 200u8.wrapping_add((k >> 8) as u8), k as u8, 1)
}

/// The server's side of link `k`.
pub fn link_server_addr(k: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 200u8.wrapping_add((k >> 8) as u8), k as u8, 2)
}

/// Passenger (car) `i`'s address.
pub fn passenger_addr(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 99, i as u8, 2)
}

/// A bond's address (the simulator's bonding: one address over its members).
pub fn bond_addr(b: usize) -> Ipv4Addr {
    Ipv4Addr::new(10, 202, b as u8, 1)
}

/// The link-layer address at one end of link `k`.
pub fn mac(k: usize, end: End) -> [u8; 6] {
    [
        0x02,
        0x72,
        0x70,
        (k >> 8) as u8,
        k as u8,
        match end {
            End::Sender => 1,
            End::Receiver => 2,
        },
    ]
}

/// The train side's port of connection `conn` of flow `flow` (the testbed's kernel picks an
/// ephemeral one; the simulator's captures use this fixed rule, 32768 and up).
pub fn client_port(flow: usize, conn: usize) -> u16 {
    32768 + ((flow * 64 + conn) % 28_000) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_testbed_plan() {
        assert_eq!(router_addr(0), Ipv4Addr::new(10, 200, 0, 1));
        assert_eq!(router_addr(3), Ipv4Addr::new(10, 200, 3, 1));
        assert_eq!(link_server_addr(1), Ipv4Addr::new(10, 200, 1, 2));
        assert_eq!(server_port(2), 5203);
        assert_eq!(passenger_addr(4), Ipv4Addr::new(10, 99, 4, 2));
        assert_eq!(mac(1, End::Receiver), [2, 0x72, 0x70, 0, 1, 2]);
        assert_ne!(client_port(0, 0), client_port(0, 1));
        assert_ne!(client_port(0, 0), client_port(1, 0));
    }
}
