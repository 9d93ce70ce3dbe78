//! Active probing of each carrier: is it still carrying packets? A carrier can lose every packet
//! with its interface up and its address in place (a radio link failure the modem has not
//! reported yet, a stalled bearer); only traffic through it tells. This is the tracking mwan3 and
//! OpenMPTCProuter do with pings, done here with a TCP connection attempt, which needs no raw
//! socket: any answer (SYN-ACK, or a RST from a closed port) proves the path works both ways.
//!
//! Rule: every `interval_ms` a probe is sent from the carrier's current address and bound to its
//! interface (`SO_BINDTODEVICE`), to `probe`; a probe unanswered after `timeout_ms` (or refused
//! locally: no route, network down) failed. After `failures` consecutive failed probes (in the
//! order they were sent) the carrier is down, lost at the sending time of the first of them; one
//! answered probe brings it back, returned at that probe's sending time. Probes overlap when the
//! timeout exceeds the interval; each result is taken in sending order.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;
use tokio::time::Instant;

/// The outcome of one probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeResult {
    pub carrier: usize,
    /// Sequence number per carrier (sending order).
    pub seq: u64,
    pub sent: Instant,
    pub ok: bool,
}

/// A change of a carrier's probe verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Down since the sending time of the first of the failed probes.
    Down { since: Instant },
    /// Up again since the sending time of the answered probe.
    Up { since: Instant },
}

/// The rule of the module header for one carrier.
#[derive(Debug, Clone)]
pub struct ProbeState {
    failures_needed: u32,
    /// Results not yet taken, by sequence number (they may arrive out of order).
    waiting: std::collections::BTreeMap<u64, ProbeResult>,
    next_seq: u64,
    run: u32,
    run_start: Option<Instant>,
    down: bool,
}

impl ProbeState {
    pub fn new(failures: u32) -> ProbeState {
        ProbeState {
            failures_needed: failures.max(1),
            waiting: Default::default(),
            next_seq: 0,
            run: 0,
            run_start: None,
            down: false,
        }
    }

    pub fn is_down(&self) -> bool {
        self.down
    }

    /// Forgets the verdict (the link went down and up: the carrier starts again as up).
    pub fn reset(&mut self) {
        self.down = false;
        self.run = 0;
        self.run_start = None;
    }

    /// Takes one result; returns the verdict when it changes.
    pub fn result(&mut self, r: ProbeResult) -> Option<Verdict> {
        if r.seq < self.next_seq {
            return None;
        }
        self.waiting.insert(r.seq, r);
        let mut out = None;
        while let Some(r) = self.waiting.remove(&self.next_seq) {
            self.next_seq += 1;
            if r.ok {
                self.run = 0;
                self.run_start = None;
                if self.down {
                    self.down = false;
                    out = Some(Verdict::Up { since: r.sent });
                }
            } else {
                if self.run == 0 {
                    self.run_start = Some(r.sent);
                }
                self.run += 1;
                if !self.down && self.run >= self.failures_needed {
                    self.down = true;
                    out = Some(Verdict::Down {
                        since: self.run_start.unwrap_or(r.sent),
                    });
                }
            }
        }
        out
    }
}

/// One probe: a TCP connection attempt from `src` bound to `ifname` to `target`. `Ok(true)`:
/// answered (connected or refused by the far end); `Ok(false)`: unanswered within `timeout` or
/// refused locally.
pub async fn probe(
    src: IpAddr,
    ifname: &str,
    target: SocketAddr,
    timeout: Duration,
) -> io::Result<bool> {
    if src.is_ipv4() != target.is_ipv4() {
        return Ok(false);
    }
    let sock = match target {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    // Through this carrier only: its interface and its address.
    socket2::SockRef::from(&sock).bind_device(Some(ifname.as_bytes()))?;
    sock.bind(SocketAddr::new(src, 0))?;
    match tokio::time::timeout(timeout, sock.connect(target)).await {
        Ok(Ok(s)) => {
            // Reset rather than close: no TIME_WAIT per probe.
            let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
            Ok(true)
        }
        Ok(Err(e)) if e.kind() == io::ErrorKind::ConnectionRefused => Ok(true),
        Ok(Err(_)) | Err(_) => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn down_after_consecutive_failures_from_the_first_up_at_the_first_answer() {
        let t = Instant::now();
        let r = |seq: u64, ok: bool| ProbeResult {
            carrier: 0,
            seq,
            sent: t + Duration::from_millis(500 * seq),
            ok,
        };
        let mut p = ProbeState::new(3);
        assert_eq!(p.result(r(0, true)), None);
        assert_eq!(p.result(r(1, false)), None);
        // An answer in between restarts the count.
        assert_eq!(p.result(r(2, true)), None);
        assert_eq!(p.result(r(3, false)), None);
        assert_eq!(p.result(r(4, false)), None);
        // Third failure in a row: down since probe 3 was sent (1500 ms).
        assert_eq!(
            p.result(r(5, false)),
            Some(Verdict::Down {
                since: t + Duration::from_millis(1500)
            })
        );
        assert!(p.is_down());
        assert_eq!(p.result(r(6, false)), None);
        // Out of order: probe 8 answered before 7 failed; taken in sending order.
        assert_eq!(p.result(r(8, true)), None);
        assert_eq!(
            p.result(r(7, false)),
            Some(Verdict::Up {
                since: t + Duration::from_millis(4000)
            })
        );
        // A stale duplicate is ignored.
        assert_eq!(p.result(r(3, false)), None);
    }

    #[tokio::test]
    async fn a_refused_probe_is_an_answer_and_a_mismatched_family_is_not() {
        // A closed port on loopback answers with a RST.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let target: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let ok = probe(
            "127.0.0.1".parse().unwrap(),
            "lo",
            target,
            Duration::from_secs(2),
        )
        .await
        .unwrap();
        assert!(ok);
        let v6 = probe("::1".parse().unwrap(), "lo", target, Duration::from_secs(2))
            .await
            .unwrap();
        assert!(!v6);
    }
}
