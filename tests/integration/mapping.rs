//! `docs/profiles.md` maps every upstream test to the scenario or unit test that re-expresses
//! it; this keeps the table in step with the code: every scenario file and every
//! `file::test` it names must exist, and every upstream-test scenario family is listed.

use crate::support::repo;
use std::path::Path;

fn table() -> String {
    std::fs::read_to_string(repo().join("docs/profiles.md")).expect("docs/profiles.md exists")
}

fn scenario_exists(name: &str) -> bool {
    let root = repo().join("scenarios");
    if root.join(name).is_file() || repo().join(name).is_file() {
        return true;
    }
    walkdir::WalkDir::new(&root)
        .into_iter()
        .filter_map(Result::ok)
        .any(|e| e.file_name().to_string_lossy() == name.rsplit('/').next().unwrap_or(name))
}

#[test]
fn every_scenario_and_unit_test_named_in_the_mapping_exists() {
    let text = table();
    let mut named = 0;
    for span in text.split('`').skip(1).step_by(2) {
        if span.ends_with(".toml") {
            named += 1;
            assert!(
                scenario_exists(span),
                "docs/profiles.md names {span}, which does not exist"
            );
        }
        if let Some((file, test)) = span.split_once("::") {
            if !file.starts_with("src/") || !file.ends_with(".rs") {
                continue;
            }
            named += 1;
            let source = std::fs::read_to_string(repo().join(file))
                .unwrap_or_else(|e| panic!("docs/profiles.md names {file}: {e}"));
            let name = test.rsplit("::").next().unwrap_or(test);
            assert!(
                source.contains(&format!("fn {name}(")),
                "docs/profiles.md names {span}, but {file} has no `fn {name}(`"
            );
        }
    }
    assert!(
        named > 100,
        "the mapping names only {named} scenarios and tests"
    );
}

#[test]
fn every_upstream_scenario_is_in_the_mapping() {
    let text = table();
    for dir in [
        "ironclaw/engine",
        "ironclaw/chat",
        "moltis",
        "agentloop",
        "plan-step",
    ] {
        let folder = repo().join("scenarios").join(dir);
        for entry in std::fs::read_dir(&folder).expect("scenario folder") {
            let path = entry.expect("entry").path();
            let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            if !name.ends_with(".toml") {
                continue;
            }
            let rel = Path::new(dir).join(name);
            assert!(
                text.contains(name),
                "scenarios/{} is not listed in docs/profiles.md",
                rel.display()
            );
        }
    }
}
