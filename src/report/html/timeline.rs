//! A case's trace as a timeline: one row per iteration on the virtual-time axis, each event a
//! mark (model calls, tool calls — failed and rejected ones marked —, interventions and forced
//! text with the policy that fired, the outcome), each row expandable to its event lines; and
//! several runs of one scenario (its profiles) as lanes on one shared axis.
//!
//! Every mark has a glyph and a text, never a colour alone. Pure: events in, HTML out.

use super::{Html, escape};
use crate::report::duration;
use crate::trace::{Event, TimedEvent, render_event};
use std::fmt::Write as _;

/// What kind of mark an event is: its CSS class, its glyph, and whether it stands out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mark {
    /// A model call answered.
    Model,
    /// A tool call that succeeded.
    ToolOk,
    /// A tool call that failed.
    ToolFailed,
    /// A tool call rejected before dispatch, skipped or discarded.
    Rejected,
    /// A defence intervened.
    Intervention,
    /// Force-text mode, or tools withheld.
    Forced,
    /// A message a defence injected, a notice, a signal, a user turn.
    Message,
    /// A provider error.
    Error,
    /// Approvals, compaction, steps, replans.
    Other,
    /// How the run ended.
    Outcome,
}

impl Mark {
    fn class(self) -> &'static str {
        match self {
            Mark::Model => "k-model",
            Mark::ToolOk => "k-ok",
            Mark::ToolFailed => "k-fail",
            Mark::Rejected => "k-rej",
            Mark::Intervention => "k-int",
            Mark::Forced => "k-force",
            Mark::Message => "k-msg",
            Mark::Error => "k-err",
            Mark::Other => "k-other",
            Mark::Outcome => "k-out",
        }
    }

    fn glyph(self) -> &'static str {
        match self {
            Mark::Model => "\u{25cf}",        // ●
            Mark::ToolOk => "\u{2713}",       // ✓
            Mark::ToolFailed => "\u{2717}",   // ✗
            Mark::Rejected => "\u{2298}",     // ⊘
            Mark::Intervention => "\u{25c6}", // ◆
            Mark::Forced => "F",
            Mark::Message => "\u{2709}", // ✉
            Mark::Error => "!",
            Mark::Other => "\u{00b7}",   // ·
            Mark::Outcome => "\u{25a0}", // ■
        }
    }
}

/// An event as a timeline mark and its label; `None` for events that only structure the run
/// (its start, iteration starts, dispatches whose end is shown).
pub(super) fn mark(event: &Event) -> Option<(Mark, String)> {
    Some(match event {
        Event::RunStart { .. } | Event::Iteration { .. } | Event::ToolCallStart { .. } => {
            return None;
        }
        Event::ModelRequest {
            force_text,
            stripped,
            purpose,
            ..
        } => {
            if *force_text {
                (Mark::Forced, "text-only call (force text)".to_owned())
            } else if *stripped {
                (Mark::Forced, "tools withheld for this call".to_owned())
            } else if !purpose.is_turn() {
                (Mark::Model, format!("{} call", purpose.as_str()))
            } else {
                return None;
            }
        }
        Event::ModelResponse {
            finish,
            text,
            calls,
            anomaly,
            latency_ms,
            ..
        } => {
            let mut s = String::from("model");
            if !calls.is_empty() {
                let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
                let _ = write!(s, " calls {}", names.join(", "));
            } else if text.is_some() {
                s.push_str(" answers in text");
            }
            let _ = write!(
                s,
                " ({}, {} latency)",
                finish.as_str(),
                duration(*latency_ms)
            );
            if let Some(a) = anomaly {
                let _ = write!(s, " \u{26a0} {}", a.as_str());
            }
            (Mark::Model, s)
        }
        Event::ToolCallEnd {
            name, ok, error, ..
        } => {
            if *ok {
                (Mark::ToolOk, format!("{name} ok"))
            } else {
                let why = error.as_deref().map(first_line).unwrap_or_default();
                (Mark::ToolFailed, format!("{name} failed {why}"))
            }
        }
        Event::ToolCallRejected { name, error, .. } => (
            Mark::Rejected,
            format!("{name} rejected: {}", first_line(error)),
        ),
        Event::ToolCallSkipped { name, reason, .. } => {
            (Mark::Rejected, format!("{name} skipped: {reason}"))
        }
        Event::TruncationDiscarded { calls, count } => (
            Mark::Rejected,
            format!("{calls} truncated call(s) discarded (#{count})"),
        ),
        Event::Intervention {
            policy,
            stage,
            action,
            tool,
        } => {
            let mut s = format!("{policy} stage {stage}: {action}");
            if let Some(t) = tool {
                let _ = write!(s, " ({t})");
            }
            (Mark::Intervention, s)
        }
        Event::ForceText { on, cause } => (
            Mark::Forced,
            format!("force text {} by {cause}", if *on { "on" } else { "off" }),
        ),
        Event::MessageInjected { source, role, .. } => (
            Mark::Message,
            format!("{source} injected a {} message", role.as_str()),
        ),
        Event::Notice { source, .. } => (Mark::Message, format!("notice from {source}")),
        Event::Diverged {
            request, reading, ..
        } => (
            Mark::Error,
            format!("diverged from the recording at request {request}: {reading}"),
        ),
        Event::Signal { signal, .. } => (Mark::Message, format!("signal {signal}")),
        Event::UserTurn { turn, .. } => (Mark::Message, format!("user turn {turn}")),
        Event::ProviderError { fault, attempt, .. } => (
            Mark::Error,
            format!("provider {} (attempt {attempt})", fault.as_str()),
        ),
        Event::Compaction {
            reason,
            before,
            after,
            ..
        } => (
            Mark::Other,
            format!("compaction ({reason}) {before}\u{2192}{after} messages"),
        ),
        Event::ApprovalRequested { name, .. } => (Mark::Other, format!("approval asked: {name}")),
        Event::ApprovalDecision { name, decision, .. } => (
            Mark::Other,
            format!(
                "approval {}: {name}",
                match decision {
                    crate::vocabulary::Decision::Approve => "approved",
                    crate::vocabulary::Decision::Reject => "rejected",
                }
            ),
        ),
        Event::TurnEnd { turn, .. } => (Mark::Other, format!("turn {turn} ended")),
        Event::StepStart { step, total, title } => {
            (Mark::Other, format!("step {step}/{total}: {title}"))
        }
        Event::StepEnd {
            step,
            status,
            reason,
            ..
        } => (
            Mark::Other,
            format!("step {step} {} ({reason})", status.as_str()),
        ),
        Event::Replan { n, .. } => (Mark::Other, format!("replan {n}")),
        Event::Outcome {
            outcome,
            iterations,
            ..
        } => (
            Mark::Outcome,
            format!("{} after {iterations} iteration(s)", outcome.as_str()),
        ),
    })
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// A position on an axis from 0 to `end`, as a CSS percentage.
fn pct(t: u64, end: u64) -> String {
    let p = if end == 0 {
        0.0
    } else {
        t as f64 * 100.0 / end as f64
    };
    format!("{p:.2}%")
}

/// Tick times for an axis from 0 to `end`: a round step (1, 2 or 5 × a power of ten seconds,
/// or whole minutes) giving at most six ticks.
fn ticks(end: u64) -> Vec<u64> {
    if end == 0 {
        return vec![0];
    }
    let mut step = 100u64;
    let steps = [1u64, 2, 5];
    'search: for scale in [1u64, 10, 100, 1_000, 10_000, 100_000, 1_000_000] {
        for s in steps {
            step = 100 * scale * s;
            if end / step <= 5 {
                break 'search;
            }
        }
    }
    (0..=end / step).map(|i| i * step).collect()
}

/// The axis row: tick labels at their positions.
fn axis(end: u64) -> String {
    let mut h = String::from("<div class=\"axis\" aria-hidden=\"true\">");
    for t in ticks(end) {
        let _ = write!(
            h,
            "<span style=\"left:{}\">{}</span>",
            pct(t, end),
            duration(t)
        );
    }
    h.push_str("</div>");
    h
}

/// The events of one row of the timeline.
struct Row<'a> {
    /// Iteration (0: before the first).
    n: u32,
    events: &'a [TimedEvent],
}

fn rows(events: &[TimedEvent]) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut n = 0;
    for (i, e) in events.iter().enumerate() {
        if let Event::Iteration { n: next } = e.event {
            if i > start {
                out.push(Row {
                    n,
                    events: &events[start..i],
                });
            }
            start = i;
            n = next;
        }
    }
    if start < events.len() {
        out.push(Row {
            n,
            events: &events[start..],
        });
    }
    out
}

/// The golden lines of some events.
fn lines(events: &[TimedEvent]) -> String {
    let mut s = String::new();
    for e in events {
        let _ = writeln!(
            s,
            "{:>9}.{:03}s  {}",
            e.t_ms / 1000,
            e.t_ms % 1000,
            render_event(&e.event)
        );
    }
    s
}

/// The timeline of one run.
pub(super) fn timeline(events: &[TimedEvent]) -> Html {
    let end = events.last().map_or(0, |e| e.t_ms);
    let rows = rows(events);
    let mut h = String::new();
    let _ = write!(
        h,
        "<div class=\"tl\"><div class=\"tl-tools\"><button type=\"button\" class=\"expand-lines\">Show every event line</button> <span class=\"legend\" aria-hidden=\"true\">"
    );
    for m in [
        Mark::Model,
        Mark::ToolOk,
        Mark::ToolFailed,
        Mark::Rejected,
        Mark::Intervention,
        Mark::Forced,
        Mark::Message,
        Mark::Error,
        Mark::Outcome,
    ] {
        let name = match m {
            Mark::Model => "model",
            Mark::ToolOk => "tool ok",
            Mark::ToolFailed => "tool failed",
            Mark::Rejected => "rejected/skipped",
            Mark::Intervention => "intervention",
            Mark::Forced => "forced text",
            Mark::Message => "message",
            Mark::Error => "provider error",
            _ => "outcome",
        };
        let _ = write!(
            h,
            "<span class=\"{}\"><b>{}</b> {name}</span> ",
            m.class(),
            m.glyph()
        );
    }
    h.push_str("</span></div>");
    let _ = write!(
        h,
        "<div class=\"tl-grid\"><div class=\"tl-label\"></div>{}",
        axis(end)
    );
    for row in &rows {
        let t0 = row.events.first().map_or(0, |e| e.t_ms);
        let t1 = row.events.last().map_or(0, |e| e.t_ms);
        let label = if row.n == 0 {
            "start".to_owned()
        } else {
            format!("iteration {}", row.n)
        };
        let marks: Vec<(u64, Mark, String)> = row
            .events
            .iter()
            .filter_map(|e| mark(&e.event).map(|(m, l)| (e.t_ms, m, l)))
            .collect();
        let stands_out = marks.iter().any(|(_, m, _)| {
            matches!(
                m,
                Mark::Intervention | Mark::Forced | Mark::ToolFailed | Mark::Rejected
            )
        });
        let _ = write!(
            h,
            "<div class=\"tl-label{}\">{}<small>{} \u{2192} {}</small></div><div class=\"tl-row\">",
            if stands_out { " hot" } else { "" },
            escape(&label),
            duration(t0),
            duration(t1)
        );
        let _ = write!(
            h,
            "<div class=\"lane\" aria-hidden=\"true\"><span class=\"span\" style=\"left:{};width:{}\"></span>",
            pct(t0, end),
            pct(t1 - t0, end)
        );
        for (t, m, _) in &marks {
            let _ = write!(
                h,
                "<i class=\"mk {}\" style=\"left:{}\">{}</i>",
                m.class(),
                pct(*t, end),
                m.glyph()
            );
        }
        h.push_str("</div><ul class=\"marks\">");
        for (t, m, l) in &marks {
            let _ = write!(
                h,
                "<li class=\"{}\"><b aria-hidden=\"true\">{}</b> {} <small>{}</small></li>",
                m.class(),
                m.glyph(),
                escape(l),
                duration(*t)
            );
        }
        let _ = write!(
            h,
            "</ul><details class=\"lines\"><summary>{} event line{}</summary><pre>{}</pre></details></div>",
            row.events.len(),
            if row.events.len() == 1 { "" } else { "s" },
            escape(&lines(row.events))
        );
    }
    h.push_str("</div></div>");
    Html(h)
}

/// One lane of a side-by-side comparison.
pub(super) struct Lane<'a> {
    /// The case's number in the report (the page marks the open case's lane by it).
    pub n: usize,
    /// Case id.
    pub id: &'a str,
    /// Profile.
    pub profile: &'a str,
    /// Its trace.
    pub events: &'a [TimedEvent],
}

/// Several runs of one scenario on one virtual-time axis: each a bar to its end, iteration
/// starts as ticks, interventions and forced text marked, the outcome at the end.
pub(super) fn lanes(lanes: &[Lane<'_>]) -> Html {
    let end = lanes
        .iter()
        .filter_map(|l| l.events.last())
        .map(|e| e.t_ms)
        .max()
        .unwrap_or(0);
    let mut h =
        String::from("<div class=\"cmp\"><div class=\"tl-grid\"><div class=\"tl-label\"></div>");
    h.push_str(&axis(end));
    for lane in lanes {
        let last = lane.events.last().map_or(0, |e| e.t_ms);
        let iterations = lane
            .events
            .iter()
            .filter(|e| matches!(e.event, Event::Iteration { .. }))
            .count();
        let outcome = lane
            .events
            .iter()
            .rev()
            .find_map(|e| match &e.event {
                Event::Outcome { outcome, .. } => Some(outcome.as_str()),
                _ => None,
            })
            .unwrap_or("incomplete");
        let interventions = lane
            .events
            .iter()
            .filter(|e| matches!(e.event, Event::Intervention { .. }))
            .count();
        let _ = write!(
            h,
            "<div class=\"tl-label\" data-n=\"{}\">{}<small>{}</small></div><div class=\"tl-row\"><div class=\"lane\" aria-hidden=\"true\"><span class=\"span run\" style=\"left:0%;width:{}\"></span>",
            lane.n,
            escape(lane.profile),
            escape(lane.id),
            pct(last, end)
        );
        // Iteration ticks stay legible up to a few hundred; past that the bar says enough.
        if iterations <= 300 {
            for e in lane.events {
                if let Event::Iteration { .. } = e.event {
                    let _ = write!(
                        h,
                        "<i class=\"tick\" style=\"left:{}\"></i>",
                        pct(e.t_ms, end)
                    );
                }
            }
        }
        for e in lane.events {
            if let Some((m @ (Mark::Intervention | Mark::Forced), l)) = mark(&e.event) {
                let _ = write!(
                    h,
                    "<i class=\"mk {}\" style=\"left:{}\" title=\"{}\">{}</i>",
                    m.class(),
                    pct(e.t_ms, end),
                    escape(&l),
                    m.glyph()
                );
            }
        }
        let _ = write!(
            h,
            "</div><p class=\"lane-sum\"><b aria-hidden=\"true\">{}</b> {} at {}, {} iteration{}, {} intervention{}</p></div>",
            Mark::Outcome.glyph(),
            escape(outcome),
            duration(last),
            iterations,
            if iterations == 1 { "" } else { "s" },
            interventions,
            if interventions == 1 { "" } else { "s" }
        );
    }
    h.push_str("</div></div>");
    Html(h)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(t_ms: u64, event: Event) -> TimedEvent {
        TimedEvent { t_ms, event }
    }

    #[test]
    fn ticks_are_round_and_few() {
        assert_eq!(ticks(0), [0]);
        assert_eq!(ticks(40_000), [0, 10_000, 20_000, 30_000, 40_000]);
        assert_eq!(ticks(255_000).len(), 6);
        assert!(ticks(255_000).windows(2).all(|w| w[1] - w[0] == 50_000));
        assert!(ticks(86_400_000).len() <= 6);
    }

    #[test]
    fn rows_split_at_iterations_and_keep_every_event() {
        let events = vec![
            ev(0, Event::Iteration { n: 1 }),
            ev(
                10,
                Event::Intervention {
                    policy: "p".into(),
                    stage: 2,
                    action: "strip_tools".into(),
                    tool: None,
                },
            ),
            ev(20, Event::Iteration { n: 2 }),
        ];
        let r = rows(&events);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].n, r[0].events.len()), (1, 2));
        let h = timeline(&events).0;
        assert!(h.contains("iteration 2"), "{h}");
        assert!(h.contains("p stage 2: strip_tools"), "{h}");
        assert!(
            h.contains("tl-label hot"),
            "an intervention row stands out: {h}"
        );
    }
}
