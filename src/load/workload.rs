//! The pieces every real engine's hot loop shares: the offset and direction generator, the
//! measuring window, and I/O buffers of incompressible data. The clock (`now_ns`) and the aligned
//! buffer are sys/'s, re-exported here for the engines. No allocation after construction.
//! Must not import: cli/, config/, cmd/, ui/, report/, exporter/, import/, fsync/.

use super::{LevelSpec, Pattern};
pub use crate::sys::clock::monotonic_ns as now_ns;
pub use crate::sys::file::AlignedBuf;

/// xorshift64* — tiny, fast, and good enough to spread offsets evenly; seeded per worker so a
/// level is repeatable.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // splitmix64 of the seed, so seeds 0, 1, 2 give unrelated streams (and never 0).
        let mut z = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Rng(if z == 0 { 0x2545_F491_4F6C_DD1D } else { z })
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in 0..n (multiply-shift, no division in the hot path).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
}

/// One request to issue: where, and whether it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io {
    pub offset: u64,
    pub is_read: bool,
}

/// Generates the offsets and directions of one worker. Random patterns draw block-aligned
/// offsets uniformly over the whole target; sequential patterns give each worker its own slice
/// of the target and walk it in order, wrapping at the end (as sysbench's seqrd per thread).
#[derive(Debug, Clone)]
pub struct IoGen {
    rng: Rng,
    block_size: u64,
    blocks: u64,
    random: bool,
    /// Reads in percent (100 = all reads, 0 = all writes).
    read_pct: u64,
    seq_first: u64,
    seq_end: u64,
    seq_next: u64,
}

impl IoGen {
    /// `worker` of `workers` on a target of `size_bytes`; `size_bytes >= block_size` is checked
    /// by the caller.
    pub fn new(spec: &LevelSpec, size_bytes: u64, worker: u32, workers: u32) -> IoGen {
        let bs = spec.block_size.max(1);
        let blocks = (size_bytes / bs).max(1);
        let (random, read_pct) = match spec.pattern {
            Pattern::RandRead => (true, 100),
            Pattern::RandWrite => (true, 0),
            Pattern::Read => (false, 100),
            Pattern::Write => (false, 0),
            Pattern::RandRw { read_pct } => (true, u64::from(read_pct.min(100))),
        };
        let workers = u64::from(workers.max(1));
        let w = u64::from(worker).min(workers - 1);
        let mut seq_first = blocks * w / workers;
        let mut seq_end = blocks * (w + 1) / workers;
        if seq_end <= seq_first {
            // More workers than blocks: share the whole target.
            seq_first = 0;
            seq_end = blocks;
        }
        IoGen {
            rng: Rng::new(spec.seed ^ (u64::from(worker) << 32) ^ u64::from(worker)),
            block_size: bs,
            blocks,
            random,
            read_pct,
            seq_first,
            seq_end,
            seq_next: seq_first,
        }
    }

    #[inline]
    pub fn next_io(&mut self) -> Io {
        let block = if self.random {
            self.rng.below(self.blocks)
        } else {
            let b = self.seq_next;
            self.seq_next += 1;
            if self.seq_next >= self.seq_end {
                self.seq_next = self.seq_first;
            }
            b
        };
        let is_read = match self.read_pct {
            100 => true,
            0 => false,
            pct => self.rng.below(100) < pct,
        };
        Io {
            offset: block * self.block_size,
            is_read,
        }
    }
}

/// Overwrite `bytes` with the stream of `rng` (what writes put on the disk: real data that
/// neither compresses nor deduplicates).
pub fn fill_random(bytes: &mut [u8], rng: &mut Rng) {
    for chunk in bytes.chunks_mut(8) {
        let v = rng.next_u64().to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

/// An O_DIRECT-aligned buffer of `len` pseudo-random bytes from `seed`.
pub fn random_buf(len: usize, seed: u64) -> AlignedBuf {
    let mut b = AlignedBuf::new(len);
    fill_random(b.as_mut_slice(), &mut Rng::new(seed));
    b
}

/// The measuring window of a level, in absolute CLOCK_MONOTONIC nanoseconds: the I/Os that
/// complete inside `[measure_from_ns, end_ns)` are counted, whenever they were submitted (as
/// the kernel's diskstats count them); none is submitted after `end_ns`.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    pub measure_from_ns: u64,
    pub end_ns: u64,
}

impl Window {
    pub fn starting_now(spec: &LevelSpec) -> Window {
        let t = now_ns();
        Window {
            measure_from_ns: t + spec.ramp_ns,
            end_ns: t + spec.ramp_ns + spec.duration_ns,
        }
    }
}

/// The split of a level's concurrency over worker threads for queue-based engines: at most
/// `max_threads` threads, each with the same depth, threads × depth == concurrency exactly.
pub fn split_concurrency(concurrency: u32, max_threads: u32) -> (u32, u32) {
    let n = concurrency.max(1);
    let mut t = max_threads.clamp(1, n);
    while n % t != 0 {
        t -= 1;
    }
    (t, n / t)
}

/// The measured interval of one worker: the whole window, or up to its last counted
/// completion when a stop signal cut the level short (0 when it counted none). Counting by
/// completion time over the whole window gives the rate the kernel sees over the same
/// interval; counting the I/Os submitted in the window up to the last one's completion
/// understated it by the last requests' latency (7 % at 256 in flight under a throttle).
pub fn measured_ns(window: &Window, counted: u64, last_ns: u64, interrupted: bool) -> u64 {
    if counted == 0 {
        0
    } else if interrupted {
        last_ns.saturating_sub(window.measure_from_ns)
    } else {
        window.end_ns - window.measure_from_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pattern: Pattern) -> LevelSpec {
        LevelSpec {
            threads: 1,
            queue_depth: 1,
            pattern,
            block_size: 4096,
            ramp_ns: 0,
            duration_ns: 1,
            seed: 7,
        }
    }

    #[test]
    fn random_offsets_are_aligned_and_inside() {
        let size = 4096 * 100 + 123;
        let mut g = IoGen::new(&spec(Pattern::RandRead), size, 0, 1);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..10_000 {
            let io = g.next_io();
            assert!(io.is_read);
            assert_eq!(io.offset % 4096, 0);
            assert!(io.offset + 4096 <= size);
            seen.insert(io.offset);
        }
        assert_eq!(seen.len(), 100, "uniform draws should touch every block");
    }

    #[test]
    fn sequential_workers_own_disjoint_slices_and_wrap() {
        let size = 4096 * 10;
        let s = spec(Pattern::Write);
        let mut a = IoGen::new(&s, size, 0, 2);
        let mut b = IoGen::new(&s, size, 1, 2);
        let a_offs: Vec<u64> = (0..6).map(|_| a.next_io().offset / 4096).collect();
        let b_offs: Vec<u64> = (0..6).map(|_| b.next_io().offset / 4096).collect();
        assert_eq!(a_offs, [0, 1, 2, 3, 4, 0]);
        assert_eq!(b_offs, [5, 6, 7, 8, 9, 5]);
        assert!(!a.next_io().is_read);
    }

    #[test]
    fn mixed_pattern_honours_read_pct() {
        let mut g = IoGen::new(&spec(Pattern::RandRw { read_pct: 70 }), 1 << 20, 3, 4);
        let reads = (0..100_000).filter(|_| g.next_io().is_read).count();
        assert!((68_000..72_000).contains(&reads), "{reads}");
    }

    #[test]
    fn concurrency_split_is_exact() {
        assert_eq!(split_concurrency(1, 4), (1, 1));
        assert_eq!(split_concurrency(64, 1), (1, 64));
        assert_eq!(split_concurrency(64, 4), (4, 16));
        assert_eq!(split_concurrency(6, 4), (3, 2));
        assert_eq!(split_concurrency(7, 2), (1, 7));
    }

    #[test]
    fn aligned_buffer_is_aligned() {
        let mut b = random_buf(8192, 1);
        assert_eq!(b.as_mut_ptr() as usize % AlignedBuf::ALIGN, 0);
        assert!(b.as_slice().iter().any(|&x| x != 0));
    }
}
