//! What a format says about itself, in one value per format: how its files
//! are named or sniffed, when a search keeps them, and how one opens.
//!
//! Each format's folder defines its [`Format`] once; `formats::ALL` lists
//! them, and discovery and opening consult that list, so adding a format
//! touches its folder and one line there, nothing else.

use std::fmt;
use std::path::Path;

use crate::error::ReadError;
use crate::schema::{ColumnSpec, Layout, Schema};
use crate::source::read::Source;

/// A file's name as formats match it: lower-cased (lossy, so a name that is
/// not UTF-8 still has its ASCII extension) and its extension under any
/// compression suffix (`x.csv.gz` is `csv`).
pub(crate) struct FileName<'a> {
    /// The path, without a URL's query.
    pub path: &'a Path,
    /// The lower-cased file name.
    pub name: &'a str,
    /// The lower-cased extension under a `.gz`/`.zst`/`.zstd` suffix.
    pub ext: Option<&'a str>,
}

/// What opening a file knows besides its path.
pub(crate) struct Opening<'a> {
    /// Whether the path is a URL (an object in storage).
    pub remote: bool,
    /// The file's size, as listed (0 for an object not listed).
    pub len: u64,
    /// What the schema says about files whose bytes do not say it.
    pub hints: &'a Hints,
}

/// Opens a file of a format.
pub(crate) type OpenFn = fn(&Path, &Opening) -> Result<Box<dyn Source>, ReadError>;

/// Whether a shard has a column of `columns`, in its first sample (`deep`
/// false) or in any.
pub(crate) type ProvidesFn = fn(&Path, &[String], bool) -> bool;

/// One format, as it describes itself.
#[derive(Clone, Copy)]
pub(crate) struct Format {
    name: &'static str,
    named: fn(&FileName, &Hints) -> bool,
    sniff: Option<fn(&[u8]) -> bool>,
    searched: fn(&Path, &[String]) -> bool,
    listed: fn(&[String]) -> bool,
    provides: Option<ProvidesFn>,
    open: OpenFn,
    companion: Option<(&'static str, &'static str)>,
    opens_by_footer: bool,
    index: Option<DatasetIndex>,
}

/// What a format whose files an `index.json` beside them lists says about
/// a folder: the files the index lists that the folder lacks (name, why),
/// and why a folder whose index lists none has nothing to check.
#[derive(Clone, Copy)]
pub(crate) struct DatasetIndex {
    /// The listed files the folder lacks.
    pub missing: fn(&Path) -> Vec<(String, String)>,
    /// Why the folder is an empty dataset, when its index lists no file.
    pub empty: fn(&Path) -> Option<&'static str>,
}

impl Format {
    /// A format called `name`, whose files `named` recognises and `open`
    /// reads; every search keeps them and content says nothing.
    pub(crate) const fn new(name: &'static str, named: fn(&FileName, &Hints) -> bool, open: OpenFn) -> Format {
        Format {
            name,
            named,
            sniff: None,
            searched: |_, _| true,
            listed: |_| true,
            provides: None,
            open,
            companion: None,
            opens_by_footer: false,
            index: None,
        }
    }

    /// Recognised by its first bytes too (up to 512), for a file named on
    /// the command line whose extension says nothing.
    pub(crate) const fn sniffed(mut self, sniff: fn(&[u8]) -> bool) -> Format {
        self.sniff = Some(sniff);
        self
    }

    /// Whether a directory search or glob keeps a file of this format, for
    /// a schema with these column names; and whether a storage listing keeps
    /// an object by its name alone (`listed`).
    pub(crate) const fn searched_when(
        mut self,
        searched: fn(&Path, &[String]) -> bool,
        listed: fn(&[String]) -> bool,
    ) -> Format {
        self.searched = searched;
        self.listed = listed;
        self
    }

    /// A shard format a search keeps or drops as a set: `provides` says
    /// whether a file has a column of the schema, in its first sample
    /// (`deep` false) or in any.
    pub(crate) const fn shards(mut self, provides: ProvidesFn) -> Format {
        self.provides = Some(provides);
        self
    }

    /// Files with extension `ext` belong to this format's files but are not
    /// opened alone: naming one is an error saying `why`.
    pub(crate) const fn with_companion(mut self, ext: &'static str, why: &'static str) -> Format {
        self.companion = Some((ext, why));
        self
    }

    /// Its files are listed by an `index.json` in their folder.
    pub(crate) const fn indexed(mut self, index: DatasetIndex) -> Format {
        self.index = Some(index);
        self
    }

    /// Opening one from storage reads only a small footer, so many opens
    /// can run at once.
    pub(crate) const fn footer_opens(mut self) -> Format {
        self.opens_by_footer = true;
        self
    }

    /// Whether a directory search or glob picks up `path` for a schema with
    /// these column names.
    pub(crate) fn searched(self, path: &Path, columns: &[String]) -> bool {
        (self.searched)(path, columns)
    }

    /// Whether a storage listing keeps an object of this format by its name.
    pub(crate) fn listed(self, columns: &[String]) -> bool {
        (self.listed)(columns)
    }

    /// For the shard formats a search keeps or drops as a set (`None` for
    /// the others): whether the file has a column in `columns`, in its first
    /// sample (`deep` false) or in any (`deep` true). A file that cannot be
    /// read answers true, so that its error is reported.
    pub(crate) fn provides(self, path: &Path, columns: &[String], deep: bool) -> Option<bool> {
        self.provides.map(|p| p(path, columns, deep))
    }

    /// Whether a search keeps this format's files as a set.
    pub(crate) fn is_shard_set(self) -> bool {
        self.provides.is_some()
    }

    /// Whether opening one from storage reads only a footer.
    pub(crate) fn opens_by_footer(self) -> bool {
        self.opens_by_footer
    }

    /// Opens `path` as a file of this format.
    pub(crate) fn open(self, path: &Path, opening: &Opening) -> Result<Box<dyn Source>, ReadError> {
        (self.open)(path, opening)
    }

    /// Whether the name (with the schema's hints) says this format.
    pub(crate) fn names(self, name: &FileName, hints: &Hints) -> bool {
        (self.named)(name, hints)
    }

    /// Whether the first bytes say this format.
    pub(crate) fn sniffs(self, head: &[u8]) -> bool {
        self.sniff.is_some_and(|s| s(head))
    }

    /// The files this format's dataset index in `dir` lists and `dir` lacks.
    pub(crate) fn missing_in(self, dir: &Path) -> Vec<(String, String)> {
        self.index.map(|i| (i.missing)(dir)).unwrap_or_default()
    }

    /// Why `dir` is an empty dataset of this format, if it is one.
    pub(crate) fn empty_in(self, dir: &Path) -> Option<&'static str> {
        self.index.and_then(|i| (i.empty)(dir))
    }

    /// Why a file with extension `ext` is not opened alone, if this format
    /// owns such files.
    pub(crate) fn companion_of(self, ext: &str) -> Option<&'static str> {
        self.companion
            .filter(|(e, _)| ext.eq_ignore_ascii_case(e))
            .map(|(_, why)| why)
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        self.name == other.name
    }
}

impl Eq for Format {}

impl fmt::Debug for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// Which snapshot of a lakehouse table a run reads (`--table-version`,
/// `--as-of`; `TABLE@vN` for one PATH): the latest when none is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableAt {
    /// That version.
    Version(u64),
    /// The latest version committed at or before this time (milliseconds
    /// since the Unix epoch), as `deltalake`'s `load_as_version` picks it;
    /// for Iceberg, the snapshot current then, by its snapshot log.
    AsOf(i64),
    /// An Iceberg snapshot, by id (`--snapshot-id`).
    Snapshot(u64),
}

/// What the schema tells readers about files whose bytes do not say it.
/// Each format takes what it needs: a token stream its `dtype:` and
/// `eod_id`, a COCO file its `coco_mapping:`, a YOLO file `num_classes` and
/// `kpt_shape`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Hints {
    /// The schema's column names: a directory search picks up files that
    /// only some schemas use (token `.bin` files) only for these.
    pub columns: Vec<String>,
    /// The schema's columns, for the rules a reader takes hints from.
    pub specs: Vec<ColumnSpec>,
    /// `dataset.layout`: image folders, YOLO label files.
    pub layout: Option<Layout>,
    /// `dataset.kpt_shape`: YOLO label files are pose labels.
    pub kpt_shape: Option<(usize, usize)>,
    /// Which snapshot of a lakehouse table to read (the run's
    /// `--table-version` or `--as-of`); the latest when `None`.
    pub table_at: Option<TableAt>,
}

impl Hints {
    /// The hints a schema gives.
    pub fn from_schema(schema: &Schema) -> Hints {
        Hints {
            columns: schema.columns.iter().map(|c| c.name.clone()).collect(),
            specs: schema.columns.clone(),
            layout: schema.layout,
            kpt_shape: schema.kpt_shape,
            table_at: None,
        }
    }

    /// The schema's column `column`, if it has one.
    pub fn column(&self, column: &str) -> Option<&ColumnSpec> {
        self.specs.iter().find(|c| c.name == column)
    }

    /// The `dtype:` the schema gives column `column`, if any.
    pub fn dtype(&self, column: &str) -> Option<&str> {
        self.column(column).and_then(|c| c.dtype.as_deref())
    }
}
