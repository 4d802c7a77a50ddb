"""The smollm2-local draft's recipe (tools/distill/) on the real target, with tiny
budgets: the splits, a training step that learns, and every stage end to end into a folder the app loads."""
from __future__ import annotations

import json
import random

import pytest
import torch

from specviz.tools.distill import cli, data, features
from specviz.tools.distill.optim import optimizer_step


def test_held_out_prompts_share_no_topic_with_training_prompts():
    train, held = data.prompts("train"), data.prompts("held-out")
    held_topics = {t for i, t in enumerate(data.TOPICS) if i % data.HELD_OUT_EVERY == 0}
    assert len(held) == len(held_topics) * len(data.TEMPLATES) and len(train) + len(held) == len(set(train + held))
    assert not any(topic in prompt for prompt in train for topic in held_topics if topic != "Shakespeare")
    assert data.prompts("train", seed=1) != train and sorted(data.prompts("train", seed=1)) == sorted(train)


@pytest.fixture(scope="module")
def target():
    model, _ = data.load_target(torch.get_num_threads())
    return model


def test_the_feature_draft_starts_from_the_targets_last_layer_and_reads_features(target):
    draft = features.make_draft(target)
    assert draft.config.num_hidden_layers == 1
    assert torch.equal(draft.model.layers[0].mlp.up_proj.weight, target.model.layers[-1].mlp.up_proj.weight)
    assert draft.feature_fc.in_features == 2 * target.config.hidden_size


@pytest.mark.slow  # training steps
def test_a_few_steps_on_one_batch_lower_the_loss_at_both_unrolled_levels(target):
    """Two sequences of the target's own text (its features and top-8 at T = 1, computed here), 15 AdamW
    steps: the loss and the top-k overlap at levels 1 and 2 must improve."""
    torch.manual_seed(0)
    rng = random.Random(0)
    ids = torch.tensor(sorted(rng.sample(range(target.config.vocab_size), 2048)))
    seqs = []
    with torch.no_grad():
        for _text in ("The sky is blue because light scatters in the air.", "Plants make food from sunlight and water."):
            tokens = [1] + [rng.choice(ids.tolist()) for _ in range(24)]
            out = target.model(torch.tensor([tokens])).last_hidden_state[0]
            top = target.lm_head(out[1:-1]).log_softmax(-1).topk(8)
            seqs.append((tokens, out, 1, top.indices, top.values))
    draft = features.make_draft(target).train()
    index_of = torch.full((target.config.vocab_size,), -1, dtype=torch.long)
    index_of[ids] = torch.arange(len(ids))
    args = (draft, target.get_input_embeddings(), target.lm_head.weight[ids].detach(), index_of, seqs, 0.0, 1.0)
    before, overlaps_before = features.feature_loss(*args, unroll=2)
    opt = torch.optim.AdamW([p for n, p in draft.named_parameters() if "embed" not in n and "lm_head" not in n], lr=1e-3)
    for _ in range(15):
        loss, _ = features.feature_loss(*args, unroll=2)
        optimizer_step(opt, [p for g in opt.param_groups for p in g["params"]], loss, 1e-3)
    after, overlaps_after = features.feature_loss(*args, unroll=2)
    assert after.item() < 0.9 * before.item()
    assert all(a > b for a, b in zip(overlaps_after, overlaps_before))


@pytest.mark.slow  # every stage of the recipe end to end
def test_every_stage_runs_and_the_app_loads_the_saved_draft(tmp_path):
    """generate (1 shard of 2 answers of 8 tokens), vocab, features, train (3 s), save, evaluate (1 prompt)."""
    from safetensors.torch import load_file

    from specviz.engine.decoding.feature_draft import reads_features
    from specviz.engine.models import smollm2
    from specviz.engine.models.loading import load_pair
    from specviz.engine.models.presets import Preset

    work, out, corpus = tmp_path / "work", tmp_path / "draft", tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a_play.txt").write_text("First Citizen. Before we proceed any further, hear me speak.\n" * 80)
    common = ["--work", str(work), "--out", str(out), "--threads", str(torch.get_num_threads())]
    cli.main(["generate", *common, "--first-shard", "2", "--shards", "1", "--batch", "2", "--max-new", "8",
              "--shakespeare-tokens", "40", "--corpus", str(corpus)])
    assert sorted(f.name for f in (work / "data").iterdir()) == ["chat_0002.pt", "shakespeare.pt"]
    cli.main(["vocab", *common, "--vocab", "512"])
    for stage in ("features", "train", "save"):
        cli.main([stage, *common, "--minutes-train", "0.05"])
    cli.main(["evaluate", *common, "--eval-prompts", "1", "--eval-tokens", "6"])
    shared = json.loads((out / smollm2.SHARED_FILE).read_text())
    # --init trains on from the saved folder: with no time to train, it checkpoints exactly what was saved
    cli.main(["train", *common, "--init", str(out), "--minutes-train", "0", "--checkpoint", "again.pt"])
    checkpoint = torch.load(work / "again.pt")
    assert checkpoint["prior_training"] == shared["training"]  # the new draft's record says what it trained on from
    again, saved = checkpoint["model"], load_file(str(out / "model.safetensors"))
    assert saved and all(torch.equal(again[k], v.float()) for k, v in saved.items())
    saved_fc = load_file(str(out / "feature_fc.safetensors"))
    assert all(torch.equal(again[f"feature_fc.{k}"], v.float()) for k, v in saved_fc.items())
    assert shared["feature_fc"] == "feature_fc.safetensors" and shared["vocab_subset"] == "vocab_subset.safetensors"
    assert sum(f.stat().st_size for f in out.iterdir()) < 20e6
    result = json.loads((work / "eval_features.json").read_text())
    assert all(0 <= result[f"alpha_T{t}"] <= 1 for t in ("1", "0.7", "0"))
    pair = load_pair(Preset(draft=str(out), target=smollm2.TARGET_REF, name="distill-test", chat=True), device="cpu")
    assert reads_features(pair.draft) and len(pair.draft.lm_head.ids) == 512


def test_passages_without_a_corpus_are_refused_by_name(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["generate", "--work", str(tmp_path), "--shakespeare-tokens", "40"])
    assert exit_.value.code == 2 and "--corpus" in capsys.readouterr().err


@pytest.mark.parametrize("args, flag", [(["generate", "--first-shard", "-1"], "--first-shard"),
                                        (["train", "--init", "no-such-folder"], "--init"),
                                        (["train", "--draft", "layers", "--init", "."], "--init")])
def test_a_bad_first_shard_or_init_folder_is_refused_by_name(tmp_path, capsys, args, flag):
    with pytest.raises(SystemExit) as exit_:
        cli.main([*args, "--work", str(tmp_path), "--shakespeare-tokens", "0"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and flag in err.splitlines()[-1]


def test_an_init_folder_of_other_files_is_refused_in_one_line(tmp_path, capsys):
    folder = tmp_path / "fake"
    folder.mkdir()
    for name in ("config.json", "model.safetensors", "feature_fc.safetensors", "vocab_subset.safetensors"):
        (folder / name).write_text("not a draft")
    (tmp_path / "work" / "features").mkdir(parents=True)
    (tmp_path / "work" / "features" / "chat_0000.pt").write_text("")  # the stage's other input, never read here
    with pytest.raises(SystemExit) as exit_:
        cli.main(["train", "--init", str(folder), "--work", str(tmp_path / "work"), "--minutes-train", "0"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and "--init" in err[-1] and "not a saved feature draft" in err[-1]


@pytest.mark.parametrize("args, said", [
    (["train", "--minutes-train", "-1"], "--minutes-train is a finite number >= 0"),
    (["train", "--minutes-train", "nan"], "--minutes-train is a finite number >= 0"),
    (["train", "--unroll", "0"], "--unroll is a whole number >= 1"),
    (["train", "--feature-layers", "0"], "--feature-layers is a whole number in 1..30"),
    (["train", "--feature-noise", "-1"], "--feature-noise is a finite number >= 0"),
    (["train", "--reg-weight", "nan"], "--reg-weight is a finite number >= 0"),
    (["train", "--batch", "0"], "--batch is a whole number >= 1"),
    (["train", "--lr", "0"], "--lr is a finite number > 0"),
    (["train", "--threads", "0"], "--threads must be a whole number in 1..1024"),
    (["vocab", "--vocab", "60000"], "--vocab is a whole number in 1..49152"),
    (["generate", "--temperatures", "0.7,-1"], "--temperatures is a comma-separated list of finite numbers >= 0"),
    (["train", "--draft", "layers", "--layers", "0,30"], "--layers is a comma-separated list of the target's layers"),
    (["evaluate", "--checkpoint", "/etc/passwd"], "--checkpoint is a file name inside --work, not a path"),
    (["bogus"], "argument stage: invalid choice: 'bogus'"),
])
def test_a_bad_flag_is_one_error_line_naming_it_before_any_stage_runs(tmp_path, capsys, args, said):
    """Each of these used to run into its stage: a traceback about a missing vocab.pt (exit 1), torch's own
    refusal of 0 threads, or, for argparse's refusals, a usage block before the line."""
    work = tmp_path / "work"
    with pytest.raises(SystemExit) as exit_:
        cli.main([*args, "--work", str(work), "--shakespeare-tokens", "0"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.startswith("error: ") and err.count("\n") == 1 and said in err
    assert not work.exists()  # refused before anything is written


def test_a_stage_whose_inputs_are_missing_says_so_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["train", "--work", str(tmp_path / "empty"), "--minutes-train", "0"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1  # before any model loads: nothing else on stderr
    assert err.startswith("error: the train stage needs vocab.pt in --work ")


def test_save_never_empties_a_folder_that_is_not_a_saved_drafts(tmp_path, capsys):
    """`save` replaces the files of the draft it writes; --out naming another folder by mistake (here one holding
    notes.txt) is refused before anything in it is touched."""
    work, out = tmp_path / "work", tmp_path / "mine"
    work.mkdir()
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    torch.save({"layers": 1, "model": {}, "step": 0, "epoch": 0, "elapsed": 0.0}, work / "train_features.pt")
    torch.save(torch.arange(8, dtype=torch.int32), work / "vocab.pt")
    with pytest.raises(SystemExit) as exit_:
        cli.main(["save", "--work", str(work), "--out", str(out)])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and "--out" in err and "notes.txt" in err
    assert (out / "notes.txt").read_text() == "keep me"
