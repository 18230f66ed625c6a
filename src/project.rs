//! The project file, `harness.toml`: where a project's scenarios, goldens and metric baseline
//! live, and the defaults of `harness run`. Found by walking up from the current folder (as
//! cargo finds `Cargo.toml`), so every command run anywhere inside the project resolves the
//! same paths; its paths are relative to its own folder. Without one, paths are relative to
//! the current folder, as they always were.
//!
//! It owns reading, validating (format version, unknown keys with a suggestion, located
//! errors) and resolving the file, and nothing else: the commands take the resolved paths.
//! The format's reference is [`ProjectFile`], whose docs become `schema/harness.schema.json`.

use crate::diagnostic::{Cause, Diagnostic, Serde};
use crate::provider::matching::{Matching, Part};
use crate::scenario::{Seg, SourceFormat};
use crate::store::relative_to;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The file name looked for.
pub const FILE_NAME: &str = "harness.toml";

/// The newest project-file format this build reads.
pub const FORMAT_VERSION: i64 = 1;

/// `harness.toml`: a project's layout and run defaults. Paths are relative to the folder the
/// file is in; command-line flags override every value.
#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "harness project file (harness.toml)")]
pub struct ProjectFile {
    /// Format version; must be 1.
    pub format: i64,
    /// Root of scenario ids (a scenario's id is its path below it), and what `harness run`,
    /// `list` and `bless` take when given no path. Default `scenarios`.
    #[serde(default = "default_scenarios")]
    pub scenarios: String,
    /// Folder of the reviewed goldens, mirroring the scenario ids. Default `snapshots`.
    #[serde(default = "default_snapshots")]
    pub snapshots: String,
    /// The metric baseline: what `harness bless` writes, and what `harness run`, `merge` and
    /// `exec` compare with when given no `--baseline` (`--no-baseline` skips it). Default:
    /// none (`bless` writes `baselines/scenarios.toml`, and runs compare with nothing).
    #[serde(default)]
    pub baseline: Option<String>,
    /// Defaults of `harness run` (and of `merge` and `exec` where they apply).
    #[serde(default)]
    pub run: RunDefaults,
    /// How recordings replay: `run` of scenario cassettes, `exec` and `serve` of agent
    /// cassettes.
    #[serde(default)]
    pub replay: ReplayDefaults,
    /// How the failure-mode suite (and every served portable scenario) drives the agent.
    #[serde(default)]
    pub suite: SuiteDefaults,
}

/// Defaults of `harness suite`, `exec` and `serve` for portable scenarios; `--bind` overrides.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SuiteDefaults {
    /// The agent's tools (names or globs, `*` any run of characters) the scenarios' portable
    /// tools bind to first, in order of preference (`--bind`).
    #[serde(default)]
    pub bind: Vec<String>,
}

/// What counts when a replayed request is compared with the recording; `--match` overrides
/// `match`, and `--ignore` adds to `ignore`.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReplayDefaults {
    /// Request paths no replay compares, besides the volatile fields and each cassette's own
    /// `replay.ignore`: object keys and array indices separated by `/`, `*` for any
    /// (`messages/*/name`).
    #[serde(default)]
    pub ignore: Vec<String>,
    /// The parts of a request that count: any of `model`, `messages` (the conversation, the
    /// system prompt and instructions), `tools` (the tools offered and the tool choice) and
    /// `params` (everything else: sampling, limits, streaming). Default: all four.
    #[serde(default, rename = "match")]
    pub parts: Vec<String>,
    /// Volatile text made alike in requests before a replay compares them — vcrpy's
    /// `before_record_request`: a timestamp in the system prompt matches, while a real change
    /// of the prompt still diverges. Each rule: `path` (a request path, `*` for any key or
    /// index; every string at or below it), `pattern` (a regular expression), `replace`.
    #[serde(default)]
    pub normalize: Vec<NormalizeRule>,
    /// Regular expressions for volatile text no golden shows (a shell tool's `Chunk ID:
    /// 0e7f41`, `Wall time: 0.2 seconds`): each match reads `<redacted>` in every golden
    /// written or compared, of replays, served agents and scenarios alike.
    #[serde(default)]
    pub redact: Vec<String>,
    /// `false`: judge a replay by its recording alone (every request matched, every recorded
    /// exchange played, the agent's exit), with no golden to accept — vcrpy's way, as
    /// `exec --cassettes-only`. Default `true`: the golden of each conversation's trace too.
    #[serde(default)]
    pub golden: Option<bool>,
}

impl ReplayDefaults {
    /// The matching these defaults give, with `parts` (`--match`) instead of the file's when
    /// given and `ignore` (`--ignore`) added.
    pub fn matching(&self, parts: &[Part], ignore: &[String]) -> Matching {
        let own: Vec<Part> = self.parts.iter().filter_map(|p| Part::parse(p)).collect();
        let all_ignored: Vec<String> = self.ignore.iter().chain(ignore).cloned().collect();
        let matching = Matching::new(if parts.is_empty() { &own } else { parts }, &all_ignored);
        // The rules were checked when the file was read (`parse`).
        let rules: Vec<(String, String, String)> = self
            .normalize
            .iter()
            .map(|r| (r.path.clone(), r.pattern.clone(), r.replace.clone()))
            .collect();
        let normalized = matching.clone().normalizing(&rules).unwrap_or(matching);
        normalized
            .clone()
            .redacting(&self.redact)
            .unwrap_or(normalized)
    }
}

/// One `[replay] normalize` rule.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NormalizeRule {
    /// Where: a request path (`messages/*/content`, `*` any key or index); every string at or
    /// below it.
    pub path: String,
    /// A regular expression.
    pub pattern: String,
    /// What each match becomes. Default `<normalized>`.
    #[serde(default = "default_normalized")]
    pub replace: String,
}

fn default_normalized() -> String {
    "<normalized>".to_owned()
}

/// Defaults of `harness run`; the command line overrides each.
#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunDefaults {
    /// Worker threads (`--jobs`); default: the machine's cores. Results do not depend on it.
    #[serde(default)]
    pub jobs: Option<usize>,
    /// Failing cases shown in full before the rest get one line each (`--diff-limit`): a
    /// number, or `"all"`. Default 10.
    #[serde(default)]
    pub diff_limit: Option<DiffLimit>,
    /// Profiles every scenario also runs under, ad hoc and not gated (`--profile`), e.g.
    /// `["none"]` to see what each defence saves in every run.
    #[serde(default)]
    pub profile: Vec<String>,
}

/// A number of cases, or all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum DiffLimit {
    /// This many.
    Cases(usize),
    /// `"all"`.
    All(AllCases),
}

/// The word `all`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AllCases {
    /// Every failing case in full.
    All,
}

impl DiffLimit {
    /// The limit as a count (`all` is unbounded).
    pub fn cases(self) -> usize {
        match self {
            Self::Cases(n) => n,
            Self::All(_) => usize::MAX,
        }
    }
}

impl ProjectFile {
    /// The paths the file gives, by key (those it names).
    fn paths(&self) -> impl Iterator<Item = (&'static str, &String)> {
        [
            ("scenarios", Some(&self.scenarios)),
            ("snapshots", Some(&self.snapshots)),
            ("baseline", self.baseline.as_ref()),
        ]
        .into_iter()
        .filter_map(|(key, value)| value.map(|v| (key, v)))
    }
}

fn default_scenarios() -> String {
    "scenarios".to_owned()
}

fn default_snapshots() -> String {
    "snapshots".to_owned()
}

/// A project file found and read: where it is, and its paths made relative to the current
/// folder (so messages name them as a user in that folder would).
#[derive(Debug, Clone)]
pub struct Project {
    /// The file, as found (absolute).
    pub file: PathBuf,
    /// Its contents.
    pub config: ProjectFile,
    /// The scenarios root, from the current folder.
    pub scenarios: PathBuf,
    /// The goldens folder, from the current folder.
    pub snapshots: PathBuf,
    /// The baseline, from the current folder.
    pub baseline: Option<PathBuf>,
    /// The project's root folder, from the current folder.
    pub root: PathBuf,
}

/// The nearest `harness.toml` in `dir` or a folder above it, up to the repository's root: the
/// walk stops at the first folder holding `.git` (a folder, or a worktree's file), so a
/// project file in a folder above a checkout (a shared temporary folder, a CI workspace) never
/// takes over a checkout that has none.
pub fn find(dir: &Path) -> Option<PathBuf> {
    for folder in dir.ancestors() {
        let file = folder.join(FILE_NAME);
        // A link to nothing is found too, so that reading it says so rather than the walk
        // going on to a project file above.
        let link = file
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink());
        if file.is_file() || link {
            return Some(file);
        }
        if folder.join(".git").exists() {
            return None;
        }
    }
    None
}

/// Where `value`, a path of the project file relative to its folder, leads without leaving
/// it: `Err` when a `..` climbs past the folder, or when what it names (or the nearest folder
/// of it that exists) resolves, through a link, to somewhere outside.
fn stays_inside(root: &Path, value: &str) -> Result<(), String> {
    let mut depth = 0usize;
    for part in Path::new(value).components() {
        match part {
            std::path::Component::ParentDir => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| format!("`{value}` leads out of the project's folder"))?;
            }
            std::path::Component::Normal(_) => depth += 1,
            _ => {}
        }
    }
    let Ok(real_root) = root.canonicalize() else {
        return Ok(());
    };
    let target = root.join(value);
    match target.ancestors().find_map(|a| a.canonicalize().ok()) {
        Some(real) if !real.starts_with(&real_root) => Err(format!(
            "`{value}` resolves to {}, outside the project's folder (a link)",
            real.display()
        )),
        _ => Ok(()),
    }
}

/// Find the project file above the current folder `cwd` and read it; `Ok(None)` when there is
/// none.
pub fn discover(cwd: &Path) -> Result<Option<Project>, Diagnostic> {
    let Some(file) = find(cwd) else {
        return Ok(None);
    };
    let text =
        crate::store::read_input_text(&file, "project file", crate::limits::MAX_SCENARIO_BYTES)
            .map_err(|e| {
                e.diagnostic(&relative_to(&file, cwd), "cannot read: ")
                    .hint_by(|cause| match cause {
                        Cause::NotUtf8 => "save the project file as UTF-8".to_owned(),
                        _ if !file.exists() => {
                            format!("{FILE_NAME} is a link to nothing: mend the link or remove it")
                        }
                        _ => "check the file's permissions; it must be UTF-8 TOML".to_owned(),
                    })
            })?;
    // Errors name the file as the user would: from the current folder.
    let config = parse(&text).map_err(|d| d.in_file(&relative_to(&file, cwd)))?;
    let root = file.parent().unwrap_or(Path::new("/"));
    for (key, value) in config.paths() {
        if let Err(message) = stays_inside(root, value) {
            let path = vec![Seg::Key(key.to_owned())];
            return Err(crate::scenario::diagnose_at(
                &text,
                SourceFormat::Toml,
                path,
                format!("`{key}`: {message}"),
                Some("a project's paths stay inside the folder harness.toml is in, so that no command reads or writes outside the checkout; move the folder inside it".to_owned()),
            )
            .in_file(&relative_to(&file, cwd)));
        }
    }
    let from_cwd = |rel: &str| relative_to(&root.join(rel), cwd);
    Ok(Some(Project {
        scenarios: from_cwd(&config.scenarios),
        snapshots: from_cwd(&config.snapshots),
        baseline: config.baseline.as_deref().map(from_cwd),
        root: relative_to(root, cwd),
        file: file.clone(),
        config,
    }))
}

/// Parse and validate a project file's text.
pub fn parse(text: &str) -> Result<ProjectFile, Diagnostic> {
    let config: ProjectFile = toml::from_str(text).map_err(|e| {
        let (line, col) = e
            .span()
            .map_or((1, 1), |s| crate::scenario::line_col(text, s.start));
        let message = e.message().trim().to_owned();
        let read = Serde::read(&message);
        let mut hint = hint_for(&read);
        let cause = read.cause;
        // The deserializer's words for two common slips, in the user's.
        let message = match message.strip_prefix("invalid type: string ") {
            Some(rest)
                if ["usize", "u64", "u32", "u16", "u8", "i64"]
                    .iter()
                    .any(|t| rest.ends_with(&format!("expected {t}"))) =>
            {
                let value = rest.split(", expected").next().unwrap_or(rest);
                let bare = value.trim_matches('"');
                hint = if bare.trim().parse::<f64>().is_ok() {
                    format!("write the number without quotes: {bare}")
                } else {
                    "write a whole number, without quotes (`format = 1`, `jobs = 2`)".to_owned()
                };
                format!("a whole number is expected here, not the string {value}")
            }
            _ => message,
        };
        if let Some(h) = crate::diagnostic::toml_syntax_hint(&message) {
            hint = h.to_owned();
        }
        Diagnostic::at(line, col, message).hint(hint).cause(cause)
    })?;
    let at = |path: &[&str], message: String, hint: String| {
        let path = path.iter().map(|k| Seg::Key((*k).to_owned())).collect();
        crate::scenario::diagnose_at(text, SourceFormat::Toml, path, message, Some(hint))
    };
    if config.format != FORMAT_VERSION {
        return Err(at(
            &["format"],
            format!(
                "project file format {} is not one this harness reads ({FORMAT_VERSION})",
                config.format
            ),
            format!("write `format = {FORMAT_VERSION}`, or upgrade harness"),
        ));
    }
    for (key, value) in config.paths() {
        if value.is_empty() || Path::new(value).is_absolute() || value.starts_with('\\') {
            return Err(at(
                &[key],
                format!("`{key}` must be a path relative to the project file, not `{value}`"),
                "write it relative to the folder harness.toml is in, e.g. `scenarios`, so the project works wherever it is cloned".to_owned(),
            ));
        }
    }
    if config.run.jobs == Some(0) {
        return Err(at(
            &["run", "jobs"],
            "`jobs = 0` would run nothing".to_owned(),
            "use 1 or more, or drop the key to use every core".to_owned(),
        ));
    }
    for (i, part) in config.replay.parts.iter().enumerate() {
        if Part::parse(part).is_none() {
            let names: Vec<&str> = Part::ALL.iter().map(|p| p.name()).collect();
            let hint = crate::scenario::suggest(part, &names, || {
                format!("the parts of a request: {}", names.join(", "))
            });
            let path = vec![
                Seg::Key("replay".to_owned()),
                Seg::Key("match".to_owned()),
                Seg::Index(i),
            ];
            return Err(crate::scenario::diagnose_at(
                text,
                SourceFormat::Toml,
                path,
                format!("unknown request part `{part}`"),
                Some(hint),
            ));
        }
    }
    for (i, rule) in config.replay.normalize.iter().enumerate() {
        let checked = Matching::default().normalizing(&[(
            rule.path.clone(),
            rule.pattern.clone(),
            rule.replace.clone(),
        )]);
        if let Err(e) = checked {
            let path = vec![
                Seg::Key("replay".to_owned()),
                Seg::Key("normalize".to_owned()),
                Seg::Index(i),
                Seg::Key("pattern".to_owned()),
            ];
            return Err(crate::scenario::diagnose_at(
                text,
                SourceFormat::Toml,
                path,
                e,
                Some(crate::vocabulary::REGEX_SYNTAX.to_owned()),
            ));
        }
    }
    for (i, pattern) in config.replay.redact.iter().enumerate() {
        if let Err(e) = Matching::default().redacting(std::slice::from_ref(pattern)) {
            let path = vec![
                Seg::Key("replay".to_owned()),
                Seg::Key("redact".to_owned()),
                Seg::Index(i),
            ];
            return Err(crate::scenario::diagnose_at(
                text,
                SourceFormat::Toml,
                path,
                e,
                Some(crate::vocabulary::REGEX_SYNTAX.to_owned()),
            ));
        }
    }
    for (i, p) in config.run.profile.iter().enumerate() {
        if !crate::policy::Config::is_profile(p) {
            let hint = crate::scenario::suggest(
                p,
                &crate::policy::profiles::names(),
                crate::policy::profiles::known,
            );
            let path = vec![
                Seg::Key("run".to_owned()),
                Seg::Key("profile".to_owned()),
                Seg::Index(i),
            ];
            return Err(crate::scenario::diagnose_at(
                text,
                SourceFormat::Toml,
                path,
                format!("unknown profile `{p}`"),
                Some(hint),
            ));
        }
    }
    Ok(config)
}

/// How to mend a deserializer's complaint about the project file, by its kind.
fn hint_for(read: &Serde<'_>) -> String {
    match (read.cause, read.quoted.split_first()) {
        (Cause::UnknownKey, Some((found, expected))) => crate::scenario::suggest(found, expected, || {
            format!("allowed keys here: {}", expected.join(", "))
        }),
        (Cause::MissingKey, Some((&"format", _))) => {
            format!("start the file with `format = {FORMAT_VERSION}`")
        }
        (Cause::NoVariant, _) => "write a whole number of cases, or \"all\"".to_owned(),
        _ => "the project file's keys are described in docs/project-file.md and schema/harness.schema.json".to_owned(),
    }
}

/// The JSON Schema of the project file (shipped as `schema/harness.schema.json`).
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(ProjectFile);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_made_relative_to_the_current_folder() {
        let r = |t: &str, b: &str| relative_to(Path::new(t), Path::new(b));
        assert_eq!(r("/p/scenarios", "/p"), PathBuf::from("scenarios"));
        assert_eq!(r("/p/scenarios", "/p/scenarios"), PathBuf::from("."));
        assert_eq!(
            r("/p/snapshots", "/p/scenarios/reflex"),
            PathBuf::from("../../snapshots")
        );
        assert_eq!(r("/p/./a/../b", "/p"), PathBuf::from("b"));
    }

    #[test]
    fn the_file_is_versioned_and_its_mistakes_located() {
        let ok = parse("format = 1\n").unwrap();
        assert_eq!(
            (ok.scenarios.as_str(), ok.snapshots.as_str()),
            ("scenarios", "snapshots")
        );
        assert_eq!(ok.baseline, None);
        let full = parse(
            "format = 1\nscenarios = \"s\"\nsnapshots = \"g\"\nbaseline = \"b.toml\"\n[run]\njobs = 2\ndiff_limit = \"all\"\nprofile = [\"none\"]\n",
        )
        .unwrap();
        assert_eq!(full.run.diff_limit.map(DiffLimit::cases), Some(usize::MAX));
        assert_eq!(full.run.jobs, Some(2));

        let e = parse("format = 1\nscenario = \"s\"\n").unwrap_err();
        assert_eq!((e.line(), e.col()), (2, 1));
        assert!(e.message.starts_with("unknown field `scenario`"), "{e:?}");
        assert_eq!(e.hint.as_deref(), Some("did you mean `scenarios`?"));
        let e = parse("format = 2\n").unwrap_err();
        assert!(e.message.contains("format 2 is not one"), "{e:?}");
        assert_eq!((e.line(), e.col()), (1, 1));
        let e = parse("scenarios = \"s\"\n").unwrap_err();
        assert_eq!(e.hint.as_deref(), Some("start the file with `format = 1`"));
        let e = parse("format = 1\n[run]\nprofile = [\"none\", \"moltys\"]\n").unwrap_err();
        assert_eq!(
            (e.line(), e.col(), e.hint.as_deref()),
            (3, 20, Some("did you mean `moltis`?"))
        );
        let e = parse("format = 1\nsnapshots = \"/abs\"\n").unwrap_err();
        assert!(e.message.contains("relative to the project file"), "{e:?}");
        let e = parse("format = 1\n[run]\njobs = 0\n").unwrap_err();
        assert_eq!((e.line(), e.col()), (3, 1));
        let e = parse("format = 1\n[run]\ndiff_limit = \"some\"\n").unwrap_err();
        assert_eq!(e.line(), 3, "{e:?}");
    }
}
