//! Recording and replay against in-process stub providers on 127.0.0.1 (nothing else is ever
//! contacted): an OpenAI-compatible server and an Anthropic one serving fixed bodies, SSE
//! streams, 429, 5xx, a hung request and a cut stream. Each test records with the real binary,
//! then replays offline and compares traces and metrics byte for byte.
//!
//! Mirrors docs/recording.md: `harness record` (`--provider`, `--model`, `--stream`,
//! `--base-url`, `--out`) against the stubs, then `harness run` of the cassette, `harness promote`
//! and `harness lint`.

use crate::support::{Project, Run, repo};
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Response, Uri};
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The bundled recording scenario (its cassette is committed beside it).
const SCENARIO: &str = "scenarios/record/reflex-live.toml";
const TEXT: &str = "Sorry, I do not know what command you wanted.";

/// One scripted stub answer.
pub enum Reply {
    /// A whole body with a status and extra headers.
    Json(u16, Vec<(&'static str, String)>, Value),
    /// An SSE stream (each item one rendered event); `cut` breaks the connection after them.
    Sse(Vec<String>, bool),
    /// Answer only after this long (past the client's timeout).
    Hang(u64),
}

/// What the stub received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

#[derive(Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
}

/// A stub provider on 127.0.0.1, answering requests with its replies in order.
pub struct Stub {
    pub base: String,
    shared: Arc<Shared>,
}

impl Stub {
    pub fn start(replies: Vec<Reply>) -> Self {
        let shared = Arc::new(Shared {
            replies: Mutex::new(replies.into()),
            seen: Mutex::default(),
        });
        let state = Arc::clone(&shared);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                    .await
                    .expect("bind 127.0.0.1");
                tx.send(listener.local_addr().expect("an address"))
                    .expect("report the address");
                let app = axum::Router::new().fallback(
                    move |uri: Uri, headers: HeaderMap, body: Bytes| {
                        let state = Arc::clone(&state);
                        async move { answer(&state, uri, headers, body).await }
                    },
                );
                axum::serve(listener, app).await.expect("serve");
            });
        });
        let addr = rx.recv().expect("the stub's address");
        Self {
            base: format!("http://{addr}"),
            shared,
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.shared.seen.lock().expect("lock").clone()
    }

    pub fn left(&self) -> usize {
        self.shared.replies.lock().expect("lock").len()
    }
}

async fn answer(state: &Shared, uri: Uri, headers: HeaderMap, body: Bytes) -> Response<Body> {
    state.seen.lock().expect("lock").push(Seen {
        path: uri.path().to_owned(),
        headers: headers
            .iter()
            .map(|(k, v)| {
                (
                    k.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let reply = state.replies.lock().expect("lock").pop_front();
    // Every answer echoes the key it was sent in a header (a cassette must drop it).
    let key = ["authorization", "x-api-key"]
        .iter()
        .find_map(|h| headers.get(*h))
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    let response = Response::builder().header("x-echo-key", key);
    match reply {
        None => response.status(500).body(Body::from(
            "{\"error\": {\"message\": \"stub has no reply left\"}}",
        )),
        Some(Reply::Json(status, extra, body)) => {
            let mut r = response
                .status(status)
                .header("content-type", "application/json");
            for (k, v) in extra {
                r = r.header(k, v);
            }
            r.body(Body::from(body.to_string()))
        }
        Some(Reply::Hang(ms)) => {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            response.status(200).body(Body::from("{}"))
        }
        Some(Reply::Sse(events, cut)) => {
            let mut items: Vec<Result<Bytes, std::io::Error>> =
                events.into_iter().map(|e| Ok(Bytes::from(e))).collect();
            if cut {
                items.push(Err(std::io::Error::other("stub cuts the connection")));
            }
            let stream = futures_util::stream::unfold(items.into_iter(), |mut it| async move {
                let item = it.next()?;
                tokio::time::sleep(Duration::from_millis(2)).await;
                Some((item, it))
            });
            response
                .status(200)
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
        }
    }
    .expect("a response")
}

fn data(v: Value) -> String {
    format!("data: {v}\n\n")
}

fn event(name: &str, v: Value) -> String {
    format!("event: {name}\ndata: {v}\n\n")
}

/// An OpenAI stream of one `exec` call whose arguments arrive in these pieces.
fn oa_call(id: &str, pieces: &[&str]) -> Vec<String> {
    let mut v = vec![
        data(
            json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": null}}]}),
        ),
        data(
            json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": "exec", "arguments": ""}}]}}]}),
        ),
    ];
    for p in pieces {
        v.push(data(json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": p}}]}}]})));
    }
    v.push(data(json!({"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})));
    v.push(data(json!({"id": "chatcmpl-1", "choices": [], "usage": {"prompt_tokens": 60, "completion_tokens": 9}})));
    v.push("data: [DONE]\n\n".to_owned());
    v
}

/// An OpenAI stream of text in these pieces.
fn oa_text(pieces: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = pieces
        .iter()
        .map(|p| {
            data(json!({"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {"content": p}}]}))
        })
        .collect();
    v.push(data(json!({"id": "chatcmpl-2", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})));
    v.push(data(json!({"id": "chatcmpl-2", "choices": [], "usage": {"prompt_tokens": 400, "completion_tokens": 12}})));
    v.push("data: [DONE]\n\n".to_owned());
    v
}

/// What the OpenAI-compatible stub serves for the bundled reflex recording: a 429 with
/// retry-after, two streamed `exec({})`, a 500, a stream cut after two events, a third
/// `exec({})`, and the text answer after the nudge.
pub fn reflex_openai_stream() -> Vec<Reply> {
    let mut cut = oa_call("call_cut", &[]);
    cut.truncate(2);
    vec![
        Reply::Json(
            429,
            vec![
                ("retry-after-ms", "30".into()),
                ("x-request-id", "req-1".into()),
            ],
            json!({"error": {"message": "Rate limit reached", "type": "requests"}}),
        ),
        Reply::Sse(oa_call("call_a", &[]), false),
        Reply::Sse(oa_call("call_b", &["{", "}"]), false),
        Reply::Json(
            500,
            vec![],
            json!({"error": {"message": "upstream overloaded"}}),
        ),
        Reply::Sse(cut, true),
        Reply::Sse(oa_call("call_c", &["{}"]), false),
        Reply::Sse(
            oa_text(&["Sorry, I do not know ", "what command you wanted."]),
            false,
        ),
    ]
}

fn record(p: &Project, key_var: &str, key: &str, args: &[&str]) -> Run {
    let mut all = vec!["record"];
    all.extend_from_slice(args);
    p.harness_env(&[(key_var, key)], &all)
}

/// Record against `stub`, replay with `harness run`, and check the two agree byte for byte:
/// the trace (golden text and JSON lines) and the metrics row.
fn record_and_replay(
    p: &Project,
    stub: &Stub,
    provider: &str,
    stream: bool,
    extra: &[&str],
) -> (Run, Run) {
    let base = match provider {
        "openai" => format!("{}/v1", stub.base),
        _ => stub.base.clone(),
    };
    let mut args = vec![
        SCENARIO,
        "--provider",
        provider,
        "--model",
        "gpt-stub",
        "--base-url",
        &base,
        "--traces",
        "rec-traces",
        "--metrics",
        "rec.csv",
    ];
    if stream {
        args.push("--stream");
    }
    args.extend_from_slice(extra);
    let var = if provider == "openai" {
        "OPENAI_API_KEY"
    } else {
        "ANTHROPIC_API_KEY"
    };
    let rec = record(p, var, "test-key-0001", &args);
    rec.expect_code(0);
    assert_eq!(stub.left(), 0, "every stub reply was used\n{rec}");
    let cassette = "scenarios/record/fixtures/cassettes/reflex-live.cassette.json";
    assert!(p.exists(cassette), "{rec}");
    let replay = p.harness_env(
        &[],
        &[
            "run",
            cassette,
            "--traces",
            "run-traces",
            "--metrics",
            "run.csv",
        ],
    );
    // No golden yet: the run fails for that alone, and writes the pending golden.
    replay.expect_code(1).expect_stdout("no golden yet");
    let id = "record/fixtures/cassettes/reflex-live.cassette";
    assert_eq!(
        p.read(&format!("rec-traces/{id}.jsonl")),
        p.read(&format!("run-traces/{id}.jsonl")),
        "trace of the recording and of the replay differ"
    );
    assert_eq!(p.read("rec.csv"), p.read("run.csv"), "metrics differ");
    let pending = p.read(&format!("snapshots/{id}.snap.new"));
    assert!(
        pending.contains("model=gpt-stub"),
        "the trace names the model recorded"
    );
    assert!(
        rec.stdout.starts_with(&pending),
        "record prints the same golden\n{rec}\n{pending}"
    );
    (rec, replay)
}

fn project() -> Project {
    let p = Project::new();
    p.copy_from_repo(SCENARIO, SCENARIO);
    p
}

#[test]
fn openai_stream_with_429_500_and_cut_records_and_replays_identically() {
    let p = project();
    let stub = Stub::start(reflex_openai_stream());
    let started = std::time::Instant::now();
    let (rec, _) = record_and_replay(&p, &stub, "openai", true, &[]);
    // Live retries really wait (30 ms for the 429, 500 ms twice for the 5xx and the cut); the
    // trace keeps those waits on its virtual clock only.
    assert!(
        started.elapsed() >= Duration::from_millis(1030),
        "{:?}",
        started.elapsed()
    );
    // The faults are events in the trace, retried on the virtual clock.
    rec.expect_stdout("provider_error rate_limit attempt=1 message=\"Rate limit reached\" retry_in=30ms")
        .expect_stdout("provider_error server_error attempt=1 message=\"upstream overloaded\" retry_in=500ms")
        .expect_stdout("provider_error server_error attempt=2 message=\"connection cut: the stream ended after 2 events")
        .expect_stdout("tokens=60/9")
        .expect_stdout(&format!("outcome response iterations=4 text=\"{TEXT}\""));
    // Chunk-exact: the text arrived in 2 pieces (+ finish), the calls in their recorded split.
    rec.expect_stdout("chunks=3").expect_stdout("exec({})");
    let seen = stub.seen();
    assert_eq!(seen.len(), 7);
    assert!(seen.iter().all(|s| s.path == "/v1/chat/completions"));
    let first: Value = serde_json::from_str(&seen[0].body).expect("JSON request");
    assert_eq!(first["stream"], json!(true));
    assert_eq!(
        first["messages"][0]["content"],
        json!("You are a coding agent. Use tools to act.")
    );
    assert_eq!(first["tools"][0]["function"]["name"], json!("exec"));
    // The cassette: canonical requests, allow-listed headers, timed chunks, the cut.
    let c: Value = serde_json::from_str(
        &p.read("scenarios/record/fixtures/cassettes/reflex-live.cassette.json"),
    )
    .expect("cassette JSON");
    assert_eq!(c["version"], json!(1));
    assert_eq!(c["scenario"], json!("../../reflex-live.toml"));
    let ex = c["exchanges"].as_array().expect("exchanges");
    assert_eq!(ex.len(), 7);
    assert_eq!(ex[0]["status"], json!(429));
    assert_eq!(
        ex[0]["headers"],
        json!({"content-type": "application/json", "retry-after-ms": "30"})
    );
    assert_eq!(ex[2]["chunks"].as_array().map(Vec::len), Some(7));
    assert_eq!(ex[4]["error"]["kind"], json!("cut"));
    assert_eq!(ex[4]["chunks"].as_array().map(Vec::len), Some(2));
    let keys: Vec<&String> = ex[1]["request"]
        .as_object()
        .expect("object")
        .keys()
        .collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted, "request keys are canonical (sorted)");
    let t: Vec<u64> = ex[6]["chunks"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c["t_ms"].as_u64().expect("t_ms"))
        .collect();
    assert!(t.windows(2).all(|w| w[0] <= w[1]), "{t:?}");
}

/// An Anthropic message with one `exec({})` call.
fn an_call(id: &str) -> Reply {
    Reply::Json(
        200,
        vec![],
        json!({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "stub-model",
            "content": [{"type": "tool_use", "id": id, "name": "exec", "input": {}}],
            "stop_reason": "tool_use", "usage": {"input_tokens": 50, "output_tokens": 7}
        }),
    )
}

#[test]
fn anthropic_with_timeout_and_overload_records_and_replays_identically() {
    let p = project();
    // Timeouts are retried once in this copy of the scenario.
    let text = p.read(SCENARIO)
        + "\n[config.retry.timeout]\nmax_retries = 1\ndelay_ms = 100\nmax_delay_ms = 100\n";
    p.write(SCENARIO, text);
    let stub = Stub::start(vec![
        Reply::Hang(1500),
        an_call("toolu_1"),
        an_call("toolu_2"),
        Reply::Json(
            529,
            vec![],
            json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
        an_call("toolu_3"),
        Reply::Json(
            200,
            vec![],
            json!({
                "id": "msg_2", "type": "message", "role": "assistant",
                "content": [{"type": "text", "text": TEXT}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 300, "output_tokens": 11}
            }),
        ),
    ]);
    let (rec, _) = record_and_replay(&p, &stub, "anthropic", false, &["--timeout-ms", "300"]);
    rec.expect_stdout(
        "provider_error timeout attempt=1 message=\"the request timed out\" retry_in=100ms",
    )
    .expect_stdout("provider_error server_error attempt=1 message=\"Overloaded\"")
    .expect_stdout("tokens=50/7");
    let seen = stub.seen();
    assert!(seen.iter().all(|s| s.path == "/v1/messages"));
    let last: Value = serde_json::from_str(&seen[5].body).expect("JSON");
    assert_eq!(
        last["system"],
        json!("You are a coding agent. Use tools to act.")
    );
    assert_eq!(last["max_tokens"], json!(4096));
    // tool results answer their tool_use ids, in alternating user/assistant turns
    assert_eq!(
        last["messages"][2]["content"][0]["tool_use_id"],
        json!("toolu_1")
    );
    assert!(
        seen[1]
            .headers
            .iter()
            .any(|(k, v)| k == "anthropic-version" && v == "2023-06-01")
    );
}

/// Anthropic stream events for one text answer whose pieces are `pieces`.
fn an_text_stream(pieces: &[&str]) -> Vec<String> {
    let mut v = vec![
        event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "msg", "usage": {"input_tokens": 30, "output_tokens": 1}}}),
        ),
        event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
    ];
    for p in pieces {
        v.push(event("content_block_delta", json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}})));
    }
    v.push(event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    ));
    v.push(event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 15}})));
    v.push(event("message_stop", json!({"type": "message_stop"})));
    v
}

const CANARY: &str = "canary-4711-plain-secret-value";

#[test]
fn a_canary_key_never_reaches_cassette_output_or_trace() {
    let p = Project::new();
    p.write(
        "scenarios/say.toml",
        format!(
            "format = 1\nfamily = \"record\"\nprofile = \"none\"\nsystem = \"Be brief.\"\nuser = \"Repeat my key {CANARY} back.\"\n[model]\nname = \"stub-model\"\n"
        ),
    );
    let (a, b) = CANARY.split_at(10);
    let stub = Stub::start(vec![Reply::Sse(
        an_text_stream(&["Your key is ", a, b, "."]),
        false,
    )]);
    // The canary also comes back in a response header (the stub echoes the key).
    let rec = p.harness_env(
        &[("ANTHROPIC_API_KEY", CANARY)],
        &[
            "record",
            "scenarios/say.toml",
            "--provider",
            "anthropic",
            "--model",
            "stub-model",
            "--base-url",
            &stub.base,
            "--stream",
            "--traces",
            "t1",
        ],
    );
    rec.expect_code(0)
        .expect_stdout("text=\"Your key is [REDACTED].\"");
    let seen = stub.seen();
    assert!(
        seen[0]
            .headers
            .iter()
            .any(|(k, v)| k == "x-api-key" && v == CANARY),
        "the key was sent"
    );
    assert!(seen[0].body.contains(CANARY), "the body carried it");
    assert!(
        rec.stdout.contains("[REDACTED]"),
        "the streamed canary was redacted"
    );
    let cassette = p.read("scenarios/fixtures/cassettes/say.cassette.json");
    // Replay without the key in the environment, and with it.
    let run1 = p.harness_env(
        &[],
        &[
            "run",
            "scenarios/fixtures/cassettes/say.cassette.json",
            "--traces",
            "t2",
        ],
    );
    run1.expect_stdout("no golden yet");
    let run2 = p.harness_env(
        &[("ANTHROPIC_API_KEY", CANARY)],
        &["run", "scenarios/fixtures/cassettes/say.cassette.json"],
    );
    run2.expect_stdout("no golden yet");
    let id = "fixtures/cassettes/say.cassette";
    for (what, text) in [
        ("cassette", cassette.clone()),
        ("record output", format!("{}{}", rec.stdout, rec.stderr)),
        (
            "replay output",
            format!(
                "{}{}{}{}",
                run1.stdout, run1.stderr, run2.stdout, run2.stderr
            ),
        ),
        ("record trace", p.read(&format!("t1/{id}.jsonl"))),
        ("replay trace", p.read(&format!("t2/{id}.jsonl"))),
        ("golden", p.read(&format!("snapshots/{id}.snap.new"))),
    ] {
        for piece in [CANARY, a, b] {
            assert!(!text.contains(piece), "{what} holds {piece:?}:\n{text}");
        }
    }
    assert!(
        cassette.contains("Repeat my key [REDACTED] back."),
        "{cassette}"
    );
    // `harness lint` finds nothing in the scrubbed cassette, but finds a planted key.
    p.harness_env(
        &[("ANTHROPIC_API_KEY", CANARY)],
        &["lint", "scenarios/fixtures"],
    )
    .expect_code(0);
    p.write(
        "fixtures/leak.json",
        "{\n  \"k\": \"sk-ant-api03-abcdefghijklmnop\"\n}\n",
    );
    p.harness_env(&[], &["lint", "fixtures"])
        .expect_code(1)
        .expect_stdout("fixtures/leak.json:2:9: secret-looking string (Anthropic API key)")
        .expect_no_stdout("abcdefghijklmnop");
    // A refusal that quotes the key is redacted too.
    let refusing = Stub::start(vec![Reply::Json(
        401,
        vec![],
        json!({"error": {"message": format!("invalid x-api-key {CANARY}")}}),
    )]);
    let r = p.harness_env(
        &[("ANTHROPIC_API_KEY", CANARY)],
        &[
            "record",
            "scenarios/say.toml",
            "--provider",
            "anthropic",
            "--model",
            "m",
            "--base-url",
            &refusing.base,
            "--out",
            "other.cassette.json",
        ],
    );
    r.expect_code(2);
    assert!(
        r.stderr.contains("HTTP 401: invalid x-api-key [REDACTED]"),
        "{r}"
    );
    assert!(
        !r.stderr.contains(CANARY) && !p.exists("other.cassette.json"),
        "{r}"
    );
}

/// Record the bundled scenario with the OpenAI stub, non-streamed, then accept its golden.
fn recorded_project() -> Project {
    let p = project();
    let text = |t: &str| {
        Reply::Json(
            200,
            vec![],
            json!({
                "id": "chatcmpl-9", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 5}
            }),
        )
    };
    let call = |id: &str| {
        Reply::Json(
            200,
            vec![],
            json!({
                "id": "chatcmpl-9", "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": null, "tool_calls": [
                    {"id": id, "type": "function", "function": {"name": "exec", "arguments": "{}"}}]}, "finish_reason": "tool_calls"}],
                "usage": {"prompt_tokens": 20, "completion_tokens": 5}
            }),
        )
    };
    let stub = Stub::start(vec![call("c1"), call("c2"), call("c3"), text(TEXT)]);
    let base = format!("{}/v1", stub.base);
    record(
        &p,
        "OPENAI_API_KEY",
        "k-0123456789",
        &[
            SCENARIO,
            "--provider",
            "openai",
            "--model",
            "stub-model",
            "--base-url",
            &base,
        ],
    )
    .expect_code(0);
    p.harness(&["run", "scenarios/record/fixtures"])
        .expect_code(1);
    p.harness(&["accept"]).expect_code(0);
    p.harness(&["run", "scenarios/record/fixtures"])
        .expect_code(0);
    p
}

#[test]
fn strict_replay_points_at_a_changed_system_prompt_or_tool_schema() {
    let p = recorded_project();
    let original = p.read(SCENARIO);
    p.write(
        SCENARIO,
        original.replace("Use tools to act.", "Use tools with care."),
    );
    p.harness(&["run", "scenarios/record/fixtures"])
        .expect_code(1)
        .expect_stdout(
            "expected model call 1 to send the request recorded as exchange 1 of 4, but it differs",
        )
        .expect_no_stdout("golden differs")
        .expect_stdout("first difference at `/messages/0/content`")
        .expect_stdout("-      \"content\": \"You are a coding agent. Use tools to act.\",")
        .expect_stdout("+      \"content\": \"You are a coding agent. Use tools with care.\",");
    p.write(
        SCENARIO,
        original.replace(
            "command = { type = \"string\" }",
            "command = { type = \"string\", minLength = 1 }",
        ),
    );
    p.harness(&["run", "scenarios/record/fixtures"])
        .expect_code(1)
        .expect_stdout("first difference at `/tools/0/function/parameters/properties/command")
        .expect_stdout("+              \"minLength\": 1,");
    assert!(
        p.files("snapshots", ".snap.new").is_empty(),
        "a drifted run writes no pending golden"
    );
    // Back to the recorded scenario: green again.
    p.write(SCENARIO, original);
    p.harness(&["run", "scenarios/record/fixtures"])
        .expect_code(0);
}

#[test]
fn record_modes_and_ci() {
    let p = project();
    let args = [
        SCENARIO,
        "--provider",
        "openai",
        "--model",
        "stub-model",
        "--base-url",
        "http://127.0.0.1:9/v1",
    ];
    // `none` never records: no cassette, nothing to replay.
    let mut none = args.to_vec();
    none.extend(["--record-mode", "none"]);
    record(&p, "OPENAI_API_KEY", "k-0123456789", &none).expect_code(2);
    // A broken scenario is located in its file, script or no script.
    p.write(
        "scenarios/bad.toml",
        "format = 1\nfamily = \"x\"\nprofile = \"moltys\"\nuser = \"hi\"\n[model]\nname = \"m\"\n",
    );
    let bad = record(
        &p,
        "OPENAI_API_KEY",
        "k-0123456789",
        &["scenarios/bad.toml", "--provider", "openai", "--model", "m"],
    );
    bad.expect_code(2);
    assert!(
        bad.stderr
            .contains("error: scenarios/bad.toml:3:11: unknown profile `moltys`"),
        "{bad}"
    );
    // Only the scenario's own and compared profiles can be recorded.
    let mut other = args.to_vec();
    other.extend(["--profile", "ironclaw"]);
    let r = record(&p, "OPENAI_API_KEY", "k-0123456789", &other);
    r.expect_code(2);
    assert!(
        r.stderr
            .contains("the scenario has no case for profile `ironclaw`"),
        "{r}"
    );
    // A provider that cannot be reached stops the recording; nothing is written.
    let mut all_modes = args.to_vec();
    all_modes.extend(["--record-mode", "all"]);
    let down = record(&p, "OPENAI_API_KEY", "k-0123456789", &all_modes);
    down.expect_code(2);
    assert!(
        down.stderr
            .contains("cannot connect to http://127.0.0.1:9/v1/chat/completions"),
        "{down}"
    );
    assert!(!p.exists("scenarios/record/fixtures/cassettes/reflex-live.cassette.json"));
    let p = recorded_project();
    // With a cassette, `once` (the default) and CI replay it without contacting anyone: the
    // base URL points at a closed port.
    record(&p, "OPENAI_API_KEY", "k-0123456789", &args)
        .expect_code(0)
        .expect_stdout("replayed (no provider contacted) 4 exchanges");
    // CI forces `none`: even `--record-mode all` replays.
    let mut all = vec!["record"];
    all.extend(args);
    all.extend(["--record-mode", "all"]);
    p.harness_ci("true", &all)
        .expect_code(0)
        .expect_stdout("replayed (no provider contacted) 4 exchanges");
    // … and without a cassette it refuses, saying why.
    let empty = project();
    let ci = empty.harness_ci("true", &all);
    ci.expect_code(2);
    assert!(
        ci.stderr.contains("CI is set, so only replay is allowed"),
        "{ci}"
    );
    // `new` replays the matching start and records from the first request that differs.
    // A new nudge text changes only the 4th request.
    p.write(
        SCENARIO,
        p.read(SCENARIO)
            + "\n[config.reflex]\nnudge_message = \"LOOP DETECTED: stop calling {tool}.\"\n",
    );
    let stub = Stub::start(vec![Reply::Json(
        200,
        vec![],
        json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": TEXT}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 20, "completion_tokens": 2}
        }),
    )]);
    let base = format!("{}/v1", stub.base);
    record(
        &p,
        "OPENAI_API_KEY",
        "k-0123456789",
        &[
            SCENARIO,
            "--provider",
            "openai",
            "--model",
            "stub-model",
            "--base-url",
            &base,
            "--record-mode",
            "new",
        ],
    )
    .expect_code(0)
    .expect_stdout("LOOP DETECTED: stop calling exec.")
    .expect_stdout("recorded 4 exchanges")
    // A cassette recorded again: what makes the main job green again.
    .expect_stdout("review it, `harness accept`, and `harness bless` if its metrics moved");
    assert_eq!(
        stub.seen().len(),
        1,
        "only the changed request went to the provider"
    );
    p.harness(&["run", "scenarios/record/fixtures"])
        .expect_code(1)
        .expect_stdout("golden differs");
}

/// Re-record the bundled cassette against the stub (the documented way to refresh it):
/// `cargo test --test integration record::bless_bundled_cassette -- --ignored`.
#[test]
#[ignore = "writes into the repository"]
fn bless_bundled_cassette() {
    let stub = Stub::start(reflex_openai_stream());
    let base = format!("{}/v1", stub.base);
    let dir = tempfile::tempdir().expect("tempdir");
    let out = repo().join("scenarios/record/fixtures/cassettes/reflex-live.cassette.json");
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_harness"))
        .current_dir(repo())
        .env("OPENAI_API_KEY", "stub-key-not-secret")
        .env_remove("CI")
        .args([
            "record",
            SCENARIO,
            "--provider",
            "openai",
            "--model",
            "stub-model",
            "--stream",
            "--base-url",
            &base,
            "--record-mode",
            "all",
            "--out",
        ])
        .arg(&out)
        .arg("--traces")
        .arg(dir.path())
        .status()
        .expect("run harness");
    assert!(status.success());
    assert_eq!(stub.left(), 0);
}

#[test]
fn promoted_cassette_runs_with_the_replayed_trace() {
    let p = project();
    let cassette = "scenarios/record/fixtures/cassettes/reflex-live.cassette.json";
    let golden = "snapshots/record/fixtures/cassettes/reflex-live.cassette.snap";
    p.copy_from_repo(cassette, cassette);
    p.copy_from_repo(golden, golden);
    // The committed cassette replays against its reviewed golden; `trace` prints it.
    p.harness(&["run", cassette]).expect_code(0);
    let replayed = p.harness(&["trace", cassette]);
    replayed.expect_code(0);
    assert_eq!(replayed.stdout, p.read(golden));
    p.harness(&["promote", cassette])
        .expect_code(0)
        .expect_stdout("wrote scenarios/record/reflex-live.promoted.toml");
    let promoted = p.read("scenarios/record/reflex-live.promoted.toml");
    assert!(promoted.contains("[[model.turns.stream]]"), "{promoted}");
    assert!(promoted.contains("kind = \"rate_limit\""), "{promoted}");
    let trace = p.harness(&["trace", "scenarios/record/reflex-live.promoted.toml"]);
    trace.expect_code(0);
    let body = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(
        body(&trace.stdout),
        body(&p.read(golden)),
        "the promoted scenario replays the recording"
    );
    // Zero delay: the same chunks, only the recorded latencies gone from the virtual clock
    // (the retry waits stay).
    let zero = p
        .read(cassette)
        .replace("\"delay\": \"recorded\"", "\"delay\": \"zero\"");
    p.write(cassette, zero);
    p.harness(&["run", cassette])
        .expect_code(1)
        .expect_stdout("golden differs")
        .expect_stdout("+        0.030s  model_response finish=tool_use chunks=3 calls=[call_a exec({})] tokens=60/9 latency=0ms")
        .expect_stdout("+        1.030s  outcome response iterations=4");
}

#[test]
fn a_broken_cassette_is_bad_input_with_its_location() {
    let p = project();
    p.write(
        "scenarios/x/bad.cassette.json",
        "{\n  \"version\": 1,\n  \"scenario\": 7\n}\n",
    );
    p.write("scenarios/x/new.cassette.json", "{\n  \"version\": 9\n}\n");
    p.harness(&["run", "scenarios/x"])
        .expect_code(2)
        .expect_stdout("error: scenarios/x/bad.cassette.json:3:15: invalid cassette at `scenario`: invalid type: integer `7`, expected a string")
        .expect_stdout("error: scenarios/x/new.cassette.json:2:3: cassette format version 9 is newer than this build reads (2)")
        .expect_stdout("hint: upgrade harness");
    // An exchange edited into a refusal fails the replay, saying so.
    let cassette = "scenarios/record/fixtures/cassettes/reflex-live.cassette.json";
    p.copy_from_repo(cassette, cassette);
    p.write(
        cassette,
        p.read(cassette)
            .replacen("\"status\": 429", "\"status\": 401", 1),
    );
    p.harness(&["run", cassette]).expect_code(1).expect_stdout(
        "expected model call 1 to get an answer, but recorded exchange 1 is a refusal no loop answers (HTTP 401: Rate limit reached)",
    );
}
