use super::*;

#[test]
fn sniffs_requests_only() {
    assert!(sniff("{\"resourceSpans\": []}"));
    assert!(sniff("\n{\n  \"resourceLogs\": []}"));
    assert!(!sniff("{\"messages\": []}"));
    assert!(!sniff("[{\"resourceSpans\": []}]"));
}

#[test]
fn any_values_become_plain_json() {
    let v = serde_json::json!({"kvlistValue": {"values": [
        {"key": "n", "value": {"intValue": "47"}},
        {"key": "l", "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}}}
    ]}});
    assert_eq!(any_value(v), serde_json::json!({"n": 47, "l": ["stop"]}));
    assert_eq!(
        any_value(serde_json::json!({"arrayValue": {}})),
        serde_json::json!([])
    );
}

#[test]
fn a_bad_content_attribute_is_located_at_its_line() {
    let line = r#"{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"a","spanId":"b","name":"chat m","startTimeUnixNano":"1","endTimeUnixNano":"2","attributes":[{"key":"gen_ai.operation.name","value":{"stringValue":"chat"}},{"key":"gen_ai.input.messages","value":{"stringValue":"[{"}}]}]}]}]}"#;
    let got = import(&format!("\n{line}\n"), "t.jsonl");
    assert_eq!(got.errors.len(), 1, "{:?}", got.errors);
    assert_eq!(got.errors[0].line(), 2);
    assert!(
        got.errors[0]
            .message
            .contains("gen_ai.input.messages is not JSON")
    );
}

/// A span `id` under `parent`, an inference span when `chat`.
fn bare(id: &str, parent: &str, chat: bool) -> Span {
    let mut attrs = Attrs::new();
    if chat {
        attrs.insert("gen_ai.operation.name".into(), Value::from("chat"));
    }
    Span {
        trace: "t".into(),
        id: id.into(),
        parent: parent.into(),
        name: id.into(),
        start: 0,
        end: 0,
        attrs,
        events: Vec::new(),
        error: None,
        scope: String::new(),
        scope_version: String::new(),
        counts_scope: None,
        line: 1,
        ordinal: 0,
    }
}

#[test]
fn each_span_s_nearest_inference_ancestor_in_one_pass() {
    // agent > chat1 > step > chat2 > tool; a self-parented chat; a cycle a > b > a.
    let spans = [
        bare("tool", "chat2", false),
        bare("chat2", "step", true),
        bare("step", "chat1", false),
        bare("chat1", "agent", true),
        bare("agent", "", false),
        bare("self", "self", true),
        bare("a", "b", false),
        bare("b", "a", false),
        bare("c", "a", true),
    ];
    let group: Vec<&Span> = spans.iter().collect();
    let got = nearest_inference_ancestors(&group);
    assert_eq!(
        got,
        [
            Some(1),
            Some(3),
            Some(3),
            None,
            None,
            None,
            None,
            None,
            None
        ]
    );
    // 20,000 spans nested one in another, every other one a model call, and a chain that
    // closes on itself: each span is walked once (this used to take minutes).
    let mut deep: Vec<Span> = (0..20_000)
        .map(|i| {
            let parent = if i == 0 {
                String::new()
            } else {
                format!("s{}", i - 1)
            };
            bare(&format!("s{i}"), &parent, i % 2 == 0)
        })
        .collect();
    deep.extend(
        (0..20_000).map(|i| bare(&format!("c{i}"), &format!("c{}", (i + 1) % 20_000), false)),
    );
    let group: Vec<&Span> = deep.iter().collect();
    let got = nearest_inference_ancestors(&group);
    assert_eq!(got[19_999], Some(19_998));
    assert_eq!(got[19_998], Some(19_996));
    assert_eq!(got[1], Some(0));
    assert!(got[20_000..].iter().all(Option::is_none));
}

#[test]
fn a_span_of_the_wrong_shape_is_located_by_path() {
    let text = "{\"resourceSpans\":[{\"scopeSpans\":[{\"spans\":[{\"spanId\":\"b\"}]}]}]}\n";
    let got = import(text, "t.jsonl");
    let e = &got.errors[0];
    assert_eq!(e.line(), 1);
    assert!(e.message.contains("traceId"), "{e:?}");
    assert!(
        e.message
            .contains("resourceSpans[0].scopeSpans[0].spans[0]"),
        "{e:?}"
    );
}

fn chat_line(trace: &str, input: &str, output: &str, tokens: &str) -> String {
    let attr = |k: &str, v: &str| {
        format!(
            r#"{{"key":"{k}","value":{{"stringValue":{}}}}}"#,
            serde_json::to_string(v).unwrap()
        )
    };
    format!(
        r#"{{"resourceSpans":[{{"scopeSpans":[{{"spans":[{{"traceId":"{trace}","spanId":"s1","name":"chat m","startTimeUnixNano":"1000000","endTimeUnixNano":"2000000","attributes":[{},{},{},{{"key":"gen_ai.usage.input_tokens","value":{{"intValue":"{tokens}"}}}},{{"key":"gen_ai.usage.output_tokens","value":{{"intValue":"1"}}}}]}}]}}]}}]}}"#,
        attr("gen_ai.operation.name", "chat"),
        attr("gen_ai.input.messages", input),
        attr("gen_ai.output.messages", output),
    )
}

#[test]
fn a_cut_first_line_loses_only_itself() {
    let good = chat_line(
        "t1",
        "[]",
        r#"[{"role":"assistant","parts":[{"type":"text","content":"hi"}]}]"#,
        "3",
    );
    let text = format!("{}\n{good}\n", &good[..40]);
    let got = import(&text, "t.jsonl");
    assert_eq!(got.errors.len(), 1, "{:?}", got.errors);
    assert_eq!(got.errors[0].line(), 1);
    assert_eq!(got.runs.len(), 1);
}

#[test]
fn empty_call_ids_are_no_ids_and_huge_token_counts_do_not_overflow() {
    let call = r#"[{"role":"assistant","parts":[{"type":"tool_call","id":"","name":"ls","arguments":{}}]}]"#;
    let first = chat_line(
        "t1",
        r#"[{"role":"user","parts":[{"type":"text","content":"go"}]}]"#,
        call,
        "18446744073709551615",
    );
    let answered = r#"[{"role":"user","parts":[{"type":"text","content":"go"}]},{"role":"assistant","parts":[{"type":"tool_call","id":"","name":"ls","arguments":{}}]},{"role":"tool","parts":[{"type":"tool_call_response","id":"","response":"a.txt"}]}]"#;
    let second = chat_line(
        "t1",
        answered,
        r#"[{"role":"assistant","parts":[{"type":"text","content":"done"}]}]"#,
        "5",
    )
    .replace("\"s1\"", "\"s2\"")
    .replace("\"1000000\"", "\"3000000\"")
    .replace("\"2000000\"", "\"4000000\"");
    let got = import(&format!("{first}\n{second}\n"), "t.jsonl");
    assert!(got.errors.is_empty(), "{:?}", got.errors);
    let v = crate::detector::View::from_events(&got.runs[0].events);
    assert_eq!(
        v.calls.len(),
        1,
        "the result answers the call without an id"
    );
    assert_eq!(v.calls[0].result, "a.txt");
    assert_eq!(v.tokens_after(0), Some(6));
    assert_eq!(v.responses[0].1, u64::MAX, "saturated, not wrapped");
}

#[test]
fn spans_sharing_an_id_or_parented_on_themselves_are_read_and_said() {
    let zero = "0000000000000000";
    let first = chat_line(
        "t1",
        r#"[{"role":"user","parts":[{"type":"text","content":"go"}]}]"#,
        r#"[{"role":"assistant","parts":[{"type":"text","content":"one"}]}]"#,
        "3",
    )
    .replace("\"s1\"", &format!("\"{zero}\",\"parentSpanId\":\"{zero}\""));
    let second = chat_line(
        "t1",
        r#"[{"role":"user","parts":[{"type":"text","content":"go"}]}]"#,
        r#"[{"role":"assistant","parts":[{"type":"text","content":"two"}]}]"#,
        "4",
    )
    .replace("\"s1\"", &format!("\"{zero}\""))
    .replace("\"1000000\"", "\"3000000\"")
    .replace("\"2000000\"", "\"4000000\"");
    // The first line sent twice is one span; the second shares its id and is another.
    let got = import(&format!("{first}\n{first}\n{second}\n"), "t.jsonl");
    assert!(got.errors.is_empty(), "{:?}", got.errors);
    assert_eq!(got.runs.len(), 1, "{:?} {:?}", got.note, got.warnings);
    let v = crate::detector::View::from_events(&got.runs[0].events);
    assert_eq!(v.responses.len(), 2, "both model calls read");
    // (The second call's input repeats the first's with no answer in it: the same prompt, no
    // second turn of the user.)
    assert_eq!(got.warnings.len(), 3, "{:?}", got.warnings);
    assert!(
        got.warnings[2].contains("holds no answer of the model"),
        "{:?}",
        got.warnings
    );
    assert!(
        got.warnings[0].starts_with(&format!("2 spans of trace `t1` share the id `{zero}`")),
        "{:?}",
        got.warnings
    );
    assert!(
        got.warnings[1].contains(&format!("`{zero}` (line 1)")),
        "{:?}",
        got.warnings
    );
    // A cycle of parent ids is said where it closes; its spans are read.
    let cycle = [("a", "b"), ("b", "a")]
        .iter()
        .map(|(id, parent)| {
            chat_line(
                "t2",
                "[]",
                r#"[{"role":"assistant","parts":[{"type":"text","content":"x"}]}]"#,
                "1",
            )
            .replace("\"s1\"", &format!("\"{id}\",\"parentSpanId\":\"{parent}\""))
        })
        .collect::<Vec<_>>()
        .join("\n");
    let got = import(&cycle, "t.jsonl");
    assert_eq!(got.runs.len(), 1, "{:?}", got.note);
    assert!(
        got.warnings
            .iter()
            .any(|w| w.starts_with("parent ids that go round in a cycle")
                && w.contains("`b` (line 2)")),
        "{:?}",
        got.warnings
    );
    // Without such spans, nothing is said.
    let clean = chat_line(
        "t1",
        "[]",
        r#"[{"role":"assistant","parts":[{"type":"text","content":"hi"}]}]"#,
        "3",
    );
    assert!(import(&clean, "t.jsonl").warnings.is_empty());
}

#[test]
fn spans_without_model_calls_are_an_error_naming_them() {
    // An instrumentation harness does not read is said, never skipped: the spans it saw.
    let text = r#"{"resourceSpans":[{"scopeSpans":[{"scope":{"name":"web"},"spans":[{"traceId":"a","spanId":"b","name":"GET /","startTimeUnixNano":"1","endTimeUnixNano":"2"}]}]}]}"#;
    let got = import(&format!("\n{text}"), "t.json");
    assert!(got.runs.is_empty() && got.note.is_none());
    assert_eq!(got.errors.len(), 1);
    let e = &got.errors[0];
    assert_eq!(e.line(), 2);
    assert!(
        e.message
            .contains("1 span(s) and no model call among them: `GET /` from `web` (1)"),
        "{e:?}"
    );
    // A file with no span at all (logs only, or empty) is a note.
    let got = import("", "t.json");
    assert!(got.runs.is_empty() && got.errors.is_empty());
    assert_eq!(got.note.as_deref(), Some("an OTLP file with no span"));
}

/// An OTLP JSON line of one trace's spans.
pub(super) fn line_of(spans: &[Value]) -> String {
    serde_json::json!({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}).to_string()
}

/// A span of trace `t`: id, parent, name, start and end (ns), string attributes, status.
pub(super) fn span_json(
    id: &str,
    parent: &str,
    name: &str,
    (start, end): (u64, u64),
    attrs: &[(&str, &str)],
    error: Option<&str>,
) -> Value {
    let attributes: Vec<Value> = attrs
        .iter()
        .map(|(k, v)| serde_json::json!({"key": k, "value": {"stringValue": v}}))
        .collect();
    let mut s = serde_json::json!({
        "traceId": "t", "spanId": id, "parentSpanId": parent, "name": name,
        "startTimeUnixNano": start.to_string(), "endTimeUnixNano": end.to_string(),
        "attributes": attributes,
    });
    if let Some(message) = error {
        s["status"] = serde_json::json!({"code": 2, "message": message});
    }
    s
}

/// The `invoke_agent` span the chat and tool spans sit under.
pub(super) fn agent_span() -> Value {
    span_json(
        "agent",
        "",
        "invoke_agent a",
        (0, 200),
        &[("gen_ai.operation.name", "invoke_agent")],
        None,
    )
}

/// A chat span answering `calls` (`[(id, name, arguments JSON)]`) or `text`.
pub(super) fn chat_json(id: &str, at: u64, calls: &[(&str, &str, &str)], text: &str) -> Value {
    let parts: Vec<Value> = if calls.is_empty() {
        vec![serde_json::json!({"type": "text", "content": text})]
    } else {
        calls
            .iter()
            .map(|(id, name, args)| serde_json::json!({"type": "tool_call", "id": id, "name": name, "arguments": serde_json::from_str::<Value>(args).unwrap_or_default()}))
            .collect()
    };
    let output = serde_json::json!([{"role": "assistant", "parts": parts}]).to_string();
    chat_span(id, at, None, &output)
}

/// A chat span under `agent` answering `output` (GenAI JSON), given `input` when some.
pub(super) fn chat_span(id: &str, at: u64, input: Option<&str>, output: &str) -> Value {
    let mut attrs = vec![("gen_ai.operation.name", "chat")];
    if let Some(input) = input {
        attrs.push(("gen_ai.input.messages", input));
    }
    attrs.push(("gen_ai.output.messages", output));
    span_json(id, "agent", "chat m", (at, at + 10), &attrs, None)
}

fn tool_json(
    id: &str,
    call: &str,
    at: u64,
    args: &str,
    result: &str,
    error: Option<&str>,
) -> Value {
    span_json(
        id,
        "agent",
        "execute_tool exec",
        (at, at + 5),
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "exec"),
            ("gen_ai.tool.call.id", call),
            ("gen_ai.tool.call.arguments", args),
            ("gen_ai.tool.call.result", result),
        ],
        error,
    )
}

/// `(ok, rule)` of each tool call's end, in order.
fn ends(run: &Run) -> Vec<(bool, Option<String>)> {
    run.events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ToolCallEnd { ok, rule, .. } => Some((*ok, rule.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn tool_results_fail_by_exec_s_rules_then_the_span_status() {
    let traceback =
        "Traceback (most recent call last):\n  File \"t.py\", line 1\nValueError: no command";
    let text = line_of(&[
        agent_span(),
        chat_json(
            "c1",
            10,
            &[
                ("k1", "exec", "{}"),
                ("k2", "exec", r#"{"command":"ls"}"#),
                ("k3", "exec", r#"{"command":"x"}"#),
            ],
            "",
        ),
        // A traceback on a span whose status is unset: failed, as exec reads it.
        tool_json("t1", "k1", 30, "{}", traceback, None),
        // Plain output: a success.
        tool_json("t2", "k2", 40, r#"{"command":"ls"}"#, "a.txt", None),
        // Status ERROR and text no shape reads as failed: failed by the span's status.
        tool_json(
            "t3",
            "k3",
            50,
            r#"{"command":"x"}"#,
            "nothing here",
            Some("boom"),
        ),
        chat_json("c2", 100, &[], "done"),
    ]);
    let got = import(&text, "t.jsonl");
    assert!(got.errors.is_empty(), "{:?}", got.errors);
    assert_eq!(
        ends(&got.runs[0]),
        [
            (false, Some("exception".to_owned())),
            (true, None),
            (false, Some(SPAN_STATUS_RULE.to_owned())),
        ]
    );
    // `--no-builtin-failures`: only patterns and the status; `--failure`: a pattern first.
    let none = FailureRules::new(&[], false).expect("rules");
    assert_eq!(
        ends(&import_reading(&text, "t.jsonl", &none).runs[0]),
        [
            (true, None),
            (true, None),
            (false, Some(SPAN_STATUS_RULE.to_owned()))
        ]
    );
    let pattern = FailureRules::new(&["a\\.txt".to_owned()], true).expect("rules");
    assert_eq!(
        ends(&import_reading(&text, "t.jsonl", &pattern).runs[0]),
        [
            (false, Some("exception".to_owned())),
            (false, Some("pattern 1".to_owned())),
            (false, Some(SPAN_STATUS_RULE.to_owned())),
        ]
    );
}

#[test]
fn what_the_spans_do_not_show_is_said_not_made_up() {
    let agent = span_json(
        "agent",
        "",
        "invoke_agent a",
        (0, 500),
        &[("gen_ai.operation.name", "invoke_agent")],
        None,
    );
    // A tool span of no call of the answer before it (which recorded its calls): not a call.
    let text = line_of(&[
        agent.clone(),
        chat_json("c1", 10, &[("k1", "exec", "{}")], ""),
        tool_json("t1", "zzz", 30, "{}", "a.txt", None),
    ]);
    let got = import(&text, "t.jsonl");
    let v = crate::detector::View::from_events(&got.runs[0].events);
    assert!(v.calls.is_empty(), "no call made up: {:?}", v.calls);
    let said = got.warnings.join("\n");
    assert!(said.contains("1 tool span(s) answer no call"), "{said}");
    // The call the model asked for, never seen run or answered: left out, and said.
    assert!(
        said.contains("1 call(s) the model asked for were never seen run"),
        "{said}"
    );
    // An instrumentation that records the prompt alone: no nudges read from it.
    let prompt = serde_json::json!([
        {"role": "system", "parts": [{"type": "text", "content": "be brief"}]},
        {"role": "user", "parts": [{"type": "text", "content": "list"}]},
    ])
    .to_string();
    let calls = serde_json::json!([{"role": "assistant", "parts": [{"type": "tool_call", "id": "k1", "name": "exec", "arguments": {}}]}]).to_string();
    let done =
        serde_json::json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])
            .to_string();
    let chat = |id: &str, at: u64, output: &str| chat_span(id, at, Some(&prompt), output);
    let text = line_of(&[
        agent,
        chat("c1", 10, &calls),
        tool_json("t1", "k1", 30, "{}", "a.txt", None),
        chat("c2", 50, &done),
    ]);
    let got = import(&text, "t.jsonl");
    assert!(
        !got.runs[0]
            .events
            .iter()
            .any(|e| matches!(e.event, Event::Intervention { .. })),
        "no nudge made of the repeated prompt"
    );
    let said = got.warnings.join("\n");
    assert!(said.contains("holds no answer of the model"), "{said}");
}

#[test]
fn a_framework_s_python_call_record_is_its_keyword_arguments() {
    let v = serde_json::json!({"args": [], "kwargs": {"command": "ls"}, "sanitize_inputs_outputs": true});
    assert_eq!(keyword_args(v), serde_json::json!({"command": "ls"}));
    // An object that only has such a key is the arguments as they are.
    let own = serde_json::json!({"kwargs": {"a": 1}, "path": "x"});
    assert_eq!(keyword_args(own.clone()), own);
}

#[test]
fn two_services_calls_at_one_time_are_not_one_call() {
    // Two traces of one span each, other scopes, one within the other's time, nothing shown in
    // common (no response id, no messages, other token counts): two runs, not one merged call.
    // (The same output token count would be read as evidence of one call: the rule's limit.)
    let call = |trace: &str, scope: &str, tokens: &str, output: &str| {
        serde_json::json!({"resourceSpans": [{"scopeSpans": [{"scope": {"name": scope}, "spans": [{
        "traceId": trace, "spanId": "s", "name": "chat gpt-4o",
        "startTimeUnixNano": "1000", "endTimeUnixNano": "9000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": tokens}},
            {"key": "gen_ai.usage.output_tokens", "value": {"intValue": output}},
        ]}]}]}]})
        .to_string()
    };
    let text = format!(
        "{}\n{}\n",
        call("a1", "svc-a", "10", "5"),
        call("b2", "svc-b", "999", "777")
    );
    let got = import(&text, "t.jsonl");
    assert_eq!(got.runs.len(), 2, "{:?}", got.warnings);
    assert!(!got.warnings.iter().any(|w| w.contains("traced twice")));
}

/// An OpenInference `LLM` span under `agent` as smolagents' instrumentation writes one: the
/// `prompt` messages (role, text), then each of `results` as a `tool-response` (no call id),
/// and an answer of `calls` (`(id, arguments JSON)`; arguments `""` recorded none) of `exec`,
/// or of the text `done` when there are none.
pub(super) fn openinference_llm(
    id: &str,
    at: u64,
    prompt: &[(&str, &str)],
    results: &[&str],
    calls: &[(&str, &str)],
) -> Value {
    let mut attrs: Vec<(String, String)> = vec![("openinference.span.kind".into(), "LLM".into())];
    let inputs = prompt
        .iter()
        .copied()
        .chain(results.iter().map(|r| ("tool-response", *r)));
    for (i, (role, text)) in inputs.enumerate() {
        let at = format!("llm.input_messages.{i}.message");
        attrs.push((format!("{at}.role"), role.into()));
        attrs.push((format!("{at}.content"), text.into()));
    }
    for (i, (call, args)) in calls.iter().enumerate() {
        let at = format!("llm.output_messages.0.message.tool_calls.{i}.tool_call");
        attrs.push((format!("{at}.id"), (*call).into()));
        attrs.push((format!("{at}.function.name"), "exec".into()));
        if !args.is_empty() {
            attrs.push((format!("{at}.function.arguments"), (*args).into()));
        }
    }
    if calls.is_empty() {
        attrs.push((
            "llm.output_messages.0.message.content".into(),
            "done".into(),
        ));
    }
    let pairs: Vec<(&str, &str)> = attrs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    span_json(id, "agent", "generate", (at, at + 10), &pairs, None)
}

#[test]
fn results_of_an_instrumentation_without_history_answer_the_calls_in_order() {
    // smolagents under OpenInference: each call's input is the prompt and every result so far
    // (`tool-response`, no call id), never the model's answers.
    let agent = span_json(
        "agent",
        "",
        "invoke_agent a",
        (0, 500),
        &[("gen_ai.operation.name", "invoke_agent")],
        None,
    );
    let prompt = [("system", "be brief"), ("user", "list")];
    let flat = |id: &str, at: u64, results: &[&str], call: Option<&str>| {
        let calls: Vec<(&str, &str)> = call.map(|c| (c, "")).into_iter().collect();
        openinference_llm(id, at, &prompt, results, &calls)
    };
    let text = line_of(&[
        agent,
        flat("c1", 10, &[], Some("k1")),
        flat("c2", 30, &["Error: first\n"], Some("k2")),
        flat("c3", 50, &["Error: first\n", "a.txt\n"], None),
    ]);
    let got = import(&text, "t.jsonl");
    let v = crate::detector::View::from_events(&got.runs[0].events);
    let read: Vec<(bool, &str)> = v
        .calls
        .iter()
        .map(|c| (c.failed, c.result.as_str()))
        .collect();
    assert_eq!(read, [(true, "Error: first"), (false, "a.txt")]);
    assert!(
        !got.runs[0]
            .events
            .iter()
            .any(|e| matches!(e.event, Event::Intervention { .. })),
        "the repeated prompt is no nudge"
    );
}

#[test]
fn a_zero_length_record_of_the_answer_is_its_call_s_answer() {
    // Logfire streamed: the request's span (no answer), then a `log` span of no length with it.
    let answer =
        serde_json::json!([{"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}])
            .to_string();
    let text = line_of(&[
        span_json(
            "agent",
            "",
            "invoke_agent a",
            (0, 100),
            &[("gen_ai.operation.name", "invoke_agent")],
            None,
        ),
        span_json(
            "r",
            "agent",
            "Chat Completion",
            (10, 20),
            &[("gen_ai.operation.name", "chat")],
            None,
        ),
        span_json(
            "l",
            "agent",
            "streaming response",
            (25, 25),
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.output.messages", &answer),
            ],
            None,
        ),
    ]);
    let got = import(&text, "t.jsonl");
    let answers = got.runs[0]
        .events
        .iter()
        .filter(|e| matches!(e.event, Event::ModelResponse { .. }))
        .count();
    assert_eq!(answers, 1, "one call, not an empty answer and another");
    assert!(
        got.warnings.iter().any(|w| w.contains("traced twice")),
        "{:?}",
        got.warnings
    );
}

/// Spans of one scope, as one request line.
fn scoped_line(scope: &str, spans: &[Value]) -> String {
    serde_json::json!({"resourceSpans": [{"scopeSpans": [{"scope": {"name": scope}, "spans": spans}]}]})
        .to_string()
}

/// The model answers' token counts of a run (`None`: unknown).
fn answer_tokens(run: &Run) -> Vec<Option<(u64, u64)>> {
    run.events
        .iter()
        .filter_map(|e| match &e.event {
            Event::ModelResponse {
                input_tokens,
                output_tokens,
                tokens_unknown,
                ..
            } => Some((!tokens_unknown).then_some((*input_tokens, *output_tokens))),
            _ => None,
        })
        .collect()
}

#[test]
fn a_refused_request_is_no_server_error() {
    let s = bare("a", "", true);
    let kind = |m: &str| messages::fault_of(&s, m);
    assert_eq!(
        kind("Error code: 400 - {'error': {'message': 'the iteration cap (5) is reached'}}"),
        FaultKind::Refused
    );
    assert_eq!(
        kind("BadRequestError: invalid tool schema"),
        FaultKind::Refused
    );
    assert_eq!(
        kind("AuthenticationError: invalid x-api-key"),
        FaultKind::Refused
    );
    assert_eq!(kind("Error code: 429 - rate limited"), FaultKind::RateLimit);
    assert_eq!(
        kind("InternalServerError: Error code: 500"),
        FaultKind::ServerError
    );
    assert_eq!(kind("Overloaded"), FaultKind::ServerError);
}

/// A run `harness exec` served to its cap ends at the cap, as exec's own trace says, whatever
/// words the client wrapped the refusal in; another 400 is still a refused request.
#[test]
fn harness_s_refusal_at_the_cap_ends_the_run_at_the_cap() {
    let refusal = crate::vocabulary::cap_refusal(2);
    for (wrapped, capped) in [
        (format!("Error code: 400 - {refusal}"), true),
        (
            format!("Error getting response: {{'error': \"Error code: 400 - {refusal}\"}}"),
            true,
        ),
        // LiteLLM prints a streamed error body as Python bytes: the quote is escaped.
        (
            format!(
                "AnthropicException - b'{{\"message\":\"{}\"}}'",
                refusal.replace('\'', "\\'")
            ),
            true,
        ),
        (
            "Error code: 400 - the iteration cap (2) is reached".to_owned(),
            false,
        ),
    ] {
        let mut refused = chat_span("c3", 60, None, "[]");
        refused["status"] = serde_json::json!({"code": 2, "message": wrapped});
        let text = line_of(&[
            agent_span(),
            chat_json("c1", 10, &[("k1", "exec", "{}")], ""),
            tool_json("t1", "k1", 30, "{}", "Error: missing", None),
            chat_json("c2", 40, &[("k2", "exec", "{}")], ""),
            tool_json("t2", "k2", 50, "{}", "Error: missing", None),
            refused,
        ]);
        let got = import(&text, "f.jsonl");
        assert_eq!(got.runs.len(), 1, "{wrapped}");
        let events: Vec<&Event> = got.runs[0].events.iter().map(|e| &e.event).collect();
        let faults = events
            .iter()
            .filter(|e| matches!(e, Event::ProviderError { .. }))
            .count();
        let cap = match events.first() {
            Some(Event::RunStart { max_iterations, .. }) => *max_iterations,
            _ => panic!("no run_start"),
        };
        let Some(Event::Outcome {
            outcome,
            iterations,
            detail,
            ..
        }) = events.last()
        else {
            panic!("no outcome")
        };
        if capped {
            assert_eq!(*outcome, OutcomeKind::MaxIterations, "{wrapped}");
            assert_eq!(*iterations, 2);
            assert_eq!(
                detail.as_deref(),
                Some(crate::vocabulary::refused_past_cap(2).as_str())
            );
            assert_eq!((faults, cap), (0, 2), "{wrapped}");
        } else {
            assert_eq!(*outcome, OutcomeKind::Error, "{wrapped}");
            assert_eq!((faults, cap), (1, 0), "{wrapped}");
        }
    }
}

#[test]
fn a_span_that_records_no_call_beside_one_that_does_is_no_call() {
    // LlamaIndex under OpenInference: `_prepare_chat_with_tools` is an `LLM` span with the
    // model's name and nothing of a call, before the call's own span under the same step.
    let agent = span_json(
        "agent",
        "",
        "invoke_agent a",
        (0, 500),
        &[("gen_ai.operation.name", "invoke_agent")],
        None,
    );
    let prep = |id: &str, at: u64| {
        span_json(
            id,
            "agent",
            "OpenAI._prepare_chat_with_tools",
            (at, at + 2),
            &[
                ("openinference.span.kind", "LLM"),
                ("llm.model_name", "gpt-4o-mini"),
                ("input.value", "{\"tools\": []}"),
            ],
            None,
        )
    };
    let text = line_of(&[
        agent.clone(),
        prep("p1", 5),
        chat_json("c1", 10, &[("k1", "exec", "{}")], ""),
        tool_json("t1", "k1", 30, "{}", "a.txt", None),
        prep("p2", 45),
        chat_json("c2", 50, &[], "done"),
    ]);
    let got = import(&text, "t.jsonl");
    assert_eq!(
        answer_tokens(&got.runs[0]).len(),
        2,
        "two answers, no empty ones"
    );
    assert!(
        !got.runs[0]
            .events
            .iter()
            .any(|e| matches!(e.event, Event::Intervention { .. })),
        "no nudge"
    );
    let said = got.warnings.join("\n");
    assert!(
        said.contains("2 model-call span(s) that record no call"),
        "{said}"
    );
    assert!(!said.contains("content capture off"), "{said}");
    // Content capture off: every call's span records nothing, and each is still a call.
    let bare = |id: &str, at: u64| {
        span_json(
            id,
            "agent",
            "chat m",
            (at, at + 10),
            &[("gen_ai.operation.name", "chat")],
            None,
        )
    };
    let got = import(
        &line_of(&[agent, bare("c1", 10), bare("c2", 50)]),
        "t.jsonl",
    );
    assert_eq!(answer_tokens(&got.runs[0]).len(), 2);
    assert!(got.warnings.join("\n").contains("content capture off"));
}

#[test]
fn one_step_outcome_answers_every_call_of_the_step() {
    // smolagents: a step of two calls, one of which fails its argument check, sends the model
    // one outcome (`Error:`) for both, whatever the other call's tool span recorded; a
    // successful step's `Observation:` heading is not part of the result.
    let agent = span_json(
        "agent",
        "",
        "invoke_agent a",
        (0, 500),
        &[("gen_ai.operation.name", "invoke_agent")],
        None,
    );
    let llm = |id: &str, at: u64, results: &[&str], calls: &[(&str, &str)]| {
        openinference_llm(id, at, &[("user", "list")], results, calls)
    };
    let error = "Error:\nArgument command is required\nNow let's retry.\n";
    let text = line_of(&[
        agent,
        llm(
            "c1",
            10,
            &[],
            &[("k1", "{\"command\": \"ls\"}"), ("k2", "{}")],
        ),
        tool_json("t1", "k1", 25, "{\"command\": \"ls\"}", "a.txt", None),
        llm("c2", 40, &[error], &[("k3", "{\"command\": \"ls\"}")]),
        tool_json("t3", "k3", 55, "{\"command\": \"ls\"}", "a.txt", None),
        llm("c3", 70, &[error, "Observation:\na.txt\n"], &[]),
    ]);
    let got = import(&text, "t.jsonl");
    let v = crate::detector::View::from_events(&got.runs[0].events);
    let read: Vec<(bool, &str)> = v
        .calls
        .iter()
        .map(|c| (c.failed, c.result.as_str()))
        .collect();
    let error = error.trim_end();
    assert_eq!(read, [(true, error), (true, error), (false, "a.txt")]);
}

#[test]
fn counts_an_instrumentation_makes_up_are_unknown_or_said() {
    let prompt =
        serde_json::json!([{"role": "user", "parts": [{"type": "text", "content": "hi"}]}])
            .to_string();
    let answer =
        serde_json::json!([{"role": "assistant", "parts": [{"type": "text", "content": "yo"}]}])
            .to_string();
    let chat = |id: &str, counts: (&str, &str), extra: &[(&str, Value)]| {
        let mut s = span_json(
            id,
            "",
            "chat m",
            (10, 20),
            &[
                ("gen_ai.operation.name", "chat"),
                ("gen_ai.input.messages", &prompt),
                ("gen_ai.output.messages", &answer),
                ("gen_ai.usage.input_tokens", counts.0),
                ("gen_ai.usage.output_tokens", counts.1),
            ],
            None,
        );
        let attributes = s["attributes"].as_array_mut().expect("attributes");
        for (k, v) in extra {
            let value = match v {
                Value::Bool(b) => serde_json::json!({"boolValue": b}),
                other => serde_json::json!({"stringValue": other.to_string()}),
            };
            attributes.push(serde_json::json!({"key": k, "value": value}));
        }
        s
    };
    // OpenLIT, streamed without usage in the stream: its own estimate, read as unknown.
    let streamed = [("gen_ai.request.stream", Value::Bool(true))];
    let got = import(
        &scoped_line(
            "openlit.instrumentation.openai",
            &[chat("a", ("43", "0"), &streamed)],
        ),
        "t.jsonl",
    );
    assert_eq!(answer_tokens(&got.runs[0]), [None]);
    assert!(got.warnings.join("\n").contains("OpenLIT estimated"));
    // With the provider's usage it also records the cached count: the counts are the
    // provider's.
    let cached = [
        ("gen_ai.request.stream", Value::Bool(true)),
        ("gen_ai.usage.cache_read.input_tokens", Value::from("0")),
    ];
    let got = import(
        &scoped_line(
            "openlit.instrumentation.openai",
            &[chat("a", ("45", "7"), &cached)],
        ),
        "t.jsonl",
    );
    assert_eq!(answer_tokens(&got.runs[0]), [Some((45, 7))]);
    assert!(got.warnings.is_empty(), "{:?}", got.warnings);
    // Traceloop's anthropic instrumentation alone: kept, and said.
    let traceloop = "opentelemetry.instrumentation.anthropic";
    let got = import(
        &scoped_line(traceloop, &[chat("a", ("45", "8"), &[])]),
        "t.jsonl",
    );
    assert_eq!(answer_tokens(&got.runs[0]), [Some((45, 8))]);
    assert!(got.warnings.join("\n").contains("one token over"));
    // Beside the anthropic SDK's own span of the same call: the SDK's counts.
    let sdk = span_json(
        "b",
        "",
        "anthropic.messages.create",
        (10, 20),
        &[
            ("gen_ai.operation.name", "chat"),
            ("gen_ai.usage.input_tokens", "45"),
            ("gen_ai.usage.output_tokens", "7"),
        ],
        None,
    );
    let text = format!(
        "{}\n{}",
        scoped_line(traceloop, &[chat("a", ("45", "8"), &[])]),
        scoped_line("com.anthropic.sdk.python", &[sdk])
    );
    let got = import(&text, "t.jsonl");
    assert_eq!(answer_tokens(&got.runs[0]), [Some((45, 7))]);
    let said = got.warnings.join("\n");
    assert!(said.contains("known to miscount"), "{said}");
    assert!(!said.contains("one token over"), "{said}");
}

/// A loop whose model calls are each a trace of their own (no span around it): a run per
/// call, and the runs that start mid-conversation say how to make it one run.
#[test]
fn a_loop_traced_call_by_call_says_so() {
    let first = chat_span(
        "c1",
        10,
        Some(r#"[{"role":"user","parts":[{"type":"text","content":"go"}]}]"#),
        r#"[{"role":"assistant","parts":[{"type":"tool_call","id":"k1","name":"exec","arguments":{}}]}]"#,
    );
    let mut second = chat_span(
        "c2",
        40,
        Some(
            r#"[{"role":"user","parts":[{"type":"text","content":"go"}]},{"role":"assistant","parts":[{"type":"tool_call","id":"k1","name":"exec","arguments":{}}]},{"role":"tool","parts":[{"type":"tool_call_response","id":"k1","result":"a.txt"}]}]"#,
        ),
        r#"[{"role":"assistant","parts":[{"type":"text","content":"done"}]}]"#,
    );
    second["traceId"] = Value::from("u");
    let text = format!("{}\n{}", line_of(&[first]), line_of(&[second]));
    let got = import(&text, "f.jsonl");
    assert_eq!(got.runs.len(), 2);
    assert!(
        got.warnings
            .iter()
            .any(|w| w.starts_with("1 run(s) start in the middle of a conversation")),
        "{:?}",
        got.warnings
    );
    // One trace for the loop: no such note.
    let one = import(
        &line_of(&[chat_span(
            "c1",
            10,
            Some(r#"[{"role":"user","parts":[{"type":"text","content":"go"}]}]"#),
            r#"[{"role":"assistant","parts":[{"type":"text","content":"done"}]}]"#,
        )]),
        "g.jsonl",
    );
    assert!(
        !one.warnings
            .iter()
            .any(|w| w.contains("middle of a conversation"))
    );
}

fn msg(role: &str, text: &str, calls: &[(&str, &str)], answers: Option<&str>) -> messages::Msg {
    messages::Msg {
        role: role.to_owned(),
        text: text.to_owned(),
        calls: calls
            .iter()
            .map(|(id, name)| ((*id).to_owned(), (*name).to_owned(), serde_json::json!({})))
            .collect(),
        answers: answers.map(str::to_owned),
        is_error: None,
    }
}

fn exchange_of(
    input: Vec<messages::Msg>,
    output: Option<messages::Msg>,
) -> Option<messages::Exchange> {
    Some(messages::Exchange {
        input,
        output,
        finish: None,
    })
}

/// An answer is read from the input of the call that continues its own, never from a call of
/// another conversation in between, a retry of the same request, or a copy whose one id names
/// two different calls; an answer with no output and no continuation is counted, not made up.
#[test]
fn an_answer_is_read_only_from_the_call_that_continues_it() {
    let user = || msg("user", "go", &[], None);
    let copy = || msg("assistant", "", &[("k1", "exec"), ("k2", "ls")], None);
    let result = |id: &str| msg("tool", "ok", &[], Some(id));
    let mut exchanges = vec![
        // The answer: no output recorded.
        exchange_of(vec![user()], None),
        // A side call (a guardrail): no history of the main conversation.
        exchange_of(vec![msg("system", "guard", &[], None), user()], None),
        // The same request again (a retry): the continuation is its, not the first's.
        exchange_of(vec![user()], None),
        // The continuation.
        exchange_of(
            vec![user(), copy(), result("k1"), result("k2")],
            Some(msg("assistant", "done", &[], None)),
        ),
    ];
    let failed = vec![false; exchanges.len()];
    let (copied, blank) = messages::answers_from_next_input(&mut exchanges, &failed);
    let calls = |e: &Option<messages::Exchange>| -> Vec<String> {
        e.as_ref()
            .and_then(|e| e.output.as_ref())
            .map(|o| o.calls.iter().map(|c| c.0.clone()).collect())
            .unwrap_or_default()
    };
    assert_eq!(calls(&exchanges[2]), ["k1", "k2"]);
    // The first attempt and the guardrail took nothing, and are said to have no output.
    assert!(exchanges[0].as_ref().is_some_and(|e| e.output.is_none()));
    assert!(exchanges[1].as_ref().is_some_and(|e| e.output.is_none()));
    assert_eq!((copied, blank), (1, 2));

    // One id naming two different calls: no copy.
    let mut two = vec![
        exchange_of(vec![user()], None),
        exchange_of(
            vec![
                user(),
                msg("assistant", "", &[("k1", "exec"), ("k1", "ls")], None),
                result("k1"),
            ],
            None,
        ),
    ];
    let (copied, blank) = messages::answers_from_next_input(&mut two, &[false, false]);
    assert_eq!((copied, blank), (0, 2));
    assert!(two[0].as_ref().is_some_and(|e| e.output.is_none()));
}

/// harness's refusal at the cap whatever the client did to its quote, and a retry after it
/// answered "this conversation has ended", keep the run at the cap.
#[test]
fn the_cap_survives_escapes_and_a_retry() {
    let refusal = crate::vocabulary::cap_refusal(3);
    for quote in ["\\'", "\\u0027", "&#x27;"] {
        let text = refusal.replace('\'', quote);
        assert_eq!(crate::vocabulary::capped_at(&text), Some(3), "{text}");
    }
    assert_eq!(
        crate::vocabulary::capped_at("the scenario's iteration cap (3) is reached"),
        None
    );
    let mut refused = chat_span("c2", 60, None, "[]");
    refused["status"] = serde_json::json!({"code": 2, "message": refusal});
    let mut again = chat_span("c3", 80, None, "[]");
    again["status"] = serde_json::json!({"code": 2, "message": format!("Error code: 400 - {}", crate::vocabulary::CONVERSATION_ENDED)});
    let text = line_of(&[
        agent_span(),
        chat_json("c1", 10, &[("k1", "exec", "{}")], ""),
        tool_json("t1", "k1", 30, "{}", "Error: missing", None),
        refused,
        again,
    ]);
    let got = import(&text, "f.jsonl");
    let end = got.runs[0].events.last().map(|e| &e.event);
    assert!(
        matches!(
            end,
            Some(Event::Outcome {
                outcome: OutcomeKind::MaxIterations,
                ..
            })
        ),
        "{end:?}"
    );
    assert!(
        !got.runs[0]
            .events
            .iter()
            .any(|e| matches!(e.event, Event::ProviderError { .. }))
    );
}
