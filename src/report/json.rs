//! The JSON results (`--json FILE`), versioned: every file's cases with their metrics, golden
//! verdicts, diffs and expectation failures, located errors, orphaned goldens and the counts.
//! It holds everything the other outputs are made from, so `harness merge` rebuilds from the
//! shards' files exactly what a single run writes.
//!
//! Each case also carries its scenario's `tags` and its `trace` (the events, one per line, as
//! `--traces` writes them), so `harness report` and `harness merge` can draw the HTML report
//! from saved results. Both fields are optional: files written before them still read (their
//! report says the trace is not there), and readers that do not know them skip them, so the
//! version stays 1.

use super::{Collected, Tally};
use crate::diagnostic::{Cause, Diagnostic, parse_error};
use crate::metrics::Row;
use crate::results::{CaseResult, ExitStatus, FileResult};
use crate::snapshot::Comparison;
use crate::trace::TimedEvent;
use serde::{Deserialize, Serialize};
use std::io;
use std::path::PathBuf;

/// Version of the JSON results; readers refuse others.
pub const VERSION: u32 = 1;

/// More cases than any run holds (a `stopped` count past it is no run's).
const MAX_CASES: usize = 1 << 40;

#[derive(Serialize, Deserialize)]
struct Results {
    version: u32,
    files: Vec<File>,
    #[serde(serialize_with = "lossy_paths")]
    orphans: Vec<PathBuf>,
    /// A run a stop signal ended early (`harness suite`); absent when it ran to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stopped: Option<super::Stopped>,
    /// Derived from the rest; not read back.
    #[serde(default, skip_deserializing)]
    summary: Option<Summary>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(serialize_with = "lossy_path")]
    path: PathBuf,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    unreadable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cases: Option<Vec<Case>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    errors: Option<Vec<Error>>,
}

/// A path as JSON text: one that is not UTF-8 is written with U+FFFD for what is not (JSON
/// has no other way), never left out.
fn lossy_path<S: serde::Serializer>(p: &std::path::Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&p.to_string_lossy())
}

fn lossy_paths<S: serde::Serializer>(ps: &[PathBuf], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(ps.iter().map(|p| p.to_string_lossy()))
}

#[derive(Serialize, Deserialize)]
struct Case {
    id: String,
    line: usize,
    /// `passed`, `failed` or `flaky`; derived, not read back.
    #[serde(default)]
    status: String,
    /// `match`, `missing`, `differs` or `ungated`.
    golden: String,
    /// The unified diff golden → actual when `differs`; when `missing`, the new golden as a
    /// diff against nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    diff: Option<String>,
    pending_written: bool,
    expectation_failures: Vec<String>,
    io_errors: Vec<String>,
    runs: u32,
    passes: u32,
    /// One run passed; derived, not read back.
    #[serde(default)]
    pass_at_k: bool,
    /// Every run passed; derived, not read back.
    #[serde(default)]
    pass_all_k: bool,
    metrics: serde_json::Value,
    /// The scenario's tags (with the trace).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
    /// The conversation's opening system and user messages (with the trace).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    system: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    user: String,
    /// The run's events, when the run kept them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    trace: Option<Vec<TimedEvent>>,
    /// The report card's reading, for a suite case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    card: Option<CardJson>,
}

/// A suite case's line on the report card (`harness suite`).
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct CardJson {
    title: String,
    /// `failure` or `legitimate`.
    kind: crate::scenario::SuiteKind,
    /// `recovered`, `finished`, `looped_to_cap`, `ended_without_answer`, `gave_up`, `crashed`,
    /// `hung`, `wrongly_stopped`, `not_driven` or `not_exercised`.
    verdict: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iteration: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    detail: Option<String>,
    /// It scores a point; derived, not read back.
    #[serde(default)]
    good: bool,
    /// The agent's tools the case's portable tools stood for, in the scenario's order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tools: Vec<String>,
    /// The case's other conversations (side requests, earlier attempts), each in words.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    others: Vec<String>,
    /// What the verdict was read from besides the trace (absent in files written before it
    /// was kept): `harness scorecard` reads the verdict again from these and the trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    basis: Option<BasisJson>,
}

/// A card's [`crate::results::card::Basis`].
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BasisJson {
    /// The suite's `answer`.
    answer: String,
    /// The suite's `premise`, when it asks anything.
    #[serde(default, skip_serializing_if = "is_default_premise")]
    premise: crate::scenario::Premise,
    /// The scenario's portable tools.
    portable: u32,
    /// How the loop's process ended: `engine`, `exit N`, `signal` or `killed`.
    end: String,
}

fn is_default_premise(p: &crate::scenario::Premise) -> bool {
    *p == crate::scenario::Premise::default()
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Error {
    line: usize,
    col: usize,
    message: String,
    hint: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Summary {
    files: u64,
    cases: u64,
    passed: u64,
    failed: u64,
    flaky: u64,
    golden_mismatches: u64,
    missing_goldens: u64,
    expectation_failures: u64,
    invalid_files: u64,
    orphaned_goldens: usize,
    exit_code: u8,
}

fn case_json(c: &CaseResult) -> Case {
    let (golden, diff) = match &c.golden {
        Comparison::Match => ("match", None),
        Comparison::Missing(d) => ("missing", Some(d.clone())),
        Comparison::Differs(d) => ("differs", Some(d.clone())),
        Comparison::Ungated => ("ungated", None),
    };
    let mut metrics = serde_json::to_value(&c.row).unwrap_or_default();
    // The CSV writes six decimals; the JSON keeps the exact figure, so sums stay identical.
    metrics["cost_usd"] = serde_json::json!(c.row.cost_usd);
    Case {
        id: c.id.clone(),
        line: c.line,
        status: if c.passed() {
            "passed"
        } else if c.flaky() {
            "flaky"
        } else {
            "failed"
        }
        .to_owned(),
        golden: golden.to_owned(),
        diff,
        pending_written: c.pending_written,
        expectation_failures: c.expectation_failures.clone(),
        io_errors: c.io_errors.clone(),
        runs: c.runs,
        passes: c.passes,
        pass_at_k: crate::results::repeat::pass_at_k(c),
        pass_all_k: crate::results::repeat::pass_all_k(c),
        metrics,
        tags: c
            .detail
            .as_ref()
            .map(|d| d.tags.clone())
            .unwrap_or_default(),
        system: c
            .detail
            .as_ref()
            .map(|d| d.system.clone())
            .unwrap_or_default(),
        user: c
            .detail
            .as_ref()
            .map(|d| d.user.clone())
            .unwrap_or_default(),
        trace: c.detail.as_ref().map(|d| d.events.clone()),
        card: c.card.as_ref().map(|e| {
            let (verdict, iteration, detail) = e.verdict.parts();
            CardJson {
                title: e.title.clone(),
                kind: e.kind,
                verdict: verdict.to_owned(),
                iteration,
                detail,
                good: e.verdict.good(),
                tools: e.tools.clone(),
                others: e.others.clone(),
                basis: e.basis.as_ref().map(|b| BasisJson {
                    answer: b.answer.clone(),
                    premise: b.premise.clone(),
                    portable: b.portable,
                    end: b.end.as_text(),
                }),
            }
        }),
    }
}

/// A trace read back holds what a run can give: at most [`MAX_TRACE_EVENTS`] events, times
/// within [`MAX_VIRTUAL_MS`] that never go back. Checked before a report allocates anything
/// from it (a page's time axis is as long as its last time).
///
/// [`MAX_TRACE_EVENTS`]: crate::limits::MAX_TRACE_EVENTS
/// [`MAX_VIRTUAL_MS`]: crate::limits::MAX_VIRTUAL_MS
fn check_trace(events: &[crate::trace::TimedEvent]) -> Result<(), String> {
    use crate::limits::{MAX_TRACE_EVENTS, MAX_VIRTUAL_MS};
    if events.len() > MAX_TRACE_EVENTS {
        return Err(format!(
            "{} events, over the limit of {MAX_TRACE_EVENTS} for one run",
            events.len()
        ));
    }
    let mut last = 0;
    for (i, e) in events.iter().enumerate() {
        if e.t_ms > MAX_VIRTUAL_MS {
            return Err(format!(
                "event {} is at t_ms {}, over the limit of {MAX_VIRTUAL_MS} for one run",
                i + 1,
                e.t_ms
            ));
        }
        if e.t_ms < last {
            return Err(format!(
                "event {} is at t_ms {}, before the event ahead of it ({last}); a run's clock never goes back",
                i + 1,
                e.t_ms
            ));
        }
        last = e.t_ms;
    }
    Ok(())
}

/// A case read back; what is wrong with it, and its kind.
fn case_back(c: Case) -> Result<CaseResult, (String, Cause)> {
    let golden = match (c.golden.as_str(), c.diff) {
        ("match", _) => Comparison::Match,
        // Results written before new goldens carried their text have no diff.
        ("missing", d) => Comparison::Missing(d.unwrap_or_default()),
        ("differs", Some(d)) => Comparison::Differs(d),
        ("ungated", _) => Comparison::Ungated,
        ("differs", None) => {
            return Err((
                format!("case `{}`: golden `differs` without its `diff`", c.id),
                Cause::Other,
            ));
        }
        (g, _) => {
            return Err((
                format!("case `{}`: unknown golden verdict `{g}`", c.id),
                Cause::Other,
            ));
        }
    };
    let row: Row = serde_json::from_value(c.metrics).map_err(|e| {
        let message = e.to_string();
        let cause = Cause::of_serde(&message);
        (format!("case `{}`: metrics: {message}", c.id), cause)
    })?;
    crate::metrics::check_row(&row)
        .map_err(|e| (format!("case `{}`: metrics: {e}", c.id), Cause::Figure))?;
    if let Some(events) = &c.trace {
        check_trace(events).map_err(|e| (format!("case `{}`: trace: {e}", c.id), Cause::Figure))?;
    }
    if c.runs == 0 || c.passes > c.runs {
        return Err((
            format!("case `{}`: {} passes of {} runs", c.id, c.passes, c.runs),
            Cause::Inconsistent,
        ));
    }
    let card = match c.card {
        None => None,
        Some(card) => Some(crate::results::card::Entry {
            title: card.title,
            kind: card.kind,
            verdict: crate::results::card::Verdict::from_parts(
                &card.verdict,
                card.iteration,
                card.detail,
            )
            .ok_or_else(|| {
                (
                    format!(
                        "case `{}`: card verdict `{}` with these fields is none harness writes",
                        c.id, card.verdict
                    ),
                    Cause::Other,
                )
            })?,
            tools: card.tools,
            others: card.others,
            last_output: None,
            basis: match card.basis {
                None => None,
                Some(b) => Some(crate::results::card::Basis {
                    end: crate::results::card::End::from_text(&b.end).ok_or_else(|| {
                        (
                            format!(
                                "case `{}`: card end `{}` is none harness writes (`engine`, `exit N`, `signal`, `killed`)",
                                c.id, b.end
                            ),
                            Cause::Other,
                        )
                    })?,
                    answer: b.answer,
                    premise: b.premise,
                    portable: b.portable,
                }),
            },
        }),
    };
    let r = CaseResult {
        id: c.id,
        row,
        golden,
        pending_written: c.pending_written,
        expectation_failures: c.expectation_failures,
        io_errors: c.io_errors,
        line: c.line,
        runs: c.runs,
        passes: c.passes,
        detail: c.trace.map(|events| {
            Box::new(crate::results::Detail {
                tags: c.tags,
                system: c.system,
                user: c.user,
                events,
            })
        }),
        card,
    };
    // A run writes a case whose runs did not all pass with a failing run's verdict.
    if r.passed() != (r.passes == r.runs) {
        return Err((
            format!(
                "case `{}`: {} of {} runs passed, but its verdict says {}",
                r.id,
                r.passes,
                r.runs,
                if r.passed() { "passed" } else { "failed" }
            ),
            Cause::Inconsistent,
        ));
    }
    Ok(r)
}

fn file_json(f: &FileResult, unreadable: bool) -> File {
    let (cases, errors) = match &f.outcome {
        Ok(cases) => (Some(cases.iter().map(case_json).collect()), None),
        Err(diags) => (
            None,
            Some(
                diags
                    .iter()
                    .map(|d| Error {
                        line: d.line(),
                        col: d.col(),
                        message: d.message.clone(),
                        hint: d.hint.clone(),
                    })
                    .collect(),
            ),
        ),
    };
    File {
        path: f.path.clone(),
        unreadable,
        cases,
        errors,
    }
}

fn file_back(f: File) -> Result<FileResult, (String, Cause)> {
    let outcome = match (f.cases, f.errors) {
        (Some(cases), None) => Ok(cases
            .into_iter()
            .map(case_back)
            .collect::<Result<Vec<_>, _>>()?),
        (None, Some(errors)) => Err(errors
            .into_iter()
            .map(|e| Diagnostic::at(e.line, e.col, e.message).maybe_hint(e.hint))
            .collect()),
        _ => {
            return Err((
                format!(
                    "file `{}`: needs exactly one of `cases` and `errors`",
                    f.path.display()
                ),
                Cause::Other,
            ));
        }
    };
    Ok(FileResult {
        path: f.path,
        outcome,
    })
}

fn summary(t: &Tally) -> Summary {
    Summary {
        files: t.files,
        cases: t.cases,
        passed: t.passed,
        failed: t.cases - t.passed - t.flaky,
        flaky: t.flaky,
        golden_mismatches: t.mismatched,
        missing_goldens: t.missing,
        expectation_failures: t.expectation_failures,
        invalid_files: t.invalid_files,
        orphaned_goldens: t.orphans.len(),
        exit_code: t.exit_code().code(),
    }
}

/// The JSON results of a run, pretty-printed, ending in a newline.
pub fn render(c: &Collected) -> String {
    render_exiting(c, c.tally().exit_code())
}

/// [`render`] of a command whose exit status is not the run's alone (`harness suite`: the
/// card was made, or its score is below `--min-score`): the summary says `exit`.
pub fn render_exiting(c: &Collected, exit: ExitStatus) -> String {
    let mut summary = summary(&c.tally());
    summary.exit_code = exit.code();
    let results = Results {
        version: VERSION,
        files: c
            .unreadable
            .iter()
            .map(|f| file_json(f, true))
            .chain(c.files.iter().map(|f| file_json(f, false)))
            .collect(),
        orphans: c.orphans.clone(),
        stopped: c.stopped.clone(),
        summary: Some(summary),
    };
    let mut out = Vec::with_capacity(4096);
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Layout::default());
    if results.serialize(&mut ser).is_err() {
        return String::new();
    }
    let mut text = String::from_utf8(out).unwrap_or_default();
    text.push('\n');
    text
}

/// Containers nested this deep (the root is 1) are written on one line: each trace event is
/// one line, as in `--traces`, while everything above is pretty-printed as before traces
/// were kept.
const ONE_LINE_FROM: usize = 7;

/// serde_json's pretty layout down to [`ONE_LINE_FROM`], compact below it.
#[derive(Default)]
struct Layout {
    pretty: serde_json::ser::PrettyFormatter<'static>,
    /// Containers open.
    depth: usize,
}

impl Layout {
    fn inline(&self) -> bool {
        self.depth >= ONE_LINE_FROM
    }
}

impl serde_json::ser::Formatter for Layout {
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        if self.inline() {
            w.write_all(b"[")
        } else {
            self.pretty.begin_array(w)
        }
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let inline = self.inline();
        self.depth -= 1;
        if inline {
            w.write_all(b"]")
        } else {
            self.pretty.end_array(w)
        }
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if self.inline() {
            if first { Ok(()) } else { w.write_all(b",") }
        } else {
            self.pretty.begin_array_value(w, first)
        }
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.inline() {
            Ok(())
        } else {
            self.pretty.end_array_value(w)
        }
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        if self.inline() {
            w.write_all(b"{")
        } else {
            self.pretty.begin_object(w)
        }
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let inline = self.inline();
        self.depth -= 1;
        if inline {
            w.write_all(b"}")
        } else {
            self.pretty.end_object(w)
        }
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        if self.inline() {
            if first { Ok(()) } else { w.write_all(b",") }
        } else {
            self.pretty.begin_object_key(w, first)
        }
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.inline() {
            w.write_all(b":")
        } else {
            self.pretty.begin_object_value(w)
        }
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        if self.inline() {
            Ok(())
        } else {
            self.pretty.end_object_value(w)
        }
    }
}

/// Read JSON results back (for `harness merge`); the error says what is wrong and where.
pub fn parse(text: &str) -> Result<Collected, Diagnostic> {
    // A UTF-8 byte-order mark (an editor on Windows saved the file) is no part of the JSON.
    let text = crate::scenario::without_bom(text);
    let results: Results = serde_json::from_str(text).map_err(|e| {
        let message = e
            .to_string()
            .rsplit_once(" at line ")
            .map_or(e.to_string(), |(m, _)| m.to_owned());
        let col = crate::scenario::json_token_start(text, e.line(), e.column()).max(1);
        let d = parse_error(e.line(), col, &message, true);
        match e.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof
                if d.cause != Cause::TooDeep =>
            {
                d.cause(Cause::Syntax)
            }
            _ => d,
        }
    })?;
    if results.version != VERSION {
        return Err(crate::scenario::diagnose_at(
            text,
            crate::scenario::SourceFormat::Json,
            vec![crate::scenario::Seg::Key("version".to_owned())],
            format!(
                "results version {} is not supported (this harness reads version {VERSION})",
                results.version
            ),
            None,
        )
        .cause(Cause::Version));
    }
    if let Some(st) = &results.stopped {
        if st.done > st.of || st.of > MAX_CASES {
            return Err(crate::scenario::diagnose_at(
                text,
                crate::scenario::SourceFormat::Json,
                vec![crate::scenario::Seg::Key("stopped".to_owned())],
                format!(
                    "a run stopped after {} of {} cases: no run does that",
                    st.done, st.of
                ),
                None,
            )
            .cause(Cause::Inconsistent));
        }
    }
    // Each case once: a case given twice would count twice.
    let mut seen: std::collections::BTreeSet<&str> = Default::default();
    for (i, f) in results.files.iter().enumerate() {
        for (j, c) in f.cases.iter().flatten().enumerate() {
            if !seen.insert(c.id.as_str()) {
                return Err(crate::scenario::diagnose_at(
                    text,
                    crate::scenario::SourceFormat::Json,
                    vec![
                        crate::scenario::Seg::Key("files".to_owned()),
                        crate::scenario::Seg::Index(i),
                        crate::scenario::Seg::Key("cases".to_owned()),
                        crate::scenario::Seg::Index(j),
                        crate::scenario::Seg::Key("id".to_owned()),
                    ],
                    format!("case `{}` is in the results more than once", c.id),
                    None,
                )
                .cause(Cause::Inconsistent));
            }
        }
    }
    let mut out = Collected {
        orphans: results.orphans,
        stopped: results.stopped,
        ..Collected::default()
    };
    for (i, f) in results.files.into_iter().enumerate() {
        let unreadable = f.unreadable;
        let f = file_back(f).map_err(|(message, cause)| {
            let at = vec![
                crate::scenario::Seg::Key("files".to_owned()),
                crate::scenario::Seg::Index(i),
            ];
            crate::scenario::diagnose_at(
                text,
                crate::scenario::SourceFormat::Json,
                at,
                message,
                None,
            )
            .cause(cause)
        })?;
        if unreadable {
            out.unreadable.push(f);
        } else {
            out.files.push(f);
        }
    }
    Ok(out)
}
