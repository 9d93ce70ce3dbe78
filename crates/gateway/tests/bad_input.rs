//! Bad input to the daemon binary: malformed configurations, NMEA garbage, a gpsd that
//! disconnects, a handover table for an unknown carrier. Each must give a clear error or a safe
//! fallback, never a crash. These run on loopback in dry-run mode (no path-manager changes), so
//! they need neither root nor MPTCP.

mod common;

use common::*;
use std::io::{BufRead, BufReader, Write};
use std::process::Command;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_railpath-gateway");

fn check(dir: &TempDir, text: &str) -> (i32, String) {
    let p = dir.0.join("gw.toml");
    std::fs::write(&p, text).unwrap();
    let out = Command::new(BIN)
        .args(["check", "-c"])
        .arg(&p)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked"), "panic: {err}");
    (out.status.code().unwrap_or(-1), err)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

const TABLE: &str = r#"{"format": "railpath-handover-table/1", "gps_error_m": 20.0, "runs": 3,
 "carriers": {"A": {"zones": [{"start_m": 1005.0, "end_m": 1090.0, "count": 3}], "runs": 3}}}"#;

/// A north-bound track from (0, 0) of about 2.2 km.
const TRACK: &str = "# lat,lon\n0.0,0.0\n0.02,0.0\n";

fn scrape_local(port: u16) -> String {
    let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\n\r\n");
    let mut out = String::new();
    let _ = std::io::Read::read_to_string(&mut s, &mut out);
    out
}

fn start_local(dir: &TempDir, position: &str, carriers: &str, port: u16) -> Daemon {
    std::fs::write(dir.0.join("table.json"), TABLE).unwrap();
    std::fs::write(dir.0.join("track.csv"), TRACK).unwrap();
    let cfg = format!(
        "[metrics]\nlisten = \"127.0.0.1:{port}\"\n[log]\nformat = \"json\"\nlevel = \"debug\"\n\
         [phad]\ntable = {:?}\ndry_run = true\nstale_after_ms = 500\ndead_reckoning = {{ max_s = 1 }}\nposition = {position}\n{carriers}",
        dir.0.join("table.json").display().to_string()
    );
    let cfgp = dir.0.join("gw.toml");
    std::fs::write(&cfgp, cfg).unwrap();
    let log = dir.0.join("gw.log");
    let child = Command::new(BIN)
        .args(["run", "-c"])
        .arg(&cfgp)
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut d = Daemon { child, log };
    assert!(
        wait_until(Duration::from_secs(10), || !scrape_local(port).is_empty()),
        "daemon did not come up:\n{}",
        d.log_text()
    );
    assert!(d.alive());
    d
}

const ONE_CARRIER: &str = "[[carrier]]\nname = \"A\"\nendpoint_id = 1\n";

#[test]
fn malformed_configs_are_rejected_with_file_and_key() {
    let dir = TempDir::new("badcfg");
    let cases: &[(&str, &[&str])] = &[
        ("[proxy]\nmode = \"train\"\nlisten = \"0.0.0.0:3129\"\nmax_conections = 5\n", &["gw.toml", "max_conections"]),
        ("[proxy]\nmode = \"ground\"\nlisten = \"0.0.0.0:3129\"\n", &["gw.toml", "proxy.upstream"]),
        ("[proxy\nmode = ", &["gw.toml"]),
        ("[proxy]\nmode = \"train\"\nlisten = \"0.0.0.0:99999\"\n", &["gw.toml", "listen"]),
        ("[proxy]\nmode = \"train\"\nlisten = \"0.0.0.0:1\"\nidle_timeout_s = 0\n", &["proxy.idle_timeout_s"]),
        ("[log]\nlevel = \"info\"\n", &["nothing to do"]),
        ("[phad]\ntable = \"t.json\"\nposition = { source = \"replay\", path = \"f.csv\" }\n", &["carrier", "at least one"]),
        ("[phad]\ntable = \"t.json\"\nposition = { source = \"nmea\", path = \"/dev/null\", track = \"t.csv\", baud = 1234 }\n[[carrier]]\nname = \"A\"\nendpoint_id = 1\n", &["phad.position.baud", "1234"]),
        ("[phad]\ntable = \"t.json\"\nposition = { source = \"replay\", path = \"f.csv\" }\n[[carrier]]\nname = \"A\"\n", &["carrier[0].endpoint_id"]),
    ];
    for (text, needles) in cases {
        let (code, err) = check(&dir, text);
        assert_eq!(code, 2, "accepted:\n{text}\nstderr: {err}");
        for n in *needles {
            assert!(
                err.contains(n),
                "error for\n{text}\ndoes not mention {n:?}: {err}"
            );
        }
    }
    // A missing file is named too, and `run` fails the same way (exit 2, no panic).
    let out = Command::new(BIN)
        .args(["run", "-c", "/nonexistent/gw.toml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        err.contains("/nonexistent/gw.toml") && !err.contains("panicked"),
        "{err}"
    );
    // Files the config names are checked: a bad replay line is reported with file and line.
    std::fs::write(dir.0.join("t.json"), TABLE).unwrap();
    std::fs::write(dir.0.join("f.csv"), "0,0,10\n1,north,10\n").unwrap();
    let (code, err) = check(
        &dir,
        &format!(
            "[phad]\ntable = {:?}\nposition = {{ source = \"replay\", path = {:?} }}\n{ONE_CARRIER}",
            dir.0.join("t.json").display().to_string(),
            dir.0.join("f.csv").display().to_string()
        ),
    );
    assert_eq!(code, 2);
    assert!(
        err.contains("f.csv:2") && err.contains("position_m"),
        "{err}"
    );
}

#[test]
fn table_for_an_unknown_carrier_is_reported_and_safe() {
    let dir = TempDir::new("unkcar");
    std::fs::write(dir.0.join("table.json"), TABLE).unwrap();
    // Stopped inside A's zone, a fix every 200 ms (looped).
    let feed: String = (0..10)
        .map(|i| format!("{:.1},1050,0\n", i as f64 * 0.2))
        .collect();
    std::fs::write(dir.0.join("f.csv"), feed).unwrap();
    let carriers =
        "[[carrier]]\nname = \"A\"\nendpoint_id = 1\n[[carrier]]\nname = \"KT\"\nendpoint_id = 2\n";
    let cfg = format!(
        "[phad]\ntable = {:?}\nposition = {{ source = \"replay\", path = {:?} }}\n{carriers}",
        dir.0.join("table.json").display().to_string(),
        dir.0.join("f.csv").display().to_string()
    );
    let (code, err) = check(&dir, &cfg);
    assert_eq!(code, 2);
    assert!(err.contains("\"KT\"") && err.contains("known: A"), "{err}");
    // Running anyway: KT is never flipped, A still is; the daemon says so and keeps going.
    let port = free_port();
    let position = format!(
        "{{ source = \"replay\", path = {:?}, loop = true }}",
        dir.0.join("f.csv").display().to_string()
    );
    let mut d = start_local(&dir, &position, carriers, port);
    assert!(wait_until(Duration::from_secs(5), || {
        metric(
            &scrape_local(port),
            "railpath_gateway_carrier_backup{carrier=\"A\"}",
        ) == Some(1.0)
    }));
    let m = scrape_local(port);
    assert_eq!(
        metric(&m, "railpath_gateway_carrier_backup{carrier=\"KT\"}"),
        Some(0.0),
        "{m}"
    );
    assert!(
        d.log_text().contains("not in the handover table"),
        "{}",
        d.log_text()
    );
    assert!(d.alive());
    assert!(d.stop(), "{}", d.log_text());
}

#[test]
fn nmea_garbage_is_counted_and_valid_sentences_still_count() {
    let dir = TempDir::new("nmea");
    let sum = |b: &str| format!("${b}*{:02X}", b.bytes().fold(0u8, |a, x| a ^ x));
    // 0 deg 0.561' N = 0.00935 deg = 1039.7 m along the track.
    let good = sum("GPRMC,120000,A,0000.561,N,00000.000,E,10.0,0.0,010124,,,A");
    let mut text = String::new();
    for g in [
        "garbage\n",
        "$GPRMC,bad*00\n",
        "\u{0}\u{1}\u{2}\n",
        "$GPRMC,120000,A,0000.561,N,00000.000,E,10.0,0.0,010124,,,A*FF\n",
        &"x".repeat(100_000),
        "\n",
    ] {
        text.push_str(g);
    }
    text.push_str(&good);
    text.push('\n');
    let mut bytes = text.into_bytes();
    bytes.extend_from_slice(&[0xff, 0xfe, b'\n']);
    std::fs::write(dir.0.join("nmea.log"), &bytes).unwrap();
    let port = free_port();
    let position = format!(
        "{{ source = \"nmea\", path = {:?}, track = {:?} }}",
        dir.0.join("nmea.log").display().to_string(),
        dir.0.join("track.csv").display().to_string()
    );
    let mut d = start_local(&dir, &position, ONE_CARRIER, port);
    assert!(
        wait_until(Duration::from_secs(5), || {
            let m = scrape_local(port);
            metric(&m, "railpath_gateway_position_fixes_total") == Some(1.0)
                && metric(&m, "railpath_gateway_position_errors_total").unwrap_or(0.0) >= 6.0
        }),
        "{}\n{}",
        scrape_local(port),
        d.log_text()
    );
    let m = scrape_local(port);
    let pos = metric(&m, "railpath_gateway_position_meters").unwrap();
    assert!((pos - 1039.7).abs() < 1.0, "position {pos}");
    // The one fix goes stale (500 ms): fallback to all regular, and the daemon says so.
    assert!(wait_until(Duration::from_secs(5), || {
        metric(
            &scrape_local(port),
            "railpath_gateway_fallback_all_regular_total",
        )
        .unwrap_or(0.0)
            >= 1.0
    }));
    assert!(d.log_text().contains("all carriers regular"));
    assert!(d.alive(), "{}", d.log_text());
    assert!(d.stop());
}

#[test]
fn gpsd_that_disconnects_gives_fallback_and_reconnect() {
    let dir = TempDir::new("gpsd");
    let gpsd = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let gpsd_port = gpsd.local_addr().unwrap().port();
    // Fake gpsd: first connection sends fixes inside zone A, then disconnects; the second sends
    // one garbage line and waits; counts connections.
    let fake = std::thread::spawn(move || {
        let mut conns = 0;
        gpsd.set_nonblocking(false).unwrap();
        for s in gpsd.incoming().take(2) {
            let mut s = s.unwrap();
            conns += 1;
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut watch = String::new();
            let _ = BufReader::new(s.try_clone().unwrap()).read_line(&mut watch);
            assert!(watch.starts_with("?WATCH="), "{watch}");
            if conns == 1 {
                let _ = s.write_all(b"{\"class\":\"VERSION\",\"release\":\"3.25\"}\n");
                for _ in 0..10 {
                    let _ = s.write_all(b"{\"class\":\"TPV\",\"mode\":3,\"lat\":0.00935,\"lon\":0.0,\"speed\":0.0}\n");
                    std::thread::sleep(Duration::from_millis(100));
                }
                // disconnect
            } else {
                let _ = s.write_all(b"{not json\n");
                std::thread::sleep(Duration::from_secs(2));
            }
        }
        conns
    });
    let port = free_port();
    let position = format!(
        "{{ source = \"gpsd\", address = \"127.0.0.1:{gpsd_port}\", track = {:?} }}",
        dir.0.join("track.csv").display().to_string()
    );
    let mut d = start_local(&dir, &position, ONE_CARRIER, port);
    // While fixes arrive: position valid and A (single carrier) stays regular by rule.
    assert!(wait_until(Duration::from_secs(5), || {
        metric(&scrape_local(port), "railpath_gateway_position_valid") == Some(1.0)
    }));
    // After the disconnect: fallback, said in the log, and a reconnect.
    assert!(
        wait_until(Duration::from_secs(10), || {
            let m = scrape_local(port);
            metric(&m, "railpath_gateway_position_valid") == Some(0.0)
                && metric(&m, "railpath_gateway_fallback_all_regular_total").unwrap_or(0.0) >= 1.0
        }),
        "{}",
        d.log_text()
    );
    assert_eq!(fake.join().unwrap(), 2, "gpsd was not reconnected");
    let log = d.log_text();
    assert!(
        log.contains("gpsd closed the connection") && log.contains("all carriers regular"),
        "{log}"
    );
    assert!(d.alive(), "{log}");
    assert!(d.stop());
}
