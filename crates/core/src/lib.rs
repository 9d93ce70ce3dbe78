//! railpath's shared foundations, used by the simulator, the radio model and the gateway:
//! integer nanosecond time ([`Time`]) and seeded, named random streams ([`Rng`]).

pub mod rng;
pub mod time;

pub use rng::Rng;
pub use time::Time;

/// Slowest rate a link or carrier may have, Mbit/s (1 kbit/s: a 1500-byte packet takes 12 s).
/// Below it the serialisation time of a packet no longer fits the engine's nanosecond clock
/// usefully, and a rate rounded to 0 bit/s would never serve a packet.
pub const MIN_RATE_MBPS: f64 = 0.001;
/// Fastest rate a link or carrier may have, Mbit/s (100 Gbit/s).
pub const MAX_RATE_MBPS: f64 = 1e5;
/// Longest run, simulated seconds (about 11.6 days); also the bound of every time key.
pub const MAX_DURATION_S: f64 = 1e6;
/// Longest track and farthest position, metres (10,000 km: longer than any railway line).
pub const MAX_TRACK_M: f64 = 1e7;

/// A number as an error message shows it: as written when short (`0.5`, `1000000`), in
/// scientific notation when its plain form would be long (`1e300`, `1e-9`), so that a message
/// never spells out hundreds of digits.
pub fn show_num(v: f64) -> String {
    let plain = format!("{v}");
    if plain.len() <= 16 {
        plain
    } else {
        format!("{v:e}")
    }
}

/// At most the first 40 characters of a user's text for an error message, quoted, with the
/// length of what was left out: a bad value of a megabyte is named, not echoed.
pub fn excerpt(s: &str) -> String {
    const KEEP: usize = 40;
    let n = s.chars().count();
    if n <= KEEP {
        format!("{s:?}")
    } else {
        let head: String = s.chars().take(KEEP).collect();
        format!("{head:?}... ({n} characters)")
    }
}

/// serde's wording in the user's words: Rust type names (`u64`, `f64`, `struct Link`) become
/// what a scenario file can write ("a whole number >= 0", "a number", "a table"), a bad value is
/// quoted as a short excerpt, and "expected X, found Y" reads in that order.
pub fn user_words(message: &str) -> String {
    let message = message.trim().replace(" as i128", "");
    // serde_json appends the place: keep it, after the rewording.
    if let Some((head, place)) = message.rsplit_once(" at line ") {
        if place
            .split(' ')
            .next()
            .is_some_and(|n| n.parse::<u64>().is_ok())
        {
            return format!("{} at line {place}", user_words(head));
        }
    }
    let body = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "));
    let Some(body) = body else {
        return message;
    };
    let Some((found, expected)) = body.rsplit_once(", expected ") else {
        return message;
    };
    let expected = match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" => {
            let max = match expected {
                "u8" => u64::from(u8::MAX),
                "u16" => u64::from(u16::MAX),
                "u32" => u64::from(u32::MAX),
                _ => i64::MAX as u64,
            };
            format!("a whole number from 0 to {max}")
        }
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".to_string(),
        "f32" | "f64" => "a number".to_string(),
        "a sequence" => "an array [...]".to_string(),
        "a boolean" => "true or false".to_string(),
        "a map" => "a table".to_string(),
        e if e.starts_with("struct ") => "a table".to_string(),
        e if e.starts_with("enum ") => "one of the names this key takes".to_string(),
        e => e.to_string(),
    };
    let found = if let Some(v) = found.strip_prefix("string ") {
        let v = v.trim_matches('"');
        format!("the text {}", excerpt(v))
    } else if let Some(v) = found.strip_prefix("floating point ") {
        format!("the number {}", v.trim_matches('`'))
    } else if let Some(v) = found.strip_prefix("integer ") {
        format!("the whole number {}", v.trim_matches('`'))
    } else if let Some(v) = found.strip_prefix("boolean ") {
        v.trim_matches('`').to_string()
    } else if found == "sequence" {
        "an array".to_string()
    } else if found == "map" {
        "a table".to_string()
    } else {
        found.to_string()
    };
    format!("expected {expected}, found {found}")
}

/// An error message with every long quoted text (`"..."` of more than 40 characters) and every
/// long unquoted number (more than 60 digits; paths and words are left whole) cut to its first
/// 40 characters and its length: the rule that keeps a bad value of a megabyte out of a message,
/// applied where messages are made, whatever formatted them.
pub fn shorten(message: &str) -> String {
    const KEEP: usize = 40;
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len().min(4096));
    let mut i = 0;
    while i < chars.len() {
        if chars[i] == '"' {
            // A quoted text as `{:?}` writes it: up to the next quote not escaped.
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            let inner = &chars[i + 1..j.min(chars.len())];
            if inner.len() > KEEP {
                out.push('"');
                out.extend(&inner[..KEEP]);
                out.push_str(&format!("\"... ({} characters)", inner.len()));
            } else {
                out.extend(&chars[i..(j + 1).min(chars.len())]);
            }
            i = j + 1;
        } else if chars[i].is_whitespace() {
            out.push(chars[i]);
            i += 1;
        } else {
            let mut j = i;
            while j < chars.len() && !chars[j].is_whitespace() && chars[j] != '"' {
                j += 1;
            }
            let number = chars[i..j]
                .iter()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-' | ','));
            if number && j - i > 60 {
                out.extend(&chars[i..i + KEEP]);
                out.push_str(&format!("... ({} characters)", j - i));
            } else {
                out.extend(&chars[i..j]);
            }
            i = j;
        }
    }
    out
}

/// One part of what a run will allocate and compute, estimated from its keys before it starts
/// (see `railpath_scenario::Scenario::size_estimate`).
#[derive(Debug, Clone, PartialEq)]
pub struct SizePart {
    /// What it is ("time series", "radio cells of carrier \"a\"").
    pub what: String,
    /// The keys that drive its size, as a user would change them.
    pub keys: String,
    /// Bytes held at once.
    pub bytes: f64,
    /// Work, in simulator events or their equivalent (one packet hop, one cell measured once).
    pub work: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_texts_in_messages_stay_short() {
        assert_eq!(show_num(0.5), "0.5");
        assert_eq!(show_num(1e6), "1000000");
        assert_eq!(show_num(1e300), "1e300");
        assert_eq!(show_num(1e-9), "0.000000001");
        assert_eq!(show_num(1e-300), "1e-300");
        assert_eq!(show_num(f64::NAN), "NaN");
        assert_eq!(excerpt("abc"), "\"abc\"");
        assert_eq!(shorten("found \"abc\" and 12"), "found \"abc\" and 12");
        let m = shorten(&format!("found {:?}, expected", "y".repeat(5000)));
        assert_eq!(
            m,
            format!(
                "found \"{}\"... (5000 characters), expected",
                "y".repeat(40)
            )
        );
        let m = shorten(&format!("got {} here", "7".repeat(300)));
        assert_eq!(
            m,
            format!("got {}... (300 characters) here", "7".repeat(40))
        );
        // A long path is not a value: it stays whole.
        let path = format!("/tmp/{}/scenario.toml:", "d".repeat(80));
        assert_eq!(shorten(&path), path);
        // An escaped quote inside a quoted text does not end it.
        assert_eq!(shorten(r#"a "b\"c" d"#), r#"a "b\"c" d"#);
        let long = "x".repeat(1_000_000);
        let e = excerpt(&long);
        assert!(e.len() < 80, "{e}");
        assert!(e.ends_with("... (1000000 characters)"), "{e}");
    }
}
