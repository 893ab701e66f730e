//! Roots that are objects: `s3://BUCKET/PREFIX` arguments turned into one [`ObjectSource`]
//! over a connected store, with the flags that mean nothing there refused rather than
//! ignored.

use std::path::PathBuf;
use std::sync::Arc;

#[cfg(feature = "s3")]
use trawl_s3::{Connection, Store};
use trawl_s3::{ObjectSource, ObjectUrl};

use super::lowargs::{AuditArgs, ExcludeArgs, ReadArgs, StoreArgs};
use crate::failure::Refused;

#[cfg(feature = "s3")]
/// Attempts per request before a 5xx, a `SlowDown` or a dropped connection is a failure.
const ATTEMPTS: u32 = 5;

#[cfg(feature = "s3")]
/// The longest `--store-timeout` taken: a store silent for longer is gone.
const MAX_STALL: std::time::Duration = std::time::Duration::from_secs(3600);

/// The source of `paths` when they are all `s3://` roots (None when none is); a mix of local
/// and object roots, a bad URL or a flag that does not apply to objects is refused.
pub fn object_roots(
    paths: &[PathBuf],
    read: &ReadArgs,
    store: &StoreArgs,
    excluding: Option<&ExcludeArgs>,
) -> anyhow::Result<Option<Arc<ObjectSource>>> {
    let objects = paths
        .iter()
        .filter(|p| trawl_s3::is_object_url(p.as_os_str()))
        .count();
    if objects == 0 {
        return Ok(None);
    }
    if objects != paths.len() {
        return Err(Refused::text(
            "roots are all local paths or all s3:// URLs: scan them in separate runs",
        )
        .into());
    }
    let mut urls = Vec::with_capacity(paths.len());
    for p in paths {
        match ObjectUrl::parse(p.as_os_str()) {
            Some(Ok(u)) => urls.push(u),
            Some(Err(e)) => return Err(Refused::text(e.to_string()).into()),
            None => unreachable!("counted as an s3:// URL above"),
        }
    }
    for (given, flag) in [
        (read.limit_rate.is_some(), "--limit-rate"),
        (read.follow, "--follow"),
        (read.one_file_system, "--one-file-system"),
    ] {
        if given {
            let why = " does not apply to s3:// roots (docs/commands/objects.md)";
            return Err(Refused::flag(flag, why).into());
        }
    }
    if excluding.is_some_and(|x| !x.exclude_if_present.is_empty()) {
        let why = " does not apply to s3:// roots: a prefix has no directory to look into \
                   for a name (leave its keys out with --exclude)";
        return Err(Refused::flag("--exclude-if-present", why).into());
    }
    Ok(Some(source(store, urls)?))
}

/// The objects under `urls` in the store the flags name.
#[cfg(feature = "s3")]
fn source(store: &StoreArgs, urls: Vec<ObjectUrl>) -> anyhow::Result<Arc<ObjectSource>> {
    Ok(Arc::new(ObjectSource::new(connect(store)?, urls)))
}

/// A build without the S3 client refuses the roots, saying how to build one that reads them.
#[cfg(not(feature = "s3"))]
fn source(_: &StoreArgs, urls: Vec<ObjectUrl>) -> anyhow::Result<Arc<ObjectSource>> {
    let url = urls
        .first()
        .map_or_else(String::new, |u| u.root_path().display().to_string());
    Err(without_s3(&url))
}

/// The refusal of `s3://` URLs by a build without the S3 client.
#[cfg(not(feature = "s3"))]
pub fn without_s3(url: &str) -> anyhow::Error {
    Refused::text(format!(
        "{url}: this trawl was built without object storage: build it with \
         `cargo build --release --features s3` (docs/commands/objects.md)"
    ))
    .into()
}

/// The store the flags name, connected (nothing is sent yet).
#[cfg(feature = "s3")]
pub fn connect(store: &StoreArgs) -> anyhow::Result<Arc<Store>> {
    Ok(Arc::new(Store::connect(&connection(store)?)?))
}

/// An argument that must be an `s3://BUCKET/PREFIX` URL.
#[cfg(feature = "s3")]
pub fn object_url(arg: &std::ffi::OsStr) -> anyhow::Result<ObjectUrl> {
    match ObjectUrl::parse(arg) {
        Some(Ok(u)) => Ok(u),
        Some(Err(e)) => Err(Refused::text(e.to_string()).into()),
        None => Err(Refused::text(format!(
            "{}: expected s3://BUCKET/PREFIX",
            arg.to_string_lossy()
        ))
        .into()),
    }
}

/// The connection the flags ask for.
#[cfg(feature = "s3")]
fn connection(s: &StoreArgs) -> anyhow::Result<Connection> {
    if let Some(e) = &s.endpoint {
        // A user name and password in the URL are never used (keys come from the AWS chain)
        // and never printed back: every message names the endpoint without them.
        let shown = without_userinfo(e);
        if shown != *e {
            return Err(Refused::flag(
                "--endpoint",
                format!(
                    " {shown}: holds a user name or password, which S3 requests do not use \
                     (give keys through AWS_ACCESS_KEY_ID or --profile)"
                ),
            )
            .into());
        }
        if !(e.starts_with("http://") || e.starts_with("https://")) {
            return Err(Refused::flag(
                "--endpoint",
                format!(" {e}: expected an http:// or https:// URL"),
            )
            .into());
        }
    }
    let stall = match &s.store_timeout {
        None => None,
        Some(t) => {
            let refused = || {
                Refused::flag(
                    "--store-timeout",
                    format!(" '{t}': expected a duration above 0 and at most 1h, like 30s, 2m"),
                )
            };
            let d = super::hiargs::parse_duration("--store-timeout", t).map_err(|_| refused())?;
            if d.is_zero() || d > MAX_STALL {
                return Err(refused().into());
            }
            Some(d)
        }
    };
    Ok(Connection {
        endpoint: s.endpoint.clone(),
        path_style: s.path_style.then_some(true),
        no_sign: s.no_sign_request,
        region: s.region.clone(),
        profile: s.profile.clone(),
        attempts: ATTEMPTS,
        stall,
    })
}

/// `url` with whatever precedes an `@` in its authority replaced by `***`.
#[cfg(feature = "s3")]
fn without_userinfo(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (format!("{s}://"), r),
        None => (String::new(), url),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..end].rfind('@') {
        Some(at) => format!("{scheme}***{}", &rest[at..]),
        None => url.to_string(),
    }
}

/// The roots as the engine names what is under them: `s3://BUCKET/PREFIX` each.
pub fn root_paths(source: &ObjectSource) -> Vec<PathBuf> {
    source.roots().iter().map(ObjectUrl::root_path).collect()
}

/// The objects an audit's roots are, where they are `s3://` URLs (see [`object_roots`]),
/// with what does not apply to them refused (`--ocfl`, and `--no-download`'s clashes).
pub fn audit_roots(a: &AuditArgs) -> anyhow::Result<Option<Arc<ObjectSource>>> {
    no_download_applies(a)?;
    let objects = object_roots(&a.paths, &a.read, &a.store, Some(&a.excluding))?;
    if objects.is_some() && a.ocfl {
        anyhow::bail!("--ocfl audits OCFL storage roots on a file system; s3:// roots are not yet");
    }
    Ok(objects)
}

/// Refuses what `--no-download` cannot go with: roots that are not `s3://` URLs (their files
/// have no checksums kept by a store), and, since it reads no object and registers nothing, a
/// budget, an age, a metadata-only audit, an OCFL root or forgetting.
fn no_download_applies(a: &AuditArgs) -> anyhow::Result<()> {
    if !a.no_download {
        return Ok(());
    }
    if !a
        .paths
        .iter()
        .all(|p| trawl_s3::is_object_url(p.as_os_str()))
    {
        let why =
            " compares the checksums an object store keeps: it takes s3:// roots, not local paths";
        return Err(Refused::flag("--no-download", why).into());
    }
    let clash = [
        (a.metadata_only, "--metadata-only"),
        (a.ocfl, "--ocfl"),
        (a.forget_missing, "--forget-missing"),
        (a.max_bytes.is_some(), "--max-bytes"),
        (a.max_time.is_some(), "--max-time"),
        (a.older_than.is_some(), "--older-than"),
    ];
    match clash.iter().find(|(given, _)| *given) {
        Some((_, flag)) => Err(Refused::flag(
            "--no-download",
            format!(" reads no object and changes no registration: {flag} does not apply with it"),
        )
        .into()),
        None => Ok(()),
    }
}
