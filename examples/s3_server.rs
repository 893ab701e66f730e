//! An S3 server over a directory for `bench/s3.py`: the s3s-fs library served as the tests
//! serve it (HTTP/1.1 connections on a multi-threaded runtime), each bucket a subdirectory.
//!
//!     cargo run --release --example s3_server -- DIR PORT ACCESS_KEY SECRET_KEY
//!
//! It prints `listening on http://127.0.0.1:PORT` once bound; SIGINT or SIGTERM ends it (their
//! default action: nothing it holds needs to be finished).
//! The `s3s-fs` binary serves the same library through hyper's automatic HTTP/1-or-2
//! connections; in the bench it stopped accepting connections after some hundreds of requests.

use std::path::PathBuf;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [dir, port, access, secret] = args.as_slice() else {
        return Err("usage: s3_server DIR PORT ACCESS_KEY SECRET_KEY".into());
    };
    let root = PathBuf::from(dir).canonicalize()?;
    let port: u16 = port.parse()?;
    let fs = s3s_fs::FileSystem::new(&root).map_err(|e| format!("{}: {e:?}", root.display()))?;
    let service = {
        let mut b = s3s::service::S3ServiceBuilder::new(fs);
        b.set_auth(s3s::auth::SimpleAuth::from_single(
            access.as_str(),
            secret.as_str(),
        ));
        b.build()
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let served: std::io::Result<()> = rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
        println!("listening on http://{}", listener.local_addr()?);
        loop {
            let sock = match listener.accept().await {
                Ok((sock, _)) => sock,
                Err(e) => {
                    eprintln!("accept: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            let _ = sock.set_nodelay(true);
            let service = service.clone();
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(sock);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
    Ok(served?)
}
