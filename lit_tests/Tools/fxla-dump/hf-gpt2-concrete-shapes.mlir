// RUN: fxla-dump %S/Inputs/tiny_gpt2.py:gpt2 --input-shape 2x16:i64 --concrete-shapes --concrete-args use_cache=false --stage fxla --run | FileCheck %s
// RUN: fxla-dump %S/Inputs/tiny_gpt2.py:gpt2_with_mask --concrete-shapes --concrete-args '{"use_cache": false}' --stage graph --run | FileCheck %s --check-prefix=MASK
// RUN: not fxla-dump %S/Inputs/tiny_gpt2.py:gpt2 --input-shape 2x16:i64 --stage graph 2>&1 | FileCheck %s --check-prefix=NOSHAPES

// A Hugging Face GPT-2 (2 layers, width 64) dumps as fxla.compile(model, concrete_shapes=True,
// concrete_args={"use_cache": False}) compiles it: traced for these int64 token ids.  --run compares its
// CausalLMOutputWithCrossAttentions with eager PyTorch's, one line per leaf.
// CHECK-LABEL: func.func @main
// CHECK-SAME:    tensor<2x16xi64>
// CHECK:       // run: output.logits: float32[2, 16, 128], max |fxla - eager| = {{[0-9.e+-]+}} (match)
// CHECK-NEXT:  // run: max |fxla - eager| = {{[0-9.e+-]+}} (match: 1 of 1 leaves match)

// The factory's own example inputs: token ids and an attention_mask keyword input.
// MASK:        %input_ids : {{.*}} = placeholder[target=input_ids]
// MASK:        %attention_mask : {{.*}} = placeholder[target=attention_mask]
// MASK:        // run: output.logits: float32[2, 16, 128], {{.*}} (match)

// Without --concrete-shapes the trace stops at forward's **kwargs, and the error names fxla-dump's flags.
// NOSHAPES:    fxla-dump: error: cannot trace the variadic parameter '**kwargs' of GPT2LMHeadModel.forward
// NOSHAPES:    fxla-dump: --concrete-shapes is fxla.compile(model, concrete_shapes=True)
// NOSHAPES-NOT: Traceback
