//! What a study is ([`Meta`]) and what it finds: its numbers (means with 95% intervals over seeds, beside the paper's),
//! its claims (each with whether railpath's numbers bear it out and the evidence that decides
//! it), and its report's content (the setup, sections of prose, tables and figures). The frame
//! turns them into `summary.json` (numbers and claims) and `report.html` (everything, through the
//! one page template); tests read them as data.

use crate::stats::ci95;
use crate::svg::Plot;
use serde::Serialize;

/// What the frame and the index need to know of a study.
#[derive(Debug, Clone, Copy)]
pub struct Meta {
    /// The name on the command line and the output directory (`pha`).
    pub name: &'static str,
    /// The index's title for it.
    pub title: &'static str,
    /// The report page's `<title>`.
    pub page_title: &'static str,
    /// The report's heading.
    pub heading: &'static str,
    /// The original (the summary's `source`).
    pub source: &'static str,
    /// What stands beside the source in the report's opening (where its digest is).
    pub digest: &'static str,
    /// Why the study has no kernel side, if it has none (logged when one is asked for).
    pub no_kernel: Option<&'static str>,
}

/// The `format` of a reproduction summary.
pub const FORMAT: &str = "railpath-repro/1";

/// One claim of a paper and whether railpath's numbers bear it out.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Claim {
    pub id: String,
    pub text: String,
    pub holds: bool,
    /// What railpath measured that decides it.
    pub evidence: String,
}

impl Claim {
    pub fn new(
        id: impl Into<String>,
        text: impl Into<String>,
        holds: bool,
        evidence: impl Into<String>,
    ) -> Claim {
        Claim {
            id: id.into(),
            text: text.into(),
            holds,
            evidence: evidence.into(),
        }
    }
}

/// One number the paper reports beside railpath's.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Number {
    pub id: String,
    /// The paper's value; null for railpath-only numbers (e.g. PHA-D, not in the paper's tables).
    pub paper: Option<f64>,
    pub railpath: f64,
    pub ci95: [f64; 2],
    pub unit: String,
}

/// A number of the summary: the mean of `v` with its 95% interval.
pub fn number(id: &str, paper: Option<f64>, v: &[f64], unit: &str) -> Number {
    let (m, lo, hi) = ci95(v);
    Number {
        id: id.into(),
        paper,
        railpath: m,
        ci95: [lo, hi],
        unit: unit.into(),
    }
}

impl Number {
    /// (mean, lower, upper), as the plots take them.
    pub fn triple(&self) -> (f64, f64, f64) {
        (self.railpath, self.ci95[0], self.ci95[1])
    }
}

/// A number for a report's table: its mean with `digits` decimals and its 95% interval after it
/// (the mean alone when the interval is a point: one seed, or runs that do not vary).
pub fn fmt_number(n: &Number, digits: usize) -> String {
    if n.ci95[0] == n.ci95[1] {
        format!("{:.*}", digits, n.railpath)
    } else {
        fmt_interval(n, digits)
    }
}

/// A number with its 95% interval, always: "m [lo, hi]" with `digits` decimals.
pub fn fmt_interval(n: &Number, digits: usize) -> String {
    format!(
        "{:.*} [{:.*}, {:.*}]",
        digits, n.railpath, digits, n.ci95[0], digits, n.ci95[1]
    )
}

/// The mean of `v` and its 95% interval as [`fmt_number`] gives them.
pub fn fmt_values(v: &[f64], digits: usize) -> String {
    fmt_number(&number("", None, v, ""), digits)
}

/// A reproduction's `summary.json` (results.md "Reproduction output").
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Summary {
    pub format: String,
    pub paper: String,
    pub source: String,
    pub railpath_version: String,
    pub seeds: u64,
    pub runs: u64,
    pub claims: Vec<Claim>,
    pub numbers: Vec<Number>,
    /// One row per run, for studies that list their runs (train: seed, scheme, goodput, each
    /// carrier's handovers); absent for the others.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub runs_table: Vec<serde_json::Value>,
}

/// What a study's analysis finds: the summary's numbers and claims, and the report's content.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    /// Seeds per configuration (the intervals are over them).
    pub seeds: u64,
    pub numbers: Vec<Number>,
    pub claims: Vec<Claim>,
    pub report: Report,
    /// The summary's `runs_table` (empty: none).
    pub runs_table: Vec<serde_json::Value>,
}

impl Findings {
    pub fn new(seeds: u64) -> Findings {
        Findings {
            seeds,
            ..Default::default()
        }
    }

    /// The number `id`, if found.
    pub fn number(&self, id: &str) -> Option<&Number> {
        self.numbers.iter().find(|n| n.id == id)
    }

    /// The mean of number `id` (NaN when there is none).
    pub fn value(&self, id: &str) -> f64 {
        self.number(id).map_or(f64::NAN, |n| n.railpath)
    }

    /// The claim `id`, if made.
    pub fn claim(&self, id: &str) -> Option<&Claim> {
        self.claims.iter().find(|c| c.id == id)
    }

    /// Whether claim `id` was made and does not hold.
    pub fn fails(&self, id: &str) -> bool {
        self.claim(id).is_some_and(|c| !c.holds)
    }

    /// Add a section to the report.
    pub fn section(&mut self, title: impl Into<String>, blocks: Vec<Block>) {
        self.report.sections.push(Section {
            title: title.into(),
            blocks,
        });
    }
}

/// A report's content beyond the summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Report {
    /// What the runs are and what the numbers mean, after "railpath V: N simulated runs, " in
    /// the report's opening (e.g. "10 seeds per configuration; numbers are means ...").
    pub method: String,
    /// The setup (HTML prose): what was run, and the choices the paper leaves open.
    pub setup: String,
    /// The sections after the claims, in order.
    pub sections: Vec<Section>,
}

impl Report {
    /// The section titled `title`.
    pub fn section(&self, title: &str) -> Option<&Section> {
        self.sections.iter().find(|s| s.title == title)
    }

    /// Every figure, in the report's order.
    pub fn figures(&self) -> Vec<&Figure> {
        self.sections.iter().flat_map(|s| s.figures()).collect()
    }
}

/// A titled part of a report.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Section {
    pub fn figures(&self) -> Vec<&Figure> {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Figure(f) => Some(f),
                _ => None,
            })
            .collect()
    }

    pub fn tables(&self) -> Vec<&Table> {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Table(t) => Some(t),
                _ => None,
            })
            .collect()
    }

    /// The section's prose and notes, joined.
    pub fn text(&self) -> String {
        self.blocks
            .iter()
            .filter_map(|b| match b {
                Block::Prose(t) | Block::Note(t) => Some(t.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// One piece of a section.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// HTML prose (paragraphs, lists) written by the study, which escapes what it interpolates.
    Prose(String),
    /// HTML prose set apart as a note.
    Note(String),
    Table(Table),
    Figure(Figure),
}

impl Block {
    pub fn prose(html: impl Into<String>) -> Block {
        Block::Prose(html.into())
    }

    pub fn figure(plot: Plot, caption: impl Into<String>) -> Block {
        Block::Figure(Figure {
            plot,
            caption: caption.into(),
        })
    }
}

/// A table: a header row and rows of cells (text; the page escapes it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    pub head: Vec<Cell>,
    pub rows: Vec<Vec<Cell>>,
}

impl Table {
    pub fn new<C: Into<Cell>>(head: impl IntoIterator<Item = C>) -> Table {
        Table {
            head: head.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    pub fn row<C: Into<Cell>>(&mut self, cells: impl IntoIterator<Item = C>) {
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }
}

impl From<Table> for Block {
    fn from(t: Table) -> Block {
        Block::Table(t)
    }
}

/// A table cell: text, shown strong when it stands out (a best value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Cell {
    pub text: String,
    pub strong: bool,
}

impl Cell {
    pub fn strong(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            strong: true,
        }
    }
}

impl From<String> for Cell {
    fn from(text: String) -> Cell {
        Cell {
            text,
            strong: false,
        }
    }
}

impl From<&str> for Cell {
    fn from(text: &str) -> Cell {
        Cell::from(text.to_string())
    }
}

/// A plot and its caption (HTML prose; empty for none).
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    pub plot: Plot,
    pub caption: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_format_with_their_interval_unless_it_is_a_point() {
        let n = number("x", None, &[1.0, 2.0, 3.0], "u");
        // Mean 2, half-width 4.303 / sqrt(3) = 2.484.
        assert_eq!(fmt_number(&n, 1), "2.0 [-0.5, 4.5]");
        assert_eq!(fmt_interval(&n, 2), "2.00 [-0.48, 4.48]");
        let p = number("p", None, &[5.0, 5.0], "u");
        assert_eq!(fmt_number(&p, 2), "5.00");
        assert_eq!(fmt_interval(&p, 1), "5.0 [5.0, 5.0]");
        assert_eq!(fmt_values(&[7.0], 1), "7.0");
    }

    #[test]
    fn findings_are_found_by_id() {
        let mut f = Findings::new(3);
        f.numbers.push(number("a", Some(1.0), &[2.0], "%"));
        f.claims.push(Claim::new("c", "text", false, "because"));
        assert_eq!(f.value("a"), 2.0);
        assert!(f.value("b").is_nan());
        assert!(f.fails("c") && !f.fails("d"));
        let mut t = Table::new(["a", "b"]);
        t.row([Cell::from("1"), Cell::strong("2")]);
        f.section("S", vec![Block::prose("<p>x</p>"), t.into()]);
        let s = f.report.section("S").unwrap();
        assert_eq!(s.tables()[0].rows[0][1], Cell::strong("2"));
        assert_eq!(s.text(), "<p>x</p>");
        assert!(f.report.figures().is_empty());
    }
}
