//! The sweep's trade-off plot: per detector, one line through its settings in parameter order,
//! false-alarm rate on successful runs (x) against recall on stuck runs (y). SVG via `plotters`;
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
struct Series<'a> {
    label: String,
    points: Vec<(&'a Row, String)>,
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
fn series(rows: &[Row]) -> Vec<Series<'_>> {
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

/// Render the plot of `rows` (grouped by detector, in order) as SVG.
pub fn svg(rows: &[Row], title: &str) -> Result<String, String> {
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (900, 620)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let max_x = rows
            .iter()
            .filter_map(|r| {
                r.false_alarms
                    .checked_mul(100)
                    .map(|x| x as f64 / r.successful_runs.max(1) as f64)
            })
            .fold(1.0_f64, f64::max);
        let max_x = (max_x * 1.1).clamp(5.0, 100.0);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..max_x, 0.0..100.0)
            .map_err(|e| e.to_string())?;
        chart
            .configure_mesh()
            .light_line_style(WHITE)
            .x_desc("false alarms: % of successful runs fired on")
            .y_desc("recall: % of stuck runs caught")
            .draw()
            .map_err(|e| e.to_string())?;
        for (colour, line) in series(rows).into_iter().enumerate() {
            let c = PALETTE[colour % PALETTE.len()];
            let points: Vec<(f64, f64)> = line
                .points
                .iter()
                .map(|(r, _)| {
                    (
                        100.0 * r.false_alarms as f64 / r.successful_runs.max(1) as f64,
                        100.0 * r.recall.unwrap_or(0.0),
                    )
                })
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(line.label.clone())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 4, c.filled())))
                .map_err(|e| e.to_string())?;
            // Each point names its setting's swept value, e.g. `3` for `k=3`.
            let style = TextStyle::from(("sans-serif", 11)).color(&c);
            chart
                .draw_series(
                    line.points
                        .iter()
                        .zip(&points)
                        .map(|((_, v), p)| Text::new(v.clone(), *p, style.clone())),
                )
                .map_err(|e| e.to_string())?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(|e| e.to_string())?;
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
        // Each detector: one line and one legend mark in its colour; one dot per setting.
        assert_eq!(
            s.matches(r##"polyline fill="none" opacity="1" stroke="#1F77B4""##)
                .count(),
            2
        );
        assert_eq!(
            s.matches(r##"polyline fill="none" opacity="1" stroke="#FF7F0E""##)
                .count(),
            2
        );
        assert_eq!(s.matches("<circle").count(), 3);
    }
}
