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
        for p in crate::policy::PROFILES {
            writeln!(out, "{:<11} {}", p.name, p.summary)?;
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
