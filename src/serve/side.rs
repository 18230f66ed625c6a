//! Side requests: the requests an agent makes beside the loop under test — a title for the
//! session, a summary or compaction of its history, a memory pass, a router model choosing a
//! model, a subagent's fresh conversation. They are not the loop, so the scenario's script
//! does not answer them (a compaction answered with a tool call crashes the agent) and the
//! report card never takes one as the case's outcome.
//!
//! A conversation is a side one when its first request is:
//! 1. without tools, and the agent's own words (its system prompt under 2,000 characters, or
//!    the last user message, the scenario's own system prompt and task taken out) ask for a
//!    summary, a title, a compaction, a condensed history or a memory;
//! 2. made while an earlier conversation's latest answer calls a meta tool of the agent's (a
//!    subagent, a task: [`super::bind::is_meta`]) — the subagent's own conversation (the
//!    suite binds no meta tool unless `--bind` names one, so this is rare);
//! 3. without tools, to another model than an earlier conversation that offered tools;
//! 4. without tools, asking for JSON that a schema of the agent's accepts (structured output:
//!    Gemini CLI's router choosing a model before every task, a classifier, a check), when the
//!    scenario has tools — no scripted turn fits such a request, and its answer is no step of
//!    the loop. (A scenario without tools is one of an agent whose loop is such an answer.)
//!
//! A later request of a conversation is a side one too ([`follow_up`]) when the loop has ended
//! (its latest answer was text, or the agent sends back no result of that answer's calls) and
//! the agent now asks, without tools, for JSON by a schema of its own: the
//! structured answer some frameworks make after their loop ends (LangGraph's `response_format`),
//! when the scenario has tools. It starts a side conversation of its own, so it is neither a
//! step of the loop nor the loop withholding its tools.
//!
//! It is answered by the script's `[model] side` turn, or a short text — as JSON in the form
//! the request asks, when it asks for one (see `render::in_form`).

use super::{Conversation, Reply};
use crate::llm::Role;
use crate::provider::{TextForm, WireRequest};
use crate::scenario::{ModelScript, RuleDef, Scenario, TurnDef};

/// What a side request's instruction asks for, by a part of its words.
const ASKS: [(&str, &str); 6] = [
    ("summar", "a summary"),
    ("title", "a title"),
    ("compact", "a compaction"),
    ("condense", "a condensed history"),
    ("memor", "a memory pass"),
    ("name this conversation", "a title"),
];

/// A system prompt longer than this is an agent's main prompt, not a side instruction.
const SHORT_SYSTEM: usize = 2_000;

/// The text a side request gets when the script says nothing.
pub const SIDE_TEXT: &str = "Looked up what was asked and reported what was found.";

/// Why the first request of a new conversation is a side request, if it is one (see the
/// module doc); `earlier` are the session's conversations before it.
pub(crate) fn reason(
    request: &WireRequest,
    scenario: &Scenario,
    earlier: &[Conversation],
) -> Option<String> {
    let own = |text: &str| {
        let mut t = text.to_lowercase();
        for case_text in [&scenario.system, &scenario.user] {
            if !case_text.is_empty() {
                t = t.replace(&case_text.to_lowercase(), " ");
            }
        }
        t
    };
    if request.tools.is_empty() {
        let mut words: Vec<String> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::System && m.content.len() < SHORT_SYSTEM)
            .map(|m| own(&m.content))
            .collect();
        if let Some(last) = request.messages.iter().rev().find(|m| m.role == Role::User) {
            words.push(own(&last.content));
        }
        if let Some((word, what)) = ASKS
            .iter()
            .find(|(word, _)| words.iter().any(|w| w.contains(word)))
        {
            return Some(format!(
                "{what} request (no tools offered; the agent's instruction says `{word}…`)"
            ));
        }
    }
    // Only where the scenario expects its loop to offer tools: an agent whose loop is one
    // structured answer (an extraction agent with no tools) is the loop of a scenario without.
    if request.tools.is_empty()
        && !scenario.tools.is_empty()
        && matches!(request.asks.form, TextForm::Schema(_))
    {
        return Some(
            "a structured-output request (no tools offered; it asks for JSON by a schema of its own)"
                .to_owned(),
        );
    }
    let main = || earlier.iter().filter(|c| c.side.is_none());
    if let Some(meta) = main().find_map(spawning) {
        return Some(format!(
            "a subagent's conversation (the loop's latest answer called `{meta}`)"
        ));
    }
    if request.tools.is_empty() {
        let model = &request.options.model;
        if let Some(other) = main().find_map(|c| {
            let first = c.requests.first()?;
            (!first.request.tools.is_empty() && &first.request.options.model != model)
                .then(|| first.request.options.model.clone())
        }) {
            return Some(format!(
                "a request to another model (`{model}`, the loop's is `{other}`) without tools"
            ));
        }
    }
    None
}

/// Why a later request of `conversation` is a side request, if it is one: a structured answer
/// asked for after the loop's text answer (see the module doc).
pub(crate) fn follow_up(
    request: &WireRequest,
    scenario: &Scenario,
    conversation: &Conversation,
) -> Option<String> {
    if !request.tools.is_empty()
        || scenario.tools.is_empty()
        || conversation.side.is_some()
        || !matches!(request.asks.form, TextForm::Schema(_))
    {
        return None;
    }
    // The loop had ended: its latest answer was text, or the agent dropped that answer's
    // calls (cut off, not JSON) and sends back no result of them.
    let last = conversation.requests.last()?;
    let Reply::Answer(answer) = &last.reply else {
        return None;
    };
    // The ids its calls went out with (the wire's, when they differ from the reply's).
    let sent: Vec<&str> = if last.wire_ids.is_empty() {
        answer.tool_calls.iter().map(|c| c.id.as_str()).collect()
    } else {
        last.wire_ids.iter().map(String::as_str).collect()
    };
    let ended = !request
        .results
        .iter()
        .any(|r| sent.contains(&r.id.as_str()));
    (!last.request.tools.is_empty() && ended).then(|| {
        "a structured-output request after the loop's answer (no tools offered; it asks for JSON by a schema of its own)"
            .to_owned()
    })
}

/// The meta tool (as the agent names it) that a conversation's latest answer called, if any:
/// its calls go out under the agent's names of the bound tools.
fn spawning(c: &Conversation) -> Option<String> {
    let last = c.requests.last()?;
    let Reply::Answer(r) = &last.reply else {
        return None;
    };
    let bindings = c.binding.as_deref().unwrap_or_default();
    r.tool_calls.iter().find_map(|call| {
        let name = bindings
            .iter()
            .find(|b| b.declared == call.name)
            .and_then(|b| b.offered.clone())
            .unwrap_or_else(|| call.name.clone());
        super::bind::is_meta(&name).then_some(name)
    })
}

/// The scenario a side conversation is answered from: the case's, its script one rule that
/// answers every request with the `[model] side` turn (or [`SIDE_TEXT`]).
pub(crate) fn scenario(case: &Scenario) -> Scenario {
    let reply = case.model.side.clone().unwrap_or_else(|| TurnDef {
        text: Some(SIDE_TEXT.to_owned()),
        ..TurnDef::default()
    });
    Scenario {
        model: ModelScript {
            rules: vec![RuleDef {
                when: crate::scenario::Conditions::default(),
                reply,
                times: None,
            }],
            turns: Vec::new(),
            ..case.model.clone()
        },
        ..case.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Api, Session};
    use crate::scenario::SourceFormat;
    use serde_json::json;

    const SCENARIO: &str = r#"
format = 1
family = "t"
system = "You are a helpful assistant."
user = "Summarize the open tickets."

[[tools]]
name = "act"
schema = { type = "object", properties = { q = { type = "string" } }, required = ["q"] }
bind = "any"

[[model.rules]]
reply = { tool_calls = [{ name = "act", generate = "valid" }] }
"#;

    fn session() -> Session {
        let cases = crate::scenario::load(SCENARIO, SourceFormat::Toml, "t/x").expect("loads");
        Session::new(cases[0].clone())
    }

    fn body(model: &str, system: &str, user: &str, tools: &[&str]) -> Vec<u8> {
        let mut b = json!({"model": model, "messages": [
            {"role": "system", "content": system}, {"role": "user", "content": user}]});
        if !tools.is_empty() {
            b["tools"] = tools
                .iter()
                .map(|t| json!({"type": "function", "function": {"name": t, "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}))
                .collect();
        }
        b.to_string().into_bytes()
    }

    /// What the request was answered: its text, or the names of the calls.
    fn answered(s: &mut Session, b: &[u8]) -> String {
        let a = s.handle(Api::ChatCompletions, b);
        let super::super::AnswerBody::Json(v) = &a.body else {
            panic!("a JSON answer")
        };
        let m = &v["choices"][0]["message"];
        match m["tool_calls"].as_array() {
            Some(calls) => calls
                .iter()
                .filter_map(|c| c["function"]["name"].as_str())
                .collect::<Vec<_>>()
                .join(","),
            None => m["content"].as_str().unwrap_or("").to_owned(),
        }
    }

    fn sides(s: &Session) -> Vec<Option<String>> {
        s.conversations().iter().map(|c| c.side.clone()).collect()
    }

    #[test]
    fn a_title_a_summary_and_another_model_are_side_requests_the_task_is_not() {
        let mut s = session();
        // The loop itself, although its task asks for a summary and it offers tools.
        let task = "Summarize the open tickets.";
        let system = "You are a helpful assistant.";
        assert_eq!(
            answered(&mut s, &body("gpt", system, task, &["search"])),
            "search"
        );
        // A title for the session: no tools, the agent's own words.
        let title = body(
            "gpt",
            "Write a title of at most six words for this conversation.",
            task,
            &[],
        );
        assert_eq!(answered(&mut s, &title), super::SIDE_TEXT);
        // A router model, no tools.
        assert_eq!(
            answered(
                &mut s,
                &body("mini", system, "Which model fits: flash or pro?", &[])
            ),
            super::SIDE_TEXT
        );
        let sides = sides(&s);
        assert_eq!(sides[0], None);
        assert!(
            sides[1]
                .as_deref()
                .is_some_and(|w| w.starts_with("a title request")),
            "{sides:?}"
        );
        assert!(
            sides[2]
                .as_deref()
                .is_some_and(|w| w.contains("another model (`mini`")),
            "{sides:?}"
        );
    }

    /// Gemini CLI's router: before the loop, the task sent without tools to a small model
    /// that must answer JSON by a schema. A side request, answered with a value the schema
    /// accepts (the side text where a string may hold it); the loop then starts the script.
    #[test]
    fn a_router_asking_for_json_by_a_schema_is_a_side_request_answered_in_its_form() {
        let mut s = session();
        let task = json!({"role": "user", "parts": [{"text": "Summarize the open tickets."}]});
        let router = json!({
            "contents": [task],
            "systemInstruction": {"parts": [{"text": "You are a specialized Task Routing AI. Choose flash or pro."}]},
            // Gemini CLI writes the schema's types in the API's capitals.
            "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {
                "type": "OBJECT",
                "properties": {"reasoning": {"type": "STRING"}, "model_choice": {"type": "STRING", "enum": ["flash", "pro"]},
                    "score": {"type": "INTEGER", "minimum": 1, "maximum": 100}},
                "required": ["reasoning", "model_choice", "score"]}}});
        let a = s.handle(Api::GenerateContent, router.to_string().as_bytes());
        let super::super::AnswerBody::Json(v) = &a.body else {
            panic!("a JSON answer")
        };
        let text = v["candidates"][0]["content"]["parts"][0]["text"]
            .as_str()
            .expect("a text part");
        let chosen: serde_json::Value = serde_json::from_str(text).expect("JSON text");
        assert_eq!(chosen["reasoning"], super::SIDE_TEXT, "{text}");
        assert!(
            chosen["model_choice"] == "flash" || chosen["model_choice"] == "pro",
            "{text}"
        );
        assert!(
            chosen["score"]
                .as_i64()
                .is_some_and(|n| (1..=100).contains(&n)),
            "{text}"
        );
        let main = json!({"contents": [task], "tools": [{"functionDeclarations": [{"name": "search",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}]}]});
        let a = s.handle(Api::GenerateContent, main.to_string().as_bytes());
        let super::super::AnswerBody::Json(v) = &a.body else {
            panic!("a JSON answer")
        };
        assert_eq!(
            v["candidates"][0]["content"]["parts"][0]["functionCall"]["name"], "search",
            "the script's first turn: {v}"
        );
        let sides = sides(&s);
        assert!(
            sides[0]
                .as_deref()
                .is_some_and(|w| w.starts_with("a structured-output request")),
            "{sides:?}"
        );
        assert_eq!(sides[1], None);
    }

    /// LangGraph's `response_format`: after the loop's text answer, one more request of the
    /// same history, without tools, asking for JSON by a schema. A side conversation of its
    /// own, answered in its form: not the loop withholding its tools, nor the script's next
    /// turn. A request that sends back results of the latest answer's calls is the loop's.
    #[test]
    fn a_structured_answer_after_the_loop_is_a_side_request_of_its_own() {
        let scenario = r#"
format = 1
family = "t"
system = "You are a helpful assistant."
user = "Look it up."

[[tools]]
name = "act"
schema = { type = "object", properties = { q = { type = "string" } }, required = ["q"] }
bind = "any"

[[model.turns]]
tool_calls = [{ id = "k1", name = "act", args = { q = "x" } }]

[[model.turns]]
text = "All done: found it."

[[model.turns]]
text = "The script's third turn."
"#;
        let cases = crate::scenario::load(scenario, SourceFormat::Toml, "t/x").expect("loads");
        let mut s = Session::new(cases[0].clone());
        let tools = json!([{"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]);
        let system = json!({"role": "system", "content": "You are a helpful assistant."});
        let user = json!({"role": "user", "content": "Look it up."});
        let first = json!({"model": "gpt", "messages": [system, user], "tools": tools});
        let a = s.handle(Api::ChatCompletions, first.to_string().as_bytes());
        let super::super::AnswerBody::Json(v) = &a.body else {
            panic!("a JSON answer")
        };
        // The answer as the agent keeps it, with the session's own call id.
        let call = v["choices"][0]["message"].clone();
        let id = call["tool_calls"][0]["id"].clone();
        let result = json!({"role": "tool", "tool_call_id": id, "content": "found"});
        let second =
            json!({"model": "gpt", "messages": [system, user, call, result], "tools": tools});
        assert_eq!(
            answered(&mut s, second.to_string().as_bytes()),
            "All done: found it."
        );
        let done = json!({"role": "assistant", "content": "All done: found it."});
        let schema = json!({"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]});
        let structured = json!({"model": "gpt", "messages": [system, user, call, result, done],
            "response_format": {"type": "json_schema", "json_schema": {"name": "Answer", "schema": schema}}});
        let text = answered(&mut s, structured.to_string().as_bytes());
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON in its form");
        assert_eq!(v["answer"], super::SIDE_TEXT, "{text}");
        let sides = sides(&s);
        assert_eq!(sides.len(), 2, "{sides:?}");
        assert_eq!(sides[0], None);
        assert!(
            sides[1].as_deref().is_some_and(
                |w| w.starts_with("a structured-output request after the loop's answer")
            ),
            "{sides:?}"
        );
        assert_eq!(
            s.conversations()[0].requests.len(),
            2,
            "the loop's two requests"
        );
        // A defence that withholds the tools and asks for JSON while it sends back the
        // results of the latest calls is the loop's own request.
        let mut s = Session::new(cases[0].clone());
        let a = s.handle(Api::ChatCompletions, first.to_string().as_bytes());
        let super::super::AnswerBody::Json(v) = &a.body else {
            panic!("a JSON answer")
        };
        let call = v["choices"][0]["message"].clone();
        let result = json!({"role": "tool", "tool_call_id": call["tool_calls"][0]["id"], "content": "found"});
        let forced = json!({"model": "gpt", "messages": [system, user, call, result],
            "response_format": {"type": "json_schema", "json_schema": {"name": "Answer", "schema": schema}}});
        answered(&mut s, forced.to_string().as_bytes());
        assert_eq!(
            super::super::Session::conversations(&s).len(),
            1,
            "the loop's request"
        );
        assert_eq!(s.conversations()[0].side, None);
    }

    /// An extraction agent: no tools, its one answer JSON by a schema. In a scenario without
    /// tools that is the loop, not a side request (rule 4 needs a scenario with tools).
    #[test]
    fn a_structured_answer_is_the_loop_of_a_scenario_without_tools() {
        let text = "format = 1\nfamily = \"t\"\nuser = \"Extract the invoice.\"\n\n[[model.turns]]\ntext = \"The total is 42.\"\n";
        let cases = crate::scenario::load(text, SourceFormat::Toml, "t/x").expect("loads");
        let mut s = Session::new(cases[0].clone());
        let body = json!({"model": "gpt", "input": "Extract the invoice.", "text": {"format": {
            "type": "json_schema", "name": "Out", "schema": {"type": "object",
            "properties": {"total": {"type": "number"}, "note": {"type": "string"}},
            "required": ["total", "note"]}}}});
        let a = s.handle(Api::Responses, body.to_string().as_bytes());
        let super::super::AnswerBody::Json(v) = &a.body else {
            panic!("a JSON answer")
        };
        let out: serde_json::Value =
            serde_json::from_str(v["output"][0]["content"][0]["text"].as_str().expect("text"))
                .expect("JSON");
        assert_eq!(
            out,
            json!({"total": 0, "note": "The total is 42."}),
            "a number: 0"
        );
        assert_eq!(sides(&s), vec![None]);
    }

    #[test]
    fn an_agent_without_tools_whose_task_says_summarize_is_the_loop() {
        let mut s = session();
        let b = body(
            "gpt",
            "You are a helpful assistant.",
            "Summarize the open tickets.",
            &[],
        );
        // Served the script (a call to a tool the agent does not offer goes out by its name).
        assert_eq!(answered(&mut s, &b), "act");
        // A second conversation of other words, same model: not a side request either.
        let other = body(
            "gpt",
            "You are a helpful assistant.",
            "Say hello there!",
            &[],
        );
        assert_eq!(answered(&mut s, &other), "act");
        assert_eq!(sides(&s), vec![None, None]);
    }

    #[test]
    fn a_subagent_after_a_meta_tool_call_is_a_side_request_and_the_script_may_answer_it() {
        let text = SCENARIO.replace(
            "[[model.rules]]",
            "[model.side]\ntext = \"subagent done\"\n\n[[model.rules]]",
        );
        let cases = crate::scenario::load(&text, SourceFormat::Toml, "t/x").expect("loads");
        let mut s = Session::new(cases[0].clone()).preferring(vec!["Agent".to_owned()]);
        let task = "Summarize the open tickets.";
        assert_eq!(
            answered(&mut s, &body("gpt", "sys", task, &["Agent", "search"])),
            "Agent"
        );
        let sub = body(
            "gpt",
            "You are a subagent.",
            "Find the tickets.",
            &["search"],
        );
        assert_eq!(answered(&mut s, &sub), "subagent done");
        let sides = sides(&s);
        assert!(
            sides[1]
                .as_deref()
                .is_some_and(|w| w.contains("latest answer called `Agent`")),
            "{sides:?}"
        );
    }
}
