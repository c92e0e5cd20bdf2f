//! The schema exactly as written: the serde form of the YAML file.
//!
//! Every struct denies unknown fields, so a misspelt key (`num_clases`) is an
//! error naming the key and its line instead of a silently disabled check.
//! Nothing here is validated beyond its YAML type; see [`super::Schema`].
//!
//! The same types give the JSON Schema of `preflight.yaml` (schemars; see
//! [`super::json_schema`]), so editors complete and check exactly the keys
//! this parser takes. Field docs are the editor's hover text.

use std::borrow::Cow;
use std::fmt;

use schemars::{JsonSchema, SchemaGenerator, json_schema};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use super::Number;

/// A preflight schema: the columns to check and the rule each must hold.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "preflight.yaml")]
pub(crate) struct RawSchema {
    /// The schema format's version: 1.
    pub version: Option<u64>,
    /// A name for reports.
    pub name: Option<String>,
    /// What to check when the command line names no PATH, and how.
    pub dataset: Option<RawDataset>,
    /// Column name to its rule, in report order.
    pub columns: Columns,
}

/// The dataset's files and layout.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDataset {
    /// Files, directories, globs or URLs, relative to the schema file.
    #[serde(default)]
    pub files: Vec<String>,
    /// How files become tables beyond their own format.
    pub layout: Option<super::Layout>,
    /// `[keypoints, dims]` of ultralytics pose labels (`layout: yolo`).
    pub kpt_shape: Option<Vec<i64>>,
    /// Split name to its files (one path or a list), in order; the
    /// training split is `train`, else the first.
    pub splits: Option<Splits>,
}

/// The `splits` mapping, in the order it was written.
#[derive(Debug, Default)]
pub(crate) struct Splits(pub Vec<(String, Vec<String>)>);

/// A split's files: one path or a list.
#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl<'de> Deserialize<'de> for Splits {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Splits;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping from split name to its files (a path or a list of paths)")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Splits, A::Error> {
                let mut out: Vec<(String, Vec<String>)> = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    if out.iter().any(|(n, _)| *n == name) {
                        return Err(de::Error::custom(format!("split `{name}` is declared twice")));
                    }
                    let files = match map.next_value::<OneOrMany>() {
                        Ok(OneOrMany::One(f)) => vec![f],
                        Ok(OneOrMany::Many(f)) => f,
                        Err(_) => {
                            return Err(de::Error::custom(format!(
                                "split `{name}`: expected a path or a list of paths"
                            )));
                        }
                    };
                    out.push((name, files));
                }
                Ok(Splits(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The `columns` mapping, in the order it was written (the report's order).
#[derive(Debug, Default)]
pub(crate) struct Columns(pub Vec<(String, RawColumn)>);

impl<'de> Deserialize<'de> for Columns {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Columns;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a mapping from column name to its rule")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Columns, A::Error> {
                let mut out: Vec<(String, RawColumn)> = Vec::new();
                while let Some(name) = map.next_key::<String>()? {
                    if out.iter().any(|(n, _)| *n == name) {
                        return Err(de::Error::custom(format!("column `{name}` is declared twice")));
                    }
                    let col = map.next_value::<RawColumn>()?;
                    out.push((name, col));
                }
                Ok(Columns(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// The rule of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RawKind {
    Class,
    Index,
    Values,
    Range,
    Box,
}

/// One column's rule (keys of other kinds are refused when the schema is
/// validated). Flat on purpose: serde cannot combine internally
/// tagged enums with `deny_unknown_fields` and keep line numbers, so keys that
/// do not belong to the column's kind are rejected during validation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawColumn {
    /// class: 0 <= v < num_classes; index: 0 <= v < size; values: one of allowed; range: min <= v <= max; box: a detection box of positive width and height.
    pub kind: RawKind,
    /// class: the number of classes (a number or a reference).
    pub num_classes: Option<Bound>,
    #[serde(default, deserialize_with = "present")]
    /// class: a value exempt from the rule (default -100; null: none).
    pub ignore_index: Option<Option<Number>>,
    /// class: string class names, a list or {class_names: FILE}.
    pub classes: Option<RawClasses>,
    /// index: the number of rows of the table indexed (a number or a reference).
    pub size: Option<Bound>,
    /// index: ids the tokenizer can emit; ids in [tokenizer_size, size) are reported apart.
    pub tokenizer_size: Option<Bound>,
    /// index: accept -size <= v < 0 too (x[idx], take, index_put).
    pub wrap_negative: Option<bool>,
    /// values: the values allowed (numbers or strings).
    pub allowed: Option<Vec<Scalar>>,
    /// range: the smallest value allowed.
    pub min: Option<Bound>,
    /// range: the largest value allowed.
    pub max: Option<Bound>,
    /// box: how its four numbers are written: xywh (COCO), xyxy (torchvision's targets, Pascal VOC) or cxcywh.
    pub format: Option<String>,
    /// box: the folder a COCO file's images[].file_name are relative to (sizes of images that lack them).
    pub images: Option<String>,
    /// List columns: at most this many elements per row (per document with eod_id).
    pub max_length: Option<Bound>,
    /// List columns: at least this many elements per row (per document with eod_id).
    pub min_length: Option<Bound>,
    /// List columns: as many elements as this column, row by row.
    pub same_length_as: Option<String>,
    /// Elements equal to this id do not count toward max_length/min_length.
    pub pad_id: Option<Number>,
    /// Token streams: the end-of-document id; length rules judge documents.
    pub eod_id: Option<Number>,
    /// Nulls are exempt from every rule.
    pub nullable: Option<bool>,
    /// A file may lack this column.
    pub optional: Option<bool>,
    /// The stored integer type of token files that record none (uint16, uint32, ...).
    pub dtype: Option<String>,
    /// Images: raw (the stored values) or luminance (convert("L")).
    pub decode: Option<String>,
    /// Masks: mmsegmentation's reduce_zero_label (0 -> 255, v -> v - 1).
    pub reduce_zero_label: Option<bool>,
    /// Colour masks: "R,G,B" or "#rrggbb" to class.
    #[serde(default, deserialize_with = "ordered_map")]
    #[schemars(with = "Option<std::collections::BTreeMap<String, Number>>")]
    pub colors: Option<Vec<(String, Number)>>,
    /// Masks: the image folder, relative to the mask folder, or {dir, mask_suffix, image_suffix}.
    pub pair_with: Option<RawPair>,
    /// COCO category_id: contiguous (detectron2) or {by_name: [names]} (mmdetection); absent: raw ids.
    pub coco_mapping: Option<RawCocoMapping>,
}

/// `pair_with`: a folder, or `{dir, mask_suffix, image_suffix}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum RawPair {
    Dir(String),
    Full(RawPairFull),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPairFull {
    /// The image folder, relative to the mask folder.
    pub dir: String,
    /// Taken off the end of each mask's stem.
    #[serde(default)]
    pub mask_suffix: String,
    /// Taken off the end of each image's stem.
    #[serde(default)]
    pub image_suffix: String,
}

impl RawPair {
    /// The spec, or why it cannot be used.
    pub(crate) fn resolve(&self) -> Result<super::PairSpec, String> {
        let spec = match self {
            RawPair::Dir(dir) => super::PairSpec {
                dir: dir.clone(),
                ..Default::default()
            },
            RawPair::Full(f) => super::PairSpec {
                dir: f.dir.clone(),
                mask_suffix: f.mask_suffix.clone(),
                image_suffix: f.image_suffix.clone(),
            },
        };
        if spec.dir.trim().is_empty() {
            return Err("the image folder is empty: write `pair_with: ../images` (relative to the mask folder)".into());
        }
        for s in [&spec.mask_suffix, &spec.image_suffix] {
            if s.contains(['/', '\\']) || s.contains('.') {
                return Err(format!(
                    "suffix `{s}` ends a file stem: it holds no `/` and no `.` (the extension is matched separately)"
                ));
            }
        }
        Ok(spec)
    }
}

/// `colors:` keeps the order it was written in (messages and the resolved
/// schema follow it).
fn ordered_map<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<(String, Number)>>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<Vec<(String, Number)>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a mapping from colour (\"R,G,B\" or \"#rrggbb\") to class")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                out.push((k, map.next_value::<Number>()?));
            }
            Ok(Some(out))
        }
    }
    d.deserialize_map(V)
}

/// `coco_mapping`: `contiguous`, or `{by_name: [names] | FILE}`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum RawCocoMapping {
    Name(String),
    ByName { by_name: RawClasses },
}

/// Distinguishes a key written as `null` (`Some(None)`) from an absent key.
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// String class names: a list, or a file with one name a line.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum RawClasses {
    List(Vec<String>),
    File(Reference),
}

/// An element of `allowed`: a number or a string.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scalar {
    Number(Number),
    String(String),
}

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or a string")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar::Number(Number::Int(v.into())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar::Number(Number::Int(v.into())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar::Number(Number::Float(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar::String(v.to_string()))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Scalar, E> {
                Err(E::custom(format!(
                    "`{v}` is a boolean: stored booleans compare as 0 and 1, so write 0 or 1 (or quote it for a string)"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

/// A bound: a literal number or a reference to the model artifact holding it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Bound {
    Literal(Number),
    Ref(Reference),
}

/// Where a bound's number lives. Exactly one source key may be given.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct Reference {
    /// A model's config.json (or its folder); with `key`.
    pub hf_config: Option<String>,
    /// The config.json key: vocab_size, num_labels, max_position_embeddings, ...
    pub key: Option<String>,
    /// A tokenizer.json: 1 + its largest id, added tokens included.
    pub tokenizer: Option<String>,
    /// A vocab.txt: one token a line.
    pub vocab_file: Option<String>,
    /// A file of class names, one a line.
    pub class_names: Option<String>,
    /// nanoGPT's meta.pkl (or its folder): its vocab_size, read without unpickling.
    pub nanogpt_meta: Option<String>,
    /// An ultralytics data.yaml: len(names), else nc.
    pub yolo_data: Option<String>,
    /// Added to the number read.
    pub offset: Option<i64>,
}

impl<'de> Deserialize<'de> for Bound {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Bound;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or a reference such as {hf_config: config.json, key: vocab_size}")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bound, E> {
                Ok(Bound::Literal(Number::Int(v.into())))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bound, E> {
                Ok(Bound::Literal(Number::Int(v.into())))
            }
            fn visit_i128<E: de::Error>(self, v: i128) -> Result<Bound, E> {
                Ok(Bound::Literal(Number::Int(v)))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<Bound, E> {
                i128::try_from(v)
                    .map(|v| Bound::Literal(Number::Int(v)))
                    .map_err(|_| E::custom("number too large"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Bound, E> {
                Ok(Bound::Literal(Number::Float(v)))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Bound, A::Error> {
                Reference::deserialize(de::value::MapAccessDeserializer::new(map)).map(Bound::Ref)
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Number;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Number, E> {
                Ok(Number::Int(v.into()))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Number, E> {
                Ok(Number::Int(v.into()))
            }
            fn visit_i128<E: de::Error>(self, v: i128) -> Result<Number, E> {
                Ok(Number::Int(v))
            }
            fn visit_u128<E: de::Error>(self, v: u128) -> Result<Number, E> {
                i128::try_from(v)
                    .map(Number::Int)
                    .map_err(|_| E::custom("number too large"))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Number, E> {
                Ok(Number::Float(v))
            }
        }
        d.deserialize_any(V)
    }
}

// JSON Schemas of the types whose Deserialize is written by hand above.

impl JsonSchema for Columns {
    fn schema_name() -> Cow<'static, str> {
        "Columns".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        let column = generator.subschema_for::<RawColumn>();
        json_schema!({
            "description": "Column name to its rule, in report order.",
            "type": "object",
            "additionalProperties": column,
        })
    }
}

impl JsonSchema for Splits {
    fn schema_name() -> Cow<'static, str> {
        "Splits".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> schemars::Schema {
        json_schema!({
            "description": "Split name to its files (a path or a list of paths), in order; the training split is `train`, else the first.",
            "type": "object",
            "additionalProperties": {
                "anyOf": [
                    { "type": "string" },
                    { "type": "array", "items": { "type": "string" } }
                ]
            },
        })
    }
}

impl JsonSchema for Number {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Number".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> schemars::Schema {
        json_schema!({ "type": "number" })
    }
}

impl JsonSchema for Scalar {
    fn inline_schema() -> bool {
        true
    }
    fn schema_name() -> Cow<'static, str> {
        "Scalar".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> schemars::Schema {
        json_schema!({ "type": ["number", "string"] })
    }
}

impl JsonSchema for Bound {
    fn schema_name() -> Cow<'static, str> {
        "Bound".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> schemars::Schema {
        let reference = generator.subschema_for::<Reference>();
        json_schema!({
            "description": "A number, or a reference to the model file holding it such as {hf_config: model/config.json, key: vocab_size}.",
            "anyOf": [{ "type": "number" }, reference],
        })
    }
}
