//! Recordings kept trustworthy: secrets never reach a replay's outputs, record modes replay,
//! record and extend as vcrpy's do, a re-recording that went wrong keeps the good one, a replay
//! can be judged by its recording alone, and volatile text is normalised.

use crate::support::Project;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;

/// A provider that asks for the credentials file once, then answers in text.
const ASKS_FOR_CREDENTIALS: &str = r#"format = 1
family = "credentials"
user = "Read the credentials."
[[tools]]
name = "exec"
description = "Run a shell command"
schema = { type = "object", properties = { command = { type = "string" } } }
default = { ok = "" }
[model]
name = "m"
[[model.rules]]
when = { last_message_contains = "the key is" }
reply = { text = "done" }
[[model.rules]]
reply = { tool_calls = [{ name = "exec", args = { command = "cat .env" } }] }
"#;

/// A secret of a known shape (an AWS access key id) and one harness knows only because the
/// agent sends it as its key.
const AWS_CANARY: &str = "AKIACANARY0123456789";
const TOKEN_CANARY: &str = "agent-token-canary-4242";

/// An agent whose tool reads a credentials file: both canaries land in a tool result (and the
/// token in its `authorization` header). `CHANGE=1` is its next version, which words the result
/// otherwise. It prints what a refused request's body said, and ignores its arguments (where a
/// key may be given too).
const LEAKY: &str = r#"
import json, os, sys, urllib.request, urllib.error
url = os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions"
token = os.environ["AGENT_TOKEN"]
result = f"the key is AKIACANARY0123456789, the token {token}"
if os.environ.get("CHANGE") == "1":
    result += " (read again)"
tools = [{"type": "function", "function": {"name": "exec", "description": "Run a shell command",
          "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}}]
messages = [{"role": "user", "content": "Read the credentials."}]
for _ in range(4):
    body = json.dumps({"model": "m", "messages": messages, "tools": tools}).encode()
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "content-type": "application/json", "authorization": "Bearer " + token})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            msg = json.loads(r.read())["choices"][0]["message"]
    except urllib.error.HTTPError as e:
        print("refused:", e.read().decode())
        sys.exit(0)
    messages.append(msg)
    if not msg.get("tool_calls"):
        print("answer:", msg["content"])
        break
    for c in msg["tool_calls"]:
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
"#;

#[test]
fn a_secret_in_a_tool_result_appears_in_no_output_of_a_replay() {
    let p = Project::new();
    p.write("stub.toml", ASKS_FOR_CREDENTIALS);
    p.write("agent.py", LEAKY);
    let token = [("AGENT_TOKEN", TOKEN_CANARY)];
    let (mut upstream, base) = crate::support::stub_provider(&p, "stub.toml");
    let recorded = p.harness_env(
        &token,
        &[
            "proxy",
            "--upstream",
            &base,
            "--out",
            "creds",
            "--",
            "python3",
            "agent.py",
            AWS_CANARY,
        ],
    );
    drop(upstream.stdin.take());
    let _ = upstream.wait();
    recorded.expect_code(0);
    assert!(recorded.to_string().contains("answer: done"), "{recorded}");
    // What a command printed (its arguments are the test's).
    let printed = |run: &crate::support::Run| format!("{}{}", run.stdout, run.stderr);
    let mut runs = vec![printed(&recorded)];
    // Every output a replay has: the terminal, traces, goldens (pending, then accepted), the
    // CSV, JSON, JUnit and HTML reports; first as recorded, then diverging (the reading, the
    // diff, the body refusing the request the agent printed), then with the other policies.
    let exec = |tag: &str, env: &[(&str, &str)], policy: &str| {
        p.harness_env(
            env,
            &[
                "exec",
                "creds",
                "--on-divergence",
                policy,
                "--traces",
                &format!("out/{tag}/traces"),
                "--metrics",
                &format!("out/{tag}/metrics.csv"),
                "--json",
                &format!("out/{tag}/results.json"),
                "--junit",
                &format!("out/{tag}/junit.xml"),
                "--html",
                &format!("out/{tag}/report.html"),
                "--",
                "python3",
                "agent.py",
                AWS_CANARY,
            ],
        )
    };
    let first = exec("first", &token, "fail");
    first.expect_code(1);
    assert!(first.stderr.contains("answer: done"), "{first}");
    runs.push(printed(&first));
    let accept = p.harness(&["accept"]);
    accept.expect_code(0);
    runs.push(printed(&accept));
    let again = exec("again", &token, "fail");
    again.expect_code(0);
    runs.push(printed(&again));
    let changed = [("AGENT_TOKEN", TOKEN_CANARY), ("CHANGE", "1")];
    for policy in ["fail", "stop", "continue"] {
        let run = exec(policy, &changed, policy);
        assert!(
            run.stdout.contains("diverged") || run.stderr.contains("diverged"),
            "{run}"
        );
        runs.push(printed(&run));
    }
    let diverged = runs[4].clone();
    assert!(
        diverged.contains("refused: "),
        "the agent was refused\n{diverged}"
    );
    assert!(
        diverged.contains("tool result") && diverged.contains("[REDACTED]"),
        "the reading quotes the changed result, scrubbed\n{diverged}"
    );
    // Nothing written or printed holds either canary, and the outputs are there to be read.
    let mut read = 0;
    for (path, bytes) in p.tree(".") {
        if path.ends_with(".py") || path.starts_with("stub") {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        for canary in [AWS_CANARY, TOKEN_CANARY] {
            assert!(!text.contains(canary), "{path} holds {canary}:\n{text}");
        }
        read += 1;
    }
    let tree = p.tree(".");
    for tag in ["first", "again", "fail", "stop", "continue"] {
        for file in [
            "traces/creds/conversation-1.cassette@exec.jsonl",
            "metrics.csv",
            "results.json",
            "junit.xml",
            "report.html",
        ] {
            let path = format!("out/{tag}/{file}");
            assert!(tree.contains_key(&path), "{path} was not written");
        }
    }
    assert!(tree.contains_key("snapshots/creds/conversation-1.cassette@exec.snap"));
    assert_eq!(read, 28, "{:?}", tree.keys().collect::<Vec<_>>());
    for run in &runs {
        for canary in [AWS_CANARY, TOKEN_CANARY] {
            assert!(
                !run.contains(canary),
                "a terminal line holds {canary}:\n{run}"
            );
        }
    }
    // lint agrees, and would say what to do by the kind of file.
    p.harness(&["lint", "."]).expect_code(0);
}

/// A provider on 127.0.0.1 that counts the requests it gets and answers each in text, the same
/// way every time (its answer names how many messages the request held).
fn counting_stub() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let count = std::sync::Arc::new(AtomicUsize::new(0));
    let seen = std::sync::Arc::clone(&count);
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let mut reader = BufReader::new(s.try_clone().expect("clone"));
            let body = crate::support::read_request(&mut reader).body;
            seen.fetch_add(1, Ordering::SeqCst);
            let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let held = request["messages"].as_array().map_or(0, Vec::len);
            let answer = serde_json::json!({
                "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": format!("heard {held}")}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
            })
            .to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
                answer.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(answer.as_bytes());
        }
    });
    (base, count)
}

/// An agent holding one conversation of `N` requests on the task `TASK`, with a history of
/// `MB` mebibytes more when given; a refused request ends it with exit 4 after printing what it
/// was told.
pub(crate) const TALKS: &str = r#"
import json, os, sys, urllib.request, urllib.error
n, task = int(sys.argv[1]), sys.argv[2]
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
messages = [{"role": "user", "content": task}]
if len(sys.argv) > 3:
    messages.append({"role": "user", "content": "x" * (int(sys.argv[3]) << 20)})
for i in range(n):
    req = urllib.request.Request(url, data=json.dumps({"model": "m", "messages": messages}).encode(),
        method="POST", headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            answer = json.loads(r.read())["choices"][0]["message"]["content"]
    except urllib.error.HTTPError as e:
        print(f"refused: HTTP {e.code}: {e.read().decode()}")
        sys.exit(4)
    messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": f"more {i}"}]
print("said:", answer)
"#;

#[test]
fn record_modes_replay_record_and_extend_as_vcr_does() {
    use std::sync::atomic::Ordering;
    let p = Project::new();
    p.write("agent.py", TALKS);
    let (base, upstream) = counting_stub();
    let proxy = |ci: &str, mode: &[&str], n: &str, task: &str| {
        let mut args = vec!["proxy", "--upstream", &base, "--out", "talk"];
        args.extend_from_slice(mode);
        args.extend_from_slice(&["--", "python3", "agent.py", n, task]);
        p.harness_ci(ci, &args)
    };
    let exchanges = |file: &str| -> usize {
        let c: serde_json::Value = serde_json::from_str(&p.read(file)).expect("a cassette");
        c["exchanges"].as_array().map_or(0, Vec::len)
    };
    // Nothing recorded yet: `once` (the default) records the conversation.
    proxy("", &[], "2", "Talk.").expect_code(0);
    assert_eq!(upstream.load(Ordering::SeqCst), 2);
    assert_eq!(exchanges("talk/conversation-1.cassette.json"), 2);
    let recorded = p.read("talk/conversation-1.cassette.json");

    // Under CI the default is `none`: the same session replays, the provider hears nothing.
    let replayed = proxy("true", &[], "2", "Talk.");
    replayed.expect_code(0).expect_stdout(
        "replayed 1 conversation(s) from their cassettes at talk (record mode none); 2 request(s) answered from the recording",
    );
    assert!(replayed.stdout.contains("said: heard 3"), "{replayed}");
    // A request past the recording is refused, not sent: the agent is told why.
    let past = proxy("true", &[], "3", "Talk.");
    past.expect_code(1);
    let past = past.to_string();
    assert!(
        past.contains("refused:")
            && past.contains("the recording ends after 2 requests")
            && past.contains("--record-mode none never asks the provider"),
        "{past}"
    );
    // A new conversation is refused too, and so is what is no model request (a model list).
    proxy("true", &[], "1", "Another task.").expect_code(1);
    let lists = p.harness_ci(
        "true",
        &[
            "proxy",
            "--upstream",
            &base,
            "--out",
            "talk",
            "--",
            "python3",
            "-c",
            "import os, urllib.request; urllib.request.urlopen(os.environ['OPENAI_BASE_URL'] + '/models')",
        ],
    );
    lists.expect_code(1);
    assert!(
        lists
            .stderr
            .contains("record mode `none` never asks the provider, and GET /v1/models"),
        "{lists}"
    );
    assert_eq!(upstream.load(Ordering::SeqCst), 2, "none went live");
    assert_eq!(p.read("talk/conversation-1.cassette.json"), recorded);
    assert_eq!(p.files("talk", ".cassette.json").len(), 1);

    // With recordings present `once` records nothing, as vcrpy's: a new conversation is
    // refused with its divergence from the nearest recording, exit 1, nothing recorded.
    let once = proxy("true", &["--record-mode", "once"], "1", "Another task.");
    once.expect_code(1);
    assert!(
        once.stderr.contains(
            "request 1 differs from the recording talk/conversation-1.cassette: the task changed: «Talk.» became «Another task.»"
        ),
        "{once}"
    );
    assert_eq!(upstream.load(Ordering::SeqCst), 2);
    assert_eq!(p.files("talk", ".cassette.json").len(), 1);
    // `new_episodes` records it beside the replayed one.
    let episode = proxy(
        "true",
        &["--record-mode", "new_episodes"],
        "1",
        "Another task.",
    );
    episode
        .expect_code(0)
        .expect_stdout("recorded talk/conversation-2.cassette.json: 1 request(s)");
    assert_eq!(upstream.load(Ordering::SeqCst), 3);
    // A replay in which the agent starts only one of the two: the other is named.
    let partial = proxy("true", &[], "2", "Talk.");
    partial.expect_code(0).expect_stdout(
        "not replayed: 1 recorded conversation(s) the agent never started: talk/conversation-2.cassette.json",
    );
    assert_eq!(upstream.load(Ordering::SeqCst), 3);
    // `once` replays a recorded conversation as it was: a further request is refused.
    let further = proxy("", &[], "3", "Talk.");
    further.expect_code(1);
    assert!(
        further
            .stderr
            .contains("--record-mode once replays a recorded conversation as it was"),
        "{further}"
    );
    assert_eq!(upstream.load(Ordering::SeqCst), 3);
    assert_eq!(p.read("talk/conversation-1.cassette.json"), recorded);

    // `new_episodes` replays while the conversation follows its recording; past its end it
    // goes live and adds to it: two more requests sent, four recorded, the first two as they
    // were.
    let extended = proxy("", &["--record-mode", "new_episodes"], "4", "Talk.");
    extended
        .expect_code(0)
        .expect_stdout("recorded talk/conversation-1.cassette.json: 4 request(s)");
    assert_eq!(upstream.load(Ordering::SeqCst), 5);
    assert_eq!(exchanges("talk/conversation-1.cassette.json"), 4);
    let cassette =
        |text: &str| -> serde_json::Value { serde_json::from_str(text).expect("a cassette") };
    let extended = p.read("talk/conversation-1.cassette.json");
    assert_eq!(
        cassette(&extended)["exchanges"]
            .as_array()
            .map(|e| e[..2].to_vec()),
        cassette(&recorded)["exchanges"].as_array().cloned(),
        "the recorded exchanges are kept as they were"
    );
    assert_eq!(exchanges("talk/conversation-2.cassette.json"), 1);
    // The extended recording replays whole, offline.
    let replay = p.harness(&[
        "exec",
        "talk/conversation-1.cassette.json",
        "--",
        "python3",
        "agent.py",
        "4",
        "Talk.",
    ]);
    assert!(
        !replay.stdout.contains("diverged") && !replay.stderr.contains("diverged"),
        "{replay}"
    );
    proxy("true", &[], "4", "Talk.").expect_code(0);
    assert_eq!(upstream.load(Ordering::SeqCst), 5);
    // A conversation that diverges inside its recording: the recorded tail stays, and the
    // conversation that went on is added beside it (one request replayed, two sent).
    p.write("agent.py", TALKS.replace("more {i}", "again {i}"));
    let branched = proxy("", &["--record-mode", "new_episodes"], "3", "Talk.");
    branched
        .expect_code(0)
        .expect_stdout("recorded talk/conversation-3.cassette.json: 3 request(s)");
    assert_eq!(upstream.load(Ordering::SeqCst), 7);
    assert_eq!(p.read("talk/conversation-1.cassette.json"), extended);
    // Each conversation replays from the recording it follows, offline.
    proxy("true", &[], "3", "Talk.").expect_code(0);
    p.write("agent.py", TALKS);
    proxy("true", &[], "4", "Talk.").expect_code(0);
    assert_eq!(upstream.load(Ordering::SeqCst), 7);
    p.remove("talk/conversation-3.cassette.json");

    // `all` (or --replace) records everything again; cassettes it did not write go.
    proxy("", &["--record-mode", "all"], "2", "Talk.").expect_code(0);
    assert_eq!(upstream.load(Ordering::SeqCst), 9);
    assert_eq!(
        p.files("talk", ".cassette.json"),
        vec!["talk/conversation-1.cassette.json"]
    );
    // The same answers, the same cassette (but for how long each took).
    let timeless = |text: &str| {
        let mut c: serde_json::Value = serde_json::from_str(text).expect("a cassette");
        for ex in c["exchanges"].as_array_mut().into_iter().flatten() {
            ex.as_object_mut().map(|o| o.remove("elapsed_ms"));
        }
        c
    };
    assert_eq!(
        timeless(&p.read("talk/conversation-1.cassette.json")),
        timeless(&recorded)
    );
}

#[test]
/// Budgets count what is written: a large recording the proxy made itself replays under CI
/// (`none` writes nothing, so it charges nothing), and replayed exchanges are not charged as
/// if they went to the provider.
fn a_large_recording_replays_under_ci() {
    use std::sync::atomic::Ordering;
    let p = Project::new();
    p.write("agent.py", TALKS);
    let (base, upstream) = counting_stub();
    let proxy = |ci: &str| {
        p.harness_ci(
            ci,
            &[
                "proxy",
                "--upstream",
                &base,
                "--out",
                "big",
                "--",
                "python3",
                "agent.py",
                "6",
                "Talk.",
                "7",
            ],
        )
    };
    // Six requests carrying 7 MiB of history each: about 42 MiB recorded.
    proxy("").expect_code(0);
    assert_eq!(upstream.load(Ordering::SeqCst), 6);
    let size = std::fs::metadata(p.join("big/conversation-1.cassette.json"))
        .expect("the cassette")
        .len();
    assert!(size > 40 << 20, "{size}");
    let replayed = proxy("true");
    replayed.expect_code(0);
    assert!(replayed.stdout.contains("said: heard"), "{replayed}");
    assert_eq!(upstream.load(Ordering::SeqCst), 6, "none went live");
}

/// A provider that answers 401 to every request (an expired key).
fn refusing_stub() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut reader = BufReader::new(s.try_clone().expect("clone"));
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let answer = r#"{"error": {"message": "Incorrect API key provided", "type": "invalid_request_error", "code": "invalid_api_key"}}"#;
            let head = format!(
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
                answer.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(answer.as_bytes());
        }
    });
    base
}

#[test]
/// Re-recording never loses a good recording: against a provider that refuses every request,
/// or stopped by a signal, `all` keeps the cassettes it would have replaced, writes the attempt
/// beside them as `….partial` (which nothing replays), and exits non-zero saying so.
fn a_re_recording_that_went_wrong_keeps_the_good_one() {
    let p = Project::new();
    p.write("agent.py", TALKS);
    let (base, _) = counting_stub();
    let record = |upstream: &str, mode: &str, agent: &str| {
        p.harness(&[
            "proxy",
            "--upstream",
            upstream,
            "--out",
            "talk",
            "--record-mode",
            mode,
            "--",
            "python3",
            agent,
            "2",
            "Talk.",
        ])
    };
    record(&base, "once", "agent.py").expect_code(0);
    let good = p.read("talk/conversation-1.cassette.json");
    // An expired key: every request answered 401.
    let refused = record(&refusing_stub(), "all", "agent.py");
    refused.expect_code(1);
    assert!(
        refused.stderr.contains(
            "this conversation was not written as its cassette: its last request was answered HTTP 401; it is at talk/conversation-1.cassette.json.partial (a replay never reads it), and the recording it would have replaced is kept"
        ),
        "{refused}"
    );
    assert_eq!(p.read("talk/conversation-1.cassette.json"), good);
    assert!(p.exists("talk/conversation-1.cassette.json.partial"));
    assert_eq!(p.files("talk", ".cassette.json").len(), 1);
    // A stop signal during the re-recording (the agent stops its harness after one answer).
    p.write(
        "stops.py",
        format!(
            "{}\nimport signal, time\nos.kill(os.getppid(), signal.SIGTERM)\ntime.sleep(5)\n",
            TALKS.replace("for i in range(n):", "for i in range(1):")
        ),
    );
    let stopped = record(&base, "all", "stops.py");
    stopped.expect_code(143);
    assert!(
        stopped
            .stderr
            .contains("a stop signal ended the session during it"),
        "{stopped}"
    );
    assert_eq!(p.read("talk/conversation-1.cassette.json"), good);
    // Stopped before the agent asked anything: the signal's status, and no word of base URLs.
    p.write(
        "early.py",
        "import os, signal, time\nos.kill(os.getppid(), signal.SIGTERM)\ntime.sleep(5)\n",
    );
    let early = p.harness(&[
        "proxy",
        "--upstream",
        &base,
        "--out",
        "early",
        "--",
        "python3",
        "early.py",
    ]);
    early.expect_code(143);
    assert!(
        early
            .stderr
            .contains("stopped by SIGTERM before the agent made a model request")
            && !early.stderr.contains("base URL"),
        "{early}"
    );
    // The good recording still replays under CI.
    p.harness_ci(
        "true",
        &[
            "proxy",
            "--upstream",
            &base,
            "--out",
            "talk",
            "--",
            "python3",
            "agent.py",
            "2",
            "Talk.",
        ],
    )
    .expect_code(0);
}

#[test]
/// docs/record-your-agent.md's cassette-only mode: a replay judged by its recording alone —
/// every request matched, every recorded exchange played — with no golden to accept.
fn a_replay_judged_by_its_recording_alone() {
    let p = Project::new();
    p.write("agent.py", TALKS);
    let (base, _) = counting_stub();
    p.harness(&[
        "proxy",
        "--upstream",
        &base,
        "--out",
        "talk",
        "--",
        "python3",
        "agent.py",
        "2",
        "Talk.",
    ])
    .expect_code(0);
    let exec = |extra: &[&str], n: &str| {
        let mut args = vec!["exec", "talk"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "python3", "agent.py", n, "Talk."]);
        p.harness(&args)
    };
    // The agent as recorded: green at once, nothing to accept.
    let run = exec(&["--cassettes-only"], "2");
    run.expect_code(0);
    assert!(run.summary().contains("0 missing goldens"), "{run}");
    assert!(
        p.files("snapshots", "").is_empty(),
        "{:?}",
        p.files("snapshots", "")
    );
    // One that asks more, or less, than the recording holds fails.
    exec(&["--cassettes-only"], "3").expect_code(1);
    let fewer = exec(&["--cassettes-only"], "1");
    fewer.expect_code(1);
    assert!(
        fewer
            .stdout
            .contains("every recorded exchange to be replayed"),
        "{fewer}"
    );
    // Only with cassettes, and only with `fail`.
    let policy = exec(&["--cassettes-only", "--on-divergence", "continue"], "2");
    policy.expect_code(2);
    assert!(
        policy.stderr.contains("--on-divergence must be `fail`"),
        "{policy}"
    );
    p.write(
        "scenarios/s.toml",
        "format = 1\ndescription = \"d\"\nfamily = \"f\"\nprofile = \"none\"\nuser = \"u\"\n[model]\nname = \"m\"\n[[model.rules]]\nreply = { text = \"hi\" }\n",
    );
    let scenario = p.harness(&["exec", "scenarios/s.toml", "--cassettes-only", "--", "true"]);
    scenario.expect_code(2);
    assert!(
        scenario.stderr.contains("no cassette was given"),
        "{scenario}"
    );
    let served = p.harness(&["serve", "scenarios/s.toml", "--judge", "--cassettes-only"]);
    served.expect_code(2);
    assert!(served.stderr.contains("give cassettes"), "{served}");
    // The project file's `[replay] golden = false` is the same.
    p.write("harness.toml", "format = 1\n\n[replay]\ngolden = false\n");
    exec(&[], "2").expect_code(0);
    assert!(p.files("snapshots", "").is_empty());
}

#[test]
/// docs/record-your-agent.md's normaliser: a timestamp in the task replays green once the
/// project file normalises it, while a real change of the task still diverges; a bad rule is
/// a located error.
fn a_normalised_timestamp_replays_and_a_real_change_does_not() {
    let p = Project::new();
    p.write("agent.py", TALKS);
    let (base, upstream) = counting_stub();
    let proxy = |task: &str| {
        p.harness_ci(
            "true",
            &[
                "proxy",
                "--upstream",
                &base,
                "--out",
                "talk",
                "--record-mode",
                "once",
                "--",
                "python3",
                "agent.py",
                "2",
                task,
            ],
        )
    };
    p.harness(&[
        "proxy",
        "--upstream",
        &base,
        "--out",
        "talk",
        "--",
        "python3",
        "agent.py",
        "2",
        "Talk at 2026-11-28T10:00:00Z.",
    ])
    .expect_code(0);
    // Another time: without the rule it diverges.
    proxy("Talk at 2026-11-29T11:30:00Z.").expect_code(1);
    p.write(
        "harness.toml",
        "format = 1\n\n[[replay.normalize]]\npath = \"messages/*/content\"\npattern = '\\d{4}-\\d{2}-\\d{2}T[0-9:]+Z'\nreplace = \"<time>\"\n",
    );
    let same = proxy("Talk at 2026-11-29T11:30:00Z.");
    same.expect_code(0);
    assert!(
        same.stdout
            .contains("2 request(s) answered from the recording"),
        "{same}"
    );
    // A real change of the task still diverges.
    let changed = proxy("Walk at 2026-11-29T11:30:00Z.");
    changed.expect_code(1);
    assert!(changed.stderr.contains("the task changed"), "{changed}");
    assert_eq!(upstream.load(std::sync::atomic::Ordering::SeqCst), 2);
    // A rule that is no regular expression is refused where it is written.
    p.write(
        "harness.toml",
        "format = 1\n\n[[replay.normalize]]\npath = \"messages\"\npattern = \"(\"\n",
    );
    let bad = proxy("Talk.");
    bad.expect_code(2);
    assert!(
        bad.stderr
            .contains("harness.toml:5:1: `(` is not a regular expression"),
        "{bad}"
    );
}
