//! Frames on the wire: Ethernet II / IPv4 / TCP or UDP built with etherparse (headers,
//! lengths, checksums; payload bytes are zeros), TCP options laid out as Linux lays them, and
//! the parse of a captured frame back into the fields the analysis reads.
//!
//! Option order (Linux `tcp_options_write()`, net/ipv4/tcp_output.c): SYN `MSS, SACK_PERM,
//! TS, NOP, WS`, then MPTCP; established `NOP, NOP, TS`, then MPTCP, then `NOP, NOP, SACK`
//! with as many blocks as the 40 bytes of option space leave room for (Linux
//! `tcp_established_options()` gives SACK what timestamps and MPTCP left).

use crate::mptcp::{DecodeError, MptcpOption};
use etherparse::{PacketBuilder, TcpOptionElement, TcpOptions};
use std::net::Ipv4Addr;

/// TCP option space, bytes (RFC 9293 3.1: data offset of at most 15 words).
pub const OPTION_SPACE: usize = 40;

/// Zero payload bytes, enough for any IPv4 packet.
static ZEROS: [u8; 65_535] = [0; 65_535];

/// One end of a packet: link-layer address, IPv4 address, port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Host {
    pub mac: [u8; 6],
    pub ip: Ipv4Addr,
    pub port: u16,
}

/// A TCP segment's header fields; the options are given laid out (see [`Options`]).
#[derive(Debug, Clone, Copy)]
pub struct TcpFields<'a> {
    pub seq: u32,
    pub ack: Option<u32>,
    pub syn: bool,
    pub fin: bool,
    pub psh: bool,
    pub window: u16,
    pub options: &'a [u8],
    pub payload_len: usize,
}

/// TCP options being laid out for one segment (at most [`OPTION_SPACE`] bytes).
#[derive(Debug, Default)]
pub struct Options {
    buf: Vec<u8>,
}

impl Options {
    pub fn clear(&mut self) {
        self.buf.clear();
    }
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }
    /// Standard options (etherparse lays them out).
    pub fn push(&mut self, elements: &[TcpOptionElement]) {
        if let Ok(o) = TcpOptions::try_from_elements(elements) {
            self.buf.extend_from_slice(o.as_slice());
        }
    }
    /// An MPTCP option.
    pub fn push_mptcp(&mut self, o: &MptcpOption) {
        o.encode(&mut self.buf);
    }
    /// SACK blocks (most recent first), as many as fit: `NOP, NOP, SACK`.
    pub fn push_sack(&mut self, blocks: &[(u32, u32)]) {
        let room = OPTION_SPACE.saturating_sub(self.buf.len() + 4) / 8;
        let n = blocks.len().min(room).min(4);
        if n == 0 {
            return;
        }
        let mut rest = [None; 3];
        for (k, b) in blocks[1..n].iter().enumerate() {
            rest[k] = Some(*b);
        }
        self.push(&[
            TcpOptionElement::Noop,
            TcpOptionElement::Noop,
            TcpOptionElement::SelectiveAcknowledgement(blocks[0], rest),
        ]);
    }
    /// End the list with End of Option List and zeros up to a multiple of 4 bytes (the data
    /// offset counts words; RFC 9293 3.1). Not NOPs: Wireshark counts NOPs across an MPTCP
    /// option and warns of four in a row.
    pub fn pad(&mut self) {
        while self.buf.len() % 4 != 0 {
            self.buf.push(0);
        }
    }
}

/// Builds frames into one reused buffer.
#[derive(Debug, Default)]
pub struct FrameBuilder {
    buf: Vec<u8>,
}

/// A frame could not be built (options over 40 bytes, a packet over 65535 bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildError(pub String);

impl FrameBuilder {
    /// The frame built last.
    pub fn last(&self) -> &[u8] {
        &self.buf
    }

    /// Ethernet II / IPv4 (TTL 64, DF) / TCP with zero payload bytes.
    pub fn tcp(&mut self, src: &Host, dst: &Host, f: &TcpFields) -> Result<&[u8], BuildError> {
        let mut b = PacketBuilder::ethernet2(src.mac, dst.mac)
            .ipv4(src.ip.octets(), dst.ip.octets(), 64)
            .tcp(src.port, dst.port, f.seq, f.window);
        if let Some(a) = f.ack {
            b = b.ack(a);
        }
        if f.syn {
            b = b.syn();
        }
        if f.fin {
            b = b.fin();
        }
        if f.psh {
            b = b.psh();
        }
        let b = b
            .options_raw(f.options)
            .map_err(|e| BuildError(format!("TCP options: {e}")))?;
        let payload = ZEROS
            .get(..f.payload_len)
            .ok_or_else(|| BuildError(format!("payload of {} bytes", f.payload_len)))?;
        self.buf.clear();
        b.write(&mut self.buf, payload)
            .map_err(|e| BuildError(format!("TCP segment: {e}")))?;
        Ok(&self.buf)
    }

    /// Ethernet II / IPv4 / UDP with zero payload bytes.
    pub fn udp(&mut self, src: &Host, dst: &Host, payload_len: usize) -> Result<&[u8], BuildError> {
        let payload = ZEROS
            .get(..payload_len)
            .ok_or_else(|| BuildError(format!("payload of {payload_len} bytes")))?;
        self.buf.clear();
        PacketBuilder::ethernet2(src.mac, dst.mac)
            .ipv4(src.ip.octets(), dst.ip.octets(), 64)
            .udp(src.port, dst.port)
            .write(&mut self.buf, payload)
            .map_err(|e| BuildError(format!("UDP datagram: {e}")))?;
        Ok(&self.buf)
    }

    /// An IP packet (as a TUN device gives it) behind an Ethernet II header.
    pub fn ethernet(&mut self, src: [u8; 6], dst: [u8; 6], ip_packet: &[u8]) -> &[u8] {
        self.buf.clear();
        let ether_type = match ip_packet.first().map(|b| b >> 4) {
            Some(6) => etherparse::EtherType::IPV6,
            _ => etherparse::EtherType::IPV4,
        };
        let h = etherparse::Ethernet2Header {
            source: src,
            destination: dst,
            ether_type,
        };
        self.buf.extend_from_slice(&h.to_bytes());
        self.buf.extend_from_slice(ip_packet);
        &self.buf
    }
}

/// What a TCP segment carried, as the analysis reads it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Segment {
    pub sport: u16,
    pub dport: u16,
    pub seq: u32,
    /// The acknowledgement number when the ACK flag is set.
    pub ack: Option<u32>,
    pub syn: bool,
    pub fin: bool,
    pub rst: bool,
    pub window: u16,
    /// Payload bytes on the wire (from the IP total length, whatever the capture kept).
    pub payload_len: u32,
    pub mss: Option<u16>,
    pub wscale: Option<u8>,
    pub sack_permitted: bool,
    /// TSval, TSecr.
    pub ts: Option<(u32, u32)>,
    pub sack: Vec<(u32, u32)>,
    pub mptcp: Vec<MptcpOption>,
}

/// A parsed frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    Tcp {
        src: Ipv4Addr,
        dst: Ipv4Addr,
        seg: Segment,
    },
    Udp {
        src: Ipv4Addr,
        dst: Ipv4Addr,
        sport: u16,
        dport: u16,
        payload_len: u32,
    },
    /// Not IPv4 TCP or UDP (ARP, IPv6, ICMP, ...): skipped by the analysis.
    Other,
}

/// Why a frame could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<DecodeError> for ParseError {
    fn from(e: DecodeError) -> Self {
        ParseError(e.0)
    }
}

/// Parse a captured frame: `ethernet` says whether it starts with an Ethernet II header (else it
/// is a raw IP packet). Only the headers need to have been captured.
pub fn parse(data: &[u8], ethernet: bool) -> Result<Parsed, ParseError> {
    let ip = if ethernet {
        let eth = etherparse::Ethernet2HeaderSlice::from_slice(data)
            .map_err(|e| ParseError(format!("Ethernet header: {e}")))?;
        if eth.ether_type() != etherparse::EtherType::IPV4 {
            return Ok(Parsed::Other);
        }
        &data[eth.slice().len()..]
    } else {
        if data.first().map(|b| b >> 4) != Some(4) {
            return Ok(Parsed::Other);
        }
        data
    };
    let h = etherparse::Ipv4HeaderSlice::from_slice(ip)
        .map_err(|e| ParseError(format!("IPv4 header: {e}")))?;
    if h.is_fragmenting_payload() {
        return Ok(Parsed::Other);
    }
    let hl = h.slice().len();
    let total = h.total_len() as usize;
    if total < hl {
        return Err(ParseError(format!(
            "IPv4 total length {total} is less than its header's {hl} bytes"
        )));
    }
    let (src, dst) = (h.source_addr(), h.destination_addr());
    let rest = &ip[hl..];
    let ip_payload = (total - hl) as u32;
    match h.protocol() {
        etherparse::IpNumber::TCP => {
            let t = etherparse::TcpHeaderSlice::from_slice(rest)
                .map_err(|e| ParseError(format!("TCP header: {e}")))?;
            let thl = t.slice().len() as u32;
            if ip_payload < thl {
                return Err(ParseError(format!(
                    "TCP header of {thl} bytes in an IP payload of {ip_payload}"
                )));
            }
            let mut seg = Segment {
                sport: t.source_port(),
                dport: t.destination_port(),
                seq: t.sequence_number(),
                ack: t.ack().then(|| t.acknowledgment_number()),
                syn: t.syn(),
                fin: t.fin(),
                rst: t.rst(),
                window: t.window_size(),
                payload_len: ip_payload - thl,
                ..Segment::default()
            };
            parse_options(t.options(), &mut seg)?;
            Ok(Parsed::Tcp { src, dst, seg })
        }
        etherparse::IpNumber::UDP => {
            let u = etherparse::UdpHeaderSlice::from_slice(rest)
                .map_err(|e| ParseError(format!("UDP header: {e}")))?;
            Ok(Parsed::Udp {
                src,
                dst,
                sport: u.source_port(),
                dport: u.destination_port(),
                payload_len: ip_payload.saturating_sub(8),
            })
        }
        _ => Ok(Parsed::Other),
    }
}

/// Walk the TCP options (kind, length): standard ones through etherparse, MPTCP through
/// [`MptcpOption::decode`]; others are skipped by their length.
fn parse_options(mut o: &[u8], seg: &mut Segment) -> Result<(), ParseError> {
    use TcpOptionElement as E;
    while let Some(&kind) = o.first() {
        match kind {
            0 => break,
            1 => {
                o = &o[1..];
                continue;
            }
            _ => {}
        }
        let len = *o
            .get(1)
            .ok_or_else(|| ParseError(format!("TCP option kind {kind} without a length")))?
            as usize;
        if len < 2 || len > o.len() {
            return Err(ParseError(format!(
                "TCP option kind {kind}: length {len} with {} bytes of options left",
                o.len()
            )));
        }
        let opt = &o[..len];
        if kind == crate::mptcp::KIND {
            seg.mptcp
                .push(MptcpOption::decode(opt, seg.syn, seg.ack.is_some())?);
        } else if matches!(kind, 2 | 3 | 4 | 5 | 8) {
            match etherparse::TcpOptionsIterator::from_slice(opt).next() {
                Some(Ok(E::MaximumSegmentSize(m))) => seg.mss = Some(m),
                Some(Ok(E::WindowScale(w))) => seg.wscale = Some(w),
                Some(Ok(E::SelectiveAcknowledgementPermitted)) => seg.sack_permitted = true,
                Some(Ok(E::SelectiveAcknowledgement(first, rest))) => {
                    seg.sack.push(first);
                    seg.sack.extend(rest.iter().flatten());
                }
                Some(Ok(E::Timestamp(v, e))) => seg.ts = Some((v, e)),
                Some(Err(e)) => return Err(ParseError(format!("TCP option kind {kind}: {e}"))),
                _ => {}
            }
        }
        o = &o[len..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mptcp::{Dss, Mapping};

    fn host(ip: [u8; 4], port: u16, m: u8) -> Host {
        Host {
            mac: [2, 0, 0, 0, 0, m],
            ip: Ipv4Addr::from(ip),
            port,
        }
    }

    #[test]
    fn a_data_segment_with_dss_builds_and_parses_back() {
        let mut o = Options::default();
        o.push(&[
            TcpOptionElement::Noop,
            TcpOptionElement::Noop,
            TcpOptionElement::Timestamp(1000, 900),
        ]);
        let dss = MptcpOption::Dss(Dss {
            data_ack: Some(5),
            ack64: true,
            mapping: Some(Mapping {
                dsn: 1 << 33,
                dsn64: true,
                ssn: 1,
                len: 1448,
                checksum: None,
            }),
            data_fin: false,
        });
        o.push_mptcp(&dss);
        // 12 + 26 = 38: SACK cannot fit (it needs 12 for one block).
        o.push_sack(&[(1, 2)]);
        o.pad();
        assert_eq!(o.len(), 40);
        let mut b = FrameBuilder::default();
        let (s, d) = (
            host([10, 201, 0, 1], 5201, 2),
            host([10, 200, 0, 1], 40000, 1),
        );
        let f = b
            .tcp(
                &s,
                &d,
                &TcpFields {
                    seq: 7,
                    ack: Some(9),
                    syn: false,
                    fin: false,
                    psh: false,
                    window: 512,
                    options: o.bytes(),
                    payload_len: 1448,
                },
            )
            .unwrap()
            .to_vec();
        // 14 Ethernet + 20 IPv4 + 60 TCP + 1448 payload.
        assert_eq!(f.len(), 14 + 20 + 60 + 1448);
        // Only the headers captured: the payload length still comes from the IP header.
        let Parsed::Tcp { src, dst, seg } = parse(&f[..94], true).unwrap() else {
            panic!("not tcp");
        };
        assert_eq!((src, dst), (s.ip, d.ip));
        assert_eq!((seg.seq, seg.ack, seg.payload_len), (7, Some(9), 1448));
        assert_eq!(seg.ts, Some((1000, 900)));
        assert_eq!(seg.mptcp, vec![dss]);
        assert!(seg.sack.is_empty());
    }

    #[test]
    fn sack_blocks_take_what_room_is_left() {
        let mut o = Options::default();
        o.push(&[
            TcpOptionElement::Noop,
            TcpOptionElement::Noop,
            TcpOptionElement::Timestamp(1, 2),
        ]);
        // 40 - 12 = 28 left: NOP NOP SACK with (28 - 4) / 8 = 3 blocks.
        o.push_sack(&[(10, 20), (30, 40), (50, 60), (70, 80)]);
        assert_eq!(o.len(), 12 + 4 + 24);
        let mut seg = Segment::default();
        parse_options(o.bytes(), &mut seg).unwrap();
        assert_eq!(seg.sack, vec![(10, 20), (30, 40), (50, 60)]);
    }

    #[test]
    fn bad_options_and_headers_are_errors() {
        let mut seg = Segment::default();
        assert!(parse_options(&[2, 9, 0, 0], &mut seg).is_err());
        assert!(parse_options(&[8], &mut seg).is_err());
        assert!(parse_options(&[30, 3, 0x20], &mut seg).is_err());
        // Unknown kinds are skipped by length; EOL ends the list.
        parse_options(&[99, 3, 0, 1, 0, 77], &mut seg).unwrap();
        assert!(parse(&[0; 10], true).is_err());
        assert_eq!(parse(&[0x60, 0, 0], false).unwrap(), Parsed::Other);
    }
}
