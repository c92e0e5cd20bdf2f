//! A Delta Lake table's snapshot as data files: the Delta project's own
//! kernel (`delta_kernel`) replays the log (commits, checkpoints, log
//! compaction, the protocol's reader features) and lists the live files
//! with their deletion vectors and partition values; each file is then
//! read by preflight's Parquet reader through [`TableFile`].

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use delta_kernel::expressions::Scalar;
use delta_kernel::object_store::ObjectStore;
use delta_kernel::object_store::local::LocalFileSystem;
use delta_kernel::scan::state::{DvInfo, ScanFile};
use delta_kernel::schema::DataType;
use delta_kernel::{Engine, Snapshot};
use delta_kernel_default_engine::DefaultEngine;
use delta_kernel_default_engine::executor::tokio::TokioBackgroundExecutor;
use url::Url;

use self::log_reads::LogReads;
use super::TableAt;
use super::view::{Column, Summarized, TableFile};
use crate::error::ReadError;
use crate::source::Hints;
use crate::source::layouts::discover::{DataFile, Opener, Opens};
use crate::source::read::Source;

mod log_reads;

type Kernel = DefaultEngine<TokioBackgroundExecutor>;

/// The snapshot a check read: its version and its live data files.
pub(crate) struct Read {
    pub version: u64,
    pub files: Vec<DataFile>,
}

/// The kernel's engine for one read of a table at `root` (a URL): over
/// the store preflight itself reads (the local file system, a bucket, a
/// container: its clients and credentials shared), through a
/// [`LogReads`] that fetches each log file once for this replay. Each
/// engine runs its I/O on a thread of its own.
fn engine(root: &Url) -> Result<(Arc<Kernel>, Arc<LogReads>), String> {
    static STORES: std::sync::OnceLock<std::sync::Mutex<HashMap<String, Arc<dyn ObjectStore>>>> =
        std::sync::OnceLock::new();
    let key = match root.scheme() {
        "file" => "file://".to_string(),
        scheme => format!("{scheme}://{}", root.host_str().unwrap_or("")),
    };
    let stores = STORES.get_or_init(Default::default);
    let known = stores.lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
    let store = match known {
        Some(s) => s,
        None => {
            let store: Arc<dyn ObjectStore> = match root.scheme() {
                "file" => Arc::new(LocalFileSystem::new()),
                _ => crate::source::storage::remote::object_store(root.as_str())?,
            };
            stores
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(key, store.clone());
            store
        }
    };
    let reads = Arc::new(LogReads::new(store));
    let engine = delta_kernel_default_engine::DefaultEngineBuilder::new(reads.clone() as Arc<dyn ObjectStore>).build();
    Ok((Arc::new(engine), reads))
}

/// The latest version committed at or before `ms` (milliseconds since the
/// epoch): by in-commit timestamps where the table keeps them, else by the
/// commit files' modification times, as the kernel (and `deltalake`) read
/// them.
fn version_as_of(url: &Url, engine: &Kernel, ms: i64) -> Result<u64, String> {
    use delta_kernel::history_manager::{HistoryCommitType, latest_version_as_of};
    let latest = Snapshot::builder_for(url.as_str()).build(engine).map_err(kernel)?;
    match latest_version_as_of(&latest, engine, ms, HistoryCommitType::Recreatable) {
        Ok(commit) => Ok(commit.version),
        Err(delta_kernel::KernelError::LogHistory(e))
            if matches!(
                *e,
                delta_kernel::history_manager::error::LogHistoryError::TimestampOutOfRange { .. }
            ) =>
        {
            let when = chrono::DateTime::from_timestamp_millis(ms).map_or_else(|| ms.to_string(), |t| t.to_rfc3339());
            Err(format!(
                "no version of the table was committed at or before {when} (--as-of): its first commit is later"
            ))
        }
        Err(e) => Err(kernel(e)),
    }
}

/// What every data file of one snapshot shares.
#[derive(Debug)]
struct Table {
    engine: Arc<Kernel>,
    root: Url,
    /// The table's columns: logical name, the name its data files store,
    /// the type, and whether it is a partition column.
    columns: Vec<TableColumn>,
    /// The table and version as a plan pins them.
    pinned: super::TableRef,
}

#[derive(Debug)]
struct TableColumn {
    name: String,
    physical: String,
    data_type: DataType,
    nullable: bool,
    partition: bool,
}

/// One live data file of the snapshot.
#[derive(Debug, Clone)]
struct LiveFile {
    table: Arc<Table>,
    path: PathBuf,
    /// Its statistics as the log records them (JSON).
    stats: Option<String>,
    dv: DvInfo,
    partition_values: HashMap<String, String>,
}

/// Reads the snapshot of the Delta table at `root`, a local folder or a
/// URL in object storage (shown as `shown` in reports): the latest, or
/// the one `at` picks.
pub(crate) fn read(root: &Path, shown: &str, at: Option<TableAt>) -> Result<Read, String> {
    let remote = crate::source::storage::remote::is_url(root);
    let (url, absolute) = if remote {
        let text = root.to_string_lossy();
        let text = if text.ends_with('/') {
            text.into_owned()
        } else {
            format!("{text}/")
        };
        (Url::parse(&text).map_err(|e| e.to_string())?, PathBuf::new())
    } else {
        let absolute = root.canonicalize().map_err(|e| e.to_string())?;
        let url = Url::from_directory_path(&absolute).map_err(|()| "not a folder path".to_string())?;
        (url, absolute)
    };
    let (self_engine, log_reads) = engine(&url)?;
    let engine = self_engine.as_ref();
    let version = match at {
        None => None,
        Some(TableAt::Version(v)) => Some(v),
        Some(TableAt::AsOf(ms)) => Some(version_as_of(&url, engine, ms)?),
        Some(TableAt::Snapshot(_)) => {
            return Err("a Delta Lake table has versions, not snapshot ids: pick one with --table-version".into());
        }
    };
    let mut builder = Snapshot::builder_for(url.as_str());
    if let Some(v) = version {
        builder = builder.at_version(v);
    }
    let snapshot = builder.build(engine).map_err(kernel)?;
    let config = snapshot.table_configuration();
    let mode = config.column_mapping_mode();
    let partitions = config.metadata().partition_columns().to_vec();
    let schema = snapshot.schema();
    let columns = schema
        .fields()
        .map(|f| TableColumn {
            name: f.name().to_string(),
            physical: f.physical_name(mode).to_string(),
            data_type: f.data_type().clone(),
            nullable: f.is_nullable(),
            partition: partitions.iter().any(|p| p == f.name()),
        })
        .collect();
    let version_read = snapshot.version();
    let scan = snapshot.scan_builder().build().map_err(kernel)?;
    let mut live: Vec<ScanFile> = Vec::new();
    let mut stats = HashMap::new();
    for metadata in scan.scan_metadata(engine).map_err(kernel)? {
        let metadata = metadata.map_err(kernel)?;
        log_stats(&metadata.scan_files, &mut stats);
        live = metadata
            .visit_scan_files(live, |v: &mut Vec<ScanFile>, f| v.push(f))
            .map_err(kernel)?;
    }
    // The replay is over: its log files are not kept through the check.
    log_reads.forget();
    let table = Arc::new(Table {
        engine: self_engine,
        root: url,
        columns,
        pinned: super::TableRef {
            // A local table by its absolute path: a plan's units are checked
            // from anywhere.
            root: if remote { root.to_path_buf() } else { absolute.clone() },
            shown: shown.to_string(),
            version: version_read,
            snapshot_id: None,
        },
    });
    let mut files = Vec::with_capacity(live.len());
    for f in live {
        let joined = table
            .root
            .join(&f.path)
            .map_err(|e| format!("the log names a data file by a bad path {}: {e}", f.path))?;
        let (path, display) = if remote {
            let relative = joined
                .as_str()
                .strip_prefix(table.root.as_str())
                .unwrap_or(joined.as_str());
            (
                PathBuf::from(joined.as_str()),
                format!("{}/{}", shown.trim_end_matches('/'), relative),
            )
        } else {
            let path = joined
                .to_file_path()
                .map_err(|()| format!("the log names a data file that is no local path: {}", f.path))?;
            let relative = path.strip_prefix(&absolute).unwrap_or(&path);
            let display = Path::new(shown).join(relative).to_string_lossy().into_owned();
            (path, display)
        };
        files.push(DataFile {
            display,
            opens: Some(Opens(Arc::new(LiveFile {
                table: table.clone(),
                path: path.clone(),
                stats: stats.remove(&f.path),
                dv: f.dv_info,
                partition_values: f.partition_values,
            }))),
            path,
            label: None,
        });
    }
    super::list_unless_listed(root, &files);
    Ok(Read {
        version: version_read,
        files,
    })
}

/// The `stats` JSON of each selected file of a batch of scan metadata, by
/// its path as the log writes it.
fn log_stats(files: &delta_kernel::engine_data::FilteredEngineData, into: &mut HashMap<String, String>) {
    use arrow::array::{Array, AsArray};
    let Some(data) = files
        .data()
        .any_ref()
        .downcast_ref::<delta_kernel::engine::arrow_data::ArrowEngineData>()
    else {
        return;
    };
    let batch = data.record_batch();
    let (Some(paths), Some(stats)) = (batch.column_by_name("path"), batch.column_by_name("stats")) else {
        return;
    };
    let (Some(paths), Some(stats)) = (paths.as_string_opt::<i32>(), stats.as_string_opt::<i32>()) else {
        return;
    };
    let selected = files.selection_vector();
    for i in 0..batch.num_rows() {
        if selected.get(i).copied().unwrap_or(true) && paths.is_valid(i) && stats.is_valid(i) {
            into.insert(paths.value(i).to_string(), stats.value(i).to_string());
        }
    }
}

fn kernel(e: delta_kernel::KernelError) -> String {
    format!("the Delta log cannot be read: {e}")
}

impl Opener for LiveFile {
    fn table(&self) -> super::TableRef {
        self.table.pinned.clone()
    }

    /// The file as its log statistics show it, when they show every column
    /// stored and no row deleted ([`summarized`]: a check they settle costs
    /// no request for the file); else the file itself.
    fn open(&self, hints: &Hints) -> Result<Box<dyn Source>, ReadError> {
        match summarized(self, hints) {
            Some(summarized) => Ok(Box::new(summarized)),
            None => self.read(hints),
        }
    }
}

/// A data file no deletion vector touches, as its log statistics show it
/// ([`Summarized`]): the table's columns, each non-partition one counted
/// in `nullCount` (so stored in the file), and for integer columns their
/// `minValues`, `maxValues` and `nullCount` over `numRecords` rows. Delta
/// writers take them from the data they write (delta-rs, Spark), exact for
/// integers; strings (truncated) are never used, and a partition column
/// is left to the file's reading.
fn summarized(live: &LiveFile, hints: &Hints) -> Option<Summarized> {
    if live.dv.has_vector() {
        return None;
    }
    let stats: serde_json::Value = serde_json::from_str(live.stats.as_deref()?).ok()?;
    let rows = stats.get("numRecords")?.as_u64()?;
    let nulls = stats.get("nullCount")?;
    let mut columns = Vec::new();
    for c in &live.table.columns {
        if c.partition {
            columns.push((c.name.clone(), None, None));
            continue;
        }
        let null_count = nulls.get(&c.physical)?;
        let stored = match c.data_type {
            DataType::BYTE => Some(arrow::datatypes::DataType::Int8),
            DataType::SHORT => Some(arrow::datatypes::DataType::Int16),
            DataType::INTEGER => Some(arrow::datatypes::DataType::Int32),
            DataType::LONG => Some(arrow::datatypes::DataType::Int64),
            _ => None,
        };
        let bound = |key: &str| stats.get(key)?.get(&c.physical)?.as_i64().map(i128::from);
        let integer = stored.is_some().then(|| {
            Some(crate::proof::UnitStats {
                min: bound("minValues")?,
                max: bound("maxValues")?,
                null_count: null_count.as_u64()?,
                rows,
                repeated: false,
            })
        });
        columns.push((c.name.clone(), stored, integer.flatten()));
    }
    let (file, opening) = (live.clone(), hints.clone());
    Summarized::new(columns, &live.path, hints, Box::new(move || file.read(&opening)))
}

impl LiveFile {
    /// The data file read through its table's view.
    fn read(&self, hints: &Hints) -> Result<Box<dyn Source>, ReadError> {
        let inner = crate::source::open_with(&self.path, hints)?;
        let engine: &dyn Engine = self.table.engine.as_ref();
        let mut deleted = self
            .dv
            .get_row_indexes(engine, &self.table.root)
            .map_err(|e| ReadError::new(format!("its deletion vector cannot be read: {e}")))?
            .unwrap_or_default();
        deleted.sort_unstable();
        deleted.dedup();
        let mut names = Vec::new();
        let mut columns = Vec::new();
        for c in &self.table.columns {
            let column = if c.partition {
                Column::Constant(partition_value(c, self.partition_values.get(&c.physical))?)
            } else if let Some(i) = inner.columns().iter().position(|n| *n == c.physical) {
                Column::Stored(i)
            } else if c.nullable {
                // A column added after this file was written: null in it.
                match Scalar::Null(c.data_type.clone()).to_array(1) {
                    Ok(one) => Column::Constant(one),
                    Err(_) => continue,
                }
            } else {
                // Missing as from any file: the check reports it.
                continue;
            };
            names.push(c.name.clone());
            columns.push(column);
        }
        Ok(Box::new(TableFile {
            inner,
            names,
            columns,
            deleted,
        }))
    }
}

/// A partition column's value in one file, as a one-element array of the
/// column's type (Delta's partition value serialization; an empty string
/// is the empty string or binary, else null).
fn partition_value(c: &TableColumn, raw: Option<&String>) -> Result<arrow::array::ArrayRef, ReadError> {
    let bad = |e: delta_kernel::KernelError| ReadError::new(format!("partition column {}: {e}", c.name));
    let scalar = match (raw, c.data_type.as_primitive_opt()) {
        (Some(v), Some(p)) if v.is_empty() => match p {
            delta_kernel::schema::PrimitiveType::String => Scalar::String(String::new()),
            delta_kernel::schema::PrimitiveType::Binary => Scalar::Binary(Vec::new()),
            _ => Scalar::Null(c.data_type.clone()),
        },
        (Some(v), Some(p)) => p.parse_scalar(v).map_err(bad)?,
        (Some(_), None) => {
            return Err(ReadError::new(format!(
                "partition column {} has a type partition values cannot hold",
                c.name
            )));
        }
        (None, _) => Scalar::Null(c.data_type.clone()),
    };
    scalar.to_array(1).map_err(bad)
}
