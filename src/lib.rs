//! harness — a record/replay evaluation and regression harness for LLM agent loops.
//!
//! Scripted scenarios replay through one loop engine whose defences reproduce real runtimes as
//! profiles; each run becomes a deterministic trace, compared with a reviewed golden and folded
//! into metrics.
//!
//! Layers (dependencies point down only, test modules included; no module imports one above
//! it, and the test `mapping::the_module_layers_have_no_cycle` checks the graph has no cycle):
//!
//! ```text
//! cli → {serve → gate, sweep} → run → {record, report} → {engine, expect, results, store}
//!     → {mock, tool, select, metrics, snapshot} → scenario → {policy, trace, provider} → llm
//!     → {kinds, json, limits, text}
//! sweep → import → detector → {policy, trace, scenario}   (import's tests read runs through
//!   detector's view; neither's code uses the other)
//! cli → project → {store, scenario, policy}
//! ```
//!
//! `kinds` is the vocabulary the scenario format, the policies and the trace share (how a run
//! ended, approval decisions, prices); `results` is what a run produced (case and file results,
//! the [`results::Reporter`] that consumes them, `--repeat` folding, exit codes), below both
//! the runner and every output; `select` is the case selection and sharding both `run` and
//! `gate` use; `mock` is the scripted model, a scenario's script as an [`llm::Model`].
//!
//! `project` reads the project file, `harness.toml`, found by walking up from the current
//! folder: the scenarios root, goldens folder, baseline and run defaults every command resolves
//! its paths from.
//!
//! The engine and everything below it are pure: no files, clocks, threads or network. Only
//! `store` (files), `run` and `sweep` (files, threads), `record` (network, files), `report`
//! (output streams), `gate` (result and baseline files), `serve` (a server, a child process)
//! and `cli` touch the outside.
//!
//! `gate` is the CI regression gate around a run: selection and shards (`select`, pure, also
//! used by `run`), repeats (`results::repeat`), metric baselines (`verdict::baseline`, pure),
//! and the outputs made from collected results — JSON results, JUnit, GitHub annotations and
//! job summary (`report::{json, junit, github}`) — which `harness merge` rebuilds from shards.
//!
//! `limits` holds every size and count harness accepts (file sizes, nesting, trace length and
//! text, conversation size, virtual time, iteration caps, tool output, prices, request bodies
//! and session bytes, read timeouts, recorded answers, cassette exchanges, stream events), pure
//! and shared by all formats; the scenario validator, the engine (trace length and text,
//! conversation, virtual time, counted as they grow), `store` (file sizes), the baseline,
//! results and cassette readers, the recorder and `serve` enforce them. `run::interrupt` turns
//! Ctrl-C into a stop between scenario files (exit code [`results::EXIT_INTERRUPTED`], 130);
//! every file is written atomically by `store` (write, then rename), and `store::guard` decides
//! what happens to links, FIFOs and devices where harness reads and writes. `text` spells out
//! control characters wherever input text reaches a line-based output. `fuzz/` (outside the
//! build) fuzzes the readers: scenarios, baselines, results, cassettes (with a strict replay),
//! transcripts, SSE streams, served requests, and the scrubbing of streams assembled by index;
//! each target's body is a function of `fuzzing`, which the normal test suite runs on every
//! seed and finding.
//!
//! The engine has two loops: the agent loop (`engine`), whose defences are policies
//! (`policy`, one file each) bundled into the profiles `none`, `ironclaw`, `moltis` and
//! `agentloop`; and the plan/step executor (`engine::plan_step`), selected by the `plan-step`
//! profile. `docs/profiles.md` maps each upstream test of those runtimes to its scenario or
//! unit test. Live recording (`record/`) runs the same engine with a model over HTTP and tees
//! every exchange into a cassette; replaying the cassette is a player model under a strict
//! request match. The providers' wire formats (`provider/`) are pure translation used both
//! ways. Black-box agents (`serve/`): the scenario's mock answers real requests over HTTP in
//! both formats (`harness serve`); the trace is inferred from what the agent sent
//! (`serve::infer`, pure) and judged as a run's case, for a command `harness exec` starts. Any
//! agent's real session is recorded by `serve::proxy` (`harness proxy`: a forwarding proxy that
//! writes one cassette per conversation) and replayed by `serve::replay` (`harness exec
//! CASSETTE`: recorded answers while the requests match, then the divergence policy).
//!
//! The benchmarking side: `import` maps recorded transcripts (tau-bench, tau2, SWE-agent,
//! ToolBench, OpenAI and Anthropic message lists) onto trace events; `detector` holds the
//! post-hoc loop detectors (one file each, pure: a finished run in, the first firing position
//! and verdict out; several reuse the live policies' state machines); `sweep` reads corpora in
//! parallel chunks, labels runs, and scores detector settings into CSV rows and an SVG plot.
//! `import` and `detector` are pure; `sweep` (files, threads) is an edge like `run`.
//!
//! Exit codes of `harness run`: [`results::EXIT_OK`] (0) all passed, [`results::EXIT_FAILED`] (1)
//! a golden mismatch, missing or orphaned golden or failed expectation,
//! [`results::EXIT_BAD_INPUT`] (2) bad input or usage, [`results::EXIT_METRIC_REGRESSION`] (3)
//! only metrics regressed against `--baseline`, [`results::EXIT_INTERRUPTED`] (130) Ctrl-C.

pub mod cli;
pub mod detector;
pub mod engine;
pub mod exec;
pub mod expect;
pub mod fuzzing;
pub mod verdict;
pub mod import;
pub mod json;
pub mod vocabulary;
pub mod limits;
pub mod llm;
pub mod metrics;
pub mod mock;
pub mod policy;
pub mod project;
pub mod provider;
pub mod record;
pub mod report;
pub mod results;
pub mod run;
pub mod scenario;
pub mod select;
pub mod serve;
pub mod snapshot;
pub mod store;
pub mod sweep;
pub mod escape;
pub mod tool;
pub mod trace;
