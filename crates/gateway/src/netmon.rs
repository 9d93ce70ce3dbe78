//! The carriers' interfaces as the kernel sees them: link state and addresses, read and followed
//! over the routing netlink.
//!
//! Source: rtnetlink(7) and include/uapi/linux/rtnetlink.h: a dump of `RTM_GETLINK` and
//! `RTM_GETADDR` (`NLM_F_DUMP`) lists every interface and address; a socket bound to the
//! multicast groups `RTMGRP_LINK` (1), `RTMGRP_IPV4_IFADDR` (0x10) and `RTMGRP_IPV6_IFADDR`
//! (0x100) receives `RTM_NEWLINK`/`RTM_DELLINK` and `RTM_NEWADDR`/`RTM_DELADDR` as they happen.
//! An interface is *up* when it is administratively up and operational (`IFF_UP` and
//! `IFF_RUNNING`, netdevice(7)); an address is *usable* for a subflow when its scope is global
//! and it is neither tentative, deprecated nor failed duplicate address detection (`IFA_F_*`).
//!
//! Events only say *that* something changed on an interface: the controller then reads the
//! state afresh ([`snapshot`]), so a lost event (a full socket buffer, `ENOBUFS`, reported as a
//! resync) costs nothing but a later reconciliation. Messages are framed and parsed by the
//! netlink-packet-route crate; the sockets are netlink-sys.

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressFlags, AddressMessage, AddressScope};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::RouteNetlinkMessage;
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::collections::BTreeMap;
use std::io;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::time::Instant;

const RTMGRP_LINK: u32 = 0x1;
const RTMGRP_IPV4_IFADDR: u32 = 0x10;
const RTMGRP_IPV6_IFADDR: u32 = 0x100;

/// One address of an interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfAddr {
    pub addr: IpAddr,
    /// Global scope, not tentative, deprecated or duplicate.
    pub usable: bool,
}

/// One interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfState {
    pub index: u32,
    pub name: String,
    /// `IFF_UP` and `IFF_RUNNING`.
    pub up: bool,
    /// In the kernel's order (the primary address of a subnet first).
    pub addrs: Vec<IfAddr>,
}

impl IfState {
    /// The address a carrier's endpoint should use: `keep` while it is still usable on the
    /// interface, otherwise the first usable address of `keep`'s family (any family without it).
    pub fn endpoint_addr(&self, keep: Option<IpAddr>, v6: Option<bool>) -> Option<IpAddr> {
        let usable = |a: &&IfAddr| a.usable;
        if let Some(k) = keep {
            if self.addrs.iter().filter(usable).any(|a| a.addr == k) {
                return Some(k);
            }
        }
        let want_v6 = keep.map(|k| k.is_ipv6()).or(v6);
        self.addrs
            .iter()
            .filter(usable)
            .find(|a| want_v6.is_none_or(|w| a.addr.is_ipv6() == w))
            .map(|a| a.addr)
    }
}

/// A change on an interface (index 0: resynchronise every interface).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetEvent {
    pub at: Instant,
    pub ifindex: u32,
}

fn request(sock: &Socket, seq: u32, msg: RouteNetlinkMessage) -> io::Result<()> {
    let mut hdr = NetlinkHeader::default();
    hdr.flags = NLM_F_REQUEST | NLM_F_DUMP;
    hdr.sequence_number = seq;
    let mut nl = NetlinkMessage::new(hdr, NetlinkPayload::from(msg));
    nl.finalize();
    let mut buf = vec![0u8; nl.buffer_len()];
    nl.serialize(&mut buf);
    sock.send(&buf, 0)?;
    Ok(())
}

/// Reads the replies to dump `seq` until NLMSG_DONE.
fn dump(sock: &Socket, seq: u32) -> io::Result<Vec<RouteNetlinkMessage>> {
    let mut out = Vec::new();
    // Bounded: a dump ends with NLMSG_DONE; a silent kernel ends it through the receive timeout.
    for _ in 0..1_000_000 {
        let (buf, _) = sock.recv_from_full()?;
        let mut off = 0;
        while off < buf.len() {
            let m = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&buf[off..])
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
            let len = m.header.length as usize;
            if m.header.sequence_number == seq {
                match m.payload {
                    NetlinkPayload::Done(_) => return Ok(out),
                    NetlinkPayload::Error(e) if e.code.is_some() => return Err(e.to_io()),
                    NetlinkPayload::InnerMessage(r) => out.push(r),
                    _ => {}
                }
            }
            if len == 0 {
                break;
            }
            off += len;
        }
    }
    Err(io::Error::other("rtnetlink dump never ended"))
}

fn set_rcv_timeout(sock: &Socket, d: Duration) -> io::Result<()> {
    let tv = libc::timeval {
        tv_sec: d.as_secs() as libc::time_t,
        tv_usec: d.subsec_micros() as libc::suseconds_t,
    };
    // SAFETY: setsockopt with a valid timeval of the size passed.
    let rc = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const libc::timeval as *const libc::c_void,
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn link_state(m: &LinkMessage) -> IfState {
    let name = m
        .attributes
        .iter()
        .find_map(|a| match a {
            LinkAttribute::IfName(n) => Some(n.clone()),
            _ => None,
        })
        .unwrap_or_default();
    let f = m.header.flags;
    IfState {
        index: m.header.index,
        name,
        up: f.contains(LinkFlags::Up) && f.contains(LinkFlags::Running),
        addrs: Vec::new(),
    }
}

/// The address of an RTM_NEWADDR message: IFA_LOCAL where given (IPv4, also on point-to-point
/// links), else IFA_ADDRESS; and whether it is usable.
pub fn address_of(m: &AddressMessage) -> Option<IfAddr> {
    let mut local = None;
    let mut address = None;
    let mut flags = AddressFlags::from_bits_retain(m.header.flags.bits() as u32);
    for a in &m.attributes {
        match a {
            AddressAttribute::Local(x) => local = Some(*x),
            AddressAttribute::Address(x) => address = Some(*x),
            AddressAttribute::Flags(f) => flags = *f,
            _ => {}
        }
    }
    let addr = local.or(address)?;
    let bad = AddressFlags::Tentative | AddressFlags::Deprecated | AddressFlags::Dadfailed;
    Some(IfAddr {
        addr,
        usable: m.header.scope == AddressScope::Universe && !flags.intersects(bad),
    })
}

/// Every interface named in `names` (absent ones are missing from the map), with its state and
/// addresses, read from the kernel now.
pub fn snapshot(names: &[String]) -> io::Result<BTreeMap<String, IfState>> {
    let mut sock = Socket::new(NETLINK_ROUTE)?;
    sock.bind_auto()?;
    sock.connect(&SocketAddr::new(0, 0))?;
    set_rcv_timeout(&sock, Duration::from_secs(2))?;
    request(
        &sock,
        1,
        RouteNetlinkMessage::GetLink(LinkMessage::default()),
    )?;
    let mut by_index = BTreeMap::new();
    for m in dump(&sock, 1)? {
        if let RouteNetlinkMessage::NewLink(l) = m {
            let st = link_state(&l);
            if names.contains(&st.name) {
                by_index.insert(st.index, st);
            }
        }
    }
    request(
        &sock,
        2,
        RouteNetlinkMessage::GetAddress(AddressMessage::default()),
    )?;
    for m in dump(&sock, 2)? {
        if let RouteNetlinkMessage::NewAddress(a) = m {
            if let (Some(st), Some(addr)) = (by_index.get_mut(&a.header.index), address_of(&a)) {
                st.addrs.push(addr);
            }
        }
    }
    Ok(by_index
        .into_values()
        .map(|s| (s.name.clone(), s))
        .collect())
}

/// Follows link and address changes on a thread of its own (netlink sockets block), sending one
/// [`NetEvent`] per change until `tx` is closed. Fails only if the socket cannot be set up.
pub fn watch(tx: mpsc::UnboundedSender<NetEvent>) -> io::Result<std::thread::JoinHandle<()>> {
    let mut sock = Socket::new(NETLINK_ROUTE)?;
    sock.bind(&SocketAddr::new(
        0,
        RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
    ))?;
    // Wake up once a second to notice that the receiver is gone.
    set_rcv_timeout(&sock, Duration::from_secs(1))?;
    let h = std::thread::Builder::new()
        .name("railpath-netmon".into())
        .spawn(move || {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                if tx.is_closed() {
                    return;
                }
                let n = match sock.recv(&mut &mut buf[..], 0) {
                    Ok(n) => n,
                    Err(e)
                        if matches!(
                            e.kind(),
                            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                        ) =>
                    {
                        continue
                    }
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                    Err(e) => {
                        // ENOBUFS: events were dropped; everything is read afresh.
                        tracing::debug!(error = %e, "rtnetlink monitor: resynchronising");
                        let _ = tx.send(NetEvent {
                            at: Instant::now(),
                            ifindex: 0,
                        });
                        if e.raw_os_error() != Some(libc::ENOBUFS) {
                            std::thread::sleep(Duration::from_millis(100));
                        }
                        continue;
                    }
                };
                let at = Instant::now();
                let mut off = 0;
                while off < n {
                    let Ok(m) = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&buf[off..n])
                    else {
                        let _ = tx.send(NetEvent { at, ifindex: 0 });
                        break;
                    };
                    let len = m.header.length as usize;
                    let ifindex = match &m.payload {
                        NetlinkPayload::InnerMessage(
                            RouteNetlinkMessage::NewLink(l) | RouteNetlinkMessage::DelLink(l),
                        ) => Some(l.header.index),
                        NetlinkPayload::InnerMessage(
                            RouteNetlinkMessage::NewAddress(a) | RouteNetlinkMessage::DelAddress(a),
                        ) => Some(a.header.index),
                        _ => None,
                    };
                    if let Some(ifindex) = ifindex {
                        if tx.send(NetEvent { at, ifindex }).is_err() {
                            return;
                        }
                    }
                    if len == 0 {
                        break;
                    }
                    off += len;
                }
            }
        })?;
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    fn st(addrs: &[(&str, bool)]) -> IfState {
        IfState {
            index: 3,
            name: "wwan0".into(),
            up: true,
            addrs: addrs
                .iter()
                .map(|(a, u)| IfAddr {
                    addr: a.parse().unwrap(),
                    usable: *u,
                })
                .collect(),
        }
    }

    #[test]
    fn endpoint_address_is_kept_while_usable_else_the_first_usable_of_its_family() {
        let keep: IpAddr = "10.0.0.2".parse().unwrap();
        // Still there: kept even though another address comes first.
        let s = st(&[("10.0.0.9", true), ("10.0.0.2", true)]);
        assert_eq!(s.endpoint_addr(Some(keep), None), Some(keep));
        // Gone (a modem re-attached with a new address): the first usable IPv4 one.
        let s = st(&[
            ("2001:db8::1", true),
            ("10.0.0.7", false),
            ("10.0.0.9", true),
        ]);
        assert_eq!(
            s.endpoint_addr(Some(keep), None),
            Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 9)))
        );
        // Still listed but tentative/deprecated: not used.
        let s = st(&[("10.0.0.2", false)]);
        assert_eq!(s.endpoint_addr(Some(keep), None), None);
        // No previous address: the family asked for, or any.
        let s = st(&[("2001:db8::1", true), ("10.0.0.9", true)]);
        assert_eq!(
            s.endpoint_addr(None, Some(false)),
            Some("10.0.0.9".parse().unwrap())
        );
        assert_eq!(
            s.endpoint_addr(None, None),
            Some("2001:db8::1".parse().unwrap())
        );
    }

    #[test]
    fn address_messages_give_local_address_and_usability() {
        let mut m = AddressMessage::default();
        m.header.index = 3;
        m.header.scope = AddressScope::Universe;
        m.attributes = vec![
            AddressAttribute::Address("10.0.0.1".parse().unwrap()),
            AddressAttribute::Local("10.0.0.2".parse().unwrap()),
        ];
        assert_eq!(
            address_of(&m),
            Some(IfAddr {
                addr: "10.0.0.2".parse().unwrap(),
                usable: true
            })
        );
        m.attributes
            .push(AddressAttribute::Flags(AddressFlags::Tentative));
        assert!(!address_of(&m).unwrap().usable);
        m.attributes.pop();
        m.header.scope = AddressScope::Link;
        assert!(!address_of(&m).unwrap().usable);
        m.attributes.clear();
        assert_eq!(address_of(&m), None);
    }
}
