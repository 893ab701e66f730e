//! Human-readable text made safe for a terminal: control characters (C0, DEL and C1, which
//! carry escape sequences that retitle a window, rewrite a line or worse) are shown as `ls -b`
//! shows them (`\n`, `\t`, `\033`, ...), so that a file name cannot act on the terminal it is
//! printed to, nor forge a line. Machine formats (JSON, manifests, CSV) keep their own escaping
//! and never pass through here.

use std::borrow::Cow;
use std::fmt::Write;

fn is_control(c: char) -> bool {
    c.is_control()
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\t' => out.push_str("\\t"),
        '\r' => out.push_str("\\r"),
        '\x07' => out.push_str("\\a"),
        '\x08' => out.push_str("\\b"),
        '\x0b' => out.push_str("\\v"),
        '\x0c' => out.push_str("\\f"),
        c => {
            let mut b = [0u8; 4];
            for byte in c.encode_utf8(&mut b).bytes() {
                let _ = write!(out, "\\{byte:03o}");
            }
        }
    }
}

/// `s` with every control character escaped where `keep` does not keep it (given the text and
/// the character's byte offset).
fn escape_with(s: &str, keep: impl Fn(&str, usize) -> bool) -> Cow<'_, str> {
    if !s.chars().any(is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (i, c) in s.char_indices() {
        if is_control(c) && !keep(s, i) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One line: every control character escaped, line breaks included.
pub fn terminal_line(s: &str) -> Cow<'_, str> {
    escape_with(s, |_, _| false)
}

/// Text of several lines: every control character escaped but its line breaks.
pub fn terminal_text(s: &str) -> Cow<'_, str> {
    escape_with(s, |s, i| s.as_bytes()[i] == b'\n')
}

/// A message: every control character escaped but a line break that starts an indented
/// continuation line (`\n  `), the way a message lists what it is about.
pub fn terminal_message(s: &str) -> Cow<'_, str> {
    escape_with(s, |s, i| s[i..].starts_with("\n  "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_shown_as_ls_b_shows_them() {
        assert_eq!(terminal_line("plain name"), "plain name");
        assert_eq!(terminal_line("a\x1b]0;pwned\x07b"), "a\\033]0;pwned\\ab");
        assert_eq!(terminal_line("x\ny\tz\r"), "x\\ny\\tz\\r");
        assert_eq!(terminal_line("csi\u{9b}31m"), "csi\\302\\23331m");
        assert_eq!(terminal_line("del\x7f"), "del\\177");
        assert_eq!(terminal_text("one\x1b[2J\ntwo\n"), "one\\033[2J\ntwo\n");
        assert_eq!(terminal_message("refused:\n  a\nb"), "refused:\n  a\\nb");
    }
}
