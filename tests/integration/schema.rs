//! The committed JSON Schema of the scenario format (`schema/scenario.schema.json`) is what
//! `harness schema` prints.

use crate::support::{Project, repo};
use serde_json::Value;

const SCHEMA: &str = "schema/scenario.schema.json";

fn printed() -> String {
    let run = Project::new().harness(&["schema"]);
    run.expect_code(0);
    run.stdout.clone()
}

#[test]
fn committed_schema_matches_harness_schema() {
    let committed = std::fs::read_to_string(repo().join(SCHEMA)).unwrap_or_else(|e| {
        panic!("cannot read {SCHEMA} ({e}); generate it with `cargo run -q -- schema > {SCHEMA}`")
    });
    let printed = printed();
    if committed != printed {
        let first = committed
            .lines()
            .zip(printed.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(printed.lines().count()));
        panic!(
            "{SCHEMA} is out of date with the scenario format (first difference at line {}: \
             committed {:?}, `harness schema` prints {:?}); regenerate it with \
             `cargo run -q -- schema > {SCHEMA}` and commit the result",
            first + 1,
            committed.lines().nth(first).unwrap_or("<end of file>"),
            printed.lines().nth(first).unwrap_or("<end of output>"),
        );
    }
}

#[test]
fn schema_describes_the_scenario_format() {
    let schema: Value = serde_json::from_str(&printed()).expect("`harness schema` prints JSON");
    assert_eq!(schema["title"], "Scenario");
    let mut required: Vec<&str> = schema["required"]
        .as_array()
        .expect("a `required` list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["family", "format", "model", "user"]);
    // Unknown keys are errors, so the schema must reject them too.
    assert_eq!(schema["additionalProperties"], false, "{schema:#}");
    let properties = schema["properties"].as_object().expect("properties");
    for key in [
        "format", "family", "profile", "config", "tools", "model", "signals", "expect", "compare",
    ] {
        let description = properties[key]["description"].as_str().unwrap_or_default();
        assert!(!description.is_empty(), "`{key}` has no description");
    }
}

#[test]
fn schema_documents_time_and_order_and_the_names_values_take() {
    let schema: Value = serde_json::from_str(&printed()).expect("`harness schema` prints JSON");
    let defs = &schema["$defs"];
    let expect = &defs["Expect"]["properties"];
    assert!(
        expect["sequence"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("in this order")),
        "{expect:#}"
    );
    for def in ["EventExpect", "EventPattern"] {
        let props = &defs[def]["properties"];
        assert!(
            props["iteration"]["description"]
                .as_str()
                .is_some_and(|d| d.contains("{ min = 3")),
            "{def}: {props:#}"
        );
    }
    // The intervention ids a `where` may name, every profile, and both `without_tools` values.
    let where_ = defs["EventExpect"]["properties"]["where"]["description"]
        .as_str()
        .unwrap_or_default();
    for id in harness::vocabulary::INTERVENTION_SOURCES
        .iter()
        .chain(harness::vocabulary::INTERVENTION_ACTIONS)
    {
        assert!(
            where_.contains(&format!("`{id}`")),
            "`{id}` undocumented: {where_}"
        );
    }
    let profile = schema["properties"]["profile"]["description"]
        .as_str()
        .unwrap_or_default();
    for p in harness::policy::profiles::names() {
        assert!(
            profile.contains(&format!("`{p}`")),
            "profile `{p}` undocumented"
        );
    }
    let without = defs["ModelScript"]["properties"]["without_tools"]["description"]
        .as_str()
        .unwrap_or_default();
    assert!(
        without.contains("`as_scripted`") && without.contains("`skip`"),
        "{without}"
    );
}
