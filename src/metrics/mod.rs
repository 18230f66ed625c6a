//! Metrics: one [`Row`] per run, folded from its trace, and the CSV writer. Pure: the writer
//! takes any `io::Write`.

use crate::llm::Args;
use crate::scenario::{OutcomeKind, Prices};
use crate::trace::{Event, StepStatus, TimedEvent};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::io;

/// The metrics of one run. Column order is the CSV's (the JSON results read them back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Case id.
    pub scenario: String,
    /// Scenario family.
    pub family: String,
    /// Profile.
    pub profile: String,
    /// How it ended (`invalid` when the case could not run).
    pub outcome: String,
    /// Iterations run.
    pub iterations: u32,
    /// Model calls made.
    pub model_calls: u32,
    /// Tool calls dispatched.
    pub tool_calls: u32,
    /// Dispatched tool calls that failed.
    pub tool_failures: u32,
    /// Tool calls rejected before dispatch.
    pub rejected_calls: u32,
    /// Stage-1 interventions (advice: nudges, warnings, notices).
    pub interventions_stage1: u32,
    /// Stage-2 interventions (restriction: tools stripped, force-text).
    pub interventions_stage2: u32,
    /// Stage-3 interventions (the defence ended the run).
    pub interventions_stage3: u32,
    /// Messages injected by defences.
    pub nudges: u32,
    /// Truncated batches discarded.
    pub truncations: u32,
    /// Model calls made in force-text mode.
    pub force_text_turns: u32,
    /// Iteration of the first intervention (empty if none).
    pub first_intervention_iteration: Option<u32>,
    /// Iterations from the first repeated failure until recovery or the end, and (plan/step
    /// loop) the iterations of steps that ended failed; each iteration counts once.
    pub wasted_iterations: u32,
    /// Tool calls a defence skipped unexecuted.
    pub skipped_calls: u32,
    /// Provider errors (retried or not).
    pub provider_errors: u32,
    /// Context compactions.
    pub compactions: u32,
    /// Input tokens.
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Cost in US dollars (written with six decimals).
    #[serde(serialize_with = "six_decimals", deserialize_with = "number_or_text")]
    pub cost_usd: f64,
    /// Virtual milliseconds.
    pub virtual_ms: u64,
    /// The request at which a replayed agent diverged from its recording (empty when it did
    /// not, or when nothing was replayed).
    #[serde(default)]
    pub diverged_at: Option<u32>,
    /// Whether every expectation held.
    pub expectations_passed: bool,
}

/// Fold a trace into its metrics (`expectations_passed` is set by the caller).
pub fn row(
    case_id: &str,
    family: &str,
    profile: &str,
    prices: Prices,
    events: &[TimedEvent],
) -> Row {
    let mut r = Row {
        scenario: case_id.to_owned(),
        family: family.to_owned(),
        profile: profile.to_owned(),
        outcome: "incomplete".to_owned(),
        iterations: 0,
        model_calls: 0,
        tool_calls: 0,
        tool_failures: 0,
        rejected_calls: 0,
        interventions_stage1: 0,
        interventions_stage2: 0,
        interventions_stage3: 0,
        nudges: 0,
        truncations: 0,
        force_text_turns: 0,
        first_intervention_iteration: None,
        wasted_iterations: 0,
        skipped_calls: 0,
        provider_errors: 0,
        compactions: 0,
        input_tokens: 0,
        output_tokens: 0,
        cost_usd: 0.0,
        virtual_ms: events.last().map_or(0, |e| e.t_ms),
        diverged_at: None,
        expectations_passed: true,
    };
    let mut iteration = 0u32;
    let mut seen_failures = SeenKeys::default();
    let mut first_repeat: Option<u32> = None;
    let mut recovered_at: Option<u32> = None;
    let mut start_args = Starts::default();
    // Iterations, as half-open ranges, spent on plan steps that ended failed.
    let mut step_from = 1u32;
    let mut wasted: Vec<(u32, u32)> = Vec::new();
    // A failure's two keys, `a\0name\0canonical arguments` and `e\0name\0error`, written
    // into buffers kept across failures.
    let (mut args_key, mut error_key) = (String::new(), String::new());
    let mut failure = |name: &str,
                       args: Option<&Args>,
                       error: Option<&str>,
                       iteration: u32,
                       first_repeat: &mut Option<u32>| {
        failure_key(&mut args_key, 'a', name);
        if let Some(a) = args {
            args_key.push_str(a.canonical());
        }
        // Both keys are kept, whichever repeats (their tags keep them apart).
        let mut repeated = !seen_failures.insert(&args_key);
        if let Some(e) = error {
            failure_key(&mut error_key, 'e', name);
            error_key.push_str(e);
            repeated |= !seen_failures.insert(&error_key);
        }
        if repeated && first_repeat.is_none() {
            *first_repeat = Some(iteration);
        }
    };
    for e in events {
        match &e.event {
            Event::RunStart { .. }
            | Event::Signal { .. }
            | Event::ForceText { .. }
            | Event::Notice { .. }
            | Event::ApprovalRequested { .. }
            | Event::ApprovalDecision { .. }
            | Event::TurnEnd { .. }
            | Event::UserTurn { .. } => {}
            Event::ToolCallSkipped { .. } => r.skipped_calls += 1,
            Event::Diverged { request, .. } => {
                r.diverged_at = r.diverged_at.or(Some(*request));
            }
            Event::ProviderError { .. } => r.provider_errors += 1,
            Event::Compaction { .. } => r.compactions += 1,
            Event::ModelResponse {
                input_tokens,
                output_tokens,
                ..
            } => {
                r.input_tokens += input_tokens;
                r.output_tokens += output_tokens;
            }
            Event::Iteration { .. } => {
                // Loops restart after an approval or a new user message: number iterations
                // over the whole run.
                r.iterations += 1;
                iteration = r.iterations;
            }
            Event::ModelRequest { force_text, .. } => {
                r.model_calls += 1;
                if *force_text {
                    r.force_text_turns += 1;
                }
            }
            Event::ToolCallStart { id, args, .. } => {
                r.tool_calls += 1;
                // Looked up, and its canonical text asked for, only for a call that fails.
                start_args.push(id, args);
            }
            Event::ToolCallEnd {
                id,
                name,
                ok,
                error,
                ..
            } => {
                if *ok {
                    if first_repeat.is_some() && recovered_at.is_none() {
                        recovered_at = Some(iteration);
                    }
                } else {
                    r.tool_failures += 1;
                    let args = start_args.latest(id);
                    failure(name, args, error.as_deref(), iteration, &mut first_repeat);
                }
            }
            Event::ToolCallRejected {
                name, args, error, ..
            } => {
                r.rejected_calls += 1;
                failure(name, Some(args), Some(error), iteration, &mut first_repeat);
            }
            Event::TruncationDiscarded { .. } => r.truncations += 1,
            Event::Intervention { stage, .. } => {
                match stage {
                    1 => r.interventions_stage1 += 1,
                    2 => r.interventions_stage2 += 1,
                    _ => r.interventions_stage3 += 1,
                }
                r.first_intervention_iteration.get_or_insert(iteration);
            }
            Event::MessageInjected { .. } => r.nudges += 1,
            Event::Outcome { outcome, .. } => {
                r.outcome = outcome.as_str().to_owned();
                if *outcome == OutcomeKind::Response
                    && first_repeat.is_some()
                    && recovered_at.is_none()
                {
                    recovered_at = Some(r.iterations);
                }
            }
            Event::StepStart { .. } => step_from = iteration + 1,
            Event::StepEnd { status, .. } => {
                if *status == StepStatus::Failed {
                    wasted.push((step_from, iteration + 1));
                }
            }
            Event::Replan { .. } => {}
        }
    }
    if let Some(f) = first_repeat {
        let end = recovered_at.unwrap_or(r.iterations + 1);
        wasted.push((f, end));
    }
    r.wasted_iterations = covered(wasted);
    r.cost_usd = (r.input_tokens as f64 * prices.input_per_mtok
        + r.output_tokens as f64 * prices.output_per_mtok)
        / 1_000_000.0;
    r
}

/// Every call's arguments as dispatched, in order, looked up (the latest of an id) only for a
/// call that fails: a list every call pushes to, where a map would make each one pay for a
/// hash. A call's end is most often among the last few starts; past them, an index of the rest
/// is brought up to date, so a long run with many failures costs no more than a map.
#[derive(Default)]
struct Starts<'e> {
    list: Vec<(&'e str, &'e Args)>,
    /// The latest start of each id among the first `indexed` of `list`.
    index: fnv::FnvHashMap<&'e str, &'e Args>,
    indexed: usize,
}

impl<'e> Starts<'e> {
    /// Starts looked at one by one, the latest first, before the index is asked.
    const RECENT: usize = 32;

    fn push(&mut self, id: &'e str, args: &'e Args) {
        self.list.push((id, args));
    }

    /// The arguments of the latest start of call `id`.
    fn latest(&mut self, id: &str) -> Option<&'e Args> {
        let recent = self.list.len().saturating_sub(Self::RECENT);
        if let Some((_, args)) = self.list[recent..].iter().rev().find(|(s, _)| *s == id) {
            return Some(args);
        }
        // None of the recent ones: the latest is earlier, and the index, brought up to date,
        // names the latest of all.
        for (s, args) in &self.list[self.indexed..] {
            self.index.insert(s, args);
        }
        self.indexed = self.list.len();
        self.index.get(id).copied()
    }
}

/// A set of keys, each once: their text kept end to end in one buffer and found by a hash
/// of it, made once per key and a word at a time (a failure's key holds its arguments or its
/// error message, often hundreds of bytes). Keys of equal hash are told apart by their text.
#[derive(Default)]
struct SeenKeys {
    text: String,
    /// The first key of each hash, as a range of `text`.
    first: fnv::FnvHashMap<u64, std::ops::Range<usize>>,
    /// Any later key of a hash already taken.
    more: Vec<(u64, std::ops::Range<usize>)>,
}

impl SeenKeys {
    /// Add `key`; false when it was there already.
    fn insert(&mut self, key: &str) -> bool {
        self.insert_hashed(key, word_hash(key.as_bytes()))
    }

    /// Add `key`, whose hash is `h`; false when it was there already.
    fn insert_hashed(&mut self, key: &str, h: u64) -> bool {
        let text = &self.text;
        let same = |r: &std::ops::Range<usize>| text.get(r.clone()) == Some(key);
        let taken = match self.first.get(&h) {
            None => false,
            Some(at) if same(at) || self.more.iter().any(|(m, r)| *m == h && same(r)) => {
                return false;
            }
            Some(_) => true,
        };
        let range = self.push(key);
        if taken {
            self.more.push((h, range));
        } else {
            self.first.insert(h, range);
        }
        true
    }

    fn push(&mut self, key: &str) -> std::ops::Range<usize> {
        let from = self.text.len();
        self.text.push_str(key);
        from..self.text.len()
    }
}

/// A 64-bit hash of `bytes`, eight at a time (the rotate-xor-multiply step of rustc's own
/// hasher), with the length mixed in last. For a hash table: not for anything an attacker
/// chooses to collide, nor kept anywhere.
fn word_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    let mut h = 0;
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        h = step(h, u64::from_le_bytes(b));
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    h = step(h, u64::from_le_bytes(tail));
    step(h, bytes.len() as u64)
}

/// `key` made the start of a repeated-failure key: `tag\0name\0`.
fn failure_key(key: &mut String, tag: char, name: &str) {
    key.clear();
    key.push(tag);
    key.push('\u{0}');
    key.push_str(name);
    key.push('\u{0}');
}

/// How many whole numbers the half-open ranges cover together.
fn covered(mut ranges: Vec<(u32, u32)>) -> u32 {
    ranges.retain(|(a, b)| b > a);
    ranges.sort_unstable();
    let mut total = 0;
    let mut reached = 0;
    for (a, b) in ranges {
        let a = a.max(reached);
        if b > a {
            total += b - a;
            reached = b;
        }
    }
    total
}

/// Check a row read back from a results file (`harness merge`): figures a run can give, so
/// sums over any number of rows stay numbers (no `NaN` cost, no token count that wraps).
pub fn check_row(r: &Row) -> Result<(), String> {
    use crate::limits::{MAX_RUN_TOKENS, MAX_VIRTUAL_MS};
    if !(r.cost_usd.is_finite() && r.cost_usd >= 0.0) {
        return Err(format!(
            "the cost {} is not a number of dollars",
            r.cost_usd
        ));
    }
    for (what, n) in [
        ("input_tokens", r.input_tokens),
        ("output_tokens", r.output_tokens),
    ] {
        if n > MAX_RUN_TOKENS {
            return Err(format!(
                "{what} is {n}, over the limit of {MAX_RUN_TOKENS} for one run"
            ));
        }
    }
    if r.virtual_ms > MAX_VIRTUAL_MS {
        return Err(format!(
            "virtual_ms is {}, over the limit of {MAX_VIRTUAL_MS} for one run",
            r.virtual_ms
        ));
    }
    Ok(())
}

fn six_decimals<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:.6}"))
}

/// A cost written as a number (JSON results keep it exact) or as CSV text.
fn number_or_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Cost {
        Number(f64),
        Text(String),
    }
    match Cost::deserialize(d)? {
        Cost::Number(n) => Ok(n),
        Cost::Text(t) => t.parse().map_err(serde::de::Error::custom),
    }
}

/// Writes rows as CSV, the header with the first row so that a CSV of no rows is empty. A
/// field with a comma, a quote or a line break is quoted, its quotes doubled, as RFC 4180
/// says; lines end in `\n` (not the RFC's CR LF), as the `csv` crate writes them by default.
/// A row is written whole into a buffer kept for the next one: the main thread writes every
/// case's row, and a general CSV writer fed through serialisation cost some 5,900
/// instructions a row.
pub struct CsvSink<W: io::Write> {
    out: W,
    header: bool,
    line: String,
}

impl<W: io::Write> CsvSink<W> {
    /// A sink over `out`.
    pub fn new(out: W) -> Self {
        Self {
            out,
            header: false,
            line: String::new(),
        }
    }

    /// Write one row.
    pub fn write(&mut self, row: &Row) -> io::Result<()> {
        let line = &mut self.line;
        line.clear();
        if !self.header {
            self.header = true;
            // The columns are the row's serialised field names, in order.
            let fields = serde_json::to_value(row).map_err(io::Error::other)?;
            let names: Vec<&str> = fields
                .as_object()
                .into_iter()
                .flat_map(|o| o.keys().map(String::as_str))
                .collect();
            line.push_str(&names.join(","));
            line.push('\n');
        }
        // Every field named, so that a field added to `Row` cannot be left out here.
        let Row {
            scenario,
            family,
            profile,
            outcome,
            iterations,
            model_calls,
            tool_calls,
            tool_failures,
            rejected_calls,
            interventions_stage1,
            interventions_stage2,
            interventions_stage3,
            nudges,
            truncations,
            force_text_turns,
            first_intervention_iteration,
            wasted_iterations,
            skipped_calls,
            provider_errors,
            compactions,
            input_tokens,
            output_tokens,
            cost_usd,
            virtual_ms,
            diverged_at,
            expectations_passed,
        } = row;
        for text in [scenario, family, profile, outcome] {
            csv_field(line, text);
            line.push(',');
        }
        let count = |n: &u32| Some(u64::from(*n));
        let mut n = itoa::Buffer::new();
        let mut numbers = |line: &mut String, values: &[Option<u64>]| {
            for v in values {
                if let Some(v) = v {
                    line.push_str(n.format(*v));
                }
                line.push(',');
            }
        };
        numbers(
            line,
            &[
                count(iterations),
                count(model_calls),
                count(tool_calls),
                count(tool_failures),
                count(rejected_calls),
                count(interventions_stage1),
                count(interventions_stage2),
                count(interventions_stage3),
                count(nudges),
                count(truncations),
                count(force_text_turns),
                first_intervention_iteration.as_ref().and_then(count),
                count(wasted_iterations),
                count(skipped_calls),
                count(provider_errors),
                count(compactions),
                Some(*input_tokens),
                Some(*output_tokens),
            ],
        );
        // Six decimals, as `six_decimals` serialises it; no such text needs quoting.
        let _ = write!(line, "{cost_usd:.6},");
        numbers(
            line,
            &[Some(*virtual_ms), diverged_at.as_ref().and_then(count)],
        );
        line.push_str(if *expectations_passed {
            "true"
        } else {
            "false"
        });
        line.push('\n');
        self.out.write_all(line.as_bytes())
    }

    /// Flush and hand back the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Append `text` as one CSV field: quoted, its quotes doubled, when it holds a comma, a quote
/// or a line break (a lone `\r` too, which readers take for one).
fn csv_field(line: &mut String, text: &str) {
    if !text
        .bytes()
        .any(|b| matches!(b, b',' | b'"' | b'\n' | b'\r'))
    {
        line.push_str(text);
        return;
    }
    line.push('"');
    let mut pieces = text.split('"');
    line.push_str(pieces.next().unwrap_or_default());
    for piece in pieces {
        line.push_str("\"\"");
        line.push_str(piece);
    }
    line.push('"');
}

#[cfg(test)]
mod tests {
    use super::{CsvSink, Row, SeenKeys, Starts, covered, word_hash};
    use crate::llm::Args;
    use serde_json::{Value, json};

    /// One failed call of a run: its id, tool, arguments (`None`: never started) and error.
    type Failed<'a> = (&'a str, &'a str, Option<serde_json::Value>, Option<&'a str>);

    /// The iterations a run of four wasted, its failures (one list an iteration) as given and
    /// nothing recovering: from the first failure that repeats one before it, to the end.
    fn wasted(iterations: &[Vec<Failed<'_>>]) -> u32 {
        use crate::trace::{Event, TimedEvent};
        let mut events = Vec::new();
        for n in 1..=4 {
            events.push(Event::Iteration { n });
            for (id, name, args, error) in iterations.get(n as usize - 1).into_iter().flatten() {
                if let Some(a) = args {
                    events.push(Event::ToolCallStart {
                        id: (*id).to_owned(),
                        name: (*name).to_owned(),
                        args: Args::new(a.clone()),
                        args_unknown: false,
                    });
                }
                events.push(Event::ToolCallEnd {
                    id: (*id).to_owned(),
                    name: (*name).to_owned(),
                    ok: false,
                    output: None,
                    error: error.map(str::to_owned),
                    latency_ms: 0,
                    rule: None,
                });
            }
        }
        let events: Vec<TimedEvent> = events
            .into_iter()
            .map(|event| TimedEvent { t_ms: 0, event })
            .collect();
        super::row(
            "c",
            "f",
            "none",
            crate::scenario::Prices::default(),
            &events,
        )
        .wasted_iterations
    }

    #[test]
    fn a_failure_repeats_by_its_arguments_in_any_key_order_or_by_its_error() {
        let call = |id, name, args: Value, error| (id, name, Some(args), error);
        // The same arguments, another error: a repeat at iteration 2.
        let args = [
            vec![call("c0", "a", json!({"x": 1}), Some("e1"))],
            vec![call("c1", "a", json!({"x": 1}), Some("e2"))],
        ];
        assert_eq!(wasted(&args), 3);
        // Other arguments, the same error: a repeat at 2.
        let error = [
            vec![call("c0", "a", json!({"x": 1}), Some("boom"))],
            vec![call("c1", "a", json!({"x": 2}), Some("boom"))],
        ];
        assert_eq!(wasted(&error), 3);
        // The same arguments in another key order, no error text; another tool's failure
        // with them is no repeat: a repeat at 3.
        let order = [
            vec![call("c0", "a", json!({"p": 1, "q": 2}), None)],
            vec![call("c1", "b", json!({"p": 1, "q": 2}), None)],
            vec![call("c2", "a", json!({"q": 2, "p": 1}), None)],
        ];
        assert_eq!(wasted(&order), 2);
        // Ends of calls never started, twice: the same (empty) arguments, a repeat at 2.
        let unstarted = [vec![("c9", "a", None, None)], vec![("c9", "a", None, None)]];
        assert_eq!(wasted(&unstarted), 3);
        // An id used again with other arguments: the latest start's count, no repeat; nor is
        // another tool's failure with the same error.
        let reused = [
            vec![call("c0", "a", json!({"x": 1}), Some("e1"))],
            vec![call("c0", "a", json!({"x": 2}), Some("e2"))],
            vec![call("c1", "b", json!({"x": 3}), Some("e1"))],
        ];
        assert_eq!(wasted(&reused), 0);
    }

    #[test]
    fn starts_name_the_latest_arguments_of_an_id_as_a_map_would() {
        // Ids that come back (as a mock's `call_0` does every turn), looked up now soon after
        // their start, now long after, now never started; runs longer than the recent window.
        let values: Vec<Args> = (0..2_000).map(|i| Args::new(json!({"i": i}))).collect();
        let ids: Vec<String> = (0..80).map(|i| format!("call_{i}")).collect();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            usize::try_from(state >> 33).unwrap() % n
        };
        for spread in [1, 5, 40, 80] {
            let mut starts = Starts::default();
            let mut map = std::collections::HashMap::new();
            for v in &values {
                let id = ids[next(spread)].as_str();
                starts.push(id, v);
                map.insert(id, v);
                for _ in 0..next(3) {
                    let asked = ids[next(80)].as_str();
                    assert_eq!(starts.latest(asked), map.get(asked).copied(), "{asked}");
                }
            }
        }
    }

    #[test]
    fn seen_keys_answer_as_a_set_of_strings_even_when_hashes_collide() {
        // Keys of every length around the word size, prefixes of each other, equal but for
        // their last byte, and the empty key; each offered twice, in two orders.
        let mut keys: Vec<String> = vec![String::new()];
        for n in 1..=19 {
            keys.push("a".repeat(n));
            keys.push(format!("{}b", "a".repeat(n - 1)));
            keys.push(format!("e\0tool\0{}", "x".repeat(n)));
        }
        keys.push("a".repeat(8) + "\0");
        let mut offered = keys.clone();
        offered.extend(keys.iter().rev().cloned());
        // Every hash the same, a few hashes, and the real one.
        let hashes: [fn(&str) -> u64; 3] =
            [|_| 7, |k| k.len() as u64 % 3, |k| word_hash(k.as_bytes())];
        for hash in hashes {
            let mut seen = SeenKeys::default();
            let mut set = std::collections::HashSet::new();
            for k in &offered {
                assert_eq!(
                    seen.insert_hashed(k, hash(k)),
                    set.insert(k.clone()),
                    "{k:?}"
                );
            }
        }
        // The real hash tells these keys apart (its tail and length steps count).
        let distinct: std::collections::HashSet<u64> =
            keys.iter().map(|k| word_hash(k.as_bytes())).collect();
        assert_eq!(distinct.len(), keys.len());
    }

    /// The CSV a general writer gives through serialisation, the way the sink wrote before.
    fn by_serde(rows: &[Row]) -> Vec<u8> {
        let mut w = csv::WriterBuilder::new()
            .has_headers(true)
            .from_writer(Vec::new());
        for r in rows {
            w.serialize(r).unwrap();
        }
        w.into_inner().unwrap()
    }

    /// Bytes written, and how many of them a flush had seen.
    #[derive(Default)]
    struct Recorder {
        bytes: Vec<u8>,
        flushed: usize,
    }

    impl std::io::Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            self.flushed = self.bytes.len();
            Ok(())
        }
    }

    fn by_sink(rows: &[Row]) -> Vec<u8> {
        let mut sink = CsvSink::new(Recorder::default());
        for r in rows {
            sink.write(r).unwrap();
        }
        let out = sink.finish().unwrap();
        assert_eq!(
            out.flushed,
            out.bytes.len(),
            "finishing flushes what was written"
        );
        out.bytes
    }

    #[test]
    fn the_csv_is_what_a_general_csv_writer_writes() {
        let texts = [
            "",
            "plain",
            "a,b",
            "say \"hi\"",
            "\"",
            "\"\"",
            "line\nbreak",
            "cr\r",
            "\r\n",
            " spaced ",
            "#hash",
            "é — ünï",
            "tab\there",
            ",",
            "'single'",
            "\\back",
        ];
        let costs = [
            0.0,
            1e-7,
            0.0000005,
            123.456_789_012,
            1e15,
            f64::NAN,
            f64::INFINITY,
        ];
        let mut rows = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let n = u32::try_from(i).unwrap();
            rows.push(Row {
                scenario: (*t).to_owned(),
                family: texts[(i + 1) % texts.len()].to_owned(),
                profile: texts[(i + 2) % texts.len()].to_owned(),
                outcome: texts[(i + 3) % texts.len()].to_owned(),
                iterations: n,
                model_calls: n * 3,
                tool_calls: u32::MAX - n,
                tool_failures: 1,
                rejected_calls: 2,
                interventions_stage1: 3,
                interventions_stage2: 4,
                interventions_stage3: 5,
                nudges: 6,
                truncations: 7,
                force_text_turns: 8,
                first_intervention_iteration: (i % 2 == 0).then_some(n),
                wasted_iterations: 9,
                skipped_calls: 10,
                provider_errors: 11,
                compactions: 12,
                input_tokens: u64::MAX - u64::from(n),
                output_tokens: u64::from(n) << 33,
                cost_usd: costs[i % costs.len()],
                virtual_ms: u64::from(n) * 1_000_003,
                diverged_at: (i % 3 == 0).then_some(n + 1),
                expectations_passed: i % 2 == 1,
            });
        }
        assert_eq!(by_sink(&[]), by_serde(&[]), "no rows, no header");
        for n in 1..=rows.len() {
            let (sink, serde) = (by_sink(&rows[..n]), by_serde(&rows[..n]));
            assert_eq!(
                String::from_utf8_lossy(&sink),
                String::from_utf8_lossy(&serde),
                "{n} rows"
            );
        }
    }

    #[test]
    fn overlapping_ranges_count_each_iteration_once() {
        assert_eq!(covered(vec![]), 0);
        assert_eq!(covered(vec![(4, 20)]), 16);
        // Failed plan steps inside a repeated-failure span add nothing twice.
        assert_eq!(covered(vec![(3, 8), (9, 14), (15, 20), (4, 20)]), 17);
        assert_eq!(covered(vec![(1, 3), (5, 7)]), 4);
        // An empty or inverted range (recovery before the first repeat) counts nothing.
        assert_eq!(covered(vec![(5, 5), (7, 6)]), 0);
    }
}
