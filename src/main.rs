//! The thin binary: parse the command line, run, turn the outcome into an exit code.
//! Owns nothing else; all behaviour lives in the library.

use clap::Parser;
use std::io::Write;

fn main() {
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
