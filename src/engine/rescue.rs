//! Moltis' rescues of an answer before the loop handles it, in upstream's order: calls read
//! from its text, the malformed-call retry, the forced `exec` of an explicit `/sh` task, the
//! empty-tool-name retry (each once a run where upstream says so).

use super::{Loop, decode, sanitize_tool_name};
use crate::llm::{Arguments, ModelResponse, Role, ToolCall, ToolSpec};
use crate::policy::{self, Action};
use crate::trace::Event;

impl Loop<'_> {
    /// A retry of Moltis' (the malformed-call or empty-name one): the answer's text goes into
    /// the history without calls, then `prompt` as a user message from `source`.
    pub(super) fn retry_with(
        &mut self,
        source: &'static str,
        response: &ModelResponse,
        prompt: String,
    ) {
        self.remember(crate::llm::Message::new(
            Role::Assistant,
            response.text.clone().unwrap_or_default(),
        ));
        self.apply(
            source,
            vec![Action::Inject {
                role: Role::User,
                text: prompt,
            }],
            0,
        );
    }

    /// Moltis' forced exec: at a run's first iteration, before any tool ran, an answer that
    /// calls nothing to a task that is an explicit `/sh` command becomes a call of `exec`.
    pub(super) fn forced_shell_call(
        &self,
        response: &ModelResponse,
        n: u32,
        specs: &[ToolSpec],
    ) -> Option<ToolCall> {
        if !self.config.forced_shell
            || n != 1
            || self.total_tool_calls != 0
            || !response.tool_calls.is_empty()
            || !specs.iter().any(|t| t.name == "exec")
        {
            return None;
        }
        let task = self.messages.iter().rev().find(|m| m.role == Role::User)?;
        let command = explicit_shell_command(&task.content)?;
        Some(ToolCall {
            id: "forced_0".to_owned(),
            name: "exec".to_owned(),
            arguments: Arguments::parsed(serde_json::json!({ "command": command })),
        })
    }

    /// Moltis' text fallback: an answer without native calls whose text writes calls runs
    /// them, its text cut to what it says besides ([`policy::text_calls`]).
    pub(super) fn read_text_calls(&mut self, response: &mut ModelResponse) {
        if !self.config.text_calls || !response.tool_calls.is_empty() {
            return;
        }
        let Some(text) = response.text.as_deref().filter(|t| !t.is_empty()) else {
            return;
        };
        let (calls, rest) = policy::text_calls::parse(text);
        if calls.is_empty() {
            return;
        }
        let names: Vec<String> = calls.iter().map(|c| format!("`{}`", c.name)).collect();
        self.emit(Event::Notice {
            source: "moltis-text-calls".to_owned(),
            text: format!(
                "the answer writes {} in its text, which runs as native calls would: {}",
                if calls.len() == 1 { "a call" } else { "calls" },
                names.join(", ")
            ),
        });
        response.text = rest;
        response.tool_calls = calls
            .into_iter()
            .map(|c| {
                self.text_calls_read += 1;
                ToolCall {
                    id: format!("text_{:032x}", self.text_calls_read),
                    name: c.name,
                    arguments: Arguments::parsed(c.arguments),
                }
            })
            .collect();
    }

    /// Moltis' malformed-call retry, once a run: a text answer without calls that reads as an
    /// attempt at one gets the retry prompt.
    pub(super) fn malformed_call_retry(&self, response: &ModelResponse) -> Option<String> {
        let message = &self.config.malformed_call_retry_message;
        let text = response.text.as_deref()?;
        (!message.is_empty()
            && self.malformed_call_retries == 0
            && response.tool_calls.is_empty()
            && policy::text_calls::looks_like_a_failed_call(text))
        .then(|| message.clone())
    }

    /// Moltis' empty-tool-name retry, once a run: an answer with a call whose name cleans to
    /// nothing and no call with a name gets the retry prompt instead of running.
    pub(super) fn empty_name_retry(&self, response: &ModelResponse) -> Option<String> {
        let message = &self.config.empty_name_retry_message;
        if message.is_empty() || self.empty_name_retries > 0 {
            return None;
        }
        if response
            .tool_calls
            .iter()
            .any(|c| !sanitize_tool_name(&c.name).is_empty())
        {
            return None;
        }
        let call = response.tool_calls.first()?;
        let args = match decode(&call.arguments, self.config.malformed_args) {
            Ok(v) => v.text().to_owned(),
            Err(_) => call.arguments.text().to_owned(),
        };
        Some(policy::fill(message, &[("args", &args)]))
    }
}

/// The command of a task that is one line `/sh <command>` or `/sh@name <command>` (at most
/// 4,096 bytes; `/SH` too), as Moltis reads an explicit shell request.
fn explicit_shell_command(text: &str) -> Option<&str> {
    let text = text.trim();
    if text.is_empty() || text.len() > 4096 || text.contains(['\n', '\r']) {
        return None;
    }
    let rest = text.strip_prefix('/')?;
    let split = rest.find(char::is_whitespace)?;
    let head = rest[..split].to_ascii_lowercase();
    let command = rest[split..].trim_start();
    let sh = head == "sh" || head.strip_prefix("sh@").is_some_and(|m| !m.is_empty());
    (sh && !command.is_empty()).then_some(command)
}
