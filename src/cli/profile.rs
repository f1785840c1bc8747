//! Syntax of `iosat profile`: list, show, rm, export, save, import.
//! Imports only: cli/.

use super::{ProfileArgs, RootArgs};
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// The device profiles in the profile directory: list them, show or export one, remove one,
/// save one from an existing sweep result, import one swept on a twin for a device here.
#[derive(Debug, Args)]
#[command(after_help = "Examples:
  iosat profile list
  iosat sweep /dev/sdb --json -o r.json; iosat profile save r.json
  iosat profile export ID -o twin.json    (on the twin)
  iosat profile import twin.json --for /dev/sdb    (on the fleet host)
  iosat profile save r.json --model    (one profile for every device of sdb's model)
  iosat profile import model.json --profile-dir /etc/iosat/profiles    (ship a model profile)")]
pub struct ProfileCmdArgs {
    #[command(subcommand)]
    pub action: ProfileAction,
}

#[derive(Debug, Subcommand)]
pub enum ProfileAction {
    /// Every profile in the directory: id, device, direction, pattern, block size, when, source.
    List(ListArgs),
    /// One profile's numbers.
    Show(IdArgs),
    /// Remove a device's profile files (only files that are iosat profiles).
    Rm(IdArgs),
    /// Print a profile file (the saved sweep report) to stdout or -o FILE.
    Export(ExportArgs),
    /// Save a profile from a sweep result (`iosat sweep --json -o r.json`), with the checks of
    /// `sweep --save-profile`.
    Save(SaveArgs),
    /// Save a profile or sweep result made elsewhere (a twin) as DEVICE's profile, or with
    /// --model as the model profile of every device like DEVICE.
    Import(ImportArgs),
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub profile: ProfileArgs,
}

#[derive(Debug, Args)]
pub struct IdArgs {
    /// The profile id (`iosat profile list`, `iosat info`).
    #[arg(value_name = "ID")]
    pub id: String,
    /// Only the profile of this direction (read or write).
    #[arg(long, value_name = "DIR")]
    pub direction: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub profile: ProfileArgs,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub id: IdArgs,
    /// Write the profile to FILE instead of stdout (an existing FILE is refused unless --force).
    #[arg(short = 'o', long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Replace the -o FILE if it exists.
    #[arg(long, requires = "output")]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct SaveArgs {
    /// The sweep result (`iosat sweep --json -o FILE`).
    #[arg(value_name = "RESULT")]
    pub result: PathBuf,
    /// The device it is the profile of (name or /dev path); needed when the result does not
    /// name its disk.
    #[arg(long = "for", value_name = "DEVICE")]
    pub for_device: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A profile (`iosat profile export`) or a sweep result made on another host.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The device here it becomes the profile of (name or /dev path); with --model, a device
    /// of the model. Needed unless FILE is a model profile (`iosat profile export` of one).
    #[arg(long = "for", value_name = "DEVICE")]
    pub for_device: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// What `save` and `import` share: the trust override, the output, where to store, the root.
#[derive(Debug, Args)]
pub struct StoreArgs {
    /// Save it even when its baseline was unstable or disturbed.
    #[arg(long)]
    pub force: bool,
    /// Save a model profile: it judges every device that matches the device's model,
    /// firmware, capacity, logical/physical block size, rotational flag and scheduler and has
    /// no profile of its own (one sweep per model of a fleet).
    #[arg(long)]
    pub model: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub profile: ProfileArgs,
    #[command(flatten)]
    pub cap: super::CapArgs,
    #[command(flatten)]
    pub root: RootArgs,
}
