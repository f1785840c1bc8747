//! `--web.config.file`: exporter-toolkit's web configuration format (the file node_exporter,
//! Prometheus and promtool read), the subset iosat serves: `tls_server_config` with
//! `cert_file` and `key_file` (relative paths are relative to the file, as exporter-toolkit
//! reads them) and `basic_auth_users` (user: bcrypt hash). Any other setting is refused by
//! name rather than silently ignored; every bcrypt hash is parsed here, so a malformed one is
//! refused at start naming its user. Pure: text in, [`WebConfig`] out.
//! Imports only: nothing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use yaml_rust2::{Yaml, YamlLoader};

/// The TLS certificate chain and key files (PEM).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

/// What the server enforces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebConfig {
    pub tls: Option<TlsFiles>,
    /// User name → bcrypt hash; empty: no authentication.
    pub users: BTreeMap<String, String>,
}

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
            "tls_server_config" if is_empty(v) => {}
            "tls_server_config" => {
                let h = v.as_hash().ok_or("tls_server_config: expected a mapping")?;
                let (mut cert, mut key) = (None, None);
                for (k, v) in h {
                    let path = || {
                        v.as_str()
                            .filter(|s| !s.is_empty())
                            .map(|s| dir.join(s))
                            .ok_or(format!(
                                "tls_server_config.{}: expected a path",
                                key_str(k).unwrap_or("?")
                            ))
                    };
                    match key_str(k)? {
                        "cert_file" => cert = Some(path()?),
                        "key_file" => key = Some(path()?),
                        other if is_empty(v) => {
                            let _ = other;
                        }
                        other => {
                            return Err(format!(
                                "tls_server_config.{other} is not supported by iosat (only cert_file and key_file)"
                            ))
                        }
                    }
                }
                match (cert, key) {
                    (Some(cert_file), Some(key_file)) => {
                        cfg.tls = Some(TlsFiles {
                            cert_file,
                            key_file,
                        })
                    }
                    _ => return Err("tls_server_config needs both cert_file and key_file".into()),
                }
            }
            "basic_auth_users" if is_empty(v) => {}
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
            "http_server_config" if is_empty(v) => {}
            other => {
                return Err(format!(
                "{other} is not supported by iosat (only tls_server_config and basic_auth_users)"
            ))
            }
        }
    }
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_supported_subset() {
        let c = parse(
            "tls_server_config:\n  cert_file: a.crt\n  key_file: /k/a.key\nbasic_auth_users:\n  alice: $2y$10$PH1RCsPmZSHOeVvsrGJ6jeTyjQBBmbI4BFpUM6JUXHVaYFn8TgzNK\n",
            Path::new("/etc/iosat"),
        )
        .unwrap();
        assert_eq!(
            c.tls,
            Some(TlsFiles {
                cert_file: "/etc/iosat/a.crt".into(),
                key_file: "/k/a.key".into()
            })
        );
        assert_eq!(
            c.users.get("alice").map(String::as_str),
            Some("$2y$10$PH1RCsPmZSHOeVvsrGJ6jeTyjQBBmbI4BFpUM6JUXHVaYFn8TgzNK")
        );
        assert_eq!(parse("", Path::new("/")).unwrap(), WebConfig::default());
    }

    #[test]
    fn what_is_refused() {
        for (text, says) in [
            ("tls_server_config:\n  cert_file: a\n", "both cert_file and key_file"),
            ("tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n", "client_auth_type"),
            ("basic_auth_users:\n  bob: plain\n", "bcrypt"),
            ("basic_auth_users:\n  bob: $2y$10$abc\n", "basic_auth_users.bob: not a valid bcrypt hash"),
            ("http_server_config:\n  http2: false\n", "http_server_config"),
            ("[1, 2]", "mapping"),
            ("a: [", "not YAML"),
        ] {
            let e = parse(text, Path::new("/")).unwrap_err();
            assert!(e.contains(says), "{text}: {e}");
        }
    }
}
