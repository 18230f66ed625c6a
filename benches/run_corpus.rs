//! Throughput and memory of `harness run` over a generated corpus.
//!
//! For each corpus size (default 10,000 and 40,000 scenarios) the benchmark writes that many
//! five-model-turn scenarios (four tool-call turns, one text turn; tools `exec` and `search`
//! with scripted outcomes, some failures and rejections, profiles `none`, `ironclaw` and
//! `moltis`, varied deterministically by index, 500 files a folder) into a temporary folder,
//! creates their goldens once (`harness run` without `CI`, then `harness accept`), and then
//! times `CI=1 harness run <corpus> --metrics m.csv` several times. Every measured run must
//! exit 0 and its CSV must hold one passing row per scenario, or the benchmark aborts. It also
//! times a parse-only pass, `harness list <corpus>` (every file read, parsed, validated and
//! expanded as `run` does, nothing replayed), so the run splits into parsing and the rest.
//!
//! Each run starts in the corpus folder (so no project file of the folder cargo runs in adds a
//! baseline), from a small shim (this binary run again) that reaps it with `wait4`: a child
//! started straight from the benchmark would report the benchmark's own peak RSS, which Linux
//! carries into the `ru_maxrss` of a program `exec`ed from it.
//!
//! It reports wall time (best, median), scenarios and model turns per second, the child's peak
//! RSS (`ru_maxrss` from `wait4`), the parse share and the replay-to-parse ratio, compares
//! `--jobs 1` with the default at 10,000, and states whether the targets hold: 10,000 scenarios
//! replayed, compared and summarised in under 0.5 s (best run), the work beyond parsing within
//! 1.5x of the parse-only pass, and peak RSS within 1.2x from the smallest corpus to the largest.
//!
//! ```text
//! cargo bench --bench run_corpus                  # 10000, 40000
//! cargo bench --bench run_corpus -- 10000         # one size (also `1k,10k`)
//! RUN_CORPUS_SIZES=1000,5000 RUN_CORPUS_REPS=9 cargo bench --bench run_corpus
//! RUN_CORPUS_KEEP=1 cargo bench --bench run_corpus -- 1000   # keep the corpus for profiling
//! RUN_CORPUS_REUSE=/tmp/harness-run-corpus-XXXX cargo bench --bench run_corpus   # measure a kept one
//! RUN_CORPUS_OLD=../old/target/release/harness cargo bench --bench run_corpus -- 10k  # beside an older build
//! RUN_CORPUS_PEER=venv/bin/python cargo bench --bench run_corpus -- 10k  # beside inspect_ai
//! ```
//!
//! The bundled mix (every file of `scenarios/` copied to 10,000 files; `RUN_CORPUS_MIX`) is
//! measured first: two-job and one-job runs and the parse-only pass, the one-job run's CPU
//! against the parse-only pass's (target: within 1.5x), and, with `RUN_CORPUS_PEER` naming a
//! Python that has inspect_ai, the cost of a model turn against inspect_ai's `react()` agent
//! on its mock model (`benches/peer/inspect_react.py`; target: 2,000x cheaper). Beside the
//! passes it measures the floor the goldens put under the run / parse target: the CPU time of
//! only opening and reading every golden file of the mix, against what the target allows the
//! run beyond the parse-only pass (`run_corpus/mix.rs`).

#![expect(
    clippy::disallowed_methods,
    unsafe_code,
    reason = "a benchmark measures wall time, reads its inputs and reads its own resource usage directly"
)]

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The release binary cargo built for this bench.
const HARNESS: &str = env!("CARGO_BIN_EXE_harness");
/// Scenario files per folder.
const PER_FOLDER: usize = 500;
/// Model turns every generated scenario scripts.
const TURNS_PER_SCENARIO: u64 = 5;
/// The corpus size the target and the `--jobs` comparison are about.
const TARGET_SIZE: usize = 10_000;
/// The target: `TARGET_SIZE` scenarios in under this long (best run).
const TARGET: Duration = Duration::from_millis(500);
/// The target: the work beyond parsing (replay, compare, summarise) at most this many times
/// the parse-only pass.
const REPLAY_TO_PARSE: f64 = 1.5;
/// Peak RSS may grow at most this much from the smallest to the largest corpus to count as flat.
const FLAT_RSS_RATIO: f64 = 1.2;

#[path = "run_corpus/mix.rs"]
mod mix;

type Result<T> = std::result::Result<T, String>;

/// Set in the environment of this benchmark's own binary started as a measuring shim: where
/// it writes the usage of the command it runs.
const SHIM: &str = "RUN_CORPUS_SHIM_USAGE";

fn main() {
    if let Some(usage) = std::env::var_os(SHIM) {
        if let Err(e) = shim(Path::new(&usage)) {
            eprintln!("run_corpus shim: error: {e}");
            std::process::exit(1);
        }
        return;
    }
    if let Err(e) = bench() {
        eprintln!("run_corpus: error: {e}");
        std::process::exit(1);
    }
}

struct Settings {
    sizes: Vec<usize>,
    reps: usize,
    keep: bool,
    /// A kept corpus folder to measure again instead of generating one.
    reuse: Option<PathBuf>,
    /// Files of the bundled mix (0: not measured).
    mix: usize,
    /// An older build of harness to measure beside this one on the mix.
    old: Option<PathBuf>,
    /// A Python with inspect_ai, to measure the peer beside the mix (`RUN_CORPUS_PEER`).
    peer: Option<PathBuf>,
}

fn parse_size(s: &str) -> Result<usize> {
    let t = s.trim().to_ascii_lowercase().replace(['_', '\''], "");
    let (digits, factor) = match t.strip_suffix('k') {
        Some(d) => (d, 1000),
        None => (t.as_str(), 1),
    };
    digits
        .parse::<usize>()
        .ok()
        .map(|n| n * factor)
        .filter(|n| *n > 0)
        .ok_or_else(|| format!("`{s}` is not a corpus size (e.g. 10000 or 10k)"))
}

fn settings() -> Result<Settings> {
    let mut sizes = Vec::new();
    // `cargo bench` passes `--bench`; any other flag is ignored the same way.
    for arg in std::env::args().skip(1).filter(|a| !a.starts_with('-')) {
        for part in arg.split(',').filter(|p| !p.is_empty()) {
            sizes.push(parse_size(part)?);
        }
    }
    if sizes.is_empty() {
        if let Ok(list) = std::env::var("RUN_CORPUS_SIZES") {
            for part in list.split(',').filter(|p| !p.trim().is_empty()) {
                sizes.push(parse_size(part)?);
            }
        }
    }
    if sizes.is_empty() {
        sizes = vec![10_000, 40_000];
    }
    sizes.sort_unstable();
    sizes.dedup();
    let reps = match std::env::var("RUN_CORPUS_REPS") {
        Ok(r) => r
            .parse::<usize>()
            .ok()
            .filter(|r| *r > 0)
            .ok_or_else(|| format!("RUN_CORPUS_REPS=`{r}` is not a positive number"))?,
        Err(_) => 7,
    };
    let keep = std::env::var("RUN_CORPUS_KEEP").is_ok_and(|v| !v.is_empty() && v != "0");
    let mix = match std::env::var("RUN_CORPUS_MIX") {
        Ok(m) if m.trim() == "0" => 0,
        Ok(m) => parse_size(&m)?,
        Err(_) => TARGET_SIZE,
    };
    // Absolute: the runs start in the corpus folder, where a relative path names nothing.
    let path = |var: &str| {
        let v = std::env::var_os(var).filter(|v| !v.is_empty());
        v.map(|v| std::path::absolute(&v).map_err(|e| format!("{var}: {e}")))
            .transpose()
    };
    let reuse = path("RUN_CORPUS_REUSE")?;
    let old = path("RUN_CORPUS_OLD")?;
    let peer = path("RUN_CORPUS_PEER")?;
    Ok(Settings {
        sizes,
        reps,
        keep,
        reuse,
        mix,
        old,
        peer,
    })
}

// ---------------------------------------------------------------------------------------------
// The corpus.

const MODELS: &[(&str, f64, f64)] = &[
    ("claude-sonnet-4.5", 3.0, 15.0),
    ("claude-haiku-4.5", 1.0, 5.0),
    ("gpt-5-mini", 0.25, 2.0),
    ("qwen3-coder", 0.0, 0.0),
];
const FAMILIES: &[&str] = &["bench-fix", "bench-explore", "bench-refactor"];
const PROFILES: &[&str] = &["none", "ironclaw", "moltis"];

/// The scenario of index `i`: five model turns whatever the profile.
fn scenario(i: usize) -> String {
    let profile = PROFILES[i % PROFILES.len()];
    let family = FAMILIES[i / 7 % FAMILIES.len()];
    let (model, p_in, p_out) = MODELS[i / 3 % MODELS.len()];
    let module = format!("m{}", i % 97);
    let test_fails = i % 4 == 1;
    let search_fails = i % 6 == 0;
    // Under moltis the empty `exec({})` is rejected before dispatch; elsewhere it runs.
    let empty_call = i % 5 == 0;
    let two_calls = i % 2 == 0;
    // The first three turns repeat one failing call (never together with `empty_call`).
    let retry = i % 10 == 3;
    let exec_latency = 100 + 50 * (i % 7);
    let mut s = String::with_capacity(4096);
    let w = &mut s;
    // `write!` into a String cannot fail.
    let _ = write!(
        w,
        r#"format = 1
description = "Generated benchmark scenario {i}: find a failing test, run it, patch the module and report."
family = "{family}"
tags = ["bench", "g{group:03}", "{profile}"]
profile = "{profile}"
system = "You are a coding agent working in repository r{i}. Use tools to act; answer in plain text when done."
user = "Test t{i} in module {module} fails since the last merge. Find out why, fix it and tell me what changed."

[[tools]]
name = "exec"
description = "Run a shell command in the repository"
schema = {{ type = "object", properties = {{ command = {{ type = "string" }}, timeout_s = {{ type = "integer" }} }}, required = ["command"] }}
latency_ms = {exec_latency}
"#,
        group = i / PER_FOLDER,
    );
    if test_fails {
        let _ = write!(
            w,
            r#"
[[tools.outcomes]]
args_contain = {{ command = "cargo test -p {module} t{i}" }}
error = "test t{i} ... FAILED\nthread 't{i}' panicked at src/{module}/parse.rs:{line}:9:\nassertion `left == right` failed\n  left: {i}\n right: {next}"
latency_ms = 4200
"#,
            line = 40 + i % 200,
            next = i + 1,
        );
    } else {
        let _ = write!(
            w,
            r#"
[[tools.outcomes]]
args_contain = {{ command = "cargo test -p {module} t{i}" }}
ok = "running 1 test\ntest t{i} ... ok\n\ntest result: ok. 1 passed; 0 failed"
latency_ms = 3900
"#
        );
    }
    let _ = write!(
        w,
        r#"
[[tools.outcomes]]
args_contain = {{ command = "make check-{module}" }}
error = "make: *** No rule to make target 'check-{module}'.  Stop."

[[tools.outcomes]]
args = {{ command = "ls src/{module}" }}
ok = "lib.rs\nparse.rs\ntests.rs\nmod.rs"

[tools.default]
ok = "exit status 0"

[[tools]]
name = "search"
description = "Search the code base"
schema = {{ type = "object", properties = {{ query = {{ type = "string" }}, limit = {{ type = "integer" }} }}, required = ["query"] }}
latency_ms = 80
"#
    );
    if search_fails {
        let _ = write!(
            w,
            r#"
[[tools.outcomes]]
args_contain = {{ query = "fn t{i}" }}
error = "search index is rebuilding, try again later"
"#
        );
    } else {
        let _ = write!(
            w,
            r#"
[[tools.outcomes]]
args_contain = {{ query = "fn t{i}" }}
ok = "src/{module}/tests.rs:{line}: fn t{i}() {{\nsrc/{module}/tests.rs:{l2}:     assert_eq!(parse(\"{i}\"), {i});"
"#,
            line = 10 + i % 300,
            l2 = 11 + i % 300,
        );
    }
    let _ = write!(
        w,
        r#"
[tools.default]
ok = "no matches"

[model]
name = "{model}"
latency_ms = {model_latency}
prices = {{ input_per_mtok = {p_in:.2}, output_per_mtok = {p_out:.2} }}
"#,
        model_latency = 1500 + 250 * (i % 9),
    );
    if retry {
        // Three identical failing calls: the moltis reflex detector and the ironclaw duplicate
        // tracker fire on the third; the model then moves on.
        for _ in 0..3 {
            let _ = write!(
                w,
                r#"
[[model.turns]]
tool_calls = [{{ name = "exec", args = {{ command = "make check-{module}" }} }}]
"#
            );
        }
    } else {
        let _ = write!(
            w,
            r#"
[[model.turns]]
tool_calls = [{{ name = "search", args = {{ query = "fn t{i}", limit = {limit} }} }}]

[[model.turns]]
text = "Looking at the module layout first."
tool_calls = [{{ name = "exec", args = {{ command = "ls src/{module}" }} }}]

[[model.turns]]
tool_calls = [{{ name = "exec", args = {{ command = "cargo test -p {module} t{i}", timeout_s = 120 }} }}]
"#,
            limit = 5 + i % 20,
        );
    }
    let _ = writeln!(w, "\n[[model.turns]]");
    let patch = format!(
        r#"{{ name = "exec", args = {{ command = "sed -i 's/{i}/{next}/' src/{module}/parse.rs" }} }}"#,
        next = i + 1
    );
    match (empty_call, two_calls) {
        (true, _) => {
            let _ = writeln!(
                w,
                r#"tool_calls = [{patch}, {{ name = "exec", args = {{}} }}]"#
            );
        }
        (false, true) => {
            let _ = writeln!(
                w,
                r#"tool_calls = [{patch}, {{ name = "search", args = {{ query = "parse_{i} callers" }} }}]"#
            );
        }
        (false, false) => {
            let _ = writeln!(w, "tool_calls = [{patch}]");
        }
    }
    if i % 3 == 0 {
        let _ = writeln!(
            w,
            "usage = {{ input = {}, output = {} }}",
            900 + i % 1000,
            40 + i % 60
        );
    }
    let _ = write!(
        w,
        r#"
[[model.turns]]
text = "Fixed test t{i}: parse in src/{module}/parse.rs mishandled input {i}; it now returns the right value and the test suite of {module} passes. Changed one line."
"#
    );
    if i % 11 == 0 {
        let _ = write!(
            w,
            r#"
[[signals]]
at_iteration = 3
inject = "Please also keep the changelog entry for {module} short."
"#
        );
    }
    // Tool calls dispatched: three single calls, one or two in turn four, minus a rejection.
    let batch = if empty_call || two_calls { 2 } else { 1 };
    let rejected = usize::from(empty_call && profile == "moltis");
    let dispatched = 3 + batch - rejected;
    let _ = write!(
        w,
        r#"
[expect]
outcome = "response"
iterations = 5
model_calls = {TURNS_PER_SCENARIO}
tool_calls = {dispatched}
text_contains = "t{i}"
must = ["tool_call_end"]
"#
    );
    if retry && profile != "none" {
        let _ = writeln!(w, r#"must_not = ["force_text"]"#);
        let _ = writeln!(
            w,
            r#"events = [{{ kind = "intervention", where = {{ stage = 1 }}, count = 1 }}]"#
        );
    } else {
        let _ = writeln!(w, r#"must_not = ["intervention"]"#);
    }
    if empty_call && profile == "moltis" {
        let _ = writeln!(
            w,
            r#"events = [{{ kind = "tool_call_rejected", count = 1 }}]"#
        );
    }
    s
}

/// Write `n` scenarios under `dir`, `PER_FOLDER` a folder.
fn generate(dir: &Path, n: usize) -> io::Result<()> {
    for i in 0..n {
        let folder = dir.join(format!("g{:03}", i / PER_FOLDER));
        if i % PER_FOLDER == 0 {
            fs::create_dir_all(&folder)?;
        }
        fs::write(folder.join(format!("s{i:06}.toml")), scenario(i))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Running the binary.

/// One finished child.
struct Exit {
    code: Option<i32>,
    wall: Duration,
    /// Peak resident set in KiB.
    maxrss_kib: u64,
    /// User + system CPU time.
    cpu: Duration,
    stdout: String,
}

fn timeval(t: libc::timeval) -> Duration {
    let secs = u64::try_from(t.tv_sec).unwrap_or(0);
    let micros = u32::try_from(t.tv_usec).unwrap_or(0);
    Duration::from_secs(secs) + Duration::from_micros(micros.into())
}

/// Run `harness` with `args` (and `CI=1` when `ci`) on `corpus`, stdout into `log`.
fn harness(corpus: &Corpus, args: &[&str], ci: bool, log: &Path) -> Result<Exit> {
    harness_bin(Path::new(HARNESS), corpus, args, ci, log)
}

/// [`harness`] with another build of it.
fn harness_bin(bin: &Path, corpus: &Corpus, args: &[&str], ci: bool, log: &Path) -> Result<Exit> {
    let mut argv: Vec<std::ffi::OsString> = vec![
        "--scenarios-root".into(),
        corpus.scenarios.clone().into(),
        "--snapshots".into(),
        corpus.snapshots.clone().into(),
    ];
    argv.extend(args.iter().map(Into::into));
    reap(bin, &argv, ci, log, corpus.scenarios.parent())
}

/// Run `harness` with `argv` (and `CI=1` when `ci`), stdout into `log`, and measure it.
///
/// The child is started by a shim, this benchmark's own binary run again, which reaps it with
/// `wait4`. Started directly, the child's peak RSS would be at least this process's own: Linux
/// carries the memory high-water mark of the process that `exec`s into the new program's
/// `ru_maxrss`, and the benchmark, which has generated the corpus and read every CSV, is
/// larger than what it measures. The shim is small, and starts the child from itself.
///
/// It runs in `cwd` when given: the corpus folder, so that no project file (`harness.toml`)
/// of the folder cargo runs benchmarks in adds its baseline or outputs to the measured run.
fn reap(
    bin: &Path,
    argv: &[std::ffi::OsString],
    ci: bool,
    log: &Path,
    cwd: Option<&Path>,
) -> Result<Exit> {
    let out = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let usage = log.with_extension("usage");
    let _ = fs::remove_file(&usage);
    let me = std::env::current_exe().map_err(|e| format!("cannot find this benchmark: {e}"))?;
    let mut cmd = Command::new(me);
    cmd.env(SHIM, &usage).arg(bin).args(argv);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    if ci {
        cmd.env("CI", "1");
    } else {
        cmd.env_remove("CI");
    }
    let status = cmd
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| format!("cannot start the measuring shim: {e}"))?;
    if !status.success() {
        return Err(format!("the measuring shim failed ({status})"));
    }
    let text = fs::read_to_string(&usage).map_err(|e| format!("{}: {e}", usage.display()))?;
    let fields: Vec<i64> = text
        .split_whitespace()
        .map(|f| {
            f.parse::<i64>()
                .map_err(|e| format!("{}: {e}", usage.display()))
        })
        .collect::<Result<_>>()?;
    let [code, maxrss_kib, cpu_us, wall_us] = fields[..] else {
        return Err(format!("{}: `{text}` is not four numbers", usage.display()));
    };
    let micros = |v: i64| Duration::from_micros(u64::try_from(v).unwrap_or(0));
    Ok(Exit {
        code: (code >= 0).then(|| i32::try_from(code).unwrap_or(-1)),
        wall: micros(wall_us),
        maxrss_kib: u64::try_from(maxrss_kib).unwrap_or(0),
        cpu: micros(cpu_us),
        stdout: fs::read_to_string(log).unwrap_or_default(),
    })
}

/// The shim: run the command its arguments name (stdio inherited), reap it with `wait4`, and
/// write its exit code (-1 if a signal ended it), peak RSS in KiB, CPU and wall microseconds
/// to `usage`.
fn shim(usage: &Path) -> Result<()> {
    let mut args = std::env::args_os().skip(1);
    let program = args.next().ok_or("the shim needs a command")?;
    let mut cmd = Command::new(&program);
    cmd.args(args).env_remove(SHIM);
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", program.to_string_lossy()))?;
    let pid = libc::pid_t::try_from(child.id()).map_err(|e| e.to_string())?;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own unreaped child (std never waits on it: we never call
        // `wait` on `child`); the pointers are to live locals.
        let r = unsafe { libc::wait4(pid, &raw mut status, 0, &raw mut ru) };
        if r == pid {
            break;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(format!("wait4: {err}"));
        }
    }
    let wall = start.elapsed();
    drop(child);
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    let cpu = timeval(ru.ru_utime) + timeval(ru.ru_stime);
    fs::write(
        usage,
        format!(
            "{code} {} {} {}\n",
            ru.ru_maxrss,
            cpu.as_micros(),
            wall.as_micros()
        ),
    )
    .map_err(|e| format!("{}: {e}", usage.display()))
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

struct Corpus {
    size: usize,
    scenarios: PathBuf,
    snapshots: PathBuf,
    work: PathBuf,
}

impl Corpus {
    /// The corpus of `size` scenarios in `root`, its work folder created.
    fn at(root: &Path, size: usize) -> Result<Self> {
        let corpus = Self {
            size,
            scenarios: root.join("scenarios"),
            snapshots: root.join("snapshots"),
            work: root.join("work"),
        };
        fs::create_dir_all(&corpus.work).map_err(|e| e.to_string())?;
        Ok(corpus)
    }
}

/// Write the files just made to disk before anything is timed: otherwise the kernel writes
/// them back during the measured runs, whose time then depends on when it does.
fn settle() {
    // SAFETY: `sync` takes no arguments and cannot fail.
    unsafe { libc::sync() };
}

/// Generate the corpus of `size` scenarios under `root` and create its goldens.
fn prepare(root: &Path, size: usize) -> Result<Corpus> {
    let corpus = Corpus::at(root, size)?;
    let t = Instant::now();
    generate(&corpus.scenarios, size).map_err(|e| format!("cannot write the corpus: {e}"))?;
    let generated = t.elapsed();

    let t = Instant::now();
    let scenarios = corpus.scenarios.to_string_lossy().into_owned();
    let log = corpus.work.join("goldens.log");
    let first = harness(&corpus, &["run", &scenarios], false, &log)?;
    let expected = format!("{size} pending golden(s) written");
    if first.code != Some(1) || !first.stdout.contains(&expected) {
        return Err(format!(
            "creating goldens: expected exit 1 and `{expected}`, got exit {:?}:\n{}",
            first.code,
            tail(&first.stdout, 30)
        ));
    }
    let accept = harness(&corpus, &["accept"], false, &corpus.work.join("accept.log"))?;
    let expected = format!("{size} pending golden(s) accepted");
    if accept.code != Some(0) || !accept.stdout.contains(&expected) {
        return Err(format!(
            "accepting goldens: expected `{expected}`, got exit {:?}:\n{}",
            accept.code,
            tail(&accept.stdout, 5)
        ));
    }
    settle();
    eprintln!(
        "  corpus of {size}: generated in {:.2} s, goldens created and accepted in {:.2} s",
        generated.as_secs_f64(),
        t.elapsed().as_secs_f64()
    );
    Ok(corpus)
}

/// A corpus of `size` scenarios an earlier run kept (`RUN_CORPUS_KEEP`) under `root`: its
/// goldens are there already. Every measured run still has to pass with one row a scenario.
fn reuse(root: &Path, size: usize) -> Result<Corpus> {
    if !root.join("scenarios").is_dir() || !root.join("snapshots").is_dir() {
        return Err(format!(
            "{}: no kept corpus of {size} scenarios here (RUN_CORPUS_REUSE names the folder `corpus kept in` printed)",
            root.display()
        ));
    }
    let corpus = Corpus::at(root, size)?;
    eprintln!("  corpus of {size}: reused from {}", root.display());
    Ok(corpus)
}

/// What one measured run's CSV says.
struct CsvCheck {
    rows: usize,
    model_calls: u64,
}

fn check_csv(path: &Path) -> Result<CsvCheck> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .ok_or_else(|| format!("{}: no `{name}` column", path.display()))
    };
    let (calls_at, passed_at) = (col("model_calls")?, col("expectations_passed")?);
    let mut check = CsvCheck {
        rows: 0,
        model_calls: 0,
    };
    for line in lines {
        // Generated ids, families and profiles hold no commas or quotes.
        let fields: Vec<&str> = line.split(',').collect();
        let calls = fields
            .get(calls_at)
            .and_then(|f| f.parse::<u64>().ok())
            .ok_or_else(|| format!("{}: bad row `{line}`", path.display()))?;
        if fields.get(passed_at) != Some(&"true") {
            return Err(format!(
                "{}: expectations failed in `{line}`",
                path.display()
            ));
        }
        check.rows += 1;
        check.model_calls += calls;
    }
    Ok(check)
}

/// Timings of repeated measured runs.
#[derive(Clone, Default)]
struct Sample {
    walls: Vec<Duration>,
    cpus: Vec<Duration>,
    maxrss_kib: u64,
    model_calls: u64,
}

impl Sample {
    fn best(&self) -> Duration {
        self.walls.iter().copied().min().unwrap_or_default()
    }

    fn median(&self) -> Duration {
        median(&self.walls)
    }

    fn median_cpu(&self) -> Duration {
        median(&self.cpus)
    }
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort_unstable();
    match v.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2,
    }
}

/// `CI=1 harness run <corpus> --metrics m.csv [--jobs N]`: one warm-up, then `reps` runs.
/// The parse-only pass: `harness list` reads, parses, validates and expands every scenario
/// file as `run` does, without replaying anything.
fn measure_parse(corpus: &Corpus, reps: usize) -> Result<Sample> {
    let scenarios = corpus.scenarios.to_string_lossy().into_owned();
    let args = ["list", scenarios.as_str()];
    let log = corpus.work.join("list.log");
    let mut sample = Sample::default();
    for rep in 0..=reps {
        let exit = harness(corpus, &args, true, &log)?;
        let listed = exit.stdout.lines().count();
        if exit.code != Some(0) || listed != corpus.size {
            return Err(format!(
                "`harness list` exited with {:?} and listed {listed} cases for {} scenarios",
                exit.code, corpus.size
            ));
        }
        if rep > 0 {
            record(&mut sample, &exit, 0);
        }
    }
    Ok(sample)
}

fn measure(corpus: &Corpus, jobs: Option<usize>, reps: usize) -> Result<Sample> {
    let scenarios = corpus.scenarios.to_string_lossy().into_owned();
    let csv = corpus.work.join("m.csv");
    let csv = csv.to_string_lossy().into_owned();
    let jobs = jobs.map(|j| j.to_string());
    let mut args = vec!["run", scenarios.as_str(), "--metrics", csv.as_str()];
    if let Some(j) = &jobs {
        args.extend(["--jobs", j.as_str()]);
    }
    let log = corpus.work.join("run.log");
    let mut sample = Sample::default();
    for rep in 0..=reps {
        let _ = fs::remove_file(&csv);
        let exit = harness(corpus, &args, true, &log)?;
        if exit.code != Some(0) {
            return Err(format!(
                "`harness {}` exited with {:?}, not 0: the corpus did not pass, so its timing means nothing:\n{}",
                args.join(" "),
                exit.code,
                tail(&exit.stdout, 30)
            ));
        }
        let check = check_csv(Path::new(&csv))?;
        if check.rows != corpus.size {
            return Err(format!(
                "{csv}: {} rows for {} scenarios",
                check.rows, corpus.size
            ));
        }
        if check.model_calls != TURNS_PER_SCENARIO * corpus.size as u64 {
            return Err(format!(
                "{csv}: {} model calls, expected {TURNS_PER_SCENARIO} per scenario",
                check.model_calls
            ));
        }
        if rep == 0 {
            continue; // warm-up
        }
        record(&mut sample, &exit, check.model_calls);
    }
    Ok(sample)
}

/// Add one measured run to `sample`.
fn record(sample: &mut Sample, exit: &Exit, model_calls: u64) {
    sample.walls.push(exit.wall);
    sample.cpus.push(exit.cpu);
    sample.maxrss_kib = sample.maxrss_kib.max(exit.maxrss_kib);
    sample.model_calls = model_calls;
}

fn walkdir_count(dir: &Path) -> usize {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                walkdir_count(&e.path())
            } else {
                1
            }
        })
        .sum()
}

/// Bless the corpus into a baseline, kept as `into`; its size in bytes.
fn bless_baseline(corpus: &Corpus, into: &Path) -> Result<u64> {
    let scenarios = corpus.scenarios.to_string_lossy().into_owned();
    let base = into.to_string_lossy().into_owned();
    let blessed = harness(
        corpus,
        &["bless", &scenarios, "--baseline", &base],
        true,
        &corpus.work.join("bless.log"),
    )?;
    let bytes = fs::metadata(into).map(|m| m.len()).unwrap_or(0);
    if blessed.code != Some(0) || bytes == 0 {
        return Err(format!(
            "`harness bless` exited with {:?}:\n{}",
            blessed.code,
            tail(&blessed.stdout, 10)
        ));
    }
    Ok(bytes)
}

/// Peak RSS of `CI=1 harness run <corpus> --baseline <base>`, which must pass and compare
/// every case of the corpus (a larger baseline's other cases are not compared).
fn run_with_baseline(corpus: &Corpus, base: &Path, reps: usize) -> Result<u64> {
    let scenarios = corpus.scenarios.to_string_lossy().into_owned();
    let base = base.to_string_lossy().into_owned();
    let csv = corpus.work.join("mb.csv").to_string_lossy().into_owned();
    let args = ["run", &scenarios, "--baseline", &base, "--metrics", &csv];
    let mut peak = 0;
    for _ in 0..reps.max(1) {
        let exit = harness(corpus, &args, true, &corpus.work.join("baseline.log"))?;
        let compared = format!("{} cases compared", corpus.size);
        if exit.code != Some(0) || !exit.stdout.contains(&compared) {
            return Err(format!(
                "`harness run --baseline {base}` exited with {:?} or compared other than {} cases:\n{}",
                exit.code,
                corpus.size,
                tail(&exit.stdout, 10)
            ));
        }
        peak = peak.max(exit.maxrss_kib);
    }
    Ok(peak)
}

// ---------------------------------------------------------------------------------------------
// The report.

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn row(label: &str, size: usize, s: &Sample) -> String {
    let med = s.median().as_secs_f64();
    format!(
        "| {label:>14} | {:>7.3} | {:>8.3} | {:>11.0} | {:>11.0} | {:>8.3} | {:>12.1} | {:>13.2} |",
        s.best().as_secs_f64(),
        med,
        size as f64 / med,
        s.model_calls as f64 / med,
        s.median_cpu().as_secs_f64(),
        mib(s.maxrss_kib),
        mib(s.maxrss_kib) * 1000.0 / size as f64,
    )
}

const HEADER: &str = "|    corpus size |  best s | median s | scenarios/s |     turns/s |    cpu s | peak RSS MiB | RSS MiB / 1k sc |\n|---------------:|--------:|---------:|------------:|------------:|---------:|-------------:|--------------:|";

fn bench() -> Result<()> {
    let settings = settings()?;
    let bin = Path::new(HARNESS);
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let optimised = bin.components().any(|c| c.as_os_str() == "release");
    eprintln!(
        "run_corpus: {HARNESS} ({}), {cores} cores, sizes {:?}, {} measured runs each (+1 warm-up)",
        if optimised {
            "release/bench profile"
        } else {
            "NOT a release build: numbers are meaningless"
        },
        settings.sizes,
        settings.reps
    );
    let tmp = tempfile::Builder::new()
        .prefix("harness-run-corpus-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary folder: {e}"))?;

    let baseline_kib = reap(
        bin,
        &["--version".into()],
        false,
        &tmp.path().join("version.log"),
        Some(tmp.path()),
    )?
    .maxrss_kib;
    if settings.mix > 0 {
        mix::bench_mix(&settings, tmp.path(), cores)?;
    }
    let mut results: Vec<(usize, Sample)> = Vec::new();
    // Each size's blessed baseline (size, file, bytes); the smallest corpus is run against each.
    let mut baselines: Vec<(usize, PathBuf, u64)> = Vec::new();
    let mut smallest: Option<Corpus> = None;
    let mut parses: Vec<(usize, Sample)> = Vec::new();
    let mut scaling: Option<(usize, Sample, Sample)> = None;
    let scaling_size = if settings.sizes.contains(&TARGET_SIZE) {
        Some(TARGET_SIZE)
    } else {
        settings.sizes.last().copied()
    };
    for &size in &settings.sizes {
        let corpus = match &settings.reuse {
            Some(dir) => reuse(&dir.join(format!("n{size}")), size)?,
            None => prepare(&tmp.path().join(format!("n{size}")), size)?,
        };
        let sample = measure(&corpus, None, settings.reps)?;
        parses.push((size, measure_parse(&corpus, settings.reps)?));
        eprintln!(
            "  corpus of {size}: median {:.3} s, peak RSS {:.1} MiB",
            sample.median().as_secs_f64(),
            mib(sample.maxrss_kib)
        );
        let base = tmp.path().join(format!("base{size}.toml"));
        baselines.push((size, base.clone(), bless_baseline(&corpus, &base)?));
        if Some(size) == scaling_size {
            let one = measure(&corpus, Some(1), settings.reps)?;
            scaling = Some((size, one, sample.clone()));
        }
        results.push((size, sample));
        if smallest.is_none() {
            smallest = Some(corpus);
        } else if !settings.keep {
            let _ = fs::remove_dir_all(tmp.path().join(format!("n{size}")));
        }
    }
    // Only the baseline grows: the smallest corpus against every size's baseline.
    let mut with_baseline: Vec<(usize, u64, u64)> = Vec::new();
    if let Some(corpus) = &smallest {
        for (size, base, bytes) in &baselines {
            with_baseline.push((
                *size,
                run_with_baseline(corpus, base, settings.reps.min(3))?,
                *bytes,
            ));
        }
    }

    println!();
    println!(
        "harness run: {cores} cores, default --jobs ({cores}), CI=1, --metrics; {} runs per row after a warm-up; rates use the median",
        settings.reps
    );
    println!("{HEADER}");
    for (size, s) in &results {
        println!("{}", row(&size.to_string(), *size, s));
    }
    println!();
    println!(
        "Parse-only pass (`harness list`, which reads, parses, validates and expands every file as `run` does) against the run, in CPU time (`list` runs on one thread, `run` on all); replay = run - parse (replay, golden compare, summary):"
    );
    println!(
        "|    corpus size | parse cpu s | run cpu s | parse share | replay / parse |\n|---------------:|------------:|----------:|------------:|---------------:|"
    );
    let mut replay_ratio = None;
    for ((size, run), (_, parse)) in results.iter().zip(&parses) {
        let (r, p) = (
            run.median_cpu().as_secs_f64(),
            parse.median_cpu().as_secs_f64(),
        );
        let ratio = (r - p).max(0.0) / p.max(1e-9);
        if *size == TARGET_SIZE {
            replay_ratio = Some(ratio);
        }
        println!(
            "| {size:>14} | {p:>11.3} | {r:>9.3} | {:>10.0}% | {ratio:>14.2} |",
            100.0 * p / r.max(1e-9)
        );
    }
    if let Some((size, one, all)) = &scaling {
        println!();
        println!("Parallel scaling at {size} scenarios:");
        println!("{HEADER}");
        println!("{}", row("--jobs 1", *size, one));
        println!("{}", row(&format!("default ({cores})"), *size, all));
        println!(
            "speed-up {:.2}x on {cores} cores (median wall), parallel efficiency {:.0}%",
            one.median().as_secs_f64() / all.median().as_secs_f64(),
            100.0 * one.median().as_secs_f64() / all.median().as_secs_f64() / cores as f64
        );
    }

    println!();
    match results.iter().find(|(size, _)| *size == TARGET_SIZE) {
        Some((_, s)) => {
            let holds = s.best() < TARGET;
            println!(
                "Target ({TARGET_SIZE} five-turn scenarios replayed, compared and summarised in < {:.1} s on {cores} cores, best run): {} (best {:.3} s, median {:.3} s)",
                TARGET.as_secs_f64(),
                if holds { "HOLDS" } else { "MISSED" },
                s.best().as_secs_f64(),
                s.median().as_secs_f64()
            );
            if let Some(ratio) = replay_ratio {
                println!(
                    "Target (replay within {REPLAY_TO_PARSE}x of the parse-only pass at {TARGET_SIZE}): {} ({ratio:.2}x)",
                    if ratio <= REPLAY_TO_PARSE {
                        "HOLDS"
                    } else {
                        "MISSED"
                    }
                );
            }
        }
        None => println!(
            "Target: not checked ({TARGET_SIZE} is not among the corpus sizes {:?})",
            settings.sizes
        ),
    }
    if let (Some((small, a)), Some((large, b))) = (results.first(), results.last()) {
        if small < large {
            let ratio = b.maxrss_kib as f64 / a.maxrss_kib.max(1) as f64;
            let kib_per_scenario =
                (b.maxrss_kib as f64 - a.maxrss_kib as f64) / (large - small) as f64;
            let all: Vec<String> = results
                .iter()
                .map(|(n, s)| format!("{:.1} MiB at {n}", mib(s.maxrss_kib)))
                .collect();
            println!(
                "Memory: peak RSS {} scenarios (the binary alone, `harness --version`: {:.1} MiB): {ratio:.2}x for {:.0}x the corpus, {:+.2} MiB per extra 1k scenarios ({:+.0} bytes a scenario): {}",
                all.join(", "),
                mib(baseline_kib),
                *large as f64 / *small as f64,
                kib_per_scenario * 1000.0 / 1024.0,
                kib_per_scenario * 1024.0,
                if ratio <= FLAT_RSS_RATIO {
                    "flat (does not grow with the corpus)"
                } else {
                    "GROWS with the corpus"
                }
            );
        }
    }
    if let Some(corpus) = smallest.filter(|_| !settings.keep) {
        let _ = fs::remove_dir_all(corpus.scenarios.parent().unwrap_or(tmp.path()));
    }
    if let (Some((small, a, a_bytes)), Some((large, b, b_bytes))) =
        (with_baseline.first(), with_baseline.last())
    {
        if small < large {
            println!(
                "Memory with a baseline (the {small}-scenario corpus run with `--baseline`, each size's corpus blessed; only the baseline grows): peak RSS {:.1} MiB with the {small}-case baseline ({:.1} MB), {:.1} MiB with the {large}-case one ({:.1} MB): {:.2}x: {}",
                mib(*a),
                *a_bytes as f64 / 1e6,
                mib(*b),
                *b_bytes as f64 / 1e6,
                *b as f64 / (*a).max(1) as f64,
                if *b as f64 <= FLAT_RSS_RATIO * *a as f64 {
                    "flat (a baseline's size does not show)"
                } else {
                    "GROWS with the baseline"
                }
            );
        }
    }
    if settings.keep {
        let kept = tmp.keep();
        println!("corpus kept in {}", kept.display());
    }
    Ok(())
}
