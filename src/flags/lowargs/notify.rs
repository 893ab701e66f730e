//! `trawl audit`'s notice flags: where one summary a run is sent, and when.

use clap::{Args, ValueEnum};

/// When a run sends its notice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NotifyWhen {
    /// Only a run that found a corrupt, missing, modified or unreadable file, or a failure.
    OnProblem,
    /// Every run that finishes.
    Always,
}

#[derive(Debug, Default, Args)]
pub struct NotifyArgs {
    /// POST the run's summary as JSON to URL (http:// or https://), one request a run.
    #[arg(long, value_name = "URL")]
    pub notify_webhook: Option<String>,
    /// Mail the run's summary to ADDRESS (repeatable), one message a run. The server and its
    /// login come from the environment: TRAWL_SMTP_URL, TRAWL_SMTP_USER,
    /// TRAWL_SMTP_PASSWORD, TRAWL_MAIL_FROM.
    #[arg(long, value_name = "ADDRESS")]
    pub notify_mail: Vec<String>,
    /// When to send the notice (default on-problem); needs --notify-webhook or --notify-mail.
    #[arg(long, value_enum, value_name = "WHEN")]
    pub notify: Option<NotifyWhen>,
}

impl NotifyArgs {
    /// The flags that name a target, as the command line spells them.
    pub fn given(&self) -> Vec<&'static str> {
        let mut f = Vec::new();
        if self.notify_webhook.is_some() {
            f.push("--notify-webhook");
        }
        if !self.notify_mail.is_empty() {
            f.push("--notify-mail");
        }
        f
    }
}
