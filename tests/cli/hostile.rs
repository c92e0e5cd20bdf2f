//! Hostile and broken input: the committed corpus of broken files
//! (tests/fixtures/broken, made by its make.py), bounded memory on lying
//! metadata, files that are not regular files, symlink loops, odd names, and
//! data that is never modified by a check.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::util::{Env, hits, python_bin};

// `tokens` (optional) makes the search pick up the corpus's token `.bin` files.
const LABELS: &str = "columns:\n  label: {kind: class, num_classes: 10}\n  tokens: {kind: index, size: 1000, dtype: uint16, optional: true}\n";

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/broken")
}

/// File (relative to the corpus) -> fragment its error message must hold.
fn expected() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(corpus().join("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json is JSON")
}

#[test]
fn every_broken_file_is_its_own_error_and_good_files_are_still_checked() {
    let env = Env::new();
    // `pixels` makes the search pick up the corpus's images, which have no
    // `label` (so that file's one error is its own, `label` is optional).
    let schema = LABELS.replace("num_classes: 10}", "num_classes: 10, optional: true}")
        + "  pixels: {kind: class, num_classes: 10, optional: true}\n";
    env.write("s.yaml", &schema);
    env.python(
        "pq.write_table(pa.table({'label': pa.array([0, 1, 12, 3], pa.int64())}), 'good.parquet')\n\
         open('good.csv', 'w').write('label\\n1\\n2\\n')",
    );
    let dir = corpus();
    let shown = dir.to_string_lossy().into_owned();
    let report = env.check_json(&["-s", "s.yaml", &shown, "good.parquet", "good.csv"], 2);
    let expected = expected();
    assert!(expected.len() >= 25, "the corpus is complete");
    let errors = report["errors"].as_array().expect("errors");
    for (file, fragment) in &expected {
        let name = format!("{shown}/{file}");
        let mine: Vec<&Value> = errors.iter().filter(|e| e["file"] == name.as_str()).collect();
        assert_eq!(mine.len(), 1, "{file}: exactly one error, got {mine:?}");
        let message = mine[0]["message"].as_str().expect("message");
        assert!(
            message.contains(fragment.as_str()),
            "{file}: {message:?} lacks {fragment:?}"
        );
    }
    assert_eq!(errors.len(), expected.len(), "no other errors: {errors:#?}");
    // The good files were checked and reported, beside the broken ones.
    let (n, ex) = hits(&report, "label", "class");
    assert_eq!(n, 1);
    assert_eq!(ex[0].0, "good.parquet");
    assert_eq!(ex[0].1, 2);
    // A table whose log cannot be read has no files; every other entry is one.
    let unread_tables = expected
        .keys()
        .filter(|k| dir.join(k).join("_delta_log").is_dir() || dir.join(k).join("metadata").is_dir())
        .count();
    assert_eq!(report["files"], expected.len() - unread_tables + 2);
}

#[test]
fn lying_metadata_does_not_make_preflight_allocate() {
    // Peak RSS of each run, from the kernel's accounting of that one child.
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.write(
        "peak.py",
        r#"
import json, os, subprocess, sys
binary, schema, corpus = sys.argv[1:4]
peaks = {}
def run(path):
    p = subprocess.Popen([binary, "check", "-s", schema, path], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(p.pid, 0)
    peaks[os.path.relpath(path, corpus)] = [os.waitstatus_to_exitcode(status), usage.ru_maxrss]
for root, dirs, files in os.walk(corpus):
    # A Delta or Iceberg table is checked whole, as its snapshot.
    if "_delta_log" in dirs or "metadata" in dirs:
        run(root)
        dirs.clear()
        continue
    for f in files:
        # index.json: the MDS shards' index, read with them (not a data file).
        # data.idx: a Megatron index, read with its .bin.
        # dataset_info.json, hf-train.arrow: a datasets cache's, read with its mapping.
        if f in ("make.py", "expected.json", "README.md", "index.json", "dataset_info.json", "hf-train.arrow") \
                or f.endswith(".idx"):
            continue
        run(os.path.join(root, f))
print(json.dumps(peaks))
"#,
    );
    let out = std::process::Command::new(python_bin())
        .args(["peak.py", env!("CARGO_BIN_EXE_preflight"), "s.yaml"])
        .arg(corpus())
        .current_dir(env.dir.path())
        // Backtraces are symbolised for panics that are printed; none are.
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("python");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let peaks: BTreeMap<String, (i32, u64)> = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(peaks.len(), expected().len());
    for (file, (code, kb)) in peaks {
        assert_eq!(code, 2, "{file}");
        // The files claim up to 2^40 rows or bytes; the bound is the
        // binary's own footprint plus a batch.
        assert!(kb < 64 * 1024, "{file}: peak RSS {kb} KB");
    }
}

/// Page levels built to lie (tests/fixtures/levels): the shortcut that reads
/// row lengths from levels gives the full scan's answer, or an error, in
/// bounded memory.
#[test]
fn hostile_page_levels_are_bounded_and_agree_with_full_scan() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  ids: {kind: index, size: 1000, max_length: 2, nullable: true}\n",
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/levels");
    let run = |name: &str, extra: &[&str]| -> (i32, u64, Value) {
        let path = dir.join(name).display().to_string();
        let mut args = vec!["check", "--format", "json", "-s", "s.yaml", path.as_str()];
        args.extend(extra);
        let (code, kb, out) = env.peak(&args);
        (code, kb, serde_json::from_str(&out).expect("json"))
    };
    let error = |r: &Value| r["errors"][0]["message"].as_str().unwrap_or_default().to_string();
    for (name, code) in [
        ("many_rows_in_one_page.parquet", 0),
        ("rows_beyond_the_footer.parquet", 2),
        ("levels_claim_2gib.parquet", 2),
        ("bit_packed_levels.parquet", 1),
    ] {
        let (fast, full) = (&run(name, &[]), &run(name, &["--full-scan"]));
        assert_eq!((fast.0, full.0), (code, code), "{name}");
        // The pages claim up to 2^27 rows and 2 GiB of levels.
        assert!(fast.1 < 64 * 1024, "{name}: peak RSS {} KB", fast.1);
        match name {
            "many_rows_in_one_page.parquet" => assert_eq!(fast.2["rows"], 1 << 26),
            "rows_beyond_the_footer.parquet" => {
                assert!(
                    error(&fast.2).contains("the footer says 1 rows, the pages hold more"),
                    "{}",
                    fast.2
                );
            }
            "levels_claim_2gib.parquet" => {
                assert!(error(&fast.2).contains("the page ends inside its levels"), "{}", fast.2);
                continue; // the full scan's error is the parquet crate's own
            }
            _ => assert_eq!(
                hits(&fast.2, "ids", "max_length").1,
                vec![(dir.join(name).display().to_string(), 3, serde_json::json!(3))]
            ),
        }
        assert_eq!(fast.2, full.2, "{name}: levels and a full scan disagree");
    }
}

#[test]
fn fifos_symlink_loops_and_odd_names_never_hang() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.python(
        "os.makedirs('d/sub')\n\
         os.mkfifo('pipe.csv')\n\
         os.mkfifo('d/pipe.csv')\n\
         os.symlink('..', 'd/sub/loop')\n\
         open(b'd/bad\\xff name.csv', 'wb').write(b'label\\n1\\n11\\n')\n\
         open('d/ok.csv', 'w').write('label\\n1\\n')",
    );
    let started = std::time::Instant::now();
    // A FIFO named on the command line is refused, not opened.
    let r = env.check_json(&["-s", "s.yaml", "pipe.csv", "d/ok.csv"], 2);
    assert_eq!(r["errors"][0]["file"], "pipe.csv");
    assert!(
        r["errors"][0]["message"]
            .as_str()
            .expect("m")
            .contains("not a regular file")
    );
    assert_eq!(r["rows"], 1);
    // In a directory: the FIFO is skipped, the loop is an error, the file
    // with a non-UTF-8 name is checked and shown lossily.
    let r = env.check_json(&["-s", "s.yaml", "d"], 2);
    let errors = r["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["file"], "d/sub/loop");
    assert!(errors[0]["message"].as_str().expect("m").contains("symbolic link loop"));
    let (n, ex) = hits(&r, "label", "class");
    assert_eq!(n, 1);
    assert_eq!(ex[0].0, "d/bad\u{fffd} name.csv");
    assert_eq!(ex[0].1, 1);
    assert!(started.elapsed().as_secs() < 30, "no hang");
}

#[test]
fn files_that_vanish_are_errors_of_their_own() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.write("ok.csv", "label\n1\n");
    let r = env.check_json(&["-s", "s.yaml", "gone.parquet", "ok.csv"], 2);
    assert_eq!(r["errors"][0]["file"], "gone.parquet");
    assert!(r["errors"][0]["message"].as_str().expect("m").contains("No such file"));
    assert_eq!(r["rows"], 1);
}

#[test]
fn checking_never_modifies_the_data() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 3}\n");
    env.python(
        r#"
import gzip, hashlib
os.makedirs('data')
t = pa.table({'label': pa.array([0, 1, 2, 5] * 50, pa.int64())})
pq.write_table(t, 'data/a.parquet', row_group_size=64)
import pyarrow.feather as feather, pyarrow.ipc as ipc
feather.write_feather(t, 'data/b.feather', compression='zstd')
with ipc.new_stream('data/c.arrows', t.schema) as w: w.write_table(t)
t.to_pandas().to_csv('data/d.csv', index=False)
with gzip.open('data/e.csv.gz', 'wt') as f: f.write('label\n1\n7\n')
open('data/f.jsonl', 'w').write('{"label": 1}\n{"label": 4}\n')
np.save('data/label.npy', np.array([0, 1, 9], dtype='>i4'))
np.savez('data/g.npz', label=np.asfortranarray(np.array([[0, 1], [2, 8]], dtype=np.int16)))
"#,
    );
    let snapshot = || -> Vec<(String, Vec<u8>, std::time::SystemTime, u32)> {
        use std::os::unix::fs::PermissionsExt;
        let mut all: Vec<_> = std::fs::read_dir(env.path("data"))
            .expect("read_dir")
            .map(|e| {
                let e = e.expect("entry");
                let meta = e.metadata().expect("metadata");
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).expect("read"),
                    meta.modified().expect("mtime"),
                    meta.permissions().mode(),
                )
            })
            .collect();
        all.sort();
        all
    };
    let before = snapshot();
    assert_eq!(before.len(), 8);
    for extra in [&[][..], &["--full-scan"][..], &["--jobs", "1"][..]] {
        let mut args = vec!["-s", "s.yaml", "data"];
        args.extend_from_slice(extra);
        let r = env.check_json(&args, 1);
        assert_eq!(r["files"], 8);
    }
    assert!(
        before == snapshot(),
        "contents, mtimes and modes are unchanged, and nothing was added"
    );
}

/// Sends SIGINT to `child` after `after`, returns (exit code, stdout, seconds
/// from the signal to the exit).
pub fn interrupt(mut child: std::process::Child, after: std::time::Duration) -> (Option<i32>, String, f64) {
    use std::io::Read;
    std::thread::sleep(after);
    let sent = std::time::Instant::now();
    let killed = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(killed.success());
    let deadline = sent + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        assert!(std::time::Instant::now() < deadline, "still running 10 s after Ctrl-C");
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let took = sent.elapsed().as_secs_f64();
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut out)
        .expect("read");
    (status.code(), out, took)
}

#[test]
fn ctrl_c_stops_a_scan_with_130_and_no_output() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    // 10M rows: seconds of work for a debug build.
    env.python("open('big.csv', 'wb').write(b'label\\n' + b'1\\n2\\n3\\n4\\n5\\n' * 2_000_000)");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_preflight"))
        .args(["check", "-s", "s.yaml", "--format", "json", "-j", "1", "big.csv"])
        .current_dir(env.dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let (code, out, took) = interrupt(child, std::time::Duration::from_millis(300));
    assert_eq!(code, Some(130));
    assert_eq!(out, "", "no half-written report");
    assert!(took < 2.0, "stopped {took:.2} s after Ctrl-C");
}

#[test]
fn ctrl_c_stops_a_run_blocked_on_stdin() {
    let env = Env::new();
    env.write("s.yaml", LABELS);
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_preflight"))
        .args(["check", "-s", "s.yaml", "--pass-through", "-"])
        .current_dir(env.dir.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    // Keep the pipe open and silent: preflight waits in read.
    let _stdin = child.stdin.take();
    let (code, out, took) = interrupt(child, std::time::Duration::from_millis(200));
    assert_eq!(code, Some(130));
    assert_eq!(out, "");
    assert!(took < 3.0, "stopped {took:.2} s after Ctrl-C");
}

#[test]
fn fuzz_finds_stay_fixed() {
    // tests/fixtures/fuzz: inputs the fuzzers found (see its README).
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: 10, optional: true}\n  score: {kind: range, min: 0.0, max: 1.0, optional: true}\n",
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("read_dir") {
        let path = entry.expect("entry").path();
        let name = path.file_name().expect("name").to_string_lossy().into_owned();
        if name == "README.md" {
            continue;
        }
        seen += 1;
        let bytes = std::fs::read(&path).expect("read");
        if name.starts_with("stream_") {
            let (code, _, err) = env.run_piped(&["check", "-s", "s.yaml", "-"], &bytes);
            assert_eq!(code, 2, "{name}: {err}");
        }
        let r = env.run(&["check", "-s", "s.yaml", &path.to_string_lossy()]);
        assert_eq!(r.code, 2, "{name}: {}", r.stdout);
        let path = path.to_string_lossy();
        let (_, kb, _) = env.peak(&["check", "-s", "s.yaml", "--full-scan", &path]);
        assert!(kb < 64 * 1024, "{name}: peak RSS {kb} KB");
    }
    assert!(seen > 0);
}

#[test]
fn highly_compressed_buffers_are_not_mistaken_for_lies() {
    // One batch of 4M equal labels: zstd shrinks its 32 MB buffer about
    // 30,000 times, lz4 about 250 times: both within what the codecs can do.
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.python(
        "import pyarrow.ipc as ipc\n\
         t = pa.table({'label': pa.array(np.zeros(4_000_000, dtype=np.int64))})\n\
         for c in ['zstd', 'lz4']:\n\
         \x20   with ipc.new_file(f'{c}.arrow', t.schema, options=ipc.IpcWriteOptions(compression=c)) as w: w.write_table(t)\n\
         \x20   with ipc.new_stream(f'{c}.arrows', t.schema, options=ipc.IpcWriteOptions(compression=c)) as w: w.write_table(t)",
    );
    let r = env.check_json(
        &["-s", "s.yaml", "zstd.arrow", "lz4.arrow", "zstd.arrows", "lz4.arrows"],
        0,
    );
    assert_eq!(r["rows"], 16_000_000);
    // Parquet pages of zeros, plain-encoded, at the ratios snappy and LZ4
    // reach (~21x and ~250x): within the page-size check.
    env.python(
        "t = pa.table({'label': pa.array(np.zeros(4_000_000, dtype=np.int64))})\n\
         for c in ['snappy', 'lz4']:\n\
         \x20   pq.write_table(t, f'{c}.parquet', compression=c, use_dictionary=False, column_encoding='PLAIN', data_page_size=8 << 20)",
    );
    let r = env.check_json(&["-s", "s.yaml", "snappy.parquet", "lz4.parquet", "--full-scan"], 0);
    assert_eq!(r["rows"], 8_000_000);
    let stream = std::fs::read(env.path("zstd.arrows")).expect("read");
    let (code, _, err) = env.run_piped(&["check", "-s", "s.yaml", "-"], &stream);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn unreadable_files_are_errors_of_their_own() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.write("s.yaml", LABELS);
    env.write("d/ok.csv", "label\n1\n12\n");
    env.write("d/secret.csv", "label\n1\n");
    for (path, mode) in [
        ("", 0o755),
        ("d", 0o755),
        ("s.yaml", 0o644),
        ("d/ok.csv", 0o644),
        ("d/secret.csv", 0o000),
    ] {
        std::fs::set_permissions(env.path(path), std::fs::Permissions::from_mode(mode)).expect("chmod");
    }
    // Root reads everything: drop to `nobody` to make the file unreadable,
    // running a copy of the binary that `nobody` can reach.
    let root = std::process::Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"));
    let mut cmd = if root {
        let copy = env.path("preflight");
        std::fs::copy(env!("CARGO_BIN_EXE_preflight"), &copy).expect("copy the binary");
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(&copy);
        c
    } else {
        std::process::Command::new(env!("CARGO_BIN_EXE_preflight"))
    };
    let out = cmd
        .args(["check", "-s", "s.yaml", "--format", "json", "d"])
        .current_dir(env.dir.path())
        .output()
        .expect("run");
    let report: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(report["errors"][0]["file"], "d/secret.csv");
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .expect("m")
            .contains("Permission denied")
    );
    assert_eq!(
        hits(&report, "label", "class").0,
        1,
        "the readable file is still checked"
    );
}

#[test]
fn lists_nested_deeply_are_checked_to_the_leaves() {
    let env = Env::new();
    env.write(
        "s.yaml",
        "columns:\n  input_ids: {kind: index, size: 1000, max_length: 1}\n",
    );
    env.python(
        "a = pa.array([1, 2000, 3, 4, -5], pa.int64())\n\
         for _ in range(40):\n\
         \x20   a = pa.ListArray.from_arrays(pa.array([0, 1, len(a)], pa.int32()), a)\n\
         pq.write_table(pa.table({'input_ids': a}), 'deep.parquet')\n\
         import pyarrow.feather as feather\n\
         feather.write_feather(pa.table({'input_ids': a}), 'deep.feather')",
    );
    for file in ["deep.parquet", "deep.feather"] {
        let r = env.check_json(&["-s", "s.yaml", file], 1);
        let (n, ex) = hits(&r, "input_ids", "index");
        assert_eq!(n, 2, "{file}");
        assert_eq!((ex[0].1, ex[0].2.clone()), (1, serde_json::json!(2000)), "{file}");
        assert_eq!((ex[1].1, ex[1].2.clone()), (1, serde_json::json!(-5)), "{file}");
        assert_eq!(
            hits(&r, "input_ids", "max_length").0,
            0,
            "{file}: the outer lists hold one element"
        );
    }
}
