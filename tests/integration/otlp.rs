//! OpenTelemetry traces out and in (issue 35): `--otlp` writes every case's trace as OTLP JSON,
//! byte for byte the same for any `--jobs`; `harness import` reads it back to the very trace
//! `--traces` writes; a sweep over it gives the CSV a sweep over the scenarios gives; and the
//! GenAI spans alone (what another tool reads) give the same calls, results and tokens.

use crate::support::Project;
use std::path::Path;

/// The bundled families of scenarios (TOML or JSON) the engine replays alone.
const FAMILIES: [&str; 9] = [
    "agentloop",
    "reflex",
    "ironclaw",
    "moltis",
    "intent-stall",
    "legit-retry",
    "truncation",
    "plan-step",
    "suite",
];

/// The scenario folders not exported here, and why: a new folder is one or the other.
const NOT_EXPORTED: [(&str, &str); 3] = [
    (
        "real",
        "imported transcripts, swept as transcripts in sweep.rs",
    ),
    ("record", "a live recording's scenario and its cassette"),
    (
        "serve",
        "served to black-box agents (serve.rs), not replayed by the engine alone",
    ),
];

#[test]
fn every_scenario_folder_is_exported_or_says_why_not() {
    for entry in std::fs::read_dir(crate::support::repo().join("scenarios")).expect("scenarios/") {
        let path = entry.expect("an entry").path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if path.is_dir() {
            assert!(
                FAMILIES.contains(&name) || NOT_EXPORTED.iter().any(|(n, _)| *n == name),
                "scenarios/{name}: add it to FAMILIES, or to NOT_EXPORTED with the reason"
            );
        }
    }
}

/// A project of the families' scenarios and goldens: its case ids are a sweep's run ids.
fn project() -> Project {
    let p = Project::new();
    for f in FAMILIES {
        p.copy_from_repo(&format!("scenarios/{f}"), &format!("scenarios/{f}"));
        p.copy_from_repo(&format!("snapshots/{f}"), &format!("snapshots/{f}"));
    }
    p
}

fn run_otlp(p: &Project, jobs: &str, otlp: &str, traces: Option<&str>) {
    let mut args = vec!["run", "-q", "--jobs", jobs, "--otlp", otlp];
    if let Some(t) = traces {
        args.extend(["--traces", t]);
    }
    p.harness(&args).expect_code(0);
}

#[test]
fn the_export_is_deterministic_and_reads_back_as_the_same_trace() {
    let p = project();
    run_otlp(&p, "1", "one.jsonl", Some("traces"));
    run_otlp(&p, "2", "two.jsonl", None);
    let one = p.read("one.jsonl");
    assert_eq!(
        one,
        p.read("two.jsonl"),
        "--otlp differs between --jobs 1 and 2"
    );
    let cases = one.lines().count();
    assert!(cases > 100, "only {cases} cases exported");
    let imported = p.join("imported").to_string_lossy().into_owned();
    let out = p.join("one.jsonl").to_string_lossy().into_owned();
    p.harness(&["import", &out, "--out", &imported])
        .expect_code(0)
        .expect_stdout(&format!("{cases} run(s) written"));
    // Every run's events are the lines `--traces` wrote for its case.
    let traces = p.files("traces", ".jsonl");
    assert_eq!(traces.len(), cases);
    for rel in traces {
        let case = rel.trim_start_matches("traces/").trim_end_matches(".jsonl");
        let stem = harness::import::file_stem(&format!("one.jsonl#{case}"));
        let back = p.read(&format!("imported/{stem}.jsonl"));
        let (header, events) = back.split_once('\n').expect("a header line");
        assert!(header.contains("\"source\":\"otlp\""), "{header}");
        assert_eq!(
            events,
            p.read(&rel),
            "{case}: the imported trace is not the trace run wrote"
        );
    }
}

/// The detector's view of each run: per call its tool, arguments, failure and result, and
/// the tokens of each response.
fn views(runs: &[harness::import::Run]) -> Vec<(String, String)> {
    runs.iter()
        .map(|r| {
            let v = harness::detector::View::from_events(&r.events);
            let calls: Vec<String> = v
                .calls
                .iter()
                .map(|c| format!("{} {} failed={} {:?}", c.name, c.key, c.failed, c.result))
                .collect();
            (r.id.clone(), format!("{calls:#?}\n{:?}", v.responses))
        })
        .collect()
}

#[test]
fn sweeps_read_the_export_as_they_read_the_scenarios() {
    let p = project();
    run_otlp(&p, "2", "runs.jsonl", None);
    let export = p.join("runs.jsonl").to_string_lossy().into_owned();
    p.harness(&["sweep", "scenarios", "--out", "scenarios.csv"])
        .expect_code(0);
    p.harness(&["sweep", "runs.jsonl", "--out", "otlp.csv"])
        .expect_code(0);
    assert_eq!(
        p.read("otlp.csv"),
        p.read("scenarios.csv"),
        "a sweep over the export differs from one over the scenarios"
    );
    // And over the runs `import` wrote of it.
    p.harness(&["import", "runs.jsonl", "--out", "imported"])
        .expect_code(0);
    p.harness(&["sweep", "imported", "--out", "imported.csv"])
        .expect_code(0);
    assert_eq!(
        p.read("imported.csv"),
        p.read("scenarios.csv"),
        "a sweep over the imported export differs from one over the scenarios"
    );
    // The GenAI spans alone, without harness's own events, read as the same runs.
    let text = std::fs::read_to_string(Path::new(&export)).expect("the export");
    let exact = harness::import::otlp::import(&text, "runs.jsonl");
    let spans = harness::import::otlp::import_without_harness_events(&text, "runs.jsonl");
    assert!(exact.errors.is_empty() && spans.errors.is_empty());
    assert_eq!(exact.runs.len(), spans.runs.len());
    let (exact, spans) = (views(&exact.runs), views(&spans.runs));
    let differ: Vec<&str> = exact
        .iter()
        .zip(&spans)
        .filter(|(a, b)| a != b)
        .map(|(a, _)| a.0.as_str())
        .collect();
    assert!(
        differ.is_empty(),
        "{} of {} runs read differently from their spans: {differ:?}",
        differ.len(),
        exact.len()
    );
}

/// Every span id of an OTLP JSON line set to zeros (as some exporters write them).
fn zero_ids(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(map) => {
            for (k, x) in map.iter_mut() {
                if k == "spanId" || k == "parentSpanId" {
                    *x = serde_json::Value::from("0000000000000000");
                } else {
                    zero_ids(x);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(zero_ids),
        _ => {}
    }
}

#[test]
fn spans_with_all_zero_ids_are_each_read_and_said() {
    let p = Project::new();
    p.copy_from_repo("scenarios/reflex", "scenarios/reflex");
    p.harness(&["run", "-q", "--otlp", "runs.jsonl"]);
    let zeroed: String = p
        .read("runs.jsonl")
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("OTLP JSON");
            zero_ids(&mut v);
            format!("{v}\n")
        })
        .collect();
    p.write("zeroed.jsonl", zeroed);
    let run = p.harness(&["import", "zeroed.jsonl", "--out", "imported"]);
    run.expect_code(0);
    assert!(
        run.stderr.contains("share the id `0000000000000000`")
            && run.stderr.contains(": each span is read"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(
            "name themselves as their parent, read as spans without one: `0000000000000000` ("
        ),
        "{}",
        run.stderr
    );
    let sweep = p.harness(&["sweep", "zeroed.jsonl", "--out", "zeroed.csv"]);
    sweep.expect_code(0);
    assert!(
        sweep.stderr.contains("note: zeroed.jsonl: ") && sweep.stderr.contains("each span is read"),
        "{}",
        sweep.stderr
    );
}
