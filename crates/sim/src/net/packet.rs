//! The packet: a small `Copy` value that lives in link queues and pipes (never boxed), so the hot
//! path does not allocate. It carries its route (an index into the world's route table) and the
//! hop it is at, as in htsim: a route is a list of link directions ending at an endpoint.

use railpath_core::Time;

/// Data segment or pure ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    #[default]
    Data,
    Ack,
}

/// At most this many SACK blocks fit in an ACK (RFC 2018 with the timestamp option: 3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// Flag bits.
pub mod flags {
    /// A retransmission (for statistics only; the receiver cannot tell).
    pub const RETRANS: u8 = 1;
    /// MPTCP MP_PRIO option on this packet: the sending end asks the peer to treat the subflow it
    /// travels on as backup (with `BACKUP`) or regular (without). RFC 8684 section 3.3.8.
    pub const MP_PRIO: u8 = 2;
    pub const BACKUP: u8 = 4;
    /// Zero-window probe / window update only (no data).
    pub const WINDOW_UPDATE: u8 = 8;
}

/// A packet, 96 bytes: packets are copied at every hop. Laid out in declaration order
/// (`repr(C)`): first the fields every packet uses, as [`PacketHead`] has them, then the ones
/// only ACKs use, as [`AckFields`] has them, so that splitting a packet for a link's ring and
/// joining it again are two straight copies of 48 bytes.
/// Segment numbers travel as 32-bit values (as TCP sequence numbers do); endpoints keep 64-bit
/// counters and runs never approach 2^32 segments (6 TB at 1448 B).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C)]
pub struct Packet {
    /// Index into the world's route table.
    pub route: u32,
    /// Data: subflow-level segment number. ACK: unused.
    pub seq: u32,
    /// Bytes on the wire (headers included).
    pub size: u16,
    /// Data: payload bytes.
    pub len: u16,
    /// Position along the route.
    pub hop: u16,
    pub kind: Kind,
    pub flags: u8,
    /// Data: data-level sequence number (MPTCP DSN, in segments); equal to `seq` for TCP.
    /// MP_PRIO ACKs: the index of the subflow the option refers to (RFC 8684 AddrID).
    pub dsn: u64,
    /// Timestamp option TSval (RFC 7323): the sender's clock when sent.
    pub ts: Time,
    /// ACK: echoed TSval (TSecr).
    pub ts_ecr: Time,
    /// When the packet entered its current link queue (queueing-delay statistics).
    pub enq: Time,
    /// ACK: cumulative acknowledgement (next expected segment).
    pub ack: u32,
    /// ACK: advertised receive window, bytes (saturating).
    pub rwnd: u32,
    /// ACK: SACK blocks [start, end) in segments, most recent first.
    pub sack: [(u32, u32); MAX_SACK_BLOCKS],
    pub nsack: u8,
    /// ACK: MPTCP data-level cumulative ACK (next expected DSN); 0 for TCP.
    pub data_ack: u64,
}

impl Packet {
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.nsack as usize]
    }

    /// Saturating conversion of a window in bytes to the 32-bit field.
    pub fn window(bytes: u64) -> u32 {
        bytes.min(u32::MAX as u64) as u32
    }
}

/// The fields of a [`Packet`] that only ACKs carry (a data packet's are zero: every data packet is
/// built with them at their defaults, and nothing on the way sets them). A link's ring keeps an
/// ACK's in a side buffer ([`crate::net::ring::Ring::push_back_with`]) and the rest of every
/// packet, [`PacketHead`], in its slot: a data packet's slot is then one cache line, and with a
/// thousand flows the queue's packets fit the caches better (docs/performance.md, seventh round).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C)]
pub(crate) struct AckFields {
    ack: u32,
    rwnd: u32,
    sack: [(u32, u32); MAX_SACK_BLOCKS],
    nsack: u8,
    data_ack: u64,
}

impl AckFields {
    /// A data packet's.
    pub(crate) const ZERO: AckFields = AckFields {
        ack: 0,
        rwnd: 0,
        sack: [(0, 0); MAX_SACK_BLOCKS],
        nsack: 0,
        data_ack: 0,
    };
}

/// The fields of a [`Packet`] that are not its [`AckFields`] (48 bytes; both in the packet's
/// order).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C)]
pub(crate) struct PacketHead {
    pub route: u32,
    pub seq: u32,
    pub size: u16,
    pub len: u16,
    pub hop: u16,
    pub kind: Kind,
    pub flags: u8,
    pub dsn: u64,
    pub ts: Time,
    pub ts_ecr: Time,
    pub enq: Time,
}

impl Packet {
    /// The packet in two parts: its head and its ACK fields (a data packet's are zero, and need
    /// not be kept). [`Packet::join`] undoes it exactly.
    #[inline(always)]
    pub(crate) fn split(&self) -> (PacketHead, AckFields) {
        let parts: &PacketParts = self.as_parts();
        debug_assert!(
            self.kind == Kind::Ack || parts.acks == AckFields::ZERO,
            "a data packet with ACK fields: {self:?}"
        );
        (parts.head, parts.acks)
    }

    /// The packet as its two parts, in place (see [`PacketParts`]).
    #[inline(always)]
    fn as_parts(&self) -> &PacketParts {
        // SAFETY: `PacketParts` and `Packet` are both `repr(C)` with the same fields in the same
        // order and of the same types (checked at compile time below), so they have the same
        // size, alignment and field offsets, and every field of one is a field of the other.
        unsafe { &*(self as *const Packet as *const PacketParts) }
    }

    /// The packet [`Packet::split`] made `head` of, with its ACK fields `a` ([`AckFields::ZERO`]
    /// for a data packet).
    #[inline(always)]
    pub(crate) fn join(head: &PacketHead, a: AckFields) -> Packet {
        let parts = PacketParts {
            head: *head,
            acks: a,
        };
        // SAFETY: as in `as_parts`: the same layout, every field initialised.
        unsafe { std::mem::transmute::<PacketParts, Packet>(parts) }
    }
}

/// A [`Packet`] as its head and its ACK fields: the same layout (both `repr(C)`, checked here
/// field by field), so that a link splits a packet and joins it with two straight copies.
#[derive(Clone, Copy)]
#[repr(C)]
struct PacketParts {
    head: PacketHead,
    acks: AckFields,
}

const _: () = {
    use std::mem::{align_of, offset_of, size_of};
    assert!(size_of::<PacketParts>() == size_of::<Packet>());
    assert!(align_of::<PacketParts>() == align_of::<Packet>());
    assert!(size_of::<PacketHead>() == 48 && offset_of!(PacketParts, acks) == 48);
    assert!(offset_of!(Packet, route) == offset_of!(PacketHead, route));
    assert!(offset_of!(Packet, seq) == offset_of!(PacketHead, seq));
    assert!(offset_of!(Packet, size) == offset_of!(PacketHead, size));
    assert!(offset_of!(Packet, len) == offset_of!(PacketHead, len));
    assert!(offset_of!(Packet, hop) == offset_of!(PacketHead, hop));
    assert!(offset_of!(Packet, kind) == offset_of!(PacketHead, kind));
    assert!(offset_of!(Packet, flags) == offset_of!(PacketHead, flags));
    assert!(offset_of!(Packet, dsn) == offset_of!(PacketHead, dsn));
    assert!(offset_of!(Packet, ts) == offset_of!(PacketHead, ts));
    assert!(offset_of!(Packet, ts_ecr) == offset_of!(PacketHead, ts_ecr));
    assert!(offset_of!(Packet, enq) == offset_of!(PacketHead, enq));
    assert!(offset_of!(Packet, ack) == 48 + offset_of!(AckFields, ack));
    assert!(offset_of!(Packet, rwnd) == 48 + offset_of!(AckFields, rwnd));
    assert!(offset_of!(Packet, sack) == 48 + offset_of!(AckFields, sack));
    assert!(offset_of!(Packet, nsack) == 48 + offset_of!(AckFields, nsack));
    assert!(offset_of!(Packet, data_ack) == 48 + offset_of!(AckFields, data_ack));
};

#[cfg(test)]
mod tests {
    #[test]
    fn packet_is_96_bytes() {
        assert_eq!(std::mem::size_of::<super::Packet>(), 96);
        assert_eq!(std::mem::size_of::<super::PacketHead>(), 48);
        assert_eq!(std::mem::size_of::<super::AckFields>(), 48);
    }

    #[test]
    fn split_and_join_give_the_packet_back() {
        use super::{Kind, Packet};
        let data = Packet {
            route: 3,
            seq: 7,
            size: 1500,
            len: 1448,
            hop: 1,
            flags: super::flags::RETRANS,
            dsn: 1 << 40,
            ts: railpath_core::Time::from_ns(5),
            ts_ecr: railpath_core::Time::from_ns(4),
            enq: railpath_core::Time::from_ns(6),
            ..Default::default()
        };
        // A data packet's ACK fields are zero: its head alone gives it back.
        let (head, acks) = data.split();
        assert_eq!(acks, super::AckFields::ZERO);
        assert_eq!(Packet::join(&head, super::AckFields::ZERO), data);
        // An ACK's come back from its side part.
        let ack = Packet {
            kind: Kind::Ack,
            ack: 9,
            rwnd: 65_535,
            sack: [(11, 12), (14, 15), (0, 9)],
            nsack: 2,
            data_ack: 1 << 33,
            ..data
        };
        let (head, acks) = ack.split();
        assert_ne!(acks, super::AckFields::ZERO);
        assert_eq!(Packet::join(&head, acks), ack);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "a data packet with ACK fields")]
    fn a_data_packet_with_ack_fields_is_refused() {
        let p = super::Packet {
            rwnd: 1,
            ..Default::default()
        };
        let _ = p.split();
    }
}
