//! `harness serve` and `harness exec`: load the scenario, start the server, run the agent
//! command (exec) or wait for Ctrl-C (serve), infer each conversation's trace and judge it as
//! `harness run` judges a case (goldens, expectations, metrics, the gate's outputs).
//!
//! An exec case is `<scenario id>@<label>` (`--label`, default `exec`; a further conversation of
//! the same command is `<scenario id>@<label>.2`, …), its profile the label: its golden is
//! `snapshots/<scenario id>@<label>.snap`, beside the scenario's own, and `harness run` leaves
//! it alone while the scenario exists. `--expect PROFILE` judges it with the expectations the
//! scenario states for that profile (its own, or a `[compare.PROFILE]`), whose
//! `max_iterations` is also the cap.

use super::failure::FailureRules;
use super::http::{Server, Signals};
use super::infer::{self, Context};
use super::{Conversation, Session};
use crate::gate::{self, Outputs};
use crate::provider::Provider;
use crate::record::cassette::{Delay, ReplayOptions};
use crate::results::{CaseResult, EXIT_BAD_INPUT, EXIT_OK, FileResult};
use crate::run::{self, Options};
use crate::scenario::{self, Case, Diagnostic, Expect};
use crate::select::Selection;
use crate::snapshot::Comparison;
use crate::store::{self, Layout};
use crate::trace::{self, TimedEvent};
use anyhow::Context as _;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// The key `harness exec` hands the command when none is set (the server checks none).
pub const DUMMY_KEY: &str = "harness-dummy-key";

/// `harness serve` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// The scenario whose scripted model answers, or agent cassettes (files or folders) whose
    /// recorded answers do.
    #[arg(required = true, value_name = "SCENARIO|CASSETTE")]
    pub scenario: Vec<PathBuf>,
    /// With cassettes: what follows a divergence (as for `exec`).
    #[arg(long, default_value = "fail", value_name = "POLICY")]
    pub on_divergence: super::replay::OnDivergence,
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "HOST:PORT")]
    pub addr: SocketAddr,
    /// Listen on a non-loopback address (the endpoint has no authentication).
    #[arg(long)]
    pub allow_remote: bool,
    /// Name of the runs in the printed traces (`<scenario id>@<label>`).
    #[arg(long, default_value = "serve", value_name = "NAME")]
    pub label: String,
    /// Write each conversation's trace as JSON lines into this folder instead of printing it.
    #[arg(long, value_name = "DIR")]
    pub traces: Option<PathBuf>,
    /// Also stop when standard input ends (Ctrl-D; for scripts that pipe into it).
    #[arg(long)]
    pub until_eof: bool,
    /// How long a client may take to send a request's headers, and then its body.
    #[arg(long, value_name = "MS", default_value_t = crate::limits::READ_TIMEOUT_MS, value_parser = clap::value_parser!(u64).range(1..))]
    pub read_timeout_ms: u64,
    /// How requests are read and answers paced.
    #[command(flatten)]
    pub reading: ReadArgs,
}

/// `harness exec` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ExecArgs {
    /// Scenario files or folders; the command runs once per scenario.
    #[arg(required = true)]
    pub scenarios: Vec<PathBuf>,
    /// The agent command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Kill the command after this long; the case then fails.
    #[arg(long, default_value_t = 60_000, value_name = "MS")]
    pub timeout_ms: u64,
    /// Name of the runs: case id `<scenario id>@<label>`, and their profile in the summary.
    #[arg(long, default_value = "exec", value_name = "NAME")]
    pub label: String,
    /// Judge with the expectations the scenario states for this profile (its own, or a
    /// `[compare.NAME]`); default: golden only.
    #[arg(long, value_name = "PROFILE")]
    pub expect: Option<String>,
    /// Write each run's trace as JSON lines into this folder.
    #[arg(long, value_name = "DIR")]
    pub traces: Option<PathBuf>,
    /// How requests are read and answers paced.
    #[command(flatten)]
    pub reading: ReadArgs,
    /// With cassettes: what follows the first request that differs from the recording:
    /// `fail` (refuse it; the case fails), `stop` (refuse it; the golden judges), `continue`
    /// (keep serving the recorded answers in order: the stubborn model) or
    /// `script:SCENARIO` (the scenario's scripted model answers from there on).
    #[arg(long, default_value = "fail", value_name = "POLICY")]
    pub on_divergence: super::replay::OnDivergence,
}

/// How `serve` and `exec` read the agent's requests and pace their answers.
#[derive(Debug, Clone, clap::Args)]
pub struct ReadArgs {
    /// Also read a tool result as failed when it matches this regular expression (repeatable;
    /// checked after the scenario's `[serve] failure` patterns).
    #[arg(long = "failure", value_name = "REGEX")]
    pub failure: Vec<String>,
    /// Read failures only by the provider's flag and the patterns, not the built-in shapes.
    #[arg(long)]
    pub no_builtin_failures: bool,
    /// Pace streamed answers on the wall clock: F wall seconds per scripted second of latency
    /// (0: every event at once). The traces' virtual time is the same either way.
    #[arg(long, value_name = "F", default_value_t = 0.0, value_parser = pace)]
    pub pace: f64,
}

/// A pace: a finite number from 0 to 100.
fn pace(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(f) if f.is_finite() && (0.0..=100.0).contains(&f) => Ok(f),
        _ => Err(format!(
            "`{s}` is not a pace from 0 to 100 (wall seconds per scripted second)"
        )),
    }
}

/// The failure rules of a case: the scenario's patterns, then the command line's.
fn failure_rules(case: &Case, reading: &ReadArgs) -> Result<FailureRules, String> {
    let s = &case.scenario.serve;
    let patterns: Vec<String> = s.failure.iter().chain(&reading.failure).cloned().collect();
    FailureRules::new(
        &patterns,
        s.builtin_failures && !reading.no_builtin_failures,
    )
}

/// The case id of the `index`-th (0-based) conversation.
pub fn conversation_id(scenario_id: &str, label: &str, index: usize) -> String {
    match index {
        0 => format!("{scenario_id}@{label}"),
        n => format!("{scenario_id}@{label}.{}", n + 1),
    }
}

/// Is `label` usable (lower-case letters, digits, `-`, `_`; not a profile name)?
fn check_label(label: &str) -> Result<(), String> {
    let ok = !label.is_empty()
        && label
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_');
    if !ok {
        return Err(format!(
            "bad label `{label}`\n  hint: use lower-case letters, digits, `-` and `_`"
        ));
    }
    if crate::policy::Config::profile(label).is_some() {
        return Err(format!(
            "the label `{label}` is a profile name\n  hint: pick another, e.g. `exec` or the agent's name"
        ));
    }
    Ok(())
}

/// Load a scenario's cases; a located error is the failure.
fn load(layout: &Layout, path: &Path) -> Result<Vec<Case>, Vec<Diagnostic>> {
    let bad = |message: String, hint: &str| {
        vec![Diagnostic {
            line: 1,
            col: 1,
            message,
            hint: Some(hint.to_owned()),
        }]
    };
    if crate::record::is_cassette(path) {
        return Err(bad(
            "a cassette cannot be served: it has no scripted model".to_owned(),
            "serve the scenario the cassette was recorded from",
        ));
    }
    let text = store::read_input_text(path, "scenario", crate::limits::MAX_SCENARIO_BYTES)
        .map_err(|e| bad(format!("cannot read: {e}"), "check the path"))?;
    scenario::load(&text, run::format_of(path), &layout.id_of(path))
}

fn print_diagnostics(path: &Path, diags: &[Diagnostic]) {
    let mut err = anstream::stderr();
    for d in diags {
        let _ = writeln!(
            err,
            "error: {}:{}:{}: {}",
            path.display(),
            d.line,
            d.col,
            d.message
        );
        if let Some(h) = &d.hint {
            let _ = writeln!(err, "  hint: {h}");
        }
    }
}

fn bad_usage(message: &str) -> u8 {
    let _ = writeln!(anstream::stderr(), "error: {message}");
    EXIT_BAD_INPUT
}

/// The inferred traces of a session's conversations, in an order that depends on what they
/// hold, never on when they came: by first user message, then by the trace itself (parallel
/// agents get the same case ids on every run).
fn traces(session: &Session, label: &str) -> Vec<Vec<TimedEvent>> {
    let tool_latency = session
        .case()
        .scenario
        .tools
        .iter()
        .map(|t| (t.name.clone(), t.latency_ms))
        .collect();
    let ctx = Context {
        profile: label,
        cap: session.cap(),
        tool_latency,
    };
    let mut all: Vec<(String, String, Vec<TimedEvent>)> = session
        .conversations()
        .iter()
        .map(|c: &Conversation| {
            let events = infer::infer(&ctx, &c.exchanges);
            (c.key.clone(), trace::render_golden("", &events), events)
        })
        .collect();
    all.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    all.into_iter().map(|(_, _, e)| e).collect()
}

/// `harness serve`.
pub fn serve(args: &ServeArgs, layout: &Layout) -> anyhow::Result<u8> {
    if let Err(e) = check_label(&args.label) {
        return Ok(bad_usage(&e));
    }
    if !args.addr.ip().is_loopback() && !args.allow_remote {
        return Ok(bad_usage(&format!(
            "refusing to listen on {}, which is not a loopback address\n  hint: the endpoint has no authentication; pass --allow-remote to listen there anyway",
            args.addr
        )));
    }
    let (files, unreadable) = store::discover(&args.scenario);
    if let Some((path, e)) = unreadable.first() {
        return Ok(bad_usage(&format!(
            "{}: {}\n  hint: {}",
            path.display(),
            store::describe(e),
            store::hint_for(e, "harness serve")
        )));
    }
    let taped = files.iter().any(|f| crate::record::is_cassette(f));
    let loaded = if taped {
        match load_tapes(layout, &files, &args.on_divergence) {
            Ok(l) => Some(l),
            Err(errors) => {
                for f in errors {
                    if let Err(diags) = &f.outcome {
                        print_diagnostics(&f.path, diags);
                    }
                }
                return Ok(EXIT_BAD_INPUT);
            }
        }
    } else {
        None
    };
    let case = match (&loaded, files.as_slice()) {
        (Some(l), _) => l.cases[0].clone(),
        (None, [one]) => match load(layout, one) {
            Ok(mut cases) => cases.remove(0),
            Err(diags) => {
                print_diagnostics(one, &diags);
                return Ok(EXIT_BAD_INPUT);
            }
        },
        (None, _) => {
            return Ok(bad_usage(
                "serve answers from one scenario, or from agent cassettes\n  hint: name one scenario file, or cassette files and folders",
            ));
        }
    };
    if let Some(dir) = &args.traces {
        // Checked now: the traces are written at the end, when nothing can be done about it.
        if let Err(e) = store::writable_folder(dir) {
            return Ok(bad_usage(&format!(
                "cannot write traces into {}: {e}\n  hint: name a folder harness may create and write",
                dir.display()
            )));
        }
    }
    let scenario_id = case.id.clone();
    let rules = match failure_rules(&case, &args.reading) {
        Ok(r) => r,
        Err(e) => return Ok(bad_usage(&e)),
    };
    let timeouts = super::http::Timeouts {
        read: Duration::from_millis(args.read_timeout_ms),
        pace: args.reading.pace,
        ..Default::default()
    };
    let session = match loaded {
        Some(l) => Session::taped(case, rules, l.tapes),
        None => Session::with_rules(case, rules),
    };
    let server = Server::start_with(
        session,
        args.addr,
        Signals::Stop,
        timeouts,
        crate::limits::MAX_SESSION_REQUEST_BYTES,
    )
    .with_context(|| format!("cannot listen on {}", args.addr))?;
    let addr = server.addr();
    {
        let mut out = io::stdout().lock();
        writeln!(out, "listening on http://{addr}")?;
        out.flush()?;
    }
    let _ = writeln!(
        anstream::stderr(),
        "harness serve: OPENAI_BASE_URL=http://{addr}/v1 ANTHROPIC_BASE_URL=http://{addr}; Ctrl-C ends and prints the inferred traces"
    );
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    if args.until_eof {
        std::thread::spawn(move || {
            let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
            let _ = tx.send(());
        });
    }
    while !server.finished() {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(()) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) if args.until_eof => break,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    let session = server.stop()?;
    let all: Vec<(String, Vec<TimedEvent>)> = match session.tapes() {
        Some(_) => taped_traces(&session, &args.label)
            .into_iter()
            .map(|t| {
                if let Some(report) = &t.report {
                    let _ = writeln!(anstream::stderr(), "harness serve: {}: {report}", t.id);
                }
                (t.id, t.events)
            })
            .collect(),
        None => traces(&session, &args.label)
            .into_iter()
            .enumerate()
            .map(|(i, e)| (conversation_id(&scenario_id, &args.label, i), e))
            .collect(),
    };
    let mut out = io::stdout().lock();
    let mut code = EXIT_OK;
    for (id, events) in &all {
        let id = id.clone();
        if let Err(e) = trace::check_limits(events) {
            let _ = writeln!(
                anstream::stderr(),
                "error: {id}: {e}\n  hint: the agent sent more than a run may hold; see README \"Limits\""
            );
            code = EXIT_BAD_INPUT;
            continue;
        }
        match &args.traces {
            Some(dir) => {
                let path = dir.join(format!("{id}.jsonl"));
                store::write_atomic(&path, trace::render_jsonl(events).as_bytes())
                    .with_context(|| format!("cannot write {}", path.display()))?;
                writeln!(out, "wrote {}", path.display())?;
            }
            None => out.write_all(trace::render_golden(&id, events).as_bytes())?,
        }
    }
    writeln!(
        out,
        "harness serve: {} conversation(s), {} request(s)",
        all.len(),
        session
            .conversations()
            .iter()
            .map(|c| c.exchanges.len())
            .sum::<usize>()
    )?;
    Ok(code)
}

/// `harness exec`.
pub fn exec(args: &ExecArgs, layout: &Layout, outputs: &Outputs) -> anyhow::Result<u8> {
    if let Err(e) = check_label(&args.label) {
        return Ok(bad_usage(&e));
    }
    if let Some(p) = args
        .expect
        .as_ref()
        .filter(|p| crate::policy::Config::profile(p).is_none())
    {
        return Ok(bad_usage(&format!(
            "unknown profile `{p}`\n  hint: known profiles: {}",
            crate::policy::PROFILES.join(", ")
        )));
    }
    let (files, unreadable) = store::discover(&args.scenarios);
    let taped = files.iter().any(|f| crate::record::is_cassette(f));
    if taped && files.iter().any(|f| !crate::record::is_cassette(f)) {
        return Ok(bad_usage(
            "exec was given scenarios and cassettes together\n  hint: run the scenarios and the cassettes in two commands: one session replays cassettes only",
        ));
    }
    if taped && args.expect.is_some() {
        return Ok(bad_usage(
            "--expect judges a scenario's expectations, and cassettes state none\n  hint: a replayed conversation is judged by its golden and by whether it follows its recording (--on-divergence)",
        ));
    }
    let options = Options {
        paths: Vec::new(),
        layout: layout.clone(),
        jobs: 1,
        write_pending: !outputs.ci || outputs.pending_dir.is_some(),
        traces: args.traces.clone(),
        also_profiles: Vec::new(),
        selection: Selection::default(),
        repeat: 1,
        pending_dir: outputs.pending_dir.clone(),
        keep_traces: outputs.keeps_traces(),
    };
    gate::report(outputs, layout, |r| {
        for (path, e) in unreadable {
            r.unreadable(&FileResult {
                path,
                outcome: Err(vec![Diagnostic {
                    line: 1,
                    col: 1,
                    message: store::describe(&e),
                    hint: Some(store::hint_for(&e, "harness exec")),
                }]),
            })?;
        }
        if taped {
            for result in exec_tapes(args, &options, &files)? {
                r.file(&result)?;
            }
            if crate::run::interrupt::requested() {
                r.interrupted(0)?;
            }
            return r.finish();
        }
        let total = files.len();
        for (done, path) in files.into_iter().enumerate() {
            if crate::run::interrupt::requested() {
                r.interrupted(total - done)?;
                break;
            }
            let result = exec_file(args, &options, &path)?;
            r.file(&result)?;
        }
        if crate::run::interrupt::requested() {
            r.interrupted(0)?;
        }
        r.finish()
    })
}

/// How the command ended.
enum Ended {
    Exited(ExitStatus),
    Killed,
    /// Ctrl-C: the command (and its process group) was ended.
    Interrupted,
}

/// Serve one scenario to one run of the command and judge what it sent.
fn exec_file(args: &ExecArgs, options: &Options, path: &Path) -> io::Result<FileResult> {
    let cases = match load(&options.layout, path) {
        Ok(c) => c,
        Err(diags) => {
            return Ok(FileResult {
                path: path.to_owned(),
                outcome: Err(diags),
            });
        }
    };
    let chosen = match &args.expect {
        None => Case {
            expect: Expect::default(),
            ..cases[0].clone()
        },
        Some(p) => match cases.iter().find(|c| &c.profile == p) {
            Some(c) => c.clone(),
            None => {
                return Ok(FileResult {
                    path: path.to_owned(),
                    outcome: Err(vec![Diagnostic {
                        line: 1,
                        col: 1,
                        message: format!("the scenario states no expectations for profile `{p}`"),
                        hint: Some(format!(
                            "use its own profile `{}` or add a `[compare.{p}]` table",
                            cases[0].profile
                        )),
                    }]),
                });
            }
        },
    };
    let scenario_id = cases[0].id.clone();
    let rules = match failure_rules(&chosen, &args.reading) {
        Ok(r) => r,
        Err(e) => {
            return Ok(FileResult {
                path: path.to_owned(),
                outcome: Err(vec![Diagnostic {
                    line: 1,
                    col: 1,
                    message: e,
                    hint: Some("fix the --failure pattern (Rust `regex` syntax)".to_owned()),
                }]),
            });
        }
    };
    let (session, mut failures) = match serve_to_command(
        args,
        Session::with_rules(chosen.clone(), rules),
        &chosen,
        path,
        &path.display().to_string(),
    )? {
        Ok(done) => done,
        Err(d) => {
            return Ok(FileResult {
                path: path.to_owned(),
                outcome: Err(vec![d]),
            });
        }
    };
    let all = traces(&session, &args.label);
    for (i, events) in all.iter().enumerate() {
        if let Err(e) = trace::check_limits(events) {
            return Ok(FileResult {
                path: path.to_owned(),
                outcome: Err(vec![Diagnostic {
                    line: 1,
                    col: 1,
                    message: format!(
                        "the trace inferred for `{}`: {e}",
                        conversation_id(&scenario_id, &args.label, i)
                    ),
                    hint: Some(
                        "the agent sent more than a run may hold (README \"Limits\"); its conversation is not judged"
                            .to_owned(),
                    ),
                }]),
            });
        }
    }
    let case_of = |i: usize| Case {
        id: conversation_id(&scenario_id, &args.label, i),
        profile: args.label.clone(),
        // Every conversation is one run of the agent: each must show what the profile asks.
        expect: chosen.expect.clone(),
        gated: true,
        ..chosen.clone()
    };
    let mut results: Vec<CaseResult> = Vec::new();
    if all.is_empty() {
        let quiet = Options {
            write_pending: false,
            traces: None,
            ..options.clone()
        };
        let mut r = run::judge(&quiet, &case_of(0), &[]);
        r.golden = Comparison::Ungated;
        failures.push(
            "a model request; the command made none: it must take its base URL from OPENAI_BASE_URL or ANTHROPIC_BASE_URL, which harness exec sets (the server answers POST /v1/chat/completions, /v1/responses and /v1/messages)".to_owned(),
        );
        r.expectation_failures.append(&mut failures);
        results.push(r);
    }
    for (i, events) in all.iter().enumerate() {
        let mut r = run::judge(options, &case_of(i), events);
        r.expectation_failures.extend(failures.iter().cloned());
        results.push(r);
    }
    for r in &mut results {
        r.row.expectations_passed = r.expectation_failures.is_empty();
        r.passes = u32::from(r.passed());
    }
    Ok(FileResult {
        path: path.to_owned(),
        outcome: Ok(results),
    })
}

/// Run the command against the server at `addr`; kill it after the timeout.
fn run_command(args: &ExecArgs, addr: SocketAddr, case: &Case, path: &Path) -> io::Result<Ended> {
    let Some((program, rest)) = args.command.split_first() else {
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
        .stdin(Stdio::null())
        // The command's output goes to stderr: stdout is the report's.
        .stdout(Stdio::from(io::stderr()));
    wait_for(cmd, program, Duration::from_millis(args.timeout_ms))
}

/// The agent command, pointed at `base` the way the SDKs read it (`OPENAI_BASE_URL` with
/// `/v1`, `OPENAI_API_BASE`, `ANTHROPIC_BASE_URL`, `HARNESS_BASE_URL`), with [`DUMMY_KEY`] for
/// a provider key the environment does not set (the SDKs refuse to start without one).
fn agent_command(program: &str, args: &[String], base: &str) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env("OPENAI_BASE_URL", format!("{base}/v1"))
        .env("OPENAI_API_BASE", format!("{base}/v1"))
        .env("ANTHROPIC_BASE_URL", base)
        .env("HARNESS_BASE_URL", base);
    for p in [Provider::Openai, Provider::Anthropic] {
        if std::env::var_os(p.key_env()).is_none_or(|v| v.is_empty()) {
            cmd.env(p.key_env(), DUMMY_KEY);
        }
    }
    cmd
}

/// Start `cmd` in its own process group and wait for it; kill the group after `timeout` or
/// on Ctrl-C.
fn wait_for(mut cmd: Command, program: &str, timeout: Duration) -> io::Result<Ended> {
    // Its own process group, so a timeout or Ctrl-C ends what it started too.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
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
            end_group(&mut child);
            return Ok(if interrupted {
                Ended::Interrupted
            } else {
                Ended::Killed
            });
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Serve `session` to one run of the command (handed `case`'s prompt and tools, `path` as its
/// scenario), say on stderr how it ended (`what` names what was served), and hand back the
/// session and the failure a killed command is; what the case holds that cannot be handed to
/// the command (a NUL in a prompt) is the diagnostic.
fn serve_to_command(
    args: &ExecArgs,
    session: Session,
    case: &Case,
    path: &Path,
    what: &str,
) -> io::Result<Result<(Session, Vec<String>), Diagnostic>> {
    let server = Server::start_with(
        session,
        SocketAddr::from(([127, 0, 0, 1], 0)),
        Signals::Ignore,
        super::http::Timeouts {
            pace: args.reading.pace,
            ..Default::default()
        },
        crate::limits::MAX_SESSION_REQUEST_BYTES,
    )?;
    let ended = run_command(args, server.addr(), case, path);
    let session = server.stop()?;
    match ended {
        Ok(ended) => Ok(Ok((session, report_end(args, what, &ended)))),
        Err(e) if e.kind() == io::ErrorKind::InvalidInput => Ok(Err(Diagnostic {
            line: 1,
            col: 1,
            message: e.to_string(),
            hint: Some(
                "environment variables cannot hold NUL bytes: remove it from the scenario"
                    .to_owned(),
            ),
        })),
        Err(e) => Err(e),
    }
}

/// Say on stderr how the command ended; the failure a killed command is, if it was.
fn report_end(args: &ExecArgs, what: &str, ended: &Ended) -> Vec<String> {
    let note = match ended {
        Ended::Exited(s) => format!("ended with {s}"),
        Ended::Killed => format!("killed after {} ms", args.timeout_ms),
        Ended::Interrupted => "ended by Ctrl-C".to_owned(),
    };
    let _ = writeln!(
        anstream::stderr(),
        "harness exec: {what}: `{}` {note}",
        args.command.join(" ")
    );
    match ended {
        Ended::Killed => vec![format!(
            "the command to finish within {} ms; it was killed (raise --timeout-ms if it needs longer)",
            args.timeout_ms
        )],
        _ => Vec::new(),
    }
}

/// Kill the command and every process of its group, and reap it.
fn end_group(child: &mut std::process::Child) {
    #[cfg(unix)]
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: kill(2) with a negative pid signals the process group the child leads
        // (`process_group(0)` made it); it touches no memory.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `harness proxy` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ProxyArgs {
    /// Where the cassettes go: a folder (`conversation-N.cassette.json` in it), or a file
    /// `NAME.cassette.json` (a further conversation goes to `NAME-N.cassette.json` beside it).
    #[arg(long, value_name = "DIR|FILE")]
    pub out: PathBuf,
    /// The provider to forward to: `openai=URL` (the OpenAI SDK's base URL, with `/v1`),
    /// `anthropic=URL` (the Anthropic SDK's), or a bare URL for both (default: the providers'
    /// own APIs).
    #[arg(long, value_name = "[openai=|anthropic=]URL")]
    pub upstream: Vec<String>,
    /// The agent command and its arguments, after `--`; without one, the proxy records until
    /// Ctrl-C.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
    /// Replace the cassettes already at `--out` (else the proxy refuses to start).
    #[arg(long)]
    pub replace: bool,
    /// Address to listen on (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0", value_name = "HOST:PORT")]
    pub addr: SocketAddr,
    /// Listen on a non-loopback address (the proxy spends your key for whoever reaches it).
    #[arg(long)]
    pub allow_remote: bool,
    /// Kill the command after this long (the cassettes are still written).
    #[arg(long, default_value_t = 3_600_000, value_name = "MS")]
    pub timeout_ms: u64,
    /// How long the provider may take to start an answer (502 to the agent past it).
    #[arg(long, default_value_t = 600_000, value_name = "MS")]
    pub upstream_timeout_ms: u64,
    /// A request field the replay's match ignores, written into every cassette (repeatable;
    /// `messages/*/name`).
    #[arg(long, value_name = "PATH")]
    pub ignore: Vec<String>,
    /// The replay latency written into every cassette: `recorded` (each answer takes as long as
    /// it took when recorded) or `zero` (the virtual clock stands still, so a trace does not
    /// depend on the recording's timing and a re-recording keeps its golden).
    #[arg(long, value_enum, default_value_t = Delay::Recorded)]
    pub delay: Delay,
}

/// The upstreams `--upstream` names, over the providers' defaults.
fn upstreams(args: &ProxyArgs) -> Result<super::proxy::Upstreams, String> {
    let mut openai = Provider::Openai.default_base_url().to_owned();
    let mut anthropic = Provider::Anthropic.default_base_url().to_owned();
    for u in &args.upstream {
        let (which, url) = match u.split_once('=') {
            Some((w @ ("openai" | "anthropic"), url)) => (Some(w), url),
            _ => (None, u.as_str()),
        };
        crate::record::check_base_url(url)
            .map_err(|r| format!("--upstream {u}: {}\n  hint: {}", r.message, r.hint))?;
        match which {
            Some("openai") => openai = url.to_owned(),
            Some(_) => anthropic = url.to_owned(),
            None => {
                openai = url.to_owned();
                anthropic = url.to_owned();
            }
        }
    }
    let key = |p: Provider| {
        std::env::var(p.key_env())
            .ok()
            .map(|k| k.trim().to_owned())
            .filter(|k| !k.is_empty() && k != DUMMY_KEY)
    };
    Ok(super::proxy::Upstreams {
        openai,
        anthropic,
        openai_key: key(Provider::Openai),
        anthropic_key: key(Provider::Anthropic),
        timeout: Duration::from_millis(args.upstream_timeout_ms),
    })
}

/// The cassette path of the `n`-th (1-based) conversation.
fn cassette_path(out: &Path, n: usize) -> PathBuf {
    let name = out.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    match name.strip_suffix(crate::record::CASSETTE_SUFFIX) {
        Some(_) if n == 1 => out.to_owned(),
        Some(stem) => out.with_file_name(format!("{stem}-{n}{}", crate::record::CASSETTE_SUFFIX)),
        None => out.join(format!(
            "conversation-{n}{}",
            crate::record::CASSETTE_SUFFIX
        )),
    }
}

/// The cassettes already at `out` that a recording would replace.
fn existing_cassettes(out: &Path) -> Vec<PathBuf> {
    if crate::record::is_cassette(out) {
        let mut found: Vec<PathBuf> = out.exists().then(|| out.to_owned()).into_iter().collect();
        if let (Some(dir), Some(stem)) = (
            out.parent(),
            out.file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.strip_suffix(crate::record::CASSETTE_SUFFIX)),
        ) {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                let numbered = name
                    .strip_prefix(&format!("{stem}-"))
                    .and_then(|r| r.strip_suffix(crate::record::CASSETTE_SUFFIX))
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
                if numbered {
                    found.push(e.path());
                }
            }
        }
        found.sort();
        return found;
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(out)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| crate::record::is_cassette(p))
        .collect();
    found.sort();
    found
}

/// `harness proxy`.
pub fn proxy(args: &ProxyArgs) -> anyhow::Result<u8> {
    if !args.addr.ip().is_loopback() && !args.allow_remote {
        return Ok(bad_usage(&format!(
            "refusing to listen on {}, which is not a loopback address\n  hint: whoever reaches the proxy spends your key; pass --allow-remote to listen there anyway",
            args.addr
        )));
    }
    let upstreams = match upstreams(args) {
        Ok(u) => u,
        Err(e) => return Ok(bad_usage(&e)),
    };
    let old = existing_cassettes(&args.out);
    if !old.is_empty() && !args.replace {
        return Ok(bad_usage(&format!(
            "{} already holds {} cassette(s) ({})\n  hint: pass --replace to record over them, or name another --out",
            args.out.display(),
            old.len(),
            old[0].display()
        )));
    }
    let folder = if crate::record::is_cassette(&args.out) {
        args.out
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_owned()
    } else {
        args.out.clone()
    };
    if let Err(e) = store::writable_folder(&folder) {
        return Ok(bad_usage(&format!(
            "cannot write cassettes into {}: {e}\n  hint: name a folder harness may create and write",
            folder.display()
        )));
    }
    let scrubber = crate::record::scrub::Scrubber::new(
        [
            upstreams.openai_key.clone(),
            upstreams.anthropic_key.clone(),
        ]
        .into_iter()
        .flatten(),
    );
    let proxy = super::proxy::Proxy::start(
        upstreams.clone(),
        scrubber,
        args.addr,
        if args.command.is_empty() {
            Signals::Stop
        } else {
            Signals::Ignore
        },
    )
    .with_context(|| format!("cannot listen on {}", args.addr))?;
    let addr = proxy.addr();
    let base = format!("http://{addr}");
    let mut err = anstream::stderr();
    let ended = if let Some((program, rest)) = args.command.split_first() {
        let mut cmd = agent_command(program, rest, &base);
        cmd.stdin(Stdio::inherit());
        match wait_for(cmd, program, Duration::from_millis(args.timeout_ms)) {
            Ok(e) => Some(e),
            Err(e) => {
                let _ = proxy.stop();
                return Ok(bad_usage(&e.to_string()));
            }
        }
    } else {
        writeln!(io::stdout().lock(), "listening on {base}")?;
        let _ = writeln!(
            err,
            "harness proxy: OPENAI_BASE_URL={base}/v1 ANTHROPIC_BASE_URL={base}; Ctrl-C ends the recording and writes the cassettes"
        );
        while !proxy.finished() {
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    };
    let (slots, scrubber) = proxy.stop()?;
    if let Some(ended) = &ended {
        let note = match ended {
            Ended::Exited(s) => format!("ended with {s}"),
            Ended::Killed => format!("killed after {} ms", args.timeout_ms),
            Ended::Interrupted => "ended by Ctrl-C".to_owned(),
        };
        let command: Vec<String> = args.command.iter().map(|a| scrubber.scrub(a)).collect();
        let _ = writeln!(err, "harness proxy: `{}` {note}", command.join(" "));
    }
    let groups = super::proxy::conversations(&slots);
    if groups.is_empty() {
        let _ = writeln!(
            err,
            "error: the agent made no model request through the proxy, so nothing was recorded\n  hint: the agent must take its base URL from OPENAI_BASE_URL or ANTHROPIC_BASE_URL, which harness proxy sets"
        );
        return Ok(crate::results::EXIT_FAILED);
    }
    let mut code = EXIT_OK;
    let mut written = Vec::new();
    let mut out = io::stdout().lock();
    for (i, members) in groups.iter().enumerate() {
        let path = cassette_path(&args.out, i + 1);
        if let Some(&big) = members.iter().find(|&&m| slots[m].too_large) {
            let _ = writeln!(
                err,
                "error: {}: an answer of this conversation (request {}) went past the {} bytes a cassette keeps; not written\n  hint: ask the agent for shorter answers while recording (README \"Limits\")",
                path.display(),
                members.iter().position(|&m| m == big).unwrap_or(0) + 1,
                crate::limits::MAX_RESPONSE_BYTES
            );
            code = crate::results::EXIT_FAILED;
            continue;
        }
        let cassette = super::proxy::cassette_of(
            &slots,
            members,
            u32::try_from(i + 1).unwrap_or(u32::MAX),
            &args.command,
            &upstreams,
            &scrubber,
            &ReplayOptions {
                delay: args.delay,
                scale: None,
                ignore: args.ignore.clone(),
            },
        );
        written.push((path, cassette));
    }
    // The cassettes of an earlier recording go only once the new ones are ready.
    for p in &old {
        if !written.iter().any(|(w, _)| w == p) {
            std::fs::remove_file(p).with_context(|| format!("cannot remove {}", p.display()))?;
        }
    }
    for (path, cassette) in &written {
        let text = crate::record::cassette::render(cassette);
        store::write_atomic(path, text.as_bytes())
            .with_context(|| format!("cannot write {}", path.display()))?;
        writeln!(
            out,
            "recorded {}: {} request(s) on {} ({})",
            path.display(),
            cassette.exchanges.len(),
            cassette.agent.as_ref().map_or("", |a| api_name(a.api)),
            if cassette.model.is_empty() {
                "no model named"
            } else {
                &cassette.model
            },
        )?;
    }
    if matches!(ended, Some(Ended::Interrupted)) {
        return Ok(crate::results::EXIT_INTERRUPTED);
    }
    Ok(code)
}

/// The API's path, as the README names it.
fn api_name(api: super::Api) -> &'static str {
    match api {
        super::Api::ChatCompletions => "/v1/chat/completions",
        super::Api::Responses => "/v1/responses",
        super::Api::Messages => "/v1/messages",
    }
}

/// A replay session's cassettes, loaded: one case per cassette (its promoted scenario), in
/// the order given.
struct LoadedTapes {
    cases: Vec<Case>,
    paths: Vec<PathBuf>,
    tapes: super::replay::Tapes,
}

/// Load the agent cassettes of a replay session, and the `script:` scenario; every file that
/// cannot serve is its result.
fn load_tapes(
    layout: &Layout,
    files: &[PathBuf],
    policy: &super::replay::OnDivergence,
) -> Result<LoadedTapes, Vec<FileResult>> {
    let located =
        |path: &Path, line: usize, col: usize, message: String, hint: String| FileResult {
            path: path.to_owned(),
            outcome: Err(vec![Diagnostic {
                line,
                col,
                message,
                hint: Some(hint),
            }]),
        };
    let mut errors = Vec::new();
    let mut cases = Vec::new();
    let mut paths = Vec::new();
    let mut tapes = Vec::new();
    for path in files {
        if !crate::record::is_cassette(path) {
            errors.push(located(
                path,
                1,
                1,
                "a scenario among cassettes: a replay session serves cassettes only".to_owned(),
                "give exec either scenarios or agent cassettes".to_owned(),
            ));
            continue;
        }
        let c = match crate::record::load_cassette(path) {
            Ok((c, _)) => c,
            Err(r) => {
                let (line, col) = r.at.as_ref().map_or((1, 1), |(_, l, c)| (*l, *c));
                errors.push(located(path, line, col, r.message, r.hint));
                continue;
            }
        };
        if c.agent.is_none() {
            errors.push(located(
                path,
                1,
                1,
                "this cassette is a scenario's run recorded by `harness record`, not an agent's conversation".to_owned(),
                "replay it with `harness run`; `harness proxy` records an agent's conversations for exec".to_owned(),
            ));
            continue;
        }
        let id = layout.id_of(path);
        let promoted =
            super::replay::promote_agent(&c, &path.display().to_string(), &FailureRules::default());
        let case = promoted
            .and_then(|s| serde_json::to_string(&s).ok())
            .ok_or_else(|| "its first request cannot be read as a model request".to_owned())
            .and_then(|json| {
                scenario::load(&json, scenario::SourceFormat::Json, &id)
                    .map_err(|d| d.first().map_or_else(String::new, |d| d.message.clone()))
            });
        match case {
            Ok(mut cs) => {
                cases.push(cs.remove(0));
                paths.push(path.clone());
                tapes.push(super::replay::Tape::new(id, c));
            }
            Err(m) => errors.push(located(
                path,
                1,
                1,
                format!("this cassette cannot be served: {m}"),
                "re-record it with `harness proxy`".to_owned(),
            )),
        }
    }
    let script = match policy {
        super::replay::OnDivergence::Script(p) => match load(layout, p) {
            Ok(mut cs) => Some(cs.remove(0)),
            Err(diags) => {
                errors.push(FileResult {
                    path: p.clone(),
                    outcome: Err(diags),
                });
                None
            }
        },
        _ => None,
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(LoadedTapes {
        cases,
        paths,
        tapes: super::replay::Tapes {
            tapes,
            on_divergence: policy.clone(),
            script,
            scrubber: crate::record::scrub::Scrubber::from_env(&[
                Provider::Openai.key_env(),
                Provider::Anthropic.key_env(),
            ]),
        },
    })
}

/// One replayed conversation's trace.
struct TapedTrace {
    /// Its case id: the cassette's, with the label.
    id: String,
    /// Which cassette.
    cassette: usize,
    events: Vec<TimedEvent>,
    /// The divergence report, if it diverged.
    report: Option<String>,
}

/// The traces of a replay session: by cassette, and within one cassette by the trace itself
/// (agents in parallel get the same ids on every run).
fn taped_traces(session: &Session, label: &str) -> Vec<TapedTrace> {
    let Some(tapes) = session.tapes() else {
        return Vec::new();
    };
    let mut all: Vec<(usize, String, Vec<TimedEvent>, Option<String>)> = session
        .conversations()
        .iter()
        .filter_map(|c| {
            let pos = c.tape.as_ref()?;
            let tape = &tapes.tapes[pos.cassette];
            let ctx = Context {
                profile: label,
                cap: u32::try_from(tape.cassette.exchanges.len()).unwrap_or(u32::MAX),
                tool_latency: Default::default(),
            };
            let events = infer::infer(&ctx, &c.exchanges);
            let report = c.divergence().map(|d| d.report(&tape.id));
            Some((
                pos.cassette,
                trace::render_golden("", &events),
                events,
                report,
            ))
        })
        .collect();
    all.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
    let mut seen = vec![0usize; tapes.tapes.len()];
    all.into_iter()
        .map(|(i, _, events, report)| {
            let id = conversation_id(&tapes.tapes[i].id, label, seen[i]);
            seen[i] += 1;
            TapedTrace {
                id,
                cassette: i,
                events,
                report,
            }
        })
        .collect()
}

/// Serve the cassettes to one run of the command (one session: each conversation the agent
/// begins is answered from the cassette it binds to) and judge each conversation; a cassette
/// no conversation played fails.
fn exec_tapes(
    args: &ExecArgs,
    options: &Options,
    files: &[PathBuf],
) -> io::Result<Vec<FileResult>> {
    let loaded = match load_tapes(&options.layout, files, &args.on_divergence) {
        Ok(l) => l,
        Err(errors) => return Ok(errors),
    };
    let first = loaded.cases[0].clone();
    let rules = match failure_rules(&first, &args.reading) {
        Ok(r) => r,
        Err(e) => {
            return Ok(vec![FileResult {
                path: loaded.paths[0].clone(),
                outcome: Err(vec![Diagnostic {
                    line: 1,
                    col: 1,
                    message: e,
                    hint: Some("fix the --failure pattern (Rust `regex` syntax)".to_owned()),
                }]),
            }]);
        }
    };
    let names: Vec<String> = loaded
        .paths
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    let (session, failures) = match serve_to_command(
        args,
        Session::taped(first.clone(), rules, loaded.tapes),
        &first,
        &loaded.paths[0],
        &names.join(", "),
    )? {
        Ok(done) => done,
        Err(d) => {
            return Ok(vec![FileResult {
                path: loaded.paths[0].clone(),
                outcome: Err(vec![d]),
            }]);
        }
    };
    let traces = taped_traces(&session, &args.label);
    let fail_on_divergence = args.on_divergence == super::replay::OnDivergence::Fail;
    let case_of = |i: usize, id: String| Case {
        id,
        profile: args.label.clone(),
        expect: Expect::default(),
        gated: true,
        ..loaded.cases[i].clone()
    };
    let mut per_file: Vec<Vec<CaseResult>> = vec![Vec::new(); loaded.paths.len()];
    for t in &traces {
        if let Err(e) = trace::check_limits(&t.events) {
            return Ok(vec![FileResult {
                path: loaded.paths[t.cassette].clone(),
                outcome: Err(vec![Diagnostic {
                    line: 1,
                    col: 1,
                    message: format!("the trace inferred for `{}`: {e}", t.id),
                    hint: Some(
                        "the agent sent more than a run may hold (README \"Limits\"); its conversation is not judged"
                            .to_owned(),
                    ),
                }]),
            }]);
        }
        let mut r = run::judge(options, &case_of(t.cassette, t.id.clone()), &t.events);
        if let Some(report) = &t.report {
            let _ = writeln!(anstream::stderr(), "harness exec: {}: {report}", t.id);
            if fail_on_divergence {
                r.expectation_failures.push(format!(
                    "every request to match the recording (--on-divergence fail); {report}"
                ));
            }
        }
        r.expectation_failures.extend(failures.iter().cloned());
        per_file[t.cassette].push(r);
    }
    let quiet = Options {
        write_pending: false,
        traces: None,
        ..options.clone()
    };
    for (i, results) in per_file.iter_mut().enumerate() {
        if !results.is_empty() {
            continue;
        }
        let mut r = run::judge(
            &quiet,
            &case_of(i, conversation_id(&loaded.cases[i].id, &args.label, 0)),
            &[],
        );
        r.golden = Comparison::Ungated;
        r.expectation_failures.push(if traces.is_empty() {
            "a model request; the command made none: it must take its base URL from OPENAI_BASE_URL or ANTHROPIC_BASE_URL, which harness exec sets".to_owned()
        } else {
            "the agent to begin this recorded conversation; none of its conversations began nearer to it than to another cassette".to_owned()
        });
        r.expectation_failures.extend(failures.iter().cloned());
        results.push(r);
    }
    Ok(loaded
        .paths
        .into_iter()
        .zip(per_file)
        .map(|(path, mut results)| {
            for r in &mut results {
                r.row.expectations_passed = r.expectation_failures.is_empty();
                r.passes = u32::from(r.passed());
            }
            FileResult {
                path,
                outcome: Ok(results),
            }
        })
        .collect())
}
