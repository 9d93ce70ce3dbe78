//! Captures of a live link emulator (the namespace testbed's, crates/linkem): the emulator hands
//! over each IP packet where it enters or leaves a link, and a writer thread puts it behind an
//! Ethernet header (the address plan's link-layer addresses, [`crate::addr::mac`]) into the
//! same files a simulator capture has. The emulator never waits for the disk: a packet that
//! finds the writer's queue full is counted as dropped, as a capture's kernel buffer drops.

use crate::addr;
use crate::file::{CaptureWriter, Format, Interface};
use crate::frame::FrameBuilder;
use crate::sim::{CaptureOptions, CaptureReport};
use crate::End;
use railpath_core::Time;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

/// Packets the writer's queue holds before the emulator drops captures.
const QUEUE: usize = 1 << 16;

struct Rec {
    link: usize,
    end: End,
    /// The link's data direction (server -> train) or the reverse.
    data_dir: bool,
    t: Time,
    orig_len: usize,
    ip: Vec<u8>,
}

/// What a live capture wrote.
#[derive(Debug, Clone, PartialEq)]
pub struct LiveReport {
    pub files: CaptureReport,
    /// Packets not captured because the writer fell behind.
    pub dropped: u64,
    /// The first write error, if any (writing stopped there).
    pub error: Option<String>,
}

/// A running capture of a live emulator's links.
pub struct LiveCapture {
    tx: Option<SyncSender<Rec>>,
    handle: Option<JoinHandle<(Vec<CaptureWriter>, Option<String>)>>,
    dropped: Arc<AtomicU64>,
    /// IP bytes kept of each packet (the snap length less the Ethernet header).
    keep: usize,
}

impl LiveCapture {
    /// Create the files (one interface per link id, in order) and start the writer thread.
    pub fn start(
        opts: &CaptureOptions,
        links: &[String],
        application: &str,
    ) -> Result<LiveCapture, String> {
        std::fs::create_dir_all(&opts.dir)
            .map_err(|e| format!("cannot create {}: {e}", opts.dir.display()))?;
        let describe = |l: &str, end: End| Interface {
            name: crate::point_name(l, end),
            description: format!(
                "railpath testbed (linkem), link {l}: the data {}'s end",
                end.as_str()
            ),
        };
        let open = |path: std::path::PathBuf, ifs: &[Interface]| {
            CaptureWriter::create(&path, opts.format, opts.snaplen, ifs, application)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))
        };
        let mut writers = Vec::new();
        match opts.format {
            Format::Pcapng => {
                for end in [End::Sender, End::Receiver] {
                    let ifs: Vec<Interface> = links.iter().map(|l| describe(l, end)).collect();
                    writers.push(open(
                        opts.dir.join(format!("{}.pcapng", end.as_str())),
                        &ifs,
                    )?);
                }
            }
            Format::Pcap => {
                for l in links {
                    for end in [End::Sender, End::Receiver] {
                        let name = crate::point_name(l, end);
                        writers.push(open(
                            opts.dir.join(format!("{name}.pcap")),
                            &[describe(l, end)],
                        )?);
                    }
                }
            }
        }
        let (tx, rx) = sync_channel(QUEUE);
        let format = opts.format;
        let handle = std::thread::Builder::new()
            .name("linkem-capture".into())
            .spawn(move || write_loop(rx, writers, format))
            .map_err(|e| format!("cannot start the capture writer: {e}"))?;
        let snap = if opts.snaplen == 0 {
            usize::MAX
        } else {
            opts.snaplen as usize
        };
        Ok(LiveCapture {
            tx: Some(tx),
            handle: Some(handle),
            dropped: Arc::new(AtomicU64::new(0)),
            keep: snap.saturating_sub(14),
        })
    }

    /// An IP packet at `end` of link `link` (index into the links given to `start`) at `t`
    /// since the origin; `data_dir`: it travels the link's data direction.
    pub fn ip_packet(&self, link: usize, end: End, data_dir: bool, t: Time, ip: &[u8]) {
        let Some(tx) = &self.tx else { return };
        let rec = Rec {
            link,
            end,
            data_dir,
            t,
            orig_len: ip.len(),
            ip: ip[..ip.len().min(self.keep)].to_vec(),
        };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) = tx.try_send(rec) {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Stop: write what is queued, close the files.
    pub fn finish(mut self) -> LiveReport {
        drop(self.tx.take());
        let (writers, mut error) = match self.handle.take().map(|h| h.join()) {
            Some(Ok(x)) => x,
            _ => (Vec::new(), Some("the capture writer panicked".into())),
        };
        let mut files = Vec::new();
        for w in writers {
            let p = w.path().to_path_buf();
            match w.finish() {
                Ok(n) => files.push((p, n)),
                Err(e) => {
                    error.get_or_insert(format!("cannot write {}: {e}", p.display()));
                }
            }
        }
        LiveReport {
            files: CaptureReport { files },
            dropped: self.dropped.load(Ordering::Relaxed),
            error,
        }
    }
}

impl Drop for LiveCapture {
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn write_loop(
    rx: Receiver<Rec>,
    mut writers: Vec<CaptureWriter>,
    format: Format,
) -> (Vec<CaptureWriter>, Option<String>) {
    let mut fb = FrameBuilder::default();
    let mut error = None;
    for r in rx {
        if error.is_some() {
            continue;
        }
        let (src, dst) = if r.data_dir {
            (
                addr::mac(r.link, End::Sender),
                addr::mac(r.link, End::Receiver),
            )
        } else {
            (
                addr::mac(r.link, End::Receiver),
                addr::mac(r.link, End::Sender),
            )
        };
        let frame = fb.ethernet(src, dst, &r.ip);
        let (w, iface) = match format {
            Format::Pcapng => (r.end as usize, r.link as u32),
            Format::Pcap => (2 * r.link + r.end as usize, 0),
        };
        let Some(wr) = writers.get_mut(w) else {
            continue;
        };
        if let Err(e) =
            wr.write_with_len(iface, crate::wall_ns(r.t), frame, (14 + r.orig_len) as u32)
        {
            error = Some(format!("cannot write {}: {e}", wr.path().display()));
        }
    }
    (writers, error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::CaptureReader;

    #[test]
    fn packets_land_in_their_end_with_ethernet_headers() {
        let tmp = tempfile::Builder::new()
            .prefix("railpath-live-")
            .tempdir()
            .unwrap();
        let dir = tmp.path().to_path_buf();
        let opts = CaptureOptions {
            dir: dir.clone(),
            format: Format::Pcapng,
            snaplen: 128,
        };
        let c = LiveCapture::start(&opts, &["a".into(), "b".into()], "test").unwrap();
        // A 1500-byte IPv4 packet entering b's data direction, and its leaving.
        let mut ip = vec![0u8; 1500];
        ip[0] = 0x45;
        c.ip_packet(1, End::Sender, true, Time::from_ms(5), &ip);
        c.ip_packet(1, End::Receiver, true, Time::from_ms(30), &ip);
        let rep = c.finish();
        assert_eq!((rep.dropped, rep.error.clone()), (0, None));
        assert_eq!(rep.files.files.iter().map(|f| f.1).sum::<u64>(), 2);
        let mut r = CaptureReader::open(&dir.join("receiver.pcapng")).unwrap();
        let mut buf = Vec::new();
        let rec = r.next(&mut buf).unwrap().unwrap();
        assert_eq!(
            (rec.iface, rec.orig_len as usize, buf.len()),
            (1, 1514, 128)
        );
        assert_eq!(rec.t_ns, crate::wall_ns(Time::from_ms(30)));
        assert_eq!(
            &buf[..6],
            &addr::mac(1, End::Receiver),
            "to the train's side"
        );
        assert_eq!(&buf[12..15], &[0x08, 0x00, 0x45]);
        assert_eq!(r.interfaces()[1].name.as_deref(), Some("b.receiver"));
    }
}
