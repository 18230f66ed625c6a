//! Throughput of `harness sweep`: transcripts per second for one detector setting and for the
//! full grid (every detector's default sweep), in process through the library, and peak memory
//! as the corpus grows.
//!
//! The corpus is the public one the repository carries (`corpus/`, 728 runs scored). Besides
//! one built-in setting and the full grid, it times the external-detector protocol with the
//! Python example (`examples/detectors/consecutive_identical.py`, which re-implements
//! `consecutive-identical:k=3`) and prints its overhead per run. Each measurement
//! is one warm-up and `SWEEP_BENCH_REPS` (default 5) timed sweeps at the machine's cores; rates
//! use the median. Memory: the corpus is copied 1× and 4× into a temporary folder and swept
//! with the full grid; the process's peak RSS (`VmHWM`) after each shows whether memory grows
//! with the corpus (it should not: files are scored in chunks and dropped).
//!
//! ```text
//! cargo bench --bench sweep
//! SWEEP_BENCH_REPS=9 cargo bench --bench sweep
//! ```

#![expect(
    clippy::disallowed_methods,
    reason = "a benchmark measures wall time and reads and writes its inputs directly"
)]

use harness::detector;
use harness::sweep::{self, Options};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

type Result<T> = std::result::Result<T, String>;

fn main() {
    if let Err(e) = bench() {
        eprintln!("sweep bench: error: {e}");
        std::process::exit(1);
    }
}

fn corpus() -> (PathBuf, &'static str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    (root.join("corpus"), "the public corpus (corpus/)")
}

/// One sweep over `paths` with the settings of `spec`: (runs, settings, wall time).
fn once(paths: &[PathBuf], spec: &str, jobs: usize) -> Result<(u64, usize, Duration)> {
    let settings = if spec.starts_with(sweep::external::PREFIX) {
        sweep::external::spec(
            spec,
            std::time::Duration::from_millis(harness::limits::DETECTOR_TIMEOUT_MS),
        )?
    } else {
        detector::spec(spec)?
    };
    let n = settings.len();
    let t = Instant::now();
    let report = sweep::sweep(
        Options {
            paths: paths.to_vec(),
            settings,
            labels: Default::default(),
            format: None,
            failures: Default::default(),
            jobs,
            keep_labels: false,
            on_file: None,
            partition: None,
        },
        None,
        None,
    )
    .map_err(|e| e.to_string())?;
    let wall = t.elapsed();
    if report.rows.len() != n || report.runs == 0 {
        return Err(format!(
            "`{spec}`: {} rows for {n} settings over {} runs",
            report.rows.len(),
            report.runs
        ));
    }
    Ok((report.runs, n, wall))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort_unstable();
    match v.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2,
    }
}

/// Peak resident set of this process so far, in MiB (Linux `VmHWM`; 0 elsewhere).
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<f64>().ok())
            })
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

fn copy_tree(from: &Path, to: &Path) -> Result<()> {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.map_err(|e| e.to_string())?;
        let rel = entry.path().strip_prefix(from).map_err(|e| e.to_string())?;
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).map_err(|e| e.to_string())?;
        } else {
            std::fs::copy(entry.path(), &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
        }
    }
    Ok(())
}

fn bench() -> Result<()> {
    let reps = std::env::var("SWEEP_BENCH_REPS")
        .ok()
        .and_then(|r| r.parse::<usize>().ok())
        .filter(|r| *r > 0)
        .unwrap_or(5);
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let (path, what) = corpus();
    println!(
        "harness sweep bench: {what}, {cores} cores, {reps} timed runs after a warm-up, rates from the median"
    );
    println!(
        "| settings                        | runs | settings n | median s | transcripts/s | transcript×settings/s |"
    );
    println!(
        "|---------------------------------|-----:|-----------:|---------:|--------------:|----------------------:|"
    );
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/detectors/consecutive_identical.py");
    let external = format!("exec:{}:k=3", example.display());
    let mut medians = Vec::new();
    for spec in ["consecutive-identical:k=3", external.as_str(), "all"] {
        let mut walls = Vec::with_capacity(reps);
        let (mut runs, mut n) = (0, 0);
        for rep in 0..=reps {
            let (r, s, wall) = once(std::slice::from_ref(&path), spec, cores)?;
            (runs, n) = (r, s);
            if rep > 0 {
                walls.push(wall);
            }
        }
        let med = median(walls).as_secs_f64();
        let shown = if spec == external {
            "exec: the Python example, k=3"
        } else {
            spec
        };
        println!(
            "| {shown:<31} | {runs:>4} | {n:>10} | {med:>8.3} | {:>13.0} | {:>21.0} |",
            runs as f64 / med,
            (runs as f64 * n as f64) / med
        );
        medians.push((runs, med));
    }
    if let [(runs, builtin), (_, external), ..] = medians[..] {
        println!(
            "The external detector (a Python process, the run sent as one JSON line and one answer read back) costs {:.0} µs a run more than the built-in it re-implements ({:.1}× the time).",
            (external - builtin) * 1e6 / runs as f64,
            external / builtin
        );
    }
    let tmp = tempfile::Builder::new()
        .prefix("harness-sweep-bench-")
        .tempdir()
        .map_err(|e| e.to_string())?;
    println!();
    println!("Memory (full grid, `all`), peak RSS of this process after each corpus size:");
    for copies in [1usize, 4] {
        let mut paths = Vec::new();
        for c in 0..copies {
            let dest = tmp.path().join(format!("x{copies}-{c}"));
            copy_tree(&path, &dest)?;
            paths.push(dest);
        }
        let (runs, _, wall) = once(&paths, "all", cores)?;
        println!(
            "  {copies}× corpus: {runs} runs in {:.3} s, peak RSS {:.1} MiB",
            wall.as_secs_f64(),
            peak_rss_mib()
        );
    }
    Ok(())
}
