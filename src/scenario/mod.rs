//! The scenario model: parse a scenario file (TOML, or JSON for machine-written files), validate
//! it, and expand it into the [`Case`]s the runner replays (its own profile plus each `compare`
//! profile). Every problem comes back as a [`Diagnostic`] with line, column, what is wrong and a
//! hint. No I/O here: callers hand in the text.

mod bounds;
pub use bounds::MAX_USAGE_TOKENS;
pub mod generate;
mod locate;
pub use locate::{Seg, did_you_mean, json_token_start, line_col, suggest};
mod model;
mod plain;
mod recorded;
pub use recorded::{RECORDED_ASSUMPTIONS, holds_null, recorded_outcomes};
mod validate;
mod values;

pub use model::*;

pub use crate::diagnostic::Diagnostic;
use crate::policy::Config;
use std::sync::Arc;

/// Source format of a scenario text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    /// Human-written.
    Toml,
    /// Machine-written.
    Json,
}

/// One run to replay: a scenario under one profile.
#[derive(Debug, Clone)]
pub struct Case {
    /// `<scenario id>` for the scenario's own profile, `<scenario id>@<profile>` otherwise.
    pub id: String,
    /// Profile name.
    pub profile: String,
    /// Resolved configuration: the profile's own, shared, unless the scenario patches it.
    pub config: Arc<Config>,
    /// What the run must show.
    pub expect: Expect,
    /// The scenario.
    pub scenario: Arc<Scenario>,
    /// Whether the scenario declares this case (its own profile or a `compare` entry), so its
    /// golden and expectations gate the run; ad-hoc `--profile` cases are not gated.
    pub gated: bool,
    /// The line of the file where the case is declared, where reports point: its
    /// `[compare.PROFILE]` table, else 1.
    pub line: usize,
}

impl Case {
    /// What the run costs: the scenario model's own prices, the same under every profile (none
    /// stated: $0), so costs compare across profiles.
    pub fn prices(&self) -> Prices {
        self.scenario.model.prices
    }

    /// What this case's profile charges in its own accounting, which its cost guard reads: the
    /// scenario's prices, else the profile's table (the book's loop falls back to
    /// claude-sonnet-4-6's prices for a model it does not list).
    pub fn guard_prices(&self) -> Prices {
        self.config
            .prices_for(&self.scenario.model.name, self.scenario.model.prices)
    }
}

/// Parse, validate and expand a scenario text into its cases.
pub fn load(text: &str, format: SourceFormat, id: &str) -> Result<Vec<Case>, Vec<Diagnostic>> {
    let text = without_bom(text);
    let (scenario, compare_lines) = parse_located(text, format).map_err(|d| vec![d])?;
    let configs = validate::check(&scenario).map_err(|problems| {
        problems
            .into_iter()
            .map(|p| locate::diagnose(text, format, p))
            .collect::<Vec<_>>()
    })?;
    let scenario = Arc::new(scenario);
    Ok(configs
        .into_iter()
        .map(|(profile, config, expect)| Case {
            id: if profile == scenario.profile {
                id.to_owned()
            } else {
                format!("{id}@{profile}")
            },
            config,
            line: compare_lines
                .iter()
                .find(|(name, _)| *name == profile && profile != scenario.profile)
                .map_or(1, |(_, line)| *line),
            expect,
            scenario: Arc::clone(&scenario),
            gated: true,
            profile,
        })
        .collect())
}

/// The same scenario under another profile, for an ad-hoc comparison run: id
/// `<scenario id>@<profile>`, no expectations, not gated. `own` is the scenario's own case
/// (the first [`load`] returns; its id is the scenario id). `None` if the profile is unknown
/// or the scenario's `[config]` does not fit it.
pub fn ad_hoc(own: &Case, profile: &str) -> Option<Case> {
    let config = Config::patched(&Config::shared(profile)?, &own.scenario.config).ok()?;
    Some(Case {
        id: format!("{}@{profile}", own.id),
        profile: profile.to_owned(),
        config,
        expect: Expect::default(),
        scenario: Arc::clone(&own.scenario),
        gated: false,
        line: 1,
    })
}

/// Deserialize without cross-field checks.
pub fn parse(text: &str, format: SourceFormat) -> Result<Scenario, Diagnostic> {
    parse_located(without_bom(text), format).map(|(s, _)| s)
}

/// [`parse`], and the line of each `compare` entry (by profile): a TOML text is read once, by
/// the plain reader when it can, else into the general parser's spanned document, and either
/// gives both.
fn parse_located(
    text: &str,
    format: SourceFormat,
) -> Result<(Scenario, Vec<(String, usize)>), Diagnostic> {
    if format == SourceFormat::Json {
        let scenario: Scenario = serde_json::from_str(text).map_err(|e| {
            let msg = e.to_string();
            let msg = msg
                .rsplit_once(" at line ")
                .map_or(msg.as_str(), |(m, _)| m)
                .to_owned();
            let (line, col) = (e.line().max(1), e.column().max(1));
            locate::from_parser(line, json_token_start(text, line, col), &msg, true)
        })?;
        let lines = scenario
            .compare
            .keys()
            .map(|name| (name.clone(), locate::json_line(text, &["compare", name])))
            .collect();
        return Ok((scenario, lines));
    }
    // The plain subset scenario files use, read fast; anything else, and every error, by the
    // general parser.
    match plain::read(text) {
        Some((scenario, entries)) => Ok((scenario, locate::entry_lines(text, entries))),
        None => parse_general(text),
    }
}

/// [`parse_located`] for a TOML text, by the general TOML parser: every error located and worded.
fn parse_general(text: &str) -> Result<(Scenario, Vec<(String, usize)>), Diagnostic> {
    let located = |e: toml::de::Error| {
        let (line, col) = e.span().map_or((1, 1), |s| locate::line_col(text, s.start));
        locate::from_parser(line, col, e.message(), false)
    };
    let root = toml::de::DeTable::parse(text).map_err(located)?;
    let lines = locate::table_lines(text, root.get_ref(), "compare");
    let scenario =
        serde::Deserialize::deserialize(toml::de::Deserializer::from(root)).map_err(located)?;
    Ok((scenario, lines))
}

/// Whether the plain-TOML path read `text` as TOML values and as a scenario, after checking
/// each reading against the general parser's (a panic where they differ): for the fuzz target
/// `scenario_plain` and the tests.
#[cfg(any(test, feature = "fuzzing"))]
pub fn plain_agrees(text: &str) -> (bool, bool) {
    plain::agrees(text)
}

/// `text` without a leading UTF-8 byte order mark, which editors on some systems write and
/// do not show: read the same in TOML and JSON, and positions counted without it.
pub fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// JSON Schema of the scenario format.
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(Scenario);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

/// A diagnostic at a key path of a scenario text (for problems found after loading, such as a
/// script that runs dry during the run).
pub fn diagnose_at(
    text: &str,
    format: SourceFormat,
    path: Vec<Seg>,
    message: String,
    hint: Option<String>,
) -> Diagnostic {
    locate::diagnose(
        text,
        format,
        locate::Problem {
            path,
            at_key: true,
            message,
            hint,
        },
    )
}
