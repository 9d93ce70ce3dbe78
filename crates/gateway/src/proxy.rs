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

use crate::config::{secs, ProxyConfig, ProxyMode};
use crate::metrics::Metrics;
use crate::sockopt;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
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
    let cfg = Arc::new(cfg);
    let local = listener.local_addr().ok();
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
        if metrics.conn_active.load(Relaxed) >= cfg.max_connections as i64 {
            metrics.conn_rejected.fetch_add(1, Relaxed);
            debug!(%peer, "connection limit reached; resetting");
            reset(&client);
            continue;
        }
        metrics.conn_active.fetch_add(1, Relaxed);
        let (cfg, metrics) = (cfg.clone(), metrics.clone());
        tokio::spawn(async move {
            handle(client, peer, local, &cfg, &metrics).await;
            metrics.conn_active.fetch_sub(1, Relaxed);
        });
    }
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
    let end = relay(
        client,
        server,
        cfg.buffer_bytes,
        secs(cfg.idle_timeout_s),
        metrics,
        is_mptcp,
    )
    .await;
    match end {
        Ok(RelayEnd::Done) => {}
        Ok(RelayEnd::Idle) => {
            metrics.conn_idle_timeouts.fetch_add(1, Relaxed);
            debug!(%peer, %dst, "idle timeout");
        }
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
}

/// Relays between `a` (the passenger side) and `b` (the server side) until both directions are
/// done, one fails, or the pair is idle for `idle`. With `sample_b_rtt`, `b`'s subflow RTTs are
/// folded into the RTT estimate at the end (all subflows are up by then).
pub async fn relay(
    mut a: TcpStream,
    mut b: TcpStream,
    buf_bytes: usize,
    idle: Duration,
    metrics: &Metrics,
    sample_b_rtt: bool,
) -> io::Result<RelayEnd> {
    let start = Instant::now();
    let last = AtomicU64::new(0);
    let res = {
        let (ar, aw) = a.split();
        let (br, bw) = b.split();
        let up = pump(ar, bw, buf_bytes, &last, start, &metrics.bytes_up);
        let down = pump(br, aw, buf_bytes, &last, start, &metrics.bytes_down);
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
        tokio::select! {
            r = both => r,
            r = watchdog => Ok(r),
        }
    };
    if sample_b_rtt {
        sample_rtt(&b, metrics);
    }
    if res.is_err() {
        // Pass a reset on as a reset, not as an orderly close that could look like a full reply.
        reset(&a);
        reset(&b);
    }
    res
}

async fn pump<R, W>(
    mut r: R,
    mut w: W,
    buf_bytes: usize,
    last: &AtomicU64,
    start: Instant,
    counter: &AtomicU64,
) -> io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; buf_bytes];
    loop {
        let n = r.read(&mut buf).await?;
        if n == 0 {
            // Half-close: pass the FIN on; the other direction keeps going.
            return match w.shutdown().await {
                Ok(()) => Ok(()),
                // The peer already went away entirely; nothing left to tell it.
                Err(e) if e.kind() == io::ErrorKind::NotConnected => Ok(()),
                Err(e) => Err(e),
            };
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
