//! The bundled mix: the scenarios this project ships, copied up to a size, run beside an
//! older build and inspect_ai, and the floor reading its goldens puts under the run / parse gate.

use super::*;

/// The bundled scenarios of this checkout: every family, `real/` included.
const BUNDLED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/scenarios");
/// The targets on the bundled mix: the one-job run within this many times the CPU of the
/// parse-only pass, and a model turn this many times cheaper than one of inspect_ai's
/// `react()` agent on its mock model (`RUN_CORPUS_PEER`). The binary named by
/// `RUN_CORPUS_OLD` is a comparison, not a target: any build may be named.
const MIX_RUN_TO_PARSE: f64 = 1.5;
const PEER_RATIO: f64 = 2000.0;
/// The peer's script, and the two sizes of its runs: the cost of a turn is the difference
/// between them over the turns it adds, so interpreter start, imports and the eval's set-up
/// are not charged to the turns.
const PEER_SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peer/inspect_react.py");
const PEER_SAMPLES: [usize; 2] = [20, 220];

/// Copy the files below `from` into `to`; how many.
fn copy_tree(from: &Path, to: &Path) -> io::Result<usize> {
    fs::create_dir_all(to)?;
    let mut n = 0;
    let mut entries: Vec<_> = fs::read_dir(from)?.collect::<io::Result<_>>()?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for e in entries {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_type()?.is_dir() {
            n += copy_tree(&src, &dst)?;
        } else {
            fs::copy(&src, &dst)?;
            n += 1;
        }
    }
    Ok(n)
}

/// The bundled mix copied until it holds at least `size` files (whole copies, `cNNN/…`), its
/// goldens created and accepted; the number of files and copies.
fn prepare_mix(root: &Path, size: usize) -> Result<(Corpus, usize, usize)> {
    let corpus = Corpus::at(root, size)?;
    let t = Instant::now();
    let copy = |i: usize| {
        copy_tree(
            Path::new(BUNDLED),
            &corpus.scenarios.join(format!("c{i:03}")),
        )
        .map_err(|e| format!("cannot copy {BUNDLED}: {e}"))
    };
    let per_copy = copy(0)?;
    if per_copy == 0 {
        return Err(format!("{BUNDLED} holds no files"));
    }
    let copies = size.div_ceil(per_copy).max(1);
    for i in 1..copies {
        copy(i)?;
    }
    let scenarios = corpus.scenarios.to_string_lossy().into_owned();
    let first = harness(
        &corpus,
        &["run", &scenarios],
        false,
        &corpus.work.join("goldens.log"),
    )?;
    if first.code != Some(1) || !first.stdout.contains("pending golden(s) written") {
        return Err(format!(
            "creating the mix's goldens: expected exit 1 and pending goldens, got exit {:?}:\n{}",
            first.code,
            tail(&first.stdout, 30)
        ));
    }
    let accept = harness(&corpus, &["accept"], false, &corpus.work.join("accept.log"))?;
    if accept.code != Some(0) || !accept.stdout.contains("pending golden(s) accepted") {
        return Err(format!(
            "accepting the mix's goldens: got exit {:?}:\n{}",
            accept.code,
            tail(&accept.stdout, 5)
        ));
    }
    settle();
    eprintln!(
        "  bundled mix: {} files ({copies} copies of {per_copy}), goldens created and accepted in {:.2} s",
        copies * per_copy,
        t.elapsed().as_secs_f64()
    );
    Ok((corpus, copies * per_copy, copies))
}

/// One build measured on the mix.
struct Side {
    label: String,
    bin: PathBuf,
    /// Whether its `list` takes `--jobs` (builds before the worker pool read on one thread).
    list_jobs: bool,
    two_jobs: Sample,
    one_job: Sample,
    parse: Sample,
}

impl Side {
    fn new(label: &str, bin: &Path) -> Result<Self> {
        let help = Command::new(bin)
            .args(["list", "--help"])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
        Ok(Self {
            label: label.to_owned(),
            bin: bin.to_owned(),
            list_jobs: String::from_utf8_lossy(&help.stdout).contains("--jobs"),
            two_jobs: Sample::default(),
            one_job: Sample::default(),
            parse: Sample::default(),
        })
    }
}

/// What the mix's runs must all give, byte for byte, whichever build and `--jobs`.
#[derive(Default)]
struct Expected {
    csv: Option<String>,
    log: Option<String>,
}

/// One `CI=1 harness run --metrics` of the mix by `side` with `jobs` workers: it must pass with
/// one passing row a case, and its CSV and terminal output must be those of every other run.
fn mix_run(
    side: &Side,
    corpus: &Corpus,
    cases: usize,
    jobs: usize,
    expected: &mut Expected,
) -> Result<Exit> {
    let scenarios = corpus.scenarios.to_string_lossy().into_owned();
    let csv = corpus.work.join("mix.csv");
    let _ = fs::remove_file(&csv);
    let csv_arg = csv.to_string_lossy().into_owned();
    let jobs = jobs.to_string();
    let args = [
        "run",
        scenarios.as_str(),
        "--metrics",
        csv_arg.as_str(),
        "--jobs",
        jobs.as_str(),
    ];
    let exit = harness_bin(&side.bin, corpus, &args, true, &corpus.work.join("mix.log"))?;
    if exit.code != Some(0) {
        return Err(format!(
            "{}: `harness {}` exited with {:?}:\n{}",
            side.label,
            args.join(" "),
            exit.code,
            tail(&exit.stdout, 30)
        ));
    }
    let check = check_csv(&csv)?;
    if check.rows != cases {
        return Err(format!(
            "{}: {} CSV rows for {cases} cases",
            side.label, check.rows
        ));
    }
    let text = fs::read_to_string(&csv).map_err(|e| format!("{csv_arg}: {e}"))?;
    for (what, got, want) in [
        ("metrics CSV", &text, &mut expected.csv),
        ("terminal output", &exit.stdout, &mut expected.log),
    ] {
        match want {
            Some(w) if w != got => {
                return Err(format!(
                    "{}: the {what} of the run with --jobs {jobs} differs from the first run's: outputs must not change",
                    side.label
                ));
            }
            Some(_) => {}
            None => *want = Some(got.clone()),
        }
    }
    Ok(Exit {
        stdout: String::new(),
        ..exit
    })
}

/// The bundled mix: this build (and the old one, when named), runs interleaved.
pub(super) fn bench_mix(settings: &Settings, tmp: &Path, cores: usize) -> Result<()> {
    let root = match &settings.reuse {
        Some(dir) => dir.join("mix"),
        None => tmp.join("mix"),
    };
    let (corpus, files, copies) = if settings.reuse.is_some() {
        let files = walkdir_count(&root.join("scenarios"));
        (reuse(&root, settings.mix)?, files, 0)
    } else {
        prepare_mix(&root, settings.mix)?
    };
    let scenarios = corpus.scenarios.to_string_lossy().into_owned();
    let listed = harness(
        &corpus,
        &["list", &scenarios],
        true,
        &corpus.work.join("cases.log"),
    )?;
    let cases = listed.stdout.lines().count();
    let mut sides = vec![Side::new("this build", Path::new(HARNESS))?];
    if let Some(old) = &settings.old {
        sides.push(Side::new(&format!("old ({})", old.display()), old)?);
    }
    let mut expected = Expected::default();
    let jobs = cores.max(2);
    let first = mix_run(&sides[0], &corpus, cases, jobs, &mut expected)?;
    let model_calls = check_csv(&corpus.work.join("mix.csv"))?.model_calls;
    drop(first);
    for rep in 0..=settings.reps {
        for side in &mut sides {
            let exit = mix_run(side, &corpus, cases, jobs, &mut expected)?;
            if rep > 0 {
                record(&mut side.two_jobs, &exit, model_calls);
            }
        }
    }
    for rep in 0..=settings.reps {
        for side in &mut sides {
            let exit = mix_run(side, &corpus, cases, 1, &mut expected)?;
            if rep > 0 {
                record(&mut side.one_job, &exit, model_calls);
            }
        }
    }
    let goldens = files_under(&corpus.snapshots);
    let mut floors = Vec::new();
    for rep in 0..=settings.reps {
        for side in &mut sides {
            let mut args = vec!["list", scenarios.as_str()];
            if side.list_jobs {
                args.extend(["--jobs", "1"]);
            }
            let exit = harness_bin(
                &side.bin,
                &corpus,
                &args,
                true,
                &corpus.work.join("list.log"),
            )?;
            if exit.code != Some(0) || exit.stdout.lines().count() != cases {
                return Err(format!(
                    "{}: `harness list` failed or listed other cases",
                    side.label
                ));
            }
            if rep > 0 {
                record(&mut side.parse, &exit, 0);
            }
        }
        let floor = read_goldens(&goldens)?;
        if rep > 0 {
            floors.push(floor);
        }
    }

    println!();
    println!(
        "Bundled mix: {files} files ({}every file of scenarios/, all families, real/ included), {cases} cases, {model_calls} model turns, goldens accepted; CI=1 harness run --metrics; {} runs per row after a warm-up, builds interleaved; every run passes with byte-identical CSV and terminal output",
        if copies > 0 {
            format!("{copies} copies of ")
        } else {
            String::new()
        },
        settings.reps
    );
    println!(
        "|          build | --jobs {jobs} best s | median s | turns/s | µs/turn | one-job CPU s | parse-only CPU s | run / parse | peak RSS MiB |"
    );
    println!(
        "|---------------:|----------------:|---------:|--------:|--------:|--------------:|-----------------:|------------:|-------------:|"
    );
    let mut ratio_new = None;
    for side in &sides {
        let (run, parse) = (
            side.one_job.median_cpu().as_secs_f64(),
            side.parse.median_cpu().as_secs_f64(),
        );
        let ratio = run / parse.max(1e-9);
        ratio_new.get_or_insert(ratio);
        let med = side.two_jobs.median().as_secs_f64();
        let best = side.two_jobs.best().as_secs_f64();
        println!(
            "| {:>14} | {best:>15.3} | {:>8.3} | {:>7.0} | {:>7.2} | {run:>13.3} | {parse:>16.3} | {ratio:>11.2} | {:>12.1} |",
            if side.label.len() > 14 {
                "old"
            } else {
                side.label.as_str()
            },
            med,
            model_calls as f64 / med,
            best * 1e6 / model_calls.max(1) as f64,
            mib(side.two_jobs.maxrss_kib),
        );
    }
    if let Some(ratio) = ratio_new {
        println!(
            "Target (on the bundled mix, the one-job run within {MIX_RUN_TO_PARSE}x the CPU of the parse-only pass, medians): {} ({ratio:.2}x)",
            if ratio <= MIX_RUN_TO_PARSE {
                "HOLDS"
            } else {
                "MISSED"
            }
        );
    }
    golden_floor(&sides[0], &floors, &goldens, model_calls);
    match &settings.peer {
        Some(python) => {
            let per_turn = sides[0].two_jobs.best().as_secs_f64() / model_calls.max(1) as f64;
            let peer = bench_peer(python, &corpus.work, 3)?;
            let ratio = peer / per_turn;
            println!(
                "Peer: inspect_ai's react() agent on its mock model, {} and {} samples of five turns, best of 3 each: {:.1} µs a turn (the difference of the two runs over the turns it adds); harness: {:.2} µs a turn (best --jobs {jobs} wall of the whole run over its model turns)",
                PEER_SAMPLES[0],
                PEER_SAMPLES[1],
                peer * 1e6,
                per_turn * 1e6
            );
            // The peer's eval runs in one process on one core: core for core, the one-job run.
            let per_core = sides[0].one_job.median_cpu().as_secs_f64() / model_calls.max(1) as f64;
            println!(
                "Core for core (harness's one-job CPU over its model turns, {:.2} µs a turn): {:.0}x",
                per_core * 1e6,
                peer / per_core
            );
            println!(
                "Target (a model turn at least {PEER_RATIO}x cheaper than the peer's, as a user waits for it on this machine): {} ({ratio:.0}x)",
                if ratio >= PEER_RATIO {
                    "HOLDS"
                } else {
                    "MISSED"
                }
            );
        }
        None => println!(
            "Target ({PEER_RATIO}x cheaper a model turn than inspect_ai): not checked (RUN_CORPUS_PEER names no Python with inspect_ai)"
        ),
    }
    if let Some(old) = sides.get(1) {
        let (then, now) = (
            old.two_jobs.median().as_secs_f64(),
            sides[0].two_jobs.median().as_secs_f64(),
        );
        println!(
            "Beside {} (a comparison, not a target): --jobs {jobs} median wall time {then:.3} s there, {now:.3} s here ({:.2}x)",
            old.label,
            then / now
        );
    }
    if !settings.keep && settings.reuse.is_none() {
        let _ = fs::remove_dir_all(&root);
    }
    Ok(())
}

/// Seconds a model turn costs inspect_ai's `react()` agent on its mock model: `python` runs
/// [`PEER_SCRIPT`] with each of [`PEER_SAMPLES`], `reps` times, interleaved; the best times
/// of the two sizes differ by the cost of the turns the larger adds.
fn bench_peer(python: &Path, work: &Path, reps: usize) -> Result<f64> {
    let mut best = [f64::INFINITY; 2];
    let mut turns = [0u64; 2];
    for rep in 0..reps {
        for (i, &samples) in PEER_SAMPLES.iter().enumerate() {
            let logs = work.join(format!("peer-logs-{rep}-{samples}"));
            let out = Command::new(python)
                .arg(PEER_SCRIPT)
                .arg(samples.to_string())
                .arg(&logs)
                .current_dir(work)
                .env("INSPECT_LOG_LEVEL", "warning")
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run {} {PEER_SCRIPT}: {e}", python.display()))?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            let line = stdout.lines().rev().find(|l| l.starts_with("samples="));
            let field = |name: &str| {
                line.and_then(|l| {
                    l.split_whitespace()
                        .find_map(|kv| kv.strip_prefix(name)?.strip_prefix('='))
                })
            };
            let (Some(secs), Some(t), Some(passed)) = (
                field("seconds").and_then(|v| v.parse::<f64>().ok()),
                field("turns").and_then(|v| v.parse::<u64>().ok()),
                field("passed").and_then(|v| v.parse::<usize>().ok()),
            ) else {
                return Err(format!(
                    "the peer ({} {PEER_SCRIPT} {samples}) printed no result, exit {:?}:\n{}\n{}",
                    python.display(),
                    out.status.code(),
                    tail(&stdout, 10),
                    tail(&String::from_utf8_lossy(&out.stderr), 20)
                ));
            };
            if passed != samples || t != 5 * samples as u64 {
                return Err(format!(
                    "the peer's run of {samples} samples passed {passed} with {t} model turns: each sample must pass in five"
                ));
            }
            best[i] = best[i].min(secs);
            turns[i] = t;
            let _ = fs::remove_dir_all(&logs);
        }
    }
    let added = turns[1].saturating_sub(turns[0]).max(1) as f64;
    Ok(((best[1] - best[0]) / added).max(0.0))
}

/// Files below `dir`.
/// Every file under `dir`, in no particular order.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(entry.path());
            } else {
                out.push(entry.path());
            }
        }
    }
    out
}

/// This thread's CPU time so far, user and system.
fn thread_cpu() -> Duration {
    // SAFETY: `rusage` is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer is to a live local; RUSAGE_THREAD names the calling thread.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &raw mut ru) };
    timeval(ru.ru_utime) + timeval(ru.ru_stime)
}

/// The CPU time of opening and reading every file of `goldens` once, into one buffer, with
/// the fewest system calls a file can take (open, read until the end, close: no `statx` for
/// a size hint): the least a run that compares its cases with their goldens spends that the
/// parse-only pass does not.
fn read_goldens(goldens: &[PathBuf]) -> Result<(Duration, u64)> {
    use std::io::Read as _;
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    let start = thread_cpu();
    for path in goldens {
        let mut f = fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        loop {
            match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => bytes += n as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
    }
    Ok((thread_cpu() - start, bytes))
}

/// What the run / parse gate leaves for everything a run does beyond the parse-only pass,
/// and how much of it reading the goldens alone takes, before any replay.
fn golden_floor(side: &Side, floors: &[(Duration, u64)], goldens: &[PathBuf], turns: u64) {
    let parse = side.parse.median_cpu().as_secs_f64();
    let allowed = (MIX_RUN_TO_PARSE - 1.0) * parse;
    let mut cpu: Vec<Duration> = floors.iter().map(|f| f.0).collect();
    cpu.sort_unstable();
    let floor = median(&cpu).as_secs_f64();
    let bytes = floors.first().map_or(0, |f| f.1);
    let left = (allowed - floor).max(0.0);
    println!(
        "The floor under the run / parse gate: opening and reading the {} golden files alone ({:.1} MB, in this process, median of {}) takes {floor:.3} s of CPU; the gate allows the run {allowed:.3} s beyond the parse-only pass ({:.2} of it gone before any replay); what is left, {left:.3} s, would have to hold the replay of {turns} model turns, their golden text and its comparison: {:.3} µs a turn, {:.2} ns a byte of golden text",
        goldens.len(),
        bytes as f64 / 1e6,
        cpu.len(),
        floor / allowed.max(1e-9),
        left * 1e6 / turns.max(1) as f64,
        left * 1e9 / bytes.max(1) as f64,
    );
}
