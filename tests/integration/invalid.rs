//! The bad-input catalogue, `fixtures/invalid/<format>/`: malformed scenarios (`scenario/`),
//! metric baselines (`baseline/`, given to `run --baseline`) and JSON results (`results/`,
//! given to `merge`). Each is rejected with exit code 2, without a panic, with
//! `error: PATH:LINE:COL: message` pointing at the offending key or value and a `hint:`; a
//! snapshot of each error is committed. Later formats add a folder and a table here.

use crate::support::{Counts, EXAMPLE, Project, repo, summary};

const FIXTURES: &str = "fixtures/invalid/scenario";

/// Where the first diagnostic of each fixture must point: the source text that starts at the
/// reported line:col. A missing top-level field has no place of its own, so it is reported at the
/// start of the document.
const POINTS_AT: &[(&str, &str)] = &[
    ("absurd-latency.toml", "99999999999"),
    ("absurd-max-iterations.toml", "4000000000"),
    ("absurd-usage-tokens.toml", "18446744073709551615"),
    ("approval-for-unknown-tool.toml", "\"deploi\""),
    ("approval-tool-mismatch.toml", "[[approvals]]"),
    ("bad-failure-pattern.toml", "\"exit code (1\""),
    ("bad-iteration-range.toml", "{ min = 5"),
    ("bad-sequence-count.toml", "count = 2"),
    ("bad-sequence-kind.toml", "\"interventon\""),
    ("bad-where-action.toml", "\"strip-tools\""),
    ("bad-where-enum-value.toml", "\"ratelimit\""),
    ("bad-where-field.toml", "polcy = "),
    ("bad-where-policy.toml", "\"moltis_reflex\""),
    ("control-character-in-family.toml", "\"fam\\n"),
    ("deep-nesting.toml", "[]]"),
    ("duplicate-key.toml", "family = \"reflex\""),
    ("empty-family.toml", "\"\""),
    ("empty-model-name.toml", "\"\""),
    ("empty-script.toml", "[model]"),
    ("empty-tool-name.toml", "\"\""),
    ("fault-with-text.toml", "{ kind"),
    ("format-version-2.toml", "2"),
    ("huge-repeat-string-count.toml", "\"forever\""),
    ("invalid-utf8.toml", "\u{FFFD}( menu"),
    ("json-deep-nesting.json", "[[[[[[]]]]]]"),
    ("json-duplicate-key.json", "\"family\": \"reflex\""),
    ("json-invalid-utf8.json", "\u{FFFD} menu"),
    ("json-syntax-missing-comma.json", "\"model\":"),
    ("json-validation-undefined-tool.json", "\"exce\""),
    ("json-validation-unknown-profile.json", "\"moltys\""),
    ("missing-family.toml", "# Missing required field"),
    ("missing-model.toml", "# Missing required field"),
    ("missing-user.toml", "# Missing required field"),
    ("model-name-forges-golden-line.toml", "\"m\\n"),
    ("negative-latency.toml", "-5"),
    ("outcome-ok-and-error.toml", "[[tools.outcomes]]"),
    ("plan-step-structured-tool-call.toml", "[{ name = "),
    ("price-not-a-number.toml", "nan"),
    ("plan-step-without-plan.toml", "\"plan-step\""),
    ("retry-delay-absurd.toml", "31536000000"),
    ("script-runs-dry.toml", "model]"),
    ("signal-without-stop-or-inject.toml", "[[signals]]"),
    ("stream-delta-before-start.toml", "{ type = \"args_delta\""),
    ("toml-syntax-error.toml", "\"fixtures\""),
    ("tool-name-with-escape.toml", "\"exec\\u001b"),
    ("trace-bytes-too-large.toml", "model.turns]]"),
    ("trace-too-long.toml", "model.rules]]"),
    ("undefined-tool.toml", "\"exce\""),
    ("unknown-config-key.toml", "windw = 2"),
    ("unknown-event-kind.toml", "\"tool_call_rejectd\""),
    ("unknown-profile.toml", "\"moltys\""),
    ("unknown-rule-condition.toml", "tools_ofered = "),
    ("unknown-top-level-key.toml", "descripton = "),
    ("virtual-time-budget.toml", "model]"),
    ("workspace-path-traversal.toml", "\"../../etc/passwd\""),
    ("wrong-type-latency.toml", "\"10s\""),
    ("wrong-type-max-iterations.toml", "\"many\""),
];

/// Known defect in src/, asserted to still be there so that a fix makes the test fail until the
/// entry is removed: `src/scenario/validate.rs` reports a signal with neither `stop` nor `inject`
/// without a hint.
const KNOWN_WITHOUT_HINT: &[&str] = &[];

/// One `error: PATH:LINE:COL: message` line, parsed.
struct Located {
    line: usize,
    col: usize,
}

fn parse_error_line(line: &str, path: &str) -> Located {
    let rest = line
        .strip_prefix("error: ")
        .and_then(|l| l.strip_prefix(path))
        .and_then(|l| l.strip_prefix(':'))
        .unwrap_or_else(|| panic!("not `error: {path}:LINE:COL: …`: {line:?}"));
    let mut parts = rest.splitn(3, ':');
    let mut number = |what: &str| -> usize {
        parts
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {what} number in {line:?}"))
    };
    let located = Located {
        line: number("line"),
        col: number("column"),
    };
    let message = parts.next().unwrap_or_default();
    assert!(
        message.starts_with(' ') && message.trim().len() > 5,
        "no message after the location in {line:?}"
    );
    located
}

/// The source text from 1-based `line`:`col` (in chars) to the end of that line.
fn text_at(source: &str, line: usize, col: usize) -> String {
    source
        .split('\n')
        .nth(line - 1)
        .map(|l| l.chars().skip(col - 1).collect())
        .unwrap_or_default()
}

/// Assert that the `error:` line of fixture `key` (at `rel`) points at the text `table` lists.
#[track_caller]
fn assert_points_at(
    table: &[(&str, &str)],
    key: &str,
    source: &str,
    error: &str,
    rel: &str,
    run: &crate::support::Run,
) {
    let at = parse_error_line(error, rel);
    let (_, want) = table
        .iter()
        .find(|(n, _)| *n == key)
        .unwrap_or_else(|| panic!("add {key} to the table of where errors point"));
    let found = text_at(source, at.line, at.col);
    assert!(
        found.starts_with(want),
        "{rel}: the error at {}:{} points at {found:?}, expected {want:?}\n{run}",
        at.line,
        at.col
    );
}

/// A fixture of `fixtures/invalid/KIND/NAME`, read.
struct Fixture {
    /// Its file name.
    name: String,
    /// Its format: the folder it is in.
    kind: String,
    /// `KIND/NAME`, its key in the tables of where errors point.
    key: String,
    /// Its path in the repository, and in a test project.
    rel: String,
    bytes: Vec<u8>,
}

impl Fixture {
    fn read(path: &std::path::Path) -> Self {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let kind = path
            .parent()
            .and_then(|p| p.file_name())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let key = format!("{kind}/{name}");
        Self {
            rel: format!("fixtures/invalid/{key}"),
            bytes: std::fs::read(path).unwrap(),
            name,
            kind,
            key,
        }
    }
}

/// Assert that `output` holds exactly one located error and its hint, pointing where `table`
/// says for fixture `f`, and snapshot the two lines under the fixture's format.
#[track_caller]
fn assert_one_located_error(
    output: &str,
    table: &[(&str, &str)],
    f: &Fixture,
    run: &crate::support::Run,
) {
    let rel = &f.rel;
    let lines: Vec<&str> = output
        .lines()
        .filter(|l| l.starts_with("error: ") || l.starts_with("  hint: "))
        .collect();
    assert!(
        lines.len() == 2 && lines[1].starts_with("  hint: "),
        "{rel}: want one error and its hint\n{run}"
    );
    let source = String::from_utf8_lossy(&f.bytes);
    assert_points_at(table, &f.key, &source, lines[0], rel, run);
    insta::with_settings!({ description => format!("{} file {}", f.kind, f.name), omit_expression => true }, {
        insta::assert_snapshot!(f.kind.as_str(), lines.join("\n"));
    });
}

fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join(FIXTURES))
        .expect("read fixtures/invalid/scenario")
        .map(|e| {
            e.expect("a folder entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn located_errors() {
    insta::glob!("../../fixtures/invalid/scenario", "*.*", |path| {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let rel = format!("{FIXTURES}/{name}");
        let bytes = std::fs::read(path).unwrap();
        let source = String::from_utf8_lossy(&bytes);
        let p = Project::new();
        p.write(&rel, &bytes);

        let run = p.harness(&["run", &rel]);
        run.expect_code(2);
        assert_eq!(
            run.summary(),
            summary(
                "FAILED",
                Counts {
                    files: 1,
                    invalid: 1,
                    ..Counts::default()
                }
            ),
            "{run}"
        );
        assert!(
            p.files("snapshots", "").is_empty(),
            "an invalid scenario wrote goldens: {:?}",
            p.files("snapshots", "")
        );

        let lines: Vec<&str> = run
            .stdout
            .lines()
            .filter(|l| l.starts_with("error: ") || l.starts_with("  hint: "))
            .collect();
        let errors: Vec<&&str> = lines.iter().filter(|l| l.starts_with("error: ")).collect();
        assert!(!errors.is_empty(), "no `error:` line\n{run}");
        for (i, line) in lines.iter().enumerate() {
            if !line.starts_with("error: ") {
                continue;
            }
            let at = parse_error_line(line, &rel);
            let source_lines = source.split('\n').count();
            assert!(
                (1..=source_lines).contains(&at.line) && at.col >= 1,
                "{rel}: location {}:{} is outside the file ({source_lines} lines)",
                at.line,
                at.col
            );
            let has_hint = lines.get(i + 1).is_some_and(|l| l.starts_with("  hint: "));
            if KNOWN_WITHOUT_HINT.contains(&name.as_str()) {
                assert!(
                    !has_hint,
                    "{rel} now has a hint: remove it from KNOWN_WITHOUT_HINT\n{run}"
                );
            } else {
                assert!(
                    has_hint,
                    "{rel}: `{line}` has no `  hint:` line after it\n{run}"
                );
            }
        }

        assert_points_at(POINTS_AT, &name, &source, errors[0], &rel, &run);

        let what = if name.ends_with(".json") {
            format!("JSON scenario {name}")
        } else {
            source.lines().next().unwrap_or_default().to_owned()
        };
        insta::with_settings!({ description => what, omit_expression => true }, {
            insta::assert_snapshot!(lines.join("\n"));
        });
    });
}

#[test]
fn fixtures_cover_the_catalogue_and_say_what_is_wrong() {
    let names = fixture_names();
    assert!(names.len() >= 40, "only {} scenario fixtures", names.len());
    for name in &names {
        assert!(
            POINTS_AT.iter().any(|(n, _)| n == name),
            "fixture {name} has no POINTS_AT entry"
        );
        let bytes = std::fs::read(repo().join(FIXTURES).join(name)).unwrap();
        if name.ends_with(".toml") {
            let first = bytes.split(|b| *b == b'\n').next().unwrap_or_default();
            let first = String::from_utf8_lossy(first);
            assert!(
                first.starts_with("# ") && first.len() > 20,
                "{name}: the first line must be a comment saying what is wrong, got {first:?}"
            );
        } else {
            assert!(name.ends_with(".json"), "{name}: neither .toml nor .json");
        }
    }
    let listed = POINTS_AT.iter().map(|(n, _)| n);
    for n in listed.chain(KNOWN_WITHOUT_HINT) {
        assert!(names.iter().any(|x| x == n), "{n} is listed but missing");
    }
    let utf8 = std::fs::read(repo().join(FIXTURES).join("invalid-utf8.toml")).unwrap();
    assert!(
        std::str::from_utf8(&utf8).is_err(),
        "invalid-utf8.toml must hold invalid UTF-8 (was it re-saved by an editor?)"
    );
}

#[test]
fn a_folder_of_invalid_fixtures_reports_every_file() {
    let p = Project::new();
    p.copy_from_repo(FIXTURES, FIXTURES);
    let n = u32::try_from(fixture_names().len()).unwrap();

    let run = p.harness(&["run", FIXTURES]);
    run.expect_code(2);
    assert_eq!(
        run.summary(),
        summary(
            "FAILED",
            Counts {
                files: n,
                invalid: n,
                ..Counts::default()
            }
        ),
        "{run}"
    );
    for name in fixture_names() {
        run.expect_stdout(&format!("error: {FIXTURES}/{name}:"));
    }
}

#[test]
fn an_invalid_file_does_not_stop_the_valid_ones() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    p.harness(&["run"]).expect_code(0);
    p.copy_from_repo(
        &format!("{FIXTURES}/unknown-profile.toml"),
        "scenarios/broken/unknown-profile.toml",
    );

    let run = p.harness(&["run", "--metrics", "metrics.csv"]);
    run.expect_code(2)
        .expect_stdout(
            "error: scenarios/broken/unknown-profile.toml:4:11: unknown profile `moltys`",
        )
        .expect_no_stdout("FAIL ");
    assert_eq!(
        run.summary(),
        summary(
            "FAILED",
            Counts {
                cases: 2,
                files: 2,
                passed: 2,
                invalid: 1,
                ..Counts::default()
            }
        ),
        "{run}"
    );
    // The valid scenario's runs made it into the per-family table and the metrics.
    for profile in ["moltis", "none"] {
        assert!(
            run.stdout.lines().any(|l| {
                let cols: Vec<&str> = l.split_whitespace().collect();
                cols.starts_with(&["reflex", profile, "1"])
            }),
            "no summary row for reflex/{profile}\n{run}"
        );
    }
    let csv = p.read("metrics.csv");
    let ids: Vec<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["reflex/exec-empty-args", "reflex/exec-empty-args@none"],
        "{csv}"
    );
    assert!(p.exists(EXAMPLE));
    assert!(p.files("snapshots", ".snap.new").is_empty());
}

#[test]
fn a_file_whose_script_runs_dry_in_one_case_writes_no_pending_golden() {
    let p = Project::new();
    p.write(
        "scenarios/dry.toml",
        r#"format = 1
family = "fixtures"
profile = "moltis"
user = "Run it."

[[tools]]
name = "exec"
default = { error = "boom" }

[[model.rules]]
when = { any_message_contains = "LOOP DETECTED" }
reply = { text = "Sorry, I do not know which command you wanted me to run." }

[[model.turns]]
tool_calls = [{ name = "exec" }]
repeat = 3

[compare.none]
"#,
    );
    let run = p.harness(&["run", "--traces", "traces"]);
    run.expect_code(2)
        .expect_stdout("error: scenarios/dry.toml:")
        .expect_stdout("case `dry@none` (profile none): the mock model has no answer");
    assert!(
        p.files("snapshots", "").is_empty() && p.files("traces", "").is_empty(),
        "files written for an invalid scenario: {:?} {:?}",
        p.files("snapshots", ""),
        p.files("traces", "")
    );
}

/// Where the error of each malformed baseline (`run --baseline FILE`) and JSON results file
/// (`merge FILE`) must point, as for scenarios.
const OTHER_POINTS_AT: &[(&str, &str)] = &[
    ("baseline/bad-percentage.toml", "tokens = \"five percent\""),
    ("baseline/cost-not-a-number.toml", "cost_usd = nan"),
    ("baseline/deep-nesting.toml", "[[[[[[[[[[]]]"),
    ("baseline/invalid-utf8.toml", "\u{FFFD}"),
    ("baseline/missing-version.toml", "# Missing field"),
    ("baseline/negative-metric.toml", "-892"),
    ("baseline/syntax-error.toml", ""),
    ("baseline/tolerance-infinite.toml", "tokens = inf"),
    ("baseline/unknown-tolerance-key.toml", "speed = 3"),
    ("baseline/version-2.toml", "version = 2"),
    ("baseline/wrong-type.toml", "\"four\""),
    ("results/cases-and-errors.json", "{"),
    ("results/cost-not-a-number.json", "{"),
    ("results/duplicate-key.json", "\"version\": 1"),
    ("results/flaky-case-passing-verdict.json", "{"),
    ("results/invalid-utf8.json", "\u{FFFD}"),
    ("results/missing-files.json", "}"),
    ("results/tokens-past-the-limit.json", "{"),
    ("results/trace-time-past-the-limit.json", "{"),
    ("results/truncated.json", ""),
    ("results/unknown-file-key.json", "\"unknown_key\""),
    ("results/unknown-golden-verdict.json", "{"),
    ("results/version-2.json", "\"version\": 2"),
    ("results/wrong-type-runs.json", "\"two\""),
];

/// Give one baseline or results fixture to the command that reads it; check the located,
/// hinted error and snapshot it.
fn check_other_format(path: &std::path::Path) {
    let f = Fixture::read(path);
    let (kind, rel) = (f.kind.as_str(), f.rel.as_str());
    let p = Project::with_example();
    p.write(rel, &f.bytes);
    let run = if kind == "baseline" {
        p.harness(&["run", "--baseline", rel, "--json", "out.json"])
    } else {
        p.harness(&["merge", rel, "--json", "out.json"])
    };
    run.expect_code(2);
    assert!(
        !p.exists("out.json"),
        "{rel}: a result file was written\n{run}"
    );
    assert_one_located_error(&run.stderr, OTHER_POINTS_AT, &f, &run);
}

#[test]
fn baseline_errors() {
    insta::glob!("../../fixtures/invalid/baseline", "*.*", |path| {
        check_other_format(path)
    });
}

#[test]
fn results_errors() {
    insta::glob!("../../fixtures/invalid/results", "*.*", |path| {
        check_other_format(path)
    });
}

#[test]
fn the_catalogue_has_forty_files_each_with_its_location() {
    let mut all = fixture_names().len();
    for kind in ["baseline", "results"] {
        let dir = repo().join("fixtures/invalid").join(kind);
        for e in std::fs::read_dir(&dir).expect("read a fixture folder") {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            let key = format!("{kind}/{name}");
            assert!(
                OTHER_POINTS_AT.iter().any(|(n, _)| *n == key),
                "{key} has no OTHER_POINTS_AT entry"
            );
            all += 1;
        }
    }
    assert!(all >= 40, "only {all} malformed inputs");
    for (key, _) in OTHER_POINTS_AT {
        assert!(
            repo().join("fixtures/invalid").join(key).exists(),
            "{key} is listed but missing"
        );
    }
}

#[test]
fn every_invalid_scenario_next_to_a_valid_one_leaves_the_valid_one_running() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    p.copy_from_repo(FIXTURES, "scenarios/zz-invalid");
    let n = u32::try_from(fixture_names().len()).unwrap();

    let run = p.harness(&["run", "--metrics", "metrics.csv"]);
    run.expect_code(2);
    assert_eq!(
        run.summary(),
        summary(
            "FAILED",
            Counts {
                cases: 2,
                files: n + 1,
                passed: 2,
                invalid: n,
                ..Counts::default()
            }
        ),
        "{run}"
    );
    for name in fixture_names() {
        run.expect_stdout(&format!("error: scenarios/zz-invalid/{name}:"));
    }
    assert_eq!(
        p.read("metrics.csv").lines().count(),
        3,
        "header and two rows"
    );
    assert!(p.files("snapshots", ".snap.new").is_empty());
}

/// Inputs too large to commit are made here: each is refused with a located error and a hint,
/// exit code 2, before anything is run.
#[test]
fn oversized_inputs_are_refused_with_the_limit_named() {
    let p = Project::with_example();
    // A scenario of 17 MiB (a long comment), past the 16 MiB limit.
    let mut big = std::fs::read_to_string(repo().join(EXAMPLE)).unwrap();
    big.push_str(&format!("# {}\n", "x".repeat(17 * 1024 * 1024)));
    p.write("scenarios/big.toml", &big);
    // A tool output of 2 MiB, past the 1 MiB limit.
    p.write(
        "scenarios/tool-output.toml",
        format!(
            "format = 1\nfamily = \"fixtures\"\nuser = \"Go.\"\n\n[[tools]]\nname = \"exec\"\ndefault = {{ ok = \"{}\" }}\n\n[[model.turns]]\ntext = \"Done.\"\n",
            "y".repeat(2 * 1024 * 1024)
        ),
    );
    let run = p.harness(&["run", "scenarios/big.toml", "scenarios/tool-output.toml"]);
    run.expect_code(2)
        .expect_stdout("error: scenarios/big.toml:1:1: the scenario is 178")
        .expect_stdout("over the limit of 16777216 bytes (16 MiB)")
        .expect_stdout("hint: split it into several scenarios")
        .expect_stdout("error: scenarios/tool-output.toml:7:18: the tool output's length in bytes is 2097152, over the limit of 1048576")
        .expect_stdout("hint: script a shorter output");
    assert!(run.summary().contains("2 invalid files"), "{run}");
}

/// Where the error of each malformed cassette (`harness run FILE`) and transcript
/// (`harness sweep FILE`) must point.
const WIRE_POINTS_AT: &[(&str, &str)] = &[
    (
        "cassette/absolute-scenario.cassette.json",
        "\"/etc/passwd\"",
    ),
    // serde_json places a number too large at its last digit.
    ("cassette/absurd-elapsed.cassette.json", "0"),
    ("cassette/agent-and-scenario.cassette.json", "\"agent\""),
    ("cassette/agent-at-version-1.cassette.json", "\"version\""),
    ("cassette/agent-replayed-by-run.cassette.json", "\"agent\""),
    (
        "cassette/dangling-scenario.cassette.json",
        "\"../../../scenarios/record/no-such",
    ),
    ("cassette/exchange-missing-request.cassette.json", "},"),
    (
        "cassette/invalid-utf8.cassette.json",
        "\u{FFFD}\u{FFFD} reached",
    ),
    ("cassette/missing-exchanges.cassette.json", "}"),
    (
        "cassette/path-traversal.cassette.json",
        "\"../../../../etc/passwd\"",
    ),
    ("cassette/status-out-of-range.cassette.json", "0,"),
    (
        "cassette/syntax-missing-comma.cassette.json",
        "\"provider\"",
    ),
    ("cassette/unknown-exchange-key.cassette.json", "\"chunk\""),
    ("cassette/unknown-provider.cassette.json", "\"cohere\""),
    ("cassette/unknown-status-shape.cassette.json", " {"),
    ("cassette/version-0.cassette.json", "\"version\": 0"),
    ("cassette/version-3.cassette.json", "\"version\": 3"),
    ("cassette/wrong-type-stream.cassette.json", "\"yes\""),
    (
        "transcript/anthropic-invalid-utf8.json",
        "\u{FFFD}\u{FFFD} files",
    ),
    ("transcript/openai-bad-line.jsonl", ""),
    ("transcript/openai-deep-nesting.jsonl", "[[[[[[[["),
    ("transcript/otlp-span-without-trace-id.json", "}"),
    ("transcript/otlp-truncated.jsonl", ""),
    (
        "transcript/swe-agent-trajectory-not-a-list.traj",
        "\"ls; python",
    ),
    ("transcript/tau2-messages-not-a-list.json", " {\"role\""),
    ("transcript/toolbench-wrong-type.json", "7"),
    ("transcript/truncated-tau-bench.json", ""),
];

/// The scenario the cassette fixtures replay (`../../../scenarios/record/reflex-live.toml`
/// from their folder).
const RECORDED: &str = "scenarios/record/reflex-live.toml";

/// Give one cassette (`run`) or transcript (`sweep`) fixture to the command that reads it;
/// check exit code 2, the one located, hinted error, and snapshot it.
fn check_wire_format(path: &std::path::Path) {
    let f = Fixture::read(path);
    let (kind, rel) = (f.kind.as_str(), f.rel.as_str());
    let p = Project::new();
    p.copy_from_repo(RECORDED, RECORDED);
    p.write(rel, &f.bytes);
    let (run, output) = if kind == "cassette" {
        let run = p.harness(&["run", rel]);
        assert!(
            p.files("snapshots", "").is_empty(),
            "{rel}: goldens written\n{run}"
        );
        let out = run.stdout.clone();
        (run, out)
    } else {
        let run = p.harness(&[
            "sweep",
            rel,
            "--detector",
            "consecutive-identical:k=3",
            "--out",
            "out.csv",
        ]);
        let out = run.stderr.clone();
        (run, out)
    };
    run.expect_code(2);
    assert!(!output.contains("panicked"), "{rel}: a panic\n{run}");
    assert_one_located_error(&output, WIRE_POINTS_AT, &f, &run);
}

#[test]
fn cassette_errors() {
    insta::glob!("../../fixtures/invalid/cassette", "*.json", |path| {
        check_wire_format(path)
    });
}

#[test]
fn transcript_errors() {
    insta::glob!("../../fixtures/invalid/transcript", "*.*", |path| {
        check_wire_format(path)
    });
}

fn wire_fixtures(kind: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo().join("fixtures/invalid").join(kind))
        .expect("read a fixture folder")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn the_cassette_and_transcript_catalogues_cover_their_cases() {
    let cassettes = wire_fixtures("cassette");
    let transcripts = wire_fixtures("transcript");
    assert!(cassettes.len() >= 8, "only {} cassettes", cassettes.len());
    assert!(
        transcripts.len() >= 6,
        "only {} transcripts",
        transcripts.len()
    );
    for (kind, names) in [("cassette", &cassettes), ("transcript", &transcripts)] {
        for name in names {
            let key = format!("{kind}/{name}");
            assert!(
                WIRE_POINTS_AT.iter().any(|(n, _)| *n == key),
                "{key} has no WIRE_POINTS_AT entry"
            );
        }
    }
    for (key, _) in WIRE_POINTS_AT {
        assert!(
            repo().join("fixtures/invalid").join(key).exists(),
            "{key} is listed but missing"
        );
    }
    for utf8 in [
        "cassette/invalid-utf8.cassette.json",
        "transcript/anthropic-invalid-utf8.json",
    ] {
        let bytes = std::fs::read(repo().join("fixtures/invalid").join(utf8)).unwrap();
        assert!(
            std::str::from_utf8(&bytes).is_err(),
            "{utf8} must hold invalid UTF-8"
        );
    }
}

#[test]
fn a_path_traversal_in_a_cassette_is_refused_before_anything_is_read() {
    let p = Project::new();
    // A scenario where the traversal would land, were it followed: it must not be read.
    p.write("secret.toml", "this is not read");
    p.write(
        "a/b/evil.cassette.json",
        std::fs::read_to_string(
            repo().join("fixtures/invalid/cassette/path-traversal.cassette.json"),
        )
        .unwrap()
        .replace("../../../../etc/passwd", "../../../secret.toml"),
    );
    let run = p.harness(&["run", "a/b/evil.cassette.json"]);
    run.expect_code(2).expect_stdout(
        "error: a/b/evil.cassette.json:3:15: the scenario reference `../../../secret.toml` lies outside the project",
    );
    run.expect_no_stdout("this is not read");
}

#[test]
fn invalid_cassettes_and_transcripts_leave_the_valid_inputs_running() {
    let p = Project::with_example();
    p.harness(&["run"]).expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    p.copy_from_repo(RECORDED, RECORDED);
    p.copy_from_repo("fixtures/invalid/cassette", "fixtures/invalid/cassette");
    let n = u32::try_from(wire_fixtures("cassette").len()).unwrap();
    let run = p.harness(&["run", "scenarios/reflex", "fixtures/invalid/cassette"]);
    run.expect_code(2);
    // Walked in a folder, the well-formed agent's cassette (`agent-replayed-by-run`) is left
    // to `exec`: every other fixture is an invalid file.
    assert_eq!(
        run.summary(),
        summary(
            "FAILED",
            Counts {
                cases: 2,
                files: n,
                passed: 2,
                invalid: n - 1,
                ..Counts::default()
            }
        ),
        "{run}"
    );
    run.expect_no_stdout("agent-replayed-by-run");

    p.copy_from_repo("fixtures/invalid/transcript", "transcripts/invalid");
    p.copy_from_repo("fixtures/transcripts/tau2", "transcripts/tau2");
    let run = p.harness(&[
        "sweep",
        "transcripts",
        "--detector",
        "consecutive-identical:k=3",
        "--out",
        "out.csv",
    ]);
    run.expect_code(2);
    for name in wire_fixtures("transcript") {
        let want = format!("error: transcripts/invalid/{name}:");
        assert!(run.stderr.contains(&want), "no `{want}`\n{run}");
    }
    // tau2's runs and the good line of the bad JSON-lines files were scored.
    let csv = p.read("out.csv");
    assert!(csv.lines().count() == 2, "{csv}");
    assert!(!run.stderr.contains("panicked"), "{run}");
}

/// Cassettes and transcripts past their size limit (64 MiB, too large to commit) are refused
/// with the limit named, read no further, and the other inputs still run.
#[test]
fn oversized_cassettes_and_transcripts_are_refused_with_the_limit_named() {
    let p = Project::new();
    p.copy_from_repo(RECORDED, RECORDED);
    let over = usize::try_from(harness::limits::MAX_CASSETTE_BYTES).unwrap() + 1;
    let mut big =
        std::fs::read_to_string(repo().join("fixtures/invalid/cassette/version-3.cassette.json"))
            .unwrap();
    big.push_str(&" ".repeat(over - big.len()));
    p.write("fixtures/invalid/cassette/big.cassette.json", &big);
    let run = p.harness(&["run", "fixtures/invalid/cassette/big.cassette.json"]);
    run.expect_code(2)
        .expect_stdout("error: fixtures/invalid/cassette/big.cassette.json:1:1: the cassette is 67108865 bytes, over the limit of 67108864 bytes (64 MiB)")
        .expect_stdout("  hint: a cassette this large");

    let good =
        std::fs::read_to_string(repo().join("fixtures/transcripts/tau2/retail.json")).unwrap();
    p.write("transcripts/tau2.json", &good);
    let over = usize::try_from(harness::limits::MAX_TRANSCRIPT_BYTES).unwrap() + 1;
    p.write(
        "transcripts/big.json",
        format!("{good}{}", " ".repeat(over - good.len())),
    );
    let run = p.harness(&[
        "sweep",
        "transcripts",
        "--detector",
        "consecutive-identical:k=3",
        "--out",
        "out.csv",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("error: transcripts/big.json:1:1: the transcript is 67108865 bytes, over the limit of 67108864 bytes (64 MiB)"),
        "{run}"
    );
    assert_eq!(
        p.read("out.csv").lines().count(),
        2,
        "the good transcript was scored"
    );
}
