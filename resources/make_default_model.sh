#!/usr/bin/env bash
# Regenerates resources/default-model.cflow, the model cflow-studio opens when started
# without arguments: the PyTorch reference case arch2_4_combined (paper geometry: d 64,
# 6 layers, MoE 8 experts top-2, DelayedSum with dense delay 1 and expert delay 2) with
# RANDOM weights, a ChatML chat template and a general.name that says it is untrained.
# It exists so the inspector's charts have something to show; a trained model replaces it.
#
#   resources/make_default_model.sh [path/to/cflow]     (default: build/app/cflow)
#
# Needs Debian's /usr/bin/python3 with torch (tests/reference/README.md). Deterministic:
# the reference script writes the same bytes on every run, and so does the converter.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cflow="${1:-$repo/build/app/cflow}"
python=/usr/bin/python3
out="$repo/resources/default-model.cflow"
# The converter names the model after the Hugging Face folder (general.name), so the folder
# name is what the studio shows: it must say the weights are random.
name="cflow demo MoE - random weights, not trained"

[[ -x "$cflow" ]] || { echo "make_default_model.sh: cflow CLI not found at '$cflow' (build it, or pass its path)" >&2; exit 1; }
"$python" -c "import torch" 2>/dev/null || { echo "make_default_model.sh: $python cannot import torch" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$python" "$repo/tests/reference/make_reference_models.py" "$work/ref" --only arch2_4_combined
mv "$work/ref/arch2_4_combined" "$work/$name"
rm -f "$work/$name/trace.json"  # the parity trace is not part of the model

# ChatML, the template the studio's chat view formats conversations with. The random
# vocabulary has no <|im_start|> token, so the markers are spelled out in ordinary tokens.
"$python" - "$work/$name/tokenizer_config.json" <<'PY'
import json, sys
path = sys.argv[1]
with open(path, encoding="utf-8") as f:
    cfg = json.load(f)
cfg["chat_template"] = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")
with open(path, "w", encoding="utf-8") as f:
    json.dump(cfg, f, indent=2)
    f.write("\n")
PY

"$cflow" convert "$work/$name" -o "$out.tmp" --quant q8_0
mv "$out.tmp" "$out"
"$cflow" inspect "$out" | grep -E "general.name|chat_template|n_experts|top_k|delay" || true
echo "wrote $out ($(stat -c %s "$out") bytes)"
