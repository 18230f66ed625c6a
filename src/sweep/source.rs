//! Sweep inputs: what a path holds and how it becomes runs. An [`Input`] is one file of one
//! kind — a transcript in a public format (detected from its content), a trace written by
//! `harness import`, or a scenario replayed through the engine. Adding a source (recorded
//! cassettes) is one more variant here and one arm in [`load`].

use crate::diagnostic::Diagnostic;
use crate::import::{self, FileImport, Run};
use crate::scenario::{self, SourceFormat};
use std::path::{Path, PathBuf};

/// One input file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Input {
    /// The file.
    pub path: PathBuf,
    /// Its name in run ids: the path below the folder given, or the file name.
    pub rel: String,
    /// What it holds.
    pub kind: InputKind,
    /// Older rotations of the file, read before it as one text (`traces-0001.jsonl`, the
    /// Collector's `traces-2026-11-29T10-00-00.000.jsonl`, … beside `traces.jsonl`), so a run
    /// whose spans the rotation split is one run. Empty for most files.
    pub earlier: Vec<PathBuf>,
}

/// What an input file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum InputKind {
    /// A JSON transcript (`.json`, `.traj`), format detected or forced.
    Transcript,
    /// JSON lines: a `harness import` trace, or one OpenAI/Anthropic run a line.
    JsonLines,
    /// A scenario (`.toml`), replayed.
    Scenario,
    /// A cassette (`.cassette.json`), replayed strictly against its scenario.
    Cassette,
}

/// The kind of a file by its name; `None` for files a sweep does not read.
pub fn kind_of(path: &Path) -> Option<InputKind> {
    let name = path.file_name()?.to_str()?;
    if crate::record::is_cassette(path) {
        Some(InputKind::Cassette)
    } else if name.ends_with(".jsonl")
        || [".jsonl.gz", ".jsonl.zst", ".jsonl.zstd"]
            .iter()
            .any(|x| name.ends_with(x))
    {
        Some(InputKind::JsonLines)
    } else if name.ends_with(".json") || name.ends_with(".traj") {
        Some(InputKind::Transcript)
    } else if [".gz", ".zst", ".zstd", ".pb", ".binpb"]
        .iter()
        .any(|x| name.ends_with(x))
    {
        // Compressed or protobuf (OTLP as collectors write it): read by its content.
        Some(InputKind::Transcript)
    } else if name.ends_with(".toml") {
        Some(InputKind::Scenario)
    } else {
        None
    }
}

/// Every input under `paths` (files as given, folders walked), sorted by path, and the paths
/// that could not be read.
pub fn discover(paths: &[PathBuf]) -> (Vec<Input>, Vec<(PathBuf, String)>) {
    let mut out = Vec::new();
    let mut bad = Vec::new();
    for p in paths {
        let meta = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(e) => {
                bad.push((p.clone(), format!("cannot read: {e}")));
                continue;
            }
        };
        if meta.is_file() {
            let rel = p
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            out.push(Input {
                path: p.clone(),
                rel,
                kind: kind_of(p).unwrap_or(InputKind::Transcript),
                earlier: Vec::new(),
            });
            continue;
        }
        for entry in walkdir::WalkDir::new(p).sort_by_file_name() {
            match entry {
                Ok(e) if e.file_type().is_file() => {
                    let Some(kind) = kind_of(e.path()) else {
                        continue;
                    };
                    let rel = e
                        .path()
                        .strip_prefix(p)
                        .unwrap_or(e.path())
                        .components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/");
                    out.push(Input {
                        path: e.into_path(),
                        rel,
                        kind,
                        earlier: Vec::new(),
                    });
                }
                Ok(_) => {}
                Err(e) => {
                    let at = e.path().map_or_else(|| p.clone(), Path::to_path_buf);
                    bad.push((at, format!("cannot read: {e}")));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    (rotations(out), bad)
}

/// The extensions a rotation keeps after its suffix.
const ROTATED_EXTENSIONS: [&str; 4] = [".jsonl.gz", ".jsonl.zst", ".jsonl", ".json"];

/// A file name as (base name, rotation suffix): `traces-0001.jsonl` is (`traces.jsonl`,
/// `0001`), the Collector's `traces-2026-11-29T10-00-00.000.jsonl` is (`traces.jsonl`, its
/// time); `None` for a name that is no rotation.
fn rotation_of(name: &str) -> Option<(String, &str)> {
    let ext = ROTATED_EXTENSIONS.iter().find(|x| name.ends_with(*x))?;
    let stem = &name[..name.len() - ext.len()];
    // Lumberjack's time stamp, as the Collector's rotation writes it: 2006-01-02T15-04-05.000.
    const STAMP: &[u8] = b"0000-00-00T00-00-00.000";
    let stamped = stem.len() > STAMP.len() + 1 && {
        let tail = &stem.as_bytes()[stem.len() - STAMP.len()..];
        tail.iter().zip(STAMP).all(|(c, want)| match want {
            b'0' => c.is_ascii_digit(),
            other => c == other,
        }) && stem.as_bytes()[stem.len() - STAMP.len() - 1] == b'-'
    };
    let (base, suffix) = if stamped {
        stem.split_at(stem.len() - STAMP.len() - 1)
    } else {
        let (base, digits) = stem.rsplit_once('-')?;
        if digits.len() < 4 || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        stem.split_at(base.len())
    };
    (!base.is_empty()).then(|| (format!("{base}{ext}"), &suffix[1..]))
}

/// Inputs with their earlier rotations folded in: each rotation set (files of one folder
/// named `<base>-<suffix><ext>` and `<base><ext>`) is one input, the rotations in suffix order
/// (oldest first) before the current file; named by the current file.
fn rotations(inputs: Vec<Input>) -> Vec<Input> {
    let key = |i: &Input| -> Option<(PathBuf, String)> {
        let name = i.path.file_name()?.to_str()?;
        let (base, _) = rotation_of(name)?;
        Some((i.path.with_file_name(base), i.rel.clone()))
    };
    let mut sets: std::collections::BTreeMap<PathBuf, Vec<Input>> = Default::default();
    let mut out = Vec::new();
    for i in inputs {
        match key(&i) {
            Some((base, _)) if !matches!(i.kind, InputKind::Scenario | InputKind::Cassette) => {
                sets.entry(base).or_default().push(i);
            }
            _ => out.push(i),
        }
    }
    for (base, mut rotated) in sets {
        rotated.sort_by(|a, b| a.path.cmp(&b.path));
        match out.iter_mut().find(|i| i.path == base) {
            Some(current) => current.earlier = rotated.into_iter().map(|i| i.path).collect(),
            None => {
                // Only rotations: the newest stands for the set, under the current file's name.
                let Some(mut newest) = rotated.pop() else {
                    continue;
                };
                let name = base
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                newest.rel = match newest.rel.rsplit_once('/') {
                    Some((dir, _)) => format!("{dir}/{name}"),
                    None => name,
                };
                newest.earlier = rotated.into_iter().map(|i| i.path).collect();
                out.push(newest);
            }
        }
    }
    out.sort();
    out
}

/// Read one input into runs. Files read from a folder whose content is no known format are
/// skipped with a note; I/O and parse problems are located errors.
pub fn load(
    input: &Input,
    format: Option<import::Format>,
    failures: &crate::failure::FailureRules,
) -> FileImport {
    if input.earlier.is_empty() {
        load_one(input, format, failures)
    } else {
        load_rotations(input, format, failures)
    }
}

/// The most a rotation set's files are read together: past it, each file is read alone.
const MAX_ROTATION_SET_BYTES: u64 = 4 * crate::limits::MAX_TRANSCRIPT_BYTES;

/// A file and its earlier rotations: OTLP files are read as one text (a run's spans may be in
/// any of them), errors located in the file and at the line they came from; files of any other
/// format are read one by one.
fn load_rotations(
    input: &Input,
    format: Option<import::Format>,
    failures: &crate::failure::FailureRules,
) -> FileImport {
    use crate::limits::MAX_TRANSCRIPT_BYTES;
    let parts: Vec<&PathBuf> = input.earlier.iter().chain([&input.path]).collect();
    let alone = |path: &PathBuf| Input {
        path: path.clone(),
        rel: input.rel.clone(),
        kind: input.kind,
        earlier: Vec::new(),
    };
    let apart = || {
        let mut all = FileImport::default();
        for p in &parts {
            let got = load_one(&alone(p), format, failures);
            all.runs.extend(got.runs);
            all.errors
                .extend(got.errors.into_iter().map(|e| e.in_file(p)));
            all.warnings.extend(got.warnings);
        }
        all
    };
    // Each file's text, and the line it starts at in the joined text.
    let mut text = String::new();
    let mut starts: Vec<(usize, &PathBuf)> = Vec::new();
    let mut line = 1;
    for p in &parts {
        let bytes = match crate::store::read_input(p, "transcript", MAX_TRANSCRIPT_BYTES) {
            Ok(b) => b,
            Err(_) => return apart(),
        };
        let part = match import::otlp::files::decode(&bytes, MAX_TRANSCRIPT_BYTES) {
            Ok(Some(t)) => t,
            Ok(None) => match String::from_utf8(bytes) {
                Ok(t) => t,
                Err(_) => return apart(),
            },
            Err(_) => return apart(),
        };
        let part = crate::scenario::without_bom(&part);
        if !import::otlp::sniff(part) || (text.len() + part.len()) as u64 > MAX_ROTATION_SET_BYTES {
            return apart();
        }
        starts.push((line, p));
        line += part.lines().count();
        text.push_str(part);
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    let mut got = import::import_text(&text, &input.rel, true, format, failures);
    for e in &mut got.errors {
        if let Some(at) = &mut e.at {
            if let Some((first, p)) = starts.iter().rev().find(|(first, _)| *first <= at.line) {
                at.line -= first - 1;
                e.file = Some((*p).clone());
            }
        }
    }
    got
}

fn load_one(
    input: &Input,
    format: Option<import::Format>,
    failures: &crate::failure::FailureRules,
) -> FileImport {
    use crate::limits::{MAX_CASSETTE_BYTES, MAX_SCENARIO_BYTES, MAX_TRANSCRIPT_BYTES};
    let (what, max) = match input.kind {
        InputKind::Scenario => ("scenario", MAX_SCENARIO_BYTES),
        InputKind::Cassette => ("cassette", MAX_CASSETTE_BYTES),
        InputKind::Transcript | InputKind::JsonLines => ("transcript", MAX_TRANSCRIPT_BYTES),
    };
    let text = match crate::store::read_input(&input.path, what, max) {
        // Compressed or protobuf OTLP (by content, whatever the name): its requests as OTLP
        // JSON lines.
        Ok(b) if !matches!(input.kind, InputKind::Scenario | InputKind::Cassette) => {
            match import::otlp::files::decode(&b, MAX_TRANSCRIPT_BYTES) {
                Ok(Some(text)) => text,
                Ok(None) => match String::from_utf8(b) {
                    Ok(t) => t,
                    Err(e) => return not_utf8(e),
                },
                Err(why) => {
                    return failed(Diagnostic::at(1, 1, why).hint(
                        "OTLP files are read as JSON lines, gzip or zstd (whole or per request), or protobuf (length-prefixed as the Collector's file exporter writes it, or one request)",
                    ));
                }
            }
        }
        Ok(b) => match String::from_utf8(b) {
            Ok(t) => t,
            Err(e) => return not_utf8(e),
        },
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => {
            return failed(Diagnostic::at(1, 1, e.to_string()).hint(
                "split the file, or check it is the transcript meant (see docs/robustness.md \"Limits\")",
            ));
        }
        Err(e) => {
            return failed(
                Diagnostic::at(1, 1, format!("cannot read: {e}"))
                    .hint("check the path and its permissions"),
            );
        }
    };
    match input.kind {
        // A harness scenario written as JSON (what `run` reads as one) is one here too.
        InputKind::Transcript if format.is_none() && is_json_scenario(&text) => {
            scenario_runs(&text, input, SourceFormat::Json)
        }
        InputKind::Transcript => import::import_text(&text, &input.rel, false, format, failures),
        InputKind::JsonLines => match import::read_imported(&text) {
            Some(Ok(run)) => FileImport {
                runs: vec![run],
                ..FileImport::default()
            },
            Some(Err(e)) => failed(e),
            None => {
                let mut got = import::import_text(&text, &input.rel, true, format, failures);
                // A JSON-lines file none of whose lines is a transcript (an annotation file)
                // is not an input, when it came from a folder walk.
                if got.runs.is_empty()
                    && !got.errors.is_empty()
                    && got
                        .errors
                        .iter()
                        .all(|e| e.message.starts_with("not a transcript"))
                {
                    got.errors.clear();
                    got.note = Some("no line is a transcript".to_owned());
                }
                got
            }
        },
        InputKind::Scenario => scenario_runs(&text, input, SourceFormat::Toml),
        InputKind::Cassette => cassette_runs(input),
    }
}

/// A file that is not UTF-8, located at its first bad byte.
fn not_utf8(e: std::string::FromUtf8Error) -> FileImport {
    let at = e.utf8_error().valid_up_to();
    let bytes = e.into_bytes();
    let valid = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
    let (line, col) = scenario::line_col(valid, at);
    failed(
        Diagnostic::at(line, col, "the file is not valid UTF-8")
            .hint("transcripts are UTF-8 JSON (or OTLP: gzip, zstd or protobuf)"),
    )
}

fn failed(e: Diagnostic) -> FileImport {
    FileImport {
        errors: vec![e],
        ..FileImport::default()
    }
}

/// Replay a cassette through its scenario. Success: every request matched the recording and
/// the run ended with an answer (a cassette carries no expectations of its own).
fn cassette_runs(input: &Input) -> FileImport {
    let layout = crate::store::Layout {
        scenarios: PathBuf::from("scenarios"),
        snapshots: PathBuf::from("snapshots"),
    };
    match crate::record::replay(&layout, &input.path, &Default::default()) {
        Ok(r) => {
            let row = crate::metrics::row(
                &r.case.id,
                &r.case.scenario.family,
                &r.case.profile,
                r.case.prices(),
                &r.events,
            );
            FileImport {
                runs: vec![Run {
                    id: input.rel.clone(),
                    source: "cassette".to_owned(),
                    success: Some(r.failures.is_empty() && row.outcome == "response"),
                    termination: Some(row.outcome.clone()),
                    events: r.events,
                }],
                ..FileImport::default()
            }
        }
        Err(refusal) => failed(refusal.for_file(&input.path)),
    }
}

/// Is this JSON text a harness scenario (its `format` version and its scripted `model`), not a
/// transcript? Asked of every JSON file a sweep reads, so it builds nothing: the document is
/// scanned for those two top-level keys, every other value skipped.
fn is_json_scenario(text: &str) -> bool {
    /// A scenario's model is a table (a transcript's `model` is a name).
    #[derive(serde::Deserialize)]
    struct Table {}
    #[derive(serde::Deserialize)]
    struct Probe {
        format: Option<u64>,
        model: Option<Table>,
    }
    serde_json::from_str::<Probe>(crate::scenario::without_bom(text))
        .is_ok_and(|p| p.format.is_some() && p.model.is_some())
}

/// Replay a scenario's cases. Success: the run ended with an answer and its expectations held.
fn scenario_runs(text: &str, input: &Input, format: SourceFormat) -> FileImport {
    let id = match format {
        SourceFormat::Toml => input.rel.trim_end_matches(".toml"),
        SourceFormat::Json => input.rel.trim_end_matches(".json"),
    };
    let cases = match scenario::load(text, format, id) {
        Ok(c) => c,
        Err(diags) => {
            return FileImport {
                errors: diags.into_iter().collect(),
                ..FileImport::default()
            };
        }
    };
    let mut out = FileImport::default();
    for case in &cases {
        match crate::run::replay(case) {
            Ok(events) => {
                let row = crate::metrics::row(
                    &case.id,
                    &case.scenario.family,
                    &case.profile,
                    case.prices(),
                    &events,
                );
                let held = crate::expect::check(&case.expect, &events, &row).is_empty();
                out.runs.push(Run {
                    id: format!("{}#{}", input.rel, case.id),
                    source: "scenario".to_owned(),
                    success: Some(held && row.outcome == "response"),
                    termination: Some(row.outcome.clone()),
                    events,
                });
            }
            Err(gap) => out.errors.push(
                Diagnostic::at(1, 1, format!("case `{}`: {gap}", case.id))
                    .hint("`harness run` on this scenario locates the gap"),
            ),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_json_scenario_is_told_from_a_transcript_by_its_format_and_model_table() {
        assert!(super::is_json_scenario(
            r#"{"format": 1, "family": "f", "model": {"name": "m", "turns": []}}"#
        ));
        // A transcript naming its model, an array of runs, a scenario-less object: no.
        assert!(!super::is_json_scenario(
            r#"{"format": 1, "model": "gpt-4o"}"#
        ));
        assert!(!super::is_json_scenario(r#"[{"traj": [], "reward": 1}]"#));
        assert!(!super::is_json_scenario(r#"{"messages": [], "model": {}}"#));
        assert!(!super::is_json_scenario("not json"));
    }

    #[test]
    fn rotations_are_named_by_their_current_file() {
        use super::rotation_of;
        assert_eq!(
            rotation_of("traces-0001.jsonl"),
            Some(("traces.jsonl".to_owned(), "0001"))
        );
        assert_eq!(
            rotation_of("agents-2026-11-29T10-00-00.000.jsonl.gz"),
            Some(("agents.jsonl.gz".to_owned(), "2026-11-29T10-00-00.000"))
        );
        // Not rotations: a short number, words, no base, other extensions.
        for name in [
            "run-12.jsonl",
            "tau-bench.json",
            "-0001.jsonl",
            "traces.jsonl",
            "t-0001.toml",
        ] {
            assert_eq!(rotation_of(name), None, "{name}");
        }
    }
}
