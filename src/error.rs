//! Typed errors of the library.
//!
//! Violations are data (they go into the report); errors are what prevents a
//! complete check. Every error carries where it happened — the schema key, the
//! data file, the column, the place inside the file — because the arrow and
//! parquet errors underneath carry none of that.

use std::fmt;
use std::path::PathBuf;

use arrow::error::ArrowError;

/// Everything that can stop preflight from checking some or all of the data.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The schema file cannot be read, is not valid YAML, or contradicts
    /// itself. `key` is the dotted path of the offending key, when known.
    #[error("{}: {}{message}", file.display(), key.as_deref().map(|k| format!("{k}: ")).unwrap_or_default())]
    Schema {
        /// The schema file.
        file: PathBuf,
        /// Dotted path of the key at fault, e.g. `columns.label.num_classes`.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },

    /// A bound refers to a model artifact that cannot be used.
    #[error("{}: {key}: {message}", file.display())]
    Reference {
        /// The artifact (config.json, tokenizer.json, ...).
        file: PathBuf,
        /// The key or bound being resolved.
        key: String,
        /// What is wrong.
        message: String,
    },

    /// A PATH argument or `dataset.files` entry matched nothing, or a
    /// directory could not be walked.
    #[error("{path}: {message}")]
    Discover {
        /// The path as the user gave it.
        path: String,
        /// What is wrong.
        message: String,
    },

    /// A data file cannot be opened, is corrupt, or could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file as the user named it.
        path: String,
        /// The cause and where inside the file.
        source: ReadError,
    },

    /// A column the schema requires is not in the file.
    #[error("{path}: column `{column}` is missing (the schema requires it; add `optional: true` if it may be absent)")]
    MissingColumn {
        /// The file as the user named it.
        path: String,
        /// The schema column.
        column: String,
    },

    /// A column holds values of a type its rule cannot check.
    #[error("{path}: column `{column}`: {message}")]
    ColumnType {
        /// The file as the user named it.
        path: String,
        /// The schema column.
        column: String,
        /// What is wrong.
        message: String,
    },
}

impl Error {
    /// The data or schema file the error belongs to, as the user named it
    /// (a URL's credentials redacted: `crate::redact`).
    pub fn file(&self) -> Option<String> {
        let file = match self {
            Error::Schema { file, .. } | Error::Reference { file, .. } => Some(file.display().to_string()),
            Error::Discover { path, .. }
            | Error::Read { path, .. }
            | Error::MissingColumn { path, .. }
            | Error::ColumnType { path, .. } => Some(path.clone()),
        };
        file.map(|f| crate::redact::url(&f).into_owned())
    }

    /// The message without the file name in front (the report shows the file
    /// in its own field), URLs in it redacted.
    pub fn message(&self) -> String {
        let message = match self {
            Error::Schema { key, message, .. } => match key {
                Some(k) => format!("{k}: {message}"),
                None => message.clone(),
            },
            Error::Reference { key, message, .. } => format!("{key}: {message}"),
            Error::Discover { message, .. } => message.clone(),
            Error::Read { source, .. } => source.to_string(),
            Error::MissingColumn { column, .. } => format!(
                "column `{column}` is missing (the schema requires it; add `optional: true` if it may be absent)"
            ),
            Error::ColumnType { column, message, .. } => format!("column `{column}`: {message}"),
        };
        crate::redact::text(&message).into_owned()
    }
}

/// Result with the library's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A failure inside one file: what went wrong and, where known, where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadError {
    /// The cause, in words.
    pub message: String,
    /// Where inside the file, e.g. "row group 3" or "member labels.npy".
    pub location: Option<String>,
}

impl ReadError {
    /// A read error with a cause and no location.
    pub fn new(message: impl Into<String>) -> Self {
        ReadError {
            message: message.into(),
            location: None,
        }
    }

    /// Adds where in the file the error happened, unless already known.
    pub fn at(mut self, location: impl Into<String>) -> Self {
        if self.location.is_none() {
            self.location = Some(location.into());
        }
        self
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(loc) => write!(f, "{loc}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ReadError {}

impl From<ArrowError> for ReadError {
    fn from(e: ArrowError) -> Self {
        ReadError::new(e.to_string())
    }
}

impl From<::parquet::errors::ParquetError> for ReadError {
    fn from(e: ::parquet::errors::ParquetError) -> Self {
        ReadError::new(e.to_string())
    }
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::new(e.to_string())
    }
}
