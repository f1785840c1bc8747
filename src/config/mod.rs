//! Validation: turns clap argument structs into domain specs. No clap type goes past this
//! module; errors name the flag and the value (docs/design.md §3.7).
//! Must not import: cmd/, ui/.

pub mod analyze;
pub mod caps;
pub mod compare;
pub mod exporter;
pub mod fsync;
pub mod habits;
pub mod hindsight;
pub mod info;
pub mod learn;
pub mod output;
pub mod profile;
pub mod profile_cmd;
pub mod report;
pub mod stat;
pub mod sweep;
pub mod top;

use crate::report::Format;

/// The one place an output format is chosen from `--json`, `--csv`, `--markdown` (clap makes
/// them exclusive) and `--wide`. Text is wrapped to the terminal's width (80 when standard
/// output is not a terminal) and coloured only on a terminal, unless NO_COLOR is set
/// (no-color.org) or TERM is "dumb".
pub fn output_format(f: &crate::cli::FormatArgs) -> Format {
    if f.json {
        Format::Json
    } else if f.csv {
        Format::Csv
    } else if f.markdown {
        Format::Markdown
    } else {
        let columns = crate::sys::tty::stdout_columns();
        let env_off = |k: &str, bad: fn(&str) -> bool| std::env::var(k).is_ok_and(|v| bad(&v));
        let color = crate::sys::tty::stdout_is_terminal()
            && !env_off("NO_COLOR", |v| !v.is_empty())
            && !env_off("TERM", |v| v == "dumb");
        Format::Text {
            wide: f.wide,
            width: columns.unwrap_or(80).max(40),
            color,
        }
    }
}

/// Result files named on the command line (analyze, compare): each a file, not a directory,
/// and given once.
pub fn result_files(files: &[std::path::PathBuf]) -> crate::error::Result<Vec<std::path::PathBuf>> {
    use crate::error::Error;
    let mut out: Vec<std::path::PathBuf> = Vec::new();
    for f in files {
        if f.is_dir() {
            return Err(Error::usage(
                "FILE",
                f.display(),
                "is a directory; give the result files themselves",
            ));
        }
        if out.contains(f) {
            return Err(Error::usage(
                "FILE",
                f.display(),
                "is given twice; each result counts once",
            ));
        }
        out.push(f.clone());
    }
    Ok(out)
}

/// `--proc-root` / `--sys-root` → where sys/ reads kernel files.
pub fn root(a: &crate::cli::RootArgs) -> crate::sys::Root {
    crate::sys::Root {
        proc: a.proc_root.clone(),
        sys: a.sys_root.clone(),
    }
}

/// A size flag's value (units::parse_size), the error naming the flag and the value.
pub fn size_arg(flag: &str, s: &str) -> crate::error::Result<u64> {
    crate::units::parse_size(s).map_err(|reason| crate::error::Error::usage(flag, s, reason))
}

/// A duration flag's value in ns (units::parse_duration_ns), at most a day; the error names
/// the flag and the value.
pub fn duration_arg(flag: &str, s: &str) -> crate::error::Result<u64> {
    use crate::error::Error;
    let ns = crate::units::parse_duration_ns(s).map_err(|reason| Error::usage(flag, s, reason))?;
    if ns > 86_400 * 1_000_000_000 {
        return Err(Error::usage(flag, s, "must be at most a day"));
    }
    Ok(ns)
}
