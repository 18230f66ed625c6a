//! `gemini-chanting`: Gemini CLI's content "chanting" check (runtimes.md Detectors §2.2,
//! `CONTENT_CHANTING_LOOP`): the model repeating the same text over and over.
//!
//! **Why.** Text-only doom loops ("I'll write the schema… Actually, I'll write the schema") are
//! invisible to every tool-call detector (§6.2).
//!
//! **Semantics.** Agent text is appended to a buffer of at most 5000 characters; a
//! `chunk`-character window (50) slides one character at a time. A chunk that has occurred
//! `threshold` times (10) fires when the average distance between its last `threshold`
//! occurrences is at most 5·`chunk` characters and the text between consecutive occurrences
//! takes at most ⌊`threshold`/2⌋ distinct values (the period check against shared-prefix lists,
//! #18975). Tracking resets on a tool call, a user turn, and any markdown line that is a code
//! fence, table row, list item, heading, blockquote or divider; code blocks are never analysed.
//! The transcripts hold whole responses, so the "stream" is each response in turn. Strike 1 is
//! hidden feedback (verdict warn); it fires at the index of the next call.
//!
//! **Lifecycle.** Per prompt (`reset=message`): Gemini resets all loop state when a new user
//! prompt arrives.
//!
//! **Example.** "I'll do it now. " repeated 40 times in one response fires.
//!
//! **Known false positives.** Repetitive prose outside code blocks (quoted log lines).

use super::{Detector, Fire, Item, Kind, Param, Params, Reset, Verdict, View};
use std::collections::HashMap;

/// Base of the rolling hash.
const BASE: u64 = 1_000_003;

/// Buffer cap (`MAX_HISTORY_LENGTH`).
const MAX_HISTORY: usize = 5000;

/// The kind.
pub const KIND: Kind = Kind {
    id: "gemini-chanting",
    summary: "a text chunk repeating closely in the model's text (Gemini CLI)",
    params: &[
        Param {
            name: "threshold",
            default: "10",
            sweep: &["3", "5", "8", "10", "15"],
            help: "occurrences of a chunk that fire it",
        },
        Param {
            name: "chunk",
            default: "50",
            sweep: &[],
            help: "chunk length in characters",
        },
    ],
    build,
    reset: Reset::message,
};

fn build(p: &Params) -> Result<Box<dyn Detector>, String> {
    let threshold = p.count("threshold")? as usize;
    let chunk = p.count("chunk")? as usize;
    if threshold < 2 || chunk == 0 {
        return Err("`threshold` must be at least 2 and `chunk` at least 1".to_owned());
    }
    Ok(Box::new(GeminiChanting { threshold, chunk }))
}

/// The detector.
#[derive(Debug, Clone)]
pub struct GeminiChanting {
    threshold: usize,
    chunk: usize,
}

/// A markdown line that resets tracking.
fn structural(line: &str) -> bool {
    let t = line.trim_start();
    t.starts_with("```")
        || t.starts_with('|')
        || t.starts_with('#')
        || t.starts_with('>')
        || t.starts_with("- ")
        || t.starts_with("* ")
        || t.starts_with("+ ")
        || t.starts_with("---")
        || t.starts_with("***")
        || t.split_once(". ")
            .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
}

/// The keys are rolling hashes already: hash them as themselves.
#[derive(Default)]
struct Identity(u64);

impl std::hash::Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = (self.0 << 8) | u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

#[derive(Default)]
struct State {
    buf: Vec<char>,
    /// Chunk hash → (occurrences, index of the latest in `occ`).
    seen: HashMap<u64, (usize, usize), std::hash::BuildHasherDefault<Identity>>,
    /// Every occurrence: its start offset in `buf` and the index of the previous occurrence of
    /// the same chunk (`usize::MAX` for the first). One growing list, no allocation per chunk.
    occ: Vec<(usize, usize)>,
    in_code: bool,
    /// Rolling hash of the last `chunk` characters, and `BASE^chunk`.
    roll: u64,
    pow: u64,
}

impl State {
    fn new(chunk: usize) -> Self {
        let pow = (0..chunk).fold(1u64, |p, _| p.wrapping_mul(BASE));
        Self {
            pow,
            ..Self::default()
        }
    }

    fn reset(&mut self) {
        self.buf.clear();
        self.seen.clear();
        self.occ.clear();
        self.roll = 0;
    }

    /// Append a character, keeping the rolling hash of the last `chunk` characters.
    fn push(&mut self, ch: char, chunk: usize) {
        self.roll = self.roll.wrapping_mul(BASE).wrapping_add(u64::from(ch));
        self.buf.push(ch);
        if let Some(&out) = self
            .buf
            .len()
            .checked_sub(chunk + 1)
            .and_then(|i| self.buf.get(i))
        {
            self.roll = self
                .roll
                .wrapping_sub(u64::from(out).wrapping_mul(self.pow));
        }
    }
}

impl GeminiChanting {
    /// Feed text; whether it chants.
    fn feed(&self, st: &mut State, text: &str) -> bool {
        for line in text.split_inclusive('\n') {
            if line.trim_start().starts_with("```") {
                st.in_code = !st.in_code;
                st.reset();
                continue;
            }
            if st.in_code || structural(line) {
                st.reset();
                continue;
            }
            for ch in line.chars() {
                if st.buf.len() >= MAX_HISTORY {
                    // Drop the oldest half and re-index: upstream keeps the newest 5000 characters;
                    // halving re-indexes less often, and a chant (far shorter than 2500
                    // characters) is found either way.
                    let keep = st.buf.split_off(MAX_HISTORY / 2);
                    st.reset();
                    for c in keep {
                        st.push(c, self.chunk);
                        if self.index_last(st) {
                            return true;
                        }
                    }
                }
                st.push(ch, self.chunk);
                if self.index_last(st) {
                    return true;
                }
            }
        }
        false
    }

    /// Index the chunk ending at the buffer's end; whether it now chants.
    fn index_last(&self, st: &mut State) -> bool {
        let n = st.buf.len();
        if n < self.chunk {
            return false;
        }
        let start = n - self.chunk;
        let at = st.occ.len();
        let count = match st.seen.get_mut(&st.roll) {
            None => {
                st.seen.insert(st.roll, (1, at));
                st.occ.push((start, usize::MAX));
                return false;
            }
            Some((count, last)) => {
                let first = st.occ[*last].0;
                // A hash collision with another chunk is not an occurrence.
                if st.buf[first..first + self.chunk] != st.buf[start..] {
                    return false;
                }
                st.occ.push((start, *last));
                *count += 1;
                *last = at;
                *count
            }
        };
        if count < self.threshold {
            return false;
        }
        // The last `threshold` occurrences, oldest first.
        let mut recent = Vec::with_capacity(self.threshold);
        let mut i = at;
        while recent.len() < self.threshold && i != usize::MAX {
            recent.push(st.occ[i].0);
            i = st.occ[i].1;
        }
        recent.reverse();
        let total = recent[recent.len() - 1] - recent[0];
        let avg = total / (self.threshold - 1);
        if avg > 5 * self.chunk {
            return false;
        }
        let mut periods: Vec<String> = recent
            .windows(2)
            .map(|w| st.buf[w[0]..w[1]].iter().collect())
            .collect();
        periods.sort();
        periods.dedup();
        periods.len() <= self.threshold / 2
    }
}

impl Detector for GeminiChanting {
    fn reads_args(&self) -> bool {
        false
    }

    fn first_fire(&self, view: &View) -> Option<Fire> {
        let mut st = State::new(self.chunk);
        let mut calls = 0;
        for item in &view.items {
            match item {
                Item::Call(i) => {
                    let c = &view.calls[*i];
                    // The text that came with the call is streamed before it.
                    if batch_first(view, *i)
                        && !c.thought.is_empty()
                        && self.feed(&mut st, &c.thought)
                    {
                        return Some(Fire::new(*i, Verdict::Warn));
                    }
                    st.reset();
                    st.in_code = false;
                    calls = i + 1;
                }
                Item::User(_) => {
                    st.reset();
                    st.in_code = false;
                }
                Item::Agent(text) => {
                    if self.feed(&mut st, text) {
                        return Some(Fire::new(calls, Verdict::Warn));
                    }
                }
            }
        }
        None
    }
}

/// Whether call `i` is the first of its response (so its `thought` is new text).
fn batch_first(view: &View, i: usize) -> bool {
    i == 0 || view.calls[i - 1].batch != view.calls[i].batch
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detector::testing::V;

    fn d() -> GeminiChanting {
        GeminiChanting {
            threshold: 10,
            chunk: 50,
        }
    }

    #[test]
    fn chanting_fires() {
        let v = V::default()
            .say(&"I'll do it now, I promise you. ".repeat(40))
            .0;
        assert_eq!(d().first_fire(&v), Some(Fire::new(0, Verdict::Warn)));
    }

    #[test]
    fn ordinary_prose_does_not_fire() {
        let text: String = (0..200)
            .map(|i| format!("Sentence {i} says something new. "))
            .collect();
        assert_eq!(d().first_fire(&V::default().say(&text).0), None);
    }

    #[test]
    fn lists_tables_and_code_blocks_do_not_fire() {
        let list: String = (0..60)
            .map(|i| format!("- projects/my-long-project/locations/us/resources/item-{i}\n"))
            .collect();
        assert_eq!(d().first_fire(&V::default().say(&list).0), None);
        let code = format!(
            "```\n{}```\n",
            "println!(\"the same line of code again and again\");\n".repeat(40)
        );
        assert_eq!(d().first_fire(&V::default().say(&code).0), None);
    }
}
