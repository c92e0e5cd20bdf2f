//! Bounds read from the model's own files.
//!
//! A schema that copies `vocab_size` by hand drifts when the tokenizer grows;
//! a reference to `config.json` does not. References are resolved relative
//! to the schema file, once, before any data is read.

use std::path::Path;

use serde_json::Value as Json;

use super::Number;
use super::raw::{Bound, Reference};
use crate::error::Error;

/// A resolved bound and where its number came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    /// The number.
    pub value: Number,
    /// `None` for a literal, else e.g. `model/config.json: vocab_size`.
    pub source: Option<String>,
}

pub(crate) fn resolve(bound: &Bound, base: &Path, key_path: &str, schema: &Path) -> Result<Resolved, Error> {
    match bound {
        Bound::Literal(n) => Ok(Resolved {
            value: *n,
            source: None,
        }),
        Bound::Ref(r) => resolve_ref(r, base, key_path, schema),
    }
}

fn resolve_ref(r: &Reference, base: &Path, key_path: &str, schema: &Path) -> Result<Resolved, Error> {
    let schema_err = |message: String| Error::Schema {
        file: schema.to_path_buf(),
        key: Some(key_path.to_string()),
        message,
    };
    let sources = [
        &r.hf_config,
        &r.tokenizer,
        &r.vocab_file,
        &r.class_names,
        &r.nanogpt_meta,
        &r.yolo_data,
    ]
    .iter()
    .filter(|s| s.is_some())
    .count();
    if sources != 1 {
        return Err(schema_err(
            "a reference needs exactly one of hf_config, tokenizer, vocab_file, class_names, nanogpt_meta, yolo_data"
                .into(),
        ));
    }
    if r.key.is_some() && r.hf_config.is_none() {
        return Err(schema_err("`key` belongs to an hf_config reference only".into()));
    }
    let (value, source) = if let Some(cfg) = &r.hf_config {
        let key = r
            .key
            .as_deref()
            .ok_or_else(|| schema_err("an hf_config reference needs `key` (e.g. vocab_size)".into()))?;
        let mut file = base.join(cfg);
        if file.is_dir() {
            file = file.join("config.json");
        }
        (hf_config_value(&file, key)?, format!("{}: {key}", file.display()))
    } else if let Some(tok) = &r.tokenizer {
        let file = base.join(tok);
        let file = if file.is_dir() {
            file.join("tokenizer.json")
        } else {
            file
        };
        (tokenizer_size(&file)?, file.display().to_string())
    } else if let Some(v) = &r.vocab_file {
        let file = base.join(v);
        let text = read_text(&file, "vocab_file")?;
        (text.split_terminator('\n').count() as i128, file.display().to_string())
    } else if let Some(c) = &r.class_names {
        let file = base.join(c);
        (class_names(&file)?.len() as i128, file.display().to_string())
    } else if let Some(m) = &r.nanogpt_meta {
        let file = base.join(m);
        let file = if file.is_dir() { file.join("meta.pkl") } else { file };
        let bytes = std::fs::read(&file).map_err(|e| Error::Reference {
            file: file.clone(),
            key: "nanogpt_meta".into(),
            message: format!("cannot read: {e}"),
        })?;
        let v = super::pickle::dict_int(&bytes, "vocab_size").map_err(|message| Error::Reference {
            file: file.clone(),
            key: "vocab_size".into(),
            message,
        })?;
        (v, format!("{}: vocab_size", file.display()))
    } else if let Some(y) = &r.yolo_data {
        let file = base.join(y);
        (yolo_classes(&file)?, format!("{}: nc", file.display()))
    } else {
        unreachable!("exactly one source was checked above")
    };
    let offset = r.offset.unwrap_or(0);
    let value = value
        .checked_add(offset.into())
        .ok_or_else(|| schema_err("offset overflows".into()))?;
    let source = match offset {
        0 => source,
        o if o > 0 => format!("{source} + {o}"),
        o => format!("{source} - {}", o.unsigned_abs()),
    };
    Ok(Resolved {
        value: Number::Int(value),
        source: Some(source),
    })
}

/// What a bound counts, as its source says: hints name the cause that fits
/// it (added tokens for a vocabulary, segments for token types, truncation
/// for positions, the head for labels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoundKind {
    /// Embedding rows of token ids (`vocab_size`, a tokenizer, a vocab file).
    Vocabulary,
    /// Segment types (`type_vocab_size`).
    TokenTypes,
    /// The position table (`max_position_embeddings`, `n_positions`, ...).
    Positions,
    /// The classes of a model's head (`num_labels`, len(id2label)).
    Labels,
    /// Another count read from a file (a config key of another meaning,
    /// `nc` of a YOLO dataset, a class-names file).
    Other,
}

/// The config key of a source as `resolve` writes it (`FILE: KEY`, with
/// ` + N`/` - N` for an offset); `None` for a source that is a file alone
/// (a tokenizer, a vocab or class-names file).
pub fn source_key(source: &str) -> Option<&str> {
    let (_, rest) = source.rsplit_once(": ")?;
    let key = rest.split(' ').next()?;
    let plain = !key.is_empty()
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        && !key.starts_with('.');
    plain.then_some(key)
}

/// What the bound of `key` (a schema key: `size`, `num_classes`, ...)
/// counts, from the column's `bound_sources`; `None` for a literal.
pub fn kind_of(sources: &[(String, String)], key: &str) -> Option<(BoundKind, Option<String>)> {
    let (_, source) = sources.iter().find(|(k, _)| k == key)?;
    let Some(cfg) = source_key(source) else {
        // A tokenizer or vocab file counts ids; a class-names file, classes.
        let kind = if key == "size" || key == "tokenizer_size" {
            BoundKind::Vocabulary
        } else {
            BoundKind::Other
        };
        return Some((kind, None));
    };
    let last = cfg.rsplit('.').next().unwrap_or(cfg);
    let kind = match last {
        "vocab_size" | "n_vocab" | "padded_vocab_size" => BoundKind::Vocabulary,
        "type_vocab_size" => BoundKind::TokenTypes,
        "max_position_embeddings" | "n_positions" | "n_ctx" | "max_source_positions" | "max_target_positions" => {
            BoundKind::Positions
        }
        "num_labels" => BoundKind::Labels,
        _ => BoundKind::Other,
    };
    Some((kind, Some(cfg.to_string())))
}

/// Reads a class-names file: one name a line, blank lines skipped.
pub(crate) fn class_names(file: &Path) -> Result<Vec<String>, Error> {
    let text = read_text(file, "class_names")?;
    Ok(text
        .lines()
        .map(|l| l.trim_end_matches('\r'))
        .filter(|l| !l.trim().is_empty())
        .map(str::to_string)
        .collect())
}

fn read_text(file: &Path, what: &str) -> Result<String, Error> {
    std::fs::read_to_string(file).map_err(|e| Error::Reference {
        file: file.to_path_buf(),
        key: what.to_string(),
        message: format!("cannot read: {e}"),
    })
}

fn read_json(file: &Path, key: &str) -> Result<Json, Error> {
    let text = read_text(file, key)?;
    serde_json::from_str(&text).map_err(|e| Error::Reference {
        file: file.to_path_buf(),
        key: key.to_string(),
        message: format!("not valid JSON: {e}"),
    })
}

fn hf_config_value(file: &Path, key: &str) -> Result<i128, Error> {
    let json = read_json(file, key)?;
    let err = |message: String| Error::Reference {
        file: file.to_path_buf(),
        key: key.to_string(),
        message,
    };
    let mut node = Some(&json);
    for part in key.split('.') {
        node = node.and_then(|n| n.get(part));
    }
    let value = match node {
        Some(v) => v,
        // Hugging Face does not store num_labels: it is len(id2label).
        None if key == "num_labels" || key.ends_with(".num_labels") => {
            let prefix = key.strip_suffix("num_labels").unwrap_or("");
            let mut n = Some(&json);
            for part in prefix.split('.').filter(|p| !p.is_empty()) {
                n = n.and_then(|x| x.get(part));
            }
            return match n.and_then(|x| x.get("id2label")).and_then(Json::as_object) {
                Some(map) => Ok(map.len() as i128),
                None => Err(err("no such key, and no id2label to count labels from".into())),
            };
        }
        None => return Err(err("no such key".into())),
    };
    whole(value).ok_or_else(|| err(format!("{value} is not a whole number")))
}

fn whole(v: &Json) -> Option<i128> {
    if let Some(i) = v.as_i64() {
        return Some(i.into());
    }
    if let Some(u) = v.as_u64() {
        return Some(u.into());
    }
    let f = v.as_f64()?;
    (f.is_finite() && f.fract() == 0.0 && f.abs() < 1e30).then_some(f as i128)
}

/// 1 + the largest id of a `tokenizer.json`, added tokens included.
fn tokenizer_size(file: &Path) -> Result<i128, Error> {
    let json = read_json(file, "tokenizer")?;
    let err = |message: &str| Error::Reference {
        file: file.to_path_buf(),
        key: "tokenizer".into(),
        message: message.to_string(),
    };
    let mut largest: Option<i128> = None;
    let mut see = |id: i128| largest = Some(largest.map_or(id, |m| m.max(id)));
    match json.pointer("/model/vocab") {
        // BPE, WordPiece, WordLevel: {token: id}
        Some(Json::Object(map)) => {
            for v in map.values() {
                see(whole(v).ok_or_else(|| err("a vocabulary id is not a whole number"))?);
            }
        }
        // Unigram: [[token, score], ...], the id is the position.
        Some(Json::Array(list)) if !list.is_empty() => see(list.len() as i128 - 1),
        _ => {}
    }
    if let Some(Json::Array(added)) = json.get("added_tokens") {
        for t in added {
            let id = t
                .get("id")
                .and_then(whole)
                .ok_or_else(|| err("an added token has no whole-number id"))?;
            see(id);
        }
    }
    largest
        .map(|m| m + 1)
        .ok_or_else(|| err("no model vocabulary and no added tokens"))
}

/// A warning when the artifacts disagree: a `vocab_size` read from a config
/// next to a tokenizer that holds more ids means tokens were added without
/// resizing the embedding matrix.
pub(crate) fn mismatch(bound: &Bound, base: &Path, value: Number) -> Option<String> {
    let Bound::Ref(r) = bound else { return None };
    let (cfg, key) = (r.hf_config.as_ref()?, r.key.as_deref()?);
    if key.rsplit('.').next() != Some("vocab_size") {
        return None;
    }
    let mut file = base.join(cfg);
    if file.is_dir() {
        file = file.join("config.json");
    }
    let tokenizer = file.parent()?.join("tokenizer.json");
    let size = tokenizer_size(&tokenizer).ok()?;
    let vocab = value.as_whole()? - i128::from(r.offset.unwrap_or(0));
    (size > vocab).then(|| {
        format!(
            "{} holds ids up to {} but {}: {key} is {vocab}: the tokenizer grew without model.resize_token_embeddings, and ids >= {vocab} will crash the embedding",
            tokenizer.display(),
            size - 1,
            file.display()
        )
    })
}

/// The class count of an ultralytics dataset YAML (`data.yaml`), as
/// `check_det_dataset` decides it: `len(names)` when `names` is given (a list
/// or an `{index: name}` mapping), else `nc`; both given and different is
/// the error ultralytics raises ("'names' length N and 'nc: M' must match").
/// `nc` as ultralytics' `check_det_dataset` reads it: an `int` (a YAML
/// bool is one in Python), else `float(nc)` when that is whole (`'10'`,
/// `10.0`); `None` for what it refuses.
fn yolo_nc(v: &serde_json::Value) -> Option<i128> {
    match v {
        serde_json::Value::Bool(b) => Some(i128::from(*b)),
        serde_json::Value::Number(n) => match n.as_i64() {
            Some(i) => Some(i128::from(i)),
            None => n.as_f64().and_then(crate::schema::float_to_whole),
        },
        serde_json::Value::String(s) => crate::schema::python_float(s).and_then(crate::schema::float_to_whole),
        _ => None,
    }
}

fn yolo_classes(file: &Path) -> Result<i128, Error> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    let err = |message: String| Error::Reference {
        file: file.to_path_buf(),
        key: "yolo_data".into(),
        message,
    };
    /// The number of entries of `names`, whatever they hold, and for a
    /// mapping the smallest and largest key as ultralytics' `int(k)` reads
    /// them (`None` inside: a key `int()` refuses).
    struct Count(usize, Option<Option<(i128, i128)>>);
    impl<'de> serde::Deserialize<'de> for Count {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Count;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("a list of class names or a mapping from index to name")
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Count, A::Error> {
                    let mut n = 0;
                    while s.next_element::<IgnoredAny>()?.is_some() {
                        n += 1;
                    }
                    Ok(Count(n, None))
                }
                fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Count, A::Error> {
                    let mut n = 0;
                    let mut keys: Option<(i128, i128)> = None;
                    let mut refused = false;
                    while let Some((k, IgnoredAny)) = m.next_entry::<serde_json::Value, IgnoredAny>()? {
                        n += 1;
                        let k = match &k {
                            serde_json::Value::Number(v) => v.as_i64().map(i128::from),
                            serde_json::Value::String(v) => v.trim().parse::<i128>().ok(),
                            _ => None,
                        };
                        match k {
                            Some(k) => {
                                keys = Some(keys.map_or((k, k), |(lo, hi)| (lo.min(k), hi.max(k))));
                            }
                            None => refused = true,
                        }
                    }
                    Ok(Count(n, Some(if refused { None } else { keys })))
                }
            }
            d.deserialize_any(V)
        }
    }
    /// `nc` as written, `null` included (ultralytics refuses a bare `nc:`).
    #[derive(Default)]
    enum Nc {
        #[default]
        Absent,
        Given(serde_json::Value),
    }
    impl<'de> serde::Deserialize<'de> for Nc {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            serde_json::Value::deserialize(d).map(Nc::Given)
        }
    }
    #[derive(serde::Deserialize)]
    struct Data {
        #[serde(default)]
        nc: Nc,
        names: Option<Count>,
    }
    let text = read_text(file, "yolo_data")?;
    let data: Data = serde_saphyr::from_str(&text).map_err(|e| err(format!("not a YOLO dataset YAML: {e}")))?;
    let nc = match data.nc {
        Nc::Absent => None,
        Nc::Given(v) => Some(yolo_nc(&v).ok_or_else(|| {
            err(format!(
                "'nc: {v}' must be an integer (ultralytics refuses this dataset)"
            ))
        })?),
    };
    match (data.names, nc) {
        (Some(Count(n, _)), Some(nc)) if n as i128 != nc => Err(err(format!(
            "'names' length {n} and 'nc: {nc}' must match (ultralytics refuses this dataset)"
        ))),
        // check_class_names: the keys of a mapping must be 0..n-1.
        (Some(Count(_, Some(None))), _) => Err(err(
            "a key of the `names` mapping is not an integer (ultralytics' int(k) refuses it)".into(),
        )),
        (Some(Count(n, Some(Some((lo, hi))))), _) if hi >= n as i128 => Err(err(format!(
            "{n}-class dataset requires class indices 0-{}, but you have invalid class indices {lo}-{hi} defined in your dataset YAML (ultralytics refuses this dataset)",
            n as i128 - 1
        ))),
        (Some(Count(0, _)), _) | (None, Some(..=0)) => Err(err(
            "a 0-class dataset: ultralytics needs at least one class name".into(),
        )),
        (Some(Count(n, _)), _) => Ok(n as i128),
        (None, Some(nc)) => Ok(nc),
        (None, None) => Err(err("neither `nc` nor `names`: ultralytics needs one of them".into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_names_its_config_key_and_kind() {
        assert_eq!(source_key("m/config.json: vocab_size"), Some("vocab_size"));
        assert_eq!(
            source_key("m/config.json: max_position_embeddings - 2"),
            Some("max_position_embeddings")
        );
        assert_eq!(
            source_key("a: b/config.json: text_config.vocab_size + 1"),
            Some("text_config.vocab_size")
        );
        assert_eq!(source_key("m/tokenizer.json"), None);
        assert_eq!(source_key("a: b/tokenizer.json"), None);
        let kind = |s: &str, key: &str| kind_of(&[(key.to_string(), s.to_string())], key).map(|k| k.0);
        assert_eq!(kind("c: type_vocab_size", "size"), Some(BoundKind::TokenTypes));
        assert_eq!(kind("c: text_config.vocab_size", "size"), Some(BoundKind::Vocabulary));
        assert_eq!(kind("c: n_positions", "max_length"), Some(BoundKind::Positions));
        assert_eq!(kind("c: num_labels", "num_classes"), Some(BoundKind::Labels));
        assert_eq!(kind("d.yaml: nc", "num_classes"), Some(BoundKind::Other));
        assert_eq!(kind("t/tokenizer.json", "size"), Some(BoundKind::Vocabulary));
        assert_eq!(kind("names.txt", "num_classes"), Some(BoundKind::Other));
        assert_eq!(kind_of(&[], "size"), None);
    }
}
