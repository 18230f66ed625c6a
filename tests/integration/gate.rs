//! The CI gate: result files, shards and merge, metric baselines, GitHub output, pending
//! goldens on CI, selection.

use crate::support::{EXAMPLE, EXAMPLE_ID, Project, assert_whole};
use roxmltree::{Document, Node};

/// The bundled scenarios and goldens, with one golden that differs, one orphaned golden and
/// one invalid scenario, so that every kind of result is in the outputs.
fn corpus() -> Project {
    let p = Project::new();
    p.copy_from_repo("scenarios", "scenarios");
    p.copy_from_repo("snapshots", "snapshots");
    let golden = format!("snapshots/{EXAMPLE_ID}.snap");
    let text = p.read(&golden).replacen("iteration 1", "iteration one", 1);
    p.write(&golden, text);
    p.write(
        "snapshots/reflex/gone.snap",
        "# harness trace v1: reflex/gone\n",
    );
    p.write(
        "scenarios/zz/broken.toml",
        "format = 1\nprofile = \"moltis\"\nnope = 3\n",
    );
    p
}

/// The case count of a `harness run:` summary line.
fn cases_in(summary: &str) -> usize {
    summary
        .split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no case count in {summary:?}"))
}

fn attr<'a>(n: Node<'a, '_>, name: &str) -> &'a str {
    n.attribute(name)
        .unwrap_or_else(|| panic!("<{}> lacks `{name}`", n.tag_name().name()))
}

#[test]
fn junit_has_one_testcase_per_case_in_the_common_schema() {
    let p = corpus();
    let run = p.harness_ci("true", &["run", "--junit", "out/junit.xml"]);
    run.expect_code(2);
    let xml = p.read("out/junit.xml");
    let doc = Document::parse(&xml).expect("the JUnit file is well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");

    let mut names = Vec::new();
    let (mut failures, mut errors) = (0, 0);
    for suite in root.children().filter(Node::is_element) {
        // The Jenkins/Ant schema: testsuite(name, tests, failures, errors, skipped, time).
        assert_eq!(suite.tag_name().name(), "testsuite");
        attr(suite, "name");
        let cases: Vec<Node> = suite.children().filter(Node::is_element).collect();
        assert_eq!(attr(suite, "tests").parse::<usize>().unwrap(), cases.len());
        let count = |kind: &str| {
            cases
                .iter()
                .filter(|c| c.children().any(|e| e.has_tag_name(kind)))
                .count()
        };
        assert_eq!(
            attr(suite, "failures").parse::<usize>().unwrap(),
            count("failure")
        );
        assert_eq!(
            attr(suite, "errors").parse::<usize>().unwrap(),
            count("error")
        );
        assert_eq!(attr(suite, "skipped"), "0");
        attr(suite, "time")
            .parse::<f64>()
            .expect("time is a decimal");
        assert!(suite.attribute("timestamp").is_none() && suite.attribute("hostname").is_none());
        for case in cases {
            assert_eq!(case.tag_name().name(), "testcase");
            attr(case, "classname");
            attr(case, "time")
                .parse::<f64>()
                .expect("time is a decimal");
            names.push(attr(case, "name").to_owned());
            for outcome in case.children().filter(Node::is_element) {
                let kind = outcome.tag_name().name();
                assert!(["failure", "error"].contains(&kind), "unexpected <{kind}>");
                attr(outcome, "message");
                attr(outcome, "type");
                if kind == "failure" {
                    failures += 1;
                } else {
                    errors += 1;
                }
            }
        }
    }
    // Every case, the invalid file and the orphaned golden; every case exactly once.
    assert_eq!(names.len(), cases_in(run.summary()) + 2, "{run}");
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), names.len());
    assert_eq!((failures, errors), (2, 1));

    // The failure message is the diff summary; the diff is its text.
    let failing = doc
        .descendants()
        .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(EXAMPLE_ID))
        .expect("the changed case is a testcase");
    assert_eq!(attr(failing, "classname"), EXAMPLE_ID);
    assert_eq!(attr(failing, "time"), "40.000");
    let failure = failing.first_element_child().unwrap();
    assert_eq!(
        attr(failure, "message"),
        "golden differs: 1 lines added, 1 removed"
    );
    assert_eq!(attr(failure, "type"), "golden-mismatch");
    let text = failure.text().unwrap_or_default();
    assert!(
        text.contains("-        0.000s  iteration one\n+        0.000s  iteration 1\n"),
        "{text}"
    );
}

/// `harness run ARGS` on CI in a fresh copy of the corpus: exit code, stdout and result files.
fn outputs(p: &Project, extra: &[&str], files: &[&str]) -> (Option<i32>, String, Vec<Vec<u8>>) {
    let mut args = vec!["run", "scenarios", "missing.toml"];
    args.extend_from_slice(extra);
    let run = p.harness_ci("true", &args);
    let bytes = files
        .iter()
        .map(|f| std::fs::read(p.join(f)).unwrap_or_else(|e| panic!("{f}: {e}\n{run}")))
        .collect();
    (run.code, run.stdout, bytes)
}

#[test]
fn merged_shards_give_exactly_the_single_run_outputs() {
    let p = corpus();
    let single = outputs(
        &p,
        &[
            "--json",
            "one/r.json",
            "--junit",
            "one/r.xml",
            "--metrics",
            "one/r.csv",
            "--html",
            "one/r.html",
        ],
        &["one/r.json", "one/r.xml", "one/r.csv", "one/r.html"],
    );
    assert_eq!(single.0, Some(2), "{}", single.1);
    let all: serde_json::Value = serde_json::from_str(&p.read("one/r.json")).unwrap();
    let all = all["summary"]["cases"].as_u64().unwrap();
    for kind in ["count", "hash"] {
        let mut shard_files = Vec::new();
        let mut cases = 0;
        for m in 1..=3 {
            let part = format!("{kind}:{m}/3");
            let json = format!("{kind}/shard-{m}.json");
            let (_, stdout, _) = outputs(&p, &["--partition", &part, "--json", &json], &[]);
            let shard: serde_json::Value = serde_json::from_str(&p.read(&json)).unwrap();
            let n = shard["summary"]["cases"].as_u64().unwrap();
            assert!(n > 0, "{kind} shard {m} ran nothing\n{stdout}");
            cases += n;
            shard_files.push(json);
        }
        assert_eq!(cases, all, "{kind}: the shards split the cases");
        let mut args = vec!["merge"];
        args.extend(shard_files.iter().map(String::as_str));
        args.extend([
            "--json",
            "m/r.json",
            "--junit",
            "m/r.xml",
            "--metrics",
            "m/r.csv",
            "--html",
            "m/r.html",
        ]);
        let merged = p.harness_ci("true", &args);
        assert_eq!(merged.code, single.0, "{kind}\n{merged}");
        assert_eq!(merged.stdout, single.1, "{kind}: terminal output");
        // `harness report` makes the same page from the same shards.
        let mut args = vec!["report"];
        args.extend(shard_files.iter().map(String::as_str));
        args.extend(["--html", "m/report.html"]);
        p.harness(&args).expect_code(0).expect_stdout(&format!(
            "harness report: wrote m/report.html ({all} cases, {all} with their trace)"
        ));
        assert!(
            std::fs::read(p.join("m/report.html")).unwrap() == single.2[3],
            "{kind}: harness report differs from the single run's --html"
        );
        for (i, f) in ["m/r.json", "m/r.xml", "m/r.csv", "m/r.html"]
            .into_iter()
            .enumerate()
        {
            assert!(
                std::fs::read(p.join(f)).unwrap() == single.2[i],
                "{kind}: {f} differs from the single run's"
            );
        }
    }

    // Results that are not harness's are bad input, located.
    p.write("bad.json", "{\"version\": 1, \"files\": [{\"path\": 3}]}");
    let bad = p.harness(&["merge", "bad.json"]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("error: bad.json:1:"), "{bad}");
    p.write(
        "v9.json",
        "{\"version\": 9, \"files\": [], \"orphans\": []}",
    );
    let v9 = p.harness(&["merge", "v9.json"]);
    v9.expect_code(2);
    assert!(
        v9.stderr.contains("results version 9 is not supported"),
        "{v9}"
    );

    let report = p.harness(&["report", "v9.json", "--html", "v9.html"]);
    report.expect_code(2);
    assert!(
        report.stderr.contains("results version 9 is not supported"),
        "{report}"
    );
    assert!(!p.exists("v9.html"), "nothing written from bad input");

    // Results written before they kept traces still make a report, which says what is missing.
    let mut old: serde_json::Value = serde_json::from_str(&p.read("one/r.json")).unwrap();
    for f in old["files"].as_array_mut().unwrap() {
        for c in f["cases"].as_array_mut().into_iter().flatten() {
            let c = c.as_object_mut().unwrap();
            c.remove("trace");
            c.remove("tags");
        }
    }
    p.write("old.json", serde_json::to_string_pretty(&old).unwrap());
    p.harness(&["report", "old.json", "--html", "old.html"])
        .expect_code(0)
        .expect_stdout(&format!("({all} cases, 0 with their trace)"))
        .expect_stdout(&format!("note: {all} cases have no trace in the results"));

    // A shard given twice is refused.
    let twice = p.harness(&["merge", "count/shard-1.json", "count/shard-1.json"]);
    twice.expect_code(2);
    assert!(
        twice.stderr.contains("is in more than one shard"),
        "{twice}"
    );
}

#[test]
fn a_detector_firing_one_iteration_later_fails_only_the_baseline() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    p.harness(&["bless"])
        .expect_code(0)
        .expect_stdout("wrote baselines/scenarios.toml (2 cases recorded");
    p.harness(&["run", "--baseline", "baselines/scenarios.toml"])
        .expect_code(0)
        .expect_stdout("harness baseline: ok. 2 cases compared");

    // The reflex detector's window grows by one: it fires one iteration later. The new
    // golden is reviewed and accepted, so only the metrics tell.
    let text = p.read(EXAMPLE) + "\n[config.reflex]\nwindow = 4\n";
    p.write(EXAMPLE, text);
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    // The example pins the iterations of the nudge and the answer, so its expectations see
    // the later firing too; a reviewer who accepts it moves those pins.
    p.harness(&["run"])
        .expect_code(1)
        .expect_stdout("in iteration 3: expected 1, got 0");
    let text = p
        .read(EXAMPLE)
        .replace("stage = 1 }, iteration = 3,", "stage = 1 }, iteration = 4,")
        .replace(
            "{ kind = \"model_request\", iteration = 4 }",
            "{ kind = \"model_request\", iteration = 5 }",
        );
    p.write(EXAMPLE, text);
    // Exit 3: the run is ok, the baseline names each regression (the bare-loop case did not
    // move).
    assert_whole!(
        "baseline-regressions",
        p,
        &["run", "--baseline", "baselines/scenarios.toml"]
    );

    // A golden failure still wins: exit 1, not 3.
    p.remove(&format!("snapshots/{EXAMPLE_ID}.snap"));
    p.harness(&["run", "--baseline", "baselines/scenarios.toml"])
        .expect_code(1);
    // Nor is a failing run blessed.
    let before = p.read("baselines/scenarios.toml");
    assert_whole!("bless-a-failing-run", p, &["bless"]);
    assert_eq!(p.read("baselines/scenarios.toml"), before);
    p.harness(&["accept"]).expect_code(0);

    // Tolerances in the file absorb the growth.
    let base = p.read("baselines/scenarios.toml").replace(
        "[tolerance]\n",
        "[tolerance]\nwasted_iterations = 1\nfirst_intervention_iteration = 1\niterations = 1\ntokens = \"50%\"\ncost_usd = \"50%\"\nvirtual_ms = 10000\n",
    );
    p.write("baselines/scenarios.toml", base);
    p.harness(&["run", "--baseline", "baselines/scenarios.toml"])
        .expect_code(0);

    // Blessing records the new figures; the tolerances stay.
    p.harness(&["bless"]).expect_code(0);
    let base = p.read("baselines/scenarios.toml");
    assert!(base.contains("wasted_iterations = 1\n"), "{base}");
    assert!(
        base.contains("first_intervention_iteration = 4\n"),
        "{base}"
    );

    // A bad baseline is bad input, located.
    p.write(
        "baselines/bad.toml",
        "version = 1\n[cases.x]\niterations = \"four\"\n",
    );
    assert_whole!(
        "a-bad-baseline",
        p,
        &["run", "--baseline", "baselines/bad.toml"]
    );
}

#[test]
fn github_actions_get_annotations_and_a_markdown_job_summary() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    let golden = format!("snapshots/{EXAMPLE_ID}@none.snap");
    p.write(
        &golden,
        p.read(&golden).replacen("iteration 2", "iteration two", 1),
    );
    p.write("summary.md", "earlier step\n");
    let summary = p.join("summary.md");
    let run = p.harness_env(
        &[
            ("CI", "true"),
            ("GITHUB_ACTIONS", "true"),
            ("GITHUB_STEP_SUMMARY", summary.to_str().unwrap()),
        ],
        &["run"],
    );
    let run = assert_whole!("github-actions", p, &["run"], run);
    run.expect_stdout(&format!(
        "::error file={EXAMPLE},line=53,title=harness%3A {EXAMPLE_ID}@none failed::golden differs: 1 lines added, 1 removed\n"
    ));
    let md = p.read("summary.md");
    assert!(
        md.starts_with("earlier step\n## harness run: FAILED\n"),
        "{md}"
    );
    assert!(
        md.contains(
            "| family | profile | runs | iterations | wasted | interventions | tokens | virtual time | cost |\n"
        ),
        "{md}"
    );
    assert!(
        md.contains("| reflex | moltis | 1 | 4 | 2 | 1 | 892 | 40.0s | $0.0010 |\n"),
        "{md}"
    );
    assert!(
        md.contains("| reflex | none | 1 | 25 | 24 | 0 | 4175 | 4m15s | $0.0044 |\n"),
        "{md}"
    );
    assert!(md.contains("| reflex | moltis | 25 → 4 (-84%) |"), "{md}");
    assert!(
        md.contains(&format!(
            "- `{EXAMPLE_ID}@none` ({EXAMPLE}:53): golden differs"
        )),
        "{md}"
    );

    // Without GITHUB_ACTIONS: no workflow commands.
    p.harness_ci("true", &["run"]).expect_no_stdout("::error");
}

#[test]
fn pending_goldens_on_ci_go_only_to_the_pending_dir_then_diff_and_accept() {
    let p = Project::with_example();
    let run = p.harness_ci("true", &["run", "--pending-dir", "out/pending"]);
    run.expect_code(1)
        .expect_stdout("2 pending golden(s) written to out/pending");
    assert!(!p.exists("snapshots"), "nothing in the tree on CI");
    assert_eq!(
        p.files("out/pending", ".snap.new"),
        [
            format!("out/pending/{EXAMPLE_ID}.snap.new"),
            format!("out/pending/{EXAMPLE_ID}@none.snap.new")
        ]
    );
    p.harness(&["diff", "--pending-dir", "out/pending"])
        .expect_code(0)
        .expect_stdout("(new golden, ")
        .expect_stdout(&format!("    +# harness trace v1: {EXAMPLE_ID}\n"))
        .expect_stdout("2 pending golden(s)");
    p.harness(&["accept", "--pending-dir", "out/pending", EXAMPLE])
        .expect_code(0)
        .expect_stdout("2 pending golden(s) accepted");
    assert!(p.files("out/pending", ".snap.new").is_empty());
    p.harness_ci("true", &["run"]).expect_code(0);

    // A change: the diff is printed without color, golden → pending.
    let golden = format!("snapshots/{EXAMPLE_ID}.snap");
    p.write(
        &golden,
        p.read(&golden).replacen("iteration 1", "iteration one", 1),
    );
    p.harness_ci("true", &["run", "--pending-dir", "out/pending"])
        .expect_code(1);
    p.harness(&["diff", "--pending-dir", "out/pending"])
        .expect_code(0)
        .expect_stdout("    -        0.000s  iteration one\n    +        0.000s  iteration 1\n")
        .expect_stdout("1 pending golden(s)");
}

#[test]
fn filters_and_list_select_cases_without_orphaning_the_rest() {
    let p = Project::new();
    p.copy_from_repo("scenarios/reflex", "scenarios/reflex");
    p.copy_from_repo("snapshots/reflex", "snapshots/reflex");
    let list = p.harness(&[
        "list",
        "--filter",
        "profile:none",
        "--filter",
        "tag:issue-658",
    ]);
    list.expect_code(0);
    let ids: Vec<&str> = list
        .stdout
        .lines()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    assert!(ids.contains(&"reflex/exec-empty-args@none"), "{list}");
    assert!(ids.iter().all(|i| i.ends_with("@none")), "{list}");

    let run = p.harness(&[
        "run",
        "--filter",
        "profile:none",
        "--filter",
        "tag:issue-658",
    ]);
    run.expect_code(0)
        .expect_stdout(&format!("harness run: ok. {} cases from", ids.len()))
        .expect_stdout("0 orphaned goldens");
    let glob = p.harness(&["list", "--filter", "reflex/exec-*"]);
    assert!(
        glob.stdout.lines().all(|l| l.starts_with("reflex/exec-")),
        "{glob}"
    );
    assert!(
        glob.stdout.contains("reflex/exec-empty-args@none "),
        "{glob}"
    );

    // Shards of the list cover it exactly once.
    let all = p.harness(&["list"]).stdout.lines().count();
    let parts: usize = (1..=2)
        .map(|m| {
            p.harness(&["list", "--partition", &format!("count:{m}/2")])
                .stdout
                .lines()
                .count()
        })
        .sum();
    assert_eq!(parts, all);

    let bad = p.harness(&["run", "--partition", "count:3/2"]);
    bad.expect_code(2);
    assert!(bad.stderr.contains("write `count:M/N`"), "{bad}");
    p.harness(&["run", "--filter", "family:["]).expect_code(2);
    p.harness(&["run", "--repeat", "0"]).expect_code(2);
}

#[test]
fn repeats_report_runs_per_case() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    p.harness(&["run", "--repeat", "3", "--json", "r.json"])
        .expect_code(0)
        .expect_stdout("repeats: up to 3 runs per case; pass@3 2 of 2 cases, pass^3 2 of 2");
    let r: serde_json::Value = serde_json::from_str(&p.read("r.json")).unwrap();
    let case = &r["files"][0]["cases"][0];
    assert_eq!(
        (case["runs"].as_u64(), case["passes"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(case["status"], "passed");
    assert_eq!(
        (case["pass_at_k"].as_bool(), case["pass_all_k"].as_bool()),
        (Some(true), Some(true))
    );
}
