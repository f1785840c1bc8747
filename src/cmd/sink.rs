//! The one output sink of every command that prints a result: an [`Output`] (config/output.rs,
//! validated from the flags) opened, then written whole (a result, or the result so far after
//! each sweep level), or as it comes (`stat`). A write to standard output that fails names
//! `<stdout>`, so a closed pipe exits 0 as everywhere. Does its IO through sys::fs only.
//! Imports only: error, config/output.rs, report/, sys/.

use crate::config::output::{Dest, Output};
use crate::error::{Error, Result};
use crate::report::Format;
use crate::sys::fs::{self, Force};
use std::io::Write;

impl Output {
    /// Open the sink (a streamed `-o FILE` now, so it fails before the run).
    pub fn open(&self) -> Result<Sink> {
        let target = |d: &Option<Dest>| -> Result<Option<Target>> {
            let Some(d) = d else { return Ok(None) };
            let stream = if d.stream {
                Some(fs::open_output(d.flag, &d.path, d.force)?)
            } else {
                None
            };
            Ok(Some(Target {
                dest: d.clone(),
                written: false,
                stream,
            }))
        };
        Ok(Sink {
            stdout: self.stdout,
            file: target(&self.file)?,
            page: target(&self.page)?,
            line: String::new(),
        })
    }
}

struct Target {
    dest: Dest,
    /// Written once by this run: later writes replace what it wrote.
    written: bool,
    stream: Option<std::fs::File>,
}

impl Target {
    fn write_whole(&mut self, bytes: &str) -> Result<()> {
        // The first write applies the rule as checked before the run; later ones replace the
        // file this run wrote.
        let force = if self.written {
            Force::Given
        } else {
            self.dest.force
        };
        fs::write_output(self.dest.flag, &self.dest.path, bytes.as_bytes(), force)?;
        self.written = true;
        Ok(())
    }
}

/// An open [`Output`]: each result is rendered once per format it goes to.
pub struct Sink {
    stdout: Option<Format>,
    file: Option<Target>,
    page: Option<Target>,
    /// The streamed piece being written, kept between pieces: `stat --json` writes a line of
    /// a megabyte or more per interval at a thousand devices, and a fresh buffer each time
    /// was given back to the kernel and faulted in again (glibc trims the top of its heap),
    /// a tenth of the JSON's CPU.
    line: String,
}

/// A result rendered in the format asked for.
pub type Render<'a> = &'a dyn Fn(Format) -> String;

/// A streamed piece rendered in the format asked for, appended to the string given.
pub type Stream<'a> = &'a dyn Fn(Format, &mut String);

impl Sink {
    /// Standard output's format (None: it gets nothing).
    pub fn stdout_format(&self) -> Option<Format> {
        self.stdout
    }

    /// Is there an `--html` page?
    pub fn has_page(&self) -> bool {
        self.page.is_some()
    }

    /// The whole result so far to `-o` and `--html` (sweep after every level).
    pub fn files(&mut self, render: Render) -> Result<()> {
        for t in [&mut self.file, &mut self.page].into_iter().flatten() {
            if t.stream.is_none() {
                t.write_whole(&render(t.dest.format))?;
            }
        }
        Ok(())
    }

    /// The result: the files first (a closed standard output does not lose them), then
    /// standard output.
    pub fn result(&mut self, render: Render) -> Result<()> {
        self.files(render)?;
        if let Some(f) = self.stdout {
            print(&render(f))?;
        }
        Ok(())
    }

    /// The `--html` page alone (stat redraws it as the recording grows).
    pub fn page(&mut self, html: &str) -> Result<()> {
        match &mut self.page {
            Some(t) => t.write_whole(html),
            None => Ok(()),
        }
    }

    /// A piece of a streamed result (stat's reports): to standard output and the `-o` file.
    pub fn stream(&mut self, render: Stream) -> Result<()> {
        let line = &mut self.line;
        if let Some(f) = self.stdout {
            line.clear();
            render(f, line);
            print(line)?;
        }
        if let Some(t) = &mut self.file {
            if let Some(file) = &mut t.stream {
                line.clear();
                render(t.dest.format, line);
                file.write_all(line.as_bytes())
                    .map_err(|e| Error::io(&t.dest.path, e))?;
            }
        }
        Ok(())
    }

    /// End a streamed `-o FILE`: synced (a regular file) and closed, errors reported.
    pub fn close(mut self) -> Result<()> {
        if let Some(t) = self.file.take() {
            if let Some(f) = t.stream {
                let sync = f.metadata().is_ok_and(|m| m.is_file());
                fs::close_checked(f, &t.dest.path, sync)?;
            }
        }
        Ok(())
    }
}

/// Write to standard output; a failure names `<stdout>` (a closed pipe then exits 0).
pub fn print(text: &str) -> Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
        .map_err(|e| Error::io("<stdout>", e))
}
