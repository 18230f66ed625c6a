//! `harness init` in an empty folder, then the commands it prints: the first run has no golden,
//! `accept` keeps it, the second run is green. The example agent it writes needs the openai
//! package, which the conformance suite installs and runs it with
//! (`tests/conformance/run`); here a standard-library stand-in speaks the same wire.

use crate::support::{Project, assert_whole, suite_size};

#[test]
fn init_then_the_printed_commands_give_a_green_run() {
    let p = Project::new();
    let init = assert_whole!("init", p, &["init"]);
    for file in [
        "harness.toml",
        "scenarios/first.toml",
        "agent.py",
        ".github/workflows/harness.yml",
    ] {
        assert!(p.exists(file), "{file} not written\n{init}");
        assert!(
            init.stdout.contains(&format!("wrote    ./{file}")),
            "{init}"
        );
    }
    // The commands it prints are the ones run below.
    for command in [
        "harness exec scenarios -- python3 agent.py",
        "harness accept",
    ] {
        assert!(init.stdout.contains(command), "{init}");
    }
    assert!(p.read("agent.py").contains("from openai import OpenAI"));
    p.write("agent.py", crate::support::STAND_IN_AGENT);
    // No golden yet: the trace in full (the scenario's tool bound to the agent's), exit 1.
    assert_whole!(
        "first-exec",
        p,
        &["exec", "scenarios", "--", "python3", "agent.py"]
    );
    p.harness(&["accept"]).expect_code(0);
    assert_whole!(
        "green-exec",
        p,
        &["exec", "scenarios", "--", "python3", "agent.py"]
    );
    // Without a path, as the project file says: the project's scenarios.
    let bare = p.harness(&["exec", "--", "python3", "agent.py"]);
    bare.expect_code(0);
    assert_eq!(
        bare.stdout,
        p.harness(&["exec", "scenarios", "--", "python3", "agent.py"])
            .stdout
    );
    // The engine replays the same scenario too.
    p.harness(&["run"]).expect_code(1);
    the_workflow_runs_what_was_just_run(&p);
}

/// The workflow `init` wrote installs this very version, and its harness steps, run here as
/// CI would run them (after the golden was accepted), are green and write what it uploads.
fn the_workflow_runs_what_was_just_run(p: &Project) {
    let workflow = p.read(".github/workflows/harness.yml");
    let pin = format!(
        "pip install agent-loop-harness=={} ",
        env!("CARGO_PKG_VERSION")
    );
    assert!(workflow.contains(&pin), "{workflow}");
    let steps: Vec<&str> = workflow
        .lines()
        .filter_map(|line| line.trim().strip_prefix("run: harness "))
        .collect();
    assert_eq!(steps.len(), 1, "{workflow}");
    for step in steps {
        let args: Vec<&str> = step.split_whitespace().collect();
        let run = p.harness(&args);
        run.expect_code(0);
        assert!(run.stdout.contains("1 passed"), "{run}");
    }
    for uploaded in ["results/junit.xml", "results/report.html"] {
        assert!(p.exists(uploaded), "the workflow uploads {uploaded}");
    }
    assert!(
        !p.exists("results/pending"),
        "a green run leaves no pending goldens"
    );
}

#[test]
fn init_never_overwrites() {
    let p = Project::new();
    p.write("agent.py", "# mine\n");
    assert_whole!("init-keeps-a-file", p, &["init"]);
    assert_eq!(p.read("agent.py"), "# mine\n");
    assert!(p.exists("scenarios/first.toml"));
    assert_whole!("init-again", p, &["init"]);
    // Into another folder, made if need be.
    p.harness(&["init", "sub/project"]).expect_code(0);
    assert!(p.exists("sub/project/scenarios/first.toml"));
    // A folder that is a file cannot take it.
    p.write("plain", "x");
    assert_whole!("init-into-a-file", p, &["init", "plain"]);
}

#[test]
fn a_folder_without_scenarios_says_what_to_do() {
    let p = Project::new();
    assert_whole!("run-without-scenarios", p, &["run"]);
    assert_whole!(
        "exec-without-scenarios",
        p,
        &["exec", "--", "python3", "agent.py"]
    );
}

#[test]
fn the_bundled_suite_scores_any_project() {
    let p = Project::new();
    let run = p.harness(&["suite", "--profile", "moltis", "--json", "card.json"]);
    run.expect_code(0);
    let n = suite_size().cases;
    assert!(
        run.stdout.starts_with(&format!(
            "report card: profile moltis ({n} cases of the bundled suite)"
        )),
        "{run}"
    );
    assert!(run.stdout.contains(&format!("score 16/{n}")), "{run}");
    let json = p.read("card.json");
    assert!(
        json.contains("\"(bundled)/suite/reflex-empty-arguments.toml\""),
        "{json}"
    );
    assert!(!json.contains("/tmp"), "a temporary path in the results");
}

#[test]
fn init_writes_no_file_through_a_link_and_refuses_a_project_file_it_cannot_keep() {
    // `scenarios` (or `.github`) a link to a folder outside the project: nothing written,
    // there or anywhere.
    let p = Project::new();
    p.write("outside/keep.txt", "x");
    std::fs::create_dir_all(p.join("proj")).expect("proj");
    std::os::unix::fs::symlink(p.join("outside"), p.join("proj/scenarios")).expect("link");
    let init = p.harness(&["init", "proj"]);
    init.expect_code(2);
    assert!(
        init.stderr.contains("proj/scenarios")
            && init
                .stderr
                .contains("is a symbolic link: harness init writes only real files"),
        "{init}"
    );
    assert!(!p.exists("outside/first.toml"), "written through the link");
    assert!(
        !p.exists("proj/harness.toml"),
        "nothing written before the refusal"
    );
    let q = Project::new();
    std::fs::create_dir_all(q.join(".github")).expect(".github");
    q.write("elsewhere/x", "x");
    std::os::unix::fs::symlink(q.join("elsewhere"), q.join(".github/workflows")).expect("link");
    let init = q.harness(&["init"]);
    init.expect_code(2);
    assert!(init.stderr.contains(".github/workflows"), "{init}");
    assert!(!q.exists("elsewhere/harness.yml"));
    // A kept project file every later command refuses (a link to nothing, a path key that
    // leaves the project): init says so, exit 2.
    let r = Project::new();
    std::os::unix::fs::symlink(r.join("nowhere.toml"), r.join("harness.toml")).expect("link");
    let init = r.harness(&["init"]);
    init.expect_code(2);
    assert!(
        init.stderr
            .contains("harness.toml: is a symbolic link to nothing"),
        "{init}"
    );
    // Nor any file it would keep that the next commands refuse: a folder where a file goes, a
    // link to nothing, a link in the scenarios folder. Nothing is written.
    for (made, says) in [
        ("folder", "harness.toml: is a folder"),
        ("dangling", "agent.py: is a symbolic link to nothing"),
        (
            "linked",
            "scenarios/first.toml: is a symbolic link, which harness does not follow",
        ),
    ] {
        let t = Project::new();
        match made {
            "folder" => std::fs::create_dir_all(t.join("harness.toml")).expect("folder"),
            "dangling" => {
                std::os::unix::fs::symlink(t.join("gone.py"), t.join("agent.py")).expect("link");
            }
            _ => {
                t.write("real.toml", "x");
                std::fs::create_dir_all(t.join("scenarios")).expect("scenarios");
                std::os::unix::fs::symlink(t.join("real.toml"), t.join("scenarios/first.toml"))
                    .expect("link");
            }
        }
        let init = t.harness(&["init"]);
        init.expect_code(2);
        assert!(init.stderr.contains(says), "{made}: {init}");
        assert!(!t.exists(".github"), "{made}: nothing written");
    }
    let s = Project::new();
    s.write(
        "harness.toml",
        "format = 1\nscenarios = \"../../elsewhere\"\n",
    );
    let init = s.harness(&["init"]);
    init.expect_code(2);
    assert!(
        init.stderr.contains("every command above would refuse it"),
        "{init}"
    );
    s.harness(&["list"]).expect_code(2);
}
