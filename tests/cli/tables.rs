//! Lakehouse tables written by their own writers (delta-rs' `deltalake`,
//! Spark and Databricks through the Delta kernel's test tables, PyIceberg
//! with a SQLite catalog): a table is read as its snapshot, on disk and in
//! object storage, checked against the writer's own reading of it; a table
//! that cannot be read is an error naming it, and none of its files is
//! read as a loose file.
//!
//! Spark itself (in the test venv for the Spark helper) writes no table
//! here: its Delta and Iceberg connectors are Maven jars, and Maven is not
//! among the registries this machine reaches. Spark- and Databricks-written
//! Delta tables come from the Delta kernel's own test tables
//! (tests/fixtures/delta); Iceberg delete files PyIceberg cannot write are
//! committed through its own manifest writers ([`ICEBERG`]).

use serde_json::Value;

use crate::remote::Servers;
use crate::util::Env;

const SCHEMA: &str = "columns:\n  label: {kind: class, num_classes: 3}\n";

/// The oracle of a Delta table written by deltalake: every live file as
/// deltalake lists it, its `label` values (the partition value when the
/// table is partitioned by it), the rows outside [0, 3) as [file, row,
/// value], and the snapshot's row count as `to_pyarrow_table` reads it.
const ORACLE: &str = r#"
from deltalake import DeltaTable
def oracle(root, version=None):
    d = DeltaTable(root, version=version)
    adds = pa.table(d.get_add_actions(flatten=True)).to_pydict()
    bad, rows = [], 0
    for i, rel in enumerate(adds['path']):
        path = os.path.join(root, rel)
        if 'partition.label' in adds:
            labels = [adds['partition.label'][i]] * pq.read_metadata(path).num_rows
        else:
            labels = pq.read_table(path, columns=['label']).column(0).to_pylist()
        rows += len(labels)
        bad += [[path, r, v] for r, v in enumerate(labels) if not 0 <= v < 3]
    assert rows == d.to_pyarrow_table().num_rows
    return {'version': d.version(), 'rows': rows, 'files': len(adds['path']), 'bad': sorted(bad)}
"#;

/// (file, row, value) of every `label` violation in a report's examples.
fn found(report: &Value) -> Vec<Value> {
    found_in(report, "label")
}

/// (file, row, value) of every violation of `column` in a report's examples.
fn found_in(report: &Value, column: &str) -> Vec<Value> {
    let mut all: Vec<Value> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["column"] == column)
        .flat_map(|c| c["examples"].as_array().cloned().unwrap_or_default())
        .map(|e| serde_json::json!([e["file"], e["row"], e["value"]]))
        .collect();
    all.sort_by_key(|v| v.to_string());
    all
}

fn expected(env: &Env, name: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.path(name)).expect("oracle")).expect("json")
}

fn errors(report: &Value) -> Vec<(String, String)> {
    report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["file"].as_str().unwrap_or("").to_string(),
                e["message"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The snapshot is what is read: an overwrite's removed file (with a bad
/// label) is never judged, appended files are, a table partitioned by the
/// label has its label from the log, and a table whose first commit was
/// cleaned up after a checkpoint reads from the checkpoint. Every violation
/// and row count equals deltalake's own reading of the snapshot.
#[test]
fn a_delta_table_is_read_as_its_snapshot() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 3}\n");
    env.python(&format!(
        "{ORACLE}\n\
         from deltalake import write_deltalake\n\
         import glob\n\
         col = lambda v: pa.array(v, pa.int64())\n\
         write_deltalake('dt', pa.table({{'label': col([0, 1, 7, 2])}}))\n\
         write_deltalake('dt', pa.table({{'label': col([0, 1, 2, 0])}}), mode='overwrite')\n\
         write_deltalake('dt', pa.table({{'label': col([1, 5, 2])}}), mode='append')\n\
         assert len(glob.glob('dt/*.parquet')) == 3\n\
         write_deltalake('pt', pa.table({{'label': col([0, 1, 4, 2, 4, 9]), 'x': col([1, 2, 3, 4, 5, 6])}}), partition_by=['label'])\n\
         write_deltalake('pt', pa.table({{'label': col([1, 2]), 'x': col([7, 8])}}), partition_by=['label'], mode='overwrite')\n\
         write_deltalake('pt', pa.table({{'label': col([3, 0, 3]), 'x': col([9, 10, 11])}}), partition_by=['label'], mode='append')\n\
         write_deltalake('ck', pa.table({{'label': col([6, 0])}}))\n\
         write_deltalake('ck', pa.table({{'label': col([1, 2, 8])}}), mode='overwrite')\n\
         DeltaTable('ck').create_checkpoint()\n\
         os.remove('ck/_delta_log/00000000000000000000.json')\n\
         write_deltalake('ck', pa.table({{'label': col([4, 0])}}), mode='append')\n\
         for t in ('dt', 'pt', 'ck'): json.dump(oracle(t), open(t + '.json', 'w'))\n\
         for v in range(3): json.dump(oracle('dt', v), open(f'dt_v{{v}}.json', 'w'))\n\
         os._exit(0)\n"
    ));
    let mut files = 0;
    for table in ["dt", "pt", "ck"] {
        let want = expected(&env, &format!("{table}.json"));
        let report = env.check_json(&["-s", "s.yaml", table], 1);
        assert!(errors(&report).is_empty(), "{table}: {report}");
        assert_eq!(report["rows"], want["rows"], "{table}: {report}");
        assert_eq!(report["files"], want["files"], "{table}: {report}");
        files += want["files"].as_u64().expect("files");
        let bad = want["bad"].as_array().expect("bad");
        assert!(!bad.is_empty(), "{table}: the oracle plants violations");
        assert_eq!(report["violations"], bad.len(), "{table}: {report}");
        assert_eq!(found(&report), *bad, "{table}");
    }
    // Every version by time travel (`TABLE@vN`), as deltalake reads it:
    // version 0 holds the bad label the overwrite removed.
    for v in 0..=2 {
        let want = expected(&env, &format!("dt_v{v}.json"));
        let path = format!("dt@v{v}");
        let clean = want["bad"].as_array().is_some_and(|b| b.is_empty());
        let report = env.check_json(&["-s", "s.yaml", &path], if clean { 0 } else { 1 });
        assert_eq!(clean, v == 1, "version 1 is the clean overwrite");
        assert!(errors(&report).is_empty(), "{path}: {report}");
        assert_eq!(report["rows"], want["rows"], "{path}: {report}");
        assert_eq!(found(&report), *want["bad"].as_array().expect("bad"), "{path}");
    }
    let report = env.check_json(&["-s", "s.yaml", "dt@v9"], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].0, "dt@v9");
    assert!(errs[0].1.contains("the Delta log cannot be read"), "{errs:?}");
    // All three in one run, as a search meets them.
    std::fs::create_dir(env.path("all")).expect("mkdir");
    for t in ["dt", "pt", "ck"] {
        std::fs::rename(env.path(t), env.path(&format!("all/{t}"))).expect("move");
    }
    let report = env.check_json(&["-s", "s.yaml", "all", "--jobs", "1"], 1);
    assert!(errors(&report).is_empty(), "{report}");
    assert_eq!(report["files"], files);
    let two = env.check_json(&["-s", "s.yaml", "all", "--jobs", "2"], 1);
    assert_eq!(report, two, "the report does not depend on the thread count");
}

/// Tables written by Spark and Databricks (tests/fixtures/delta): rows a
/// deletion vector deletes are never judged, and rules name a column-mapped
/// table's logical columns while its files store `col-<uuid>` names.
#[test]
fn deleted_rows_and_mapped_columns_are_read_as_the_table_says() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/delta");
    let env = Env::new();
    env.write("value.yaml", "columns:\n  value: {kind: range, min: 2, max: 7}\n");
    env.write("id.yaml", "columns:\n  id: {kind: range, min: 4, max: 8}\n");
    let table = |name: &str| fixtures.join(name).to_string_lossy().into_owned();
    let rows_of = |report: &Value, column: &str| -> Vec<(String, u64, Value)> {
        crate::util::hits(report, column, "range")
            .1
            .into_iter()
            .map(|(f, r, v)| (f.rsplit('/').next().unwrap_or("").to_string(), r, v))
            .collect()
    };
    // value 0..9 in one file; 0 and 9 deleted: 8 rows, and of 1..8 only 1
    // and 8 (rows 1 and 8) lie outside [2, 7].
    let report = env.check_json(&["-s", "value.yaml", &table("table-with-dv-small")], 1);
    assert_eq!(report["rows"], 8, "{report}");
    let file = "part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet";
    assert_eq!(
        rows_of(&report, "value"),
        vec![(file.to_string(), 1, 1.into()), (file.to_string(), 8, 8.into())]
    );
    // Without the deletion vector both deleted values would be violations
    // of [1, 8]; with it the table passes.
    env.write("value18.yaml", "columns:\n  value: {kind: range, min: 1, max: 8}\n");
    let report = env.check_json(&["-s", "value18.yaml", &table("table-with-dv-small")], 0);
    assert_eq!(report["rows"], 8, "{report}");
    // ids 0..9 in two files of 5; ids 0, 1, 2 deleted: 7 rows, and 3 (row
    // 3 of the first file) and 9 (row 4 of the second) outside [4, 8].
    let report = env.check_json(&["-s", "id.yaml", &table("with-short-dv")], 1);
    assert_eq!(report["rows"], 7, "{report}");
    assert_eq!(
        rows_of(&report, "id"),
        vec![
            (
                "part-00000-8029f411-746c-41c1-a0c1-c5eb867c5d05-c000.snappy.parquet".to_string(),
                3,
                3.into()
            ),
            (
                "part-00001-24db34ab-bdfe-4814-aba8-c1f34d6d8923-c000.snappy.parquet".to_string(),
                4,
                9.into()
            ),
        ]
    );
    // Column mapping: the oracle replays the JSON log in Python (adds and
    // removes by path) and reads each live file's physical column.
    for mode in ["name", "id"] {
        let root = table(&format!("cdf-column-mapping-{mode}-mode"));
        env.python(&format!(
            "import glob\n\
             live, meta = {{}}, None\n\
             for f in sorted(glob.glob('{root}/_delta_log/*.json')):\n\
             \x20   for line in open(f):\n\
             \x20       a = json.loads(line)\n\
             \x20       if 'metaData' in a: meta = a['metaData']\n\
             \x20       if 'add' in a: live[a['add']['path']] = a['add']\n\
             \x20       if 'remove' in a: live.pop(a['remove']['path'], None)\n\
             fields = json.loads(meta['schemaString'])['fields']\n\
             phys = {{f['name']: f['metadata']['delta.columnMapping.physicalName'] for f in fields}}\n\
             assert phys['id'].startswith('col-')\n\
             bad, rows = [], 0\n\
             for p in sorted(live):\n\
             \x20   ids = pq.read_table('{root}/' + p, columns=[phys['id']]).column(0).to_pylist()\n\
             \x20   rows += len(ids)\n\
             \x20   bad += [[p, r, v] for r, v in enumerate(ids) if not 4 <= v <= 8]\n\
             json.dump({{'rows': rows, 'bad': sorted(bad)}}, open('{mode}.json', 'w'))\n"
        ));
        let want = expected(&env, &format!("{mode}.json"));
        let report = env.check_json(&["-s", "id.yaml", &root], 1);
        assert!(errors(&report).is_empty(), "{report}");
        assert_eq!(report["rows"], want["rows"], "{mode}: {report}");
        let got: Vec<Value> = rows_of(&report, "id")
            .into_iter()
            .map(|(f, r, v)| serde_json::json!([f, r, v]))
            .collect();
        assert!(!got.is_empty());
        assert_eq!(got, *want["bad"].as_array().expect("bad"), "{mode}");
    }
}

/// A folder or file inside a Delta table, a table in object storage and a
/// broken log are errors naming the table (exit 2), never a read of its
/// files as a folder; the other PATHs are still checked.
#[test]
fn delta_tables_that_cannot_be_read_are_errors_naming_them() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(
        "from deltalake import write_deltalake, DeltaTable\n\
         write_deltalake('pt', pa.table({'label': pa.array([0, 1, 4], pa.int64()), 'x': pa.array([1, 2, 3])}), partition_by=['label'])\n\
         write_deltalake('dt', pa.table({'label': pa.array([0, 1, 2], pa.int64())}))\n\
         write_deltalake('dt', pa.table({'label': pa.array([1], pa.int64())}), mode='append')\n\
         write_deltalake('ck', pa.table({'label': pa.array([0, 1], pa.int64())}))\n\
         write_deltalake('ck', pa.table({'label': pa.array([1, 2], pa.int64())}), mode='append')\n\
         DeltaTable('ck').create_checkpoint()\n\
         cp = 'ck/_delta_log/00000000000000000001.checkpoint.parquet'\n\
         open(cp, 'r+b').truncate(300)\n\
         pq.write_table(pa.table({'label': pa.array([0, 5], pa.int64())}), 'loose.parquet')\n\
         os._exit(0)\n",
    );
    // A corrupt checkpoint.
    let report = env.check_json(&["-s", "s.yaml", "ck", "loose.parquet"], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].0, "ck");
    assert!(errs[0].1.contains("the Delta log cannot be read"), "{errs:?}");
    assert!(errs[0].1.contains("Parquet"), "{errs:?}");
    assert_eq!(crate::util::rows(&report, "label", "class"), vec![1]);
    // A partition folder, a glob into the table, a log file.
    for (path, root) in [
        ("pt/label=4", "pt"),
        ("pt/label=4/*.parquet", "pt"),
        (
            "dt/_delta_log/00000000000000000000.json",
            "dt/_delta_log/00000000000000000000.json",
        ),
    ] {
        let report = env.check_json(&["-s", "s.yaml", path, "loose.parquet"], 2);
        let errs = errors(&report);
        assert_eq!(errs.len(), 1, "{path}: {errs:?}");
        assert_eq!(errs[0].0, root, "{path}");
        assert!(errs[0].1.contains("Delta Lake table"), "{errs:?}");
        assert_eq!(report["files"], 1, "{report}");
        assert_eq!(crate::util::rows(&report, "label", "class"), vec![1]);
    }
    // `plan` lists a table's files as units pinned at the version read.
    let plan = env.run(&["plan", "-s", "s.yaml", "dt"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let units = plan.json()["units"].as_array().cloned().expect("units");
    assert_eq!(units.len(), 2, "{units:?}");
    assert!(
        units
            .iter()
            .all(|u| u.get("error").is_none() && u["table"]["shown"] == "dt"),
        "{units:?}"
    );
    // A log entry naming a missing file: that file's error; the rest read.
    let live: Vec<_> = std::fs::read_dir(env.path("dt"))
        .expect("dt")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".parquet"))
        .collect();
    assert_eq!(live.len(), 2);
    std::fs::remove_file(live[0].path()).expect("rm");
    let report = env.check_json(&["-s", "s.yaml", "dt", "loose.parquet"], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].0.starts_with("dt/"), "{errs:?}");
    assert_eq!(crate::util::rows(&report, "label", "class"), vec![1]);
    // A corrupt commit, and a reader feature the kernel does not know.
    let commit = env.path("dt/_delta_log/00000000000000000001.json");
    std::fs::write(&commit, "{\"add\": {\"path\": ").expect("write");
    let report = env.check_json(&["-s", "s.yaml", "dt", "loose.parquet"], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].0, "dt");
    assert!(errs[0].1.contains("the Delta log cannot be read"), "{errs:?}");
    assert_eq!(crate::util::rows(&report, "label", "class"), vec![1]);
    std::fs::write(
        &commit,
        "{\"protocol\":{\"minReaderVersion\":3,\"minWriterVersion\":7,\"readerFeatures\":[\"fancyNewFeature\"],\"writerFeatures\":[\"fancyNewFeature\"]}}\n",
    )
    .expect("write");
    let report = env.check_json(&["-s", "s.yaml", "dt"], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].1.contains("fancyNewFeature"), "{errs:?}");
}

/// A Delta table in S3 (the local S3 server) reads as the same table on
/// disk: its log through preflight's own client and credentials, the same
/// live files, rows and violations, named by URL.
#[test]
fn a_delta_table_in_object_storage_reads_as_on_disk() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(
        "from deltalake import write_deltalake, DeltaTable\n\
         col = lambda v: pa.array(v, pa.int64())\n\
         write_deltalake('up/dt', pa.table({'label': col([0, 1, 7, 2])}))\n\
         write_deltalake('up/dt', pa.table({'label': col([0, 1, 2, 0])}), mode='overwrite')\n\
         write_deltalake('up/dt', pa.table({'label': col([1, 5, 2])}), mode='append')\n\
         write_deltalake('up/pt', pa.table({'label': col([0, 4, 1]), 'x': col([1, 2, 3])}), partition_by=['label'])\n\
         pq.write_table(pa.table({'label': col([0, 5])}), 'up/loose.parquet')\n\
         os._exit(0)\n",
    );
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "up", "bkt", "data/");
    let local = servers.check(&env, &["-s", "s.yaml", "up"], 1);
    assert!(errors(&local).is_empty(), "{local}");
    // loose.parquet row 1, dt's appended 5, pt's partition value 4.
    assert_eq!(local["violations"], 3, "{local}");
    for url in ["s3://bkt/data/", "s3://bkt/data"] {
        let remote = servers.check(&env, &["-s", "s.yaml", url], 1);
        assert_eq!(
            crate::remote::renamed(&remote, "s3://bkt/data/", "up/"),
            crate::remote::renamed(&local, "", ""),
            "{url}"
        );
    }
    let remote = servers.check(&env, &["-s", "s.yaml", "s3://bkt/data/dt/"], 1);
    assert_eq!(remote["rows"], 7, "{remote}");
    // TABLE@vN in storage reads what it reads on disk.
    for v in 0..=2 {
        let local = servers.check(
            &env,
            &["-s", "s.yaml", &format!("up/dt@v{v}")],
            if v == 1 { 0 } else { 1 },
        );
        let remote = servers.check(
            &env,
            &["-s", "s.yaml", &format!("s3://bkt/data/dt@v{v}")],
            if v == 1 { 0 } else { 1 },
        );
        assert_eq!(remote["table"]["version"], v);
        assert_eq!(
            crate::remote::renamed(&remote, "s3://bkt/data/", "up/"),
            crate::remote::renamed(&local, "", ""),
            "v{v}"
        );
    }
    // The log's statistics settle the check of files no deletion vector
    // touches: no request for them (one listing of the table shows they
    // are there), the same report as a full scan reading every file.
    env.write("wide.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    servers.reset(servers.proxy);
    let proven = servers.check(&env, &["-s", "wide.yaml", "s3://bkt/data/dt/"], 0);
    let log = servers.log(servers.proxy);
    let data: Vec<&Value> = log
        .iter()
        .filter(|r| r["path"].as_str().is_some_and(|p| p.ends_with(".parquet")))
        .collect();
    assert!(data.is_empty(), "{data:?}");
    // The table is known by its folder's top level (not a listing of its
    // files), and each log file is fetched once though the kernel reads
    // the log twice (protocol and metadata, then the scan).
    let queries = crate::remote::listings(&log);
    assert_eq!(
        queries[0], "delimiter=%2F&list-type=2&prefix=data%2Fdt%2F",
        "{queries:?}"
    );
    let log_reads: Vec<(&str, &str)> = log
        .iter()
        .filter_map(|r| {
            let path = r["path"].as_str().filter(|p| p.contains("/_delta_log/0"))?;
            Some((path, r["range"].as_str().unwrap_or("")))
        })
        .collect();
    let once: std::collections::BTreeSet<_> = log_reads.iter().collect();
    assert!(!log_reads.is_empty());
    assert_eq!(once.len(), log_reads.len(), "{log_reads:?}");
    assert_eq!(proven["rows"], 7);
    let full = servers.check(&env, &["-s", "wide.yaml", "--full-scan", "s3://bkt/data/dt/"], 0);
    assert_eq!(proven, full);
    // Statistics prove no partition column: `pt`'s label is read.
    servers.reset(servers.proxy);
    servers.check(&env, &["-s", "wide.yaml", "s3://bkt/data/pt/"], 0);
    let log = servers.log(servers.proxy);
    assert!(
        log.iter()
            .any(|r| r["path"].as_str().is_some_and(|p| p.ends_with(".parquet"))),
        "{log:?}"
    );
}

/// `--table-version N` reads what `TABLE@vN` reads; `--as-of TIME` the
/// version deltalake's `load_as_version` picks for that time (commit times
/// are the log files' modification times here, set an hour apart); the
/// report names the snapshot it read (`table`, `tables`), in every output
/// and through `--partial` and `merge`.
#[test]
fn versions_by_flag_and_by_time_and_the_snapshot_in_the_report() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(&format!(
        "{ORACLE}\n\
         import datetime as D\n\
         from deltalake import write_deltalake\n\
         col = lambda v: pa.array(v, pa.int64())\n\
         write_deltalake('dt', pa.table({{'label': col([0, 1, 7, 2])}}))\n\
         write_deltalake('dt', pa.table({{'label': col([0, 1, 2, 0])}}), mode='overwrite')\n\
         write_deltalake('dt', pa.table({{'label': col([1, 5, 2])}}), mode='append')\n\
         write_deltalake('other', pa.table({{'label': col([0])}}))\n\
         T0 = D.datetime(2026, 1, 1, tzinfo=D.timezone.utc).timestamp()\n\
         for v in range(3):\n\
         \x20   os.utime(f'dt/_delta_log/{{v:020d}}.json', (T0 + 3600 * v, T0 + 3600 * v))\n\
         picks = {{}}\n\
         for t in ['2026-01-01T00:30:00Z', '2026-01-01T01:00:00Z', '2026-01-01T01:30:00+00:00', '2026-01-01T05:00:00+02:00', '2026-01-01']:\n\
         \x20   d = DeltaTable('dt')\n\
         \x20   d.load_as_version(D.datetime.fromisoformat(t.replace('Z', '+00:00')) if 'T' in t else D.datetime(2026, 1, 1, tzinfo=D.timezone.utc))\n\
         \x20   picks[t] = oracle('dt', d.version())\n\
         json.dump(picks, open('picks.json', 'w'))\n\
         for v in range(3): json.dump(oracle('dt', v), open(f'v{{v}}.json', 'w'))\n\
         os._exit(0)\n"
    ));
    // The latest snapshot, named in the report.
    let report = env.check_json(&["-s", "s.yaml", "dt"], 1);
    assert_eq!(
        report["table"],
        serde_json::json!({"format": "delta", "version": 2, "snapshot_id": null, "files": 2})
    );
    assert_eq!(
        report["tables"],
        serde_json::json!([{"path": "dt", "format": "delta", "version": 2, "snapshot_id": null, "files": 2}])
    );
    let human = env.run(&["check", "-s", "s.yaml", "dt"]);
    assert!(
        human.stdout.contains("table: dt (delta version 2, 2 live data files)"),
        "{}",
        human.stdout
    );
    // --table-version N is TABLE@vN, with the same violations.
    for v in 0..=2 {
        let want = expected(&env, &format!("v{v}.json"));
        let code = if want["bad"].as_array().is_some_and(|b| b.is_empty()) {
            0
        } else {
            1
        };
        let by_flag = env.check_json(&["-s", "s.yaml", "dt", "--table-version", &v.to_string()], code);
        let by_path = env.check_json(&["-s", "s.yaml", &format!("dt@v{v}")], code);
        assert_eq!(by_flag["table"]["version"], v);
        assert_eq!(by_flag["table"], by_path["table"]);
        assert_eq!(by_path["tables"][0]["path"], "dt");
        assert_eq!(found(&by_flag), *want["bad"].as_array().expect("bad"), "v{v}");
        assert_eq!(found(&by_flag), found(&by_path));
        assert_eq!(by_flag["rows"], want["rows"]);
    }
    // --as-of TIME: deltalake's pick, each violation as it reads that version.
    let picks = expected(&env, "picks.json");
    for (time, want) in picks.as_object().expect("picks") {
        let code = if want["bad"].as_array().is_some_and(|b| b.is_empty()) {
            0
        } else {
            1
        };
        let report = env.check_json(&["-s", "s.yaml", "dt", "--as-of", time], code);
        assert_eq!(report["table"]["version"], want["version"], "{time}");
        assert_eq!(found(&report), *want["bad"].as_array().expect("bad"), "{time}");
    }
    // Before the first commit there is no such version (deltalake would
    // read version 0; Spark refuses, as preflight does).
    let report = env.check_json(&["-s", "s.yaml", "dt", "--as-of", "2025-12-31T23:00:00Z"], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0]
            .1
            .contains("no version of the table was committed at or before 2025-12-31T23:00:00+00:00"),
        "{errs:?}"
    );
    for bad in [
        &["--as-of", "yesterday"][..],
        &["--as-of", "2026-01-01", "--table-version", "1"],
    ] {
        let mut args = vec!["check", "-s", "s.yaml", "dt"];
        args.extend_from_slice(bad);
        assert_eq!(env.run(&args).code, 2, "{bad:?}");
    }
    // Two tables: both listed, no single `table`.
    let report = env.check_json(&["-s", "s.yaml", "dt", "other", "--table-version", "0"], 1);
    assert!(report.get("table").is_none(), "{report}");
    let versions: Vec<(&str, u64)> = report["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .map(|t| {
            (
                t["path"].as_str().expect("path"),
                t["version"].as_u64().expect("version"),
            )
        })
        .collect();
    assert_eq!(versions, vec![("dt", 0), ("other", 0)]);
    // Partial reports carry the snapshots into a merge.
    let full = env.run(&["check", "-s", "s.yaml", "--format", "json", "dt", "other"]);
    for (name, table) in [("a.json", "dt"), ("b.json", "other")] {
        let r = env.run(&["check", "-s", "s.yaml", "--format", "json", "--partial", table]);
        env.write(name, &r.stdout);
    }
    let merged = env.run(&["merge", "b.json", "a.json", "--format", "json"]);
    assert_eq!(merged.stdout, full.stdout);
}

/// A plan of Delta tables pins each table's version in its units: units
/// checked anywhere, after a writer committed a bad row, in any partition,
/// merge into the report of one run at plan time (deletion vectors and
/// partition values included). A unit naming a version or file the table
/// does not have is that unit's error.
#[test]
fn planned_units_of_a_delta_table_read_the_pinned_snapshot() {
    use preflight::{ScanOptions, WorkUnit};
    use preflight::{Schema, Validator};

    let env = Env::new();
    let dv = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/delta/table-with-dv-small")
        .to_string_lossy()
        .into_owned();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 3, optional: true}\n  value: {kind: range, min: 2, max: 7, optional: true}\n",
    );
    env.python(
        "from deltalake import write_deltalake\n\
         t = lambda labels, part: pa.table({'label': pa.array(labels, pa.int64()), 'part': pa.array([part] * len(labels))})\n\
         write_deltalake('dt', t([0, 1, 7, 2], 'a'), partition_by=['part'])\n\
         write_deltalake('dt', t([0, 1, 2, 0], 'a'), mode='overwrite', partition_by=['part'])\n\
         write_deltalake('dt', t([1, 5, 2], 'b'), mode='append', partition_by=['part'])\n\
         os._exit(0)\n",
    );
    let one = env.run(&["check", "--format", "json", "-s", "s.yaml", "dt", &dv]);
    assert_eq!(one.code, 1, "{}", one.stdout);
    let plan = env.run(&["plan", "-s", "s.yaml", "--split-bytes", "1", "dt", &dv]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let doc: Value = serde_json::from_str(&plan.stdout).expect("plan");
    let units: Vec<WorkUnit> = serde_json::from_value(doc["units"].clone()).expect("units");
    assert_eq!(units.len(), 3, "{units:?}");
    assert!(
        units.iter().all(|u| u.table.is_some() && u.error.is_none()),
        "{units:?}"
    );
    // A writer commits a bad row after the plan was made.
    env.python(
        "from deltalake import write_deltalake\n\
         write_deltalake('dt', pa.table({'label': pa.array([9], pa.int64()), 'part': pa.array(['c'])}), mode='append', partition_by=['part'])\n\
         os._exit(0)\n",
    );
    let schema = Schema::from_file(&env.path("s.yaml")).expect("schema");
    let validator = Validator::new(schema, 5);
    assert_eq!(crate::util::merged_from_workers(&validator, &units, 2), one.stdout);
    let opts = ScanOptions {
        jobs: 1,
        ..ScanOptions::default()
    };
    // --table-version pins another version.
    let old = env.run(&["plan", "-s", "s.yaml", "--table-version", "0", "dt"]);
    let doc: Value = serde_json::from_str(&old.stdout).expect("plan");
    let old: Vec<WorkUnit> = serde_json::from_value(doc["units"].clone()).expect("units");
    assert_eq!(old.len(), 1);
    assert_eq!(old[0].table.as_ref().map(|t| t.version), Some(0));
    let checked = preflight::check_units(&validator, &old, &opts).report(&validator);
    assert_eq!((checked.rows, checked.violations()), (4, 1));
    // A version the table lacks, and a file not live at the pinned one.
    let of_dt = units
        .iter()
        .find(|u| u.table.as_ref().is_some_and(|t| t.shown == "dt"))
        .expect("a unit of dt");
    let mut gone = of_dt.clone();
    gone.table.as_mut().expect("table").version = 99;
    let mut removed = of_dt.clone();
    removed.path = removed.path.with_file_name("part-removed.parquet");
    let checked = preflight::check_units(&validator, &[gone, removed], &opts);
    let report = checked.report(&validator);
    assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
    assert!(
        report.errors[0]
            .message
            .contains("its table dt at version 99: the Delta log cannot be read")
            && report.errors[1].message == "not a live data file of the Delta Lake table dt at version 2",
        "{:?}",
        report.errors
    );
}

/// PyIceberg 0.12 with a SQLite catalog on a local warehouse, and what it
/// cannot write itself: delete files (position deletes, deletion vectors
/// in Puffin files, equality deletes), committed as a snapshot through its
/// own manifest writers and transaction. `oracle` is PyIceberg's reading of
/// a snapshot (`scan().to_arrow()`): its rows and files, the out-of-range
/// values of a column (by field id: its name is the snapshot schema's),
/// and where they are in files no delete applies to.
const ICEBERG: &str = r#"
import os, random, uuid, struct, zlib, json
import pyarrow as pa, pyarrow.parquet as pq
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.manifest import (ManifestWriterV2, ManifestContent, ManifestEntry, ManifestEntryStatus,
    DataFile, DataFileContent, FileFormat, write_manifest_list)
from pyiceberg.table.snapshots import Snapshot, Summary, Operation
from pyiceberg.table.update import AddSnapshotUpdate, SetSnapshotRefUpdate
from pyiceberg.table.refs import SnapshotRefType
from pyiceberg.typedef import Record
from pyroaring import BitMap

def catalog():
    os.makedirs('wh', exist_ok=True)
    cat = SqlCatalog('c', uri='sqlite:///cat.db', warehouse='file://' + os.path.abspath('wh'))
    cat.create_namespace('db')
    return cat

def labels(**cols):
    return pa.table({k: pa.array(v, pa.string() if k == 'k' else pa.int64()) for k, v in cols.items()})

def oracle(table, field_id, snapshot_id=None):
    scan = table.scan(snapshot_id=snapshot_id)
    arrow = scan.to_arrow()
    column = scan.projection().find_field(field_id).name
    fid = str(field_id).encode()
    files, bad = [], []
    for task in scan.plan_files():
        path = os.path.relpath(task.file.file_path[len('file://'):])
        files.append(path)
        if task.delete_files:
            continue
        f = pq.read_table(path)
        col = [i for i, x in enumerate(f.schema) if (x.metadata or {}).get(b'PARQUET:field_id') == fid][0]
        bad += [[path, r, v] for r, v in enumerate(f.column(col).to_pylist()) if not 0 <= v < 3]
    values = sorted(v for v in arrow.column(column).to_pylist() if not 0 <= v < 3)
    return {'rows': arrow.num_rows, 'files': len(files), 'bad': sorted(bad), 'values': values, 'column': column}

class DeleteManifest(ManifestWriterV2):
    def content(self): return ManifestContent.DELETES
    @property
    def _meta(self): return {**super()._meta, 'content': 'deletes'}

def commit_deletes(t, files):
    md, parent = t.metadata, t.metadata.current_snapshot()
    sid, seq = random.getrandbits(62), md.next_sequence_number()
    loc = t.location() + '/metadata/'
    mpath = loc + f'{uuid.uuid4()}-d0.avro'
    with DeleteManifest(t.spec(), t.schema(), t.io.new_output(mpath), sid, 'deflate') as w:
        for f in files:
            w.add(ManifestEntry.from_args(status=ManifestEntryStatus.ADDED, snapshot_id=sid, data_file=f))
    lpath = loc + f'snap-{sid}-0-{uuid.uuid4()}.avro'
    with write_manifest_list(format_version=2, output_file=t.io.new_output(lpath), snapshot_id=sid,
                             parent_snapshot_id=parent.snapshot_id, sequence_number=seq, avro_compression='deflate') as l:
        l.add_manifests(parent.manifests(t.io) + [w.to_manifest_file()])
    snap = Snapshot(snapshot_id=sid, parent_snapshot_id=parent.snapshot_id, manifest_list=lpath,
                    sequence_number=seq, summary=Summary(Operation.DELETE), schema_id=md.current_schema_id)
    with t.transaction() as tx:
        tx._apply((AddSnapshotUpdate(snapshot=snap), SetSnapshotRefUpdate(snapshot_id=sid,
            parent_snapshot_id=parent.snapshot_id, ref_name='main', type=SnapshotRefType.BRANCH)), ())
    return sid

def uri(path):
    return 'file://' + os.path.abspath(path)

def delete_file(path, content, table, **kw):
    pq.write_table(table, path)
    return DataFile.from_args(content=content, file_path=uri(path), file_format=FileFormat.PARQUET,
        partition=Record(), record_count=table.num_rows, file_size_in_bytes=os.path.getsize(path), **kw)

def positions(path, rows):
    schema = pa.schema([pa.field('file_path', pa.string(), False, {b'PARQUET:field_id': b'2147483546'}),
                        pa.field('pos', pa.int64(), False, {b'PARQUET:field_id': b'2147483545'})])
    return delete_file(path, DataFileContent.POSITION_DELETES,
                       pa.table({'file_path': [p for p, _ in rows], 'pos': [r for _, r in rows]}, schema=schema))

def equality(path, field, field_id, values):
    schema = pa.schema([pa.field(field, pa.string(), True, {b'PARQUET:field_id': str(field_id).encode()})])
    return delete_file(path, DataFileContent.EQUALITY_DELETES, pa.table({field: values}, schema=schema),
                       equality_ids=[field_id])

def vector(path, data_file, rows):
    bm = BitMap(rows)
    body = b'\xd1\xd3\x39\x64' + struct.pack('<Q', 1) + struct.pack('<I', 0) + bm.serialize()
    blob = struct.pack('>I', len(body)) + body + struct.pack('>I', zlib.crc32(body))
    footer = json.dumps({'blobs': [{'type': 'deletion-vector-v1', 'fields': [2147483645], 'snapshot-id': -1,
        'sequence-number': -1, 'offset': 4, 'length': len(blob),
        'properties': {'referenced-data-file': data_file, 'cardinality': str(len(bm))}}]}).encode()
    with open(path, 'wb') as f:
        f.write(b'PFA1' + blob + b'PFA1' + footer + struct.pack('<i', len(footer)) + b'\0\0\0\0' + b'PFA1')
    return DataFile.from_args(content=DataFileContent.POSITION_DELETES, file_path=uri(path),
        file_format=FileFormat.PUFFIN, partition=Record(), record_count=len(bm),
        file_size_in_bytes=os.path.getsize(path), referenced_data_file=data_file)

def file_holding(t, value):
    for task in t.scan().plan_files():
        values = pq.read_table(task.file.file_path[7:]).column('label').to_pylist()
        if value in values:
            return task.file.file_path, values.index(value)
"#;

/// Writes `ice.py` (the [`ICEBERG`] helpers) and runs `script` after it.
fn iceberg(env: &Env, script: &str) {
    env.write("ice.py", ICEBERG);
    env.python(&format!("from ice import *\n{script}\nos._exit(0)\n"));
}

/// The out-of-range values of a report's `column` examples, sorted.
fn values(report: &Value, column: &str) -> Vec<i64> {
    let mut all: Vec<i64> = report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .filter(|c| c["column"] == column && c["rule"] == "class")
        .flat_map(|c| c["examples"].as_array().cloned().unwrap_or_default())
        .map(|e| e["value"].as_i64().expect("value"))
        .collect();
    all.sort_unstable();
    all
}

/// A report agrees with PyIceberg's reading of the same snapshot: rows,
/// files, the values out of range, and where they are.
fn agrees(report: &Value, want: &Value, what: &str) {
    let column = want["column"].as_str().expect("column");
    if want["files"] == 0 {
        let errs = errors(report);
        assert!(
            errs.len() == 1 && errs[0].1.contains("has no data files"),
            "{what}: {report}"
        );
        return;
    }
    assert!(errors(report).is_empty(), "{what}: {report}");
    assert_eq!(report["rows"], want["rows"], "{what}: {report}");
    assert_eq!(report["files"], want["files"], "{what}: {report}");
    let want_values: Vec<i64> = serde_json::from_value(want["values"].clone()).expect("values");
    assert_eq!(values(report, column), want_values, "{what}");
    assert_eq!(report["violations"], want_values.len(), "{what}");
    let located: Vec<Value> = found_in(report, column)
        .into_iter()
        .filter(|f| want["bad"].as_array().expect("bad").iter().any(|b| b[0] == f[0]))
        .collect();
    assert_eq!(located, *want["bad"].as_array().expect("bad"), "{what}");
}

/// The report names snapshot `id` as the one it read (or, for a snapshot
/// without data files, in its error).
fn read_snapshot(report: &Value, want: &Value, id: &str) {
    if want["files"] == 0 {
        assert!(
            errors(report)[0]
                .1
                .contains(&format!("its snapshot {id} has no data files")),
            "{report}"
        );
    } else {
        assert_eq!(report["table"]["snapshot_id"].to_string(), id, "{report}");
        assert_eq!(report["tables"][0]["format"], "iceberg", "{report}");
    }
}

/// Tables PyIceberg writes are read as their snapshots: an overwrite's
/// removed file and a copy-on-write delete's old file are never judged, a
/// partitioned table, a v1 table, and a renamed column (its old files
/// store the old name under the same field id) read as PyIceberg reads
/// them. Every snapshot by id, every metadata file by version and by name,
/// and a time in the snapshot log, each as PyIceberg reads it.
#[test]
fn an_iceberg_table_is_read_as_its_snapshot() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 3}\n");
    env.write("y.yaml", "columns:\n  y: {kind: class, num_classes: 3}\n");
    iceberg(
        &env,
        "from pyiceberg.partitioning import PartitionSpec, PartitionField\n\
         from pyiceberg.transforms import IdentityTransform\n\
         from pyiceberg.table import StaticTable\n\
         import glob, time\n\
         cat = catalog()\n\
         t = cat.create_table('db.t', schema=pa.schema([('label', pa.int64())]))\n\
         t.append(labels(label=[0, 1, 7, 2])); time.sleep(0.01)\n\
         t.overwrite(labels(label=[0, 1, 2])); time.sleep(0.01)\n\
         t.append(labels(label=[1, 5]))\n\
         p = cat.create_table('db.p', schema=pa.schema([('label', pa.int64()), ('x', pa.int64())]))\n\
         with p.update_spec() as u: u.add_identity('label')\n\
         p.append(labels(label=[0, 4, 1, 4, 9], x=[1, 2, 3, 4, 5]))\n\
         p.delete('x == 2')\n\
         p.append(labels(label=[3, 0], x=[6, 7]))\n\
         v1 = cat.create_table('db.v1', schema=pa.schema([('label', pa.int64())]), properties={'format-version': '1'})\n\
         v1.append(labels(label=[6, 0]))\n\
         v1.append(labels(label=[1, 8]))\n\
         r = cat.create_table('db.r', schema=pa.schema([('label', pa.int64())]))\n\
         r.append(labels(label=[0, 8]))\n\
         with r.update_schema() as u: u.rename_column('label', 'y')\n\
         r.append(pa.table({'y': pa.array([9, 1], pa.int64())}))\n\
         out = {}\n\
         for name in ['t', 'p', 'v1', 'r']:\n\
         \x20   tab = cat.load_table('db.' + name)\n\
         \x20   out[name] = oracle(tab, 1)\n\
         \x20   out[name]['snapshots'] = {str(s.snapshot_id): oracle(tab, 1, s.snapshot_id) for s in tab.snapshots()}\n\
         \x20   out[name]['log'] = [[e.snapshot_id, e.timestamp_ms] for e in tab.history()]\n\
         \x20   out[name]['metadata'] = {}\n\
         \x20   for m in sorted(glob.glob(f'wh/db/{name}/metadata/*.metadata.json')):\n\
         \x20       st = StaticTable.from_metadata(os.path.abspath(m))\n\
         \x20       if st.current_snapshot() is not None:\n\
         \x20           out[name]['metadata'][m] = dict(oracle(st, 1), snapshot=st.current_snapshot().snapshot_id)\n\
         json.dump(out, open('oracle.json', 'w'))\n\
         assert len(glob.glob('wh/db/t/data/*.parquet')) == 3",
    );
    let oracle = expected(&env, "oracle.json");
    // The schema naming a snapshot's column: `y` after the rename.
    let schema = |want: &Value| match want["column"].as_str() {
        Some("y") => "y.yaml",
        _ => "s.yaml",
    };
    // A snapshot without data files (the first half of PyIceberg's
    // overwrite) is an error: there is nothing to check in it.
    let code = |want: &Value| match want["files"].as_u64() {
        Some(0) => 2,
        _ => i32::from(!want["values"].as_array().is_some_and(Vec::is_empty)),
    };
    for name in ["t", "p", "v1", "r"] {
        let want = &oracle[name];
        let root = format!("wh/db/{name}");
        let report = env.check_json(&["-s", schema(want), "--max-examples", "100", &root], 1);
        agrees(&report, want, &root);
        assert_eq!(report["table"]["format"], "iceberg");
        // Every snapshot by its id.
        for (id, snap) in want["snapshots"].as_object().expect("snapshots") {
            let args = ["-s", schema(snap), "--max-examples", "100", &root, "--snapshot-id", id];
            let report = env.check_json(&args, code(snap));
            agrees(&report, snap, &format!("{root} --snapshot-id {id}"));
            read_snapshot(&report, snap, id);
        }
        // Every metadata file: by version, by flag and by name.
        for (file, snap) in want["metadata"].as_object().expect("metadata") {
            let version: u64 = file
                .rsplit('/')
                .next()
                .and_then(|n| n[..5].parse().ok())
                .expect("version");
            let at = format!("{root}@v{version}");
            let by_version = env.check_json(&["-s", schema(snap), "--max-examples", "100", &at], code(snap));
            agrees(&by_version, snap, &at);
            read_snapshot(&by_version, snap, &snap["snapshot"].to_string());
            if snap["files"] != 0 {
                assert_eq!(by_version["table"]["version"], version);
            }
            let flag = version.to_string();
            let args = [
                "-s",
                schema(snap),
                "--max-examples",
                "100",
                &root,
                "--table-version",
                &flag,
            ];
            assert_eq!(env.check_json(&args, code(snap)), by_version, "{file}");
            let by_name = env.check_json(&["-s", schema(snap), "--max-examples", "100", file], code(snap));
            agrees(&by_name, snap, file);
            read_snapshot(&by_name, snap, &snap["snapshot"].to_string());
        }
        // A time in the snapshot log: the snapshot current then.
        for entry in want["log"].as_array().expect("log") {
            let (id, ms) = (entry[0].to_string(), entry[1].as_i64().expect("ms"));
            let when = chrono::DateTime::from_timestamp_millis(ms).expect("time").to_rfc3339();
            let snap = &want["snapshots"][id.as_str()];
            let args = ["-s", schema(snap), "--max-examples", "100", &root, "--as-of", &when];
            let report = env.check_json(&args, code(snap));
            read_snapshot(&report, snap, &id);
            agrees(&report, snap, &when);
        }
    }
    // The overwrite left a bad file behind that was never judged, and the
    // metadata's first version (the table's creation) has no snapshot.
    let report = env.check_json(&["-s", "s.yaml", "wh/db/t@v0"], 2);
    assert!(
        errors(&report)[0].1.contains("an empty Apache Iceberg table"),
        "{report}"
    );
    // Three in one run, the same whatever the thread count; a search of
    // the warehouse meets all four (`r` has no `label` column any more).
    let tables = ["-s", "s.yaml", "wh/db/t", "wh/db/p", "wh/db/v1", "--jobs"];
    let one = env.check_json(&[&tables[..], &["1"]].concat(), 1);
    let two = env.check_json(&[&tables[..], &["2"]].concat(), 1);
    assert_eq!(one, two, "the report does not depend on the thread count");
    let rows: u64 = ["t", "p", "v1"]
        .iter()
        .map(|t| oracle[t]["rows"].as_u64().expect("rows"))
        .sum();
    assert_eq!(one["rows"], rows);
    let all = env.check_json(&["-s", "s.yaml", "wh"], 2);
    assert_eq!(all["tables"].as_array().map(Vec::len), Some(4), "{all}");
    assert!(
        errors(&all)
            .iter()
            .all(|(f, m)| f.starts_with("wh/db/r/") && m.contains("`label` is missing")),
        "{all}"
    );
}

/// Rows an Iceberg snapshot deletes are never judged: a position delete
/// file, a deletion vector (a Puffin blob) and an equality delete file,
/// each committed as its own snapshot. PyIceberg reads the first two
/// (its scan is the oracle); it refuses equality deletes, so the last
/// snapshot's rows are the previous one's without those the delete names.
/// A delete written before a data file does not delete its rows.
#[test]
fn iceberg_deletes_are_never_judged() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    iceberg(
        &env,
        "import glob\n\
         cat = catalog()\n\
         t = cat.create_table('db.d', schema=pa.schema([('label', pa.int64()), ('k', pa.string())]))\n\
         t.append(labels(label=[0, 9, 1, 8, 2], k=['a', 'b', 'c', 'd', 'e']))\n\
         t.append(labels(label=[7, 1, 6], k=['f', 'g', 'h']))\n\
         os.makedirs('wh/db/d/deletes')\n\
         out = {'plain': oracle(t, 1)}\n\
         path, row = file_holding(t, 9)\n\
         commit_deletes(t, [positions('wh/db/d/deletes/pos.parquet', [(path, row), (path + '.other', 0)])])\n\
         t = cat.load_table('db.d'); out['positions'] = oracle(t, 1)\n\
         path, row = file_holding(t, 7)\n\
         commit_deletes(t, [vector('wh/db/d/deletes/dv.puffin', path, [row])])\n\
         t = cat.load_table('db.d'); out['vector'] = oracle(t, 1)\n\
         commit_deletes(t, [equality('wh/db/d/deletes/eq.parquet', 'k', 2, ['d', 'zz'])])\n\
         t = cat.load_table('db.d')\n\
         t.append(labels(label=[8], k=['d']))\n\
         out['files'] = sorted(glob.glob('wh/db/d/data/*.parquet'))\n\
         json.dump(out, open('oracle.json', 'w'))",
    );
    let oracle = expected(&env, "oracle.json");
    for (version, name) in [(2, "plain"), (3, "positions"), (4, "vector")] {
        let report = env.check_json(&["-s", "s.yaml", &format!("wh/db/d@v{version}")], 1);
        agrees(&report, &oracle[name], name);
    }
    let before = &oracle["vector"];
    assert_eq!(before["values"], serde_json::json!([6, 8]), "{before}");
    // The equality delete removes 'd' (label 8) from the older file; the
    // row appended after it (label 8, k 'd') is not deleted.
    let report = env.check_json(&["-s", "s.yaml", "--max-examples", "100", "wh/db/d"], 1);
    assert!(errors(&report).is_empty(), "{report}");
    assert_eq!(report["rows"], before["rows"].as_u64().unwrap() - 1 + 1);
    assert_eq!(values(&report, "label"), vec![6, 8]);
    let appended = found(&report).into_iter().filter(|f| f[2] == 8).collect::<Vec<_>>();
    assert_eq!(appended.len(), 1);
    let files: Vec<String> = serde_json::from_value(oracle["files"].clone()).expect("files");
    assert_eq!(appended[0][1], 0, "{appended:?}");
    assert!(files.contains(&appended[0][0].as_str().unwrap().to_string()));
    // The same after the table is named by its metadata file, and the
    // statistics fast path is off for files with deletes (the row counts
    // still match with every file read).
    let full = env.check_json(&["-s", "s.yaml", "--max-examples", "100", "--full-scan", "wh/db/d"], 1);
    assert_eq!(full["rows"], report["rows"]);
    assert_eq!(found(&full), found(&report));
}

/// Iceberg tables that cannot be read are errors naming the table and the
/// cause (exit 2), never a crash and never a fallback to reading their
/// folders: a folder inside a table, a manifest named as a PATH, a
/// missing data file, a cut manifest list, a version or snapshot the table
/// lacks, a metadata file of an unknown format version, two metadata files
/// of one version, and a table with no snapshot yet.
#[test]
fn iceberg_tables_that_cannot_be_read_are_errors_naming_them() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    iceberg(
        &env,
        "import glob, shutil\n\
         cat = catalog()\n\
         t = cat.create_table('db.t', schema=pa.schema([('label', pa.int64())]))\n\
         t.append(labels(label=[0, 1, 7, 2]))\n\
         t.overwrite(labels(label=[0, 1, 2]))\n\
         cat.create_table('db.empty', schema=pa.schema([('label', pa.int64())]))\n\
         for name in ['gone', 'cut', 'future', 'twice']:\n\
         \x20   shutil.copytree('wh/db/t', f'wh/{name}')\n\
         live = [os.path.relpath(f.file.file_path[7:], 'wh/db/t') for f in t.scan().plan_files()]\n\
         os.remove('wh/gone/' + live[0])\n\
         for l in glob.glob('wh/cut/metadata/snap-*.avro'):\n\
         \x20   b = open(l, 'rb').read(); open(l, 'wb').write(b[:len(b) // 2])\n\
         last = sorted(glob.glob('wh/future/metadata/*.metadata.json'))[-1]\n\
         m = json.load(open(last)); m['format-version'] = 4; json.dump(m, open(last, 'w'))\n\
         last = sorted(glob.glob('wh/twice/metadata/*.metadata.json'))[-1]\n\
         shutil.copy(last, last.replace('.metadata.json', '0.metadata.json'))\n\
         json.dump(live, open('live.json', 'w'))",
    );
    let live: Vec<String> = serde_json::from_value(expected(&env, "live.json")).expect("live");
    let gone = format!("wh/gone/{}", live[0]);
    let cases = [
        ("wh/db/t/data", "wh/db/t", "an Apache Iceberg table"),
        ("wh/gone", gone.as_str(), "No such file"),
        ("wh/cut", "wh/cut", "cut short"),
        ("wh/future", "wh/future", "Iceberg format version 4"),
        ("wh/twice", "wh/twice", "has 2 metadata files"),
        ("wh/db/empty", "wh/db/empty", "an empty Apache Iceberg table"),
        (
            "wh/db/t@v9",
            "wh/db/t@v9",
            "the table has no metadata file of version 9",
        ),
    ];
    for (path, file, message) in &cases {
        let report = env.check_json(&["-s", "s.yaml", path], 2);
        let errs = errors(&report);
        assert_eq!(errs.len(), 1, "{path}: {errs:?}");
        assert_eq!(errs[0].0, *file, "{path}: {errs:?}");
        assert!(errs[0].1.contains(message), "{path}: {errs:?}");
        assert_eq!(report["violations"], 0, "{path}: {report}");
    }
    let report = env.check_json(&["-s", "s.yaml", "wh/db/t", "--snapshot-id", "12345"], 2);
    assert!(
        errors(&report)[0].1.contains("the table has no snapshot 12345"),
        "{report}"
    );
    // A manifest is not data; the other tables in the run are still checked.
    let manifest = std::fs::read_dir(env.path("wh/db/t/metadata"))
        .expect("metadata")
        .flatten()
        .map(|e| format!("wh/db/t/metadata/{}", e.file_name().to_string_lossy()))
        .find(|n| n.ends_with(".avro"))
        .expect("a manifest");
    let report = env.check_json(&["-s", "s.yaml", &manifest, "wh/db/t"], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0]
            .1
            .contains("a file of an Apache Iceberg table's metadata, not data"),
        "{errs:?}"
    );
    assert_eq!(report["rows"], 3, "{report}");
    // One snapshot is picked one way.
    let both = env.run(&[
        "check",
        "-s",
        "s.yaml",
        "wh/db/t",
        "--snapshot-id",
        "1",
        "--table-version",
        "1",
    ]);
    assert_eq!(both.code, 2, "{}", both.stderr);
}

/// An Iceberg table in S3 (the local S3 server) reads as the same table on
/// disk: its metadata names the files by their local paths, which are read
/// under the URL the table was found at. Every metadata version reads the
/// same, and so does a plan's unit after a writer commits.
#[test]
fn an_iceberg_table_in_object_storage_reads_as_on_disk() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    iceberg(
        &env,
        "cat = catalog()\n\
         t = cat.create_table('db.t', schema=pa.schema([('label', pa.int64())]))\n\
         t.append(labels(label=[0, 1, 7, 2]))\n\
         t.overwrite(labels(label=[0, 1, 2]))\n\
         t.append(labels(label=[1, 5]))\n\
         os.makedirs('wh/db/t/deletes')\n\
         path, row = file_holding(t, 5)\n\
         commit_deletes(t, [positions('wh/db/t/deletes/pos.parquet', [(path, 1 - row)])])",
    );
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "wh", "bkt", "wh/");
    for (at, code) in [
        (&[][..], 1),
        (&["--table-version", "2"], 0),
        (&["--table-version", "4"], 1),
    ] {
        let mut local_args = vec!["-s", "s.yaml", "wh/db/t"];
        local_args.extend_from_slice(at);
        let local = servers.check(&env, &local_args, code);
        assert!(errors(&local).is_empty(), "{local}");
        let mut remote_args = vec!["-s", "s.yaml", "s3://bkt/wh/db/t/"];
        remote_args.extend_from_slice(at);
        let remote = servers.check(&env, &remote_args, code);
        assert_eq!(
            crate::remote::renamed(&remote, "s3://bkt/wh/db/t", "wh/db/t"),
            crate::remote::renamed(&local, "", ""),
            "{at:?}"
        );
    }
    let remote = servers.check(&env, &["-s", "s.yaml", "s3://bkt/wh/"], 1);
    assert_eq!(remote["rows"], 4, "{remote}");
    assert_eq!(remote["tables"][0]["format"], "iceberg");
    let remote = servers.check(&env, &["-s", "s.yaml", "s3://bkt/wh/db/t@v1"], 1);
    assert_eq!(remote["rows"], 4, "{remote}");
    // The manifest metrics settle the check of files no delete applies to
    // (here every file of version 3, before the position delete): no
    // request for them (one listing of the table shows they are there),
    // the same report as a full scan reading every file.
    env.write("wide.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    servers.reset(servers.proxy);
    let proven = servers.check(&env, &["-s", "wide.yaml", "s3://bkt/wh/db/t@v3"], 0);
    let log = servers.log(servers.proxy);
    let data: Vec<&Value> = log
        .iter()
        .filter(|r| r["path"].as_str().is_some_and(|p| p.contains("/data/")))
        .collect();
    assert!(data.is_empty(), "{data:?}");
    assert_eq!(proven["rows"], 5);
    let full = servers.check(&env, &["-s", "wide.yaml", "--full-scan", "s3://bkt/wh/db/t@v3"], 0);
    assert_eq!(proven, full);
    // At version 4 the delete file may apply to every file: each is read.
    servers.reset(servers.proxy);
    servers.check(&env, &["-s", "wide.yaml", "s3://bkt/wh/db/t/"], 0);
    let log = servers.log(servers.proxy);
    let read: std::collections::BTreeSet<&str> = log
        .iter()
        .filter_map(|r| r["path"].as_str().filter(|p| p.contains("/data/")))
        .collect();
    assert_eq!(read.len(), 2, "{log:?}");
    // Found by its folder's top level and its metadata/ listing, each
    // metadata file, manifest list and manifest fetched once (one GET, no
    // size request first).
    let queries = crate::remote::listings(&log);
    assert_eq!(
        queries[..2],
        [
            "delimiter=%2F&list-type=2&prefix=wh%2Fdb%2Ft%2F",
            "list-type=2&prefix=wh%2Fdb%2Ft%2Fmetadata%2F"
        ],
        "{queries:?}"
    );
    assert!(!queries.contains(&"list-type=2&prefix=wh%2Fdb%2Ft%2F"), "{queries:?}");
    // The data folder is listed once, beside the manifests' reads (the
    // proof that files never opened are there); no partition again.
    let below_data: Vec<&&str> = queries.iter().filter(|q| q.contains("%2Fdata%2F")).collect();
    assert_eq!(below_data, [&"list-type=2&prefix=wh%2Fdb%2Ft%2Fdata%2F"], "{queries:?}");
    let metadata: Vec<&str> = log
        .iter()
        .filter_map(|r| r["path"].as_str().filter(|p| p.contains("/metadata/")))
        .collect();
    let once: std::collections::BTreeSet<_> = metadata.iter().collect();
    assert!(metadata.len() >= 3, "{metadata:?}");
    assert_eq!(once.len(), metadata.len(), "{metadata:?}");
    // A data file storage lacks is still its error, proven or not.
    let key = std::fs::read_dir(env.path("wh/db/t/data"))
        .expect("data")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| read.iter().any(|r| r.ends_with(n.as_str())))
        .expect("a live file");
    env.python(&format!(
        "import boto3\n\
         s3 = boto3.client('s3', endpoint_url='http://127.0.0.1:{}', aws_access_key_id='test', \
         aws_secret_access_key='test', region_name='us-east-1')\n\
         s3.delete_object(Bucket='bkt', Key='wh/db/t/data/{key}')",
        servers.moto
    ));
    let gone = servers.check(&env, &["-s", "wide.yaml", "s3://bkt/wh/db/t@v3"], 2);
    let errs = errors(&gone);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].0.ends_with(&key), "{errs:?}");
}

/// A plan of an Iceberg table pins its snapshot in every unit: units
/// checked after a writer commits a bad row merge into the report of one
/// run at plan time; a unit of a file the pinned snapshot does not hold is
/// that unit's error.
#[test]
fn planned_units_of_an_iceberg_table_read_the_pinned_snapshot() {
    use preflight::{Schema, Validator, WorkUnit};

    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    iceberg(
        &env,
        "cat = catalog()\n\
         t = cat.create_table('db.t', schema=pa.schema([('label', pa.int64())]))\n\
         t.append(labels(label=[0, 1, 7, 2]))\n\
         t.overwrite(labels(label=[0, 1, 2]))\n\
         t.append(labels(label=[1, 5]))",
    );
    let one = env.run(&["check", "--format", "json", "-s", "s.yaml", "wh/db/t"]);
    assert_eq!(one.code, 1, "{}", one.stdout);
    let plan = env.run(&["plan", "-s", "s.yaml", "--split-bytes", "1", "wh/db/t"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let doc: Value = serde_json::from_str(&plan.stdout).expect("plan");
    let units: Vec<WorkUnit> = serde_json::from_value(doc["units"].clone()).expect("units");
    assert_eq!(units.len(), 2, "{units:?}");
    assert!(
        units
            .iter()
            .all(|u| u.table.as_ref().is_some_and(|t| t.snapshot_id.is_some())),
        "{units:?}"
    );
    iceberg(
        &env,
        "t = SqlCatalog('c', uri='sqlite:///cat.db', warehouse='file://' + os.path.abspath('wh')).load_table('db.t')\n\
         t.append(labels(label=[9]))",
    );
    let schema = Schema::from_file(&env.path("s.yaml")).expect("schema");
    let validator = Validator::new(schema, 5);
    assert_eq!(crate::util::merged_from_workers(&validator, &units, 2), one.stdout);
    let after = env.check_json(&["-s", "s.yaml", "wh/db/t"], 1);
    assert_eq!(after["rows"], 6, "{after}");
    let mut removed = units[0].clone();
    removed.path = removed.path.with_file_name("not-live.parquet");
    let opts = preflight::ScanOptions {
        jobs: 1,
        ..preflight::ScanOptions::default()
    };
    let report = preflight::check_units(&validator, &[removed], &opts).report(&validator);
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    assert!(
        report.errors[0]
            .message
            .starts_with("not a live data file of the Apache Iceberg table wh/db/t at snapshot"),
        "{:?}",
        report.errors
    );
}
