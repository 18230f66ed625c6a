//! Runs are deterministic: the bundled scenarios (plus generated variants, so that several
//! workers have work) give byte-identical pending goldens, metrics CSV, JSON-lines traces,
//! JSON results, JUnit, the HTML report and terminal output for `--jobs 1` and `--jobs 2`, run
//! twice each.

use crate::support::{EXAMPLE, Project, repo};
use std::collections::BTreeMap;

/// Generated variants of the example scenario added to the bundled ones.
const VARIANTS: usize = 12;

struct Outputs {
    jobs: &'static str,
    code: Option<i32>,
    stdout: String,
    scenario_files: usize,
    files: BTreeMap<String, Vec<u8>>,
}

fn run_corpus(jobs: &'static str) -> Outputs {
    let p = Project::new();
    p.copy_from_repo("scenarios", "scenarios");
    let example = std::fs::read_to_string(repo().join(EXAMPLE)).expect("read the example");
    for i in 0..VARIANTS {
        let user = format!("user = \"List the files in the project ({i} of them).\"");
        let text = example.replacen("user = \"List the files in the project.\"", &user, 1);
        assert_ne!(text, example, "the example's user message changed");
        p.write(
            &format!("scenarios/zz-determinism/variant-{i:02}.toml"),
            text,
        );
    }
    assert!(
        !p.exists("snapshots"),
        "the corpus must start without goldens"
    );

    let run = p.harness(&[
        "run",
        "--jobs",
        jobs,
        "--metrics",
        "out/metrics.csv",
        "--traces",
        "out/traces",
        "--json",
        "out/results.json",
        "--junit",
        "out/junit.xml",
        "--html",
        "out/report.html",
    ]);
    let scenario_files = p
        .tree("scenarios")
        .keys()
        .filter(|k| k.ends_with(".toml") || k.ends_with(".json"))
        .count();
    let mut files = p.tree("snapshots");
    files.extend(p.tree("out"));
    Outputs {
        jobs,
        code: run.code,
        stdout: run.stdout,
        scenario_files,
        files,
    }
}

#[test]
fn goldens_metrics_traces_and_output_do_not_depend_on_jobs() {
    let runs: Vec<Outputs> = ["1", "2", "1", "2"].into_iter().map(run_corpus).collect();
    let first = &runs[0];

    // Without goldens every case fails as missing (exit 1, not 2: the bundled scenarios are
    // valid) and gets a pending golden, a trace and a metrics row.
    assert_eq!(first.code, Some(1), "{}", first.stdout);
    let mut pending: Vec<&str> = first
        .files
        .keys()
        .filter_map(|k| k.strip_prefix("snapshots/")?.strip_suffix(".snap.new"))
        .collect();
    let mut traces: Vec<&str> = first
        .files
        .keys()
        .filter_map(|k| k.strip_prefix("out/traces/")?.strip_suffix(".jsonl"))
        .collect();
    pending.sort_unstable();
    assert!(pending.len() >= 2 * (VARIANTS + 1), "{pending:?}");
    traces.sort_unstable();
    assert_eq!(
        pending, traces,
        "every case has a pending golden and a trace"
    );
    let csv = String::from_utf8(first.files["out/metrics.csv"].clone()).unwrap();
    let mut rows: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    rows.sort_unstable();
    assert_eq!(rows, pending, "one metrics row per case");
    assert!(
        first.stdout.contains(&format!(
            "{} cases from {} files: 0 passed",
            pending.len(),
            first.scenario_files
        )),
        "{}",
        first.stdout
    );
    assert_eq!(
        first.stdout.matches("  no golden yet  (scenarios/").count(),
        pending.len(),
        "{}",
        first.stdout
    );
    assert!(
        first.files.keys().all(|k| !k.contains(".harness-")),
        "temporary files left behind: {:?}",
        first.files.keys()
    );

    for other in &runs[1..] {
        assert_eq!(
            other.code, first.code,
            "exit code, --jobs {} vs --jobs {}",
            other.jobs, first.jobs
        );
        assert_eq!(
            other.files.keys().collect::<Vec<_>>(),
            first.files.keys().collect::<Vec<_>>(),
            "written files, --jobs {} vs --jobs {}",
            other.jobs,
            first.jobs
        );
        for (path, bytes) in &first.files {
            assert!(
                other.files[path] == *bytes,
                "{path} differs between --jobs {} and --jobs {}",
                first.jobs,
                other.jobs
            );
        }
        assert_eq!(
            other.stdout, first.stdout,
            "terminal output, --jobs {} vs --jobs {}",
            other.jobs, first.jobs
        );
    }
}
