//! Arguments generated from a tool's JSON Schema, for the calls of portable scenarios
//! ([`super::CallDef::generate`]): the same schema and seed give the same arguments on every
//! run and machine, so goldens stay put. A seed is derived from the case id and the call's
//! number ([`seed`]).
//!
//! The schema is read as the frameworks emit theirs (pydantic, zod, TypeBox, hand-written):
//! local `$ref`s (`#/$defs/…`, `#/definitions/…`, any JSON pointer into the schema), `allOf`
//! (every part holds), `anyOf` / `oneOf` (the first alternative that is not `null` and whose
//! instance the whole schema accepts), `type` (or a list of types, `null` last), OpenAPI's
//! `nullable`, `properties` with `required`, `additionalProperties`, `minProperties`, `items`
//! (a schema or a tuple), `prefixItems`, `minItems` / `maxItems`, `enum`, `const`, `default`,
//! `minimum` / `maximum` (and their exclusive forms), `multipleOf`, `minLength` / `maxLength`,
//! `pattern` (tried against a few candidates) and the common string `format`s. What it does
//! not say is filled in with plain values. A required parameter that offers `null` by its type
//! (a strict-mode schema's way of writing an optional one) is `null` in a valid call, unless
//! every parameter is such: the tool's own default is the value it surely accepts. (OpenAPI's
//! `nullable` alone is no such offer: JSON Schema validators read no such keyword.)
//!
//! Generation is bounded whatever the schema: nesting past 8 levels, `$ref` chains past 32
//! hops, and anything past a budget of generated values or bytes become the smallest valid
//! value (`null` where the schema allows it); `required` names count once; a string is padded
//! to its `minLength` in one step, capped; arrays are capped in length. A hostile schema costs
//! at most about the budget's work ([`MAX_NODES`], [`MAX_BYTES`]).
//!
//! The invalid kinds are invalid in the way they claim, or say why they cannot be
//! ([`invalidity`]): `empty` needs a required parameter, `missing_required` too, `wrong_type`
//! a parameter that some value of another JSON type fails ([`valid`] checks it).

mod pattern;
mod scalar;
mod vouch;

use scalar::{count, integer, number, string};

pub use vouch::doubt;

use super::Generate;
use crate::json::Lookup;
use crate::llm::Arguments;
use serde_json::{Map, Value, json};

/// Values generated at most for one set of arguments; past it, each value is the smallest
/// valid one.
pub const MAX_NODES: usize = 10_000;
/// Bytes of strings generated at most for one set of arguments.
pub const MAX_BYTES: usize = 256 * 1024;
/// The longest string generated: a longer `minLength` is cut to it.
pub const MAX_STRING: usize = 64 * 1024;
/// The most items an array gets: a larger `minItems` is cut to it.
pub const MAX_ITEMS: usize = 256;
/// Seeds a valid call is tried with before the first one's arguments are kept.
const RETRIES: u64 = 8;
/// Nesting past this depth is `null`.
const MAX_DEPTH: usize = 8;
/// `$ref` hops followed in a row at most (a cycle of references ends here).
const MAX_HOPS: usize = 32;
/// Parts one schema's view gathers at most (`allOf` and chosen alternatives).
const MAX_PARTS: usize = 64;
/// Schema nodes the validator visits at most for one schema's whole generation or check;
/// past it, what is left is taken as valid (unknown is not invalid).
const MAX_VISITS: usize = 200_000;

/// A seed from a case id and a call number (FNV-1a: the same on every platform).
pub fn seed(case: &str, call: u64) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in case.bytes().chain(call.to_le_bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The arguments `how` asks for, from `schema`: parsed, or (cut off) the raw text a model
/// emitted.
pub fn arguments(schema: &Value, how: Generate, seed: u64) -> Arguments {
    let g = || Gen::new(schema);
    let valid = || g().instance(&[schema], seed, 0);
    match how {
        Generate::Empty => Arguments::parsed(json!({})),
        // Checked against the schema as harness reads it where it made a part it may not
        // have met (a pattern, distinct items): other seeds are tried before the first is
        // kept.
        Generate::Valid => {
            let made = g();
            let first = made.instance(&[schema], seed, 0);
            if !made.risky.get() || self::valid(schema, &first) {
                return Arguments::parsed(first);
            }
            let other = (1..RETRIES).find_map(|k| {
                let v = g().instance(
                    &[schema],
                    seed.wrapping_add(k.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
                    0,
                );
                self::valid(schema, &v).then_some(v)
            });
            Arguments::parsed(other.unwrap_or(first))
        }
        Generate::MissingRequired => {
            let mut v = valid();
            // The first required field; with none, the first property (the call stays valid,
            // as `invalidity` says).
            let field = required_fields(schema)
                .into_iter()
                .next()
                .or_else(|| v.as_object().and_then(|o| o.keys().next().cloned()));
            if let (Some(o), Some(field)) = (v.as_object_mut(), field) {
                o.shift_remove(&field);
            }
            Arguments::parsed(v)
        }
        Generate::WrongType => {
            let mut v = valid();
            match (v.as_object_mut(), spoilable(schema)) {
                (Some(o), Some((field, bad))) => {
                    o.insert(field, bad);
                    Arguments::parsed(v)
                }
                // No field to spoil: arguments that are no object at all.
                _ => Arguments::parsed(json!([])),
            }
        }
        Generate::Truncated => {
            let text = serde_json::to_string(&valid()).unwrap_or_else(|_| "{}".to_owned());
            let mut cut = (text.len() / 2).max(1);
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            Arguments::Raw(text[..cut].to_owned())
        }
    }
}

/// Why `how`'s arguments cannot be invalid for `schema` (they would be accepted), or `None`
/// when they are invalid as the kind claims (always for `valid`, which claims nothing of the
/// sort, and `truncated`, which is no JSON).
pub fn invalidity(schema: &Value, how: Generate) -> Option<String> {
    match how {
        Generate::Valid | Generate::Truncated => None,
        // Read off the call itself, as a validator would: a schema may require its names
        // only in alternatives (`anyOf: [{required: [a]}, {required: [b]}]`).
        Generate::Empty | Generate::MissingRequired => {
            let call = match arguments(schema, how, 0) {
                Arguments::Parsed(v) => v,
                Arguments::Raw(_) => return None,
            };
            if !valid(schema, &call) {
                None
            } else if required_fields(schema).is_empty() {
                Some("the tool requires no parameter, so a call without one is valid".to_owned())
            } else {
                Some(format!(
                    "the schema accepts the call without its first required parameter ({call})"
                ))
            }
        }
        Generate::WrongType => {
            // A spoiled field fails its schema; no field at all gives `[]`, which no object
            // schema accepts — but a schema that takes any JSON takes that too.
            let open = spoilable(schema).is_none() && valid(schema, &json!([]));
            open.then(|| "the tool's parameters accept a value of any type".to_owned())
        }
    }
}

/// The required parameters of a tool's schema, in order, each once (`$ref`s followed and
/// `allOf` parts joined).
pub fn required_fields(schema: &Value) -> Vec<String> {
    let g = Gen::new(schema);
    let mut parts = Parts::new();
    g.view(schema, &mut parts, 0);
    g.required(&parts).into_iter().map(str::to_owned).collect()
}

/// The field `wrong_type` spoils and the value it gets: the first required field (else the
/// first property) for which a value of another JSON type than its valid one fails its
/// schema.
fn spoilable(schema: &Value) -> Option<(String, Value)> {
    let g = Gen::new(schema);
    let mut parts = Parts::new();
    g.view(schema, &mut parts, 0);
    let mut fields: Vec<&str> = g.required(&parts);
    let mut seen: std::collections::BTreeSet<&str> = fields.iter().copied().collect();
    for p in parts.iter() {
        if let Some(props) = p.at("properties").as_object() {
            for k in props.keys() {
                if seen.insert(k) {
                    fields.push(k);
                }
            }
        }
    }
    let valid_value = g.instance(&[schema], 0, 0);
    fields.into_iter().find_map(|field| {
        let sub = g.property(&parts, field);
        let was = valid_value.get(field).cloned().unwrap_or(Value::Null);
        std::iter::once(other_type(&was))
            .chain(others())
            .find(|bad| {
                let mut v = Validator::new(&g.root);
                !sub.iter().all(|s| v.check(s, bad, 0))
                    // The whole call, as a validator reads it (a field a pattern names).
                    && valid_value.as_object().is_none_or(|o| {
                        let mut spoiled = o.clone();
                        spoiled.insert(field.to_owned(), bad.clone());
                        !Validator::new(&g.root).check(schema, &Value::Object(spoiled), 0)
                    })
            })
            .map(|bad| (field.to_owned(), bad))
    })
}

/// Values of every JSON type, tried in turn for a field whose first spoiled value is valid.
fn others() -> [Value; 5] {
    [
        Value::Bool(true),
        Value::Null,
        Value::Array(Vec::new()),
        Value::Object(Map::new()),
        Value::String(String::new()),
    ]
}

/// A value of another JSON type than `v`'s.
fn other_type(v: &Value) -> Value {
    match v {
        Value::String(_) => json!(12345),
        Value::Number(_) => json!("not a number"),
        Value::Bool(_) => json!("yes"),
        Value::Array(_) => json!("not a list"),
        Value::Object(_) => json!("not an object"),
        Value::Null => json!(0),
    }
}

/// Does `value` satisfy `schema` (the keywords [this module](self) reads, plus `not`,
/// `patternProperties`, `uniqueItems` and the `max…` bounds)? Formats are not asserted, as
/// validators do by default; a pattern that is no regular expression here holds.
pub fn valid(schema: &Value, value: &Value) -> bool {
    Validator::new(&Root::new(schema)).check(schema, value, 0)
}

/// [`valid`], `None` when the check stopped at one of its bounds before it was whole.
fn valid_whole(schema: &Value, value: &Value) -> Option<bool> {
    let root = Root::new(schema);
    let ok = Validator::new(&root).check(schema, value, 0);
    (!root.cut.get()).then_some(ok)
}

/// A schema as `$ref`s see it: the document, and its subschemas by `$id` (TypeBox names a
/// recursive type so), gathered the first time a reference names one.
struct Root<'a> {
    value: &'a Value,
    ids: std::cell::OnceCell<Vec<(&'a str, &'a Value)>>,
    /// The validator's visits so far, over every check against this schema.
    visits: std::cell::Cell<usize>,
    /// A `$ref` stands for its whole object, its siblings ignored: drafts 4 to 7, as the
    /// schema's `$schema` names one (draft 2019-09 on reads the siblings too).
    ref_alone: bool,
    /// A check stopped at a bound (visits, reference hops) and took the rest as valid.
    cut: std::cell::Cell<bool>,
}

impl<'a> Root<'a> {
    fn new(value: &'a Value) -> Self {
        let ref_alone = value.at("$schema").as_str().is_some_and(|s| {
            ["draft-04", "draft-06", "draft-07"]
                .iter()
                .any(|d| s.contains(d))
        });
        Self {
            value,
            ids: std::cell::OnceCell::new(),
            visits: std::cell::Cell::new(0),
            ref_alone,
            cut: std::cell::Cell::new(false),
        }
    }

    /// The schema `schema` is read as: its `$ref`'s target where a reference stands alone.
    fn alone(&self, schema: &'a Value) -> Option<&'a Value> {
        if !self.ref_alone {
            return None;
        }
        schema.at("$ref").as_str().and_then(|r| self.resolve(r))
    }

    /// The subschemas that have an `$id`, in a walk of the document bounded by [`MAX_VISITS`].
    fn ids(&self) -> &[(&'a str, &'a Value)] {
        self.ids.get_or_init(|| {
            let mut ids = Vec::new();
            let mut stack = vec![self.value];
            let mut seen = 0usize;
            while let Some(v) = stack.pop() {
                seen += 1;
                if seen > MAX_VISITS {
                    break;
                }
                match v {
                    Value::Object(o) => {
                        if let Some(id) = o.field("$id").and_then(Value::as_str) {
                            ids.push((id, v));
                        }
                        stack.extend(o.values().filter(|x| x.is_object() || x.is_array()));
                    }
                    Value::Array(a) => {
                        stack.extend(a.iter().filter(|x| x.is_object() || x.is_array()));
                    }
                    _ => {}
                }
            }
            ids
        })
    }

    /// The target of a reference: a local JSON pointer, or a subschema's `$id` (with a
    /// pointer into it after `#`).
    fn resolve(&self, reference: &str) -> Option<&'a Value> {
        if reference.starts_with('#') {
            return pointer(self.value, reference);
        }
        let (id, rest) = reference.split_once('#').unwrap_or((reference, ""));
        let base = self.ids().iter().find(|(i, _)| *i == id).map(|(_, v)| *v)?;
        pointer(base, &format!("#{rest}"))
    }
}

/// A local reference's target in `root`: `#`, `#/$defs/Name`, `#/definitions/Name`, any JSON
/// pointer (`~0`, `~1` and `%xx` decoded).
fn pointer<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let path = reference.strip_prefix('#')?;
    if path.is_empty() {
        return Some(root);
    }
    let mut at = root;
    for token in path.strip_prefix('/')?.split('/') {
        let token = percent_decoded(token).replace("~1", "/").replace("~0", "~");
        at = match at {
            Value::Object(o) => o.field(&token)?,
            Value::Array(a) => a.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(at)
}

fn percent_decoded(token: &str) -> String {
    if !token.contains('%') {
        return token.to_owned();
    }
    let bytes = token.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                let v = hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0);
                out.push(u8::try_from(v).unwrap_or(b'?'));
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A schema's `anyOf` or `oneOf` alternatives, when it has some.
fn alternatives(schema: &Value) -> Option<&Vec<Value>> {
    schema
        .field("anyOf")
        .or_else(|| schema.field("oneOf"))
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
}

/// The schema's types, as written (`type` a string or a list), if it says: read in place,
/// as the generator asks it of every part many times a value.
fn declared_types(schema: &Value) -> Option<impl Iterator<Item = &str> + Clone> {
    let t = schema.at("type");
    let ts = match t {
        Value::String(_) => std::slice::from_ref(t),
        Value::Array(ts) => ts.as_slice(),
        _ => return None,
    };
    Some(ts.iter().filter_map(Value::as_str))
}

/// Whether the schema declares type `t` among its types, if it declares any.
fn declares(schema: &Value, t: &str) -> Option<bool> {
    declared_types(schema).map(|mut ts| ts.any(|x| x == t))
}

/// Whether a parameter named so is a shell tool's command ([`SHELL_FIELDS`], any case).
fn is_shell_field(field: &str) -> bool {
    SHELL_FIELDS.iter().any(|f| f.eq_ignore_ascii_case(field))
}

/// Parameter names (lower case) of a shell tool's command.
const SHELL_FIELDS: [&str; 7] = [
    "command",
    "cmd",
    "script",
    "shell_command",
    "bash_command",
    "command_line",
    "commandline",
];

const WORDS: [&str; 8] = [
    "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
];

/// The word a generated shell command prints, when `value` of the argument `field` is one:
/// `echo WORD-N` (or `["echo", "WORD-N"]`) in a shell tool's command parameter, as
/// [`arguments`] makes a valid call of it. Its output must hold the word: a result without it
/// is a command that did not run (the failure shape `no-echo`).
pub fn echoed_word<'v>(field: &str, value: &'v Value) -> Option<&'v str> {
    if !is_shell_field(field) {
        return None;
    }
    let word = match value {
        Value::String(s) => s.strip_prefix("echo ")?,
        Value::Array(items) if items.len() == 2 && items[0] == "echo" => items[1].as_str()?,
        _ => return None,
    };
    let (head, n) = word.rsplit_once('-')?;
    (WORDS.contains(&head) && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        .then_some(word)
}

/// The schemas one value must satisfy, gathered ([`Gen::view`]): most values have one or two,
/// kept in place; more spill to the heap. A value of a portable scenario's call gathers a few
/// such lists, so they are made without allocating.
#[derive(Clone)]
enum Parts<'a> {
    Few(usize, [&'a Value; Parts::FEW]),
    Many(Vec<&'a Value>),
}

impl<'a> Parts<'a> {
    /// Parts kept in place.
    const FEW: usize = 4;

    fn new() -> Self {
        static NULL: Value = Value::Null;
        Self::Few(0, [&NULL; Self::FEW])
    }

    fn push(&mut self, part: &'a Value) {
        match self {
            Self::Few(n, few) if *n < Self::FEW => {
                few[*n] = part;
                *n += 1;
            }
            Self::Few(_, few) => {
                let mut many = Vec::with_capacity(Self::FEW * 2);
                many.extend_from_slice(few);
                many.push(part);
                *self = Self::Many(many);
            }
            Self::Many(many) => many.push(part),
        }
    }
}

impl<'a> std::ops::Deref for Parts<'a> {
    type Target = [&'a Value];

    fn deref(&self) -> &[&'a Value] {
        match self {
            Self::Few(n, few) => &few[..*n],
            Self::Many(many) => many,
        }
    }
}

impl<'a> FromIterator<&'a Value> for Parts<'a> {
    fn from_iter<I: IntoIterator<Item = &'a Value>>(iter: I) -> Self {
        let mut parts = Self::new();
        for p in iter {
            parts.push(p);
        }
        parts
    }
}

/// One generation: the schema's root (for `$ref`s) and what is left of the budget — values,
/// bytes, and the validator's visits, which every check of this generation spends.
struct Gen<'a> {
    root: Root<'a>,
    nodes: std::cell::Cell<usize>,
    bytes: std::cell::Cell<usize>,
    /// It made a part it may not have met (a pattern, distinct items, dependent names, key
    /// names): its instance is worth checking.
    risky: std::cell::Cell<bool>,
}

impl<'a> Gen<'a> {
    fn new(root: &'a Value) -> Self {
        Self {
            root: Root::new(root),
            nodes: std::cell::Cell::new(MAX_NODES),
            bytes: std::cell::Cell::new(MAX_BYTES),
            risky: std::cell::Cell::new(false),
        }
    }

    /// Gather the parts a value must satisfy for `schema`: the schema with its `$ref`
    /// followed and its `allOf` parts, recursively (alternatives are chosen later).
    fn view(&self, schema: &'a Value, out: &mut Parts<'a>, hops: usize) {
        if out.len() >= MAX_PARTS || hops > MAX_HOPS || out.iter().any(|p| std::ptr::eq(*p, schema))
        {
            return;
        }
        if let Some(target) = self.root.alone(schema) {
            self.view(target, out, hops + 1);
            return;
        }
        out.push(schema);
        if let Some(target) = schema
            .at("$ref")
            .as_str()
            .and_then(|r| self.root.resolve(r))
        {
            self.view(target, out, hops + 1);
        }
        for part in schema.at("allOf").as_array().into_iter().flatten() {
            self.view(part, out, hops + 1);
        }
    }

    /// The parts of `schemas` gathered.
    fn view_of(&self, schemas: &[&'a Value]) -> Parts<'a> {
        let mut parts = Parts::new();
        for s in schemas {
            self.view(s, &mut parts, 0);
        }
        parts
    }

    fn first(parts: &[&'a Value], key: &str) -> Option<&'a Value> {
        parts.iter().find_map(|p| p.field(key))
    }

    /// The required names of all parts, each once, in order.
    fn required(&self, parts: &[&'a Value]) -> Vec<&'a str> {
        // A tool requires a few names: looked for in the list; past [`Self::FEW`], in a set.
        let mut out: Vec<&str> = Vec::new();
        let mut seen: Option<std::collections::BTreeSet<&str>> = None;
        for p in parts {
            for name in p.at("required").as_array().into_iter().flatten() {
                let Some(name) = name.as_str() else { continue };
                let new = match &mut seen {
                    Some(set) => set.insert(name),
                    None if out.len() < Self::FEW => !out.contains(&name),
                    None => seen.insert(out.iter().copied().collect()).insert(name),
                };
                if new {
                    out.push(name);
                }
            }
        }
        out
    }

    /// Names looked for one by one before a set is made.
    const FEW: usize = 16;

    /// The schemas a property's value must satisfy: its `properties` entries, else the
    /// `additionalProperties` schemas of the parts.
    fn property(&self, parts: &[&'a Value], name: &str) -> Parts<'a> {
        let named: Parts<'a> = parts
            .iter()
            .filter_map(|p| p.at("properties").field(name))
            .collect();
        if !named.is_empty() {
            return named;
        }
        // A name a `patternProperties` pattern matches takes that schema, not the
        // `additionalProperties` one.
        let patterned: Parts<'a> = parts
            .iter()
            .filter_map(|p| p.at("patternProperties").as_object())
            .flat_map(|o| o.iter())
            .filter(|(p, _)| regex_lite::Regex::new(p).is_ok_and(|r| r.is_match(name)))
            .map(|(_, s)| s)
            .collect();
        if !patterned.is_empty() {
            return patterned;
        }
        parts
            .iter()
            .filter_map(|p| p.field("additionalProperties").filter(|a| a.is_object()))
            .collect()
    }

    /// The type to generate: the first declared type (not `null`) that every part allows,
    /// else what the keywords imply; `null` only when nothing else is allowed.
    fn type_of(parts: &[&Value]) -> &'static str {
        const ALL: [&str; 7] = [
            "string", "integer", "number", "boolean", "array", "object", "null",
        ];
        let allowed = |t: &str| {
            parts.iter().all(|p| {
                declared_types(p)
                    .is_none_or(|mut ts| ts.any(|x| x == t || (t == "integer" && x == "number")))
                    && !(t == "null" && p.at("nullable") == false)
            })
        };
        let declared = || parts.iter().filter_map(|p| declared_types(p)).flatten();
        if let Some(t) = declared()
            .filter(|t| *t != "null")
            .find_map(|t| ALL.iter().find(|a| **a == t).filter(|a| allowed(a)))
        {
            return t;
        }
        if declared().next().is_some() && declared().all(|t| t == "null") {
            return "null";
        }
        let has = |k: &str| parts.iter().any(|p| p.field(k).is_some());
        if has("properties") || has("required") || has("additionalProperties") {
            "object"
        } else if has("items") || has("prefixItems") {
            "array"
        } else {
            "string"
        }
    }

    /// Spend one value (and `bytes`) of the budget; false when it is spent.
    fn spend(&self, bytes: usize) -> bool {
        let (n, b) = (self.nodes.get(), self.bytes.get());
        if n == 0 || b < bytes {
            self.nodes.set(0);
            return false;
        }
        self.nodes.set(n - 1);
        self.bytes.set(b - bytes);
        true
    }

    /// An instance of all of `schemas`.
    fn instance(&self, schemas: &[&'a Value], seed: u64, depth: usize) -> Value {
        if depth > MAX_DEPTH {
            return Value::Null;
        }
        let parts = self.view_of(schemas);
        if !self.spend(0) {
            return Self::smallest(&parts);
        }
        self.choose(parts, &mut Vec::new(), seed, depth)
    }

    /// An instance of the parts once each `anyOf` / `oneOf` among them has an alternative
    /// chosen (`decided` holds the parts whose alternative is chosen): the first alternative
    /// that is not `null` and gives a value every part accepts, else the first tried.
    fn choose(
        &self,
        parts: Parts<'a>,
        decided: &mut Vec<*const Value>,
        seed: u64,
        depth: usize,
    ) -> Value {
        let pending = parts.iter().find_map(|p| {
            alternatives(p)
                .filter(|_| !decided.contains(&std::ptr::from_ref(*p)))
                .map(|a| (*p, a))
        });
        let Some((part, alts)) = pending else {
            return self.instance_of(&parts, seed, depth);
        };
        decided.push(std::ptr::from_ref(part));
        let null = |a: &'a Value| {
            let mut ps = Parts::new();
            self.view(a, &mut ps, 0);
            Self::type_of(&ps) == "null"
        };
        let order = alts
            .iter()
            .filter(|a| !null(a))
            .chain(alts.iter().filter(|a| null(a)));
        let mut first = None;
        for alt in order.take(8) {
            let mut with = parts.clone();
            self.view(alt, &mut with, 0);
            let v = self.choose(with, &mut decided.clone(), seed, depth);
            if parts
                .iter()
                .all(|p| Validator::new(&self.root).check(p, &v, 0))
            {
                return v;
            }
            first.get_or_insert(v);
            if !self.spend(0) {
                break;
            }
        }
        first.unwrap_or(Value::Null)
    }

    /// An instance of the parts, alternatives already chosen.
    fn instance_of(&self, parts: &[&'a Value], seed: u64, depth: usize) -> Value {
        if let Some(c) = Self::first(parts, "const") {
            return c.clone();
        }
        let fits = |v: &Value| {
            parts
                .iter()
                .all(|p| Validator::new(&self.root).check(p, v, 0))
        };
        if let Some(options) = parts
            .iter()
            .find_map(|p| p.at("enum").as_array().filter(|e| !e.is_empty()))
        {
            let start = usize::try_from(seed % options.len() as u64).unwrap_or(0);
            return options[start..]
                .iter()
                .chain(&options[..start])
                .find(|v| fits(v))
                .unwrap_or(&options[start])
                .clone();
        }
        if let Some(d) = Self::first(parts, "default").filter(|d| !d.is_null() && fits(d)) {
            return d.clone();
        }
        match Self::type_of(parts) {
            "object" => self.object(parts, seed, depth),
            "array" => self.array(parts, seed, depth),
            "integer" => integer(parts, seed),
            "number" => number(parts),
            "boolean" => json!(true),
            "null" => Value::Null,
            _ => {
                if parts.iter().any(|p| p.field("pattern").is_some()) {
                    self.risky.set(true);
                }
                let s = string(parts, seed);
                if self.spend(s.len()) {
                    Value::String(s)
                } else {
                    Self::smallest(parts)
                }
            }
        }
    }

    fn object(&self, parts: &[&'a Value], seed: u64, depth: usize) -> Value {
        let mut fields: Vec<&str> = self.required(parts);
        let required = fields.len();
        let min = parts
            .iter()
            .filter_map(|p| count(p.at("minProperties")))
            .max()
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX))
            .min(MAX_ITEMS);
        // Nothing required: the first property, so the call says something; then as many
        // more as `minProperties` asks.
        let want = min.max(usize::from(fields.is_empty()));
        for p in parts {
            for k in p
                .at("properties")
                .as_object()
                .into_iter()
                .flat_map(|o| o.keys())
            {
                if fields.len() >= want {
                    break;
                }
                if !fields.contains(&k.as_str()) {
                    fields.push(k);
                }
            }
        }
        // The names a present one depends on (`dependentRequired`, draft 7's `dependencies`
        // list), where the schema names them among its properties.
        let dependent = ["dependentRequired", "dependencies"];
        let depends = parts
            .iter()
            .any(|p| dependent.iter().any(|k| p.field(k).is_some()));
        if depends {
            self.risky.set(true);
        }
        let mut i = 0;
        while depends && i < fields.len() {
            for p in parts {
                for key in ["dependentRequired", "dependencies"] {
                    let deps = p.at(key).at(fields[i]).as_array().into_iter().flatten();
                    for d in deps.filter_map(Value::as_str) {
                        if !fields.contains(&d) && fields.len() < MAX_ITEMS {
                            fields.push(d);
                        }
                    }
                }
            }
            i += 1;
        }
        // Past the named properties, keys of its own for `additionalProperties`.
        // (Names a `propertyNames` pattern accepts, where one is given: longer and longer.)
        let names = parts
            .iter()
            .find_map(|p| p.at("propertyNames").at("pattern").as_str());
        if names.is_some() {
            self.risky.set(true);
        }
        let mut invented: Vec<String> = Vec::new();
        for i in fields.len()..min.min(MAX_ITEMS) {
            let key = names
                .and_then(|p| pattern::matching(p, i + 1))
                .filter(|k| !fields.contains(&k.as_str()) && !invented.contains(k))
                .unwrap_or_else(|| format!("key{}", i + 1));
            invented.push(key);
        }
        fields.extend(invented.iter().map(String::as_str));
        // A required parameter that says it may be `null` is how strict-mode schemas
        // (OpenAI's structured outputs, and the runtimes and SDKs that rewrite tools for it)
        // write an optional one: `null` stands for "not given", which the tool's own
        // defaults then fill. A made-up value there (a working folder that does not exist,
        // a one-second timeout) is a call the tool may refuse although its schema allows it.
        // The call still says something: when every parameter could be `null`, the first
        // gets a value.
        let subs: Vec<Parts<'a>> = fields.iter().map(|f| self.property(parts, f)).collect();
        let mut unset: Vec<bool> = fields[..required]
            .iter()
            .zip(&subs)
            .map(|(field, sub)| !is_shell_field(field) && self.nullable(sub))
            .collect();
        if !unset.is_empty() && unset.len() == fields.len() && unset.iter().all(|u| *u) {
            unset[0] = false;
        }
        let mut out = Map::with_capacity(fields.len());
        for (i, (field, sub)) in fields.into_iter().zip(subs).enumerate() {
            if unset.get(i).copied().unwrap_or(false) {
                out.insert(field.to_owned(), Value::Null);
                continue;
            }
            let field_seed = seed.wrapping_add(i as u64 + 1);
            let v = if sub.is_empty() {
                let s = string(&[], field_seed);
                if self.spend(s.len()) {
                    Value::String(s)
                } else {
                    Value::Null
                }
            } else {
                self.instance(&sub, field_seed, depth + 1)
            };
            let v = self.runnable(field, &sub, v);
            out.insert(field.to_owned(), v);
        }
        Value::Object(out)
    }

    fn array(&self, parts: &[&'a Value], seed: u64, depth: usize) -> Value {
        let asked = parts
            .iter()
            .filter_map(|p| count(p.at("minItems")))
            .max()
            .map_or(0, |n| usize::try_from(n).unwrap_or(usize::MAX));
        // One item, so the call says something — none near the depth bound, where a
        // recursive schema (a tree's children) must end.
        let min = if depth + 2 >= MAX_DEPTH {
            asked
        } else {
            asked.max(1)
        };
        let max = parts
            .iter()
            .filter_map(|p| count(p.at("maxItems")))
            .min()
            .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
        let n = min.min(max).min(MAX_ITEMS);
        let prefix: Vec<&Value> = parts
            .iter()
            .find_map(|p| {
                p.at("prefixItems")
                    .as_array()
                    .or_else(|| p.at("items").as_array())
            })
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        let n = n.max(prefix.len().min(max));
        let rest: Vec<&Value> = parts
            .iter()
            .filter_map(|p| {
                p.field("items")
                    .filter(|i| !i.is_array())
                    .or_else(|| p.field("additionalItems").filter(|i| i.is_object()))
            })
            .collect();
        let unique = parts.iter().any(|p| p.at("uniqueItems") == true);
        if unique {
            self.risky.set(true);
        }
        let mut out: Vec<Value> = Vec::with_capacity(n);
        for i in 0..n {
            let item = |k: u64| {
                let item_seed = seed.wrapping_add(i as u64).wrapping_add(k << 20);
                match prefix.get(i) {
                    Some(p) => self.instance(&[p], item_seed, depth + 1),
                    None if rest.is_empty() => Value::String(string(&[], item_seed)),
                    None => self.instance(&rest, item_seed, depth + 1),
                }
            };
            let mut v = item(0);
            // Distinct items where `uniqueItems` asks for them: other seeds, and a boolean's
            // other value.
            if unique {
                let taken = |v: &Value| out.iter().any(|o| json_eq(o, v));
                for k in 1..RETRIES {
                    if !taken(&v) {
                        break;
                    }
                    v = match v {
                        Value::Bool(b) if !taken(&Value::Bool(!b)) => Value::Bool(!b),
                        _ => item(k),
                    };
                }
            }
            out.push(v);
            if self.nodes.get() == 0 {
                break;
            }
        }
        Value::Array(out)
    }

    /// A shell tool's command (a parameter named as one, [`SHELL_FIELDS`]) made a command that
    /// runs and succeeds — `echo` of the word, as a string or an argument list — where the
    /// schema takes it: a made-up word is a command that does not exist (exit 127), which a
    /// case about valid calls must not send.
    fn runnable(&self, field: &str, sub: &[&'a Value], v: Value) -> Value {
        if !is_shell_field(field) {
            return v;
        }
        let echoed = match &v {
            Value::String(s) => Value::String(format!("echo {s}")),
            Value::Array(items) if items.iter().all(Value::is_string) && !items.is_empty() => {
                let mut all = vec![Value::String("echo".to_owned())];
                all.extend(items.iter().cloned());
                Value::Array(all)
            }
            _ => return v,
        };
        if sub
            .iter()
            .all(|p| Validator::new(&self.root).check(p, &echoed, 0))
        {
            echoed
        } else {
            v
        }
    }

    /// Whether a property's schemas say in so many words that it may be `null` (a `null`
    /// type, `nullable: true`, or a `null` alternative) and accept it: a schema that says
    /// nothing of its type takes `null` too, but does not offer it.
    fn nullable(&self, sub: &[&'a Value]) -> bool {
        if sub.is_empty() {
            return false;
        }
        let parts = self.view_of(sub);
        // (Not OpenAPI's `nullable`: a JSON Schema validator reads no such keyword, so a
        // value of the type is what every reader of the schema accepts.)
        let says = parts.iter().any(|p| {
            declares(p, "null") == Some(true)
                || alternatives(p).is_some_and(|alts| {
                    alts.iter().any(|a| {
                        let mut ps = Parts::new();
                        self.view(a, &mut ps, 0);
                        Self::type_of(&ps) == "null"
                    })
                })
        });
        says && sub
            .iter()
            .all(|s| Validator::new(&self.root).check(s, &Value::Null, 0))
    }

    /// The smallest value the parts allow: `null` if they do, else the zero of their type.
    fn smallest(parts: &[&Value]) -> Value {
        let nullable = parts
            .iter()
            .all(|p| declares(p, "null") != Some(false) || p.at("nullable") == true);
        if nullable {
            return Value::Null;
        }
        match Self::type_of(parts) {
            "object" => json!({}),
            "array" => json!([]),
            "integer" => integer(parts, 0),
            "number" => number(parts),
            "boolean" => json!(false),
            "null" => Value::Null,
            _ => json!(""),
        }
    }
}

fn bound_i64(parts: &[&Value], key: &str, pick: fn(i64, i64) -> i64) -> Option<i64> {
    parts
        .iter()
        .filter_map(|p| {
            let v = p.at(key);
            v.as_i64().or_else(|| {
                v.as_f64().map(|f| {
                    if key.contains("inimum") {
                        f.ceil() as i64
                    } else {
                        f.floor() as i64
                    }
                })
            })
        })
        .reduce(pick)
}

/// A validator of the keywords above, bounded in visits, resolving `$ref`s in one root.
struct Validator<'r, 'a> {
    root: &'r Root<'a>,
}

impl<'r, 'a> Validator<'r, 'a> {
    fn new(root: &'r Root<'a>) -> Self {
        Self { root }
    }

    fn check(&mut self, schema: &Value, v: &Value, hops: usize) -> bool {
        let visits = self.root.visits.get() + 1;
        self.root.visits.set(visits);
        if visits > MAX_VISITS || hops > MAX_HOPS * 4 {
            self.root.cut.set(true);
            return true;
        }
        let Some(o) = schema.as_object() else {
            // `true`, `false`.
            return schema != &Value::Bool(false);
        };
        if let Some(target) = o
            .field("$ref")
            .and_then(Value::as_str)
            .and_then(|r| self.root.resolve(r))
        {
            if !self.check(target, v, hops + 1) {
                return false;
            }
            // Drafts 4 to 7: the reference is the whole schema.
            if self.root.ref_alone {
                return true;
            }
        }
        if let Some(mut ts) = declared_types(schema) {
            let nullable = o.at("nullable") == true;
            if !(ts.any(|t| type_matches(t, v)) || nullable && v.is_null()) {
                return false;
            }
        }
        if let Some(c) = o.field("const") {
            if !json_eq(c, v) {
                return false;
            }
        }
        if let Some(e) = o.field("enum").and_then(Value::as_array) {
            if !e.iter().any(|x| json_eq(x, v)) {
                return false;
            }
        }
        for part in o
            .field("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if !self.check(part, v, hops + 1) {
                return false;
            }
        }
        if let Some(alts) = o.field("anyOf").and_then(Value::as_array) {
            if !alts.iter().any(|a| self.check(a, v, hops + 1)) {
                return false;
            }
        }
        if let Some(alts) = o.field("oneOf").and_then(Value::as_array) {
            if alts.iter().filter(|a| self.check(a, v, hops + 1)).count() != 1 {
                return false;
            }
        }
        if let Some(not) = o.field("not") {
            if self.check(not, v, hops + 1) {
                return false;
            }
        }
        if let Some(cond) = o.field("if") {
            let branch = if self.check(cond, v, hops + 1) {
                o.field("then")
            } else {
                o.field("else")
            };
            if branch.is_some_and(|b| !self.check(b, v, hops + 1)) {
                return false;
            }
        }
        match v {
            Value::Object(m) => self.object(o, m, hops),
            Value::Array(a) => self.array(o, a, hops),
            Value::String(s) => string_ok(o, s),
            Value::Number(_) => number_ok(o, v),
            _ => true,
        }
    }

    fn object(&mut self, o: &Map<String, Value>, m: &Map<String, Value>, hops: usize) -> bool {
        let required = o.field("required").and_then(Value::as_array);
        if required
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .any(|r| m.field(r).is_none())
        {
            return false;
        }
        let count = |k: &str| o.field(k).and_then(count);
        if count("minProperties").is_some_and(|n| (m.len() as u64) < n)
            || count("maxProperties").is_some_and(|n| (m.len() as u64) > n)
        {
            return false;
        }
        let props = o.field("properties").and_then(Value::as_object);
        let patterns: Vec<(regex_lite::Regex, &Value)> = o
            .field("patternProperties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(p, s)| regex_lite::Regex::new(p).ok().map(|r| (r, s)))
            .collect();
        for (k, v) in m {
            let mut known = false;
            if let Some(s) = props.and_then(|p| p.field(k)) {
                known = true;
                if !self.check(s, v, hops + 1) {
                    return false;
                }
            }
            for (r, s) in &patterns {
                if r.is_match(k) {
                    known = true;
                    if !self.check(s, v, hops + 1) {
                        return false;
                    }
                }
            }
            if !known {
                if let Some(extra) = o.field("additionalProperties") {
                    if !self.check(extra, v, hops + 1) {
                        return false;
                    }
                }
            }
            if let Some(names) = o.field("propertyNames") {
                if !self.check(names, &Value::String(k.clone()), hops + 1) {
                    return false;
                }
            }
        }
        // A present key's dependencies: names that must be there too (`dependentRequired`,
        // draft 7's `dependencies` list), or a schema the whole object must meet.
        for key in ["dependentRequired", "dependentSchemas", "dependencies"] {
            for (k, dep) in o
                .field(key)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
            {
                if m.field(k).is_none() {
                    continue;
                }
                let met = match dep {
                    Value::Array(names) => names
                        .iter()
                        .filter_map(Value::as_str)
                        .all(|n| m.field(n).is_some()),
                    schema => self.check(schema, &Value::Object(m.clone()), hops + 1),
                };
                if !met {
                    return false;
                }
            }
        }
        true
    }

    fn array(&mut self, o: &Map<String, Value>, a: &[Value], hops: usize) -> bool {
        let count = |k: &str| o.field(k).and_then(count);
        if count("minItems").is_some_and(|n| (a.len() as u64) < n)
            || count("maxItems").is_some_and(|n| (a.len() as u64) > n)
        {
            return false;
        }
        let tuple = o
            .field("prefixItems")
            .and_then(Value::as_array)
            .or_else(|| o.field("items").and_then(Value::as_array));
        let rest = o
            .field("items")
            .filter(|i| !i.is_array())
            .or_else(|| o.field("additionalItems"));
        for (i, v) in a.iter().enumerate() {
            let s = match tuple {
                Some(t) if i < t.len() => Some(&t[i]),
                Some(_) if o.field("prefixItems").is_some() => {
                    o.field("items").filter(|i| !i.is_array())
                }
                Some(_) => o.field("additionalItems"),
                None => rest,
            };
            if let Some(s) = s {
                if !self.check(s, v, hops + 1) {
                    return false;
                }
            }
        }
        if o.at("uniqueItems") == true {
            for (i, x) in a.iter().enumerate() {
                if a[..i].iter().any(|y| json_eq(x, y)) {
                    return false;
                }
            }
        }
        if let Some(wanted) = o.field("contains") {
            let found = a.iter().filter(|x| self.check(wanted, x, hops + 1)).count() as u64;
            let least = count("minContains").unwrap_or(1);
            let most = count("maxContains").unwrap_or(u64::MAX);
            if found < least || found > most {
                return false;
            }
        }
        true
    }
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "string" => v.is_string(),
        "integer" => {
            v.as_i64().is_some()
                || v.as_u64().is_some()
                || v.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "null" => v.is_null(),
        _ => true,
    }
}

/// JSON equality, numbers by value (`1` equals `1.0`).
fn json_eq(a: &Value, b: &Value) -> bool {
    crate::json::equal_with(a, b, |x, y| x.as_f64() == y.as_f64())
}

fn string_ok(o: &Map<String, Value>, s: &str) -> bool {
    let len = || s.chars().count() as u64;
    let count = |k: &str| o.field(k).and_then(count);
    if count("minLength").is_some_and(|n| len() < n)
        || count("maxLength").is_some_and(|n| len() > n)
    {
        return false;
    }
    o.field("pattern")
        .and_then(Value::as_str)
        .and_then(|p| regex_lite::Regex::new(p).ok())
        .is_none_or(|r| r.is_match(s))
}

fn number_ok(o: &Map<String, Value>, v: &Value) -> bool {
    let Some(x) = v.as_f64() else { return true };
    let num = |k: &str| o.field(k).and_then(Value::as_f64);
    let flag = |k: &str| o.at(k) == true;
    if let Some(m) = num("minimum") {
        if x < m || (flag("exclusiveMinimum") && x <= m) {
            return false;
        }
    }
    if let Some(m) = num("maximum") {
        if x > m || (flag("exclusiveMaximum") && x >= m) {
            return false;
        }
    }
    if num("exclusiveMinimum").is_some_and(|m| x <= m)
        || num("exclusiveMaximum").is_some_and(|m| x >= m)
    {
        return false;
    }
    if let Some(m) = num("multipleOf").filter(|m| *m > 0.0) {
        let q = x / m;
        if (q - q.round()).abs() > 1e-9 {
            return false;
        }
    }
    true
}
#[cfg(test)]
mod tests;
