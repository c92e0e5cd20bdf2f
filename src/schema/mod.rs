//! The schema: which columns to check and by which rule.
//!
//! Three stages, each a type: the YAML as written (`raw`), the validated
//! [`Schema`] with every bound resolved to a number (this module), and the
//! per-file binding of its columns to the file's columns (in `scan`). A
//! schema that contradicts itself is rejected here, before any data is read,
//! so a typo can never silently switch a check off.

pub mod bound;
pub mod columns;
pub mod labels;
mod pickle;
pub(crate) mod raw;

use std::cmp::Ordering;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::Error;
use bound::Resolved;
use raw::{Bound, RawClasses, RawColumn, RawKind, RawSchema, Scalar};

/// A number as written in a schema or stored in a file: exact integers
/// (every i64 and u64 fits) or a float.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Number {
    /// A whole number.
    Int(i128),
    /// A floating-point number.
    Float(f64),
}

impl Number {
    /// Exact numeric comparison (1 == 1.0; NaN compares with nothing).
    pub fn cmp_exact(self, other: Number) -> Option<Ordering> {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => Some(a.cmp(&b)),
            (Number::Float(a), Number::Float(b)) => a.partial_cmp(&b),
            (Number::Int(a), Number::Float(b)) => cmp_int_float(a, b),
            (Number::Float(a), Number::Int(b)) => cmp_int_float(b, a).map(Ordering::reverse),
        }
    }

    /// The number as a whole integer, if it is one.
    pub fn as_whole(self) -> Option<i128> {
        match self {
            Number::Int(i) => Some(i),
            Number::Float(f) => float_to_whole(f),
        }
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Int(i) => write!(f, "{i}"),
            Number::Float(x) => write!(f, "{x}"),
        }
    }
}

/// `schemas/json/preflight.schema.json` as committed, built into the binary
/// so that `preflight schema --json-schema` gives editors the schema of the
/// very version that reads the file (a test keeps it equal to
/// [`json_schema`]).
pub const JSON_SCHEMA: &str = include_str!("../../schemas/json/preflight.schema.json");

/// The JSON Schema (draft 7) of `preflight.yaml`, derived from the types the
/// parser deserializes (committed as `schemas/json/preflight.schema.json`).
pub fn json_schema() -> serde_json::Value {
    let schema = schemars::generate::SchemaSettings::draft07()
        .into_generator()
        .into_root_schema_for::<raw::RawSchema>();
    schema.to_value()
}

/// Python's `float()` on text: white space around it is ignored and
/// underscores may stand between digits (`1_000`).
pub fn python_float(text: &str) -> Option<f64> {
    let t = text.trim_matches(|c: char| c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c));
    if !t.contains('_') {
        return t.parse().ok();
    }
    let b = t.as_bytes();
    let between_digits = b
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == b'_')
        .all(|(i, _)| i > 0 && b[i - 1].is_ascii_digit() && b.get(i + 1).is_some_and(u8::is_ascii_digit));
    between_digits.then(|| t.replace('_', "").parse().ok()).flatten()
}

/// `f` as an exact integer, when it is finite, whole and within i128.
pub fn float_to_whole(f: f64) -> Option<i128> {
    // 2^126 keeps the cast exact and clear of i128's edges.
    (f.is_finite() && f.fract() == 0.0 && f.abs() < 8.5e37).then_some(f as i128)
}

/// Exact comparison of an integer with a float.
pub fn cmp_int_float(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f >= 8.5e37 {
        return Some(Ordering::Less);
    }
    if f <= -8.5e37 {
        return Some(Ordering::Greater);
    }
    let fl = f.floor();
    let whole = fl as i128;
    match i.cmp(&whole) {
        Ordering::Equal if f > fl => Some(Ordering::Less),
        o => Some(o),
    }
}

/// The rules a check can report, named as in the JSON report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// 0 <= v < num_classes, or v == ignore_index (or one of `classes`).
    Class,
    /// 0 <= v < size (or -size <= v < size with wrap_negative).
    Index,
    /// v is one of `allowed`.
    Values,
    /// finite, min <= v <= max.
    Range,
    /// a null value or element.
    Null,
    /// a fraction, NaN, infinity or string where a whole number belongs.
    NotInteger,
    /// an id the embedding has a row for but the tokenizer never emits:
    /// tokenizer_size <= v < size (rows that were never trained).
    TokenizerSize,
    /// a row with more elements than max_length.
    MaxLength,
    /// a row with fewer elements than min_length.
    MinLength,
    /// a row whose length differs from another column's.
    SameLengthAs,
    /// a document without a token: two end-of-document ids in a row
    /// (`eod_id` token streams).
    EmptyDocument,
    /// a mask whose size differs from its image's, an image without a
    /// mask, a mask with several images (`pair_with`).
    PairWith,
    /// a detection box that is not four finite numbers of positive width
    /// and height (torchvision's detection models raise on it).
    Box,
}

impl Rule {
    /// The rule's name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Class => "class",
            Rule::Index => "index",
            Rule::Values => "values",
            Rule::Range => "range",
            Rule::Null => "null",
            Rule::NotInteger => "not_integer",
            Rule::TokenizerSize => "tokenizer_size",
            Rule::MaxLength => "max_length",
            Rule::MinLength => "min_length",
            Rule::SameLengthAs => "same_length_as",
            Rule::EmptyDocument => "empty_document",
            Rule::PairWith => "pair_with",
            Rule::Box => "box",
        }
    }
}

/// What each value (or list element) of a column must be.
#[derive(Debug, Clone, PartialEq)]
pub enum ValueRule {
    /// Class indices (CrossEntropyLoss targets).
    Class {
        /// Valid classes are 0..num_classes.
        num_classes: i128,
        /// The one extra value the loss skips (torch's default: -100).
        ignore_index: Option<i128>,
    },
    /// String class labels: each value must be one of these names.
    ClassNames {
        /// The class names.
        classes: Vec<String>,
    },
    /// Embedding / gather indices.
    Index {
        /// Valid indices are 0..size.
        size: i128,
        /// Also accept -size..0 (the rule of `x[idx]`, `take`, `index_put`).
        wrap_negative: bool,
    },
    /// A closed set of numbers and strings.
    Values {
        /// Allowed numbers.
        numbers: Vec<Number>,
        /// Allowed strings.
        strings: Vec<String>,
    },
    /// A finite number between two optional bounds.
    Range {
        /// Inclusive lower bound.
        min: Option<Number>,
        /// Inclusive upper bound.
        max: Option<Number>,
    },
    /// Detection boxes: each row a box (a list of four numbers) or a list
    /// of boxes.
    Box {
        /// How the four numbers are written.
        format: BoxFormat,
        /// The folder COCO's `file_name`s are relative to (`images:`,
        /// resolved against the schema's folder): an image without a size
        /// in `images[]` has its file's read.
        images: Option<PathBuf>,
    },
}

/// How a box's four numbers are written (torchvision's `box_convert` names).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BoxFormat {
    /// x, y of the top-left corner, width, height (COCO).
    Xywh,
    /// x1, y1, x2, y2 (torchvision's detection targets, Pascal VOC).
    Xyxy,
    /// centre x, centre y, width, height.
    Cxcywh,
}

impl BoxFormat {
    /// Every format, by its schema name.
    pub const ALL: [(&'static str, BoxFormat); 3] = [
        ("xywh", BoxFormat::Xywh),
        ("xyxy", BoxFormat::Xyxy),
        ("cxcywh", BoxFormat::Cxcywh),
    ];

    /// The format's schema name.
    pub fn name(self) -> &'static str {
        match self {
            BoxFormat::Xywh => "xywh",
            BoxFormat::Xyxy => "xyxy",
            BoxFormat::Cxcywh => "cxcywh",
        }
    }
}

impl ValueRule {
    /// The report name of the kind's own rule.
    pub fn rule(&self) -> Rule {
        match self {
            ValueRule::Class { .. } | ValueRule::ClassNames { .. } => Rule::Class,
            ValueRule::Index { .. } => Rule::Index,
            ValueRule::Values { .. } => Rule::Values,
            ValueRule::Range { .. } => Rule::Range,
            ValueRule::Box { .. } => Rule::Box,
        }
    }

    /// Whether the kind needs whole numbers (and so has a `not_integer` rule).
    pub fn wants_integers(&self) -> bool {
        matches!(self, ValueRule::Class { .. } | ValueRule::Index { .. })
    }
}

/// One schema column after validation.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSpec {
    /// The column's name in the data files.
    pub name: String,
    /// The value rule.
    pub values: ValueRule,
    /// Nulls are exempt from every rule.
    pub nullable: bool,
    /// A file may lack the column.
    pub optional: bool,
    /// At most this many elements per row.
    pub max_length: Option<u64>,
    /// At least this many elements per row.
    pub min_length: Option<u64>,
    /// Index (into [`Schema::columns`]) of the column whose row lengths must match.
    pub same_length_as: Option<usize>,
    /// Elements equal to this do not count toward `max_length`/`min_length`.
    pub pad_id: Option<i128>,
    /// Where each referenced bound came from: (key, source).
    pub bound_sources: Vec<(String, String)>,
    /// `index` columns: the tokenizer's size T (ids it can emit) when the
    /// embedding (`size`, P) is padded past it; ids in [T, P) are reported
    /// under their own rule, `tokenizer_size`.
    pub tokenizer_size: Option<i128>,
    /// How the column's values are stored where the file does not say
    /// (raw token bytes): a NumPy dtype name from [`DTYPES`].
    pub dtype: Option<String>,
    /// The end-of-document id of a flat token stream: documents are the
    /// runs of tokens between two of them, the length rules judge
    /// documents, and empty documents are reported (`empty_document`).
    pub eod_id: Option<i128>,
    /// How the column's encoded images become pixel values (`decode`,
    /// `reduce_zero_label`, `colors`); `None` when the schema sets none of
    /// them (image files are then read raw).
    pub pixels: Option<PixelSpec>,
    /// COCO `category_id` columns: how ids become classes (see [`CocoMapping`]).
    pub coco_mapping: Option<CocoMapping>,
    /// Class columns: the label names of the model's head, which the
    /// data's own names must match in order ([`labels`]).
    pub model_labels: Option<labels::ModelLabels>,
}

/// How a loader reads a mask image into class indices (docs/src/sources/masks.md).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PixelSpec {
    /// `decode:` raw (`numpy.array(Image.open(f))`) or luminance (`.convert("L")`).
    pub decode: Decode,
    /// mmsegmentation's `reduce_zero_label`: 0 -> 255, v -> v - 1, 255 stays.
    pub reduce_zero_label: bool,
    /// `colors:` RGB colour -> class (CamVid-style colour masks), as written.
    pub colors: Vec<([u8; 3], i128)>,
    /// `pair_with:` the images these masks belong to (see `crate::pairing`).
    pub pair_with: Option<PairSpec>,
}

/// `pair_with:` where a mask's image is: `dir` (relative to the folder the
/// masks were found in), and the stem suffixes that differ between a mask
/// and its image (mmsegmentation's `seg_map_suffix` / `img_suffix` without
/// the extension, e.g. Cityscapes' `_gtFine_labelTrainIds` / `_leftImg8bit`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairSpec {
    /// The image folder, relative to the mask folder.
    pub dir: String,
    /// Ends every paired mask's stem; removed before matching.
    pub mask_suffix: String,
    /// Ends every image's stem; removed before matching.
    pub image_suffix: String,
}

/// The reading of `decode:`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Decode {
    /// The values `numpy.array(PIL.Image.open(f))` gives.
    #[default]
    Raw,
    /// The values of `PIL.Image.open(f).convert("L")`.
    Luminance,
}

impl Decode {
    /// The schema's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Decode::Raw => "raw",
            Decode::Luminance => "luminance",
        }
    }
}

/// How a dataset's files become tables beyond their own format
/// (`dataset.layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    /// A torchvision `ImageFolder` tree: each image is a file of one row
    /// (`label`, `class_name`).
    ImageFolder,
    /// YOLO label files: every `.txt` under the PATHs.
    Yolo,
}

impl Layout {
    /// The name written in schemas.
    pub fn name(self) -> &'static str {
        match self {
            Layout::ImageFolder => "image_folder",
            Layout::Yolo => "yolo",
        }
    }
}

/// Reads a colour key of `colors:`: "R,G,B" (spaces allowed, also in
/// parentheses) or "#rrggbb".
pub fn parse_color(key: &str) -> Option<[u8; 3]> {
    let k = key.trim();
    if let Some(hex) = k.strip_prefix('#') {
        if hex.len() != 6 || !hex.is_ascii() {
            return None;
        }
        let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).ok();
        return Some([byte(0)?, byte(2)?, byte(4)?]);
    }
    let k = k.strip_prefix('(').and_then(|k| k.strip_suffix(')')).unwrap_or(k);
    let mut parts = k.split(',').map(|p| p.trim().parse::<u8>().ok());
    let rgb = [parts.next()??, parts.next()??, parts.next()??];
    parts.next().is_none().then_some(rgb)
}

/// How COCO `category_id`s become class indices (`coco_mapping:`), as the
/// training framework maps them; absent, the raw id is the class
/// (torchvision).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CocoMapping {
    /// detectron2: the sorted ids of `categories` numbered 0..N-1.
    Contiguous,
    /// mmdetection: the categories whose names are in this list, numbered
    /// 0..N-1 in the order of `categories`.
    ByName(Vec<String>),
}

/// The `dtype:` names a schema column accepts (NumPy's, little-endian).
pub const DTYPES: [&str; 11] = [
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float16", "float32", "float64",
];

impl ColumnSpec {
    /// The column's `pair_with`, if set.
    pub fn pair_with(&self) -> Option<&PairSpec> {
        self.pixels.as_ref().and_then(|p| p.pair_with.as_ref())
    }

    /// The rules reported for this column, in report order.
    pub fn rules(&self) -> Vec<Rule> {
        let mut rules = vec![self.values.rule(), Rule::Null];
        if self.values.wants_integers() {
            rules.push(Rule::NotInteger);
        }
        if self.tokenizer_size.is_some() {
            rules.push(Rule::TokenizerSize);
        }
        if self.max_length.is_some() {
            rules.push(Rule::MaxLength);
        }
        if self.min_length.is_some() {
            rules.push(Rule::MinLength);
        }
        if self.same_length_as.is_some() {
            rules.push(Rule::SameLengthAs);
        }
        if self.eod_id.is_some() {
            rules.push(Rule::EmptyDocument);
        }
        if self.pair_with().is_some() {
            rules.push(Rule::PairWith);
        }
        rules
    }

    /// Whether the column holds image pixels: it sets `decode` or is the
    /// image readers' own `pixels` column.
    pub fn is_pixels(&self) -> bool {
        self.pixels.is_some() || self.name == columns::PIXELS
    }

    /// Whether any length rule applies (the column must then be a list).
    pub fn has_length_rules(&self) -> bool {
        self.max_length.is_some() || self.min_length.is_some() || self.same_length_as.is_some()
    }
}

/// One of `dataset.splits`: a name and its files, as `dataset.files`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The split's name (`train`, `val`, ...).
    pub name: String,
    /// Files, directories, globs or URLs, relative to the schema file.
    pub files: Vec<String>,
}

impl Schema {
    /// The split the others are compared with: `train`, else the first.
    pub fn training_split(&self) -> Option<&Split> {
        self.splits
            .iter()
            .find(|s| s.name == "train")
            .or_else(|| self.splits.first())
    }
}

/// A validated schema, every bound resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Schema {
    /// The schema file (as given), for messages and relative paths.
    pub path: PathBuf,
    /// The optional `name`.
    pub name: Option<String>,
    /// `dataset.files`, as written (relative to the schema's directory).
    pub files: Vec<String>,
    /// `dataset.splits`, in order: each split's files as written. Empty
    /// when the schema names no splits.
    pub splits: Vec<Split>,
    /// `dataset.layout`: how directories become files (image folders, YOLO).
    pub layout: Option<Layout>,
    /// `dataset.kpt_shape` (keypoints per object, values per keypoint): YOLO
    /// label files are ultralytics pose labels.
    pub kpt_shape: Option<(usize, usize)>,
    /// The columns, in schema order.
    pub columns: Vec<ColumnSpec>,
    /// Problems that do not stop a check, e.g. model artifacts that disagree.
    pub warnings: Vec<String>,
}

/// Largest YAML schema accepted: far above any real schema, far below harm.
const MAX_SCHEMA_BYTES: u64 = 4 << 20;

impl Schema {
    /// Reads, parses and validates a schema file, resolving references
    /// relative to its directory.
    pub fn from_file(path: &Path) -> Result<Schema, Error> {
        let err = |message: String| Error::Schema {
            file: path.to_path_buf(),
            key: None,
            message,
        };
        let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
            // A first run: say how to get one.
            std::io::ErrorKind::NotFound => err(format!(
                "cannot read the schema: {e}; write one from the data with `preflight init PATH`, \
                 or name another with --schema"
            )),
            _ => err(format!("cannot read the schema: {e}")),
        })?;
        if meta.len() > MAX_SCHEMA_BYTES {
            return Err(err(format!(
                "the schema is {} bytes, larger than any schema should be",
                meta.len()
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| err(format!("cannot read the schema: {e}")))?;
        let text = String::from_utf8(bytes).map_err(|_| err("the schema is not UTF-8 text".into()))?;
        Schema::from_yaml(&text, path)
    }

    /// Parses and validates schema text; `path` names it in errors and
    /// anchors relative references.
    pub fn from_yaml(text: &str, path: &Path) -> Result<Schema, Error> {
        // YAML 1.2 booleans only (`yes` is a string), no snippets in messages;
        // duplicate keys and alias bombs are errors by default.
        let options = serde_saphyr::options! { strict_booleans: true, with_snippet: false };
        // serde_path_to_error names the key (`columns.label.num_classes`);
        // serde-saphyr adds the line and column.
        let mut key = None;
        let raw: RawSchema = serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
            serde_path_to_error::deserialize(de).map_err(|e| {
                let p = e.path().to_string();
                key = (p != ".").then_some(p);
                e.into_inner()
            })
        })
        .map_err(|e| Error::Schema {
            file: path.to_path_buf(),
            key: key.clone(),
            message: yaml_message(&e.to_string()),
        })?;
        validate(raw, path)
    }

    /// The directory that relative paths in the schema are resolved against.
    pub fn base_dir(&self) -> PathBuf {
        base_dir(&self.path)
    }
}

fn base_dir(path: &Path) -> PathBuf {
    path.parent().map(Path::to_path_buf).unwrap_or_default()
}

/// serde-saphyr renders a source snippet across lines; the report wants one.
fn yaml_message(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

fn validate(raw: RawSchema, path: &Path) -> Result<Schema, Error> {
    let err = |key: String, message: String| Error::Schema {
        file: path.to_path_buf(),
        key: Some(key),
        message,
    };
    if let Some(v) = raw.version
        && v != 1
    {
        return Err(err(
            "version".into(),
            format!("unsupported schema version {v} (this preflight reads version 1)"),
        ));
    }
    if raw.columns.0.is_empty() {
        return Err(err("columns".into(), "the schema declares no columns".into()));
    }
    let base = base_dir(path);
    let names: Vec<&str> = raw.columns.0.iter().map(|(n, _)| n.as_str()).collect();
    let mut columns = Vec::with_capacity(names.len());
    let mut warnings = Vec::new();
    for (name, col) in &raw.columns.0 {
        columns.push(validate_column(name, col, &names, &base, path, &mut warnings)?);
    }
    // An image file is one column: one pairing per run.
    let paired: Vec<&ColumnSpec> = columns.iter().filter(|c| c.pair_with().is_some()).collect();
    if paired.len() > 1 {
        return Err(err(
            format!("columns.{}.pair_with", paired[1].name),
            format!(
                "`{}` already pairs masks with images: one column may set pair_with",
                paired[0].name
            ),
        ));
    }
    model_labels(&raw.columns.0, &mut columns, &base, &mut warnings).map_err(|(key, m)| err(key, m))?;
    let layout = raw.dataset.as_ref().and_then(|d| d.layout);
    let kpt_shape = match raw.dataset.as_ref().and_then(|d| d.kpt_shape.as_deref()) {
        None => None,
        Some(_) if layout != Some(Layout::Yolo) => {
            return Err(err(
                "dataset.kpt_shape".into(),
                "kpt_shape describes YOLO pose labels: it needs `layout: yolo`".into(),
            ));
        }
        Some(&[k, d]) if (1..=1 << 16).contains(&k) && (d == 2 || d == 3) => Some((k as usize, d as usize)),
        Some(_) => {
            return Err(err(
                "dataset.kpt_shape".into(),
                "kpt_shape is [keypoints, dims] with dims 2 (x, y) or 3 (x, y, visibility), as in ultralytics' data.yaml"
                    .into(),
            ));
        }
    };
    let splits = splits(raw.dataset.as_ref()).map_err(|(key, m)| err(key, m))?;
    Ok(Schema {
        path: path.to_path_buf(),
        name: raw.name,
        layout,
        kpt_shape,
        splits,
        files: raw.dataset.map(|d| d.files).unwrap_or_default(),
        columns,
        warnings,
    })
}

/// `dataset.splits`, validated: exclusive with `dataset.files`, each
/// split named and holding files.
fn splits(dataset: Option<&raw::RawDataset>) -> Result<Vec<Split>, (String, String)> {
    let Some(d) = dataset else { return Ok(Vec::new()) };
    let Some(raw) = &d.splits else { return Ok(Vec::new()) };
    if !d.files.is_empty() {
        return Err((
            "dataset.splits".into(),
            "dataset.files and dataset.splits both name the data: list the files under their splits".into(),
        ));
    }
    if raw.0.is_empty() {
        return Err(("dataset.splits".into(), "names no split".into()));
    }
    raw.0
        .iter()
        .map(|(name, files)| {
            if name.trim().is_empty() {
                return Err(("dataset.splits".into(), "a split needs a name".into()));
            }
            if files.is_empty() || files.iter().any(|f| f.trim().is_empty()) {
                return Err((
                    format!("dataset.splits.{name}"),
                    "a split names its files: a path or a list of paths".into(),
                ));
            }
            Ok(Split {
                name: name.clone(),
                files: files.clone(),
            })
        })
        .collect()
}

fn validate_column(
    name: &str,
    col: &RawColumn,
    names: &[&str],
    base: &Path,
    path: &Path,
    warnings: &mut Vec<String>,
) -> Result<ColumnSpec, Error> {
    let at = |key: &str| format!("columns.{name}.{key}");
    let err = |key: &str, message: String| Error::Schema {
        file: path.to_path_buf(),
        key: Some(at(key)),
        message,
    };
    let kind_name = match col.kind {
        RawKind::Class => "class",
        RawKind::Index => "index",
        RawKind::Values => "values",
        RawKind::Range => "range",
        RawKind::Box => "box",
    };
    // Keys that belong to another kind are as wrong as unknown keys.
    let present: [(&str, bool, &[RawKind]); 10] = [
        ("num_classes", col.num_classes.is_some(), &[RawKind::Class]),
        ("tokenizer_size", col.tokenizer_size.is_some(), &[RawKind::Index]),
        ("ignore_index", col.ignore_index.is_some(), &[RawKind::Class]),
        ("classes", col.classes.is_some(), &[RawKind::Class]),
        ("size", col.size.is_some(), &[RawKind::Index]),
        ("wrap_negative", col.wrap_negative.is_some(), &[RawKind::Index]),
        ("allowed", col.allowed.is_some(), &[RawKind::Values]),
        ("min", col.min.is_some() || col.max.is_some(), &[RawKind::Range]),
        ("format", col.format.is_some(), &[RawKind::Box]),
        ("images", col.images.is_some(), &[RawKind::Box]),
    ];
    for (key, is_set, kinds) in present {
        if is_set && !kinds.contains(&col.kind) {
            let key = if key == "min" && col.min.is_none() { "max" } else { key };
            return Err(err(key, format!("`{key}` does not apply to kind `{kind_name}`")));
        }
    }
    let mut sources: Vec<(String, String)> = Vec::new();
    let mut resolve = |key: &str, b: &Bound, sources: &mut Vec<(String, String)>| -> Result<Number, Error> {
        let r: Resolved = bound::resolve(b, base, &at(key), path).map_err(|e| match e {
            // Say which schema key needed the artifact, too.
            Error::Reference { file, key: k, message } => Error::Reference {
                file,
                key: k,
                message: format!("{message} (needed by {} in {})", at(key), path.display()),
            },
            other => other,
        })?;
        if let Some(w) = bound::mismatch(b, base, r.value) {
            warnings.push(format!("columns.{name}.{key}: {w}"));
        }
        if let Some(s) = r.source {
            sources.push((key.to_string(), s));
        }
        Ok(r.value)
    };
    let whole = |key: &str, n: Number| {
        n.as_whole().ok_or_else(|| match n {
            Number::Float(f) if f.is_finite() && f.fract() == 0.0 => {
                err(key, format!("{n} is too large to be a bound (at most 2^64)"))
            }
            _ => err(key, format!("{n} is not a whole number")),
        })
    };

    let values = match col.kind {
        RawKind::Class => match (&col.num_classes, &col.classes) {
            (Some(_), Some(_)) => {
                return Err(err("classes", "give either num_classes or classes, not both".into()));
            }
            (None, Some(classes)) => {
                let list = match classes {
                    RawClasses::List(l) => l.clone(),
                    RawClasses::File(r) => match &r.class_names {
                        Some(f) if r.hf_config.is_none() && r.tokenizer.is_none() && r.vocab_file.is_none() => {
                            let file = base.join(f);
                            let names = bound::class_names(&file)?;
                            sources.push(("classes".into(), file.display().to_string()));
                            names
                        }
                        _ => return Err(err("classes", "expected a list of names or {class_names: FILE}".into())),
                    },
                };
                if list.is_empty() {
                    return Err(err("classes", "the list of classes is empty".into()));
                }
                if col.ignore_index.is_some() {
                    return Err(err(
                        "ignore_index",
                        "`ignore_index` applies to numeric classes only".into(),
                    ));
                }
                ValueRule::ClassNames { classes: list }
            }
            (Some(n), None) => {
                let n = resolve("num_classes", n, &mut sources)?;
                let n = whole("num_classes", n)?;
                if n < 1 {
                    return Err(err(
                        "num_classes",
                        format!("num_classes is {n}: a class column needs at least one class"),
                    ));
                }
                let ignore_index = match col.ignore_index {
                    None => Some(-100),
                    Some(None) => None,
                    Some(Some(v)) => Some(whole("ignore_index", v)?),
                };
                ValueRule::Class {
                    num_classes: n,
                    ignore_index,
                }
            }
            (None, None) => {
                return Err(err(
                    "num_classes",
                    "a class column needs num_classes (or classes)".into(),
                ));
            }
        },
        RawKind::Index => {
            let size = col
                .size
                .as_ref()
                .ok_or_else(|| err("size", "an index column needs size".into()))?;
            let size = resolve("size", size, &mut sources)?;
            let size = whole("size", size)?;
            if size < 1 {
                return Err(err("size", format!("size is {size}: no index could be valid")));
            }
            ValueRule::Index {
                size,
                wrap_negative: col.wrap_negative.unwrap_or(false),
            }
        }
        RawKind::Values => {
            let allowed = col
                .allowed
                .as_ref()
                .ok_or_else(|| err("allowed", "a values column needs allowed".into()))?;
            if allowed.is_empty() {
                return Err(err("allowed", "the allowed list is empty: no value could pass".into()));
            }
            let mut numbers = Vec::new();
            let mut strings = Vec::new();
            for a in allowed {
                match a {
                    Scalar::Number(n) => numbers.push(*n),
                    Scalar::String(s) => strings.push(s.clone()),
                }
            }
            ValueRule::Values { numbers, strings }
        }
        RawKind::Range => {
            let min = col.min.as_ref().map(|b| resolve("min", b, &mut sources)).transpose()?;
            let max = col.max.as_ref().map(|b| resolve("max", b, &mut sources)).transpose()?;
            for (key, b) in [("min", min), ("max", max)] {
                if let Some(Number::Float(f)) = b
                    && f.is_nan()
                {
                    return Err(err(key, "a bound cannot be NaN".into()));
                }
            }
            if let (Some(lo), Some(hi)) = (min, max)
                && lo.cmp_exact(hi) == Some(Ordering::Greater)
            {
                return Err(err(
                    "min",
                    format!("min {lo} is greater than max {hi}: no value could pass"),
                ));
            }
            ValueRule::Range { min, max }
        }
        RawKind::Box => {
            // A box is judged whole: keys that judge elements or read
            // them another way do not apply.
            let other = [
                ("max_length", col.max_length.is_some()),
                ("min_length", col.min_length.is_some()),
                ("same_length_as", col.same_length_as.is_some()),
                ("pad_id", col.pad_id.is_some()),
                ("eod_id", col.eod_id.is_some()),
                ("dtype", col.dtype.is_some()),
                ("decode", col.decode.is_some()),
                ("reduce_zero_label", col.reduce_zero_label.is_some()),
                ("colors", col.colors.is_some()),
                ("pair_with", col.pair_with.is_some()),
                ("coco_mapping", col.coco_mapping.is_some()),
            ];
            if let Some((key, _)) = other.iter().find(|(_, set)| *set) {
                return Err(err(
                    key,
                    format!("`{key}` does not apply to kind `box` (a box is judged whole: four numbers)"),
                ));
            }
            let names: Vec<&str> = BoxFormat::ALL.iter().map(|(n, _)| *n).collect();
            let format = match col.format.as_deref() {
                None => {
                    return Err(err(
                        "format",
                        format!(
                            "kind `box` needs `format`: how the four numbers are written ({}; COCO's bbox is xywh)",
                            names.join(", ")
                        ),
                    ));
                }
                Some(f) => BoxFormat::ALL
                    .iter()
                    .find(|(n, _)| *n == f)
                    .map(|(_, b)| *b)
                    .ok_or_else(|| {
                        err(
                            "format",
                            format!("`{f}` is not a box format (one of {})", names.join(", ")),
                        )
                    })?,
            };
            let images = col.images.as_ref().map(|d| base.join(d));
            ValueRule::Box { format, images }
        }
    };

    let tokenizer_size = match &col.tokenizer_size {
        None => None,
        Some(b) => {
            let t = whole("tokenizer_size", resolve("tokenizer_size", b, &mut sources)?)?;
            let ValueRule::Index { size, .. } = &values else {
                unreachable!("tokenizer_size belongs to index columns, checked above")
            };
            if t < 1 || t > *size {
                return Err(err(
                    "tokenizer_size",
                    format!(
                        "tokenizer_size is {t}: it must be between 1 and size {size} (the embedding's rows, which the tokenizer's ids must fit)"
                    ),
                ));
            }
            Some(t)
        }
    };
    let mut length = |key: &str, b: &Option<Bound>| -> Result<Option<u64>, Error> {
        let Some(b) = b else { return Ok(None) };
        let n = whole(key, resolve(key, b, &mut sources)?)?;
        u64::try_from(n)
            .map(Some)
            .map_err(|_| err(key, format!("{key} is {n}: a length cannot be negative")))
    };
    let max_length = length("max_length", &col.max_length)?;
    let min_length = length("min_length", &col.min_length)?;
    if let (Some(lo), Some(hi)) = (min_length, max_length)
        && lo > hi
    {
        return Err(err(
            "min_length",
            format!("min_length {lo} is greater than max_length {hi}: no row could pass"),
        ));
    }
    let same_length_as = match &col.same_length_as {
        None => None,
        Some(other) if other == name => {
            return Err(err("same_length_as", "a column cannot be compared with itself".into()));
        }
        Some(other) => match names.iter().position(|n| n == other) {
            Some(i) => Some(i),
            None => {
                return Err(err(
                    "same_length_as",
                    format!("`{other}` is not a column of this schema (declare it under columns)"),
                ));
            }
        },
    };
    let pad_id = match col.pad_id {
        None => None,
        Some(n) => {
            if max_length.is_none() && min_length.is_none() {
                return Err(err(
                    "pad_id",
                    "`pad_id` only changes max_length/min_length; set one of them".into(),
                ));
            }
            Some(whole("pad_id", n)?)
        }
    };
    let eod_id = match col.eod_id {
        None => None,
        Some(n) => {
            if !matches!(values, ValueRule::Index { .. }) {
                return Err(err(
                    "eod_id",
                    format!("`eod_id` does not apply to kind `{kind_name}` (token ids are `index` columns)"),
                ));
            }
            for (key, set) in [
                ("pad_id", pad_id.is_some()),
                ("same_length_as", same_length_as.is_some()),
            ] {
                if set {
                    return Err(err(
                        "eod_id",
                        format!(
                            "`eod_id` makes the length rules judge documents of a token stream; `{key}` judges list rows and cannot be combined with it"
                        ),
                    ));
                }
            }
            Some(whole("eod_id", n)?)
        }
    };
    let dtype = match &col.dtype {
        None => None,
        Some(d) if DTYPES.contains(&d.as_str()) => Some(d.clone()),
        Some(d) => {
            return Err(err(
                "dtype",
                format!("`{d}` is not a dtype preflight reads (one of {})", DTYPES.join(", ")),
            ));
        }
    };
    let pixels = pixel_spec(col, &values).map_err(|(key, m)| err(key, m))?;
    let coco_mapping = match &col.coco_mapping {
        None => None,
        Some(m) => {
            if !matches!(values, ValueRule::Class { .. }) {
                return Err(err(
                    "coco_mapping",
                    "`coco_mapping` maps COCO category ids to class indices: it needs kind `class` with num_classes"
                        .into(),
                ));
            }
            Some(match m {
                raw::RawCocoMapping::Name(n) if n == "contiguous" => CocoMapping::Contiguous,
                raw::RawCocoMapping::Name(n) => {
                    return Err(err(
                        "coco_mapping",
                        format!(
                            "`{n}` is not a mapping: write `contiguous` (detectron2) or {{by_name: [names]}} (mmdetection); leave it out for raw ids (torchvision)"
                        ),
                    ));
                }
                raw::RawCocoMapping::ByName { by_name } => {
                    let list = match by_name {
                        RawClasses::List(l) => l.clone(),
                        RawClasses::File(r) => match (&r.class_names, r.hf_config.is_none() && r.tokenizer.is_none()) {
                            (Some(f), true) => bound::class_names(&base.join(f))?,
                            _ => {
                                return Err(err(
                                    "coco_mapping",
                                    "by_name takes a list of class names or {class_names: FILE}".into(),
                                ));
                            }
                        },
                    };
                    CocoMapping::ByName(list)
                }
            })
        }
    };
    // An ignored value that is also a class: the loss skips every sample
    // of that class, so it is never learnt.
    if let ValueRule::Class {
        num_classes: n,
        ignore_index: Some(ig),
    } = values
        && (0..n).contains(&ig)
    {
        warnings.push(format!(
            "columns.{name}.ignore_index: {ig} is also class {ig} of the {n} classes (0..={}): the loss skips every sample of that class, so it is never learnt; use a value outside 0..={} (torch's default is -100)",
            n - 1,
            n - 1
        ));
    }
    Ok(ColumnSpec {
        coco_mapping,
        model_labels: None,
        name: name.to_string(),
        values,
        nullable: col.nullable.unwrap_or(false),
        optional: col.optional.unwrap_or(false),
        max_length,
        min_length,
        same_length_as,
        pad_id,
        bound_sources: sources,
        tokenizer_size,
        dtype,
        eod_id,
        pixels,
    })
}

/// Gives the class columns the model head's label names: a column whose
/// `num_classes` is read from a config.json gets that config's `id2label`;
/// the one class column of a schema that reads one config.json gets that
/// config's. A `classes:` list is compared with them here; other names
/// come with the data.
fn model_labels(
    raw: &[(String, RawColumn)],
    columns: &mut [ColumnSpec],
    base: &Path,
    warnings: &mut Vec<String>,
) -> Result<(), (String, String)> {
    let configs = labels::configs(raw, base);
    let class_columns = columns
        .iter()
        .filter(|c| matches!(c.values, ValueRule::Class { .. } | ValueRule::ClassNames { .. }))
        .count();
    for ((name, col), spec) in raw.iter().zip(columns.iter_mut()) {
        if !matches!(spec.values, ValueRule::Class { .. } | ValueRule::ClassNames { .. }) {
            continue;
        }
        let own = col.num_classes.as_ref().and_then(|b| labels::config_of(b, base));
        let config = match (own, class_columns, configs.as_slice()) {
            (Some(own), _, _) => own,
            (None, 1, [only]) => only.clone(),
            _ => continue,
        };
        spec.model_labels = labels::id2label(&config);
        if let (ValueRule::ClassNames { classes }, Some(model)) = (&spec.values, &spec.model_labels) {
            let data: Vec<Option<String>> = classes.iter().cloned().map(Some).collect();
            match labels::compare(&data, "the schema's `classes`", model) {
                Some(labels::Clash::Order(m)) => return Err((format!("columns.{name}.classes"), m)),
                Some(labels::Clash::Absent(m)) => warnings.push(format!("columns.{name}.classes: {m}")),
                None => {}
            }
        }
    }
    Ok(())
}

/// The column's image reading, if it sets any of its keys.
fn pixel_spec(col: &RawColumn, values: &ValueRule) -> Result<Option<PixelSpec>, (&'static str, String)> {
    if col.decode.is_none() && col.reduce_zero_label.is_none() && col.colors.is_none() && col.pair_with.is_none() {
        return Ok(None);
    }
    let decode = match col.decode.as_deref() {
        None | Some("raw") => Decode::Raw,
        Some("luminance") => Decode::Luminance,
        Some(d) => {
            return Err((
                "decode",
                format!(
                    "`{d}` is not a decoding preflight knows (raw: numpy.array(Image.open(f)); luminance: .convert(\"L\"))"
                ),
            ));
        }
    };
    let reduce_zero_label = col.reduce_zero_label.unwrap_or(false);
    let mut colors = Vec::new();
    for (key, class) in col.colors.iter().flatten() {
        let rgb = parse_color(key).ok_or_else(|| {
            (
                "colors",
                format!("`{key}` is not a colour: write \"R,G,B\" (0-255 each) or \"#rrggbb\""),
            )
        })?;
        let class = class.as_whole().ok_or_else(|| {
            (
                "colors",
                format!("colour `{key}` maps to {class}, which is not a whole number"),
            )
        })?;
        if colors.iter().any(|(c, _)| *c == rgb) {
            return Err(("colors", format!("colour `{key}` is mapped twice")));
        }
        colors.push((rgb, class));
    }
    if col.colors.is_some() {
        if colors.is_empty() {
            return Err(("colors", "the colour map is empty: no pixel could pass".into()));
        }
        if reduce_zero_label {
            return Err((
                "reduce_zero_label",
                "a colour map gives classes directly: map the colours to the reduced classes instead".into(),
            ));
        }
        if col.decode.as_deref() == Some("luminance") {
            return Err((
                "colors",
                "a colour map reads colours: it cannot be combined with decode: luminance".into(),
            ));
        }
    }
    if matches!(values, ValueRule::ClassNames { .. }) {
        return Err((
            "decode",
            "pixels are numbers: a class column of pixels needs num_classes".into(),
        ));
    }
    let pair_with = match &col.pair_with {
        None => None,
        Some(p) => Some(p.resolve().map_err(|m| ("pair_with", m))?),
    };
    Ok(Some(PixelSpec {
        decode,
        reduce_zero_label,
        colors,
        pair_with,
    }))
}

impl Schema {
    /// The schema with every reference replaced by its number, as YAML a
    /// user can read (and commit): each resolved bound says where it came
    /// from in a comment.
    pub fn to_resolved_yaml(&self) -> String {
        use std::fmt::Write;
        let q = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let mut out = String::from("version: 1\n");
        if let Some(n) = &self.name {
            let _ = writeln!(out, "name: {}", q(n));
        }
        if !self.files.is_empty() || !self.splits.is_empty() || self.layout.is_some() {
            out.push_str("dataset:\n");
        }
        if !self.splits.is_empty() {
            out.push_str("  splits:\n");
            for s in &self.splits {
                let files: Vec<String> = s.files.iter().map(|f| q(&crate::redact::url(f))).collect();
                let _ = writeln!(out, "    {}: [{}]", q(&s.name), files.join(", "));
            }
        }
        if !self.files.is_empty() {
            // (A presigned URL listed here keeps its credentials out.)
            let files: Vec<String> = self.files.iter().map(|f| q(&crate::redact::url(f))).collect();
            let _ = writeln!(out, "  files: [{}]", files.join(", "));
        }
        if let Some(l) = self.layout {
            let _ = writeln!(out, "  layout: {}", l.name());
        }
        if let Some((k, d)) = self.kpt_shape {
            let _ = writeln!(out, "  kpt_shape: [{k}, {d}]");
        }
        out.push_str("columns:\n");
        for c in &self.columns {
            let from = |key: &str| {
                c.bound_sources
                    .iter()
                    .find(|(k, _)| k == key)
                    .map(|(_, f)| format!("  # from {f}"))
                    .unwrap_or_default()
            };
            let _ = writeln!(out, "  {}:", q(&c.name));
            match &c.values {
                ValueRule::Class {
                    num_classes,
                    ignore_index,
                } => {
                    let _ = writeln!(
                        out,
                        "    kind: class\n    num_classes: {num_classes}{}",
                        from("num_classes")
                    );
                    match ignore_index {
                        Some(i) => writeln!(out, "    ignore_index: {i}"),
                        None => writeln!(out, "    ignore_index: null"),
                    }
                    .unwrap_or_default();
                }
                ValueRule::ClassNames { classes } => {
                    let names: Vec<String> = classes.iter().map(|n| q(n)).collect();
                    let _ = writeln!(
                        out,
                        "    kind: class\n    classes: [{}]{}",
                        names.join(", "),
                        from("classes")
                    );
                }
                ValueRule::Index { size, wrap_negative } => {
                    let _ = writeln!(out, "    kind: index\n    size: {size}{}", from("size"));
                    if let Some(t) = c.tokenizer_size {
                        let _ = writeln!(out, "    tokenizer_size: {t}{}", from("tokenizer_size"));
                    }
                    if *wrap_negative {
                        out.push_str("    wrap_negative: true\n");
                    }
                }
                ValueRule::Values { numbers, strings } => {
                    let mut all: Vec<String> = numbers.iter().map(|n| n.to_string()).collect();
                    all.extend(strings.iter().map(|s| q(s)));
                    let _ = writeln!(out, "    kind: values\n    allowed: [{}]", all.join(", "));
                }
                ValueRule::Box { format, images } => {
                    let _ = writeln!(out, "    kind: box\n    format: {}", format.name());
                    if let Some(d) = images {
                        let _ = writeln!(out, "    images: {}", q(&d.to_string_lossy()));
                    }
                }
                ValueRule::Range { min, max } => {
                    out.push_str("    kind: range\n");
                    if let Some(m) = min {
                        let _ = writeln!(out, "    min: {}{}", yaml_number(*m), from("min"));
                    }
                    if let Some(m) = max {
                        let _ = writeln!(out, "    max: {}{}", yaml_number(*m), from("max"));
                    }
                }
            }
            if let Some(n) = c.max_length {
                let _ = writeln!(out, "    max_length: {n}{}", from("max_length"));
            }
            if let Some(n) = c.min_length {
                let _ = writeln!(out, "    min_length: {n}{}", from("min_length"));
            }
            if let Some(p) = c.pad_id {
                let _ = writeln!(out, "    pad_id: {p}");
            }
            if let Some(o) = c.same_length_as {
                let _ = writeln!(out, "    same_length_as: {}", q(&self.columns[o].name));
            }
            if c.nullable {
                out.push_str("    nullable: true\n");
            }
            if c.optional {
                out.push_str("    optional: true\n");
            }
            if let Some(d) = &c.dtype {
                let _ = writeln!(out, "    dtype: {d}");
            }
            if let Some(e) = c.eod_id {
                let _ = writeln!(out, "    eod_id: {e}");
            }
            if let Some(p) = &c.pixels {
                let _ = writeln!(out, "    decode: {}", p.decode.name());
                if p.reduce_zero_label {
                    out.push_str("    reduce_zero_label: true\n");
                }
                if !p.colors.is_empty() {
                    out.push_str("    colors:\n");
                    for ([r, g, b], class) in &p.colors {
                        let _ = writeln!(out, "      \"{r},{g},{b}\": {class}");
                    }
                }
                if let Some(pw) = &p.pair_with {
                    let _ = writeln!(
                        out,
                        "    pair_with: {{dir: {}, mask_suffix: {}, image_suffix: {}}}",
                        q(&pw.dir),
                        q(&pw.mask_suffix),
                        q(&pw.image_suffix)
                    );
                }
            }
            match &c.coco_mapping {
                Some(CocoMapping::Contiguous) => out.push_str("    coco_mapping: contiguous\n"),
                Some(CocoMapping::ByName(names)) => {
                    let names: Vec<String> = names.iter().map(|n| q(n)).collect();
                    let _ = writeln!(out, "    coco_mapping: {{by_name: [{}]}}", names.join(", "));
                }
                None => {}
            }
        }
        out
    }
}

/// A number as YAML reads it back exactly (floats keep a decimal point).
fn yaml_number(n: Number) -> String {
    match n {
        Number::Int(i) => i.to_string(),
        Number::Float(f) if f.is_infinite() => if f > 0.0 { ".inf" } else { "-.inf" }.to_string(),
        Number::Float(f) => format!("{f:?}"),
    }
}

#[cfg(test)]
mod json_schema_files {
    //! The committed JSON Schemas are what the types give: a drifted file is
    //! rewritten and the test fails, so the change shows in `git diff`.

    fn text(schema: serde_json::Value) -> String {
        serde_json::to_string_pretty(&schema).unwrap() + "\n"
    }

    fn check(rel: &str, schema: serde_json::Value) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
        let text = text(schema);
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed != text {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &text).unwrap();
            panic!("{rel} was not what the Rust types give; it has been regenerated: review and commit it");
        }
    }

    #[test]
    fn preflight_yaml_schema_is_committed() {
        check("schemas/json/preflight.schema.json", super::json_schema());
    }

    #[test]
    fn report_schema_is_committed() {
        check("schemas/json/report.schema.json", crate::report::json::json_schema());
    }

    /// What `preflight schema --json-schema` prints (built in with
    /// `include_str!`) is what the types give, byte for byte.
    #[test]
    fn built_in_schemas_are_the_generated_ones() {
        // After a regeneration the build still holds the old file: run again.
        let stale = "the built-in JSON Schema differs from the generated one; rebuild";
        assert!(super::JSON_SCHEMA == text(super::json_schema()), "{stale}");
        assert!(
            crate::report::json::JSON_SCHEMA == text(crate::report::json::json_schema()),
            "{stale}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(columns: &str) -> Result<Schema, Error> {
        Schema::from_yaml(&format!("version: 1\ncolumns:\n{columns}"), Path::new("s.yaml"))
    }

    fn rule(column: &str) -> ValueRule {
        parse(&format!("  v: {column}\n")).unwrap().columns[0].values.clone()
    }

    fn error(column: &str) -> String {
        parse(&format!("  v: {column}\n")).unwrap_err().to_string()
    }

    #[test]
    fn float_to_whole_at_the_edges() {
        assert_eq!(float_to_whole(-0.0), Some(0));
        assert_eq!(float_to_whole(1e20), Some(100_000_000_000_000_000_000));
        assert_eq!(float_to_whole(-9.223372036854776e18), Some(i64::MIN.into()));
        assert_eq!(float_to_whole(0.5), None);
        assert_eq!(float_to_whole(f64::NAN), None);
        assert_eq!(float_to_whole(f64::INFINITY), None);
        assert_eq!(float_to_whole(-f64::INFINITY), None);
        assert_eq!(float_to_whole(1e38), None);
        assert_eq!(float_to_whole(f64::MIN_POSITIVE), None);
    }

    #[test]
    fn integers_and_floats_compare_exactly() {
        assert_eq!(cmp_int_float(0, -0.0), Some(Ordering::Equal));
        assert_eq!(cmp_int_float(0, 0.5), Some(Ordering::Less));
        assert_eq!(cmp_int_float(1, 0.5), Some(Ordering::Greater));
        assert_eq!(cmp_int_float(-1, -0.5), Some(Ordering::Less));
        assert_eq!(cmp_int_float(-1, -1.5), Some(Ordering::Greater));
        // i64::MAX is below the nearest double, 2^63.
        assert_eq!(
            cmp_int_float(i64::MAX.into(), 9.223372036854776e18),
            Some(Ordering::Less)
        );
        assert_eq!(cmp_int_float(1 << 63, 9.223372036854776e18), Some(Ordering::Equal));
        assert_eq!(cmp_int_float(u64::MAX.into(), f64::INFINITY), Some(Ordering::Less));
        assert_eq!(cmp_int_float(i128::MIN, f64::NEG_INFINITY), Some(Ordering::Greater));
        assert_eq!(cmp_int_float(0, f64::NAN), None);
    }

    #[test]
    fn numbers_compare_across_kinds() {
        assert_eq!(Number::Int(1).cmp_exact(Number::Float(1.0)), Some(Ordering::Equal));
        assert_eq!(Number::Float(1.5).cmp_exact(Number::Int(1)), Some(Ordering::Greater));
        assert_eq!(Number::Float(f64::NAN).cmp_exact(Number::Float(f64::NAN)), None);
        assert_eq!(Number::Float(-0.0).cmp_exact(Number::Float(0.0)), Some(Ordering::Equal));
        assert_eq!(Number::Float(3.0).as_whole(), Some(3));
        assert_eq!(Number::Float(3.5).as_whole(), None);
        assert_eq!(Number::Int(-100).as_whole(), Some(-100));
    }

    #[test]
    fn python_float_text() {
        assert_eq!(python_float(" 1_000 "), Some(1000.0));
        assert_eq!(python_float("-0"), Some(-0.0));
        assert_eq!(python_float("1__0"), None);
        assert_eq!(python_float("_1"), None);
        assert_eq!(python_float("1_"), None);
        assert_eq!(python_float("inf"), Some(f64::INFINITY));
        assert!(python_float("nan").is_some_and(f64::is_nan));
        assert_eq!(python_float(""), None);
    }

    #[test]
    fn class_ignore_index_defaults_to_torch() {
        let class = |n, ig| ValueRule::Class {
            num_classes: n,
            ignore_index: ig,
        };
        assert_eq!(rule("{kind: class, num_classes: 2}"), class(2, Some(-100)));
        assert_eq!(
            rule("{kind: class, num_classes: 2, ignore_index: null}"),
            class(2, None)
        );
        assert_eq!(
            rule("{kind: class, num_classes: 150, ignore_index: 255}"),
            class(150, Some(255))
        );
        assert_eq!(rule("{kind: class, num_classes: 1}"), class(1, Some(-100)));
    }

    #[test]
    fn index_and_range_rules() {
        assert_eq!(
            rule("{kind: index, size: 1, wrap_negative: true}"),
            ValueRule::Index {
                size: 1,
                wrap_negative: true
            }
        );
        assert_eq!(
            rule("{kind: range, min: 0, max: 0}"),
            ValueRule::Range {
                min: Some(Number::Int(0)),
                max: Some(Number::Int(0))
            }
        );
        assert_eq!(
            rule("{kind: range, max: -0.5}"),
            ValueRule::Range {
                min: None,
                max: Some(Number::Float(-0.5))
            }
        );
    }

    #[test]
    fn an_ignore_index_inside_the_classes_is_a_warning() {
        let s = parse("  v: {kind: class, num_classes: 3, ignore_index: 2}\n").unwrap();
        assert_eq!(s.warnings.len(), 1);
        assert!(s.warnings[0].starts_with("columns.v.ignore_index: 2 is also class 2 of the 3 classes"));
        let s = parse("  v: {kind: class, num_classes: 3, ignore_index: 3}\n").unwrap();
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn bounds_that_no_value_could_pass_are_errors() {
        assert!(error("{kind: class, num_classes: 0}").contains("num_classes is 0"));
        assert!(error("{kind: class, num_classes: -1}").contains("num_classes is -1"));
        assert!(error("{kind: index, size: 0}").contains("size is 0: no index could be valid"));
        assert!(error("{kind: range, min: 1, max: 0.5}").contains("min 1 is greater than max 0.5"));
        assert!(error("{kind: range, min: .nan}").contains("non-finite float `.nan` rejected"));
        assert!(error("{kind: values, allowed: []}").contains("the allowed list is empty"));
        assert!(error("{kind: index, size: 16, tokenizer_size: 17}").contains("tokenizer_size is 17"));
        assert!(error("{kind: index, size: 16, tokenizer_size: 0}").contains("tokenizer_size is 0"));
    }

    #[test]
    fn errors_name_the_key() {
        let e = error("{kind: class, num_clases: 2}");
        assert!(e.contains("num_clases"), "{e}");
        let e = error("{kind: class, size: 2, num_classes: 2}");
        assert!(e.contains("size"), "{e}");
        let e = error("{kind: class, classes: [a], ignore_index: 1}");
        assert!(e.contains("`ignore_index` applies to numeric classes only"), "{e}");
    }

    #[test]
    fn fractional_class_counts_are_errors() {
        assert!(parse("  v: {kind: class, num_classes: 2.5}\n").is_err());
        assert!(parse("  v: {kind: index, size: 1.5}\n").is_err());
        assert!(parse("  v: {kind: class, num_classes: 2, ignore_index: -0.5}\n").is_err());
    }

    #[test]
    fn bounds_past_i64_keep_their_value() {
        assert_eq!(
            rule("{kind: range, max: 18446744073709551615}"),
            ValueRule::Range {
                min: None,
                max: Some(Number::Int(u64::MAX.into()))
            }
        );
    }
}
