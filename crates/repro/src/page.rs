//! The reports' one page: `page.html` (the shell and its style, the same for every report and
//! the index) filled with a study's findings, rendered here: the opening, the setup, the claims
//! with their verdicts, then the study's sections (prose, tables, figures drawn by crate::svg).

use crate::findings::{Block, Claim, Meta, Report, Section, Summary, Table};
use crate::sim;
use crate::svg::esc;

const TEMPLATE: &str = include_str!("page.html");

/// The template with each `{{slot}}` replaced by its value (values are not scanned again).
fn fill(slots: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(TEMPLATE.len() + slots.iter().map(|s| s.1.len()).sum::<usize>());
    let mut rest = TEMPLATE;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(j) = after.find("}}") else {
            out.push_str(&rest[i..]);
            rest = "";
            break;
        };
        if let Some((_, v)) = slots.iter().find(|(k, _)| *k == &after[..j]) {
            out.push_str(v);
        }
        rest = &after[j + 2..];
    }
    out.push_str(rest);
    out
}

/// A study's report page.
pub fn report(meta: &Meta, s: &Summary, r: &Report) -> String {
    let held = s.claims.iter().filter(|c| c.holds).count();
    let mut body = format!(
        "<h1>{}</h1>\n<p>Source: <code>{}</code> ({}). railpath {}: {} simulated runs, {} {held} of {} claims hold.</p>\n",
        esc(meta.heading),
        esc(&s.source),
        meta.digest,
        esc(&s.railpath_version),
        s.runs,
        r.method,
        s.claims.len()
    );
    body.push_str("\n<h2>Setup</h2>\n");
    body.push_str(&r.setup);
    body.push_str("\n\n<h2>Claims</h2>\n");
    claims(&mut body, &s.claims);
    for sec in &r.sections {
        section(&mut body, sec);
    }
    fill(&[("title", &esc(meta.page_title)), ("body", &body)])
}

/// The claims and their verdicts: claim, verdict, evidence.
fn claims(out: &mut String, claims: &[Claim]) {
    out.push_str("<table><tr><th>claim</th><th>railpath</th><th>evidence</th></tr>\n");
    for c in claims {
        let (class, verdict) = if c.holds {
            ("holds", "holds")
        } else {
            ("fails", "does not hold")
        };
        out.push_str(&format!(
            "<tr><td>{}</td><td class=\"{class}\">{verdict}</td><td>{}</td></tr>\n",
            esc(&c.text),
            esc(&c.evidence)
        ));
    }
    out.push_str("</table>\n");
}

fn section(out: &mut String, s: &Section) {
    out.push_str(&format!("\n<h2>{}</h2>\n", esc(&s.title)));
    for b in &s.blocks {
        match b {
            Block::Prose(html) => {
                out.push_str(html);
                out.push('\n');
            }
            Block::Note(html) => {
                out.push_str("<div class=\"note\">\n");
                out.push_str(html);
                out.push_str("\n</div>\n");
            }
            Block::Table(t) => table(out, t),
            Block::Figure(f) => {
                out.push_str("<figure>");
                out.push_str(&f.plot.svg());
                if !f.caption.is_empty() {
                    out.push_str("<figcaption>");
                    out.push_str(&f.caption);
                    out.push_str("</figcaption>");
                }
                out.push_str("</figure>\n");
            }
        }
    }
}

fn table(out: &mut String, t: &Table) {
    out.push_str("<table><tr>");
    for h in &t.head {
        out.push_str(&format!("<th>{}</th>", esc(&h.text)));
    }
    out.push_str("</tr>\n");
    for row in &t.rows {
        out.push_str("<tr>");
        for c in row {
            if c.strong {
                out.push_str(&format!("<td><b>{}</b></td>", esc(&c.text)));
            } else {
                out.push_str(&format!("<td>{}</td>", esc(&c.text)));
            }
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table>\n");
}

/// A study listed on the index: its name, title, and how many of its claims hold.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexRow {
    pub name: String,
    pub title: String,
    pub held: usize,
    pub claims: usize,
}

/// `OUT/index.html`: every study reproduced in the output directory, with its claims.
pub fn index(rows: &[IndexRow]) -> String {
    let mut body = format!(
        "<h1>railpath: the source papers, reproduced</h1>\n<p>railpath {} ran each paper's experiment in its simulator. \
         Each report puts the paper's numbers beside railpath's, with 95% confidence intervals over seeds, and says where \
         and why they differ.</p>\n<table><tr><th>paper</th><th>title</th><th>claims that hold</th><th>data</th></tr>\n",
        sim::VERSION
    );
    for r in rows {
        let name = esc(&r.name);
        body.push_str(&format!(
            "<tr><td><a href=\"{name}/report.html\">{name}</a></td><td>{}</td><td>{} of {}</td><td><a href=\"{name}/summary.json\">summary.json</a></td></tr>\n",
            esc(&r.title),
            r.held,
            r.claims
        ));
    }
    body.push_str("</table>");
    fill(&[("title", "railpath reproductions"), ("body", &body)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::findings::{Cell, Findings};
    use crate::svg::Plot;

    #[test]
    fn the_template_has_a_title_and_a_body_slot() {
        let p = fill(&[("title", "T {{body}}"), ("body", "<p>b</p>")]);
        assert!(p.starts_with("<!doctype html>"));
        // A value is not filled again.
        assert!(p.contains("<title>T {{body}}</title>"));
        assert!(p.contains("<body>\n<p>b</p>\n</body></html>"));
        assert!(!fill(&[]).contains("{{"));
    }

    #[test]
    fn a_report_page_holds_the_claims_sections_tables_and_figures() {
        let meta = Meta {
            name: "x",
            title: "X",
            page_title: "railpath: the X paper reproduced",
            heading: "X, reproduced",
            source: "s.txt",
            digest: "English digest in seeds.md",
            no_kernel: None,
        };
        let mut f = Findings::new(2);
        f.report.method = "2 seeds per configuration.".into();
        f.report.setup = "<p>setup</p>".into();
        let mut t = Table::new(["a", "b & c"]);
        t.row([Cell::from("1 < 2"), Cell::strong("3")]);
        f.section(
            "Results",
            vec![
                t.into(),
                Block::figure(Plot::lines("p", "x", "y", vec![]), "cap"),
                Block::Note("<p>n</p>".into()),
            ],
        );
        let s = Summary {
            format: "f".into(),
            paper: "x".into(),
            source: "s.txt".into(),
            railpath_version: "0".into(),
            seeds: 2,
            runs: 7,
            claims: vec![
                Claim::new("a", "A <holds>", true, "e"),
                Claim::new("b", "B", false, "f"),
            ],
            numbers: vec![],
            runs_table: vec![],
        };
        let p = report(&meta, &s, &f.report);
        assert!(p.contains("<title>railpath: the X paper reproduced</title>"));
        assert!(p.contains(
            "railpath 0: 7 simulated runs, 2 seeds per configuration. 1 of 2 claims hold."
        ));
        assert!(p.contains("<td>A &lt;holds&gt;</td><td class=\"holds\">holds</td>"));
        assert!(p.contains("<td class=\"fails\">does not hold</td>"));
        assert!(p.contains("<th>b &amp; c</th>"));
        assert!(p.contains("<td>1 &lt; 2</td><td><b>3</b></td>"));
        assert!(p.contains("<figure><svg class=\"plot\""));
        assert!(p.contains("<figcaption>cap</figcaption>"));
        assert!(p.contains("<div class=\"note\">\n<p>n</p>\n</div>"));
        let i = index(&[IndexRow {
            name: "x".into(),
            title: "X".into(),
            held: 1,
            claims: 2,
        }]);
        assert!(i.contains("<a href=\"x/report.html\">x</a></td><td>X</td><td>1 of 2</td>"));
    }
}
