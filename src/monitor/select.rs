//! Which devices a stat report shows: kinds from sysfs (recorded with the samples so replay selects
//! the same), explicit names and shell-style globs. Pure.
//! Imports only: sys/, monitor/, error.

use crate::error::Error;
use crate::sys::device::DevKind;

/// What is known about a device besides its counters: its sysfs class and the name users know
/// it by (dm name). `kind` is None when sysfs had no entry (a foreign recording, a bare
/// fixture).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceMeta {
    pub kind: Option<DevKind>,
    pub display_name: String,
}

/// Device selection as the user asked for it. Recorded with a run (`#S`, monitor::record), so
/// that a replay, `analyze` and the recording's page show by default what the live run showed.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Selection {
    /// Names or globs (`sd*`, `nvme?n1`), matched against kernel and friendly names.
    pub patterns: Vec<String>,
    pub partitions: bool,
    pub all: bool,
}

/// The usage error for a selected device pattern that names no device of the machine.
pub fn unknown_device(pattern: &str) -> Error {
    Error::usage(
        "DEVICE",
        pattern,
        "matches no device in /proc/diskstats (see `iosat info --all`)",
    )
}

/// The usage error for a device pattern that names no device of the recording at `path`
/// (`stat --replay r.rec nvme9`): the recording's devices are the ones to choose from, not the
/// machine's.
pub fn unknown_recorded_device(pattern: &str, path: &str) -> Error {
    Error::usage(
        "DEVICE",
        pattern,
        format!(
            "matches no device in the recording {path} (its devices: `iosat analyze {}`)",
            shell_word(path)
        ),
    )
}

/// `s` as one word a POSIX shell reads back as `s`, for a command the user copies: as it is
/// when it holds nothing a shell treats specially, else in single quotes (a quote in it
/// written `'\''`).
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_./-+:,@%=".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return s.to_string();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// True when the pattern has glob metacharacters.
pub fn is_glob(p: &str) -> bool {
    p.contains(['*', '?', '['])
}

/// Shell-style glob match (`*`, `?`, `[abc]`, `[a-z]`, `[!x]`) on the whole string.
pub fn glob_match(pat: &str, s: &str) -> bool {
    let p: Vec<char> = pat.chars().collect();
    let t: Vec<char> = s.chars().collect();
    glob_at(&p, &t)
}

fn glob_at(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len()).any(|i| glob_at(&p[1..], &t[i..])),
        Some('?') => !t.is_empty() && glob_at(&p[1..], &t[1..]),
        Some('[') => {
            let Some(end) = p.iter().skip(1).position(|&c| c == ']').map(|i| i + 1) else {
                return t.first() == Some(&'[') && glob_at(&p[1..], &t[1..]);
            };
            let Some(&c) = t.first() else { return false };
            let mut set = &p[1..end];
            let negate = matches!(set.first(), Some('!') | Some('^'));
            if negate {
                set = &set[1..];
            }
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == '-' {
                    hit |= set[i] <= c && c <= set[i + 2];
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != negate && glob_at(&p[end + 1..], &t[1..])
        }
        Some(&ch) => t.first() == Some(&ch) && glob_at(&p[1..], &t[1..]),
    }
}

/// Fallback only for devices without sysfs facts (pt-diskstats/pt-stalk files, which carry
/// none): does the kernel name follow a partition naming scheme? `sda1`, `hdb2`, `vda3`,
/// `xvda1` (letters then digits after a disk prefix), and `nvme0n1p2`, `mmcblk0p1`,
/// `md0p1`, `nbd0p1`, `loop0p1` (`p` + digits after a name ending in a digit). Devices that
/// are known through sysfs are never classified by name.
pub fn looks_like_partition(name: &str) -> bool {
    let digits_at_end = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits_at_end == 0 {
        return false;
    }
    let stem = &name[..name.len() - digits_at_end];
    if let Some(before_p) = stem.strip_suffix('p') {
        if before_p.ends_with(|c: char| c.is_ascii_digit()) {
            return ["nvme", "mmcblk", "md", "nbd", "loop"]
                .iter()
                .any(|p| before_p.starts_with(p));
        }
    }
    ["sd", "hd", "vd", "xvd"].iter().any(|p| {
        stem.strip_prefix(p)
            .is_some_and(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_lowercase()))
    })
}

/// The disk a partition's kernel name belongs to, by the kernel's own rule (block/
/// partitions/core.c): the disk's name and the partition's number, with a `p` between them
/// when the disk's name ends in a digit (sda1, nvme0n1p2, mmcblk0p1, loop0p1). None: not a
/// partition's name.
pub fn disk_of_partition(name: &str) -> Option<&str> {
    let base = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if base.len() == name.len() || base.is_empty() {
        return None;
    }
    match base.strip_suffix('p') {
        Some(disk) if disk.ends_with(|c: char| c.is_ascii_digit()) => Some(disk),
        _ => Some(base),
    }
}

/// `zram<N>`: the name is the only hint without sysfs (the zram major is dynamic).
fn is_zram_name(name: &str) -> bool {
    name.strip_prefix("zram")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

impl Selection {
    /// The selection of a recording's runs (their `#S` lines, in order): the one they share;
    /// where runs selected differently, every device (each run's devices among them: no
    /// single selection is their union). None: no run recorded one (a recording from before
    /// `#S`, pt-diskstats), the caller's default holds.
    pub fn of_runs<'a>(runs: impl IntoIterator<Item = &'a Selection>) -> Option<Selection> {
        let mut runs = runs.into_iter();
        let first = runs.next()?.clone();
        Some(if runs.all(|s| *s == first) {
            first
        } else {
            Selection {
                patterns: Vec::new(),
                partitions: true,
                all: true,
            }
        })
    }

    /// The selection a recording shows by default, from its runs in order: each run's `#S`
    /// (None: a run appended by an iosat from before `#S`, which showed the default
    /// selection), taken together by [`Selection::of_runs`]; None where no run recorded one.
    /// The one rule of a replay, `analyze` and the recording's page.
    pub fn of_recorded_runs(runs: &[Option<&Selection>]) -> Option<Selection> {
        let default = Selection::default();
        runs.iter()
            .any(Option::is_some)
            .then(|| Selection::of_runs(runs.iter().map(|r| r.unwrap_or(&default))))
            .flatten()
    }

    fn kind_allowed(&self, kind: Option<DevKind>, major: u32, name: &str) -> bool {
        if self.all {
            return true;
        }
        match kind {
            Some(DevKind::Disk | DevKind::Dm | DevKind::Md) => true,
            Some(DevKind::Partition) => self.partitions,
            Some(_) => false,
            // No sysfs entry (a foreign recording): show it unless its major is the fixed
            // loop (7) or ram (1) major of include/uapi/linux/major.h, it is named like a zram
            // device (whose major is dynamic), or its name follows a partition scheme (the
            // only hints such a file gives).
            None if looks_like_partition(name) => self.partitions,
            None => major != 7 && major != 1 && !is_zram_name(name),
        }
    }

    /// Is this device part of the report?
    pub fn selects(&self, major: u32, name: &str, meta: &DeviceMeta) -> bool {
        if self.patterns.is_empty() {
            return self.kind_allowed(meta.kind, major, name);
        }
        self.patterns.iter().any(|p| {
            if is_glob(p) {
                (glob_match(p, name) || glob_match(p, &meta.display_name))
                    && self.kind_allowed(meta.kind, major, name)
            } else {
                p == name || *p == meta.display_name
            }
        })
    }

    /// The first explicit (non-glob) name that matches none of the devices, or glob that
    /// matches none: an unknown device is a usage error, not an empty report.
    pub fn unmatched<'a>(&'a self, devices: &[(u32, &str, &DeviceMeta)]) -> Option<&'a str> {
        self.patterns
            .iter()
            .find(|p| {
                !devices.iter().any(|(major, name, meta)| {
                    let one = Selection {
                        patterns: vec![(*p).clone()],
                        ..self.clone()
                    };
                    one.selects(*major, name, meta)
                })
            })
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The command a replay's unknown-device error suggests runs as written when pasted into
    /// a shell, whatever the recording's name.
    #[test]
    fn the_suggested_command_names_the_recording_as_one_shell_word() {
        let said = |path: &str| unknown_recorded_device("nvme9", path).to_string();
        assert!(said("r.rec").ends_with("(its devices: `iosat analyze r.rec`)"));
        assert!(said("my rec.rec").ends_with("`iosat analyze 'my rec.rec'`)"));
        assert!(said("it's.rec").ends_with(r"`iosat analyze 'it'\''s.rec'`)"));
        assert!(said("$HOME.rec").ends_with("`iosat analyze '$HOME.rec'`)"));
        // What a shell makes of the suggested word is the path.
        for path in ["my rec.rec", "it's.rec", "$HOME;x.rec", "a\"b"] {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("printf %s {}", shell_word(path)))
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), path);
        }
    }

    fn meta(kind: Option<DevKind>, name: &str) -> DeviceMeta {
        DeviceMeta {
            kind,
            display_name: name.into(),
        }
    }

    #[test]
    fn the_runs_selection_is_the_one_they_share_else_every_device() {
        let loop0 = Selection {
            patterns: vec!["loop0".into()],
            ..Selection::default()
        };
        assert_eq!(Selection::of_runs([]), None);
        assert_eq!(Selection::of_runs([&loop0]), Some(loop0.clone()));
        assert_eq!(Selection::of_runs([&loop0, &loop0]), Some(loop0.clone()));
        let every = Selection::of_runs([&loop0, &Selection::default()]).unwrap();
        assert!(every.all && every.partitions && every.patterns.is_empty());
        // Every device of either run is among those shown.
        let m = |k| meta(Some(k), "x");
        assert!(every.selects(7, "loop0", &m(DevKind::Loop)));
        assert!(every.selects(8, "sda", &m(DevKind::Disk)));
    }

    #[test]
    fn globs() {
        assert!(glob_match("sd*", "sda1"));
        assert!(glob_match("nvme?n1", "nvme0n1"));
        assert!(!glob_match("nvme?n1", "nvme0n1p1"));
        assert!(glob_match("sd[a-c]", "sdb"));
        assert!(!glob_match("sd[!a-c]", "sdb"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("vda", "vdb"));
    }

    #[test]
    fn partition_names_without_sysfs() {
        for p in [
            "sda1",
            "sdab12",
            "hdb2",
            "vda3",
            "xvda1",
            "nvme0n1p2",
            "mmcblk0p1",
            "md0p1",
        ] {
            assert!(looks_like_partition(p), "{p}");
        }
        for d in [
            "sda", "xvda", "nvme0n1", "mmcblk0", "md0", "dm-0", "loop0", "sr0", "zram0",
        ] {
            assert!(!looks_like_partition(d), "{d}");
        }
        let s = Selection::default();
        assert!(!s.selects(202, "xvda1", &meta(None, "xvda1")));
        assert!(!s.selects(252, "zram0", &meta(None, "zram0")));
        assert!(s.selects(202, "xvda", &meta(None, "xvda")));
        // sysfs says disk: the name is not consulted.
        assert!(s.selects(8, "sda1", &meta(Some(DevKind::Disk), "sda1")));
        let p = Selection {
            partitions: true,
            ..Selection::default()
        };
        assert!(p.selects(202, "xvda1", &meta(None, "xvda1")));
    }

    #[test]
    fn default_is_whole_disks_dm_and_md() {
        let s = Selection::default();
        assert!(s.selects(8, "sda", &meta(Some(DevKind::Disk), "sda")));
        assert!(s.selects(253, "dm-0", &meta(Some(DevKind::Dm), "vg0-root")));
        assert!(s.selects(9, "md0", &meta(Some(DevKind::Md), "md0")));
        assert!(!s.selects(8, "sda1", &meta(Some(DevKind::Partition), "sda1")));
        assert!(!s.selects(7, "loop0", &meta(Some(DevKind::Loop), "loop0")));
        assert!(!s.selects(252, "zram0", &meta(Some(DevKind::Zram), "zram0")));
        assert!(!s.selects(7, "loop0", &meta(None, "loop0")));
        assert!(s.selects(202, "xvda", &meta(None, "xvda")));
        let p = Selection {
            partitions: true,
            ..Selection::default()
        };
        assert!(p.selects(8, "sda1", &meta(Some(DevKind::Partition), "sda1")));
        assert!(!p.selects(7, "loop0", &meta(Some(DevKind::Loop), "loop0")));
        let a = Selection {
            all: true,
            ..Selection::default()
        };
        assert!(a.selects(252, "zram0", &meta(Some(DevKind::Zram), "zram0")));
    }

    #[test]
    fn names_select_any_kind_and_globs_respect_kinds() {
        let s = Selection {
            patterns: vec!["loop0".into(), "sd*".into(), "vg0-root".into()],
            ..Selection::default()
        };
        assert!(s.selects(7, "loop0", &meta(Some(DevKind::Loop), "loop0")));
        assert!(s.selects(8, "sdb", &meta(Some(DevKind::Disk), "sdb")));
        assert!(!s.selects(8, "sdb1", &meta(Some(DevKind::Partition), "sdb1")));
        assert!(s.selects(253, "dm-0", &meta(Some(DevKind::Dm), "vg0-root")));
        assert!(!s.selects(259, "nvme0n1", &meta(Some(DevKind::Disk), "nvme0n1")));
        let m = meta(Some(DevKind::Disk), "sda");
        let devs = [(8u32, "sda", &m)];
        assert_eq!(s.unmatched(&devs), Some("loop0"));
    }
}
