//! Arguments generated from the tool schemas real libraries emit (`fixtures/schemas/`:
//! pydantic, pydantic-ai, openai-agents' strict form, zod 4, zod 3 with zod-to-json-schema,
//! TypeBox), checked by a JSON Schema validator of its own (the `jsonschema` crate): `valid`
//! arguments validate, every invalid kind is rejected — or, where the schema accepts it,
//! `invalidity` says so — and harness's own reading agrees with the validator.

use crate::support::repo;
use harness::llm::Arguments;
use harness::scenario::Generate;
use harness::scenario::generate::{arguments, doubt, invalidity, seed, valid};
use serde_json::Value;

fn schemas() -> Vec<(String, Value)> {
    let root = repo().join("fixtures/schemas");
    let mut out = Vec::new();
    for lib in std::fs::read_dir(&root).expect("fixtures/schemas") {
        let lib = lib.expect("entry").path();
        if !lib.is_dir() {
            continue;
        }
        for f in std::fs::read_dir(&lib).expect("a library folder") {
            let f = f.expect("entry").path();
            let text = std::fs::read_to_string(&f).expect("a schema");
            let name = f.strip_prefix(&root).expect("below").display().to_string();
            out.push((name, serde_json::from_str(&text).expect("JSON")));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn generated_arguments_validate_against_the_schemas_libraries_emit() {
    let all = schemas();
    assert!(all.len() >= 60, "the captured schemas: {}", all.len());
    let (mut checked, mut vouched, mut valid_calls) = (0, 0, 0);
    let mut doubted: std::collections::BTreeSet<String> = Default::default();
    for (name, schema) in &all {
        let validator = jsonschema::validator_for(schema)
            .unwrap_or_else(|e| panic!("{name}: the validator refuses the schema: {e}"));
        for s in 0..12 {
            let seed = seed(name, s);
            let Arguments::Parsed(v) = arguments(schema, Generate::Valid, seed) else {
                panic!("{name}: valid arguments are JSON")
            };
            let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
            // harness vouches for valid arguments only where they are: where they are not,
            // it says why it cannot (and a card then blames no tool for refusing them).
            match doubt(schema, &v) {
                None => {
                    assert!(
                        errors.is_empty(),
                        "{name} seed {s}: harness vouches for {v}, which is invalid: {errors:?}"
                    );
                    vouched += 1;
                }
                Some(_) => {
                    doubted.insert(name.clone());
                }
            }
            valid_calls += 1;
            checked += 1;
        }
        // A schema that says what harness does not check (read off a valid call, which its
        // own check passes): harness may read the invalid kinds otherwise.
        let Arguments::Parsed(sample) = arguments(schema, Generate::Valid, seed(name, 0)) else {
            panic!("{name}: valid arguments are JSON")
        };
        let unread = valid(schema, &sample)
            && doubt(schema, &sample).is_some_and(|w| !w.contains("own check"));
        for how in [
            Generate::Empty,
            Generate::MissingRequired,
            Generate::WrongType,
        ] {
            let Arguments::Parsed(v) = arguments(schema, how, seed(name, 1)) else {
                panic!("{name}: {how:?} arguments are JSON")
            };
            let accepted = validator.is_valid(&v);
            match invalidity(schema, how) {
                None => assert!(
                    !accepted,
                    "{name}: {how:?} gives {v}, which the schema accepts"
                ),
                Some(why) => assert!(
                    accepted,
                    "{name}: {how:?} is said valid ({why}) but {v} is not"
                ),
            }
            // Where the schema says what harness does not check, harness may read it
            // otherwise (and says so for valid calls).
            if !unread {
                assert_eq!(
                    valid(schema, &v),
                    accepted,
                    "{name}: {how:?} {v}: harness and the validator disagree"
                );
            }
            checked += 1;
        }
        let Arguments::Raw(cut) = arguments(schema, Generate::Truncated, seed(name, 2)) else {
            panic!("{name}: truncated arguments are raw text")
        };
        assert!(
            serde_json::from_str::<Value>(&cut).is_err(),
            "{name}: {cut}"
        );
    }
    assert!(checked > 800, "{checked}");
    // Most valid calls are vouched for; every one of the libraries' own schemas is, and the
    // doubts are the schemas that use what harness does not make or check (a generation
    // that regresses shows here as a new doubt).
    assert!(vouched * 10 > valid_calls * 8, "{vouched} of {valid_calls}");
    let doubted: Vec<&str> = doubted.iter().map(String::as_str).collect();
    assert_eq!(
        doubted,
        [
            "handwritten/create_event.json",
            "handwritten/make_tree.json",
            "handwritten/register_user.json",
            "handwritten/rename_file.json",
            "handwritten/ship_parcel.json",
            // pydantic's own formats: `ipvanyaddress`, `password`.
            "pydantic-hard/block_address.json",
        ],
        "the schemas harness cannot vouch for"
    );
}

#[test]
fn a_tool_without_parameters_cannot_take_an_invalid_empty_call() {
    for (name, schema) in schemas()
        .iter()
        .filter(|(n, _)| n.ends_with("no_params.json"))
    {
        assert!(invalidity(schema, Generate::Empty).is_some(), "{name}");
        assert!(
            invalidity(schema, Generate::MissingRequired).is_some(),
            "{name}"
        );
    }
}
