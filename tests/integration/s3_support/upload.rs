//! The tests' S3 client (aws-sdk-s3, path-style, the dummy keys): writes the objects a test
//! reads, and reads them back for the harness's own tests. Blocking calls, on a runtime of its
//! own.

use super::{ACCESS_KEY, REGION, SECRET_KEY};
use aws_sdk_s3::config::{
    BehaviorVersion, Credentials, Region, RequestChecksumCalculation, ResponseChecksumValidation,
    StalledStreamProtectionConfig, retry::RetryConfig,
};
use aws_sdk_s3::error::DisplayErrorContext;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    ChecksumAlgorithm, ChecksumMode, ChecksumType, CompletedMultipartUpload, CompletedPart,
    ObjectAttributes,
};
use std::sync::Arc;

/// The checksum an upload asks the SDK to compute and send (and the server to store).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checksum {
    /// None at all (the SDK's default CRC32 is off in this client).
    None,
    Crc64Nvme,
    Crc32,
    Crc32c,
    Sha1,
    Sha256,
}

impl Checksum {
    /// The SDK's algorithm, `None` for [`Checksum::None`].
    pub fn algorithm(self) -> Option<ChecksumAlgorithm> {
        Some(match self {
            Checksum::None => return None,
            Checksum::Crc64Nvme => ChecksumAlgorithm::Crc64Nvme,
            Checksum::Crc32 => ChecksumAlgorithm::Crc32,
            Checksum::Crc32c => ChecksumAlgorithm::Crc32C,
            Checksum::Sha1 => ChecksumAlgorithm::Sha1,
            Checksum::Sha256 => ChecksumAlgorithm::Sha256,
        })
    }

    /// S3's value of this checksum of `bytes` (base64 of the big-endian digest), computed
    /// here: sent with an upload as its header, so that a server that ignores the SDK's
    /// trailing checksum (s3s-fs 0.14.1, moto without awscrt) stores the true one.
    pub fn value(self, bytes: &[u8]) -> Option<String> {
        use base64::Engine;
        use crc_fast::{CrcAlgorithm, checksum};
        use sha2::Digest;
        let digest: Vec<u8> = match self {
            Checksum::None => return None,
            Checksum::Crc64Nvme => checksum(CrcAlgorithm::Crc64Nvme, bytes)
                .to_be_bytes()
                .into(),
            Checksum::Crc32 => (checksum(CrcAlgorithm::Crc32IsoHdlc, bytes) as u32)
                .to_be_bytes()
                .into(),
            Checksum::Crc32c => (checksum(CrcAlgorithm::Crc32Iscsi, bytes) as u32)
                .to_be_bytes()
                .into(),
            Checksum::Sha1 => sha1::Sha1::digest(bytes).to_vec(),
            Checksum::Sha256 => sha2::Sha256::digest(bytes).to_vec(),
        };
        Some(base64::engine::general_purpose::STANDARD.encode(digest))
    }

    /// The name in S3's headers (`x-amz-checksum-NAME`) and in s3s-fs's stored
    /// `checksum_NAME`.
    pub fn header_name(self) -> Option<&'static str> {
        Some(match self {
            Checksum::None => return None,
            Checksum::Crc64Nvme => "crc64nvme",
            Checksum::Crc32 => "crc32",
            Checksum::Crc32c => "crc32c",
            Checksum::Sha1 => "sha1",
            Checksum::Sha256 => "sha256",
        })
    }
}

/// What an upload's answer said: the ETag (quotes included, as S3 sends it) and the checksums
/// (name as in [`Checksum::header_name`], base64 value).
#[derive(Clone, Debug, Default)]
pub struct Put {
    pub e_tag: Option<String>,
    pub checksums: Vec<(&'static str, String)>,
    pub checksum_type: Option<String>,
}

/// What HeadObject (checksum mode on) said.
#[derive(Clone, Debug, Default)]
pub struct Head {
    pub size: Option<i64>,
    pub e_tag: Option<String>,
    pub checksums: Vec<(&'static str, String)>,
    pub checksum_type: Option<String>,
    pub parts: Option<i32>,
}

impl Head {
    /// The value of checksum `name` (`crc64nvme`, ...), if the server sent it.
    pub fn checksum(&self, name: &str) -> Option<&str> {
        self.checksums
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Collects the checksum members every output type has under the same names.
macro_rules! checksums {
    ($o:expr) => {{
        let o = &$o;
        let mut v: Vec<(&'static str, String)> = Vec::new();
        for (name, val) in [
            ("crc64nvme", o.checksum_crc64_nvme()),
            ("crc32", o.checksum_crc32()),
            ("crc32c", o.checksum_crc32_c()),
            ("sha1", o.checksum_sha1()),
            ("sha256", o.checksum_sha256()),
        ] {
            if let Some(val) = val {
                v.push((name, val.to_string()));
            }
        }
        v
    }};
}

/// An S3 client for one endpoint (a server's or a proxy's); cheap to clone.
#[derive(Clone)]
pub struct Uploader {
    rt: Arc<tokio::runtime::Runtime>,
    client: aws_sdk_s3::Client,
}

impl Uploader {
    /// A client for `endpoint` that tries each request once (a fault is seen, not retried
    /// away), computes request checksums only when asked, and validates response checksums
    /// where the server sends one (GetObject asks for them).
    pub fn new(endpoint: &str) -> Uploader {
        Uploader::with_attempts(endpoint, 1)
    }

    /// As [`Uploader::new`], each request tried up to `attempts` times (the SDK's standard
    /// retry, its backoff included).
    pub fn with_attempts(endpoint: &str, attempts: u32) -> Uploader {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let config = aws_sdk_s3::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .region(Region::new(REGION))
            .endpoint_url(endpoint)
            .force_path_style(true)
            .credentials_provider(Credentials::new(
                ACCESS_KEY,
                SECRET_KEY,
                None,
                None,
                "trawl-tests",
            ))
            // Plain HTTP: the servers are on loopback.
            .http_client(aws_smithy_http_client::Builder::new().build_http())
            .retry_config(RetryConfig::standard().with_max_attempts(attempts))
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            .response_checksum_validation(ResponseChecksumValidation::WhenSupported)
            .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
            .build();
        Uploader {
            rt: Arc::new(rt),
            client: aws_sdk_s3::Client::from_conf(config),
        }
    }

    /// The SDK client, for what the methods here do not cover (run it with [`Uploader::run`]).
    pub fn client(&self) -> &aws_sdk_s3::Client {
        &self.client
    }

    /// Runs `f` to completion on this client's runtime.
    pub fn run<F: std::future::Future>(&self, f: F) -> F::Output {
        self.rt.block_on(f)
    }

    pub fn create_bucket(&self, bucket: &str) {
        self.run(self.client.create_bucket().bucket(bucket).send())
            .map_err(|e| DisplayErrorContext(e).to_string())
            .unwrap();
    }

    /// PutObject of `bytes`, with `checksum` computed by the SDK and sent with them.
    pub fn put(&self, bucket: &str, key: &str, bytes: &[u8], checksum: Checksum) -> Put {
        let o = self
            .run(
                self.client
                    .put_object()
                    .bucket(bucket)
                    .key(key)
                    .body(ByteStream::from(bytes.to_vec()))
                    .set_checksum_algorithm(checksum.algorithm())
                    .set_checksum_crc64_nvme(only(checksum, Checksum::Crc64Nvme, bytes))
                    .set_checksum_crc32(only(checksum, Checksum::Crc32, bytes))
                    .set_checksum_crc32_c(only(checksum, Checksum::Crc32c, bytes))
                    .set_checksum_sha1(only(checksum, Checksum::Sha1, bytes))
                    .set_checksum_sha256(only(checksum, Checksum::Sha256, bytes))
                    .send(),
            )
            .map_err(|e| DisplayErrorContext(e).to_string())
            .unwrap();
        Put {
            e_tag: o.e_tag().map(str::to_string),
            checksums: checksums!(o),
            checksum_type: o.checksum_type().map(|t| t.as_str().to_string()),
        }
    }

    /// A multipart upload of `bytes` in parts of `part_size` (the last one shorter; s3s-fs, as
    /// S3, refuses parts under 5 MiB but the last), each part with `checksum`; the object's
    /// checksum type FULL_OBJECT with `full_object`, else COMPOSITE (where a checksum is asked
    /// for). Fails the test on any refusal; [`Uploader::try_put_multipart`] returns it.
    pub fn put_multipart(
        &self,
        bucket: &str,
        key: &str,
        bytes: &[u8],
        part_size: usize,
        checksum: Checksum,
        full_object: bool,
    ) -> Put {
        self.try_put_multipart(bucket, key, bytes, part_size, checksum, full_object)
            .unwrap()
    }

    /// As [`Uploader::put_multipart`], the server's refusal as the error.
    pub fn try_put_multipart(
        &self,
        bucket: &str,
        key: &str,
        bytes: &[u8],
        part_size: usize,
        checksum: Checksum,
        full_object: bool,
    ) -> Result<Put, String> {
        let alg = checksum.algorithm();
        let ty = alg.as_ref().map(|_| {
            if full_object {
                ChecksumType::FullObject
            } else {
                ChecksumType::Composite
            }
        });
        let c = &self.client;
        self.run(async {
            let up = c
                .create_multipart_upload()
                .bucket(bucket)
                .key(key)
                .set_checksum_algorithm(alg.clone())
                .set_checksum_type(ty)
                .send()
                .await
                .map_err(sdk_error)?;
            let id = up.upload_id().unwrap();
            let mut parts = Vec::new();
            for (i, chunk) in bytes.chunks(part_size.max(1)).enumerate() {
                let n = i as i32 + 1;
                let p = c
                    .upload_part()
                    .bucket(bucket)
                    .key(key)
                    .upload_id(id)
                    .part_number(n)
                    .body(ByteStream::from(chunk.to_vec()))
                    .set_checksum_algorithm(alg.clone())
                    .set_checksum_crc64_nvme(only(checksum, Checksum::Crc64Nvme, chunk))
                    .set_checksum_crc32(only(checksum, Checksum::Crc32, chunk))
                    .set_checksum_crc32_c(only(checksum, Checksum::Crc32c, chunk))
                    .set_checksum_sha1(only(checksum, Checksum::Sha1, chunk))
                    .set_checksum_sha256(only(checksum, Checksum::Sha256, chunk))
                    .send()
                    .await
                    .map_err(sdk_error)?;
                parts.push(
                    CompletedPart::builder()
                        .part_number(n)
                        .set_e_tag(p.e_tag().map(str::to_string))
                        .set_checksum_crc64_nvme(p.checksum_crc64_nvme().map(str::to_string))
                        .set_checksum_crc32(p.checksum_crc32().map(str::to_string))
                        .set_checksum_crc32_c(p.checksum_crc32_c().map(str::to_string))
                        .set_checksum_sha1(p.checksum_sha1().map(str::to_string))
                        .set_checksum_sha256(p.checksum_sha256().map(str::to_string))
                        .build(),
                );
            }
            let o = c
                .complete_multipart_upload()
                .bucket(bucket)
                .key(key)
                .upload_id(id)
                .multipart_upload(
                    CompletedMultipartUpload::builder()
                        .set_parts(Some(parts))
                        .build(),
                )
                .send()
                .await
                .map_err(sdk_error)?;
            Ok(Put {
                e_tag: o.e_tag().map(str::to_string),
                checksums: checksums!(o),
                checksum_type: o.checksum_type().map(|t| t.as_str().to_string()),
            })
        })
    }

    pub fn delete(&self, bucket: &str, key: &str) {
        self.run(self.client.delete_object().bucket(bucket).key(key).send())
            .map_err(|e| DisplayErrorContext(e).to_string())
            .unwrap();
    }

    /// ListObjectsV2 under `prefix`, every page: (key, size), in the server's order.
    pub fn list(&self, bucket: &str, prefix: &str) -> Result<Vec<(String, i64)>, String> {
        self.run(async {
            let mut out = Vec::new();
            let mut pages = self
                .client
                .list_objects_v2()
                .bucket(bucket)
                .prefix(prefix)
                .into_paginator()
                .send();
            while let Some(page) = pages.next().await {
                let page = page.map_err(|e| DisplayErrorContext(e).to_string())?;
                for o in page.contents() {
                    out.push((
                        o.key().unwrap_or_default().to_string(),
                        o.size().unwrap_or(0),
                    ));
                }
            }
            Ok(out)
        })
    }

    /// HeadObject with checksum mode on.
    pub fn head(&self, bucket: &str, key: &str) -> Result<Head, String> {
        let o = self
            .run(
                self.client
                    .head_object()
                    .bucket(bucket)
                    .key(key)
                    .checksum_mode(ChecksumMode::Enabled)
                    .send(),
            )
            .map_err(|e| DisplayErrorContext(e).to_string())?;
        Ok(Head {
            size: o.content_length(),
            e_tag: o.e_tag().map(str::to_string),
            checksums: checksums!(o),
            checksum_type: o.checksum_type().map(|t| t.as_str().to_string()),
            parts: o.parts_count(),
        })
    }

    /// GetObject, the whole body; the error (the SDK's words, its causes included) if the
    /// request or the body's read fails, or the SDK finds the body's checksum wrong.
    pub fn get(&self, bucket: &str, key: &str) -> Result<Vec<u8>, String> {
        self.get_with(bucket, key, None, None)
    }

    /// GetObject with a `Range` header (`bytes=A-B`) and an `If-Match` ETag where given.
    pub fn get_with(
        &self,
        bucket: &str,
        key: &str,
        range: Option<&str>,
        if_match: Option<&str>,
    ) -> Result<Vec<u8>, String> {
        self.run(async {
            let o = self
                .client
                .get_object()
                .bucket(bucket)
                .key(key)
                .set_range(range.map(str::to_string))
                .set_if_match(if_match.map(str::to_string))
                .send()
                .await
                .map_err(|e| DisplayErrorContext(e).to_string())?;
            let body = o
                .body
                .collect()
                .await
                .map_err(|e| DisplayErrorContext(e).to_string())?;
            Ok(body.into_bytes().to_vec())
        })
    }

    /// GetObject, read chunk by chunk: the bytes that arrived, and the error that ended the
    /// read if one did (for a body cut short).
    pub fn get_partial(&self, bucket: &str, key: &str) -> (Vec<u8>, Option<String>) {
        self.run(async {
            let o = match self
                .client
                .get_object()
                .bucket(bucket)
                .key(key)
                .send()
                .await
            {
                Ok(o) => o,
                Err(e) => return (Vec::new(), Some(DisplayErrorContext(e).to_string())),
            };
            let mut body = o.body;
            let mut got = Vec::new();
            loop {
                match body.try_next().await {
                    Ok(Some(b)) => got.extend_from_slice(&b),
                    Ok(None) => return (got, None),
                    Err(e) => return (got, Some(DisplayErrorContext(e).to_string())),
                }
            }
        })
    }

    /// GetObjectAttributes (ETag, checksum, parts, size), as the SDK's debug text; the error if
    /// the server refuses it.
    pub fn attributes(&self, bucket: &str, key: &str) -> Result<String, String> {
        let o = self
            .run(
                self.client
                    .get_object_attributes()
                    .bucket(bucket)
                    .key(key)
                    .object_attributes(ObjectAttributes::Etag)
                    .object_attributes(ObjectAttributes::Checksum)
                    .object_attributes(ObjectAttributes::ObjectParts)
                    .object_attributes(ObjectAttributes::ObjectSize)
                    .send(),
            )
            .map_err(|e| DisplayErrorContext(e).to_string())?;
        Ok(format!(
            "etag={:?} size={:?} checksum={:?} parts={:?}",
            o.e_tag(),
            o.object_size(),
            o.checksum(),
            o.object_parts()
        ))
    }
}

/// The SDK's error in words, its causes included.
fn sdk_error<E: std::error::Error>(e: E) -> String {
    DisplayErrorContext(e).to_string()
}

/// `c`'s value of `bytes` where `c` is `want`: the one checksum header an upload carries.
fn only(c: Checksum, want: Checksum, bytes: &[u8]) -> Option<String> {
    if c == want { c.value(bytes) } else { None }
}
