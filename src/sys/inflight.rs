//! `/sys/block/<dev>/inflight` (and a partition's own file): the requests in flight per direction,
//! "reads writes", the read/write split that diskstats' field 9 lacks. Thin IO over a pure parser
//! (docs/design.md §3.2).
//! Imports only: sys/, error, units.

use super::device::{self, BlockDev};
use super::Root;

/// Requests in flight, by direction (the kernel's part_in_flight_rw: reads, then writes;
/// discards count as writes, flushes are not counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InFlight {
    pub reads: u64,
    pub writes: u64,
}

/// Pure: "       2        1\n" → 2 reads, 1 write; None unless exactly two numbers.
pub fn parse(text: &str) -> Option<InFlight> {
    let mut it = text.split_whitespace().map(str::parse::<u64>);
    let reads = it.next()?.ok()?;
    let writes = it.next()?.ok()?;
    it.next().is_none().then_some(InFlight { reads, writes })
}

/// Thin IO: the device's `inflight` file; None when the device or file is absent or garbled.
pub fn read(root: &Root, dev: &BlockDev) -> Option<InFlight> {
    let dir = device::sysfs_dir(root, dev)?;
    parse(&std::fs::read_to_string(dir.join("inflight")).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_kernel_format() {
        assert_eq!(
            parse("       2        1\n"),
            Some(InFlight {
                reads: 2,
                writes: 1
            })
        );
        assert_eq!(
            parse("0 0"),
            Some(InFlight {
                reads: 0,
                writes: 0
            })
        );
        assert_eq!(parse("1"), None);
        assert_eq!(parse("1 2 3"), None);
        assert_eq!(parse("a b"), None);
    }

    #[test]
    fn reads_through_the_fixture_root() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/exporter/root");
        let root = Root {
            proc: dir.join("proc"),
            sys: dir.join("sys"),
        };
        let dev = BlockDev {
            major: 259,
            minor: 0,
            name: "nvme0n1".into(),
        };
        assert_eq!(
            read(&root, &dev),
            Some(InFlight {
                reads: 2,
                writes: 1
            })
        );
        let part = BlockDev {
            major: 259,
            minor: 2,
            name: "nvme0n1p2".into(),
        };
        assert_eq!(
            read(&root, &part),
            Some(InFlight {
                reads: 0,
                writes: 0
            })
        );
    }
}
