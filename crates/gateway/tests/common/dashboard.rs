//! Checks a Grafana dashboard against a scrape of the daemon, for where no Grafana can be run:
//! every panel query (and every template variable query) is parsed as PromQL (promql-parser),
//! and each metric it selects must be in the scrape, with every label it matches on, groups by
//! or names in its legend, and its label matchers must select at least one series of the scrape.
//! Grafana's variables are replaced first (`$instance`, `$carrier`: any value; `$__range`,
//! `$__rate_interval`, `$__interval`: 5m); `instance` and `job` are the labels Prometheus adds
//! to every scraped series.

use promql_parser::label::MatchOp;
use promql_parser::parser::{self, Expr, LabelModifier};
use std::collections::{BTreeMap, BTreeSet};

/// One sample line of a Prometheus text exposition.
pub struct Series {
    pub name: String,
    pub labels: BTreeMap<String, String>,
}

/// Parses the sample lines of a text exposition (format 0.0.4).
pub fn parse_exposition(text: &str) -> Vec<Series> {
    let mut out = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let (name_end, has_labels) = match l.find(['{', ' ']) {
            Some(i) => (i, l.as_bytes()[i] == b'{'),
            None => continue,
        };
        let name = l[..name_end].to_string();
        let mut labels = BTreeMap::new();
        if has_labels {
            let mut rest = &l[name_end + 1..];
            loop {
                rest = rest.trim_start_matches(',');
                if rest.starts_with('}') || rest.is_empty() {
                    break;
                }
                let Some(eq) = rest.find('=') else { break };
                let key = rest[..eq].to_string();
                let mut val = String::new();
                let mut chars = rest[eq + 2..].char_indices();
                let mut end = 0;
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => {
                            if let Some((_, n)) = chars.next() {
                                val.push(match n {
                                    'n' => '\n',
                                    x => x,
                                });
                            }
                        }
                        '"' => {
                            end = i;
                            break;
                        }
                        c => val.push(c),
                    }
                }
                labels.insert(key, val);
                rest = &rest[eq + 2 + end + 1..];
            }
        }
        out.push(Series { name, labels });
    }
    out
}

/// Prometheus' own target labels.
const TARGET_LABELS: [&str; 2] = ["instance", "job"];

fn substitute(expr: &str) -> String {
    expr.replace("$__rate_interval", "5m")
        .replace("$__interval", "5m")
        .replace("$__range", "5m")
        .replace("${instance}", ".*")
        .replace("$instance", ".*")
        .replace("${carrier}", ".*")
        .replace("$carrier", ".*")
}

struct Ctx<'a> {
    series: &'a [Series],
    problems: Vec<String>,
    /// Labels of the series the expression reads.
    labels: BTreeSet<String>,
}

impl Ctx<'_> {
    fn selector(&mut self, what: &str, vs: &parser::VectorSelector) {
        let name = vs.name.clone().or_else(|| {
            vs.matchers
                .matchers
                .iter()
                .find(|m| m.name == "__name__")
                .map(|m| m.value.clone())
        });
        let Some(name) = name else {
            self.problems
                .push(format!("{what}: a selector without a metric name"));
            return;
        };
        let of_name: Vec<&Series> = self.series.iter().filter(|s| s.name == name).collect();
        if of_name.is_empty() {
            self.problems
                .push(format!("{what}: metric {name} is not in the scrape"));
            return;
        }
        let known: BTreeSet<&str> = of_name
            .iter()
            .flat_map(|s| s.labels.keys().map(String::as_str))
            .chain(TARGET_LABELS)
            .collect();
        for m in &vs.matchers.matchers {
            if m.name != "__name__" && !known.contains(m.name.as_str()) {
                self.problems.push(format!(
                    "{what}: {name} has no label {:?} (it has {known:?})",
                    m.name
                ));
            }
        }
        let hit = of_name.iter().any(|s| {
            vs.matchers.matchers.iter().all(|m| {
                if m.name == "__name__" || TARGET_LABELS.contains(&m.name.as_str()) {
                    return true;
                }
                let v = s.labels.get(&m.name).map(String::as_str).unwrap_or("");
                match &m.op {
                    MatchOp::Equal => v == m.value,
                    MatchOp::NotEqual => v != m.value,
                    MatchOp::Re(r) => r.is_match(v),
                    MatchOp::NotRe(r) => !r.is_match(v),
                }
            })
        });
        if !hit {
            self.problems.push(format!(
                "{what}: {name} with {:?} selects no series of the scrape",
                vs.matchers
                    .matchers
                    .iter()
                    .map(|m| m.to_string())
                    .collect::<Vec<_>>()
            ));
        }
        for s in &of_name {
            self.labels.extend(s.labels.keys().cloned());
        }
    }

    fn modifier_labels(&mut self, what: &str, m: &LabelModifier) {
        let ls = match m {
            LabelModifier::Include(l) | LabelModifier::Exclude(l) => &l.labels,
        };
        for l in ls {
            if !self.labels.contains(l) && !TARGET_LABELS.contains(&l.as_str()) {
                self.problems.push(format!(
                    "{what}: groups by {l:?}, which no series it reads has"
                ));
            }
        }
    }

    fn walk(&mut self, what: &str, e: &Expr) {
        match e {
            Expr::Aggregate(a) => {
                self.walk(what, &a.expr);
                if let Some(p) = &a.param {
                    self.walk(what, p);
                }
                if let Some(m) = &a.modifier {
                    self.modifier_labels(what, m);
                }
            }
            Expr::Unary(u) => self.walk(what, &u.expr),
            Expr::Binary(b) => {
                self.walk(what, &b.lhs);
                self.walk(what, &b.rhs);
                if let Some(m) = b.modifier.as_ref().and_then(|m| m.matching.as_ref()) {
                    self.modifier_labels(what, m);
                }
            }
            Expr::Paren(p) => self.walk(what, &p.expr),
            Expr::Subquery(s) => self.walk(what, &s.expr),
            Expr::VectorSelector(vs) => self.selector(what, vs),
            Expr::MatrixSelector(ms) => self.selector(what, &ms.vs),
            Expr::Call(c) => {
                for a in &c.args.args {
                    self.walk(what, a);
                }
            }
            Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
        }
    }
}

/// The labels `{{name}}` a legend format uses.
fn legend_labels(fmt: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = fmt;
    while let Some(i) = rest.find("{{") {
        let Some(j) = rest[i..].find("}}") else { break };
        out.push(rest[i + 2..i + j].trim().to_string());
        rest = &rest[i + j + 2..];
    }
    out
}

/// Every problem of `dashboard` (JSON text) against `scrape` (an exposition); empty when sound.
/// Also returns how many queries were checked.
pub fn check(dashboard: &str, scrape: &str) -> (Vec<String>, usize) {
    let series = parse_exposition(scrape);
    let mut cx = Ctx {
        series: &series,
        problems: Vec::new(),
        labels: BTreeSet::new(),
    };
    let d: serde_json::Value = match serde_json::from_str(dashboard) {
        Ok(d) => d,
        Err(e) => return (vec![format!("not JSON: {e}")], 0),
    };
    let vars: BTreeSet<String> = d["templating"]["list"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|v| v["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    for v in ["datasource", "instance", "carrier"] {
        if !vars.contains(v) {
            cx.problems.push(format!("no template variable {v:?}"));
        }
    }
    let mut checked = 0;
    // Variable queries: label_values(selector, label).
    for v in d["templating"]["list"].as_array().into_iter().flatten() {
        let Some(q) = v["query"].as_str() else {
            continue;
        };
        let Some(inner) = q
            .strip_prefix("label_values(")
            .and_then(|r| r.strip_suffix(')'))
        else {
            continue;
        };
        let Some((sel, label)) = inner.rsplit_once(',') else {
            cx.problems
                .push(format!("variable {}: cannot read {q:?}", v["name"]));
            continue;
        };
        let what = format!("variable {}", v["name"]);
        cx.labels.clear();
        match parser::parse(&substitute(sel.trim())) {
            Ok(e) => cx.walk(&what, &e),
            Err(e) => cx.problems.push(format!("{what}: {e}")),
        }
        let label = label.trim();
        if !cx.labels.contains(label) && !TARGET_LABELS.contains(&label) {
            cx.problems
                .push(format!("{what}: no label {label:?} on {sel}"));
        }
        checked += 1;
    }
    let mut ids = BTreeSet::new();
    let mut panels: Vec<&serde_json::Value> = Vec::new();
    for p in d["panels"].as_array().into_iter().flatten() {
        panels.push(p);
        panels.extend(p["panels"].as_array().into_iter().flatten());
    }
    for p in panels {
        let title = p["title"].as_str().unwrap_or("?").to_string();
        if !ids.insert(p["id"].as_i64().unwrap_or(-1)) {
            cx.problems
                .push(format!("panel {title:?}: duplicate or missing id"));
        }
        if p["gridPos"]["w"].as_i64().is_none() || p["gridPos"]["h"].as_i64().is_none() {
            cx.problems.push(format!("panel {title:?}: no gridPos"));
        }
        if p["type"] == "row" {
            continue;
        }
        let targets = p["targets"].as_array().cloned().unwrap_or_default();
        if targets.is_empty() {
            cx.problems.push(format!("panel {title:?}: no query"));
        }
        for t in targets {
            let Some(expr) = t["expr"].as_str() else {
                cx.problems
                    .push(format!("panel {title:?}: a target without expr"));
                continue;
            };
            let what = format!("panel {title:?} query {}", t["refId"]);
            cx.labels.clear();
            match parser::parse(&substitute(expr)) {
                Ok(e) => cx.walk(&what, &e),
                Err(e) => cx.problems.push(format!("{what}: {e}: {expr}")),
            }
            for l in legend_labels(t["legendFormat"].as_str().unwrap_or("")) {
                if !cx.labels.contains(&l) {
                    cx.problems
                        .push(format!("{what}: legend names {l:?}, which its series lack"));
                }
            }
            checked += 1;
        }
    }
    (cx.problems, checked)
}
