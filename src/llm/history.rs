//! [`History`]: the engine's conversation, which knows when it changed other than by growing.

use super::Message;
use std::sync::atomic::{AtomicU64, Ordering};

/// Lineages handed out in this process: each is used by one history for one stretch of
/// growth, so two requests that carry the same one hold the same messages in front.
static LINEAGES: AtomicU64 = AtomicU64::new(1);

fn next_lineage() -> u64 {
    LINEAGES.fetch_add(1, Ordering::Relaxed)
}

/// A conversation that only grows, or is replaced: every change other than a message added at
/// the end starts a new lineage ([`History::lineage`]). A request that carries the lineage
/// lets a model measure only the messages added since its last request of the same lineage.
#[derive(Debug)]
pub struct History {
    messages: Vec<Message>,
    lineage: u64,
}

impl History {
    /// An empty conversation.
    pub fn new() -> Self {
        Self {
            messages: Vec::with_capacity(32),
            lineage: next_lineage(),
        }
    }

    /// Which stretch of growth the conversation is in: the same value for as long as
    /// messages are only added at the end, never the same as any other history's.
    pub fn lineage(&self) -> u64 {
        self.lineage
    }

    /// Add a message at the end (the lineage stays).
    pub fn push(&mut self, message: Message) {
        self.messages.push(message);
    }

    /// Replace the whole conversation (compaction): a new lineage.
    pub fn replace(&mut self, messages: Vec<Message>) {
        self.messages = messages;
        self.lineage = next_lineage();
    }

    /// Remove the messages in `range` (trimming): a new lineage.
    pub fn drain(&mut self, range: std::ops::Range<usize>) -> std::vec::Drain<'_, Message> {
        self.lineage = next_lineage();
        self.messages.drain(range)
    }
}

impl Default for History {
    fn default() -> Self {
        Self::new()
    }
}

impl std::ops::Deref for History {
    type Target = [Message];

    fn deref(&self) -> &[Message] {
        &self.messages
    }
}

/// A sum over a conversation's messages kept from request to request: a conversation that
/// only grew since the last sum of its lineage is measured from where that one ended, so a
/// run's sums cost its length once, not once a call. Debug builds check every sum against
/// the whole measure.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunningSum {
    /// The lineage summed, how many of its messages, and their sum.
    kept: Option<(u64, usize, usize)>,
}

impl RunningSum {
    /// `measure` summed over `messages`, whose lineage is `lineage` (`None`: not known, all
    /// of them measured and nothing kept).
    pub fn sum(
        &mut self,
        lineage: Option<u64>,
        messages: &[Message],
        measure: impl Fn(&Message) -> usize,
    ) -> usize {
        let Some(lineage) = lineage else {
            return messages.iter().map(&measure).sum();
        };
        let (from, sum) = match self.kept {
            Some((l, count, sum)) if l == lineage && count <= messages.len() => (count, sum),
            _ => (0, 0),
        };
        let sum = sum + messages[from..].iter().map(&measure).sum::<usize>();
        self.kept = Some((lineage, messages.len(), sum));
        debug_assert_eq!(
            sum,
            messages.iter().map(&measure).sum::<usize>(),
            "the sum kept for lineage {lineage} is not the conversation's"
        );
        sum
    }

    /// How many messages the last sum with a lineage covered.
    pub fn counted(&self) -> Option<usize> {
        self.kept.map(|(_, count, _)| count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Role;

    #[test]
    fn growing_keeps_the_lineage_and_any_other_change_starts_a_new_one() {
        let mut h = History::new();
        let first = h.lineage();
        assert_ne!(
            History::new().lineage(),
            first,
            "two histories share a lineage"
        );
        h.push(Message::new(Role::User, "a"));
        h.push(Message::new(Role::Assistant, "b"));
        assert_eq!(h.lineage(), first);
        assert_eq!(h.drain(0..1).count(), 1);
        let trimmed = h.lineage();
        assert_ne!(trimmed, first);
        h.replace(vec![Message::new(Role::User, "c")]);
        assert_ne!(h.lineage(), trimmed);
        assert_ne!(h.lineage(), first);
        assert_eq!(h.len(), 1);
    }
}
