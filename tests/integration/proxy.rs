//! Record any agent's real session and replay it (issue 14): `harness proxy` records the
//! reference agent (`fixtures/agents/reflex_agent.py`, on each provider's API, the Gemini
//! API's key in the query) against a stub provider on 127.0.0.1 —
//! `harness serve` of the reflex scenario, or a raw stub that checks the key and serves a
//! fault — and `harness exec CASSETTE` replays the recording offline, to the same agent and
//! to its next version with a loop detector. A canary key appears nowhere in what is written
//! or printed. Nothing but 127.0.0.1 is contacted.

use crate::support::{Project, repo, stub_provider};
use std::io::{BufReader, Write};
use std::process::Child;

const STUB: &str = "scenarios/serve/reflex-black-box.toml";
const CANARY: &str = "sk-canary-proxy-0123456789abcdefXYZ";

fn agent() -> String {
    repo()
        .join("fixtures/agents/reflex_agent.py")
        .to_string_lossy()
        .into_owned()
}

/// `harness serve STUB` as the upstream provider: the child and its base URL.
fn upstream(p: &Project) -> (Child, String) {
    stub_provider(p, STUB)
}

/// The CSV row of the only case in `file` as column → value.
fn row(p: &Project, file: &str) -> std::collections::BTreeMap<String, String> {
    let text = p.read(file);
    let mut lines = text.lines();
    let header: Vec<String> = lines
        .next()
        .unwrap_or_default()
        .split(',')
        .map(str::to_owned)
        .collect();
    let values = lines.next().unwrap_or_else(|| panic!("no row in\n{text}"));
    header
        .into_iter()
        .zip(values.split(',').map(str::to_owned))
        .collect()
}

#[test]
fn a_recorded_agent_replays_offline_and_its_next_version_diverges_where_it_intervenes() {
    let p = Project::new();
    p.copy_from_repo(STUB, STUB);
    let agent = agent();
    for api in ["openai", "anthropic", "gemini"] {
        for stream in [false, true] {
            let tag = format!("{api}{}", if stream { "-stream" } else { "" });
            let out = format!("recorded/{tag}");
            let mut cmd = vec!["python3", agent.as_str(), "--api", api];
            if stream {
                cmd.push("--stream");
            }
            // Record: the stub caps the bare loop at 25 answers; the 26th request is refused.
            let (mut stub, base) = upstream(&p);
            let mut args = vec![
                "proxy",
                "--upstream",
                base.as_str(),
                "--out",
                out.as_str(),
                "--",
            ];
            args.extend(&cmd);
            let rec = p.harness_env(
                &[
                    ("OPENAI_API_KEY", CANARY),
                    ("ANTHROPIC_API_KEY", CANARY),
                    ("GEMINI_API_KEY", CANARY),
                ],
                &args,
            );
            drop(stub.stdin.take());
            let _ = stub.wait();
            rec.expect_code(0).expect_stdout(&format!(
                "recorded {out}/conversation-1.cassette.json: 26 request(s) on {}",
                match api {
                    "openai" => "/v1/chat/completions",
                    "anthropic" => "/v1/messages",
                    _ => "/v1beta/models/{model}:generateContent",
                }
            ));
            let cassette = p.read(&format!("{out}/conversation-1.cassette.json"));
            for text in [&cassette, &rec.stdout, &rec.stderr] {
                assert!(!text.contains(CANARY), "the key leaked:\n{text}");
            }
            assert!(cassette.contains("\"version\": 2"), "{cassette}");
            assert_eq!(cassette.contains("\"chunks\""), stream, "{tag}");
            assert!(cassette.contains("iteration cap (25) is reached"), "{tag}");
            // Replay to the same agent, offline: every request matches; the golden is new,
            // then holds.
            // `harness exec` of the recording as LABEL (metrics in LABEL.csv), with `before`
            // ahead of the command and `after` behind it.
            let exec = |label: &str, before: &[&str], after: &[&str]| {
                let csv = format!("{label}.csv");
                let mut args = vec!["exec", out.as_str(), "--label", label, "--metrics"];
                args.push(&csv);
                args.extend(before);
                args.push("--");
                args.extend(&cmd);
                args.extend(after);
                p.harness(&args)
            };
            let run = exec("v1", &[], &[]);
            run.expect_code(1);
            assert!(
                run.summary()
                    .contains("1 missing goldens, 0 expectation failures"),
                "{run}"
            );
            let m = row(&p, "v1.csv");
            assert_eq!(m["diverged_at"], "", "{tag}");
            assert_eq!(m["tool_failures"], "25", "{tag}");
            p.harness(&["accept"]).expect_code(0);
            exec("v1", &[], &[]).expect_code(0);
            // The next version warns after three identical failures: the replay diverges at
            // request 4, and under `fail` the case fails with the reason and the diff.
            let run = exec("v2", &[], &["--detector", "escalate"]);
            run.expect_code(1)
                .expect_stdout("diverged at request 4 from recorded/")
                .expect_stdout("the agent appended a user message «LOOP DETECTED")
                .expect_stdout("+++ sent");
            assert!(run.summary().contains("1 expectation failures"), "{run}");
            assert_eq!(row(&p, "v2.csv")["diverged_at"], "4", "{tag}");
            // A diverged run writes no pending golden: a bare `accept` would bless it.
            let pending = |label: &str| {
                p.exists(&format!(
                    "snapshots/recorded/{tag}/conversation-1.cassette@{label}.snap.new"
                ))
            };
            assert!(!pending("v2"), "{tag}");
            assert!(!run.stdout.contains("harness accept"), "{run}");
            // `continue`: the stubborn model keeps repeating itself, and the agent's
            // escalation ends the loop after request 6, three answers after its warning, by
            // exiting 2: its way to end a loop, accepted with --allow-exit (else the case
            // fails with it).
            let run = exec(
                "v2-stubborn-exit",
                &["--on-divergence", "continue"],
                &["--detector", "escalate"],
            );
            run.expect_code(1)
                .expect_stdout("expected the command to exit with 0; it exited with 2");
            // Nor a run whose agent ended in a way the case fails.
            assert!(!pending("v2-stubborn-exit"), "{tag}");
            let run = exec(
                "v2-stubborn",
                &["--on-divergence", "continue", "--allow-exit", "2"],
                &["--detector", "escalate"],
            );
            run.expect_code(1);
            assert!(
                run.summary()
                    .contains("1 missing goldens, 0 expectation failures"),
                "{run}"
            );
            let m = row(&p, "v2-stubborn.csv");
            assert_eq!(m["diverged_at"], "4", "{tag}");
            assert_eq!(m["iterations"], "6", "{tag}");
            assert_eq!(m["outcome"], "stopped", "{tag}");
            let id = format!("recorded/{tag}/conversation-1.cassette@v2-stubborn");
            let golden = p.read(&format!("snapshots/{id}.snap.new"));
            let list = if api == "gemini" {
                "contents"
            } else {
                "messages"
            };
            assert!(
                golden.contains(&format!("diverged request=4 at=\"/{list}/")),
                "{golden}"
            );
            p.harness(&["accept"]).expect_code(0);
        }
    }
    // `script:`: from the divergence on, the scenario's reactive rules answer: the warning
    // gets the apology it scripts.
    let run = p.harness(&[
        "exec",
        "recorded/openai",
        "--label",
        "v2-scripted",
        "--on-divergence",
        &format!("script:{STUB}"),
        "--",
        "python3",
        &agent,
        "--detector",
        "nudge",
    ]);
    run.expect_code(1);
    assert!(
        run.summary()
            .contains("1 missing goldens, 0 expectation failures"),
        "{run}"
    );
    let golden = p.read("snapshots/recorded/openai/conversation-1.cassette@v2-scripted.snap.new");
    assert!(golden.contains("diverged request=4"), "{golden}");
    assert!(
        golden.contains("outcome response iterations=4 text=\"Sorry"),
        "{golden}"
    );
    // Promoted, the recording is a scenario: the recorded answers as turns, the results the
    // agent sent back as its tool's outcomes, runnable under any profile. The 25 calls all sent
    // `{}` and all got the same error, so that is one outcome by arguments (as `import --as
    // scenario` builds them), not 25 by call order: a call a profile skips or rejects does not
    // hand its result to the next one.
    p.harness(&[
        "promote",
        "recorded/openai/conversation-1.cassette.json",
        "--out",
        "scenarios/real/tuesday.toml",
    ])
    .expect_code(0);
    let promoted = p.read("scenarios/real/tuesday.toml");
    assert_eq!(
        promoted.matches("[[tools.outcomes]]").count(),
        1,
        "{promoted}"
    );
    assert!(
        promoted.contains(
            "[[tools.outcomes]]\nerror = \"Error: missing 'command' parameter\"\n\n[tools.outcomes.args]\n"
        ) && !promoted.contains("on_call"),
        "{promoted}"
    );
    assert!(promoted.contains("max_iterations = 26"), "{promoted}");
    let run = p.harness(&[
        "run",
        "scenarios/real/tuesday.toml",
        "--profile",
        "ironclaw",
    ]);
    run.expect_code(1);
    assert!(run.summary().contains("2 cases from 1 files"), "{run}");
    let golden = p.read("snapshots/real/tuesday.snap.new");
    // The stub's refusal of the 26th request stays visible as the last turn.
    assert!(
        golden.contains("outcome response iterations=26 text=\"(unanswerable exchange: HTTP 400"),
        "{golden}"
    );
}

/// A stub provider on 127.0.0.1 that answers from a list, one connection per answer, and
/// keeps what each request's headers said.
fn raw_stub(answers: Vec<Vec<u8>>) -> (String, std::thread::JoinHandle<Vec<String>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let handle = std::thread::spawn(move || {
        let mut seen = Vec::new();
        for answer in answers {
            let (mut s, _) = listener.accept().expect("accept");
            let mut reader = BufReader::new(s.try_clone().expect("clone"));
            seen.push(crate::support::read_request(&mut reader).head);
            s.write_all(&answer).expect("answer");
            // Dropping the socket ends the answer (or cuts a stream short).
        }
        seen
    });
    (base, handle)
}

#[test]
fn faults_pass_through_unchanged_with_the_real_key_and_are_recorded() {
    let p = Project::new();
    let limited = "HTTP/1.1 429 Too Many Requests\r\ncontent-type: application/json\r\nretry-after: 1\r\nx-ratelimit-remaining-requests: 0\r\nconnection: close\r\ncontent-length: 61\r\n\r\n{\"error\":{\"message\":\"Rate limit reached\",\"type\":\"requests\"}}\n";
    let answer = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}"#;
    let ok = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{answer}",
        answer.len()
    );
    // A stream cut after its first event: headers, one chunk, and the socket closes.
    let cut = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n44\r\ndata: {\"id\":\"c2\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\r\n";
    let (base, stub) = raw_stub(vec![limited.into(), ok.into(), cut.into()]);
    // The agent: three requests with its own key; it prints what came back.
    let client = r#"
import json, os, sys, urllib.request, urllib.error
url = os.environ["OPENAI_BASE_URL"] + "/chat/completions"
def post(body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json", "authorization": "Bearer agent-own-key-0123456789"})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()
    except Exception as e:
        return "cut", {}, type(e).__name__
task = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
for body in [task, task, dict(task, stream=True, messages=[{"role": "user", "content": "more"}])]:
    status, headers, text = post(body)
    print(status, headers.get("retry-after"), headers.get("x-ratelimit-remaining-requests"), text)
"#;
    p.write("client.py", client);
    let run = p.harness_env(
        &[("OPENAI_API_KEY", CANARY)],
        &[
            "proxy",
            "--upstream",
            &base,
            "--out",
            "faults",
            "--",
            "python3",
            "client.py",
        ],
    );
    run.expect_code(0);
    let seen = stub.join().expect("the stub");
    // The provider got harness's key, never the agent's.
    for head in &seen {
        assert!(
            head.contains(&format!("authorization: Bearer {CANARY}")),
            "{head}"
        );
        assert!(!head.contains("agent-own-key"), "{head}");
    }
    // The agent got the fault as the provider sent it, headers included.
    let printed: Vec<&str> = run.stderr.lines().collect();
    assert!(
        printed
            .iter()
            .any(|l| l.starts_with("429 1 0 {\"error\":{\"message\":\"Rate limit reached\""))
            || run.stdout.contains("429 1 0"),
        "{run}"
    );
    // The retry joined its conversation; the cut stream is its own, recorded as cut.
    let first = p.read("faults/conversation-1.cassette.json");
    let second = p.read("faults/conversation-2.cassette.json");
    assert!(
        first.contains("\"status\": 429") && first.contains("\"retry-after\": \"1\""),
        "{first}"
    );
    assert!(first.contains("\"content\": \"done\""), "{first}");
    assert!(second.contains("\"kind\": \"cut\""), "{second}");
    for text in [&first, &second, &run.stdout, &run.stderr] {
        assert!(
            !text.contains(CANARY) && !text.contains("agent-own-key-0123456789"),
            "{text}"
        );
    }
    // The next session (record mode `once`, the default) keeps what is recorded: an agent
    // that asks nothing changes nothing.
    let before = p.tree("faults");
    let again = p.harness(&["proxy", "--out", "faults", "--", "true"]);
    again.expect_code(1);
    assert!(again.stderr.contains("made no model request"), "{again}");
    assert_eq!(p.tree("faults"), before);
}

/// Issue 31: the proxy passes on only the endpoints it serves, by plain paths: a path that
/// climbs out of the upstream's base path (raw or percent-escaped `..`), an endpoint it does
/// not serve and a `DELETE` never reach the provider with harness's key; the agent is answered
/// with the reason, and the session says so and fails.
#[test]
fn requests_off_the_api_never_reach_the_provider() {
    let p = Project::new();
    let answer = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}"#;
    let ok = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{answer}",
        answer.len()
    );
    let (base, stub) = raw_stub(vec![ok.into()]);
    let client = r#"
import http.client, json, os, urllib.parse
base = urllib.parse.urlsplit(os.environ["OPENAI_BASE_URL"])
def ask(method, path, body=None):
    c = http.client.HTTPConnection(base.hostname, base.port, timeout=20)
    c.request(method, path, body=json.dumps(body) if body else None, headers={"content-type": "application/json"})
    r = c.getresponse()
    print(method, path, r.status, r.read().decode()[:120])
ask("POST", "/v1/../../tenant-b/chat/completions", {"model": "m", "messages": []})
ask("POST", "/v1/%2e%2e/tenant-b/chat/completions", {"model": "m", "messages": []})
ask("DELETE", "/v1/models/m")
ask("POST", "/v1/files", {"purpose": "x"})
ask("POST", "/v1/chat/completions", {"model": "m", "messages": [{"role": "user", "content": "hi"}]})
"#;
    p.write("client.py", client);
    let run = proxy_client(&p, &base, &[]);
    run.expect_code(1);
    let seen = stub.join().expect("the stub");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(
        seen[0].starts_with("POST /v1/chat/completions "),
        "{seen:?}"
    );
    for (line, status) in [
        ("POST /v1/../../tenant-b/chat/completions", 400),
        ("POST /v1/%2e%2e/tenant-b/chat/completions", 400),
        ("DELETE /v1/models/m", 405),
        ("POST /v1/files", 404),
        ("POST /v1/chat/completions", 200),
    ] {
        assert!(
            run.stdout.contains(&format!("{line} {status}")),
            "{line}\n{run}"
        );
    }
    assert_eq!(
        run.stderr
            .matches("error: a request was not passed on: harness proxy: ")
            .count(),
        4,
        "{run}"
    );
    assert!(p.exists("rec/conversation-1.cassette.json"), "{run}");
}

/// Issue 31: `harness proxy` without a command records until Ctrl-C, writes the cassettes, and
/// exits 130, as its help says (it exited 0).
#[test]
fn a_proxy_without_a_command_ends_on_ctrl_c_with_130() {
    use std::io::Read as _;
    let p = Project::new();
    let answer = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}"#;
    let ok = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{answer}",
        answer.len()
    );
    let (base, stub) = raw_stub(vec![ok.into()]);
    let (mut proxy, addr) = proxy_alone(&p, &base);
    let body = r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#;
    let mut s = std::net::TcpStream::connect(&addr).expect("connect");
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut got = String::new();
    s.read_to_string(&mut got).expect("the answer");
    assert!(got.contains("\"content\":\"done\""), "{got}");
    stub.join().expect("the stub");
    // SAFETY: kill(2) on the child's pid; it touches no memory.
    unsafe { libc::kill(proxy.id() as i32, libc::SIGINT) };
    let status = crate::support::wait_at_most(&mut proxy, std::time::Duration::from_secs(20));
    assert_eq!(status.code(), Some(130));
    assert!(p.exists("rec/conversation-1.cassette.json"));
}

/// Issue 31: a stream the proxy cuts because its own session ended (Ctrl-C) is recorded as cut
/// by the proxy, not as the agent having closed the connection.
#[test]
fn a_stream_cut_by_the_proxys_stop_says_who_cut_it() {
    let p = Project::new();
    // A provider whose stream starts and then never ends.
    let (base, provider) = stalling_stream();
    let (mut proxy, addr) = proxy_alone(&p, &base);
    let body = r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}"#;
    let mut s = std::net::TcpStream::connect(&addr).expect("connect");
    write!(
        s,
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    // The first event has passed through: the answer is under way.
    let mut reader = BufReader::new(s.try_clone().expect("clone"));
    let mut line = String::new();
    while !line.contains("\"Hi\"") {
        line.clear();
        std::io::BufRead::read_line(&mut reader, &mut line).expect("read");
        assert!(!line.is_empty(), "the stream ended early");
    }
    // SAFETY: kill(2) on the child's pid; it touches no memory.
    unsafe { libc::kill(proxy.id() as i32, libc::SIGINT) };
    let status = crate::support::wait_at_most(&mut proxy, std::time::Duration::from_secs(20));
    assert_eq!(status.code(), Some(130));
    let cassette = p.read("rec/conversation-1.cassette.json");
    assert!(
        cassette.contains("the proxy's session ended before the answer did"),
        "{cassette}"
    );
    drop(s);
    drop(provider);
}

/// Issue 31: the proxy asks the provider for plain bodies; one that compresses regardless gets
/// its bytes to the agent as sent, but its conversation is not written as garbage: the session
/// says why and fails.
#[test]
fn a_compressed_answer_is_passed_on_and_not_recorded_as_garbage() {
    let p = Project::new();
    let gzipped: &[u8] =
        b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xab\xae\x05\x00\x43\xbf\xa6\xa3\x02\x00\x00\x00";
    let mut answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: gzip\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        gzipped.len()
    )
    .into_bytes();
    answer.extend_from_slice(gzipped);
    let (base, stub) = raw_stub(vec![answer]);
    let client = r#"
import json, os, urllib.request
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"content-type": "application/json", "accept-encoding": "gzip"})
with urllib.request.urlopen(req, timeout=20) as r:
    print(r.status, r.headers.get("content-encoding"), r.read()[:2].hex())
"#;
    p.write("client.py", client);
    let run = proxy_client(&p, &base, &[]);
    run.expect_code(1);
    let seen = stub.join().expect("the stub");
    assert!(seen[0].contains("accept-encoding: identity"), "{seen:?}");
    assert!(
        run.stdout.contains("200 gzip 1f8b") || run.stderr.contains("200 gzip 1f8b"),
        "{run}"
    );
    assert!(
        run.stderr.contains("came compressed (`content-encoding: gzip`) although harness asked for a plain body; not written"),
        "{run}"
    );
    assert!(!p.exists("rec/conversation-1.cassette.json"), "{run}");
}

/// Issue 31: with a command, a stream cut because harness ended the agent (its
/// `--timeout-ms`) is recorded as cut by the proxy's stop, not as the agent hanging up.
#[test]
fn a_stream_cut_by_the_commands_timeout_says_who_cut_it() {
    let p = Project::new();
    let (base, provider) = stalling_stream();
    let client = r#"
import json, os, urllib.request
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"content-type": "application/json"})
with urllib.request.urlopen(req, timeout=60) as r:
    for line in r:
        print(line.decode().strip(), flush=True)
"#;
    p.write("client.py", client);
    let run = proxy_client(&p, &base, &["--timeout-ms", "2000"]);
    assert!(run.stderr.contains("killed after 2000 ms"), "{run}");
    let cassette = p.read("rec/conversation-1.cassette.json");
    assert!(
        cassette.contains("the proxy's session ended before the answer did"),
        "{cassette}"
    );
    drop(provider);
}

/// Issue 31 (attacked again): a provider that falls silent in the middle of a stream is cut
/// after `--upstream-timeout-ms`, the agent's answer with it, and the recording says why (it
/// held the agent until the command's own timeout).
#[test]
fn a_provider_silent_mid_stream_is_cut_after_the_upstream_timeout() {
    let p = Project::new();
    let (base, provider) = stalling_stream();
    let client = r#"
import json, os, urllib.request
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
    data=json.dumps({"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}).encode(),
    headers={"content-type": "application/json"})
try:
    with urllib.request.urlopen(req, timeout=60) as r:
        for line in r:
            pass
    print("ended")
except Exception as e:
    print("cut:", type(e).__name__)
"#;
    p.write("client.py", client);
    let run = proxy_client(&p, &base, &["--upstream-timeout-ms", "1000"]);
    assert!(
        !run.stderr.contains("killed after"),
        "the agent was released: {run}"
    );
    let cassette = p.read("rec/conversation-1.cassette.json");
    assert!(
        cassette.contains("\"kind\": \"cut\"")
            && cassette
                .contains("the provider sent nothing for 1000 ms in the middle of its answer"),
        "{cassette}"
    );
    drop(provider);
}

/// Issue 31 (attacked again): one request the provider never answered no longer throws away
/// the whole session: the conversation holding it is left out, saying why, and the others are
/// written (exit 1).
#[test]
fn an_unanswered_request_leaves_out_its_conversation_only() {
    let p = Project::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let provider = std::thread::spawn(move || {
        let mut handles = Vec::new();
        for _ in 0..2 {
            let (mut s, _) = listener.accept().expect("accept");
            handles.push(std::thread::spawn(move || {
                let mut reader = BufReader::new(s.try_clone().expect("clone"));
                let request = crate::support::read_request(&mut reader);
                if String::from_utf8_lossy(&request.body).contains("stall") {
                    std::thread::sleep(std::time::Duration::from_secs(4));
                    return;
                }
                let answer = r#"{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}"#;
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{answer}",
                    answer.len()
                );
            }));
        }
        for h in handles {
            let _ = h.join();
        }
    });
    let client = r#"
import json, os, urllib.request, urllib.error
def ask(task):
    req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "m", "messages": [{"role": "user", "content": task}]}).encode(),
        headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            print(task, r.status)
    except urllib.error.HTTPError as e:
        print(task, e.code)
ask("stall, please")
ask("answer, please")
"#;
    p.write("client.py", client);
    let run = proxy_client(&p, &base, &["--upstream-timeout-ms", "1000"]);
    run.expect_code(1);
    assert!(
        run.stderr
            .contains("the provider did not answer request 1 of this conversation"),
        "{run}"
    );
    let written = p.files("rec", ".cassette.json");
    assert_eq!(written.len(), 1, "{run}");
    assert!(
        p.read(&written[0]).contains("answer, please"),
        "{}",
        written[0]
    );
    drop(provider);
}

/// A provider that starts a stream (one event) and then falls silent for 15 s, answering one
/// request: its base URL and its thread.
fn stalling_stream() -> (String, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", listener.local_addr().expect("addr"));
    let provider = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut reader = BufReader::new(s.try_clone().expect("clone"));
        crate::support::read_request(&mut reader);
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n44\r\ndata: {\"id\":\"c2\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n\r\n");
        std::thread::sleep(std::time::Duration::from_secs(15));
    });
    (base, provider)
}

/// `harness proxy --upstream BASE --out rec EXTRA… -- python3 client.py` with the canary key.
fn proxy_client(p: &Project, base: &str, extra: &[&str]) -> crate::support::Run {
    let mut args = vec!["proxy", "--upstream", base, "--out", "rec"];
    args.extend_from_slice(extra);
    args.extend(["--", "python3", "client.py"]);
    p.harness_env(&[("OPENAI_API_KEY", CANARY)], &args)
}

/// `harness proxy --upstream BASE --out rec` with no command (it records until stopped), with
/// the canary key: the child and the address it listens on.
fn proxy_alone(p: &Project, base: &str) -> (Child, String) {
    let mut proxy =
        crate::support::harness_command(p.path(), &["proxy", "--upstream", base, "--out", "rec"])
            .env("OPENAI_API_KEY", CANARY)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start the proxy");
    let addr = crate::support::listening_address(&mut BufReader::new(
        proxy.stdout.as_mut().expect("stdout"),
    ));
    (proxy, addr)
}
