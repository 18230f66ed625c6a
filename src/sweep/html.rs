//! The sweep as a page (`harness sweep --html FILE`): per line of the trade-off plot (a
//! detector with its fixed parameters, as [`super::plot`] groups them) the false-alarm/recall
//! plot, each point focusable and named by its setting, and a table of the settings; opening a
//! point (click, Enter or Space) or a table row lists the runs it fired on — where, the
//! verdict, and whether that was a catch or a false alarm — from the `--fires` rows.
//!
//! Built from [`crate::report::html`]'s page (inline, self-contained, the same policy), so the
//! same rules hold: every text escaped, no request, the same bytes for the same sweep. Pure.

use super::{CRITERION, FIRE_COLUMNS, Report, Row};
use crate::report::html::{escape, json_script, page};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io;

/// The sweep page's script.
const SWEEP_JS: &str = include_str!("html.js");

/// Writes to one writer and, when given, a second: the fires CSV goes to its file and, for
/// the page, into memory.
pub struct Tee<'a>(
    pub Option<&'a mut dyn io::Write>,
    pub Option<&'a mut Vec<u8>>,
);

impl io::Write for Tee<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(w) = &mut self.0 {
            w.write_all(buf)?;
        }
        if let Some(m) = &mut self.1 {
            m.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.0 {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

/// Plot geometry (px): the panel, and its margins for the axes.
const W: f64 = 340.0;
const H: f64 = 250.0;
const LEFT: f64 = 46.0;
const RIGHT: f64 = 14.0;
const TOP: f64 = 22.0;
const BOTTOM: f64 = 38.0;

/// (false-alarm %, recall %) of a setting.
fn rates(r: &Row) -> (f64, f64) {
    (
        100.0 * r.false_alarms as f64 / r.successful_runs.max(1) as f64,
        100.0 * r.recall.unwrap_or(0.0),
    )
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "\u{2013}".to_owned(), |x| format!("{x:.digits$}"))
}

fn percent(x: f64) -> String {
    if x == x.round() {
        format!("{x:.0}%")
    } else {
        format!("{x:.1}%")
    }
}

/// The page of a sweep; `fires` is the `--fires` CSV the sweep wrote (its rows list the runs
/// each setting fired on).
pub fn render(report: &Report, fires: &[u8], title: &str) -> String {
    let rows = &report.rows;
    let index: BTreeMap<(&str, &str), usize> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| ((r.detector.as_str(), r.params.as_str()), i))
        .collect();
    let best: Vec<usize> = super::best(rows)
        .into_iter()
        .filter_map(|b| {
            index
                .get(&(b.detector.as_str(), b.params.as_str()))
                .copied()
        })
        .collect();

    // The runs each setting fired on, from the fires rows.
    let mut run_ids: Vec<String> = Vec::new();
    let mut run_index: BTreeMap<String, usize> = BTreeMap::new();
    let mut fired: Vec<Vec<serde_json::Value>> = vec![Vec::new(); rows.len()];
    let mut reader = csv::Reader::from_reader(fires);
    let column = |name: &str| FIRE_COLUMNS.iter().position(|c| *c == name);
    let (run, det, params, at, verdict, outcome) = (
        column("run"),
        column("detector"),
        column("params"),
        column("fired_at"),
        column("verdict"),
        column("outcome"),
    );
    for record in reader.records().flatten() {
        let get = |i: Option<usize>| i.and_then(|i| record.get(i)).unwrap_or_default();
        let Some(&s) = index.get(&(get(det), get(params))) else {
            continue;
        };
        let id = get(run).to_owned();
        let n = *run_index.entry(id.clone()).or_insert_with(|| {
            run_ids.push(id);
            run_ids.len() - 1
        });
        fired[s].push(json!([
            n,
            get(at).parse::<u64>().unwrap_or_default(),
            get(verdict),
            get(outcome)
        ]));
    }

    let settings: Vec<serde_json::Value> = rows
        .iter()
        .map(|r| {
            json!({
                "detector": r.detector,
                "params": r.params,
                "successful": r.successful_runs,
                "false_alarms": r.false_alarms,
                "stuck": r.stuck_runs,
                "caught": r.caught,
                "precision": opt(r.precision, 3),
                "recall": opt(r.recall, 3),
                "delay": opt(r.median_detection_delay, 1),
                "turns_saved": r.turns_saved,
                "tokens_saved": r.tokens_saved,
            })
        })
        .collect();

    let mut body = String::new();
    let _ = write!(
        body,
        "<header><h1>{}</h1><p class=\"counts\">{} runs from {} files: {} successful, {} stuck (labels: {} from the file, {} by the heuristic); {} setting(s). A false alarm is a firing on a successful run; a catch, a firing on a stuck run at or after its loop began.</p></header>\n<main>\n",
        escape(title),
        report.runs,
        report.files,
        report.successful,
        report.stuck,
        report.labelled_from_file,
        report.runs - report.labelled_from_file,
        rows.len()
    );
    if !report.errors.is_empty() || !report.notes.is_empty() || !report.unscored.is_empty() {
        body.push_str("<section id=\"problems\"><h2>Inputs not scored</h2><ul class=\"problems\">");
        for (path, e) in &report.errors {
            let _ = write!(
                body,
                "<li><b>\u{2717} error</b> <code>{}:{}:{}</code>: {}</li>",
                escape(&path.display().to_string()),
                e.line(),
                e.col(),
                escape(&e.message)
            );
        }
        for (path, note) in &report.notes {
            let _ = write!(
                body,
                "<li><b>note</b> <code>{}</code>: skipped: {}</li>",
                escape(&path.display().to_string()),
                escape(note)
            );
        }
        for (setting, n, run, why) in &report.unscored {
            let _ = write!(
                body,
                "<li><b>not scored</b> <code>{}</code>: {n} run(s) left out of its row (the first: <code>{}</code>): {}</li>",
                escape(setting),
                escape(run),
                escape(why)
            );
        }
        body.push_str("</ul></section>\n");
    }
    let _ = write!(
        body,
        "<section id=\"best\"><h2>Best setting per detector</h2><p>{}.</p><table class=\"metrics\"><thead><tr><th scope=\"col\">detector</th><th scope=\"col\">setting</th><th scope=\"col\" class=\"num\">false alarms</th><th scope=\"col\" class=\"num\">caught</th><th scope=\"col\" class=\"num\">recall</th><th scope=\"col\" class=\"num\">precision</th><th scope=\"col\" class=\"num\">median delay</th></tr></thead><tbody>",
        escape(CRITERION)
    );
    for &i in &best {
        let r = &rows[i];
        let _ = write!(
            body,
            "<tr><td>{}</td><td><code>{}</code></td><td class=\"num\">{}/{}</td><td class=\"num\">{}/{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td></tr>",
            escape(&r.detector),
            escape(&r.params),
            r.false_alarms,
            r.successful_runs,
            r.caught,
            r.stuck_runs,
            opt(r.recall, 3),
            opt(r.precision, 3),
            opt(r.median_detection_delay, 1)
        );
    }
    body.push_str("</tbody></table></section>\n<section id=\"plots\"><h2>False alarms against recall</h2><p>One panel per detector and fixed parameters; each point a setting, labelled with the value of the parameter swept (\u{2605} the best). Open a point, or a setting in the table, to list the runs it fired on.</p>\n");
    for (p, line) in super::plot::series(rows).iter().enumerate() {
        let settings: Vec<usize> = line
            .points
            .iter()
            .filter_map(|(r, _)| {
                index
                    .get(&(r.detector.as_str(), r.params.as_str()))
                    .copied()
            })
            .collect();
        let _ = write!(
            body,
            "<section class=\"sw\" id=\"panel-{p}\"><h3>{}</h3><div class=\"sw-panel\"><div class=\"sw-plot\">{}</div>",
            escape(&line.label),
            plot(rows, line, &settings, &best, p)
        );
        body.push_str("<table class=\"metrics\"><thead><tr><th scope=\"col\">setting</th><th scope=\"col\" class=\"num\">false alarms</th><th scope=\"col\" class=\"num\">caught</th><th scope=\"col\" class=\"num\">recall</th><th scope=\"col\" class=\"num\">precision</th><th scope=\"col\" class=\"num\">median delay</th><th scope=\"col\" class=\"num\">turns saved</th><th scope=\"col\">fired on</th></tr></thead><tbody>");
        for &i in &settings {
            let r = &rows[i];
            let _ = write!(
                body,
                "<tr><td><code>{}</code>{}</td><td class=\"num\">{}/{}</td><td class=\"num\">{}/{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td><button type=\"button\" data-s=\"{i}\" data-panel=\"{p}\">{} run{}</button></td></tr>",
                escape(&r.params),
                if best.contains(&i) {
                    " \u{2605} best"
                } else {
                    ""
                },
                r.false_alarms,
                r.successful_runs,
                r.caught,
                r.stuck_runs,
                opt(r.recall, 3),
                opt(r.precision, 3),
                opt(r.median_detection_delay, 1),
                r.turns_saved,
                fired[i].len(),
                if fired[i].len() == 1 { "" } else { "s" }
            );
        }
        let _ = writeln!(
            body,
            "</tbody></table></div><div class=\"sw-fires\" id=\"fires-{p}\" role=\"region\" aria-live=\"polite\" aria-label=\"Runs the chosen setting fired on\" hidden></div></section>"
        );
    }
    body.push_str("</section>\n</main>\n");
    body.push_str(&json_script(
        "harness-sweep",
        &json!({ "settings": settings, "runs": run_ids, "fires": fired }),
    ));
    page(title, &body, SWEEP_JS, "")
}

/// One panel's plot: axes, a dashed line through the settings in parameter order, and a
/// focusable point per position (settings at the same position share it).
fn plot(
    rows: &[Row],
    line: &super::plot::Series<'_>,
    settings: &[usize],
    best: &[usize],
    panel: usize,
) -> String {
    let points: Vec<(f64, f64)> = settings.iter().map(|&i| rates(&rows[i])).collect();
    let max_x = points.iter().map(|p| p.0).fold(0.0_f64, f64::max);
    let max_x = [2.0, 4.0, 10.0, 20.0, 40.0, 100.0]
        .into_iter()
        .find(|m| *m >= max_x * 1.1)
        .unwrap_or(100.0);
    let sx = |x: f64| LEFT + x / max_x * (W - LEFT - RIGHT);
    let sy = |y: f64| TOP + (100.0 - y) / 100.0 * (H - TOP - BOTTOM);
    let mut h = String::new();
    let _ = write!(
        h,
        "<svg viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" role=\"group\" aria-label=\"{}: false alarms (x) against recall (y)\"><g class=\"grid\" aria-hidden=\"true\">",
        escape(&line.label)
    );
    for k in 0..=4 {
        let (x, y) = (max_x * f64::from(k) / 4.0, 25.0 * f64::from(k));
        let _ = write!(
            h,
            "<line x1=\"{0:.1}\" y1=\"{TOP}\" x2=\"{0:.1}\" y2=\"{1:.1}\"/><text x=\"{0:.1}\" y=\"{2:.1}\" text-anchor=\"middle\">{3}</text>\
             <line x1=\"{LEFT}\" y1=\"{4:.1}\" x2=\"{5:.1}\" y2=\"{4:.1}\"/><text x=\"{6:.1}\" y=\"{7:.1}\" text-anchor=\"end\">{8}</text>",
            sx(x),
            H - BOTTOM,
            H - BOTTOM + 14.0,
            percent(x),
            sy(y),
            W - RIGHT,
            LEFT - 4.0,
            sy(y) + 4.0,
            percent(y)
        );
    }
    let _ = write!(
        h,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">false alarms on successful runs</text><text transform=\"translate(11 {:.1}) rotate(-90)\" text-anchor=\"middle\">recall on stuck runs</text></g>",
        (LEFT + W - RIGHT) / 2.0,
        H - 6.0,
        (TOP + H - BOTTOM) / 2.0
    );
    let path: Vec<String> = points
        .iter()
        .map(|(x, y)| format!("{:.1},{:.1}", sx(*x), sy(*y)))
        .collect();
    let _ = write!(
        h,
        "<polyline points=\"{}\" aria-hidden=\"true\"/>",
        path.join(" ")
    );
    // Settings at one position share one point.
    let mut at: Vec<((f64, f64), Vec<usize>)> = Vec::new();
    for (k, p) in points.iter().enumerate() {
        match at.iter_mut().find(|(q, _)| q == p) {
            Some((_, ks)) => ks.push(k),
            None => at.push((*p, vec![k])),
        }
    }
    for ((x, y), ks) in at {
        let ids: Vec<String> = ks.iter().map(|&k| settings[k].to_string()).collect();
        let values: Vec<&str> = ks.iter().map(|&k| line.points[k].1.as_str()).collect();
        let names: Vec<&str> = ks
            .iter()
            .map(|&k| rows[settings[k]].params.as_str())
            .collect();
        let is_best = ks.iter().any(|&k| best.contains(&settings[k]));
        let r = &rows[settings[ks[0]]];
        let label = format!(
            "{} {}: false alarms {} of {}, caught {} of {} stuck",
            r.detector,
            names.join(" / "),
            r.false_alarms,
            r.successful_runs,
            r.caught,
            r.stuck_runs
        );
        let _ = write!(
            h,
            "<g class=\"pt{}\" tabindex=\"0\" role=\"button\" aria-label=\"{}\" data-s=\"{}\" data-panel=\"{panel}\"><title>{}</title><circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"6\"/><text x=\"{:.1}\" y=\"{:.1}\">{}{}</text></g>",
            if is_best { " best" } else { "" },
            escape(&label),
            ids.join(","),
            escape(&label),
            sx(x),
            sy(y),
            sx(x) + 8.0,
            sy(y) - 8.0,
            if is_best { "\u{2605} " } else { "" },
            escape(&values.join(", "))
        );
    }
    h.push_str("</svg>");
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(detector: &str, params: &str, fa: u64, caught: u64) -> Row {
        Row {
            detector: detector.into(),
            params: params.into(),
            runs: 10,
            successful_runs: 5,
            false_alarms: fa,
            stuck_runs: 4,
            caught,
            median_detection_delay: Some(1.0),
            turns_saved: 3,
            tokens_saved: None,
            precision: Some(0.5),
            recall: Some(caught as f64 / 4.0),
        }
    }

    #[test]
    fn points_carry_their_settings_and_the_runs_they_fired_on() {
        let report = Report {
            rows: vec![
                row("d<x>", "k=2", 2, 4),
                row("d<x>", "k=3", 0, 3),
                row("d<x>", "k=4", 0, 3),
            ],
            runs: 9,
            successful: 5,
            stuck: 4,
            ..Report::default()
        };
        let fires = "run,detector,params,fired_at,verdict,success,stuck,loop_start,outcome\n\
                     </script>run-a,d<x>,k=2,3,warn,true,false,,false_alarm\n\
                     run-b,d<x>,k=2,5,stop,false,true,2,caught\n\
                     run-b,d<x>,k=3,6,stop,false,true,2,caught\n";
        let page = render(&report, fires.as_bytes(), "sweep <t>");
        // k=3 and k=4 sit at one position: one point for both; k=3 is the best.
        assert_eq!(page.matches("<g class=\"pt").count(), 2, "{page}");
        assert!(page.contains("data-s=\"1,2\""), "{page}");
        assert!(page.contains("class=\"pt best\""), "{page}");
        assert!(page.contains("d&lt;x&gt; k=2: false alarms 2 of 5, caught 4 of 4 stuck"));
        assert!(page.contains(">2 runs</button>") && page.contains(">1 run</button>"));
        assert!(page.contains(">0 runs</button>"));
        let data = page.split("id=\"harness-sweep\">").nth(1).unwrap();
        let data = &data[..data.find("</script>").unwrap()];
        assert!(data.contains("\\u003c/script\\u003erun-a"), "{data}");
        let v: serde_json::Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["runs"], json!(["</script>run-a", "run-b"]));
        assert_eq!(
            v["fires"],
            json!([
                [[0, 3, "warn", "false_alarm"], [1, 5, "stop", "caught"]],
                [[1, 6, "stop", "caught"]],
                []
            ])
        );
        assert!(!page.contains("<t>"), "the title is escaped");
    }
}
