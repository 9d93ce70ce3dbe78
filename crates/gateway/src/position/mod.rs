//! Position sources: gpsd, NMEA (serial device, file or FIFO) and replay files.
//!
//! Every source publishes a [`PositionState`] on a `watch` channel: the latest fix along the track
//! with the instant it was received, or why there is none now (no fix, source gone, off track),
//! keeping the last good fix. Lat/lon sources are projected onto the track polyline ([`track`]);
//! replay files already give positions along the track.
//!
//! [`estimate`] turns that state into the position the controller uses now: the last fix
//! carried along the track at its speed (dead reckoning), with an error that grows with the time
//! since the fix, until a configured bound (see its documentation).

pub mod gpsd;
pub mod nmea;
pub mod replay;
pub mod track;

use crate::config::PositionConfig;
use crate::metrics::Metrics;
use crate::phad::Fix;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::{debug, info, warn};
use track::Track;

/// What the controller sees.
#[derive(Debug, Clone, PartialEq)]
pub enum PositionState {
    /// No fix yet, and why.
    Unknown(String),
    /// The latest fix and when it was received.
    Fix { fix: Fix, at: Instant },
    /// The source has no fix now (a tunnel, a GPS without fix, a source gone), and why; the last
    /// good fix is kept for dead reckoning.
    Lost { last: Fix, at: Instant, why: String },
}

/// The position the controller works with at one instant.
#[derive(Debug, Clone, PartialEq)]
pub enum Estimate {
    Known {
        /// The last fix, not yet advanced.
        fix: Fix,
        /// Time since it was received.
        age: Duration,
        /// How far the advanced position may be off, metres (0 for a fresh fix).
        error_m: f64,
        /// The source has lost its fix, or its last fix is older than `stale_after`.
        dead_reckoning: bool,
    },
    /// No usable position, and why.
    Lost(String),
}

/// Dead-reckoning error after `t_s` seconds from the last fix: the speed's uncertainty times the
/// time, plus the distance an unseen constant acceleration would add (e = dv t + a t^2 / 2,
/// uniformly accelerated motion).
pub fn dead_reckoning_error_m(dr: &crate::config::DeadReckoningConfig, t_s: f64) -> f64 {
    dr.speed_error_mps * t_s + 0.5 * dr.accel_mps2 * t_s * t_s
}

/// The position to use now (rule): a fix younger than `stale_after` while the source still has
/// its fix is used as it is (advanced at its speed by `phad::decide`, error 0: the table's zones
/// already carry the GPS error). Otherwise (the source lost its fix, or no fix came for
/// `stale_after`) the last fix is carried along the track at its speed (dead reckoning), with
/// the error [`dead_reckoning_error_m`] of its age, for at most `dr.max_s` and while the error
/// stays within `dr.max_error_m`; beyond either bound the position is lost. With `dr.max_s = 0`
/// a lost or stale fix is lost at once.
pub fn estimate(
    st: &PositionState,
    now: Instant,
    stale_after: Duration,
    dr: &crate::config::DeadReckoningConfig,
) -> Estimate {
    let (fix, at, why) = match st {
        PositionState::Unknown(why) => return Estimate::Lost(why.clone()),
        PositionState::Fix { fix, at } => (*fix, *at, None),
        PositionState::Lost { last, at, why } => (*last, *at, Some(why.as_str())),
    };
    let age = now.saturating_duration_since(at);
    if why.is_none() && age <= stale_after {
        return Estimate::Known {
            fix,
            age,
            error_m: 0.0,
            dead_reckoning: false,
        };
    }
    let why = why.unwrap_or("position is stale");
    let t = age.as_secs_f64();
    let error_m = dead_reckoning_error_m(dr, t);
    if dr.max_s <= 0.0 {
        return Estimate::Lost(why.to_string());
    }
    if t > dr.max_s {
        return Estimate::Lost(format!(
            "{why}; dead reckoning ended after {:.0} s (phad.dead_reckoning.max_s)",
            dr.max_s
        ));
    }
    if error_m > dr.max_error_m {
        return Estimate::Lost(format!(
            "{why}; dead-reckoning error {error_m:.0} m after {t:.1} s exceeds phad.dead_reckoning.max_error_m = {}",
            dr.max_error_m
        ));
    }
    Estimate::Known {
        fix,
        age,
        error_m,
        dead_reckoning: true,
    }
}

enum Kind {
    Gpsd {
        addr: SocketAddr,
        track: Track,
        max_off: f64,
    },
    Nmea {
        path: PathBuf,
        baud: Option<u32>,
        track: Track,
        max_off: f64,
    },
    Replay {
        points: Vec<replay::ReplayPoint>,
        looped: bool,
    },
}

/// A configured position source, with its files already read and checked.
pub struct PositionSource {
    kind: Kind,
}

/// Longest line accepted from any source; longer input is garbage.
pub const MAX_LINE: usize = 64 * 1024;

/// Reads one line of at most `max` bytes (without the newline). `Ok(None)` at EOF. A longer line
/// is consumed and reported as an error, so a stream of garbage cannot exhaust memory.
pub async fn read_line_bounded<R: AsyncBufRead + Unpin>(
    r: &mut R,
    max: usize,
) -> std::io::Result<Option<Result<String, String>>> {
    let mut buf = Vec::new();
    let mut too_long = false;
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            if buf.is_empty() && !too_long {
                return Ok(None);
            }
            break;
        }
        let (chunk, done) = match avail.iter().position(|&b| b == b'\n') {
            Some(i) => (&avail[..i], Some(i + 1)),
            None => (avail, None),
        };
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(avail.len());
        r.consume(used);
        if done.is_some() {
            break;
        }
    }
    if too_long {
        return Ok(Some(Err(format!("line longer than {max} bytes"))));
    }
    Ok(Some(match String::from_utf8(buf) {
        Ok(s) => Ok(s.trim_end_matches('\r').to_string()),
        Err(_) => Err("line is not UTF-8".to_string()),
    }))
}

/// Logs bad input without flooding the log: the first 10, then every 1000th.
fn note_error(metrics: &Metrics, source: &str, msg: &str) {
    let n = metrics.position_errors.fetch_add(1, Relaxed) + 1;
    if n <= 10 || n % 1000 == 0 {
        warn!(source, error = msg, count = n, "position input rejected");
    } else {
        debug!(source, error = msg, "position input rejected");
    }
}

/// A GPS fix as gpsd and NMEA give it.
struct GpsFix {
    lat: f64,
    lon: f64,
    speed_mps: f64,
    course_deg: Option<f64>,
}

/// Projects a GPS fix onto the track and publishes the track position; a fix farther than
/// `max_off` from the track is rejected (counted, logged) and published as no position.
fn publish_gps(
    track: &Track,
    max_off: f64,
    source: &str,
    g: GpsFix,
    tx: &watch::Sender<PositionState>,
    metrics: &Metrics,
) {
    let p = track.project(g.lat, g.lon);
    if p.offset_m > max_off {
        let e = format!(
            "fix {:.6},{:.6} is {:.0} m from the track (max_offtrack_m = {max_off})",
            g.lat, g.lon, p.offset_m
        );
        note_error(metrics, source, &e);
        publish(tx, metrics, PositionState::Unknown(e));
        return;
    }
    let fix = Fix {
        position_m: p.position_m,
        speed_mps: track::along_track_speed(g.speed_mps, g.course_deg, p.bearing_deg),
    };
    publish(
        tx,
        metrics,
        PositionState::Fix {
            fix,
            at: Instant::now(),
        },
    );
}

impl PositionSource {
    /// Reads the track or replay file; errors name the file and line.
    pub fn open(cfg: &PositionConfig) -> Result<PositionSource, String> {
        let kind = match cfg {
            PositionConfig::Gpsd {
                address,
                track,
                max_offtrack_m,
            } => Kind::Gpsd {
                addr: *address,
                track: Track::load(track)?,
                max_off: *max_offtrack_m,
            },
            PositionConfig::Nmea {
                path,
                baud,
                track,
                max_offtrack_m,
            } => Kind::Nmea {
                path: path.clone(),
                baud: *baud,
                track: Track::load(track)?,
                max_off: *max_offtrack_m,
            },
            PositionConfig::Replay { path, r#loop } => Kind::Replay {
                points: replay::load(path)?,
                looped: *r#loop,
            },
        };
        Ok(PositionSource { kind })
    }

    /// Runs the source until the task is dropped (a replay without `loop` returns at its end,
    /// leaving its last state to go stale).
    pub async fn run(self, tx: watch::Sender<PositionState>, metrics: Arc<Metrics>) {
        match self.kind {
            Kind::Gpsd {
                addr,
                track,
                max_off,
            } => run_gpsd(addr, track, max_off, tx, metrics).await,
            Kind::Nmea {
                path,
                baud,
                track,
                max_off,
            } => run_nmea(path, baud, track, max_off, tx, metrics).await,
            Kind::Replay { points, looped } => run_replay(points, looped, tx, metrics).await,
        }
    }
}

/// Publishes a new state; a loss keeps the last good fix (as [`PositionState::Lost`]).
fn publish(tx: &watch::Sender<PositionState>, metrics: &Metrics, st: PositionState) {
    if let PositionState::Fix { fix, .. } = &st {
        metrics.position_fixes.fetch_add(1, Relaxed);
        metrics
            .position_mm
            .store((fix.position_m * 1000.0) as i64, Relaxed);
    }
    tx.send_modify(|cur| *cur = next_state(cur, st));
}

/// The state after `new` arrives in state `cur`: a loss after a fix keeps that fix.
pub fn next_state(cur: &PositionState, new: PositionState) -> PositionState {
    match (cur, new) {
        (PositionState::Fix { fix, at }, PositionState::Unknown(why)) => PositionState::Lost {
            last: *fix,
            at: *at,
            why,
        },
        (PositionState::Lost { last, at, .. }, PositionState::Unknown(why)) => {
            PositionState::Lost {
                last: *last,
                at: *at,
                why,
            }
        }
        (_, new) => new,
    }
}

async fn run_gpsd(
    addr: SocketAddr,
    track: Track,
    max_off: f64,
    tx: watch::Sender<PositionState>,
    metrics: Arc<Metrics>,
) {
    let mut backoff = Duration::from_millis(500);
    loop {
        let conn =
            tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr))
                .await;
        let mut stream = match conn {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                publish(
                    &tx,
                    &metrics,
                    PositionState::Unknown(format!("gpsd at {addr} unreachable: {e}")),
                );
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(10));
                continue;
            }
            Err(_) => {
                publish(
                    &tx,
                    &metrics,
                    PositionState::Unknown(format!("gpsd at {addr}: connect timed out")),
                );
                continue;
            }
        };
        info!(%addr, "connected to gpsd");
        if let Err(e) = stream.write_all(gpsd::WATCH.as_bytes()).await {
            publish(
                &tx,
                &metrics,
                PositionState::Unknown(format!("gpsd at {addr}: {e}")),
            );
            tokio::time::sleep(backoff).await;
            continue;
        }
        backoff = Duration::from_millis(500);
        let mut r = BufReader::new(stream);
        let why = loop {
            match read_line_bounded(&mut r, MAX_LINE).await {
                Ok(None) => break "gpsd closed the connection".to_string(),
                Err(e) => break format!("gpsd connection error: {e}"),
                Ok(Some(Err(e))) => note_error(&metrics, "gpsd", &e),
                Ok(Some(Ok(line))) => match gpsd::parse_line(&line) {
                    Ok(None) => {}
                    Ok(Some(gpsd::Tpv::NoFix)) => publish(
                        &tx,
                        &metrics,
                        PositionState::Unknown("gpsd reports no fix".into()),
                    ),
                    Ok(Some(gpsd::Tpv::Fix {
                        lat,
                        lon,
                        speed_mps,
                        course_deg,
                    })) => {
                        let gps = GpsFix {
                            lat,
                            lon,
                            speed_mps,
                            course_deg,
                        };
                        publish_gps(&track, max_off, "gpsd", gps, &tx, &metrics)
                    }
                    Err(e) => note_error(&metrics, "gpsd", &e),
                },
            }
        };
        warn!(%addr, reason = %why, "lost gpsd; reconnecting");
        publish(&tx, &metrics, PositionState::Unknown(why));
        tokio::time::sleep(backoff).await;
    }
}

async fn run_nmea(
    path: PathBuf,
    baud: Option<u32>,
    track: Track,
    max_off: f64,
    tx: watch::Sender<PositionState>,
    metrics: Arc<Metrics>,
) {
    let name = path.display().to_string();
    loop {
        let file = match tokio::fs::File::open(&path).await {
            Ok(f) => f,
            Err(e) => {
                publish(
                    &tx,
                    &metrics,
                    PositionState::Unknown(format!("{name}: cannot open: {e}")),
                );
                tokio::time::sleep(Duration::from_secs(1)).await;
                continue;
            }
        };
        if let Some(b) = baud {
            use std::os::fd::AsRawFd;
            if let Err(e) = nmea::configure_serial(file.as_raw_fd(), b) {
                warn!(path = %name, error = %e, "cannot configure the serial line; reading it as it is");
            }
        }
        info!(path = %name, "reading NMEA");
        let mut r = BufReader::new(file);
        // Follow the file as it grows (a FIFO or a log being written): at EOF, wait and read on.
        loop {
            match read_line_bounded(&mut r, MAX_LINE).await {
                Ok(None) => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(e) => {
                    publish(
                        &tx,
                        &metrics,
                        PositionState::Unknown(format!("{name}: read error: {e}")),
                    );
                    tokio::time::sleep(Duration::from_secs(1)).await;
                    break;
                }
                Ok(Some(Err(e))) => note_error(&metrics, "nmea", &e),
                Ok(Some(Ok(line))) if line.trim().is_empty() => {}
                Ok(Some(Ok(line))) => match nmea::parse_line(&line) {
                    Ok(None) => {}
                    Ok(Some(nmea::Rmc::Void)) => publish(
                        &tx,
                        &metrics,
                        PositionState::Unknown("NMEA RMC status V: receiver has no fix".into()),
                    ),
                    Ok(Some(nmea::Rmc::Fix {
                        lat,
                        lon,
                        speed_mps,
                        course_deg,
                    })) => {
                        let gps = GpsFix {
                            lat,
                            lon,
                            speed_mps,
                            course_deg,
                        };
                        publish_gps(&track, max_off, "nmea", gps, &tx, &metrics)
                    }
                    Err(e) => note_error(&metrics, "nmea", &e),
                },
            }
        }
    }
}

async fn run_replay(
    points: Vec<replay::ReplayPoint>,
    looped: bool,
    tx: watch::Sender<PositionState>,
    metrics: Arc<Metrics>,
) {
    let last_t = points.last().map(|p| p.t_s).unwrap_or(0.0);
    let step = if points.len() >= 2 {
        (last_t - points[points.len() - 2].t_s).max(0.001)
    } else {
        1.0
    };
    let mut t0 = Instant::now();
    loop {
        for p in &points {
            tokio::time::sleep_until(t0 + Duration::from_secs_f64(p.t_s)).await;
            let st = match p.fix {
                Some((position_m, speed_mps)) => PositionState::Fix {
                    fix: Fix {
                        position_m,
                        speed_mps,
                    },
                    at: Instant::now(),
                },
                None => PositionState::Unknown("replay: position lost".into()),
            };
            publish(&tx, &metrics, st);
        }
        if !looped {
            info!("replay finished");
            return;
        }
        t0 += Duration::from_secs_f64(last_t + step);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bounded_lines() {
        let data = format!("ab\r\n{}\nc\n\u{0}\u{ff}", "x".repeat(100));
        let mut bytes = data.into_bytes();
        bytes.extend_from_slice(&[0xff, 0xfe, b'\n', b'z']);
        let mut r = BufReader::with_capacity(7, &bytes[..]);
        assert_eq!(
            read_line_bounded(&mut r, 10).await.unwrap(),
            Some(Ok("ab".into()))
        );
        assert!(read_line_bounded(&mut r, 10)
            .await
            .unwrap()
            .unwrap()
            .is_err());
        assert_eq!(
            read_line_bounded(&mut r, 10).await.unwrap(),
            Some(Ok("c".into()))
        );
        assert!(read_line_bounded(&mut r, 10)
            .await
            .unwrap()
            .unwrap()
            .is_err());
        assert_eq!(
            read_line_bounded(&mut r, 10).await.unwrap(),
            Some(Ok("z".into()))
        );
        assert_eq!(read_line_bounded(&mut r, 10).await.unwrap(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn replay_publishes_in_time_and_loss() {
        let pts = replay::parse("0,10,5\n1,15,5\n2,,\n", "r").unwrap();
        let (tx, mut rx) = watch::channel(PositionState::Unknown("start".into()));
        let m = Metrics::new(&[]);
        let task = tokio::spawn(run_replay(pts, false, tx, m.clone()));
        rx.changed().await.unwrap();
        assert!(matches!(*rx.borrow(), PositionState::Fix { fix, .. } if fix.position_m == 10.0));
        rx.changed().await.unwrap();
        assert!(matches!(*rx.borrow(), PositionState::Fix { fix, .. } if fix.position_m == 15.0));
        rx.changed().await.unwrap();
        // The loss keeps the last fix for dead reckoning.
        assert!(
            matches!(&*rx.borrow(), PositionState::Lost { last, why, .. } if last.position_m == 15.0 && why.contains("lost"))
        );
        task.await.unwrap();
        assert_eq!(m.position_fixes.load(Relaxed), 2);
    }

    fn dr() -> crate::config::DeadReckoningConfig {
        crate::config::DeadReckoningConfig {
            max_s: 60.0,
            max_error_m: 200.0,
            speed_error_mps: 1.0,
            accel_mps2: 0.2,
        }
    }

    #[test]
    fn dead_reckoning_error_grows_with_speed_error_and_acceleration() {
        // 1 m/s x 10 s + 0.2 x 100 / 2 = 20 m; after 30 s: 30 + 90 = 120 m.
        assert!((dead_reckoning_error_m(&dr(), 10.0) - 20.0).abs() < 1e-9);
        assert!((dead_reckoning_error_m(&dr(), 30.0) - 120.0).abs() < 1e-9);
    }

    #[tokio::test(start_paused = true)]
    async fn estimate_is_fresh_then_dead_reckoned_then_lost() {
        let at = Instant::now();
        let fix = Fix {
            position_m: 1000.0,
            speed_mps: 50.0,
        };
        let stale = Duration::from_secs(2);
        let s = |d: f64| at + Duration::from_secs_f64(d);
        let fresh = PositionState::Fix { fix, at };
        // Fresh: no error, not dead reckoning.
        assert_eq!(
            estimate(&fresh, s(1.0), stale, &dr()),
            Estimate::Known {
                fix,
                age: Duration::from_secs(1),
                error_m: 0.0,
                dead_reckoning: false
            }
        );
        // No fix for 10 s (stale): dead reckoning with 20 m of error.
        assert!(matches!(estimate(&fresh, s(10.0), stale, &dr()),
            Estimate::Known { error_m, dead_reckoning: true, .. } if (error_m - 20.0).abs() < 1e-9));
        // The source says it lost the fix: dead reckoning at once.
        let lost = next_state(&fresh, PositionState::Unknown("tunnel".into()));
        assert!(matches!(estimate(&lost, s(0.5), stale, &dr()),
            Estimate::Known { dead_reckoning: true, error_m, .. } if (error_m - 0.525).abs() < 1e-9));
        // The error bound: 1 t + 0.1 t^2 = 200 m at t = 40 s (before max_s = 60 s).
        assert!(matches!(
            estimate(&lost, s(39.9), stale, &dr()),
            Estimate::Known { .. }
        ));
        match estimate(&lost, s(40.1), stale, &dr()) {
            Estimate::Lost(why) => assert!(
                why.starts_with("tunnel;") && why.contains("max_error_m"),
                "{why}"
            ),
            e => panic!("{e:?}"),
        }
        // The time bound, with a generous error bound.
        let wide = crate::config::DeadReckoningConfig {
            max_error_m: 1e5,
            ..dr()
        };
        assert!(matches!(
            estimate(&lost, s(60.0), stale, &wide),
            Estimate::Known { .. }
        ));
        assert!(
            matches!(estimate(&lost, s(60.1), stale, &wide), Estimate::Lost(w) if w.contains("max_s"))
        );
        // Dead reckoning off: stale or lost is lost.
        let off = crate::config::DeadReckoningConfig { max_s: 0.0, ..dr() };
        assert!(matches!(estimate(&lost, s(0.1), stale, &off), Estimate::Lost(w) if w == "tunnel"));
        assert!(matches!(
            estimate(&fresh, s(2.5), stale, &off),
            Estimate::Lost(_)
        ));
        // A new fix ends the loss.
        let back = next_state(&lost, PositionState::Fix { fix, at: s(5.0) });
        assert!(matches!(back, PositionState::Fix { .. }));
        // Never a fix: lost.
        assert!(matches!(
            estimate(&PositionState::Unknown("none".into()), s(0.0), stale, &dr()),
            Estimate::Lost(_)
        ));
    }
}
