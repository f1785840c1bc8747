//! The thin binary: parse the command line, run, turn the outcome into an exit code.
//! Owns nothing else; all behaviour lives in the library.

use clap::Parser;
use std::io::Write;

fn main() {
    let cli = iosat::cli::Cli::parse();
    let code = match iosat::run(cli) {
        Ok(code) => code,
        Err(err) => {
            if iosat::error::is_broken_pipe(&err) {
                0
            } else {
                let mut stderr = std::io::stderr().lock();
                let _ = write!(stderr, "iosat: {err}");
                for cause in err.chain().skip(1) {
                    let _ = write!(stderr, ": {cause}");
                }
                let _ = writeln!(stderr);
                iosat::error::exit_code(&err)
            }
        }
    };
    std::process::exit(code);
}
