//! One field of an event's JSON form, without making the rest of it: an expectation's
//! `where` compares a field or two of every event of a kind, and the whole object
//! ([`serde_json::to_value`]) would build every other field only to drop it.
//!
//! The field is read through the event's own `Serialize`, so it is what the JSON form holds
//! by definition: the `kind` tag, renames and skipped empty fields included.

use super::Event;
use serde::ser::{self, Impossible, Serialize};
use serde_json::Value;

impl Event {
    /// The value at `key` of this event's JSON form (`None` where the form has no such key).
    pub fn field(&self, key: &str) -> Option<Value> {
        let mut pick = Pick { key, found: None };
        // An event that does not serialise as an object has no fields.
        self.serialize(&mut pick).ok()?;
        pick.found
    }
}

/// A serialiser that keeps one field of a struct and looks at nothing else.
struct Pick<'k> {
    key: &'k str,
    found: Option<Value>,
}

/// Not an object: no field to pick.
#[derive(Debug)]
struct NotAnObject;

impl std::fmt::Display for NotAnObject {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("not an object")
    }
}

impl std::error::Error for NotAnObject {}

impl ser::Error for NotAnObject {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Self
    }
}

impl ser::SerializeStruct for &mut Pick<'_> {
    type Ok = ();
    type Error = NotAnObject;

    fn serialize_field<T: ?Sized + Serialize>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), NotAnObject> {
        if key == self.key {
            self.found = Some(serde_json::to_value(value).map_err(|_| NotAnObject)?);
        }
        Ok(())
    }

    fn end(self) -> Result<(), NotAnObject> {
        Ok(())
    }
}

/// Every shape but a struct ends the look: an event is a struct tagged with its kind.
macro_rules! not_an_object {
    ($($name:ident($($arg:ty),*)),* $(,)?) => {
        $(fn $name(self, $(_: $arg),*) -> Result<(), NotAnObject> {
            Err(NotAnObject)
        })*
    };
}

impl<'p, 'k> ser::Serializer for &'p mut Pick<'k> {
    type Ok = ();
    type Error = NotAnObject;
    type SerializeSeq = Impossible<(), NotAnObject>;
    type SerializeTuple = Impossible<(), NotAnObject>;
    type SerializeTupleStruct = Impossible<(), NotAnObject>;
    type SerializeTupleVariant = Impossible<(), NotAnObject>;
    type SerializeMap = Impossible<(), NotAnObject>;
    type SerializeStruct = &'p mut Pick<'k>;
    type SerializeStructVariant = Impossible<(), NotAnObject>;

    not_an_object!(
        serialize_bool(bool),
        serialize_i8(i8),
        serialize_i16(i16),
        serialize_i32(i32),
        serialize_i64(i64),
        serialize_u8(u8),
        serialize_u16(u16),
        serialize_u32(u32),
        serialize_u64(u64),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_str(&str),
        serialize_bytes(&[u8]),
        serialize_none(),
        serialize_unit(),
        serialize_unit_struct(&'static str),
        serialize_unit_variant(&'static str, u32, &'static str),
    );

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), NotAnObject> {
        Err(NotAnObject)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotAnObject> {
        Err(NotAnObject)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotAnObject> {
        Err(NotAnObject)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, NotAnObject> {
        Err(NotAnObject)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, NotAnObject> {
        Err(NotAnObject)
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, NotAnObject> {
        Err(NotAnObject)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotAnObject> {
        Err(NotAnObject)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotAnObject> {
        Err(NotAnObject)
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, NotAnObject> {
        Ok(self)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotAnObject> {
        Err(NotAnObject)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Purpose;
    use crate::vocabulary::OutcomeKind;

    /// `field` against the definition: the key of the whole JSON object.
    fn agrees(e: &Event) {
        let whole = serde_json::to_value(e).unwrap();
        let object = whole.as_object().unwrap();
        for (k, v) in object {
            assert_eq!(e.field(k).as_ref(), Some(v), "{k} of {e:?}");
        }
        for absent in ["", "nope", "t_ms", "Kind"] {
            assert_eq!(e.field(absent), None, "{absent} of {e:?}");
        }
    }

    #[test]
    fn fields_are_those_of_the_json_form() {
        let events = [
            Event::Iteration { n: 3 },
            Event::Intervention {
                policy: "moltis-reflex".into(),
                stage: 2,
                action: "nudge".into(),
                tool: None,
            },
            Event::ModelRequest {
                purpose: Purpose::Turn,
                call: 1,
                messages: 4,
                tools: vec!["exec".to_owned()].into(),
                force_text: false,
                stripped: true,
            },
            Event::Outcome {
                outcome: OutcomeKind::Response,
                iterations: 2,
                text: Some("done \"quoted\"".into()),
                detail: None,
            },
        ];
        for e in &events {
            agrees(e);
        }
        assert_eq!(events[0].field("kind"), Some(Value::from("iteration")));
        // Skipped when empty, so absent, as in the JSON form.
        assert_eq!(events[1].field("tool"), None);
    }
}
