//! Property: plant random violations at random rows in random row-group
//! layouts (written by the parquet crate), and get the exact count and the
//! first rows back, for any thread count.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int32Builder, Int64Array, ListBuilder, RecordBatch};
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;
use proptest::prelude::*;

use preflight::{Plan, ScanOptions};

const NUM_CLASSES: i64 = 10;
const VOCAB: i32 = 100;
const MAX_LEN: usize = 5;

#[derive(Debug, Clone)]
struct Case {
    labels: Vec<Option<i64>>,
    ids: Vec<Vec<i32>>,
    row_group: usize,
    dictionary: bool,
    jobs: usize,
}

fn label() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        8 => (0..NUM_CLASSES).prop_map(Some),
        1 => prop::sample::select(vec![10i64, 11, -1, 255, -100, 1 << 40, i64::MIN, i64::MAX]).prop_map(Some),
        1 => Just(None),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..2500).prop_flat_map(|n| {
        (
            prop::collection::vec(label(), n),
            prop::collection::vec(
                prop::collection::vec(prop_oneof![20 => 0..VOCAB, 1 => VOCAB..VOCAB + 3, 1 => -3..0], 0..8),
                n,
            ),
            1usize..700,
            any::<bool>(),
            1usize..5,
        )
            .prop_map(|(labels, ids, row_group, dictionary, jobs)| Case {
                labels,
                ids,
                row_group,
                dictionary,
                jobs,
            })
    })
}

fn write(case: &Case, path: &std::path::Path) {
    let labels: ArrayRef = Arc::new(Int64Array::from(case.labels.clone()));
    let mut b = ListBuilder::new(Int32Builder::new());
    for row in &case.ids {
        b.values().append_slice(row);
        b.append(true);
    }
    let ids: ArrayRef = Arc::new(b.finish());
    let batch = RecordBatch::try_from_iter([("label", labels), ("ids", ids)]).expect("batch");
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(case.row_group))
        .set_dictionary_enabled(case.dictionary)
        .build();
    let file = std::fs::File::create(path).expect("create");
    let mut w = ArrowWriter::try_new(file, batch.schema(), Some(props)).expect("writer");
    w.write(&batch).expect("write");
    w.close().expect("close");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn planted_violations_come_back_exactly(case in case()) {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = dir.path().join("d.parquet");
        write(&case, &data);
        let schema = dir.path().join("s.yaml");
        std::fs::write(&schema, format!(
            "columns:\n  label: {{kind: class, num_classes: {NUM_CLASSES}}}\n  ids: {{kind: index, size: {VOCAB}, max_length: {MAX_LEN}}}\n"
        )).expect("schema");
        let plan = Plan {
            schema,
            paths: vec![data],
            max_examples: 3,
            table_at: None,
            scan: ScanOptions { jobs: case.jobs, ..ScanOptions::default() },
        };
        let report = preflight::check(&plan);
        prop_assert!(report.errors.is_empty(), "{:?}", report.errors);
        // Every shortcut (row-group statistics) agrees with a full scan.
        let full = preflight::check(&Plan { scan: ScanOptions { full_scan: true, ..plan.scan.clone() }, ..plan.clone() });
        prop_assert_eq!(&report, &full);

        // The oracle: the rules, written out plainly.
        let bad_label = |v: i64| v != -100 && !(0..NUM_CLASSES).contains(&v);
        let label_rows: Vec<u64> = case.labels.iter().enumerate()
            .filter(|(_, v)| v.is_some_and(bad_label)).map(|(i, _)| i as u64).collect();
        let null_rows: Vec<u64> = case.labels.iter().enumerate()
            .filter(|(_, v)| v.is_none()).map(|(i, _)| i as u64).collect();
        let id_rows: Vec<u64> = case.ids.iter().enumerate()
            .flat_map(|(i, r)| r.iter().filter(|&&v| !(0..VOCAB).contains(&v)).map(move |_| i as u64)).collect();
        let long_rows: Vec<u64> = case.ids.iter().enumerate()
            .filter(|(_, r)| r.len() > MAX_LEN).map(|(i, _)| i as u64).collect();

        let got = |col: &str, rule: &str| {
            let c = report.checks.iter().find(|c| c.column == col && c.rule.name() == rule).expect("check");
            (c.violations, c.examples.iter().map(|e| e.row).collect::<Vec<u64>>())
        };
        for (col, rule, want) in [("label", "class", &label_rows), ("label", "null", &null_rows), ("ids", "index", &id_rows), ("ids", "max_length", &long_rows)] {
            let (n, first) = got(col, rule);
            prop_assert_eq!(n, want.len() as u64, "{} {}", col, rule);
            prop_assert_eq!(first, want.iter().copied().take(3).collect::<Vec<u64>>(), "{} {}", col, rule);
        }
        prop_assert_eq!(report.rows, case.labels.len() as u64);
    }
}

/// Sliced arrays (a non-zero offset, as readers may hand out) give the same
/// verdicts and rows as the data they show.
#[test]
fn sliced_arrays_check_like_their_contents() {
    use arrow::array::{FixedSizeListArray, Int32Array, ListArray};
    use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
    use arrow::datatypes::{DataType, Field};

    let dir = tempfile::tempdir().expect("tempdir");
    let schema_path = dir.path().join("s.yaml");
    std::fs::write(&schema_path, "columns:\n  f: {kind: index, size: 10, max_length: 2}\n  l: {kind: index, size: 10, min_length: 1}\n  p: {kind: index, size: 10}\n").expect("schema");
    let schema = preflight::Schema::from_file(&schema_path).expect("schema");
    let v = preflight::Validator::new(schema, 10);
    let item = Arc::new(Field::new("item", DataType::Int32, true));
    // Rows: [0,1] [2,10] null [11,3] [4,5]; sliced to rows 1..5.
    let child = Int32Array::from(vec![0, 1, 2, 10, 99, 99, 11, 3, 4, 5]);
    let nulls = NullBuffer::from(vec![true, true, false, true, true]);
    let f = FixedSizeListArray::new(item.clone(), 2, Arc::new(child.clone()), Some(nulls.clone())).slice(1, 4);
    let offsets = OffsetBuffer::new(ScalarBuffer::from(vec![0, 2, 4, 6, 8, 10]));
    let l = ListArray::new(item, offsets, Arc::new(child), Some(nulls)).slice(1, 4);
    let p = Int32Array::from(vec![Some(1), Some(12), None, Some(-1), Some(3)]).slice(1, 4);
    let batch = RecordBatch::try_from_iter([
        ("f", Arc::new(f) as ArrayRef),
        ("l", Arc::new(l) as ArrayRef),
        ("p", Arc::new(p) as ArrayRef),
    ])
    .expect("batch");
    let mut tally = v.tally();
    assert!(v.check_batch(&batch, 0, 100, &mut tally).is_empty());
    let rows = |check: usize| tally.checks[check].examples.iter().map(|e| e.row).collect::<Vec<u64>>();
    // Plan order per column: index, null, not_integer, then length rules.
    assert_eq!(rows(0), vec![100, 102]); // f: 10 at row 100, 11 at row 102
    assert_eq!(rows(1), vec![101]); // f: the null row
    assert_eq!(rows(4), vec![100, 102]); // l: same values
    assert_eq!(rows(5), vec![101]);
    assert_eq!(rows(8), vec![100, 102]); // p: 12 and -1
    assert_eq!(rows(9), vec![101]);
    assert_eq!(tally.rows, 4);
}
