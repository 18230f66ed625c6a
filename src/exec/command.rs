//! The process an agent runs in: the command started in its own process group with the
//! served endpoint's base URLs and the scenario handed over in its environment, waited for, and
//! ended whole (its group killed) on a timeout or a stop signal (Ctrl-C, SIGTERM, SIGHUP).

use crate::provider::Provider;
use crate::scenario::Case;
use crate::serve::DUMMY_KEY;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How the command ended.
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself.
    Exited(ExitStatus),
    /// It ran past its timeout and was killed.
    Killed,
    /// A stop signal (Ctrl-C, SIGTERM, SIGHUP): the command and its process group were ended.
    Interrupted,
}

/// Run `command` against the server at `addr`, handed `case`'s prompt and tools and `path` as
/// its scenario; kill it after `timeout`. Its output goes to stderr, or into the file `log`
/// (stdout and stderr both). What the case holds that the environment cannot carry (a NUL
/// byte) is an error of kind [`io::ErrorKind::InvalidInput`].
pub fn run_command(
    command: &[String],
    timeout: Duration,
    addr: SocketAddr,
    case: &Case,
    path: &Path,
    log: Option<&Path>,
    env: &[(String, String)],
) -> io::Result<Ended> {
    let Some((program, rest)) = command.split_first() else {
        return Err(io::Error::other("no command given after `--`"));
    };
    let base = format!("http://{addr}");
    let s = &case.scenario;
    let tools: Vec<serde_json::Value> = s
        .tools
        .iter()
        .map(|t| serde_json::json!({"name": t.name, "description": t.description, "schema": t.schema}))
        .collect();
    let tools = serde_json::Value::Array(tools).to_string();
    for (var, what, value) in [
        ("HARNESS_SCENARIO", "path", path.to_string_lossy().as_ref()),
        ("HARNESS_SYSTEM", "system prompt", s.system.as_str()),
        ("HARNESS_USER", "user message", s.user.as_str()),
        ("HARNESS_TOOLS", "tools", tools.as_str()),
    ] {
        if value.contains('\0') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the scenario's {what} holds a NUL byte, which the environment variable {var} cannot carry to the command"
                ),
            ));
        }
    }
    let mut cmd = agent_command(program, rest, &base);
    cmd.env("HARNESS_SCENARIO", path)
        .env("HARNESS_SYSTEM", &s.system)
        .env("HARNESS_USER", &s.user)
        .env("HARNESS_TOOLS", tools)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null());
    match log {
        Some(log) => {
            let file = crate::store::log_file(log).map_err(|e| {
                io::Error::other(format!(
                    "cannot write the agent's log {}: {e}",
                    log.display()
                ))
            })?;
            cmd.stdout(Stdio::from(file.try_clone()?))
                .stderr(Stdio::from(file));
        }
        // The command's output goes to stderr: stdout is the report's.
        None => {
            cmd.stdout(Stdio::from(io::stderr()));
        }
    }
    wait_for(cmd, program, timeout)
}

/// The agent command, pointed at `base` the way the SDKs read it (`OPENAI_BASE_URL` with
/// `/v1`, `OPENAI_API_BASE`, `ANTHROPIC_BASE_URL`, `HARNESS_BASE_URL`), with [`DUMMY_KEY`] for
/// a provider key the environment does not set (the SDKs refuse to start without one).
pub fn agent_command(program: &str, args: &[String], base: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args).env("HARNESS_BASE_URL", base);
    for &p in Provider::ALL {
        for (var, form) in p.base_url_vars() {
            cmd.env(var, form.url(base));
        }
        let unset = |k: &&str| std::env::var_os(k).is_none_or(|v| v.is_empty());
        for group in p.key_groups() {
            if group.iter().all(unset) {
                cmd.env(group[0], DUMMY_KEY);
            }
        }
    }
    cmd
}

/// Start `cmd` in its own process group and wait for it; kill the group after `timeout` or
/// on a stop signal.
pub fn wait_for(cmd: Command, program: &str, timeout: Duration) -> io::Result<Ended> {
    wait_for_then(cmd, program, timeout, &|| {})
}

/// [`wait_for`], calling `before_end` just before the group is killed (a timeout or a stop
/// signal), so that what serves the command knows the cut is harness's.
#[expect(
    clippy::disallowed_methods,
    reason = "exec runs the agent process and measures its timeout on the wall clock (an edge: exec)"
)]
pub fn wait_for_then(
    mut cmd: Command,
    program: &str,
    timeout: Duration,
    before_end: &dyn Fn(),
) -> io::Result<Ended> {
    // Its own process group, so a timeout or a stop signal ends what it started too.
    crate::run::process::own_group(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| {
        // Not InvalidInput: that kind means the scenario could not be handed over.
        io::Error::other(format!("cannot run `{program}`: {e}"))
    })?;
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Ended::Exited(status));
        }
        let interrupted = crate::run::interrupt::requested();
        if interrupted || Instant::now() >= deadline {
            before_end();
            crate::run::process::end_group(&mut child);
            return Ok(if interrupted {
                Ended::Interrupted
            } else {
                Ended::Killed
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The agent is pointed at harness by every variable each provider of the registry's SDKs
    /// read, in the form they read it.
    #[test]
    fn every_provider_s_variables_point_at_harness() {
        let cmd = agent_command("agent", &[], "http://127.0.0.1:9");
        let env: Vec<(String, Option<String>)> = cmd
            .get_envs()
            .map(|(k, v)| {
                (
                    k.to_string_lossy().into_owned(),
                    v.map(|v| v.to_string_lossy().into_owned()),
                )
            })
            .collect();
        let get = |k: &str| {
            env.iter()
                .find(|(n, _)| n == k)
                .and_then(|(_, v)| v.clone())
        };
        for &p in Provider::ALL {
            for (var, form) in p.base_url_vars() {
                assert_eq!(get(var), Some(form.url("http://127.0.0.1:9")), "{var}");
            }
        }
        assert_eq!(
            get("OPENAI_BASE_URL").as_deref(),
            Some("http://127.0.0.1:9/v1")
        );
        assert_eq!(
            get("ANTHROPIC_BASE_URL").as_deref(),
            Some("http://127.0.0.1:9")
        );
    }
}
