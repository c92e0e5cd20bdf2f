//! Which files a run checks: PATH arguments (files, directories, globs) or
//! the schema's `dataset.files`, expanded into one sorted list.
//!
//! Paths are kept as the user wrote them (a directory's files are that
//! directory joined with the rest), so reports name files the way the user
//! does, and the order — byte-wise by that path — never depends on the file
//! system.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::source::{Format, Hints};

/// A data file to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    /// The path as reports show it.
    pub display: String,
    /// The path to open.
    pub path: PathBuf,
}

impl DataFile {
    fn new(path: PathBuf) -> DataFile {
        DataFile {
            display: path.to_string_lossy().into_owned(),
            path,
        }
    }
}

/// Expands `args` into files; problems (no match, unreadable directory) are
/// returned beside the files that were found. Searches pick up token `.bin`
/// files only for a schema with a `tokens` column: see [`discover_with`].
pub fn discover(args: &[PathBuf]) -> (Vec<DataFile>, Vec<Error>) {
    discover_with(args, &Hints::default())
}

/// [`discover`] for a schema: `hints.columns` decides which formats that
/// only some schemas use ([`Format::searched`]) a search picks up.
pub fn discover_with(args: &[PathBuf], hints: &Hints) -> (Vec<DataFile>, Vec<Error>) {
    let columns = &hints.columns[..];
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for arg in args {
        let shown = arg.to_string_lossy().into_owned();
        let is_glob = shown.contains(['*', '?', '[']);
        if arg.is_dir() {
            let before = files.len();
            walk(arg, columns, &mut files, &mut errors);
            // A gate must not pass a directory it found nothing to check in.
            if files.len() == before {
                errors.push(Error::Discover {
                    path: shown,
                    message: "no data files of a known format in this directory".into(),
                });
            }
        } else if arg.exists() || !is_glob {
            // A named file is checked whatever its name; a missing one is
            // reported when it is opened.
            files.push(DataFile::new(arg.clone()));
        } else {
            match glob::glob(&shown) {
                Err(e) => errors.push(Error::Discover {
                    path: shown,
                    message: format!("invalid glob: {e}"),
                }),
                Ok(paths) => {
                    let before = files.len();
                    for p in paths {
                        match p {
                            Ok(p) if p.is_dir() => walk(&p, columns, &mut files, &mut errors),
                            Ok(p) if Format::from_path(&p).is_some_and(|f| f.searched(&p, columns)) => {
                                files.push(DataFile::new(p))
                            }
                            Ok(_) => {}
                            Err(e) => errors.push(Error::Discover {
                                path: e.path().to_string_lossy().into_owned(),
                                message: e.error().to_string(),
                            }),
                        }
                    }
                    if files.len() == before {
                        errors.push(Error::Discover {
                            path: shown,
                            message: "matched no data files".into(),
                        });
                    }
                }
            }
        }
    }
    // By the name reports show (byte-wise; for UTF-8 paths, the path's own
    // bytes), so that partial results can merge by name.
    files.sort_by(|a, b| {
        (a.display.as_bytes(), a.path.as_os_str().as_encoded_bytes())
            .cmp(&(b.display.as_bytes(), b.path.as_os_str().as_encoded_bytes()))
    });
    files.dedup();
    (files, errors)
}

/// Files of a known format below `dir`, hidden entries skipped.
fn walk(dir: &Path, columns: &[String], files: &mut Vec<DataFile>, errors: &mut Vec<Error>) {
    let walker = walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
    for entry in walker {
        match entry {
            // A dataset index: the files it lists that are not there.
            Ok(e) if e.file_type().is_file() && e.file_name() == "index.json" => {
                let d = e.path().parent().unwrap_or(dir);
                errors.extend(crate::source::listed_but_missing(d).into_iter().map(|(path, message)| {
                    Error::Discover {
                        path: path.to_string_lossy().into_owned(),
                        message,
                    }
                }));
            }
            Ok(e)
                if e.file_type().is_file()
                    && Format::from_path(e.path()).is_some_and(|f| f.searched(e.path(), columns)) =>
            {
                files.push(DataFile::new(e.into_path()));
            }
            Ok(_) => {}
            Err(e) => {
                let path = e.path().unwrap_or(dir).to_string_lossy().into_owned();
                let message = if e.loop_ancestor().is_some() {
                    "symbolic link loop".to_string()
                } else {
                    e.io_error().map_or_else(|| e.to_string(), |io| io.to_string())
                };
                errors.push(Error::Discover { path, message });
            }
        }
    }
}
