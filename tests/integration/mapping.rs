//! `docs/profiles.md` maps every upstream test to the scenario or unit test that re-expresses
//! it; this keeps the table in step with the code: every scenario file and every
//! `file::test` it names must exist, and every upstream-test scenario family is listed.

use crate::support::repo;

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
    // Every profile of the registry but the bare loop reproduces a runtime: its scenarios are
    // under `scenarios/<profile>/` (a `-head` variant's beside its base's, in
    // `scenarios/<base>/`), every folder below included.
    let mut checked = 0;
    for profile in harness::policy::profiles::names() {
        if profile == "none" {
            continue;
        }
        let base = profile.split_once("-head").map_or(profile, |(b, _)| b);
        let folder = repo().join("scenarios").join(base);
        assert!(
            folder.is_dir(),
            "profile `{profile}` has no scenarios/{base}/ of upstream-derived scenarios"
        );
        let mut stack = vec![folder];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).expect("scenario folder") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    stack.push(path);
                    continue;
                }
                let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
                    continue;
                };
                if !name.ends_with(".toml") {
                    continue;
                }
                let rel = path.strip_prefix(repo()).unwrap_or(&path);
                assert!(
                    text.contains(name),
                    "{} is not listed in docs/profiles.md",
                    rel.display()
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "only {checked} upstream scenarios checked");
}

/// The parts of `docs/runtimes.md` and the section numbers each holds (`### §2.3 …`, or a
/// list item `- **§9.1 …**` for the groups of upstream tests).
fn runtime_sections() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(repo().join("docs/runtimes.md")).expect("docs/runtimes.md");
    let mut part = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            part = h.split_whitespace().next().unwrap_or_default().to_owned();
        } else if line.starts_with("###") || line.starts_with("- **§") {
            let word = line.split_whitespace().nth(1).unwrap_or_default();
            if let Some(n) = word.trim_start_matches("**").strip_prefix('§') {
                out.push((part.clone(), n.to_owned()));
            }
        }
    }
    out
}

#[test]
fn every_runtimes_reference_names_a_section_that_exists() {
    let sections = runtime_sections();
    for part in ["Moltis", "IronClaw", "Detectors"] {
        assert!(
            sections.iter().filter(|(p, _)| p == part).count() > 10,
            "docs/runtimes.md has few sections in {part}: {sections:?}"
        );
    }
    let has = |part: &str, n: &str| {
        let n = n.trim_end_matches('.');
        sections.iter().any(|(p, s)| p == part && s == n)
    };
    let mut checked = 0;
    for (path, text) in text_files(&["rs", "toml", "md"]) {
        for (part, n) in citations(&text) {
            checked += 1;
            assert!(
                has(&part, &n),
                "{} cites runtimes.md {part} §{n}, which docs/runtimes.md does not have",
                path.display()
            );
        }
    }
    assert!(
        checked > 100,
        "only {checked} citations of docs/runtimes.md"
    );
}

/// The repository's text files with these extensions (builds and the corpus left out), each
/// with its contents.
fn text_files(extensions: &[&str]) -> Vec<(std::path::PathBuf, String)> {
    walkdir::WalkDir::new(repo())
        .into_iter()
        .filter_entry(|e| {
            !matches!(
                e.file_name().to_str(),
                Some("target" | ".git" | "corpus" | "node_modules")
            )
        })
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            e.path()
                .extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| extensions.contains(&x))
        })
        .filter_map(|e| Some((e.path().to_owned(), std::fs::read_to_string(e.path()).ok()?)))
        .collect()
}

/// The (part, section) of every citation `runtimes.md PART §N` in `text`.
fn citations(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (i, _) in text.match_indices("runtimes.md") {
        let rest = text[i + "runtimes.md".len()..].trim_start_matches(['`', ')']);
        let Some((part, after)) = rest.strip_prefix(' ').and_then(|r| r.split_once(' ')) else {
            continue;
        };
        let Some(num) = after.strip_prefix('§') else {
            continue;
        };
        if matches!(part, "Moltis" | "IronClaw" | "Detectors") {
            let n = num
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            out.push((part.to_owned(), n));
        }
    }
    out
}

#[test]
fn nothing_points_outside_the_repository() {
    // The transcript corpus lives in `corpus/`; nothing refers to material beside the repository.
    for (path, text) in text_files(&["rs", "toml", "md", "py", "yml", "json"]) {
        for (n, line) in text.lines().enumerate() {
            let outside = ["../shared", "shared/spec", "shared/seeds", "DESIGN.md"]
                .iter()
                .any(|s| line.contains(s));
            assert!(
                !outside || path.ends_with("mapping.rs"),
                "{}:{}: points outside the repository: {line}",
                path.display(),
                n + 1
            );
        }
    }
}

/// The top-level modules of `src/` that each one names (`crate::X`, `use crate::{X, …}`),
/// code and test modules alike, comment lines left out.
fn module_edges() -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let src = repo().join("src");
    let mut edges: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for (path, text) in text_files(&["rs"]) {
        let Ok(rel) = path.strip_prefix(&src) else {
            continue;
        };
        let Some(top) = rel.components().next().and_then(|c| c.as_os_str().to_str()) else {
            continue;
        };
        let top = top.trim_end_matches(".rs").to_owned();
        if matches!(top.as_str(), "lib" | "main") {
            continue;
        }
        let targets = edges.entry(top.clone()).or_default();
        for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
            let mut rest = line;
            while let Some(at) = rest.find("crate::") {
                rest = &rest[at + "crate::".len()..];
                let names: Vec<&str> = match rest.strip_prefix('{') {
                    // `crate::{a::B, c}`: the first segment of each item.
                    Some(group) => group
                        .split('}')
                        .next()
                        .unwrap_or("")
                        .split(',')
                        .map(|item| item.trim().split("::").next().unwrap_or(""))
                        .collect(),
                    None => vec![
                        rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                            .next()
                            .unwrap_or(""),
                    ],
                };
                for name in names.into_iter().filter(|n| !n.is_empty() && *n != top) {
                    targets.insert(name.to_owned());
                }
            }
        }
    }
    edges
}

/// The layers `src/lib.rs` draws, from the top: each line of its `text` picture names its
/// modules (comma-separated) before two or more spaces and a description.
fn layers() -> Vec<Vec<String>> {
    layers_in("src/lib.rs")
}

/// The layers of the first `text` picture in `file` (a Rust file's doc comments, or Markdown).
fn layers_in(file: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(repo().join(file)).expect("the file with the picture");
    let picture: Vec<&str> = text
        .lines()
        .map(|l| l.strip_prefix("//!").unwrap_or(l).trim_start())
        .skip_while(|l| *l != "```text")
        .skip(1)
        .take_while(|l| *l != "```")
        .collect();
    picture
        .iter()
        .map(|line| {
            let names = line.split("  ").next().unwrap_or_default();
            names.split(',').map(|n| n.trim().to_owned()).collect()
        })
        .collect()
}

/// Every import that does not point to a lower layer, as `from -> to (layers i -> j)`, and
/// every module the picture misses or names without it existing.
fn layer_violations(
    layers: &[Vec<String>],
    edges: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Vec<String> {
    let rank = |m: &str| layers.iter().position(|l| l.iter().any(|n| n == m));
    let mut out = Vec::new();
    for (from, targets) in edges {
        let Some(a) = rank(from) else {
            out.push(format!("{from} is not in the picture"));
            continue;
        };
        for to in targets {
            match rank(to) {
                Some(b) if b > a => {}
                Some(b) => out.push(format!(
                    "{from} -> {to} points {} (layers {a} -> {b}, counted from the top)",
                    if a == b { "sideways" } else { "up" }
                )),
                None => out.push(format!("{from} -> {to}: {to} is not in the picture")),
            }
        }
    }
    for name in layers.iter().flatten() {
        if !edges.contains_key(name) {
            out.push(format!(
                "the picture names {name}, which src/ does not have"
            ));
        }
    }
    out
}

/// `src/lib.rs` promises layers whose dependencies point down only, test modules included:
/// every module is in its picture, and every import goes to a lower layer.
#[test]
fn every_import_points_down_the_layers_of_src_lib_rs() {
    let layers = layers();
    assert!(
        layers.len() >= 8,
        "the picture has too few layers: {layers:?}"
    );
    let edges = module_edges();
    assert!(edges.len() > 25, "too few modules found: {edges:?}");
    let found = layer_violations(&layers, &edges);
    assert!(
        found.is_empty(),
        "imports against the layers of src/lib.rs (move the code, or redraw the picture with \
         ARCHITECTURE.md):\n{}",
        found.join("\n")
    );
}

/// The check finds what it is for: an import added upward, one added sideways, a module left
/// out of the picture.
#[test]
fn the_layer_check_catches_an_import_pointing_up_or_sideways() {
    let layers = layers();
    let mut edges = module_edges();
    edges
        .entry("scenario".to_owned())
        .or_default()
        .insert("run".to_owned());
    edges
        .entry("run".to_owned())
        .or_default()
        .insert("verdict".to_owned());
    edges.insert("newcomer".to_owned(), Default::default());
    let found = layer_violations(&layers, &edges);
    assert!(
        found
            .iter()
            .any(|v| v.starts_with("scenario -> run points up")),
        "{found:?}"
    );
    assert!(
        found
            .iter()
            .any(|v| v.starts_with("run -> verdict points sideways")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|v| v == "newcomer is not in the picture"),
        "{found:?}"
    );
    assert_eq!(found.len(), 3, "{found:?}");
}

/// `ARCHITECTURE.md` draws the layers `src/lib.rs` draws, and every file or folder it names
/// for a kind of change exists.
#[test]
fn the_architecture_document_matches_the_code() {
    assert_eq!(
        layers_in("ARCHITECTURE.md"),
        layers(),
        "ARCHITECTURE.md and src/lib.rs draw different layers"
    );
    let text = std::fs::read_to_string(repo().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let mut named = 0;
    for span in text.split('`').skip(1).step_by(2) {
        let roots = [
            "src/",
            "tests/",
            "fixtures/",
            "docs/",
            "scenarios/",
            ".ci/",
            "schema/",
        ];
        if !roots.iter().any(|r| span.starts_with(r)) || span.contains(' ') {
            continue;
        }
        // A placeholder (`scenarios/<profile>/`) names the folder above it.
        let path = span.split('<').next().unwrap_or(span);
        named += 1;
        assert!(
            repo().join(path).exists(),
            "ARCHITECTURE.md names {span}, which does not exist"
        );
    }
    assert!(named > 20, "ARCHITECTURE.md names only {named} files");
}
