//! `harness promote`: a cassette becomes an editable scenario in the human-written format. The
//! scenario the cassette was recorded from keeps its tools, prompts, profile and configuration;
//! its model script is replaced by the recorded turns, one per exchange (loop turns as `turns`,
//! summary and replan calls as one-shot rules), so a recorded loop becomes a regression to tune.

use super::cassette::{Cassette, Outcome};
use crate::llm::{Arguments, Purpose};
use crate::scenario::{
    Bound, CallDef, Conditions, Expect, FaultDef, RuleDef, Scenario, TurnDef, UsageDef,
};

/// The scenario a cassette promotes to, from the scenario it was recorded from.
pub fn promote(cassette: &Cassette, mut scenario: Scenario, source: &str) -> Scenario {
    scenario.description = format!(
        "Promoted from {source} ({} {}, {} exchanges). {}",
        cassette.provider.as_str(),
        cassette.model,
        cassette.exchanges.len(),
        scenario.description
    )
    .trim_end()
    .to_owned();
    scenario.profile = cassette.profile.clone();
    script_turns(cassette, &mut scenario);
    scenario.expect = Expect::default();
    scenario.compare.clear();
    scenario
}

/// Script `scenario`'s model with the cassette's exchanges: the recorded model name, one turn
/// per loop exchange, summary and replan calls as one-shot rules.
pub fn script_turns(cassette: &Cassette, scenario: &mut Scenario) {
    let mut turns = Vec::new();
    let mut rules = Vec::new();
    for ex in &cassette.exchanges {
        let latency = cassette.replay.latency(ex.elapsed_ms);
        let mut turn = TurnDef {
            latency_ms: Some(latency),
            repeat: 1,
            ..TurnDef::default()
        };
        match ex.outcome(cassette.api(), latency) {
            Outcome::Response(r) => {
                turn.usage = Some(UsageDef {
                    input: r.usage.input,
                    output: r.usage.output,
                });
                if r.stream.is_empty() {
                    turn.text = r.text;
                    turn.finish = Some(r.finish);
                    turn.tool_calls = r
                        .tool_calls
                        .into_iter()
                        .map(|c| {
                            let (args, raw_args) = match c.arguments {
                                Arguments::Parsed(v) => (Some(v), None),
                                Arguments::Raw(s) => (None, Some(s)),
                            };
                            CallDef {
                                id: Some(c.id),
                                name: c.name,
                                args,
                                raw_args,
                                generate: None,
                                seed: None,
                            }
                        })
                        .collect();
                } else {
                    turn.stream = r.stream;
                }
            }
            Outcome::Fault(f) => {
                turn.fault = Some(FaultDef {
                    kind: f.kind,
                    message: Some(f.message),
                    retry_after_ms: f.retry_after_ms,
                });
            }
            // A cassette never holds one (recording stops there); keep the slot visible.
            Outcome::Fatal(m) => turn.text = Some(format!("(unanswerable exchange: {m})")),
        }
        if ex.purpose == Purpose::Turn {
            turns.push(turn);
        } else {
            turn.repeat = 1;
            rules.push(RuleDef {
                when: Conditions {
                    purpose: Some(ex.purpose),
                    call: Some(Bound {
                        min: Some(ex.call.into()),
                        max: Some(ex.call.into()),
                    }),
                    ..Conditions::default()
                },
                reply: turn,
                times: Some(1),
            });
        }
    }
    scenario.model.name = cassette.model.clone();
    scenario.model.latency_ms = 0;
    scenario.model.turns = turns;
    scenario.model.rules = rules;
}
