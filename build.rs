//! Build information for `preflight --version`: the git commit the crate is
//! built from (`git rev-parse`, else the `PREFLIGHT_GIT_COMMIT` variable,
//! else nothing: a build from an sdist or a crate has no repository) and
//! the enabled cargo features. Never fails the build.

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).current_dir(dir).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

fn main() {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_default();
    println!("cargo:rerun-if-env-changed=PREFLIGHT_GIT_COMMIT");
    // Only a repository whose top level is this crate's folder: a crate
    // unpacked inside some other repository is not built from its commits.
    let top = git(&dir, &["rev-parse", "--show-toplevel"]).map(std::path::PathBuf::from);
    let ours = top.is_some_and(|t| t.canonicalize().ok() == dir.canonicalize().ok());
    let commit = if ours {
        // Rebuild when HEAD moves (a commit, a checkout). Only paths that
        // exist: a missing one would rerun this script on every build.
        for rel in ["HEAD", "packed-refs"] {
            if let Some(p) = git(&dir, &["rev-parse", "--git-path", rel]) {
                let p = dir.join(p);
                if p.exists() {
                    println!("cargo:rerun-if-changed={}", p.display());
                }
            }
        }
        // The branch's ref, or while it is only in packed-refs the folder
        // where the next commit writes it.
        if let Some(head) = git(&dir, &["symbolic-ref", "-q", "HEAD"])
            && let Some(p) = git(&dir, &["rev-parse", "--git-path", &head])
            && let Some(p) = dir.join(p).ancestors().find(|p| p.exists())
        {
            println!("cargo:rerun-if-changed={}", p.display());
        }
        git(&dir, &["rev-parse", "--short=12", "HEAD"])
    } else {
        None
    }
    .or_else(|| {
        // As git's short form: CI variables hold all 40 digits.
        let c = std::env::var("PREFLIGHT_GIT_COMMIT").ok()?;
        let c = c.trim();
        let hex = c.len() > 12 && c.bytes().all(|b| b.is_ascii_hexdigit());
        (!c.is_empty()).then(|| if hex { c[..12].to_string() } else { c.to_string() })
    });
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_")
                .map(|f| f.to_lowercase().replace('_', "-"))
        })
        .filter(|f| f != "default")
        .collect();
    features.sort();
    let features = if features.is_empty() {
        "none".to_string()
    } else {
        features.join(", ")
    };
    let info = match commit {
        Some(c) => format!("commit {}, features: {features}", c.trim()),
        None => format!("features: {features}"),
    };
    println!("cargo:rustc-env=PREFLIGHT_BUILD_INFO={info}");
}
