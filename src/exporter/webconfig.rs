//! `--web.config.file`: exporter-toolkit's web configuration format (the file node_exporter,
//! Prometheus and promtool read), so the same file serves node_exporter and iosat:
//! `tls_server_config` (cert_file, key_file, client_auth_type, client_ca_file, min_version,
//! max_version, cipher_suites, prefer_server_cipher_suites; relative paths are relative to the
//! file, as exporter-toolkit reads them), `basic_auth_users` (user: bcrypt hash),
//! `http_server_config` (headers, http2) and `rate_limit` (interval, burst). Any other key is
//! refused in one line naming it, rather than silently ignored; so is a value iosat cannot
//! honour (a client_auth_type that does not verify, a cipher suite rustls does not offer).
//! Every bcrypt hash is parsed here, so a malformed one is refused at start naming its user.
//! Pure: text in, [`WebConfig`] out.
//! Imports only: nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;
use yaml_rust2::{Yaml, YamlLoader};

/// How client certificates are asked for (exporter-toolkit's `client_auth_type`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate asked for (the default).
    #[default]
    NoClientCert,
    /// A certificate, when given, must be signed by `client_ca_file`.
    VerifyClientCertIfGiven,
    /// A certificate signed by `client_ca_file` is required.
    RequireAndVerifyClientCert,
}

/// A TLS protocol version (`min_version`, `max_version`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum TlsVersion {
    Tls10,
    Tls11,
    Tls12,
    Tls13,
}

/// The TLS settings: certificate chain and key files (PEM), client certificates, versions and
/// suites.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
    pub client_auth: ClientAuth,
    /// The CAs client certificates are verified against (PEM).
    pub client_ca_file: Option<PathBuf>,
    /// rustls serves TLS 1.2 and 1.3 only: TLS10 and TLS11 as a minimum mean 1.2.
    pub min_version: Option<TlsVersion>,
    pub max_version: Option<TlsVersion>,
    /// TLS 1.2 suites by their Go (IANA) names; empty: rustls's defaults. TLS 1.3's suites
    /// are not configurable (as in Go).
    pub cipher_suites: Vec<String>,
    /// Pick the suite in the server's order rather than the client's.
    pub prefer_server_cipher_suites: bool,
}

impl TlsFiles {
    /// A certificate and key, every other setting at its default.
    pub fn new(cert_file: PathBuf, key_file: PathBuf) -> TlsFiles {
        TlsFiles {
            cert_file,
            key_file,
            client_auth: ClientAuth::NoClientCert,
            client_ca_file: None,
            min_version: None,
            max_version: None,
            cipher_suites: vec![],
            prefer_server_cipher_suites: false,
        }
    }
}

/// exporter-toolkit's `rate_limit`: a token bucket of `burst` requests, one more every
/// `interval`; requests beyond it get 429.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub interval: Duration,
    pub burst: u32,
}

/// What the server enforces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebConfig {
    pub tls: Option<TlsFiles>,
    /// User name → bcrypt hash; empty: no authentication.
    pub users: BTreeMap<String, String>,
    /// `http_server_config.headers`: added to every response.
    pub headers: Vec<(String, String)>,
    /// `http_server_config.http2` as written (iosat answers HTTP/1.1 whatever it says).
    pub http2: Option<bool>,
    pub rate_limit: Option<RateLimit>,
}

/// The TLS 1.2 suites rustls offers, by the names Go and exporter-toolkit use.
pub const CIPHER_SUITES: &[&str] = &[
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
];

/// The headers exporter-toolkit lets `http_server_config.headers` set, with the values it
/// allows (None: any).
const HEADERS: &[(&str, Option<&[&str]>)] = &[
    ("Strict-Transport-Security", None),
    ("X-Content-Type-Options", Some(&["nosniff"])),
    ("X-Frame-Options", Some(&["deny", "sameorigin"])),
    ("X-XSS-Protection", None),
    ("Content-Security-Policy", None),
];

fn key_str(k: &Yaml) -> Result<&str, String> {
    k.as_str()
        .ok_or_else(|| format!("expected a text key, got {k:?}"))
}

fn is_empty(v: &Yaml) -> bool {
    match v {
        Yaml::Null => true,
        Yaml::Hash(h) => h.is_empty(),
        Yaml::Array(a) => a.is_empty(),
        Yaml::String(s) => s.is_empty(),
        _ => false,
    }
}

/// A YAML scalar as text (numbers and booleans too: `burst: 10`).
fn scalar(v: &Yaml) -> Option<String> {
    match v {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}

fn unknown(at: &str, key: &str, known: &str) -> String {
    format!("{at}{key}: unknown setting (iosat reads {known})")
}

/// A Go duration as exporter-toolkit writes it: `1s`, `100ms`, `1m30s`.
pub fn parse_duration(s: &str) -> Option<Duration> {
    let mut rest = s.trim();
    if rest.is_empty() {
        return None;
    }
    let mut total = 0f64;
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num: f64 = rest[..n].parse().ok()?;
        rest = &rest[n..];
        let u = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let scale = match &rest[..u] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            "d" => 86400.0,
            _ => return None,
        };
        total += num * scale;
        rest = &rest[u..];
    }
    Duration::try_from_secs_f64(total).ok()
}

fn tls_version(at: &str, v: &Yaml) -> Result<TlsVersion, String> {
    match scalar(v).as_deref() {
        Some("TLS10") => Ok(TlsVersion::Tls10),
        Some("TLS11") => Ok(TlsVersion::Tls11),
        Some("TLS12") => Ok(TlsVersion::Tls12),
        Some("TLS13") => Ok(TlsVersion::Tls13),
        _ => Err(format!(
            "tls_server_config.{at}: expected TLS10, TLS11, TLS12 or TLS13, got {v:?}"
        )),
    }
}

fn parse_tls(h: &yaml_rust2::yaml::Hash, dir: &Path) -> Result<TlsFiles, String> {
    let mut t = TlsFiles::new(PathBuf::new(), PathBuf::new());
    let (mut cert, mut key) = (None, None);
    for (k, v) in h {
        let name = key_str(k)?;
        let path = || {
            v.as_str()
                .filter(|s| !s.is_empty())
                .map(|s| dir.join(s))
                .ok_or(format!("tls_server_config.{name}: expected a path"))
        };
        match name {
            _ if is_empty(v) => {}
            "cert_file" => cert = Some(path()?),
            "key_file" => key = Some(path()?),
            "client_ca_file" => t.client_ca_file = Some(path()?),
            "client_auth_type" => {
                t.client_auth = match scalar(v).as_deref() {
                    Some("NoClientCert") => ClientAuth::NoClientCert,
                    Some("VerifyClientCertIfGiven") => ClientAuth::VerifyClientCertIfGiven,
                    Some("RequireAndVerifyClientCert") => ClientAuth::RequireAndVerifyClientCert,
                    Some(other @ ("RequestClientCert" | "RequireAnyClientCert")) => {
                        return Err(format!(
                            "tls_server_config.client_auth_type: {other} accepts certificates \
                             nobody verified, which iosat does not serve; use \
                             RequireAndVerifyClientCert (or VerifyClientCertIfGiven) with \
                             client_ca_file"
                        ))
                    }
                    _ => {
                        return Err(format!(
                            "tls_server_config.client_auth_type: expected NoClientCert, \
                             VerifyClientCertIfGiven or RequireAndVerifyClientCert, got {v:?}"
                        ))
                    }
                }
            }
            "min_version" => t.min_version = Some(tls_version(name, v)?),
            "max_version" => t.max_version = Some(tls_version(name, v)?),
            "cipher_suites" => {
                let list = v
                    .as_vec()
                    .ok_or("tls_server_config.cipher_suites: expected a list")?;
                for s in list {
                    let s = scalar(s).unwrap_or_default();
                    // Go's older names of the ChaCha20 suites lack the _SHA256.
                    let s = if s.ends_with("CHACHA20_POLY1305") {
                        format!("{s}_SHA256")
                    } else {
                        s
                    };
                    if !CIPHER_SUITES.contains(&s.as_str()) {
                        return Err(format!(
                            "tls_server_config.cipher_suites: {s} is not offered by iosat \
                             (rustls's TLS 1.2 suites: {})",
                            CIPHER_SUITES.join(", ")
                        ));
                    }
                    t.cipher_suites.push(s);
                }
            }
            "prefer_server_cipher_suites" => {
                t.prefer_server_cipher_suites = v.as_bool().ok_or(
                    "tls_server_config.prefer_server_cipher_suites: expected true or false",
                )?
            }
            other => {
                return Err(unknown(
                    "tls_server_config.",
                    other,
                    "cert_file, key_file, client_auth_type, client_ca_file, min_version, \
                     max_version, cipher_suites, prefer_server_cipher_suites",
                ))
            }
        }
    }
    match (cert, key) {
        (Some(c), Some(k)) => (t.cert_file, t.key_file) = (c, k),
        _ => return Err("tls_server_config needs both cert_file and key_file".into()),
    }
    match (t.client_auth, &t.client_ca_file) {
        (ClientAuth::NoClientCert, Some(_)) => {
            return Err(
                "tls_server_config.client_ca_file is set but client_auth_type is not: \
                 set client_auth_type: RequireAndVerifyClientCert"
                    .into(),
            )
        }
        (ClientAuth::NoClientCert, None) | (_, Some(_)) => {}
        (_, None) => {
            return Err(
                "tls_server_config.client_auth_type verifies client certificates: it needs \
                 client_ca_file"
                    .into(),
            )
        }
    }
    if let (Some(lo), Some(hi)) = (t.min_version, t.max_version) {
        if lo > hi {
            return Err("tls_server_config: min_version is above max_version".into());
        }
    }
    if t.max_version.is_some_and(|v| v < TlsVersion::Tls12) {
        return Err(
            "tls_server_config.max_version: iosat serves TLS 1.2 and 1.3 only (TLS12 or TLS13)"
                .into(),
        );
    }
    Ok(t)
}

/// Parse the file's text; `dir` is the directory relative paths start from.
pub fn parse(text: &str, dir: &Path) -> Result<WebConfig, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("not YAML: {e}"))?;
    let mut cfg = WebConfig::default();
    let Some(doc) = docs.into_iter().next() else {
        return Ok(cfg);
    };
    let top = match doc {
        Yaml::Hash(h) => h,
        Yaml::Null => return Ok(cfg),
        other => return Err(format!("expected a mapping at the top, got {other:?}")),
    };
    for (k, v) in &top {
        match key_str(k)? {
            _ if is_empty(v) => {}
            "tls_server_config" => {
                let h = v.as_hash().ok_or("tls_server_config: expected a mapping")?;
                cfg.tls = Some(parse_tls(h, dir)?);
            }
            "basic_auth_users" => {
                let h = v.as_hash().ok_or("basic_auth_users: expected a mapping")?;
                for (u, p) in h {
                    let user = key_str(u)?;
                    let hash = p.as_str().filter(|h| h.starts_with("$2")).ok_or(format!(
                        "basic_auth_users.{user}: expected a bcrypt hash ($2y$...)"
                    ))?;
                    // Parsed now: a malformed hash would otherwise fail every login at once.
                    hash.parse::<bcrypt::HashParts>().map_err(|e| {
                        format!("basic_auth_users.{user}: not a valid bcrypt hash ({e})")
                    })?;
                    cfg.users.insert(user.to_string(), hash.to_string());
                }
            }
            "http_server_config" => {
                let h = v
                    .as_hash()
                    .ok_or("http_server_config: expected a mapping")?;
                for (k, v) in h {
                    match key_str(k)? {
                        _ if is_empty(v) => {}
                        "http2" => {
                            cfg.http2 = Some(
                                v.as_bool()
                                    .ok_or("http_server_config.http2: expected true or false")?,
                            )
                        }
                        "headers" => {
                            let h = v
                                .as_hash()
                                .ok_or("http_server_config.headers: expected a mapping")?;
                            for (name, value) in h {
                                let name = key_str(name)?;
                                let value = scalar(value).unwrap_or_default();
                                let Some((canon, allowed)) =
                                    HEADERS.iter().find(|(h, _)| h.eq_ignore_ascii_case(name))
                                else {
                                    let names: Vec<&str> = HEADERS.iter().map(|h| h.0).collect();
                                    return Err(format!(
                                        "http_server_config.headers.{name}: not a header that \
                                         can be set (exporter-toolkit allows {})",
                                        names.join(", ")
                                    ));
                                };
                                if let Some(allowed) = allowed {
                                    if !allowed.iter().any(|a| a.eq_ignore_ascii_case(&value)) {
                                        return Err(format!(
                                            "http_server_config.headers.{canon}: {value:?} is \
                                             not allowed (only {})",
                                            allowed.join(", ")
                                        ));
                                    }
                                }
                                cfg.headers.push((canon.to_string(), value));
                            }
                        }
                        other => {
                            return Err(unknown("http_server_config.", other, "headers, http2"))
                        }
                    }
                }
            }
            "rate_limit" => {
                let h = v.as_hash().ok_or("rate_limit: expected a mapping")?;
                let (mut interval, mut burst) = (None, None);
                for (k, v) in h {
                    match key_str(k)? {
                        _ if is_empty(v) => {}
                        "interval" => {
                            let s = scalar(v).unwrap_or_default();
                            interval = Some(parse_duration(&s).ok_or(format!(
                                "rate_limit.interval: expected a duration such as 1s, got {s:?}"
                            ))?)
                        }
                        "burst" => {
                            burst = Some(
                                v.as_i64()
                                    .and_then(|b| u32::try_from(b).ok())
                                    .ok_or("rate_limit.burst: expected a whole number")?,
                            )
                        }
                        other => return Err(unknown("rate_limit.", other, "interval, burst")),
                    }
                }
                // exporter-toolkit limits only with a burst above 0.
                if let Some(burst) = burst.filter(|&b| b > 0) {
                    cfg.rate_limit = Some(RateLimit {
                        interval: interval.unwrap_or_default(),
                        burst,
                    });
                }
            }
            other => {
                return Err(unknown(
                    "",
                    other,
                    "tls_server_config, basic_auth_users, http_server_config, rate_limit",
                ))
            }
        }
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "$2y$10$PH1RCsPmZSHOeVvsrGJ6jeTyjQBBmbI4BFpUM6JUXHVaYFn8TgzNK";

    #[test]
    fn every_key_of_the_format() {
        let c = parse(
            &format!(
                "tls_server_config:
  cert_file: a.crt
  key_file: /k/a.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: ca.crt
  min_version: TLS12
  max_version: TLS13
  cipher_suites:
    - TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
    - TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305
  prefer_server_cipher_suites: true
basic_auth_users:
  alice: {HASH}
http_server_config:
  http2: false
  headers:
    X-Frame-Options: deny
    strict-transport-security: max-age=31536000
rate_limit:
  interval: 1m30s
  burst: 10
"
            ),
            Path::new("/etc/iosat"),
        )
        .unwrap();
        let t = c.tls.unwrap();
        assert_eq!(t.cert_file, Path::new("/etc/iosat/a.crt"));
        assert_eq!(t.key_file, Path::new("/k/a.key"));
        assert_eq!(t.client_auth, ClientAuth::RequireAndVerifyClientCert);
        assert_eq!(
            t.client_ca_file.as_deref(),
            Some(Path::new("/etc/iosat/ca.crt"))
        );
        assert_eq!(t.min_version, Some(TlsVersion::Tls12));
        assert_eq!(t.max_version, Some(TlsVersion::Tls13));
        assert_eq!(
            t.cipher_suites,
            [
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256"
            ]
        );
        assert!(t.prefer_server_cipher_suites);
        assert_eq!(c.users.get("alice").map(String::as_str), Some(HASH));
        assert_eq!(c.http2, Some(false));
        assert_eq!(
            c.headers,
            [
                ("X-Frame-Options".to_string(), "deny".to_string()),
                (
                    "Strict-Transport-Security".to_string(),
                    "max-age=31536000".to_string()
                )
            ]
        );
        assert_eq!(
            c.rate_limit,
            Some(RateLimit {
                interval: Duration::from_secs(90),
                burst: 10
            })
        );
        assert_eq!(parse("", Path::new("/")).unwrap(), WebConfig::default());
        // burst 0: no limit, as exporter-toolkit reads it.
        let c = parse("rate_limit:\n  interval: 1s\n  burst: 0\n", Path::new("/")).unwrap();
        assert_eq!(c.rate_limit, None);
    }

    #[test]
    fn what_is_refused_names_the_key() {
        for (text, says) in [
            ("tls_server_config:\n  cert_file: a\n", "both cert_file and key_file"),
            ("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n", "needs client_ca_file"),
            ("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_ca_file: c\n", "client_ca_file is set but client_auth_type"),
            ("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAnyClientCert\n", "client_auth_type: RequireAnyClientCert"),
            ("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS9\n", "tls_server_config.min_version"),
            ("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS13\n  max_version: TLS12\n", "min_version is above max_version"),
            ("tls_server_config:\n  cert_file: a\n  key_file: b\n  max_version: TLS11\n", "tls_server_config.max_version"),
            ("tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [TLS_RSA_WITH_AES_128_CBC_SHA]\n", "cipher_suites: TLS_RSA_WITH_AES_128_CBC_SHA is not offered"),
            ("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_allowed_sans: [x]\n", "tls_server_config.client_allowed_sans: unknown setting"),
            ("basic_auth_users:\n  bob: plain\n", "bcrypt"),
            ("basic_auth_users:\n  bob: $2y$10$abc\n", "basic_auth_users.bob: not a valid bcrypt hash"),
            ("http_server_config:\n  http2: maybe\n", "http_server_config.http2"),
            ("http_server_config:\n  headers:\n    Server: iosat\n", "http_server_config.headers.Server"),
            ("http_server_config:\n  headers:\n    X-Frame-Options: allow\n", "X-Frame-Options: \"allow\" is not allowed"),
            ("http_server_config:\n  keepalive: true\n", "http_server_config.keepalive: unknown setting"),
            ("rate_limit:\n  interval: soon\n  burst: 1\n", "rate_limit.interval"),
            ("rate_limit:\n  burst: -1\n", "rate_limit.burst"),
            ("rate_limit:\n  period: 1s\n", "rate_limit.period: unknown setting"),
            ("tls_config:\n  cert_file: a\n", "tls_config: unknown setting"),
            ("[1, 2]", "mapping"),
            ("a: [", "not YAML"),
        ] {
            let e = parse(text, Path::new("/")).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_duration("1s"), Some(Duration::from_secs(1)));
        assert_eq!(parse_duration("100ms"), Some(Duration::from_millis(100)));
        assert_eq!(parse_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("1.5h"), Some(Duration::from_secs(5400)));
        for bad in ["", "1", "s", "1x", "-1s"] {
            assert_eq!(parse_duration(bad), None, "{bad}");
        }
    }
}
