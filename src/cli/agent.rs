//! `harness serve`, `harness exec` and `harness proxy`: the black-box agent commands. Each
//! checks its arguments, drives a session of `crate::serve` (through `crate::exec` for a
//! command run and judged), prints what happened and maps it to an exit status.

use super::args::{ExecArgs, OutputArgs, ProxyArgs, ProxyMode, ServeArgs};
use super::{Setup, fail};
use crate::diagnostic::{Diagnostic, Style};
use crate::exec::command::{self, Ended};
use crate::exec::{
    Settings, check_label, conversation_id, exec_cassettes, exec_file, failure_rules,
    judge_replayed, judge_session, load, load_cassettes, prepare, replayed_traces, report_to,
    traces,
};
use crate::record::cassette::ReplayOptions;
use crate::results::{ExitStatus, FileResult};
use crate::run::Options;
use crate::serve::http::{Server, Signals};
use crate::serve::proxy::{self, Upstreams, api_name, existing_cassettes};
use crate::serve::{Session, replay};
use crate::store;
use crate::trace::{self, TimedEvent};
use crate::verdict::{self, Outputs};
use anyhow::Context as _;
use std::io::{self, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// Tell the user a file's diagnostics.
fn print_diagnostics(path: &Path, diags: &[Diagnostic]) {
    let mut err = anstream::stderr();
    for d in diags {
        let _ = write!(err, "{}", d.render_in(path, &Style::default()));
    }
}

/// A listening address off loopback is refused (`why` it is dangerous) unless
/// `--allow-remote`: the exit status when it is.
pub(super) fn loopback_only(addr: SocketAddr, allow_remote: bool, why: &str) -> Option<ExitStatus> {
    (!addr.ip().is_loopback() && !allow_remote).then(|| {
        fail(
            &Diagnostic::new(format!(
                "refusing to listen on {addr}, which is not a loopback address"
            ))
            .hint(format!("{why}; pass --allow-remote to listen there anyway")),
        )
    })
}

/// `harness serve`.
pub(super) fn serve(args: &ServeArgs, setup: &Setup) -> anyhow::Result<ExitStatus> {
    let layout = &setup.layout;
    if let Err(e) = check_label(&args.label) {
        return Ok(fail(&e));
    }
    if let Some(refused) = loopback_only(
        args.addr,
        args.allow_remote,
        "the endpoint has no authentication",
    ) {
        return Ok(refused);
    }
    let (files, unreadable) = store::discover(&args.scenario);
    if let Some((path, e)) = unreadable.first() {
        return Ok(fail(
            &Diagnostic::new(store::describe(e))
                .in_file(path)
                .hint(store::hint_for(e, "harness serve")),
        ));
    }
    let replaying = files.iter().any(|f| crate::record::is_cassette(f));
    if let Some(p) = args
        .expect
        .as_ref()
        .filter(|p| !crate::policy::Config::is_profile(p))
    {
        return Ok(super::run::unknown_profile(p));
    }
    if replaying && args.expect.is_some() {
        return Ok(fail(&crate::exec::no_expectations_in_cassettes()));
    }
    // With --judge, what exec judges: the case `--expect` names, and its rules.
    let mut settings = Settings::without_command(
        &args.label,
        args.expect.clone(),
        args.reading.to_reading(setup),
        args.on_divergence.clone(),
        args.matching.matching(setup),
    );
    settings.golden = !args.cassettes_only && setup.replay_defaults().golden != Some(false);
    if args.cassettes_only
        && (!replaying || args.on_divergence != crate::serve::replay::OnDivergence::Fail)
    {
        return Ok(fail(
            &Diagnostic::new(
                "--cassettes-only judges a replay of cassettes by its recording alone: give cassettes, with --on-divergence fail (the default)",
            )
            .status(ExitStatus::BadInput),
        ));
    }
    let options = Options {
        write_pending: !super::ci(),
        traces: args.traces.clone(),
        ..Options::judging(layout.clone(), settings.matching.clone())
    };
    let (judged, loaded, case) =
        match served_case(args, setup, &settings, &options, &files, replaying) {
            Ok(got) => got,
            Err(status) => return Ok(status),
        };
    if let Some(dir) = &args.traces {
        // Checked now: the traces are written at the end, when nothing can be done about it.
        if let Err(e) = store::writable_folder(dir) {
            return Ok(fail(
                &Diagnostic::new(format!("cannot write traces into {}: {e}", dir.display()))
                    .hint("name a folder harness may create and write"),
            ));
        }
    }
    let scenario_id = case.id.clone();
    let rules = match failure_rules(&case, &args.reading.to_reading(setup)) {
        Ok(r) => r,
        Err(e) => return Ok(fail(&Diagnostic::new(e))),
    };
    let timeouts = crate::serve::http::Timeouts {
        read: Duration::from_millis(args.read_timeout_ms),
        pace: args.reading.pace,
        ..Default::default()
    };
    // What --judge needs of the cassettes once their replay has moved into the session.
    let mut cassettes: (Vec<crate::scenario::Case>, Vec<PathBuf>) = (Vec::new(), Vec::new());
    let session = match loaded {
        Some(l) => {
            cassettes = (l.cases, l.paths);
            Session::replaying(case, rules, l.replay)
        }
        None => Session::with_rules(case, rules).preferring(args.reading.to_reading(setup).bind),
    };
    let read_limit = session.read_limit();
    let server = Server::start_with(session, args.addr, Signals::Stop, timeouts, read_limit)
        .with_context(|| format!("cannot listen on {}", args.addr))?;
    let addr = server.addr();
    {
        let mut out = io::stdout().lock();
        writeln!(out, "listening on http://{addr}")?;
        out.flush()?;
    }
    let _ = writeln!(
        anstream::stderr(),
        "harness serve: {}; Ctrl-C{} ends and {}",
        crate::provider::base_url_assignments(
            crate::provider::Provider::ALL,
            &format!("http://{addr}")
        ),
        if args.until_eof {
            " (or the end of standard input)"
        } else {
            ""
        },
        if args.judge {
            "judges the conversations"
        } else {
            "prints the inferred traces"
        }
    );
    wait_until_stopped(&server, args.until_eof);
    let session = server.stop()?;
    if args.judge {
        let judged = match &judged {
            Some(prepared) => vec![FileResult {
                path: files[0].clone(),
                outcome: judge_session(
                    &settings,
                    &options,
                    prepared,
                    &session,
                    Vec::new(),
                    crate::results::card::End::Exited(Some(0)),
                )
                .map_err(|d| vec![d]),
            }],
            None => judge_replayed(
                &settings,
                &options,
                &cassettes.0,
                &cassettes.1,
                &session,
                crate::exec::Ending::default(),
                &mut anstream::stderr(),
            ),
        };
        return Ok(report_to(
            anstream::stdout().lock(),
            &judged,
            super::ci(),
            "serve",
        )?);
    }
    print_served(args, &session, &scenario_id)
}

/// What `serve` answers from: the case `--judge` judges (one scenario), the cassettes a replay
/// plays, and the case served; the exit status when they cannot be read.
fn served_case(
    args: &ServeArgs,
    setup: &Setup,
    settings: &Settings,
    options: &Options,
    files: &[PathBuf],
    replaying: bool,
) -> Result<
    (
        Option<crate::exec::Prepared>,
        Option<crate::exec::LoadedCassettes>,
        crate::scenario::Case,
    ),
    ExitStatus,
> {
    let layout = &setup.layout;
    let judged = match (args.judge, files) {
        (true, [one]) if !replaying => match prepare(settings, options, one) {
            Ok(p) => Some(p),
            Err(diags) => {
                print_diagnostics(one, &diags);
                return Err(ExitStatus::BadInput);
            }
        },
        _ => None,
    };
    let loaded = if replaying {
        match load_cassettes(
            layout,
            files,
            &args.on_divergence,
            &args.matching.matching(setup),
        ) {
            Ok(l) => Some(l),
            Err(errors) => {
                for f in errors {
                    if let Err(diags) = &f.outcome {
                        print_diagnostics(&f.path, diags);
                    }
                }
                return Err(ExitStatus::BadInput);
            }
        }
    } else {
        None
    };
    let case = match (&judged, &loaded, files) {
        (Some(p), _, _) => p.case.clone(),
        (None, Some(l), _) => settings.reading.served(l.cases[0].clone()),
        (None, None, [one]) => match load(layout, one) {
            Ok(mut cases) => settings.reading.served(cases.remove(0)),
            Err(diags) => {
                print_diagnostics(one, &diags);
                return Err(ExitStatus::BadInput);
            }
        },
        (None, None, _) => {
            return Err(fail(
                &Diagnostic::new("serve answers from one scenario, or from agent cassettes")
                    .hint("name one scenario file, or cassette files and folders"),
            ));
        }
    };
    Ok((judged, loaded, case))
}

/// Serve until a stop signal ends the server (or, with `until_eof`, standard input ends).
fn wait_until_stopped(server: &Server, until_eof: bool) {
    wait_until(|| server.finished(), until_eof);
}

/// Block until `finished` says so (a signal stopped the server), or, with `until_eof`,
/// standard input ends.
#[expect(
    clippy::disallowed_methods,
    reason = "the serve and collect commands wait on the wall clock for their stop signal and a reader thread (an edge: cli)"
)]
pub(super) fn wait_until(finished: impl Fn() -> bool, until_eof: bool) {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    if until_eof {
        std::thread::spawn(move || {
            let _ = io::copy(&mut io::stdin().lock(), &mut io::sink());
            let _ = tx.send(());
        });
    }
    while !finished() {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(()) => break,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) if until_eof => break,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

/// Without `--judge`: each conversation's inferred trace, printed (or written under
/// `--traces`), and the session's size.
fn print_served(
    args: &ServeArgs,
    session: &Session,
    scenario_id: &str,
) -> anyhow::Result<ExitStatus> {
    let all: Vec<(String, Vec<TimedEvent>)> = match session.replay() {
        Some(_) => replayed_traces(session, &args.label, false)
            .into_iter()
            .map(|t| {
                if let Some(report) = &t.report {
                    let _ = writeln!(anstream::stderr(), "harness serve: {}: {report}", t.id);
                }
                (t.id, t.events)
            })
            .collect(),
        None => traces(session, &args.label)
            .into_iter()
            .enumerate()
            .map(|(i, e)| (conversation_id(scenario_id, &args.label, i), e))
            .collect(),
    };
    let mut out = io::stdout().lock();
    let mut code = ExitStatus::Ok;
    for (id, events) in &all {
        let id = id.clone();
        if let Err(e) = trace::check_limits(events) {
            code = fail(&Diagnostic::new(format!("{id}: {e}")).hint(
                "the agent sent more than a run may hold; see docs/robustness.md \"Limits\"",
            ));
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
            .map(|c| c.requests.len())
            .sum::<usize>()
    )?;
    Ok(code)
}

/// `harness exec`: the outputs as `run` takes them, but no project baseline.
pub(super) fn exec(args: &ExecArgs, out: OutputArgs, setup: &Setup) -> anyhow::Result<ExitStatus> {
    if let Some(refused) = setup.nothing_set_up(&args.scenarios, "exec") {
        return Ok(refused);
    }
    // No path: the project's scenarios, as `run` takes them.
    let args = &ExecArgs {
        scenarios: setup.paths_or_root(args.scenarios.clone()),
        ..args.clone()
    };
    if let Some(refused) = super::output_over_input(&out.written(), &args.scenarios, |p| {
        store::is_scenario_file(p) || crate::record::is_cassette(p)
    }) {
        return Ok(refused);
    }
    crate::run::interrupt::install().context("cannot catch stop signals")?;
    // `bless` never records exec's conversations, so the project's baseline would only list
    // them as missing: exec compares metrics with a baseline named on its line.
    let named = out.baseline.is_some();
    let mut outputs = Outputs {
        command: verdict::Command::Exec,
        ..out.outputs(setup)
    };
    if !named {
        outputs.baseline = None;
    }
    let Some(file) = &args.collect else {
        return exec_judged(args, setup, &outputs, &[]);
    };
    // The agent's own traces: a receiver beside the served scenario for the whole run, into a
    // file begun afresh (this run's traces only).
    if let Some(old) = store::rotations_of(file).first() {
        return Ok(fail(
            &Diagnostic::new(format!(
                "{} is a rotation of {} from an earlier run: importing {} would read it as part of this run's traces",
                old.display(),
                file.display(),
                file.display()
            ))
            .hint("remove the earlier rotations, or name another file with --collect"),
        ));
    }
    if let Err(e) = store::write_atomic(file, b"") {
        return Ok(fail(
            &Diagnostic::new(format!("cannot write {}: {e}", file.display()))
                .hint("--collect names the file the agent's traces are written to"),
        ));
    }
    let collector = crate::serve::collect::Collector::start(
        file,
        SocketAddr::from(([127, 0, 0, 1], 0)),
        60 << 20,
        Signals::Ignore,
    )
    .with_context(|| format!("cannot start the OTLP receiver for {}", file.display()))?;
    let endpoint = format!("http://{}", collector.addr());
    let env: Vec<(String, String)> = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.clone()),
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            format!("{endpoint}/v1/traces"),
        ),
        (
            "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
            format!("{endpoint}/v1/logs"),
        ),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf".to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let status = exec_judged(args, setup, &outputs, &env);
    let counts = collector.stop()?;
    let mut err = anstream::stderr();
    let _ = writeln!(
        err,
        "harness exec: the agent's own traces: {} request(s), {} span(s), {} log record(s) written to {}",
        counts.requests,
        counts.spans,
        counts.logs,
        file.display()
    );
    for why in &counts.refusals {
        let _ = writeln!(
            err,
            "warning: harness exec --collect refused a request: {why}"
        );
    }
    status
}

/// Run the command against each scenario (or the cassettes) and judge it into `outputs`.
fn exec_judged(
    args: &ExecArgs,
    setup: &Setup,
    outputs: &Outputs,
    env: &[(String, String)],
) -> anyhow::Result<ExitStatus> {
    let layout = &setup.layout;
    if let Err(e) = check_label(&args.label) {
        return Ok(fail(&e));
    }
    if let Some(p) = args
        .expect
        .as_ref()
        .filter(|p| !crate::policy::Config::is_profile(p))
    {
        return Ok(super::run::unknown_profile(p));
    }
    let (files, unreadable) = store::discover(&args.scenarios);
    let replaying = files.iter().any(|f| crate::record::is_cassette(f));
    let settings = crate::exec::Settings {
        env: env.to_vec(),
        ..args.settings(setup)
    };
    if !settings.golden {
        // Judged by the recording alone: only a replay has one, and only `fail` keeps to it.
        let why = if !replaying {
            Some("judges a replay by its recording, and no cassette was given")
        } else if args.on_divergence != crate::serve::replay::OnDivergence::Fail {
            Some(
                "judges a replay by its recording alone, so a divergence fails it: --on-divergence must be `fail`",
            )
        } else {
            None
        };
        if let Some(why) = why {
            return Ok(fail(
                &Diagnostic::new(format!(
                    "--cassettes-only (or the project file's `[replay] golden = false`) {why}"
                ))
                .hint("give the cassettes alone, with --on-divergence fail (the default)")
                .status(ExitStatus::BadInput),
            ));
        }
    }
    let named = |f: &PathBuf| args.scenarios.contains(f);
    if replaying
        && files
            .iter()
            .any(|f| !crate::record::is_cassette(f) && named(f))
    {
        return Ok(fail(
            &Diagnostic::new("exec was given scenarios and cassettes together").hint(
                "run the scenarios and the cassettes in two commands: one session replays cassettes only",
            ),
        ));
    }
    // A folder of cassettes is replayed as one session; the scenarios beside them (what
    // `harness promote` writes) are run by `harness run`, not replayed.
    let (files, beside): (Vec<PathBuf>, Vec<PathBuf>) = if replaying {
        files
            .into_iter()
            .partition(|f| crate::record::is_cassette(f))
    } else {
        (files, Vec::new())
    };
    if let Some(first) = beside.first() {
        let _ = writeln!(
            anstream::stderr(),
            "harness exec: replaying the cassettes only; {} scenario file(s) among them left to `harness run` ({}{})",
            beside.len(),
            first.display(),
            if beside.len() > 1 { ", …" } else { "" }
        );
    }
    if replaying && args.expect.is_some() {
        return Ok(fail(&crate::exec::no_expectations_in_cassettes()));
    }
    let options = Options {
        write_pending: !outputs.ci || outputs.pending_dir.is_some(),
        traces: args.traces.clone(),
        pending_dir: outputs.pending_dir.clone(),
        keep_traces: outputs.keeps_traces(),
        ..Options::judging(layout.clone(), args.matching.matching(setup))
    };
    let status = verdict::report(outputs, layout, |r| {
        for (path, e) in unreadable {
            r.unreadable(&FileResult {
                path,
                outcome: Err(vec![
                    Diagnostic::at(1, 1, store::describe(&e))
                        .hint(store::hint_for(&e, "harness exec")),
                ]),
            })?;
        }
        if replaying {
            for result in exec_cassettes(&settings, &options, &files, &mut anstream::stderr())? {
                r.file(&result)?;
            }
            if crate::run::interrupt::requested() {
                r.interrupted(0, crate::run::interrupt::name())?;
            }
            return r.finish();
        }
        let total = files.len();
        for (done, path) in files.into_iter().enumerate() {
            if crate::run::interrupt::requested() {
                r.interrupted(total - done, crate::run::interrupt::name())?;
                break;
            }
            let result = exec_file(&settings, &options, &path, &mut anstream::stderr())?;
            r.file(&result)?;
        }
        if crate::run::interrupt::requested() {
            r.interrupted(0, crate::run::interrupt::name())?;
        }
        r.finish()
    })?;
    Ok(crate::run::interrupt::signalled(status))
}

/// `harness proxy`.
pub(super) fn proxy(args: &ProxyArgs, setup: &Setup, ci: bool) -> anyhow::Result<ExitStatus> {
    crate::run::interrupt::install().context("cannot catch stop signals")?;
    if let Some(refused) = loopback_only(
        args.addr,
        args.allow_remote,
        "whoever reaches the proxy spends your key",
    ) {
        return Ok(refused);
    }
    let upstreams = match Upstreams::named(
        &args.upstream,
        Duration::from_millis(args.upstream_timeout_ms),
    ) {
        Ok(u) => u,
        Err(d) => return Ok(fail(&d)),
    };
    let (mode, old, replay_mode, session) = match replay_of(args, setup, ci) {
        Ok(got) => got,
        Err(status) => return Ok(status),
    };
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
        return Ok(fail(
            &Diagnostic::new(format!(
                "cannot write cassettes into {}: {e}",
                folder.display()
            ))
            .hint("name a folder harness may create and write"),
        ));
    }
    let scrubber = crate::record::scrub::Scrubber::new(upstreams.keys());
    // How many exchanges each replayed cassette holds: a conversation that went live past
    // the end of its recording adds to it.
    let recorded_lens: Vec<usize> = session
        .as_ref()
        .and_then(Session::replay)
        .map(|r| {
            r.cassettes
                .iter()
                .map(|c| c.cassette.exchanges.len())
                .collect()
        })
        .unwrap_or_default();
    let proxy = proxy::Proxy::start_replaying(
        upstreams.clone(),
        scrubber,
        args.addr,
        if args.command.is_empty() {
            Signals::Stop
        } else {
            Signals::Ignore
        },
        session,
    )
    .with_context(|| format!("cannot listen on {}", args.addr))?;
    let (ended, proxy) = match run_through(args, proxy)? {
        Ok(ran) => ran,
        Err(status) => return Ok(status),
    };
    let ended_by_signal = matches!(ended, Some(Ended::Interrupted));
    let bounded = proxy.bounded();
    let unsent = proxy.unsent();
    let (slots, scrubber, refusals) = proxy.stop_replaying()?;
    if let Some(ended) = &ended {
        let note = match ended {
            Ended::Exited(s) => format!("ended with {s}"),
            Ended::Killed => format!("killed after {} ms", args.timeout_ms),
            Ended::Interrupted => format!("ended by {}", crate::run::interrupt::name()),
        };
        let command: Vec<String> = args.command.iter().map(|a| scrubber.scrub(a)).collect();
        let _ = writeln!(
            anstream::stderr(),
            "harness proxy: `{}` {note}",
            command.join(" ")
        );
    }
    let groups = proxy::conversations(&slots);
    let mut code = refused_requests(&unsent, &refusals, mode);
    if groups.is_empty() {
        return Ok(nothing_recorded(&ended, code));
    }
    let recording = proxy::Recording {
        slots: &slots,
        old: &old,
        replaying: replay_mode.is_some(),
        interrupted: ended_by_signal,
        recorded_lens: &recorded_lens,
        out: &args.out,
        command: &args.command,
        upstreams: &upstreams,
        scrubber: &scrubber,
        options: &ReplayOptions {
            delay: args.delay.into(),
            scale: None,
            ignore: args.ignore.clone(),
        },
    };
    let kept = match proxy::keep(&recording, &groups) {
        Ok(kept) => kept,
        Err(d) => return Ok(fail(&d)),
    };
    code = write_kept(&kept, code)?;
    if bounded.refused > 0 {
        code = fail(
            &Diagnostic::new(format!(
                "{} model request(s) were refused (413) and not recorded: the session's recording reached what a cassette may hold ({} MiB, {} exchanges)",
                bounded.refused,
                crate::limits::MAX_CASSETTE_BYTES / (1024 * 1024),
                crate::limits::MAX_CASSETTE_EXCHANGES
            ))
            .hint("record a shorter session, or one conversation at a time (docs/robustness.md \"Limits\"); the conversations recorded before the limit were written")
            .status(ExitStatus::Failed),
        );
    }
    if let Some(m) = replay_mode {
        say_replayed(&kept, &args.out, m, &slots)?;
    }
    Ok(finish_proxy(&ended, code))
}

/// What a proxy session replays: the record mode, the cassettes already at `--out`, the
/// replay's mode (when it replays them) and its session; the exit status when it cannot.
type ReplayOf = (
    ProxyMode,
    Vec<PathBuf>,
    Option<replay::RecordMode>,
    Option<Session>,
);

fn replay_of(args: &ProxyArgs, setup: &Setup, ci: bool) -> Result<ReplayOf, ExitStatus> {
    let mode = args.record_mode.unwrap_or(if args.replace {
        ProxyMode::All
    } else if ci {
        ProxyMode::None
    } else {
        ProxyMode::Once
    });
    let old = existing_cassettes(&args.out);
    if mode == ProxyMode::None && old.is_empty() {
        return Err(fail(
            &Diagnostic::new(format!(
                "{} holds no cassette to replay, and record mode `none`{} never goes to the provider",
                args.out.display(),
                if args.record_mode.is_none() {
                    " (the default when CI is set)"
                } else {
                    ""
                }
            ))
            .hint("record the session first (`--record-mode once`), or name the folder or file that holds its cassettes"),
        ));
    }
    // The recordings the session replays, in a mode that replays and when there are some.
    let replay_mode = match mode {
        ProxyMode::None => Some(replay::RecordMode::None),
        ProxyMode::Once => Some(replay::RecordMode::Once),
        ProxyMode::NewEpisodes => Some(replay::RecordMode::NewEpisodes),
        ProxyMode::All => None,
    }
    .filter(|_| !old.is_empty());
    let session = match replay_mode {
        Some(m) => match replay_session(setup, &old, m) {
            Ok(s) => Some(s),
            Err(results) => {
                for r in &results {
                    if let Err(diags) = &r.outcome {
                        print_diagnostics(&r.path, diags);
                    }
                }
                return Err(ExitStatus::BadInput);
            }
        },
        None => None,
    };
    Ok((mode, old, replay_mode, session))
}

/// A replaying session's summary: the conversations replayed, and those recorded that the
/// agent never started again.
fn say_replayed(
    kept: &proxy::Kept,
    out_dir: &Path,
    m: replay::RecordMode,
    slots: &[proxy::Slot],
) -> anyhow::Result<()> {
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "replayed {} conversation(s) from their cassettes at {} (record mode {}); {} request(s) answered from the recording",
        kept.replayed,
        out_dir.display(),
        m.name(),
        slots.iter().filter(|s| s.replayed.is_some()).count()
    )?;
    if !kept.unused.is_empty() {
        writeln!(
            out,
            "not replayed: {} recorded conversation(s) the agent never started: {}",
            kept.unused.len(),
            kept.unused
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )?;
    }
    Ok(())
}

/// Run the agent's command through the proxy (or, without one, wait for a stop signal): how
/// the command ended (`None` without one) and the proxy, or the exit status when it could not
/// start (the proxy stopped).
#[expect(
    clippy::disallowed_methods,
    reason = "the proxy command waits on the wall clock for its stop signal (an edge: cli)"
)]
fn run_through(
    args: &ProxyArgs,
    proxy: proxy::Proxy,
) -> anyhow::Result<Result<(Option<Ended>, proxy::Proxy), ExitStatus>> {
    let base = format!("http://{}", proxy.addr());
    let Some((program, rest)) = args.command.split_first() else {
        writeln!(io::stdout().lock(), "listening on {base}")?;
        let _ = writeln!(
            anstream::stderr(),
            "harness proxy: {}; Ctrl-C ends the recording and writes the cassettes",
            crate::provider::base_url_assignments(&crate::provider::proxied(), &base)
        );
        while !proxy.finished() {
            std::thread::sleep(Duration::from_millis(50));
        }
        return Ok(Ok((None, proxy)));
    };
    let mut cmd = command::agent_command(program, rest, &base);
    cmd.stdin(Stdio::inherit());
    let waited = command::wait_for_then(
        cmd,
        program,
        Duration::from_millis(args.timeout_ms),
        &|| proxy.mark_stopping(),
    );
    Ok(match waited {
        Ok(e) => Ok((Some(e), proxy)),
        Err(e) => {
            let _ = proxy.stop();
            Err(fail(&Diagnostic::new(e.to_string())))
        }
    })
}

/// Tell the requests the proxy did not pass on and those a replay refused; the exit status so
/// far.
fn refused_requests(unsent: &[String], refusals: &[String], mode: ProxyMode) -> ExitStatus {
    let mut code = ExitStatus::Ok;
    for said in unsent {
        code = fail(
            &Diagnostic::new(format!("a request was not passed on: {said}"))
                .hint("the proxy passes on only the model APIs and the model list, by plain paths; the agent was answered with this error")
                .status(ExitStatus::Failed),
        );
    }
    for said in refusals {
        code = fail(
            &Diagnostic::new(format!("a request the recording does not answer was refused: {said}"))
                .hint(match mode {
                    ProxyMode::None => "replay with the agent as recorded, or record again where going live is wanted (`--record-mode once`, `new_episodes` or `all`, without CI set)",
                    _ => "`--record-mode new_episodes` records on from a divergence; `all` records everything again",
                })
                .status(ExitStatus::Failed),
        );
    }
    code
}

/// A session with no model request: what its exit status is, said. `code` is the status of
/// the requests refused so far (their diagnostics are the news when there are some).
fn nothing_recorded(ended: &Option<Ended>, code: ExitStatus) -> ExitStatus {
    if code != ExitStatus::Ok {
        return finish_proxy(ended, code);
    }
    if matches!(ended, Some(Ended::Interrupted)) {
        // Stopped before the agent asked anything: the signal is the news, not its base URL.
        let _ = writeln!(
            anstream::stderr(),
            "harness proxy: stopped by {} before the agent made a model request; nothing was recorded",
            crate::run::interrupt::name()
        );
        return finish_proxy(ended, ExitStatus::Failed);
    }
    fail(
        &Diagnostic::new(
            "the agent made no model request through the proxy, so nothing was recorded",
        )
        .hint(format!(
            "the agent must take its base URL from {}, which harness proxy sets",
            crate::provider::base_url_var_names(&crate::provider::proxied())
        ))
        .status(ExitStatus::Failed),
    )
}

/// Tell why conversations were not written, remove an earlier recording's cassettes and
/// write the new ones, each said on stdout; the exit status after `code`.
fn write_kept(kept: &proxy::Kept, mut code: ExitStatus) -> anyhow::Result<ExitStatus> {
    for d in &kept.problems {
        code = fail(d);
    }
    for p in &kept.removes {
        std::fs::remove_file(p).with_context(|| format!("cannot remove {}", p.display()))?;
    }
    for d in &kept.too_large {
        code = fail(d);
    }
    let mut out = io::stdout().lock();
    for w in &kept.writes {
        store::write_atomic(&w.path, w.text.as_bytes())
            .with_context(|| format!("cannot write {}", w.path.display()))?;
        writeln!(
            out,
            "recorded {}: {} request(s) on {} ({})",
            w.path.display(),
            w.requests,
            w.api.map_or("", api_name),
            if w.model.is_empty() {
                "no model named"
            } else {
                &w.model
            },
        )?;
    }
    Ok(code)
}

/// The proxy's exit status: the signal's, when one stopped it.
fn finish_proxy(ended: &Option<Ended>, code: ExitStatus) -> ExitStatus {
    // Without a command the session lasts until a stop signal, which the exit status says
    // (130 for Ctrl-C) once the cassettes are written, as the help promises.
    let stopped = ended.is_none() && crate::run::interrupt::requested();
    if stopped || matches!(ended, Some(Ended::Interrupted)) {
        crate::run::interrupt::status()
    } else {
        code
    }
}

/// The session that replays the cassettes already at the proxy's `--out` in a record mode:
/// matched as `exec` matches (the project file's `[replay]`), refusing what the mode does not
/// send to the provider.
fn replay_session(
    setup: &Setup,
    cassettes: &[PathBuf],
    mode: replay::RecordMode,
) -> Result<Session, Vec<FileResult>> {
    let matching = setup.replay_defaults().matching(&[], &[]);
    let mut loaded = crate::exec::load_cassettes(
        &setup.layout,
        cassettes,
        &replay::OnDivergence::Fail,
        &matching,
    )?;
    loaded.replay.record_mode = Some(mode);
    Ok(Session::replaying(
        loaded.cases.remove(0),
        crate::failure::FailureRules::default(),
        loaded.replay,
    ))
}
