//! harness inside your own tests: a scenario's scripted model served on a loopback port of the
//! test process, the code under test pointed at it, and the verdict `harness exec` would give
//! as values — the inferred trace of each conversation, its metrics row, the expectations that
//! did not hold, the golden comparison — plus one assertion that fails the test with exec's
//! report.
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
use crate::report::{DEFAULT_DIFF_LIMIT, Terminal};
use crate::results::{CaseResult, FileResult, Reporter, card};
use crate::run::Options;
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
}

/// Serve the scenario at `path` (TOML or JSON), judged by its golden only until
/// [`Serve::expect_profile`] names the expectations to hold.
pub fn serve(path: impl AsRef<Path>) -> Serve {
    Serve {
        path: path.as_ref().to_owned(),
        label: "test".to_owned(),
        expect: None,
        reading: Reading::default(),
        layout: None,
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
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
        let options = Options {
            paths: Vec::new(),
            layout,
            jobs: 1,
            write_pending: !ci,
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
        let prepared = exec::prepare(&settings, &options, &self.path)
            .map_err(|d| Error::new(&self.path, d))?;
        let session = Session::with_rules(prepared.case.clone(), prepared.rules.clone());
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
            prepared,
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

/// A scenario being served; its endpoints are the base URLs the code under test takes.
pub struct Served {
    server: Option<Server>,
    addr: SocketAddr,
    path: PathBuf,
    settings: Settings,
    options: Options,
    prepared: Prepared,
    ci: bool,
}

impl fmt::Debug for Served {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Served")
            .field("scenario", &self.prepared.scenario_id)
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
        let judged = exec::judge_session(
            &self.settings,
            &self.options,
            &self.prepared,
            &session,
            Vec::new(),
            card::End::Exited(Some(0)),
        );
        let file = FileResult {
            path: self.path.clone(),
            outcome: judged.map_err(|d| vec![d]),
        };
        Verdict::of(file, self.ci)
    }

    fn failed(&self, message: String) -> Verdict {
        let file = FileResult {
            path: self.path.clone(),
            outcome: Err(vec![Diagnostic::new(message)]),
        };
        Verdict::of(file, self.ci)
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
    file: FileResult,
    report: String,
}

impl Verdict {
    fn of(file: FileResult, ci: bool) -> Self {
        let mut out = Vec::new();
        {
            let mut terminal = Terminal::new(anstream::StripStream::new(&mut out), ci)
                .for_exec(true)
                .with_detail(DEFAULT_DIFF_LIMIT, false)
                .require_cases(Some(Diagnostic::new("no conversation was judged")));
            // Writing to memory cannot fail.
            let _ = terminal.file(&file);
            let _ = terminal.finish();
        }
        Self {
            file,
            report: String::from_utf8_lossy(&out).into_owned(),
        }
    }

    /// Did every conversation hold its expectations and match its golden (and was there one)?
    pub fn passed(&self) -> bool {
        match &self.file.outcome {
            Ok(cases) => !cases.is_empty() && cases.iter().all(CaseResult::passed),
            Err(_) => false,
        }
    }

    /// Each conversation's result: its case id, metrics row, golden comparison and the
    /// expectations that did not hold. Empty when the scenario could not be judged.
    pub fn conversations(&self) -> &[CaseResult] {
        self.file.outcome.as_deref().unwrap_or(&[])
    }

    /// The trace inferred for the `n`-th conversation (0-based), as its golden shows it.
    pub fn trace(&self, n: usize) -> Option<&[TimedEvent]> {
        let detail = self.conversations().get(n)?.detail.as_ref()?;
        Some(&detail.events)
    }

    /// Why the scenario could not be judged (a trace past the run limits, the server failing).
    pub fn errors(&self) -> &[Diagnostic] {
        self.file.outcome.as_ref().err().map_or(&[], Vec::as_slice)
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
