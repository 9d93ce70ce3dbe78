//! `--set key.path=value` overrides applied to the parsed TOML before it is deserialised.
//!
//! Paths: `run.seed=3`, `tcp.sack=false`, `link.a.rate_mbps=5` (array tables by `id`),
//! `link[0].rate_mbps=5` (by index). Values parse as TOML (`5`, `0.01`, `true`, `"x"`, `[1,2]`);
//! anything that does not parse as TOML is taken as a string (`flow.dl.cc=cubic`).

use toml::{Table, Value};

/// Apply one `key.path=value` override to `table`.
pub fn apply_override(table: &mut Table, spec: &str) -> Result<(), String> {
    let (path, raw) = spec
        .split_once('=')
        .ok_or_else(|| format!("override {spec:?} must look like key.path=value"))?;
    let path = path.trim();
    if path.is_empty() {
        return Err(format!("override {spec:?} has an empty key path"));
    }
    let value = parse_value(raw.trim());
    let parts = split_path(path)?;
    let mut cur: &mut Table = table;
    for (n, part) in parts.iter().enumerate() {
        let last = n + 1 == parts.len();
        match part {
            Seg::Key(k) if last => {
                cur.insert(k.clone(), value);
                return Ok(());
            }
            Seg::Key(k) => {
                // An array of tables addressed by id: `link.a.rate_mbps`.
                let is_array = matches!(cur.get(k.as_str()), Some(Value::Array(_)));
                if is_array {
                    let id = match parts.get(n + 1) {
                        Some(Seg::Key(id)) => id.clone(),
                        _ => return Err(format!("{path}: `{k}` is a list; address an entry by id or [index]")),
                    };
                    let rest = &parts[n + 2..];
                    let Some(Value::Array(arr)) = cur.get_mut(k.as_str()) else { unreachable!() };
                    let entry = arr
                        .iter_mut()
                        .filter_map(|v| v.as_table_mut())
                        .find(|t| t.get("id").and_then(Value::as_str) == Some(id.as_str()))
                        .ok_or_else(|| format!("{path}: no `{k}` entry with id {id:?}"))?;
                    return set_in(entry, rest, value, path);
                }
                let next = cur.entry(k.clone()).or_insert_with(|| Value::Table(Table::new()));
                cur = next
                    .as_table_mut()
                    .ok_or_else(|| format!("{path}: `{k}` is not a table"))?;
            }
            Seg::Index(k, idx) => {
                let arr = cur
                    .get_mut(k.as_str())
                    .and_then(Value::as_array_mut)
                    .ok_or_else(|| format!("{path}: `{k}` is not a list"))?;
                let len = arr.len();
                let entry = arr
                    .get_mut(*idx)
                    .ok_or_else(|| format!("{path}: index {idx} out of range (the list has {len} entries)"))?;
                if last {
                    *entry = value;
                    return Ok(());
                }
                let t = entry
                    .as_table_mut()
                    .ok_or_else(|| format!("{path}: `{k}[{idx}]` is not a table"))?;
                return set_in(t, &parts[n + 1..], value, path);
            }
        }
    }
    Ok(())
}

fn set_in(t: &mut Table, rest: &[Seg], value: Value, path: &str) -> Result<(), String> {
    if rest.is_empty() {
        return Err(format!("{path}: a key is needed after the list entry"));
    }
    let mut sub = Table::new();
    std::mem::swap(&mut sub, t);
    let spec_path: Vec<String> = rest.iter().map(Seg::render).collect();
    let r = apply_override(&mut sub, &format!("{}={}", spec_path.join("."), render(&value)));
    std::mem::swap(&mut sub, t);
    r.map_err(|e| format!("{path}: {e}"))
}

fn render(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

#[derive(Debug)]
enum Seg {
    Key(String),
    Index(String, usize),
}

impl Seg {
    fn render(&self) -> String {
        match self {
            Seg::Key(k) => k.clone(),
            Seg::Index(k, i) => format!("{k}[{i}]"),
        }
    }
}

fn split_path(path: &str) -> Result<Vec<Seg>, String> {
    path.split('.')
        .map(|p| {
            if let Some((k, rest)) = p.split_once('[') {
                let idx = rest
                    .strip_suffix(']')
                    .and_then(|i| i.parse::<usize>().ok())
                    .ok_or_else(|| format!("{path}: bad index in {p:?}; expected name[N]"))?;
                Ok(Seg::Index(k.to_string(), idx))
            } else if p.is_empty() {
                Err(format!("{path}: empty path segment"))
            } else {
                Ok(Seg::Key(p.to_string()))
            }
        })
        .collect()
}

fn parse_value(raw: &str) -> Value {
    let doc = format!("v = {raw}");
    match doc.parse::<Table>() {
        Ok(mut t) => t.remove("v").unwrap_or_else(|| Value::String(raw.to_string())),
        Err(_) => Value::String(raw.to_string()),
    }
}
