//! The registry: every study reproduced so far, and running them by name into an output
//! directory with its index.

use crate::frame::{self, Entry, Options, Reproduction};
use crate::page;
use crate::{bloat, bond, pha, proxy_lb, tcp_fs, train};
use std::path::Path;

/// Every study reproduced so far, in the index's order.
pub const STUDIES: &[Entry] = &[
    Entry::of::<pha::Pha>(),
    Entry::of::<proxy_lb::ProxyLb>(),
    Entry::of::<tcp_fs::TcpFs>(),
    Entry::of::<bloat::Bloat>(),
    Entry::of::<bond::Bond>(),
    Entry::of::<train::Train>(),
];

/// Study names, for errors and help.
pub fn names() -> Vec<&'static str> {
    STUDIES.iter().map(|p| p.meta.name).collect()
}

/// Run `which` ("all" or a study's name) into `opts.out`; returns each study's reproduction.
/// `log` gets progress lines.
pub fn run(
    which: &str,
    opts: &Options,
    log: &mut dyn FnMut(&str),
) -> Result<Vec<Reproduction>, String> {
    let chosen: Vec<&Entry> = if which == "all" {
        STUDIES.iter().collect()
    } else {
        match STUDIES.iter().find(|p| p.meta.name == which) {
            Some(p) => vec![p],
            None => {
                return Err(format!(
                    "unknown paper {which:?}; expected all or one of {}",
                    names().join(", ")
                ))
            }
        }
    };
    let mut out = Vec::new();
    for p in chosen {
        out.push(frame::reproduce_into(
            p,
            opts,
            &opts.out.join(p.meta.name),
            log,
        )?);
    }
    let p = opts.out.join("index.html");
    std::fs::write(&p, page::index(&index(&opts.out, &out)))
        .map_err(|e| format!("cannot write {}: {e}", p.display()))?;
    Ok(out)
}

/// The index's rows: every study reproduced now (`done`) or earlier into the same directory
/// (its summary.json there), in the registry's order.
pub fn index(out: &Path, done: &[Reproduction]) -> Vec<page::IndexRow> {
    let mut rows = Vec::new();
    for p in STUDIES {
        let counts = match done.iter().find(|r| r.summary.paper == p.meta.name) {
            Some(r) => Some((
                r.summary.claims.iter().filter(|c| c.holds).count(),
                r.summary.claims.len(),
            )),
            None => std::fs::read_to_string(out.join(p.meta.name).join("summary.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
                .and_then(|v| {
                    let c = v["claims"].as_array()?.clone();
                    Some((c.iter().filter(|x| x["holds"] == true).count(), c.len()))
                }),
        };
        if let Some((held, claims)) = counts {
            rows.push(page::IndexRow {
                name: p.meta.name.into(),
                title: p.meta.title.into(),
                held,
                claims,
            });
        }
    }
    rows
}
