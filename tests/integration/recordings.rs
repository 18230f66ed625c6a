//! Record once, replay for years (issue 27): `harness proxy` records what the agent saw however
//! the provider's bytes arrive, and `harness exec CASSETTE` replays it to the unchanged agent
//! without a divergence. The provider is a stub on 127.0.0.1 that writes its streams the way
//! real ones do (the stream's end and the body's end in separate writes, one byte per write);
//! the agent closes the connection at the stream's terminal event, as the official SDKs do.
//!
//! Mirrors README.md and docs/record-your-agent.md: their proxy → exec → accept flow, followed
//! literally in a copy of this project (the stub as the provider).

use crate::support::Project;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::time::Duration;

/// Text no network read boundary may break: two- to four-byte characters.
const TEXT: &str = "h\u{e9}llo w\u{f6}rld \u{2713} \u{65e5}\u{672c}\u{8a9e} \u{1f389}";

/// How the stub writes a stream.
#[derive(Clone, Copy)]
enum Writes {
    /// Every event, the terminal one included, in one write; the end of the body only once
    /// the client has gone (the race an SDK that closes at `[DONE]` wins).
    EndAfterTheClient,
    /// One byte per write (a chunk of its own), so characters split across reads.
    BytePerWrite,
}

/// The stream a provider of `path`'s API sends for a text answer.
fn stream_of(path: &str, text: &str) -> String {
    let text = serde_json::to_string(text).expect("a JSON string");
    let events: Vec<(Option<&str>, String)> = if path.ends_with("/chat/completions") {
        let chunk = |delta: &str, finish: &str| {
            format!(
                r#"{{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{{"index":0,"delta":{delta},"finish_reason":{finish}}}]}}"#
            )
        };
        vec![
            (None, chunk(r#"{"role":"assistant","content":""}"#, "null")),
            (None, chunk(&format!(r#"{{"content":{text}}}"#), "null")),
            (None, chunk("{}", r#""stop""#)),
            (None, "[DONE]".to_owned()),
        ]
    } else if path.ends_with("/responses") {
        vec![
            (
                Some("response.created"),
                r#"{"type":"response.created","response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}"#.to_owned(),
            ),
            (
                Some("response.output_text.delta"),
                format!(
                    r#"{{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":{text}}}"#
                ),
            ),
            (
                Some("response.completed"),
                format!(
                    r#"{{"type":"response.completed","response":{{"id":"resp_1","object":"response","status":"completed","output":[{{"type":"message","id":"msg_1","role":"assistant","content":[{{"type":"output_text","text":{text}}}]}}],"usage":{{"input_tokens":5,"output_tokens":5,"total_tokens":10}}}}}}"#
                ),
            ),
        ]
    } else {
        vec![
            (
                Some("message_start"),
                r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":0}}}"#.to_owned(),
            ),
            (
                Some("content_block_start"),
                r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#.to_owned(),
            ),
            (
                Some("content_block_delta"),
                format!(
                    r#"{{"type":"content_block_delta","index":0,"delta":{{"type":"text_delta","text":{text}}}}}"#
                ),
            ),
            (
                Some("content_block_stop"),
                r#"{"type":"content_block_stop","index":0}"#.to_owned(),
            ),
            (
                Some("message_delta"),
                r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":5}}"#.to_owned(),
            ),
            (Some("message_stop"), r#"{"type":"message_stop"}"#.to_owned()),
        ]
    };
    events
        .into_iter()
        .map(|(name, data)| match name {
            Some(n) => format!("event: {n}\ndata: {data}\n\n"),
            None => format!("data: {data}\n\n"),
        })
        .collect()
}

/// A stub provider answering `answers` streamed requests, one connection each, written as
/// `writes` says; its base URL (with `/v1`).
fn stub(answers: usize, writes: Writes) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        for _ in 0..answers {
            let (mut s, _) = listener.accept().expect("accept");
            s.set_nodelay(true).expect("nodelay");
            let mut reader = BufReader::new(s.try_clone().expect("clone"));
            let request = crate::support::read_request(&mut reader);
            let stream = stream_of(request.path(), TEXT);
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n";
            s.write_all(head.as_bytes()).expect("the head");
            match writes {
                Writes::EndAfterTheClient => {
                    let chunk = format!("{:x}\r\n{stream}\r\n", stream.len());
                    s.write_all(chunk.as_bytes()).expect("the events");
                    // The client closes at the terminal event; only then does the body end.
                    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
                    let _ = reader.read(&mut [0; 1]);
                    let _ = s.write_all(b"0\r\n\r\n");
                }
                Writes::BytePerWrite => {
                    for b in stream.as_bytes() {
                        let mut chunk = b"1\r\n".to_vec();
                        chunk.push(*b);
                        chunk.extend_from_slice(b"\r\n");
                        if s.write_all(&chunk).is_err() {
                            break;
                        }
                    }
                    let _ = s.write_all(b"0\r\n\r\n");
                }
            }
        }
    });
    (base, handle)
}

/// An agent on the standard library that streams `count` tasks on `api` (`chat`, `responses`,
/// `messages`), closes each connection at the stream's terminal event as the SDKs do, and
/// prints each answer's text.
const AGENT: &str = r#"
import http.client, json, os, sys, urllib.parse
api, count = sys.argv[1], int(sys.argv[2])
anthropic = api == "messages"
base = os.environ["ANTHROPIC_BASE_URL" if anthropic else "OPENAI_BASE_URL"]
url = urllib.parse.urlparse(base)
path = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}[api]
for i in range(count):
    task = f"task {i}"
    model = os.environ.get("AGENT_MODEL", "m")
    if api == "responses":
        body = {"model": model, "input": task, "stream": True}
    else:
        body = {"model": model, "messages": [{"role": "user", "content": task}], "stream": True}
        if anthropic:
            body["max_tokens"] = 64
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json", "authorization": "Bearer k", "x-api-key": "k"})
    response = conn.getresponse()
    text = ""
    for raw in response:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line.startswith("data:"):
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            break
        event = json.loads(data)
        if api == "chat":
            text += (event["choices"][0]["delta"].get("content") or "")
        elif event.get("type") == "response.output_text.delta":
            text += event["delta"]
        elif event.get("type") == "content_block_delta":
            text += event["delta"]["text"]
        if event.get("type") in ("message_stop", "response.completed"):
            break
    conn.close()
    print(text)
"#;

/// Record `count` conversations of the agent on `api` through the proxy against a stub
/// writing as `writes` says, into `out`; the recording run.
fn record(p: &Project, api: &str, count: usize, writes: Writes, out: &str) -> crate::support::Run {
    let (base, stub) = stub(count, writes);
    let n = count.to_string();
    let run = p.harness(&[
        "proxy",
        "--upstream",
        &base,
        "--out",
        out,
        "--",
        "python3",
        "agent.py",
        api,
        &n,
    ]);
    stub.join().expect("the stub");
    run
}

/// How many answers of the agent's, printed on stdout (the proxy passes it on) or stderr (exec
/// keeps stdout for its report), are the whole text.
fn texts(run: &crate::support::Run) -> usize {
    run.stdout
        .lines()
        .chain(run.stderr.lines())
        .filter(|l| *l == TEXT)
        .count()
}

#[test]
fn a_stream_the_agent_closes_at_its_end_is_recorded_whole_and_replays() {
    let p = Project::new();
    p.write("agent.py", AGENT);
    // Twenty conversations, each ended by the agent before the provider ended the body.
    let run = record(
        &p,
        "chat",
        20,
        Writes::EndAfterTheClient,
        "cassettes/streamed",
    );
    run.expect_code(0);
    assert_eq!(texts(&run), 20, "the agent got every answer\n{run}");
    let cassettes = p.files("cassettes/streamed", ".cassette.json");
    assert_eq!(cassettes.len(), 20, "{run}");
    for c in &cassettes {
        let text = p.read(c);
        assert!(
            !text.contains("\"error\""),
            "{c} was recorded as cut:\n{text}"
        );
        assert!(text.contains("[DONE]"), "{c}");
    }
    // Offline: the unchanged agent follows every recording to the end.
    let replay = p.harness(&[
        "exec",
        "cassettes/streamed",
        "--",
        "python3",
        "agent.py",
        "chat",
        "20",
    ]);
    assert_eq!(texts(&replay), 20, "{replay}");
    assert!(!replay.stderr.contains("diverged"), "{replay}");
    assert!(
        replay.summary().contains("20 cases from 20 files"),
        "{replay}"
    );
    assert!(
        replay.summary().contains("0 expectation failures"),
        "{replay}"
    );
}

#[test]
fn characters_split_across_network_reads_are_recorded_and_replayed_exactly() {
    let p = Project::new();
    p.write("agent.py", AGENT);
    for api in ["chat", "responses", "messages"] {
        let out = format!("cassettes/{api}");
        let run = record(&p, api, 1, Writes::BytePerWrite, &out);
        run.expect_code(0);
        assert_eq!(texts(&run), 1, "{api}: the agent got the text\n{run}");
        let cassette = p.read(&format!("{out}/conversation-1.cassette.json"));
        assert!(
            !cassette.contains('\u{fffd}'),
            "{api}: a broken character\n{cassette}"
        );
        let escaped = serde_json::to_string(TEXT).expect("JSON");
        let inner = &escaped[1..escaped.len() - 1];
        assert!(
            cassette.contains(inner) || cassette.contains(&inner.replace('"', "\\\"")),
            "{api}: the text is not in the cassette whole\n{cassette}"
        );
        let replay = p.harness(&["exec", &out, "--", "python3", "agent.py", api, "1"]);
        assert_eq!(texts(&replay), 1, "{api}: replayed text\n{replay}");
        assert!(!replay.stderr.contains("diverged"), "{api}\n{replay}");
    }
}

#[test]
fn a_truly_cut_stream_replays_the_bytes_it_had_then_cuts_and_its_retry_continues() {
    let p = Project::new();
    // A stream cut after its first event, recorded as cut; the client's retry gets it whole.
    let cut = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n44\r\ndata: {\"id\":\"c2\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\r\n";
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let stub = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(s.try_clone().expect("clone"));
        crate::support::read_request(&mut reader);
        s.write_all(cut.as_bytes()).expect("the cut stream");
        // Closing both handles of the socket cuts the stream.
        drop(reader);
        drop(s);
        let (mut s, _) = listener.accept().expect("accept the retry");
        let mut reader = BufReader::new(s.try_clone().expect("clone"));
        crate::support::read_request(&mut reader);
        let stream = stream_of("/v1/chat/completions", "Hi again");
        let whole = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n{:x}\r\n{stream}\r\n0\r\n\r\n",
            stream.len()
        );
        s.write_all(whole.as_bytes()).expect("the whole stream");
    });
    // A client that retries a cut stream once, as the SDKs do (saying so in the header the
    // openai SDK sends).
    let client = r#"
import http.client, json, os, urllib.parse
url = urllib.parse.urlparse(os.environ["OPENAI_BASE_URL"])
body = {"model": "m", "messages": [{"role": "user", "content": "cut"}], "stream": True}
for attempt in range(2):
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    conn.request("POST", "/v1/chat/completions", json.dumps(body),
                 {"content-type": "application/json", "x-stainless-retry-count": str(attempt)})
    got = b""
    try:
        response = conn.getresponse()
        while True:
            piece = response.read1(65536)
            if not piece:
                break
            got += piece
    except Exception as e:
        print("cut:", type(e).__name__)
        print("bytes:", got.decode())
        continue
    print("whole:", "[DONE]" in got.decode(), got.decode().count("data:"))
    break
"#;
    p.write("client.py", client);
    let run = p.harness(&[
        "proxy",
        "--upstream",
        &base,
        "--out",
        "cut",
        "--",
        "python3",
        "client.py",
    ]);
    stub.join().expect("the stub");
    run.expect_code(0)
        .expect_stdout("recorded cut/conversation-1.cassette.json: 2 request(s)");
    let cassette = p.read("cut/conversation-1.cassette.json");
    assert!(cassette.contains("\"kind\": \"cut\""), "{cassette}");
    let whole = run
        .stdout
        .lines()
        .find(|l| l.starts_with("whole:"))
        .unwrap_or_else(|| panic!("the retry got no whole answer\n{run}"))
        .to_owned();
    // At the default pace (every event at once) the agent still gets the event before the cut,
    // and its retry continues the conversation: the recorded answer, no divergence.
    let replay = p.harness(&["exec", "cut", "--", "python3", "client.py"]);
    assert!(
        replay.stderr.contains("bytes: data: {\"id\":\"c2\""),
        "the replayed cut stream gave no bytes\n{replay}"
    );
    assert!(replay.stderr.contains(&whole), "{replay}");
    replay
        .expect_code(1)
        .expect_stdout("1 missing goldens, 0 expectation failures");
    assert!(!replay.to_string().contains("diverged"), "{replay}");
}

/// An agent that finishes one conversation (one request on Chat Completions), then starts a
/// child in its process group, writes both pids to `agent.pids` and waits to be stopped.
const WAITING_AGENT: &str = r#"
import http.client, json, os, subprocess, sys, time, urllib.parse
url = urllib.parse.urlparse(os.environ["OPENAI_BASE_URL"])
conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
body = {"model": "m", "messages": [{"role": "user", "content": "one task"}]}
conn.request("POST", "/v1/chat/completions", json.dumps(body), {"content-type": "application/json"})
conn.getresponse().read()
conn.close()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open("agent.pids.tmp", "w") as f:
    f.write(f"{os.getpid()} {child.pid}")
os.rename("agent.pids.tmp", "agent.pids")
time.sleep(300)
"#;

/// The pids `WAITING_AGENT` wrote, once it has (at most a minute).
#[cfg(unix)]
fn agent_pids(p: &Project) -> Vec<i32> {
    let start = std::time::Instant::now();
    loop {
        if let Ok(text) = std::fs::read_to_string(p.join("agent.pids")) {
            return text
                .split(' ')
                .filter_map(|n| n.trim().parse().ok())
                .collect();
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the agent never wrote its pids"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Is `pid` gone (or a zombie, which holds nothing)?
#[cfg(unix)]
fn gone(pid: i32) -> bool {
    // SAFETY: signal 0 checks that the process exists; it sends nothing.
    let exists = unsafe { libc::kill(pid, 0) } == 0;
    let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z'))
    });
    !exists || zombie
}

/// Start `harness ARGS` in the project, wait for the agent, send `signal` to harness; its exit
/// code once it has ended, after checking that every process of the agent's group is gone.
#[cfg(unix)]
fn stopped_by(p: &Project, signal: i32, args: &[&str]) -> Option<i32> {
    use std::process::Stdio;
    let mut child = crate::support::harness_command(p.path(), args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start harness");
    let pids = agent_pids(p);
    let pid = i32::try_from(child.id()).expect("a pid");
    // SAFETY: sends a signal to the child this test spawned and has not reaped.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill failed");
    let status = crate::support::wait_at_most(&mut child, Duration::from_secs(60));
    let start = std::time::Instant::now();
    while !pids.iter().all(|&p| gone(p)) && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    for pid in &pids {
        assert!(gone(*pid), "the agent's process {pid} outlived harness");
    }
    std::fs::remove_file(p.join("agent.pids")).expect("remove the pids");
    status.code()
}

#[cfg(unix)]
#[test]
fn a_stop_signal_ends_the_agents_group_and_keeps_its_finished_conversations() {
    let p = Project::new();
    let stub = "scenarios/serve/reflex-black-box.toml";
    p.copy_from_repo(stub, stub);
    p.write("agent.py", WAITING_AGENT);
    for (signal, code) in [
        (libc::SIGTERM, 143),
        (libc::SIGHUP, 129),
        (libc::SIGINT, 130),
    ] {
        // The proxy writes the conversation that ended before the signal.
        let (mut upstream, base) = crate::support::stub_provider(&p, stub);
        let out = format!("recorded-{code}");
        let got = stopped_by(
            &p,
            signal,
            &[
                "proxy",
                "--upstream",
                &base,
                "--out",
                &out,
                "--",
                "python3",
                "agent.py",
            ],
        );
        drop(upstream.stdin.take());
        let _ = upstream.wait();
        assert_eq!(got, Some(code), "proxy stopped by signal {signal}");
        let cassette = p.read(&format!("{out}/conversation-1.cassette.json"));
        assert!(cassette.contains("\"status\": 200"), "{cassette}");
        // exec ends the agent's group as well, with the signal's status.
        let got = stopped_by(&p, signal, &["exec", stub, "--", "python3", "agent.py"]);
        assert_eq!(got, Some(code), "exec stopped by signal {signal}");
    }
}

#[test]
fn what_counts_in_a_match_is_chosen_at_replay() {
    let p = Project::new();
    p.write("agent.py", AGENT);
    record(&p, "chat", 1, Writes::BytePerWrite, "cassettes/one").expect_code(0);
    // The agent now asks for another model: a real change, read as one.
    let replay = |extra: &[&str]| {
        let mut args = vec!["exec", "cassettes/one"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "python3", "agent.py", "chat", "1"]);
        p.harness_env(&[("AGENT_MODEL", "m2")], &args)
    };
    let strict = replay(&[]);
    strict.expect_code(1);
    // Said once, in the case's failure (stdout).
    assert!(
        strict.stdout.contains("the model changed: `m` became `m2`"),
        "{strict}"
    );
    assert_eq!(
        strict.to_string().matches("diverged at request").count(),
        1,
        "{strict}"
    );
    // Chosen on the command line: the parts that count, or a path left out.
    let parts = replay(&["--match", "messages,tools,params"]);
    parts.expect_code(1); // no golden yet; but no divergence
    assert!(!parts.stderr.contains("diverged"), "{parts}");
    let ignored = replay(&["--ignore", "model"]);
    assert!(!ignored.stderr.contains("diverged"), "{ignored}");
    // Or in the project file, for every replay.
    p.write(
        "harness.toml",
        "format = 1\n[replay]\nmatch = [\"messages\"]\n",
    );
    let project = replay(&[]);
    assert!(!project.stderr.contains("diverged"), "{project}");
    p.write(
        "harness.toml",
        "format = 1\n[replay]\nmatch = [\"mesages\"]\n",
    );
    let typo = replay(&[]);
    typo.expect_code(2);
    assert!(typo.stderr.contains("did you mean `messages`?"), "{typo}");
    let flag = p.harness(&["exec", "cassettes/one", "--match", "prompt", "--", "true"]);
    flag.expect_code(2);
    assert!(
        flag.stderr
            .contains("the parts: model, messages, tools, params"),
        "{flag}"
    );
}

/// A scenario whose model answers every request in text: a stub provider for agents that talk.
const TALKER: &str = r#"format = 1
family = "talk"
user = "Talk."
[model]
name = "m"
[[model.rules]]
reply = { text = "ok" }
"#;

/// An agent that holds one conversation of `N` requests (a follow-up after each answer), then
/// exits with `CODE` (default 0).
const FOLLOW_UPS: &str = r#"
import json, os, sys, urllib.request
n = int(sys.argv[1])
code = int(sys.argv[2]) if len(sys.argv) > 2 else 0
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
messages = [{"role": "user", "content": "Talk."}]
for i in range(n):
    req = urllib.request.Request(url, data=json.dumps({"model": "m", "messages": messages}).encode(),
        method="POST", headers={"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        answer = json.loads(r.read())["choices"][0]["message"]["content"]
    messages += [{"role": "assistant", "content": answer}, {"role": "user", "content": f"more {i}"}]
print("said:", answer)
sys.exit(code)
"#;

#[test]
fn the_agents_exit_status_is_part_of_the_verdict() {
    let p = Project::new();
    p.write("scenarios/talk.toml", TALKER);
    p.write("agent.py", FOLLOW_UPS);
    let exec = |extra: &[&str], code: &str| {
        let mut args = vec!["exec", "scenarios/talk.toml"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "python3", "agent.py", "1", code]);
        p.harness(&args)
    };
    exec(&[], "0").expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    exec(&[], "0").expect_code(0);
    // The same conversation, then exit 1: the agent crashed after its final answer.
    let crashed = exec(&[], "1");
    crashed
        .expect_code(1)
        .expect_stdout("expected the command to exit with 0; it exited with 1");
    // Unless it is the agent's way to end: a flag, or the scenario, says so.
    exec(&["--allow-exit", "1"], "1").expect_code(0);
    p.write(
        "scenarios/talk.toml",
        format!("{TALKER}[serve]\nexit_codes = [0, 1]\n"),
    );
    exec(&[], "1").expect_code(0);
}

#[test]
fn a_replay_that_leaves_recorded_exchanges_unused_fails_and_names_them() {
    let p = Project::new();
    p.write("stub.toml", TALKER);
    p.write("agent.py", FOLLOW_UPS);
    let (mut upstream, base) = crate::support::stub_provider(&p, "stub.toml");
    p.harness(&[
        "proxy",
        "--upstream",
        &base,
        "--out",
        "talk",
        "--",
        "python3",
        "agent.py",
        "3",
    ])
    .expect_code(0);
    drop(upstream.stdin.take());
    let _ = upstream.wait();
    let replay = |n: &str| p.harness(&["exec", "talk", "--", "python3", "agent.py", n]);
    replay("3").expect_code(1); // no golden yet
    p.harness(&["accept"]).expect_code(0);
    replay("3").expect_code(0);
    // `harness promote` writes its scenario beside the cassette; the folder still replays.
    p.harness(&["promote", "talk/conversation-1.cassette.json"])
        .expect_code(0);
    let beside = replay("3");
    beside.expect_code(0);
    assert!(
        beside.stderr.contains(
            "replaying the cassettes only; 1 scenario file(s) among them left to `harness run`"
        ),
        "{beside}"
    );
    // The next version stops a request early: not a pass.
    let early = replay("2");
    early.expect_code(1).expect_stdout(
        "every recorded exchange to be replayed; 1 of 3 were not (from exchange 3: the agent stopped asking after request 2)",
    );
}

/// The README's and docs/record-your-agent.md's proxy → exec → accept flow, followed literally in a copy of this
/// project (the stub as the provider), leaves the main job green: the exec golden is neither an
/// orphan nor an invalid file, and a recording kept inside the scenarios folder is left to
/// `exec` by the main job.
#[test]
fn the_readme_record_and_replay_flow_leaves_the_main_job_green() {
    let p = Project::new();
    for part in ["scenarios", "snapshots", "baselines", "harness.toml"] {
        p.copy_from_repo(part, part);
    }
    p.write("my_agent.py", FOLLOW_UPS);
    p.write("stub.toml", TALKER);
    let (mut upstream, base) = crate::support::stub_provider(&p, "stub.toml");
    for out in ["cassettes/tuesday", "scenarios/recorded/tuesday"] {
        p.harness(&[
            "proxy",
            "--upstream",
            &base,
            "--out",
            out,
            "--",
            "python3",
            "my_agent.py",
            "2",
        ])
        .expect_code(0);
        p.harness(&["exec", out, "--", "python3", "my_agent.py", "2"])
            .expect_code(1); // the first replay writes its golden for review
        p.harness(&["accept"]).expect_code(0);
        p.harness(&[
            "exec",
            out,
            "--junit",
            "exec.xml",
            "--",
            "python3",
            "my_agent.py",
            "2",
        ])
        .expect_code(0);
    }
    // "The agent grew a step": new_episodes replays what is recorded and records the rest.
    p.harness(&[
        "proxy",
        "--out",
        "cassettes/tuesday",
        "--upstream",
        &base,
        "--record-mode",
        "new_episodes",
        "--",
        "python3",
        "my_agent.py",
        "3",
    ])
    .expect_code(0)
    .expect_stdout("recorded cassettes/tuesday/conversation-1.cassette.json: 3 request(s)");
    let grown = [
        "exec",
        "cassettes/tuesday",
        "--",
        "python3",
        "my_agent.py",
        "3",
    ];
    p.harness(&grown).expect_code(1); // the golden shows the new step, for review
    p.harness(&["accept"]).expect_code(0);
    p.harness(&grown).expect_code(0);
    drop(upstream.stdin.take());
    let _ = upstream.wait();
    let main_job = p.harness(&[
        "run",
        "scenarios/",
        "--baseline",
        "baselines/scenarios.toml",
    ]);
    main_job.expect_code(0);
    assert!(
        main_job
            .summary()
            .contains("0 invalid files, 0 orphaned goldens"),
        "{main_job}"
    );
    assert!(p.exists("snapshots/cassettes/tuesday/conversation-1.cassette@exec.snap"));
    assert!(p.exists("snapshots/recorded/tuesday/conversation-1.cassette@exec.snap"));
    // Named on its own, an agent's cassette is still refused by `run`, with the command that
    // replays it.
    let named = p.harness(&[
        "run",
        "scenarios/recorded/tuesday/conversation-1.cassette.json",
    ]);
    named
        .expect_code(2)
        .expect_stdout("replay it against the agent with `harness exec CASSETTE -- COMMAND`");
}

#[test]
fn a_provider_never_reached_records_nothing_and_fails() {
    let p = Project::new();
    p.write("agent.py", FOLLOW_UPS);
    // Port 9 (discard) on loopback: nothing listens.
    let run = p.harness(&[
        "proxy",
        "--upstream",
        "http://127.0.0.1:9/v1",
        "--out",
        "nowhere",
        "--",
        "python3",
        "agent.py",
        "1",
    ]);
    run.expect_code(2);
    assert!(
        run.stderr
            .contains("error: the provider was not reached, so nothing was recorded"),
        "{run}"
    );
    assert!(p.files("nowhere", ".cassette.json").is_empty(), "{run}");
}

#[test]
fn a_recording_asked_for_otherwise_is_not_replayed_silently() {
    let p = Project::new();
    p.copy_from_repo("scenarios/record", "scenarios/record");
    let scenario = "scenarios/record/reflex-live.toml";
    let cassette = "scenarios/record/fixtures/cassettes/reflex-live.cassette.json";
    let text = p.read(cassette);
    let model = serde_json::from_str::<serde_json::Value>(&text).expect("a cassette")["model"]
        .as_str()
        .expect("a model")
        .to_owned();
    // As recorded: replayed offline, no key needed.
    let same = p.harness_env(
        &[],
        &[
            "record",
            scenario,
            "--provider",
            "openai",
            "--model",
            &model,
            "--stream",
        ],
    );
    same.expect_code(0);
    assert!(
        same.stdout.contains("replayed (no provider contacted)"),
        "{same}"
    );
    // Another model, provider or stream setting: refused, saying how it was recorded.
    let other = p.harness_env(
        &[],
        &[
            "record",
            scenario,
            "--provider",
            "anthropic",
            "--model",
            "claude-haiku-4-5",
        ],
    );
    other.expect_code(2);
    assert!(
        other.stderr.contains(&format!(
            "was recorded with provider openai, model {model}, streamed answers where this command asks for provider anthropic, model claude-haiku-4-5, whole answers"
        )),
        "{other}"
    );
    assert_eq!(p.read(cassette), text, "the cassette was touched");
}

/// A provider that issues fresh call ids on every recording (`call_<salt>_<n>`), as real ones
/// do: two tool calls, then an answer in text; the conversation's requests count the results.
fn salted_stub(salt: &'static str, answers: usize) -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        for n in 0..answers {
            let (mut s, _) = listener.accept().expect("accept");
            let mut reader = BufReader::new(s.try_clone().expect("clone"));
            let body = crate::support::read_request(&mut reader).body;
            let request: serde_json::Value = serde_json::from_slice(&body).expect("JSON");
            let results = request["messages"]
                .as_array()
                .map_or(0, |m| m.iter().filter(|m| m["role"] == "tool").count());
            let message = if results < 2 {
                serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
                    {"id": format!("call_{salt}_{n}"), "type": "function", "function": {"name": "exec", "arguments": "{}"}}
                ]})
            } else {
                serde_json::json!({"role": "assistant", "content": "done"})
            };
            let finish = if results < 2 { "tool_calls" } else { "stop" };
            let answer = serde_json::json!({
                "id": format!("chatcmpl-{salt}-{n}"), "object": "chat.completion", "created": 1, "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12}
            })
            .to_string();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
                answer.len()
            );
            s.write_all(head.as_bytes()).expect("head");
            s.write_all(answer.as_bytes()).expect("answer");
        }
    });
    (base, handle)
}

#[test]
fn re_recording_an_unchanged_conversation_keeps_its_golden() {
    let p = Project::new();
    let agent = crate::support::repo()
        .join("fixtures/agents/reflex_agent.py")
        .to_string_lossy()
        .into_owned();
    let record = |salt: &'static str, extra: &[&str]| {
        let (base, stub) = salted_stub(salt, 3);
        let mut args = vec![
            "proxy",
            "--upstream",
            &base,
            "--out",
            "rec",
            "--delay",
            "zero",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "python3", &agent, "--api", "openai"]);
        let run = p.harness(&args);
        stub.join().expect("the stub");
        run.expect_code(0);
    };
    record("first", &[]);
    assert!(
        p.read("rec/conversation-1.cassette.json")
            .contains("call_first_0")
    );
    let replay = || p.harness(&["exec", "rec", "--", "python3", &agent, "--api", "openai"]);
    replay().expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    let golden = p.read("snapshots/rec/conversation-1.cassette@exec.snap");
    assert!(golden.contains("calls=[call_0 exec({})]"), "{golden}");
    // The provider issues other ids the second time; the golden is the same bytes.
    record("second", &["--replace"]);
    assert!(
        p.read("rec/conversation-1.cassette.json")
            .contains("call_second_0")
    );
    replay().expect_code(0);
    assert_eq!(
        p.read("snapshots/rec/conversation-1.cassette@exec.snap"),
        golden
    );
}

#[test]
fn a_session_past_what_a_cassette_holds_is_refused_while_recording() {
    let p = Project::new();
    p.write("stub.toml", TALKER);
    p.write("agent.py", TALKS);
    let (mut upstream, base) = crate::support::stub_provider(&p, "stub.toml");
    let run = p.harness(&[
        "proxy",
        "--upstream",
        &base,
        "--out",
        "heavy",
        "--",
        "python3",
        "agent.py",
        "8",
        "Talk.",
        "12",
    ]);
    drop(upstream.stdin.take());
    let _ = upstream.wait();
    // The agent was told at the request that would have passed the limit, and harness says so.
    run.expect_code(1)
        .expect_stdout("refused: HTTP 413")
        .expect_stdout("what a cassette may hold (64 MiB, 10000 exchanges;");
    assert!(
        run.stderr
            .contains("1 model request(s) were refused (413) and not recorded"),
        "{run}"
    );
    // What was recorded before the limit is written, and replays: no cassette exec refuses.
    let cassettes = p.files("heavy", ".cassette.json");
    assert_eq!(cassettes.len(), 1, "{run}");
    let size = std::fs::metadata(p.join(&cassettes[0]))
        .expect("a cassette")
        .len();
    assert!(size <= 64 << 20, "{size} bytes");
    let replay = p.harness(&[
        "exec",
        "heavy",
        "--on-divergence",
        "stop",
        "--",
        "python3",
        "agent.py",
        "8",
        "Talk.",
        "12",
    ]);
    // The four recorded requests replay; the fifth is past the recording.
    assert!(
        replay
            .stderr
            .contains("diverged at request 5 from heavy/conversation-1.cassette: the recording ends after 4 requests"),
        "{replay}"
    );
    assert!(!replay.stdout.contains("error:"), "{replay}");
}

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
const TALKS: &str = r#"
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
