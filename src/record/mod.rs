//! Live recording and cassette replay — the network and file edge of the model side.
//!
//! - `cassette.rs`: the versioned cassette format and the one way an exchange becomes what the
//!   engine sees.
//! - `live.rs`: a [`crate::llm::Model`] over HTTP (OpenAI-compatible or Anthropic, whole or
//!   streamed) that tees scrubbed exchanges into a cassette.
//! - `player.rs`: a [`crate::llm::Model`] that replays a cassette under a strict request match.
//! - `scrub.rs`: secret scrubbing; `lint.rs`: `harness lint`; `promote.rs`: `harness promote`.
//!
//! Wire formats are pure and live in `provider/`; the engine is the same for a scenario, a
//! recording and a replay. Record modes follow VCR: `none` (replay only; forced when `CI` is
//! set), `once` (record when the cassette is absent, else replay), `new` (replay the matching
//! start of the cassette, record from the first request that differs), `all` (always record).

pub mod cassette;
pub mod lint;
pub mod live;
pub mod player;
pub mod promote;
pub mod scrub;

use crate::diagnostic::Cause;
use crate::engine;
use crate::llm::{Model, ModelError, ModelRequest, ModelResponse};
use crate::provider::matching::Matching;
use crate::provider::{Provider, WireOptions};
use crate::scenario::{self, Case, Diagnostic, Expect, SourceFormat};
use crate::store::{self, Layout};
use crate::trace::TimedEvent;
use cassette::{Cassette, ReplayOptions};
use live::{Endpoint, LiveModel};
use player::Player;
use scrub::Scrubber;
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// Suffix that marks a cassette file (`harness run` replays these).
pub const CASSETTE_SUFFIX: &str = ".cassette.json";

/// Is this file a cassette, by its name?
pub fn is_cassette(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(CASSETTE_SUFFIX))
}

/// VCR's record modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordMode {
    /// Never contact the provider: replay the cassette (the only mode when `CI` is set).
    None,
    /// Record when the cassette does not exist yet, else replay it.
    Once,
    /// Replay what matches, record from the first request that differs.
    New,
    /// Always record, replacing the cassette.
    All,
}

/// What `harness record` records: a scenario's case against a provider, into a cassette.
#[derive(Debug, Clone)]
pub struct RecordOptions {
    /// The scenario to run live (its tools answer from their scripted outcomes).
    pub scenario: PathBuf,
    /// Wire format of the provider.
    pub provider: Provider,
    /// Model name sent to the provider.
    pub model: String,
    /// Base URL as the official SDKs take it (default: the provider's own).
    pub base_url: Option<String>,
    /// Ask for streamed (SSE) responses.
    pub stream: bool,
    /// Record the scenario's case under this profile (its own, or one it compares with).
    pub profile: Option<String>,
    /// The cassette (default: [`default_out`]).
    pub out: Option<PathBuf>,
    /// Environment variable holding the key (default: the provider's).
    pub api_key_env: Option<String>,
    /// When to contact the provider; `CI` forces [`RecordMode::None`].
    pub record_mode: RecordMode,
    /// Output token limit to send.
    pub max_tokens: Option<u32>,
    /// Timeout of one request, in milliseconds.
    pub timeout_ms: u64,
    /// Longest real wait before a retry, in milliseconds.
    pub max_wait_ms: u64,
    /// Request fields strict replay ignores.
    pub ignore: Vec<String>,
    /// How a replayed request is compared with the recording (`--record-mode new`).
    pub matching: Matching,
}

/// A problem that ends a command with exit code 2: what, and a hint.
fn refuse(message: impl Into<String>, hint: impl Into<String>) -> Diagnostic {
    Diagnostic::new(message).hint(hint)
}

/// Environment variables whose values are scrubbed wherever they appear.
pub fn key_vars(extra: Option<&str>) -> Vec<String> {
    let mut v: Vec<String> = crate::provider::key_vars()
        .into_iter()
        .map(str::to_owned)
        .collect();
    v.extend(extra.map(str::to_owned));
    v
}

pub(crate) fn scrubber(extra: Option<&str>) -> Scrubber {
    let vars = key_vars(extra);
    Scrubber::from_env(&vars.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Load a scenario for recording or replay, and select the case of `profile` (its own profile
/// when `None`). A scenario written for recording may have no model script: it gets one
/// placeholder rule, since the live model or the cassette answers instead.
fn load_case(path: &Path, id: &str, profile: Option<&str>) -> Result<Case, Diagnostic> {
    let text = store::read_input_text(path, "scenario", crate::limits::MAX_SCENARIO_BYTES)
        .map_err(|e| {
            e.diagnostic(path, "cannot read the scenario: ")
                .hint("check the path (a cassette names its scenario relative to its own folder)")
        })?;
    let format = if path.extension().is_some_and(|e| e == "json") {
        SourceFormat::Json
    } else {
        SourceFormat::Toml
    };
    let located = |d: Diagnostic| {
        let hint = d.hint.clone().unwrap_or_else(|| "fix the scenario".into());
        d.hint(hint).in_file(path)
    };
    let parsed = scenario::parse(&text, format).map_err(located)?;
    let first = |d: Vec<Diagnostic>| {
        d.into_iter().next().map_or_else(
            || {
                refuse(
                    "the scenario is invalid",
                    "run `harness run` on it for details",
                )
            },
            located,
        )
    };
    let cases = match scenario::load(&text, format, id) {
        Ok(cases) => cases,
        // Only the missing script is wrong: stand a placeholder in for it (positions in the
        // file stay right, as every other problem is reported from the file itself).
        Err(d)
            if d.iter()
                .all(|d| d.message.contains("neither `turns` nor `rules`")) =>
        {
            let mut s = parsed;
            s.model.rules.push(scenario::RuleDef {
                when: Default::default(),
                reply: scenario::TurnDef {
                    text: Some(String::new()),
                    repeat: 1,
                    ..Default::default()
                },
                times: None,
            });
            let json = serde_json::to_string(&s).unwrap_or_default();
            scenario::load(&json, SourceFormat::Json, id).map_err(first)?
        }
        Err(d) => return Err(first(d)),
    };
    let n = cases.len();
    cases
        .into_iter()
        .find(|c| profile.is_none_or(|p| c.profile == p))
        .ok_or_else(|| Diagnostic::at(1, 1, format!(
                "the scenario has no case for profile `{}` ({n} cases)",
                profile.unwrap_or_default()
            )).hint("record one of the scenario's own or `[compare.NAME]` profiles (or re-record the cassette)").in_file(path))
}

/// The case as recorded (public for the fuzzer): its id becomes the cassette's, its model the one the provider was
/// asked for (the trace, prices and metrics name it), and its expectations go (the golden
/// gates a cassette).
pub fn retarget(case: &mut Case, id: String, model: &str) {
    let mut s = (*case.scenario).clone();
    s.model.name = model.to_owned();
    case.scenario = std::sync::Arc::new(s);
    case.id = id;
    case.expect = Expect::default();
    case.gated = true;
}

/// A replayed cassette.
#[derive(Debug)]
pub struct Replayed {
    /// The case, with the cassette's id and no expectations (its golden gates it).
    pub case: Case,
    /// The trace.
    pub events: Vec<TimedEvent>,
    /// Strict-match failures (a request that drifted, exchanges left unused).
    pub failures: Vec<String>,
    /// The run stopped at a drifted request and its trace so far is the start of the golden:
    /// the golden holds, only the request failed.
    pub drift_within_golden: bool,
}

/// The scenario a cassette names, as a path: relative to the cassette's folder, and refused
/// when it is absolute, lies outside the cassette's project ([`store::project_root`]: a
/// cassette given by any path, from any folder, can never make harness read
/// `../../../../etc/passwd`; links are resolved before the check), is not a scenario file or
/// is not there — at its place in the cassette, before anything is read.
fn scenario_path(
    cassette_path: &Path,
    c: &Cassette,
    text: &str,
    scenarios: Option<&Path>,
) -> Result<PathBuf, Diagnostic> {
    let at = text.find("\"scenario\"").map_or((1, 1), |i| {
        let value = text[i + "\"scenario\"".len()..]
            .find('"')
            .map_or(i, |j| i + "\"scenario\"".len() + j);
        scenario::line_col(text, value)
    });
    let refused = |message: String| {
        Diagnostic::at(at.0, at.1, message)
            .hint("a cassette names its scenario relative to its own folder, inside the project (as `harness record` writes it); re-record it or correct the path")
            .in_file(cassette_path)
    };
    let name = &c.scenario;
    if name.starts_with('/') || name.starts_with('\\') || name.contains(':') || name.contains('\0')
    {
        return Err(refused(format!(
            "the scenario reference `{name}` is not a relative path"
        )));
    }
    let dir = cassette_path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let relative: PathBuf = name.split(['/', '\\']).collect();
    // As the user would name it (ids and messages), and as the file system has it.
    let p = store::normalise(&dir.join(&relative));
    let roots = store::reference_roots(dir, scenarios);
    let real_dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let outside = |p: &Path| !roots.iter().any(|r| p.starts_with(r));
    if outside(&store::normalise(&real_dir.join(&relative))) {
        return Err(refused(format!(
            "the scenario reference `{name}` lies outside the project"
        )));
    }
    if !(name.ends_with(".toml") || name.ends_with(".json")) {
        return Err(refused(format!(
            "the scenario reference `{name}` does not name a scenario file (`.toml` or `.json`)"
        )));
    }
    match std::fs::canonicalize(&p) {
        Ok(real) if outside(&real) => Err(refused(format!(
            "the scenario reference `{name}` leads through a link outside the project"
        ))),
        Ok(_) if p.is_file() => Ok(p),
        _ => Err(refused(format!(
            "the scenario `{name}` the cassette names is not there ({})",
            p.display()
        ))),
    }
}

/// Read a cassette (within [`crate::limits::MAX_CASSETTE_BYTES`]) and resolve its scenario; an
/// agent's cassette, which has none, is refused with the command that replays it.
fn read_cassette(path: &Path, scenarios: Option<&Path>) -> Result<(Cassette, PathBuf), Diagnostic> {
    let (c, text) = load_cassette(path)?;
    if c.agent.is_some() {
        let at = text
            .find("\"agent\"")
            .map_or((1, 1), |i| scenario::line_col(&text, i));
        return Err(Diagnostic::at(
            at.0,
            at.1,
            "this cassette is an agent's conversation recorded by `harness proxy`: it has no scenario to run",
        )
        .hint("replay it against the agent with `harness exec CASSETTE -- COMMAND`, or turn it into a scenario with `harness promote`; `harness run` of a folder leaves such cassettes to `exec`")
        .in_file(path)
        .cause(Cause::AgentCassette));
    }
    let scenario = scenario_path(path, &c, &text, scenarios)?;
    Ok((c, scenario))
}

/// Read and parse a cassette (within [`crate::limits::MAX_CASSETTE_BYTES`]), and its text.
pub fn load_cassette(path: &Path) -> Result<(Cassette, String), Diagnostic> {
    let text = store::read_input_text(path, "cassette", crate::limits::MAX_CASSETTE_BYTES)
        .map_err(|e| {
            let (context, hint) = match e.kind() {
                std::io::ErrorKind::FileTooLarge => (
                    "",
                    "a cassette this large is not a recording harness made; see docs/robustness.md \"Limits\"",
                ),
                std::io::ErrorKind::InvalidData => (
                    "",
                    "cassettes are UTF-8 JSON written by `harness record`; re-record it",
                ),
                _ => ("cannot read: ", "check the path"),
            };
            e.diagnostic(path, context).hint(hint)
        })?;
    let c = cassette::parse(&text).map_err(|d| d.in_file(path))?;
    Ok((c, text))
}

/// The case a cassette replays (its id, its scenario retargeted to the recorded model),
/// without replaying it: what `harness list` shows for a cassette.
pub fn cassette_case(layout: &Layout, path: &Path) -> Result<Case, Diagnostic> {
    read_cassette(path, Some(&layout.scenarios))
        .and_then(|(c, scenario_file)| case_of(layout, path, &c, &scenario_file))
}

fn case_of(
    layout: &Layout,
    path: &Path,
    c: &Cassette,
    scenario_file: &Path,
) -> Result<Case, Diagnostic> {
    let mut case = load_case(
        scenario_file,
        &layout.id_of(scenario_file),
        Some(&c.profile),
    )?;
    retarget(&mut case, layout.id_of(path), &c.model);
    Ok(case)
}

/// Replay a cassette strictly through the engine (no network).
pub fn replay(layout: &Layout, path: &Path, matching: &Matching) -> Result<Replayed, Diagnostic> {
    let (c, scenario_file) = read_cassette(path, Some(&layout.scenarios))?;
    let case = case_of(layout, path, &c, &scenario_file)?;
    let Replay {
        events,
        miss,
        gap,
        unused,
    } = replay_case(&case, &c, matching);
    let mut failures = Vec::new();
    let mut drift_within_golden = false;
    if let Some(miss) = miss {
        failures.push(miss);
        let partial = crate::trace::render_golden(&case.id, &events);
        drift_within_golden = layout
            .read_golden(&case.id)
            .ok()
            .flatten()
            .is_some_and(|g| g.starts_with(&partial));
    } else if let Some(gap) = gap {
        return Err(
            Diagnostic::at(1, 1, format!("replaying {}: {gap}", path.display()))
                .hint("the scenario's tools or approvals no longer answer what the recording asks")
                .in_file(&scenario_file),
        );
    } else if let Some(unused) = unused {
        failures.push(unused);
    }
    Ok(Replayed {
        case,
        events,
        failures,
        drift_within_golden,
    })
}

/// What a strict replay of a parsed cassette came to (pure: no files).
#[derive(Debug)]
pub struct Replay {
    /// The trace.
    pub events: Vec<TimedEvent>,
    /// The request that did not match what was recorded, explained.
    pub miss: Option<String>,
    /// The script gap that cut the run short.
    pub gap: Option<engine::ScriptGap>,
    /// The run ended before using every recorded exchange, explained.
    pub unused: Option<String>,
}

/// Replay `c` strictly through `case` (already retargeted to the cassette): the engine with
/// the cassette's player as its model. Pure, for `harness run` and the fuzzer.
pub fn replay_case(case: &Case, c: &Cassette, matching: &Matching) -> Replay {
    let mut player = Player::new(c, scrubber(None), matching);
    let (events, gap) = engine::run_case(case, &mut player);
    let miss = player.miss.take();
    let unused = (miss.is_none() && gap.is_none() && player.used() < c.exchanges.len()).then(|| {
        format!(
            "the run to use all {} recorded exchanges, but it ended after {}\nhint: the loop now stops earlier than when it was recorded; re-record with `harness record --record-mode all` if that is intended",
            c.exchanges.len(),
            player.used()
        )
    });
    Replay {
        events,
        miss,
        gap,
        unused,
    }
}

/// The default cassette path: `fixtures/cassettes/<stem>.cassette.json` beside the scenario.
pub fn default_out(scenario: &Path) -> PathBuf {
    let stem = scenario
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("run");
    scenario
        .parent()
        .unwrap_or(Path::new(""))
        .join("fixtures")
        .join("cassettes")
        .join(format!("{stem}{CASSETTE_SUFFIX}"))
}

/// How a cassette was recorded where a command asks otherwise (`provider openai, model m` where
/// it asks …), if it does: a replay would silently answer another question.
fn asked_otherwise(c: &Cassette, args: &RecordOptions) -> Option<String> {
    let mut recorded = Vec::new();
    let mut asked = Vec::new();
    if c.provider != args.provider {
        recorded.push(format!("provider {}", c.provider.as_str()));
        asked.push(format!("provider {}", args.provider.as_str()));
    }
    if c.model != args.model {
        recorded.push(format!("model {}", c.model));
        asked.push(format!("model {}", args.model));
    }
    if c.stream != args.stream {
        let mode = |s: bool| {
            if s {
                "streamed answers"
            } else {
                "whole answers"
            }
        };
        recorded.push(mode(c.stream).to_owned());
        asked.push(mode(args.stream).to_owned());
    }
    (!recorded.is_empty()).then(|| {
        format!(
            "{} where this command asks for {}",
            recorded.join(", "),
            asked.join(", ")
        )
    })
}

/// `to` relative to the folder `from`, with `/` separators.
fn relative(from: &Path, to: &Path) -> String {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (from, to) = (abs(from), abs(to));
    let (from, to) = (from.as_path(), to.as_path());
    let norm = |p: &Path| -> Vec<String> {
        p.components()
            .filter_map(|c| match c {
                Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                Component::ParentDir => Some("..".to_owned()),
                _ => None,
            })
            .collect()
    };
    let (a, b) = (norm(from), norm(to));
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut parts: Vec<String> = std::iter::repeat_n("..".to_owned(), a.len() - common).collect();
    parts.extend(b[common..].iter().cloned());
    parts.join("/")
}

/// A model that replays the matching start of a cassette, then goes live (`--record-mode new`).
struct Hybrid<'a> {
    player: Player<'a>,
    live: LiveModel,
    replaying: bool,
}

impl Model for Hybrid<'_> {
    fn respond(&mut self, request: &ModelRequest<'_>) -> Result<ModelResponse, ModelError> {
        if self.replaying {
            let wire = self.player.wire_request(request);
            if self.player.matches_next(&wire) {
                return self.player.answer_next(request);
            }
            self.replaying = false;
        }
        self.live.respond(request)
    }
}

/// What `harness record` did.
pub struct Recorded {
    /// The cassette path.
    pub out: PathBuf,
    /// The case id (the cassette's).
    pub case: Case,
    /// The trace.
    pub events: Vec<TimedEvent>,
    /// Whether the provider was contacted (else the cassette was replayed).
    pub live: bool,
    /// Exchanges in the cassette.
    pub exchanges: usize,
    /// Strict-replay failures (modes that replay).
    pub failures: Vec<String>,
}

/// `harness record`.
pub fn record(args: &RecordOptions, layout: &Layout, ci: bool) -> Result<Recorded, Diagnostic> {
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| default_out(&args.scenario));
    check_out(&out, &args.scenario, &layout.scenarios)?;
    let mode = if ci {
        RecordMode::None
    } else {
        args.record_mode
    };
    let exists = out.exists();
    let replay_only = match mode {
        RecordMode::None if !exists => {
            return Err(refuse(
                format!(
                    "no cassette at {} and record mode `none` never contacts a provider",
                    out.display()
                ),
                if ci {
                    "CI is set, so only replay is allowed: record locally and commit the cassette"
                } else {
                    "pass `--record-mode once` to record it"
                },
            ));
        }
        RecordMode::None | RecordMode::Once => exists,
        RecordMode::New | RecordMode::All => false,
    };
    if replay_only {
        let recorded = read_cassette(&out, Some(&layout.scenarios))?.0;
        if let Some(differs) = asked_otherwise(&recorded, args) {
            return Err(refuse(
                format!(
                    "the cassette at {} was recorded with {differs}, so replaying it would not answer what this command asks",
                    out.display()
                ),
                "pass `--record-mode all` to record it again this way, or `--out` another cassette",
            ));
        }
        let r = replay(layout, &out, &args.matching)?;
        let exchanges = recorded.exchanges.len();
        return Ok(Recorded {
            out,
            case: r.case,
            events: r.events,
            live: false,
            exchanges,
            failures: r.failures,
        });
    }
    let var = args
        .api_key_env
        .clone()
        .unwrap_or_else(|| args.provider.key_env().to_owned());
    // Surrounding whitespace (a pasted newline) is no part of a key.
    let key = std::env::var(&var).ok().map(|k| k.trim().to_owned()).filter(|k| !k.is_empty()).ok_or_else(|| {
        refuse(
            format!("`{var}` is not set"),
            "export the provider key in that variable (or name another with --api-key-env); local servers that need none accept any value",
        )
    })?;
    let scrub = scrubber(Some(&var));
    let base_url = args
        .base_url
        .clone()
        .unwrap_or_else(|| args.provider.default_base_url().to_owned());
    check_base_url(&base_url)?;
    let mut case = load_case(
        &args.scenario,
        &layout.id_of(&args.scenario),
        args.profile.as_deref(),
    )?;
    let recorded_case = case.id.clone();
    retarget(&mut case, layout.id_of(&out), &args.model);
    let options = WireOptions {
        model: args.model.clone(),
        stream: args.stream,
        max_tokens: args.max_tokens,
    };
    let endpoint = Endpoint {
        provider: args.provider,
        base_url: base_url.clone(),
        key,
        options,
        timeout: Duration::from_millis(args.timeout_ms),
        max_wait: Duration::from_millis(args.max_wait_ms),
    };
    let live = LiveModel::new(endpoint, scrub.clone(), case.config.retry.clone()).map_err(|e| {
        refuse(
            format!("cannot start the HTTP client: {e}"),
            "report this as a bug",
        )
    })?;
    let out_dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut cassette = Cassette {
        version: cassette::SCENARIO_VERSION,
        scenario: relative(out_dir, &args.scenario),
        case: recorded_case,
        profile: case.profile.clone(),
        agent: None,
        provider: args.provider,
        model: args.model.clone(),
        base_url: scrub.scrub(&base_url),
        stream: args.stream,
        max_tokens: args.max_tokens,
        replay: ReplayOptions {
            ignore: args.ignore.clone(),
            ..ReplayOptions::default()
        },
        exchanges: Vec::new(),
    };
    let old = if mode == RecordMode::New && exists {
        Some(read_cassette(&out, Some(&layout.scenarios))?.0)
    } else {
        None
    };
    let (events, gap, fatal, exchanges) = match &old {
        Some(old) => {
            let mut h = Hybrid {
                player: Player::new(old, scrub.clone(), &args.matching),
                live,
                replaying: true,
            };
            let (events, gap) = engine::run_case(&case, &mut h);
            let mut ex: Vec<_> = old.exchanges[..h.player.used()].to_vec();
            ex.extend(h.live.exchanges);
            (events, gap, h.live.fatal, ex)
        }
        None => {
            let mut live = live;
            let (events, gap) = engine::run_case(&case, &mut live);
            (events, gap, live.fatal, live.exchanges)
        }
    };
    if let Some(f) = fatal {
        return Err(match f {
            live::Fatal::Unreachable(m) => refuse(
                format!("cannot reach the provider: {m}"),
                "nothing answered at the base URL: check --base-url and that the server is running; nothing was written",
            ),
            live::Fatal::TooLarge(m) => refuse(
                m,
                "a cassette must stay small enough for `harness run` to replay (docs/robustness.md \"Limits\"); ask for a shorter answer (--max-tokens); nothing was written",
            ),
            live::Fatal::Refused(m) => refuse(
                format!("the provider refused the request: {m}"),
                "check the key, the model name and the base URL; nothing was written",
            ),
        });
    }
    if let Some(gap) = gap {
        return Err(refuse(
            format!("{}: {gap}", args.scenario.display()),
            "the scenario's tools or approvals do not answer what the live model asked; add outcomes or a `default`",
        ));
    }
    cassette.exchanges = exchanges;
    let text = cassette::render(&cassette);
    if let Some(m) = crate::limits::file_too_large(
        "cassette",
        text.len() as u64,
        crate::limits::MAX_CASSETTE_BYTES,
    ) {
        return Err(refuse(
            format!("{m}, which `harness run` would refuse to replay"),
            "record a shorter run (lower max_iterations, or --max-tokens); nothing was written",
        ));
    }
    store::write_atomic(&out, text.as_bytes()).map_err(|e| {
        refuse(
            format!("cannot write {}: {e}", out.display()),
            "check the folder's permissions",
        )
    })?;
    Ok(Recorded {
        exchanges: cassette.exchanges.len(),
        out,
        case,
        events,
        live: true,
        failures: Vec::new(),
    })
}

/// Refuse an `--out` that is not a cassette (by its name, which is how `harness run` finds
/// cassettes) or is the scenario itself: a recording never replaces a scenario, and a cassette
/// must name a scenario inside its own project.
fn check_out(out: &Path, scenario: &Path, scenarios: &Path) -> Result<(), Diagnostic> {
    if !is_cassette(out) {
        return Err(refuse(
            format!(
                "--out must name a cassette (`*{CASSETTE_SUFFIX}`), not {}",
                out.display()
            ),
            "`harness run` recognises cassettes by that suffix; e.g. --out fixtures/cassettes/NAME.cassette.json",
        ));
    }
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same(out, scenario) {
        return Err(refuse(
            format!("--out {} is the scenario being recorded", out.display()),
            "name another file for the cassette",
        ));
    }
    let dir = out
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let roots = store::reference_roots(dir, Some(scenarios));
    let inside =
        std::fs::canonicalize(scenario).is_ok_and(|s| roots.iter().any(|r| s.starts_with(r)));
    if !inside && scenario.is_file() {
        return Err(refuse(
            format!(
                "the scenario {} lies outside the project of the cassette {}",
                scenario.display(),
                out.display()
            ),
            "keep the cassette inside the scenario's project (a cassette may only name a scenario there)",
        ));
    }
    Ok(())
}

/// Refuse a base URL the client would misread: no `http`/`https` scheme, no host, or
/// credentials in it (they would be stored in the cassette and sent as Basic auth).
pub fn check_base_url(base: &str) -> Result<(), Diagnostic> {
    let hint = "write it as the official SDKs take it, e.g. http://127.0.0.1:8000/v1 or https://api.openai.com/v1";
    if !base.contains("://") {
        return Err(refuse(format!("the base URL `{base}` has no scheme"), hint));
    }
    let url = reqwest::Url::parse(base)
        .map_err(|e| refuse(format!("the base URL is not a URL: {e}"), hint))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(refuse(
            format!(
                "the base URL's scheme `{}` is not http or https",
                url.scheme()
            ),
            hint,
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        let mut shown = url.clone();
        let _ = shown.set_username("");
        let _ = shown.set_password(None);
        return Err(refuse(
            format!(
                "the base URL holds credentials (user:password@ before {}); they would be stored in the cassette and sent as Basic auth",
                shown.host_str().unwrap_or_default()
            ),
            "remove them: the key is read from the environment (--api-key-env), never from the URL",
        ));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(refuse(format!("the base URL `{base}` has no host"), hint));
    }
    Ok(())
}

/// `harness promote` of a scenario's cassette: write the promoted scenario (to `out`, else
/// `<scenario>.promoted.toml` beside the recorded scenario); its path.
pub fn promote_cassette(cassette: &Path, out: Option<&Path>) -> Result<PathBuf, Diagnostic> {
    let (c, scenario_file) = read_cassette(cassette, None)?;
    let text = store::read_input_text(
        &scenario_file,
        "scenario",
        crate::limits::MAX_SCENARIO_BYTES,
    )
    .map_err(|e| {
        e.diagnostic(&scenario_file, "cannot read the recorded scenario: ")
            .hint("a cassette names its scenario relative to its own folder")
    })?;
    let format = if scenario_file.extension().is_some_and(|e| e == "json") {
        SourceFormat::Json
    } else {
        SourceFormat::Toml
    };
    let s = scenario::parse(&text, format).map_err(|d| {
        let hint = d.hint.clone().unwrap_or_default();
        d.hint(hint).in_file(&scenario_file)
    })?;
    let promoted = promote::promote(&c, s, &cassette.display().to_string());
    let out = out.map(Path::to_path_buf).unwrap_or_else(|| {
        let stem = scenario_file
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("run");
        scenario_file.with_file_name(format!("{stem}.promoted.toml"))
    });
    write_promoted(&promoted, &out)?;
    Ok(out)
}

/// Write a promoted scenario as TOML, in the hand-written shape (defaults left out).
pub fn write_promoted(promoted: &scenario::Scenario, out: &Path) -> Result<(), Diagnostic> {
    write_scenario(
        promoted,
        out,
        "# Promoted from a recording by `harness promote`: edit freely.\n",
    )
}

/// Write a generated scenario as TOML in the hand-written style (defaults and empty tables
/// left out), atomically, below a `header` comment.
pub fn write_scenario(
    promoted: &scenario::Scenario,
    out: &Path,
    header: &str,
) -> Result<(), Diagnostic> {
    let body = scenario_text(promoted, header)?;
    store::write_atomic(out, body.as_bytes()).map_err(|e| {
        refuse(
            format!("cannot write {}: {e}", out.display()),
            "check the folder's permissions",
        )
    })
}

/// A scenario as the TOML file [`write_scenario`] writes, `header` first.
pub fn scenario_text(promoted: &scenario::Scenario, header: &str) -> Result<String, Diagnostic> {
    let mut value = serde_json::to_value(promoted).unwrap_or_default();
    prune(&mut value);
    let mut body = toml::to_string_pretty(&value).map_err(|e| {
        refuse(
            format!("cannot write the scenario as TOML: {e}"),
            "report this as a bug",
        )
    })?;
    body.insert_str(0, header);
    Ok(body)
}

/// Drop what a hand-written scenario leaves out: empty lists and tables, and the defaults
/// `repeat = 1`, `needs_approval = false`, `without_tools = "as_scripted"`. Values that are
/// data, not the scenario's shape (arguments, schemas, configuration patches, event fields,
/// workspace files), are kept as they are but for their nulls, which TOML cannot hold: an
/// empty list among a call's arguments is part of the call, and `args = {}` (a call without
/// arguments) is not the same as no `args`.
fn prune(v: &mut serde_json::Value) {
    use serde_json::Value;
    const DATA: [&str; 5] = ["args", "schema", "config", "where", "workspace"];
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                if DATA.contains(&k.as_str()) {
                    drop_nulls(x);
                } else {
                    prune(x);
                }
            }
            o.retain(|k, x| {
                if k == "args" && !x.is_null() {
                    return true;
                }
                let default = match k.as_str() {
                    "repeat" => x.as_u64() == Some(1),
                    "needs_approval" => x.as_bool() == Some(false),
                    "without_tools" => x.as_str() == Some("as_scripted"),
                    "description" | "schema" => false,
                    _ => false,
                };
                let empty = match x {
                    Value::Array(a) => a.is_empty(),
                    Value::Object(m) => m.is_empty() && k != "schema",
                    Value::Null => true,
                    _ => false,
                };
                !(default || empty)
            });
        }
        Value::Array(a) => a.iter_mut().for_each(prune),
        _ => {}
    }
}

/// Drop the nulls inside a data value, which TOML cannot hold (a schema's `"default": null`);
/// everything else stays as it is.
fn drop_nulls(v: &mut serde_json::Value) {
    use serde_json::Value;
    match v {
        Value::Object(o) => {
            o.retain(|_, x| !x.is_null());
            o.values_mut().for_each(drop_nulls);
        }
        Value::Array(a) => {
            a.retain(|x| !x.is_null());
            a.iter_mut().for_each(drop_nulls);
        }
        _ => {}
    }
}

/// `harness lint` of `paths` (default: `scenarios`, `fixtures` and `snapshots`, those that
/// exist): the exit code.
pub fn lint_paths(
    paths: &[PathBuf],
    allow_empty: bool,
    out: &mut dyn std::io::Write,
) -> std::io::Result<crate::results::ExitStatus> {
    let paths = if paths.is_empty() {
        ["scenarios", "fixtures", "snapshots"]
            .iter()
            .map(PathBuf::from)
            .filter(|p| p.exists())
            .collect()
    } else {
        paths.to_vec()
    };
    lint::report(&lint::lint(&paths, &scrubber(None)), allow_empty, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_and_default_out() {
        assert_eq!(
            relative(
                Path::new("scenarios/record/fixtures/cassettes"),
                Path::new("scenarios/record/reflex.toml")
            ),
            "../../reflex.toml"
        );
        assert_eq!(
            relative(Path::new("a"), Path::new("b/c.toml")),
            "../b/c.toml"
        );
        assert_eq!(
            default_out(Path::new("scenarios/record/reflex.toml")),
            PathBuf::from("scenarios/record/fixtures/cassettes/reflex.cassette.json")
        );
        assert!(is_cassette(Path::new("x/y.cassette.json")));
        assert!(!is_cassette(Path::new("x/y.json")));
    }

    #[test]
    fn a_written_scenario_keeps_its_data_and_loses_only_what_toml_cannot_hold() {
        use crate::scenario::{CallDef, OutcomeDef, ToolDef, TurnDef};
        use serde_json::json;
        let mut s = scenario::Scenario::recorded("recorded", Vec::new(), String::new());
        s.user = "go".to_owned();
        // A schema as pydantic writes an optional field: `"default": null`.
        let mut tool = ToolDef::open(
            "search",
            "",
            json!({"type": "object", "properties": {"limit": {"type": ["integer", "null"], "default": null}, "tags": {"type": "array"}}}),
        );
        tool.outcomes.push(OutcomeDef {
            args: Some(json!({})),
            ok: Some("nothing".to_owned()),
            ..OutcomeDef::default()
        });
        s.tools.push(tool);
        s.model.turns.push(TurnDef {
            tool_calls: vec![CallDef {
                id: None,
                name: "search".to_owned(),
                args: Some(json!({"q": "x", "tags": [], "filters": {}}).into()),
                raw_args: None,
                generate: None,
                seed: None,
            }],
            repeat: 1,
            ..TurnDef::default()
        });
        let text = scenario_text(&s, "").expect("it writes");
        let back: toml::Table = toml::from_str(&text).expect("it parses");
        let call = &back["model"]["turns"][0]["tool_calls"][0]["args"];
        assert_eq!(call["tags"].as_array().map(Vec::len), Some(0), "{text}");
        assert!(
            call["filters"]
                .as_table()
                .is_some_and(toml::Table::is_empty),
            "{text}"
        );
        let outcome = &back["tools"][0]["outcomes"][0];
        assert!(
            outcome["args"]
                .as_table()
                .is_some_and(toml::Table::is_empty),
            "{text}"
        );
        let limit = &back["tools"][0]["schema"]["properties"]["limit"];
        assert!(
            limit.get("default").is_none() && limit.get("type").is_some(),
            "{text}"
        );
        assert!(
            scenario::load(&text, scenario::SourceFormat::Toml, "x").is_ok(),
            "{text}"
        );
    }
}
