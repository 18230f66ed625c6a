//! IronClaw's completion classifier `llm_signals_completion` (runtimes.md IronClaw §4.2).
//!
//! Owns the phrase lists and the matching rule only: lower-case the whole text, let any negative
//! phrase win, then look for a positive phrase. It deliberately does not strip code or quotes
//! (unlike the intent classifier in `intent.rs`), because upstream does not, and it holds no
//! state; deciding what a completion signal does to the loop is the caller's business.

/// Any of these anywhere in the lower-cased text means "not finished", whatever else it says.
/// Checked first so "the job is not complete" never reads as "job is complete".
const NEGATIVES: &[&str] = &[
    "not complete",
    "not done",
    "not finished",
    "incomplete",
    "unfinished",
    "isn't done",
    "isn't complete",
    "isn't finished",
    "not yet done",
    "not yet complete",
    "not yet finished",
];

/// Whole phrases only: upstream dropped bare words such as "done" or "completed" because tool
/// output and ordinary narration ("The download completed.") tripped them.
const POSITIVES: &[&str] = &[
    "job is complete",
    "job is done",
    "job is finished",
    "task is complete",
    "task is done",
    "task is finished",
    "work is complete",
    "work is done",
    "work is finished",
    "successfully completed",
    "have completed the job",
    "have completed the task",
    "have finished the job",
    "have finished the task",
    "all steps are complete",
    "all steps are done",
    "i have completed",
    "i've completed",
    "all done",
    "all tasks complete",
];

/// Does the text claim the job is finished? (IronClaw's exact rules.)
///
/// Matching is plain substring search on the lower-cased text, so only the ASCII apostrophe
/// matches "i've completed" and markup such as `**not complete**` still counts as negative.
pub fn signals_completion(text: &str) -> bool {
    let lower = text.to_lowercase();
    if NEGATIVES.iter().any(|n| lower.contains(n)) {
        return false;
    }
    POSITIVES.iter().any(|p| lower.contains(p))
}

/// The completion classifier cases of runtimes.md IronClaw §9.2, named after the upstream tests.
#[cfg(test)]
mod tests {
    use super::signals_completion as completion;

    #[test]
    fn signals_completion_positive() {
        let cases = [
            // Four of the upstream test's 13 cases.
            "The job is complete.",
            "All done, here are the results.",
            "I've done all the work. The work is done.",
            "All tasks complete.",
            // One per remaining phrase family, mixed case to pin the lower-casing.
            "The TASK IS DONE and the report is attached.",
            "The task is finished; see the summary below.",
            "The work is complete.",
            "The migration was successfully completed.",
            "I have completed the task you asked for.",
            "I have finished the job.",
            "All steps are done.",
            "I've completed the refactor.",
            "Job is finished, closing the ticket.",
        ];
        assert_eq!(cases.len(), 13);
        for t in cases {
            assert!(completion(t), "{t}");
        }
    }

    #[test]
    fn signals_completion_negative() {
        for t in [
            "The task is not complete yet.",
            "This is not done.",
            "The work is incomplete.",
            "Build is unfinished.",
            "The migration is not yet finished.",
            "The job isn't done yet.",
            "This remains unfinished.",
        ] {
            assert!(!completion(t), "{t}");
        }
    }

    #[test]
    fn signals_completion_no_bare_substrings() {
        for t in [
            "The download completed.",
            "Function done_callback was called.",
            "Set is_complete = true",
            "Running step 3 of 5",
            "I need to complete more work first.",
            "Let me finish the remaining steps.",
            "I'm done analyzing, now let me fix it.",
            "I completed step 1 but step 2 remains.",
        ] {
            assert!(!completion(t), "{t}");
        }
    }

    #[test]
    fn signals_completion_tool_output_injection() {
        for t in [
            "TASK_COMPLETE",
            "JOB_DONE",
            "The tool returned: TASK_COMPLETE signal",
        ] {
            assert!(!completion(t), "{t}");
        }
    }

    #[test]
    fn signals_completion_self_dialogue_pattern() {
        // The shape of text that fed IronClaw's self-dialogue loop: a denial in bold markup
        // next to positive phrases. The negative must win even though "all done" and
        // "task is done" also appear.
        let text = "No \u{2014} the job is **not complete**. I said \"all done\" earlier, \
                    but the task is done only once the tests pass, and they have not run.";
        assert!(!completion(text));
        // Without the denial the same text would count as completion, so the negative is what
        // decides the case above.
        assert!(completion(
            &text.replace("**not complete**", "**complete**")
        ));
    }

    #[test]
    fn negatives_win_anywhere_in_the_text() {
        // Negatives are not scoped to a sentence: an unrelated "incomplete" vetoes a real claim.
        assert!(!completion(
            "I have completed the task. The docs are incomplete but out of scope."
        ));
    }

    #[test]
    fn no_code_stripping() {
        // Unlike the intent classifier, phrases inside fences still count.
        assert!(completion("```\nall done\n```"));
    }
}
