//! What every kind of flow shares: the interface the world drives a flow through
//! ([`FlowOps`]), the application's data ([`App`]), per-bin series, and the lazy timers of an
//! endpoint ([`arm`], [`take_wake`]). The kinds import this file; the enum over the kinds
//! (`flows/mod.rs`) imports the kinds, never the reverse.

use crate::engine::Event;
use crate::net::packet::Packet;
use crate::net::{Net, Side};
use crate::results::{FlowSummary, Series};
use railpath_core::Time;

/// What the world does with a flow: each kind implements it, and `flows::Flow` dispatches to
/// the kind in one place.
pub(crate) trait FlowOps {
    /// The flow starts (its `FlowStart` event).
    fn start(&mut self, net: &mut Net);
    /// A packet of endpoint (`sub`, `side`) reached it.
    fn on_packet(&mut self, sub: u16, side: Side, p: &Packet, net: &mut Net);
    /// A timer of endpoint (`sub`, `side`) is due (it may be a stale wake-up).
    fn on_timer(&mut self, sub: u16, side: u8, net: &mut Net);
    /// Its scripted control event `idx` (an MP_PRIO change, a handoff step, a reconnection).
    fn control(&mut self, idx: u32, net: &mut Net);
    /// A time-series bin of `width` ended.
    fn sample(&mut self, width: Time);
    /// Its summary and time series at the end of the run.
    fn summarize(&self, end: Time, net: &Net) -> (FlowSummary, Vec<Series>);
}

/// The application's data: a bulk transfer or a finite one of `bytes`.
#[derive(Debug, Clone)]
pub(crate) struct App {
    /// Total segments for a finite transfer; `None` for bulk.
    pub total_segs: Option<u64>,
    pub total_bytes: u64,
    pub mss: u32,
    /// Next new data-level segment.
    pub next: u64,
    /// A relay's onward leg: the lengths of the segments the relay has handed over and the
    /// sender has not taken yet (`None`: the application makes its own data).
    pub fed: Option<Box<Feed>>,
}

/// What a relay has handed its onward leg and the sender has not taken: segment lengths, and
/// their bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Feed {
    pub segments: std::collections::VecDeque<u32>,
    pub bytes: u64,
}

impl App {
    pub fn new(bytes: u64, mss: u32) -> App {
        App {
            total_segs: if bytes == 0 {
                None
            } else {
                Some(bytes.div_ceil(mss as u64))
            },
            total_bytes: bytes,
            mss,
            next: 0,
            fed: None,
        }
    }
    /// An application that sends only what a relay hands it.
    pub fn fed(mss: u32) -> App {
        App {
            fed: Some(Box::default()),
            ..App::new(0, mss)
        }
    }
    pub fn has_data(&self) -> bool {
        match &self.fed {
            Some(q) => !q.segments.is_empty(),
            None => self.total_segs.is_none_or(|n| self.next < n),
        }
    }
    /// Length of data-level segment `dsn`.
    pub fn len_of(&self, dsn: u64) -> u32 {
        match self.total_segs {
            Some(n) if dsn + 1 == n => (self.total_bytes - (n - 1) * self.mss as u64) as u32,
            _ => self.mss,
        }
    }
    /// A relay hands the onward leg a segment of `len` bytes.
    pub fn feed(&mut self, len: u32) {
        if let Some(q) = &mut self.fed {
            q.segments.push_back(len);
            q.bytes += len as u64;
        }
    }
    pub fn take(&mut self) -> Option<(u64, u32)> {
        if let Some(q) = &mut self.fed {
            let len = q.segments.pop_front()?;
            q.bytes -= len as u64;
            let d = self.next;
            self.next += 1;
            return Some((d, len));
        }
        if !self.has_data() {
            return None;
        }
        let d = self.next;
        self.next += 1;
        Some((d, self.len_of(d)))
    }
}

/// Per-bin accumulators for a flow's time series.
#[derive(Debug, Default)]
pub(crate) struct FlowSeries {
    pub bin_bytes: u64,
    pub goodput_bps: Vec<f64>,
    pub cwnd_bytes: Vec<f64>,
    pub srtt_ms: Vec<f64>,
    /// Sum and count of RTO samples (bins after the first RTT sample).
    pub rto_sum_ms: f64,
    pub rto_samples: u64,
}

/// Schedule an endpoint's wake-up if `deadline` is earlier than the one armed.
pub(crate) fn arm(
    net: &mut Net,
    armed: &mut Option<Time>,
    deadline: Option<Time>,
    flow: u32,
    sub: u16,
    side: Side,
) {
    if let Some(t) = deadline {
        let t = t.max(net.now());
        if armed.is_none_or(|a| t < a) {
            *armed = Some(t);
            net.sched.at(
                t,
                Event::Timer {
                    flow,
                    sub,
                    side: side as u8,
                },
            );
        }
    }
}

/// Is this wake-up the armed one? Consumes it if so.
pub(crate) fn take_wake(armed: &mut Option<Time>, now: Time) -> bool {
    if *armed == Some(now) {
        *armed = None;
        true
    } else {
        false
    }
}
