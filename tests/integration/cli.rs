//! The command line outside `run`'s golden workflow: usage errors, `profile`, `trace`. Where a
//! test is about what a user reads, it compares the whole output (exit code, stdout, stderr)
//! with a reviewed snapshot.

use crate::support::{EXAMPLE, EXAMPLE_ID, Project, assert_whole};
use serde_json::Value;

#[test]
fn run_on_a_missing_path_exits_2_naming_it() {
    let p = Project::new();
    assert_whole!("run_missing_path", p, &["run", "scenarios/nope.toml"]);
    // The default path is `scenarios`: without it, the message says so.
    assert_whole!("run_without_scenarios", p, &["run"]);
}

#[test]
fn unknown_flag_and_bad_values_exit_2_with_usage() {
    let p = Project::with_example();
    assert_whole!("unknown_flag", p, &["run", "--bogus"]);
    assert_whole!("bad_jobs", p, &["run", "--jobs", "many"]);
    assert_whole!("unknown_command", p, &["frobnicate"]);
    // One edit away: a suggestion clap's own measure misses.
    assert_whole!("transposed_command", p, &["rnu"]);
    assert_whole!("bad_filter", p, &["run", "--filter", "famly:reflex"]);
    assert_whole!("bad_partition", p, &["list", "--partition", "count:4/3"]);
    // Nothing ran, so nothing was written.
    assert!(!p.exists("snapshots"));
    assert_whole!("help", p, &["--help"]);
}

#[test]
fn profile_prints_the_configuration_as_toml() {
    let p = Project::new();
    let moltis = p.harness(&["profile", "moltis"]);
    moltis.expect_code(0).expect_stdout("window = 3");
    let config: toml::Table = toml::from_str(&moltis.stdout).expect("`profile` prints TOML");
    assert_eq!(config["reflex"]["window"].as_integer(), Some(3));
    assert_eq!(config["reflex"]["enabled"].as_bool(), Some(true));
    assert_eq!(config["max_iterations"].as_integer(), Some(25));

    let none: toml::Table =
        toml::from_str(&p.harness(&["profile", "none"]).expect_code(0).stdout).unwrap();
    assert_eq!(none["reflex"]["enabled"].as_bool(), Some(false));
    assert_eq!(
        none.keys().collect::<Vec<_>>(),
        config.keys().collect::<Vec<_>>(),
        "every profile has the same keys"
    );

    assert_whole!("profile_unknown", p, &["profile", "moltys"]);
    assert_whole!("profile_list", p, &["profile"]);
}

#[test]
fn trace_jsonl_prints_one_event_object_per_line() {
    let p = Project::with_example();
    let run = p.harness(&["trace", EXAMPLE, "--jsonl"]);
    run.expect_code(0);
    let events: Vec<Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(events.len() > 10, "{run}");
    for e in &events {
        assert!(e["t_ms"].is_u64(), "no numeric t_ms: {e}");
        assert!(e["kind"].is_string(), "no kind: {e}");
    }
    // Two cases (moltis and `compare.none`), each from `run_start` to `outcome`.
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "run_start").count(), 2);
    assert_eq!(kinds.iter().filter(|k| **k == "outcome").count(), 2);
    assert_eq!(kinds.first(), Some(&"run_start"));
    assert_eq!(kinds.last(), Some(&"outcome"));
    assert_eq!(events[0]["profile"], "moltis");
    assert!(kinds.contains(&"intervention"));

    // The same events `harness run --traces` writes, case by case.
    p.harness(&["run", "--traces", "traces"]).expect_code(1);
    let written = p.read(&format!("traces/{EXAMPLE_ID}.jsonl"))
        + &p.read(&format!("traces/{EXAMPLE_ID}@none.jsonl"));
    assert_eq!(run.stdout, written);
}

#[test]
fn trace_prints_the_golden_text() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    let run = p.harness(&["trace", EXAMPLE]);
    run.expect_code(0);
    let pending = p.read(&format!("snapshots/{EXAMPLE_ID}.snap.new"));
    assert!(run.stdout.starts_with(&pending), "{run}");
}

#[test]
fn trace_of_an_invalid_scenario_exits_2_with_a_located_error() {
    let p = Project::new();
    p.copy_from_repo(
        "fixtures/invalid/scenario/unknown-profile.toml",
        "unknown-profile.toml",
    );
    // Errors go to stderr, so `harness trace … | tool` reads only traces.
    assert_whole!("trace_invalid", p, &["trace", "unknown-profile.toml"]);
    p.write("not-utf8.toml", b"format = 1\nfamily = \"\xff\"\n");
    assert_whole!("trace_not_utf8", p, &["trace", "not-utf8.toml"]);
}

#[test]
fn a_missing_path_does_not_stop_the_other_paths() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);

    assert_whole!(
        "run_with_a_missing_path",
        p,
        &["run", "scenarios", "nope.toml"]
    );
}

#[test]
fn extra_profiles_run_side_by_side_without_gating() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1); // first run: no golden yet
    p.harness(&["accept"]).expect_code(0);
    let before = p.tree("snapshots");

    assert_whole!(
        "run_extra_profiles",
        p,
        &["run", "--profile", "none,ironclaw", "--metrics", "m.csv"]
    );
    // The scenario's own run and each extra profile appear in the summary and the CSV.
    let csv = p.read("m.csv");
    let ids: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap_or_default())
        .collect();
    assert!(ids.contains(&EXAMPLE_ID), "{csv}");
    assert!(
        ids.contains(&format!("{EXAMPLE_ID}@none").as_str()),
        "{csv}"
    );
    assert!(
        ids.contains(&format!("{EXAMPLE_ID}@ironclaw").as_str()),
        "{csv}"
    );
    // Ad-hoc runs write no golden and no pending golden.
    assert_eq!(p.tree("snapshots"), before);

    assert_whole!("run_unknown_profile", p, &["run", "--profile", "nonesuch"]);
}
