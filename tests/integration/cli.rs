//! The command line outside `run`'s golden workflow: usage errors, `profile`, `trace`.

use crate::support::{EXAMPLE, EXAMPLE_ID, Project};
use serde_json::Value;

#[test]
fn run_on_a_missing_path_exits_2_naming_it() {
    let p = Project::new();
    let run = p.harness(&["run", "scenarios/nope.toml"]);
    run.expect_code(2)
        .expect_stdout("error: scenarios/nope.toml:1:1: cannot read: ")
        .expect_stdout("  hint: check the path");
    assert!(run.summary().contains("1 invalid files"), "{run}");

    // The default path is `scenarios`: without it, the message says so.
    let run = p.harness(&["run"]);
    run.expect_code(2)
        .expect_stdout("error: scenarios:1:1: cannot read: ");
}

#[test]
fn unknown_flag_and_bad_values_exit_2_with_usage() {
    let p = Project::with_example();
    let run = p.harness(&["run", "--bogus"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("unexpected argument '--bogus'"),
        "{run}"
    );
    assert!(run.stderr.contains("Usage: harness run"), "{run}");
    assert!(run.stdout.is_empty(), "{run}");

    let run = p.harness(&["run", "--jobs", "many"]);
    run.expect_code(2);
    assert!(run.stderr.contains("invalid value 'many'"), "{run}");

    let run = p.harness(&["frobnicate"]);
    run.expect_code(2);
    assert!(run.stderr.contains("unrecognized subcommand"), "{run}");

    // Nothing ran, so nothing was written.
    assert!(!p.exists("snapshots"));

    p.harness(&["--help"])
        .expect_code(0)
        .expect_stdout("Usage: harness");
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

    let run = p.harness(&["profile", "moltys"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("error: unknown profile `moltys`"),
        "{run}"
    );
    assert!(
        run.stderr
            .contains("hint: known profiles: none, ironclaw, moltis"),
        "{run}"
    );
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
    let run = p.harness(&["trace", "unknown-profile.toml"]);
    run.expect_code(2);
    // Errors go to stderr, so `harness trace … | tool` reads only traces.
    assert!(
        run.stderr.contains("error: unknown-profile.toml:4:11: unknown profile `moltys`\n  hint: did you mean `moltis`?"),
        "{run}"
    );
    assert!(run.stdout.is_empty(), "{run}");
}

#[test]
fn a_missing_path_does_not_stop_the_other_paths() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);

    let run = p.harness(&["run", "scenarios", "nope.toml"]);
    run.expect_code(2)
        .expect_stdout("error: nope.toml:1:1: cannot read: ")
        .expect_no_stdout("golden without a scenario");
    assert!(
        run.summary().contains("2 cases from 2 files: 2 passed"),
        "{run}"
    );
}

#[test]
fn extra_profiles_run_side_by_side_without_gating() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1); // first run: no golden yet
    p.harness(&["accept"]).expect_code(0);
    let before = p.tree("snapshots");

    let run = p.harness(&["run", "--profile", "none,ironclaw", "--metrics", "m.csv"]);
    run.expect_code(0)
        .expect_stdout("ad-hoc run(s) under --profile are reported above but not gated");
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

    let run = p.harness(&["run", "--profile", "nonesuch"]);
    run.expect_code(2);
    assert!(run.stderr.contains("unknown profile `nonesuch`"), "{run}");
    assert!(
        run.stderr.contains("known profiles: none, ironclaw"),
        "{run}"
    );
}
