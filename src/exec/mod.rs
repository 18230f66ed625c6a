//! Black-box agents judged: what a session serves (a scenario's scripted model, or agent
//! cassettes), an agent command run against it, and each conversation's inferred trace judged
//! as `harness run` judges a case (goldens, expectations, metrics). `harness exec` and `harness
//! serve` are this module driven from the command line; the process an agent runs in is
//! [`command`]'s.
//!
//! An exec case is `<scenario id>@<label>` (`--label`, default `exec`; a further conversation of
//! the same command is `<scenario id>@<label>.2`, …), its profile the label: its golden is
//! `snapshots/<scenario id>@<label>.snap`, beside the scenario's own, and `harness run` leaves
//! it alone while the scenario exists. `--expect PROFILE` judges it with the expectations the
//! scenario states for that profile (its own, or a `[compare.PROFILE]`), whose
//! `max_iterations` is also the cap.
//!
//! It sits above `run` (whose judge it calls) and `serve` (whose sessions it drives); only the
//! command line is above it.

pub mod command;

use crate::diagnostic::Cause;
use crate::failure::FailureRules;
use crate::provider::matching::Matching;
use crate::results::{CaseResult, ExitStatus, FileResult, card};
use crate::run::{self, Options};
use crate::scenario::{self, Case, Diagnostic, Expect};
use crate::serve::http::{Server, Signals};
use crate::serve::infer::{self, Context};
use crate::serve::replay::{self, OnDivergence};
use crate::serve::{Conversation, Session};
use crate::snapshot::Comparison;
use crate::store::{self, Layout};
use crate::trace::{self, TimedEvent};
use command::Ended;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// How `serve` and `exec` read the agent's requests and pace their answers.
#[derive(Debug, Clone, Default)]
pub struct Reading {
    /// Also read a tool result as failed when it matches one of these regular expressions
    /// (checked after the scenario's `[serve] failure` patterns).
    pub failure: Vec<String>,
    /// Read failures only by the provider's flag and the patterns, not the built-in shapes.
    pub no_builtin_failures: bool,
    /// Wall seconds per scripted second of latency for streamed answers (0: at once).
    pub pace: f64,
    /// Globs of the agent's tools that portable tools bind to first (`--bind`).
    pub bind: Vec<String>,
    /// Model calls a conversation is served at most instead of the scenario's cap
    /// (`--max-iterations`): room for an agent whose own cap is larger.
    pub max_iterations: Option<u32>,
}

impl Reading {
    /// `case` as served under these settings: its cap replaced by `--max-iterations`.
    pub fn served(&self, mut case: Case) -> Case {
        if let Some(n) = self.max_iterations {
            std::sync::Arc::make_mut(&mut case.config).max_iterations = n;
        }
        case
    }
}

/// How an agent command is run and judged (`harness exec`'s options).
#[derive(Debug, Clone)]
pub struct Settings {
    /// The agent command and its arguments.
    pub command: Vec<String>,
    /// Kill the command after this many milliseconds; the case then fails.
    pub timeout_ms: u64,
    /// Name of the runs: case id `<scenario id>@<label>`, and their profile.
    pub label: String,
    /// Judge with the expectations the scenario states for this profile.
    pub expect: Option<String>,
    /// How requests are read and answers paced.
    pub reading: Reading,
    /// With cassettes: what follows the first request that differs from the recording.
    pub on_divergence: OnDivergence,
    /// With cassettes: what counts when a request is compared with the recording.
    pub matching: Matching,
    /// Exit codes of the command accepted besides the scenario's `[serve] exit_codes` (`0`
    /// for cassettes).
    pub allow_exit: Vec<i32>,
    /// Write the command's output into this folder, a file per scenario (`<stem>.log`),
    /// instead of stderr (`harness suite`); a crash's verdict then quotes its last lines.
    pub agent_logs: Option<PathBuf>,
    /// With cassettes: judge each conversation by its golden too (`false`: by the recording
    /// alone, `--cassettes-only`).
    pub golden: bool,
    /// More environment for the command (`exec --collect`: where its own OpenTelemetry
    /// exporter sends its traces).
    pub env: Vec<(String, String)>,
}

impl Settings {
    /// A session served to no command of harness's own (`serve --judge`, `harness::testing`):
    /// the runs' label, the expectations, how requests are read and replays matched.
    pub(crate) fn without_command(
        label: &str,
        expect: Option<String>,
        reading: Reading,
        on_divergence: OnDivergence,
        matching: Matching,
    ) -> Self {
        Self {
            command: Vec::new(),
            timeout_ms: 0,
            label: label.to_owned(),
            expect,
            reading,
            on_divergence,
            matching,
            allow_exit: Vec::new(),
            agent_logs: None,
            golden: true,
            env: Vec::new(),
        }
    }
}

/// Why expectations cannot judge a replay: cassettes state none.
pub(crate) fn no_expectations_in_cassettes() -> Diagnostic {
    Diagnostic::new("--expect judges a scenario's expectations, and cassettes state none").hint(
        "a replayed conversation is judged by its golden and by whether it follows its recording (--on-divergence)",
    )
}

/// The failure rules of a case: the scenario's patterns, then the command line's.
pub fn failure_rules(case: &Case, reading: &Reading) -> Result<FailureRules, String> {
    let s = &case.scenario.serve;
    let patterns: Vec<String> = s.failure.iter().chain(&reading.failure).cloned().collect();
    FailureRules::new(
        &patterns,
        s.builtin_failures && !reading.no_builtin_failures,
    )
}

/// The case id of the `index`-th (0-based) conversation.
pub fn conversation_id(scenario_id: &str, label: &str, index: usize) -> String {
    match index {
        0 => format!("{scenario_id}@{label}"),
        n => format!("{scenario_id}@{label}.{}", n + 1),
    }
}

/// Is `label` usable (lower-case letters, digits, `-`, `_`; not a profile name)?
pub fn check_label(label: &str) -> Result<(), Diagnostic> {
    let ok = !label.is_empty()
        && label
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !ok {
        return Err(Diagnostic::new(format!("bad label `{label}`"))
            .hint("use lower-case letters, digits, `-` and `_`"));
    }
    if crate::policy::Config::is_profile(label) {
        return Err(
            Diagnostic::new(format!("the label `{label}` is a profile name"))
                .hint("pick another, e.g. `exec` or the agent's name"),
        );
    }
    Ok(())
}

/// Load a scenario's cases; a located error is the failure.
pub fn load(layout: &Layout, path: &Path) -> Result<Vec<Case>, Vec<Diagnostic>> {
    let bad = |message: String, hint: &str| vec![Diagnostic::at(1, 1, message).hint(hint)];
    if crate::record::is_cassette(path) {
        return Err(bad(
            "a cassette cannot be served: it has no scripted model".to_owned(),
            "serve the scenario the cassette was recorded from",
        ));
    }
    let text = store::read_input_text(path, "scenario", crate::limits::MAX_SCENARIO_BYTES)
        .map_err(|e| {
            vec![
                e.diagnostic(path, "cannot read: ")
                    .for_file(path)
                    .hint_by(|cause| match cause {
                        Cause::NotUtf8 => "save the scenario as UTF-8".to_owned(),
                        _ => "check the path".to_owned(),
                    }),
            ]
        })?;
    scenario::load(&text, run::format_of(path), &layout.id_of(path))
}

/// The inferred traces of a session's conversations, in an order that depends on what they
/// hold, never on when they came: by first user message, then by the trace itself (parallel
/// agents get the same case ids on every run).
pub fn traces(session: &Session, label: &str) -> Vec<Vec<TimedEvent>> {
    ordered_traces(session, label, false)
        .into_iter()
        .map(|(_, e)| e)
        .collect()
}

/// [`traces`], each with the index of its conversation in arrival order; `killed`: the agent
/// was killed at its timeout ([`Context::killed`]).
fn ordered_traces(session: &Session, label: &str, killed: bool) -> Vec<(usize, Vec<TimedEvent>)> {
    let tool_latency = session
        .case()
        .scenario
        .tools
        .iter()
        .map(|t| (t.name.clone(), t.latency_ms))
        .collect();
    let ctx = Context {
        profile: label,
        cap: session.cap(),
        tool_latency,
        killed: false,
    };
    // The kill ended the conversation it was in, the latest to be answered; the others ended
    // before it, as they show.
    let live = session.latest().filter(|_| killed);
    let mut all: Vec<(String, String, usize, Vec<TimedEvent>)> = session
        .conversations()
        .iter()
        .enumerate()
        .map(|(i, c): (usize, &Conversation)| {
            let ctx = Context {
                killed: live == Some(i),
                ..ctx.clone()
            };
            let events = infer::infer(&ctx, &c.requests);
            (
                c.key().to_owned(),
                trace::render_golden("", &events),
                i,
                events,
            )
        })
        .collect();
    all.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    all.into_iter().map(|(_, _, i, e)| (i, e)).collect()
}

/// A scenario ready to serve: its id, the case whose expectations judge the conversations
/// (none, or `--expect PROFILE`'s) and the rules that read tool results as failed.
pub(crate) struct Prepared {
    /// The scenario's id (the case id of its own profile).
    pub scenario_id: String,
    /// The case served and judged.
    pub case: Case,
    /// How tool results are read as failed.
    pub rules: FailureRules,
}

/// Load the scenario at `path` and choose what serves and judges it; the located errors are
/// the failure.
pub(crate) fn prepare(
    settings: &Settings,
    options: &Options,
    path: &Path,
) -> Result<Prepared, Vec<Diagnostic>> {
    let cases = load(&options.layout, path)?;
    let chosen = match &settings.expect {
        None => Case {
            expect: Expect::default(),
            ..cases[0].clone()
        },
        Some(p) => match cases.iter().find(|c| &c.profile == p) {
            Some(c) => c.clone(),
            None => {
                return Err(vec![
                    Diagnostic::at(
                        1,
                        1,
                        format!("the scenario states no expectations for profile `{p}`"),
                    )
                    .hint(format!(
                        "use its own profile `{}` or add a `[compare.{p}]` table",
                        cases[0].profile
                    )),
                ]);
            }
        },
    };
    let rules = failure_rules(&chosen, &settings.reading).map_err(|e| {
        vec![Diagnostic::at(1, 1, e).hint(format!(
            "fix the pattern ({})",
            crate::vocabulary::REGEX_SYNTAX
        ))]
    })?;
    Ok(Prepared {
        scenario_id: cases[0].id.clone(),
        case: settings.reading.served(chosen),
        rules,
    })
}

/// Serve one scenario to one run of the command and judge what it sent; how the command ended
/// is said on `notes`.
pub fn exec_file(
    settings: &Settings,
    options: &Options,
    path: &Path,
    notes: &mut dyn Write,
) -> io::Result<FileResult> {
    let failed = |diags: Vec<Diagnostic>| FileResult {
        path: path.to_owned(),
        outcome: Err(diags),
    };
    let prepared = match prepare(settings, options, path) {
        Ok(p) => p,
        Err(diags) => return Ok(failed(diags)),
    };
    let chosen = prepared.case.clone();
    let (session, failures, end, tail) = match serve_to_command(
        settings,
        Session::with_rules(chosen.clone(), prepared.rules.clone())
            .preferring(settings.reading.bind.clone()),
        &chosen,
        path,
        &path.display().to_string(),
        notes,
    )? {
        Ok(done) => done,
        Err(d) => return Ok(failed(vec![d])),
    };
    Ok(
        match judge_session(settings, options, &prepared, &session, failures, end) {
            Ok(mut results) => {
                // Why it crashed, in the agent's own last words (for the terminal: they hold
                // the machine's paths, so no result file keeps them).
                if let Some(tail) = &tail {
                    for c in results.iter_mut().filter_map(|r| r.card.as_mut()) {
                        if matches!(c.verdict, card::Verdict::Crashed(_)) {
                            // Its end: the last error line is what tells why.
                            let n = tail.chars().count();
                            let mut last: String =
                                tail.chars().skip(n.saturating_sub(TAIL_CHARS)).collect();
                            if n > TAIL_CHARS {
                                last.insert(0, '…');
                            }
                            c.last_output = Some(last);
                        }
                    }
                }
                FileResult {
                    path: path.to_owned(),
                    outcome: Ok(results),
                }
            }
            Err(d) => failed(vec![d]),
        },
    )
}

/// Judge what a served session's conversations sent, as `harness run` judges a case: one
/// result per conversation (case `<scenario id>@<label>`, `….2`, …), each with `failures` (how
/// the agent ended) among its failed expectations; a session without a model request is one
/// failed case. A trace past the run limits is the error.
pub(crate) fn judge_session(
    settings: &Settings,
    options: &Options,
    prepared: &Prepared,
    session: &Session,
    mut failures: Vec<String>,
    end: card::End,
) -> Result<Vec<CaseResult>, Diagnostic> {
    let (scenario_id, chosen) = (&prepared.scenario_id, &prepared.case);
    let ordered = ordered_traces(session, &settings.label, end == card::End::Killed);
    let arrival: Vec<usize> = ordered.iter().map(|(i, _)| *i).collect();
    let all: Vec<Vec<TimedEvent>> = ordered.into_iter().map(|(_, e)| e).collect();
    for (i, events) in all.iter().enumerate() {
        if let Err(e) = trace::check_limits(events) {
            return Err(Diagnostic::at(1, 1, format!(
                        "the trace inferred for `{}`: {e}",
                        conversation_id(scenario_id, &settings.label, i)
                    )).hint("the agent sent more than a run may hold (docs/robustness.md \"Limits\"); its conversation is not judged"));
        }
    }
    let case_of = |i: usize| Case {
        id: conversation_id(scenario_id, &settings.label, i),
        profile: settings.label.clone(),
        // Every conversation is one run of the agent: each must show what the profile asks.
        expect: chosen.expect.clone(),
        gated: true,
        ..chosen.clone()
    };
    let mut results: Vec<CaseResult> = Vec::new();
    if all.is_empty() {
        let quiet = Options {
            write_pending: false,
            traces: None,
            ..options.clone()
        };
        let mut r = run::judge(&quiet, &case_of(0), &[]);
        r.golden = Comparison::Ungated;
        // Its card reads how the agent ended (killed at its timeout before it asked, say).
        r.card = chosen
            .scenario
            .suite
            .as_ref()
            .map(|suite| card::classify(suite, chosen.scenario.portable_tools(), &[], end));
        // Stopped by a signal before it asked anything: the signal is the failure (already
        // among `failures`), not its base URL.
        if end != card::End::Exited(None) || failures.is_empty() {
            failures.push(no_model_request(session));
        }
        r.expectation_failures.append(&mut failures);
        results.push(r);
    }
    // One card per case: on the outcome conversation — the latest to arrive that is not a
    // side request (a retried task's last attempt) — and none on the others, whose traces
    // stay in the results beside it.
    let conversations = session.conversations();
    let side = |i: usize| {
        conversations
            .get(arrival[i])
            .and_then(|c| c.side.as_deref())
    };
    let outcome = (0..all.len())
        .filter(|i| side(*i).is_none())
        .max_by_key(|i| arrival[*i]);
    // Every conversation taken for a side request: none ran the scenario, and the run says so
    // on its latest (never a silent pass, never a silent gap in a card).
    let all_side = outcome.is_none() && !all.is_empty();
    let latest = (0..all.len()).max_by_key(|i| arrival[*i]);
    let side_reasons = (0..all.len())
        .filter_map(side)
        .collect::<Vec<_>>()
        .join("; ");
    // Only a run that ended as it should writes pending goldens: one the agent crashed in, was
    // killed or stopped, would be accepted by a bare `harness accept` and fail the next run.
    let judging = if failures.is_empty() {
        options.clone()
    } else {
        Options {
            write_pending: false,
            ..options.clone()
        }
    };
    for (i, events) in all.iter().enumerate() {
        let mut case = case_of(i);
        if side(i).is_some() {
            // A side request is not a run of the loop: no expectation of the case's applies.
            case.expect = Expect::default();
        }
        let mut r = run::judge(&judging, &case, events);
        r.expectation_failures.extend(failures.iter().cloned());
        if all_side && latest == Some(i) {
            r.expectation_failures.push(format!(
                "a conversation that runs the scenario; every one was taken for a side request ({side_reasons}), so none ran it"
            ));
            r.card = chosen.scenario.suite.as_ref().map(|suite| {
                let mut entry =
                    card::classify(suite, chosen.scenario.portable_tools(), events, end);
                entry.verdict = card::Verdict::NotDriven(format!(
                    "{} ({side_reasons}), so none ran the case",
                    card::ALL_SIDE
                ));
                // The other conversations, each a side request: what the verdict reads.
                entry.others = (0..all.len())
                    .filter(|j| *j != i)
                    .filter_map(|j| {
                        side(j).map(|why| format!("{}: a side request: {why}", case_of(j).id))
                    })
                    .collect();
                entry
            });
            results.push(r);
            continue;
        }
        r.card = chosen
            .scenario
            .suite
            .as_ref()
            .filter(|_| outcome == Some(i))
            .map(|suite| {
                let mut entry =
                    card::classify(suite, chosen.scenario.portable_tools(), events, end);
                entry.others = (0..all.len())
                    .filter(|j| *j != i)
                    .map(|j| match side(j) {
                        Some(why) => format!("{}: a side request: {why}", case_of(j).id),
                        None => format!("{}: an earlier attempt of the task", case_of(j).id),
                    })
                    .collect();
                entry
            });
        results.push(r);
    }
    // A conversation whose golden is accepted and that did not happen this run fails the run:
    // an agent that stopped making it changed.
    let lost = lost_conversations(&options.layout, scenario_id, &settings.label, all.len());
    if !lost.is_empty() {
        let on = outcome
            .or(latest)
            .unwrap_or(0)
            .min(results.len().saturating_sub(1));
        if let Some(r) = results.get_mut(on) {
            for id in lost {
                r.expectation_failures.push(format!(
                    "conversation `{id}`, whose golden is accepted; it did not happen this run (the agent made {} conversation(s)): reject its golden if that is the change you meant",
                    all.len()
                ));
            }
        }
    }
    for r in &mut results {
        r.row.expectations_passed = r.expectation_failures.is_empty();
        r.passes = u32::from(r.passed());
    }
    Ok(results)
}

/// The conversations of `scenario_id`@`label` after the first `made` whose goldens are in the
/// snapshots folder (`<stem>@<label>.N.snap`), by number.
fn lost_conversations(layout: &Layout, scenario_id: &str, label: &str, made: usize) -> Vec<String> {
    let first = layout.golden(&conversation_id(scenario_id, label, 0));
    let (Some(dir), Some(stem)) = (first.parent(), scenario_id.rsplit('/').next()) else {
        return Vec::new();
    };
    let prefix = format!("{stem}@{label}.");
    let suffix = format!(".{}", crate::store::GOLDEN_EXT);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut lost: Vec<usize> = entries
        .filter_map(|e| {
            let name = e.ok()?.file_name();
            let n = name
                .to_str()?
                .strip_prefix(&prefix)?
                .strip_suffix(&suffix)?
                .parse::<usize>()
                .ok()?;
            (n >= 2 && n > made).then_some(n)
        })
        .collect();
    lost.sort_unstable();
    lost.into_iter()
        .map(|n| conversation_id(scenario_id, label, n - 1))
        .collect()
}

/// The report `harness exec` prints for these results (colours as `out` keeps them), under the
/// verdict of `command`, and exec's exit status. A run that judged no conversation fails.
pub(crate) fn report_to(
    out: impl Write,
    files: &[FileResult],
    ci: bool,
    command: &'static str,
) -> io::Result<ExitStatus> {
    use crate::results::Reporter;
    let mut terminal = crate::report::Terminal::new(out, ci)
        .for_served(command)
        .with_detail(crate::report::DEFAULT_DIFF_LIMIT, false)
        .require_cases(Some(Diagnostic::new("no conversation was judged")));
    for file in files {
        terminal.file(file)?;
    }
    terminal.finish()?;
    Ok(terminal.tally.exit_code())
}

/// Characters of a crashed agent's last output a verdict quotes at most.
const TAIL_CHARS: usize = 200;

/// A session served to one run of the command: the session, the failures of how the command
/// ended, that end as the report card reads it, and the last lines of its output when it went
/// to a log file.
type Served = (Session, Vec<String>, card::End, Option<String>);

/// Serve `session` to one run of the command (handed `case`'s prompt and tools, `path` as its
/// scenario), say on stderr how it ended (`what` names what was served), and hand back the
/// session and the failure a killed command is; what the case holds that cannot be handed to
/// the command (a NUL in a prompt) is the diagnostic.
fn serve_to_command(
    settings: &Settings,
    session: Session,
    case: &Case,
    path: &Path,
    what: &str,
    notes: &mut dyn Write,
) -> io::Result<Result<Served, Diagnostic>> {
    let read_limit = session.read_limit();
    let server = Server::start_with(
        session,
        SocketAddr::from(([127, 0, 0, 1], 0)),
        Signals::Ignore,
        crate::serve::http::Timeouts {
            pace: settings.reading.pace,
            ..Default::default()
        },
        read_limit,
    )?;
    let log = settings.agent_logs.as_ref().map(|dir| {
        let stem = path.file_stem().unwrap_or(path.as_os_str());
        dir.join(format!("{}.log", stem.to_string_lossy()))
    });
    let ended = command::run_command(
        &settings.command,
        std::time::Duration::from_millis(settings.timeout_ms),
        server.addr(),
        case,
        path,
        log.as_deref(),
        &settings.env,
    );
    let session = server.stop()?;
    match ended {
        Ok(ended) => {
            let scrubber = session
                .replay()
                .map(|r| r.scrubber.clone())
                .unwrap_or_default();
            let failures = report_end(
                settings,
                what,
                &ended,
                &scrubber,
                &case.scenario.serve.exit_codes,
                refused_last(&session),
                notes,
            );
            // As the report card reads it: an exit the verdict accepts is a clean one.
            let end = match &ended {
                Ended::Killed => card::End::Killed,
                Ended::Exited(_) if failures.is_empty() => card::End::Exited(Some(0)),
                Ended::Exited(status) => card::End::Exited(status.code()),
                Ended::Interrupted => card::End::Exited(None),
            };
            let tail = log.as_deref().and_then(|l| crate::store::tail_lines(l, 3));
            Ok(Ok((session, failures, end, tail)))
        }
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => {
            Ok(Err(Diagnostic::at(1, 1, e.to_string()).hint(
                "environment variables cannot hold NUL bytes: remove it from the scenario",
            )))
        }
        Err(e) => Err(e),
    }
}

/// What a run whose command sent no model request failed to show: that it made none, or
/// which requests it made instead (to paths that are no endpoint).
fn no_model_request(session: &Session) -> String {
    let take = format!(
        "it must take its base URL from {}, which harness exec sets (the server answers {})",
        crate::provider::base_url_var_names(crate::provider::Provider::ALL),
        crate::provider::served_routes()
    );
    let take = take.as_str();
    match session.unknown() {
        (0, _) => format!("a model request; the command made none: {take}"),
        (n, paths) => format!(
            "a model request; the command made {n} request(s), all to unknown paths ({}): {take}",
            paths.join(", ")
        ),
    }
}

/// Did the session refuse a conversation's last request (its iteration cap, a script with no
/// answer, a divergence refused)? Then harness ended that conversation, and an agent that
/// exits non-zero on a refused request ends as it was made to.
fn refused_last(session: &Session) -> bool {
    session.conversations().iter().any(|c| {
        c.requests.last().is_some_and(|r| {
            matches!(
                r.reply,
                crate::serve::Reply::Cap | crate::serve::Reply::NoAnswer(_)
            )
        })
    })
}

/// Say on stderr how the command ended; the failure that is, if it is one: killed at its
/// timeout, killed by a signal of its own, or an exit code not among `accepted` and
/// `--allow-exit`'s (any is, after harness `refused` a conversation's last request).
fn report_end(
    settings: &Settings,
    what: &str,
    ended: &Ended,
    scrubber: &crate::record::scrub::Scrubber,
    accepted: &[i32],
    refused: bool,
    notes: &mut dyn Write,
) -> Vec<String> {
    let note = match ended {
        Ended::Exited(s) => format!("ended with {s}"),
        Ended::Killed => format!("killed after {} ms", settings.timeout_ms),
        Ended::Interrupted => format!("ended by {}", crate::run::interrupt::name()),
    };
    // Scrubbed as the proxy scrubs the command it records (the command may carry a key).
    let command: Vec<String> = settings.command.iter().map(|a| scrubber.scrub(a)).collect();
    let _ = writeln!(
        notes,
        "harness exec: {what}: `{}` {note}",
        command.join(" ")
    );
    let allowed: Vec<i32> = accepted
        .iter()
        .chain(&settings.allow_exit)
        .copied()
        .collect();
    match ended {
        Ended::Killed => vec![format!(
            "the command to finish within {} ms; it was killed (raise --timeout-ms if it needs longer)",
            settings.timeout_ms
        )],
        Ended::Exited(status) => match status.code() {
            Some(code) if refused || allowed.contains(&code) => Vec::new(),
            Some(code) => vec![format!(
                "the command to exit with {}; it exited with {code} (a scenario's `[serve] exit_codes` or `--allow-exit {code}` accepts it when that is its way to end)",
                or_list(&allowed)
            )],
            None => vec![format!(
                "the command to exit by itself; it ended by {status}"
            )],
        },
        Ended::Interrupted => Vec::new(),
    }
}

/// `0`, `0 or 3`, `0, 3 or 5`.
fn or_list(codes: &[i32]) -> String {
    let mut codes = codes.to_vec();
    codes.sort_unstable();
    codes.dedup();
    let codes: Vec<String> = codes.iter().map(ToString::to_string).collect();
    match codes.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => "0".to_owned(),
    }
}

/// A replay session's cassettes, loaded: one case per cassette (its promoted scenario), in
/// the order given.
pub struct LoadedCassettes {
    /// One case per cassette: its promoted scenario.
    pub cases: Vec<Case>,
    /// The cassettes, in the order given.
    pub paths: Vec<PathBuf>,
    /// What the session replays.
    pub replay: replay::Replay,
}

/// Load the agent cassettes of a replay session, and the `script:` scenario; every file that
/// cannot serve is its result.
pub fn load_cassettes(
    layout: &Layout,
    files: &[PathBuf],
    policy: &replay::OnDivergence,
    matching: &Matching,
) -> Result<LoadedCassettes, Vec<FileResult>> {
    let located =
        |path: &Path, line: usize, col: usize, message: String, hint: String| FileResult {
            path: path.to_owned(),
            outcome: Err(vec![Diagnostic::at(line, col, message).hint(hint)]),
        };
    let mut errors = Vec::new();
    let mut cases = Vec::new();
    let mut paths = Vec::new();
    let mut served = Vec::new();
    for path in files {
        if !crate::record::is_cassette(path) {
            errors.push(located(
                path,
                1,
                1,
                "a scenario among cassettes: a replay session serves cassettes only".to_owned(),
                "give exec either scenarios or agent cassettes".to_owned(),
            ));
            continue;
        }
        let c = match crate::record::load_cassette(path) {
            Ok((c, _)) => c,
            Err(d) => {
                errors.push(FileResult {
                    path: path.clone(),
                    outcome: Err(vec![d.for_file(path)]),
                });
                continue;
            }
        };
        if c.agent.is_none() {
            errors.push(located(
                path,
                1,
                1,
                "this cassette is a scenario's run recorded by `harness record`, not an agent's conversation".to_owned(),
                "replay it with `harness run`; `harness proxy` records an agent's conversations for exec".to_owned(),
            ));
            continue;
        }
        let id = layout.id_of(path);
        let promoted =
            replay::promote_agent(&c, &path.display().to_string(), &FailureRules::default());
        let case = promoted
            .and_then(|s| serde_json::to_string(&s).ok())
            .ok_or_else(|| "its first request cannot be read as a model request".to_owned())
            .and_then(|json| {
                scenario::load(&json, scenario::SourceFormat::Json, &id)
                    .map_err(|d| d.first().map_or_else(String::new, |d| d.message.clone()))
            });
        match case {
            Ok(mut cs) => {
                cases.push(cs.remove(0));
                paths.push(path.clone());
                served.push(replay::ServedCassette::new(id, c, matching));
            }
            Err(m) => errors.push(located(
                path,
                1,
                1,
                format!("this cassette cannot be served: {m}"),
                "re-record it with `harness proxy`".to_owned(),
            )),
        }
    }
    let script = match policy {
        replay::OnDivergence::Script(p) => match load(layout, p) {
            Ok(mut cs) => Some(cs.remove(0)),
            Err(diags) => {
                errors.push(FileResult {
                    path: p.clone(),
                    outcome: Err(diags),
                });
                None
            }
        },
        _ => None,
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(LoadedCassettes {
        cases,
        paths,
        replay: replay::Replay {
            cassettes: served,
            on_divergence: policy.clone(),
            script,
            scrubber: crate::record::scrub::Scrubber::from_env(&crate::provider::key_vars()),
            record_mode: None,
        },
    })
}

/// One replayed conversation's trace.
pub struct ReplayedTrace {
    /// Its case id: the cassette's, with the label.
    pub id: String,
    /// Which cassette.
    pub cassette: usize,
    /// The inferred trace.
    pub events: Vec<TimedEvent>,
    /// The divergence report, if it diverged.
    pub report: Option<String>,
    /// Without a divergence: the recorded exchanges it left unused (the first, 1-based, and
    /// how many the cassette holds), if it stopped before the recording's end.
    pub unused: Option<(usize, usize)>,
}

/// The traces of a replay session: by cassette, and within one cassette by the trace itself
/// (agents in parallel get the same ids on every run); `killed`: the agent was killed at its
/// timeout ([`Context::killed`]).
pub fn replayed_traces(session: &Session, label: &str, killed: bool) -> Vec<ReplayedTrace> {
    let Some(recorded) = session.replay() else {
        return Vec::new();
    };
    type Found = (
        usize,
        String,
        Vec<TimedEvent>,
        Option<String>,
        Option<(usize, usize)>,
    );
    let mut all: Vec<Found> = session
        .conversations()
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let pos = c.replayed.as_ref()?;
            let served = &recorded.cassettes[pos.cassette];
            let ctx = Context {
                profile: label,
                cap: u32::try_from(served.cassette.exchanges.len()).unwrap_or(u32::MAX),
                tool_latency: Default::default(),
                killed: killed && session.latest() == Some(i),
            };
            let mut events = infer::infer(&ctx, &c.requests);
            // The provider's ids differ on every recording; the trace names calls by order.
            trace::number_calls(&mut events);
            let report = c.divergence().map(|d| d.report(&served.id));
            let total = served.cassette.exchanges.len();
            let unused = (report.is_none() && pos.next < total).then_some((pos.next + 1, total));
            Some((
                pos.cassette,
                trace::render_golden("", &events),
                events,
                report,
                unused,
            ))
        })
        .collect();
    all.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut seen = vec![0usize; recorded.cassettes.len()];
    all.into_iter()
        .map(|(i, _, events, report, unused)| {
            let id = conversation_id(&recorded.cassettes[i].id, label, seen[i]);
            seen[i] += 1;
            ReplayedTrace {
                id,
                cassette: i,
                events,
                report,
                unused,
            }
        })
        .collect()
}

/// A replay session ready to serve: its cassettes' cases and paths, what it replays, and the
/// rules that read tool results as failed.
pub(crate) struct PreparedReplay {
    /// One case per cassette: its promoted scenario.
    pub cases: Vec<Case>,
    /// The cassettes, in the order given.
    pub paths: Vec<PathBuf>,
    /// The session that replays them.
    pub session: Session,
}

/// Load the agent cassettes of a replay session and make its session; every file that cannot
/// serve is its result.
pub(crate) fn prepare_cassettes(
    settings: &Settings,
    options: &Options,
    files: &[PathBuf],
) -> Result<PreparedReplay, Vec<FileResult>> {
    let loaded = load_cassettes(
        &options.layout,
        files,
        &settings.on_divergence,
        &settings.matching,
    )?;
    let first = loaded.cases[0].clone();
    let rules = failure_rules(&first, &settings.reading).map_err(|e| {
        vec![FileResult {
            path: loaded.paths[0].clone(),
            outcome: Err(vec![Diagnostic::at(1, 1, e).hint(format!(
                "fix the pattern ({})",
                crate::vocabulary::REGEX_SYNTAX
            ))]),
        }]
    })?;
    Ok(PreparedReplay {
        session: Session::replaying(settings.reading.served(first), rules, loaded.replay),
        cases: loaded.cases,
        paths: loaded.paths,
    })
}

/// Serve agent cassettes to one run of the command (each conversation the agent begins is
/// answered from the cassette it binds to) and judge each conversation; a cassette no
/// conversation played fails.
pub fn exec_cassettes(
    settings: &Settings,
    options: &Options,
    files: &[PathBuf],
    notes: &mut dyn Write,
) -> io::Result<Vec<FileResult>> {
    let prepared = match prepare_cassettes(settings, options, files) {
        Ok(p) => p,
        Err(errors) => return Ok(errors),
    };
    let names: Vec<String> = prepared
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let first = prepared.cases[0].clone();
    let (session, failures, end, _) = match serve_to_command(
        settings,
        prepared.session,
        &first,
        &prepared.paths[0],
        &names.join(", "),
        notes,
    )? {
        Ok(done) => done,
        Err(d) => {
            return Ok(vec![FileResult {
                path: prepared.paths[0].clone(),
                outcome: Err(vec![d]),
            }]);
        }
    };
    Ok(judge_replayed(
        settings,
        options,
        &prepared.cases,
        &prepared.paths,
        &session,
        Ending {
            failures: &failures,
            killed: end == card::End::Killed,
        },
        notes,
    ))
}

/// How the agent's command ended, for [`judge_replayed`]: the failures it made (its exit, a
/// kill) and whether it was killed at its timeout.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ending<'a> {
    /// How its end failed the run.
    pub failures: &'a [String],
    /// Killed at its timeout ([`Context::killed`]).
    pub killed: bool,
}

/// Judge what a replay session's conversations sent: one result per cassette, each
/// conversation by the cassette it played (its golden, whether it followed the recording, and
/// `failures`, how the agent ended); a cassette no conversation played fails.
pub(crate) fn judge_replayed(
    settings: &Settings,
    options: &Options,
    cases: &[Case],
    paths: &[PathBuf],
    session: &Session,
    ended: Ending<'_>,
    notes: &mut dyn Write,
) -> Vec<FileResult> {
    let Ending { failures, killed } = ended;
    let traces = replayed_traces(session, &settings.label, killed);
    // Judged by the recording alone (`--cassettes-only`), a divergence always fails.
    let fail_on_divergence =
        settings.on_divergence == replay::OnDivergence::Fail || !settings.golden;
    let case_of = |i: usize, id: String| Case {
        id,
        profile: settings.label.clone(),
        expect: Expect::default(),
        gated: settings.golden,
        ..cases[i].clone()
    };
    let mut per_file: Vec<Vec<CaseResult>> = vec![Vec::new(); paths.len()];
    for t in &traces {
        if let Err(e) = trace::check_limits(&t.events) {
            return vec![FileResult {
                path: paths[t.cassette].clone(),
                outcome: Err(vec![
                    Diagnostic::whole_file(format!("the trace inferred for `{}`: {e}", t.id))
                        .hint(
                            "the agent sent more than a run may hold (docs/robustness.md \"Limits\"); its conversation is not judged",
                        ),
                ]),
            }];
        }
        // Only a conversation that followed its recording to its end in a run that ended as it
        // should writes a pending golden (a bare `harness accept` would bless the others).
        let whole = failures.is_empty()
            && t.unused.is_none()
            && !(t.report.is_some() && fail_on_divergence);
        let judging = Options {
            write_pending: options.write_pending && whole,
            ..options.clone()
        };
        let mut r = run::judge(&judging, &case_of(t.cassette, t.id.clone()), &t.events);
        if let Some(report) = &t.report {
            // Printed once: in the case's failure when it fails the case, else as a note.
            if fail_on_divergence {
                r.expectation_failures.push(format!(
                    "every request to match the recording (--on-divergence fail); {report}"
                ));
            } else {
                let _ = writeln!(notes, "harness exec: {}: {report}", t.id);
            }
        }
        if let Some((first, total)) = t.unused {
            r.expectation_failures.push(format!(
                "every recorded exchange to be replayed; {} of {total} were not (from exchange {first}: the agent stopped asking after request {})",
                total + 1 - first,
                first - 1
            ));
        }
        r.expectation_failures.extend(failures.iter().cloned());
        per_file[t.cassette].push(r);
    }
    let quiet = Options {
        write_pending: false,
        traces: None,
        ..options.clone()
    };
    for (i, results) in per_file.iter_mut().enumerate() {
        if !results.is_empty() {
            continue;
        }
        let mut r = run::judge(
            &quiet,
            &case_of(i, conversation_id(&cases[i].id, &settings.label, 0)),
            &[],
        );
        r.golden = Comparison::Ungated;
        r.expectation_failures.push(if traces.is_empty() {
            no_model_request(session)
        } else {
            "the agent to begin this recorded conversation; none of its conversations began nearer to it than to another cassette".to_owned()
        });
        r.expectation_failures.extend(failures.iter().cloned());
        results.push(r);
    }
    paths
        .iter()
        .cloned()
        .zip(per_file)
        .map(|(path, mut results)| {
            for r in &mut results {
                r.row.expectations_passed = r.expectation_failures.is_empty();
                r.passes = u32::from(r.passed());
            }
            FileResult {
                path,
                outcome: Ok(results),
            }
        })
        .collect()
}
