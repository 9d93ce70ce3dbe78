//! Replay files: a recorded or synthetic position feed, already along the track.
//!
//! Format: one `t_s,position_m,speed_mps` line per fix (seconds from the start of the file,
//! metres along the track, along-track speed in m/s, positive towards increasing position); `t_s`
//! must not decrease. Blank lines, `#` comments and a header line starting with `t_s` are ignored.
//! A line of `t_s,nan,nan` (or with empty fields, `t_s,,`) marks the position as lost from that
//! time, which lets a replay exercise the stale-position fallback.

use std::path::Path;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReplayPoint {
    pub t_s: f64,
    /// `None`: position lost from `t_s`.
    pub fix: Option<(f64, f64)>,
}

pub fn parse(text: &str, file: &str) -> Result<Vec<ReplayPoint>, String> {
    let mut out: Vec<ReplayPoint> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') || (out.is_empty() && l.starts_with("t_s")) {
            continue;
        }
        let at = || format!("{file}:{}", n + 1);
        let f: Vec<&str> = l.split(',').map(str::trim).collect();
        if f.len() != 3 {
            return Err(format!(
                "{}: expected `t_s,position_m,speed_mps`, got {l:?}",
                at()
            ));
        }
        let t_s: f64 = f[0]
            .parse()
            .ok()
            .filter(|t: &f64| t.is_finite() && *t >= 0.0)
            .ok_or_else(|| format!("{}: t_s: expected seconds >= 0, got {:?}", at(), f[0]))?;
        if let Some(prev) = out.last() {
            if t_s < prev.t_s {
                return Err(format!(
                    "{}: t_s goes backwards ({} after {})",
                    at(),
                    t_s,
                    prev.t_s
                ));
            }
        }
        let lost = |s: &str| s.is_empty() || s.eq_ignore_ascii_case("nan");
        let fix = if lost(f[1]) && lost(f[2]) {
            None
        } else {
            let p: f64 = f[1]
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| format!("{}: position_m: expected metres, got {:?}", at(), f[1]))?;
            let v: f64 = f[2]
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && v.abs() < 1000.0)
                .ok_or_else(|| {
                    format!(
                        "{}: speed_mps: expected |speed| < 1000 m/s, got {:?}",
                        at(),
                        f[2]
                    )
                })?;
            Some((p, v))
        };
        out.push(ReplayPoint { t_s, fix });
    }
    if out.is_empty() {
        return Err(format!(
            "{file}: no fixes (expected `t_s,position_m,speed_mps` lines)"
        ));
    }
    Ok(out)
}

pub fn load(path: &Path) -> Result<Vec<ReplayPoint>, String> {
    let f = path.display().to_string();
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("{f}: cannot read replay: {e}"))?;
    parse(&text, &f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_points_header_and_loss() {
        let p = parse(
            "t_s,position_m,speed_mps\n# c\n0,0,80\n0.5,40,80\n1.0,nan,nan\n2,,\n",
            "r.csv",
        )
        .unwrap();
        assert_eq!(p.len(), 4);
        assert_eq!(
            p[1],
            ReplayPoint {
                t_s: 0.5,
                fix: Some((40.0, 80.0))
            }
        );
        assert_eq!(p[2].fix, None);
        assert_eq!(p[3].fix, None);
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let e = parse("0,0,80\n1,x,80\n", "r.csv").unwrap_err();
        assert!(e.starts_with("r.csv:2: position_m"), "{e}");
        let e = parse("1,0,80\n0.5,0,80\n", "r.csv").unwrap_err();
        assert!(e.contains("r.csv:2") && e.contains("backwards"), "{e}");
        let e = parse("0,0\n", "r.csv").unwrap_err();
        assert!(e.contains("r.csv:1"), "{e}");
        assert!(parse("# nothing\n", "r.csv")
            .unwrap_err()
            .contains("no fixes"));
        assert!(parse("0,1,5000\n", "r.csv")
            .unwrap_err()
            .contains("speed_mps"));
    }
}
