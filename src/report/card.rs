//! The report card of a failure-mode suite (`harness suite`): for one loop — an agent command
//! or an engine profile — each suite case's verdict ([`crate::results::card`]) with the
//! iterations it wasted, the tokens and the virtual cost it spent, then the score.
//!
//! ```text
//! report card: python3 agent.py (N cases of scenarios/suite)
//!
//!   failure modes                                     verdict                                   wasted   tokens      cost
//!   Reflex loop: empty arguments on every turn        recovered at iteration 4                       3     1204   $0.0021
//!   …
//!   legitimate work
//!   Polling one status call until it changes          finished at iteration 5                        0      890   $0.0011
//!
//! score S/N: R of F failure modes recovered, L of G legitimate runs finished
//! ```
//!
//! The score is one point per failure mode recovered and per legitimate run finished.

use crate::results::CaseResult;
use crate::scenario::SuiteKind;
use std::fmt::Write as _;

/// The score of a card: points, and the counts behind them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Score {
    /// Failure modes recovered.
    pub recovered: usize,
    /// Failure modes.
    pub failures: usize,
    /// Legitimate runs finished.
    pub finished: usize,
    /// Legitimate runs.
    pub legitimate: usize,
    /// Cases whose premise did not hold (no verdict, no point, in no total).
    pub not_exercised: usize,
    /// Cases that could not drive the loop (likewise).
    pub not_driven: usize,
}

impl Score {
    /// Points scored.
    pub fn points(&self) -> usize {
        self.recovered + self.finished
    }

    /// Cases scored.
    pub fn cases(&self) -> usize {
        self.failures + self.legitimate
    }

    /// The score line.
    pub fn line(&self) -> String {
        format!(
            "score {}/{}: {} of {} failure modes recovered, {} of {} legitimate runs finished{}",
            self.points(),
            self.cases(),
            self.recovered,
            self.failures,
            self.finished,
            self.legitimate,
            self.unjudged()
        )
    }

    /// `; k not exercised, k could not be driven` for the cases without a verdict, if any.
    pub fn unjudged(&self) -> String {
        let mut parts = Vec::new();
        if self.not_exercised > 0 {
            parts.push(format!("{} not exercised", self.not_exercised));
        }
        if self.not_driven > 0 {
            parts.push(format!("{} could not be driven", self.not_driven));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("; {}", parts.join(", "))
        }
    }
}

/// The score of these cases (those without a card count for nothing).
pub fn score<'a>(cases: impl IntoIterator<Item = &'a CaseResult>) -> Score {
    let mut s = Score::default();
    for c in cases {
        let Some(e) = &c.card else { continue };
        match &e.verdict {
            crate::results::card::Verdict::NotExercised(_) => {
                s.not_exercised += 1;
                continue;
            }
            crate::results::card::Verdict::NotDriven(_) => {
                s.not_driven += 1;
                continue;
            }
            _ => {}
        }
        match e.kind {
            SuiteKind::Failure => {
                s.failures += 1;
                s.recovered += usize::from(e.verdict.good());
            }
            SuiteKind::Legitimate => {
                s.legitimate += 1;
                s.finished += usize::from(e.verdict.good());
            }
        }
    }
    s
}

/// The cases with a card, of `kind` (all kinds with `None`), sorted by case id: each with its
/// card entry.
fn rows<'a>(
    cases: &[&'a CaseResult],
    kind: Option<SuiteKind>,
) -> Vec<(&'a CaseResult, &'a crate::results::card::Entry)> {
    let mut rows: Vec<(&CaseResult, &crate::results::card::Entry)> = cases
        .iter()
        .filter_map(|c| c.card.as_ref().map(|e| (*c, e)))
        .filter(|(_, e)| kind.is_none_or(|k| e.kind == k))
        .collect();
    rows.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    rows
}

/// Characters the title column of the card takes at most; a longer title is cut with `…`.
const TITLE: usize = 50;

fn cell(text: &str, width: usize) -> String {
    let n = text.chars().count();
    if n <= width {
        format!("{text}{}", " ".repeat(width - n))
    } else {
        let mut t: String = text.chars().take(width - 1).collect();
        t.push('…');
        t
    }
}

/// The card of one loop (`who`: the command or the profile) over the suite at `suite`.
pub fn render(who: &str, suite: &str, cases: &[&CaseResult]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "report card: {who} ({} cases of {suite})\n",
        rows(cases, None).len()
    );
    // The tool column, for an agent's card: as wide as its longest entry.
    let tool_of = |e: &crate::results::card::Entry| e.tools.join(", ");
    let tools = rows(cases, None)
        .iter()
        .map(|(_, e)| tool_of(e).chars().count())
        .max()
        .filter(|w| *w > 0)
        .map(|w| w.max("tool".len()));
    for (kind, heading) in [
        (SuiteKind::Failure, "failure modes"),
        (SuiteKind::Legitimate, "legitimate work"),
    ] {
        let tool_head = tools
            .map(|w| format!("{}  ", cell("tool", w)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {} {:>6} {:>9} {:>9}  {tool_head}verdict",
            cell(heading, TITLE),
            "wasted",
            "tokens",
            "cost"
        );
        for (c, e) in rows(cases, Some(kind)) {
            // The verdict last and whole: nothing of why is cut off.
            let tool = tools
                .map(|w| format!("{}  ", cell(&tool_of(e), w)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "  {} {:>6} {:>9} {:>9}  {tool}{}",
                cell(&e.title, TITLE),
                c.row.wasted_iterations,
                c.row.input_tokens + c.row.output_tokens,
                format!("${:.4}", c.row.cost_usd),
                match &e.last_output {
                    Some(last) => format!("{}; its last output: «{last}»", e.verdict.describe()),
                    None => e.verdict.describe(),
                }
            );
        }
        out.push('\n');
    }
    let _ = writeln!(out, "{}", score(cases.iter().copied()).line());
    out
}

/// The cards as JUnit XML: one testsuite per card (the loop), one testcase per suite case (its
/// title; classname the case id), failed when its verdict scores no point, with the verdict as
/// the failure's message and type. No timestamps or host names.
pub fn junit(cards: &[(String, Vec<&CaseResult>)]) -> String {
    use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};
    let mut report = Report::new("harness suite");
    for (who, cases) in cards {
        let mut suite = TestSuite::new(who.as_str());
        for (c, e) in rows(cases, None) {
            let status = if e.verdict.good() {
                TestCaseStatus::success()
            } else if !e.verdict.judged() {
                // No verdict on the loop: skipped, with the reason.
                let mut s = TestCaseStatus::skipped();
                s.set_message(e.verdict.describe())
                    .set_type(e.verdict.name());
                s
            } else {
                let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
                s.set_message(e.verdict.describe())
                    .set_type(e.verdict.name());
                s
            };
            let mut tc = TestCase::new(e.title.as_str(), status);
            tc.set_classname(c.id.as_str())
                .set_time(std::time::Duration::from_millis(c.row.virtual_ms));
            suite.add_test_case(tc);
        }
        let time = suite.test_cases.iter().filter_map(|c| c.time).sum();
        suite.set_time(time);
        report.add_test_suite(suite);
    }
    super::junit::finish(report)
}

/// The cards as one self-contained page (the run report's frame: inline style, no script that
/// does anything, a policy that lets nothing load): per card a table of the cases under their
/// kind, each row marked by whether it scores, then the score.
pub fn html(cards: &[(String, Vec<&CaseResult>)], suite: &str) -> String {
    use super::html::escape;
    let mut body = String::from(
        "<style>.card td.verdict.good{color:#1a7f37}.card td.verdict.bad{color:#cf222e}.card td.verdict.unjudged{color:#6e7781}\
         .card td.n{text-align:right;font-variant-numeric:tabular-nums}.card h3{margin-top:1.2em}</style>\n",
    );
    let _ = writeln!(
        body,
        "<h1>Report card</h1>\n<p>The failure-mode suite <code>{}</code>: per failure mode, whether the loop recovered; per legitimate run, whether it let it finish.</p>",
        escape(suite)
    );
    for (who, cases) in cards {
        let _ = writeln!(body, "<section class=\"card\">\n<h2>{}</h2>", escape(who));
        for (kind, heading) in [
            (SuiteKind::Failure, "Failure modes"),
            (SuiteKind::Legitimate, "Legitimate work"),
        ] {
            let _ = writeln!(
                body,
                "<h3>{heading}</h3>\n<table>\n<thead><tr><th>case</th><th>verdict</th><th>wasted</th><th>tokens</th><th>cost</th></tr></thead>\n<tbody>"
            );
            for (c, e) in rows(cases, Some(kind)) {
                let _ = writeln!(
                    body,
                    "<tr data-case=\"{}\"><td title=\"{}\">{}</td><td class=\"verdict {}\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">${:.4}</td></tr>",
                    escape(&c.id),
                    escape(&c.id),
                    escape(&e.title),
                    if e.verdict.good() {
                        "good"
                    } else if e.verdict.judged() {
                        "bad"
                    } else {
                        "unjudged"
                    },
                    escape(&e.verdict.describe()),
                    c.row.wasted_iterations,
                    c.row.input_tokens + c.row.output_tokens,
                    c.row.cost_usd
                );
            }
            body.push_str("</tbody>\n</table>\n");
        }
        let _ = writeln!(
            body,
            "<p class=\"score\">{}</p>\n</section>",
            escape(&score(cases.iter().copied()).line())
        );
    }
    super::html::page("harness report card", &body, "", "")
}

/// A loop's totals over its cards: the score, and what it spent.
struct Totals {
    score: Score,
    wasted: u64,
    tokens: u64,
    cost: f64,
}

impl Totals {
    /// The summary row's cells after the loop's name: score, failure modes recovered,
    /// legitimate runs finished, cases not judged, wasted iterations, tokens, cost.
    fn cells(&self) -> [String; 7] {
        let s = &self.score;
        [
            format!("{}/{}", s.points(), s.cases()),
            format!("{}/{}", s.recovered, s.failures),
            format!("{}/{}", s.finished, s.legitimate),
            (s.not_exercised + s.not_driven).to_string(),
            self.wasted.to_string(),
            self.tokens.to_string(),
            format!("${:.4}", self.cost),
        ]
    }

    fn of(cases: &[&CaseResult]) -> Self {
        let carded = || cases.iter().filter(|c| c.card.is_some());
        Self {
            score: score(cases.iter().copied()),
            wasted: carded().map(|c| u64::from(c.row.wasted_iterations)).sum(),
            tokens: carded()
                .map(|c| c.row.input_tokens + c.row.output_tokens)
                .sum(),
            cost: carded().map(|c| c.row.cost_usd).sum(),
        }
    }
}

/// The rows of a scorecard of `kind`: every case of this kind any loop has, by key, with the
/// title the first loop gives; sorted by key.
fn matrix_rows<'a>(
    loops: &'a [(String, Vec<&'a CaseResult>)],
    kind: SuiteKind,
) -> Vec<(&'a str, &'a str)> {
    let mut rows: Vec<(&str, &str)> = Vec::new();
    for (_, cases) in loops {
        for c in cases {
            let Some(e) = &c.card else { continue };
            if e.kind == kind && !rows.iter().any(|(k, _)| *k == row_key(&c.id)) {
                rows.push((row_key(&c.id), e.title.as_str()));
            }
        }
    }
    rows.sort_by(|a, b| a.0.cmp(b.0));
    rows
}

/// The scorecard as one self-contained page: the summary table (score, what was not
/// exercised, wasted iterations, tokens, cost per loop), then per case kind a matrix of cases
/// by loops whose cells give the verdict short, with the iteration, and whole on hover; then,
/// per loop, the verdicts that scored no point, in words.
pub fn scorecard_html(loops: &[(String, Vec<&CaseResult>)], suite: &str, preface: &str) -> String {
    use super::html::escape;
    let mut body = String::from(
        "<style>.scorecard td.good{color:#1a7f37}.scorecard td.bad{color:#cf222e}\
         .scorecard td.unjudged{color:#6e7781}.scorecard td.n{text-align:right;font-variant-numeric:tabular-nums}\
         .scorecard td.cell{white-space:nowrap}.scorecard h2{margin-top:1.4em}.preface{white-space:pre-wrap}</style>\n",
    );
    let _ = writeln!(
        body,
        "<h1>Scorecard</h1>\n<p>The failure-mode suite <code>{}</code>: per failure mode, whether each loop recovered and at which iteration; per legitimate run, whether it let it finish. A case the loop did not exercise, or that could not drive it, scores nothing and counts in no total.</p>",
        escape(suite)
    );
    if !preface.trim().is_empty() {
        let _ = writeln!(
            body,
            "<pre class=\"preface\">{}</pre>",
            escape(preface.trim_end())
        );
    }
    body.push_str("<section class=\"scorecard\">\n<h2>Summary</h2>\n<table>\n<thead><tr><th>loop</th><th>score</th><th>failure modes recovered</th><th>legitimate runs finished</th><th>not exercised or driven</th><th>wasted iterations</th><th>tokens</th><th>cost</th></tr></thead>\n<tbody>\n");
    for (who, cases) in loops {
        let cells: String = Totals::of(cases)
            .cells()
            .iter()
            .map(|c| format!("<td class=\"n\">{}</td>", escape(c)))
            .collect();
        let _ = writeln!(body, "<tr><td>{}</td>{cells}</tr>", escape(who));
    }
    body.push_str("</tbody>\n</table>\n");
    for (kind, heading) in [
        (SuiteKind::Failure, "Failure modes"),
        (SuiteKind::Legitimate, "Legitimate work"),
    ] {
        let rows = matrix_rows(loops, kind);
        if rows.is_empty() {
            continue;
        }
        let _ = write!(
            body,
            "<h2>{heading}</h2>\n<table>\n<thead><tr><th>case</th>"
        );
        for (who, _) in loops {
            let _ = write!(body, "<th>{}</th>", escape(who));
        }
        body.push_str("</tr></thead>\n<tbody>\n");
        for (key, title) in rows {
            let _ = write!(
                body,
                "<tr data-case=\"{}\"><td title=\"{}\">{}</td>",
                escape(key),
                escape(key),
                escape(title)
            );
            for (_, cases) in loops {
                let found = card_of(cases, key);
                match found {
                    Some(e) => {
                        let class = if e.verdict.good() {
                            "good"
                        } else if e.verdict.judged() {
                            "bad"
                        } else {
                            "unjudged"
                        };
                        let _ = write!(
                            body,
                            "<td class=\"cell {class}\" title=\"{}\">{}</td>",
                            escape(&e.verdict.describe()),
                            escape(&cell_of(&e.verdict))
                        );
                    }
                    None => body.push_str("<td></td>"),
                }
            }
            body.push_str("</tr>\n");
        }
        body.push_str("</tbody>\n</table>\n");
    }
    body.push_str("<h2>What each loop scored no point on</h2>\n");
    for (who, cases) in loops {
        let missed = missed(cases);
        let _ = writeln!(body, "<h3>{}</h3>", escape(who));
        if missed.is_empty() {
            body.push_str("<p>Every case scored.</p>\n");
            continue;
        }
        body.push_str("<ul>\n");
        for (key, verdict) in missed {
            let _ = writeln!(
                body,
                "<li><code>{}</code>: {}</li>",
                escape(key),
                escape(&verdict)
            );
        }
        body.push_str("</ul>\n");
    }
    body.push_str("</section>\n");
    super::html::page("harness scorecard", &body, "", "")
}

/// The card of a loop's case by its row key, if the loop has one.
fn card_of<'a>(cases: &[&'a CaseResult], key: &str) -> Option<&'a crate::results::card::Entry> {
    cases
        .iter()
        .find(|c| row_key(&c.id) == key)
        .and_then(|c| c.card.as_ref())
}

/// A loop's cases that scored no point, by row key: the key and the verdict in words.
fn missed<'a>(cases: &[&'a CaseResult]) -> Vec<(&'a str, String)> {
    let mut missed: Vec<(&str, String)> = cases
        .iter()
        .filter_map(|c| {
            let e = c.card.as_ref().filter(|e| !e.verdict.good())?;
            Some((row_key(&c.id), e.verdict.describe()))
        })
        .collect();
    missed.sort_by(|a, b| a.0.cmp(b.0));
    missed
}

/// A verdict in a scorecard cell: `✓ k` scores (recovered or finished at iteration k), `✗ …`
/// does not, `–` the case could not drive the loop.
fn cell_of(v: &crate::results::card::Verdict) -> String {
    use crate::results::card::Verdict;
    match v {
        Verdict::Recovered(k) | Verdict::Finished(k) => format!("✓ {k}"),
        Verdict::LoopedToCap(k) => format!("✗ cap {k}"),
        Verdict::EndedWithout { at, .. } => format!("✗ no answer {at}"),
        Verdict::GaveUp { at, .. } => format!("✗ gave up {at}"),
        Verdict::Crashed(_) => "✗ crashed".to_owned(),
        Verdict::Hung(_) => "✗ hung".to_owned(),
        Verdict::WronglyStopped { at, .. } => format!("✗ stopped {at}"),
        Verdict::NotDriven(_) => "– not driven".to_owned(),
        Verdict::NotExercised(_) => "– not exercised".to_owned(),
    }
}

/// A suite case's row key: its scenario's file stem (the case id without folders and label),
/// so the same scenario matches across loops whatever path each run named the suite by.
pub fn row_key(id: &str) -> &str {
    let scenario = id.rsplit_once('@').map_or(id, |(s, _)| s);
    scenario.rsplit('/').next().unwrap_or(scenario)
}

/// Text for a line or table cell of the Markdown scorecard. Labels, titles, an agent's words
/// and tool names are not harness's, and must not become markup (an `<img>`, a link, bold):
/// outside code spans, Markdown's and HTML's punctuation is escaped; a code span stays code,
/// its content literal. Only single backticks open and close a span, paired in order (as
/// CommonMark pairs runs of equal length); a longer run, and a single backtick without its
/// pair, is escaped backtick by backtick. `|` is escaped everywhere (a table cell), a newline
/// is a space, and a control, bidirectional or invisible character is U+FFFD.
fn md(text: &str) -> String {
    let text: String = text
        .chars()
        .map(|c| match c {
            '\n' | '\r' => ' ',
            c if crate::escape::is_unsafe(c) => '\u{fffd}',
            c => c,
        })
        .collect();
    // The backtick runs: (start, length) in bytes.
    let bytes = text.as_bytes();
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let start = i;
            while i < bytes.len() && bytes[i] == b'`' {
                i += 1;
            }
            runs.push((start, i - start));
        } else {
            i += 1;
        }
    }
    // Single backticks pair in order; an odd one out is text.
    let singles: Vec<usize> = runs.iter().filter(|r| r.1 == 1).map(|r| r.0).collect();
    let delimiters: Vec<usize> = singles[..singles.len() - singles.len() % 2].to_vec();
    let mut out = String::with_capacity(text.len() + 8);
    let mut code = false;
    for (at, c) in text.char_indices() {
        if c == '`' {
            if delimiters.binary_search(&at).is_ok() {
                code = !code;
                out.push('`');
            } else if code {
                out.push('`');
            } else {
                out.push_str("\\`");
            }
            continue;
        }
        match c {
            '|' => out.push_str("\\|"),
            '\\' | '*' | '_' | '[' | ']' | '<' | '>' | '!' | '~' | '#' | '&' if !code => {
                out.push('\\');
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

/// Text put inside a code span of the Markdown scorecard (a case's file stem): no backtick can
/// end the span early, no `|` can end the cell.
fn md_code(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
        .replace('`', "'")
        .replace('|', "\\|")
}

/// The scorecard: several loops' cards side by side, as Markdown — a summary table (score,
/// wasted iterations, tokens, cost per loop), then per case kind a table with a row per case
/// and a column per loop, then per loop the cases it scored no point on, in words.
pub fn scorecard(loops: &[(String, Vec<&CaseResult>)]) -> String {
    let mut out = String::new();
    out.push_str("| loop | score | failure modes recovered | legitimate runs finished | not exercised or driven | wasted iterations | tokens | cost |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (who, cases) in loops {
        let _ = writeln!(
            out,
            "| {} | {} |",
            md(who),
            Totals::of(cases).cells().join(" | ")
        );
    }
    for (kind, heading) in [
        (SuiteKind::Failure, "Failure modes"),
        (SuiteKind::Legitimate, "Legitimate work"),
    ] {
        let rows = matrix_rows(loops, kind);
        if rows.is_empty() {
            continue;
        }
        let _ = write!(out, "\n### {heading}\n\n| case |");
        for (who, _) in loops {
            let _ = write!(out, " {} |", md(who));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(loops.len()));
        out.push('\n');
        for (key, title) in rows {
            let _ = write!(out, "| {} <sub>`{}`</sub> |", md(title), md_code(key));
            for (_, cases) in loops {
                let found = card_of(cases, key);
                let _ = write!(
                    out,
                    " {} |",
                    found.map_or(String::new(), |e| cell_of(&e.verdict))
                );
            }
            out.push('\n');
        }
    }
    out.push_str("\n### What each loop scored no point on\n");
    for (who, cases) in loops {
        let missed = missed(cases);
        let _ = write!(out, "\n**{}**", md(who));
        if missed.is_empty() {
            out.push_str(": every case scored.\n");
            continue;
        }
        out.push_str("\n\n");
        for (key, verdict) in missed {
            let _ = writeln!(out, "- `{}`: {}", md_code(key), md(&verdict));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::CaseResult;
    use crate::results::card::{Entry, Verdict};
    use crate::snapshot::Comparison;

    fn case(id: &str, kind: SuiteKind, verdict: Verdict) -> CaseResult {
        CaseResult {
            id: id.to_owned(),
            row: crate::metrics::row(id, "suite", "none", Default::default(), &[]),
            golden: Comparison::Ungated,
            pending_written: false,
            expectation_failures: Vec::new(),
            io_errors: Vec::new(),
            line: 1,
            runs: 1,
            passes: 1,
            detail: None,
            card: Some(Entry {
                title: format!("title of {id}"),
                kind,
                verdict,
                tools: Vec::new(),
                others: Vec::new(),
                last_output: None,
                basis: None,
            }),
        }
    }

    #[test]
    fn what_harness_did_not_write_never_becomes_markup() {
        assert_eq!(
            md("<img src=x onerror=alert(1)> [a](http://e) **b**"),
            "\\<img src=x onerror=alert(1)\\> \\[a\\](http://e) \\*\\*b\\*\\*"
        );
        // Code spans stay code: their content is literal, so it is left as it is.
        assert_eq!(
            md("the valid call `write_stdin` failed: <b>"),
            "the valid call `write_stdin` failed: \\<b\\>"
        );
        // A lone backtick cannot open a span that swallows the rest; cells stay cells.
        assert_eq!(md("a`b|c\nd"), "a\\`b\\|c d");
        // Only single backticks pair: a run of three opens no span, so what follows it is
        // escaped (a renderer would otherwise read `<img>` there as HTML).
        assert_eq!(md("```<img src=x>`"), "\\`\\`\\`\\<img src=x\\>\\`");
        assert_eq!(md("`a``b` <i>"), "`a``b` \\<i\\>");
        assert_eq!(md("x\u{1b}[2J\u{202e}y"), "x\u{fffd}\\[2J\u{fffd}y");
        assert_eq!(md_code("x`y|z"), "x'y\\|z");
        let loops = [("<b>mine</b>".to_owned(), vec![])];
        let text = scorecard(&loops);
        assert!(text.contains("| \\<b\\>mine\\</b\\> |"), "{text}");
        assert!(!text.contains("<b>"), "{text}");
    }

    #[test]
    fn the_card_lists_each_case_under_its_kind_and_scores_them() {
        let cases = [
            case("s/b", SuiteKind::Failure, Verdict::LoopedToCap(25)),
            case("s/a", SuiteKind::Failure, Verdict::Recovered(4)),
            case("s/c", SuiteKind::Legitimate, Verdict::Finished(5)),
            case(
                "s/d",
                SuiteKind::Legitimate,
                Verdict::WronglyStopped {
                    at: 3,
                    by: "moltis-reflex (nudge)".into(),
                },
            ),
        ];
        let refs: Vec<&CaseResult> = cases.iter().collect();
        let card = render("moltis", "scenarios/suite", &refs);
        assert!(
            card.starts_with("report card: moltis (4 cases of scenarios/suite)\n"),
            "{card}"
        );
        let at = |needle: &str| {
            card.find(needle)
                .unwrap_or_else(|| panic!("{needle} in\n{card}"))
        };
        // Failure modes first, each kind sorted by case id.
        assert!(at("title of s/a") < at("title of s/b"));
        assert!(at("title of s/b") < at("legitimate work"));
        assert!(at("legitimate work") < at("title of s/c"));
        assert!(card.contains("recovered at iteration 4"));
        assert!(card.contains("wrongly stopped at iteration 3, by moltis-reflex (nudge)"));
        assert!(card.trim_end().ends_with(
            "score 2/4: 1 of 2 failure modes recovered, 1 of 2 legitimate runs finished"
        ));
        // The JUnit form: a testcase per case, failed when it scores no point.
        let xml = junit(&[("moltis".to_owned(), refs.clone())]);
        assert!(
            xml.contains(r#"<testsuite name="moltis" tests="4""#),
            "{xml}"
        );
        assert!(xml.contains(r#"failures="2""#), "{xml}");
        assert!(
            xml.contains(r#"type="looped_to_cap""#)
                && xml.contains("looped to the cap (25 iterations)"),
            "{xml}"
        );
        // The page: a row per case, escaped, marked by whether it scores.
        let page = html(
            &[("moltis <b>".to_owned(), refs.clone())],
            "scenarios/suite",
        );
        assert_eq!(page.matches("<tr data-case=").count(), 4);
        assert_eq!(page.matches("class=\"verdict good\"").count(), 2);
        assert!(page.contains("<h2>moltis &lt;b&gt;</h2>"), "{page}");
        assert!(page.contains("score 2/4: 1 of 2 failure modes recovered"));
        // A case without a card counts for nothing.
        let mut plain = case("s/e", SuiteKind::Failure, Verdict::Hung(String::new()));
        plain.card = None;
        assert_eq!(score([&plain]), Score::default());
    }
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "a test sets up and reads its files, clocks and threads itself"
)]
mod published {
    /// `docs/scorecard.html` is made by [`super::scorecard_html`]: its frame (style, heading, the words
    /// before the first card) must be the current one, or the conformance suite's byte-for-byte
    /// check fails far from the change that caused it (a rule added to the report's stylesheet).
    #[test]
    fn the_published_scorecard_page_has_the_current_frame() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/scorecard.html");
        let published = std::fs::read_to_string(&path).unwrap_or_default();
        let current = super::scorecard_html(&[], "suite", "");
        let cut = |page: &str, at: &str| page.find(at).map(|i| page[..i].trim_end().to_owned());
        let published_frame = cut(&published, "<pre class=\"preface\">").unwrap_or_default();
        let current_frame = cut(&current, "<section class=\"scorecard\">").unwrap_or_default();
        assert!(
            !published_frame.is_empty(),
            "{} holds no card",
            path.display()
        );
        let differs_at = published_frame
            .bytes()
            .zip(current_frame.bytes())
            .position(|(a, b)| a != b)
            .unwrap_or(published_frame.len().min(current_frame.len()));
        assert!(
            published_frame == current_frame,
            "docs/scorecard.html is behind the page frame from byte {differs_at} ({:?}): run tests/conformance/run --bless",
            current_frame
                .get(differs_at..)
                .map(|t| t.chars().take(60).collect::<String>())
        );
    }
}
