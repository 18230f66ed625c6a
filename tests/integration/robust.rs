//! Nothing lost, nothing half-written: Ctrl-C (SIGINT) stops a run with its partial summary and
//! exit code 130; SIGKILL at any moment leaves every output absent or whole; outputs do not
//! depend on locale, timezone, current directory, environment or file-system order.

use crate::support::{EXAMPLE, EXAMPLE_ID, Project, repo};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::{harness_command as harness_in, wait_at_most};

/// The example's golden text under another scenario id.
fn golden_as(reference: &str, id: &str) -> String {
    let (_, rest) = reference.split_once('\n').expect("a header line");
    format!("# harness trace v1: {id}\n{rest}")
}

/// The example's pending goldens (own case and `@none`), from a run of its own.
fn example_goldens() -> (String, String) {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    (
        p.read(&format!("snapshots/{EXAMPLE_ID}.snap.new")),
        p.read(&format!("snapshots/{EXAMPLE_ID}@none.snap.new")),
    )
}

#[cfg(unix)]
#[test]
fn ctrl_c_stops_scheduling_prints_the_partial_summary_and_exits_130() {
    const FILES: usize = 1000;
    let (own, none) = example_goldens();
    let p = Project::new();
    let example = std::fs::read(repo().join(EXAMPLE)).expect("read the example");
    for i in 0..FILES {
        p.write(&format!("scenarios/big/s{i:04}.toml"), &example);
    }
    let stdout = std::fs::File::create(p.join("stdout.txt")).expect("create stdout.txt");
    let mut child = harness_in(
        p.path(),
        &[
            "run",
            "--jobs",
            "1",
            "--json",
            "out/r.json",
            "--junit",
            "out/j.xml",
            "--metrics",
            "out/m.csv",
        ],
    )
    .stdout(Stdio::from(stdout))
    .stderr(Stdio::null())
    .spawn()
    .expect("spawn harness");

    // Interrupt once the run is under way: some pending goldens are written.
    let start = Instant::now();
    let pending_now = || {
        walk(&p.join("snapshots"))
            .iter()
            .filter(|f| f.to_string_lossy().ends_with(".snap.new"))
            .count()
    };
    while pending_now() < 20 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the run wrote no pending goldens"
        );
        assert!(
            child.try_wait().expect("poll harness").is_none(),
            "the run ended before it could be interrupted"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: sends a signal to the child this test spawned and has not yet reaped.
    let sent = unsafe { libc::kill(pid, libc::SIGINT) };
    assert_eq!(sent, 0, "kill(SIGINT) failed");
    let status = wait_at_most(&mut child, Duration::from_secs(60));
    let out = p.read("stdout.txt");
    assert_eq!(status.code(), Some(130), "{out}");
    assert!(!out.contains("panicked"), "{out}");

    let summary = out
        .lines()
        .find(|l| l.starts_with("harness run: INTERRUPTED. "))
        .unwrap_or_else(|| panic!("no partial summary\n{out}"));
    let files_run: usize = summary
        .split(" cases from ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no file count in {summary:?}"));
    assert!(
        (1..FILES).contains(&files_run),
        "{files_run} of {FILES} files ran: {summary}"
    );
    assert!(
        out.contains(&format!(
            "{} scenario files were not run",
            FILES - files_run
        )),
        "{out}"
    );
    assert!(
        summary.contains(&format!("{} missing goldens", 2 * files_run)),
        "{summary}"
    );
    // The files in flight finished: every pending golden is whole, one pair per file run.
    let pending = p.tree("snapshots");
    assert_eq!(pending.len(), 2 * files_run, "{:?}", pending.keys());
    for (path, bytes) in &pending {
        let id = path
            .strip_prefix("snapshots/")
            .and_then(|p| p.strip_suffix(".snap.new"))
            .unwrap_or_else(|| panic!("unexpected file {path}"));
        let want = match id.strip_suffix("@none") {
            Some(own_id) => golden_as(&none, &format!("{own_id}@none")),
            None => golden_as(&own, id),
        };
        assert!(
            String::from_utf8_lossy(bytes) == want,
            "{path} is not the whole golden"
        );
    }
    // A partial run writes no report file.
    assert!(p.tree("out").is_empty(), "{:?}", p.tree("out").keys());
    assert!(p.files("", ".tmp").is_empty(), "{:?}", p.files("", ".tmp"));
}

/// A deterministic sequence in [0, 1) (a linear congruential generator).
struct Delays(u64);

impl Delays {
    fn next_fraction(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        #[expect(
            clippy::cast_precision_loss,
            reason = "53 bits of a 64-bit state are plenty for a delay"
        )]
        let f = (self.0 >> 11) as f64 / (1u64 << 53) as f64;
        f
    }
}

#[cfg(unix)]
#[test]
fn sigkill_at_any_moment_leaves_every_output_absent_or_whole_100_times() {
    const RUNS: usize = 100;
    let p = Project::new();
    let example = std::fs::read(repo().join(EXAMPLE)).expect("read the example");
    for i in 0..3 {
        p.write(&format!("scenarios/copies/c{i}.toml"), &example);
    }
    let args = [
        "run",
        "--jobs",
        "2",
        "--metrics",
        "out/metrics.csv",
        "--json",
        "out/results.json",
        "--junit",
        "out/junit.xml",
        "--traces",
        "out/traces",
    ];
    let outputs = |p: &Project| {
        let mut t = p.tree("snapshots");
        t.extend(p.tree("out"));
        t
    };
    let clear = |p: &Project| {
        for d in ["snapshots", "out"] {
            let _ = std::fs::remove_dir_all(p.join(d));
        }
    };

    // The whole outputs of an uninterrupted run, and how long one takes (the fastest of three,
    // so that most kills land before the end).
    let mut full_run = Duration::MAX;
    for _ in 0..3 {
        clear(&p);
        let start = Instant::now();
        let status = harness_in(p.path(), &args)
            .stdout(Stdio::null())
            .status()
            .expect("run harness");
        full_run = full_run.min(start.elapsed());
        assert_eq!(status.code(), Some(1), "missing goldens fail the run");
    }
    eprintln!("an uninterrupted run takes {full_run:?}");
    let reference: BTreeMap<String, Vec<u8>> = outputs(&p);
    assert!(
        reference.len() == 3 * 4 + 3 && !reference.keys().any(|k| k.contains(".harness-")),
        "{:?}",
        reference.keys()
    );

    let mut delays = Delays(0x5eed);
    let (mut cut_short, mut whole, mut temps) = (0, 0, 0);
    for i in 0..RUNS {
        clear(&p);
        let delay = full_run.mul_f64(1.2 * delays.next_fraction());
        let mut child = harness_in(p.path(), &args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn harness");
        std::thread::sleep(delay);
        let _ = child.kill(); // SIGKILL
        let _ = wait_at_most(&mut child, Duration::from_secs(30));

        let found = outputs(&p);
        for (path, bytes) in &found {
            let name = path.rsplit('/').next().unwrap_or(path);
            if name.starts_with(".harness-") && name.ends_with(".tmp") {
                // A killed write's temporary file: ignored, and cleaned by a later run.
                temps += 1;
                continue;
            }
            let want = reference
                .get(path)
                .unwrap_or_else(|| panic!("run {i} (killed after {delay:?}): unexpected {path}"));
            assert!(
                bytes == want,
                "run {i} (killed after {delay:?}): {path} is half-written ({} of {} bytes)",
                bytes.len(),
                want.len()
            );
        }
        if found.len() == reference.len() {
            whole += 1;
        } else {
            cut_short += 1;
        }
    }
    eprintln!("{cut_short} runs cut short, {whole} whole, {temps} temporary files left");
    assert!(
        cut_short > RUNS / 4,
        "only {cut_short} of {RUNS} runs were killed before their end ({whole} whole, {temps} temporary files)"
    );

    // Leftover temporary files do not disturb a later run.
    clear(&p);
    p.write("snapshots/copies/.harness-left.tmp", "half a golden");
    let run = p.harness(&["run"]);
    run.expect_code(1).expect_no_stdout(".harness-left");
    assert!(run.summary().contains("0 orphaned goldens"), "{run}");
}

/// Every output of one run of the bundled scenarios, run in `dir` (which holds `scenarios/`)
/// from `cwd` with these arguments' paths prefixed by `up` and this environment.
fn outputs_of(dir: &Path, cwd: &str, up: &str, env: &[(&str, &str)]) -> BTreeMap<String, Vec<u8>> {
    let at = |p: &str| format!("{up}{p}");
    let args = [
        "--scenarios-root".to_owned(),
        at("scenarios"),
        "--snapshots".to_owned(),
        at("snapshots"),
        "run".to_owned(),
        at("scenarios"),
        "--jobs".to_owned(),
        "2".to_owned(),
        "--metrics".to_owned(),
        at("out/metrics.csv"),
        "--json".to_owned(),
        at("out/results.json"),
        "--junit".to_owned(),
        at("out/junit.xml"),
        "--traces".to_owned(),
        at("out/traces"),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let work = dir.join(cwd);
    std::fs::create_dir_all(&work).expect("create the working folder");
    let out = harness_in(&work, &args)
        .envs(env.iter().copied())
        .output()
        .expect("run harness");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let mut files = BTreeMap::new();
    for sub in ["snapshots", "out"] {
        for entry in walk(&dir.join(sub)) {
            let rel = entry
                .strip_prefix(dir)
                .expect("inside the project")
                .to_string_lossy()
                .replace('\\', "/");
            files.insert(rel, std::fs::read(&entry).expect("read an output"));
        }
    }
    files.insert("stdout".to_owned(), out.stdout);
    files
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries {
            let path = e.expect("a folder entry").path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
    }
    out
}

/// Copy the repository's `scenarios/` into `to`, creating files in sorted or reverse order.
fn copy_scenarios(to: &Path, reverse: bool) {
    let mut files = walk(&repo().join("scenarios"));
    files.sort();
    if reverse {
        files.reverse();
    }
    for f in files {
        let rel = f.strip_prefix(repo()).expect("inside the repository");
        let dest = to.join(rel);
        std::fs::create_dir_all(dest.parent().expect("a parent")).expect("create folders");
        std::fs::copy(&f, &dest).expect("copy a scenario");
    }
}

#[test]
fn outputs_do_not_depend_on_locale_timezone_folder_environment_or_file_order() {
    let a = Project::new();
    copy_scenarios(a.path(), false);
    let plain = [("LANG", "C"), ("LC_ALL", "C"), ("TZ", "UTC")];
    let base = outputs_of(a.path(), ".", "", &plain);
    assert!(base.keys().any(|k| k.ends_with(".snap.new")) && base.contains_key("out/junit.xml"));

    // Another folder, files created in reverse order, another locale, timezone and
    // environment: every output byte for byte, the terminal output included.
    let b = Project::new();
    copy_scenarios(b.path(), true);
    let varied = [
        ("LANG", "de_DE.UTF-8"),
        ("LC_ALL", "tr_TR.UTF-8"),
        ("LC_NUMERIC", "fr_FR.UTF-8"),
        ("TZ", "Asia/Kathmandu"),
        ("HOME", "/nonexistent"),
        ("COLUMNS", "37"),
        ("TERM", "dumb"),
        ("RUST_BACKTRACE", "1"),
        ("RAYON_NUM_THREADS", "7"),
        ("HARNESS_UNRELATED", "x"),
    ];
    let other = outputs_of(b.path(), ".", "", &varied);
    assert_eq!(
        other.keys().collect::<Vec<_>>(),
        base.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &base {
        assert!(other[path] == *bytes, "{path} differs");
    }

    // Run from a subfolder with the paths adjusted: the goldens, traces and metrics are the
    // same bytes; the JSON, JUnit and terminal output name the scenario files by the paths
    // given, so they differ by that prefix only.
    let c = Project::new();
    copy_scenarios(c.path(), true);
    let sub = outputs_of(c.path(), "work", "../", &varied);
    assert_eq!(
        sub.keys().collect::<Vec<_>>(),
        base.keys().collect::<Vec<_>>()
    );
    for (path, bytes) in &base {
        if path.starts_with("snapshots/")
            || path.starts_with("out/traces/")
            || path == "out/metrics.csv"
        {
            assert!(
                sub[path] == *bytes,
                "{path} differs when run from a subfolder"
            );
        } else {
            let text = String::from_utf8_lossy(&sub[path]).replace("../scenarios/", "scenarios/");
            assert!(
                text == String::from_utf8_lossy(bytes),
                "{path} differs beyond the path prefix when run from a subfolder"
            );
        }
    }
}
