//! preflight as a pipeline step and a CI gate: an Arrow IPC stream on stdin
//! (`check -`, `--pass-through`), the library API on batches, and the
//! `github` and `junit` report formats.

use serde_json::Value;

use crate::util::{Env, hits};

const SCHEMA: &str = "columns:
  label: {kind: class, num_classes: 10}
  ids: {kind: index, size: 100, max_length: 6}
";

/// Writes `data.arrows` (a stream of 7 batches of 50 rows, lz4-compressed,
/// with a dictionary-encoded extra column) and the same rows as
/// `data.parquet`. Violations are planted in the batches listed in `bad`.
fn write_data(env: &Env, bad: &[usize]) {
    env.python(&format!(
        r#"
bad = {bad:?}
batches = []
for b in range(7):
    label = [(b * 50 + i) % 10 for i in range(50)]
    ids = [[(b + i + k) % 100 for k in range(1 + i % 6)] for i in range(50)]
    if b in bad:
        label[3] = 10
        label[40] = -1
        ids[7] = [1, 2, 100]
        ids[8] = list(range(7))
    kind = pa.array(['a', 'b'] * 25).dictionary_encode()
    batches.append(pa.record_batch({{'label': pa.array(label, pa.int64()),
                                     'ids': pa.array(ids, pa.list_(pa.int32())),
                                     'kind': kind}}))
opts = pa.ipc.IpcWriteOptions(compression='lz4')
with pa.OSFile('data.arrows', 'wb') as f, pa.ipc.new_stream(f, batches[0].schema, options=opts) as w:
    for b in batches: w.write_batch(b)
pq.write_table(pa.Table.from_batches(batches), 'data.parquet', row_group_size=120)
"#
    ));
}

/// The report with every example's file renamed, to compare runs over the
/// same rows under different names.
fn renamed(mut report: Value, to: &str) -> Value {
    for c in report["checks"].as_array_mut().expect("checks") {
        for e in c["examples"].as_array_mut().expect("examples") {
            e["file"] = Value::from(to);
        }
    }
    report
}

#[test]
fn stdin_stream_gives_the_same_report_as_the_file() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    write_data(&env, &[1, 4]);
    let stream = std::fs::read(env.path("data.arrows")).expect("read");
    let (code, out, err) = env.run_piped(&["check", "-s", "s.yaml", "--format", "json", "-"], &stream);
    assert_eq!(code, 1, "{err}");
    let piped: Value = serde_json::from_slice(&out).expect("one JSON document");
    let from_file = env.check_json(&["-s", "s.yaml", "data.parquet"], 1);
    assert_eq!(renamed(piped.clone(), "x"), renamed(from_file, "x"));
    let (n, ex) = hits(&piped, "label", "class");
    assert_eq!(n, 4);
    assert_eq!(
        ex.iter().map(|e| (e.0.as_str(), e.1)).collect::<Vec<_>>(),
        vec![("<stdin>", 53), ("<stdin>", 90), ("<stdin>", 203), ("<stdin>", 240)]
    );
    assert_eq!(hits(&piped, "ids", "index").0, 2);
    assert_eq!(hits(&piped, "ids", "max_length").0, 2);
    assert_eq!(piped["rows"], 350);
}

#[test]
fn pass_through_copies_a_valid_stream_byte_for_byte() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    write_data(&env, &[]);
    let stream = std::fs::read(env.path("data.arrows")).expect("read");
    let (code, out, err) = env.run_piped(&["check", "-s", "s.yaml", "--pass-through", "-"], &stream);
    assert_eq!(code, 0, "{err}");
    assert!(out == stream, "stdout must be the input stream, unchanged");
    assert!(err.contains("ok: every rule holds: 1 file, 350 rows"), "{err}");
}

#[test]
fn pass_through_stops_before_the_first_invalid_batch() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    write_data(&env, &[2, 5]);
    let stream = std::fs::read(env.path("data.arrows")).expect("read");
    let (code, out, err) = env.run_piped(
        &["check", "-s", "s.yaml", "--pass-through", "--format", "json", "-"],
        &stream,
    );
    assert_eq!(code, 1, "{err}");
    assert!(stream.starts_with(&out), "what is passed on is a prefix of the input");
    // The report (on stderr) covers batches 0..=2; the first bad batch is
    // batch 2 (rows 100..150), and nothing after it was read.
    let report: Value = serde_json::from_str(&err).expect("JSON report on stderr");
    assert_eq!(report["rows"], 150);
    assert_eq!(hits(&report, "label", "class").0, 2);
    assert!(
        report["warnings"][0]
            .as_str()
            .expect("warning")
            .contains("rows 100..150")
    );
    // Downstream reads exactly the two valid batches.
    std::fs::write(env.path("out.arrows"), &out).expect("write");
    env.python(
        "r = pa.ipc.open_stream(pa.OSFile('out.arrows'))\n\
         t = r.read_all()\n\
         src = pa.ipc.open_stream(pa.OSFile('data.arrows')).read_all()\n\
         assert t.num_rows == 100, t.num_rows\n\
         assert t.equals(src.slice(0, 100))",
    );
}

#[test]
fn broken_or_misused_stdin_is_exit_2() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    write_data(&env, &[]);
    let stream = std::fs::read(env.path("data.arrows")).expect("read");
    let cut = &stream[..stream.len() / 2];
    let (code, out, err) = env.run_piped(&["check", "-s", "s.yaml", "--format", "json", "-"], cut);
    assert_eq!(code, 2, "{err}");
    let report: Value = serde_json::from_slice(&out).expect("JSON");
    let message = report["errors"][0]["message"].as_str().expect("message");
    assert_eq!(report["errors"][0]["file"], "<stdin>");
    assert!(message.contains("truncated"), "{message}");
    let (code, _, err) = env.run_piped(&["check", "-s", "s.yaml", "-"], b"not arrow at all");
    assert_eq!(code, 2, "{err}");
    let (code, out, _) = env.run_piped(&["check", "-s", "s.yaml", "-"], b"");
    assert_eq!(code, 2);
    assert!(String::from_utf8_lossy(&out).contains("the input is empty"));
    let r = env.run(&["check", "-s", "s.yaml", "-", "data.parquet"]);
    assert_eq!(r.code, 2);
    assert!(r.stdout.contains("cannot be combined"), "{}", r.stdout);
    let r = env.run(&["check", "-s", "s.yaml", "--pass-through", "data.parquet"]);
    assert_eq!(r.code, 2);
    assert!(r.stdout.contains("--pass-through needs `-`"), "{}", r.stdout);
}

#[test]
fn library_batches_merged_in_any_order_give_the_cli_report() {
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use preflight::{Schema, Validator};

    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    write_data(&env, &[0, 3, 6]);
    let schema = Schema::from_file(&env.path("s.yaml")).expect("schema");
    let validator = Validator::new(schema, 3);
    let file = std::fs::File::open(env.path("data.parquet")).expect("open");
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .expect("parquet")
        .with_batch_size(37)
        .build()
        .expect("reader");
    let mut parts = Vec::new();
    let mut row = 0;
    for batch in reader {
        let batch = batch.expect("batch");
        parts.push(validator.check("data.parquet", row, &batch));
        row += batch.num_rows() as u64;
    }
    // Merge in a scrambled order and shape: odd batches backwards into one
    // partial, even ones forwards into another, then the odd into the even.
    let n = parts.len();
    assert!(n > 5);
    let mut odd = validator.partial();
    for i in (0..n).rev().filter(|i| i % 2 == 1) {
        odd.merge(parts[i].clone());
    }
    let mut merged = validator.partial();
    for i in (0..n).filter(|i| i % 2 == 0) {
        merged.merge(parts[i].clone());
    }
    merged.merge(odd);
    let library = preflight::report::json::render(&merged.report(&validator));
    let cli = env.run(&[
        "check",
        "-s",
        "s.yaml",
        "--format",
        "json",
        "--max-examples",
        "3",
        "data.parquet",
    ]);
    assert_eq!(cli.code, 1);
    assert_eq!(library, cli.stdout);
    let (n, _) = hits(&cli.json(), "label", "class");
    assert_eq!(n, 6);
}

#[test]
fn github_format_annotates_file_and_row() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 3}\n");
    env.write("a.csv", "label\n0\n1\n7\n2\n9\n");
    env.write("b.csv", "label\n0\n");
    env.write("c.parquet", "not parquet");
    let r = env.run(&[
        "check",
        "-s",
        "s.yaml",
        "--format",
        "github",
        "--max-examples",
        "1",
        ".",
    ]);
    assert_eq!(r.code, 2);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "::error file=./a.csv,title=preflight%3A column label (class)::row 2: 7 violates 0 <= v < 3 (num_classes), or v == -100 (ignore_index)"
    );
    assert!(
        lines[1].starts_with("::error title=preflight%3A column label (class)::2 values violate 0 <= v < 3"),
        "{}",
        lines[1]
    );
    assert!(lines[1].contains("(1 more not annotated)%0Ahint: "), "{}", lines[1]);
    assert!(
        lines[2].starts_with("::error file=./c.parquet,title=preflight: cannot check::"),
        "{}",
        lines[2]
    );
    assert_eq!(
        lines[3],
        "::error title=preflight::INCOMPLETE: 1 error kept the data from being checked completely: 3 files, 6 rows"
    );
    assert_eq!(lines.len(), 4);
    // A clean run is one notice.
    let r = env.run(&["check", "-s", "s.yaml", "--format", "github", "b.csv"]);
    assert_eq!(r.code, 0);
    assert_eq!(
        r.stdout,
        "::notice title=preflight::ok: every rule holds: 1 file, 1 row\n"
    );
}

#[test]
fn junit_format_is_xml_with_a_case_per_check() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    write_data(&env, &[1]);
    env.write("broken.parquet", "PAR1 not really");
    let r = env.run(&[
        "check",
        "-s",
        "s.yaml",
        "--format",
        "junit",
        "data.parquet",
        "broken.parquet",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let doc = roxmltree::Document::parse(&r.stdout).expect("well-formed XML");
    let suites = doc.root_element();
    assert_eq!(suites.tag_name().name(), "testsuites");
    assert_eq!(suites.attribute("tests"), Some("8"));
    assert_eq!(suites.attribute("failures"), Some("3"));
    assert_eq!(suites.attribute("errors"), Some("1"));
    let cases: Vec<_> = doc.descendants().filter(|n| n.has_tag_name("testcase")).collect();
    let names: Vec<&str> = cases.iter().filter_map(|c| c.attribute("name")).collect();
    assert_eq!(
        names,
        vec![
            "label class",
            "label null",
            "label not_integer",
            "ids index",
            "ids null",
            "ids not_integer",
            "ids max_length",
            "broken.parquet"
        ]
    );
    let failure = cases[0]
        .children()
        .find(|n| n.has_tag_name("failure"))
        .expect("failure");
    assert_eq!(
        failure.attribute("message"),
        Some("2 values violate 0 <= v < 10 (num_classes), or v == -100 (ignore_index)")
    );
    let text = failure.text().expect("text");
    assert!(text.starts_with("data.parquet:53: 10\ndata.parquet:90: -1\n"), "{text}");
    assert!(
        cases[1].children().all(|n| !n.is_element()),
        "a passing check has no failure"
    );
    let error = cases[7].children().find(|n| n.has_tag_name("error")).expect("error");
    assert!(error.attribute("message").expect("message").len() > 5);
}

#[test]
fn batches_with_empty_bodies_are_checked_before_they_are_passed_on() {
    // An empty batch (no body) used to be decoded only when the next message
    // arrived, so the batch after it slipped through unchecked.
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 2}\n");
    env.python(
        "s = pa.schema([('label', pa.int64())])\n\
         with pa.OSFile('e.arrows', 'wb') as f, pa.ipc.new_stream(f, s) as w:\n\
         \x20   for v in [[], [0, 7, 99], [1]]: w.write_batch(pa.record_batch([pa.array(v, pa.int64())], schema=s))\n\
         n = pa.schema([('label', pa.null())])\n\
         f = pa.OSFile('nulls.arrows', 'wb')\n\
         w = pa.ipc.new_stream(f, n)\n\
         w.write_batch(pa.record_batch([pa.nulls(5)], schema=n))\n\
         f.close()",
    );
    let stream = std::fs::read(env.path("e.arrows")).expect("read");
    let (code, out, err) = env.run_piped(&["check", "-s", "s.yaml", "--format", "json", "-"], &stream);
    assert_eq!(code, 1, "{err}");
    let report: Value = serde_json::from_slice(&out).expect("json");
    assert_eq!(report["rows"], 4);
    let (n, ex) = hits(&report, "label", "class");
    assert_eq!(n, 2);
    assert_eq!(ex.iter().map(|e| e.1).collect::<Vec<_>>(), vec![1, 2]);
    // Pass-through stops before the bad batch: downstream sees no rows.
    let (code, out, _) = env.run_piped(&["check", "-s", "s.yaml", "--pass-through", "-"], &stream);
    assert_eq!(code, 1);
    std::fs::write(env.path("out.arrows"), &out).expect("write");
    env.python("assert pa.ipc.open_stream(pa.OSFile('out.arrows')).read_all().num_rows == 0");
    // A batch of a null-typed column, in a stream closed without its end marker.
    let nulls = std::fs::read(env.path("nulls.arrows")).expect("read");
    let (code, out, err) = env.run_piped(&["check", "-s", "s.yaml", "--format", "json", "-"], &nulls);
    assert_eq!(code, 1, "{err}");
    let report: Value = serde_json::from_slice(&out).expect("json");
    assert_eq!(report["rows"], 5);
    assert_eq!(hits(&report, "label", "null").0, 5);
}
