//! `iosat completions SHELL` and `iosat man [SUBCOMMAND]`: generated from the same clap
//! definitions the parser uses (clap_complete, clap_mangen), so they never drift from it.
//! Must not import: cmd/analyze.rs, cmd/compare.rs, cmd/exporter.rs, cmd/fsync.rs, cmd/info.rs,
//! cmd/report.rs, cmd/stat.rs, cmd/sweep.rs, cmd/top.rs.

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::error::Error;
use clap::CommandFactory;

pub fn completions(args: &CompletionsArgs) -> anyhow::Result<i32> {
    let mut buf = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "iosat", &mut buf);
    write_stdout(&buf)?;
    Ok(crate::error::exit::OK)
}

pub fn man(args: &ManArgs) -> anyhow::Result<i32> {
    let cmd = Cli::command();
    let (page, title) = match &args.subcommand {
        None => (cmd, "iosat".to_string()),
        Some(name) => {
            let names: Vec<String> = cmd
                .get_subcommands()
                .map(|c| c.get_name().to_string())
                .collect();
            let Some(sub) = cmd.find_subcommand(name) else {
                return Err(Error::usage(
                    "SUBCOMMAND",
                    name,
                    format!(
                        "is not an iosat subcommand; choose from {}",
                        names.join(", ")
                    ),
                )
                .into());
            };
            // iosat-stat(1): the page is named after the command line that runs it, and its
            // synopsis is that command line (`iosat stat`, not `iosat-stat`). clap names are
            // &'static str (without its "string" feature): leaked once by a command that
            // prints and exits.
            let full: &'static str = Box::leak(format!("iosat-{name}").into_boxed_str());
            let bin: &'static str = Box::leak(format!("iosat {name}").into_boxed_str());
            let sub = sub
                .clone()
                .name(full)
                .bin_name(bin)
                .version(env!("CARGO_PKG_VERSION"));
            (sub, format!("iosat-{name}"))
        }
    };
    let examples = examples(args.subcommand.as_deref());
    let man = clap_mangen::Man::new(page)
        .title(title)
        // Every field of the title line given: an empty date is dropped from `.TH`, which
        // moves the source into the date's place and runs the footer into the title.
        .date(crate::build::COMMIT)
        .source(format!("iosat {}", env!("CARGO_PKG_VERSION")))
        .manual("iosat manual");
    let mut buf = Vec::new();
    let io = |e| Error::io("<stdout>", e);
    man.render_title(&mut buf).map_err(io)?;
    man.render_name_section(&mut buf).map_err(io)?;
    man.render_synopsis_section(&mut buf).map_err(io)?;
    man.render_description_section(&mut buf).map_err(io)?;
    man.render_options_section(&mut buf).map_err(io)?;
    if args.subcommand.is_none() {
        man.render_subcommands_section(&mut buf).map_err(io)?;
    }
    let cmd = Cli::command();
    let sub = args
        .subcommand
        .as_deref()
        .and_then(|n| cmd.find_subcommand(n));
    if sub.is_some_and(|c| c.get_after_long_help().is_some() || c.get_after_help().is_some()) {
        man.render_extra_section(&mut buf).map_err(io)?;
    }
    buf.extend_from_slice(extra_sections(&examples).as_bytes());
    write_stdout(&buf)?;
    Ok(crate::error::exit::OK)
}

/// Text as roff: backslashes and hyphens escaped, a line never starting with a control
/// character.
fn roff(text: &str) -> String {
    let t = text.replace('\\', "\\e").replace('-', "\\-");
    if t.starts_with('.') || t.starts_with('\'') {
        format!("\\&{t}")
    } else {
        t
    }
}

/// EXAMPLES, EXIT STATUS and ENVIRONMENT, which clap has no place for.
fn extra_sections(examples: &[(&str, &str)]) -> String {
    let mut s = String::from(".SH EXAMPLES\n");
    for (cmd, what) in examples {
        s += &format!(".TP\n\\fB{}\\fR\n{}\n", roff(cmd), roff(what));
    }
    s += ".SH \"EXIT STATUS\"\n";
    for (code, what) in [
        ("0", "success (a closed standard output included)"),
        ("1", "an I/O error at run time"),
        (
            "2",
            "bad usage: one line names the flag or file and the value",
        ),
        (
            "3",
            "verification failed (data read back is not what was written)",
        ),
        ("4", "refused for safety (a mounted, used or signed device)"),
        (
            "130",
            "stopped by a signal (SIGINT, SIGTERM, SIGHUP); results so far are kept",
        ),
    ] {
        s += &format!(".TP\n\\fB{code}\\fR\n{}\n", roff(what));
    }
    s += ".SH ENVIRONMENT\n";
    for (var, what) in [
        ("IOSAT_PROFILE_DIR", "the profile directory, in place of the default one"),
        ("IOSAT_PROFILE_DIRS", "shared profile directories, colon-separated, searched after it (default /etc/iosat/profiles)"),
        ("IOSAT_STATE_DIR", "where learned state is kept (default /var/lib/iosat as root, else $XDG_STATE_HOME/iosat); empty keeps it in memory only"),
        ("XDG_STATE_HOME, HOME", "the state and profile directories of a user who is not root"),
        ("NO_COLOR", "no colours in iosat top"),
    ] {
        s += &format!(".TP\n\\fB{}\\fR\n{}\n", roff(var), roff(what));
    }
    s
}

/// A page's examples: (command line, what it does).
fn examples(sub: Option<&str>) -> Vec<(&'static str, &'static str)> {
    let all: &[(&str, &[(&str, &str)])] = &[
        (
            "stat",
            &[
                (
                    "iosat stat",
                    "whole disks, dm and md, every second, like iostat -x",
                ),
                (
                    "iosat stat -i 0.5 -c 10 'nvme*'",
                    "ten half-second intervals of the NVMe devices",
                ),
                (
                    "iosat stat --record day.rec",
                    "also append the raw samples to day.rec, for --replay or iosat report",
                ),
                (
                    "iosat stat --replay day.rec --json",
                    "the same intervals again, as JSON lines",
                ),
            ],
        ),
        (
            "info",
            &[
                (
                    "iosat info",
                    "every disk: model, queue, cache, holders, mounts, limits, profile",
                ),
                ("iosat info nvme0n1 --json", "one device, as JSON"),
            ],
        ),
        (
            "sweep",
            &[
                (
                    "iosat sweep",
                    "a temporary file in the current directory, the default levels",
                ),
                (
                    "iosat sweep /data --levels auto",
                    "keep doubling until throughput plateaus past the overload point",
                ),
                (
                    "iosat sweep /data --target-p99 5ms",
                    "the most IOPS whose p99 stays within 5 ms (an open-loop search)",
                ),
                (
                    "iosat sweep /data --json -o sweep.json --save-profile",
                    "keep the result and the device's profile",
                ),
            ],
        ),
        (
            "fsync",
            &[
                (
                    "iosat fsync /var/lib/postgresql",
                    "commit latency of every method, in a test file there",
                ),
                (
                    "iosat fsync . --like postgres",
                    "the methods PostgreSQL's wal_sync_method chooses between",
                ),
            ],
        ),
        (
            "analyze",
            &[
                (
                    "iosat analyze fio-qd*.json",
                    "fio runs at several depths as one concurrency curve",
                ),
                (
                    "iosat analyze iostat-x.txt",
                    "an iostat -x capture: the device's diagnosis over time",
                ),
            ],
        ),
        (
            "report",
            &[
                (
                    "iosat report sweep.json -o sweep.html",
                    "one self-contained HTML page",
                ),
                (
                    "iosat report day.rec --format markdown",
                    "a recording as Markdown",
                ),
            ],
        ),
        (
            "compare",
            &[(
                "iosat compare before.json after.json",
                "two sweeps side by side, the differences in words",
            )],
        ),
        (
            "top",
            &[
                ("iosat top", "the live view, every second"),
                (
                    "iosat top --replay day.rec",
                    "a recording, replayed in the same view",
                ),
            ],
        ),
        (
            "exporter",
            &[(
                "iosat exporter",
                "Prometheus metrics on 127.0.0.1:9019/metrics",
            )],
        ),
        (
            "profile",
            &[
                ("iosat profile list", "the saved device profiles"),
                (
                    "iosat profile save sweep.json",
                    "a sweep result saved as its device's profile",
                ),
            ],
        ),
        (
            "completions",
            &[("iosat completions bash > iosat.bash", "bash completion")],
        ),
        (
            "man",
            &[("iosat man stat > iosat-stat.1", "the page of iosat stat")],
        ),
    ];
    match sub {
        Some(name) => all
            .iter()
            .find(|(n, _)| *n == name)
            .map_or_else(Vec::new, |(_, e)| e.to_vec()),
        None => all.iter().filter_map(|(_, e)| e.first().copied()).collect(),
    }
}

/// Through the one writer of standard output (cmd::sink::print).
fn write_stdout(bytes: &[u8]) -> Result<(), Error> {
    crate::cmd::sink::print(&String::from_utf8_lossy(bytes))
}
