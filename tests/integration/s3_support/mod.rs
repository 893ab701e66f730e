//! The S3 tests' harness: S3 servers on loopback (s3s-fs in this process, moto as a child), a
//! fault-injecting proxy in front of either, a scripted store, an uploader, and the environment
//! a `trawl` child needs to reach them and nothing else.
// Each test uses part of the harness; the parts no test of the moment calls are no mistake.
#![allow(dead_code)]

pub mod proxy;
pub mod scripted;
pub mod server;
pub mod upload;

#[allow(unused_imports)]
pub use proxy::{Fault, FaultProxy, Logged};
pub use server::S3Server;
#[allow(unused_imports)]
pub use upload::{Checksum, Head, Put, Uploader};

use std::process::Command;

/// The access key every server here accepts (s3s-fs checks it; moto takes any).
pub const ACCESS_KEY: &str = "trawl-test-access-key";
/// The secret key that goes with [`ACCESS_KEY`].
pub const SECRET_KEY: &str = "trawl-test-secret-key";
/// The region requests are signed for.
pub const REGION: &str = "us-east-1";

/// The environment of a `trawl` child that talks to a test server: its endpoint and the dummy
/// keys, with every other source of AWS credentials or configuration shut off (no shared config
/// or credentials files, no instance metadata, none of the caller's own AWS variables), so that
/// no test can reach a real account.
#[derive(Clone, Debug)]
pub struct Env {
    vars: Vec<(&'static str, String)>,
}

/// AWS variables of the caller's environment that would otherwise reach the child (a profile,
/// a session token, a web identity or container role): removed from it.
const REMOVED: &[&str] = &[
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_DEFAULT_REGION",
    "AWS_ROLE_ARN",
    "AWS_ROLE_SESSION_NAME",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN",
    "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
    "AWS_ENDPOINT_URL_S3",
    "AWS_USE_FIPS_ENDPOINT",
    "AWS_USE_DUALSTACK_ENDPOINT",
];

impl Env {
    /// The environment for a server (or proxy) at `endpoint` (`http://127.0.0.1:PORT`).
    pub fn for_endpoint(endpoint: &str) -> Env {
        let vars = vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_string()),
            ("AWS_SECRET_ACCESS_KEY", SECRET_KEY.to_string()),
            ("AWS_REGION", REGION.to_string()),
            ("AWS_ENDPOINT_URL", endpoint.to_string()),
            ("AWS_CONFIG_FILE", "/nonexistent/aws-config".to_string()),
            (
                "AWS_SHARED_CREDENTIALS_FILE",
                "/nonexistent/aws-credentials".to_string(),
            ),
            ("AWS_EC2_METADATA_DISABLED", "true".to_string()),
        ];
        Env { vars }
    }

    /// The variables set, name and value.
    pub fn vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (*k, v.as_str()))
    }

    /// The value of one variable set.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars().find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// Sets the variables on `cmd` and removes the caller's other AWS variables from it.
    pub fn apply(&self, cmd: &mut Command) {
        for name in REMOVED {
            cmd.env_remove(name);
        }
        cmd.envs(self.vars());
    }
}

/// A free loopback port at the time of asking (the listener is closed again before return).
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// s3s-fs over `d/s3` with a bucket `bkt`, and an uploader talking to it directly.
pub fn s3s_with_bucket(d: &crate::util::Dir) -> (S3Server, Uploader) {
    let root = d.join("s3");
    std::fs::create_dir(&root).unwrap();
    let server = S3Server::s3s(&root);
    let up = Uploader::new(server.endpoint());
    up.create_bucket("bkt");
    (server, up)
}

/// Exit code and peak RSS of `trawl ARGS` in `d` with `env`'s store environment, as
/// [`crate::util::peak_rss_apart`] measures them.
pub fn peak_rss_with(d: &crate::util::Dir, env: &Env, args: &[&str]) -> (i32, u64) {
    crate::util::peak_rss_set(d, args, |c| env.apply(c))
}

/// `trawl ARGS` in `d` with `env`'s store environment, killed past two minutes.
pub fn trawl_with(d: &crate::util::Dir, env: &Env, args: &[&str]) -> crate::util::Run {
    let mut c = d.cmd();
    env.apply(&mut c.cmd);
    c.args(args).run_within(120)
}
