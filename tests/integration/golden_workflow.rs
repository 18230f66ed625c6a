//! The golden workflow: a run without goldens fails and writes pending goldens; `accept` makes
//! them goldens; a changed script fails with a unified diff; `reject` discards; `CI` writes
//! nothing; orphaned goldens fail; a passing run removes stale pending files.

use crate::support::{Counts, EXAMPLE, EXAMPLE_ID, Project, assert_whole, summary};

const OLD_REPLY: &str = "Sorry, I do not know what command you wanted.";
/// As long as the old reply (40+ chars), so Moltis auto-continue treats it as a final answer too.
const NEW_REPLY: &str = "Sorry, which command should I run for you here?";

fn golden(id: &str) -> String {
    format!("snapshots/{id}.snap")
}

fn pending(id: &str) -> String {
    format!("snapshots/{id}.snap.new")
}

fn none_id() -> String {
    format!("{EXAMPLE_ID}@none")
}

/// A project with the example scenario and its two accepted goldens.
fn blessed() -> Project {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    p.harness(&["run"]).expect_code(0);
    p
}

/// Change the scripted text reply of the example (only its moltis run reaches that rule).
fn change_reply(p: &Project) {
    let text = p.read(EXAMPLE);
    assert_eq!(text.matches(OLD_REPLY).count(), 2, "the example changed");
    p.write(EXAMPLE, text.replace(OLD_REPLY, NEW_REPLY));
}

#[test]
fn a_run_without_goldens_fails_and_writes_pending_goldens() {
    let p = Project::with_example();
    let run = assert_whole!("run-without-goldens", p, &["run"]);
    assert_eq!(
        run.summary(),
        summary(
            "FAILED",
            Counts {
                cases: 2,
                files: 1,
                missing: 2,
                ..Counts::default()
            }
        )
    );
    assert_eq!(
        p.files("snapshots", ""),
        [pending(EXAMPLE_ID), pending(&none_id())]
    );
    for id in [EXAMPLE_ID.to_owned(), none_id()] {
        let text = p.read(&pending(&id));
        assert!(
            text.starts_with(&format!("# harness trace v1: {id}\n")),
            "{text}"
        );
        assert!(text.contains("  outcome "), "{text}");
    }
    // Each case's pending golden is its own trace: the two profiles end differently.
    assert!(p.read(&pending(EXAMPLE_ID)).contains("outcome response"));
    assert!(
        p.read(&pending(&none_id()))
            .contains("outcome max_iterations")
    );
}

#[test]
fn accepted_goldens_pass() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    let written = p.read(&pending(EXAMPLE_ID));

    assert_whole!("accept", p, &["accept"]);
    assert_eq!(
        p.files("snapshots", ""),
        [golden(EXAMPLE_ID), golden(&none_id())]
    );
    assert_eq!(p.read(&golden(EXAMPLE_ID)), written);

    let run = assert_whole!("run-accepted", p, &["run"]);
    assert_eq!(
        run.summary(),
        summary(
            "ok",
            Counts {
                cases: 2,
                files: 1,
                passed: 2,
                ..Counts::default()
            }
        )
    );
    assert!(p.files("snapshots", ".snap.new").is_empty());
}

#[test]
fn a_changed_script_fails_with_a_unified_diff_until_accepted() {
    let p = blessed();
    let before = p.read(&golden(EXAMPLE_ID));
    change_reply(&p);

    let run = assert_whole!("run-a-changed-script", p, &["run"]);
    let removed: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("    -"))
        .collect();
    let added: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("    +"))
        .collect();
    assert!(
        removed
            .iter()
            .any(|l| l.contains("outcome response") && l.contains(OLD_REPLY)),
        "no `-` line with the old reply\n{run}"
    );
    assert!(
        added
            .iter()
            .any(|l| l.contains("outcome response") && l.contains(NEW_REPLY)),
        "no `+` line with the new reply\n{run}"
    );
    assert!(
        !added.iter().any(|l| l.contains(OLD_REPLY)),
        "the old reply is still added\n{run}"
    );
    assert_eq!(
        run.summary(),
        summary(
            "FAILED",
            Counts {
                cases: 2,
                files: 1,
                passed: 1,
                mismatched: 1,
                ..Counts::default()
            }
        )
    );
    // Only the changed case gets a pending golden; the golden itself is untouched.
    assert_eq!(p.files("snapshots", ".snap.new"), [pending(EXAMPLE_ID)]);
    assert!(p.read(&pending(EXAMPLE_ID)).contains(NEW_REPLY));
    assert_eq!(p.read(&golden(EXAMPLE_ID)), before);

    p.harness(&["accept"])
        .expect_code(0)
        .expect_stdout("1 pending golden(s) accepted");
    assert!(p.read(&golden(EXAMPLE_ID)).contains(NEW_REPLY));
    p.harness(&["run"]).expect_code(0);
}

#[test]
fn reject_discards_pending_goldens_and_keeps_the_goldens() {
    let p = blessed();
    let before = p.read(&golden(EXAMPLE_ID));
    change_reply(&p);
    p.harness(&["run"]).expect_code(1);
    assert!(p.exists(&pending(EXAMPLE_ID)));

    assert_whole!("reject", p, &["reject"]);
    assert!(p.files("snapshots", ".snap.new").is_empty());
    assert_eq!(p.read(&golden(EXAMPLE_ID)), before);
    // Rejecting does not make the mismatch go away.
    p.harness(&["run"]).expect_code(1);
}

#[test]
fn accept_and_reject_take_scenario_paths() {
    let p = Project::with_example();
    p.copy_from_repo(EXAMPLE, "scenarios/other/copy.toml");
    p.harness(&["run"]).expect_code(1);
    assert_eq!(p.files("snapshots", ".snap.new").len(), 4);

    p.harness(&["accept", EXAMPLE])
        .expect_code(0)
        .expect_stdout("2 pending golden(s) accepted");
    assert_eq!(
        p.files("snapshots", ".snap"),
        [golden(EXAMPLE_ID), golden(&none_id())]
    );
    p.harness(&["reject", "scenarios/other"])
        .expect_code(0)
        .expect_stdout("2 pending golden(s) rejected");
    assert!(p.files("snapshots", ".snap.new").is_empty());
    p.harness(&["run", "scenarios/reflex"]).expect_code(0);
}

#[test]
fn ci_writes_no_pending_goldens() {
    let p = Project::with_example();
    assert_whole!(
        "ci-run-without-goldens",
        p,
        &["run"],
        p.harness_ci("true", &["run"])
    );
    assert!(p.files("snapshots", "").is_empty());

    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    change_reply(&p);
    assert_whole!(
        "ci-run-a-changed-script",
        p,
        &["run"],
        p.harness_ci("true", &["run"])
    );
    assert!(p.files("snapshots", ".snap.new").is_empty());

    // `CI=false` is not CI.
    p.harness_ci("false", &["run"]).expect_code(1);
    assert_eq!(p.files("snapshots", ".snap.new"), [pending(EXAMPLE_ID)]);
}

#[test]
fn a_golden_without_its_scenario_is_orphaned() {
    let p = blessed();
    p.remove(EXAMPLE);

    let run = assert_whole!("orphans", p, &["run"]);
    assert_eq!(
        run.summary(),
        summary(
            "FAILED",
            Counts {
                orphans: 2,
                ..Counts::default()
            }
        )
    );
}

#[test]
fn a_passing_run_removes_a_stale_pending_golden() {
    let p = blessed();
    p.write(&pending(EXAMPLE_ID), "# stale\n");
    p.write(&pending(&none_id()), "# stale\n");

    p.harness(&["run"]).expect_code(0);
    assert!(p.files("snapshots", ".snap.new").is_empty());
    assert_eq!(
        p.files("snapshots", ""),
        [golden(EXAMPLE_ID), golden(&none_id())]
    );
}

#[test]
fn custom_roots_place_goldens_by_scenario_id() {
    let p = Project::new();
    p.copy_from_repo(EXAMPLE, "cases/reflex/exec.toml");
    let roots = ["--scenarios-root", "cases", "--snapshots", "goldens"];

    let run = p.harness(&[&["run", "cases"][..], &roots].concat());
    run.expect_code(1)
        .expect_stdout("FAIL reflex/exec  no golden yet");
    assert_eq!(
        p.files("goldens", ""),
        [
            "goldens/reflex/exec.snap.new",
            "goldens/reflex/exec@none.snap.new"
        ]
    );
    assert!(!p.exists("snapshots"));
    p.harness(&[&["accept"][..], &roots].concat())
        .expect_code(0);
    p.harness(&[&["run", "cases"][..], &roots].concat())
        .expect_code(0);
}
