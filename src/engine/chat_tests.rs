//! Engine tests for IronClaw's chat semantics that a single policy cannot show.

use crate::mock::MockModel;
use crate::scenario::{SourceFormat, load};
use crate::trace::Event;

fn events(toml: &str) -> Vec<Event> {
    let cases = load(toml, SourceFormat::Toml, "engine/test").expect("a valid scenario");
    let case = &cases[0];
    let (events, gap) = super::run_case(case, &mut MockModel::new(&case.scenario.model));
    assert!(gap.is_none(), "a complete script: {gap:?}");
    events.into_iter().map(|e| e.event).collect()
}

/// A later turn's context holds the earlier turns' answers (runtimes.md IronClaw §7, D7: the
/// thread's history is question/answer pairs), so the model sees them and the overflow
/// compaction has history to drop.
#[test]
fn followup_turn_sees_the_previous_answer() {
    let events = events(
        r#"
format = 1
family = "t"
profile = "ironclaw"
user = "First question"
followups = ["Second question"]

[model]
[[model.rules]]
when = { last_user_contains = "Second question", any_message_contains = "First answer" }
reply = { text = "saw the first answer" }
[[model.rules]]
when = { last_user_contains = "Second question" }
reply = { text = "history lost" }
[[model.rules]]
reply = { text = "First answer" }
"#,
    );
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            Event::Outcome { text, .. } => text.as_deref(),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["First answer", "saw the first answer"]);
    let sent: Vec<usize> = events
        .iter()
        .filter_map(|e| match e {
            Event::ModelRequest { messages, .. } => Some(*messages),
            _ => None,
        })
        .collect();
    assert_eq!(sent, [1, 3], "user; then user, assistant, user");
}

/// A refused request (a 4xx other than rate limits and overflow) is not retried: sent again
/// it gets the same answer. The run ends on it, whatever the retry rules allow.
#[test]
fn a_refused_request_ends_the_run_untried_again() {
    let events = events(
        r#"
format = 1
family = "t"
profile = "none"
user = "Question"
config = { retry = { server_error = { max_retries = 3 } } }

[model]
[[model.rules]]
reply = { fault = { kind = "refused", message = "400 Bad Request: unknown parameter" } }
"#,
    );
    let errors: Vec<(crate::llm::FaultKind, Option<u64>)> = events
        .iter()
        .filter_map(|e| match e {
            Event::ProviderError {
                fault, retry_in_ms, ..
            } => Some((*fault, *retry_in_ms)),
            _ => None,
        })
        .collect();
    assert_eq!(errors, [(crate::llm::FaultKind::Refused, None)]);
    assert!(
        events.iter().any(|e| matches!(e, Event::Outcome { .. })),
        "the run ends"
    );
}
