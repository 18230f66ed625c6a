//! Which conversation a request continues, and what each kept.

use super::*;

#[test]
fn results_sent_back_in_another_order_stay_with_their_own_calls() {
    let scenario = r#"
format = 1
description = "test"
family = "t"
profile = "none"
user = "Copy the file."
config = { max_iterations = 3 }

[[tools]]
name = "read"
schema = { type = "object" }
default = { ok = "text" }

[[tools]]
name = "write"
schema = { type = "object" }
default = { ok = "done" }

[model]
name = "m"

[[model.rules]]
when = { last_tool_failed = true }
reply = { text = "The write failed." }

[[model.rules]]
reply = { tool_calls = [{ name = "read", args = {} }, { name = "write", args = {} }] }
"#;
    let tools = json!([
        {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}}
    ]);
    let user = json!({"role": "user", "content": "Copy the file."});
    // The write's result comes back first: it failed, the read did not.
    let ended = |s: &Session| -> Vec<String> {
        lines(s, 0)
            .into_iter()
            .filter(|l| l.contains("tool_call_end"))
            .map(|l| l.split_once(' ').map(|(_, r)| r.to_owned()).unwrap_or(l))
            .collect()
    };
    // Chat Completions: `tool_call_id`.
    let mut s = session(scenario);
    let first = json!({"model": "gpt", "tools": tools, "messages": [user]});
    let r = s.handle(Api::ChatCompletions, first.to_string().as_bytes());
    let message = json_of(&r)["choices"][0]["message"].clone();
    let ids: Vec<Value> = (0..2)
        .map(|i| message["tool_calls"][i]["id"].clone())
        .collect();
    let next = json!({"model": "gpt", "tools": tools, "messages": [user, message,
        {"role": "tool", "tool_call_id": ids[1], "content": "Error: permission denied"},
        {"role": "tool", "tool_call_id": ids[0], "content": "the text"}]});
    s.handle(Api::ChatCompletions, next.to_string().as_bytes());
    let e = ended(&s);
    assert!(
        e[0].contains("read ok") && e[1].contains("write failed"),
        "{e:?}"
    );
    // Responses: `function_call_output.call_id`.
    let mut s = session(scenario);
    let input = json!([{"role": "user", "content": "Copy the file."}]);
    let first = json!({"model": "gpt", "tools": [
        {"type": "function", "name": "read", "parameters": {"type": "object"}},
        {"type": "function", "name": "write", "parameters": {"type": "object"}}], "input": input});
    let r = s.handle(Api::Responses, first.to_string().as_bytes());
    let calls: Vec<Value> = json_of(&r)["output"]
        .as_array()
        .expect("output")
        .iter()
        .filter(|i| i["type"] == "function_call")
        .cloned()
        .collect();
    assert_eq!(calls.len(), 2, "{calls:?}");
    let mut items = vec![input[0].clone()];
    items.extend(calls.iter().cloned());
    items.push(json!({"type": "function_call_output", "call_id": calls[1]["call_id"], "output": "Error: permission denied"}));
    items.push(json!({"type": "function_call_output", "call_id": calls[0]["call_id"], "output": "the text"}));
    let next = json!({"model": "gpt", "tools": first["tools"], "input": items});
    s.handle(Api::Responses, next.to_string().as_bytes());
    let e = ended(&s);
    assert!(
        e[0].contains("read ok") && e[1].contains("write failed"),
        "{e:?}"
    );
    // Messages: `tool_use_id` (and `is_error`).
    let mut s = session(scenario);
    let tools = json!([
        {"name": "read", "input_schema": {"type": "object"}},
        {"name": "write", "input_schema": {"type": "object"}}]);
    let first = json!({"model": "claude", "max_tokens": 100, "tools": tools, "messages": [user]});
    let r = s.handle(Api::Messages, first.to_string().as_bytes());
    let content = json_of(&r)["content"].clone();
    let uses: Vec<&Value> = content
        .as_array()
        .expect("content")
        .iter()
        .filter(|b| b["type"] == "tool_use")
        .collect();
    assert_eq!(uses.len(), 2, "{content}");
    let next = json!({"model": "claude", "max_tokens": 100, "tools": tools, "messages": [user,
        {"role": "assistant", "content": content},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": uses[1]["id"], "content": "permission denied", "is_error": true},
            {"type": "tool_result", "tool_use_id": uses[0]["id"], "content": "the text"}]}]});
    s.handle(Api::Messages, next.to_string().as_bytes());
    let e = ended(&s);
    assert!(
        e[0].contains("read ok") && e[1].contains("write failed"),
        "{e:?}"
    );
    // Results that name no id keep the order they came in (a text protocol).
    let results = [
        (0, &Message::new(Role::Tool, "a"), ""),
        (1, &Message::new(Role::Tool, "b"), "x2"),
        (2, &Message::new(Role::Tool, "c"), "made-up"),
    ];
    assert_eq!(
        super::infer::pair_results(&["x1", "x2", "x3"], &results),
        vec![Some(0), Some(1), Some(2)]
    );
    assert_eq!(
        super::infer::pair_results(&["x2", "x1"], &results[1..2]),
        vec![Some(0), None]
    );
}

#[test]
fn unanswered_calls_are_skipped_and_a_dropped_answer_still_shows_the_nudge() {
    let mut s = session(SCENARIO);
    s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    // The agent keeps our call but sends no result, only a note of its own.
    let mut body: Value =
        serde_json::from_slice(&openai(1, "x", Some("Stop looping."), true)).unwrap_or_default();
    if let Some(m) = body["messages"].as_array_mut() {
        m.remove(3);
    }
    s.handle(Api::ChatCompletions, body.to_string().as_bytes());
    let l = lines(&s, 0);
    assert!(
        l.contains(
            &"1000 tool_call_skipped call_0 exec reason=\"the agent sent no result for this call\""
                .into()
        )
    );
    assert!(
        l.contains(&"1000 message_injected source=agent role=user text=\"Stop looping.\"".into())
    );
    // Another agent drops our latest answer and re-sends its list with a note appended:
    // the note is what it added, not a replay of the earlier messages.
    let mut s = session(SCENARIO);
    s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    s.handle(Api::ChatCompletions, &openai(1, "Error: x", None, true));
    s.handle(
        Api::ChatCompletions,
        &openai(1, "Error: x", Some("LOOP"), true),
    );
    assert_eq!(s.conversations().len(), 1);
    let l = lines(&s, 0);
    let injected: Vec<&String> = l
        .iter()
        .filter(|l| l.contains("message_injected"))
        .collect();
    assert_eq!(injected.len(), 1, "{l:?}");
    assert!(injected[0].ends_with("text=\"LOOP\""), "{l:?}");
}

#[test]
fn the_cap_refuses_and_ends_the_conversation() {
    let mut s = session(SCENARIO);
    for turns in 0..3 {
        assert_eq!(
            s.handle(Api::ChatCompletions, &openai(turns, "x", None, true))
                .status,
            200
        );
    }
    let r = s.handle(Api::ChatCompletions, &openai(3, "x", None, true));
    assert_eq!(r.status, 400);
    let msg = json_of(&r)["error"]["message"].as_str().unwrap_or_default();
    assert!(msg.contains("iteration cap (3)"), "{msg}");
    // Further calls in that conversation are refused and not recorded.
    assert_eq!(
        s.handle(Api::ChatCompletions, &openai(4, "x", None, true))
            .status,
        400
    );
    assert_eq!(s.conversations()[0].requests.len(), 4);
    let l = lines(&s, 0);
    assert_eq!(l.iter().filter(|l| l.contains(" iteration ")).count(), 3);
    assert!(l.contains(&"3600 tool_call_end call_2 exec ok output=\"x\" latency=200ms".into()));
    assert!(
        l.last()
            .is_some_and(|l| l.contains("outcome max_iterations iterations=3"))
    );
}

#[test]
fn conversations_are_keyed_by_their_first_user_message() {
    let mut s = session(SCENARIO);
    s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    // A fresh message list starts another run, even with the same prompt.
    s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    assert_eq!(s.conversations().len(), 2);
    // A continuation goes to the latest conversation with that prompt.
    s.handle(Api::ChatCompletions, &openai(1, "x", None, true));
    assert_eq!(s.conversations()[1].requests.len(), 2);
    // Another prompt's continuation we never saw starts its own.
    let other = String::from_utf8(openai(1, "x", None, true))
        .unwrap_or_default()
        .replace("List the files.", "Something else.");
    s.handle(Api::ChatCompletions, other.as_bytes());
    assert_eq!(s.conversations().len(), 3);
    // Bad input is refused with the provider's error shape.
    let r = s.handle(Api::Messages, b"{not json");
    assert_eq!(r.status, 400);
    assert_eq!(json_of(&r)["type"], "error");
    assert_eq!(s.conversations().len(), 3);
}

#[test]
fn a_retry_after_a_dropped_empty_answer_continues_its_conversation() {
    let text = SCENARIO.replace(
        "[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
        "[[model.rules]]\ntimes = 1\nreply = { text = \"\" }\n\n[[model.rules]]\nwhen = { any_message_contains = \"Please\" }\nreply = { text = \"Done.\" }\n\n[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
    );
    let mut s = session(&text);
    let first = json!({"model": "m", "messages": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "List the files."}]});
    let r = s.handle(Api::ChatCompletions, first.to_string().as_bytes());
    assert_eq!(r.status, 200);
    // pydantic-ai's way: the empty answer left out, a system message asking again.
    let again = json!({"model": "m", "messages": [
        {"role": "system", "content": "sys"}, {"role": "user", "content": "List the files."},
        {"role": "system", "content": "Please return text or call a tool."}]});
    let r = s.handle(Api::ChatCompletions, again.to_string().as_bytes());
    assert_eq!(json_of(&r)["choices"][0]["message"]["content"], "Done.");
    assert_eq!(s.conversations().len(), 1);
    let l = lines(&s, 0);
    assert!(
        l.iter()
            .any(|l| l.contains("model_request call=2 messages=3")),
        "{l:?}"
    );
    // The same prompt sent afresh is another run (answered empty, and continued by its
    // own retry); a retry when no conversation's last answer was empty is one more.
    s.handle(Api::ChatCompletions, first.to_string().as_bytes());
    assert_eq!(s.conversations().len(), 2);
    s.handle(Api::ChatCompletions, again.to_string().as_bytes());
    assert_eq!(s.conversations().len(), 2);
    assert_eq!(s.conversations()[1].requests.len(), 2);
    s.handle(Api::ChatCompletions, again.to_string().as_bytes());
    assert_eq!(s.conversations().len(), 3);
}

#[test]
fn an_applications_own_retry_after_its_sdk_gave_up_continues_the_faulted_run() {
    let text = SCENARIO.replace(
        "[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
        "[[model.rules]]\ntimes = 1\nreply = { fault = { kind = \"rate_limit\" } }\n\n[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
    );
    let fresh = RequestHints {
        retry_count: Some(0),
        ..RequestHints::default()
    };
    // inspect_ai's way: the SDK's retries spent, its own retry goes out with count 0.
    let mut s = session(&text);
    let r = s.handle_with(
        Api::ChatCompletions,
        &openai(0, "", None, true),
        fresh.clone(),
    );
    assert_eq!(r.status, 429);
    let r = s.handle_with(
        Api::ChatCompletions,
        &openai(0, "", None, true),
        fresh.clone(),
    );
    assert_eq!(r.status, 200);
    assert_eq!(s.conversations().len(), 1);
    // Once another run was answered since the fault, count 0 is a new run again.
    let mut s = session(&text);
    s.handle_with(
        Api::ChatCompletions,
        &openai(0, "", None, true),
        fresh.clone(),
    );
    let other = String::from_utf8(openai(0, "", None, true))
        .unwrap_or_default()
        .replace("List the files.", "Something else.");
    s.handle_with(Api::ChatCompletions, other.as_bytes(), fresh.clone());
    s.handle_with(
        Api::ChatCompletions,
        &openai(0, "", None, true),
        fresh.clone(),
    );
    assert_eq!(s.conversations().len(), 3);
}

#[test]
fn faults_are_served_and_the_retry_stays_in_its_iteration() {
    let text = SCENARIO.replace(
        "[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
        "[[model.rules]]\ntimes = 1\nreply = { fault = { kind = \"rate_limit\", retry_after_ms = 1500 } }\n\n[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
    );
    let mut s = session(&text);
    let r = s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    assert_eq!(r.status, 429);
    assert!(r.headers.contains(&("retry-after-ms", "1500".to_owned())));
    assert!(r.headers.contains(&("retry-after", "2".to_owned())));
    let r = s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    assert_eq!(r.status, 200);
    assert_eq!(s.conversations().len(), 1);
    let l = lines(&s, 0);
    assert_eq!(l.iter().filter(|l| l.contains(" iteration ")).count(), 1);
    assert!(
        l.iter()
            .any(|l| l.contains("provider_error rate_limit attempt=1"))
    );
    assert!(l.iter().any(|l| l.contains("model_request call=2")));
    assert!(
        l.last()
            .is_some_and(|l| l.contains("outcome stopped iterations=1"))
    );
}

/// The OpenAI request an agent sends after `answers` (its own served answers, in order):
/// each answer's calls appended with `result` as their results.
fn continuing(answers: &[Value], result: &str) -> Vec<u8> {
    let mut messages = vec![json!({"role": "user", "content": "List the files."})];
    for a in answers {
        let m = &a["choices"][0]["message"];
        messages.push(m.clone());
        for c in m["tool_calls"].as_array().into_iter().flatten() {
            messages.push(json!({"role": "tool", "tool_call_id": c["id"], "content": result}));
        }
    }
    json!({"model": "gpt", "messages": messages, "tools": tool()})
        .to_string()
        .into_bytes()
}

#[test]
fn parallel_agents_are_told_apart_by_the_ids_they_echo() {
    let mut s = session(SCENARIO);
    let fresh = openai(0, "", None, true);
    // Three agents start at once, then continue interleaved in every order.
    let mut answers: Vec<Vec<Value>> = (0..3)
        .map(|_| vec![json_of(&s.handle(Api::ChatCompletions, &fresh)).clone()])
        .collect();
    for order in [[2, 0, 1], [1, 2, 0]] {
        for a in order {
            let r = s.handle(Api::ChatCompletions, &continuing(&answers[a], "x"));
            assert_eq!(r.status, 200);
            answers[a].push(json_of(&r).clone());
        }
    }
    assert_eq!(s.conversations().len(), 3);
    for c in s.conversations() {
        assert_eq!(c.requests.len(), 3, "each agent's requests stay together");
    }
    let traces: Vec<Vec<String>> = (0..3).map(|i| lines(&s, i)).collect();
    assert_eq!(traces[0], traces[1]);
    assert_eq!(traces[1], traces[2]);
    // Ids are the provider's shape, unique across conversations.
    let ids: std::collections::BTreeSet<String> = answers
        .iter()
        .flatten()
        .flat_map(|a| {
            [
                a["id"].as_str().unwrap_or_default().to_owned(),
                a["choices"][0]["message"]["tool_calls"][0]["id"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            ]
        })
        .collect();
    assert_eq!(ids.len(), 18);
    assert!(ids.iter().all(|i| (i.starts_with("call_") && i.len() == 29)
        || (i.starts_with("chatcmpl-") && i.len() == 38)));
    // The scripted ids stay in the traces.
    assert!(
        traces[0]
            .iter()
            .any(|l| l.contains("calls=[call_1 exec({})]"))
    );
}

#[test]
fn responses_api_whole_and_streamed_continues_by_call_id() {
    let mut s = session(SCENARIO);
    let first = json!({"model": "gpt", "instructions": "sys", "input": "List the files.",
        "tools": [{"type": "function", "name": "exec", "parameters": {"type": "object"}}]});
    let r = s.handle(Api::Responses, first.to_string().as_bytes());
    assert_eq!(r.status, 200);
    let v = json_of(&r).clone();
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    let call = v["output"][0].clone();
    assert_eq!(call["type"], "function_call");
    // A second agent starts too; the first continues by its call id.
    s.handle(Api::Responses, first.to_string().as_bytes());
    let next = json!({"model": "gpt", "stream": true, "input": [
        {"role": "user", "content": "List the files."},
        call,
        {"type": "function_call_output", "call_id": call["call_id"], "output": "An error occurred while running the tool. Please try again."},
        {"role": "user", "content": "LOOP"},
    ], "tools": first["tools"]});
    let r = s.handle(Api::Responses, next.to_string().as_bytes());
    let AnswerBody::Events { events, .. } = &r.body else {
        panic!("expected a stream")
    };
    assert_eq!(
        events.last().and_then(|e| e.event.as_deref()),
        Some("response.completed")
    );
    assert_eq!(s.conversations()[0].requests.len(), 2);
    assert_eq!(s.conversations()[1].requests.len(), 1);
    let l = lines(&s, 0);
    assert!(
        l.iter()
            .any(|l| l.contains("exec failed") && l.ends_with("rule=\"tool-error-notice\"")),
        "{l:?}"
    );
    assert!(l.last().is_some_and(|l| l.contains("outcome response")));
}

/// A client that continues by `previous_response_id` and re-sends `instructions` on every
/// turn gives the trace of its twin that re-sends the whole history; an unknown id is 404.
#[test]
fn a_stateful_responses_client_reads_as_its_full_history_twin() {
    let tools = json!([{"type": "function", "name": "exec", "parameters": {"type": "object"}}]);
    let run = |stateful: bool| {
        let mut s = session(SCENARIO);
        let mut items = vec![json!({"role": "user", "content": "List the files."})];
        let mut previous: Option<String> = None;
        let mut pending: Vec<Value> = Vec::new();
        for turn in 0..3 {
            let mut body = json!({"model": "gpt", "instructions": "sys", "tools": tools});
            if stateful && previous.is_some() {
                body["previous_response_id"] = json!(previous);
                body["input"] = json!(pending);
            } else {
                body["input"] = json!(items);
            }
            let r = s.handle(Api::Responses, body.to_string().as_bytes());
            assert_eq!(r.status, 200, "turn {turn}: {:?}", r.body);
            let v = json_of(&r).clone();
            previous = v["id"].as_str().map(str::to_owned);
            let output = v["output"].as_array().cloned().unwrap_or_default();
            items.extend(output.iter().cloned());
            pending.clear();
            for call in output.iter().filter(|o| o["type"] == "function_call") {
                let result = json!({"type": "function_call_output", "call_id": call["call_id"], "output": "Error: no"});
                items.push(result.clone());
                pending.push(result);
            }
        }
        assert_eq!(s.conversations().len(), 1, "one conversation");
        lines(&s, 0)
    };
    let full = run(false);
    assert!(
        full.iter()
            .any(|l| l.contains("model_request call=3 messages=6")),
        "{full:?}"
    );
    assert_eq!(run(true), full);
    // An id no answer had is refused as OpenAI refuses it.
    let mut s = session(SCENARIO);
    let body = json!({"model": "gpt", "previous_response_id": "resp_nope", "input": [
        {"type": "function_call_output", "call_id": "call_x", "output": "ok"}]});
    let r = s.handle(Api::Responses, body.to_string().as_bytes());
    assert_eq!(r.status, 404);
    assert_eq!(json_of(&r)["error"]["code"], "previous_response_not_found");
}

#[test]
fn smolagents_text_protocol_is_read_as_calls_and_results() {
    let mut s = session(SCENARIO);
    let r = s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    let id = json_of(&r)["choices"][0]["message"]["tool_calls"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let mut turn = |result: &str, id: &str| {
        let body = json!({"model": "gpt", "tools": tool(), "messages": [
            {"role": "system", "content": [{"type": "text", "text": "sys"}]},
            {"role": "user", "content": [{"type": "text", "text": "List the files."}]},
            {"role": "assistant", "content": [{"type": "text", "text": format!(
                "Calling tools:\n[{{'id': '{id}', 'type': 'function', 'function': {{'name': 'exec', 'arguments': {{}}}}}}]")}]},
            {"role": "user", "content": [{"type": "text", "text": result}]},
        ]});
        s.handle(Api::ChatCompletions, body.to_string().as_bytes())
    };
    turn(
        &format!("Call id: {id}\nError:\nmissing 'command'\nNow let's retry"),
        &id,
    );
    let l = lines(&s, 0);
    assert_eq!(s.conversations().len(), 1);
    assert!(
        l.iter()
            .any(|l| l.contains("notice source=serve") && l.contains("as text")),
        "{l:?}"
    );
    assert!(
        l.iter().any(|l| l.contains("tool_call_end call_0 exec failed error=\"Error:\\nmissing 'command'\\nNow let's retry\"")),
        "{l:?}"
    );
    assert!(!l.iter().any(|l| l.contains("nudge")), "{l:?}");
}

#[test]
fn an_unreadable_text_protocol_is_said_not_counted_as_nudges() {
    let mut s = session(SCENARIO);
    s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    let body = json!({"model": "gpt", "tools": tool(), "messages": [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": "<tool>exec {}</tool>"},
        {"role": "user", "content": "<result>Error: no</result>"},
    ]});
    s.handle(Api::ChatCompletions, body.to_string().as_bytes());
    let l = lines(&s, 0);
    assert!(l.iter().any(|l| l.contains("a text protocol")), "{l:?}");
    assert!(
        !l.iter()
            .any(|l| l.contains(" intervention ") || l.contains("message_injected")),
        "{l:?}"
    );
}

#[test]
fn steps_folded_into_the_task_message_continue_their_conversation() {
    let mut s = session(SCENARIO);
    let ask = |text: &str| {
        json!({"model": "gpt", "tools": tool(), "tool_choice": "required", "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": [{"type": "text", "text": text}]},
        ]})
        .to_string()
        .into_bytes()
    };
    let task = "New task:\nList the files.";
    let error = "\nError:\nArgument command is required\nNow let's retry.\n";
    // Two agents at once, each folding its failed step into its task message.
    for _ in 0..2 {
        s.handle(Api::ChatCompletions, &ask(task));
    }
    for _ in 0..2 {
        s.handle(Api::ChatCompletions, &ask(&format!("{task}{error}")));
    }
    s.handle(Api::ChatCompletions, &ask(&format!("{task}{error}{error}")));
    let sizes: Vec<usize> = s.conversations().iter().map(|c| c.requests.len()).collect();
    assert_eq!(sizes, [3, 2]);
    let l = lines(&s, 0);
    assert_eq!(
        l.iter()
            .filter(|l| l.contains("exec failed") && l.ends_with("rule=\"error-prefix\""))
            .count(),
        2,
        "{l:?}"
    );
    assert!(!l.iter().any(|l| l.contains(" intervention ")), "{l:?}");
}

/// A Gemini `generateContent` request: one user turn of `parts`, then `contents` as given.
fn gemini(parts: &[&str], rest: &[Value]) -> Vec<u8> {
    let parts: Vec<Value> = parts.iter().map(|t| json!({"text": t})).collect();
    let mut contents = vec![json!({"role": "user", "parts": parts})];
    contents.extend(rest.iter().cloned());
    json!({
        "contents": contents,
        "systemInstruction": {"parts": [{"text": "sys"}]},
        "tools": [{"functionDeclarations": [
            {"name": "exec", "description": "Run", "parameters": {"type": "object"}}]}],
    })
    .to_string()
    .into_bytes()
}

fn scripted(first: &str) -> String {
    format!(
        "format = 1\ndescription = \"t\"\nfamily = \"t\"\nprofile = \"none\"\nuser = \"List the files.\"\n\n[[tools]]\nname = \"exec\"\ndescription = \"Run\"\nschema = {{ type = \"object\" }}\n\n[model]\nname = \"m\"\n\n[[model.rules]]\ntimes = 1\nreply = {{ {first} }}\n\n[[model.rules]]\nreply = {{ text = \"Done.\" }}\n"
    )
}

fn gemini_answer(r: &HttpAnswer) -> (Option<&str>, Option<&str>) {
    let c = &json_of(r)["candidates"][0];
    (
        c["finishReason"].as_str(),
        c["content"]["parts"][0]["text"].as_str(),
    )
}

#[test]
fn gemini_clis_retry_nudge_in_the_first_turn_continues_its_conversation() {
    // Gemini CLI drops an empty answer and asks again with a nudge added to its last user
    // turn, which is its first: the first user message grew, and it is the same run.
    // The model hears the nudge: `intervened` holds.
    let text = scripted("text = \"\"").replacen(
        "[[model.rules]]",
        "[[model.rules]]\nwhen = { intervened = true }\nreply = { text = \"Heard.\" }\n\n[[model.rules]]",
        1,
    );
    let mut s = session(&text);
    let r = s.handle(Api::GenerateContent, &gemini(&["List the files."], &[]));
    assert_eq!(
        gemini_answer(&r),
        (Some("STOP"), Some("")),
        "{:?}",
        json_of(&r)
    );
    let nudge = "\n[System: You previously returned an empty response. Answer now.]";
    let r = s.handle(
        Api::GenerateContent,
        &gemini(&["List the files.", nudge], &[]),
    );
    assert_eq!(gemini_answer(&r), (Some("STOP"), Some("Heard.")));
    assert_eq!(s.conversations().len(), 1);
    // The trace shows the nudge, and only the nudge, as the agent's.
    let l = lines(&s, 0);
    let injected: Vec<&String> = l
        .iter()
        .filter(|l| l.contains("message_injected"))
        .collect();
    assert_eq!(injected.len(), 1, "{l:?}");
    assert!(
        injected[0].contains("role=user text=\"[System: You previously returned"),
        "{l:?}"
    );
    // The same start sent afresh after a plain empty answer is another run: only a prompt
    // that asks again continues one.
    s.handle(Api::GenerateContent, &gemini(&["List the files."], &[]));
    s.handle(Api::GenerateContent, &gemini(&["List the files."], &[]));
    assert_eq!(s.conversations().len(), 3);
}

#[test]
fn the_same_request_after_an_answer_gemini_withheld_continues_its_conversation() {
    // A call whose arguments are no object goes out as MALFORMED_FUNCTION_CALL; an answer
    // cut by the output limit before anything whole goes out as MAX_TOKENS with nothing.
    // Gemini CLI asks again with the same contents: the model's next answer.
    for (first, reason) in [
        (
            "tool_calls = [{ name = \"exec\", raw_args = '{\"a\": ' }]",
            "MALFORMED_FUNCTION_CALL",
        ),
        (
            "tool_calls = [{ name = \"exec\", generate = \"truncated\", seed = 1 }], finish = \"length\"",
            "MAX_TOKENS",
        ),
    ] {
        let mut s = session(&scripted(first));
        let start = gemini(&["List the files."], &[]);
        let r = s.handle(Api::GenerateContent, &start);
        assert_eq!(gemini_answer(&r).0, Some(reason), "{:?}", json_of(&r));
        let r = s.handle(Api::GenerateContent, &start);
        assert_eq!(gemini_answer(&r), (Some("STOP"), Some("Done.")), "{reason}");
        assert_eq!(s.conversations().len(), 1, "{reason}");
        assert_eq!(s.conversations()[0].requests[1].iteration, 2, "{reason}");
        // It added nothing: no nudge in the trace.
        let l = lines(&s, 0);
        assert!(
            !l.iter().any(|l| l.contains("message_injected")),
            "{reason}: {l:?}"
        );
        assert!(l.iter().any(|l| l.contains("iteration 2")), "{l:?}");
        // Once answered, the same start again is another run.
        s.handle(Api::GenerateContent, &start);
        assert_eq!(s.conversations().len(), 2, "{reason}");
    }
}

#[test]
fn a_gemini_stream_cut_in_a_call_ends_no_answer() {
    // The API sends a call only whole: a stream cut in the middle of one brought the agent
    // nothing, and an agent that stops there ended without an answer, not on an empty one.
    let mut s = session(&scripted(
        "stream = [{ type = \"tool_call_start\", index = 0, id = \"c\", name = \"exec\" }, { type = \"args_delta\", index = 0, text = '{\"a\": ' }]",
    ));
    let hints = RequestHints {
        model: Some("gemini-2.5-flash".into()),
        stream: Some(true),
        ..RequestHints::default()
    };
    let r = s.handle_with(
        Api::GenerateContent,
        &gemini(&["List the files."], &[]),
        hints,
    );
    assert!(
        matches!(r.body, AnswerBody::Events { cut: true, .. }),
        "{r:?}"
    );
    let l = lines(&s, 0);
    let outcome = l.last().cloned().unwrap_or_default();
    assert!(
        outcome.contains("outcome stopped")
            && outcome.contains("cut before anything in it was whole"),
        "{l:?}"
    );
}

#[test]
fn an_answer_the_agent_replaced_is_a_defence_not_a_text_protocol() {
    // Gemini CLI's loop detection puts a note in place of the looping answer and asks the
    // model to step back: the call never ran, and the agent spoke up.
    let mut s = session(SCENARIO);
    s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    let body = json!({"model": "gpt", "tools": tool(), "messages": [
        {"role": "user", "content": "List the files."},
        {"role": "assistant", "content": "[The previous response was interrupted before it completed.]"},
        {"role": "user", "content": "System: Potential loop detected. Please take a step back."},
    ]});
    s.handle(Api::ChatCompletions, body.to_string().as_bytes());
    let l = lines(&s, 0);
    assert!(!l.iter().any(|l| l.contains("a text protocol")), "{l:?}");
    assert!(l.iter().any(|l| l.contains("tool_call_skipped")), "{l:?}");
    assert!(
        l.iter().any(|l| l.contains(
            "message_injected source=agent role=user text=\"System: Potential loop detected"
        )),
        "{l:?}"
    );
}

/// A task run without ids (Gemini's function calls need none): a scenario of `find` calls whose
/// second answer is `second`, then a text; and the Gemini pieces of its history — the user's
/// turn, a `find` call the model made, and its result.
fn find_it(second: &str) -> (String, Value, Value, Value) {
    let scenario = format!(
        r#"
format = 1
description = "test"
family = "t"
profile = "none"
user = "Find it."
config = {{ max_iterations = 5 }}

[[tools]]
name = "find"
schema = {{ type = "object", properties = {{ q = {{ type = "string" }} }} }}
default = {{ ok = "nothing" }}

[model]
name = "m"

[[model.turns]]
tool_calls = [{{ name = "find", args = {{ q = "first" }} }}]

[[model.turns]]
{second}

[[model.turns]]
text = "Not found."
"#
    );
    let tools = json!([{"functionDeclarations": [{"name": "find",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}]}]);
    let user = json!({"role": "user", "parts": [{"text": "Find it."}]});
    let result = json!({"role": "user", "parts": [{"functionResponse": {"name": "find", "response": {"output": "nothing"}}}]});
    (scenario, tools, user, result)
}

fn find_call(q: &str) -> Value {
    json!({"role": "model", "parts": [{"functionCall": {"name": "find", "args": {"q": q}}}]})
}

/// Two agents on one task whose function calls and responses carry no ids (Gemini's need
/// none): each request continues the conversation whose answers its history echoes, not the
/// latest with that task, so each run gets its own script's next step.
#[test]
fn runs_without_ids_are_told_apart_by_the_answers_their_history_echoes() {
    let (scenario, tools, user, result) =
        find_it(r#"tool_calls = [{ name = "find", args = { q = "second" } }]"#);
    let call = find_call;
    let ask = |s: &mut Session, contents: Value| -> String {
        let body = json!({"contents": contents, "tools": tools});
        let r = s.handle(Api::GenerateContent, body.to_string().as_bytes());
        let part = &json_of(&r)["candidates"][0]["content"]["parts"][0];
        part["functionCall"]["args"]["q"]
            .as_str()
            .or(part["text"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    let mut s = session(&scenario);
    // A and B start; A takes two steps (its history echoes one answer, then two); B then
    // sends its first step, whose history echoes one answer: the conversation with one.
    assert_eq!(ask(&mut s, json!([user])), "first");
    assert_eq!(ask(&mut s, json!([user])), "first");
    assert_eq!(ask(&mut s, json!([user, call("first"), result])), "second");
    assert_eq!(
        ask(
            &mut s,
            json!([user, call("first"), result, call("second"), result])
        ),
        "Not found."
    );
    assert_eq!(ask(&mut s, json!([user, call("first"), result])), "second");
    assert_eq!(s.conversations().len(), 2);
    let answered: Vec<usize> = s.conversations().iter().map(|c| c.requests.len()).collect();
    assert_eq!(
        answered,
        [2, 3],
        "each run's requests in its own conversation"
    );
}

/// Two runs of one task without ids, one of whose second answers is a stream cut in a call:
/// the cut answer is nothing the agent can echo, and its request sent again (the history of
/// one answer, as the other run's) goes back to the run that was cut.
#[test]
fn a_run_without_ids_sent_again_after_a_cut_stays_its_own() {
    let (scenario, tools, user, result) = find_it(
        r#"stream = [{ type = "tool_call_start", index = 0, id = "c", name = "find" }, { type = "args_delta", index = 0, text = '{"q": "sec' }]"#,
    );
    let call = find_call("first");
    let hints = RequestHints {
        stream: Some(true),
        ..RequestHints::default()
    };
    let mut s = session(&scenario);
    let ask = |s: &mut Session, contents: Value| {
        let body = json!({"contents": contents, "tools": tools});
        s.handle_with(
            Api::GenerateContent,
            body.to_string().as_bytes(),
            hints.clone(),
        )
    };
    // A starts and its second answer is cut; B starts; A sends its request again. Both runs
    // have given one answer the history echoes; A's waits for the request sent again.
    ask(&mut s, json!([user]));
    let cut = ask(&mut s, json!([user, call, result]));
    assert!(
        matches!(cut.body, AnswerBody::Events { cut: true, .. }),
        "{cut:?}"
    );
    ask(&mut s, json!([user]));
    ask(&mut s, json!([user, call, result]));
    let answered: Vec<usize> = s.conversations().iter().map(|c| c.requests.len()).collect();
    assert_eq!(answered, [3, 1], "the resend went to the run that was cut");
}

#[test]
fn a_warning_appended_to_the_system_prompt_mid_run_is_the_loop_speaking_up() {
    // A client that folds every system message into one prompt (rig's, under IronClaw)
    // delivers the loop's warning appended to the prompt it had. The model hears it:
    // `intervened` holds, and the trace shows it as the agent's nudge.
    let scenario = r#"
format = 1
description = "test"
family = "t"
profile = "none"
user = "List the files."

[[tools]]
name = "exec"
schema = { type = "object" }
default = { ok = "a.txt" }

[model]
name = "m"

[[model.rules]]
when = { intervened = true }
reply = { text = "Heard." }

[[model.rules]]
reply = { tool_calls = [{ name = "exec", args = {} }] }
"#;
    let tools = json!([{"type": "function", "function": {"name": "exec", "parameters": {"type": "object"}}}]);
    let user = json!({"role": "user", "content": "List the files."});
    let run = |systems: [&str; 3]| {
        let mut s = session(scenario);
        let mut history = vec![
            json!({"role": "system", "content": systems[0]}),
            user.clone(),
        ];
        let mut answers = Vec::new();
        for system in systems {
            history[0] = json!({"role": "system", "content": system});
            let body = json!({"model": "gpt", "tools": tools, "messages": history});
            let r = s.handle(Api::ChatCompletions, body.to_string().as_bytes());
            let message = json_of(&r)["choices"][0]["message"].clone();
            answers.push(message["content"].as_str().unwrap_or("").to_owned());
            let id = message["tool_calls"][0]["id"].clone();
            history.push(message);
            history.push(json!({"role": "tool", "tool_call_id": id, "content": "a.txt"}));
        }
        (answers, lines(&s, 0), s.conversations().len())
    };
    let warning = "You are approaching the tool call limit. Answer now.";
    let (answers, l, conversations) = run([
        "You are helpful.",
        "You are helpful.",
        &format!("You are helpful.\n{warning}"),
    ]);
    assert_eq!(conversations, 1);
    assert_eq!(answers, ["", "", "Heard."], "{l:?}");
    let injected: Vec<&String> = l
        .iter()
        .filter(|l| l.contains("message_injected"))
        .collect();
    assert_eq!(injected.len(), 1, "{l:?}");
    assert!(
        injected[0].contains(&format!("role=system text=\"{warning}\"")),
        "{l:?}"
    );
    assert!(
        l.iter()
            .any(|l| l.ends_with("intervention policy=agent stage=1 action=nudge")),
        "{l:?}"
    );
    // A prompt refreshed in place (today's date) is context, not the loop speaking up; nor
    // is text run on in the prompt's last line, or the same prompt sent again.
    for systems in [
        [
            "You are helpful. Today is Monday.",
            "You are helpful. Today is Tuesday.",
            "You are helpful. Today is Tuesday.",
        ],
        [
            "You are helpful.",
            "You are helpful. It is 10:00.",
            "You are helpful. It is 10:00.",
        ],
    ] {
        let (answers, l, _) = run(systems);
        assert_eq!(answers, ["", "", ""], "{l:?}");
        assert!(!l.iter().any(|l| l.contains("message_injected")), "{l:?}");
    }
}

#[test]
fn an_end_after_calls_no_agent_can_read_says_the_wire_cannot_tell_why() {
    // Arguments cut off, or not a JSON object, as OpenAI's APIs carry them (text): a framework
    // that drops such calls and takes the rest of the answer as final (LangGraph, Haystack)
    // stops as one that gives up does; the trace says it cannot tell which. Calls it could
    // run end as before: an object, or no arguments at all (read as `{}`).
    for (call, readable) in [
        ("raw_args = '{\"a\": '", false),
        ("raw_args = 'ls -la'", false),
        ("raw_args = '[1]'", false),
        ("raw_args = '  '", true),
        ("args = { a = 1 }", true),
    ] {
        let mut s = session(&scripted(&format!(
            "tool_calls = [{{ name = \"exec\", {call} }}]"
        )));
        s.handle(Api::ChatCompletions, &openai(0, "", None, true));
        let l = lines(&s, 0);
        let outcome = l.last().cloned().unwrap_or_default();
        assert!(outcome.contains("outcome stopped iterations=1"), "{l:?}");
        assert_eq!(
            outcome.contains("whose calls could not be read"),
            !readable,
            "{call}: {outcome}"
        );
        assert_eq!(
            outcome.contains("without sending back the results of its tool calls"),
            readable,
            "{call}: {outcome}"
        );
    }
    // Anthropic's API carries arguments as an object: cut ones went out as `{}`, a call the
    // agent could run. Gemini's withholds such a call: the agent got the answer's text alone.
    let cut = scripted("tool_calls = [{ name = \"exec\", raw_args = '{\"a\": ' }]");
    let mut s = session(&cut);
    let messages = json!({"model": "m", "max_tokens": 100, "system": "sys",
        "messages": [{"role": "user", "content": "List the files."}],
        "tools": [{"name": "exec", "description": "Run", "input_schema": {"type": "object"}}]});
    s.handle(Api::Messages, messages.to_string().as_bytes());
    let outcome = lines(&s, 0).last().cloned().unwrap_or_default();
    assert!(
        outcome.contains("without sending back the results of its tool calls"),
        "{outcome}"
    );
    let mut s = session(&cut);
    s.handle(Api::GenerateContent, &gemini(&["List the files."], &[]));
    let outcome = lines(&s, 0).last().cloned().unwrap_or_default();
    assert!(outcome.contains("outcome response"), "{outcome}");
}
