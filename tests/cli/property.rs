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
            scan: ScanOptions { jobs: case.jobs, full_scan: false, progress: false },
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
            (c.violations, c.examples.iter().map(|e| e.1).collect::<Vec<u64>>())
        };
        for (col, rule, want) in [("label", "class", &label_rows), ("label", "null", &null_rows), ("ids", "index", &id_rows), ("ids", "max_length", &long_rows)] {
            let (n, first) = got(col, rule);
            prop_assert_eq!(n, want.len() as u64, "{} {}", col, rule);
            prop_assert_eq!(first, want.iter().copied().take(3).collect::<Vec<u64>>(), "{} {}", col, rule);
        }
        prop_assert_eq!(report.rows, case.labels.len() as u64);
    }
}
