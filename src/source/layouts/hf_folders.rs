//! Hugging Face `datasets` folders as a directory search meets them: a
//! `save_to_disk` folder is read as `load_from_disk` reads it (the files
//! its `state.json` lists), a `load_dataset` cache folder as the dataset its
//! index mapping defines when that can be told, and index mappings
//! elsewhere are row orders, not data. Reading a mapping is the IPC
//! format's ([`crate::source::formats::ipc::datasets`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::discover::DataFile;
use crate::error::Error;
use crate::source::formats::ipc::datasets;

/// A Hugging Face `save_to_disk` folder: the files its `state.json` lists
/// (`_data_files`), which are all `load_from_disk` reads.
struct SavedFolder {
    listed: Vec<String>,
    /// `.arrow` files a search met there that the list lacks.
    skipped: usize,
}

/// The `state.json` of `dir`, when it is a `save_to_disk` folder's.
fn saved_folder(dir: &Path) -> Option<SavedFolder> {
    datasets::saved_files(dir).map(|listed| SavedFolder { listed, skipped: 0 })
}

/// The `datasets` folders the searches of one run met.
#[derive(Default)]
pub(super) struct Folders {
    /// Each folder a search met `.arrow` files in, and whether it is a
    /// `save_to_disk` folder.
    saved: BTreeMap<PathBuf, Option<SavedFolder>>,
    /// Per folder in storage, the `datasets` index mappings (`cache-*.arrow`
    /// of a `shuffle` or `select`) a search skipped.
    mappings: BTreeMap<PathBuf, usize>,
    /// Per local `load_dataset` cache folder, the `.arrow` files a search
    /// met there, decided once it ends ([`Folders::decide_caches`]).
    caches: BTreeMap<PathBuf, Vec<PathBuf>>,
    /// Cache folders refused so far (an error each).
    refused: usize,
}

impl Folders {
    /// Cache folders refused so far.
    pub(super) fn refused(&self) -> usize {
        self.refused
    }

    /// A folder in storage holding a `cache-*.arrow` and no `state.json`
    /// (the listing says so: no request for it).
    pub(super) fn meet(&mut self, dir: PathBuf) {
        self.saved.entry(dir).or_insert(None);
    }

    /// Whether a search should skip `p`: an `.arrow` file in a
    /// `save_to_disk` folder whose `state.json` does not list it. `datasets`
    /// writes the cache files of `map`, `filter`, `shuffle` and `select`
    /// (`cache-*.arrow`; for `shuffle`/`select`, a single `indices` column)
    /// beside the files of a dataset loaded with `load_from_disk`, and
    /// `load_from_disk` reads only the files `state.json` lists. A listed
    /// file that is missing is an error, as `load_from_disk` fails on it.
    pub(super) fn skips(&mut self, p: &Path, columns: &[String], errors: &mut Vec<Error>) -> bool {
        if p.extension().and_then(|e| e.to_str()) != Some("arrow") {
            return false;
        }
        let (Some(dir), Some(name)) = (p.parent(), p.file_name().and_then(|n| n.to_str())) else {
            return false;
        };
        // A local `load_dataset` cache folder is decided as a whole.
        if !crate::source::storage::remote::is_url(p)
            && !columns.iter().any(|c| c == "indices")
            && datasets::is_cache_folder(dir)
        {
            self.caches.entry(dir.to_path_buf()).or_default().push(p.to_path_buf());
            return true;
        }
        if !self.saved.contains_key(dir) {
            let folder = saved_folder(dir);
            if let Some(f) = &folder {
                for listed in &f.listed {
                    let plain = !listed.is_empty() && !listed.contains(['/', '\\']) && listed != "." && listed != "..";
                    if !plain || !crate::source::storage::exists(&dir.join(listed)) {
                        errors.push(Error::Discover {
                            path: dir.join(listed).to_string_lossy().into_owned(),
                            message: "listed in state.json (_data_files) but missing from the folder: \
                                      load_from_disk fails on it"
                                .into(),
                        });
                    }
                }
            }
            self.saved.insert(dir.to_path_buf(), folder);
        }
        match self.saved.get_mut(dir) {
            Some(Some(f)) if !f.listed.iter().any(|l| l == name) => {
                f.skipped += 1;
                true
            }
            // Elsewhere (a `load_dataset` cache folder), an index mapping
            // of `shuffle`/`select` is no data, unless the schema asks for
            // its column.
            _ if name.starts_with("cache-")
                && !columns.iter().any(|c| c == "indices")
                && crate::source::formats::ipc::is_datasets_indices(p) =>
            {
                *self.mappings.entry(dir.to_path_buf()).or_default() += 1;
                true
            }
            _ => false,
        }
    }

    /// The `.arrow` files a search met in `load_dataset` cache folders: as
    /// found when the folder holds no index mapping; the dataset a lone
    /// mapping defines over the folder's only table, in place of that
    /// table; else nothing, and an error that says why (which mapping the
    /// training uses is in its code, not in the folder).
    pub(super) fn decide_caches(&mut self, files: &mut Vec<DataFile>, errors: &mut Vec<Error>) {
        for (dir, found) in std::mem::take(&mut self.caches) {
            let Some(datasets::Folder::Cache { mappings, tables }) = datasets::folder(&dir) else {
                files.extend(found.into_iter().map(DataFile::new));
                continue;
            };
            let names = |m: &[PathBuf]| -> String {
                let names: Vec<String> = m
                    .iter()
                    .map(|p| p.file_name().unwrap_or_default().to_string_lossy().into_owned())
                    .collect();
                names.join(", ")
            };
            let refuse = |why: String| Error::Discover {
                path: dir.to_string_lossy().into_owned(),
                message: format!(
                    "{why}; nothing in this folder was read: name the mapping of the dataset the training uses as PATH (its rows are then read as that dataset's, by index), or a data file to check it as stored"
                ),
            };
            if mappings.len() > 1 || (mappings.len() == 1 && tables.len() != 1) {
                self.refused += 1;
            }
            match (&mappings[..], datasets::cache_base(&tables)) {
                ([], _) => files.extend(found.into_iter().map(DataFile::new)),
                ([m], Ok(_)) => files.push(DataFile::new(m.clone())),
                ([m], Err(why)) => errors.push(refuse(format!(
                    "a datasets index mapping here ({}), and {why}",
                    names(std::slice::from_ref(m))
                ))),
                (many, _) => errors.push(refuse(format!(
                    "{} datasets index mappings here ({}): each is a dataset (a filter, shuffle, sort, select or train_test_split of the loaded data; train_test_split writes two), and which one the training uses is written nowhere in the folder",
                    many.len(),
                    names(many)
                ))),
            }
        }
    }

    /// What the run is told about the folders: `.arrow` files skipped in
    /// `save_to_disk` folders and index mappings skipped, as notes; a folder
    /// in storage holding mappings is not read (its files are dropped and it
    /// is an error).
    pub(super) fn finish(self, files: &mut Vec<DataFile>, errors: &mut Vec<Error>) -> Vec<(String, String)> {
        let mut notes: Vec<(String, String)> = self
            .saved
            .into_iter()
            .filter_map(|(dir, s)| {
                let s = s?;
                (s.skipped > 0).then(|| {
                    (
                        dir.to_string_lossy().into_owned(),
                        format!(
                            "{} .arrow file(s) here that state.json does not list were skipped (datasets cache \
                             files such as cache-*.arrow from map/filter/shuffle/select, which load_from_disk \
                             never reads); name one on the command line to check it",
                            s.skipped
                        ),
                    )
                })
            })
            .collect();
        for (dir, n) in self.mappings {
            let shown = dir.to_string_lossy().into_owned();
            if crate::source::storage::remote::is_url(&dir) {
                // The dataset is the mapping applied to this folder's data,
                // which is read only from a disk: its stored rows are not the
                // dataset's, so nothing here is judged.
                files.retain(|f| f.path.parent() != Some(dir.as_path()));
                errors.push(Error::Discover {
                    path: shown,
                    message: format!(
                        "{n} datasets index mapping(s) here (cache-*.arrow holding only an `indices` column, \
                         written by filter/shuffle/sort/select/train_test_split): the dataset is a mapping \
                         applied to the data files, which preflight applies only to a folder on a local disk; \
                         nothing in this folder was read: check a local copy, or the Dataset with the Python \
                         API's Validator.check_dataset"
                    ),
                });
                continue;
            }
            notes.push((
                shown,
                format!(
                    "{n} datasets index mapping(s) skipped (cache-*.arrow holding only an `indices` column, \
                     written by shuffle/select/sort/train_test_split: a row order over the data files here, \
                     not data)"
                ),
            ));
        }
        notes
    }
}
