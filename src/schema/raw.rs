//! The schema exactly as written: the serde form of the YAML file.
//!
//! Every struct denies unknown fields, so a misspelt key (`num_clases`) is an
//! error naming the key and its line instead of a silently disabled check.
//! Nothing here is validated beyond its YAML type; see [`super::Schema`].

use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

use super::Number;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawSchema {
    pub version: Option<u64>,
    pub name: Option<String>,
    pub dataset: Option<RawDataset>,
    pub columns: Columns,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDataset {
    #[serde(default)]
    pub files: Vec<String>,
    pub layout: Option<super::Layout>,
    /// `[keypoints, dims]` of ultralytics pose labels (`layout: yolo`).
    pub kpt_shape: Option<Vec<i64>>,
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RawKind {
    Class,
    Index,
    Values,
    Range,
}

/// One column's rule. Flat on purpose: serde cannot combine internally
/// tagged enums with `deny_unknown_fields` and keep line numbers, so keys that
/// do not belong to the column's kind are rejected during validation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawColumn {
    pub kind: RawKind,
    pub num_classes: Option<Bound>,
    #[serde(default, deserialize_with = "present")]
    pub ignore_index: Option<Option<Number>>,
    pub classes: Option<RawClasses>,
    pub size: Option<Bound>,
    pub tokenizer_size: Option<Bound>,
    pub wrap_negative: Option<bool>,
    pub allowed: Option<Vec<Scalar>>,
    pub min: Option<Bound>,
    pub max: Option<Bound>,
    pub max_length: Option<Bound>,
    pub min_length: Option<Bound>,
    pub same_length_as: Option<String>,
    pub pad_id: Option<Number>,
    pub eod_id: Option<Number>,
    pub nullable: Option<bool>,
    pub optional: Option<bool>,
    pub dtype: Option<String>,
    pub decode: Option<String>,
    pub reduce_zero_label: Option<bool>,
    #[serde(default, deserialize_with = "ordered_map")]
    pub colors: Option<Vec<(String, Number)>>,
    pub pair_with: Option<RawPair>,
    pub coco_mapping: Option<RawCocoMapping>,
}

/// `pair_with`: a folder, or `{dir, mask_suffix, image_suffix}`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawPair {
    Dir(String),
    Full(RawPairFull),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPairFull {
    pub dir: String,
    #[serde(default)]
    pub mask_suffix: String,
    #[serde(default)]
    pub image_suffix: String,
}

impl RawPair {
    /// The spec, or why it cannot be used.
    pub fn resolve(&self) -> Result<super::PairSpec, String> {
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
#[derive(Debug, Deserialize)]
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
#[derive(Debug, Clone, Deserialize)]
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
#[derive(Debug, Clone, PartialEq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Reference {
    pub hf_config: Option<String>,
    pub key: Option<String>,
    pub tokenizer: Option<String>,
    pub vocab_file: Option<String>,
    pub class_names: Option<String>,
    pub nanogpt_meta: Option<String>,
    pub yolo_data: Option<String>,
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
