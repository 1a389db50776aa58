"""Greedy continuation for the float64 family references (hf_llama_reference, hf_gemma_reference,
hf_phi3_reference): each step is a fresh causal pass over the whole prefix, the pick is the
argmax (ties to the lowest id), and the top-2 margin of each pick is returned so a fixture can
reject seeds whose continuation an f32 engine could split."""
import numpy as np


def greedy(logits_fn, prompt, n_new):
    """logits_fn(ids) -> [T x vocab]; returns (the n_new picked ids, their top-2 margins)."""
    ids, margins = list(prompt), []
    for _ in range(n_new):
        row = logits_fn(ids)[-1]
        best = int(np.argmax(row))
        second = np.partition(row, -2)[-2]
        margins.append(float(row[best] - second))
        ids.append(best)
    return ids[len(prompt):], margins
