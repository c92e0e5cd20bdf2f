//! Formats: one decoder per file format, each in its own module, each
//! turning a file's bytes into Arrow batches behind [`crate::source::read::Source`].

pub mod dtype;
pub mod features;
pub mod image;
pub mod ipc;
pub mod npy;
pub mod parquet;
pub mod shards;
pub mod text;
pub mod tfrecord;
pub mod tokens;
pub mod webdataset;
pub mod yolo;

use crate::source::format::Format;

/// Every format, in the order a file's name or first bytes are matched
/// against them: YOLO (by the schema's layout) before the `.txt` it claims,
/// MDS and LitData (by their shard names) before the extensions, TFRecord's
/// framing before a tar header.
pub const ALL: &[Format] = &[
    yolo::FORMAT,
    shards::mds::FORMAT,
    shards::litdata::FORMAT,
    parquet::FORMAT,
    text::csv::FORMAT,
    text::jsonl::FORMAT,
    ipc::FORMAT,
    npy::FORMAT,
    npy::NPZ,
    tokens::FORMAT,
    image::FORMAT,
    text::coco::FORMAT,
    tfrecord::FORMAT,
    webdataset::FORMAT,
];
