//! The few socket options the proxy needs that std, tokio and socket2 do not expose.
//!
//! - SO_ORIGINAL_DST (linux/netfilter_ipv4.h, value 80 at SOL_IP) and IP6T_SO_ORIGINAL_DST
//!   (linux/netfilter_ipv6/ip6_tables.h, 80 at SOL_IPV6): the destination a connection had before
//!   nftables' `redirect`/`dnat` rewrote it, read from conntrack.
//! - TCP_IS_MPTCP (linux/tcp.h, 43 at SOL_TCP, kernel >= 5.16): 1 on an MPTCP socket that still
//!   runs MPTCP; an MPTCP socket that fell back to TCP forwards the query to its one subflow, which
//!   answers 0 (net/mptcp/sockopt.c, `mptcp_getsockopt` -> `__mptcp_tcp_fallback`).
//! - MPTCP_TCPINFO (linux/mptcp.h, 2 at SOL_MPTCP = 284, kernel >= 5.16): a `struct
//!   mptcp_subflow_data` header {size_subflow_data, num_subflows, size_kernel, size_user} (16
//!   bytes, 8-aligned) followed by one `struct tcp_info` per subflow; the kernel fills
//!   `num_subflows` and `size_kernel` and copies min(size_user, size_kernel) bytes per entry.
//! - Socket creation with IPPROTO_MPTCP (262) and the errors that mean "no MPTCP here"
//!   (Documentation/networking/mptcp.rst: EPROTONOSUPPORT/ENOPROTOOPT when disabled or absent).

use socket2::{Domain, Protocol, Socket, Type};
use std::io;
use std::mem::{size_of, MaybeUninit};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::AsRawFd;

pub const SO_ORIGINAL_DST: libc::c_int = 80;
pub const IP6T_SO_ORIGINAL_DST: libc::c_int = 80;
pub const TCP_IS_MPTCP: libc::c_int = 43;
pub const SOL_MPTCP: libc::c_int = 284;
pub const MPTCP_TCPINFO: libc::c_int = 2;

/// Smoothed RTT (tcpi_rtt, microseconds) of every subflow of an MPTCP socket, at most 8.
pub fn subflow_rtts_us<S: AsRawFd>(s: &S) -> io::Result<Vec<u32>> {
    const HDR: usize = 16;
    const MAX: usize = 8;
    let entry = size_of::<libc::tcp_info>();
    // u64 storage keeps the header 8-aligned as the kernel's struct is.
    let mut buf = vec![0u64; (HDR + MAX * entry).div_ceil(8)];
    let bytes: &mut [u8] =
        // SAFETY: reinterpreting owned u64 storage as bytes of the same total length.
        unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), buf.len() * 8) };
    bytes[0..4].copy_from_slice(&(HDR as u32).to_ne_bytes());
    bytes[12..16].copy_from_slice(&(entry as u32).to_ne_bytes());
    let mut len = (HDR + MAX * entry) as libc::socklen_t;
    // SAFETY: the buffer holds `len` bytes.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            SOL_MPTCP,
            MPTCP_TCPINFO,
            bytes.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let n = u32::from_ne_bytes([bytes[4], bytes[5], bytes[6], bytes[7]]) as usize;
    let size_kernel = u32::from_ne_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize;
    let copied = entry.min(size_kernel);
    let rtt_off = std::mem::offset_of!(libc::tcp_info, tcpi_rtt);
    let mut out = Vec::new();
    for i in 0..n.min(MAX) {
        let at = HDR + i * entry + rtt_off;
        if rtt_off + 4 > copied || at + 4 > len as usize {
            break;
        }
        out.push(u32::from_ne_bytes([
            bytes[at],
            bytes[at + 1],
            bytes[at + 2],
            bytes[at + 3],
        ]));
    }
    Ok(out)
}

/// The original destination of a redirected connection.
pub fn original_dst<S: AsRawFd>(s: &S, local_is_v6: bool) -> io::Result<SocketAddr> {
    let fd = s.as_raw_fd();
    if !local_is_v6 {
        let mut sa = MaybeUninit::<libc::sockaddr_in>::zeroed();
        let mut len = size_of::<libc::sockaddr_in>() as libc::socklen_t;
        // SAFETY: the kernel writes at most `len` bytes into `sa`.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_IP,
                SO_ORIGINAL_DST,
                sa.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: zero-initialised and filled by the kernel.
        let sa = unsafe { sa.assume_init() };
        let ip = Ipv4Addr::from(u32::from_be(sa.sin_addr.s_addr));
        Ok(SocketAddr::V4(SocketAddrV4::new(
            ip,
            u16::from_be(sa.sin_port),
        )))
    } else {
        let mut sa = MaybeUninit::<libc::sockaddr_in6>::zeroed();
        let mut len = size_of::<libc::sockaddr_in6>() as libc::socklen_t;
        // SAFETY: as above.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_IPV6,
                IP6T_SO_ORIGINAL_DST,
                sa.as_mut_ptr().cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: as above.
        let sa = unsafe { sa.assume_init() };
        let ip = Ipv6Addr::from(sa.sin6_addr.s6_addr);
        Ok(SocketAddr::V6(SocketAddrV6::new(
            ip,
            u16::from_be(sa.sin6_port),
            sa.sin6_flowinfo,
            sa.sin6_scope_id,
        )))
    }
}

/// Whether a connected socket runs MPTCP (false for plain TCP and for MPTCP fallen back to TCP).
pub fn is_mptcp<S: AsRawFd>(s: &S) -> io::Result<bool> {
    let mut v: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` is a c_int and `len` its size.
    let rc = unsafe {
        libc::getsockopt(
            s.as_raw_fd(),
            libc::SOL_TCP,
            TCP_IS_MPTCP,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v != 0)
}

/// True for the errors socket(..., IPPROTO_MPTCP) gives when MPTCP is absent or disabled.
pub fn is_no_mptcp_error(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EPROTONOSUPPORT)
            | Some(libc::ENOPROTOOPT)
            | Some(libc::EINVAL)
            | Some(libc::EAFNOSUPPORT)
    )
}

/// A non-blocking stream socket for `addr`'s family: MPTCP when `mptcp` and the kernel has it,
/// else TCP. Returns the socket and whether it is MPTCP.
pub fn stream_socket(addr: &SocketAddr, mptcp: bool) -> io::Result<(Socket, bool)> {
    let domain = Domain::for_address(*addr);
    let (s, is_mp) = if mptcp {
        match Socket::new(domain, Type::STREAM, Some(Protocol::MPTCP)) {
            Ok(s) => (s, true),
            Err(e) if is_no_mptcp_error(&e) => (
                Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?,
                false,
            ),
            Err(e) => return Err(e),
        }
    } else {
        (
            Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?,
            false,
        )
    };
    s.set_nonblocking(true)?;
    s.set_cloexec(true)?;
    Ok((s, is_mp))
}

/// Whether this kernel lets us create an MPTCP socket (used by tests to skip loudly).
pub fn mptcp_available() -> bool {
    Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::MPTCP)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_mptcp_errors_are_recognised() {
        assert!(is_no_mptcp_error(&io::Error::from_raw_os_error(
            libc::EPROTONOSUPPORT
        )));
        assert!(!is_no_mptcp_error(&io::Error::from_raw_os_error(
            libc::EMFILE
        )));
    }

    #[test]
    fn loopback_mptcp_and_tcp_are_told_apart() {
        if !mptcp_available() {
            eprintln!(
                "SKIP loopback_mptcp_and_tcp_are_told_apart: MPTCP is not available in this kernel"
            );
            return;
        }
        // An MPTCP client to an MPTCP listener runs MPTCP; to a plain TCP listener it falls back.
        for (listener_mptcp, expect) in [(true, true), (false, false)] {
            let any: SocketAddr = "127.0.0.1:0".parse().unwrap();
            let (l, _) = stream_socket(&any, listener_mptcp).unwrap();
            l.set_nonblocking(false).unwrap();
            l.bind(&any.into()).unwrap();
            l.listen(8).unwrap();
            let addr = l.local_addr().unwrap().as_socket().unwrap();
            let (c, is_mp) = stream_socket(&addr, true).unwrap();
            assert!(is_mp);
            c.set_nonblocking(false).unwrap();
            c.connect(&addr.into()).unwrap();
            let (_a, _) = l.accept().unwrap();
            assert_eq!(
                is_mptcp(&c).unwrap(),
                expect,
                "listener_mptcp={listener_mptcp}"
            );
        }
    }
}
