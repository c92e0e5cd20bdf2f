//! Differential test: random tables written by every writer, codec, page
//! format and encoding that matters (pyarrow, polars, DuckDB and the parquet
//! crate's Parquet; pyarrow Arrow IPC files and streams, compressed or not;
//! big-endian IPC, which no writer on a little-endian machine produces, is
//! the interop corpus's `1.0.0-bigendian` set), each checked by
//! preflight and compared value for value with pyarrow's reading of the same
//! file (tests/fixtures/interop/oracle.py computes the report it owes).
//!
//! The tables are seeded: int8..int64 and uint8..uint64 columns with nulls,
//! list<int32>, large_list<int64>, list<list<int16>>, list<uint64>, a
//! dictionary of int64 (with violating entries no row uses), a fixed-size
//! list of uint16 and a list of dictionary-encoded int16. Each column's size
//! makes a few percent of its values violate, boundaries (0, size - 1, size,
//! -1, the type's extremes) included, uint32 values above 2^31 and uint64
//! values above 2^63 valid; rows alternate between clean and dirty stretches
//! of 1,500, so that statistics prove some row groups and pages valid and
//! the run without `--full-scan` takes its shortcuts. Every example is kept
//! (`--max-examples 1000000000`) and compared, with and without
//! `--full-scan`; all discrepancies are listed at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::Value;

use crate::interop::{Mismatches, check_readable, check_refused, corpus};
use crate::util::Env;

/// Writes the files and `expected.json`: [{path, readable, rows, columns,
/// schema}] (for a file pyarrow refuses: {path, readable: false, error, schema}).
const GENERATE: &str = r#"
import sys
sys.path.insert(0, @ORACLE_DIR@)
import oracle
import pyarrow.ipc as ipc
import polars as pl
import duckdb

rng = np.random.default_rng(20240613)
N = 6000

def rate(n):
    # Clean and dirty stretches of 1500 rows, so that some row groups and
    # pages hold no violation and their statistics can prove them valid.
    r = np.arange(n)
    return np.where((r // 1500) % 2 == 1, 0.05, 0.0)

def ints(n, lo, hi, size, rates, extremes, null=0.03):
    # Valid values are uniform in [0, size), boundaries 0 and size-1 among
    # them; a violation is a value in [lo, 0) or [size, hi], the type's
    # extremes and size itself among them.
    v = [int(x) for x in rng.integers(0, size, n, dtype=np.uint64 if size > 2**62 else np.int64)]
    bad = rng.random(n) < rates
    for i in np.nonzero(bad)[0]:
        k = rng.integers(0, 4)
        if k == 0:
            v[i] = extremes[int(rng.integers(0, len(extremes)))]
        elif k == 1 or lo >= 0:
            v[i] = size + int(rng.integers(0, min(hi - size, 2**62) + 1))
        else:
            v[i] = -int(rng.integers(1, min(-lo, 2**62) + 1))
    good = ~bad
    for i in np.nonzero(good & (rng.random(n) < 0.01))[0]:
        v[i] = [0, size - 1][int(rng.integers(0, 2))]
    return [None if rng.random() < null else x for x in v]

def lists(n, depth, lo, hi, size, rates, extremes, maxlen=6):
    out = []
    for r in range(n):
        if rng.random() < 0.04:
            out.append(None)
            continue
        k = int(rng.integers(0, maxlen + 1))
        if depth == 1:
            out.append(ints(k, lo, hi, size, np.full(k, rates[r]), extremes, null=0.03))
        else:
            out.append(lists(k, depth - 1, lo, hi, size, np.full(k, rates[r]), extremes, maxlen=3))
    return out

rates = rate(N)
SIZES = {}
cols = {}
def scalar(name, t, size):
    info = np.iinfo(t.to_pandas_dtype())
    lo, hi = int(info.min), int(info.max)
    SIZES[name] = size
    cols[name] = pa.array(ints(N, lo, hi, size, rates, [lo, hi, size, -1] if lo < 0 else [hi, size]), t)

scalar("i8", pa.int8(), 100)
scalar("i16", pa.int16(), 1000)
scalar("i32", pa.int32(), 50000)
scalar("i64", pa.int64(), 2**40)
scalar("u8", pa.uint8(), 200)
scalar("u16", pa.uint16(), 30000)
scalar("u32", pa.uint32(), 3_000_000_000)            # valid values above 2^31
scalar("u64", pa.uint64(), 2**63 + 12345)            # valid values above 2^63
SIZES["list_i32"] = 5000
cols["list_i32"] = pa.array(lists(N, 1, -2**31, 2**31 - 1, 5000, rates, [-2**31, 2**31 - 1, 5000, -1]), pa.list_(pa.int32()))
SIZES["large_list_i64"] = 10**12
cols["large_list_i64"] = pa.array(lists(N, 1, -2**63, 2**63 - 1, 10**12, rates, [-2**63, 2**63 - 1, 10**12, -1]), pa.large_list(pa.int64()))
SIZES["list_list_i16"] = 700
cols["list_list_i16"] = pa.array(lists(N, 2, -2**15, 2**15 - 1, 700, rates, [-2**15, 2**15 - 1, 700, -1]), pa.list_(pa.list_(pa.int16())))
SIZES["list_u64"] = 2**64 - 1
cols["list_u64"] = pa.array(lists(N, 1, 0, 2**64 - 1, 2**64 - 1, rates, [2**64 - 1]), pa.list_(pa.uint64()))
# Dictionary of integers: 40 entries, the last 8 out of range; unused
# entries (a violating one among them) are not values.
SIZES["dict_i64"] = 10**6
entries = [int(x) for x in rng.integers(0, 10**6, 32)] + [10**6, 10**6 + 1, -5, 2**62, -2**63, 2**63 - 1, 10**7, 10**6 + 7] + [-99]
idx = [int(rng.integers(32, 40)) if rng.random() < rates[r] else int(rng.integers(0, 32)) for r in range(N)]
idx = [None if rng.random() < 0.03 else i for i in idx]
cols["dict_i64"] = pa.DictionaryArray.from_arrays(pa.array(idx, pa.int32()), pa.array(entries, pa.int64()))
SIZES["fsl_u16"] = 40000
fsl = ints(N * 3, 0, 65535, 40000, np.repeat(rates, 3), [65535, 40000])
cols["fsl_u16"] = pa.FixedSizeListArray.from_arrays(pa.array(fsl, pa.uint16()), 3, mask=pa.array(rng.random(N) < 0.03))
SIZES["list_dict_i16"] = 300
small = [int(x) for x in rng.integers(0, 300, 20)] + [300, -1, 32767, 1000]
rows = []
for r in range(N):
    if rng.random() < 0.04:
        rows.append(None)
        continue
    k = int(rng.integers(0, 5))
    rows.append([None if rng.random() < 0.03 else int(rng.integers(20, 24)) if rng.random() < rates[r] else int(rng.integers(0, 20)) for _ in range(k)])
flat = [i for row in rows if row for i in row]
offsets = [0]
for row in rows:
    offsets.append(offsets[-1] + (len(row) if row else 0))
dvals = pa.DictionaryArray.from_arrays(pa.array(flat, pa.int8()), pa.array(small, pa.int16()))
cols["list_dict_i16"] = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), dvals, mask=pa.array([r is None for r in rows]))
table = pa.table(cols)

files = []
def parquet(name, t, **kw):
    pq.write_table(t, name, **kw)
    files.append(name)

codecs = ["none", "snappy", "gzip", "zstd", "lz4", "brotli"]
k = 0
for codec in codecs:
    for version in ["1.0", "2.0"]:
        for dictionary in [True, False]:
            parquet(
                f"pa-{codec}-v{version[0]}-{'dict' if dictionary else 'plain'}.parquet",
                table,
                compression=codec,
                data_page_version=version,
                use_dictionary=dictionary,
                data_page_size=[512, 4096, 1 << 20][k % 3],
                row_group_size=[700, 1500, 2500, 6000][k % 4],
                write_batch_size=[64, 1024][k % 2],
                write_statistics=k % 5 != 4,
                write_page_index=k % 3 == 1,
                dictionary_pagesize_limit=[256, 1 << 20][k % 2],
            )
            k += 1
flat_ints = ["i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]
parquet("pa-delta.parquet", table, use_dictionary=False, column_encoding={c: "DELTA_BINARY_PACKED" for c in flat_ints},
        data_page_version="2.0", data_page_size=2048, row_group_size=2000)
parquet("pa-bss.parquet", table, use_dictionary=False, column_encoding={c: "BYTE_STREAM_SPLIT" for c in flat_ints},
        compression="zstd", data_page_size=1024, row_group_size=3000)
parquet("pa-noschema.parquet", table, store_schema=False, compression="snappy", row_group_size=1000, data_page_size=1024)
parquet("pa-legacy.parquet", table, version="1.0", use_compliant_nested_type=False, compression="gzip", row_group_size=4000)

# polars and DuckDB: the columns they carry (no dictionary, no fixed-size
# list of unsigned, no list of dictionary).
plain = table.drop_columns(["dict_i64", "fsl_u16", "list_dict_i16"])
df = pl.from_arrow(plain)
for codec, rg in [("zstd", 1000), ("snappy", None), ("lz4", 2500), ("uncompressed", None)]:
    name = f"polars-{codec}.parquet"
    df.write_parquet(name, compression=codec, row_group_size=rg, statistics=True)
    files.append(name)
con = duckdb.connect()
con.register("plain", plain)
# DuckDB's V2 files encode 32-bit columns with DELTA_BINARY_PACKED and a
# min delta outside the 32-bit range when their values span it: pyarrow
# ("InitBlock EOF") and arrow-rs ("'min_delta' too large") refuse those
# columns. Each V2 file is written twice: whole (pyarrow refuses it, so
# preflight must refuse it or answer consistently) and without those three
# columns (compared value for value).
narrow = plain.drop_columns(["i32", "u32", "list_i32"])
con.register("narrow", narrow)
for version in ["V1", "V2"]:
    for codec, rg in [("snappy", 2048), ("zstd", 100000)]:
        for src in ["plain"] + (["narrow"] if version == "V2" else []):
            name = f"duckdb-{version}-{codec}{'-narrow' if src == 'narrow' else ''}.parquet"
            con.execute(f"COPY (SELECT * FROM {src}) TO '{name}' (FORMAT parquet, PARQUET_VERSION {version}, COMPRESSION {codec}, ROW_GROUP_SIZE {rg})")
            files.append(name)

for codec in [None, "lz4", "zstd"]:
    opts = ipc.IpcWriteOptions(compression=codec)
    for kind, ext, new in [("file", "arrow", ipc.new_file), ("stream", "arrows", ipc.new_stream)]:
        name = f"ipc-{kind}-{codec or 'none'}.{ext}"
        with new(name, table.schema, options=opts) as w:
            for b in table.to_batches(max_chunksize=[700, 1100, 6000][len(files) % 3]):
                w.write_batch(b)
        files.append(name)

# What preflight must report: each file read back by pyarrow. The values are
# pyarrow's reading; a column that reads back equal to the column written
# (cast to the written type: writers turn list into large_list and rename
# list items) has the expectations of the written column, computed once.
SOURCE = {}
def expect(name, f, column):
    src = table.column(f.name)
    same = False
    for a, b in [(column, src), (src, column)]:  # dictionaries decode one way only
        try:
            same = same or a.cast(b.type).equals(b)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
    if same:
        if f.name not in SOURCE:
            SOURCE[f.name] = oracle.expected(table.schema.field(f.name), oracle.row_leaves(src), SIZES[f.name], 10**9)
        e = dict(SOURCE[f.name])
        e["type"] = str(f.type)
        return e
    print(f"{name}: column {f.name} ({f.type}) does not read back as written", file=sys.stderr)
    return oracle.expected(f, oracle.row_leaves(column), SIZES[f.name], 10**9)

out = []
for name in files:
    if name.endswith(".parquet"):
        try:
            t = pq.read_table(name)
        except OSError as e:
            if not name.startswith("duckdb-V2-") or name.endswith("-narrow.parquet"):
                raise
            sized = [(f.name, SIZES[f.name]) for f in pq.read_schema(name)]
            out.append({"path": name, "readable": False, "error": str(e), "schema": oracle.schema_yaml(sized)})
            continue
    elif name.endswith(".arrow"):
        t = ipc.open_file(name).read_all()
    else:
        t = ipc.open_stream(name).read_all()
    columns, sized = [], []
    for f in t.schema:
        if oracle.int_like(f.type) is not None:
            raise SystemExit(f"{name}: {f.name} read back as {f.type}")
        columns.append(expect(name, f, t.column(f.name)))
        sized.append((f.name, SIZES[f.name]))
    out.append({"path": name, "readable": True, "rows": t.num_rows, "columns": columns, "schema": oracle.schema_yaml(sized)})
json.dump(out, open("expected.json", "w"))
"#;

/// The same table rewritten by the parquet crate's own writer (`ArrowWriter`)
/// in several codecs, page versions and dictionary settings, small pages and
/// odd write batches, and the oracle's entries for them (sizes from each
/// file's own maximum, as for the corpus).
fn written_by_the_parquet_crate(env: &Env) -> Vec<Value> {
    use parquet::arrow::ArrowWriter;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use parquet::basic::{Compression, ZstdLevel};
    use parquet::file::properties::{WriterProperties, WriterVersion};

    let source = std::fs::File::open(env.path("pa-none-v1-plain.parquet")).expect("pyarrow's file");
    let reader = ParquetRecordBatchReaderBuilder::try_new(source)
        .expect("footer")
        .build()
        .expect("reader");
    let batches: Vec<_> = reader.map(|b| b.expect("batch")).collect();
    let schema = batches[0].schema();
    let variants = [
        (
            "rs-plain-v1.parquet",
            Compression::UNCOMPRESSED,
            WriterVersion::PARQUET_1_0,
            false,
        ),
        (
            "rs-snappy-v2-dict.parquet",
            Compression::SNAPPY,
            WriterVersion::PARQUET_2_0,
            true,
        ),
        (
            "rs-zstd-v1-dict.parquet",
            Compression::ZSTD(ZstdLevel::try_new(3).expect("level")),
            WriterVersion::PARQUET_1_0,
            true,
        ),
        (
            "rs-lz4raw-v2.parquet",
            Compression::LZ4_RAW,
            WriterVersion::PARQUET_2_0,
            false,
        ),
    ];
    let mut names = Vec::new();
    for (name, codec, version, dictionary) in variants {
        let props = WriterProperties::builder()
            .set_compression(codec)
            .set_writer_version(version)
            .set_dictionary_enabled(dictionary)
            .set_data_page_size_limit(1024)
            .set_max_row_group_row_count(Some(2500))
            .set_write_batch_size(37)
            .build();
        let file = std::fs::File::create(env.path(name)).expect("create");
        let mut writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).expect("writer");
        for b in &batches {
            writer.write(b).expect("write");
        }
        writer.close().expect("close");
        names.push(name);
    }
    let out = std::process::Command::new(crate::util::python_bin())
        .arg(corpus().join("oracle.py"))
        .args(["--kind", "parquet", "--examples", "1000000000"])
        .args(&names)
        .current_dir(env.dir.path())
        .output()
        .expect("oracle");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("oracle JSON");
    let files = doc["files"].as_array().expect("files").clone();
    assert_eq!(files.len(), names.len());
    assert!(
        files
            .iter()
            .all(|f| f["readable"] == true && f["columns"].as_array().is_some_and(|c| c.len() >= 8)),
        "pyarrow reads the parquet crate's files with their integer columns"
    );
    files
}

#[test]
fn every_writer_codec_and_page_format_reads_as_pyarrow_reads_it() {
    let started = Instant::now();
    let env = Env::new();
    let oracle_dir = corpus().to_string_lossy().into_owned();
    env.python(&GENERATE.replace("@ORACLE_DIR@", &format!("{oracle_dir:?}")));
    let text = std::fs::read_to_string(env.path("expected.json")).expect("expected.json");
    let mut entries: Vec<Value> = serde_json::from_str(&text).expect("expected.json is JSON");
    assert!(entries.len() >= 44, "every writer wrote: {}", entries.len());
    entries.extend(written_by_the_parquet_crate(&env));
    let refused: Vec<&str> = entries
        .iter()
        .filter(|e| e["readable"] != true)
        .map(|e| e["path"].as_str().expect("path"))
        .collect();
    assert!(
        refused
            .iter()
            .all(|p| p.starts_with("duckdb-V2-") && !p.ends_with("-narrow.parquet")),
        "pyarrow reads every file but DuckDB's whole V2 ones: {refused:?}"
    );
    let written = started.elapsed();
    let mm = Mismatches::default();
    let next = AtomicUsize::new(0);
    let worker = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(entry) = entries.get(i) else { break };
            let name = entry["path"].as_str().expect("path");
            let schema = format!("{name}.yaml");
            env.write(&schema, entry["schema"].as_str().expect("schema"));
            if entry["readable"] == true {
                check_readable(&env, name, &schema, entry, name, &mm);
            } else {
                check_refused(&env, name, &schema, name, &mm);
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(worker);
        }
    });
    let (slowest_ms, _) = mm.extremes();
    let all = mm.into_inner();
    eprintln!(
        "differential: {} files, written and read back in {:.1?}, total {:.1?}; slowest run {slowest_ms} ms",
        entries.len(),
        written,
        started.elapsed()
    );
    assert!(
        all.is_empty(),
        "{} discrepancies with pyarrow (file | column | what | expected | got):\n{}",
        all.len(),
        all.join("\n")
    );
}
