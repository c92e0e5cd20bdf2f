//! Data in object storage: the same files checked from a local S3 server
//! (moto, behind a counting and fault-injecting proxy) and a plain HTTP
//! server with Range support, all on 127.0.0.1, started by the test
//! (tests/remote/servers.py) and stopped when it ends.
//!
//! The reports must be the local reports with URLs for names; requests are
//! counted from the proxy's log. [`Servers`] serves the other remote
//! tests (one module per family of formats) too.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{Env, Run, python_bin};

/// The servers of one test, stopped on drop.
pub(crate) struct Servers {
    child: Child,
    pub(crate) moto: u16,
    pub(crate) proxy: u16,
    pub(crate) http: u16,
}

impl Servers {
    /// Starts the servers; the HTTP one serves `root`.
    pub(crate) fn start(root: &Path) -> Servers {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/remote/servers.py");
        let mut child = Command::new(python_bin())
            .arg(script)
            .arg(root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the test servers");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("the servers' ports");
        let ports: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("servers said {line:?}: {e}"));
        let port = |k: &str| ports[k].as_u64().expect("port") as u16;
        Servers {
            moto: port("moto"),
            proxy: port("proxy"),
            http: port("http"),
            child,
        }
    }

    /// A control request to the proxy (`server` "proxy") or HTTP server.
    pub(crate) fn control(&self, port: u16, method: &str, path: &str, body: &str) -> String {
        let script = format!(
            "import http.client,sys\nc=http.client.HTTPConnection('127.0.0.1',{port})\n\
             c.request('{method}','{path}',body={body:?})\nsys.stdout.write(c.getresponse().read().decode())"
        );
        let out = Command::new(python_bin())
            .arg("-c")
            .arg(script)
            .output()
            .expect("python");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).expect("utf-8")
    }

    /// The requests the server on `port` saw since the last reset.
    pub(crate) fn log(&self, port: u16) -> Vec<Value> {
        serde_json::from_str::<Value>(&self.control(port, "GET", "/__log", ""))
            .expect("log")
            .as_array()
            .expect("list")
            .clone()
    }

    pub(crate) fn reset(&self, port: u16) {
        self.control(port, "POST", "/__reset", "");
    }

    pub(crate) fn fault(&self, spec: &str) {
        self.control(self.proxy, "POST", "/__fault", spec);
    }

    /// Uploads the files under `dir` (relative paths) of `env` to
    /// `s3://bucket/prefix/`, straight to moto (not counted).
    pub(crate) fn upload(&self, env: &Env, dir: &str, bucket: &str, prefix: &str) {
        env.python(&format!(
            r#"
import boto3
s3 = boto3.client('s3', endpoint_url='http://127.0.0.1:{}', aws_access_key_id='test',
                  aws_secret_access_key='test', region_name='us-east-1')
try: s3.create_bucket(Bucket='{bucket}')
except s3.exceptions.BucketAlreadyOwnedByYou: pass
for root, _, names in os.walk('{dir}'):
    for n in names:
        p = os.path.join(root, n)
        s3.upload_file(p, '{bucket}', '{prefix}' + os.path.relpath(p, '{dir}'))
"#,
            self.moto
        ));
    }

    /// `preflight ARGS` with S3 pointed at the proxy, not started.
    pub(crate) fn command(&self, env: &Env, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_preflight"));
        c.args(args)
            .current_dir(env.dir.path())
            .env("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{}", self.proxy))
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env("PREFLIGHT_REMOTE_RETRIES", "3")
            .env_remove("AWS_SKIP_SIGNATURE")
            .env_remove("AWS_SESSION_TOKEN")
            .env_remove("AWS_PROFILE");
        c
    }

    /// `preflight ARGS` with S3 pointed at the proxy.
    pub(crate) fn run(&self, env: &Env, args: &[&str]) -> Run {
        self.run_with(env, args, &[])
    }

    /// [`Servers::run`] with more environment.
    pub(crate) fn run_with(&self, env: &Env, args: &[&str], vars: &[(&str, &str)]) -> Run {
        let out = self
            .command(env, args)
            .envs(vars.iter().copied())
            .output()
            .expect("run preflight");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `preflight check --format json ARGS`, asserting the exit code.
    pub(crate) fn check(&self, env: &Env, args: &[&str], code: i32) -> Value {
        let mut all = vec!["check", "--format", "json"];
        all.extend_from_slice(args);
        let r = self.run(env, &all);
        assert_eq!(r.code, code, "{all:?}\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        r.json()
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Requests for one object key (`/bucket/key`), by method.
pub(crate) fn for_key<'a>(log: &'a [Value], path: &str) -> Vec<&'a Value> {
    log.iter().filter(|r| r["path"] == path).collect()
}

/// The query strings of the listing requests, in order.
pub(crate) fn listings(log: &[Value]) -> Vec<&str> {
    log.iter()
        .filter_map(|r| r["query"].as_str().filter(|q| q.contains("list-type=2")))
        .collect()
}

/// Parquet files covering what the reader does: statistics that prove a
/// file, none (values read), a dictionary, list lengths, planted
/// violations at known rows, several row groups.
const WRITE: &str = r#"
os.makedirs('d/sub', exist_ok=True)
n = 5000
label = (np.arange(n) % 10).astype(np.int64)
ids = pa.array([[i % 50, (i * 7) % 50] for i in range(n)], pa.list_(pa.int64()))
pq.write_table(pa.table({'label': label, 'ids': ids}), 'd/stats.parquet', row_group_size=1000)
bad = label.copy(); bad[17] = 10; bad[4321] = -1
pq.write_table(pa.table({'label': bad, 'ids': ids}), 'd/sub/bad.parquet', row_group_size=1000, write_statistics=False)
pq.write_table(pa.table({'label': pa.array(label).dictionary_encode()}), 'd/dict.parquet', write_statistics=False)
long = [[1, 2, 3, 4, 5] if i == 99 else [1] for i in range(n)]
pq.write_table(pa.table({'label': label, 'ids': pa.array(long, pa.list_(pa.int64()))}), 'd/long.parquet', row_group_size=700)
"#;

/// A file larger than the footer's 256 KiB request, its values unproven
/// (no statistics, no dictionary): its reads go past the footer's bytes.
const BIG: &str = r#"
os.makedirs('w', exist_ok=True)
pq.write_table(pa.table({'label': (np.arange(200_000) % 10).astype(np.int64)}), 'w/big.parquet',
               write_statistics=False, use_dictionary=False, compression='none')
"#;

const SCHEMA: &str = "columns:\n  label: {kind: class, num_classes: 10}\n  ids: {kind: index, size: 50, max_length: 4, optional: true}\n";

/// The report as text with `from` names turned into `to`.
pub(crate) fn renamed(report: &Value, from: &str, to: &str) -> String {
    serde_json::to_string_pretty(report).expect("json").replace(from, to)
}

#[test]
fn parquet_from_s3_and_http_reports_as_local() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(WRITE);
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "d", "bkt", "data/");
    let local = servers.check(&env, &["-s", "s.yaml", "d"], 1);
    assert_eq!(local["files"], 4, "{local}");
    for url in [
        "s3://bkt/data/",
        "s3://bkt/data",
        "s3://bkt/da*",
        "s3://bkt/data/**/*.parquet",
    ] {
        let remote = servers.check(&env, &["-s", "s.yaml", url], 1);
        assert_eq!(
            renamed(&remote, "s3://bkt/data/", "d/"),
            renamed(&local, "", ""),
            "{url}"
        );
    }
    // Named objects, over S3 and plain HTTP (no listing: named files).
    let names = [
        "d/dict.parquet",
        "d/long.parquet",
        "d/stats.parquet",
        "d/sub/bad.parquet",
    ];
    let http: Vec<String> = names
        .iter()
        .map(|n| format!("http://127.0.0.1:{}/{n}", servers.http))
        .collect();
    let mut args = vec!["-s", "s.yaml"];
    args.extend(http.iter().map(String::as_str));
    let remote = servers.check(&env, &args, 1);
    let base = format!("http://127.0.0.1:{}/", servers.http);
    assert_eq!(renamed(&remote, &base, ""), renamed(&local, "", ""));
    let (hits, _) = crate::util::hits(&remote, "label", "class");
    assert_eq!(hits, 2);
}

#[test]
fn a_listed_stats_proven_file_costs_one_get() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    env.python(WRITE);
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "d", "bkt", "p/");
    servers.reset(servers.proxy);
    let r = servers.check(&env, &["-s", "s.yaml", "s3://bkt/p/stats.parquet"], 0);
    assert_eq!(r["rows"], 5000);
    // Named: the footer's request is all (its size comes with it).
    let log = servers.log(servers.proxy);
    assert_eq!(for_key(&log, "/bkt/p/stats.parquet").len(), 1, "{log:?}");
    servers.reset(servers.proxy);
    let r = servers.check(&env, &["-s", "s.yaml", "s3://bkt/p/"], 1);
    assert_eq!(r["files"], 4);
    let log = servers.log(servers.proxy);
    let stats = for_key(&log, "/bkt/p/stats.parquet");
    assert_eq!(stats.len(), 1, "{log:?}");
    assert_eq!(stats[0]["method"], "GET");
    // The footer GET is a bounded range (the size came from the listing).
    let range = stats[0]["range"].as_str().expect("a range");
    assert!(!range.starts_with("bytes=-"), "{range}");
    // Two listings (the folder's top level, which shows it is no table's
    // root, then its sub-folder), and later requests for a file carry its
    // ETag.
    let lists = listings(&log);
    assert_eq!(
        lists,
        ["delimiter=%2F&list-type=2&prefix=p%2F", "list-type=2&prefix=p%2Fsub%2F"],
        "{log:?}"
    );
    // A small file came whole with its footer's request.
    assert_eq!(for_key(&log, "/bkt/p/sub/bad.parquet").len(), 1, "{log:?}");
    env.python(BIG);
    servers.upload(&env, "w", "bkt", "w/");
    servers.reset(servers.proxy);
    servers.check(&env, &["-s", "s.yaml", "s3://bkt/w/"], 0);
    let log = servers.log(servers.proxy);
    let big = for_key(&log, "/bkt/w/big.parquet");
    assert!(big.len() >= 2, "{log:?}");
    assert!(big[0]["if_match"].is_null());
    assert!(big[1..].iter().all(|r| r["if_match"].is_string()), "{log:?}");
}

/// A folder with many sub-folders (a dataset partitioned by folders) is
/// listed by its top level, then once whole: as many requests as the
/// listing has pages, not one per sub-folder.
#[test]
fn many_sub_folders_cost_one_listing() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    env.python(
        "import os, pyarrow as pa, pyarrow.parquet as pq\n\
         for i in range(20):\n    \
             os.makedirs(f'm/day={i}')\n    \
             pq.write_table(pa.table({'label': pa.array([i % 11], pa.int64())}), f'm/day={i}/part.parquet')\n",
    );
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "m", "bkt", "m/");
    let local = servers.check(&env, &["-s", "s.yaml", "m"], 1);
    servers.reset(servers.proxy);
    let remote = servers.check(&env, &["-s", "s.yaml", "s3://bkt/m/"], 1);
    assert_eq!(remote["files"], 20);
    assert_eq!(remote["violations"], 1);
    assert_eq!(renamed(&remote, "s3://bkt/m/", "m/"), renamed(&local, "", ""));
    let log = servers.log(servers.proxy);
    let lists = listings(&log);
    assert_eq!(
        lists,
        ["delimiter=%2F&list-type=2&prefix=m%2F", "list-type=2&prefix=m%2F"],
        "{log:?}"
    );
}

#[test]
fn faults_are_retried_or_reported_by_url() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(WRITE);
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "d", "bkt", "f/");
    let clean = servers.check(&env, &["-s", "s.yaml", "s3://bkt/f/"], 1);

    // A burst of 503s is retried: the same report.
    servers.fault(r#"{"status": 503, "count": 3}"#);
    let again = servers.check(&env, &["-s", "s.yaml", "s3://bkt/f/"], 1);
    assert_eq!(again, clean);

    // 403 and 404 name the URL and the cause.
    servers.reset(servers.proxy);
    servers.fault(r#"{"status": 403, "count": 1}"#);
    let r = servers.check(&env, &["-s", "s.yaml", "s3://bkt/f/stats.parquet"], 2);
    assert_eq!(r["errors"][0]["file"], "s3://bkt/f/stats.parquet");
    let msg = r["errors"][0]["message"].as_str().unwrap();
    assert!(
        msg.contains("access denied") && msg.contains("AWS_ACCESS_KEY_ID"),
        "{msg}"
    );
    assert!(!msg.contains("test"), "no credential in the message: {msg}");
    let r = servers.check(&env, &["-s", "s.yaml", "s3://bkt/f/none.parquet"], 2);
    assert_eq!(r["errors"][0]["file"], "s3://bkt/f/none.parquet");
    assert!(r["errors"][0]["message"].as_str().unwrap().contains("not found"), "{r}");
    let r = servers.check(&env, &["-s", "s.yaml", "s3://bkt/nothing/"], 2);
    assert_eq!(r["errors"][0]["file"], "s3://bkt/nothing/", "{r}");

    // Throttled past the retries: the status and the retry count.
    servers.reset(servers.proxy);
    servers.fault(r#"{"status": 503, "count": 1000}"#);
    let r = servers.check(&env, &["-s", "s.yaml", "s3://bkt/f/stats.parquet"], 2);
    let msg = r["errors"][0]["message"].as_str().unwrap();
    assert!(msg.contains("HTTP 503") && msg.contains("after 3 retries"), "{msg}");
}

#[test]
fn no_credentials_fail_fast_and_a_broken_object_fails_by_url() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    // No network here: the instance-metadata lookup must not stall.
    let started = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_preflight"))
        .args([
            "check",
            "--format",
            "json",
            "-s",
            "s.yaml",
            "s3://some-bucket/x.parquet",
        ])
        .current_dir(env.dir.path())
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_SKIP_SIGNATURE")
        .env_remove("AWS_PROFILE")
        .env_remove("AWS_SHARED_CREDENTIALS_FILE")
        .env_remove("AWS_CONFIG_FILE")
        // No ~/.aws of the machine's either.
        .env("HOME", env.dir.path())
        .env("AWS_REGION", "us-east-1")
        .output()
        .expect("run");
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(2));
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(r["errors"][0]["file"], "s3://some-bucket/x.parquet", "{r}");

    // A .npz object that is no zip archive: that URL's error, in words.
    let servers = Servers::start(env.dir.path());
    env.write("d/a.npz", "not a zip archive");
    servers.upload(&env, "d", "bkt", "o/");
    let r = servers.check(&env, &["-s", "s.yaml", "s3://bkt/o/a.npz"], 2);
    assert_eq!(r["errors"][0]["file"], "s3://bkt/o/a.npz", "{r}");
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("not a valid .npz (zip) archive"),
        "{r}"
    );
}

#[test]
fn plan_partial_and_merge_take_urls() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(WRITE);
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "d", "bkt", "m/");
    let whole = servers.check(&env, &["-s", "s.yaml", "s3://bkt/m/"], 1);
    // Two tasks, each reading its files straight from storage.
    for (out, url) in [("a.json", "s3://bkt/m/sub/"), ("b.json", "s3://bkt/m/*.parquet")] {
        let r = servers.run(&env, &["check", "-s", "s.yaml", "--format", "json", "--partial", url]);
        env.write(out, &r.stdout);
    }
    let merged = servers.run(&env, &["merge", "a.json", "b.json", "--format", "json"]);
    assert_eq!(merged.json(), whole);
    // The plan lists units by URL, with the listing's sizes.
    let plan = servers.run(&env, &["plan", "-s", "s.yaml", "--split-bytes", "1", "s3://bkt/m/"]);
    assert_eq!(plan.code, 0, "{}", plan.stderr);
    let units: Value = serde_json::from_str(&plan.stdout).expect("plan json");
    let text = units.to_string();
    assert!(text.contains("s3://bkt/m/long.parquet"), "{text}");
    let local = env.run(&["plan", "-s", "s.yaml", "--split-bytes", "1", "d"]);
    assert_eq!(text.replace("s3://bkt/m/", "d/"), local.json().to_string());
}

/// The broken corpus's Parquet, CSV and JSON Lines files: the same errors
/// over HTTP as from the disk.
#[test]
fn broken_files_over_http_fail_as_they_do_locally() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/broken");
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 10, optional: true}\n",
    );
    let servers = Servers::start(&corpus);
    let names: Vec<String> = std::fs::read_dir(&corpus)
        .expect("corpus")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".parquet") || n.ends_with(".csv") || n.contains(".jsonl"))
        .collect();
    assert!(names.len() >= 14, "{names:?}");
    let base = format!("http://127.0.0.1:{}/", servers.http);
    let urls: Vec<String> = names.iter().map(|n| format!("{base}{n}")).collect();
    let locals: Vec<String> = names
        .iter()
        .map(|n| corpus.join(n).to_string_lossy().into_owned())
        .collect();
    let mut args = vec!["-s", "s.yaml"];
    args.extend(urls.iter().map(String::as_str));
    let remote = servers.check(&env, &args, 2);
    let mut args = vec!["-s", "s.yaml"];
    args.extend(locals.iter().map(String::as_str));
    let local = env.check_json(&args, 2);
    let prefix = format!("{}/", corpus.to_string_lossy());
    assert_eq!(renamed(&remote, &base, ""), renamed(&local, &prefix, ""));
}

#[test]
fn hugging_face_datasets_are_listed_across_pages_and_read_by_range() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(WRITE);
    env.python("import shutil\nshutil.copytree('d', 'hub/me/set/data')");
    let servers = Servers::start(env.dir.path());
    let local = servers.check(&env, &["-s", "s.yaml", "d"], 1);
    let endpoint = format!("http://127.0.0.1:{}", servers.http);
    let run = |args: &[&str], token: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_preflight"));
        c.args(["check", "--format", "json", "-s", "s.yaml"])
            .args(args)
            .current_dir(env.dir.path())
            .env("HF_ENDPOINT", &endpoint)
            .env("HF_HOME", env.path("hf-home"))
            .env_remove("HF_TOKEN_PATH");
        match token {
            Some(t) => c.env("HF_TOKEN", t),
            None => c.env_remove("HF_TOKEN"),
        };
        let out = c.output().expect("run");
        let r: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
        (out.status.code(), r)
    };
    servers.reset(servers.http);
    let (code, r) = run(&["hf://datasets/me/set/data"], Some("hf_secret"));
    assert_eq!(code, Some(1));
    assert_eq!(renamed(&r, "hf://datasets/me/set/data/", "d/"), renamed(&local, "", ""));
    let log = servers.log(servers.http);
    // Five entries (a folder and four files), two a page: three pages.
    let pages = log
        .iter()
        .filter(|r| r["path"].as_str().unwrap().starts_with("/api/"))
        .count();
    assert_eq!(pages, 3, "{log:?}");
    assert!(log.iter().all(|r| r["auth"] == "Bearer hf_secret"), "{log:?}");
    assert!(!r.to_string().contains("hf_secret"));
    // A revision, a glob, the token file, and a missing dataset.
    std::fs::create_dir_all(env.path("hf-home")).unwrap();
    env.write("hf-home/token", "hf_from_file\n");
    servers.reset(servers.http);
    let (code, r) = run(&["hf://datasets/me/set@main/data/*.parquet"], None);
    assert_eq!(code, Some(1), "{r}");
    assert_eq!(r["files"], 3);
    assert!(
        servers
            .log(servers.http)
            .iter()
            .all(|r| r["auth"] == "Bearer hf_from_file")
    );
    let (code, r) = run(&["hf://datasets/me/none/"], None);
    assert_eq!(code, Some(2));
    assert_eq!(r["errors"][0]["file"], "hf://datasets/me/none/", "{r}");
}

/// CSV/TSV (plain, gzip, one larger than a read block) and JSON Lines
/// (plain, zstd), with planted violations: the same report from S3 as from
/// the disk, read in order by ranged requests (two read blocks for the
/// large file); NumPy and Arrow IPC objects beside them are checked too.
#[test]
fn text_formats_from_s3_report_as_local_beside_other_formats() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 10}\n  ids: {kind: index, size: 50, optional: true}\n",
    );
    env.python(
        r#"
import gzip, zstandard
os.makedirs('t/more', exist_ok=True)
rows = ['label,ids'] + [f'{i % 10},{i % 50}' for i in range(2000)]
rows[18] = '10,3'; rows[1500] = '4,77'
open('t/a.csv', 'w').write('\n'.join(rows) + '\n')
open('t/b.tsv', 'w').write('\n'.join(r.replace(',', '\t') for r in rows[:300]) + '\n')
with gzip.open('t/more/c.csv.gz', 'wt') as f: f.write('\n'.join(rows[:900]) + '\n')
# Larger than one 8 MiB read block, a violation in each block.
big = ['label'] + [str(i % 10) for i in range(5_000_000)]
big[7] = '11'; big[4_900_000] = '-1'
open('t/big.csv', 'w').write('\n'.join(big) + '\n')
lines = [json.dumps({'label': i % 10, 'ids': i % 50}) for i in range(1000)]
lines[3] = json.dumps({'label': 12}); lines[999] = '{"label": 1, "ids": 50}'
open('t/d.jsonl', 'w').write('\n'.join(lines) + '\n')
open('t/more/e.jsonl.zst', 'wb').write(zstandard.ZstdCompressor().compress(('\n'.join(lines[:500]) + '\n').encode()))
"#,
    );
    assert!(std::fs::metadata(env.path("t/big.csv")).unwrap().len() > 8 << 20);
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "t", "bkt", "t/");
    let local = servers.check(&env, &["-s", "s.yaml", "t"], 1);
    assert_eq!(local["files"], 6, "{local}");
    servers.reset(servers.proxy);
    let remote = servers.check(&env, &["-s", "s.yaml", "s3://bkt/t/"], 1);
    assert_eq!(renamed(&remote, "s3://bkt/t/", "t/"), renamed(&local, "", ""));
    let (hits, _) = crate::util::hits(&remote, "label", "class");
    // a.csv, b.tsv, c.csv.gz one each, big.csv two, both JSON Lines one each.
    assert_eq!(hits, 7, "{remote}");
    // The large file: two blocks, each a bounded range; every request after
    // the first carries the ETag the first pinned.
    let log = servers.log(servers.proxy);
    let big: Vec<_> = for_key(&log, "/bkt/t/big.csv")
        .into_iter()
        .filter(|r| r["method"] == "GET")
        .collect();
    assert!(big.len() >= 2, "{log:?}");
    assert!(
        big.iter().all(|r| r["range"]
            .as_str()
            .is_some_and(|g| g.starts_with("bytes=0-") || g.starts_with("bytes=8388608-"))),
        "{big:?}"
    );
    assert!(big[1..].iter().all(|r| r["if_match"].is_string()), "{big:?}");

    // NumPy and Arrow IPC objects are read as local files are (see
    // remote_tokens.rs): checked with the CSV beside them.
    env.python(
        r#"
os.makedirs('o', exist_ok=True)
np.save('o/label.npy', np.arange(5) % 10)
import pyarrow.feather as feather
feather.write_feather(pa.table({'label': [1, 2]}), 'o/x.arrow')
open('o/ok.csv', 'w').write('label\n1\n')
"#,
    );
    servers.upload(&env, "o", "bkt", "o/");
    let r = servers.check(&env, &["-s", "s.yaml", "s3://bkt/o/"], 0);
    assert_eq!((r["files"].as_u64(), r["rows"].as_u64()), (Some(3), Some(8)), "{r}");
    assert_eq!(r["errors"].as_array().map(Vec::len), Some(0), "{r}");
}

/// A prefix of more than 1,000 objects is listed across pages (S3 answers
/// 1,000 keys a page): two listing requests, and the data files on both
/// pages found (1,000 objects of no known format, then one CSV after them
/// in key order, on the second page).
#[test]
fn a_prefix_of_1001_objects_is_listed_across_pages() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    let servers = Servers::start(env.dir.path());
    env.python(&format!(
        r#"
import boto3
from concurrent.futures import ThreadPoolExecutor
s3 = boto3.client('s3', endpoint_url='http://127.0.0.1:{}', aws_access_key_id='test',
                  aws_secret_access_key='test', region_name='us-east-1')
s3.create_bucket(Bucket='many')
def put(i): s3.put_object(Bucket='many', Key=f'p/{{i:04d}}.txt', Body=b'not data')
with ThreadPoolExecutor(8) as ex: list(ex.map(put, range(1000)))
s3.put_object(Bucket='many', Key='p/0000.csv', Body=b'label\n3\n')
s3.put_object(Bucket='many', Key='p/zzzz.csv', Body=b'label\n1\n12\n')
"#,
        servers.moto
    ));
    servers.reset(servers.proxy);
    let r = servers.check(&env, &["-s", "s.yaml", "s3://many/p/"], 1);
    assert_eq!(r["files"], 2, "{r}");
    assert_eq!(r["rows"], 3);
    let (hits, _) = crate::util::hits(&r, "label", "class");
    assert_eq!(hits, 1);
    assert_eq!(r["checks"][0]["examples"][0]["file"], "s3://many/p/zzzz.csv", "{r}");
    let log = servers.log(servers.proxy);
    assert_eq!(listings(&log).len(), 2, "{log:?}");
}

/// A server slower than the timeout: the file fails in bounded time with
/// the URL and the cause; a connection reset mid-body is retried (the same
/// report); an object overwritten between its footer and its data is that
/// file's error, never checked as a mix; Ctrl-C during remote reads exits
/// 130 promptly.
#[test]
fn slow_reset_overwritten_and_interrupted_reads() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(WRITE);
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "d", "bkt", "f/");
    let url = "s3://bkt/f/sub/bad.parquet";
    let clean = servers.check(&env, &["-s", "s.yaml", url], 1);

    // Every request slower than the 1 s timeout: 1 try + 3 retries.
    servers.reset(servers.proxy);
    servers.fault(r#"{"delay": 3, "count": 100}"#);
    let started = Instant::now();
    let r = servers.run_with(
        &env,
        &["check", "--format", "json", "-s", "s.yaml", url],
        &[("PREFLIGHT_REMOTE_TIMEOUT", "1")],
    );
    let took = started.elapsed();
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(took < Duration::from_secs(40), "{took:?}");
    let r = r.json();
    assert_eq!(r["errors"][0]["file"], url);
    assert!(r["errors"][0]["message"].as_str().unwrap().contains("timed out"), "{r}");

    // A connection reset mid-body: retried, the same report. (First the
    // delayed requests of the timed-out run finish, so that none of them
    // takes the injected resets.)
    std::thread::sleep(Duration::from_millis(3500));
    servers.reset(servers.proxy);
    servers.fault(r#"{"reset": 2}"#);
    let again = servers.check(&env, &["-s", "s.yaml", url], 1);
    assert_eq!(again, clean);
    let log = servers.log(servers.proxy);
    assert!(for_key(&log, "/bkt/f/sub/bad.parquet").len() >= 3, "{log:?}");
    // The same for a file read in order.
    env.write("c/a.csv", &format!("label\n{}", "3\n".repeat(1000)));
    servers.upload(&env, "c", "bkt", "c/");
    let clean_csv = servers.check(&env, &["-s", "s.yaml", "s3://bkt/c/a.csv"], 0);
    servers.reset(servers.proxy);
    servers.fault(r#"{"reset": 1}"#);
    assert_eq!(servers.check(&env, &["-s", "s.yaml", "s3://bkt/c/a.csv"], 0), clean_csv);

    // Overwritten right after the footer was read (a file larger than the
    // footer's request: a small one came whole with it, one version).
    env.python(BIG);
    servers.upload(&env, "w", "bkt", "w/");
    servers.reset(servers.proxy);
    servers.fault(r#"{"overwrite": "/bkt/w/big.parquet"}"#);
    let r = servers.check(&env, &["-s", "s.yaml", "s3://bkt/w/big.parquet"], 2);
    assert_eq!(r["errors"][0]["file"], "s3://bkt/w/big.parquet");
    let msg = r["errors"][0]["message"].as_str().unwrap();
    assert!(msg.contains("changed while it was read"), "{msg}");
    assert_eq!(r["rows"], 0, "nothing of either version checked: {r}");

    // Ctrl-C while every request stalls.
    servers.upload(&env, "d", "bkt", "f/");
    servers.reset(servers.proxy);
    servers.fault(r#"{"delay": 30, "count": 100}"#);
    let mut child = servers
        .command(&env, &["check", "--format", "json", "-s", "s.yaml", "s3://bkt/f/"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(1500));
    let pid = child.id().to_string();
    let sent = Instant::now();
    assert!(Command::new("kill").args(["-INT", &pid]).status().unwrap().success());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(sent.elapsed() < Duration::from_secs(10), "still running after Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    assert!(sent.elapsed() < Duration::from_secs(5), "{:?}", sent.elapsed());
}

/// The AWS CLI's files: the static keys of the profile `AWS_PROFILE` names
/// sign the requests; a profile that gets its keys through SSO is that
/// file's error, with the way to export them.
#[test]
fn aws_profile_files_give_static_keys() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    env.write("d/a.csv", "label\n1\n");
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "d", "bkt", "p/");
    env.write(
        "home/.aws/credentials",
        "[default]\naws_access_key_id = WRONG\naws_secret_access_key = x\n\n[train]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = s3cr3t\n",
    );
    env.write(
        "home/.aws/config",
        "[profile train]\nregion = us-east-1\n[profile sso]\nsso_start_url = https://x.awsapps.com/start\nsso_region = us-east-1\n",
    );
    let run = |profile: &str| {
        servers
            .command(&env, &["check", "--format", "json", "-s", "s.yaml", "s3://bkt/p/a.csv"])
            .env_remove("AWS_ACCESS_KEY_ID")
            .env_remove("AWS_SECRET_ACCESS_KEY")
            .env_remove("AWS_REGION")
            .env_remove("AWS_SHARED_CREDENTIALS_FILE")
            .env_remove("AWS_CONFIG_FILE")
            .env("HOME", env.path("home"))
            .env("AWS_PROFILE", profile)
            .output()
            .expect("run")
    };
    servers.reset(servers.proxy);
    let out = run("train");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stdout));
    let log = servers.log(servers.proxy);
    assert!(!log.is_empty());
    assert!(
        log.iter().all(|r| r["auth"]
            .as_str()
            .is_some_and(|a| a.contains("Credential=AKIDPROFILE/"))),
        "{log:?}"
    );
    let out = run("sso");
    assert_eq!(out.status.code(), Some(2));
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(r["errors"][0]["file"], "s3://bkt/p/a.csv");
    let msg = r["errors"][0]["message"].as_str().unwrap();
    assert!(msg.contains("aws configure export-credentials --profile sso"), "{msg}");
    assert!(!r.to_string().contains("s3cr3t"));
}

/// The bytes of the `Range` header `bytes=A-B` (inclusive), or `None`.
fn range_len(r: &Value) -> Option<u64> {
    let (a, b) = r["range"].as_str()?.strip_prefix("bytes=")?.split_once('-')?;
    Some(b.parse::<u64>().ok()? - a.parse::<u64>().ok()? + 1)
}

/// A small file, its statistics proving nothing (values and a dictionary
/// read): the footer's request brought the whole object, so that request is
/// all it costs, named (a suffix range, whose answer gives the size: no
/// HEAD) or listed; the report is the local one.
#[test]
fn a_small_unproven_file_costs_only_its_footer_get() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(WRITE);
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "d", "bkt", "s/");
    assert!(std::fs::metadata(env.path("d/sub/bad.parquet")).unwrap().len() < 256 * 1024);
    let local = servers.check(&env, &["-s", "s.yaml", "d/sub/bad.parquet"], 1);
    let (hits, _) = crate::util::hits(&local, "label", "class");
    assert_eq!(hits, 2, "{local}");
    for url in ["s3://bkt/s/sub/bad.parquet", "s3://bkt/s/sub/"] {
        servers.reset(servers.proxy);
        let remote = servers.check(&env, &["-s", "s.yaml", url], 1);
        assert_eq!(
            renamed(&remote, "s3://bkt/s/sub/", "d/sub/"),
            renamed(&local, "", ""),
            "{url}"
        );
        let log = servers.log(servers.proxy);
        let requests = for_key(&log, "/bkt/s/sub/bad.parquet");
        assert_eq!(requests.len(), 1, "{url}: {log:?}");
        assert_eq!(requests[0]["method"], "GET");
    }
    // Over plain HTTP too.
    servers.reset(servers.http);
    let url = format!("http://127.0.0.1:{}/d/sub/bad.parquet", servers.http);
    let remote = servers.check(&env, &["-s", "s.yaml", &url], 1);
    let base = format!("http://127.0.0.1:{}/", servers.http);
    assert_eq!(renamed(&remote, &base, ""), renamed(&local, "", ""));
    let log = servers.log(servers.http);
    assert_eq!(log.len(), 1, "{log:?}");
    assert_eq!(log[0]["range"], "bytes=-262144", "{log:?}");
}

/// A list column whose values its statistics prove and whose only open rule
/// is a length rule: from v2 data pages only the page headers and the
/// levels in front of the values are fetched (a probe of at most 8 KiB at
/// each page start, found from the header before it or, with an
/// OffsetIndex, all at once), never the values; v1 pages, whose levels are
/// inside the compressed body, are fetched whole. Reports as local either way.
#[test]
fn a_length_rule_reads_only_the_levels_of_v2_pages() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  ids: {kind: index, size: 50, max_length: 4}\n");
    env.python(
        r#"
os.makedirs('v', exist_ok=True)
n = 60000
rng = np.random.default_rng(7)
rows = [list(rng.integers(0, 50, 4)) for _ in range(n)]
rows[99] = [1] * 5; rows[40000] = [2] * 9; rows[59999] = [3] * 6
t = pa.table({'ids': pa.array(rows, pa.list_(pa.int64()))})
for v in ('1.0', '2.0'):
    pq.write_table(t, f'v/p{v[0]}.parquet', data_page_version=v, use_dictionary=False,
                   compression='none', data_page_size=64 * 1024)
# With an OffsetIndex: the pages are probed at once, not found one by one.
pq.write_table(t, 'v/p2i.parquet', data_page_version='2.0', use_dictionary=False,
               compression='none', data_page_size=64 * 1024, write_page_index=True)
"#,
    );
    let size = std::fs::metadata(env.path("v/p2.parquet")).unwrap().len();
    assert!(size > 1_500_000, "{size}");
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "v", "bkt", "v/");
    for name in ["p1.parquet", "p2.parquet", "p2i.parquet"] {
        let local = servers.check(&env, &["-s", "s.yaml", &format!("v/{name}")], 1);
        let (hits, _) = crate::util::hits(&local, "ids", "max_length");
        assert_eq!(hits, 3, "{local}");
        servers.reset(servers.proxy);
        let remote = servers.check(&env, &["-s", "s.yaml", &format!("s3://bkt/v/{name}")], 1);
        assert_eq!(renamed(&remote, "s3://bkt/v/", "v/"), renamed(&local, "", ""), "{name}");
        let log = servers.log(servers.proxy);
        let requests = for_key(&log, &format!("/bkt/v/{name}"));
        let after_footer: Vec<u64> = requests[1..].iter().map(|r| range_len(r).expect("a range")).collect();
        let fetched: u64 = after_footer.iter().sum();
        if name != "p1.parquet" {
            // About 30 pages, one probe each (the last ones came with the
            // footer's 256 KiB): a few hundred KiB of headers, levels and
            // probe overrun, never the 1.9 MB of values.
            assert!(after_footer.len() >= 10, "{after_footer:?}");
            assert!(after_footer.iter().all(|&n| n <= 8192), "{after_footer:?}");
            assert!(fetched < size / 5, "{fetched} of {size}: {after_footer:?}");
        } else {
            // v1: the probe of the first page, then the rest of the chunk.
            assert_eq!(after_footer.len(), 2, "{after_footer:?}");
            assert!(fetched > size / 2, "{fetched} of {size}");
        }
    }
}

/// Listed objects larger than 256 KiB: their first request asks for a
/// 64 KiB tail, which holds an ordinary footer (one GET). Shards whose
/// footers pass 64 KiB (hundreds of row groups) cost a second request only
/// while no footer has been read: the files opened after the first one ask
/// for as much as the largest footer met, and cost one GET. Reports as local.
#[test]
fn listed_shards_learn_the_size_of_their_footers() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    env.python(
        r#"
rng = np.random.default_rng(5)
def shard(path, n, rows_per_group):
    pad = pa.array([rng.bytes(120) for _ in range(n)], pa.binary())
    t = pa.table({'label': (np.arange(n) % 10).astype(np.int64), 'x': rng.random(n), 'pad': pad})
    pq.write_table(t, path, row_group_size=rows_per_group, compression='none')
os.makedirs('o', exist_ok=True)
for i in range(3):
    shard(f'o/part-{i}.parquet', 3000, 3000)
os.makedirs('w', exist_ok=True)
for i in range(100):
    shard(f'w/part-{i:03d}.parquet', 3000, 10)
"#,
    );
    let footer = |p: &str| {
        let bytes = std::fs::read(env.path(p)).unwrap();
        let at = bytes.len() - 8;
        (
            u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as u64,
            bytes.len() as u64,
        )
    };
    let (small, size) = footer("o/part-0.parquet");
    assert!(small < 16 * 1024 && size > 256 * 1024, "{small} {size}");
    let (large, size) = footer("w/part-000.parquet");
    assert!(large > 64 * 1024 && size > 256 * 1024, "{large} {size}");
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "o", "bkt", "o/");
    servers.upload(&env, "w", "bkt", "w/");
    for set in ["o", "w"] {
        let local = servers.check(&env, &["-s", "s.yaml", set], 0);
        servers.reset(servers.proxy);
        let remote = servers.check(&env, &["-s", "s.yaml", &format!("s3://bkt/{set}/")], 0);
        assert_eq!(
            renamed(&remote, &format!("s3://bkt/{set}/"), &format!("{set}/")),
            renamed(&local, "", "")
        );
        let log = servers.log(servers.proxy);
        let names: Vec<String> = std::fs::read_dir(env.path(set))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let mut twice = 0;
        for name in &names {
            let requests = for_key(&log, &format!("/bkt/{set}/{name}"));
            assert!(requests.iter().all(|r| r["method"] == "GET"), "{requests:?}");
            let first = range_len(requests[0]).expect("a bounded range");
            match requests.len() {
                1 if set == "o" => assert_eq!(first, 64 * 1024, "{requests:?}"),
                1 => assert!(first >= large + 8 && first <= 2 * large, "{requests:?}"),
                2 if set == "w" => {
                    assert_eq!(first, 64 * 1024, "{requests:?}");
                    twice += 1;
                }
                _ => panic!("{set}/{name}: {requests:?}"),
            }
        }
        // At most the files opened at once (64) before a footer was read.
        assert!(twice <= 64, "{twice} of {} paid twice", names.len());
    }
}

/// Every entry of the broken corpus (files named, folders as prefixes),
/// from S3: the same errors, in the same words, as from the disk (an IPC
/// stream or a TFRecord file cut short included, which the remote readers
/// meet as they stream). The one MDS folder without its `index.json` and
/// the Delta table missing a data file are left out: their errors name the
/// cause in the storage's words; so are the
/// `datasets` folders whose index mapping lies, which are read through the
/// mapping only from a disk and refused, whole, in storage.
#[test]
fn the_broken_corpus_from_s3_fails_as_it_does_locally() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/broken");
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 10, optional: true}\n  \
         tokens: {kind: index, size: 1000, dtype: uint16, optional: true}\n  \
         pixels: {kind: class, num_classes: 10, optional: true}\n",
    );
    let servers = Servers::start(env.dir.path());
    let shown = corpus.to_string_lossy().into_owned();
    servers.upload(&env, &shown, "bkt", "broken/");
    let mut names: Vec<String> = std::fs::read_dir(&corpus)
        .expect("corpus")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| {
            ![
                "make.py",
                "README.md",
                "expected.json",
                "mds_no_index",
                "delta_missing_file",
                "iceberg_missing_file",
            ]
            .contains(&n.as_str())
        })
        .collect();
    names.sort();
    let (mapped, names): (Vec<String>, Vec<String>) = names.into_iter().partition(|n| n.starts_with("hf_mapping"));
    assert_eq!(mapped.len(), 2, "{mapped:?}");
    assert!(names.len() >= 70, "{names:?}");
    let locals: Vec<String> = names.iter().map(|n| format!("{shown}/{n}")).collect();
    let urls: Vec<String> = names.iter().map(|n| format!("s3://bkt/broken/{n}")).collect();
    let mut args = vec!["-s", "s.yaml", "--max-examples", "1000"];
    args.extend(locals.iter().map(String::as_str));
    let local = servers.check(&env, &args, 2);
    let mut args = vec!["-s", "s.yaml", "--max-examples", "1000"];
    args.extend(urls.iter().map(String::as_str));
    let remote = servers.check(&env, &args, 2);
    assert_eq!(
        renamed(&remote, "s3://bkt/broken/", "/"),
        renamed(&local, &format!("{shown}/"), "/")
    );
    assert_eq!(remote["files"], local["files"]);
    for n in &mapped {
        let url = format!("s3://bkt/broken/{n}");
        let r = servers.check(&env, &["-s", "s.yaml", url.as_str()], 2);
        assert_eq!(r["files"], 0, "{r}");
        let errors = r["errors"].as_array().expect("errors");
        assert_eq!(errors.len(), 1, "{r}");
        assert_eq!(errors[0]["file"], url.as_str(), "{r}");
        let message = errors[0]["message"].as_str().expect("message");
        assert!(
            message.starts_with("1 datasets index mapping(s) here")
                && message.contains("only to a folder on a local disk; nothing in this folder was read"),
            "{message}"
        );
    }
}

/// A Hub dataset at one of the Hub's special revisions
/// (`refs/convert/parquet`, written with its slashes or encoded): listed
/// and read with the revision as one encoded segment, as the Hub expects.
#[test]
fn hugging_face_parquet_conversion_revisions_are_read() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(WRITE);
    env.python("import shutil\nshutil.copytree('d', 'hub/me/set@refs~convert~parquet/default/train')");
    let servers = Servers::start(env.dir.path());
    let local = servers.check(&env, &["-s", "s.yaml", "d"], 1);
    for (url, code) in [
        ("hf://datasets/me/set@refs/convert/parquet/default/train/", 1),
        ("hf://datasets/me/set@refs%2Fconvert%2Fparquet/default/train", 1),
        (
            "hf://datasets/me/set@refs/convert/parquet/default/train/**/*.parquet",
            1,
        ),
        (
            "hf://datasets/me/set@refs/convert/parquet/default/train/stats.parquet",
            0,
        ),
    ] {
        servers.reset(servers.http);
        let r = servers.run_with(
            &env,
            &["check", "--format", "json", "-s", "s.yaml", url],
            &[("HF_ENDPOINT", &format!("http://127.0.0.1:{}", servers.http))],
        );
        assert_eq!(r.code, code, "{url}: {}{}", r.stdout, r.stderr);
        let base = url.find("/train").map(|i| &url[..i + 6]).unwrap();
        if code == 1 {
            assert_eq!(renamed(&r.json(), base, "d"), renamed(&local, "", ""), "{url}");
        } else {
            assert_eq!(r.json()["files"], 1);
        }
        let log = servers.log(servers.http);
        assert!(
            log.iter().all(|q| q["path"]
                .as_str()
                .unwrap()
                .contains("/refs%2Fconvert%2Fparquet/default/train")),
            "{log:?}"
        );
    }
    // A URL of another kind of Hub repository says what is read.
    let r = servers.check(&env, &["-s", "s.yaml", "hf://models/me/set/x.parquet"], 2);
    assert_eq!(r["errors"][0]["file"], "hf://models/me/set/x.parquet");
    assert_eq!(
        r["errors"][0]["message"],
        "an hf:// URL reads datasets: hf://datasets/OWNER/NAME[@REVISION]/PATH"
    );
}

/// Files named with characters URLs and globs give meaning to: each from S3
/// (keys as typed), and over HTTP(S) (the URL percent-encoded, or typed as
/// is, or with a query string), reports as its local copy; a key that
/// holds glob characters and exists is itself, as a local path is; a
/// pattern ending in `/` matches folders; an empty named object and a
/// missing one fail as local ones do.
#[test]
fn odd_names_queries_and_empty_objects_report_as_local() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 10}\n");
    env.python(
        r#"
n = 1000
def t(bad):
    l = (np.arange(n) % 10).astype(np.int64)
    if bad: l[5] = 12
    return pa.table({'label': l})
for i, f in enumerate(['a b.parquet', 'a+b.parquet', '50%.parquet', 'héllo ünï.parquet', 'sub dir/x.parquet',
                       'year=2024/month=01/part-0.parquet', 'br[1].parquet', 'br1.parquet']):
    os.makedirs(os.path.dirname('n/' + f) or 'n', exist_ok=True)
    pq.write_table(t(i % 2 == 1), 'n/' + f)
open('n/zero.parquet', 'wb').close()
"#,
    );
    let servers = Servers::start(env.dir.path());
    servers.upload(&env, "n", "bkt", "n/");
    let http = format!("http://127.0.0.1:{}", servers.http);
    let same = |local: &[&str], remote: &[&str], code: i32, from: &str, to: &str| {
        let l = servers.check(&env, &[&["-s", "s.yaml"], local].concat(), code);
        let r = servers.check(&env, &[&["-s", "s.yaml"], remote].concat(), code);
        assert_eq!(renamed(&r, from, to), renamed(&l, "", ""), "{remote:?}");
        r
    };
    for (name, encoded, code) in [
        ("a b.parquet", "a%20b.parquet", 0),
        ("a+b.parquet", "a%2Bb.parquet", 1),
        ("50%.parquet", "50%25.parquet", 0),
        ("héllo ünï.parquet", "h%C3%A9llo%20%C3%BCn%C3%AF.parquet", 1),
        ("sub dir/x.parquet", "sub%20dir/x.parquet", 0),
        (
            "year=2024/month=01/part-0.parquet",
            "year%3D2024/month%3D01/part-0.parquet",
            1,
        ),
        ("br[1].parquet", "br%5B1%5D.parquet", 0),
    ] {
        let local = format!("n/{name}");
        let s3 = format!("s3://bkt/n/{name}");
        same(&[&local], &[&s3], code, "s3://bkt/n/", "n/");
        let typed = format!("{http}/n/{name}");
        same(&[&local], &[&typed], code, &format!("{http}/n/"), "n/");
        let url = format!("{http}/n/{encoded}");
        same(&[&local], &[&url], code, &url, &local);
        let url = format!("{http}/n/{encoded}?download=true&X-Sig=abc%2F");
        same(&[&local], &[&url], code, &url, &local);
    }
    // Globs, a literal key with glob characters, folders only.
    same(
        &["n/br[1].parquet"],
        &["s3://bkt/n/br[1].parquet"],
        0,
        "s3://bkt/n/",
        "n/",
    );
    same(
        &["n/br[0-9].parquet"],
        &["s3://bkt/n/br[0-9].parquet"],
        1,
        "s3://bkt/n/",
        "n/",
    );
    same(&["n/*/"], &["s3://bkt/n/*/"], 1, "s3://bkt/n/", "n/");
    same(&["n/year=*"], &["s3://bkt/n/year=*"], 1, "s3://bkt/n/", "n/");
    // An empty object, named and listed; a missing one, with and without
    // a known extension; an empty prefix and a glob that matches nothing.
    let r = same(
        &["n/zero.parquet"],
        &["s3://bkt/n/zero.parquet"],
        2,
        "s3://bkt/n/",
        "n/",
    );
    assert_eq!(
        r["errors"][0]["message"],
        "EOF: Parquet file too small. Size is 0 but need 8"
    );
    let url = format!("{http}/n/zero.parquet");
    same(&["n/zero.parquet"], &[&url], 2, &format!("{http}/n/"), "n/");
    for url in ["s3://bkt/n/missing", "s3://bkt/n/missing.parquet"] {
        let r = servers.check(&env, &["-s", "s.yaml", url], 2);
        assert_eq!(r["errors"][0]["file"], url);
        assert_eq!(r["errors"][0]["message"], "not found (HTTP 404)", "{r}");
    }
    servers.upload(&env, "n/sub dir", "bkt", "empty/");
    std::fs::create_dir_all(env.path("empty")).unwrap();
    let r = same(&["empty/*.csv"], &["s3://bkt/empty/*.csv"], 2, "s3://bkt/", "");
    assert_eq!(r["errors"][0]["message"], "matched no data files");
    let r = servers.check(&env, &["-s", "s.yaml", "s3://bkt/nothing/"], 2);
    assert_eq!(
        r["errors"][0]["message"],
        "no data files of a known format in this directory"
    );
    // Plain HTTP has no listing: a folder URL says so, and the other files
    // are still checked.
    let folder = format!("{http}/n/");
    let r = servers.check(&env, &["-s", "s.yaml", &folder, "s3://bkt/n/a+b.parquet"], 2);
    assert_eq!(r["files"], 1);
    assert_eq!(r["errors"][0]["file"], folder.as_str());
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("plain HTTP has no listing"),
        "{r}"
    );
    // A listing that holds a key the client cannot take (`a//b`) says so,
    // and the other PATHs are still checked.
    env.python(&format!(
        r#"
import boto3
s3 = boto3.client('s3', endpoint_url='http://127.0.0.1:{}', aws_access_key_id='test',
                  aws_secret_access_key='test', region_name='us-east-1')
s3.put_object(Bucket='bkt', Key='dbl/a//b.parquet', Body=open('n/a b.parquet', 'rb').read())
"#,
        servers.moto
    ));
    let r = servers.check(&env, &["-s", "s.yaml", "s3://bkt/dbl/", "s3://bkt/n/a+b.parquet"], 2);
    assert_eq!(
        (r["files"].as_u64(), r["violations"].as_u64()),
        (Some(1), Some(1)),
        "{r}"
    );
    assert_eq!(r["errors"][0]["file"], "s3://bkt/dbl/");
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .unwrap()
            .starts_with("a key here cannot be read (the storage client takes no empty"),
        "{r}"
    );
    // A plan of named objects has their sizes, as a local plan has.
    let url = format!("{http}/n/a%20b.parquet");
    let plan = servers.run(&env, &["plan", "-s", "s.yaml", &url, "s3://bkt/n/a+b.parquet"]);
    let local = servers.run(&env, &["plan", "-s", "s.yaml", "n/a b.parquet", "n/a+b.parquet"]);
    assert_eq!((plan.code, local.code), (0, 0), "{}", plan.stderr);
    assert_eq!(
        plan.stdout.replace(&url, "n/a b.parquet").replace("s3://bkt/", ""),
        local.stdout
    );
    // A server that refuses connections is not a timeout.
    let r = servers.run_with(
        &env,
        &["check", "--format", "json", "-s", "s.yaml", "s3://bkt/n/a b.parquet"],
        &[("AWS_ENDPOINT_URL", "http://127.0.0.1:1")],
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.json()["errors"][0]["message"],
        "cannot connect to the server after 3 retries"
    );
}

/// Azure takes no suffix ranges, so a named `az://` object is asked its
/// size first (one HEAD) and its tail then by a bounded range; it reports
/// as its local copy. The Range HTTP server stands in for the Blob service
/// (object_store's emulator settings point it there: its paths are
/// /ACCOUNT/CONTAINER/KEY). A host name that does not resolve says so.
#[test]
fn named_azure_objects_are_read_without_suffix_ranges() {
    let env = Env::new();
    env.write("s.yaml", SCHEMA);
    env.python(WRITE);
    env.python(
        "import shutil\nshutil.copytree('d', 'devstoreaccount1/ctr/d')\n\
         pd.DataFrame({'label': [1, 2, 11]}).to_csv('d/t.csv', index=False)\n\
         shutil.copy('d/t.csv', 'devstoreaccount1/ctr/d/t.csv')",
    );
    let servers = Servers::start(env.dir.path());
    let names = ["d/stats.parquet", "d/sub/bad.parquet", "d/t.csv"];
    let local = servers.check(&env, &[&["-s", "s.yaml"], &names[..]].concat(), 1);
    let urls: Vec<String> = names.iter().map(|n| format!("az://ctr/{n}")).collect();
    let mut args = vec!["check", "--format", "json", "-s", "s.yaml"];
    args.extend(urls.iter().map(String::as_str));
    let endpoint = format!("http://127.0.0.1:{}", servers.http);
    let azure = [
        ("AZURE_STORAGE_USE_EMULATOR", "true"),
        ("AZURITE_BLOB_STORAGE_URL", endpoint.as_str()),
    ];
    servers.reset(servers.http);
    let r = servers.run_with(&env, &args, &azure);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert_eq!(renamed(&r.json(), "az://ctr/", ""), renamed(&local, "", ""));
    let log = servers.log(servers.http);
    assert!(
        log.iter()
            .all(|q| q["range"].as_str().is_none_or(|r| !r.starts_with("bytes=-"))),
        "{log:?}"
    );
    // No account to read from.
    let r = servers
        .command(&env, &["check", "--format", "json", "-s", "s.yaml", "az://ctr/d/t.csv"])
        .env("AZURE_STORAGE_ACCOUNT_KEY", "eA==")
        .env_remove("AZURE_STORAGE_ACCOUNT_NAME")
        .env_remove("AZURE_STORAGE_USE_EMULATOR")
        .output()
        .expect("run");
    let doc: Value = serde_json::from_slice(&r.stdout).expect("json");
    assert_eq!(
        doc["errors"][0]["message"],
        "no Azure storage account: set AZURE_STORAGE_ACCOUNT_NAME, or name it in the URL \
         (abfs://CONTAINER@ACCOUNT.dfs.core.windows.net/PATH)"
    );
    // A host that does not resolve.
    let r = servers.run_with(
        &env,
        &["check", "--format", "json", "-s", "s.yaml", "s3://bkt/x.parquet"],
        &[("AWS_ENDPOINT_URL", "http://no-such-host.invalid:9000")],
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.json()["errors"][0]["message"],
        "cannot resolve the server's host name after 3 retries"
    );
}

/// A listed object (its size known, no HEAD) whose first request is a
/// range of it (an Arrow stream's schema, a NumPy header, a token shard's
/// units): that first response pins its version, so an object overwritten
/// right after it is that file's error, never read as a mix of versions.
#[test]
fn a_listed_object_read_by_ranges_is_pinned_by_its_first_response() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 5, optional: true}\n  tokens: {kind: index, size: 1000, dtype: uint16, optional: true}\n",
    );
    env.python(
        r#"
os.makedirs('o', exist_ok=True)
n = 1_500_000
t = pa.table({'label': (np.arange(n) % 5).astype(np.int64)})
with pa.OSFile('o/s.arrows', 'wb') as f:
    with pa.ipc.new_stream(f, t.schema) as w: w.write_table(t, max_chunksize=100_000)
np.save('o/label.npy', (np.arange(n) % 5).astype(np.int64))
(np.arange(6_000_000) % 1000).astype(np.uint16).tofile('o/t.bin')
"#,
    );
    let servers = Servers::start(env.dir.path());
    for name in ["s.arrows", "label.npy", "t.bin"] {
        servers.upload(&env, "o", "bkt", "o/");
        servers.check(&env, &["-s", "s.yaml", "s3://bkt/o/"], 0);
        servers.reset(servers.proxy);
        servers.fault(&format!(r#"{{"overwrite": "/bkt/o/{name}"}}"#));
        let r = servers.check(&env, &["-s", "s.yaml", "--jobs", "1", "s3://bkt/o/"], 2);
        let url = format!("s3://bkt/o/{name}");
        let errors = r["errors"].as_array().expect("errors");
        assert!(
            !errors.is_empty()
                && errors.iter().all(|e| e["file"] == url.as_str()
                    && e["message"]
                        .as_str()
                        .unwrap()
                        .contains("the object changed while it was read")),
            "{name}: {r:#}"
        );
    }
}
