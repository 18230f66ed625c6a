//! `harness suite`: the report card of a loop on the bundled failure-mode suite
//! (`scenarios/suite`): the engine's profiles, and an agent with tools of its own
//! (`fixtures/agents/travel_agent.py`) served the portable scenarios over 127.0.0.1.

use crate::support::Project;

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
    let run = p.harness(&[
        "suite",
        "--profile",
        "none",
        "--profile",
        "moltis",
        "--json",
        "cards.json",
        "--junit",
        "cards.xml",
    ]);
    run.expect_code(0);
    let cards: Vec<&str> = run.stdout.split("report card: ").skip(1).collect();
    assert_eq!(cards.len(), 2, "{run}");
    assert!(
        cards[0].starts_with("profile none (26 cases of scenarios/suite)"),
        "{run}"
    );
    assert!(
        cards[1].starts_with("profile moltis (26 cases of scenarios/suite)"),
        "{run}"
    );
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
        assert!(
            score.ends_with("6 of 6 legitimate runs finished"),
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
    assert_eq!(cases.len(), 52);
    let moltis_reflex = cases
        .iter()
        .find(|c| c["id"] == "suite/reflex-empty-arguments@moltis")
        .expect("the case");
    assert_eq!(moltis_reflex["card"]["verdict"], "recovered");
    assert_eq!(moltis_reflex["card"]["iteration"], 4);
    assert_eq!(moltis_reflex["card"]["good"], true);
    // And the JUnit form: a testsuite per card, a testcase per case, failed without a point.
    let xml = p.read("cards.xml");
    assert!(
        xml.contains(r#"<testsuite name="profile none" tests="26""#),
        "{xml}"
    );
    assert!(
        xml.contains(r#"<testsuite name="profile moltis" tests="26""#),
        "{xml}"
    );
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
        card.starts_with(
            "report card: `python3 agent.py --detector` (26 cases of scenarios/suite)"
        ),
        "{run}"
    );
    // Its detector (three identical failures) stops the reflex loop on its own first tool …
    assert!(
        line(card, "Reflex loop: empty arguments on every turn")
            .contains("recovered at iteration 4"),
        "{run}"
    );
    // … but it checks only missing fields, so a wrong type succeeds, again and again.
    assert!(
        line(card, "The same invalid call repeated (a wrong type)").contains("looped to the cap"),
        "{run}"
    );
    // It looks its tools up by name: a call to an unknown tool crashes it.
    assert!(
        line(card, "A call to a tool that does not exist")
            .contains("crashed: the agent exited with 1"),
        "{run}"
    );
    // It offers two tools, so the cycle between two tools drives it.
    assert!(!line(card, "An A-B-A-B cycle between two tools").contains("could not be driven"));
    assert!(
        line(card, "Polling one status call until it changes").contains("finished at iteration 5")
    );
    assert!(
        card.contains(
            "score 10/26: 4 of 20 failure modes recovered, 6 of 6 legitimate runs finished"
        ),
        "{run}"
    );
    // A score to reach: below it, the run fails.
    p.harness(&[
        "suite",
        "--min-score",
        "11",
        "--",
        "python3",
        "agent.py",
        "--detector",
    ])
    .expect_code(1)
    .expect_stdout("harness suite: a score of 10 is below --min-score 11");
}

#[test]
fn a_folder_without_suite_cases_is_no_card() {
    let p = project();
    p.copy_from_repo("scenarios/reflex", "scenarios/reflex");
    let run = p.harness(&["suite", "scenarios/reflex", "--profile", "moltis"]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("scenarios/reflex holds no suite case: a scenario with a `[suite]` table"),
        "{run}"
    );
    p.harness(&["suite", "--profile", "nope"]).expect_code(2);
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
    assert!(rows[0].starts_with("| none | 10/26 | 4/20 | 6/6 |"), "{md}");
    assert!(
        rows[1].starts_with("| moltis | 16/26 | 10/20 | 6/6 |"),
        "{md}"
    );
    assert!(
        rows[2].starts_with("| travel | 10/26 | 4/20 | 6/6 |"),
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
        run.stderr
            .contains("harness scorecard: travel: score 10/26"),
        "{run}"
    );
    let page = p.read("scorecard.html");
    assert_eq!(page.matches("<section class=\"card\">").count(), 3);
    assert!(page.contains("<code>suite</code>"), "{page}");
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
