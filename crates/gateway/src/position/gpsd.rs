//! gpsd's JSON protocol: `?WATCH={"enable":true,"json":true};` then one JSON object per line.
//!
//! Source: gpsd_json(5) (gpsd.gitlab.io/gpsd/gpsd_json.html): a TPV object carries `mode`
//! (0 unknown, 1 no fix, 2 2D, 3 3D), `lat`/`lon` in degrees, `speed` over ground in m/s and
//! `track` (course over ground, degrees true). Other classes (VERSION, DEVICES, WATCH, SKY, ...)
//! are ignored.

use serde_json::Value;

pub const WATCH: &str = "?WATCH={\"enable\":true,\"json\":true};\n";

/// One TPV report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tpv {
    Fix {
        lat: f64,
        lon: f64,
        speed_mps: f64,
        course_deg: Option<f64>,
    },
    NoFix,
}

/// Parses one line from gpsd: `Ok(Some)` for TPV, `Ok(None)` for another class, `Err` for
/// malformed input.
pub fn parse_line(line: &str) -> Result<Option<Tpv>, String> {
    let v: Value = serde_json::from_str(line.trim()).map_err(|e| format!("not JSON: {e}"))?;
    let class = v
        .get("class")
        .and_then(Value::as_str)
        .ok_or("expected an object with a string `class`")?;
    if class != "TPV" {
        return Ok(None);
    }
    let mode = v.get("mode").and_then(Value::as_u64).unwrap_or(0);
    if mode < 2 {
        return Ok(Some(Tpv::NoFix));
    }
    let num = |k: &str| v.get(k).and_then(Value::as_f64).filter(|x| x.is_finite());
    let (Some(lat), Some(lon)) = (num("lat"), num("lon")) else {
        return Ok(Some(Tpv::NoFix));
    };
    if lat.abs() > 90.0 || lon.abs() > 180.0 {
        return Err(format!("TPV: lat/lon out of range: {lat},{lon}"));
    }
    Ok(Some(Tpv::Fix {
        lat,
        lon,
        speed_mps: num("speed").unwrap_or(0.0).max(0.0),
        course_deg: num("track"),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tpv_fix_and_no_fix() {
        let l = r#"{"class":"TPV","device":"/dev/ttyUSB0","mode":3,"time":"2024-01-01T00:00:00.000Z","lat":37.5,"lon":127.0,"speed":83.3,"track":90.0}"#;
        assert_eq!(
            parse_line(l).unwrap(),
            Some(Tpv::Fix {
                lat: 37.5,
                lon: 127.0,
                speed_mps: 83.3,
                course_deg: Some(90.0)
            })
        );
        assert_eq!(
            parse_line(r#"{"class":"TPV","mode":1}"#).unwrap(),
            Some(Tpv::NoFix)
        );
        assert_eq!(
            parse_line(r#"{"class":"TPV","mode":3}"#).unwrap(),
            Some(Tpv::NoFix)
        );
        assert_eq!(
            parse_line(r#"{"class":"VERSION","release":"3.25"}"#).unwrap(),
            None
        );
    }

    #[test]
    fn malformed_lines_are_errors() {
        for bad in [
            "",
            "{",
            "[]",
            r#"{"mode":3}"#,
            r#"{"class":"TPV","mode":3,"lat":91,"lon":0}"#,
        ] {
            assert!(parse_line(bad).is_err(), "accepted {bad:?}");
        }
    }
}
