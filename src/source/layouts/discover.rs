//! Which files a run checks: PATH arguments (files, directories, globs) or
//! the schema's `dataset.files`, expanded into one sorted list.
//!
//! Paths are kept as the user wrote them (a directory's files are that
//! directory joined with the rest), so reports name files the way the user
//! does, and the order — byte-wise by that path — never depends on the file
//! system.
//!
//! Shards (WebDataset `.tar`, TFRecord) are kept or dropped per format for
//! the whole run, not file by file: a stray tar beside the data must not
//! become a missing-column error, and a shard whose first samples lack the
//! schema's columns must not be skipped either
//! (docs/src/sources/containers.md, "Directory search").

use std::path::{Path, PathBuf};

use rayon::slice::ParallelSliceMut;

use super::{hf_folders, tables, yolo};
use crate::error::{Error, ReadError};
use crate::schema::Layout;
use crate::schema::labels::{Clash, compare};
use crate::source::formats::ipc::datasets;
use crate::source::read::Source;
use crate::source::{Format, Hints};

/// A data file to check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataFile {
    /// The path as reports show it: a URL's credentials redacted
    /// (`crate::redact::url`); `path` keeps them for requests.
    pub display: String,
    /// The path to open.
    pub path: PathBuf,
    /// For an image of an image folder: its class, from the listing (the
    /// file is then a row of its own, never opened).
    pub label: Option<FolderLabel>,
    /// For a file whose rows its layout defines (a table's data file), how
    /// it opens; `None`: as its format reads it.
    pub opens: Option<Opens>,
}

/// How a layout opens a data file whose rows the file alone does not
/// define: a table's data file, whose deleted rows and partition values
/// its table holds.
pub trait Opener: Send + Sync + std::fmt::Debug {
    /// The file as a source, with the schema's hints.
    fn open(&self, hints: &Hints) -> Result<Box<dyn Source>, ReadError>;

    /// The table and version it belongs to, for a plan's unit to find the
    /// file again elsewhere ([`tables::reopen`]).
    fn table(&self) -> tables::TableRef;
}

/// A shared [`Opener`]; equal when it is the same one.
#[derive(Debug, Clone)]
pub struct Opens(pub std::sync::Arc<dyn Opener>);

impl PartialEq for Opens {
    fn eq(&self, other: &Opens) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Opens {}

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
            display: crate::redact::url(&path.to_string_lossy()).into_owned(),
            path,
            label: None,
            opens: None,
        }
    }
}

/// What expanding the PATHs found: files, problems, and warnings about
/// the layout (file, message).
#[derive(Debug, Default)]
pub(crate) struct Discovered {
    /// The files, sorted by the name reports show.
    pub files: Vec<DataFile>,
    /// Paths that matched nothing, unreadable directories, empty classes.
    pub errors: Vec<Error>,
    /// Warnings about the layout (an image folder's hidden class).
    pub notes: Vec<(String, String)>,
    /// The lakehouse tables read, each as one snapshot.
    pub tables: Vec<tables::TableSnapshot>,
}

/// Expands `args` into files, with the problems (no match, unreadable
/// directory) and the layout's warnings beside them. `hints.columns`
/// decides which formats that only some schemas use ([`Format::searched`])
/// a search picks up (token `.bin` files for a `tokens` column). With
/// `layout: image_folder` every directory PATH (or directory a glob
/// matches) is an image folder's root ([`super::image_folder`]); with
/// `layout: yolo` a search keeps the `.txt` files that are labels
/// ([`super::yolo`]).
pub(crate) fn discover(args: &[PathBuf], hints: &Hints) -> Discovered {
    if hints.layout == Some(Layout::ImageFolder) {
        let model = hints
            .column(super::image_folder::LABEL)
            .and_then(|c| c.model_labels.as_ref());
        return super::image_folder::discover(args, model);
    }
    let mut found = Found {
        columns: &hints.columns[..],
        yolo: (hints.layout == Some(Layout::Yolo)).then(yolo::Labels::default),
        arg: 0,
        files: Vec::new(),
        shards: Vec::new(),
        errors: Vec::new(),
        hf: hf_folders::Folders::default(),
        tables: Vec::new(),
        snapshots: Vec::new(),
        table_at: hints.table_at,
        table_dirs: Default::default(),
    };
    // Searches that found shards only: whether they found anything is
    // known once the shards are decided.
    let mut shards_only: Vec<(usize, String, &str)> = Vec::new();
    // `layout: yolo`: each search's `.txt` files, decided once every
    // search has met its images (so the PATHs' order never matters), and
    // per PATH what is said when none of its searches yields a label.
    let mut pending: Vec<(yolo::Search, usize)> = Vec::new();
    // A dataset YAML's `names` against the model's id2label.
    let mut yolo_notes: Vec<(String, String)> = Vec::new();
    let mut groups: Vec<(String, &str)> = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        found.arg = i;
        let shown = arg.to_string_lossy().into_owned();
        let is_glob = shown.contains(['*', '?', '[']);
        let before = (
            found.files.len(),
            found.shards.len(),
            found.hf.refused(),
            found.tables.len(),
        );
        let empty = if found.yolo.is_some() && yolo::is_dataset_yaml(arg) {
            // ultralytics' dataset YAML: its splits' images, and their labels.
            match yolo::splits(arg) {
                Err(message) => found.errors.push(Error::Discover { path: shown, message }),
                Ok(splits) => {
                    let class = hints.column(crate::source::formats::yolo::COLUMNS[0]);
                    let model = class.and_then(|c| c.model_labels.as_ref());
                    match model.and_then(|m| compare(&yolo::names(arg)?, "its `names`", m)) {
                        Some(Clash::Order(message)) => found.errors.push(Error::ColumnType {
                            path: shown.clone(),
                            column: crate::source::formats::yolo::COLUMNS[0].into(),
                            message,
                        }),
                        Some(Clash::Absent(message)) => yolo_notes.push((
                            shown.clone(),
                            format!("column `{}`: {message}", crate::source::formats::yolo::COLUMNS[0]),
                        )),
                        None => {}
                    }
                    groups.push((shown, "no label file for any image of its train/val/test splits"));
                    for split in splits {
                        match split.images {
                            Some(images) => images.into_iter().for_each(|p| found.add(p)),
                            None => found.walk(&split.path),
                        }
                        pending.push((found.search(split.path), groups.len() - 1));
                    }
                }
            }
            continue;
        } else if crate::source::storage::remote::is_url(arg) {
            match found.remote(&shown) {
                Some(empty) => empty,
                None => continue,
            }
        } else if let Some((root, kind, version)) = tables::versioned(arg) {
            // `TABLE@vN`: that version of a table.
            found.table(&root, &root, kind, Some(tables::TableAt::Version(version)));
            continue;
        } else if let Some(root) = arg.is_file().then(|| tables::metadata_file(arg)).flatten() {
            // An Iceberg metadata file: its table, as that file describes it.
            found.table(arg, root, tables::Table::Iceberg, found.table_at);
            continue;
        } else if arg.is_dir() {
            // A folder inside a table (Iceberg's data/, a partition) is
            // the table's: refused as it is.
            if !found.in_table(arg) {
                found.walk(arg);
            }
            found.decide_caches();
            // A gate must not pass a directory it found nothing to check in.
            empty_dataset(arg).unwrap_or("no data files of a known format in this directory")
        } else if let Some(message) = arg.is_file().then(|| tables::not_data(arg)).flatten() {
            found.errors.push(Error::Discover { path: shown, message });
            continue;
        } else if arg.exists() || !is_glob {
            // A named file is checked whatever its name; a missing one is
            // reported when it is opened.
            found.files.push(DataFile::new(arg.clone()));
            continue;
        } else {
            match glob::glob(&shown) {
                Err(e) => {
                    found.errors.push(Error::Discover {
                        path: shown,
                        message: format!("invalid glob: {e}"),
                    });
                    continue;
                }
                Ok(paths) => {
                    for p in paths {
                        match p {
                            Ok(p) if p.is_dir() => {
                                found.walk(&p);
                                found.decide_caches();
                            }
                            Ok(p) => {
                                if !found.in_table(&p) {
                                    found.add(p);
                                }
                            }
                            Err(e) => found.errors.push(Error::Discover {
                                path: e.path().to_string_lossy().into_owned(),
                                message: e.error().to_string(),
                            }),
                        }
                    }
                    "matched no data files"
                }
            }
        };
        if found.yolo.is_some() {
            let search = found.search(arg.clone());
            groups.push((shown, empty));
            pending.push((search, groups.len() - 1));
            continue;
        }
        // A refused `datasets` folder or table said why it was not read.
        if found.files.len() == before.0 && found.hf.refused() == before.2 && found.tables.len() == before.3 {
            if found.shards.len() == before.1 {
                found.errors.push(Error::Discover {
                    path: shown,
                    message: empty.into(),
                });
            } else {
                shards_only.push((i, shown, empty));
            }
        }
    }
    let mut yielded = vec![false; groups.len()];
    for (search, group) in pending {
        let before = found.files.len();
        found.decide_labels(search);
        yielded[group] |= found.files.len() > before;
    }
    for ((shown, empty), yielded) in groups.into_iter().zip(yielded) {
        if !yielded {
            found.errors.push(Error::Discover {
                path: shown,
                message: empty.into(),
            });
        }
    }
    let Found {
        columns,
        mut files,
        shards,
        mut errors,
        hf,
        yolo,
        mut snapshots,
        ..
    } = found;
    let mut notes = hf.finish(&mut files, &mut errors);
    notes.extend(yolo.into_iter().flat_map(yolo::Labels::notes));
    notes.extend(yolo_notes);
    let kept = keep_shard_sets(shards, columns);
    for (i, shown, message) in shards_only {
        if !kept.iter().any(|(arg, _)| *arg == i) {
            errors.push(Error::Discover {
                path: shown,
                message: message.into(),
            });
        }
    }
    files.extend(kept.into_iter().map(|(_, f)| f));
    sort(&mut files);
    snapshots.sort();
    Discovered {
        files,
        errors,
        notes,
        tables: snapshots,
    }
}

/// Why a directory with nothing to check holds no data, when it is a
/// dataset written empty: a `save_to_disk` folder whose `state.json` lists
/// no file, an MDS or LitData `index.json` that lists no shard or chunk.
fn empty_dataset(dir: &Path) -> Option<&'static str> {
    if datasets::saved_files(dir).is_some_and(|listed| listed.is_empty()) {
        return Some(
            "an empty dataset: its state.json (save_to_disk) lists no data files, so there is \
             nothing to check",
        );
    }
    crate::source::empty_index(dir)
}

/// What the searches of one run found.
struct Found<'c> {
    columns: &'c [String],
    /// `layout: yolo`: the label files the searches met.
    yolo: Option<yolo::Labels>,
    /// The PATH argument being searched.
    arg: usize,
    files: Vec<DataFile>,
    /// Shards (with their format and PATH argument), decided at the end.
    shards: Vec<(Format, usize, DataFile)>,
    errors: Vec<Error>,
    /// The Hugging Face `datasets` folders the searches met.
    hf: hf_folders::Folders,
    /// The table roots the searches met (each read or refused once,
    /// [`tables`]).
    tables: Vec<String>,
    /// The snapshots read, for the report.
    snapshots: Vec<tables::TableSnapshot>,
    /// Which snapshot of each table to read (`--table-version`, `--as-of`).
    table_at: Option<tables::TableAt>,
    /// Which folders above a glob's files are tables, as asked so far.
    table_dirs: std::collections::HashMap<PathBuf, Option<tables::Table>>,
}

impl Found<'_> {
    /// A file a search came across: kept if a search picks it up, set aside
    /// if it is a shard.
    fn add(&mut self, p: PathBuf) {
        if let Some(labels) = self.yolo.as_mut() {
            labels.add(p);
            return;
        }
        let Some(format) = Format::from_path(&p) else { return };
        if !format.searched(&p, self.columns) {
            return;
        }
        // Without a schema (`preflight init`), every shard.
        if !self.columns.is_empty() && format.provides(&p, self.columns, false).is_some() {
            self.shards.push((format, self.arg, DataFile::new(p)));
        } else {
            self.files.push(DataFile::new(p));
        }
    }

    /// A URL: the objects its listing finds (a prefix or a glob, searched
    /// as a directory or a glob is: files of the formats read from storage,
    /// hidden ones skipped), or the one object it names. `None` when the URL
    /// was settled here (a named object, or a listing error); else the
    /// message for a search that found nothing.
    fn remote(&mut self, url: &str) -> Option<&'static str> {
        // Plain HTTP has no listing and no globs (`?` starts a query): its
        // URL names one file.
        let http = crate::source::storage::remote::is_http(url);
        let is_glob = !http && url.contains(['*', '?', '[']);
        let named = !url.split('?').next().unwrap_or(url).ends_with('/') && !is_glob;
        // An Iceberg metadata file: its table, as that file describes it.
        if named && let Some(root) = tables::metadata_file(Path::new(url)) {
            self.table(Path::new(url), root, tables::Table::Iceberg, self.table_at);
            return None;
        }
        // A URL naming a data file is that file: no listing request.
        if named && let Some(message) = tables::not_data(Path::new(url)) {
            self.errors.push(Error::Discover {
                path: url.to_string(),
                message,
            });
            return None;
        }
        if named && (http || Format::from_path(Path::new(url)).is_some()) {
            self.files.push(DataFile::new(PathBuf::from(url)));
            return None;
        }
        // `TABLE@vN`: that version of a table in storage (a listing request
        // for its log or metadata, only for a URL so named).
        if named && let Some((root, kind, version)) = tables::versioned_url(url) {
            self.table(
                Path::new(root),
                Path::new(root),
                kind,
                Some(tables::TableAt::Version(version)),
            );
            return None;
        }
        // A folder (not on the Hub or plain HTTP): a table's root is read
        // as the table, its data never listed to find it.
        let listing = if is_glob || http || url.starts_with("hf://") {
            crate::source::storage::remote::list(url)
        } else {
            match tables::in_storage(url, self.table_at) {
                Ok(tables::InStorage::Table { read, kind, at }) => {
                    let root = Path::new(url.trim_end_matches('/'));
                    self.table_named(root, &read, root, kind, at);
                    return None;
                }
                Ok(tables::InStorage::Objects(found)) => Ok(found),
                Err(message) => Err(message),
            }
        };
        match listing {
            Err(message) => {
                self.errors.push(Error::Discover {
                    path: url.to_string(),
                    message,
                });
                None
            }
            Ok(found) if found.is_empty() && named => {
                self.files.push(DataFile::new(PathBuf::from(url)));
                None
            }
            Ok(mut found) => {
                // Tables: read as their snapshots, none of their objects
                // taken for data.
                let roots: std::collections::BTreeMap<String, tables::Table> = found
                    .iter()
                    .filter_map(|(u, _)| tables::Table::root_of(u).map(|(r, t)| (r.to_string(), t)))
                    .collect();
                found.retain(|(u, _)| {
                    !roots
                        .keys()
                        .any(|r| u.starts_with(r.as_str()) && u[r.len()..].starts_with('/'))
                });
                for (root, kind) in roots {
                    self.table(Path::new(&root), Path::new(&root), kind, self.table_at);
                }
                // `save_to_disk` folders the listing holds (their
                // `state.json`), read as a local search reads them; no
                // request for folders without one.
                let saved: std::collections::BTreeSet<String> = found
                    .iter()
                    .filter_map(|(u, _)| u.strip_suffix("/state.json").map(str::to_string))
                    .collect();
                for (u, _) in found {
                    // A dataset index: the files it lists that the listing lacks.
                    if let Some(dir) = u.strip_suffix("/index.json") {
                        self.errors
                            .extend(crate::source::listed_but_missing(Path::new(dir)).into_iter().map(
                                |(path, message)| Error::Discover {
                                    path: path.to_string_lossy().into_owned(),
                                    message,
                                },
                            ));
                    }
                    if self.yolo.is_some() {
                        self.add(PathBuf::from(u));
                        continue;
                    }
                    let in_saved = u.rsplit_once('/').is_some_and(|(dir, _)| saved.contains(dir));
                    // A `datasets` cache file elsewhere in a folder searched
                    // (a glob's files are kept, as locally) may be an index
                    // mapping (its schema read to know); its folder has no
                    // state.json (the listing says so: no request for it).
                    let cache = !is_glob
                        && u.rsplit_once('/')
                            .is_some_and(|(_, n)| n.starts_with("cache-") && n.ends_with(".arrow"));
                    if cache && !in_saved {
                        let dir = Path::new(&u).parent().map(Path::to_path_buf).unwrap_or_default();
                        self.hf.meet(dir);
                    }
                    if self.remote_searched(Path::new(&u))
                        && !((in_saved || cache) && self.unlisted_arrow(Path::new(&u)))
                    {
                        self.files.push(DataFile::new(PathBuf::from(u)));
                    }
                }
                // As a local search says it.
                Some(match is_glob {
                    true => "matched no data files",
                    false => "no data files of a known format in this directory",
                })
            }
        }
    }

    /// `layout: yolo`: what the search of `arg` that just ended met, to be
    /// decided once every search is done.
    fn search(&mut self, arg: PathBuf) -> yolo::Search {
        self.yolo.as_mut().map(|l| l.search(arg)).unwrap_or_default()
    }

    /// `layout: yolo`: the label files of a search that are read
    /// ([`yolo::Labels::decide`]).
    fn decide_labels(&mut self, search: yolo::Search) {
        if let Some(labels) = self.yolo.as_mut() {
            labels.decide(search, &mut self.files, &mut self.errors);
        }
    }

    /// Whether a listing keeps an object, as a local search would keep the
    /// file: by its name alone (token `.bin` files for a `tokens` column,
    /// images for a `pixels` column; COCO `.json` files, known by content,
    /// are not picked up; `layout: yolo` is decided by [`Found::add`]). An
    /// object of a format not read from storage yet is kept, to be reported
    /// as that file's error.
    fn remote_searched(&self, url: &Path) -> bool {
        Format::from_path(url).is_some_and(|f| f.listed(self.columns))
    }

    /// Whether a search skips `p`, an `.arrow` file a `datasets` folder
    /// does not read ([`hf_folders::Folders::skips`]).
    fn unlisted_arrow(&mut self, p: &Path) -> bool {
        self.hf.skips(p, self.columns, &mut self.errors)
    }

    /// The `load_dataset` cache folders the search met, decided
    /// ([`hf_folders::Folders::decide_caches`]).
    fn decide_caches(&mut self) {
        self.hf.decide_caches(&mut self.files, &mut self.errors);
    }

    /// A folder or file met inside a table: an error naming the table,
    /// once.
    fn refuse(&mut self, root: String, table: tables::Table) {
        if !self.tables.contains(&root) {
            self.errors.push(Error::Discover {
                path: root.clone(),
                message: table.refusal(),
            });
            self.tables.push(root);
        }
    }

    /// A table met by a search, read from `read` (its root, or an Iceberg
    /// metadata file) and shown as its root `root`: the data files of its
    /// latest snapshot or of the one `at` picks ([`tables::read`]), or an
    /// error naming it.
    fn table(&mut self, read: &Path, root: &Path, kind: tables::Table, at: Option<tables::TableAt>) {
        self.table_named(read, read, root, kind, at);
    }

    /// [`Found::table`], its errors naming it `named` (its root, where the
    /// metadata file read was picked by a listing).
    fn table_named(
        &mut self,
        named: &Path,
        read: &Path,
        root: &Path,
        kind: tables::Table,
        at: Option<tables::TableAt>,
    ) {
        let shown = root.to_string_lossy().into_owned();
        let key = match at {
            Some(tables::TableAt::Version(v)) => format!("{}@v{v}", named.to_string_lossy()),
            _ => named.to_string_lossy().into_owned(),
        };
        if self.tables.contains(&key) {
            return;
        }
        match tables::read(read, &shown, kind, at) {
            Ok((snapshot, files)) => {
                self.snapshots.push(snapshot);
                self.files.extend(files);
            }
            Err(message) => self.errors.push(Error::Discover {
                path: key.clone(),
                message,
            }),
        }
        self.tables.push(key);
    }

    /// Whether `path`, which a glob matched or a PATH named, lies in a
    /// table (refused, [`Found::refuse`]) or is a table's log or metadata.
    fn in_table(&mut self, path: &Path) -> bool {
        for dir in path.ancestors().skip(1) {
            if dir.as_os_str().is_empty() {
                break;
            }
            let table = *self
                .table_dirs
                .entry(dir.to_path_buf())
                .or_insert_with(|| tables::Table::at(dir));
            if let Some(table) = table {
                self.refuse(dir.to_string_lossy().into_owned(), table);
                return true;
            }
        }
        path.is_file() && tables::not_data(path).is_some()
    }

    /// Files of a known format below `dir`, hidden entries skipped; a table
    /// met on the way is refused, and none of its files read.
    fn walk(&mut self, dir: &Path) {
        let mut walker = walkdir::WalkDir::new(dir)
            .follow_links(true)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
        while let Some(entry) = walker.next() {
            match entry {
                Ok(e) if e.file_type().is_dir() => {
                    match tables::Table::at(e.path()) {
                        Some(kind) => self.table(e.path(), e.path(), kind, self.table_at),
                        None => continue,
                    }
                    walker.skip_current_dir();
                }
                // A dataset index: the files it lists that are not there.
                Ok(e) if e.file_type().is_file() && e.file_name() == "index.json" => {
                    let d = e.path().parent().unwrap_or(dir);
                    self.errors
                        .extend(crate::source::listed_but_missing(d).into_iter().map(|(path, message)| {
                            Error::Discover {
                                path: path.to_string_lossy().into_owned(),
                                message,
                            }
                        }));
                }
                Ok(e) if e.file_type().is_file() => {
                    let p = e.into_path();
                    if !self.unlisted_arrow(&p) {
                        self.add(p);
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    let path = e.path().unwrap_or(dir).to_string_lossy().into_owned();
                    let message = if e.loop_ancestor().is_some() {
                        "symbolic link loop".to_string()
                    } else {
                        e.io_error().map_or_else(|| e.to_string(), |io| io.to_string())
                    };
                    self.errors.push(Error::Discover { path, message });
                }
            }
        }
    }
}

/// The shards of each format, all kept when one of them has a column in
/// `columns` (first samples looked at before whole shards, each look
/// stopping at the first shard that has one), else all dropped.
fn keep_shard_sets(mut shards: Vec<(Format, usize, DataFile)>, columns: &[String]) -> Vec<(usize, DataFile)> {
    // Deterministic whatever the PATH order: by the name reports show.
    shards.sort_by(|a, b| a.2.display.cmp(&b.2.display));
    let mut formats: Vec<Format> = Vec::new();
    for s in &shards {
        if !formats.contains(&s.0) {
            formats.push(s.0);
        }
    }
    let mut kept = Vec::new();
    for format in formats {
        let set: Vec<&(Format, usize, DataFile)> = shards.iter().filter(|s| s.0 == format).collect();
        let has = |deep: bool| {
            set.iter()
                .any(|s| format.provides(&s.2.path, columns, deep).unwrap_or(true))
        };
        if has(false) || has(true) {
            kept.extend(set.iter().map(|s| (s.1, s.2.clone())));
        }
    }
    kept
}

/// By the name reports show (byte-wise; for UTF-8 paths, the path's own
/// bytes), so that partial results can merge by name.
pub(super) fn sort(files: &mut Vec<DataFile>) {
    files.par_sort_by(|a, b| {
        (a.display.as_bytes(), a.path.as_os_str().as_encoded_bytes())
            .cmp(&(b.display.as_bytes(), b.path.as_os_str().as_encoded_bytes()))
    });
    files.dedup_by(|a, b| a.display == b.display && a.path == b.path);
}
