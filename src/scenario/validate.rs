//! Cross-field rules of the scenario format, each reported as a located [`Problem`]: the format
//! version, profiles, the `[config]` patch, outcomes, tool calls to undeclared tools, rules,
//! signals and expectations. Returns the resolved configuration of every case.

use super::locate::{Problem, Seg, suggest};
use super::{Expect, FORMAT_VERSION, OutcomeDef, Scenario};
use crate::diagnostic::{Cause, Serde};
use crate::policy::Config;
use crate::trace::Event;
use std::sync::Arc;

fn key(k: &str) -> Seg {
    Seg::Key(k.to_owned())
}

struct Checker {
    problems: Vec<Problem>,
}

impl Checker {
    fn report(&mut self, path: Vec<Seg>, message: String, hint: Option<String>) {
        self.problems.push(Problem {
            path,
            at_key: false,
            message,
            hint,
        });
    }

    /// A name that appears in goldens, reports and CI logs: not empty, and without control
    /// characters (a line break would forge a golden line or a GitHub workflow command).
    fn name(&mut self, what: &str, value: &str, path: impl FnOnce() -> Vec<Seg>) {
        if value.trim().is_empty() {
            self.report(
                path(),
                format!("the {what} is empty"),
                Some(format!(
                    "write one: the {what} appears in traces, goldens and reports"
                )),
            );
        } else if let Some(c) = crate::escape::first_unsafe(value) {
            self.report(
                path(),
                format!(
                    "the {what} contains a control character ({})",
                    crate::escape::escape_controls(&c.to_string())
                ),
                Some(
                    "names appear in goldens, reports and CI logs one line each: remove line breaks, escapes and other control characters"
                        .to_owned(),
                ),
            );
        }
    }

    fn profile(&mut self, name: &str, path: Vec<Seg>, at_key: bool) -> Option<Arc<Config>> {
        let config = Config::shared(name);
        if config.is_none() {
            let hint = suggest(
                name,
                &crate::policy::profiles::names(),
                crate::policy::profiles::known,
            );
            self.problems.push(Problem {
                path,
                at_key,
                message: format!("unknown profile `{name}`"),
                hint: Some(hint),
            });
        }
        config
    }

    fn outcome(&mut self, o: &OutcomeDef, path: impl Fn() -> Vec<Seg>, is_default: bool) {
        let kinds = [o.ok.is_some(), o.error.is_some(), o.fail.is_some()]
            .iter()
            .filter(|b| **b)
            .count();
        if kinds != 1 {
            self.report(
                path(),
                format!(
                    "an outcome needs exactly one of `ok`, `error`, `fail`; this one has {kinds}"
                ),
                Some("write `ok = \"output\"`, `error = \"message\"` or `fail = true`".to_owned()),
            );
        }
        if o.fail == Some(false) {
            self.report(
                [path(), vec![key("fail")]].concat(),
                "`fail = false` says nothing".to_owned(),
                Some("use `fail = true` for a failure without error text, or `ok = …`".to_owned()),
            );
        }
        if is_default
            && (o.args.is_some()
                || o.args_contain.is_some()
                || o.on_call.is_some()
                || o.args_invalid.is_some())
        {
            self.report(
                path(),
                "the `default` outcome cannot have match conditions".to_owned(),
                Some(
                    "move it to `outcomes`, or drop `args`, `args_contain`, `args_invalid` and `on_call`"
                        .to_owned(),
                ),
            );
        }
    }

    /// Rules for a scenario some case of which runs the plan/step loop (whose profile is named
    /// at `profile_path`): it needs a plan, and its model speaks in text only.
    fn plan(&mut self, s: &Scenario, profile_path: Vec<Seg>, at_key: bool) {
        let hint = "add a plan, e.g. `[plan]` with `steps = [\"List the directory\", \"Report the result\"]`";
        match &s.plan {
            None => self.problems.push(Problem {
                path: profile_path,
                at_key,
                message: "the plan/step loop needs a `[plan]`, and this scenario has none"
                    .to_owned(),
                hint: Some(hint.to_owned()),
            }),
            Some(plan) if plan.steps.is_empty() => self.report(
                vec![key("plan"), key("steps")],
                "the plan has no steps".to_owned(),
                Some(hint.to_owned()),
            ),
            Some(plan) => {
                for (i, title) in plan.steps.iter().enumerate() {
                    if title.trim().is_empty() {
                        self.report(
                            vec![key("plan"), key("steps"), Seg::Index(i)],
                            "a plan step needs a title".to_owned(),
                            Some("write what the step should achieve".to_owned()),
                        );
                    }
                }
            }
        }
        // The loop reads actions from the reply text; structured calls would go unseen.
        for (at, turn) in super::bounds::replies(&s.model) {
            if !turn.tool_calls.is_empty() {
                self.report(
                    at.at(&["tool_calls"]),
                    "the plan/step loop reads tool calls from the reply text; `tool_calls` would be ignored".to_owned(),
                    Some("write the call as text: `text = '{\"tool\": \"NAME\", \"args\": {}}'`".to_owned()),
                );
            }
        }
    }

    fn expect(&mut self, e: &Expect, path: &[Seg], tools: Option<&[&str]>) {
        let catalogue = Event::catalogue();
        // Where a finding is, made only for a finding: a valid scenario builds no paths.
        let check_kind = |this: &mut Self, kind: &str, at: &dyn Fn() -> Vec<Seg>| {
            let found = catalogue.iter().find(|(k, _)| k == kind);
            if found.is_none() {
                let kinds: Vec<&str> = catalogue.iter().map(|(k, _)| k.as_str()).collect();
                let hint = suggest(kind, &kinds, || {
                    format!("event kinds: {}", kinds.join(", "))
                });
                this.report(at(), format!("unknown event kind `{kind}`"), Some(hint));
            }
            found.map(|(_, fields)| fields.as_slice())
        };
        for (list, name) in [(&e.must, "must"), (&e.must_not, "must_not")] {
            for (i, kind) in list.iter().enumerate() {
                check_kind(self, kind, &|| [path, &[key(name), Seg::Index(i)]].concat());
            }
        }
        let patterns = e
            .events
            .iter()
            .enumerate()
            .map(|(i, ev)| ("events", i, &ev.kind, &ev.where_))
            .chain(
                e.sequence
                    .iter()
                    .enumerate()
                    .map(|(i, p)| ("sequence", i, &p.kind, &p.where_)),
            );
        for (list, i, kind, where_) in patterns {
            let at = || [path, &[key(list), Seg::Index(i)]].concat();
            let Some(fields) = check_kind(self, kind, &|| [at(), vec![key("kind")]].concat())
            else {
                continue;
            };
            for (field, value) in where_ {
                let at = || [at(), vec![key("where"), key(field)]].concat();
                if !fields.contains(field) {
                    let names: Vec<&str> = fields.iter().map(String::as_str).collect();
                    let hint = suggest(field, &names, || {
                        format!("`{kind}` events have: {}", names.join(", "))
                    });
                    self.problems.push(Problem {
                        path: at(),
                        at_key: true,
                        message: format!("`{kind}` events have no field `{field}`"),
                        hint: Some(hint),
                    });
                } else if let Some((message, hint)) =
                    super::values::check(kind, field, value, tools)
                {
                    self.report(at(), message, Some(hint));
                }
            }
        }
    }
}

/// A case as checking resolves it: its profile's name, configuration and expectations.
pub(super) type Resolved = (String, Arc<Config>, Expect);

/// Check a scenario; on success, each case resolved, own first.
pub(super) fn check(s: &Scenario) -> Result<Vec<Resolved>, Vec<Problem>> {
    let mut c = Checker {
        problems: Vec::new(),
    };
    if s.format != FORMAT_VERSION {
        let message = if s.format > FORMAT_VERSION {
            format!(
                "scenario format {} is newer than this harness reads ({FORMAT_VERSION})",
                s.format
            )
        } else {
            format!("unknown scenario format {}", s.format)
        };
        c.report(
            vec![key("format")],
            message,
            Some(format!(
                "write `format = {FORMAT_VERSION}`, or upgrade harness"
            )),
        );
        return Err(c.problems);
    }

    c.name("family", &s.family, || vec![key("family")]);
    for (i, p) in s.serve.failure.iter().enumerate() {
        if let Err(e) = regex_lite::Regex::new(p) {
            c.report(
                vec![key("serve"), key("failure"), Seg::Index(i)],
                format!("the failure pattern is not a regular expression: {e}"),
                Some(format!(
                    "write a regular expression ({}); escape literal brackets and dots with `\\`",
                    crate::vocabulary::REGEX_SYNTAX
                )),
            );
        }
    }
    for (i, tag) in s.tags.iter().enumerate() {
        c.name("tag", tag, || vec![key("tags"), Seg::Index(i)]);
    }
    c.name("model name", &s.model.name, || {
        vec![key("model"), key("name")]
    });
    for (i, t) in s.model.unregistered_tools.iter().enumerate() {
        c.name("tool name", t, || {
            vec![key("model"), key("unregistered_tools"), Seg::Index(i)]
        });
    }

    let mut cases = Vec::new();
    let mut profiles = vec![(
        s.profile.clone(),
        vec![key("profile")],
        false,
        s.expect.clone(),
    )];
    for (name, expect) in &s.compare {
        profiles.push((
            name.clone(),
            vec![key("compare"), key(name)],
            true,
            expect.clone(),
        ));
    }
    // Where each case that runs the plan/step loop names its profile.
    let mut plan_cases: Vec<(Vec<Seg>, bool)> = Vec::new();
    for (name, path, at_key, expect) in profiles {
        if let Some(base) = c.profile(&name, path.clone(), at_key) {
            match Config::patched(&base, &s.config) {
                Ok(config) => {
                    if config.plan_step.enabled {
                        plan_cases.push((path, at_key));
                    }
                    cases.push((name, config, expect));
                }
                Err(e) => {
                    let mut path = vec![key("config")];
                    path.extend(e.path.iter().map(|k| key(k)));
                    let read = Serde::read(&e.message);
                    let is_unknown = read.cause == Cause::UnknownKey;
                    let hint = super::locate::hint_for(&read);
                    c.problems.push(Problem {
                        path,
                        at_key: is_unknown,
                        message: format!("in [config]: {}", e.message),
                        hint: hint.map(|h| {
                            format!("{h} \u{2014} `harness profile {name}` prints every key")
                        }),
                    });
                    break;
                }
            }
        }
    }
    if s.compare.contains_key(&s.profile) {
        c.report(
            vec![key("compare"), key(&s.profile)],
            format!("`compare` names the scenario's own profile `{}`", s.profile),
            Some("put its expectations under [expect] instead".to_owned()),
        );
    }

    let mut names: Vec<&str> = Vec::new();
    for (i, tool) in s.tools.iter().enumerate() {
        let at = || vec![key("tools"), Seg::Index(i)];
        if names.contains(&tool.name.as_str()) {
            c.report(
                [at(), vec![key("name")]].concat(),
                format!("tool `{}` is declared twice", tool.name),
                Some("give each tool a unique name".to_owned()),
            );
        }
        names.push(&tool.name);
        c.name("tool name", &tool.name, || {
            [at(), vec![key("name")]].concat()
        });
        if !tool.schema.is_object() {
            c.report(
                [at(), vec![key("schema")]].concat(),
                "a tool schema must be a table (a JSON Schema object)".to_owned(),
                Some("write `schema = { type = \"object\", properties = { … } }`".to_owned()),
            );
        }
        for (j, o) in tool.outcomes.iter().enumerate() {
            c.outcome(
                o,
                || [at(), vec![key("outcomes"), Seg::Index(j)]].concat(),
                false,
            );
        }
        if let Some(d) = &tool.default {
            c.outcome(d, || [at(), vec![key("default")]].concat(), true);
        }
        if let Some(Err(e)) = tool.bind.as_deref().map(super::Bind::parse) {
            c.report(
                [at(), vec![key("bind")]].concat(),
                e,
                Some("write `bind = \"any\"` (the first tool the agent offers), `\"position:2\"`, `\"required:string\"` or `\"name:search_*\"`".to_owned()),
            );
        }
    }

    let m = &s.model;
    if m.turns.is_empty() && m.rules.is_empty() {
        c.report(
            vec![key("model")],
            "the mock model has neither `turns` nor `rules`".to_owned(),
            Some("add at least one `[[model.turns]]` with `text = …`".to_owned()),
        );
    }
    let mut known: Vec<&str> = names.clone();
    known.extend(m.unregistered_tools.iter().map(String::as_str));
    for (at, turn) in super::bounds::replies(m) {
        if turn.repeat == 0 {
            c.report(
                at.at(&["repeat"]),
                "`repeat = 0` would skip the turn".to_owned(),
                Some("use 1 or more, or delete the turn".to_owned()),
            );
        }
        if !at.is_turn() && turn.repeat != 1 {
            c.report(
                at.at(&["repeat"]),
                "`repeat` belongs to turns; a rule fires as long as its conditions hold".to_owned(),
                Some("bound the rule with `times = N` instead".to_owned()),
            );
        }
        if !turn.stream.is_empty() {
            if turn.text.is_some() || !turn.tool_calls.is_empty() || turn.finish.is_some() {
                c.report(
                    at.at(&["stream"]),
                    "a streamed turn cannot also have `text`, `tool_calls` or `finish`".to_owned(),
                    Some(
                        "put the text, calls and finish reason into the stream's chunks".to_owned(),
                    ),
                );
            }
            match crate::llm::stream::assemble(&turn.stream) {
                Ok(a) => {
                    for (j, call) in a.tool_calls.iter().enumerate() {
                        if !known.contains(&call.name.as_str()) {
                            c.report(
                                at.at(&["stream"]),
                                format!("streamed tool call {j} is to undefined tool `{}`", call.name),
                                Some("declare a [[tools]] entry of that name, or list it in `model.unregistered_tools`".to_owned()),
                            );
                        }
                    }
                }
                Err(e) => c.report(
                    [at.path(), vec![key("stream"), Seg::Index(e.position())]].concat(),
                    format!("malformed stream: {e}"),
                    Some("open each call with `tool_call_start` before its deltas, and end with one `finish`".to_owned()),
                ),
            }
        }
        if turn.fault.is_some() && (turn.text.is_some() || !turn.tool_calls.is_empty()) {
            c.report(
                at.at(&["fault"]),
                "a turn with a `fault` fails the request; its `text` and `tool_calls` would never be seen".to_owned(),
                Some("drop the fault, or move the answer to the next turn".to_owned()),
            );
        }
        for (j, call) in turn.tool_calls.iter().enumerate() {
            let cat = || [at.path(), vec![key("tool_calls"), Seg::Index(j)]].concat();
            if let Some(id) = &call.id {
                c.name("call id", id, || [cat(), vec![key("id")]].concat());
            }
            if call.args.is_some() && call.raw_args.is_some() {
                c.report(
                    cat(),
                    "a tool call has both `args` and `raw_args`".to_owned(),
                    Some("keep one: `args` (parsed) or `raw_args` (the raw string)".to_owned()),
                );
            }
            if call.generate.is_some() && (call.args.is_some() || call.raw_args.is_some()) {
                c.report(
                    [cat(), vec![key("generate")]].concat(),
                    "a tool call has `generate` and also `args` or `raw_args`".to_owned(),
                    Some("keep one: `generate` (arguments from the tool's schema) or the arguments themselves".to_owned()),
                );
            }
            if !known.contains(&call.name.as_str()) {
                let hint = suggest(&call.name, &known, || {
                    format!(
                        "declare a [[tools]] entry named `{}`, or list it in `model.unregistered_tools` to script a call to a tool the runtime lacks",
                        call.name
                    )
                });
                c.report(
                    [cat(), vec![key("name")]].concat(),
                    format!("tool call to undefined tool `{}`", call.name),
                    Some(hint),
                );
            }
        }
    }

    for (i, a) in s.approvals.iter().enumerate() {
        if let Some(t) = &a.tool {
            if !s.tools.iter().any(|d| &d.name == t && d.needs_approval) {
                let asking: Vec<&str> = s
                    .tools
                    .iter()
                    .filter(|d| d.needs_approval)
                    .map(|d| d.name.as_str())
                    .collect();
                let hint = suggest(t, &asking, || {
                    if asking.is_empty() {
                        "no tool has `needs_approval = true`; set it on the tool that asks"
                            .to_owned()
                    } else {
                        format!("tools that need approval: {}", asking.join(", "))
                    }
                });
                c.report(
                    vec![key("approvals"), Seg::Index(i), key("tool")],
                    format!("approval decision for `{t}`, which is not a tool that needs approval"),
                    Some(hint),
                );
            }
        }
    }

    for (i, sig) in s.signals.iter().enumerate() {
        let at = vec![key("signals"), Seg::Index(i)];
        if sig.at_iteration == 0 {
            c.report(
                [at.clone(), vec![key("at_iteration")]].concat(),
                "iterations count from 1".to_owned(),
                Some("use `at_iteration = 1` for the first iteration".to_owned()),
            );
        }
        if sig.before_call && !sig.stop {
            c.report(
                [at.clone(), vec![key("before_call")]].concat(),
                "`before_call` says where a stop comes from, but this signal does not stop"
                    .to_owned(),
                Some("add `stop = true`, or drop `before_call`".to_owned()),
            );
        }
        if sig.stop == sig.inject.is_some() {
            c.report(
                at,
                "a signal needs exactly one of `stop = true` or `inject = \"…\"`".to_owned(),
                Some("write `stop = true` to end the run, or `inject = \"text\"` to add a user message; use two signals for both".to_owned()),
            );
        }
    }

    if let Some((path, at_key)) = plan_cases.first() {
        c.plan(s, path.clone(), *at_key);
    }

    // Tool names an event can carry: the declared tools and the unregistered ones the script
    // calls. The plan/step loop reads calls from reply text, so any name can occur there.
    let tools = plan_cases.is_empty().then_some(known.as_slice());
    c.expect(&s.expect, &[key("expect")], tools);
    for (name, e) in &s.compare {
        c.expect(e, &[key("compare"), key(name)], tools);
    }

    c.problems.extend(super::bounds::check(s, &cases));
    if c.problems.is_empty() {
        Ok(cases)
    } else {
        Err(c.problems)
    }
}
