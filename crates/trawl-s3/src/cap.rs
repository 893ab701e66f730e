//! A bound on every answer's body: the SDK reads an answer other than an object's bytes (a
//! listing, an error's XML) whole into memory before it parses it, so an endpoint that is no
//! S3 store, or a hostile one, could make it hold any amount. No answer trawl asks for is
//! larger than [`ANSWER_CAP`]: an object's body is one range of at most 4 MiB, a listing page
//! 1,000 keys of at most 1,024 bytes each with their XML.

use aws_sdk_s3::config::interceptors::BeforeDeserializationInterceptorContextMut;
use aws_sdk_s3::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_s3::error::BoxError;
use aws_smithy_types::body::SdkBody;
use http_body_util::Limited;

/// The most bytes one answer's body may hold.
pub(crate) const ANSWER_CAP: usize = 32 << 20;

/// Wraps every answer's body in a [`Limited`] one: past the cap, reading it fails.
#[derive(Debug)]
pub(crate) struct CapAnswers;

impl Intercept for CapAnswers {
    fn name(&self) -> &'static str {
        "CapAnswers"
    }

    fn modify_before_deserialization(
        &self,
        ctx: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _: &RuntimeComponents,
        _: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let body = std::mem::replace(ctx.response_mut().body_mut(), SdkBody::taken());
        *ctx.response_mut().body_mut() =
            body.map_preserve_contents(|b| SdkBody::from_body_1_x(Limited::new(b, ANSWER_CAP)));
        Ok(())
    }
}
