//! `harness sweep` and `harness import` over the hand-written transcripts of
//! `fixtures/transcripts/` (one folder per format; broken files in `fixtures/invalid/transcript/`), and
//! over the public corpus the repository carries (`corpus/`, 730 runs): the committed
//! `docs/tuning/` must come out of it byte for byte.
//!
//! Mirrors docs/sweeps.md: the committed sweep and labels come out of its commands, and its
//! `exec:` detector example runs.

use crate::support::{Project, repo};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Formats whose fixtures the sweep tests below do not read, and why.
const NOT_SWEPT_HERE: [(&str, &str); 1] = [(
    "otlp",
    "OpenTelemetry traces: harden.rs and otlp.rs read them; the counts below are the others'",
)];

pub(crate) fn fixture(rel: &str) -> String {
    repo()
        .join("fixtures/transcripts")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

/// The well-formed fixture folders, one per format of the registry (`import::FORMATS`): a
/// new format's fixtures are read here, or it is in [`NOT_SWEPT_HERE`] with the reason.
pub(crate) fn formats() -> Vec<String> {
    harness::import::Format::all()
        .map(harness::import::Format::as_str)
        .filter(|f| NOT_SWEPT_HERE.iter().all(|(n, _)| n != f))
        .map(|f| {
            let folder = fixture(f);
            assert!(
                Path::new(&folder).is_dir(),
                "format `{f}` has no fixtures/transcripts/{f}/"
            );
            folder
        })
        .collect()
}

/// CSV rows keyed by `detector params`, each a column → value map.
pub(crate) fn rows(csv: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    lines
        .map(|l| {
            let cells: BTreeMap<String, String> = header
                .iter()
                .zip(l.split(','))
                .map(|(h, c)| ((*h).to_owned(), c.to_owned()))
                .collect();
            (format!("{} {}", cells["detector"], cells["params"]), cells)
        })
        .collect()
}

pub(crate) fn sweep(p: &Project, paths: &[String], extra: &[&str]) -> crate::support::Run {
    let mut args: Vec<&str> = vec!["sweep"];
    args.extend(paths.iter().map(String::as_str));
    args.extend(extra);
    p.harness(&args)
}

/// The fixtures are built so that (by design, see each file): 15 runs, 5 successful; five
/// failed or unlabelled runs repeat one call 3 or 4 times (stuck; two of them 4 times); one successful run repeats
/// a poll twice with changing output (the false alarm at k=2); one unlabelled run repeats a
/// failing call twice (fired on at k=2, neither a catch nor a false alarm).
#[test]
fn sweep_scores_the_fixture_transcripts_of_every_format() {
    let p = Project::new();
    let run = sweep(
        &p,
        &formats(),
        &[
            "--detector",
            "consecutive-identical:k=2,3,4",
            "--out",
            "out.csv",
            "--plot",
            "out.svg",
            "--fires",
            "fires.csv",
        ],
    );
    run.expect_code(0)
        .expect_stdout("harness sweep: 15 runs from 11 files (5 successful, 5 stuck")
        .expect_stdout("Best setting per detector");
    let rows = rows(&p.read("out.csv"));
    let get = |k: &str, col: &str| rows[&format!("consecutive-identical k={k}")][col].clone();
    assert_eq!(rows.len(), 3);
    assert_eq!(
        (
            get("2", "runs"),
            get("2", "successful_runs"),
            get("2", "stuck_runs")
        ),
        ("15".into(), "5".into(), "5".into())
    );
    assert_eq!(
        (get("2", "false_alarms"), get("2", "caught")),
        ("1".into(), "5".into())
    );
    assert_eq!(
        (get("3", "false_alarms"), get("3", "caught")),
        ("0".into(), "5".into())
    );
    assert_eq!(
        (get("4", "false_alarms"), get("4", "caught")),
        ("0".into(), "2".into())
    );
    assert_eq!(get("3", "recall"), "1.000");
    assert_eq!(get("2", "precision"), "0.833");
    assert!(p.read("out.svg").starts_with("<svg"));
    // The per-run rows agree with the totals, and name the run each alarm was on.
    let fires = p.read("fires.csv");
    let count = |params: &str, outcome: &str| {
        fires
            .lines()
            .filter(|l| l.contains(&format!(",{params},")) && l.ends_with(&format!(",{outcome}")))
            .count()
            .to_string()
    };
    for k in ["2", "3", "4"] {
        let params = format!("k={k}");
        assert_eq!(
            count(&params, "false_alarm"),
            get(k, "false_alarms"),
            "k={k}\n{fires}"
        );
        assert_eq!(count(&params, "caught"), get(k, "caught"), "k={k}\n{fires}");
    }
    assert!(
        fires.contains(
            "airline.json#task2_trial0,consecutive-identical,k=2,1,stop,true,false,,false_alarm"
        ),
        "{fires}"
    );
}

#[test]
fn malformed_transcripts_are_located_and_the_others_still_scored() {
    let p = Project::new();
    // The broken files live in the bad-input catalogue (tests/integration/invalid.rs has all).
    let broken = |name: &str| {
        repo()
            .join("fixtures/invalid/transcript")
            .join(name)
            .to_string_lossy()
            .into_owned()
    };
    let run = sweep(
        &p,
        &[
            fixture(""),
            broken("truncated-tau-bench.json"),
            broken("tau2-messages-not-a-list.json"),
            broken("openai-bad-line.jsonl"),
        ],
        &[
            "--detector",
            "consecutive-identical:k=3",
            "--out",
            "out.csv",
        ],
    );
    run.expect_code(2);
    for (file, at) in [
        ("truncated-tau-bench.json", ":18:"),
        (
            "tau2-messages-not-a-list.json",
            ":8:18: at `simulations[0].messages`",
        ),
        ("openai-bad-line.jsonl", ":2:"),
    ] {
        let line = run
            .stderr
            .lines()
            .find(|l| l.starts_with("error: ") && l.contains(file))
            .unwrap_or_else(|| panic!("no located error for {file}\n{}", run.stderr));
        assert!(line.contains(at), "{line}");
    }
    assert_eq!(run.stderr.matches("  hint: ").count(), 3, "{}", run.stderr);
    // The good files and the good lines of the JSON-lines file were still scored.
    let rows = rows(&p.read("out.csv"));
    assert_eq!(rows["consecutive-identical k=3"]["runs"], "22");
}

#[test]
fn imported_traces_sweep_like_the_transcripts() {
    let p = Project::new();
    let mut args = vec!["import".to_owned()];
    args.extend(formats());
    args.extend(["--out".to_owned(), "traces".to_owned()]);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    p.harness(&args)
        .expect_code(0)
        .expect_stdout("harness import: 15 run(s) written to traces");
    assert_eq!(p.files("traces", ".jsonl").len(), 15);
    let first = p.read("traces/airline_task1_trial0.jsonl");
    assert!(first.starts_with(r#"{"format":"harness-import","version":1,"run":"airline.json#task1_trial0","source":"tau-bench","success":false"#), "{first}");
    let spec = ["--detector", "all", "--out"];
    sweep(&p, &formats(), &[spec[0], spec[1], spec[2], "direct.csv"]).expect_code(0);
    sweep(
        &p,
        &["traces".to_owned()],
        &[spec[0], spec[1], spec[2], "imported.csv"],
    )
    .expect_code(0);
    assert_eq!(p.read("direct.csv"), p.read("imported.csv"));
}

#[test]
fn outputs_do_not_depend_on_jobs() {
    let p = Project::new();
    let mut outs = Vec::new();
    for jobs in ["1", "3"] {
        let csv = format!("j{jobs}.csv");
        let svg = format!("j{jobs}.svg");
        let labels = format!("j{jobs}.jsonl");
        let fires = format!("f{jobs}.csv");
        let run = sweep(
            &p,
            &[
                fixture(""),
                repo()
                    .join("fixtures/invalid/transcript")
                    .to_string_lossy()
                    .into_owned(),
                repo()
                    .join("scenarios/reflex")
                    .to_string_lossy()
                    .into_owned(),
            ],
            &[
                "--jobs",
                jobs,
                "--out",
                &csv,
                "--plot",
                &svg,
                "--write-labels",
                &labels,
                "--fires",
                &fires,
            ],
        );
        run.expect_code(2);
        let stdout = [&csv, &svg, &labels, &fires]
            .iter()
            .fold(run.stdout.clone(), |s, name| s.replace(name.as_str(), ""));
        outs.push((
            stdout,
            p.read(&csv),
            p.read(&svg),
            p.read(&labels),
            p.read(&fires),
        ));
    }
    assert_eq!(outs[0], outs[1]);
}

#[test]
fn a_labels_file_overrides_the_heuristic() {
    let p = Project::new();
    let spec = ["--detector", "consecutive-identical:k=3"];
    sweep(
        &p,
        &formats(),
        &[
            spec[0],
            spec[1],
            "--write-labels",
            "labels.jsonl",
            "--out",
            "a.csv",
        ],
    )
    .expect_code(0);
    let labels = p.read("labels.jsonl");
    assert_eq!(labels.lines().count(), 15);
    assert_eq!(
        labels
            .lines()
            .filter(|l| l.contains(r#""stuck":true"#))
            .count(),
        5
    );
    // Review: the SWE-agent run's repeated command is called not stuck after all.
    let edited: String = labels
        .lines()
        .map(|l| {
            if l.contains("loop.traj") {
                r#"{"run":"loop.traj","stuck":false,"loop_start":null,"note":"reviewed: not stuck"}"#.to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    p.write("labels.jsonl", edited);
    sweep(
        &p,
        &formats(),
        &[
            spec[0],
            spec[1],
            "--labels",
            "labels.jsonl",
            "--out",
            "b.csv",
        ],
    )
    .expect_code(0)
    .expect_stdout("4 stuck; labels: 15 from the file, 0 by the heuristic");
    assert_eq!(
        rows(&p.read("b.csv"))["consecutive-identical k=3"]["caught"],
        "4"
    );
    p.write("bad.jsonl", "{\"run\": \"x\", \"stuck\": true}\n");
    let run = sweep(&p, &formats(), &["--labels", "bad.jsonl"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("bad.jsonl:1:1: run `x` is stuck but has no `loop_start`"),
        "{}",
        run.stderr
    );
}

#[test]
fn bad_detector_specs_are_usage_errors() {
    let p = Project::new();
    let run = sweep(&p, &formats(), &["--detector", "moltis-reflex:windw=2"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("`moltis-reflex` has no parameter `windw`; its parameters: window"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("hint:"), "{}", run.stderr);
    let run = p.harness(&["import", &fixture("tau2"), "--format", "tau3", "--out", "x"]);
    run.expect_code(2);
    // Every format, in the order they are detected.
    assert!(
        run.stderr.contains(
            "known formats: otlp, tau-bench, toolbench, openhands, tau2, swe-agent, gemini, anthropic, openai"
        ),
        "{}",
        run.stderr
    );
    // The import command's help names each of them.
    let help = p.harness(&["import", "--help"]);
    for name in harness::import::Format::all().map(harness::import::Format::as_str) {
        let shown = if name == "otlp" { "OTLP" } else { name };
        assert!(help.stdout.contains(shown), "{name} not in\n{help}");
    }
}

/// The detectors' lifecycles and observations as upstream has them, on two real runs cut from
/// the corpus (`fixtures/real-excerpts/README.md`): moltis-reflex starts afresh at each user
/// message (window 2 fires across one only with `reset=run`), and openhands-stuck V0 compares
/// a function tool's observations by content.
#[test]
fn detectors_follow_their_upstream_lifecycle_on_real_runs() {
    let p = Project::new();
    let dir = repo().join("fixtures/real-excerpts");
    let fixtures: Vec<String> = [
        "tau2-retail-retry-after-user.json",
        "tau2-telecom-toggle-data.json",
    ]
    .iter()
    .map(|f| dir.join(f).to_string_lossy().into_owned())
    .collect();
    sweep(
        &p,
        &fixtures,
        &[
            "--detector",
            "moltis-reflex:window=2:reset=message,run",
            "--detector",
            "moltis-reflex:window=2",
            "--detector",
            "openhands-stuck:version=0:ao=2",
            "--out",
            "l.csv",
            "--fires",
            "f.csv",
        ],
    )
    .expect_code(0);
    let rows = rows(&p.read("l.csv"));
    let fa = |key: &str| rows[key]["false_alarms"].clone();
    assert_eq!(rows["moltis-reflex window=2"]["runs"], "2");
    assert_eq!(
        fa("moltis-reflex window=2"),
        "0",
        "the default is per message"
    );
    assert_eq!(fa("moltis-reflex window=2 reset=message"), "0");
    assert_eq!(fa("moltis-reflex window=2 reset=run"), "1");
    assert_eq!(fa("openhands-stuck version=0 ao=2"), "0");
    let fires = p.read("f.csv");
    assert!(
        fires.contains("tau2-retail-retry-after-user.json#27|trial0|e7d583ab,moltis-reflex,window=2 reset=run,9,warn"),
        "{fires}"
    );
    assert_eq!(fires.lines().count(), 2, "{fires}");
}

/// The importer fixes, each on a real file cut from the corpus (`fixtures/real-excerpts/`): a
/// ToolBench answer without `train_messages` is a file with no run (not an empty run); SWE-agent
/// observations `No such file` (without "or directory"), `EXECUTION TIMED OUT` and
/// `base64: invalid input` are failures; a bare array of tau2 simulations reads as tau2.
#[test]
fn importer_fixes_hold_on_real_files() {
    let p = Project::new();
    let dir = repo().join("fixtures/real-excerpts");
    let run = p.harness(&["import", &dir.to_string_lossy(), "--out", "out"]);
    run.expect_code(0);
    assert!(
        run.stderr.contains(
            "toolbench-G1-69-no-train-messages.json: skipped: a toolbench file with no run"
        ),
        "{run}"
    );
    assert!(
        !p.join("out")
            .join("toolbench-G1-69-no-train-messages.jsonl")
            .exists()
    );
    for (file, failing) in [
        ("swe-agent-flash.jsonl", "No such file"),
        ("swe-agent-katy.jsonl", "EXECUTION TIMED OUT"),
        ("swe-agent-eps.jsonl", "base64: invalid input"),
    ] {
        let trace = p.read(&format!("out/{file}"));
        let last_end = trace
            .lines()
            .rfind(|l| l.contains("\"kind\":\"tool_call_end\""))
            .unwrap_or_else(|| panic!("{file}: no tool result"));
        assert!(
            last_end.contains("\"ok\":false") && last_end.contains(failing),
            "{file}: {last_end}"
        );
    }
    let bare = p.read("out/tau2-bare-array_23_trial0_a77b4d53.jsonl");
    assert!(bare.contains("\"source\":\"tau2\""), "{bare}");
    let forced = p.harness(&[
        "import",
        &dir.join("tau2-bare-array.json").to_string_lossy(),
        "--format",
        "tau2",
        "--out",
        "forced",
    ]);
    forced.expect_code(0);
    let swept = p.harness(&[
        "sweep",
        &dir.to_string_lossy(),
        "--detector",
        "consecutive-identical:k=3",
    ]);
    swept
        .expect_code(0)
        .expect_stdout("harness sweep: 6 runs from 6 files, 1 file(s) with no run skipped (");
}

/// The external-detector protocol: the Python example (`examples/detectors/`) re-implements
/// `consecutive-identical`, and over the whole corpus its rows and fires equal the built-in's
/// for every k given.
#[test]
fn an_external_detector_scores_like_the_builtin_it_reimplements() {
    let corpus = corpus().to_string_lossy().into_owned();
    let example = repo().join("examples/detectors/consecutive_identical.py");
    let p = Project::new();
    let spec = format!("exec:{}:k=2,3,4", example.display());
    sweep(
        &p,
        &[corpus],
        &[
            "--detector",
            &spec,
            "--detector",
            "consecutive-identical:k=2,3,4",
            "--out",
            "c.csv",
            "--fires",
            "f.csv",
        ],
    )
    .expect_code(0);
    let rows = rows(&p.read("c.csv"));
    let external = format!("exec:{}", example.display());
    for k in 2..=4 {
        let mut builtin = rows[&format!("consecutive-identical k={k}")].clone();
        let mut theirs = rows[&format!("{external} k={k}")].clone();
        builtin.remove("detector");
        theirs.remove("detector");
        assert_eq!(theirs, builtin, "k={k}");
        assert_eq!(builtin["runs"], "728");
    }
    let fires = p.read("f.csv");
    let of = |detector: &str| -> Vec<String> {
        fires
            .lines()
            .filter(|l| l.split(',').nth(1) == Some(detector))
            .map(|l| l.replacen(&format!(",{detector},"), ",", 1))
            .collect()
    };
    let builtin = of("consecutive-identical");
    assert!(builtin.len() > 50, "{} fires", builtin.len());
    assert_eq!(of(&external), builtin);
}

/// A detector that answers nonsense, or dies, is an error naming the program and the run; its
/// setting has no row and the others are still scored (exit 1).
#[test]
fn a_failing_external_detector_is_named_and_the_others_still_scored() {
    let p = Project::new();
    p.write(
        "nonsense.py",
        "import sys\nfor line in sys.stdin:\n    print('maybe', flush=True)\n",
    );
    p.write("dies.py", "import sys\nsys.stdin.readline()\nsys.exit(3)\n");
    let fixtures = repo()
        .join("fixtures/transcripts")
        .to_string_lossy()
        .into_owned();
    let mut args: Vec<String> = vec!["sweep".into(), fixtures];
    for script in ["nonsense.py", "dies.py"] {
        p.write(
            &format!("{script}.sh"),
            format!(
                "#!/bin/sh\nexec python3 {} \"$@\"\n",
                p.join(script).display()
            ),
        );
        std::fs::set_permissions(
            p.join(&format!("{script}.sh")),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        args.push("--detector".into());
        args.push(format!(
            "exec:{}",
            p.join(&format!("{script}.sh")).display()
        ));
    }
    args.extend(["--detector", "consecutive-identical:k=3", "--out", "c.csv"].map(String::from));
    let run = p.harness(&args.iter().map(String::as_str).collect::<Vec<_>>());
    run.expect_code(1)
        .expect_stdout("2 setting(s) failed and have no row");
    assert!(
        run.stderr.contains("nonsense.py.sh: run ")
            && run.stderr.contains("its answer `maybe` is not JSON"),
        "{run}"
    );
    assert!(run.stderr.contains("without answering"), "{run}");
    let rows = rows(&p.read("c.csv"));
    assert_eq!(rows.len(), 1, "only the built-in setting has a row");
    assert!(rows.contains_key("consecutive-identical k=3"));
}

/// An executable script in the project, for `--detector exec:`.
fn script(p: &Project, name: &str, body: &str) -> String {
    p.write(name, body);
    std::fs::set_permissions(
        p.join(name),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    format!("exec:{}", p.join(name).display())
}

/// Whether a process is still there (a zombie counts as gone).
fn alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
        .is_ok_and(|stat| !stat.split(") ").nth(1).unwrap_or("").starts_with('Z'))
}

/// Issue 31: a detector that floods one endless line, one that hangs without answering (and
/// leaves a child behind, as a wrapper would), each fail their setting with a message within
/// the timeout, the others are scored, and no process of theirs outlives the sweep.
#[test]
fn flooding_and_hanging_detectors_fail_their_setting_and_leave_no_process() {
    let p = Project::new();
    let flood = script(
        &p,
        "flood.sh",
        "#!/bin/sh\necho $$ >> pids\nwhile :; do printf xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done\n",
    );
    let hang = script(
        &p,
        "hang.sh",
        "#!/bin/sh\necho $$ >> pids\nsleep 1000 &\necho $! >> pids\nsleep 1000\n",
    );
    let fixtures = repo()
        .join("fixtures/transcripts")
        .to_string_lossy()
        .into_owned();
    let run = sweep(
        &p,
        &[fixtures],
        &[
            "--detector",
            &flood,
            "--detector",
            &hang,
            "--detector",
            "consecutive-identical:k=3",
            "--detector-timeout-ms",
            "500",
            "--out",
            "c.csv",
        ],
    );
    run.expect_code(1)
        .expect_stdout("2 setting(s) failed and have no row");
    assert!(
        run.stderr.contains("flood.sh: run ")
            && run.stderr.contains("its answer is longer than 64 KiB"),
        "{run}"
    );
    assert!(
        run.stderr.contains("hang.sh: run ")
            && run
                .stderr
                .contains("it did not answer within 500 ms (--detector-timeout-ms)"),
        "{run}"
    );
    assert!(rows(&p.read("c.csv")).contains_key("consecutive-identical k=3"));
    let pids = p.read("pids");
    assert_eq!(pids.lines().count(), 3, "{pids}");
    for pid in pids.lines() {
        assert!(!alive(pid), "process {pid} outlived the sweep");
    }
}

/// Issue 31: detectors that keep running after their input closes get the exit grace together,
/// not one after another: six of them end within about one grace (2 s), not six.
#[test]
fn detectors_ignoring_the_end_of_input_share_one_exit_grace() {
    let p = Project::new();
    let stubborn = script(
        &p,
        "stubborn.py",
        "#!/usr/bin/env python3\nimport os, sys, time\nopen('pids', 'a').write(f'{os.getpid()}\\n')\nfor line in sys.stdin:\n    print('{\"fired\": null}', flush=True)\nopen('ends', 'a').write(f'{time.time()}\\n')\ntime.sleep(1000)\n",
    );
    let fixtures = repo()
        .join("fixtures/transcripts")
        .to_string_lossy()
        .into_owned();
    sweep(
        &p,
        &[fixtures],
        &[
            "--detector",
            &format!("{stubborn}:k=1,2,3,4,5,6"),
            "--out",
            "c.csv",
        ],
    )
    .expect_code(0);
    // Counted from when the last detector saw its input end (each writes the moment down), so
    // neither starting six interpreters nor the sweep's own work on a loaded machine counts:
    // what is left is the graces, one shared (2 s) or one each (12 s).
    let done = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock after 1970")
        .as_secs_f64();
    let ends = p.read("ends");
    assert_eq!(ends.lines().count(), 6, "{ends}");
    let last_end = ends
        .lines()
        .map(|t| t.parse::<f64>().expect("a time"))
        .fold(f64::MIN, f64::max);
    assert!(
        done - last_end < 8.0,
        "{} s after the last input ended",
        done - last_end
    );
    let pids = p.read("pids");
    assert_eq!(pids.lines().count(), 6, "{pids}");
    for pid in pids.lines() {
        assert!(!alive(pid), "process {pid} outlived the sweep");
    }
}

/// The corpus the repository carries; a clone without it is broken, and the tests say so
/// rather than pass on nothing.
fn corpus() -> PathBuf {
    let corpus = repo().join("corpus");
    assert!(
        corpus.join("manifest.json").is_file(),
        "the transcript corpus is missing: {} must hold the 730 public runs (see corpus/README.md)",
        corpus.display()
    );
    corpus
}

/// Every transcript `corpus/manifest.json` lists is there with its recorded size, and no
/// transcript is there that it does not list.
#[test]
fn corpus_matches_its_manifest() {
    let corpus = corpus();
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(corpus.join("manifest.json")).expect("read"))
            .expect("the manifest is JSON");
    let listed: BTreeMap<String, u64> = manifest["files"]
        .as_array()
        .expect("a files array")
        .iter()
        .map(|f| {
            (
                f["file"].as_str().expect("a file").to_owned(),
                f["bytes"].as_u64().expect("a size"),
            )
        })
        .collect();
    assert_eq!(listed.len(), 50);
    let mut found = BTreeMap::new();
    let mut stack = vec![corpus.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read the corpus") {
            let path = entry.expect("an entry").path();
            let rel = path
                .strip_prefix(&corpus)
                .expect("below")
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                if !matches!(rel.as_str(), "LICENSES" | "annotations") {
                    stack.push(path);
                }
            } else if !matches!(rel.as_str(), "README.md" | "manifest.json") {
                found.insert(rel, std::fs::metadata(&path).expect("stat").len());
            }
        }
    }
    assert_eq!(found, listed);
}

/// The committed sweep (`docs/tuning/`) comes out of the corpus byte for byte with the
/// commands of docs/sweeps.md.
#[test]
fn docs_tuning_is_reproduced_from_the_corpus() {
    let corpus = corpus().to_string_lossy().into_owned();
    let p = Project::new();
    let labels = repo().join("docs/tuning/labels.jsonl");
    sweep(
        &p,
        std::slice::from_ref(&corpus),
        &[
            "--detector",
            "all",
            "--detector",
            "openhands-stuck:version=0:ao=2..6",
            "--detector",
            "consecutive-identical:text_breaks=1:k=2..6",
            "--labels",
            &labels.to_string_lossy(),
            "--out",
            "sweep.csv",
            "--plot",
            "sweep.svg",
            "--fires",
            "fires.csv",
        ],
    )
    .expect_code(0);
    sweep(
        &p,
        &[corpus],
        &[
            "--detector",
            "consecutive-identical",
            "--write-labels",
            "labels.jsonl",
        ],
    )
    .expect_code(0);
    for file in ["sweep.csv", "sweep.svg", "fires.csv", "labels.jsonl"] {
        let committed = std::fs::read_to_string(repo().join("docs/tuning").join(file))
            .expect("the committed file");
        assert!(
            p.read(file) == committed,
            "docs/tuning/{file} is not what the command of docs/sweeps.md makes from corpus/: rerun it and review the change"
        );
    }
}

/// The corpus: `consecutive-identical` at k = 2, 3, 4
/// fires on exactly the successful runs whose longest run of identical consecutive calls
/// (`max_identical_run_callseq`, counted independently in `annotations/repetition_scan.jsonl`)
/// is at least k.
#[test]
fn corpus_consecutive_identical_agrees_with_the_repetition_scan() {
    let corpus = corpus();
    let scan = std::fs::read_to_string(corpus.join("annotations/repetition_scan.jsonl"))
        .expect("the scan");
    let p = Project::new();
    let run = sweep(
        &p,
        &[corpus.to_string_lossy().into_owned()],
        &[
            "--detector",
            "consecutive-identical:k=2,3,4",
            "--out",
            "c.csv",
        ],
    );
    run.expect_code(0);
    // The scan lists every file's run; the sweep skips files with no run (and says so), such
    // as ToolBench answers that keep only their search tree.
    let skipped: Vec<String> = run
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("note: ")?.split_once(": skipped: "))
        .filter_map(|(path, _)| {
            Some(
                Path::new(path)
                    .strip_prefix(&corpus)
                    .ok()?
                    .to_string_lossy()
                    .into_owned(),
            )
        })
        .collect();
    let entries: Vec<serde_json::Value> = scan
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("a scan line"))
        .filter(|e| !skipped.iter().any(|f| e["file"] == f.as_str()))
        .collect();
    assert_eq!(entries.len(), 728, "{skipped:?}");
    let successful: Vec<&serde_json::Value> =
        entries.iter().filter(|e| e["success"] == true).collect();
    let rows = rows(&p.read("c.csv"));
    for k in [2u64, 3, 4] {
        let row = &rows[&format!("consecutive-identical k={k}")];
        assert_eq!(row["runs"], entries.len().to_string());
        assert_eq!(row["successful_runs"], successful.len().to_string());
        let expected = successful
            .iter()
            .filter(|e| e["max_identical_run_callseq"].as_u64().expect("a count") >= k)
            .count();
        assert_eq!(row["false_alarms"], expected.to_string(), "k={k}");
    }
}

/// The shipped labels (`docs/tuning/labels.jsonl`) are the heuristic's output for the corpus,
/// run for run, except labels changed by a reviewer, whose note must start with `reviewed`.
#[test]
fn shipped_labels_are_the_heuristics_or_reviewed() {
    let corpus = corpus();
    let p = Project::new();
    sweep(
        &p,
        &[corpus.to_string_lossy().into_owned()],
        &[
            "--detector",
            "consecutive-identical:k=3",
            "--write-labels",
            "fresh.jsonl",
        ],
    )
    .expect_code(0);
    let parse = |text: &str| -> BTreeMap<String, serde_json::Value> {
        text.lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("a label");
                (v["run"].as_str().expect("a run id").to_owned(), v)
            })
            .collect()
    };
    let fresh = parse(&p.read("fresh.jsonl"));
    let shipped = parse(
        &std::fs::read_to_string(repo().join("docs/tuning/labels.jsonl")).expect("the labels"),
    );
    assert_eq!(
        fresh.keys().collect::<Vec<_>>(),
        shipped.keys().collect::<Vec<_>>(),
        "the shipped labels name every run of the corpus, and no other"
    );
    for (run, label) in &shipped {
        let reviewed = label["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("reviewed"));
        assert!(
            reviewed || *label == fresh[run],
            "{run}: shipped {label} differs from the heuristic's {} without a `reviewed` note",
            fresh[run]
        );
    }
}

/// A cassette is one more kind of input: replayed strictly through its scenario, it is scored
/// like a transcript; a cassette whose scenario drifted still counts as a run, unsuccessful.
#[test]
fn cassettes_sweep_as_replayed_runs() {
    let p = Project::new();
    p.copy_from_repo("scenarios/record", "scenarios/record");
    let cassette = "scenarios/record/fixtures/cassettes/reflex-live.cassette.json".to_owned();
    let spec = ["--detector", "consecutive-identical:k=2"];
    let args = |out: &'static str| {
        let mut a = spec.to_vec();
        a.extend(["--out", out]);
        a
    };
    sweep(&p, std::slice::from_ref(&cassette), &args("a.csv")).expect_code(0);
    let a = rows(&p.read("a.csv"));
    let row = &a["consecutive-identical k=2"];
    assert_eq!(row["runs"], "1");
    // The recording repeats `exec({})` until the reflex detector's nudge: k=2 fires on it.
    assert_eq!(row["successful_runs"], "1", "{row:?}");
    assert_eq!(row["false_alarms"], "1", "{row:?}");

    let scenario = "scenarios/record/reflex-live.toml";
    let drifted = p
        .read(scenario)
        .replace("Use tools to act.", "Use tools with care.");
    p.write(scenario, drifted);
    sweep(&p, &[cassette], &args("b.csv")).expect_code(0);
    let b = rows(&p.read("b.csv"));
    assert_eq!(b["consecutive-identical k=2"]["runs"], "1");
    assert_eq!(b["consecutive-identical k=2"]["successful_runs"], "0");
}

/// A sweep of the corpus split into 3 shards (by count and by hash) and merged gives one
/// sweep's CSV, fires, page, plot and labels byte for byte; a merge of some shards, of a shard
/// twice, or of shards of different sweeps is refused with nothing written. Mirrors the
/// partitioned sweep of docs/production-traces.md ("Sweeps that outgrow one machine").
#[test]
fn a_sweep_split_into_shards_and_merged_is_one_sweep() {
    let corpus = corpus().to_string_lossy().into_owned();
    let p = Project::new();
    let labels = repo().join("docs/tuning/labels.jsonl");
    let labels = labels.to_string_lossy();
    let outputs = |prefix: &str| -> Vec<String> {
        [
            ("--out", "csv"),
            ("--fires", "fires.csv"),
            ("--html", "html"),
            ("--plot", "svg"),
            ("--write-labels", "labels.jsonl"),
        ]
        .iter()
        .flat_map(|(flag, ext)| [(*flag).to_owned(), format!("{prefix}.{ext}")])
        .collect()
    };
    let one: Vec<String> = ["--detector", "all", "--labels", &labels]
        .iter()
        .map(|s| (*s).to_owned())
        .chain(outputs("one"))
        .collect();
    let one: Vec<&str> = one.iter().map(String::as_str).collect();
    sweep(&p, std::slice::from_ref(&corpus), &one).expect_code(0);
    for kind in ["count", "hash"] {
        let mut partials = Vec::new();
        for m in 1..=3 {
            let shard = format!("{kind}:{m}/3");
            let partial = format!("{kind}-{m}.jsonl");
            sweep(
                &p,
                std::slice::from_ref(&corpus),
                &[
                    "--detector",
                    "all",
                    "--labels",
                    &labels,
                    "--partition",
                    &shard,
                    "--partial",
                    &partial,
                ],
            )
            .expect_code(0)
            .expect_stdout(&format!("(shard {shard})"));
            partials.push(partial);
        }
        // The shards share the files out: each has some, none all (a header, the files' records,
        // the end).
        let runs: Vec<usize> = partials
            .iter()
            .map(|f| p.read(f).lines().count() - 2)
            .collect();
        assert!(
            runs.iter().all(|&n| n > 0) && runs.iter().sum::<usize>() == 52,
            "{runs:?}"
        );
        // Merged in any order.
        partials.reverse();
        let mut args: Vec<String> = vec!["sweep".into(), "--merge".into()];
        args.extend(partials.iter().cloned());
        args.extend(outputs(kind));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        p.harness(&args)
            .expect_code(0)
            .expect_stdout("728 runs from 46 files");
        for ext in ["csv", "fires.csv", "html", "svg", "labels.jsonl"] {
            assert!(
                p.read(&format!("{kind}.{ext}")) == p.read(&format!("one.{ext}")),
                "the merged {kind} shards' {ext} differs from one sweep's"
            );
        }
    }
    // Partials that are not what their shard wrote: a copy cut short, a record given twice,
    // records out of order, a shard swept on a checkout missing files, a stopped shard.
    let whole = p.read("count-2.jsonl");
    let lines: Vec<&str> = whole.lines().collect();
    let n = lines.len();
    let join = |ls: &[&str]| ls.iter().map(|l| format!("{l}\n")).collect::<String>();
    p.write("cut.jsonl", join(&lines[..n - 1]));
    let mut twice = lines.clone();
    twice.insert(2, lines[1]);
    p.write("twice.jsonl", join(&twice));
    let mut swapped = lines.clone();
    swapped.swap(1, 2);
    p.write("swapped.jsonl", join(&swapped));
    let mut header: serde_json::Value = serde_json::from_str(lines[0]).expect("a header");
    header["inputs"] = serde_json::json!(23);
    let elsewhere = header.to_string();
    let mut other = lines.clone();
    other[0] = &elsewhere;
    p.write("elsewhere.jsonl", join(&other));
    // A sweep stopped early writes fewer records than its header says are its shard's.
    let mut header: serde_json::Value = serde_json::from_str(lines[0]).expect("a header");
    header["shard_files"] = serde_json::json!(header["shard_files"].as_u64().unwrap_or(0) + 1);
    let more = header.to_string();
    let mut stopped = lines.clone();
    stopped[0] = &more;
    p.write("stopped.jsonl", join(&stopped));
    // A shard emptied to its header and an end line that agree (no records, no files): the
    // shards then hold fewer files than the sweep found.
    let mut header: serde_json::Value = serde_json::from_str(lines[0]).expect("a header");
    header["shard_files"] = serde_json::json!(0);
    let end: serde_json::Value = serde_json::from_str(lines[n - 1]).expect("an end line");
    let empty_end = serde_json::json!({"format": end["format"], "files": 0, "runs": 0,
        "digest": 14_695_981_039_346_656_037_u64});
    p.write("emptied.jsonl", format!("{header}\n{empty_end}\n"));
    // Not the whole sweep: refused, and nothing written.
    for (partials, says) in [
        (
            &["count-1.jsonl", "cut.jsonl", "count-3.jsonl"][..],
            "the partial ends without its last line: it was cut short",
        ),
        (
            &["count-1.jsonl", "twice.jsonl", "count-3.jsonl"][..],
            "is repeated (records come once each",
        ),
        (
            &["count-1.jsonl", "swapped.jsonl", "count-3.jsonl"][..],
            "is out of order (records come once each",
        ),
        (
            &["count-1.jsonl", "elsewhere.jsonl", "count-3.jsonl"][..],
            "they found other input files (52 and 23",
        ),
        (
            &["count-1.jsonl", "stopped.jsonl", "count-3.jsonl"][..],
            "the sweep that wrote it stopped early",
        ),
        (
            &["count-1.jsonl", "emptied.jsonl", "count-3.jsonl"][..],
            "that are not the 52 file(s) the sweep found",
        ),
        (
            &["count-1.jsonl", "/dev/zero", "count-3.jsonl"][..],
            "harness reads regular files",
        ),
        (
            &["count-1.jsonl", "count-2.jsonl"][..],
            "shard(s) 3 of 3 missing",
        ),
        (
            &[
                "count-1.jsonl",
                "count-1.jsonl",
                "count-2.jsonl",
                "count-3.jsonl",
            ][..],
            "both shard 1 of 3",
        ),
        (
            &["count-1.jsonl", "hash-2.jsonl", "hash-3.jsonl"][..],
            "not shards of one sweep: their partitions differ",
        ),
    ] {
        let mut args = vec!["sweep", "--merge"];
        args.extend(partials);
        args.extend(["--out", "partial.csv"]);
        let run = p.harness(&args);
        run.expect_code(2);
        assert!(run.stderr.contains(says), "{}", run.stderr);
        assert!(!p.exists("partial.csv"));
    }
}

/// An external detector sees the runs in the sweep's order, one at a time, whatever `--jobs`
/// (the pool scores the built-in settings; the fold asks the external ones as files come in
/// order), two external settings side by side each in that order.
#[test]
fn external_detectors_see_the_runs_in_the_sweeps_order_for_any_jobs() {
    let p = Project::new();
    let detector = script(
        &p,
        "order.py",
        &format!(
            "#!/usr/bin/env python3\nimport hashlib, json, sys\nname = sys.argv[1]\nfor line in sys.stdin:\n    with open({:?} + name, 'a') as f:\n        f.write(hashlib.sha1(line.encode()).hexdigest()[:12] + '\\n')\n    print(json.dumps({{'fired': None}}), flush=True)\n",
            p.join("seen-").display().to_string()
        ),
    );
    let corpus = repo()
        .join("fixtures/transcripts")
        .to_string_lossy()
        .into_owned();
    let spec = format!("{detector}:log=a,b");
    for jobs in ["1", "2"] {
        sweep(
            &p,
            std::slice::from_ref(&corpus),
            &["--detector", &spec, "--jobs", jobs],
        )
        .expect_code(0);
        for log in ["a", "b"] {
            std::fs::rename(
                p.join(&format!("seen-log={log}")),
                p.join(&format!("jobs{jobs}-{log}")),
            )
            .expect("the detector saw runs");
        }
    }
    let one = p.read("jobs1-a");
    assert_eq!(one.lines().count(), 20, "every run once");
    for other in ["jobs1-b", "jobs2-a", "jobs2-b"] {
        assert_eq!(p.read(other), one, "{other} saw the runs in another order");
    }
}
