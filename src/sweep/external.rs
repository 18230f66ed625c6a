//! Detectors written in any language: `--detector exec:PATH[:name=v1,v2:other=v3]`.
//!
//! Each setting (one combination of the values given) is one process, `PATH name=value …`,
//! started at its first run and kept for the sweep. For every run, harness writes one line on
//! its stdin, `{"events": [...]}`, the run as the built-in detectors see it in the event shape
//! `harness import` writes: `user_turn` (`text`), `model_response` for a text answer (`text`),
//! and for each tool call a `tool_call_start` (`id`, `name`, `args`) and its `tool_call_end`
//! (`ok`, and `output` or `error`). The process answers with one line, `{"fired": null}` or
//! `{"fired": N, "verdict": "warn" | "strip-tools" | "stop"}` (verdict `stop` when left out),
//! where N is the 0-based index of the tool call it would act on (the number of calls when it
//! fires after the last one). Runs come in the sweep's order, one at a time per process;
//! different settings run side by side. When stdin closes, the process should exit.
//!
//! An answer that is not that line, a line past 64 KiB, no answer within the timeout (10 s a
//! run unless `--detector-timeout-ms` says otherwise), an index past the run, or a process that
//! cannot start, exits or closes its stdout is the setting's error: the sweep names the program
//! and the run, ends the process with its process group (each setting runs in a group of its
//! own, so a wrapper's children go too), leaves that setting out and scores the others. At the
//! end of the sweep every process's input is closed at once, and all of them together get two
//! seconds to exit before their groups are ended. This is the edge of the sweep (processes); the
//! detectors in `detector/` stay pure.

use crate::detector::{Detector, Fire, Item, Params, Setting, Verdict, View};
use crate::limits::{DETECTOR_EXIT_GRACE_MS, MAX_DETECTOR_ANSWER_BYTES};
use crate::run::process::{end_group, own_group};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// The prefix that names an external detector in `--detector`.
pub const PREFIX: &str = "exec:";

/// Parse `exec:PATH[:name=v1,v2…]` into its grid of settings (one process each), each
/// allowed `timeout` to answer a run.
pub fn spec(text: &str, timeout: Duration) -> Result<Vec<Setting>, String> {
    let rest = text.trim().strip_prefix(PREFIX).unwrap_or(text);
    let mut parts = rest.split(':');
    let program = PathBuf::from(parts.next().unwrap_or("").trim());
    if program.as_os_str().is_empty() {
        return Err("`exec:` names no program; write `exec:PATH[:name=v1,v2]`".to_owned());
    }
    if !program.is_file() {
        return Err(format!(
            "`{}` is not a file; `exec:PATH` runs that program once per setting",
            program.display()
        ));
    }
    let mut axes: Vec<(&'static str, Vec<String>)> = Vec::new();
    for part in parts {
        let Some((name, list)) = part.split_once('=') else {
            return Err(format!("`{part}`: expected `name=v1,v2,…`"));
        };
        let name = name.trim();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "`{name}`: a parameter name is letters, digits and `_`"
            ));
        }
        let values: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
            .collect();
        if values.is_empty() {
            return Err(format!("`{part}`: no values"));
        }
        // Names live as long as the sweep: a handful per command line.
        axes.push((Box::leak(name.to_owned().into_boxed_str()), values));
    }
    let id: &'static str = Box::leak(format!("{PREFIX}{}", program.display()).into_boxed_str());
    Ok(
        crate::detector::grid(axes.iter().map(|(name, values)| (*name, values.as_slice())))
            .into_iter()
            .map(|values| {
                let detector = External::new(&program, &values, timeout);
                Setting {
                    id,
                    params: Params {
                        shown: vec![true; values.len()],
                        values,
                    },
                    detector: Box::new(detector),
                }
            })
            .collect(),
    )
}

/// One setting's process.
struct External {
    program: PathBuf,
    args: Vec<String>,
    timeout: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    running: Option<Running>,
    /// Once it failed, every later run gets the same error without asking again.
    failed: Option<String>,
    /// When its input was closed at the end of the sweep.
    closed: Option<Instant>,
}

struct Running {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Its answer lines, read by a thread of their own (so that a silent process can be given
    /// up on): each a line, or why reading stopped.
    answers: Receiver<Result<String, String>>,
}

impl External {
    fn new(program: &Path, values: &[(&'static str, String)], timeout: Duration) -> Self {
        Self {
            program: program.to_owned(),
            args: values.iter().map(|(n, v)| format!("{n}={v}")).collect(),
            timeout,
            state: Mutex::new(State::default()),
        }
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "an external detector's output is read on its own thread (an edge: sweep)"
    )]
    fn start(&self) -> Result<Running, String> {
        let mut command = Command::new(&self.program);
        command
            .args(&self.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        own_group(&mut command);
        let mut child = command
            .spawn()
            .map_err(|e| format!("cannot start `{}`: {e}", self.program.display()))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            end_group(&mut child);
            return Err("its stdin and stdout could not be connected".to_owned());
        };
        let (send, answers) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = BufReader::new(stdout);
            // Until the end of its output, a bad line (reading stops there), or nobody
            // waiting for answers.
            while let Some(read) = read_answer(&mut stdout, MAX_DETECTOR_ANSWER_BYTES).transpose() {
                let last = read.is_err();
                if send.send(read).is_err() || last {
                    break;
                }
            }
        });
        Ok(Running {
            child,
            stdin: Some(stdin),
            answers,
        })
    }

    fn ask(&self, running: &mut Running, line: &str, calls: usize) -> Result<Option<Fire>, String> {
        let stdin = running
            .stdin
            .as_mut()
            .ok_or_else(|| "its stdin is closed".to_owned())?;
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.write_all(b"\n"))
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("it stopped reading its input ({e})"))?;
        match running.answers.recv_timeout(self.timeout) {
            Ok(Ok(answer)) => parse_answer(answer.trim(), calls),
            Ok(Err(e)) => Err(e),
            Err(RecvTimeoutError::Timeout) => Err(format!(
                "it did not answer within {} ms (--detector-timeout-ms)",
                self.timeout.as_millis()
            )),
            Err(RecvTimeoutError::Disconnected) => {
                let status = running.child.try_wait().ok().flatten().map_or_else(
                    || "closed its stdout".to_owned(),
                    |s| format!("ended ({s})"),
                );
                Err(format!("it {status} without answering"))
            }
        }
    }
}

/// Read one line of at most `limit` bytes from `reader`, without its line end: `Ok(None)` at
/// the end of input; `Err` for a longer line (read no further) or one that is not UTF-8.
pub fn read_answer(reader: &mut impl BufRead, limit: usize) -> Result<Option<String>, String> {
    let mut line = Vec::new();
    loop {
        let buffer = reader
            .fill_buf()
            .map_err(|e| format!("cannot read its answer: {e}"))?;
        if buffer.is_empty() {
            if line.is_empty() {
                return Ok(None);
            }
            break;
        }
        let (take, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(at) => (at + 1, true),
            None => (buffer.len(), false),
        };
        if line.len() + take > limit + 1 {
            return Err(format!(
                "its answer is longer than {} KiB; answer one short line",
                limit / 1024
            ));
        }
        line.extend_from_slice(&buffer[..take]);
        reader.consume(take);
        if done {
            break;
        }
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    }
    // The bound above counts a line end; a last line without one must hold to it too.
    if line.len() > limit {
        return Err(format!(
            "its answer is longer than {} KiB; answer one short line",
            limit / 1024
        ));
    }
    String::from_utf8(line)
        .map(Some)
        .map_err(|_| "its answer is not UTF-8".to_owned())
}

/// Read one answer line: where it fired (a call index up to `calls`), if anywhere.
pub fn parse_answer(answer: &str, calls: usize) -> Result<Option<Fire>, String> {
    let shown: String = answer.chars().take(120).collect();
    let bad = |why: &str| {
        format!(
            "its answer `{shown}` {why}; answer one line, {{\"fired\": null}} or {{\"fired\": N, \"verdict\": \"warn|strip-tools|stop\"}}"
        )
    };
    let value: Value = serde_json::from_str(answer).map_err(|_| bad("is not JSON"))?;
    let Some(object) = value.as_object() else {
        return Err(bad("is not an object"));
    };
    let at = match object.get("fired") {
        None => return Err(bad("has no `fired`")),
        Some(Value::Null) => return Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| bad("has a `fired` that is not a call index"))?,
    };
    if at > calls {
        return Err(bad(&format!(
            "names call {at} of a run with {calls} call(s)"
        )));
    }
    let verdict = match object.get("verdict").and_then(Value::as_str) {
        None | Some("stop") => Verdict::Stop,
        Some("warn") => Verdict::Warn,
        Some("strip-tools") => Verdict::StripTools,
        Some(_) => return Err(bad("has an unknown `verdict`")),
    };
    Ok(Some(Fire::new(at, verdict)))
}

/// The run as one line of events, in `harness import`'s event shape.
fn run_line(view: &View) -> String {
    let mut events = Vec::with_capacity(view.items.len() * 2);
    for item in &view.items {
        match item {
            Item::User(text) => events.push(json!({"kind": "user_turn", "text": text})),
            Item::Agent(text) => {
                events.push(json!({"kind": "model_response", "finish": "stop", "text": text}));
            }
            Item::Call(i) => {
                let c = &view.calls[*i];
                let id = format!("call_{i}");
                events.push(
                    json!({"kind": "tool_call_start", "id": id, "name": c.name, "args": c.args}),
                );
                let end = if c.failed {
                    json!({"kind": "tool_call_end", "id": id, "name": c.name, "ok": false, "error": c.result})
                } else {
                    json!({"kind": "tool_call_end", "id": id, "name": c.name, "ok": true, "output": c.result})
                };
                events.push(end);
            }
        }
    }
    json!({ "events": events }).to_string()
}

impl Detector for External {
    fn first_fire(&self, view: &View) -> Option<Fire> {
        self.check(view).ok().flatten()
    }

    fn check(&self, view: &View) -> Result<Option<Fire>, String> {
        let mut state = self
            .state
            .lock()
            .map_err(|_| "an earlier run of this setting panicked".to_owned())?;
        if let Some(e) = &state.failed {
            return Err(e.clone());
        }
        if state.running.is_none() {
            match self.start() {
                Ok(r) => state.running = Some(r),
                Err(e) => {
                    state.failed = Some(e.clone());
                    return Err(e);
                }
            }
        }
        let line = run_line(view);
        let answered = match state.running.as_mut() {
            Some(running) => self.ask(running, &line, view.calls.len()),
            None => Err("it is not running".to_owned()),
        };
        if let Err(e) = &answered {
            state.failed = Some(e.clone());
            if let Some(mut r) = state.running.take() {
                end_group(&mut r.child);
            }
        }
        answered
    }

    fn in_order(&self) -> bool {
        true
    }

    #[expect(
        clippy::disallowed_methods,
        reason = "an external detector gets its timeout on the wall clock (an edge: sweep)"
    )]
    fn close_input(&self) {
        if let Ok(mut state) = self.state.lock() {
            if let Some(r) = state.running.as_mut() {
                drop(r.stdin.take());
            }
            state.closed.get_or_insert_with(Instant::now);
        }
    }
}

impl Drop for External {
    #[expect(
        clippy::disallowed_methods,
        reason = "an external detector is given a moment to end before it is killed (an edge: sweep)"
    )]
    fn drop(&mut self) {
        let Ok(state) = self.state.get_mut() else {
            return;
        };
        if let Some(mut r) = state.running.take() {
            // End of input asks it to exit; one that does not is ended with its group. The
            // grace counts from when the sweep closed every input at once.
            drop(r.stdin.take());
            let grace = Duration::from_millis(DETECTOR_EXIT_GRACE_MS);
            let deadline = state.closed.unwrap_or_else(Instant::now) + grace;
            while Instant::now() < deadline {
                if let Ok(Some(_)) = r.child.try_wait() {
                    // Its group may still hold what it started.
                    end_group(&mut r.child);
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            end_group(&mut r.child);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_answer;
    use crate::detector::{Fire, Verdict};

    #[test]
    fn answers_are_read_strictly() {
        assert_eq!(parse_answer(r#"{"fired": null}"#, 3), Ok(None));
        assert_eq!(
            parse_answer(r#"{"fired": 2}"#, 3),
            Ok(Some(Fire::new(2, Verdict::Stop)))
        );
        assert_eq!(
            parse_answer(r#"{"fired": 3, "verdict": "warn"}"#, 3),
            Ok(Some(Fire::new(3, Verdict::Warn)))
        );
        for bad in [
            "",
            "yes",
            "[]",
            "{}",
            r#"{"fired": -1}"#,
            r#"{"fired": 4}"#,
            r#"{"fired": 1, "verdict": "halt"}"#,
        ] {
            let e = parse_answer(bad, 3).unwrap_err();
            assert!(e.contains("answer one line"), "{bad}: {e}");
        }
    }
}
