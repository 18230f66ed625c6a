//! What a stranger trying the project from a clone hit (issue 17): `list` and `run` agreeing on
//! every bundled path, runs that select or read nothing failing instead of passing, and the
//! small commands (`profile`, misspelt subcommands, `sweep` of a missing path).

use crate::support::{Project, assert_whole, repo};
use std::collections::BTreeSet;

/// A copy of the bundled scenarios and goldens.
fn bundled() -> Project {
    let p = Project::new();
    p.copy_from_repo("scenarios", "scenarios");
    p.copy_from_repo("snapshots", "snapshots");
    p
}

/// The case ids `harness list ARGS` prints (first column).
fn listed(p: &Project, args: &[&str]) -> BTreeSet<String> {
    let run = p.harness(&[&["list"], args].concat());
    run.expect_code(0);
    assert!(run.stderr.is_empty(), "list wrote to stderr\n{run}");
    run.stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The case ids a run with `args` took, read from its JSON results.
fn ran(p: &Project, args: &[&str]) -> BTreeSet<String> {
    let json = p.join("ran.json");
    let json = json.to_str().expect("a UTF-8 path");
    let run = p.harness_ci("1", &[&["run", "--json", json], args].concat());
    run.expect_code(0);
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).expect("the JSON results"))
            .expect("JSON results");
    results["files"]
        .as_array()
        .expect("files")
        .iter()
        .flat_map(|f| f["cases"].as_array().cloned().unwrap_or_default())
        .map(|c| c["id"].as_str().expect("a case id").to_owned())
        .collect()
}

/// Every folder and file under `rel` of the repository, project-relative.
fn every_path(rel: &str) -> Vec<String> {
    let mut out = vec![rel.to_owned()];
    let mut stack = vec![repo().join(rel)];
    while let Some(dir) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(&dir)
            .expect("read a folder")
            .map(|e| e.expect("a folder entry").path())
            .collect();
        entries.sort();
        for path in entries {
            let rel = path
                .strip_prefix(repo())
                .expect("inside the repository")
                .to_string_lossy()
                .replace('\\', "/");
            if path.is_dir() {
                stack.push(path);
            }
            out.push(rel);
        }
    }
    out
}

#[test]
fn list_and_run_agree_on_every_bundled_path() {
    let p = bundled();
    // The whole tree: every case, no error (a cassette is listed as the case it replays).
    let all = listed(&p, &["scenarios/"]);
    assert_eq!(all, ran(&p, &["scenarios/"]));
    assert!(
        all.contains("record/fixtures/cassettes/reflex-live.cassette"),
        "{all:?}"
    );
    // Every folder and file, alone and with a filter and an extra profile.
    for path in every_path("scenarios") {
        let here = listed(&p, &[&path]);
        assert!(!here.is_empty(), "{path} lists nothing");
        assert_eq!(here, ran(&p, &[&path]), "list and run differ on {path}");
    }
    for args in [
        &["scenarios/record/"][..],
        &[
            "scenarios/",
            "--filter",
            "family:reflex",
            "--profile",
            "none",
        ],
        &["scenarios/", "--partition", "hash:2/3"],
    ] {
        assert_eq!(
            listed(&p, args),
            ran(&p, args),
            "list and run differ on {args:?}"
        );
    }
}

#[test]
fn list_reports_bad_files_on_stderr_and_still_lists_the_rest() {
    let p = bundled();
    p.write("scenarios/zz/broken.toml", "format = 1\nfamily = \n");
    // The error on stderr, every good case still on stdout, exit 2.
    assert_whole!(
        "list-a-bad-file",
        p,
        &["list", "scenarios/reflex/", "scenarios/zz/"]
    );
}

#[test]
fn a_selection_of_nothing_is_bad_input_naming_the_filters() {
    let p = bundled();
    for args in [
        &["run", "--filter", "tag:mien"][..],
        &["list", "--filter", "tag:mien"],
        &["bless", "--filter", "tag:mien"],
    ] {
        assert_whole!(format!("nothing-selected-{}", args[0]), p, args);
    }
    // The verdict does not claim success either, nor does a baseline that compared nothing.
    let run = p.harness(&["run", "--filter", "tag:mien"]);
    assert!(run.summary().starts_with("harness run: FAILED."), "{run}");
    p.write("baseline.toml", "");
    p.harness(&["bless", "--baseline", "baseline.toml"]);
    // No "harness baseline:" line: a baseline compared with nothing is no news.
    assert_whole!(
        "nothing-selected-against-a-baseline",
        p,
        &["run", "--filter", "tag:mien", "--baseline", "baseline.toml"]
    );
    // Two kinds that each match something, but not together.
    assert_whole!(
        "nothing-selected-by-two-kinds",
        p,
        &[
            "run",
            "--filter",
            "family:reflex",
            "--filter",
            "profile:plan-step",
        ]
    );
    // A folder with no scenario.
    std::fs::create_dir_all(p.join("empty")).expect("a folder");
    assert_whole!("nothing-in-a-folder", p, &["run", "empty"]);
    // Opting out.
    p.harness(&["run", "--filter", "tag:mien", "--allow-empty"])
        .expect_code(0);
    p.harness(&["list", "empty", "--allow-empty"])
        .expect_code(0);
    // Nothing was written by the failed bless.
    assert!(!p.exists("baselines/scenarios.toml"));
}

#[test]
fn merged_shards_that_hold_no_case_are_bad_input() {
    let p = bundled();
    p.harness(&[
        "run",
        "--filter",
        "tag:mien",
        "--allow-empty",
        "--json",
        "a.json",
    ])
    .expect_code(0);
    assert_whole!("merge-of-no-case", p, &["merge", "a.json"]);
    p.harness(&["merge", "a.json", "--allow-empty"])
        .expect_code(0);
}

#[test]
fn misspelt_filter_kinds_are_errors_with_a_suggestion() {
    let p = bundled();
    for cmd in ["run", "list"] {
        assert_whole!(
            format!("misspelt-filter-{cmd}"),
            p,
            &[cmd, "--filter", "famly:reflex"]
        );
    }
}

#[test]
fn review_commands_refuse_paths_that_are_not_there() {
    let p = bundled();
    for cmd in ["accept", "reject", "diff"] {
        assert_whole!(format!("{cmd}-a-missing-path"), p, &[cmd, "scenarios/nope"]);
        assert_whole!(
            format!("{cmd}-a-missing-pending-dir"),
            p,
            &[cmd, "--pending-dir", "nowhere"]
        );
    }
    // A path that is there but holds nothing pending is fine.
    p.harness(&["accept", "scenarios/reflex"])
        .expect_code(0)
        .expect_stdout("0 pending golden(s) accepted");
}

#[test]
fn a_sweep_of_a_missing_path_writes_nothing() {
    let p = Project::new();
    p.copy_from_repo("fixtures/transcripts", "t");
    let run = assert_whole!(
        "sweep-a-missing-path",
        p,
        &["sweep", "/nope", "t", "--out", "x.csv", "--plot", "x.svg"]
    );
    assert!(
        !p.exists("x.csv") && !p.exists("x.svg"),
        "outputs written\n{run}"
    );
}

#[test]
fn profile_without_a_name_lists_the_profiles() {
    let p = Project::new();
    let run = assert_whole!("profile-list", p, &["profile"]);
    // One line per profile of the registry, in its order.
    let listed: Vec<&str> = run
        .stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .take(harness::policy::PROFILES.len())
        .collect();
    assert_eq!(listed, harness::policy::profiles::names(), "{run}");
}

#[test]
fn misspelt_subcommands_get_a_suggestion() {
    let p = Project::new();
    for typo in ["rnu", "acept", "lsit"] {
        assert_whole!(format!("misspelt-command-{typo}"), p, &[typo]);
    }
}

#[test]
fn every_defence_id_and_action_in_the_goldens_is_one_expectations_may_name() {
    let p = bundled();
    let mut seen = 0;
    for (path, bytes) in p.tree("snapshots") {
        for word in String::from_utf8_lossy(&bytes).split_whitespace() {
            let (catalogue, value) = match word.split_once('=') {
                Some(("policy" | "source", v)) => (harness::vocabulary::INTERVENTION_SOURCES, v),
                Some(("action", v)) => (harness::vocabulary::INTERVENTION_ACTIONS, v),
                _ => continue,
            };
            assert!(
                catalogue.contains(&value),
                "{path}: `{word}` is not in kinds"
            );
            seen += 1;
        }
    }
    assert!(seen > 100, "only {seen} ids and actions in the goldens");
}

/// The reflex family without goldens: 29 cases, every one a new golden.
fn reflex_without_goldens() -> Project {
    let p = Project::new();
    p.copy_from_repo("scenarios/reflex", "scenarios/reflex");
    p
}

#[test]
fn failing_cases_past_the_diff_limit_get_one_line_each_between_two_verdicts() {
    let p = reflex_without_goldens();
    let run = p.harness(&["run", "--diff-limit", "2"]);
    run.expect_code(1);
    let lines: Vec<&str> = run.stdout.lines().collect();
    let verdict = run.summary();
    assert!(
        verdict.starts_with("harness run: FAILED. 29 cases"),
        "{run}"
    );
    assert_eq!(lines[0], verdict, "the verdict comes first too\n{run}");
    // Two in full, each new golden as a diff against nothing; the other 27 in a line each.
    assert_eq!(run.stdout.matches("    @@ -0,0 +1,").count(), 2, "{run}");
    assert_eq!(
        run.stdout
            .matches("    +# harness trace v1: reflex/")
            .count(),
        2,
        "{run}"
    );
    assert_eq!(
        run.stdout.matches("  no golden yet  (scenarios/").count(),
        29
    );
    assert!(
        run.stdout
            .contains("2 failing case(s) shown in full, 27 more in one line each"),
        "{run}"
    );
    assert!(
        run.stdout.contains("review them with `harness diff`"),
        "{run}"
    );
    // Without a limit every case is in full; the default shows ten.
    let all = p.harness(&["run", "--diff-limit", "all"]);
    assert_eq!(all.stdout.matches("    @@ -0,0 +1,").count(), 29, "{all}");
    let default = p.harness(&["run"]);
    assert_eq!(default.stdout.matches("    @@ -0,0 +1,").count(), 10);
    p.harness(&["run", "--diff-limit", "some"]).expect_code(2);
}

#[test]
fn quiet_runs_print_a_line_per_failing_case_and_the_verdict() {
    let p = reflex_without_goldens();
    // No diff, no table: the verdict, a line per failing case, the verdict again.
    assert_whole!("quiet-failing", p, &["run", "--quiet"]);
    p.harness(&["accept"]).expect_code(0);
    assert_whole!("quiet-passing", p, &["run", "-q"]);
}

#[test]
fn diff_prints_a_new_golden_whole() {
    let p = reflex_without_goldens();
    p.harness(&["run"]).expect_code(1);
    assert_whole!(
        "diff-a-new-golden",
        p,
        &["diff", "scenarios/reflex/exec-empty-args.toml"]
    );
}

#[test]
fn the_progress_bar_shows_on_a_terminal_only() {
    // `script` gives the run a terminal; stdout still goes to a file.
    let p = reflex_without_goldens();
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    let bin = env!("CARGO_BIN_EXE_harness");
    let on_terminal = |ci: Option<&str>| {
        let mut cmd = std::process::Command::new("script");
        cmd.args(["-qfec", &format!("'{bin}' run > out.txt"), "typescript"])
            .current_dir(p.path())
            .env_remove("CI")
            .env("NO_COLOR", "1");
        if let Some(ci) = ci {
            cmd.env("CI", ci);
        }
        let status = cmd
            .stdout(std::process::Stdio::null())
            .status()
            .expect("`script` (util-linux) runs the harness on a terminal");
        assert!(status.success());
        (p.read("typescript"), p.read("out.txt"))
    };
    let (terminal, stdout) = on_terminal(None);
    assert!(
        terminal.contains("/12 scenario files"),
        "no bar: {terminal:?}"
    );
    let (ci_terminal, ci_stdout) = on_terminal(Some("1"));
    assert!(
        !ci_terminal.contains("scenario files"),
        "a bar on CI: {ci_terminal:?}"
    );
    // The bar goes to stderr and never changes what the run prints.
    let piped = p.harness(&["run"]);
    assert!(piped.stderr.is_empty(), "{piped}");
    assert_eq!(stdout, piped.stdout);
    assert_eq!(ci_stdout, piped.stdout);
}

#[test]
fn ad_hoc_profile_runs_are_not_counted_as_missing_from_the_baseline() {
    let p = bundled();
    p.copy_from_repo("baselines", "baselines");
    let run = p.harness(&[
        "run",
        "scenarios/reflex",
        "--profile",
        "plan-step",
        "--baseline",
        "baselines/scenarios.toml",
    ]);
    run.expect_code(0);
    assert!(
        run.stdout.contains("ad-hoc run(s) under --profile"),
        "{run}"
    );
    assert!(run.stdout.contains(", 0 cases without a baseline"), "{run}");
    assert!(!run.stdout.contains("harness bless` records"), "{run}");
}
