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

/// [`TIMEOUT`], or in a debug build `TRAWL_TEST_NOTICE_TIMEOUT_MS` (tests only: a server that
/// never finishes is given up without waiting 30 s).
#[cfg(feature = "notify")]
fn timeout() -> std::time::Duration {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var("TRAWL_TEST_NOTICE_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return std::time::Duration::from_millis(ms);
    }
    TIMEOUT
}

/// A URL's port as `authority` spells it (after the host, a bracketed IPv6 one included):
/// `default` when it names none, refused (`bad` with the reason) unless 1 to 65535. A URL
/// parser takes `:70000`, `:-1` or `:abc` as no port at all, which would send the notice to
/// the scheme's port instead.
#[cfg(feature = "notify")]
fn port(
    authority: &ureq::http::uri::Authority,
    default: u16,
    bad: &dyn Fn(String) -> anyhow::Error,
) -> anyhow::Result<u16> {
    let a = authority.as_str();
    let after_host = a.rfind(']').map_or(a, |i| &a[i + 1..]);
    let Some(given) = after_host.rfind(':').map(|i| &after_host[i + 1..]) else {
        return Ok(default);
    };
    match given.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(bad(format!(": port '{given}': expected 1 to 65535"))),
    }
}

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
        // Each target is sent to on a thread of its own, and given up when it is not done in
        // time: a server can keep a connection alive for ever (an SMTP reply a line at a time
        // never lets a read time out), and the audit's result must not wait on it.
        let s = std::sync::Arc::new(s);
        let (tx, rx) = std::sync::mpsc::channel();
        let mut targets = Vec::new();
        let mut start = |target: String, send: Box<dyn FnOnce() -> anyhow::Result<()> + Send>| {
            let (tx, i) = (tx.clone(), targets.len());
            std::thread::spawn(move || tx.send((i, send())));
            targets.push(target);
        };
        if let Some(w) = &self.webhook {
            let (w, s) = (w.clone(), s.clone());
            start(w.target(), Box::new(move || w.post(&s)));
        }
        if let Some(m) = &self.mail {
            let (m, s) = (m.clone(), s.clone());
            start(m.target(), Box::new(move || m.send(&s)));
        }
        wait_for(&targets, &rx);
    }
}

/// Waits for the notices to `targets` (their results arrive on `rx` by index) until they are
/// done or [`timeout`] has passed; each that failed, and each not done by then, is a warning
/// naming its target.
#[cfg(feature = "notify")]
fn wait_for(targets: &[String], rx: &std::sync::mpsc::Receiver<(usize, anyhow::Result<()>)>) {
    let mut done = vec![false; targets.len()];
    let deadline = std::time::Instant::now() + timeout();
    while done.contains(&false) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok((i, r)) = rx.recv_timeout(left) else {
            break;
        };
        done[i] = true;
        if let Err(e) = r {
            let target = &targets[i];
            crate::messages::warning(format_args!("{target}: notice not sent: {e}"));
        }
    }
    for (target, _) in targets.iter().zip(&done).filter(|(_, d)| !**d) {
        crate::messages::warning(format_args!(
            "{target}: notice not sent: not done within {} s",
            timeout().as_secs_f64()
        ));
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
