//! `harness suite`: the report card of a loop on a failure-mode suite — an agent command
//! (each suite scenario served to it, as `exec` does), or the engine's profiles.

use super::args::{ScorecardArgs, SuiteArgs};
use super::{Setup, fail};
use crate::diagnostic::{Diagnostic, Style};
use crate::report::Collected;
use crate::results::{ExitStatus, FileResult, Reporter as _};
use crate::run::Options;
use crate::select::Selection;
use crate::store;
use anyhow::Context as _;
use std::io::Write as _;
use std::path::PathBuf;

/// The card of an agent command: each suite file served to it (its output a file per case,
/// in `--agent-logs`), the results into `collected`; the card's (title, label), or the exit
/// status when the logs cannot be written.
fn agent_cards(
    args: &SuiteArgs,
    setup: &Setup,
    options: &Options,
    files: &[PathBuf],
    collected: &mut Collected,
) -> anyhow::Result<Result<Vec<(String, String)>, ExitStatus>> {
    // The agent's output, a file per case, rather than scrolling past the card.
    let agent_logs = args.agent_logs.clone().unwrap_or_else(|| {
        setup
            .root()
            .join(".harness")
            .join("suite")
            .join(&args.label)
    });
    if let Err(e) = store::writable_folder(&agent_logs) {
        return Ok(Err(fail(
            &Diagnostic::new(format!(
                "cannot write the agent's output into {}: {e}",
                agent_logs.display()
            ))
            .hint("name a folder that can be written with --agent-logs DIR")
            .status(ExitStatus::BadInput),
        )));
    }
    eprintln!(
        "harness suite: the agent's output goes to {} (a file per case)",
        agent_logs.display()
    );
    let settings = crate::exec::Settings {
        command: args.command.clone(),
        timeout_ms: args.timeout_ms,
        label: args.label.clone(),
        expect: None,
        reading: args.reading.to_reading(setup),
        on_divergence: Default::default(),
        matching: Default::default(),
        allow_exit: Vec::new(),
        agent_logs: Some(agent_logs.clone()),
        golden: true,
        env: Vec::new(),
    };
    for result in exec_all(&settings, options, files, options.jobs)? {
        collected.file(&result)?;
    }
    Ok(Ok(vec![(
        format!("`{}`", args.command.join(" ")),
        args.label.clone(),
    )]))
}

/// Print each card, write the outputs asked for; the exit status (`code` so far).
fn print_cards(
    args: &SuiteArgs,
    collected: &Collected,
    cards: &[(String, String)],
    shown: &str,
    code: ExitStatus,
) -> anyhow::Result<ExitStatus> {
    let mut out = anstream::stdout().lock();
    let mut lowest = usize::MAX;
    let mut each = Vec::new();
    for (who, profile) in cards {
        let cases: Vec<&crate::results::CaseResult> = collected
            .cases()
            .map(|(_, c)| c)
            .filter(|c| &c.row.profile == profile && c.card.is_some())
            .collect();
        let text = crate::report::card::render(who, shown, &cases);
        writeln!(out, "{text}")?;
        if let Some(s) = &collected.stopped {
            writeln!(
                out,
                "harness suite: {}: the card is incomplete (its files say so; `harness scorecard` refuses it without --allow-incomplete)\n",
                s.line()
            )?;
        }
        lowest = lowest.min(crate::report::card::score(cases.iter().copied()).points());
        each.push((who.clone(), cases));
    }
    // The exit status the command returns, which the JSON's summary says too.
    let below = args.min_score.filter(|min| lowest < *min);
    let code = if collected.stopped.is_some() {
        crate::run::interrupt::status()
    } else if below.is_some() {
        ExitStatus::Failed
    } else {
        code
    };
    if let Some(path) = &args.json {
        store::write_atomic(
            path,
            crate::report::json::render_exiting(collected, code).as_bytes(),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.html {
        let page = crate::report::card::html(&each, shown);
        store::write_atomic(path, page.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.junit {
        store::write_atomic(path, crate::report::card::junit(&each).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let (None, Some(min)) = (&collected.stopped, below) {
        writeln!(
            out,
            "harness suite: a score of {lowest} is below --min-score {min}"
        )?;
    }
    Ok(code)
}

/// The bundled failure-mode suite (`scenarios/suite`), built into the binary so that
/// `harness suite` works in any project: file stem, contents.
pub(super) const BUNDLED: &[(&str, &str)] = &[
    (
        "answer-cut-by-length",
        include_str!("../../scenarios/suite/answer-cut-by-length.toml"),
    ),
    (
        "content-filter",
        include_str!("../../scenarios/suite/content-filter.toml"),
    ),
    (
        "context-overflow",
        include_str!("../../scenarios/suite/context-overflow.toml"),
    ),
    (
        "corrected-after-validation-error",
        include_str!("../../scenarios/suite/corrected-after-validation-error.toml"),
    ),
    (
        "empty-answer-after-tools",
        include_str!("../../scenarios/suite/empty-answer-after-tools.toml"),
    ),
    (
        "empty-tool-completion",
        include_str!("../../scenarios/suite/empty-tool-completion.toml"),
    ),
    (
        "identical-successful-calls",
        include_str!("../../scenarios/suite/identical-successful-calls.toml"),
    ),
    (
        "ignores-the-first-warning",
        include_str!("../../scenarios/suite/ignores-the-first-warning.toml"),
    ),
    (
        "intent-stall",
        include_str!("../../scenarios/suite/intent-stall.toml"),
    ),
    (
        "long-answer-after-many-tools",
        include_str!("../../scenarios/suite/long-answer-after-many-tools.toml"),
    ),
    (
        "long-productive-run",
        include_str!("../../scenarios/suite/long-productive-run.toml"),
    ),
    (
        "malformed-arguments",
        include_str!("../../scenarios/suite/malformed-arguments.toml"),
    ),
    (
        "missing-argument-repeated",
        include_str!("../../scenarios/suite/missing-argument-repeated.toml"),
    ),
    (
        "never-stops-calling",
        include_str!("../../scenarios/suite/never-stops-calling.toml"),
    ),
    (
        "polling-until-change",
        include_str!("../../scenarios/suite/polling-until-change.toml"),
    ),
    (
        "rate-limit-storm",
        include_str!("../../scenarios/suite/rate-limit-storm.toml"),
    ),
    (
        "reflex-empty-arguments",
        include_str!("../../scenarios/suite/reflex-empty-arguments.toml"),
    ),
    (
        "request-timeout",
        include_str!("../../scenarios/suite/request-timeout.toml"),
    ),
    (
        "retry-then-correct",
        include_str!("../../scenarios/suite/retry-then-correct.toml"),
    ),
    (
        "same-invalid-call",
        include_str!("../../scenarios/suite/same-invalid-call.toml"),
    ),
    (
        "server-errors-then-recovery",
        include_str!("../../scenarios/suite/server-errors-then-recovery.toml"),
    ),
    (
        "stream-cut-in-a-call",
        include_str!("../../scenarios/suite/stream-cut-in-a-call.toml"),
    ),
    (
        "truncated-calls",
        include_str!("../../scenarios/suite/truncated-calls.toml"),
    ),
    (
        "two-tool-cycle",
        include_str!("../../scenarios/suite/two-tool-cycle.toml"),
    ),
    (
        "two-tools-alternating",
        include_str!("../../scenarios/suite/two-tools-alternating.toml"),
    ),
    (
        "unknown-tool",
        include_str!("../../scenarios/suite/unknown-tool.toml"),
    ),
];

/// The bundled suite written into `root/suite` (a temporary folder the caller keeps alive).
fn write_bundled(root: &std::path::Path) -> std::io::Result<PathBuf> {
    let dir = root.join("suite");
    std::fs::create_dir_all(&dir)?;
    for (stem, text) in BUNDLED {
        store::write_atomic(&dir.join(format!("{stem}.toml")), text.as_bytes())?;
    }
    Ok(dir)
}

/// `harness suite`.
pub(super) fn suite(args: &SuiteArgs, setup: &Setup) -> anyhow::Result<ExitStatus> {
    crate::run::interrupt::install().context("cannot catch stop signals")?;
    // No folder named, and none at `<scenarios>/suite`: the bundled suite, from a temporary
    // folder that stands for the scenarios root (so its case ids are `suite/<stem>`).
    let mut layout = setup.layout.clone();
    let mut bundled: Option<tempfile::TempDir> = None;
    let dir = match &args.suite {
        Some(d) => d.clone(),
        None if setup.layout.scenarios.join("suite").is_dir() => {
            setup.layout.scenarios.join("suite")
        }
        None => {
            let tmp = tempfile::tempdir().context("cannot make a folder for the bundled suite")?;
            let dir = write_bundled(tmp.path()).context("cannot write the bundled suite")?;
            layout.scenarios = tmp.path().to_path_buf();
            bundled = Some(tmp);
            dir
        }
    };
    if let Some(refused) = super::output_over_input(
        &[
            ("--json", args.json.as_deref()),
            ("--html", args.html.as_deref()),
            ("--junit", args.junit.as_deref()),
        ],
        std::slice::from_ref(&dir),
        store::is_scenario_file,
    ) {
        return Ok(refused);
    }
    // What the card calls the suite.
    let shown = if bundled.is_some() {
        "the bundled suite".to_owned()
    } else {
        dir.display().to_string()
    };
    let (files, unreadable) = store::discover(std::slice::from_ref(&dir));
    if let Some((path, e)) = unreadable.first() {
        return Ok(fail(
            &Diagnostic::whole_file(store::describe(e))
                .in_file(path)
                .hint(store::hint_for(e, "harness suite")),
        ));
    }
    let profiles: Vec<String> = if args.profile.is_empty() {
        crate::policy::PROFILES
            .iter()
            .filter(|p| p.on_default_card)
            .map(|p| p.name.to_owned())
            .collect()
    } else {
        args.profile.clone()
    };
    if let Some(p) = profiles
        .iter()
        .find(|p| !crate::policy::Config::is_profile(p))
    {
        return Ok(super::run::unknown_profile(p));
    }
    let options = Options {
        paths: vec![dir.clone()],
        layout,
        jobs: usize::try_from(args.jobs).unwrap_or(1),
        // A card judges, it writes no goldens.
        write_pending: false,
        traces: None,
        also_profiles: profiles.clone(),
        // The cards asked for: each scenario's cases of those profiles only.
        selection: if args.command.is_empty() {
            let filters: Vec<String> = profiles.iter().map(|p| format!("profile:{p}")).collect();
            match Selection::new(&filters, None) {
                Ok(s) => s,
                Err(d) => return Ok(fail(&d)),
            }
        } else {
            Selection::default()
        },
        repeat: 1,
        pending_dir: None,
        keep_traces: args.json.is_some(),
        matching: Default::default(),
        // A card judges by its verdicts: no golden is written or accepted for a suite run,
        // so none is a case's pass or failure either (a project keeps no suite goldens).
        goldens: false,
    };
    let mut collected = Collected::default();
    let cards: Vec<(String, String)> = if args.command.is_empty() {
        crate::run::run(&options, &mut collected)?;
        profiles
            .iter()
            .map(|p| (format!("profile {p}"), p.clone()))
            .collect()
    } else {
        match agent_cards(args, setup, &options, &files, &mut collected)? {
            Ok(cards) => cards,
            Err(code) => return Ok(code),
        }
    };
    // The bundled suite's files are named as the binary's, not by the temporary folder's path.
    if let Some(tmp) = &bundled {
        for f in &mut collected.files {
            if let Ok(rel) = f.path.strip_prefix(tmp.path()) {
                f.path = PathBuf::from("(bundled)").join(rel);
            }
        }
    }
    // A file that is no valid scenario is said as `run` says it; the card goes on without it.
    let mut code = ExitStatus::Ok;
    let style = Style::default();
    for f in &collected.files {
        if let Err(diags) = &f.outcome {
            for d in diags {
                eprint!("{}", d.clone().for_file(&f.path).render_in(&f.path, &style));
            }
            code = ExitStatus::BadInput;
        }
    }
    let carded = collected.cases().filter(|(_, c)| c.card.is_some()).count();
    // A stop signal ended the suite early: its card says so, and so does everything written.
    if crate::run::interrupt::requested() {
        collected.stopped = Some(crate::report::Stopped {
            by: crate::run::interrupt::name().to_owned(),
            done: carded,
            of: files.len() * cards.len(),
        });
    }
    if carded == 0 && collected.stopped.is_none() {
        return Ok(fail(
            &Diagnostic::new(format!(
                "{} holds no suite case: a scenario with a `[suite]` table",
                dir.display()
            ))
            .hint("name the folder of a failure-mode suite (the bundled one is `scenarios/suite`)")
            .status(ExitStatus::BadInput),
        ));
    }
    print_cards(args, &collected, &cards, &shown, code)
}

/// `harness scorecard`: the loops of several `harness suite --json` results side by side.
pub(super) fn scorecard(args: &ScorecardArgs) -> anyhow::Result<ExitStatus> {
    // Each file read on its own (they are not shards of one run: each is a loop's run of the
    // same suite); a loop is a profile (or an agent's label) of a file.
    let inputs: Vec<PathBuf> = args
        .results
        .iter()
        .chain(args.preface.as_ref())
        .cloned()
        .collect();
    if let Some(refused) = super::output_over_input(
        &[
            ("--markdown", args.markdown.as_deref()),
            ("--html", args.html.as_deref()),
        ],
        &inputs,
        |_| false,
    ) {
        return Ok(refused);
    }
    let mut loaded: Vec<(PathBuf, Collected)> = Vec::new();
    for path in &args.results {
        match crate::verdict::merge_shards(std::slice::from_ref(path)) {
            Ok(c) => loaded.push((path.clone(), c)),
            Err(d) => return Ok(fail(&d.status(ExitStatus::BadInput))),
        }
    }
    let mut loops: Vec<(String, Vec<&crate::results::CaseResult>)> = Vec::new();
    let mut from: Vec<&PathBuf> = Vec::new();
    for (path, collected) in &loaded {
        let mut here: Vec<(String, Vec<&crate::results::CaseResult>)> = Vec::new();
        if let Some(s) = &collected.stopped {
            if !args.allow_incomplete {
                return Ok(fail(
                    &Diagnostic::whole_file(format!("holds an incomplete suite: {}", s.line()))
                        .in_file(path)
                        .hint("run the suite to its end, or give --allow-incomplete to score the cases it holds")
                        .status(ExitStatus::BadInput),
                ));
            }
        }
        // No card taken as written: each read against its case and its trace.
        let text =
            match store::read_input_text(path, "results file", crate::limits::MAX_RESULTS_BYTES) {
                Ok(t) => t,
                Err(e) => {
                    return Ok(fail(
                        &e.diagnostic(path, "cannot read: ")
                            .status(ExitStatus::BadInput),
                    ));
                }
            };
        let incomplete = args.allow_incomplete && collected.stopped.is_some();
        if let Err(d) =
            crate::verdict::scorecard::check(collected, path, &text, BUNDLED, incomplete)
        {
            return Ok(fail(&d
                .hint("a card is scored as its case and saved trace read; give the results `harness suite --json` wrote, unedited, where the suite's files are")
                .status(ExitStatus::BadInput)));
        }
        for (_, c) in collected.cases() {
            if c.card.is_none() {
                continue;
            }
            match here.iter_mut().find(|(who, _)| *who == c.row.profile) {
                Some((_, cases)) => cases.push(c),
                None => here.push((c.row.profile.clone(), vec![c])),
            }
        }
        if here.is_empty() {
            return Ok(fail(
                &Diagnostic::whole_file("holds no suite case (no case with a report card)")
                    .in_file(path)
                    .hint("give the results of `harness suite --json FILE`")
                    .status(ExitStatus::BadInput),
            ));
        }
        for (who, cases) in here {
            if let Some(i) = loops.iter().position(|(w, _)| *w == who) {
                return Ok(fail(
                    &Diagnostic::whole_file(format!(
                        "the loop `{who}` is also in {}",
                        from[i].display()
                    ))
                    .in_file(path)
                    .hint("give each agent's run its own `harness suite --label`")
                    .status(ExitStatus::BadInput),
                ));
            }
            // An incomplete card (allowed) says so in its column's name.
            let who = match &collected.stopped {
                Some(s) => format!("{who} ({})", s.line()),
                None => who,
            };
            loops.push((who, cases));
            from.push(path);
        }
    }
    let preface = match &args.preface {
        Some(p) => {
            match store::read_input_text(p, "preface", crate::limits::MAX_SIDE_INPUT_BYTES) {
                Ok(t) => t,
                Err(e) => {
                    return Ok(fail(
                        &e.diagnostic(p, "cannot read: ")
                            .status(ExitStatus::BadInput),
                    ));
                }
            }
        }
        None => String::new(),
    };
    let mut text = preface.clone();
    if !text.is_empty() && !text.ends_with("\n\n") {
        text.push_str(if text.ends_with('\n') { "\n" } else { "\n\n" });
    }
    text.push_str(&crate::report::card::scorecard(&loops));
    match &args.markdown {
        Some(path) => store::write_atomic(path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?,
        None => write!(anstream::stdout().lock(), "{text}")?,
    }
    if let Some(path) = &args.html {
        // The suite's folder, as the first case's id names it (`<folder>/<stem>@<loop>`).
        let suite = loops
            .first()
            .and_then(|(_, cases)| cases.first())
            .and_then(|c| c.id.rsplit_once('/'))
            .map_or_else(|| "suite".to_owned(), |(folder, _)| folder.to_owned());
        let page = crate::report::card::scorecard_html(&loops, &suite, &preface);
        store::write_atomic(path, page.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let mut err = anstream::stderr().lock();
    for (who, cases) in &loops {
        let _ = writeln!(
            err,
            "harness scorecard: {}: {}",
            crate::escape::escape_controls(who),
            crate::report::card::score(cases.iter().copied()).line()
        );
    }
    Ok(ExitStatus::Ok)
}

/// Serve each suite scenario to the command, `jobs` at a time; the results in file order.
#[expect(
    clippy::disallowed_methods,
    reason = "the suite runs agents side by side on threads (an edge: cli)"
)]
fn exec_all(
    settings: &crate::exec::Settings,
    options: &Options,
    files: &[PathBuf],
    jobs: usize,
) -> std::io::Result<Vec<FileResult>> {
    let jobs = jobs.max(1);
    let mut results: Vec<Option<FileResult>> = vec![None; files.len()];
    for (chunk_no, chunk) in files.chunks(jobs).enumerate() {
        if crate::run::interrupt::requested() {
            break;
        }
        let done: Vec<std::io::Result<FileResult>> = std::thread::scope(|s| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|path| {
                    s.spawn(move || {
                        crate::exec::exec_file(settings, options, path, &mut anstream::stderr())
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(std::io::Error::other("a suite case panicked")))
                })
                .collect()
        });
        for (i, r) in done.into_iter().enumerate() {
            results[chunk_no * jobs + i] = Some(r?);
        }
    }
    Ok(results.into_iter().flatten().collect())
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "a test sets up and reads its files, clocks and threads itself"
)]
mod tests {
    /// The binary carries every scenario of `scenarios/suite`, as it is on disk.
    #[test]
    fn the_bundled_suite_is_the_folder() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/suite");
        let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter_map(|n| n.strip_suffix(".toml").map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        on_disk.sort();
        let mut bundled: Vec<String> = super::BUNDLED
            .iter()
            .map(|(s, _)| (*s).to_owned())
            .collect();
        bundled.sort();
        let missing: Vec<&String> = on_disk.iter().filter(|s| !bundled.contains(s)).collect();
        let gone: Vec<&String> = bundled.iter().filter(|s| !on_disk.contains(s)).collect();
        assert!(
            missing.is_empty() && gone.is_empty(),
            "BUNDLED (src/cli/suite.rs) lacks {missing:?}: add `(\"STEM\", include_str!(\"../../scenarios/suite/STEM.toml\"))`; it names {gone:?}, which scenarios/suite no longer holds"
        );
        bundled.dedup();
        assert_eq!(
            bundled.len(),
            super::BUNDLED.len(),
            "a case listed twice in BUNDLED"
        );
        for (stem, text) in super::BUNDLED {
            let file =
                std::fs::read_to_string(dir.join(format!("{stem}.toml"))).unwrap_or_default();
            assert_eq!(*text, file, "{stem}");
        }
    }
}
