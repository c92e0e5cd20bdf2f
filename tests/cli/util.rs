//! Test environment: a temporary directory, real files written by real
//! writers (pyarrow through the venv that run-tests.sh creates, or the
//! parquet crate), and the real binary run on them.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

pub struct Env {
    pub dir: tempfile::TempDir,
}

pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not one JSON document ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// The venv's Python (run-tests.sh exports it).
pub fn python_bin() -> PathBuf {
    if let Ok(p) = std::env::var("PREFLIGHT_TEST_PYTHON") {
        return p.into();
    }
    let local = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-venv/bin/python");
    assert!(
        local.exists(),
        "these tests write files with pyarrow: run ./run-tests.sh, which creates the venv"
    );
    local
}

impl Env {
    pub fn new() -> Env {
        Env {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(&p, text).expect("write");
        p
    }

    /// Runs a Python script (pyarrow, numpy, pandas imported as pa, pq, np,
    /// pd) in the environment's directory.
    pub fn python(&self, script: &str) {
        let prelude = "import pyarrow as pa, pyarrow.parquet as pq, numpy as np, pandas as pd, os, json\n";
        let out = Command::new(python_bin())
            .arg("-c")
            .arg(format!("{prelude}{script}"))
            .current_dir(self.dir.path())
            .output()
            .expect("run python");
        assert!(
            out.status.success(),
            "python failed:\n{}\n{}",
            String::from_utf8_lossy(&out.stderr),
            script
        );
    }

    /// Runs `preflight ARGS` in the environment's directory.
    pub fn run(&self, args: &[&str]) -> Run {
        let out = Command::new(env!("CARGO_BIN_EXE_preflight"))
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("run preflight");
        let run = Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        // Every JSON report a test produces must fit the report's JSON Schema.
        crate::json_schema::check_report_output(args, &run.stdout);
        run
    }

    /// Runs `preflight ARGS` with `input` on stdin; stdout comes back as bytes.
    pub fn run_piped(&self, args: &[&str], input: &[u8]) -> (i32, Vec<u8>, String) {
        use std::io::Write;
        let mut child = Command::new(env!("CARGO_BIN_EXE_preflight"))
            .args(args)
            .current_dir(self.dir.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run preflight");
        let mut stdin = child.stdin.take().expect("stdin");
        let input = input.to_vec();
        // Write from a thread: preflight may stop reading early.
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        let out = child.wait_with_output().expect("wait");
        let _ = writer.join();
        (
            out.status.code().unwrap_or(-1),
            out.stdout,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// Runs `preflight ARGS`: (exit code, peak RSS in KB, stdout), the RSS
    /// from the kernel's accounting of that one child (`os.wait4`).
    pub fn peak(&self, args: &[&str]) -> (i32, u64, String) {
        let script = "import json, os, subprocess, sys\n\
            p = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n\
            out = p.stdout.read()\n\
            _, status, usage = os.wait4(p.pid, 0)\n\
            print(json.dumps([os.waitstatus_to_exitcode(status), usage.ru_maxrss, out.decode('utf-8', 'replace')]))";
        let out = Command::new(python_bin())
            .arg("-c")
            .arg(script)
            .arg(env!("CARGO_BIN_EXE_preflight"))
            .args(args)
            .current_dir(self.dir.path())
            .output()
            .expect("python");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("json")
    }

    /// `preflight check --format json ARGS`, asserting the exit code.
    pub fn check_json(&self, args: &[&str], code: i32) -> Value {
        let mut all = vec!["check", "--format", "json"];
        all.extend_from_slice(args);
        let r = self.run(&all);
        assert_eq!(
            r.code, code,
            "exit code of {all:?}\nstdout:\n{}\nstderr:\n{}",
            r.stdout, r.stderr
        );
        r.json()
    }
}

/// The check entry for (column, rule).
pub fn check<'a>(report: &'a Value, column: &str, rule: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["column"] == column && c["rule"] == rule)
        .unwrap_or_else(|| panic!("no check {column}/{rule} in {report:#}"))
}

/// (violations, [(file, row, value)]) of a check.
pub fn hits(report: &Value, column: &str, rule: &str) -> (u64, Vec<(String, u64, Value)>) {
    let c = check(report, column, rule);
    let examples = c["examples"]
        .as_array()
        .expect("examples")
        .iter()
        .map(|e| {
            (
                e["file"].as_str().expect("file").to_string(),
                e["row"].as_u64().expect("row"),
                e["value"].clone(),
            )
        })
        .collect();
    (c["violations"].as_u64().expect("violations"), examples)
}

/// Rows of the examples of a check.
pub fn rows(report: &Value, column: &str, rule: &str) -> Vec<u64> {
    hits(report, column, rule).1.into_iter().map(|(_, r, _)| r).collect()
}

/// A report's `errors` (each as `file: message`) or `warnings`.
pub fn messages(report: &Value, key: &str) -> Vec<String> {
    report[key]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| match e {
            Value::String(s) => s.clone(),
            e => format!(
                "{}: {}",
                e["file"].as_str().unwrap_or(""),
                e["message"].as_str().unwrap_or("")
            ),
        })
        .collect()
}

/// A JSON file the test wrote (an oracle's answer).
pub fn read_json(env: &Env, rel: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.path(rel)).expect("read")).expect("json")
}

/// Units of a plan made with full paths, their files named as the CLI (run
/// in the temporary directory) names them; still opened by full path.
pub fn relative_units(env: &Env, units: Vec<preflight::WorkUnit>) -> Vec<preflight::WorkUnit> {
    units
        .into_iter()
        .map(|mut u| {
            let relative = Path::new(&u.file).strip_prefix(env.dir.path()).expect("below");
            u.file = relative.to_string_lossy().into_owned();
            u
        })
        .collect()
}

/// `units` checked as `parts` workers would (unit i by worker i % parts),
/// each worker's partial carried across JSON, merged in reverse order: the
/// merged report as `--format json` prints it.
pub fn merged_from_workers(validator: &preflight::Validator, units: &[preflight::WorkUnit], parts: usize) -> String {
    use preflight::report::json;
    let opts = preflight::ScanOptions {
        jobs: 1,
        ..Default::default()
    };
    let texts: Vec<String> = (0..parts)
        .map(|part| {
            let mine: Vec<preflight::WorkUnit> = units
                .iter()
                .enumerate()
                .filter(|(i, _)| i % parts == part)
                .map(|(_, u)| u.clone())
                .collect();
            let checked = preflight::check_units(validator, &mine, &opts);
            let state = checked.to_json(validator);
            json::render_with(&checked.report(validator), Some(state))
        })
        .collect();
    let mut merged = validator.partial();
    for text in texts.iter().rev() {
        let doc: Value = serde_json::from_str(text).expect("json");
        merged.merge(preflight::Partial::from_json(&doc["partial"]).expect("partial").0);
    }
    json::render(&merged.report(validator))
}
