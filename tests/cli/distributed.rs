//! Partial results merged as a distributed run would: units planned, checked
//! in any partition, written as JSON, read back and merged in any order,
//! give byte for byte the report of one `preflight check`.

use proptest::prelude::*;

use preflight::report::json;
use preflight::{Partial, Schema, Validator};
use preflight::{ScanOptions, WorkUnit};

use crate::util::Env;

const SCHEMA: &str = "columns:
  label: {kind: class, num_classes: 10}
  ids: {kind: index, size: 100, max_length: 6}
";

/// Six shards (two with several row groups, two with violations, one
/// corrupt, one missing a column) and a directory of clean ones.
fn dataset(env: &Env) {
    env.write("s.yaml", SCHEMA);
    env.python(
        r#"
os.makedirs('d/clean')
for s in range(6):
    n = 400 + 100 * s
    label = [(s + i) % 10 for i in range(n)]
    ids = [[(i + k) % 100 for k in range(i % 7)] for i in range(n)]
    if s in (1, 4):
        label[n - 3] = 10 + s
        label[s * 7] = -1
        ids[s * 11] = [5, 100 + s]
    t = pa.table({'label': label, 'ids': pa.array(ids, pa.list_(pa.int32()))})
    if s == 3:
        t = t.drop(['ids'])
    pq.write_table(t, f'd/shard-{s}.parquet', row_group_size=97 if s in (1, 2) else n)
    pq.write_table(pa.table({'label': [1, 2], 'ids': [[1], [2]]}), f'd/clean/c{s}.parquet')
open('d/shard-9.parquet', 'wb').write(b'PAR1 torn')
"#,
    );
}

fn partial_from_json(text: &str) -> Partial {
    let doc: serde_json::Value = serde_json::from_str(text).expect("json");
    Partial::from_json(&doc["partial"]).expect("partial").0
}

#[test]
fn any_split_merged_in_any_order_gives_the_single_run_report() {
    let env = Env::new();
    dataset(&env);
    let cli = env.run(&["check", "-s", "s.yaml", "--format", "json", "--max-examples", "3", "d"]);
    assert_eq!(cli.code, 2, "a corrupt shard and a missing column");
    let schema = Schema::from_file(&env.path("s.yaml")).expect("schema");
    let validator = Validator::new(schema, 3);
    // Every row group a unit; files named as the CLI (run in the temporary
    // directory) names them, opened by their full path.
    let units: Vec<WorkUnit> = crate::util::relative_units(&env, preflight::plan_paths(&[env.path("d")], 1, None));
    assert!(units.len() > 15, "row groups are units: {}", units.len());
    let opts = ScanOptions {
        jobs: 1,
        ..ScanOptions::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(proptest::test_runner::Config {
        cases: 24,
        ..Default::default()
    });
    let n = units.len();
    let strategy = (
        prop::collection::vec(0..5usize, n),
        Just((0..5usize).collect::<Vec<_>>()).prop_shuffle(),
    );
    runner
        .run(&strategy, |(partition_of, order)| {
            let mut texts = Vec::new();
            for p in 0..5 {
                let mine: Vec<WorkUnit> = units
                    .iter()
                    .zip(&partition_of)
                    .filter(|(_, q)| **q == p)
                    .map(|(u, _)| u.clone())
                    .collect();
                let part = preflight::check_units(&validator, &mine, &opts);
                // Across the wire and back, as a worker's report.
                let state = part.to_json(&validator);
                texts.push(json::render_with(&part.report(&validator), Some(state)));
            }
            let mut merged = validator.partial();
            for p in order {
                merged.merge(partial_from_json(&texts[p]));
            }
            let report = json::render(&merged.report(&validator));
            prop_assert_eq!(report, cli.stdout.clone());
            Ok(())
        })
        .expect("every split merges to the single-run report");
}

#[test]
fn cli_merge_of_partial_reports_equals_the_single_run() {
    let env = Env::new();
    dataset(&env);
    let full = env.run(&["check", "-s", "s.yaml", "--format", "json", "d"]);
    let write = |name: &str, paths: &[&str]| {
        let mut args = vec!["check", "-s", "s.yaml", "--format", "json", "--partial"];
        args.extend_from_slice(paths);
        let r = env.run(&args);
        env.write(name, &r.stdout);
    };
    write("a.json", &["d/shard-0.parquet", "d/shard-4.parquet", "d/clean"]);
    write("b.json", &["d/shard-1.parquet", "d/shard-9.parquet"]);
    write(
        "c.json",
        &["d/shard-2.parquet", "d/shard-3.parquet", "d/shard-5.parquet"],
    );
    // A tree of merges: (c + a) + b.
    let ca = env.run(&["merge", "c.json", "a.json", "--format", "json", "--partial"]);
    assert_eq!(ca.code, 2, "shard-3 lacks a column");
    env.write("ca.json", &ca.stdout);
    let all = env.run(&["merge", "b.json", "ca.json", "--format", "json"]);
    assert_eq!(all.code, full.code);
    assert_eq!(all.stdout, full.stdout);
    // The human report of a merge, and refusals.
    let human = env.run(&["merge", "a.json", "b.json", "c.json"]);
    assert!(human.stdout.contains("INCOMPLETE"), "{}", human.stdout);
    let plain = env.run(&["check", "-s", "s.yaml", "--format", "json", "d/clean"]);
    env.write("plain.json", &plain.stdout);
    let r = env.run(&["merge", "a.json", "plain.json"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("no `partial` key"), "{}", r.stderr);
    env.write("other.yaml", "columns:\n  label: {kind: class, num_classes: 11}\n");
    let other = env.run(&["check", "-s", "other.yaml", "--format", "json", "--partial", "d/clean"]);
    env.write("other.json", &other.stdout);
    let r = env.run(&["merge", "a.json", "other.json"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("another schema"), "{}", r.stderr);
    // Clean data merges to exit 0.
    let clean = env.run(&["check", "-s", "s.yaml", "--format", "json", "--partial", "d/clean"]);
    env.write("clean.json", &clean.stdout);
    assert_eq!(env.run(&["merge", "clean.json", "clean.json"]).code, 0);
}

#[test]
fn plan_lists_files_and_the_row_groups_of_large_ones() {
    let env = Env::new();
    dataset(&env);
    let r = env.run(&["plan", "-s", "s.yaml", "d", "--split-bytes", "1"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
    let units = doc["units"].as_array().expect("units");
    let of = |file: &str| units.iter().filter(|u| u["file"] == file).count();
    assert_eq!(of("d/shard-1.parquet"), 6, "500 rows in row groups of 97");
    assert_eq!(of("d/shard-0.parquet"), 1);
    assert_eq!(of("d/shard-9.parquet"), 1, "a corrupt file is one unit");
    let whole = env.run(&["plan", "-s", "s.yaml", "d"]);
    let doc: serde_json::Value = serde_json::from_str(&whole.stdout).expect("json");
    assert_eq!(
        doc["units"].as_array().expect("units").len(),
        13,
        "small files are not split"
    );
    let none = env.run(&["plan", "-s", "s.yaml", "nothing-*.parquet"]);
    let doc: serde_json::Value = serde_json::from_str(&none.stdout).expect("json");
    assert_eq!(doc["units"][0]["error"], "matched no data files");
}

#[test]
fn a_unit_the_file_no_longer_has_is_an_error() {
    let env = Env::new();
    dataset(&env);
    let validator = Validator::new(Schema::from_file(&env.path("s.yaml")).expect("schema"), 3);
    let mut units = preflight::plan_paths(&[env.path("d/shard-1.parquet")], 1, None);
    assert_eq!(units.len(), 6);
    units[5].unit = Some(99);
    let partial = preflight::check_units(&validator, &units, &ScanOptions::default());
    let report = partial.report(&validator);
    assert_eq!(report.outcome().exit_code(), 2);
    assert!(
        report.errors[0].message.contains("unit 99 is not in the file"),
        "{:?}",
        report.errors
    );
}

#[test]
fn stdin_partials_merge_and_merge_failures_still_print_a_document() {
    let env = Env::new();
    dataset(&env);
    env.python(
        "t = pq.read_table('d/shard-1.parquet')\n\
         with pa.OSFile('one.arrows', 'wb') as f, pa.ipc.new_stream(f, t.schema) as w: w.write_table(t)",
    );
    let stream = std::fs::read(env.path("one.arrows")).expect("read");
    let (code, out, err) = env.run_piped(
        &["check", "-s", "s.yaml", "--format", "json", "--partial", "-"],
        &stream,
    );
    assert_eq!(code, 1, "{err}");
    env.write("stdin.json", &String::from_utf8(out).expect("utf-8"));
    let file = env.run(&["check", "-s", "s.yaml", "--format", "json", "--partial", "d/clean"]);
    env.write("clean.json", &file.stdout);
    let merged = env.run(&["merge", "stdin.json", "clean.json", "--format", "json"]);
    assert_eq!(merged.code, 1, "{}", merged.stderr);
    let doc: serde_json::Value = serde_json::from_str(&merged.stdout).expect("json");
    assert_eq!(doc["files"], 7, "<stdin> and six clean shards");
    assert_eq!(doc["violations"], 3, "two labels and one id of shard-1");
    // A merge that cannot be done still prints one JSON document.
    env.write("bogus.json", "{\"ok\": true}");
    let r = env.run(&["merge", "bogus.json", "--format", "json"]);
    assert_eq!(r.code, 2);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("one JSON document");
    assert_eq!(doc["ok"], false);
    assert!(
        doc["errors"][0]["message"]
            .as_str()
            .expect("m")
            .contains("no `partial` key")
    );
}
