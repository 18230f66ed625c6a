//! What a proxy session keeps once it has ended: its exchanges split into conversations, each
//! conversation's cassette, and where each goes — its own cassette, the cassette it continues,
//! beside it as partial, or nowhere — with the reason for each conversation not written as
//! asked. Pure: the command writes and removes the files this decides.
//!
//! Never lose a good recording: a conversation cut short (its last answer never ended) is never
//! written where a replay would play it as a fault, and one that would replace a recording must
//! have ended whole, with a 2xx answer, in a session no signal stopped; otherwise it goes beside
//! as `<name>.partial`, which no replay reads. The cassettes of an earlier recording (record
//! mode `all`) are removed only when every conversation of the new one was good.

use super::{Slot, Upstreams, cassette_path};
use crate::diagnostic::Diagnostic;
use crate::json::sorted;
use crate::record::cassette::{
    self, AgentRecord, Cassette, ReplayOptions, TransportError, TransportKind,
};
use crate::record::live::usage_of;
use crate::record::scrub::Scrubber;
use crate::results::ExitStatus;
use crate::serve::replay::{reply_of, served_ids};
use crate::serve::{
    Api, ConversationView, LastAnswer, RequestHints, continues, first_user, read_text_protocol,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A proxy session that has ended, as the keeper reads it.
#[derive(Debug)]
pub struct Recording<'a> {
    /// Its model requests, in arrival order.
    pub slots: &'a [Slot],
    /// The cassettes already at `--out` (the session replayed them when `replaying`).
    pub old: &'a [PathBuf],
    /// The session replayed `old` (a record mode that replays, and there were some).
    pub replaying: bool,
    /// A stop signal ended the agent: what it cut short replaces no recording.
    pub interrupted: bool,
    /// How many exchanges each replayed cassette holds.
    pub recorded_lens: &'a [usize],
    /// `--out`: the folder (or the one cassette) recorded into.
    pub out: &'a Path,
    /// The agent's command, as cassettes name it (scrubbed).
    pub command: &'a [String],
    /// Where the session forwarded to.
    pub upstreams: &'a Upstreams,
    /// The session's scrubber.
    pub scrubber: &'a Scrubber,
    /// The replay options the cassettes carry.
    pub options: &'a ReplayOptions,
}

/// A cassette to write.
#[derive(Debug)]
pub struct Write {
    /// Where.
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// The requests it holds.
    pub requests: usize,
    /// The API its agent spoke.
    pub api: Option<Api>,
    /// The model its first request named (empty when none).
    pub model: String,
}

/// What the session keeps.
#[derive(Debug, Default)]
pub struct Kept {
    /// The cassettes to write, in conversation order (partials among them).
    pub writes: Vec<Write>,
    /// Cassettes of an earlier recording to remove (record mode `all`, every new
    /// conversation good), before the new ones are written.
    pub removes: Vec<PathBuf>,
    /// Why a conversation was not written as its cassette (or not where it belongs), each a
    /// failure, in order.
    pub problems: Vec<Diagnostic>,
    /// Cassettes too large for a replay to read, not written (the estimate that bounds a
    /// recording fell short), each a failure.
    pub too_large: Vec<Diagnostic>,
    /// Conversations replayed whole from their cassettes (nothing to write).
    pub replayed: usize,
    /// Recorded conversations the agent never started again (a replay).
    pub unused: Vec<PathBuf>,
}

/// Where a conversation that may not replace or become its cassette `path` is written: beside
/// it, `<name>.partial`, a name neither a replay nor `harness run` reads.
pub fn partial_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_owned();
    name.push(".partial");
    path.with_file_name(name)
}

/// The conversation number a cassette's name gives (`conversation-3…`, `NAME-3…`; `NAME…`
/// is the first).
fn conversation_number(path: &Path) -> u32 {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_suffix(crate::record::CASSETTE_SUFFIX))
        .and_then(|stem| stem.rsplit_once('-'))
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(1)
}

/// The exchange of `slot` when harness made it up because the provider could not be reached
/// (connect error, timeout): no recording.
fn unreached(slot: &Slot) -> Option<&TransportError> {
    slot.exchange
        .error
        .as_ref()
        .filter(|e| matches!(e.kind, TransportKind::Connect | TransportKind::Timeout))
        .filter(|_| slot.replayed.is_none())
}

/// A conversation's failure at `path`.
fn failed(message: String, path: &Path, hint: &str) -> Diagnostic {
    Diagnostic::new(message)
        .in_file(path)
        .hint(hint)
        .status(ExitStatus::Failed)
}

/// Decide what the session `r`, split into `groups` ([`conversations`]), keeps. An error when
/// no live request reached the provider (a bad `--upstream`, no network): nothing is kept.
pub fn keep(r: &Recording<'_>, groups: &[Vec<usize>]) -> Result<Kept, Diagnostic> {
    let slots = r.slots;
    // Answers the proxy made up because the provider could not be reached are no recording:
    // when no live request got through, the session says so; otherwise only the
    // conversations holding such an answer are left out, below.
    let live: Vec<&Slot> = slots.iter().filter(|s| s.replayed.is_none()).collect();
    if let Some(e) = live
        .iter()
        .all(|s| unreached(s).is_some())
        .then(|| live.iter().find_map(|s| unreached(s)))
        .flatten()
    {
        return Err(Diagnostic::new(format!(
            "the provider was not reached, so nothing was recorded ({})",
            r.scrubber.scrub(&e.message)
        ))
        .hint("check --upstream (the providers' own APIs by default) and the network; the agent got a 502 for each request the provider did not answer"));
    }
    let mut kept = Kept::default();
    let mut cassettes: Vec<(PathBuf, Cassette)> = Vec::new();
    // A conversation replayed whole keeps its cassette as it is; one that went live past the
    // end of its recording (`new_episodes`) adds to its cassette; one that went live from a
    // divergence inside its recording, or a new one, takes the next free name: the recorded
    // exchanges always stay, and the new ones are added.
    let mut taken: Vec<PathBuf> = if r.replaying {
        r.old.to_vec()
    } else {
        Vec::new()
    };
    let mut number = 0;
    let mut partials = 0;
    for members in groups {
        let live = members.iter().any(|&m| slots[m].replayed.is_none());
        // The recording it played last, when it played it to its end.
        let exhausted = members
            .iter()
            .filter_map(|&m| slots[m].replayed)
            .next_back()
            .filter(|(c, k)| r.recorded_lens.get(*c) == Some(&(k + 1)))
            .map(|(c, _)| c);
        let (path, n) = match (live, exhausted) {
            (false, _) => {
                kept.replayed += 1;
                continue;
            }
            (true, Some(c)) => (r.old[c].clone(), conversation_number(&r.old[c])),
            (true, None) => loop {
                number += 1;
                let p = cassette_path(r.out, number);
                if !taken.contains(&p) {
                    taken.push(p.clone());
                    break (p, u32::try_from(number).unwrap_or(u32::MAX));
                }
            },
        };
        if let Some(why) = not_recorded(slots, members, r.scrubber) {
            kept.problems.push(failed(why.0, &path, why.1));
            continue;
        }
        let cassette = cassette_of(
            slots,
            members,
            n,
            r.command,
            r.upstreams,
            r.scrubber,
            r.options,
        );
        let last = members.last().map(|&m| &slots[m]);
        let cut = last.is_none_or(|s| !s.done);
        let good = last.is_some_and(|s| {
            s.done
                && s.exchange.error.is_none()
                && s.exchange.status.is_some_and(|c| (200..300).contains(&c))
        });
        let replaces = r.old.contains(&path);
        if cut || (replaces && (r.interrupted || !good)) {
            let why = if cut {
                "its last answer never ended (the session stopped during it)".to_owned()
            } else if r.interrupted {
                "a stop signal ended the session during it".to_owned()
            } else {
                format!(
                    "its last request was answered {}",
                    last.and_then(|s| s.exchange.status)
                        .map_or_else(|| "with no status".to_owned(), |c| format!("HTTP {c}"))
                )
            };
            let partial = partial_path(&path);
            kept.problems.push(failed(
                format!(
                    "this conversation was not written as its cassette: {why}; it is at {} (a replay never reads it){}",
                    partial.display(),
                    if replaces { ", and the recording it would have replaced is kept" } else { "" }
                ),
                &path,
                "record again when the provider answers and the agent runs to its end",
            ));
            partials += 1;
            cassettes.push((partial, cassette));
            continue;
        }
        cassettes.push((path, cassette));
    }
    // The cassettes of an earlier recording (`all`) go only once the new ones are ready, and
    // only when every conversation of the new one was good: a session against a provider that
    // refused it, or one a signal stopped, removes nothing.
    if !r.replaying && partials == 0 {
        kept.removes = r
            .old
            .iter()
            .filter(|p| !cassettes.iter().any(|(w, _)| w == *p))
            .cloned()
            .collect();
    }
    for (path, cassette) in cassettes {
        let text = cassette::render(&cassette);
        if text.len() as u64 > crate::limits::MAX_CASSETTE_BYTES {
            // The budget's estimate fell short: still no cassette a replay would refuse.
            kept.too_large.push(failed(
                format!(
                    "this conversation's cassette would be {} bytes, over the {} a replay reads; not written",
                    text.len(),
                    crate::limits::MAX_CASSETTE_BYTES
                ),
                &path,
                "record a shorter session (docs/robustness.md \"Limits\")",
            ));
            continue;
        }
        kept.writes.push(Write {
            path,
            text,
            requests: cassette.exchanges.len(),
            api: cassette.agent.as_ref().map(|a| a.api),
            model: cassette.model,
        });
    }
    if r.replaying {
        // The recorded conversations the agent never started again: a changed agent that
        // makes fewer conversations replays "clean" otherwise.
        kept.unused = r
            .old
            .iter()
            .enumerate()
            .filter(|(c, _)| {
                !slots
                    .iter()
                    .any(|s| s.replayed.is_some_and(|(o, _)| o == *c))
            })
            .map(|(_, p)| p.clone())
            .collect();
    }
    Ok(kept)
}

/// Why a conversation's exchanges are no recording, and the hint: the provider did not answer
/// one, an answer was too large to keep, or came compressed.
fn not_recorded(
    slots: &[Slot],
    members: &[usize],
    scrubber: &Scrubber,
) -> Option<(String, &'static str)> {
    if let Some((at, e)) = members
        .iter()
        .enumerate()
        .find_map(|(i, &m)| unreached(&slots[m]).map(|e| (i + 1, e)))
    {
        return Some((
            format!(
                "the provider did not answer request {at} of this conversation ({}); not written",
                scrubber.scrub(&e.message)
            ),
            "the agent got a 502 for it; record the conversation again when the provider answers (`--upstream-timeout-ms` for a slow one)",
        ));
    }
    if let Some(at) = members.iter().position(|&m| slots[m].too_large) {
        return Some((
            format!(
                "an answer of this conversation (request {}) went past the {} bytes a cassette keeps; not written",
                at + 1,
                crate::limits::MAX_RESPONSE_BYTES
            ),
            "ask the agent for shorter answers while recording (docs/robustness.md \"Limits\")",
        ));
    }
    let (at, encoding) = members
        .iter()
        .enumerate()
        .find_map(|(i, &m)| slots[m].encoded.as_ref().map(|e| (i + 1, e)))?;
    Some((
        format!(
            "an answer of this conversation (request {at}) came compressed (`content-encoding: {encoding}`) although harness asked for a plain body; not written"
        ),
        "the provider ignores `accept-encoding: identity`; record through one that honours it (the agent got the answer as sent)",
    ))
}

/// The session's model requests split into conversations: indices into `slots`, in arrival
/// order within each, conversations in the order they began (see the module doc).
pub fn conversations(slots: &[Slot]) -> Vec<Vec<usize>> {
    struct Open {
        key: String,
        last_user: String,
        last: LastAnswer,
        members: Vec<usize>,
        said: Vec<String>,
    }
    let mut open: Vec<Open> = Vec::new();
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    for (i, slot) in slots.iter().enumerate() {
        // A body that is no model request begins a conversation of its own.
        let request = slot
            .api
            .parse_request(&slot.exchange.request)
            .ok()
            .map(|mut r| {
                read_text_protocol(&mut r);
                r
            });
        let found = request.as_ref().and_then(|r| {
            let threads: Vec<ConversationView<'_>> = open
                .iter()
                .map(|c| ConversationView {
                    key: &c.key,
                    last_user: &c.last_user,
                    last: c.last,
                    latest: false,
                    messages: 0,
                    said: &c.said,
                })
                .collect();
            continues(&threads, &ids, r, RequestHints::default())
        });
        let user = request.as_ref().map(first_user).unwrap_or_default();
        let at = found.unwrap_or_else(|| {
            open.push(Open {
                key: user.clone(),
                last_user: String::new(),
                last: LastAnswer::Nothing,
                members: Vec::new(),
                said: Vec::new(),
            });
            open.len() - 1
        });
        let c = &mut open[at];
        c.members.push(i);
        c.last_user = user;
        let reply = reply_of(&slot.exchange, slot.api, 0);
        c.last = LastAnswer::of(&reply);
        // A stream cut before its end gave the agent nothing it can echo.
        if slot.exchange.error.is_none() {
            c.said.extend(crate::serve::said_by(&reply));
        }
        for id in served_ids(&slot.exchange) {
            ids.insert(id, at);
        }
    }
    open.into_iter().map(|c| c.members).collect()
}

/// The cassette of one conversation: its exchanges numbered from 1, the model, stream flag and
/// token limit of its first request.
pub fn cassette_of(
    slots: &[Slot],
    members: &[usize],
    conversation: u32,
    command: &[String],
    upstreams: &Upstreams,
    scrubber: &Scrubber,
    replay: &ReplayOptions,
) -> Cassette {
    let first = &slots[members[0]];
    let api = first.api;
    let provider = api.provider();
    let request = &first.exchange.request;
    let field = |k: &str| request.get(k);
    let base = upstreams.base(provider);
    let exchanges = members
        .iter()
        .enumerate()
        .map(|(n, &i)| {
            let mut ex = slots[i].exchange.clone();
            ex.call = n as u32 + 1;
            ex.request = sorted(&ex.request);
            if !slots[i].done {
                ex.error = Some(TransportError {
                    kind: TransportKind::Cut,
                    message: "the session ended before the answer did".to_owned(),
                });
            }
            ex.usage = usage_of(&ex.outcome(api, ex.elapsed_ms));
            ex
        })
        .collect();
    Cassette {
        version: cassette::VERSION,
        scenario: String::new(),
        case: String::new(),
        profile: String::new(),
        agent: Some(AgentRecord {
            api,
            command: command.iter().map(|a| scrubber.scrub(a)).collect(),
            conversation,
        }),
        provider,
        model: field("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        base_url: scrubber.scrub(base),
        stream: field("stream").and_then(Value::as_bool).unwrap_or(false),
        max_tokens: ["max_tokens", "max_completion_tokens", "max_output_tokens"]
            .iter()
            .find_map(|k| field(k).and_then(Value::as_u64))
            .and_then(|n| u32::try_from(n).ok()),
        replay: replay.clone(),
        exchanges,
    }
}
