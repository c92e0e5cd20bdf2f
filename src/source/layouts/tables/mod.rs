//! Lakehouse tables (Delta Lake, Apache Iceberg) as a search meets them.
//!
//! Why a room of its own: a table's folder is not a pile of Parquet files.
//! Its log or metadata decides which files are live (an overwrite leaves
//! the old ones in place), which rows are deleted (deletion vectors,
//! position and equality deletes) and the values of partition columns
//! (stored in no data file). A table, on disk or in object storage, is
//! read as one snapshot (`delta`, `iceberg`); a plan's units find their
//! files again by the table and snapshot they pin ([`TableRef`]). Log and
//! metadata files are never taken for data, and a folder inside a table is
//! an error naming the table, none of its files read.

pub(crate) mod delta;
pub(crate) mod iceberg;
mod view;

use std::path::Path;

pub(crate) use crate::source::format::TableAt;

/// A table a run read as one snapshot, as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct TableSnapshot {
    /// The table's root, as the PATH named it.
    pub path: String,
    /// `delta` or `iceberg`.
    pub format: String,
    /// The snapshot's version: Delta's table version, or the version of
    /// the Iceberg metadata file read (`vN.metadata.json`,
    /// `0000N-<uuid>.metadata.json`).
    pub version: u64,
    /// Iceberg's snapshot id; Delta has none (null).
    pub snapshot_id: Option<u64>,
    /// Live data files of the snapshot.
    pub files: u64,
}

/// Where a data file of a plan's unit is found again: its table pinned at
/// the snapshot the plan read, so every unit of one plan reads one
/// snapshot, whatever a writer commits meanwhile.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TableRef {
    /// The table's root, to open (a folder or a URL); for Iceberg, the
    /// metadata file read.
    pub root: std::path::PathBuf,
    /// The table's root as reports name it.
    pub shown: String,
    /// The version the plan read (Delta's, or the Iceberg metadata file's).
    pub version: u64,
    /// The Iceberg snapshot the plan read; `None` for a Delta table.
    #[serde(default)]
    pub snapshot_id: Option<u64>,
}

impl TableRef {
    /// The table and the snapshot it pins: `dt at version 2`, `t at
    /// snapshot 8141…`.
    pub(crate) fn named(&self) -> String {
        match self.snapshot_id {
            Some(id) => format!("{} at snapshot {id}", self.shown),
            None => format!("{} at version {}", self.shown, self.version),
        }
    }

    /// [`TableRef::named`] with the table's kind.
    pub(crate) fn describe(&self) -> String {
        match self.snapshot_id {
            Some(_) => format!("Apache Iceberg table {}", self.named()),
            None => format!("Delta Lake table {}", self.named()),
        }
    }
}

/// A snapshot as the report shows it, and its live data files; or why it
/// cannot be read.
pub(crate) type Snapshot = Result<(TableSnapshot, Vec<super::discover::DataFile>), String>;

/// The snapshot `table` pins, read again.
pub(crate) fn reopen(table: &TableRef) -> Snapshot {
    let (kind, at) = match table.snapshot_id {
        Some(id) => (Table::Iceberg, TableAt::Snapshot(id)),
        None => (Table::Delta, TableAt::Version(table.version)),
    };
    read(&table.root, &table.shown, kind, Some(at))
}

/// The snapshot of table `kind` at `root` (shown as `shown`): the latest,
/// or the one `at` picks. A snapshot without data files is an error: a
/// gate must not pass a table it found nothing to check in.
pub(crate) fn read(root: &Path, shown: &str, kind: Table, at: Option<TableAt>) -> Snapshot {
    // A panic on a hostile log or metadata is the table's error.
    let (snapshot, files) = crate::source::read::guarded(|| {
        let read = match kind {
            Table::Delta => delta::read(root, shown, at).map(|r| (r.version, None, r.files)),
            Table::Iceberg => iceberg::read(root, shown, at).map(|r| (r.version, r.snapshot_id, r.files)),
        };
        let (version, snapshot_id, files) = read.map_err(crate::error::ReadError::new)?;
        let snapshot = TableSnapshot {
            path: shown.to_string(),
            format: kind.name().into(),
            version,
            snapshot_id,
            files: files.len() as u64,
        };
        Ok((snapshot, files))
    })
    .map_err(|e| e.to_string())?;
    if files.is_empty() {
        return Err(match (kind, snapshot.snapshot_id) {
            (Table::Delta, _) => format!(
                "an empty Delta Lake table: its snapshot (version {}) has no data files, so there is nothing to check",
                snapshot.version
            ),
            (Table::Iceberg, None) => format!(
                "an empty Apache Iceberg table: its metadata (version {}) has no current snapshot, so there is \
                 nothing to check",
                snapshot.version
            ),
            (Table::Iceberg, Some(id)) => {
                format!(
                    "an empty Apache Iceberg table: its snapshot {id} has no data files, so there is nothing to check"
                )
            }
        });
    }
    Ok((snapshot, files))
}

/// Which data files of a table in object storage are there, for those
/// whose table metrics settle a check and so are never opened
/// ([`view::Summarized`]): the sizes of the table's objects from listings
/// (not a request per file) of the folders holding them, side by side and
/// beside the reads of the files that are opened; unless a listing that
/// found the table already gave them, or one is already running.
fn list_unless_listed(root: &Path, files: &[super::discover::DataFile]) {
    use crate::source::storage::remote;
    // More folders than this: the table's root is listed whole instead.
    const FOLDERS: usize = 64;
    let root = format!("{}/", root.to_string_lossy().trim_end_matches('/'));
    // The folders holding the files not listed yet (partitions), none
    // inside another, listed at once.
    let mut holding: Vec<String> = files
        .iter()
        .filter(|f| remote::is_url(&f.path) && remote::listed_size(&f.path).is_none() && !remote::being_listed(&f.path))
        .filter_map(|f| {
            let url = f.path.to_str()?;
            Some(url[..url.rfind('/')? + 1].to_string())
        })
        .collect();
    if holding.is_empty() {
        return;
    }
    holding.sort();
    holding.dedup();
    let mut folders: Vec<String> = Vec::new();
    for f in holding {
        if !folders.last().is_some_and(|above| f.starts_with(above.as_str())) {
            folders.push(f);
        }
    }
    if folders.len() > FOLDERS || folders.iter().any(|f| !f.starts_with(&root)) {
        folders = vec![root];
    }
    // Listed while the files that must be read are: a file not yet known
    // to be there waits for it ([`view::Summarized`]).
    remote::list_below_later(folders, true);
}

/// Which kind of table a folder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Delta,
    Iceberg,
}

impl Table {
    /// The format's name in reports.
    fn name(self) -> &'static str {
        match self {
            Table::Delta => "delta",
            Table::Iceberg => "iceberg",
        }
    }

    /// The table `dir` is the root of, if any: Delta Lake when it holds a
    /// `_delta_log/` folder, Iceberg when it holds `metadata/` with a
    /// `version-hint.text` or a `*.metadata.json` file.
    pub(super) fn at(dir: &Path) -> Option<Table> {
        if dir.join("_delta_log").is_dir() {
            return Some(Table::Delta);
        }
        let metadata = dir.join("metadata");
        if metadata.join("version-hint.text").is_file() {
            return Some(Table::Iceberg);
        }
        let listed = std::fs::read_dir(&metadata).ok()?;
        listed
            .flatten()
            .any(|e| is_iceberg_metadata(&e.file_name().to_string_lossy()))
            .then_some(Table::Iceberg)
    }

    /// The table a listing's object key shows the root of: the part before
    /// `/_delta_log/` (Delta) or before `/metadata/` when the object is a
    /// `*.metadata.json` or `version-hint.text` (Iceberg).
    pub(super) fn root_of(key: &str) -> Option<(&str, Table)> {
        if let Some((root, _)) = key.split_once("/_delta_log/") {
            return Some((root, Table::Delta));
        }
        let (dir, name) = key.rsplit_once('/')?;
        let root = dir.strip_suffix("/metadata")?;
        (is_iceberg_metadata(name) || name == "version-hint.text").then_some((root, Table::Iceberg))
    }

    /// Why a folder or file met inside a table is not read apart from it.
    pub(super) fn refusal(self) -> String {
        let (kind, decides) = match self {
            Table::Delta => ("a Delta Lake table", "its _delta_log/"),
            Table::Iceberg => ("an Apache Iceberg table", "its metadata/"),
        };
        format!(
            "{kind} ({decides} decides which data files are live, which rows are deleted and the partition \
             columns' values): a folder or file inside it cannot be checked apart from it: name the table's \
             folder. None of its files was read"
        )
    }
}

/// A folder in storage as a search meets it.
pub(super) enum InStorage {
    /// A table's root: `read` is what its reader opens (the root, or the
    /// Iceberg metadata file of the version asked for, or the latest, that
    /// the listing of `metadata/` picked), `at` the snapshot.
    Table {
        read: std::path::PathBuf,
        kind: Table,
        at: Option<TableAt>,
    },
    /// Not a table's root: every object below it (hidden ones skipped).
    Objects(Vec<(String, u64)>),
}

/// The folder in storage `url` names (not a glob): a table's root when its
/// top level says so (`_delta_log/`, or `metadata/` holding an Iceberg
/// metadata file), known from one listing of that top level and, for
/// Iceberg, one of `metadata/`, so a table's data files are never listed
/// to find it; else its objects.
pub(super) fn in_storage(url: &str, at: Option<TableAt>) -> Result<InStorage, String> {
    use crate::source::storage::remote;
    let top = remote::list_folder(url)?;
    let root = url.trim_end_matches('/');
    let name = |u: &str| {
        u.trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    if top.folders.iter().any(|f| name(f) == "_delta_log") {
        return Ok(InStorage::Table {
            read: root.into(),
            kind: Table::Delta,
            at,
        });
    }
    if let Some(metadata) = top.folders.iter().find(|f| name(f) == "metadata") {
        let files: Vec<(String, std::path::PathBuf)> = remote::list_with_hidden(metadata)?
            .into_iter()
            .filter(|(u, _)| {
                u.strip_prefix(metadata.as_str())
                    .is_some_and(|name| !name.contains('/'))
            })
            .map(|(u, _)| (name(&u), std::path::PathBuf::from(u)))
            .collect();
        if files
            .iter()
            .any(|(n, _)| is_iceberg_metadata(n) || n == "version-hint.text")
        {
            let version = match at {
                Some(TableAt::Version(v)) => Some(v),
                _ => None,
            };
            return Ok(match iceberg::metadata::pick(files, version) {
                // The file picked is read as if named: the listing is not
                // repeated.
                Ok((file, _)) => InStorage::Table {
                    read: file,
                    kind: Table::Iceberg,
                    at,
                },
                // The reader says why, naming the table.
                Err(_) => InStorage::Table {
                    read: root.into(),
                    kind: Table::Iceberg,
                    at,
                },
            });
        }
    }
    // A few sub-folders are listed side by side; many (a dataset
    // partitioned by folders) by one listing of the whole prefix, so the
    // requests stay as few as the listing's pages.
    const SIDE_BY_SIDE: usize = 16;
    let hidden = |u: &str| name(u).starts_with('.');
    let folders: Vec<String> = top.folders.iter().filter(|f| !hidden(f)).cloned().collect();
    if folders.len() > SIDE_BY_SIDE {
        return remote::list(&format!("{root}/")).map(InStorage::Objects);
    }
    let mut found: Vec<(String, u64)> = top.objects.into_iter().filter(|(u, _)| !hidden(u)).collect();
    found.extend(remote::list_below(&folders, false)?);
    found.sort();
    Ok(InStorage::Objects(found))
}

/// A PATH naming a version of a table, `TABLE@vN`, when `TABLE` is one and
/// the PATH itself names nothing: the table's folder, kind and `N`.
pub(super) fn versioned(arg: &Path) -> Option<(std::path::PathBuf, Table, u64)> {
    if arg.exists() {
        return None;
    }
    let (root, version) = split_version(arg.to_str()?)?;
    let root = Path::new(root);
    Table::at(root).map(|t| (root.to_path_buf(), t, version))
}

/// A URL naming a version of a table in storage, `TABLE@vN`, when
/// `TABLE/_delta_log/` or `TABLE/metadata/` holds objects: the table's
/// URL, kind and `N`.
pub(super) fn versioned_url(url: &str) -> Option<(&str, Table, u64)> {
    let (root, version) = split_version(url)?;
    let base = root.trim_end_matches('/');
    for (folder, table) in [("_delta_log", Table::Delta), ("metadata", Table::Iceberg)] {
        let listed = crate::source::storage::remote::list_with_hidden(&format!("{base}/{folder}/")).ok()?;
        if !listed.is_empty() {
            return Some((root, table, version));
        }
    }
    None
}

/// `TABLE@vN` as `TABLE` and `N`.
fn split_version(text: &str) -> Option<(&str, u64)> {
    let (root, version) = text.rsplit_once("@v")?;
    if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((root, version.parse().ok()?))
}

/// Whether a file named `name` is an Iceberg table's metadata file
/// (`v3.metadata.json`, `00002-<uuid>.metadata.json`, gzipped or not).
pub(super) fn is_iceberg_metadata(name: &str) -> bool {
    name.ends_with(".metadata.json") || name.ends_with(".metadata.json.gz") || name.ends_with(".gz.metadata.json")
}

/// The Iceberg table a named metadata file (`TABLE/metadata/vN.metadata.json`)
/// is read as: the table's root.
pub(super) fn metadata_file(path: &Path) -> Option<&Path> {
    let name = path.file_name()?.to_string_lossy();
    let dir = path.parent()?;
    (is_iceberg_metadata(&name) && dir.file_name()? == "metadata").then(|| dir.parent())?
}

/// Why a named file is not data: a Delta log entry or checkpoint, or an
/// Iceberg manifest or manifest list (a metadata file is read as its
/// table, [`metadata_file`]).
pub(super) fn not_data(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    let parent = path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy());
    let table = match path.parent().and_then(Path::parent) {
        Some(r) if !r.as_os_str().is_empty() => format!("the table is {}", r.display()),
        _ => "name the table's folder".to_string(),
    };
    match parent.as_deref() {
        Some("_delta_log") => Some(format!("a file of a Delta Lake table's log, not data; {table}")),
        Some("metadata") if name.ends_with(".avro") || name == "version-hint.text" => Some(format!(
            "a file of an Apache Iceberg table's metadata, not data; {table}"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_from_object_keys() {
        assert_eq!(
            Table::root_of("s3://b/t/_delta_log/00000000000000000000.json"),
            Some(("s3://b/t", Table::Delta))
        );
        assert_eq!(
            Table::root_of("s3://b/w/db/t/metadata/00001-ab.metadata.json"),
            Some(("s3://b/w/db/t", Table::Iceberg))
        );
        assert_eq!(
            Table::root_of("s3://b/w/db/t/metadata/version-hint.text"),
            Some(("s3://b/w/db/t", Table::Iceberg))
        );
        // An Iceberg manifest alone names no root; the metadata file does.
        assert_eq!(Table::root_of("s3://b/w/db/t/metadata/snap-1.avro"), None);
        assert_eq!(Table::root_of("s3://b/data/metadata.parquet"), None);
        assert_eq!(Table::root_of("s3://b/data/train.parquet"), None);
    }

    #[test]
    fn log_and_metadata_files_are_not_data() {
        assert!(not_data(Path::new("t/_delta_log/00000000000000000001.json")).is_some());
        assert!(not_data(Path::new("t/metadata/snap-1-0-ab.avro")).is_some());
        assert!(not_data(Path::new("t/metadata/v2.metadata.json")).is_none());
        assert!(not_data(Path::new("t/part-0.parquet")).is_none());
        assert!(not_data(Path::new("coco/instances.json")).is_none());
    }
}
