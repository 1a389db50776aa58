#!/usr/bin/env python3
"""Renders RUNS/results.json (evaluate.py) as resources/training/RESULTS.md, our Table 4.1.

    python3 resources/training/make_results.py RUNS/results.json [-o resources/training/RESULTS.md]

Every number comes from results.json; the sentences under "Paper findings" state what was
measured and whether each of the paper's qualitative claims holds by the rule written next to it.
Hand-written commentary goes between `<!-- commentary:KEY -->` and `<!-- /commentary -->` in
RESULTS.md and is kept when the file is regenerated. Standard library only.
"""
import argparse
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ORDER = ["arch1_decoupled_streams", "arch2_4_combined", "arch2_4_sync", "arch3_pipeline_registers",
         "arch4_async_experts", "arch5_fixed_point"]
TS = ("tinystories_sample", "tinystories_prefix")
SAME_QUALITY_REL = 0.02  # |delta ppl| / ppl at or below this counts as "no measurable quality cost" (one seed)


def mb(n):
    return "%.2f" % (n / 1e6)


def fmt(x, digits=2):
    return "-" if x is None else ("%.*f" % (digits, x))


def commentary_blocks(path):
    if not os.path.exists(path):
        return {}
    with open(path, "r", encoding="utf-8") as f:
        text = f.read()
    return {m.group(1): m.group(2) for m in re.finditer(r"<!-- commentary:(\S+) -->\n(.*?)<!-- /commentary -->",
                                                        text, re.S)}


def slot(blocks, key):
    body = blocks.get(key, "_(no commentary yet)_\n")
    return "<!-- commentary:%s -->\n%s<!-- /commentary -->\n" % (key, body)


def label(arch):
    return arch + ("†" if arch == "arch2_4_sync" else "")  # the ablation


def kl(x):
    """A KL divergence in nats: small ones in scientific notation, so that none prints as 0.0000."""
    return ("%.1e" % x) if x < 1e-3 else ("%.4f" % x)


def tf_kl(m):
    tf = m.get("teacher_forced_top1", {})
    if "q8_0_mean_kl" not in tf:
        return ""
    return " (%s / %s)" % (kl(tf["q8_0_mean_kl"]), kl(tf["q4_0_mean_kl"]))


def table(models):
    head = ("| architecture | style | δd | δe | params (active) | valid PPL | test PPL | TinyStories PPL "
            "(sample / prefix) | test / TinyStories-sample PPL, engine q8_0 | B_naive | B_critical | reduction | B_crit q8_0 file | f32 / q8_0 / q4_0 / vflow MB "
            "| tok/s 1T / 2T | greedy f32 = torch | q8_0 / q4_0 greedy top-1 | q8_0 / q4_0 teacher-forced top-1 (mean KL, nats) |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for m in models:
        cp, f, pt, pe = m["critical_path"], m["files"], m["ppl_torch"], m.get("ppl_engine", {})
        lines.append("| %s | %s | %d | %d | %.2fM (%.2fM) | %s | %s | %s / %s | %s / %s | %s | %s | %.2fx | %s | %s / %s / %s / %s "
                     "| %.0f / %.0f | %s | %.2f / %.2f | %s / %s%s |" % (
                         label(m["arch"]), m["combine_style"], m["dense_delay"],
                         m["expert_delay"], m["parameters"] / 1e6, m["active_parameters"] / 1e6,
                         fmt(pt.get("valid")), fmt(pt.get("test")), fmt(pt.get(TS[0])), fmt(pt.get(TS[1])),
                         fmt(pe.get("test")), fmt(pe.get(TS[0])),
                         fmt(cp["ideal_b_naive_mib"], 3), fmt(cp["ideal_b_critical_mib"], 3), cp["ideal_reduction"],
                         fmt(cp.get("actual_b_critical_mib"), 3), mb(f["f32.cflow"]), mb(f["q8_0.cflow"]),
                         mb(f["q4_0.cflow"]), mb(f["q8_0.vflow"]), m["decode_tok_s"]["1"], m["decode_tok_s"]["2"],
                         "yes" if m["greedy"]["f32_identical"] else "**no**", m["greedy"]["q8_0_top1_agreement"],
                         m["greedy"]["q4_0_top1_agreement"],
                         fmt(m.get("teacher_forced_top1", {}).get("q8_0"), 3),
                         fmt(m.get("teacher_forced_top1", {}).get("q4_0"), 3), tf_kl(m)))
    return "\n".join(lines) + "\n"


def validation_table(models, blocks):
    """The converter's own validation (`cflow convert --validate`) of each export at q8_0 and q4_0."""
    rows = [m for m in models if m.get("conversion_validation")]
    if not rows:
        return ("\n## Conversion validation\n\nNot in this results.json (evaluated before `evaluate.py` ran "
                "`cflow convert --validate`).\n\n%s" % slot(blocks, "conversion_validation"))

    def cell(v):
        if not v:
            return "-"
        return "%s: %.1f%% / %s / %s" % (v["verdict"], 100 * v["top1_agreement"], kl(v["mean_kl_nats"]),
                                        kl(v["max_kl_nats"]))

    def checks(m):
        vs = [v for v in m["conversion_validation"].values() if v]
        ok = all(v.get("tokenizer_round_trip") and v.get("tokenizer_matches_source") and v.get("template_renders")
                 and v.get("smoke_ok") for v in vs)
        return "ok" if ok else "**failed**"

    lines = ["| architecture | q8_0: verdict, top-1 / mean KL / max KL (nats) | q4_0: verdict, top-1 / mean KL / max KL (nats) "
             "| tokenizer, template, smoke generation |", "|---|---|---|---|"]
    for m in rows:
        cv = m["conversion_validation"]
        lines.append("| %s | %s | %s | %s |" % (label(m["arch"]),
                                              cell(cv.get("q8_0")), cell(cv.get("q4_0")), checks(m)))
    positions = sorted({v["positions"] for m in rows for v in m["conversion_validation"].values() if v})
    return ("\n## Conversion validation\n\nWhat the conversion wizard and `cflow convert EXPORT --quant Q --validate` "
            "report for each export: teacher-forced over %s positions of the converter's sample text, the share "
            "where the converted file's top-1 token equals that of the export converted to F32, and the KL "
            "divergence of the two next-token distributions; verdict pass (top-1 >= 90%% and mean KL <= 0.10 "
            "nats), warn (top-1 >= 70%%) or fail. The last column: the tokenizer round trip (and the same ids as "
            "the source's tokenizer), the template render and a smoke generation all passed.\n\n%s\n\n%s" % (
                " / ".join(str(p) for p in positions), "\n".join(lines), slot(blocks, "conversion_validation")))


def findings(by, blocks):
    out = []
    ppl = {a: m["ppl_torch"].get("test") for a, m in by.items()}

    # 1. dense delay is the bandwidth knob
    red = {a: m["critical_path"]["ideal_reduction"] for a, m in by.items()}
    dd1 = sorted(a for a, m in by.items() if m["dense_delay"] >= 1)
    others = sorted(a for a in by if a not in dd1)
    holds = bool(dd1) and bool(others) and all(red[a] > 1.0 for a in dd1) and all(red[a] <= 1.0 + 1e-9 for a in others)
    out.append("### 1. The dense delay is the bandwidth knob\n\nMeasured (critical-path analyzer, ideal streams): "
               "B_critical reduction %s for δd = 1 (%s) against %s for the others. Rule: holds if every δd = 1 "
               "model, and only those, has a reduction above 1 (needs both kinds evaluated). **%s.**\n\n%s" % (
                   ", ".join("%.2fx" % red[a] for a in dd1) or "-", ", ".join(dd1) or "none trained",
                   ", ".join("%s %.2fx" % (a, red[a]) for a in others) or "-",
                   "Holds" if holds else "Does not hold", slot(blocks, "dense_delay")))

    # 2. expert delay is quality-free
    a, b = ppl.get("arch2_4_combined"), ppl.get("arch2_4_sync")
    if a and b:
        rel = abs(a - b) / b
        verdict = "Holds" if rel <= SAME_QUALITY_REL else "Does not hold"
        text = ("test perplexity %.3f with the expert delay (arch2_4_combined, δe = 2) against %.3f without "
                "(arch2_4_sync, δe = 0): %+.3f (%.1f%%). Rule: holds if within %.0f%% (one seed per model; the "
                "run-to-run spread was not measured). **%s.**" % (a, b, a - b, 100 * rel, 100 * SAME_QUALITY_REL,
                                                                  verdict))
    else:
        text = "arch2_4_combined and arch2_4_sync are not both evaluated yet."
    out.append("### 2. The expert delay is quality-free\n\nMeasured: %s\n\n%s" % (text, slot(blocks, "expert_delay")))

    # 3. pre-dense routing gives the best perplexity
    ranked = sorted((p, a) for a, p in ppl.items() if p)
    if ranked and "arch4_async_experts" in by:
        best_p, best_a = ranked[0]
        rank = [a for _, a in ranked].index("arch4_async_experts") + 1
        text = ("arch4_async_experts ranks %d of %d by test perplexity (%.3f; best: %s %.3f). Rule: holds if "
                "it ranks first. **%s.**" % (rank, len(ranked), ppl["arch4_async_experts"], best_a, best_p,
                                              "Holds" if rank == 1 else "Does not hold"))
    else:
        text = "arch4_async_experts is not evaluated yet."
    out.append("### 3. Pre-dense routing (arch4) gives the best perplexity\n\nMeasured: %s\n\n%s" % (
        text, slot(blocks, "pre_dense_routing")))
    return "\n".join(out)


def render(results, blocks):
    models = sorted(results["models"], key=lambda m: ORDER.index(m["arch"]) if m["arch"] in ORDER else 99)
    by = {m["arch"]: m for m in models}
    first = models[0] if models else None
    parts = ["# Model zoo results: Table 4.1 at our scale\n",
             "Generated by `resources/training/make_results.py` from `results.json` (`evaluate.py`); regenerate "
             "with `resources/training/run.sh`. Do not edit the numbers by hand; commentary between the "
             "`commentary` markers is kept.\n"]
    if first:
        parts.append("Perplexity: PyTorch model (f32), our 4096-token byte-level BPE, windows of %d tokens, stride "
                     "%d, at most %d scored tokens per text; `valid`/`test` are held-out stories of our "
                     "generated corpus, TinyStories is text no model trained on. B_naive / B_critical: "
                     "`cflow critical-path --json`, MiB per token for ideal streams at 0.5 byte/weight, and the "
                     "q8_0 file's actual B_critical. Sizes in MB (10^6 bytes). Decode: `cflow bench` on the "
                     "q8_0 file, the map (page cache) line. Greedy: 64 tokens from \"Once upon a time\"; q8_0 / "
                     "q4_0 greedy top-1 is the share of those steps that agree with the f32 engine before the texts "
                     "diverge; teacher-forced top-1: the share of the first 4096 test tokens where the q8_0 / q4_0 "
                     "weights (round-tripped exactly as the converter stores them) predict the f32 model's next token, and in brackets the mean KL divergence KL(f32 || quantized) of the next-token distributions there. Training steps: %s. † = ablation, not one of the five candidates.\n" % (
                         first["ctx"], first["stride"], first["max_eval_tokens"],
                         ", ".join("%s %s" % (m["arch"], m.get("train_steps")) for m in models)))
        parts.append(table(models))
        parts.append(validation_table(models, blocks))
        parts.append("\n## Paper findings\n\n" + findings(by, blocks))
        parts.append("\n## Default model\n\n%s\n%s" % (
            "arch2_4_combined: test perplexity %s, B_critical reduction %.2fx; the best test perplexity is %s." % (
                fmt(by["arch2_4_combined"]["ppl_torch"].get("test"), 3),
                by["arch2_4_combined"]["critical_path"]["ideal_reduction"],
                min(((m["ppl_torch"].get("test") or 1e9, a) for a, m in by.items()))[1])
            if "arch2_4_combined" in by else "arch2_4_combined is not evaluated yet.", slot(blocks, "default_model")))
    else:
        parts.append("No model has been evaluated yet.\n")
    return "\n".join(parts)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results_json")
    p.add_argument("-o", "--output", default=os.path.join(HERE, "RESULTS.md"))
    args = p.parse_args(argv)
    with open(args.results_json, "r", encoding="utf-8") as f:
        results = json.load(f)
    text = render(results, commentary_blocks(args.output))
    with open(args.output, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print("make_results: wrote %s (%d models)" % (args.output, len(results["models"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
