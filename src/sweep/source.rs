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
    /// Older rotations of the file (path, name in run ids), read before it as one text
    /// (`traces-0001.jsonl`, the Collector's `traces-2026-11-29T10-00-00.000.jsonl`, … beside
    /// `traces.jsonl`), so a run whose spans the rotation split is one run. Empty for most
    /// files.
    pub earlier: Vec<(PathBuf, String)>,
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
        for entry in crate::store::walk(p) {
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

/// Inputs with their earlier rotations folded in: the files of one folder that are rotations
/// of one file ([`crate::store::rotation_of`]: `<base>-0001<ext>`, … beside `<base><ext>`
/// itself, or the Collector's time-stamped ones, with or without the current file) are one
/// input, the rotations in suffix order (oldest first) before the current file, named by it.
/// A numbered name is a rotation only beside its current file (`django__django-11099.json`
/// is a transcript); a set of one file is no set.
fn rotations(inputs: Vec<Input>) -> Vec<Input> {
    let mut sets: std::collections::BTreeMap<PathBuf, Vec<Input>> = Default::default();
    let mut out = Vec::new();
    let present: std::collections::BTreeSet<PathBuf> =
        inputs.iter().map(|i| i.path.clone()).collect();
    for i in inputs {
        let rotation = i
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(crate::store::rotation_of)
            .filter(|_| !matches!(i.kind, InputKind::Scenario | InputKind::Cassette));
        match rotation {
            Some(r) if r.stamped || present.contains(&i.path.with_file_name(&r.base)) => {
                sets.entry(i.path.with_file_name(&r.base))
                    .or_default()
                    .push(i);
            }
            _ => out.push(i),
        }
    }
    for (base, mut rotated) in sets {
        rotated.sort_by(|a, b| a.path.cmp(&b.path));
        let earlier = |r: Vec<Input>| r.into_iter().map(|i| (i.path, i.rel)).collect();
        if let Some(current) = out.iter_mut().find(|i| i.path == base) {
            current.earlier = earlier(rotated);
        } else if rotated.len() == 1 {
            out.extend(rotated);
        } else if let Some(mut newest) = rotated.pop() {
            // Only rotations: the newest stands for the set, under the current file's name.
            let name = base
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            newest.rel = match newest.rel.rsplit_once('/') {
                Some((dir, _)) => format!("{dir}/{name}"),
                None => name,
            };
            newest.earlier = earlier(rotated);
            out.push(newest);
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

/// The most a rotation set's files are read together: past it, each file is read alone (and
/// the warnings say so).
const MAX_ROTATION_SET_BYTES: u64 = 4 * crate::limits::MAX_TRANSCRIPT_BYTES;

/// A file and its earlier rotations: OTLP files are read as one text (a run's spans may be in
/// any of them), errors located in the file and at the line they came from. When they cannot
/// be (a file of another format, unreadable, or the set too large) each is read alone, under
/// its own name, and the warnings say why.
fn load_rotations(
    input: &Input,
    format: Option<import::Format>,
    failures: &crate::failure::FailureRules,
) -> FileImport {
    use crate::limits::MAX_TRANSCRIPT_BYTES;
    let mut parts: Vec<(PathBuf, String)> = input.earlier.clone();
    parts.push((input.path.clone(), input.rel.clone()));
    let apart = |why: String| {
        let mut all = FileImport::default();
        for (path, rel) in &parts {
            let got = load_one(
                &Input {
                    path: path.clone(),
                    rel: rel.clone(),
                    kind: input.kind,
                    earlier: Vec::new(),
                },
                format,
                failures,
            );
            all.runs.extend(got.runs);
            all.errors
                .extend(got.errors.into_iter().map(|e| e.in_file(path)));
            all.warnings.extend(got.warnings);
        }
        all.warnings.push(format!(
            "{} and its {} earlier rotation(s) were read apart, not as one file: {why}; a run the rotation split is a run in each",
            input.rel,
            parts.len() - 1
        ));
        all
    };
    let size: u64 = parts
        .iter()
        .map(|(p, _)| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    if size > MAX_ROTATION_SET_BYTES {
        return apart(format!(
            "together they are over {MAX_ROTATION_SET_BYTES} bytes"
        ));
    }
    // Each file's text, and the line it starts at in the joined text.
    let mut text = String::new();
    let mut starts: Vec<(usize, &PathBuf)> = Vec::new();
    let mut line = 1;
    for (p, rel) in &parts {
        let bytes = match crate::store::read_input(p, "transcript", MAX_TRANSCRIPT_BYTES) {
            Ok(b) => b,
            Err(e) => return apart(format!("{rel}: {e}")),
        };
        let left = MAX_ROTATION_SET_BYTES.saturating_sub(text.len() as u64);
        let part = match import::otlp::files::decode(&bytes, left.min(MAX_TRANSCRIPT_BYTES)) {
            Ok(import::otlp::files::Decoded::Lines(t)) => t,
            Ok(import::otlp::files::Decoded::Plain) => match String::from_utf8(bytes) {
                Ok(t) => t,
                Err(_) => return apart(format!("{rel} is not UTF-8")),
            },
            Ok(import::otlp::files::Decoded::Foreign(why)) | Err(why) => {
                return apart(format!("{rel}: {why}"));
            }
        };
        let part = crate::scenario::without_bom(&part);
        if !part.trim().is_empty() && !import::otlp::sniff(part) {
            return apart(format!("{rel} is no OTLP file"));
        }
        if (text.len() + part.len()) as u64 > MAX_ROTATION_SET_BYTES {
            return apart(format!(
                "together they are over {MAX_ROTATION_SET_BYTES} bytes"
            ));
        }
        starts.push((line, p));
        line += part.lines().count();
        text.push_str(part);
        if !text.is_empty() && !text.ends_with('\n') {
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
                Ok(import::otlp::files::Decoded::Lines(text)) => {
                    let mut got = import::import_text(&text, &input.rel, true, format, failures);
                    // Located in the requests decoded from the file, not in its bytes.
                    for e in &mut got.errors {
                        e.hint = Some(format!(
                            "{}{}the line is that of the requests decoded from the file, one a line",
                            e.hint.as_deref().unwrap_or(""),
                            if e.hint.is_some() { "; " } else { "" }
                        ));
                    }
                    return got;
                }
                Ok(import::otlp::files::Decoded::Plain) => match String::from_utf8(b) {
                    Ok(t) => t,
                    Err(e) => return not_utf8(e),
                },
                Ok(import::otlp::files::Decoded::Foreign(why)) => {
                    return FileImport {
                        note: Some(format!("{why}, no transcript")),
                        ..FileImport::default()
                    };
                }
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
}
