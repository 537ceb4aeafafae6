"""Hugging Face ``transformers`` models built offline from small configs (random weights, no hub).

``HF_MODELS[name]()`` returns ``(model, inputs)`` with ``inputs`` a dict of keyword tensors.
:class:`Adapter` gives a model an explicit ``forward(self, <input names>)`` -- torch.fx (and
fxla's default mode) need one: HF forwards are wrapped by decorators taking ``*args, **kwargs``.
"""
import torch
import torch.nn as nn

transformers = None
try:
    import transformers
    transformers.logging.set_verbosity_error()
except ImportError:  # the HF part of the zoo is skipped
    pass

VOCAB = 100


def _ids(*shape):
    return torch.randint(0, VOCAB, shape)


def _text(**extra):
    return {"input_ids": _ids(2, 8), **extra}


def _decoder_cfg(cfg_cls, **kw):  # LLaMA-family configs share these names
    return cfg_cls(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                   intermediate_size=64, vocab_size=VOCAB, max_position_embeddings=64, **kw)


def _bert_cfg(cfg_cls, **kw):
    return cfg_cls(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                   vocab_size=VOCAB, max_position_embeddings=64, **kw)


def gpt2():
    t = transformers
    return t.GPT2Model(t.GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=VOCAB, n_positions=64,
                                    bos_token_id=0, eos_token_id=0)), _text()


def bert():
    t = transformers
    return t.BertModel(_bert_cfg(t.BertConfig)), _text(token_type_ids=torch.zeros(2, 8, dtype=torch.long))


def roberta():
    t = transformers
    return t.RobertaModel(_bert_cfg(t.RobertaConfig, pad_token_id=1)), _text()


def distilbert():
    t = transformers
    return t.DistilBertModel(t.DistilBertConfig(n_layers=2, dim=32, n_heads=2, hidden_dim=64, vocab_size=VOCAB,
                                                max_position_embeddings=64)), _text()


def t5():
    t = transformers
    cfg = t.T5Config(num_layers=2, d_model=32, d_kv=16, num_heads=2, d_ff=64, vocab_size=VOCAB,
                     decoder_start_token_id=0)
    return t.T5Model(cfg), _text(decoder_input_ids=_ids(2, 5))


def llama():
    t = transformers
    return t.LlamaModel(_decoder_cfg(t.LlamaConfig)), _text()


def mistral():
    t = transformers
    return t.MistralModel(_decoder_cfg(t.MistralConfig)), _text()


def qwen2():
    t = transformers
    return t.Qwen2Model(_decoder_cfg(t.Qwen2Config)), _text()


def vit_hf():
    t = transformers
    cfg = t.ViTConfig(num_hidden_layers=2, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                      image_size=16, patch_size=4, num_channels=3)
    return t.ViTModel(cfg), {"pixel_values": torch.randn(2, 3, 16, 16)}


HF_MODELS = {"gpt2": gpt2, "bert": bert, "roberta": roberta, "distilbert": distilbert, "t5": t5, "llama": llama,
             "mistral": mistral, "qwen2": qwen2, "vit_hf": vit_hf}


def fixed_kwargs(model):
    """Non-input arguments every trace of an HF model fixes: no KV cache (its Cache object is no
    tensor), ModelOutput (a dict) as the result."""
    import inspect
    params = inspect.signature(model.forward).parameters
    return {k: v for k, v in (("use_cache", False), ("return_dict", True)) if k in params}


_ADAPTERS = {}


def adapter(model, names):
    """Wrap ``model`` in a module with ``forward(self, <names>)`` calling
    ``model(**named inputs, use_cache=False, return_dict=True)`` and returning its ModelOutput
    (an OrderedDict subclass: traced as a plain dict).  Both tracers read ``type(root).forward``,
    so each signature gets its own class."""
    fixed = fixed_kwargs(model)
    key = (tuple(names), tuple(fixed.items()))
    cls = _ADAPTERS.get(key)
    if cls is None:
        args = ", ".join(names)
        call = ", ".join([f"{n}={n}" for n in names] + [f"{k}={v!r}" for k, v in fixed.items()])
        ns = {}
        exec(f"def forward(self, {args}):\n    return self.model({call})\n", ns)
        cls = _ADAPTERS[key] = type("HFAdapter", (Adapter,), {"forward": ns["forward"]})
    return cls(model)


class Adapter(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
