//! A schema that is wrong must stop the run with exit 2 and say where.

use crate::util::Env;

fn schema_error(yaml: &str) -> (String, serde_json::Value) {
    let env = Env::new();
    env.write("s.yaml", yaml);
    env.python("pq.write_table(pa.table({'label': pa.array([0], pa.int64())}), 'a.parquet')");
    let r = env.check_json(&["-s", "s.yaml", "a.parquet"], 2);
    assert_eq!(r["ok"], false);
    assert_eq!(r["checks"], serde_json::json!([]));
    let msg = r["errors"][0]["message"].as_str().expect("message").to_string();
    let human = env.run(&["check", "-s", "s.yaml", "a.parquet"]);
    assert_eq!(human.code, 2);
    (msg, r)
}

#[test]
fn misspelt_key_names_the_key_and_its_line() {
    let (msg, r) = schema_error("version: 1\ncolumns:\n  label:\n    kind: class\n    num_clases: 2\n");
    assert!(msg.contains("num_clases"), "{msg}");
    assert!(msg.contains("line 5") || msg.contains("5:"), "{msg}");
    assert_eq!(r["errors"][0]["file"], "s.yaml");
}

#[test]
fn unknown_top_level_and_reference_keys() {
    let (msg, _) = schema_error("colums:\n  label: {kind: class, num_classes: 2}\n");
    assert!(msg.contains("colums"), "{msg}");
    let (msg, _) = schema_error("columns:\n  label: {kind: class, num_classes: {hf_config: c.json, kee: x}}\n");
    assert!(msg.contains("kee"), "{msg}");
}

#[test]
fn wrong_types_and_contradictions() {
    for (yaml, needle) in [
        ("columns:\n  label: {kind: class, num_classes: two}\n", "num_classes"),
        ("columns:\n  label: {kind: clas, num_classes: 2}\n", "clas"),
        ("columns:\n  label: {kind: class, num_classes: 0}\n", "num_classes"),
        ("columns:\n  label: {kind: class, num_classes: 2.5}\n", "whole"),
        ("columns:\n  label: {kind: class}\n", "num_classes"),
        ("columns:\n  label: {kind: index, size: 0}\n", "size"),
        ("columns:\n  label: {kind: range, min: 2, max: 1}\n", "min"),
        ("columns:\n  label: {kind: values, allowed: []}\n", "allowed"),
        ("columns:\n  label: {kind: class, num_classes: 2, size: 3}\n", "size"),
        (
            "columns:\n  label: {kind: class, num_classes: 2, same_length_as: ids}\n",
            "ids",
        ),
        (
            "columns:\n  label: {kind: class, num_classes: 2, max_length: -1}\n",
            "max_length",
        ),
        (
            "columns:\n  label: {kind: class, num_classes: 2, min_length: 5, max_length: 2}\n",
            "min_length",
        ),
        ("columns: {}\n", "columns"),
        (
            "version: 2\ncolumns:\n  label: {kind: class, num_classes: 2}\n",
            "version",
        ),
        (
            "columns:\n  label: {kind: class, num_classes: 2}\n  label: {kind: class, num_classes: 3}\n",
            "label",
        ),
        ("columns: [1, 2\n", ""),
    ] {
        let (msg, _) = schema_error(yaml);
        assert!(msg.contains(needle), "{yaml}: {msg}");
    }
}

#[test]
fn missing_schema_file_and_no_data() {
    let env = Env::new();
    let r = env.check_json(&["-s", "nope.yaml", "x.parquet"], 2);
    assert!(r["errors"][0]["message"].as_str().unwrap().contains("cannot read"));
    env.write("preflight.yaml", "columns:\n  label: {kind: class, num_classes: 2}\n");
    let r = env.check_json(&[], 2);
    assert!(r["errors"][0]["message"].as_str().unwrap().contains("dataset.files"));
    // Bad arguments: exit 2 as well.
    assert_eq!(env.run(&["check", "--jobs", "many"]).code, 2);
}

#[test]
fn hostile_schemas_are_errors_not_crashes() {
    // An alias bomb: 9^8 (43 million) strings if expanded.
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let p = i - 1;
        bomb.push_str(&format!(
            "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]\n"
        ));
    }
    bomb.push_str("columns:\n  label: {kind: class, num_classes: 2}\n");
    let (msg, _) = schema_error(&bomb);
    assert!(!msg.is_empty());
    let deep = format!("columns: {}{}\n", "[".repeat(100_000), "]".repeat(100_000));
    let (msg, _) = schema_error(&deep);
    assert!(msg.contains("columns"), "{msg}");
    for (yaml, needle) in [
        ("columns:\n  label: {kind: class, num_classes: 1e400}\n", "1e400"),
        (
            "columns:\n  label: {kind: class, num_classes: 99999999999999999999999999999999999999999}\n",
            "too large",
        ),
        ("columns:\n  label: {kind: range, min: -1e400, max: 1}\n", "-1e400"),
        ("columns:\n  label: {kind: range, min: .nan, max: 1}\n", "min"),
        ("columns:\n  label: {kind: class, num_classes: [2]}\n", "num_classes"),
        ("columns:\n  label: {kind: class, num_classes: {a: 1}}\n", "num_classes"),
        ("columns:\n  label: [kind, class]\n", "label"),
        (
            "columns:\n  label: {kind: class, num_classes: 2, ignore_index: yes}\n",
            "ignore_index",
        ),
        ("\u{0}\u{1}\u{2}binary", ""),
    ] {
        let (msg, _) = schema_error(yaml);
        assert!(msg.contains(needle), "{yaml}: {msg}");
    }
}
