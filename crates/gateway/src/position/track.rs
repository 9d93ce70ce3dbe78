//! The track polyline and the projection of a GPS fix onto it (position along the track).
//!
//! File format: one `lat,lon` point per line in decimal degrees (WGS84), in the direction of
//! increasing track position; blank lines and lines starting with `#` are ignored. Position 0 is
//! the first point.
//!
//! Projection: each segment is flattened with a local equirectangular projection about its first
//! point (x = R cos(lat0) dlon, y = R dlat, R = 6 371 008.8 m, the IUGG mean Earth radius); the
//! fix is projected orthogonally onto every segment (clamped to it) and the nearest wins. The
//! error of the flattening is well under 0.1 % for segments shorter than 10 km away from the
//! poles; keep track points closer than that. A fix farther than `max_offtrack_m` from the
//! polyline is rejected. Where the track passes close to itself (loops), the nearest segment may be
//! the wrong one: split such tracks or use a replay file with positions.
//!
//! Along-track speed: the GPS speed over ground, signed by the angle between the GPS course and
//! the segment's bearing (positive when moving towards increasing position).

use std::path::Path;

pub const EARTH_RADIUS_M: f64 = 6_371_008.8;

#[derive(Debug, Clone)]
pub struct Track {
    pts: Vec<(f64, f64)>,
    /// Cumulative distance at each point.
    cum: Vec<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Projection {
    pub position_m: f64,
    pub offset_m: f64,
    /// Bearing of the matched segment, degrees clockwise from north.
    pub bearing_deg: f64,
}

fn local_xy(lat0: f64, lon0: f64, lat: f64, lon: f64) -> (f64, f64) {
    let k = EARTH_RADIUS_M * std::f64::consts::PI / 180.0;
    ((lon - lon0) * k * lat0.to_radians().cos(), (lat - lat0) * k)
}

impl Track {
    /// A track from points; errors name the offending point.
    pub fn new(pts: Vec<(f64, f64)>) -> Result<Track, String> {
        if pts.len() < 2 {
            return Err(format!(
                "expected at least 2 track points, got {}",
                pts.len()
            ));
        }
        for (i, (lat, lon)) in pts.iter().enumerate() {
            if !(lat.is_finite() && lon.is_finite() && lat.abs() <= 90.0 && lon.abs() <= 180.0) {
                return Err(format!(
                    "point {}: expected latitude in [-90, 90] and longitude in [-180, 180], got {lat},{lon}",
                    i + 1
                ));
            }
        }
        let mut cum = vec![0.0];
        for w in pts.windows(2) {
            let (x, y) = local_xy(w[0].0, w[0].1, w[1].0, w[1].1);
            let prev = cum.last().copied().unwrap_or(0.0);
            cum.push(prev + x.hypot(y));
        }
        Ok(Track { pts, cum })
    }

    /// Reads a track file (see the module doc).
    pub fn load(path: &Path) -> Result<Track, String> {
        let f = path.display();
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("{f}: cannot read track: {e}"))?;
        Track::parse(&text, &f.to_string())
    }

    /// Parses track text (see the module doc); `f` names the file in errors.
    pub fn parse(text: &str, f: &str) -> Result<Track, String> {
        let mut pts = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let l = line.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let mut it = l.split(',').map(str::trim);
            let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else {
                return Err(format!(
                    "{f}:{}: expected `lat,lon`, got {}",
                    n + 1,
                    railpath_core::excerpt(l)
                ));
            };
            let (Ok(lat), Ok(lon)) = (a.parse::<f64>(), b.parse::<f64>()) else {
                return Err(format!(
                    "{f}:{}: expected two decimal numbers `lat,lon`, got {}",
                    n + 1,
                    railpath_core::excerpt(l)
                ));
            };
            pts.push((lat, lon));
        }
        Track::new(pts).map_err(|e| format!("{f}: {e}"))
    }

    pub fn length_m(&self) -> f64 {
        self.cum.last().copied().unwrap_or(0.0)
    }

    /// Projects a fix onto the track.
    pub fn project(&self, lat: f64, lon: f64) -> Projection {
        let mut best = Projection {
            position_m: 0.0,
            offset_m: f64::INFINITY,
            bearing_deg: 0.0,
        };
        for (i, w) in self.pts.windows(2).enumerate() {
            let (lat0, lon0) = w[0];
            let (bx, by) = local_xy(lat0, lon0, w[1].0, w[1].1);
            let (px, py) = local_xy(lat0, lon0, lat, lon);
            let len2 = bx * bx + by * by;
            let t = if len2 > 0.0 {
                ((px * bx + py * by) / len2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let d = (px - t * bx).hypot(py - t * by);
            if d < best.offset_m {
                best = Projection {
                    position_m: self.cum[i] + t * len2.sqrt(),
                    offset_m: d,
                    bearing_deg: bx.atan2(by).to_degrees().rem_euclid(360.0),
                };
            }
        }
        best
    }
}

/// Along-track speed from speed over ground and course (degrees), given the segment bearing.
/// Without a course the speed is taken as positive.
pub fn along_track_speed(speed_mps: f64, course_deg: Option<f64>, bearing_deg: f64) -> f64 {
    match course_deg {
        Some(c) if c.is_finite() => speed_mps * (c - bearing_deg).to_radians().cos(),
        _ => speed_mps,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_along_a_north_bound_track() {
        // Along a meridian one degree of latitude is R*pi/180 = 111 195.08 m.
        let t = Track::new(vec![(0.0, 0.0), (0.01, 0.0), (0.02, 0.0)]).unwrap();
        assert!((t.length_m() - 2223.9016).abs() < 0.01, "{}", t.length_m());
        let p = t.project(0.015, 0.0);
        assert!((p.position_m - 1667.926).abs() < 0.01, "{p:?}");
        assert!(p.offset_m < 1e-6);
        assert!(p.bearing_deg.abs() < 1e-9);
        // 0.0001 deg of longitude east at the equator: 11.12 m off track.
        let p = t.project(0.005, 0.0001);
        assert!((p.offset_m - 11.1195).abs() < 0.001, "{p:?}");
        assert!((p.position_m - 555.975).abs() < 0.01, "{p:?}");
        // Before the start clamps to 0.
        assert_eq!(t.project(-0.001, 0.0).position_m, 0.0);
    }

    #[test]
    fn along_track_speed_is_signed_by_course() {
        assert!((along_track_speed(10.0, Some(0.0), 0.0) - 10.0).abs() < 1e-9);
        assert!((along_track_speed(10.0, Some(180.0), 0.0) + 10.0).abs() < 1e-9);
        assert!((along_track_speed(10.0, Some(60.0), 0.0) - 5.0).abs() < 1e-9);
        assert_eq!(along_track_speed(10.0, None, 90.0), 10.0);
    }

    #[test]
    fn bad_track_files_are_named() {
        let dir = std::env::temp_dir().join(format!("rp-gw-track-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.csv");
        std::fs::write(&p, "# track\n1.0,2.0\nnorth,east\n").unwrap();
        let e = Track::load(&p).unwrap_err();
        assert!(e.contains("t.csv:3") && e.contains("lat,lon"), "{e}");
        std::fs::write(&p, "1.0,2.0\n").unwrap();
        assert!(Track::load(&p).unwrap_err().contains("at least 2"));
        std::fs::write(&p, "1.0,2.0\n95.0,2.0\n").unwrap();
        assert!(Track::load(&p).unwrap_err().contains("point 2"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
