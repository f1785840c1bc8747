//! The only code that touches /proc, /sys and raw syscalls. Readers are thin IO functions over pure
//! parsers, with a swappable root (--proc-root/--sys-root).
//! Imports only: sys/, error, units.

use std::path::PathBuf;

pub mod bpf;
pub mod cache;
pub mod cgroup;
pub mod cgroups;
pub mod clock;
pub mod device;
pub mod diskstats;
pub mod ebs;
pub mod ebsdev;
pub mod enter;
pub mod file;
pub mod fs;
pub mod inflight;
pub mod mem;
pub mod probe;
pub mod procio;
pub mod sched;
pub mod signal;
pub mod topology;
pub mod tty;
pub mod uptime;

/// Where kernel files are read from: `/proc` and `/sys` normally, a fixture tree in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub proc: PathBuf,
    pub sys: PathBuf,
}

impl Default for Root {
    fn default() -> Self {
        Root {
            proc: PathBuf::from("/proc"),
            sys: PathBuf::from("/sys"),
        }
    }
}

/// The running kernel's release (`<proc>/sys/kernel/osrelease`), e.g. "6.18.44".
pub fn kernel_release(root: &Root) -> Option<String> {
    kernel_value(root, "osrelease")
}

/// The host's name (`<proc>/sys/kernel/hostname`).
pub fn hostname(root: &Root) -> Option<String> {
    kernel_value(root, "hostname")
}

/// A one-line file of `<proc>/sys/kernel/`, trimmed; None when missing or empty.
fn kernel_value(root: &Root, name: &str) -> Option<String> {
    std::fs::read_to_string(root.proc.join("sys/kernel").join(name))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The running host's name and kernel release as uname(2) gives them (independent of
/// --proc-root: the machine iosat runs on); empty strings if the call fails.
pub fn uname() -> (String, String) {
    // SAFETY: utsname is plain bytes; uname fills it and NUL-terminates each field.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return (String::new(), String::new());
    }
    let field = |f: &[libc::c_char]| {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    };
    (field(&u.nodename), field(&u.release))
}

/// CPUs online (sysconf(_SC_NPROCESSORS_ONLN)), the count iostat prints; 0 if unknown.
/// The effective user id: the one place iosat asks it.
pub fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Running as root (effective uid 0): where state and profiles live, what `top` may show.
pub fn is_root() -> bool {
    euid() == 0
}

pub fn online_cpus() -> u32 {
    // SAFETY: sysconf only reads a system setting.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    u32::try_from(n).unwrap_or(0)
}

/// "6.18.44-fc-v445" → (6, 18).
pub fn kernel_version(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

#[cfg(test)]
mod tests {
    #[test]
    fn kernel_versions() {
        assert_eq!(super::kernel_version("6.18.44-fc-v445"), Some((6, 18)));
        assert_eq!(super::kernel_version("4.19.0"), Some((4, 19)));
        assert_eq!(super::kernel_version("x"), None);
    }

    #[test]
    fn uname_names_this_host() {
        let (host, release) = super::uname();
        assert!(!host.is_empty() && super::kernel_version(&release).is_some());
        assert!(super::online_cpus() >= 1);
    }
}
