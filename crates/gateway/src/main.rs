//! `railpath-gateway`: the onboard daemon (docs/gateway.md).
//!
//! `railpath-gateway run -c gateway.toml` runs the proxy, the PHA-D controller, the handover
//! logger and the metrics endpoint until SIGTERM/SIGINT; `railpath-gateway check -c gateway.toml`
//! validates the configuration and every file it names, then exits (0 when usable).

use clap::{Parser, Subcommand};
use railpath_gateway::config::{Config, LogFormat};
use railpath_gateway::controller::{load_table, Controller};
use railpath_gateway::handover_log::{self, HandoverLogger};
use railpath_gateway::metrics::{self, Metrics};
use railpath_gateway::position::{PositionSource, PositionState};
use railpath_gateway::proxy;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tracing::{error, info, warn};

#[derive(Parser)]
#[command(
    name = "railpath-gateway",
    version,
    about = "railpath onboard gateway: TCP->MPTCP proxy and PHA-D handover controller"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run the daemon.
    Run {
        #[arg(short, long, default_value = "/etc/railpath/gateway.toml")]
        config: PathBuf,
    },
    /// Validate the configuration, the handover table and the track/replay file, then exit.
    Check {
        #[arg(short, long, default_value = "/etc/railpath/gateway.toml")]
        config: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Check { config } => check(&config),
        Cmd::Run { config } => {
            let cfg = match Config::load(&config) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!(
                        "railpath-gateway: {}",
                        railpath_core::shorten(&e.to_string())
                    );
                    return ExitCode::from(2);
                }
            };
            init_logging(&cfg);
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    eprintln!("railpath-gateway: cannot start the runtime: {e}");
                    return ExitCode::from(1);
                }
            };
            rt.block_on(run(cfg))
        }
    }
}

fn check(path: &std::path::Path) -> ExitCode {
    let cfg = match Config::load(path) {
        Ok(c) => c,
        Err(e) => {
            eprintln!(
                "railpath-gateway: {}",
                railpath_core::shorten(&e.to_string())
            );
            return ExitCode::from(2);
        }
    };
    let mut ok = true;
    if let Some(ph) = &cfg.phad {
        if let Err(e) = PositionSource::open(&ph.position) {
            eprintln!(
                "railpath-gateway: phad.position: {}",
                railpath_core::shorten(&e.to_string())
            );
            ok = false;
        }
        match load_table(ph, &cfg.carriers) {
            Err(e) => {
                eprintln!(
                    "railpath-gateway: phad.table: {}",
                    railpath_core::shorten(&e.to_string())
                );
                ok = false;
            }
            Ok(t) => {
                for u in &t.unknown {
                    eprintln!(
                        "railpath-gateway: carrier {u:?} is not in the handover table {} (known: {}); it would never be flipped",
                        ph.table.display(),
                        t.predictor.known_carriers().join(", ")
                    );
                    ok = false;
                }
                for u in &t.unused {
                    eprintln!(
                        "railpath-gateway: warning: table carrier {u:?} has no [[carrier]] entry"
                    );
                }
            }
        }
    }
    if ok {
        println!("{}: ok", path.display());
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

fn init_logging(cfg: &Config) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&cfg.log.level));
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cfg.log.format {
        LogFormat::Json => b.json().init(),
        LogFormat::Text => b.init(),
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        error!("cannot install signal handlers; stop with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => info!("SIGTERM: shutting down"),
        _ = int.recv() => info!("SIGINT: shutting down"),
    }
}

/// A non-blocking TCP socket bound to `addr` but not yet listening.
fn bind_unlistened(addr: std::net::SocketAddr) -> std::io::Result<socket2::Socket> {
    let s = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    s.set_reuse_address(true)?;
    s.set_nonblocking(true)?;
    s.bind(&addr.into())?;
    Ok(s)
}

async fn run(cfg: Config) -> ExitCode {
    let metrics = Metrics::new(
        &cfg.carriers
            .iter()
            .map(|c| (c.name.clone(), c.interface.clone()))
            .collect::<Vec<_>>(),
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let mut tasks = Vec::new();

    // The metrics port is bound first (a taken port fails the start at once) but listens last,
    // once the proxy listens and the controller runs: a connection to it means the daemon is
    // up, so supervisors and tests can use it as a readiness probe.
    let metrics_socket = match &cfg.metrics {
        Some(m) => match bind_unlistened(m.listen) {
            Ok(s) => Some((s, m.listen)),
            Err(e) => {
                error!(listen = %m.listen, error = %e, "cannot listen for metrics");
                return ExitCode::from(1);
            }
        },
        None => None,
    };

    if let Some(p) = &cfg.proxy {
        match proxy::bind(p) {
            Ok(l) => tasks.push(tokio::spawn(proxy::run(
                l,
                p.clone(),
                metrics.clone(),
                stopped(stop_rx.clone()),
            ))),
            Err(e) => {
                error!(listen = %p.listen, error = %e, "cannot listen for the proxy");
                return ExitCode::from(1);
            }
        }
    }

    let (pos_tx, pos_rx) = watch::channel(PositionState::Unknown("no position yet".into()));
    let mut predictor = None;
    if let Some(ph) = &cfg.phad {
        let started = PositionSource::open(&ph.position).and_then(|src| {
            let ctl = Controller::new(&cfg, metrics.clone())?;
            Ok((src, ctl))
        });
        match started {
            Ok((src, ctl)) => {
                predictor = Some(ctl.predictor().clone());
                metrics.phad_active.store(1, Relaxed);
                tokio::spawn(src.run(pos_tx, metrics.clone()));
                tasks.push(tokio::spawn(
                    ctl.run(pos_rx.clone(), stopped(stop_rx.clone())),
                ));
                info!(
                    lead_ms = ph.lead_time().map(|l| l.as_secs_f64() * 1e3),
                    dry_run = ph.dry_run,
                    "PHA-D controller running"
                );
            }
            Err(e) if cfg.proxy.is_some() => {
                // Passengers keep their connectivity: the proxy runs with plain MPTCP scheduling.
                error!(error = %e, "PHA-D disabled: all carriers stay as configured; the proxy keeps running");
            }
            Err(e) => {
                error!(error = %e, "PHA-D cannot start");
                return ExitCode::from(1);
            }
        }
    }

    if let Some(h) = &cfg.handover_log {
        let (tx, rx) = mpsc::channel(1024);
        let stale = cfg
            .phad
            .as_ref()
            .map(|p| railpath_gateway::config::millis(p.stale_after_ms))
            .unwrap_or(Duration::from_secs(2));
        let logger = HandoverLogger::new(
            h.path.clone(),
            predictor,
            pos_rx.clone(),
            stale,
            metrics.clone(),
        );
        tokio::spawn(logger.run(rx));
        if let Some(ev) = &h.events {
            tokio::spawn(handover_log::follow_events(ev.clone(), tx.clone()));
        }
        for c in &cfg.carriers {
            if let (Some(argv), Some(ptr)) = (&c.cell_command, &c.cell_pointer) {
                tokio::spawn(handover_log::poll_cell(
                    c.name.clone(),
                    argv.clone(),
                    ptr.clone(),
                    railpath_gateway::config::millis(h.cell_poll_ms),
                    tx.clone(),
                ));
            }
        }
        info!(path = %h.path.display(), "handover log");
    }

    if let Some((sock, listen)) = metrics_socket {
        let listening = sock
            .listen(128)
            .and_then(|()| tokio::net::TcpListener::from_std(std::net::TcpListener::from(sock)));
        match listening {
            Ok(l) => {
                info!(listen = %listen, "metrics at /metrics");
                tokio::spawn(metrics::serve(l, metrics.clone()));
            }
            Err(e) => {
                error!(listen = %listen, error = %e, "cannot listen for metrics");
                return ExitCode::from(1);
            }
        }
    }

    shutdown_signal().await;
    let _ = stop_tx.send(true);
    for t in tasks {
        if tokio::time::timeout(Duration::from_secs(5), t)
            .await
            .is_err()
        {
            warn!("a task did not stop within 5 s");
        }
    }
    info!("stopped");
    ExitCode::SUCCESS
}
