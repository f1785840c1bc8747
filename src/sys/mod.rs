//! The only code that touches /proc, /sys and raw syscalls. Readers are thin IO functions over
//! pure parsers, with a swappable root (--proc-root/--sys-root).
