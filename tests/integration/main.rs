//! The one integration-test binary: every test runs the real `harness` binary in a temporary
//! project (scenarios copied in), with `CI` removed or set explicitly and `NO_COLOR=1`.
//!
//! - `invalid`: every file of `fixtures/invalid/` is rejected with a located error and a hint.
//! - `golden_workflow`: run → accept → change → diff → accept/reject, CI mode, orphans.
//! - `determinism`: identical goldens, CSV, traces and terminal output for any `--jobs`.
//! - `schema`: the committed JSON Schema matches `harness schema`.
//! - `cli`: usage errors, `profile`, `trace`, `--profile`.
//! - `mapping`: `docs/profiles.md` names only scenarios and tests that exist, and all of them.
//! - `otlp`: `--otlp` exports read back by `import` and `sweep`, byte-identical for any `--jobs`.
//! - `gate`: the CI gate: JUnit structure, merged shards = one run, metric baselines, GitHub
//!   annotations and job summary, `--pending-dir` on CI, `--filter` and `list`.
//! - `record`: record against stub providers on 127.0.0.1, replay offline, secrets, drift.
//! - `sweep`: `harness sweep` / `harness import` over `fixtures/transcripts/` and
//!   the public corpus in `corpus/`.
//! - `serve`: `harness exec` and `harness serve` with a reference agent on 127.0.0.1.
//! - `proxy`: `harness proxy` records the reference agent against stub providers; `harness exec
//!   CASSETTE` replays it offline, to the same agent and to its next version.
//! - `recordings`: recordings survive how providers write their streams and how agents close
//!   them (issue 27).
//! - `outputs`: the main commands' whole output (exit code, stdout, stderr) against reviewed
//!   snapshots.
//! - `browser` (ignored unless `--ignored`; `.ci/browser` runs them): the HTML reports in
//!   Debian's headless Chromium, driven over the DevTools protocol by `cdp`.
//! - `project_file`: `harness.toml` found from any subfolder, its paths and run defaults used by
//!   every command, its mistakes located; the repository's own keeps the README commands.
//! - `trust`: what a new user hit (issue 17): `list` and `run` agree on every bundled path;
//!   selections of nothing, misspelt filters and missing paths are errors, not greens.
//! - `suite`: `harness suite`, the report card of the engine's profiles and of an agent command
//!   on the bundled failure-mode suite (`scenarios/suite`).
//! - `robust`: Ctrl-C (partial summary, exit 130), SIGKILL at random moments (no half-written
//!   file), outputs independent of locale, timezone, folder, environment and file order.
//! - `testing`: `harness::testing` in this process: a scenario and a proxy's cassettes served to
//!   the reference agent, judged, failing with exec's report.
//! - `docs`: the README and the book held to the binary: pages in the summary, links that
//!   resolve, every command shown parses or runs, every file shown loads, every command has its
//!   row in the command table, and every figure of the suite's size is the suite's.
//! - `init`: `harness init` in an empty folder, then the commands it prints, to green.
//! - `arguments`: arguments generated from the tool schemas real libraries emit, checked by an
//!   independent JSON Schema validator.
//! - `harden`: attacks on the edges — links and special files, colliding ids, forged lines,
//!   split secrets, huge inputs, stalling clients; each test failed before its fix.
//! - `import_scenarios`: `import --as scenario` replays each recorded run, user turns and all.
//! - `record_modes`: secrets never reach a replay, record modes as vcrpy's, a failed
//!   re-recording keeps the good one, cassette-only judging, normalised volatile text.
//! - `cdp` (support for `browser`): a DevTools-protocol client for headless Chromium.
//!
//! Whole outputs: `assert_whole!` (in `support`) compares a command's exit code, stdout and
//! stderr with a reviewed insta snapshot under `snapshots/`; use it wherever the output is
//! deterministic. A test that differs writes `NAME.snap.new`: review with `cargo insta
//! review`, or rerun with `INSTA_UPDATE=always` and read `git diff` (CONTRIBUTING.md).

// The library's house rules (clippy.toml) keep files in `store`, clocks and threads at the
// edges; a test is an edge of its own: it writes fixtures, waits for processes and servers,
// and reads what the binary wrote, directly.
#![expect(
    clippy::disallowed_methods,
    clippy::unwrap_used,
    unsafe_code,
    reason = "tests drive the binary with files, clocks, threads and signals directly"
)]

mod support;

mod arguments;
mod browser;
mod cdp;
mod cli;
mod collect;
mod determinism;
mod docs;
mod gate;
mod golden_workflow;
mod harden;
mod import_scenarios;
mod init;
mod invalid;
mod mapping;
mod otlp;
mod outputs;
mod project_file;
mod proxy;
mod record;
mod record_modes;
mod recordings;
mod robust;
mod schema;
mod serve;
mod suite;
mod sweep;
mod testing;
mod trace_fields;
mod trust;
