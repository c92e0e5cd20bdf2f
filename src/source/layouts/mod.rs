//! Layouts: how paths and names become the files (tables) a run checks —
//! the arguments and the schema's `dataset.files` expanded into data files.

pub mod discover;
mod hf_folders;
pub mod image_folder;
pub mod tables;
pub mod yolo;
