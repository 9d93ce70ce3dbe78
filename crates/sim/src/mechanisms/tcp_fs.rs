//! TCP-FS: receiver-forced slow start across vertical handoffs (the TCP-FS paper, seeds.md
//! section 3; its Freeze step is Freeze-TCP's, Goff et al., IEEE INFOCOM 2000). Only the
//! receiver changes; the sender is stock TCP.
//!
//! 1. Mobility detector: the receiver learns a handoff's start and completion (from the
//!    scenario's handoff times, `tcp_fs.detect_ms` late).
//! 2. Freeze: from start to completion every ACK advertises a zero window, so the sender stops
//!    sending new data (it keeps only its persist probes, answered with the zero window).
//! 3. ACK holding: at completion the receiver reopens its window with one window update, then
//!    sends no ACK for `(1 + margin) RTO`, RTO being its own estimate of the sender's:
//!    ```text
//!    rttvar <- (1 - beta) rttvar + beta |srtt - rtt|
//!    srtt   <- (1 - alpha) srtt + alpha rtt
//!    rto     = max(srtt + k rttvar, min_rto)
//!    ```
//!    in the order of the paper's equation 2 (RTTvar from the srtt before the sample, then sRTT,
//!    as RFC 6298 2.3 and the stock sender do; seeds.md lists sRTT first, the original does
//!    not); the first sample sets srtt = rtt, rttvar = rtt / 2 (RFC 6298 2.2).
//!    The stock sender's retransmission timer fires on the data it sent into the reopened
//!    window, and it slow-starts from one segment. Data that arrives during holding is accepted
//!    and delivered, not acknowledged; data arriving after it is acknowledged as usual.
//!
//! Two variants the paper's text leaves open (`tcp_fs.reset_rto`, `tcp_fs.hold_closed`, both off
//! by default): at completion the receiver may forget the old path's samples and hold for the
//! initial RTO (RFC 6298 2.1: 1 s for a path without samples); and the window may stay closed
//! through the holding, reopened by the first ACK after it (a window update the flow sends when
//! the holding ends), rather than at completion.
//!
//! RTT samples come from the timestamp echo of arriving data (RFC 7323: the sender echoes the
//! TSval of the receiver's newest ACK), as Linux's `tcp_rcv_rtt_measure_ts()` measures.

use railpath_core::Time;
use railpath_scenario::TcpFsOptions;

/// The receiver's estimate of the sender's RTO (the paper's equations).
#[derive(Debug, Clone)]
pub struct RtoEstimator {
    alpha: f64,
    beta: f64,
    k: f64,
    floor: Time,
    /// (srtt, rttvar), seconds; `None` before the first sample.
    est: Option<(f64, f64)>,
}

/// RFC 6298's initial RTO, used before any sample.
const INITIAL_RTO: Time = Time::from_secs(1);

impl RtoEstimator {
    pub fn new(alpha: f64, beta: f64, k: f64, floor: Time) -> RtoEstimator {
        RtoEstimator {
            alpha,
            beta,
            k,
            floor,
            est: None,
        }
    }

    pub fn sample(&mut self, rtt: Time) {
        let r = rtt.secs_f64();
        self.est = Some(match self.est {
            None => (r, r / 2.0),
            Some((srtt, rttvar)) => {
                let rttvar = (1.0 - self.beta) * rttvar + self.beta * (srtt - r).abs();
                let srtt = (1.0 - self.alpha) * srtt + self.alpha * r;
                (srtt, rttvar)
            }
        });
    }

    pub fn srtt(&self) -> Option<Time> {
        self.est.map(|(s, _)| Time::from_secs_f64(s))
    }

    pub fn rto(&self) -> Time {
        match self.est {
            None => INITIAL_RTO.max(self.floor),
            Some((srtt, rttvar)) => Time::from_secs_f64(srtt + self.k * rttvar).max(self.floor),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    Normal,
    /// Zero window until the handoff completes.
    Frozen,
    /// No ACK leaves before `until`.
    Holding {
        until: Time,
    },
}

/// One handoff as the receiver handled it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FsRecord {
    /// The mobility detector's start and completion signals.
    pub frozen_at: Time,
    pub completed_at: Time,
    /// End of ACK holding, and the RTO estimate it came from.
    pub hold_until: Time,
    pub rto: Time,
}

/// The TCP-FS receiver state.
#[derive(Debug, Clone)]
pub struct TcpFs {
    pub est: RtoEstimator,
    pub margin: f64,
    /// `tcp_fs.reset_rto`, `tcp_fs.hold_closed`.
    pub reset_rto: bool,
    pub hold_closed: bool,
    pub phase: Phase,
    pub records: Vec<FsRecord>,
    /// ACKs sent with a zero window, and ACKs withheld while holding.
    pub zero_window_acks: u64,
    pub held_acks: u64,
}

impl TcpFs {
    /// `min_rto` is the floor used when the options give none (the scenario's `tcp.min_rto_ms`).
    pub fn new(o: &TcpFsOptions, min_rto: Time) -> TcpFs {
        let floor = o.min_rto_ms.map(Time::from_ms_f64).unwrap_or(min_rto);
        TcpFs {
            est: RtoEstimator::new(o.alpha, o.beta, o.k, floor),
            margin: o.margin,
            reset_rto: o.reset_rto,
            hold_closed: o.hold_closed,
            phase: Phase::Normal,
            records: Vec::new(),
            zero_window_acks: 0,
            held_acks: 0,
        }
    }

    /// A data segment arrived echoing `ts_ecr` (zero: no echo yet).
    pub fn on_data(&mut self, now: Time, ts_ecr: Time) {
        if ts_ecr > Time::ZERO && ts_ecr <= now {
            self.est.sample(now - ts_ecr);
        }
    }

    /// The mobility detector signals a handoff's start: freeze.
    pub fn start(&mut self, now: Time) {
        self.phase = Phase::Frozen;
        self.records.push(FsRecord {
            frozen_at: now,
            completed_at: now,
            hold_until: now,
            rto: Time::ZERO,
        });
    }

    /// The handoff completed: the window reopens (the caller sends that update now) and ACKs
    /// are held until the returned time.
    pub fn complete(&mut self, now: Time) -> Time {
        if self.reset_rto {
            self.est.est = None;
        }
        let rto = self.est.rto();
        let until = now + Time::from_secs_f64(rto.secs_f64() * (1.0 + self.margin));
        self.phase = Phase::Holding { until };
        if let Some(r) = self.records.last_mut() {
            r.completed_at = now;
            r.hold_until = until;
            r.rto = rto;
        }
        until
    }

    /// The window to advertise, given the receiver's normal one: zero while frozen, and with
    /// `hold_closed` while holding.
    pub fn window(&self, normal: u64) -> u64 {
        match self.phase {
            Phase::Frozen => 0,
            Phase::Holding { .. } if self.hold_closed => 0,
            _ => normal,
        }
    }

    /// With `hold_closed`, when the holding ends: the flow then sends the window update that
    /// reopens the window (no data can arrive to draw an ACK while it is closed).
    pub fn reopen_at(&self) -> Option<Time> {
        match self.phase {
            Phase::Holding { until } if self.hold_closed => Some(until),
            _ => None,
        }
    }

    /// May an ACK leave now? Counts what it withholds and zero-window ACKs.
    pub fn may_ack(&mut self, now: Time) -> bool {
        match self.phase {
            Phase::Holding { until } if now < until => {
                self.held_acks += 1;
                false
            }
            Phase::Holding { .. } => {
                self.phase = Phase::Normal;
                true
            }
            Phase::Frozen => {
                self.zero_window_acks += 1;
                true
            }
            Phase::Normal => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: f64) -> Time {
        Time::from_ms_f64(v)
    }

    #[test]
    fn rto_estimate_follows_the_papers_equations() {
        // alpha 1/8, beta 1/4, k 4, no floor. Samples 100, 120, 80 ms:
        // 1st: srtt 100, rttvar 50 -> rto 300.
        // 2nd: rttvar = 0.75*50 + 0.25*|100-120| = 42.5; srtt = 0.875*100 + 0.125*120 = 102.5
        //      -> rto = 102.5 + 170 = 272.5.
        // 3rd: rttvar = 0.75*42.5 + 0.25*|102.5-80| = 37.5; srtt = 0.875*102.5 + 0.125*80
        //      = 99.6875 -> rto = 99.6875 + 150 = 249.6875.
        let mut e = RtoEstimator::new(0.125, 0.25, 4.0, Time::ZERO);
        assert_eq!(
            e.rto(),
            Time::from_secs(1),
            "before any sample: RFC 6298's 1 s"
        );
        e.sample(ms(100.0));
        assert_eq!(e.rto(), ms(300.0));
        e.sample(ms(120.0));
        assert!((e.rto().ms_f64() - 272.5).abs() < 1e-6, "{:?}", e.rto());
        e.sample(ms(80.0));
        assert!((e.rto().ms_f64() - 249.6875).abs() < 1e-6, "{:?}", e.rto());
        assert!((e.srtt().unwrap().ms_f64() - 99.6875).abs() < 1e-6);
        // A floor above the estimate wins.
        let mut f = RtoEstimator::new(0.125, 0.25, 4.0, ms(400.0));
        f.sample(ms(100.0));
        assert_eq!(f.rto(), ms(400.0));
    }

    #[test]
    fn freeze_then_hold_for_rto_plus_margin() {
        let o = TcpFsOptions::default();
        let mut fs = TcpFs::new(&o, ms(200.0));
        // RTT samples of 300 ms each: srtt 300, rttvar 150 then 0.75*150 + 0 = 112.5
        // -> rto = 300 + 450 = 750 ms; holding = 1.1 * 750 = 825 ms.
        fs.on_data(Time::from_secs(1), Time::from_secs(1) - ms(300.0));
        fs.on_data(Time::from_secs(2), Time::from_secs(2) - ms(300.0));
        assert_eq!(fs.window(65_535), 65_535);
        assert!(fs.may_ack(Time::from_secs(2)));
        fs.start(Time::from_secs(10));
        assert_eq!(fs.window(65_535), 0, "zero window while frozen");
        assert!(fs.may_ack(Time::from_secs(10)), "zero-window ACKs do leave");
        assert_eq!(fs.zero_window_acks, 1);
        let until = fs.complete(Time::from_secs(11));
        assert_eq!(until, Time::from_secs(11) + ms(825.0));
        assert_eq!(
            fs.window(65_535),
            65_535,
            "the window reopens at completion"
        );
        assert!(!fs.may_ack(Time::from_secs(11) + ms(824.0)), "held");
        assert_eq!(fs.held_acks, 1);
        assert!(fs.may_ack(until), "after holding ACKs flow again");
        assert_eq!(fs.phase, Phase::Normal);
        assert_eq!(
            fs.records,
            vec![FsRecord {
                frozen_at: Time::from_secs(10),
                completed_at: Time::from_secs(11),
                hold_until: until,
                rto: ms(750.0),
            }]
        );
    }

    #[test]
    fn a_reset_estimate_holds_for_the_initial_rto() {
        // Samples of 40 ms: srtt 40, rttvar 20 -> 15 -> rto 100, floored at 200 ms; holding
        // 1.1 x 200 = 220 ms. Reset: the initial 1 s, holding 1.1 s; the next sample (440 ms,
        // the new path) starts afresh: srtt 440, rttvar 220 -> rto 1320 ms.
        for (reset, hold_ms) in [(false, 220.0), (true, 1100.0)] {
            let o = TcpFsOptions {
                reset_rto: reset,
                ..TcpFsOptions::default()
            };
            let mut fs = TcpFs::new(&o, ms(200.0));
            fs.on_data(Time::from_secs(1), Time::from_secs(1) - ms(40.0));
            fs.on_data(Time::from_secs(2), Time::from_secs(2) - ms(40.0));
            fs.start(Time::from_secs(10));
            let until = fs.complete(Time::from_secs(11));
            assert!(
                ((until - Time::from_secs(11)).ms_f64() - hold_ms).abs() < 1e-6,
                "reset {reset}: {until:?}"
            );
            if reset {
                fs.on_data(Time::from_secs(12), Time::from_secs(12) - ms(440.0));
                assert!((fs.est.rto().ms_f64() - 1320.0).abs() < 1e-6);
            }
        }
    }

    #[test]
    fn hold_closed_keeps_the_zero_window_until_the_holding_ends() {
        let o = TcpFsOptions {
            hold_closed: true,
            ..TcpFsOptions::default()
        };
        let mut fs = TcpFs::new(&o, ms(200.0));
        fs.start(Time::from_secs(10));
        assert_eq!(fs.reopen_at(), None, "frozen, not yet holding");
        // No sample: the initial 1 s, holding 1.1 s.
        let until = fs.complete(Time::from_secs(11));
        assert_eq!(until, Time::from_secs(11) + ms(1100.0));
        assert_eq!(fs.window(65_535), 0, "still closed while holding");
        assert_eq!(fs.reopen_at(), Some(until));
        assert!(!fs.may_ack(until - ms(1.0)));
        assert!(fs.may_ack(until));
        assert_eq!((fs.window(65_535), fs.reopen_at()), (65_535, None));
        // The default reopens at completion.
        let mut open = TcpFs::new(&TcpFsOptions::default(), ms(200.0));
        open.start(Time::from_secs(10));
        open.complete(Time::from_secs(11));
        assert_eq!((open.window(65_535), open.reopen_at()), (65_535, None));
    }

    #[test]
    fn the_floor_is_the_senders_min_rto_unless_given() {
        let mut fs = TcpFs::new(&TcpFsOptions::default(), ms(200.0));
        fs.on_data(Time::from_secs(1), Time::from_secs(1) - ms(10.0));
        // 10 + 4*5 = 30 ms < 200 ms floor: holding 220 ms.
        assert_eq!(
            fs.complete(Time::from_secs(2)),
            Time::from_secs(2) + ms(220.0)
        );
        let o = TcpFsOptions {
            min_rto_ms: Some(0.0),
            ..TcpFsOptions::default()
        };
        let mut fs = TcpFs::new(&o, ms(200.0));
        fs.on_data(Time::from_secs(1), Time::from_secs(1) - ms(10.0));
        assert_eq!(
            fs.complete(Time::from_secs(2)),
            Time::from_secs(2) + ms(33.0)
        );
    }
}
