//! The project file, `harness.toml`: found by walking up from the current folder, its paths
//! used by every command wherever it runs, its mistakes located, and the repository's own.

use crate::support::{EXAMPLE, EXAMPLE_ID, Project, assert_whole, repo};

/// The repository's layout: its project file, scenarios, goldens and baseline.
fn repository() -> Project {
    let p = Project::new();
    for rel in ["harness.toml", "scenarios", "snapshots", "baselines"] {
        p.copy_from_repo(rel, rel);
    }
    p
}

#[test]
fn the_readme_commands_work_unchanged_with_the_committed_project_file() {
    let p = repository();
    let main_job = p.harness(&[
        "run",
        "scenarios/",
        "--baseline",
        "baselines/scenarios.toml",
    ]);
    main_job.expect_code(0);
    assert!(
        main_job.stdout.contains("harness baseline: ok."),
        "{main_job}"
    );
    // The project file names the same scenarios and baseline: a bare run is the main job.
    let bare = p.harness(&["run"]);
    bare.expect_code(0);
    assert_eq!(
        bare.stdout.replace("scenarios/", "scenarios"),
        main_job.stdout.replace("scenarios/", "scenarios")
    );
    let committed = std::fs::read_to_string(repo().join("harness.toml")).expect("harness.toml");
    assert!(
        committed.contains("baseline = \"baselines/scenarios.toml\""),
        "{committed}"
    );
}

#[test]
fn a_run_from_a_subfolder_finds_the_project() {
    let p = repository();
    let from_root = p.harness(&["run", "scenarios/reflex"]);
    from_root.expect_code(0);
    // From inside the scenarios: the same cases, goldens and baseline, nothing created there.
    let inside = p.harness_in("scenarios/reflex", &["run", "."]);
    inside.expect_code(0);
    assert_eq!(inside.summary(), from_root.summary());
    assert!(
        inside
            .stdout
            .contains("compared with ../../baselines/scenarios.toml"),
        "{inside}"
    );
    let deeper = p.harness_in("scenarios/reflex", &["run", "exec-empty-args.toml"]);
    deeper.expect_code(0);
    assert!(
        deeper.summary().contains(" 2 cases from 1 files"),
        "{deeper}"
    );
    // No path: the whole project, as from its root.
    let all = p.harness_in("scenarios/reflex", &["run"]);
    assert_eq!(all.summary(), p.harness(&["run"]).summary());
    assert!(!p.exists("scenarios/snapshots") && !p.exists("scenarios/reflex/snapshots"));
    assert_eq!(
        p.harness_in("scenarios", &["list", "reflex"]).stdout,
        p.harness(&["list", "scenarios/reflex"]).stdout
    );

    // A new scenario written and reviewed from its folder: the golden lands in the project's.
    let text = std::fs::read_to_string(repo().join(EXAMPLE)).expect("the example");
    p.write("scenarios/mine/new.toml", &text);
    let run = p.harness_in("scenarios/mine", &["run", "new.toml", "--no-baseline"]);
    run.expect_code(1)
        .expect_stdout("FAIL mine/new  no golden yet");
    assert!(p.exists("snapshots/mine/new.snap.new"), "{run}");
    p.harness_in("scenarios/mine", &["diff", "new.toml"])
        .expect_code(0)
        .expect_stdout("+# harness trace v1: mine/new\n");
    p.harness_in("scenarios/mine", &["accept", "new.toml"])
        .expect_code(0)
        .expect_stdout("accepted ../../snapshots/mine/new.snap");
    p.harness_in("scenarios/mine", &["run", "new.toml", "--no-baseline"])
        .expect_code(0);
    p.harness_in("scenarios/mine", &["trace", "new.toml"])
        .expect_code(0)
        .expect_stdout("# harness trace v1: mine/new\n");
}

#[test]
fn verbose_says_which_project_file_was_used() {
    let p = repository();
    let run = p.harness_in("scenarios/reflex", &["-v", "list"]);
    run.expect_code(0);
    let file = p.join("harness.toml");
    assert!(
        run.stderr.contains(&format!(
            "harness: project file {} (scenarios .., snapshots ../../snapshots, baseline ../../baselines/scenarios.toml)",
            file.display()
        )),
        "{run}"
    );
    let none = Project::new();
    let run = none.harness(&["--verbose", "list", "--allow-empty"]);
    assert!(run.stderr.contains("harness: no harness.toml in "), "{run}");
}

#[test]
fn a_project_file_sets_paths_and_run_defaults() {
    let p = Project::new();
    p.copy_from_repo(EXAMPLE, "specs/reflex/exec-empty-args.toml");
    p.write(
        "harness.toml",
        "format = 1\nscenarios = \"specs\"\nsnapshots = \"goldens\"\nbaseline = \"ci/base.toml\"\n\
         [run]\nprofile = [\"agentloop\"]\ndiff_limit = 1\njobs = 1\n",
    );
    // One case in full (the limit), the others in a line; the ad-hoc agentloop case runs too.
    let run = p.harness_in("specs", &["run", "--no-baseline"]);
    run.expect_code(1);
    assert_eq!(run.stdout.matches("    @@ -0,0 +1,").count(), 1, "{run}");
    assert!(run.summary().contains("3 cases from 1 files"), "{run}");
    assert!(
        run.stdout.contains("1 ad-hoc run(s) under --profile"),
        "{run}"
    );
    p.harness(&["accept"]).expect_code(0);
    assert!(p.exists(&format!("goldens/{EXAMPLE_ID}.snap")));
    // A baseline is named but not written yet: a run says so; bless writes it where named.
    let run = p.harness(&["run"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("cannot read baseline ci/base.toml: there is no such file")
            && run.stderr.contains("`harness bless` writes it"),
        "{run}"
    );
    p.harness(&["run", "--no-baseline"]).expect_code(0);
    p.harness_in("specs/reflex", &["bless"])
        .expect_code(0)
        .expect_stdout("wrote ../../ci/base.toml");
    p.harness(&["run"])
        .expect_code(0)
        .expect_stdout("compared with ci/base.toml");
    // The command line wins.
    let run = p.harness(&["list", "--profile", "none"]);
    assert!(
        run.stdout.contains("@none") && !run.stdout.contains("@agentloop"),
        "{run}"
    );
}

#[test]
fn mistakes_in_the_project_file_are_located_with_a_suggestion() {
    let p = Project::with_example();
    for (n, (text, location, hint)) in [
        (
            "format = 1\nscenario = \"s\"\n",
            "harness.toml:2:1: unknown field `scenario`",
            "did you mean `scenarios`?",
        ),
        (
            "format = 3\n",
            "harness.toml:1:1: project file format 3",
            "write `format = 1`",
        ),
        (
            "format = 1\n[run]\nprofile = [\"moltys\"]\n",
            "harness.toml:3:12: unknown profile `moltys`",
            "did you mean `moltis`?",
        ),
        (
            "format = 1\n[run]\ndiff_limt = 3\n",
            "harness.toml:3:1: unknown field `diff_limt`",
            "did you mean `diff_limit`?",
        ),
        (
            "format = 1\n[run]\njobs = \"2\"\n",
            "harness.toml:3:8: a whole number is expected here, not the string \"2\"",
            "write the number without quotes: 2",
        ),
        (
            "format = 1\nscenarios = scen\n",
            "harness.toml:2:",
            "put text in double quotes: `key = \"value\"`",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        p.write("harness.toml", text);
        // Named from the current folder, as the user would type it; the same for every command.
        let run = assert_whole!(
            format!("mistake-{n}"),
            p,
            &["run"],
            p.harness_in("scenarios", &["run"])
        );
        assert!(run.stderr.contains(location), "{text}\n{run}");
        assert!(
            run.stderr.contains(&format!("  hint: {hint}")),
            "{text}\n{run}"
        );
        for args in [&["list"][..], &["accept"]] {
            let other = p.harness_in("scenarios", args);
            other.expect_code(2);
            assert_eq!(other.stderr, run.stderr, "{args:?}");
        }
    }
}

#[test]
fn committed_project_schema_matches_harness_schema_project() {
    let committed = std::fs::read_to_string(repo().join("schema/harness.schema.json"))
        .expect("schema/harness.schema.json");
    let run = Project::new().harness(&["schema", "project"]);
    run.expect_code(0);
    assert_eq!(
        committed, run.stdout,
        "schema/harness.schema.json is out of date; regenerate it with `cargo run -q -- schema project > schema/harness.schema.json`"
    );
    let schema: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(schema["additionalProperties"], false);
    for key in ["format", "scenarios", "snapshots", "baseline", "run"] {
        assert!(
            schema["properties"][key]["description"].is_string(),
            "`{key}` undocumented"
        );
    }
}

/// Issue 31: no path of the project file leads out of the project's folder, by `..` or through
/// a link; the error names the key, and nothing is written outside.
#[test]
fn project_paths_stay_inside_the_project() {
    let p = Project::new();
    p.copy_from_repo(EXAMPLE, &format!("project/{EXAMPLE}"));
    for (line, command, message) in [
        (
            "baseline = \"../victim/.profile\"",
            &["bless"][..],
            "harness.toml:2:1: `baseline`: `../victim/.profile` leads out of the project's folder",
        ),
        (
            "snapshots = \"../outside/snaps\"",
            &["run"][..],
            "harness.toml:2:1: `snapshots`: `../outside/snaps` leads out of the project's folder",
        ),
        (
            "scenarios = \"scenarios/../../..\"",
            &["list"][..],
            "harness.toml:2:1: `scenarios`: `scenarios/../../..` leads out of the project's folder",
        ),
    ] {
        p.write("project/harness.toml", format!("format = 1\n{line}\n"));
        let run = p.harness_in("project", command);
        run.expect_code(2);
        assert!(run.stderr.contains(message), "{line}\n{run}");
        assert!(
            run.stderr
                .contains("hint: a project's paths stay inside the folder harness.toml is in"),
            "{run}"
        );
        assert!(
            !p.exists("victim") && !p.exists("outside"),
            "{line}: written outside"
        );
    }
    // Through a link that resolves outside.
    std::fs::create_dir_all(p.join("elsewhere")).expect("a folder outside");
    std::os::unix::fs::symlink(p.join("elsewhere"), p.join("project/snaps")).expect("a link");
    p.write(
        "project/harness.toml",
        "format = 1\nsnapshots = \"snaps/goldens\"\n",
    );
    let run = p.harness_in("project", &["run"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("`snapshots`: `snaps/goldens` resolves to ")
            && run.stderr.contains("outside the project's folder (a link)"),
        "{run}"
    );
    assert!(
        p.files("elsewhere", "").is_empty(),
        "written through the link"
    );
    // A `..` that comes back inside is a path like any other.
    p.write(
        "project/harness.toml",
        "format = 1\nscenarios = \"scenarios/../scenarios\"\n",
    );
    p.harness_in("project", &["list"]).expect_code(0);
}

/// Issue 31: the walk up for `harness.toml` stops at the checkout's root (`.git`): a project
/// file in a folder above it (a shared temporary folder, a CI workspace) is not used.
#[test]
fn a_project_file_above_the_checkout_is_not_used() {
    let p = Project::new();
    p.write("harness.toml", "format = 1\nsnapshots = \"not-these\"\n");
    p.copy_from_repo(EXAMPLE, &format!("checkout/{EXAMPLE}"));
    // Without a checkout root between them, the parent's file is the project's (the control).
    let run = p.harness_in("checkout", &["-v", "list", "scenarios"]);
    assert!(run.stderr.contains("harness: project file "), "{run}");
    std::fs::create_dir_all(p.join("checkout/.git")).expect(".git");
    let run = p.harness_in("checkout", &["-v", "list", "scenarios"]);
    run.expect_code(0);
    assert!(run.stderr.contains("harness: no harness.toml in "), "{run}");
    // A worktree's `.git` is a file: the same.
    std::fs::remove_dir(p.join("checkout/.git")).expect("rm .git");
    p.write("checkout/.git", "gitdir: /elsewhere\n");
    let run = p.harness_in("checkout/scenarios", &["-v", "list", "."]);
    assert!(run.stderr.contains("harness: no harness.toml in "), "{run}");
}

/// Issue 31: a command run below the project's folder says once, on stderr, which project file
/// it uses; run in the project's folder, nothing.
#[test]
fn a_command_below_the_project_says_which_project_file_it_uses() {
    let p = repository();
    let run = p.harness_in("scenarios/reflex", &["list", "."]);
    run.expect_code(0);
    assert_eq!(
        run.stderr
            .matches("harness: using ../../harness.toml\n")
            .count(),
        1,
        "{run}"
    );
    let run = p.harness(&["list", "scenarios/reflex"]);
    assert!(!run.stderr.contains("harness: using"), "{run}");
}

/// Issue 31 (attacked again): a wrong `format` says the format harness reads, whatever the
/// value; commands that read no project (`schema`, `profile`) work beside a broken one, so it
/// can be mended; `init` does not call a folder ready whose project file every next command
/// refuses; a `harness.toml` that is a link to nothing is an error, not skipped.
#[test]
fn wrong_formats_broken_and_dangling_project_files_say_what_to_do() {
    let p = Project::with_example();
    for (n, (value, message)) in [
        (
            "2",
            "project file format 2 is not one this harness reads (1)",
        ),
        (
            "-1",
            "project file format -1 is not one this harness reads (1)",
        ),
        (
            "99999999999",
            "project file format 99999999999 is not one this harness reads (1)",
        ),
        (
            "\"one\"",
            "a whole number is expected here, not the string \"one\"",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        p.write("harness.toml", format!("format = {value}\n"));
        let run = assert_whole!(format!("wrong-format-{n}"), p, &["list"]);
        assert!(run.stderr.contains(message), "{value}\n{run}");
        assert!(!run.stderr.contains("without quotes: one"), "{run}");
    }
    p.harness(&["schema", "project"]).expect_code(0);
    p.harness(&["profile", "moltis"]).expect_code(0);
    let init = p.harness(&["init"]);
    init.expect_code(2);
    assert!(
        init.stderr.contains("harness init kept this harness.toml"),
        "{init}"
    );
    p.remove("harness.toml");
    std::os::unix::fs::symlink(p.join("nowhere.toml"), p.join("harness.toml")).expect("a link");
    let run = p.harness(&["list"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("harness.toml is a link to nothing"),
        "{run}"
    );
}
