//! AMF0, as FLV script tags (onMetaData) carry it: a bounded, non-recursive-overflow decoder.
//! Hostile input (lengths past the end, deep nesting) gives an error, never a panic or an
//! allocation larger than the input.

use serde::Serialize;

/// An AMF0 value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Value {
    /// A number (type 0), a double.
    Number(f64),
    /// A boolean (type 1).
    Bool(bool),
    /// A string (type 2, or 12 when long).
    String(String),
    /// An object (type 3): keys and values in order.
    Object(Vec<(String, Value)>),
    /// An ECMA array (type 8): keys and values, like an object (onMetaData is one).
    EcmaArray(Vec<(String, Value)>),
    /// A strict array (type 10).
    Array(Vec<Value>),
    /// Milliseconds since the epoch and a time-zone offset.
    Date(f64, i16),
    /// Null or undefined (types 5 and 6).
    Null,
}

impl Value {
    /// An object's or ECMA array's value for `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Object(kv) | Value::EcmaArray(kv) => {
                kv.iter().find(|(k, _)| k == key).map(|(_, v)| v)
            }
            _ => None,
        }
    }

    /// The number, when it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }
}

const MAX_DEPTH: usize = 32;

struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], String> {
        if self.b.len() - self.pos < n {
            return Err(format!("AMF0 value runs past the end at byte {}", self.pos));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<usize, String> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]) as usize)
    }

    fn u32(&mut self) -> Result<usize, String> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]) as usize)
    }

    fn string(&mut self, long: bool) -> Result<String, String> {
        let n = if long { self.u32()? } else { self.u16()? };
        Ok(String::from_utf8_lossy(self.take(n)?).into_owned())
    }

    fn pairs(&mut self, depth: usize) -> Result<Vec<(String, Value)>, String> {
        let mut kv = Vec::new();
        loop {
            let k = self.string(false)?;
            if k.is_empty() && self.b.get(self.pos) == Some(&9) {
                self.pos += 1;
                return Ok(kv);
            }
            let v = self.value(depth + 1)?;
            kv.push((k, v));
        }
    }

    fn value(&mut self, depth: usize) -> Result<Value, String> {
        if depth > MAX_DEPTH {
            return Err("AMF0 nesting deeper than 32".into());
        }
        match self.u8()? {
            0 => {
                let s = self.take(8)?;
                Ok(Value::Number(f64::from_be_bytes(
                    s.try_into().expect("8 bytes"),
                )))
            }
            1 => Ok(Value::Bool(self.u8()? != 0)),
            2 => Ok(Value::String(self.string(false)?)),
            3 => Ok(Value::Object(self.pairs(depth)?)),
            5 | 6 => Ok(Value::Null),
            8 => {
                let _count = self.u32()?; // a hint only; the end marker ends it
                Ok(Value::EcmaArray(self.pairs(depth)?))
            }
            10 => {
                let n = self.u32()?;
                // Each element takes at least one byte: a count beyond the input is hostile.
                if n > self.b.len() - self.pos {
                    return Err(format!("AMF0 array of {n} elements in a shorter payload"));
                }
                (0..n)
                    .map(|_| self.value(depth + 1))
                    .collect::<Result<Vec<_>, _>>()
                    .map(Value::Array)
            }
            11 => {
                let s = self.take(10)?;
                Ok(Value::Date(
                    f64::from_be_bytes(s[..8].try_into().expect("8 bytes")),
                    i16::from_be_bytes([s[8], s[9]]),
                ))
            }
            12 => Ok(Value::String(self.string(true)?)),
            t => Err(format!(
                "AMF0 type {t} not supported at byte {}",
                self.pos - 1
            )),
        }
    }
}

/// Decodes a script tag's payload: the name (e.g. `onMetaData`) and its value.
pub fn script_tag(payload: &[u8]) -> Result<(String, Value), String> {
    let mut r = Reader { b: payload, pos: 0 };
    let name = match r.value(0)? {
        Value::String(s) => s,
        _ => return Err("script tag does not start with a name".into()),
    };
    let v = r.value(0)?;
    Ok((name, v))
}

/// Appends the AMF0 encoding of `v`.
pub fn encode(v: &Value, out: &mut Vec<u8>) {
    fn key(k: &str, out: &mut Vec<u8>) {
        // Keys are short strings; a longer one is cut at 65535 bytes (on a char boundary).
        let mut n = k.len().min(u16::MAX as usize);
        while !k.is_char_boundary(n) {
            n -= 1;
        }
        out.extend_from_slice(&(n as u16).to_be_bytes());
        out.extend_from_slice(&k.as_bytes()[..n]);
    }
    fn pairs(kv: &[(String, Value)], out: &mut Vec<u8>) {
        for (k, v) in kv {
            key(k, out);
            encode(v, out);
        }
        out.extend_from_slice(&[0, 0, 9]);
    }
    match v {
        Value::Number(n) => {
            out.push(0);
            out.extend_from_slice(&n.to_be_bytes());
        }
        Value::Bool(b) => out.extend_from_slice(&[1, *b as u8]),
        Value::String(s) if s.len() <= u16::MAX as usize => {
            out.push(2);
            key(s, out);
        }
        Value::String(s) => {
            out.push(12);
            out.extend_from_slice(&(s.len() as u32).to_be_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        Value::Object(kv) => {
            out.push(3);
            pairs(kv, out);
        }
        Value::EcmaArray(kv) => {
            out.push(8);
            out.extend_from_slice(&(kv.len() as u32).to_be_bytes());
            pairs(kv, out);
        }
        Value::Array(items) => {
            out.push(10);
            out.extend_from_slice(&(items.len() as u32).to_be_bytes());
            for i in items {
                encode(i, out);
            }
        }
        Value::Date(ms, tz) => {
            out.push(11);
            out.extend_from_slice(&ms.to_be_bytes());
            out.extend_from_slice(&tz.to_be_bytes());
        }
        Value::Null => out.push(5),
    }
}

/// A script tag's payload: the name, then the value.
pub fn script_payload(name: &str, v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&Value::String(name.into()), &mut out);
    encode(v, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn meta(pairs: &[(&str, f64)]) -> Vec<u8> {
        let mut v = vec![2, 0, 10];
        v.extend_from_slice(b"onMetaData");
        v.push(8);
        v.extend_from_slice(&(pairs.len() as u32).to_be_bytes());
        for (k, n) in pairs {
            v.extend_from_slice(&(k.len() as u16).to_be_bytes());
            v.extend_from_slice(k.as_bytes());
            v.push(0);
            v.extend_from_slice(&n.to_be_bytes());
        }
        v.extend_from_slice(&[0, 0, 9]);
        v
    }

    #[test]
    fn decodes_onmetadata_and_refuses_hostile_input() {
        let (name, v) = script_tag(&meta(&[("duration", 12.5), ("width", 640.0)])).unwrap();
        assert_eq!(name, "onMetaData");
        assert_eq!(v.get("duration").and_then(Value::as_f64), Some(12.5));
        assert_eq!(v.get("width").and_then(Value::as_f64), Some(640.0));
        // Truncated, an absurd array count, deep nesting, an unknown type.
        let m = meta(&[("duration", 1.0)]);
        assert!(script_tag(&m[..m.len() - 5]).is_err());
        assert!(script_tag(&[2, 0, 1, b'x', 10, 0xff, 0xff, 0xff, 0xff]).is_err());
        let mut deep = vec![2, 0, 1, b'x'];
        for _ in 0..100 {
            deep.extend_from_slice(&[3, 0, 1, b'k']);
        }
        assert!(script_tag(&deep).unwrap_err().contains("deeper"));
        assert!(script_tag(&[2, 0, 1, b'x', 0x42]).is_err());
    }

    #[test]
    fn encoding_round_trips_every_type() {
        let v = Value::EcmaArray(vec![
            ("duration".into(), Value::Number(12.5)),
            ("stereo".into(), Value::Bool(true)),
            ("encoder".into(), Value::String("Lavf59".into())),
            ("long".into(), Value::String("x".repeat(70_000))),
            ("when".into(), Value::Date(1.7e12, -60)),
            ("none".into(), Value::Null),
            (
                "keyframes".into(),
                Value::Object(vec![
                    ("times".into(), Value::Array(vec![Value::Number(0.0)])),
                    ("filepositions".into(), Value::Array(vec![])),
                ]),
            ),
        ]);
        let bytes = script_payload("onMetaData", &v);
        assert_eq!(script_tag(&bytes).unwrap(), ("onMetaData".to_string(), v));
        // The hand-made encoding in `meta` decodes to the same value the encoder writes.
        let m = meta(&[("width", 640.0)]);
        let (_, decoded) = script_tag(&m).unwrap();
        assert_eq!(script_payload("onMetaData", &decoded), m);
    }
}
