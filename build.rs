//! Build facts for `iosat --version` and the exporter's `iosat_build_info`: the commit of the
//! checkout (`git rev-parse --short HEAD`, only when git runs and the package's own `.git` is
//! there; "unknown" otherwise, as in a crates.io tarball or a bare source copy), the compiler's
//! version, the target and the profile. Needs nothing beyond Cargo: a missing or failing git is
//! no error.

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let o = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let s = String::from_utf8(o.stdout).ok()?.trim().to_string();
    (o.status.success() && !s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let dir = Path::new(&dir);
    // The package's own checkout only (`.git` is a directory, or a file in a worktree): a
    // source copy inside some other repository must not take that repository's commit.
    let commit = if dir.join(".git").exists() {
        git(dir, &["rev-parse", "--short", "HEAD"])
    } else {
        None
    };
    if commit.is_some() {
        // A new commit or a checkout of another branch moves HEAD or the ref it names.
        let mut watch = vec!["HEAD".to_string()];
        if let Some(r) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
            watch.push(r);
        }
        watch.push("packed-refs".into());
        for w in watch {
            if let Some(p) = git(dir, &["rev-parse", "--git-path", &w]) {
                let p = dir.join(p);
                if p.exists() {
                    println!("cargo:rerun-if-changed={}", p.display());
                }
            }
        }
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    let env = |k: &str| std::env::var(k).unwrap_or_else(|_| "unknown".into());
    println!(
        "cargo:rustc-env=IOSAT_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    println!("cargo:rustc-env=IOSAT_RUSTC_VERSION={rustc_version}");
    println!("cargo:rustc-env=IOSAT_TARGET={}", env("TARGET"));
    println!("cargo:rustc-env=IOSAT_PROFILE={}", env("PROFILE"));
}
