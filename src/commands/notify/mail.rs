//! `--notify-mail ADDRESS`: the run's summary as one mail over SMTP. The server and its login
//! come from the environment only (never the command line) and are never printed:
//!
//! - `TRAWL_SMTP_URL`: `smtp://HOST[:PORT]` (STARTTLS required, port 587 by default),
//!   `smtps://HOST[:PORT]` (TLS from the start, 465), `smtp://HOST[:PORT]?tls=none` (no
//!   TLS, 25: a relay on this machine or a trusted network; no password is sent over it);
//! - `TRAWL_SMTP_USER` and `TRAWL_SMTP_PASSWORD`: the login, both or neither;
//! - `TRAWL_MAIL_FROM`: the sender's address.

use std::ffi::OsString;

use lettre::message::{Mailbox, header::ContentType};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{Message, SmtpTransport, Transport};

use super::summary::Summary;

/// How the connection is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Security {
    Starttls,
    Tls,
    Plain,
}

/// The mail server, its login, the sender and the recipients.
#[derive(Clone)]
pub struct Mail {
    host: String,
    port: u16,
    security: Security,
    login: Option<(String, String)>,
    from: Mailbox,
    to: Vec<Mailbox>,
}

impl std::fmt::Debug for Mail {
    /// Everything but the login.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mail")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("security", &self.security)
            .field("from", &self.from)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

/// A refusal about the environment variable `var` (exit 2).
fn refused(var: &str, why: &str) -> anyhow::Error {
    crate::failure::Refused::text(format!("--notify-mail: {var}{why}")).into()
}

impl Mail {
    /// The recipients `to`, the rest read by `env` (the process's environment).
    pub fn from_env(to: &[String], env: &dyn Fn(&str) -> Option<OsString>) -> anyhow::Result<Mail> {
        let var = |k: &str| -> anyhow::Result<Option<String>> {
            match env(k) {
                None => Ok(None),
                Some(v) => v
                    .into_string()
                    .map(Some)
                    .map_err(|_| refused(k, ": not UTF-8")),
            }
        };
        let url = var("TRAWL_SMTP_URL")?.ok_or_else(|| {
            refused(
                "TRAWL_SMTP_URL",
                " is not set: the mail server, e.g. smtp://HOST:587",
            )
        })?;
        let (host, port, security) = server(&url)?;
        let login = match (var("TRAWL_SMTP_USER")?, var("TRAWL_SMTP_PASSWORD")?) {
            // An empty one is a setting gone wrong (a variable exported from nothing), not a
            // login: sent, it fails at the server, or logs in as nobody.
            (Some(u), _) if u.is_empty() => {
                return Err(refused("TRAWL_SMTP_USER", " is empty: a login or unset"));
            }
            (_, Some(p)) if p.is_empty() => {
                return Err(refused(
                    "TRAWL_SMTP_PASSWORD",
                    " is empty: a password or unset",
                ));
            }
            (Some(u), Some(p)) => Some((u, p)),
            (None, None) => None,
            _ => {
                return Err(refused(
                    "TRAWL_SMTP_USER",
                    " and TRAWL_SMTP_PASSWORD go together",
                ));
            }
        };
        if login.is_some() && security == Security::Plain {
            return Err(refused(
                "TRAWL_SMTP_URL",
                ": tls=none sends no password in clear",
            ));
        }
        let from = var("TRAWL_MAIL_FROM")?
            .ok_or_else(|| refused("TRAWL_MAIL_FROM", " is not set: the sender's address"))?;
        let from = from
            .parse()
            .map_err(|_| refused("TRAWL_MAIL_FROM", &format!(" '{from}': not a mail address")))?;
        let to = to
            .iter()
            .map(|a| {
                a.parse().map_err(|_| {
                    crate::failure::Refused::flag(
                        "--notify-mail",
                        format!(" '{a}': not a mail address"),
                    )
                    .into()
                })
            })
            .collect::<anyhow::Result<_>>()?;
        Ok(Mail {
            host,
            port,
            security,
            login,
            from,
            to,
        })
    }

    /// What a warning names: the server (never its login).
    pub fn target(&self) -> String {
        format!("mail server {}:{}", self.host, self.port)
    }

    /// Sends `s` as one message to every recipient.
    pub fn send(&self, s: &Summary) -> anyhow::Result<()> {
        let mut m = Message::builder().from(self.from.clone());
        for to in &self.to {
            m = m.to(to.clone());
        }
        let m = m
            .subject(s.subject())
            .header(ContentType::TEXT_PLAIN)
            .body(s.text())?;
        let b = match self.security {
            Security::Starttls => SmtpTransport::starttls_relay(&self.host)?,
            Security::Tls => SmtpTransport::relay(&self.host)?,
            Security::Plain => SmtpTransport::builder_dangerous(&self.host),
        };
        let mut b = b.port(self.port).timeout(Some(super::timeout()));
        if let Some((u, p)) = &self.login {
            b = b.credentials(Credentials::new(u.clone(), p.clone()));
        }
        b.build().send(&m)?;
        Ok(())
    }
}

/// `TRAWL_SMTP_URL`'s host, port and security.
fn server(url: &str) -> anyhow::Result<(String, u16, Security)> {
    let bad = |why: &str| refused("TRAWL_SMTP_URL", why);
    let uri: ureq::http::Uri = url
        .parse()
        .map_err(|_| bad(": not a URL (smtp://HOST:PORT or smtps://HOST:PORT)"))?;
    let plain = match uri.query() {
        None => false,
        Some("tls=none") => true,
        Some(_) => return Err(bad(": the only setting is ?tls=none")),
    };
    let (security, port) = match (uri.scheme_str(), plain) {
        (Some("smtp"), false) => (Security::Starttls, 587),
        (Some("smtp"), true) => (Security::Plain, 25),
        (Some("smtps"), false) => (Security::Tls, 465),
        _ => return Err(bad(": expected smtp://HOST[:PORT] or smtps://HOST[:PORT]")),
    };
    let Some(a) = uri.authority() else {
        return Err(bad(": names no host"));
    };
    if a.as_str().contains('@') {
        return Err(bad(
            ": the login goes in TRAWL_SMTP_USER and TRAWL_SMTP_PASSWORD",
        ));
    }
    if !matches!(uri.path(), "" | "/") {
        return Err(bad(": a server's URL has no path"));
    }
    let port = super::port(a, port, &|why| bad(&why))?;
    let host = a.host().trim_start_matches('[').trim_end_matches(']');
    Ok((host.to_string(), port, security))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let v: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| v.iter().find(|(n, _)| n == k).map(|(_, x)| x.into())
    }

    const FROM: (&str, &str) = ("TRAWL_MAIL_FROM", "trawl@example.org");

    /// The URL's scheme and query choose the security and the default port.
    #[test]
    fn the_url_chooses_tls_and_port() {
        let to = ["ops@example.org".to_string()];
        let of = |u: &str| {
            let m = Mail::from_env(&to, &env(&[("TRAWL_SMTP_URL", u), FROM])).unwrap();
            (m.host, m.port, m.security)
        };
        assert_eq!(
            of("smtp://mx.example.org"),
            ("mx.example.org".into(), 587, Security::Starttls)
        );
        assert_eq!(
            of("smtps://mx.example.org"),
            ("mx.example.org".into(), 465, Security::Tls)
        );
        assert_eq!(
            of("smtp://127.0.0.1:2525?tls=none"),
            ("127.0.0.1".into(), 2525, Security::Plain)
        );
        assert_eq!(
            of("smtp://[::1]:26?tls=none"),
            ("::1".into(), 26, Security::Plain)
        );
    }

    /// A missing or malformed setting is refused, and the refusal never shows a password.
    #[test]
    fn bad_settings_are_refused_without_the_password() {
        let to = ["ops@example.org".to_string()];
        let err = |vars: &[(&str, &str)]| Mail::from_env(&to, &env(vars)).unwrap_err().to_string();
        let url = ("TRAWL_SMTP_URL", "smtp://mx.example.org");
        assert!(err(&[FROM]).contains("TRAWL_SMTP_URL is not set"));
        assert!(err(&[url]).contains("TRAWL_MAIL_FROM is not set"));
        assert!(err(&[("TRAWL_SMTP_URL", "http://mx"), FROM]).contains("expected smtp://"));
        assert!(err(&[("TRAWL_SMTP_URL", "smtp://u:s3cret@mx"), FROM]).contains("TRAWL_SMTP_USER"));
        let p = ("TRAWL_SMTP_PASSWORD", "s3cret");
        assert!(err(&[url, FROM, p]).contains("go together"));
        let plain = ("TRAWL_SMTP_URL", "smtp://mx?tls=none");
        let e = err(&[plain, FROM, ("TRAWL_SMTP_USER", "u"), p]);
        assert!(e.contains("tls=none") && !e.contains("s3cret"), "{e}");
        let e = err(&[url, FROM, ("TRAWL_SMTP_USER", ""), p]);
        assert!(e.contains("TRAWL_SMTP_USER is empty"), "{e}");
        let e = err(&[
            url,
            FROM,
            ("TRAWL_SMTP_USER", "u"),
            ("TRAWL_SMTP_PASSWORD", ""),
        ]);
        assert!(e.contains("TRAWL_SMTP_PASSWORD is empty"), "{e}");
        let m = Mail::from_env(&to, &env(&[url, FROM, ("TRAWL_SMTP_USER", "u"), p])).unwrap();
        assert!(!format!("{m:?}").contains("s3cret"));
        let bad_to = Mail::from_env(&["nobody".into()], &env(&[url, FROM])).unwrap_err();
        assert!(bad_to.to_string().contains("not a mail address"));
    }
}
