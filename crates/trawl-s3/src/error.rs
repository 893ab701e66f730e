//! What can go wrong between trawl and a store, each naming the bucket or object concerned.

use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};

/// A store's answer or a connection's failure, classified for the verdicts and the exit code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreFault {
    /// The object or bucket is not there (404, `NoSuchKey`, `NoSuchBucket`).
    NotFound,
    /// The credentials were refused or have expired (`ExpiredToken`, `InvalidAccessKeyId`,
    /// `SignatureDoesNotMatch`, ...): every further request would be refused too.
    Credentials,
    /// The store denies this request (403 `AccessDenied`).
    Denied,
    /// The object is no longer the version that was being read (412 `PreconditionFailed`, or
    /// an answer with another ETag).
    Replaced,
    /// The store kept failing (5xx, `SlowDown`) after every retry.
    Unavailable,
    /// The connection failed or timed out after every retry.
    Connection,
    /// Anything else the store answered.
    Other,
}

/// A failure naming what it concerns (`s3://BUCKET/KEY`).
#[derive(Debug, thiserror::Error)]
pub enum S3Error {
    /// A request failed.
    #[error("{what}: {message}")]
    Request {
        /// The bucket or object (`s3://BUCKET/KEY`).
        what: String,
        /// What kind of failure.
        fault: StoreFault,
        /// The store's code and message, or the connection's error.
        message: String,
    },
    /// The configuration could not be made (a region, an endpoint).
    #[error("S3 configuration: {0}")]
    Config(String),
}

impl S3Error {
    /// The failure's class.
    pub fn fault(&self) -> StoreFault {
        match self {
            S3Error::Request { fault, .. } => fault.clone(),
            S3Error::Config(_) => StoreFault::Other,
        }
    }

    /// A request's failure from the SDK's error, naming `what`.
    pub(crate) fn from_sdk<E>(what: String, e: SdkError<E, HttpResponse>) -> S3Error
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let (fault, message) = match &e {
            SdkError::ServiceError(se) => {
                let status = se.raw().status().as_u16();
                let code = se.err().code().unwrap_or("");
                let fault = classify(status, code);
                let msg = se.err().message().unwrap_or("");
                let message = match (code.is_empty(), msg.is_empty()) {
                    (true, true) => format!("the store answered HTTP {status}"),
                    (false, true) => format!("the store answered {code} (HTTP {status})"),
                    (_, false) => format!("the store answered {code} (HTTP {status}): {msg}"),
                };
                (fault, message)
            }
            SdkError::TimeoutError(_) => (StoreFault::Connection, "timed out".to_string()),
            SdkError::DispatchFailure(d) => (
                StoreFault::Connection,
                match d.as_connector_error() {
                    Some(c) => format!("cannot reach the store: {}", chain(c)),
                    None => format!("cannot reach the store: {}", chain(&e)),
                },
            ),
            SdkError::ResponseError(r) => {
                let status = r.raw().status().as_u16();
                (
                    classify(status, ""),
                    format!("unreadable answer (HTTP {status}): {}", chain(&e)),
                )
            }
            _ => (StoreFault::Other, chain(&e)),
        };
        S3Error::Request {
            what,
            fault,
            message,
        }
    }
}

/// Every cause of an error on one line.
pub(crate) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

/// The class of a store's answer, by its status and code.
pub(crate) fn classify(status: u16, code: &str) -> StoreFault {
    match code {
        "NoSuchKey" | "NoSuchBucket" | "NotFound" => return StoreFault::NotFound,
        "ExpiredToken"
        | "InvalidAccessKeyId"
        | "SignatureDoesNotMatch"
        | "InvalidToken"
        | "TokenRefreshRequired"
        | "AuthorizationHeaderMalformed" => {
            return StoreFault::Credentials;
        }
        "AccessDenied" | "AllAccessDisabled" => return StoreFault::Denied,
        "PreconditionFailed" => return StoreFault::Replaced,
        "SlowDown" | "InternalError" | "ServiceUnavailable" => return StoreFault::Unavailable,
        _ => {}
    }
    match status {
        404 => StoreFault::NotFound,
        401 => StoreFault::Credentials,
        403 => StoreFault::Denied,
        412 => StoreFault::Replaced,
        500..=599 => StoreFault::Unavailable,
        _ => StoreFault::Other,
    }
}
