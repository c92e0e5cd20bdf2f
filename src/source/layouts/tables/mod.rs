//! Lakehouse tables (Delta Lake, Apache Iceberg) as a search meets them.
//!
//! Why a room of its own: a table's folder is not a pile of Parquet files.
//! Its log or metadata decides which files are live (an overwrite leaves
//! the old ones in place), which rows are deleted (deletion vectors,
//! position and equality deletes) and the values of partition columns
//! (stored in no data file). A Delta table, on disk or in object storage,
//! is read as its snapshot (`delta`); a plan's units find their files
//! again by the table and version they pin ([`TableRef`]). A table
//! preflight cannot read that way (Iceberg) is an error naming it (exit 2),
//! and none of its files is read. Log and metadata files are never taken
//! for data.

pub(crate) mod delta;
mod view;

use std::path::Path;

pub(crate) use crate::source::format::TableAt;

/// A table a run read as one snapshot, as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct TableSnapshot {
    /// The table's root, as the PATH named it.
    pub path: String,
    /// `delta` (Iceberg tables are refused).
    pub format: String,
    /// The snapshot's version.
    pub version: u64,
    /// Iceberg's snapshot id; Delta has none (null).
    pub snapshot_id: Option<u64>,
    /// Live data files of the snapshot.
    pub files: u64,
}

/// Where a data file of a plan's unit is found again: its table pinned at
/// the version the plan read, so every unit of one plan reads one
/// snapshot, whatever a writer commits meanwhile.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct TableRef {
    /// The table's root, to open (a folder or a URL).
    pub root: std::path::PathBuf,
    /// The root as reports name it.
    pub shown: String,
    /// The Delta version the plan read.
    pub version: u64,
}

/// A pinned snapshot read again: as the report shows it, and its live
/// data files; or why it cannot be read.
pub(crate) type Reopened = Result<(TableSnapshot, Vec<super::discover::DataFile>), String>;

/// The snapshot `table` pins, read again.
pub(crate) fn reopen(table: &TableRef) -> Reopened {
    let at = Some(TableAt::Version(table.version));
    let read = crate::source::read::guarded(|| {
        delta::read(&table.root, &table.shown, at).map_err(crate::error::ReadError::new)
    })
    .map_err(|e| e.to_string())?;
    let snapshot = TableSnapshot {
        path: table.shown.clone(),
        format: "delta".into(),
        version: read.version,
        snapshot_id: None,
        files: read.files.len() as u64,
    };
    Ok((snapshot, read.files))
}

/// Which kind of table a folder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Table {
    Delta,
    Iceberg,
}

impl Table {
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

    /// Why a table met where it cannot be read as its snapshot (`met`: at
    /// its root, or inside it) is not read as files.
    pub(super) fn refusal(self, met: Met) -> String {
        let (kind, decides) = match self {
            Table::Delta => (
                "a Delta Lake table",
                "its _delta_log/ decides which data files are live, which rows are deleted and the \
                 partition columns' values",
            ),
            Table::Iceberg => (
                "an Apache Iceberg table",
                "its metadata/ decides which data files are live, which rows are deleted and the \
                 partition columns' values",
            ),
        };
        let why = match (self, met) {
            (Table::Delta, _) => "a folder or file inside it cannot be checked apart from it: name the table's folder",
            (Table::Iceberg, _) => {
                "preflight does not read Iceberg snapshots yet; check the snapshot written out as \
                 Parquet (table.scan().to_arrow())"
            }
        };
        format!("{kind} ({decides}): {why}. None of its files was read")
    }
}

/// A PATH naming a version of a Delta table, `TABLE@vN`, when `TABLE` is
/// one and the PATH itself names nothing: the table's folder and `N`.
pub(super) fn versioned(arg: &Path) -> Option<(std::path::PathBuf, u64)> {
    if arg.exists() {
        return None;
    }
    let text = arg.to_str()?;
    let (root, version) = text.rsplit_once("@v")?;
    if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let root = Path::new(root);
    (Table::at(root) == Some(Table::Delta)).then(|| version.parse().ok().map(|v| (root.to_path_buf(), v)))?
}

/// A URL naming a version of a Delta table in storage, `TABLE@vN`, when
/// `TABLE/_delta_log/` holds objects: the table's URL and `N`.
pub(super) fn versioned_url(url: &str) -> Option<(&str, u64)> {
    let (root, version) = url.rsplit_once("@v")?;
    if version.is_empty() || !version.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let version = version.parse().ok()?;
    let log = format!("{}/_delta_log/", root.trim_end_matches('/'));
    let listed = crate::source::storage::remote::list_with_hidden(&log).ok()?;
    (!listed.is_empty()).then_some((root, version))
}

/// Where a search met a table it cannot read as a snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Met {
    /// A PATH or a listing names the table's root.
    Root,
    /// A PATH or a glob's match lies inside the table.
    Inside,
}

/// Whether a file named `name` is an Iceberg table's metadata file
/// (`v3.metadata.json`, `00002-<uuid>.metadata.json`, gzipped or not).
pub(super) fn is_iceberg_metadata(name: &str) -> bool {
    name.ends_with(".metadata.json") || name.ends_with(".metadata.json.gz") || name.ends_with(".gz.metadata.json")
}

/// Why a named file is not data: a Delta log entry or checkpoint, or an
/// Iceberg metadata file.
pub(super) fn not_data(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_string_lossy();
    let parent = path.parent().and_then(Path::file_name).map(|n| n.to_string_lossy());
    if parent.as_deref() == Some("_delta_log") {
        let root = path.parent().and_then(Path::parent);
        return Some(format!(
            "a file of a Delta Lake table's log, not data; {}",
            match root {
                Some(r) if !r.as_os_str().is_empty() => format!("the table is {}", r.display()),
                _ => "name the table's folder".to_string(),
            }
        ));
    }
    is_iceberg_metadata(&name).then(|| Table::Iceberg.refusal(Met::Inside))
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
        assert!(not_data(Path::new("t/metadata/v2.metadata.json")).is_some());
        assert!(not_data(Path::new("t/part-0.parquet")).is_none());
        assert!(not_data(Path::new("coco/instances.json")).is_none());
    }
}
