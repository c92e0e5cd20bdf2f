//! `init --model` keeps every bound the model defines, whatever the data
//! holds, and says on stderr where the data already breaks one; `check`
//! then reports exactly those rows, each with the hint of its bound's
//! source. The model folders' config.json files are written by
//! `transformers`' own `save_pretrained` (tiny BERT, RoBERTa and GPT-2
//! configs; the MiniLM folder re-saved with a 3-class head), and the
//! expected rows are computed in Python from the config as `transformers`
//! loads it back (`AutoConfig.from_pretrained`), by the rule each model's
//! forward applies (RoBERTa's positions as `create_position_ids_from_input_ids`
//! makes them).

use serde_json::Value;

use crate::references::{TOKENIZE, model};
use crate::util::{Env, check, hits};

/// Python: the expected violations of each (column, rule) of `table`
/// against the model folder `name`, written to `{name}.expect.json`.
const ORACLE: &str = r#"
from transformers import AutoConfig, BertConfig, RobertaConfig, GPT2Config
def elements(rows, bound):
    bad = [(i, sum(1 for x in r if x >= bound)) for i, r in enumerate(rows)]
    return {'violations': sum(n for _, n in bad), 'rows': [i for i, n in bad if n]}
def positions_past(rows, cfg):
    # The position each token takes, as the model's embeddings compute it.
    bad = []
    for i, r in enumerate(rows):
        if cfg.model_type == 'roberta':
            m = (np.array(r) != cfg.pad_token_id).astype(int)
            pos = np.cumsum(m) * m + cfg.pad_token_id
            top = int(pos.max())
        else:
            top = len(r) - 1
        if top >= cfg.max_position_embeddings:
            bad.append(i)
    return {'violations': len(bad), 'rows': bad}
def expect(name, t, labels=None):
    cfg = AutoConfig.from_pretrained(name)
    out = {'input_ids/index': elements(t['input_ids'], cfg.vocab_size),
           'input_ids/max_length': positions_past(t['input_ids'], cfg)}
    if 'token_type_ids' in t:
        types = cfg.vocab_size if cfg.model_type == 'gpt2' else cfg.type_vocab_size
        out['token_type_ids/index'] = elements(t['token_type_ids'], types)
    if 'position_ids' in t:
        out['position_ids/index'] = elements(t['position_ids'], cfg.max_position_embeddings)
    if labels == 'head':
        out['label/class'] = elements([[v] for v in t['label']], cfg.num_labels)
    if labels == 'vocab':
        out['labels/class'] = elements(t['labels'], cfg.vocab_size)
    out = {k: v for k, v in out.items() if v['violations']}
    json.dump(out, open(f'{name}.expect.json', 'w'))
def write(name, t):
    types = {'label': pa.int64()}
    pq.write_table(pa.table({k: pa.array(v, types.get(k, pa.list_(pa.int64()))) for k, v in t.items()}), f'{name}.parquet')
"#;

/// Python: tiny BERT, RoBERTa and GPT-2 folders and data that reach each
/// of their bounds at known rows.
const TINY: &str = r#"
rng = np.random.default_rng(7)
def ids(n, lo=5):
    return [int(x) for x in rng.integers(lo, 1000, n)]
tiny = dict(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37)

# BERT: 1000 ids, 16 positions, 2 token types, a 3-class head.
BertConfig(vocab_size=1000, max_position_embeddings=16, type_vocab_size=2, num_labels=3, **tiny).save_pretrained('bert')
cfg = AutoConfig.from_pretrained('bert')
assert (cfg.vocab_size, cfg.max_position_embeddings, cfg.type_vocab_size, cfg.num_labels) == (1000, 16, 2, 3)
lens = [6, 9, 7, 12, 8, 10, cfg.max_position_embeddings + 1, 5]
t = {'input_ids': [ids(n) for n in lens],
     'token_type_ids': [[0] * (n // 2) + [1] * (n - n // 2) for n in lens],
     'position_ids': [list(range(n)) for n in lens],
     'attention_mask': [[1] * n for n in lens],
     'label': [0, 1, 2, 0, 1, 2, 0, cfg.num_labels]}
t['input_ids'][2][3] = cfg.vocab_size
t['token_type_ids'][4][-1] = cfg.type_vocab_size
write('bert', t)
expect('bert', t, 'head')

# RoBERTa: positions start after pad_token_id 1 and pads take none, so 16
# non-pad tokens fit 18 positions; type_vocab_size 1 as its checkpoints.
RobertaConfig(vocab_size=1000, max_position_embeddings=18, type_vocab_size=1, pad_token_id=1, num_labels=3, **tiny).save_pretrained('roberta')
cfg = AutoConfig.from_pretrained('roberta')
assert (cfg.vocab_size, cfg.max_position_embeddings, cfg.type_vocab_size, cfg.pad_token_id, cfg.num_labels) == (1000, 18, 1, 1, 3)
lens = [6, 9, 7, 12, 8, 16, 17, 5]
rows = [ids(n, 3) for n in lens]
rows[5] += [cfg.pad_token_id] * 4
t = {'input_ids': rows,
     'token_type_ids': [[0] * len(r) for r in rows],
     'attention_mask': [[int(x != cfg.pad_token_id) for x in r] for r in rows],
     'label': [0, 1, 2, 0, 1, 2, 0, cfg.num_labels]}
t['input_ids'][2][3] = cfg.vocab_size
t['token_type_ids'][4] = [0] * 4 + [1] * 4
write('roberta', t)
expect('roberta', t, 'head')

# GPT-2: 16 positions (n_positions), token types through the word
# embedding, labels a copy of the ids (causal LM).
GPT2Config(vocab_size=1000, n_positions=16, n_embd=32, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0).save_pretrained('gpt2')
cfg = AutoConfig.from_pretrained('gpt2')
assert (cfg.vocab_size, cfg.max_position_embeddings) == (1000, 16)
lens = [6, 9, 7, 12, 8, 10, cfg.max_position_embeddings + 1, 5]
t = {'input_ids': [ids(n, 0) for n in lens], 'attention_mask': [[1] * n for n in lens]}
t['token_type_ids'] = [[0] * n for n in lens]
t['input_ids'][2][3] = cfg.vocab_size
t['labels'] = [list(r) for r in t['input_ids']]
write('gpt2', t)
expect('gpt2', t, 'vocab')
"#;

/// MiniLM (the BERT the reference tests read) with a 3-class head, and
/// sentence pairs encoded by its real tokenizer.
const MINILM: &str = r#"
cfg = AutoConfig.from_pretrained('model', num_labels=3)
cfg.save_pretrained('model')
cfg = AutoConfig.from_pretrained('model')
assert (cfg.vocab_size, cfg.max_position_embeddings, cfg.type_vocab_size, cfg.num_labels) == (30522, 512, 2, 3)
enc = [Row(tok.encode(SENTENCES[i], SENTENCES[i + 1])) for i in range(8)]
enc[2].ids[1] = cfg.vocab_size
# Row 4: a third segment, typed 2, after the pair.
extra = tok.encode(SENTENCES[10], add_special_tokens=False).ids + [tok.token_to_id('[SEP]')]
enc[4].ids += extra
enc[4].type_ids += [2] * len(extra)
enc[4].attention_mask += [1] * len(extra)
# Row 5: one token longer than the position table.
tok.enable_truncation(max_length=cfg.max_position_embeddings + 1)
enc[5] = Row(tok.encode(LONG))
tok.no_truncation()
assert len(enc[5].ids) == 513
t = {'input_ids': [r.ids for r in enc], 'token_type_ids': [r.type_ids for r in enc],
     'attention_mask': [r.attention_mask for r in enc], 'label': [0, 1, 2, 0, 1, 2, 0, cfg.num_labels]}
write('model', t)
expect('model', t, 'head')
"#;

/// What `init --model` must say for a model folder, line by line.
fn warned(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.starts_with("warning: ")).collect()
}

/// Runs init with the model, asserts the references and warnings, then
/// checks the data with the written schema: exactly the expected rows,
/// nothing else, and the hint of each check. Returns the report.
fn init_then_check(env: &Env, name: &str, refs: &[&str], warnings: &[String]) -> Value {
    let schema = format!("{name}.yaml");
    let data = format!("{name}.parquet");
    let out = env.run(&["init", &data, "--model", name, "-o", &schema]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = std::fs::read_to_string(env.path(&schema)).unwrap();
    for r in refs {
        assert!(text.contains(r), "{name}: `{r}` missing from:\n{text}");
    }
    let want: Vec<String> = warnings.iter().map(|w| format!("warning: {w}")).collect();
    assert_eq!(warned(&out.stderr), want, "{name}:\n{}", out.stderr);
    let report = env.check_json(&["-s", &schema, &data, "--max-examples", "1000"], 1);
    let expect: Value =
        serde_json::from_str(&std::fs::read_to_string(env.path(&format!("{name}.expect.json"))).unwrap()).unwrap();
    let expect = expect.as_object().unwrap();
    for c in report["checks"].as_array().unwrap() {
        let key = format!("{}/{}", c["column"].as_str().unwrap(), c["rule"].as_str().unwrap());
        let (n, examples) = hits(&report, c["column"].as_str().unwrap(), c["rule"].as_str().unwrap());
        match expect.get(&key) {
            None => assert_eq!(n, 0, "{name}: {key} reports rows the model accepts: {c:#}"),
            Some(e) => {
                assert_eq!(n, e["violations"].as_u64().unwrap(), "{name}: {key}: {c:#}");
                let mut rows: Vec<u64> = examples.iter().map(|x| x.1).collect();
                rows.dedup();
                let want: Vec<u64> = e["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_u64().unwrap())
                    .collect();
                assert_eq!(rows, want, "{name}: {key}");
            }
        }
    }
    for key in expect.keys() {
        let (col, rule) = key.split_once('/').unwrap();
        check(&report, col, rule);
    }
    report
}

fn hint(report: &Value, column: &str, rule: &str) -> String {
    check(report, column, rule)["hint"].as_str().unwrap_or("").to_string()
}

/// The hint starts with `want`, and blames added tokens only for ids.
fn has_hint(report: &Value, column: &str, rule: &str, want: &str) {
    let h = hint(report, column, rule);
    assert!(
        h.starts_with(want),
        "{column}/{rule}: {h:?} does not start with {want:?}"
    );
    let vocab = h.contains("resize_token_embeddings");
    let ids = rule == "index" && column == "input_ids" || column == "labels";
    assert_eq!(vocab, ids, "{column}/{rule}: {h}");
}

const VOCAB_HINT: &str =
    "just above the size 1000: tokens were added to the tokenizer without resizing the embedding matrix";

#[test]
fn init_keeps_each_model_bound_the_data_breaks_and_check_names_its_cause() {
    let env = Env::new();
    env.python(&format!("{ORACLE}\n{TINY}"));
    let report = |what: &str| format!("`preflight check` will report them{what}");
    let bert = init_then_check(
        &env,
        "bert",
        &[
            "size: {hf_config: bert, key: vocab_size}",
            "max_length: {hf_config: bert, key: max_position_embeddings}",
            "size: {hf_config: bert, key: type_vocab_size}",
            "position_ids:\n    kind: index\n    size: {hf_config: bert, key: max_position_embeddings}",
            "num_classes: {hf_config: bert, key: num_labels}",
        ],
        &[
            format!(
                "column `input_ids` reaches 1000 but the model's embedding has 1000 rows (vocab_size): {}",
                report("")
            ),
            format!(
                "column `input_ids` has rows of 17 tokens but the model takes 16 (max_position_embeddings): {}",
                report("")
            ),
            format!(
                "column `token_type_ids` reaches 2 but the model has 2 token types (type_vocab_size): {}",
                report("")
            ),
            format!(
                "column `position_ids` reaches 16 but the model's position table has 16 rows (max_position_embeddings): {}",
                report("")
            ),
            format!(
                "column `label` reaches 3 but the model's head has 3 classes (num_labels): {}",
                report("")
            ),
        ],
    );
    has_hint(&bert, "input_ids", "index", &format!("id 1000 is {VOCAB_HINT}"));
    has_hint(
        &bert,
        "input_ids",
        "max_length",
        "rows longer than max_length 16 (the model's position limit, from max_position_embeddings): truncation is missing (tokenizer(..., truncation=True, max_length=16))",
    );
    has_hint(
        &bert,
        "token_type_ids",
        "index",
        "token types reach 2 but type_vocab_size is 2: the model has 2 segment types (BERT: 0 for the first text of a pair, 1 for the second), and more segments than that do not fit",
    );
    has_hint(
        &bert,
        "position_ids",
        "index",
        "positions reach 16 but max_position_embeddings is 16: the model's position table has 16 rows, so these rows are longer than the model takes: truncate them",
    );
    has_hint(
        &bert,
        "label",
        "class",
        "labels reach 3 but the model's head has 3 classes (num_labels: len(id2label)): the data has more classes than the head was built for",
    );
    // A merge of partial reports rebuilds the same hints from the sources.
    let full = env.run(&["check", "-s", "bert.yaml", "--format", "json", "bert.parquet"]);
    let part = env.run(&[
        "check",
        "-s",
        "bert.yaml",
        "--format",
        "json",
        "--partial",
        "bert.parquet",
    ]);
    env.write("bert.partial.json", &part.stdout);
    let merged = env.run(&["merge", "bert.partial.json", "bert.partial.json", "--format", "json"]);
    let drop_counts = |s: &str| {
        let mut v: Value = serde_json::from_str(s).unwrap();
        for c in v["checks"].as_array_mut().unwrap() {
            c.as_object_mut()
                .unwrap()
                .retain(|k, _| k == "column" || k == "rule" || k == "hint");
        }
        v["checks"].clone()
    };
    assert_eq!(drop_counts(&merged.stdout), drop_counts(&full.stdout));

    let roberta = init_then_check(
        &env,
        "roberta",
        &[
            "size: {hf_config: roberta, key: vocab_size}",
            "max_length: {hf_config: roberta, key: max_position_embeddings, offset: -2}",
            "pad_id: 1",
            "size: {hf_config: roberta, key: type_vocab_size}",
            "num_classes: {hf_config: roberta, key: num_labels}",
        ],
        &[
            format!(
                "column `input_ids` reaches 1000 but the model's embedding has 1000 rows (vocab_size): {}",
                report("")
            ),
            format!(
                "column `input_ids` has rows of 17 non-pad tokens but the model takes 16 (max_position_embeddings - pad_token_id - 1): {}",
                report("")
            ),
            format!(
                "column `token_type_ids` reaches 1 but the model has 1 token type (type_vocab_size): {}",
                report("")
            ),
            format!(
                "column `label` reaches 3 but the model's head has 3 classes (num_labels): {}",
                report("")
            ),
        ],
    );
    has_hint(&roberta, "input_ids", "index", &format!("id 1000 is {VOCAB_HINT}"));
    has_hint(
        &roberta,
        "input_ids",
        "max_length",
        "rows longer than max_length 16 (the model's position limit, from max_position_embeddings; pads do not count): truncation is missing",
    );
    has_hint(
        &roberta,
        "token_type_ids",
        "index",
        "token types reach 1 but type_vocab_size is 1: the model has a single segment type, as RoBERTa-family checkpoints (RoBERTa, XLM-R, CamemBERT) do; pass no token_type_ids, or all zeros",
    );
    has_hint(
        &roberta,
        "label",
        "class",
        "labels reach 3 but the model's head has 3 classes",
    );

    let gpt2 = init_then_check(
        &env,
        "gpt2",
        &[
            "size: {hf_config: gpt2, key: vocab_size}",
            "max_length: {hf_config: gpt2, key: n_positions}",
            "size: {hf_config: gpt2, key: vocab_size}  # GPT-2 looks token types up in its word embedding",
            "num_classes: {hf_config: gpt2, key: vocab_size}  # token labels index the vocabulary",
        ],
        &[
            format!(
                "column `input_ids` reaches 1000 but the model's embedding has 1000 rows (vocab_size): {}",
                report("")
            ),
            format!(
                "column `input_ids` has rows of 17 tokens but the model takes 16 (n_positions): {}",
                report("")
            ),
            format!(
                "column `labels` reaches 1000 but the model's vocabulary has 1000 ids (vocab_size): {}",
                report("")
            ),
        ],
    );
    has_hint(&gpt2, "input_ids", "index", &format!("id 1000 is {VOCAB_HINT}"));
    has_hint(
        &gpt2,
        "input_ids",
        "max_length",
        "rows longer than max_length 16 (the model's position limit, from n_positions): truncation is missing",
    );
    has_hint(
        &gpt2,
        "labels",
        "class",
        "label 1000 is just above the vocab_size 1000: tokens were added to the tokenizer without resizing",
    );

    // Without a model, the bounds are the data's (and nothing is warned).
    let out = env.run(&["init", "bert.parquet", "-o", "observed.yaml"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(warned(&out.stderr).is_empty(), "{}", out.stderr);
    let text = std::fs::read_to_string(env.path("observed.yaml")).unwrap();
    for want in [
        "size: 1001  # observed largest id + 1",
        "size: 3  # observed largest type + 1",
        "num_classes: 4  # observed values 0..=3",
    ] {
        assert!(text.contains(want), "{want} missing from:\n{text}");
    }
    env.check_json(&["-s", "observed.yaml", "bert.parquet"], 0);
}

#[test]
fn init_keeps_minilm_bounds_on_real_tokenized_pairs() {
    let env = Env::new();
    model(&env, "model");
    env.python(&format!("{ORACLE}\n{TOKENIZE}\n{MINILM}"));
    let report = "`preflight check` will report them";
    let r = init_then_check(
        &env,
        "model",
        &[
            "size: {hf_config: model, key: vocab_size}",
            "max_length: {hf_config: model, key: max_position_embeddings}",
            "size: {hf_config: model, key: type_vocab_size}",
            "num_classes: {hf_config: model, key: num_labels}",
        ],
        &[
            format!("column `input_ids` reaches 30522 but the model's embedding has 30522 rows (vocab_size): {report}"),
            format!(
                "column `input_ids` has rows of 513 tokens but the model takes 512 (max_position_embeddings): {report}"
            ),
            format!("column `token_type_ids` reaches 2 but the model has 2 token types (type_vocab_size): {report}"),
            format!("column `label` reaches 3 but the model's head has 3 classes (num_labels): {report}"),
        ],
    );
    has_hint(
        &r,
        "input_ids",
        "index",
        "id 30522 is just above the size 30522: tokens were added to the tokenizer without resizing the embedding matrix",
    );
    has_hint(
        &r,
        "input_ids",
        "max_length",
        "rows longer than max_length 512 (the model's position limit, from max_position_embeddings): truncation is missing",
    );
    has_hint(
        &r,
        "token_type_ids",
        "index",
        "token types reach 2 but type_vocab_size is 2: the model has 2 segment types",
    );
    has_hint(
        &r,
        "label",
        "class",
        "labels reach 3 but the model's head has 3 classes (num_labels: len(id2label))",
    );
}

/// `check --model DIR` needs no schema: it judges the conventional columns
/// by the bounds `init --model` writes, so its report is the report of
/// `init --model` then `check -s`, violation for violation (judged by
/// transformers' own config above); other columns are not judged.
#[test]
fn check_model_gates_without_a_schema() {
    let env = Env::new();
    model(&env, "model");
    env.python(&format!(
        "{ORACLE}\n{TOKENIZE}\n{MINILM}\n\
         t = pq.read_table('model.parquet')\n\
         pq.write_table(t.append_column('score', pa.array([9.5] * t.num_rows)), 'scored.parquet')\n\
         pq.write_table(pa.table({{'text': ['a', 'b']}}), 'text.parquet')\n"
    ));
    let init = env.run(&["init", "model.parquet", "--model", "model", "-o", "model.yaml"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    let r = env.check_json(&["-s", "model.yaml", "model.parquet", "--max-examples", "1000"], 1);
    assert_eq!(r["violations"], 14, "{r:#}");
    let by_model = env.run(&[
        "check",
        "--model",
        "model",
        "model.parquet",
        "--format",
        "json",
        "--max-examples",
        "1000",
    ]);
    assert_eq!(by_model.code, 1, "{}", by_model.stderr);
    assert_eq!(serde_json::from_str::<Value>(&by_model.stdout).unwrap(), r);
    // A column no model takes by name is not judged.
    let scored = env.check_json(&["--model", "model", "scored.parquet", "--max-examples", "1000"], 1);
    assert_eq!(
        scored["checks"].to_string().replace("scored.parquet", "model.parquet"),
        r["checks"].to_string()
    );
    // --print-schema shows the schema used, on stderr.
    let shown = env.run(&[
        "check",
        "--model",
        "model",
        "scored.parquet",
        "--print-schema",
        "--format",
        "json",
    ]);
    assert!(
        shown
            .stderr
            .contains("size: 30522  # from model/config.json: vocab_size"),
        "{}",
        shown.stderr
    );
    assert!(!shown.stderr.contains("score"), "{}", shown.stderr);
    serde_json::from_str::<Value>(&shown.stdout).expect("stdout stays one JSON document");
    // Usage errors: a schema as well, no PATH, no conventional column.
    env.write("s.yaml", "columns:\n  label: {kind: class, num_classes: 3}\n");
    for (args, says) in [
        (
            &["-s", "s.yaml", "--model", "model", "model.parquet"][..],
            "--schema and --model: give one",
        ),
        (
            &["--model", "model"],
            "--model reads the columns from the data: name the PATHs",
        ),
        (
            &["--model", "model", "text.parquet"],
            "the data has none of the columns a model takes by name",
        ),
    ] {
        let mut a = vec!["check"];
        a.extend_from_slice(args);
        let out = env.run(&a);
        assert_eq!(out.code, 2, "{args:?}");
        assert!(out.stdout.contains(says), "{args:?}: {}", out.stdout);
    }
}
