//! The sweep's trade-off plot: per detector, one line through its settings in parameter order,
//! false-alarm rate on successful runs (x) against recall on stuck runs (y). SVG via `plotters`;
//! pure: it returns the document as a string.

use super::Row;
use plotters::prelude::*;

/// Colours of successive detectors.
const PALETTE: [RGBColor; 10] = [
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
];

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
            .x_desc("false alarms: % of successful runs fired on")
            .y_desc("recall: % of stuck runs caught")
            .draw()
            .map_err(|e| e.to_string())?;
        let mut start = 0;
        let mut colour = 0;
        while start < rows.len() {
            let id = &rows[start].detector;
            let end = start
                + rows[start..]
                    .iter()
                    .take_while(|r| &r.detector == id)
                    .count();
            let c = PALETTE[colour % PALETTE.len()];
            let points: Vec<(f64, f64)> = rows[start..end]
                .iter()
                .map(|r| {
                    (
                        100.0 * r.false_alarms as f64 / r.successful_runs.max(1) as f64,
                        100.0 * r.recall.unwrap_or(0.0),
                    )
                })
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), c.stroke_width(2)))
                .map_err(|e| e.to_string())?
                .label(id.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2))
                });
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 4, c.filled())))
                .map_err(|e| e.to_string())?;
            start = end;
            colour += 1;
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
