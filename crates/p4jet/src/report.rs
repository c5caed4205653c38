//! A self-contained HTML report with inline SVG plots (line and scatter plots written
//! here: a few hundred bytes of markup per plot need no plotting crate).

use std::fmt::Write;

/// One line (or set of points) of a plot.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend.
    pub name: String,
    /// (x, y) points, in x order for lines.
    pub points: Vec<(f64, f64)>,
}

/// A plot.
#[derive(Debug, Clone)]
pub struct Plot {
    /// Title above the plot.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Points only (no lines between them).
    pub scatter: bool,
    /// Draw y = x (predicted against measured).
    pub diagonal: bool,
    /// The series.
    pub series: Vec<Series>,
}

const COLOURS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// `s` with the XML special characters escaped.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// Round tick positions covering [lo, hi].
fn ticks(lo: f64, hi: f64) -> Vec<f64> {
    let span = (hi - lo).max(1e-12);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let mut t = (lo / step).ceil() * step;
    let mut out = vec![];
    while t <= hi + step * 1e-9 && out.len() < 20 {
        out.push(t);
        t += step;
    }
    out
}

fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s.is_empty() || s == "-" {
        "0".into()
    } else {
        s.to_string()
    }
}

impl Plot {
    /// The plot as an `<svg>` element.
    pub fn svg(&self) -> String {
        let (w, h) = (640.0, 360.0);
        let (l, r, t, b) = (70.0, 170.0, 30.0, 50.0);
        let pts: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|(x, y)| x.is_finite() && y.is_finite() && (!self.log_x || *x > 0.0))
            .collect();
        let fx = |x: f64| if self.log_x { x.log10() } else { x };
        let (mut x0, mut x1) = pts.iter().fold((f64::MAX, f64::MIN), |(a, b), p| {
            (a.min(fx(p.0)), b.max(fx(p.0)))
        });
        let (mut y0, mut y1) = pts
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.1), b.max(p.1)));
        if pts.is_empty() {
            (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
        }
        y0 = y0.min(0.0);
        if self.diagonal {
            let m = x1.max(y1);
            (x0, y0, x1, y1) = (0.0, 0.0, m, m);
        }
        if x1 <= x0 {
            x1 = x0 + 1.0;
        }
        if y1 <= y0 {
            y1 = y0 + 1.0;
        }
        y1 += (y1 - y0) * 0.05;
        let (pw, ph) = (w - l - r, h - t - b);
        let sx = |x: f64| l + (fx(x) - x0) / (x1 - x0) * pw;
        let sy = |y: f64| t + ph - (y - y0) / (y1 - y0) * ph;
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">"#
        );
        let _ = write!(
            s,
            r#"<text x="{}" y="18" font-size="13" font-weight="bold">{}</text>"#,
            l,
            esc(&self.title)
        );
        // axes and grid
        let _ = write!(
            s,
            r##"<rect x="{l}" y="{t}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
        );
        let xt: Vec<f64> = if self.log_x {
            (x0.floor() as i32..=x1.ceil() as i32)
                .map(|e| e as f64)
                .filter(|e| *e >= x0 - 1e-9 && *e <= x1 + 1e-9)
                .collect()
        } else {
            ticks(x0, x1)
        };
        for v in xt {
            let (px, label) = if self.log_x {
                (l + (v - x0) / (x1 - x0) * pw, fmt_num(10f64.powf(v)))
            } else {
                (sx(v), fmt_num(v))
            };
            let _ = write!(
                s,
                r##"<line x1="{px:.1}" y1="{t}" x2="{px:.1}" y2="{:.1}" stroke="#ddd"/><text x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"##,
                t + ph,
                t + ph + 15.0,
                esc(&label)
            );
        }
        for v in ticks(y0, y1) {
            let py = sy(v);
            let _ = write!(
                s,
                r##"<line x1="{l}" y1="{py:.1}" x2="{:.1}" y2="{py:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"##,
                l + pw,
                l - 5.0,
                py + 4.0,
                esc(&fmt_num(v))
            );
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            l + pw / 2.0,
            h - 10.0,
            esc(&self.x_label)
        );
        let _ = write!(
            s,
            r#"<text x="14" y="{:.1}" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text>"#,
            t + ph / 2.0,
            t + ph / 2.0,
            esc(&self.y_label)
        );
        if self.diagonal {
            let _ = write!(
                s,
                r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#888" stroke-dasharray="4 3"/>"##,
                sx(x0),
                sy(y0),
                sx(x1),
                sy(x1.min(y1))
            );
        }
        for (i, se) in self.series.iter().enumerate() {
            let c = COLOURS[i % COLOURS.len()];
            let ps: Vec<(f64, f64)> = se
                .points
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!self.log_x || *x > 0.0))
                .collect();
            if !self.scatter && ps.len() > 1 {
                let d: Vec<String> = ps
                    .iter()
                    .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
                    .collect();
                let _ = write!(
                    s,
                    r#"<polyline fill="none" stroke="{c}" stroke-width="1.5" points="{}"/>"#,
                    d.join(" ")
                );
            }
            for (x, y) in &ps {
                let _ = write!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{c}"><title>{}: {}, {}</title></circle>"#,
                    sx(*x),
                    sy(*y),
                    esc(&se.name),
                    trim(*x),
                    trim(*y)
                );
            }
            let ly = t + 12.0 + 16.0 * i as f64;
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="4" fill="{c}"/><text x="{:.1}" y="{:.1}">{}</text>"#,
                l + pw + 14.0,
                ly - 4.0,
                l + pw + 22.0,
                ly,
                esc(&se.name)
            );
        }
        s.push_str("</svg>");
        s
    }
}

/// One part of a report: a heading, a paragraph, plots and a table.
#[derive(Debug, Clone, Default)]
pub struct Section {
    /// Heading.
    pub heading: String,
    /// Text (plain; escaped).
    pub text: String,
    /// Plots.
    pub plots: Vec<Plot>,
    /// Table: header row, then rows.
    pub table: Vec<Vec<String>>,
}

/// The report as one HTML page (no external resources).
pub fn html(title: &str, intro: &str, sections: &[Section]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title>\
<style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto;color:#222}}\
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}\
th{{background:#f4f4f4}}td:first-child,th:first-child{{text-align:left}}svg{{display:block;margin:1em 0}}\
p{{line-height:1.4}}</style></head><body>\n<h1>{}</h1>\n<p>{}</p>\n",
        esc(title),
        esc(title),
        esc(intro)
    );
    for sec in sections {
        let _ = writeln!(s, "<h2>{}</h2>", esc(&sec.heading));
        if !sec.text.is_empty() {
            let _ = writeln!(s, "<p>{}</p>", esc(&sec.text));
        }
        if let Some((head, rows)) = sec.table.split_first() {
            s.push_str("<table><tr>");
            for h in head {
                let _ = write!(s, "<th>{}</th>", esc(h));
            }
            s.push_str("</tr>\n");
            for r in rows {
                s.push_str("<tr>");
                for c in r {
                    let _ = write!(s, "<td>{}</td>", esc(c));
                }
                s.push_str("</tr>\n");
            }
            s.push_str("</table>\n");
        }
        for p in &sec.plots {
            s.push_str(&p.svg());
            s.push('\n');
        }
    }
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_round_and_cover_the_range() {
        let t = ticks(0.0, 9.3);
        assert_eq!(t.first().copied(), Some(0.0));
        assert!(t.iter().all(|v| (v / 2.0).fract() == 0.0), "{t:?}");
        assert!(*t.last().unwrap() >= 8.0);
    }

    #[test]
    fn text_is_escaped() {
        let p = Plot {
            title: "a<b & \"c\"".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            log_x: true,
            scatter: false,
            diagonal: false,
            series: vec![Series {
                name: "s<1>".into(),
                points: vec![(10.0, 1.0), (1000.0, 2.0), (0.0, 5.0)],
            }],
        };
        let svg = p.svg();
        assert!(svg.contains("a&lt;b &amp; &quot;c&quot;"));
        assert!(svg.contains("s&lt;1&gt;"));
        // the point at x = 0 has no place on a log axis
        assert_eq!(svg.matches("<title>").count(), 2);
    }
}
