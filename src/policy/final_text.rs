//! What a runtime does to a final answer's text before it hands it to the user
//! ([`super::FinalTextConfig`]): Moltis cleans reasoning tags and chat-template tokens out of it
//! (`clean_response`), IronClaw's chat delegate drops the `[Called tool …]` lines a model echoes
//! from a flattened history and says it could not complete the request when nothing is left.
//! Pure functions of the text; the engine applies them to the answer that ends the run.

use super::FinalTextConfig;

/// The tags whose content Moltis never shows, in the order it removes them (XML form
/// `<tag>…</tag>`, then the pipe form `<|tag|>…<|/tag|>`).
const INTERNAL_TAGS: [&str; 14] = [
    "thinking",
    "think",
    "reflection",
    "inner_monologue",
    "scratchpad",
    "reasoning",
    "analysis",
    "self_reflection",
    "meta",
    "internal_thought",
    "function_call",
    "tool_use",
    "invoke",
    "tool_calls",
];

/// Chat-template tokens removed wherever they stand.
const TEMPLATE_TOKENS: [&str; 10] = [
    "<|eot_id|>",
    "<|end|>",
    "<|im_end|>",
    "<|im_start|>",
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|python_tag|>",
    "<|eom_id|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
];

/// The capitalised reasoning tags removed last (other capitalisations stay).
const REASONING_TAGS: [&str; 4] = ["Thinking", "Reflection", "Reasoning", "Analysis"];

/// IronClaw's answer when dropping the markers left nothing.
pub const IRONCLAW_NOTHING_LEFT: &str =
    "I wasn't able to complete that request. Could you try rephrasing or providing more details?";

/// `text` as the configured runtime hands it over; the same text when nothing applies.
pub fn apply(config: &FinalTextConfig, text: &str) -> String {
    let mut out = text.to_owned();
    if config.clean_tags {
        out = clean(&out, config.strip_stop_tokens);
    }
    if config.strip_tool_markers {
        out = without_tool_markers(&out, &config.fallback);
    }
    out
}

/// Moltis' `clean_response`: internal tags, template tokens, (with `stop_tokens`) trailing
/// `<|…|>` tokens and capitalised reasoning tags removed, then trimmed.
fn clean(text: &str, stop_tokens: bool) -> String {
    // Every tag and token removed begins with `<`: a text without one only loses the white
    // space around it.
    if !text.contains('<') {
        return text.trim().to_owned();
    }
    let mut out = text.to_owned();
    for tag in INTERNAL_TAGS {
        out = without_xml_tag(&out, tag);
        out = without_pipe_tag(&out, tag);
    }
    for token in TEMPLATE_TOKENS {
        out = out.replace(token, "");
    }
    if stop_tokens {
        out = without_trailing_stop_tokens(&out);
    }
    for tag in REASONING_TAGS {
        out = without_xml_tag(&out, tag);
    }
    out.trim().to_owned()
}

/// Every `<tag>…</tag>` (attributes allowed on the opening tag) removed, earliest first; an
/// opening tag never closed takes the rest of the text with it, and one whose `>` never comes
/// ends the scan with the text kept.
fn without_xml_tag(text: &str, tag: &str) -> String {
    let (bare, with_attrs, close) = (format!("<{tag}>"), format!("<{tag} "), format!("</{tag}>"));
    let mut out = text.to_owned();
    loop {
        let found = [&bare, &with_attrs]
            .iter()
            .filter_map(|open| out.find(open.as_str()).map(|at| (at, open.len())))
            .min();
        let Some((start, open_len)) = found else {
            return out;
        };
        // Where the opening tag ends: at once for `<tag>`, at its `>` for `<tag attrs>`.
        let body = if out[start..].starts_with(&bare) {
            start + open_len
        } else {
            match out[start..].find('>') {
                Some(gt) => start + gt + 1,
                None => return out,
            }
        };
        match out[body..].find(&close) {
            Some(end) => out.replace_range(start..body + end + close.len(), ""),
            None => out.truncate(start),
        }
    }
}

/// Every `<|tag|>…<|/tag|>` removed; one never closed takes the rest of the text.
fn without_pipe_tag(text: &str, tag: &str) -> String {
    let (open, close) = (format!("<|{tag}|>"), format!("<|/{tag}|>"));
    let mut out = text.to_owned();
    while let Some(start) = out.find(&open) {
        let body = start + open.len();
        match out[body..].find(&close) {
            Some(end) => out.replace_range(start..body + end + close.len(), ""),
            None => out.truncate(start),
        }
    }
    out
}

/// `<|name|>` tokens at the end (names of letters, digits, `_` and `-`), stacked ones too.
fn without_trailing_stop_tokens(text: &str) -> String {
    let mut out = text.trim_end();
    while let Some(inner) = out.strip_suffix("|>") {
        let Some(open) = inner.rfind("<|") else {
            break;
        };
        let name = &inner[open + 2..];
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            break;
        }
        out = inner[..open].trim_end();
    }
    out.to_owned()
}

/// IronClaw's chat delegate: whole lines that are a `[Called tool …]` or `[Tool … returned:
/// …]` marker dropped, the rest trimmed; `fallback` when nothing is left.
fn without_tool_markers(text: &str, fallback: &str) -> String {
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| {
            let t = line.trim();
            let called = t.starts_with("[Called tool ") && t.ends_with(']');
            let returned = t.starts_with("[Tool ") && t.contains(" returned:") && t.ends_with(']');
            !(called || returned)
        })
        .collect();
    let joined = kept.join("\n");
    let out = joined.trim();
    if out.is_empty() {
        fallback.to_owned()
    } else {
        out.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moltis(stop_tokens: bool) -> FinalTextConfig {
        FinalTextConfig {
            clean_tags: true,
            strip_stop_tokens: stop_tokens,
            strip_tool_markers: false,
            fallback: String::new(),
        }
    }

    #[test]
    fn moltis_cleans_reasoning_tags_and_template_tokens() {
        let m = moltis(false);
        for (text, want) in [
            (
                "<thinking>reasoning</thinking>Answer here<|eot_id|><|im_end|>",
                "Answer here",
            ),
            ("  <thinking>x</thinking>  Hello  ", "Hello"),
            (
                "<Thinking>Step 1: analyze</Thinking>\n\nThe answer is 42.<|end|>\n<reflection>Was I right?</reflection>",
                "The answer is 42.",
            ),
            // An unclosed tag takes the rest; attributes on the opening tag are allowed.
            ("Hello <thinking>unfinished", "Hello"),
            ("<think mode=\"deep\">x</think>Done.", "Done."),
            ("<|think|>x<|/think|>Done.", "Done."),
            // Other capitalisations, and a `<tag` whose `>` never comes, stay.
            ("<THINK>x</THINK> ok", "<THINK>x</THINK> ok"),
            ("a <think b", "a <think b"),
            // Cleaned to nothing: empty, no fallback of its own.
            ("<think>done</think>", ""),
            ("  \n  ", ""),
            ("Plain answer.", "Plain answer."),
        ] {
            assert_eq!(apply(&m, text), want, "{text:?}");
        }
    }

    #[test]
    fn trailing_stop_tokens_go_only_when_asked_and_only_at_the_end() {
        assert_eq!(apply(&moltis(false), "Hello<|eom|>"), "Hello<|eom|>");
        assert_eq!(apply(&moltis(true), "Hello<|eom|>"), "Hello");
        assert_eq!(apply(&moltis(true), "Hi <|a|> <|b-2|>\n"), "Hi");
        assert_eq!(
            apply(&moltis(true), "The stop token is <|eom|> for this model."),
            "The stop token is <|eom|> for this model."
        );
        assert_eq!(apply(&moltis(true), "x <|a b|>"), "x <|a b|>");
    }

    #[test]
    fn ironclaw_drops_tool_marker_lines_and_falls_back_when_nothing_is_left() {
        let c = FinalTextConfig {
            clean_tags: false,
            strip_stop_tokens: false,
            strip_tool_markers: true,
            fallback: IRONCLAW_NOTHING_LEFT.to_owned(),
        };
        for (text, want) in [
            (
                "[Called tool search({\"query\": \"test\"})]\nHere is the answer.",
                "Here is the answer.",
            ),
            (
                "[Tool search returned: some result]\nSummary of findings.",
                "Summary of findings.",
            ),
            (
                "[Called tool search({})]\n  [Tool search returned: x]  ",
                IRONCLAW_NOTHING_LEFT,
            ),
            (
                "This is a normal response with [brackets] inside.",
                "This is a normal response with [brackets] inside.",
            ),
            // Only whole lines: a marker inside a line stays.
            ("See [Called tool x] above.", "See [Called tool x] above."),
        ] {
            assert_eq!(apply(&c, text), want, "{text:?}");
        }
    }
}
