//! The file edge: discover scenario files, map scenario ids to golden paths, read goldens and
//! write files atomically (write a temporary file beside the target, then rename), so an
//! interrupted run never leaves a half-written golden, pending file or report. `guard` decides
//! what happens when a link, a device or a FIFO stands where a file is read or written.
//!
//! [`Layout::id_of`] is the one place a scenario file becomes its id: `run`, `list`, `exec`
//! and `record` all call it, and [`id_conflicts`] refuses files whose ids collide.

#![expect(
    clippy::disallowed_methods,
    reason = "store is the one place files are opened, read (bounded) and written (atomically)"
)]

pub mod guard;
mod paths;

pub use paths::PathList;

pub use guard::{
    Output, Room, STALE_TEMP_SECS, TEMP_PREFIX, TEMP_SUFFIX, clean_stale_temps, read_inside,
    write_inside, write_output,
};

use std::collections::BTreeMap;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Extension of reviewed goldens.
pub const GOLDEN_EXT: &str = "snap";
/// Extension of pending goldens awaiting review.
pub const PENDING_EXT: &str = "snap.new";

/// Where scenarios and goldens live.
#[derive(Debug, Clone)]
pub struct Layout {
    /// Root of scenario ids (`scenarios/`).
    pub scenarios: PathBuf,
    /// Root of goldens (`snapshots/`).
    pub snapshots: PathBuf,
}

/// `<dir>/<case id>.<ext>`, a case's golden (`ext` [`GOLDEN_EXT`]) or pending golden
/// ([`PENDING_EXT`]) in the goldens folder `dir`: the file name put together piece by piece,
/// not through the formatting machinery (a run asks for one a case), then joined as a whole,
/// so the path is what joining the formatted name gives on every platform.
pub fn case_file(dir: &Path, case_id: &str, ext: &str) -> PathBuf {
    let mut name = String::with_capacity(case_id.len() + 1 + ext.len());
    name.push_str(case_id);
    name.push('.');
    name.push_str(ext);
    dir.join(name)
}

impl Layout {
    /// The scenario id of a file: its path below the scenarios root (or as given, when outside
    /// it), without extension, with `/` separators. The path is first resolved lexically
    /// (`a/../b.toml` is `b.toml`), and an absolute path and a relative root (or the other way
    /// round) are compared from the current folder, so every spelling of one file gives one id.
    pub fn id_of(&self, file: &Path) -> String {
        plain_id(file, &self.scenarios).unwrap_or_else(|| self.id_resolved(file))
    }

    /// [`Layout::id_of`] the general way: both paths resolved and compared as paths.
    fn id_resolved(&self, file: &Path) -> String {
        let rel = strip_prefix_lenient(file, &self.scenarios).unwrap_or_else(|| normalise(file));
        let rel = rel.with_extension("");
        let mut id = String::with_capacity(rel.as_os_str().len());
        for c in rel.components() {
            if let Component::Normal(s) = c {
                if !id.is_empty() {
                    id.push('/');
                }
                id.push_str(&s.to_string_lossy());
            }
        }
        id
    }

    /// Golden path of a case id.
    pub fn golden(&self, case_id: &str) -> PathBuf {
        case_file(&self.snapshots, case_id, GOLDEN_EXT)
    }

    /// Pending path of a case id.
    pub fn pending(&self, case_id: &str) -> PathBuf {
        case_file(&self.snapshots, case_id, PENDING_EXT)
    }

    /// Read the golden of a case: a regular file inside the goldens folder (see
    /// [`guard::read_inside`]), at most [`crate::limits::MAX_GOLDEN_BYTES`]; `None` when absent.
    pub fn read_golden(&self, case_id: &str) -> io::Result<Option<String>> {
        self.read_golden_checked(case_id).and_then(|read| read)
    }

    /// [`Layout::read_golden`], with what [`guard::check_inside`] refuses (a link or a special
    /// file) as the outer error and what cannot be read as the inner one
    /// ([`guard::read_inside_checked`]).
    pub fn read_golden_checked(&self, case_id: &str) -> io::Result<io::Result<Option<String>>> {
        guard::read_inside_checked_often(
            &self.snapshots,
            &self.golden(case_id),
            "golden",
            crate::limits::MAX_GOLDEN_BYTES,
        )
    }

    /// [`Layout::read_golden_checked`] into `room` after what it holds: where the golden's
    /// bytes are in it, not yet checked as UTF-8 ([`guard::read_inside_checked_often_into`]).
    pub fn read_golden_into(
        &self,
        case_id: &str,
        room: &mut Room,
    ) -> io::Result<io::Result<Option<std::ops::Range<usize>>>> {
        guard::read_inside_checked_often_into(
            &self.snapshots,
            &self.golden(case_id),
            "golden",
            crate::limits::MAX_GOLDEN_BYTES,
            room,
        )
    }

    /// The goldens folder that mirrors a scenarios folder, if the folder is inside the root.
    pub fn mirror(&self, dir: &Path) -> Option<PathBuf> {
        let rel = strip_prefix_lenient(dir, &self.scenarios)?;
        Some(self.snapshots.join(rel))
    }
}

/// `target` as a path from `base` (both absolute, or both relative to the same folder),
/// lexically: `..` for each folder of `base` not shared, then the rest of `target`; `.` for
/// the same folder.
pub fn relative_to(target: &Path, base: &Path) -> PathBuf {
    let target = normalise(target);
    let base = normalise(base);
    let shared = target
        .components()
        .zip(base.components())
        .take_while(|(a, b)| a == b)
        .count();
    let mut out = PathBuf::new();
    for _ in base.components().skip(shared) {
        out.push("..");
    }
    for c in target.components().skip(shared) {
        out.push(c);
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// `path` with `.` dropped and `..` resolved against the components before it (lexically: links
/// are not followed).
pub fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                if matches!(out.components().next_back(), Some(Component::Normal(_))) {
                    out.pop();
                } else if !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// The id of a file below `root` when both are spelled plainly, as discovery spells them
/// (UTF-8, `/` between names, no `.`, `..` or empty name, the file's stem included):
/// [`Layout::id_of`]'s answer read off the text, without resolving either path. `None` for
/// any other spelling.
fn plain_id(file: &Path, root: &Path) -> Option<String> {
    if cfg!(windows) {
        return None;
    }
    let (file, root) = (file.to_str()?, root.to_str()?);
    let rel = file.strip_prefix(root)?.strip_prefix('/')?;
    let (dir, name) = rel.rsplit_once('/').unwrap_or(("", rel));
    // The id's last name is the file's stem, which must be plain too (`..toml`'s is `.`).
    let stem = Path::new(name).file_stem()?.to_str()?;
    let name_ok = |name: &str| !matches!(name, "" | "." | "..");
    let names_ok = |path: &str| path.split('/').all(name_ok);
    if !names_ok(root.strip_prefix('/').unwrap_or(root)) || !names_ok(rel) || !name_ok(stem) {
        return None;
    }
    let mut id = String::with_capacity(rel.len());
    if !dir.is_empty() {
        id.push_str(dir);
        id.push('/');
    }
    id.push_str(stem);
    Some(id)
}

/// `path` and `root` normalised, both absolute when one of them is.
fn comparable(path: &Path, root: &Path) -> (PathBuf, PathBuf) {
    if path.is_absolute() == root.is_absolute() {
        return (normalise(path), normalise(root));
    }
    let abs = |p: &Path| normalise(&std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf()));
    (abs(path), abs(root))
}

/// `path` below `root` (both resolved as [`Layout::id_of`] does), if it is there. Two
/// relative paths that do not nest as written (a root such as `../scenarios` that a project
/// file above the current folder gives, and a path given from inside it) are compared again
/// made absolute from the current folder.
pub(crate) fn strip_prefix_lenient(path: &Path, root: &Path) -> Option<PathBuf> {
    let (p, r) = comparable(path, root);
    if let Ok(rel) = p.strip_prefix(&r) {
        return Some(rel.to_path_buf());
    }
    if path.is_absolute() || root.is_absolute() {
        return None;
    }
    let abs = |p: &Path| std::path::absolute(p).ok().map(|a| normalise(&a));
    abs(path)?
        .strip_prefix(abs(root)?)
        .ok()
        .map(Path::to_path_buf)
}

/// The project a path belongs to, as a canonical folder: the nearest folder at or above `dir`
/// holding `harness.toml` or `.git`, else the current folder. References between files (a
/// cassette's scenario) must stay inside it.
pub fn project_root(dir: &Path) -> PathBuf {
    // A folder not made yet (a cassette about to be written) belongs where its nearest
    // existing ancestor does.
    let abs = normalise(&std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf()));
    let start = abs
        .ancestors()
        .find_map(|d| std::fs::canonicalize(d).ok())
        .unwrap_or(abs);
    start
        .ancestors()
        .find(|d| d.join("harness.toml").is_file() || d.join(".git").exists())
        .map(Path::to_path_buf)
        .or_else(|| {
            std::env::current_dir()
                .ok()
                .and_then(|c| std::fs::canonicalize(c).ok())
        })
        .unwrap_or(start)
}

/// The folders a reference made from `dir` may lead into: its project ([`project_root`]) and
/// the scenarios root in use, when there is one (a run from a subfolder without a project file
/// names it), both canonical.
pub fn reference_roots(dir: &Path, scenarios: Option<&Path>) -> Vec<PathBuf> {
    let mut roots = vec![project_root(dir)];
    roots.extend(scenarios.and_then(|s| std::fs::canonicalize(s).ok()));
    roots
}

/// Would writing `output` replace the input `input` — the same file under any name (`./x`, a
/// link) — or put a file into the input folder `input` that the command reads back as an input
/// (`reads` says which names it reads)? Why, in words, when it would. Paths that cannot be
/// resolved are not compared (their own errors come when they are used).
pub fn output_over_input(
    output: &Path,
    input: &Path,
    reads: impl Fn(&Path) -> bool,
) -> Option<String> {
    let resolved = resolve_to_be(output)?;
    let input_resolved = std::fs::canonicalize(input).ok()?;
    if input_resolved.is_dir() {
        (resolved.starts_with(&input_resolved) && reads(output)).then(|| {
            format!(
                "lies in the input folder {}, where this command would read it back as an input",
                input.display()
            )
        })
    } else {
        // The same file under another name too (a hard link).
        let same_file = || {
            use std::os::unix::fs::MetadataExt;
            match (std::fs::metadata(output), std::fs::metadata(input)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                _ => false,
            }
        };
        (resolved == input_resolved || same_file())
            .then(|| format!("is the input file {}", input.display()))
    }
}

/// Would two outputs land on one file (the same path under any spelling or link)?
pub fn same_place(a: &Path, b: &Path) -> bool {
    matches!((resolve_to_be(a), resolve_to_be(b)), (Some(x), Some(y)) if x == y)
}

/// Where a path is or would be once written: its nearest existing folder resolved (links,
/// `..`), the parts below it that do not exist yet appended (their `..` taken lexically).
pub fn resolve_to_be(path: &Path) -> Option<PathBuf> {
    if let Ok(p) = std::fs::canonicalize(path) {
        return Some(p);
    }
    let mut missing: Vec<&std::ffi::OsStr> = Vec::new();
    let mut at = path;
    let base = loop {
        let parent = match at.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        missing.push(at.file_name()?);
        if let Ok(p) = std::fs::canonicalize(parent) {
            break p;
        }
        if parent == Path::new(".") || parent.parent().is_none() {
            return None;
        }
        at = parent;
    };
    let mut out = base;
    for part in missing.into_iter().rev() {
        if part == ".." {
            out.pop();
        } else if part != "." {
            out.push(part);
        }
    }
    Some(out)
}

/// Is this a scenario file by its name?
pub fn is_scenario_file(path: &Path) -> bool {
    let name = path.file_name().map_or(&[][..], |n| n.as_encoded_bytes());
    (name.ends_with(b".toml") || name.ends_with(b".json")) && !name.ends_with(b".schema.json")
}

/// An error of kind [`io::ErrorKind::InvalidInput`]: a path harness refuses to read, and why.
fn refused(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message.into())
}

/// A path found inside a scenarios folder that harness will not read, or `None` to take it
/// (or skip it quietly: a file that is no scenario).
fn refused_entry(entry: &walkdir::DirEntry) -> Option<io::Error> {
    let t = entry.file_type();
    let scenario_like = is_scenario_file(entry.path());
    if t.is_symlink() {
        let to_folder = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
        return (scenario_like || to_folder).then(|| {
            refused("is a symbolic link; harness does not follow links inside a scenarios folder (one could make it read any file on the machine): copy the file in, or name the link's target on the command line")
        });
    }
    if !scenario_like || t.is_dir() {
        return None;
    }
    if !t.is_file() {
        let kind = entry
            .metadata()
            .map_or("not a regular file", |m| guard::kind_of(&m));
        return Some(refused(format!("is {kind}, not a scenario file")));
    }
    unnamable(entry.path())
}

/// Longest scenario file name (without its extension), in bytes: its goldens' names add
/// `@PROFILE.snap.new`, and file systems allow 255 bytes.
pub const MAX_SCENARIO_NAME_BYTES: usize = 200;

/// Why a scenario's path cannot name it, if it cannot: not UTF-8, a control character (a line
/// break in a path would forge lines of reports and CI logs), or a name too long for its
/// goldens' names.
fn unnamable(path: &Path) -> Option<io::Error> {
    let stem = path.file_stem().map_or(0, |s| s.len());
    if stem > MAX_SCENARIO_NAME_BYTES {
        return Some(refused(format!(
            "the file name is {stem} bytes, too long for the names of its goldens (`NAME@PROFILE.snap.new`; at most {MAX_SCENARIO_NAME_BYTES} bytes before the extension)"
        )));
    }
    match path.to_str() {
        None => Some(refused(
            "the path is not valid UTF-8; scenario ids, goldens and reports name files by their path, so rename it",
        )),
        Some(s) => crate::escape::first_unsafe(s).map(|_| {
            refused("the path holds a control character; ids and paths appear in goldens, reports and CI logs one line each, so rename it")
        }),
    }
}

/// Every scenario file under `paths` (files as given, folders walked without following links),
/// sorted, deduplicated, and the paths that could not be read or were refused (the others are
/// still discovered): links, FIFOs, devices and undecodable names inside a folder are refused
/// rather than skipped, and so is a path given that is neither a file nor a folder.
pub fn discover(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, io::Error)>) {
    let (files, errors) = discover_list(paths);
    (files.iter().collect(), errors)
}

/// [`discover`], the files kept as a [`PathList`]. A folder's walk gives its files in sorted
/// order already, and they go straight into the list; only paths given out of order (or twice)
/// are gathered and sorted first.
pub fn discover_list(paths: &[PathBuf]) -> (PathList, Vec<(PathBuf, io::Error)>) {
    let mut found = Found::default();
    let mut errors = Vec::new();
    for p in paths {
        let meta = match std::fs::metadata(p) {
            Ok(m) => m,
            Err(e) => {
                errors.push((p.clone(), e));
                continue;
            }
        };
        if meta.is_file() {
            match unnamable(p) {
                Some(e) => errors.push((p.clone(), e)),
                None => found.add(p),
            }
            continue;
        }
        if !meta.is_dir() {
            let kind = guard::kind_of(&meta);
            errors.push((
                p.clone(),
                refused(format!(
                    "is {kind}; `harness run` reads scenario files and folders"
                )),
            ));
            continue;
        }
        for entry in walk(p) {
            match entry {
                Ok(entry) => {
                    if let Some(e) = refused_entry(&entry) {
                        errors.push((entry.into_path(), e));
                    } else if entry.file_type().is_file() && is_scenario_file(entry.path()) {
                        found.add(entry.path());
                    }
                }
                Err(e) => {
                    let at = e.path().map_or_else(|| p.clone(), Path::to_path_buf);
                    errors.push((at, io::Error::other(e.to_string())));
                }
            }
        }
    }
    errors.sort_by(|a, b| a.0.cmp(&b.0));
    (found.sorted(), errors)
}

/// Files found so far: a [`PathList`] while they come in sorted order, all of them gathered
/// once one does not.
#[derive(Default)]
struct Found {
    list: PathList,
    unsorted: Option<Vec<PathBuf>>,
}

impl Found {
    fn add(&mut self, path: &Path) {
        if let Some(all) = &mut self.unsorted {
            all.push(path.to_owned());
            return;
        }
        if self.list.last().is_none_or(|last| last < path) && self.list.push(path) {
            return;
        }
        let mut all: Vec<PathBuf> = self.list.iter().collect();
        all.push(path.to_owned());
        self.list = PathList::new();
        self.unsorted = Some(all);
    }

    fn sorted(self) -> PathList {
        match self.unsorted {
            None => self.list,
            Some(mut all) => {
                all.sort();
                all.dedup();
                all.iter().collect()
            }
        }
    }
}

/// The message for a path [`discover`] could not take: its refusal, or `cannot read: …`.
pub fn describe(e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::InvalidInput {
        e.to_string()
    } else {
        format!("cannot read: {e}")
    }
}

/// The hint for a path [`discover`] could not take, for `command` (`harness run`, …).
pub fn hint_for(e: &io::Error, command: &str) -> String {
    if e.kind() == io::ErrorKind::InvalidInput {
        "harness reads regular scenario files with plain names (docs/robustness.md): rename or replace it, or name a link's target on the command line".to_owned()
    } else {
        format!("check the path; `{command}` takes scenario files and folders")
    }
}

/// Scenario files whose ids cannot be told apart, each with why: two files with one id
/// (`dup.toml` and `dup.json`), or a name with `@`, which separates a scenario id from a
/// profile in case ids and golden names (`foo@none.toml` would be `foo.toml`'s
/// `[compare.none]`). Both files of a collision are refused, so neither wins by sort order.
pub fn id_conflicts<I>(layout: &Layout, files: I) -> Vec<(PathBuf, String)>
where
    I: IntoIterator + Clone,
    I::Item: AsRef<Path>,
{
    use std::hash::{DefaultHasher, Hash as _, Hasher as _};
    let mut out = Vec::new();
    // Files are sorted by the hash of their id; only those whose hash another file shares are
    // looked at again, so a large run holds 16 bytes a file here, not its id and path.
    let mut keys: Vec<(u64, usize)> = Vec::new();
    for (i, f) in files.clone().into_iter().enumerate() {
        let f = f.as_ref();
        let id = layout.id_of(f);
        let name = id.rsplit('/').next().unwrap_or(&id);
        if name.contains('@') {
            out.push((
                f.to_owned(),
                format!("a scenario file name cannot contain `@` (id `{id}`): `@` separates a scenario id from a profile or label in case ids and golden names"),
            ));
            continue;
        }
        let mut h = DefaultHasher::new();
        id.hash(&mut h);
        keys.push((h.finish(), i));
    }
    keys.sort_unstable();
    let mut suspects: Vec<usize> = keys
        .chunk_by(|a, b| a.0 == b.0)
        .filter(|same| same.len() > 1)
        .flat_map(|same| same.iter().map(|(_, i)| *i))
        .collect();
    drop(keys);
    suspects.sort_unstable();
    let mut by_id: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    if !suspects.is_empty() {
        for (i, f) in files.into_iter().enumerate() {
            if suspects.binary_search(&i).is_ok() {
                let f = f.as_ref();
                by_id.entry(layout.id_of(f)).or_default().push(f.to_owned());
            }
        }
    }
    for (id, same) in by_id.into_iter().filter(|(_, v)| v.len() > 1) {
        for f in &same {
            let others: Vec<String> = same
                .iter()
                .filter(|o| o != &f)
                .map(|o| o.display().to_string())
                .collect();
            out.push((
                f.clone(),
                format!(
                    "scenario id `{id}` is also the id of {}; ids name goldens and cases, so each must be one file's",
                    others.join(", ")
                ),
            ));
        }
    }
    out.sort();
    out
}

/// Every entry (not a folder) with extension `ext` under `dir`, links and special files
/// included (whoever reads them refuses those), sorted; none if `dir` does not exist.
pub fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walk_files_with_ext(dir, ext).collect();
    out.sort();
    out
}

/// A walk of `root` with each folder's entries in order of name, as `sort_by_file_name`
/// gives. Siblings' paths are their parent's path and a name, so comparing the whole paths
/// orders them as their names, without taking each path apart again on every comparison.
pub fn walk(root: &Path) -> walkdir::WalkDir {
    walkdir::WalkDir::new(root).sort_by(|a, b| a.path().as_os_str().cmp(b.path().as_os_str()))
}

/// [`files_with_ext`] one at a time, in the walk's order (each folder's entries by name).
pub fn walk_files_with_ext(dir: &Path, ext: &str) -> impl Iterator<Item = PathBuf> {
    let suffix = format!(".{ext}");
    walk(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| !e.file_type().is_dir())
        .filter(move |e| e.file_name().to_string_lossy().ends_with(&suffix))
        .map(walkdir::DirEntry::into_path)
}

/// Read an input file of at most `max` bytes ([`crate::limits`]); a larger one is an error of
/// kind [`io::ErrorKind::FileTooLarge`] that names the `what` and the limit, read no further.
/// A FIFO, device or folder is refused (kind [`io::ErrorKind::InvalidInput`]) without waiting
/// on it.
pub fn read_input(path: &Path, what: &str, max: u64) -> io::Result<Vec<u8>> {
    let (file, len) = guard::open_regular_sized(path, what)?;
    guard::read_bounded(file, len, what, max)
}

/// Why an input file could not be read as text.
#[derive(Debug)]
pub enum ReadError {
    /// It could not be opened or read: not there, not permitted, a link or special file
    /// refused (kind [`io::ErrorKind::InvalidInput`]), or past its limit (kind
    /// [`io::ErrorKind::FileTooLarge`]).
    Io(io::Error),
    /// Its bytes are not valid UTF-8 from this place on.
    NotUtf8 {
        /// What the file is (`scenario`, `baseline`, …).
        what: String,
        /// Where the first invalid byte is.
        at: crate::diagnostic::Position,
    },
}

impl ReadError {
    /// The I/O error's kind ([`io::ErrorKind::InvalidData`] for invalid UTF-8).
    pub fn kind(&self) -> io::ErrorKind {
        match self {
            Self::Io(e) => e.kind(),
            Self::NotUtf8 { .. } => io::ErrorKind::InvalidData,
        }
    }

    /// What kind of problem it is.
    pub fn cause(&self) -> crate::diagnostic::Cause {
        match self {
            Self::Io(_) => crate::diagnostic::Cause::Other,
            Self::NotUtf8 { .. } => crate::diagnostic::Cause::NotUtf8,
        }
    }

    /// The problem in `file`: invalid UTF-8 at its place, anything else at the file's start
    /// with `context` before the I/O error (`cannot read: …`).
    pub fn diagnostic(&self, file: &Path, context: &str) -> crate::diagnostic::Diagnostic {
        use crate::diagnostic::Diagnostic;
        let d = match self {
            Self::NotUtf8 { at, .. } => Diagnostic::at(at.line, at.col, self.to_string()),
            Self::Io(e) => Diagnostic::whole_file(format!("{context}{e}")),
        };
        d.in_file(file).cause(self.cause())
    }
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => e.fmt(f),
            Self::NotUtf8 { what, .. } => write!(f, "the {what} is not valid UTF-8"),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// [`read_input`] as text; invalid UTF-8 is [`ReadError::NotUtf8`], at its place.
pub fn read_input_text(path: &Path, what: &str, max: u64) -> Result<String, ReadError> {
    let bytes = read_input(path, what, max)?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let valid = std::str::from_utf8(&e.as_bytes()[..at]).unwrap_or_default();
        let (line, col) = crate::scenario::line_col(valid, at);
        ReadError::NotUtf8 {
            what: what.to_owned(),
            at: crate::diagnostic::Position { line, col },
        }
    })
}

/// Read an input text file of at most `max` bytes line by line, each line (with its line
/// break) handed to `each` as it is read, never the whole file held: what
/// [`read_input_text`] refuses, this refuses (the same errors, invalid UTF-8 at its place),
/// and `each`'s first error ends the reading (the inner error).
pub fn for_each_input_line<E>(
    path: &Path,
    what: &str,
    max: u64,
    mut each: impl FnMut(&str) -> Result<(), E>,
) -> Result<Result<(), E>, ReadError> {
    use io::BufRead as _;
    let too_large = |len: u64| guard::within(what, len, max);
    let (file, len) = guard::open_regular_sized(path, what)?;
    too_large(len)?;
    let mut reader = io::BufReader::with_capacity(64 * 1024, io::Read::take(file, max + 1));
    let (mut buf, mut read, mut line) = (Vec::new(), 0u64, 0usize);
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(Ok(()));
        }
        read += n as u64;
        too_large(read)?;
        line += 1;
        let text = std::str::from_utf8(&buf).map_err(|e| {
            let valid = std::str::from_utf8(&buf[..e.valid_up_to()]).unwrap_or_default();
            ReadError::NotUtf8 {
                what: what.to_owned(),
                at: crate::diagnostic::Position {
                    line,
                    col: valid.chars().count() + 1,
                },
            }
        })?;
        if let Err(e) = each(text) {
            return Ok(Err(e));
        }
    }
}

/// The extensions a rotated file keeps after its suffix (the longest first).
const ROTATED_EXTENSIONS: [&str; 6] = [
    ".jsonl.gz",
    ".jsonl.zst",
    ".jsonl",
    ".json",
    ".pb",
    ".binpb",
];

/// A rotated file's name, read: the current file's name and the rotation's suffix.
#[derive(Debug, PartialEq, Eq)]
pub struct Rotation<'a> {
    /// The current file's name: `traces.jsonl` for `traces-0001.jsonl`.
    pub base: String,
    /// The suffix: `0001`, or the Collector's time stamp `2026-11-29T10-00-00.000`.
    pub suffix: &'a str,
    /// A time stamp (the Collector's rotation), not a number (harness collect's).
    pub stamped: bool,
}

/// A file name as a rotation of another: `<base>-NNNN<ext>` (four digits: `harness collect`'s
/// rotations) or `<base>-2006-01-02T15-04-05.000<ext>` (the Collector's: lumberjack's time
/// stamp); `None` for a name that is neither.
pub fn rotation_of(name: &str) -> Option<Rotation<'_>> {
    let ext = ROTATED_EXTENSIONS.iter().find(|x| name.ends_with(*x))?;
    let stem = &name[..name.len() - ext.len()];
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
        if digits.len() != 4 || !digits.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        stem.split_at(base.len())
    };
    (!base.is_empty()).then(|| Rotation {
        base: format!("{base}{ext}"),
        suffix: &suffix[1..],
        stamped,
    })
}

/// The first rotation name of `path` not taken: `traces.jsonl` → `traces-0001.jsonl` (then
/// `-0002`, …), the suffix before the extension [`rotation_of`] reads.
pub fn next_rotation(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let ext = ROTATED_EXTENSIONS
        .iter()
        .find(|x| name.ends_with(*x))
        .map_or_else(|| name.rfind('.').map_or("", |i| &name[i..]), |x| *x);
    let stem = &name[..name.len() - ext.len()];
    (1..)
        .map(|n| path.with_file_name(format!("{stem}-{n:04}{ext}")))
        .find(|p| !p.exists())
        .unwrap_or_else(|| path.with_file_name(format!("{stem}-rotated{ext}")))
}

/// Rotate `path` away to [`next_rotation`]'s name; the name it got.
pub fn rotate(path: &Path) -> io::Result<PathBuf> {
    let next = next_rotation(path);
    std::fs::rename(path, &next)?;
    Ok(next)
}

/// The rotations of `path` already beside it ([`next_rotation`]'s names).
pub fn rotations_of(path: &Path) -> Vec<PathBuf> {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return Vec::new();
    };
    let Some(dir) = path.parent().map(|d| {
        if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        }
    }) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(rotation_of)
                .is_some_and(|r| !r.stamped && r.base == name)
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// Append `contents` to a file another program owns and reads as it grows (GitHub's
/// `GITHUB_STEP_SUMMARY`), creating it when it is not there. Not atomic by design: the file
/// holds the other steps' text, which a rewrite could lose.
pub fn append(path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    file.write_all(contents)
}

/// Write a file the user named atomically, creating parent folders (see [`guard::Output`]:
/// links are written through, devices and FIFOs in place, a replaced file keeps its mode).
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    write_output(path, contents)
}

/// Can files be written into `dir` (created if need be)? A probe file is made and removed;
/// commands check their output folders with it before they run, not when the results are in.
pub fn writable_folder(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)
        .map(drop)
}

/// A log file an agent command writes its output into (`harness suite`'s agent logs): its
/// folders created, the file made anew (never written through a link).
pub fn log_file(path: &Path) -> io::Result<std::fs::File> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// The last `lines` lines of a text file that are not blank, joined by ` / `, from at most its
/// last 4 KiB; `None` when there are none or the file cannot be read.
pub fn tail_lines(path: &Path, lines: usize) -> Option<String> {
    use std::io::{Read as _, Seek as _};
    const TAIL: u64 = 4096;
    let mut file = guard::open_regular(path, "log").ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(io::SeekFrom::Start(len.saturating_sub(TAIL)))
        .ok()?;
    let mut bytes = Vec::new();
    file.take(TAIL).read_to_end(&mut bytes).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    let mut last: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .rev()
        .take(lines)
        .collect();
    last.reverse();
    (!last.is_empty()).then(|| last.join(" / "))
}

/// Remove a file that may be absent.
pub fn remove_optional(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Pending goldens selected by `paths` (all of them when `paths` is empty): scenario files and
/// folders select their cases' pending files; golden files select their own case's (by case id,
/// never by a string prefix: `a.snap` does not select `a-b.snap.new`), golden folders theirs.
pub fn select_pending(layout: &Layout, paths: &[PathBuf]) -> Vec<PathBuf> {
    let all = files_with_ext(&layout.snapshots, PENDING_EXT);
    if paths.is_empty() {
        return all;
    }
    let case_id = |p: &Path| -> Option<String> {
        let rel = strip_prefix_lenient(p, &layout.snapshots)?;
        let s = rel.to_string_lossy().replace('\\', "/");
        Some(s.strip_suffix(".snap.new")?.to_owned())
    };
    let under = |id: &str, folder: &str| folder.is_empty() || id.starts_with(&format!("{folder}/"));
    all.into_iter()
        .filter(|pending| {
            let Some(id) = case_id(pending) else {
                return false;
            };
            paths.iter().any(|p| {
                if let Some(rel) = strip_prefix_lenient(p, &layout.snapshots) {
                    let s = rel.to_string_lossy().replace('\\', "/");
                    return match s
                        .strip_suffix(".snap.new")
                        .or_else(|| s.strip_suffix(".snap"))
                    {
                        Some(golden) => id == golden,
                        None => under(&id, &s),
                    };
                }
                if p.is_dir() {
                    return match strip_prefix_lenient(p, &layout.scenarios) {
                        Some(rel) => under(&id, &rel.to_string_lossy().replace('\\', "/")),
                        None => under(&id, &layout.id_of(p)),
                    };
                }
                let scenario = layout.id_of(p);
                id == scenario || id.starts_with(&format!("{scenario}@"))
            })
        })
        .collect()
}

#[cfg(test)]
#[expect(
    clippy::disallowed_methods,
    reason = "a test sets up and reads its files, clocks and threads itself"
)]
mod tests {
    #[test]
    fn a_walk_orders_each_folder_by_name_as_walkdir_does() {
        let dir = tempfile::tempdir().expect("a folder");
        // Names that share prefixes, sort around the separator and its neighbours (`-`, `.`
        // below `/`; `0`, `_` above), sort by case (`B` before `a`) and are not ASCII; no two
        // differ only in case, which a case-insensitive file system would take as one.
        let names = [
            "a", "a-b", "a.b", "a0", "a_b", "ab", "B", "é", "z.toml", "a b", "~",
        ];
        for n in names {
            std::fs::create_dir_all(dir.path().join(n).join("in")).expect("a folder");
            for m in names {
                std::fs::write(dir.path().join(n).join(m), "").expect("a file");
            }
        }
        let ours: Vec<_> = super::walk(dir.path())
            .into_iter()
            .map(|e| e.expect("an entry").into_path())
            .collect();
        let theirs: Vec<_> = walkdir::WalkDir::new(dir.path())
            .sort_by_file_name()
            .into_iter()
            .map(|e| e.expect("an entry").into_path())
            .collect();
        assert_eq!(ours.len(), 1 + names.len() * (names.len() + 2));
        assert_eq!(ours, theirs);
    }

    #[test]
    fn rotations_are_named_by_their_current_file() {
        let r = super::rotation_of("traces-0001.jsonl").expect("a rotation");
        assert_eq!(
            (r.base.as_str(), r.suffix, r.stamped),
            ("traces.jsonl", "0001", false)
        );
        let r = super::rotation_of("agents-2026-11-29T10-00-00.000.jsonl.gz").expect("stamped");
        assert_eq!(
            (r.base.as_str(), r.suffix, r.stamped),
            ("agents.jsonl.gz", "2026-11-29T10-00-00.000", true)
        );
        let r = super::rotation_of("agents.otlp-0002.jsonl").expect("a dotted stem");
        assert_eq!(r.base, "agents.otlp.jsonl");
        // Not rotations: other than four digits, words, no base, other extensions.
        for name in [
            "run-12.jsonl",
            "django__django-11099.json",
            "tau-bench.json",
            "-0001.jsonl",
            "traces.jsonl",
            "t-0001.toml",
        ] {
            assert_eq!(super::rotation_of(name), None, "{name}");
        }
        // The next free name, read back as a rotation of the file.
        let dir = tempfile::tempdir().expect("a folder");
        let path = dir.path().join("agents.otlp.jsonl");
        let first = super::next_rotation(&path);
        assert!(first.ends_with("agents.otlp-0001.jsonl"), "{first:?}");
        std::fs::write(&first, "").expect("writes");
        assert!(super::next_rotation(&path).ends_with("agents.otlp-0002.jsonl"));
        assert_eq!(super::rotations_of(&path), [first]);
    }

    use super::*;

    #[test]
    fn discovered_files_are_sorted_and_once_each_however_the_paths_are_given() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let all: Vec<PathBuf> = [
            "a/x.toml",
            "a/y.json",
            "a-b/z.toml",
            "a.toml",
            "b/c/d.toml",
            "b/e.toml",
        ]
        .iter()
        .map(|f| root.join(f))
        .collect();
        for p in &all {
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "").unwrap();
        }
        let mut sorted = all.clone();
        sorted.sort();
        // One folder: its walk is already in order.
        assert_eq!(discover(&[root.to_owned()]).0, sorted);
        // Folders out of order, one inside another, and a file named again.
        let given = [
            root.join("b"),
            root.join("a"),
            root.to_owned(),
            root.join("a.toml"),
        ];
        let (files, errors) = discover_list(&given);
        assert!(errors.is_empty());
        assert_eq!(files.iter().collect::<Vec<_>>(), sorted);
        assert_eq!(files.len(), all.len());
    }

    #[test]
    fn ids_are_relative_to_the_scenarios_root() {
        let l = Layout {
            scenarios: PathBuf::from("scenarios"),
            snapshots: PathBuf::from("snapshots"),
        };
        assert_eq!(
            l.id_of(Path::new("scenarios/reflex/exec.toml")),
            "reflex/exec"
        );
        assert_eq!(
            l.id_of(Path::new("./scenarios/reflex/exec.toml")),
            "reflex/exec"
        );
        assert_eq!(
            l.id_of(Path::new("fixtures/invalid/x.toml")),
            "fixtures/invalid/x"
        );
        assert_eq!(
            l.golden("reflex/exec@none").as_os_str(),
            "snapshots/reflex/exec@none.snap"
        );
        assert_eq!(
            l.pending("reflex/exec@none").as_os_str(),
            "snapshots/reflex/exec@none.snap.new"
        );
        assert_eq!(
            l.mirror(Path::new("scenarios/reflex")),
            Some(PathBuf::from("snapshots/reflex"))
        );
        assert_eq!(
            l.mirror(Path::new("scenarios")),
            Some(PathBuf::from("snapshots"))
        );
        // Every spelling of one file is one id.
        assert_eq!(l.id_of(Path::new("scenarios/a/../b.toml")), "b");
        assert_eq!(l.id_of(Path::new("scenarios/./a/./b.toml")), "a/b");
        let abs = std::path::absolute("scenarios/reflex/exec.toml").unwrap();
        assert_eq!(l.id_of(&abs), "reflex/exec");
        let abs_root = Layout {
            scenarios: std::path::absolute("scenarios").unwrap(),
            snapshots: PathBuf::from("snapshots"),
        };
        assert_eq!(
            abs_root.id_of(Path::new("scenarios/reflex/exec.toml")),
            "reflex/exec"
        );
        assert_eq!(
            normalise(Path::new("../a/../../b")),
            PathBuf::from("../../b")
        );
        assert_eq!(normalise(Path::new("/../a")), PathBuf::from("/a"));
    }

    #[test]
    fn a_plainly_spelled_id_is_the_one_paths_resolved_give() {
        let cwd = std::env::current_dir().unwrap();
        let cwd = cwd.to_str().unwrap();
        let roots = [
            "scenarios".to_owned(),
            "a/b".to_owned(),
            "scenarios/".to_owned(),
            "./scenarios".to_owned(),
            ".".to_owned(),
            "../scenarios".to_owned(),
            format!("{cwd}/scenarios"),
            "/".to_owned(),
        ];
        let below = [
            "x.toml",
            "reflex/exec.toml",
            "a/b/c.json",
            ".hidden",
            "dir/.hidden.toml",
            "x.tar.gz",
            "x..",
            "x.",
            "..toml",
            "...toml",
            "sub/..json",
            "sub/...toml",
            "noext",
            "a/./b.toml",
            "a/../b.toml",
            "a//b.toml",
            "a/b.toml/",
            "..",
            "",
        ];
        let mut plain = 0;
        for root in &roots {
            let l = Layout {
                scenarios: PathBuf::from(root),
                snapshots: PathBuf::from("snapshots"),
            };
            let bare = root.trim_end_matches('/');
            for rel in below {
                for file in [
                    format!("{bare}/{rel}"),
                    format!("{root}{rel}"),
                    format!("{bare}x/{rel}"),
                    format!("{cwd}/{bare}/{rel}"),
                    rel.to_owned(),
                ] {
                    let file = Path::new(&file);
                    let general = l.id_resolved(file);
                    assert_eq!(l.id_of(file), general, "{root:?} {file:?}");
                    if let Some(id) = plain_id(file, &l.scenarios) {
                        assert_eq!(id, general, "{root:?} {file:?}");
                        plain += 1;
                    }
                }
            }
        }
        assert!(plain > 20, "plain spellings take the short way: {plain}");
    }

    #[test]
    fn colliding_ids_and_at_signs_are_refused_in_both_files() {
        let l = Layout {
            scenarios: PathBuf::from("scenarios"),
            snapshots: PathBuf::from("snapshots"),
        };
        let files: Vec<PathBuf> = [
            "scenarios/dup.json",
            "scenarios/dup.toml",
            "scenarios/x@none.toml",
            "scenarios/y.toml",
        ]
        .iter()
        .map(PathBuf::from)
        .collect();
        let c = id_conflicts(&l, &files);
        let refused: Vec<&str> = c.iter().map(|(p, _)| p.to_str().unwrap()).collect();
        assert_eq!(
            refused,
            [
                "scenarios/dup.json",
                "scenarios/dup.toml",
                "scenarios/x@none.toml"
            ]
        );
        assert!(
            c[0].1.contains("also the id of scenarios/dup.toml"),
            "{}",
            c[0].1
        );
    }

    #[test]
    fn pending_goldens_are_selected_by_case_not_by_prefix() {
        let dir = tempfile::tempdir().unwrap();
        let l = Layout {
            scenarios: dir.path().join("scenarios"),
            snapshots: dir.path().join("snapshots"),
        };
        for id in ["a/x", "a/x@none", "a/x-y", "a/x-y@none", "ab/z"] {
            std::fs::create_dir_all(l.pending(id).parent().unwrap()).unwrap();
            std::fs::write(l.pending(id), "t").unwrap();
        }
        let pick = |p: &Path| -> Vec<String> {
            select_pending(&l, &[p.to_path_buf()])
                .iter()
                .map(|f| {
                    f.strip_prefix(&l.snapshots)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect()
        };
        assert_eq!(pick(&l.golden("a/x")), ["a/x.snap.new"]);
        assert_eq!(pick(&l.pending("a/x-y@none")), ["a/x-y@none.snap.new"]);
        assert_eq!(pick(&l.snapshots.join("a")).len(), 4);
        assert_eq!(
            pick(&l.scenarios.join("a/x.toml")),
            ["a/x.snap.new", "a/x@none.snap.new"]
        );
    }
}
