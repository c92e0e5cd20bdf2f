"""preflight.torch.from_model against real PyTorch (CPU) and transformers:
for tiny models built from configs (no weights) and a hand-written module,
the samples whose forward pass and loss raise on the CPU are exactly the
samples the derived validator rejects; and the collate wrapper in a real
DataLoader under every start method."""

import multiprocessing
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import preflight  # noqa: E402
import preflight.torch as pt  # noqa: E402

nn = torch.nn


def tiny(kind, **extra):
    """A tiny model of `kind` from its config, random weights, eval mode."""
    torch.manual_seed(0)
    common = dict(vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    if kind == "bert":
        cfg = transformers.BertConfig(**common, max_position_embeddings=24, type_vocab_size=2, num_labels=3, **extra)
        model = transformers.BertForSequenceClassification(cfg)
    elif kind == "roberta":
        cfg = transformers.RobertaConfig(
            **common, max_position_embeddings=24, type_vocab_size=1, num_labels=5, pad_token_id=1, **extra
        )
        model = transformers.RobertaForTokenClassification(cfg)
    else:
        cfg = transformers.GPT2Config(
            vocab_size=100, n_positions=20, n_embd=16, n_layer=1, n_head=2, bos_token_id=0, eos_token_id=0, **extra
        )
        model = transformers.GPT2LMHeadModel(cfg)
    return model.eval()


def crashes(model, sample, loss=None):
    """Whether the CPU forward pass (and loss) raises on one sample."""
    batch = {k: torch.tensor([v]) for k, v in sample.items()}
    try:
        with torch.no_grad():
            if loss is None:
                model(**batch)
            else:
                loss(model(**{k: v for k, v in batch.items() if k != "y"}), batch["y"])
    except (IndexError, RuntimeError, ValueError):
        return True
    return False


def rejected(validator, sample):
    return validator.outcome([sample]).exit_code != 0


def compare(model, validator, samples, loss=None):
    """The oracle's and preflight's rejections, as sets of sample numbers."""
    oracle = {i for i, s in enumerate(samples) if crashes(model, s, loss)}
    ours = {i for i, s in enumerate(samples) if rejected(validator, s)}
    return oracle, ours


def bert_samples(rng, vocab=100):
    samples = []
    for _ in range(40):
        n = int(rng.integers(1, 25))
        samples.append(
            {
                "input_ids": rng.integers(0, vocab, n).tolist(),
                "token_type_ids": rng.integers(0, 2, n).tolist(),
                "labels": int(rng.choice([0, 1, 2, -100])),
            }
        )
    ok = samples[0]
    planted = [
        dict(ok, input_ids=[5, vocab, 7], token_type_ids=[0, 0, 0]),  # an id past the table
        dict(ok, input_ids=[5, -1, 7], token_type_ids=[0, 0, 0]),  # -1 as a pad
        dict(ok, input_ids=[3] * 25, token_type_ids=[0] * 25),  # one longer than the positions
        dict(ok, input_ids=[3] * 24, token_type_ids=[0] * 24),  # exactly the positions: fine
        dict(ok, input_ids=[3, 4], token_type_ids=[0, 2]),  # a token type past the table
        dict(ok, labels=3),  # labels equal to num_labels
        dict(ok, labels=-1),  # -1 as the ignore value
    ]
    return samples + planted


def test_bert_sequence_classification_rejects_exactly_what_crashes():
    model = tiny("bert")
    validator = pt.from_model(model)
    samples = bert_samples(np.random.default_rng(1))
    oracle, ours = compare(model, validator, samples)
    assert ours == oracle
    n = len(samples)
    assert {n - 7, n - 6, n - 5, n - 3, n - 2, n - 1} <= oracle
    assert n - 4 not in oracle
    schema = validator.resolved_schema()
    assert "size: 100  # from model.bert.embeddings.word_embeddings.num_embeddings" in schema
    assert "max_length: 24  # from model.bert.embeddings.position_embeddings.num_embeddings" in schema
    assert "num_classes: 3  # from model.config.num_labels" in schema


def test_tokens_added_without_a_resize_then_after_it():
    model = tiny("bert")
    with_new_ids = [{"input_ids": [5, 100 + k, 7], "token_type_ids": [0, 0, 0], "labels": 1} for k in range(10)]
    past = {"input_ids": [5, 110, 7], "token_type_ids": [0, 0, 0], "labels": 1}
    samples = with_new_ids + [past]
    oracle, ours = compare(model, pt.from_model(model), samples)
    assert ours == oracle == set(range(11))
    model.resize_token_embeddings(110)
    validator = pt.from_model(model)
    oracle, ours = compare(model, validator, samples)
    assert ours == oracle == {10}
    assert "size: 110  # from model.bert.embeddings.word_embeddings.num_embeddings" in validator.resolved_schema()


def test_roberta_token_types_positions_and_token_labels():
    model = tiny("roberta")
    validator = pt.from_model(model)
    rng = np.random.default_rng(2)
    ids = [i for i in range(100) if i != 1]
    samples = []
    for _ in range(40):
        n = int(rng.integers(1, 23))
        samples.append(
            {
                "input_ids": rng.choice(ids, n).tolist(),
                "token_type_ids": [0] * n,
                "labels": rng.choice([0, 1, 2, 3, 4, -100], n).tolist(),
            }
        )
    base = {"input_ids": [5, 6, 7], "token_type_ids": [0, 0, 0], "labels": [0, 1, 2]}
    planted = [
        dict(base, token_type_ids=[0, 1, 0]),  # RoBERTa has one token type
        {"input_ids": [5] * 23, "token_type_ids": [0] * 23, "labels": [0] * 23},  # past 22 non-pad tokens
        {"input_ids": [5] * 22, "token_type_ids": [0] * 22, "labels": [0] * 22},  # exactly 22: fine
        # 22 tokens and 2 pads (pads take no position): fine
        {"input_ids": [5] * 22 + [1, 1], "token_type_ids": [0] * 24, "labels": [0] * 22 + [-100, -100]},
        dict(base, labels=[0, 5, 1]),  # a token label equal to num_labels
        dict(base, labels=[0, -1, 1]),  # -1 as the ignore value
    ]
    samples += planted
    oracle, ours = compare(model, validator, samples)
    assert ours == oracle
    n = len(samples)
    assert {n - 6, n - 5, n - 2, n - 1} <= oracle
    assert not {n - 4, n - 3} & oracle
    assert "size: 1  # from model.roberta.embeddings.token_type_embeddings.num_embeddings" in validator.resolved_schema()


def test_gpt2_language_model_labels_and_positions():
    model = tiny("gpt2")
    rng = np.random.default_rng(3)
    samples = []
    for _ in range(40):
        n = int(rng.integers(2, 21))
        ids = rng.integers(0, 100, n).tolist()
        samples.append({"input_ids": ids, "labels": [t if rng.random() > 0.2 else -100 for t in ids]})
    planted = [
        {"input_ids": [3] * 21, "labels": [3] * 21},  # one longer than n_positions
        {"input_ids": [3, 100], "labels": [3, 4]},  # an id past the vocabulary
        {"input_ids": [3, 4], "labels": [3, 100]},  # a label past the output rows
        {"input_ids": [3, 4], "labels": [3, -1]},  # -1 is no ignore value here
    ]
    samples += planted
    validator = pt.from_model(model)
    oracle, ours = compare(model, validator, samples)
    assert ours == oracle
    assert set(range(len(samples) - 4, len(samples))) <= oracle
    assert "num_classes: 100  # from model.lm_head.out_features" in validator.resolved_schema()


class TwoEmbeddings(nn.Module):
    """A hand-written model: two embeddings summed, a linear classifier."""

    def __init__(self):
        super().__init__()
        self.words = nn.Embedding(50, 8)
        self.kinds = nn.Embedding(7, 8)
        self.head = nn.Linear(8, 4)

    def forward(self, my_ids, kind):
        return self.head(self.words(my_ids).mean(dim=1) + self.kinds(kind))


def test_a_hand_written_module_with_columns_named_and_a_loss():
    torch.manual_seed(0)
    model = TwoEmbeddings().eval()
    loss = nn.CrossEntropyLoss(ignore_index=-1)
    validator = pt.from_model(model, loss=loss, columns={"my_ids": model.words, "kind": model.kinds, "y": model.head})
    rng = np.random.default_rng(4)
    samples = [
        {"my_ids": rng.integers(0, 50, 5).tolist(), "kind": int(rng.integers(0, 7)), "y": int(rng.choice([0, 1, 2, 3, -1]))}
        for _ in range(30)
    ]
    samples += [
        {"my_ids": [1, 50, 2, 3, 4], "kind": 0, "y": 0},
        {"my_ids": [1, 2, 3, 4, 5], "kind": 7, "y": 0},
        {"my_ids": [1, 2, 3, 4, 5], "kind": 0, "y": 4},
        {"my_ids": [1, 2, 3, 4, 5], "kind": 0, "y": -100},  # not this loss's ignore value
    ]
    oracle, ours = compare(model, validator, samples, loss)
    assert ours == oracle
    assert set(range(30, 34)) <= oracle
    schema = validator.resolved_schema()
    assert "size: 50  # from model.words.num_embeddings" in schema
    assert "num_classes: 4  # from model.head.out_features" in schema
    assert "ignore_index: -1" in schema
    # A number names a bound too: ids for names ending in "ids", else classes.
    v = pt.from_model(model, columns={"my_ids": 50, "y": 4})
    assert v.check({"my_ids": [[49, 50]], "y": [4]})["violations"] == 2


def test_tokenizer_larger_than_the_embedding_warns_and_a_pad_past_it_is_an_error():
    from tokenizers import Tokenizer, models, pre_tokenizers

    vocab = {f"w{i}": i for i in range(100)}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="w0"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = transformers.PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="w0", pad_token="w0")
    model = tiny("bert")
    assert "warnings" not in pt.from_model(model, tokenizer=tok).check({"input_ids": [[1]]})
    tok.add_tokens(["new1", "new2"])
    report = pt.from_model(model, tokenizer=tok).check({"input_ids": [[1]]})
    assert any("ids up to 101" in w and "is 100" in w for w in report["warnings"]), report["warnings"]
    tok.add_special_tokens({"pad_token": "new2"})
    with pytest.raises(preflight.SchemaError, match="pad_token_id is 101"):
        pt.from_model(model, tokenizer=tok)


def test_bad_inputs_are_clear_errors():
    with pytest.raises(preflight.SchemaError, match="no input preflight can bound"):
        pt.from_model(nn.Sequential(nn.ReLU()))
    model = TwoEmbeddings()
    with pytest.raises(TypeError, match="ReLU, not an nn.Embedding or nn.Linear"):
        pt.from_model(model, columns={"x": nn.ReLU()})
    with pytest.raises(TypeError, match="is not a CrossEntropyLoss"):
        pt.from_model(model, loss=nn.MSELoss(), columns={"y": 3})
    # A tensor on another device is refused, not copied back (meta stands
    # in for CUDA on a machine without a GPU).
    v = pt.from_model(model, columns={"y": 4})
    with pytest.raises(ValueError, match="reads CPU tensors only"):
        v.check({"y": torch.zeros(3, dtype=torch.int64, device="meta")})
    # CPU tensors are read in place.
    assert v.check({"y": torch.tensor([0, 4])})["violations"] == 1


class Samples(torch.utils.data.Dataset):
    """Token samples; sample `bad` has an id past the vocabulary."""

    def __init__(self, n, bad=None):
        self.n, self.bad = n, bad

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        ids = np.full(8, i % 100, dtype=np.int64)
        if i == self.bad:
            ids[3] = 100
        return {"input_ids": ids, "labels": np.int64(i % 3)}


@pytest.mark.parametrize(("workers", "method"), [(0, None), (2, "fork"), (2, "spawn"), (2, "forkserver")])
def test_collate_wrapper_in_a_real_dataloader(workers, method):
    validator = pt.from_model(tiny("bert"))
    ctx = multiprocessing.get_context(method) if workers else None
    options = dict(num_workers=workers, multiprocessing_context=ctx, persistent_workers=workers > 0, pin_memory=True)
    # In every mode: clean data passes, and a bad sample (in the last
    # batch, so that no worker holds a prefetched batch at the error, which
    # makes the loader's shutdown wait) raises naming its dataset index.
    clean = torch.utils.data.DataLoader(Samples(64), batch_size=8, collate_fn=validator.wrap_collate(), **options)
    assert [b["input_ids"].shape for b in clean] == [(8, 8)] * 8
    bad = preflight.IndexedDataset(Samples(64, bad=61))
    with pytest.raises(preflight.DataError, match=r"<dataset>:61: 100"):
        for _ in torch.utils.data.DataLoader(bad, batch_size=8, collate_fn=validator.wrap_collate(), **options):
            pass
    if workers:
        return
    # A seeded shuffle with and without the wrapper gives the same batches
    # (the sampler's order and RNG untouched); a shuffled bad sample is
    # still named by its dataset index, and without the index wrapper by
    # its place in the batch.
    def loader(dataset, collate_fn):
        seeded = torch.Generator().manual_seed(7)
        return torch.utils.data.DataLoader(dataset, batch_size=8, shuffle=True, generator=seeded, collate_fn=collate_fn)

    checked = list(loader(Samples(64), validator.wrap_collate()))
    plain = list(loader(Samples(64), None))
    assert all(torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(checked, plain))
    with pytest.raises(preflight.DataError, match=r"<dataset>:37: 100"):
        for _ in loader(preflight.IndexedDataset(Samples(64, bad=37)), validator.wrap_collate()):
            pass
    with pytest.raises(preflight.DataError, match=r"<collate>:\d+: 100"):
        for _ in loader(Samples(64, bad=37), validator.wrap_collate()):
            pass


def test_a_validator_used_before_the_workers_fork_does_not_deadlock(tmp_path):
    """The parent checks a dataset with the parallel scanner (its threads
    started), then forks a child that scans again and DataLoader workers
    that check batches: run in a child process with a timeout, so a
    deadlock fails instead of hanging."""
    script = textwrap.dedent(
        """
        import multiprocessing, os, sys, numpy as np, torch, datasets
        import preflight

        class S(torch.utils.data.Dataset):
            def __len__(self): return 256
            def __getitem__(self, i): return {"input_ids": np.full(8, i % 100)}

        if __name__ == "__main__":
            v = preflight.Validator({"version": 1, "columns": {"input_ids": {"kind": "index", "size": 100}}})
            ds = datasets.Dataset.from_dict({"input_ids": [[i % 100] * 8 for i in range(20000)]})
            ds.save_to_disk(sys.argv[1])
            ds = datasets.load_from_disk(sys.argv[1])
            assert v.check_dataset(ds, jobs=2)["violations"] == 0
            assert v.check({"input_ids": [[1, 2]] * 100000})["violations"] == 0
            # A forked child runs the parallel scanner again (its pool is
            # the run's own, never inherited half-alive).
            pid = os.fork()
            if pid == 0:
                os._exit(0 if v.check_dataset(ds, jobs=2)["violations"] == 0 else 3)
            assert os.waitpid(pid, 0)[1] == 0
            for method in ("fork", "forkserver", "spawn"):
                loader = torch.utils.data.DataLoader(
                    S(), batch_size=16, num_workers=2, collate_fn=v.wrap_collate(),
                    multiprocessing_context=multiprocessing.get_context(method))
                assert sum(1 for _ in loader) == 16
            print("ok")
        """
    )
    file = tmp_path / "fork.py"
    file.write_text(script)
    out = subprocess.run([sys.executable, str(file), str(tmp_path / "ds")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-2000:]


def test_collate_checks_list_samples_as_samples_not_as_the_transposed_batch():
    """default_collate turns list values into a list of per-position
    tensors; the check must still see each sample's row."""
    validator = preflight.Validator({"version": 1, "columns": {"input_ids": {"kind": "index", "size": 100, "max_length": 3}}})
    collate = validator.wrap_collate()
    batch = collate([{"input_ids": [1, 2, 3]}, {"input_ids": [4, 5, 6]}])
    assert [t.tolist() for t in batch["input_ids"]] == [[1, 4], [2, 5], [3, 6]]
    with pytest.raises(preflight.DataError, match=r"<collate>:1: 100"):
        collate([{"input_ids": [1, 2, 3]}, {"input_ids": [4, 100, 6]}])
    # Arrays are checked in the stacked batch, the same verdicts.
    with pytest.raises(preflight.DataError, match=r"<collate>:1: 100"):
        collate([{"input_ids": np.array([1, 2, 3])}, {"input_ids": np.array([4, 100, 6])}])
