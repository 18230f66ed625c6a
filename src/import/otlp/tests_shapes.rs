//! The import of instrumentations' shapes found outside the suite: answers that asked for
//! calls the span did not record, agent spans alone, DSPy's prompts and tool spans, inputs
//! without the model's answers, content in span events.

use super::tests::{agent_span, chat_json, chat_span, line_of, openinference_llm, span_json};
use super::*;

/// The events of one kind in a run's trace.
fn count(run: &Run, kind: fn(&Event) -> bool) -> usize {
    run.events.iter().filter(|e| kind(&e.event)).count()
}

fn outcome(run: &Run) -> (OutcomeKind, Option<String>) {
    run.events
        .iter()
        .find_map(|e| match &e.event {
            Event::Outcome {
                outcome, detail, ..
            } => Some((*outcome, detail.clone())),
            _ => None,
        })
        .expect("an outcome")
}

#[test]
fn answers_that_asked_for_unrecorded_calls_are_no_text_answers() {
    // Content capture off (openai-v2's default): each span says only that the model asked for
    // tools. A loop that ends there ended with its calls unanswered, not on an answer.
    let chat = |id: &str, at: u64, reason: &str| {
        let mut s = span_json(
            id,
            "agent",
            "chat m",
            (at, at + 10),
            &[("gen_ai.operation.name", "chat")],
            None,
        );
        s["attributes"].as_array_mut().expect("attributes").push(serde_json::json!(
            {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": reason}]}}}
        ));
        s
    };
    let stuck = line_of(&[
        agent_span(),
        chat("c1", 10, "tool_calls"),
        chat("c2", 30, "tool_calls"),
        chat("c3", 50, "tool_calls"),
    ]);
    let got = import(&stuck, "t.jsonl");
    let run = &got.runs[0];
    assert_eq!(outcome(run).0, OutcomeKind::Stopped, "{:?}", run.events);
    assert_eq!(
        count(run, |e| matches!(
            e,
            Event::ModelResponse {
                finish: Finish::ToolUse,
                ..
            }
        )),
        3
    );
    let said = got.warnings.join("\n");
    assert!(said.contains("3 model answer(s) asked for tools"), "{said}");
    // The same run ending on a text answer ended on it.
    let answered = line_of(&[
        agent_span(),
        chat("c1", 10, "tool_calls"),
        chat("c2", 30, "stop"),
    ]);
    let got = import(&answered, "t.jsonl");
    assert_eq!(outcome(&got.runs[0]).0, OutcomeKind::Response);
    // A recorded text answer is the text it says, whatever finish reason the server gave it.
    let mut text = chat_json("c1", 10, &[], "All done.");
    text["attributes"].as_array_mut().expect("attributes").push(serde_json::json!(
        {"key": "gen_ai.response.finish_reasons", "value": {"arrayValue": {"values": [{"stringValue": "tool_calls"}]}}}
    ));
    let got = import(&line_of(&[agent_span(), text]), "t.jsonl");
    assert_eq!(outcome(&got.runs[0]).0, OutcomeKind::Response);
    assert!(!got.warnings.iter().any(|w| w.contains("asked for tools")));
}

#[test]
fn an_agent_span_alone_is_no_run_unless_it_failed() {
    // The loop's own span, its model client's instrumentation not active: no model call, so
    // the file is the error that names its spans, not a run that "stopped".
    let alone = line_of(&[agent_span()]);
    let got = import(&alone, "t.jsonl");
    assert!(got.runs.is_empty(), "{:?}", got.runs);
    assert!(
        got.errors[0]
            .message
            .contains("1 span(s) and no model call among them"),
        "{:?}",
        got.errors
    );
    // Beside a readable run it is said, not read.
    let mut other = agent_span();
    other["traceId"] = Value::from("t9");
    let text = format!(
        "{}\n{}",
        line_of(&[agent_span(), chat_json("c1", 10, &[], "done")]),
        line_of(&[other])
    );
    let got = import(&text, "t.jsonl");
    assert_eq!(got.runs.len(), 1);
    assert!(
        got.warnings
            .iter()
            .any(|w| w.starts_with("1 conversation(s) with an agent span")),
        "{:?}",
        got.warnings
    );
    // An agent span that failed before any model call is a run that crashed.
    let mut failed = agent_span();
    failed["status"] = serde_json::json!({"code": 2, "message": "no API key"});
    let got = import(&line_of(&[failed]), "t.jsonl");
    assert_eq!(
        outcome(&got.runs[0]),
        (
            OutcomeKind::Error,
            Some("the agent failed before any model call: no API key".to_owned())
        )
    );
}

#[test]
fn a_prompt_rendered_afresh_each_step_is_no_turn_and_its_tool_spans_are_calls() {
    // DSPy's ReAct under OpenInference: each step a fresh [system, user] prompt holding the
    // trajectory, an answer in text (the call is a field of it), then a TOOL span with no call
    // id and no tool name, its status ERROR when the tool raised.
    let step = |id: &str, at: u64, trajectory: &str| {
        openinference_llm(
            id,
            at,
            &[
                ("system", "Your input fields are: question, trajectory"),
                (
                    "user",
                    &format!(
                        "[[ ## question ## ]]\nList the files in the project.\n\n[[ ## trajectory ## ]]\n{trajectory}\n\nRespond with the corresponding output fields, starting with the field `[[ ## next_thought ## ]]`, then `[[ ## next_tool_name ## ]]` (must be formatted as a valid Python Literal['exec', 'finish']), then `[[ ## next_tool_args ## ]]`, and then ending with the marker for `[[ ## completed ## ]]`."
                    ),
                ),
            ],
            &[],
            &[],
        )
    };
    let tool = |id: &str, at: u64, kwargs: &str, error: Option<&str>| {
        span_json(
            id,
            "agent",
            "exec.__call__",
            (at, at + 5),
            &[
                ("openinference.span.kind", "TOOL"),
                ("input.value", &format!("{{\"kwargs\": {kwargs}}}")),
                ("output.value", if error.is_some() { "" } else { "a.txt" }),
            ],
            error,
        )
    };
    let text = line_of(&[
        agent_span(),
        step("c1", 10, ""),
        tool(
            "t1",
            30,
            "{}",
            Some("ValueError: missing 'command' parameter"),
        ),
        step("c2", 40, "thought_0 … observation_0: failed"),
        tool("t2", 60, r#"{"command": "ls"}"#, None),
        step("c3", 70, "thought_0 … observation_1: a.txt"),
    ]);
    let got = import(&text, "t.jsonl");
    let run = &got.runs[0];
    let v = crate::detector::View::from_events(&run.events);
    let calls: Vec<(&str, bool)> = v
        .calls
        .iter()
        .map(|c| (c.name.as_str(), c.failed))
        .collect();
    assert_eq!(calls, [("exec", true), ("exec", false)], "{:?}", run.events);
    assert_eq!(
        count(run, |e| matches!(e, Event::Intervention { .. })),
        0,
        "the step's prompt is no nudge: {:?}",
        run.events
    );
    assert_eq!(count(run, |e| matches!(e, Event::UserTurn { .. })), 1);
    assert!(!got.warnings.iter().any(|w| w.contains("answer no call")));
}

#[test]
fn nudges_in_a_cumulative_input_without_answers_are_read_once() {
    // OpenLIT: each call's input is everything sent so far except the model's answers. The
    // agent nudged twice, in the same words; each nudge is read once, where it was sent.
    let done =
        serde_json::json!([{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}])
            .to_string();
    let nudge = "Your last tool call failed; check the arguments.";
    let sys = ("system", "be brief", None);
    let user = ("user", "list", None);
    let r1 = ("tool", "Error: missing command", Some("k1"));
    let r2 = ("tool", "Error: missing command", Some("k2"));
    let n = ("user", nudge, None);
    let text = line_of(&[
        agent_span(),
        chat_span("c1", 10, Some(&messages(&[sys, user])), &asked("k1")),
        chat_span("c2", 30, Some(&messages(&[sys, user, r1, n])), &asked("k2")),
        chat_span("c3", 50, Some(&messages(&[sys, user, r1, n, r2, n])), &done),
    ]);
    let got = import(&text, "t.jsonl");
    let run = &got.runs[0];
    assert_eq!(
        count(run, |e| matches!(e, Event::MessageInjected { .. })),
        2,
        "{:?}",
        run.events
    );
    let v = crate::detector::View::from_events(&run.events);
    assert_eq!(v.calls.iter().filter(|c| c.failed).count(), 2);
    assert_eq!(count(run, |e| matches!(e, Event::UserTurn { .. })), 1);
}

/// A span event: name, string attributes.
fn event_json(name: &str, attrs: &[(&str, &str)]) -> Value {
    let attributes: Vec<Value> = attrs
        .iter()
        .map(|(k, v)| serde_json::json!({"key": k, "value": {"stringValue": v}}))
        .collect();
    serde_json::json!({"name": name, "timeUnixNano": "1", "attributes": attributes})
}

#[test]
fn content_in_span_events_is_read_not_said_missing() {
    // strands-agents as it ships: the chat span's events carry the messages in Bedrock
    // Converse blocks; the tool span's events its input and result.
    let mut chat1 = span_json(
        "c1",
        "agent",
        "chat",
        (10, 20),
        &[("gen_ai.operation.name", "chat")],
        None,
    );
    chat1["events"] = serde_json::json!([
        event_json(
            "gen_ai.user.message",
            &[("content", r#"[{"text": "List the files."}]"#)]
        ),
        event_json(
            "gen_ai.choice",
            &[
                ("finish_reason", "tool_use"),
                (
                    "message",
                    r#"[{"toolUse": {"toolUseId": "k1", "name": "exec", "input": {"command": "ls"}}}]"#,
                ),
            ]
        ),
    ]);
    let mut tool = span_json(
        "t1",
        "agent",
        "execute_tool exec",
        (30, 35),
        &[
            ("gen_ai.operation.name", "execute_tool"),
            ("gen_ai.tool.name", "exec"),
            ("gen_ai.tool.call.id", "k1"),
        ],
        None,
    );
    tool["events"] = serde_json::json!([
        event_json(
            "gen_ai.tool.message",
            &[("content", r#"{"command": "ls"}"#), ("id", "k1")]
        ),
        event_json(
            "gen_ai.choice",
            &[("message", r#"[{"text": "a.txt"}]"#), ("id", "k1")]
        ),
    ]);
    // The current conventions' one event of the call (strands with the latest conventions,
    // util-genai with content in events only).
    let mut chat2 = span_json(
        "c2",
        "agent",
        "chat",
        (40, 50),
        &[("gen_ai.operation.name", "chat")],
        None,
    );
    chat2["events"] = serde_json::json!([event_json(
        "gen_ai.client.inference.operation.details",
        &[
            (
                "gen_ai.input.messages",
                r#"[{"role": "user", "parts": [{"type": "text", "content": "List the files."}]}, {"role": "assistant", "parts": [{"type": "tool_call", "id": "k1", "name": "exec", "arguments": {"command": "ls"}}]}, {"role": "tool", "parts": [{"type": "tool_call_response", "id": "k1", "response": "a.txt"}]}]"#,
            ),
            (
                "gen_ai.output.messages",
                r#"[{"role": "assistant", "parts": [{"type": "text", "content": "One file: a.txt."}], "finish_reason": "stop"}]"#,
            ),
        ]
    )]);
    let got = import(&line_of(&[agent_span(), chat1, tool, chat2]), "t.jsonl");
    assert!(got.errors.is_empty(), "{:?}", got.errors);
    let said = got.warnings.join("\n");
    assert!(!said.contains("content capture off"), "{said}");
    let run = &got.runs[0];
    let v = crate::detector::View::from_events(&run.events);
    let calls: Vec<(String, &str, bool)> = v
        .calls
        .iter()
        .map(|c| (c.args.to_string(), c.result.as_str(), c.failed))
        .collect();
    assert_eq!(
        calls,
        [(r#"{"command":"ls"}"#.to_owned(), "a.txt", false)],
        "{:?}",
        run.events
    );
    assert_eq!(outcome(run).0, OutcomeKind::Response, "{:?}", run.events);
    assert_eq!(count(run, |e| matches!(e, Event::UserTurn { .. })), 1);
}

#[test]
fn inputs_without_answers_keep_what_is_new_whatever_their_shape() {
    // A stateless client: each call's input is the new question alone. Each is a turn.
    let user = |id: &str, at: u64, text: &str| {
        let input =
            serde_json::json!([{"role": "user", "parts": [{"type": "text", "content": text}]}])
                .to_string();
        let output = serde_json::json!([{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]).to_string();
        chat_span(id, at, Some(&input), &output)
    };
    let got = import(
        &line_of(&[
            agent_span(),
            user("c1", 10, "What is the weather in Paris?"),
            user("c2", 30, "What is the weather in Rome?"),
        ]),
        "t.jsonl",
    );
    assert_eq!(
        count(&got.runs[0], |e| matches!(e, Event::UserTurn { .. })),
        2,
        "{:?}",
        got.runs[0].events
    );
    // An instrumentation without answers whose agent trims its memory: the nudge after the
    // trimmed history is still new.
    let (sys, task) = (("system", "be brief", None), ("user", "list", None));
    let r = |n: &'static str| ("tool", "Error: missing command", Some(n));
    let nudge = ("user", "Stop calling exec without a command.", None);
    let text = line_of(&[
        agent_span(),
        chat_span("c1", 10, Some(&messages(&[sys, task])), &asked("k1")),
        chat_span(
            "c2",
            20,
            Some(&messages(&[sys, task, r("k1")])),
            &asked("k2"),
        ),
        chat_span(
            "c3",
            30,
            Some(&messages(&[sys, task, r("k1"), r("k2")])),
            &asked("k3"),
        ),
        chat_span(
            "c4",
            40,
            Some(&messages(&[sys, r("k2"), r("k3"), nudge])),
            &asked("k4"),
        ),
    ]);
    let got = import(&text, "t.jsonl");
    let run = &got.runs[0];
    assert_eq!(
        count(run, |e| matches!(e, Event::MessageInjected { .. })),
        1,
        "{:?}",
        run.events
    );
    let v = crate::detector::View::from_events(&run.events);
    assert_eq!(
        v.calls.iter().filter(|c| c.failed).count(),
        3,
        "{:?}",
        run.events
    );
}

/// GenAI input messages: (role, text, the call a result answers), as JSON text.
fn messages(list: &[(&str, &str, Option<&str>)]) -> String {
    let v: Vec<Value> = list
        .iter()
        .map(|(role, text, answers)| match answers {
            Some(id) => serde_json::json!({"role": role, "parts": [{"type": "tool_call_response", "id": id, "response": text}]}),
            None => serde_json::json!({"role": role, "parts": [{"type": "text", "content": text}]}),
        })
        .collect();
    Value::Array(v).to_string()
}

/// GenAI output messages: an answer that calls `exec` with no arguments, as call `id`.
fn asked(id: &str) -> String {
    serde_json::json!([{"role": "assistant", "parts": [{"type": "tool_call", "id": id, "name": "exec", "arguments": {}}]}]).to_string()
}
