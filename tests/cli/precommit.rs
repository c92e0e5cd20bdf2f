//! The pre-commit hooks end to end: the real `pre-commit` (from the test
//! venv) installs a hook of this repository's `.pre-commit-hooks.yaml` into
//! a throwaway data repository, and real `git commit`s are refused or
//! accepted. `preflight` (`language: rust`): `cargo install` builds it from
//! a snapshot of this working tree. `preflight-python` (`language:
//! python`): the same entry as a `repo: local` hook whose
//! `additional_dependencies` is the wheel this test run built
//! (python/tests/wheel.sh), installed and run with no Rust toolchain on
//! PATH.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::util::{Env, python_bin};

fn git(dir: &Path, args: &[&str]) -> Output {
    Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .output()
        .expect("run git")
}

fn ok(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A git repository holding this working tree as it is now (tracked and
/// untracked files that git does not ignore), so the hook under test is the
/// code under test, committed or not. Returns its commit.
fn snapshot(into: &Path) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let listed = ok(
        git(root, &["ls-files", "-z", "--cached", "--others", "--exclude-standard"]),
        "git ls-files",
    );
    std::fs::create_dir_all(into).expect("mkdir");
    for rel in listed.split('\0').filter(|s| !s.is_empty()) {
        let from = root.join(rel);
        if !from.is_file() {
            continue; // deleted in the working tree
        }
        let to = into.join(rel);
        std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
        std::fs::copy(&from, &to).expect("copy");
    }
    ok(git(into, &["init", "-q"]), "git init");
    ok(git(into, &["add", "-A"]), "git add");
    ok(git(into, &["commit", "-q", "-m", "snapshot"]), "git commit");
    ok(git(into, &["rev-parse", "HEAD"]), "git rev-parse")
        .trim()
        .to_string()
}

/// A data repository with pre-commit installed from `config` (with
/// `extra_env` for pre-commit and the commits): a commit of clean files of
/// three formats is accepted, one adding a bad file is refused with the
/// human report, and an unstaged bad file is never checked.
fn commits_are_gated(env: &Env, config: &str, path: &str, extra_env: &[(&str, &std::ffi::OsStr)]) {
    let data = env.path("data");
    std::fs::create_dir_all(&data).expect("mkdir");
    ok(git(&data, &["init", "-q"]), "git init");
    env.write("data/.pre-commit-config.yaml", config);
    env.write(
        "data/preflight.yaml",
        "columns:\n  label: {kind: class, num_classes: 3}\n",
    );
    env.write("data/train.csv", "label\n0\n1\n2\n");
    env.python(
        "pq.write_table(pa.table({'label': pa.array([0, 1, 2, 1], pa.int64())}), 'data/train.parquet')\n\
         np.save('data/label.npy', np.array([0, 2, 2], dtype=np.int64))",
    );
    // Unstaged, bad, and never part of a commit: must not be checked.
    env.write("data/scratch.csv", "label\n9\n");

    let venv_bin = python_bin().parent().expect("venv bin").to_path_buf();
    let pre_commit = |dir: &Path, args: &[&str]| -> Output {
        Command::new(venv_bin.join("pre-commit"))
            .args(args)
            .current_dir(dir)
            .env("PATH", path)
            .env("PRE_COMMIT_HOME", env.path("pre-commit-home"))
            .envs(extra_env.iter().copied())
            .output()
            .expect("run pre-commit")
    };
    ok(pre_commit(&data, &["install"]), "pre-commit install");
    // Build the hook's environment outside the commit.
    ok(pre_commit(&data, &["install-hooks"]), "pre-commit install-hooks");

    let commit = |message: &str| -> Output {
        Command::new("git")
            .args(["commit", "-m", message])
            .current_dir(&data)
            .env("PATH", path)
            .env("PRE_COMMIT_HOME", env.path("pre-commit-home"))
            .envs(extra_env.iter().copied())
            .env("GIT_AUTHOR_NAME", "test")
            .env("GIT_AUTHOR_EMAIL", "test@example.com")
            .env("GIT_COMMITTER_NAME", "test")
            .env("GIT_COMMITTER_EMAIL", "test@example.com")
            .output()
            .expect("git commit")
    };

    ok(
        git(
            &data,
            &[
                "add",
                ".pre-commit-config.yaml",
                "preflight.yaml",
                "train.csv",
                "train.parquet",
                "label.npy",
            ],
        ),
        "git add",
    );
    let clean = commit("clean data");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&clean.stdout),
        String::from_utf8_lossy(&clean.stderr)
    );
    assert!(clean.status.success(), "a clean commit is accepted:\n{said}");
    assert!(
        said.contains("preflight (training data)") && said.contains("Passed"),
        "{said}"
    );
    assert!(said.contains("ok: every rule holds: 3 files, 10 rows"), "{said}");

    env.write("data/bad.csv", "label\n0\n3\n1\n-1\n");
    ok(git(&data, &["add", "bad.csv"]), "git add");
    let head = ok(git(&data, &["rev-parse", "HEAD"]), "rev-parse");
    let refused = commit("bad data");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(!refused.status.success(), "a commit with bad data is refused:\n{said}");
    assert!(said.contains("Failed"), "{said}");
    assert!(
        said.contains("error[class]: column `label`: 2 values violate"),
        "{said}"
    );
    assert!(
        said.contains("--> bad.csv:1: 3") && said.contains("--> bad.csv:3: -1"),
        "{said}"
    );
    assert!(!said.contains("scratch.csv"), "only staged files are checked:\n{said}");
    assert_eq!(
        ok(git(&data, &["rev-parse", "HEAD"]), "rev-parse"),
        head,
        "nothing was committed"
    );
}

/// PATH with the test venv first (pre-commit, git's hook script).
fn venv_path() -> String {
    let venv_bin = python_bin().parent().expect("venv bin").to_path_buf();
    format!("{}:{}", venv_bin.display(), std::env::var("PATH").unwrap_or_default())
}

#[test]
fn hook_refuses_a_commit_with_bad_data_and_accepts_clean_data() {
    let env = Env::new();
    let hook_repo = env.path("hook-repo");
    let rev = snapshot(&hook_repo);
    let config = format!(
        "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: preflight\n        verbose: true\n",
        hook_repo.display()
    );
    // Dependencies built once are reused across runs of this test; the
    // release profile is lightened (no LTO, opt-level 0) to keep CI quick:
    // the test is about the hook, not the binary's speed.
    let cargo_target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/pre-commit-build");
    let cargo_env: [(&str, &std::ffi::OsStr); 5] = [
        ("CARGO_TARGET_DIR", cargo_target.as_os_str()),
        ("CARGO_PROFILE_RELEASE_LTO", "false".as_ref()),
        ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "0".as_ref()),
        ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "256".as_ref()),
        ("CARGO_PROFILE_RELEASE_DEBUG", "false".as_ref()),
    ];
    commits_are_gated(&env, &config, &venv_path(), &cargo_env);
}

/// The wheel this test run built: `PREFLIGHT_TEST_WHEEL` (run-tests.sh),
/// else the one in target/wheel/dist.
fn wheel() -> PathBuf {
    if let Ok(p) = std::env::var("PREFLIGHT_TEST_WHEEL") {
        return p.into();
    }
    let dist = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/wheel/dist");
    let found: Vec<PathBuf> = std::fs::read_dir(&dist)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    let wheels: Vec<&PathBuf> = found
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "whl"))
        .collect();
    assert!(
        wheels.len() == 1,
        "this test installs the wheel: run ./run-tests.sh, or python/tests/wheel.sh build (found {wheels:?} in {})",
        dist.display()
    );
    wheels[0].clone()
}

#[test]
fn python_hook_runs_the_wheel_without_a_rust_toolchain() {
    let env = Env::new();
    // The manifest's `preflight-python` entry, as a `repo: local` hook
    // that installs the wheel: what the README tells a data repository to
    // write (pre-commit would `pip install` a remote hook repository, and
    // so compile it). JSON is YAML.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join(".pre-commit-hooks.yaml")).expect("read manifest");
    let hooks: Vec<serde_json::Value> = serde_saphyr::from_str(&manifest).expect("manifest is YAML");
    let mut hook = hooks
        .into_iter()
        .find(|h| h["id"] == "preflight-python")
        .expect("a preflight-python hook");
    assert_eq!(hook["language"], "python");
    hook["additional_dependencies"] = serde_json::json!([wheel().display().to_string()]);
    hook["verbose"] = true.into();
    let config = serde_json::json!({"repos": [{"repo": "local", "hooks": [hook]}]}).to_string();
    // No cargo or rustc on PATH: nothing may compile.
    let path = std::env::split_paths(&venv_path())
        .filter(|d| !d.join("cargo").exists() && !d.join("rustc").exists())
        .map(|d| d.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    commits_are_gated(&env, &config, &path, &[]);
}
