//! An Iceberg table's metadata file: which one is current, and what of it a
//! scan needs (schemas, partition specs, snapshots, the snapshot log, the
//! name mapping), as the spec's "Table Metadata" defines it for format
//! versions 1 to 3.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use crate::source::storage;

/// The largest metadata file read.
const MAX_METADATA: u64 = 256 << 20;

/// A table column (a top-level field of a schema).
#[derive(Debug, Clone)]
pub(super) struct Column {
    pub id: i32,
    pub name: String,
    /// The Iceberg type: a primitive's name (`long`, `decimal(9, 2)`), or
    /// `None` for a struct, list or map.
    pub primitive: Option<String>,
    pub required: bool,
}

/// A partition field.
#[derive(Debug, Clone)]
pub(super) struct PartitionField {
    pub source_id: i32,
    pub field_id: i32,
    pub transform: String,
}

#[derive(Debug, Clone)]
pub(super) struct Snapshot {
    pub id: i64,
    pub manifest_list: Option<String>,
    /// A v1 snapshot's manifests, listed inline (no manifest list).
    pub manifests: Vec<String>,
    pub schema_id: Option<i64>,
}

#[derive(Debug)]
pub(super) struct Metadata {
    pub format_version: i64,
    pub location: String,
    pub schemas: HashMap<i64, Vec<Column>>,
    pub current_schema_id: i64,
    pub specs: HashMap<i32, Vec<PartitionField>>,
    pub snapshots: Vec<Snapshot>,
    pub current_snapshot_id: Option<i64>,
    /// (snapshot id, milliseconds) of each snapshot that was current.
    pub snapshot_log: Vec<(i64, i64)>,
    /// `schema.name-mapping.default`: the names a top-level field id was
    /// written under, for data files without field ids.
    pub name_mapping: HashMap<i32, Vec<String>>,
    /// Whether properties put new data files elsewhere than the default
    /// `data/` below the table's location.
    pub data_elsewhere: bool,
}

impl Metadata {
    pub(super) fn snapshot(&self, id: i64) -> Option<&Snapshot> {
        self.snapshots.iter().find(|s| s.id == id)
    }

    /// The columns an older snapshot is read with, picked by id or time:
    /// its own schema's, as Java and PyIceberg read it, else the current
    /// schema's.
    pub(super) fn columns_of(&self, snapshot: &Snapshot) -> Result<&[Column], String> {
        match snapshot.schema_id.and_then(|id| self.schemas.get(&id)) {
            Some(columns) => Ok(columns),
            None => self.current_columns(),
        }
    }

    /// The current schema's columns.
    pub(super) fn current_columns(&self) -> Result<&[Column], String> {
        self.schemas
            .get(&self.current_schema_id)
            .map(Vec::as_slice)
            .ok_or_else(|| {
                format!(
                    "the metadata has no schema {} (current-schema-id)",
                    self.current_schema_id
                )
            })
    }
}

/// The version a metadata file's name gives: `v12.metadata.json` and
/// `00012-<uuid>.metadata.json` (gzipped or not) are version 12.
pub(super) fn version_of(name: &str) -> Option<u64> {
    let stem = name
        .strip_suffix(".gz.metadata.json")
        .or_else(|| name.strip_suffix(".metadata.json.gz"))
        .or_else(|| name.strip_suffix(".metadata.json"))?;
    let digits = match stem.strip_prefix('v') {
        Some(n) => n,
        None => stem.split_once('-')?.0,
    };
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The metadata file of `root` (a table's folder or URL) at `version`, or
/// the latest: the highest version among `metadata/`'s metadata files (a
/// `version-hint.text` names one no later, and writers probe past it too).
/// Two files of one version (a commit that lost a race) are an error
/// naming them.
pub(super) fn find(root: &Path, version: Option<u64>) -> Result<(PathBuf, u64), String> {
    let remote = storage::remote::is_url(root);
    let names: Vec<(String, PathBuf)> = if remote {
        let dir = format!("{}/metadata/", root.to_string_lossy().trim_end_matches('/'));
        storage::remote::list_with_hidden(&dir)?
            .into_iter()
            .filter_map(|(url, _)| {
                let name = url.rsplit('/').next()?.to_string();
                Some((name, PathBuf::from(url)))
            })
            .collect()
    } else {
        let dir = root.join("metadata");
        std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: {e}", dir.display()))?
            .flatten()
            .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
            .collect()
    };
    pick(names, version)
}

/// The metadata file of `version`, or the latest, among the files (name,
/// path) of a table's `metadata/` folder; as [`find`].
pub(in crate::source::layouts::tables) fn pick(
    names: Vec<(String, PathBuf)>,
    version: Option<u64>,
) -> Result<(PathBuf, u64), String> {
    let mut found: Vec<(u64, String, PathBuf)> = names
        .into_iter()
        .filter_map(|(name, path)| version_of(&name).map(|v| (v, name, path)))
        .collect();
    found.sort();
    let want = match version {
        Some(v) => v,
        None => found
            .last()
            .map(|f| f.0)
            .ok_or("its metadata/ folder holds no metadata file (vN.metadata.json or NNNNN-<uuid>.metadata.json)")?,
    };
    let mut of: Vec<_> = found.into_iter().filter(|f| f.0 == want).collect();
    match of.len() {
        0 => Err(format!("the table has no metadata file of version {want}")),
        1 => {
            let (v, _, path) = of.remove(0);
            Ok((path, v))
        }
        _ => Err(format!(
            "version {want} has {} metadata files ({}), as a commit that lost a race leaves behind: name the \
             table's current one as the PATH",
            of.len(),
            of.iter().map(|f| f.1.as_str()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// Reads and parses a metadata file (gzipped or not, by its bytes).
pub(super) fn load(path: &Path) -> Result<Metadata, String> {
    let bytes = storage::read_whole(path, MAX_METADATA, |n| {
        crate::error::ReadError::new(format!("a metadata file of {n} bytes"))
    })
    .map_err(|e| format!("{}: {e}", path.display()))?;
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(&bytes[..])
            .take(MAX_METADATA + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("{}: not gzip: {e}", path.display()))?;
        out
    } else {
        bytes.to_vec()
    };
    let json: Json = serde_json::from_slice(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    parse(&json).map_err(|e| format!("{}: {e}", path.display()))
}

fn parse(json: &Json) -> Result<Metadata, String> {
    let format_version = json
        .get("format-version")
        .and_then(Json::as_i64)
        .ok_or("no format-version")?;
    if !(1..=3).contains(&format_version) {
        return Err(format!(
            "Iceberg format version {format_version}: preflight reads versions 1 to 3"
        ));
    }
    let location = json
        .get("location")
        .and_then(Json::as_str)
        .ok_or("no location")?
        .trim_end_matches('/')
        .to_string();
    let mut schemas = HashMap::new();
    for s in json.get("schemas").and_then(Json::as_array).into_iter().flatten() {
        schemas.insert(s.get("schema-id").and_then(Json::as_i64).unwrap_or(0), columns(s)?);
    }
    let mut current_schema_id = json.get("current-schema-id").and_then(Json::as_i64).unwrap_or(0);
    if schemas.is_empty() {
        // v1: a single `schema`.
        let s = json.get("schema").ok_or("no schema")?;
        current_schema_id = s.get("schema-id").and_then(Json::as_i64).unwrap_or(0);
        schemas.insert(current_schema_id, columns(s)?);
    }
    let mut specs = HashMap::new();
    for s in json
        .get("partition-specs")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
    {
        let id = s.get("spec-id").and_then(Json::as_i64).unwrap_or(0) as i32;
        specs.insert(id, partition_fields(s.get("fields"))?);
    }
    if specs.is_empty() {
        specs.insert(0, partition_fields(json.get("partition-spec"))?);
    }
    let mut snapshots = Vec::new();
    for s in json.get("snapshots").and_then(Json::as_array).into_iter().flatten() {
        snapshots.push(Snapshot {
            id: s
                .get("snapshot-id")
                .and_then(Json::as_i64)
                .ok_or("a snapshot has no id")?,
            manifest_list: s.get("manifest-list").and_then(Json::as_str).map(str::to_string),
            manifests: s
                .get("manifests")
                .and_then(Json::as_array)
                .into_iter()
                .flatten()
                .filter_map(|m| m.as_str().map(str::to_string))
                .collect(),
            schema_id: s.get("schema-id").and_then(Json::as_i64),
        });
    }
    // Absent, null or -1: no current snapshot (an empty table).
    let current_snapshot_id = json
        .get("current-snapshot-id")
        .and_then(Json::as_i64)
        .filter(|&id| id != -1);
    let snapshot_log = json
        .get("snapshot-log")
        .and_then(Json::as_array)
        .into_iter()
        .flatten()
        .filter_map(|e| Some((e.get("snapshot-id")?.as_i64()?, e.get("timestamp-ms")?.as_i64()?)))
        .collect();
    let name_mapping = json
        .get("properties")
        .and_then(|p| p.get("schema.name-mapping.default"))
        .and_then(Json::as_str)
        .and_then(|m| serde_json::from_str::<Json>(m).ok())
        .and_then(|m| m.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|f| {
            let id = i32::try_from(f.get("field-id")?.as_i64()?).ok()?;
            let names = f.get("names")?.as_array()?;
            Some((
                id,
                names.iter().filter_map(|n| n.as_str().map(str::to_string)).collect(),
            ))
        })
        .collect();
    let data_elsewhere = [
        "write.data.path",
        "write.folder-storage.path",
        "write.object-storage.path",
    ]
    .iter()
    .any(|k| json.get("properties").and_then(|p| p.get(k)).is_some());
    Ok(Metadata {
        format_version,
        location,
        schemas,
        current_schema_id,
        specs,
        snapshots,
        current_snapshot_id,
        snapshot_log,
        name_mapping,
        data_elsewhere,
    })
}

fn columns(schema: &Json) -> Result<Vec<Column>, String> {
    let fields = schema
        .get("fields")
        .and_then(Json::as_array)
        .ok_or("a schema has no fields")?;
    fields
        .iter()
        .map(|f| {
            Ok(Column {
                id: f
                    .get("id")
                    .and_then(Json::as_i64)
                    .and_then(|i| i32::try_from(i).ok())
                    .ok_or("a schema field has no id")?,
                name: f
                    .get("name")
                    .and_then(Json::as_str)
                    .ok_or("a schema field has no name")?
                    .to_string(),
                primitive: f.get("type").and_then(Json::as_str).map(str::to_string),
                required: f.get("required").and_then(Json::as_bool).unwrap_or(false),
            })
        })
        .collect()
}

fn partition_fields(fields: Option<&Json>) -> Result<Vec<PartitionField>, String> {
    let mut out = Vec::new();
    for (i, f) in fields.and_then(Json::as_array).into_iter().flatten().enumerate() {
        let source_id = f
            .get("source-id")
            .or_else(|| f.get("source-ids").and_then(|s| s.get(0)))
            .and_then(Json::as_i64)
            .ok_or("a partition field has no source-id")?;
        out.push(PartitionField {
            source_id: source_id as i32,
            // v1 specs may omit field ids: Java assigns 1000, 1001, ...
            field_id: f
                .get("field-id")
                .and_then(Json::as_i64)
                .map_or(1000 + i as i32, |i| i as i32),
            transform: f.get("transform").and_then(Json::as_str).unwrap_or("").to_string(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_from_names() {
        assert_eq!(version_of("v3.metadata.json"), Some(3));
        assert_eq!(version_of("v12.gz.metadata.json"), Some(12));
        assert_eq!(
            version_of("00007-6a1b2c3d-0000-4000-8000-000000000000.metadata.json"),
            Some(7)
        );
        assert_eq!(version_of("00001-x.metadata.json.gz"), Some(1));
        assert_eq!(version_of("snap-1-0-x.avro"), None);
        assert_eq!(version_of("version-hint.text"), None);
        assert_eq!(version_of("v.metadata.json"), None);
    }
}
