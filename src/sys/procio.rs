//! Per-process storage I/O: `/proc/<pid>/io` (read_bytes, write_bytes: what the process made the
//! block layer transfer, page cache misses and writeback it caused) and `comm`. A pure parser and a
//! thin reader; another user's processes need root (EACCES is counted, not an error).
//! Imports only: sys/, error, units.

use super::Root;

/// One process's cumulative counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcIo {
    pub pid: u32,
    pub comm: String,
    pub read_bytes: u64,
    pub write_bytes: u64,
}

/// Every process that could be read, and how many could not (permission).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProcIoSample {
    pub procs: Vec<ProcIo>,
    pub denied: usize,
}

/// `read_bytes` and `write_bytes` of a `/proc/<pid>/io` text.
pub fn parse_io(text: &str) -> Option<(u64, u64)> {
    let field = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
    };
    Some((field("read_bytes:")?, field("write_bytes:")?))
}

/// Read every `<proc>/<pid>/io`. Processes that exit meanwhile are left out.
pub fn read(root: &Root) -> ProcIoSample {
    let mut s = ProcIoSample::default();
    let Ok(dir) = std::fs::read_dir(&root.proc) else {
        return s;
    };
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let text = match std::fs::read_to_string(e.path().join("io")) {
            Ok(t) => t,
            Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => {
                s.denied += 1;
                continue;
            }
            Err(_) => continue,
        };
        let Some((read_bytes, write_bytes)) = parse_io(&text) else {
            continue;
        };
        let comm = std::fs::read_to_string(e.path().join("comm"))
            .map(|c| c.trim_end().to_string())
            .unwrap_or_default();
        s.procs.push(ProcIo {
            pid,
            comm,
            read_bytes,
            write_bytes,
        });
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_io_and_reads_a_fixture_root() {
        let io = "rchar: 100\nwchar: 200\nsyscr: 3\nsyscw: 4\nread_bytes: 4096\n\
                  write_bytes: 8192\ncancelled_write_bytes: 0\n";
        assert_eq!(parse_io(io), Some((4096, 8192)));
        assert_eq!(parse_io("rchar: 1\n"), None);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("42");
        std::fs::create_dir(&p).unwrap();
        std::fs::write(p.join("io"), io).unwrap();
        std::fs::write(p.join("comm"), "postgres\n").unwrap();
        std::fs::create_dir(dir.path().join("self")).unwrap();
        let root = Root {
            proc: dir.path().to_path_buf(),
            sys: dir.path().to_path_buf(),
        };
        let s = read(&root);
        assert_eq!(s.denied, 0);
        assert_eq!(
            s.procs,
            [ProcIo {
                pid: 42,
                comm: "postgres".into(),
                read_bytes: 4096,
                write_bytes: 8192
            }]
        );
    }
}
