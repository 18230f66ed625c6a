//! Stop signals: the first SIGINT (Ctrl-C), SIGTERM (what `timeout`, CI cancellation and
//! container stops send) or SIGHUP asks the command to stop — a run starts no new scenario
//! file and finishes the files in flight (their pending goldens and traces written whole,
//! atomically), `exec` and `proxy` end the agent's whole process group and write what they
//! have — and the exit status says which signal it was ([`status`]: 130, 143 or 129, the
//! shell's 128 + the signal's number). No report file (`--json`, `--junit`, `--metrics`, a
//! baseline) is written from a partial run, except `harness suite`'s card, whose `--json`
//! says it was stopped and how far it got (`harness scorecard` refuses it unless asked). A second signal of any of the three ends the
//! process at once, with its own status.

use crate::results::ExitStatus;
use std::io;
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Whether a stop was asked for, and by which signal (its number; 0 before any).
struct Stop {
    requested: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

static STOP: OnceLock<Stop> = OnceLock::new();

fn stop() -> &'static Stop {
    STOP.get_or_init(|| Stop {
        requested: Arc::new(AtomicBool::new(false)),
        signal: Arc::new(AtomicUsize::new(0)),
    })
}

/// Catch SIGINT, SIGTERM and SIGHUP from now on (the commands that run scenarios or agents
/// call this).
pub fn install() -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let stop = stop();
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        // Registered first, so it sees the flag as it was before this signal: the second
        // one exits.
        signal_hook::flag::register_conditional_shutdown(
            signal,
            128 + signal,
            Arc::clone(&stop.requested),
        )?;
        if let Ok(n) = usize::try_from(signal) {
            signal_hook::flag::register_usize(signal, Arc::clone(&stop.signal), n)?;
        }
        signal_hook::flag::register(signal, Arc::clone(&stop.requested))?;
    }
    Ok(())
}

/// Has a stop been asked for?
pub fn requested() -> bool {
    STOP.get()
        .is_some_and(|s| s.requested.load(Ordering::SeqCst))
}

/// The exit status of a command the signal stopped: [`ExitStatus::Interrupted`] (SIGINT, and
/// before any signal), [`ExitStatus::Terminated`] (SIGTERM) or [`ExitStatus::HungUp`]
/// (SIGHUP).
pub fn status() -> ExitStatus {
    use signal_hook::consts::{SIGHUP, SIGTERM};
    let signal = STOP.get().map_or(0, |s| s.signal.load(Ordering::SeqCst));
    match i32::try_from(signal) {
        Ok(SIGTERM) => ExitStatus::Terminated,
        Ok(SIGHUP) => ExitStatus::HungUp,
        _ => ExitStatus::Interrupted,
    }
}

/// What stopped the command, as a person names it: `Ctrl-C`, `SIGTERM` or `SIGHUP`.
pub fn name() -> &'static str {
    match status() {
        ExitStatus::Terminated => "SIGTERM",
        ExitStatus::HungUp => "SIGHUP",
        _ => "Ctrl-C",
    }
}

/// `status` with an interrupted run's status replaced by the signal's that stopped it.
pub fn signalled(status: ExitStatus) -> ExitStatus {
    match status {
        ExitStatus::Interrupted => self::status(),
        other => other,
    }
}
