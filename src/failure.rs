//! Which tool results read as failures: those a black-box agent sent back (`serve`, `exec`)
//! and those an imported OpenTelemetry trace holds (`import::otlp`), by one set of rules, so a
//! run reads the same whichever way it arrived. The wire formats say little:
//! Anthropic's `tool_result` has `is_error`, OpenAI's tool messages and Responses'
//! `function_call_output` have nothing, and frameworks report a failed call in text of their
//! own. A result is read as failed by the first rule that matches, in this order:
//!
//! 1. `is_error`: the provider's flag is set (Anthropic `is_error: true`). A flag set to
//!    `false` decides nothing: frameworks send "Error: …" with it false.
//! 2. `pattern N`: the N-th pattern of the scenario's `[serve] failure` list, then of the
//!    command line's `--failure` (regular expressions, searched anywhere in the text).
//! 3. The built-in shapes (unless turned off, `[serve] builtin_failures = false` or
//!    `--no-builtin-failures`):
//!    - `error-prefix`: the text starts with `error` in any case (`Error: …`, `ERROR …`);
//!    - `exception`: a Python traceback, or a first line `SomeError: …` / `SomeException: …`;
//!    - `tool-error-notice`: "An error occurred while running the tool" (openai-agents);
//!    - `json-error`: a JSON object with a non-empty `error` or `errors` member, or a JSON
//!      array of validation errors (objects with `type` and `msg` or `loc`), as pydantic-ai
//!      and others send;
//!    - `retry-prompt`: "Fix the errors and try again." (pydantic-ai's retry prompt);
//!    - `invalid-tool-input`: "Invalid input for tool NAME: …" (the Vercel AI SDK);
//!    - `validation-errors`: a line "N validation error(s) for …" (pydantic's text, as AutoGen
//!      and others send it);
//!    - `tool-invoke-failed`: "Failed to invoke Tool `NAME` …" (Haystack);
//!    - `missing-argument`: "… missing N required positional (or keyword-only) argument(s)"
//!      (Python's `TypeError`, as LlamaIndex sends it);
//!    - `unknown-tool`: a call to a tool the agent does not have, in the words of the Vercel AI
//!      SDK ("Model tried to call unavailable tool 'NAME'. …") or LlamaIndex ("Tool NAME not
//!      found. …");
//!    - `exit-code`: a shell tool's result whose process ended with a non-zero code, as coding
//!      agents write it: a line "Process exited with code N" (Codex CLI), "Exit code N" (Claude
//!      Code), "Exit code: N", "Exit Code: N" (Gemini CLI), or a JSON object whose
//!      `metadata.exit_code` is not 0;
//!    - `invalid-arguments`: the agent's argument check, first line: "failed to parse function
//!      arguments: …" (Codex CLI), "The arguments provided to the tool are invalid: …"
//!      (opencode), "The NAME tool was called with invalid arguments: …" (opencode 1.x),
//!      "Invalid arguments …", "Invalid parameters …";
//!    - `tool-not-found`: first line "Unknown tool …", "No such tool …", "Tool not found …",
//!      "unsupported call: …" (Codex CLI), or "NAME is not a valid tool, try …" (LangChain);
//!    - `not-found`: a short result (at most 3 lines, 400 bytes) with a line that names a
//!      string argument of its own call (5 characters or more) as missing — "not found",
//!      "does not exist", "no such file", "cannot find", "could not find", `ENOENT` — as a
//!      tool that throws on a made-up path reads when the agent sends the bare message
//!      (opencode: "File /work/charlie-878 not found"). Only with the call's arguments
//!      ([`FailureRules::classify_call`]);
//!    - `no-echo`: the result of a shell command harness generated to succeed (`echo WORD-N`
//!      in a shell tool's command parameter) that does not hold the word it prints: the
//!      command did not run (a sandbox's refusal, a tool that failed without saying so).
//!      Only with the call's arguments too.
//!
//!    The JSON-error shape also takes zod's issue arrays (objects with `code` and `message`,
//!    and usually `path`), as the AI SDK sends them. A framework that sends a bare exception
//!    message (the AI SDK's `throw`, agno) cannot be told from output: give a `--failure`
//!    pattern for it.
//!
//! The inferred trace names the rule on each failed result (`rule=…`).

use regex_lite::Regex;
use serde_json::Value;

/// The ordered failure rules of one served case.
#[derive(Debug, Clone)]
pub struct FailureRules {
    patterns: Vec<Regex>,
    builtin: bool,
}

impl Default for FailureRules {
    fn default() -> Self {
        Self {
            patterns: Vec::new(),
            builtin: true,
        }
    }
}

/// A built-in shape: its name and its test.
type Shape = (&'static str, fn(&str) -> bool);

/// The built-in shapes, in order.
const BUILTIN: [Shape; 13] = [
    ("error-prefix", error_prefix),
    ("exception", exception),
    ("tool-error-notice", tool_error_notice),
    ("json-error", json_error),
    ("retry-prompt", retry_prompt),
    ("invalid-tool-input", invalid_tool_input),
    ("validation-errors", validation_errors),
    ("tool-invoke-failed", tool_invoke_failed),
    ("missing-argument", missing_argument),
    ("unknown-tool", unknown_tool),
    ("exit-code", exit_code),
    ("invalid-arguments", invalid_arguments),
    ("tool-not-found", tool_not_found),
];

impl FailureRules {
    /// Rules with these extra patterns (checked in order, after the provider's flag and before
    /// the built-in shapes), and the built-in shapes unless `builtin` is false. A pattern that
    /// is not a regular expression is the error, naming it.
    pub fn new(patterns: &[String], builtin: bool) -> Result<Self, String> {
        let patterns = patterns
            .iter()
            .map(|p| {
                Regex::new(p).map_err(|e| {
                    format!("the failure pattern `{p}` is not a regular expression: {e}")
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { patterns, builtin })
    }

    /// The extra patterns, as written.
    pub fn patterns(&self) -> Vec<String> {
        self.patterns
            .iter()
            .map(|p| p.as_str().to_owned())
            .collect()
    }

    /// Are the built-in shapes on?
    pub fn builtin(&self) -> bool {
        self.builtin
    }

    /// The rule that reads this result as failed, or `None` when it reads as a success.
    pub fn classify(&self, is_error: Option<bool>, text: &str) -> Option<String> {
        if is_error == Some(true) {
            return Some("is_error".to_owned());
        }
        if let Some(i) = self.patterns.iter().position(|p| p.is_match(text)) {
            return Some(format!("pattern {}", i + 1));
        }
        if !self.builtin {
            return None;
        }
        BUILTIN
            .iter()
            .find(|(_, test)| test(text))
            .map(|(name, _)| (*name).to_owned())
    }

    /// [`Self::classify`], then (built-in shapes on) the `not-found` shape, which needs the
    /// arguments of the call the result answers.
    pub fn classify_call(
        &self,
        is_error: Option<bool>,
        text: &str,
        args: Option<&Value>,
    ) -> Option<String> {
        self.classify(is_error, text).or_else(|| {
            let args = args.filter(|_| self.builtin)?;
            if names_missing_argument(text, args) {
                return Some("not-found".to_owned());
            }
            // A command harness made to succeed (`echo WORD-N`) whose output lacks the word:
            // it did not run, whatever the agent's words for that are.
            let unechoed = args.as_object().is_some_and(|o| {
                o.iter().any(|(field, v)| {
                    crate::scenario::generate::echoed_word(field, v)
                        .is_some_and(|word| !text.contains(word))
                })
            });
            unechoed.then(|| "no-echo".to_owned())
        })
    }
}

/// The `not-found` shape: a short result whose line names one of the call's string arguments
/// together with words saying it does not exist.
fn names_missing_argument(text: &str, args: &Value) -> bool {
    const PHRASES: [&str; 7] = [
        "not found",
        "does not exist",
        "doesn't exist",
        "no such file",
        "cannot find",
        "could not find",
        "enoent",
    ];
    let text = text.trim();
    if text.len() > 400 || text.lines().count() > 3 {
        return false;
    }
    let mut values = Vec::new();
    string_leaves(args, &mut values);
    text.lines().any(|line| {
        let lower = line.to_ascii_lowercase();
        PHRASES.iter().any(|p| lower.contains(p))
            && values
                .iter()
                .any(|v| v.chars().count() >= 5 && line.contains(v.as_str()))
    })
}

/// The string values in `v` (at most 64, as a call's arguments hold them).
fn string_leaves<'v>(v: &'v Value, out: &mut Vec<&'v String>) {
    if out.len() >= 64 {
        return;
    }
    match v {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|x| string_leaves(x, out)),
        Value::Object(map) => map.values().for_each(|x| string_leaves(x, out)),
        _ => {}
    }
}

fn error_prefix(text: &str) -> bool {
    text.trim_start()
        .get(..5)
        .is_some_and(|p| p.eq_ignore_ascii_case("error"))
}

fn exception(text: &str) -> bool {
    let text = text.trim_start();
    if text.starts_with("Traceback (most recent call last)") {
        return true;
    }
    let first = text.lines().next().unwrap_or("");
    let Some((head, _)) = first.split_once(':') else {
        return false;
    };
    let name = head.rsplit('.').next().unwrap_or(head);
    !head.contains(' ')
        && name.chars().next().is_some_and(|c| c.is_ascii_uppercase())
        && head
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && (name.ends_with("Error") || name.ends_with("Exception"))
}

fn tool_error_notice(text: &str) -> bool {
    text.contains("An error occurred while running the tool")
}

fn json_error(text: &str) -> bool {
    let t = text.trim();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return false;
    }
    let Ok(v) = serde_json::from_str::<Value>(t) else {
        return false;
    };
    let present = |v: Option<&Value>| {
        v.is_some_and(|e| match e {
            Value::Null | Value::Bool(false) => false,
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            Value::Bool(true) | Value::Number(_) => true,
        })
    };
    match &v {
        Value::Object(o) => present(o.get("error")) || present(o.get("errors")),
        Value::Array(items) => {
            !items.is_empty()
                && items.iter().all(|i| {
                    // pydantic's errors (`type`, `msg`, `loc`) or zod's issues (`code`,
                    // `message`, `path`).
                    (i.get("type").is_some() && (i.get("msg").is_some() || i.get("loc").is_some()))
                        || (i.get("code").is_some_and(Value::is_string)
                            && i.get("message").is_some_and(Value::is_string))
                })
        }
        _ => false,
    }
}

fn retry_prompt(text: &str) -> bool {
    text.trim_end().ends_with("Fix the errors and try again.")
}

fn invalid_tool_input(text: &str) -> bool {
    text.trim_start().starts_with("Invalid input for tool ")
}

/// A line that starts "N validation error for" / "N validation errors for".
fn validation_errors(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start();
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        digits > 0
            && (line[digits..].starts_with(" validation error for ")
                || line[digits..].starts_with(" validation errors for "))
    })
}

fn tool_invoke_failed(text: &str) -> bool {
    text.trim_start().starts_with("Failed to invoke Tool ")
}

/// "Model tried to call unavailable tool 'x'. …" (the AI SDK), "Tool x not found. …"
/// (LlamaIndex): the whole text is the framework's notice, never a tool's output that
/// mentions a tool.
fn unknown_tool(text: &str) -> bool {
    let t = text.trim_start();
    if t.starts_with("Model tried to call unavailable tool ") {
        return true;
    }
    t.strip_prefix("Tool ")
        .and_then(|rest| rest.split_once(' '))
        .is_some_and(|(name, rest)| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_alphanumeric() || "_-.:".contains(c))
                && rest.starts_with("not found.")
        })
}

/// A non-zero exit code on a line of its own, or in a JSON result's `metadata.exit_code`.
fn exit_code(text: &str) -> bool {
    const LINES: [&str; 4] = [
        "Process exited with code ",
        "Exit code: ",
        "Exit Code: ",
        "Exit code ",
    ];
    let non_zero = |n: &str| n.trim().parse::<i64>().is_ok_and(|n| n != 0);
    let by_line = text.lines().any(|line| {
        let line = line.trim();
        LINES
            .iter()
            .any(|head| line.strip_prefix(head).is_some_and(non_zero))
    });
    by_line || {
        let t = text.trim();
        t.starts_with('{')
            && serde_json::from_str::<Value>(t).is_ok_and(|v| {
                v.pointer("/metadata/exit_code")
                    .and_then(Value::as_i64)
                    .is_some_and(|n| n != 0)
            })
    }
}

/// The first line of the text, lower case.
fn first_line(text: &str) -> String {
    text.trim_start()
        .lines()
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
}

fn invalid_arguments(text: &str) -> bool {
    let line = first_line(text);
    line.starts_with("failed to parse function arguments")
        || line.starts_with("the arguments provided to the tool are invalid")
        || (line.starts_with("the ") && line.contains(" tool was called with invalid arguments"))
        || line.starts_with("invalid arguments")
        || line.starts_with("invalid parameters")
}

fn tool_not_found(text: &str) -> bool {
    let line = first_line(text);
    [
        "unknown tool",
        "no such tool",
        "tool not found",
        "unsupported call:",
    ]
    .iter()
    .any(|head| line.starts_with(head))
        || line
            .split_once(" is not a valid tool")
            .is_some_and(|(name, _)| !name.is_empty() && !name.contains(' '))
}

/// Python's "f() missing 1 required positional argument: 'x'" (or keyword-only, or several).
fn missing_argument(text: &str) -> bool {
    let Some(at) = text.find(" missing ") else {
        return false;
    };
    let rest = &text[at + " missing ".len()..];
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0
        && [
            " required positional argument",
            " required keyword-only argument",
        ]
        .iter()
        .any(|kind| rest[digits..].starts_with(kind))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_framework_shape_is_read_by_its_rule() {
        let r = FailureRules::default();
        let cases = [
            (
                None,
                "Error: missing 'command' parameter",
                Some("error-prefix"),
            ),
            (
                Some(false),
                "Error: 1 validation error for exec",
                Some("error-prefix"),
            ),
            (Some(true), "no such file", Some("is_error")),
            (
                None,
                "Traceback (most recent call last):\n  File \"x\"",
                Some("exception"),
            ),
            (
                None,
                "ToolException: command is required",
                Some("exception"),
            ),
            (
                None,
                "pydantic_core.ValidationError: 1 validation error",
                Some("exception"),
            ),
            (
                None,
                "An error occurred while running the tool. Please try again. Error: x",
                Some("tool-error-notice"),
            ),
            (
                None,
                r#"{"error": [{"type": "missing", "loc": ["command"], "msg": "Field required"}]}"#,
                Some("json-error"),
            ),
            (
                None,
                r#"[{"type": "missing", "loc": ["command"], "msg": "Field required", "input": {}}]"#,
                Some("json-error"),
            ),
            (
                None,
                "1 validation errors: [...]\n\nFix the errors and try again.",
                Some("retry-prompt"),
            ),
            (
                None,
                "Invalid input for tool exec: Type validation failed: Value: {}.",
                Some("invalid-tool-input"),
            ),
            (
                None,
                r#"[{"code": "invalid_type", "expected": "string", "received": "undefined", "path": ["command"], "message": "Required"}]"#,
                Some("json-error"),
            ),
            (
                None,
                "1 validation error for exec\ncommand\n  Field required [type=missing]",
                Some("validation-errors"),
            ),
            (
                None,
                "Tool call failed.\n2 validation errors for ExecArgs\n...",
                Some("validation-errors"),
            ),
            (
                None,
                "Failed to invoke Tool `exec` with parameters {}. Error: missing command",
                Some("tool-invoke-failed"),
            ),
            (
                None,
                "exec() missing 1 required positional argument: 'command'",
                Some("missing-argument"),
            ),
            (
                None,
                "run() missing 2 required keyword-only arguments: 'a' and 'b'",
                Some("missing-argument"),
            ),
            (
                None,
                "Model tried to call unavailable tool 'delete_everything'. Available tools: search_flights, read_file.",
                Some("unknown-tool"),
            ),
            (
                None,
                "Tool delete_everything not found. Please select a tool that is available.",
                Some("unknown-tool"),
            ),
            (
                None,
                "Chunk ID: 0e7f41\nWall time: 0.0021 seconds\nProcess exited with code 127\nOutput:\nbash: foo: command not found",
                Some("exit-code"),
            ),
            (
                None,
                "Exit code: 1\nWall time: 0.2 seconds\nOutput:\nls: cannot access 'x'",
                Some("exit-code"),
            ),
            (
                None,
                "Command: ls x\nDirectory: (root)\nStdout: (empty)\nStderr: ls: x: No such file\nError: (none)\nExit Code: 2",
                Some("exit-code"),
            ),
            (
                None,
                r#"{"output": "boom\n", "metadata": {"exit_code": 1, "duration_seconds": 0.1}}"#,
                Some("exit-code"),
            ),
            (
                None,
                "failed to parse function arguments: missing field `command` at line 1 column 2",
                Some("invalid-arguments"),
            ),
            (
                None,
                "The arguments provided to the tool are invalid: Invalid input: expected string, received undefined",
                Some("invalid-arguments"),
            ),
            (
                None,
                "The bash tool was called with invalid arguments: SchemaError(Missing key\n  at [\"command\"])",
                Some("invalid-arguments"),
            ),
            (
                None,
                "unsupported call: delete_everything",
                Some("tool-not-found"),
            ),
            (
                None,
                "delete_everything is not a valid tool, try one of [search_flights, read_file].",
                Some("tool-not-found"),
            ),
            (
                None,
                "Unknown tool: delete_everything",
                Some("tool-not-found"),
            ),
            (
                None,
                "Chunk ID: 0e7f41\nWall time: 0.0021 seconds\nProcess exited with code 0\nOutput:\na.txt",
                None,
            ),
            (
                None,
                r#"{"output": "a.txt\n", "metadata": {"exit_code": 0}}"#,
                None,
            ),
            (
                None,
                "Exit code 1\ncat: /nonexistent: No such file or directory",
                Some("exit-code"),
            ),
            (None, "the docs say: Exit code: 1 means failure", None),
            (None, "Tool search results not found in cache", None),
            (None, "a.txt\nb.txt", None),
            (None, "3 files missing from the index", None),
            (None, "validation errors for the form are shown below", None),
            (None, r#"[{"code": 200, "message": "ok"}]"#, None),
            (None, "no errors found", None),
            (None, r#"{"error": null, "result": "ok"}"#, None),
            (None, "Note: see the log", None),
            (None, "The Error: is here", None),
        ];
        for (flag, text, want) in cases {
            assert_eq!(r.classify(flag, text).as_deref(), want, "{text:?}");
        }
    }

    #[test]
    fn a_result_naming_its_own_argument_as_missing_is_a_failure() {
        let r = FailureRules::default();
        let edit = json!({"filePath": "charlie-878", "oldString": "delta-878"});
        let cases = [
            // opencode's edit and read tools on a made-up path, as it sends them back.
            (
                "File /tmp/w/project/charlie-878 not found",
                &edit,
                Some("not-found"),
            ),
            (
                "ENOENT: no such file or directory, open 'charlie-878'",
                &edit,
                Some("not-found"),
            ),
            // The missing thing is not the call's argument, or the text is a tool's output.
            ("Pattern not found in README.md", &edit, None),
            ("charlie-878 found in 3 files", &edit, None),
            ("No files found", &edit, None),
            (
                "line 1\nline 2\nline 3\ncharlie-878 not found\n",
                &edit,
                None,
            ),
        ];
        for (text, args, want) in cases {
            assert_eq!(
                r.classify_call(None, text, Some(args)).as_deref(),
                want,
                "{text:?}"
            );
        }
        // Short values name too much; without the arguments, nothing to match.
        let short = json!({"path": "a.rs"});
        assert_eq!(r.classify_call(None, "a.rs not found", Some(&short)), None);
        assert_eq!(r.classify_call(None, "File x-12345 not found", None), None);
        // A generated `echo` whose output lacks its word did not run.
        let shell = json!({"command": "echo bravo-732"});
        assert_eq!(r.classify_call(None, "bravo-732\n", Some(&shell)), None);
        assert_eq!(
            r.classify_call(
                None,
                "Chunk ID: 1\nProcess exited with code 0\nOutput:\nbravo-732",
                Some(&shell)
            ),
            None
        );
        assert_eq!(
            r.classify_call(None, "ripgrep execution failed", Some(&shell))
                .as_deref(),
            Some("no-echo")
        );
        let argv = json!({"cmd": ["echo", "golf-5"]});
        assert_eq!(
            r.classify_call(None, "blocked by the sandbox", Some(&argv))
                .as_deref(),
            Some("no-echo")
        );
        // Not harness's own command shape: nothing is assumed.
        let mine = json!({"command": "echo hello"});
        assert_eq!(r.classify_call(None, "", Some(&mine)), None);
        let off = FailureRules::new(&[], false).expect("valid");
        assert_eq!(
            off.classify_call(None, "File charlie-878 not found", Some(&edit)),
            None
        );
    }

    #[test]
    fn patterns_come_after_the_flag_and_before_the_shapes() {
        let r = FailureRules::new(&["(?i)^fail".into(), "exit code [1-9]".into()], true)
            .expect("valid");
        assert_eq!(r.classify(None, "FAILED").as_deref(), Some("pattern 1"));
        assert_eq!(
            r.classify(None, "done, exit code 2").as_deref(),
            Some("pattern 2")
        );
        assert_eq!(
            r.classify(Some(true), "FAILED").as_deref(),
            Some("is_error")
        );
        assert_eq!(
            r.classify(None, "Error: x").as_deref(),
            Some("error-prefix")
        );
        let only = FailureRules::new(&["boom".into()], false).expect("valid");
        assert_eq!(only.classify(None, "Error: x"), None);
        assert_eq!(only.classify(None, "boom").as_deref(), Some("pattern 1"));
        let bad = FailureRules::new(&["(".into()], true);
        assert!(
            bad.err().is_some_and(
                |e| e.starts_with("the failure pattern `(` is not a regular expression")
            )
        );
    }
}
