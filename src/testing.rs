//! harness inside your own tests: a scenario's scripted model (or an agent's cassettes) served
//! on a loopback port of the test process, the code under test pointed at it, and the verdict
//! `harness exec` would give as values — the inferred trace of each conversation, its metrics
//! row, the expectations that did not hold, the golden comparison — plus one assertion that
//! fails the test with exec's report.
//!
//! ```no_run
//! // A test of your agent loop (here a stand-in that calls the endpoint once).
//! let served = harness::testing::serve("scenarios/serve/reflex-black-box.toml", "my-agent")
//!     .expect_profile("moltis")
//!     .start()
//!     .expect("the scenario loads");
//! let base = served.openai_base_url(); // http://127.0.0.1:PORT/v1
//! # let my_agent_loop = |_: &str| ();
//! my_agent_loop(&base);
//! served.verdict().assert_passed();
//! ```
//!
//! The label names the test's runs: every conversation the code under test starts (by its
//! first user message) is a case `<scenario id>@<label>` (then `….2`, …), with its golden
//! `snapshots/<scenario id>@<label>.snap` beside the scenario's own; give each test its own. The
//! session is `harness serve`'s: the chat completions, responses and messages endpoints,
//! streamed or not. A missing or differing golden fails the verdict and writes a pending one
//! beside it (not under `CI`, unless [`Serve::write_pending`] says so), which `harness diff`
//! shows and `harness accept` keeps, as for any run. The paths are those of the project file
//! found from the current folder (a crate's root under `cargo test`), else `scenarios/` and
//! `snapshots/` there; [`Serve::layout`] names others. The scenario must lie below the scenarios
//! folder, so its id (and its goldens' names) are the same on every machine.
//!
//! Cassettes (`harness proxy`'s recordings, a file or a folder of them) replay as `harness exec
//! CASSETTE…` replays them, with the project file's `[replay]` settings: each conversation from
//! the cassette it binds to, judged by its golden and by whether it follows the recording (a
//! divergence fails it).
//!
//! The server runs on a thread of its own, so the code under test may be blocking or async, on
//! any runtime. Judging happens only in [`Served::verdict`]; dropping the handle stops the
//! server without a verdict. Both wait for open connections (up to two seconds), so drop your
//! clients, or let your tasks finish, first.

use crate::diagnostic::Diagnostic;
use crate::exec::{self, Prepared, Reading, Settings};
use crate::provider::matching::Matching;
use crate::results::{CaseResult, ExitStatus, FileResult, card};
use crate::run::Options;
use crate::scenario::Case;
use crate::serve::Session;
use crate::serve::http::{Server, Signals, Timeouts};
use crate::serve::replay::OnDivergence;
use crate::store::Layout;
use crate::trace::TimedEvent;
use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// How a scenario is served to a test: [`serve`] starts one.
#[derive(Debug, Clone)]
#[must_use = "a Serve does nothing until started"]
pub struct Serve {
    path: PathBuf,
    label: String,
    expect: Option<String>,
    reading: Reading,
    layout: Option<Layout>,
    write_pending: Option<bool>,
    golden: bool,
}

/// Serve the scenario at `path` (TOML or JSON) — judged by its golden only until
/// [`Serve::expect_profile`] names the expectations to hold — or replay the agent cassettes at
/// `path` (a `.cassette.json` file, or a folder of them). `label` names the runs: case ids
/// `<id>@<label>` and their goldens (lower-case letters, digits, `-`, `_`; not a profile's
/// name); give each test its own.
pub fn serve(path: impl AsRef<Path>, label: &str) -> Serve {
    Serve {
        path: path.as_ref().to_owned(),
        label: label.to_owned(),
        expect: None,
        reading: Reading::default(),
        layout: None,
        write_pending: None,
        golden: true,
    }
}

impl Serve {
    /// Judge each conversation with the expectations the scenario states for `profile` (its
    /// own, or a `[compare.PROFILE]` table), whose `max_iterations` is also the cap.
    pub fn expect_profile(mut self, profile: &str) -> Self {
        self.expect = Some(profile.to_owned());
        self
    }

    /// Also read a tool result as failed when it matches this regular expression (after the
    /// scenario's own `[serve] failure` patterns).
    pub fn failure_pattern(mut self, regex: &str) -> Self {
        self.reading.failure.push(regex.to_owned());
        self
    }

    /// Read failures only by the provider's flag and the patterns, not the built-in shapes.
    pub fn no_builtin_failures(mut self) -> Self {
        self.reading.no_builtin_failures = true;
        self
    }

    /// Stream answers at this many wall seconds per scripted second of latency (default 0:
    /// at once).
    pub fn pace(mut self, seconds_per_second: f64) -> Self {
        self.reading.pace = seconds_per_second;
        self
    }

    /// Take scenario ids below `scenarios` and goldens from `snapshots` instead of the project's.
    pub fn layout(mut self, scenarios: impl Into<PathBuf>, snapshots: impl Into<PathBuf>) -> Self {
        self.layout = Some(Layout {
            scenarios: scenarios.into(),
            snapshots: snapshots.into(),
        });
        self
    }

    /// Write a pending golden (`.snap.new`) beside each missing or differing one, or not;
    /// default: unless `CI` is set, as every harness command does.
    pub fn write_pending(mut self, write: bool) -> Self {
        self.write_pending = Some(write);
        self
    }

    /// With cassettes: judge the replay by the recording alone — every request matched, every
    /// recorded exchange played — with no golden to accept (`exec --cassettes-only`).
    pub fn cassettes_only(mut self) -> Self {
        self.golden = false;
        self
    }

    /// Load the scenario (or cassettes) and serve it on a free port of 127.0.0.1.
    pub fn start(self) -> Result<Served, Error> {
        let refuse = |d: Diagnostic| Error::new(&self.path, vec![d]);
        exec::check_label(&self.label).map_err(refuse)?;
        if let Some(p) = self
            .expect
            .as_ref()
            .filter(|p| !crate::policy::Config::is_profile(p))
        {
            return Err(refuse(
                Diagnostic::new(format!("unknown profile `{p}`"))
                    .hint(crate::policy::profiles::known()),
            ));
        }
        let (layout, matching) = match self.layout.clone() {
            Some(l) => (l, project()?.1),
            None => project()?,
        };
        let write_pending = self.write_pending.unwrap_or(!ci());
        let options = Options {
            write_pending,
            keep_traces: true,
            ..Options::judging(layout, matching.clone())
        };
        let mut settings = Settings::without_command(
            &self.label,
            self.expect.clone(),
            self.reading.clone(),
            OnDivergence::default(),
            matching,
        );
        settings.golden = self.golden;
        let (files, unreadable) = crate::store::discover(std::slice::from_ref(&self.path));
        if let Some((path, e)) = unreadable.into_iter().next() {
            let d = Diagnostic::new(crate::store::describe(&e))
                .hint(crate::store::hint_for(&e, "harness::testing::serve"));
            return Err(Error::new(&path, vec![d]));
        }
        let replaying = files.iter().any(|f| crate::record::is_cassette(f));
        if !self.golden && !replaying {
            return Err(refuse(Diagnostic::new(
                "cassettes_only() judges a replay by its recording, and no cassette was given",
            )));
        }
        let (what, session) = if replaying {
            if self.expect.is_some() {
                return Err(refuse(exec::no_expectations_in_cassettes()));
            }
            let p = exec::prepare_cassettes(&settings, &options, &files).map_err(|errors| {
                let diags = errors.into_iter().flat_map(|f| {
                    let path = f.path;
                    f.outcome
                        .err()
                        .unwrap_or_default()
                        .into_iter()
                        .map(move |d| d.in_file(&path))
                });
                Error::new(&self.path, diags.collect())
            })?;
            let what = What::Replay {
                cases: p.cases,
                paths: p.paths,
            };
            (what, p.session)
        } else {
            if files.len() != 1 || files[0] != self.path {
                return Err(refuse(
                    Diagnostic::new("serve answers from one scenario, or from agent cassettes")
                        .hint("name one scenario file, or cassette files and folders"),
                ));
            }
            if crate::store::strip_prefix_lenient(&self.path, &options.layout.scenarios).is_none() {
                return Err(refuse(
                    Diagnostic::new(format!(
                        "the scenario is not below the scenarios folder {}: its id, and so its goldens' names, would depend on where the checkout is",
                        options.layout.scenarios.display()
                    ))
                    .hint("move it below that folder, or name the folders with .layout(scenarios, snapshots)"),
                ));
            }
            let prepared = exec::prepare(&settings, &options, &self.path)
                .map_err(|d| Error::new(&self.path, d))?;
            let session = Session::with_rules(prepared.case.clone(), prepared.rules.clone())
                .preferring(settings.reading.bind.clone());
            (What::Scenario(Box::new(prepared)), session)
        };
        let read_limit = session.read_limit();
        let server = Server::start_with(
            session,
            SocketAddr::from(([127, 0, 0, 1], 0)),
            Signals::Ignore,
            Timeouts {
                pace: self.reading.pace,
                ..Timeouts::default()
            },
            read_limit,
        )
        .map_err(|e| {
            refuse(
                Diagnostic::new(format!("cannot serve on 127.0.0.1: {e}"))
                    .hint("the test needs a free loopback port"),
            )
        })?;
        Ok(Served {
            addr: server.addr(),
            server: Some(server),
            path: self.path,
            settings,
            options,
            what,
        })
    }
}

/// `CI` as the commands read it: set, and not `0` or `false`.
fn ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false")
}

/// The project's layout and replay matching from the current folder, or `scenarios/` and
/// `snapshots/` there and every request part compared.
fn project() -> Result<(Layout, Matching), Error> {
    let here = Path::new(".");
    let cwd = std::env::current_dir().map_err(|e| {
        Error::new(
            here,
            vec![Diagnostic::new(format!(
                "cannot read the current folder: {e}"
            ))],
        )
    })?;
    let project = crate::project::discover(&cwd).map_err(|d| Error::new(here, vec![d]))?;
    Ok(match project {
        Some(p) => (
            Layout {
                scenarios: p.scenarios,
                snapshots: p.snapshots,
            },
            p.config.replay.matching(&[], &[]),
        ),
        None => (
            Layout {
                scenarios: PathBuf::from("scenarios"),
                snapshots: PathBuf::from("snapshots"),
            },
            Matching::default(),
        ),
    })
}

/// What is served.
enum What {
    /// A scenario's scripted model, and the case that judges it.
    Scenario(Box<Prepared>),
    /// Agent cassettes: each one's case and path.
    Replay {
        cases: Vec<Case>,
        paths: Vec<PathBuf>,
    },
}

/// A scenario being served; its endpoints are the base URLs the code under test takes. Take
/// the [verdict](Served::verdict): dropping it stops the server without judging.
#[must_use = "the verdict judges what the code under test did; dropping it judges nothing"]
pub struct Served {
    server: Option<Server>,
    addr: SocketAddr,
    path: PathBuf,
    settings: Settings,
    options: Options,
    what: What,
}

impl fmt::Debug for Served {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Served")
            .field("path", &self.path)
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Served {
    /// The address served (127.0.0.1 and a free port).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT`: what an Anthropic client takes as its base URL.
    pub fn anthropic_base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// `http://127.0.0.1:PORT/v1`: what an OpenAI client takes as its base URL.
    pub fn openai_base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The environment `harness exec` hands an agent command: every provider's base-URL
    /// variables (`OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, …) and placeholder API keys, for a
    /// child process the test starts.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        let base = self.anthropic_base_url();
        let mut env = Vec::new();
        for p in crate::provider::Provider::ALL {
            env.extend(p.base_url_vars().iter().map(|(v, f)| (*v, f.url(&base))));
            env.extend(p.key_groups().iter().map(|g| (g[0], "harness".to_owned())));
        }
        env
    }

    /// Stop serving and judge every conversation the code under test had with the scenario.
    pub fn verdict(mut self) -> Verdict {
        let stopped = match self.server.take() {
            Some(server) => server.stop(),
            // Only `verdict` (which consumes the handle) and `Drop` take the server.
            None => unreachable!("a Served handle holds its server until its verdict"),
        };
        let session = match stopped {
            Ok(session) => session,
            Err(e) => {
                let file = FileResult {
                    path: self.path.clone(),
                    outcome: Err(vec![Diagnostic::new(format!("the server failed: {e}"))]),
                };
                return Verdict::of(vec![file], !self.options.write_pending);
            }
        };
        let files = match &self.what {
            What::Scenario(prepared) => vec![FileResult {
                path: self.path.clone(),
                outcome: exec::judge_session(
                    &self.settings,
                    &self.options,
                    prepared,
                    &session,
                    Vec::new(),
                    card::End::Exited(Some(0)),
                )
                .map_err(|d| vec![d]),
            }],
            // Under the default policy a divergence fails its case; no note is left over.
            What::Replay { cases, paths } => exec::judge_replayed(
                &self.settings,
                &self.options,
                cases,
                paths,
                &session,
                exec::Ending::default(),
                &mut std::io::sink(),
            ),
        };
        Verdict::of(files, !self.options.write_pending)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            let _ = server.stop();
        }
    }
}

/// What the code under test did with the scenario, judged as `harness exec` judges it.
#[derive(Debug, Clone)]
#[must_use = "a verdict fails nothing until asserted"]
pub struct Verdict {
    files: Vec<FileResult>,
    passed: bool,
    report: String,
}

impl Verdict {
    /// `quiet_pending`: pending goldens were not written (the report says so, as under `CI`).
    fn of(files: Vec<FileResult>, quiet_pending: bool) -> Self {
        let mut out = Vec::new();
        // Writing to memory cannot fail.
        let status = exec::report_to(
            anstream::StripStream::new(&mut out),
            &files,
            quiet_pending,
            "exec",
        );
        Self {
            passed: status.is_ok_and(ExitStatus::is_ok),
            files,
            report: String::from_utf8_lossy(&out).into_owned(),
        }
    }

    /// Did every conversation hold its expectations and match its golden (and was there one)?
    pub fn passed(&self) -> bool {
        self.passed
    }

    /// Each conversation's result, in order (a replay's by cassette): its case id, metrics row,
    /// golden comparison and the expectations that did not hold.
    pub fn conversations(&self) -> impl Iterator<Item = &CaseResult> {
        self.files
            .iter()
            .filter_map(|f| f.outcome.as_ref().ok())
            .flatten()
    }

    /// The trace inferred for the `n`-th conversation (0-based), as its golden shows it.
    pub fn trace(&self, n: usize) -> Option<&[TimedEvent]> {
        let detail = self.conversations().nth(n)?.detail.as_ref()?;
        Some(&detail.events)
    }

    /// Why something could not be judged (a trace past the run limits, the server failing).
    pub fn errors(&self) -> impl Iterator<Item = &Diagnostic> {
        self.files
            .iter()
            .filter_map(|f| f.outcome.as_ref().err())
            .flatten()
    }

    /// The report `harness exec` prints for this verdict (no colours).
    pub fn report(&self) -> &str {
        &self.report
    }

    /// Fail the test with the report unless the verdict [passed](Self::passed).
    #[track_caller]
    pub fn assert_passed(&self) {
        assert!(self.passed(), "{}", self.report);
    }
}

/// A scenario that could not be served: its located errors.
#[derive(Debug, Clone)]
pub struct Error {
    path: PathBuf,
    diagnostics: Vec<Diagnostic>,
}

impl Error {
    fn new(path: &Path, diagnostics: Vec<Diagnostic>) -> Self {
        Self {
            path: path.to_owned(),
            diagnostics,
        }
    }

    /// What was given to serve.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What is wrong, each with its place (its file, when it is not [`Error::path`]).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.diagnostics.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}", d.clone().in_file(&self.path))?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}
