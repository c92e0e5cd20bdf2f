//! `dataset: {layout: image_folder}`: a directory read exactly as
//! torchvision's `ImageFolder` reads it (`find_classes` and `make_dataset`
//! in torchvision/datasets/folder.py, v0.20–0.25).
//!
//! - The classes are the sorted names of every subdirectory of the root
//!   (`os.scandir` + `is_dir()`, which follows symbolic links), hidden ones
//!   (`.ipynb_checkpoints`, `__MACOSX`) included; Python sorts `str` by code
//!   point, which for UTF-8 names is byte order. Class i is the i-th name.
//! - The samples of a class are the files anywhere below its folder
//!   (`os.walk(followlinks=True)`) whose lower-cased name ends with one of
//!   [`IMG_EXTENSIONS`]; files directly in the root belong to no class.
//! - A class folder without a sample makes `ImageFolder` raise
//!   `FileNotFoundError` (unless `allow_empty=True`): here that folder is an
//!   error (exit 2) naming it.
//!
//! Each image is a file of one row in reports (named by its path under the
//! root as the user gave it) with the columns `label` (the class index) and
//! `class_name`. The listing never opens an image: one `read_dir` of the
//! root, then the class folders walked in parallel, one `readdir` per folder.
//! The row itself is built from the listing ([`ImageRow`], and in bulk by
//! the scanner), so an image costs no open, no stat beyond the walk's, and
//! no format detection.
//!
//! What the listing notices about the tree (hidden class folders, numeric
//! class names sorted as strings, images directly in the root, splits whose
//! class lists differ) reaches the report's warnings, with the root named.

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock};

use arrow::array::{Int64Array, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use rayon::prelude::*;

use super::discover::{DataFile, Discovered, FolderLabel};
use crate::error::Error;
use crate::error::ReadError;
use crate::schema::labels::{self, Clash, ModelLabels};
use crate::source::read::{Batch, Source};

/// torchvision's `IMG_EXTENSIONS`, matched against the lower-cased name.
pub(crate) const IMG_EXTENSIONS: [&str; 9] = [
    ".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp",
];

/// The column holding the class index.
pub(crate) const LABEL: &str = "label";
/// The column holding the class folder's name.
pub(crate) const CLASS_NAME: &str = "class_name";

/// What listing one root found.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    /// The root as the user named it.
    pub root: String,
    /// The class names, in index order.
    pub classes: Vec<String>,
    /// Every image, with its class.
    pub files: Vec<DataFile>,
    /// Empty class folders, unreadable entries, link loops.
    pub errors: Vec<Error>,
    /// Warnings about the tree, each naming the root.
    pub notes: Vec<String>,
}

/// Whether torchvision takes a file name as an image (`has_file_allowed_extension`).
pub(crate) fn is_image_name(name: &std::ffi::OsStr) -> bool {
    let bytes = name.as_encoded_bytes();
    if bytes.is_ascii() {
        return IMG_EXTENSIONS
            .iter()
            .any(|e| bytes.len() >= e.len() && bytes[bytes.len() - e.len()..].eq_ignore_ascii_case(e.as_bytes()));
    }
    // Python's str.lower() is Unicode lower-casing ('İ' becomes two chars).
    let lower = name.to_string_lossy().to_lowercase();
    IMG_EXTENSIONS.iter().any(|e| lower.ends_with(e))
}

/// Lists the image folder at `root` (shown in reports as `shown`).
pub(crate) fn list(root: &Path, shown: &str) -> Listing {
    let mut out = Listing {
        root: shown.to_string(),
        ..Listing::default()
    };
    let entries = match std::fs::read_dir(root) {
        Ok(e) => e,
        Err(e) => {
            out.errors.push(Error::Discover {
                path: shown.into(),
                message: format!("cannot list the image folder: {e}"),
            });
            return out;
        }
    };
    let mut classes: Vec<std::ffi::OsString> = Vec::new();
    let mut loose = 0usize;
    for entry in entries {
        match entry {
            // DirEntry::path().is_dir() follows links, as os.scandir's is_dir().
            Ok(e) if e.path().is_dir() => classes.push(e.file_name()),
            Ok(e) if is_image_name(&e.file_name()) => loose += 1,
            Ok(_) => {}
            Err(e) => out.errors.push(Error::Discover {
                path: shown.into(),
                message: e.to_string(),
            }),
        }
    }
    classes.sort_by(|a, b| a.as_encoded_bytes().cmp(b.as_encoded_bytes()));
    out.classes = classes.iter().map(|c| c.to_string_lossy().into_owned()).collect();
    if out.classes.is_empty() {
        out.errors.push(Error::Discover {
            path: shown.into(),
            message: "no class folders: torchvision's ImageFolder raises FileNotFoundError (\"Couldn't find any class folder\")".into(),
        });
        return out;
    }
    let walked: Vec<(Vec<DataFile>, Vec<Error>)> = classes
        .par_iter()
        .enumerate()
        .map(|(i, class)| {
            let label = FolderLabel {
                index: i as i64,
                class: Arc::from(class.to_string_lossy().as_ref()),
            };
            walk_class(&root.join(class), label)
        })
        .collect();
    for ((files, errors), class) in walked.into_iter().zip(&out.classes) {
        if files.is_empty() && errors.is_empty() {
            out.errors.push(Error::Discover {
                path: Path::new(shown).join(class).to_string_lossy().into_owned(),
                message: format!(
                    "class folder without images (extensions {}): torchvision's ImageFolder raises FileNotFoundError (\"Found no valid file for the classes {class}\") unless allow_empty=True",
                    IMG_EXTENSIONS.join(", ")
                ),
            });
        }
        out.files.extend(files);
        out.errors.extend(errors);
    }
    out.notes = tree_notes(&out.classes, loose);
    out
}

/// Lists the image folder at a URL (a prefix in storage) as [`list`] lists
/// a directory: storage has no folders, so a class folder is the first
/// `/`-separated part of the keys below the prefix that have more parts
/// (hidden ones included, as `os.scandir` includes them), and its images
/// are the keys below it with an image name. A folder that holds no object
/// does not exist in storage, so an empty class folder, which locally is an
/// error, is not there to be found.
pub(crate) fn list_remote(url: &str, shown: &str) -> Listing {
    let mut out = Listing {
        root: shown.to_string(),
        ..Listing::default()
    };
    let objects = match crate::source::storage::remote::list_with_hidden(url) {
        Ok(o) => o,
        Err(message) => {
            out.errors.push(Error::Discover {
                path: shown.into(),
                message: format!("cannot list the image folder: {message}"),
            });
            return out;
        }
    };
    let prefix = format!("{}/", url.trim_end_matches('/'));
    // (class, image URL) of every key below a class folder.
    let mut below: Vec<(&str, &str)> = Vec::new();
    let mut loose = 0usize;
    for (u, _) in &objects {
        let Some(rel) = u.strip_prefix(&prefix) else { continue };
        let name = rel.rsplit('/').next().unwrap_or(rel);
        match rel.split_once('/') {
            Some((class, _)) => below.push((class, if is_image_name(name.as_ref()) { u } else { "" })),
            None if is_image_name(name.as_ref()) => loose += 1,
            None => {}
        }
    }
    let mut classes: Vec<&str> = below.iter().map(|(c, _)| *c).collect();
    classes.sort_unstable();
    classes.dedup();
    out.classes = classes.iter().map(|c| c.to_string()).collect();
    if out.classes.is_empty() {
        out.errors.push(Error::Discover {
            path: shown.into(),
            message: "no class folders: torchvision's ImageFolder raises FileNotFoundError (\"Couldn't find any class folder\")".into(),
        });
        return out;
    }
    for (i, class) in classes.iter().enumerate() {
        let label = FolderLabel {
            index: i as i64,
            class: Arc::from(*class),
        };
        let before = out.files.len();
        for (_, u) in below.iter().filter(|(c, u)| c == class && !u.is_empty()) {
            out.files.push(DataFile {
                display: crate::redact::url(u).into_owned(),
                path: PathBuf::from(u),
                label: Some(label.clone()),
                opens: None,
            });
        }
        if out.files.len() == before {
            out.errors.push(Error::Discover {
                path: Path::new(shown).join(class).to_string_lossy().into_owned(),
                message: format!(
                    "class folder without images (extensions {}): torchvision's ImageFolder raises FileNotFoundError (\"Found no valid file for the classes {class}\") unless allow_empty=True",
                    IMG_EXTENSIONS.join(", ")
                ),
            });
        }
    }
    out.notes = tree_notes(&out.classes, loose);
    out
}

/// The images below one class folder, each labelled with its class.
fn walk_class(dir: &Path, label: FolderLabel) -> (Vec<DataFile>, Vec<Error>) {
    let mut files = Vec::new();
    let mut errors = Vec::new();
    // os.walk(followlinks=True) keeps hidden entries; so does this walk.
    for entry in walkdir::WalkDir::new(dir).follow_links(true) {
        match entry {
            Ok(e) if !e.file_type().is_dir() && is_image_name(e.file_name()) => {
                let path = e.into_path();
                files.push(DataFile {
                    display: path.to_string_lossy().into_owned(),
                    path,
                    label: Some(label.clone()),
                    opens: None,
                });
            }
            Ok(_) => {}
            // A broken link is a file name to os.walk: only one named like
            // an image is a sample (which torchvision then fails to open).
            Err(e) if is_broken_link(&e) && !e.path().and_then(Path::file_name).is_some_and(is_image_name) => {}
            Err(e) => {
                let path = e.path().unwrap_or(dir).to_string_lossy().into_owned();
                let message = if e.loop_ancestor().is_some() {
                    "symbolic link loop (os.walk would follow it until the path is too long)".to_string()
                } else {
                    e.io_error().map_or_else(|| e.to_string(), |io| io.to_string())
                };
                errors.push(Error::Discover { path, message });
            }
        }
    }
    (files, errors)
}

/// Whether a walk error is a symbolic link whose target does not exist.
fn is_broken_link(e: &walkdir::Error) -> bool {
    e.loop_ancestor().is_none()
        && e.io_error().is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound)
        && e.path()
            .and_then(|p| p.symlink_metadata().ok())
            .is_some_and(|m| m.file_type().is_symlink())
}

/// Whether a class folder is one that other loaders skip or a tool left.
fn is_hidden(name: &str) -> bool {
    name.starts_with('.') || name == "__MACOSX" || name == "__pycache__"
}

/// Warnings about a root's class list (see the module doc).
fn tree_notes(classes: &[String], loose: usize) -> Vec<String> {
    let mut notes = Vec::new();
    for (i, c) in classes.iter().enumerate() {
        if is_hidden(c) {
            notes.push(format!(
                "class folder `{c}` gets class index {i}: torchvision's ImageFolder counts hidden and archive folders as classes (shifting every later index; with num_classes {} the last class's index equals num_classes), while timm and Hugging Face imagefolder skip them: delete it",
                classes.len() - 1
            ));
        }
    }
    let numbers: Vec<u128> = classes.iter().filter_map(|c| c.parse::<u128>().ok()).collect();
    if numbers.len() == classes.len() && numbers.len() > 1 && numbers.windows(2).any(|w| w[0] > w[1]) {
        let shown: Vec<String> = classes
            .iter()
            .take(12)
            .enumerate()
            .map(|(i, c)| format!("{c}→{i}"))
            .collect();
        notes.push(format!(
            "class folders have numeric names, which torchvision sorts as strings ({}{}): the class index is not the number in the name (timm sorts naturally)",
            shown.join(", "),
            if classes.len() > 12 { ", ..." } else { "" }
        ));
    }
    if loose > 0 {
        notes.push(format!(
            "{loose} image(s) directly in the root belong to no class: torchvision's ImageFolder ignores them (timm makes them a class of their own)"
        ));
    }
    notes
}

/// Warnings for splits (several roots) whose class lists differ: each split
/// numbers its own folders, so a class missing from one shifts the indices
/// of every later class there.
pub(crate) fn compare_splits(listings: &[Listing]) -> Vec<(String, String)> {
    let mut notes = Vec::new();
    let Some(first) = listings.first() else { return notes };
    for other in &listings[1..] {
        if other.classes == first.classes {
            continue;
        }
        let missing: Vec<&str> = first
            .classes
            .iter()
            .filter(|c| !other.classes.contains(c))
            .map(String::as_str)
            .collect();
        let extra: Vec<&str> = other
            .classes
            .iter()
            .filter(|c| !first.classes.contains(c))
            .map(String::as_str)
            .collect();
        let mut what = Vec::new();
        if !missing.is_empty() {
            what.push(format!("lacks {} of {}", quote_list(&missing), first.root));
        }
        if !extra.is_empty() {
            what.push(format!("has {} that {} lacks", quote_list(&extra), first.root));
        }
        let first_shift = first
            .classes
            .iter()
            .zip(&other.classes)
            .position(|(a, b)| a != b)
            .unwrap_or(first.classes.len().min(other.classes.len()));
        notes.push((
            other.root.clone(),
            format!(
                "its class list differs from {}'s ({}; {} vs {} classes): torchvision numbers each split's folders on its own, so from index {first_shift} on the same index means different classes",
                first.root,
                what.join(", "),
                other.classes.len(),
                first.classes.len()
            ),
        ));
    }
    notes
}

fn quote_list(names: &[&str]) -> String {
    let mut s: Vec<String> = names.iter().take(8).map(|n| format!("`{n}`")).collect();
    if names.len() > 8 {
        s.push(format!("and {} more", names.len() - 8));
    }
    s.join(", ")
}

/// The columns every image row has.
pub(crate) static COLUMNS: LazyLock<Vec<String>> = LazyLock::new(|| vec![LABEL.to_string(), CLASS_NAME.to_string()]);

/// One image of an image folder as a table of one row: built from the
/// listing, never from the image's bytes (torchvision's label does not
/// depend on them).
#[derive(Debug)]
pub(crate) struct ImageRow {
    label: FolderLabel,
}

impl ImageRow {
    /// The row of an image of class `label`.
    pub(crate) fn new(label: &FolderLabel) -> ImageRow {
        ImageRow { label: label.clone() }
    }
}

impl Source for ImageRow {
    fn columns(&self) -> &[String] {
        &COLUMNS
    }

    fn units(&self) -> usize {
        1
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        if unit != 0 {
            return Err(ReadError::new(format!(
                "no unit {unit}: an image folder row is one unit"
            )));
        }
        let mut fields = Vec::with_capacity(projection.len());
        let mut columns: Vec<arrow::array::ArrayRef> = Vec::with_capacity(projection.len());
        for &p in projection {
            match p {
                0 => {
                    fields.push(Field::new(LABEL, DataType::Int64, false));
                    columns.push(Arc::new(Int64Array::from(vec![self.label.index])));
                }
                1 => {
                    fields.push(Field::new(CLASS_NAME, DataType::Utf8, false));
                    columns.push(Arc::new(StringArray::from(vec![self.label.class.as_ref()])));
                }
                _ => return Err(ReadError::new("projection names a column an image row lacks")),
            }
        }
        let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(1));
        let batch = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)?;
        sink(Batch { first_row: 0, batch })
    }
}

/// Whether objects lie below the prefix `url` names literally (`d[1]/`).
fn remote_prefix_exists(url: &str) -> bool {
    let prefix = format!("{}/", url.trim_end_matches('/'));
    crate::source::storage::remote::list_with_hidden(url)
        .is_ok_and(|found| found.iter().any(|(u, _)| u.starts_with(&prefix)))
}

/// `layout: image_folder`: each directory PATH (or directory a glob
/// matches) is a root; a file PATH is an error (a root is a directory).
pub(super) fn discover(args: &[PathBuf], model: Option<&ModelLabels>) -> Discovered {
    let mut roots: Vec<(PathBuf, String)> = Vec::new();
    let mut errors = Vec::new();
    for arg in args {
        let shown = arg.to_string_lossy().into_owned();
        let is_glob = shown.contains(['*', '?', '[']);
        let remote = crate::source::storage::remote::is_url(arg);
        if remote && (!is_glob || remote_prefix_exists(&shown)) {
            // A prefix in storage, its listing read as a tree (a prefix
            // whose name holds glob characters included, as a local
            // directory so named is).
            roots.push((arg.clone(), shown));
        } else if arg.is_dir() {
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
    let mut found = list_roots(&roots, model);
    errors.append(&mut found.errors);
    found.errors = errors;
    super::discover::sort(&mut found.files);
    found
}

/// The listing of every root a run names, with the split comparison in
/// its notes (as (root, message)), and each root's classes compared with
/// the model's label names (`model`, the `label` column's).
pub(crate) fn list_roots(roots: &[(PathBuf, String)], model: Option<&ModelLabels>) -> Discovered {
    let listings: Vec<Listing> = roots
        .iter()
        .map(|(p, shown)| match p.to_str() {
            Some(url) if crate::source::storage::remote::is_url(p) => list_remote(url, shown),
            _ => list(p, shown),
        })
        .collect();
    let mut notes = compare_splits(&listings);
    let mut files = Vec::new();
    let mut errors = Vec::new();
    for l in listings {
        let names: Vec<Option<String>> = l.classes.iter().cloned().map(Some).collect();
        match model.and_then(|m| labels::compare(&names, "its class folders", m)) {
            Some(Clash::Order(message)) => errors.push(Error::ColumnType {
                path: l.root.clone(),
                column: LABEL.into(),
                message,
            }),
            Some(Clash::Absent(message)) => notes.push((l.root.clone(), format!("column `{LABEL}`: {message}"))),
            None => {}
        }
        notes.extend(l.notes.into_iter().map(|n| (l.root.clone(), n)));
        files.extend(l.files);
        errors.extend(l.errors);
    }
    Discovered {
        files,
        errors,
        notes,
        tables: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn extensions_match_lower_cased_names_as_python_does() {
        for yes in ["a.jpg", "a.JPG", "b.JpEg", "c.tiff", "d.webp", ".hidden.png", "x.PGM"] {
            assert!(is_image_name(OsStr::new(yes)), "{yes}");
        }
        for no in ["a.gif", "a.jpg.txt", "jpg", "a.tİf", "README"] {
            assert!(!is_image_name(OsStr::new(no)), "{no}");
        }
        assert!(is_image_name(OsStr::new("é.PNG")));
    }

    #[test]
    fn notes_name_hidden_and_numeric_classes() {
        let classes: Vec<String> = [".ipynb_checkpoints", "cat", "dog"].map(String::from).to_vec();
        let notes = tree_notes(&classes, 0);
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("`.ipynb_checkpoints` gets class index 0"),
            "{notes:?}"
        );
        let numeric: Vec<String> = ["1", "10", "2"].map(String::from).to_vec();
        assert!(tree_notes(&numeric, 0)[0].contains("1→0, 10→1, 2→2"));
        let sorted: Vec<String> = ["1", "2", "3"].map(String::from).to_vec();
        assert!(tree_notes(&sorted, 2)[0].contains("2 image(s) directly in the root"));
    }
}
