//! The report card's reading of one suite case (a scenario with a `[suite]` table): what the
//! loop did with the failure mode, or with the legitimate work — judged the same way for an
//! agent served the scenario (`exec`) and for an engine profile (`run`), from the trace and how
//! the agent's process ended.
//!
//! The verdicts:
//! - failure modes: `recovered` (the run ends with the suite's `answer`), `looped to the cap`
//!   (the iteration cap ended it), `ended without the answer` (the loop took another text as
//!   final: an intent, an empty or cut-off answer), `gave up` (the loop stopped without an
//!   answer: its own turn limit, or a defence that ends the run; after calls it could not read,
//!   also an agent that dropped them and took the rest as final, which the wire does not tell
//!   apart, as the detail says), `crashed` (an error ended
//!   the run, or the agent exited non-zero), `hung` (killed at its timeout: after what, as the
//!   trace shows it — its answer, a provider error it did not retry, calls whose results it
//!   never sent), `could not be
//!   driven` (no model request, no offered tool the scenario could bind, or an agent that
//!   requires a tool call on every request where the case answers in text);
//! - legitimate work: `finished` (it ends with the `answer`), `wrongly stopped` (anything else
//!   but hung / could not be driven: the loop ended the work short — by which defence, when
//!   one intervened).
//!
//! The score: one point per failure mode recovered and per legitimate run finished.

use crate::scenario::{SuiteDef, SuiteKind};
use crate::trace::{Event, TimedEvent};
use crate::vocabulary::OutcomeKind;

/// The JSON the conversation's last answer went out as, when `serve` chose its shape (the
/// request asked for JSON and named none; its notice begins with
/// [`crate::vocabulary::SHAPE_CHOSEN`]) and no request came after that answer.
fn chosen_shape(events: &[TimedEvent]) -> Option<&str> {
    let at = events.iter().rposition(|e| {
        matches!(&e.event, Event::Notice { text, .. } if text.starts_with(crate::vocabulary::SHAPE_CHOSEN))
    })?;
    let requests = events[at..]
        .iter()
        .filter(|e| matches!(e.event, Event::ModelRequest { .. }))
        .count();
    let Event::Notice { text, .. } = &events[at].event else {
        return None;
    };
    (requests == 1).then(|| {
        text[crate::vocabulary::SHAPE_CHOSEN.len()..]
            .trim_start_matches(':')
            .trim_start()
    })
}

/// How the loop's process ended, besides what its trace shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// An engine profile: no process.
    Engine,
    /// The agent's command exited with this code (`None`: killed by a signal of its own).
    Exited(Option<i32>),
    /// The agent's command was killed at its timeout.
    Killed,
}

/// What the loop did with one suite case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A failure mode the loop recovered from, at this iteration.
    Recovered(u32),
    /// Legitimate work the loop let finish, at this iteration.
    Finished(u32),
    /// The iteration cap ended a failure mode, at this iteration.
    LoopedToCap(u32),
    /// The loop ended a failure mode on another text than the answer.
    EndedWithout { at: u32, text: String },
    /// The loop stopped a failure mode without an answer, at this iteration (its own turn
    /// limit, or a defence that ends the run): why.
    GaveUp { at: u32, why: String },
    /// An error ended the run, or the agent exited non-zero.
    Crashed(String),
    /// The agent was killed at its timeout: what it had done last, as its trace shows it
    /// (empty in a card an older harness saved).
    Hung(String),
    /// The loop ended legitimate work short, at this iteration, by this.
    WronglyStopped { at: u32, by: String },
    /// The scenario could not drive the agent.
    NotDriven(String),
    /// What the case is about did not happen (its premise): why.
    NotExercised(String),
}

impl Verdict {
    /// Does it score a point?
    pub fn good(&self) -> bool {
        matches!(self, Self::Recovered(_) | Self::Finished(_))
    }

    /// Its short name (JSON, CSV).
    pub fn name(&self) -> &'static str {
        match self {
            Self::Recovered(_) => "recovered",
            Self::Finished(_) => "finished",
            Self::LoopedToCap(_) => "looped_to_cap",
            Self::EndedWithout { .. } => "ended_without_answer",
            Self::GaveUp { .. } => "gave_up",
            Self::Crashed(_) => "crashed",
            Self::Hung(_) => "hung",
            Self::WronglyStopped { .. } => "wrongly_stopped",
            Self::NotDriven(_) => "not_driven",
            Self::NotExercised(_) => "not_exercised",
        }
    }

    /// The verdict as (name, iteration, detail), the form JSON results keep.
    pub fn parts(&self) -> (&'static str, Option<u32>, Option<String>) {
        let name = self.name();
        match self {
            Self::Recovered(k) | Self::Finished(k) | Self::LoopedToCap(k) => (name, Some(*k), None),
            Self::EndedWithout { at, text } => (name, Some(*at), Some(text.clone())),
            Self::GaveUp { at, why } => (name, Some(*at), Some(why.clone())),
            Self::WronglyStopped { at, by } => (name, Some(*at), Some(by.clone())),
            Self::Crashed(why) | Self::NotDriven(why) | Self::NotExercised(why) => {
                (name, None, Some(why.clone()))
            }
            Self::Hung(why) if why.is_empty() => (name, None, None),
            Self::Hung(why) => (name, None, Some(why.clone())),
        }
    }

    /// The verdict of [`Verdict::parts`]; `None` for parts no verdict has.
    pub fn from_parts(name: &str, at: Option<u32>, detail: Option<String>) -> Option<Self> {
        Some(match (name, at, detail) {
            ("recovered", Some(k), None) => Self::Recovered(k),
            ("finished", Some(k), None) => Self::Finished(k),
            ("looped_to_cap", Some(k), None) => Self::LoopedToCap(k),
            ("ended_without_answer", Some(at), Some(text)) => Self::EndedWithout { at, text },
            ("gave_up", Some(at), Some(why)) => Self::GaveUp { at, why },
            ("wrongly_stopped", Some(at), Some(by)) => Self::WronglyStopped { at, by },
            ("crashed", None, Some(why)) => Self::Crashed(why),
            ("not_driven", None, Some(why)) => Self::NotDriven(why),
            ("not_exercised", None, Some(why)) => Self::NotExercised(why),
            ("hung", None, why) => Self::Hung(why.unwrap_or_default()),
            _ => return None,
        })
    }

    /// In words, for the card.
    pub fn describe(&self) -> String {
        match self {
            Self::Recovered(k) => format!("recovered at iteration {k}"),
            Self::Finished(k) => format!("finished at iteration {k}"),
            Self::LoopedToCap(k) => format!("looped to the cap ({k} iterations)"),
            Self::EndedWithout { at, text } => {
                format!("ended without the answer at iteration {at}: {text}")
            }
            Self::GaveUp { at, why } => format!("gave up at iteration {at}: {why}"),
            Self::Crashed(why) => format!("crashed: {why}"),
            Self::Hung(why) if why.is_empty() => "hung (killed at its timeout)".to_owned(),
            Self::Hung(why) => format!("hung (killed at its timeout) {why}"),
            Self::WronglyStopped { at, by } => {
                format!("wrongly stopped at iteration {at}, by {by}")
            }
            Self::NotDriven(why) => format!("could not be driven: {why}"),
            Self::NotExercised(why) => format!("not exercised: {why}"),
        }
    }

    /// Does it judge the loop at all? A case that could not be driven or was not exercised
    /// says nothing of it: it scores no point and counts in no total.
    pub fn judged(&self) -> bool {
        !matches!(self, Self::NotDriven(_) | Self::NotExercised(_))
    }
}

/// A suite case as the card shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The suite's title of the case.
    pub title: String,
    /// Failure mode or legitimate work.
    pub kind: SuiteKind,
    /// What the loop did.
    pub verdict: Verdict,
    /// The agent's tools the case's portable tools stood for (empty for an engine profile).
    pub tools: Vec<String>,
    /// The case's other conversations, each with what it was (a side request, an earlier
    /// attempt): the card judges one conversation, the outcome.
    pub others: Vec<String>,
    /// A crashed agent's last lines of output, for the terminal card (never written to a
    /// results file: they hold the machine's paths).
    pub last_output: Option<String>,
    /// What the verdict was read from besides the trace, so a saved card can be read again
    /// ([`recheck`]); `None` for a card read from a file written before it was kept.
    pub basis: Option<Basis>,
}

/// What a verdict follows from besides the run's trace: the case's definition and how the
/// loop's process ended. A results file keeps it beside the trace, so `harness scorecard`
/// reads every verdict again rather than taking it as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Basis {
    /// The suite's `answer`.
    pub answer: String,
    /// The suite's `premise`.
    pub premise: crate::scenario::Premise,
    /// The scenario's portable tools.
    pub portable: u32,
    /// How the loop's process ended.
    pub end: End,
}

impl End {
    /// Its short form in a results file: `engine`, `exit N`, `signal`, `killed`.
    pub fn as_text(self) -> String {
        match self {
            Self::Engine => "engine".to_owned(),
            Self::Exited(Some(code)) => format!("exit {code}"),
            Self::Exited(None) => "signal".to_owned(),
            Self::Killed => "killed".to_owned(),
        }
    }

    /// The end of [`End::as_text`]; `None` for a text it never writes.
    pub fn from_text(text: &str) -> Option<Self> {
        Some(match text {
            "engine" => Self::Engine,
            "signal" => Self::Exited(None),
            "killed" => Self::Killed,
            _ => {
                let code = text.strip_prefix("exit ")?;
                // The form `as_text` writes, and no other (`exit +1`, `exit 01` are not it).
                let n: i32 = code.parse().ok()?;
                if n.to_string() != code {
                    return None;
                }
                Self::Exited(Some(n))
            }
        })
    }
}

/// The start of the verdict `exec` gives a case whose every conversation was taken for a side
/// request: not read from the judged trace (the side requests are other conversations), so a
/// saved card with it is not read again. It scores no point and counts in no total.
pub const ALL_SIDE: &str = "every conversation of the agent was taken for a side request";

/// Read a saved card's verdict again from its trace and [`Basis`]: `Err` says how the card
/// and its evidence disagree (or that it holds none to read it from).
pub fn recheck(entry: &Entry, events: Option<&[TimedEvent]>) -> Result<(), String> {
    let Some(basis) = &entry.basis else {
        return Err("it keeps no basis to read its verdict from (written by an older harness: run the suite again)".to_owned());
    };
    let Some(events) = events else {
        return Err("it keeps no trace to read its verdict from".to_owned());
    };
    if let Verdict::NotDriven(why) = &entry.verdict {
        if why.starts_with(ALL_SIDE) {
            return Ok(());
        }
    }
    let suite = SuiteDef {
        kind: entry.kind,
        title: entry.title.clone(),
        answer: basis.answer.clone(),
        premise: basis.premise.clone(),
    };
    let again = classify(&suite, basis.portable, events, basis.end);
    // A card an older harness saved says `hung` without what came before the kill.
    let same = match (&entry.verdict, &again.verdict) {
        (Verdict::Hung(saved), Verdict::Hung(_)) => {
            saved.is_empty() || entry.verdict == again.verdict
        }
        (saved, read) => saved == read,
    };
    if !same {
        return Err(format!(
            "its verdict says `{}`, its trace reads `{}`",
            entry.verdict.describe(),
            again.verdict.describe()
        ));
    }
    if again.tools != entry.tools {
        return Err(format!(
            "its tools say [{}], its trace binds [{}]",
            entry.tools.join(", "),
            again.tools.join(", ")
        ));
    }
    Ok(())
}

/// At most this many characters of a text quoted in a verdict.
const QUOTE: usize = 60;

/// The first [`QUOTE`] characters of `text` on one line (its words joined by single spaces),
/// between guillemets, with `…` when there is more. A multi-line text (a tool's output, an
/// answer) keeps the card's rows whole. Only the words quoted are read and copied, not the
/// whole text (the last of them is read to its end).
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(QUOTE + 8);
    out.push('«');
    let mut taken = 0;
    for (i, word) in text.split_whitespace().enumerate() {
        if i > 0 {
            if taken == QUOTE {
                out.push_str("…»");
                return out;
            }
            out.push(' ');
            taken += 1;
        }
        // The word whole when it fits, else as much of it as does.
        let room = QUOTE - taken;
        match word.char_indices().nth(room) {
            None => {
                out.push_str(word);
                taken += word.chars().count();
            }
            Some((cut, _)) => {
                out.push_str(&word[..cut]);
                out.push_str("…»");
                return out;
            }
        }
    }
    out.push('»');
    out
}

/// Read one run of a suite case whose scenario has `portable` portable tools.
pub fn classify(suite: &SuiteDef, portable: u32, events: &[TimedEvent], end: End) -> Entry {
    let tools = bound_tools(events);
    let entry = |verdict| Entry {
        title: suite.title.clone(),
        kind: suite.kind,
        verdict,
        tools: tools.clone(),
        others: Vec::new(),
        last_output: None,
        basis: Some(Basis {
            answer: suite.answer.clone(),
            premise: suite.premise.clone(),
            portable,
            end,
        }),
    };
    let unbound = events.iter().find_map(|e| match &e.event {
        Event::Notice { text, .. }
            if text.contains("fits none of the tools the agent offers")
                || text.starts_with("the agent offered no tools") =>
        {
            Some(text.clone())
        }
        _ => None,
    });
    if let Some(why) = unbound {
        return entry(Verdict::NotDriven(why));
    }
    let first_request = events.iter().find_map(|e| match &e.event {
        Event::ModelRequest {
            tools, stripped, ..
        } => Some((tools.len(), *stripped)),
        _ => None,
    });
    let Some((offered, stripped)) = first_request else {
        let why = if end == End::Killed {
            "the agent made no model request before it was killed at its timeout"
        } else {
            "the agent made no model request"
        };
        return entry(Verdict::NotDriven(why.to_owned()));
    };
    let needs = suite.premise.tools.unwrap_or(portable);
    if needs > 0 && offered == 0 && !stripped {
        return entry(Verdict::NotDriven(format!(
            "the agent offers no tools, and this case drives {needs} of them"
        )));
    }
    if let Some(why) = premise_broken(suite, events) {
        return entry(Verdict::NotExercised(why));
    }
    // Killed at its timeout, after the case began: what it had done last is the verdict's
    // detail (an answer it never exited after is not a run without one).
    if end == End::Killed {
        return entry(Verdict::Hung(hang(events)));
    }
    let outcome = events.iter().rev().find_map(|e| match &e.event {
        Event::Outcome {
            outcome,
            iterations,
            text,
            detail,
        } => Some((*outcome, *iterations, text.clone(), detail.clone())),
        _ => None,
    });
    let Some((kind, at, text, detail)) = outcome else {
        return entry(Verdict::Crashed(
            "the run ended without an outcome".to_owned(),
        ));
    };
    // An agent that requires a tool call on every request cannot be given the case's text.
    if kind == OutcomeKind::Error
        && detail
            .as_deref()
            .is_some_and(|d| d.starts_with(crate::vocabulary::TEXT_REFUSED_FOR_TOOL_CHOICE))
    {
        return entry(Verdict::NotDriven(format!(
            "the agent requires a tool call on every request (tool_choice `required`), so the case's text answer at iteration {at} cannot be served"
        )));
    }
    let answered =
        kind == OutcomeKind::Response && text.as_deref().is_some_and(|t| t.contains(&suite.answer));
    let exit = match end {
        End::Exited(Some(0)) | End::Engine => None,
        End::Exited(Some(code)) => Some(format!("the agent exited with {code}")),
        End::Exited(None) => Some("the agent was killed by a signal".to_owned()),
        End::Killed => None,
    };
    if let Some(mut why) = exit {
        // Its last answer went out as JSON in a shape harness chose (the agent asked for JSON
        // and named none): a failure right after it may be the agent's reading of that shape.
        if let Some(json) = chosen_shape(events) {
            return entry(Verdict::NotDriven(format!(
                "the agent asked for its answer as JSON and named no shape, so the case's text went out as {}, a shape harness chose; {why} right after it, which may be its reading of that shape failing rather than the failure mode",
                quoted(json)
            )));
        }
        // An agent that answered and then exited non-zero failed whoever ran it; the card
        // says what it answered, so the crash is not read as a run without an answer.
        if let (OutcomeKind::Response, Some(t)) = (kind, text.as_deref()) {
            why = format!("{why} after the model answered {}", quoted(t));
        }
        return entry(Verdict::Crashed(why));
    }
    let failed = || {
        detail
            .clone()
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| format!("the run ended as `{}`", kind.as_str()))
    };
    let verdict = match (suite.kind, kind) {
        (SuiteKind::Failure, _) if answered => Verdict::Recovered(at),
        (SuiteKind::Legitimate, _) if answered => Verdict::Finished(at),
        (SuiteKind::Failure, OutcomeKind::MaxIterations) => Verdict::LoopedToCap(at),
        (SuiteKind::Failure, OutcomeKind::Response) => Verdict::EndedWithout {
            at,
            text: quoted(text.as_deref().unwrap_or_default()),
        },
        (SuiteKind::Failure, OutcomeKind::Stopped) => Verdict::GaveUp { at, why: failed() },
        // A defence that ends the run (`failure`) reads as a crash today, as errors do; see
        // the module doc's `gave up` for where it may belong.
        (
            SuiteKind::Failure,
            OutcomeKind::Failure | OutcomeKind::Error | OutcomeKind::NeedApproval,
        ) => Verdict::Crashed(failed()),
        (SuiteKind::Legitimate, _) => {
            let by = first_intervention(events).unwrap_or_else(|| match kind {
                OutcomeKind::MaxIterations => "its iteration cap".to_owned(),
                OutcomeKind::Stopped => format!("its own stop ({})", failed()),
                OutcomeKind::Response => format!(
                    "an early answer {}",
                    quoted(text.as_deref().unwrap_or_default())
                ),
                OutcomeKind::Failure | OutcomeKind::Error | OutcomeKind::NeedApproval => failed(),
            });
            Verdict::WronglyStopped { at, by }
        }
    };
    entry(verdict)
}

/// What a killed agent's trace shows it had done last, for its `hung` verdict: after its
/// answer (it never exited), after harness ended the conversation (the cap, no answer in the
/// script), after a provider error it did not ask again after, with the results of the
/// model's calls never sent, or waiting for the model's answer.
fn hang(events: &[TimedEvent]) -> String {
    let mut iteration = 0;
    let mut last = None;
    for e in events {
        match &e.event {
            Event::Iteration { n } => iteration = *n,
            Event::ModelRequest { .. }
            | Event::ModelResponse { .. }
            | Event::ProviderError { .. } => {
                last = Some(&e.event);
            }
            Event::Outcome {
                outcome: OutcomeKind::Response,
                text: Some(text),
                ..
            } => return format!("after the model answered {}", quoted(text)),
            Event::Outcome {
                outcome: OutcomeKind::MaxIterations | OutcomeKind::Error,
                detail: Some(detail),
                ..
            } if matches!(last, Some(Event::ModelRequest { .. })) => {
                // harness refused the request (past the cap, or no answer in the script).
                return format!("after harness ended its conversation: {detail}");
            }
            _ => {}
        }
    }
    let bound = bindings(events);
    let named = |name: &str| format!("`{}`", agent_name(&bound, name));
    match last {
        Some(Event::ProviderError {
            fault, retry_in_ms, ..
        }) => {
            let told = retry_in_ms.map_or(String::new(), |ms| format!(" (retry-after {ms} ms)"));
            format!(
                "after `{}` from the provider at iteration {iteration}{told}, without asking again",
                fault.as_str()
            )
        }
        Some(Event::ModelResponse { calls, .. }) if !calls.is_empty() => {
            let mut names: Vec<String> = Vec::new();
            for c in calls {
                let n = named(&c.name);
                if !names.contains(&n) {
                    names.push(n);
                }
            }
            let call = if calls.len() == 1 { "call" } else { "calls" };
            format!(
                "with the model's {call} to {} at iteration {iteration} unanswered (no result sent back)",
                names.join(", ")
            )
        }
        Some(Event::ModelResponse { .. }) => {
            format!("after the model's answer at iteration {iteration}")
        }
        Some(Event::ModelRequest { .. }) => {
            format!("waiting for the model's answer at iteration {iteration}")
        }
        _ => format!("at iteration {iteration}"),
    }
}

/// The run's portable tools and the agent's tools they stood for, as `harness serve` noted
/// them (`the scenario's tool `act` stands for the agent's `lookup_order` …`).
fn bindings(events: &[TimedEvent]) -> Vec<(&str, &str)> {
    events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Notice { text, .. } => crate::vocabulary::bound_tool(text),
            _ => None,
        })
        .collect()
}

/// The agent's name of the scenario's tool `name`, by the run's `bound` pairs (the scenario's
/// name where it stood for none).
fn agent_name<'e>(bound: &[(&'e str, &'e str)], name: &'e str) -> &'e str {
    bound
        .iter()
        .find(|(declared, _)| *declared == name)
        .map_or(name, |(_, offered)| offered)
}

/// The agent's tools the run's portable tools stood for, each once, in order.
fn bound_tools(events: &[TimedEvent]) -> Vec<String> {
    bindings(events)
        .into_iter()
        .fold(Vec::new(), |mut all, (_, offered)| {
            if !all.iter().any(|a| a == offered) {
                all.push(offered.to_owned());
            }
            all
        })
}

/// How a call of the run ended, as the premise reads it.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ran {
    /// It ran and its result reads as a success.
    Ok,
    /// It ran and its result reads as a failure.
    Failed,
}

/// Why the run does not show what the case is about ([`crate::scenario::Premise`]), if it
/// does not: one of the first `fail_first` calls the model made that ran and succeeded, a
/// later call that ran and failed. A call a defence refused, skipped or discarded did not run:
/// it breaks neither (the loop handled it).
fn premise_broken(suite: &SuiteDef, events: &[TimedEvent]) -> Option<String> {
    let premise = &suite.premise;
    if premise.fail_first == 0 && !premise.succeed {
        return None;
    }
    // The agent kept asking the model and never sent back a result of any call: the
    // failures the case is about never reached the model.
    let count = |f: &dyn Fn(&Event) -> bool| events.iter().filter(|e| f(&e.event)).count();
    let requests = count(&|e| matches!(e, Event::ModelRequest { .. }));
    let results = count(&|e| matches!(e, Event::ToolCallEnd { .. }));
    let unsent = count(&|e| {
        matches!(e, Event::ToolCallSkipped { reason, .. }
            if reason == crate::vocabulary::RESULT_NOT_SENT
                || reason == crate::vocabulary::RESULT_NEVER_SENT)
    });
    if requests > 1 && results == 0 && unsent > 0 {
        return Some(format!(
            "the agent asked the model {requests} times and sent back no result of its {unsent} calls (each request left them out), so no failure reached the model"
        ));
    }
    // The calls in the order the model made them, with their arguments.
    let mut order: Vec<(&str, &str, &str)> = Vec::new();
    let mut ended: std::collections::BTreeMap<&str, (Ran, Option<&str>)> = Default::default();
    for e in events {
        match &e.event {
            Event::ModelResponse { calls, .. } => {
                order.extend(
                    calls
                        .iter()
                        .map(|c| (c.id.as_str(), c.name.as_str(), c.args.as_str())),
                );
            }
            Event::ToolCallEnd {
                id,
                ok,
                output,
                error,
                ..
            } => {
                let text = if *ok { output } else { error };
                let ran = if *ok { Ran::Ok } else { Ran::Failed };
                ended.entry(id.as_str()).or_insert((ran, text.as_deref()));
            }
            _ => {}
        }
    }
    // The generated valid calls harness cannot vouch for.
    let doubts: Vec<(&str, &str)> = events
        .iter()
        .filter_map(|e| match &e.event {
            Event::Notice { text, .. } => crate::vocabulary::doubted(text),
            _ => None,
        })
        .collect();
    // The agent's name of a tool, as the agent knows it.
    let bound = bindings(events);
    let named = |name: &str| agent_name(&bound, name).to_owned();
    // Every call the model made, in order, with how it ended if it ran.
    let made = order
        .iter()
        .map(|(id, name, args)| (*id, ended.get(id).copied(), *name, *args));
    for (i, (id, ended, name, args)) in made.enumerate() {
        let Some((how, text)) = ended else { continue };
        let name = named(name);
        let args = quoted(args);
        if i < premise.fail_first as usize {
            if how == Ran::Ok {
                return Some(format!(
                    "the call meant to fail, `{name}` {args}, read as a success (its tool accepts it, or the agent reports failures in a text harness does not read: give a --failure pattern)"
                ));
            }
        } else if premise.succeed && how == Ran::Failed {
            let said = text
                .map(|t| format!(" ({})", quoted(t)))
                .unwrap_or_default();
            // Arguments harness cannot vouch for: the call may not have been valid at all.
            if let Some(why) = doubts.iter().find(|(d, _)| *d == id).map(|(_, w)| *w) {
                return Some(format!(
                    "the call meant to be valid, `{name}` {args}, failed{said}, and harness cannot vouch that its schema allows those arguments ({why})"
                ));
            }
            return Some(format!(
                "the valid call `{name}` {args} failed{said}: the agent's tool rejects arguments its schema allows"
            ));
        }
    }
    None
}

/// The first defence that spoke up in the run: `policy action`.
fn first_intervention(events: &[TimedEvent]) -> Option<String> {
    events.iter().find_map(|e| match &e.event {
        Event::Intervention { policy, action, .. } => Some(format!("{policy} ({action})")),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TimedEvent;

    fn suite(kind: SuiteKind) -> SuiteDef {
        SuiteDef {
            kind,
            title: "t".to_owned(),
            answer: "Here is".to_owned(),
            premise: crate::scenario::Premise::default(),
        }
    }

    fn at(event: Event) -> TimedEvent {
        TimedEvent { t_ms: 0, event }
    }

    #[test]
    fn a_quote_is_the_first_characters_of_the_text_on_one_line() {
        // What a quote is by definition: the words joined, cut to length.
        let whole = |text: &str| {
            let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
            let cut: String = line.chars().take(QUOTE).collect();
            let more = if line.chars().count() > QUOTE {
                "…"
            } else {
                ""
            };
            format!("«{cut}{more}»")
        };
        let mut texts = vec![
            String::new(),
            " \n\t ".to_owned(),
            "Done.".to_owned(),
            "  two\n\nlines\t and\u{3000}an ideographic space  ".to_owned(),
        ];
        for n in [QUOTE - 1, QUOTE, QUOTE + 1, 5 * QUOTE] {
            texts.push("x".repeat(n));
            texts.push("é".repeat(n));
            texts.push(format!("{} ", "y".repeat(n)));
            texts.push(format!("{}\n\nmore", "z".repeat(n.saturating_sub(1))));
            texts.push("ab cd\n".repeat(n / 3));
        }
        for text in &texts {
            assert_eq!(quoted(text), whole(text), "{text:?}");
        }
        assert_eq!(quoted(&"w ".repeat(100)).chars().count(), QUOTE + 3);
    }

    fn run(
        outcome: OutcomeKind,
        iterations: u32,
        text: Option<&str>,
        intervene: bool,
    ) -> Vec<TimedEvent> {
        let mut events = vec![at(Event::ModelRequest {
            purpose: crate::llm::Purpose::default(),
            call: 1,
            messages: 1,
            tools: vec!["act".to_owned()].into(),
            force_text: false,
            stripped: false,
        })];
        if intervene {
            events.push(at(Event::Intervention {
                policy: "moltis-reflex".to_owned(),
                stage: 1,
                action: "nudge".to_owned(),
                tool: None,
            }));
        }
        events.push(at(Event::Outcome {
            outcome,
            iterations,
            text: text.map(str::to_owned),
            detail: None,
        }));
        events
    }

    /// An agent that asks again and again and never sends a result back (a chat session that
    /// dropped its turns) was never shown the failures the case is about.
    #[test]
    fn failures_that_never_reached_the_model_are_not_exercised() {
        let mut s = suite(SuiteKind::Failure);
        s.premise.fail_first = 1;
        let request = |call| {
            at(Event::ModelRequest {
                purpose: crate::llm::Purpose::default(),
                call,
                messages: 1,
                tools: vec!["act".to_owned()].into(),
                force_text: false,
                stripped: false,
            })
        };
        let skipped = |reason: &str| {
            at(Event::ToolCallSkipped {
                id: "call_0".to_owned(),
                name: "act".to_owned(),
                reason: reason.to_owned(),
            })
        };
        let mut events = vec![
            request(1),
            skipped(crate::vocabulary::RESULT_NOT_SENT),
            request(2),
        ];
        events.extend(run(OutcomeKind::Response, 2, Some("Here is"), false));
        assert!(matches!(
            classify(&s, 1, &events, End::Exited(Some(0))).verdict,
            Verdict::NotExercised(why) if why.contains("sent back no result of its 1 calls")
        ));
        // A defence of the engine's that skips a call is no missing result.
        events[1] = skipped("threshold");
        assert_eq!(
            classify(&s, 1, &events, End::Engine).verdict,
            Verdict::Recovered(2)
        );
    }

    /// A killed agent hung after what its trace shows last; a case it never began, or whose
    /// premise broke before the kill, is no verdict on its loop.
    #[test]
    fn a_hang_says_what_came_before_it() {
        let mut s = suite(SuiteKind::Failure);
        let v = |s: &SuiteDef, e: &[TimedEvent]| classify(s, 1, e, End::Killed).verdict;
        let request = || {
            at(Event::ModelRequest {
                purpose: crate::llm::Purpose::default(),
                call: 1,
                messages: 1,
                tools: vec!["act".to_owned()].into(),
                force_text: false,
                stripped: false,
            })
        };
        let bound = at(Event::Notice {
            source: "serve".to_owned(),
            text: "the scenario's tool `act` stands for the agent's `lookup_order` (bind = any)"
                .to_owned(),
        });
        let response = |calls: &[&str]| {
            at(Event::ModelResponse {
                finish: crate::llm::Finish::ToolUse,
                text: None,
                calls: calls
                    .iter()
                    .enumerate()
                    .map(|(i, n)| crate::trace::CallSummary {
                        id: format!("call_{i}"),
                        name: (*n).to_owned(),
                        args: "{}".to_owned(),
                        args_unknown: false,
                    })
                    .collect(),
                input_tokens: 1,
                output_tokens: 1,
                latency_ms: 0,
                anomaly: None,
                chunks: 0,
                tokens_unknown: false,
                calls_unknown: false,
            })
        };
        let mut events = vec![bound, at(Event::Iteration { n: 2 }), request()];
        assert_eq!(
            v(&s, &events),
            Verdict::Hung("waiting for the model's answer at iteration 2".to_owned())
        );
        events.push(at(Event::ProviderError {
            fault: crate::llm::FaultKind::RateLimit,
            message: "429".to_owned(),
            attempt: 1,
            retry_in_ms: Some(2000),
        }));
        assert_eq!(
            v(&s, &events),
            Verdict::Hung(
                "after `rate_limit` from the provider at iteration 2 (retry-after 2000 ms), without asking again"
                    .to_owned()
            )
        );
        events.push(request());
        events.push(response(&["act", "act", "other"]));
        assert_eq!(
            v(&s, &events),
            Verdict::Hung(
                "with the model's calls to `lookup_order`, `other` at iteration 2 unanswered (no result sent back)"
                    .to_owned()
            )
        );
        // harness refused its request past the cap; the agent never exited.
        events.push(request());
        events.push(at(Event::Outcome {
            outcome: OutcomeKind::MaxIterations,
            iterations: 2,
            text: None,
            detail: Some(crate::vocabulary::refused_past_cap(2)),
        }));
        assert!(matches!(
            v(&s, &events),
            Verdict::Hung(why) if why.starts_with("after harness ended its conversation: iteration cap reached (2)")
        ));
        // No request at all: the case never began.
        assert_eq!(
            v(&s, &[]),
            Verdict::NotDriven(
                "the agent made no model request before it was killed at its timeout".to_owned()
            )
        );
        // A call meant to fail that succeeded, then the kill: the case did not happen.
        s.premise.fail_first = 1;
        let ran = vec![
            request(),
            response(&["act"]),
            at(Event::ToolCallEnd {
                id: "call_0".to_owned(),
                name: "act".to_owned(),
                ok: true,
                output: Some("fine".to_owned()),
                error: None,
                latency_ms: 0,
                rule: None,
            }),
            request(),
        ];
        assert!(matches!(v(&s, &ran), Verdict::NotExercised(_)));
        // A card an older harness saved says `hung` alone: read again, it still stands; one
        // that names another cause does not.
        let entry = classify(&s, 1, &events, End::Killed);
        let mut old = entry.clone();
        old.verdict = Verdict::Hung(String::new());
        assert_eq!(recheck(&old, Some(&events)), Ok(()));
        let mut wrong = entry;
        wrong.verdict = Verdict::Hung("after the model answered «x»".to_owned());
        assert!(recheck(&wrong, Some(&events)).is_err());
    }

    #[test]
    fn each_verdict_from_what_the_run_shows() {
        let f = suite(SuiteKind::Failure);
        let l = suite(SuiteKind::Legitimate);
        let v = |s: &SuiteDef, e: &[TimedEvent], end| classify(s, 1, e, end).verdict;
        let answered = run(OutcomeKind::Response, 4, Some("Here is what I found"), true);
        assert_eq!(v(&f, &answered, End::Engine), Verdict::Recovered(4));
        assert_eq!(v(&l, &answered, End::Exited(Some(0))), Verdict::Finished(4));
        // Answering and then exiting non-zero is a crash that says what was answered.
        assert_eq!(
            v(&f, &answered, End::Exited(Some(1))),
            Verdict::Crashed(
                "the agent exited with 1 after the model answered «Here is what I found»"
                    .to_owned()
            )
        );
        // The same after an answer that went out as JSON in a shape harness chose: the exit
        // may be the agent's reading of that shape; after another request, it is not.
        let mut shaped = answered.clone();
        shaped.insert(
            0,
            at(Event::Notice {
                source: "serve".to_owned(),
                text: format!(
                    "{}: {{\"text\":\"Here is what I found\"}}",
                    crate::vocabulary::SHAPE_CHOSEN
                ),
            }),
        );
        assert!(matches!(
            v(&f, &shaped, End::Exited(Some(1))),
            Verdict::NotDriven(why) if why.contains("«{\"text\":\"Here is what I found\"}», a shape harness chose; the agent exited with 1 right after it")
        ));
        let mut asked_again = shaped.clone();
        asked_again.insert(1, answered[0].clone());
        assert!(matches!(
            v(&f, &asked_again, End::Exited(Some(1))),
            Verdict::Crashed(_)
        ));
        let capped_then_exited = run(OutcomeKind::MaxIterations, 25, None, false);
        assert_eq!(
            v(&f, &capped_then_exited, End::Exited(Some(2))),
            Verdict::Crashed("the agent exited with 2".to_owned())
        );
        assert_eq!(
            v(&f, &answered, End::Killed),
            Verdict::Hung("after the model answered «Here is what I found»".to_owned())
        );
        let capped = run(OutcomeKind::MaxIterations, 25, None, false);
        assert_eq!(v(&f, &capped, End::Engine), Verdict::LoopedToCap(25));
        // A text the agent's tool_choice `required` refuses: the case cannot drive it.
        let mut forced = run(OutcomeKind::Error, 1, None, false);
        if let Some(Event::Outcome { detail, .. }) = forced.last_mut().map(|e| &mut e.event) {
            *detail = Some(format!(
                "{}, but the script answers in text here",
                crate::vocabulary::TEXT_REFUSED_FOR_TOOL_CHOICE
            ));
        }
        assert!(matches!(
            v(&f, &forced, End::Exited(Some(0))),
            Verdict::NotDriven(why) if why.contains("tool_choice `required`")
        ));
        // A loop that stopped with its calls unanswered (its own turn limit) gave up.
        let limited = run(OutcomeKind::Stopped, 10, None, false);
        let gave_up = v(&f, &limited, End::Exited(Some(0)));
        assert_eq!(
            gave_up,
            Verdict::GaveUp {
                at: 10,
                why: "the run ended as `stopped`".to_owned()
            }
        );
        let (name, k, detail) = gave_up.parts();
        assert_eq!(Verdict::from_parts(name, k, detail), Some(gave_up));
        assert!(matches!(
            v(&l, &limited, End::Exited(Some(0))),
            Verdict::WronglyStopped { at: 10, by } if by.starts_with("its own stop")
        ));
        let other_error = run(OutcomeKind::Error, 1, None, false);
        assert!(matches!(
            v(&f, &other_error, End::Exited(Some(0))),
            Verdict::Crashed(_)
        ));
        assert_eq!(
            v(&l, &capped, End::Engine),
            Verdict::WronglyStopped {
                at: 25,
                by: "its iteration cap".to_owned()
            }
        );
        let stalled = run(
            OutcomeKind::Response,
            1,
            Some("Let me look that up."),
            false,
        );
        assert_eq!(
            v(&f, &stalled, End::Engine),
            Verdict::EndedWithout {
                at: 1,
                text: "«Let me look that up.»".to_owned()
            }
        );
        let stopped = run(OutcomeKind::Response, 3, Some("I stopped."), true);
        assert_eq!(
            v(&l, &stopped, End::Engine),
            Verdict::WronglyStopped {
                at: 3,
                by: "moltis-reflex (nudge)".to_owned()
            }
        );
        let errored = run(OutcomeKind::Error, 2, None, false);
        assert!(matches!(v(&f, &errored, End::Engine), Verdict::Crashed(_)));
        assert!(matches!(v(&f, &[], End::Engine), Verdict::NotDriven(_)));
        let mut unbound = answered.clone();
        unbound.insert(
            0,
            at(Event::Notice {
                source: "serve".to_owned(),
                text: "the scenario's tool `other` (bind = any) fits none of the tools the agent offers (act): its calls go out under its own name".to_owned(),
            }),
        );
        assert!(matches!(
            v(&f, &unbound, End::Engine),
            Verdict::NotDriven(_)
        ));
        assert!(Verdict::Recovered(1).good() && Verdict::Finished(1).good());
        for verdict in [
            Verdict::Recovered(3),
            Verdict::LoopedToCap(25),
            Verdict::EndedWithout {
                at: 1,
                text: "«x»".into(),
            },
            Verdict::WronglyStopped {
                at: 2,
                by: "y".into(),
            },
            Verdict::Crashed("z".into()),
            Verdict::Hung("after the model answered «x»".into()),
            Verdict::Hung(String::new()),
            Verdict::NotDriven("w".into()),
        ] {
            let (name, at, detail) = verdict.parts();
            assert_eq!(Verdict::from_parts(name, at, detail), Some(verdict));
        }
        assert_eq!(Verdict::from_parts("recovered", None, None), None);
        assert!(!Verdict::Hung(String::new()).good());
    }

    #[test]
    fn an_end_reads_back_only_in_the_form_it_is_written() {
        for end in [
            End::Engine,
            End::Exited(Some(0)),
            End::Exited(Some(-3)),
            End::Exited(None),
            End::Killed,
        ] {
            assert_eq!(End::from_text(&end.as_text()), Some(end));
        }
        for text in [
            "exit", "exit +1", "exit 01", "exit  1", "Exit 1", "", "killed ",
        ] {
            assert_eq!(End::from_text(text), None, "{text:?}");
        }
    }

    #[test]
    fn a_saved_card_is_read_again_from_its_trace() {
        let suite = suite(SuiteKind::Failure);
        let entry = classify(&suite, 1, &[], End::Exited(Some(0)));
        assert!(matches!(entry.verdict, Verdict::NotDriven(_)));
        assert_eq!(recheck(&entry, Some(&[])), Ok(()));
        let mut flipped = entry.clone();
        flipped.verdict = Verdict::Recovered(1);
        assert!(
            recheck(&flipped, Some(&[]))
                .is_err_and(|e| e.contains("its trace reads `could not be driven")),
            "{flipped:?}"
        );
        assert!(recheck(&entry, None).is_err());
        let mut bare = entry.clone();
        bare.basis = None;
        assert!(recheck(&bare, Some(&[])).is_err());
        // The verdict exec gives when every conversation was a side request stands: it is
        // read from the other conversations, and it scores nothing.
        let mut side = entry;
        side.verdict = Verdict::NotDriven(format!("{ALL_SIDE} (a title), so none ran the case"));
        assert_eq!(recheck(&side, Some(&[])), Ok(()));
    }
}
