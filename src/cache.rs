//! A result cache for repeated gates (`check --cache DIR`): each file's
//! partial result, kept under the identity of the file and of the check,
//! so that a rerun over unchanged files reads none of their data.
//!
//! Why an identity this wide (docs/src/cli.md lists it): a stale pass is a
//! gate that lies, so a file counts as unchanged only when no ordinary write
//! could have kept all of it; a miss merely costs a read. Entries are
//! mergeable partials, so cached and fresh files merge into exactly the
//! report of one scan.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use twox_hash::XxHash3_128;

use crate::check::Validator;
use crate::report::Partial;
use crate::scan::{self, ScanOptions};
use crate::source::layouts::discover::DataFile;

/// Bytes hashed at each end of a file.
const EDGE: u64 = 64 << 10;

/// How a cached scan went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct CacheStats {
    /// Files whose result came from the cache.
    pub hits: usize,
    /// Files checked.
    pub misses: usize,
}

/// Checks `files` through the cache at `dir`: hits are read back, misses
/// checked (in parallel, each file as one scan) and kept.
pub(crate) fn scan_cached(validator: &Validator, files: &[DataFile], opts: &ScanOptions, dir: &Path) -> Partial {
    scan_cached_stats(validator, files, opts, dir).0
}

/// [`scan_cached`], with how many files came from the cache.
pub(crate) fn scan_cached_stats(
    validator: &Validator,
    files: &[DataFile],
    opts: &ScanOptions,
    dir: &Path,
) -> (Partial, CacheStats) {
    let folder = dir.join(check_key(validator, opts));
    let _ = std::fs::create_dir_all(&folder);
    let pool = rayon::ThreadPoolBuilder::new().num_threads(opts.jobs).build();
    let run = || {
        files
            .par_iter()
            .map(|f| {
                // A paired mask's result also depends on its image's size
                // (or on the image's absence): part of the key.
                let pair = opts
                    .pairing
                    .as_ref()
                    .map(|p| p.identity(&f.display))
                    .unwrap_or_default();
                let entry = file_key(f).map(|k| {
                    let k = if pair.is_empty() {
                        k
                    } else {
                        format!("{:032x}", XxHash3_128::oneshot(format!("{k}\n{pair}").as_bytes()))
                    };
                    folder.join(format!("{k}.json"))
                });
                if let Some(hit) = entry.as_deref().and_then(|e| read_entry(e, validator)) {
                    return (hit, true);
                }
                let partial = scan::scan_in_current_pool(validator, std::slice::from_ref(f), &[None], opts);
                if let Some(entry) = entry
                    && partial.errors.is_empty()
                    && !scan::CANCELLED.load(std::sync::atomic::Ordering::SeqCst)
                {
                    write_entry(&entry, &partial, validator);
                }
                (partial, false)
            })
            .collect::<Vec<(Partial, bool)>>()
    };
    let parts = match pool {
        Ok(pool) => pool.install(run),
        Err(_) => run(),
    };
    let mut all = validator.partial();
    let mut stats = CacheStats::default();
    for (p, hit) in parts {
        if hit {
            stats.hits += 1;
        } else {
            stats.misses += 1;
        }
        all.merge(p);
    }
    (all, stats)
}

/// The folder of a check's identity.
fn check_key(validator: &Validator, opts: &ScanOptions) -> String {
    // The model's label names judge files too, and the resolved schema
    // does not show them.
    let labels: Vec<String> = validator
        .schema()
        .columns
        .iter()
        .map(|c| format!("{:?}", c.model_labels))
        .collect();
    let identity = format!(
        "{}\n{}\n{}\n{}\n{}",
        env!("CARGO_PKG_VERSION"),
        validator.max_examples(),
        opts.full_scan,
        validator.schema().to_resolved_yaml(),
        labels.join("\n")
    );
    format!("{:032x}", XxHash3_128::oneshot(identity.as_bytes()))
}

/// A file's identity as a key, or `None` when it cannot be read (it is then
/// checked, and its error reported, every time).
fn file_key(f: &DataFile) -> Option<String> {
    // A table's data file: its deleted rows and partition values live in
    // the table's log, not in the file; read each time.
    if f.opens.is_some() {
        return None;
    }
    let meta = std::fs::metadata(&f.path).ok()?;
    if !meta.is_file() {
        return None;
    }
    // A `datasets` index mapping's rows live in other files: read each time.
    if f.label.is_none() && crate::source::formats::ipc::datasets::is_mapping(&f.path, &[]) {
        return None;
    }
    let canonical = f.path.canonicalize().ok()?;
    let mut file = File::open(&f.path).ok()?;
    let len = meta.len();
    let mut edges = Vec::with_capacity((2 * EDGE).min(len) as usize);
    file.by_ref().take(EDGE).read_to_end(&mut edges).ok()?;
    if len > EDGE {
        file.seek(SeekFrom::Start(len.saturating_sub(EDGE).max(EDGE))).ok()?;
        file.take(EDGE).read_to_end(&mut edges).ok()?;
    }
    // An image folder's row depends on the tree (its class), not the bytes.
    let identity = format!(
        "{}{}\n{}\n{} {} {} {}.{} {}.{}\n{:032x}",
        f.label
            .as_ref()
            .map(|l| format!("{} {}\n", l.index, l.class))
            .unwrap_or_default(),
        f.display,
        canonical.display(),
        meta.dev(),
        meta.ino(),
        len,
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ctime(),
        meta.ctime_nsec(),
        XxHash3_128::oneshot(&edges)
    );
    Some(format!("{:032x}", XxHash3_128::oneshot(identity.as_bytes())))
}

fn read_entry(path: &Path, validator: &Validator) -> Option<Partial> {
    let text = std::fs::read(path).ok()?;
    let doc: serde_json::Value = serde_json::from_slice(&text).ok()?;
    Partial::from_json_for(&doc, validator).ok()
}

fn write_entry(path: &Path, partial: &Partial, validator: &Validator) {
    let Ok(text) = serde_json::to_vec(&partial.to_json(validator)) else {
        return;
    };
    let tmp: PathBuf = path.with_extension(format!("tmp-{}", std::process::id()));
    if std::fs::write(&tmp, text).is_ok() && std::fs::rename(&tmp, path).is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Schema;
    use crate::source::layouts::discover::discover;

    fn run(dir: &Path, cache: &Path, schema: &str) -> (String, CacheStats) {
        let schema = Schema::from_yaml(schema, &dir.join("s.yaml")).unwrap();
        let validator = Validator::new(schema, 5);
        let files = discover(&[dir.join("data")], &Default::default()).files;
        let opts = ScanOptions::default();
        let (partial, stats) = scan_cached_stats(&validator, &files, &opts, cache);
        let cached = crate::report::json::render(&partial.report(&validator));
        let plain = crate::report::json::render(&scan::scan(&validator, &files, &opts).report(&validator));
        assert_eq!(cached, plain, "the cache gives the report of one scan");
        (cached, stats)
    }

    const SCHEMA: &str = "version: 1\ncolumns:\n  label: {kind: class, num_classes: 3}\n";

    #[test]
    fn unchanged_files_come_from_the_cache_and_changed_ones_never_do() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let cache = dir.path().join("cache");
        // Big enough that an edit in the middle is outside the hashed edges.
        let body = |bad: usize| {
            let mut s = String::from("label\n");
            for i in 0..100_000 {
                s.push_str(if i == bad { "7\n" } else { "1\n" });
            }
            s
        };
        std::fs::write(data.join("a.csv"), body(usize::MAX)).unwrap();
        std::fs::write(data.join("b.csv"), body(50_000)).unwrap();
        std::fs::write(data.join("c.csv"), body(10)).unwrap();
        let (first, s) = run(dir.path(), &cache, SCHEMA);
        assert_eq!(s, CacheStats { hits: 0, misses: 3 });
        let (again, s) = run(dir.path(), &cache, SCHEMA);
        assert_eq!(s, CacheStats { hits: 3, misses: 0 });
        assert_eq!(again, first);

        // An edit in place in the middle, same size, the modification time
        // set back: the status change time still moves, so it is checked.
        let a = data.join("a.csv");
        let mtime = std::fs::metadata(&a).unwrap().modified().unwrap();
        let mut bytes = std::fs::read(&a).unwrap();
        let mid = (bytes.len() / 2) & !1;
        bytes[mid] = b'9';
        std::fs::write(&a, &bytes).unwrap();
        File::options()
            .write(true)
            .open(&a)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let (edited, s) = run(dir.path(), &cache, SCHEMA);
        assert_eq!(s, CacheStats { hits: 2, misses: 1 });
        assert_ne!(edited, first);
        assert!(edited.contains("\"file\": \"") && edited.contains("a.csv"));

        // Two files swap contents: both are checked again.
        let (b, c, t) = (data.join("b.csv"), data.join("c.csv"), data.join("t.tmp"));
        std::fs::rename(&b, &t).unwrap();
        std::fs::rename(&c, &b).unwrap();
        std::fs::rename(&t, &c).unwrap();
        let (swapped, s) = run(dir.path(), &cache, SCHEMA);
        assert_eq!(s, CacheStats { hits: 1, misses: 2 });
        assert!(swapped.find("\"row\": 10").is_some());

        // Another schema is another check: nothing from the cache.
        let (_, s) = run(
            dir.path(),
            &cache,
            "version: 1\ncolumns:\n  label: {kind: class, num_classes: 8}\n",
        );
        assert_eq!(s, CacheStats { hits: 0, misses: 3 });

        // A damaged entry is a miss, and is replaced.
        for e in std::fs::read_dir(&cache)
            .unwrap()
            .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        {
            std::fs::write(e.unwrap().path(), b"{not json").unwrap();
        }
        let (_, s) = run(dir.path(), &cache, SCHEMA);
        assert_eq!(s, CacheStats { hits: 0, misses: 3 });
        let (_, s) = run(dir.path(), &cache, SCHEMA);
        assert_eq!(s, CacheStats { hits: 3, misses: 0 });
    }

    #[test]
    fn the_models_label_names_are_part_of_the_check() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        std::fs::create_dir(dir.path().join("model")).unwrap();
        std::fs::write(dir.path().join("data/a.csv"), "label\n0\n1\n").unwrap();
        let config = |names: &str| std::fs::write(dir.path().join("model/config.json"), names).unwrap();
        let cache = dir.path().join("cache");
        let schema = "version: 1\ncolumns:\n  label: {kind: class, num_classes: {hf_config: model, key: num_labels}}\n";
        config(r#"{"id2label": {"0": "neg", "1": "pos"}}"#);
        assert_eq!(run(dir.path(), &cache, schema).1, CacheStats { hits: 0, misses: 1 });
        assert_eq!(run(dir.path(), &cache, schema).1, CacheStats { hits: 1, misses: 0 });
        // The same count in another order: the resolved schema is the same,
        // the check is not.
        config(r#"{"id2label": {"0": "pos", "1": "neg"}}"#);
        assert_eq!(run(dir.path(), &cache, schema).1, CacheStats { hits: 0, misses: 1 });
    }
}
