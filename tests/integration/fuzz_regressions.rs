//! The fuzz targets' inputs in the normal suite: every committed seed (`fuzz/seeds/`) and every
//! input a fuzzer found a crash with (`fuzz/regressions/<target>/`, kept after the fix) goes
//! through the same code as its target: each target's body is a function of `harness::fuzzing`,
//! which both call. None may panic; a baseline or results file that reads must render to one
//! that reads again.

use crate::support::repo;
use harness::fuzzing;
use std::path::Path;

/// A fuzz target's body: whether the input read.
type Target = fn(&[u8]) -> bool;

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

#[test]
fn the_wire_format_seeds_and_findings_go_through_their_targets() {
    let seeds = inputs("fuzz/seeds/cassette");
    assert!(
        !seeds.is_empty() && seeds.iter().all(|(_, d)| fuzzing::cassette(d)),
        "a cassette seed does not replay"
    );
    for (name, data) in inputs("fuzz/regressions/cassette") {
        eprintln!("cassette: {name}");
        fuzzing::cassette(&data);
    }
    let seeds = inputs("fuzz/seeds/transcript");
    assert!(seeds.len() >= 6);
    for (name, data) in &seeds {
        assert!(
            fuzzing::transcript(data) > 0,
            "transcript seed {name} gives no run"
        );
    }
    for (name, data) in inputs("fuzz/regressions/transcript") {
        eprintln!("transcript: {name}");
        fuzzing::transcript(&data);
    }
    let seeds = inputs("fuzz/seeds/sse");
    assert!(seeds.len() >= 4);
    for (name, data) in &seeds {
        // Error bodies are seeds for the fault path: no answer in them.
        assert!(
            fuzzing::sse(data) != name.contains("error"),
            "sse seed {name}"
        );
    }
    for (name, data) in inputs("fuzz/regressions/sse") {
        eprintln!("sse: {name}");
        fuzzing::sse(&data);
    }
    let seeds = inputs("fuzz/seeds/stream_scrub");
    assert!(seeds.len() >= 6);
    for (name, data) in &seeds {
        assert!(
            fuzzing::stream_scrub(data),
            "stream_scrub seed {name} does not read"
        );
    }
    for (name, data) in inputs("fuzz/regressions/stream_scrub") {
        eprintln!("stream_scrub: {name}");
        fuzzing::stream_scrub(&data);
    }
    let seeds = inputs("fuzz/seeds/serve_request");
    for (name, data) in &seeds {
        assert!(
            fuzzing::serve_request(data) > 0,
            "serve_request seed {name} is never answered"
        );
    }
    for (name, data) in inputs("fuzz/regressions/serve_request") {
        eprintln!("serve_request: {name}");
        fuzzing::serve_request(&data);
    }
}

#[test]
fn seeds_and_fuzz_findings_go_through_their_targets_without_a_panic() {
    let seeds = inputs("fuzz/seeds/scenario");
    assert!(seeds.len() >= 10, "{} scenario seeds", seeds.len());
    let replayed: usize = seeds.iter().map(|(_, d)| fuzzing::scenario_replay(d)).sum();
    assert!(replayed >= 10, "only {replayed} seed cases replayed");
    for target in ["scenario_load", "scenario_replay"] {
        for (name, data) in inputs(&format!("fuzz/regressions/{target}")) {
            eprintln!("{target}: {name}");
            fuzzing::scenario_replay(&data);
        }
    }

    let round_trips: [(&str, Target); 2] = [
        ("baseline", fuzzing::baseline),
        ("results", fuzzing::results),
    ];
    for (target, run) in round_trips {
        let seeds = inputs(&format!("fuzz/seeds/{target}"));
        assert!(
            !seeds.is_empty() && seeds.iter().all(|(_, d)| run(d)),
            "a {target} seed does not read"
        );
        for (name, data) in inputs(&format!("fuzz/regressions/{target}")) {
            eprintln!("{target}: {name}");
            run(&data);
        }
    }
    assert!(Path::new(&repo().join("fuzz/fuzz_targets")).is_dir());
}
