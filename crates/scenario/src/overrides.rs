//! `--set key.path=value` overrides, applied to the parsed TOML table before it is deserialised
//! and validated (so an override is checked exactly like the file).
//!
//! Paths: `run.seed=3`, `tcp.sack=false`, `link.a.rate_mbps=5` (an entry of an array of tables
//! by its `id`), `link[0].rate_mbps=5` (by index, 0-based), `link.a.outages[0].start_s=2`.
//! Missing tables on the way are created (`tcp.sack=false` without a `[tcp]` table). Values parse
//! as TOML (`5`, `0.01`, `true`, `"x"`, `[1, 2]`, `{ start_s = 1, duration_ms = 50 }`); a value
//! that is not TOML is taken as a string (`flow.dl.cc=cubic`).

use toml::{Table, Value};

/// One step of a key path.
#[derive(Debug, Clone, PartialEq)]
enum Seg {
    /// A table key, or the `id` of an entry of an array of tables.
    Key(String),
    /// An array index.
    Index(usize),
}

/// Apply one `key.path=value` override to `table`. The error says what is wrong with the path.
pub fn apply_override(table: &mut Table, spec: &str) -> Result<(), String> {
    let (path, raw) = spec
        .split_once('=')
        .ok_or_else(|| format!("expected key.path=value, found {spec:?}"))?;
    let path = path.trim();
    let segs = split_path(path)?;
    let value = parse_value(raw.trim());
    set_in_table(table, &segs, value, "")
}

/// `segs` starts with a key (guaranteed by [`split_path`] and by the callers).
fn set_in_table(t: &mut Table, segs: &[Seg], value: Value, here: &str) -> Result<(), String> {
    let Seg::Key(k) = &segs[0] else {
        return Err(format!(
            "`{here}` is a table; expected a key after it, not an index"
        ));
    };
    let at = join(here, k);
    let rest = &segs[1..];
    if rest.is_empty() {
        t.insert(k.clone(), value);
        return Ok(());
    }
    let entry = match (t.contains_key(k.as_str()), &rest[0]) {
        (true, _) => t.get_mut(k.as_str()).expect("key checked above"),
        (false, Seg::Key(_)) => t
            .entry(k.clone())
            .or_insert_with(|| Value::Table(Table::new())),
        (false, Seg::Index(i)) => {
            return Err(format!("`{at}` does not exist, so it has no entry [{i}]"))
        }
    };
    set_in_value(entry, rest, value, &at)
}

fn set_in_value(v: &mut Value, segs: &[Seg], value: Value, here: &str) -> Result<(), String> {
    match v {
        Value::Table(t) => set_in_table(t, segs, value, here),
        Value::Array(arr) => {
            let len = arr.len();
            let (entry, at) = match &segs[0] {
                Seg::Index(i) => {
                    let e = arr.get_mut(*i).ok_or_else(|| {
                        format!("`{here}` has {len} entries; index {i} is out of range (0-based)")
                    })?;
                    (e, format!("{here}[{i}]"))
                }
                Seg::Key(id) => {
                    let ids: Vec<String> = arr
                        .iter()
                        .filter_map(|e| {
                            e.get("id")
                                .and_then(Value::as_str)
                                .map(|s| format!("{s:?}"))
                        })
                        .collect();
                    let e = arr
                        .iter_mut()
                        .find(|e| e.get("id").and_then(Value::as_str) == Some(id.as_str()))
                        .ok_or_else(|| {
                            format!(
                                "`{here}` has no entry with id {id:?}; ids: {}",
                                if ids.is_empty() {
                                    "none".to_string()
                                } else {
                                    ids.join(", ")
                                }
                            )
                        })?;
                    (e, join(here, id))
                }
            };
            if segs.len() == 1 {
                *entry = value;
                Ok(())
            } else {
                set_in_value(entry, &segs[1..], value, &at)
            }
        }
        other => Err(format!(
            "`{here}` holds a value of type {}, not a table or a list, so `{}` cannot be set in it",
            other.type_str(),
            render(segs)
        )),
    }
}

fn join(here: &str, k: &str) -> String {
    if here.is_empty() {
        k.to_string()
    } else {
        format!("{here}.{k}")
    }
}

fn render(segs: &[Seg]) -> String {
    let mut s = String::new();
    for seg in segs {
        match seg {
            Seg::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Seg::Index(i) => s.push_str(&format!("[{i}]")),
        }
    }
    s
}

/// `a.b[2].c` -> Key(a), Key(b), Index(2), Key(c).
fn split_path(path: &str) -> Result<Vec<Seg>, String> {
    if path.is_empty() {
        return Err("the key path before `=` is empty; expected e.g. link.a.rate_mbps=5".into());
    }
    let mut segs = Vec::new();
    for part in path.split('.') {
        let (name, mut idx) = match part.find('[') {
            Some(b) => (&part[..b], &part[b..]),
            None => (part, ""),
        };
        if name.is_empty() {
            return Err(format!(
                "`{path}` has an empty key in {part:?}; expected keys separated by single dots"
            ));
        }
        if let Some(c) = name
            .chars()
            .find(|&c| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        {
            return Err(format!(
                "`{path}`: key {name:?} has the character {c:?}; keys are letters, digits, _ and -"
            ));
        }
        segs.push(Seg::Key(name.to_string()));
        while !idx.is_empty() {
            let close = idx
                .find(']')
                .ok_or_else(|| format!("`{path}`: unclosed `[` in {part:?}; expected name[N]"))?;
            let n: usize = idx[1..close].trim().parse().map_err(|_| {
                format!(
                    "`{path}`: bad index {:?} in {part:?}; expected a number >= 0",
                    &idx[1..close]
                )
            })?;
            segs.push(Seg::Index(n));
            idx = &idx[close + 1..];
            if !idx.is_empty() && !idx.starts_with('[') {
                return Err(format!(
                    "`{path}`: unexpected {idx:?} after an index in {part:?}"
                ));
            }
        }
    }
    Ok(segs)
}

/// A value as TOML, or the raw text as a string when it is not TOML.
fn parse_value(raw: &str) -> Value {
    let doc = format!("v = {raw}");
    match doc.parse::<Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| Value::String(raw.to_string())),
        Err(_) => Value::String(raw.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"
[run]
duration_s = 10

[[link]]
id = "a"
rate_mbps = 10
outages = [{ start_s = 1.0, duration_ms = 50 }]

[[link]]
id = "b"
rate_mbps = 20

[[flow]]
id = "dl"
kind = "tcp"
cc = "newreno"
paths = ["a"]
"#;

    fn doc() -> Table {
        DOC.parse().unwrap()
    }

    fn link(t: &Table, i: usize) -> &Table {
        t["link"].as_array().unwrap()[i].as_table().unwrap()
    }

    #[test]
    fn link_by_id_sets_an_integer() {
        let mut t = doc();
        apply_override(&mut t, "link.a.rate_mbps=5").unwrap();
        assert_eq!(link(&t, 0)["rate_mbps"], Value::Integer(5));
        assert_eq!(link(&t, 1)["rate_mbps"], Value::Integer(20));
    }

    #[test]
    fn link_by_index_sets_a_float_and_adds_a_key() {
        let mut t = doc();
        apply_override(&mut t, "link[1].loss=0.01").unwrap();
        assert_eq!(link(&t, 1)["loss"], Value::Float(0.01));
        assert!(!link(&t, 0).contains_key("loss"));
    }

    #[test]
    fn bare_word_is_a_string() {
        let mut t = doc();
        apply_override(&mut t, "flow.dl.cc=cubic").unwrap();
        let f = t["flow"].as_array().unwrap()[0].as_table().unwrap();
        assert_eq!(f["cc"], Value::String("cubic".into()));
    }

    #[test]
    fn run_seed_and_created_tables() {
        let mut t = doc();
        apply_override(&mut t, "run.seed=3").unwrap();
        assert_eq!(t["run"]["seed"], Value::Integer(3));
        apply_override(&mut t, "tcp.sack=false").unwrap();
        assert_eq!(t["tcp"]["sack"], Value::Boolean(false));
        apply_override(&mut t, "flow.dl.tcp.initial_window = 4").unwrap();
        assert_eq!(t["flow"][0]["tcp"]["initial_window"], Value::Integer(4));
    }

    #[test]
    fn nested_index_and_whole_entry() {
        let mut t = doc();
        apply_override(&mut t, "link.a.outages[0].start_s=2.5").unwrap();
        assert_eq!(t["link"][0]["outages"][0]["start_s"], Value::Float(2.5));
        apply_override(&mut t, "link.b.outages=[{ start_s = 3, duration_ms = 10 }]").unwrap();
        assert_eq!(
            t["link"][1]["outages"][0]["duration_ms"],
            Value::Integer(10)
        );
        apply_override(&mut t, "flow[0].paths[0]=b").unwrap();
        assert_eq!(t["flow"][0]["paths"][0], Value::String("b".into()));
    }

    #[test]
    fn quoted_value_and_value_with_equals() {
        let mut t = doc();
        apply_override(&mut t, r#"link.a.trace="x=y.txt""#).unwrap();
        assert_eq!(t["link"][0]["trace"], Value::String("x=y.txt".into()));
    }

    fn err(spec: &str) -> String {
        apply_override(&mut doc(), spec).unwrap_err()
    }

    #[test]
    fn bad_paths_say_what_is_wrong() {
        assert!(
            err("run.seed").contains("expected key.path=value"),
            "{}",
            err("run.seed")
        );
        assert!(err("=3").contains("empty"));
        assert!(err("link..rate_mbps=3").contains("empty key"));
        assert!(err("link.c.rate_mbps=3").contains(r#"no entry with id "c"; ids: "a", "b""#));
        assert!(
            err("link[2].rate_mbps=3").contains("`link` has 2 entries; index 2 is out of range")
        );
        assert!(err("link[x].rate_mbps=3").contains("bad index \"x\""));
        assert!(err("link[0.rate_mbps=3").contains("unclosed `[`"));
        assert!(
            err("run.duration_s.x=3").contains("`run.duration_s` holds a value of type integer")
        );
        assert!(err("run[0]=3").contains("`run` is a table"));
        assert!(err("nolist[0].x=1").contains("`nolist` does not exist"));
        assert!(err("link.a.rate mbps=1").contains("character ' '"));
    }

    #[test]
    fn failed_override_leaves_table_unchanged() {
        let mut t = doc();
        let before = t.clone();
        assert!(apply_override(&mut t, "link.z.rate_mbps=1").is_err());
        assert_eq!(t, before);
    }
}
