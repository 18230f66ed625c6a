//! harness — a record/replay evaluation and regression harness for LLM agent loops.
//!
//! Scripted scenarios replay through one loop engine whose defences reproduce real runtimes as
//! profiles; each run becomes a deterministic trace, compared with a reviewed golden and folded
//! into metrics. Black-box agents are served the same scripts over HTTP, recorded through a
//! proxy and replayed from cassettes; recorded transcripts are swept by loop detectors.
//! `ARCHITECTURE.md` tells how the parts fit and where each kind of change goes.
//!
//! The layers, from the top down. A module imports only modules on layers below its own, test
//! modules included; `tests/integration/mapping.rs` reads this picture and fails on any import
//! that points sideways or up, and on a module missing from it.
//!
//! ```text
//! cli, fuzzing, testing           the commands; fuzz targets' bodies; serving inside your tests
//! exec, sweep                     black-box agents run and judged; detector sweeps over recorded runs
//! run, serve, verdict             the runner; served sessions and the proxy; a run's outputs and verdict
//! record, report                  live recording and cassettes; terminal, CSV, JSON, JUnit, HTML outputs
//! engine, expect, project, results  the loop; expectations; the project file; what a run produced
//! import, metrics, mock, select, store, tool   transcripts in; metrics; the scripted model; selection; files; tools
//! failure                         which tool results read as failed (served, inferred, imported alike)
//! detector, scenario              post-hoc loop detectors; the scenario format
//! policy, provider, trace         the defences; the providers' wire formats; trace events
//! diagnostic, llm                 what a user is told and exit statuses; the model interface
//! escape, json, limits, snapshot, vocabulary   shared words, bounds and helpers
//! ```
//!
//! Rules the picture cannot show:
//! - The engine and everything below it are pure: no files, clocks, threads or network. I/O
//!   happens at named edges: `store` (files), `run`, `sweep` and `exec` (files, threads,
//!   processes), `record` and `serve` (network), `report` and `verdict` (outputs), `cli`.
//! - Outputs are deterministic: ordered maps, ids derived from inputs, virtual time.
//! - Only `cli` knows clap and anyhow; everything below reports problems as
//!   [`diagnostic::Diagnostic`] and commands end with a [`diagnostic::ExitStatus`].
//! - `fuzzing` exists for the library's tests and the fuzz crate (feature `fuzzing`) only.

pub mod cli;
pub mod detector;
pub mod diagnostic;
pub mod engine;
pub mod escape;
pub mod exec;
pub mod expect;
pub mod failure;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod import;
pub mod json;
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
pub mod testing;
pub mod tool;
pub mod trace;
pub mod verdict;
pub mod vocabulary;
