//! What a user reads from the main commands, whole: each test runs a command as a user would
//! and compares its exit code, stdout and stderr with a reviewed snapshot
//! (`tests/integration/snapshots/integration__outputs__*.snap`), so the layout and wording
//! around what other tests look for cannot drift unseen. Temporary paths, the repository's path
//! and loopback ports are filtered ([`crate::support::Project::whole`]).

use crate::support::{Project, assert_whole, repo, stub_provider};

fn agent() -> String {
    repo()
        .join("fixtures/agents/reflex_agent.py")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn run_from_first_golden_to_review_and_a_mismatch() {
    let p = Project::with_example();
    // No golden yet: both cases miss one, pending goldens are written.
    assert_whole!("run_first", p, &["run"]);
    assert_whole!("diff_new", p, &["diff"]);
    assert_whole!("accept", p, &["accept"]);
    assert_whole!("run_passing", p, &["run"]);
    // A golden that no longer matches: the diff, then the one-line form.
    let golden = "snapshots/reflex/exec-empty-args.snap";
    let text = p.read(golden).replacen("iteration 3", "iteration three", 1);
    p.write(golden, text);
    assert_whole!("run_mismatch", p, &["run"]);
    assert_whole!("run_mismatch_quiet", p, &["run", "--quiet"]);
    assert_whole!("reject", p, &["reject"]);
}

#[test]
fn run_reports_invalid_files_and_empty_selections() {
    let p = Project::with_example();
    assert_whole!(
        "run_nothing_selected",
        p,
        &["run", "--filter", "tag:none-such"]
    );
    p.copy_from_repo(
        "fixtures/invalid/scenario/undefined-tool.toml",
        "scenarios/bad/undefined-tool.toml",
    );
    p.copy_from_repo(
        "fixtures/invalid/scenario/toml-syntax-error.toml",
        "scenarios/bad/toml-syntax-error.toml",
    );
    assert_whole!("run_invalid", p, &["run", "--metrics", "m.csv"]);
}

#[test]
fn list_shows_the_cases_a_run_takes() {
    let p = Project::with_example();
    let other = "scenarios/moltis/different-tools-do-not-fire.toml";
    p.copy_from_repo(other, other);
    assert_whole!("list", p, &["list"]);
    assert_whole!("list_profiles", p, &["list", "--profile", "agentloop,none"]);
    assert_whole!("list_filtered", p, &["list", "--filter", "family:moltis*"]);
}

#[test]
fn exec_judges_the_reference_agent_and_its_defence() {
    let p = Project::new();
    let scenario = "scenarios/serve/reflex-black-box.toml";
    p.copy_from_repo(scenario, scenario);
    let agent = agent();
    let bare = ["exec", scenario, "--label", "bare", "--", "python3", &agent];
    assert_whole!("exec_first", p, &bare);
    p.harness(&["accept"]).expect_code(0);
    assert_whole!("exec_passing", p, &bare);
    // The agent's own detector, judged by the expectations Moltis' profile states.
    let nudged = [
        "exec",
        scenario,
        "--label",
        "nudged",
        "--expect",
        "moltis",
        "--",
        "python3",
        &agent,
        "--api",
        "anthropic",
        "--stream",
        "--detector",
        "nudge",
    ];
    assert_whole!("exec_detector", p, &nudged);
    assert_whole!("exec_no_request", p, &["exec", scenario, "--", "true"]);
}

#[test]
fn sweep_prints_the_best_setting_per_detector() {
    let p = Project::new();
    p.copy_from_repo("fixtures/transcripts", "transcripts");
    assert_whole!(
        "sweep",
        p,
        &[
            "sweep",
            "transcripts",
            "--detector",
            "consecutive-identical:k=2,3",
            "--detector",
            "moltis-reflex",
            "--out",
            "sweep.csv",
            "--fires",
            "fires.csv"
        ]
    );
    // Written as every output is: a new file takes the umask's mode (0644 under 022), an
    // existing one keeps its own (the fires file used to come out 0600).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = |f: &str| {
            std::fs::metadata(p.join(f))
                .map(|m| m.permissions().mode() & 0o777)
                .unwrap_or(0)
        };
        assert_eq!(
            mode("fires.csv"),
            mode("sweep.csv"),
            "fires.csv and sweep.csv"
        );
        assert_ne!(mode("fires.csv") & 0o044, 0, "fires.csv readable by others");
        std::fs::set_permissions(p.join("fires.csv"), std::fs::Permissions::from_mode(0o640))
            .unwrap_or_else(|e| panic!("chmod: {e}"));
        p.harness(&[
            "sweep",
            "transcripts",
            "--detector",
            "moltis-reflex",
            "--out",
            "sweep.csv",
            "--fires",
            "fires.csv",
        ])
        .expect_code(0);
        assert_eq!(mode("fires.csv"), 0o640);
    }
    assert_whole!(
        "sweep_bad_detector",
        p,
        &["sweep", "transcripts", "--detector", "nosuch"]
    );
}

#[test]
fn import_writes_one_file_per_run() {
    let p = Project::new();
    p.copy_from_repo("fixtures/transcripts", "transcripts");
    p.copy_from_repo(
        "fixtures/invalid/transcript/truncated-tau-bench.json",
        "transcripts/broken/truncated-tau-bench.json",
    );
    assert_whole!("import", p, &["import", "transcripts", "--out", "traces"]);
    assert_whole!(
        "import_scenarios",
        p,
        &[
            "import",
            "transcripts/tau2",
            "--as",
            "scenario",
            "--out",
            "scenarios"
        ]
    );
}

#[test]
fn proxy_records_each_conversation_and_says_where() {
    let p = Project::new();
    let stub = "scenarios/serve/reflex-black-box.toml";
    p.copy_from_repo(stub, stub);
    let (mut upstream, base) = stub_provider(&p, stub);
    let agent = agent();
    let args = [
        "proxy",
        "--upstream",
        &base,
        "--out",
        "recorded",
        "--",
        "python3",
        &agent,
    ];
    assert_whole!("proxy", p, &args);
    assert_whole!("proxy_existing", p, &args);
    drop(upstream.stdin.take());
    let _ = upstream.wait();
    assert_whole!(
        "proxy_unreachable",
        p,
        &[
            "proxy",
            "--upstream",
            "http://127.0.0.1:9",
            "--out",
            "other",
            "--",
            "true"
        ]
    );
}
