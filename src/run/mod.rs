//! Orchestration: discover → load → replay in parallel → compare with goldens → judge → hand
//! each file's results, in sorted order, to the reporters. Work goes in chunks so memory stays
//! flat however large the corpus; results are identical for any `--jobs`.

use crate::engine::{self, RunInput, ScriptGap};
use crate::llm::MockModel;
use crate::metrics::{self, Row};
use crate::report::Reporter;
use crate::scenario::{self, Case, Diagnostic, Seg, SourceFormat};
use crate::snapshot::{self, Comparison};
use crate::store::{self, Layout};
use crate::tool::ScriptedTools;
use crate::trace::{self, TimedEvent};
use rayon::prelude::*;
use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

/// Files replayed per parallel chunk.
const CHUNK: usize = 512;

/// What `harness run` was asked to do.
#[derive(Debug, Clone)]
pub struct Options {
    /// Files and folders to run.
    pub paths: Vec<PathBuf>,
    /// Where scenarios and goldens live.
    pub layout: Layout,
    /// Worker threads.
    pub jobs: usize,
    /// Write pending goldens for mismatches (off when `CI` is set).
    pub write_pending: bool,
    /// Also write each run's trace as JSON lines into this folder.
    pub traces: Option<PathBuf>,
    /// Also run every scenario under these profiles (ad hoc, not gated) when it does not
    /// declare them.
    pub also_profiles: Vec<String>,
}

/// One case's result.
#[derive(Debug, Clone)]
pub struct CaseResult {
    /// Case id.
    pub id: String,
    /// Metrics.
    pub row: Row,
    /// Golden comparison.
    pub golden: Comparison,
    /// Whether a pending golden was written.
    pub pending_written: bool,
    /// Expectations that did not hold.
    pub expectation_failures: Vec<String>,
    /// Errors writing pending goldens or traces.
    pub io_errors: Vec<String>,
}

impl CaseResult {
    /// Did the case pass?
    pub fn passed(&self) -> bool {
        matches!(self.golden, Comparison::Match | Comparison::Ungated)
            && self.expectation_failures.is_empty()
            && self.io_errors.is_empty()
    }
}

/// One scenario file's results.
#[derive(Debug, Clone)]
pub struct FileResult {
    /// The file.
    pub path: PathBuf,
    /// Its cases, or why it could not run.
    pub outcome: Result<Vec<CaseResult>, Vec<Diagnostic>>,
}

/// Run everything `options` names, reporting each file's results, then orphaned goldens.
pub fn run(options: &Options, reporter: &mut dyn Reporter) -> io::Result<()> {
    let (files, unreadable) = store::discover(&options.paths);
    for (path, e) in unreadable {
        reporter.file(&FileResult {
            path,
            outcome: Err(vec![Diagnostic {
                line: 1,
                col: 1,
                message: format!("cannot read: {e}"),
                hint: Some(
                    "check the path; `harness run` takes scenario files and folders".to_owned(),
                ),
            }]),
        })?;
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .build()
        .map_err(io::Error::other)?;
    let mut ids: HashSet<String> = HashSet::with_capacity(files.len() * 2);
    for chunk in files.chunks(CHUNK) {
        let results: Vec<FileResult> =
            pool.install(|| chunk.par_iter().map(|f| run_file(options, f)).collect());
        for r in &results {
            if let Ok(cases) = &r.outcome {
                ids.extend(cases.iter().map(|c| c.id.clone()));
            }
            reporter.file(r)?;
        }
    }
    for orphan in orphans(options, &ids) {
        reporter.orphan(&orphan)?;
    }
    reporter.finish()
}

/// Goldens under the folders being run whose case no longer exists.
fn orphans(options: &Options, ids: &HashSet<String>) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in &options.paths {
        if !p.is_dir() {
            continue;
        }
        let Some(mirror) = options.layout.mirror(p) else {
            continue;
        };
        for golden in store::files_with_ext(&mirror, store::GOLDEN_EXT) {
            let Ok(rel) = golden.strip_prefix(&options.layout.snapshots) else {
                continue;
            };
            let id = rel.to_string_lossy().replace('\\', "/");
            let id = id.strip_suffix(".snap").unwrap_or(&id);
            if !ids.contains(id) {
                out.push(golden);
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

fn format_of(path: &Path) -> SourceFormat {
    if path.extension().is_some_and(|e| e == "json") {
        SourceFormat::Json
    } else {
        SourceFormat::Toml
    }
}

fn run_file(options: &Options, path: &Path) -> FileResult {
    if crate::record::is_cassette(path) {
        return cassette_file(options, path);
    }
    let bad = |message: String, hint: &str| FileResult {
        path: path.to_owned(),
        outcome: Err(vec![Diagnostic {
            line: 1,
            col: 1,
            message,
            hint: Some(hint.to_owned()),
        }]),
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => return bad(format!("cannot read: {e}"), "check the file's permissions"),
    };
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let bytes = e.into_bytes();
            let valid = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
            let (line, col) = crate::scenario::line_col(valid, at);
            return FileResult {
                path: path.to_owned(),
                outcome: Err(vec![Diagnostic {
                    line,
                    col,
                    message: "the file is not valid UTF-8".to_owned(),
                    hint: Some("save the scenario as UTF-8".to_owned()),
                }]),
            };
        }
    };
    let format = format_of(path);
    let id = options.layout.id_of(path);
    let mut cases = match scenario::load(&text, format, &id) {
        Ok(c) => c,
        Err(diags) => {
            return FileResult {
                path: path.to_owned(),
                outcome: Err(diags),
            };
        }
    };
    for profile in &options.also_profiles {
        if cases.iter().any(|c| &c.profile == profile) {
            continue;
        }
        if let Some(extra) = cases.first().and_then(|c| scenario::ad_hoc(c, profile)) {
            cases.push(extra);
        }
    }
    // Replay every case before writing anything, so a file that turns out incomplete leaves
    // no pending golden or trace behind.
    let mut replays = Vec::with_capacity(cases.len());
    for case in &cases {
        match replay_partial(case) {
            (events, None) => replays.push(events),
            // An ad-hoc profile may take the script where it was never meant to go: that run
            // is reported as incomplete, and the scenario itself is not at fault.
            (events, Some(_)) if !case.gated => replays.push(events),
            (_, Some(gap)) => {
                let (at, hint) = match &gap {
                    ScriptGap::Model(_) => (
                        vec![Seg::Key("model".to_owned())],
                        "add turns, or a rule with `when = {}` that answers every remaining call",
                    ),
                    ScriptGap::Approval { index, .. } => (
                        vec![
                            Seg::Key("approvals".to_owned()),
                            Seg::Index(index.saturating_sub(1)),
                        ],
                        "name the tool the run pauses for, or drop `tool` from the decision",
                    ),
                    ScriptGap::Tool(u) => {
                        let mut at = vec![Seg::Key("tools".to_owned())];
                        at.extend(
                            case.scenario
                                .tools
                                .iter()
                                .position(|t| t.name == u.tool)
                                .map(Seg::Index),
                        );
                        (
                            at,
                            "add an outcome that matches these arguments, or a `default` outcome",
                        )
                    }
                };
                let message = format!("case `{}` (profile {}): {gap}", case.id, case.profile);
                return FileResult {
                    path: path.to_owned(),
                    outcome: Err(vec![scenario::diagnose_at(
                        &text,
                        format,
                        at,
                        message,
                        Some(hint.to_owned()),
                    )]),
                };
            }
        }
    }
    let results = cases
        .iter()
        .zip(replays)
        .map(|(case, events)| judge(options, case, &events))
        .collect();
    FileResult {
        path: path.to_owned(),
        outcome: Ok(results),
    }
}

/// Replay a cassette strictly and judge it like a scenario case; a request that drifted from
/// the recording fails the case with its explanation.
fn cassette_file(options: &Options, path: &Path) -> FileResult {
    let outcome = match crate::record::replay(&options.layout, path) {
        Ok(r) => {
            // A run stopped by a drifted request leaves no pending golden behind, and when
            // what ran agrees with the golden only the drift is reported.
            let quiet = Options {
                write_pending: options.write_pending && r.failures.is_empty(),
                ..options.clone()
            };
            let mut result = judge(&quiet, &r.case, &r.events);
            if r.drift_within_golden {
                result.golden = Comparison::Match;
            }
            result.row.expectations_passed &= r.failures.is_empty();
            result.expectation_failures.extend(r.failures);
            Ok(vec![result])
        }
        Err(refusal) => Err(vec![refusal.diagnostic(path)]),
    };
    FileResult {
        path: path.to_owned(),
        outcome,
    }
}

/// Replay one case and render its golden text.
pub fn replay(case: &Case) -> Result<Vec<TimedEvent>, ScriptGap> {
    match replay_partial(case) {
        (events, None) => Ok(events),
        (_, Some(gap)) => Err(gap),
    }
}

/// Replay one case; on a script gap, the events up to it and the gap.
fn replay_partial(case: &Case) -> (Vec<TimedEvent>, Option<ScriptGap>) {
    let s = &case.scenario;
    let mut model = MockModel::new(&s.model);
    let mut tools = ScriptedTools::new(&s.tools);
    let input = RunInput {
        profile: &case.profile,
        model: &s.model.name,
        config: &case.config,
        system: &s.system,
        user: &s.user,
        signals: &s.signals,
        prices: case.prices(),
        approvals: &s.approvals,
        followups: &s.followups,
        workspace: &s.workspace,
        plan: s.plan.as_ref().map_or(&[], |p| p.steps.as_slice()),
    };
    match engine::run(input, &mut model, &mut tools) {
        Ok(events) => (events, None),
        Err((events, gap)) => (events, Some(gap)),
    }
}

/// Compare a replayed case with its golden, check its expectations, write pending files.
fn judge(options: &Options, case: &Case, events: &[TimedEvent]) -> CaseResult {
    let mut row = metrics::row(
        &case.id,
        &case.scenario.family,
        &case.profile,
        case.prices(),
        events,
    );
    let expectation_failures = crate::expect::check(&case.expect, events, &row);
    row.expectations_passed = expectation_failures.is_empty();

    let mut io_errors = Vec::new();
    // Ad-hoc cases have no golden: nothing to compare, nothing pending to write.
    let (golden, pending_written) = if case.gated {
        compare_golden(options, case, events, &mut io_errors)
    } else {
        (Comparison::Ungated, false)
    };
    if let Some(dir) = &options.traces {
        let path = dir.join(format!("{}.jsonl", case.id));
        if let Err(e) = store::write_atomic(&path, trace::render_jsonl(events).as_bytes()) {
            io_errors.push(format!("cannot write {}: {e}", path.display()));
        }
    }
    CaseResult {
        id: case.id.clone(),
        row,
        golden,
        pending_written,
        expectation_failures,
        io_errors,
    }
}

/// Compare the case's golden text with its golden file and write (or clear) its pending
/// golden; whether a pending golden was written.
fn compare_golden(
    options: &Options,
    case: &Case,
    events: &[TimedEvent],
    io_errors: &mut Vec<String>,
) -> (Comparison, bool) {
    let layout = &options.layout;
    let golden_text = trace::render_golden(&case.id, events);
    let golden = match store::read_optional(&layout.golden(&case.id)) {
        Ok(g) => snapshot::compare(g.as_deref(), &golden_text),
        Err(e) => {
            io_errors.push(format!("cannot read golden: {e}"));
            Comparison::Missing
        }
    };
    let mut pending_written = false;
    if options.write_pending {
        let pending = layout.pending(&case.id);
        let res = if golden == Comparison::Match {
            store::remove_optional(&pending)
        } else {
            pending_written = true;
            store::write_atomic(&pending, golden_text.as_bytes())
        };
        if let Err(e) = res {
            io_errors.push(format!("cannot write {}: {e}", pending.display()));
        }
    }
    (golden, pending_written)
}
