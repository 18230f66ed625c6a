//! Child processes a command starts (an agent under `exec`, an external detector under
//! `sweep`): each in its own process group, so that ending it ends what it started too.

use std::process::{Child, Command};

/// Make `cmd` start its process in a new process group of its own.
pub fn own_group(cmd: &mut Command) {
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(cmd, 0);
    #[cfg(not(unix))]
    let _ = cmd;
}

/// Kill `child` and every process of its group ([`own_group`] made one), and reap it.
pub fn end_group(child: &mut Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the process group the child leads
        // (`process_group(0)` made it); it touches no memory.
        #[expect(
            unsafe_code,
            reason = "kill(2) of the child's process group has no safe wrapper in std"
        )]
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}
