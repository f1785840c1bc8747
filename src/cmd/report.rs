//! `iosat report`: read a saved JSON result, render it, write it (never over a user's file
//! without --force).

use crate::cli::report::{ReportArgs, ReportFormat};
use crate::error::Error;
use anyhow::Context;
use std::io::Write;

pub fn run(args: &ReportArgs) -> anyhow::Result<i32> {
    let text = std::fs::read_to_string(&args.input).map_err(|e| Error::io(&args.input, e))?;
    let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::Parse {
        path: args.input.clone(),
        line: e.line(),
        reason: format!("not JSON: {e}"),
    })?;
    let format = args.format.unwrap_or_else(|| {
        match args
            .output
            .as_ref()
            .and_then(|p| p.extension())
            .and_then(|e| e.to_str())
        {
            Some("md") | Some("markdown") => ReportFormat::Markdown,
            Some("csv") => ReportFormat::Csv,
            _ => ReportFormat::Html,
        }
    });
    let bytes = crate::report::render(&doc, format).map_err(|reason| Error::Parse {
        path: args.input.clone(),
        line: 1,
        reason,
    })?;
    match &args.output {
        Some(path) => crate::report::write_new_file(path, bytes.as_bytes(), args.force)
            .with_context(|| format!("writing the report to {}", path.display()))?,
        None => std::io::stdout()
            .lock()
            .write_all(bytes.as_bytes())
            .map_err(|e| Error::io("<stdout>", e))?,
    }
    Ok(0)
}
