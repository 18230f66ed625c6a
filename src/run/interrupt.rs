//! Ctrl-C: the first SIGINT asks the run to stop — no new scenario file starts, the files in
//! flight finish (their pending goldens and traces are written whole, atomically), the partial
//! summary is printed and the exit code is [`crate::results::ExitStatus::Interrupted`] (130); no report
//! file (`--json`, `--junit`, `--metrics`, a baseline) is written from a partial run. A second
//! SIGINT ends the process at once with the same code.

use std::io;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

static REQUESTED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

fn flag() -> &'static Arc<AtomicBool> {
    REQUESTED.get_or_init(|| Arc::new(AtomicBool::new(false)))
}

/// Catch SIGINT from now on (the commands that run scenarios call this).
pub fn install() -> io::Result<()> {
    use signal_hook::consts::SIGINT;
    let flag = flag();
    // Registered first, so it sees the flag as it was before this signal: the second one exits.
    signal_hook::flag::register_conditional_shutdown(
        SIGINT,
        i32::from(crate::results::ExitStatus::Interrupted.code()),
        Arc::clone(flag),
    )?;
    signal_hook::flag::register(SIGINT, Arc::clone(flag))?;
    Ok(())
}

/// Has a stop been asked for?
pub fn requested() -> bool {
    REQUESTED.get().is_some_and(|f| f.load(Ordering::SeqCst))
}
