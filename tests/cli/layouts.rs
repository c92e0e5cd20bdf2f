//! Label layouts (#15 part A): image folders read as torchvision's
//! `ImageFolder`, COCO annotation files, YOLO label files. Trees and files
//! are made here by Python; the expected classes and samples come from
//! torchvision's own `find_classes` / `make_dataset` (tests/oracles: the
//! functions taken from the installed package, which needs torch to
//! import), COCO loading from pycocotools, the mappings from detectron2's
//! and mmdetection's code, the YOLO verdicts from ultralytics' own
//! `verify_image_label`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::util::{Env, hits};

/// torchvision's own `find_classes` and `make_dataset` (tests/oracles);
/// `expected(root)` writes {path: class index} as `ImageFolder` lists them.
const FOLDER_PY: &str = concat!(
    include_str!("../oracles/torchvision_folder.py"),
    r#"
def expected(root, out):
    classes, class_to_idx = find_classes(root)
    samples = make_dataset(root, class_to_idx, IMG_EXTENSIONS)
    json.dump({"classes": classes, "samples": {p: i for p, i in samples}}, open(out, "w"))

def touch(path, target=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if target is None:
        open(path, "wb").write(b"not decoded")
    else:
        os.symlink(target, path)
"#
);

/// A schema that every image violates, so every image's label and class
/// name come back as examples.
const EVERY_ROW: &str = "dataset: {layout: image_folder}\ncolumns:\n  label: {kind: values, allowed: [-1]}\n  class_name: {kind: values, allowed: ['-']}\n";

/// {file: value} of every example of a check (every example kept).
fn by_file(report: &Value, column: &str, rule: &str) -> BTreeMap<String, Value> {
    let (n, ex) = hits(report, column, rule);
    assert_eq!(n as usize, ex.len(), "every example kept");
    ex.into_iter()
        .map(|(f, row, v)| {
            assert_eq!(row, 0, "an image is a file of one row");
            (f, v)
        })
        .collect()
}

fn read_json(env: &Env, rel: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.path(rel)).expect("read")).expect("json")
}

fn warnings(report: &Value) -> Vec<String> {
    // A report without warnings has no `warnings` key.
    report["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|w| w.as_str().expect("text").to_string())
        .collect()
}

#[test]
fn image_folder_classes_and_samples_are_torchvisions() {
    let env = Env::new();
    env.python(&format!(
        "{FOLDER_PY}
for c in ['cat', 'dog', 'Zebra', '.ipynb_checkpoints', '__MACOSX', 'éclair', 'a b', 'a']:
    for f in ['a.JPG', 'b.png', 'c.Jpeg', 'skip.gif', 'notes.txt', 'd.jpg.bak', '.hidden.png', 'e.TiFf']:
        touch(f'data/{{c}}/{{f}}')
touch('data/cat/sub/deeper/f.webp')
touch('data/a/x/y.ppm')
touch('data/a b/z.pgm')
touch('data/dog/sub.jpg/g.bmp')   # a folder named like an image holds one
touch('elsewhere/x.png'); touch('elsewhere/y.TIFF'); touch('elsewhere/inner/w.jpg')
touch('data/linked', '../elsewhere')            # a linked class folder
touch('data/dog/link.png', '../../elsewhere/x.png')  # a linked image
touch('data/Zebra/into', '../../elsewhere/inner')    # a linked subfolder
touch('data/loose.jpg')                         # no class: ignored
expected('data', 'expected.json')
"
    ));
    env.write("s.yaml", EVERY_ROW);
    let report = env.check_json(&["-s", "s.yaml", "data", "--max-examples", "1000000"], 1);
    let want = read_json(&env, "expected.json");
    let classes: Vec<String> = want["classes"]
        .as_array()
        .expect("classes")
        .iter()
        .map(|c| c.as_str().expect("name").to_string())
        .collect();
    let samples = want["samples"].as_object().expect("samples");
    assert!(samples.len() > 40, "the tree has its samples: {}", samples.len());
    assert_eq!(report["files"], samples.len());
    assert_eq!(report["rows"], samples.len());
    assert!(report["errors"].as_array().expect("errors").is_empty(), "{report:#}");
    let labels = by_file(&report, "label", "values");
    let names = by_file(&report, "class_name", "values");
    let want_labels: BTreeMap<String, Value> = samples.iter().map(|(p, i)| (p.clone(), i.clone())).collect();
    assert_eq!(labels, want_labels);
    for (path, name) in &names {
        let index = labels[path].as_u64().expect("index") as usize;
        assert_eq!(name.as_str(), Some(classes[index].as_str()), "{path}");
    }
    let w = warnings(&report);
    for hidden in [".ipynb_checkpoints", "__MACOSX"] {
        let i = classes.iter().position(|c| c == hidden).expect("a class");
        assert!(
            w.iter()
                .any(|m| m.starts_with("data: ") && m.contains(&format!("`{hidden}` gets class index {i}"))),
            "{w:#?}"
        );
    }
    assert!(
        w.iter().any(|m| m.contains("1 image(s) directly in the root")),
        "{w:#?}"
    );
}

#[test]
fn numeric_class_names_sort_as_strings() {
    let env = Env::new();
    env.python(&format!(
        "{FOLDER_PY}
for c in ['1', '2', '9', '10', '11']:
    touch(f'data/{{c}}/img.png')
expected('data', 'expected.json')
"
    ));
    env.write("s.yaml", EVERY_ROW);
    let report = env.check_json(&["-s", "s.yaml", "data"], 1);
    let want = read_json(&env, "expected.json");
    assert_eq!(want["classes"], serde_json::json!(["1", "10", "11", "2", "9"]));
    let labels = by_file(&report, "label", "values");
    assert_eq!(labels["data/10/img.png"], 1);
    assert_eq!(labels["data/9/img.png"], 4);
    for (p, i) in want["samples"].as_object().expect("samples") {
        assert_eq!(&labels[p], i, "{p}");
    }
    let w = warnings(&report);
    assert!(w.iter().any(|m| m.contains("1→0, 10→1, 11→2, 2→3, 9→4")), "{w:#?}");
}

#[test]
fn a_hidden_class_pushes_the_last_class_to_num_classes() {
    let env = Env::new();
    env.python(&format!(
        "{FOLDER_PY}
touch('data/.ipynb_checkpoints/a-checkpoint.png')
for f in ['1.jpg', '2.jpg']: touch(f'data/cat/{{f}}')
for f in ['1.jpg', '2.jpg', '3.JPG']: touch(f'data/dog/{{f}}')
expected('data', 'expected.json')
"
    ));
    env.write(
        "s.yaml",
        "dataset: {layout: image_folder}\ncolumns:\n  label: {kind: class, num_classes: 2}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "data"], 1);
    let want = read_json(&env, "expected.json");
    let dogs: Vec<&String> = want["samples"]
        .as_object()
        .expect("samples")
        .iter()
        .filter(|(_, i)| **i == 2)
        .map(|(p, _)| p)
        .collect();
    let (n, ex) = hits(&report, "label", "class");
    assert_eq!(n as usize, dogs.len());
    assert_eq!(n, 3);
    let files: Vec<&String> = ex.iter().map(|(f, _, _)| f).collect();
    assert_eq!(files, dogs);
    assert!(ex.iter().all(|(_, _, v)| *v == 2));
    let w = warnings(&report);
    assert!(
        w.iter().any(|m| m.contains("`.ipynb_checkpoints` gets class index 0")),
        "{w:#?}"
    );
    // The same tree without the hidden folder passes.
    std::fs::remove_dir_all(env.path("data/.ipynb_checkpoints")).expect("rm");
    let report = env.check_json(&["-s", "s.yaml", "data"], 0);
    assert_eq!(report["files"], 5);
    assert!(warnings(&report).is_empty());
}

#[test]
fn an_empty_class_folder_is_an_error_and_the_other_images_are_checked() {
    let env = Env::new();
    env.python(&format!(
        "{FOLDER_PY}
touch('data/a/1.png'); touch('data/a/2.png')
touch('data/b/readme.txt'); touch('data/b/scan.gif')
touch('data/c/1.png')
try:
    expected('data', 'expected.json')
    raise SystemExit('torchvision accepted an empty class')
except FileNotFoundError as e:
    assert 'Found no valid file for the classes b' in str(e), e
"
    ));
    env.write(
        "s.yaml",
        "dataset: {layout: image_folder}\ncolumns:\n  label: {kind: class, num_classes: 2}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "data"], 2);
    let errors = report["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(errors[0]["file"], "data/b");
    assert!(
        errors[0]["message"]
            .as_str()
            .expect("message")
            .contains("FileNotFoundError")
    );
    assert_eq!(report["rows"], 3);
    let (n, ex) = hits(&report, "label", "class");
    assert_eq!((n, ex[0].0.as_str()), (1, "data/c/1.png"));
}

#[test]
fn train_and_val_with_different_class_lists_are_reported() {
    let env = Env::new();
    env.python(&format!(
        "{FOLDER_PY}
for c in ['ant', 'bee', 'cat']: touch(f'train/{{c}}/1.png')
for c in ['ant', 'cat']: touch(f'val/{{c}}/1.png')
expected('train', 'train.json'); expected('val', 'val.json')
"
    ));
    env.write(
        "s.yaml",
        "dataset: {layout: image_folder}\ncolumns:\n  label: {kind: class, num_classes: 3}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "train", "val"], 0);
    // torchvision gives `cat` index 2 in train and 1 in val.
    assert_eq!(read_json(&env, "train.json")["samples"]["train/cat/1.png"], 2);
    assert_eq!(read_json(&env, "val.json")["samples"]["val/cat/1.png"], 1);
    let w = warnings(&report);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(w[0].starts_with("val: its class list differs from train's"), "{}", w[0]);
    assert!(
        w[0].contains("lacks `bee`") && w[0].contains("from index 1 on"),
        "{}",
        w[0]
    );
    // A file PATH is no image folder root.
    env.write("x.png", "");
    let report = env.check_json(&["-s", "s.yaml", "x.png"], 2);
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains("not a directory")
    );
}

/// COCO's category ids: 80 classes numbered 1..90 with ten gaps.
const COCO_PY: &str = r#"
IDS = [i for i in range(1, 91) if i not in (12, 26, 29, 30, 45, 66, 68, 69, 71, 83)]
assert len(IDS) == 80
cats = [{"id": i, "name": f"c{i}", "supercategory": "s"} for i in IDS]
# pycocotools' shape (as the COCO files and pycocotools.coco.COCO read them);
# annotations cycle through the ids, with planted ones.
anns = []
for k in range(400):
    cid = IDS[(k * 7) % 80]
    anns.append({"id": k + 1, "image_id": k % 50 + 1, "category_id": cid, "iscrowd": 0,
                 "area": 12.5, "bbox": [1.0, 2.0, 3.0, 4.0], "segmentation": [[1, 2, 4, 2, 4, 6]]})
anns[17]["category_id"] = 12      # a gap: no such category
anns[333]["category_id"] = 91     # past the largest id
anns[42]["bbox"] = [5.0, 5.0, -2.0, 3.0]  # a negative width
anns[99]["segmentation"] = {"counts": [0, 12], "size": [4, 3]}  # RLE, an object
images = [{"id": i, "file_name": f"{i:012d}.jpg", "width": 64, "height": 48} for i in range(1, 51)]
coco = {"info": {"year": 2017}, "licenses": [], "images": images, "annotations": anns, "categories": cats}
os.makedirs("coco", exist_ok=True)
json.dump(coco, open("coco/instances_train2017.json", "w"))
json.dump({"_fingerprint": "abc", "images": 3}, open("coco/state.json", "w"))  # not COCO
# detectron2 (load_coco_json): id_map = {v: i for i, v in enumerate(sorted(cat_ids))}
d2 = {v: i for i, v in enumerate(sorted(c["id"] for c in cats))}
# mmdetection (CocoDataset.load_data_list): cat_ids = coco.get_cat_ids(cat_names=classes),
# pycocotools' getCatIds keeps the order of `categories`; cat2label = {id: i}
classes = ["c90", "c1", "c5"]
mm_ids = [c["id"] for c in cats if c["name"] in classes]
mm = {cid: i for i, cid in enumerate(mm_ids)}
json.dump({"raw": [a["category_id"] for a in anns],
           "d2": [d2.get(a["category_id"]) for a in anns],
           "mm": [mm.get(a["category_id"]) for a in anns]}, open("want.json", "w"))
"#;

/// {row: value} of a check's examples (one file).
fn by_row(report: &Value, column: &str, rule: &str) -> BTreeMap<u64, Value> {
    let (n, ex) = hits(report, column, rule);
    assert_eq!(n as usize, ex.len(), "every example kept");
    ex.into_iter().map(|(_, r, v)| (r, v)).collect()
}

#[test]
fn coco_category_ids_raw_and_mapped_as_each_framework_maps_them() {
    let env = Env::new();
    env.python(COCO_PY);
    let want = read_json(&env, "want.json");
    let column =
        |key: &str| -> Vec<Option<i64>> { want[key].as_array().expect("list").iter().map(Value::as_i64).collect() };
    let run = |schema: &str, code: i32| {
        env.write("s.yaml", schema);
        env.check_json(&["-s", "s.yaml", "coco", "--max-examples", "1000000"], code)
    };

    // Raw ids (torchvision), with a head of 91: only the id past 90 is out.
    let report = run("columns:\n  category_id: {kind: class, num_classes: 91}\n", 1);
    assert_eq!(report["files"], 1, "state.json is not COCO: skipped");
    assert_eq!(report["rows"], 400);
    assert_eq!(
        by_row(&report, "category_id", "class"),
        BTreeMap::from([(333, Value::from(91))])
    );
    let w = warnings(&report);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(
        w[0].starts_with("coco/instances_train2017.json: 2 annotation(s) name a category_id that `categories` lacks (12, 91; first: annotations[17])"),
        "{}",
        w[0]
    );

    // Raw ids with a head of 80: every id >= 80 is out, and the hint says why.
    let report = run("columns:\n  category_id: {kind: class, num_classes: 80}\n", 1);
    let raw = column("raw");
    let out: BTreeMap<u64, Value> = raw
        .iter()
        .enumerate()
        .filter(|(_, v)| v.expect("id") >= 80)
        .map(|(i, v)| (i as u64, Value::from(v.expect("id"))))
        .collect();
    assert!(out.len() > 20);
    assert_eq!(by_row(&report, "category_id", "class"), out);
    let check = crate::util::check(&report, "category_id", "class");
    assert!(
        check["hint"]
            .as_str()
            .expect("hint")
            .contains("coco_mapping: contiguous")
    );

    // detectron2's mapping: every mapped value as detectron2 computes it
    // (num_classes 1 makes every class but 0 an example), the two ids that
    // `categories` lacks are nulls.
    let report = run(
        "columns:\n  category_id: {kind: class, num_classes: 1, coco_mapping: contiguous}\n",
        1,
    );
    let d2 = column("d2");
    let mapped: BTreeMap<u64, Value> = d2
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.filter(|&c| c != 0).map(|c| (i as u64, Value::from(c))))
        .collect();
    assert_eq!(by_row(&report, "category_id", "class"), mapped);
    assert_eq!(
        by_row(&report, "category_id", "null"),
        BTreeMap::from([(17, Value::Null), (333, Value::Null)])
    );
    // With the model's 80 classes, only the unknown ids remain.
    let report = run(
        "columns:\n  category_id: {kind: class, num_classes: 80, coco_mapping: contiguous}\n",
        1,
    );
    assert_eq!(report["violations"], 2);
    assert!(
        crate::util::check(&report, "category_id", "null")["hint"]
            .as_str()
            .expect("hint")
            .contains("KeyError")
    );

    // mmdetection's mapping by class names (in the order of `categories`).
    env.write("classes.txt", "c90\nc1\nc5\n");
    let report = run(
        "columns:\n  category_id: {kind: class, num_classes: 1, coco_mapping: {by_name: {class_names: classes.txt}}}\n",
        1,
    );
    let mm = column("mm");
    let mapped: BTreeMap<u64, Value> = mm
        .iter()
        .enumerate()
        .filter_map(|(i, v)| v.filter(|&c| c != 0).map(|c| (i as u64, Value::from(c))))
        .collect();
    assert!(!mapped.is_empty());
    assert_eq!(by_row(&report, "category_id", "class"), mapped);
    let nulls = mm.iter().filter(|v| v.is_none()).count();
    assert_eq!(crate::util::check(&report, "category_id", "null")["violations"], nulls);

    // Other annotation keys are columns: bbox is a list column.
    let report = run(
        "columns:\n  bbox: {kind: range, min: 0, max_length: 4, min_length: 4}\n  iscrowd: {kind: values, allowed: [0, 1]}\n  image_id: {kind: index, size: 51}\n",
        1,
    );
    assert_eq!(
        by_row(&report, "bbox", "range"),
        BTreeMap::from([(42, Value::from(-2.0))])
    );
    assert_eq!(report["violations"], 1);
}

#[test]
fn coco_files_that_are_broken_are_their_errors() {
    let env = Env::new();
    env.write("s.yaml", "columns:\n  category_id: {kind: class, num_classes: 91}\n");
    env.write(
        "d/cut.json",
        r#"{"images": [], "annotations": [{"id": 1, "category_id": 3"#,
    );
    env.write(
        "d/types.json",
        r#"{"images": [], "annotations": [{"id": 1, "image_id": 1, "category_id": 3}], "categories": 7}"#,
    );
    env.write("d/good.json", r#"{"images": [{"id": 1}], "annotations": [{"id": 1, "image_id": 1, "category_id": 3}, {"id": 2, "image_id": 1, "category_id": 95}], "categories": [{"id": 3, "name": "x"}]}"#);
    env.write("d/config.json", r#"{"vocab_size": 3}"#);
    let report = env.check_json(&["-s", "s.yaml", "d"], 2);
    assert_eq!(report["files"], 3);
    let errors: Vec<(&str, &str)> = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["file"].as_str().expect("file"),
                e["message"].as_str().expect("message"),
            )
        })
        .collect();
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert_eq!(errors[0].0, "d/cut.json");
    assert!(
        errors[0].1.contains("not a COCO annotation file: EOF"),
        "{}",
        errors[0].1
    );
    assert_eq!(errors[1].0, "d/types.json");
    assert!(
        errors[1].1.contains("`categories` is a number, not a list"),
        "{}",
        errors[1].1
    );
    assert_eq!(
        by_row(&report, "category_id", "class"),
        BTreeMap::from([(1, Value::from(95))])
    );
    // Named on the command line, a JSON that is not COCO says so.
    let report = env.check_json(&["-s", "s.yaml", "d/config.json"], 2);
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains("lacks images, annotations, categories")
    );
}

/// ultralytics' own reading of a label file (`verify_image_label` and
/// `segments2boxes`, from the installed package, tests/oracles):
/// `verdict(path)` is None or why the file is dropped as corrupt (nc 80);
/// `read_labels(path)` the (N, 5) labels of a file it keeps at any nc.
const YOLO_PY: &str = concat!(
    include_str!("../oracles/ultralytics_labels.py"),
    r#"
def verdict(lb_file):
    return label_verdict(lb_file, 80)[0]

def read_labels(lb_file):
    why, lb, dups = label_verdict(lb_file, 1 << 62)
    assert why is None and not dups, why
    return lb

def write(path, rows):
    # as ultralytics' converters write labels: class, then %g coordinates
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for r in rows:
            f.write(r if isinstance(r, str) else ("%g " % r[0]) + " ".join("%g" % v for v in r[1:]) + "\n")
"#
);

#[test]
fn yolo_label_files_as_ultralytics_reads_them() {
    let env = Env::new();
    env.python(&format!(
        "{YOLO_PY}
import yaml
yaml.safe_dump({{'path': '.', 'train': 'images/train', 'val': 'images/val',
                'names': {{i: f'n{{i}}' for i in range(80)}}}}, open('data.yaml', 'w'))
rng = np.random.default_rng(7)
files = {{}}
for k in range(12):
    rows = [(int(rng.integers(0, 80)), *[float(v) for v in np.round(rng.uniform(0.05, 0.95, 4), 6)]) for _ in range(k + 1)]
    files[f'labels/train/img{{k:03d}}.txt'] = rows
files['labels/train/img003.txt'][1] = (80, 0.5, 0.5, 0.1, 0.1)      # class == nc
files['labels/train/img005.txt'][0] = (3, 0.5, 0.5, 1.02, 0.1)      # dropped: > 1.01
files['labels/train/img006.txt'].insert(2, '\\n')                   # a blank line
files['labels/train/img007.txt'] = ['7 0.1 0.2 0.5 0.2 0.5 0.6 0.1 0.6\\n', '2 0.2 0.2 0.4 0.2 0.3 0.4\\n']  # segments
files['labels/train/img009.txt'] = ['7 0.1 0.2 0.5 0.2 0.5 0.6 0.1 0.6\\n', '2 0.2 0.2 0.4 0.4\\n']  # dropped: mixed
files['labels/train/img008.txt'] = ['1 0.5 0.5 0.2\\n']             # dropped: 4 columns
files['labels/val/img100.txt'] = []                                 # background
for p, rows in files.items():
    write(p, rows)
open('labels/README.md', 'w').write('not a label')
json.dump({{p: verdict(p) for p in sorted(files)}}, open('verdicts.json', 'w'))
seg = read_labels('labels/train/img007.txt')
json.dump([[float(v) for v in r] for r in seg], open('seg.json', 'w'))
"
    ));
    env.write(
        "s.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: class, num_classes: {yolo_data: data.yaml}}\n  x: {kind: range, min: 0, max: 1}\n  w: {kind: range, min: 0, max: 1}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "labels", "--max-examples", "1000"], 1);
    assert_eq!(report["files"], 13);
    // Class 80 of an 80-class data.yaml, at its line.
    let (n, ex) = hits(&report, "class", "class");
    assert_eq!(n, 1);
    assert_eq!((ex[0].0.as_str(), ex[0].1), ("labels/train/img003.txt", 1));
    assert_eq!(ex[0].2.as_f64(), Some(80.0));
    let (n, ex) = hits(&report, "w", "range");
    assert_eq!(n, 1);
    assert_eq!((ex[0].0.as_str(), ex[0].1), ("labels/train/img005.txt", 0));
    // Every file ultralytics drops is said to be dropped, and no other.
    let verdicts = read_json(&env, "verdicts.json");
    let w = warnings(&report);
    for (path, v) in verdicts.as_object().expect("verdicts") {
        let said = w.iter().any(|m| m.starts_with(&format!("{path}: ultralytics drops")));
        assert_eq!(said, !v.is_null(), "{path}: {v} / {w:#?}");
    }
    assert_eq!(w.iter().filter(|m| m.contains("drops")).count(), 4, "{w:#?}");
    assert!(
        w.iter()
            .any(|m| m.starts_with("labels/train/img003.txt: ultralytics drops")
                && m.contains("Label class 80 exceeds dataset class count 80")),
        "{w:#?}"
    );
    // Blank lines keep their number: img006 has rows 0, 1, 3, 4, 5, 6, 7.
    env.write(
        "all.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  x: {kind: range, max: -1}\n  h: {kind: range, max: -1}\n  points: {kind: range, max: -1}\n",
    );
    let report = env.check_json(
        &[
            "-s",
            "all.yaml",
            "labels/train/img006.txt",
            "labels/train/img007.txt",
            "--max-examples",
            "1000",
        ],
        1,
    );
    let (_, ex) = hits(&report, "x", "range");
    let rows: Vec<u64> = ex.iter().filter(|e| e.0.ends_with("img006.txt")).map(|e| e.1).collect();
    assert_eq!(rows, [0, 1, 3, 4, 5, 6, 7]);
    // Segment lines: the box ultralytics derives, the polygon as `points`.
    let seg = read_json(&env, "seg.json");
    let seg_x: Vec<f32> = ex
        .iter()
        .filter(|e| e.0.ends_with("img007.txt"))
        .map(|e| e.2.as_f64().expect("x") as f32)
        .collect();
    let want_x: Vec<f32> = seg
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r[1].as_f64().expect("x") as f32)
        .collect();
    assert_eq!(seg_x, want_x);
    let h: Vec<f32> = hits(&report, "h", "range")
        .1
        .iter()
        .filter(|e| e.0.ends_with("img007.txt"))
        .map(|e| e.2.as_f64().expect("h") as f32)
        .collect();
    let want_h: Vec<f32> = seg
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r[4].as_f64().expect("h") as f32)
        .collect();
    assert_eq!(h, want_h);
    assert_eq!(hits(&report, "points", "range").0, 8 + 6);
}

#[test]
fn yolo_data_yaml_bounds_and_broken_label_files() {
    let env = Env::new();
    env.write("labels/a.txt", "0 0.5 0.5 0.1 0.1\n2 0.5 0.5 0.1 0.1\n");
    let schema = "dataset: {layout: yolo}\ncolumns:\n  class: {kind: class, num_classes: {yolo_data: data.yaml}}\n";
    env.write("s.yaml", schema);
    // names as a list: nc is its length.
    env.write("data.yaml", "names: [person, car]\n");
    let report = env.check_json(&["-s", "s.yaml", "labels"], 1);
    assert_eq!(hits(&report, "class", "class").0, 1);
    // nc alone.
    env.write("data.yaml", "nc: 3\n");
    env.check_json(&["-s", "s.yaml", "labels"], 0);
    // names and nc that disagree: ultralytics refuses the dataset.
    env.write("data.yaml", "nc: 3\nnames: {0: person, 1: car}\n");
    let report = env.check_json(&["-s", "s.yaml", "labels"], 2);
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains("'names' length 2 and 'nc: 3' must match"),
        "{report:#}"
    );
    // A label file that is not text is its error; the others are checked.
    env.write("data.yaml", "nc: 3\n");
    std::fs::write(env.path("labels/b.txt"), b"\x00\xff\xfe garbage \x80").expect("write");
    let report = env.check_json(&["-s", "s.yaml", "labels"], 2);
    assert_eq!(report["errors"][0]["file"], "labels/b.txt");
    assert!(
        report["errors"][0]["message"]
            .as_str()
            .expect("message")
            .contains("not UTF-8")
    );
    assert_eq!(report["rows"], 2);
}

#[test]
fn init_proposes_schemas_for_the_three_layouts() {
    let env = Env::new();
    env.python(&format!(
        "{FOLDER_PY}
touch('folder/.ipynb_checkpoints/x.png')
for c in ['cat', 'dog']: touch(f'folder/{{c}}/1.png')
{COCO_PY}
"
    ));
    env.write("yolo/labels/train/a.txt", "0 0.5 0.5 0.1 0.1\n");
    env.write("yolo/data.yaml", "names: [a, b, c]\n");
    let init = |path: &str, out: &str| -> String {
        let r = env.run(&["init", path, "-o", out]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        std::fs::read_to_string(env.path(out)).expect("schema")
    };
    let folder = init("folder", "folder.yaml");
    assert!(folder.contains("layout: image_folder"), "{folder}");
    assert!(folder.contains("num_classes: 3"), "{folder}");
    assert!(folder.contains("CHECK: `.ipynb_checkpoints` is class 0"), "{folder}");
    env.check_json(&["-s", "folder.yaml", "folder"], 0);
    let coco = init("coco", "coco.yaml");
    assert!(coco.contains("num_classes: 91"), "{coco}");
    assert!(coco.contains("80 categories with ids up to 90"), "{coco}");
    assert!(coco.contains("coco_mapping: contiguous"), "{coco}");
    let yolo = init("yolo", "yolo.yaml");
    assert!(yolo.contains("layout: yolo"), "{yolo}");
    assert!(yolo.contains("{yolo_data: yolo/data.yaml}"), "{yolo}");
    env.check_json(&["-s", "yolo.yaml", "yolo"], 0);
    // A pose dataset (kpt_shape in data.yaml): its lines are boxes and
    // keypoints, not polygons, and pass as such.
    env.write(
        "pose/labels/train/a.txt",
        "0 0.5 0.5 0.2 0.2 0.4 0.4 2 0.6 0.6 1\n0 0.3 0.3 0.1 0.1 0 0 0 0.3 0.3 2\n",
    );
    env.write("pose/data.yaml", "kpt_shape: [2, 3]\nnames: [person]\n");
    let pose = init("pose", "pose.yaml");
    assert!(pose.contains("kpt_shape: [2, 3]"), "{pose}");
    let report = env.check_json(&["-s", "pose.yaml", "pose"], 0);
    assert!(
        report
            .get("warnings")
            .is_none_or(|w| w.as_array().is_some_and(Vec::is_empty)),
        "{report:#}"
    );
}

#[test]
fn image_folder_reports_are_the_same_on_every_path_through_the_scanner() {
    let env = Env::new();
    env.python(&format!(
        "{FOLDER_PY}
for c in range(7):
    for i in range(300 + c):
        touch(f'data/class_{{c}}/img_{{i:04d}}.png')
"
    ));
    env.write(
        "s.yaml",
        "dataset: {layout: image_folder}\ncolumns:\n  label: {kind: class, num_classes: 5}\n  class_name: {kind: values, allowed: [class_0, class_1, class_2, class_3, class_4, class_5]}\n",
    );
    let json = |args: &[&str]| {
        let mut all = vec![
            "check",
            "--format",
            "json",
            "-s",
            "s.yaml",
            "data",
            "--max-examples",
            "7",
        ];
        all.extend_from_slice(args);
        let r = env.run(&all);
        assert_eq!(r.code, 1, "{}", r.stderr);
        r.stdout
    };
    let one = json(&["--jobs", "1"]);
    let report: Value = serde_json::from_str(&one).expect("json");
    // class_5 (305 images) and class_6 (306) are past num_classes 5; class_6 is no allowed name.
    assert_eq!(hits(&report, "label", "class").0, 305 + 306);
    assert_eq!(hits(&report, "class_name", "values").0, 306);
    assert_eq!(report["files"], 7 * 300 + 21);
    assert_eq!(json(&["--jobs", "3"]), one);
    // Spilled violations take the scanner's general path: the same report.
    assert_eq!(json(&["--violations-out", "v.jsonl"]), one);
    let spilled = std::fs::read_to_string(env.path("v.jsonl")).expect("spill");
    assert_eq!(spilled.lines().count(), 305 + 306 + 306);
    // Cached: the first run and the rerun.
    assert_eq!(json(&["--cache", "c"]), one);
    assert_eq!(json(&["--cache", "c"]), one);
    // Planned into units (which carry each image's class) and checked apart.
    let validator = preflight::Validator::new(preflight::Schema::from_file(&env.path("s.yaml")).expect("schema"), 7);
    let units = preflight::plan_paths(&[env.path("data")], 1, Some(validator.schema()));
    assert_eq!(units.len(), 7 * 300 + 21);
    let (a, b) = units.split_at(1000);
    let opts = preflight::ScanOptions::default();
    let mut merged = preflight::check_units(&validator, b, &opts);
    merged.merge(preflight::check_units(&validator, a, &opts));
    let shown = env.dir.path().join("data").to_string_lossy().into_owned();
    let planned = preflight::report::json::render(&merged.report(&validator)).replace(&format!("{shown}/"), "data/");
    assert_eq!(planned, one);
}

#[test]
fn layout_keys_resolve_and_their_mistakes_are_schema_errors() {
    let env = Env::new();
    env.write("data.yaml", "nc: 4\n");
    env.write(
        "s.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: class, num_classes: {yolo_data: data.yaml}}\n  category_id: {kind: class, num_classes: 80, coco_mapping: contiguous}\n  cat: {kind: class, num_classes: 2, coco_mapping: {by_name: [person, 'traffic light']}}\n",
    );
    let r = env.run(&["schema", "s.yaml"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for line in [
        "dataset:\n  layout: yolo\n",
        "num_classes: 4  # from data.yaml: nc",
        "coco_mapping: contiguous",
        "coco_mapping: {by_name: [\"person\", \"traffic light\"]}",
    ] {
        assert!(r.stdout.contains(line), "{line:?} in\n{}", r.stdout);
    }
    // What `schema` prints is a schema that reads back the same (the
    // number now literal, so without its source).
    env.write("resolved.yaml", &r.stdout);
    let again = env.run(&["schema", "resolved.yaml"]);
    assert_eq!(again.stdout, r.stdout.replace("  # from data.yaml: nc", ""));
    for (yaml, needle) in [
        (
            "dataset: {layout: imagefolder}\ncolumns:\n  label: {kind: class, num_classes: 2}\n",
            "imagefolder",
        ),
        (
            "columns:\n  c: {kind: class, num_classes: 2, coco_mapping: sorted}\n",
            "`sorted` is not a mapping",
        ),
        (
            "columns:\n  c: {kind: index, size: 2, coco_mapping: contiguous}\n",
            "needs kind `class`",
        ),
        (
            "columns:\n  c: {kind: class, num_classes: {yolo_data: nope.yaml}}\n",
            "nope.yaml",
        ),
        (
            "columns:\n  c: {kind: class, num_classes: {yolo_data: data.yaml, class_names: x.txt}}\n",
            "exactly one of",
        ),
    ] {
        env.write("bad.yaml", yaml);
        let r = env.run(&["schema", "bad.yaml"]);
        assert_eq!(r.code, 2, "{yaml}");
        assert!(r.stderr.contains(needle), "{yaml}: {}", r.stderr);
    }
}

#[test]
fn link_loops_and_broken_links_in_an_image_folder_are_errors() {
    let env = Env::new();
    env.python(&format!(
        "{FOLDER_PY}
touch('data/a/1.png'); touch('data/b/1.png')
touch('data/a/loop', '..')                 # data/a/loop -> data/a
touch('data/b/gone.jpg', '../../nowhere.jpg')
"
    ));
    env.write(
        "s.yaml",
        "dataset: {layout: image_folder}\ncolumns:\n  label: {kind: class, num_classes: 2}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "data"], 2);
    let errors: Vec<(&str, &str)> = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            (
                e["file"].as_str().expect("file"),
                e["message"].as_str().expect("message"),
            )
        })
        .collect();
    assert_eq!(errors.len(), 2, "{errors:#?}");
    assert_eq!(errors[0].0, "data/a/loop");
    assert!(errors[0].1.contains("symbolic link loop"), "{}", errors[0].1);
    assert_eq!(errors[1].0, "data/b/gone.jpg");
    assert_eq!(report["files"], 2);
    assert_eq!(report["violations"], 0);
}

#[test]
fn yolo_lines_split_as_python_splits_them() {
    // ultralytics reads label files in text mode and splits them with
    // `str.splitlines()`: a lone `\r` (classic Mac), `\v`, `\f`, U+2028
    // and friends end a line too, and `float()` takes `1_0`. Each line is a
    // row of its own, with the class ultralytics reads.
    let env = Env::new();
    env.python(&format!(
        r#"{YOLO_PY}
os.makedirs("labels", exist_ok=True)
files = {{
    "labels/cr.txt": "0 0.5 0.5 0.1 0.1\r79 0.5 0.5 0.2 0.2\r",
    "labels/crlf.txt": "0 0.5 0.5 0.1 0.1\r\n80 0.5 0.5 0.2 0.2\r\n",
    "labels/vt.txt": "1 0.5 0.5 0.1 0.1\x0b2 0.4 0.5 0.2 0.2\x0c3 0.3 0.5 0.1 0.1\n",
    "labels/ls.txt": "4 0.5 0.5 0.1 0.1\u20285 0.5 0.5 0.1 0.1\u008581 0.5 0.5 0.1 0.1",
    "labels/underscore.txt": "1_0 0.5 0.5 0.1 0.1\n",
}}
for p, text in files.items():
    open(p, "w", encoding="utf-8", newline="").write(text)
json.dump({{p: {{"classes": [float(c) for c in read_labels(p)[:, 0]], "verdict": verdict(p)}} for p in files}},
          open("want.json", "w"))
"#
    ));
    env.write(
        "s.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: class, num_classes: 80}\n  x: {kind: range, max: -1}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "labels", "--max-examples", "1000"], 1);
    let want = read_json(&env, "want.json");
    let (_, xs) = hits(&report, "x", "range");
    let (_, bad) = hits(&report, "class", "class");
    let w = warnings(&report);
    for (path, want) in want.as_object().expect("object") {
        let classes: Vec<f64> = want["classes"]
            .as_array()
            .expect("classes")
            .iter()
            .map(|c| c.as_f64().expect("class"))
            .collect();
        // One row per line ultralytics reads, at its line number.
        let rows: Vec<u64> = xs.iter().filter(|e| &e.0 == path).map(|e| e.1).collect();
        assert_eq!(rows, (0..classes.len() as u64).collect::<Vec<_>>(), "{path}");
        // The classes at or above nc, exactly.
        let over: Vec<(u64, f64)> = bad
            .iter()
            .filter(|e| &e.0 == path)
            .map(|e| (e.1, e.2.as_f64().expect("class")))
            .collect();
        let want_over: Vec<(u64, f64)> = classes
            .iter()
            .enumerate()
            .filter(|(_, c)| **c >= 80.0)
            .map(|(i, c)| (i as u64, *c))
            .collect();
        assert_eq!(over, want_over, "{path}");
        // Dropped exactly when ultralytics drops it.
        let said = w.iter().any(|m| m.starts_with(&format!("{path}: ultralytics drops")));
        assert_eq!(said, !want["verdict"].is_null(), "{path}: {want} / {w:#?}");
    }
}

#[test]
fn random_label_files_are_judged_as_ultralytics_judges_them() {
    // 600 label files from a seeded generator: boxes and polygons, odd
    // tokens (2.5, -0.005, nan, inf, 1_0, text), odd white space and line
    // ends, byte-order marks, repeated lines. Each file's drop verdict and
    // duplicate count, and every value of the files it keeps, must be
    // ultralytics' own.
    let env = Env::new();
    env.python(&format!(
        r#"{YOLO_PY}
import random
random.seed(11)
odd = ['0', '1', '79', '80', '2.5', '-1', '-0', '-0.005', '-0.02', '1.01', '1.02', 'nan', 'inf', '-inf',
       '1e-1', 'x', '', '1_0', '+3', '3.0', '79.99', '1e2']
def coord():
    return random.choice(['%.3g' % random.random(), '0.5', '%.2f' % random.uniform(-0.03, 1.05)])
want = {{}}
os.makedirs('labels', exist_ok=True)
for k in range(600):
    lines = []
    seg = random.random() < 0.3
    for _ in range(random.randint(0, 5)):
        n = random.choice([5, 5, 5, 5, 5, 5, 4, 6, 3]) if not seg else random.choice([7, 9, 11, 9, 5, 8, 3])
        vals = [random.choice(['0', '1', '5', '79']) if random.random() < 0.9 else random.choice(odd)]
        vals += [coord() if random.random() < 0.95 else random.choice(odd) for _ in range(n - 1)]
        lines.append(random.choice([' ', ' ', '\t', '  ', '\xa0', '\x1f']).join(v for v in vals if v))
    if lines and random.random() < 0.2:
        lines.append(random.choice(lines))
    ends = ['\n', '\n', '\n', '\r\n', '\r', '\n\n', '\n \n', '\x0b', '\u2028']
    text = ''.join(line + random.choice(ends) for line in lines)
    if random.random() < 0.05:
        text = '\ufeff' + text
    p = f'labels/f{{k:03d}}.txt'
    open(p, 'w', encoding='utf-8', newline='').write(text)
    why, lb, dups = label_verdict(p, 80)
    want[p] = {{'drop': why is not None, 'dups': dups,
               'rows': None if why or dups else [[float(v) for v in r] for r in lb],
               'zero': None if why or dups or not len(lb) else zero_area_rows(lb)}}
json.dump(want, open('want.json', 'w'))
"#
    ));
    env.write(
        "s.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: range, max: -1000}\n  x: {kind: range, max: -1000}\n  y: {kind: range, max: -1000}\n  w: {kind: range, max: -1000}\n  h: {kind: range, max: -1000}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "labels", "--max-examples", "100000"], 1);
    let mut values: BTreeMap<String, BTreeMap<u64, [f32; 5]>> = BTreeMap::new();
    for (i, column) in ["class", "x", "y", "w", "h"].into_iter().enumerate() {
        for (file, row, v) in hits(&report, column, "range").1 {
            let row = values.entry(file).or_default().entry(row).or_insert([f32::NAN; 5]);
            row[i] = v.as_f64().map_or(f32::NAN, |v| v as f32); // NaN and inf are text in JSON
        }
    }
    // The drops, with ultralytics' nc from the class rule.
    env.write(
        "nc.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: class, num_classes: 80}\n",
    );
    let w = warnings(&env.check_json(&["-s", "nc.yaml", "labels"], 1));
    let want = read_json(&env, "want.json");
    let (mut kept, mut dropped, mut flat) = (0, 0, 0);
    for (path, want) in want.as_object().expect("object") {
        let drop = w.iter().any(|m| m.starts_with(&format!("{path}: ultralytics drops")));
        assert_eq!(drop, want["drop"], "{path}: {want} / {w:#?}");
        let dups = w
            .iter()
            .find_map(|m| {
                m.strip_prefix(&format!("{path}: "))?
                    .strip_suffix(" duplicate label line(s): ultralytics removes them")
            })
            .map_or(0, |n| n.parse().expect("count"));
        assert_eq!(dups, want["dups"], "{path}");
        dropped += usize::from(drop);
        if let Some(rows) = want["rows"].as_array() {
            kept += 1;
            let got: Vec<[f32; 5]> = values
                .get(path)
                .map(|r| r.values().copied().collect())
                .unwrap_or_default();
            let rows: Vec<[f32; 5]> = rows
                .iter()
                .map(|r| std::array::from_fn(|i| r[i].as_f64().expect("value") as f32))
                .collect();
            assert_eq!(got, rows, "{path}");
            // The boxes ultralytics' augmentations drop for having no area:
            // their count and first line.
            let zero: Vec<usize> = want["zero"]
                .as_array()
                .map(|z| z.iter().map(|i| i.as_u64().expect("index") as usize).collect())
                .unwrap_or_default();
            let lines: Vec<u64> = values
                .get(path)
                .map(|r| r.keys().copied().collect())
                .unwrap_or_default();
            let expected = zero.first().map(|&i| {
                format!(
                    "{path}: {} label line(s) with a box of zero width or height (first: line {}): ultralytics drops these objects when training (its augmentations keep only boxes of positive area)",
                    zero.len(),
                    lines[i] + 1
                )
            });
            let got = w
                .iter()
                .find(|m| m.contains("with a box of zero width or height") && m.starts_with(&format!("{path}: ")));
            assert_eq!(got, expected.as_ref(), "{path}");
            flat += usize::from(expected.is_some());
        }
    }
    // The generator reaches both sides.
    assert!(kept > 100 && dropped > 100, "{kept} kept, {dropped} dropped");
    assert!(flat >= 5, "{flat} files with boxes of no area");
}

#[test]
fn pose_label_files_are_judged_as_ultralytics_pose_task_judges_them() {
    // `kpt_shape` in the schema: every line is `class x y w h` and then the
    // keypoints (ultralytics' pose task), never a polygon. 300 generated
    // files per shape: verdicts, duplicates, the box and the keypoints of
    // every file it keeps must be ultralytics' own.
    for (nkpt, ndim) in [(4, 3), (3, 2)] {
        let env = Env::new();
        env.python(&format!(
            r#"{YOLO_PY}
import random
random.seed({nkpt} * 10 + {ndim})
odd = ['2.5', '-1', '-0.005', '-0.02', '1.02', '1.5', 'nan', 'x', '80']
def value():
    return random.choice(['%.3g' % random.random(), '0.5', '0', '2', '%.2f' % random.uniform(-0.02, 1.03)])
want = {{}}
os.makedirs('labels', exist_ok=True)
for k in range(300):
    lines = []
    for _ in range(random.randint(0, 4)):
        n = 5 + {nkpt} * {ndim} if random.random() < 0.9 else random.choice([5, 6, 5 + {nkpt} * {ndim} + 1])
        vals = [random.choice(['0', '1', '79'])] + ['%.3g' % random.uniform(0.05, 0.95) for _ in range(4)]
        vals += [value() for _ in range(n - 5)]
        vals = [random.choice(odd) if random.random() < 0.02 else v for v in vals]
        lines.append(' '.join(vals))
    if lines and random.random() < 0.1:
        lines.append(random.choice(lines))
    p = f'labels/f{{k:03d}}.txt'
    open(p, 'w').write(''.join(line + '\n' for line in lines))
    why, lb, dups = label_verdict(p, 80, ({nkpt}, {ndim}))
    rows = None
    if why is None and not dups:
        raw = [[float(v) for v in line.split()] for line in lines]
        rows = [[float(v) for v in r] + raw[i][5:] for i, r in enumerate(lb)]
    want[p] = {{'drop': why is not None, 'dups': dups, 'rows': rows}}
json.dump(want, open('want.json', 'w'))
"#
        ));
        let dataset = format!("dataset: {{layout: yolo, kpt_shape: [{nkpt}, {ndim}]}}\n");
        env.write(
            "s.yaml",
            &format!(
                "{dataset}columns:\n  class: {{kind: range, max: -1000}}\n  x: {{kind: range, max: -1000}}\n  y: {{kind: range, max: -1000}}\n  w: {{kind: range, max: -1000}}\n  h: {{kind: range, max: -1000}}\n  keypoints: {{kind: range, max: -1000}}\n  points: {{kind: range, max: -1000}}\n"
            ),
        );
        let report = env.check_json(&["-s", "s.yaml", "labels", "--max-examples", "100000"], 1);
        assert_eq!(hits(&report, "points", "range").0, 0, "no polygons in pose labels");
        let mut values: BTreeMap<String, BTreeMap<u64, Vec<f32>>> = BTreeMap::new();
        for (i, column) in ["class", "x", "y", "w", "h"].into_iter().enumerate() {
            for (file, row, v) in hits(&report, column, "range").1 {
                let row = values
                    .entry(file)
                    .or_default()
                    .entry(row)
                    .or_insert_with(|| vec![f32::NAN; 5]);
                row[i] = v.as_f64().map_or(f32::NAN, |v| v as f32);
            }
        }
        // Keypoint values come in row order, position order.
        for (file, row, v) in hits(&report, "keypoints", "range").1 {
            let row = values
                .entry(file)
                .or_default()
                .entry(row)
                .or_insert_with(|| vec![f32::NAN; 5]);
            row.push(v.as_f64().map_or(f32::NAN, |v| v as f32));
        }
        env.write(
            "nc.yaml",
            &format!("{dataset}columns:\n  class: {{kind: class, num_classes: 80}}\n"),
        );
        let r = env.run(&["check", "-s", "nc.yaml", "labels", "--format", "json"]);
        let w = warnings(&serde_json::from_str(&r.stdout).expect("report"));
        let want = read_json(&env, "want.json");
        let (mut kept, mut dropped) = (0, 0);
        for (path, want) in want.as_object().expect("object") {
            let drop = w.iter().any(|m| m.starts_with(&format!("{path}: ultralytics drops")));
            assert_eq!(drop, want["drop"], "{path}: {want} / {w:#?}");
            let dups = w
                .iter()
                .find_map(|m| {
                    m.strip_prefix(&format!("{path}: "))?
                        .strip_suffix(" duplicate label line(s): ultralytics removes them")
                })
                .map_or(0, |n| n.parse().expect("count"));
            assert_eq!(dups, want["dups"], "{path}");
            dropped += usize::from(drop);
            if let Some(rows) = want["rows"].as_array() {
                kept += 1;
                let got: Vec<Vec<f32>> = values
                    .get(path)
                    .map(|r| r.values().cloned().collect())
                    .unwrap_or_default();
                let rows: Vec<Vec<f32>> = rows
                    .iter()
                    .map(|r| {
                        r.as_array()
                            .expect("row")
                            .iter()
                            .map(|v| v.as_f64().expect("v") as f32)
                            .collect()
                    })
                    .collect();
                assert_eq!(got, rows, "{path}");
            }
        }
        assert!(kept > 50 && dropped > 50, "{kept} kept, {dropped} dropped");
    }
    // kpt_shape needs layout: yolo and two numbers, dims 2 or 3.
    let env = Env::new();
    env.write("labels/a.txt", "0 0.5 0.5 0.2 0.2 0.1 0.1\n");
    for (dataset, key) in [
        ("{kpt_shape: [17, 3]}", "needs `layout: yolo`"),
        ("{layout: yolo, kpt_shape: [17, 4]}", "dims 2"),
        ("{layout: yolo, kpt_shape: [17]}", "dims 2"),
    ] {
        env.write(
            "s.yaml",
            &format!("dataset: {dataset}\ncolumns:\n  class: {{kind: class, num_classes: 2}}\n"),
        );
        let r = env.run(&["check", "-s", "s.yaml", "labels"]);
        assert_eq!(r.code, 2, "{dataset}");
        let said = format!("{}{}", r.stdout, r.stderr);
        assert!(
            said.contains("dataset.kpt_shape") && said.contains(key),
            "{dataset}: {said}"
        );
    }
}

#[test]
fn yolo_names_mapping_with_a_gap_is_refused_as_ultralytics_refuses_it() {
    // ultralytics' check_class_names: `names` as {index: name} must have the
    // keys 0..n-1 (ints, or strings int() reads); {0: a, 2: b} raises
    // KeyError ("2-class dataset requires class indices 0-1"), so training
    // never starts. It used to pass as nc = 2, the label 2 reported as a
    // class violation.
    let env = Env::new();
    env.python(concat!(
        include_str!("../oracles/ultralytics_labels.py"),
        r#"
os.makedirs("labels", exist_ok=True)
os.makedirs("images/train", exist_ok=True)
os.makedirs("images/val", exist_ok=True)
open("labels/a.txt", "w").write("0 0.5 0.5 0.1 0.1\n2 0.5 0.5 0.1 0.1\n")
variants = {"gap": "names: {0: a, 2: b}", "strkeys": "names: {'0': a, '1': b, '2': c}",
            "ok": "names: {0: a, 1: b}", "word": "names: {a: x}", "list": "names: [a, b, c]",
            "negkey": "names: {-1: a, 0: b}", "empty": "names: []", "emptymap": "names: {}",
            "nc": "nc: 3", "nctext": "nc: '3'", "ncfloat": "nc: 3.0", "ncfrac": "nc: 2.5",
            "ncbare": "nc:", "nczero": "nc: 0", "ncneg": "nc: -2", "nctrue": "nc: true",
            "ncword": "nc: three", "ncunder": "nc: '1_0'", "mismatch": "nc: 2\nnames: [a, b, c]",
            "match": "nc: '3'\nnames: [a, b, c]", "namesnull": "names:\nnc: 3", "neither": "path: ."}
want = {}
for k, text in variants.items():
    open(f"{k}.yaml", "w").write(f"train: images/train\nval: images/val\n{text}\n")
    nc = dataset_classes(f"{k}.yaml")
    want[k] = None if isinstance(nc, Exception) else sum(1 for c in (0, 2) if c >= nc)
json.dump(want, open("want.json", "w"))
"#
    ));
    let want = read_json(&env, "want.json");
    for (k, want) in want.as_object().expect("object") {
        env.write(
            "s.yaml",
            &format!(
                "dataset: {{layout: yolo}}\ncolumns:\n  class: {{kind: class, num_classes: {{yolo_data: {k}.yaml}}}}\n"
            ),
        );
        match want.as_u64() {
            None => {
                let r = env.run(&["check", "-s", "s.yaml", "labels", "--format", "json"]);
                assert_eq!(r.code, 2, "{k}: {}", r.stdout);
                assert!(
                    r.stderr.contains(&format!("{k}.yaml")) || r.stdout.contains(&format!("{k}.yaml")),
                    "{k}: {r:?}",
                    r = (&r.stdout, &r.stderr)
                );
            }
            Some(n) => {
                let report = env.check_json(&["-s", "s.yaml", "labels"], if n > 0 { 1 } else { 0 });
                assert_eq!(hits(&report, "class", "class").0, n, "{k}");
            }
        }
    }
}

/// A YOLO export tree as Roboflow and Label Studio write them: images and
/// labels side by side, with text files that are not labels.
pub(crate) const YOLO_EXPORT_PY: &str = r#"
def touch(p, text=''):
    os.makedirs(os.path.dirname(p) or '.', exist_ok=True)
    open(p, 'w').write(text)
touch('ds/README.roboflow.txt', 'This dataset was exported via roboflow.com\n')
touch('ds/data.yaml', 'train: train/images\nval: valid/images\nnames: [a, b, c]\n')
touch('ds/train/images/a.jpg'); touch('ds/train/images/b.JPG'); touch('ds/valid/images/c.png')
touch('ds/train/labels/a.txt', '0 0.5 0.5 0.1 0.1\n')
touch('ds/train/labels/b.txt', '5 0.5 0.5 0.1 0.1\n')
touch('ds/train/labels/classes.txt', 'a\nb\nc\n')
touch('ds/valid/labels/c.txt', '1 0.5 0.5 0.1 0.1\n')
touch('ds/valid/labels/orphan.txt', '9 0.5 0.5 0.1 0.1\n')
touch('ds/flat/d.webp'); touch('ds/flat/d.txt', '4 0.5 0.5 0.1 0.1\n'); touch('ds/flat/list.txt', 'flat/d.webp\n')
"#;

#[test]
fn yolo_searches_read_the_labels_of_images_only() {
    // ultralytics reads a label file for each image (img2label_paths:
    // images/…/x.jpg -> labels/…/x.txt, else x.txt beside it): a README,
    // classes.txt, an image list or the label of a deleted image is never
    // read, so a search that met images skips them, and says so.
    let env = Env::new();
    env.python(YOLO_EXPORT_PY);
    env.write(
        "s.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: class, num_classes: 3}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "ds", "--max-examples", "100"], 1);
    assert_eq!(report["files"], 4, "{report:#}");
    let (n, ex) = hits(&report, "class", "class");
    assert_eq!(n, 2, "{report:#}");
    let files: Vec<&str> = ex.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(files, ["ds/flat/d.txt", "ds/train/labels/b.txt"]);
    let w = warnings(&report);
    let skipped = w
        .iter()
        .find(|m| m.starts_with("ds: 4 .txt file(s) skipped"))
        .expect("note");
    for name in ["README.roboflow.txt", "list.txt", "classes.txt"] {
        assert!(skipped.contains(name), "{skipped}");
    }
    // A search that meets no image (labels alone) reads every .txt.
    let report = env.check_json(&["-s", "s.yaml", "ds/valid/labels"], 1);
    assert_eq!(report["files"], 2, "{report:#}");
    // A named file is read whatever it is.
    let report = env.check_json(&["-s", "s.yaml", "ds/valid/labels/orphan.txt"], 1);
    assert_eq!(report["files"], 1, "{report:#}");
}

/// A YOLOv5/8 tree converted from Darknet (old `.txt` files left beside
/// the images), with nested `images` folders, a `labels` folder above an
/// `images` one, a `labels` folder below one, `Images` (not `images`),
/// images outside any `images` folder, a GIF (no image to ultralytics) and
/// an image list; `label_files.json` holds, per PATH, the label files
/// ultralytics opens for the images its own `get_img_files` lists there
/// (`img2label_paths`, tests/oracles), and the `.txt` files below it.
pub(crate) const YOLO_TREE_PY: &str = concat!(
    include_str!("../oracles/ultralytics_labels.py"),
    r#"
def touch(p, text=None):
    os.makedirs(os.path.dirname(p) or '.', exist_ok=True)
    open(p, 'w').write(text if text is not None else '')
n = iter(range(1000))
def label(p):
    touch(p, '%d 0.5 0.5 0.1 0.1\n' % next(n))
for im in ['ds/images/train/a.jpg', 'ds/images/train/b.png', 'ds/images/train/c.JPG',
           'ds/images/train/v.1.tif', 'ds/images/train/sub/images/n.jpg', 'ds/images/train/labels/g.jpg',
           'ds/images/val/w.webp', 'ds/Images/f.jpg', 'proj/labels/run/images/d.jpg', 'flat/e.bmp',
           'ds/images/train/h.gif', 'ds/images/train/.hidden.jpg']:
    touch(im)
    # Darknet's label beside every image: ultralytics reads it only where
    # the path has no images folder.
    label(im.rsplit('.', 1)[0] + '.txt')
for lb in ['ds/labels/train/a.txt', 'ds/labels/train/c.txt', 'ds/labels/train/v.1.txt',
           'ds/images/train/sub/labels/n.txt', 'ds/labels/train/sub/images/n.txt',
           'ds/labels/train/labels/g.txt', 'ds/labels/train/h.txt', 'ds/labels/train/orphan.txt',
           'ds/labels/val/w.txt', 'proj/labels/run/labels/d.txt', 'ds/labels/Images/f.txt']:
    label(lb)
touch('ds/classes.txt', 'a\nb\n')
# Dataset YAMLs: Roboflow's `../` splits (resolved from the YAML's folder,
# then without the `../`), and an image list (`./` from the list's folder).
touch('ds/data.yaml', 'train: ../images/train\nval: ../images/val\nnames: [a, b]\n')
touch('ds/train.txt', './images/train/a.jpg\n./images/train/sub/images/n.jpg\nds/images/val/w.webp\n./images/train/h.gif\n')
touch('ds/list.yaml', 'train: train.txt\nval: [images/train/labels]\nnames: [a, b]\n')
out = {}
for p in ['ds', 'ds/images', 'ds/images/train', 'ds/images/train/sub', 'proj', 'flat', 'ds/Images']:
    lbs = dataset_label_files(os.path.abspath(p))
    below = [os.path.relpath(os.path.join(d, f)) for d, ds_, fs in os.walk(p)
             for f in fs if f.endswith('.txt') and not f.startswith('.')]
    out[p] = {'labels': [os.path.relpath(lb) for lb in lbs], 'below': sorted(below)}
for y in ['ds/data.yaml', 'ds/list.yaml']:
    lbs = sorted({os.path.relpath(lb) for s in split_dirs(y).values() for lb in dataset_label_files(s)})
    out[y] = {'labels': lbs, 'below': []}
json.dump(out, open('label_files.json', 'w'))
"#
);

/// The label files a YOLO run reads: every row of every file violates
/// `class <= -1`, so the examples name each file read.
pub(crate) fn yolo_files_read(report: &Value) -> Vec<String> {
    let mut files: Vec<String> = hits(report, "class", "range").1.into_iter().map(|e| e.0).collect();
    files.sort();
    files.dedup();
    files
}

#[test]
fn yolo_label_files_are_those_ultralytics_opens() {
    // ultralytics opens img2label_paths(images): the last `/images/` of the
    // path becomes `/labels/`, and only a path without one has its label
    // beside it. A Darknet `.txt` beside an image in `images/` is never
    // opened, nor is `labels/…/images/x.txt`; labels outside the PATH
    // (`ds/labels/train` for `ds/images/train`) are.
    let env = Env::new();
    env.python(YOLO_TREE_PY);
    env.write(
        "s.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: range, max: -1}\n",
    );
    let want: Value = serde_json::from_str(&std::fs::read_to_string(env.path("label_files.json")).unwrap()).unwrap();
    for (path, w) in want.as_object().unwrap() {
        let labels: Vec<String> = w["labels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().into())
            .collect();
        assert!(!labels.is_empty(), "{path}");
        let report = env.check_json(&["-s", "s.yaml", path, "--max-examples", "1000"], 1);
        assert_eq!(yolo_files_read(&report), labels, "{path}: {report:#}");
        assert_eq!(report["files"], labels.len(), "{path}");
        // The .txt files below the PATH ultralytics never opens: skipped, and said.
        let skipped = w["below"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|b| !labels.iter().any(|l| l == b.as_str().unwrap()))
            .count();
        let notes = warnings(&report);
        let said = notes
            .iter()
            .find(|m| m.starts_with(&format!("{path}: ")))
            .map(|m| m.to_string());
        match skipped {
            0 => assert_eq!(said, None, "{path}"),
            k => assert!(
                said.as_deref()
                    .is_some_and(|m| m.contains(&format!(" {k} .txt file(s) skipped"))),
                "{path}: {said:?} {k}"
            ),
        }
    }
    // Labels and images given as two PATHs, in either order: the labels of
    // the images, whichever search met them first.
    let images: Vec<String> = want["ds/images"]["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().into())
        .collect();
    for paths in [["ds/labels", "ds/images"], ["ds/images", "ds/labels"]] {
        let report = env.check_json(&["-s", "s.yaml", paths[0], paths[1], "--max-examples", "1000"], 1);
        assert_eq!(yolo_files_read(&report), images, "{paths:?}");
    }
    // The old reading's labels are gone: the leftover beside a.jpg, the
    // mirrored n.txt.
    let ds = &want["ds"]["labels"];
    assert!(
        ds.as_array()
            .unwrap()
            .iter()
            .any(|l| l == "ds/labels/train/labels/g.txt"),
        "{ds}"
    );
    assert!(
        !ds.as_array()
            .unwrap()
            .iter()
            .any(|l| l == "ds/images/train/a.txt" || l == "ds/labels/train/sub/images/n.txt"),
        "{ds}"
    );
}

/// pycocotools' own `COCO(annotation_file)`: the frameworks all load
/// through it, and train on the annotations `imgToAnns` holds.
/// `reachable(path)` is an error, or [(annotation index, category_id)] in
/// file order of the annotations some image reaches.
const PYCOCOTOOLS_PY: &str = r#"
import contextlib, io
from pycocotools.coco import COCO

def reachable(path):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            c = COCO(path)
    except Exception as e:
        return "%s: %s" % (type(e).__name__, e)
    seen = {id(a) for i in c.imgs for a in c.imgToAnns[i]}
    return [(k, a["category_id"]) for k, a in enumerate(c.dataset["annotations"]) if id(a) in seen]
"#;

#[test]
fn coco_files_as_pycocotools_loads_them() {
    let env = Env::new();
    env.python(
        &(PYCOCOTOOLS_PY.to_string()
            + r#"
os.makedirs("c", exist_ok=True)
imgs = [{"id": i, "file_name": f"{i}.jpg", "height": 8, "width": 8} for i in (1, 2)]
cats = [{"id": i, "name": f"c{i}"} for i in (1, 2)]
def ann(k, cat, img=1, **kw):
    return dict({"id": k, "image_id": img, "category_id": cat, "bbox": [0, 0, 2, 2], "area": 4.0, "iscrowd": 0}, **kw)
def write(name, anns, encoding="utf-8", **kw):
    with open("c/" + name, "w", encoding=encoding) as f:
        json.dump(dict({"images": imgs, "annotations": anns, "categories": cats}, **kw), f)
# json.dump writes NaN and Infinity, and json.load reads them back: it loads.
write("nan.json", [ann(1, 1, area=float("nan")), ann(2, 7, bbox=[0, 0, float("inf"), 1]), ann(3, 2, area=float("-inf"))])
# A byte-order mark: json.load refuses the text ("Unexpected UTF-8 BOM").
write("bom.json", [ann(1, 1)], encoding="utf-8-sig")
# Keys createIndex reads: KeyError / TypeError (unhashable) at load.
write("no_image_id.json", [ann(1, 1), {"id": 2, "category_id": 1}])
write("list_id.json", [ann(1, 1), ann([2], 1)])
write("image_no_id.json", [ann(1, 1)], images=[{"file_name": "x.jpg"}])
# Annotations no image holds are never read (category 500 trains nowhere).
write("orphan.json", [ann(1, 1), ann(2, 500, img=99), ann(3, 9, img=2)])
# A name decoded with surrogateescape (os.listdir of non-UTF-8 bytes): json.dump
# writes a lone surrogate escape, which json.load reads back.
write("surrogate.json", [ann(1, 2)], images=[{"id": 1, "file_name": os.fsdecode(b"caf\xe9.jpg")}])
# An empty list: no rows, nothing missing.
write("empty.json", [])
json.dump({f: reachable("c/" + f) for f in sorted(os.listdir("c"))}, open("want.json", "w"))
"#),
    );
    let want = read_json(&env, "want.json");
    env.write("s.yaml", "columns:\n  category_id: {kind: class, num_classes: 3}\n");
    let report = env.check_json(&["-s", "s.yaml", "c", "--max-examples", "100"], 2);
    let want = want.as_object().expect("object");
    let refused: Vec<String> = want
        .iter()
        .filter(|(_, v)| v.is_string())
        .map(|(f, _)| format!("c/{f}"))
        .collect();
    assert_eq!(
        refused,
        [
            "c/bom.json",
            "c/image_no_id.json",
            "c/list_id.json",
            "c/no_image_id.json"
        ]
    );
    let errors: BTreeMap<String, String> = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| (e["file"].as_str().expect("file").to_string(), e["message"].to_string()))
        .collect();
    assert_eq!(errors.keys().cloned().collect::<Vec<_>>(), refused, "{errors:#?}");
    assert!(errors["c/bom.json"].contains("byte-order mark"));
    assert!(errors["c/no_image_id.json"].contains("annotations[1] lacks `image_id`"));
    assert!(errors["c/list_id.json"].contains("unhashable"));
    assert!(errors["c/image_no_id.json"].contains("images[0] lacks `id`"));
    // Rows are the annotations pycocotools' index reaches; violations theirs.
    let read: Vec<(String, u64, i64)> = want
        .iter()
        .filter_map(|(f, v)| v.as_array().map(|rows| (f, rows)))
        .flat_map(|(f, rows)| {
            rows.iter().map(move |r| {
                (
                    format!("c/{f}"),
                    r[0].as_u64().expect("row"),
                    r[1].as_i64().expect("id"),
                )
            })
        })
        .collect();
    assert_eq!(report["rows"], read.len());
    let out: Vec<(String, u64, Value)> = read
        .into_iter()
        .filter(|(_, _, id)| *id >= 3)
        .map(|(f, r, id)| (f, r, Value::from(id)))
        .collect();
    assert_eq!(
        out,
        [
            ("c/nan.json".to_string(), 1, Value::from(7)),
            ("c/orphan.json".to_string(), 2, Value::from(9))
        ]
    );
    assert_eq!(hits(&report, "category_id", "class"), (2, out));
    assert!(
        warnings(&report).iter().any(|w| w.starts_with(
            "c/orphan.json: 1 annotation(s) name an image_id that `images` lacks (first: annotations[1])"
        )),
        "{:#?}",
        warnings(&report)
    );
}

#[test]
fn coco_ids_map_as_python_dict_keys() {
    // detectron2 sorts the ids as Python sorts them ("10" before "9") and
    // looks annotations up by dict key (True is 1); a category without a
    // name, or no categories, stops its load_coco_json.
    let env = Env::new();
    env.python(
        r#"
os.makedirs("c", exist_ok=True)
imgs = [{"id": 1}]
def write(name, cats, ids):
    anns = [{"id": k, "image_id": 1, "category_id": c} for k, c in enumerate(ids)]
    json.dump({"images": imgs, "annotations": anns, "categories": cats}, open("c/" + name, "w"))
write("strings.json", [{"id": "9", "name": "a"}, {"id": "10", "name": "b"}], ["9", "10", "9"])
write("bools.json", [{"id": 1, "name": "a"}, {"id": 0.5, "name": "b"}, {"id": 0, "name": "c"}], [True, 0.5, False, 1.0])
d2 = {}
for f in ("strings.json", "bools.json"):
    data = json.load(open("c/" + f))
    id_map = {v: i for i, v in enumerate(sorted(c["id"] for c in data["categories"]))}
    d2[f] = [id_map[a["category_id"]] for a in data["annotations"]]
json.dump(d2, open("want.json", "w"))
"#,
    );
    let want = read_json(&env, "want.json");
    // num_classes 1: every class but 0 comes back as an example.
    env.write(
        "s.yaml",
        "columns:\n  category_id: {kind: class, num_classes: 1, coco_mapping: contiguous}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "c", "--max-examples", "100"], 1);
    let want: Vec<(String, u64, Value)> = ["c/bools.json", "c/strings.json"]
        .iter()
        .flat_map(|f| {
            want[f.trim_start_matches("c/")]
                .as_array()
                .expect("list")
                .iter()
                .enumerate()
                .filter(|(_, v)| v.as_i64() != Some(0))
                .map(|(r, v)| (f.to_string(), r as u64, v.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(want.len(), 5);
    assert_eq!(hits(&report, "category_id", "class"), (5, want));
    assert_eq!(crate::util::check(&report, "category_id", "null")["violations"], 0);

    env.write(
        "d/noname.json",
        r#"{"images": [], "annotations": [], "categories": [{"id": 1}]}"#,
    );
    env.write(
        "d/nocats.json",
        r#"{"images": [], "annotations": [], "categories": []}"#,
    );
    // What load_coco_json stops on in the annotations it reads: a repeated
    // annotation id (assert), `ignore` set (assert), an empty bbox
    // (ValueError); the same in an annotation of no image is never read.
    let coco = |anns: &str| {
        format!(r#"{{"images": [{{"id": 1}}], "categories": [{{"id": 1, "name": "a"}}], "annotations": [{anns}]}}"#)
    };
    let a = |id: u32, img: u32, extra: &str| format!(r#"{{"id": {id}, "image_id": {img}, "category_id": 1{extra}}}"#);
    env.write("d/dup_ids.json", &coco(&[a(1, 1, ""), a(1, 1, "")].join(", ")));
    env.write(
        "d/ignore.json",
        &coco(&[a(1, 1, ""), a(2, 1, r#", "ignore": 1"#)].join(", ")),
    );
    env.write("d/empty_bbox.json", &coco(&a(1, 1, r#", "bbox": []"#)));
    env.write(
        "d/orphans.json",
        &coco(
            &[
                a(1, 1, r#", "ignore": 0.0, "bbox": [1, 2, 3, 4]"#),
                a(1, 7, r#", "bbox": []"#),
            ]
            .join(", "),
        ),
    );
    let report = env.check_json(&["-s", "s.yaml", "d"], 2);
    let errors: Vec<String> = report["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| format!("{} {}", e["file"], e["message"]))
        .collect();
    assert_eq!(errors.len(), 5, "{errors:#?}");
    assert!(errors[0].contains("dup_ids.json") && errors[0].contains("annotations[1] repeats an annotation id"));
    assert!(errors[1].contains("empty_bbox.json") && errors[1].contains("annotations[0] has a `bbox`"));
    assert!(errors[2].contains("ignore.json") && errors[2].contains("annotations[1] has an `ignore`"));
    assert!(errors[3].contains("nocats.json") && errors[3].contains("ValueError"));
    assert!(errors[4].contains("noname.json") && errors[4].contains("lacks `name`"));
    assert_eq!(report["rows"], 1, "orphans.json: its one annotation of an image");
    // torchvision reads them all.
    env.write("raw.yaml", "columns:\n  category_id: {kind: class, num_classes: 2}\n");
    let report = env.check_json(&["-s", "raw.yaml", "d"], 0);
    assert_eq!(report["rows"], 6);
}

#[test]
fn broken_links_that_torchvision_does_not_list_are_not_errors() {
    // os.walk lists a broken link as a file name; make_dataset keeps it only
    // when the name has an image extension, so `notes.txt -> nowhere` (and a
    // broken link beside the class folders, which is no directory) are
    // nothing to ImageFolder.
    let env = Env::new();
    env.python(&format!(
        "{FOLDER_PY}
touch('data/a/1.png'); touch('data/b/2.JPG'); touch('data/b/sub/3.webp')
touch('data/a/notes.txt', '../../nowhere.txt')
touch('data/b/sub/.DS_Store', '/nonexistent/ds')
touch('data/gone', '../nowhere')
expected('data', 'want.json')
"
    ));
    env.write("s.yaml", EVERY_ROW);
    let want = read_json(&env, "want.json");
    let report = env.check_json(&["-s", "s.yaml", "data"], 1);
    assert_eq!(report["errors"], Value::Array(vec![]), "{report:#}");
    let samples: BTreeMap<String, Value> = want["samples"]
        .as_object()
        .expect("samples")
        .iter()
        .map(|(p, i)| (p.clone(), i.clone()))
        .collect();
    assert_eq!(samples.len(), 3);
    assert_eq!(by_file(&report, "label", "values"), samples);
}

#[test]
fn coco_annotations_without_images_are_all_checked() {
    // `images: []`: annotations alone (a label dump or a fixture); no image
    // reaches any of them, but each is a row and is checked. With images,
    // an annotation no image has is not checked (pycocotools never loads it).
    let env = Env::new();
    let anns = r#"[{"id": 1, "image_id": 1, "category_id": 3}, {"id": 2, "image_id": 7, "category_id": 95}]"#;
    let cats = r#"[{"id": 3, "name": "a"}, {"id": 95, "name": "b"}]"#;
    env.write(
        "alone/a.json",
        &format!(r#"{{"images": [], "annotations": {anns}, "categories": {cats}}}"#),
    );
    env.write(
        "with/a.json",
        &format!(r#"{{"images": [{{"id": 1}}], "annotations": {anns}, "categories": {cats}}}"#),
    );
    env.write("s.yaml", "columns:\n  category_id: {kind: class, num_classes: 91}\n");
    let report = env.check_json(&["-s", "s.yaml", "alone/a.json"], 1);
    assert_eq!(
        by_row(&report, "category_id", "class"),
        BTreeMap::from([(1, Value::from(95))])
    );
    let report = env.check_json(&["-s", "s.yaml", "with/a.json"], 0);
    assert!(
        warnings(&report)
            .iter()
            .any(|w| w.contains("1 annotation(s) name an image_id")),
        "{report:#}"
    );
}

/// torchvision's degenerate-box test and conversions, from the installed
/// package's source (tests/oracles/torchvision_boxes.py).
const BOXES_PY: &str = include_str!("../oracles/torchvision_boxes.py");

#[test]
fn coco_boxes_as_torchvision_detection_models_judge_them() {
    // 600 annotations from a seeded generator over images with and without
    // sizes: whole and fractional boxes, zero and negative sizes, widths
    // below float32's step, NaN and infinities, 1e300 (infinite in
    // float32), wrong counts, text, missing boxes, and annotations of no
    // image. Which boxes are violations is torchvision's own test (plus
    // finiteness); which reach past their image is counted in Python.
    let env = Env::new();
    env.python(&format!(
        r#"{BOXES_PY}
import json, math, random
random.seed(5)
images = [{{"id": i, "file_name": f"{{i}}.jpg", "width": 640, "height": 480}} for i in range(1, 21)]
images += [{{"id": i, "file_name": f"{{i}}.jpg"}} for i in range(21, 26)]   # no sizes
def number():
    r = random.random()
    if r < 0.3: return random.randint(0, 700)
    if r < 0.6: return round(random.uniform(-5, 700), 2)
    return random.choice([0, 0.0, -1, -0.0, 1e-5, 1e-30, 1000.5, float('nan'), float('inf'), -float('inf'), 1e300, 639, 640.0, 479.5])
anns = []
for k in range(600):
    a = {{"id": k + 1, "image_id": random.randint(1, 26), "category_id": 1}}
    r = random.random()
    if r < 0.9:
        a["bbox"] = [number() for _ in range(4)]
    elif r < 0.93:
        a["bbox"] = [number() for _ in range(random.choice([0, 3, 5]))]
    elif r < 0.96:
        a["bbox"] = [1, "2", 3, 4]
    # else: no bbox at all (null in the column)
    anns.append(a)
anns[7]["bbox"] = [1000, 5, 1e-5, 3]     # x + w == x in float32
anns[8]["bbox"] = [10, 10, 0, 20]        # zero width
anns[9]["bbox"] = [10.5, 10, 20, 20]     # clean
anns[10]["image_id"] = 1
anns[10]["bbox"] = [630, 10, 20, 20]     # past the right edge
json.dump({{"images": images, "annotations": anns, "categories": [{{"id": 1, "name": "a"}}]}}, open("coco.json", "w"))
ids = {{im["id"]: im for im in images}}
bad, missing, outside, unsized = [], [], [], 0
for row, a in enumerate(anns):
    if a["image_id"] not in ids:
        continue   # no image: pycocotools never loads it
    b = a.get("bbox")
    if b is None:
        missing.append(row)
        continue
    numbers = len(b) == 4 and all(type(v) in (int, float) for v in b)
    if not numbers or not finite(b) or rejects(b):
        bad.append(row)
    if numbers and all(math.isfinite(v) for v in b):
        im = ids[a["image_id"]]
        if "width" not in im:
            unsized += 1
            continue
        x, y, w, h = b
        if x + w > x and y + h > y and (x < 0 or y < 0 or x + w > im["width"] or y + h > im["height"]):
            outside.append(row)
json.dump({{"bad": bad, "missing": missing, "outside": outside, "unsized": unsized}}, open("want.json", "w"))
"#
    ));
    env.write("s.yaml", "columns:\n  bbox: {kind: box, format: xywh}\n");
    let report = env.check_json(&["-s", "s.yaml", "coco.json", "--max-examples", "100000"], 1);
    let want = read_json(&env, "want.json");
    let rows = |v: &Value| -> Vec<u64> {
        v.as_array()
            .expect("rows")
            .iter()
            .map(|r| r.as_u64().expect("row"))
            .collect()
    };
    let bad = rows(&want["bad"]);
    assert!(bad.len() > 100, "the generator plants {} bad boxes", bad.len());
    assert_eq!(crate::util::rows(&report, "bbox", "box"), bad);
    assert_eq!(crate::util::rows(&report, "bbox", "null"), rows(&want["missing"]));
    let boxes = by_row(&report, "bbox", "box");
    assert_eq!(boxes[&7], "[1000, 5, 1e-5, 3]");
    assert_eq!(boxes[&8], "[10, 10, 0, 20]");
    assert!(!boxes.contains_key(&9));
    let outside = rows(&want["outside"]);
    let w = warnings(&report);
    let note = w
        .iter()
        .find(|m| m.contains("reach past"))
        .expect("a note on boxes past the edges");
    assert!(
        note.starts_with(&format!(
            "coco.json: {} bbox(es) reach past their image's edges (first: annotations[{}], xywh ",
            outside.len(),
            outside[0]
        )),
        "{note}"
    );
    assert!(
        note.contains(&format!(
            "; {} bbox(es) belong to images without a numeric `width` and `height`",
            want["unsized"]
        )),
        "{note}"
    );
    // The human report names the rule and torchvision's error.
    let out = env.run(&["check", "-s", "s.yaml", "coco.json"]);
    assert!(out.stdout.contains("error[box]: column `bbox`:"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("All bounding boxes should have positive height and width")
    );
    // Without a box rule, nothing is said of boxes.
    env.write("plain.yaml", "columns:\n  category_id: {kind: class, num_classes: 2}\n");
    let report = env.check_json(&["-s", "plain.yaml", "coco.json"], 0);
    assert!(!warnings(&report).iter().any(|m| m.contains("bbox")), "{report:#}");
}

#[test]
fn box_rules_of_other_formats_and_lists_of_boxes() {
    // A Parquet column of a list of boxes per image (the Hugging Face
    // detection datasets' `objects.bbox`, here a top-level column) in
    // Pascal VOC corners, judged box by box with torchvision's test.
    let env = Env::new();
    env.python(&format!(
        r#"{BOXES_PY}
import json, random
import pyarrow as pa, pyarrow.parquet as pq
random.seed(3)
rows, bad = [], []
for r in range(300):
    boxes = []
    for j in range(random.randint(0, 4)):
        b = [round(random.uniform(0, 50), 1) for _ in range(2)]
        b += [b[0] + random.choice([0, 0.5, 10, -1, 1e-6]), b[1] + random.choice([0, 3, 7, -2])]
        boxes.append(b)
        if not finite(b) or rejects(b, "xyxy"):
            bad.append([r, j])
    rows.append(boxes)
os.makedirs("d", exist_ok=True)
t = pa.table({{"bbox": pa.array(rows, pa.list_(pa.list_(pa.float32(), 4)))}})
pq.write_table(t.slice(0, 150), "d/a.parquet", row_group_size=40)
pq.write_table(t.slice(150), "d/b.parquet", row_group_size=40)
json.dump(bad, open("want.json", "w"))
"#
    ));
    env.write("s.yaml", "columns:\n  bbox: {kind: box, format: xyxy}\n");
    let args = ["-s", "s.yaml", "d", "--max-examples", "100000"];
    let report = env.check_json(&args, 1);
    // A row per bad box, in the order of its boxes.
    let want: Vec<(String, u64)> = read_json(&env, "want.json")
        .as_array()
        .expect("list")
        .iter()
        .map(|p| {
            let r = p[0].as_u64().expect("row");
            if r < 150 {
                ("d/a.parquet".to_string(), r)
            } else {
                ("d/b.parquet".to_string(), r - 150)
            }
        })
        .collect();
    assert!(want.len() > 50, "{}", want.len());
    let got: Vec<(String, u64)> = hits(&report, "bbox", "box")
        .1
        .into_iter()
        .map(|(f, r, _)| (f, r))
        .collect();
    assert_eq!(got, want);
    // The same report at any thread count, and merged from partial reports.
    let json = |extra: &[&str]| {
        let mut a = vec!["check", "--format", "json"];
        a.extend_from_slice(&args);
        a.extend_from_slice(extra);
        env.run(&a).stdout
    };
    let one = json(&["--jobs", "1"]);
    assert_eq!(json(&["--jobs", "2"]), one);
    for (name, file) in [("a.json", "d/a.parquet"), ("b.json", "d/b.parquet")] {
        let r = env.run(&[
            "check",
            "-s",
            "s.yaml",
            "--format",
            "json",
            "--max-examples",
            "100000",
            "--partial",
            file,
        ]);
        env.write(name, &r.stdout);
    }
    let merged = env.run(&["merge", "b.json", "a.json", "--format", "json"]);
    assert_eq!(merged.stdout, one);
    // The schema says how a box is written; keys that judge elements do not apply.
    for (rule, says) in [
        ("{kind: box}", "kind `box` needs `format`"),
        (
            "{kind: box, format: ltrb}",
            "`ltrb` is not a box format (one of xywh, xyxy, cxcywh)",
        ),
        (
            "{kind: box, format: xywh, max_length: 4}",
            "`max_length` does not apply to kind `box`",
        ),
        ("{kind: range, format: xywh}", "`format` does not apply to kind `range`"),
    ] {
        env.write("bad.yaml", &format!("columns:\n  bbox: {rule}\n"));
        let out = env.run(&["check", "-s", "bad.yaml", "d"]);
        assert_eq!(out.code, 2, "{rule}");
        assert!(out.stdout.contains(says), "{rule}: {}", out.stdout);
    }
}

#[test]
fn yolo_boxes_of_no_area_are_noted_as_ultralytics_drops_them() {
    let env = Env::new();
    env.python(&format!(
        r#"{YOLO_PY}
write('labels/a.txt', [(0, 0.5, 0.5, 0.2, 0.2), (1, 0.5, 0.5, 0, 0.2), (2, 0.1, 0.1, 0.3, 0), (3, 0.5, 0.5, 0.001, 0.001)])
write('labels/b.txt', ['4 0.2 0.1 0.2 0.5 0.2 0.9\n', '4 0.1 0.1 0.5 0.1 0.9 0.1\n'])   # segments: a vertical and a flat polygon
write('labels/c.txt', [(0, 0.5, 0.5, 0.2, 0.2)])
json.dump({{p: zero_area_rows(read_labels(p)) for p in ['labels/a.txt', 'labels/b.txt', 'labels/c.txt']}}, open('want.json', 'w'))
"#
    ));
    env.write(
        "s.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: class, num_classes: 80}\n",
    );
    let want = read_json(&env, "want.json");
    assert_eq!(want["labels/a.txt"], serde_json::json!([1, 2]));
    assert_eq!(want["labels/b.txt"], serde_json::json!([0, 1]));
    assert_eq!(want["labels/c.txt"], serde_json::json!([]));
    let report = env.check_json(&["-s", "s.yaml", "labels"], 0);
    let notes: Vec<String> = warnings(&report)
        .into_iter()
        .filter(|w| w.contains("zero width or height"))
        .collect();
    let note = |path: &str, n: u64, first: u64| {
        format!(
            "{path}: {n} label line(s) with a box of zero width or height (first: line {first}): ultralytics drops these objects when training (its augmentations keep only boxes of positive area)"
        )
    };
    assert_eq!(notes, vec![note("labels/a.txt", 2, 2), note("labels/b.txt", 2, 1)]);
}

#[test]
fn coco_images_without_sizes_are_measured_from_their_files() {
    // `images[]` without width/height (as some exporters write it): with the
    // box rule's `images:` folder, each image's size is its file's (as
    // Pillow reads it); a missing file leaves its boxes not compared.
    let env = Env::new();
    env.python(
        r#"
from PIL import Image
os.makedirs("imgs", exist_ok=True)
Image.new("RGB", (100, 50)).save("imgs/a.jpg")
Image.new("L", (30, 40)).save("imgs/b.png")
images = [{"id": 1, "file_name": "a.jpg"}, {"id": 2, "file_name": "b.png"}, {"id": 3, "file_name": "gone.jpg"}]
anns = [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [10, 10, 80, 30]},
        {"id": 2, "image_id": 1, "category_id": 1, "bbox": [90, 10, 20, 30]},
        {"id": 3, "image_id": 2, "category_id": 1, "bbox": [0, 0, 30, 40]},
        {"id": 4, "image_id": 2, "category_id": 1, "bbox": [0, 0, 30, 41]},
        {"id": 5, "image_id": 3, "category_id": 1, "bbox": [0, 0, 5, 5]}]
json.dump({"images": images, "annotations": anns, "categories": [{"id": 1, "name": "a"}]}, open("c.json", "w"))
assert [Image.open(f"imgs/{f}").size for f in ("a.jpg", "b.png")] == [(100, 50), (30, 40)]
"#,
    );
    env.write("s.yaml", "columns:\n  bbox: {kind: box, format: xywh, images: imgs}\n");
    let report = env.check_json(&["-s", "s.yaml", "c.json"], 0);
    let w = warnings(&report);
    assert_eq!(w.len(), 1, "{w:#?}");
    assert!(
        w[0].starts_with(
            "c.json: 2 bbox(es) reach past their image's edges (first: annotations[1], xywh [90.0, 10.0, 20.0, 30.0] in a 100x50 image)"
        ),
        "{}",
        w[0]
    );
    assert!(
        w[0].contains("; 1 bbox(es) belong to images without a numeric `width` and `height` in `images` and whose file under imgs cannot be read"),
        "{}",
        w[0]
    );
    // Without the folder, none is compared, and the warning says how.
    env.write("n.yaml", "columns:\n  bbox: {kind: box, format: xywh}\n");
    let w = warnings(&env.check_json(&["-s", "n.yaml", "c.json"], 0));
    assert!(w[0].contains("5 bbox(es) belong to images without a numeric `width` and `height` in `images` (set the box rule's `images:` to the image folder to read their sizes)"), "{w:#?}");
}
