//! Column names with a meaning of their own: readers produce them and
//! rules, hints and reports recognise them. They live with the schema so
//! that neither side imports the other's layer for a name.

/// The column of an image file (its decoded pixels).
pub const PIXELS: &str = "pixels";
/// The column that holds COCO category ids.
pub const CATEGORY_ID: &str = "category_id";
