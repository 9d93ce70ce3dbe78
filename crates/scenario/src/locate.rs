//! Turn a byte span of a TOML document into a line, a column and the key path the user wrote
//! (`link[1].rat_mbps`), so that serde's messages ("unknown field `rat_mbps`") say where.
//!
//! The key path is rebuilt from the text: the table headers above the span (`[run]`, `[[link]]`
//! counted per array, `[flow.tcp]` resolved to the latest `flow`) and the key on the span's line.
//! Headers are recognised per TOML 1.0 section "Table" / "Array of Tables" for bare keys; quoted
//! header keys are kept verbatim without their quotes.

use std::collections::HashMap;

/// Where a span is: 1-based line and column (in characters) and the key path, "" if unknown.
#[derive(Debug, Clone, PartialEq)]
pub struct Location {
    pub line: usize,
    pub column: usize,
    pub key: String,
}

/// Locate `span` (byte offsets into `text`); `missing` is the field of a "missing field" error,
/// whose span is the table that lacks it (or empty, for the document itself).
pub fn locate(text: &str, span: std::ops::Range<usize>, missing: Option<&str>) -> Location {
    let start = floor_char_boundary(text, span.start.min(text.len()));
    let end = floor_char_boundary(text, span.end.clamp(start, text.len()));
    let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_no = text[..line_start].matches('\n').count() + 1;
    let column = text[line_start..start].chars().count() + 1;
    let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    let line = &text[line_start..line_end];

    // The table that holds the span: headers up to and including the span's line.
    let header = if missing.is_some() && span.start == span.end && span.start == 0 {
        String::new()
    } else {
        header_path(&text[..line_end])
    };
    let inner = if let Some(m) = missing {
        // A table written inline (`delay_range = { min_ms = 45 }`) lacks it: the inline
        // table's own key comes first.
        let outer = (span.start < span.end && header_of(line).is_none())
            .then(|| key_at(line, start - line_start, &text[start..end]))
            .flatten();
        Some(match outer {
            Some(o) if !o.is_empty() => format!("{o}.{m}"),
            _ => m.to_string(),
        })
    } else if header_of(line).is_some() {
        None
    } else {
        key_at(line, start - line_start, &text[start..end])
    };
    let mut key = header;
    if let Some(k) = inner {
        if !key.is_empty() {
            key.push('.');
        }
        key.push_str(&k);
    }
    Location {
        line: line_no,
        column,
        key,
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A header line: `Some((is_array, dotted name))`.
fn header_of(line: &str) -> Option<(bool, Vec<String>)> {
    let t = strip_comment(line).trim();
    let (array, inner) = if let Some(r) = t.strip_prefix("[[") {
        (true, r.strip_suffix("]]")?)
    } else {
        (false, t.strip_prefix('[')?.strip_suffix(']')?)
    };
    let parts: Vec<String> = inner
        .split('.')
        .map(|p| p.trim().trim_matches('"').trim_matches('\'').to_string())
        .collect();
    let ok = parts.iter().all(|p| {
        !p.is_empty()
            && p.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == ' ')
    });
    ok.then_some((array, parts))
}

fn strip_comment(line: &str) -> &str {
    // Headers with bare keys hold no '#', so the first '#' starts a comment.
    line.split('#').next().unwrap_or("")
}

/// The resolved path of the last header in `text`, with array-of-tables indices.
fn header_path(text: &str) -> String {
    // Count of entries per resolved array path, e.g. "link" -> 2, "link[1].schedule" -> 1.
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut current = String::new();
    for line in text.lines() {
        let Some((array, parts)) = header_of(line) else {
            continue;
        };
        let mut path = String::new();
        for (i, p) in parts.iter().enumerate() {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(p);
            let last = i + 1 == parts.len();
            if last && array {
                let n = counts.entry(path.clone()).or_insert(0);
                *n += 1;
                path = format!("{path}[{}]", *n - 1);
            } else if let Some(n) = counts.get(&path) {
                path = format!("{path}[{}]", n - 1);
            }
        }
        current = path;
    }
    current
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// The key the span belongs to on its line: the span itself when it is a key (unknown or
/// duplicate field), else the key before the nearest `=` to its left. Inside a one-line array of
/// inline tables (`outages = [{ start_s = 1 }, { start_s = 5 }]`) the outer key and entry index
/// are included: `outages[1].start_s`.
fn key_at(line: &str, col: usize, slice: &str) -> Option<String> {
    let col = floor_char_boundary(line, col.min(line.len()));
    let after = line.get(col + slice.len()..).unwrap_or("");
    let inner = if !slice.is_empty()
        && slice.chars().all(is_key_char)
        && after.trim_start().starts_with('=')
    {
        slice.to_string()
    } else {
        let before = &line[..col];
        let eq = before.rfind('=')?;
        let k: String = before[..eq]
            .trim_end()
            .chars()
            .rev()
            .take_while(|&c| is_key_char(c) || c == '.')
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        if k.is_empty() {
            return None;
        }
        k
    };
    // An inline table on this line: prefix the outer key and the entry index.
    let before = &line[..col];
    if let Some(brace) = before.find('{') {
        let first_eq = line.find('=')?;
        if first_eq < brace {
            let outer: String = line[..first_eq].trim().to_string();
            if outer.chars().all(|c| is_key_char(c) || c == '.') && !outer.is_empty() {
                let is_array = line[first_eq + 1..].trim_start().starts_with('[');
                let opened = before.matches('{').count();
                return Some(if is_array {
                    format!("{outer}[{}].{inner}", opened - 1)
                } else {
                    format!("{outer}.{inner}")
                });
            }
        }
    }
    Some(inner)
}

/// A validation error of the scenario `text` with the line of its key put in front of the
/// message (`line 9: expected a probability ...`), when the key is written in the text.
pub fn with_line(mut e: crate::error::ScenarioError, text: &str) -> crate::error::ScenarioError {
    if !e.key.is_empty() && !e.message.starts_with("line ") {
        if let Some(n) = line_of_key(text, &e.key) {
            e.message = format!("line {n}: {}", e.message);
        }
    }
    e
}

/// The 1-based line where `key` (a path as in error messages: `link[1].loss`,
/// `link[0].outages[1].start_s`, `flow[0].tcp.mss_bytes`, `run`) is written in `text`: the line
/// of the key itself, else of the nearest enclosing key or table header that is written. `None`
/// when nothing of the path is in the text (a key added by an override, or a default).
pub fn line_of_key(text: &str, key: &str) -> Option<usize> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    let mut header = String::new();
    let mut best: Option<(usize, usize)> = None; // (matched length, line)
    let consider = |path: &str, line: usize, best: &mut Option<(usize, usize)>| {
        let covers = key == path
            || key
                .strip_prefix(path)
                .is_some_and(|r| r.starts_with('.') || r.starts_with('['));
        if covers && best.is_none_or(|(len, _)| path.len() > len) {
            *best = Some((path.len(), line));
        }
    };
    for (n, line) in text.lines().enumerate() {
        if let Some((array, parts)) = header_of(line) {
            let mut path = String::new();
            for (i, p) in parts.iter().enumerate() {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(p);
                if i + 1 == parts.len() && array {
                    let c = counts.entry(path.clone()).or_insert(0);
                    *c += 1;
                    path = format!("{path}[{}]", *c - 1);
                } else if let Some(c) = counts.get(&path) {
                    path = format!("{path}[{}]", c - 1);
                }
            }
            consider(&path, n + 1, &mut best);
            header = path;
            continue;
        }
        let t = strip_comment(line);
        let Some(eq) = t.find('=') else { continue };
        let k = t[..eq].trim();
        if k.is_empty() || !k.chars().all(|c| is_key_char(c) || c == '.') {
            continue;
        }
        let path = if header.is_empty() {
            k.to_string()
        } else {
            format!("{header}.{k}")
        };
        consider(&path, n + 1, &mut best);
    }
    best.map(|(_, line)| line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str, needle: &str, missing: Option<&str>) -> Location {
        let s = text.find(needle).expect("needle in text");
        locate(text, s..s + needle.len(), missing)
    }

    const DOC: &str = "[run]\nduration_s = 10\n\n[[link]]\nid = \"a\"\nrate_mbps = 10\n\n\
        [[link]]  # second\nid = \"b\"\nrat_mbps = 5\noutages = [{ start_s = 1, duration_ms = 5 }, \
        { start_s = 2, durration_ms = 5 }]\n\n[[flow]]\nid = \"dl\"\n[flow.tcp]\nmss_bytes = \"big\"\n";

    #[test]
    fn unknown_key_in_second_array_table() {
        let l = at(DOC, "rat_mbps", None);
        assert_eq!(
            l,
            Location {
                line: 10,
                column: 1,
                key: "link[1].rat_mbps".into()
            }
        );
    }

    #[test]
    fn value_error_names_the_key_left_of_it() {
        let l = at(DOC, "\"big\"", None);
        assert_eq!(l.key, "flow[0].tcp.mss_bytes");
        assert_eq!(l.line, 16);
        assert_eq!(l.column, 13);
    }

    #[test]
    fn inline_array_entry_gets_outer_key_and_index() {
        let l = at(DOC, "durration_ms", None);
        assert_eq!(l.key, "link[1].outages[1].durration_ms");
        assert_eq!(l.line, 11);
    }

    #[test]
    fn missing_field_of_a_table_and_of_the_document() {
        let s = DOC.find("[[flow]]").unwrap();
        let l = locate(DOC, s..s + 8, Some("kind"));
        assert_eq!(l.key, "flow[0].kind");
        assert_eq!(l.line, 13);
        let l = locate(DOC, 0..0, Some("run"));
        assert_eq!(l.key, "run");
        assert_eq!(l.line, 1);
    }

    #[test]
    fn missing_field_of_an_inline_table() {
        let doc = "[run]\nduration_s = 1\n[[link]]\nid = \"a\"\ndelay_range = { min_ms = 45 }\n";
        let s = doc.find("{ min_ms").unwrap();
        let e = doc[s..].find('}').unwrap() + s + 1;
        let l = locate(doc, s..e, Some("max_ms"));
        assert_eq!(l.key, "link[0].delay_range.max_ms");
        assert_eq!(l.line, 5);
    }

    #[test]
    fn line_of_key_finds_keys_tables_and_enclosing_keys() {
        assert_eq!(line_of_key(DOC, "run.duration_s"), Some(2));
        assert_eq!(line_of_key(DOC, "run"), Some(1));
        assert_eq!(line_of_key(DOC, "link[0].rate_mbps"), Some(6));
        assert_eq!(line_of_key(DOC, "link[1].id"), Some(9));
        // Not written: the enclosing table's header.
        assert_eq!(line_of_key(DOC, "link[1].loss"), Some(8));
        // Inside an inline array: the line of the array's key.
        assert_eq!(line_of_key(DOC, "link[1].outages[1].start_s"), Some(11));
        assert_eq!(line_of_key(DOC, "flow[0].tcp.mss_bytes"), Some(16));
        assert_eq!(line_of_key(DOC, "flow[0].paths[0]"), Some(13));
        // Nothing of the path in the text.
        assert_eq!(line_of_key(DOC, "link[2].id"), None);
        assert_eq!(line_of_key(DOC, "tcp.sack"), None);
        // A prefix of a key name is not its parent: `run` does not cover `runx`.
        assert_eq!(line_of_key("runx = 1\n", "run"), None);
    }

    #[test]
    fn with_line_prefixes_once_and_only_when_found() {
        let e = crate::error::ScenarioError::new("f", "link[0].rate_mbps", "expected > 0");
        let e = with_line(e, DOC);
        assert_eq!(e.message, "line 6: expected > 0");
        assert_eq!(with_line(e.clone(), DOC), e);
        let e = crate::error::ScenarioError::new("f", "tcp.sack", "x");
        assert_eq!(with_line(e.clone(), DOC), e);
    }

    #[test]
    fn header_span_gives_header_path() {
        let l = at(DOC, "[[link]]  # second", None);
        assert_eq!(l.key, "link[1]");
    }

    #[test]
    fn span_past_end_and_inside_multibyte_text_do_not_panic() {
        let t = "a = \"é\"\n";
        let l = locate(t, 6..100, None);
        assert_eq!(l.line, 1);
        assert_eq!(l.key, "a");
        let l = locate(t, t.len()..t.len(), None);
        assert_eq!(l.line, 2);
    }
}
