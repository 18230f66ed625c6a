//! harness inside your own tests: a scenario's scripted model (or an agent's cassettes) served
//! on a loopback port of the test process, the code under test pointed at it, and the verdict
//! `harness exec` would give as values — the inferred trace of each conversation, its metrics
//! row, the expectations that did not hold, the golden comparison — plus one assertion that
//! fails the test with exec's report.
//!
//! ```no_run
//! // A test of your agent loop (here a stand-in that calls the endpoint once).
//! let served = harness::testing::serve("scenarios/serve/reflex-black-box.toml")
//!     .label("my-agent")
//!     .expect_profile("moltis")
//!     .start()
//!     .expect("the scenario loads");
//! let base = served.openai_base_url(); // http://127.0.0.1:PORT/v1
//! # let my_agent_loop = |_: &str| ();
//! my_agent_loop(&base);
//! served.verdict().assert_passed();
//! ```
//!
//! Cassettes (`harness proxy`'s recordings, a file or a folder of them) replay as `harness exec
//! CASSETTE…` replays them: each conversation from the cassette it binds to, judged by its
//! golden and by whether it follows the recording (a divergence fails it).
//!
//! The session is `harness serve`'s: every conversation the code under test starts (by its
//! first user message) is a case `<scenario id>@<label>` (then `….2`, …), served the chat
//! completions, responses and messages endpoints, streamed or not; its golden lives where
//! `harness run` keeps the scenario's (`snapshots/<scenario id>@<label>.snap`). A missing or
//! differing golden fails the verdict and writes a pending one beside it (not under `CI`),
//! which `harness diff` shows and `harness accept` keeps, as for any run. The paths are those
//! of the project file found from the current folder (a crate's root under `cargo test`), else
//! `scenarios/` and `snapshots/` there; [`Serve::layout`] names others.
//!
//! The server runs on a thread of its own, so the code under test may be blocking or async, on
//! any runtime; it stops when the verdict is taken or the [`Served`] handle drops.

use crate::diagnostic::Diagnostic;
use crate::exec::{self, Prepared, Reading, Settings};
use crate::provider::matching::Matching;
use crate::results::{CaseResult, FileResult, card};
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
pub struct Serve {
    path: PathBuf,
    label: String,
    expect: Option<String>,
    reading: Reading,
    layout: Option<Layout>,
    write_pending: Option<bool>,
}

/// Serve the scenario at `path` (TOML or JSON), judged by its golden only until
/// [`Serve::expect_profile`] names the expectations to hold; or replay the agent cassettes at
/// `path` (a `.cassette.json` file, or a folder of them).
pub fn serve(path: impl AsRef<Path>) -> Serve {
    Serve {
        path: path.as_ref().to_owned(),
        label: "test".to_owned(),
        expect: None,
        reading: Reading::default(),
        layout: None,
        write_pending: None,
    }
}

impl Serve {
    /// Name the runs: case id `<scenario id>@<label>` and golden
    /// `snapshots/<scenario id>@<label>.snap` (lower-case letters, digits, `-`, `_`; not a
    /// profile's name). Default `test`.
    #[must_use]
    pub fn label(mut self, label: &str) -> Self {
        label.clone_into(&mut self.label);
        self
    }

    /// Judge each conversation with the expectations the scenario states for `profile` (its
    /// own, or a `[compare.PROFILE]` table), whose `max_iterations` is also the cap.
    #[must_use]
    pub fn expect_profile(mut self, profile: &str) -> Self {
        self.expect = Some(profile.to_owned());
        self
    }

    /// Also read a tool result as failed when it matches this regular expression (after the
    /// scenario's own `[serve] failure` patterns).
    #[must_use]
    pub fn failure_pattern(mut self, regex: &str) -> Self {
        self.reading.failure.push(regex.to_owned());
        self
    }

    /// Read failures only by the provider's flag and the patterns, not the built-in shapes.
    #[must_use]
    pub fn no_builtin_failures(mut self) -> Self {
        self.reading.no_builtin_failures = true;
        self
    }

    /// Stream answers at this many wall seconds per scripted second of latency (default 0:
    /// at once).
    #[must_use]
    pub fn pace(mut self, seconds_per_second: f64) -> Self {
        self.reading.pace = seconds_per_second;
        self
    }

    /// Take scenario ids below `scenarios` and goldens from `snapshots` instead of the project's.
    #[must_use]
    pub fn layout(mut self, scenarios: impl Into<PathBuf>, snapshots: impl Into<PathBuf>) -> Self {
        self.layout = Some(Layout {
            scenarios: scenarios.into(),
            snapshots: snapshots.into(),
        });
        self
    }

    /// Write a pending golden (`.snap.new`) beside each missing or differing one, or not;
    /// default: unless `CI` is set, as every harness command does.
    #[must_use]
    pub fn write_pending(mut self, write: bool) -> Self {
        self.write_pending = Some(write);
        self
    }

    /// Load the scenario and serve it on a free port of 127.0.0.1.
    pub fn start(self) -> Result<Served, Error> {
        exec::check_label(&self.label).map_err(|d| Error::new(&self.path, vec![d]))?;
        if let Some(p) = self
            .expect
            .as_ref()
            .filter(|p| crate::policy::Config::profile(p).is_none())
        {
            let d = Diagnostic::new(format!("unknown profile `{p}`")).hint(format!(
                "known profiles: {}",
                crate::policy::PROFILES.join(", ")
            ));
            return Err(Error::new(&self.path, vec![d]));
        }
        let layout = match self.layout.clone() {
            Some(l) => l,
            None => project_layout().map_err(|d| Error::new(&self.path, vec![d]))?,
        };
        // `CI` as the commands read it: set, and not `0` or `false`.
        let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "0" && v != "false");
        let options = Options {
            paths: Vec::new(),
            layout,
            jobs: 1,
            write_pending: self.write_pending.unwrap_or(!ci),
            traces: None,
            also_profiles: Vec::new(),
            selection: crate::select::Selection::default(),
            repeat: 1,
            pending_dir: None,
            keep_traces: true,
            matching: Matching::default(),
        };
        let settings = Settings {
            command: Vec::new(),
            timeout_ms: 0,
            label: self.label.clone(),
            expect: self.expect.clone(),
            reading: self.reading.clone(),
            on_divergence: OnDivergence::default(),
            matching: Matching::default(),
            allow_exit: Vec::new(),
        };
        let (files, unreadable) = crate::store::discover(std::slice::from_ref(&self.path));
        if let Some((path, e)) = unreadable.into_iter().next() {
            let d = Diagnostic::new(crate::store::describe(&e))
                .hint(crate::store::hint_for(&e, "harness::testing::serve"));
            return Err(Error::new(&path, vec![d]));
        }
        let (what, session) = if files.iter().any(|f| crate::record::is_cassette(f)) {
            if self.expect.is_some() {
                let d = exec::no_expectations_in_cassettes();
                return Err(Error::new(&self.path, vec![d]));
            }
            let p = exec::prepare_cassettes(&settings, &options, &files).map_err(|errors| {
                let path = errors.first().map_or(self.path.clone(), |f| f.path.clone());
                let diags = errors
                    .into_iter()
                    .flat_map(|f| f.outcome.err().unwrap_or_default());
                Error::new(&path, diags.collect())
            })?;
            let what = What::Replay {
                cases: p.cases,
                paths: p.paths,
            };
            (what, p.session)
        } else {
            let prepared = exec::prepare(&settings, &options, &self.path)
                .map_err(|d| Error::new(&self.path, d))?;
            let session = Session::with_rules(prepared.case.clone(), prepared.rules.clone());
            (What::Scenario(Box::new(prepared)), session)
        };
        let server = Server::start_with(
            session,
            SocketAddr::from(([127, 0, 0, 1], 0)),
            Signals::Ignore,
            Timeouts {
                pace: self.reading.pace,
                ..Timeouts::default()
            },
            crate::limits::MAX_SESSION_REQUEST_BYTES,
        )
        .map_err(|e| {
            let d = Diagnostic::new(format!("cannot serve on 127.0.0.1: {e}"))
                .hint("the test needs a free loopback port");
            Error::new(&self.path, vec![d])
        })?;
        Ok(Served {
            server: Some(server),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            path: self.path,
            settings,
            options,
            what,
            ci,
        }
        .with_addr())
    }
}

/// The project's layout from the current folder, or `scenarios/` and `snapshots/` there.
fn project_layout() -> Result<Layout, Diagnostic> {
    let cwd = std::env::current_dir()
        .map_err(|e| Diagnostic::new(format!("cannot read the current folder: {e}")))?;
    Ok(match crate::project::discover(&cwd)? {
        Some(p) => Layout {
            scenarios: p.scenarios,
            snapshots: p.snapshots,
        },
        None => Layout {
            scenarios: PathBuf::from("scenarios"),
            snapshots: PathBuf::from("snapshots"),
        },
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

/// A scenario being served; its endpoints are the base URLs the code under test takes.
pub struct Served {
    server: Option<Server>,
    addr: SocketAddr,
    path: PathBuf,
    settings: Settings,
    options: Options,
    what: What,
    ci: bool,
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
    fn with_addr(mut self) -> Self {
        if let Some(s) = &self.server {
            self.addr = s.addr();
        }
        self
    }

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

    /// The environment `harness exec` hands an agent command: `OPENAI_BASE_URL`,
    /// `ANTHROPIC_BASE_URL` and placeholder API keys, for a child process the test starts.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("OPENAI_BASE_URL", self.openai_base_url()),
            ("ANTHROPIC_BASE_URL", self.anthropic_base_url()),
            ("OPENAI_API_KEY", "harness".to_owned()),
            ("ANTHROPIC_API_KEY", "harness".to_owned()),
        ]
    }

    /// Stop serving and judge every conversation the code under test had with the scenario.
    pub fn verdict(mut self) -> Verdict {
        let session = match self.server.take().map(Server::stop) {
            Some(Ok(session)) => session,
            Some(Err(e)) => return self.failed(format!("the server failed: {e}")),
            None => return self.failed("the server was already stopped".to_owned()),
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
            // A divergence the session only notes (none under the default policy) goes nowhere.
            What::Replay { cases, paths } => exec::judge_replayed(
                &self.settings,
                &self.options,
                cases,
                paths,
                &session,
                &[],
                &mut std::io::sink(),
            ),
        };
        Verdict::of(files, self.ci)
    }

    fn failed(&self, message: String) -> Verdict {
        let file = FileResult {
            path: self.path.clone(),
            outcome: Err(vec![Diagnostic::new(message)]),
        };
        Verdict::of(vec![file], self.ci)
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
pub struct Verdict {
    files: Vec<FileResult>,
    passed: bool,
    report: String,
}

impl Verdict {
    fn of(files: Vec<FileResult>, ci: bool) -> Self {
        let mut out = Vec::new();
        // Writing to memory cannot fail.
        let status = exec::report_to(anstream::StripStream::new(&mut out), &files, ci, "exec");
        Self {
            passed: status.is_ok_and(crate::results::ExitStatus::is_ok),
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
    pub fn conversations(&self) -> Vec<&CaseResult> {
        self.files
            .iter()
            .filter_map(|f| f.outcome.as_ref().ok())
            .flatten()
            .collect()
    }

    /// The trace inferred for the `n`-th conversation (0-based), as its golden shows it.
    pub fn trace(&self, n: usize) -> Option<&[TimedEvent]> {
        let detail = self.conversations().get(n)?.detail.as_ref()?;
        Some(&detail.events)
    }

    /// Why something could not be judged (a trace past the run limits, the server failing).
    pub fn errors(&self) -> Vec<&Diagnostic> {
        self.files
            .iter()
            .filter_map(|f| f.outcome.as_ref().err())
            .flatten()
            .collect()
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

    /// What is wrong, each with its place in the file when it has one.
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
