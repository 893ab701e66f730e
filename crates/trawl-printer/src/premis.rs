//! A catalog's fixity record as PREMIS 3.0, streamed: XML (one `premis` document: the
//! registered files as `object`s, then the checks as `event`s, then trawl as their `agent`) or
//! JSON Lines (one object per event, its facts under the names of the XML's elements).
//!
//! Every text taken from a path or a message goes through [`premis_text`], so that any name a
//! file system holds gives well-formed XML and valid JSON, the same string in both.

use std::io::{self, Write};

use serde_json::json;
use trawl_report::{FixityCheck, FixityObject};

/// The two layouts of `catalog export --format premis|premis-jsonl`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PremisFormat {
    /// One XML document, valid against the PREMIS 3.0 schema.
    Xml,
    /// One JSON object per event, a line each.
    JsonLines,
}

/// The Library of Congress's preservation vocabularies, where the terms below come from.
const LOC: &str = "http://id.loc.gov/vocabulary/preservation";

/// `bytes` as PREMIS text: UTF-8 as it is, except `%`, the control characters (U+0000 to
/// U+001F and U+007F), U+FFFE and U+FFFF (which XML 1.0 cannot hold, or which a reader would
/// change: a carriage return), and each byte that is not part of valid UTF-8: those are written
/// `%XX`, one per byte, upper-case. Decoding every `%XX` gives back the bytes exactly.
pub fn premis_text(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    let escape = |out: &mut String, b: &[u8]| {
        for x in b {
            out.push_str(&format!("%{x:02X}"));
        }
    };
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if c == '%' || c < ' ' || c == '\u{7f}' || c == '\u{fffe}' || c == '\u{ffff}' {
                escape(&mut out, c.encode_utf8(&mut [0; 4]).as_bytes());
            } else {
                out.push(c);
            }
        }
        escape(&mut out, chunk.invalid());
    }
    out
}

/// `s` with XML's markup characters as entities (for text and attribute values).
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A path's identifier type: an object store's key is a URI, any other a local path.
fn identifier_type(path: &[u8]) -> &'static str {
    if path.starts_with(b"s3://") {
        "URI"
    } else {
        "local path"
    }
}

/// An algorithm's name and code in the Library of Congress's cryptographicHashFunctions
/// vocabulary, where it has one.
fn loc_algorithm(name: &str) -> Option<(&'static str, &'static str)> {
    Some(match name {
        "md5" => ("MD5", "md5"),
        "sha1" => ("SHA-1", "sha1"),
        "sha256" => ("SHA-256", "sha256"),
        "sha384" => ("SHA-384", "sha384"),
        "sha512" => ("SHA-512", "sha512"),
        "crc32" => ("CRC32", "crc32"),
        _ => return None,
    })
}

/// The PREMIS event a verdict is, by the vocabularies' terms: its type and outcome, each with
/// its code. A new file's digests are calculated, not checked; a change that is no damage
/// (modified: a new version), or a check that could not compare, is a warning.
fn event_terms(verdict: &str) -> [(&'static str, &'static str); 2] {
    let fixity = ("fixity check", "fix");
    let (ok, failed, warned) = (("success", "suc"), ("failure", "fai"), ("warning", "war"));
    match verdict {
        "new" => [("message digest calculation", "mes"), ok],
        "ok" | "restored" | "moved" => [fixity, ok],
        "corrupt" | "missing" | "unreadable" => [fixity, failed],
        _ => [fixity, warned],
    }
}

/// One event's facts, as both layouts write them.
struct Event {
    id: String,
    kind: (&'static str, &'static str),
    outcome: (&'static str, &'static str),
    time: String,
    detail: String,
    notes: Vec<String>,
    object: String,
    object_type: &'static str,
}

impl Event {
    fn of(c: &FixityCheck<'_>) -> Event {
        let [kind, outcome] = event_terms(c.verdict);
        let object = premis_text(c.path);
        // RFC 3339 ends at 9999-12-31T23:59:59Z: a later time (a catalog's clock gone wrong)
        // is written as that, never a failure.
        let secs = c.time.clamp(0, 253_402_300_799) as u64;
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        let mut notes = vec![premis_text(c.verdict.as_bytes())];
        notes.extend(c.detail.map(|d| premis_text(d.as_bytes())));
        Event {
            id: format!("trawl run {}: {object}", c.run),
            kind,
            outcome,
            time: humantime::format_rfc3339_seconds(t).to_string(),
            detail: format!(
                "trawl audit run {} ({})",
                c.run,
                premis_text(c.mode.as_bytes())
            ),
            notes,
            object_type: identifier_type(c.path),
            object,
        }
    }
}

/// Writes a fixity record as it streams by: [`PremisWriter::begin`], every object, every
/// event, then [`PremisWriter::finish`] (in that order: the XML schema wants objects first).
pub struct PremisWriter<W: Write> {
    out: W,
    format: PremisFormat,
    /// The agent's identifier, `trawl VERSION`.
    agent: String,
    version: String,
}

impl<W: Write> PremisWriter<W> {
    /// Starts the record (the XML document's opening); `version`: trawl's, the agent's.
    pub fn begin(mut out: W, format: PremisFormat, version: &str) -> io::Result<Self> {
        if format == PremisFormat::Xml {
            out.write_all(
                b"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
                  <premis:premis xmlns:premis=\"http://www.loc.gov/premis/v3\" \
                  xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
                  xsi:schemaLocation=\"http://www.loc.gov/premis/v3 \
                  https://www.loc.gov/standards/premis/v3/premis.xsd\" version=\"3.0\">\n",
            )?;
        }
        Ok(PremisWriter {
            out,
            format,
            agent: format!("trawl {version}"),
            version: version.to_string(),
        })
    }

    /// A registered file, with its size and digests (written in XML only: the JSON Lines
    /// hold the events).
    pub fn object(&mut self, o: &FixityObject<'_>) -> io::Result<()> {
        if self.format != PremisFormat::Xml {
            return Ok(());
        }
        let mut s = String::from("  <premis:object xsi:type=\"premis:file\">\n");
        s += &format!(
            "    <premis:objectIdentifier><premis:objectIdentifierType>{}</premis:objectIdentifierType>\
             <premis:objectIdentifierValue>{}</premis:objectIdentifierValue></premis:objectIdentifier>\n",
            identifier_type(o.path),
            xml(&premis_text(o.path))
        );
        s += "    <premis:objectCharacteristics>\n";
        for (alg, digest) in o.digests {
            let algorithm = match loc_algorithm(alg) {
                Some((label, code)) => format!(
                    "<premis:messageDigestAlgorithm authority=\"cryptographicHashFunctions\" \
                     authorityURI=\"{LOC}/cryptographicHashFunctions\" \
                     valueURI=\"{LOC}/cryptographicHashFunctions/{code}\">{label}</premis:messageDigestAlgorithm>"
                ),
                None => {
                    format!("<premis:messageDigestAlgorithm>{alg}</premis:messageDigestAlgorithm>")
                }
            };
            s += &format!(
                "      <premis:fixity>{algorithm}<premis:messageDigest>{}</premis:messageDigest></premis:fixity>\n",
                hex(digest)
            );
        }
        s += &format!("      <premis:size>{}</premis:size>\n", o.size);
        s += "      <premis:format><premis:formatDesignation><premis:formatName>unknown</premis:formatName>\
              </premis:formatDesignation></premis:format>\n";
        s += "    </premis:objectCharacteristics>\n  </premis:object>\n";
        self.out.write_all(s.as_bytes())
    }

    /// A check of a file, as one event.
    pub fn event(&mut self, c: &FixityCheck<'_>) -> io::Result<()> {
        let e = Event::of(c);
        match self.format {
            PremisFormat::Xml => self.xml_event(&e),
            PremisFormat::JsonLines => {
                let line = json!({
                    "eventIdentifierType": "local",
                    "eventIdentifierValue": e.id,
                    "eventType": e.kind.0,
                    "eventTypeURI": format!("{LOC}/eventType/{}", e.kind.1),
                    "eventDateTime": e.time,
                    "eventDetail": e.detail,
                    "eventOutcome": e.outcome.0,
                    "eventOutcomeURI": format!("{LOC}/eventOutcome/{}", e.outcome.1),
                    "eventOutcomeDetailNote": e.notes,
                    "linkingAgentIdentifierType": "software",
                    "linkingAgentIdentifierValue": self.agent,
                    "linkingAgentRole": "executing program",
                    "linkingObjectIdentifierType": e.object_type,
                    "linkingObjectIdentifierValue": e.object,
                });
                serde_json::to_writer(&mut self.out, &line)?;
                self.out.write_all(b"\n")
            }
        }
    }

    fn xml_event(&mut self, e: &Event) -> io::Result<()> {
        let term = |name: &str, vocabulary: &str, (label, code): (&str, &str)| {
            format!(
                "<premis:{name} authority=\"{vocabulary}\" authorityURI=\"{LOC}/{vocabulary}\" \
                 valueURI=\"{LOC}/{vocabulary}/{code}\">{label}</premis:{name}>"
            )
        };
        let mut s = String::from("  <premis:event>\n");
        s += &format!(
            "    <premis:eventIdentifier><premis:eventIdentifierType>local</premis:eventIdentifierType>\
             <premis:eventIdentifierValue>{}</premis:eventIdentifierValue></premis:eventIdentifier>\n",
            xml(&e.id)
        );
        s += &format!("    {}\n", term("eventType", "eventType", e.kind));
        s += &format!(
            "    <premis:eventDateTime>{}</premis:eventDateTime>\n",
            e.time
        );
        s += &format!(
            "    <premis:eventDetailInformation><premis:eventDetail>{}</premis:eventDetail></premis:eventDetailInformation>\n",
            xml(&e.detail)
        );
        s += "    <premis:eventOutcomeInformation>\n";
        s += &format!(
            "      {}\n",
            term("eventOutcome", "eventOutcome", e.outcome)
        );
        for n in &e.notes {
            s += &format!(
                "      <premis:eventOutcomeDetail><premis:eventOutcomeDetailNote>{}</premis:eventOutcomeDetailNote></premis:eventOutcomeDetail>\n",
                xml(n)
            );
        }
        s += "    </premis:eventOutcomeInformation>\n";
        s += &format!(
            "    <premis:linkingAgentIdentifier><premis:linkingAgentIdentifierType>software</premis:linkingAgentIdentifierType>\
             <premis:linkingAgentIdentifierValue>{}</premis:linkingAgentIdentifierValue>\
             <premis:linkingAgentRole>executing program</premis:linkingAgentRole></premis:linkingAgentIdentifier>\n",
            xml(&self.agent)
        );
        s += &format!(
            "    <premis:linkingObjectIdentifier><premis:linkingObjectIdentifierType>{}</premis:linkingObjectIdentifierType>\
             <premis:linkingObjectIdentifierValue>{}</premis:linkingObjectIdentifierValue></premis:linkingObjectIdentifier>\n",
            e.object_type,
            xml(&e.object)
        );
        s += "  </premis:event>\n";
        self.out.write_all(s.as_bytes())
    }

    /// Ends the record (the agent, and the XML document's close) and gives back the output.
    pub fn finish(mut self) -> io::Result<W> {
        if self.format == PremisFormat::Xml {
            let s = format!(
                "  <premis:agent>\n    <premis:agentIdentifier><premis:agentIdentifierType>software</premis:agentIdentifierType>\
                 <premis:agentIdentifierValue>{}</premis:agentIdentifierValue></premis:agentIdentifier>\n\
                 \x20   <premis:agentName>trawl</premis:agentName>\n\
                 \x20   <premis:agentType authority=\"agentType\" authorityURI=\"{LOC}/agentType\" \
                 valueURI=\"{LOC}/agentType/sof\">software</premis:agentType>\n\
                 \x20   <premis:agentVersion>{}</premis:agentVersion>\n  </premis:agent>\n</premis:premis>\n",
                xml(&self.agent),
                xml(&self.version)
            );
            self.out.write_all(s.as_bytes())?;
        }
        self.out.flush()?;
        Ok(self.out)
    }
}

fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Text XML cannot hold, `%` itself and bytes that are not UTF-8 are `%XX`; the rest is
    /// kept, and decoding the `%XX` gives the bytes back.
    #[test]
    fn text_xml_cannot_hold_is_percent_encoded_and_decodes_back() {
        let cases: [(&[u8], &str); 6] = [
            (b"plain/caf\xc3\xa9.txt", "plain/caf\u{e9}.txt"),
            (b"new\nline\r\t", "new%0Aline%0D%09"),
            (b"100%", "100%25"),
            (b"bad\xffutf8", "bad%FFutf8"),
            (b"nul\x00del\x7f", "nul%00del%7F"),
            ("\u{fffe}<&>".as_bytes(), "%EF%BF%BE<&>"),
        ];
        for (raw, want) in cases {
            let got = premis_text(raw);
            assert_eq!(got, want);
            let mut back = Vec::new();
            let b = got.as_bytes();
            let mut i = 0;
            while i < b.len() {
                if b[i] == b'%' {
                    let h = std::str::from_utf8(&b[i + 1..i + 3]).unwrap();
                    back.push(u8::from_str_radix(h, 16).unwrap());
                    i += 3;
                } else {
                    back.push(b[i]);
                    i += 1;
                }
            }
            assert_eq!(back, raw);
        }
        assert_eq!(xml("a<b>&\"c\""), "a&lt;b&gt;&amp;&quot;c&quot;");
    }

    /// Each verdict is the event the vocabularies name: damage a failure, a new version or a
    /// check that could not compare a warning, a new file's digests a calculation.
    #[test]
    fn verdicts_map_to_event_types_and_outcomes() {
        assert_eq!(event_terms("corrupt")[1].0, "failure");
        assert_eq!(event_terms("missing")[1].0, "failure");
        assert_eq!(
            event_terms("ok"),
            [("fixity check", "fix"), ("success", "suc")]
        );
        assert_eq!(event_terms("moved")[1].0, "success");
        assert_eq!(event_terms("modified")[1].0, "warning");
        assert_eq!(event_terms("uncompared")[1].0, "warning");
        assert_eq!(event_terms("new")[0], ("message digest calculation", "mes"));
    }
}
