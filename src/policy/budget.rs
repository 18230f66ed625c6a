//! IronClaw's chat budget (dispatcher): with `tool_iterations = N`, a system-role limit nudge
//! before the call of iteration N−1, force-text from iteration N (sticky, like every force-text
//! escalation), and the loop ceiling at N+1 (see [`super::Config::ceiling`]). With N = 1 the
//! nudge never fires and the first call is already text-only.

use super::{Action, BudgetConfig, LoopView, Policy};
use crate::llm::Role;

pub(super) struct Budget {
    config: BudgetConfig,
}

impl Budget {
    pub(super) fn new(config: BudgetConfig) -> Self {
        Self { config }
    }
}

impl Policy for Budget {
    fn id(&self) -> &'static str {
        "ironclaw-budget"
    }

    fn before_call(&mut self, view: &LoopView) -> Vec<Action> {
        let max = self.config.tool_iterations;
        let mut actions = Vec::new();
        let nudge_at = max.saturating_sub(1);
        if self.config.limit_nudge && nudge_at > 0 && view.iteration == nudge_at {
            actions.push(Action::Intervene {
                stage: 1,
                action: "limit_nudge",
                tool: None,
            });
            actions.push(Action::Inject {
                role: Role::System,
                text: self.config.message.clone(),
            });
        }
        if view.iteration >= max && !view.force_text {
            actions.push(Action::Intervene {
                stage: 2,
                action: "force_text",
                tool: None,
            });
            actions.push(Action::ForceText {
                cause: "iteration_budget",
            });
        }
        actions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::Config;

    fn view(iteration: u32, force_text: bool) -> LoopView {
        LoopView {
            force_text,
            ..LoopView::at(iteration)
        }
    }

    fn budget(n: u32) -> Budget {
        let mut c = Config::ironclaw().budget;
        c.tool_iterations = n;
        Budget::new(c)
    }

    /// Upstream `iteration_bounds_guarantee_termination` (D4): for max in {1, 2, 5, 10, 50}
    /// force-text starts at max, the nudge (max−1) is not after it, and the ceiling max+1 is
    /// beyond it.
    #[test]
    fn iteration_bounds_guarantee_termination() {
        for max in [1u32, 2, 5, 10, 50] {
            let mut b = budget(max);
            let mut c = Config::ironclaw();
            c.budget.tool_iterations = max;
            let ceiling = c.ceiling();
            assert_eq!(ceiling, max + 1);
            let (mut nudged_at, mut forced_at) = (None, None);
            let mut forced = false;
            for it in 1..=ceiling {
                for a in b.before_call(&view(it, forced)) {
                    match a {
                        Action::Inject { role, .. } => {
                            assert_eq!(role, Role::System);
                            nudged_at.get_or_insert(it);
                        }
                        Action::ForceText { .. } => {
                            forced = true;
                            forced_at.get_or_insert(it);
                        }
                        _ => {}
                    }
                }
            }
            assert_eq!(forced_at, Some(max), "max {max}");
            if max == 1 {
                assert_eq!(nudged_at, None, "max 1 never nudges");
            } else {
                assert_eq!(nudged_at, Some(max - 1));
            }
            assert!(nudged_at.unwrap_or(0) <= forced_at.unwrap_or(0));
            assert!(ceiling > max);
        }
    }

    #[test]
    fn force_text_is_announced_once() {
        let mut b = budget(3);
        assert!(b.before_call(&view(3, false)).contains(&Action::ForceText {
            cause: "iteration_budget"
        }));
        assert!(b.before_call(&view(4, true)).is_empty());
    }
}
