//! The HTML reports in a real browser: Debian's headless Chromium, driven over the DevTools
//! protocol (`cdp`). Ignored by `cargo test` (a fresh machine has no Chromium); `.ci/browser`
//! installs Chromium when it is missing and runs them with `--ignored`, failing loudly when
//! it cannot.
//!
//! Every page must open without a console error, an exception, a dialog, a CSP violation or
//! a request to anything but itself.
//!
//! `HARNESS_UPDATE_SCREENSHOT=1` rewrites `docs/report.png` (the screenshot of the README and the book) from the
//! bundled report instead of comparing with it.

use crate::cdp::{Browser, Page, luminance_grid};
use crate::support::{EXAMPLE_ID, Project, repo, suite_size};
use serde_json::{Value, json};

/// The screenshot of the bundled report (README, docs/html-report.md), the failing case opened.
const SCREENSHOT: &str = "docs/report.png";
/// Its viewport.
const SHOT_HEIGHT: u32 = 1400;

fn url(p: &Project, rel: &str) -> String {
    format!("file://{}", p.join(rel).display())
}

/// The bundled scenarios, goldens and baseline, with the example's golden edited so that it
/// fails with a one-word diff; run with `--html` and `--json`.
fn bundled_report() -> (Project, usize) {
    let p = Project::new();
    for dir in ["scenarios", "snapshots", "baselines"] {
        p.copy_from_repo(dir, dir);
    }
    let golden = format!("snapshots/{EXAMPLE_ID}.snap");
    let text = p.read(&golden);
    let edited = text.replacen("stage=1 action=nudge", "stage=2 action=nudge", 1);
    assert_ne!(
        edited, text,
        "the example's golden changed: edit another line"
    );
    p.write(&golden, edited);
    p.harness_ci(
        "1",
        &[
            "run",
            "scenarios/",
            "--html",
            "out/report.html",
            "--json",
            "out/results.json",
            "--baseline",
            "baselines/scenarios.toml",
        ],
    )
    .expect_code(1);
    let results: Value = serde_json::from_str(&p.read("out/results.json")).unwrap();
    let cases = results["summary"]["cases"].as_u64().unwrap() as usize;
    assert!(cases > 200, "the bundled scenarios hold {cases} cases");
    (p, cases)
}

#[track_caller]
fn assert_clean(page: &mut Page<'_>) {
    let bad = page.misdeeds();
    assert!(bad.is_empty(), "the page misbehaved:\n{}", bad.join("\n"));
}

fn count(page: &mut Page<'_>, selector: &str) -> usize {
    let sel = serde_json::to_string(selector).unwrap();
    page.eval(&format!("document.querySelectorAll({sel}).length"))
        .as_u64()
        .unwrap() as usize
}

fn text(page: &mut Page<'_>, selector: &str) -> String {
    let sel = serde_json::to_string(selector).unwrap();
    page.eval(&format!(
        "(document.querySelector({sel}) || {{textContent: ''}}).textContent"
    ))
    .as_str()
    .unwrap()
    .to_owned()
}

/// Choose `value` in the filter form's select `name`, as a user's change would.
fn choose(page: &mut Page<'_>, name: &str, value: &str) {
    let v = serde_json::to_string(value).unwrap();
    page.eval(&format!(
        "(function () {{ var s = document.querySelector('#filters [name={name}]'); s.value = {v}; s.dispatchEvent(new Event('change', {{bubbles: true}})); return s.value; }})()"
    ));
}

#[test]
#[ignore = "needs Debian's Chromium: .ci/browser installs it and runs these"]
fn the_bundled_report_lists_every_case_and_shows_a_failing_diff() {
    let (p, cases) = bundled_report();
    let mut browser = Browser::launch();
    eprintln!("browser: {}", browser.version());
    let shot = {
        let mut page = browser.open(&url(&p, "out/report.html"), SHOT_HEIGHT);
        assert_clean(&mut page);
        assert!(
            text(&mut page, "h1").contains("FAILED"),
            "{}",
            text(&mut page, "h1")
        );

        // Paged: the first hundred rows, the count of all.
        assert_eq!(count(&mut page, "#case-rows tr"), 100.min(cases));
        let shown = text(&mut page, "#shown");
        assert!(shown.contains(&format!("of {cases} cases")), "{shown}");
        choose(&mut page, "size", "1000");
        assert_eq!(count(&mut page, "#case-rows tr"), cases, "one row per case");

        // Failing first: the edited example, its diff opened by a click.
        assert!(text(&mut page, "#case-rows tr:first-child td.st").contains("FAILED"));
        assert_eq!(
            text(&mut page, "#case-rows tr:first-child button.open"),
            EXAMPLE_ID
        );
        assert_eq!(count(&mut page, "table.diff"), 0, "nothing open yet");
        page.click("#case-rows tr:first-child button.open");
        page.wait_for("!!document.querySelector('tr.detail td[data-ready]')");
        assert_eq!(
            text(&mut page, "table.diff del"),
            "stage=2",
            "the golden's word, struck out"
        );
        assert_eq!(
            text(&mut page, "table.diff ins"),
            "stage=1",
            "the run's word"
        );
        page.click("table.diff ins"); // visible, not only present
        // The scenario's two profiles side by side, the open one marked.
        assert_eq!(count(&mut page, ".cmp-slot .lane"), 2);
        assert_eq!(count(&mut page, ".cmp-slot .tl-label.current"), 1);
        let lanes = text(&mut page, ".cmp-slot");
        assert!(lanes.contains("response at 40.0s, 4 iterations"), "{lanes}");
        assert!(
            lanes.contains("max_iterations at 4m15s, 25 iterations"),
            "{lanes}"
        );
        // The timeline: a row per iteration, the intervention marked with its policy.
        assert_eq!(
            count(&mut page, ".case-detail > .tl .tl-row"),
            5,
            "start and 4 iterations"
        );
        let marks = text(&mut page, ".case-detail > .tl");
        assert!(
            marks.contains("moltis-reflex stage 1: nudge (exec)"),
            "{marks}"
        );
        assert!(marks.contains("exec rejected"), "{marks}");
        // Expanding the event lines shows the golden's lines.
        assert_eq!(count(&mut page, "details.lines[open]"), 0);
        page.click(".case-detail button.expand-lines");
        assert_eq!(count(&mut page, "details.lines[open]"), 5);
        let lines = text(&mut page, "details.lines pre");
        assert!(lines.contains("run_start profile=moltis"), "{lines}");
        page.click(".case-detail button.expand-lines");
        assert_eq!(
            count(&mut page, "details.lines[open]"),
            0,
            "and folded again"
        );
        assert_clean(&mut page);

        page.eval("window.scrollTo(0, 0); document.activeElement.blur(); true");
        page.screenshot()
    };
    let target = repo().join(SCREENSHOT);
    if std::env::var_os("HARNESS_UPDATE_SCREENSHOT").is_some() {
        std::fs::write(&target, &shot).unwrap();
        eprintln!("wrote {}", target.display());
        return;
    }
    // Loosely the screenshot: the same layout on a coarse grid, whatever the fonts'
    // pixels do.
    let want =
        std::fs::read(&target).expect("docs/report.png (HARNESS_UPDATE_SCREENSHOT=1 makes it)");
    let (a, b) = (
        luminance_grid(&mut browser, &shot, 16, 18),
        luminance_grid(&mut browser, &want, 16, 18),
    );
    let inked = a.iter().filter(|l| **l < 250.0).count();
    assert!(
        inked * 4 > a.len(),
        "the screenshot is nearly blank: {inked} of {} cells hold anything",
        a.len()
    );
    let mean = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).sum::<f64>() / a.len() as f64;
    assert!(
        mean < 12.0,
        "the report's layout moved away from {SCREENSHOT} (mean luminance difference {mean:.1} of 255 per cell); \
         look at it and rerun with HARNESS_UPDATE_SCREENSHOT=1 if the change is meant"
    );
}

#[test]
#[ignore = "needs Debian's Chromium: .ci/browser installs it and runs these"]
fn keyboard_opens_cases_and_the_filters_narrow_the_list() {
    let (p, _) = bundled_report();
    let mut browser = Browser::launch();
    let mut page = browser.open(&url(&p, "out/report.html"), 900);
    // Tab moves through the filters.
    page.eval("document.querySelector('#filters [name=status]').focus(); true");
    page.press("Tab");
    assert_eq!(page.eval("document.activeElement.name"), json!("family"));
    // Enter on a case opens it, again closes it.
    page.eval("document.querySelector('#case-rows tr:nth-child(2) button.open').focus(); true");
    page.press("Enter");
    page.wait_for("!!document.querySelector('tr.detail td[data-ready]')");
    assert_eq!(
        page.eval("document.querySelector('#case-rows tr:nth-child(2) button.open').getAttribute('aria-expanded')"),
        json!("true")
    );
    assert_eq!(
        page.eval("document.querySelector('#case-rows tr:nth-child(3)').className"),
        json!("detail")
    );
    page.press("Enter");
    assert_eq!(count(&mut page, "tr.detail"), 0);
    // Filters: the failing case alone; a family; a tag; nothing.
    choose(&mut page, "status", "failed");
    assert_eq!(count(&mut page, "#case-rows tr"), 1);
    choose(&mut page, "status", "");
    choose(&mut page, "family", "reflex");
    let rows = count(&mut page, "#case-rows tr");
    assert!(rows > 2, "{rows}");
    assert_eq!(
        page.eval("Array.prototype.every.call(document.querySelectorAll('#case-rows tr td:nth-child(4)'), function (td) { return td.textContent === 'reflex'; })"),
        json!(true)
    );
    // As many as the JSON results hold with that family and tag.
    let results: Value = serde_json::from_str(&p.read("out/results.json")).unwrap();
    let want = results["files"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|f| f["cases"].as_array().unwrap())
        .filter(|c| c["metrics"]["family"] == "reflex")
        .filter(|c| c["tags"].as_array().unwrap().contains(&json!("issue-658")))
        .count();
    assert!(want >= 2, "{want}");
    choose(&mut page, "tag", "issue-658");
    assert_eq!(count(&mut page, "#case-rows tr button.open"), want);
    choose(&mut page, "profile", "plan-step");
    assert_eq!(
        text(&mut page, "#case-rows"),
        "No case matches these filters."
    );
    assert_clean(&mut page);
}

#[test]
#[ignore = "needs Debian's Chromium: .ci/browser installs it and runs these"]
fn hostile_text_in_the_results_stays_text() {
    let p = Project::with_example();
    p.harness_ci("1", &["run", "scenarios/", "--json", "r.json"])
        .expect_code(1);
    let mut r: Value = serde_json::from_str(&p.read("r.json")).unwrap();
    let evil = "</script><script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\"><!--";
    let case = &mut r["files"][0]["cases"][0];
    case["id"] = json!(format!("reflex/{evil}"));
    case["expectation_failures"] = json!([evil]);
    case["tags"] = json!([evil]);
    case["metrics"]["family"] = json!(evil);
    for e in case["trace"].as_array_mut().unwrap() {
        if e["kind"] == "tool_call_rejected" {
            e["name"] = json!(evil);
            e["error"] = json!(evil);
        }
        if e["kind"] == "outcome" {
            e["text"] = json!(evil);
        }
    }
    // A name that reads backwards on screen (issue 31): shown with its override spelled out.
    r["files"][0]["cases"][1]["id"] = json!("reflex/a\u{202e}gnp.exe\u{200f}");
    p.write("evil.json", serde_json::to_string_pretty(&r).unwrap());
    p.harness(&["report", "evil.json", "--html", "evil.html"])
        .expect_code(0);

    let mut browser = Browser::launch();
    let mut page = browser.open(&url(&p, "evil.html"), 900);
    choose(&mut page, "status", "");
    let id = format!("reflex/{evil}");
    let ids = page.eval("Array.prototype.map.call(document.querySelectorAll('button.open'), function (b) { return b.textContent; })");
    assert!(ids.as_array().unwrap().contains(&json!(id)), "{ids}");
    assert!(
        ids.as_array()
            .unwrap()
            .contains(&json!("reflex/a\\u{202e}gnp.exe\\u{200f}")),
        "{ids}"
    );
    page.click("button.open");
    page.wait_for("!!document.querySelector('tr.detail td[data-ready]')");
    let detail = text(&mut page, "tr.detail");
    assert!(detail.contains(evil), "the text is shown as text: {detail}");
    assert_eq!(page.eval("window.__pwned === undefined"), json!(true));
    assert_eq!(count(&mut page, "img"), 0, "no element came from the data");
    assert_eq!(
        count(&mut page, "script:not([type])"),
        1,
        "only the page's own script"
    );
    assert_clean(&mut page);
}

#[test]
#[ignore = "needs Debian's Chromium: .ci/browser installs it and runs these"]
fn the_network_check_fails_a_page_that_fetches() {
    let (p, _) = bundled_report();
    let mut browser = Browser::launch();
    // A page without the report's policy: both loads are seen as requests.
    p.write(
        "leaky.html",
        "<!DOCTYPE html><html><body><img src=\"http://127.0.0.1:9/pixel.png\"><script>fetch('http://127.0.0.1:9/data').catch(function () {});</script></body></html>",
    );
    {
        let mut page = browser.open(&url(&p, "leaky.html"), 400);
        page.wait_for("true");
        let bad = page.misdeeds();
        for want in [
            "request: http://127.0.0.1:9/pixel.png",
            "request: http://127.0.0.1:9/data",
        ] {
            assert!(bad.iter().any(|m| m == want), "{want} not caught: {bad:?}");
        }
    }
    // The report's own policy refuses a fetch even from injected code, and the check sees the
    // attempt.
    let mut page = browser.open(&url(&p, "out/report.html"), 400);
    assert_clean(&mut page);
    page.eval("fetch('http://127.0.0.1:9/exfiltrate').then(function () { return 'sent'; }, function () { return 'refused'; })");
    let bad = page.misdeeds();
    assert!(
        bad.iter()
            .any(|m| m.starts_with("CSP violation: connect-src")),
        "the blocked fetch was not seen: {bad:?}"
    );
}

#[test]
#[ignore = "needs Debian's Chromium: .ci/browser installs it and runs these"]
fn a_report_of_thousands_of_cases_pages_without_breaking_the_layout() {
    let (p, cases) = bundled_report();
    let mut r: Value = serde_json::from_str(&p.read("out/results.json")).unwrap();
    let files = r["files"].as_array().unwrap().clone();
    let mut all = Vec::new();
    for k in 0..6 {
        for f in &files {
            let mut f = f.clone();
            f["path"] = json!(format!("copy-{k}/{}", f["path"].as_str().unwrap()));
            for c in f["cases"].as_array_mut().into_iter().flatten() {
                c["id"] = json!(format!("copy-{k}/{}", c["id"].as_str().unwrap()));
            }
            all.push(f);
        }
    }
    r["files"] = json!(all);
    r["orphans"] = json!([]);
    p.write("big.json", serde_json::to_string(&r).unwrap());
    p.harness(&["report", "big.json", "--html", "big.html"])
        .expect_code(0)
        .expect_stdout(&format!(
            "({} cases, {} with their trace)",
            6 * cases,
            6 * cases
        ));
    let total = 6 * cases;
    let pages = total.div_ceil(100);

    let mut browser = Browser::launch();
    let mut page = browser.open(&url(&p, "big.html"), 900);
    assert_clean(&mut page);
    let fits = "document.documentElement.scrollWidth <= window.innerWidth";
    assert_eq!(count(&mut page, "#case-rows tr"), 100);
    assert_eq!(text(&mut page, "#page-of"), format!("page 1 of {pages}"));
    assert_eq!(page.eval(fits), json!(true), "no horizontal overflow");
    page.click("#pager [data-page=next]");
    assert_eq!(text(&mut page, "#page-of"), format!("page 2 of {pages}"));
    assert_eq!(count(&mut page, "#case-rows tr"), 100);
    page.click("#case-rows tr:nth-child(5) button.open");
    page.wait_for("!!document.querySelector('tr.detail td[data-ready]')");
    assert_eq!(page.eval(fits), json!(true), "an open case fits too");
    choose(&mut page, "size", "1000");
    assert_eq!(count(&mut page, "#case-rows tr button.open"), 1000);
    assert_eq!(page.eval(fits), json!(true));
    // Each row stays one readable line high or so: the table grows with the rows, not more.
    let height = page
        .eval("document.getElementById('case-table').getBoundingClientRect().height")
        .as_f64()
        .unwrap();
    assert!(
        height < 1000.0 * 80.0,
        "rows are {} px high on average",
        height / 1000.0
    );
    assert_clean(&mut page);
}

#[test]
#[ignore = "needs Debian's Chromium: .ci/browser installs it and runs these"]
fn the_sweep_page_lists_the_runs_a_point_fired_on() {
    let p = Project::new();
    p.copy_from_repo("fixtures/transcripts", "transcripts");
    p.harness(&[
        "sweep",
        "transcripts",
        "--detector",
        "consecutive-identical:k=2,3,4",
        "--detector",
        "moltis-reflex",
        "--fires",
        "fires.csv",
        "--html",
        "sweep.html",
    ])
    .expect_code(0)
    .expect_stdout("sweep.html");
    // What the page must list: the fires rows of k=2.
    let fires = p.read("fires.csv");
    let mut want: Vec<&str> = fires
        .lines()
        .filter(|l| l.contains(",consecutive-identical,k=2,"))
        .map(|l| l.split(',').next().unwrap())
        .collect();
    want.sort_unstable();
    assert!(want.len() > 1, "{fires}");

    let mut browser = Browser::launch();
    let mut page = browser.open(&url(&p, "sweep.html"), 900);
    assert_clean(&mut page);
    assert_eq!(count(&mut page, "section.sw"), 2, "a panel per detector");
    assert_eq!(count(&mut page, "[hidden].sw-fires"), 2, "nothing open yet");
    // Click the point of k=2 (its own position on the plot).
    page.click("#panel-0 .pt[data-s='0'] circle");
    let listed = page.eval(
        "Array.prototype.map.call(document.querySelectorAll('#fires-0 tbody tr td:first-child'), function (td) { return td.textContent; }).sort()",
    );
    assert_eq!(listed, json!(want));
    let head = text(&mut page, "#fires-0 h4");
    assert_eq!(head, "consecutive-identical k=2");
    let what = text(&mut page, "#fires-0");
    assert!(
        what.contains("false alarms") && what.contains("caught"),
        "{what}"
    );
    assert_eq!(
        page.eval("document.querySelector('#panel-0 .pt[data-s=\"0\"]').classList.contains('sel')"),
        json!(true)
    );
    // The keyboard reaches the points too, and the table's buttons open the same lists.
    let last = count(&mut page, "#panel-0 .pt") - 1;
    page.eval(&format!(
        "document.querySelectorAll('#panel-0 .pt')[{last}].focus(); true"
    ));
    page.press("Enter");
    assert_ne!(text(&mut page, "#fires-0 h4"), "consecutive-identical k=2");
    page.click("#panel-1 button[data-s]");
    assert!(text(&mut page, "#fires-1 h4").starts_with("moltis-reflex "));
    assert_clean(&mut page);
}

#[test]
#[ignore = "needs Debian's Chromium: .ci/browser installs it and runs these"]
fn the_report_card_page_shows_every_case_of_each_card() {
    let p = Project::new();
    p.copy_from_repo("scenarios/suite", "scenarios/suite");
    let run = p.harness(&[
        "suite",
        "--profile",
        "none",
        "--profile",
        "moltis",
        "--html",
        "card.html",
    ]);
    run.expect_code(0);
    // The points the terminal gave, to find on the page.
    let points: usize = run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("score "))
        .map(|l| l.split('/').next().unwrap().parse::<usize>().unwrap())
        .sum();
    let mut browser = Browser::launch();
    let mut page = browser.open(&url(&p, "card.html"), 900);
    assert_clean(&mut page);
    assert_eq!(count(&mut page, "section.card"), 2);
    assert_eq!(
        count(&mut page, "section.card tr[data-case]"),
        2 * suite_size().cases
    );
    assert_eq!(count(&mut page, "td.verdict.good"), points);
    assert_eq!(text(&mut page, "section.card h2"), "profile none");
    assert!(
        text(&mut page, "section.card p.score").starts_with("score "),
        "the score line"
    );
    assert_eq!(
        page.eval("document.documentElement.scrollWidth <= window.innerWidth"),
        json!(true),
        "no horizontal overflow"
    );
    assert_clean(&mut page);
}

#[test]
#[ignore = "needs Debian's Chromium: .ci/browser installs it and runs these"]
fn the_scorecard_page_is_a_summary_and_a_case_by_loop_matrix() {
    let p = Project::new();
    p.copy_from_repo("scenarios/suite", "scenarios/suite");
    p.harness(&["suite", "--json", "engine.json"])
        .expect_code(0);
    let run = p.harness(&["scorecard", "engine.json", "--html", "scorecard.html"]);
    run.expect_code(0);
    let mut browser = Browser::launch();
    let mut page = browser.open(&url(&p, "scorecard.html"), 1200);
    assert_clean(&mut page);
    // A summary row per loop (the four profiles), a matrix row per case, a cell per loop.
    assert_eq!(
        count(&mut page, "section.scorecard tbody tr:not([data-case])"),
        4
    );
    let n = suite_size().cases;
    assert_eq!(count(&mut page, "tr[data-case]"), n);
    assert_eq!(count(&mut page, "tr[data-case] td.cell"), n * 4);
    // Each cell says the verdict short and, on hover, whole.
    let title = page.eval(
        "document.querySelector('tr[data-case=\"reflex-empty-arguments\"] td.cell.good').title",
    );
    assert_eq!(title, json!("recovered at iteration 4"));
    assert_clean(&mut page);
}
