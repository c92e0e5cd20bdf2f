//! A newcomer's first commands: `init` then `check` with no PATH checks
//! what init profiled (and fails on planted violations once a bound is
//! lowered), init names the PATHs it did not use, a missing schema says how
//! to make one, help cites no file users lack, and an HTTP server that
//! ignores Range (Python's `http.server`) is read whole when the object is
//! small and refused by size when it is large.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::util::{Env, python_bin};

/// Labels 0..=9 with a known number of 8s and 9s (a bound of 8 classes
/// makes exactly those violations), written by pyarrow and pandas.
const DATA: &str = r#"
os.makedirs('data/more', exist_ok=True)
rng = np.random.default_rng(7)
a = rng.integers(0, 10, 3000).astype(np.int64)
b = rng.integers(0, 10, 500).astype(np.int64)
pq.write_table(pa.table({'label': a}), 'data/train.parquet', row_group_size=1000)
pd.DataFrame({'label': b}).to_csv('data/more/extra.csv', index=False)
json.dump({'over7': int((a >= 8).sum() + (b >= 8).sum())}, open('expected.json', 'w'))
"#;

#[test]
fn init_then_check_checks_what_init_profiled() {
    let env = Env::new();
    env.python(DATA);
    let over7 =
        serde_json::from_str::<Value>(&std::fs::read_to_string(env.path("expected.json")).unwrap()).unwrap()["over7"]
            .as_u64()
            .unwrap();
    assert!(over7 > 0);
    let init = env.run(&["init", "data/"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert!(!init.stderr.contains("not used"), "{}", init.stderr);
    let schema = std::fs::read_to_string(env.path("preflight.yaml")).unwrap();
    assert!(schema.contains("dataset:\n  files: [data]"), "{schema}");
    let clean = env.check_json(&[], 0);
    assert_eq!(
        (clean["files"].as_u64(), clean["rows"].as_u64()),
        (Some(2), Some(3500)),
        "{clean}"
    );
    // The user lowers the bound init observed: the planted values fail.
    assert!(schema.contains("num_classes: 10  #"), "{schema}");
    env.write(
        "preflight.yaml",
        &schema.replace("num_classes: 10  #", "num_classes: 8  #"),
    );
    let r = env.run(&["check"]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    let failed = env.check_json(&[], 1);
    assert_eq!(failed["violations"].as_u64(), Some(over7), "{failed}");

    // A schema written elsewhere lists the PATH relative to itself.
    std::fs::create_dir_all(env.path("conf")).unwrap();
    let init = env.run(&["init", "data/train.parquet", "-o", "conf/p.yaml"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert!(
        init.stderr.contains("preflight check -s conf/p.yaml"),
        "{}",
        init.stderr
    );
    let schema = std::fs::read_to_string(env.path("conf/p.yaml")).unwrap();
    assert!(schema.contains("  files: [\"../data/train.parquet\"]"), "{schema}");
    let r = env.check_json(&["-s", "conf/p.yaml"], 0);
    assert_eq!(r["rows"].as_u64(), Some(3000), "{r}");
}

/// `init train.parquet masks/`: the masks are not profiled beside a table,
/// and init says so (the schema lists only the table); a PATH that is
/// nothing init reads while shards were found says why too.
#[test]
fn init_names_the_paths_it_did_not_use() {
    let env = Env::new();
    env.python(
        r#"
from PIL import Image
os.makedirs('masks', exist_ok=True)
for i in range(3):
    Image.fromarray(np.full((4, 4), i, np.uint8), mode='L').save(f'masks/m{i}.png')
pq.write_table(pa.table({'label': np.arange(5, dtype=np.int64)}), 'train.parquet')
"#,
    );
    let r = env.run(&["init", "train.parquet", "masks/"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "init: not used: masks/: 3 image(s) not profiled: beside tables an image is taken for a picture, \
             not a mask; run `preflight init masks/` on its own for a schema of the masks"
        ),
        "{}",
        r.stderr
    );
    let schema = std::fs::read_to_string(env.path("preflight.yaml")).unwrap();
    assert!(schema.contains("  files: [train.parquet]"), "{schema}");
    assert!(!schema.contains("pixels"), "{schema}");
    // The masks alone: profiled, and listed.
    let r = env.run(&["init", "masks/", "-o", "m.yaml"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("not used"), "{}", r.stderr);
    assert!(
        std::fs::read_to_string(env.path("m.yaml"))
            .unwrap()
            .contains("  files: [masks]")
    );
    assert_eq!(env.run(&["check", "-s", "m.yaml"]).code, 0);
}

#[test]
fn a_missing_schema_says_how_to_make_one_and_help_cites_no_missing_file() {
    let env = Env::new();
    env.python("pq.write_table(pa.table({'label': [1, 2]}), 'd.parquet')");
    let r = env.run(&["check", "d.parquet"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stdout.contains(
            "cannot read the schema: No such file or directory (os error 2); write one from the data with \
             `preflight init PATH`, or name another with --schema"
        ),
        "{}",
        r.stdout
    );
    let r = env.check_json(&["-s", "other.yaml", "d.parquet"], 2);
    assert_eq!(r["errors"][0]["file"], "other.yaml");
    for args in [
        &["--help"][..],
        &["check", "--help"],
        &["init", "--help"],
        &["plan", "--help"],
        &["merge", "--help"],
        &["filter", "--help"],
        &["schema", "--help"],
    ] {
        let r = env.run(args);
        assert_eq!(r.code, 0, "{args:?}");
        for missing in ["SPEC", "research/", "BENCHMARKS", "torch-semantics"] {
            assert!(!r.stdout.contains(missing), "{args:?} cites {missing}:\n{}", r.stdout);
        }
    }
}

/// Python's `http.server` (it ignores Range: a ranged GET gets 200 and the
/// whole body), stopped on drop.
struct PlainServer {
    child: Child,
    port: u16,
}

impl PlainServer {
    fn start(root: &Path) -> PlainServer {
        let mut child = Command::new(python_bin())
            .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory"])
            .arg(root)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python -m http.server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("its first line");
        // "Serving HTTP on 127.0.0.1 port 40001 (http://127.0.0.1:40001/) ..."
        let port = line
            .split(" port ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("http.server said {line:?}"));
        PlainServer { child, port }
    }
}

impl Drop for PlainServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_server_that_ignores_range_is_read_whole_or_refused_by_size() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    env.python(
        r#"
os.makedirs('www', exist_ok=True)
l = (np.arange(3000) % 10).astype(np.int64); l[5] = 10; l[2999] = -1
pq.write_table(pa.table({'label': l}), 'www/a.parquet', row_group_size=700)
pd.DataFrame({'label': [1, 12, 3]}).to_csv('www/b.csv', index=False)
# 64 MiB and one byte (sparse): past what is read whole.
with open('www/big.parquet', 'wb') as f:
    f.truncate((64 << 20) + 1)
"#,
    );
    let server = PlainServer::start(&env.path("www"));
    let url = |n: &str| format!("http://127.0.0.1:{}/{n}", server.port);
    let (a, b, big) = (url("a.parquet"), url("b.csv"), url("big.parquet"));
    let local = env.check_json(&["-s", "s.yaml", "www/a.parquet", "www/b.csv"], 1);
    let remote = env.check_json(&["-s", "s.yaml", &a, &b], 1);
    let base = format!("http://127.0.0.1:{}/", server.port);
    assert_eq!(remote.to_string().replace(&base, "www/"), local.to_string(), "{remote}");
    assert_eq!(remote["violations"], 3);
    let r = env.check_json(&["-s", "s.yaml", &big, &a], 2);
    assert_eq!(r["errors"][0]["file"], big.as_str());
    assert_eq!(
        r["errors"][0]["message"],
        "the server does not serve byte ranges (it answered a ranged GET with the whole object); objects up \
         to 64 MiB are then read whole, and this one is 67108865 bytes: serve it from a server that answers \
         Range requests, or download it and check the copy"
    );
    assert_eq!(r["violations"], 2, "{r}");
}
