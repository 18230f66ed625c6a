//! The terminal side of `harness record` and `harness promote`: print what happened, write the
//! optional trace and metrics files, map outcomes to exit codes. Everything printed has been
//! scrubbed (the trace is built from scrubbed exchanges; refusals are scrubbed here).

use super::args::{LintArgs, PromoteArgs, RecordArgs};
use crate::diagnostic::{Diagnostic, Style};
use crate::record::scrubber;
use crate::report::MetricsCsv;
use crate::results::{CaseResult, ExitStatus, FileResult, Reporter};
use crate::snapshot::Comparison;
use crate::store;
use crate::trace;
use anyhow::Context as _;
use std::io::Write;

/// Tell the user `d`, scrubbed of the keys in the environment (`extra_var` too).
fn refused(d: &Diagnostic, extra_var: Option<&str>) -> anyhow::Result<ExitStatus> {
    let text = scrubber(extra_var).scrub(&d.render(&Style::default()));
    anstream::stderr().write_all(text.as_bytes())?;
    Ok(d.status)
}

/// `harness record`.
pub(super) fn record(
    args: &RecordArgs,
    setup: &super::Setup,
    ci: bool,
) -> anyhow::Result<ExitStatus> {
    let layout = &setup.layout;
    let r = match crate::record::record(&args.options(setup), layout, ci) {
        Ok(r) => r,
        Err(e) => return refused(&e, args.api_key_env.as_deref()),
    };
    let mut out = anstream::stdout().lock();
    out.write_all(trace::render_golden(&r.case.id, &r.events).as_bytes())?;
    if let Some(dir) = &args.traces {
        let path = dir.join(format!("{}.jsonl", r.case.id));
        store::write_atomic(&path, trace::render_jsonl(&r.events).as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(path) = &args.metrics {
        let mut row = crate::metrics::row(
            &r.case.id,
            &r.case.scenario.family,
            &r.case.profile,
            r.case.prices(),
            &r.events,
        );
        row.expectations_passed = r.failures.is_empty();
        let mut csv =
            MetricsCsv::create(path).with_context(|| format!("cannot write {}", path.display()))?;
        csv.file(&FileResult {
            path: args.scenario.clone(),
            outcome: Ok(vec![CaseResult {
                id: r.case.id.clone(),
                row,
                golden: Comparison::Ungated,
                pending_written: false,
                expectation_failures: r.failures.clone(),
                io_errors: Vec::new(),
                line: 1,
                runs: 1,
                passes: u32::from(r.failures.is_empty()),
                detail: None,
                card: None,
            }]),
        })?;
        csv.finish()?;
    }
    for f in &r.failures {
        writeln!(out, "replay mismatch: expected {f}")?;
    }
    let verb = if r.live {
        "recorded"
    } else {
        "replayed (no provider contacted)"
    };
    writeln!(
        out,
        "harness record: {verb} {} exchanges, {}",
        r.exchanges,
        r.out.display()
    )?;
    if r.live {
        // A cassette recorded again changes its trace: the main job fails until its golden
        // and baseline follow.
        writeln!(
            out,
            "  next: `harness run {}` shows its trace against the golden; review it, `harness accept`, and `harness bless` if its metrics moved",
            r.out.display()
        )?;
    }
    Ok(if r.failures.is_empty() {
        ExitStatus::Ok
    } else {
        ExitStatus::Failed
    })
}

/// `harness trace CASSETTE`: the replayed trace; a drifted request is reported (exit 1).
pub(super) fn trace(
    setup: &super::Setup,
    path: &std::path::Path,
    jsonl: bool,
) -> anyhow::Result<ExitStatus> {
    let matching = setup.replay_defaults().matching(&[], &[]);
    let r = match crate::record::replay(&setup.layout, path, &matching) {
        Ok(r) => r,
        Err(e) => return refused(&e, None),
    };
    let mut out = anstream::stdout().lock();
    if jsonl {
        out.write_all(trace::render_jsonl(&r.events).as_bytes())?;
    } else {
        out.write_all(trace::render_golden(&r.case.id, &r.events).as_bytes())?;
    }
    let mut err = anstream::stderr();
    for f in &r.failures {
        writeln!(err, "replay mismatch: expected {f}")?;
    }
    Ok(if r.failures.is_empty() {
        ExitStatus::Ok
    } else {
        ExitStatus::Failed
    })
}

/// `harness promote`.
pub(super) fn promote(args: &PromoteArgs) -> anyhow::Result<ExitStatus> {
    let agent = crate::record::load_cassette(&args.cassette)
        .ok()
        .filter(|(c, _)| c.agent.is_some());
    let written = match agent {
        Some((c, _)) => promote_agent(args, &c),
        None => crate::record::promote_cassette(&args.cassette, args.out.as_deref()),
    };
    match written {
        Ok(path) => {
            let mut out = anstream::stdout().lock();
            writeln!(
                out,
                "wrote {}\n  next: `harness run {}` records its golden for review",
                path.display(),
                path.display()
            )?;
            Ok(ExitStatus::Ok)
        }
        Err(e) => refused(&e, None),
    }
}

/// An agent's cassette (`harness proxy`) as a scenario beside it (`NAME.promoted.toml`).
fn promote_agent(
    args: &PromoteArgs,
    c: &crate::record::cassette::Cassette,
) -> Result<std::path::PathBuf, Diagnostic> {
    let source = args.cassette.display().to_string();
    let promoted =
        crate::serve::replay::promote_agent(c, &source, &crate::failure::FailureRules::default())
            .ok_or_else(|| {
            Diagnostic::whole_file("the cassette's first request cannot be read as a model request")
                .hint("re-record it with `harness proxy`")
                .in_file(&args.cassette)
        })?;
    let out = args.out.clone().unwrap_or_else(|| {
        let name = args
            .cassette
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(crate::record::CASSETTE_SUFFIX))
            .unwrap_or("recorded");
        args.cassette
            .with_file_name(format!("{name}.promoted.toml"))
    });
    crate::record::write_promoted(&promoted, &out)?;
    Ok(out)
}

/// `harness lint`: the given paths, else the project's own folders (scenarios, fixtures,
/// goldens) wherever it is run from.
pub(super) fn lint(args: &LintArgs, setup: &super::Setup) -> anyhow::Result<ExitStatus> {
    let mut paths = args.paths.clone();
    if paths.is_empty() {
        let root = setup
            .project
            .as_ref()
            .map_or(std::path::PathBuf::new(), |p| p.root.clone());
        paths = [
            setup.layout.scenarios.clone(),
            crate::store::normalise(&root.join("fixtures")),
            setup.layout.snapshots.clone(),
        ]
        .into_iter()
        .filter(|p| p.exists())
        .collect();
    }
    Ok(crate::record::lint_paths(
        &paths,
        args.allow_empty,
        &mut anstream::stdout().lock(),
    )?)
}
