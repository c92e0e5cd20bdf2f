//! Command-line arguments. clap types stay in this private module: they are
//! never part of the library's API.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Catch bad training data before it reaches the GPU.
#[derive(Debug, Parser)]
#[command(name = "preflight", version, long_version = crate::LONG_VERSION, about)]
pub(super) struct Args {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Check data files against a schema. Exit status: 0 clean, 1 violations,
    /// 2 something could not be checked.
    Check(CheckArgs),
    /// Propose a schema from the data (and the model's config.json), with
    /// a comment on where each bound came from.
    Init {
        /// Data files, directories or globs to profile
        #[arg(value_name = "PATH", required = true)]
        paths: Vec<PathBuf>,
        /// A Hugging Face model folder (with config.json) to take bounds from
        #[arg(long, value_name = "DIR")]
        model: Option<PathBuf>,
        /// Where to write the schema
        #[arg(short, long, value_name = "FILE", default_value = "preflight.yaml")]
        output: PathBuf,
        /// Overwrite an existing file
        #[arg(long)]
        force: bool,
    },
    /// Merge reports written with `check --format json --partial` (by
    /// workers that each checked part of a dataset) into the report of the
    /// whole, exactly as one check over all of it. Exit status as `check`.
    Merge {
        /// Partial reports (JSON files; `-` for stdin)
        #[arg(value_name = "REPORT", required = true)]
        reports: Vec<PathBuf>,
        /// Report format
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
        /// Keep the merged partial in the JSON report, to merge it further
        #[arg(long)]
        partial: bool,
        /// Every warning (about the schema, the model or the data) is an
        /// error: exit 2
        #[arg(long)]
        strict: bool,
    },
    /// List the units of work of a check as JSON (each file, and each row
    /// group or record batch of files of at least --split-bytes), for an
    /// engine to spread over workers.
    Plan {
        /// The schema file [default: preflight.yaml]
        #[arg(short, long, value_name = "SCHEMA")]
        schema: Option<PathBuf>,
        /// Data files, directories or globs; default: the schema's dataset.files
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// Files at least this large are split into their units
        #[arg(long, value_name = "BYTES", default_value_t = 128 << 20)]
        split_bytes: u64,
        /// Which snapshot of each table to plan (as for `check`)
        #[command(flatten)]
        snapshot: SnapshotArgs,
    },
    /// Write a copy of Parquet data without the rows that break any rule,
    /// with a manifest of the rows dropped (preflight-filter.json). The
    /// input is never modified. Exit status 0, or 2 when a file was not
    /// written.
    Filter {
        /// The schema file [default: preflight.yaml]
        #[arg(short, long, value_name = "SCHEMA")]
        schema: Option<PathBuf>,
        /// Parquet files, directories or globs; default: the schema's dataset.files
        #[arg(value_name = "PATH")]
        paths: Vec<PathBuf>,
        /// The folder to write the copies into (created if missing)
        #[arg(long, value_name = "DIR", required = true)]
        out: PathBuf,
        /// Worker threads (default: all cores)
        #[arg(short, long, value_name = "N")]
        jobs: Option<usize>,
        /// Report format (the check's report, on stdout)
        #[arg(long, value_enum, default_value_t = Format::Human)]
        format: Format,
    },
    /// Check a schema alone and print it fully resolved (every reference
    /// replaced by its number, with its source). Exit status 0 or 2.
    Schema {
        /// The schema file [default: preflight.yaml]
        #[arg(value_name = "SCHEMA")]
        schema: Option<PathBuf>,
        /// Print a JSON Schema instead: of preflight.yaml (for editors;
        /// the default), or of the JSON report
        #[arg(
            long,
            value_name = "OF",
            num_args = 0..=1,
            default_missing_value = "yaml",
            conflicts_with = "schema"
        )]
        json_schema: Option<JsonSchemaOf>,
    },
}

/// Which JSON Schema `preflight schema --json-schema` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum JsonSchemaOf {
    /// preflight.yaml (schemas/json/preflight.schema.json)
    Yaml,
    /// The JSON report of `--format json` (schemas/json/report.schema.json)
    Report,
}

#[derive(Debug, clap::Args)]
pub(super) struct CheckArgs {
    /// The schema file [default: preflight.yaml]
    #[arg(short, long, value_name = "SCHEMA")]
    pub schema: Option<PathBuf>,

    /// Data files, directories (searched recursively) or globs; default: the
    /// schema's dataset.files. `-` alone: an Arrow IPC stream on stdin
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// With `-`: copy the stream to stdout, byte for byte, batch by batch
    /// as each is found valid; stop (exit 1) before the first invalid batch.
    /// The report goes to stderr.
    #[arg(long)]
    pub pass_through: bool,

    /// Report format (json, github, junit: one document on stdout, nothing
    /// else there)
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,

    /// Worker threads [default: all cores]
    #[arg(short, long, value_name = "N")]
    pub jobs: Option<usize>,

    /// Examples kept per check
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub max_examples: usize,

    /// Decode every value even where file statistics prove a column valid
    #[arg(long)]
    pub full_scan: bool,

    /// With --format json: add the mergeable partial result (`partial` key)
    /// for `preflight merge`
    #[arg(long)]
    pub partial: bool,

    /// Never draw a progress bar
    #[arg(long)]
    pub no_progress: bool,
    /// Also write every violation (uncapped) to FILE: .jsonl, .csv or
    /// .parquet, in (file, row, column, rule) order, written atomically
    #[arg(long, value_name = "FILE")]
    pub violations_out: Option<PathBuf>,

    /// Keep each file's result in DIR and reuse it while the file and the
    /// check are unchanged (see the docs, "Command line": "Repeated gates")
    #[arg(long, value_name = "DIR")]
    pub cache: Option<PathBuf>,

    /// Every warning (about the schema, the model or the data) is an
    /// error: exit 2
    #[arg(long)]
    pub strict: bool,

    /// Which snapshot of each lakehouse table to read
    #[command(flatten)]
    pub snapshot: SnapshotArgs,

    /// No schema: check the conventional columns (input_ids,
    /// token_type_ids, position_ids, attention_mask, labels) against the
    /// bounds of this Hugging Face model folder, as `init --model` writes them
    #[arg(long, value_name = "DIR")]
    pub model: Option<PathBuf>,

    /// Print the schema the check uses (resolved) on stderr
    #[arg(long)]
    pub print_schema: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(super) enum Format {
    /// Diagnostics for people
    Human,
    /// One JSON document (its keys are described in the docs, "JSON report")
    Json,
    /// GitHub Actions annotations naming file and row
    Github,
    /// JUnit XML, one test case per check
    Junit,
}

/// Which snapshot of each lakehouse table a run reads: the latest unless
/// one of these picks another.
#[derive(Debug, Clone, Default, clap::Args)]
pub(super) struct SnapshotArgs {
    /// Read that version of each table: Delta's table version, or the
    /// version of an Iceberg table's metadata file (TABLE@vN for one PATH)
    #[arg(long, value_name = "N")]
    pub table_version: Option<u64>,

    /// Read each table as of TIME: the latest Delta version committed then
    /// or before, the Iceberg snapshot current then (RFC 3339, e.g.
    /// 2026-12-06T07:00:00Z, or a date)
    #[arg(long, value_name = "TIME", conflicts_with = "table_version")]
    pub as_of: Option<String>,

    /// Read this snapshot of each Iceberg table
    #[arg(long, value_name = "ID", conflicts_with_all = ["table_version", "as_of"])]
    pub snapshot_id: Option<u64>,
}

impl SnapshotArgs {
    /// The snapshot picked, if any; an error for a TIME that is none.
    pub(super) fn table_at(&self) -> Result<Option<crate::TableAt>, String> {
        Ok(match (&self.as_of, self.table_version, self.snapshot_id) {
            (Some(t), _, _) => Some(crate::TableAt::AsOf(super::check::as_of(t)?)),
            (None, Some(v), _) => Some(crate::TableAt::Version(v)),
            (None, None, Some(id)) => Some(crate::TableAt::Snapshot(id)),
            (None, None, None) => None,
        })
    }
}
