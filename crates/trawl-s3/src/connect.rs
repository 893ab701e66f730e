//! A connection to a store: the AWS SDK's client on a runtime of its own, configured from the
//! standard chain (environment, shared config and credentials files with their profiles, web
//! identity, container and instance metadata) and the user's flags.

use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{
    Region, RequestChecksumCalculation, ResponseChecksumValidation, StalledStreamProtectionConfig,
};
use aws_smithy_http_client::{Builder, tls};

use crate::S3Error;

/// How to reach the store, as the user said (every field optional: the chain decides).
#[derive(Debug, Clone, Default)]
pub struct Connection {
    /// An S3-compatible store's URL (`--endpoint`); else `AWS_ENDPOINT_URL(_S3)` or AWS.
    pub endpoint: Option<String>,
    /// Address buckets in the path (`https://host/BUCKET/KEY`) rather than the host name; on
    /// by default where an endpoint is given (most S3-compatible stores need it).
    pub path_style: Option<bool>,
    /// Send requests unsigned (`--no-sign-request`: public buckets); no credentials looked for.
    pub no_sign: bool,
    /// The region (`--region`); else the chain's, else `us-east-1`.
    pub region: Option<String>,
    /// The shared config's profile (`--profile`); else `AWS_PROFILE`, else `default`.
    pub profile: Option<String>,
    /// Attempts per request, the first included, before a 5xx, a `SlowDown`, a dropped
    /// connection or a stall is a failure (retried with jittered, bounded backoff).
    pub attempts: u32,
    /// How long a request may wait for the store's next byte (to connect, for the answer,
    /// within a body) before it is cut and tried again; None: [`STALL`].
    pub stall: Option<Duration>,
}

/// How long a request waits for the store's next byte where the user did not say.
pub const STALL: Duration = Duration::from_secs(30);

/// How a request is tried again: attempts, and how long it may wait for a byte.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Patience {
    /// Attempts per request (see [`Connection::attempts`]), for the reads' own resumptions.
    pub(crate) attempts: u32,
    /// No byte for this long: the request is cut (see [`Connection::stall`]).
    pub(crate) stall: Duration,
}

/// A connected store: its client and the runtime its requests run on. Cheap to share by
/// reference across reader threads.
pub struct Store {
    pub(crate) rt: tokio::runtime::Runtime,
    pub(crate) client: aws_sdk_s3::Client,
    pub(crate) patience: Patience,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The client's configuration holds the credentials' provider: never printed.
        f.write_str("Store")
    }
}

impl Store {
    /// Configures the client; nothing is sent until the first request.
    pub fn connect(c: &Connection) -> Result<Store, S3Error> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("trawl-s3")
            .enable_all()
            .build()
            .map_err(|e| S3Error::Config(format!("cannot start the I/O runtime: {e}")))?;
        let patience = Patience {
            attempts: c.attempts.max(1),
            stall: c.stall.unwrap_or(STALL).max(Duration::from_millis(1)),
        };
        let client = rt.block_on(client(c, patience));
        Ok(Store {
            rt,
            client,
            patience,
        })
    }
}

async fn client(c: &Connection, patience: Patience) -> aws_sdk_s3::Client {
    let http = Builder::new()
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https();
    let retry = RetryConfig::standard()
        .with_max_attempts(patience.attempts)
        .with_initial_backoff(Duration::from_millis(50))
        .with_max_backoff(Duration::from_secs(5));
    // A store that stops answering is cut, never waited on for ever: connecting, the answer's
    // first byte, and a whole answer other than an object's body (a listing, a HEAD), which
    // the SDK reads itself; an object's body is timed a chunk at a time where it is read.
    let timeouts = TimeoutConfig::builder()
        .connect_timeout(patience.stall)
        .read_timeout(patience.stall)
        .operation_attempt_timeout(patience.stall * 2)
        .build();
    let mut loader = aws_config::defaults(BehaviorVersion::latest())
        .http_client(http)
        .retry_config(retry)
        .timeout_config(timeouts);
    if let Some(p) = &c.profile {
        loader = loader.profile_name(p);
    }
    if let Some(r) = &c.region {
        loader = loader.region(Region::new(r.clone()));
    }
    if c.no_sign {
        loader = loader.no_credentials();
    }
    let shared = loader.load().await;
    let mut b = aws_sdk_s3::config::Builder::from(&shared)
        .interceptor(crate::cap::CapAnswers)
        // trawl hashes every byte itself: the SDK's own checksums of bodies would be the same
        // work done twice.
        .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
        .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
        // A stalled body is cut by `Patience::stall`, a chunk at a time where it is read; the
        // SDK's own guard (a throughput floor after a grace period) would be a second rule.
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled());
    if shared.region().is_none() {
        b = b.region(Region::new("us-east-1"));
    }
    let endpoint = c
        .endpoint
        .clone()
        .or_else(|| shared.endpoint_url().map(str::to_string));
    if let Some(e) = &c.endpoint {
        b = b.endpoint_url(e);
    }
    b = b.force_path_style(c.path_style.unwrap_or(endpoint.is_some()));
    aws_sdk_s3::Client::from_conf(b.build())
}
