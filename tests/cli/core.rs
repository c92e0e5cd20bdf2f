//! The core rules on Parquet, written by pyarrow: exact counts, rows,
//! values, exit codes and the JSON layout.

use serde_json::json;

use crate::util::{Env, check, hits, rows};

const LABELS: &str = "columns:\n  label: {kind: class, num_classes: 10}\n";

#[test]
fn clean_file_passes_with_exit_0() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.python("pq.write_table(pa.table({'label': pa.array(list(range(10))*100, pa.int64())}), 'ok.parquet')");
    let r = env.check_json(&["-s", "s.yaml", "ok.parquet"], 0);
    assert_eq!(r["ok"], true);
    assert_eq!(r["files"], 1);
    assert_eq!(r["rows"], 1000);
    assert_eq!(r["violations"], 0);
    assert_eq!(r["errors"], json!([]));
}

#[test]
fn class_rule_on_every_integer_width() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    // Bad values at rows 3, 7 and 11 in every type; -100 is ignored.
    env.python(
        r#"
for t in ['int8','int16','int32','int64','uint8','uint16','uint32','uint64']:
    v = [i % 10 for i in range(20)]
    signed = t.startswith('int')
    v[3] = 10
    v[7] = -1 if signed else 255
    v[11] = 127 if t == 'int8' else 200
    if signed: v[15] = -100
    pq.write_table(pa.table({'label': pa.array(v, getattr(pa, t)())}), f'{t}.parquet')
"#,
    );
    for t in ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"] {
        let r = env.check_json(&["-s", "s.yaml", &format!("{t}.parquet")], 1);
        let (n, ex) = hits(&r, "label", "class");
        assert_eq!(n, 3, "{t}");
        assert_eq!(ex.iter().map(|e| e.1).collect::<Vec<_>>(), vec![3, 7, 11], "{t}");
        let signed = t.starts_with("int");
        assert_eq!(ex[1].2, if signed { json!(-1) } else { json!(255) }, "{t}");
        assert_eq!(r["violations"], 3);
    }
}

#[test]
fn uint64_above_i64_max_is_out_of_range_not_wrapped() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 10, ignore_index: -1}\n",
    );
    env.python("pq.write_table(pa.table({'label': pa.array([0, 18446744073709551615, 9223372036854775808, 5], pa.uint64())}), 'u.parquet')");
    let r = env.check_json(&["-s", "s.yaml", "u.parquet"], 1);
    let (n, ex) = hits(&r, "label", "class");
    assert_eq!(n, 2);
    assert_eq!(ex[0].2, json!(18446744073709551615u64));
    assert_eq!(ex[1].2, json!(9223372036854775808u64));
}

#[test]
fn ignore_index_default_custom_and_null() {
    let env = Env::new();
    env.python("pq.write_table(pa.table({'label': pa.array([0, -100, 255, 1, -100], pa.int64())}), 'm.parquet')");
    env.write("default.yaml", LABELS);
    env.write(
        "seg.yaml",
        "columns:\n  label: {kind: class, num_classes: 10, ignore_index: 255}\n",
    );
    env.write(
        "none.yaml",
        "columns:\n  label: {kind: class, num_classes: 10, ignore_index: null}\n",
    );
    let r = env.check_json(&["-s", "default.yaml", "m.parquet"], 1);
    assert_eq!(rows(&r, "label", "class"), vec![2]);
    let r = env.check_json(&["-s", "seg.yaml", "m.parquet"], 1);
    assert_eq!(rows(&r, "label", "class"), vec![1, 4]);
    assert!(
        check(&r, "label", "class")["hint"]
            .as_str()
            .unwrap_or("")
            .contains("-100")
    );
    let r = env.check_json(&["-s", "none.yaml", "m.parquet"], 1);
    assert_eq!(rows(&r, "label", "class"), vec![1, 2, 4]);
}

#[test]
fn floats_holding_whole_numbers() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.python(
        r#"
v = [0.0, 3.0, 9.0, 1e20, 3.5, float('nan'), float('inf'), -100.0, 10.0, -0.0]
pq.write_table(pa.table({'label': pa.array(v, pa.float64())}), 'f64.parquet')
pq.write_table(pa.table({'label': pa.array(v, pa.float32())}), 'f32.parquet')
"#,
    );
    for f in ["f64.parquet", "f32.parquet"] {
        let r = env.check_json(&["-s", "s.yaml", f], 1);
        let (n, ex) = hits(&r, "label", "class");
        assert_eq!(n, 2, "{f}");
        assert_eq!(ex.iter().map(|e| e.1).collect::<Vec<_>>(), vec![3, 8]);
        let big = if f == "f32.parquet" { 1e20_f32 as f64 } else { 1e20 };
        assert_eq!(ex[0].2.as_f64(), Some(big));
        let (n, ex) = hits(&r, "label", "not_integer");
        assert_eq!(n, 3, "{f}");
        assert_eq!(ex.iter().map(|e| e.1).collect::<Vec<_>>(), vec![4, 5, 6]);
        assert_eq!(ex[0].2, json!(3.5));
        assert_eq!(ex[1].2, json!("NaN"));
        assert_eq!(ex[2].2, json!("inf"));
        assert_eq!(r["violations"], 5);
    }
}

#[test]
fn dictionary_encoded_columns_and_unused_entries() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    // The dictionary holds 42 and 77, but only 42 is used (rows 2 and 5).
    env.python(
        r#"
idx = pa.array([0, 1, 3, 1, None, 3, 0], pa.int32())
d = pa.DictionaryArray.from_arrays(idx, pa.array([0, 1, 77, 42], pa.int64()))
pq.write_table(pa.table({'label': d}), 'd.parquet')
s = pa.array(['cat', 'dog', 'cat', None, 'bird']).dictionary_encode()
pq.write_table(pa.table({'label': s}), 'ds.parquet')
"#,
    );
    let r = env.check_json(&["-s", "s.yaml", "d.parquet"], 1);
    let (n, ex) = hits(&r, "label", "class");
    assert_eq!(n, 2);
    assert_eq!(
        ex.iter().map(|e| (e.1, e.2.clone())).collect::<Vec<_>>(),
        vec![(2, json!(42)), (5, json!(42))]
    );
    assert_eq!(rows(&r, "label", "null"), vec![4]);
    env.write("v.yaml", "columns:\n  label: {kind: values, allowed: [cat, dog]}\n");
    let r = env.check_json(&["-s", "v.yaml", "ds.parquet"], 1);
    assert_eq!(
        hits(&r, "label", "values").1,
        vec![("ds.parquet".to_string(), 4, json!("bird"))]
    );
    assert_eq!(rows(&r, "label", "null"), vec![3]);
    let r = env.check_json(&["-s", "s.yaml", "ds.parquet"], 1);
    assert_eq!(hits(&r, "label", "not_integer").0, 4);
}

#[test]
fn list_columns_elements_nulls_and_lengths() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  ids: {kind: index, size: 100, max_length: 4, min_length: 1}\n  mask: {kind: values, allowed: [0, 1], same_length_as: ids}\n",
    );
    env.python(
        r#"
ids = [[1, 2, 3], [100, 5], None, [1, 2, 3, 4, 5], [], [7, None, -1], [99]]
mask = [[1, 1, 1], [1, 2], [1], [1, 1, 1, 1, 1], [], [1, 1], None]
for name, t in [('list', pa.list_(pa.int32())), ('large', pa.large_list(pa.int64()))]:
    pq.write_table(pa.table({'ids': pa.array(ids, t), 'mask': pa.array(mask, pa.list_(pa.int8()))}), f'{name}.parquet')
"#,
    );
    for f in ["list.parquet", "large.parquet"] {
        let r = env.check_json(&["-s", "s.yaml", f], 1);
        let (n, ex) = hits(&r, "ids", "index");
        assert_eq!(n, 2, "{f}");
        assert_eq!(
            ex.iter().map(|e| (e.1, e.2.clone())).collect::<Vec<_>>(),
            vec![(1, json!(100)), (5, json!(-1))]
        );
        // One null row and one null element.
        assert_eq!(rows(&r, "ids", "null"), vec![2, 5]);
        assert_eq!(
            hits(&r, "ids", "max_length")
                .1
                .iter()
                .map(|e| (e.1, e.2.clone()))
                .collect::<Vec<_>>(),
            vec![(3, json!(5))]
        );
        assert_eq!(rows(&r, "ids", "min_length"), vec![4]);
        assert_eq!(
            hits(&r, "mask", "values")
                .1
                .iter()
                .map(|e| (e.1, e.2.clone()))
                .collect::<Vec<_>>(),
            vec![(1, json!(2))]
        );
        // Row 2 (ids null) and row 6 (mask null) are skipped; row 5 differs.
        assert_eq!(
            hits(&r, "mask", "same_length_as")
                .1
                .iter()
                .map(|e| (e.1, e.2.clone()))
                .collect::<Vec<_>>(),
            vec![(5, json!(2))]
        );
        assert_eq!(r["violations"], 2 + 2 + 1 + 1 + 1 + 1 + 1);
    }
}

#[test]
fn fixed_size_and_nested_lists() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  m: {kind: class, num_classes: 3, max_length: 2}\n",
    );
    env.python(
        r#"
fsl = pa.FixedSizeListArray.from_arrays(pa.array([0, 1, 2, 3, 1, 1, 255, 0, 2], pa.uint8()), 3)
pq.write_table(pa.table({'m': fsl}), 'fsl.parquet')
nested = [[[0, 1], [2]], [[3]], [[0], None, [1, 5, 7]], None]
pq.write_table(pa.table({'m': pa.array(nested, pa.list_(pa.list_(pa.int64())))}), 'nested.parquet')
"#,
    );
    let r = env.check_json(&["-s", "s.yaml", "fsl.parquet"], 1);
    assert_eq!(
        hits(&r, "m", "class")
            .1
            .iter()
            .map(|e| (e.1, e.2.clone()))
            .collect::<Vec<_>>(),
        vec![(1, json!(3)), (2, json!(255))]
    );
    assert_eq!(hits(&r, "m", "max_length").0, 3);
    assert!(
        check(&r, "m", "class")["hint"]
            .as_str()
            .unwrap_or("")
            .contains("ignore_index: 255")
    );
    let r = env.check_json(&["-s", "s.yaml", "nested.parquet"], 1);
    assert_eq!(
        hits(&r, "m", "class")
            .1
            .iter()
            .map(|e| (e.1, e.2.clone()))
            .collect::<Vec<_>>(),
        vec![(1, json!(3)), (2, json!(5)), (2, json!(7))]
    );
    // The inner null list of row 2 and the null row 3.
    assert_eq!(rows(&r, "m", "null"), vec![2, 3]);
    // Length is the outer list: row 2 has 3 inner lists.
    assert_eq!(
        hits(&r, "m", "max_length")
            .1
            .iter()
            .map(|e| (e.1, e.2.clone()))
            .collect::<Vec<_>>(),
        vec![(2, json!(3))]
    );
}

#[test]
fn range_rule_compares_exactly_as_stored() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  p: {kind: range, min: 0.0, max: 0.1}\n  q: {kind: range, min: 0, max: 1}\n",
    );
    env.python(
        r#"
p = pa.array([0.0, 0.1, 0.05, -0.0, 0.1000001], pa.float32())
q = pa.array([0.0, 1.0, float('nan'), float('-inf'), 1.0000000000000002], pa.float64())
pq.write_table(pa.table({'p': p, 'q': q}), 'r.parquet')
"#,
    );
    let r = env.check_json(&["-s", "s.yaml", "r.parquet"], 1);
    // float32 0.1 is slightly more than 0.1.
    assert_eq!(rows(&r, "p", "range"), vec![1, 4]);
    assert_eq!(rows(&r, "q", "range"), vec![2, 3, 4]);
    assert_eq!(hits(&r, "q", "range").1[1].2, json!("-inf"));
    // range has no not_integer rule.
    let rules: Vec<&str> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["column"] == "p")
        .map(|c| c["rule"].as_str().unwrap())
        .collect();
    assert_eq!(rules, vec!["range", "null"]);
}

#[test]
fn booleans_are_zero_and_one_and_strings_compare_exactly() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  b: {kind: class, num_classes: 1}\n  s: {kind: values, allowed: [yes, 'no', 1]}\n",
    );
    env.python("pq.write_table(pa.table({'b': pa.array([False, True, False]), 's': pa.array(['yes', 'Yes', '1'])}), 'b.parquet')");
    let r = env.check_json(&["-s", "s.yaml", "b.parquet"], 1);
    assert_eq!(
        hits(&r, "b", "class")
            .1
            .iter()
            .map(|e| (e.1, e.2.clone()))
            .collect::<Vec<_>>(),
        vec![(1, json!(1))]
    );
    // '1' is a string, and strings compare exactly: neither 'Yes' nor '1' is allowed.
    assert_eq!(rows(&r, "s", "values"), vec![1, 2]);
}

#[test]
fn nulls_violate_only_the_null_rule_unless_nullable() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.write(
        "n.yaml",
        "columns:\n  label: {kind: class, num_classes: 10, nullable: true}\n",
    );
    env.python("pq.write_table(pa.table({'label': pa.array([1, None, 12, None], pa.int64())}), 'n.parquet')");
    let r = env.check_json(&["-s", "s.yaml", "n.parquet"], 1);
    assert_eq!(
        hits(&r, "label", "null")
            .1
            .iter()
            .map(|e| (e.1, e.2.clone()))
            .collect::<Vec<_>>(),
        vec![(1, json!(null)), (3, json!(null))]
    );
    assert_eq!(rows(&r, "label", "class"), vec![2]);
    assert_eq!(hits(&r, "label", "not_integer").0, 0);
    let r = env.check_json(&["-s", "n.yaml", "n.parquet"], 1);
    assert_eq!(hits(&r, "label", "null").0, 0);
    assert_eq!(r["violations"], 1);
}

#[test]
fn json_layout_matches_the_spec() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 2}\n  input_ids: {kind: index, size: 30522, max_length: 512}\n  extra: {kind: values, allowed: [0], optional: true}\n",
    );
    env.python(
        r#"
os.mkdir('data')
pq.write_table(pa.table({'label': pa.array([0, 1, 5], pa.int64()), 'input_ids': pa.array([[1], [2, 3], [4]], pa.list_(pa.int32()))}), 'data/a.parquet')
pq.write_table(pa.table({'label': pa.array([1], pa.int64()), 'input_ids': pa.array([list(range(600))], pa.list_(pa.int32()))}), 'data/b.parquet')
"#,
    );
    let r = env.check_json(&["-s", "s.yaml", "data"], 1);
    let order: Vec<(String, String)> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["column"].as_str().unwrap().to_string(),
                c["rule"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("label", "class"),
        ("label", "null"),
        ("label", "not_integer"),
        ("input_ids", "index"),
        ("input_ids", "null"),
        ("input_ids", "not_integer"),
        ("input_ids", "max_length"),
        ("extra", "values"),
        ("extra", "null"),
    ];
    assert_eq!(
        order,
        want.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    );
    assert_eq!(r["ok"], false);
    assert_eq!(r["files"], 2);
    assert_eq!(r["rows"], 4);
    assert_eq!(r["violations"], 2);
    assert_eq!(
        check(&r, "label", "class")["examples"],
        json!([{"file": "data/a.parquet", "row": 2, "value": 5}])
    );
    assert_eq!(
        check(&r, "input_ids", "max_length")["examples"],
        json!([{"file": "data/b.parquet", "row": 0, "value": 600}])
    );
    // Top-level keys in the SPEC's order, by their text position.
    let text = env.run(&["check", "--format", "json", "-s", "s.yaml", "data"]).stdout;
    let pos: Vec<usize> = [
        "\"ok\"",
        "\"files\"",
        "\"rows\"",
        "\"violations\"",
        "\"checks\"",
        "\"errors\"",
    ]
    .iter()
    .map(|k| text.find(k).unwrap())
    .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "{text}");
}

#[test]
fn corrupt_file_gives_exit_2_and_other_files_are_still_checked() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.python(
        r#"
os.mkdir('d')
pq.write_table(pa.table({'label': pa.array([1, 11], pa.int64())}), 'd/a.parquet')
open('d/b.parquet', 'wb').write(b'this is not parquet at all, not even close')
data = open('d/a.parquet', 'rb').read()
open('d/c.parquet', 'wb').write(data[: len(data) // 2])
pq.write_table(pa.table({'label': pa.array([12], pa.int64())}), 'd/z.parquet')
"#,
    );
    let r = env.check_json(&["-s", "s.yaml", "d"], 2);
    assert_eq!(r["ok"], false);
    assert_eq!(r["files"], 4);
    assert_eq!(
        hits(&r, "label", "class")
            .1
            .iter()
            .map(|e| (e.0.clone(), e.1))
            .collect::<Vec<_>>(),
        vec![("d/a.parquet".into(), 1), ("d/z.parquet".into(), 0)]
    );
    let errors = r["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(errors[0]["file"], "d/b.parquet");
    assert_eq!(errors[1]["file"], "d/c.parquet");
    let run = env.run(&["check", "-s", "s.yaml", "d"]);
    assert_eq!(run.code, 2);
    assert!(run.stdout.contains("d/b.parquet"), "{}", run.stdout);
}

#[test]
fn missing_column_is_an_error_unless_optional_and_other_columns_still_count() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 2}\n  ids: {kind: index, size: 5}\n",
    );
    env.write(
        "o.yaml",
        "columns:\n  label: {kind: class, num_classes: 2}\n  ids: {kind: index, size: 5, optional: true}\n",
    );
    env.python("pq.write_table(pa.table({'label': pa.array([0, 3], pa.int64())}), 'a.parquet')");
    let r = env.check_json(&["-s", "s.yaml", "a.parquet"], 2);
    assert_eq!(rows(&r, "label", "class"), vec![1]);
    assert!(r["errors"][0]["message"].as_str().unwrap().contains("`ids`"));
    let r = env.check_json(&["-s", "o.yaml", "a.parquet"], 1);
    assert_eq!(r["errors"], json!([]));
    assert_eq!(hits(&r, "ids", "index").0, 0);
}

#[test]
fn report_is_identical_for_every_jobs_value() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 7}\n  ids: {kind: index, size: 50, max_length: 6}\n",
    );
    env.python(
        r#"
rng = np.random.default_rng(7)
os.mkdir('d')
for f in range(6):
    n = 5000
    label = rng.integers(-2, 8, n)
    ids = [list(rng.integers(0, 52, rng.integers(0, 8))) for _ in range(n)]
    pq.write_table(pa.table({'label': label, 'ids': pa.array(ids, pa.list_(pa.int64()))}), f'd/part-{f}.parquet', row_group_size=700)
"#,
    );
    let one = env.run(&["check", "--format", "json", "-s", "s.yaml", "d", "--jobs", "1"]);
    assert_eq!(one.code, 1);
    for jobs in ["2", "4", "8"] {
        let other = env.run(&["check", "--format", "json", "-s", "s.yaml", "d", "--jobs", jobs]);
        assert_eq!(one.stdout, other.stdout, "--jobs {jobs}");
    }
    let full = env.run(&["check", "--format", "json", "-s", "s.yaml", "d", "--full-scan"]);
    assert_eq!(one.stdout, full.stdout, "--full-scan");
    let human1 = env.run(&["check", "-s", "s.yaml", "d", "--jobs", "1"]).stdout;
    let human4 = env.run(&["check", "-s", "s.yaml", "d", "--jobs", "4"]).stdout;
    let strip = |s: &str| s.lines().filter(|l| !l.contains(" s)")).collect::<Vec<_>>().join("\n");
    assert_eq!(strip(&human1), strip(&human4));
}

#[test]
fn max_examples_and_first_examples_in_file_row_order() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.python(
        r#"
pq.write_table(pa.table({'label': pa.array([10]*5 + [0]*5 + [11]*5, pa.int64())}), 'b.parquet', row_group_size=3)
pq.write_table(pa.table({'label': pa.array([0, 12], pa.int64())}), 'a.parquet')
"#,
    );
    let r = env.check_json(
        &[
            "-s",
            "s.yaml",
            "b.parquet",
            "a.parquet",
            "--max-examples",
            "3",
            "--jobs",
            "3",
        ],
        1,
    );
    let (n, ex) = hits(&r, "label", "class");
    assert_eq!(n, 11);
    assert_eq!(
        ex.iter().map(|e| (e.0.as_str(), e.1)).collect::<Vec<_>>(),
        vec![("a.parquet", 1), ("b.parquet", 0), ("b.parquet", 1)]
    );
    let r = env.check_json(&["-s", "s.yaml", "b.parquet", "--max-examples", "0"], 1);
    assert_eq!(check(&r, "label", "class")["examples"], json!([]));
}

#[test]
fn dataset_files_default_schema_globs_and_directories() {
    let env = Env::new();
    env.python(
        r#"
os.makedirs('proj/data/sub')
os.makedirs('proj/data/.hidden')
for p in ['proj/data/train-0.parquet', 'proj/data/train-1.parquet', 'proj/data/sub/x.parquet', 'proj/data/.hidden/h.parquet']:
    pq.write_table(pa.table({'label': pa.array([0, 10], pa.int64())}), p)
open('proj/data/README.md', 'w').write('not data')
open('proj/data/state.json', 'w').write('{}')
"#,
    );
    env.write(
        "proj/preflight.yaml",
        &format!("dataset:\n  files: [\"data/train-*.parquet\"]\n{LABELS}"),
    );
    let r = env.check_json(&["-s", "proj/preflight.yaml"], 1);
    assert_eq!(r["files"], 2);
    assert_eq!(
        hits(&r, "label", "class")
            .1
            .iter()
            .map(|e| e.0.as_str())
            .collect::<Vec<_>>(),
        vec!["proj/data/train-0.parquet", "proj/data/train-1.parquet"]
    );
    // Default schema: preflight.yaml in the working directory.
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_preflight"))
        .args(["check", "--format", "json"])
        .current_dir(env.path("proj"))
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let r: serde_json::Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(hits(&r, "label", "class").1[0].0, "data/train-0.parquet");
    // A directory: recursive, hidden entries and other formats skipped.
    env.write("s.yaml", LABELS);
    let r = env.check_json(&["-s", "s.yaml", "proj/data"], 1);
    assert_eq!(r["files"], 3);
    assert_eq!(
        hits(&r, "label", "class")
            .1
            .iter()
            .map(|e| e.0.as_str())
            .collect::<Vec<_>>(),
        vec![
            "proj/data/sub/x.parquet",
            "proj/data/train-0.parquet",
            "proj/data/train-1.parquet"
        ]
    );
    // A glob that matches nothing, and a file that does not exist.
    let r = env.check_json(&["-s", "s.yaml", "nothing-*.parquet", "missing.parquet"], 2);
    assert_eq!(r["errors"].as_array().unwrap().len(), 2);
}

#[test]
fn human_report_names_column_rule_bound_examples_and_hint() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.python("pq.write_table(pa.table({'label': pa.array([1, 2, 10, 5, 10, 3], pa.int64())}), 'l.parquet')");
    let run = env.run(&["check", "-s", "s.yaml", "l.parquet"]);
    assert_eq!(run.code, 1);
    let out = run.stdout;
    assert!(
        out.contains("error[class]: column `label`: 2 values violate 0 <= v < 10"),
        "{out}"
    );
    assert!(out.contains("  --> l.parquet:2: 10\n  --> l.parquet:4: 10\n"), "{out}");
    assert!(out.contains("1-indexed"), "{out}");
    assert!(out.contains("FAILED: 2 violations in 1 check: 1 file, 6 rows"), "{out}");
    assert!(
        run.stderr.is_empty(),
        "nothing on stderr when it is not a terminal: {}",
        run.stderr
    );
    env.python("pq.write_table(pa.table({'label': pa.array([0, 1], pa.int64())}), 'ok.parquet')");
    let out = env.run(&["check", "-s", "s.yaml", "ok.parquet"]).stdout;
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.starts_with("ok: every rule holds: 1 file, 2 rows"), "{out}");
}

#[test]
fn hints_for_common_causes() {
    let env = Env::new();
    env.write(
        "v.yaml",
        "columns:\n  ids: {kind: index, size: 30522, max_length: 4}\n  label: {kind: class, num_classes: 3}\n",
    );
    env.python(
        r#"
pq.write_table(pa.table({'ids': pa.array([[1, 30522], [30523, 2, 3, 4, 5]], pa.list_(pa.int64())), 'label': pa.array([-1, 0], pa.int64())}), 'h.parquet')
"#,
    );
    let r = env.check_json(&["-s", "v.yaml", "h.parquet"], 1);
    assert!(
        check(&r, "ids", "index")["hint"]
            .as_str()
            .unwrap()
            .contains("resize_token_embeddings")
    );
    assert!(
        check(&r, "ids", "max_length")["hint"]
            .as_str()
            .unwrap()
            .contains("truncation")
    );
    assert!(check(&r, "label", "class")["hint"].as_str().unwrap().contains("-1"));
}

// Each tabular hint, on a column planted to draw it: the rows reported and
// the cause named (token types and positions get theirs, not added tokens).
#[test]
fn every_tabular_hint_on_data_that_triggers_it() {
    let env = Env::new();
    env.write(
        "s.yaml",
        r#"columns:
  ids_minus_100: {kind: index, size: 10}
  ids_minus_1: {kind: index, size: 10}
  token_type_ids: {kind: index, size: 2}
  position_ids: {kind: index, size: 4}
  far: {kind: index, size: 1000}
  sentinel: {kind: class, num_classes: 3}
  ignores: {kind: class, num_classes: 3, ignore_index: -1}
  one_indexed: {kind: class, num_classes: 3}
  frac: {kind: class, num_classes: 3}
  nan: {kind: class, num_classes: 3}
  nulls: {kind: class, num_classes: 3}
"#,
    );
    env.python(
        r#"
L = pa.list_(pa.int64())
pq.write_table(pa.table({
    'ids_minus_100': pa.array([[1, 2], [-100, 3], [4], [5]], L),
    'ids_minus_1': pa.array([[1], [2], [-1], [3]], L),
    'token_type_ids': pa.array([[0, 1], [0, 0], [0], [-1]], L),
    'position_ids': pa.array([[0, 1, 2, 3, 4], [0], [0], [0]], L),
    'far': pa.array([[1], [5000], [2], [3]], L),
    'sentinel': pa.array([0, 1, -1, 2], pa.int64()),
    'ignores': pa.array([0, -100, 1, 2], pa.int64()),
    'one_indexed': pa.array([1, 2, 3, 3], pa.int64()),
    'frac': pa.array([0.0, 0.5, 1.0, 2.0], pa.float64()),
    'nan': pa.array([0.0, 1.0, float('nan'), 2.0], pa.float64()),
    'nulls': pa.array([0, None, 1, 2], pa.int64()),
}), 'h.parquet')
"#,
    );
    let r = env.check_json(&["-s", "s.yaml", "h.parquet"], 1);
    for (column, rule, rows, hint) in [
        (
            "ids_minus_100",
            "index",
            vec![1],
            "-100 is the ignore value of labels, not a valid id",
        ),
        (
            "ids_minus_1",
            "index",
            vec![2],
            "-1 is often used as a padding id, but embedding lookups reject negative ids: pad with the tokenizer's pad_token_id",
        ),
        (
            "token_type_ids",
            "index",
            vec![3],
            "-1 is no token type: embedding lookups reject negative ids; pad token_type_ids with 0",
        ),
        (
            "position_ids",
            "index",
            vec![0],
            "positions reach 4 but size is 4: the model's position table has 4 rows",
        ),
        (
            "far",
            "index",
            vec![1],
            "ids reach 5000, far above size 1000: the data was tokenized with a different tokenizer",
        ),
        ("sentinel", "class", vec![2], "-1 is a common missing-label sentinel"),
        (
            "ignores",
            "class",
            vec![1],
            "-100 is torch's default ignore_index, but this schema ignores -1",
        ),
        (
            "one_indexed",
            "class",
            vec![2, 3],
            "labels look 1-indexed (the smallest is 1, the largest equals num_classes 3)",
        ),
        (
            "frac",
            "not_integer",
            vec![1],
            "fractional values where whole numbers belong",
        ),
        (
            "nan",
            "not_integer",
            vec![2],
            "non-numbers (NaN, infinities or text) where whole numbers belong",
        ),
        (
            "nulls",
            "null",
            vec![1],
            "missing values in a column without `nullable: true`",
        ),
    ] {
        assert_eq!(crate::util::rows(&r, column, rule), rows, "{column}/{rule}");
        assert_eq!(check(&r, column, rule)["violations"], rows.len(), "{column}/{rule}");
        let h = check(&r, column, rule)["hint"].as_str().unwrap_or("");
        assert!(
            h.starts_with(hint),
            "{column}/{rule}: {h:?} does not start with {hint:?}"
        );
        assert!(!h.contains("resize_token_embeddings"), "{column}/{rule}: {h}");
    }
    // The checks without violations have no hint.
    for c in r["checks"].as_array().unwrap() {
        if c["violations"] == 0 {
            assert!(c["hint"].is_null(), "{c:#}");
        }
    }
}

#[test]
fn statistics_shortcut_agrees_with_full_scan_on_every_layout() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 1000}\n  ids: {kind: index, size: 30522}\n  n: {kind: range, min: 0, max: 10, nullable: true}\n",
    );
    // Row groups that statistics prove clean, ones holding a valid -100 (whose
    // min straddles the range), bad values, nulls, and empty lists.
    env.python(
        r#"
rng = np.random.default_rng(1)
label = rng.integers(0, 1000, 20000); label[3000] = -100; label[9000] = 1000; label[15001] = -5
ids = [list(rng.integers(0, 30522, rng.integers(0, 4))) for _ in range(20000)]
ids[12345] = [30522]
n = pa.array([None if i % 97 == 0 else i % 11 for i in range(20000)], pa.int32())
t = pa.table({'label': label, 'ids': pa.array(ids, pa.list_(pa.int64())), 'n': n})
pq.write_table(t, 'a.parquet', row_group_size=1000)
pq.write_table(t, 'nostats.parquet', row_group_size=1000, write_statistics=False)
pq.write_table(t, 'dict.parquet', row_group_size=3000, use_dictionary=True)
"#,
    );
    for f in ["a.parquet", "nostats.parquet", "dict.parquet"] {
        let fast = env.run(&["check", "--format", "json", "-s", "s.yaml", f]);
        let full = env.run(&["check", "--format", "json", "-s", "s.yaml", f, "--full-scan"]);
        assert_eq!(fast.code, 1, "{f}");
        assert_eq!(fast.stdout, full.stdout, "{f}");
        let r = fast.json();
        assert_eq!(rows(&r, "label", "class"), vec![9000, 15001]);
        assert_eq!(rows(&r, "ids", "index"), vec![12345]);
        assert_eq!(r["rows"], 20000);
    }
}

// Length rules on list columns whose values the statistics prove are read
// from the pages' levels, not the values: the report must be the full scan's,
// for every writer, codec and page version, with exact rows.
#[test]
fn length_rules_from_page_levels_agree_with_full_scan() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  ids: {kind: index, size: 30522, max_length: 16, min_length: 2, nullable: true}\n  tt: {kind: index, size: 2, same_length_as: ids, nullable: true}\n",
    );
    env.python(
        r#"
import polars as pl, duckdb
rng = np.random.default_rng(11)
n = 30000
ids = [[int(x) for x in rng.integers(0, 30522, int(rng.integers(2, 17)))] for _ in range(n)]
for r in (7, 12345, 29999): ids[r] = [5] * 17
for r in (100, 20000): ids[r] = [5]
ids[555] = []
for r in (50, 25000): ids[r] = None
ids[9000][1] = None
ids[22222][0] = 30522
tt = [None if r is None else [0] * len(r) for r in ids]
for r in (777, 15000): tt[r] = tt[r] + [1]
t = pa.table({'ids': pa.array(ids, pa.list_(pa.int32())), 'tt': pa.array(tt, pa.large_list(pa.int8()))})
os.mkdir('w')
for codec, v, dic in [('zstd', '1.0', True), ('snappy', '2.0', False), ('gzip', '1.0', False), ('none', '2.0', True), ('lz4', '1.0', True)]:
    pq.write_table(t, f'w/pa_{codec}.parquet', compression=codec, data_page_version=v, use_dictionary=dic,
                   data_page_size=4096, row_group_size=7000)
pl.from_arrow(t).write_parquet('w/polars.parquet', row_group_size=5000, data_page_size=8192)
con = duckdb.connect(); con.register('t', t)
con.execute("COPY t TO 'w/duckdb_v1.parquet' (FORMAT parquet, ROW_GROUP_SIZE 4096, PARQUET_VERSION V1)")
con.execute("COPY t TO 'w/duckdb_v2.parquet' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 4096, PARQUET_VERSION V2)")
"#,
    );
    let files = [
        "w/pa_zstd.parquet",
        "w/pa_snappy.parquet",
        "w/pa_gzip.parquet",
        "w/pa_none.parquet",
        "w/pa_lz4.parquet",
        "w/polars.parquet",
        "w/duckdb_v1.parquet",
        "w/duckdb_v2.parquet",
    ];
    for f in files {
        let fast = env.run(&["check", "--format", "json", "-s", "s.yaml", f]);
        let full = env.run(&["check", "--format", "json", "-s", "s.yaml", f, "--full-scan"]);
        assert_eq!(fast.code, 1, "{f}: {}", fast.stderr);
        assert_eq!(fast.stdout, full.stdout, "{f}: levels and a full scan disagree");
        let r = fast.json();
        assert_eq!(r["rows"], 30000, "{f}");
        assert_eq!(hits(&r, "ids", "max_length").0, 3, "{f}");
        assert_eq!(rows(&r, "ids", "max_length"), vec![7, 12345, 29999], "{f}");
        assert_eq!(rows(&r, "ids", "min_length"), vec![100, 555, 20000], "{f}");
        assert_eq!(rows(&r, "tt", "same_length_as"), vec![777, 15000], "{f}");
        assert_eq!(rows(&r, "ids", "index"), vec![22222], "{f}");
        assert_eq!(r["violations"], 9, "{f}");
    }
    // All files in one run, in parallel and on one thread: the same report.
    let mut args = vec!["check", "--format", "json", "-s", "s.yaml"];
    args.extend(files);
    let many = env.run(&args);
    args.extend(["--jobs", "1", "--full-scan"]);
    assert_eq!(many.stdout, env.run(&args).stdout);
    assert_eq!(many.json()["violations"], 72);
}

// Found in review: the smallest value that statistics show feeds the
// 1-indexed hint whatever the list column's null count (which also counts
// empty lists and null elements).
#[test]
fn hints_from_statistics_match_the_full_scan() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  labels: {kind: class, num_classes: 3, nullable: true, max_length: 10}\n",
    );
    env.python(
        "pq.write_table(pa.table({'labels': pa.array([[0, None, None], [3], [1]], pa.list_(pa.int64()))}), 'h.parquet', row_group_size=1)",
    );
    let fast = env.check_json(&["-s", "s.yaml", "h.parquet"], 1);
    let full = env.check_json(&["-s", "s.yaml", "h.parquet", "--full-scan"], 1);
    assert_eq!(fast, full);
    assert!(
        check(&fast, "labels", "class")["hint"]
            .as_str()
            .unwrap()
            .contains("reach 3"),
        "{fast}"
    );
}

// Found in review: statistics must never prove a column that a length rule
// compares with, nor values that are not plain integers.
#[test]
fn statistics_never_skip_same_length_partners_or_non_integer_types() {
    let env = Env::new();
    env.write("t.yaml", "columns:\n  input_ids: {kind: index, size: 30522}\n  token_type_ids: {kind: index, size: 2, same_length_as: input_ids}\n");
    env.write("c.yaml", LABELS);
    env.python(
        r#"
import decimal, datetime
pq.write_table(pa.table({'input_ids': pa.array([[1, 2, 3], [4, 5]], pa.list_(pa.int64())), 'token_type_ids': pa.array([[0, 0], [0, 0]], pa.list_(pa.int64()))}), 't.parquet')
pq.write_table(pa.table({'label': pa.array([decimal.Decimal('0.05'), decimal.Decimal('0.07')], pa.decimal128(5, 2))}), 'dec.parquet', store_decimal_as_integer=True)
pq.write_table(pa.table({'label': pa.array([datetime.date(1970, 1, 2)], pa.date32())}), 'date.parquet')
pq.write_table(pa.table({'label': pa.array([{'v': 1}], pa.struct([('v', pa.int64())]))}), 'struct.parquet')
"#,
    );
    let r = env.check_json(&["-s", "t.yaml", "t.parquet"], 1);
    assert_eq!(rows(&r, "token_type_ids", "same_length_as"), vec![0]);
    for f in ["dec.parquet", "date.parquet", "struct.parquet"] {
        let r = env.check_json(&["-s", "c.yaml", f], 2);
        assert!(
            r["errors"][0]["message"].as_str().unwrap().contains("`label`"),
            "{f}: {}",
            r["errors"]
        );
    }
}

#[test]
fn a_directory_without_data_files_is_an_error_not_a_pass() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.write("empty/state.json", "{}");
    env.write("empty/train.parq", "not a known extension");
    let r = env.check_json(&["-s", "s.yaml", "empty"], 2);
    assert_eq!(r["files"], 0);
    assert!(
        r["errors"][0]["message"].as_str().unwrap().contains("no data files"),
        "{}",
        r["errors"]
    );
}

#[test]
fn string_classes_with_near_miss_hint() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, classes: [cat, dog]}\n");
    env.python("pq.write_table(pa.table({'label': pa.array(['cat', 'Dog ', 'dog', 'bird', None])}), 'a.parquet')");
    let r = env.check_json(&["-s", "s.yaml", "a.parquet"], 1);
    assert_eq!(
        hits(&r, "label", "class")
            .1
            .iter()
            .map(|e| (e.1, e.2.clone()))
            .collect::<Vec<_>>(),
        vec![(1, json!("Dog ")), (3, json!("bird"))]
    );
    assert_eq!(rows(&r, "label", "null"), vec![4]);
    let hint = check(&r, "label", "class")["hint"].as_str().unwrap_or("").to_string();
    assert!(hint.contains("\"Dog \"") && hint.contains("\"dog\""), "{hint}");
    assert_eq!(check(&r, "label", "class")["bound"], "one of 2 class names");
}

// Review: the smallest value behind the 1-indexed hint must come from the
// checked rows only (a float list column's null rows may cover any values;
// IPC keeps such slots as written).
#[test]
fn one_indexed_hint_on_float_lists_ignores_null_rows() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  m: {kind: class, num_classes: 3, nullable: true}\n",
    );
    env.python(
        r#"
child = pa.array([0.0, 0.0, 1.0, 3.0, 2.0, 3.0], pa.float64())
# Row 0 is null but its slot covers the two zeros.
lists = pa.ListArray.from_arrays(pa.array([0, 2, 4, 6], pa.int32()), child, mask=pa.array([True, False, False]))
import pyarrow.feather as feather
feather.write_feather(pa.table({'m': lists}), 'f.feather', compression='uncompressed')
"#,
    );
    let r = env.check_json(&["-s", "s.yaml", "f.feather"], 1);
    assert_eq!(
        hits(&r, "m", "class")
            .1
            .iter()
            .map(|e| (e.1, e.2.clone()))
            .collect::<Vec<_>>(),
        vec![(1, json!(3.0)), (2, json!(3.0))]
    );
    assert!(
        check(&r, "m", "class")["hint"]
            .as_str()
            .unwrap_or("")
            .contains("1-indexed"),
        "{r}"
    );
}

#[test]
fn an_ignore_index_that_is_a_class_warns_and_strict_makes_every_warning_an_error() {
    let env = Env::new();
    env.python("pq.write_table(pa.table({'label': pa.array([0, 1, 2, 3], pa.int64())}), 'a.parquet')");
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 4, ignore_index: 3}\n",
    );
    let w = "columns.label.ignore_index: 3 is also class 3 of the 4 classes (0..=3): the loss skips every sample of that class, so it is never learnt; use a value outside 0..=3 (torch's default is -100)";
    // A warning: in the report, on stderr beside a machine format, and
    // from `preflight schema`; the outcome is the data's.
    let run = env.run(&["check", "--format", "json", "-s", "s.yaml", "a.parquet"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = run.json();
    assert_eq!(r["warnings"], serde_json::json!([w]));
    assert_eq!(r["ok"], true);
    assert_eq!(run.stderr, format!("preflight: warning: {w}\n"));
    let human = env.run(&["check", "-s", "s.yaml", "a.parquet"]);
    assert_eq!(human.code, 0);
    assert!(human.stdout.contains(&format!("warning: {w}\n")), "{}", human.stdout);
    let schema = env.run(&["schema", "s.yaml"]);
    assert_eq!((schema.code, schema.stderr), (0, format!("warning: {w}\n")));
    // --strict: the warning is an error, exit 2, in every format.
    let r = env.check_json(&["-s", "s.yaml", "a.parquet", "--strict"], 2);
    assert_eq!(r["errors"], serde_json::json!([{"message": format!("--strict: {w}")}]));
    assert_eq!((r["ok"].clone(), r.get("warnings")), (serde_json::json!(false), None));
    let human = env.run(&["check", "-s", "s.yaml", "a.parquet", "--strict"]);
    assert_eq!(human.code, 2);
    assert!(
        human.stdout.contains(&format!("error: --strict: {w}\n")),
        "{}",
        human.stdout
    );
    for format in ["github", "junit"] {
        let out = env.run(&["check", "-s", "s.yaml", "a.parquet", "--strict", "--format", format]);
        assert_eq!(out.code, 2, "{format}");
        assert!(
            out.stdout
                .contains("--strict: columns.label.ignore_index: 3 is also class 3"),
            "{format}: {}",
            out.stdout
        );
    }
    // The edges: 0 is a class; num_classes, -100, 255 and none are not.
    env.write(
        "z.yaml",
        "columns:\n  label: {kind: class, num_classes: 4, ignore_index: 0}\n",
    );
    let r = env.check_json(&["-s", "z.yaml", "a.parquet"], 0);
    assert_eq!(
        r["warnings"][0].as_str().expect("warning"),
        "columns.label.ignore_index: 0 is also class 0 of the 4 classes (0..=3): the loss skips every sample of that class, so it is never learnt; use a value outside 0..=3 (torch's default is -100)"
    );
    for ig in ["4", "-100", "255", "null", "-1"] {
        env.write(
            "o.yaml",
            &format!("columns:\n  label: {{kind: class, num_classes: 4, ignore_index: {ig}}}\n"),
        );
        let r = env.check_json(&["-s", "o.yaml", "a.parquet", "--strict"], 0);
        assert_eq!(r.get("warnings"), None, "{ig}");
        assert_eq!(r["errors"], serde_json::json!([]), "{ig}");
    }
    // A warning about the data (a reader's note) is an error too.
    let empty = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tokens/megatron/empty.bin")
        .display()
        .to_string();
    env.write("t.yaml", "columns:\n  tokens: {kind: index, size: 1000}\n");
    let r = env.check_json(&["-s", "t.yaml", &empty], 0);
    let note = r["warnings"][0].as_str().expect("note").to_string();
    assert!(note.starts_with(&format!("{empty}: an empty dataset")), "{note}");
    let r = env.check_json(&["-s", "t.yaml", &empty, "--strict"], 2);
    assert_eq!(
        r["errors"],
        serde_json::json!([{"message": format!("--strict: {note}")}])
    );
    // merge --strict judges the merged report's warnings the same way.
    let part = env.run(&["check", "--format", "json", "--partial", "-s", "s.yaml", "a.parquet"]);
    assert_eq!(part.code, 0);
    env.write("p.json", &part.stdout);
    let merged = env.run(&["merge", "--format", "json", "p.json"]);
    assert_eq!(merged.code, 0);
    assert_eq!(merged.json()["warnings"], serde_json::json!([w]));
    let merged = env.run(&["merge", "--format", "json", "--strict", "p.json"]);
    assert_eq!(merged.code, 2);
    assert_eq!(
        merged.json()["errors"],
        serde_json::json!([{"message": format!("--strict: {w}")}])
    );
}
