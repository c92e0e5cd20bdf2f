//! Formats: one decoder per file format, each in its own module, each
//! turning a file's bytes into Arrow batches behind [`crate::source::read::Source`].

pub mod coco;
pub mod csv;
pub mod image;
pub mod ipc;
pub mod jsonl;
pub mod litdata;
pub mod mds;
mod mdshash;
pub mod npy;
pub mod parquet;
pub(crate) mod shardcol;
mod textcol;
pub mod tfrecord;
pub mod tokens;
pub mod webdataset;
pub mod yolo;
