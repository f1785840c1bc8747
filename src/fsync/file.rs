//! The test files of one run, shared by the single-committer cases (runner.rs) and the group-commit
//! levels (group.rs): their names, the run context, laying out stamped blocks, the corruption test
//! hook and the read-back verification. Imports block.rs, io.rs and the spec and device-watch
//! types, never runner.rs or group.rs, so runner.rs → group.rs → file.rs runs one way.
//! Must not import: fsync/runner.rs, fsync/group.rs, cli/, config/, cmd/, ui/, report/, exporter/,
//! import/, load/.

use super::block;
use super::device::Watch;
use super::io::{AlignedBuf, TestFile};
use super::{FsyncSpec, SyncCall};
use crate::error::Result;
use std::path::{Path, PathBuf};

/// Names test files `.iosat-fsync.<pid>.<n>.<random>` in the target directory (created
/// O_EXCL|O_NOFOLLOW by `TestFile::create`, so a name put there by someone else is never
/// used). Named, not O_TMPFILE: an fsync of an unlinked inode is not what a database pays.
/// Created first in a run, it removes what killed iosat runs left there, saying so.
pub struct Namer {
    dir: PathBuf,
    pid: u32,
    n: u32,
}

impl Namer {
    pub fn new(dir: &Path) -> Namer {
        let removed = crate::sys::fs::remove_dead_leftovers(dir, LEFTOVER_PREFIX);
        if !removed.is_empty() {
            crate::error::warn(format_args!(
                "removed {} test file(s) that killed iosat runs left in {}: {}",
                removed.len(),
                dir.display(),
                removed.join(", ")
            ));
        }
        Namer {
            dir: dir.to_path_buf(),
            pid: std::process::id(),
            n: 0,
        }
    }
    pub fn next_path(&mut self) -> PathBuf {
        self.n += 1;
        self.dir.join(format!(
            "{LEFTOVER_PREFIX}{}.{}.{}",
            self.pid,
            self.n,
            crate::sys::fs::random_token()
        ))
    }
}

/// The start of every fsync test file's name.
pub const LEFTOVER_PREFIX: &str = ".iosat-fsync.";

/// What the blocks of a file must say when read back.
#[derive(Debug, Clone, Copy)]
pub enum Expect {
    /// `blocks` slots rewritten round-robin by sequences 0..total: slot i holds the last
    /// sequence ≡ i (mod blocks).
    RoundRobin { blocks: u64, total: u64 },
    /// Like RoundRobin but written by concurrent committers: a slot holds some sequence
    /// ≡ i (mod blocks) below `total` (which one depends on who finished last).
    Concurrent { blocks: u64, total: u64 },
    /// Blocks 0..blocks appended in order: block i holds sequence i.
    Appended { blocks: u64 },
    /// A zero-filled file (a WAL segment, a redo log, a tablespace) whose sequences 0..total
    /// went to slot `(seq × stride) mod blocks` (`stride` odd, `blocks` a power of two, so
    /// every slot has its turn; `stride_inv` its inverse mod `blocks`): a slot holds the last
    /// sequence sent there, or zeros when none was.
    Scattered {
        blocks: u64,
        total: u64,
        stride_inv: u64,
    },
}

impl Expect {
    /// The blocks the file must have.
    fn blocks(self) -> u64 {
        match self {
            Expect::RoundRobin { blocks, .. }
            | Expect::Concurrent { blocks, .. }
            | Expect::Appended { blocks }
            | Expect::Scattered { blocks, .. } => blocks,
        }
    }

    /// For [`Expect::Scattered`]: the sequence slot `slot` must hold, None for zeros.
    fn scattered_seq(self, slot: u64) -> Option<u64> {
        let Expect::Scattered {
            blocks,
            total,
            stride_inv,
        } = self
        else {
            return None;
        };
        let first = (slot * stride_inv) % blocks;
        (first < total).then(|| first + (total - 1 - first) / blocks * blocks)
    }
}

/// The inverse of odd `a` modulo the power of two `m` (Newton's iteration on 2-adic inverses).
pub fn inverse_mod_pow2(a: u64, m: u64) -> u64 {
    debug_assert!(a % 2 == 1 && m.is_power_of_two());
    let mut x = a; // correct to 3 bits for odd a
    for _ in 0..6 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
    }
    x & (m - 1)
}

/// Lay out `blocks` stamped blocks (sequences 0..blocks) and make them durable.
pub fn preallocate(f: &TestFile, size: u32, blocks: u64, run_id: u64) -> Result<()> {
    let mut buf = AlignedBuf::new(size as usize);
    block::fill_payload(buf.as_mut_slice(), run_id);
    for seq in 0..blocks {
        let off = seq * size as u64;
        block::stamp(buf.as_mut_slice(), run_id, off, seq);
        f.base.write_all_at(buf.as_slice(), off)?;
    }
    f.base.sync(SyncCall::Fsync)
}

/// Lay out `bytes` of zeros and make them durable, as PostgreSQL creates a WAL segment
/// (wal_init_zero) and InnoDB a redo log or tablespace: every block allocated and written
/// before the first commit, so the commits rewrite in place.
pub fn zero_fill(f: &TestFile, bytes: u64) -> Result<()> {
    let chunk = AlignedBuf::new((1usize << 20).min(bytes as usize));
    let mut off = 0u64;
    while off < bytes {
        let n = (chunk.as_slice().len() as u64).min(bytes - off) as usize;
        f.base.write_all_at(&chunk.as_slice()[..n], off)?;
        off += n as u64;
    }
    f.base.sync(SyncCall::Fsync)
}

/// Test hook: flip one payload byte of block `k` (mod the blocks present) in place.
pub fn corrupt(f: &TestFile, size: u32, k: u64) -> Result<()> {
    let blocks = f.base.size_bytes()? / size as u64;
    if blocks == 0 {
        return Ok(());
    }
    let at = (k % blocks) * size as u64 + block::HEADER_BYTES as u64;
    let mut b = [0u8; 1];
    f.base.read_exact_at(&mut b, at)?;
    b[0] ^= 0x5a;
    f.base.write_all_at(&b, at)?;
    f.base.sync(SyncCall::Fsync)
}

/// Read the whole file back (after dropping its cached pages) and check every block.
/// Err(reason) names the first bad block; an I/O error while reading is returned as such.
pub fn verify(f: &TestFile, size: u32, run_id: u64, expect: Expect) -> Result<Result<(), String>> {
    let blocks = expect.blocks();
    let len = f.base.size_bytes()?;
    if len != blocks * size as u64 {
        return Ok(Err(format!(
            "file is {len} bytes, expected {} ({blocks} blocks of {size})",
            blocks * size as u64
        )));
    }
    f.base.sync(SyncCall::Fsync)?;
    f.base.drop_cache();
    let per_chunk = ((1u64 << 20) / size as u64).max(1);
    let mut chunk = vec![0u8; (per_chunk * size as u64) as usize];
    let mut i = 0u64;
    while i < blocks {
        let n = per_chunk.min(blocks - i);
        let bytes = (n * size as u64) as usize;
        if !f.base.read_exact_at(&mut chunk[..bytes], i * size as u64)? {
            return Ok(Err(format!("file ends before block {i}")));
        }
        for j in 0..n {
            let slot = i + j;
            let off = slot * size as u64;
            let b = &chunk[(j * size as u64) as usize..((j + 1) * size as u64) as usize];
            let want_zero =
                matches!(expect, Expect::Scattered { .. }) && expect.scattered_seq(slot).is_none();
            if want_zero {
                if b.iter().any(|&x| x != 0) {
                    return Ok(Err(format!(
                        "block at offset {off} was never written but is not the zeros laid out"
                    )));
                }
                continue;
            }
            let seq = match block::check(b, run_id, off) {
                Ok(c) => c.seq,
                Err(e) => return Ok(Err(e)),
            };
            let ok = match expect {
                Expect::RoundRobin { blocks, total } => {
                    seq == total - 1 - ((total - 1 - slot) % blocks)
                }
                Expect::Concurrent { blocks, total } => seq % blocks == slot && seq < total,
                Expect::Appended { .. } => seq == slot,
                Expect::Scattered { .. } => Some(seq) == expect.scattered_seq(slot),
            };
            if !ok {
                return Ok(Err(format!(
                    "block at offset {off} holds sequence {seq}, not the last one written there (lost or reordered write)"
                )));
            }
        }
        i += n;
    }
    Ok(Ok(()))
}

/// What a run's cases and levels share: the spec, the device watch, the run id stamped in every
/// block, and the size cap of an append file.
pub struct Ctx<'a> {
    pub spec: &'a FsyncSpec,
    pub watch: &'a Watch,
    pub run_id: u64,
    pub append_cap_bytes: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verify_finds_a_stale_block_in_a_real_file() {
        let dir = tempfile::tempdir().unwrap();
        let f = TestFile::create(&dir.path().join("t")).unwrap();
        let (size, run_id) = (512u32, 99u64);
        preallocate(&f, size, 4, run_id).unwrap();
        let mut buf = AlignedBuf::new(size as usize);
        block::fill_payload(buf.as_mut_slice(), run_id);
        for seq in 4..10u64 {
            let off = (seq % 4) * size as u64;
            block::stamp(buf.as_mut_slice(), run_id, off, seq);
            f.base.write_all_at(buf.as_slice(), off).unwrap();
        }
        let expect = Expect::RoundRobin {
            blocks: 4,
            total: 10,
        };
        assert_eq!(verify(&f, size, run_id, expect).unwrap(), Ok(()));
        // Slot 1 should hold sequence 9; put back the older 5 (a lost write).
        block::stamp(buf.as_mut_slice(), run_id, 512, 5);
        f.base.write_all_at(buf.as_slice(), 512).unwrap();
        let e = verify(&f, size, run_id, expect).unwrap().unwrap_err();
        assert!(e.contains("offset 512 holds sequence 5"), "{e}");
        // The concurrent expectation accepts any sequence of the right slot.
        let conc = Expect::Concurrent {
            blocks: 4,
            total: 10,
        };
        assert_eq!(verify(&f, size, run_id, conc).unwrap(), Ok(()));
        // Appended: wrong length is reported before anything else.
        let e = verify(&f, size, run_id, Expect::Appended { blocks: 5 })
            .unwrap()
            .unwrap_err();
        assert!(e.contains("expected 2560"), "{e}");
        drop(f);
        assert!(
            std::fs::read_dir(dir.path()).unwrap().next().is_none(),
            "file removed"
        );
    }

    #[test]
    fn scattered_writes_into_zeros_verify_and_a_lost_one_is_caught() {
        let dir = tempfile::tempdir().unwrap();
        let f = TestFile::create(&dir.path().join("t")).unwrap();
        let (size, run_id, blocks, stride) = (512u32, 7u64, 8u64, 5u64);
        zero_fill(&f, blocks * size as u64).unwrap();
        let inv = inverse_mod_pow2(stride, blocks);
        assert_eq!(stride * inv % blocks, 1);
        assert_eq!(inverse_mod_pow2(389, 1024) * 389 % 1024, 1);
        let mut buf = AlignedBuf::new(size as usize);
        block::fill_payload(buf.as_mut_slice(), run_id);
        let write = |seq: u64, buf: &mut AlignedBuf| {
            let off = (seq * stride % blocks) * size as u64;
            block::stamp(buf.as_mut_slice(), run_id, off, seq);
            f.base.write_all_at(buf.as_slice(), off).unwrap();
        };
        for seq in 0..5 {
            write(seq, &mut buf);
        }
        let expect = |total| Expect::Scattered {
            blocks,
            total,
            stride_inv: inv,
        };
        // Three slots still zeros.
        assert_eq!(verify(&f, size, run_id, expect(5)).unwrap(), Ok(()));
        assert!(verify(&f, size, run_id, expect(6)).unwrap().is_err());
        for seq in 5..13 {
            write(seq, &mut buf);
        }
        assert_eq!(verify(&f, size, run_id, expect(13)).unwrap(), Ok(()));
        // Put back an older block where seq 12 went (a lost write).
        write(4, &mut buf);
        let e = verify(&f, size, run_id, expect(13)).unwrap().unwrap_err();
        assert!(e.contains("holds sequence 4"), "{e}");
    }
}
