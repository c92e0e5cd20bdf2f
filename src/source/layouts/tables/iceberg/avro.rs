//! Avro object container files, as Iceberg writes its manifest lists and
//! manifests: the header's metadata and writer schema, then every record
//! decoded by that schema.
//!
//! Why by hand: the `apache-avro` crate brings about fifteen crates (mostly
//! procedural macros) into a build whose CI time is near its ceiling, and
//! Iceberg's metadata uses only a small part of Avro (records, unions with
//! null, arrays, maps, the primitive types and fixed) and the codecs
//! (deflate, snappy, zstandard) this crate already depends on. Fields are
//! kept with their Iceberg `field-id`, since Iceberg resolves manifest
//! fields by id, not by name.
//!
//! Every length and count is checked against the bytes left before anything
//! is allocated, and a block inflates to at most [`MAX_BLOCK`] bytes, so a
//! hostile file costs no more memory than its size allows.

use std::collections::HashMap;
use std::io::Read;
use std::sync::{Arc, Mutex};

use serde_json::Value as Json;

/// The most bytes one block may inflate to.
const MAX_BLOCK: u64 = 256 << 20;
/// The deepest nesting a writer schema may have.
const MAX_DEPTH: usize = 64;

/// A writer schema, with named types resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Schema {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Fixed(usize),
    Enum(usize),
    Array(Box<Schema>),
    Map(Box<Schema>),
    Union(Vec<Schema>),
    Record(Vec<Field>),
}

/// A record's field: its name, Iceberg field id (when the schema gives
/// one) and schema.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Field {
    pub name: String,
    pub id: Option<i32>,
    pub schema: Schema,
}

/// A decoded value. A union's value is its branch's (null is `Null`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Boolean(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Bytes(Vec<u8>),
    String(String),
    Enum(usize),
    Array(Vec<Value>),
    Map(Vec<(String, Value)>),
    Record(Vec<Value>),
}

impl Value {
    pub(crate) fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(i64::from(*i)),
            Value::Long(l) => Some(*l),
            _ => None,
        }
    }

    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }
}

/// A container file read whole: its metadata, writer schema and records.
#[derive(Debug)]
pub(crate) struct File {
    pub metadata: HashMap<String, Vec<u8>>,
    pub schema: Arc<Schema>,
    pub records: Vec<Value>,
}

/// Writer schemas already parsed, by their JSON text. The manifests of one
/// table mostly share one schema, and parsing it costs more than decoding a
/// small manifest's records, so the files of one read share this.
#[derive(Debug, Default)]
pub(crate) struct Schemas(Mutex<HashMap<Vec<u8>, Arc<Schema>>>);

impl Schemas {
    /// The most schemas kept: a table with more (hostile, or evolved that
    /// often) has the rest parsed per file.
    const KEPT: usize = 64;

    fn parsed(&self, text: &[u8]) -> Result<Arc<Schema>, String> {
        if let Some(schema) = self.0.lock().ok().and_then(|m| m.get(text).cloned()) {
            return Ok(schema);
        }
        let json: Json =
            serde_json::from_slice(text).map_err(|e| format!("the Avro header's schema is not JSON: {e}"))?;
        let schema = Arc::new(parse(&json, &mut HashMap::new(), 0)?);
        if let Ok(mut kept) = self.0.lock()
            && kept.len() < Self::KEPT
        {
            kept.insert(text.to_vec(), Arc::clone(&schema));
        }
        Ok(schema)
    }
}

impl File {
    /// The record field with Iceberg id `id` (or else named `name`), by
    /// its place in the writer schema.
    pub(crate) fn field(&self, id: i32, name: &str) -> Option<usize> {
        let Schema::Record(fields) = self.schema.as_ref() else {
            return None;
        };
        fields
            .iter()
            .position(|f| f.id == Some(id))
            .or_else(|| fields.iter().position(|f| f.id.is_none() && f.name == name))
    }
}

/// Decodes a whole container file, its writer schema parsed once per
/// `schemas`.
pub(crate) fn read(bytes: &[u8], schemas: &Schemas) -> Result<File, String> {
    let mut r = Cursor { bytes, at: 0 };
    if r.take(4)? != b"Obj\x01" {
        return Err("not an Avro container file (no Obj\\x01 magic)".into());
    }
    let metadata = match decode(&mut r, &Schema::Map(Box::new(Schema::Bytes)), 0)? {
        Value::Map(m) => m
            .into_iter()
            .map(|(k, v)| match v {
                Value::Bytes(b) => (k, b),
                _ => (k, Vec::new()),
            })
            .collect::<HashMap<_, _>>(),
        _ => HashMap::new(),
    };
    let text = metadata
        .get("avro.schema")
        .ok_or("the Avro header has no avro.schema")?;
    let schema = schemas.parsed(text)?;
    let codec = match metadata
        .get("avro.codec")
        .map(|c| String::from_utf8_lossy(c).into_owned())
    {
        None => "null".to_string(),
        Some(c) => c,
    };
    let sync: [u8; 16] = r.take(16)?.try_into().map_err(|_| "short sync marker")?;
    let mut records = Vec::new();
    while r.at < bytes.len() {
        let count = r.long()?;
        let size = r.long()?;
        let (Ok(count), Ok(size)) = (u64::try_from(count), usize::try_from(size)) else {
            return Err(format!("a block claims {count} records in {size} bytes"));
        };
        let raw = r.take(size)?;
        let data = inflate(&codec, raw)?;
        if count > data.len() as u64 {
            return Err(format!("a block claims {count} records in {} bytes", data.len()));
        }
        let mut block = Cursor { bytes: &data, at: 0 };
        for _ in 0..count {
            records.push(decode(&mut block, &schema, 0)?);
        }
        if r.take(16)? != sync {
            return Err("a block does not end with the file's sync marker".into());
        }
    }
    Ok(File {
        metadata,
        schema,
        records,
    })
}

/// A block's data, decompressed by the file's codec.
fn inflate(codec: &str, raw: &[u8]) -> Result<Vec<u8>, String> {
    let bounded = |mut r: Box<dyn Read + '_>| -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        (&mut r)
            .take(MAX_BLOCK + 1)
            .read_to_end(&mut out)
            .map_err(|e| format!("a {codec} block cannot be decompressed: {e}"))?;
        if out.len() as u64 > MAX_BLOCK {
            return Err(format!("a block inflates past {MAX_BLOCK} bytes"));
        }
        Ok(out)
    };
    match codec {
        "null" => Ok(raw.to_vec()),
        // The block is in memory: no buffered reader over it.
        "deflate" => bounded(Box::new(flate2::bufread::DeflateDecoder::new(raw))),
        "zstandard" => bounded(Box::new(
            zstd::stream::read::Decoder::new(raw).map_err(|e| format!("a zstandard block: {e}"))?,
        )),
        "snappy" => {
            // A raw snappy block, then the CRC-32 of what it decompresses to.
            let body = raw
                .len()
                .checked_sub(4)
                .map(|n| &raw[..n])
                .ok_or("a snappy block is cut short")?;
            let len = snap::raw::decompress_len(body).map_err(|e| format!("a snappy block: {e}"))?;
            if len as u64 > MAX_BLOCK {
                return Err(format!("a block inflates past {MAX_BLOCK} bytes"));
            }
            let out = snap::raw::Decoder::new()
                .decompress_vec(body)
                .map_err(|e| format!("a snappy block: {e}"))?;
            let crc = u32::from_be_bytes(raw[raw.len() - 4..].try_into().map_err(|_| "short CRC")?);
            if crc32fast::hash(&out) != crc {
                return Err("a snappy block fails its CRC-32".into());
            }
            Ok(out)
        }
        other => Err(format!("the Avro codec {other:?} is not read")),
    }
}

/// A writer schema from its JSON; `named` holds the named types seen.
fn parse(json: &Json, named: &mut HashMap<String, Schema>, depth: usize) -> Result<Schema, String> {
    if depth > MAX_DEPTH {
        return Err("the Avro schema nests too deep".into());
    }
    match json {
        Json::String(name) => primitive(name)
            .or_else(|| named.get(name.as_str()).cloned())
            .or_else(|| {
                // A name may be referenced without its namespace.
                let short = name.rsplit('.').next().unwrap_or(name);
                named.get(short).cloned()
            })
            .ok_or_else(|| format!("the Avro schema names an unknown type {name:?}")),
        Json::Array(branches) => Ok(Schema::Union(
            branches
                .iter()
                .map(|b| parse(b, named, depth + 1))
                .collect::<Result<_, _>>()?,
        )),
        Json::Object(o) => {
            let kind = o.get("type").ok_or("an Avro schema object has no type")?;
            let Json::String(kind) = kind else {
                return parse(kind, named, depth + 1);
            };
            let schema = match kind.as_str() {
                "record" | "error" => {
                    let fields = o
                        .get("fields")
                        .and_then(Json::as_array)
                        .ok_or("an Avro record has no fields")?;
                    // Registered before its fields: a record may refer to itself.
                    let name = o.get("name").and_then(Json::as_str).unwrap_or_default().to_string();
                    let mut out = Vec::with_capacity(fields.len().min(1024));
                    for f in fields {
                        let fname = f
                            .get("name")
                            .and_then(Json::as_str)
                            .ok_or("an Avro field has no name")?;
                        let id = f
                            .get("field-id")
                            .and_then(Json::as_i64)
                            .and_then(|i| i32::try_from(i).ok());
                        let schema = parse(f.get("type").ok_or("an Avro field has no type")?, named, depth + 1)?;
                        out.push(Field {
                            name: fname.to_string(),
                            id,
                            schema,
                        });
                    }
                    let schema = Schema::Record(out);
                    register(named, &name, o.get("namespace"), &schema);
                    return Ok(schema);
                }
                "enum" => Schema::Enum(o.get("symbols").and_then(Json::as_array).map_or(0, Vec::len)),
                "fixed" => Schema::Fixed(
                    o.get("size")
                        .and_then(Json::as_u64)
                        .and_then(|s| usize::try_from(s).ok())
                        .ok_or("an Avro fixed has no size")?,
                ),
                "array" => Schema::Array(Box::new(parse(
                    o.get("items").ok_or("an Avro array has no items")?,
                    named,
                    depth + 1,
                )?)),
                "map" => Schema::Map(Box::new(parse(
                    o.get("values").ok_or("an Avro map has no values")?,
                    named,
                    depth + 1,
                )?)),
                other => primitive(other).ok_or_else(|| format!("unknown Avro type {other:?}"))?,
            };
            if let Some(name) = o.get("name").and_then(Json::as_str) {
                register(named, name, o.get("namespace"), &schema);
            }
            Ok(schema)
        }
        _ => Err("an Avro schema is neither a name, a union nor an object".into()),
    }
}

fn register(named: &mut HashMap<String, Schema>, name: &str, namespace: Option<&Json>, schema: &Schema) {
    if name.is_empty() {
        return;
    }
    named.insert(name.to_string(), schema.clone());
    if let Some(ns) = namespace
        .and_then(Json::as_str)
        .filter(|n| !n.is_empty() && !name.contains('.'))
    {
        named.insert(format!("{ns}.{name}"), schema.clone());
    }
}

fn primitive(name: &str) -> Option<Schema> {
    Some(match name {
        "null" => Schema::Null,
        "boolean" => Schema::Boolean,
        "int" => Schema::Int,
        "long" => Schema::Long,
        "float" => Schema::Float,
        "double" => Schema::Double,
        "bytes" => Schema::Bytes,
        "string" => Schema::String,
        _ => return None,
    })
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if n > self.left() {
            return Err(format!("cut short: {n} bytes wanted, {} left", self.left()));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    /// A zig-zag varint.
    fn long(&mut self) -> Result<i64, String> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.take(1)?.first().unwrap_or(&0);
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err("a varint runs past 10 bytes".into())
    }

    fn len(&mut self) -> Result<usize, String> {
        let n = self.long()?;
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.left())
            .ok_or_else(|| format!("cut short: a length of {n} with {} bytes left", self.left()))
    }

    /// An array or map block's item count (0 ends it); a negative count is
    /// followed by the block's size in bytes. Items take at least a byte
    /// each, which bounds the count.
    fn block_count(&mut self) -> Result<usize, String> {
        let mut n = self.long()?;
        if n < 0 {
            n = n.checked_neg().ok_or("a block count overflows")?;
            self.long()?;
        }
        usize::try_from(n)
            .ok()
            .filter(|&n| n <= self.left())
            .ok_or_else(|| format!("cut short: a block of {n} items with {} bytes left", self.left()))
    }
}

fn decode(r: &mut Cursor<'_>, schema: &Schema, depth: usize) -> Result<Value, String> {
    if depth > MAX_DEPTH {
        return Err("a value nests too deep".into());
    }
    Ok(match schema {
        Schema::Null => Value::Null,
        Schema::Boolean => Value::Boolean(r.take(1)?[0] != 0),
        Schema::Int => Value::Int(i32::try_from(r.long()?).map_err(|_| "an int past 32 bits")?),
        Schema::Long => Value::Long(r.long()?),
        Schema::Float => Value::Float(f32::from_le_bytes(r.take(4)?.try_into().map_err(|_| "float")?)),
        Schema::Double => Value::Double(f64::from_le_bytes(r.take(8)?.try_into().map_err(|_| "double")?)),
        Schema::Bytes => {
            let n = r.len()?;
            Value::Bytes(r.take(n)?.to_vec())
        }
        Schema::String => {
            let n = r.len()?;
            Value::String(String::from_utf8(r.take(n)?.to_vec()).map_err(|_| "a string is not UTF-8")?)
        }
        Schema::Fixed(n) => Value::Bytes(r.take(*n)?.to_vec()),
        Schema::Enum(symbols) => {
            let i = r.long()?;
            match usize::try_from(i).ok().filter(|i| i < symbols) {
                Some(i) => Value::Enum(i),
                None => return Err(format!("enum index {i} of {symbols} symbols")),
            }
        }
        Schema::Union(branches) => {
            let i = r.long()?;
            let branch = usize::try_from(i)
                .ok()
                .and_then(|i| branches.get(i))
                .ok_or_else(|| format!("union branch {i} of {}", branches.len()))?;
            decode(r, branch, depth + 1)?
        }
        Schema::Array(items) => Value::Array(blocks(r, |r| decode(r, items, depth + 1))?),
        Schema::Map(values) => Value::Map(blocks(r, |r| {
            let len = r.len()?;
            let key = String::from_utf8(r.take(len)?.to_vec()).map_err(|_| "a map key is not UTF-8")?;
            Ok((key, decode(r, values, depth + 1)?))
        })?),
        Schema::Record(fields) => Value::Record(
            fields
                .iter()
                .map(|f| decode(r, &f.schema, depth + 1))
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// The items of an array or map: blocks of items, until a block of none.
fn blocks<'a, T>(
    r: &mut Cursor<'a>,
    mut item: impl FnMut(&mut Cursor<'a>) -> Result<T, String>,
) -> Result<Vec<T>, String> {
    let mut out = Vec::new();
    loop {
        let n = r.block_count()?;
        if n == 0 {
            return Ok(out);
        }
        out.reserve(n);
        for _ in 0..n {
            out.push(item(r)?);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(bytes: &[u8]) -> Result<File, String> {
        super::read(bytes, &Schemas::default())
    }

    fn zigzag(out: &mut Vec<u8>, v: i64) {
        let mut z = ((v << 1) ^ (v >> 63)) as u64;
        loop {
            let b = (z & 0x7f) as u8;
            z >>= 7;
            if z == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
    }

    fn bytes(out: &mut Vec<u8>, b: &[u8]) {
        zigzag(out, b.len() as i64);
        out.extend_from_slice(b);
    }

    /// A container file of `schema` holding `blocks`, each (count, data).
    fn container(schema: &str, codec: &str, blocks: &[(i64, Vec<u8>)]) -> Vec<u8> {
        let mut out = b"Obj\x01".to_vec();
        zigzag(&mut out, 2);
        bytes(&mut out, b"avro.schema");
        bytes(&mut out, schema.as_bytes());
        bytes(&mut out, b"avro.codec");
        bytes(&mut out, codec.as_bytes());
        zigzag(&mut out, 0);
        out.extend_from_slice(&[7; 16]);
        for (count, data) in blocks {
            zigzag(&mut out, *count);
            let data = match codec {
                "deflate" => {
                    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
                    std::io::Write::write_all(&mut e, data).expect("deflate");
                    e.finish().expect("deflate")
                }
                _ => data.clone(),
            };
            bytes(&mut out, &data);
            out.extend_from_slice(&[7; 16]);
        }
        out
    }

    const SCHEMA: &str = r#"{"type":"record","name":"e","fields":[
        {"name":"path","type":"string","field-id":100},
        {"name":"n","type":["null","long"],"field-id":103},
        {"name":"m","type":["null",{"type":"array","items":{"type":"record","name":"k_v","fields":[
            {"name":"key","type":"int","field-id":126},{"name":"value","type":"bytes","field-id":127}]}}]}]}"#;

    fn record(path: &str, n: Option<i64>, m: &[(i32, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        bytes(&mut out, path.as_bytes());
        match n {
            None => zigzag(&mut out, 0),
            Some(n) => {
                zigzag(&mut out, 1);
                zigzag(&mut out, n);
            }
        }
        zigzag(&mut out, 1);
        zigzag(&mut out, m.len() as i64);
        for (k, v) in m {
            zigzag(&mut out, i64::from(*k));
            bytes(&mut out, v);
        }
        if !m.is_empty() {
            zigzag(&mut out, 0);
        }
        out
    }

    #[test]
    fn records_decode_by_the_writer_schema_with_field_ids() {
        let mut block = record("a.parquet", Some(-3), &[(1, b"\x01\x00"), (2, b"")]);
        block.extend(record("b.parquet", None, &[]));
        for codec in ["null", "deflate"] {
            let file = read(&container(
                SCHEMA,
                codec,
                &[(2, block.clone()), (1, record("c", Some(1 << 40), &[]))],
            ))
            .expect(codec);
            assert_eq!(file.field(100, "path"), Some(0));
            assert_eq!(file.field(103, "x"), Some(1));
            assert_eq!(file.field(999, "m"), Some(2));
            assert_eq!(file.records.len(), 3);
            assert_eq!(
                file.records[0],
                Value::Record(vec![
                    Value::String("a.parquet".into()),
                    Value::Long(-3),
                    Value::Array(vec![
                        Value::Record(vec![Value::Int(1), Value::Bytes(vec![1, 0])]),
                        Value::Record(vec![Value::Int(2), Value::Bytes(vec![])]),
                    ]),
                ])
            );
            assert_eq!(
                file.records[1].clone(),
                Value::Record(vec![
                    Value::String("b.parquet".into()),
                    Value::Null,
                    Value::Array(vec![])
                ])
            );
            assert_eq!(
                file.records[2],
                Value::Record(vec![
                    Value::String("c".into()),
                    Value::Long(1 << 40),
                    Value::Array(vec![])
                ])
            );
        }
    }

    #[test]
    fn files_sharing_a_schema_share_its_parse() {
        let schemas = Schemas::default();
        let one = container(SCHEMA, "deflate", &[(1, record("a", None, &[]))]);
        let two = container(SCHEMA, "null", &[(1, record("b", Some(2), &[]))]);
        let other = SCHEMA.replace("\"n\"", "\"count\"");
        let three = container(&other, "null", &[(1, record("c", None, &[]))]);
        let (one, two, three) = (
            super::read(&one, &schemas).unwrap(),
            super::read(&two, &schemas).unwrap(),
            super::read(&three, &schemas).unwrap(),
        );
        assert!(Arc::ptr_eq(&one.schema, &two.schema));
        assert!(!Arc::ptr_eq(&one.schema, &three.schema));
        let Schema::Record(fields) = three.schema.as_ref() else {
            panic!("{:?}", three.schema)
        };
        assert_eq!(fields[1].name, "count");
        assert_eq!(
            two.records[0],
            Value::Record(vec![Value::String("b".into()), Value::Long(2), Value::Array(vec![])])
        );
        // A file whose schema is not JSON is an error, and is not kept.
        assert!(super::read(&container("{", "null", &[]), &schemas).is_err());
        assert_eq!(schemas.0.lock().unwrap().len(), 2);
    }

    #[test]
    fn hostile_files_are_errors() {
        let good = container(SCHEMA, "null", &[(1, record("a", Some(1), &[]))]);
        // Cut anywhere but right after the header (a file of no blocks).
        let header = container(SCHEMA, "null", &[]).len();
        assert_eq!(read(&good[..header]).map(|f| f.records.len()), Ok(0));
        for cut in (0..good.len()).filter(|&c| c != header) {
            assert!(read(&good[..cut]).is_err(), "cut at {cut}");
        }
        // A count past the block's bytes, a string claiming 2^40 bytes, an
        // unknown codec, a bad sync marker.
        assert!(read(&container(SCHEMA, "null", &[(1 << 40, record("a", None, &[]))])).is_err());
        let mut huge = Vec::new();
        zigzag(&mut huge, 1 << 40);
        assert!(read(&container(SCHEMA, "null", &[(1, huge)])).is_err());
        assert!(read(&container(SCHEMA, "lzo", &[(1, record("a", None, &[]))])).is_err());
        let mut bad_sync = good.clone();
        let n = bad_sync.len();
        bad_sync[n - 1] ^= 1;
        assert!(read(&bad_sync).is_err());
        assert!(
            read(&container(
                r#"{"type":"record","fields":[{"name":"x","type":"nope"}]}"#,
                "null",
                &[]
            ))
            .is_err()
        );
        let deep = format!("{}\"int\"{}", "[".repeat(100), "]".repeat(100));
        assert!(read(&container(&deep, "null", &[])).is_err());
    }
}
