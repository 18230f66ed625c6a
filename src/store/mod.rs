//! The file edge: discover scenario files, map scenario ids to golden paths, read goldens and
//! write files atomically (write a temporary file beside the target, then rename), so an
//! interrupted run never leaves a half-written golden, pending file or report.

use std::io::{self, Write};
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

impl Layout {
    /// The scenario id of a file: its path below the scenarios root (or as given, when outside
    /// it), without extension, with `/` separators.
    pub fn id_of(&self, file: &Path) -> String {
        let rel = strip_prefix_lenient(file, &self.scenarios).unwrap_or_else(|| file.to_path_buf());
        let rel = rel.with_extension("");
        rel.components()
            .filter_map(|c| match c {
                std::path::Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Golden path of a case id.
    pub fn golden(&self, case_id: &str) -> PathBuf {
        self.snapshots.join(format!("{case_id}.{GOLDEN_EXT}"))
    }

    /// Pending path of a case id.
    pub fn pending(&self, case_id: &str) -> PathBuf {
        self.snapshots.join(format!("{case_id}.{PENDING_EXT}"))
    }

    /// The goldens folder that mirrors a scenarios folder, if the folder is inside the root.
    pub fn mirror(&self, dir: &Path) -> Option<PathBuf> {
        let rel = strip_prefix_lenient(dir, &self.scenarios)?;
        Some(self.snapshots.join(rel))
    }
}

/// `path` below `root`, if it is: compared as given (`./` ignored) or, when that fails (a root
/// such as `../scenarios` that a project file above the current folder gives, and a path
/// given from inside it), both made absolute from the current folder and normalized.
fn strip_prefix_lenient(path: &Path, root: &Path) -> Option<PathBuf> {
    let clean = |p: &Path| -> PathBuf { p.strip_prefix(".").unwrap_or(p).to_path_buf() };
    if let Ok(rel) = clean(path).strip_prefix(clean(root)) {
        return Some(rel.to_path_buf());
    }
    let cwd = std::env::current_dir().ok()?;
    let abs = |p: &Path| normalize(&cwd.join(p));
    abs(path)
        .strip_prefix(abs(root))
        .ok()
        .map(Path::to_path_buf)
}

/// `target` as a path from `base` (both absolute, or both relative to the same folder),
/// lexically: `..` for each folder of `base` not shared, then the rest of `target`; `.` for
/// the same folder.
pub fn relative_to(target: &Path, base: &Path) -> PathBuf {
    let target = normalize(target);
    let base = normalize(base);
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

/// A path with `.` dropped and `..` applied lexically.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Is this a scenario file by its name?
pub fn is_scenario_file(path: &Path) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    (name.ends_with(".toml") || name.ends_with(".json")) && !name.ends_with(".schema.json")
}

/// Every scenario file under `paths` (files as given, folders walked), sorted, deduplicated,
/// and the paths that could not be read (the others are still discovered).
pub fn discover(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, io::Error)>) {
    let mut out = Vec::new();
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
            out.push(p.clone());
            continue;
        }
        for entry in walkdir::WalkDir::new(p).sort_by_file_name() {
            match entry {
                Ok(entry) if entry.file_type().is_file() && is_scenario_file(entry.path()) => {
                    out.push(entry.into_path());
                }
                Ok(_) => {}
                Err(e) => {
                    let at = e.path().map_or_else(|| p.clone(), Path::to_path_buf);
                    errors.push((at, io::Error::other(e.to_string())));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    (out, errors)
}

/// Every file with extension `ext` under `dir`, sorted (none if `dir` does not exist).
pub fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let suffix = format!(".{ext}");
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| e.file_name().to_string_lossy().ends_with(&suffix))
        .map(walkdir::DirEntry::into_path)
        .collect();
    out.sort();
    out
}

/// Read a file that may be absent.
pub fn read_optional(path: &Path) -> io::Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(s) => Ok(Some(s)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// Read an input file of at most `max` bytes ([`crate::limits`]); a larger one is an error of
/// kind [`io::ErrorKind::FileTooLarge`] that names the `what` and the limit, read no further.
pub fn read_input(path: &Path, what: &str, max: u64) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    let len = std::fs::metadata(path).map_or(bytes.len() as u64, |m| m.len());
    match crate::limits::file_too_large(what, len.max(bytes.len() as u64), max) {
        Some(message) => Err(io::Error::new(io::ErrorKind::FileTooLarge, message)),
        None => Ok(bytes),
    }
}

/// [`read_input`] as text; invalid UTF-8 is an error of kind [`io::ErrorKind::InvalidData`]
/// that says where.
pub fn read_input_text(path: &Path, what: &str, max: u64) -> io::Result<String> {
    let bytes = read_input(path, what, max)?;
    String::from_utf8(bytes).map_err(|e| {
        let at = e.utf8_error().valid_up_to();
        let valid = std::str::from_utf8(&e.as_bytes()[..at]).unwrap_or_default();
        let (line, col) = crate::scenario::line_col(valid, at);
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{line}:{col}: the {what} is not valid UTF-8"),
        )
    })
}

/// Write `contents` to `path` atomically, creating parent folders.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .suffix(TEMP_SUFFIX)
        .tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Name prefix of the temporary files [`write_atomic`] and the metrics CSV write before the
/// rename; with [`TEMP_SUFFIX`], no other file harness reads or writes looks like one.
pub const TEMP_PREFIX: &str = ".harness-";
/// Name suffix of those temporary files.
pub const TEMP_SUFFIX: &str = ".tmp";
/// Age past which a temporary file under a goldens folder is a leftover: only a killed process
/// (SIGKILL, power loss) leaves one, and a live write renames its file within milliseconds.
pub const STALE_TEMP_SECS: u64 = 60;

/// Remove the temporary files a killed run left under `dir` (older than [`STALE_TEMP_SECS`]);
/// how many were removed. Nothing else reads them: discovery takes `.toml` and `.json`,
/// goldens end in `.snap` and `.snap.new`.
pub fn clean_stale_temps(dir: &Path) -> usize {
    let stale = |e: &walkdir::DirEntry| {
        let name = e.file_name().to_string_lossy();
        e.file_type().is_file()
            && name.starts_with(TEMP_PREFIX)
            && name.ends_with(TEMP_SUFFIX)
            && e.metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_secs() >= STALE_TEMP_SECS)
    };
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(stale)
        .filter(|e| std::fs::remove_file(e.path()).is_ok())
        .count()
}

/// Remove a file that may be absent.
pub fn remove_optional(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Pending goldens selected by `paths` (all of them when `paths` is empty): scenario files and
/// folders select their cases' pending files; golden files and folders select themselves.
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
    all.into_iter()
        .filter(|pending| {
            let Some(id) = case_id(pending) else {
                return false;
            };
            paths.iter().any(|p| {
                if strip_prefix_lenient(p, &layout.snapshots).is_some() {
                    let p = p.to_string_lossy();
                    let p = p.trim_end_matches(".new").trim_end_matches(".snap");
                    let pending = pending.to_string_lossy();
                    return pending.starts_with(p.trim_end_matches('/'));
                }
                if p.is_dir() {
                    return layout.mirror(p).is_some_and(|m| pending.starts_with(m))
                        || (strip_prefix_lenient(p, &layout.scenarios).is_none()
                            && id.starts_with(&layout.id_of(p)));
                }
                let scenario = layout.id_of(p);
                id == scenario || id.starts_with(&format!("{scenario}@"))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_temporary_files_are_cleaned_and_fresh_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("a/.harness-x1.tmp");
        let fresh = dir.path().join("a/.harness-x2.tmp");
        let golden = dir.path().join("a/b.snap");
        write_atomic(&old, b"half").unwrap();
        write_atomic(&fresh, b"half").unwrap();
        write_atomic(&golden, b"whole").unwrap();
        let past =
            std::time::SystemTime::now() - std::time::Duration::from_secs(STALE_TEMP_SECS + 5);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(past)
            .unwrap();
        std::fs::File::options()
            .write(true)
            .open(&golden)
            .unwrap()
            .set_modified(past)
            .unwrap();
        assert_eq!(clean_stale_temps(dir.path()), 1);
        assert!(!old.exists() && fresh.exists() && golden.exists());
        assert_eq!(files_with_ext(dir.path(), GOLDEN_EXT), vec![golden]);
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
            l.golden("reflex/exec@none"),
            PathBuf::from("snapshots/reflex/exec@none.snap")
        );
        assert_eq!(
            l.mirror(Path::new("scenarios/reflex")),
            Some(PathBuf::from("snapshots/reflex"))
        );
        assert_eq!(
            l.mirror(Path::new("scenarios")),
            Some(PathBuf::from("snapshots"))
        );
    }
}
