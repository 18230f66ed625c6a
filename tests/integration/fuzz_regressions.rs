//! The fuzz targets' inputs in the normal suite: every committed seed (`fuzz/seeds/`) and every
//! input a fuzzer found a crash with (`fuzz/regressions/<target>/`, kept after the fix) goes
//! through the same code as its target (`fuzz/fuzz_targets/`), here through the library, as
//! the fuzzers call it. None may panic; a baseline or results file that reads must render to
//! one that reads again.

use crate::support::repo;
use harness::scenario::{self, SourceFormat};
use std::path::Path;

fn inputs(dir: &str) -> Vec<(String, Vec<u8>)> {
    let dir = repo().join(dir);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out: Vec<(String, Vec<u8>)> = entries
        .map(|e| e.expect("a folder entry").path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).expect("read an input"))
        })
        .collect();
    out.sort();
    out
}

/// `fuzz_targets/scenario_load.rs` and `scenario_replay.rs`.
fn scenario_target(data: &[u8]) -> usize {
    let Ok(text) = std::str::from_utf8(data) else {
        return 0;
    };
    let mut cases = 0;
    for format in [SourceFormat::Toml, SourceFormat::Json] {
        match scenario::load(text, format, "fuzz/case") {
            Ok(loaded) => {
                for case in &loaded {
                    if let Ok(events) = harness::run::replay(case) {
                        let golden = harness::trace::render_golden(&case.id, &events);
                        assert!(golden.starts_with("# harness trace v1: "));
                        cases += 1;
                    }
                }
            }
            Err(diags) => {
                assert!(!diags.is_empty());
                assert!(diags.iter().all(|d| d.line >= 1 && d.col >= 1));
            }
        }
    }
    cases
}

/// `fuzz_targets/baseline.rs` and `results.rs`: a file that reads renders to one that reads
/// again; whether it read.
fn round_trip<T>(
    data: &[u8],
    parse: fn(&str) -> Result<T, String>,
    render: fn(&T) -> String,
) -> bool {
    let Ok(text) = std::str::from_utf8(data) else {
        return false;
    };
    let Ok(value) = parse(text) else {
        return false;
    };
    let again = render(&value);
    if let Err(e) = parse(&again) {
        panic!("a rendered file does not read back: {e}\n{again}");
    }
    true
}

fn baseline_target(data: &[u8]) -> bool {
    use harness::gate::baseline::{parse, render};
    round_trip(data, parse, render)
}

fn results_target(data: &[u8]) -> bool {
    use harness::report::json::{parse, render};
    round_trip(data, parse, render)
}

#[test]
fn seeds_and_fuzz_findings_go_through_their_targets_without_a_panic() {
    let seeds = inputs("fuzz/seeds/scenario");
    assert!(seeds.len() >= 10, "{} scenario seeds", seeds.len());
    let replayed: usize = seeds.iter().map(|(_, d)| scenario_target(d)).sum();
    assert!(replayed >= 10, "only {replayed} seed cases replayed");
    for target in ["scenario_load", "scenario_replay"] {
        for (name, data) in inputs(&format!("fuzz/regressions/{target}")) {
            eprintln!("{target}: {name}");
            scenario_target(&data);
        }
    }

    let seeds = inputs("fuzz/seeds/baseline");
    assert!(
        seeds.iter().all(|(_, d)| baseline_target(d)),
        "a baseline seed does not read"
    );
    for (name, data) in inputs("fuzz/regressions/baseline") {
        eprintln!("baseline: {name}");
        baseline_target(&data);
    }

    let seeds = inputs("fuzz/seeds/results");
    assert!(
        seeds.iter().all(|(_, d)| results_target(d)),
        "a results seed does not read"
    );
    for (name, data) in inputs("fuzz/regressions/results") {
        eprintln!("results: {name}");
        results_target(&data);
    }
    assert!(Path::new(&repo().join("fuzz/fuzz_targets")).is_dir());
}
