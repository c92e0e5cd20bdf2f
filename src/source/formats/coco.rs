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
//! The file is read whole (memory: its size) and parsed twice with
//! serde_json: at open for the keys, the categories and the ids used (values
//! skipped), and when read for the wanted keys only.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::jsonl::{Keys, KeysSeed, RowSeed, Slots, push_value};
use super::textcol::{self, BATCH_ELEMENTS, ColumnBuilder};
use crate::schema::CocoMapping;
use crate::source::{BATCH_ROWS, Batch, ReadError, Source};

/// The column that holds category ids.
pub const CATEGORY_ID: &str = "category_id";

/// Bytes looked at to decide whether a `.json` found in a search is COCO.
const SNIFF_BYTES: usize = 64 << 10;

/// The whole file: read (a local file), or one request (an object in
/// storage, which is then held in memory while it is parsed, as a local
/// file is; read again by the reading pass rather than kept between them).
fn whole_file(path: &Path) -> Result<bytes::Bytes, ReadError> {
    if crate::source::storage::remote::is_url(path) {
        crate::source::storage::Input::open(path)?.all()
    } else {
        Ok(std::fs::read(path)?.into())
    }
}

/// Whether a `.json` file found in a directory search is a COCO file: its
/// first bytes open an object and name one of the COCO keys, and its
/// top-level keys (values skipped) include all three, or it does not parse
/// (then opening it is the file's error). Other JSON (`state.json`,
/// `index.json`, configs) is skipped.
pub fn is_coco(path: &Path) -> bool {
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = vec![0u8; SNIFF_BYTES];
    let n = std::io::Read::read(&mut file, &mut head).unwrap_or(0);
    let head = &head[..n];
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head).trim_ascii_start();
    let names_one = [&b"\"images\""[..], b"\"annotations\"", b"\"categories\""]
        .iter()
        .any(|k| head.windows(k.len()).any(|w| w == *k));
    if !text.starts_with(b"{") || !names_one {
        return false;
    }
    let Ok(bytes) = std::fs::read(path) else { return true };
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

/// A category of `categories`.
#[derive(Debug, Clone, serde::Deserialize)]
struct Category {
    id: Value,
    #[serde(default)]
    name: Option<Value>,
}

/// How a mapped column turns ids into classes.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryMap {
    /// id -> class index.
    classes: HashMap<i128, i64>,
}

impl CategoryMap {
    /// The mapping a framework builds from `categories`.
    fn new(mapping: &CocoMapping, categories: &[Category]) -> CategoryMap {
        let ids = |keep: &dyn Fn(&Category) -> bool| -> Vec<i128> {
            categories
                .iter()
                .filter(|c| keep(c))
                .filter_map(|c| whole(&c.id))
                .collect()
        };
        let order = match mapping {
            // detectron2: cat_ids = sorted(coco_api.getCatIds())
            CocoMapping::Contiguous => {
                let mut v = ids(&|_| true);
                v.sort_unstable();
                v
            }
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
        CategoryMap { classes }
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
pub struct CocoSource {
    path: std::path::PathBuf,
    columns: Vec<String>,
    categories: Vec<Category>,
    /// The mapping of each mapped column (by name).
    mappings: Vec<(String, CategoryMap)>,
    notes: Vec<String>,
}

/// What the pre-pass collects.
#[derive(Default)]
struct Outline {
    keys: Keys,
    annotations: Option<u64>,
    images: bool,
    categories: Option<Vec<Category>>,
    /// Category ids used: id -> (count, first annotation).
    used: BTreeMap<i128, (u64, u64)>,
}

impl CocoSource {
    /// Opens a COCO file; `mapping(column)` is the schema's `coco_mapping`.
    pub fn open_with(path: &Path, mapping: &dyn Fn(&str) -> Option<CocoMapping>) -> Result<Self, ReadError> {
        let bytes = whole_file(path)?;
        let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        let mut outline = Outline::default();
        let mut de = serde_json::Deserializer::from_slice(body);
        OutlineSeed(&mut outline)
            .deserialize(&mut de)
            .and_then(|_| de.end())
            .map_err(|e| ReadError::new(format!("not a COCO annotation file: {e}")))?;
        let lacks: Vec<&str> = [
            ("images", outline.images),
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
        let columns = outline.keys.names;
        let mappings: Vec<(String, CategoryMap)> = columns
            .iter()
            .filter_map(|c| mapping(c).map(|m| (c.clone(), CategoryMap::new(&m, &categories))))
            .collect();
        let known: Vec<i128> = categories.iter().filter_map(|c| whole(&c.id)).collect();
        let unknown: Vec<(&i128, &(u64, u64))> = outline.used.iter().filter(|(id, _)| !known.contains(id)).collect();
        let mut notes = Vec::new();
        if !unknown.is_empty() {
            let count: u64 = unknown.iter().map(|(_, (n, _))| n).sum();
            let ids: Vec<String> = unknown.iter().take(8).map(|(id, _)| id.to_string()).collect();
            let first = unknown.iter().map(|(_, (_, f))| *f).min().unwrap_or(0);
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
            notes,
        })
    }

    /// The number of categories.
    pub fn category_count(&self) -> usize {
        self.categories.len()
    }

    /// The largest category id, if any.
    pub fn max_category_id(&self) -> Option<i128> {
        self.categories.iter().filter_map(|c| whole(&c.id)).max()
    }
}

/// Reads the top-level object: keys of annotations, categories, ids used.
struct OutlineSeed<'a>(&'a mut Outline);

impl<'de> DeserializeSeed<'de> for OutlineSeed<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for OutlineSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object with images, annotations and categories")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "annotations" => {
                    // Python's json keeps the last of repeated keys; rows
                    // would be ambiguous, so a second list is refused.
                    if self.0.annotations.is_some() {
                        return Err(de::Error::custom("the object holds `annotations` twice"));
                    }
                    let n = map.next_value_seed(AnnotationsOutline(&mut *self.0))?;
                    self.0.annotations = Some(n);
                }
                "categories" => self.0.categories = Some(map.next_value()?),
                "images" => {
                    // Not read: present is enough (pycocotools indexes it).
                    map.next_value::<IgnoredAny>()?;
                    self.0.images = true;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// The annotations list in the pre-pass: keys and category ids.
struct AnnotationsOutline<'a>(&'a mut Outline);

impl<'de> DeserializeSeed<'de> for AnnotationsOutline<'_> {
    type Value = u64;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<u64, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for AnnotationsOutline<'_> {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of annotation objects")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<u64, A::Error> {
        let slots: HashMap<&str, usize> = [(CATEGORY_ID, 0)].into_iter().collect();
        let mut values = [None];
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
            if let Some(id) = values[0].take().as_ref().and_then(whole) {
                let e = self.0.used.entry(id).or_insert((0, n));
                e.0 += 1;
            }
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
        while seq
            .next_element_seed(RowSeed {
                slots: self.slots,
                values: &mut values,
            })?
            .is_some()
        {
            for ((b, &slot), map) in builders.iter_mut().zip(self.outputs).zip(self.maps) {
                match (&values[slot], map) {
                    (Some(v), None) => {
                        elements += push_value(b, v, 0, false)
                            .map_err(|m| stop(self, ReadError::new(m).at(format!("annotations[{row}]"))))?;
                    }
                    (Some(v), Some(m)) => match whole(v).and_then(|id| m.classes.get(&id)) {
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
                    textcol::take_batch(self.names, &mut builders, rows, first_row).map_err(|e| stop(self, e))?;
                (self.sink)(batch).map_err(|e| stop(self, e))?;
                first_row = row;
                (rows, elements) = (0, 0);
            }
        }
        if rows > 0 {
            let batch = textcol::take_batch(self.names, &mut builders, rows, first_row).map_err(|e| stop(self, e))?;
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
        let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&bytes);
        let mut pass = ReadPass {
            names: &names,
            slots: &slots,
            outputs: &outputs,
            maps: &maps,
            sink,
            failed: None,
        };
        let mut de = serde_json::Deserializer::from_slice(body);
        let result = de::Deserializer::deserialize_map(&mut de, &mut pass);
        match (pass.failed.take(), result) {
            (Some(e), _) => Err(e),
            (None, Err(e)) => Err(ReadError::new(format!("the file changed since it was opened: {e}"))),
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
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn mappings_are_detectron2s_and_mmdetections() {
        let c = cats(r#"[{"id": 3, "name": "car"}, {"id": 1, "name": "person"}, {"id": 90, "name": "toothbrush"}]"#);
        let m = CategoryMap::new(&CocoMapping::Contiguous, &c);
        assert_eq!(m.classes, HashMap::from([(1, 0), (3, 1), (90, 2)]));
        let m = CategoryMap::new(&CocoMapping::ByName(vec!["person".into(), "car".into()]), &c);
        // categories' order, not the class list's (pycocotools getCatIds)
        assert_eq!(m.classes, HashMap::from([(3, 0), (1, 1)]));
        assert_eq!(whole(&serde_json::json!(3.0)), Some(3));
        assert_eq!(whole(&serde_json::json!(3.5)), None);
        assert_eq!(whole(&serde_json::json!("3")), None);
    }

    #[test]
    fn outlines_refuse_what_is_no_coco_table() {
        let dir = tempfile::tempdir().unwrap();
        let open = |text: &str| {
            let p = dir.path().join("x.json");
            std::fs::write(&p, text).unwrap();
            CocoSource::open_with(&p, &|_| None).map(|s| s.columns)
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
        let keys = r#"{"categories": [], "annotations": [{"b": 1}, {"a": 2, "b": 3}], "images": {}}"#;
        assert_eq!(open(keys).unwrap(), ["b", "a"]);
    }
}
