//! `--notify-webhook URL`: the run's summary as one JSON POST.

use anyhow::Context;
use ureq::http::Uri;

use super::summary::Summary;

/// A webhook's URL, checked.
#[derive(Debug, Clone)]
pub struct Webhook {
    url: String,
    /// `scheme://host[:port]`: what warnings name (a path may hold a token).
    target: String,
}

impl Webhook {
    /// `url` as an http:// or https:// URL with a host; refused (exit 2) otherwise.
    pub fn parse(url: &str) -> anyhow::Result<Webhook> {
        let refused = |why: &str| crate::failure::Refused::flag("--notify-webhook", why);
        let uri: Uri = url
            .parse()
            .map_err(|_| refused(": not a URL (http://HOST/PATH or https://HOST/PATH)"))?;
        let scheme = uri.scheme_str().unwrap_or_default();
        if !matches!(scheme, "http" | "https") {
            return Err(refused(": expected an http:// or https:// URL").into());
        }
        let Some(authority) = uri.authority() else {
            return Err(refused(": the URL names no host").into());
        };
        if authority.as_str().contains('@') {
            return Err(refused(": a login in the URL is not sent; leave it out").into());
        }
        let default = if scheme == "https" { 443 } else { 80 };
        super::port(authority, default, &|why| refused(&why).into())?;
        Ok(Webhook {
            url: url.to_string(),
            target: format!("webhook {scheme}://{authority}"),
        })
    }

    /// What a warning names: the webhook's scheme, host and port.
    pub fn target(&self) -> String {
        self.target.clone()
    }

    /// POSTs `s` as JSON; any answer but a success (2xx) is an error. A redirect is not
    /// followed: a client follows a 301, 302 or 303 with a GET that carries no summary, and
    /// the notice would be called sent.
    pub fn post(&self, s: &Summary) -> anyhow::Result<()> {
        let body = serde_json::to_vec(s).context("the summary as JSON")?;
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(super::timeout()))
            .max_redirects(0)
            .user_agent(format!("trawl/{}", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        let answer = agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .send(&body[..])?;
        let status = answer.status();
        if !status.is_success() {
            anyhow::bail!(
                "http status: {}{}",
                status.as_u16(),
                if status.is_redirection() {
                    " (a redirect, not followed: give the URL it names)"
                } else {
                    ""
                }
            );
        }
        Ok(())
    }
}
