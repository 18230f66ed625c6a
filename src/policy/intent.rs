//! IronClaw's tool-intent nudge (PR #653) and its classifier `llm_signals_tool_intent`.
//!
//! When the model says "let me search…" but calls nothing, the loop pushes the model's text and
//! a nudge and goes on, at most `max_consecutive` times in a row. The counter resets on a text
//! without intent or on any executed batch; at the cap it stays put.

use super::say;
use super::{Action, IntentNudgeConfig, LoopView, Policy};
use crate::llm::Args;

const EXCLUSIONS: &[&str] = &[
    "let me explain",
    "let me know",
    "let me think",
    "let me summarize",
    "let me clarify",
    "let me describe",
    "let me help",
    "let me understand",
    "let me break",
    "let me outline",
    "let me walk you",
    "let me provide",
    "let me suggest",
    "let me elaborate",
    "let me start by",
];
const PREFIXES: &[&str] = &["let me ", "i'll ", "i will ", "i'm going to "];
const VERBS: &[&str] = &[
    "search",
    "look up",
    "check",
    "fetch",
    "find",
    "read the",
    "write the",
    "create",
    "run the",
    "execute",
    "query",
    "retrieve",
    "add it",
    "add the",
    "add this",
    "add that",
    "update the",
    "delete",
    "remove the",
    "look into",
];

/// Does the text announce a tool action it did not take? (IronClaw's exact rules.)
///
/// IronClaw looks, at every announcement ("let me ", "i'll ", …), for a verb right after it or
/// after any later space. The announcement ending first has every later one's text in its
/// own, and its closing space before it, so it alone decides: a verb after some space from
/// its closing one on. (A test holds this against the rules as written.)
pub fn signals_tool_intent(text: &str) -> bool {
    let mut lower = strip_code_and_quotes(text);
    if lower.is_ascii() {
        lower.make_ascii_lowercase();
    } else {
        lower = lower.to_lowercase();
    }
    // Every exclusion starts with "let me ": a text without it has none.
    if lower.contains("let me ") && EXCLUSIONS.iter().any(|e| lower.contains(e)) {
        return false;
    }
    let Some(end) = PREFIXES
        .iter()
        .filter_map(|prefix| lower.find(prefix).map(|at| at + prefix.len()))
        .min()
    else {
        return false;
    };
    // From the announcement's closing space (every prefix ends in one).
    let rest = &lower.as_bytes()[end - 1..];
    rest.iter().enumerate().any(|(i, &b)| {
        b == b' ' && {
            let after = &rest[i + 1..];
            VERBS.iter().any(|verb| after.starts_with(verb.as_bytes()))
        }
    })
}

/// The lines of a text outside fenced blocks and not indented, as `str::lines` splits them.
fn prose_lines(text: &str) -> impl Iterator<Item = &str> {
    let mut in_fence = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            return false;
        }
        !(in_fence || line.starts_with("    ") || line.starts_with('\t'))
    })
}

/// Drop fenced blocks, indented lines and double-quoted spans, line by line (each line kept
/// ends with `\n`). A quote preceded by a backslash is text. Quotes and backslashes are ASCII,
/// which no byte of a longer UTF-8 character equals, so quotes are found as bytes and the text
/// between them copied a run at a time.
fn strip_code_and_quotes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in prose_lines(text) {
        let (mut in_quote, mut from, mut at) = (false, 0, 0);
        while let Some(found) = line[at..].find('"') {
            let i = at + found;
            if !line[..i].ends_with('\\') {
                if !in_quote {
                    out.push_str(&line[from..i]);
                }
                in_quote = !in_quote;
                from = i + 1;
            }
            at = i + 1;
        }
        if !in_quote {
            out.push_str(&line[from..]);
        }
        out.push('\n');
    }
    out
}

/// The nudge as a policy.
pub(super) struct IntentNudge {
    config: IntentNudgeConfig,
    consecutive: u32,
    /// The verdict `on_text` reached, for `after_text` on the same text: the text's address
    /// and length, and the verdict. `after_text` takes it, so it never outlives the answer.
    verdict: Option<(usize, usize, bool)>,
}

impl IntentNudge {
    pub(super) fn new(config: IntentNudgeConfig) -> Self {
        Self {
            config,
            consecutive: 0,
            verdict: None,
        }
    }

    /// [`signals_tool_intent`], kept for the same text's `after_text`.
    fn classify(&mut self, text: &str) -> bool {
        let intent = signals_tool_intent(text);
        self.verdict = Some((text.as_ptr() as usize, text.len(), intent));
        intent
    }
}

impl Policy for IntentNudge {
    fn id(&self) -> &'static str {
        "ironclaw-intent"
    }

    fn on_text(
        &mut self,
        text: &str,
        _response: &crate::llm::ModelResponse,
        view: &LoopView,
    ) -> Option<Vec<Action>> {
        let fire = view.tools_available
            && !view.force_text
            && self.consecutive < self.config.max_consecutive
            && self.classify(text);
        if !fire {
            return None;
        }
        self.consecutive += 1;
        Some(say(1, "nudge", None, self.config.message.clone()))
    }

    fn after_text(&mut self, text: &str, _continued: bool) {
        let intent = match self.verdict.take() {
            Some((at, len, intent)) if (at, len) == (text.as_ptr() as usize, text.len()) => intent,
            _ => signals_tool_intent(text),
        };
        if !intent {
            self.consecutive = 0;
        }
    }

    fn before_execute(&mut self, _calls: &[(&str, &Args)]) {
        self.consecutive = 0;
    }
}

/// The classifier cases of runtimes.md IronClaw §9.2.
#[cfg(test)]
mod tests {
    use super::signals_tool_intent as intent;
    use super::{EXCLUSIONS, PREFIXES, VERBS, prose_lines, strip_code_and_quotes};

    /// Quoted spans dropped as IronClaw writes it, a character at a time.
    fn strip_by_the_letter(text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        for line in prose_lines(text) {
            let mut in_quote = false;
            let mut prev = '\0';
            for c in line.chars() {
                if c == '"' && prev != '\\' {
                    in_quote = !in_quote;
                } else if !in_quote {
                    out.push(c);
                }
                prev = c;
            }
            out.push('\n');
        }
        out
    }

    /// The rules as IronClaw writes them, one search a verb: what the classifier must agree with.
    fn by_the_letter(text: &str) -> bool {
        let lower = strip_by_the_letter(text).to_lowercase();
        if EXCLUSIONS.iter().any(|e| lower.contains(e)) {
            return false;
        }
        PREFIXES.iter().any(|prefix| {
            lower.match_indices(prefix).any(|(at, _)| {
                let rest = &lower[at + prefix.len()..];
                VERBS
                    .iter()
                    .any(|verb| rest.starts_with(verb) || rest.contains(&format!(" {verb}")))
            })
        })
    }

    #[test]
    fn the_quick_checks_agree_with_the_rules_as_written() {
        assert!(EXCLUSIONS.iter().all(|e| e.starts_with("let me ")));
        let pieces = [
            "Let me ",
            "let me know",
            "I'll ",
            "i will ",
            "I'm going to ",
            "search",
            " check",
            "run the",
            "runthe",
            "  ",
            "\n",
            "\"quoted run the\" ",
            "    indented fetch\n",
            "```\nlet me fetch\n```\n",
            "Ünïcode ",
            "add  it",
            "look  up",
            "find",
            ".",
            "x",
            "\\\"",
            "\r\n",
            "\"",
            " \u{a0}```",
            "\r",
        ];
        let mut n = 0;
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let text = format!("{a}{b}{c}");
                    assert_eq!(
                        strip_code_and_quotes(&text),
                        strip_by_the_letter(&text),
                        "{text:?}"
                    );
                    assert_eq!(intent(&text), by_the_letter(&text), "{text:?}");
                    n += usize::from(intent(&text));
                }
            }
        }
        assert!(n > 100, "the texts must include intents: {n}");
    }

    #[test]
    fn after_text_judges_its_own_text_not_a_verdict_kept_for_another() {
        use super::IntentNudge;
        use crate::llm::ModelResponse;
        use crate::policy::{Config, LoopView, Policy};
        let said = "Let me search for that file.";
        let response = ModelResponse::text_only(said);
        let view = LoopView::at(1);
        let mut nudge = IntentNudge::new(Config::ironclaw().intent_nudge);
        assert!(nudge.on_text(said, &response, &view).is_some());
        nudge.after_text(said, true);
        assert_eq!(nudge.consecutive, 1, "the same text: an intent, kept");
        // A verdict kept for one text says nothing of another.
        assert!(nudge.on_text(said, &response, &view).is_some());
        nudge.after_text("The task is complete.", false);
        assert_eq!(nudge.consecutive, 0, "another text, without intent");
        // Nor of a later answer `on_text` did not see (another policy answered first).
        assert!(nudge.on_text(said, &response, &view).is_some());
        nudge.after_text(said, true);
        nudge.after_text("I found 3 matching files.", false);
        assert_eq!(nudge.consecutive, 0);
    }

    #[test]
    fn true_positives() {
        for t in [
            "Let me search for that file.",
            "I'll fetch the data now.",
            "I'm going to check the logs.",
            "Let me add it now.",
            "I will run the tests to verify.",
            "I'll look up the documentation.",
            "Let me read the file contents.",
            "I'm going to execute the command.",
        ] {
            assert!(intent(t), "{t}");
        }
    }

    #[test]
    fn true_negatives_conversational() {
        for t in [
            "Let me explain how this works.",
            "Let me know if you need anything.",
            "Let me think about this.",
            "Let me summarize the findings.",
            "Let me clarify what I mean.",
        ] {
            assert!(!intent(t), "{t}");
        }
    }

    #[test]
    fn exclusion_takes_precedence() {
        assert!(!intent(
            "Let me explain the approach, then I'll search for the file."
        ));
    }

    #[test]
    fn ignores_code_blocks() {
        assert!(!intent(
            "Here is the script:\n```\nlet me search the index\n```\nThat is all."
        ));
    }

    #[test]
    fn ignores_indented_code() {
        assert!(!intent("Example:\n    I'll fetch the data now\nDone."));
    }

    #[test]
    fn ignores_plain_text() {
        for t in [
            "The task is complete.",
            "Here are the results you asked for.",
            "I found 3 matching files.",
        ] {
            assert!(!intent(t), "{t}");
        }
    }

    #[test]
    fn quoted_string_in_code_block() {
        assert!(!intent("```\nprint(\"I will create your account\")\n```"));
    }

    #[test]
    fn quoted_string_outside_code_block() {
        assert!(!intent(
            "The button says \"Let me search the database\" to the user."
        ));
        assert!(intent("I'll fetch the results for you."));
    }

    #[test]
    fn shadowed_prefix() {
        assert!(!intent(
            "Sure, let me think about it. Actually, let me search for the file."
        ));
        assert!(intent(
            "I said let me be clear, then let me fetch the data."
        ));
    }

    #[test]
    fn derived_false_positives_and_curly_apostrophe() {
        assert!(intent("I will not delete anything"));
        assert!(intent("I'll be brief. The search returned 3 hits"));
        assert!(!intent("I\u{2019}ll fetch the data now."));
    }
}
