//! `harness suite`: the report card of a loop on the bundled failure-mode suite
//! (`scenarios/suite`): the engine's profiles, and an agent with tools of its own
//! (`fixtures/agents/travel_agent.py`) served the portable scenarios over 127.0.0.1.

use crate::support::{Project, SuiteSize, assert_whole, suite_size};

fn project() -> Project {
    let p = Project::new();
    p.copy_from_repo("scenarios/suite", "scenarios/suite");
    p.copy_from_repo("fixtures/agents/travel_agent.py", "agent.py");
    p
}

/// The card's line of a case, by its title.
fn line<'a>(card: &'a str, title: &str) -> &'a str {
    card.lines()
        .find(|l| l.trim_start().starts_with(title))
        .unwrap_or_else(|| panic!("no line for {title:?} in\n{card}"))
}

#[test]
fn the_engine_profiles_get_a_card_each_from_their_traces() {
    let p = project();
    // The two cards whole: a verdict per case, the wasted turns, tokens and cost, the score.
    let run = assert_whole!(
        "two-profiles",
        p,
        &[
            "suite",
            "--profile",
            "none",
            "--profile",
            "moltis",
            "--json",
            "cards.json",
            "--junit",
            "cards.xml",
        ]
    );
    let cards: Vec<&str> = run.stdout.split("report card: ").skip(1).collect();
    assert_eq!(cards.len(), 2, "{run}");
    let n = suite_size().cases;
    for (card, profile) in cards.iter().zip(["none", "moltis"]) {
        assert!(
            card.starts_with(&format!("profile {profile} ({n} cases of scenarios/suite)")),
            "{run}"
        );
    }
    let reflex = "Reflex loop: empty arguments on every turn";
    // The bare loop runs the reflex loop to its cap; Moltis' detector stops it (its nudge at
    // the 3rd identical failure, the model's answer at iteration 4).
    assert!(
        line(cards[0], reflex).contains("looped to the cap (25 iterations)"),
        "{run}"
    );
    assert!(
        line(cards[1], reflex).contains("recovered at iteration 4"),
        "{run}"
    );
    // Nothing stops a stall that reads as an answer, in either.
    for card in &cards {
        assert!(
            line(card, "The model says it will act, and calls nothing")
                .contains("ended without the answer at iteration 1: «Let me look that"),
            "{card}"
        );
    }
    for card in &cards {
        assert!(card.contains("legitimate work"), "{card}");
        let score = card
            .lines()
            .find(|l| l.starts_with("score "))
            .expect("a score");
        let legitimate = suite_size().legitimate;
        assert!(
            score.ends_with(&format!(
                "{legitimate} of {legitimate} legitimate runs finished"
            )),
            "{score}"
        );
    }
    // The JSON results hold each case's card, as the terminal shows it.
    let json: serde_json::Value = serde_json::from_str(&p.read("cards.json")).expect("JSON");
    let cases: Vec<&serde_json::Value> = json["files"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| f["cases"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(cases.len(), 2 * suite_size().cases);
    let moltis_reflex = cases
        .iter()
        .find(|c| c["id"] == "suite/reflex-empty-arguments@moltis")
        .expect("the case");
    assert_eq!(moltis_reflex["card"]["verdict"], "recovered");
    assert_eq!(moltis_reflex["card"]["iteration"], 4);
    assert_eq!(moltis_reflex["card"]["good"], true);
    // A card judges by its verdicts, and this project keeps no suite goldens: no case reads
    // as failed for a missing one, and the summary's exit code is the command's.
    assert!(
        cases
            .iter()
            .all(|c| c["golden"] == "ungated" && c["status"] == "passed"),
        "{json}"
    );
    let summary = &json["summary"];
    assert_eq!(summary["missing_goldens"], 0, "{summary}");
    assert_eq!(summary["failed"], 0, "{summary}");
    assert_eq!(summary["exit_code"], 0, "{summary}");
    // And the JUnit form: a testsuite per card, a testcase per case, failed without a point.
    let xml = p.read("cards.xml");
    for profile in ["none", "moltis"] {
        assert!(
            xml.contains(&format!(
                r#"<testsuite name="profile {profile}" tests="{n}""#
            )),
            "{xml}"
        );
    }
    assert!(
        xml.contains(r#"<testcase name="Reflex loop: empty arguments on every turn" classname="suite/reflex-empty-arguments""#),
        "{xml}"
    );
    assert!(xml.contains(r#"type="looped_to_cap""#), "{xml}");
    // A card writes no goldens.
    assert!(
        !p.exists("snapshots"),
        "{:?}",
        p.tree(".").keys().collect::<Vec<_>>()
    );
}

#[test]
fn an_agent_with_its_own_tools_gets_its_card() {
    let p = project();
    let run = p.harness(&[
        "suite",
        "--jobs",
        "2",
        "--",
        "python3",
        "agent.py",
        "--detector",
    ]);
    run.expect_code(0);
    let card = &run.stdout;
    assert!(
        card.starts_with(&format!(
            "report card: `python3 agent.py --detector` ({} cases of scenarios/suite)",
            suite_size().cases
        )),
        "{run}"
    );
    // Its detector (three identical failures) stops the reflex loop on its own first tool …
    assert!(
        line(card, "Reflex loop: empty arguments on every turn")
            .contains("recovered at iteration 4"),
        "{run}"
    );
    // … but it checks only missing fields, so a wrong type succeeds: the cases about a wrong
    // type are not exercised, and say so (never "looped to the cap").
    assert!(
        line(card, "The same invalid call repeated (a wrong type)").contains(
            "not exercised: the call meant to fail, `search_flights` «{\"origin\":12345,"
        ),
        "{run}"
    );
    // It looks its tools up by name: a call to an unknown tool crashes it, and the card says
    // why in its last words; its whole output is in a file per case, not on the terminal.
    assert!(
        line(card, "A call to a tool that does not exist")
            .contains("crashed: the agent exited with 1; its last output: «"),
        "{run}"
    );
    assert!(
        line(card, "A call to a tool that does not exist").ends_with("StopIteration»"),
        "{run}"
    );
    assert!(
        p.read(".harness/suite/agent/unknown-tool.log")
            .contains("Traceback (most recent call last)"),
        "{run}"
    );
    assert!(!run.stderr.contains("Traceback"), "{run}");
    assert!(
        run.stderr.contains(
            "harness suite: the agent's output goes to ./.harness/suite/agent (a file per case)"
        ),
        "{run}"
    );
    // It offers two tools, so the cycle between two tools drives it.
    assert!(!line(card, "An A-B-A-B cycle between two tools").contains("could not be driven"));
    assert!(
        line(card, "Polling one status call until it changes").contains("finished at iteration 5")
    );
    assert!(
        card.contains(
            "score 9/24: 4 of 19 failure modes recovered, 5 of 5 legitimate runs finished; 2 not exercised"
        ),
        "{run}"
    );
    // A score to reach: below it, the run fails, and its JSON summary says so.
    p.harness(&[
        "suite",
        "--min-score",
        "10",
        "--json",
        "below.json",
        "--",
        "python3",
        "agent.py",
        "--detector",
    ])
    .expect_code(1)
    .expect_stdout("harness suite: a score of 9 is below --min-score 10");
    let json: serde_json::Value = serde_json::from_str(&p.read("below.json")).expect("JSON");
    let summary = &json["summary"];
    assert_eq!(summary["exit_code"], 1, "{summary}");
    // The agent's crashes (on the unknown tool among them) are their cases' failures (the
    // command was to exit with 0), never a golden: a suite run keeps none.
    assert_eq!(summary["missing_goldens"], 0, "{summary}");
    assert!(summary["failed"].as_u64() >= Some(1), "{summary}");
    assert_eq!(
        summary["failed"], summary["expectation_failures"],
        "{summary}"
    );
}

#[test]
fn a_folder_without_suite_cases_is_no_card() {
    let p = project();
    p.copy_from_repo("scenarios/reflex", "scenarios/reflex");
    assert_whole!(
        "no-suite-case",
        p,
        &["suite", "scenarios/reflex", "--profile", "moltis"]
    );
    assert_whole!("unknown-profile", p, &["suite", "--profile", "nope"]);
}

#[test]
/// docs/suite.md's "put your own loops side by side": `suite --json`, `suite --label --json -- CMD`,
/// `scorecard … --markdown --html`.
fn the_scorecard_puts_the_loops_side_by_side() {
    let p = project();
    p.harness(&[
        "suite",
        "--profile",
        "none",
        "--profile",
        "moltis",
        "--json",
        "engine.json",
    ])
    .expect_code(0);
    p.harness(&[
        "suite",
        "--jobs",
        "2",
        "--label",
        "travel",
        "--json",
        "travel.json",
        "--",
        "python3",
        "agent.py",
        "--detector",
    ])
    .expect_code(0);
    p.write("preface.md", "# Our loops\n");
    let run = p.harness(&[
        "scorecard",
        "engine.json",
        "travel.json",
        "--preface",
        "preface.md",
        "--markdown",
        "scorecard.md",
        "--html",
        "scorecard.html",
    ]);
    run.expect_code(0);
    let md = p.read("scorecard.md");
    assert!(md.starts_with("# Our loops\n\n| loop | score |"), "{md}");
    // A summary row per loop, in the files' order (a file's profiles in their run's order).
    let rows: Vec<&str> = md
        .lines()
        .filter(|l| {
            l.starts_with("| none |") || l.starts_with("| moltis |") || l.starts_with("| travel |")
        })
        .collect();
    assert_eq!(rows.len(), 3, "{md}");
    let SuiteSize {
        cases,
        failures,
        legitimate,
    } = suite_size();
    let full = |score, recovered, finished| {
        format!("{score}/{cases} | {recovered}/{failures} | {finished}/{legitimate} |")
    };
    assert!(
        rows[0].starts_with(&format!("| none | {}", full(10, 4, 6))),
        "{md}"
    );
    assert!(
        rows[1].starts_with(&format!("| moltis | {}", full(16, 10, 6))),
        "{md}"
    );
    assert!(
        rows[2].starts_with("| travel | 9/24 | 4/19 | 5/5 | 2 |"),
        "{md}"
    );
    // A column per loop; the cell says the verdict short: the same case's row across loops.
    assert!(md.contains("| case | none | moltis | travel |"), "{md}");
    let reflex = md
        .lines()
        .find(|l| l.contains("`reflex-empty-arguments`"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(reflex.ends_with("| ✗ cap 25 | ✓ 4 | ✓ 4 |"), "{reflex}");
    // What each missed, in words.
    assert!(
        md.contains("- `unknown-tool`: crashed: the agent exited with 1"),
        "{md}"
    );
    assert!(
        run.stderr.contains("harness scorecard: travel: score 9/24"),
        "{run}"
    );
    // The page: a summary row per loop, then a case × loop matrix whose cells give the
    // iteration and, on hover, the whole verdict.
    let page = p.read("scorecard.html");
    assert!(page.contains("<code>suite</code>"), "{page}");
    assert_eq!(page.matches("<tr><td>").count(), 3, "{page}");
    assert!(
        page.contains("<td class=\"cell good\" title=\"recovered at iteration 4\">✓ 4</td>"),
        "{page}"
    );
    assert!(
        page.contains("<td class=\"cell unjudged\" title=\"not exercised: the call meant to fail"),
        "{page}"
    );
    // The same inputs, the same bytes.
    p.harness(&[
        "scorecard",
        "engine.json",
        "travel.json",
        "--preface",
        "preface.md",
        "--markdown",
        "again.md",
    ])
    .expect_code(0);
    assert_eq!(p.read("again.md"), md);
    // A loop named twice, or results without a card, are bad input.
    let twice = p.harness(&["scorecard", "engine.json", "engine.json"]);
    twice.expect_code(2);
    assert!(
        twice
            .stderr
            .contains("the loop `none` is also in engine.json"),
        "{twice}"
    );
    p.copy_from_repo("scenarios/reflex", "scenarios/reflex");
    p.harness(&["run", "scenarios/reflex", "--json", "plain.json"]);
    let plain = p.harness(&["scorecard", "plain.json"]);
    plain.expect_code(2);
    assert!(
        plain.stderr.contains("plain.json:1:1: holds no suite case"),
        "{plain}"
    );
}

/// A project with `fixtures/agents/shaped_agent.py` as `agent.py` and these cases of the
/// bundled suite (all of them with none) as `scenarios/suite`.
fn shaped(stems: &[&str]) -> Project {
    let p = Project::new();
    if stems.is_empty() {
        p.copy_from_repo("scenarios/suite", "scenarios/suite");
    }
    for stem in stems {
        p.copy_from_repo(
            &format!("scenarios/suite/{stem}.toml"),
            &format!("scenarios/suite/{stem}.toml"),
        );
    }
    p.copy_from_repo("fixtures/agents/shaped_agent.py", "agent.py");
    p
}

/// The card's rows without the tokens and cost (which context sent with the task changes):
/// title, wasted iterations, tool and verdict.
fn verdicts(card: &str) -> Vec<String> {
    card.lines()
        .skip(1)
        .filter(|l| l.starts_with("  ") && !l.trim_start().starts_with("failure modes"))
        .filter(|l| !l.trim_start().starts_with("legitimate work"))
        .map(|l| {
            let (title, rest) = l.split_at(l.char_indices().nth(52).map_or(l.len(), |(i, _)| i));
            let mut words = rest.split_whitespace();
            let wasted = words.next().unwrap_or("");
            let after_cost: Vec<&str> = words.skip(2).collect();
            format!("{}|{wasted}|{}", title.trim(), after_cost.join(" "))
        })
        .collect()
}

fn suite_of(p: &Project, agent_args: &[&str], extra: &[&str]) -> String {
    let mut args = vec!["suite", "--jobs", "2"];
    args.extend(extra);
    args.extend(["--", "python3", "agent.py"]);
    args.extend(agent_args);
    let run = p.harness(&args);
    run.expect_code(0);
    run.stdout.clone()
}

#[test]
fn context_sent_before_or_with_the_task_is_never_the_loop_speaking_up() {
    // Codex CLI's environment context before the task, a setup exchange ("Got it."), Claude
    // Code's reminder block in the task's own message: the card of each is the bare loop's,
    // case for case (tokens aside).
    let p = shaped(&[]);
    let bare = verdicts(&suite_of(&p, &[], &[]));
    assert_eq!(bare.len(), suite_size().cases, "{bare:#?}");
    assert!(
        bare.iter().any(
            |l| l.contains("Polling one status call") && l.ends_with("finished at iteration 5")
        ),
        "{bare:#?}"
    );
    for context in ["before", "setup", "parts"] {
        let card = verdicts(&suite_of(&p, &["--context", context], &[]));
        assert_eq!(card, bare, "--context {context}");
    }
}

#[test]
fn the_case_binds_a_tool_it_can_use_and_says_which() {
    let invalid = [
        "reflex-empty-arguments",
        "missing-argument-repeated",
        "corrected-after-validation-error",
        "polling-until-change",
    ];
    // A first tool without parameters: the invalid calls go to the tool with a required one,
    // the valid ones to the first; the card names each.
    let p = shaped(&invalid);
    let card = suite_of(&p, &["--tools", "no-params-first"], &[]);
    assert!(
        line(&card, "Reflex loop").contains("lookup_order  looped to the cap"),
        "{card}"
    );
    assert!(
        line(&card, "A call corrected after one validation error")
            .contains("lookup_order  finished at iteration 3"),
        "{card}"
    );
    assert!(
        line(&card, "Polling one status call").contains("list_orders   finished at iteration 5"),
        "{card}"
    );
    // Bound to the tool without parameters on purpose: the empty call is valid, so the cases
    // about it are not exercised, and say why; none is scored.
    let card = suite_of(&p, &["--tools", "no-params-first"], &["--bind", "list_*"]);
    for title in [
        "Reflex loop",
        "A call missing a required argument",
        "A call corrected after one validation error",
    ] {
        assert!(
            line(&card, title).contains(
                "not exercised: the call meant to fail, `list_orders` «{}», read as a success"
            ),
            "{card}"
        );
    }
    assert!(
        card.contains("score 1/1: 0 of 0 failure modes recovered, 1 of 1 legitimate runs finished; 3 not exercised"),
        "{card}"
    );
    // The project file's `[suite] bind` says the same for every run.
    p.write(
        "harness.toml",
        "format = 1\n\n[suite]\nbind = [\"list_*\"]\n",
    );
    let from_file = suite_of(&p, &["--tools", "no-params-first"], &[]);
    assert_eq!(from_file, card);
    std::fs::remove_file(p.join("harness.toml")).expect("removed");
    // Meta tools (a subagent, a tool search) are never bound.
    let card = suite_of(&p, &["--tools", "meta-first"], &[]);
    assert!(
        !card.contains("Agent ") && !card.contains("tool_search"),
        "{card}"
    );
    // pydantic's shapes: a model parameter behind `$ref`, an enum, a list: the valid calls
    // pass the agent's own validation, the invalid ones fail it.
    let card = suite_of(&p, &["--tools", "pydantic"], &[]);
    assert!(
        line(&card, "Polling one status call").contains("finished at iteration 5"),
        "{card}"
    );
    assert!(
        line(&card, "A call corrected after one validation error")
            .contains("finished at iteration 3"),
        "{card}"
    );
    assert!(
        line(&card, "Reflex loop").contains("schedule_meeting  looped to the cap"),
        "{card}"
    );
}

#[test]
fn an_agent_without_tools_is_judged_only_where_no_tool_is_needed() {
    let p = shaped(&[
        "content-filter",
        "server-errors-then-recovery",
        "reflex-empty-arguments",
        "polling-until-change",
        "two-tool-cycle",
    ]);
    let card = suite_of(&p, &["--tools", "none"], &[]);
    assert!(
        line(&card, "A refusal by the content filter").contains("recovered at iteration 1"),
        "{card}"
    );
    assert!(
        line(&card, "Server errors, then recovery").contains("crashed"),
        "{card}"
    );
    for title in ["Reflex loop", "Polling one status call", "An A-B-A-B cycle"] {
        assert!(
            line(&card, title).contains("could not be driven: the agent offers no tools"),
            "{card}"
        );
    }
    assert!(
        card.contains("score 1/2: 1 of 2 failure modes recovered, 0 of 0 legitimate runs finished; 3 could not be driven"),
        "{card}"
    );
}

#[test]
fn one_case_one_row_whatever_the_agent_retries_or_asks_on_the_side() {
    let p = shaped(&[
        "context-overflow",
        "request-timeout",
        "polling-until-change",
    ]);
    // A framework that runs the task again after a failed request: its second attempt
    // continues the case.
    let card = suite_of(&p, &["--retry-task"], &["--json", "retry.json"]);
    assert!(
        line(&card, "The context window overflows").contains("recovered at iteration 3"),
        "{card}"
    );
    assert!(
        line(&card, "A request that times out").contains("recovered at iteration 1"),
        "{card}"
    );
    // An agent that asks for a title first, without tools: a side request, answered in text,
    // never the outcome; one row a case, the title's conversation kept under it.
    let card = suite_of(&p, &["--side", "title"], &["--json", "side.json"]);
    assert!(
        card.starts_with("report card: `python3 agent.py --side title` (3 cases of"),
        "{card}"
    );
    assert!(
        line(&card, "Polling one status call").contains("finished at iteration 5"),
        "{card}"
    );
    let json: serde_json::Value = serde_json::from_str(&p.read("side.json")).expect("JSON");
    let cases: Vec<&serde_json::Value> = json["files"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| f["cases"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(cases.len(), 6, "two conversations a case");
    let cards: Vec<&serde_json::Value> = cases.iter().filter_map(|c| c.get("card")).collect();
    assert_eq!(cards.len(), 3, "one card a case");
    for c in cards {
        let others = c["others"].as_array().expect("the other conversation");
        assert!(
            others[0]
                .as_str()
                .is_some_and(|o| o.contains("a side request: a title request")),
            "{others:?}"
        );
    }
}

#[test]
fn failures_told_only_in_text_are_read_or_the_case_says_so() {
    let p = shaped(&["reflex-empty-arguments", "same-invalid-call"]);
    // "Process exited with code 1", as coding agents' shell tools report a failure.
    let card = suite_of(&p, &["--failure-text"], &[]);
    assert!(
        line(&card, "Reflex loop").contains("looped to the cap"),
        "{card}"
    );
    // Without the built-in shapes nothing marks it: not exercised, never "looped".
    let card = suite_of(&p, &["--failure-text"], &["--no-builtin-failures"]);
    for title in ["Reflex loop", "The same invalid call repeated"] {
        assert!(
            line(&card, title).contains("not exercised: the call meant to fail"),
            "{card}"
        );
    }
}

#[test]
fn a_tool_error_sent_back_bare_is_read_when_it_names_the_call_s_argument() {
    // opencode sends a tool's error as its bare message: "File /work/charlie-878 not found".
    // It names the made-up value of the call, so the valid call failed: not exercised, never
    // "finished" on work that never happened.
    let p = shaped(&["two-tools-alternating", "polling-until-change"]);
    let card = suite_of(&p, &["--missing-file", "get_weather"], &[]);
    assert!(
        line(&card, "Two tools alternating")
            .contains("not exercised: the valid call `get_weather`"),
        "{card}"
    );
    assert!(
        line(&card, "Two tools alternating").contains("not found"),
        "{card}"
    );
    // The tool whose files exist still finishes its work.
    assert!(
        line(&card, "Polling one status call").contains("finished at iteration 5"),
        "{card}"
    );
}

#[test]
fn a_shell_command_that_never_ran_is_read_from_its_missing_echo() {
    // A shell tool whose sandbox refuses every command in words of its own: the output of the
    // `echo WORD-N` harness made to succeed lacks its word, so the valid calls failed and the
    // legitimate work was not exercised (never "finished").
    let p = shaped(&["polling-until-change"]);
    let denied = suite_of(&p, &["--tools", "shell", "--denied"], &[]);
    assert!(
        line(&denied, "Polling one status call")
            .contains("not exercised: the valid call `run_command`"),
        "{denied}"
    );
    assert!(
        line(&denied, "Polling one status call").contains("Request denied by the sandbox"),
        "{denied}"
    );
    // The same tool running its commands finishes the work.
    let ran = suite_of(&p, &["--tools", "shell"], &[]);
    assert!(
        line(&ran, "Polling one status call").contains("finished at iteration 5"),
        "{ran}"
    );
}

#[test]
fn an_agent_that_answers_then_exits_non_zero_crashed_after_its_answer() {
    let p = shaped(&["retry-then-correct"]);
    let run = p.harness(&["suite", "--", "python3", "agent.py", "--exit-after-answer"]);
    run.expect_code(0);
    assert!(
        line(&run.stdout, "A failed call retried once")
            .contains("crashed: the agent exited with 1 after the model answered «All done"),
        "{}",
        run.stdout
    );
}

#[test]
fn a_structured_answer_after_the_loop_is_a_side_request_not_withheld_tools() {
    // LangGraph's `response_format`: the loop's text answer, then the same history once more
    // without tools, asking for JSON by a schema. The loop finished (or ended without the
    // answer) where it did; the structured request is a side request, not the loop stripping
    // its tools, and the script's next turn is not spent on it.
    let p = shaped(&["polling-until-change", "intent-stall"]);
    let card = suite_of(&p, &["--structured"], &["--json", "structured.json"]);
    assert!(
        line(&card, "Polling one status call").contains("finished at iteration 5"),
        "{card}"
    );
    assert!(
        line(&card, "The model says it will act")
            .contains("ended without the answer at iteration 1"),
        "{card}"
    );
    let json: serde_json::Value = serde_json::from_str(&p.read("structured.json")).expect("JSON");
    let others: Vec<String> = json["files"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|f| f["cases"].as_array().into_iter().flatten())
        .filter_map(|c| c["card"]["others"].as_array())
        .flatten()
        .filter_map(|o| o.as_str().map(str::to_owned))
        .collect();
    assert_eq!(others.len(), 2, "{others:?}");
    assert!(
        others
            .iter()
            .all(|o| o
                .contains("a side request: a structured-output request after the loop's answer")),
        "{others:?}"
    );
}

#[test]
fn a_hung_agent_s_verdict_says_what_it_had_done_last() {
    // Killed at its timeout: after its answer (it never exited), with a call unanswered, after
    // a provider error it never asked again after. None of them is a run without an answer,
    // or an agent that stopped or gave up on its own.
    let p = shaped(&["retry-then-correct", "rate-limit-storm"]);
    let card = |how: &str| {
        let run = p.harness(&[
            "suite",
            "--jobs",
            "2",
            // Long enough for the agent to reach its hang on a loaded machine (it never
            // ends by itself, so each card takes this long).
            "--timeout-ms",
            "8000",
            "--label",
            how,
            "--json",
            &format!("{how}.json"),
            "--",
            "python3",
            "agent.py",
            "--hang",
            how,
        ]);
        run.expect_code(0);
        run.stdout.clone()
    };
    let after_answer = card("after-answer");
    assert!(
        line(&after_answer, "A failed call retried once")
            .contains("hung (killed at its timeout) after the model answered «All done"),
        "{after_answer}"
    );
    let in_tool = card("in-tool");
    assert!(
        line(&in_tool, "A failed call retried once").contains(
            "hung (killed at its timeout) with the model's call to `lookup_order` at iteration 1 unanswered"
        ),
        "{in_tool}"
    );
    let after_error = card("after-error");
    assert!(
        line(&after_error, "A storm of 429s").contains(
            "hung (killed at its timeout) after `rate_limit` from the provider at iteration 1 (retry-after 2000 ms), without asking again"
        ),
        "{after_error}"
    );
    // Killed before it asked anything: no case began, so no hang of its loop.
    let run = p.harness(&[
        "suite",
        "--timeout-ms",
        "300",
        "--label",
        "asleep",
        "--",
        "python3",
        "-c",
        "import time; time.sleep(30)",
    ]);
    run.expect_code(0);
    assert!(
        line(&run.stdout, "A storm of 429s").contains(
            "could not be driven: the agent made no model request before it was killed at its timeout"
        ),
        "{}",
        run.stdout
    );
    // The trace says the kill ended the conversation, not the agent: no `stopped`, no "gave up".
    for how in ["in-tool", "after-error"] {
        let json: serde_json::Value =
            serde_json::from_str(&p.read(&format!("{how}.json"))).expect("JSON");
        let events: Vec<&serde_json::Value> = json["files"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|f| f["cases"].as_array().into_iter().flatten())
            .filter(|c| c["card"]["verdict"] == "hung")
            .flat_map(|c| c["trace"].as_array().into_iter().flatten())
            .collect();
        let outcome = events
            .iter()
            .find(|e| e["kind"] == "outcome")
            .unwrap_or_else(|| panic!("{how}: an outcome in {json}"));
        assert_eq!(outcome["outcome"], "error", "{how}: {outcome}");
        assert!(
            outcome["detail"]
                .as_str()
                .is_some_and(|d| d.starts_with("the agent was killed at its timeout, ")),
            "{how}: {outcome}"
        );
    }
}

/// A client that sends the same request again when its stream is cut, as Codex CLI does
/// (streamed) and Claude Code (whole), then answers with the text it gets.
const RESENDING_AGENT: &str = r#"
import json, os, sys, urllib.request
url = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions"
tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object",
          "properties": {"query": {"type": "string"}}, "required": ["query"]}}}]
body = {"model": "m", "messages": [{"role": "user", "content": os.environ["HARNESS_USER"]}], "tools": tools, "stream": True}
for attempt in range(6):
    if attempt and sys.argv[1:] == ["--whole"]:
        body["stream"] = False
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            raw = r.read().decode()
    except Exception as e:
        print("cut:", e, file=sys.stderr)
        continue
    if not body["stream"]:
        print("answer:", json.loads(raw)["choices"][0]["message"].get("content"))
        break
    if "[DONE]" not in raw:
        print("cut stream, sending the same again", file=sys.stderr)
        continue
    text = "".join(json.loads(l[6:])["choices"][0]["delta"].get("content") or ""
                   for l in raw.splitlines() if l.startswith("data: {") and json.loads(l[6:])["choices"])
    print("answer:", text)
    break
"#;

#[test]
fn a_request_sent_again_after_a_cut_stream_continues_its_case() {
    let p = shaped(&["stream-cut-in-a-call"]);
    p.write("resend.py", RESENDING_AGENT);
    for how in [&[][..], &["--whole"][..]] {
        let mut args = vec!["suite", "--json", "cut.json", "--", "python3", "resend.py"];
        args.extend(how);
        let run = p.harness(&args);
        run.expect_code(0);
        // One conversation: the resent request continues it, the cut call never ran.
        assert!(
            line(&run.stdout, "A stream cut in the middle of a tool call")
                .ends_with("recovered at iteration 2"),
            "{run}"
        );
        let json: serde_json::Value = serde_json::from_str(&p.read("cut.json")).expect("JSON");
        let cases = json["files"][0]["cases"].as_array().expect("cases");
        assert_eq!(cases.len(), 1, "{run}");
        let trace = serde_json::to_string(&cases[0]["trace"]).expect("trace");
        assert!(trace.contains("tool_call_skipped"), "{trace}");
        assert!(!trace.contains("tool_call_start"), "{trace}");
    }
}

#[test]
fn an_agent_whose_every_request_looks_like_a_side_request_is_said_undriven() {
    // A tool-less agent whose own prompt speaks of summaries: its requests look like side
    // requests, so none ran the case; the card says so rather than leave the case out.
    let p = shaped(&["content-filter"]);
    let card = suite_of(
        &p,
        &[
            "--tools",
            "none",
            "--persona",
            "You are a summarization assistant.",
        ],
        &[],
    );
    assert!(card.starts_with("report card: `python3 agent.py --tools none --persona You are a summarization assistant.` (1 cases of"), "{card}");
    assert!(
        line(&card, "A refusal by the content filter").contains(
            "could not be driven: every conversation of the agent was taken for a side request (a summary request"
        ),
        "{card}"
    );
    // Its results hold what the verdict is read from: the scorecard takes them.
    p.harness(&[
        "suite",
        "--json",
        "side.json",
        "--",
        "python3",
        "agent.py",
        "--tools",
        "none",
        "--persona",
        "You are a summarization assistant.",
    ])
    .expect_code(0);
    let scored = p.harness(&["scorecard", "side.json"]);
    scored.expect_code(0);
    assert!(scored.stderr.contains("1 could not be driven"), "{scored}");
}

#[test]
fn a_suite_stopped_by_a_signal_says_so_and_its_card_is_refused_by_the_scorecard() {
    // An agent that sends SIGTERM to harness on its first case (as CI cancelling a job does):
    // the case in flight ends, no other starts, and the card says how far it got.
    let p = shaped(&[
        "reflex-empty-arguments",
        "retry-then-correct",
        "unknown-tool",
    ]);
    p.write(
        "stop.py",
        "import os, signal\nos.kill(os.getppid(), signal.SIGTERM)\n",
    );
    let run = p.harness(&[
        "suite",
        "--jobs",
        "1",
        "--json",
        "stopped.json",
        "--",
        "python3",
        "stop.py",
    ]);
    run.expect_code(143);
    assert!(
        run.stdout.contains(
            "harness suite: stopped by SIGTERM after 1 of 3 cases: the card is incomplete"
        ),
        "{}",
        run.stdout
    );
    let json: serde_json::Value = serde_json::from_str(&p.read("stopped.json")).expect("JSON");
    assert_eq!(
        json["stopped"],
        serde_json::json!({"by": "SIGTERM", "done": 1, "of": 3})
    );
    // The scorecard refuses it, unless asked; then its column says it.
    let refused = p.harness(&["scorecard", "stopped.json"]);
    refused.expect_code(2);
    assert!(
        refused
            .stderr
            .contains("holds an incomplete suite: stopped by SIGTERM after 1 of 3 cases"),
        "{}",
        refused.stderr
    );
    let allowed = p.harness(&["scorecard", "stopped.json", "--allow-incomplete"]);
    allowed.expect_code(0);
    assert!(
        allowed
            .stdout
            .contains("(stopped by SIGTERM after 1 of 3 cases) |"),
        "{}",
        allowed.stdout
    );
}

#[test]
/// A scorecard reads every verdict again from the case's saved trace and basis: a results file
/// whose verdicts were flipped, whose agent's exit was rewritten, or that keeps no basis to read
/// its verdicts from is refused, never scored as written.
fn the_scorecard_scores_verdicts_as_their_traces_read_them() {
    let p = Project::new();
    for stem in ["reflex-empty-arguments", "unknown-tool"] {
        p.copy_from_repo(
            &format!("scenarios/suite/{stem}.toml"),
            &format!("scenarios/suite/{stem}.toml"),
        );
    }
    p.copy_from_repo("fixtures/agents/travel_agent.py", "agent.py");
    p.harness(&["suite", "--profile", "none", "--json", "engine.json"])
        .expect_code(0);
    p.harness(&[
        "suite",
        "--json",
        "agent.json",
        "--",
        "python3",
        "agent.py",
        "--detector",
    ])
    .expect_code(0);
    p.harness(&["scorecard", "engine.json", "agent.json"])
        .expect_code(0);
    let read =
        |name: &str| -> serde_json::Value { serde_json::from_str(&p.read(name)).expect("JSON") };
    let card_of = |json: &mut serde_json::Value, stem: &str| -> serde_json::Value {
        let case = json["files"]
            .as_array_mut()
            .expect("files")
            .iter_mut()
            .flat_map(|f| f["cases"].as_array_mut().expect("cases").iter_mut())
            .find(|c| c["id"].as_str().expect("id").contains(stem))
            .expect("the case");
        case["card"].take()
    };
    let put_card = |json: &mut serde_json::Value, stem: &str, card: serde_json::Value| {
        for f in json["files"].as_array_mut().expect("files") {
            for c in f["cases"].as_array_mut().expect("cases") {
                if c["id"].as_str().expect("id").contains(stem) {
                    c["card"] = card.clone();
                }
            }
        }
    };
    // The engine's `none` loops to its cap on the reflex loop; flipped to "recovered" it is refused.
    let mut flipped = read("engine.json");
    let mut card = card_of(&mut flipped, "reflex-empty-arguments");
    assert_eq!(card["verdict"], "looped_to_cap", "{card}");
    card["verdict"] = "recovered".into();
    put_card(&mut flipped, "reflex-empty-arguments", card);
    p.write("flipped.json", flipped.to_string());
    let run = p.harness(&["scorecard", "flipped.json"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains(
            "case `suite/reflex-empty-arguments`: its verdict says `recovered at iteration 25`, its trace reads `looped to the cap (25 iterations)`"
        ),
        "{}",
        run.stderr
    );
    // The agent crashes on the unknown tool (exit 1); said to have exited 0, its verdict no
    // longer follows from what it kept.
    let mut rewritten = read("agent.json");
    let mut card = card_of(&mut rewritten, "unknown-tool");
    assert_eq!(card["basis"]["end"], "exit 1", "{card}");
    card["basis"]["end"] = "exit 0".into();
    put_card(&mut rewritten, "unknown-tool", card);
    p.write("rewritten.json", rewritten.to_string());
    let run = p.harness(&["scorecard", "rewritten.json"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains(
            "case `suite/unknown-tool@agent`: its verdict says `crashed: the agent exited with 1"
        ),
        "{}",
        run.stderr
    );
    // A card without its basis (a file of an older harness) cannot be read again.
    let mut bare = read("engine.json");
    let mut card = card_of(&mut bare, "unknown-tool");
    card.as_object_mut().expect("card").remove("basis");
    put_card(&mut bare, "unknown-tool", card);
    p.write("bare.json", bare.to_string());
    let run = p.harness(&["scorecard", "bare.json"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("it keeps no basis to read its verdict from"),
        "{}",
        run.stderr
    );
    // Nor one whose trace is gone.
    let mut traceless = read("engine.json");
    for f in traceless["files"].as_array_mut().expect("files") {
        for c in f["cases"].as_array_mut().expect("cases") {
            c.as_object_mut().expect("case").remove("trace");
        }
    }
    p.write("traceless.json", traceless.to_string());
    let run = p.harness(&["scorecard", "traceless.json"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("it keeps no trace to read its verdict from"),
        "{}",
        run.stderr
    );
    // Each edit below scores better than the run did; each is refused at its case.
    let refused = |name: &str, json: &serde_json::Value, want: &str| {
        p.write(name, json.to_string());
        let run = p.harness(&["scorecard", name]);
        run.expect_code(2);
        assert!(run.stderr.contains(want), "{name}: {}", run.stderr);
    };
    // A failing case said to be only side requests (leaving the total).
    let mut side = read("engine.json");
    let mut card = card_of(&mut side, "reflex-empty-arguments");
    card["verdict"] = "not_driven".into();
    card["detail"] = "every conversation of the agent was taken for a side request (a title), so none ran the case".into();
    card.as_object_mut().expect("card").remove("iteration");
    put_card(&mut side, "reflex-empty-arguments", card);
    refused(
        "side.json",
        &side,
        "its verdict says every conversation was a side request, and its results do not show them",
    );
    // An answer every text holds, with the verdict it then gives.
    let mut answer = read("engine.json");
    let mut card = card_of(&mut answer, "reflex-empty-arguments");
    card["basis"]["answer"] = "".into();
    put_card(&mut answer, "reflex-empty-arguments", card);
    refused(
        "answer.json",
        &answer,
        "the answer, premise or portable tools it was read with are not its case's",
    );
    // A failure mode called legitimate work.
    let mut kind = read("engine.json");
    let mut card = card_of(&mut kind, "reflex-empty-arguments");
    card["kind"] = "legitimate".into();
    put_card(&mut kind, "reflex-empty-arguments", card);
    refused("kind.json", &kind, "are not its case's");
    // A failing case dropped, or only its card.
    let mut dropped = read("engine.json");
    for f in dropped["files"].as_array_mut().expect("files") {
        f["cases"].as_array_mut().expect("cases").retain(|c| {
            !c["id"]
                .as_str()
                .expect("id")
                .contains("reflex-empty-arguments")
        });
    }
    refused(
        "dropped.json",
        &dropped,
        "the loop `none` has no card for the suite case `reflex-empty-arguments`: the file holds 1 of the suite's 2 cases",
    );
    let mut uncarded = read("engine.json");
    for f in uncarded["files"].as_array_mut().expect("files") {
        for c in f["cases"].as_array_mut().expect("cases") {
            if c["id"]
                .as_str()
                .expect("id")
                .contains("reflex-empty-arguments")
            {
                c.as_object_mut().expect("case").remove("card");
            }
        }
    }
    refused(
        "uncarded.json",
        &uncarded,
        "case `suite/reflex-empty-arguments` of a suite scenario has no card",
    );
    // Tokens and cost the trace does not give.
    let mut cheap = read("engine.json");
    for f in cheap["files"].as_array_mut().expect("files") {
        for c in f["cases"].as_array_mut().expect("cases") {
            c["metrics"]["input_tokens"] = 0.into();
        }
    }
    refused("cheap.json", &cheap, "its metrics (tokens 0/");
    // A case given twice.
    let mut twice = read("agent.json");
    let files = twice["files"].as_array_mut().expect("files");
    let copy = files[0]["cases"][0].clone();
    files[0]["cases"].as_array_mut().expect("cases").push(copy);
    refused("twice.json", &twice, "is in the results more than once");
    // A loop that is not the label its ids carry.
    let mut relabelled = read("agent.json");
    for f in relabelled["files"].as_array_mut().expect("files") {
        f["cases"][0]["metrics"]["profile"] = "other".into();
    }
    refused(
        "relabelled.json",
        &relabelled,
        "its loop `other` is not the label its id carries",
    );
}

#[test]
/// A label names goldens and a folder of agent logs: one file name, never a path.
fn a_label_is_one_name() {
    let p = Project::new();
    for (n, label) in ["../escaped", "/tmp/abs", "", "a\u{1b}[2Jb", "..", "a b"]
        .into_iter()
        .enumerate()
    {
        assert_whole!(
            format!("bad-label-{n}"),
            p,
            &["suite", "--label", label, "--", "true"]
        );
    }
    assert!(!p.exists(".harness"));
}

#[test]
/// A suite stopped by a signal stays incomplete through `harness merge`; a `stopped` no run
/// could write is refused, never summed past its bounds.
fn merged_results_keep_the_mark_of_a_stopped_suite() {
    let p = Project::new();
    p.copy_from_repo(
        "scenarios/suite/reflex-empty-arguments.toml",
        "scenarios/suite/reflex-empty-arguments.toml",
    );
    p.harness(&["suite", "--profile", "none", "--json", "r.json"])
        .expect_code(0);
    let mut json: serde_json::Value = serde_json::from_str(&p.read("r.json")).expect("JSON");
    json["stopped"] = serde_json::json!({"by": "SIGTERM", "done": 1, "of": suite_size().cases});
    p.write("stopped.json", json.to_string());
    p.harness(&[
        "merge",
        "stopped.json",
        "--no-baseline",
        "--json",
        "merged.json",
    ]);
    let merged: serde_json::Value = serde_json::from_str(&p.read("merged.json")).expect("JSON");
    assert_eq!(merged["stopped"], json["stopped"]);
    let run = p.harness(&["scorecard", "merged.json"]);
    run.expect_code(2);
    assert!(run.stderr.contains("holds an incomplete suite"), "{run}");
    for stopped in [
        serde_json::json!({"by": "SIGTERM", "done": 50, "of": 3}),
        serde_json::json!({"by": "SIGTERM", "done": usize::MAX, "of": usize::MAX}),
    ] {
        json["stopped"] = stopped;
        p.write("bad.json", json.to_string());
        let run = p.harness(&["merge", "bad.json", "--no-baseline"]);
        run.expect_code(2);
        assert!(run.stderr.contains("no run does that"), "{run}");
    }
}

#[test]
/// A suite file that is no valid scenario is named with its place, as `run` names it; the card
/// is made without it, exit 2.
fn a_bad_suite_file_is_named_where_it_is_wrong() {
    let p = Project::new();
    p.copy_from_repo(
        "scenarios/suite/reflex-empty-arguments.toml",
        "scenarios/suite/reflex-empty-arguments.toml",
    );
    p.write("scenarios/suite/bad.toml", "x = [1\n");
    assert_whole!("a-bad-suite-file", p, &["suite", "--profile", "none"]);
}

/// `suite --help` names the profiles the suite cards by default, as the registry says.
#[test]
fn the_help_names_the_registry_s_default_profiles() {
    let help = Project::new().harness(&["suite", "--help"]);
    help.expect_code(0);
    let flat = help.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    let defaults: Vec<&str> = harness::policy::PROFILES
        .iter()
        .filter(|p| p.on_default_card)
        .map(|p| p.name)
        .collect();
    let want = format!("[default: {}]", defaults.join(", "));
    assert!(flat.contains(&want), "`{want}` not in\n{help}");
}
