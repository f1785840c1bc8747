//! The block I/O limits the kernel applies to this process: its cgroup path from
//! `<proc>/self/cgroup`, then at every level of that path from the leaf up, cgroup v2 `io.max`
//! under `<sys>/fs/cgroup` (Documentation/admin-guide/cgroup-v2.rst, "IO Interface Files") and
//! cgroup v1 `blkio.throttle.{read,write}_{iops,bps}_device` under `<sys>/fs/cgroup/blkio`
//! (Documentation/admin-guide/cgroup-v1/blkio-controller.rst). A limit at any level binds every
//! cgroup below it, so the tightest of each kind is the one that applies. Thin reader over pure
//! parsers.
//! Imports only: sys/, error, units.

use super::Root;
use std::path::{Path, PathBuf};

/// Which requests a limit applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThrottleKind {
    ReadIops,
    WriteIops,
    ReadBytesPerS,
    WriteBytesPerS,
}

impl ThrottleKind {
    /// "read IOPS", "write bytes/s", ...
    pub fn text(self) -> &'static str {
        match self {
            ThrottleKind::ReadIops => "read IOPS",
            ThrottleKind::WriteIops => "write IOPS",
            ThrottleKind::ReadBytesPerS => "read bytes/s",
            ThrottleKind::WriteBytesPerS => "write bytes/s",
        }
    }

    /// Its key in cgroup v2's `io.max`: "riops", "wiops", "rbps", "wbps".
    pub fn io_max_key(self) -> &'static str {
        match self {
            ThrottleKind::ReadIops => "riops",
            ThrottleKind::WriteIops => "wiops",
            ThrottleKind::ReadBytesPerS => "rbps",
            ThrottleKind::WriteBytesPerS => "wbps",
        }
    }

    /// The kind an `io.max` key sets (None: another key, such as a future one).
    pub fn of_io_max_key(k: &str) -> Option<ThrottleKind> {
        [
            ThrottleKind::ReadIops,
            ThrottleKind::WriteIops,
            ThrottleKind::ReadBytesPerS,
            ThrottleKind::WriteBytesPerS,
        ]
        .into_iter()
        .find(|t| t.io_max_key() == k)
    }
}

/// One limit on one device, and the file that sets it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CgroupLimit {
    pub kind: ThrottleKind,
    pub value: u64,
    /// `major:minor`.
    pub dev: String,
    pub source: String,
}

impl CgroupLimit {
    /// "this process may do at most 3000 read IOPS on vda: cgroup /sys/fs/cgroup/x/io.max".
    pub fn sentence(&self, dev_name: &str) -> String {
        let what = match self.kind {
            ThrottleKind::ReadIops | ThrottleKind::WriteIops => {
                format!("do at most {} {}", self.value, self.kind.text())
            }
            ThrottleKind::ReadBytesPerS => {
                format!("read at most {}/s", crate::units::human_bytes(self.value))
            }
            ThrottleKind::WriteBytesPerS => {
                format!("write at most {}/s", crate::units::human_bytes(self.value))
            }
        };
        format!(
            "this process may {what} on {dev_name}: cgroup {}",
            self.source
        )
    }
}

/// The cgroup paths of this process: (v2 path, v1 blkio path), from /proc/self/cgroup
/// lines `0::/path` and `N:blkio[,...]:/path`.
pub fn parse_proc_cgroup(text: &str) -> (Option<String>, Option<String>) {
    let (mut v2, mut v1) = (None, None);
    for line in text.lines() {
        let mut f = line.splitn(3, ':');
        let (Some(id), Some(ctrls), Some(path)) = (f.next(), f.next(), f.next()) else {
            continue;
        };
        if id == "0" && ctrls.is_empty() {
            v2 = Some(path.to_string());
        } else if ctrls.split(',').any(|c| c == "blkio") {
            v1 = Some(path.to_string());
        }
    }
    (v2, v1)
}

/// Finite limits of one `io.max` file for device `dev` ("253:0"): `riops=3000` and the like;
/// `max` is no limit.
pub fn parse_io_max(text: &str, dev: &str) -> Vec<(ThrottleKind, u64)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.split_whitespace();
        if f.next() != Some(dev) {
            continue;
        }
        for kv in f {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let Some(kind) = ThrottleKind::of_io_max_key(k) else {
                continue;
            };
            if let Ok(n) = v.parse() {
                out.push((kind, n));
            }
        }
    }
    out
}

/// The value for `dev` in a v1 `blkio.throttle.*_device` file ("253:0 3000" per line).
pub fn parse_v1_throttle(text: &str, dev: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        (f.next() == Some(dev)).then(|| f.next()?.parse().ok())?
    })
}

/// `base` joined with every prefix of `cg_path`, the leaf first and `base` itself last.
fn levels(base: &Path, cg_path: &str) -> Vec<PathBuf> {
    let parts: Vec<&str> = cg_path.split('/').filter(|p| !p.is_empty()).collect();
    (0..=parts.len())
        .rev()
        .map(|n| parts[..n].iter().fold(base.to_path_buf(), |p, x| p.join(x)))
        .collect()
}

pub(super) const V1_FILES: [(&str, ThrottleKind); 4] = [
    ("blkio.throttle.read_iops_device", ThrottleKind::ReadIops),
    ("blkio.throttle.write_iops_device", ThrottleKind::WriteIops),
    (
        "blkio.throttle.read_bps_device",
        ThrottleKind::ReadBytesPerS,
    ),
    (
        "blkio.throttle.write_bps_device",
        ThrottleKind::WriteBytesPerS,
    ),
];

/// The limits that apply to this process's I/O on device `major:minor`: the tightest of each
/// kind along its cgroup path, with the file that sets it. Empty when none is set or cgroups
/// are not readable.
pub fn limits(root: &Root, major: u32, minor: u32) -> Vec<CgroupLimit> {
    let dev = format!("{major}:{minor}");
    let Ok(text) = std::fs::read_to_string(root.proc.join("self/cgroup")) else {
        return Vec::new();
    };
    let (v2, v1) = parse_proc_cgroup(&text);
    let mut found: Vec<CgroupLimit> = Vec::new();
    let mut add = |kind, value, source: &Path| {
        found.push(CgroupLimit {
            kind,
            value,
            dev: dev.clone(),
            source: source.display().to_string(),
        })
    };
    let fs = root.sys.join("fs/cgroup");
    if let Some(p) = &v2 {
        // A hybrid system mounts the v2 hierarchy at fs/cgroup/unified.
        for base in [fs.clone(), fs.join("unified")] {
            for dir in levels(&base, p) {
                let file = dir.join("io.max");
                if let Ok(t) = std::fs::read_to_string(&file) {
                    for (k, v) in parse_io_max(&t, &dev) {
                        add(k, v, &file);
                    }
                }
            }
        }
    }
    if let Some(p) = &v1 {
        for dir in levels(&fs.join("blkio"), p) {
            for (name, k) in V1_FILES {
                let file = dir.join(name);
                if let Some(v) = std::fs::read_to_string(&file)
                    .ok()
                    .and_then(|t| parse_v1_throttle(&t, &dev))
                {
                    add(k, v, &file);
                }
            }
        }
    }
    tightest(found)
}

/// One limit per kind: the smallest (the leaf's on a tie), in kind order.
fn tightest(found: Vec<CgroupLimit>) -> Vec<CgroupLimit> {
    let mut out: Vec<CgroupLimit> = Vec::new();
    for l in found {
        match out.iter_mut().find(|o| o.kind == l.kind) {
            Some(o) if l.value < o.value => *o = l,
            Some(_) => {}
            None => out.push(l),
        }
    }
    out.sort_by_key(|l| l.kind as u8);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_cgroup_of_v2_v1_and_hybrid() {
        assert_eq!(
            parse_proc_cgroup("0::/user.slice/user-0.slice/session-1.scope\n"),
            (
                Some("/user.slice/user-0.slice/session-1.scope".into()),
                None
            )
        );
        let v1 = "12:pids:/a\n5:blkio:/system.slice/db.service\n3:cpu,cpuacct:/x\n0::/b\n";
        assert_eq!(
            parse_proc_cgroup(v1),
            (Some("/b".into()), Some("/system.slice/db.service".into()))
        );
    }

    #[test]
    fn io_max_and_v1_files() {
        let t = "7:3 rbps=max wbps=1048576 riops=3000 wiops=max\n253:0 riops=10\n";
        assert_eq!(
            parse_io_max(t, "7:3"),
            vec![
                (ThrottleKind::WriteBytesPerS, 1_048_576),
                (ThrottleKind::ReadIops, 3000)
            ]
        );
        assert_eq!(parse_io_max(t, "8:0"), vec![]);
        assert_eq!(parse_v1_throttle("8:0 500\n7:3 200\n", "7:3"), Some(200));
        assert_eq!(parse_v1_throttle("", "7:3"), None);
    }

    #[test]
    fn reads_the_tightest_limit_along_the_path() {
        let d = tempfile::tempdir().unwrap();
        let root = Root {
            proc: d.path().join("proc"),
            sys: d.path().join("sys"),
        };
        std::fs::create_dir_all(root.proc.join("self")).unwrap();
        std::fs::write(root.proc.join("self/cgroup"), "0::/app/job\n").unwrap();
        let cg = root.sys.join("fs/cgroup");
        std::fs::create_dir_all(cg.join("app/job")).unwrap();
        std::fs::write(cg.join("app/io.max"), "7:3 riops=2000 wiops=500\n").unwrap();
        std::fs::write(cg.join("app/job/io.max"), "7:3 riops=3000 rbps=max\n").unwrap();
        let l = limits(&root, 7, 3);
        assert_eq!(l.len(), 2, "{l:?}");
        assert_eq!((l[0].kind, l[0].value), (ThrottleKind::ReadIops, 2000));
        assert!(
            l[0].source.ends_with("fs/cgroup/app/io.max"),
            "{}",
            l[0].source
        );
        assert_eq!((l[1].kind, l[1].value), (ThrottleKind::WriteIops, 500));
        assert_eq!(l[0].dev, "7:3");
        assert!(limits(&root, 8, 0).is_empty());
        let s = l[0].sentence("loop3");
        assert!(
            s.starts_with("this process may do at most 2000 read IOPS on loop3: cgroup /"),
            "{s}"
        );
        let bw = CgroupLimit {
            kind: ThrottleKind::WriteBytesPerS,
            value: 10 << 20,
            ..l[0].clone()
        };
        assert!(bw
            .sentence("vda")
            .starts_with("this process may write at most 10.0 MiB/s on vda"));
    }
}
