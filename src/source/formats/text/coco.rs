//! COCO annotation files: a `.json` object with `images`, `annotations`
//! and `categories` (the shape pycocotools reads) is a table of its
//! annotations, row i being `annotations[i]`, a column per annotation key
//! in order of first appearance (`id`, `image_id`, `category_id`, `iscrowd`,
//! `area`; `bbox` and polygon `segmentation`s are list columns, RLE
//! `segmentation` objects their JSON text). Values become Arrow as in JSON
//! Lines (the shared builders of [`super::jsonl`]); a key an annotation
//! lacks is null there.
//!
//! `category_id` is a class index only through a mapping, and each
//! framework has its own (see [`CategoryMap`]): torchvision's detection
//! models take the raw id (80 COCO classes have ids 1..90, so they need
//! `num_classes=91`), detectron2 numbers the sorted ids 0..N-1
//! (`coco_mapping: contiguous`) and raises on an id that `categories` lacks,
//! mmdetection numbers the categories named in its class list 0..N-1 in the
//! file's order (`coco_mapping: {by_name: [...]}`) and skips the others.
//! Under a mapping an id with no class is null in the column (a `null`
//! violation: detectron2 crashes on it, mmdetection silently drops the
//! box); without one the id is checked raw, and ids that `categories` lacks
//! are a note on the file.
//!
//! With a box rule on `bbox`, boxes that reach past their image's
//! `width`/`height` are a note on the file (the rule itself is a kernel's).
//!
//! The file is read as pycocotools' `COCO()` reads it: Python's `json`
//! (`NaN`, `Infinity` accepted, a BOM refused), and what `createIndex`
//! refuses (an annotation without `id`, `image_id` or `category_id`, an
//! unhashable id) is the file's error. Annotations whose `image_id` no
//! image has are not rows: loaders reach annotations through images.
//!
//! The file is read whole (memory: its size) and parsed twice with
//! serde_json: at open for the keys, the categories and the ids used (values
//! skipped), and when read for the wanted keys only.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::column::{self, BATCH_ELEMENTS, ColumnBuilder};
use super::jsonl::{Keys, KeysSeed, RowSeed, Slots, is_marker, push_value};
use crate::error::ReadError;
use crate::schema::{BoxFormat, CocoMapping, ValueRule};
use crate::source::read::{BATCH_ROWS, Batch, Source};

pub(crate) use crate::schema::columns::CATEGORY_ID;
use crate::source::format::Format;

/// A COCO annotation file (`.json` holding `images`, `annotations` and
/// `categories`): a table of its annotations. Searched for only when its
/// content is COCO, so never in a storage listing (known by name alone).
pub(crate) const FORMAT: Format = Format::new(
    "coco",
    |n, _| n.ext == Some("json"),
    |path, o| {
        let boxes = o.hints.column(BBOX).and_then(|c| match &c.values {
            ValueRule::Box { format, images } => Some(Boxes {
                format: *format,
                images: images.clone(),
            }),
            _ => None,
        });
        Ok(Box::new(CocoSource::open_with(
            path,
            &|c| o.hints.column(c).and_then(|c| c.coco_mapping.clone()),
            boxes,
        )?))
    },
)
.searched_when(|path, _| is_coco(path), |_| false);

/// The annotation key of an object's box (`[x, y, width, height]` in pixels).
const BBOX: &str = "bbox";

/// The schema's box rule on `bbox`: how boxes are written, and where the
/// images are whose `images[]` entry gives no size.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Boxes {
    /// The rule's `format`.
    pub format: BoxFormat,
    /// The rule's `images:` folder.
    pub images: Option<std::path::PathBuf>,
}

/// What the pre-pass keeps of an image: its size, or where its file is.
#[derive(Debug, Clone, PartialEq)]
struct Image {
    /// (width, height), when `images[]` gives both as numbers.
    size: Option<(f64, f64)>,
    /// `file_name`, kept only when the size is not given.
    file: Option<String>,
}

/// Bytes looked at to decide whether a `.json` found in a search is COCO.
const SNIFF_BYTES: usize = 64 << 10;

/// The whole file: read (a local file), or one request (an object in
/// storage, which is then held in memory while it is parsed, as a local
/// file is; read again by the reading pass rather than kept between them).
fn whole_file(path: &Path) -> Result<bytes::Bytes, ReadError> {
    // No size limit: COCO files of a few GB are real (instances of LVIS, Objects365).
    crate::source::storage::read_whole(path, u64::MAX, |len| {
        ReadError::new(format!("{len} bytes: more than can be addressed"))
    })
}

/// Whether a `.json` file found in a directory search is a COCO file: its
/// first bytes open an object and name one of the COCO keys, and its
/// top-level keys (values skipped) include all three, or it does not parse
/// (then opening it is the file's error). Other JSON (`state.json`,
/// `index.json`, configs) is skipped.
pub(crate) fn is_coco(path: &Path) -> bool {
    let Ok(head) = crate::source::storage::head(path, SNIFF_BYTES) else {
        return false;
    };
    let head = &head[..];
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head).trim_ascii_start();
    let names_one = [&b"\"images\""[..], b"\"annotations\"", b"\"categories\""]
        .iter()
        .any(|k| head.windows(k.len()).any(|w| w == *k));
    if !text.starts_with(b"{") || !names_one {
        return false;
    }
    let Ok(bytes) = whole_file(path) else { return true };
    let mut keys = Keys::default();
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
    let mut de = serde_json::Deserializer::from_slice(body);
    // A file that starts like COCO but does not parse is picked up: opening
    // it reports why (a truncated annotation file must not pass unseen).
    KeysSeed(&mut keys).deserialize(&mut de).is_err()
        || ["images", "annotations", "categories"]
            .iter()
            .all(|k| keys.names.iter().any(|n| n == k))
}

/// A category of `categories` (a JSON object: a repeated key keeps its last
/// value, as Python's `json` keeps it).
#[derive(Debug, Clone)]
struct Category {
    id: Value,
    name: Option<Value>,
}

/// An id as a key of a Python dict, which is how pycocotools and the
/// frameworks look ids up: `1`, `1.0` and `true` are one key, `"1"` is
/// another, and `null` is a key too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Key {
    Null,
    Int(i128),
    /// A finite number with a fractional part, by its bits.
    Frac(u64),
    Str(String),
}

impl Key {
    /// The key of a JSON value; `None` for what no key can equal here (a
    /// list or object, which pycocotools refuses as unhashable, and NaN or
    /// an infinity, which no annotation can name as a category).
    fn of(v: &Value) -> Option<Key> {
        match v {
            Value::Null => Some(Key::Null),
            Value::Bool(b) => Some(Key::Int(i128::from(*b))),
            Value::Number(n) => whole(v)
                .map(Key::Int)
                .or_else(|| n.as_f64().filter(|f| f.is_finite()).map(|f| Key::Frac(f.to_bits()))),
            Value::String(s) if !is_marker(s) => Some(Key::Str(s.clone())),
            _ => None,
        }
    }

    /// Python's `sorted` of the ids: numbers by value, strings by code
    /// point; numbers beside strings, or `None` beside anything, raise
    /// `TypeError` there (`None` when so).
    fn sorted(mut keys: Vec<Key>) -> Option<Vec<Key>> {
        let kind = |k: &Key| match k {
            Key::Null => 0,
            Key::Int(_) | Key::Frac(_) => 1,
            Key::Str(_) => 2,
        };
        if keys.windows(2).any(|w| kind(&w[0]) != kind(&w[1]) || kind(&w[0]) == 0) {
            return None;
        }
        let num = |k: &Key| match k {
            Key::Int(i) => *i as f64,
            Key::Frac(b) => f64::from_bits(*b),
            _ => 0.0,
        };
        keys.sort_by(|a, b| match (a, b) {
            (Key::Int(x), Key::Int(y)) => x.cmp(y),
            (Key::Str(x), Key::Str(y)) => x.cmp(y),
            _ => num(a).total_cmp(&num(b)),
        });
        Some(keys)
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self {
            Key::Null => f.write_str("null"),
            Key::Int(i) => write!(f, "{i}"),
            Key::Frac(b) => write!(f, "{}", f64::from_bits(*b)),
            Key::Str(s) => write!(f, "{s:?}"),
        }
    }
}

/// How a mapped column turns ids into classes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CategoryMap {
    /// id -> class index.
    classes: HashMap<Key, i64>,
    /// Whether it is detectron2's (`coco_mapping: contiguous`).
    contiguous: bool,
}

impl CategoryMap {
    /// The mapping a framework builds from `categories`.
    fn new(mapping: &CocoMapping, categories: &[Category]) -> Result<CategoryMap, String> {
        let ids = |keep: &dyn Fn(&Category) -> bool| -> Vec<Key> {
            categories
                .iter()
                .filter(|c| keep(c))
                .filter_map(|c| Key::of(&c.id))
                .collect()
        };
        let order = match mapping {
            // detectron2: cat_ids = sorted(coco_api.getCatIds()), then
            // min(cat_ids) and c["name"] of each category.
            CocoMapping::Contiguous if categories.is_empty() => {
                return Err(
                    "`categories` is empty: detectron2's load_coco_json raises ValueError (min() of no ids)".into(),
                );
            }
            CocoMapping::Contiguous if categories.iter().any(|c| c.name.is_none()) => {
                return Err("a category lacks `name`: detectron2's load_coco_json raises KeyError".into());
            }
            CocoMapping::Contiguous => Key::sorted(ids(&|_| true)).ok_or_else(|| {
                "`categories` mixes ids that Python cannot sort together (numbers and strings, or null): \
                 detectron2's sorted(getCatIds()) raises TypeError"
                    .to_string()
            })?,
            // mmdet: coco.get_cat_ids(cat_names=classes), in categories' order
            // (pycocotools' getCatIds; an empty list means every category).
            CocoMapping::ByName(names) => ids(&|c| {
                names.is_empty()
                    || c.name
                        .as_ref()
                        .and_then(Value::as_str)
                        .is_some_and(|n| names.iter().any(|x| x == n))
            }),
        };
        // {cat_id: i for i, cat_id in enumerate(cat_ids)}: a repeated id keeps its last index.
        let classes = order.into_iter().enumerate().map(|(i, id)| (id, i as i64)).collect();
        Ok(CategoryMap {
            classes,
            contiguous: *mapping == CocoMapping::Contiguous,
        })
    }
}

/// A JSON number that is a whole number (1 and 1.0 are the same dict key in Python).
fn whole(v: &Value) -> Option<i128> {
    let n = v.as_number()?;
    if let Some(i) = n.as_i64() {
        return Some(i.into());
    }
    if let Some(u) = n.as_u64() {
        return Some(u.into());
    }
    crate::schema::float_to_whole(n.as_f64()?)
}

/// A COCO file, with what the pre-pass learnt.
#[derive(Debug)]
pub(crate) struct CocoSource {
    path: std::path::PathBuf,
    columns: Vec<String>,
    categories: Vec<Category>,
    /// The mapping of each mapped column (by name).
    mappings: Vec<(String, CategoryMap)>,
    /// Whether the text holds `NaN`, `Infinity` or numbers beyond f64
    /// (Python's `json` reads them; serde_json reads the text rewritten).
    python_literals: bool,
    /// Annotations whose `image_id` no image has, ascending: no loader
    /// reads them, so they are not rows.
    orphans: Vec<u64>,
    notes: Vec<String>,
}

/// The keys pycocotools' `createIndex` reads from every annotation
/// (`KeyError` when one lacks them; `TypeError` when one is a list or object).
const INDEXED: [&str; 3] = ["id", "image_id", CATEGORY_ID];

/// What the pre-pass collects.
#[derive(Default)]
struct Outline {
    keys: Keys,
    annotations: Option<u64>,
    /// The ids of `images`, when present, with what is kept of each.
    images: Option<HashMap<Key, Image>>,
    categories: Option<Vec<Category>>,
    /// What every annotation names.
    refs: Vec<Ref>,
}

/// What the pre-pass keeps of an annotation.
struct Ref {
    id: Option<Key>,
    image: Option<Key>,
    category: Option<Key>,
    /// What detectron2's `load_coco_json` stops on: an `ignore` other than
    /// 0 (`assert`), a `bbox` that is not a non-empty list (`ValueError`
    /// for an empty one, `TypeError` or worse for the rest).
    d2_stop: Option<&'static str>,
    /// Its `bbox`, when that is four numbers.
    bbox: Option<[f64; 4]>,
}

/// A value pycocotools can use as a dict key (JSON lists and objects are
/// unhashable in Python).
fn hashable(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

/// The text to parse: without a BOM (refused at open), rewritten when it
/// holds Python's float literals.
fn text_of(bytes: &[u8], python_literals: bool) -> std::borrow::Cow<'_, [u8]> {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match python_literals.then(|| super::jsonl::python_literals(body)).flatten() {
        Some(text) => text.into(),
        None => body.into(),
    }
}

impl CocoSource {
    /// Opens a COCO file; `mapping(column)` is the schema's `coco_mapping`,
    /// `boxes` the format of the schema's `bbox` box rule (its boxes are
    /// then compared with their images' sizes).
    pub(crate) fn open_with(
        path: &Path,
        mapping: &dyn Fn(&str) -> Option<CocoMapping>,
        boxes: Option<Boxes>,
    ) -> Result<Self, ReadError> {
        let bytes = whole_file(path)?;
        if bytes.starts_with(b"\xEF\xBB\xBF") {
            // pycocotools reads with json.load(open(f)), which refuses it.
            return Err(ReadError::new(
                "the file starts with a UTF-8 byte-order mark: Python's json (pycocotools' COCO()) refuses it \
                 (\"Unexpected UTF-8 BOM\"); save it without one",
            ));
        }
        let outline_of = |text: &[u8]| {
            let mut outline = Outline::default();
            let mut de = serde_json::Deserializer::from_slice(text);
            OutlineSeed(&mut outline)
                .deserialize(&mut de)
                .and_then(|_| de.end())
                .map(|_| outline)
        };
        let (outline, python_literals) = match outline_of(&bytes) {
            Ok(o) => (o, false),
            Err(e) => match super::jsonl::python_literals(&bytes) {
                Some(text) => (outline_of(&text).map_err(|e| bad(&e))?, true),
                None => return Err(bad(&e)),
            },
        };
        let lacks: Vec<&str> = [
            ("images", outline.images.is_some()),
            ("annotations", outline.annotations.is_some()),
            ("categories", outline.categories.is_some()),
        ]
        .iter()
        .filter(|(_, has)| !has)
        .map(|(k, _)| *k)
        .collect();
        if !lacks.is_empty() {
            return Err(ReadError::new(format!(
                "not a COCO annotation file: the object lacks {}",
                lacks.join(", ")
            )));
        }
        let categories = outline.categories.unwrap_or_default();
        // Every annotation holds the keys pycocotools indexes, so they are
        // columns even of an empty list.
        let mut columns = outline.keys.names;
        for k in INDEXED {
            if !columns.iter().any(|c| c == k) {
                columns.push(k.to_string());
            }
        }
        let mappings: Vec<(String, CategoryMap)> = columns
            .iter()
            .filter_map(|c| mapping(c).map(|m| (c, m)))
            .map(|(c, m)| CategoryMap::new(&m, &categories).map(|map| (c.clone(), map)))
            .collect::<Result<_, _>>()
            .map_err(ReadError::new)?;
        let images = outline.images.unwrap_or_default();
        let known: std::collections::HashSet<Key> = categories.iter().filter_map(|c| Key::of(&c.id)).collect();
        let mut orphans = Vec::new();
        // Category ids used that `categories` lacks: id -> (count, first annotation).
        let mut unknown: BTreeMap<String, (u64, u64)> = BTreeMap::new();
        let detectron2 = mappings.iter().any(|(c, m)| c == CATEGORY_ID && m.contiguous);
        let mut ann_ids = std::collections::HashSet::new();
        for (row, r) in outline.refs.iter().enumerate() {
            // A file of no images at all is annotations alone (a fixture,
            // a label dump): each is a row.
            if !images.is_empty() && !r.image.as_ref().is_some_and(|k| images.contains_key(k)) {
                orphans.push(row as u64);
                continue;
            }
            if detectron2 {
                // What load_coco_json stops on, in the annotations it reads.
                if let Some(why) = r.d2_stop {
                    return Err(ReadError::new(format!("annotations[{row}] has {why}")));
                }
                if r.id.as_ref().is_some_and(|id| !ann_ids.insert(id.clone())) {
                    return Err(ReadError::new(format!(
                        "annotations[{row}] repeats an annotation id: detectron2's load_coco_json asserts \
                         \"Annotation ids ... are not unique!\""
                    )));
                }
            }
            if !r.category.as_ref().is_some_and(|k| known.contains(k)) {
                let id = r.category.as_ref().map_or_else(|| "NaN".to_string(), Key::to_string);
                unknown.entry(id).or_insert((0, row as u64)).0 += 1;
            }
        }
        let mut notes = Vec::new();
        if let Some(boxes) = &boxes {
            notes.extend(outside_images(&outline.refs, &images, &orphans, boxes));
        }
        if let Some(&first) = orphans.first() {
            notes.push(format!(
                "{} annotation(s) name an image_id that `images` lacks (first: annotations[{first}]): pycocotools \
                 indexes annotations by image, so no loader (torchvision, detectron2, mmdetection) reads them; \
                 they are not checked",
                orphans.len()
            ));
        }
        if !unknown.is_empty() {
            let count: u64 = unknown.values().map(|(n, _)| n).sum();
            let ids: Vec<&str> = unknown.keys().take(8).map(String::as_str).collect();
            let first = unknown.values().map(|(_, f)| *f).min().unwrap_or(0);
            let how = if mappings.iter().any(|(c, _)| c == CATEGORY_ID) {
                "they are null in the mapped category_id column"
            } else {
                "torchvision trains on them as raw ids"
            };
            notes.push(format!(
                "{count} annotation(s) name a category_id that `categories` lacks ({}; first: annotations[{first}]): detectron2 raises KeyError on them, mmdetection drops them; {how}",
                ids.join(", ")
            ));
        }
        Ok(CocoSource {
            path: path.to_path_buf(),
            columns,
            categories,
            mappings,
            python_literals,
            orphans,
            notes,
        })
    }

    /// The number of categories.
    pub(crate) fn category_count(&self) -> usize {
        self.categories.len()
    }

    /// The largest category id, if any.
    pub(crate) fn max_category_id(&self) -> Option<i128> {
        self.categories.iter().filter_map(|c| whole(&c.id)).max()
    }
}

/// A note on the boxes that reach past their image's edges, and on those
/// whose image gives no size (never compared), if any.
fn outside_images(refs: &[Ref], images: &HashMap<Key, Image>, orphans: &[u64], boxes: &Boxes) -> Option<String> {
    let format = boxes.format;
    let (mut outside, mut first, mut unsized_) = (0u64, None, 0u64);
    // Sizes read from the image files (`images:`), each file once.
    let mut read: HashMap<&str, Option<(f64, f64)>> = HashMap::new();
    for (row, r) in refs.iter().enumerate() {
        let (Some(b), Some(image)) = (r.bbox, r.image.as_ref()) else {
            continue;
        };
        if orphans.binary_search(&(row as u64)).is_ok() {
            continue;
        }
        let Some(info) = images.get(image) else { continue };
        let size = info.size.or_else(|| {
            let (dir, file) = (boxes.images.as_ref()?, info.file.as_deref()?);
            *read.entry(file).or_insert_with(|| {
                crate::source::formats::image::header::size_of_file(&dir.join(file))
                    .ok()
                    .map(|(w, h)| (w as f64, h as f64))
            })
        });
        let Some((w, h)) = size else {
            unsized_ += 1;
            continue;
        };
        let [a, b2, c, d] = b;
        let (x1, y1, x2, y2) = match format {
            BoxFormat::Xywh => (a, b2, a + c, b2 + d),
            BoxFormat::Xyxy => (a, b2, c, d),
            BoxFormat::Cxcywh => (a - c / 2.0, b2 - d / 2.0, a + c / 2.0, b2 + d / 2.0),
        };
        // Degenerate and non-finite boxes are the box rule's violations.
        if !(x1.is_finite() && y1.is_finite() && x2.is_finite() && y2.is_finite() && x2 > x1 && y2 > y1) {
            continue;
        }
        if x1 < 0.0 || y1 < 0.0 || x2 > w || y2 > h {
            outside += 1;
            first.get_or_insert((row, b, w, h));
        }
    }
    let mut says = Vec::new();
    if let Some((row, b, w, h)) = first {
        says.push(format!(
            "{outside} bbox(es) reach past their image's edges (first: annotations[{row}], {} {:?} in a {w}x{h} image): \
             torchvision's detection references and detectron2 clip them to the image, a pipeline that does not \
             trains on coordinates outside it; check the image sizes and the box format",
            format.name(),
            b
        ));
    }
    if unsized_ > 0 {
        let how = match &boxes.images {
            Some(dir) => format!(
                " and whose file under {} cannot be read (or `file_name` is missing)",
                dir.display()
            ),
            None => " (set the box rule's `images:` to the image folder to read their sizes)".into(),
        };
        says.push(format!(
            "{unsized_} bbox(es) belong to images without a numeric `width` and `height` in `images`{how}: not compared with their image"
        ));
    }
    (!says.is_empty()).then(|| says.join("; "))
}

fn bad(e: &serde_json::Error) -> ReadError {
    ReadError::new(format!("not a COCO annotation file: {e}"))
}

/// Reads the top-level object: keys of annotations, categories, ids used.
struct OutlineSeed<'a>(&'a mut Outline);

impl<'de> DeserializeSeed<'de> for OutlineSeed<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

/// A list as pycocotools iterates it: a JSON list, or an empty object
/// (iterating a dict gives its keys, strings, which `x['id']` refuses).
fn items(v: Value, what: &str) -> Result<Vec<Value>, String> {
    match v {
        Value::Array(a) => Ok(a),
        Value::Object(o) if o.is_empty() => Ok(Vec::new()),
        Value::Object(_) => Err(format!(
            "`{what}` is an object, not a list: pycocotools iterates its keys and raises TypeError"
        )),
        other => Err(format!(
            "`{what}` is {}, not a list: pycocotools raises TypeError",
            kind_name(&other)
        )),
    }
}

fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The `id` of each element of `images` or `categories`, as
/// pycocotools' `createIndex` reads it (`x['id']`).
fn ids_of(list: Vec<Value>, what: &str) -> Result<Vec<(Value, Option<Value>)>, String> {
    list.into_iter()
        .enumerate()
        .map(|(i, x)| match x {
            Value::Object(mut o) => match o.remove("id") {
                Some(id) if hashable(&id) => Ok((id, o.remove("name"))),
                Some(id) => Err(format!(
                    "{what}[{i}]: `id` is {}: pycocotools raises TypeError (unhashable)",
                    kind_name(&id)
                )),
                None => Err(format!("{what}[{i}] lacks `id`: pycocotools' COCO() raises KeyError")),
            },
            other => Err(format!(
                "{what}[{i}] is {}, not an object: pycocotools raises TypeError",
                kind_name(&other)
            )),
        })
        .collect()
}

impl<'de> Visitor<'de> for OutlineSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object with images, annotations and categories")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Python's json keeps the last of repeated keys: so does this, but
        // for `annotations`, whose rows would be ambiguous.
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "annotations" => {
                    if self.0.annotations.is_some() {
                        return Err(de::Error::custom("the object holds `annotations` twice"));
                    }
                    let n = map.next_value_seed(AnnotationsOutline(&mut *self.0))?;
                    self.0.annotations = Some(n);
                }
                "categories" => {
                    let list = items(map.next_value()?, "categories").map_err(de::Error::custom)?;
                    let cats = ids_of(list, "categories").map_err(de::Error::custom)?;
                    self.0.categories = Some(cats.into_iter().map(|(id, name)| Category { id, name }).collect());
                }
                "images" => {
                    // Only the ids (other values skipped): pycocotools indexes images by them.
                    let ids = map.next_value_seed(ImagesOutline)?;
                    self.0.images = Some(ids);
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The ids of `images` (a list of objects each with an `id`, or an empty object).
struct ImagesOutline;

impl<'de> DeserializeSeed<'de> for ImagesOutline {
    type Value = HashMap<Key, Image>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ImagesOutline {
    type Value = HashMap<Key, Image>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("`images` as a list of image objects (pycocotools raises TypeError on anything else)")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        match map.next_key::<IgnoredAny>()? {
            None => Ok(Default::default()),
            Some(_) => Err(de::Error::custom(
                "`images` is an object, not a list: pycocotools iterates its keys and raises TypeError",
            )),
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut ids = HashMap::new();
        let mut i = 0u64;
        while let Some((id, image)) = seq.next_element_seed(ImageId(i))? {
            if let Some(k) = Key::of(&id) {
                // pycocotools' imgs[id] = img: a repeated id keeps the last.
                ids.insert(k, image);
            }
            i += 1;
        }
        Ok(ids)
    }
}

/// The `id` of `images[i]`, and its `width` and `height` when both are
/// numbers, else its `file_name` (other values skipped; a repeated key
/// keeps its last value).
struct ImageId(u64);

impl<'de> DeserializeSeed<'de> for ImageId {
    type Value = (Value, Image);
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for ImageId {
    type Value = (Value, Image);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "images[{}] as an object (pycocotools raises TypeError)", self.0)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut id, mut width, mut height, mut file) = (None, None, None, None);
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "id" => id = Some(map.next_value::<Value>()?),
                "width" => width = map.next_value::<Value>()?.as_f64(),
                "height" => height = map.next_value::<Value>()?.as_f64(),
                "file_name" => file = map.next_value::<Value>()?.as_str().map(str::to_string),
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        match id {
            Some(id) if hashable(&id) => {
                let size = width.zip(height);
                let file = if size.is_some() { None } else { file };
                Ok((id, Image { size, file }))
            }
            Some(id) => Err(de::Error::custom(format!(
                "images[{}]: `id` is {}: pycocotools raises TypeError (unhashable)",
                self.0,
                kind_name(&id)
            ))),
            None => Err(de::Error::custom(format!(
                "images[{}] lacks `id`: pycocotools' COCO() raises KeyError",
                self.0
            ))),
        }
    }
}

/// The annotations list in the pre-pass: keys and category ids.
struct AnnotationsOutline<'a>(&'a mut Outline);

impl<'de> DeserializeSeed<'de> for AnnotationsOutline<'_> {
    type Value = u64;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for AnnotationsOutline<'_> {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of annotation objects")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<u64, A::Error> {
        // An empty object iterates as an empty list; any other does not.
        match map.next_key::<IgnoredAny>()? {
            None => Ok(0),
            Some(_) => Err(de::Error::custom(
                "`annotations` is an object, not a list: pycocotools iterates its keys and raises TypeError",
            )),
        }
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
        let slots: HashMap<&str, usize> = INDEXED
            .iter()
            .chain(&["ignore", "bbox"])
            .enumerate()
            .map(|(i, k)| (*k, i))
            .collect();
        let mut values = [None, None, None, None, None];
        let mut n = 0u64;
        // Keys first (values skipped), then the category id of the same object
        // would need a second look: one seed collects both.
        while seq
            .next_element_seed(AnnotationOutline {
                keys: &mut self.0.keys,
                slots: &slots,
                values: &mut values,
            })?
            .is_some()
        {
            for (k, v) in INDEXED.iter().zip(&values) {
                match v {
                    None => {
                        return Err(de::Error::custom(format!(
                            "annotations[{n}] lacks `{k}`: pycocotools' COCO() raises KeyError"
                        )));
                    }
                    Some(v) if !hashable(v) => {
                        return Err(de::Error::custom(format!(
                            "annotations[{n}]: `{k}` is {}: pycocotools' COCO() raises TypeError (unhashable)",
                            kind_name(v)
                        )));
                    }
                    Some(_) => {}
                }
            }
            let [id, image, category, ignore, bbox] = std::mem::take(&mut values);
            let d2_stop = if ignore.is_some_and(|v| Key::of(&v) != Some(Key::Int(0))) {
                Some("an `ignore` other than 0 (detectron2's load_coco_json asserts it is 0)")
            } else if bbox.as_ref().is_some_and(|v| v.as_array().is_none_or(|b| b.is_empty())) {
                Some("a `bbox` that is not a non-empty list (detectron2's load_coco_json raises on it)")
            } else {
                None
            };
            let bbox = bbox.as_ref().and_then(Value::as_array).and_then(|b| {
                let n: Vec<f64> = b.iter().filter_map(Value::as_f64).collect();
                <[f64; 4]>::try_from(n).ok().filter(|_| b.len() == 4)
            });
            self.0.refs.push(Ref {
                id: id.as_ref().and_then(Key::of),
                image: image.as_ref().and_then(Key::of),
                category: category.as_ref().and_then(Key::of),
                d2_stop,
                bbox,
            });
            n += 1;
        }
        Ok(n)
    }
}

/// One annotation in the pre-pass: its keys, and its category id.
struct AnnotationOutline<'a> {
    keys: &'a mut Keys,
    slots: &'a HashMap<&'a str, usize>,
    values: &'a mut [Option<Value>],
}

impl<'de> DeserializeSeed<'de> for AnnotationOutline<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for AnnotationOutline<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an annotation object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if !self.keys.seen.contains(key.as_ref()) {
                self.keys.seen.insert(key.to_string());
                self.keys.names.push(key.to_string());
            }
            match self.slots.get(key.as_ref()) {
                Some(&i) => self.values[i] = Some(map.next_value()?),
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The read pass: the wanted keys of every annotation, into batches.
struct ReadPass<'a> {
    names: &'a [&'a str],
    slots: &'a HashMap<&'a str, usize>,
    outputs: &'a [usize],
    maps: &'a [Option<&'a CategoryMap>],
    /// Annotations that are not rows ([`CocoSource::orphans`]).
    orphans: &'a [u64],
    /// Whether the text was rewritten by [`super::jsonl::python_literals`].
    rewritten: bool,
    sink: &'a mut dyn FnMut(Batch) -> Result<(), ReadError>,
    /// The sink's or a builder's error, which serde only carries as text.
    failed: Option<ReadError>,
}

impl<'de> Visitor<'de> for &mut ReadPass<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object with images, annotations and categories")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if key == "annotations" {
                map.next_value_seed(&mut *self)?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut values: Vec<Option<Value>> = vec![None; self.slots.len()];
        let mut builders: Vec<ColumnBuilder> = self.names.iter().map(|_| ColumnBuilder::new()).collect();
        let (mut row, mut first_row, mut rows, mut elements) = (0u64, 0u64, 0usize, 0usize);
        let stop = |this: &mut ReadPass<'_>, e: ReadError| {
            this.failed = Some(e);
            de::Error::custom("stopped")
        };
        let mut orphans = self.orphans.iter().peekable();
        while seq
            .next_element_seed(RowSeed {
                slots: self.slots,
                values: &mut values,
            })?
            .is_some()
        {
            if orphans.next_if_eq(&&row).is_some() {
                // Not a row: the rows before it end a batch (rows of a batch are consecutive).
                if rows > 0 {
                    let batch =
                        column::take_batch(self.names, &mut builders, rows, first_row).map_err(|e| stop(self, e))?;
                    (self.sink)(batch).map_err(|e| stop(self, e))?;
                }
                values.iter_mut().for_each(|v| *v = None);
                row += 1;
                first_row = row;
                (rows, elements) = (0, 0);
                continue;
            }
            for ((b, &slot), map) in builders.iter_mut().zip(self.outputs).zip(self.maps) {
                match (&values[slot], map) {
                    (Some(v), None) => {
                        elements += push_value(b, v, 0, self.rewritten)
                            .map_err(|m| stop(self, ReadError::new(m).at(format!("annotations[{row}]"))))?;
                    }
                    (Some(v), Some(m)) => match Key::of(v).and_then(|id| m.classes.get(&id)) {
                        Some(&class) => b.push_i64(class),
                        None => b.push_null(),
                    },
                    (None, _) => b.push_null(),
                }
            }
            values.iter_mut().for_each(|v| *v = None);
            row += 1;
            rows += 1;
            if rows >= BATCH_ROWS || elements >= BATCH_ELEMENTS {
                let batch =
                    column::take_batch(self.names, &mut builders, rows, first_row).map_err(|e| stop(self, e))?;
                (self.sink)(batch).map_err(|e| stop(self, e))?;
                first_row = row;
                (rows, elements) = (0, 0);
            }
        }
        if rows > 0 {
            let batch = column::take_batch(self.names, &mut builders, rows, first_row).map_err(|e| stop(self, e))?;
            (self.sink)(batch).map_err(|e| stop(self, e))?;
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for &mut ReadPass<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl Source for CocoSource {
    fn columns(&self) -> &[String] {
        &self.columns
    }

    /// The categories' names in class order: under the column's mapping,
    /// or (raw ids, torchvision's) at their ids.
    fn label_names(&self, column: usize) -> Option<(Vec<Option<String>>, String)> {
        let name = self.columns.get(column)?;
        if name != CATEGORY_ID {
            return None;
        }
        // pycocotools' cats[id] = cat: a repeated id keeps the last.
        let by_id: HashMap<Key, Option<String>> = self
            .categories
            .iter()
            .filter_map(|c| {
                let n = c.name.as_ref().and_then(Value::as_str).map(str::to_string);
                Some((Key::of(&c.id)?, n))
            })
            .collect();
        let mut names: Vec<Option<String>> = Vec::new();
        let mut put = |i: usize, n: &Option<String>| {
            if names.len() <= i {
                names.resize(i + 1, None);
            }
            names[i] = n.clone();
        };
        let from = match self.mappings.iter().find(|(c, _)| c == name) {
            Some((_, map)) => {
                for (id, &class) in &map.classes {
                    put(usize::try_from(class).ok()?, by_id.get(id)?);
                }
                if map.contiguous {
                    "the COCO categories (sorted ids, as detectron2 numbers them)"
                } else {
                    "the COCO categories (as mmdetection numbers the listed names)"
                }
            }
            None => {
                for (id, n) in &by_id {
                    // Raw ids are classes: a name per id, gaps nameless.
                    if let Key::Int(i) = id
                        && (0..=1 << 20).contains(i)
                    {
                        put(*i as usize, n);
                    }
                }
                "the COCO categories (by id, as torchvision takes them)"
            }
        };
        Some((names, from.to_string()))
    }

    fn units(&self) -> usize {
        1
    }

    fn read(
        &self,
        unit: usize,
        projection: &[usize],
        sink: &mut dyn FnMut(Batch) -> Result<(), ReadError>,
    ) -> Result<(), ReadError> {
        if unit != 0 {
            return Err(ReadError::new(format!("no unit {unit}: a COCO file is one unit")));
        }
        let Slots { names, slots, outputs } = Slots::of(&self.columns, projection)?;
        let maps: Vec<Option<&CategoryMap>> = names
            .iter()
            .map(|n| self.mappings.iter().find(|(c, _)| c == n).map(|(_, m)| m))
            .collect();
        let bytes = whole_file(&self.path)?;
        let body = text_of(&bytes, self.python_literals);
        let mut pass = ReadPass {
            names: &names,
            slots: &slots,
            outputs: &outputs,
            maps: &maps,
            orphans: &self.orphans,
            rewritten: self.python_literals,
            sink,
            failed: None,
        };
        let mut de = serde_json::Deserializer::from_slice(&body);
        let result = de::Deserializer::deserialize_map(&mut de, &mut pass);
        match (pass.failed.take(), result) {
            (Some(e), _) => Err(e),
            // The outline read at open skips values this pass reads (a
            // nesting too deep for Python's json, and for this parser, sits
            // in one), or the file changed since: either way its bytes now.
            (None, Err(e)) => Err(ReadError::new(format!("not a COCO annotation file: {e}"))),
            (None, Ok(())) => Ok(()),
        }
    }

    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cats(json: &str) -> Vec<Category> {
        ids_of(serde_json::from_str(json).unwrap(), "categories")
            .unwrap()
            .into_iter()
            .map(|(id, name)| Category { id, name })
            .collect()
    }

    #[test]
    fn mappings_are_detectron2s_and_mmdetections() {
        let c = cats(r#"[{"id": 3, "name": "car"}, {"id": 1, "name": "person"}, {"id": 90, "name": "toothbrush"}]"#);
        let m = CategoryMap::new(&CocoMapping::Contiguous, &c).unwrap();
        assert_eq!(
            m.classes,
            HashMap::from([(Key::Int(1), 0), (Key::Int(3), 1), (Key::Int(90), 2)])
        );
        let m = CategoryMap::new(&CocoMapping::ByName(vec!["person".into(), "car".into()]), &c).unwrap();
        // categories' order, not the class list's (pycocotools getCatIds)
        assert_eq!(m.classes, HashMap::from([(Key::Int(3), 0), (Key::Int(1), 1)]));
        assert_eq!(whole(&serde_json::json!(3.0)), Some(3));
        assert_eq!(whole(&serde_json::json!(3.5)), None);
        assert_eq!(whole(&serde_json::json!("3")), None);
        // Python's dict keys and sorted(): 1 == 1.0 == True, "10" < "9", 1.5 between 1 and 2.
        assert_eq!(Key::of(&serde_json::json!(true)), Some(Key::Int(1)));
        let m = CategoryMap::new(
            &CocoMapping::Contiguous,
            &cats(r#"[{"id": "9", "name": "a"}, {"id": "10", "name": "b"}]"#),
        )
        .unwrap();
        assert_eq!(
            m.classes,
            HashMap::from([(Key::Str("10".into()), 0), (Key::Str("9".into()), 1)])
        );
        let m = CategoryMap::new(
            &CocoMapping::Contiguous,
            &cats(r#"[{"id": 2, "name": "a"}, {"id": 1.5, "name": "b"}, {"id": 1, "name": "c"}]"#),
        )
        .unwrap();
        assert_eq!(m.classes[&Key::Int(2)], 2);
        assert!(
            CategoryMap::new(
                &CocoMapping::Contiguous,
                &cats(r#"[{"id": 2, "name": "a"}, {"id": "1", "name": "b"}]"#)
            )
            .is_err()
        );
    }

    #[test]
    fn outlines_refuse_what_is_no_coco_table() {
        let dir = tempfile::tempdir().unwrap();
        let open = |text: &str| {
            let p = dir.path().join("x.json");
            std::fs::write(&p, text).unwrap();
            CocoSource::open_with(&p, &|_| None, None).map(|s| s.columns)
        };
        let twice = r#"{"images": [], "annotations": [], "categories": [], "annotations": [{"a": 1}]}"#;
        assert!(open(twice).unwrap_err().message.contains("`annotations` twice"));
        assert!(
            open(r#"{"images": [], "annotations": []}"#)
                .unwrap_err()
                .message
                .contains("lacks categories")
        );
        assert!(open("[1]").is_err());
        let keys = r#"{"categories": [], "annotations": [{"b": 1, "id": 1, "image_id": 1, "category_id": 1},
            {"a": 2, "b": 3, "id": 2, "image_id": 1, "category_id": 1}], "images": {}}"#;
        assert_eq!(open(keys).unwrap(), ["b", "id", "image_id", "category_id", "a"]);
        // pycocotools' index needs these keys in every annotation, so an empty list has them.
        let empty = r#"{"categories": [], "annotations": [], "images": []}"#;
        assert_eq!(open(empty).unwrap(), ["id", "image_id", "category_id"]);
        let lacks = r#"{"categories": [], "annotations": [{"id": 1, "category_id": 1}], "images": []}"#;
        assert!(
            open(lacks)
                .unwrap_err()
                .message
                .contains("annotations[0] lacks `image_id`")
        );
    }
}
