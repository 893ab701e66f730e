//! S3 servers on loopback for the tests: s3s-fs served from this process (buckets are
//! directories under a test's directory), or moto's server as a child process.

use super::{ACCESS_KEY, Env, SECRET_KEY, free_port};
use crate::util::python_with;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running S3 server, stopped on drop.
pub struct S3Server {
    endpoint: String,
    kind: Kind,
}

enum Kind {
    /// s3s-fs on a runtime of its own, on a thread of its own; `root` holds the buckets.
    S3s {
        root: PathBuf,
        stop: Option<tokio::sync::oneshot::Sender<()>>,
        thread: Option<std::thread::JoinHandle<()>>,
    },
    /// `python3 -m moto.server`, its output in `log`.
    Moto {
        child: Child,
        log: tempfile::NamedTempFile,
    },
}

impl S3Server {
    /// s3s-fs serving `dir` (which must exist) on 127.0.0.1, checking signatures against
    /// [`ACCESS_KEY`] and [`SECRET_KEY`]. Buckets are `dir`'s subdirectories; s3s-fs keeps an
    /// object's stored ETag and checksums beside them, in `dir/.bucket-B.object-K.internal.json`.
    pub fn s3s(dir: &Path) -> S3Server {
        let root = dir.canonicalize().unwrap();
        let fs = s3s_fs::FileSystem::new(&root).unwrap();
        let service = {
            let mut b = s3s::service::S3ServiceBuilder::new(fs);
            b.set_auth(s3s::auth::SimpleAuth::from_single(ACCESS_KEY, SECRET_KEY));
            b.build()
        };
        // Bound here, so that the port is known (and listening) before this returns.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("s3s-fs".into())
            .spawn(move || {
                let rt = tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    let listener = tokio::net::TcpListener::from_std(listener).unwrap();
                    loop {
                        let sock = tokio::select! {
                            r = listener.accept() => match r {
                                Ok((sock, _)) => sock,
                                Err(_) => continue,
                            },
                            _ = &mut stopped => break,
                        };
                        let service = service.clone();
                        tokio::spawn(async move {
                            let io = hyper_util::rt::TokioIo::new(sock);
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(io, service)
                                .await;
                        });
                    }
                });
                // Dropping the runtime ends the connections still open.
                rt.shutdown_timeout(Duration::from_secs(1));
            })
            .unwrap();
        S3Server {
            endpoint,
            kind: Kind::S3s {
                root,
                stop: Some(stop),
                thread: Some(thread),
            },
        }
    }

    /// moto's S3 server (`python3 -m moto.server`) on a free loopback port, once it answers;
    /// `None` (the test skipped, with the reason printed; failed under
    /// TRAWL_REQUIRE_INTEROP=1) when Python has no moto with its server's dependencies.
    /// moto takes any keys and keeps objects in memory.
    pub fn moto() -> Option<S3Server> {
        if !python_with(&["moto.server"]) {
            return None;
        }
        let log = tempfile::NamedTempFile::new().unwrap();
        let port = free_port();
        let child = Command::new("python3")
            .args([
                "-m",
                "moto.server",
                "-H",
                "127.0.0.1",
                "-p",
                &port.to_string(),
            ])
            .stdin(Stdio::null())
            .stdout(log.reopen().unwrap())
            .stderr(log.reopen().unwrap())
            .spawn()
            .unwrap();
        let mut server = S3Server {
            endpoint: format!("http://127.0.0.1:{port}"),
            kind: Kind::Moto { child, log },
        };
        server.wait_for_moto(port);
        Some(server)
    }

    /// Waits (at most 30 s) until moto answers an HTTP request on `port`; fails with its output
    /// if it exits or never answers.
    fn wait_for_moto(&mut self, port: u16) {
        use std::io::{Read, Write};
        let Kind::Moto { child, log } = &mut self.kind else {
            unreachable!()
        };
        let t0 = Instant::now();
        loop {
            if let Ok(mut s) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
                let _ = s.write_all(
                    b"GET /moto-api/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                );
                let mut head = [0u8; 12];
                if s.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.") {
                    return;
                }
            }
            if let Ok(Some(st)) = child.try_wait() {
                let out = std::fs::read_to_string(log.path()).unwrap_or_default();
                panic!("moto.server exited ({st}) before answering:\n{out}");
            }
            if t0.elapsed() > Duration::from_secs(30) {
                let out = std::fs::read_to_string(log.path()).unwrap_or_default();
                panic!("moto.server not answering on port {port} after 30 s:\n{out}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The environment of a `trawl` child that reads from this server.
    pub fn env(&self) -> Env {
        Env::for_endpoint(&self.endpoint)
    }

    /// Whether this is moto (else s3s-fs).
    pub fn is_moto(&self) -> bool {
        matches!(self.kind, Kind::Moto { .. })
    }

    /// s3s-fs only: the file holding `bucket`/`key`'s stored ETag and checksums (a JSON object
    /// with `e_tag` and `checksum_ALG` members), which HeadObject and a whole-object GetObject
    /// answer with as they are, without reading the object again.
    pub fn internal_info_path(&self, bucket: &str, key: &str) -> PathBuf {
        let Kind::S3s { root, .. } = &self.kind else {
            panic!("internal_info_path: s3s-fs only");
        };
        use base64::Engine;
        let enc = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        root.join(format!(
            ".bucket-{}.object-{}.internal.json",
            enc(bucket),
            enc(key)
        ))
    }

    /// s3s-fs only: replaces `bucket`/`key`'s stored checksum `alg` (`crc64nvme`, `crc32`,
    /// `crc32c`, `sha1`, `sha256`) with `value` (base64, as S3 writes it), so that the server
    /// answers with a checksum the bytes do not have. The object must have been uploaded.
    pub fn plant_checksum(&self, bucket: &str, key: &str, alg: &str, value: &str) {
        self.plant_internal(bucket, key, &format!("checksum_{alg}"), value);
    }

    /// s3s-fs only: replaces `bucket`/`key`'s stored ETag (without quotes) with `e_tag`.
    pub fn plant_e_tag(&self, bucket: &str, key: &str, e_tag: &str) {
        self.plant_internal(bucket, key, "e_tag", e_tag);
    }

    fn plant_internal(&self, bucket: &str, key: &str, member: &str, value: &str) {
        let path = self.internal_info_path(bucket, key);
        let text = std::fs::read(&path)
            .unwrap_or_else(|e| panic!("{}: {e} (object not uploaded?)", path.display()));
        let mut info: serde_json::Map<String, serde_json::Value> =
            serde_json::from_slice(&text).unwrap();
        info.insert(member.to_string(), value.into());
        std::fs::write(&path, serde_json::to_vec(&info).unwrap()).unwrap();
    }
}

impl Drop for S3Server {
    fn drop(&mut self) {
        match &mut self.kind {
            Kind::S3s { stop, thread, .. } => {
                if let Some(stop) = stop.take() {
                    let _ = stop.send(());
                }
                if let Some(t) = thread.take() {
                    let _ = t.join();
                }
            }
            Kind::Moto { child, .. } => {
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}
