//! `railpath-gateway`: the onboard daemon (docs/gateway.md).
//!
//! `railpath-gateway run -c gateway.toml` runs the proxy, the PHA-D controller, the handover
//! logger and the metrics endpoint until SIGTERM/SIGINT (the proxy stops accepting and lets
//! running relays finish for `shutdown.drain_s`; SIGHUP reloads the configuration and the
//! handover table, validated first); `railpath-gateway check -c gateway.toml`
//! validates the configuration and every file it names, then exits (0 when usable).

use clap::{Parser, Subcommand};
use railpath_gateway::config::{Config, LogFormat};
use railpath_gateway::controller::{load_table, Controller, Reload};
use railpath_gateway::handover_log::{self, HandoverLogger};
use railpath_gateway::metrics::{self, Metrics};
use railpath_gateway::position::{PositionSource, PositionState};
use railpath_gateway::proxy;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
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
            rt.block_on(run(cfg, config))
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

/// What a signal asks for.
enum Signal {
    Stop(&'static str),
    Reload,
}

/// Reads and validates the configuration and every file it names, as `check` does, and decides
/// what a running daemon can take from it. Errors say what is wrong; the running configuration
/// stays.
fn prepare_reload(
    path: &Path,
    running: &Config,
) -> Result<(Config, Option<Reload>, Vec<String>), String> {
    let new = Config::load(path).map_err(|e| railpath_core::shorten(&e.to_string()))?;
    let mut later = Vec::new();
    let differs =
        |a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| format!("{a:?}") != format!("{b:?}");
    let reload = match (&running.phad, &new.phad) {
        (Some(old), Some(ph)) => {
            PositionSource::open(&ph.position).map_err(|e| format!("phad.position: {e}"))?;
            let table =
                load_table(ph, &running.carriers).map_err(|e| format!("phad.table: {e}"))?;
            if !table.unknown.is_empty() {
                return Err(format!(
                    "phad.table: {}: carrier(s) {} not in the table (known: {})",
                    ph.table.display(),
                    table.unknown.join(", "),
                    table.predictor.known_carriers().join(", ")
                ));
            }
            if differs(&old.position, &ph.position) {
                later.push("phad.position");
            }
            if old.dry_run != ph.dry_run {
                later.push("phad.dry_run");
            }
            if old.tick_ms != ph.tick_ms {
                later.push("phad.tick_ms");
            }
            let mut merged = ph.clone();
            merged.position = old.position.clone();
            merged.dry_run = old.dry_run;
            merged.tick_ms = old.tick_ms;
            Some(Reload {
                phad: merged,
                table,
            })
        }
        (None, None) => None,
        _ => {
            later.push("phad");
            None
        }
    };
    match (&running.proxy, &new.proxy) {
        (Some(a), Some(b)) => {
            if a.mode != b.mode
                || a.listen != b.listen
                || a.upstream != b.upstream
                || a.mptcp != b.mptcp
            {
                later.push("proxy.mode/listen/upstream/mptcp");
            }
        }
        (None, None) => {}
        _ => later.push("proxy"),
    }
    if differs(&running.carriers, &new.carriers) {
        later.push("carrier");
    }
    if differs(&running.metrics, &new.metrics) {
        later.push("metrics");
    }
    if differs(&running.log, &new.log) {
        later.push("log");
    }
    if differs(&running.health, &new.health) {
        later.push("health");
    }
    if differs(&running.handover_log, &new.handover_log) {
        later.push("handover_log");
    }
    if differs(&running.figures, &new.figures) {
        later.push("figures");
    }
    Ok((new, reload, later.into_iter().map(String::from).collect()))
}

async fn run(cfg: Config, path: PathBuf) -> ExitCode {
    let metrics = Metrics::with_bins(
        &cfg.carriers
            .iter()
            .map(|c| (c.name.clone(), c.interface.clone()))
            .collect::<Vec<_>>(),
        cfg.figures.position_bin_m,
    );
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        error!("cannot install signal handlers");
        return ExitCode::from(1);
    };
    let (stop_tx, stop_rx) = watch::channel(false);
    let (ctl_stop_tx, ctl_stop_rx) = watch::channel(false);
    let stopped = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };

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

    let mut proxy_task = None;
    let mut proxy_cfg = None;
    let (drain_tx, drain_rx) = watch::channel(railpath_gateway::config::secs(cfg.shutdown.drain_s));
    if let Some(p) = &cfg.proxy {
        match proxy::bind(p) {
            Ok(l) => {
                let (tx, rx) = watch::channel(Arc::new(p.clone()));
                proxy_cfg = Some(tx);
                proxy_task = Some(tokio::spawn(proxy::serve(
                    l,
                    rx,
                    drain_rx.clone(),
                    metrics.clone(),
                    railpath_gateway::config::millis(cfg.figures.stall_after_ms),
                    stopped(stop_rx.clone()),
                )));
            }
            Err(e) => {
                error!(listen = %p.listen, error = %e, "cannot listen for the proxy");
                return ExitCode::from(1);
            }
        }
    }

    let (pos_tx, pos_rx) = watch::channel(PositionState::Unknown("no position yet".into()));
    let (reload_tx, reload_rx) = mpsc::unbounded_channel();
    let mut predictor = watch::channel(None).1;
    let mut ctl_task = None;
    if Controller::needed(&cfg) {
        let started = match &cfg.phad {
            Some(ph) => PositionSource::open(&ph.position).map(Some),
            None => Ok(None),
        }
        .and_then(|src| {
            let ctl = Controller::new(&cfg, metrics.clone())?;
            Ok((src, ctl))
        });
        match started {
            Ok((src, ctl)) => {
                predictor = ctl.predictor();
                if let Some(src) = src {
                    metrics.phad_active.store(1, Relaxed);
                    tokio::spawn(src.run(pos_tx, metrics.clone()));
                }
                ctl_task = Some(tokio::spawn(ctl.run_with_reloads(
                    pos_rx.clone(),
                    reload_rx,
                    stopped(ctl_stop_rx.clone()),
                )));
                if let Some(ph) = &cfg.phad {
                    info!(
                        lead_ms = ph.lead_time().map(|l| l.as_secs_f64() * 1e3),
                        dry_run = ph.dry_run,
                        "PHA-D controller running"
                    );
                }
            }
            Err(e) if cfg.proxy.is_some() => {
                // Passengers keep their connectivity: the proxy runs with plain MPTCP scheduling.
                error!(error = %e, "controller disabled (no PHA-D, no carrier management): all carriers stay as configured; the proxy keeps running");
            }
            Err(e) => {
                error!(error = %e, "controller cannot start");
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

    let mut running = cfg;
    loop {
        let sig = tokio::select! {
            _ = term.recv() => Signal::Stop("SIGTERM"),
            _ = int.recv() => Signal::Stop("SIGINT"),
            _ = hup.recv() => Signal::Reload,
        };
        match sig {
            Signal::Stop(name) => {
                info!(signal = name, "shutting down");
                break;
            }
            Signal::Reload => match prepare_reload(&path, &running) {
                Ok((new, reload, later)) => {
                    if let (Some(tx), Some(p)) = (&proxy_cfg, &new.proxy) {
                        let mut p = p.clone();
                        if let Some(old) = &running.proxy {
                            p.mode = old.mode;
                            p.listen = old.listen;
                            p.upstream = old.upstream;
                            p.mptcp = old.mptcp;
                        }
                        tx.send_replace(Arc::new(p));
                    }
                    if let Some(r) = reload {
                        let _ = reload_tx.send(r);
                    }
                    drain_tx.send_replace(railpath_gateway::config::secs(new.shutdown.drain_s));
                    for k in &later {
                        warn!(key = %k, "reload: this change takes effect at the next restart");
                    }
                    metrics.reloads_ok.fetch_add(1, Relaxed);
                    metrics.reload_failed.store(0, Relaxed);
                    info!(config = %path.display(), "SIGHUP: configuration and handover table reloaded; live connections untouched");
                    // Keep what runs: only the reloadable parts of the new file are in use.
                    let mut kept = new;
                    kept.carriers = running.carriers.clone();
                    kept.metrics = running.metrics.clone();
                    kept.log = running.log.clone();
                    kept.health = running.health.clone();
                    kept.handover_log = running.handover_log.clone();
                    kept.figures = running.figures.clone();
                    if later.iter().any(|k| k.starts_with("proxy")) {
                        kept.proxy = running.proxy.clone();
                    }
                    if later.iter().any(|k| k.starts_with("phad")) {
                        kept.phad = running.phad.clone();
                    }
                    running = kept;
                }
                Err(e) => {
                    metrics.reloads_refused.fetch_add(1, Relaxed);
                    metrics.reload_failed.store(1, Relaxed);
                    error!(config = %path.display(), error = %e, "SIGHUP: reload refused; the running configuration and handover table stay in use");
                }
            },
        }
    }
    // Stop accepting and let the relays finish (the controller keeps steering meanwhile), then
    // stop the controller, which leaves every carrier regular.
    let _ = stop_tx.send(true);
    if let Some(t) = proxy_task {
        let _ = t.await;
    }
    let _ = ctl_stop_tx.send(true);
    if let Some(t) = ctl_task {
        if tokio::time::timeout(Duration::from_secs(5), t)
            .await
            .is_err()
        {
            warn!("the controller did not stop within 5 s");
        }
    }
    info!("stopped");
    ExitCode::SUCCESS
}
