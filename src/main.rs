//! The thin binary: parse the command line, run, turn the outcome into an exit code, and pick
//! the memory allocator (a binary's choice, not a library's). Owns nothing else; all behaviour
//! lives in the library.

use clap::Parser;
use std::io::Write;

/// mimalloc, not glibc's malloc. Every interval frees the last report's thousands of small
/// allocations at once, and glibc sorts them out of its unsorted list at the first allocation
/// its per-size caches cannot serve; learning's long-lived values (each estimate's words, the
/// `learned` object's bytes) sit between them, so they no longer merge, and at 1,000 devices
/// one such allocation took ~19 µs: glibc's allocator was a fifth of what learning cost a
/// `stat --json` (issue 37; BENCHMARKS.md, "glibc's allocator in learning's cost").
/// `no_thp` (Cargo.toml): mimalloc otherwise asks for transparent huge pages, and on a host
/// that defragments for them (THP `madvise`) a replay spent seconds of system time compacting
/// memory.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// mimalloc's `purge_delay` option (its index in `mi_option_t` of mimalloc 3's mimalloc.h;
/// libmimalloc-sys names no constant for it; tests/it/cli.rs checks the index against
/// mimalloc's own listing of its options).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() {
    // Freed memory goes back to the system at once, not a second later (mimalloc's default):
    // the exporter scraped back to back held 59 MiB resident against glibc's 21, and 16 MiB
    // with this (bench/exporter.sh, 1,000 devices). A default only: an operator's
    // MIMALLOC_PURGE_DELAY, which mimalloc read at its start, stays in force.
    // SAFETY: the option setters are not thread-safe; no other thread exists yet.
    unsafe { libmimalloc_sys::mi_option_set_default(MI_OPTION_PURGE_DELAY, 0) };
    let cli = match iosat::cli::Cli::try_parse() {
        Ok(cli) => cli,
        // --help, --version: clap prints them (stdout, exit 0).
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            let _ = std::io::stderr()
                .lock()
                .write_all(iosat::cli::error_text(&e).as_bytes());
            std::process::exit(e.exit_code());
        }
    };
    let code = match iosat::run(cli) {
        Ok(code) => code,
        Err(err) => {
            if iosat::error::is_broken_pipe(&err) {
                0
            } else {
                // One line: the error and its causes, each said once (an error that already
                // prints its source, as Error::Io does, is not followed by it again).
                let mut line = format!("iosat: {err}");
                for cause in err.chain().skip(1) {
                    let c = cause.to_string();
                    if !line.ends_with(&c) {
                        line.push_str(": ");
                        line.push_str(&c);
                    }
                }
                iosat::error::say(line);
                iosat::error::exit_code(&err)
            }
        }
    };
    std::process::exit(code);
}
