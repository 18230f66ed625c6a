//! Every size and count harness accepts from its inputs, in one place, so each format (scenario,
//! baseline, JSON results, cassettes, transcripts and served requests) enforces the same
//! figures. Going past one is bad input: a located error with a hint, exit code 2, never a
//! crash or a hang. docs/robustness.md ("Limits") lists them.
//!
//! Pure: the checks take figures, the callers do the reading.

use std::fmt;

const MIB: u64 = 1024 * 1024;

/// Largest scenario file read.
pub const MAX_SCENARIO_BYTES: u64 = 16 * MIB;
/// Largest metric baseline file read (`--baseline`).
pub const MAX_BASELINE_BYTES: u64 = 64 * MIB;
/// Largest JSON results file read (`harness merge`).
pub const MAX_RESULTS_BYTES: u64 = 256 * MIB;
/// Largest request body the served endpoints (`harness serve`, `exec`) read; a larger one is
/// answered 413 before it is read.
pub const MAX_REQUEST_BODY_BYTES: u64 = 16 * MIB;
/// Most bytes of request bodies one `serve` or `exec` session reads in all (it keeps every
/// request for the traces it infers); past it requests are answered 413.
pub const MAX_SESSION_REQUEST_BYTES: u64 = 128 * MIB;
/// How long a client of `serve` or `exec` may take to send a request's headers, and its body.
pub const READ_TIMEOUT_MS: u64 = 30_000;
/// How long a stopping `serve` or `exec` waits for open connections to finish; stalled ones
/// are cut after it.
pub const SHUTDOWN_GRACE_MS: u64 = 2_000;
/// Largest cassette file read (`harness run`, `record`, `promote`, `sweep`).
pub const MAX_CASSETTE_BYTES: u64 = 64 * MIB;
/// Largest transcript file read (`harness import`, `sweep`); the public corpora's files are
/// under 4 MiB.
pub const MAX_TRANSCRIPT_BYTES: u64 = 64 * MIB;

/// A scorecard's `--preface` (Markdown a person wrote) and a sweep's `--labels` file.
pub const MAX_SIDE_INPUT_BYTES: u64 = 16 * MIB;
/// Largest answer (a body, or a stream's events together) `harness record` keeps from one
/// request; a larger one stops the recording, since a cassette holding it could not replay.
pub const MAX_RESPONSE_BYTES: u64 = 8 * MIB;
/// Most exchanges (requests) one cassette may hold.
pub const MAX_CASSETTE_EXCHANGES: usize = 10_000;
/// Most events one streamed answer may have, recorded or replayed.
pub const MAX_STREAM_CHUNKS: usize = 100_000;

/// Deepest nesting of arrays and tables a TOML file may have (the parser's guard, `toml`).
pub const MAX_NESTING_TOML: usize = 80;
/// Deepest nesting of arrays and objects a JSON file may have (the parser's guard,
/// `serde_json`'s recursion limit of 128, which the 128th level reaches).
pub const MAX_NESTING_JSON: usize = 127;

/// Largest golden (or pending golden) read for a comparison. A run's own golden stays under
/// it: its text is at most [`MAX_TRACE_BYTES`], which escaping grows at most sixfold.
pub const MAX_GOLDEN_BYTES: u64 = 128 * MIB;
/// Most text one run's trace may carry (outputs, replies, arguments, injected messages and
/// the other strings of its events).
pub const MAX_TRACE_BYTES: u64 = 16 * MIB;
/// Largest conversation one run may hold at once (the messages the model is sent).
pub const MAX_HISTORY_BYTES: u64 = 16 * MIB;

/// Most events one run's trace may hold.
pub const MAX_TRACE_EVENTS: usize = 20_000;
/// Longest scripted tool output or error text, in bytes.
pub const MAX_TOOL_OUTPUT_BYTES: usize = MIB as usize;
/// Highest iteration cap a configuration may set (`max_iterations`, budgets, step calls).
pub const MAX_ITERATIONS: u32 = 1_000;
/// Virtual time one run may take (24 hours); also the longest single scripted latency or delay.
pub const MAX_VIRTUAL_MS: u64 = 24 * 60 * 60 * 1000;

/// Highest price per million tokens a scenario may set, in US dollars (prices are finite and
/// not negative, so every cost is a number).
pub const MAX_PRICE_PER_MTOK: f64 = 1_000_000.0;
/// Most tokens one run may report in a results file (`merge`): the per-response limit of a
/// scenario (10⁹) times the events of a trace.
pub const MAX_RUN_TOKENS: u64 = 1_000_000_000 * MAX_TRACE_EVENTS as u64;

/// Most worker threads `--jobs` may ask for.
pub const MAX_JOBS: u64 = 256;
/// Most runs of each case `--repeat` may ask for.
pub const MAX_REPEAT: u32 = 10_000;
/// Bytes of one answer line of an external detector (`sweep --detector exec:`): an answer is
/// a short JSON object; a longer line is the setting's error, read no further.
pub const MAX_DETECTOR_ANSWER_BYTES: usize = 64 * 1024;
/// How long an external detector may take to answer one run, by default
/// (`sweep --detector-timeout-ms`).
pub const DETECTOR_TIMEOUT_MS: u64 = 10_000;
/// How long the external detectors have, all together, to exit once their input is closed at
/// the end of a sweep; those still running are ended with their process group.
pub const DETECTOR_EXIT_GRACE_MS: u64 = 2_000;

/// A limit a run went past.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Exceeded {
    /// The trace grew past [`MAX_TRACE_EVENTS`].
    TraceEvents,
    /// The virtual clock went past [`MAX_VIRTUAL_MS`].
    VirtualTime(u64),
    /// The trace's text grew past [`MAX_TRACE_BYTES`].
    TraceBytes,
    /// The conversation grew past [`MAX_HISTORY_BYTES`].
    HistoryBytes,
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TraceEvents => write!(
                f,
                "the run's trace grew past {MAX_TRACE_EVENTS} events (the limit per run)"
            ),
            Self::VirtualTime(ms) => write!(
                f,
                "the run's virtual time reached {ms} ms, past the budget of {MAX_VIRTUAL_MS} ms (24 hours) per run"
            ),
            Self::TraceBytes => write!(
                f,
                "the run's trace grew past {MAX_TRACE_BYTES} bytes (the limit per run) of text"
            ),
            Self::HistoryBytes => write!(
                f,
                "the run's conversation grew past {MAX_HISTORY_BYTES} bytes (the limit per run) of messages"
            ),
        }
    }
}

impl std::error::Error for Exceeded {}

impl Exceeded {
    /// How to get back under the limit.
    pub fn hint(&self) -> &'static str {
        match self {
            Self::TraceEvents => {
                "lower `max_iterations` (the plan/step loop: `plan_step.max_step_calls` or `max_replans`), the turns' `repeat` or the follow-ups: no scenario needs this many events"
            }
            Self::VirtualTime(_) => "lower the scripted latencies and retry delays",
            Self::TraceBytes | Self::HistoryBytes => {
                "shorten the tool outputs, replies and injected messages, or lower `max_iterations` and the turns' `repeat`: no run needs this much text"
            }
        }
    }
}

/// Check a run in progress: its trace length and virtual clock.
pub fn check_run(events: usize, clock_ms: u64) -> Result<(), Exceeded> {
    if events > MAX_TRACE_EVENTS {
        Err(Exceeded::TraceEvents)
    } else if clock_ms > MAX_VIRTUAL_MS {
        Err(Exceeded::VirtualTime(clock_ms))
    } else {
        Ok(())
    }
}

/// What a run has used of the per-run byte limits, counted as it goes (events and messages
/// add their sizes; nothing is measured twice). Once a limit is passed it is remembered, and
/// the engine stops at its next check; meanwhile the caller keeps nothing more.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    trace_bytes: u64,
    history_bytes: u64,
    over: Option<Exceeded>,
}

impl Budget {
    /// Count an event carrying `bytes` of text; whether to keep it (false once past the limit).
    pub fn event(&mut self, bytes: usize) -> bool {
        self.trace_bytes = self.trace_bytes.saturating_add(bytes as u64);
        if self.trace_bytes > MAX_TRACE_BYTES {
            self.over.get_or_insert(Exceeded::TraceBytes);
        }
        self.over.is_none()
    }

    /// Count a message of `bytes` added to the conversation; whether to keep it.
    pub fn message(&mut self, bytes: usize) -> bool {
        self.history_bytes = self.history_bytes.saturating_add(bytes as u64);
        if self.history_bytes > MAX_HISTORY_BYTES {
            self.over.get_or_insert(Exceeded::HistoryBytes);
        }
        self.over.is_none()
    }

    /// Messages of `bytes` left the conversation (trimmed).
    pub fn forget(&mut self, bytes: usize) {
        self.history_bytes = self.history_bytes.saturating_sub(bytes as u64);
    }

    /// The conversation was replaced (compacted): it now holds `bytes`.
    pub fn history_is(&mut self, bytes: usize) {
        self.history_bytes = bytes as u64;
    }

    /// Check a run in progress: its byte counts, trace length and virtual clock.
    pub fn check(&self, events: usize, clock_ms: u64) -> Result<(), Exceeded> {
        match &self.over {
            Some(e) => Err(e.clone()),
            None => check_run(events, clock_ms),
        }
    }
}

/// The error for an input file larger than `max` bytes, or `None` when it fits.
pub fn file_too_large(what: &str, len: u64, max: u64) -> Option<String> {
    (len > max).then(|| {
        format!(
            "the {what} is {len} bytes, over the limit of {max} bytes ({} MiB)",
            max / MIB
        )
    })
}

/// The parsers' messages for nesting past their guard, rewritten to say what the limit is;
/// other messages unchanged.
pub fn explain_nesting(message: &str, json: bool) -> Option<String> {
    let deep = message.contains("recursion limit") || message.contains("cannot recurse further");
    deep.then(|| {
        let (format, max) = if json {
            ("JSON", MAX_NESTING_JSON)
        } else {
            ("TOML", MAX_NESTING_TOML)
        };
        format!("values nest deeper than {format} allows here (at most {max} levels)")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(open: &str, close: &str, n: usize) -> String {
        format!("{}1{}", open.repeat(n), close.repeat(n))
    }

    #[test]
    fn the_documented_nesting_limits_are_the_parsers() {
        let toml_at =
            |n: usize| toml::from_str::<toml::Table>(&format!("a = {}", nested("[", "]", n)));
        // At the top level; tables around a value count as levels too.
        assert!(toml_at(MAX_NESTING_TOML).is_ok());
        let err = toml_at(MAX_NESTING_TOML + 1).unwrap_err();
        assert!(explain_nesting(err.message(), false).is_some(), "{err}");
        let deep = toml_at(100_000).unwrap_err();
        assert!(explain_nesting(deep.message(), false).is_some(), "{deep}");

        let json_at = |n: usize| serde_json::from_str::<serde_json::Value>(&nested("[", "]", n));
        assert!(json_at(MAX_NESTING_JSON).is_ok());
        let err = json_at(MAX_NESTING_JSON + 1).unwrap_err();
        assert!(explain_nesting(&err.to_string(), true).is_some(), "{err}");
        assert!(json_at(100_000).is_err());
    }

    #[test]
    fn runs_are_checked_against_both_run_limits() {
        assert_eq!(check_run(MAX_TRACE_EVENTS, MAX_VIRTUAL_MS), Ok(()));
        assert_eq!(
            check_run(MAX_TRACE_EVENTS + 1, 0),
            Err(Exceeded::TraceEvents)
        );
        assert_eq!(
            check_run(1, MAX_VIRTUAL_MS + 1),
            Err(Exceeded::VirtualTime(MAX_VIRTUAL_MS + 1))
        );
        assert!(Exceeded::TraceEvents.to_string().contains("20000 events"));
    }

    #[test]
    fn byte_budgets_stop_keeping_once_past_and_say_which() {
        let mut b = Budget::default();
        let mib = usize::try_from(MIB).unwrap();
        assert!(b.event(mib) && b.message(mib));
        assert_eq!(b.check(1, 0), Ok(()));
        for _ in 0..16 {
            b.message(mib);
        }
        assert_eq!(b.check(1, 0), Err(Exceeded::HistoryBytes));
        assert!(!b.event(1), "nothing is kept once a limit is passed");
        let mut b = Budget::default();
        b.message(usize::try_from(MAX_HISTORY_BYTES).unwrap());
        b.history_is(10);
        assert!(b.message(10) && b.check(1, 0).is_ok());
        assert!(!b.event(usize::try_from(MAX_TRACE_BYTES).unwrap() + 1));
        assert_eq!(b.check(1, 0), Err(Exceeded::TraceBytes));
        assert!(
            Exceeded::TraceBytes
                .to_string()
                .contains("16777216 bytes (the limit per run)")
        );
    }

    #[test]
    fn oversized_files_are_named_with_the_limit() {
        assert_eq!(file_too_large("scenario", 10, 10), None);
        let e = file_too_large("scenario", MAX_SCENARIO_BYTES + 1, MAX_SCENARIO_BYTES).unwrap();
        assert!(
            e.contains("over the limit of 16777216 bytes (16 MiB)"),
            "{e}"
        );
    }
}
