//! Label names against the model's `id2label`: the same names in another
//! order are an error (every sample of a class trains as another), names on
//! one side only a warning. The names come from the real writers:
//! `transformers`' config (`id2label`), `datasets`' `ClassLabel` (Parquet
//! and `save_to_disk` Arrow files), image folders as torchvision's
//! `find_classes` lists them, COCO categories and the schema's `classes`.

use crate::util::{Env, hits, messages, read_json};

/// A model config with names, one with transformers' default names, and
/// datasets whose ClassLabel is in the model's order, reversed, or longer.
const WRITE: &str = r#"
import json, os
from datasets import ClassLabel, Dataset, Features, Value
from transformers import BertConfig
BertConfig(num_labels=2, id2label={0: "neg", 1: "pos"}).save_pretrained("model")
# transformers 4 saved its default names (transformers 5 leaves them out),
# as many configs on the Hub still carry them.
os.makedirs("plain", exist_ok=True)
json.dump({"model_type": "bert", "id2label": {"0": "LABEL_0", "1": "LABEL_1"},
           "label2id": {"LABEL_0": 0, "LABEL_1": 1}}, open("plain/config.json", "w"))
def write(names, labels, to):
    features = Features({"text": Value("string"), "label": ClassLabel(names=names)})
    ds = Dataset.from_dict({"text": ["t"] * len(labels), "label": labels}, features=features)
    ds.to_parquet(to)
    return ds
write(["neg", "pos"], [0, 1, 1], "d/same.parquet")
swapped = write(["pos", "neg"], [0, 1, 0], "d/swapped.parquet")
write(["neg", "pos", "mixed"], [0, 1, 1], "d/more.parquet")
swapped.save_to_disk("disk")
cfg = json.load(open("model/config.json"))
json.dump({"model": [cfg["id2label"][str(i)] for i in range(2)],
           "swapped": swapped.features["label"].names,
           "plain": json.load(open("plain/config.json"))["id2label"]}, open("names.json", "w"))
"#;

#[test]
fn datasets_class_labels_in_another_order_than_id2label_are_errors() {
    let env = Env::new();
    env.python(WRITE);
    let names = read_json(&env, "names.json");
    assert_eq!(names["model"], serde_json::json!(["neg", "pos"]));
    assert_eq!(names["swapped"], serde_json::json!(["pos", "neg"]));
    assert_eq!(names["plain"]["0"], "LABEL_0");
    env.write(
        "s.yaml",
        "columns:\n  label: {kind: class, num_classes: {hf_config: model, key: num_labels}}\n",
    );
    let report = env.check_json(&["-s", "s.yaml", "d"], 2);
    let errors = messages(&report, "errors");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert_eq!(
        errors[0],
        "d/swapped.parquet: column `label`: class 0 is `pos` in the file's `datasets` ClassLabel but `neg` in the model's id2label (model/config.json: id2label), which has `pos` at 1: the same names in another order train every `pos` sample as `neg`; map the labels through the model's label2id (or build the model with this id2label); the file's `datasets` ClassLabel: [pos, neg], id2label: [neg, pos]"
    );
    let warnings = messages(&report, "warnings");
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(
        warnings[0].starts_with("d/more.parquet: column `label`: the label names differ from the model's id2label")
            && warnings[0].contains("the file's `datasets` ClassLabel names `mixed` that id2label lacks"),
        "{}",
        warnings[0]
    );
    // The files are still checked (every label of these files is a class).
    assert_eq!(hits(&report, "label", "class").0, 0);
    assert_eq!(report["rows"], 9);
    // The same report at any thread count, and merged from one partial per file.
    let full = |jobs: &str| {
        env.run(&["check", "-s", "s.yaml", "d", "--format", "json", "--jobs", jobs])
            .stdout
    };
    let one = full("1");
    assert_eq!(full("2"), one);
    for f in ["same", "swapped", "more"] {
        let r = env.run(&[
            "check",
            "-s",
            "s.yaml",
            &format!("d/{f}.parquet"),
            "--format",
            "json",
            "--partial",
        ]);
        env.write(&format!("{f}.json"), &r.stdout);
    }
    let merged = env.run(&["merge", "more.json", "swapped.json", "same.json", "--format", "json"]);
    assert_eq!(merged.stdout, one);
    // A partial compared with another model's names (the same config.json
    // rewritten) is another check.
    env.python(
        "from transformers import BertConfig\n\
         BertConfig(num_labels=2, id2label={0: 'pos', 1: 'neg'}).save_pretrained('model')",
    );
    let r = env.run(&[
        "check",
        "-s",
        "s.yaml",
        "d/same.parquet",
        "--format",
        "json",
        "--partial",
    ]);
    env.write("other.json", &r.stdout);
    let refused = env.run(&["merge", "more.json", "other.json"]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("other.json: written with another schema"),
        "{}",
        refused.stderr
    );
    env.python(
        "from transformers import BertConfig\n\
         BertConfig(num_labels=2, id2label={0: 'neg', 1: 'pos'}).save_pretrained('model')",
    );
    // The same from the Arrow files of `save_to_disk`.
    let report = env.check_json(&["-s", "s.yaml", "disk"], 2);
    let errors = messages(&report, "errors");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].contains("class 0 is `pos` in the file's `datasets` ClassLabel but `neg`"),
        "{}",
        errors[0]
    );
    // transformers' default names (LABEL_0, LABEL_1) are no names.
    env.write(
        "plain.yaml",
        "columns:\n  label: {kind: class, num_classes: {hf_config: plain, key: num_labels}}\n",
    );
    let report = env.check_json(&["-s", "plain.yaml", "d"], 0);
    assert!(report.get("warnings").is_none(), "{report:#}");
}

#[test]
fn the_schemas_classes_image_folders_and_coco_categories_meet_id2label() {
    let env = Env::new();
    env.python(&format!(
        "{WRITE}\n{}\n{}",
        include_str!("../oracles/torchvision_folder.py"),
        r#"
from PIL import Image
for split, classes in [("train", ["neg", "pos"]), ("val", ["pos", "zzz"])]:
    for c in classes:
        os.makedirs(f"folders/{split}/{c}", exist_ok=True)
        Image.new("L", (2, 2)).save(f"folders/{split}/{c}/a.png")
json.dump({s: find_classes(f"folders/{s}")[1] for s in ["train", "val"]}, open("folders.json", "w"))
cats = [{"id": 7, "name": "pos"}, {"id": 3, "name": "neg"}]
json.dump({"images": [{"id": 1}], "annotations": [{"id": 1, "image_id": 1, "category_id": 3}],
           "categories": cats}, open("coco.json", "w"))
"#
    ));
    // torchvision numbers val's folders on their own: pos is class 0 there.
    let folders = read_json(&env, "folders.json");
    assert_eq!(folders["val"]["pos"], 0);
    env.write(
        "f.yaml",
        "dataset: {layout: image_folder}\ncolumns:\n  label: {kind: class, num_classes: {hf_config: model, key: num_labels}}\n",
    );
    let report = env.check_json(&["-s", "f.yaml", "folders/train", "folders/val"], 2);
    let errors = messages(&report, "errors");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with("folders/val: column `label`: class 0 is `pos` in its class folders but `neg`"),
        "{}",
        errors[0]
    );
    // COCO under detectron2's mapping: sorted ids 3, 7 are neg, pos.
    env.write(
        "c.yaml",
        "columns:\n  category_id: {kind: class, num_classes: {hf_config: model, key: num_labels}, coco_mapping: contiguous}\n",
    );
    let report = env.check_json(&["-s", "c.yaml", "coco.json"], 0);
    assert!(report.get("warnings").is_none(), "{report:#}");
    // mmdetection's by_name order is the file's: pos, neg.
    env.write(
        "m.yaml",
        "columns:\n  category_id: {kind: class, num_classes: {hf_config: model, key: num_labels}, coco_mapping: {by_name: [neg, pos]}}\n",
    );
    let report = env.check_json(&["-s", "m.yaml", "coco.json"], 2);
    assert!(
        messages(&report, "errors")[0]
            .contains("class 0 is `pos` in the COCO categories (as mmdetection numbers the listed names)"),
        "{report:#}"
    );
    // The schema's own `classes`, with the model read by another column.
    env.write(
        "n.yaml",
        "columns:\n  label: {kind: class, classes: [pos, neg]}\n  input_ids: {kind: index, size: {hf_config: model, key: vocab_size}}\n",
    );
    let out = env.run(&["check", "-s", "n.yaml", "d/same.parquet"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stdout
            .contains("columns.label.classes: class 0 is `pos` in the schema's `classes` but `neg`"),
        "{}",
        out.stdout
    );
}

#[test]
fn a_yolo_dataset_yamls_names_meet_id2label() {
    let env = Env::new();
    env.python(&format!(
        "{WRITE}\n{}\n{}",
        include_str!("../oracles/ultralytics_labels.py"),
        r#"
import yaml
from PIL import Image
for d, names in [("swapped", {0: "pos", 1: "neg"}), ("same", ["neg", "pos"])]:
    os.makedirs(f"{d}/images/train", exist_ok=True)
    os.makedirs(f"{d}/labels/train", exist_ok=True)
    Image.new("RGB", (4, 4)).save(f"{d}/images/train/a.jpg")
    open(f"{d}/labels/train/a.txt", "w").write("1 0.5 0.5 0.2 0.2\n")
    yaml.safe_dump({"path": d, "train": "images/train", "val": "images/train", "names": names},
                   open(f"{d}/data.yaml", "w"))
json.dump({d: check_class_names(yaml.safe_load(open(f"{d}/data.yaml"))["names"]) for d in ["swapped", "same"]},
          open("yolo.json", "w"))
"#
    ));
    // ultralytics numbers the names as written.
    let names = read_json(&env, "yolo.json");
    assert_eq!(names["swapped"]["0"], "pos");
    assert_eq!(names["same"]["0"], "neg");
    env.write(
        "y.yaml",
        "dataset: {layout: yolo}\ncolumns:\n  class: {kind: class, num_classes: {hf_config: model, key: num_labels}}\n",
    );
    let report = env.check_json(&["-s", "y.yaml", "swapped/data.yaml"], 2);
    let errors = messages(&report, "errors");
    assert_eq!(errors.len(), 1, "{errors:#?}");
    assert!(
        errors[0].starts_with("swapped/data.yaml: column `class`: class 0 is `pos` in its `names` but `neg`"),
        "{}",
        errors[0]
    );
    let report = env.check_json(&["-s", "y.yaml", "same/data.yaml"], 0);
    assert!(report.get("warnings").is_none(), "{report:#}");
}
