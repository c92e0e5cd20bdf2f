//! `dataset: {layout: yolo}`: which `.txt` files are labels, as
//! ultralytics decides it. A label is read for an image ([`label_path`]:
//! the last `images` folder becomes `labels`), so a search keeps the `.txt`
//! files that are some met image's label, or all of them where it meets no
//! image; a dataset YAML names its splits ([`splits`]). The label files
//! themselves are read by [`crate::source::formats::yolo`].

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::discover::DataFile;
use crate::error::Error;
use crate::source::formats::yolo::{is_label_name, is_python_space, python_lines};

/// One search's `.txt` files and the labels of the images it met, decided
/// when every search is done.
#[derive(Default)]
pub(super) struct Search {
    arg: PathBuf,
    labels: Vec<PathBuf>,
    searched: Vec<PathBuf>,
}

/// The label files the searches of one run met.
#[derive(Default)]
pub(super) struct Labels {
    /// The `.txt` files of the current search.
    current: Vec<PathBuf>,
    /// The label files of the images the searches met ([`label_path`]).
    wanted: HashSet<PathBuf>,
    /// The label files of the images the current search met.
    searched: Vec<PathBuf>,
    /// Per PATH, the `.txt` files no image has.
    unlabelled: Vec<(String, Vec<PathBuf>)>,
}

impl Labels {
    /// A file a search came across: a `.txt` file, or an image whose label
    /// is wanted.
    pub(super) fn add(&mut self, p: PathBuf) {
        if is_label_name(&p) {
            self.current.push(p);
        } else if is_image_name(&p) {
            let label = label_path(&p);
            if self.wanted.insert(label.clone()) {
                self.searched.push(label);
            }
        }
    }

    /// The `.txt` files and image labels the search of `arg` that just
    /// ended met, taken for [`Labels::decide`].
    pub(super) fn search(&mut self, arg: PathBuf) -> Search {
        Search {
            arg,
            labels: std::mem::take(&mut self.current),
            searched: std::mem::take(&mut self.searched),
        }
    }

    /// `layout: yolo`: keeps the `.txt` files a search found that are the
    /// label of an image the searches met, or all of them when they met no
    /// image (label files checked on their own). A `README.txt`,
    /// `classes.txt` or image list beside a dataset, the label of a deleted
    /// image, or a Darknet `.txt` left beside an image in an `images`
    /// folder, is nothing ultralytics reads. The labels of the search's
    /// images that lie outside it (`labels/` beside a searched `images/`)
    /// are looked up and read too: ultralytics reads them.
    pub(super) fn decide(&mut self, search: Search, files: &mut Vec<DataFile>, errors: &mut Vec<Error>) {
        let Search { arg, labels, searched } = search;
        let shown = arg.to_string_lossy().into_owned();
        let arg = &arg;
        if self.wanted.is_empty() {
            files.extend(labels.into_iter().map(DataFile::new));
            return;
        }
        let met: std::collections::HashSet<&PathBuf> = labels.iter().collect();
        // Labels a search of `arg` could not have met.
        let remote = crate::source::storage::remote::is_url(arg);
        let inside = |l: &Path| {
            if remote {
                let prefix = format!("{}/", shown.trim_end_matches('/'));
                !shown.contains(['*', '?', '[']) && l.to_str().is_some_and(|u| u.starts_with(&prefix))
            } else {
                arg.is_dir() && l.starts_with(arg)
            }
        };
        let outside: Vec<PathBuf> = searched
            .into_iter()
            .filter(|l| !met.contains(l) && !inside(l))
            .collect();
        let mut skipped = Vec::new();
        for p in labels {
            if self.wanted.contains(&p) {
                files.push(DataFile::new(p));
            } else {
                skipped.push(p);
            }
        }
        let (there, missing) = existing(outside, remote);
        files.extend(there.into_iter().map(DataFile::new));
        errors.extend(missing);
        if !skipped.is_empty() {
            self.unlabelled.push((shown, skipped));
        }
    }

    /// Per PATH, the `.txt` files no image has, as notes.
    pub(super) fn notes(self) -> impl Iterator<Item = (String, String)> {
        self.unlabelled.into_iter().map(|(arg, skipped)| {
            let names: Vec<String> = skipped
                .iter()
                .take(3)
                .map(|p| p.file_name().unwrap_or_default().to_string_lossy().into_owned())
                .collect();
            (
                arg,
                format!(
                    "{} .txt file(s) skipped ({}{}): no image of the search has them as its label \
                     (ultralytics reads labels/…/x.txt for images/…/x.jpg, and x.txt beside an image only \
                     outside an images folder); name one on the command line to check it",
                    skipped.len(),
                    names.join(", "),
                    if skipped.len() > 3 { ", …" } else { "" }
                ),
            )
        })
    }
}

/// Whether `p` is a local `.yaml`/`.yml` file: with `layout: yolo`, an
/// ultralytics dataset YAML.
pub(super) fn is_dataset_yaml(p: &Path) -> bool {
    !crate::source::storage::remote::is_url(p)
        && p.extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
        && p.is_file()
}

/// Those of `paths` that exist as files: one listing per folder in storage
/// (paths outside a search's listing), a `stat` each locally.
fn existing(paths: Vec<PathBuf>, remote: bool) -> (Vec<PathBuf>, Vec<Error>) {
    if !remote {
        return (paths.into_iter().filter(|p| p.is_file()).collect(), Vec::new());
    }
    let mut by_dir: std::collections::BTreeMap<String, Vec<PathBuf>> = std::collections::BTreeMap::new();
    for p in paths {
        if let Some((dir, _)) = p.to_str().and_then(|u| u.rsplit_once('/')) {
            by_dir.entry(format!("{dir}/")).or_default().push(p);
        }
    }
    let (mut found, mut errors) = (Vec::new(), Vec::new());
    for (dir, want) in by_dir {
        match crate::source::storage::remote::list(&dir) {
            Ok(listed) => {
                let listed: std::collections::HashSet<String> = listed.into_iter().map(|(u, _)| u).collect();
                found.extend(
                    want.into_iter()
                        .filter(|p| p.to_str().is_some_and(|u| listed.contains(u))),
                );
            }
            Err(message) => errors.push(Error::Discover { path: dir, message }),
        }
    }
    (found, errors)
}

/// ultralytics' image extensions (`IMG_FORMATS`, matched lower-cased).
const IMAGE_EXTENSIONS: [&str; 13] = [
    "avif", "bmp", "dng", "heic", "heif", "jp2", "jpeg", "jpg", "mpo", "png", "tif", "tiff", "webp",
];

/// Whether ultralytics takes this file for an image of a dataset.
pub(crate) fn is_image_name(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| IMAGE_EXTENSIONS.contains(&e.to_ascii_lowercase().as_str()))
}

/// The label file ultralytics reads for `image` (`img2label_paths`,
/// ultralytics/data/utils.py): the last `images` folder of the path becomes
/// `labels` and the extension `.txt`; a path without an `images` folder
/// has its label beside it. ultralytics resolves a dataset's folders to
/// absolute paths first, so a relative path's leading `images` counts.
pub(crate) fn label_path(image: &Path) -> PathBuf {
    if let Some(url) = image.to_str().filter(|_| crate::source::storage::remote::is_url(image)) {
        // A URL keeps its `//`: replaced as a string.
        // The key: past `scheme://bucket`.
        let key = url.find("://").map_or(0, |i| {
            let bucket = i + 3;
            url[bucket..].find('/').map_or(url.len(), |j| bucket + j)
        });
        let swapped = match url[key..].rfind("/images/") {
            Some(at) => {
                let at = key + at;
                format!("{}/labels/{}", &url[..at], &url[at + "/images/".len()..])
            }
            None => url.to_string(),
        };
        let stem = match swapped.rfind('.') {
            Some(dot) if dot > swapped.rfind('/').unwrap_or(0) => &swapped[..dot],
            _ => &swapped,
        };
        return PathBuf::from(format!("{stem}.txt"));
    }
    let parts: Vec<_> = image.components().collect();
    let last = parts.len().saturating_sub(1);
    let at = parts[..last].iter().rposition(|c| c.as_os_str() == "images");
    let mut label = PathBuf::new();
    for (i, c) in parts.iter().enumerate() {
        label.push(if Some(i) == at {
            "labels".as_ref()
        } else {
            c.as_os_str()
        });
    }
    label.with_extension("txt")
}

/// A split of a dataset YAML: a folder (its images found by a search) or
/// an image list file (`images`: the images it lists).
#[derive(Debug, PartialEq)]
pub(crate) struct Split {
    /// The folder or list, as resolved.
    pub path: PathBuf,
    /// For a list: its images, ultralytics' image extensions only.
    pub images: Option<Vec<PathBuf>>,
}

/// `path` with `.` and `..` taken out as far as its own parts allow
/// (`Path.resolve()` without links).
fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out: Vec<Component> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir if matches!(out.last(), Some(Component::Normal(_))) => {
                out.pop();
            }
            Component::ParentDir if matches!(out.last(), Some(Component::RootDir | Component::Prefix(_))) => {}
            c => out.push(c),
        }
    }
    if out.is_empty() {
        return PathBuf::from(".");
    }
    out.iter().collect()
}

/// The splits (`train`, `val`, `test`, `minival`) of an ultralytics dataset
/// YAML, resolved as `check_det_dataset` resolves them: against `path`
/// (else the YAML's folder), a missing `../x` tried as `x`; each a folder or
/// an image list (`BaseDataset.get_img_files`: one path a line, `./` from
/// the list's folder, other relative ones from the working directory).
pub(crate) fn splits(yaml: &Path) -> Result<Vec<Split>, String> {
    let text = std::fs::read_to_string(yaml).map_err(|e| e.to_string())?;
    let data: serde_json::Value = serde_saphyr::from_str(&text).map_err(|e| format!("not a YOLO dataset YAML: {e}"))?;
    let truthy = |v: &serde_json::Value| match v {
        serde_json::Value::Null => false,
        serde_json::Value::Bool(b) => *b,
        serde_json::Value::String(s) => !s.is_empty(),
        serde_json::Value::Array(a) => !a.is_empty(),
        serde_json::Value::Object(o) => !o.is_empty(),
        serde_json::Value::Number(n) => n.as_f64() != Some(0.0),
    };
    let root = match data.get("path").filter(|v| truthy(v)) {
        Some(serde_json::Value::String(p)) => {
            let p = PathBuf::from(p);
            if !p.exists() && !p.is_absolute() {
                return Err(format!(
                    "`path: {}` does not exist here (ultralytics would look for it in its datasets_dir setting)",
                    p.display()
                ));
            }
            p
        }
        Some(v) => return Err(format!("`path: {v}` is not a folder name")),
        None => yaml.parent().map(Path::to_path_buf).unwrap_or_default(),
    };
    let mut out = Vec::new();
    for key in ["train", "val", "test", "minival"] {
        let Some(v) = data.get(key).filter(|v| truthy(v)) else {
            continue;
        };
        let entries: Vec<PathBuf> = match v {
            serde_json::Value::String(x) => {
                let mut p = normalize(&root.join(x));
                if !p.exists()
                    && let Some(rest) = x.strip_prefix("../")
                {
                    p = normalize(&root.join(rest));
                }
                vec![p]
            }
            serde_json::Value::Array(xs) => xs
                .iter()
                .map(|x| match x {
                    serde_json::Value::String(x) => Ok(normalize(&root.join(x))),
                    x => Err(format!("`{key}` lists {x}, not a path")),
                })
                .collect::<Result<_, _>>()?,
            v => return Err(format!("`{key}: {v}` is not a path or a list of paths")),
        };
        for p in entries {
            if p.is_dir() {
                out.push(Split { path: p, images: None });
            } else if p.is_file() {
                let images = image_list(&p)?;
                out.push(Split {
                    path: p,
                    images: Some(images),
                });
            } else {
                return Err(format!("`{key}`: {} does not exist", p.display()));
            }
        }
    }
    if out.is_empty() {
        return Err("no train, val or test split".into());
    }
    Ok(out)
}

/// The class names of an ultralytics dataset YAML (`names`: a list, or a
/// mapping from index to name as `check_class_names` reads it), in index
/// order; `None` without names.
pub(crate) fn names(yaml: &Path) -> Option<Vec<Option<String>>> {
    let text = std::fs::read_to_string(yaml).ok()?;
    let data: serde_json::Value = serde_saphyr::from_str(&text).ok()?;
    let name = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => Some(s.clone()),
        serde_json::Value::Null => None,
        other => Some(other.to_string()),
    };
    match data.get("names")? {
        serde_json::Value::Array(list) => Some(list.iter().map(name).collect()),
        serde_json::Value::Object(map) => {
            let mut out = vec![None; map.len()];
            for (k, v) in map {
                *out.get_mut(k.trim().parse::<usize>().ok()?)? = name(v);
            }
            Some(out)
        }
        _ => None,
    }
}

/// The images of an image list file, as `get_img_files` reads it.
fn image_list(list: &Path) -> Result<Vec<PathBuf>, String> {
    let bytes = std::fs::read(list).map_err(|e| format!("{}: {e}", list.display()))?;
    let text = std::str::from_utf8(&bytes).map_err(|e| format!("{}: not UTF-8 ({e})", list.display()))?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Python's `str(p.parent) + os.sep`: `./` for a list in the working directory.
    let dir = list
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let parent = format!("{}/", dir.display());
    Ok(python_lines(text.trim_matches(is_python_space))
        .map(|x| match x.strip_prefix("./") {
            Some(rest) => format!("{parent}{rest}"),
            None => x.to_string(),
        })
        .filter(|x| {
            x.rsplit_once('.')
                .is_some_and(|(_, e)| IMAGE_EXTENSIONS.contains(&e.to_lowercase().as_str()))
        })
        .map(PathBuf::from)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Image paths (absolute, as `check_det_dataset` resolves a dataset's
    /// folders), mapped by ultralytics' own `img2label_paths` below.
    const IMAGES: &[&str] = &[
        "/d/images/train/a.jpg",
        "/d/images/train/sub/images/b.png",
        "/d/labels/run/images/c.JPG",
        "/d/images/labels/d.jpeg",
        "/d/Images/e.jpg",
        "/d/flat/f.webp",
        "/d/images/g.v1.tif",
        "/d/images.old/h.bmp",
        "/d/my_images/i.png",
        "/images/j.png",
        "/d/images/images/k.png",
        "/d/imagesx/images/l.png",
        "/d/images/train/m.tar.jpg",
    ];

    #[test]
    fn label_paths_and_image_names_are_ultralytics_own() {
        let script = concat!(
            include_str!("../../../tests/oracles/ultralytics_labels.py"),
            "\nimport json, sys\nprint(json.dumps([img2label_paths(json.load(sys.stdin)), sorted(IMG_FORMATS)]))\n"
        );
        use std::io::Write;
        let mut child = std::process::Command::new(crate::source::test_python())
            .args(["-c", script])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("python");
        let input = serde_json::to_vec(IMAGES).expect("json");
        child.stdin.take().expect("stdin").write_all(&input).expect("write");
        let out = child.wait_with_output().expect("python");
        assert!(out.status.success());
        let (labels, formats): (Vec<String>, Vec<String>) = serde_json::from_slice(&out.stdout).expect("labels");
        for (image, want) in IMAGES.iter().zip(&labels) {
            assert_eq!(label_path(Path::new(image)), PathBuf::from(want), "{image}");
            // Relative paths (a PATH as typed) and URLs map the same way.
            let relative = image.trim_start_matches('/');
            assert_eq!(
                label_path(Path::new(relative)),
                PathBuf::from(want.trim_start_matches('/')),
                "{image}"
            );
            let url = format!("s3://bkt{image}");
            assert_eq!(
                label_path(Path::new(&url)),
                PathBuf::from(format!("s3://bkt{want}")),
                "{url}"
            );
        }
        let mut ours: Vec<&str> = IMAGE_EXTENSIONS.to_vec();
        ours.sort_unstable();
        assert_eq!(ours, formats);
        assert!(is_image_name(Path::new("a.JPG")) && !is_image_name(Path::new("a.gif")));
        // A bucket named `images` is no folder.
        assert_eq!(
            label_path(Path::new("s3://images/x.jpg")),
            PathBuf::from("s3://images/x.txt")
        );
    }
}
