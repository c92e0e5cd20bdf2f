"""The training callbacks in real trainers (CPU): a Hugging Face Trainer and
a Lightning Trainer fail before step 1 on a dataset with a planted bad
sample, naming its dataset index, and train 3 steps on clean data."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
datasets = pytest.importorskip("datasets")

import preflight  # noqa: E402
import preflight.torch as pt  # noqa: E402

nn = torch.nn


def bert():
    torch.manual_seed(0)
    cfg = transformers.BertConfig(
        vocab_size=100, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=24, type_vocab_size=2, num_labels=3,
    )
    return transformers.BertForSequenceClassification(cfg)


def saved(tmp_path, name, bad=None):
    """A tokenized dataset in cache files (save_to_disk, load_from_disk),
    shuffled (an index mapping) and with a text column the model does not
    take; `bad`: (stored row, column, value) planted."""
    rng = np.random.default_rng(0)
    rows = {
        "input_ids": rng.integers(0, 100, (64, 8)).tolist(),
        "attention_mask": [[1] * 8] * 64,
        "labels": (np.arange(64) % 3).tolist(),
        "text": [f"s{i}" for i in range(64)],
    }
    if bad is not None:
        row, column, value = bad
        if column == "labels":
            rows["labels"][row] = value
        else:
            rows[column][row] = rows[column][row][:3] + [value] + rows[column][row][4:]
    datasets.Dataset.from_dict(rows).save_to_disk(str(tmp_path / name))
    return datasets.load_from_disk(str(tmp_path / name)).shuffle(seed=1)


def trainer(tmp_path, train, evals=None, **callback):
    from preflight.hf import PreflightCallback

    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=3, per_device_train_batch_size=8, report_to=[],
        use_cpu=True, save_strategy="no", logging_strategy="no", dataloader_num_workers=0,
    )
    return transformers.Trainer(
        model=bert(), args=args, train_dataset=train, eval_dataset=evals, callbacks=[PreflightCallback(**callback)]
    )


def test_hf_trainer_fails_before_step_1_naming_the_dataset_index(tmp_path):
    train = saved(tmp_path, "train", bad=(17, "input_ids", 100))
    t = trainer(tmp_path, train)
    with pytest.raises(preflight.DataError, match="train dataset") as caught:
        t.train()
    assert t.state.global_step == 0
    check = next(c for c in caught.value.report["checks"] if c["violations"])
    index = train._indices.column("indices").to_pylist().index(17)
    assert [(e["row"], e["index"], e["value"]) for e in check["examples"]] == [(17, index, 100)]


def test_hf_trainer_checks_the_eval_dataset_and_every_batch(tmp_path):
    train = saved(tmp_path, "train")
    evals = saved(tmp_path, "eval", bad=(5, "labels", 3))
    t = trainer(tmp_path, train, evals)
    with pytest.raises(preflight.DataError, match="eval dataset"):
        t.train()
    assert t.state.global_step == 0
    # every_batch: the collate function of the train loader checks batches.
    t = trainer(tmp_path, saved(tmp_path, "train2", bad=(40, "labels", -1)), check="every_batch")
    with pytest.raises(preflight.DataError, match="labels"):
        t.train()


def test_hf_trainer_trains_on_clean_data(tmp_path):
    t = trainer(tmp_path, saved(tmp_path, "train"), saved(tmp_path, "eval"), check="both")
    t.train()
    assert t.state.global_step == 3


class Samples(torch.utils.data.Dataset):
    """Tuple samples (ids, label); not Arrow-backed: read on the CPU."""

    def __init__(self, bad=None):
        self.bad = bad

    def __len__(self):
        return 64

    def __getitem__(self, i):
        ids = torch.full((8,), i % 50)
        if i == self.bad:
            ids[2] = 50
        return ids, torch.tensor(i % 4)


def test_lightning_fails_before_step_1_and_trains_on_clean_data():
    import lightning.pytorch as L

    from preflight.lightning import PreflightCallback

    class Net(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.words = nn.Embedding(50, 8)
            self.head = nn.Linear(8, 4)
            self.steps = 0

        def training_step(self, batch, _):
            self.steps += 1
            ids, y = batch
            return nn.functional.cross_entropy(self.head(self.words(ids).mean(1)), y)

        def validation_step(self, batch, _):
            return self.training_step(batch, _)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    def fit(train_bad=None, val_bad=None):
        net = Net()
        callback = PreflightCallback(columns={"0": net.words, "1": net.head})
        t = L.Trainer(
            max_steps=3, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False,
            enable_model_summary=False, callbacks=[callback],
        )
        loader = lambda ds: torch.utils.data.DataLoader(ds, batch_size=8)  # noqa: E731
        t.fit(net, loader(Samples(train_bad)), loader(Samples(val_bad)))
        return net, t

    with pytest.raises(preflight.DataError, match="train dataset") as caught:
        fit(train_bad=45)
    check = next(c for c in caught.value.report["checks"] if c["violations"])
    assert [(e["file"], e["row"], e["value"]) for e in check["examples"]] == [("train", 45, 50)]
    with pytest.raises(preflight.DataError, match="val dataset"):
        fit(val_bad=3)
    net, t = fit()
    assert t.global_step == 3 and net.steps >= 3
