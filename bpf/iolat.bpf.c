// SPDX-License-Identifier: GPL-2.0
//
// iosat's block-latency source: one hook on request completion, latency = completion time -
// the request's own start_time_ns (the start blk_account_io_done() subtracts for diskstats'
// *_ms fields, see block/blk-mq.c), added to a per-device, per-op log-linear histogram with an
// exact sum in a per-CPU array. User space reads the cumulative counters and takes differences.
//
// Two entry points; the loader attaches one:
// - iolat_done on the BTF-enabled tracepoint block_io_done (kernel >= 6.5), which fires inside
//   blk_account_io_done() itself, right after the time diskstats subtracts from: the sums agree
//   with Δ*_ms to the counters' own truncation.
// - iolat_complete on block_rq_complete (kernel >= 5.5), which fires in blk_update_request()
//   before the bios' completion callbacks run, so each latency is short of diskstats' by the
//   time those callbacks take (a few µs per request).
//
// CO-RE without a vmlinux.h: the few kernel types are declared below with
// preserve_access_index, so the loader relocates their field offsets against the running
// kernel's BTF. Self-contained (no libbpf headers): build with scripts/build-bpf.sh.
//
// The bucket layout is shared with src/monitor/blklat.rs (keep them in step):
//   u = latency_ns >> UNIT_SHIFT (128 ns units)
//   u < SUB:  bucket u
//   else:     b = floor(log2 u); bucket (b - SUB_BITS + 1) * SUB + ((u >> (b - SUB_BITS)) & (SUB - 1))
//   clamped to the last bucket (>= 2^MAX_LOG2 units, about 68.7 s).
//
// Size classes (reads and writes only): the request's bytes, by model::SizeClass's edges
// (src/analysis/learned.rs, keep them in step): <= SMALL_MAX_BYTES (8 KiB and its merges),
// <= MEDIUM_MAX_BYTES (64 KiB and its merges), larger. Each class has a coarser histogram,
// bucket_of >> CLASS_SHIFT (4 sub-buckets per power of two, the learner's own resolution:
// src/learn/model.rs), with the exact sums of latency and bytes. The size: at block_io_done the
// request's __data_len is already 0 (blk_update_request counted it down), so iolat_size, on
// block_rq_complete just before it on the same CPU, notes it in a per-CPU note with the
// request's address and start time (requests are reused: the start tells this one from the
// last; a request completed in parts keeps its first, whole size). A request whose note is
// gone (another completion on the CPU between its two hooks, or a task-context completion
// moved to another CPU) is in its op's histogram but in no class, never in a wrong one. Not
// a hash map keyed by request: its update cost 5x the rest of the program (bench/bpf_overhead.sh).
//
// Queue and device time (issue 40), from the request's own stamps, no map of requests in flight:
// queue = io_start_time_ns - start_time_ns (allocated to issued to the driver), device =
// completion - io_start_time_ns; each in a histogram of the same layout as the total, per device
// slot and op, with exact sums. The kernel stamps io_start_time_ns only where the queue has
// QUEUE_FLAG_STATS (blk_mq_start_request() in block/blk-mq.c: set while a blk-stat callback is
// registered, i.e. wbt, io.latency, iocost or hybrid polling on the queue); elsewhere it stays 0
// (blk_mq_rq_ctx_init) and the request is counted as unsplit: in the total only.
//
// Per cgroup (issue 40): the request's own cgroup, not the task that completes it: at
// block_rq_complete the request still holds its bios, and the first bio's blkg names the blkcg
// it was charged to (bio_associate_blkg at submission; writeback bios carry the cgroup that
// dirtied the pages). Its cgroup's kernfs id is the inode number of the cgroup's directory (the
// cgroup v2 id; in v1, the blkio hierarchy's). Noted with the size in the per-CPU note, then at
// the final completion added to the counters of (cgroup, device slot, op): requests, bytes, the
// exact sums of total, queue and device time, and a coarse histogram (2 buckets per power of
// two). Requests with no bio (flushes), no blkg (CONFIG_BLK_CGROUP off) or no note are not
// attributed; completions that find no room are counted (state[2]).
//
// Kept cheap (at most +60 ns a completion, bench/bpf_overhead.sh), by two small per-CPU caches
// in the note, so the common completion does neither a hash lookup nor the walk to the kernfs
// node (two cold objects):
// - blkcg's css.serial_nr (never reused) -> the cgroup's id, filled from the walk on a miss;
// - (cgroup, slot, op) -> the index of its counters in the per-CPU array cg_vals, filled on a
//   miss from the shared hash cg_index (which allocates an index for a new key: from cg_free,
//   else the next never used, state[3]). User space removes the keys of gone cgroups and freed
//   slots, bumps the generation (state[4]) so every cached index is looked up again, and
//   zeroes and frees the indices a tick later (a completion that read the old generation has
//   long finished).

typedef unsigned char __u8;
typedef unsigned int __u32;
typedef unsigned long long __u64;

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int (*name)[val]
#define __type(name, val) typeof(val) *name
#define __always_inline inline __attribute__((always_inline))

#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_HASH 5
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_QUEUE 22
#define BPF_NOEXIST 1

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_map_update_elem)(void *map, const void *key, const void *value,
				   __u64 flags) = (void *)2;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static long (*bpf_map_push_elem)(void *map, const void *value, __u64 flags) = (void *)87;
static long (*bpf_map_pop_elem)(void *map, void *value) = (void *)88;

#define UNIT_SHIFT 7
#define SUB_BITS 3
#define SUB (1 << SUB_BITS)
#define MAX_LOG2 29
#define NBUCKETS ((MAX_LOG2 - SUB_BITS + 1) * SUB)
#define NOPS 4
#define OP_READ 0
#define OP_WRITE 1
#define OP_DISCARD 2
#define OP_FLUSH 3
#define NCLASSES 3
#define CLASS_OPS 2
#define CLASS_SHIFT 1
#define NCBUCKETS (NBUCKETS >> CLASS_SHIFT)
#define SMALL_MAX_BYTES 10240
#define MEDIUM_MAX_BYTES 81920
#define CG_OPS 3
#define CG_SHIFT 2
#define NGBUCKETS (NBUCKETS >> CG_SHIFT)

// The kernel's request operations (include/linux/blk_types.h, stable since 4.10).
#define REQ_OP_MASK 0xff
#define REQ_OP_FLUSH 2
#define REQ_OP_DISCARD 3

struct hist {
	__u64 buckets[NBUCKETS];
	__u64 sum_ns;
};

struct split_hist {
	__u64 queue[NBUCKETS];
	__u64 device[NBUCKETS];
	__u64 queue_sum_ns;
	__u64 device_sum_ns;
	// Requests with no usable issue stamp (0, or outside start..completion).
	__u64 unsplit;
};

struct class_hist {
	__u64 buckets[NCBUCKETS];
	__u64 sum_ns;
	__u64 bytes;
};

// Per-CPU caches (see the header), direct-mapped.
#define CG_CACHE 16
struct cg_id {
	__u64 serial;
	__u64 id;
};
struct cg_at {
	__u64 cgroup;
	__u32 slot_op;
	__u32 idx;
	__u64 gen;
};

// dev -> its slot, so a completion does no hash lookup (user space bumps the generation,
// state[4], when it frees a slot).
#define SLOT_CACHE 4
struct slot_at {
	__u32 dev;
	__u32 slot;
	__u64 gen;
};

// The size and cgroup of the request completing on this CPU (iolat_size -> iolat_done), and
// the CPU's caches.
struct pending {
	__u64 rq;
	__u64 start_time_ns;
	__u64 bytes;
	__u64 cgroup;
	struct slot_at slots[SLOT_CACHE];
	struct cg_id ids[CG_CACHE];
	struct cg_at ats[CG_CACHE];
};

// One cgroup's requests on one device slot and op (read, write, discard).
struct cg_key {
	__u64 cgroup;
	__u32 slot;
	__u32 op;
};

struct cg_val {
	__u64 ios;
	__u64 bytes;
	__u64 sum_ns;
	__u64 queue_sum_ns;
	__u64 device_sum_ns;
	// Requests in the queue and device sums (those with an issue stamp).
	__u64 split_ios;
	__u64 buckets[NGBUCKETS];
};

// Number of device slots; user space sizes the maps (set before load).
const volatile __u32 max_slots = 64;

// Count per cgroup (set before load: `--cgroups`); off, the verifier drops that code and the
// cgroup lookup, so a program loaded without it costs what it did before.
const volatile __u32 by_cgroups = 0;

// Entries of cg_index, cg_vals and cg_free (set before load, as their max_entries).
const volatile __u32 max_cg = 1024;

// dev_t (major << 20 | minor, the kernel's internal encoding) -> slot.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} slots SEC(".maps");

// [0]: the next free slot; [1]: completions dropped because every slot was taken; [2]:
// completions not attributed to their cgroup for want of room; [3]: the next cg_vals index
// never used; [4]: the generation of cg_index (user space bumps it when it removes keys).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 5);
	__type(key, __u32);
	__type(value, __u64);
} state SEC(".maps");

// Slots user space freed (their devices left diskstats, their histograms zeroed): taken
// before new ones, so device churn (loop, dm, nbd) never exhausts the slots.
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 64);
	__type(value, __u32);
} free_slots SEC(".maps");

// Index slot * NOPS + op.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 64 * NOPS);
	__type(key, __u32);
	__type(value, struct hist);
} hists SEC(".maps");

// Index slot * NOPS + op, as hists.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 64 * NOPS);
	__type(key, __u32);
	__type(value, struct split_hist);
} split_hists SEC(".maps");

// Index (slot * CLASS_OPS + op) * NCLASSES + class, op read or write.
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 64 * CLASS_OPS * NCLASSES);
	__type(key, __u32);
	__type(value, struct class_hist);
} class_hists SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pending);
} pending SEC(".maps");

// (cgroup, slot, op) -> the index of its counters in cg_vals; user space sizes the three
// maps alike and removes the keys of gone cgroups and freed slots.
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct cg_key);
	__type(value, __u32);
} cg_index SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct cg_val);
} cg_vals SEC(".maps");

// Indices user space freed (zeroed), taken before never used ones.
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 1024);
	__type(value, __u32);
} cg_free SEC(".maps");

struct gendisk {
	int major;
	int first_minor;
} __attribute__((preserve_access_index));

struct request_queue {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

struct kernfs_node {
	__u64 id;
} __attribute__((preserve_access_index));

struct cgroup {
	struct kernfs_node *kn;
} __attribute__((preserve_access_index));

struct cgroup_subsys_state {
	struct cgroup *cgroup;
	__u64 serial_nr;
} __attribute__((preserve_access_index));

struct blkcg {
	struct cgroup_subsys_state css;
} __attribute__((preserve_access_index));

struct blkcg_gq {
	struct blkcg *blkcg;
} __attribute__((preserve_access_index));

struct bio {
	struct blkcg_gq *bi_blkg;
} __attribute__((preserve_access_index));

struct request {
	struct request_queue *q;
	__u32 cmd_flags;
	__u32 rq_flags;
	__u32 __data_len;
	__u64 start_time_ns;
	__u64 io_start_time_ns;
	struct bio *bio;
} __attribute__((preserve_access_index));

// Before 5.17 the disk hung off the request itself.
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

// Since 6.5 the RQF_* flags are bit numbers of this enum; before, fixed #defines.
enum rqf_flags {
	__RQF_FLUSH_SEQ = 1,
	__RQF_IO_STAT = 8,
};

static __always_inline __u32 rqf_bit(int new_exists, __u32 new_bit, __u32 old_bit)
{
	return new_exists ? (1u << new_bit) : (1u << old_bit);
}

// One halving step of bucket_of: v >> 2^k when v > mask (= 2^2^k - 1), and the bits shifted.
static __always_inline __u64 step(__u64 *v, __u64 mask, __u32 k)
{
	__u64 t = mask - *v;
	asm volatile("" : "+r"(t));
	__u64 s = (t >> 63) << k;
	*v >>= s;
	return s;
}

static __always_inline __u32 bucket_of(__u64 ns)
{
	__u64 u = ns >> UNIT_SHIFT;
	if (u < SUB)
		return (__u32)u;
	if (u >> MAX_LOG2)
		return NBUCKETS - 1;
	// floor(log2 u) by halving (BPF has no count-leading-zeros instruction), without
	// jumps: (2^k - 1 - v) >> 63 is 1 exactly when v >= 2^k (v < 2^MAX_LOG2), so the spread
	// of latencies costs no mispredicted branch (3 calls a completion). The empty asm keeps
	// clang from turning the arithmetic back into a comparison and a jump.
	__u64 v = u, b = 0;
	b += step(&v, 0xffff, 4);
	b += step(&v, 0xff, 3);
	b += step(&v, 0xf, 2);
	b += step(&v, 0x3, 1);
	__u64 t = 0x1 - v;
	asm volatile("" : "+r"(t));
	b += t >> 63;
	return (__u32)((b - SUB_BITS + 1) * SUB + ((u >> (b - SUB_BITS)) & (SUB - 1)));
}

static __always_inline __u32 *slot_of(__u32 dev)
{
	__u32 *slot = bpf_map_lookup_elem(&slots, &dev);
	if (slot)
		return slot;
	__u32 s;
	int reused = bpf_map_pop_elem(&free_slots, &s) == 0;
	if (!reused) {
		__u32 zero = 0, one = 1;
		__u64 *next = bpf_map_lookup_elem(&state, &zero);
		if (!next)
			return 0;
		__u64 n = __sync_fetch_and_add(next, 1);
		if (n >= max_slots) {
			__u64 *dropped = bpf_map_lookup_elem(&state, &one);
			if (dropped)
				__sync_fetch_and_add(dropped, 1);
			return 0;
		}
		s = (__u32)n;
	}
	// Another CPU may have given the device a slot meanwhile: then its slot wins; a reused
	// slot goes back to the free list, a new one stays unused.
	if (bpf_map_update_elem(&slots, &dev, &s, BPF_NOEXIST) != 0 && reused)
		bpf_map_push_elem(&free_slots, &s, 0);
	return bpf_map_lookup_elem(&slots, &dev);
}

// The request's queue and device time (see the header), or its count as unsplit. Returns the
// issue stamp used (0: unsplit).
static __always_inline __u64 split(__u32 idx, struct request *rq, __u64 start, __u64 now)
{
	struct split_hist *sp = bpf_map_lookup_elem(&split_hists, &idx);
	if (!sp)
		return 0;
	__u64 issue = 0;
	if (__builtin_preserve_field_info(rq->io_start_time_ns, 2))
		issue = rq->io_start_time_ns;
	if (issue == 0 || issue < start || issue > now) {
		sp->unsplit += 1;
		return 0;
	}
	__u64 qns = issue - start, dns = now - issue;
	__u64 qb = bucket_of(qns), db = bucket_of(dns);
	asm volatile("" : "+r"(qb));
	asm volatile("" : "+r"(db));
	if (qb >= NBUCKETS || db >= NBUCKETS)
		return 0;
	sp->queue[qb] += 1;
	sp->device[db] += 1;
	sp->queue_sum_ns += qns;
	sp->device_sum_ns += dns;
	return issue;
}

// The cgroup the request was charged to (see the header), 0 where it has none; `p` is this
// CPU's note, whose cache of ids it uses.
static __always_inline __u64 cgroup_of(struct request *rq, struct pending *p)
{
	if (!__builtin_preserve_field_info(((struct bio *)0)->bi_blkg, 2))
		return 0;
	struct bio *bio = rq->bio;
	if (!bio)
		return 0;
	struct blkcg_gq *blkg = bio->bi_blkg;
	if (!blkg)
		return 0;
	struct blkcg *blkcg = blkg->blkcg;
	if (!blkcg)
		return 0;
	__u64 serial = 0;
	struct cg_id *e = 0;
	if (__builtin_preserve_field_info(((struct cgroup_subsys_state *)0)->serial_nr, 2)) {
		serial = blkcg->css.serial_nr;
		e = &p->ids[serial & (CG_CACHE - 1)];
		if (e->serial == serial && e->id != 0)
			return e->id;
	}
	struct cgroup *cg = blkcg->css.cgroup;
	if (!cg)
		return 0;
	struct kernfs_node *kn = cg->kn;
	if (!kn)
		return 0;
	__u64 id = kn->id;
	if (e) {
		e->serial = serial;
		e->id = id;
	}
	return id;
}

// A state counter (see the map), 0 where it cannot be read.
static __always_inline __u64 *state_at(__u32 i)
{
	return bpf_map_lookup_elem(&state, &i);
}

// The cg_vals index of `key`: allocated for a new key (U32_MAX: no room).
static __always_inline __u32 index_of(struct cg_key *key)
{
	__u32 *at = bpf_map_lookup_elem(&cg_index, key);
	if (at)
		return *at;
	__u32 idx;
	if (bpf_map_pop_elem(&cg_free, &idx) != 0) {
		__u64 *next = state_at(3);
		if (!next)
			return 0xffffffff;
		__u64 n = __sync_fetch_and_add(next, 1);
		if (n >= max_cg)
			return 0xffffffff;
		idx = (__u32)n;
	}
	if (bpf_map_update_elem(&cg_index, key, &idx, BPF_NOEXIST) != 0) {
		// Another CPU added the key meanwhile (or the map is full): the index goes back.
		bpf_map_push_elem(&cg_free, &idx, 0);
		at = bpf_map_lookup_elem(&cg_index, key);
		return at ? *at : 0xffffffff;
	}
	return idx;
}

// The request's figures added to its cgroup's on this device slot; `p` is this CPU's note
// and caches, `gen` the generation read for this completion.
static __always_inline void by_cgroup(struct pending *p, __u64 gen, __u64 cgroup, __u32 slot,
				      __u32 kind, __u64 bytes, __u64 b, __u64 start, __u64 issue,
				      __u64 now)
{
	__u32 slot_op = slot << 2 | kind;
	__u32 h = (__u32)(cgroup ^ (cgroup >> 16) ^ (slot_op * 7)) & (CG_CACHE - 1);
	struct cg_at *e = &p->ats[h];
	__u32 idx;
	if (e->cgroup == cgroup && e->slot_op == slot_op && e->gen == gen) {
		idx = e->idx;
	} else {
		struct cg_key key = {.cgroup = cgroup, .slot = slot, .op = kind};
		idx = index_of(&key);
		if (idx == 0xffffffff) {
			__u64 *full = state_at(2);
			if (full)
				__sync_fetch_and_add(full, 1);
			return;
		}
		e->cgroup = cgroup;
		e->slot_op = slot_op;
		e->idx = idx;
		e->gen = gen;
	}
	struct cg_val *v = bpf_map_lookup_elem(&cg_vals, &idx);
	if (!v)
		return;
	__u64 gb = b >> CG_SHIFT;
	asm volatile("" : "+r"(gb));
	if (gb >= NGBUCKETS)
		return;
	v->ios += 1;
	v->bytes += bytes;
	v->sum_ns += now - start;
	v->buckets[gb] += 1;
	if (issue) {
		v->queue_sum_ns += issue - start;
		v->device_sum_ns += now - issue;
		v->split_ios += 1;
	}
}

// What both entry points do with a request that has finished whole at time `now`; `cpu` is
// this CPU's note and caches, whose bytes and cgroup are the request's when `is_noted`.
static __always_inline int account(struct request *rq, __u64 now, struct pending *cpu,
				   int is_noted)
{
	__u64 bytes = is_noted ? cpu->bytes : 0;
	__u64 cgroup = is_noted ? cpu->cgroup : 0;
	__u32 flush_seq = rqf_bit(__builtin_preserve_enum_value(
					  *(typeof(enum rqf_flags) *)__RQF_FLUSH_SEQ, 0),
				  __builtin_preserve_enum_value(
					  *(typeof(enum rqf_flags) *)__RQF_FLUSH_SEQ, 1),
				  4);
	__u32 io_stat = rqf_bit(__builtin_preserve_enum_value(
					*(typeof(enum rqf_flags) *)__RQF_IO_STAT, 0),
				__builtin_preserve_enum_value(
					*(typeof(enum rqf_flags) *)__RQF_IO_STAT, 1),
				13);

	__u32 rq_flags = rq->rq_flags;
	__u32 op = rq->cmd_flags & REQ_OP_MASK;
	__u32 kind;
	if (op == REQ_OP_FLUSH) {
		// diskstats counts the flush sequence's own flush request, which is never
		// RQF_IO_STAT (blk_account_io_flush in block/blk-flush.c); the request that
		// asked for the flush is not counted again.
		if (!(rq_flags & flush_seq))
			return 0;
		kind = OP_FLUSH;
	} else {
		// Only what diskstats accounts (iostats on, not a passthrough command); the data
		// part of a flush sequence completes again, whole, without RQF_FLUSH_SEQ.
		if ((rq_flags & (io_stat | flush_seq)) != io_stat)
			return 0;
		kind = op == REQ_OP_DISCARD ? OP_DISCARD : (op & 1) ? OP_WRITE : OP_READ;
	}
	__u64 start = rq->start_time_ns;
	if (start == 0 || now < start)
		return 0;
	__u64 ns = now - start;

	struct gendisk *disk;
	if (__builtin_preserve_field_info(((struct request___old *)rq)->rq_disk, 2))
		disk = ((struct request___old *)rq)->rq_disk;
	else
		disk = rq->q->disk;
	if (!disk)
		return 0;
	__u32 dev = ((__u32)disk->major << 20) | (__u32)disk->first_minor;

	__u64 *genp = state_at(4);
	if (!genp)
		return 0;
	__u64 gen = *genp;
	struct slot_at *se = &cpu->slots[(dev ^ (dev >> 20)) & (SLOT_CACHE - 1)];
	__u32 slot;
	if (se->dev == dev && se->gen == gen && dev != 0) {
		slot = se->slot;
	} else {
		__u32 *sp = slot_of(dev);
		if (!sp)
			return 0;
		slot = *sp;
		se->dev = dev;
		se->slot = slot;
		se->gen = gen;
	}
	__u32 idx = slot * NOPS + kind;
	struct hist *h = bpf_map_lookup_elem(&hists, &idx);
	if (!h)
		return 0;
	__u64 b = bucket_of(ns);
	// Keep the bounds check on the register that indexes (the verifier needs to see it).
	asm volatile("" : "+r"(b));
	if (b >= NBUCKETS)
		return 0;
	h->buckets[b] += 1;
	h->sum_ns += ns;
	__u64 issue = split(idx, rq, start, now);
	if (by_cgroups && cgroup != 0 && kind < CG_OPS)
		by_cgroup(cpu, gen, cgroup, slot, kind, bytes, b, start, issue, now);
	if (bytes == 0 || kind > OP_WRITE)
		return 0;
	__u32 class = bytes <= SMALL_MAX_BYTES ? 0 : bytes <= MEDIUM_MAX_BYTES ? 1 : 2;
	__u32 cidx = (slot * CLASS_OPS + kind) * NCLASSES + class;
	struct class_hist *c = bpf_map_lookup_elem(&class_hists, &cidx);
	if (!c)
		return 0;
	__u64 cb = b >> CLASS_SHIFT;
	asm volatile("" : "+r"(cb));
	if (cb >= NCBUCKETS)
		return 0;
	c->buckets[cb] += 1;
	c->sum_ns += ns;
	c->bytes += bytes;
	return 0;
}

// The request's size while whole: noted at its first block_rq_complete (a request completed in
// parts, as loop's short reads are, is requeued with the rest and completes again with less;
// its start time stays the request's).
static __always_inline void note_size(struct pending *p, struct request *rq)
{
	__u64 start = rq->start_time_ns;
	if (p->rq == (__u64)rq && p->start_time_ns == start)
		return;
	p->rq = (__u64)rq;
	p->start_time_ns = start;
	p->bytes = rq->__data_len;
	p->cgroup = by_cgroups ? cgroup_of(rq, p) : 0;
}

// This CPU's note and caches, looked up once per program run.
static __always_inline struct pending *this_cpu(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&pending, &zero);
}

// Is the note this request's?
static __always_inline int noted(struct pending *p, struct request *rq)
{
	return p->rq == (__u64)rq && p->start_time_ns == rq->start_time_ns;
}

// blk_account_io_done(rq, now): once per request, whole, next to diskstats' own accounting.
SEC("tp_btf/block_io_done")
int iolat_done(__u64 *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	__u64 now = bpf_ktime_get_ns();
	struct pending *cpu = this_cpu();
	if (!cpu)
		return 0;
	return account(rq, now, cpu, noted(cpu, rq));
}

// With iolat_done: blk_update_request(rq, error, nr_bytes) notes the request's size.
SEC("tp_btf/block_rq_complete")
int iolat_size(__u64 *ctx)
{
	struct pending *cpu = this_cpu();
	if (cpu)
		note_size(cpu, (struct request *)ctx[0]);
	return 0;
}

// blk_update_request(rq, error, nr_bytes): also for partial completions, only noted here.
SEC("tp_btf/block_rq_complete")
int iolat_complete(__u64 *ctx)
{
	struct request *rq = (struct request *)ctx[0];
	__u32 nr_bytes = (__u32)ctx[2];
	__u64 now = bpf_ktime_get_ns();
	struct pending *cpu = this_cpu();
	if (!cpu)
		return 0;
	note_size(cpu, rq);
	// A partial completion (blk_update_request with bytes left): the request goes on.
	if (nr_bytes < rq->__data_len)
		return 0;
	return account(rq, now, cpu, noted(cpu, rq));
}

char LICENSE[] SEC("license") = "GPL";
