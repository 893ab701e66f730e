//! `--notify-webhook URL`: the run's summary as one JSON POST.

use anyhow::Context;
use ureq::http::Uri;

use super::summary::Summary;

/// A webhook's URL, checked.
#[derive(Debug)]
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
        Ok(Webhook {
            url: url.to_string(),
            target: format!("webhook {scheme}://{authority}"),
        })
    }

    /// What a warning names: the webhook's scheme, host and port.
    pub fn target(&self) -> String {
        self.target.clone()
    }

    /// POSTs `s` as JSON; a status of 400 or more is an error.
    pub fn post(&self, s: &Summary) -> anyhow::Result<()> {
        let body = serde_json::to_vec(s).context("the summary as JSON")?;
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(super::TIMEOUT))
            .user_agent(format!("trawl/{}", env!("CARGO_PKG_VERSION")))
            .build()
            .new_agent();
        agent
            .post(&self.url)
            .header("Content-Type", "application/json")
            .send(&body[..])?;
        Ok(())
    }
}
