//! `iosat profile`'s flags turned into a validated spec: the profile directories resolved, the
//! direction parsed, where the answer goes (standard output as text or JSON, or `export -o
//! FILE`, refused now when the never-replace rule refuses it). cmd/profile.rs runs it.
//! Must not import: cmd/, ui/.

use super::output::{force, Output};
use super::profile::{self as dirs, Access};
use crate::cli::profile::{IdArgs, ProfileAction, ProfileCmdArgs, StoreArgs};
use crate::error::{Error, Result};
use crate::profile::{Direction, ProfileDirs};
use crate::report::Format;
use std::path::PathBuf;

/// A validated `iosat profile` request.
#[derive(Debug)]
pub struct ProfileCmdSpec {
    pub action: Action,
    /// Where the answer goes.
    pub output: Output,
}

#[derive(Debug)]
pub enum Action {
    List { dirs: ProfileDirs },
    Show(Wanted),
    Rm(Wanted),
    Export(Wanted),
    Save(Store),
    Import(Store),
}

/// The profile files of an id (of one direction) in the directories searched.
#[derive(Debug)]
pub struct Wanted {
    pub id: String,
    pub only: Option<Direction>,
    pub dirs: ProfileDirs,
}

/// A result or profile file to store, and for what.
#[derive(Debug)]
pub struct Store {
    /// The sweep result (`save`) or the profile or result from a twin (`import`).
    pub file: PathBuf,
    /// `--for DEVICE`, resolved against `root` when the command runs (a result may name its
    /// own device).
    pub for_device: Option<String>,
    /// `--model`: the model profile of the device's model.
    pub model: bool,
    /// `--force`: store it despite the trust checks' doubts.
    pub force: bool,
    pub root: crate::sys::Root,
    /// Where it is saved; the error (no nameable directory, one that is no directory) is
    /// raised when the profile is stored, after the file's own checks.
    pub save_dir: Result<Option<PathBuf>>,
    /// `--cap-iops`, `--cap-mbps`: the cap the device was provisioned with, stored with the
    /// profile (over the sweep's own declaration, figure by figure).
    pub declared_cap: Option<crate::analysis::declared::DeclaredCap>,
}

fn format(json: bool) -> Format {
    if json {
        Format::Json
    } else {
        Format::TEXT
    }
}

/// No profile directory can be named.
pub fn no_dir() -> Error {
    Error::usage(
        "--profile-dir",
        "",
        "no profile directory: set --profile-dir, $IOSAT_PROFILE_DIR, $XDG_STATE_HOME or $HOME",
    )
}

/// The directories profiles are read from; none nameable is a usage error.
fn read_dirs(a: &crate::cli::ProfileArgs) -> Result<ProfileDirs> {
    let d = dirs::resolve_dirs(a, Access::Read)?;
    if d.is_empty() {
        return Err(no_dir());
    }
    Ok(d)
}

fn wanted(a: &IdArgs) -> Result<Wanted> {
    Ok(Wanted {
        only: dirs::direction(a.direction.as_deref())?,
        dirs: read_dirs(&a.profile)?,
        id: a.id.clone(),
    })
}

fn store(file: &std::path::Path, for_device: &Option<String>, a: &StoreArgs) -> Result<Store> {
    Ok(Store {
        file: file.to_path_buf(),
        for_device: for_device.clone(),
        model: a.model,
        force: a.force,
        root: super::root(&a.root),
        save_dir: dirs::resolve(&a.profile, Access::Save),
        declared_cap: super::caps::one(&a.cap)?,
    })
}

impl ProfileCmdSpec {
    pub fn from_args(args: &ProfileCmdArgs) -> Result<ProfileCmdSpec> {
        let (action, json) = match &args.action {
            ProfileAction::List(a) => (
                Action::List {
                    dirs: read_dirs(&a.profile)?,
                },
                a.json,
            ),
            ProfileAction::Show(a) => (Action::Show(wanted(a)?), a.json),
            ProfileAction::Rm(a) => (Action::Rm(wanted(a)?), a.json),
            ProfileAction::Export(a) => {
                let w = wanted(&a.id)?;
                // The file as it is stored (JSON), to standard output or to `-o FILE` under
                // the rule of every output flag (issue 39 case 2): a regular file replaced
                // with --force, a character device or FIFO written into, never replaced.
                let output = match &a.output {
                    Some(path) => Output::files_only().file_as(
                        "-o",
                        Some(path),
                        force(a.force),
                        Format::Json,
                    )?,
                    None => Output::stdout(Format::Json),
                };
                return Ok(ProfileCmdSpec {
                    action: Action::Export(w),
                    output,
                });
            }
            ProfileAction::Save(a) => (
                Action::Save(store(&a.result, &a.for_device, &a.store)?),
                a.store.json,
            ),
            ProfileAction::Import(a) => (
                Action::Import(store(&a.file, &a.for_device, &a.store)?),
                a.store.json,
            ),
        };
        Ok(ProfileCmdSpec {
            action,
            output: Output::stdout(format(json)),
        })
    }
}
