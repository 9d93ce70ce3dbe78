//! Client of the kernel's in-kernel MPTCP path manager over generic netlink.
//!
//! Source: Linux include/uapi/linux/mptcp.h and mptcp_pm.h (family "mptcp_pm", version 1:
//! MPTCP_PM_CMD_GET_ADDR = 3, MPTCP_PM_CMD_SET_FLAGS = 7; MPTCP_PM_ATTR_ADDR = 1 is a nest of
//! MPTCP_PM_ADDR_ATTR_{FAMILY=1 u16, ID=2 u8, ADDR4=3, ADDR6=4, PORT=5 u16, FLAGS=6 u32,
//! IF_IDX=7 s32}; MPTCP_PM_ADDR_FLAG_BACKUP = 1<<2, _FULLMESH = 1<<3), and
//! net/mptcp/pm_netlink.c (`mptcp_pm_nl_set_flags_doit`: the endpoint is looked up by id when
//! no address is given; the BACKUP and FULLMESH bits of the request replace the endpoint's, and
//! a change of BACKUP is sent as MP_PRIO on every live subflow using that endpoint, RFC 8684
//! section 3.3.8). iproute2's ip/ipmptcp.c (`ip mptcp endpoint change id N backup`) issues the
//! same request; it was read to understand the message layout, not copied.
//!
//! Endpoints are also added and removed (`MPTCP_PM_CMD_ADD_ADDR = 1`, `MPTCP_PM_CMD_DEL_ADDR =
//! 2`; `mptcp_pm_nl_add_addr_doit` / `mptcp_pm_nl_del_addr_doit`): adding a `subflow` endpoint
//! makes the kernel open a subflow from it on every established connection
//! (`mptcp_nl_add_subflow_or_signal_addr`), removing one closes every subflow using it and sends
//! REMOVE_ADDR to the peer (`mptcp_nl_remove_subflow_and_signal_addr`, RFC 8684 section 3.4.2),
//! so the peer stops sending on them at once and reinjects what they had in flight.
//!
//! Framing uses the netlink-packet-core / -generic crates; the socket is netlink-sys.

use netlink_packet_core::{
    parse_u16, parse_u32, parse_u8, DecodeError, DefaultNla, Emitable, ErrorContext,
    NetlinkMessage, NetlinkPayload, Nla, NlaBuffer, NlasIterator, Parseable, ParseableParametrized,
    NLA_F_NESTED, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_generic::{
    ctrl::{nlas::GenlCtrlAttrs, GenlCtrl, GenlCtrlCmd},
    GenlFamily, GenlHeader, GenlMessage,
};
use netlink_sys::{protocols::NETLINK_GENERIC, Socket, SocketAddr};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;

pub const MPTCP_PM_NAME: &str = "mptcp_pm";
pub const MPTCP_PM_VER: u8 = 1;
pub const MPTCP_PM_CMD_ADD_ADDR: u8 = 1;
pub const MPTCP_PM_CMD_DEL_ADDR: u8 = 2;
pub const MPTCP_PM_CMD_GET_ADDR: u8 = 3;
pub const MPTCP_PM_CMD_SET_FLAGS: u8 = 7;
pub const MPTCP_PM_ATTR_ADDR: u16 = 1;
pub const MPTCP_PM_ADDR_ATTR_FAMILY: u16 = 1;
pub const MPTCP_PM_ADDR_ATTR_ID: u16 = 2;
pub const MPTCP_PM_ADDR_ATTR_ADDR4: u16 = 3;
pub const MPTCP_PM_ADDR_ATTR_ADDR6: u16 = 4;
pub const MPTCP_PM_ADDR_ATTR_PORT: u16 = 5;
pub const MPTCP_PM_ADDR_ATTR_FLAGS: u16 = 6;
pub const MPTCP_PM_ADDR_ATTR_IF_IDX: u16 = 7;
pub const MPTCP_PM_ADDR_FLAG_SIGNAL: u32 = 1 << 0;
pub const MPTCP_PM_ADDR_FLAG_SUBFLOW: u32 = 1 << 1;
pub const MPTCP_PM_ADDR_FLAG_BACKUP: u32 = 1 << 2;
pub const MPTCP_PM_ADDR_FLAG_FULLMESH: u32 = 1 << 3;

#[derive(Debug, thiserror::Error)]
pub enum PmError {
    #[error("netlink socket: {0}")]
    Io(#[from] std::io::Error),
    #[error("generic netlink family \"mptcp_pm\" not found: is MPTCP built in and enabled (sysctl net.mptcp.enabled=1)?")]
    NoFamily,
    #[error(
        "kernel refused {what}: {source} (needs CAP_NET_ADMIN in the router's network namespace)"
    )]
    Kernel {
        what: String,
        source: std::io::Error,
    },
    #[error("malformed netlink reply: {0}")]
    Decode(String),
    #[error("MPTCP endpoint {0} is not configured (see `ip mptcp endpoint show`)")]
    NoEndpoint(String),
}

/// One attribute of the MPTCP_PM_ATTR_ADDR nest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddrAttr {
    Family(u16),
    Id(u8),
    Addr4(Ipv4Addr),
    Addr6(Ipv6Addr),
    Port(u16),
    Flags(u32),
    IfIdx(i32),
    Other(DefaultNla),
}

impl Nla for AddrAttr {
    fn value_len(&self) -> usize {
        match self {
            AddrAttr::Family(_) | AddrAttr::Port(_) => 2,
            AddrAttr::Id(_) => 1,
            AddrAttr::Addr4(_) | AddrAttr::Flags(_) | AddrAttr::IfIdx(_) => 4,
            AddrAttr::Addr6(_) => 16,
            AddrAttr::Other(n) => n.value_len(),
        }
    }
    fn kind(&self) -> u16 {
        match self {
            AddrAttr::Family(_) => MPTCP_PM_ADDR_ATTR_FAMILY,
            AddrAttr::Id(_) => MPTCP_PM_ADDR_ATTR_ID,
            AddrAttr::Addr4(_) => MPTCP_PM_ADDR_ATTR_ADDR4,
            AddrAttr::Addr6(_) => MPTCP_PM_ADDR_ATTR_ADDR6,
            AddrAttr::Port(_) => MPTCP_PM_ADDR_ATTR_PORT,
            AddrAttr::Flags(_) => MPTCP_PM_ADDR_ATTR_FLAGS,
            AddrAttr::IfIdx(_) => MPTCP_PM_ADDR_ATTR_IF_IDX,
            AddrAttr::Other(n) => n.kind(),
        }
    }
    fn emit_value(&self, b: &mut [u8]) {
        match self {
            AddrAttr::Family(v) => b[..2].copy_from_slice(&v.to_ne_bytes()),
            // The port is in network byte order (nla_get_be16 in the kernel).
            AddrAttr::Port(v) => b[..2].copy_from_slice(&v.to_be_bytes()),
            AddrAttr::Id(v) => b[0] = *v,
            AddrAttr::Addr4(a) => b[..4].copy_from_slice(&a.octets()),
            AddrAttr::Addr6(a) => b[..16].copy_from_slice(&a.octets()),
            AddrAttr::Flags(v) => b[..4].copy_from_slice(&v.to_ne_bytes()),
            AddrAttr::IfIdx(v) => b[..4].copy_from_slice(&v.to_ne_bytes()),
            AddrAttr::Other(n) => n.emit_value(b),
        }
    }
}

impl<'a, T: AsRef<[u8]> + ?Sized> Parseable<NlaBuffer<&'a T>> for AddrAttr {
    fn parse(buf: &NlaBuffer<&'a T>) -> Result<Self, DecodeError> {
        let v = buf.value();
        Ok(match buf.kind() {
            MPTCP_PM_ADDR_ATTR_FAMILY => AddrAttr::Family(parse_u16(v)?),
            MPTCP_PM_ADDR_ATTR_ID => AddrAttr::Id(parse_u8(v)?),
            MPTCP_PM_ADDR_ATTR_ADDR4 if v.len() == 4 => {
                AddrAttr::Addr4(Ipv4Addr::new(v[0], v[1], v[2], v[3]))
            }
            MPTCP_PM_ADDR_ATTR_ADDR6 if v.len() == 16 => {
                let mut o = [0u8; 16];
                o.copy_from_slice(v);
                AddrAttr::Addr6(Ipv6Addr::from(o))
            }
            MPTCP_PM_ADDR_ATTR_PORT if v.len() == 2 => {
                AddrAttr::Port(u16::from_be_bytes([v[0], v[1]]))
            }
            MPTCP_PM_ADDR_ATTR_FLAGS => AddrAttr::Flags(parse_u32(v)?),
            MPTCP_PM_ADDR_ATTR_IF_IDX => AddrAttr::IfIdx(parse_u32(v)? as i32),
            _ => AddrAttr::Other(DefaultNla::parse(buf)?),
        })
    }
}

/// A top-level attribute of an mptcp_pm message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PmAttr {
    Addr(Vec<AddrAttr>),
    Other(DefaultNla),
}

impl Nla for PmAttr {
    fn value_len(&self) -> usize {
        match self {
            PmAttr::Addr(a) => a.as_slice().buffer_len(),
            PmAttr::Other(n) => n.value_len(),
        }
    }
    fn kind(&self) -> u16 {
        match self {
            PmAttr::Addr(_) => MPTCP_PM_ATTR_ADDR | NLA_F_NESTED,
            PmAttr::Other(n) => n.kind(),
        }
    }
    fn emit_value(&self, b: &mut [u8]) {
        match self {
            PmAttr::Addr(a) => a.as_slice().emit(b),
            PmAttr::Other(n) => n.emit_value(b),
        }
    }
}

/// The payload of an mptcp_pm generic netlink message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PmMessage {
    pub cmd: u8,
    pub attrs: Vec<PmAttr>,
}

impl GenlFamily for PmMessage {
    fn family_name() -> &'static str {
        MPTCP_PM_NAME
    }
    fn command(&self) -> u8 {
        self.cmd
    }
    fn version(&self) -> u8 {
        MPTCP_PM_VER
    }
}

impl Emitable for PmMessage {
    fn buffer_len(&self) -> usize {
        self.attrs.as_slice().buffer_len()
    }
    fn emit(&self, buffer: &mut [u8]) {
        self.attrs.as_slice().emit(buffer)
    }
}

impl ParseableParametrized<[u8], GenlHeader> for PmMessage {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        let mut attrs = Vec::new();
        for nla in NlasIterator::new(buf) {
            let nla = nla.context("mptcp_pm attribute")?;
            if nla.kind() == MPTCP_PM_ATTR_ADDR {
                let mut inner = Vec::new();
                for a in NlasIterator::new(nla.value()) {
                    inner.push(AddrAttr::parse(&a.context("mptcp_pm address attribute")?)?);
                }
                attrs.push(PmAttr::Addr(inner));
            } else {
                attrs.push(PmAttr::Other(DefaultNla::parse(&nla)?));
            }
        }
        Ok(PmMessage {
            cmd: header.cmd,
            attrs,
        })
    }
}

/// An MPTCP endpoint as the kernel reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub id: u8,
    pub addr: Option<IpAddr>,
    pub flags: u32,
    pub ifindex: Option<i32>,
}

impl Endpoint {
    pub fn is_backup(&self) -> bool {
        self.flags & MPTCP_PM_ADDR_FLAG_BACKUP != 0
    }
    fn from_attrs(attrs: &[AddrAttr]) -> Option<Endpoint> {
        let mut e = Endpoint {
            id: 0,
            addr: None,
            flags: 0,
            ifindex: None,
        };
        let mut have_id = false;
        for a in attrs {
            match a {
                AddrAttr::Id(i) => {
                    e.id = *i;
                    have_id = true
                }
                AddrAttr::Addr4(a) => e.addr = Some(IpAddr::V4(*a)),
                AddrAttr::Addr6(a) => e.addr = Some(IpAddr::V6(*a)),
                AddrAttr::Flags(f) => e.flags = *f,
                AddrAttr::IfIdx(i) => e.ifindex = Some(*i),
                _ => {}
            }
        }
        have_id.then_some(e)
    }
}

/// The flags word to send in SET_FLAGS so that only BACKUP changes: the kernel replaces both
/// BACKUP and FULLMESH from the request, so FULLMESH is carried over from the current flags.
pub fn set_flags_word(current: u32, backup: bool) -> u32 {
    (current & MPTCP_PM_ADDR_FLAG_FULLMESH) | if backup { MPTCP_PM_ADDR_FLAG_BACKUP } else { 0 }
}

/// Builds the ADD_ADDR request payload: endpoint `id` on `addr` (bound to interface `ifindex`
/// when given) with `flags`.
pub fn add_addr_request(id: u8, addr: IpAddr, flags: u32, ifindex: Option<u32>) -> PmMessage {
    let mut a = vec![
        AddrAttr::Family(match addr {
            IpAddr::V4(_) => libc::AF_INET as u16,
            IpAddr::V6(_) => libc::AF_INET6 as u16,
        }),
        AddrAttr::Id(id),
        match addr {
            IpAddr::V4(v) => AddrAttr::Addr4(v),
            IpAddr::V6(v) => AddrAttr::Addr6(v),
        },
        AddrAttr::Flags(flags),
    ];
    if let Some(i) = ifindex {
        a.push(AddrAttr::IfIdx(i as i32));
    }
    PmMessage {
        cmd: MPTCP_PM_CMD_ADD_ADDR,
        attrs: vec![PmAttr::Addr(a)],
    }
}

/// Builds the DEL_ADDR request payload for endpoint `id`.
pub fn del_addr_request(id: u8) -> PmMessage {
    PmMessage {
        cmd: MPTCP_PM_CMD_DEL_ADDR,
        attrs: vec![PmAttr::Addr(vec![AddrAttr::Id(id)])],
    }
}

/// Builds the SET_FLAGS request payload for endpoint `id`.
pub fn set_flags_request(id: u8, flags: u32) -> PmMessage {
    PmMessage {
        cmd: MPTCP_PM_CMD_SET_FLAGS,
        attrs: vec![PmAttr::Addr(vec![AddrAttr::Id(id), AddrAttr::Flags(flags)])],
    }
}

/// A synchronous client; every call is one request and its reply (bounded by a 2 s receive
/// timeout), so it is cheap to call from the controller's tick.
pub struct PathManager {
    sock: Socket,
    family: u16,
    seq: u32,
}

impl PathManager {
    /// Opens a socket in the caller's network namespace and resolves the mptcp_pm family.
    pub fn open() -> Result<PathManager, PmError> {
        let mut sock = Socket::new(NETLINK_GENERIC)?;
        sock.bind_auto()?;
        sock.connect(&SocketAddr::new(0, 0))?;
        let tv = libc::timeval {
            tv_sec: 2,
            tv_usec: 0,
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
            return Err(std::io::Error::last_os_error().into());
        }
        let mut pm = PathManager {
            sock,
            family: 0,
            seq: 1,
        };
        let mut ctrl = GenlMessage::from_payload(GenlCtrl {
            cmd: GenlCtrlCmd::GetFamily,
            nlas: vec![GenlCtrlAttrs::FamilyName(MPTCP_PM_NAME.to_string())],
        });
        ctrl.finalize();
        let replies = match pm.request(ctrl, NLM_F_REQUEST | NLM_F_ACK, "family lookup") {
            Ok(r) => r,
            Err(PmError::Kernel { source, .. }) if source.raw_os_error() == Some(libc::ENOENT) => {
                return Err(PmError::NoFamily)
            }
            Err(e) => return Err(e),
        };
        pm.family = replies
            .iter()
            .flat_map(|m| m.payload.nlas.iter())
            .find_map(|a| match a {
                GenlCtrlAttrs::FamilyId(id) => Some(*id),
                _ => None,
            })
            .ok_or(PmError::NoFamily)?;
        Ok(pm)
    }

    fn request<F>(
        &mut self,
        msg: GenlMessage<F>,
        flags: u16,
        what: &str,
    ) -> Result<Vec<GenlMessage<F>>, PmError>
    where
        F: GenlFamily + Emitable + ParseableParametrized<[u8], GenlHeader> + std::fmt::Debug,
    {
        let mut nl = NetlinkMessage::from(msg);
        nl.header.flags = flags;
        self.seq = self.seq.wrapping_add(1);
        nl.header.sequence_number = self.seq;
        nl.finalize();
        let mut tx = vec![0u8; nl.buffer_len()];
        nl.serialize(&mut tx);
        self.sock.send(&tx, 0)?;
        let mut out = Vec::new();
        // Bounded: every reply ends with an ACK, an error or NLMSG_DONE; a silent kernel ends the
        // loop through the receive timeout.
        for _ in 0..100_000 {
            let (buf, _) = self.sock.recv_from_full()?;
            let mut off = 0;
            while off < buf.len() {
                let m = NetlinkMessage::<GenlMessage<F>>::deserialize(&buf[off..])
                    .map_err(|e| PmError::Decode(format!("{what}: {e}")))?;
                let len = m.header.length as usize;
                if m.header.sequence_number != self.seq {
                    off += len.max(1);
                    continue;
                }
                match m.payload {
                    NetlinkPayload::Error(e) => {
                        if e.code.is_none() {
                            return Ok(out);
                        }
                        return Err(PmError::Kernel {
                            what: what.to_string(),
                            source: e.to_io(),
                        });
                    }
                    NetlinkPayload::Done(_) => return Ok(out),
                    NetlinkPayload::InnerMessage(g) => out.push(g),
                    _ => {}
                }
                if len == 0 {
                    break;
                }
                off += len;
            }
        }
        Err(PmError::Decode(format!("{what}: reply never ended")))
    }

    fn pm_msg(&self, payload: PmMessage) -> GenlMessage<PmMessage> {
        let mut m = GenlMessage::from_payload(payload);
        m.set_resolved_family_id(self.family);
        m.finalize();
        m
    }

    /// Every endpoint configured in the path manager (`ip mptcp endpoint show`).
    pub fn endpoints(&mut self) -> Result<Vec<Endpoint>, PmError> {
        let m = self.pm_msg(PmMessage {
            cmd: MPTCP_PM_CMD_GET_ADDR,
            attrs: vec![],
        });
        let replies = self.request(m, NLM_F_REQUEST | NLM_F_DUMP, "endpoint dump")?;
        Ok(replies
            .iter()
            .flat_map(|g| g.payload.attrs.iter())
            .filter_map(|a| match a {
                PmAttr::Addr(v) => Endpoint::from_attrs(v),
                _ => None,
            })
            .collect())
    }

    /// Finds an endpoint by id.
    pub fn endpoint(&mut self, id: u8) -> Result<Endpoint, PmError> {
        self.endpoints()?
            .into_iter()
            .find(|e| e.id == id)
            .ok_or_else(|| PmError::NoEndpoint(format!("id {id}")))
    }

    /// Resolves an endpoint id from its local address.
    pub fn endpoint_id_for(&mut self, addr: IpAddr) -> Result<u8, PmError> {
        self.endpoints()?
            .into_iter()
            .find(|e| e.addr == Some(addr))
            .map(|e| e.id)
            .ok_or_else(|| PmError::NoEndpoint(format!("with address {addr}")))
    }

    /// Adds endpoint `id` on `addr` with `flags` (bound to `ifindex` when given).
    pub fn add_endpoint(
        &mut self,
        id: u8,
        addr: IpAddr,
        flags: u32,
        ifindex: Option<u32>,
    ) -> Result<(), PmError> {
        let m = self.pm_msg(add_addr_request(id, addr, flags, ifindex));
        self.request(
            m,
            NLM_F_REQUEST | NLM_F_ACK,
            &format!("add endpoint {id} {addr}"),
        )?;
        Ok(())
    }

    /// Removes endpoint `id`.
    pub fn del_endpoint(&mut self, id: u8) -> Result<(), PmError> {
        let m = self.pm_msg(del_addr_request(id));
        self.request(
            m,
            NLM_F_REQUEST | NLM_F_ACK,
            &format!("remove endpoint {id}"),
        )?;
        Ok(())
    }

    /// Sets or clears the BACKUP flag of endpoint `id`, keeping its FULLMESH flag. The kernel
    /// sends MP_PRIO on every established subflow using the endpoint.
    pub fn set_backup(&mut self, id: u8, backup: bool) -> Result<(), PmError> {
        let cur = self.endpoint(id)?;
        let m = self.pm_msg(set_flags_request(id, set_flags_word(cur.flags, backup)));
        self.request(
            m,
            NLM_F_REQUEST | NLM_F_ACK,
            &format!(
                "set endpoint {id} {}",
                if backup { "backup" } else { "regular" }
            ),
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_word_keeps_fullmesh_and_sets_only_backup() {
        // subflow|fullmesh = 0b1010; backup on -> fullmesh|backup = 0b1100
        assert_eq!(set_flags_word(0b1010, true), 0b1100);
        // subflow|backup = 0b0110; backup off -> 0
        assert_eq!(set_flags_word(0b0110, false), 0);
        assert_eq!(set_flags_word(0, true), MPTCP_PM_ADDR_FLAG_BACKUP);
    }

    #[test]
    fn set_flags_request_layout_matches_uapi() {
        let p = set_flags_request(3, MPTCP_PM_ADDR_FLAG_BACKUP);
        let mut buf = vec![0u8; p.buffer_len()];
        p.emit(&mut buf);
        // nest header: len = 4 + (4+1 padded to 8) + (4+4) = 20, type = 1 | NLA_F_NESTED
        assert_eq!(buf.len(), 20);
        assert_eq!(u16::from_ne_bytes([buf[0], buf[1]]), 20);
        assert_eq!(u16::from_ne_bytes([buf[2], buf[3]]), 1 | 0x8000);
        // id attribute: len 5, type 2, value 3
        assert_eq!(u16::from_ne_bytes([buf[4], buf[5]]), 5);
        assert_eq!(u16::from_ne_bytes([buf[6], buf[7]]), 2);
        assert_eq!(buf[8], 3);
        // flags attribute: len 8, type 6, value 4
        assert_eq!(u16::from_ne_bytes([buf[12], buf[13]]), 8);
        assert_eq!(u16::from_ne_bytes([buf[14], buf[15]]), 6);
        assert_eq!(u32::from_ne_bytes([buf[16], buf[17], buf[18], buf[19]]), 4);
        // and it parses back
        let back = PmMessage::parse_with_param(&buf, GenlHeader { cmd: 7, version: 1 }).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn add_and_del_requests_layout() {
        let p = add_addr_request(
            4,
            IpAddr::V4(Ipv4Addr::new(10, 0, 0, 7)),
            MPTCP_PM_ADDR_FLAG_SUBFLOW | MPTCP_PM_ADDR_FLAG_BACKUP,
            Some(9),
        );
        assert_eq!(p.cmd, 1);
        let mut buf = vec![0u8; p.buffer_len()];
        p.emit(&mut buf);
        // nest header 4 + family 8 (2 padded) + id 8 (1 padded) + addr4 8 + flags 8 + ifidx 8
        assert_eq!(buf.len(), 44);
        let back = PmMessage::parse_with_param(&buf, GenlHeader { cmd: 1, version: 1 }).unwrap();
        assert_eq!(back, p);
        let PmAttr::Addr(a) = &back.attrs[0] else {
            panic!()
        };
        assert_eq!(a[0], AddrAttr::Family(2));
        assert_eq!(a[3], AddrAttr::Flags(6));
        assert_eq!(a[4], AddrAttr::IfIdx(9));
        let d = del_addr_request(4);
        assert_eq!(d.cmd, 2);
        assert_eq!(d.attrs, vec![PmAttr::Addr(vec![AddrAttr::Id(4)])]);
    }

    #[test]
    fn endpoint_from_dump_attributes() {
        let e = Endpoint::from_attrs(&[
            AddrAttr::Family(2),
            AddrAttr::Id(2),
            AddrAttr::Addr4(Ipv4Addr::new(10, 2, 0, 2)),
            AddrAttr::Flags(MPTCP_PM_ADDR_FLAG_SUBFLOW | MPTCP_PM_ADDR_FLAG_BACKUP),
        ])
        .unwrap();
        assert_eq!(e.id, 2);
        assert!(e.is_backup());
        assert_eq!(e.addr, Some(IpAddr::V4(Ipv4Addr::new(10, 2, 0, 2))));
        assert!(Endpoint::from_attrs(&[AddrAttr::Flags(1)]).is_none());
    }
}
