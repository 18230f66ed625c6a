//! The generator's tests: each kind from real and odd schemas, bounds, budgets.

use super::*;

fn flights() -> Value {
    json!({"type": "object", "properties": {
        "origin": {"type": "string", "minLength": 3, "maxLength": 3},
        "destination": {"type": "string"},
        "date": {"type": "string", "format": "date"},
        "passengers": {"type": "integer", "minimum": 1},
        "cabin": {"enum": ["economy", "business"]}
    }, "required": ["origin", "destination", "date"]})
}

#[test]
fn each_kind_of_arguments_from_a_real_schema() {
    let s = flights();
    let seed = seed("suite/reflex@exec", 0);
    let Arguments::Parsed(valid) = arguments(&s, Generate::Valid, seed) else {
        panic!("valid arguments are JSON")
    };
    let o = valid.as_object().expect("an object");
    assert_eq!(
        o.keys().collect::<Vec<_>>(),
        ["origin", "destination", "date"],
        "the required fields"
    );
    assert_eq!(o["date"], "2026-03-14");
    assert_eq!(o["origin"].as_str().map(str::len), Some(3));
    assert_eq!(
        arguments(&s, Generate::Empty, seed),
        Arguments::parsed(json!({}))
    );
    let Arguments::Parsed(missing) = arguments(&s, Generate::MissingRequired, seed) else {
        panic!()
    };
    assert!(missing.get("origin").is_none() && missing.get("destination").is_some());
    let Arguments::Parsed(wrong) = arguments(&s, Generate::WrongType, seed) else {
        panic!()
    };
    assert!(wrong["origin"].is_number(), "{wrong}");
    let Arguments::Raw(cut) = arguments(&s, Generate::Truncated, seed) else {
        panic!("truncated arguments are raw text")
    };
    assert!(serde_json::from_str::<Value>(&cut).is_err(), "{cut}");
    assert!(
        serde_json::to_string(&valid)
            .expect("text")
            .starts_with(&cut)
    );
    // The same case and call give the same arguments; another case may not.
    assert_eq!(
        arguments(&s, Generate::Valid, seed),
        Arguments::Parsed(valid.clone())
    );
    let words: std::collections::BTreeSet<String> = (0..8)
        .map(
            |c| match arguments(&s, Generate::Valid, super::seed("x", c)) {
                Arguments::Parsed(v) => v["destination"].to_string(),
                Arguments::Raw(r) => r,
            },
        )
        .collect();
    assert!(words.len() > 1, "the seed varies the words: {words:?}");
}

#[test]
fn open_and_odd_schemas_still_give_arguments() {
    let seed = 7;
    // No properties at all: `{}` is valid, and there is no field to spoil.
    assert_eq!(
        arguments(&json!({"type": "object"}), Generate::Valid, seed),
        Arguments::parsed(json!({}))
    );
    assert_eq!(
        arguments(&json!({}), Generate::WrongType, seed),
        Arguments::parsed(json!([]))
    );
    // Nothing required: the first property is filled.
    let path = json!({"properties": {"path": {"type": "string"}}});
    assert!(matches!(arguments(&path, Generate::Valid, seed),
        Arguments::Parsed(v) if v["path"].is_string()));
    // anyOf with null and a type list (required but offering `null`: left unset), arrays,
    // nested objects.
    let odd = json!({"type": "object", "required": ["a", "b", "c", "d"], "properties": {
        "a": {"anyOf": [{"type": "null"}, {"type": "integer", "minimum": 5}]},
        "b": {"type": ["null", "boolean"]},
        "c": {"type": "array", "items": {"type": "number", "maximum": 0.5}, "minItems": 2},
        "d": {"type": "object", "properties": {"e": {"const": "x"}}, "required": ["e"]}
    }});
    assert_eq!(
        arguments(&odd, Generate::Valid, seed),
        Arguments::parsed(json!({"a": null, "b": null, "c": [0.5, 0.5], "d": {"e": "x"}}))
    );
    // Alone, each offers its value, within bounds (the first field's seed is 8: an
    // integer 8 mod 5 = 3 above its minimum).
    let alone = |name: &str| json!({"type": "object", "required": [name], "properties": {name: odd["properties"][name]}});
    assert_eq!(
        arguments(&alone("a"), Generate::Valid, seed),
        Arguments::parsed(json!({"a": 8}))
    );
    assert_eq!(
        arguments(&alone("b"), Generate::Valid, seed),
        Arguments::parsed(json!({"b": true}))
    );
    // A schema that nests itself without end stops at a depth.
    let mut deep = json!({"type": "object"});
    for _ in 0..12 {
        deep = json!({"type": "object", "required": ["n"], "properties": {"n": deep}});
    }
    let Arguments::Parsed(v) = arguments(&deep, Generate::Valid, seed) else {
        panic!()
    };
    assert!(v.to_string().contains("null"), "{v}");
}

fn parsed(a: Arguments) -> Value {
    match a {
        Arguments::Parsed(v) => v.into_value(),
        Arguments::Raw(r) => panic!("raw arguments {r}"),
    }
}

/// pydantic's shape: the model parameter behind `$ref` into `$defs`, optional fields as
/// `anyOf` with `null`, a recursive model, `allOf` around a `$ref`.
fn pydantic_like() -> Value {
    json!({
        "$defs": {
            "Meeting": {"type": "object", "title": "Meeting", "properties": {
                "title": {"type": "string"},
                "start": {"type": "string", "format": "date-time"},
                "attendees": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                "room": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": null}
            }, "required": ["title", "start", "attendees"]},
            "Node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }, "required": ["name", "children"]},
            "Kind": {"enum": ["flight", "hotel"], "type": "string"}
        },
        "type": "object",
        "properties": {
            "meeting": {"$ref": "#/$defs/Meeting"},
            "tree": {"$ref": "#/$defs/Node"},
            "kind": {"allOf": [{"$ref": "#/$defs/Kind"}], "description": "what"},
            "limit": {"anyOf": [{"type": "integer", "minimum": 1, "maximum": 50}, {"type": "null"}], "default": null}
        },
        "required": ["meeting", "tree", "kind"]
    })
}

#[test]
fn references_all_of_and_recursion_give_valid_arguments() {
    let s = pydantic_like();
    for seed in 0..20 {
        let v = parsed(arguments(&s, Generate::Valid, seed));
        assert!(valid(&s, &v), "{v}");
        assert!(
            v["meeting"].is_object(),
            "a model parameter is an object: {v}"
        );
        assert!(
            v["meeting"]["attendees"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
        );
        assert!(["flight", "hotel"].contains(&v["kind"].as_str().unwrap_or("")));
    }
    // The recursion ends (at the depth bound, as `null`), and the text stays small.
    let v = parsed(arguments(&s, Generate::Valid, 3));
    assert!(v.to_string().len() < 4096, "{v}");
    // Each invalid kind is invalid, in the way it says.
    for how in [
        Generate::Empty,
        Generate::MissingRequired,
        Generate::WrongType,
    ] {
        assert_eq!(invalidity(&s, how), None);
        let v = parsed(arguments(&s, how, 1));
        assert!(!valid(&s, &v), "{how:?}: {v}");
    }
    let v = parsed(arguments(&s, Generate::MissingRequired, 1));
    assert!(v.get("meeting").is_none() && v.get("tree").is_some(), "{v}");
    let v = parsed(arguments(&s, Generate::WrongType, 1));
    assert!(!v["meeting"].is_object(), "{v}");
    assert_eq!(required_fields(&s), ["meeting", "tree", "kind"]);
}

#[test]
fn kinds_that_cannot_be_invalid_say_why() {
    let none = json!({"type": "object", "properties": {}});
    assert!(invalidity(&none, Generate::Empty).is_some());
    assert!(invalidity(&none, Generate::MissingRequired).is_some());
    // `[]` is no object: a wrong type all the same.
    assert_eq!(invalidity(&none, Generate::WrongType), None);
    assert!(!valid(
        &none,
        &parsed(arguments(&none, Generate::WrongType, 0))
    ));
    // A schema that takes anything cannot be given a wrong type.
    assert!(invalidity(&json!({}), Generate::WrongType).is_some());
    // A field that takes a string or a number gets a value of a third type.
    let loose = json!({"type": "object", "required": ["q"], "properties": {
        "q": {"type": ["string", "integer"]}}});
    let v = parsed(arguments(&loose, Generate::WrongType, 0));
    assert!(!valid(&loose, &v), "{v}");
    // An optional field with no required one: only `wrong_type` can be invalid.
    let optional = json!({"type": "object", "properties": {"q": {"type": "string"}}});
    assert!(invalidity(&optional, Generate::Empty).is_some());
    assert_eq!(invalidity(&optional, Generate::WrongType), None);
}

#[test]
fn constraints_hold() {
    let s = json!({"type": "object", "required": ["a", "b", "c", "d", "e", "f", "g"], "properties": {
        "a": {"type": "string", "minLength": 3, "maxLength": 8},
        "b": {"type": "integer", "multipleOf": 5, "minimum": 10},
        "c": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "d": {"type": "string", "pattern": "^\\+[0-9]{7,15}$"},
        "e": {"type": "object", "additionalProperties": {"type": "integer"}, "minProperties": 1},
        "f": {"type": "array", "items": {"type": "integer"}, "minItems": 5},
        "g": {"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "email"}, "address": {"type": "string"}}, "required": ["kind", "address"]},
            {"type": "object", "properties": {"kind": {"const": "sms"}, "number": {"type": "string"}}, "required": ["kind", "number"]}
        ]}
    }});
    for seed in 0..10 {
        let v = parsed(arguments(&s, Generate::Valid, seed));
        // The pattern's candidates do not include a phone number: everything else holds.
        let mut without = s.clone();
        without["properties"]["d"] = json!({"type": "string"});
        assert!(valid(&without, &v), "{v}");
        assert_eq!(v["f"].as_array().map(Vec::len), Some(5), "{v}");
    }
}

#[test]
fn hostile_schemas_are_bounded() {
    // `required` naming one field 40 times, nested 9 deep: once each.
    let mut s = json!({"type": "object", "properties": {"x": {"type": "string"}}});
    for _ in 0..9 {
        s = json!({"type": "object", "required": vec!["n"; 40], "properties": {"n": s}});
    }
    let v = parsed(arguments(&s, Generate::Valid, 1));
    assert!(v.to_string().len() < 1024, "{v}");
    // A huge `minLength`: cut to the cap, padded in one step.
    let long = json!({"type": "object", "required": ["s"], "properties": {
        "s": {"type": "string", "minLength": 160_000_000u64}}});
    let v = parsed(arguments(&long, Generate::Valid, 1));
    assert_eq!(v["s"].as_str().map(str::len), Some(MAX_STRING));
    // Arrays of three nested seven deep around an object with 10,000 required names: the
    // budget stops it.
    let names: Vec<String> = (0..10_000).map(|i| format!("f{i}")).collect();
    let mut s = json!({"type": "object", "required": names});
    for _ in 0..7 {
        s = json!({"type": "array", "items": s, "minItems": 3});
    }
    let s = json!({"type": "object", "required": ["a"], "properties": {"a": s}});
    let v = parsed(arguments(&s, Generate::Valid, 1));
    assert!(
        v.to_string().len() <= 2 * MAX_BYTES + 64 * MAX_NODES,
        "{}",
        v.to_string().len()
    );
    // A `$ref` cycle without content, and one through `allOf`.
    let cycle = json!({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
        "type": "object", "required": ["x"], "properties": {"x": {"$ref": "#/$defs/a"}}});
    let v = parsed(arguments(&cycle, Generate::Valid, 1));
    assert!(v.is_object());
    assert!(valid(&cycle, &v) || !valid(&cycle, &v));
    // Alternatives nested in alternatives: bounded tries.
    let mut alt = json!({"type": "string"});
    for _ in 0..12 {
        alt = json!({"anyOf": [{"type": "null"}, alt.clone(), alt]});
    }
    let s = json!({"type": "object", "required": ["a"], "properties": {"a": alt}});
    assert!(parsed(arguments(&s, Generate::Valid, 1)).is_object());
}

#[test]
fn strict_mode_optionals_are_left_unset_in_a_valid_call() {
    // A shell tool rewritten for strict mode (every key required, the optional ones
    // nullable): the command runs, the working folder and timeout take the tool's own.
    let shell = json!({"type": "object", "additionalProperties": false,
        "required": ["command", "workdir", "timeout"], "properties": {
        "command": {"type": "string"},
        "workdir": {"type": ["string", "null"]},
        "timeout": {"type": ["integer", "null"], "minimum": 1}}});
    let v = parsed(arguments(&shell, Generate::Valid, 3));
    assert!(
        v["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("echo ")),
        "{v}"
    );
    assert_eq!(
        (&v["workdir"], &v["timeout"]),
        (&Value::Null, &Value::Null),
        "{v}"
    );
    assert!(valid(&shell, &v), "{v}");
    // pydantic's `Optional[…]` (a `null` alternative), through a `$ref`: unset; a required
    // parameter that does not offer `null` keeps its value, and so does one that offers it
    // only by OpenAPI's `nullable` (a JSON Schema validator reads no such keyword: `null`
    // fails its type there); one whose schema says nothing of its type is not read as
    // optional.
    let mixed = json!({"type": "object",
        "required": ["city", "when", "limit", "note", "any"], "properties": {
        "city": {"type": "string"},
        "when": {"anyOf": [{"type": "string", "format": "date"}, {"type": "null"}]},
        "limit": {"$ref": "#/$defs/Limit"},
        "note": {"type": "string", "nullable": true},
        "any": {}},
        "$defs": {"Limit": {"type": ["integer", "null"]}}});
    let v = parsed(arguments(&mixed, Generate::Valid, 5));
    assert!(
        v["city"].is_string() && !v["any"].is_null() && v["note"].is_string(),
        "{v}"
    );
    for unset in ["when", "limit"] {
        assert_eq!(v[unset], Value::Null, "{unset}: {v}");
    }
    // Every parameter optional: the first still says something.
    let all = json!({"type": "object", "required": ["query", "page"], "properties": {
        "query": {"type": ["string", "null"]}, "page": {"type": ["integer", "null"]}}});
    let v = parsed(arguments(&all, Generate::Valid, 2));
    assert!(v["query"].is_string() && v["page"].is_null(), "{v}");
    // The invalid kinds still spoil or drop a parameter that must be there.
    let v = parsed(arguments(&shell, Generate::MissingRequired, 3));
    assert!(v.get("command").is_none() && !valid(&shell, &v), "{v}");
    let v = parsed(arguments(&shell, Generate::WrongType, 3));
    assert!(!valid(&shell, &v), "{v}");
}

#[test]
fn a_shell_tools_valid_command_runs() {
    let string = json!({"type": "object", "required": ["command"], "properties": {"command": {"type": "string"}}});
    let v = parsed(arguments(&string, Generate::Valid, 3));
    assert!(
        v["command"]
            .as_str()
            .is_some_and(|c| c.starts_with("echo ")),
        "{v}"
    );
    let list = json!({"type": "object", "required": ["cmd"], "properties": {"cmd": {"type": "array", "items": {"type": "string"}}}});
    let v = parsed(arguments(&list, Generate::Valid, 3));
    assert_eq!(v["cmd"][0], "echo", "{v}");
    // A schema that would not take it keeps the word.
    let strict = json!({"type": "object", "required": ["command"], "properties": {"command": {"type": "string", "pattern": "^[a-z]+-[0-9]+$"}}});
    let v = parsed(arguments(&strict, Generate::Valid, 3));
    assert!(
        valid(&strict, &v) && !v["command"].as_str().unwrap_or("").starts_with("echo "),
        "{v}"
    );
}

#[test]
fn doubling_references_and_alternatives_stay_within_the_budget() {
    // Each level refers twice to the one below, inside alternatives: without one budget
    // for the whole generation (values and validator visits), this is exponential.
    let mut defs = serde_json::Map::new();
    defs.insert("d0".to_owned(), json!({"type": "string"}));
    for i in 1..24 {
        let below = format!("#/$defs/d{}", i - 1);
        defs.insert(
            format!("d{i}"),
            json!({"anyOf": [
                {"type": "object", "required": ["a", "b"], "properties": {"a": {"$ref": below}, "b": {"$ref": below}}},
                {"type": "array", "items": {"$ref": below}, "minItems": 2}
            ]}),
        );
    }
    let schema = json!({"$defs": defs, "type": "object", "required": ["x"], "properties": {"x": {"$ref": "#/$defs/d23"}}});
    for how in [
        Generate::Valid,
        Generate::WrongType,
        Generate::MissingRequired,
    ] {
        let v = parsed(arguments(&schema, how, 1));
        assert!(v.to_string().len() < 4 * MAX_BYTES, "{how:?}");
    }
    let _ = invalidity(&schema, Generate::WrongType);
}

#[test]
fn references_by_id_reach_the_subschema_that_has_it() {
    // TypeBox names a recursive type by `$id` and refers to it by that name; a reference may
    // also point into such a subschema (`Id#/pointer`).
    let node = json!({
        "$id": "Node",
        "type": "object",
        "properties": {
            "label": {"type": "string", "minLength": 2},
            "size": {"type": "integer", "minimum": 7},
            "children": {"type": "array", "items": {"$ref": "Node"}}
        },
        "required": ["label", "size"]
    });
    let schema = json!({
        "type": "object",
        "properties": {
            "root": {"$ref": "Node"},
            "size": {"$ref": "Node#/properties/size"}
        },
        "required": ["root", "size"],
        "$defs": {"node": node}
    });
    let Arguments::Parsed(v) = arguments(&schema, Generate::Valid, seed("ids", 0)) else {
        panic!("valid arguments are JSON")
    };
    assert!(
        v["root"]["label"].as_str().is_some_and(|l| l.len() >= 2),
        "{v}"
    );
    assert!(v["root"]["size"].as_i64().is_some_and(|n| n >= 7), "{v}");
    assert!(v["size"].as_i64().is_some_and(|n| n >= 7), "{v}");
    assert!(valid(&schema, &v), "{v}");
    // The validator follows the same references: a value the subschema refuses is refused.
    for bad in [
        json!({"root": {"label": "ab", "size": 3}, "size": 7}),
        json!({"root": {"label": "ab", "size": 7}, "size": 3}),
        json!({"root": {"label": "ab", "size": 7, "children": [{"label": "x", "size": 7}]}, "size": 7}),
    ] {
        assert!(!valid(&schema, &bad), "{bad}");
    }
    // A name no subschema has resolves to nothing, which holds (unknown is not invalid).
    assert!(valid(&json!({"$ref": "Nowhere"}), &json!(1)));
}

#[test]
fn required_names_count_once_in_order_few_or_many() {
    // Names repeated within a part and across `allOf` parts, below and past the count at which
    // a set is made: each once, where it first appears.
    for n in [3usize, 15, 16, 17, 40] {
        let names: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
        let mut first: Vec<&str> = names.iter().map(String::as_str).collect();
        first.extend(names.iter().rev().step_by(2).map(String::as_str));
        let second: Vec<&str> = names
            .iter()
            .rev()
            .map(String::as_str)
            .chain(["extra"])
            .collect();
        let s = json!({
            "type": "object",
            "required": first,
            "allOf": [{"required": second}, {"required": ["extra", "p0"]}],
        });
        let mut want = names.clone();
        want.push("extra".to_owned());
        assert_eq!(required_fields(&s), want, "{n}");
    }
}
