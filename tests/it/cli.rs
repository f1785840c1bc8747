//! The binary's command-line contract: help, version, usage errors.

use crate::util::{iosat, ok_stdout, run};
use clap::CommandFactory as _;
use iosat::cli::Cli;

/// The subcommands the parser itself knows, in its order (hidden ones left out).
fn subcommands() -> Vec<String> {
    Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect()
}

/// clap's own consistency checks of the whole command line (conflicting or duplicate flags,
/// groups naming no argument, defaults outside their possible values), which otherwise fire
/// only when the faulty subcommand is parsed.
#[test]
fn the_command_line_passes_clap_debug_assert() {
    Cli::command().debug_assert();
}

/// `iosat --help` lists exactly the parser's subcommands (and clap's `help`), in its order.
#[test]
fn help_lists_every_subcommand() {
    let text = ok_stdout(&run(&["--help"]));
    // Entries are indented two spaces; their wrapped continuations deeper.
    let listed: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "Commands:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let mut want = subcommands();
    want.push("help".to_string());
    assert_eq!(listed, want, "--help:\n{text}");
    for sub in [
        "stat", "info", "sweep", "fsync", "analyze", "report", "compare", "top", "exporter",
    ] {
        assert!(listed.contains(&sub), "--help lacks {sub}:\n{text}");
    }
}

/// What users see first: `iosat --help` and every subcommand's `--help`, one snapshot each.
#[test]
fn every_help_is_snapshotted() {
    insta::assert_snapshot!("help_iosat", ok_stdout(&run(&["--help"])));
    for sub in subcommands() {
        let text = ok_stdout(&run(&[&sub, "--help"]));
        insta::assert_snapshot!(format!("help_{sub}"), text);
    }
}

/// src/main.rs sets mimalloc's `purge_delay` by its index in `mi_option_t` (libmimalloc-sys
/// names no constant for it): mimalloc's own listing of its options, in their order, must put
/// `purge_delay` at that index, or a new mimalloc would set another option.
#[test]
fn the_allocator_option_main_sets_is_mimallocs_purge_delay() {
    let main =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/src/main.rs")).unwrap();
    let index: usize = main
        .lines()
        .find_map(|l| {
            l.strip_prefix("const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = ")
        })
        .and_then(|v| v.strip_suffix(';')?.parse().ok())
        .expect("src/main.rs names the option's index");
    let out = iosat()
        .arg("--version")
        .env("MIMALLOC_VERBOSE", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let listing = String::from_utf8_lossy(&out.stderr);
    let names: Vec<&str> = listing
        .lines()
        .filter_map(|l| l.strip_prefix("option '")?.split('\'').next())
        .collect();
    assert_eq!(
        names.iter().position(|n| *n == "purge_delay"),
        Some(index),
        "mimalloc's options, in order: {names:?}"
    );
}

#[test]
fn unknown_flag_is_a_usage_error() {
    let out = iosat().args(["stat", "--no-such-flag"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// The documentation walked page by page -- README.md, CONTRIBUTING.md, docs/*.md: every shell
/// example it shows runs and every relative link resolves (scripts/readme-check.sh keeps sweeps
/// and fsync runs short; its header gives the rule and the markers).
#[test]
fn every_readme_example_runs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("bash")
        .arg(root.join("scripts/readme-check.sh"))
        .env("IOSAT", env!("CARGO_BIN_EXE_iosat"))
        .env("IOSAT_STATE_DIR", "") // learned state in memory only
        .env("README_CHECK_TIMEOUT", "120")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(" 0 failed"), "{text}");
    // Something ran: the check is not vacuous.
    let ran = text.lines().filter(|l| l.starts_with("ok ")).count();
    assert!(ran >= 30, "only {ran} examples ran:\n{text}");
    // Every page of docs/ with a shell example was walked, not only the README.
    for page in std::fs::read_dir(root.join("docs")).unwrap() {
        let page = page.unwrap().path();
        let body = std::fs::read_to_string(&page).unwrap();
        if !body.contains("```sh") {
            continue;
        }
        let name = format!("docs/{}:", page.file_name().unwrap().to_string_lossy());
        assert!(
            text.lines().any(|l| l.contains(&name)),
            "{name} was not walked:\n{text}"
        );
    }
}

/// The README stays a front door (issue 24): short, the two set-up commands first, a real
/// output early, the production host before the benchmark; the reference lives in docs/.
#[test]
fn readme_is_a_front_door() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let lines: Vec<&str> = readme.lines().collect();
    assert!(lines.len() <= 300, "README.md has {} lines", lines.len());
    let top = lines[..10].join("\n");
    for setup in ["cargo run --release -- sweep", "bash scripts/test.sh"] {
        assert!(
            top.contains(setup),
            "{setup:?} not among the first lines:\n{top}"
        );
    }
    let first_output = lines.iter().position(|l| l.starts_with("$ iosat "));
    assert!(
        first_output.is_some_and(|i| i < 30),
        "no `$ iosat` output in the first 30 lines"
    );
    let at = |h: &str| {
        lines
            .iter()
            .position(|l| *l == h)
            .unwrap_or_else(|| panic!("{h}"))
    };
    assert!(at("## On a production host") < at("## Benchmarking a device"));
    assert!(at("## Contents") < at("## On a production host"));
}

/// Every man page has EXAMPLES, EXIT STATUS and ENVIRONMENT; a subcommand's synopsis is the
/// command line a user types (`iosat sweep`, not the page name `iosat-sweep`); the title line
/// carries every field, so man's footer does not run into the title; and man(1) renders it.
#[test]
fn man_pages_have_examples_exit_status_environment_and_a_typed_synopsis() {
    let page = |args: &[&str]| crate::util::ok_stdout(&crate::util::run(args));
    for sub in [
        None,
        Some("sweep"),
        Some("stat"),
        Some("fsync"),
        Some("man"),
    ] {
        let p = match sub {
            None => page(&["man"]),
            Some(s) => page(&["man", s]),
        };
        for section in [".SH EXAMPLES", ".SH \"EXIT STATUS\"", ".SH ENVIRONMENT"] {
            assert!(p.contains(section), "{sub:?}: no {section}");
        }
        assert!(
            p.contains("\\fB130\\fR") && p.contains("IOSAT_STATE_DIR"),
            "{sub:?}"
        );
        let th = p.lines().find(|l| l.starts_with(".TH ")).unwrap();
        assert!(!th.contains("  "), "{sub:?}: an empty field in {th:?}");
        assert!(th.contains("\"iosat manual\""), "{sub:?}: {th}");
        if let Some(s) = sub {
            let synopsis = p.split(".SH SYNOPSIS\n").nth(1).unwrap();
            assert!(
                synopsis.starts_with(&format!("\\fBiosat {s}\\fR")),
                "{s}: {}",
                &synopsis[..60]
            );
            let examples = p.split(".SH EXAMPLES\n").nth(1).unwrap();
            assert!(examples.contains(&format!("iosat {s}")), "{s}: {examples}");
        }
    }
    if !crate::util::have("man", "--version") {
        crate::util::skip("man(1) not installed");
        return;
    }
    let dir = crate::util::tempdir().unwrap();
    let f = dir.path().join("iosat-sweep.1");
    std::fs::write(&f, page(&["man", "sweep"])).unwrap();
    let r = std::process::Command::new("man")
        .args(["-l", f.to_str().unwrap()])
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "80")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&r.stdout);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    for heading in ["EXAMPLES", "EXIT STATUS", "ENVIRONMENT", "SYNOPSIS"] {
        assert!(
            text.lines().any(|l| l == heading),
            "{heading} not rendered:\n{text}"
        );
    }
    assert!(
        text.contains("iosat sweep /data --target-p99 5ms"),
        "{text}"
    );
    // The footer: source, date and title apart, none cut into another.
    let footer = text.trim_end().lines().last().unwrap();
    assert!(
        footer.contains("iosat 0.") && footer.trim_end().ends_with("iosat-sweep(1)"),
        "{footer:?}"
    );
}
