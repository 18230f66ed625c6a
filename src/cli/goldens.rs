//! `harness diff`, `accept` and `reject`: the review of pending goldens (`.snap.new`, beside
//! the goldens or in a `--pending-dir`) against their goldens.

use super::fail;
use crate::diagnostic::Diagnostic;
use crate::report;
use crate::results::ExitStatus;
use crate::store::{self, Layout};
use anyhow::Context as _;
use std::io::Write;
use std::path::{Path, PathBuf};

/// `harness diff`.
pub(super) fn diff(
    layout: &Layout,
    paths: &[PathBuf],
    pending_dir: Option<&Path>,
) -> anyhow::Result<ExitStatus> {
    match missing_path(paths, pending_dir) {
        Some(code) => Ok(code),
        None => show_diff(layout, pending_dir, paths),
    }
}

/// `harness accept` (`accept`) or `harness reject`.
pub(super) fn accept_or_reject(
    layout: &Layout,
    paths: &[PathBuf],
    pending_dir: Option<&Path>,
    accept: bool,
) -> anyhow::Result<ExitStatus> {
    match missing_path(paths, pending_dir) {
        Some(code) => Ok(code),
        None => review(layout, pending_dir, paths, accept),
    }
}

/// A path given to `diff`, `accept` or `reject` (or their `--pending-dir`) that is not there
/// is bad usage, reported, as `run` reports it: selecting nothing from it would pass silently.
fn missing_path(paths: &[PathBuf], pending_dir: Option<&Path>) -> Option<ExitStatus> {
    let missing = paths
        .iter()
        .map(PathBuf::as_path)
        .chain(pending_dir)
        .find(|p| {
            // A golden path names its pending file too (`x.snap` for `x.snap.new`).
            let there = |p: &Path| std::fs::symlink_metadata(p).is_ok();
            !there(p) && !there(&PathBuf::from(format!("{}.new", p.display())))
        })?;
    Some(fail(
        &Diagnostic::new(format!(
            "cannot read {}: no such file or folder",
            missing.display()
        ))
        .hint("give scenario or golden files and folders that exist (`harness diff` with no path shows every pending golden)"),
    ))
}

/// Promote (`accept`) or discard pending goldens (from `pending_dir` when given); prints
/// what it did. Accepting a pending golden or golden that is a link or a special file is
/// refused (exit 2): never read, never written through.
fn review(
    layout: &Layout,
    pending_dir: Option<&Path>,
    paths: &[PathBuf],
    accept: bool,
) -> anyhow::Result<ExitStatus> {
    let pending = pending(layout, pending_dir, paths);
    let from = pending_dir.unwrap_or(&layout.snapshots);
    let mut out = anstream::stdout().lock();
    let mut code = ExitStatus::Ok;
    let mut done = 0;
    for (p, golden) in &pending {
        if accept {
            // Rejecting removes a link itself, which is safe; accepting would read through it.
            let text =
                store::read_inside(from, p, "pending golden", crate::limits::MAX_GOLDEN_BYTES)
                    .with_context(|| format!("cannot read {}", p.display()));
            let moved = text.and_then(|text| {
                let text = text.unwrap_or_default();
                store::write_inside(&layout.snapshots, golden, "golden", text.as_bytes())
                    .and_then(|()| std::fs::remove_file(p))
                    .with_context(|| format!("cannot move {} to {}", p.display(), golden.display()))
            });
            if let Err(e) = moved {
                code = fail(&Diagnostic::new(format!("{e:#}")));
                continue;
            }
            writeln!(out, "accepted {}", golden.display())?;
        } else {
            std::fs::remove_file(p).with_context(|| format!("cannot remove {}", p.display()))?;
            writeln!(out, "rejected {}", p.display())?;
        }
        done += 1;
    }
    let verb = if accept { "accepted" } else { "rejected" };
    writeln!(out, "{done} pending golden(s) {verb}")?;
    Ok(code)
}

/// Pending goldens selected by `paths`, from `pending_dir` when given, each with its golden.
fn pending(
    layout: &Layout,
    pending_dir: Option<&Path>,
    paths: &[PathBuf],
) -> Vec<(PathBuf, PathBuf)> {
    let from = Layout {
        scenarios: layout.scenarios.clone(),
        snapshots: pending_dir.map_or_else(|| layout.snapshots.clone(), Path::to_path_buf),
    };
    store::select_pending(&from, paths)
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(&from.snapshots).ok()?;
            let id = rel.to_string_lossy().replace('\\', "/");
            let id = id
                .strip_suffix(&format!(".{}", store::PENDING_EXT))?
                .to_owned();
            Some((p.clone(), layout.golden(&id)))
        })
        .collect()
}

/// `harness diff`: the unified diff of each pending golden against its golden, a new one
/// against nothing (colored on a terminal only). A pending golden or golden that is a link or
/// a special file is refused (exit 2) and never shown; the others still are.
fn show_diff(
    layout: &Layout,
    pending_dir: Option<&Path>,
    paths: &[PathBuf],
) -> anyhow::Result<ExitStatus> {
    let mut out = anstream::stdout().lock();
    let found = pending(layout, pending_dir, paths);
    let from = pending_dir.unwrap_or(&layout.snapshots);
    let mut code = ExitStatus::Ok;
    for (p, golden) in &found {
        let read = |root: &Path, path: &Path, what: &str| {
            store::read_inside(root, path, what, crate::limits::MAX_GOLDEN_BYTES)
        };
        let (new, old) = match (
            read(from, p, "pending golden"),
            read(&layout.snapshots, golden, "golden"),
        ) {
            (Ok(Some(new)), Ok(old)) => (new, old),
            (Ok(None), _) => continue,
            (Err(e), _) | (_, Err(e)) => {
                code = fail(&Diagnostic::new(e.to_string()));
                continue;
            }
        };
        match old {
            Some(old) => {
                writeln!(out, "{} \u{2192} {}", p.display(), golden.display())?;
                report::paint_diff(&mut out, &crate::snapshot::diff(&old, &new))?;
            }
            // A new golden is shown whole, as a diff against nothing.
            None => {
                writeln!(
                    out,
                    "{} \u{2192} {} (new golden, {} lines)",
                    p.display(),
                    golden.display(),
                    new.lines().count()
                )?;
                report::paint_diff(&mut out, &crate::snapshot::diff("", &new))?;
            }
        }
    }
    writeln!(out, "{} pending golden(s)", found.len())?;
    Ok(code)
}
