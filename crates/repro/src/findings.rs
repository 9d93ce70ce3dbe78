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

/// Whose claim it is (the summary's `basis`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Basis {
    /// The paper's own statement (its words, its numbers).
    Paper,
    /// railpath's operationalisation of a statement of the paper: a bound, a tolerance, a
    /// condition or a measure the paper never gives (e.g. "within 2 s of each onset").
    Railpath,
}

/// Whose setup explains why a claim does not hold (the summary's `cause`).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Cause {
    /// railpath's setup: a defect, a simplification, or its choice where the paper gives none.
    Railpath,
    /// The paper's tool: a default or a model of the simulator or kernel the paper ran.
    Tool,
    /// Reality: what the mechanism does; the paper's statement does not hold in general.
    Reality,
    /// Not known; the explanation says what was ruled out.
    Unexplained,
}

impl Cause {
    /// How the report names it.
    pub fn label(self) -> &'static str {
        match self {
            Cause::Railpath => "railpath's setup",
            Cause::Tool => "the paper's tool",
            Cause::Reality => "reality",
            Cause::Unexplained => "unexplained",
        }
    }
}

/// The explanation of a claim that held in railpath's reference runs and was therefore never
/// examined failing ([`ClaimDraft::unexamined`]); the reference runs' tests check that no
/// failing claim carries it.
pub const UNEXAMINED: &str =
    "It held in railpath's reference runs (`railpath repro` with its default seeds), so why it \
                              does not hold in this run has not been examined.";

/// One claim of a paper, whose it is, whether railpath's numbers bear it out, and, when they
/// do not, why. Made by [`Claim::paper`] or [`Claim::railpath`] and finished by
/// [`ClaimDraft::otherwise`] or [`ClaimDraft::unexamined`], so that no claim exists without
/// a reason for the case it fails; the frame refuses to write one that fails without
/// ([`check_claims`]).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Claim {
    pub id: String,
    pub text: String,
    pub basis: Basis,
    pub holds: bool,
    /// What railpath measured that decides it.
    pub evidence: String,
    /// Whose setup explains why it does not hold; null when it holds.
    pub cause: Option<Cause>,
    /// One sentence on why it does not hold; null when it holds.
    pub explanation: Option<String>,
}

/// A claim still waiting for what to say if it does not hold.
#[derive(Debug, Clone)]
#[must_use = "a claim is finished by .otherwise(..) or .unexamined()"]
pub struct ClaimDraft {
    id: String,
    text: String,
    basis: Basis,
    holds: bool,
    evidence: String,
}

impl Claim {
    /// The paper's own statement.
    pub fn paper(
        id: impl Into<String>,
        text: impl Into<String>,
        holds: bool,
        evidence: impl Into<String>,
    ) -> ClaimDraft {
        ClaimDraft::new(Basis::Paper, id, text, holds, evidence)
    }

    /// railpath's operationalisation of a statement of the paper.
    pub fn railpath(
        id: impl Into<String>,
        text: impl Into<String>,
        holds: bool,
        evidence: impl Into<String>,
    ) -> ClaimDraft {
        ClaimDraft::new(Basis::Railpath, id, text, holds, evidence)
    }
}

impl ClaimDraft {
    fn new(
        basis: Basis,
        id: impl Into<String>,
        text: impl Into<String>,
        holds: bool,
        evidence: impl Into<String>,
    ) -> ClaimDraft {
        ClaimDraft {
            id: id.into(),
            text: text.into(),
            basis,
            holds,
            evidence: evidence.into(),
        }
    }

    /// The claim, with `why` (one sentence; `cause` says whose setup it blames) kept only if it
    /// does not hold.
    pub fn otherwise(self, cause: Cause, why: impl Into<String>) -> Claim {
        let fails = !self.holds;
        Claim {
            id: self.id,
            text: self.text,
            basis: self.basis,
            holds: self.holds,
            evidence: self.evidence,
            cause: fails.then_some(cause),
            explanation: fails.then(|| why.into()),
        }
    }

    /// The claim, for one that held in railpath's reference runs: should it not hold in another
    /// run, it says so ([`UNEXAMINED`]).
    pub fn unexamined(self) -> Claim {
        self.otherwise(Cause::Unexplained, UNEXAMINED)
    }
}

/// Every claim that does not hold says why and whose setup explains it, a claim that holds
/// carries no explanation, and no two claims share an id: the frame writes nothing otherwise.
pub fn check_claims(claims: &[Claim]) -> Result<(), String> {
    for (i, c) in claims.iter().enumerate() {
        if claims[..i].iter().any(|d| d.id == c.id) {
            return Err(format!("claim {:?} is made twice", c.id));
        }
        let said = c
            .explanation
            .as_deref()
            .is_some_and(|e| !e.trim().is_empty());
        let explained = said && c.cause.is_some();
        if !c.holds && !explained {
            return Err(format!(
                "claim {:?} does not hold and does not say why: finish it with \
                 ClaimDraft::otherwise(cause, one sentence)",
                c.id
            ));
        }
        if c.holds && (c.explanation.is_some() || c.cause.is_some()) {
            return Err(format!(
                "claim {:?} holds and carries an explanation of why it does not",
                c.id
            ));
        }
    }
    Ok(())
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
        f.claims
            .push(Claim::paper("c", "text", false, "because").otherwise(Cause::Reality, "why"));
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

    #[test]
    fn a_claim_explains_itself_only_when_it_does_not_hold() {
        let held = Claim::paper("a", "A", true, "e").otherwise(Cause::Tool, "ns-2's window");
        assert_eq!(
            (held.basis, held.cause, held.explanation.clone()),
            (Basis::Paper, None, None)
        );
        let failed = Claim::railpath("b", "B within 2 s", false, "5 s").unexamined();
        assert_eq!(failed.basis, Basis::Railpath);
        assert_eq!(failed.cause, Some(Cause::Unexplained));
        assert_eq!(failed.explanation.as_deref(), Some(UNEXAMINED));
        let v = serde_json::to_value(&failed).unwrap();
        assert_eq!(
            (&v["basis"], &v["cause"]),
            (&"railpath".into(), &"unexplained".into())
        );
        let v = serde_json::to_value(&held).unwrap();
        assert_eq!(
            (&v["basis"], &v["cause"], &v["explanation"]),
            (
                &"paper".into(),
                &serde_json::Value::Null,
                &serde_json::Value::Null
            )
        );
    }

    #[test]
    fn the_check_refuses_a_failing_claim_without_a_reason() {
        let ok = vec![
            Claim::paper("a", "A", true, "e").unexamined(),
            Claim::paper("b", "B", false, "e").otherwise(Cause::Railpath, "A defect."),
        ];
        assert_eq!(check_claims(&ok), Ok(()));
        // Made by hand, past the draft: each way of saying nothing is refused, by the claim's id.
        let bare = |holds: bool, cause: Option<Cause>, why: Option<&str>| Claim {
            id: "x".into(),
            text: "X".into(),
            basis: Basis::Paper,
            holds,
            evidence: "e".into(),
            cause,
            explanation: why.map(String::from),
        };
        for bad in [
            bare(false, None, None),
            bare(false, Some(Cause::Tool), None),
            bare(false, Some(Cause::Tool), Some("  ")),
            bare(false, None, Some("Why.")),
            bare(true, Some(Cause::Tool), Some("Why.")),
        ] {
            let e = check_claims(std::slice::from_ref(&bad)).unwrap_err();
            assert!(e.contains("\"x\""), "{bad:?}: {e}");
        }
        assert!(check_claims(&[bare(false, Some(Cause::Reality), Some("Why."))]).is_ok());
        let twice = [ok[0].clone(), ok[0].clone()];
        assert!(check_claims(&twice).unwrap_err().contains("twice"));
    }
}
