//! Which rows of a data file an Iceberg snapshot deletes, as the spec's
//! "Scan Planning" decides it: position delete files and deletion vectors
//! (v3, in Puffin files) name rows by position, equality delete files by
//! the values of some columns. A delete file applies to a data file by
//! their data sequence numbers (at or after it for positions, strictly
//! after for equality), partition and, where named, the data file's path;
//! a deletion vector, when one applies, replaces the position delete
//! files.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use arrow::array::{Array, ArrayRef, AsArray, new_null_array};
use arrow::datatypes::{DataType, Int64Type, TimeUnit};
use arrow::row::{RowConverter, SortField};

use super::metadata::{Column, Metadata};
use super::{Entry, Places, avro};
use crate::error::ReadError;
use crate::source::Hints;
use crate::source::read::Source;
use crate::source::storage;

/// Field ids of a position delete file's columns.
pub(super) const FILE_PATH: i32 = 2147483546;
const POS: i32 = 2147483545;
/// The most rows one deletion vector may delete.
const MAX_VECTOR: u64 = 1 << 28;

#[derive(Debug)]
pub(super) enum DeleteKind {
    Positions,
    /// Deletion vectors: the offset and size in the Puffin file of each
    /// data file's, by the data file's path.
    Vectors(HashMap<String, (u64, u64)>),
    Equality(Vec<i32>),
}

/// A position delete file's rows: the positions it deletes, by the path
/// of the data file they are in.
type Positions = HashMap<String, Vec<u64>>;

/// A live delete file of the snapshot; what it deletes is read once, when
/// the first data file it applies to is opened.
#[derive(Debug)]
pub(super) struct Delete {
    entry: Entry,
    kind: DeleteKind,
    path: PathBuf,
    /// An equality delete of an unpartitioned spec applies to every
    /// partition.
    global: bool,
    positions: OnceLock<Result<Arc<Positions>, String>>,
    equality: OnceLock<Result<Arc<Keys>, String>>,
}

impl Delete {
    pub(super) fn new(entry: Entry, meta: &Metadata, places: &Places) -> Result<Delete, String> {
        let (path, _) = places.locate(&entry.uri)?;
        let kind = match entry.content {
            2 if entry.equality_ids.is_empty() => {
                return Err(format!("the equality delete file {} names no columns", entry.uri));
            }
            2 => DeleteKind::Equality(entry.equality_ids.clone()),
            _ if entry.format.eq_ignore_ascii_case("puffin") => {
                let named = |e: String| format!("the deletion vector file {}: {e}", entry.uri);
                match (&entry.referenced_data_file, entry.content_offset, entry.content_size) {
                    // v3: the manifest says where the blob is.
                    (Some(data), Some(offset), Some(size)) => match (u64::try_from(offset), u64::try_from(size)) {
                        (Ok(offset), Ok(size)) => DeleteKind::Vectors(HashMap::from([(data.clone(), (offset, size))])),
                        _ => return Err(named("a negative offset or size".into())),
                    },
                    // Else the Puffin footer does (PyIceberg's v2 manifests,
                    // which its reader accepts).
                    (data, _, _) => {
                        let mut blobs = footer_blobs(&path).map_err(named)?;
                        if let Some(data) = data {
                            blobs.retain(|k, _| k == data);
                        }
                        DeleteKind::Vectors(blobs)
                    }
                }
            }
            _ => DeleteKind::Positions,
        };
        if !matches!(kind, DeleteKind::Vectors(_)) && !entry.format.eq_ignore_ascii_case("parquet") {
            return Err(format!(
                "the delete file {} is {}: preflight reads Iceberg delete files in Parquet (and deletion vectors)",
                entry.uri, entry.format
            ));
        }
        let global = meta
            .specs
            .get(&entry.spec_id)
            .is_none_or(|f| f.iter().all(|f| f.transform == "void"));
        Ok(Delete {
            entry,
            kind,
            path,
            global,
            positions: OnceLock::new(),
            equality: OnceLock::new(),
        })
    }
}

/// The delete files of `deletes` that apply to data file `data`.
pub(super) fn applying(data: &Entry, deletes: &[Arc<Delete>]) -> Result<Vec<Arc<Delete>>, String> {
    let same_partition = |d: &Delete| d.entry.spec_id == data.spec_id && d.entry.partition == data.partition;
    let vectors: Vec<&Arc<Delete>> = deletes
        .iter()
        .filter(|d| {
            matches!(&d.kind, DeleteKind::Vectors(blobs) if blobs.contains_key(&data.uri))
                && data.sequence_number <= d.entry.sequence_number
        })
        .collect();
    if vectors.len() > 1 {
        return Err(format!(
            "the data file {} has {} deletion vectors",
            data.uri,
            vectors.len()
        ));
    }
    let mut out: Vec<Arc<Delete>> = vectors.into_iter().cloned().collect();
    let has_vector = !out.is_empty();
    for d in deletes {
        let applies = match &d.kind {
            DeleteKind::Vectors(_) => false,
            DeleteKind::Positions => {
                !has_vector
                    && data.sequence_number <= d.entry.sequence_number
                    && same_partition(d)
                    && d.entry.referenced_data_file.as_deref().is_none_or(|r| r == data.uri)
                    && d.entry.one_path.as_deref().is_none_or(|p| p == data.uri)
            }
            DeleteKind::Equality(_) => {
                data.sequence_number < d.entry.sequence_number && (d.global || same_partition(d))
            }
        };
        if applies {
            out.push(d.clone());
        }
    }
    Ok(out)
}

/// A data file's own column of field id `id`, if it stores one.
pub(super) type Stored<'a> = dyn Fn(i32) -> Option<usize> + 'a;
/// The value a column has in every row of the data file (an identity
/// partition's), for a column the file does not store.
pub(super) type Constant<'a> = dyn Fn(i32) -> Result<Option<ArrayRef>, ReadError> + 'a;

/// The rows of data file `data` (read through `inner`) that `deletes`
/// delete.
pub(super) fn deleted_rows(
    data: &Entry,
    deletes: &[Arc<Delete>],
    inner: &dyn Source,
    stored: &Stored<'_>,
    constant: &Constant<'_>,
) -> Result<Vec<u64>, ReadError> {
    let mut out = Vec::new();
    for d in deletes {
        let named = |e: String| ReadError::new(format!("its delete file {}: {e}", d.entry.uri));
        match &d.kind {
            DeleteKind::Positions => {
                let positions = d.positions.get_or_init(|| positions(&d.path).map(Arc::new));
                let positions = positions.as_ref().map_err(|e| named(e.clone()))?;
                out.extend(positions.get(&data.uri).into_iter().flatten());
            }
            DeleteKind::Vectors(blobs) => {
                if let Some(&(offset, size)) = blobs.get(&data.uri) {
                    out.extend(vector(&d.path, offset, size).map_err(named)?);
                }
            }
            DeleteKind::Equality(ids) => {
                let keys = d.equality.get_or_init(|| keys(&d.path, ids).map(Arc::new));
                let keys = keys.as_ref().map_err(|e| named(e.clone()))?;
                out.extend(matching(keys, inner, stored, constant).map_err(|e| named(e.to_string()))?);
            }
        }
    }
    Ok(out)
}

/// A delete file opened by preflight's Parquet reader, with its column of
/// each field id (or else name).
fn open(path: &std::path::Path, wanted: &[(i32, &str)]) -> Result<(Box<dyn Source>, Vec<usize>), String> {
    let source = crate::source::open_with(path, &Hints::default()).map_err(|e| e.to_string())?;
    let ids = source.field_ids();
    let columns = wanted
        .iter()
        .map(|(id, name)| {
            ids.iter()
                .position(|i| *i == Some(*id))
                .or_else(|| source.columns().iter().position(|n| n == name))
                .ok_or_else(|| format!("no column of field id {id} ({name})"))
        })
        .collect::<Result<_, _>>()?;
    Ok((source, columns))
}

/// A position delete file's positions, by the data file path they name.
fn positions(path: &std::path::Path) -> Result<Positions, String> {
    let (source, columns) = open(path, &[(FILE_PATH, "file_path"), (POS, "pos")])?;
    let mut out = Positions::new();
    for unit in 0..source.units() {
        source
            .read(unit, &columns, &mut |b| {
                let paths = arrow::compute::cast(b.batch.column(0), &DataType::Utf8)?;
                let pos = arrow::compute::cast(b.batch.column(1), &DataType::Int64)?;
                let (paths, pos) = (paths.as_string::<i32>(), pos.as_primitive::<Int64Type>());
                for i in 0..b.batch.num_rows() {
                    if paths.is_null(i) || pos.is_null(i) || pos.value(i) < 0 {
                        return Err(ReadError::new(format!(
                            "row {}: a null or negative position",
                            b.first_row + i as u64
                        )));
                    }
                    out.entry(paths.value(i).to_string())
                        .or_default()
                        .push(pos.value(i) as u64);
                }
                Ok(())
            })
            .map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// The rows a deletion vector deletes: a Puffin blob
/// (`deletion-vector-v1`) read at its offset, its CRC checked, its 64-bit
/// Roaring bitmap decoded.
fn vector(path: &std::path::Path, offset: u64, size: u64) -> Result<Vec<u64>, String> {
    let input = storage::Input::open(path).map_err(|e| e.to_string())?;
    let end = offset.checked_add(size).ok_or("its offset and size overflow")?;
    if end > input.size() || size < 12 {
        return Err(format!("a blob at {offset}..{end} of a {}-byte file", input.size()));
    }
    let blob = input.bytes(offset..end).map_err(|e| e.to_string())?;
    let len = u32::from_be_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
    if len + 8 != blob.len() {
        return Err(format!("a deletion vector of {len} bytes in a blob of {}", blob.len()));
    }
    if blob[4..8] != [0xD1, 0xD3, 0x39, 0x64] {
        return Err("not a deletion vector (bad magic)".into());
    }
    let body = &blob[4..4 + len];
    let crc = u32::from_be_bytes([blob[4 + len], blob[5 + len], blob[6 + len], blob[7 + len]]);
    if crc32fast::hash(body) != crc {
        return Err("the deletion vector fails its CRC-32".into());
    }
    let bitmap = roaring::RoaringTreemap::deserialize_from(&body[4..])
        .map_err(|e| format!("the deletion vector's bitmap cannot be read: {e}"))?;
    if bitmap.len() > MAX_VECTOR {
        return Err(format!("the deletion vector deletes {} rows", bitmap.len()));
    }
    Ok(bitmap.iter().collect())
}

/// Where a Puffin file's footer puts each deletion vector: (offset, size)
/// by the path of the data file it deletes from.
fn footer_blobs(path: &std::path::Path) -> Result<HashMap<String, (u64, u64)>, String> {
    const MAX_FOOTER: u64 = 16 << 20;
    let input = storage::Input::open(path).map_err(|e| e.to_string())?;
    let size = input.size();
    if size < 12 {
        return Err("not a Puffin file: too short".into());
    }
    let tail = input.bytes(size - 12..size).map_err(|e| e.to_string())?;
    if tail[8..12] != *b"PFA1" {
        return Err("not a Puffin file: no PFA1 magic at its end".into());
    }
    if tail[4] & 1 != 0 {
        return Err("a Puffin file with a compressed footer".into());
    }
    let len = u64::from(u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]));
    if len > MAX_FOOTER || len + 12 > size {
        return Err(format!("a Puffin footer of {len} bytes in a {size}-byte file"));
    }
    let json = input.bytes(size - 12 - len..size - 12).map_err(|e| e.to_string())?;
    let footer: serde_json::Value =
        serde_json::from_slice(&json).map_err(|e| format!("the Puffin footer is not JSON: {e}"))?;
    let mut out = HashMap::new();
    let blobs = footer.get("blobs").and_then(serde_json::Value::as_array);
    for b in blobs.into_iter().flatten() {
        if b.get("type").and_then(serde_json::Value::as_str) != Some("deletion-vector-v1") {
            continue;
        }
        let data = b
            .pointer("/properties/referenced-data-file")
            .and_then(serde_json::Value::as_str)
            .ok_or("a deletion vector names no data file")?;
        if b.get("compression-codec").is_some_and(|c| !c.is_null()) {
            return Err(format!("the deletion vector of {data} is compressed"));
        }
        let (Some(offset), Some(length)) = (
            b.get("offset").and_then(serde_json::Value::as_u64),
            b.get("length").and_then(serde_json::Value::as_u64),
        ) else {
            return Err(format!("the deletion vector of {data} has no offset and length"));
        };
        out.insert(data.to_string(), (offset, length));
    }
    Ok(out)
}

/// An equality delete file's rows, as keys of its equality columns.
#[derive(Debug)]
pub(super) struct Keys {
    ids: Vec<i32>,
    types: Vec<DataType>,
    keys: HashSet<Vec<u8>>,
}

fn converter(types: &[DataType]) -> Result<RowConverter, ReadError> {
    Ok(RowConverter::new(
        types.iter().map(|t| SortField::new(t.clone())).collect(),
    )?)
}

fn keys(path: &std::path::Path, ids: &[i32]) -> Result<Keys, String> {
    let wanted: Vec<(i32, &str)> = ids.iter().map(|i| (*i, "")).collect();
    let (source, columns) = open(path, &wanted)?;
    let mut types: Option<Vec<DataType>> = None;
    let mut keys = HashSet::new();
    for unit in 0..source.units() {
        source
            .read(unit, &columns, &mut |b| {
                let arrays: Vec<ArrayRef> = b.batch.columns().to_vec();
                let t = types.get_or_insert_with(|| arrays.iter().map(|a| a.data_type().clone()).collect());
                let rows = converter(t)?.convert_columns(&arrays)?;
                keys.extend(rows.iter().map(|r| r.as_ref().to_vec()));
                Ok(())
            })
            .map_err(|e| e.to_string())?;
    }
    let types = match types {
        Some(t) => t,
        None => columns
            .iter()
            .map(|&c| source.stored_type(c).unwrap_or(DataType::Null))
            .collect(),
    };
    Ok(Keys {
        ids: ids.to_vec(),
        types,
        keys,
    })
}

/// The rows of the data file whose equality columns equal a delete row's
/// (null equals null), compared in the delete file's types.
fn matching(
    keys: &Keys,
    inner: &dyn Source,
    stored: &Stored<'_>,
    constant: &Constant<'_>,
) -> Result<Vec<u64>, ReadError> {
    if keys.keys.is_empty() {
        return Ok(Vec::new());
    }
    let mut projection = Vec::new();
    let mut sources = Vec::new();
    for (&id, ty) in keys.ids.iter().zip(&keys.types) {
        match stored(id) {
            Some(i) => {
                sources.push(Ok(projection.len()));
                projection.push(i);
            }
            None => {
                let one = match constant(id)? {
                    Some(one) => arrow::compute::cast(&one, ty)?,
                    None => new_null_array(ty, 1),
                };
                sources.push(Err(one));
            }
        }
    }
    if projection.is_empty() {
        if inner.columns().is_empty() {
            return Err(ReadError::new("the data file has no column to count its rows by"));
        }
        projection.push(0);
    }
    let converter = converter(&keys.types)?;
    let mut out = Vec::new();
    for unit in 0..inner.units() {
        inner.read(unit, &projection, &mut |b| {
            let rows = b.batch.num_rows();
            let mut arrays = Vec::with_capacity(sources.len());
            for (s, ty) in sources.iter().zip(&keys.types) {
                arrays.push(match s {
                    Ok(k) => arrow::compute::cast(b.batch.column(*k), ty)?,
                    Err(one) => {
                        let zeros = arrow::array::UInt32Array::from(vec![0u32; rows]);
                        arrow::compute::take(one.as_ref(), &zeros, None)?
                    }
                });
            }
            let converted = converter.convert_columns(&arrays)?;
            for (i, row) in converted.iter().enumerate() {
                if keys.keys.contains(row.as_ref()) {
                    out.push(b.first_row + i as u64);
                }
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// The Arrow type a primitive Iceberg type reads as.
pub(super) fn arrow_type(primitive: &str) -> Option<DataType> {
    let utc = Some("+00:00".into());
    Some(match primitive.trim() {
        "boolean" => DataType::Boolean,
        "int" => DataType::Int32,
        "long" => DataType::Int64,
        "float" => DataType::Float32,
        "double" => DataType::Float64,
        "date" => DataType::Date32,
        "time" => DataType::Time64(TimeUnit::Microsecond),
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "timestamptz" => DataType::Timestamp(TimeUnit::Microsecond, utc),
        "timestamp_ns" => DataType::Timestamp(TimeUnit::Nanosecond, None),
        "timestamptz_ns" => DataType::Timestamp(TimeUnit::Nanosecond, utc),
        "string" => DataType::Utf8,
        "uuid" => DataType::FixedSizeBinary(16),
        "binary" => DataType::Binary,
        p => {
            if let Some(n) = p.strip_prefix("fixed[").and_then(|r| r.strip_suffix(']')) {
                DataType::FixedSizeBinary(n.trim().parse().ok()?)
            } else if let Some(ps) = p.strip_prefix("decimal(").and_then(|r| r.strip_suffix(')')) {
                let (precision, scale) = ps.split_once(',')?;
                DataType::Decimal128(precision.trim().parse().ok()?, scale.trim().parse().ok()?)
            } else {
                return None;
            }
        }
    })
}

/// A null of column `c`'s type, one element long (for a column its data
/// file predates); `None` for a nested column.
pub(super) fn null_of(c: &Column) -> Option<ArrayRef> {
    arrow_type(c.primitive.as_deref()?).map(|t| new_null_array(&t, 1))
}

/// A partition value (Iceberg's Avro encoding of the column's type) as a
/// one-element array of column `c`'s type.
pub(super) fn scalar(c: &Column, value: &avro::Value) -> Result<ArrayRef, ReadError> {
    use arrow::array::*;
    let ty = c
        .primitive
        .as_deref()
        .and_then(arrow_type)
        .ok_or_else(|| ReadError::new(format!("partition column {} has a type preflight cannot hold", c.name)))?;
    let bad = || {
        ReadError::new(format!(
            "partition column {}: a value {value:?} that is not a {ty}",
            c.name
        ))
    };
    let long = || value.as_i64().ok_or_else(bad);
    let array: ArrayRef = match (&ty, value) {
        (_, avro::Value::Null) => new_null_array(&ty, 1),
        (DataType::Boolean, avro::Value::Boolean(b)) => Arc::new(BooleanArray::from(vec![*b])),
        (DataType::Int32, _) => Arc::new(Int32Array::from(vec![i32::try_from(long()?).map_err(|_| bad())?])),
        (DataType::Int64, _) => Arc::new(Int64Array::from(vec![long()?])),
        (DataType::Float32, avro::Value::Float(f)) => Arc::new(Float32Array::from(vec![*f])),
        (DataType::Float64, avro::Value::Double(f)) => Arc::new(Float64Array::from(vec![*f])),
        (DataType::Float64, avro::Value::Float(f)) => Arc::new(Float64Array::from(vec![f64::from(*f)])),
        (DataType::Date32, _) => Arc::new(Date32Array::from(vec![i32::try_from(long()?).map_err(|_| bad())?])),
        (DataType::Utf8, avro::Value::String(s)) => Arc::new(StringArray::from(vec![s.as_str()])),
        (DataType::Binary, avro::Value::Bytes(b)) => Arc::new(BinaryArray::from(vec![b.as_slice()])),
        (DataType::FixedSizeBinary(n), avro::Value::Bytes(b)) if usize::try_from(*n).ok() == Some(b.len()) => {
            Arc::new(FixedSizeBinaryArray::try_from_iter(std::iter::once(b.as_slice()))?)
        }
        (DataType::Decimal128(p, s), avro::Value::Bytes(b)) if !b.is_empty() && b.len() <= 16 => {
            // Big-endian two's complement, sign-extended.
            let mut full = [if b[0] & 0x80 != 0 { 0xff } else { 0 }; 16];
            full[16 - b.len()..].copy_from_slice(b);
            Arc::new(Decimal128Array::from(vec![i128::from_be_bytes(full)]).with_precision_and_scale(*p, *s)?)
        }
        (DataType::Time64(_) | DataType::Timestamp(..), _) => {
            arrow::compute::cast(&Int64Array::from(vec![long()?]), &ty)?
        }
        _ => return Err(bad()),
    };
    Ok(array)
}
