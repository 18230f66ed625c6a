//! The spending guard, checked before every model call: IronClaw's `check_cost_allowed` (a
//! violation fails the turn) and the book's three lines of defence (a warning to the operator
//! once spending passes `warn_fraction` of the cap — repeated before every call while it holds
//! — and a stop at the cap). A token cap (IronClaw's job budget) ends the run the same way.

use super::{Action, CostConfig, LoopView, Policy, fill};
use crate::vocabulary::OutcomeKind;

pub(super) struct CostGuard {
    config: CostConfig,
}

impl CostGuard {
    pub(super) fn new(config: CostConfig) -> Self {
        Self { config }
    }
}

fn dollars(v: f64) -> String {
    format!("${v:.6}")
}

impl Policy for CostGuard {
    fn id(&self) -> &'static str {
        "cost-guard"
    }

    fn before_call(&mut self, view: &LoopView) -> Vec<Action> {
        let c = &self.config;
        // The unit travels with the figures, so one template serves both caps.
        let say = |template: &str, spent: String, cap: String| {
            fill(
                template,
                &[("spent", spent.as_str()), ("cap", cap.as_str())],
            )
        };
        let stop = |detail: String| {
            vec![
                Action::Intervene {
                    stage: 3,
                    action: "stop",
                    tool: None,
                },
                Action::End {
                    outcome: OutcomeKind::Failure,
                    detail,
                },
            ]
        };
        if c.max_tokens > 0 && view.tokens > c.max_tokens {
            let tokens = |n: u64| format!("{n} tokens");
            return stop(say(
                &c.stop_message,
                tokens(view.tokens),
                tokens(c.max_tokens),
            ));
        }
        if c.max_usd <= 0.0 {
            return Vec::new();
        }
        // The figures are written only for a call that says them: most calls are under both.
        let figures = || (dollars(view.cost_usd), dollars(c.max_usd));
        let mut actions = Vec::new();
        if c.warn_fraction > 0.0 && view.cost_usd > c.max_usd * c.warn_fraction {
            let (spent, cap) = figures();
            actions.push(Action::Notice {
                text: say(&c.warn_message, spent, cap),
            });
        }
        if view.cost_usd >= c.max_usd {
            let (spent, cap) = figures();
            actions.extend(stop(say(&c.stop_message, spent, cap)));
        }
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Config;

    fn view(cost_usd: f64, tokens: u64) -> LoopView {
        LoopView {
            cost_usd,
            tokens,
            ..LoopView::at(1)
        }
    }

    fn ends(actions: &[Action]) -> bool {
        actions.iter().any(|a| matches!(a, Action::End { .. }))
    }

    #[test]
    fn book_warns_past_80_percent_and_stops_at_the_cap() {
        let mut g = CostGuard::new(Config::agentloop().cost);
        assert!(
            g.before_call(&view(4.0, 0)).is_empty(),
            "exactly 80% does not warn"
        );
        let a = g.before_call(&view(4.01, 0));
        assert!(matches!(a.as_slice(), [Action::Notice { .. }]), "{a:?}");
        let a = g.before_call(&view(5.0, 0));
        assert!(ends(&a), "{a:?}");
        assert!(
            matches!(a[0], Action::Notice { .. }),
            "the warning still comes first"
        );
    }

    #[test]
    fn no_cap_means_no_guard_and_token_cap_ends_the_run() {
        let mut c = Config::ironclaw().cost;
        let mut g = CostGuard::new(c.clone());
        assert!(g.before_call(&view(1e9, u64::MAX)).is_empty());
        c.max_tokens = 100;
        let mut g = CostGuard::new(c);
        assert!(g.before_call(&view(0.0, 100)).is_empty());
        let a = g.before_call(&view(0.0, 200));
        assert!(ends(&a));
        let Some(Action::End { detail, .. }) = a.last() else {
            panic!("{a:?}")
        };
        assert!(
            detail.contains("200 tokens") && !detail.contains('$'),
            "{detail}"
        );
    }
}
