//! What each request is answered with, on each API's wire.

use super::*;

#[test]
fn tools_offered_in_another_order_give_the_same_trace() {
    // The matcher compares the tools offered as a set; so does the golden.
    let tools = json!([
        {"type": "function", "function": {"name": "exec", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}
    ]);
    let mut reversed = tools.clone();
    if let Some(a) = reversed.as_array_mut() {
        a.reverse();
    }
    let trace = |tools: &Value| {
        let mut s = session(SCENARIO);
        let body = json!({"model": "gpt", "tools": tools, "messages": [
            {"role": "user", "content": "List the files."}]});
        s.handle(Api::ChatCompletions, body.to_string().as_bytes());
        lines(&s, 0)
    };
    let a = trace(&tools);
    assert!(a[0].contains("tools=[exec, read]"), "{a:?}");
    assert_eq!(a, trace(&reversed));
}

#[test]
fn a_portable_tool_stands_for_the_agents_own_and_generates_its_arguments() {
    let portable = r#"
format = 1
description = "test"
family = "t"
profile = "none"
user = "Book a flight."
config = { max_iterations = 3 }

[[tools]]
name = "exec"
schema = { type = "object", properties = { command = { type = "string" } }, required = ["command"] }
default = { error = "no" }
bind = "required:string"

[model]
name = "m"

[[model.rules]]
when = { last_tool_failed = true }
reply = { tool_calls = [{ name = "exec", generate = "valid" }] }

[[model.rules]]
reply = { tool_calls = [{ name = "exec", generate = "empty" }] }
"#;
    let tools = json!([
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"days": {"type": "integer"}}, "required": ["days"]}}},
        {"type": "function", "function": {"name": "search_flights", "parameters": {"type": "object", "properties": {
            "origin": {"type": "string"}, "destination": {"type": "string"}, "date": {"type": "string", "format": "date"}},
            "required": ["origin", "destination", "date"]}}}
    ]);
    let mut s = session(portable);
    let first = json!({"model": "gpt", "tools": tools, "messages": [{"role": "user", "content": "Book a flight."}]});
    let r = s.handle(Api::ChatCompletions, first.to_string().as_bytes());
    let call = json_of(&r)["choices"][0]["message"]["tool_calls"][0].clone();
    // The first offered tool with a required string parameter, with empty arguments.
    assert_eq!(call["function"]["name"], "search_flights");
    assert_eq!(call["function"]["arguments"], "{}");
    let next = json!({"model": "gpt", "tools": tools, "messages": [
        {"role": "user", "content": "Book a flight."},
        {"role": "assistant", "content": null, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": "Error: origin is required"}
    ]});
    let r = s.handle(Api::ChatCompletions, next.to_string().as_bytes());
    let again = &json_of(&r)["choices"][0]["message"]["tool_calls"][0]["function"];
    assert_eq!(again["name"], "search_flights");
    let args: Value =
        serde_json::from_str(again["arguments"].as_str().unwrap_or("")).unwrap_or_default();
    assert_eq!(
        args["date"], "2026-03-14",
        "valid arguments from the agent's schema: {args}"
    );
    assert!(
        args["origin"].is_string() && args["destination"].is_string(),
        "{args}"
    );
    // The trace keeps the scenario's name, and says what it stood for.
    let l = lines(&s, 0);
    assert!(
        l.iter().any(|l| l.contains("notice source=serve text=\"the scenario's tool `exec` stands for the agent's `search_flights` (bind = required:string)\"")),
        "{l:?}"
    );
    assert!(
        l.iter()
            .any(|l| l.contains("tool_call_end call_0 exec failed")),
        "{l:?}"
    );
    assert!(l[0].contains("tools=[exec, get_weather]"), "{l:?}");
    // An agent whose tools fit no rule is told so in the trace; the call keeps its name.
    let mut s = session(&portable.replace("required:string", "name:book_*"));
    s.handle(Api::ChatCompletions, first.to_string().as_bytes());
    assert!(
        lines(&s, 0)
            .iter()
            .any(|l| l
                .contains("fits none of the tools the agent offers (get_weather, search_flights)")),
        "{:?}",
        lines(&s, 0)
    );
}

#[test]
fn bindings_and_globs_pick_as_documented() {
    use crate::scenario::Bind;
    let tool = |name: &str, schema: Value| crate::llm::ToolSpec {
        name: name.to_owned(),
        description: String::new(),
        schema: schema.into(),
    };
    let read = tool(
        "read_file",
        json!({"properties": {"path": {"type": "string"}}, "required": ["path"]}),
    );
    let count = tool(
        "count",
        json!({"properties": {"n": {"type": ["integer", "null"]}}, "required": ["n"]}),
    );
    assert!(bind::fits(&Bind::Any, 0, &read));
    assert!(bind::fits(&Bind::Position(2), 1, &count) && !bind::fits(&Bind::Position(2), 0, &read));
    assert!(bind::fits(&Bind::Required("string".into()), 0, &read));
    assert!(!bind::fits(&Bind::Required("string".into()), 1, &count));
    assert!(bind::fits(&Bind::Required("integer".into()), 1, &count));
    assert!(bind::fits(&Bind::Name("read_*".into()), 0, &read));
    assert!(bind::fits(&Bind::Name("*_file".into()), 0, &read));
    assert!(bind::fits(&Bind::Name("r*d*e".into()), 0, &read));
    assert!(!bind::fits(&Bind::Name("read".into()), 0, &read));
    assert!(!bind::fits(&Bind::Name("*x*".into()), 0, &read));
    assert_eq!(
        Bind::parse("position:0")
            .err()
            .map(|e| e.contains("from 1")),
        Some(true)
    );
    assert!(Bind::parse("required:text").is_err());
    assert!(Bind::parse("first").is_err());
    assert_eq!(
        Bind::parse("name:a*").map(|b| b.to_string()),
        Ok("name:a*".to_owned())
    );
}

#[test]
fn an_agent_offering_no_tools_to_a_scenario_that_calls_them_gets_a_notice() {
    let mut s = session(SCENARIO);
    // No tools offered, nothing failed yet: the scenario's model calls `exec` anyway.
    let r = s.handle(Api::ChatCompletions, &openai(0, "", None, false));
    assert_eq!(r.status, 200);
    let notices: Vec<String> = lines(&s, 0)
        .into_iter()
        .filter(|l| l.contains(" notice "))
        .collect();
    assert_eq!(notices.len(), 1, "{notices:?}");
    assert!(
        notices[0].contains("the agent offered no tools, and the scenario's model called `exec`"),
        "{notices:?}"
    );
    // An agent that offers them gets none.
    let mut s = session(SCENARIO);
    s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    assert!(!lines(&s, 0).iter().any(|l| l.contains(" notice ")));
}

#[test]
fn the_rules_see_the_real_request_and_the_trace_shows_the_nudge() {
    let mut s = session(SCENARIO);
    let r = s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    assert_eq!(r.status, 200);
    let call = &json_of(&r)["choices"][0]["message"]["tool_calls"][0];
    assert_eq!(call["function"]["name"], "exec");
    let r = s.handle(
        Api::ChatCompletions,
        &openai(1, "Error: no", Some("LOOP!"), true),
    );
    assert_eq!(json_of(&r)["choices"][0]["message"]["content"], "Sorry.");
    assert_eq!(s.conversations().len(), 1);
    assert_eq!(
        lines(&s, 0),
        [
            "0 run_start profile=exec model=gpt max_iterations=3 tools=[exec]",
            "0 iteration 1",
            "0 model_request call=1 messages=2 tools=[exec]",
            "1000 model_response finish=tool_use calls=[call_0 exec({})] tokens=11/2 latency=1000ms",
            "1000 tool_call_start call_0 exec({})",
            "1200 tool_call_end call_0 exec failed error=\"Error: no\" latency=200ms rule=\"error-prefix\"",
            "1200 intervention policy=agent stage=1 action=nudge",
            "1200 message_injected source=agent role=user text=\"LOOP!\"",
            "1200 iteration 2",
            "1200 model_request call=2 messages=5 tools=[exec]",
            "2200 model_response finish=stop text=\"Sorry.\" tokens=16/2 latency=1000ms",
            "2200 outcome response iterations=2 text=\"Sorry.\"",
        ]
    );
}

#[test]
fn openai_failures_follow_the_error_convention_and_stripped_tools_are_seen() {
    let mut s = session(SCENARIO);
    s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    // Tools withheld and the last result failed: the second rule answers.
    let r = s.handle(Api::ChatCompletions, &openai(1, "Error: no", None, false));
    assert_eq!(
        json_of(&r)["choices"][0]["message"]["content"],
        "Failed, no tools."
    );
    let l = lines(&s, 0);
    assert!(l.contains(&"1200 intervention policy=agent stage=2 action=strip_tools".into()));
    assert!(l.contains(&"1200 model_request call=2 messages=4 tools=[] stripped".into()));
    // The same text as a success does not count as failed for the rule.
    let mut s = session(SCENARIO);
    s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    let r = s.handle(Api::ChatCompletions, &openai(1, "fine", None, false));
    assert!(json_of(&r)["choices"][0]["message"]["tool_calls"].is_array());
}

#[test]
fn a_suite_answer_goes_to_an_agent_that_ends_through_an_answer_tool() {
    let text = SCENARIO
        .replace(
            "config = { max_iterations = 3 }",
            "config = { max_iterations = 3 }\n\n[suite]\nkind = \"legitimate\"\ntitle = \"t\"\nanswer = \"Done\"",
        )
        .replace(
            "[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
            "[[model.rules]]\nwhen = { any_message_contains = \"ANSWER\" }\nreply = { text = \"Done: a.txt\" }\n\n[[model.rules]]\nwhen = { any_message_contains = \"STALL\" }\nreply = { text = \"Let me look.\" }\n\n[[model.rules]]\nwhen = { any_message_contains = \"LOOP\" }",
        );
    let submit = json!({"type": "function", "function": {"name": "submit", "description": "Submit an answer",
        "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}});
    let request = |user: &str, stream: bool| {
        json!({"model": "m", "stream": stream, "tools": [tool()[0].clone(), submit.clone()], "messages": [
            {"role": "system", "content": "sys"}, {"role": "user", "content": user}]})
        .to_string()
    };
    let mut s = session(&text);
    // The final answer: a call of `submit` with the text, whole and streamed.
    let r = s.handle(Api::ChatCompletions, request("ANSWER", false).as_bytes());
    let message = &json_of(&r)["choices"][0]["message"];
    assert_eq!(message["tool_calls"][0]["function"]["name"], "submit");
    assert_eq!(
        message["tool_calls"][0]["function"]["arguments"],
        r#"{"answer":"Done: a.txt"}"#
    );
    assert!(message["content"].is_null(), "{message}");
    let r = s.handle(Api::ChatCompletions, request("ANSWER", true).as_bytes());
    let AnswerBody::Events { events, .. } = &r.body else {
        panic!("expected a stream")
    };
    let streamed: String = events.iter().map(|e| e.data.clone()).collect();
    assert!(streamed.contains(r#""name":"submit""#), "{streamed}");
    // The trace keeps the script's text, and says where it went.
    let l = lines(&s, 0);
    assert!(
        l.iter().any(|l| l.contains("answer tool `submit`")),
        "{l:?}"
    );
    assert!(
        l.iter()
            .any(|l| l.contains("outcome response") && l.contains("Done: a.txt")),
        "{l:?}"
    );
    // Any other text goes out as text.
    let r = s.handle(Api::ChatCompletions, request("STALL", false).as_bytes());
    assert_eq!(
        json_of(&r)["choices"][0]["message"]["content"],
        "Let me look."
    );
}

#[test]
fn anthropic_streams_round_trip_and_is_error_is_read() {
    let mut s = session(SCENARIO);
    let body = |messages: Value| {
        json!({"model": "claude", "max_tokens": 100, "stream": true, "system": "sys",
            "tools": [{"name": "exec", "description": "Run", "input_schema": {"type": "object"}}],
            "messages": messages})
        .to_string()
        .into_bytes()
    };
    let r = s.handle(
        Api::Messages,
        &body(json!([{"role": "user", "content": "List the files."}])),
    );
    let AnswerBody::Events { events, .. } = &r.body else {
        panic!("expected a stream")
    };
    let back = Provider::Anthropic.parse_stream(events).expect("parses");
    let folded = stream::assemble(&back.stream).expect("folds");
    assert_eq!(folded.tool_calls[0].name, "exec");
    assert_eq!(folded.finish, Some(Finish::ToolUse));
    s.handle(
        Api::Messages,
        &body(json!([
            {"role": "user", "content": "List the files."},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "call_0", "name": "exec", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_0", "content": "no", "is_error": true}]},
        ])),
    );
    let l = lines(&s, 0);
    assert!(
        l.iter()
            .any(|l| l.contains("model_response finish=tool_use chunks=4"))
    );
    assert!(
        l.contains(
            &"1200 tool_call_end call_0 exec failed error=\"no\" latency=200ms rule=\"is_error\""
                .into()
        )
    );
    assert!(
        !l.iter().any(|l| l.contains("intervention")),
        "a tool result is no nudge: {l:?}"
    );
    assert_eq!(s.conversations().len(), 1);
}

#[test]
fn the_usage_chunk_comes_only_when_asked_for_and_the_role_comes_first() {
    let mut s = session(SCENARIO);
    let ask = |usage: bool| {
        let mut body = json!({"model": "gpt", "stream": true, "tools": tool(),
            "messages": [{"role": "user", "content": "List the files."}]});
        if usage {
            body["stream_options"] = json!({"include_usage": true});
        }
        body.to_string().into_bytes()
    };
    for usage in [false, true] {
        let r = s.handle(Api::ChatCompletions, &ask(usage));
        let AnswerBody::Events { events, cut, .. } = &r.body else {
            panic!("expected a stream")
        };
        assert!(!cut);
        let data: Vec<Value> = events
            .iter()
            .filter(|e| e.data != "[DONE]")
            .map(|e| serde_json::from_str(&e.data).unwrap_or_default())
            .collect();
        assert_eq!(data[0]["choices"][0]["delta"]["role"], "assistant");
        assert!(data.iter().all(|d| d["created"].as_u64() >= Some(EPOCH_S)));
        let empty = data.iter().filter(|d| d["choices"] == json!([])).count();
        assert_eq!(empty, usize::from(usage), "usage chunk asked: {usage}");
        assert_eq!(events.last().map(|e| e.data.as_str()), Some("[DONE]"));
    }
}

#[test]
fn tool_choice_and_n_are_honoured_or_refused() {
    let text = SCENARIO.replace(
        "[[model.rules]]\nreply = { tool_calls",
        "[[model.rules]]\nwhen = { any_message_contains = \"TEXT\" }\nreply = { text = \"Plain.\" }\n\n[[model.rules]]\nreply = { tool_calls",
    );
    let mut s = session(&text);
    let body = |user: &str, extra: Value| {
        let mut b = json!({"model": "gpt", "tools": tool(),
            "messages": [{"role": "user", "content": user}]});
        for (k, v) in extra.as_object().into_iter().flatten() {
            b[k] = v.clone();
        }
        b.to_string().into_bytes()
    };
    let r = s.handle(Api::ChatCompletions, &body("List.", json!({"n": 3})));
    assert_eq!(json_of(&r)["choices"].as_array().map(Vec::len), Some(3));
    let r = s.handle(
        Api::ChatCompletions,
        &body("TEXT", json!({"tool_choice": "required"})),
    );
    assert_eq!(r.status, 400);
    assert!(
        json_of(&r)["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("requires a tool call"))
    );
    let r = s.handle(
        Api::ChatCompletions,
        &body(
            "List.",
            json!({"tool_choice": {"type": "function", "function": {"name": "exec"}}}),
        ),
    );
    assert_eq!(r.status, 200);
    let r = s.handle(Api::ChatCompletions, &body("List.", json!({"n": 0})));
    assert_eq!(r.status, 400);
}

#[test]
fn anthropic_wire_details_are_the_apis() {
    let mut s = session(SCENARIO);
    let no_max =
        json!({"model": "claude", "messages": [{"role": "user", "content": "List the files."}]});
    let r = s.handle(Api::Messages, no_max.to_string().as_bytes());
    assert_eq!(r.status, 400);
    assert_eq!(json_of(&r)["error"]["type"], "invalid_request_error");
    assert!(
        json_of(&r)["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("max_tokens: Field required")),
        "{:?}",
        json_of(&r)
    );
    // A system message among the turns, as newer models take one (Claude Code sends it):
    // answered; another role is refused, named.
    let system = json!({"model": "claude", "max_tokens": 10, "messages": [
        {"role": "user", "content": "List the files."}, {"role": "system", "content": "x"}]});
    let r = s.handle(Api::Messages, system.to_string().as_bytes());
    assert_eq!(r.status, 200);
    let other = json!({"model": "claude", "max_tokens": 10, "messages": [{"role": "tool", "content": "x"}]});
    let r = s.handle(Api::Messages, other.to_string().as_bytes());
    let m = json_of(&r)["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        m.contains("messages[0].role is `tool`") && !m.contains("Some("),
        "{m}"
    );
    let ok = json!({"model": "claude", "max_tokens": 10, "stream": true,
        "tools": [{"name": "exec", "description": "Run", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "List the files."}]});
    let r = s.handle(Api::Messages, ok.to_string().as_bytes());
    let AnswerBody::Events { events, .. } = &r.body else {
        panic!("expected a stream")
    };
    let names: Vec<&str> = events.iter().filter_map(|e| e.event.as_deref()).collect();
    assert_eq!(&names[..2], ["message_start", "ping"]);
    let start: Value = serde_json::from_str(&events[0].data).unwrap_or_default();
    assert!(
        start["message"]["id"]
            .as_str()
            .is_some_and(|i| i.starts_with("msg_01"))
    );
    assert_eq!(start["message"]["stop_sequence"], Value::Null);
    assert!(start["message"]["usage"]["output_tokens"].as_u64() >= Some(1));
    let block: Value = serde_json::from_str(&events[2].data).unwrap_or_default();
    assert!(
        block["content_block"]["id"]
            .as_str()
            .is_some_and(|i| i.starts_with("toolu_01") && i.len() == 30)
    );
    let (status, body) =
        Provider::Anthropic.render_fault(crate::llm::FaultKind::ServerError, "Overloaded");
    assert_eq!(
        (status, &body["error"]["type"]),
        (529, &json!("overloaded_error"))
    );
}

#[test]
fn a_server_fault_and_an_empty_conversation_are_answered_as_each_api_does() {
    let faulty = SCENARIO.replace(
        "reply = { tool_calls = [{ name = \"exec\", args = {} }] }",
        "reply = { fault = { kind = \"server_error\" } }",
    );
    let message = |r: &HttpAnswer| match &r.body {
        AnswerBody::Json(v) => v["error"]["message"].as_str().unwrap_or("").to_owned(),
        AnswerBody::Events { .. } | AnswerBody::Array { .. } => String::new(),
    };
    let mut s = session(&faulty);
    let r = s.handle(Api::ChatCompletions, &openai(0, "", None, true));
    assert_eq!((r.status, message(&r).as_str()), (500, OPENAI_SERVER_ERROR));
    let mut s = session(&faulty);
    let anthropic = json!({"model": "claude", "max_tokens": 10, "system": "sys",
        "messages": [{"role": "user", "content": "List the files."}]});
    let r = s.handle(Api::Messages, anthropic.to_string().as_bytes());
    assert_eq!(r.status, 529);
    assert!(message(&r).contains("Overloaded"), "{}", message(&r));
    // `messages: []` is refused, on both APIs.
    let mut s = session(SCENARIO);
    let r = s.handle(Api::ChatCompletions, br#"{"model": "m", "messages": []}"#);
    assert_eq!(r.status, 400);
    assert!(message(&r).contains("too short"), "{}", message(&r));
    let r = s.handle(
        Api::Messages,
        br#"{"model": "m", "max_tokens": 5, "messages": []}"#,
    );
    assert_eq!(r.status, 400);
    assert!(
        message(&r).contains("at least one message"),
        "{}",
        message(&r)
    );
    assert!(s.conversations().is_empty());
}

/// A request that asks for JSON (JSON mode, or a schema of the agent's: openai-agents'
/// `output_type`, pydantic-ai's native output) gets the script's text in that form, as a
/// provider answers; the trace keeps the scripted text. Text already in form goes out as is.
#[test]
fn a_request_asking_for_json_gets_the_scripted_text_in_its_form() {
    let scenario = SCENARIO.replace(
        "reply = { tool_calls = [{ name = \"exec\", args = {} }] }",
        "reply = { text = \"Found 3 files.\" }",
    );
    let user = json!({"role": "user", "content": "List the files."});
    let schema = json!({"type": "object", "additionalProperties": false,
        "properties": {"count": {"type": "integer"}, "summary": {"type": "string"}},
        "required": ["count", "summary"]});
    let text_of = |api: Api, body: Value| -> (String, Session) {
        let mut s = session(&scenario);
        let r = s.handle(api, body.to_string().as_bytes());
        let v = json_of(&r);
        let text = match api {
            Api::ChatCompletions => v["choices"][0]["message"]["content"].clone(),
            Api::Responses => v["output"][0]["content"][0]["text"].clone(),
            Api::Messages => v["content"][0]["text"].clone(),
            Api::GenerateContent => v["candidates"][0]["content"]["parts"][0]["text"].clone(),
        };
        (text.as_str().unwrap_or_default().to_owned(), s)
    };
    // Chat Completions, a schema: a value it accepts, the words in its string field.
    let (text, s) = text_of(
        Api::ChatCompletions,
        json!({"model": "m", "messages": [user], "tools": tool(), "response_format":
            {"type": "json_schema", "json_schema": {"name": "out", "strict": true, "schema": schema}}}),
    );
    let v: Value = serde_json::from_str(&text).expect("JSON");
    assert!(
        v["count"].is_i64() && v["summary"] == "Found 3 files.",
        "{text}"
    );
    let trace = lines(&s, 0);
    assert!(
        trace
            .iter()
            .any(|l| l.contains("model_response") && l.contains("text=\"Found 3 files.\"")),
        "the trace keeps the scripted text: {trace:?}"
    );
    assert!(
        trace.iter().any(|l| l.contains("notice source=serve")
            && l.contains("goes out as the JSON the request asks for: {")),
        "and says what went out: {trace:?}"
    );
    // Responses, JSON mode: the words in an object.
    let (text, s) = text_of(
        Api::Responses,
        json!({"model": "m", "input": "List the files.", "text": {"format": {"type": "json_object"}}}),
    );
    assert_eq!(
        serde_json::from_str::<Value>(&text).expect("JSON"),
        json!({"text": "Found 3 files."})
    );
    // That shape is harness's, and the trace says so (the card reads it); a schema's is not.
    let said = |s: &Session| {
        lines(s, 0)
            .iter()
            .any(|l| l.contains(crate::vocabulary::SHAPE_CHOSEN))
    };
    assert!(said(&s), "{:?}", lines(&s, 0));
    assert!(
        !trace
            .iter()
            .any(|l| l.contains(crate::vocabulary::SHAPE_CHOSEN))
    );
    // Anthropic structured outputs, a schema that takes a string: the words as one. (The
    // loop offers tools; without, a request for JSON by a schema is a side request.)
    let (text, _) = text_of(
        Api::Messages,
        json!({"model": "m", "max_tokens": 100, "messages": [user],
            "tools": [{"name": "exec", "input_schema": {"type": "object"}}],
            "output_config": {"format": {"type": "json_schema", "schema": {"type": "string"}}}}),
    );
    assert_eq!(text, "\"Found 3 files.\"");
    // Gemini, `application/json` with an OpenAPI-subset schema.
    let (text, _) = text_of(
        Api::GenerateContent,
        json!({"contents": [{"role": "user", "parts": [{"text": "List the files."}]}],
            "tools": [{"functionDeclarations": [{"name": "exec"}]}],
            "generationConfig": {"responseMimeType": "application/json", "responseSchema":
                {"type": "OBJECT", "properties": {"files": {"type": "ARRAY", "items": {"type": "STRING"}}},
                 "required": ["files"]}}}),
    );
    let v: Value = serde_json::from_str(&text).expect("JSON");
    assert!(v["files"].is_array(), "{text}");
    // Text in form already, and a request that asks for none: as scripted.
    let in_form = scenario.replace(
        "Found 3 files.",
        "{\\\"count\\\": 3, \\\"summary\\\": \\\"ok\\\"}",
    );
    let mut s = session(&in_form);
    let r = s.handle(
        Api::ChatCompletions,
        json!({"model": "m", "messages": [user], "tools": tool(), "response_format":
            {"type": "json_schema", "json_schema": {"name": "out", "schema": schema}}})
        .to_string()
        .as_bytes(),
    );
    assert_eq!(
        json_of(&r)["choices"][0]["message"]["content"],
        "{\"count\": 3, \"summary\": \"ok\"}"
    );
    let (text, _) = text_of(
        Api::ChatCompletions,
        json!({"model": "m", "messages": [user]}),
    );
    assert_eq!(text, "Found 3 files.");
}
