//! Partial sweeps: a shard of a sweep (`sweep --partition KIND:M/N --partial FILE`) written
//! as what each of its files contributed, and the shards merged (`sweep --merge`) into the
//! report one sweep over everything gives — the same CSV, fires, labels and page, byte for byte.
//!
//! A partial is JSON lines: a [`Header`] (the paths swept, the settings, the shard, a digest of
//! the labels, how many input files the whole sweep found and a digest of their paths), then
//! one [`FileRecord`] per file in the sweep's file order: its located errors, its note, and per
//! run its label and where each setting fired; then an [`End`] line: how many files and runs
//! the shard wrote and a digest of those lines. Merging reads the shards side by side, one
//! record of each at a time, and folds the records in the order one sweep would (the files'
//! sorted paths), so memory stays bounded by the run, not the corpus.
//!
//! A merge checks what it merges and refuses, naming the partial, before anything is written:
//! shards that found other input files (a checkout missing some), a partial cut short (no
//! `End`, or counts and digest that differ from its lines), a record repeated or out of order,
//! records that are not of exactly the files the sweep found (a shard emptied or a record
//! dropped, its header and `End` rewritten to agree: their count and the digest of their paths
//! are the header's), a file that is not regular (`/dev/zero`), a line past [`MAX_LINE`].

use super::{FileScore, RunScore, labels::Label, source::Input};
use crate::detector::{Fire, Verdict};
use crate::diagnostic::{Diagnostic, Position};
use crate::select::Partition;
use serde::{Deserialize, Serialize};
use std::io::BufRead;
use std::path::{Path, PathBuf};

/// The header's `format`.
pub const FORMAT: &str = "harness-sweep-partial";
/// The version this harness writes and reads (2: the inputs in the header, the `End` line; 3:
/// the runs a setting left out of its row).
pub const VERSION: u32 = 3;
/// The last line's `format`.
pub const END: &str = "harness-sweep-partial-end";
/// The longest line of a partial read (a file's record): past it the partial is refused.
pub const MAX_LINE: u64 = crate::limits::MAX_TRANSCRIPT_BYTES;

/// A setting as the outputs name it: detector id and rendered parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Named {
    /// Detector id.
    pub id: String,
    /// `k=3`, or several separated by spaces.
    pub params: String,
}

/// The first line of a partial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`].
    pub version: u32,
    /// The shard: `count:M/N` or `hash:M/N` (`count:1/1` for a whole sweep).
    pub partition: String,
    /// The paths swept, as given.
    pub paths: Vec<String>,
    /// The transcript format forced (`--format`), if any.
    pub transcript_format: Option<String>,
    /// The `--failure` patterns, if any (absent in partials without them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failure: Vec<String>,
    /// `--no-builtin-failures` (absent when off).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_builtin_failures: bool,
    /// The settings, in scoring order.
    pub settings: Vec<Named>,
    /// FNV-1a of the labels file's runs (0 without one): shards must share it.
    pub labels: u64,
    /// Paths that could not be read, with why (the first shard's only).
    pub unreadable: Vec<(String, String)>,
    /// How many input files the whole sweep found (every shard's, before the partition).
    pub inputs: usize,
    /// FNV-1a of those files' paths, in order: shards of one sweep found the same files.
    pub inputs_digest: u64,
    /// How many of them are this shard's: its `End` must say as many.
    pub shard_files: usize,
}

/// The last line of a partial: what it wrote, so that a partial cut short is told from a
/// whole one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct End {
    /// Always [`END`].
    pub format: String,
    /// File records written.
    pub files: usize,
    /// Runs in them.
    pub runs: usize,
    /// FNV-1a of the record lines (each with its line break), in order.
    pub digest: u64,
}

/// The digest of a list of lines (each as written, with its line break).
#[derive(Default)]
pub(super) struct Digest(fnv::FnvHasher);

impl Digest {
    pub(super) fn add(&mut self, line: &str) {
        use std::hash::Hasher as _;
        self.0.write(line.as_bytes());
    }

    pub(super) fn value(&self) -> u64 {
        use std::hash::Hasher as _;
        self.0.finish()
    }
}

/// A diagnostic as a partial keeps it: what the outputs print of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    /// 1-based line and column, when it has a place.
    pub at: Option<(usize, usize)>,
    /// What is wrong.
    pub message: String,
    /// How to mend it.
    pub hint: Option<String>,
}

impl Problem {
    fn of(d: &Diagnostic) -> Self {
        Self {
            at: d.at.map(|p| (p.line, p.col)),
            message: d.message.clone(),
            hint: d.hint.clone(),
        }
    }

    fn diagnostic(&self) -> Diagnostic {
        Diagnostic {
            at: self.at.map(|(line, col)| Position { line, col }),
            hint: self.hint.clone(),
            ..Diagnostic::new(self.message.clone())
        }
    }
}

/// Where a setting fired on a run: its index, the call, the verdict, the tokens after it.
type FireRecord = (usize, usize, String, Option<u64>);

/// One run's contribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Run id.
    pub id: String,
    /// Success label.
    pub success: Option<bool>,
    /// Stuck label.
    pub label: Label,
    /// The label came from the labels file.
    pub from_file: bool,
    /// Calls in the run.
    pub calls: usize,
    /// The settings that fired.
    pub fires: Vec<FireRecord>,
    /// Settings that could not score the run, and why.
    pub errors: Vec<(usize, String)>,
    /// Settings that leave the run out of their rows (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unscored: Vec<usize>,
    /// Why they do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscored_why: Option<String>,
}

/// One file's contribution.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileRecord {
    /// The file.
    pub path: String,
    /// Its name in run ids.
    pub rel: String,
    /// Located errors.
    pub errors: Vec<Problem>,
    /// Why it has no run.
    pub note: Option<String>,
    /// What its reader said of it (absent when nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Its runs.
    pub runs: Vec<RunRecord>,
}

/// The record of a scored file.
pub(super) fn record(f: &FileScore) -> FileRecord {
    FileRecord {
        path: f.input.path.to_string_lossy().into_owned(),
        rel: f.input.rel.clone(),
        errors: f.errors.iter().map(Problem::of).collect(),
        note: f.note.clone(),
        warnings: f.warnings.clone(),
        runs: f
            .runs
            .iter()
            .map(|r| RunRecord {
                id: r.id.clone(),
                success: r.success,
                label: r.label.clone(),
                from_file: r.from_file,
                calls: r.calls,
                fires: r
                    .fires
                    .iter()
                    .enumerate()
                    .filter_map(|(i, f)| {
                        f.map(|(f, t)| (i, f.at, f.verdict.as_str().to_owned(), t))
                    })
                    .collect(),
                errors: r.errors.clone(),
                unscored: r.unscored.clone(),
                unscored_why: r.unscored_why.clone(),
            })
            .collect(),
    }
}

/// A record as the scored file it stands for; `None` names what is wrong.
fn score(r: FileRecord, settings: usize) -> Result<FileScore, String> {
    let path = PathBuf::from(&r.path);
    let runs = r
        .runs
        .into_iter()
        .map(|run| {
            let mut fires = vec![None; settings];
            for (i, at, verdict, tokens) in run.fires {
                let verdict = Verdict::parse(&verdict)
                    .ok_or_else(|| format!("run `{}`: unknown verdict `{verdict}`", run.id))?;
                if at > run.calls {
                    return Err(format!(
                        "run `{}`: a firing at call {at} of {} calls",
                        run.id, run.calls
                    ));
                }
                let slot = fires
                    .get_mut(i)
                    .ok_or_else(|| format!("run `{}`: setting {i} of {settings}", run.id))?;
                *slot = Some((Fire::new(at, verdict), tokens));
            }
            if let Some(i) = run
                .errors
                .iter()
                .map(|(i, _)| i)
                .chain(&run.unscored)
                .find(|i| **i >= settings)
            {
                return Err(format!("run `{}`: setting {i} of {settings}", run.id));
            }
            Ok(RunScore {
                id: run.id,
                success: run.success,
                label: run.label,
                from_file: run.from_file,
                calls: run.calls,
                fires,
                errors: run.errors,
                unscored: run.unscored,
                unscored_why: run.unscored_why,
                view: None,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(FileScore {
        input: Input {
            kind: super::source::kind_of(&path).unwrap_or(super::source::InputKind::Transcript),
            path,
            rel: r.rel,
            earlier: Vec::new(),
        },
        runs,
        errors: r.errors.iter().map(Problem::diagnostic).collect(),
        note: r.note,
        warnings: r.warnings,
    })
}

/// A JSON line of a partial.
pub(super) fn line<T: Serialize>(value: &T) -> String {
    let mut s = serde_json::to_string(value).unwrap_or_default();
    s.push('\n');
    s
}

/// The digest of a labels file's runs.
pub fn labels_digest(labels: &std::collections::BTreeMap<String, Label>) -> u64 {
    if labels.is_empty() {
        return 0;
    }
    let mut d = Digest::default();
    for l in labels.values() {
        d.add(&line(l));
    }
    d.value()
}

/// The shard's name in a header.
pub fn partition_name(p: Option<Partition>) -> String {
    match p {
        Some(p) => format!(
            "{}:{}/{}",
            if p.by_hash { "hash" } else { "count" },
            p.m,
            p.n
        ),
        None => "count:1/1".to_owned(),
    }
}

/// One line of at most [`MAX_LINE`] bytes (its line break left out); `None` at the end.
fn bounded_line(
    reader: &mut std::io::BufReader<std::fs::File>,
    path: &Path,
    at: usize,
) -> Result<Option<String>, Diagnostic> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    let n = reader
        .by_ref()
        .take(MAX_LINE + 1)
        .read_until(b'\n', &mut bytes)
        .map_err(|e| Diagnostic::new(format!("cannot read: {e}")).in_file(path))?;
    if n == 0 {
        return Ok(None);
    }
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
    } else if bytes.len() as u64 > MAX_LINE {
        return Err(Diagnostic::at(at, 1, format!("a line longer than {MAX_LINE} bytes"))
            .in_file(path)
            .hint("a partial sweep is written by `harness sweep --partial`; write it again rather than edit it"));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| Diagnostic::at(at, 1, "a line that is not UTF-8").in_file(path))
}

/// One partial being read: its header and its next record.
struct Reader {
    path: PathBuf,
    reader: std::io::BufReader<std::fs::File>,
    line: usize,
    next: Option<FileRecord>,
    /// The key of the last record read (records come in sweep order, once each).
    last: Option<(PathBuf, String)>,
    /// The files its header says are its shard's.
    shard_files: usize,
    /// What was read so far, for the `End` line.
    files: usize,
    runs: usize,
    digest: Digest,
}

impl Reader {
    fn advance(&mut self) -> Result<(), Diagnostic> {
        let again = "a partial sweep is written by `harness sweep --partial`; write it again rather than edit it";
        self.next = None;
        while let Some(text) = bounded_line(&mut self.reader, &self.path, self.line + 1)? {
            self.line += 1;
            if text.trim().is_empty() {
                continue;
            }
            if let Some(end) = serde_json::from_str::<End>(&text)
                .ok()
                .filter(|e| e.format == END)
            {
                let wrote = (self.files, self.runs, self.digest.value());
                if end.files != self.shard_files {
                    return Err(Diagnostic::at(
                        self.line,
                        1,
                        format!(
                            "the shard holds {} of the {} file(s) it was to sweep: the sweep that wrote it stopped early",
                            end.files, self.shard_files
                        ),
                    )
                    .in_file(&self.path)
                    .hint("sweep the shard again to its end; nothing was written"));
                }
                if (end.files, end.runs, end.digest) != wrote {
                    return Err(Diagnostic::at(
                        self.line,
                        1,
                        format!(
                            "the partial's end says {} file(s) and {} run(s), but {} and {} were read before it (or their lines differ from what was written)",
                            end.files, end.runs, wrote.0, wrote.1
                        ),
                    )
                    .in_file(&self.path)
                    .hint(again));
                }
                // Nothing may follow the end.
                while let Some(more) = bounded_line(&mut self.reader, &self.path, self.line + 1)? {
                    self.line += 1;
                    if !more.trim().is_empty() {
                        return Err(
                            Diagnostic::at(self.line, 1, "a line after the partial's end")
                                .in_file(&self.path)
                                .hint(again),
                        );
                    }
                }
                return Ok(());
            }
            let record = serde_json::from_str::<FileRecord>(&text).map_err(|e| {
                Diagnostic::at(
                    self.line,
                    e.column().max(1),
                    format!("not a file record: {e}"),
                )
                .in_file(&self.path)
                .hint(again)
            })?;
            let key = (PathBuf::from(&record.path), record.rel.clone());
            if self.last.as_ref().is_some_and(|last| key <= *last) {
                return Err(Diagnostic::at(
                    self.line,
                    1,
                    format!(
                        "the record of {} is {} (records come once each, in the sweep's file order)",
                        record.path,
                        if self.last.as_ref() == Some(&key) { "repeated" } else { "out of order" }
                    ),
                )
                .in_file(&self.path)
                .hint(again));
            }
            self.last = Some(key);
            self.files += 1;
            self.runs += record.runs.len();
            self.digest.add(&text);
            self.digest.add("\n");
            self.next = Some(record);
            return Ok(());
        }
        Err(Diagnostic::at(
            self.line.max(1),
            1,
            "the partial ends without its last line: it was cut short (an upload or a copy that did not finish)",
        )
        .in_file(&self.path)
        .hint("take the shard's partial again from the machine that swept it, or sweep the shard again; nothing was written"))
    }

    fn key(&self) -> Option<(&Path, &str)> {
        self.next
            .as_ref()
            .map(|r| (Path::new(r.path.as_str()), r.rel.as_str()))
    }
}

/// Open the partials, check they are the shards of one sweep, and return the header they
/// share and a source of their records in sweep order.
pub fn open(paths: &[PathBuf]) -> Result<(Header, Records), Diagnostic> {
    let mut readers = Vec::new();
    let mut headers: Vec<(PathBuf, Header)> = Vec::new();
    for path in paths {
        // A regular file only: `/dev/zero` or a FIFO is refused before it is read.
        let (file, _) = crate::store::guard::open_regular_sized(path, "partial sweep")
            .map_err(|e| Diagnostic::new(format!("cannot read: {e}")).in_file(path))?;
        let mut reader = std::io::BufReader::new(file);
        let first = bounded_line(&mut reader, path, 1)?.unwrap_or_default();
        let not_partial = || {
            Diagnostic::at(1, 1, "not a partial sweep")
                .in_file(path)
                .hint("give the files `harness sweep --partition KIND:M/N --partial FILE` wrote, one per shard")
        };
        let header: Header = serde_json::from_str(&first).map_err(|_| not_partial())?;
        if header.format != FORMAT {
            return Err(not_partial());
        }
        if header.version != VERSION {
            return Err(Diagnostic::at(
                1,
                1,
                format!(
                    "partial sweep version {} is not the one this harness reads ({VERSION})",
                    header.version
                ),
            )
            .in_file(path)
            .hint("sweep the shards and merge them with one harness"));
        }
        let mut r = Reader {
            path: path.clone(),
            reader,
            line: 1,
            next: None,
            last: None,
            shard_files: header.shard_files,
            files: 0,
            runs: 0,
            digest: Digest::default(),
        };
        r.advance()?;
        readers.push(r);
        headers.push((path.clone(), header));
    }
    let Some((first_path, first)) = headers.first().cloned() else {
        return Err(Diagnostic::new("no partial sweep to merge")
            .hint("give every shard's `--partial` file"));
    };
    let shard = |h: &Header, path: &Path| {
        Partition::parse(&h.partition)
            .map_err(|e| Diagnostic::at(1, 1, format!("the header's partition: {e}")).in_file(path))
    };
    let want = shard(&first, &first_path)?;
    let mut seen: std::collections::BTreeMap<u32, PathBuf> = Default::default();
    for (path, h) in &headers {
        let differs = |what: &str| {
            Diagnostic::new(format!(
                "{} and {} are not shards of one sweep: their {what} differ",
                first_path.display(),
                path.display()
            ))
            .hint("sweep every shard with the same paths, detectors, labels, --format and failure rules; nothing was written")
        };
        if h.paths != first.paths {
            return Err(differs("paths"));
        }
        if h.settings != first.settings {
            return Err(differs("detector settings"));
        }
        if h.labels != first.labels {
            return Err(differs("labels files"));
        }
        if h.transcript_format != first.transcript_format {
            return Err(differs("--format"));
        }
        if (&h.failure, h.no_builtin_failures) != (&first.failure, first.no_builtin_failures) {
            return Err(differs("failure rules (--failure, --no-builtin-failures)"));
        }
        if (h.inputs, h.inputs_digest) != (first.inputs, first.inputs_digest) {
            return Err(Diagnostic::new(format!(
                "{} and {} are not shards of one sweep: they found other input files ({} and {}; a checkout missing some, or another corpus)",
                first_path.display(),
                path.display(),
                first.inputs,
                h.inputs
            ))
            .hint("sweep every shard on the same files; nothing was written"));
        }
        let p = shard(h, path)?;
        if p.by_hash != want.by_hash || p.n != want.n {
            return Err(differs("partitions"));
        }
        if let Some(other) = seen.insert(p.m, path.clone()) {
            return Err(Diagnostic::new(format!(
                "{} and {} are both shard {} of {}",
                other.display(),
                path.display(),
                p.m,
                p.n
            ))
            .hint("give each shard's partial once"));
        }
    }
    if seen.len() != want.n as usize {
        // Name the first few missing shards (N may be large).
        let missing: Vec<String> = (1..=want.n)
            .filter(|m| !seen.contains_key(m))
            .take(10)
            .map(|m| m.to_string())
            .collect();
        return Err(Diagnostic::new(format!(
            "shard(s) {}{} of {} missing: a merge of some shards is not the sweep",
            missing.join(", "),
            if want.n as usize - seen.len() > missing.len() {
                ", …"
            } else {
                ""
            },
            want.n
        ))
        .hint("give every shard's `--partial` file; nothing was written"));
    }
    // The first shard's header names the unreadable paths.
    let unreadable = headers
        .iter()
        .find(|(path, h)| shard(h, path).is_ok_and(|p| p.m == 1))
        .map(|(_, h)| h.unreadable.clone())
        .unwrap_or_default();
    let settings = first.settings.len();
    let expect = (first.inputs, first.inputs_digest);
    Ok((
        Header {
            unreadable,
            ..first
        },
        Records {
            readers,
            settings,
            expect,
            merged: 0,
            digest: Digest::default(),
        },
    ))
}

impl Records {
    /// The files merged are the sweep's, each once: a record moved to another shard, dropped
    /// with its header and end line rewritten, or of another file, is told here.
    fn all_merged(&self) -> Result<(), Diagnostic> {
        if (self.merged, self.digest.value()) == self.expect {
            return Ok(());
        }
        Err(Diagnostic::new(format!(
            "the shards' records are of {} file(s) that are not the {} file(s) the sweep found (their paths differ from those its header names)",
            self.merged, self.expect.0
        ))
        .hint("give every shard's `--partial` file as its sweep wrote it; nothing was written"))
    }
}

/// The shards' records in the order one sweep folds them.
pub struct Records {
    readers: Vec<Reader>,
    settings: usize,
    /// The sweep's input files: how many, and the digest of their paths in order.
    expect: (usize, u64),
    /// The files merged so far, and the digest of their paths.
    merged: usize,
    digest: Digest,
}

impl Records {
    /// The next file's contribution; `None` at the end.
    pub(super) fn next_file(&mut self) -> Result<Option<FileScore>, Diagnostic> {
        let mut best: Option<usize> = None;
        for (i, r) in self.readers.iter().enumerate() {
            let Some(key) = r.key() else { continue };
            match best {
                Some(b) => {
                    let other = self.readers[b].key();
                    if other == Some(key) {
                        return Err(Diagnostic::new(format!(
                            "{} is in two shards ({} and {})",
                            key.0.display(),
                            self.readers[b].path.display(),
                            r.path.display()
                        ))
                        .hint("each file belongs to one shard: sweep the shards with one --partition kind and count"));
                    }
                    if other.is_some_and(|o| key < o) {
                        best = Some(i);
                    }
                }
                None => best = Some(i),
            }
        }
        let Some(reader) = best.map(|b| &mut self.readers[b]) else {
            return self.all_merged().map(|()| None);
        };
        let Some(record) = reader.next.take() else {
            return self.all_merged().map(|()| None);
        };
        self.merged += 1;
        self.digest.add(&record.path);
        self.digest.add("\n");
        let at = reader.line;
        let path = reader.path.clone();
        reader.advance()?;
        score(record, self.settings).map(Some).map_err(|why| {
            Diagnostic::at(at, 1, why)
                .in_file(&path)
                .hint("the partial does not match its header; write it again")
        })
    }
}
