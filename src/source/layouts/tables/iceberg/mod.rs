//! An Apache Iceberg table's snapshot as data files: its metadata file,
//! the snapshot's manifest list and manifests give the live data files
//! with their partition values and sequence numbers, and the delete files
//! that apply to each (position deletes, deletion vectors, equality
//! deletes); each data file is then read by preflight's Parquet reader
//! through [`TableFile`], its columns found by Iceberg field id.
//!
//! Why not the Apache Iceberg project's `iceberg` crate: its newest release
//! (0.10) is built on arrow and parquet 58, a second copy of both beside
//! the 60 this crate uses, in a build whose CI time is near its ceiling.
//! What a scan needs of the spec (metadata JSON, two Avro files, the
//! delete rules) is small, and the data files go through the reader every
//! other Parquet file does.

mod avro;
mod deletes;
pub(super) mod metadata;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::ArrayRef;

use super::TableAt;
use super::view::{Column, Summarized, TableFile};
use crate::error::ReadError;
use crate::source::Hints;
use crate::source::layouts::discover::{DataFile, Opener, Opens};
use crate::source::read::Source;
use crate::source::storage;
use deletes::Delete;

/// At most this many bytes of a table's manifests in object storage are in
/// flight or being decoded at once, each counted at its
/// [`Manifest::limit`] (so at most 256 manifests at once).
const MANIFEST_BYTES: u64 = 256 << 20;

/// The largest manifest list or manifest read.
const MAX_MANIFEST: u64 = 512 << 20;

/// The snapshot a check read: the metadata file's version, the snapshot's
/// id (`None` for a table without one: empty) and its live data files.
pub(crate) struct Read {
    pub version: u64,
    pub snapshot_id: Option<u64>,
    pub files: Vec<DataFile>,
}

/// What every data file of one snapshot shares.
#[derive(Debug)]
struct Table {
    columns: Vec<metadata::Column>,
    /// For each identity-partitioned column (by field id), its partition
    /// field id in each spec.
    identity: HashMap<i32, HashMap<i32, i32>>,
    name_mapping: HashMap<i32, Vec<String>>,
    pinned: super::TableRef,
}

/// Reads a snapshot of the Iceberg table at `root`: a local folder or URL
/// holding `metadata/`, or one of its metadata files (shown as `shown` in
/// reports). The current snapshot, or the one `at` picks: a metadata
/// file's version, a time in the snapshot log, a snapshot id.
pub(crate) fn read(root: &Path, shown: &str, at: Option<TableAt>) -> Result<Read, String> {
    let remote = storage::remote::is_url(root);
    let named = root
        .file_name()
        .is_some_and(|n| super::is_iceberg_metadata(&n.to_string_lossy()));
    let (table_root, metadata_file, version) = if named {
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if let Some(TableAt::Version(v)) = at
            && metadata::version_of(&name) != Some(v)
        {
            return Err("a metadata file names its version: name the table's folder to pick another".into());
        }
        let table_root = root
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_default();
        (table_root, root.to_path_buf(), metadata::version_of(&name).unwrap_or(0))
    } else {
        let version = match at {
            Some(TableAt::Version(v)) => Some(v),
            _ => None,
        };
        let (file, v) = metadata::find(root, version)?;
        (root.to_path_buf(), file, v)
    };
    let (table_root, metadata_file) = if remote {
        (table_root, metadata_file)
    } else {
        let absolute = |p: &Path| p.canonicalize().map_err(|e| format!("{}: {e}", p.display()));
        (absolute(&table_root)?, absolute(&metadata_file)?)
    };
    let meta = metadata::load(&metadata_file)?;
    let snapshot_id = match at {
        None | Some(TableAt::Version(_)) => meta.current_snapshot_id,
        Some(TableAt::Snapshot(id)) => Some(i64::try_from(id).map_err(|_| format!("no snapshot id is {id}"))?),
        Some(TableAt::AsOf(ms)) => Some(
            meta.snapshot_log
                .iter()
                .filter(|(_, t)| *t <= ms)
                .max_by_key(|(_, t)| *t)
                .map(|(id, _)| *id)
                .ok_or_else(|| {
                    let when =
                        chrono::DateTime::from_timestamp_millis(ms).map_or_else(|| ms.to_string(), |t| t.to_rfc3339());
                    format!("no snapshot of the table was current at or before {when} (--as-of)")
                })?,
        ),
    };
    let Some(snapshot_id) = snapshot_id else {
        return Ok(Read {
            version,
            snapshot_id: None,
            files: Vec::new(),
        });
    };
    let snapshot = meta
        .snapshot(snapshot_id)
        .ok_or_else(|| format!("the table has no snapshot {snapshot_id} (expired, or never taken)"))?;
    let shown_id = u64::try_from(snapshot_id).map_err(|_| format!("a negative snapshot id {snapshot_id}"))?;
    let mut identity: HashMap<i32, HashMap<i32, i32>> = HashMap::new();
    for (spec, fields) in &meta.specs {
        for f in fields.iter().filter(|f| f.transform == "identity") {
            identity.entry(f.source_id).or_default().insert(*spec, f.field_id);
        }
    }
    let table = Arc::new(Table {
        columns: match at {
            Some(TableAt::Snapshot(_) | TableAt::AsOf(_)) => meta.columns_of(snapshot)?,
            _ => meta.current_columns()?,
        }
        .to_vec(),
        identity,
        name_mapping: meta.name_mapping.clone(),
        pinned: super::TableRef {
            root: metadata_file.clone(),
            shown: shown.to_string(),
            version,
            snapshot_id: Some(shown_id),
        },
    });
    let places = Places {
        location: meta.location.clone(),
        root: table_root,
        shown: shown.trim_end_matches('/').to_string(),
        remote,
    };
    // In object storage, the default data folder is listed while the
    // manifests are read: the files their metrics settle are never opened,
    // and that listing is how they are known to be there.
    if remote && !meta.data_elsewhere {
        let data = format!("{}/data/", places.root.to_string_lossy().trim_end_matches('/'));
        storage::remote::list_below_later(vec![data], true);
    }
    // The manifest list and the manifests mostly share their writer schemas.
    let schemas = avro::Schemas::default();
    let manifests = manifests(&meta, snapshot, &places, &schemas)?;
    let entries: Vec<Vec<Entry>> = {
        use rayon::prelude::*;
        match remote {
            // Manifests in object storage wait on round trips: many in
            // flight, each decoded as it arrives.
            true => {
                let paths: Vec<&Path> = manifests.iter().map(|m| m.path.as_path()).collect();
                let limits: Vec<u64> = manifests.iter().map(Manifest::limit).collect();
                storage::remote::wholes_each(&paths, &limits, MANIFEST_BYTES, |i, fetched| {
                    let m = &manifests[i];
                    entries(m, manifest_bytes(m, fetched, &schemas)?, meta.format_version)
                })?
            }
            false => manifests
                .par_iter()
                .map(|m| entries(m, avro_file(&m.path, &schemas)?, meta.format_version))
                .collect::<Result<_, String>>()?,
        }
    };
    let mut data = Vec::new();
    let mut deletes = Vec::new();
    for e in entries.into_iter().flatten() {
        match e.content {
            0 => data.push(e),
            1 | 2 => deletes.push(Arc::new(Delete::new(e, &meta, &places)?)),
            c => return Err(format!("a manifest entry of unknown content {c} ({})", e.uri)),
        }
    }
    let mut seen = std::collections::HashSet::new();
    let mut files = Vec::with_capacity(data.len());
    for e in data {
        if !seen.insert(e.uri.clone()) {
            return Err(format!("the snapshot lists the data file {} twice", e.uri));
        }
        if !e.format.eq_ignore_ascii_case("parquet") {
            return Err(format!(
                "the data file {} is {}: preflight reads Iceberg data files in Parquet",
                e.uri, e.format
            ));
        }
        let applied = deletes::applying(&e, &deletes)?;
        let (path, display) = places.locate(&e.uri)?;
        files.push(DataFile {
            display,
            opens: Some(Opens(Arc::new(LiveFile {
                table: table.clone(),
                path: path.clone(),
                entry: e,
                deletes: applied,
            }))),
            path,
            label: None,
        });
    }
    super::list_unless_listed(&places.root, &files);
    Ok(Read {
        version,
        snapshot_id: Some(shown_id),
        files,
    })
}

/// Where the paths a table's metadata names are read from, and how reports
/// show them.
struct Places {
    /// The table's `location` as its metadata says it.
    location: String,
    /// Where the table was found (absolute when local).
    root: PathBuf,
    shown: String,
    remote: bool,
}

impl Places {
    /// The path to open a file the metadata names by `uri`, and its name
    /// in reports. A file under the table's `location` is read under the
    /// folder or URL the table was found at, so a table copied or moved
    /// whole (with its metadata's absolute paths) reads its own files.
    fn locate(&self, uri: &str) -> Result<(PathBuf, String), String> {
        if let Some(rel) = self.relative(uri) {
            let display = format!("{}/{rel}", self.shown);
            return Ok(match self.remote {
                true => (
                    PathBuf::from(format!("{}/{rel}", self.root.to_string_lossy().trim_end_matches('/'))),
                    display,
                ),
                false => (self.root.join(rel), display),
            });
        }
        if uri.starts_with("file:") {
            let path = url::Url::parse(uri)
                .ok()
                .and_then(|u| u.to_file_path().ok())
                .ok_or_else(|| format!("the metadata names a file by a bad URI {uri}"))?;
            return Ok((path.clone(), path.to_string_lossy().into_owned()));
        }
        Ok((PathBuf::from(uri), crate::redact::url(uri).into_owned()))
    }

    /// The part of `uri` below the table's location (`file:/x` and
    /// `file:///x` name one place).
    fn relative(&self, uri: &str) -> Option<String> {
        let bare = |s: &str| match s.strip_prefix("file:") {
            Some(path) => format!("file:/{}", path.trim_start_matches('/')),
            None => s.to_string(),
        };
        let (uri, location) = (bare(uri), bare(&self.location));
        let rel = uri.strip_prefix(location.as_str())?.strip_prefix('/')?;
        Some(rel.trim_start_matches('/').to_string())
    }
}

/// A manifest of the snapshot: where it is, its partition spec and
/// sequence number (what its entries inherit).
#[derive(Debug)]
struct Manifest {
    path: PathBuf,
    spec_id: Option<i32>,
    sequence_number: i64,
    /// Its length in bytes, as the manifest list gives it.
    length: Option<u64>,
}

impl Manifest {
    /// The most bytes read of it: twice the length the manifest list gives
    /// (at least 1 MiB), so that a list that lies cannot make a batch hold
    /// more than its budget; [`MAX_MANIFEST`] without one.
    fn limit(&self) -> u64 {
        self.length
            .map_or(MAX_MANIFEST, |n| n.saturating_mul(2).clamp(1 << 20, MAX_MANIFEST))
    }
}

/// A manifest fetched whole, decoded as Avro.
fn manifest_bytes(
    m: &Manifest,
    fetched: Result<Result<bytes::Bytes, u64>, ReadError>,
    schemas: &avro::Schemas,
) -> Result<avro::File, String> {
    let name = m.path.display();
    match fetched.map_err(|e| format!("{name}: {e}"))? {
        Ok(bytes) => avro::read(&bytes, schemas).map_err(|e| format!("{name}: {e}")),
        Err(size) => Err(match m.length {
            Some(n) => format!("{name}: a manifest of {size} bytes, where the manifest list says {n}"),
            None => format!("{name}: a manifest of {size} bytes"),
        }),
    }
}

fn manifests(
    meta: &metadata::Metadata,
    snapshot: &metadata::Snapshot,
    places: &Places,
    schemas: &avro::Schemas,
) -> Result<Vec<Manifest>, String> {
    let Some(list) = &snapshot.manifest_list else {
        // v1: the manifests inline, data only, sequence number 0.
        return snapshot
            .manifests
            .iter()
            .map(|m| {
                Ok(Manifest {
                    path: places.locate(m)?.0,
                    spec_id: None,
                    sequence_number: 0,
                    length: None,
                })
            })
            .collect();
    };
    let path = places.locate(list)?.0;
    let file = avro_file(&path, schemas)?;
    let at = |id, name| file.field(id, name);
    let path_at = at(500, "manifest_path").ok_or_else(|| format!("{list}: no manifest_path"))?;
    let length_at = at(501, "manifest_length");
    let spec_at = at(502, "partition_spec_id");
    let seq_at = at(515, "sequence_number");
    let key_at = at(519, "key_metadata");
    let mut out = Vec::new();
    for r in &file.records {
        let avro::Value::Record(v) = r else { continue };
        let get = |i: Option<usize>| i.and_then(|i| v.get(i)).filter(|v| **v != avro::Value::Null);
        if get(key_at).is_some() {
            return Err(format!(
                "{list}: an encrypted manifest (key_metadata): preflight reads unencrypted tables"
            ));
        }
        let manifest = get(Some(path_at))
            .and_then(avro::Value::as_str)
            .ok_or_else(|| format!("{list}: a manifest without its path"))?;
        out.push(Manifest {
            path: places.locate(manifest)?.0,
            spec_id: get(spec_at).and_then(avro::Value::as_i64).map(|s| s as i32),
            length: get(length_at)
                .and_then(avro::Value::as_i64)
                .and_then(|n| u64::try_from(n).ok()),
            sequence_number: if meta.format_version >= 2 {
                get(seq_at).and_then(avro::Value::as_i64).unwrap_or(0)
            } else {
                0
            },
        });
    }
    Ok(out)
}

fn avro_file(path: &Path, schemas: &avro::Schemas) -> Result<avro::File, String> {
    let bytes = storage::read_whole(path, MAX_MANIFEST, |n| {
        ReadError::new(format!("a manifest of {n} bytes"))
    })
    .map_err(|e| format!("{}: {e}", path.display()))?;
    avro::read(&bytes, schemas).map_err(|e| format!("{}: {e}", path.display()))
}

/// A live entry of a manifest, with what it inherits filled in.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    /// 0 data, 1 position deletes (or a deletion vector), 2 equality deletes.
    content: i64,
    /// The file's path as the metadata writes it.
    uri: String,
    format: String,
    spec_id: i32,
    /// The partition tuple: (partition field id, value).
    partition: Vec<(i32, avro::Value)>,
    /// The data sequence number.
    sequence_number: i64,
    equality_ids: Vec<i32>,
    referenced_data_file: Option<String>,
    content_offset: Option<i64>,
    content_size: Option<i64>,
    /// The path every row of a position delete file names, when its bounds
    /// say it names one.
    one_path: Option<String>,
    /// Rows stored in the file, deleted or not.
    record_count: i64,
    /// The file's column metrics, by field id: values (nulls included),
    /// nulls, and the lower and upper bounds (Iceberg's single-value
    /// serialization).
    value_counts: HashMap<i32, i64>,
    null_counts: HashMap<i32, i64>,
    lower_bounds: HashMap<i32, Vec<u8>>,
    upper_bounds: HashMap<i32, Vec<u8>>,
}

/// The live entries (status 0 existing, 1 added; 2 deleted is history).
fn entries(m: &Manifest, file: avro::File, format_version: i64) -> Result<Vec<Entry>, String> {
    let name = m.path.display().to_string();
    let spec_id = match m.spec_id {
        Some(s) => s,
        None => file
            .metadata
            .get("partition-spec-id")
            .and_then(|s| std::str::from_utf8(s).ok()?.parse().ok())
            .unwrap_or(0),
    };
    let avro::Schema::Record(fields) = file.schema.as_ref() else {
        return Err(format!("{name}: a manifest whose records are not records"));
    };
    let status_at = file.field(0, "status").ok_or_else(|| format!("{name}: no status"))?;
    let seq_at = file.field(3, "sequence_number");
    let data_at = file
        .field(2, "data_file")
        .ok_or_else(|| format!("{name}: no data_file"))?;
    let avro::Schema::Record(df) = &fields[data_at].schema else {
        return Err(format!("{name}: data_file is not a record"));
    };
    let find = |id: i32, n: &str| {
        df.iter()
            .position(|f| f.id == Some(id))
            .or_else(|| df.iter().position(|f| f.id.is_none() && f.name == n))
    };
    let path_at = find(100, "file_path").ok_or_else(|| format!("{name}: no file_path"))?;
    let (content_at, format_at, partition_at) =
        (find(134, "content"), find(101, "file_format"), find(102, "partition"));
    let (eq_at, ref_at, off_at, size_at) = (
        find(135, "equality_ids"),
        find(143, "referenced_data_file"),
        find(144, "content_offset"),
        find(145, "content_size_in_bytes"),
    );
    let (lower_at, upper_at, key_at) = (
        find(125, "lower_bounds"),
        find(128, "upper_bounds"),
        find(131, "key_metadata"),
    );
    let (count_at, values_at, nulls_at) = (
        find(103, "record_count"),
        find(109, "value_counts"),
        find(110, "null_value_counts"),
    );
    let partition_ids: Vec<Option<i32>> = match partition_at.map(|i| &df[i].schema) {
        Some(avro::Schema::Record(p)) => p.iter().map(|f| f.id).collect(),
        _ => Vec::new(),
    };
    let spec_fields = header_partition_ids(&file);
    let mut out = Vec::new();
    for r in &file.records {
        let avro::Value::Record(v) = r else { continue };
        let status = v.get(status_at).and_then(avro::Value::as_i64).unwrap_or(-1);
        if status == 2 {
            continue;
        }
        if status != 0 && status != 1 {
            return Err(format!("{name}: a manifest entry of status {status}"));
        }
        let Some(avro::Value::Record(d)) = v.get(data_at) else {
            return Err(format!("{name}: an entry without its data_file"));
        };
        let get = |i: Option<usize>| i.and_then(|i| d.get(i)).filter(|v| **v != avro::Value::Null);
        let uri = get(Some(path_at))
            .and_then(avro::Value::as_str)
            .ok_or_else(|| format!("{name}: an entry without its file_path"))?
            .to_string();
        if get(key_at).is_some() {
            return Err(format!(
                "{uri}: an encrypted file (key_metadata): preflight reads unencrypted tables"
            ));
        }
        // Sequence number inheritance: an added entry without one takes the
        // manifest's; so does every entry of a v1 manifest (0).
        let sequence_number = match seq_at.and_then(|i| v.get(i)).and_then(avro::Value::as_i64) {
            Some(s) => s,
            None if status == 1 || format_version == 1 || m.sequence_number == 0 => m.sequence_number,
            None => return Err(format!("{name}: an existing entry without its sequence number ({uri})")),
        };
        let partition = match get(partition_at) {
            Some(avro::Value::Record(p)) => p
                .iter()
                .enumerate()
                .map(|(i, value)| {
                    let id = partition_ids
                        .get(i)
                        .copied()
                        .flatten()
                        .or_else(|| spec_fields.get(i).copied())
                        .unwrap_or(1000 + i as i32);
                    (id, value.clone())
                })
                .collect(),
            _ => Vec::new(),
        };
        let count = |i| -> HashMap<i32, i64> {
            by_id(get(i))
                .into_iter()
                .filter_map(|(k, v)| Some((k, v.as_i64()?)))
                .collect()
        };
        let bytes = |i| -> HashMap<i32, Vec<u8>> {
            by_id(get(i))
                .into_iter()
                .filter_map(|(k, v)| match v {
                    avro::Value::Bytes(b) => Some((k, b)),
                    _ => None,
                })
                .collect()
        };
        let (lower_bounds, upper_bounds) = (bytes(lower_at), bytes(upper_at));
        let file_path = deletes::FILE_PATH;
        let one_path = match (lower_bounds.get(&file_path), upper_bounds.get(&file_path)) {
            (Some(l), Some(u)) if l == u => String::from_utf8(l.clone()).ok(),
            _ => None,
        };
        out.push(Entry {
            content: get(content_at).and_then(avro::Value::as_i64).unwrap_or(0),
            uri,
            format: match get(format_at) {
                Some(avro::Value::String(s)) => s.clone(),
                _ => "PARQUET".into(),
            },
            spec_id,
            partition,
            sequence_number,
            equality_ids: match get(eq_at) {
                Some(avro::Value::Array(ids)) => ids.iter().filter_map(|i| i.as_i64().map(|i| i as i32)).collect(),
                _ => Vec::new(),
            },
            referenced_data_file: get(ref_at).and_then(avro::Value::as_str).map(str::to_string),
            content_offset: get(off_at).and_then(avro::Value::as_i64),
            content_size: get(size_at).and_then(avro::Value::as_i64),
            one_path,
            record_count: get(count_at).and_then(avro::Value::as_i64).unwrap_or(-1),
            value_counts: count(values_at),
            null_counts: count(nulls_at),
            lower_bounds,
            upper_bounds,
        });
    }
    Ok(out)
}

/// An int-keyed map of a manifest entry (an Avro array of key-value
/// records, or a map with the ids as string keys), by key.
fn by_id(value: Option<&avro::Value>) -> HashMap<i32, avro::Value> {
    match value {
        Some(avro::Value::Array(pairs)) => pairs
            .iter()
            .filter_map(|p| match p {
                avro::Value::Record(kv) => Some((i32::try_from(kv.first()?.as_i64()?).ok()?, kv.get(1)?.clone())),
                _ => None,
            })
            .collect(),
        Some(avro::Value::Map(pairs)) => pairs
            .iter()
            .filter_map(|(k, v)| Some((k.parse().ok()?, v.clone())))
            .collect(),
        _ => HashMap::new(),
    }
}

/// The partition field ids the manifest's header gives, for partition
/// records whose fields carry no ids.
fn header_partition_ids(file: &avro::File) -> Vec<i32> {
    file.metadata
        .get("partition-spec")
        .and_then(|s| serde_json::from_slice::<serde_json::Value>(s).ok())
        .and_then(|s| s.as_array().cloned())
        .unwrap_or_default()
        .iter()
        .filter_map(|f| f.get("field-id")?.as_i64().map(|i| i as i32))
        .collect()
}

/// One live data file of the snapshot, with the delete files that apply.
#[derive(Debug, Clone)]
struct LiveFile {
    table: Arc<Table>,
    path: PathBuf,
    entry: Entry,
    deletes: Vec<Arc<Delete>>,
}

impl Opener for LiveFile {
    fn table(&self) -> super::TableRef {
        self.table.pinned.clone()
    }

    /// The file as its manifest entry's metrics show it, when they show
    /// every column stored and no delete applies ([`summarized`]: a check
    /// they settle costs no request for the file); else the file itself.
    fn open(&self, hints: &Hints) -> Result<Box<dyn Source>, ReadError> {
        match summarized(self, hints) {
            Some(summarized) => Ok(Box::new(summarized)),
            None => self.read(hints),
        }
    }
}

impl LiveFile {
    /// The data file read through its table's view.
    fn read(&self, hints: &Hints) -> Result<Box<dyn Source>, ReadError> {
        let inner = crate::source::open_with(&self.path, hints)?;
        let ids = inner.field_ids();
        let has_ids = ids.iter().any(Option::is_some);
        let stored = |id: i32| match has_ids {
            true => ids.iter().position(|i| *i == Some(id)),
            // Files without field ids (imported ones): by the table's name
            // mapping, else by the column's name.
            false => {
                let mapped = self.table.name_mapping.get(&id);
                let name = self.table.columns.iter().find(|c| c.id == id).map(|c| c.name.as_str());
                inner.columns().iter().position(|n| match mapped {
                    Some(names) => names.contains(n),
                    None => Some(n.as_str()) == name,
                })
            }
        };
        let constant = |id: i32| match self.table.columns.iter().find(|c| c.id == id) {
            Some(c) => self.constant(c),
            None => Ok(None),
        };
        let mut names = Vec::new();
        let mut columns = Vec::new();
        for c in &self.table.columns {
            let column = match stored(c.id) {
                Some(i) => Column::Stored(i),
                None => match self.constant(c)? {
                    Some(one) => Column::Constant(one),
                    // Missing as from any file: the check reports it.
                    None if c.required => continue,
                    None => match deletes::null_of(c) {
                        Some(one) => Column::Constant(one),
                        None => continue,
                    },
                },
            };
            names.push(c.name.clone());
            columns.push(column);
        }
        let mut deleted = deletes::deleted_rows(&self.entry, &self.deletes, inner.as_ref(), &stored, &constant)?;
        deleted.sort_unstable();
        deleted.dedup();
        Ok(Box::new(TableFile {
            inner,
            names,
            columns,
            deleted,
        }))
    }

    /// The value an identity partition gives column `c` in this file
    /// (a file without the column, as imported Hive files are).
    fn constant(&self, c: &metadata::Column) -> Result<Option<ArrayRef>, ReadError> {
        let Some(field) = self.table.identity.get(&c.id).and_then(|s| s.get(&self.entry.spec_id)) else {
            return Ok(None);
        };
        let Some((_, value)) = self.entry.partition.iter().find(|(id, _)| id == field) else {
            return Ok(None);
        };
        deletes::scalar(c, value).map(Some)
    }
}

/// A data file no delete applies to, as its manifest entry shows it
/// ([`Summarized`]): its columns (each stored in the file, as the entry's
/// value counts show), their types, and for integer columns the entry's
/// bounds and null counts. The bounds are the writer's: PyIceberg and Java
/// take an integer column's from the Parquet footer's row group
/// statistics, and Iceberg's are inclusive envelopes, so a proof by them
/// holds; a string column's (truncated to 16 characters) are never used.
fn summarized(live: &LiveFile, hints: &Hints) -> Option<Summarized> {
    let e = &live.entry;
    let rows = u64::try_from(e.record_count).ok()?;
    if !live.deletes.is_empty() || live.table.columns.iter().any(|c| !e.value_counts.contains_key(&c.id)) {
        return None;
    }
    let mut columns = Vec::new();
    for c in &live.table.columns {
        let narrow = e.lower_bounds.get(&c.id).is_some_and(|b| b.len() == 4);
        let stored = match c.primitive.as_deref() {
            // A long column promoted from int keeps its 4-byte bounds and
            // its files their int32 values.
            Some("long") if narrow => Some(arrow::datatypes::DataType::Int32),
            Some(p) => deletes::arrow_type(p),
            None => None,
        };
        columns.push((c.name.clone(), stored, integer_stats(c, e, rows)));
    }
    let (file, opening) = (live.clone(), hints.clone());
    Summarized::new(columns, &live.path, hints, Box::new(move || file.read(&opening)))
}

/// An integer column's bounds and null count as statistics of the whole
/// file, when the entry has them.
fn integer_stats(c: &metadata::Column, e: &Entry, rows: u64) -> Option<crate::proof::UnitStats> {
    let decode = |b: &Vec<u8>| -> Option<i128> {
        match (c.primitive.as_deref()?, b.len()) {
            ("int" | "long", 4) => Some(i128::from(i32::from_le_bytes(b[..].try_into().ok()?))),
            ("long", 8) => Some(i128::from(i64::from_le_bytes(b[..].try_into().ok()?))),
            _ => None,
        }
    };
    let min = decode(e.lower_bounds.get(&c.id)?)?;
    let max = decode(e.upper_bounds.get(&c.id)?)?;
    Some(crate::proof::UnitStats {
        min,
        max,
        null_count: u64::try_from(*e.null_counts.get(&c.id)?).ok()?,
        rows,
        repeated: false,
    })
}
