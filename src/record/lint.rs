//! `harness lint`: find secret-looking strings in committed fixtures (cassettes, scenarios,
//! goldens), reported as `file:line:col` — a check for CI before a recording is committed.

use super::scrub::Scrubber;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Text files lint reads (by extension).
const EXTENSIONS: &[&str] = &[
    "json", "jsonl", "toml", "snap", "new", "yaml", "yml", "txt", "csv",
];

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The file.
    pub path: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column (chars).
    pub col: usize,
    /// What it looks like.
    pub kind: &'static str,
    /// The start of it, masked.
    pub preview: String,
}

/// Lint these files and folders; the findings and the paths that could not be read.
pub fn lint(paths: &[PathBuf], scrubber: &Scrubber) -> Linted {
    let mut hits = Vec::new();
    let mut errors = Vec::new();
    let mut files = Vec::new();
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_file() => files.push(p.clone()),
            Ok(_) => {
                for e in crate::store::walk(p) {
                    match e {
                        Ok(e) if e.file_type().is_file() && wanted(e.path()) => {
                            files.push(e.into_path())
                        }
                        Ok(_) => {}
                        Err(err) => errors.push((p.clone(), io::Error::other(err.to_string()))),
                    }
                }
            }
            Err(e) => errors.push((p.clone(), e)),
        }
    }
    files.sort();
    files.dedup();
    let mut read = 0;
    for f in files {
        let bytes = match crate::store::read_input(&f, "fixture", crate::limits::MAX_GOLDEN_BYTES) {
            Ok(b) => b,
            Err(e) => {
                errors.push((f, e));
                continue;
            }
        };
        read += 1;
        let text = String::from_utf8_lossy(&bytes);
        let mut file_hits = Vec::new();
        for (n, line) in text.lines().enumerate() {
            for finding in scrubber.find(line) {
                let s = &line[finding.range.clone()];
                file_hits.push(Hit {
                    path: f.clone(),
                    line: n + 1,
                    col: line[..finding.range.start].chars().count() + 1,
                    kind: finding.kind,
                    preview: format!(
                        "{}… ({} chars)",
                        s.chars().take(4).collect::<String>(),
                        s.chars().count()
                    ),
                });
            }
        }
        if super::is_cassette(&f) {
            for h in assembled_hits(&f, &text, scrubber) {
                if !file_hits.iter().any(|x| x.line == h.line) {
                    file_hits.push(h);
                }
            }
            file_hits.sort_by_key(|h| (h.line, h.col));
        }
        hits.extend(file_hits);
    }
    Linted { hits, errors, read }
}

/// What a lint found: the hits, the paths it could not read, and how many files it read.
pub struct Linted {
    /// Secret-looking strings.
    pub hits: Vec<Hit>,
    /// Paths that could not be read.
    pub errors: Vec<(PathBuf, io::Error)>,
    /// Files read.
    pub read: usize,
}

/// Secrets a line-by-line scan cannot see in a cassette: split across the events of a stream
/// (assembled as clients assemble them, see [`Scrubber::find_in_events`]) or spelled with JSON
/// escapes inside a string that is itself JSON (tool arguments). Each is reported at the event
/// or string where it starts.
fn assembled_hits(path: &Path, text: &str, scrubber: &Scrubber) -> Vec<Hit> {
    let Ok(c) = super::cassette::parse(text) else {
        return Vec::new();
    };
    // The line and column of a string value as the cassette spells it.
    let locate = |value: &str| -> (usize, usize) {
        let quoted = serde_json::to_string(value).unwrap_or_default();
        text.find(&quoted)
            .map_or((1, 1), |at| crate::scenario::line_col(text, at))
    };
    let mut out = Vec::new();
    for (n, ex) in c.exchanges.iter().enumerate() {
        if let Some(chunks) = &ex.chunks {
            for (event, kind) in scrubber.find_in_events(chunks) {
                let (line, col) = locate(&chunks[event].data);
                out.push(Hit {
                    path: path.to_owned(),
                    line,
                    col,
                    kind,
                    preview: format!(
                        "split across stream events of exchange {} (assembled as clients do)",
                        n + 1
                    ),
                });
            }
        }
        let mut decoded = Vec::new();
        for v in [Some(&ex.request), ex.body.as_ref()].into_iter().flatten() {
            strings(v, &mut |s| {
                if scrubber.find(s).is_empty() {
                    if let Some(kind) = scrubber.find_decoded(s) {
                        decoded.push((s.to_owned(), kind));
                    }
                }
            });
        }
        for (s, kind) in decoded {
            let (line, col) = locate(&s);
            out.push(Hit {
                path: path.to_owned(),
                line,
                col,
                kind,
                preview: format!("spelled with JSON escapes in exchange {}", n + 1),
            });
        }
    }
    out
}

fn strings(v: &serde_json::Value, f: &mut dyn FnMut(&str)) {
    match v {
        serde_json::Value::String(s) => f(s),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, f)),
        serde_json::Value::Object(o) => o.values().for_each(|x| strings(x, f)),
        _ => {}
    }
}

fn wanted(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| EXTENSIONS.contains(&e))
}

/// What kind of file a finding is in: what to do about it depends on where the secret came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum FileKind {
    Cassette,
    Golden,
    Trace,
    Scenario,
    Other,
}

impl FileKind {
    fn of(path: &Path) -> Self {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ext = |e: &str| name.ends_with(&format!(".{e}"));
        if super::is_cassette(path) {
            Self::Cassette
        } else if ext(crate::store::GOLDEN_EXT) || ext(crate::store::PENDING_EXT) {
            Self::Golden
        } else if name.ends_with(".jsonl") {
            Self::Trace
        } else if name.ends_with(".toml") {
            Self::Scenario
        } else {
            Self::Other
        }
    }

    fn hint(self) -> &'static str {
        match self {
            Self::Cassette => {
                "in a cassette: re-record it (`harness proxy` and `harness record` scrub what they write), or put [REDACTED] where the secret is (a replay matches any one word there)"
            }
            Self::Golden => {
                "in a golden: remove the secret from the scenario or cassette it came from, run the case again and `harness accept` (a replay's golden is scrubbed as its cassette is)"
            }
            Self::Trace => {
                "in a trace: write it again from its scenario or cassette without the secret (a replay's traces are scrubbed), or delete it"
            }
            Self::Scenario => {
                "in a scenario or project file: replace the secret with a made-up value of the same shape that no scanner takes for a key"
            }
            Self::Other => "remove it from the file",
        }
    }
}

/// Print the findings; the exit code (0 clean, 1 secrets found, 2 unreadable path).
pub fn report(
    linted: &Linted,
    allow_empty: bool,
    out: &mut dyn Write,
) -> io::Result<crate::results::ExitStatus> {
    let (hits, errors) = (&linted.hits, &linted.errors);
    for (p, e) in errors {
        let d = crate::diagnostic::Diagnostic::whole_file(format!("cannot read: {e}")).in_file(p);
        write!(out, "{}", d.render(&crate::diagnostic::Style::default()))?;
    }
    for h in hits {
        writeln!(
            out,
            "{}:{}:{}: secret-looking string ({}): {}",
            h.path.display(),
            h.line,
            h.col,
            h.kind,
            h.preview
        )?;
    }
    let mut kinds: Vec<FileKind> = hits.iter().map(|h| FileKind::of(&h.path)).collect();
    kinds.sort();
    kinds.dedup();
    for kind in kinds {
        writeln!(out, "  hint: {}", kind.hint())?;
    }
    if !hits.is_empty() {
        writeln!(out, "  hint: rotate the key if it was real")?;
    }
    writeln!(
        out,
        "harness lint: {} secret-looking strings in {} file(s)",
        hits.len(),
        linted.read
    )?;
    if linted.read == 0 && !allow_empty {
        let d = crate::diagnostic::Diagnostic::new("nothing was read: no scenario, cassette, golden or fixture file in the paths given")
            .hint("give the files and folders to check (default: the project's scenarios, fixtures and snapshots); `--allow-empty` lets a lint of nothing pass");
        write!(out, "{}", d.render(&crate::diagnostic::Style::default()))?;
        return Ok(crate::results::ExitStatus::BadInput);
    }
    Ok(if !errors.is_empty() {
        crate::results::ExitStatus::BadInput
    } else if hits.is_empty() {
        crate::results::ExitStatus::Ok
    } else {
        crate::results::ExitStatus::Failed
    })
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "a test sets up and reads its files, clocks and threads itself"
)]
mod tests {
    use super::*;

    #[test]
    fn finds_located_secrets_and_ignores_redacted_ones() {
        let dir = tempfile::tempdir().expect("tempdir");
        let a = dir.path().join("a.cassette.json");
        std::fs::write(
            &a,
            "{\n  \"x\": \"[REDACTED]\",\n  \"y\": \"é sk-proj-0123456789abcdefgh\"\n}\n",
        )
        .expect("write");
        std::fs::write(dir.path().join("b.toml"), "user = \"clean\"\n").expect("write");
        std::fs::write(dir.path().join("c.bin"), "sk-proj-0123456789abcdefgh").expect("write");
        let linted = lint(&[dir.path().to_path_buf()], &Scrubber::default());
        let (hits, errors) = (&linted.hits, &linted.errors);
        assert!(errors.is_empty());
        assert_eq!(linted.read, 2, "the cassette and the scenario; not c.bin");
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!((hits[0].line, hits[0].col), (3, 11));
        assert_eq!(hits[0].kind, "OpenAI-style API key");
        let mut out = Vec::new();
        assert_eq!(
            report(&linted, false, &mut out).ok(),
            Some(crate::results::ExitStatus::Failed)
        );
        let text = String::from_utf8_lossy(&out);
        assert!(!text.contains("0123456789"), "{text}");
        assert!(text.contains("hint: in a cassette: re-record it"), "{text}");
        assert!(!text.contains("in a golden"), "{text}");
    }

    #[test]
    fn the_hint_fits_the_kind_of_file_flagged() {
        let dir = tempfile::tempdir().expect("tempdir");
        let key = "AKIACANARY0123456789";
        for name in [
            "x@exec.snap",
            "x@exec.snap.new",
            "t.jsonl",
            "s.toml",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(name), format!("key {key}\n")).expect("write");
        }
        let linted = lint(&[dir.path().to_path_buf()], &Scrubber::default());
        assert_eq!(linted.hits.len(), 5, "{:?}", linted.hits);
        let mut out = Vec::new();
        report(&linted, false, &mut out).expect("report");
        let text = String::from_utf8_lossy(&out);
        // One hint per kind, in a fixed order, none telling to re-record a golden.
        let hints: Vec<&str> = text.lines().filter(|l| l.contains("hint:")).collect();
        assert_eq!(hints.len(), 5, "{text}");
        assert!(hints[0].contains("in a golden: remove the secret from the scenario or cassette"));
        assert!(hints[1].contains("in a trace"));
        assert!(hints[2].contains("in a scenario or project file"));
        assert!(hints[3].contains("remove it from the file"));
        assert!(hints[4].contains("rotate the key"));
        assert!(!text.contains("re-record"), "{text}");
    }
}
