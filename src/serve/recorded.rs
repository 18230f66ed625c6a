//! A session answering from recorded conversations (`harness exec CASSETTE`): the recorded
//! answer while the request matches the recording, then what the divergence policy says
//! ([`super::replay`]).

use super::*;

/// What answers a replayed request.
pub(super) enum ReplayStep {
    /// The next recorded answer.
    Recorded,
    /// The `script:` scenario's model.
    Script(std::sync::Arc<crate::scenario::Scenario>),
    /// Nothing: the request is refused with this message and the conversation ends.
    Refuse(String),
}

impl Session {
    /// Answer from the conversation's recording (see [`replay`]): the recorded answer while
    /// the request matches, then what the divergence policy says; the divergence of this
    /// request, if it is the first that differs.
    pub(super) fn answer_replayed(
        &mut self,
        at: usize,
        api: Api,
        body: &Value,
        request: &WireRequest,
        iteration: u32,
    ) -> Option<(Reply, HttpAnswer, Option<replay::Divergence>)> {
        let provider = api.provider();
        let used = self.used();
        let Some(session_replay) = &self.replay else {
            return Some((
                Reply::Cap,
                refusal(provider, 500, "harness: no recording"),
                None,
            ));
        };
        let conversation = &self.conversations[at];
        let mut pos = match &conversation.replayed {
            Some(p) => p.clone(),
            None => CassettePosition {
                cassette: session_replay.bind(&used, body),
                next: 0,
            },
        };
        let earlier = conversation.divergence().is_some();
        // A branch recorded beside this cassette (`new_episodes`) that goes on as the agent
        // does: the conversation follows it.
        if !earlier && !session_replay.cassettes[pos.cassette].matches(pos.next, body) {
            if let Some(other) = session_replay.branch(pos.cassette, pos.next, body) {
                pos.cassette = other;
            }
        }
        let served = &session_replay.cassettes[pos.cassette];
        let divergence = (!earlier && !served.matches(pos.next, body))
            .then(|| served.diverge(pos.next, body, &session_replay.scrubber));
        let mode = session_replay.record_mode;
        if divergence.is_some() && mode == Some(replay::RecordMode::NewEpisodes) {
            // The recording ends here: the live provider answers the rest.
            self.conversations[at].replayed = Some(pos);
            self.conversations[at].live = true;
            return None;
        }
        let step = match (
            &session_replay.on_divergence,
            &divergence,
            &session_replay.script,
        ) {
            (replay::OnDivergence::Script(_), _, Some(script))
                if earlier || divergence.is_some() =>
            {
                ReplayStep::Script(std::sync::Arc::clone(&script.scenario))
            }
            (_, Some(d), _) if mode.is_some() => ReplayStep::Refuse(format!(
                "harness proxy: request {} differs from the recording {}: {} (first difference at `{}`); --record-mode {} {} (`--record-mode new_episodes` records on from a divergence, `all` records again)",
                d.request,
                served.id,
                d.reading,
                d.at,
                mode.map_or("", replay::RecordMode::name),
                if mode == Some(replay::RecordMode::None) {
                    "never asks the provider"
                } else {
                    "replays a recorded conversation as it was"
                }
            )),
            (policy @ (replay::OnDivergence::Fail | replay::OnDivergence::Stop), Some(d), _) => {
                ReplayStep::Refuse(format!(
                    "harness: request {} differs from the recording {}: {} (first difference at `{}`); the replay ends here (--on-divergence {})",
                    d.request,
                    served.id,
                    d.reading,
                    d.at,
                    if *policy == replay::OnDivergence::Fail {
                        "fail"
                    } else {
                        "stop"
                    }
                ))
            }
            _ => match served.cassette.exchanges.get(pos.next) {
                Some(_) => ReplayStep::Recorded,
                None => ReplayStep::Refuse(format!(
                    "harness: the recording {} has no answer left (it holds {} requests)",
                    served.id,
                    served.cassette.exchanges.len()
                )),
            },
        };
        let recorded = matches!(step, ReplayStep::Recorded);
        self.conversations[at].replayed = Some(CassettePosition {
            next: pos.next + usize::from(recorded),
            ..pos
        });
        let (reply, served) = match step {
            ReplayStep::Refuse(message) => (
                Reply::NoAnswer(message.clone()),
                refusal(provider, 400, &message),
            ),
            ReplayStep::Script(scenario) => {
                self.answer(at, api, body, request, iteration, &scenario)
            }
            ReplayStep::Recorded => {
                let ex = &served.cassette.exchanges[pos.next];
                let latency = served.cassette.replay.latency(ex.elapsed_ms);
                let reply = replay::reply_of(ex, served.cassette.api(), latency);
                for id in replay::served_ids(ex) {
                    self.ids.insert(id, at);
                }
                (reply, replay::replayed(ex, served.cassette.provider))
            }
        };
        Some((reply, served, divergence))
    }
}
