//! harness — a record/replay evaluation and regression harness for LLM agent loops.
//!
//! Scripted scenarios replay through one loop engine whose defences reproduce real runtimes as
//! profiles; each run becomes a deterministic trace, compared with a reviewed golden and folded
//! into metrics.
//!
//! Layers (dependencies point down only):
//!
//! ```text
//! cli → gate → run → {store, report} → {engine, snapshot, metrics, expect} → {policy, tool, llm, trace, scenario} → limits
//! ```
//!
//! The engine and everything below it are pure: no files, clocks, threads or network. Only
//! `store` (files), `run` (threads), `report` (output streams), `gate` (result and baseline
//! files) and `cli` touch the outside.
//!
//! `gate` is the CI regression gate around a run: selection and shards (`gate::select`, pure,
//! also used by `run`), repeats (`gate::repeat`), metric baselines (`gate::baseline`, pure),
//! and the outputs made from collected results — JSON results, JUnit, GitHub annotations and
//! job summary (`report::{json, junit, github}`) — which `harness merge` rebuilds from shards.
//!
//! `limits` holds every size and count harness accepts (file sizes, nesting, trace length,
//! virtual time, iteration caps, tool output, request bodies), pure and shared by all formats;
//! the scenario validator, the engine (trace length, virtual time), `store` (file sizes) and the
//! baseline and results readers enforce them. `run::interrupt` turns Ctrl-C into a stop between
//! scenario files (exit code [`report::EXIT_INTERRUPTED`], 130); every file is written
//! atomically by `store` (write, then rename). `fuzz/` (outside the build) fuzzes the readers.
//!
//! The engine has two loops: the agent loop (`engine`), whose defences are policies
//! (`policy`, one file each) bundled into the profiles `none`, `ironclaw`, `moltis` and
//! `agentloop`; and the plan/step executor (`engine::plan_step`), selected by the `plan-step`
//! profile. `docs/profiles.md` maps each upstream test of those runtimes to its scenario or
//! unit test. Post-hoc detectors (`detector/`) and live recording (`record/`) are not built yet.
//!
//! Exit codes of `harness run`: [`report::EXIT_OK`] (0) all passed, [`report::EXIT_FAILED`] (1)
//! a golden mismatch, missing or orphaned golden or failed expectation,
//! [`report::EXIT_BAD_INPUT`] (2) bad input or usage, [`report::EXIT_METRIC_REGRESSION`] (3)
//! only metrics regressed against `--baseline`, [`report::EXIT_INTERRUPTED`] (130) Ctrl-C.

pub mod cli;
pub mod engine;
pub mod expect;
pub mod gate;
pub mod json;
pub mod limits;
pub mod llm;
pub mod metrics;
pub mod policy;
pub mod report;
pub mod run;
pub mod scenario;
pub mod snapshot;
pub mod store;
pub mod tool;
pub mod trace;
