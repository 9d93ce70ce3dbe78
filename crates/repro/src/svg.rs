//! Small static SVG plots for the reports: line charts, grouped bars with error bars, and
//! intervals along an axis. Self-contained markup (no scripts, no external files), so a report
//! reads offline in any browser. Every plot is an `<svg class="plot">` with a `<title>`.

use std::fmt::Write;

const W: f64 = 640.0;
const H: f64 = 300.0;
const ML: f64 = 64.0;
const MR: f64 = 150.0;
const MT: f64 = 30.0;
const MB: f64 = 46.0;
/// Colour-blind-safe palette (Okabe-Ito).
pub const COLORS: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// Escape text for HTML/SVG.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// "Nice" tick values covering [lo, hi].
fn ticks(lo: f64, hi: f64, n: usize) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / n as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= n as f64)
        .unwrap_or(10.0 * mag);
    let mut v = Vec::new();
    let mut t = (lo / step).ceil() * step;
    while t <= hi + 1e-9 * span {
        v.push(if t.abs() < 1e-12 * span { 0.0 } else { t });
        t += step;
    }
    v
}

fn fmt_tick(t: f64) -> String {
    if t.abs() >= 100.0 || t.fract() == 0.0 {
        format!("{t:.0}")
    } else {
        format!("{}", (t * 1000.0).round() / 1000.0)
    }
}

struct Frame {
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Frame {
    fn x(&self, v: f64) -> f64 {
        ML + (v - self.x0) / (self.x1 - self.x0).max(1e-12) * (W - ML - MR)
    }
    fn y(&self, v: f64) -> f64 {
        H - MB - (v - self.y0) / (self.y1 - self.y0).max(1e-12) * (H - MT - MB)
    }
}

fn open(out: &mut String, title: &str) {
    let _ = write!(
        out,
        r#"<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {H}" width="{W}" height="{H}" role="img"><title>{}</title><rect x="0" y="0" width="{W}" height="{H}" fill="white"/><text x="{}" y="18" font-size="14" font-family="sans-serif" text-anchor="middle">{}</text>"#,
        esc(title),
        (ML + W - MR) / 2.0,
        esc(title)
    );
}

fn axes(out: &mut String, f: &Frame, xlabel: &str, ylabel: &str, xticks: bool) {
    axes_with(out, f, xlabel, ylabel, xticks, true)
}

fn axes_with(out: &mut String, f: &Frame, xlabel: &str, ylabel: &str, xticks: bool, yticks: bool) {
    let (l, r, t, b) = (ML, W - MR, MT, H - MB);
    let _ = write!(
        out,
        r##"<g font-family="sans-serif" font-size="11" fill="#333"><path d="M{l} {t} V{b} H{r}" stroke="#333" fill="none"/>"##
    );
    for v in ticks(f.y0, f.y1, 5).into_iter().filter(|_| yticks) {
        let y = f.y(v);
        let _ = write!(
            out,
            r##"<path d="M{l} {y:.1} H{r}" stroke="#e5e5e5"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            l - 4.0,
            y + 4.0,
            fmt_tick(v)
        );
    }
    if xticks {
        for v in ticks(f.x0, f.x1, 8) {
            let x = f.x(v);
            let _ = write!(
                out,
                r##"<path d="M{x:.1} {b} v4" stroke="#333"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
                b + 16.0,
                fmt_tick(v)
            );
        }
    }
    let _ = write!(
        out,
        r##"<text x="{}" y="{}" text-anchor="middle">{}</text><text transform="translate(14 {}) rotate(-90)" text-anchor="middle">{}</text></g>"##,
        (l + r) / 2.0,
        H - 8.0,
        esc(xlabel),
        (t + b) / 2.0,
        esc(ylabel)
    );
}

fn legend(out: &mut String, names: &[String]) {
    for (i, n) in names.iter().enumerate() {
        let y = MT + 10.0 + 18.0 * i as f64;
        let x = W - MR + 12.0;
        let _ = write!(
            out,
            r##"<rect x="{x}" y="{}" width="14" height="10" fill="{}"/><text x="{}" y="{}" font-family="sans-serif" font-size="11">{}</text>"##,
            y - 9.0,
            COLORS[i % COLORS.len()],
            x + 19.0,
            y,
            esc(n)
        );
    }
}

/// A named line of a line chart: (name, points).
pub type Series = (String, Vec<(f64, f64)>);

/// A shaded x-interval of a line chart: (from, to, label).
pub type Band = (f64, f64, String);

/// A plot as data: what it shows, drawn by [`Plot::svg`]. Reports hold their figures this way,
/// so a test reads a figure's series rather than its markup.
#[derive(Debug, Clone, PartialEq)]
pub enum Plot {
    /// Lines over shaded bands ([`lines_with_bands`]; no bands: [`lines`]).
    Lines {
        title: String,
        xlabel: String,
        ylabel: String,
        series: Vec<Series>,
        bands: Vec<Band>,
    },
    /// Grouped bars with 95% intervals ([`bars`]).
    Bars {
        title: String,
        ylabel: String,
        groups: Vec<String>,
        names: Vec<String>,
        values: Vec<Vec<(f64, f64, f64)>>,
    },
    /// Intervals along an axis ([`intervals`]).
    Intervals {
        title: String,
        xlabel: String,
        rows: Vec<IntervalRow>,
    },
}

impl Plot {
    /// A line chart without bands.
    pub fn lines(title: &str, xlabel: &str, ylabel: &str, series: Vec<Series>) -> Plot {
        Plot::bands(title, xlabel, ylabel, series, Vec::new())
    }

    /// A line chart over shaded bands.
    pub fn bands(
        title: &str,
        xlabel: &str,
        ylabel: &str,
        series: Vec<Series>,
        bands: Vec<Band>,
    ) -> Plot {
        Plot::Lines {
            title: title.into(),
            xlabel: xlabel.into(),
            ylabel: ylabel.into(),
            series,
            bands,
        }
    }

    /// Grouped bars with 95% intervals.
    pub fn bars(
        title: &str,
        ylabel: &str,
        groups: Vec<String>,
        names: Vec<String>,
        values: Vec<Vec<(f64, f64, f64)>>,
    ) -> Plot {
        Plot::Bars {
            title: title.into(),
            ylabel: ylabel.into(),
            groups,
            names,
            values,
        }
    }

    /// The plot's title.
    pub fn title(&self) -> &str {
        match self {
            Plot::Lines { title, .. }
            | Plot::Bars { title, .. }
            | Plot::Intervals { title, .. } => title,
        }
    }

    /// The plot's SVG.
    pub fn svg(&self) -> String {
        match self {
            Plot::Lines {
                title,
                xlabel,
                ylabel,
                series,
                bands,
            } => lines_with_bands(title, xlabel, ylabel, series, bands),
            Plot::Bars {
                title,
                ylabel,
                groups,
                names,
                values,
            } => bars(title, ylabel, groups, names, values),
            Plot::Intervals {
                title,
                xlabel,
                rows,
            } => intervals(title, xlabel, rows),
        }
    }
}

/// A line chart: `series` = (name, points).
pub fn lines(title: &str, xlabel: &str, ylabel: &str, series: &[Series]) -> String {
    lines_with_bands(title, xlabel, ylabel, series, &[])
}

/// Shades of the bands of [`lines_with_bands`], by the order their labels first appear.
const BAND_FILLS: [&str; 3] = ["#999999", "#E69F00", "#56B4E9"];

/// A line chart over shaded x-intervals: `bands` = (from, to, label); bands with the same label
/// share a shade and one legend entry.
pub fn lines_with_bands(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[Series],
    bands: &[Band],
) -> String {
    let pts = series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64, 0.0f64);
    for &(x, y) in pts {
        if x.is_finite() && y.is_finite() {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    let f = Frame {
        x0,
        x1,
        // From 0, or below it when a series goes negative (a change in percent).
        y0: y0 * 1.08,
        y1: if y1 > 0.0 { y1 * 1.08 } else { 1.0 },
    };
    let mut out = String::new();
    open(&mut out, title);
    let mut labels: Vec<&str> = Vec::new();
    for (a, b, label) in bands {
        let k = match labels.iter().position(|l| *l == label.as_str()) {
            Some(k) => k,
            None => {
                labels.push(label);
                labels.len() - 1
            }
        };
        let (xa, xb) = (f.x(a.max(f.x0)), f.x(b.min(f.x1)));
        if xb > xa {
            let _ = write!(
                out,
                r#"<rect class="band" x="{xa:.1}" y="{MT}" width="{:.1}" height="{}" fill="{}" fill-opacity="0.22"><title>{}</title></rect>"#,
                xb - xa,
                H - MT - MB,
                BAND_FILLS[k % BAND_FILLS.len()],
                esc(label)
            );
        }
    }
    axes(&mut out, &f, xlabel, ylabel, true);
    for (i, (_, p)) in series.iter().enumerate() {
        let mut d = String::new();
        for &(x, y) in p.iter().filter(|(x, y)| x.is_finite() && y.is_finite()) {
            let _ = write!(
                d,
                "{}{:.1} {:.1}",
                if d.is_empty() { "M" } else { " L" },
                f.x(x),
                f.y(y)
            );
        }
        let _ = write!(
            out,
            r#"<path class="series" d="{d}" stroke="{}" stroke-width="1.8" fill="none"/>"#,
            COLORS[i % COLORS.len()]
        );
    }
    let names: Vec<String> = series.iter().map(|s| s.0.clone()).collect();
    legend(&mut out, &names);
    for (k, label) in labels.iter().enumerate() {
        let y = MT + 10.0 + 18.0 * (names.len() + k) as f64;
        let x = W - MR + 12.0;
        let _ = write!(
            out,
            r##"<rect x="{x}" y="{}" width="14" height="10" fill="{}" fill-opacity="0.35"/><text x="{}" y="{}" font-family="sans-serif" font-size="11">{}</text>"##,
            y - 9.0,
            BAND_FILLS[k % BAND_FILLS.len()],
            x + 19.0,
            y,
            esc(label)
        );
    }
    out.push_str("</svg>");
    out
}

/// Grouped bars with 95% intervals: `groups` along x, one bar per `names` entry in each;
/// `values[g][k]` = (mean, lo, hi).
pub fn bars(
    title: &str,
    ylabel: &str,
    groups: &[String],
    names: &[String],
    values: &[Vec<(f64, f64, f64)>],
) -> String {
    let y1 = values
        .iter()
        .flatten()
        .map(|v| v.2.max(v.0))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let f = Frame {
        x0: 0.0,
        x1: groups.len().max(1) as f64,
        y0: 0.0,
        y1: if y1 > 0.0 { y1 * 1.1 } else { 1.0 },
    };
    let mut out = String::new();
    open(&mut out, title);
    axes(&mut out, &f, "", ylabel, false);
    let gw = f.x(1.0) - f.x(0.0);
    let bw = gw * 0.8 / names.len().max(1) as f64;
    for (g, name) in groups.iter().enumerate() {
        let gx = f.x(g as f64) + gw * 0.1;
        let _ = write!(
            out,
            r##"<text x="{:.1}" y="{}" font-family="sans-serif" font-size="11" text-anchor="middle">{}</text>"##,
            f.x(g as f64 + 0.5),
            H - MB + 16.0,
            esc(name)
        );
        for (k, &(m, lo, hi)) in values.get(g).into_iter().flatten().enumerate() {
            if !m.is_finite() {
                continue;
            }
            let x = gx + bw * k as f64;
            let _ = write!(
                out,
                r#"<rect class="bar" x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                f.y(m),
                bw * 0.9,
                (f.y(0.0) - f.y(m)).max(0.0),
                COLORS[k % COLORS.len()]
            );
            if lo.is_finite() && hi.is_finite() {
                let cx = x + bw * 0.45;
                let _ = write!(
                    out,
                    r##"<path d="M{cx:.1} {:.1} V{:.1} M{:.1} {:.1} h8 M{:.1} {:.1} h8" stroke="#222" fill="none"/>"##,
                    f.y(lo),
                    f.y(hi),
                    cx - 4.0,
                    f.y(lo),
                    cx - 4.0,
                    f.y(hi)
                );
            }
        }
    }
    legend(&mut out, names);
    out.push_str("</svg>");
    out
}

/// One row of an intervals plot: its name, its intervals and its marks.
pub type IntervalRow = (String, Vec<(f64, f64)>, Vec<f64>);

/// Intervals along an axis, one row per `rows` entry.
pub fn intervals(title: &str, xlabel: &str, rows: &[IntervalRow]) -> String {
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    for (_, iv, marks) in rows {
        for &(a, b) in iv {
            x0 = x0.min(a);
            x1 = x1.max(b);
        }
        for &m in marks {
            x0 = x0.min(m);
            x1 = x1.max(m);
        }
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    let f = Frame {
        x0,
        x1,
        y0: 0.0,
        y1: rows.len().max(1) as f64,
    };
    let mut out = String::new();
    open(&mut out, title);
    axes_with(&mut out, &f, xlabel, "", true, false);
    for (i, (name, iv, marks)) in rows.iter().enumerate() {
        let yc = f.y(rows.len() as f64 - i as f64 - 0.5);
        let c = COLORS[i % COLORS.len()];
        let _ = write!(
            out,
            r##"<text x="{}" y="{:.1}" font-family="sans-serif" font-size="11" text-anchor="end">{}</text>"##,
            ML - 6.0,
            yc + 4.0,
            esc(name)
        );
        for &(a, b) in iv {
            let _ = write!(
                out,
                r#"<rect class="zone" x="{:.1}" y="{:.1}" width="{:.1}" height="14" fill="{c}" fill-opacity="0.45"/>"#,
                f.x(a),
                yc - 7.0,
                (f.x(b) - f.x(a)).max(1.5)
            );
        }
        for &m in marks {
            let _ = write!(
                out,
                r#"<path d="M{:.1} {:.1} v24" stroke="{c}" stroke-width="1.5"/>"#,
                f.x(m),
                yc - 12.0
            );
        }
    }
    out.push_str("</svg>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_nice() {
        assert_eq!(ticks(0.0, 10.0, 5), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        assert_eq!(ticks(0.0, 1.0, 4), vec![0.0, 0.25, 0.5, 0.75, 1.0]);
    }

    #[test]
    fn plots_are_svg_with_their_parts() {
        let l = lines("t", "x", "y", &[("a".into(), vec![(0.0, 1.0), (1.0, 2.0)])]);
        assert!(l.starts_with("<svg class=\"plot\"") && l.ends_with("</svg>"));
        assert!(l.contains("class=\"series\" d=\"M"));
        let b = bars(
            "t",
            "y",
            &["g".into()],
            &["a".into(), "b".into()],
            &[vec![(1.0, 0.5, 1.5), (2.0, 1.5, 2.5)]],
        );
        assert_eq!(b.matches("class=\"bar\"").count(), 2);
        let z = intervals("t", "m", &[("A".into(), vec![(0.0, 10.0)], vec![5.0])]);
        assert_eq!(z.matches("class=\"zone\"").count(), 1);
        assert_eq!(esc("<a&b>"), "&lt;a&amp;b&gt;");
        // A plot as data draws as the function it names.
        let p = Plot::lines(
            "t",
            "x",
            "y",
            vec![("a".into(), vec![(0.0, 1.0), (1.0, 2.0)])],
        );
        assert_eq!(p.svg(), l);
        assert_eq!(p.title(), "t");
    }
}
