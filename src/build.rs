//! What this binary was built from (build.rs sets it): the version, the commit of the checkout
//! ("unknown" outside one), the compiler, the target and the profile — for `iosat --version`
//! and the exporter's `iosat_build_info`.
//! Imports only: nothing.

/// The package version (Cargo.toml).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
/// `git rev-parse --short HEAD` at build time, or "unknown".
pub const COMMIT: &str = env!("IOSAT_COMMIT");
/// The compiler's version (`rustc --version`'s second word).
pub const RUSTC: &str = env!("IOSAT_RUSTC_VERSION");
/// The target triple.
pub const TARGET: &str = env!("IOSAT_TARGET");
/// Cargo's profile ("release", "debug").
pub const PROFILE: &str = env!("IOSAT_PROFILE");

/// What `iosat --version` prints after the name: "0.1.0 (commit 1a2b3c4, rustc 1.80.0, x86_64-unknown-linux-gnu)".
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("IOSAT_COMMIT"),
    ", rustc ",
    env!("IOSAT_RUSTC_VERSION"),
    ", ",
    env!("IOSAT_TARGET"),
    ")"
);
