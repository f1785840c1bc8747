//! Typed errors and their exit codes (docs/design.md §5). Every IO or parse variant carries the
//! path (and line) it is about.
//! Imports only: nothing.

use std::path::PathBuf;

/// Exit codes promised to users (docs/design.md §5).
pub mod exit {
    pub const OK: i32 = 0;
    pub const IO: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const VERIFY: i32 = 3;
    pub const SAFETY: i32 = 4;
    pub const INTERRUPTED: i32 = 130;
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag's value is not acceptable: names the flag and the value.
    #[error("{}", usage_line(flag, value, reason))]
    Usage {
        flag: String,
        /// None for a flag that takes no value (`--force`).
        value: Option<String>,
        reason: String,
    },
    /// An input file (recording, import, fixture) is not in the expected form.
    #[error("{}:{line}: {reason}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        reason: String,
    },
    /// An I/O error on a named path.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// iosat refuses to do something that could destroy data.
    #[error("refused for safety: {0}")]
    Safety(String),
    /// Data read back is not what was written.
    #[error("verification failed: {0}")]
    Verify(String),
    /// The user pressed Ctrl-C; results so far were kept.
    #[error("interrupted")]
    Interrupted,
}

/// "'--flag' reason (got 'value')"; a flag that takes no value (`--force`) has no "got".
fn usage_line(flag: &str, value: &Option<String>, reason: &str) -> String {
    // A positional argument is named by its role ("the directory '/x' does not exist"), not by
    // the placeholder of the usage line ('DIR'), which a user never typed.
    let role = match flag {
        "DIR" => Some("the directory"),
        "FILE" => Some("the file"),
        "TARGET" => Some("the target"),
        "SUBCOMMAND" => Some("the subcommand"),
        "DEVICE" => Some("the device"),
        "INTERVAL" => Some("the interval"),
        "COUNT" => Some("the count"),
        "ID" => Some("the profile id"),
        _ => None,
    };
    match (role, value) {
        (Some(role), Some(v)) => format!("{role} '{v}' {reason}"),
        (Some(role), None) => format!("{role} {reason}"),
        (None, None) => format!("'{flag}' {reason}"),
        (None, Some(v)) => format!("'{flag}' {reason} (got '{v}')"),
    }
}

impl Error {
    pub fn usage(flag: &str, value: impl std::fmt::Display, reason: impl Into<String>) -> Self {
        Error::Usage {
            flag: flag.to_string(),
            value: Some(value.to_string()),
            reason: reason.into(),
        }
    }

    /// A flag that takes no value, used where it has no meaning.
    pub fn flag(flag: &str, reason: impl Into<String>) -> Self {
        Error::Usage {
            flag: flag.to_string(),
            value: None,
            reason: reason.into(),
        }
    }

    /// What is wrong at `line` (1-based) of the file at `path`: the one way a parse error is made.
    pub fn parse(path: impl Into<PathBuf>, line: usize, reason: impl Into<String>) -> Self {
        Error::Parse {
            path: path.into(),
            line,
            reason: reason.into(),
        }
    }

    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// An input the user named by `flag` could not be read: the line names the flag too
    /// ("--replay /x: No such file or directory").
    pub fn for_flag(self, flag: &str) -> Self {
        match self {
            Error::Io { path, source } => Error::Io {
                path: PathBuf::from(format!("{flag} {}", path.display())),
                source,
            },
            e => e,
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage { .. } => exit::USAGE,
            Error::Parse { .. } => exit::USAGE,
            Error::Io { .. } => exit::IO,
            Error::Safety(_) => exit::SAFETY,
            Error::Verify(_) => exit::VERIFY,
            Error::Interrupted => exit::INTERRUPTED,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Print `iosat: warning: MSG` on stderr (through [`say`]).
pub fn warn(msg: impl std::fmt::Display) {
    say(format_args!("iosat: warning: {msg}"));
}

/// Print `iosat: note: MSG` on stderr (through [`say`]).
pub fn note(msg: impl std::fmt::Display) {
    say(format_args!("iosat: note: {msg}"));
}

/// One line on stderr, as is (progress, notes, warnings, the final error): the one function
/// every line iosat writes to stderr goes through. A failed write (stderr on /dev/full, a
/// closed pipe) is ignored and never panics (eprintln! does): a note never aborts a run, and
/// the exporter keeps serving its metrics when the log reader behind its stderr is gone.
pub fn say(line: impl std::fmt::Display) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The exit code for an error chain: the first typed iosat error decides, else 1.
pub fn exit_code(err: &anyhow::Error) -> i32 {
    for cause in err.chain() {
        if let Some(e) = cause.downcast_ref::<Error>() {
            return e.exit_code();
        }
    }
    exit::IO
}

/// True when the error is a write to a closed pipe (`iosat stat | head`): exit 0 quietly.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
            || c.downcast_ref::<Error>().is_some_and(|e| {
                matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
            })
    })
}
