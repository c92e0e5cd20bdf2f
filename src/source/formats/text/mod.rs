//! The text formats: CSV/TSV, JSON Lines and COCO annotation files, which
//! share the typed column builders that turn text values into Arrow arrays
//! ([`column`]) and JSON Lines' value parsing (COCO).

pub(crate) mod coco;
pub(crate) mod column;
pub(crate) mod csv;
pub(crate) mod jsonl;
