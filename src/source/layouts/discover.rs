//! Which files a run checks: PATH arguments (files, directories, globs) or
//! the schema's `dataset.files`, expanded into one sorted list.
//!
//! Paths are kept as the user wrote them (a directory's files are that
//! directory joined with the rest), so reports name files the way the user
//! does, and the order — byte-wise by that path — never depends on the file
//! system.

use std::path::{Path, PathBuf};

use rayon::slice::ParallelSliceMut;

use crate::error::Error;
use crate::schema::Layout;
use crate::source::{Format, Hints};

/// A data file to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    /// The path as reports show it.
    pub display: String,
    /// The path to open.
    pub path: PathBuf,
    /// For an image of an image folder: its class, from the listing (the
    /// file is then a row of its own, never opened).
    pub label: Option<FolderLabel>,
}

/// The class of an image in an image folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderLabel {
    /// The class index (position of the class folder among the sorted ones).
    pub index: i64,
    /// The class folder's name.
    pub class: std::sync::Arc<str>,
}

impl DataFile {
    /// A data file named by its path.
    pub fn new(path: PathBuf) -> DataFile {
        DataFile {
            display: path.to_string_lossy().into_owned(),
            path,
            label: None,
        }
    }
}

/// What expanding the PATHs found: files, problems, and warnings about
/// the layout (file, message).
#[derive(Debug, Default)]
pub struct Discovered {
    /// The files, sorted by the name reports show.
    pub files: Vec<DataFile>,
    /// Paths that matched nothing, unreadable directories, empty classes.
    pub errors: Vec<Error>,
    /// Warnings about the layout (an image folder's hidden class).
    pub notes: Vec<(String, String)>,
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
    let d = discover_full(args, hints);
    (d.files, d.errors)
}

/// [`discover_with`] with the layout's warnings. With `layout:
/// image_folder` every directory PATH (or directory a glob matches) is an
/// image folder's root ([`super::image_folder`]); with `layout: yolo` a
/// directory search picks up every `.txt` file.
pub fn discover_full(args: &[PathBuf], hints: &Hints) -> Discovered {
    if hints.layout == Some(Layout::ImageFolder) {
        return image_folders(args);
    }
    let columns = &hints.columns[..];
    let yolo = hints.layout == Some(Layout::Yolo);
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for arg in args {
        let shown = arg.to_string_lossy().into_owned();
        let is_glob = shown.contains(['*', '?', '[']);
        if crate::source::storage::remote::is_url(arg) {
            remote(&shown, &mut files, &mut errors);
        } else if arg.is_dir() {
            let before = files.len();
            walk(arg, columns, yolo, &mut files, &mut errors);
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
                            Ok(p) if p.is_dir() => walk(&p, columns, yolo, &mut files, &mut errors),
                            Ok(p) if picked(&p, columns, yolo) => files.push(DataFile::new(p)),
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
    sort(&mut files);
    Discovered {
        files,
        errors,
        notes: Vec::new(),
    }
}

/// A URL: the objects its listing finds (a prefix or a glob, as a
/// directory or a glob is searched: files of the formats read from storage,
/// hidden ones skipped), or the one object it names.
fn remote(url: &str, files: &mut Vec<DataFile>, errors: &mut Vec<Error>) {
    let named = !url.ends_with('/') && !url.contains(['*', '?', '[']);
    // A URL naming a data file is that file: no listing request.
    if named && Format::from_path(Path::new(url)).is_some() {
        files.push(DataFile::new(PathBuf::from(url)));
        return;
    }
    match crate::source::storage::remote::list(url) {
        Err(message) => errors.push(Error::Discover {
            path: url.to_string(),
            message,
        }),
        Ok(found) if found.is_empty() && named => files.push(DataFile::new(PathBuf::from(url))),
        Ok(found) => {
            let before = files.len();
            for (u, _) in found {
                if Format::from_path(Path::new(&u)) == Some(Format::Parquet) {
                    files.push(DataFile::new(PathBuf::from(u)));
                }
            }
            if files.len() == before {
                errors.push(Error::Discover {
                    path: url.to_string(),
                    message: "no data files of a format read from object storage (Parquet) here".into(),
                });
            }
        }
    }
}

/// By the name reports show (byte-wise; for UTF-8 paths, the path's own
/// bytes), so that partial results can merge by name.
fn sort(files: &mut Vec<DataFile>) {
    files.par_sort_by(|a, b| {
        (a.display.as_bytes(), a.path.as_os_str().as_encoded_bytes())
            .cmp(&(b.display.as_bytes(), b.path.as_os_str().as_encoded_bytes()))
    });
    files.dedup_by(|a, b| a.display == b.display && a.path == b.path);
}

/// Whether a search picks up `p`: a YOLO layout's `.txt` label files, or a
/// file of a known format the schema's columns use.
fn picked(p: &Path, columns: &[String], yolo: bool) -> bool {
    if yolo {
        return super::super::formats::yolo::is_label_name(p);
    }
    Format::from_path(p).is_some_and(|f| f.searched(p, columns))
}

/// `layout: image_folder`: each directory PATH (or directory a glob
/// matches) is a root; a file PATH is an error (a root is a directory).
fn image_folders(args: &[PathBuf]) -> Discovered {
    let mut roots: Vec<(PathBuf, String)> = Vec::new();
    let mut errors = Vec::new();
    for arg in args {
        let shown = arg.to_string_lossy().into_owned();
        let is_glob = shown.contains(['*', '?', '[']);
        if arg.is_dir() {
            roots.push((arg.clone(), shown));
        } else if is_glob && !arg.exists() {
            let before = roots.len();
            for p in glob::glob(&shown).into_iter().flatten().flatten() {
                if p.is_dir() {
                    let s = p.to_string_lossy().into_owned();
                    roots.push((p, s));
                }
            }
            if roots.len() == before {
                errors.push(Error::Discover {
                    path: shown,
                    message: "matched no image folder (layout image_folder takes directories)".into(),
                });
            }
        } else {
            errors.push(Error::Discover {
                path: shown,
                message: "not a directory: with layout image_folder a PATH is the root of an image folder (its subdirectories are the classes)".into(),
            });
        }
    }
    let (mut files, errs, notes) = super::image_folder::list_roots(&roots);
    errors.extend(errs);
    sort(&mut files);
    Discovered { files, errors, notes }
}

/// Files of a known format below `dir`, hidden entries skipped.
fn walk(dir: &Path, columns: &[String], yolo: bool, files: &mut Vec<DataFile>, errors: &mut Vec<Error>) {
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
            Ok(e) if e.file_type().is_file() && picked(e.path(), columns, yolo) => {
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
