//! Streamable HTTP for the test server: rmcp's `StreamableHttpService` (a tower service
//! with stateful sessions in a `LocalSessionManager`) mounted at `/mcp`, served by plain
//! hyper HTTP/1.1 connections. Every other path is a 404. It prints the one `listening`
//! line tests wait for, then serves until the process is killed.

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::task::TaskTracker;
use tower::Service;

use crate::tools::{Shared, TestServer};

/// Where the MCP endpoint lives.
const MCP_PATH: &str = "/mcp";

pub(crate) async fn serve(addr: SocketAddr, shared: Arc<Shared>) -> anyhow::Result<()> {
    let listener = TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    let local = listener.local_addr()?;
    let mcp = StreamableHttpService::new(
        move || Ok(TestServer::new(shared.clone())),
        Arc::new(LocalSessionManager::default()),
        StreamableHttpServerConfig::default(),
    );
    {
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening http://{local}{MCP_PATH}")?;
        stdout.flush()?;
    }
    let connections = TaskTracker::new();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _peer)) => stream,
            Err(e) => {
                // E.g. out of file descriptors: say so and keep serving.
                eprintln!("mcp-test-server: accept failed: {e}");
                continue;
            }
        };
        let mcp = mcp.clone();
        connections.spawn(async move {
            let service = service_fn(move |request: Request<Incoming>| {
                let mut mcp = mcp.clone();
                async move {
                    if request.uri().path() != MCP_PATH {
                        return Ok::<_, Infallible>(not_found());
                    }
                    mcp.call(request).await
                }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                eprintln!("mcp-test-server: connection ended with an error: {e}");
            }
        });
    }
}

fn not_found() -> Response<http_body_util::combinators::BoxBody<Bytes, Infallible>> {
    let mut response = Response::new(Full::new(Bytes::from_static(b"not found")).boxed());
    *response.status_mut() = StatusCode::NOT_FOUND;
    response
}
