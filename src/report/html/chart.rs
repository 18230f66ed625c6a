//! Horizontal bar charts as inline SVG: groups of labelled bars, each bar's figure written at
//! its end and its series told by a fill pattern (solid, hatched, dotted) as well as by colour.
//! Pure.

use super::{Html, escape};
use std::fmt::Write as _;

/// One bar.
pub(super) struct Bar {
    /// Label left of the bar.
    pub label: String,
    /// Length (any unit; the chart scales to its longest bar).
    pub value: f64,
    /// Figure written after the bar.
    pub text: String,
    /// Series (0 solid, 1 hatched, 2 dotted, then again).
    pub series: usize,
}

/// A group of bars under a heading.
pub(super) struct Group {
    /// Heading.
    pub label: String,
    /// Bars.
    pub bars: Vec<Bar>,
}

/// The pattern definitions every chart refers to, once per page.
pub(super) const DEFS: &str = "<svg class=\"defs\" width=\"0\" height=\"0\" aria-hidden=\"true\" focusable=\"false\"><defs>\
<pattern id=\"p-hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" class=\"s1-bg\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" class=\"s1-fg\" stroke-width=\"3\"/></pattern>\
<pattern id=\"p-dots\" width=\"5\" height=\"5\" patternUnits=\"userSpaceOnUse\"><rect width=\"5\" height=\"5\" class=\"s2-bg\"/><circle cx=\"2.5\" cy=\"2.5\" r=\"1.4\" class=\"s2-fg\"/></pattern>\
</defs></svg>";

const LABEL_W: f64 = 150.0;
const BAR_W: f64 = 300.0;
const WIDTH: f64 = 600.0;
const ROW_H: f64 = 16.0;

fn fill(series: usize) -> &'static str {
    match series % 3 {
        0 => "class=\"bar s0\"",
        1 => "class=\"bar s1\" fill=\"url(#p-hatch)\"",
        _ => "class=\"bar s2\" fill=\"url(#p-dots)\"",
    }
}

/// A chart titled `title` (also its accessible name), with a legend of the series names.
pub(super) fn bars(title: &str, series: &[&str], groups: &[Group]) -> Html {
    let max = groups
        .iter()
        .flat_map(|g| &g.bars)
        .map(|b| b.value)
        .fold(0.0_f64, f64::max);
    let rows: usize = groups.iter().map(|g| 1 + g.bars.len()).sum();
    let legend_h = if series.is_empty() { 0.0 } else { ROW_H + 4.0 };
    let height = legend_h + rows as f64 * ROW_H + 4.0;
    let mut h = String::new();
    let _ = write!(
        h,
        "<figure class=\"chart\"><figcaption>{}</figcaption><svg viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" height=\"{height}\" role=\"img\" aria-label=\"{}\">",
        escape(title),
        escape(title)
    );
    let mut x = LABEL_W + 10.0;
    for (i, name) in series.iter().enumerate() {
        let _ = write!(
            h,
            "<rect x=\"{x:.1}\" y=\"2\" width=\"14\" height=\"10\" {}/><text x=\"{:.1}\" y=\"11\">{}</text>",
            fill(i),
            x + 18.0,
            escape(name)
        );
        x += 24.0 + 7.0 * name.chars().count() as f64;
    }
    let mut y = legend_h;
    for g in groups {
        let _ = write!(
            h,
            "<text class=\"group\" x=\"4\" y=\"{:.1}\">{}</text>",
            y + 12.0,
            escape(&g.label)
        );
        y += ROW_H;
        for b in &g.bars {
            let w = if max > 0.0 {
                b.value / max * BAR_W
            } else {
                0.0
            };
            let _ = write!(
                h,
                "<text class=\"label\" x=\"{LABEL_W:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text><rect x=\"{:.1}\" y=\"{:.1}\" width=\"{w:.1}\" height=\"{:.1}\" {}/><text class=\"value\" x=\"{:.1}\" y=\"{:.1}\">{}</text>",
                y + 12.0,
                escape(&b.label),
                LABEL_W + 10.0,
                y + 2.0,
                ROW_H - 4.0,
                fill(b.series),
                LABEL_W + 14.0 + w,
                y + 12.0,
                escape(&b.text)
            );
            y += ROW_H;
        }
    }
    h.push_str("</svg></figure>");
    Html(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_scale_to_the_longest_and_carry_their_figures() {
        let g = Group {
            label: "reflex <x>".into(),
            bars: vec![
                Bar {
                    label: "none".into(),
                    value: 25.0,
                    text: "25".into(),
                    series: 1,
                },
                Bar {
                    label: "moltis".into(),
                    value: 5.0,
                    text: "5 (-80%)".into(),
                    series: 0,
                },
            ],
        };
        let h = bars("Iterations", &["none", "defence"], &[g]).0;
        assert!(h.contains("width=\"300.0\""), "{h}");
        assert!(h.contains("width=\"60.0\""), "{h}");
        assert!(h.contains(">5 (-80%)</text>"), "{h}");
        assert!(h.contains("reflex &lt;x&gt;"), "{h}");
        assert!(h.contains("url(#p-hatch)"), "{h}");
    }
}
