//! Lakehouse tables written by their own writers (delta-rs' `deltalake`,
//! PyIceberg with a SQLite catalog): a table met by a search is refused,
//! naming it, and none of its files is read, so that files an overwrite
//! removed and log or metadata files are never judged as data.

use serde_json::Value;

use crate::remote::Servers;
use crate::util::Env;

const SCHEMA: &str = "columns:\n  label: {kind: class, num_classes: 3}\n";

/// A Delta table `dt` whose first version had a bad label (row 2 of its
/// only file) and was overwritten with clean rows, then appended to: the
/// snapshot has 6 clean rows, the folder 3 Parquet files (10 rows), one of
/// them removed, and `loose.parquet` beside it with a bad label at row 1.
/// The script leaves by `os._exit`: deltalake 1.6.6's runtime sometimes
/// aborts at interpreter shutdown ("terminate called without an active
/// exception") after everything was written and asserted.
fn delta_table(env: &Env) {
    env.python(
        "from deltalake import write_deltalake, DeltaTable\n\
         write_deltalake('dt', pa.table({'label': pa.array([0, 1, 7, 2], pa.int64())}))\n\
         write_deltalake('dt', pa.table({'label': pa.array([0, 1, 2, 0], pa.int64())}), mode='overwrite')\n\
         write_deltalake('dt', pa.table({'label': pa.array([1, 2], pa.int64())}), mode='append')\n\
         t = DeltaTable('dt')\n\
         assert t.version() == 2 and t.to_pyarrow_table().num_rows == 6\n\
         import glob\n\
         assert len(glob.glob('dt/*.parquet')) == 3\n\
         pq.write_table(pa.table({'label': pa.array([0, 5], pa.int64())}), 'loose.parquet')\n\
         os._exit(0)\n",
    );
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

#[test]
fn a_delta_table_is_refused_not_read_as_a_folder() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    delta_table(&env);
    // The table named: refused (exit 2), no file of it judged, so the
    // removed file's bad label is not reported.
    let report = env.check_json(&["-s", "s.yaml", "dt"], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].0, "dt");
    assert!(errs[0].1.contains("a Delta Lake table"), "{errs:?}");
    assert!(errs[0].1.contains("_delta_log/"), "{errs:?}");
    assert_eq!(report["rows"], 0, "{report}");
    assert_eq!(report["files"], 0, "{report}");
    assert_eq!(report["violations"], 0, "{report}");

    // Met by a search beside a loose file: the file is checked (its bad
    // label at row 1 found), the table refused.
    std::fs::create_dir(env.path("all")).expect("mkdir");
    std::fs::rename(env.path("dt"), env.path("all/dt")).expect("move");
    std::fs::rename(env.path("loose.parquet"), env.path("all/loose.parquet")).expect("move");
    let report = env.check_json(&["-s", "s.yaml", "all"], 2);
    assert_eq!(
        errors(&report),
        vec![("all/dt".to_string(), errors(&report)[0].1.clone())]
    );
    assert_eq!(report["files"], 1, "{report}");
    assert_eq!(report["rows"], 2, "{report}");
    assert_eq!(crate::util::rows(&report, "label", "class"), vec![1]);

    // A glob into the table's files: refused, as is a log file named.
    let report = env.check_json(&["-s", "s.yaml", "all/dt/*.parquet"], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].0, "all/dt");
    assert_eq!(report["files"], 0, "{report}");
    let log = "all/dt/_delta_log/00000000000000000000.json";
    let report = env.check_json(&["-s", "s.yaml", log], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].0, log);
    assert!(errs[0].1.contains("the table is all/dt"), "{errs:?}");
}

#[test]
fn an_iceberg_table_is_refused_not_read_as_a_folder() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(
        "from pyiceberg.catalog.sql import SqlCatalog\n\
         os.makedirs('wh')\n\
         cat = SqlCatalog('c', uri='sqlite:///cat.db', warehouse='file://' + os.path.abspath('wh'))\n\
         cat.create_namespace('db')\n\
         t = cat.create_table('db.t', schema=pa.schema([('label', pa.int64())]))\n\
         t.append(pa.table({'label': pa.array([0, 1, 7, 2], pa.int64())}))\n\
         t.overwrite(pa.table({'label': pa.array([0, 1, 2], pa.int64())}))\n\
         assert t.scan().to_arrow().num_rows == 3\n\
         import glob\n\
         assert len(glob.glob('wh/db/t/data/*.parquet')) == 2, glob.glob('wh/**', recursive=True)\n\
         assert glob.glob('wh/db/t/metadata/*.metadata.json')\n",
    );
    for path in ["wh", "wh/db/t", "wh/db/t/data"] {
        // The data folder too is the table's: its files, one of them
        // removed by the overwrite, are not read as a folder.
        let report = env.check_json(&["-s", "s.yaml", path], 2);
        let errs = errors(&report);
        assert_eq!(errs.len(), 1, "{path}: {errs:?}");
        assert_eq!(errs[0].0, "wh/db/t");
        assert!(errs[0].1.contains("an Apache Iceberg table"), "{errs:?}");
        assert_eq!(report["files"], 0, "{report}");
        assert_eq!(report["violations"], 0, "{report}");
    }
    let named: Vec<String> = std::fs::read_dir(env.path("wh/db/t/metadata"))
        .expect("metadata")
        .flatten()
        .map(|e| format!("wh/db/t/metadata/{}", e.file_name().to_string_lossy()))
        .filter(|n| n.ends_with(".metadata.json"))
        .collect();
    let report = env.check_json(&["-s", "s.yaml", &named[0]], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(errs[0].1.contains("an Apache Iceberg table"), "{errs:?}");
}

#[test]
fn a_delta_table_in_object_storage_is_refused() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    delta_table(&env);
    std::fs::create_dir(env.path("up")).expect("mkdir");
    std::fs::rename(env.path("dt"), env.path("up/dt")).expect("move");
    std::fs::rename(env.path("loose.parquet"), env.path("up/loose.parquet")).expect("move");
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "up", "bkt", "data/");
    let report = servers.check(&env, &["-s", "s.yaml", "s3://bkt/data/"], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].0, "s3://bkt/data/dt");
    assert!(errs[0].1.contains("a Delta Lake table"), "{errs:?}");
    assert_eq!(report["files"], 1, "{report}");
    assert_eq!(crate::util::rows(&report, "label", "class"), vec![1]);
    let report = servers.check(&env, &["-s", "s.yaml", "s3://bkt/data/dt/"], 2);
    let errs = errors(&report);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].0, "s3://bkt/data/dt");
    assert_eq!(report["files"], 0, "{report}");
}
