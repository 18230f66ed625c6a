//! The registry of profiles: every profile this build reproduces, one entry each, in the order
//! `harness profile` lists them. The code that names profiles reads this list — the scenario
//! and project validators, `harness profile`, the suite's default cards — and the tests hold
//! the rest to it (the scenario schema's `profile` doc, `suite --help`'s default, a scenario
//! folder per profile mapped in `docs/profiles.md`). A new profile is its constructor on
//! [`Config`] and its entry here; the tests then say what else it needs.

use super::Config;

/// One profile: a named [`Config`].
#[derive(Debug)]
pub struct Profile {
    /// The name scenarios and `--profile` use.
    pub name: &'static str,
    /// One line on what it reproduces, for `harness profile`.
    pub summary: &'static str,
    /// Its configuration.
    pub config: fn() -> Config,
    /// Whether `harness suite` makes its card when no command and no `--profile` is given.
    pub on_default_card: bool,
}

/// Every profile, in listing order.
pub const PROFILES: &[Profile] = &[
    Profile {
        name: "none",
        summary: "the bare loop: no defence, 25 iterations",
        config: Config::none,
        on_default_card: true,
    },
    Profile {
        name: "ironclaw",
        summary: "IronClaw v1's chat turn (5b307e2c): intent nudge, truncation, duplicate tracker, budget, cost guard, compaction, approvals",
        config: Config::ironclaw,
        on_default_card: true,
    },
    Profile {
        name: "moltis",
        summary: "Moltis at PR #664 (merge 8828cc5e): argument validation, the reflex-loop detector (window 3), auto-continue",
        config: Config::moltis,
        on_default_card: true,
    },
    Profile {
        name: "moltis-head",
        summary: "Moltis' main at 6bd2d118 (2026-08-21): as moltis, with window 2, type lists and scalar coercion, repaired stream arguments, success:false failures",
        config: Config::moltis_head,
        on_default_card: false,
    },
    Profile {
        name: "agentloop",
        summary: "the book's TypeScript AgentLoop: stop reasons, retries, cost cap, compaction, similarity loop detector",
        config: Config::agentloop,
        on_default_card: true,
    },
    Profile {
        name: "plan-step",
        summary: "clude_code's plan/step executor (master f965900): a plan run step by step, actions read from reply text",
        config: Config::plan_step,
        on_default_card: false,
    },
];

/// Where the profile named `name` is in [`PROFILES`], if this build has it.
pub fn index(name: &str) -> Option<usize> {
    PROFILES.iter().position(|p| p.name == name)
}

/// Every profile's name, in listing order.
pub fn names() -> Vec<&'static str> {
    PROFILES.iter().map(|p| p.name).collect()
}

/// "known profiles: none, ironclaw, …", the hint every unknown profile gets.
pub fn known() -> String {
    format!("known profiles: {}", names().join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_each_config_is_built() {
        let mut seen = std::collections::BTreeSet::new();
        for p in PROFILES {
            assert!(seen.insert(p.name), "profile `{}` listed twice", p.name);
            assert!(!p.summary.is_empty(), "{}", p.name);
            // Each constructor builds without panicking, and the lookup finds it.
            let _ = (p.config)();
            assert_eq!(index(p.name).map(|i| PROFILES[i].name), Some(p.name));
        }
        assert!(index("moltys").is_none());
    }
}
