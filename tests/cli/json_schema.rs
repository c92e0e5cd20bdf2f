//! The committed JSON Schemas (schemas/json, generated from the Rust types
//! by the library's own tests) hold for what users write and what preflight
//! prints: every schema in `schemas/`, `sample_data/` and the docs against
//! `preflight.schema.json`, and every JSON report the tests produce against
//! `report.schema.json` (`Env::run` validates each one it sees, so every
//! test of a report format is also a test of the report's schema).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

use crate::util::Env;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn load(rel: &str) -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let schema: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{rel}: {e}"));
    jsonschema::validator_for(&schema).unwrap_or_else(|e| panic!("{rel} is not a valid JSON Schema: {e}"))
}

fn schema_validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| load("schemas/json/preflight.schema.json"))
}

fn report_validator() -> &'static jsonschema::Validator {
    static V: OnceLock<jsonschema::Validator> = OnceLock::new();
    V.get_or_init(|| load("schemas/json/report.schema.json"))
}

fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

/// Panics unless `stdout` of `preflight ARGS` is a report the report's
/// JSON Schema accepts; outputs that are not JSON reports are skipped.
pub(crate) fn check_report_output(args: &[&str], stdout: &str) {
    let is_report_command = matches!(args.first(), Some(&("check" | "merge" | "filter")));
    let json = args.windows(2).any(|w| w == ["--format", "json"]) || args.contains(&"--format=json");
    if !is_report_command || !json || args.contains(&"--pass-through") || stdout.trim().is_empty() {
        return;
    }
    let doc: Value = match serde_json::from_str(stdout) {
        Ok(d) => d,
        Err(_) => return, // the test that ran it says what it expected
    };
    let errs = errors(report_validator(), &doc);
    assert!(
        errs.is_empty(),
        "the report of {args:?} breaks schemas/json/report.schema.json:\n{}\n{stdout}",
        errs.join("\n")
    );
}

fn yaml(text: &str, what: &str) -> Value {
    serde_saphyr::from_str::<Value>(text).unwrap_or_else(|e| panic!("{what}: not YAML: {e}"))
}

/// The ```yaml blocks of a Markdown page that are whole schemas (a
/// `columns` key at the top); fragments and other configs are not.
fn doc_schemas(page: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(page).unwrap();
    let mut out = Vec::new();
    let mut block: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        match &mut block {
            None if t.starts_with("```yaml") => block = Some((i + 1, String::new())),
            Some((start, body)) if t.starts_with("```") => {
                if body.lines().any(|l| l.starts_with("columns:")) {
                    out.push((format!("{}:{start}", page.display()), std::mem::take(body)));
                }
                block = None;
            }
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    out
}

fn files_under(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            files_under(&p, ext, out);
        } else if p.extension().is_some_and(|e| e == ext) {
            out.push(p);
        }
    }
}

#[test]
fn every_schema_in_the_repository_and_docs_validates() {
    let mut schemas: Vec<(String, String)> = Vec::new();
    let mut yamls = Vec::new();
    files_under(&root().join("schemas"), "yaml", &mut yamls);
    files_under(&root().join("sample_data"), "yaml", &mut yamls);
    yamls.sort();
    for p in &yamls {
        schemas.push((p.display().to_string(), std::fs::read_to_string(p).unwrap()));
    }
    let mut pages = vec![root().join("README.md")];
    files_under(&root().join("docs/src"), "md", &mut pages);
    pages.sort();
    for page in &pages {
        schemas.extend(doc_schemas(page));
    }
    assert!(yamls.len() >= 12, "{yamls:?}");
    assert!(
        schemas.len() >= yamls.len() + 9,
        "too few schemas found in the docs: {}",
        schemas.len()
    );
    let mut bad = Vec::new();
    for (what, text) in &schemas {
        let errs = errors(schema_validator(), &yaml(text, what));
        if !errs.is_empty() {
            bad.push(format!("{what}:\n  {}", errs.join("\n  ")));
        }
    }
    assert!(
        bad.is_empty(),
        "schemas that break preflight.schema.json:\n{}",
        bad.join("\n")
    );
}

/// The JSON Schema refuses what the parser refuses by key or type, so an
/// editor flags a typo before `preflight` does.
#[test]
fn the_schema_schema_refuses_typos_and_wrong_types() {
    let good = "version: 1\ncolumns:\n  label: {kind: class, num_classes: 2}\n";
    assert!(errors(schema_validator(), &yaml(good, "good")).is_empty());
    for bad in [
        "columns:\n  label: {kind: class, num_clases: 2}\n",  // misspelt key
        "columns:\n  label: {kind: klass, num_classes: 2}\n", // unknown kind
        "columns:\n  label: {kind: class, num_classes: two}\n", // not a number
        "columns:\n  ids: {kind: index, size: {hf_config: c.json, keys: v}}\n", // reference key
        "version: 1\n",                                       // no columns
        "columns: {}\ndataset: {layout: coco}\n",             // unknown layout
    ] {
        assert!(
            !errors(schema_validator(), &yaml(bad, bad)).is_empty(),
            "accepted: {bad}"
        );
        let env = Env::new();
        env.write("s.yaml", bad);
        let r = env.run(&["schema", "s.yaml"]);
        // `num_classes: two` etc. are errors of preflight too (version-only and
        // empty-columns schemas are refused by the parser or by validation).
        assert_eq!(
            r.code, 2,
            "preflight accepted what the JSON Schema refuses: {bad}\n{}",
            r.stdout
        );
    }
}

/// What `init` writes validates, and points at the JSON Schema it wrote.
#[test]
fn init_writes_a_valid_schema() {
    let env = Env::new();
    let data = root().join("sample_data/clean");
    let r = env.run(&["init", data.to_str().unwrap(), "-o", "p.yaml"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let text = std::fs::read_to_string(env.path("p.yaml")).unwrap();
    let errs = errors(schema_validator(), &yaml(&text, "init"));
    assert!(errs.is_empty(), "{errs:?}\n{text}");
    // The first line points the editor at the JSON Schema init wrote
    // beside it: the committed one, byte for byte.
    assert_eq!(
        text.lines().next(),
        Some("# yaml-language-server: $schema=./preflight.schema.json"),
        "{text}"
    );
    let committed = std::fs::read_to_string(root().join("schemas/json/preflight.schema.json")).unwrap();
    let beside = std::fs::read_to_string(env.path("preflight.schema.json")).unwrap();
    assert!(beside == committed, "init wrote another JSON Schema");
}

/// A `preflight.schema.json` that is not this version's is left alone,
/// with a warning, unless `--force`; in a folder given with `-o`, the file
/// goes beside the schema.
#[test]
fn init_keeps_another_json_schema_unless_forced() {
    let env = Env::new();
    let data = root().join("sample_data/clean");
    let data = data.to_str().unwrap();
    std::fs::create_dir_all(env.path("conf")).unwrap();
    env.write("conf/preflight.schema.json", "{}\n");
    let r = env.run(&["init", data, "-o", "conf/p.yaml"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("warning: conf/preflight.schema.json differs from this version's JSON Schema"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(env.path("conf/preflight.schema.json")).unwrap(),
        "{}\n"
    );
    assert!(!env.path("preflight.schema.json").exists());
    let r = env.run(&["init", data, "-o", "conf/p.yaml", "--force"]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("warning"), "{}", r.stderr);
    let committed = std::fs::read_to_string(root().join("schemas/json/preflight.schema.json")).unwrap();
    assert!(std::fs::read_to_string(env.path("conf/preflight.schema.json")).unwrap() == committed);
}

/// `preflight schema --json-schema` prints the committed files byte for
/// byte: of preflight.yaml by default (or `yaml`), of the report with
/// `report`; a schema file beside it, or another name, is a usage error.
#[test]
fn schema_json_schema_prints_the_committed_files() {
    let env = Env::new();
    let committed = |rel: &str| std::fs::read_to_string(root().join(rel)).unwrap();
    for (args, rel) in [
        (&["schema", "--json-schema"][..], "schemas/json/preflight.schema.json"),
        (
            &["schema", "--json-schema", "yaml"][..],
            "schemas/json/preflight.schema.json",
        ),
        (
            &["schema", "--json-schema=report"][..],
            "schemas/json/report.schema.json",
        ),
        (
            &["schema", "--json-schema", "report"][..],
            "schemas/json/report.schema.json",
        ),
    ] {
        let r = env.run(args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert!(r.stderr.is_empty(), "{args:?}: {}", r.stderr);
        assert!(r.stdout == committed(rel), "{args:?} printed other than {rel}");
    }
    // The printed schema is a JSON Schema that judges a saved preflight.yaml.
    let printed = env.run(&["schema", "--json-schema"]).stdout;
    let v = jsonschema::validator_for(&serde_json::from_str(&printed).unwrap()).unwrap();
    let good = "# yaml-language-server: $schema=./preflight.schema.json\nversion: 1\ncolumns:\n  label: {kind: class, num_classes: 2}\n";
    assert!(errors(&v, &yaml(good, "good")).is_empty());
    assert!(!errors(&v, &yaml("columns:\n  label: {kind: class, num_clases: 2}\n", "bad")).is_empty());
    env.write("s.yaml", good);
    assert_eq!(env.run(&["schema", "s.yaml"]).code, 0);
    for args in [
        &["schema", "s.yaml", "--json-schema"][..],
        &["schema", "--json-schema", "s.yaml"][..],
        &["schema", "--json-schema", "html"][..],
    ] {
        let r = env.run(args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stdout);
        assert!(r.stdout.is_empty(), "{args:?}: {}", r.stdout);
    }
}

/// Reports of every shape validate: violations with hints, a clean run,
/// errors, warnings and sources, `--partial` and `merge`, pixel examples.
#[test]
fn reports_of_every_shape_validate() {
    let env = Env::new();
    let schema = root().join("sample_data/preflight.yaml");
    let schema = schema.to_str().unwrap();
    let bad = root().join("sample_data/bad");
    let clean = root().join("sample_data/clean");
    let (bad, clean) = (bad.to_str().unwrap(), clean.to_str().unwrap());
    // Env::run validates each report; the codes say each shape was reached.
    assert_eq!(env.run(&["check", "--format", "json", "-s", schema, bad]).code, 1);
    assert_eq!(env.run(&["check", "--format", "json", "-s", schema, clean]).code, 0);
    let partial = env.run(&["check", "--format", "json", "--partial", "-s", schema, bad]);
    assert_eq!(partial.code, 1);
    assert!(partial.json()["partial"].is_object());
    env.write("a.json", &partial.stdout);
    let merged = env.run(&["merge", "--format", "json", "a.json"]);
    assert_eq!(merged.code, 1, "{}", merged.stderr);
    // An error (a file that is not Parquet) and a missing column.
    env.write("broken/x.parquet", "not parquet");
    let r = env.run(&["check", "--format", "json", "-s", schema, "broken/x.parquet"]);
    assert_eq!(r.code, 2);
    assert!(!r.json()["errors"].as_array().unwrap().is_empty());
    // Sources and a warning: a bound read from a config.json whose tokenizer
    // has more ids than its vocab_size.
    env.write("model/config.json", r#"{"vocab_size": 4}"#);
    env.write(
        "model/tokenizer.json",
        r#"{"model": {"vocab": {"a": 0, "b": 1, "c": 2, "d": 3}}, "added_tokens": [{"id": 4, "content": "<x>"}]}"#,
    );
    env.write(
        "t.yaml",
        "columns:\n  ids: {kind: index, size: {hf_config: model/config.json, key: vocab_size}}\n",
    );
    env.write("t.jsonl", "{\"ids\": [0, 3]}\n{\"ids\": [4]}\n");
    let r = env.run(&["check", "--format", "json", "-s", "t.yaml", "t.jsonl"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let doc = r.json();
    assert!(doc["checks"][0]["sources"].is_array(), "{doc}");
    assert!(doc["warnings"].is_array(), "{doc}");
    // Pixels: x and y in examples, pixel_counts.
    let mut png = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut png, 2, 2);
        enc.set_color(png::ColorType::Grayscale);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().unwrap();
        w.write_image_data(&[0, 1, 7, 255]).unwrap();
    }
    std::fs::create_dir_all(env.path("masks")).unwrap();
    std::fs::write(env.path("masks/a.png"), &png).unwrap();
    env.write(
        "m.yaml",
        "columns:\n  pixels: {kind: class, num_classes: 2, ignore_index: 255}\n",
    );
    let r = env.run(&["check", "--format", "json", "-s", "m.yaml", "masks"]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["checks"][0]["examples"][0]["x"], 0, "{doc}");
    assert!(doc["checks"][0]["pixel_counts"].is_array(), "{doc}");
}

/// The validation in `Env::run` can fail: a report missing a key is refused.
#[test]
fn a_report_missing_a_key_is_refused() {
    let env = Env::new();
    let schema = root().join("sample_data/preflight.yaml");
    let clean = root().join("sample_data/clean");
    let r = env.run(&[
        "check",
        "--format",
        "json",
        "-s",
        schema.to_str().unwrap(),
        clean.to_str().unwrap(),
    ]);
    let mut doc = r.json();
    assert!(errors(report_validator(), &doc).is_empty());
    doc.as_object_mut().unwrap().remove("rows");
    assert!(!errors(report_validator(), &doc).is_empty());
    doc["rows"] = Value::from("800");
    assert!(!errors(report_validator(), &doc).is_empty());
}
