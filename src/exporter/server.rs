//! The exporter's HTTP server (hyper 1 on a single-threaded tokio runtime in a thread of its own):
//! `GET`/`HEAD` of `/metrics` and `/`, 404 elsewhere, 405 for other methods. Robust by construction
//! (docs/design.md §5): one request per connection; a header-read timeout that cuts a client
//! stalling mid-header; a write timeout that cuts a client that stops reading (no byte accepted for
//! that long), and a backstop deadline on the whole exchange; a cap on concurrent connections (503
//! beyond it); a cap on the request head (hyper's buffer limit; bodies are never read); the scrape
//! runs on a blocking thread under a deadline, so a hung read of /proc or /sys gives a
//! failed-collector response, never a hung one. TLS (rustls) and basic auth (bcrypt) from
//! `--web.config.file`. Stopped (and its port freed) when the [`Server`] is dropped.
//! Must not import: cli/, config/, cmd/, ui/, report/, load/, fsync/, import/.

use super::metrics::{self, Health, Scrape};
use super::scrape::Scraper;
use super::webconfig::{TlsFiles, WebConfig};
use crate::error::Error;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::{oneshot, Semaphore};

/// How the server behaves (config::exporter validates the flags into it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerSpec {
    pub listen: SocketAddr,
    /// Longest wait for a whole request head.
    pub read_timeout: Duration,
    /// Longest a response waits for the client to accept more bytes.
    pub write_timeout: Duration,
    /// Longest a scrape may take; past it the response says the collector failed.
    pub scrape_timeout: Duration,
    /// Connections served at once; more get 503.
    pub max_requests: usize,
    /// TLS and basic auth (`--web.config.file`).
    pub web: WebConfig,
}

/// Longest time the backstop deadline allows for delivering an answer to a client that keeps
/// reading slowly (a stalled one is cut after `write_timeout`).
const BACKSTOP_WRITE: Duration = Duration::from_secs(60);

/// The request head may not exceed this (hyper's smallest buffer limit, 8 KiB).
pub const MAX_REQUEST_HEAD_BYTES: usize = 8192;

const INDEX: &str = "<!DOCTYPE html>
<html><head><title>iosat exporter</title></head><body>
<h1>iosat exporter</h1>
<p>Disk counters and device profiles for Prometheus: <a href=\"/metrics\">/metrics</a>.</p>
<p>Rules, alerts: <code>iosat exporter --print-rules</code>, <code>--print-alerts</code>.</p>
</body></html>
";

/// A running server; dropping it stops it.
pub struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    scraper: Mutex<Scraper>,
    scrape_timeout: Duration,
    /// User → bcrypt hash; empty: no authentication.
    users: std::collections::BTreeMap<String, String>,
}

/// The TLS acceptor of `--web.config.file`'s certificate and key (PEM); errors name the file.
fn tls_acceptor(t: &TlsFiles) -> Result<tokio_rustls::TlsAcceptor, Error> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    use tokio_rustls::rustls;
    let bad = |path: &std::path::Path, reason: String| {
        Error::usage("--web.config.file", path.display(), reason)
    };
    let certs = CertificateDer::pem_file_iter(&t.cert_file)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| {
            bad(
                &t.cert_file,
                format!("cert_file: not a PEM certificate ({e})"),
            )
        })?;
    if certs.is_empty() {
        return Err(bad(&t.cert_file, "cert_file: no certificate in it".into()));
    }
    let key = PrivateKeyDer::from_pem_file(&t.key_file).map_err(|e| {
        bad(
            &t.key_file,
            format!("key_file: not a PEM private key ({e})"),
        )
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_no_client_auth().with_single_cert(certs, key))
        .map_err(|e| {
            bad(
                &t.cert_file,
                format!("certificate and key do not fit ({e})"),
            )
        })?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(cfg)))
}

impl Server {
    /// Bind and start serving `scraper` in a thread of its own.
    pub fn start(spec: &ServerSpec, scraper: Scraper) -> Result<Server, Error> {
        let bind_err = |e: std::io::Error| {
            Error::usage(
                "--web.listen-address",
                spec.listen,
                format!("cannot listen there: {e}"),
            )
        };
        let tls = spec.web.tls.as_ref().map(tls_acceptor).transpose()?;
        let std_listener = std::net::TcpListener::bind(spec.listen).map_err(bind_err)?;
        std_listener.set_nonblocking(true).map_err(bind_err)?;
        let addr = std_listener.local_addr().map_err(bind_err)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| Error::io("<tokio runtime>", e))?;
        let (stop, stopped) = oneshot::channel();
        let shared = Arc::new(Shared {
            scraper: Mutex::new(scraper),
            scrape_timeout: spec.scrape_timeout,
            users: spec.web.users.clone(),
        });
        let spec = spec.clone();
        let thread = std::thread::Builder::new()
            .name("iosat-exporter".into())
            .spawn(move || {
                rt.block_on(async move {
                    match tokio::net::TcpListener::from_std(std_listener) {
                        Ok(l) => serve(l, spec, tls, shared, stopped).await,
                        Err(e) => crate::error::say(format_args!("iosat: exporter: {e}")),
                    }
                });
                // A scrape stuck in a hung read must not keep the process from stopping.
                rt.shutdown_background();
            })
            .map_err(|e| Error::io("<exporter thread>", e))?;
        Ok(Server {
            addr,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address actually bound (port 0 picks a free one).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

async fn serve(
    listener: tokio::net::TcpListener,
    spec: ServerSpec,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    mut stopped: oneshot::Receiver<()>,
) {
    let permits = Arc::new(Semaphore::new(spec.max_requests));
    loop {
        let stream = tokio::select! {
            _ = &mut stopped => return,
            r = listener.accept() => match r {
                Ok((s, _)) => s,
                // EMFILE and the like: wait a little instead of spinning.
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        match Arc::clone(&permits).try_acquire_owned() {
            Ok(permit) => {
                let shared = Arc::clone(&shared);
                let spec = spec.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    connection(stream, &spec, tls, shared).await;
                    drop(permit);
                });
            }
            Err(_) => {
                tokio::spawn(too_busy(stream, spec.write_timeout));
            }
        }
    }
}

/// A connection whose writes fail with TimedOut when the peer accepts no byte for
/// `write_timeout` (a client that stopped reading), whatever the size of the answer.
struct WriteTimeout {
    inner: tokio::net::TcpStream,
    write_timeout: Duration,
    stalled: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl WriteTimeout {
    /// Map a write-side poll: progress resets the timer; Pending starts it; expiry fails.
    fn guard<T>(
        &mut self,
        cx: &mut Context<'_>,
        r: Poll<std::io::Result<T>>,
    ) -> Poll<std::io::Result<T>> {
        if r.is_ready() {
            self.stalled = None;
            return r;
        }
        let t = self.write_timeout;
        let s = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(t)));
        match s.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(std::io::ErrorKind::TimedOut.into())),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncRead for WriteTimeout {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteTimeout {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.guard(cx, r)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.guard(cx, r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let r = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.guard(cx, r)
    }
}

/// Serve one request on one connection: the head under the read timeout, each write under
/// the write timeout, and the whole exchange under a backstop deadline.
async fn connection(
    stream: tokio::net::TcpStream,
    spec: &ServerSpec,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
) {
    let io = WriteTimeout {
        inner: stream,
        write_timeout: spec.write_timeout,
        stalled: None,
    };
    match tls {
        None => http(io, spec, shared).await,
        // The handshake is part of the request head: under the read timeout.
        Some(acceptor) => {
            if let Ok(Ok(io)) = tokio::time::timeout(spec.read_timeout, acceptor.accept(io)).await {
                http(io, spec, shared).await
            }
        }
    }
}

async fn http<I>(io: I, spec: &ServerSpec, shared: Arc<Shared>)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| respond(req, Arc::clone(&shared)));
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(spec.read_timeout)
        .keep_alive(false)
        .max_buf_size(MAX_REQUEST_HEAD_BYTES)
        .serve_connection(TokioIo::new(io), service);
    // Backstop: however a client trickles, a connection ends within this (dropping the
    // connection future closes the socket).
    let deadline = spec.read_timeout + spec.scrape_timeout + BACKSTOP_WRITE;
    let _ = tokio::time::timeout(deadline, conn).await;
}

/// Beyond the cap: a fixed 503, written under the write timeout, then a short drain so the
/// client reads the answer instead of a reset.
async fn too_busy(mut stream: tokio::net::TcpStream, write_timeout: Duration) {
    const BODY: &str = "too many concurrent requests\n";
    let resp = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
content-length: {}\r\nconnection: close\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = tokio::time::timeout(write_timeout, async {
        stream.write_all(resp.as_bytes()).await?;
        stream.shutdown().await?;
        let mut buf = [0u8; 1024];
        let drain = async {
            use tokio::io::AsyncReadExt;
            while stream.read(&mut buf).await? > 0 {}
            Ok::<(), std::io::Error>(())
        };
        let _ = tokio::time::timeout(Duration::from_millis(200), drain).await;
        Ok::<(), std::io::Error>(())
    })
    .await;
}

fn response(status: StatusCode, ctype: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

async fn respond(
    req: Request<Incoming>,
    shared: Arc<Shared>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    const TEXT: &str = "text/plain; charset=utf-8";
    if !shared.users.is_empty() && !authorized(&req, &shared).await {
        let mut r = response(StatusCode::UNAUTHORIZED, TEXT, "unauthorized\n".into());
        r.headers_mut().insert(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"iosat\""),
        );
        return Ok(r);
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = response(
            StatusCode::METHOD_NOT_ALLOWED,
            TEXT,
            "only GET and HEAD\n".into(),
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return Ok(r);
    }
    Ok(match req.uri().path() {
        "/metrics" => response(StatusCode::OK, metrics::CONTENT_TYPE, scrape(&shared).await),
        "/" => response(StatusCode::OK, "text/html; charset=utf-8", INDEX.into()),
        _ => response(StatusCode::NOT_FOUND, TEXT, "not found\n".into()),
    })
}

/// The exposition of one scrape, or of a failed collector when the scrape missed its deadline
/// or the previous one is still stuck (it holds the scraper).
async fn scrape(shared: &Arc<Shared>) -> String {
    let timeout = shared.scrape_timeout;
    let s = Arc::clone(shared);
    let job = tokio::task::spawn_blocking(move || {
        let mut scraper = s.scraper.try_lock().ok()?;
        Some(metrics::render(&scraper.scrape()))
    });
    match tokio::time::timeout(timeout, job).await {
        Ok(Ok(Some(text))) => text,
        _ => metrics::render(&Scrape {
            devices: vec![],
            health: vec![Health {
                collector: "diskstats",
                success: false,
                duration_s: timeout.as_secs_f64(),
            }],
        }),
    }
}

/// Basic auth against the bcrypt hashes of `basic_auth_users` (verified on a blocking thread:
/// bcrypt is slow by design).
async fn authorized(req: &Request<Incoming>, shared: &Arc<Shared>) -> bool {
    use base64::Engine;
    let Some(creds) = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .ok()
        })
        .and_then(|b| String::from_utf8(b).ok())
    else {
        return false;
    };
    let Some((user, pass)) = creds.split_once(':') else {
        return false;
    };
    // An unknown user costs one bcrypt check too, against a configured hash (so at the same
    // cost), and fails: the response time must not tell which user names exist.
    let known = shared.users.get(user).cloned();
    let Some(hash) = known
        .clone()
        .or_else(|| shared.users.values().next().cloned())
    else {
        return false;
    };
    let pass = pass.to_string();
    let matched = tokio::task::spawn_blocking(move || bcrypt::verify(pass, &hash).unwrap_or(false))
        .await
        .unwrap_or(false);
    matched && known.is_some()
}
