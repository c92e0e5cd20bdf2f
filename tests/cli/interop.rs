//! Issue #13, the interop guarantee: the Arrow and Parquet projects' own test
//! files (tests/fixtures/interop, vendored from apache/parquet-testing and
//! apache/arrow-testing), with pyarrow as the oracle.
//!
//! `oracle.py` reads every file with pyarrow once, in one process. For a file
//! pyarrow reads, it writes a schema putting every integer column (and
//! dictionary of integers, and lists of those) under `kind: index` with a
//! size that its largest value violates, and lists the exact report preflight
//! owes: violation counts, and every (row, value) example in report order;
//! preflight must give exactly that, with and without `--full-scan`. A file
//! pyarrow refuses, preflight must refuse too (exit 2) or give a
//! self-consistent report, without a crash or panic message, within a time
//! and a memory bound. Every discrepancy of every file is collected, and the
//! test fails once, listing them all.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{Env, python_bin};

/// Wall-clock bound of one run on one (small) corpus file.
const TIME_LIMIT: Duration = Duration::from_secs(30);
/// Peak RSS bound of one run on a file pyarrow refuses, in KB.
const PEAK_LIMIT_KB: u64 = 256 * 1024;

pub fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/interop")
}

/// One run of the binary, bounded in time: stdout and stderr go to files (no
/// pipe to deadlock on), a run past `limit` is killed.
pub struct Timed {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub elapsed: Duration,
    pub stdout: String,
    pub stderr: String,
}

impl Timed {
    /// What went wrong with the process itself, whatever it printed.
    pub fn crash(&self) -> Option<String> {
        if self.timed_out {
            return Some(format!("still running after {:?}: killed", self.elapsed));
        }
        if let Some(s) = self.signal {
            return Some(format!("killed by signal {s}; stderr: {}", tail(&self.stderr)));
        }
        if self.stderr.contains("panicked at") {
            return Some(format!("panic message on stderr: {}", tail(&self.stderr)));
        }
        None
    }
}

fn tail(s: &str) -> &str {
    let mut start = s.len().saturating_sub(600);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    s[start..].trim()
}

/// Runs `preflight ARGS` in `env`'s directory; `tag` names the output files.
pub fn run_timed(env: &Env, tag: &str, args: &[&str], limit: Duration) -> Timed {
    use std::os::unix::process::ExitStatusExt;
    let out_path = env.path(&format!("{tag}.out"));
    let err_path = env.path(&format!("{tag}.err"));
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_preflight"))
        .args(args)
        .current_dir(env.dir.path())
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).expect("stdout file"))
        .stderr(std::fs::File::create(&err_path).expect("stderr file"))
        .spawn()
        .expect("run preflight");
    let mut nap = Duration::from_millis(1);
    let (status, timed_out) = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break (status, false);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            break (child.wait().expect("wait"), true);
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(20));
    };
    let elapsed = start.elapsed();
    let read = |p: &Path| String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()).into_owned();
    Timed {
        code: status.code(),
        signal: status.signal(),
        timed_out,
        elapsed,
        stdout: read(&out_path),
        stderr: read(&err_path),
    }
}

/// The oracle's verdict on every file under `roots` (one Python process).
pub fn oracle(roots: &[&Path], max_examples: usize) -> Vec<Value> {
    let out = Command::new(python_bin())
        .arg(corpus().join("oracle.py"))
        .arg("--examples")
        .arg(max_examples.to_string())
        .args(roots)
        .output()
        .expect("run oracle.py");
    assert!(
        out.status.success(),
        "oracle.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("oracle.py prints one JSON document");
    doc["files"].as_array().expect("files").clone()
}

/// Discrepancies, collected across files and threads, and the largest time
/// and memory seen.
#[derive(Default)]
pub struct Mismatches {
    list: Mutex<Vec<String>>,
    slowest_ms: AtomicU64,
    peak_kb: AtomicU64,
}

impl Mismatches {
    pub fn add(
        &self,
        file: &str,
        column: &str,
        what: &str,
        expected: impl std::fmt::Display,
        got: impl std::fmt::Display,
    ) {
        self.list
            .lock()
            .unwrap()
            .push(format!("{file} | {column} | {what} | expected {expected} | got {got}"));
    }

    fn timed(&self, run: &Timed) {
        self.slowest_ms
            .fetch_max(run.elapsed.as_millis() as u64, Ordering::Relaxed);
    }

    /// (the slowest run in ms, the largest peak RSS measured in KB)
    pub fn extremes(&self) -> (u64, u64) {
        (
            self.slowest_ms.load(Ordering::Relaxed),
            self.peak_kb.load(Ordering::Relaxed),
        )
    }

    pub fn into_inner(self) -> Vec<String> {
        let mut all = self.list.into_inner().unwrap();
        all.sort();
        all
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 300 {
        return s;
    }
    let mut end = 300;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// Compares a report with what the oracle says it must hold, for a file that
/// pyarrow reads. `name` is the file as given to preflight.
pub fn compare(report: &Value, name: &str, entry: &Value, label: &str, mm: &Mismatches) {
    let columns = entry["columns"].as_array().expect("columns");
    if report["rows"] != entry["rows"] {
        mm.add(label, "-", "rows", &entry["rows"], &report["rows"]);
    }
    if report["errors"].as_array().is_none_or(|e| !e.is_empty()) {
        mm.add(label, "-", "errors", "[]", short(&report["errors"]));
    }
    let checks = report["checks"].as_array().cloned().unwrap_or_default();
    let find = |column: &str, rule: &str| {
        checks
            .iter()
            .find(|c| c["column"] == column && c["rule"] == rule)
            .cloned()
    };
    for col in columns {
        let column = col["name"].as_str().expect("name");
        let Some(index) = find(column, "index") else {
            mm.add(label, column, "index check", "present", "absent");
            continue;
        };
        for rule in ["null", "not_integer"] {
            let n = find(column, rule).map(|c| c["violations"].clone());
            if n != Some(Value::from(0)) {
                mm.add(label, column, rule, 0, format!("{n:?}"));
            }
        }
        if index["violations"] != col["violations"] {
            mm.add(label, column, "violations", &col["violations"], &index["violations"]);
        }
        let got: Vec<Value> = index["examples"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|e| Value::from(vec![e["row"].clone(), e["value"].clone()]))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(other) = index["examples"]
            .as_array()
            .and_then(|a| a.iter().find(|e| e["file"] != name))
        {
            mm.add(label, column, "example file", name, &other["file"]);
        }
        let want = col["examples"].as_array().expect("examples");
        let complete = col["examples_complete"].as_bool().expect("examples_complete");
        let mut rows: Vec<u64> = got.iter().filter_map(|e| e[0].as_u64()).collect();
        rows.dedup();
        let want_rows: Vec<u64> = col["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| r.as_u64().expect("row"))
            .collect();
        let rows_agree = if complete {
            format!("violating rows agree: {}", rows == want_rows)
        } else {
            String::new()
        };
        let n = want.len().min(got.len());
        let window = |v: &[Value], i: usize| short(&Value::from(v[i..v.len().min(i + 3)].to_vec()));
        if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
            mm.add(
                label,
                column,
                &format!("example #{i} of {} (row, value)", want.len()),
                window(want, i),
                format!("{} ({} examples; {rows_agree})", window(&got, i), got.len()),
            );
        } else if (complete && got.len() != want.len()) || (!complete && got.len() < want.len()) {
            mm.add(
                label,
                column,
                "number of examples",
                format!("{} (next {:?})", want.len(), want.get(n)),
                format!("{} (next {:?}; {rows_agree})", got.len(), got.get(n)),
            );
        }
    }
}

/// A report that a file pyarrow refuses may still get: exit 2 with an error,
/// or 0/1 with a report that agrees with itself.
pub fn self_consistent(code: i32, report: &Value) -> Result<(), String> {
    let errors = report["errors"].as_array().map_or(0, Vec::len);
    let ok = report["ok"].as_bool();
    let total = report["violations"].as_u64();
    let sum: Option<u64> = report["checks"]
        .as_array()
        .map(|c| c.iter().map(|c| c["violations"].as_u64().unwrap_or(u64::MAX / 4)).sum());
    match code {
        2 if errors > 0 && ok == Some(false) => Ok(()),
        2 => Err(format!("exit 2 without an error: {}", short(report))),
        0 | 1 => {
            if errors > 0 {
                return Err(format!("exit {code} with errors {}", short(&report["errors"])));
            }
            if ok != Some(code == 0) {
                return Err(format!("exit {code} with ok = {:?}", ok));
            }
            if total != sum {
                return Err(format!("violations {total:?}, checks sum to {sum:?}"));
            }
            if (total.unwrap_or(0) > 0) != (code == 1) {
                return Err(format!("exit {code} with {total:?} violations"));
            }
            Ok(())
        }
        c => Err(format!("exit status {c}")),
    }
}

#[test]
fn the_arrow_and_parquet_test_files_read_as_pyarrow_reads_them() {
    let started = Instant::now();
    let root = corpus();
    let entries = oracle(&[&root.join("parquet-testing"), &root.join("arrow-testing")], 1000);
    let oracle_time = started.elapsed();
    assert!(entries.len() >= 650, "the whole corpus was read: {}", entries.len());
    let broken: Vec<&Value> = entries.iter().filter(|e| e.get("oracle_error").is_some()).collect();
    assert!(broken.is_empty(), "oracle.py failed on files: {broken:#?}");
    let readable = entries.iter().filter(|e| e["readable"] == true).count();
    let with_ints = entries
        .iter()
        .filter(|e| e["columns"].as_array().is_some_and(|c| !c.is_empty()))
        .count();
    assert!(
        readable >= 400 && with_ints >= 200,
        "{readable} readable, {with_ints} with integers"
    );

    let env = Env::new();
    let mm = Mismatches::default();
    let next = AtomicUsize::new(0);
    let worker = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(entry) = entries.get(i) else { break };
            check_one(&env, i, entry, &mm);
        }
    };
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(worker);
        }
    });
    let (slowest_ms, peak_kb) = mm.extremes();
    let all = mm.into_inner();
    eprintln!(
        "interop: {} files ({readable} read by pyarrow, {with_ints} with integer columns), oracle {:.1?}, \
         total {:.1?}; slowest run {slowest_ms} ms, largest peak RSS on a refused file {peak_kb} KB",
        entries.len(),
        oracle_time,
        started.elapsed()
    );
    assert!(
        all.is_empty(),
        "{} discrepancies with pyarrow (file | column | what | expected | got):\n{}",
        all.len(),
        all.join("\n")
    );
}

/// Fuzz-made files that pyarrow reads (all of them but one with no rows)
/// whose footers break the format beyond what preflight reads leniently
/// (README, "Interop"): the parquet crate refuses them, so preflight gives
/// exit 2 with the cause, never an answer. Each with the part of the error
/// that must name the cause.
const STRICTER_THAN_PYARROW: &[(&str, &str)] = &[
    (
        "arrow-testing/data/arrow-ipc-stream/clusterfuzz-testcase-minimized-arrow-ipc-stream-fuzz-5718685113384960",
        "Duration type with unit of <UNKNOWN 8>",
    ),
    (
        "arrow-testing/data/parquet/fuzzing/clusterfuzz-testcase-minimized-parquet-arrow-fuzz-4740205688193024",
        "Unexpected list/set element type 0",
    ),
    (
        "arrow-testing/data/parquet/fuzzing/clusterfuzz-testcase-minimized-parquet-arrow-fuzz-5068991573000192",
        "DECIMAL with length 6 and precision 45",
    ),
    (
        "arrow-testing/data/parquet/fuzzing/clusterfuzz-testcase-minimized-parquet-arrow-fuzz-5665099979423744",
        "Expected list element type of Struct but got I64",
    ),
    (
        "arrow-testing/data/parquet/fuzzing/clusterfuzz-testcase-minimized-parquet-arrow-fuzz-5697144926502912.fuzz",
        "Required field encodings is missing",
    ),
];

/// A file of [`STRICTER_THAN_PYARROW`]: both runs exit 2 naming the cause.
fn check_stricter(env: &Env, name: &str, schema: &str, label: &str, cause: &str, mm: &Mismatches) {
    for full_scan in [false, true] {
        let mut args = vec!["check", "--format", "json", "-s", schema, name];
        if full_scan {
            args.push("--full-scan");
        }
        let run = run_timed(env, name, &args, TIME_LIMIT);
        mm.timed(&run);
        if run.code != Some(2) || !run.stdout.contains(cause) {
            mm.add(
                label,
                "-",
                "refused with its cause",
                format!("exit 2, {cause}"),
                tail(&run.stdout),
            );
        }
    }
}

fn check_one(env: &Env, i: usize, entry: &Value, mm: &Mismatches) {
    let path = PathBuf::from(entry["path"].as_str().expect("path"));
    let label = path
        .strip_prefix(corpus())
        .unwrap_or(&path)
        .to_string_lossy()
        .into_owned();
    // Named by the kind pyarrow read it as, so the test does not depend on
    // preflight's content sniffing.
    let ext = match entry["kind"].as_str().expect("kind") {
        "parquet" => "parquet",
        "ipc-file" => "arrow",
        _ => "arrows",
    };
    let name = format!("f{i}.{ext}");
    std::fs::copy(&path, env.path(&name)).expect("copy");
    let schema = format!("f{i}.yaml");
    env.write(&schema, entry["schema"].as_str().expect("schema"));
    if let Some((_, cause)) = STRICTER_THAN_PYARROW.iter().find(|(f, _)| *f == label) {
        check_stricter(env, &name, &schema, &label, cause, mm);
    } else if entry["readable"] == true {
        check_readable(env, &name, &schema, entry, &label, mm);
    } else {
        check_refused(env, &name, &schema, &label, mm);
    }
}

/// Runs preflight on `name`, a file pyarrow refuses, with and without
/// `--full-scan`: it must exit 2 with an error, or 0/1 with a report that
/// agrees with itself; never crash, panic, take longer than TIME_LIMIT, or
/// peak above PEAK_LIMIT_KB.
pub fn check_refused(env: &Env, name: &str, schema: &str, label: &str, mm: &Mismatches) {
    for full_scan in [false, true] {
        let mut args = vec!["check", "--format", "json", "-s", schema, name];
        let label = if full_scan {
            args.push("--full-scan");
            format!("{label} (full-scan)")
        } else {
            label.to_string()
        };
        let run = run_timed(
            env,
            &format!("{name}{}", if full_scan { "-full" } else { "" }),
            &args,
            TIME_LIMIT,
        );
        mm.timed(&run);
        if let Some(crash) = run.crash() {
            mm.add(&label, "-", "process", "a clean exit", crash);
            continue;
        }
        match serde_json::from_str::<Value>(&run.stdout) {
            Ok(report) => {
                if let Err(e) = self_consistent(run.code.expect("exit code"), &report) {
                    mm.add(
                        &label,
                        "-",
                        "report of a file pyarrow refuses",
                        "exit 2, or a consistent 0/1",
                        e,
                    );
                }
            }
            Err(e) => mm.add(
                &label,
                "-",
                "stdout",
                "one JSON document",
                format!("{e}: {}", tail(&run.stdout)),
            ),
        }
        // Memory, measured on the completed full scan (so it cannot hang).
        if full_scan {
            let (_, kb, _) = env.peak(&args);
            mm.peak_kb.fetch_max(kb, Ordering::Relaxed);
            if kb > PEAK_LIMIT_KB {
                mm.add(&label, "-", "peak RSS (KB)", format!("< {PEAK_LIMIT_KB}"), kb);
            }
        }
    }
}

/// Runs preflight on `name` (in `env`) under `schema`, with and without
/// `--full-scan`, every example kept, and compares both reports with the
/// oracle's `entry` (rows, and per column: counts, every example).
pub fn check_readable(env: &Env, name: &str, schema: &str, entry: &Value, label: &str, mm: &Mismatches) {
    let violations: u64 = entry["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .map(|c| c["violations"].as_u64().expect("violations"))
        .sum();
    let want = i32::from(violations > 0);
    for full_scan in [false, true] {
        let mut args = vec![
            "check",
            "--format",
            "json",
            "--max-examples",
            "1000000000",
            "-s",
            schema,
            name,
        ];
        let label = if full_scan {
            args.push("--full-scan");
            format!("{label} (full-scan)")
        } else {
            label.to_string()
        };
        let run = run_timed(
            env,
            &format!("{name}{}", if full_scan { "-full" } else { "" }),
            &args,
            TIME_LIMIT,
        );
        mm.timed(&run);
        if let Some(crash) = run.crash() {
            mm.add(&label, "-", "process", "a clean exit", crash);
            continue;
        }
        let code = run.code.expect("exit code");
        let report: Value = match serde_json::from_str(&run.stdout) {
            Ok(r) => r,
            Err(e) => {
                mm.add(
                    &label,
                    "-",
                    "stdout",
                    "one JSON document",
                    format!("{e}: {}", tail(&run.stdout)),
                );
                continue;
            }
        };
        if code != want {
            let errors = short(&report["errors"]);
            mm.add(&label, "-", "exit status", want, format!("{code}, errors {errors}"));
            if code == 2 {
                continue;
            }
        }
        compare(&report, name, entry, &label, mm);
    }
}
