//! The HTML report (`--html FILE` on `run`, `exec`, `merge`; `harness report`): one
//! self-contained page made from a run's collected results — the verdict and counts, every
//! case (failing first, filterable by family, profile, tag and status, paged), and per case its
//! timeline, its scenario's profiles side by side, its golden diff side by side; the metrics
//! and the defence savings as bar charts; the baseline's regressions and improvements.
//!
//! It also holds what any harness page is made of ([`page`], [`escape`], [`json_script`]),
//! which the sweep's page (`sweep::html`) uses too.
//!
//! The page works offline from a downloaded artifact: inline CSS and one inline script, no
//! external resource, and a Content-Security-Policy that allows nothing else (no fetch, no
//! image, no font, no other script: only the page's own script, by its SHA-256), so even
//! text that escaped its escaping could neither run nor call out. Every text from the results
//! (case ids, tool names, model text, paths) is escaped. What is large stays out of the DOM
//! until it is asked for: the case list is a JSON index the script pages through, each case's
//! detail an inert `<script type="text/x-harness">` block of ready HTML that becomes DOM when
//! the case is opened. The bytes depend on the results alone: no clock, no randomness, and
//! the results' own order. Pure: callers write the file.

mod chart;
mod diff;
mod timeline;

use super::{Collected, Sums, Tally, change, duration, junit::failure_summary};
use crate::results::CaseResult;
use crate::snapshot::Comparison;
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// HTML that is already escaped, ready to place.
pub struct Html(pub String);

/// The stylesheet of every harness page.
const CSS: &str = include_str!("page.css");
/// The run report's script.
const RUN_JS: &str = include_str!("run.js");

/// Text as HTML text or attribute value: `& < > " '` escaped, and the characters that would
/// make a reviewer read something else than what is there (controls, bidirectional controls,
/// invisible ones: [`crate::escape::is_unsafe`]) spelled out visibly, as on the terminal; line
/// breaks stay.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' => out.push('\n'),
            c if crate::escape::is_unsafe(c) => {
                out.push_str(&crate::escape::escape_controls(c.encode_utf8(&mut [0; 4])));
            }
            c => out.push(c),
        }
    }
    out
}

/// A value as the text of a `<script type="application/json">` element: JSON whose `<`, `>`
/// and `&` are written as `\u` escapes, so no `</script>` or `<!--` in the data can end or
/// bend the element. `JSON.parse` reads it back unchanged.
pub fn json_script(id: &str, value: &serde_json::Value) -> String {
    let text = serde_json::to_string(value).unwrap_or_default();
    format!(
        "<script type=\"application/json\" id=\"{}\">{}</script>",
        escape(id),
        text.replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026")
    )
}

/// An inert block of ready HTML that the page's script turns into DOM on demand: raw-deflated
/// and base64-encoded (the browser's `DecompressionStream` inflates it), which keeps a report of
/// thousands of traces a fraction of their text's size, and which no byte of the data can
/// break out of.
fn html_block(id: &str, html: &str) -> String {
    let packed = miniz_oxide::deflate::compress_to_vec(html.as_bytes(), DEFLATE_LEVEL);
    format!(
        "<script type=\"text/x-harness-deflate\" id=\"{id}\">{}</script>\n",
        base64(&packed)
    )
}

/// Deflate effort: 6 is zlib's default trade of size for time.
const DEFLATE_LEVEL: u8 = 6;

/// Standard base64 with padding, as `DecompressionStream` and CSP hashes read it.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A whole page: `body` (which may hold JSON data blocks the script reads), then the script,
/// then `tail` (inert blocks read after the first paint). The policy lets only this script
/// run and nothing load.
pub fn page(title: &str, body: &str, script: &str, tail: &str) -> String {
    let hash = base64(ring::digest::digest(&ring::digest::SHA256, script.as_bytes()).as_ref());
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'sha256-{hash}'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'\">\n\
         <meta name=\"referrer\" content=\"no-referrer\">\n\
         <meta name=\"generator\" content=\"harness\">\n\
         <title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n{body}\n<script>{script}</script>\n{tail}</body>\n</html>\n",
        escape(title)
    )
}

/// One metric of one case that moved against the baseline.
#[derive(Debug, Clone)]
pub struct Moved {
    /// Case id.
    pub case: String,
    /// Metric name.
    pub metric: String,
    /// Baseline figure.
    pub old: String,
    /// This run's figure.
    pub new: String,
    /// The tolerance that applied.
    pub allowed: String,
}

/// The baseline check (`--baseline`) as the report shows it.
#[derive(Debug, Clone, Default)]
pub struct BaselineCheck {
    /// The baseline file, as named.
    pub file: String,
    /// Cases compared.
    pub compared: usize,
    /// Cases the baseline does not know.
    pub new_cases: usize,
    /// Metrics above baseline plus tolerance.
    pub regressions: Vec<Moved>,
    /// Metrics below the baseline.
    pub improvements: Vec<Moved>,
}

/// A case's status as the page names it: `failed`, `flaky`, `regressed` (it passed, but its
/// metrics regressed against the baseline: the run failed for it), `passed` or `ungated`.
fn status(c: &CaseResult, regressed: &BTreeSet<&str>) -> &'static str {
    if !c.passed() {
        if c.flaky() { "flaky" } else { "failed" }
    } else if regressed.contains(c.id.as_str()) {
        "regressed"
    } else if c.golden == Comparison::Ungated {
        "ungated"
    } else {
        "passed"
    }
}

/// The mark shown with a status (readable without colour).
fn status_mark(status: &str) -> &'static str {
    match status {
        "failed" => "\u{2717} FAILED",
        "regressed" => "\u{25b2} metrics regressed",
        "flaky" => "~ flaky",
        "ungated" => "\u{25cb} not gated",
        _ => "\u{2713} passed",
    }
}

fn golden_name(c: &Comparison) -> &'static str {
    match c {
        Comparison::Match => "match",
        Comparison::Missing(_) => "missing",
        Comparison::Differs(_) => "differs",
        Comparison::Ungated => "ungated",
    }
}

/// The counts sentence, as the terminal's last line words it.
fn counts(t: &Tally) -> String {
    format!(
        "{} cases from {} files: {} passed, {} failed, {} flaky ({} golden mismatches, {} missing goldens, {} expectation failures), {} invalid files, {} orphaned goldens",
        t.cases,
        t.files,
        t.passed,
        t.cases - t.passed - t.flaky,
        t.flaky,
        t.mismatched,
        t.missing,
        t.expectation_failures,
        t.invalid_files,
        t.orphans.len()
    )
}

/// The HTML report of a run's results (and its baseline check, when there was one).
pub fn render(c: &Collected, baseline: Option<&BaselineCheck>) -> String {
    let t = c.tally();
    let regressed = baseline.is_some_and(|b| !b.regressions.is_empty());
    let ok = t.exit_code().is_ok() && !regressed;
    let mut body = String::new();
    let _ = write!(
        body,
        "{}<header><h1>harness run: <span class=\"verdict {}\">{}</span></h1><p class=\"counts\">{}</p>",
        chart::DEFS,
        if ok { "ok" } else { "bad" },
        if ok {
            "\u{2713} ok"
        } else if t.exit_code().is_ok() {
            "\u{2717} FAILED: metrics regressed"
        } else {
            "\u{2717} FAILED"
        },
        escape(&counts(&t))
    );
    body.push_str("<nav aria-label=\"Sections\"><a href=\"#cases\">Cases</a>");
    let problems = !t.orphans.is_empty() || t.invalid_files > 0;
    if problems {
        body.push_str(" <a href=\"#problems\">Invalid files and orphaned goldens</a>");
    }
    if !t.groups.is_empty() {
        body.push_str(" <a href=\"#metrics\">Metrics</a>");
    }
    if !t.savings.is_empty() {
        body.push_str(" <a href=\"#savings\">Defence savings</a>");
    }
    if baseline.is_some() {
        body.push_str(" <a href=\"#baseline\">Baseline</a>");
    }
    body.push_str("</nav></header>\n<main>\n");
    if problems {
        body.push_str(&problems_section(c).0);
    }
    let regressed: BTreeSet<&str> = baseline
        .map(|b| b.regressions.iter().map(|m| m.case.as_str()).collect())
        .unwrap_or_default();
    let (cases_html, index, blocks) = cases_section(c, &regressed);
    body.push_str(&cases_html.0);
    body.push_str(&metrics_section(&t).0);
    body.push_str(&savings_section(&t).0);
    if let Some(b) = baseline {
        body.push_str(&baseline_section(b).0);
    }
    body.push_str("</main>\n");
    body.push_str(&json_script("harness-index", &index));
    page("harness run report", &body, RUN_JS, &blocks)
}

fn problems_section(c: &Collected) -> Html {
    let mut h = String::from(
        "<section id=\"problems\"><h2>Invalid files and orphaned goldens</h2><ul class=\"problems\">",
    );
    for f in c.unreadable.iter().chain(&c.files) {
        let Err(diags) = &f.outcome else { continue };
        for d in diags {
            let _ = write!(
                h,
                "<li><b>\u{2717} error</b> <code>{}:{}:{}</code>: {}",
                escape(&f.path.display().to_string()),
                d.line(),
                d.col(),
                escape(&d.message)
            );
            if let Some(hint) = &d.hint {
                let _ = write!(h, "<br><small>hint: {}</small>", escape(hint));
            }
            h.push_str("</li>");
        }
    }
    for o in &c.orphans {
        let _ = write!(
            h,
            "<li><b>\u{2717} orphaned golden</b> <code>{}</code>: restore its scenario, or delete the golden (git rm)</li>",
            escape(&o.display().to_string())
        );
    }
    h.push_str("</ul></section>\n");
    Html(h)
}

/// Sort rank: failing cases first (and those whose metrics regressed), then flaky, then the
/// rest in run order.
fn rank(status: &str) -> u8 {
    match status {
        "failed" | "regressed" => 0,
        "flaky" => 1,
        _ => 2,
    }
}

/// The case list (filters, table, pager), its JSON index and each case's detail block.
fn cases_section(c: &Collected, regressed: &BTreeSet<&str>) -> (Html, serde_json::Value, String) {
    let files: Vec<String> = c
        .files
        .iter()
        .map(|f| f.path.display().to_string())
        .collect();
    let mut all: Vec<(usize, usize, &CaseResult)> = Vec::new();
    for (fi, f) in c.files.iter().enumerate() {
        if let Ok(cases) = &f.outcome {
            for case in cases {
                all.push((fi, all.len(), case));
            }
        }
    }
    let mut order: Vec<usize> = (0..all.len()).collect();
    order.sort_by_key(|&i| (rank(status(all[i].2, regressed)), i));

    let mut families = BTreeMap::<&str, usize>::new();
    let mut profiles = BTreeMap::<&str, usize>::new();
    let mut tags = BTreeMap::<&str, usize>::new();
    let mut statuses = BTreeMap::<&str, usize>::new();
    for (_, _, case) in &all {
        *families.entry(&case.row.family).or_default() += 1;
        *profiles.entry(&case.row.profile).or_default() += 1;
        *statuses.entry(status(case, regressed)).or_default() += 1;
        let case_tags: BTreeSet<&str> = case
            .detail
            .iter()
            .flat_map(|d| &d.tags)
            .map(String::as_str)
            .collect();
        for tag in case_tags {
            *tags.entry(tag).or_default() += 1;
        }
    }

    // Each scenario whose runs (its profiles) have traces gets one block of lanes, shown in
    // each of its cases.
    let mut lanes_of = BTreeMap::<usize, String>::new();
    let mut first = 0;
    for (fi, f) in c.files.iter().enumerate() {
        let Ok(cases) = &f.outcome else { continue };
        let lanes: Vec<timeline::Lane<'_>> = cases
            .iter()
            .enumerate()
            .filter_map(|(k, s)| {
                s.detail.as_ref().map(|d| timeline::Lane {
                    n: first + k,
                    id: &s.id,
                    profile: &s.row.profile,
                    events: &d.events,
                })
            })
            .collect();
        if lanes.len() > 1 {
            lanes_of.insert(fi, timeline::lanes(&lanes).0);
        }
        first += cases.len();
    }
    let mut index = Vec::with_capacity(all.len());
    let mut blocks = String::new();
    for &i in &order {
        let (fi, n, case) = all[i];
        let st = status(case, regressed);
        index.push(json!({
            "n": n,
            "id": case.id,
            "file": fi,
            "line": case.line,
            "family": case.row.family,
            "profile": case.row.profile,
            "tags": case.detail.as_ref().map(|d| d.tags.clone()).unwrap_or_default(),
            "status": st,
            "golden": golden_name(&case.golden),
            "why": failure_summary(case),
            "outcome": case.row.outcome,
            "iterations": case.row.iterations,
            "interventions": case.row.interventions_stage1 + case.row.interventions_stage2 + case.row.interventions_stage3,
            "time": duration(case.row.virtual_ms),
            "runs": case.runs,
            "passes": case.passes,
        }));
        let compared = lanes_of.contains_key(&fi);
        blocks.push_str(&html_block(
            &format!("d{n}"),
            &case_detail(case, st, &files[fi], compared.then_some(fi)).0,
        ));
    }
    for (fi, lanes) in &lanes_of {
        blocks.push_str(&html_block(&format!("f{fi}"), lanes));
    }
    let index = json!({ "files": files, "cases": index });

    let mut h = String::from("<section id=\"cases\"><h2>Cases</h2>");
    h.push_str("<form class=\"filters\" id=\"filters\" role=\"search\">");
    let select = |h: &mut String, name: &str, label: &str, values: &BTreeMap<&str, usize>| {
        let _ = write!(
            h,
            "<label>{label} <select name=\"{name}\"><option value=\"\">all</option>"
        );
        for (v, n) in values {
            let _ = write!(
                h,
                "<option value=\"{}\">{} ({n})</option>",
                escape(v),
                escape(v)
            );
        }
        h.push_str("</select></label> ");
    };
    select(&mut h, "status", "Status", &statuses);
    select(&mut h, "family", "Family", &families);
    select(&mut h, "profile", "Profile", &profiles);
    select(&mut h, "tag", "Tag", &tags);
    h.push_str("<label>Case id contains <input type=\"search\" name=\"q\" size=\"24\"></label> ");
    h.push_str("<label>Per page <select name=\"size\"><option>50</option><option selected>100</option><option>250</option><option>1000</option></select></label>");
    h.push_str("</form>");
    h.push_str("<p id=\"shown\" role=\"status\" aria-live=\"polite\"></p>");
    h.push_str("<table class=\"cases\" id=\"case-table\"><thead><tr><th scope=\"col\">status</th><th scope=\"col\">case</th><th scope=\"col\">profile</th><th scope=\"col\">family</th><th scope=\"col\">outcome</th><th scope=\"col\" class=\"num\">iterations</th><th scope=\"col\" class=\"num\">interventions</th><th scope=\"col\" class=\"num\">virtual time</th><th scope=\"col\">why it failed</th></tr></thead><tbody id=\"case-rows\"></tbody></table>");
    h.push_str("<nav class=\"pager\" id=\"pager\" aria-label=\"Pages of cases\"><button type=\"button\" data-page=\"prev\">\u{2190} previous</button> <span id=\"page-of\"></span> <button type=\"button\" data-page=\"next\">next \u{2192}</button></nav>");
    let _ = write!(
        h,
        "<noscript><p>The case list needs JavaScript; the JSON results (<code>--json</code>) hold the same {} cases.</p></noscript>",
        all.len()
    );
    h.push_str("</section>\n");
    (Html(h), index, blocks)
}

/// A case's detail; `compared`: the file whose block of lanes it shows.
fn case_detail(case: &CaseResult, st: &str, file: &str, compared: Option<usize>) -> Html {
    let mut h = String::from("<div class=\"case-detail\">");
    let _ = write!(
        h,
        "<dl class=\"facts\"><dt>case</dt><dd><code>{}</code></dd><dt>status</dt><dd class=\"st-{st}\">{}</dd><dt>scenario</dt><dd><code>{}:{}</code></dd><dt>family</dt><dd>{}</dd><dt>profile</dt><dd>{}</dd>",
        escape(&case.id),
        status_mark(st),
        escape(file),
        case.line,
        escape(&case.row.family),
        escape(&case.row.profile),
    );
    if let Some(d) = case.detail.as_ref().filter(|d| !d.tags.is_empty()) {
        let _ = write!(h, "<dt>tags</dt><dd>{}</dd>", escape(&d.tags.join(", ")));
    }
    if case.runs > 1 {
        let _ = write!(
            h,
            "<dt>runs</dt><dd>{} of {} passed (the run shown is the first that failed, if any)</dd>",
            case.passes, case.runs
        );
    }
    h.push_str("</dl>");
    if !case.expectation_failures.is_empty() || !case.io_errors.is_empty() {
        h.push_str("<ul class=\"why\">");
        for e in &case.expectation_failures {
            let _ = write!(h, "<li><b>\u{2717} expected</b> {}</li>", escape(e));
        }
        for e in &case.io_errors {
            let _ = write!(h, "<li><b>\u{2717} i/o error</b> {}</li>", escape(e));
        }
        h.push_str("</ul>");
    }
    match &case.golden {
        Comparison::Differs(d) => {
            h.push_str("<h4>Golden diff</h4>");
            h.push_str(&diff::side_by_side(d).0);
        }
        Comparison::Missing(d) => {
            h.push_str(
                "<p class=\"note\"><b>\u{2717} no golden yet</b>: the timeline below is what this run produced; <code>harness accept</code> makes it the golden after review.</p>",
            );
            if !d.is_empty() {
                h.push_str("<h4>New golden (against nothing)</h4>");
                h.push_str(&diff::side_by_side(d).0);
            }
        }
        Comparison::Match | Comparison::Ungated => {}
    }
    if let Some(fi) = compared {
        let _ = write!(
            h,
            "<h4>Profiles side by side (one virtual-time axis)</h4><div class=\"cmp-slot\" data-block=\"f{fi}\"></div>"
        );
    }
    h.push_str("<h4>Timeline</h4>");
    match &case.detail {
        Some(d) => h.push_str(&timeline::timeline(&d.events).0),
        None => h.push_str(
            "<p class=\"note\">These results hold no trace for this case: they were written without one (by an older harness). Run again with <code>--json</code> or <code>--html</code> to keep it.</p>",
        ),
    }
    h.push_str("</div>");
    Html(h)
}

/// Mean per run, for the charts.
fn per_run(total: u64, runs: u64) -> f64 {
    if runs == 0 {
        0.0
    } else {
        total as f64 / runs as f64
    }
}

fn metrics_section(t: &Tally) -> Html {
    if t.groups.is_empty() {
        return Html(String::new());
    }
    let mut h = String::from(
        "<section id=\"metrics\"><h2>Metrics per family and profile</h2><div class=\"scroll\"><table class=\"metrics\"><thead><tr><th scope=\"col\">family</th><th scope=\"col\">profile</th><th scope=\"col\" class=\"num\">runs</th><th scope=\"col\" class=\"num\">iterations</th><th scope=\"col\" class=\"num\">wasted</th><th scope=\"col\" class=\"num\">interventions</th><th scope=\"col\" class=\"num\">tokens</th><th scope=\"col\" class=\"num\">virtual time</th><th scope=\"col\" class=\"num\">cost</th></tr></thead><tbody>",
    );
    for ((family, profile), s) in &t.groups {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td>",
            escape(family),
            escape(profile)
        );
        for cell in s.cells() {
            let _ = write!(h, "<td class=\"num\">{}</td>", escape(&cell));
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table></div><div class=\"charts\">");
    let mut by_family: BTreeMap<&str, Vec<(&str, &Sums)>> = BTreeMap::new();
    for ((family, profile), s) in &t.groups {
        by_family.entry(family).or_default().push((profile, s));
    }
    let groups = |value: &dyn Fn(&Sums) -> (f64, String)| -> Vec<chart::Group> {
        by_family
            .iter()
            .map(|(family, profiles)| chart::Group {
                label: (*family).to_owned(),
                bars: profiles
                    .iter()
                    .map(|(profile, s)| {
                        let (v, text) = value(s);
                        chart::Bar {
                            label: (*profile).to_owned(),
                            value: v,
                            text,
                            series: usize::from(*profile == "none"),
                        }
                    })
                    .collect(),
            })
            .collect()
    };
    h.push_str(
        &chart::bars(
            "Iterations per run (profile none hatched)",
            &[],
            &groups(&|s| {
                let v = per_run(s.iterations, s.runs);
                (v, format!("{v:.1}"))
            }),
        )
        .0,
    );
    h.push_str(
        &chart::bars(
            "Virtual time per run (profile none hatched)",
            &[],
            &groups(&|s| {
                let v = per_run(s.virtual_ms, s.runs);
                (v, duration(v.round() as u64))
            }),
        )
        .0,
    );
    h.push_str("</div></section>\n");
    Html(h)
}

fn savings_section(t: &Tally) -> Html {
    if t.savings.is_empty() {
        return Html(String::new());
    }
    let mut h = String::from(
        "<section id=\"savings\"><h2>Defence savings</h2><p>Each defence against profile <code>none</code> on the same scenarios (none \u{2192} defence).</p><div class=\"scroll\"><table class=\"metrics\"><thead><tr><th scope=\"col\">family</th><th scope=\"col\">profile</th><th scope=\"col\">iterations</th><th scope=\"col\">virtual time</th><th scope=\"col\">tokens</th><th scope=\"col\" class=\"num\">scenarios</th></tr></thead><tbody>",
    );
    for ((family, profile), (own, none)) in &t.savings {
        let _ = write!(
            h,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td></tr>",
            escape(family),
            escape(profile),
            escape(&change(own.iterations, none.iterations, |n| n.to_string())),
            escape(&change(own.virtual_ms, none.virtual_ms, duration)),
            escape(&change(own.tokens, none.tokens, |n| n.to_string())),
            own.runs
        );
    }
    h.push_str("</tbody></table></div><div class=\"charts\">");
    type Figure = fn(&Sums) -> u64;
    type Show = fn(u64) -> String;
    let metrics: [(&str, Figure, Show); 3] = [
        ("Iterations", |s| s.iterations, |n| n.to_string()),
        ("Virtual time", |s| s.virtual_ms, duration),
        ("Tokens", |s| s.tokens, |n| n.to_string()),
    ];
    for (name, figure, show) in metrics {
        let groups: Vec<chart::Group> = t
            .savings
            .iter()
            .map(|((family, profile), (own, none))| {
                let (o, n) = (figure(own), figure(none));
                let pct = if n == 0 {
                    String::new()
                } else {
                    format!(" ({:+.0}%)", (o as f64 - n as f64) * 100.0 / n as f64)
                };
                chart::Group {
                    label: format!("{family} \u{00b7} {profile}"),
                    bars: vec![
                        chart::Bar {
                            label: "none".to_owned(),
                            value: n as f64,
                            text: show(n),
                            series: 1,
                        },
                        chart::Bar {
                            label: profile.clone(),
                            value: o as f64,
                            text: format!("{}{pct}", show(o)),
                            series: 0,
                        },
                    ],
                }
            })
            .collect();
        h.push_str(
            &chart::bars(
                &format!("{name}: none (hatched) against the defence (solid)"),
                &["defence", "none"],
                &groups,
            )
            .0,
        );
    }
    h.push_str("</div></section>\n");
    Html(h)
}

fn baseline_section(b: &BaselineCheck) -> Html {
    let mut h = String::new();
    let cases: BTreeSet<&str> = b.regressions.iter().map(|m| m.case.as_str()).collect();
    let _ = write!(
        h,
        "<section id=\"baseline\"><h2>Baseline</h2><p><b class=\"verdict {}\">{}</b> {} cases compared with <code>{}</code>: {} regressions in {} cases, {} improvements, {} cases without a baseline.</p>",
        if b.regressions.is_empty() {
            "ok"
        } else {
            "bad"
        },
        if b.regressions.is_empty() {
            "\u{2713} ok"
        } else {
            "\u{2717} FAILED"
        },
        b.compared,
        escape(&b.file),
        b.regressions.len(),
        cases.len(),
        b.improvements.len(),
        b.new_cases
    );
    if !b.regressions.is_empty() || !b.improvements.is_empty() {
        h.push_str("<div class=\"scroll\"><table class=\"metrics\"><thead><tr><th scope=\"col\">change</th><th scope=\"col\">case</th><th scope=\"col\">metric</th><th scope=\"col\">baseline \u{2192} this run</th><th scope=\"col\">allowed</th></tr></thead><tbody>");
        for (mark, class, list) in [
            ("\u{25b2} regression", "bad", &b.regressions),
            ("\u{25bc} improved", "good", &b.improvements),
        ] {
            for m in list {
                let _ = write!(
                    h,
                    "<tr class=\"{class}\"><td><b>{mark}</b></td><td><code>{}</code></td><td>{}</td><td>{} \u{2192} {}</td><td>{}</td></tr>",
                    escape(&m.case),
                    escape(&m.metric),
                    escape(&m.old),
                    escape(&m.new),
                    escape(&m.allowed)
                );
            }
        }
        h.push_str("</tbody></table></div>");
    }
    h.push_str("</section>\n");
    Html(h)
}

/// The case ids and statuses a report page lists, read back from its JSON index (for tests
/// and tools that check a report against its results).
pub fn listed_cases(page: &str) -> Option<Vec<(String, String)>> {
    let start = page.find("<script type=\"application/json\" id=\"harness-index\">")?;
    let rest = &page[start..];
    let open = rest.find('>')? + 1;
    let close = rest.find("</script>")?;
    let v: serde_json::Value = serde_json::from_str(&rest[open..close]).ok()?;
    v.get("cases")?
        .as_array()?
        .iter()
        .map(|c| {
            Some((
                c.get("id")?.as_str()?.to_owned(),
                c.get("status")?.as_str()?.to_owned(),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests;
