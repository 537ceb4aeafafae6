"""The zoo's Hugging Face ``transformers`` models, built offline from their config classes (2 layers, width 32,
vocabulary 100; random seeded weights, no hub) and called the way their users call them:

* encoders: ``input_ids`` + ``attention_mask`` of a right-padded batch (real pad tokens, mask 0), with ``labels``
  for the head's loss (sequence classes, masked-LM targets, token tags);
* decoder-only language models: a left-padded batch (as for generation) with ``labels`` (-100 at padding) and
  ``use_cache=False`` (the README's recipe); ``hf_gpt2_cache`` leaves ``use_cache`` at its default, so the output
  also holds the KV cache;
* encoder-decoders: ``input_ids`` + ``attention_mask`` with ``decoder_input_ids`` (or ``labels``, from which the
  model shifts its own decoder inputs);
* vision and audio models: ``pixel_values`` / ``input_features`` / ``input_values`` (with ``labels`` where the
  head has a loss).
"""
from __future__ import annotations

import torch

from .registry import Case, Entry, class_labels, generator, images, lm_labels, mlm_labels, padded_ids

VOCAB, LAYERS, WIDTH, HEADS, FFN, POSITIONS = 100, 2, 32, 2, 64, 64


def _t():
    import transformers
    transformers.logging.set_verbosity_error()
    return transformers


def _build(cls_name, cfg_name, **cfg):
    t = _t()
    config = getattr(t, cfg_name)(**cfg)
    return getattr(t, cls_name)(config), config


def _pad_id(config):
    return config.pad_token_id if config.pad_token_id is not None else 0


def _bert_like(**extra):
    return dict(num_hidden_layers=LAYERS, hidden_size=WIDTH, num_attention_heads=HEADS, intermediate_size=FFN,
                vocab_size=VOCAB, max_position_embeddings=POSITIONS, **extra)


def _llama_like(**extra):
    return dict(num_hidden_layers=LAYERS, hidden_size=WIDTH, num_attention_heads=4, num_key_value_heads=2,
                intermediate_size=FFN, vocab_size=VOCAB, max_position_embeddings=POSITIONS, pad_token_id=0,
                bos_token_id=1, eos_token_id=1, **extra)


# -- encoders --------------------------------------------------------------------------------------------------------
def _encoder(cls_name, cfg_name, head, num_labels=3, **cfg):
    """``head``: "cls" (sequence-class labels), "mlm" (masked-LM labels), "token" (a tag per token) or None."""
    def factory():
        model, config = _build(cls_name, cfg_name, num_labels=num_labels, **cfg)
        ids, mask = padded_ids(VOCAB, _pad_id(config))
        kwargs = dict(attention_mask=mask)
        if head == "cls":
            kwargs["labels"] = class_labels(2, num_labels)
        elif head == "mlm":
            kwargs["labels"] = mlm_labels(ids, mask)
        elif head == "token":
            tags = torch.randint(0, num_labels, ids.shape, generator=generator(3))
            kwargs["labels"] = tags.masked_fill(mask == 0, -100)
        return Case(model, (ids,), kwargs)
    factory.__name__ = cls_name
    return factory


def bert():
    model, config = _build("BertForSequenceClassification", "BertConfig", num_labels=3, **_bert_like())
    ids, mask = padded_ids(VOCAB, _pad_id(config))
    types = torch.zeros_like(ids)
    types[:, 5:] = 1
    return Case(model, (ids,), dict(attention_mask=mask, token_type_ids=types, labels=class_labels(2, 3)))


# -- decoder-only language models ------------------------------------------------------------------------------------
def _causal_lm(cls_name, cfg_name, use_cache=False, **cfg):
    def factory():
        model, config = _build(cls_name, cfg_name, **cfg)
        ids, mask = padded_ids(VOCAB, _pad_id(config), left=True)
        kwargs = dict(attention_mask=mask, labels=lm_labels(ids, mask))
        if use_cache is not None:
            kwargs["use_cache"] = use_cache
        return Case(model, (ids,), kwargs)
    factory.__name__ = cls_name
    return factory


def gpt2_cache():
    model, config = _build("GPT2LMHeadModel", "GPT2Config", **_gpt2_cfg())
    ids, mask = padded_ids(VOCAB, 0, left=True)
    return Case(model, (ids,), dict(attention_mask=mask))


def _gpt2_cfg():
    return dict(n_layer=LAYERS, n_embd=WIDTH, n_head=HEADS, vocab_size=VOCAB, n_positions=POSITIONS,
                bos_token_id=1, eos_token_id=1, pad_token_id=0)


# -- encoder-decoders ------------------------------------------------------------------------------------------------
def _seq2seq(cls_name, cfg_name, labels=False, **cfg):
    """``labels=False``: called with ``decoder_input_ids`` (and their mask); True: with ``labels`` only."""
    def factory():
        model, config = _build(cls_name, cfg_name, **cfg)
        pad = _pad_id(config)
        ids, mask = padded_ids(VOCAB, pad)
        dec, dec_mask = padded_ids(VOCAB, pad, length=5, pad=2, seed=4)
        kwargs = dict(attention_mask=mask, use_cache=False)
        if labels:
            kwargs["labels"] = dec.masked_fill(dec_mask == 0, -100)
        else:
            kwargs.update(decoder_input_ids=dec, decoder_attention_mask=dec_mask)
        return Case(model, (ids,), kwargs)
    factory.__name__ = cls_name
    return factory


def _bart_like(**extra):
    return dict(encoder_layers=LAYERS, decoder_layers=LAYERS, d_model=WIDTH, encoder_attention_heads=HEADS,
                decoder_attention_heads=HEADS, encoder_ffn_dim=FFN, decoder_ffn_dim=FFN, vocab_size=VOCAB,
                max_position_embeddings=POSITIONS, pad_token_id=1, bos_token_id=0, eos_token_id=2,
                decoder_start_token_id=2, **extra)


# -- vision, multimodal, audio ---------------------------------------------------------------------------------------
def _image_classifier(cls_name, cfg_name, size=32, **cfg):
    def factory():
        model, _ = _build(cls_name, cfg_name, num_labels=5, **cfg)
        return Case(model, (images(2, size),), dict(labels=class_labels(2, 5)))
    factory.__name__ = cls_name
    return factory


def _vit_cfg(**extra):
    return dict(num_hidden_layers=LAYERS, hidden_size=WIDTH, num_attention_heads=HEADS, intermediate_size=FFN,
                image_size=32, patch_size=8, num_channels=3, **extra)


def clip():
    """``CLIPModel`` on a padded text batch and images, ``return_loss=True`` (the contrastive loss)."""
    t = _t()
    text = dict(num_hidden_layers=LAYERS, hidden_size=WIDTH, num_attention_heads=HEADS, intermediate_size=FFN,
                vocab_size=VOCAB, max_position_embeddings=16, pad_token_id=0, bos_token_id=1, eos_token_id=2)
    vision = dict(num_hidden_layers=LAYERS, hidden_size=WIDTH, num_attention_heads=HEADS, intermediate_size=FFN,
                  image_size=32, patch_size=8)
    model = t.CLIPModel(t.CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))
    ids, mask = padded_ids(VOCAB, 0, low=3)
    ids[0, -1] = 2                                     # the end-of-text token the pooler looks for
    ids[1, 4] = 2
    return Case(model, (ids, images(2, 32)), dict(attention_mask=mask, return_loss=True))


def whisper():
    """``WhisperForConditionalGeneration``: log-mel features through the conv front end and encoder, decoder
    inputs, ``use_cache=False``."""
    model, _ = _build("WhisperForConditionalGeneration", "WhisperConfig", vocab_size=VOCAB, num_mel_bins=8,
                      encoder_layers=LAYERS, decoder_layers=LAYERS, encoder_attention_heads=HEADS,
                      decoder_attention_heads=HEADS, encoder_ffn_dim=FFN, decoder_ffn_dim=FFN, d_model=WIDTH,
                      max_source_positions=16, max_target_positions=16, pad_token_id=0, bos_token_id=1,
                      eos_token_id=2, decoder_start_token_id=1)
    features = torch.randn(2, 8, 32, generator=generator(5))
    dec = torch.randint(3, VOCAB, (2, 5), generator=generator(6))
    return Case(model, (features,), dict(decoder_input_ids=dec, use_cache=False))


def wav2vec2():
    """``Wav2Vec2ForCTC`` on a padded batch of raw audio (layer-norm feature extractor, so the attention mask is
    used) with CTC ``labels``."""
    model, _ = _build("Wav2Vec2ForCTC", "Wav2Vec2Config", vocab_size=20, hidden_size=WIDTH,
                      num_hidden_layers=LAYERS, num_attention_heads=HEADS, intermediate_size=FFN,
                      conv_dim=(16, 16), conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=8,
                      num_conv_pos_embedding_groups=2, feat_extract_norm="layer", do_stable_layer_norm=True,
                      pad_token_id=0, mask_time_prob=0.0)
    audio = torch.randn(2, 400, generator=generator(7))
    mask = torch.ones(2, 400, dtype=torch.long)
    audio[1, 300:] = 0.0
    mask[1, 300:] = 0
    labels = torch.randint(1, 20, (2, 6), generator=generator(8))
    labels[1, 4:] = -100
    return Case(model, (audio,), dict(attention_mask=mask, labels=labels))


def hubert():
    model, _ = _build("HubertModel", "HubertConfig", hidden_size=WIDTH, num_hidden_layers=LAYERS,
                      num_attention_heads=HEADS, intermediate_size=FFN, conv_dim=(16, 16), conv_stride=(5, 2),
                      conv_kernel=(10, 3), num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=2,
                      mask_time_prob=0.0)
    return Case(model, (torch.randn(2, 400, generator=generator(9)),))


def _e(name, family, factory, notes):
    return Entry(name, family, factory, notes)


ENTRIES = [
    # encoders
    _e("hf_bert", "hf-encoder", bert, "BertForSequenceClassification: padding, token_type_ids, labels"),
    _e("hf_roberta", "hf-encoder", _encoder("RobertaForMaskedLM", "RobertaConfig", "mlm",
                                            **_bert_like(pad_token_id=1)), "masked-LM labels; pad id 1"),
    _e("hf_distilbert", "hf-encoder",
       _encoder("DistilBertForSequenceClassification", "DistilBertConfig", "cls", n_layers=LAYERS, dim=WIDTH,
                n_heads=HEADS, hidden_dim=FFN, vocab_size=VOCAB, max_position_embeddings=POSITIONS),
       "sequence-class labels"),
    _e("hf_albert", "hf-encoder", _encoder("AlbertForMaskedLM", "AlbertConfig", "mlm", embedding_size=16,
                                           **_bert_like()), "shared layers, factorised embeddings, MLM labels"),
    _e("hf_electra", "hf-encoder", _encoder("ElectraForTokenClassification", "ElectraConfig", "token",
                                            embedding_size=16, **_bert_like()), "token-classification labels"),
    _e("hf_deberta_v2", "hf-encoder",
       _encoder("DebertaV2ForSequenceClassification", "DebertaV2Config", "cls", relative_attention=True,
                position_buckets=16, max_relative_positions=32, pos_att_type=["p2c", "c2p"], **_bert_like()),
       "disentangled relative attention, labels"),
    _e("hf_xlm_roberta", "hf-encoder", _encoder("XLMRobertaModel", "XLMRobertaConfig", None,
                                                **_bert_like(pad_token_id=1)), "base model with pooler, no head"),
    _e("hf_mobilebert", "hf-encoder",
       _encoder("MobileBertForSequenceClassification", "MobileBertConfig", "cls", num_hidden_layers=LAYERS,
                hidden_size=WIDTH, embedding_size=16, intra_bottleneck_size=16, true_hidden_size=16,
                num_attention_heads=HEADS, intermediate_size=FFN, num_feedforward_networks=2, vocab_size=VOCAB,
                max_position_embeddings=POSITIONS), "bottlenecks, NoNorm, stacked FFNs"),
    # decoder-only language models
    _e("hf_gpt2", "hf-decoder", _causal_lm("GPT2LMHeadModel", "GPT2Config", **_gpt2_cfg()),
       "left padding, labels, use_cache=False"),
    _e("hf_gpt2_cache", "hf-decoder", gpt2_cache, "use_cache at its default: the output holds a DynamicCache"),
    _e("hf_gpt_neo", "hf-decoder",
       _causal_lm("GPTNeoForCausalLM", "GPTNeoConfig", num_layers=LAYERS, hidden_size=WIDTH, num_heads=HEADS,
                  attention_types=[[["global", "local"], 1]], window_size=4, vocab_size=VOCAB,
                  max_position_embeddings=POSITIONS, pad_token_id=0, bos_token_id=1, eos_token_id=1),
       "global + local (windowed) attention layers"),
    _e("hf_gptj", "hf-decoder",
       _causal_lm("GPTJForCausalLM", "GPTJConfig", n_layer=LAYERS, n_embd=WIDTH, n_head=HEADS, rotary_dim=8,
                  n_positions=POSITIONS, vocab_size=VOCAB, pad_token_id=0, bos_token_id=1, eos_token_id=1),
       "partial rotary embeddings, parallel attention + MLP"),
    _e("hf_opt", "hf-decoder",
       _causal_lm("OPTForCausalLM", "OPTConfig", num_hidden_layers=LAYERS, hidden_size=WIDTH,
                  num_attention_heads=HEADS, ffn_dim=FFN, word_embed_proj_dim=WIDTH, vocab_size=VOCAB,
                  max_position_embeddings=POSITIONS, pad_token_id=0, bos_token_id=1, eos_token_id=1),
       "learned positions from the attention mask's cumsum"),
    _e("hf_llama", "hf-decoder", _causal_lm("LlamaForCausalLM", "LlamaConfig", **_llama_like()),
       "GQA (4 query heads, 2 KV heads), RoPE, RMSNorm"),
    _e("hf_mistral", "hf-decoder", _causal_lm("MistralForCausalLM", "MistralConfig",
                                              **_llama_like(sliding_window=4)), "sliding-window mask (4)"),
    _e("hf_qwen2", "hf-decoder", _causal_lm("Qwen2ForCausalLM", "Qwen2Config", **_llama_like()), "qkv biases"),
    _e("hf_qwen3", "hf-decoder", _causal_lm("Qwen3ForCausalLM", "Qwen3Config", **_llama_like(head_dim=8)),
       "q/k RMSNorm per head"),
    _e("hf_gemma", "hf-decoder", _causal_lm("GemmaForCausalLM", "GemmaConfig", **_llama_like(head_dim=8)),
       "scaled embeddings, GeGLU, (1 + w) RMSNorm"),
    _e("hf_phi", "hf-decoder",
       _causal_lm("PhiForCausalLM", "PhiConfig", partial_rotary_factor=0.5, **_llama_like()),
       "partial rotary, parallel block, LayerNorm"),
    _e("hf_falcon", "hf-decoder",
       _causal_lm("FalconForCausalLM", "FalconConfig", num_hidden_layers=LAYERS, hidden_size=WIDTH,
                  num_attention_heads=HEADS, vocab_size=VOCAB, pad_token_id=0, bos_token_id=1, eos_token_id=1),
       "multi-query attention, rotary, parallel attention"),
    _e("hf_bloom", "hf-decoder",
       _causal_lm("BloomForCausalLM", "BloomConfig", n_layer=LAYERS, hidden_size=WIDTH, n_head=HEADS,
                  vocab_size=VOCAB, pad_token_id=0, bos_token_id=1, eos_token_id=1), "ALiBi position biases"),
    _e("hf_gpt_neox", "hf-decoder",
       _causal_lm("GPTNeoXForCausalLM", "GPTNeoXConfig", num_hidden_layers=LAYERS, hidden_size=WIDTH,
                  num_attention_heads=HEADS, intermediate_size=FFN, rotary_pct=0.5, vocab_size=VOCAB,
                  max_position_embeddings=POSITIONS, pad_token_id=0, bos_token_id=1, eos_token_id=1),
       "partial rotary, parallel residual"),
    # encoder-decoders
    _e("hf_t5", "hf-seq2seq",
       _seq2seq("T5ForConditionalGeneration", "T5Config", labels=True, num_layers=LAYERS, d_model=WIDTH, d_kv=16,
                num_heads=HEADS, d_ff=FFN, vocab_size=VOCAB, decoder_start_token_id=0, pad_token_id=0),
       "labels only: decoder inputs shifted from them; relative position buckets"),
    _e("hf_bart", "hf-seq2seq", _seq2seq("BartForConditionalGeneration", "BartConfig", **_bart_like()),
       "decoder_input_ids + decoder_attention_mask"),
    _e("hf_mbart", "hf-seq2seq", _seq2seq("MBartForConditionalGeneration", "MBartConfig", **_bart_like()),
       "pre-norm BART, decoder_input_ids"),
    _e("hf_marian", "hf-seq2seq",
       _seq2seq("MarianMTModel", "MarianConfig", **_bart_like(decoder_vocab_size=VOCAB)),
       "sinusoidal positions, decoder_input_ids"),
    _e("hf_pegasus", "hf-seq2seq",
       _seq2seq("PegasusForConditionalGeneration", "PegasusConfig", labels=True, **_bart_like()),
       "labels only: decoder inputs shifted from them"),
    # vision, multimodal, audio
    _e("hf_vit", "hf-vision", _image_classifier("ViTForImageClassification", "ViTConfig", **_vit_cfg()),
       "patch embedding, class token, labels"),
    _e("hf_deit", "hf-vision", _image_classifier("DeiTForImageClassification", "DeiTConfig", **_vit_cfg()),
       "class + distillation tokens, labels"),
    _e("hf_swin", "hf-vision",
       _image_classifier("SwinForImageClassification", "SwinConfig", image_size=32, patch_size=4, embed_dim=16,
                         depths=[2, 2], num_heads=[2, 4], window_size=4), "shifted windows, patch merging"),
    _e("hf_convnext", "hf-vision",
       _image_classifier("ConvNextForImageClassification", "ConvNextConfig", num_stages=2, hidden_sizes=[16, 32],
                         depths=[1, 1]), "LayerNorm channels-first/last, layer scale"),
    _e("hf_clip", "hf-vision", clip, "CLIPModel: text + vision towers, return_loss=True"),
    _e("hf_whisper", "hf-audio", whisper, "conv front end + encoder, decoder_input_ids"),
    _e("hf_wav2vec2", "hf-audio", wav2vec2, "raw audio, padding mask, CTC labels"),
    _e("hf_hubert", "hf-audio", hubert, "group-norm feature extractor, base model"),
]
