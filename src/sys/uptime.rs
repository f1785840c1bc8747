//! `<proc>/uptime`: a pure parser and a thin reader. Its first field is the time since boot in
//! seconds with two decimals, counting time spent suspended (CLOCK_BOOTTIME), the divisor iostat
//! uses for its since-boot report (sysstat `read_uptime`).
//! Imports only: sys/, error, units.

use super::Root;
use crate::error::{Error, Result};

/// "350735.47 234388.90\n" → 350735.47 s in ns, exactly (no float rounding). None when the
/// first field is not a decimal number of seconds.
pub fn parse(text: &str) -> Option<u64> {
    crate::units::decimal_seconds_ns(text.split_ascii_whitespace().next()?)
}

/// The time since boot of the system under `root` (`<proc>/uptime`), in ns.
pub fn read_ns(root: &Root) -> Result<u64> {
    let path = root.proc.join("uptime");
    let text = std::fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
    parse(&text).ok_or_else(|| {
        Error::parse(
            path,
            1,
            format!(
                "expected '<seconds since boot> <idle seconds>', got '{}'",
                text.trim()
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_format() {
        // As fs/proc/uptime.c prints it.
        assert_eq!(parse("350735.47 234388.90\n"), Some(350_735_470_000_000));
        assert_eq!(parse("12.05 40.00\n"), Some(12_050_000_000));
        assert_eq!(parse("7 1"), Some(7_000_000_000));
        assert_eq!(parse(""), None);
        assert_eq!(parse("-1.00 0.00"), None);
        assert_eq!(parse("x 0.00"), None);
    }

    #[test]
    fn reads_the_file_under_the_proc_root() {
        let root = Root {
            proc: std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/sysroot1/proc"),
            sys: "/nonexistent".into(),
        };
        assert_eq!(read_ns(&root).unwrap(), 86_400_000_000_000);
        let missing = Root {
            proc: "/nonexistent-proc".into(),
            ..root
        };
        let e = read_ns(&missing).unwrap_err().to_string();
        assert!(e.contains("/nonexistent-proc/uptime"), "{e}");
    }
}
