//! NMEA 0183 RMC sentences (recommended minimum GNSS data).
//!
//! Source: NMEA 0183 v4.10 as documented by gpsd's "NMEA 0183 revealed" (gpsd.gitlab.io/gpsd/
//! NMEA.html, section RMC): `$--RMC,hhmmss.ss,A,ddmm.mm,N,dddmm.mm,E,sog_knots,cog_deg,ddmmyy,
//! magvar,E[,mode[,navstatus]]*hh`, status A = valid and V = void; the checksum is the XOR of
//! every character between `$` and `*`, as two hex digits. Any talker (GP, GN, GL, GA, BD, ...) is
//! accepted. Other sentence types are ignored; RMC alone gives position, speed and course.

/// One parsed RMC sentence.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Rmc {
    Fix {
        lat: f64,
        lon: f64,
        speed_mps: f64,
        course_deg: Option<f64>,
    },
    /// Status V: the receiver has no fix.
    Void,
}

pub const KNOT_MPS: f64 = 1852.0 / 3600.0;

/// Parses one line: `Ok(Some(..))` for an RMC sentence, `Ok(None)` for another well-formed
/// sentence, `Err` for garbage (with a message saying what is wrong).
pub fn parse_line(line: &str) -> Result<Option<Rmc>, String> {
    let line = line.trim();
    let body = line.strip_prefix('$').ok_or_else(|| {
        format!(
            "expected a sentence starting with '$', got {:?}",
            trunc(line)
        )
    })?;
    let (data, sum) = match body.rsplit_once('*') {
        Some((d, s)) => (d, Some(s)),
        None => (body, None),
    };
    if !data.is_ascii() {
        return Err("non-ASCII bytes in sentence".into());
    }
    if let Some(s) = sum {
        let want = u8::from_str_radix(s, 16)
            .ok()
            .filter(|_| s.len() == 2)
            .ok_or_else(|| format!("bad checksum field {:?}", trunc(s)))?;
        let got = data.bytes().fold(0u8, |a, b| a ^ b);
        if got != want {
            return Err(format!(
                "checksum mismatch: computed {got:02X}, sentence says {want:02X}"
            ));
        }
    }
    let f: Vec<&str> = data.split(',').collect();
    let kind = f[0];
    if kind.len() < 5 || !kind.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(format!("bad sentence type {:?}", trunc(kind)));
    }
    if !kind.ends_with("RMC") {
        return Ok(None);
    }
    if f.len() < 10 {
        return Err(format!("RMC: expected at least 10 fields, got {}", f.len()));
    }
    match f[2] {
        "A" => {}
        "V" => return Ok(Some(Rmc::Void)),
        s => return Err(format!("RMC: status must be A or V, got {:?}", trunc(s))),
    }
    let lat = coord(f[3], f[4], 2, 'N', 'S', 90.0).map_err(|e| format!("RMC latitude: {e}"))?;
    let lon = coord(f[5], f[6], 3, 'E', 'W', 180.0).map_err(|e| format!("RMC longitude: {e}"))?;
    let speed_kn: f64 = if f[7].is_empty() {
        0.0
    } else {
        f[7].parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("RMC speed: expected knots >= 0, got {:?}", trunc(f[7])))?
    };
    let course_deg = if f[8].is_empty() {
        None
    } else {
        Some(
            f[8].parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .ok_or_else(|| format!("RMC course: expected degrees, got {:?}", trunc(f[8])))?,
        )
    };
    Ok(Some(Rmc::Fix {
        lat,
        lon,
        speed_mps: speed_kn * KNOT_MPS,
        course_deg,
    }))
}

fn trunc(s: &str) -> &str {
    let mut end = s.len().min(40);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// `ddmm.mmmm` (or `dddmm.mmmm`) and hemisphere to signed decimal degrees.
fn coord(
    v: &str,
    hemi: &str,
    deg_digits: usize,
    pos: char,
    neg: char,
    max: f64,
) -> Result<f64, String> {
    if v.len() < deg_digits + 2 || !v.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return Err(format!(
            "expected {}mm.mmmm, got {:?}",
            "d".repeat(deg_digits),
            trunc(v)
        ));
    }
    let d: f64 = v[..deg_digits]
        .parse()
        .map_err(|_| format!("bad degrees in {v:?}"))?;
    let m: f64 = v[deg_digits..]
        .parse()
        .map_err(|_| format!("bad minutes in {v:?}"))?;
    if m >= 60.0 {
        return Err(format!("minutes >= 60 in {v:?}"));
    }
    let x = d + m / 60.0;
    if x > max {
        return Err(format!("{x} degrees is out of range"));
    }
    match hemi.chars().next() {
        Some(c) if c == pos && hemi.len() == 1 => Ok(x),
        Some(c) if c == neg && hemi.len() == 1 => Ok(-x),
        _ => Err(format!(
            "hemisphere must be {pos} or {neg}, got {:?}",
            trunc(hemi)
        )),
    }
}

/// The termios speed constant for a serial line speed.
pub fn baud_constant(baud: u32) -> Option<libc::speed_t> {
    Some(match baud {
        4800 => libc::B4800,
        9600 => libc::B9600,
        19200 => libc::B19200,
        38400 => libc::B38400,
        57600 => libc::B57600,
        115200 => libc::B115200,
        _ => return None,
    })
}

/// Puts a tty into raw-ish input mode at `baud` (8N1, receiver on, no modem control).
pub fn configure_serial(fd: std::os::fd::RawFd, baud: u32) -> std::io::Result<()> {
    let speed = baud_constant(baud).ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("unsupported baud {baud}"),
        )
    })?;
    // SAFETY: termios is plain data; the calls get a valid fd and pointer.
    unsafe {
        let mut t: libc::termios = std::mem::zeroed();
        if libc::tcgetattr(fd, &mut t) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        libc::cfmakeraw(&mut t);
        t.c_cflag |= libc::CLOCAL | libc::CREAD;
        if libc::cfsetispeed(&mut t, speed) != 0 || libc::cfsetospeed(&mut t, speed) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::tcsetattr(fd, libc::TCSANOW, &t) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_sum(body: &str) -> String {
        let s = body.bytes().fold(0u8, |a, b| a ^ b);
        format!("${body}*{s:02X}")
    }

    #[test]
    fn parses_a_valid_rmc() {
        // 48 deg 07.038' N = 48.1173, 11 deg 31.000' E = 11.516666.., 100 knots = 51.444.. m/s
        let l = with_sum("GPRMC,123519,A,4807.038,N,01131.000,E,100.0,084.4,230394,003.1,W");
        let Some(Rmc::Fix {
            lat,
            lon,
            speed_mps,
            course_deg,
        }) = parse_line(&l).unwrap()
        else {
            panic!("no fix")
        };
        assert!((lat - 48.1173).abs() < 1e-9);
        assert!((lon - 11.516_666_666).abs() < 1e-6);
        assert!((speed_mps - 51.444_444).abs() < 1e-5);
        assert_eq!(course_deg, Some(84.4));
        // South/west are negative; another talker works.
        let l = with_sum("GNRMC,000000,A,3345.000,S,07030.000,W,0.0,,010120,,,A");
        let Some(Rmc::Fix {
            lat,
            lon,
            course_deg,
            ..
        }) = parse_line(&l).unwrap()
        else {
            panic!()
        };
        assert!((lat + 33.75).abs() < 1e-9 && (lon + 70.5).abs() < 1e-9);
        assert_eq!(course_deg, None);
    }

    #[test]
    fn void_and_other_sentences() {
        assert_eq!(
            parse_line(&with_sum("GPRMC,123519,V,,,,,,,230394,,")).unwrap(),
            Some(Rmc::Void)
        );
        assert_eq!(
            parse_line(&with_sum(
                "GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"
            ))
            .unwrap(),
            None
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for bad in [
            "",
            "hello",
            "$",
            "$*",
            "$GPRMC,123519,A,4807.038,N,01131.000,E,1,84.4,230394,003.1,W*00",
            "$GPRMC,123519,A,4807.038,N,01131.000,E,1,84.4,230394,003.1,W*ZZ",
            "$GPRMC,123519,A,48x7.038,N,01131.000,E,1,84.4,230394,003.1,W",
            "$GPRMC,123519,A,4807.038,Q,01131.000,E,1,84.4,230394,003.1,W",
            "$GPRMC,123519,A,9907.038,N,01131.000,E,1,84.4,230394,003.1,W",
            "$GPRMC,123519,A,4807.038,N,01131.000,E,-5,84.4,230394,003.1,W",
            "$GPRMC,123519,X,4807.038,N,01131.000,E,1,84.4,230394,003.1,W",
            "$GPRMC,1,A",
            "$GPRMC,123519,A,4807.038,N,01131.000,E,1,84.4,230394,003.1,W\u{e9}",
            "$\u{e9}\u{e9}\u{e9}*",
        ] {
            assert!(parse_line(bad).is_err(), "accepted {bad:?}");
        }
    }

    #[test]
    fn baud_table() {
        assert_eq!(baud_constant(9600), Some(libc::B9600));
        assert_eq!(baud_constant(1234), None);
    }
}
