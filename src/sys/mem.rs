//! Memory the page cache could use: `MemAvailable` of `<proc>/meminfo` (proc(5), 3.14+). Thin
//! reader over a pure parser.
//! Imports only: sys/, error, units.

use super::Root;

/// `MemAvailable:` in bytes (the file says kB, meaning KiB).
pub fn parse_mem_available(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

pub fn mem_available(root: &Root) -> Option<u64> {
    parse_mem_available(&std::fs::read_to_string(root.proc.join("meminfo")).ok()?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_mem_available() {
        let t = "MemTotal:        4013140 kB\nMemFree:          211844 kB\nMemAvailable:    2869432 kB\nBuffers:           1 kB\n";
        assert_eq!(super::parse_mem_available(t), Some(2_869_432 * 1024));
        assert_eq!(super::parse_mem_available("MemTotal: 1 kB\n"), None);
    }
}
