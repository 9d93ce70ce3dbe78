//! Capture files: pcapng (the default: one interface per link in a file, nanosecond
//! timestamps, if_tsresol 9) or pcap (nanosecond magic 0xa1b23c4d, one link per file), written
//! as packets come (a buffered file, nothing held) and read as a stream through a bounded buffer.
//! Blocks are laid out and parsed by pcap-parser (the pcapng draft, IETF opsawg; pcap,
//! draft-ietf-opsawg-pcap).

use pcap_parser::pcapng::{
    Block, EnhancedPacketBlock, InterfaceDescriptionBlock, OptionCode, PcapNGOption,
    SectionHeaderBlock,
};
use pcap_parser::traits::PcapReaderIterator;
use pcap_parser::{Linktype, PcapBlockOwned, PcapError, PcapHeader, ToVec};
use std::borrow::Cow;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// The container format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Pcapng,
    Pcap,
}

impl From<railpath_scenario::CaptureFormat> for Format {
    fn from(f: railpath_scenario::CaptureFormat) -> Format {
        match f {
            railpath_scenario::CaptureFormat::Pcapng => Format::Pcapng,
            railpath_scenario::CaptureFormat::Pcap => Format::Pcap,
        }
    }
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "pcapng" => Some(Format::Pcapng),
            "pcap" => Some(Format::Pcap),
            _ => None,
        }
    }
    pub fn extension(self) -> &'static str {
        match self {
            Format::Pcapng => "pcapng",
            Format::Pcap => "pcap",
        }
    }
}

/// One capture point of a file (a pcapng interface).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub description: String,
}

/// Writes one capture file.
pub struct CaptureWriter {
    path: PathBuf,
    w: BufWriter<File>,
    format: Format,
    snaplen: u32,
    interfaces: u32,
    packets: u64,
}

fn opt(code: OptionCode, v: &[u8]) -> PcapNGOption<'static> {
    PcapNGOption {
        code,
        len: v.len() as u16,
        value: Cow::Owned(v.to_vec()),
    }
}

fn gen_err(e: impl std::fmt::Debug) -> std::io::Error {
    std::io::Error::other(format!("cannot lay out a capture block: {e:?}"))
}

impl CaptureWriter {
    /// Create `path` with these interfaces (pcap: exactly one; its name is the file's stem by
    /// convention), capturing at most `snaplen` bytes of each frame (0: whole frames).
    pub fn create(
        path: &Path,
        format: Format,
        snaplen: u32,
        interfaces: &[Interface],
        application: &str,
    ) -> std::io::Result<CaptureWriter> {
        let snaplen = if snaplen == 0 { 262_144 } else { snaplen };
        if format == Format::Pcap && interfaces.len() != 1 {
            return Err(std::io::Error::other(format!(
                "a pcap file holds one interface, {} given",
                interfaces.len()
            )));
        }
        let f = File::create(path)?;
        let mut w = BufWriter::with_capacity(1 << 16, f);
        match format {
            Format::Pcap => {
                let mut h = PcapHeader::new();
                h.magic_number = 0xa1b2_3c4d; // nanosecond timestamps
                h.snaplen = snaplen;
                h.network = Linktype::ETHERNET;
                w.write_all(&h.to_vec().map_err(gen_err)?)?;
            }
            Format::Pcapng => {
                let mut shb = SectionHeaderBlock {
                    block_type: 0,
                    block_len1: 0,
                    bom: 0,
                    major_version: 1,
                    minor_version: 0,
                    section_len: -1,
                    options: vec![opt(OptionCode::ShbUserAppl, application.as_bytes())],
                    block_len2: 0,
                };
                w.write_all(&shb.to_vec().map_err(gen_err)?)?;
                for i in interfaces {
                    let mut idb = InterfaceDescriptionBlock {
                        block_type: 0,
                        block_len1: 0,
                        linktype: Linktype::ETHERNET,
                        reserved: 0,
                        snaplen,
                        options: vec![
                            opt(OptionCode::IfName, i.name.as_bytes()),
                            opt(OptionCode::IfDescription, i.description.as_bytes()),
                            opt(OptionCode::IfTsresol, &[9]),
                        ],
                        block_len2: 0,
                        if_tsresol: 9,
                        if_tsoffset: 0,
                    };
                    w.write_all(&idb.to_vec().map_err(gen_err)?)?;
                }
            }
        }
        Ok(CaptureWriter {
            path: path.to_path_buf(),
            w,
            format,
            snaplen,
            interfaces: interfaces.len() as u32,
            packets: 0,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Packets written so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Write one Ethernet frame seen on interface `iface` at `t_ns` nanoseconds since the Unix
    /// epoch.
    pub fn write(&mut self, iface: u32, t_ns: u64, frame: &[u8]) -> std::io::Result<()> {
        self.write_with_len(iface, t_ns, frame, frame.len() as u32)
    }

    /// [`CaptureWriter::write`] of a frame of `orig_len` bytes of which `frame` is the start
    /// (already cut, by a caller that copied only what the snap length keeps).
    pub fn write_with_len(
        &mut self,
        iface: u32,
        t_ns: u64,
        frame: &[u8],
        orig_len: u32,
    ) -> std::io::Result<()> {
        debug_assert!(iface < self.interfaces);
        let cap = frame.len().min(self.snaplen as usize);
        let data = &frame[..cap];
        let orig_len = orig_len.max(cap as u32);
        match self.format {
            Format::Pcap => {
                let mut hdr = [0u8; 16];
                // Nanosecond pcap: seconds, nanoseconds, captured and original lengths
                // (native byte order with the native magic; written little-endian with the
                // little-endian magic by pcap-parser's header).
                hdr[..4].copy_from_slice(&((t_ns / 1_000_000_000) as u32).to_le_bytes());
                hdr[4..8].copy_from_slice(&((t_ns % 1_000_000_000) as u32).to_le_bytes());
                hdr[8..12].copy_from_slice(&(cap as u32).to_le_bytes());
                hdr[12..16].copy_from_slice(&orig_len.to_le_bytes());
                self.w.write_all(&hdr)?;
                self.w.write_all(data)?;
            }
            Format::Pcapng => {
                let mut epb = EnhancedPacketBlock {
                    block_type: 0,
                    block_len1: 0,
                    if_id: iface,
                    ts_high: (t_ns >> 32) as u32,
                    ts_low: t_ns as u32,
                    caplen: cap as u32,
                    origlen: orig_len,
                    data,
                    options: Vec::new(),
                    block_len2: 0,
                };
                self.w.write_all(&epb.to_vec().map_err(gen_err)?)?;
            }
        }
        self.packets += 1;
        Ok(())
    }

    /// Flush and close; returns the packets written.
    pub fn finish(mut self) -> std::io::Result<u64> {
        self.w.flush()?;
        self.w.get_ref().sync_data().ok();
        Ok(self.packets)
    }
}

/// A capture that cannot be read, naming the file and, when the trouble is in a record, its
/// number (1 = the first packet record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError {
    pub file: String,
    pub record: Option<u64>,
    pub message: String,
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.record {
            Some(r) => write!(f, "{}: record {r}: {}", self.file, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

impl std::error::Error for CaptureError {}

/// A capture point of a file being read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadInterface {
    /// True: frames start with an Ethernet II header; false: raw IP packets.
    pub ethernet: bool,
    pub name: Option<String>,
    units_per_s: u64,
    offset_s: i64,
}

/// One packet record: where it was seen, when, and its original length; its captured bytes
/// are in the buffer given to [`CaptureReader::next`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record {
    /// 1 for the first packet of the file.
    pub index: u64,
    pub iface: usize,
    /// Nanoseconds since the Unix epoch.
    pub t_ns: u64,
    pub orig_len: u32,
}

/// Largest block the reader accepts (a jumbo frame with room to spare).
const MAX_BLOCK: usize = 16 << 20;

/// Reads the packets of a pcap or pcapng file in order, through a bounded buffer.
pub struct CaptureReader {
    file: String,
    inner: Box<dyn PcapReaderIterator + Send>,
    packets: u64,
    ifaces: Vec<ReadInterface>,
    /// pcap: its one interface (set by the file header).
    legacy: Option<ReadInterface>,
    capacity: usize,
    /// pcapng: the current section's byte order (big-endian?), once its header is read.
    section_be: Option<bool>,
}

/// A pcapng block's type and length fields, when `data` starts with a block other than a
/// section header (whose length its own parser checks) that is shorter than the 12 bytes every
/// block has (its type and its two length fields; draft-ietf-opsawg-pcapng section 3.1).
///
/// pcap-parser 0.17.0 checks a Process Information Block's length against 4 only and then
/// subtracts 12 from it: an overflow panic where overflow checks are on (`make fuzz` found it),
/// a wrapped length where they are not. Such blocks are refused before it sees them.
fn short_block(data: &[u8], big_endian: bool) -> Option<(u32, u32)> {
    let ty = u32::from_le_bytes(data.get(..4)?.try_into().ok()?);
    let len: [u8; 4] = data.get(4..8)?.try_into().ok()?;
    let len = if big_endian {
        u32::from_be_bytes(len)
    } else {
        u32::from_le_bytes(len)
    };
    (ty != 0x0a0d_0d0a && len < 12).then_some((ty, len))
}

fn linktype_ok(l: Linktype) -> Option<bool> {
    match l {
        Linktype::ETHERNET => Some(true),
        Linktype::RAW | Linktype::IPV4 => Some(false),
        _ => None,
    }
}

fn bad_linktype(l: Linktype) -> String {
    format!(
        "link type {}: expected Ethernet (1) or raw IPv4 (101 or 228)",
        l.0
    )
}

impl CaptureReader {
    pub fn open(path: &Path) -> Result<CaptureReader, CaptureError> {
        let file = path.display().to_string();
        let f = File::open(path).map_err(|e| CaptureError {
            file: file.clone(),
            record: None,
            message: format!("cannot open: {e}"),
        })?;
        CaptureReader::from_reader(&file, f)
    }

    /// Read a capture from any byte stream; `file` names it in errors.
    pub fn from_reader(
        file: &str,
        f: impl std::io::Read + Send + 'static,
    ) -> Result<CaptureReader, CaptureError> {
        let file = file.to_string();
        let err = |m: String| CaptureError {
            file: file.clone(),
            record: None,
            message: m,
        };
        let capacity = 1 << 20;
        let inner = pcap_parser::create_reader(capacity, f).map_err(|e| {
            err(match e {
                PcapError::Eof => "empty file: expected a pcap or pcapng capture".into(),
                PcapError::HeaderNotRecognized => {
                    "not a capture: no pcap file header or pcapng section header block".into()
                }
                PcapError::Incomplete(_) | PcapError::UnexpectedEof => {
                    "not a capture: too short for a pcap or pcapng file header".into()
                }
                e => format!("not a readable capture ({e:?})"),
            })
        })?;
        Ok(CaptureReader {
            file,
            inner,
            packets: 0,
            ifaces: Vec::new(),
            legacy: None,
            capacity,
            section_be: None,
        })
    }

    pub fn file(&self) -> &str {
        &self.file
    }

    /// The capture points seen so far (pcapng: interface description blocks; pcap: one).
    pub fn interfaces(&self) -> &[ReadInterface] {
        if let Some(l) = &self.legacy {
            std::slice::from_ref(l)
        } else {
            &self.ifaces
        }
    }
}

fn err_at(file: &str, record: Option<u64>, message: impl Into<String>) -> CaptureError {
    CaptureError {
        file: file.to_string(),
        record,
        message: message.into(),
    }
}

impl CaptureReader {
    /// The next packet: its captured bytes replace `buf`'s. `None` at the end of the file.
    pub fn next(&mut self, buf: &mut Vec<u8>) -> Result<Option<Record>, CaptureError> {
        loop {
            let next_rec = Some(self.packets + 1);
            if let Some((ty, len)) = self
                .section_be
                .and_then(|be| short_block(self.inner.data(), be))
            {
                return Err(err_at(
                    &self.file,
                    next_rec,
                    format!(
                        "malformed block (type {ty:#010x}): its length {len} is less than the 12 \
                         bytes of a block's type and lengths"
                    ),
                ));
            }
            let (offset, out) = match self.inner.next() {
                Ok((offset, block)) => {
                    let out = match block {
                        PcapBlockOwned::LegacyHeader(h) => {
                            let Some(eth) = linktype_ok(h.network) else {
                                return Err(err_at(&self.file, None, bad_linktype(h.network)));
                            };
                            self.legacy = Some(ReadInterface {
                                ethernet: eth,
                                name: None,
                                units_per_s: if h.is_nanosecond_precision() {
                                    1_000_000_000
                                } else {
                                    1_000_000
                                },
                                offset_s: 0,
                            });
                            None
                        }
                        PcapBlockOwned::Legacy(b) => {
                            let Some(l) = &self.legacy else {
                                return Err(err_at(
                                    &self.file,
                                    next_rec,
                                    "a record before the file header",
                                ));
                            };
                            if b.ts_usec as u64 >= l.units_per_s {
                                return Err(err_at(
                                    &self.file,
                                    next_rec,
                                    format!(
                                        "timestamp fraction {} is not below one second",
                                        b.ts_usec
                                    ),
                                ));
                            }
                            let t = b.ts_sec as u64 * 1_000_000_000
                                + b.ts_usec as u64 * (1_000_000_000 / l.units_per_s);
                            buf.clear();
                            buf.extend_from_slice(b.data);
                            Some((0usize, t, b.origlen))
                        }
                        PcapBlockOwned::NG(Block::SectionHeader(shb)) => {
                            // A new section: its interfaces are numbered from 0 again.
                            self.ifaces.clear();
                            self.section_be = Some(shb.big_endian());
                            None
                        }
                        PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                            let Some(eth) = linktype_ok(idb.linktype) else {
                                return Err(err_at(
                                    &self.file,
                                    None,
                                    format!(
                                        "interface {}: {}",
                                        self.ifaces.len(),
                                        bad_linktype(idb.linktype)
                                    ),
                                ));
                            };
                            let Some(units) = idb.ts_resolution() else {
                                return Err(err_at(
                                    &self.file,
                                    None,
                                    format!(
                                        "interface {}: if_tsresol {} is out of range",
                                        self.ifaces.len(),
                                        idb.if_tsresol
                                    ),
                                ));
                            };
                            let name = idb.if_name().and_then(|r| r.ok()).map(str::to_string);
                            self.ifaces.push(ReadInterface {
                                ethernet: eth,
                                name,
                                units_per_s: units,
                                offset_s: idb.ts_offset(),
                            });
                            None
                        }
                        PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => {
                            let Some(i) = self.ifaces.get(epb.if_id as usize) else {
                                return Err(err_at(
                                    &self.file,
                                    next_rec,
                                    format!(
                                        "packet on interface {} of {} described",
                                        epb.if_id,
                                        self.ifaces.len()
                                    ),
                                ));
                            };
                            let raw = ((epb.ts_high as u128) << 32) | epb.ts_low as u128;
                            let ns = raw * 1_000_000_000 / i.units_per_s as u128
                                + (i.offset_s as i128 * 1_000_000_000).max(0) as u128;
                            let Ok(t) = u64::try_from(ns) else {
                                return Err(err_at(
                                    &self.file,
                                    next_rec,
                                    "timestamp past the year 2554",
                                ));
                            };
                            let cap = (epb.caplen as usize).min(epb.data.len());
                            buf.clear();
                            buf.extend_from_slice(&epb.data[..cap]);
                            Some((epb.if_id as usize, t, epb.origlen))
                        }
                        PcapBlockOwned::NG(Block::SimplePacket(_)) => return Err(err_at(
                            &self.file,
                            next_rec,
                            "a simple packet block (no timestamp): expected enhanced packet blocks",
                        )),
                        // Statistics, name resolution, comments, custom blocks: not packets.
                        PcapBlockOwned::NG(_) => None,
                    };
                    (offset, out)
                }
                Err(PcapError::Eof) => return Ok(None),
                Err(PcapError::Incomplete(_)) => {
                    self.inner
                        .refill()
                        .map_err(|e| err_at(&self.file, next_rec, format!("read error ({e:?})")))?;
                    continue;
                }
                Err(PcapError::BufferTooSmall) => {
                    if self.capacity >= MAX_BLOCK {
                        return Err(err_at(
                            &self.file,
                            next_rec,
                            format!("a block larger than {} MB", MAX_BLOCK >> 20),
                        ));
                    }
                    self.capacity *= 4;
                    self.inner.grow(self.capacity);
                    self.inner
                        .refill()
                        .map_err(|e| err_at(&self.file, next_rec, format!("read error ({e:?})")))?;
                    continue;
                }
                Err(PcapError::UnexpectedEof) => {
                    return Err(err_at(
                        &self.file,
                        next_rec,
                        "truncated: the file ends inside this record",
                    ))
                }
                Err(PcapError::ReadError) => {
                    return Err(err_at(&self.file, next_rec, "read error"))
                }
                Err(e) => {
                    let m = match e {
                        PcapError::NomError(_, k) | PcapError::OwnedNomError(_, k) => {
                            format!("malformed block ({})", k.description())
                        }
                        e => format!("malformed ({e:?})"),
                    };
                    return Err(err_at(&self.file, next_rec, m));
                }
            };
            self.inner.consume(offset);
            if let Some((iface, t_ns, orig_len)) = out {
                self.packets += 1;
                return Ok(Some(Record {
                    index: self.packets,
                    iface,
                    t_ns,
                    orig_len,
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path `name` in a fresh temporary directory that the returned guard removes when it
    /// drops (when the test ends, passed or failed).
    fn tmp(name: &str) -> (tempfile::TempDir, PathBuf) {
        let d = tempfile::Builder::new()
            .prefix("railpath-capture-file-")
            .tempdir()
            .unwrap();
        let p = d.path().join(name);
        (d, p)
    }

    fn iface(n: &str) -> Interface {
        Interface {
            name: n.into(),
            description: format!("link {n}"),
        }
    }

    #[test]
    fn both_formats_write_and_read_back() {
        for format in [Format::Pcapng, Format::Pcap] {
            let (_tmp_p, p) = tmp(&format!("rt.{}", format.extension()));
            let ifs: Vec<Interface> = match format {
                Format::Pcapng => vec![iface("a"), iface("b")],
                Format::Pcap => vec![iface("a")],
            };
            let mut w = CaptureWriter::create(&p, format, 20, &ifs, "test").unwrap();
            let frame: Vec<u8> = (0..30u8).collect();
            w.write(0, 1_704_067_200_000_000_123, &frame).unwrap();
            w.write(ifs.len() as u32 - 1, 1_704_067_201_500_000_000, &frame[..7])
                .unwrap();
            assert_eq!(w.finish().unwrap(), 2);
            let mut r = CaptureReader::open(&p).unwrap();
            let mut buf = Vec::new();
            let a = r.next(&mut buf).unwrap().unwrap();
            assert_eq!(
                (a.index, a.iface, a.t_ns, a.orig_len),
                (1, 0, 1_704_067_200_000_000_123, 30)
            );
            assert_eq!(buf, frame[..20], "cut at the snap length");
            let b = r.next(&mut buf).unwrap().unwrap();
            assert_eq!(
                (b.index, b.t_ns, b.orig_len),
                (2, 1_704_067_201_500_000_000, 7)
            );
            assert_eq!(buf, frame[..7]);
            assert_eq!(r.next(&mut buf).unwrap(), None);
            if format == Format::Pcapng {
                assert_eq!(r.interfaces()[1].name.as_deref(), Some("b"));
            }
        }
    }

    #[test]
    fn bad_files_name_the_file_and_the_record() {
        let mut buf = Vec::new();
        let (_tmp_g, g) = tmp("garbage.pcap");
        std::fs::write(&g, b"this is not a capture at all, just text\n").unwrap();
        let e = CaptureReader::open(&g).err().unwrap();
        assert!(e.to_string().contains("garbage.pcap"), "{e}");
        assert!(e.message.contains("not a capture"), "{e}");
        let (_tmp_empty, empty) = tmp("empty.pcapng");
        std::fs::write(&empty, b"").unwrap();
        assert!(CaptureReader::open(&empty)
            .err()
            .unwrap()
            .message
            .contains("empty"));
        // Truncated inside the second record.
        let (_tmp_p, p) = tmp("trunc.pcapng");
        let mut w = CaptureWriter::create(&p, Format::Pcapng, 0, &[iface("a")], "t").unwrap();
        for k in 0..3 {
            w.write(0, k, &[0u8; 60]).unwrap();
        }
        w.finish().unwrap();
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 100]).unwrap();
        let mut r = CaptureReader::open(&p).unwrap();
        assert!(r.next(&mut buf).unwrap().is_some());
        let e = r.next(&mut buf).unwrap_err();
        assert_eq!(e.record, Some(2), "{e}");
        assert!(
            e.to_string().contains("trunc.pcapng: record 2: truncated"),
            "{e}"
        );
        // A link type the analysis cannot read (802.11, 105).
        let (_tmp_p, p) = tmp("wifi.pcap");
        let mut h = PcapHeader::new();
        h.network = Linktype(105);
        std::fs::write(&p, h.to_vec().unwrap()).unwrap();
        let mut r = CaptureReader::open(&p).unwrap();
        let e = r.next(&mut buf).unwrap_err();
        assert!(e.message.contains("link type 105"), "{e}");
    }
}
