//! `dataset.splits`: each split is checked, its classes counted
//! (`class_counts`), and the splits compared: label names that differ
//! between splits are errors, classes only another split has and classes
//! without a sample are warnings. The readers decide what is right:
//! torchvision's `find_classes`/`make_dataset` for image folders, pyarrow
//! for Parquet labels, `datasets`' `ClassLabel` for their names, the
//! annotation files for COCO.

use serde_json::json;

use preflight::Plan;
use preflight::ScanOptions;

use crate::util::{Env, merged_from_workers, messages, read_json, relative_units};

/// Image folders whose validation split lacks a class folder: torchvision
/// numbers each split on its own, so `c` is class 1 in val and 2 in train.
const FOLDERS: &str = r#"
from PIL import Image
from collections import Counter
layout = {"train": {"a": 3, "b": 2, "c": 1}, "val": {"a": 1, "c": 2}, "test": {"a": 1, "b": 1, "c": 1},
          "val_ok": {"a": 2, "b": 1, "c": 1}}
for split, classes in layout.items():
    for c, n in classes.items():
        os.makedirs(f"f/{split}/{c}", exist_ok=True)
        for i in range(n):
            Image.new("L", (2, 2)).save(f"f/{split}/{c}/{i}.png")
out = {}
for split in layout:
    classes, to_idx = find_classes(f"f/{split}")
    samples = make_dataset(f"f/{split}", to_idx, extensions=IMG_EXTENSIONS)
    counts = Counter(t for _, t in samples)
    out[split] = {"classes": classes, "counts": {str(i): counts.get(i, 0) for i in range(3)}}
json.dump(out, open("folders.json", "w"))
"#;

#[test]
fn image_folder_splits_with_other_class_folders_are_an_error_and_counted_as_torchvision_counts() {
    let env = Env::new();
    env.python(&format!(
        "{}\n{FOLDERS}",
        include_str!("../oracles/torchvision_folder.py")
    ));
    let truth = read_json(&env, "folders.json");
    assert_eq!(truth["val"]["classes"], json!(["a", "c"]));
    env.write(
        "s.yaml",
        "dataset:\n  layout: image_folder\n  splits:\n    train: f/train\n    val: f/val\n    test: [f/test]\ncolumns:\n  label: {kind: class, num_classes: 3}\n",
    );
    let report = env.check_json(&["-s", "s.yaml"], 2);
    for split in ["train", "val", "test"] {
        assert_eq!(
            report["class_counts"]["label"][split], truth[split]["counts"],
            "{split}: {report:#}"
        );
    }
    assert_eq!(
        report["splits"],
        json!([
            {"name": "train", "files": ["f/train"], "rows": 6},
            {"name": "val", "files": ["f/val"], "rows": 3},
            {"name": "test", "files": ["f/test"], "rows": 3},
        ])
    );
    assert_eq!(
        messages(&report, "errors"),
        vec![
            ": column `label`: split `val` (its class folders) and split `train` (its class folders) name the \
             classes differently (`val` lacks `b`, class 1 is `b` in `train` but `c` in `val`; 3 vs 2 classes): \
             each split numbers its classes on its own, so from class 1 on the same index means different classes \
             in training and evaluation; give every split the same classes"
                .to_string()
        ]
    );
    // val's class 2 does not exist: torchvision never yields it there.
    assert_eq!(
        messages(&report, "warnings"),
        vec![
            "column `label`: split `val` has no sample of 1 of its 3 classes: 2 `c`; its metrics say nothing about them"
        ]
    );
    assert_eq!(report["violations"], 0);
    // The human report shows each split's counts.
    let out = env.run(&["check", "-s", "s.yaml"]);
    assert!(
        out.stdout.contains("split val: 3 rows; `label` 0: 1, 1: 2, 2: 0\n"),
        "{}",
        out.stdout
    );
    // Splits that agree: nothing to say.
    env.write(
        "ok.yaml",
        "dataset:\n  layout: image_folder\n  splits:\n    train: f/train\n    val: f/val_ok\ncolumns:\n  label: {kind: class, num_classes: 3}\n",
    );
    let report = env.check_json(&["-s", "ok.yaml"], 0);
    assert_eq!(report["class_counts"]["label"]["val"], truth["val_ok"]["counts"]);
    assert!(
        report.get("warnings").is_none() && report["errors"] == json!([]),
        "{report:#}"
    );
    // PATHs on the command line replace the splits: one run, no counts.
    let report = env.check_json(&["-s", "ok.yaml", "f/val_ok"], 0);
    assert!(report.get("splits").is_none() && report.get("class_counts").is_none());
}

/// Parquet splits written by `datasets` with a ClassLabel: train lacks
/// class 3, val has class 3 only and a bad label, test names the classes
/// in another order.
const PARQUET: &str = r#"
from collections import Counter
from datasets import ClassLabel, Dataset, Features, Value
names = ["a", "b", "c", "d"]
def write(labels, to, names=names):
    features = Features({"x": Value("int32"), "label": ClassLabel(names=names)})
    Dataset.from_dict({"x": list(range(len(labels))), "label": labels}, features=features).to_parquet(to)
write([0, 1, 2, 2, 1, 0, 0] * 30, "p/train/part-0.parquet")
write([2, 1, 0] * 11, "p/train/part-1.parquet")
write([0, 3, 3, -1, 0], "p/val.parquet")
write([1, 0, 2, 3], "p/test.parquet", names=["b", "a", "c", "d"])
out = {}
for split, files in {"train": ["p/train/part-0.parquet", "p/train/part-1.parquet"], "val": ["p/val.parquet"],
                     "test": ["p/test.parquet"]}.items():
    labels = [v for f in files for v in pq.read_table(f).column("label").to_pylist()]
    counts = Counter(v for v in labels if 0 <= v < 4)
    out[split] = {"rows": len(labels), "counts": {str(i): counts.get(i, 0) for i in range(4)}}
json.dump(out, open("parquet.json", "w"))
"#;

const PARQUET_SCHEMA: &str = "dataset:
  splits:
    train: p/train
    val: p/val.parquet
    test: p/test.parquet
columns:
  label: {kind: class, num_classes: 4}
";

#[test]
fn parquet_splits_count_classes_compare_class_labels_and_merge_as_one_run() {
    let env = Env::new();
    env.python(PARQUET);
    env.write("s.yaml", PARQUET_SCHEMA);
    let truth = read_json(&env, "parquet.json");
    let report = env.check_json(&["-s", "s.yaml"], 2);
    for split in ["train", "val", "test"] {
        assert_eq!(
            report["class_counts"]["label"][split], truth[split]["counts"],
            "{split}"
        );
    }
    let rows: Vec<u64> = report["splits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["rows"].as_u64().unwrap())
        .collect();
    let truth_rows: Vec<u64> = ["train", "val", "test"]
        .iter()
        .map(|s| truth[s]["rows"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, truth_rows);
    // The bad label is a violation of its own, not a class.
    assert_eq!(report["violations"], 1);
    assert_eq!(
        messages(&report, "errors"),
        vec![
            "p/test.parquet: column `label`: split `test` (p/test.parquet: the file's `datasets` ClassLabel) and \
             split `train` (p/train/part-0.parquet: the file's `datasets` ClassLabel) name the classes differently \
             (class 0 is `a` in `train` but `b` in `test`; 4 vs 4 classes): each split numbers its classes on its \
             own, so from class 0 on the same index means different classes in training and evaluation; give every \
             split the same classes"
                .to_string()
        ]
    );
    assert_eq!(
        messages(&report, "warnings"),
        vec![
            "column `label`: split `train` has no sample of 1 of its 4 classes: 3 `d`; the model never learns them (check num_classes and the data)",
            "column `label`: split `val` has 2 samples of 1 class that split `train` never has: 3 `d`; the model never learns them, and evaluation counts them against it",
            "column `label`: split `val` has no sample of 2 of its 4 classes: 1 `b`, 2 `c`; its metrics say nothing about them",
            "column `label`: split `test` has 1 sample of 1 class that split `train` never has: 3 `d`; the model never learns them, and evaluation counts them against it",
        ]
    );
    // Every violation, named by its file, as a run over the same files
    // without splits names it.
    let split = env.run(&["check", "-s", "s.yaml", "--violations-out", "split.jsonl"]);
    let whole = env.run(&[
        "check",
        "-s",
        "s.yaml",
        "--violations-out",
        "whole.jsonl",
        "p/train",
        "p/val.parquet",
        "p/test.parquet",
    ]);
    assert_eq!((split.code, whole.code), (2, 1));
    let read = |f: &str| std::fs::read_to_string(env.path(f)).expect("violations");
    assert_eq!(read("split.jsonl"), read("whole.jsonl"));
    assert_eq!(read("split.jsonl").lines().count(), 1);
    // --strict makes every warning an error.
    let strict = env.check_json(&["-s", "s.yaml", "--strict"], 2);
    assert_eq!(strict["errors"].as_array().unwrap().len(), 1 + 4);

    // The same report at any thread count, and merged from its partial.
    let one = env.run(&["check", "-s", "s.yaml", "--format", "json", "--jobs", "1"]);
    let two = env.run(&["check", "-s", "s.yaml", "--format", "json", "--jobs", "2"]);
    assert_eq!(one.stdout, two.stdout);
    let with_partial = env.run(&["check", "-s", "s.yaml", "--format", "json", "--partial"]);
    std::fs::write(env.path("whole.json"), &with_partial.stdout).unwrap();
    let merged = env.run(&["merge", "whole.json", "--format", "json"]);
    assert_eq!(merged.stdout, one.stdout);

    // Planned units (each row group one), checked in three parts and merged
    // in another order: the single run's report.
    let plan = Plan {
        schema: env.path("s.yaml"),
        paths: Vec::new(),
        max_examples: 5,
        scan: ScanOptions::default(),
        table_at: None,
    };
    let (validator, units) = preflight::plan_units(&plan, 1).expect("plan");
    let units = relative_units(&env, units);
    assert!(units.iter().all(|u| u.split.is_some()), "{units:?}");
    assert_eq!(merged_from_workers(&validator, &units, 3), one.stdout);
}

#[test]
fn coco_splits_with_other_categories_are_an_error() {
    let env = Env::new();
    env.python(
        r#"
from collections import Counter
def coco(cats, anns, to):
    json.dump({"images": [{"id": 1, "width": 10, "height": 10}],
               "annotations": [{"id": i, "image_id": 1, "category_id": c, "bbox": [0, 0, 1, 1]}
                               for i, c in enumerate(anns)],
               "categories": [{"id": i, "name": n} for i, n in cats]}, open(to, "w"))
coco([(1, "cat"), (2, "dog")], [1, 1, 2], "train.json")
coco([(1, "cat"), (2, "bird")], [2], "val.json")
coco([(1, "cat"), (2, "dog")], [1, 2, 2], "test.json")
json.dump({f: dict(Counter(a["category_id"] for a in json.load(open(f))["annotations"]))
           for f in ["train.json", "val.json", "test.json"]}, open("counts.json", "w"))
"#,
    );
    env.write(
        "s.yaml",
        "dataset:\n  splits: {train: train.json, val: val.json, test: test.json}\ncolumns:\n  category_id: {kind: class, num_classes: 3}\n",
    );
    let truth = read_json(&env, "counts.json");
    let report = env.check_json(&["-s", "s.yaml"], 2);
    for (split, file) in [("train", "train.json"), ("val", "val.json"), ("test", "test.json")] {
        let counts = &report["class_counts"]["category_id"][split];
        for class in ["1", "2"] {
            assert_eq!(
                counts[class],
                truth[file].get(class).cloned().unwrap_or(json!(0)),
                "{split}"
            );
        }
        // Raw ids: 0 is no category (torchvision's CocoDetection).
        assert_eq!(counts["0"], 0);
    }
    let errors = messages(&report, "errors");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with("val.json: column `category_id`: split `val` (val.json: the COCO categories")
            && errors[0].contains("(`val` lacks `dog`, only `val` has `bird`, class 2 is `dog` in `train` but `bird` in `val`; 3 vs 3 classes)"),
        "{}",
        errors[0]
    );
}

#[test]
fn splits_in_the_schema_are_checked_as_written() {
    let env = Env::new();
    let bad = [
        (
            "dataset:\n  files: [a]\n  splits: {train: a}\ncolumns:\n  y: {kind: class, num_classes: 2}\n",
            "dataset.splits",
            "list the files under their splits",
        ),
        (
            "dataset:\n  splits: {}\ncolumns:\n  y: {kind: class, num_classes: 2}\n",
            "dataset.splits",
            "names no split",
        ),
        (
            "dataset:\n  splits: {train: []}\ncolumns:\n  y: {kind: class, num_classes: 2}\n",
            "dataset.splits.train",
            "a split names its files",
        ),
        (
            "dataset:\n  splits: {train: {a: 1}}\ncolumns:\n  y: {kind: class, num_classes: 2}\n",
            "",
            "split `train`: expected a path or a list of paths",
        ),
    ];
    for (yaml, key, says) in bad {
        env.write("s.yaml", yaml);
        let out = env.run(&["check", "-s", "s.yaml"]);
        assert_eq!(out.code, 2, "{yaml}");
        assert!(
            out.stdout.contains(key) && out.stdout.contains(says),
            "{yaml}\n{}",
            out.stdout
        );
    }
    // The resolved schema keeps the splits.
    env.write(
        "s.yaml",
        "dataset:\n  splits:\n    val: v.parquet\n    train: [t1.parquet, t2.parquet]\ncolumns:\n  y: {kind: class, num_classes: 2}\n",
    );
    let out = env.run(&["schema", "s.yaml"]);
    assert!(
        out.stdout
            .contains("  splits:\n    \"val\": [\"v.parquet\"]\n    \"train\": [\"t1.parquet\", \"t2.parquet\"]\n"),
        "{}",
        out.stdout
    );
}

/// Mask folders as splits: every pixel counts toward its class, as NumPy
/// reads the masks Pillow wrote (8-bit, 16-bit and 32-bit, palette, and RGB
/// masks mapped by `colors:`); 255 is the ignored value.
#[test]
fn mask_pixels_count_toward_their_classes_per_split() {
    let env = Env::new();
    env.python(
        r#"
from PIL import Image
rng = np.random.default_rng(5)
os.makedirs("m/train"); os.makedirs("m/val"); os.makedirs("c/train"); os.makedirs("c/val")
def classes(shape, top):
    a = rng.integers(0, top, shape)
    a[0, :3] = 255
    return a
Image.fromarray(classes((6, 7), 3).astype(np.uint8), "L").save("m/train/a.png")
p = Image.fromarray(classes((5, 4), 4).astype(np.uint8), "P"); p.putpalette(list(range(256)) * 3); p.save("m/train/b.png")
Image.fromarray(classes((4, 4), 4).astype(np.uint16)).save("m/val/c.png")
Image.fromarray(classes((3, 5), 2).astype(np.int32)).save("m/val/d.tif")
def count(folder):
    n = [0] * 4
    for f in sorted(os.listdir(folder)):
        a = np.array(Image.open(os.path.join(folder, f))).astype(np.int64)
        for v in a.ravel():
            if 0 <= v < 4: n[v] += 1
    return {str(i): n[i] for i in range(4)}
colours = [(0, 0, 0), (255, 0, 0), (0, 255, 0), (0, 0, 255)]
def rgb(shape, path):
    idx = rng.integers(0, 4, shape)
    Image.fromarray(np.array(colours, np.uint8)[idx], "RGB").save(path)
    return {str(i): int((idx == i).sum()) for i in range(4)}
json.dump({"train": count("m/train"), "val": count("m/val"),
           "rgb_train": rgb((5, 5), "c/train/x.png"), "rgb_val": rgb((3, 2), "c/val/y.png")}, open("masks.json", "w"))
"#,
    );
    let truth = read_json(&env, "masks.json");
    env.write(
        "s.yaml",
        "dataset:\n  splits: {train: m/train, val: m/val}\ncolumns:\n  pixels: {kind: class, num_classes: 4, ignore_index: 255}\n",
    );
    let report = env.check_json(&["-s", "s.yaml"], 0);
    assert_eq!(report["class_counts"]["pixels"]["train"], truth["train"], "{report:#}");
    assert_eq!(report["class_counts"]["pixels"]["val"], truth["val"], "{report:#}");
    env.write(
        "c.yaml",
        "dataset:\n  splits: {train: c/train, val: c/val}\ncolumns:\n  pixels:\n    kind: class\n    num_classes: 4\n    colors: {\"0,0,0\": 0, \"255,0,0\": 1, \"0,255,0\": 2, \"0,0,255\": 3}\n",
    );
    let report = env.check_json(&["-s", "c.yaml"], 0);
    assert_eq!(
        report["class_counts"]["pixels"]["train"], truth["rgb_train"],
        "{report:#}"
    );
    assert_eq!(report["class_counts"]["pixels"]["val"], truth["rgb_val"], "{report:#}");
}
