//! The relay: a transparent TCP -> MPTCP proxy for the train, and an MPTCP -> TCP proxy for the
//! ground side.
//!
//! Train mode (the "MPTCP router" of the PHA and PROXY-LB papers, seeds.md sections 1-2):
//! passengers' TCP is redirected to the proxy by nftables (`redirect to :port` in the prerouting
//! nat hook); the original destination is read from conntrack with SO_ORIGINAL_DST and the proxy
//! connects to it with an IPPROTO_MPTCP socket (Documentation/networking/mptcp.rst), which falls
//! back to plain TCP inside the kernel when the server does not answer MP_CAPABLE (RFC 8684
//! section 3.7); fallback is detected with TCP_IS_MPTCP and counted.
//!
//! Ground mode: an IPPROTO_MPTCP listener (it accepts plain TCP too) relaying plain TCP to one
//! configured upstream, for servers that lack MPTCP.
//!
//! Relay rules: each direction is one read -> write_all loop through a bounded buffer, so bytes
//! keep their order and a slow reader stalls the writer (back-pressure through TCP flow
//! control); an EOF from one side becomes a shutdown(SHUT_WR) to the other (half-close) and the
//! other direction goes on; an error on either side ends both, and a reset is passed on as a
//! reset (SO_LINGER 0); no byte in either direction for `idle_timeout_s` closes the pair.
//!
//! Restarts ([`serve`]): on shutdown the listener is closed (new connections are refused by the
//! kernel) and the running relays go on until they end by themselves or `shutdown.drain_s` has
//! passed; those still running then are reset (never closed in order, which could pass for a
//! complete reply). A reload (SIGHUP) replaces the limits for new connections only.
//!
//! Stalls (crate::figures): the downlink pump times each wait for the server's next bytes; a
//! wait of at least `figures.stall_after_ms` (at most `figures::STALL_MAX`), after the first
//! bytes and with no passenger byte during it, is a stall, booked with the train's position.

use crate::config::{secs, ProxyConfig, ProxyMode};
use crate::figures::STALL_MAX;
use crate::metrics::Metrics;
use crate::sockopt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info, warn};

/// Opens the proxy's listening socket: MPTCP in ground mode (falling back to TCP if the kernel
/// lacks it), TCP in train mode.
pub fn bind(cfg: &ProxyConfig) -> io::Result<TcpListener> {
    let mptcp = cfg.mode == ProxyMode::Ground;
    let (s, is_mp) = sockopt::stream_socket(&cfg.listen, mptcp)?;
    if mptcp && !is_mp {
        warn!("kernel has no MPTCP: the ground-side listener accepts plain TCP only");
    }
    s.set_reuse_address(true)?;
    s.bind(&cfg.listen.into())?;
    s.listen(1024)?;
    TcpListener::from_std(std::net::TcpListener::from(s))
}

/// Runs the accept loop until `shutdown` resolves; then stops accepting and returns (relays in
/// progress are left to finish on the runtime).
pub async fn run(
    listener: TcpListener,
    cfg: ProxyConfig,
    metrics: Arc<Metrics>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let (_cfg_tx, cfg_rx) = watch::channel(Arc::new(cfg));
    let (_cut_tx, cut_rx) = watch::channel(false);
    accept_loop(
        listener,
        cfg_rx,
        metrics,
        cut_rx,
        Duration::from_millis(500),
        shutdown,
    )
    .await
}

/// The proxy with restarts that do not cut passengers: runs the accept loop with the current
/// configuration of `cfg` (a reload changes it for new connections) until `shutdown` resolves,
/// then closes the listener and lets running relays finish for the drain time (`drain`, read at
/// that moment); relays still running then are reset. Returns how many were cut.
pub async fn serve(
    listener: TcpListener,
    cfg: watch::Receiver<Arc<ProxyConfig>>,
    drain: watch::Receiver<Duration>,
    metrics: Arc<Metrics>,
    stall_after: Duration,
    shutdown: impl std::future::Future<Output = ()>,
) -> u64 {
    let (cut_tx, cut_rx) = watch::channel(false);
    accept_loop(
        listener,
        cfg.clone(),
        metrics.clone(),
        cut_rx,
        stall_after,
        shutdown,
    )
    .await;
    let drain = *drain.borrow();
    let running = metrics.conn_active.load(Relaxed);
    if running == 0 {
        return 0;
    }
    metrics.draining.store(1, Relaxed);
    info!(
        relays = running,
        drain_s = drain.as_secs_f64(),
        "stopped accepting; letting running relays finish"
    );
    let deadline = Instant::now() + drain;
    while metrics.conn_active.load(Relaxed) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let left = metrics.conn_active.load(Relaxed).max(0) as u64;
    if left == 0 {
        info!("drained: every relay finished");
    } else {
        warn!(
            relays = left,
            drain_s = drain.as_secs_f64(),
            "drain time over: resetting the relays still running"
        );
        metrics.drain_cut.fetch_add(left, Relaxed);
        let _ = cut_tx.send(true);
        // The relays reset their sockets and end; wait for them briefly.
        let until = Instant::now() + Duration::from_secs(2);
        while metrics.conn_active.load(Relaxed) > 0 && Instant::now() < until {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    metrics.draining.store(0, Relaxed);
    left
}

async fn accept_loop(
    listener: TcpListener,
    cfg_rx: watch::Receiver<Arc<ProxyConfig>>,
    metrics: Arc<Metrics>,
    cut: watch::Receiver<bool>,
    stall_after: Duration,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let local = listener.local_addr().ok();
    let cfg = cfg_rx.borrow().clone();
    info!(mode = ?cfg.mode, listen = ?local, "proxy listening");
    tokio::pin!(shutdown);
    let mut backoff = Duration::from_millis(5);
    loop {
        let accepted = tokio::select! {
            _ = &mut shutdown => break,
            a = listener.accept() => a,
        };
        let (client, peer) = match accepted {
            Ok(x) => {
                backoff = Duration::from_millis(5);
                x
            }
            Err(e) => {
                // EMFILE and friends: wait instead of spinning; the backlog holds new clients.
                warn!(error = %e, "accept failed");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        metrics.conn_accepted.fetch_add(1, Relaxed);
        let cfg = cfg_rx.borrow().clone();
        if metrics.conn_active.load(Relaxed) >= cfg.max_connections as i64 {
            metrics.conn_rejected.fetch_add(1, Relaxed);
            debug!(%peer, "connection limit reached; resetting");
            reset(&client);
            continue;
        }
        metrics.conn_active.fetch_add(1, Relaxed);
        let (metrics, cut) = (metrics.clone(), cut.clone());
        tokio::spawn(async move {
            handle(client, peer, local, &cfg, &metrics, cut, stall_after).await;
            metrics.conn_active.fetch_sub(1, Relaxed);
        });
    }
    drop(listener);
    info!("proxy stopped accepting");
}

fn reset(s: &TcpStream) {
    let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
}

async fn handle(
    client: TcpStream,
    peer: SocketAddr,
    local: Option<SocketAddr>,
    cfg: &ProxyConfig,
    metrics: &Metrics,
    cut: watch::Receiver<bool>,
    stall_after: Duration,
) {
    let dst = match cfg.mode {
        ProxyMode::Ground => match cfg.upstream {
            Some(u) => u,
            None => {
                // Config validation requires `upstream` in ground mode; refuse rather than panic.
                warn!(%peer, "ground mode without proxy.upstream; refusing");
                metrics.conn_failed.fetch_add(1, Relaxed);
                reset(&client);
                return;
            }
        },
        ProxyMode::Train => {
            // A dual-stack listener sees IPv4 passengers as v4-mapped IPv6: their conntrack
            // entry is IPv4, read with SOL_IP.
            let v6 = matches!(client.local_addr(), Ok(SocketAddr::V6(a)) if a.ip().to_ipv4_mapped().is_none());
            match sockopt::original_dst(&client, v6) {
                Ok(d) if Some(d) == local || d.port() == 0 => {
                    // Not redirected (a direct connection to the proxy port): relaying it would
                    // loop back into the proxy.
                    warn!(%peer, "connection was not redirected by nftables; refusing");
                    metrics.conn_failed.fetch_add(1, Relaxed);
                    reset(&client);
                    return;
                }
                Ok(d) => d,
                Err(e) => {
                    warn!(%peer, error = %e, "no original destination (is the nftables redirect and conntrack in place?)");
                    metrics.conn_failed.fetch_add(1, Relaxed);
                    reset(&client);
                    return;
                }
            }
        }
    };
    let want_mptcp = cfg.mode == ProxyMode::Train && cfg.mptcp;
    let (server, is_mptcp) = match connect(dst, want_mptcp, secs(cfg.connect_timeout_s)).await {
        Ok((s, is_mp_socket)) => {
            let transport = if !is_mp_socket {
                metrics.conn_plain.fetch_add(1, Relaxed);
                "tcp"
            } else if sockopt::is_mptcp(&s).unwrap_or(false) {
                metrics.conn_mptcp.fetch_add(1, Relaxed);
                sample_rtt(&s, metrics);
                "mptcp"
            } else {
                metrics.conn_fallback.fetch_add(1, Relaxed);
                "fallback"
            };
            debug!(%peer, %dst, transport, "relaying");
            (s, transport == "mptcp")
        }
        Err(e) => {
            debug!(%peer, %dst, error = %e, "onward connect failed");
            metrics.conn_failed.fetch_add(1, Relaxed);
            reset(&client);
            return;
        }
    };
    let end = relay_with(
        client,
        server,
        RelayOptions {
            buf_bytes: cfg.buffer_bytes,
            idle: secs(cfg.idle_timeout_s),
            sample_b_rtt: is_mptcp,
            stall_after: Some(stall_after),
            cut: Some(cut),
        },
        metrics,
    )
    .await;
    match end {
        Ok(RelayEnd::Done) => {}
        Ok(RelayEnd::Idle) => {
            metrics.conn_idle_timeouts.fetch_add(1, Relaxed);
            debug!(%peer, %dst, "idle timeout");
        }
        Ok(RelayEnd::Cut) => debug!(%peer, %dst, "reset at the end of the drain time"),
        Err(e) => {
            metrics.conn_errors.fetch_add(1, Relaxed);
            debug!(%peer, %dst, error = %e, "relay ended by error");
        }
    }
}

/// Folds the largest subflow RTT of an MPTCP connection into the gateway's RTT estimate (the
/// PHA-D lead time when `phad.rtt_ms` is not configured).
fn sample_rtt(s: &TcpStream, metrics: &Metrics) {
    if let Ok(rtts) = sockopt::subflow_rtts_us(s) {
        if let Some(max) = rtts.into_iter().max() {
            metrics.observe_rtt_us(max as u64);
        }
    }
}

/// Connects to `dst`, with MPTCP when asked and available; returns the stream and whether its
/// socket is an MPTCP socket.
pub async fn connect(
    dst: SocketAddr,
    mptcp: bool,
    timeout: Duration,
) -> io::Result<(TcpStream, bool)> {
    let (s, is_mp) = sockopt::stream_socket(&dst, mptcp)?;
    let sock = TcpSocket::from_std_stream(std::net::TcpStream::from(s));
    match tokio::time::timeout(timeout, sock.connect(dst)).await {
        Ok(Ok(st)) => Ok((st, is_mp)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(io::Error::new(io::ErrorKind::TimedOut, "connect timed out")),
    }
}

/// How a relay ended without an I/O error.
#[derive(Debug, PartialEq, Eq)]
pub enum RelayEnd {
    /// Both directions reached EOF and were passed on.
    Done,
    /// Neither direction moved a byte for the idle timeout.
    Idle,
    /// Reset at the end of the drain time after SIGTERM.
    Cut,
}

/// How [`relay_with`] runs.
pub struct RelayOptions {
    /// Relay buffer per direction.
    pub buf_bytes: usize,
    /// Neither direction moving a byte for this long ends the pair.
    pub idle: Duration,
    /// Fold `b`'s subflow RTTs into the RTT estimate at the end.
    pub sample_b_rtt: bool,
    /// Book downlink stalls of at least this long (crate::figures); `None`: do not.
    pub stall_after: Option<Duration>,
    /// When this turns true the pair is reset (end of the drain time).
    pub cut: Option<watch::Receiver<bool>>,
}

/// Relays between `a` (the passenger side) and `b` (the server side) until both directions are
/// done, one fails, or the pair is idle for `idle`. With `sample_b_rtt`, `b`'s subflow RTTs are
/// folded into the RTT estimate at the end (all subflows are up by then).
pub async fn relay(
    a: TcpStream,
    b: TcpStream,
    buf_bytes: usize,
    idle: Duration,
    metrics: &Metrics,
    sample_b_rtt: bool,
) -> io::Result<RelayEnd> {
    relay_with(
        a,
        b,
        RelayOptions {
            buf_bytes,
            idle,
            sample_b_rtt,
            stall_after: None,
            cut: None,
        },
        metrics,
    )
    .await
}

/// [`relay`] with every option.
pub async fn relay_with(
    mut a: TcpStream,
    mut b: TcpStream,
    opt: RelayOptions,
    metrics: &Metrics,
) -> io::Result<RelayEnd> {
    let RelayOptions {
        buf_bytes,
        idle,
        sample_b_rtt,
        stall_after,
        mut cut,
    } = opt;
    let start = Instant::now();
    let last = AtomicU64::new(0);
    // Time of the last passenger byte, microseconds from `start` + 1 (0: none yet).
    let last_up = AtomicU64::new(0);
    let res = {
        let (ar, aw) = a.split();
        let (br, bw) = b.split();
        let up_side = Side {
            last: &last,
            start,
            counter: &metrics.bytes_up,
            mark: Some(&last_up),
            stalls: None,
        };
        let down_side = Side {
            last: &last,
            start,
            counter: &metrics.bytes_down,
            mark: None,
            stalls: stall_after.map(|d| (d, &last_up, metrics)),
        };
        let up = pump(ar, bw, buf_bytes, up_side);
        let down = pump(br, aw, buf_bytes, down_side);
        let both = async { tokio::try_join!(up, down).map(|_| RelayEnd::Done) };
        let watchdog = async {
            loop {
                let since = Duration::from_millis(last.load(Relaxed));
                let deadline = start + since + idle;
                if Instant::now() >= deadline {
                    return RelayEnd::Idle;
                }
                tokio::time::sleep_until(deadline).await;
            }
        };
        let cut_now = async {
            match cut.as_mut() {
                Some(c) => {
                    let _ = c.wait_for(|v| *v).await;
                }
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = both => r,
            r = watchdog => Ok(r),
            _ = cut_now => Ok(RelayEnd::Cut),
        }
    };
    if sample_b_rtt {
        sample_rtt(&b, metrics);
    }
    if matches!(res, Err(_) | Ok(RelayEnd::Cut)) {
        // Pass a reset on as a reset, not as an orderly close that could look like a full reply.
        reset(&a);
        reset(&b);
    }
    res
}

/// What one pump direction updates.
struct Side<'a> {
    /// Last byte either way, ms from `start` (the idle watchdog).
    last: &'a AtomicU64,
    start: Instant,
    counter: &'a AtomicU64,
    /// This direction's last byte, us from `start` + 1 (the passenger's, for the stall rule).
    mark: Option<&'a AtomicU64>,
    /// Downlink: (stall threshold, the passenger's last byte, where stalls are booked).
    stalls: Option<(Duration, &'a AtomicU64, &'a Metrics)>,
}

async fn pump<R, W>(mut r: R, mut w: W, buf_bytes: usize, side: Side<'_>) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let Side {
        last,
        start,
        counter,
        mark,
        stalls,
    } = side;
    let mut buf = vec![0u8; buf_bytes];
    let mut got_any = false;
    loop {
        let waited_from = Instant::now();
        let n = r.read(&mut buf).await?;
        if let Some((threshold, last_up, metrics)) = stalls {
            if n > 0 {
                let now = Instant::now();
                let wait = now - waited_from;
                // Passenger bytes since the wait began: a request waiting for its answer.
                let up_mark = last_up.load(Relaxed);
                let from_us = (waited_from - start).as_micros() as u64 + 1;
                if got_any && wait >= threshold && wait <= STALL_MAX && up_mark < from_us {
                    metrics.stall_book().stall(waited_from, now);
                }
                got_any = true;
            }
        }
        if n == 0 {
            // Half-close: pass the FIN on; the other direction keeps going.
            return match w.shutdown().await {
                Ok(()) => Ok(()),
                // The peer already went away entirely; nothing left to tell it.
                Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
                Err(e) => Err(e),
            };
        }
        if let Some(m) = mark {
            m.store(start.elapsed().as_micros() as u64 + 1, Relaxed);
        }
        w.write_all(&buf[..n]).await?;
        counter.fetch_add(n as u64, Relaxed);
        last.store(start.elapsed().as_millis() as u64, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    async fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
        let (b, _) = l.accept().await.unwrap();
        (a, b)
    }

    /// client <-> [proxy a | proxy b] <-> server, all on loopback.
    async fn setup() -> (TcpStream, TcpStream, TcpStream, TcpStream) {
        let (client, pa) = pair().await;
        let (pb, server) = pair().await;
        (client, pa, pb, server)
    }

    #[tokio::test]
    async fn half_close_passes_fin_and_keeps_other_direction() {
        let (mut client, pa, pb, mut server) = setup().await;
        let m = Metrics::new(&[]);
        let m2 = m.clone();
        let task =
            tokio::spawn(
                async move { relay(pa, pb, 4096, Duration::from_secs(30), &m2, false).await },
            );
        client.write_all(b"request").await.unwrap();
        client.shutdown().await.unwrap();
        let mut got = Vec::new();
        server.read_to_end(&mut got).await.unwrap(); // sees EOF after the request
        assert_eq!(got, b"request");
        // The server can still answer after the client's half-close.
        server.write_all(b"reply").await.unwrap();
        server.shutdown().await.unwrap();
        let mut back = Vec::new();
        client.read_to_end(&mut back).await.unwrap();
        assert_eq!(back, b"reply");
        assert_eq!(task.await.unwrap().unwrap(), RelayEnd::Done);
        assert_eq!(m.bytes_up.load(Relaxed), 7);
        assert_eq!(m.bytes_down.load(Relaxed), 5);
    }

    #[tokio::test]
    async fn a_downlink_pause_mid_stream_is_a_stall_and_an_answer_to_a_request_is_not() {
        let (mut client, pa, pb, mut server) = setup().await;
        let m = Metrics::new(&[]);
        let m2 = m.clone();
        let task = tokio::spawn(async move {
            let opt = RelayOptions {
                buf_bytes: 4096,
                idle: Duration::from_secs(30),
                sample_b_rtt: false,
                stall_after: Some(Duration::from_millis(150)),
                cut: None,
            };
            relay_with(pa, pb, opt, &m2).await
        });
        let mut buf = [0u8; 64];
        // A request, answered after 300 ms: waiting for an answer is not a stall.
        client.write_all(b"GET").await.unwrap();
        let mut got = [0u8; 3];
        server.read_exact(&mut got).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        server.write_all(b"part1").await.unwrap();
        client.read_exact(&mut buf[..5]).await.unwrap();
        assert_eq!(m.stall_book().unknown(), (0.0, 0));
        // Mid-stream, 300 ms without a byte and nothing from the passenger: a stall.
        tokio::time::sleep(Duration::from_millis(300)).await;
        server.write_all(b"part2").await.unwrap();
        client.read_exact(&mut buf[..5]).await.unwrap();
        let (secs, n) = m.stall_book().unknown();
        assert_eq!(n, 1);
        assert!((0.25..5.0).contains(&secs), "{secs}");
        // A short pause (below 150 ms): no stall.
        tokio::time::sleep(Duration::from_millis(20)).await;
        server.write_all(b"part3").await.unwrap();
        client.read_exact(&mut buf[..5]).await.unwrap();
        assert_eq!(m.stall_book().unknown().1, 1);
        drop(client);
        drop(server);
        let _ = task.await;
    }

    #[tokio::test]
    async fn the_end_of_the_drain_resets_both_sides() {
        let (mut client, pa, pb, mut server) = setup().await;
        let m = Metrics::new(&[]);
        let (cut_tx, cut_rx) = watch::channel(false);
        let m2 = m.clone();
        let task = tokio::spawn(async move {
            let opt = RelayOptions {
                buf_bytes: 4096,
                idle: Duration::from_secs(30),
                sample_b_rtt: false,
                stall_after: None,
                cut: Some(cut_rx),
            };
            relay_with(pa, pb, opt, &m2).await
        });
        client.write_all(b"x").await.unwrap();
        let mut b = [0u8; 1];
        server.read_exact(&mut b).await.unwrap();
        cut_tx.send(true).unwrap();
        assert_eq!(task.await.unwrap().unwrap(), RelayEnd::Cut);
        // Both ends see a reset, not an orderly end that could pass for a complete reply.
        for s in [&mut client, &mut server] {
            let r = s.read(&mut b).await;
            assert!(
                matches!(r, Err(ref e) if e.kind() == io::ErrorKind::ConnectionReset),
                "{r:?}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn idle_pair_is_closed() {
        let (_client, pa, pb, _server) = setup().await;
        let m = Metrics::new(&[]);
        // Paused clock: the 10 s idle timeout elapses virtually, not in wall time.
        let r = relay(pa, pb, 4096, Duration::from_secs(10), &m, false)
            .await
            .unwrap();
        assert_eq!(r, RelayEnd::Idle);
    }

    #[tokio::test]
    async fn client_reset_ends_relay_with_error_and_resets_server() {
        let (client, pa, pb, mut server) = setup().await;
        let m = Metrics::new(&[]);
        let m2 = m.clone();
        let task =
            tokio::spawn(
                async move { relay(pa, pb, 4096, Duration::from_secs(30), &m2, false).await },
            );
        reset(&client);
        drop(client);
        assert!(task.await.unwrap().is_err());
        let mut buf = [0u8; 16];
        let r = server.read(&mut buf).await;
        assert!(
            matches!(r, Err(ref e) if e.kind() == io::ErrorKind::ConnectionReset),
            "{r:?}"
        );
    }
}
