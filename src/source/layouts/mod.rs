//! Layouts: how paths and names become the files (tables) a run checks —
//! the arguments and the schema's `dataset.files` expanded into data files.

pub(crate) mod discover;
mod hf_folders;
pub(crate) mod image_folder;
pub(crate) mod tables;
pub(crate) mod yolo;
