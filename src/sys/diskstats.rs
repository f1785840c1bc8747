//! /proc/diskstats: a pure parser and a thin reader. Knows the file's layout per kernel
//! (Documentation/admin-guide/iostats.rst): 14 fields before 4.18, 18 from 4.18 (discards), 20 from
//! 5.5 (flushes); longer future lines are accepted and the extras ignored. Kernels before 2.6.25
//! print partitions with four counters (7 fields: reads, read sectors, writes, write sectors, no
//! times): such a line is recognised ([`old_partition`]) and skipped with a warning that names the
//! partition, as `iostat -x` and pt-diskstats skip it.
//! Imports only: sys/, error, units.

use super::Root;
use crate::error::Result;

/// One line of /proc/diskstats, raw cumulative counters as the kernel printed them.
/// Sectors are always 512 bytes; the `*_ms` fields are printed as 32-bit and wrap.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DiskStatLine {
    pub major: u32,
    pub minor: u32,
    pub name: String,
    pub reads: u64,
    pub reads_merged: u64,
    pub read_sectors: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub writes_merged: u64,
    pub write_sectors: u64,
    pub write_ms: u64,
    /// A gauge, not a counter: requests in flight when the file was read.
    pub in_flight: u64,
    /// Time with at least one request in flight (io_ticks): what %util is made of.
    pub io_ms: u64,
    /// Sum of request lifetimes; since 5.7 exactly the sum of the four per-direction times.
    pub weighted_ms: u64,
    /// Kernel >= 4.18.
    pub discards: Option<u64>,
    pub discards_merged: Option<u64>,
    pub discard_sectors: Option<u64>,
    pub discard_ms: Option<u64>,
    /// Kernel >= 5.5.
    pub flushes: Option<u64>,
    pub flush_ms: Option<u64>,
}

/// The parsed lines and one warning per line that was skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Parsed {
    pub lines: Vec<DiskStatLine>,
    pub warnings: Vec<String>,
}

/// Parse the text of /proc/diskstats. Lines with fewer than 14 fields or a non-numeric
/// counter are skipped, each with one warning naming the line (1-based) and its text.
pub fn parse(text: &str) -> Parsed {
    let mut out = Parsed {
        lines: Vec::with_capacity(text.len() / 80 + 1),
        warnings: Vec::new(),
    };
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match parse_line(line) {
            Ok(l) => out.lines.push(l),
            // Without its counters, so that one warning stands for the partition in every
            // sample of a recording.
            Err(reason) if old_partition(line).is_some() => out
                .warnings
                .push(format!("diskstats line {}: {reason}, skipped", i + 1)),
            Err(reason) => out.warnings.push(format!(
                "diskstats line {}: {reason}, skipped: '{}'",
                i + 1,
                line.trim()
            )),
        }
    }
    out
}

/// Next whitespace-separated token of `b` from `*i` (the hot path of every sample: no
/// allocation, no UTF-8 work).
fn token<'a>(b: &'a [u8], i: &mut usize) -> Option<&'a [u8]> {
    while *i < b.len() && b[*i].is_ascii_whitespace() {
        *i += 1;
    }
    let start = *i;
    while *i < b.len() && !b[*i].is_ascii_whitespace() {
        *i += 1;
    }
    (*i > start).then(|| &b[start..*i])
}

/// A decimal unsigned integer, None on anything else or overflow.
fn number(t: &[u8]) -> Option<u64> {
    // Up to 19 digits cannot overflow a u64: no checked arithmetic per digit (every counter
    // of every line of every sample comes through here).
    if t.len() <= 19 {
        let mut v: u64 = 0;
        for &c in t {
            let d = c.wrapping_sub(b'0');
            if d > 9 {
                return None;
            }
            v = v * 10 + u64::from(d);
        }
        return Some(v);
    }
    let mut v: u64 = 0;
    for &c in t {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

/// Parse one line; the error says what is wrong with it.
pub fn parse_line(line: &str) -> std::result::Result<DiskStatLine, String> {
    let b = line.as_bytes();
    let mut i = 0usize;
    let text = |t: &[u8]| String::from_utf8_lossy(t).into_owned();
    let major = token(b, &mut i).ok_or("empty line")?;
    let minor = token(b, &mut i).ok_or("no minor number")?;
    let name = token(b, &mut i).ok_or("no device name")?;
    let major = number(major)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("major number '{}' is not a number", text(major)))?;
    let minor = number(minor)
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| format!("minor number '{}' is not a number", text(minor)))?;
    let mut nums = [0u64; 17];
    let mut n = 0usize;
    while let Some(field) = token(b, &mut i) {
        if n < nums.len() {
            nums[n] = number(field).ok_or_else(|| {
                format!(
                    "field {} ('{}') is not an unsigned integer",
                    n + 4,
                    text(field)
                )
            })?;
        }
        // Fields past the 20th belong to a future kernel: counted, not interpreted.
        n += 1;
    }
    if n == 4 {
        return Err(format!(
            "7 fields: partition {} as kernels before 2.6.25 print it (4 counters, no times: \
             no extended statistics)",
            text(name)
        ));
    }
    if n < 11 {
        return Err(format!("{} fields, need at least 14", n + 3));
    }
    let opt = |idx: usize| (n > idx).then_some(nums[idx]);
    Ok(DiskStatLine {
        major,
        minor,
        name: text(name),
        reads: nums[0],
        reads_merged: nums[1],
        read_sectors: nums[2],
        read_ms: nums[3],
        writes: nums[4],
        writes_merged: nums[5],
        write_sectors: nums[6],
        write_ms: nums[7],
        in_flight: nums[8],
        io_ms: nums[9],
        weighted_ms: nums[10],
        // 18-field kernels give all four discard fields, 20-field ones both flush fields;
        // a line cut in the middle of a group gets none of that group.
        discards: if n >= 15 { opt(11) } else { None },
        discards_merged: if n >= 15 { opt(12) } else { None },
        discard_sectors: if n >= 15 { opt(13) } else { None },
        discard_ms: if n >= 15 { opt(14) } else { None },
        flushes: if n >= 17 { opt(15) } else { None },
        flush_ms: if n >= 17 { opt(16) } else { None },
    })
}

/// The name of the partition on a line as kernels before 2.6.25 print it (7 fields:
/// `8 1 sda1 5024 46400 6662 13324`), None for any other line.
pub fn old_partition(line: &str) -> Option<&str> {
    // Seven fields exactly, the third a name and the others numbers; read without
    // collecting (every line of a recording is asked, most of them 20 fields long).
    let (mut name, mut n) = (None, 0);
    for (i, t) in line.split_ascii_whitespace().enumerate() {
        if i >= 7 || (i != 2 && number(t.as_bytes()).is_none()) {
            return None;
        }
        if i == 2 {
            name = Some(t);
        }
        n = i + 1;
    }
    name.filter(|_| n == 7)
}

/// The text of `<proc>/diskstats`; a line that is not UTF-8 is left out (blank), never
/// failing the whole sample.
pub fn read_text(root: &Root) -> Result<String> {
    let path = root.proc.join("diskstats");
    Ok(super::fs::read_text(&path)?.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    // Lines as real kernels print them: 4.14 (14 fields), 4.19 (18), 6.x (20).
    const K414: &str = "   8       0 sda 1146 0 55946 1324 287 171 6216 1916 0 1296 3240\n   8       1 sda1 1088 0 51362 1292 276 171 6216 1908 0 1268 3200\n";
    const K419: &str = " 259       0 nvme0n1 212458 3 14532810 61640 601294 274612 30297210 620316 0 416528 670732 3061 0 2376520 496\n";
    const K618: &str = " 254       0 vda 63893 9634 5887010 43718 23773 14929 3722216 14720 0 13292 59594 8787 75 784880 926 3809 229\n   7       0 loop0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n 253       0 zram0 12 0 96 0 4 0 32 1 0 4 1 0 0 0 0 0 0\n";

    #[test]
    fn numbers_every_length_and_the_overflow_edge() {
        assert_eq!(number(b"0"), Some(0));
        assert_eq!(
            number(b"9999999999999999999"),
            Some(9_999_999_999_999_999_999)
        );
        assert_eq!(number(b"18446744073709551615"), Some(u64::MAX));
        assert_eq!(number(b"18446744073709551616"), None);
        assert_eq!(number(b"00000000000000000001"), Some(1));
        for bad in [&b"12a"[..], b"-1", b"1/2", b":", b"1 "] {
            assert_eq!(number(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn fourteen_fields_have_no_discards_or_flushes() {
        let p = parse(K414);
        assert!(p.warnings.is_empty(), "{:?}", p.warnings);
        assert_eq!(p.lines.len(), 2);
        let l = &p.lines[1];
        assert_eq!((l.major, l.minor, l.name.as_str()), (8, 1, "sda1"));
        assert_eq!(l.reads, 1088);
        assert_eq!(l.read_sectors, 51362);
        assert_eq!(l.write_ms, 1908);
        assert_eq!(l.io_ms, 1268);
        assert_eq!(l.weighted_ms, 3200);
        assert_eq!(l.discards, None);
        assert_eq!(l.flush_ms, None);
    }

    #[test]
    fn eighteen_fields_have_discards() {
        let l = &parse(K419).lines[0];
        assert_eq!(l.name, "nvme0n1");
        assert_eq!(l.writes_merged, 274612);
        assert_eq!(l.discards, Some(3061));
        assert_eq!(l.discard_sectors, Some(2376520));
        assert_eq!(l.discard_ms, Some(496));
        assert_eq!(l.flushes, None);
    }

    #[test]
    fn twenty_fields_have_flushes() {
        let p = parse(K618);
        assert_eq!(p.lines.len(), 3);
        let l = &p.lines[0];
        assert_eq!(l.in_flight, 0);
        assert_eq!(l.discards_merged, Some(75));
        assert_eq!(l.flushes, Some(3809));
        assert_eq!(l.flush_ms, Some(229));
        assert_eq!(p.lines[2].name, "zram0");
        assert_eq!(p.lines[2].writes, 4);
    }

    #[test]
    fn future_fields_are_ignored() {
        let l = &parse("8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20\n").lines[0];
        assert_eq!(l.reads, 1);
        assert_eq!(l.weighted_ms, 11);
        assert_eq!(l.flush_ms, Some(17));
    }

    #[test]
    fn malformed_lines_warn_once_each_and_are_skipped() {
        let text = "8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n8 1 sda1 1 2 3 4\nx 2 sdb 1 2 3 4 5 6 7 8 9 10 11\n8 3 sdc 1 2 3 -4 5 6 7 8 9 10 11\n\n";
        let p = parse(text);
        assert_eq!(p.lines.len(), 1);
        assert_eq!(p.warnings.len(), 3, "{:?}", p.warnings);
        assert!(
            p.warnings[0].starts_with("diskstats line 2: 7 fields"),
            "{}",
            p.warnings[0]
        );
        assert!(p.warnings[1].contains("line 3") && p.warnings[1].contains("'x'"));
        assert!(p.warnings[2].contains("line 4") && p.warnings[2].contains("'-4'"));
    }

    #[test]
    fn pre_2_6_25_partition_lines_are_recognised_and_skipped() {
        // A 2.6.18 /proc/diskstats: the disk with 11 counters, its partitions with 4.
        let text = "   8    0 sda 1931 338 62558 14280 1047 2567 28954 64832 0 17596 79112\n   8    1 sda1 5024 46400 6662 13324\n";
        let p = parse(text);
        assert_eq!(p.lines.len(), 1);
        assert_eq!(p.lines[0].name, "sda");
        assert_eq!(
            p.warnings,
            [
                "diskstats line 2: 7 fields: partition sda1 as kernels before 2.6.25 print it (4 \
              counters, no times: no extended statistics), skipped"
            ]
        );
        assert_eq!(
            old_partition(" 8 1 sda1 5024 46400 6662 13324"),
            Some("sda1")
        );
        assert_eq!(old_partition("8 1 sda1 1 2 3"), None);
        assert_eq!(old_partition("8 1 sda1 1 2 3 x"), None);
        assert_eq!(old_partition(text.lines().next().unwrap()), None);
    }

    #[test]
    fn reads_the_file_under_the_proc_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("diskstats"), K618).unwrap();
        let root = Root {
            proc: dir.path().to_path_buf(),
            sys: dir.path().to_path_buf(),
        };
        assert_eq!(read_text(&root).unwrap(), K618);
        let missing = Root {
            proc: dir.path().join("nope"),
            ..root
        };
        let err = read_text(&missing).unwrap_err().to_string();
        assert!(err.contains("nope/diskstats"), "{err}");
    }
}
