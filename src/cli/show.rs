//! `harness trace`, `schema` and `profile`: what a scenario replays to, the formats' JSON
//! Schemas, and the profiles' configurations.

use super::args::SchemaOf;
use super::run::unknown_profile;
use crate::diagnostic::Style;
use crate::policy::Config;
use crate::results::ExitStatus;
use crate::run;
use crate::scenario::{self, SourceFormat};
use crate::store;
use crate::trace;
use anyhow::Context as _;
use std::io::Write;
use std::path::Path;

/// `harness trace`: every case of a scenario replayed (a cassette's trace is `record`'s).
pub(super) fn trace(
    setup: &super::Setup,
    scenario: &Path,
    jsonl: bool,
) -> anyhow::Result<ExitStatus> {
    if crate::record::is_cassette(scenario) {
        return super::record::trace(setup, scenario, jsonl);
    }
    let layout = &setup.layout;
    let text = match store::read_input_text(scenario, "scenario", crate::limits::MAX_SCENARIO_BYTES)
    {
        Ok(text) => text,
        Err(e @ store::ReadError::NotUtf8 { .. }) => {
            return Ok(super::fail(
                &e.diagnostic(scenario, "")
                    .hint("save the scenario as UTF-8"),
            ));
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", scenario.display())),
    };
    let format = if scenario.extension().is_some_and(|e| e == "json") {
        SourceFormat::Json
    } else {
        SourceFormat::Toml
    };
    let cases = match scenario::load(&text, format, &layout.id_of(scenario)) {
        Ok(c) => c,
        Err(diags) => {
            let mut out = anstream::stderr().lock();
            for d in diags {
                write!(out, "{}", d.render_in(scenario, &Style::default()))?;
            }
            return Ok(ExitStatus::BadInput);
        }
    };
    let mut out = anstream::stdout().lock();
    for case in &cases {
        let events =
            run::replay(case).map_err(|gap| anyhow::anyhow!("{}: {gap}", scenario.display()))?;
        if jsonl {
            out.write_all(trace::render_jsonl(&events).as_bytes())?;
        } else {
            out.write_all(trace::render_golden(&case.id, &events).as_bytes())?;
        }
    }
    Ok(ExitStatus::Ok)
}

/// `harness schema`.
pub(super) fn schema(of: SchemaOf) -> anyhow::Result<ExitStatus> {
    let schema = match of {
        SchemaOf::Scenario => scenario::json_schema(),
        SchemaOf::Project => crate::project::json_schema(),
    };
    anstream::stdout().write_all(schema.as_bytes())?;
    Ok(ExitStatus::Ok)
}

/// `harness profile [NAME]`.
pub(super) fn profile(name: Option<&str>) -> anyhow::Result<ExitStatus> {
    let Some(name) = name else {
        let mut out = anstream::stdout().lock();
        for (name, what) in crate::policy::PROFILES.iter().zip(PROFILE_SUMMARIES) {
            writeln!(out, "{name:<11} {what}")?;
        }
        writeln!(
            out,
            "`harness profile NAME` prints one's configuration; docs/profiles.md and docs/runtimes.md describe them"
        )?;
        return Ok(ExitStatus::Ok);
    };
    match Config::profile(name) {
        Some(c) => {
            anstream::stdout().write_all(toml::to_string_pretty(&c)?.as_bytes())?;
            Ok(ExitStatus::Ok)
        }
        None => Ok(unknown_profile(name)),
    }
}

/// One line on each of [`crate::policy::PROFILES`], in its order, for `harness profile`.
const PROFILE_SUMMARIES: [&str; 6] = [
    "the bare loop: no defence, 25 iterations",
    "IronClaw v1's chat turn (5b307e2c): intent nudge, truncation, duplicate tracker, budget, cost guard, compaction, approvals",
    "Moltis at PR #664 (merge 8828cc5e): argument validation, the reflex-loop detector (window 3), auto-continue",
    "Moltis' main at 6bd2d118 (2026-08-21): as moltis, with window 2, type lists and scalar coercion in the validator",
    "the book's TypeScript AgentLoop: stop reasons, retries, cost cap, compaction, similarity loop detector",
    "clude_code's plan/step executor (master f965900): a plan run step by step, actions read from reply text",
];
