//! The scenario format's share of [`crate::limits`]: iteration caps, scripted latencies and
//! delays, tool output sizes and token counts a scenario may set, each past its limit reported
//! as a located [`Problem`], and references that must stay inside the project (workspace
//! paths). With these bounded, a run's length and virtual time stay finite and
//! no counter overflows; the engine checks the trace length and virtual time as it goes.

use super::locate::{Problem, Seg};
use super::{ModelScript, OutcomeDef, Scenario, TurnDef};
use crate::limits::{MAX_ITERATIONS, MAX_TOOL_OUTPUT_BYTES, MAX_VIRTUAL_MS};
use crate::policy::Config;

/// Most tokens one scripted response may report (`usage`).
pub const MAX_USAGE_TOKENS: u64 = 1_000_000_000;

fn key(k: &str) -> Seg {
    Seg::Key(k.to_owned())
}

fn at(base: &[Seg], more: &[&str]) -> Vec<Seg> {
    let mut p = base.to_vec();
    p.extend(more.iter().map(|k| key(k)));
    p
}

fn over(path: Vec<Seg>, what: &str, value: u64, max: u64, hint: &str) -> Problem {
    Problem {
        path,
        at_key: false,
        message: format!("{what} is {value}, over the limit of {max}"),
        hint: Some(hint.to_owned()),
    }
}

/// Every value of `s` (and of its cases' resolved configurations) past a limit.
pub(super) fn check(s: &Scenario, cases: &[super::validate::Resolved]) -> Vec<Problem> {
    let mut out = Vec::new();
    // Paths are built only for what is reported: a valid scenario builds none.
    for (i, tool) in s.tools.iter().enumerate() {
        let t = || vec![key("tools"), Seg::Index(i)];
        latency(
            &mut out,
            || at(&t(), &["latency_ms"]),
            Some(tool.latency_ms),
        );
        for (j, o) in tool.outcomes.iter().enumerate() {
            outcome(
                &mut out,
                &|| [t(), vec![key("outcomes"), Seg::Index(j)]].concat(),
                o,
            );
        }
        if let Some(d) = &tool.default {
            outcome(&mut out, &|| at(&t(), &["default"]), d);
        }
    }

    let m = &s.model;
    latency(
        &mut out,
        || vec![key("model"), key("latency_ms")],
        Some(m.latency_ms),
    );
    for (name, price) in [
        ("input_per_mtok", m.prices.input_per_mtok),
        ("output_per_mtok", m.prices.output_per_mtok),
    ] {
        if !(0.0..=crate::limits::MAX_PRICE_PER_MTOK).contains(&price) {
            out.push(Problem {
                path: vec![key("model"), key("prices"), key(name)],
                at_key: false,
                message: format!(
                    "the price {price} is not a number from 0 to {} dollars per million tokens",
                    crate::limits::MAX_PRICE_PER_MTOK
                ),
                hint: Some(
                    "write the provider's price in dollars per million tokens, e.g. `input_per_mtok = 1.0`; `nan` and `inf` would make every cost meaningless"
                        .to_owned(),
                ),
            });
        }
    }
    for (place, turn) in replies(m) {
        latency(&mut out, || place.at(&["latency_ms"]), turn.latency_ms);
        reply(&mut out, place, turn);
    }

    // References: workspace files are project paths, never outside the project.
    for name in s.workspace.keys() {
        let escapes = name.starts_with('/')
            || name.starts_with('\\')
            || name.get(1..2) == Some(":")
            || name.split(['/', '\\']).any(|c| c == "..");
        if escapes {
            out.push(Problem {
                path: vec![key("workspace"), key(name)],
                at_key: true,
                message: format!("workspace path `{name}` leads outside the project"),
                hint: Some(
                    "write workspace files as relative paths inside the project, without `..`, e.g. `\"src/auth.ts\" = 120`"
                        .to_owned(),
                ),
            });
        }
    }

    // The configuration's caps and delays, once per distinct value: every case resolves the
    // same `[config]` over its own profile.
    for (_, config, _) in cases {
        for problem in config_bounds(config) {
            if !out
                .iter()
                .any(|p| p.path == problem.path && p.message == problem.message)
            {
                out.push(problem);
            }
        }
    }
    out
}

/// Where a scripted reply is: a turn, or a rule's reply.
#[derive(Debug, Clone, Copy)]
pub(super) enum ReplyAt {
    Turn(usize),
    Rule(usize),
}

impl ReplyAt {
    /// Its key path, built only when a problem is reported there.
    pub(super) fn path(self) -> Vec<Seg> {
        match self {
            Self::Turn(i) => vec![key("model"), key("turns"), Seg::Index(i)],
            Self::Rule(i) => vec![key("model"), key("rules"), Seg::Index(i), key("reply")],
        }
    }

    /// Under `more` keys.
    pub(super) fn at(self, more: &[&str]) -> Vec<Seg> {
        at(&self.path(), more)
    }

    /// A turn (not a rule's reply)?
    pub(super) fn is_turn(self) -> bool {
        matches!(self, Self::Turn(_))
    }
}

/// Every scripted reply with where it is: the turns, then the rules' replies.
pub(super) fn replies(m: &ModelScript) -> impl Iterator<Item = (ReplyAt, &TurnDef)> {
    let turns = m
        .turns
        .iter()
        .enumerate()
        .map(|(i, t)| (ReplyAt::Turn(i), t));
    let rules = m
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| (ReplyAt::Rule(i), &r.reply));
    turns.chain(rules)
}

/// A scripted latency past the limit of virtual time.
fn latency(out: &mut Vec<Problem>, path: impl FnOnce() -> Vec<Seg>, ms: Option<u64>) {
    if let Some(ms) = ms.filter(|ms| *ms > MAX_VIRTUAL_MS) {
        out.push(over(
            path(),
            "the latency",
            ms,
            MAX_VIRTUAL_MS,
            "virtual time is in milliseconds; a run may take at most 24 hours of it",
        ));
    }
}

/// A tool outcome's latency and output past their limits.
fn outcome(out: &mut Vec<Problem>, path: &dyn Fn() -> Vec<Seg>, o: &OutcomeDef) {
    latency(out, || at(&path(), &["latency_ms"]), o.latency_ms);
    tool_output(out, path, o);
}

fn tool_output(out: &mut Vec<Problem>, path: &dyn Fn() -> Vec<Seg>, o: &OutcomeDef) {
    for (name, text) in [("ok", &o.ok), ("error", &o.error)] {
        if let Some(text) = text.as_ref().filter(|t| t.len() > MAX_TOOL_OUTPUT_BYTES) {
            out.push(over(
                at(&path(), &[name]),
                "the tool output's length in bytes",
                text.len() as u64,
                MAX_TOOL_OUTPUT_BYTES as u64,
                "script a shorter output: the engine passes it around whole",
            ));
        }
    }
}

fn reply(out: &mut Vec<Problem>, place: ReplyAt, turn: &TurnDef) {
    if let Some(ms) = turn
        .fault
        .as_ref()
        .and_then(|f| f.retry_after_ms)
        .filter(|ms| *ms > MAX_VIRTUAL_MS)
    {
        out.push(over(
            place.at(&["fault", "retry_after_ms"]),
            "the retry-after hint",
            ms,
            MAX_VIRTUAL_MS,
            "virtual time is in milliseconds; a run may take at most 24 hours of it",
        ));
    }
    if let Some(u) = &turn.usage {
        for (name, n) in [("input", u.input), ("output", u.output)] {
            if n > MAX_USAGE_TOKENS {
                out.push(over(
                    place.at(&["usage", name]),
                    "the token count",
                    n,
                    MAX_USAGE_TOKENS,
                    "no model call uses more than a billion tokens",
                ));
            }
        }
    }
}

/// Caps and delays of a resolved configuration past their limits, located at their
/// `[config]` keys. Retry counts are not capped (a profile may retry without end, each retry
/// spending an iteration); the trace limit bounds them.
fn config_bounds(c: &Config) -> Vec<Problem> {
    let cap_hint = "no scripted run needs more than 1000 iterations; lower it";
    let mut out = Vec::new();
    let caps: [(&[&str], u32); 4] = [
        (&["max_iterations"], c.max_iterations),
        (&["budget", "tool_iterations"], c.budget.tool_iterations),
        (&["plan_step", "max_step_calls"], c.plan_step.max_step_calls),
        (&["plan_step", "max_replans"], c.plan_step.max_replans),
    ];
    for (path, n) in caps {
        if n > MAX_ITERATIONS {
            out.push(over(
                at(&[key("config")], path),
                &format!("`{}`", path.join(".")),
                u64::from(n),
                u64::from(MAX_ITERATIONS),
                cap_hint,
            ));
        }
    }
    for (kind, r) in [
        ("rate_limit", &c.retry.rate_limit),
        ("server_error", &c.retry.server_error),
        ("timeout", &c.retry.timeout),
    ] {
        for (name, ms) in [("delay_ms", r.delay_ms), ("max_delay_ms", r.max_delay_ms)] {
            if ms > MAX_VIRTUAL_MS {
                let path = ["retry", kind, name];
                out.push(over(
                    at(&[key("config")], &path),
                    &format!("`{}`", path.join(".")),
                    ms,
                    MAX_VIRTUAL_MS,
                    "virtual time is in milliseconds; a run may take at most 24 hours of it",
                ));
            }
        }
    }
    out
}
