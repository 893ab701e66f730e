//! `trawl audit --notify-*`: one notice a run, the run's summary sent by mail and/or to a
//! webhook after the outputs are written. A notice that cannot be sent is a warning: the
//! audit's result, its exit code and the catalog stay as they were.

use trawl_catalog::{AuditReport, Catalog};
use trawl_report::AuditHead;

use crate::flags::lowargs::NotifyArgs;

#[cfg(feature = "notify")]
mod mail;
#[cfg(feature = "notify")]
mod summary;
#[cfg(feature = "notify")]
mod webhook;

/// How long one notice may take (connecting, the TLS handshake, the exchange) before it is
/// given up with a warning.
#[cfg(feature = "notify")]
const TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Where a run's notice goes, and when; checked before the audit starts.
#[cfg(feature = "notify")]
#[derive(Debug)]
pub struct Notify {
    always: bool,
    webhook: Option<webhook::Webhook>,
    mail: Option<mail::Mail>,
}

#[cfg(feature = "notify")]
impl Notify {
    /// The flags' targets, the mail server's settings read from the environment; None when
    /// no target is named. A malformed URL, address or setting is refused (exit 2) here,
    /// before the audit reads anything.
    pub fn from_args(a: &NotifyArgs) -> anyhow::Result<Option<Notify>> {
        if a.given().is_empty() {
            return no_target(a);
        }
        let webhook = a.notify_webhook.as_deref();
        let webhook = webhook.map(webhook::Webhook::parse).transpose()?;
        let mail = if a.notify_mail.is_empty() {
            None
        } else {
            Some(mail::Mail::from_env(&a.notify_mail, &|k| {
                std::env::var_os(k)
            })?)
        };
        let always = a.notify == Some(crate::flags::lowargs::NotifyWhen::Always);
        Ok(Some(Notify {
            always,
            webhook,
            mail,
        }))
    }

    /// Sends the run's notice, if its `--notify` condition holds; `code`: the audit's exit
    /// code. Whatever cannot be sent is said as a warning naming the target.
    pub fn send(&self, cat: &Catalog, report: &AuditReport, head: &AuditHead, code: u8) {
        let s = match summary::Summary::of(cat, report, head, code) {
            Ok(s) => s,
            Err(e) => {
                return crate::messages::warning(format_args!("notice not sent: {e}"));
            }
        };
        if !(self.always || s.problem) {
            return;
        }
        let said = |target: String, r: anyhow::Result<()>| {
            if let Err(e) = r {
                crate::messages::warning(format_args!("{target}: notice not sent: {e}"));
            }
        };
        if let Some(w) = &self.webhook {
            said(w.target(), w.post(&s));
        }
        if let Some(m) = &self.mail {
            said(m.target(), m.send(&s));
        }
    }
}

/// A build without notices: no `Notify` can be made, and naming a target is refused.
#[cfg(not(feature = "notify"))]
#[derive(Debug)]
pub enum Notify {}

#[cfg(not(feature = "notify"))]
impl Notify {
    /// Refuses `--notify-webhook` and `--notify-mail` with one line naming the build that
    /// sends notices (exit 2).
    pub fn from_args(a: &NotifyArgs) -> anyhow::Result<Option<Notify>> {
        match a.given().first() {
            Some(flag) => Err(crate::failure::Refused::flag(
                flag,
                ": this trawl was built without notices: build it with \
                 `cargo build --release --features notify` (docs/commands/audit.md)",
            )
            .into()),
            None => no_target(a),
        }
    }

    /// Never called: no `Notify` exists in this build.
    pub fn send(&self, _: &Catalog, _: &AuditReport, _: &AuditHead, _: u8) {
        match *self {}
    }
}

/// `--notify` without a target is refused; nothing named, nothing to send.
fn no_target(a: &NotifyArgs) -> anyhow::Result<Option<Notify>> {
    if a.notify.is_some() {
        return Err(crate::failure::Refused::flag(
            "--notify",
            ": names no target: add --notify-webhook URL or --notify-mail ADDRESS",
        )
        .into());
    }
    Ok(None)
}
