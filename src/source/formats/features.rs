//! Hugging Face `datasets` features as Parquet and Arrow files carry them:
//! the schema metadata key `huggingface` holds `{"info": {"features":
//! ...}}`, where a `ClassLabel` lists its class names in index order.

use arrow::datatypes::Metadata;
use serde_json::Value;

/// Where the names of [`class_names`] come from, as reports say it.
pub(crate) const FROM: &str = "the file's `datasets` ClassLabel";

/// The class names of `column`'s `ClassLabel` (or of the `ClassLabel` a
/// `Sequence`/`List` of labels holds, as token classification stores
/// tags), from a schema's metadata.
pub(crate) fn class_names(metadata: &Metadata, column: &str) -> Option<Vec<Option<String>>> {
    let json: Value = serde_json::from_str(metadata.get("huggingface")?).ok()?;
    let mut feature = json.get("info")?.get("features")?.get(column)?;
    loop {
        match feature.get("_type")?.as_str()? {
            "ClassLabel" => break,
            "Sequence" | "List" | "LargeList" => feature = feature.get("feature")?,
            _ => return None,
        }
    }
    let names = feature.get("names")?.as_array()?;
    Some(names.iter().map(|n| n.as_str().map(str::to_string)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(features: &str) -> Metadata {
        Metadata::from([("huggingface", format!(r#"{{"info": {{"features": {features}}}}}"#))])
    }

    #[test]
    fn class_labels_and_sequences_of_them_name_their_classes() {
        let m = meta(
            r#"{"text": {"dtype": "string", "_type": "Value"},
                "label": {"names": ["neg", "pos"], "_type": "ClassLabel"},
                "tags": {"feature": {"names": ["O", "B-PER"], "_type": "ClassLabel"}, "_type": "Sequence"}}"#,
        );
        let some = |v: &[&str]| Some(v.iter().map(|s| Some(s.to_string())).collect::<Vec<_>>());
        assert_eq!(class_names(&m, "label"), some(&["neg", "pos"]));
        assert_eq!(class_names(&m, "tags"), some(&["O", "B-PER"]));
        assert_eq!(class_names(&m, "text"), None);
        assert_eq!(class_names(&m, "absent"), None);
        assert_eq!(class_names(&Metadata::default(), "label"), None);
    }
}
