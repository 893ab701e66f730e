//! An audit's figures in the Prometheus text exposition format (version 0.0.4), as
//! node_exporter's textfile collector reads them: every family with its `# HELP` and `# TYPE`
//! lines, every sample labelled with the catalog's path, no timestamps. A figure not known is
//! left out, never written as 0.

use std::fmt::Write;

use trawl_report::AuditMetrics;

/// A label value as the format escapes it: backslash, double quote and line feed.
fn label_value(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Writes families into one text, each once.
struct Families {
    text: String,
    catalog: String,
}

impl Families {
    /// A gauge family of one sample (none when `value` is None).
    fn gauge(&mut self, name: &str, help: &str, value: Option<i128>) {
        if let Some(v) = value {
            self.family(name, help, &[(None, v)]);
        }
    }

    /// A gauge family of samples, each with its `verdict` label (or none).
    fn family(&mut self, name: &str, help: &str, samples: &[(Option<&str>, i128)]) {
        let t = &mut self.text;
        let _ = writeln!(t, "# HELP trawl_audit_{name} {help}");
        let _ = writeln!(t, "# TYPE trawl_audit_{name} gauge");
        for (verdict, v) in samples {
            let _ = write!(t, "trawl_audit_{name}{{catalog=\"{}\"", self.catalog);
            if let Some(verdict) = verdict {
                let _ = write!(t, ",verdict=\"{}\"", label_value(verdict));
            }
            let _ = writeln!(t, "}} {v}");
        }
    }
}

/// The figures of `m` as the text node_exporter's textfile collector reads: `trawl_audit_*`
/// gauges. `files_due` is written only when known (a policy says what is due).
pub fn metrics_text(m: &AuditMetrics) -> String {
    let mut f = Families {
        text: String::new(),
        catalog: label_value(&m.catalog),
    };
    let n = |v: Option<u64>| v.map(i128::from);
    let t = |v: Option<i64>| v.map(i128::from);
    f.gauge("run", "The audit run's number in the catalog.", t(m.run));
    f.gauge(
        "start_time_seconds",
        "When the audit run started, in seconds since the Unix epoch.",
        Some(m.started.into()),
    );
    f.gauge(
        "end_time_seconds",
        "When the audit run ended, in seconds since the Unix epoch.",
        t(m.finished),
    );
    f.gauge(
        "success",
        "1 if the audit run went to its end (whatever it found), 0 if it failed or was interrupted.",
        Some(m.success.into()),
    );
    f.gauge(
        "last_success_time_seconds",
        "When the catalog's last audit run that went to its end ended, in seconds since the Unix epoch.",
        t(m.last_success),
    );
    if !m.verdicts.is_empty() {
        let files: Vec<_> = m
            .verdicts
            .iter()
            .map(|v| (Some(v.verdict.as_str()), v.files.into()))
            .collect();
        f.family(
            "files",
            "Files given each verdict by the audit run.",
            &files,
        );
        let bytes: Vec<_> = m
            .verdicts
            .iter()
            .filter_map(|v| Some((Some(v.verdict.as_str()), v.bytes?.into())))
            .collect();
        f.family(
            "bytes",
            "Bytes of the files given each verdict by the audit run.",
            &bytes,
        );
    }
    f.gauge(
        "read_files",
        "Files whose content the audit run read.",
        n(m.files_read),
    );
    f.gauge("read_bytes", "Bytes the audit run read.", n(m.bytes_read));
    f.gauge(
        "not_read_files",
        "Registered files the audit run did not read (verified recently enough, or past its budget).",
        n(m.not_read),
    );
    f.gauge(
        "oldest_verification_age_seconds",
        "Seconds since the least recently verified present file was verified.",
        t(m.oldest_verification_age),
    );
    f.gauge(
        "never_verified_files",
        "Present files never verified by a read.",
        n(m.never_verified),
    );
    f.gauge(
        "files_due",
        "Files due for verification under the collection's policy.",
        n(m.files_due),
    );
    f.text
}

#[cfg(test)]
mod tests {
    use super::*;
    use trawl_report::VerdictFigures;

    fn figures() -> AuditMetrics {
        AuditMetrics {
            catalog: "/data/a \"b\"\\c\nd.db".into(),
            started: 100,
            finished: Some(160),
            success: true,
            verdicts: vec![
                VerdictFigures {
                    verdict: "ok".into(),
                    files: 3,
                    bytes: None,
                },
                VerdictFigures {
                    verdict: "corrupt".into(),
                    files: 1,
                    bytes: Some(7),
                },
            ],
            ..AuditMetrics::default()
        }
    }

    /// The catalog's path is escaped as the format says (backslash, quote, line feed); a
    /// verdict's bytes not known leave its sample out, not 0.
    #[test]
    fn labels_are_escaped_and_unknown_figures_left_out() {
        let text = metrics_text(&figures());
        let label = r#"catalog="/data/a \"b\"\\c\nd.db""#;
        assert!(
            text.contains(&format!("trawl_audit_files{{{label},verdict=\"ok\"}} 3\n")),
            "{text}"
        );
        assert!(text.contains(&format!(
            "trawl_audit_bytes{{{label},verdict=\"corrupt\"}} 7\n"
        )));
        assert!(!text.contains("verdict=\"ok\"} 0"));
        assert!(!text.contains("trawl_audit_oldest_verification_age_seconds"));
        assert_eq!(text.matches("# TYPE trawl_audit_files gauge").count(), 1);
    }

    /// Files due is written only when a policy gives it.
    #[test]
    fn files_due_only_when_known() {
        let mut m = figures();
        assert!(!metrics_text(&m).contains("trawl_audit_files_due"));
        m.files_due = Some(12);
        let text = metrics_text(&m);
        assert!(text.contains("# TYPE trawl_audit_files_due gauge\n"));
        assert!(text.contains("trawl_audit_files_due{catalog="));
        assert!(text.ends_with(" 12\n"));
    }
}
