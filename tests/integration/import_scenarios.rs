//! `harness import --as scenario`: every imported run becomes a scenario that replays its
//! recording (calls, results, user turns, answers), and the engine and the sweep agree on where
//! a detector fires on it.

use crate::support::{Project, repo};
use crate::sweep::formats;
use std::collections::BTreeMap;

/// What a trace shows of the recording: each answer's calls (name and arguments), each tool
/// result (name, failed or not, text), each later user message, in order, after the first user
/// message (the task, which a replay does not print as a turn; answers before it are a
/// greeting the scenario leaves out).
fn recording_of(jsonl: &str, imported: bool) -> Vec<(String, serde_json::Value)> {
    let events: Vec<serde_json::Value> = jsonl
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|e: &serde_json::Value| e.get("kind").is_some())
        .collect();
    let start = events
        .iter()
        .position(|e| e["kind"] == "user_turn")
        .filter(|_| imported)
        .map_or(0, |i| i + 1);
    let mut seen = Vec::new();
    for e in &events[start..] {
        match e["kind"].as_str() {
            Some("model_response") => {
                // Arguments by value: a scenario keeps them as a table, not in their order.
                for c in e["calls"].as_array().into_iter().flatten() {
                    let args = c["args"].as_str().unwrap_or_default();
                    let value = serde_json::from_str(args).unwrap_or_else(|_| args.into());
                    seen.push((format!("call {}", c["name"]), value));
                }
            }
            Some("tool_call_end") => seen.push((
                format!("result {} ok={}", e["name"], e["ok"]),
                if e["ok"] == true {
                    e["output"].clone()
                } else {
                    e["error"].clone()
                },
            )),
            Some("user_turn") => seen.push(("user".to_owned(), e["text"].clone())),
            _ => {}
        }
    }
    seen
}

/// `harness import --as scenario` on every format import reads: each run becomes a scenario
/// whose replay under its own profile (`none`) makes the recorded calls, gets the recorded
/// results and hears the recorded user messages, in the recorded order, and then ends with
/// the end-of-recording answer (no script gap, no invented call).
#[test]
fn every_imported_run_becomes_a_scenario_that_replays_the_recording() {
    let p = Project::new();
    let inputs = formats();
    let import = |out: &str, extra: &[&str]| {
        let mut args = vec!["import"];
        args.extend(inputs.iter().map(String::as_str));
        args.extend(["--out", out]);
        args.extend(extra);
        p.harness(&args)
    };
    import("traces", &[]).expect_code(0);
    import("scenarios", &["--as", "scenario"])
        .expect_code(0)
        .expect_stdout("harness import: 15 scenario(s) written to scenarios");
    let files = p.files("scenarios", ".toml");
    assert_eq!(files.len(), 15, "{files:?}");
    let mut checked = 0;
    for file in &files {
        let stem = file
            .trim_start_matches("scenarios/")
            .trim_end_matches(".toml");
        let recorded = recording_of(&p.read(&format!("traces/{stem}.jsonl")), true);
        let replay = p.harness(&["trace", file, "--jsonl"]);
        replay.expect_code(0);
        let replayed = recording_of(&replay.stdout, false);
        assert_eq!(
            replayed, recorded,
            "{file}: the replay differs from the recording"
        );
        // It ends with an answer: the recording's last one when that was a final text, else
        // the end-of-recording answer; never at the cap or in a script gap.
        let outcome: serde_json::Value = replay
            .stdout
            .lines()
            .rfind(|l| l.contains(r#""kind":"outcome""#))
            .and_then(|l| serde_json::from_str(l).ok())
            .unwrap_or_default();
        let final_text = p
            .read(&format!("traces/{stem}.jsonl"))
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .rfind(|e| e["kind"] == "model_response")
            .filter(|e| e["calls"].as_array().is_some_and(Vec::is_empty))
            .map(|e| e["text"].clone());
        assert_eq!(outcome["outcome"], "response", "{file}: {outcome}");
        assert!(
            outcome["text"] == "(The recorded run ends here; no recorded answer follows.)"
                || Some(&outcome["text"]) == final_text.as_ref(),
            "{file} ends: {outcome}"
        );
        checked += usize::from(recorded.iter().any(|(s, _)| s.starts_with("result")));
    }
    assert!(checked >= 10, "only {checked} scenarios had tool results");
}

/// The real stuck runs of `scenarios/real/` are their corpus transcripts imported: the task,
/// follow-ups, cap, tools with their outcomes and the scripted model are exactly what `harness
/// import --as scenario` makes of them today (only the description, family, tags and
/// expectations were written by hand).
#[test]
fn the_real_scenarios_are_their_transcripts_imported() {
    let p = Project::new();
    let corpus = repo().join("corpus");
    let tau2 = corpus.join(
        "tau2-bench/sierra-feature-gym/qwen2.5_7b_airline_default_gpt-4.1-2025-04-14_1trials.json",
    );
    let swe = corpus.join("swe-agent/demo__ctf__crypto__eps.traj");
    p.harness(&[
        "import",
        &tau2.to_string_lossy(),
        &swe.to_string_lossy(),
        "--as",
        "scenario",
        "--out",
        "imported",
    ])
    .expect_code(0);
    let pairs = [
        (
            "tau2-qwen-airline-task-40.toml",
            "qwen2.5_7b_airline_default_gpt-4.1-2025-04-14_1trials_40_trial0_8b4d82b4.toml",
        ),
        (
            "tau2-qwen-airline-task-37.toml",
            "qwen2.5_7b_airline_default_gpt-4.1-2025-04-14_1trials_37_trial0_85f9deab.toml",
        ),
        ("swe-agent-ctf-eps.toml", "demo__ctf__crypto__eps.toml"),
    ];
    let committed_files = std::fs::read_dir(repo().join("scenarios/real"))
        .expect("scenarios/real")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "toml"))
        })
        .count();
    assert_eq!(
        committed_files,
        pairs.len(),
        "a real scenario without its check"
    );
    for (committed, imported) in pairs {
        let text = std::fs::read_to_string(repo().join("scenarios/real").join(committed))
            .expect("the committed scenario");
        let ours: toml::Table = toml::from_str(&text).expect("it parses");
        let fresh: toml::Table =
            toml::from_str(&p.read(&format!("imported/{imported}"))).expect("the import parses");
        for key in [
            "profile",
            "system",
            "user",
            "followups",
            "config",
            "tools",
            "model",
        ] {
            assert_eq!(
                ours.get(key),
                fresh.get(key),
                "{committed}: `{key}` differs"
            );
        }
        assert_eq!(ours["family"].as_str(), Some("real"), "{committed}");
        assert!(
            ours.contains_key("expect") && ours.contains_key("compare"),
            "{committed}"
        );
    }
}

/// Issue 31: `import --as scenario` writes only scenarios `run` takes. Runs it cannot turn into
/// one (a tool output past 1 MiB, an empty tool name, a control character in a name) are
/// reported with the reason, the rest are written, and the exit status says some were skipped.
#[test]
fn import_as_scenario_writes_only_what_replays() {
    let p = Project::new();
    let good = r#"{"id": "good", "success": true, "messages": [{"role": "user", "content": "Read a"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "x1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"a\"}"}}]}, {"role": "tool", "tool_call_id": "x1", "content": "hello"}, {"role": "assistant", "content": "It says hello."}]}"#;
    let run_with = |id: &str, name: &str, output: &str| {
        serde_json::json!({"id": id, "messages": [
            {"role": "user", "content": "Go"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "x1", "type": "function", "function": {"name": name, "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "x1", "content": output},
            {"role": "assistant", "content": "Done."}
        ]})
        .to_string()
    };
    let huge = "x".repeat(1024 * 1024 + 1);
    let lines = [
        good.to_owned(),
        run_with("huge-output", "read_file", &huge),
        run_with("empty-name", "", "ok"),
        run_with("control-name", "read\u{7}file", "ok"),
    ];
    p.write("hostile/runs.jsonl", lines.join("\n") + "\n");
    let import = p.harness(&[
        "import",
        "hostile",
        "--format",
        "openai",
        "--as",
        "scenario",
        "--out",
        "scenarios/imported",
    ]);
    import.expect_code(2);
    assert!(
        import
            .stdout
            .contains("harness import: 1 scenario(s) written to scenarios/imported; 3 run(s) not written (see stderr)"),
        "{import}"
    );
    for id in ["huge-output", "empty-name", "control-name"] {
        assert!(
            import.stderr.contains(&format!(
                "run `runs.jsonl#{id}` was not written: as a scenario, "
            )),
            "{id}\n{import}"
        );
    }
    assert_eq!(p.files("scenarios/imported", ".toml").len(), 1, "{import}");
    // What was written replays: only its golden is missing.
    let run = p.harness(&["run", "scenarios/imported", "--no-baseline"]);
    run.expect_code(1);
    assert!(run.stdout.contains(" 0 invalid files"), "{run}");
}

/// Issue 31: no silent greens. An import or a sweep of files that hold no run, and a lint of
/// nothing, are bad input with the reason; `--allow-empty` lets them pass.
#[test]
fn import_sweep_and_lint_of_nothing_are_bad_input_unless_allowed() {
    let p = Project::new();
    p.write("nothing/notes.json", "{\"hello\": 1}\n");
    p.write("nothing/empty.jsonl", "");
    p.write("empty/.keep", "");
    let import = p.harness(&["import", "nothing", "--out", "out"]);
    import.expect_code(2);
    assert!(
        import
            .stderr
            .contains("nothing was imported: 2 file(s) read, no run written"),
        "{import}"
    );
    let sweep = p.harness(&["sweep", "nothing", "--detector", "consecutive-identical"]);
    sweep.expect_code(2);
    assert!(sweep.stderr.contains("nothing was scored: "), "{sweep}");
    let lint = p.harness(&["lint", "empty"]);
    lint.expect_code(2);
    assert!(lint.stdout.contains("nothing was read"), "{lint}");
    // Allowed, the same files pass, and so does an empty folder.
    for folder in ["nothing", "empty"] {
        p.harness(&["import", folder, "--out", "out", "--allow-empty"])
            .expect_code(0);
        p.harness(&[
            "sweep",
            folder,
            "--detector",
            "consecutive-identical",
            "--allow-empty",
        ])
        .expect_code(0);
    }
    p.harness(&["lint", "empty", "--allow-empty"])
        .expect_code(0);
}

/// One answer or one user message of a trace, as the pairing check compares them: an answer's
/// text (empty as absent) and its calls (name, arguments as values); the user messages the
/// recording has in a row joined by a blank line, as `import --as scenario` joins them.
#[derive(Debug, PartialEq)]
enum Said {
    User(String),
    Answer(String, Vec<(String, serde_json::Value)>),
}

fn conversation(jsonl: &str, imported: bool) -> Vec<Said> {
    let events: Vec<serde_json::Value> = jsonl
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|e: &serde_json::Value| e.get("kind").is_some())
        .collect();
    // A recording's answers before its first user message (a greeting) and that message with
    // those right after it (the task, which a replay does not print as a turn) are not compared.
    let first = events.iter().position(|e| e["kind"] == "user_turn");
    let start = match first.filter(|_| imported) {
        Some(i) => events[i..]
            .iter()
            .position(|e| e["kind"] != "user_turn")
            .map_or(events.len(), |k| i + k),
        None => 0,
    };
    let mut said: Vec<Said> = Vec::new();
    for e in &events[start..] {
        match e["kind"].as_str() {
            Some("user_turn") => {
                let text = e["text"].as_str().unwrap_or_default();
                match said.last_mut() {
                    Some(Said::User(last)) => {
                        last.push_str("\n\n");
                        last.push_str(text);
                    }
                    _ => said.push(Said::User(text.to_owned())),
                }
            }
            Some("model_response") => {
                let calls = e["calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|c| {
                        let args = c["args"].as_str().unwrap_or_default();
                        let value = serde_json::from_str(args).unwrap_or_else(|_| args.into());
                        (c["name"].as_str().unwrap_or_default().to_owned(), value)
                    })
                    .collect();
                let text = e["text"].as_str().unwrap_or_default().to_owned();
                said.push(Said::Answer(text, calls));
            }
            _ => {}
        }
    }
    said
}

/// Issue 32: every tau2 run of the bundled corpus (494 runs in 11 files), and a hand-written
/// run whose simulated user writes two and three times before the agent answers, imported as
/// scenarios, replay under their own profile with each recorded answer heard after exactly the
/// user messages it answered: the same user messages and answers, in the same order, and after
/// them at most the end-of-recording answer (when the recording ends in tool calls or with a
/// user message).
#[test]
fn every_tau2_run_replays_with_its_user_messages_and_answers_paired() {
    let p = Project::new();
    let corpus = repo().join("corpus/tau2-bench");
    let inputs = [
        corpus.to_string_lossy().into_owned(),
        repo()
            .join("fixtures/imports/tau2-users-in-a-row.json")
            .to_string_lossy()
            .into_owned(),
    ];
    let import = |extra: &[&str]| {
        let mut args = vec!["import", inputs[0].as_str(), inputs[1].as_str()];
        args.extend(extra);
        p.harness(&args).expect_code(0);
    };
    import(&["--out", "recorded"]);
    import(&["--as", "scenario", "--out", "scenarios"]);
    // No goldens yet: the run fails, and writes every replay's trace.
    p.harness(&["run", "scenarios", "--traces", "replayed", "--no-baseline"])
        .expect_code(1);
    let recordings = p.files("recorded", ".jsonl");
    assert!(recordings.len() >= 495, "{} runs", recordings.len());
    let mut answers = 0;
    for file in &recordings {
        let stem = file
            .trim_start_matches("recorded/")
            .trim_end_matches(".jsonl");
        let recorded = conversation(&p.read(file), true);
        let mut replayed = conversation(&p.read(&format!("replayed/{stem}.jsonl")), false);
        if replayed.len() == recorded.len() + 1 {
            let end = replayed.pop();
            assert!(
                matches!(&end, Some(Said::Answer(t, c)) if t.starts_with("(The recorded run ends here") && c.is_empty()),
                "{stem}: the replay ends with {end:?}"
            );
        }
        assert_eq!(replayed, recorded, "{stem}: the replay pairs differently");
        answers += recorded
            .iter()
            .filter(|s| matches!(s, Said::Answer(..)))
            .count();
    }
    assert!(answers > 5_000, "only {answers} answers compared");
    // The hand-written run: its two and three user messages in a row are one message each.
    let hand = p
        .files("scenarios", ".toml")
        .into_iter()
        .find(|f| f.contains("tau2-users-in-a-row"))
        .expect("the hand-written run's scenario");
    let scenario: toml::Table = toml::from_str(&p.read(&hand)).expect("it parses");
    assert_eq!(
        scenario["user"].as_str(),
        Some("I moved and need my address changed.\n\nMy email is a@b.c, by the way.")
    );
    assert_eq!(
        scenario["followups"][0].as_str(),
        Some("12 Elm Street, Springfield.\n\nApartment 4, sorry.\n\nThat is everything.")
    );
}

/// Issue 32: the `agentloop` profile and the sweep's `agentloop-similarity` detector keep the
/// book's loop detector for the whole conversation, so they see the same loops: on each of the
/// 50 runs of the qwen2.5 airline file (several of whose loops span user turns), the engine,
/// replaying the run imported as a scenario under `agentloop`, skips its first call exactly
/// where the sweep (3 repeats, the book's setting) fires on the recording, or neither does.
#[test]
fn the_engine_and_the_sweep_agree_on_where_the_books_detector_fires() {
    let p = Project::new();
    let file = repo()
        .join("corpus/tau2-bench/sierra-feature-gym/qwen2.5_7b_airline_default_gpt-4.1-2025-04-14_1trials.json")
        .to_string_lossy()
        .into_owned();
    p.harness(&["import", &file, "--as", "scenario", "--out", "scenarios"])
        .expect_code(0);
    p.harness(&[
        "run",
        "scenarios",
        "--profile",
        "agentloop",
        "--traces",
        "replayed",
        "--no-baseline",
    ])
    .expect_code(1);
    p.harness(&[
        "sweep",
        &file,
        "--detector",
        "agentloop-similarity:repeats=3",
        "--out",
        "sweep.csv",
        "--fires",
        "fires.csv",
    ])
    .expect_code(0);
    // The sweep's first fire per run, counted in tool calls from the start of the run.
    let fires = p.read("fires.csv");
    let mut lines = fires.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (run, at) = (col("run"), col("fired_at"));
    let swept: BTreeMap<String, usize> = lines
        .map(|l| {
            let cells: Vec<&str> = l.split(',').collect();
            (
                cells[run].to_owned(),
                cells[at].parse().expect("a call index"),
            )
        })
        .collect();
    let (mut compared, mut firing) = (0, 0);
    for scenario in p.files("scenarios", ".toml") {
        let table: toml::Table = toml::from_str(&p.read(&scenario)).expect("it parses");
        let description = table["description"].as_str().unwrap_or_default();
        let id = description
            .split("run `")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .expect("the description names the run");
        let stem = scenario
            .trim_start_matches("scenarios/")
            .trim_end_matches(".toml");
        let trace = p.read(&format!("replayed/{stem}@agentloop.jsonl"));
        let mut calls = 0;
        let mut skipped = None;
        for line in trace.lines() {
            let e: serde_json::Value = serde_json::from_str(line).expect("a trace line");
            match e["kind"].as_str() {
                Some("tool_call_skipped") => {
                    skipped.get_or_insert(calls);
                    calls += 1;
                }
                Some("tool_call_start" | "tool_call_rejected") => calls += 1,
                _ => {}
            }
        }
        assert_eq!(
            skipped,
            swept.get(id).copied(),
            "{id}: the engine's first skip and the sweep's first fire"
        );
        compared += 1;
        firing += usize::from(skipped.is_some());
    }
    assert_eq!(compared, 50);
    assert!(firing >= 10, "only {firing} runs fire");
}
