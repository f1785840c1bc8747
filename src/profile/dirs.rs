//! Where profiles live: the own directory (`--profile-dir` / `$IOSAT_PROFILE_DIR`, else
//! `/var/lib/iosat/profiles` for root, else `$XDG_STATE_HOME/iosat/profiles`, else
//! `~/.local/state/iosat/profiles`), for root also the old user location, then the shared
//! read-only ones (`$IOSAT_PROFILE_DIRS`, else `/etc/iosat/profiles`): [`ProfileDirs`] in
//! search order, pure (config/profile.rs reads the environment).
//! Imports only: nothing.

use std::path::{Path, PathBuf};

/// The own profile directory (where profiles are saved) from an explicit choice or the
/// environment: root's beside its learned state (`/var/lib/iosat/profiles`), a user's in the
/// XDG state directory.
pub fn profile_dir(
    explicit: Option<&Path>,
    is_root: bool,
    xdg_state_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    if let Some(p) = explicit {
        return Some(p.to_path_buf());
    }
    if is_root {
        return Some(PathBuf::from(ROOT_PROFILE_DIR));
    }
    user_profile_dir(xdg_state_home, home)
}

/// iosat's state home, the one rule for learned state and profiles alike: `/var/lib/iosat`
/// for root, else `$XDG_STATE_HOME/iosat`, else `~/.local/state/iosat` (None: no home to name).
pub fn state_home(
    is_root: bool,
    xdg_state_home: Option<&str>,
    home: Option<&str>,
) -> Option<PathBuf> {
    if is_root {
        return Some(PathBuf::from(ROOT_STATE_HOME));
    }
    if let Some(x) = xdg_state_home.filter(|s| !s.is_empty()) {
        return Some(Path::new(x).join("iosat"));
    }
    home.filter(|s| !s.is_empty())
        .map(|h| Path::new(h).join(".local/state/iosat"))
}

/// Root's state home.
const ROOT_STATE_HOME: &str = "/var/lib/iosat";

/// Root's own profile directory, beside its learned state (/var/lib/iosat).
pub const ROOT_PROFILE_DIR: &str = "/var/lib/iosat/profiles";

/// The directory configuration management ships profiles to, read-only, read by default.
pub const SHARED_PROFILE_DIR: &str = "/etc/iosat/profiles";

fn user_profile_dir(xdg_state_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    state_home(false, xdg_state_home, home).map(|h| h.join("profiles"))
}

/// What a directory of the search is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DirRole {
    /// Where this user's (root's) profiles are saved.
    Own,
    /// Root's profiles before they moved beside the learned state (~/.local/state/iosat/
    /// profiles): still read, and said so.
    Old,
    /// Read-only, e.g. shipped by configuration management (/etc/iosat/profiles), or a
    /// further `--profile-dir`.
    Shared,
}

/// The directories profiles are looked for in, in search order: an exact id is looked for in
/// each in turn, then a model profile in each in turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileDirs {
    pub dirs: Vec<(PathBuf, DirRole)>,
}

impl From<Option<PathBuf>> for ProfileDirs {
    /// One directory, this user's (tests, a single `--profile-dir`).
    fn from(own: Option<PathBuf>) -> ProfileDirs {
        ProfileDirs {
            dirs: own.map(|d| (d, DirRole::Own)).into_iter().collect(),
        }
    }
}

impl ProfileDirs {
    /// Where profiles are saved (None: no directory could be named).
    pub fn own(&self) -> Option<&Path> {
        self.dirs
            .iter()
            .find(|(_, r)| *r == DirRole::Own)
            .map(|(d, _)| d.as_path())
    }

    pub fn is_empty(&self) -> bool {
        self.dirs.is_empty()
    }

    /// The directories as one line: "/var/lib/iosat/profiles, /etc/iosat/profiles (shared)".
    pub fn describe(&self) -> String {
        self.dirs
            .iter()
            .map(|(d, r)| match r {
                DirRole::Own => d.display().to_string(),
                DirRole::Old => format!("{} (old location)", d.display()),
                DirRole::Shared => format!("{} (shared)", d.display()),
            })
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Pure: the search order. The own directory: the first `explicit` (`--profile-dir`,
/// repeatable; the others are read after it), else $IOSAT_PROFILE_DIR, else [`profile_dir`];
/// for root without either, the old user location after it; then always the shared ones:
/// `$IOSAT_PROFILE_DIRS` (colon-separated; set and empty: none), else [`SHARED_PROFILE_DIR`]
/// (so an exporter unit that names its own directory still reads what configuration
/// management ships).
pub fn search_dirs(
    explicit: &[PathBuf],
    env_own: Option<&Path>,
    env_shared: Option<&str>,
    is_root: bool,
    xdg_state_home: Option<&str>,
    home: Option<&str>,
) -> ProfileDirs {
    let mut dirs: Vec<(PathBuf, DirRole)> = Vec::new();
    let mut push = |d: PathBuf, r: DirRole| {
        if !dirs.iter().any(|(x, _)| *x == d) {
            dirs.push((d, r));
        }
    };
    if let Some((own, more)) = explicit.split_first() {
        push(own.clone(), DirRole::Own);
        for d in more {
            push(d.clone(), DirRole::Shared);
        }
    } else if let Some(own) = profile_dir(env_own, is_root, xdg_state_home, home) {
        push(own, DirRole::Own);
    }
    if explicit.is_empty() && env_own.is_none() && is_root {
        if let Some(old) = user_profile_dir(xdg_state_home, home) {
            push(old, DirRole::Old);
        }
    }
    match env_shared {
        Some(list) => {
            for d in list.split(':').filter(|d| !d.is_empty()) {
                push(PathBuf::from(d), DirRole::Shared);
            }
        }
        None => push(PathBuf::from(SHARED_PROFILE_DIR), DirRole::Shared),
    }
    ProfileDirs { dirs }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_precedence() {
        assert_eq!(
            profile_dir(Some(Path::new("/x")), true, Some("/s"), Some("/h")),
            Some(PathBuf::from("/x"))
        );
        assert_eq!(
            profile_dir(None, false, Some("/s"), Some("/h")),
            Some(PathBuf::from("/s/iosat/profiles"))
        );
        assert_eq!(
            profile_dir(None, false, Some(""), Some("/h")),
            Some(PathBuf::from("/h/.local/state/iosat/profiles"))
        );
        assert_eq!(profile_dir(None, false, None, None), None);
        // Root's beside its learned state (/var/lib/iosat), whatever its environment says.
        assert_eq!(
            profile_dir(None, true, Some("/s"), Some("/root")),
            Some(PathBuf::from("/var/lib/iosat/profiles"))
        );
    }

    /// The search order: the own directory, root's old one, the shared ones; an explicit
    /// `--profile-dir` list is exactly that list.
    #[test]
    fn search_order() {
        let paths = |d: ProfileDirs| {
            d.dirs
                .into_iter()
                .map(|(p, r)| (p.display().to_string(), r))
                .collect::<Vec<_>>()
        };
        use DirRole::*;
        assert_eq!(
            paths(search_dirs(&[], None, None, true, None, Some("/root"))),
            [
                ("/var/lib/iosat/profiles".into(), Own),
                ("/root/.local/state/iosat/profiles".into(), Old),
                ("/etc/iosat/profiles".into(), Shared),
            ]
        );
        assert_eq!(
            paths(search_dirs(
                &[],
                None,
                Some("/a::/b"),
                false,
                None,
                Some("/h")
            )),
            [
                ("/h/.local/state/iosat/profiles".into(), Own),
                ("/a".into(), Shared),
                ("/b".into(), Shared),
            ]
        );
        // $IOSAT_PROFILE_DIR names the own one (no old location); an empty
        // $IOSAT_PROFILE_DIRS: no shared one.
        assert_eq!(
            paths(search_dirs(
                &[],
                Some(Path::new("/p")),
                Some(""),
                true,
                None,
                Some("/root")
            )),
            [("/p".into(), Own)]
        );
        // --profile-dir names the own one and more to read; the shared one is still read.
        let explicit = [PathBuf::from("/x"), PathBuf::from("/y")];
        let d = search_dirs(&explicit, Some(Path::new("/p")), None, true, None, None);
        assert_eq!(d.own(), Some(Path::new("/x")));
        assert_eq!(
            paths(d),
            [
                ("/x".into(), Own),
                ("/y".into(), Shared),
                ("/etc/iosat/profiles".into(), Shared)
            ]
        );
        let d = search_dirs(&explicit[..1], None, Some(""), true, None, Some("/root"));
        assert_eq!(paths(d), [("/x".into(), Own)]);
    }
}
