//! What a block device holds before iosat may write to it (docs/design.md §5): the system's own
//! probers (`blkid -p` and `wipefs -n`, which know libblkid's hundreds of signatures at their real
//! offsets, the end of the device included) when installed, iosat's own table of common signatures
//! (start and end of the device), and whether the areas where signatures live (start, end, the
//! usual superblock offsets) are blank. Reports findings; the policy (refuse unless confirmed)
//! stays with load/target.rs.
//! Imports only: sys/, error, units.

use super::file::AlignedBuf;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::process::{Command, Stdio};

/// One thing found on a device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The name a user confirms it by (`--overwrite-found KEY`): libblkid's TYPE (`ext4`,
    /// `exfat`, `linux_raid_member`, `dos`), or `data` for a non-blank area with no signature.
    pub key: String,
    /// What was found and where, for the refusal message.
    pub what: String,
}

/// Bytes read at the start and at the end of the device (ZFS keeps two 256 KiB labels at each
/// end; md 0.90/1.0 and the backup GPT sit in the last 128 KiB; btrfs, ISO9660, squashfs,
/// exFAT and every common filesystem in the first 128 KiB).
pub const EDGE_BYTES: usize = 1 << 20;
/// Further superblock copies probed when the device is large enough (btrfs's first mirror).
pub const EXTRA_OFFSETS: [u64; 1] = [64 << 20];

/// Everything that makes `file` (an open block device of `size` bytes) not blank. Empty when
/// iosat may write without asking.
pub fn findings(file: &File, size: u64) -> std::io::Result<Vec<Finding>> {
    let node = format!("/proc/{}/fd/{}", std::process::id(), file.as_raw_fd());
    let mut found = external(&node);
    let areas = read_areas(file, size)?;
    let head = &areas[0].1;
    let tail = areas.last().filter(|a| a.0 > 0);
    let mut own: Vec<(&str, &str, u64)> = signature_at(head).into_iter().collect();
    if let Some((off, t)) = tail {
        own.extend(end_signature(t, *off, size));
    }
    for (key, name, at) in own {
        // Said already by a system prober, unless iosat's name adds something (ext2/3/4).
        if key == name && found.iter().any(|f| f.key == key) {
            continue;
        }
        found.push(Finding {
            key: key.to_string(),
            what: format!("{name} signature at byte {at}"),
        });
    }
    if found.is_empty() {
        if let Some(at) = areas
            .iter()
            .find_map(|(off, b)| b.iter().position(|&x| x != 0).map(|p| off + p as u64))
        {
            found.push(Finding {
                key: "data".into(),
                what: format!("data (not zeros) at byte {at}, where signatures live"),
            });
        }
    }
    Ok(found)
}

/// The probed areas: (offset, bytes) for the start, the extra superblock offsets inside the
/// device, and the end, read with one pread each through an aligned buffer (O_DIRECT-safe).
fn read_areas(file: &File, size: u64) -> std::io::Result<Vec<(u64, Vec<u8>)>> {
    let mut offsets = vec![0u64];
    offsets.extend(EXTRA_OFFSETS.iter().filter(|&&o| o + 4096 <= size));
    if size > EDGE_BYTES as u64 {
        offsets.push((size - EDGE_BYTES as u64) & !4095);
    }
    let mut buf = AlignedBuf::new(EDGE_BYTES);
    let mut out = Vec::new();
    for off in offsets {
        let mut n = 0;
        while n < EDGE_BYTES {
            let r = file.read_at(&mut buf.as_mut_slice()[n..], off + n as u64)?;
            if r == 0 {
                break;
            }
            n += r;
            // O_DIRECT needs aligned lengths: a short read is the end of the device.
            if n % 4096 != 0 {
                break;
            }
        }
        out.push((off, buf.as_slice()[..n].to_vec()));
    }
    Ok(out)
}

/// `blkid -p` and `wipefs -n` on `node`, when installed (a missing tool adds nothing; the
/// blank check still stands).
fn external(node: &str) -> Vec<Finding> {
    let run = |prog: &str, args: &[&str]| {
        Command::new(prog)
            .args(args)
            .arg(node)
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .ok()
    };
    let mut found = Vec::new();
    if let Some(o) = run("wipefs", &["-n", "-i", "-p", "-O", "TYPE,OFFSET"]) {
        if o.status.success() {
            found.extend(parse_wipefs(&String::from_utf8_lossy(&o.stdout)));
        }
    }
    if let Some(o) = run("blkid", &["-p", "-o", "export"]) {
        let text = String::from_utf8_lossy(&o.stdout);
        let mut b = parse_blkid(&text);
        // blkid exits 8 when probers disagree ("ambivalent result"): something is there.
        if o.status.code() == Some(8) && b.is_empty() {
            b.push(Finding {
                key: "ambivalent".into(),
                what: "several signatures that blkid calls ambivalent".into(),
            });
        }
        b.retain(|f| !found.iter().any(|g| g.key == f.key));
        found.extend(b);
    }
    found
}

/// `wipefs -n -i -p -O TYPE,OFFSET` output: one `TYPE,0xOFFSET` line per signature. Pure.
pub fn parse_wipefs(text: &str) -> Vec<Finding> {
    text.lines()
        .filter_map(|l| {
            let (t, off) = l.trim().split_once(',')?;
            let off = u64::from_str_radix(off.trim().trim_start_matches("0x"), 16).ok()?;
            (!t.is_empty()).then(|| Finding {
                key: t.to_string(),
                what: format!("{t} signature at byte {off} (wipefs)"),
            })
        })
        .collect()
}

/// `blkid -p -o export` output: the TYPE and PTTYPE values (KEY=value lines). Pure.
pub fn parse_blkid(text: &str) -> Vec<Finding> {
    let usage = text
        .lines()
        .find_map(|l| l.strip_prefix("USAGE="))
        .unwrap_or("signature");
    text.lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            let what = match k {
                "TYPE" => format!("{v} ({usage}, blkid)"),
                "PTTYPE" => format!("{v} partition table (blkid)"),
                _ => return None,
            };
            (!v.is_empty()).then(|| Finding {
                key: v.to_string(),
                what,
            })
        })
        .collect()
}

/// Bytes read from the start of a device by [`signature`].
pub const SIGNATURE_SCAN_BYTES: usize = 128 << 10;

/// The first filesystem, volume or partition-table signature found in the first bytes of a
/// device, after the magic numbers blkid uses: its description. Pure.
pub fn signature(head: &[u8]) -> Option<&'static str> {
    signature_at(head).map(|(_, name, _)| name)
}

/// [`signature`] with libblkid's TYPE name and the byte offset of the magic.
fn signature_at(head: &[u8]) -> Option<(&'static str, &'static str, u64)> {
    let at = |off: usize, magic: &[u8]| head.get(off..off + magic.len()) == Some(magic);
    let checks: [(usize, &[u8], &str, &str); 17] = [
        (1080, &[0x53, 0xef], "ext4", "ext2/3/4"),
        (0, b"XFSB", "xfs", "xfs"),
        (65600, b"_BHRfS_M", "btrfs", "btrfs"),
        (0, b"LUKS\xba\xbe", "crypto_LUKS", "LUKS"),
        (512, b"LABELONE", "LVM2_member", "LVM2"),
        (4086, b"SWAPSPACE2", "swap", "swap"),
        (4086, b"SWAP-SPACE", "swap", "swap"),
        (512, b"EFI PART", "gpt", "GPT partition table"),
        (3, b"NTFS    ", "ntfs", "ntfs"),
        (3, b"EXFAT   ", "exfat", "exfat"),
        (82, b"FAT32   ", "vfat", "vfat"),
        (54, b"FAT1", "vfat", "vfat"),
        (4096, b"\x10\x20\xf5\xf2", "f2fs", "f2fs"),
        (0, b"hsqs", "squashfs", "squashfs"),
        (0, b"sqsh", "squashfs", "squashfs"),
        (32769, b"CD001", "iso9660", "ISO9660"),
        (65536 + 52, b"ReIsEr", "reiserfs", "reiserfs"),
    ];
    for (off, magic, key, name) in checks {
        if at(off, magic) {
            return Some((key, name, off as u64));
        }
    }
    // An MBR: boot signature plus at least one non-empty partition entry.
    if at(510, &[0x55, 0xaa]) && (0..4).any(|i| head.get(446 + 16 * i + 4).is_some_and(|&t| t != 0))
    {
        return Some(("dos", "MBR partition table", 510));
    }
    // md RAID superblock 1.1/1.2 (at 0 or 4 KiB).
    for off in [0, 4096] {
        if at(off, &MD_MAGIC) {
            return Some(("linux_raid_member", "md RAID", off as u64));
        }
    }
    // ZFS: an uberblock (magic 0x00bab10c, either byte order) in the first label's array at 128 KiB.
    if (0..128).any(|i| {
        let o = (128 << 10) + i * 1024;
        at(o, &ZFS_MAGIC_LE) || at(o, &ZFS_MAGIC_BE)
    }) {
        return Some(("zfs_member", "ZFS", 128 << 10));
    }
    None
}

const MD_MAGIC: [u8; 4] = [0xfc, 0x4e, 0x2b, 0xa9];
const ZFS_MAGIC_LE: [u8; 8] = [0x0c, 0xb1, 0xba, 0, 0, 0, 0, 0];
const ZFS_MAGIC_BE: [u8; 8] = [0, 0, 0, 0, 0, 0xba, 0xb1, 0x0c];

/// Signatures kept at the end of a device of `size` bytes, looked for in `tail` (the bytes
/// from `tail_off` to the end): md 0.90 (64 KiB-aligned, 64 KiB from the end), md 1.0 (8 KiB
/// from the end, 4 KiB-aligned) and the backup GPT header (last 512- or 4096-byte sector). Pure.
pub fn end_signature(
    tail: &[u8],
    tail_off: u64,
    size: u64,
) -> Option<(&'static str, &'static str, u64)> {
    let at = |abs: u64, magic: &[u8]| {
        abs.checked_sub(tail_off)
            .and_then(|o| tail.get(o as usize..o as usize + magic.len()))
            == Some(magic)
    };
    let md090 = (size & !0xffff).checked_sub(0x10000);
    let md10 = size.checked_sub(8192).map(|o| o & !4095);
    for off in [md090, md10].into_iter().flatten() {
        if at(off, &MD_MAGIC) {
            return Some(("linux_raid_member", "md RAID (superblock at the end)", off));
        }
    }
    for sector in [512, 4096] {
        if let Some(off) = size.checked_sub(sector) {
            if at(off, b"EFI PART") {
                return Some(("gpt", "backup GPT partition table", off));
            }
        }
    }
    None
}

/// Whether every finding is named in `confirmed` (the comma-separated `--overwrite-found`
/// value, case-insensitive).
pub fn all_confirmed(found: &[Finding], confirmed: Option<&str>) -> bool {
    let names: Vec<String> = confirmed
        .unwrap_or("")
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    found
        .iter()
        .all(|f| names.contains(&f.key.to_ascii_lowercase()))
}

/// The distinct keys of `found`, comma-separated: the value `--overwrite-found` needs.
pub fn keys(found: &[Finding]) -> String {
    let mut k: Vec<&str> = Vec::new();
    for f in found {
        if !k.contains(&f.key.as_str()) {
            k.push(&f.key);
        }
    }
    k.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_are_found() {
        let mut b = vec![0u8; SIGNATURE_SCAN_BYTES];
        assert_eq!(signature(&b), None);
        b[1080] = 0x53;
        b[1081] = 0xef;
        assert_eq!(signature(&b), Some("ext2/3/4"));
        let mut b = vec![0u8; SIGNATURE_SCAN_BYTES];
        b[4086..4096].copy_from_slice(b"SWAPSPACE2");
        assert_eq!(signature(&b), Some("swap"));
        let mut b = vec![0u8; SIGNATURE_SCAN_BYTES];
        b[510] = 0x55;
        b[511] = 0xaa;
        assert_eq!(
            signature(&b),
            None,
            "boot signature alone with no partitions"
        );
        b[446 + 4] = 0x83;
        assert_eq!(signature(&b), Some("MBR partition table"));
        // A short read (tiny device) must not panic.
        assert_eq!(signature(&[0u8; 10]), None);
    }

    #[test]
    fn the_signatures_the_audit_missed_are_found() {
        let with = |off: usize, magic: &[u8]| {
            let mut b = vec![0u8; SIGNATURE_SCAN_BYTES + (128 << 10)];
            b[off..off + magic.len()].copy_from_slice(magic);
            signature_at(&b).map(|s| s.0)
        };
        assert_eq!(with(3, b"EXFAT   "), Some("exfat"));
        assert_eq!(with(0, b"hsqs"), Some("squashfs"));
        assert_eq!(with(32769, b"CD001"), Some("iso9660"));
        assert_eq!(
            with((128 << 10) + 3 * 1024, &ZFS_MAGIC_LE),
            Some("zfs_member")
        );
        // md 0.90 and 1.0 keep their superblock at the end.
        let size = 64u64 << 20;
        let tail_off = size - EDGE_BYTES as u64;
        let mut t = vec![0u8; EDGE_BYTES];
        let o = ((size & !0xffff) - 0x10000 - tail_off) as usize;
        t[o..o + 4].copy_from_slice(&MD_MAGIC);
        assert_eq!(
            end_signature(&t, tail_off, size).map(|s| s.0),
            Some("linux_raid_member")
        );
        let mut t = vec![0u8; EDGE_BYTES];
        let o = ((size - 8192) - tail_off) as usize;
        t[o..o + 4].copy_from_slice(&MD_MAGIC);
        assert!(end_signature(&t, tail_off, size).is_some());
        let mut t = vec![0u8; EDGE_BYTES];
        let o = (size - 512 - tail_off) as usize;
        t[o..o + 8].copy_from_slice(b"EFI PART");
        assert_eq!(end_signature(&t, tail_off, size).map(|s| s.0), Some("gpt"));
        assert_eq!(end_signature(&[0u8; 10], 0, 5), None);
    }

    #[test]
    fn probers_output_is_parsed() {
        let w = parse_wipefs("squashfs3,0x0\nlinux_raid_member,0x3ff0000\n\n");
        assert_eq!(w.len(), 2);
        assert_eq!(w[1].key, "linux_raid_member");
        assert!(w[1].what.contains("67043328"), "{}", w[1].what);
        let b = parse_blkid("DEVNAME=/dev/loop0\nTYPE=exfat\nUSAGE=filesystem\nPTTYPE=dos\n");
        assert_eq!(
            b.iter().map(|f| f.key.as_str()).collect::<Vec<_>>(),
            ["exfat", "dos"]
        );
        assert!(b[0].what.contains("filesystem"));
        assert!(parse_blkid("").is_empty());
    }

    #[test]
    fn confirmation_must_name_everything_found() {
        let f = |k: &str| Finding {
            key: k.into(),
            what: String::new(),
        };
        let found = [f("exfat"), f("dos"), f("exfat")];
        assert_eq!(keys(&found), "exfat,dos");
        assert!(!all_confirmed(&found, None));
        assert!(!all_confirmed(&found, Some("exfat")));
        assert!(all_confirmed(&found, Some("DOS, exfat")));
        assert!(all_confirmed(&[], None));
    }
}
