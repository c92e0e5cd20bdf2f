//! Formats: one decoder per file format, each in its own module, each
//! turning a file's bytes into Arrow batches behind [`crate::source::read::Source`].

pub(crate) mod dtype;
pub(crate) mod features;
pub(crate) mod image;
pub(crate) mod ipc;
pub(crate) mod npy;
pub(crate) mod parquet;
pub(crate) mod shards;
pub(crate) mod text;
pub(crate) mod tfrecord;
pub(crate) mod tokens;
pub(crate) mod webdataset;
pub(crate) mod yolo;

use crate::source::format::Format;

/// Every format, in the order a file's name or first bytes are matched
/// against them: YOLO (by the schema's layout) before the `.txt` it claims,
/// MDS and LitData (by their shard names) before the extensions, TFRecord's
/// framing before a tar header.
pub(crate) const ALL: &[Format] = &[
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
