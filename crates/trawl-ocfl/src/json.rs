//! An inventory's JSON read into memory bounded by its size: every object and string is kept
//! (their names and values are what the checks read), but in an array only strings are kept
//! whole, with at most one element of any other kind (an inventory's arrays are lists of
//! paths, so a second number or list in one says nothing the first did not), and what is kept
//! is counted as it is built: past [`budget`] the parse stops. Written by hand because
//! `serde_json::Value` holds a 2-byte `0,` as a 32-byte value, so that a 50 MB array of zeros
//! would take 800 MB.

use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// What holding a value costs, as measured: an array's element (a 32-byte `Value`, and the
/// half as much again a growing `Vec` leaves spare on average), an object's entry (its key's
/// `String` and its value's `Value` in a tree node about half full), and a heap block (the
/// allocator's 32 bytes at least, else the length and 8 rounded up to 16).
const ELEMENT: usize = 48;
const ENTRY: usize = 112;
fn heap(len: usize) -> usize {
    ((len + 8).div_ceil(16) * 16).max(32)
}

/// The bytes of memory a parse of `len` bytes may hold: four times what it reads, and 16 MiB
/// whatever the size (a sound inventory takes about twice its size).
pub(crate) fn budget(len: usize) -> usize {
    len.saturating_mul(4).saturating_add(16 << 20)
}

/// Why the text was not read into a value.
#[derive(Debug)]
pub(crate) enum ParseError {
    /// Not JSON (or nested past serde_json's depth limit).
    Json(serde_json::Error),
    /// Holding it would take more than the budget.
    TooBig { budget: usize },
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParseError::Json(e) => write!(f, "not valid JSON ({e})"),
            ParseError::TooBig { budget } => write!(
                f,
                "holds more JSON values than an inventory of its size could use: holding them \
                 would take more than {} MiB (4 times its size, and 16 MiB); not read",
                budget >> 20
            ),
        }
    }
}

/// Parses `raw` as [the module](self) says.
pub(crate) fn parse(raw: &[u8]) -> Result<Value, ParseError> {
    let budget = budget(raw.len());
    let left = Cell::new(budget);
    let mut de = serde_json::Deserializer::from_slice(raw);
    let v = Bounded { left: &left }.deserialize(&mut de).map_err(|e| {
        if left.get() == 0 {
            ParseError::TooBig { budget }
        } else {
            ParseError::Json(e)
        }
    })?;
    de.end().map_err(ParseError::Json)?;
    Ok(v)
}

/// A value, its cost taken from `left`.
#[derive(Clone, Copy)]
struct Bounded<'a> {
    left: &'a Cell<usize>,
}

impl Bounded<'_> {
    fn charge<E: serde::de::Error>(&self, bytes: usize) -> Result<(), E> {
        match self.left.get().checked_sub(bytes) {
            Some(l) => {
                self.left.set(l);
                Ok(())
            }
            None => {
                self.left.set(0);
                Err(E::custom("over the memory budget"))
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Bounded<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Bounded<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        self.charge(heap(v.len()))?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        self.charge(heap(v.len()))?;
        Ok(Value::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        let mut other_kept = false;
        while let Some(e) = seq.next_element_seed(Element {
            value: self,
            other_kept,
        })? {
            if let Some(v) = e {
                self.charge(ELEMENT)?;
                other_kept |= !v.is_string();
                out.push(v);
            }
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            self.charge(ENTRY + heap(k.len()))?;
            let v = map.next_value_seed(self)?;
            out.insert(k, v);
        }
        Ok(Value::Object(out))
    }
}

/// An array's element: kept if it is a string, or the array's first of another kind; else
/// read past (`None`).
struct Element<'a> {
    value: Bounded<'a>,
    other_kept: bool,
}

impl<'de> DeserializeSeed<'de> for Element<'_> {
    type Value = Option<Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Element<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Option<Value>, E> {
        self.value.visit_str(v).map(Some)
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Option<Value>, E> {
        self.value.visit_string(v).map(Some)
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Option<Value>, E> {
        Ok((!self.other_kept).then_some(Value::Bool(v)))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Option<Value>, E> {
        Ok((!self.other_kept).then(|| Value::from(v)))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Option<Value>, E> {
        Ok((!self.other_kept).then(|| Value::from(v)))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Option<Value>, E> {
        if self.other_kept {
            return Ok(None);
        }
        self.value.visit_f64(v).map(Some)
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<Option<Value>, E> {
        Ok((!self.other_kept).then_some(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Value>, A::Error> {
        if self.other_kept {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            return Ok(None);
        }
        self.value.visit_seq(seq).map(Some)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        if self.other_kept {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            return Ok(None);
        }
        self.value.visit_map(map).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_checks_read_is_kept() {
        let raw = br#"{"id":"x","manifest":{"ab":["v1/content/a","v1/content/b"]},"n":[1,"s",[2],3,{"k":4}],"e":{}}"#;
        let v = parse(raw).unwrap();
        assert_eq!(v["id"], "x");
        assert_eq!(
            v["manifest"]["ab"],
            serde_json::json!(["v1/content/a", "v1/content/b"])
        );
        // Strings all kept, and the first element of another kind; the rest read past.
        assert_eq!(v["n"], serde_json::json!([1, "s"]));
        assert_eq!(v["e"], serde_json::json!({}));
    }

    #[test]
    fn an_array_of_numbers_costs_one_value() {
        let mut raw = b"{\"a\":[".to_vec();
        for _ in 0..100_000 {
            raw.extend_from_slice(b"0,");
        }
        raw.extend_from_slice(b"0]}");
        let v = parse(&raw).unwrap();
        assert_eq!(v["a"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn too_many_values_to_hold_are_refused_by_the_budget() {
        // 20 MB of empty objects under distinct keys: each costs more than 4 times its text.
        let mut raw = b"{".to_vec();
        let mut i = 0u64;
        while raw.len() < 20 << 20 {
            raw.extend_from_slice(format!("\"{i:x}\":{{}},").as_bytes());
            i += 1;
        }
        raw.extend_from_slice(b"\"end\":{}}");
        match parse(&raw) {
            Err(ParseError::TooBig { budget: b }) => assert_eq!(b, budget(raw.len())),
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse(b"{\"a\":"), Err(ParseError::Json(_))));
        assert!(matches!(parse(b"{} x"), Err(ParseError::Json(_))));
    }
}
