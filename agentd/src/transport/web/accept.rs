//! How the listener accepts connections: TLS (the certificate and key from PEM files, and
//! a listener whose connections come out of their handshake already encrypted; handshakes
//! run side by side, so a client that stalls in one holds up nobody, and have a deadline),
//! and a cap on the connections open at once.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// A handshake not done by then is dropped.
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(10);
/// Handshakes under way at once; past this, accepting waits for one to end.
const MAX_HANDSHAKES: usize = 64;

/// The server's TLS settings from the certificate chain and key files.
pub(super) fn acceptor(cert: &Path, key: &Path) -> Result<TlsAcceptor, String> {
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("[listen] tls_cert {}: {e}", cert.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "[listen] tls_cert {} holds no certificate",
            cert.display()
        ));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| format!("[listen] tls_key {}: {e}", key.display()))?;
    let config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| format!("[listen] tls_cert and tls_key do not make a server: {e}"))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// Accepts TCP connections and hands out those whose TLS handshake succeeded.
pub(super) struct TlsListener {
    tcp: TcpListener,
    acceptor: TlsAcceptor,
    handshakes: JoinSet<Option<(TlsStream<TcpStream>, SocketAddr)>>,
}

impl TlsListener {
    pub(super) fn new(tcp: TcpListener, acceptor: TlsAcceptor) -> TlsListener {
        TlsListener {
            tcp,
            acceptor,
            handshakes: JoinSet::new(),
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let room = self.handshakes.len() < MAX_HANDSHAKES;
            tokio::select! {
                accepted = self.tcp.accept(), if room => match accepted {
                    Ok((stream, peer)) => {
                        no_delay(&stream);
                        let acceptor = self.acceptor.clone();
                        self.handshakes.spawn(async move {
                            let shake = tokio::time::timeout(
                                HANDSHAKE_DEADLINE,
                                acceptor.accept(stream),
                            );
                            match shake.await {
                                Ok(Ok(tls)) => Some((tls, peer)),
                                Ok(Err(e)) => {
                                    tracing::debug!(%peer, "TLS handshake failed: {e}");
                                    None
                                }
                                Err(_) => {
                                    tracing::debug!(%peer, "TLS handshake timed out");
                                    None
                                }
                            }
                        });
                    }
                    Err(e) => {
                        tracing::warn!("accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(done) = self.handshakes.join_next(), if !self.handshakes.is_empty() => {
                    if let Ok(Some(ready)) = done {
                        return ready;
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.tcp.local_addr()
    }
}

/// A listener that holds at most so many connections open at once (each connection's IO
/// carries its slot): past it, new ones wait in the kernel's backlog. Connections that
/// never finish their request cannot take every file descriptor the daemon has.
pub(super) struct Capped<L> {
    inner: L,
    slots: Arc<tokio::sync::Semaphore>,
}

impl<L> Capped<L> {
    pub(super) fn new(inner: L, max: usize) -> Capped<L> {
        Capped {
            inner,
            slots: Arc::new(tokio::sync::Semaphore::new(max.max(1))),
        }
    }
}

impl<L: axum::serve::Listener> axum::serve::Listener for Capped<L> {
    type Io = CappedIo<L::Io>;
    type Addr = L::Addr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        // The semaphore is never closed.
        let slot = self.slots.clone().acquire_owned().await.ok();
        let (io, addr) = self.inner.accept().await;
        (CappedIo { io, _slot: slot }, addr)
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// A connection and its slot, freed when the connection is dropped.
pub(super) struct CappedIo<T> {
    io: T,
    _slot: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for CappedIo<T> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for CappedIo<T> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// Small writes go out at once: a turn streams its deltas a few at a time, and Nagle's
/// algorithm against the client's delayed ACK holds each for up to 40 ms (measured: a
/// three-delta turn took 44 ms over WebSocket against 0.6 ms on the socket).
pub(super) fn no_delay(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {e}");
    }
}
