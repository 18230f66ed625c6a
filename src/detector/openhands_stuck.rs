//! `openhands-stuck`: OpenHands' `StuckDetector`, V0 (`openhands/controller/stuck.py`) and V1 SDK
//! patterns (runtimes.md Detectors §1.1, §1.2).
//!
//! **Why.** The most-used stuck detector in coding agents; its thresholds moved (4 → 3 → 4) and
//! became configurable after polling false alarms (SDK #762), so they are worth sweeping.
//!
//! **Semantics.** The run becomes a list of actions (each call, with the response text as its
//! `thought`; each text-only response is a message action) and observations (each call's
//! result). Patterns, checked after each event, first match wins:
//! 1. action/observation: the last `ao` actions equal and the last `ao` observations equal
//!    (stop);
//! 2. action/error: the last `ae` actions equal and their observations all errors — V0 stops
//!    at `ae`; V1 nudges at exactly `ae` (warn) and stops above it;
//! 3. monologue: V0, the last `mono` agent messages identical with no observation between; V1,
//!    `mono` agent messages in a row at the tail (content not compared);
//! 4. alternating: over the last `alt` actions and `alt` observations, a0=a2=a4, a1=a3=a5.
//!
//! Action equality includes the thought in both versions (so narration that changes hides a
//! loop). Observation equality: V0 compares a command's *command and exit code*, not its output
//! — the transcripts have no exit codes, so V0 here compares a shell call (one whose arguments
//! carry a string `command`) by the call and its failed flag — and every other observation by
//! its content and failed flag, as upstream compares non-command observations whole; V1
//! compares every result whole. History: V0 headless drops user messages and scans everything
//! (lifecycle `reset=run`); V1 scans the last 20 events after the last user message
//! (`reset=message`, its default; the 20-event window is its own). The context-window pattern needs
//! condensation events, which transcripts do not record, so it is not checked.
//!
//! **Lifecycle.** V1 per user message (`reset=message`, its default: it scans after the last
//! user message); V0 as run headless, one history for the run (`reset=run`, its default).
//!
//! **Example.** `ls` → `a.txt` four times in a row: stop at the fourth (`ao=4`).
//!
//! **Known false positives.** Polling the same shell command with changing output (V0 ignores
//! a command's output); empty "wait" commands (#10750); V1 monologue on three different chatty messages.

use super::{Detector, Fire, Item, Kind, Param, Params, Reset, Verdict, View};

/// V1's scan window.
const V1_WINDOW: usize = 20;

/// The kind.
pub const KIND: Kind = Kind {
    id: "openhands-stuck",
    summary: "OpenHands StuckDetector patterns, V0 or V1",
    params: &[
        Param {
            name: "version",
            default: "1",
            sweep: &["1"],
            help: "0: V0 controller semantics; 1: V1 SDK semantics",
        },
        Param {
            name: "ao",
            default: "4",
            sweep: &["2", "3", "4", "5", "6"],
            help: "repeated action/observation pairs",
        },
        Param {
            name: "ae",
            default: "3",
            sweep: &[],
            help: "repeated action/error pairs",
        },
        Param {
            name: "mono",
            default: "3",
            sweep: &[],
            help: "monologue messages",
        },
        Param {
            name: "alt",
            default: "6",
            sweep: &[],
            help: "actions (and observations) of the A-B pattern",
        },
    ],
    build,
    reset: openhands_reset,
};

/// V1 scans the events after the last user message; V0 as run headless (the corpus's agents
/// run unattended) scans the whole history, user messages dropped.
fn openhands_reset(p: &Params) -> Reset {
    if p.text("version") == "1" {
        Reset::Message
    } else {
        Reset::Run
    }
}

fn build(p: &Params) -> Result<Box<dyn Detector>, String> {
    let v1 = match p.count("version")? {
        0 => false,
        1 => true,
        n => return Err(format!("`version={n}`: 0 or 1")),
    };
    Ok(Box::new(OpenhandsStuck {
        v1,
        ao: p.count("ao")? as usize,
        ae: p.count("ae")? as usize,
        mono: p.count("mono")? as usize,
        alt: p.count("alt")? as usize,
    }))
}

/// The detector.
#[derive(Debug, Clone)]
pub struct OpenhandsStuck {
    v1: bool,
    ao: usize,
    ae: usize,
    mono: usize,
    alt: usize,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    /// Call action (index).
    Act(usize),
    /// Agent message (item index).
    Msg(usize),
    /// Observation of call (index).
    Obs(usize),
}

impl OpenhandsStuck {
    fn action_eq(&self, view: &View, a: Ev, b: Ev) -> bool {
        match (a, b) {
            (Ev::Act(x), Ev::Act(y)) => {
                let (x, y) = (&view.calls[x], &view.calls[y]);
                x.same_call(y) && x.thought == y.thought
            }
            (Ev::Msg(x), Ev::Msg(y)) => msg(view, x) == msg(view, y),
            _ => false,
        }
    }

    fn obs_eq(&self, view: &View, a: usize, b: usize) -> bool {
        let (x, y) = (&view.calls[a], &view.calls[b]);
        if !self.v1 && is_shell(x) && is_shell(y) {
            // V0 compares a command's observation by command and exit code (the failed flag
            // stands for it), not its output.
            x.same_call(y) && x.failed == y.failed
        } else {
            x.failed == y.failed && x.result == y.result
        }
    }

    /// Check the history; the verdict if stuck.
    fn check(&self, view: &View, hist: &[Ev]) -> Option<Verdict> {
        let hist = if self.v1 && hist.len() > V1_WINDOW {
            &hist[hist.len() - V1_WINDOW..]
        } else {
            hist
        };
        if hist.len() < 3 {
            return None;
        }
        let actions: Vec<Ev> = hist
            .iter()
            .rev()
            .filter(|e| !matches!(e, Ev::Obs(_)))
            .copied()
            .collect();
        let obs: Vec<usize> = hist
            .iter()
            .rev()
            .filter_map(|e| match e {
                Ev::Obs(i) => Some(*i),
                _ => None,
            })
            .collect();
        let all_eq_actions = |n: usize| {
            n > 0
                && actions.len() >= n
                && actions[..n]
                    .iter()
                    .all(|a| self.action_eq(view, *a, actions[0]))
        };
        // 1. action/observation
        if all_eq_actions(self.ao)
            && obs.len() >= self.ao
            && obs[..self.ao].iter().all(|o| self.obs_eq(view, *o, obs[0]))
        {
            return Some(Verdict::Stop);
        }
        // 2. action/error
        if all_eq_actions(self.ae)
            && obs.len() >= self.ae
            && obs[..self.ae].iter().all(|o| view.calls[*o].failed)
        {
            if !self.v1 {
                return Some(Verdict::Stop);
            }
            let streak = actions
                .iter()
                .zip(&obs)
                .take_while(|(a, o)| {
                    self.action_eq(view, **a, actions[0]) && view.calls[**o].failed
                })
                .count();
            return Some(if streak > self.ae {
                Verdict::Stop
            } else {
                Verdict::Warn
            });
        }
        // 3. monologue
        if self.mono > 0 {
            if self.v1 {
                let tail = hist
                    .iter()
                    .rev()
                    .take_while(|e| matches!(e, Ev::Msg(_)))
                    .count();
                if tail >= self.mono {
                    return Some(Verdict::Stop);
                }
            } else {
                let msgs: Vec<(usize, Ev)> = hist
                    .iter()
                    .enumerate()
                    .rev()
                    .filter(|(_, e)| matches!(e, Ev::Msg(_)))
                    .take(self.mono)
                    .map(|(i, e)| (i, *e))
                    .collect();
                if msgs.len() == self.mono
                    && msgs
                        .iter()
                        .all(|(_, m)| self.action_eq(view, *m, msgs[0].1))
                {
                    let (first, last) = (msgs[msgs.len() - 1].0, msgs[0].0);
                    if !hist[first..=last].iter().any(|e| matches!(e, Ev::Obs(_))) {
                        return Some(Verdict::Stop);
                    }
                }
            }
        }
        // 4. alternating
        if self.alt >= 4 && actions.len() >= self.alt && obs.len() >= self.alt {
            let a_ok = (0..self.alt - 2).all(|i| self.action_eq(view, actions[i], actions[i + 2]));
            let o_ok = (0..self.alt - 2).all(|i| self.obs_eq(view, obs[i], obs[i + 2]));
            if a_ok && o_ok {
                return Some(Verdict::Stop);
            }
        }
        None
    }
}

/// Is the call a shell command (a string `command` argument, as SWE-agent's actions and
/// OpenHands' command runs carry)? Only those observations V0 compares without their output.
fn is_shell(call: &crate::detector::Call) -> bool {
    call.args
        .get("command")
        .is_some_and(serde_json::Value::is_string)
}

fn msg(view: &View, item: usize) -> &str {
    match &view.items[item] {
        Item::Agent(t) | Item::User(t) => t,
        Item::Call(_) => "",
    }
}

impl Detector for OpenhandsStuck {
    fn first_fire(&self, view: &View) -> Option<Fire> {
        let mut hist: Vec<Ev> = Vec::new();
        let mut calls = 0;
        for (idx, item) in view.items.iter().enumerate() {
            let at = match item {
                // The lifecycle (`reset`) decides whether a user message starts afresh.
                Item::User(_) => continue,
                Item::Agent(_) => {
                    hist.push(Ev::Msg(idx));
                    calls
                }
                Item::Call(i) => {
                    hist.push(Ev::Act(*i));
                    hist.push(Ev::Obs(*i));
                    calls = i + 1;
                    *i
                }
            };
            if let Some(v) = self.check(view, &hist) {
                return Some(Fire::new(at, v));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detector::testing::V;
    use serde_json::json;

    fn d(v1: bool, ao: usize) -> OpenhandsStuck {
        OpenhandsStuck {
            v1,
            ao,
            ae: 3,
            mono: 3,
            alt: 6,
        }
    }

    #[test]
    fn four_identical_pairs_stop_three_do_not() {
        let v = V::default().repeat(4, "ls", &json!({}), false, "a.txt").0;
        assert_eq!(
            d(false, 4).first_fire(&v),
            Some(Fire::new(3, Verdict::Stop))
        );
        let v = V::default().repeat(3, "ls", &json!({}), false, "a.txt").0;
        assert_eq!(d(false, 4).first_fire(&v), None);
    }

    /// A successful tau2 telecom run (gpt-4.1, telecom default) toggles mobile data twice: the
    /// same call, "Data is now OFF" then "Data is now ON". V0 compares a function tool's
    /// observation by its content, so it does not fire; only shell commands lose their output.
    #[test]
    fn v0_compares_a_function_tools_observations_by_content() {
        let v = V::default()
            .call("toggle_data", json!({}), false, "Data is now OFF")
            .call("toggle_data", json!({}), false, "Data is now ON")
            .0;
        assert_eq!(d(false, 2).first_fire(&v), None);
        let v = V::default()
            .call("toggle_data", json!({}), false, "Data is now OFF")
            .call("toggle_data", json!({}), false, "Data is now OFF")
            .0;
        assert_eq!(
            d(false, 2).first_fire(&v),
            Some(Fire::new(1, Verdict::Stop))
        );
    }

    #[test]
    fn polling_with_changing_output_fires_v0_not_v1() {
        let mut b = V::default();
        for pct in [10, 40, 70, 90, 99] {
            b = b.call(
                "bash",
                json!({"command": "make status"}),
                false,
                &format!("{pct}%"),
            );
        }
        assert!(
            d(false, 4).first_fire(&b.0).is_some(),
            "V0 ignores output (known false positive)"
        );
        assert_eq!(d(true, 4).first_fire(&b.0), None);
    }

    #[test]
    fn action_error_v1_nudges_then_stops_v0_stops() {
        let v = V::default()
            .repeat(3, "pay", &json!({}), true, "Error: a")
            .0;
        assert_eq!(d(true, 4).first_fire(&v), Some(Fire::new(2, Verdict::Warn)));
        assert_eq!(
            d(false, 4).first_fire(&v),
            Some(Fire::new(2, Verdict::Stop))
        );
    }

    #[test]
    fn monologue_v0_needs_identical_text_v1_counts() {
        let v = V::default().say("a").say("b").say("c").0;
        assert_eq!(d(false, 4).first_fire(&v), None);
        assert_eq!(d(true, 4).first_fire(&v), Some(Fire::new(0, Verdict::Stop)));
        let v = V::default().say("same").say("same").say("same").0;
        assert!(d(false, 4).first_fire(&v).is_some());
    }

    #[test]
    fn ping_pong_fires_and_a_user_turn_resets_v1() {
        let mut b = V::default();
        for _ in 0..3 {
            b = b
                .call("edit", json!({"x": 1}), true, "E")
                .call("test", json!({}), false, "fail 1");
        }
        assert_eq!(
            d(true, 9).first_fire(&b.0),
            Some(Fire::new(5, Verdict::Stop))
        );
        let v = V::default()
            .repeat(2, "ls", &json!({}), false, "a")
            .user("hm")
            .repeat(2, "ls", &json!({}), false, "a")
            .0;
        let first = |spec: &str| {
            crate::detector::spec(spec).unwrap()[0]
                .detector
                .first_fire(&v)
        };
        assert_eq!(first("openhands-stuck:version=1:ao=4"), None);
        assert!(
            first("openhands-stuck:version=0:ao=4").is_some(),
            "V0 headless ignores user messages"
        );
        assert!(first("openhands-stuck:version=1:ao=4:reset=run").is_some());
        assert_eq!(first("openhands-stuck:version=0:ao=4:reset=message"), None);
    }
}
