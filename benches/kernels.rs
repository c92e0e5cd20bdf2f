//! Kernel and Parquet-path benchmarks (`cargo bench`), so a regression shows
//! up as a number: the integer class kernel, a list column with a length
//! rule, and a whole `check` of a generated Parquet file with and without the
//! statistics shortcut. Whole-process comparisons with other tools live in
//! BENCHMARKS.md (the shared harness).

use std::sync::Arc;

use arrow::array::{ArrayRef, Int32Array, Int64Array, ListArray, RecordBatch};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field};
use preflight::{Plan, ScanOptions, Schema, Validator};

fn main() {
    divan::main();
}

const ROWS: usize = 1 << 20;

fn validator(yaml: &str) -> Validator {
    Validator::new(Schema::from_yaml(yaml, "bench.yaml".as_ref()).expect("schema"), 5)
}

/// 1M int64 labels in range, with the ignore value sprinkled in.
#[divan::bench]
fn class_int64(bencher: divan::Bencher) {
    let v = validator("columns:\n  label: {kind: class, num_classes: 1000}\n");
    let labels: Vec<i64> = (0..ROWS as i64)
        .map(|i| if i % 97 == 0 { -100 } else { i % 1000 })
        .collect();
    let batch = RecordBatch::try_from_iter([("label", Arc::new(Int64Array::from(labels)) as ArrayRef)]).expect("batch");
    bencher.counter(divan::counter::ItemsCount::new(ROWS)).bench(|| {
        let mut t = v.tally();
        v.check_batch(divan::black_box(&batch), 0, 0, &mut t);
        t
    });
}

/// 1M token ids in rows of 256, with a max_length rule.
#[divan::bench]
fn index_list_int32(bencher: divan::Bencher) {
    let v = validator("columns:\n  ids: {kind: index, size: 30522, max_length: 512}\n");
    let values = Int32Array::from((0..ROWS as i32).map(|i| i % 30522).collect::<Vec<_>>());
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(256, ROWS / 256));
    let field = Arc::new(Field::new("item", DataType::Int32, true));
    let list = ListArray::new(field, offsets, Arc::new(values), None);
    let batch = RecordBatch::try_from_iter([("ids", Arc::new(list) as ArrayRef)]).expect("batch");
    bencher.counter(divan::counter::ItemsCount::new(ROWS)).bench(|| {
        let mut t = v.tally();
        v.check_batch(divan::black_box(&batch), 0, 0, &mut t);
        t
    });
}

/// Writes `batch` as a Parquet file in `dir` with the parquet crate's
/// writer and plans a one-thread run of `schema_yaml` over it.
fn parquet_plan(
    dir: &std::path::Path,
    batch: &RecordBatch,
    props: parquet::file::properties::WriterProperties,
    schema_yaml: &str,
    full_scan: bool,
) -> Plan {
    let data = dir.join("data.parquet");
    let file = std::fs::File::create(&data).expect("create");
    let mut w = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("writer");
    w.write(batch).expect("write");
    w.close().expect("close");
    let schema = dir.join("s.yaml");
    std::fs::write(&schema, schema_yaml).expect("schema");
    Plan {
        schema,
        paths: vec![data],
        max_examples: 5,
        table_at: None,
        scan: ScanOptions {
            jobs: 1,
            full_scan,
            ..ScanOptions::default()
        },
    }
}

/// A whole run over a 1M-row Parquet file (8 row groups).
#[divan::bench(args = [false, true])]
fn parquet_check(bencher: divan::Bencher, full_scan: bool) {
    let dir = tempfile::tempdir().expect("tempdir");
    let labels: ArrayRef = Arc::new(Int64Array::from((0..ROWS as i64).map(|i| i % 1000).collect::<Vec<_>>()));
    let batch = RecordBatch::try_from_iter([("label", labels)]).expect("batch");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(ROWS / 8))
        .build();
    let yaml = "columns:\n  label: {kind: class, num_classes: 1000}\n";
    let plan = parquet_plan(dir.path(), &batch, props, yaml, full_scan);
    bencher
        .counter(divan::counter::ItemsCount::new(ROWS))
        .bench(|| preflight::check(&plan));
}

/// A whole run over a Parquet file of 4M token ids in rows of 256 (zstd,
/// 4 row groups) with a max_length rule: statistics prove the ids, so the
/// default path reads the row lengths from the page levels; `--full-scan`
/// decodes every id.
#[divan::bench(args = [false, true])]
fn parquet_list_lengths(bencher: divan::Bencher, full_scan: bool) {
    const IDS: usize = 4 << 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let values = Int32Array::from(
        (0..IDS as u32)
            .map(|i| (i.wrapping_mul(7919) % 30522) as i32)
            .collect::<Vec<_>>(),
    );
    let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(256, IDS / 256));
    let field = Arc::new(Field::new("item", DataType::Int32, true));
    let list: ArrayRef = Arc::new(ListArray::new(field, offsets, Arc::new(values), None));
    let batch = RecordBatch::try_from_iter([("ids", list)]).expect("batch");
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
        .set_max_row_group_row_count(Some(IDS / 256 / 4))
        .build();
    let yaml = "columns:\n  ids: {kind: index, size: 30522, max_length: 512}\n";
    let plan = parquet_plan(dir.path(), &batch, props, yaml, full_scan);
    bencher
        .counter(divan::counter::ItemsCount::new(IDS))
        .bench(|| preflight::check(&plan));
}
