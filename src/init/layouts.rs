//! `preflight init` for the label layouts: a schema proposed from an image
//! folder (the class count is its folder count), YOLO label files (`nc` of
//! the `data.yaml` beside them) or COCO files (the categories), with the
//! traps flagged in comments: a hidden class folder that torchvision counts,
//! and COCO's ids that start at 1 and skip (1..90 for 80 classes).
//!
//! Tables (Parquet, CSV, ...) are profiled by `init` itself; this module
//! answers only when every PATH is one of these layouts.

use std::fmt::Write;
use std::path::{Path, PathBuf};

use crate::source::formats::text::coco::{CocoSource, is_coco};
use crate::source::formats::yolo::is_label_name;
use crate::source::layouts::image_folder;

/// The proposed schema when every PATH is an image folder, a YOLO label
/// tree or COCO files, with the paths its `dataset.files` lists (the COCO
/// files; else the PATHs); `None` when they are not (init profiles tables).
pub(crate) fn propose(paths: &[PathBuf], schema_dir: &Path) -> Option<Result<(String, Vec<PathBuf>), String>> {
    if paths.is_empty() {
        return None;
    }
    let coco: Vec<PathBuf> = paths.iter().flat_map(|p| coco_files(p)).collect();
    if !coco.is_empty() {
        return Some(propose_coco(&coco).map(|text| (text, coco)));
    }
    if paths.iter().all(|p| p.is_dir()) {
        if let Some(data) = paths.iter().find_map(|p| yolo_data(p)) {
            return Some(Ok((propose_yolo(&data, schema_dir), paths.to_vec())));
        }
        let listings: Vec<image_folder::Listing> = paths
            .iter()
            .map(|p| image_folder::list(p, &p.to_string_lossy()))
            .collect();
        let plain = crate::source::layouts::discover::discover(paths, &Default::default()).files;
        if plain.is_empty() && listings.iter().all(|l| !l.files.is_empty()) {
            return Some(Ok((propose_folder(&listings), paths.to_vec())));
        }
    }
    None
}

/// COCO files a PATH names or holds (its top level).
fn coco_files(p: &Path) -> Vec<PathBuf> {
    let json = |q: &Path| q.extension().is_some_and(|e| e.eq_ignore_ascii_case("json")) && is_coco(q);
    if p.is_file() {
        return if json(p) { vec![p.to_path_buf()] } else { vec![] };
    }
    let mut found: Vec<PathBuf> = std::fs::read_dir(p)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|q| q.is_file() && json(q))
        .collect();
    found.sort();
    found
}

/// The `data.yaml` of a YOLO tree: in the PATH or its parent, when the PATH
/// holds `.txt` label files in a `labels` folder (ultralytics' layout).
fn yolo_data(p: &Path) -> Option<PathBuf> {
    let has_labels = walkdir::WalkDir::new(p).into_iter().flatten().any(|e| {
        e.file_type().is_file()
            && is_label_name(e.path())
            && e.path()
                .strip_prefix(p)
                .is_ok_and(|r| r.components().any(|c| c.as_os_str() == "labels"))
    });
    if !has_labels {
        return None;
    }
    [p.join("data.yaml"), p.join("../data.yaml")]
        .into_iter()
        .find(|d| d.is_file())
}

fn propose_folder(listings: &[image_folder::Listing]) -> String {
    let first = &listings[0];
    let n = first.classes.len();
    let mut out = String::from(
        "version: 1\ndataset:\n  layout: image_folder  # torchvision ImageFolder: a class per subfolder\ncolumns:\n  label:\n    kind: class\n",
    );
    let names: Vec<&str> = first.classes.iter().take(10).map(String::as_str).collect();
    let more = if n > 10 { ", ..." } else { "" };
    let _ = writeln!(
        out,
        "    num_classes: {n}  # class folders of {}: {}{more}",
        first.root,
        names.join(", ")
    );
    for (i, c) in first.classes.iter().enumerate() {
        if c.starts_with('.') || c.starts_with("__") {
            let _ = writeln!(
                out,
                "    # CHECK: `{c}` is class {i}: torchvision counts this folder as a class; timm and HF imagefolder skip it. Delete it, or num_classes is one too many for the model"
            );
        }
    }
    for l in &listings[1..] {
        if l.classes != first.classes {
            let _ = writeln!(
                out,
                "    # CHECK: {} has {} class folders, {} has {n}: the splits number their classes differently",
                l.root,
                l.classes.len(),
                first.root
            );
        }
    }
    out.push_str("    ignore_index: null\n");
    out
}

fn propose_yolo(data: &Path, schema_dir: &Path) -> String {
    let rel = pathdiff(data, schema_dir);
    let mut out =
        String::from("version: 1\ndataset:\n  layout: yolo  # the .txt label files of the images under the PATHs\n");
    #[derive(serde::Deserialize)]
    struct Pose {
        kpt_shape: Option<Vec<serde_json::Value>>,
    }
    let pose = std::fs::read_to_string(data)
        .ok()
        .and_then(|t| serde_saphyr::from_str::<Pose>(&t).ok())
        .and_then(|p| p.kpt_shape);
    if let Some([k, d]) = pose.as_deref() {
        let _ = writeln!(out, "  kpt_shape: [{k}, {d}]  # pose labels, as {rel} says");
    }
    out.push_str("columns:\n  class:\n    kind: class\n");
    let _ = writeln!(
        out,
        "    num_classes: {{yolo_data: {rel}}}  # nc (or the number of names)"
    );
    out.push_str("    ignore_index: null\n");
    // verify_image_label: values down to -0.01 when no box has a negative
    // size; box coordinates at most 1.01 (a pose label bounds its keypoints
    // instead).
    for (c, min) in [("x", "-0.01"), ("y", "-0.01"), ("w", "0"), ("h", "0")] {
        let _ = write!(
            out,
            "  {c}:\n    kind: range  # normalised, as ultralytics checks\n    min: {min}\n"
        );
        if pose.is_none() {
            out.push_str("    max: 1.01\n");
        }
    }
    out
}

fn propose_coco(files: &[PathBuf]) -> Result<String, String> {
    let mut count = 0usize;
    let mut max_id: Option<i128> = None;
    for f in files {
        let src = CocoSource::open_with(f, &|_| None, None).map_err(|e| format!("{}: {e}", f.display()))?;
        count = count.max(src.category_count());
        max_id = max_id.max(src.max_category_id());
    }
    let max_id = max_id.ok_or_else(|| format!("{}: no categories", files[0].display()))?;
    let mut out = String::from("version: 1\ncolumns:\n  category_id:\n    kind: class\n");
    if max_id + 1 == count as i128 {
        let _ = writeln!(
            out,
            "    num_classes: {count}  # {count} categories with ids 0..{}",
            count - 1
        );
    } else {
        let _ = writeln!(
            out,
            "    num_classes: {}  # raw ids (torchvision): the largest id {max_id} + 1",
            max_id + 1
        );
        let _ = writeln!(
            out,
            "    # CHECK: {count} categories with ids up to {max_id} (1-based and with gaps, as COCO's 1..90 for 80 classes). detectron2 / mmdetection map ids to 0..{}: for them write num_classes: {count} and coco_mapping: contiguous (or {{by_name: [...]}})",
            count.saturating_sub(1)
        );
    }
    out.push_str("    ignore_index: null\n");
    Ok(out)
}

/// `target` relative to `base` when it lies below it, else as given.
fn pathdiff(target: &Path, base: &Path) -> String {
    let t = target.canonicalize().unwrap_or_else(|_| target.to_path_buf());
    let base = if base.as_os_str().is_empty() {
        Path::new(".")
    } else {
        base
    };
    let b = base.canonicalize().unwrap_or_else(|_| base.to_path_buf());
    t.strip_prefix(&b)
        .map(|r| r.to_string_lossy().into_owned())
        .unwrap_or_else(|_| t.to_string_lossy().into_owned())
}
