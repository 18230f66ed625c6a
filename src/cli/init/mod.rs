//! `harness init`: a project to test your own agent, in a folder — the project file, a first
//! portable scenario, an example agent on the official openai SDK and a GitHub Actions workflow
//! that runs them on every pull request — never overwriting a file; then the commands to run
//! next.

use super::fail;
use crate::diagnostic::Diagnostic;
use crate::results::ExitStatus;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The files `init` writes: path in the folder, contents (`@VERSION@` is this harness's version).
const FILES: [(&str, &str); 4] = [
    ("harness.toml", include_str!("harness.toml")),
    ("scenarios/first.toml", include_str!("first.toml")),
    ("agent.py", include_str!("agent.py")),
    (WORKFLOW, include_str!("workflow.yml")),
];

/// Where the CI workflow goes.
pub(crate) const WORKFLOW: &str = ".github/workflows/harness.yml";

/// The commands to run next, printed after the files.
pub(crate) const NEXT: &str = "\
next, in this folder (the example agent needs the openai package: python3 -m pip install openai):

  harness exec scenarios -- python3 agent.py    serve each scenario to the agent; the first run
                                                has no golden yet: read its trace, then keep it
  harness accept                                keep the trace as the reviewed golden
  harness exec scenarios -- python3 agent.py    green: the agent does what the golden says

then put your own agent's command after `--`, and try `harness suite -- python3 agent.py` (its
report card on the failure-mode suite). Commit the folder: .github/workflows/harness.yml runs the
same exec on every pull request.";

/// `harness init [DIR]`.
pub(super) fn init(dir: Option<&Path>) -> anyhow::Result<ExitStatus> {
    let dir = dir.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    // The project goes into a folder (made if it is not there): a file named here is no place
    // for it, and reading "file/harness.toml" would only say "Not a directory".
    if std::fs::metadata(&dir).is_ok_and(|m| !m.is_dir()) {
        return Ok(fail(
            &Diagnostic::new("is not a folder: harness init writes a project into a folder")
                .in_file(&dir)
                .hint("name a folder (harness init makes it when it is not there), or run harness init inside one; nothing was written")
                .status(ExitStatus::BadInput),
        ));
    }
    // Every folder on the way to a file is a real folder of the project, or not there yet: a
    // link there (`scenarios` → elsewhere) would have the files written outside it. Checked
    // before anything is written.
    for (name, _) in FILES {
        let mut at = dir.clone();
        let folders: Vec<_> = Path::new(name).components().collect();
        for part in &folders[..folders.len().saturating_sub(1)] {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.is_dir() => {}
                Ok(m) => {
                    let what = if m.file_type().is_symlink() {
                        "a symbolic link"
                    } else {
                        "not a folder"
                    };
                    return Ok(fail(
                        &Diagnostic::new(format!(
                            "is {what}: harness init writes only real files in the project's own folders, and would write {name} through it"
                        ))
                        .in_file(&at)
                        .hint("make it a folder of this project, or run harness init in another folder")
                        .status(ExitStatus::BadInput),
                    ));
                }
                // Not there yet (or under a file, which writing says): nothing to follow.
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                    ) =>
                {
                    break;
                }
                Err(e) => {
                    return Ok(fail(
                        &Diagnostic::new(format!("cannot read: {e}")).in_file(&at),
                    ));
                }
            }
        }
    }
    // A file it would keep must be one the next commands read: not a folder, not a link to
    // nothing, and in the scenarios folder (where harness follows no link) no link at all.
    for (name, _) in FILES {
        let path = dir.join(name);
        let Ok(m) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let link = m.file_type().is_symlink();
        let why = if m.is_dir() {
            Some("a folder")
        } else if link && std::fs::metadata(&path).is_err() {
            Some("a symbolic link to nothing")
        } else if link && name.starts_with("scenarios/") {
            Some("a symbolic link, which harness does not follow in a scenarios folder")
        } else if !link && !m.is_file() {
            Some("not a regular file")
        } else {
            None
        };
        if let Some(why) = why {
            return Ok(fail(
                &Diagnostic::new(format!(
                    "is {why}: harness init would keep it, and the commands it prints next would refuse it"
                ))
                .in_file(&path)
                .hint("remove it or make it a regular file, then run harness init again; nothing was written")
                .status(ExitStatus::BadInput),
            ));
        }
    }
    let mut out = anstream::stdout().lock();
    let mut wrote = 0;
    for (name, contents) in FILES {
        let path = dir.join(name);
        match std::fs::symlink_metadata(&path) {
            Ok(_) => {
                writeln!(
                    out,
                    "kept     {} (it exists; harness init never overwrites)",
                    path.display()
                )?;
                continue;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Ok(fail(
                    &Diagnostic::new(format!("cannot read: {e}")).in_file(&path),
                ));
            }
        }
        let contents = contents.replace("@VERSION@", env!("CARGO_PKG_VERSION"));
        if let Err(e) = crate::store::write_atomic(&path, contents.as_bytes()) {
            return Ok(fail(
                &Diagnostic::new(format!("cannot write: {e}"))
                    .in_file(&path)
                    .hint("run harness init in a folder you can write to"),
            ));
        }
        writeln!(out, "wrote    {}", path.display())?;
        wrote += 1;
    }
    if wrote == 0 {
        writeln!(
            out,
            "nothing to write: the folder already holds harness init's files"
        )?;
    }
    writeln!(out, "\n{NEXT}")?;
    // A project file kept must be one the next commands read: read it as they do (the same
    // guarded reader, the same checks of its keys and paths).
    if let Err(d) = crate::project::discover(&dir) {
        return Ok(fail(&d.status(ExitStatus::BadInput).hint(
            "harness init kept this harness.toml, and every command above would refuse it: mend it (`harness schema project` describes its keys)",
        )));
    }
    Ok(ExitStatus::Ok)
}
