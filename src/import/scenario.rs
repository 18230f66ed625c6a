//! A recorded run as an editable scenario (`harness import --as scenario`), for every format
//! the importers read: the run's trace events are the recording, and the scenario replays it
//! through the loop engine under any profile.
//!
//! - **Model.** Each recorded answer (`model_response`) is one scripted turn, in order: its
//!   text, its calls (ids, names, arguments as recorded: a table, or the recorded text when
//!   they hold a null, which TOML cannot), its token counts. The turns play
//!   whatever the runtime sends: after an intervention the model goes on as it did in the
//!   recording (the *stubborn model*; `without_tools = "as_scripted"` also keeps its calls
//!   when a runtime withholds the tools). Past the recording's end a rule answers
//!   [`END_OF_RECORDING`], so a runtime that asks for more gets a final text, not a gap.
//! - **Tools.** One tool per name called, with an open object schema; its outcomes are the
//!   recorded results, failed or not as the importer read them: by arguments where the same
//!   arguments always got the same result (so a call a defence skips or rejects does not shift
//!   the results of the others), else in call order (`on_call`: the n-th result for that tool,
//!   with its arguments; a shifted call gets its arguments' last result). A call with other
//!   arguments past the recorded ones fails with [`crate::scenario::NO_RESULT`].
//! - **Users.** The first user message is the task; each later one is a follow-up, which the
//!   engine sends when a turn ends with a text answer, as the recording's user answered the
//!   agent's text. User messages in a row (a simulated user that writes twice before the agent
//!   answers) are one message, joined by a blank line, so every recorded answer is heard after
//!   the messages it answered. Answers recorded before the first user message (a greeting) are
//!   left out.
//! - **Cap.** `max_iterations` is one more than the answers recorded, so the whole recording
//!   fits and the end-of-recording answer can come under every profile: those that count
//!   iterations per user message and `agentloop`, whose count runs over the conversation.
//!
//! Pure: the caller writes the file.

use super::Run;
use crate::scenario::{
    Bound, CallDef, Conditions, ModelScript, OutcomeDef, RECORDED_ASSUMPTIONS, RuleDef, Scenario,
    ToolDef, TurnDef, UsageDef, WithoutTools, called_tool, holds_null, recorded_outcomes,
};
use crate::trace::Event;
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// The answer past the recording's end.
pub const END_OF_RECORDING: &str = "(The recorded run ends here; no recorded answer follows.)";

/// What joins user messages the recording has in a row, with no answer between: they become
/// one follow-up, so each recorded answer stays paired with what it answered.
pub const USER_JOIN: &str = "\n\n";

/// The scenario of an imported run; `file` names the transcript (in the description).
pub fn scenario_of(run: &Run, file: &str) -> Scenario {
    let events: Vec<&Event> = run.events.iter().map(|e| &e.event).collect();
    // Answers before the first user message (a greeting) are not part of the task's loop.
    let first_user = events
        .iter()
        .position(|e| matches!(e, Event::UserTurn { .. }));
    let start = first_user.unwrap_or(0);
    let greeting = events[..start]
        .iter()
        .filter(|e| matches!(e, Event::ModelResponse { .. }))
        .count();
    let model = events
        .iter()
        .find_map(|e| match e {
            Event::RunStart { model, .. } if !model.is_empty() => Some(model.clone()),
            _ => None,
        })
        .unwrap_or_else(|| "recorded".to_owned());

    let mut user: Option<String> = None;
    let mut followups = Vec::new();
    let mut turns = Vec::new();
    let mut tools: Vec<ToolDef> = Vec::new();
    // Each tool's recorded results in call order: the call's arguments (when they parse and
    // hold no null) and what came back.
    let mut results: BTreeMap<String, Vec<(Option<Value>, OutcomeDef)>> = BTreeMap::new();
    let mut args_of: BTreeMap<&str, Option<Value>> = BTreeMap::new();
    let mut calls = 0usize;
    // Calls seen run that no answer recorded (its content not captured), scripted into the
    // answer before them; and of them, those whose arguments were not recorded either.
    let (mut unannounced, mut blind) = (0usize, 0usize);
    // Whether the last user message has had no answer yet: a second one then joins it.
    let mut unanswered = false;
    for event in &events[start..] {
        match event {
            Event::UserTurn { text, .. } => {
                match (unanswered, followups.last_mut(), &mut user) {
                    (true, Some(last), _) | (true, None, Some(last)) => {
                        last.push_str(USER_JOIN);
                        last.push_str(text);
                    }
                    (_, _, None) => user = Some(text.clone()),
                    _ => followups.push(text.clone()),
                }
                unanswered = true;
            }
            Event::ModelResponse {
                finish,
                text,
                calls: summaries,
                input_tokens,
                output_tokens,
                ..
            } => {
                unanswered = false;
                for c in summaries {
                    blind += usize::from(c.args_unknown);
                    called_tool(&mut tools, &c.name);
                    let parsed = serde_json::from_str::<Value>(&c.args)
                        .ok()
                        .filter(|v| !holds_null(v) && !c.args_unknown);
                    args_of.insert(c.id.as_str(), parsed);
                }
                calls += summaries.len();
                turns.push(TurnDef {
                    text: text.clone().filter(|t| !t.is_empty()),
                    tool_calls: summaries
                        .iter()
                        .map(|c| {
                            // TOML has no null: arguments holding one keep their text.
                            let (args, raw_args) = match serde_json::from_str::<Value>(&c.args) {
                                Ok(v) if !holds_null(&v) => (Some(v.into()), None),
                                _ => (None, Some(c.args.clone())),
                            };
                            CallDef {
                                id: Some(c.id.clone()).filter(|i| !i.is_empty()),
                                name: c.name.clone(),
                                args,
                                raw_args,
                                generate: None,
                                seed: None,
                            }
                        })
                        .collect(),
                    finish: Some(*finish),
                    usage: (*input_tokens > 0 || *output_tokens > 0).then_some(UsageDef {
                        input: *input_tokens,
                        output: *output_tokens,
                    }),
                    repeat: 1,
                    ..TurnDef::default()
                });
            }
            // A call seen run that the answer before it did not record (an OpenTelemetry trace
            // with content capture off): it was that answer's call.
            Event::ToolCallStart {
                id,
                name,
                args,
                args_unknown,
            } if !args_of.contains_key(id.as_str()) => {
                let Some(turn) = turns.last_mut() else {
                    continue;
                };
                unannounced += 1;
                blind += usize::from(*args_unknown);
                called_tool(&mut tools, name);
                let value: &Value = args;
                let known = (!*args_unknown && !holds_null(value)).then(|| value.clone());
                args_of.insert(id.as_str(), known.clone());
                calls += 1;
                turn.tool_calls.push(CallDef {
                    id: Some(id.clone()).filter(|i| !i.is_empty()),
                    name: name.clone(),
                    args: Some(known.unwrap_or_else(|| json!({})).into()),
                    raw_args: None,
                    generate: None,
                    seed: None,
                });
                turn.finish = Some(crate::llm::Finish::ToolUse);
            }
            Event::ToolCallEnd {
                id,
                name,
                ok,
                output,
                error,
                ..
            } => {
                let text = if *ok { output } else { error };
                results.entry(name.clone()).or_default().push((
                    args_of.get(id.as_str()).cloned().flatten(),
                    result(*ok, text.clone()),
                ));
            }
            Event::ToolCallRejected {
                id, name, error, ..
            } => results.entry(name.clone()).or_default().push((
                args_of.get(id.as_str()).cloned().flatten(),
                result(false, Some(error.clone())),
            )),
            _ => {}
        }
    }
    let failed = results
        .values()
        .flatten()
        .filter(|(_, o)| o.ok.is_none())
        .count();
    for (name, recorded) in results {
        called_tool(&mut tools, &name).outcomes = recorded_outcomes(&recorded);
    }
    for t in &mut tools {
        t.default = Some(OutcomeDef::no_result());
    }
    let answers = turns.len();
    let mut config = serde_json::Map::new();
    config.insert("max_iterations".to_owned(), json!(answers + 1));
    let label = run
        .success
        .map(|s| if s { "a success" } else { "a failure" });
    let ended = match (&run.termination, label) {
        (Some(t), Some(l)) => format!(" It ended with `{t}` and was labelled {l}."),
        (Some(t), None) => format!(" It ended with `{t}`."),
        (None, Some(l)) => format!(" It was labelled {l}."),
        (None, None) => String::new(),
    };
    let greeting = if greeting > 0 {
        format!(" The {greeting} answer(s) recorded before the first user message are left out.")
    } else {
        String::new()
    };
    let task = if first_user.is_some() {
        ""
    } else {
        " The transcript carries no user message: the task is a placeholder."
    };
    let mut unrecorded = String::new();
    if unannounced > 0 {
        unrecorded.push_str(&format!(
            " {unannounced} of the calls were seen run but not in the answer before them (its \
             content was not recorded): they are scripted into that answer."
        ));
    }
    if blind > 0 {
        unrecorded.push_str(&format!(
            " {blind} of the calls were recorded without their arguments: they are scripted \
             with `{{}}`, which stands for arguments nobody knows (edit them, or a runtime's \
             argument checks judge `{{}}`)."
        ));
    }
    let description = format!(
        "Imported from {file} ({source}), run `{id}`: {answers} model answers, {calls} tool \
         calls ({failed} failed), {follow} follow-up user message(s).{ended}{greeting}{task}\
         {unrecorded}\n\n\
         {RECORDED_ASSUMPTIONS} Past the recording the model answers `{END_OF_RECORDING}`.",
        source = run.source,
        id = run.id,
        follow = followups.len(),
    );
    let rules = vec![RuleDef {
        when: Conditions {
            call: Some(Bound {
                min: Some(answers as u64 + 1),
                max: None,
            }),
            ..Conditions::default()
        },
        reply: TurnDef {
            text: Some(END_OF_RECORDING.to_owned()),
            repeat: 1,
            ..TurnDef::default()
        },
        times: None,
    }];
    let mut scenario = Scenario::recorded(
        "imported",
        vec!["imported".to_owned(), run.source.clone()],
        description,
    );
    scenario.config = config;
    scenario.user = user.unwrap_or_else(|| format!("(the task of run `{}`)", run.id));
    scenario.tools = tools;
    scenario.followups = followups;
    scenario.model = ModelScript {
        name: model,
        rules,
        turns,
        without_tools: WithoutTools::AsScripted,
        ..ModelScript::default()
    };
    scenario
}

/// What one recorded result gives back.
fn result(ok: bool, text: Option<String>) -> OutcomeDef {
    match (ok, text) {
        (true, t) => OutcomeDef {
            ok: Some(t.unwrap_or_default()),
            ..OutcomeDef::default()
        },
        (false, Some(t)) if !t.is_empty() => OutcomeDef {
            error: Some(t),
            ..OutcomeDef::default()
        },
        (false, _) => OutcomeDef {
            fail: Some(true),
            ..OutcomeDef::default()
        },
    }
}
