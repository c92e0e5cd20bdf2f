//! Label names against the model's `id2label`: the same names in another
//! order train every sample of a class as another class, silently ("pos"
//! learnt as "neg"), which no bound can see. The model's names come from
//! the config.json the schema reads; the data's from wherever the data
//! carries them (a `datasets` `ClassLabel`, COCO categories, an image
//! folder's class folders, the schema's `classes`), each compared here.

use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use super::raw::{Bound, RawColumn};

/// The label names of a model's head, in class-index order.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelLabels {
    /// `id2label[i]`; `None` where it is no name (`LABEL_3`, `N/A`).
    pub names: Vec<Option<String>>,
    /// Where they were read, e.g. `model/config.json: id2label`.
    pub source: String,
}

/// The label names a data source carries for a schema column, kept to
/// compare the splits of a run with one another.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct LabelNames {
    /// The schema column.
    pub column: String,
    /// The file or folder that carries them, as reports name it.
    pub file: String,
    /// What in it names them, e.g. `its categories`.
    pub from: String,
    /// `names[i]` is class i's name; `None` where the data names none.
    pub names: Vec<Option<String>>,
}

/// What comparing the data's names with the model's found.
#[derive(Debug, Clone, PartialEq)]
pub enum Clash {
    /// A name the model knows sits at another index: an error.
    Order(String),
    /// Names on one side only: a warning.
    Absent(String),
}

/// The config.json a bound reads, if it reads one.
pub(crate) fn config_of(bound: &Bound, base: &Path) -> Option<PathBuf> {
    let Bound::Ref(r) = bound else { return None };
    let mut file = base.join(r.hf_config.as_ref()?);
    if file.is_dir() {
        file = file.join("config.json");
    }
    Some(file)
}

/// Every config.json the columns' bounds read, each once.
pub(crate) fn configs(columns: &[(String, RawColumn)], base: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for (_, c) in columns {
        let bounds = [
            &c.num_classes,
            &c.size,
            &c.tokenizer_size,
            &c.min,
            &c.max,
            &c.max_length,
            &c.min_length,
        ];
        for file in bounds.into_iter().flatten().filter_map(|b| config_of(b, base)) {
            if !out.contains(&file) {
                out.push(file);
            }
        }
    }
    out
}

/// The `id2label` of a config.json, when it holds names: keys 0..n-1
/// (as Hugging Face writes them, strings), at least one value that is not
/// a default name (`LABEL_i`) or a gap (`N/A`, as DETR's COCO heads have).
pub(crate) fn id2label(file: &Path) -> Option<ModelLabels> {
    let text = std::fs::read_to_string(file).ok()?;
    let json: Json = serde_json::from_str(&text).ok()?;
    let map = json.get("id2label")?.as_object()?;
    let mut names: Vec<Option<String>> = vec![None; map.len()];
    for (k, v) in map {
        let i: usize = k.trim().parse().ok()?;
        let name = v.as_str()?;
        let slot = names.get_mut(i)?;
        let default = name == format!("LABEL_{i}") || name == "N/A";
        *slot = (!default).then(|| name.to_string());
    }
    names.iter().any(Option::is_some).then(|| ModelLabels {
        names,
        source: format!("{}: id2label", file.display()),
    })
}

/// Compares the data's names (`data[i]` is class i's name, `None` where the
/// data names none) with the model's.
pub fn compare(data: &[Option<String>], from: &str, model: &ModelLabels) -> Option<Clash> {
    let index_of = |names: &[Option<String>], n: &str| names.iter().position(|m| m.as_deref() == Some(n));
    let moved = data.iter().enumerate().find_map(|(i, d)| {
        let d = d.as_deref()?;
        let m = model.names.get(i)?.as_deref()?;
        let j = index_of(&model.names, d)?;
        (d != m).then_some((i, d, m, j))
    });
    if let Some((i, d, m, j)) = moved {
        return Some(Clash::Order(format!(
            "class {i} is `{d}` in {from} but `{m}` in the model's id2label ({}), which has `{d}` at {j}: \
             the same names in another order train every `{d}` sample as `{m}`; map the labels through \
             the model's label2id (or build the model with this id2label); {from}: {}, id2label: {}",
            model.source,
            shown(data),
            shown(&model.names)
        )));
    }
    // A name the other side lacks, unless that side leaves its class unnamed.
    let only = |a: &[Option<String>], b: &[Option<String>]| -> Vec<String> {
        a.iter()
            .enumerate()
            .filter_map(|(i, n)| Some((i, n.as_deref()?)))
            .filter(|&(i, n)| index_of(b, n).is_none() && !matches!(b.get(i), Some(None)))
            .map(|(_, n)| format!("`{n}`"))
            .collect()
    };
    let (data_only, model_only) = (only(data, &model.names), only(&model.names, data));
    if data_only.is_empty() && model_only.is_empty() {
        return None;
    }
    let mut says = Vec::new();
    if !data_only.is_empty() {
        says.push(format!("{from} names {} that id2label lacks", list(&data_only)));
    }
    if !model_only.is_empty() {
        says.push(format!("id2label names {} that {from} lacks", list(&model_only)));
    }
    Some(Clash::Absent(format!(
        "the label names differ from the model's id2label ({}): {}; check that the labels and the head \
         describe the same classes",
        model.source,
        says.join(", and ")
    )))
}

fn list(names: &[String]) -> String {
    let mut s = names.iter().take(8).cloned().collect::<Vec<_>>().join(", ");
    if names.len() > 8 {
        s += &format!(" and {} more", names.len() - 8);
    }
    s
}

/// `[neg, pos]`, a name-less class as `?`, at most 30 shown.
fn shown(names: &[Option<String>]) -> String {
    let mut s: Vec<&str> = names.iter().take(30).map(|n| n.as_deref().unwrap_or("?")).collect();
    if names.len() > 30 {
        s.push("...");
    }
    format!("[{}]", s.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: &[&str]) -> Vec<Option<String>> {
        n.iter().map(|s| (!s.is_empty()).then(|| s.to_string())).collect()
    }

    fn model(n: &[&str]) -> ModelLabels {
        ModelLabels {
            names: names(n),
            source: "m/config.json: id2label".into(),
        }
    }

    #[test]
    fn the_same_names_in_order_pass_and_unnamed_classes_never_clash() {
        assert_eq!(compare(&names(&["neg", "pos"]), "d", &model(&["neg", "pos"])), None);
        assert_eq!(compare(&names(&["neg", ""]), "d", &model(&["neg", "pos"])), None);
        assert_eq!(compare(&names(&["neg", "pos"]), "d", &model(&["", "pos"])), None);
    }

    #[test]
    fn another_order_is_an_error_naming_both_lists() {
        let Some(Clash::Order(m)) = compare(&names(&["pos", "neg"]), "the ClassLabel", &model(&["neg", "pos"])) else {
            panic!("an order clash")
        };
        assert!(m.starts_with("class 0 is `pos` in the ClassLabel but `neg` in the model's id2label (m/config.json: id2label), which has `pos` at 1"), "{m}");
        assert!(m.ends_with("the ClassLabel: [pos, neg], id2label: [neg, pos]"), "{m}");
        // A shift by a missing class is an order clash too.
        assert!(matches!(
            compare(&names(&["b", "c"]), "d", &model(&["a", "b", "c"])),
            Some(Clash::Order(_))
        ));
    }

    #[test]
    fn names_on_one_side_only_warn() {
        let Some(Clash::Absent(m)) = compare(&names(&["neg", "pos", "mixed"]), "d", &model(&["neg", "pos"])) else {
            panic!("absent names")
        };
        assert!(m.contains("d names `mixed` that id2label lacks"), "{m}");
        let Some(Clash::Absent(m)) = compare(&names(&["cat", "dog"]), "d", &model(&["neg", "pos"])) else {
            panic!("absent names")
        };
        assert!(
            m.contains("d names `cat`, `dog` that id2label lacks, and id2label names `neg`, `pos` that d lacks"),
            "{m}"
        );
    }

    #[test]
    fn id2label_of_default_names_is_no_names() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.json");
        std::fs::write(&p, r#"{"id2label": {"0": "LABEL_0", "1": "LABEL_1"}}"#).unwrap();
        assert_eq!(id2label(&p), None);
        std::fs::write(&p, r#"{"id2label": {"1": "pos", "0": "neg", "2": "N/A"}}"#).unwrap();
        assert_eq!(id2label(&p).unwrap().names, names(&["neg", "pos", ""]));
        std::fs::write(&p, r#"{"id2label": {"0": "neg", "2": "pos"}}"#).unwrap();
        assert_eq!(id2label(&p), None);
    }
}
