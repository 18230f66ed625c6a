//! Record once, replay for years (issue 27): `harness proxy` records what the agent saw however
//! the provider's bytes arrive, and `harness exec CASSETTE` replays it to the unchanged agent
//! without a divergence. The provider is a stub on 127.0.0.1 that writes its streams the way
//! real ones do (the stream's end and the body's end in separate writes, one byte per write);
//! the agent closes the connection at the stream's terminal event, as the official SDKs do.
//!
//! Mirrors README.md and docs/record-your-agent.md: their proxy → exec → accept flow, followed
//! literally in a copy of this project (the stub as the provider).

use crate::record_modes::TALKS;
use crate::support::Project;
use std::io::{BufReader, Read, Write};
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
