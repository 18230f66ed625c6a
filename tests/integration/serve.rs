//! Black-box agents: `harness exec` runs the reference agent (`fixtures/agents/reflex_agent.py`,
//! Python standard library only) against the served reflex scenario in both wire formats,
//! whole and streamed, with and without a loop detector; `harness serve` is driven by hand.
//! Nothing but 127.0.0.1 is contacted.
//!
//! Mirrors docs/black-box.md: `harness serve` of the served reflex scenario, and `harness exec`
//! with `--label` and `--expect`.

use crate::support::{Project, listening_address, repo};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};

const SCENARIO: &str = "scenarios/serve/reflex-black-box.toml";
const ID: &str = "serve/reflex-black-box";

fn project() -> Project {
    let p = Project::new();
    p.copy_from_repo(SCENARIO, SCENARIO);
    p
}

fn agent() -> String {
    repo()
        .join("fixtures/agents/reflex_agent.py")
        .to_string_lossy()
        .into_owned()
}

/// The CSV row of `case` as column → value.
fn metrics(p: &Project, file: &str, case: &str) -> std::collections::BTreeMap<String, String> {
    let text = p.read(file);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split(',').collect();
    let row = lines
        .find(|l| l.starts_with(&format!("{case},")))
        .unwrap_or_else(|| panic!("no row for {case} in\n{text}"));
    header
        .iter()
        .map(|h| h.to_string())
        .zip(row.split(',').map(str::to_owned))
        .collect()
}

#[test]
fn exec_reports_the_bare_agent_at_the_cap_and_the_detector_recovering() {
    let p = project();
    let agent = agent();
    for api in ["openai", "anthropic"] {
        for stream in [false, true] {
            let tag = format!("{api}{}", if stream { "-stream" } else { "" });
            for (detector, expect) in [("none", "none"), ("nudge", "moltis"), ("strip", "moltis")] {
                let label = format!("{detector}-{tag}");
                let csv = format!("{label}.csv");
                let mut args = vec![
                    "exec",
                    SCENARIO,
                    "--label",
                    &label,
                    "--expect",
                    expect,
                    "--metrics",
                    &csv,
                    "--",
                    "python3",
                    &agent,
                    "--api",
                    api,
                    "--detector",
                    detector,
                ];
                if stream {
                    args.push("--stream");
                }
                // First run: expectations hold, the golden is new.
                let run = p.harness(&args);
                run.expect_code(1);
                assert!(
                    run.summary()
                        .contains("1 missing goldens, 0 expectation failures"),
                    "{run}"
                );
                let case = format!("{ID}@{label}");
                let m = metrics(&p, &csv, &case);
                let golden = p.read(&format!("snapshots/{case}.snap.new"));
                if detector == "none" {
                    assert_eq!(m["outcome"], "max_iterations", "{label}");
                    assert_eq!(m["iterations"], "25", "{label}");
                    assert_eq!(m["tool_failures"], "25", "{label}");
                    assert_eq!(m["first_intervention_iteration"], "", "{label}");
                    assert!(
                        golden.contains("outcome max_iterations iterations=25"),
                        "{golden}"
                    );
                } else {
                    assert_eq!(m["outcome"], "response", "{label}");
                    assert_eq!(m["iterations"], "4", "{label}");
                    assert_eq!(m["first_intervention_iteration"], "3", "{label}");
                    let (intervention, request) = if detector == "nudge" {
                        (
                            "intervention policy=agent stage=1 action=nudge",
                            "tools=[exec]",
                        )
                    } else {
                        (
                            "intervention policy=agent stage=2 action=strip_tools",
                            "tools=[] stripped",
                        )
                    };
                    assert!(golden.contains(intervention), "{golden}");
                    assert!(
                        golden
                            .lines()
                            .any(|l| l.contains("model_request call=4") && l.ends_with(request)),
                        "{golden}"
                    );
                    assert!(golden.contains("outcome response iterations=4 text=\"Sorry"));
                }
                if stream {
                    assert!(golden.contains("finish=tool_use chunks="), "{golden}");
                } else {
                    assert!(!golden.contains("chunks="), "{golden}");
                }
                // Reviewed, the same agent passes: the inferred trace is deterministic.
                p.harness(&["accept"]).expect_code(0);
                p.harness(&args).expect_code(0);
            }
        }
    }
    // The wrong expectations fail the case: the bare agent does not recover.
    let run = p.harness(&[
        "exec",
        SCENARIO,
        "--label",
        "none-openai",
        "--expect",
        "moltis",
        "--",
        "python3",
        &agent,
    ]);
    run.expect_code(1);
    assert!(run.stdout.contains("outcome"), "{run}");
    // `harness run` replays the scenario and leaves the exec goldens alone.
    p.harness(&["accept"]).expect_code(0);
    p.harness(&["run", "scenarios/serve"])
        .expect_code(1)
        .expect_stdout("0 orphaned goldens");
}

#[test]
fn max_iterations_serves_an_agent_past_the_scenarios_cap() {
    // Room for an agent whose own cap is larger than the scenario's 25: here a smaller one,
    // which the bare agent runs into all the same.
    let p = project();
    let agent = agent();
    let run = p.harness(&[
        "exec",
        SCENARIO,
        "--label",
        "capped",
        "--max-iterations",
        "7",
        "--metrics",
        "m.csv",
        "--",
        "python3",
        &agent,
    ]);
    run.expect_code(1);
    let m = metrics(&p, "m.csv", &format!("{ID}@capped"));
    assert_eq!(
        (m["outcome"].as_str(), m["iterations"].as_str()),
        ("max_iterations", "7")
    );
    let golden = p.read(&format!("snapshots/{ID}@capped.snap.new"));
    assert!(golden.contains("max_iterations=7"), "{golden}");
    assert!(
        golden.contains("outcome max_iterations iterations=7"),
        "{golden}"
    );
    // No cap at all is no setting.
    p.harness(&[
        "exec",
        SCENARIO,
        "--max-iterations",
        "0",
        "--",
        "python3",
        &agent,
    ])
    .expect_code(2);
}

/// A command that ends without asking anything fails with that one reason, under an `exec`
/// verdict: no timeout, no ad-hoc profile, no baseline it could never be blessed into.
#[test]
fn exec_of_a_command_that_asks_nothing_gives_one_reason() {
    let p = project();
    p.write(
        "harness.toml",
        "format = 1\nbaseline = \"baselines/scenarios.toml\"\n",
    );
    p.write("baselines/scenarios.toml", "");
    let run = p.harness(&["exec", SCENARIO, "--", "true"]);
    run.expect_code(1)
        .expect_stdout("harness exec: FAILED. 1 cases from 1 files")
        .expect_stdout("expected a model request; the command made none");
    // A command that asks, but on paths that are no endpoint, is told which.
    let asked = p.harness(&[
        "exec",
        SCENARIO,
        "--",
        "python3",
        "-c",
        "import os, urllib.request\nfor p in ('/v1/embeddings', '/v1/embeddings', '/v2/chat'):\n    try: urllib.request.urlopen(urllib.request.Request(os.environ['OPENAI_BASE_URL'].removesuffix('/v1') + p, data=b'{}', method='POST'))\n    except Exception: pass",
    ]);
    asked.expect_code(1).expect_stdout(
        "expected a model request; the command made 3 request(s), all to unknown paths (POST /v1/embeddings, POST /v2/chat)",
    );
    for wrong in [
        "harness run",
        "ad-hoc",
        "--profile",
        "killed",
        "harness baseline",
        "bless",
    ] {
        assert!(!run.stdout.contains(wrong), "`{wrong}` in:\n{run}");
    }
}

#[test]
fn exec_fails_a_silent_or_hung_command_and_refuses_a_missing_one() {
    let p = project();
    let run = p.harness(&[
        "exec",
        SCENARIO,
        "--timeout-ms",
        "300",
        "--",
        "python3",
        "-c",
        "import time; time.sleep(30)",
    ]);
    run.expect_code(1)
        .expect_stdout("expected the command to finish within 300 ms; it was killed")
        .expect_stdout("expected a model request; the command made none");
    let run = p.harness(&["exec", SCENARIO, "--", "no-such-agent-command"]);
    run.expect_code(2);
    assert!(
        run.stderr.contains("cannot run `no-such-agent-command`"),
        "{run}"
    );
    let run = p.harness(&["exec", SCENARIO, "--label", "moltis", "--", "true"]);
    run.expect_code(2);
    assert!(run.stderr.contains("is a profile name"), "{run}");
    let run = p.harness(&["serve", SCENARIO, "--addr", "0.0.0.0:0"]);
    run.expect_code(2);
    assert!(run.stderr.contains("--allow-remote"), "{run}");
}

/// Send raw bytes to the server and read its whole answer (the server closes).
fn answer_of(addr: &str, request: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the server");
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .expect("a read timeout");
    s.write_all(request.as_bytes()).expect("send");
    let mut all = String::new();
    let _ = s.read_to_string(&mut all);
    all
}

/// Send raw bytes to the server and read its status line.
fn status_of(addr: &str, request: &str) -> String {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the server");
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .expect("a read timeout");
    s.write_all(request.as_bytes()).expect("send");
    let mut line = String::new();
    BufReader::new(s)
        .read_line(&mut line)
        .expect("a status line");
    line
}

/// `harness serve SCENARIO --until-eof ARGS…` in `p` (CI unset): the server, its stdout past the
/// `listening on` line, and the address.
fn serving(
    p: &Project,
    args: &[&str],
) -> (
    std::process::Child,
    BufReader<std::process::ChildStdout>,
    String,
) {
    let mut server = Command::new(env!("CARGO_BIN_EXE_harness"))
        .args(["serve", SCENARIO, "--until-eof"])
        .args(args)
        .current_dir(p.path())
        .env("NO_COLOR", "1")
        .env_remove("CI")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start harness serve");
    let mut stdout = BufReader::new(server.stdout.take().expect("stdout"));
    let addr = listening_address(&mut stdout);
    (server, stdout, addr)
}

#[test]
fn serve_answers_an_agent_and_prints_the_inferred_trace() {
    let p = project();
    let (mut server, mut stdout, addr) = serving(&p, &[]);
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let out = Command::new("python3")
        .args([&agent(), "--api", "anthropic", "--detector", "nudge"])
        .env("ANTHROPIC_BASE_URL", format!("http://{addr}"))
        .env("ANTHROPIC_API_KEY", "dummy")
        .output()
        .expect("run the agent");
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "Sorry, I do not know what command you wanted."
    );
    // Bounded bodies, known paths only.
    let big = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        harness::limits::MAX_REQUEST_BODY_BYTES + 1
    );
    assert!(status_of(&addr, &big).contains(" 413 "));
    let get = |path: &str| format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    assert!(status_of(&addr, &get("/v1/models")).contains(" 200 "));
    assert!(status_of(&addr, &get("/v1/embeddings")).contains(" 404 "));
    // A method an endpoint does not take: 405 with an error body in the API's shape, and the
    // method it takes; every answer has a request id, as the providers' do.
    let wrong = answer_of(&addr, &get("/v1/chat/completions")).to_ascii_lowercase();
    assert!(wrong.starts_with("http/1.1 405 "), "{wrong}");
    assert!(wrong.contains("\r\nallow: post\r\n"), "{wrong}");
    assert!(wrong.contains("\r\nx-request-id: req_harness"), "{wrong}");
    assert!(
        wrong.contains(r#""message":"harness serve: get is not allowed on /v1/chat/completions: it takes post""#),
        "{wrong}"
    );
    let wrong = answer_of(&addr, &get("/messages"));
    assert!(
        wrong.contains(r#""type":"error""#),
        "Anthropic's shape on its path:\n{wrong}"
    );
    // The endpoints without `/v1` (the AI SDK's Anthropic provider posts to `/messages`).
    let body = r#"{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "List the files."}]}"#;
    let post = format!(
        "POST /messages HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nanthropic-version: 2023-06-01\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let answer = answer_of(&addr, &post);
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("\r\nrequest-id: req_harness"),
        "{answer}"
    );
    assert!(answer.contains(r#""type":"message""#), "{answer}");
    drop(server.stdin.take());
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).expect("the traces");
    let status = server.wait().expect("harness serve ends");
    assert!(status.success(), "{status:?}\n{rest}");
    assert!(
        rest.contains(&format!("# harness trace v1: {ID}@serve\n")),
        "{rest}"
    );
    assert!(
        rest.contains("intervention policy=agent stage=1 action=nudge"),
        "{rest}"
    );
    assert!(rest.contains("outcome response iterations=4"), "{rest}");
    assert!(
        rest.contains("harness serve: 2 conversation(s), 5 request(s)"),
        "{rest}"
    );
}

/// A Responses API agent on the standard library: with `--stateful` it continues each turn by
/// `previous_response_id` and sends only its new items (re-sending `instructions`, as OpenAI
/// documents); without, it re-sends the whole history. `--stream` reads streamed answers.
const RESPONSES_AGENT: &str = r#"
import json, os, sys, urllib.request, urllib.error
stateful, stream = "--stateful" in sys.argv, "--stream" in sys.argv
url = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/responses"
tools = [{"type": "function", "name": "exec", "description": "Run a shell command",
          "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}]
items = [{"role": "user", "content": os.environ["HARNESS_USER"]}]
pending, previous = [], None
for _ in range(40):
    body = {"model": "gpt-4o-mini", "instructions": os.environ["HARNESS_SYSTEM"], "tools": tools, "stream": stream}
    if stateful and previous:
        body["previous_response_id"], body["input"] = previous, pending
    else:
        body["input"] = items
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            text = r.read().decode()
    except urllib.error.HTTPError as e:
        print("refused:", e.code)
        break
    if stream:
        events = [json.loads(l[6:]) for l in text.split("\n") if l.startswith("data: ")]
        response = [e["response"] for e in events if e.get("type") == "response.completed"][0]
    else:
        response = json.loads(text)
    previous, output = response["id"], response["output"]
    items += output
    calls = [o for o in output if o["type"] == "function_call"]
    if not calls:
        print("answer:", output[-1]["content"][0]["text"])
        break
    pending = [{"type": "function_call_output", "call_id": c["call_id"],
                "output": "Error: missing 'command' parameter"} for c in calls]
    items += pending
"#;

#[test]
fn a_stateful_responses_agent_is_read_as_its_full_history_twin() {
    let p = project();
    p.write("agent.py", RESPONSES_AGENT);
    let run = |label: &str, command: &str| {
        let traces = format!("traces/{label}");
        let run = p.harness(&[
            "exec",
            SCENARIO,
            "--label",
            "same",
            "--expect",
            "none",
            "--traces",
            &traces,
            "--no-baseline",
            "--",
            "bash",
            "-c",
            command,
        ]);
        let files: Vec<String> = p
            .tree(&traces)
            .into_values()
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .collect();
        assert!(!files.is_empty(), "{run}");
        (run.code, run.summary().to_owned(), files)
    };
    for stream in ["", " --stream"] {
        let one = |extra: &str| format!("python3 agent.py{stream}{extra}");
        let three = |extra: &str| {
            let agent = one(extra);
            format!("for i in 1 2 3; do {agent} & done; wait")
        };
        for (twin, command) in [("one", &one as &dyn Fn(&str) -> String), ("three", &three)] {
            let full = run(&format!("full-{twin}{stream}"), &command(""));
            let stateful = run(&format!("stateful-{twin}{stream}"), &command(" --stateful"));
            assert_eq!(stateful, full, "{twin}{stream}");
            let (_, _, files) = &full;
            let trace = &files[0];
            // The bare loop runs to the cap; the re-sent instructions are no intervention.
            assert!(trace.contains("\"iterations\":25"), "{trace}");
            assert!(!trace.contains("intervention"), "{trace}");
        }
    }
}

/// The reflex loop as a portable scenario: the model calls whatever tool the agent offers
/// first, with empty arguments, until it sees a loop warning.
const PORTABLE_REFLEX: &str = r#"format = 1
description = "The reflex loop on the agent's own first tool."
family = "reflex"
profile = "moltis"
system = "You are a travel agent. Use tools to act."
user = "Find me a flight."

[[tools]]
name = "exec"
description = "Run a shell command"
schema = { type = "object", properties = { command = { type = "string" } }, required = ["command"] }
default = { error = "missing 'command' parameter" }
bind = "any"

[model]
name = "m"

[[model.rules]]
when = { any_message_contains = "LOOP DETECTED" }
reply = { text = "Sorry, I cannot search without details." }

[[model.rules]]
reply = { tool_calls = [{ name = "exec", generate = "empty" }] }

[expect]
outcome = "response"

[compare.none]
outcome = "max_iterations"
"#;

#[test]
fn a_portable_scenario_drives_an_agent_through_its_own_tools() {
    let p = Project::new();
    p.write("scenarios/portable/reflex.toml", PORTABLE_REFLEX);
    p.copy_from_repo("fixtures/agents/travel_agent.py", "agent.py");
    let exec = |label: &str, expect: &str, detector: &[&str]| {
        let mut args = vec![
            "exec",
            "scenarios/portable/reflex.toml",
            "--label",
            label,
            "--expect",
            expect,
            "--no-baseline",
            "--",
            "python3",
            "agent.py",
        ];
        args.extend_from_slice(detector);
        p.harness(&args)
    };
    // The bare agent loops on its own first tool to the cap; with a detector it recovers.
    let bare = exec("bare", "none", &[]);
    let golden = p.read("snapshots/portable/reflex@bare.snap.new");
    assert!(
        golden.contains(
            "the scenario's tool `exec` stands for the agent's `search_flights` (bind = any)"
        ),
        "{golden}"
    );
    assert!(
        golden.contains("exec failed error=\"Error: missing 'origin'\""),
        "{golden}"
    );
    assert!(
        golden.contains("outcome max_iterations"),
        "{bare}\n{golden}"
    );
    let guarded = exec("guarded", "moltis", &["--detector"]);
    guarded.expect_stdout("0 expectation failures");
    let golden = p.read("snapshots/portable/reflex@guarded.snap.new");
    assert!(
        golden.contains("intervention policy=agent stage=1 action=nudge"),
        "{golden}"
    );
    assert!(golden.contains("outcome response iterations=4"), "{golden}");
    // Under the engine's own profile the same scenario runs with its declared tool.
    let run = p.harness(&["run", "scenarios/portable/reflex.toml", "--no-baseline"]);
    run.expect_code(1)
        .expect_stdout("2 missing goldens, 0 expectation failures");
    p.harness(&["accept"]).expect_code(0);
    p.harness(&["run", "scenarios/portable/reflex.toml", "--no-baseline"])
        .expect_code(0);
    assert!(
        p.read("snapshots/portable/reflex.snap")
            .contains("exec({})")
    );
}

/// `serve --judge`: when it ends, every conversation is judged as `harness exec` judges it and
/// exec's report is printed (under a `harness serve:` verdict) with exec's exit status — what
/// the pytest plugin's fixture reads. A recovering agent passes once its golden is accepted; the
/// bare one (a second server) fails by the expectations `--expect moltis` names.
#[test]
fn serve_judge_reports_each_conversation_as_exec_does() {
    let p = project();
    let judged = |label: &str, detector: &str| {
        let (mut server, mut stdout, addr) =
            serving(&p, &["--judge", "--expect", "moltis", "--label", label]);
        let out = Command::new("python3")
            .args([&agent(), "--api", "openai", "--detector", detector])
            .env("OPENAI_BASE_URL", format!("http://{addr}/v1"))
            .env("OPENAI_API_KEY", "dummy")
            .output()
            .expect("run the agent");
        drop(server.stdin.take());
        let mut report = String::new();
        stdout.read_to_string(&mut report).expect("the report");
        let status = server.wait().expect("serve ends");
        (status.code(), report, out)
    };
    let (code, report, _) = judged("judged", "nudge");
    assert_eq!(code, Some(1), "{report}");
    assert!(report.contains("no golden yet"), "{report}");
    assert!(
        report.contains("harness serve: FAILED. 1 cases from 1 files"),
        "{report}"
    );
    p.harness(&["accept", SCENARIO]).expect_code(0);
    let (code, report, _) = judged("judged", "nudge");
    assert_eq!(code, Some(0), "{report}");
    assert!(report.contains("harness serve: ok. 1 cases"), "{report}");
    assert!(p.join(&format!("snapshots/{ID}@judged.snap")).is_file());
    // The bare agent runs into the cap: the golden aside, its expectations fail.
    let (code, report, _) = judged("bare", "none");
    assert_eq!(code, Some(1), "{report}");
    assert!(
        report.contains("outcome: expected response, got max_iterations"),
        "{report}"
    );
    // --expect names a profile, and needs --judge.
    let run = p.harness(&["serve", SCENARIO, "--expect", "moltis"]);
    run.expect_code(2);
    assert!(run.stderr.contains("--judge"), "{run}");
    let run = p.harness(&["serve", SCENARIO, "--judge", "--expect", "moltys"]);
    run.expect_code(2);
    assert!(run.stderr.contains("unknown profile `moltys`"), "{run}");
}

#[test]
/// A conversation whose golden is accepted and that no longer happens fails the run: an agent
/// that stopped making its second conversation changed, and `exec` says which one is gone.
fn a_conversation_that_no_longer_happens_fails() {
    let p = project();
    let agent = agent();
    // Twice while the file `twice` is there: two conversations of one task.
    let command = format!(
        "python3 {agent} --detector nudge; if [ -f twice ]; then python3 {agent} --detector nudge; fi"
    );
    p.write("twice", "");
    let run = p.harness(&["exec", SCENARIO, "--", "bash", "-c", &command]);
    run.expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    assert!(p.exists(&format!("snapshots/{ID}@exec.snap")));
    assert!(p.exists(&format!("snapshots/{ID}@exec.2.snap")));
    p.harness(&["exec", SCENARIO, "--", "bash", "-c", &command])
        .expect_code(0);
    p.remove("twice");
    let run = p.harness(&["exec", SCENARIO, "--", "bash", "-c", &command]);
    run.expect_code(1);
    assert!(
        run.stdout.contains(&format!(
            "conversation `{ID}@exec.2`, whose golden is accepted; it did not happen this run (the agent made 1 conversation(s))"
        )),
        "{run}"
    );
}

#[test]
/// docs/record-your-agent.md's redactor: a tool result stamped with a volatile id (as Codex
/// CLI's shell results are) makes a golden that never matches twice, until the project file
/// redacts it.
fn redacted_volatile_text_leaves_the_golden_stable() {
    let p = project();
    let agent = std::fs::read_to_string(agent()).expect("the agent");
    p.write(
        "agent.py",
        agent.replace(
            "return \"Error: missing 'command' parameter\", True",
            "return \"Error: missing 'command' parameter (Chunk ID: \" + os.urandom(3).hex() + \")\", True",
        ),
    );
    let exec = || {
        p.harness(&[
            "exec",
            SCENARIO,
            "--",
            "python3",
            "agent.py",
            "--detector",
            "nudge",
        ])
    };
    exec().expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    // The next run's ids differ: the golden does not hold.
    exec().expect_code(1);
    p.harness(&["reject"]).expect_code(0);
    p.write(
        "harness.toml",
        "format = 1\n\n[replay]\nredact = ['Chunk ID: [0-9a-f]+']\n",
    );
    exec().expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    let golden = p.read(&format!("snapshots/{ID}@exec.snap"));
    assert!(
        golden.contains("(<redacted>)") && !golden.contains("Chunk ID"),
        "{golden}"
    );
    exec().expect_code(0);
    exec().expect_code(0);
}

/// The Gemini API over real HTTP: the model and the answer's form from the path (whole, SSE
/// with `alt=sse`, one JSON array without), counted tokens, the models list in its shape, and
/// errors in Google's shape.
#[test]
fn serve_answers_the_gemini_api_by_its_paths() {
    let p = project();
    let (mut server, _stdout, addr) = serving(&p, &[]);
    let post = |path: &str, body: &str| {
        format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\nx-goog-api-key: k\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let body = r#"{"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "systemInstruction": {"parts": [{"text": "be brief"}]}, "tools": [{"functionDeclarations": [{"name": "exec", "parameters": {"type": "OBJECT", "properties": {"command": {"type": "STRING"}}}}]}]}"#;
    let whole = answer_of(
        &addr,
        &post("/v1beta/models/gemini-2.5-flash:generateContent", body),
    );
    assert!(whole.starts_with("HTTP/1.1 200 "), "{whole}");
    assert!(
        whole.contains(r#""modelVersion":"gemini-2.5-flash""#),
        "{whole}"
    );
    assert!(whole.contains(r#""finishReason":"STOP""#), "{whole}");
    let sse = answer_of(
        &addr,
        &post(
            "/v1/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
            body,
        ),
    );
    assert!(
        sse.to_ascii_lowercase()
            .contains("content-type: text/event-stream"),
        "{sse}"
    );
    assert!(sse.contains("data: {"), "{sse}");
    let array = answer_of(
        &addr,
        &post(
            "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
            body,
        ),
    );
    let (head, chunked) = array.split_once("\r\n\r\n").unwrap_or_default();
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: application/json"),
        "{array}"
    );
    // Sent element by element (chunked): the chunks joined are one JSON array.
    let mut json_body = String::new();
    let mut rest = chunked;
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
        if size == 0 {
            break;
        }
        json_body.push_str(&after[..size]);
        rest = &after[size + 2..];
    }
    let elements: serde_json::Value = serde_json::from_str(&json_body).expect("one JSON array");
    assert!(
        elements
            .as_array()
            .is_some_and(|a| !a.is_empty() && a.iter().all(|e| e["candidates"].is_array())),
        "{json_body}"
    );
    let counted = answer_of(
        &addr,
        &post("/v1beta/models/gemini-2.5-flash:countTokens", body),
    );
    assert!(counted.contains(r#""totalTokens":"#), "{counted}");
    let get = |path: &str| {
        format!("GET {path} HTTP/1.1\r\nhost: x\r\nx-goog-api-key: k\r\nconnection: close\r\n\r\n")
    };
    let models = answer_of(&addr, &get("/v1beta/models"));
    assert!(models.contains(r#""models":[{"#), "{models}");
    let refused = answer_of(
        &addr,
        &post(
            "/v1beta/models/gemini-2.5-flash:generateContent",
            r#"{"contents": []}"#,
        ),
    );
    assert!(refused.starts_with("HTTP/1.1 400 "), "{refused}");
    assert!(
        refused.contains(r#""status":"INVALID_ARGUMENT""#),
        "{refused}"
    );
    let unknown = answer_of(&addr, &post("/v1beta/models/g:embedContent", body));
    assert!(unknown.starts_with("HTTP/1.1 404 "), "{unknown}");
    assert!(unknown.contains(r#""status":"NOT_FOUND""#), "{unknown}");
    drop(server.stdin.take());
    let _ = server.wait();
}
