//! Which of an agent's tools each portable tool of a scenario stands for
//! ([`crate::scenario::ToolDef::bind`]): the tools that fit the rule, ranked so that a case
//! drives a tool it can use.
//!
//! Among the tools a rule fits (`any`, `required:TYPE`; `position:N` and `name:GLOB` name
//! theirs), the first of:
//! 1. a tool the user asked for (`--bind GLOB`, repeatable; the project's `[suite] bind`);
//! 2. not a meta tool — a subagent, a task runner, a tool search, a skill, a todo list, a
//!    plan or memory tool ([`is_meta`]): driving one spawns work the case is not about;
//! 3. a tool whose schema lets the case's calls be what they claim: a case that makes an empty
//!    call or leaves a required argument out needs a required parameter, one that sends a
//!    wrong type needs a parameter some other type fails;
//! 4. the agent's own order.

use crate::llm::ToolSpec;
use crate::scenario::{Bind, Generate, ModelScript, generate};
use serde_json::Value;

/// What a case's calls of one portable tool need of the tool they go to: the invalid kinds
/// of arguments they generate (which must come out invalid).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Kinds {
    /// `empty`, `missing_required`, `wrong_type` among the calls' `generate`.
    pub invalid: Vec<Generate>,
}

impl Kinds {
    /// What the calls of `declared` in `script` (its rules' replies and its turns) need.
    pub(crate) fn of(script: &ModelScript, declared: &str) -> Self {
        let mut invalid = Vec::new();
        let calls = script
            .rules
            .iter()
            .map(|r| &r.reply)
            .chain(&script.turns)
            .flat_map(|t| &t.tool_calls)
            .filter(|c| c.name == declared);
        for c in calls {
            if let Some(how @ (Generate::Empty | Generate::MissingRequired | Generate::WrongType)) =
                c.generate
            {
                if !invalid.contains(&how) {
                    invalid.push(how);
                }
            }
        }
        Self { invalid }
    }
}

/// Does the agent's `i`-th offered tool (from 0) fit a portable tool's rule?
pub(crate) fn fits(rule: &Bind, i: usize, tool: &ToolSpec) -> bool {
    match rule {
        Bind::Any => true,
        Bind::Position(n) => i + 1 == *n,
        Bind::Name(glob) => glob_matches(glob, &tool.name),
        Bind::Required(kind) => {
            let schema = &tool.schema;
            schema["required"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .any(|field| {
                    let t = &schema["properties"][field]["type"];
                    t == kind.as_str()
                        || t.as_array()
                            .is_some_and(|ts| ts.iter().any(|x| x == kind.as_str()))
                })
        }
    }
}

/// Does `text` match `glob` (`*`: any run of characters, anything else itself)?
pub(crate) fn glob_matches(glob: &str, text: &str) -> bool {
    let parts: Vec<&str> = glob.split('*').collect();
    let (first, rest) = parts.split_first().unwrap_or((&"", &[]));
    let Some(mut tail) = text.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return tail.is_empty();
    };
    for part in middle {
        match tail.find(part) {
            Some(at) => tail = &tail[at + part.len()..],
            None => return false,
        }
    }
    tail.len() >= last.len() && tail.ends_with(last)
}

/// Tool names (lower case) that stand for work of the agent's own rather than a tool's:
/// subagents and tasks, tool search, skills, plans, todo lists, memory.
const META_NAMES: [&str; 14] = [
    "agent",
    "task",
    "skill",
    "think",
    "invalid",
    "memory",
    "save_memory",
    "update_plan",
    "exitplanmode",
    "exit_plan_mode",
    "enterplanmode",
    "slashcommand",
    "batch",
    "dispatch_agent",
];

/// Parts of tool names (lower case) that mark a meta tool.
const META_PARTS: [&str; 9] = [
    "subagent",
    "sub_agent",
    "todo",
    "tool_search",
    "search_tool",
    "toolsearch",
    "transfer_to_",
    "handoff",
    "delegate",
];

/// Is `name` a meta tool (see the module doc)?
pub fn is_meta(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    META_NAMES.contains(&lower.as_str()) || META_PARTS.iter().any(|p| lower.contains(p))
}

/// The offered tool a portable tool stands for: the best-ranked of those that fit `rule`
/// and are not `taken` (see the module doc), given what the case's calls of it need and the
/// user's `prefer` globs.
pub(crate) fn choose<'t>(
    rule: &Bind,
    offered: &'t [ToolSpec],
    taken: &[&str],
    kinds: Kinds,
    prefer: &[String],
) -> Option<&'t ToolSpec> {
    let candidates = offered
        .iter()
        .enumerate()
        .filter(|(_, t)| !taken.contains(&t.name.as_str()))
        .filter(|(i, t)| fits(rule, *i, t));
    if matches!(rule, Bind::Position(_)) {
        return candidates.map(|(_, t)| t).next();
    }
    candidates
        .min_by_key(|(i, t)| {
            // The user's globs in their order of preference; a tool none names after them.
            let asked = prefer
                .iter()
                .position(|g| glob_matches(g, &t.name))
                .unwrap_or(prefer.len());
            let unusable = kinds
                .invalid
                .iter()
                .any(|how| generate::invalidity(&t.schema, *how).is_some());
            (asked, is_meta(&t.name), unusable, *i)
        })
        .map(|(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Generate;
    use serde_json::json;

    fn tool(name: &str, schema: Value) -> ToolSpec {
        ToolSpec {
            name: name.to_owned(),
            description: String::new(),
            schema: schema.into(),
        }
    }

    #[test]
    fn meta_tools_and_tools_the_case_cannot_use_come_last() {
        let offered = [
            tool(
                "Agent",
                json!({"type": "object", "required": ["prompt"], "properties": {"prompt": {"type": "string"}}}),
            ),
            tool(
                "tool_search",
                json!({"type": "object", "required": ["q"], "properties": {"q": {"type": "string"}}}),
            ),
            tool("list_files", json!({"type": "object", "properties": {}})),
            tool(
                "lookup_order",
                json!({"type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "string"}}}),
            ),
        ];
        let pick = |kinds: Kinds, prefer: &[String]| {
            choose(&Bind::Any, &offered, &[], kinds, prefer).map(|t| t.name.clone())
        };
        // A valid call: the first tool that is not a meta tool, parameters or none.
        assert_eq!(pick(Kinds::default(), &[]).as_deref(), Some("list_files"));
        // An empty call must be invalid: a tool with a required parameter.
        let empty = Kinds {
            invalid: vec![Generate::Empty],
        };
        assert_eq!(pick(empty.clone(), &[]).as_deref(), Some("lookup_order"));
        // The user's choice first, meta or not; of two, the first named, wherever it is
        // offered.
        assert_eq!(
            pick(empty.clone(), &["Agent".to_owned()]).as_deref(),
            Some("Agent")
        );
        assert_eq!(
            pick(empty, &["lookup_*".to_owned(), "Agent".to_owned()]).as_deref(),
            Some("lookup_order")
        );
        // Taken tools are not offered again; a position names its tool whatever it is.
        assert_eq!(
            choose(&Bind::Any, &offered, &["list_files"], Kinds::default(), &[])
                .map(|t| t.name.as_str()),
            Some("lookup_order")
        );
        assert_eq!(
            choose(&Bind::Position(1), &offered, &[], Kinds::default(), &[])
                .map(|t| t.name.as_str()),
            Some("Agent")
        );
        for name in [
            "Task",
            "TodoWrite",
            "todoread",
            "update_plan",
            "transfer_to_billing",
            "save_memory",
            "invalid",
            "spawn_subagent",
        ] {
            assert!(is_meta(name), "{name}");
        }
        for name in [
            "Bash",
            "shell",
            "read_file",
            "search_flights",
            "run_shell_command",
        ] {
            assert!(!is_meta(name), "{name}");
        }
    }
}
