//! `harness::testing` used in this test process, as a runtime author's own tests use it: a
//! scenario and a proxy's cassettes served to the reference agent (a child process handed the
//! served URLs), judged as `harness exec` judges them.

use crate::support::{Project, repo};
use std::process::Command;

const SCENARIO: &str = "scenarios/serve/reflex-black-box.toml";

/// The reference agent, run against what `served` serves.
fn agent(served: &harness::testing::Served, detector: &str) -> std::process::Output {
    Command::new("python3")
        .arg(repo().join("fixtures/agents/reflex_agent.py"))
        .args(["--api", "openai", "--detector", detector])
        .envs(served.env())
        .output()
        .expect("run the reference agent")
}

/// A scenario: judged by its golden and the expectations `expect_profile` names; the verdict's
/// values agree with its report, and a broken verdict's errors are empty.
#[test]
fn a_scenario_served_in_process_is_judged_as_exec_judges_it() {
    let p = Project::new();
    p.copy_from_repo(SCENARIO, SCENARIO);
    let start = |label: &str| {
        harness::testing::serve(p.join(SCENARIO), label)
            .expect_profile("moltis")
            .layout(p.join("scenarios"), p.join("snapshots"))
            .write_pending(true)
            .start()
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let served = start("in-process");
    assert!(served.openai_base_url().ends_with("/v1"));
    assert!(agent(&served, "nudge").status.success());
    let verdict = served.verdict();
    // No golden yet: a pending one is written beside where it belongs (not under CI).
    assert!(!verdict.passed(), "{}", verdict.report());
    assert!(
        verdict.report().contains("no golden yet"),
        "{}",
        verdict.report()
    );
    assert!(
        p.join("snapshots/serve/reflex-black-box@in-process.snap.new")
            .is_file()
    );
    p.harness(&["accept"]).expect_code(0);
    let served = start("in-process");
    agent(&served, "nudge");
    let verdict = served.verdict();
    verdict.assert_passed();
    let runs: Vec<_> = verdict.conversations().collect();
    assert_eq!(runs.len(), 1);
    assert_eq!(
        (runs[0].row.outcome.as_str(), runs[0].row.iterations),
        ("response", 4)
    );
    assert!(verdict.trace(0).is_some_and(|t| !t.is_empty()));
    assert_eq!(verdict.errors().count(), 0);
}

/// Cassettes recorded by `harness proxy` replay in process: the agent that was recorded passes
/// once its golden is kept; its next version, which asks something else, fails at the
/// divergence with the report; a scenario with mistakes is a located error, not a panic.
#[test]
fn cassettes_replay_in_process_and_a_divergence_fails_with_the_report() {
    let p = Project::new();
    p.copy_from_repo(SCENARIO, "stub.toml");
    let (mut upstream, base) = crate::support::stub_provider(&p, "stub.toml");
    p.harness(&[
        "proxy",
        "--upstream",
        &base,
        "--out",
        "scenarios/recorded",
        "--",
        "python3",
        &repo()
            .join("fixtures/agents/reflex_agent.py")
            .to_string_lossy(),
        "--api",
        "openai",
        "--detector",
        "nudge",
    ])
    .expect_code(0);
    drop(upstream.stdin.take());
    let _ = upstream.wait();
    let replay = |detector: &str| {
        let served = harness::testing::serve(p.join("scenarios/recorded"), "replayed")
            .layout(p.join("scenarios"), p.join("snapshots"))
            .write_pending(true)
            .start()
            .unwrap_or_else(|e| panic!("{e}"));
        agent(&served, detector);
        served.verdict()
    };
    // The same folder (one cassette) under `harness serve --judge`, traces written beside.
    {
        use std::io::{BufReader, Read};
        use std::process::Stdio;
        let mut server = crate::support::harness_command(
            p.path(),
            &[
                "serve",
                "scenarios/recorded",
                "--judge",
                "--until-eof",
                "--label",
                "judged",
                "--traces",
                "judged-traces",
            ],
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start harness serve --judge");
        let mut stdout = BufReader::new(server.stdout.take().expect("stdout"));
        let addr = crate::support::listening_address(&mut stdout);
        let out = Command::new("python3")
            .arg(repo().join("fixtures/agents/reflex_agent.py"))
            .args(["--api", "openai", "--detector", "nudge"])
            .env("OPENAI_BASE_URL", format!("http://{addr}/v1"))
            .env("OPENAI_API_KEY", "harness")
            .output()
            .expect("run the reference agent");
        assert!(out.status.success(), "{out:?}");
        drop(server.stdin.take());
        let mut report = String::new();
        stdout.read_to_string(&mut report).expect("the report");
        assert_eq!(server.wait().expect("it ends").code(), Some(1), "{report}");
        assert!(
            report.contains("FAIL recorded/conversation-1.cassette@judged  no golden yet"),
            "{report}"
        );
        assert_eq!(p.files("judged-traces", ".jsonl").len(), 1);
    }
    let first = replay("nudge");
    assert!(!first.passed());
    assert!(
        first.report().contains("no golden yet"),
        "{}",
        first.report()
    );
    p.harness(&["accept"]).expect_code(0);
    replay("nudge").assert_passed();
    // The next version strips its tools instead of warning: it diverges from the recording.
    let next = replay("strip");
    assert!(!next.passed());
    assert!(
        next.report()
            .contains("every request to match the recording"),
        "{}",
        next.report()
    );
    // Bad input is an error value with its place, never a panic.
    p.write("scenarios/broken.toml", "format = 1\nuser = 3\n");
    let err = harness::testing::serve(p.join("scenarios/broken.toml"), "t")
        .layout(p.join("scenarios"), p.join("snapshots"))
        .start()
        .expect_err("a broken scenario does not start");
    assert!(err.to_string().contains("broken.toml:"), "{err}");
    let err = harness::testing::serve(p.join(SCENARIO), "t")
        .expect_profile("moltys")
        .start()
        .expect_err("an unknown profile does not start");
    assert!(
        err.to_string().contains("unknown profile `moltys`"),
        "{err}"
    );
    // A scenario outside the scenarios folder would get an id (and goldens) that depend on
    // where the checkout is.
    p.write("elsewhere/x.toml", p.read("stub.toml"));
    let err = harness::testing::serve(p.join("elsewhere/x.toml"), "t")
        .layout(p.join("scenarios"), p.join("snapshots"))
        .start()
        .expect_err("a scenario outside the scenarios folder does not start");
    assert!(
        err.to_string().contains("not below the scenarios folder"),
        "{err}"
    );
    // A label that is a profile's name is refused, as exec refuses it.
    let err = harness::testing::serve(p.join(SCENARIO), "moltis")
        .layout(p.join("scenarios"), p.join("snapshots"))
        .start()
        .expect_err("a profile's name is no label");
    assert!(err.to_string().contains("is a profile name"), "{err}");
}
