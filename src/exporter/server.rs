//! The exporter's HTTP server (hyper 1 on a single-threaded tokio runtime in a thread of its own):
//! `GET`/`HEAD` of `/metrics` and `/`, 404 elsewhere, 405 for other methods. Robust by construction
//! (docs/design.md §5): one request per connection; a header-read timeout that cuts a client
//! stalling mid-header; a write timeout that cuts a client that stops reading (no byte accepted for
//! that long), and a backstop deadline on the whole exchange; a cap on concurrent requests counted
//! once they are authenticated (503 beyond it; failed checks have a bcrypt queue of their own,
//! so wrong passwords cannot starve a scrape) and a larger one on open connections, where the
//! oldest connection that has sent nothing is cut for a newcomer, so idle sockets cannot deny
//! a scrape; a cap on the request head (hyper's buffer limit; bodies are never read); the scrape
//! runs on a blocking thread under a deadline, so a hung read of /proc or /sys gives a
//! failed-collector response, never a hung one. TLS (rustls, with client certificates, versions
//! and suites), basic auth (bcrypt; its users re-read when the file changes, a broken file
//! keeping the old ones; a failed check never faster than the costliest hash), extra headers
//! and a rate limit (429) from `--web.config.file`. `/metrics` answers in the protobuf exposition (proto.rs) when the
//! scraper's Accept header prefers it. With learning, a declared cap or hindsight on, a task of the
//! same runtime ticks the scraper every second (scrape::LEARN_EVERY_NS), or at the hindsight
//! ring's shorter interval, whatever the scrape interval.
//! Stopped (and its port freed, the ticking ended) when the [`Server`] is dropped.
//! Must not import: cli/, config/, cmd/, ui/, report/, load/, fsync/, import/.

use super::metrics::{self, Health, Scrape};
use super::scrape::Scraper;
use super::webconfig::{ClientAuth, RateLimit, TlsFiles, TlsVersion, WebConfig};
use crate::error::Error;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{
    HeaderValue, ACCEPT, ALLOW, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE,
};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::sync::{oneshot, OwnedSemaphorePermit, Semaphore};

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
    /// Requests served at once (counted once their head has arrived); more get 503.
    /// Connections still sending their head have a cap of their own, [`idle_cap`].
    pub max_requests: usize,
    /// TLS and basic auth (`--web.config.file`).
    pub web: WebConfig,
    /// The file `web` was read from: its `basic_auth_users` are re-read when it changes.
    pub web_file: Option<std::path::PathBuf>,
}

/// Longest time the backstop deadline allows for delivering an answer to a client that keeps
/// reading slowly (a stalled one is cut after `write_timeout`).
const BACKSTOP_WRITE: Duration = Duration::from_secs(60);

/// Connections open at once (idle or sending their head, each cut after the read timeout):
/// far more than the requests served; at it, the oldest connection that has sent no request
/// is cut for the newcomer, and only when every one is being served does a newcomer get 503.
pub fn idle_cap(max_requests: usize) -> usize {
    (max_requests * 16).max(64)
}

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
    shared: Arc<Shared>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

struct Shared {
    /// One scrape at a time; a scrape that finds another running waits for it (within its own
    /// deadline) instead of failing: two Prometheus servers scraping at once both get data.
    scraper: Arc<tokio::sync::Mutex<Scraper>>,
    scrape_timeout: Duration,
    /// Basic auth; None: no authentication. Swapped when `--web.config.file` changes.
    auth: std::sync::RwLock<Option<Arc<Auth>>>,
    /// `--web.config.file`, re-read for its users when it changes (as exporter-toolkit does).
    web_file: Option<WebFile>,
    /// Requests being served (head arrived), at most `max_requests`.
    requests: Arc<Semaphore>,
    /// `http_server_config.headers`, on every response.
    headers: Vec<(hyper::header::HeaderName, HeaderValue)>,
    /// `rate_limit`: None, no limit.
    limiter: Option<std::sync::Mutex<Bucket>>,
}

/// exporter-toolkit's `rate_limit` (Go's x/time/rate): a bucket of `burst` tokens, refilled
/// one per `interval`; a request takes one or gets 429.
#[derive(Debug)]
pub struct Bucket {
    limit: RateLimit,
    tokens: f64,
    last: std::time::Instant,
}

impl Bucket {
    pub fn new(limit: RateLimit, now: std::time::Instant) -> Bucket {
        Bucket {
            limit,
            tokens: f64::from(limit.burst),
            last: now,
        }
    }

    /// Take a token at `now`: false when there is none.
    pub fn take(&mut self, now: std::time::Instant) -> bool {
        let burst = f64::from(self.limit.burst);
        let dt = now.saturating_duration_since(self.last).as_secs_f64();
        let per_s = match self.limit.interval.as_secs_f64() {
            i if i > 0.0 => 1.0 / i,
            _ => f64::INFINITY,
        };
        self.tokens = (self.tokens + dt * per_s).min(burst);
        self.last = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

use crate::sys::fs::read_regular;

/// The TLS acceptor of `--web.config.file`'s certificate and key (PEM); errors name the file.
fn tls_acceptor(t: &TlsFiles) -> Result<tokio_rustls::TlsAcceptor, Error> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    use tokio_rustls::rustls;
    let bad = |path: &std::path::Path, reason: String| {
        Error::usage("--web.config.file", path.display(), reason)
    };
    let cert_pem =
        read_regular(&t.cert_file).map_err(|r| bad(&t.cert_file, format!("cert_file: {r}")))?;
    let certs = CertificateDer::pem_slice_iter(&cert_pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            bad(
                &t.cert_file,
                format!("cert_file: not a PEM certificate ({e})"),
            )
        })?;
    if certs.is_empty() {
        return Err(bad(&t.cert_file, "cert_file: no certificate in it".into()));
    }
    let now_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    if let Some(w) = expiry_warning(&t.cert_file, &certs[0], now_s) {
        crate::error::warn(w);
    }
    let key_pem =
        read_regular(&t.key_file).map_err(|r| bad(&t.key_file, format!("key_file: {r}")))?;
    let key = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| {
        bad(
            &t.key_file,
            format!("key_file: not a PEM private key ({e})"),
        )
    })?;
    let mut provider = rustls::crypto::ring::default_provider();
    if !t.cipher_suites.is_empty() {
        // TLS 1.3's suites stay (Go does not configure them either); TLS 1.2's are the list.
        provider.cipher_suites.retain(|s| {
            s.version() == &rustls::version::TLS13
                || t.cipher_suites.contains(&format!("{:?}", s.suite()))
        });
    }
    let provider = Arc::new(provider);
    // rustls serves 1.2 and 1.3: TLS10 and TLS11 as a minimum mean 1.2.
    let versions: Vec<&'static rustls::SupportedProtocolVersion> = [
        (TlsVersion::Tls12, &rustls::version::TLS12),
        (TlsVersion::Tls13, &rustls::version::TLS13),
    ]
    .into_iter()
    .filter(|(v, _)| {
        t.min_version.map_or(true, |m| *v >= m) && t.max_version.map_or(true, |m| *v <= m)
    })
    .map(|(_, p)| p)
    .collect();
    let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_protocol_versions(&versions)
        .map_err(|e| {
            bad(
                &t.cert_file,
                format!("TLS versions and cipher suites do not fit ({e})"),
            )
        })?;
    let builder = match (&t.client_ca_file, t.client_auth) {
        (Some(ca), auth) if auth != ClientAuth::NoClientCert => {
            let pem = read_regular(ca).map_err(|r| bad(ca, format!("client_ca_file: {r}")))?;
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(&pem) {
                let c =
                    c.map_err(|e| bad(ca, format!("client_ca_file: not a PEM certificate ({e})")))?;
                roots
                    .add(c)
                    .map_err(|e| bad(ca, format!("client_ca_file: {e}")))?;
            }
            if roots.is_empty() {
                return Err(bad(ca, "client_ca_file: no certificate in it".into()));
            }
            let v = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                Arc::clone(&provider),
            );
            let v = if auth == ClientAuth::VerifyClientCertIfGiven {
                v.allow_unauthenticated()
            } else {
                v
            };
            let v = v
                .build()
                .map_err(|e| bad(ca, format!("client_ca_file: {e}")))?;
            builder.with_client_cert_verifier(v)
        }
        _ => builder.with_no_client_auth(),
    };
    let mut cfg = builder.with_single_cert(certs, key).map_err(|e| {
        bad(
            &t.cert_file,
            format!("certificate and key do not fit ({e})"),
        )
    })?;
    cfg.ignore_client_order = t.prefer_server_cipher_suites;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(cfg)))
}

/// One line when the metrics are served to every network the host is on: a listen address
/// that is not loopback, with neither TLS nor basic auth.
pub fn exposure_warning(listen: SocketAddr, web: &WebConfig) -> Option<String> {
    let open =
        !listen.ip().to_canonical().is_loopback() && web.tls.is_none() && web.users.is_empty();
    open.then(|| {
        let wide = if listen.ip().is_unspecified() {
            " (every interface)"
        } else {
            ""
        };
        format!(
            "--web.listen-address {listen}{wide}: serving plain HTTP without authentication to anyone who can reach this host; listen on 127.0.0.1, or set TLS and basic_auth_users in --web.config.file"
        )
    })
}

/// One line when the served certificate's notAfter has passed: it is served anyway (the user
/// may be renewing it), but every client that checks will refuse the connection.
fn expiry_warning(path: &std::path::Path, der: &[u8], now_s: i64) -> Option<String> {
    let not_after = cert_not_after_s(der)?;
    (not_after < now_s).then(|| {
        format!(
            "--web.config.file: the certificate in {} expired on {} (its notAfter); TLS clients will refuse it",
            path.display(),
            crate::units::iso_utc(not_after.saturating_mul(1_000_000_000))
        )
    })
}

/// One DER element: (tag, contents, what follows).
fn der(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, b) = b.split_first()?;
    let (&l0, b) = b.split_first()?;
    let (len, b) = if l0 < 0x80 {
        (usize::from(l0), b)
    } else {
        let n = usize::from(l0 & 0x7f);
        if n == 0 || n > 4 || b.len() < n {
            return None;
        }
        let len = b[..n].iter().fold(0usize, |a, &x| a << 8 | usize::from(x));
        (len, &b[n..])
    };
    (b.len() >= len).then(|| (tag, &b[..len], &b[len..]))
}

/// The notAfter of an X.509 certificate (DER), Unix seconds: Certificate → tbsCertificate →
/// [version], serial, signature, issuer, validity → notAfter (UTCTime or GeneralizedTime).
fn cert_not_after_s(cert: &[u8]) -> Option<i64> {
    let (0x30, c, _) = der(cert)? else {
        return None;
    };
    let (0x30, tbs, _) = der(c)? else { return None };
    let (tag, _, mut rest) = der(tbs)?;
    if tag == 0xa0 {
        rest = der(rest)?.2; // the serial after the explicit version
    }
    let rest = der(rest)?.2; // signature algorithm
    let rest = der(rest)?.2; // issuer
    let (0x30, validity, _) = der(rest)? else {
        return None;
    };
    let (tag, t, _) = der(der(validity)?.2)?;
    let t = std::str::from_utf8(t).ok()?.strip_suffix('Z')?;
    let (y, t) = match tag {
        0x17 => {
            let yy: i64 = t.get(..2)?.parse().ok()?;
            (if yy >= 50 { 1900 + yy } else { 2000 + yy }, &t[2..])
        }
        0x18 => (t.get(..4)?.parse().ok()?, &t[4..]),
        _ => return None,
    };
    let n = |i: usize| -> Option<i64> { t.get(i..i + 2)?.parse().ok() };
    let iso = format!(
        "{y:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        n(0)?,
        n(2)?,
        n(4)?,
        n(6)?,
        n(8)?
    );
    Some(crate::units::parse_iso_utc(&iso)?.div_euclid(1_000_000_000))
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
        if let Some(w) = exposure_warning(addr, &spec.web) {
            crate::error::warn(w);
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| Error::io("<tokio runtime>", e))?;
        let (stop, stopped) = oneshot::channel();
        let tick_every = scraper.tick_every_ns();
        let shared = Arc::new(Shared {
            scraper: Arc::new(tokio::sync::Mutex::new(scraper)),
            scrape_timeout: spec.scrape_timeout,
            auth: std::sync::RwLock::new(Auth::new(&spec.web.users)?.map(Arc::new)),
            web_file: spec.web_file.clone().map(WebFile::new),
            requests: Arc::new(Semaphore::new(spec.max_requests)),
            headers: spec
                .web
                .headers
                .iter()
                .map(|(k, v)| {
                    let bad = |e: String| Error::usage("--web.config.file", k, e);
                    Ok((
                        hyper::header::HeaderName::from_bytes(k.as_bytes())
                            .map_err(|e| bad(e.to_string()))?,
                        HeaderValue::from_str(v).map_err(|e| bad(e.to_string()))?,
                    ))
                })
                .collect::<Result<_, Error>>()?,
            limiter: spec
                .web
                .rate_limit
                .map(|l| std::sync::Mutex::new(Bucket::new(l, std::time::Instant::now()))),
        });
        let spec = spec.clone();
        let served = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("iosat-exporter".into())
            .spawn(move || {
                rt.block_on(async move {
                    if let Some(every) = tick_every {
                        tokio::spawn(learn_every(Arc::clone(&served.scraper), every));
                    }
                    match tokio::net::TcpListener::from_std(std_listener) {
                        Ok(l) => serve(l, spec, tls, served, stopped).await,
                        Err(e) => crate::error::say(format_args!("iosat: exporter: {e}")),
                    }
                });
                // A scrape stuck in a hung read must not keep the process from stopping.
                rt.shutdown_background();
            })
            .map_err(|e| Error::io("<exporter thread>", e))?;
        Ok(Server {
            addr,
            shared,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The address actually bound (port 0 picks a free one).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The most bcrypt checks that ran at once so far (at most [`AUTH_CHECKS`]); 0 without
    /// basic auth.
    pub fn auth_checks_peak(&self) -> usize {
        self.shared
            .current_auth()
            .map_or(0, |a| a.peak.load(std::sync::atomic::Ordering::SeqCst))
    }
}

impl Server {
    /// How long a failed basic-auth check takes at least (see [`Auth`]); None without users.
    pub fn auth_floor(&self) -> Option<Duration> {
        self.shared.current_auth().map(|a| a.floor())
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
    let permits = Arc::new(Semaphore::new(idle_cap(spec.max_requests)));
    let idle: Arc<std::sync::Mutex<Idle>> = Arc::default();
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
        let permit = match Arc::clone(&permits).try_acquire_owned() {
            Ok(p) => p,
            Err(_) => {
                // At the cap: the oldest connection that has sent no request yet gives its
                // place to the newcomer (issue 39 case 9: idle sockets held open cannot deny
                // a scrape); when every connection is being served, the newcomer gets 503.
                let victim = idle.lock().ok().and_then(|mut i| i.conns.pop_first());
                let taken = victim.and_then(|(_, (h, slot))| {
                    h.abort();
                    slot.lock().ok().and_then(|mut s| s.take())
                });
                match taken {
                    Some(p) => p,
                    None => {
                        tokio::spawn(too_busy(stream, spec.write_timeout));
                        continue;
                    }
                }
            }
        };
        let slot: Slot = Arc::new(std::sync::Mutex::new(Some(permit)));
        let (shared, spec2, tls) = (Arc::clone(&shared), spec.clone(), tls.clone());
        let id = idle.lock().map_or(0, |mut i| {
            i.next += 1;
            i.next
        });
        let head = Head {
            idle: Arc::clone(&idle),
            id,
        };
        let held = Arc::clone(&slot);
        let task = tokio::spawn(async move {
            connection(stream, &spec2, tls, shared, head).await;
            if let Ok(mut s) = held.lock() {
                s.take();
            }
        });
        // The runtime has one thread: the task has not run yet, so it is registered before
        // it can end or receive its head.
        if let Ok(mut i) = idle.lock() {
            i.conns.insert(id, (task.abort_handle(), slot));
        }
    }
}

/// A connection's place under the cap on open connections: taken from it when it is evicted.
type Slot = Arc<std::sync::Mutex<Option<OwnedSemaphorePermit>>>;

/// The connections that have sent no request yet, oldest first.
#[derive(Default)]
struct Idle {
    next: u64,
    conns: std::collections::BTreeMap<u64, (tokio::task::AbortHandle, Slot)>,
}

/// A connection's entry among the idle ones: removed when its request head arrives (it is
/// then served, never evicted) and when it ends.
#[derive(Clone)]
struct Head {
    idle: Arc<std::sync::Mutex<Idle>>,
    id: u64,
}

impl Head {
    fn arrived(&self) {
        if let Ok(mut i) = self.idle.lock() {
            i.conns.remove(&self.id);
        }
    }
}

impl Drop for Head {
    fn drop(&mut self) {
        self.arrived();
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
    head: Head,
) {
    let io = WriteTimeout {
        inner: stream,
        write_timeout: spec.write_timeout,
        stalled: None,
    };
    match tls {
        None => http(io, spec, shared, head).await,
        // The handshake is part of the request head: under the read timeout.
        Some(acceptor) => {
            if let Ok(Ok(io)) = tokio::time::timeout(spec.read_timeout, acceptor.accept(io)).await {
                http(io, spec, shared, head).await
            }
        }
    }
}

async fn http<I>(io: I, spec: &ServerSpec, shared: Arc<Shared>, head: Head)
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    // The request slot, taken once the head has arrived, is held until the connection ends
    // (the answer written): one request per connection.
    let slot: Arc<std::sync::Mutex<Option<OwnedSemaphorePermit>>> = Arc::default();
    let held = Arc::clone(&slot);
    let service = hyper::service::service_fn(move |req| {
        let shared = Arc::clone(&shared);
        let held = Arc::clone(&held);
        head.arrived();
        async move { respond(req, shared, held).await }
    });
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
    drop(slot);
}

const TOO_BUSY: &str = "too many concurrent requests\n";

/// Beyond the connection cap: a fixed 503, written under the write timeout, then a short drain so the
/// client reads the answer instead of a reset.
async fn too_busy(mut stream: tokio::net::TcpStream, write_timeout: Duration) {
    const BODY: &str = TOO_BUSY;
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

fn response(
    status: StatusCode,
    ctype: &'static str,
    body: impl Into<Bytes>,
) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

async fn respond(
    req: Request<Incoming>,
    shared: Arc<Shared>,
    held: Arc<std::sync::Mutex<Option<OwnedSemaphorePermit>>>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let mut r = answer(req, &shared, &held).await;
    for (k, v) in &shared.headers {
        r.headers_mut().insert(k.clone(), v.clone());
    }
    Ok(r)
}

async fn answer(
    req: Request<Incoming>,
    shared: &Arc<Shared>,
    held: &std::sync::Mutex<Option<OwnedSemaphorePermit>>,
) -> Response<Full<Bytes>> {
    const TEXT: &str = "text/plain; charset=utf-8";
    // Before authentication: a flood of wrong passwords is limited too.
    if let Some(l) = &shared.limiter {
        let ok = l
            .lock()
            .map_or(true, |mut b| b.take(std::time::Instant::now()));
        if !ok {
            return response(StatusCode::TOO_MANY_REQUESTS, TEXT, "too many requests\n");
        }
    }
    shared.reload_auth().await;
    let checked = match shared.current_auth() {
        Some(auth) => authorized(&req, &auth).await,
        None => Checked::Pass,
    };
    if checked == Checked::Busy {
        // Not a verdict on the credentials: a scraper told 401 would think its password
        // wrong; 503 says "again later", as past the request cap.
        let mut r = response(StatusCode::SERVICE_UNAVAILABLE, TEXT, TOO_BUSY);
        r.headers_mut()
            .insert(RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    }
    if checked == Checked::Fail {
        let mut r = response(StatusCode::UNAUTHORIZED, TEXT, "unauthorized\n");
        r.headers_mut().insert(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"iosat\""),
        );
        return r;
    }
    // The request cap counts authenticated work only (issue 39 case 9): wrong passwords
    // wait for bcrypt in a queue of their own and never hold a request slot.
    match Arc::clone(&shared.requests).try_acquire_owned() {
        Ok(p) => {
            if let Ok(mut h) = held.lock() {
                *h = Some(p);
            }
        }
        Err(_) => return response(StatusCode::SERVICE_UNAVAILABLE, TEXT, TOO_BUSY),
    }
    if req.uri().path() == "/hindsight" {
        return hindsight(req.method(), shared).await;
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        let mut r = response(StatusCode::METHOD_NOT_ALLOWED, TEXT, "only GET and HEAD\n");
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    match req.uri().path() {
        "/metrics" => {
            // Protobuf (native histograms) when the scraper prefers it, else the text format.
            let proto = req
                .headers()
                .get(ACCEPT)
                .and_then(|v| v.to_str().ok())
                .is_some_and(super::proto::wants_protobuf);
            let (ctype, body) = scrape(shared, proto).await;
            response(StatusCode::OK, ctype, body)
        }
        "/" => response(StatusCode::OK, "text/html; charset=utf-8", INDEX),
        _ => response(StatusCode::NOT_FOUND, TEXT, "not found\n"),
    }
}

/// `POST /hindsight` (issue 41; usable as an Alertmanager webhook receiver, whose body is not
/// read): a dump of the samples held, written after the tail; 202 says where it will go, 404
/// that hindsight is off. Behind the same authentication and request cap as `/metrics`.
async fn hindsight(method: &Method, shared: &Arc<Shared>) -> Response<Full<Bytes>> {
    const TEXT: &str = "text/plain; charset=utf-8";
    if method != Method::POST {
        let mut r = response(StatusCode::METHOD_NOT_ALLOWED, TEXT, "only POST\n");
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("POST"));
        return r;
    }
    let said = shared.scraper.lock().await.request_hindsight("request");
    match said {
        Some(words) => response(StatusCode::ACCEPTED, TEXT, words),
        None => response(
            StatusCode::NOT_FOUND,
            TEXT,
            "hindsight is off (--hindsight 0, or no state directory and no --hindsight-dir)\n",
        ),
    }
}

/// The learner's and the hindsight ring's own cadence (scrape::LEARN_EVERY_NS, or the ring's
/// shorter interval: Scraper::tick_every_ns): a tick every `every_ns` on a blocking thread,
/// whatever the scrape interval. A tick waits for the one before (a hung read of /proc holds
/// one thread, never a pile of them; a late tick is delayed, not doubled: the learner divides
/// by the measured interval), and the task ends with the runtime when the server stops.
async fn learn_every(scraper: Arc<tokio::sync::Mutex<Scraper>>, every_ns: u64) {
    let mut every = tokio::time::interval(Duration::from_nanos(every_ns));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        every.tick().await;
        let mut guard = Arc::clone(&scraper).lock_owned().await;
        if tokio::task::spawn_blocking(move || guard.tick())
            .await
            .is_err()
        {
            return;
        }
    }
}

/// The exposition of one scrape, or of a failed collector when the scrape missed its deadline.
/// A scrape already running is waited for within the deadline (the scraper serves one at a
/// time); one stuck past it (a hung read) keeps the scraper, and later scrapes fail at their
/// own deadline.
async fn scrape(shared: &Arc<Shared>, proto: bool) -> (&'static str, Bytes) {
    let timeout = shared.scrape_timeout;
    let scraper = Arc::clone(&shared.scraper);
    let render = move |mut s: Scrape| {
        s.build = Some(metrics::BuildInfo::THIS);
        if proto {
            (
                super::proto::CONTENT_TYPE,
                Bytes::from(super::proto::render(&s)),
            )
        } else {
            (metrics::CONTENT_TYPE, Bytes::from(metrics::render(&s)))
        }
    };
    let job = async move {
        let mut guard = scraper.lock_owned().await;
        // The guard moves into the blocking thread: a scrape cut by the deadline keeps the
        // scraper until it really ends.
        tokio::task::spawn_blocking(move || render(guard.scrape()))
            .await
            .ok()
    };
    match tokio::time::timeout(timeout, job).await {
        Ok(Some(out)) => out,
        _ => render(Scrape {
            devices: vec![],
            health: vec![Health {
                collector: "diskstats",
                success: false,
                duration_s: timeout.as_secs_f64(),
            }],
            blk_dropped: None,
            hindsight: None,
            build: None,
            cgroup_unattributed: None,
            cgroup_pressure: vec![],
        }),
    }
}

/// The `basic_auth_users` of `--web.config.file`, checked so that the answer tells nothing
/// but yes or no. The rule (issue 39 case 8): a failed check answers no sooner than a check
/// against the costliest hash in the file takes (measured when the file is loaded, as
/// [`Auth::floor`]): an unknown user is checked against a dummy hash of that cost, and a real
/// user whose hash is cheaper waits out the difference (asleep, no CPU), so with mixed costs
/// no user stands out by the time a wrong password takes. A success is remembered (a keyed
/// 64-bit hash of user and password, never the password; cleared when the file changes), so
/// authenticated scrapes after the first cost no bcrypt and cannot queue behind wrong ones.
pub struct Auth {
    users: std::collections::BTreeMap<String, String>,
    dummy: String,
    /// How long a check against the dummy (the costliest hash) took at load.
    floor: Duration,
    /// Keyed hashes of (user, password) pairs that passed.
    passed: std::sync::Mutex<Vec<u64>>,
    keys: std::collections::hash_map::RandomState,
    /// Checks waiting for bcrypt or running (at most [`AUTH_QUEUE`]; more get 503 at once).
    queue: Arc<Semaphore>,
    /// At most [`AUTH_CHECKS`] bcrypt checks at once; more wait their turn (each holds a
    /// request slot meanwhile, so the queue is bounded by `--web.max-requests`).
    checks: Arc<Semaphore>,
    running: Arc<std::sync::atomic::AtomicUsize>,
    peak: Arc<std::sync::atomic::AtomicUsize>,
}

/// bcrypt checks run at once: wrong passwords sent by many clients keep at most one CPU busy,
/// never every CPU of the host being measured.
pub const AUTH_CHECKS: usize = 1;

/// Checks waiting for bcrypt at once; beyond it a request with credentials not seen to pass
/// gets 503 at once (its own budget: the request slots are for authenticated work).
pub const AUTH_QUEUE: usize = 32;

/// Successful (user, password) pairs remembered at most.
const PASSED_MAX: usize = 64;

impl Auth {
    /// None without users. Every hash was parsed by webconfig; the dummy hash is computed
    /// here once, at the highest cost among them.
    pub fn new(users: &std::collections::BTreeMap<String, String>) -> Result<Option<Auth>, Error> {
        if users.is_empty() {
            return Ok(None);
        }
        let cost = users
            .values()
            .filter_map(|h| h.parse::<bcrypt::HashParts>().ok())
            .map(|p| p.get_cost())
            .max()
            .unwrap_or(bcrypt::DEFAULT_COST);
        let dummy = bcrypt::hash_with_salt("iosat: no such user", cost, [0x5a; 16])
            .map_err(|e| Error::usage("--web.config.file", "basic_auth_users", e.to_string()))?
            .to_string();
        let t0 = std::time::Instant::now();
        let _ = bcrypt::verify("iosat: timing the costliest hash", &dummy);
        let floor = t0.elapsed();
        Ok(Some(Auth {
            users: users.clone(),
            dummy,
            floor,
            passed: std::sync::Mutex::default(),
            keys: std::collections::hash_map::RandomState::new(),
            queue: Arc::new(Semaphore::new(AUTH_QUEUE)),
            checks: Arc::new(Semaphore::new(AUTH_CHECKS)),
            running: Arc::default(),
            peak: Arc::default(),
        }))
    }

    /// The hash `user`'s password is checked against, and whether the user exists.
    pub fn hash_for(&self, user: &str) -> (&str, bool) {
        match self.users.get(user) {
            Some(h) => (h, true),
            None => (&self.dummy, false),
        }
    }

    /// Whether `user` with `pass` may in (bcrypt: slow by design; call off the runtime).
    pub fn check(&self, user: &str, pass: &str) -> bool {
        let (hash, known) = self.hash_for(user);
        bcrypt::verify(pass, hash).unwrap_or(false) && known
    }

    /// How long a failed check takes at least.
    pub fn floor(&self) -> Duration {
        self.floor
    }

    fn key(&self, user: &str, pass: &str) -> u64 {
        use std::hash::BuildHasher;
        self.keys.hash_one((user, pass))
    }

    fn passed_before(&self, user: &str, pass: &str) -> bool {
        let k = self.key(user, pass);
        self.passed.lock().is_ok_and(|p| p.contains(&k))
    }

    fn remember(&self, user: &str, pass: &str) {
        let k = self.key(user, pass);
        if let Ok(mut p) = self.passed.lock() {
            if !p.contains(&k) {
                if p.len() >= PASSED_MAX {
                    p.remove(0);
                }
                p.push(k);
            }
        }
    }
}

/// `--web.config.file`, watched: re-read when its size, modification time or inode change.
struct WebFile {
    path: std::path::PathBuf,
    seen: std::sync::Mutex<Option<(u64, i64, i64, u64)>>,
}

impl WebFile {
    fn new(path: std::path::PathBuf) -> WebFile {
        let seen = std::sync::Mutex::new(Self::stamp(&path));
        WebFile { path, seen }
    }

    fn stamp(path: &std::path::Path) -> Option<(u64, i64, i64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some((m.size(), m.mtime(), m.mtime_nsec(), m.ino()))
    }

    /// The file's text when it changed since last seen.
    fn changed(&self) -> Option<Result<String, String>> {
        let now = Self::stamp(&self.path);
        let mut seen = self.seen.lock().ok()?;
        if *seen == now {
            return None;
        }
        *seen = now;
        Some(
            crate::sys::fs::read_regular(&self.path)
                .and_then(|b| String::from_utf8(b).map_err(|_| "not UTF-8 text".into())),
        )
    }
}

impl Shared {
    fn current_auth(&self) -> Option<Arc<Auth>> {
        self.auth.read().ok().and_then(|a| a.clone())
    }

    /// Re-read the users of `--web.config.file` when it changed (a stat per request, as
    /// exporter-toolkit reads the file per connection); a file that no longer parses keeps
    /// the users in force, with a warning.
    async fn reload_auth(&self) {
        let Some(w) = &self.web_file else { return };
        let Some(text) = w.changed() else { return };
        let dir = w
            .path
            .parent()
            .map(std::path::Path::to_path_buf)
            .unwrap_or_default();
        let parsed = text.and_then(|t| super::webconfig::parse(&t, &dir));
        let users = match parsed {
            Ok(web) => web.users,
            Err(e) => {
                crate::error::warn(format_args!(
                    "--web.config.file {}: {e}; the users read before stay in force",
                    w.path.display()
                ));
                return;
            }
        };
        // The dummy hash is computed at the new highest cost: off the runtime.
        let made = tokio::task::spawn_blocking(move || Auth::new(&users)).await;
        match made {
            Ok(Ok(a)) => {
                if let Ok(mut cur) = self.auth.write() {
                    *cur = a.map(Arc::new);
                }
            }
            Ok(Err(e)) => crate::error::warn(format_args!(
                "--web.config.file {}: {e}; the users read before stay in force",
                w.path.display()
            )),
            Err(_) => {}
        }
    }
}

/// What basic auth made of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Checked {
    Pass,
    Fail,
    /// The bcrypt queue was full (a flood of unproven credentials): not checked at all.
    Busy,
}

/// Basic auth against the bcrypt hashes of `basic_auth_users` (verified on a blocking thread:
/// bcrypt is slow by design).
async fn authorized(req: &Request<Incoming>, auth: &Auth) -> Checked {
    let Some((user, pass)) = credentials(req) else {
        return Checked::Fail;
    };
    if auth.passed_before(&user, &pass) {
        return Checked::Pass;
    }
    let start = tokio::time::Instant::now();
    // Its own budget: a flood of wrong passwords fills this queue, not the request slots.
    let Ok(_queued) = Arc::clone(&auth.queue).try_acquire_owned() else {
        return Checked::Busy;
    };
    let (hash, known) = auth.hash_for(&user);
    let (hash, pass_owned) = (hash.to_string(), pass.clone());
    let Ok(permit) = Arc::clone(&auth.checks).acquire_owned().await else {
        return Checked::Fail;
    };
    let (running, peak) = (Arc::clone(&auth.running), Arc::clone(&auth.peak));
    let matched = tokio::task::spawn_blocking(move || {
        use std::sync::atomic::Ordering::SeqCst;
        let now = running.fetch_add(1, SeqCst) + 1;
        peak.fetch_max(now, SeqCst);
        let ok = bcrypt::verify(pass_owned, &hash).unwrap_or(false);
        running.fetch_sub(1, SeqCst);
        drop(permit);
        ok
    })
    .await
    .unwrap_or(false);
    if matched && known {
        auth.remember(&user, &pass);
        return Checked::Pass;
    }
    // A failure answers no sooner than the costliest hash takes (the rule on [`Auth`]).
    tokio::time::sleep_until(start + auth.floor).await;
    Checked::Fail
}

/// The (user, password) of a request's `Authorization: Basic` header.
fn credentials(req: &Request<Incoming>) -> Option<(String, String)> {
    use base64::Engine;
    let creds = req
        .headers()
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Basic "))
        .and_then(|b| {
            base64::engine::general_purpose::STANDARD
                .decode(b.trim())
                .ok()
        })
        .and_then(|b| String::from_utf8(b).ok())?;
    let (user, pass) = creds.split_once(':')?;
    Some((user.to_string(), pass.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_beyond_loopback_is_warned_about() {
        let open = WebConfig::default();
        for a in ["0.0.0.0:9019", "[::]:9019", "192.0.2.7:9019"] {
            let w = exposure_warning(a.parse().unwrap(), &open).expect(a);
            assert!(
                w.starts_with("--web.listen-address ") && w.contains("without authentication"),
                "{w}"
            );
            assert_eq!(w.contains("every interface"), !a.starts_with("192"), "{w}");
        }
        for a in [
            "127.0.0.1:9019",
            "[::1]:9019",
            "127.0.0.53:1",
            "[::ffff:127.0.0.1]:9019",
        ] {
            assert_eq!(exposure_warning(a.parse().unwrap(), &open), None, "{a}");
        }
        let any: SocketAddr = "0.0.0.0:9019".parse().unwrap();
        let tls = WebConfig {
            tls: Some(TlsFiles::new("c".into(), "k".into())),
            ..WebConfig::default()
        };
        let auth = WebConfig {
            users: [("a".to_string(), "h".to_string())].into_iter().collect(),
            ..WebConfig::default()
        };
        assert_eq!(exposure_warning(any, &tls), None);
        assert_eq!(exposure_warning(any, &auth), None);
    }

    #[test]
    fn the_rate_limit_is_a_token_bucket() {
        let t0 = std::time::Instant::now();
        let s = Duration::from_secs;
        let mut b = Bucket::new(
            RateLimit {
                interval: s(10),
                burst: 2,
            },
            t0,
        );
        assert!(b.take(t0) && b.take(t0), "the burst");
        assert!(!b.take(t0 + s(5)), "half a token");
        assert!(b.take(t0 + s(10)), "one more after the interval");
        assert!(!b.take(t0 + s(10)));
        // Never more than the burst, however long it was idle.
        let later = t0 + s(1000);
        assert!(b.take(later) && b.take(later) && !b.take(later));
    }

    #[test]
    fn a_certificate_that_is_not_der_has_no_date() {
        assert!(cert_not_after_s(b"\x30\x03\x02\x01\x01").is_none());
        assert!(cert_not_after_s(b"").is_none());
    }

    #[test]
    fn an_unknown_user_is_checked_against_a_dummy_hash_at_the_highest_cost() {
        let users = [("alice", 4), ("bob", 5)]
            .map(|(u, cost)| (u.to_string(), bcrypt::hash("pw", cost).unwrap()))
            .into_iter()
            .collect();
        let auth = Auth::new(&users).unwrap().unwrap();
        let (hash, known) = auth.hash_for("carol");
        assert!(!known);
        assert!(!users.values().any(|h| h == hash), "a user's hash");
        assert_eq!(hash.parse::<bcrypt::HashParts>().unwrap().get_cost(), 5);
        assert_eq!(auth.hash_for("alice"), (users["alice"].as_str(), true));
        assert!(auth.check("alice", "pw") && auth.check("bob", "pw"));
        assert!(!auth.check("alice", "pW") && !auth.check("carol", "pw"));
        assert!(Auth::new(&Default::default()).unwrap().is_none());
    }
}
