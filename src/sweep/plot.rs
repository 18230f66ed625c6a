//! The sweep's trade-off plot: per detector, one panel with one line through its settings in
//! parameter order, false-alarm rate on successful runs (x, each panel its own scale) against
//! recall on stuck runs (y, 0–100 % in every panel). SVG via `plotters`;
//! pure: it returns the document as a string.

use super::Row;
use plotters::prelude::*;

/// Colours of successive detectors.
const PALETTE: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 0),
    RGBColor(174, 199, 232),
];

/// One line of the plot: a detector with its fixed parameters, and its points in row order,
/// each named by the value of the detector's swept parameter.
pub(super) struct Series<'a> {
    pub(super) label: String,
    pub(super) points: Vec<(&'a Row, String)>,
}

fn pairs(params: &str) -> Vec<(&str, &str)> {
    params
        .split(' ')
        .filter_map(|kv| kv.split_once('='))
        .collect()
}

/// Group rows into lines. Per detector, the swept parameter is the one with the most distinct
/// values (a parameter a row does not name is at its default); the others name the line, e.g.
/// `openhands-stuck version=0` through `ao=2…6`.
pub(super) fn series(rows: &[Row]) -> Vec<Series<'_>> {
    let mut out: Vec<Series<'_>> = Vec::new();
    let mut start = 0;
    while start < rows.len() {
        let id = &rows[start].detector;
        let end = start
            + rows[start..]
                .iter()
                .take_while(|r| &r.detector == id)
                .count();
        let group = &rows[start..end];
        let mut names: Vec<&str> = Vec::new();
        for r in group {
            for (n, _) in pairs(&r.params) {
                if !names.contains(&n) {
                    names.push(n);
                }
            }
        }
        let distinct = |name: &str| {
            let mut vals: Vec<&str> = group
                .iter()
                .map(|r| {
                    pairs(&r.params)
                        .into_iter()
                        .find(|(n, _)| *n == name)
                        .map_or("", |(_, v)| v)
                })
                .collect();
            vals.sort_unstable();
            vals.dedup();
            vals.len()
        };
        let swept = names
            .iter()
            .copied()
            .fold(None::<(&str, usize)>, |best, n| match best {
                Some((_, c)) if c >= distinct(n) => best,
                _ => Some((n, distinct(n))),
            })
            .map_or("", |(n, _)| n);
        let first = out.len();
        for r in group {
            let ps = pairs(&r.params);
            let fixed: Vec<String> = ps
                .iter()
                .filter(|(n, _)| *n != swept)
                .map(|(n, v)| format!("{n}={v}"))
                .collect();
            let label = if fixed.is_empty() {
                id.clone()
            } else {
                format!("{id} {}", fixed.join(" "))
            };
            let value = ps
                .iter()
                .find(|(n, _)| *n == swept)
                .map_or("", |(_, v)| v)
                .to_owned();
            match out[first..].iter_mut().find(|s| s.label == label) {
                Some(s) => s.points.push((r, value)),
                None => out.push(Series {
                    label,
                    points: vec![(r, value)],
                }),
            }
        }
        start = end;
    }
    out
}

/// Panels per row of the plot.
const COLUMNS: usize = 3;

fn rate(r: &Row) -> (f64, f64) {
    (
        100.0 * r.false_alarms as f64 / r.successful_runs.max(1) as f64,
        100.0 * r.recall.unwrap_or(0.0),
    )
}

/// Render the plot of `rows` (grouped by detector, in order) as SVG: small multiples, one
/// panel per line, each with its own false-alarm scale so settings close to zero stay apart.
pub fn svg(rows: &[Row], title: &str) -> Result<String, String> {
    let lines = series(rows);
    let panel_rows = lines.len().div_ceil(COLUMNS).max(1);
    let size = (
        1080,
        40 + 260 * u32::try_from(panel_rows).unwrap_or(u32::MAX / 520),
    );
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, size).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let root = root
            .titled(title, ("sans-serif", 20))
            .map_err(|e| e.to_string())?;
        let panels = root.split_evenly((panel_rows, COLUMNS));
        for (i, (line, area)) in lines.iter().zip(&panels).enumerate() {
            let c = PALETTE[i % PALETTE.len()];
            let points: Vec<(f64, f64)> = line.points.iter().map(|(r, _)| rate(r)).collect();
            let max_x = points.iter().map(|p| p.0).fold(0.0_f64, f64::max);
            // At least 2 % wide, with room for the labels right of the last point.
            let max_x = (max_x * 1.25).clamp(2.0, 100.0);
            let mut chart = ChartBuilder::on(area)
                .caption(&line.label, ("sans-serif", 14))
                .margin(8)
                .x_label_area_size(34)
                .y_label_area_size(40)
                .build_cartesian_2d(0.0..max_x, 0.0..100.0)
                .map_err(|e| e.to_string())?;
            chart
                .configure_mesh()
                .light_line_style(WHITE)
                .x_labels(5)
                .y_labels(5)
                .x_desc("false alarms %")
                .y_desc("recall %")
                .label_style(("sans-serif", 10))
                .draw()
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
                .map_err(|e| e.to_string())?;
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 4, c.filled())))
                .map_err(|e| e.to_string())?;
            // Each point names its setting's swept value, e.g. `3` for `k=3`.
            let style = TextStyle::from(("sans-serif", 11)).color(&BLACK);
            chart
                .draw_series(line.points.iter().zip(&points).map(|((_, v), p)| {
                    EmptyElement::at(*p) + Text::new(v.clone(), (6, -12), style.clone())
                }))
                .map_err(|e| e.to_string())?;
        }
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_detector_with_its_label() {
        let row = |d: &str, fa: u64, recall: f64| Row {
            detector: d.into(),
            params: "k=1".into(),
            runs: 10,
            successful_runs: 5,
            false_alarms: fa,
            stuck_runs: 2,
            caught: 1,
            median_detection_delay: None,
            turns_saved: 0,
            tokens_saved: None,
            precision: None,
            recall: Some(recall),
        };
        let s = svg(
            &[
                row("alpha", 0, 0.5),
                row("alpha", 1, 1.0),
                row("beta", 2, 0.5),
            ],
            "t",
        )
        .unwrap();
        assert!(s.starts_with("<svg"), "{}", &s[..s.len().min(80)]);
        assert!(s.contains("alpha") && s.contains("beta"));
        // Each detector: one panel named by its label, one line in its colour; one dot per
        // setting.
        assert_eq!(s.matches("\nalpha\n</text>").count(), 1, "{s}");
        assert_eq!(s.matches("\nbeta\n</text>").count(), 1);
        assert_eq!(
            s.matches(r##"polyline fill="none" opacity="1" stroke="#1F77B4""##)
                .count(),
            1
        );
        assert_eq!(
            s.matches(r##"polyline fill="none" opacity="1" stroke="#FF7F0E""##)
                .count(),
            1
        );
        assert_eq!(s.matches("<circle").count(), 3);
    }
}
