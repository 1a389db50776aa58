#!/usr/bin/env -S /usr/bin/python3
"""Trains one architecture of the model zoo on the corpus, resumable, and exports it.

    /usr/bin/python3 resources/training/train.py --arch arch2_4_combined \\
        --corpus CORPUS_DIR --tokenizer BPE_DIR --run-dir RUNS/arch2_4_combined [--resume]

Every model of the zoo gets the same geometry, data order, optimiser, schedule and seed; only
--arch differs. Defaults (documented in README.md):
  geometry   d 128, 6 layers (arch5: 2 blocks x 3 iterations), head_dim 16 -> 8 heads (MHA),
             dense d_ff 4d = 512, 8 experts top-2 with hidden d = 128, GeGLU (tanh GELU), router
             softmax_topk, pre_moe_layernorm, RoPE theta 1e4, tied input/output embeddings,
             max_position_embeddings 512 (trained on 256-token windows)
  data       the training split tokenised once (cached as uint16 next to the tokenizer), each story
             as <|bos|> story <|eos|>, concatenated; the batch of step s = --batch (8) random windows
             of --seq (256) + 1 tokens drawn by numpy's default_rng([seed, s]): the same for every
             model and across resumes, with no sampler state to save; --steps 1000 = 2.05 M tokens
  optimiser  AdamW (betas 0.9/0.95, eps 1e-8, weight decay 0.1 on matrices, none on norms),
             peak lr 2e-3, linear warmup 5% of the steps, cosine decay to 10% of peak,
             gradient clipping at global norm 1.0
  router     Switch-Transformer load-balancing loss E * sum_e f_e P_e, averaged over the MoE
             applications, added with coefficient --aux-coef 0.01 (1.0 = perfectly uniform)
  seed       --seed 1234 for the weights (torch) and the batches (numpy)

RUN_DIR gets checkpoint.pt (every --ckpt-every steps and at the end; written atomically),
log.jsonl (one line per --log-every steps: loss, aux, lr, grad norm, tokens/s; plus an entry per
evaluation: validation loss and perplexity), export/<arch>/ (HF folder: config.json
CflowForCausalLM, model.safetensors, tokenizer.json, tokenizer_config.json, exactly as
tests/reference writes them) and final.json. --resume continues from checkpoint.pt (the
hyper-parameters must match). With --cflow the export is converted (f32) and 16 tokens are
generated through the C++ engine as a smoke test.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, HERE)
import bpe_tokenizer as bt  # noqa: E402
import model as M  # noqa: E402

sys.path.insert(0, os.path.join(M.REPO, "tests", "reference"))
from make_reference_models import safetensors_bytes  # noqa: E402

# Hyper-parameters that must be equal to resume a checkpoint (the rest may change between sittings).
RESUME_KEYS = ["arch", "d_model", "n_layers", "head_dim", "n_kv_heads", "n_experts", "top_k", "seq", "batch",
               "steps", "lr", "min_lr_ratio", "warmup", "weight_decay", "aux_coef", "seed", "tie_embeddings",
               "max_positions"]


# ----------------------------------------------------------------------------- data

def token_cache(tokenizer_dir, corpus_dir, split, tok):
    """The split as one uint16 stream <|bos|> s1 <|eos|> <|bos|> s2 <|eos|> ..., cached on disk next
    to the tokenizer (keyed by the corpus file's size and mtime and the tokenizer's mtime)."""
    src = os.path.join(corpus_dir, split + ".txt")
    st = os.stat(src)
    vt = os.stat(os.path.join(tokenizer_dir, "tokenizer.json"))
    path = os.path.join(tokenizer_dir, "tokens_%s_%d_%d_%d.npy" % (split, st.st_size, int(st.st_mtime), int(vt.st_mtime)))
    if os.path.exists(path):
        return np.load(path)
    if len(tok) > 65535:
        raise ValueError("vocabulary of %d does not fit uint16" % len(tok))
    start = time.monotonic()
    ids = []
    for story in bt.read_stories(src):
        ids.append(tok.bos_id)
        ids.extend(tok.encode(story))
        ids.append(tok.eos_id)
    arr = np.asarray(ids, dtype=np.uint16)
    tmp = path + ".tmp.npy"
    np.save(tmp, arr)
    os.replace(tmp, path)
    print("train: tokenised %s: %d tokens in %.1f s" % (split, arr.size, time.monotonic() - start), flush=True)
    return arr


def batch_at(tokens, step, args):
    """--batch windows of --seq + 1 tokens at offsets drawn from default_rng([seed, step])."""
    rng = np.random.default_rng([args.seed, step])
    starts = rng.integers(0, tokens.size - args.seq - 1, size=args.batch)
    win = np.stack([tokens[s:s + args.seq + 1] for s in starts]).astype(np.int64)
    x = torch.from_numpy(win[:, :-1])
    y = torch.from_numpy(win[:, 1:])
    return x, y


def eval_windows(tokens, seq, max_tokens):
    """Consecutive non-overlapping windows from the start of the split (deterministic)."""
    n = min((tokens.size - 1) // seq, max(1, max_tokens // seq))
    return [tokens[i * seq:i * seq + seq + 1].astype(np.int64) for i in range(n)]


@torch.no_grad()
def evaluate_loss(model, windows, batch):
    model.eval()
    total, count = 0.0, 0
    for i in range(0, len(windows), batch):
        w = torch.from_numpy(np.stack(windows[i:i + batch]))
        logits, _ = model(w[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), w[:, 1:].reshape(-1),
                                                 reduction="sum")
        total += float(loss)
        count += w[:, 1:].numel()
    model.train()
    return total / max(count, 1), count


# ----------------------------------------------------------------------------- optimisation

def lr_at(step, args):
    warm = max(1, int(round(args.warmup * args.steps)))
    if step < warm:
        return args.lr * (step + 1) / warm
    progress = min(1.0, (step - warm) / max(1, args.steps - warm))
    return args.lr * (args.min_lr_ratio + (1 - args.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def make_optimizer(model, args):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": args.weight_decay},
                              {"params": no_decay, "weight_decay": 0.0}], lr=args.lr, betas=(0.9, 0.95), eps=1e-8)


def save_checkpoint(path, model, opt, step, args, cfg):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step, "args": vars(args),
                "config": cfg, "torch_rng": torch.get_rng_state()}, tmp)
    os.replace(tmp, path)


# ----------------------------------------------------------------------------- export

def dump_json(obj, path):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(obj, f, indent=2, sort_keys=True, ensure_ascii=False)
        f.write("\n")


def export_hf(model, cfg, tokenizer_dir, out_dir):
    """HF folder as tests/reference writes them; the folder name becomes the .cflow's general.name."""
    os.makedirs(out_dir, exist_ok=True)
    dump_json(cfg, os.path.join(out_dir, "config.json"))
    with open(os.path.join(out_dir, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes(model.hf_tensors()))
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(tokenizer_dir, name), os.path.join(out_dir, name))
    # The reference model must accept the folder as it is (no missing or unused tensors).
    M.ref.CflowModel(cfg, model.hf_tensors())
    return out_dir


def engine_smoke_test(cflow, export_dir, run_dir, prompt="Once upon a time", n=16):
    out = os.path.join(run_dir, "engine-f32.cflow")
    subprocess.run([cflow, "convert", export_dir, "-o", out, "--quant", "f32", "--quiet"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc = subprocess.run([cflow, "generate", out, "-p", prompt, "-n", str(n), "--temp", "0", "--seed", "1",
                           "--no-stats"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        raise RuntimeError("cflow generate failed: " + proc.stderr.decode("utf-8", "replace"))
    return out, proc.stdout.decode("utf-8", "replace")


# ----------------------------------------------------------------------------- main

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", required=True, choices=sorted(M.ARCHS))
    p.add_argument("--corpus", required=True, help="make_corpus.py output (train.txt, valid.txt)")
    p.add_argument("--tokenizer", required=True, help="train_bpe.py output (tokenizer.json, tokenizer_config.json)")
    p.add_argument("--run-dir", required=True)
    p.add_argument("--resume", action="store_true", help="continue from RUN_DIR/checkpoint.pt")
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--n-layers", type=int, default=6, help="effective depth (arch5: blocks x iterations)")
    p.add_argument("--head-dim", type=int, default=16)
    p.add_argument("--n-kv-heads", type=int, default=0, help="0 = as many as query heads")
    p.add_argument("--n-experts", type=int, default=8)
    p.add_argument("--top-k", type=int, default=2)
    p.add_argument("--no-tie-embeddings", dest="tie_embeddings", action="store_false")
    p.add_argument("--max-positions", type=int, default=512)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--min-lr-ratio", type=float, default=0.1)
    p.add_argument("--warmup", type=float, default=0.05, help="fraction of --steps")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--clip", type=float, default=1.0)
    p.add_argument("--aux-coef", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--threads", type=int, default=1,
                   help="torch threads; 1 is fastest on a shared machine (2 threads ran 10x slower under load)")
    p.add_argument("--ckpt-every", type=int, default=100)
    p.add_argument("--eval-every", type=int, default=500)
    p.add_argument("--eval-tokens", type=int, default=65536, help="validation tokens per evaluation")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--max-minutes", type=float, default=0, help="stop (with a checkpoint) after this long; 0 = no limit")
    p.add_argument("--cflow", help="after export: convert with this cflow CLI and generate 16 tokens")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    os.makedirs(args.run_dir, exist_ok=True)
    tok = bt.Tokenizer.load(os.path.join(args.tokenizer, "tokenizer.json"))
    cfg = M.make_config(args.arch, vocab_size=len(tok), d_model=args.d_model, n_layers=args.n_layers,
                        head_dim=args.head_dim, n_kv_heads=args.n_kv_heads or None, n_experts=args.n_experts,
                        top_k=args.top_k, max_positions=args.max_positions, tie_embeddings=args.tie_embeddings,
                        bos_id=tok.bos_id, eos_id=tok.eos_id)
    train_tokens = token_cache(args.tokenizer, args.corpus, "train", tok)
    valid_tokens = token_cache(args.tokenizer, args.corpus, "valid", tok)
    if train_tokens.size <= args.seq + 1:
        sys.exit("train: the training split has %d tokens, fewer than one window of %d" % (train_tokens.size, args.seq))
    windows = eval_windows(valid_tokens, args.seq, args.eval_tokens)

    torch.manual_seed(args.seed)
    model = M.CflowTrainModel(cfg)
    model.init_weights(torch.Generator().manual_seed(args.seed))
    opt = make_optimizer(model, args)
    ckpt_path = os.path.join(args.run_dir, "checkpoint.pt")
    log_path = os.path.join(args.run_dir, "log.jsonl")
    step = 0
    if args.resume and os.path.exists(ckpt_path):
        ck = torch.load(ckpt_path)
        mismatch = [k for k in RESUME_KEYS if ck["args"].get(k) != getattr(args, k)]
        if mismatch:
            sys.exit("train: --resume: %s differ from the checkpoint (%s)" % (
                ", ".join(mismatch), ", ".join("%s=%r" % (k, ck["args"].get(k)) for k in mismatch)))
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        step = ck["step"]
        print("train: resumed %s at step %d" % (args.arch, step), flush=True)
    elif os.path.exists(ckpt_path) and not args.resume:
        sys.exit("train: %s exists; pass --resume to continue it or remove it to start over" % ckpt_path)

    n_params = sum(p.numel() for p in model.parameters())
    print("train: %s, %d parameters, %d train tokens, %d validation windows, step %d/%d" % (
        args.arch, n_params, train_tokens.size, len(windows), step, args.steps), flush=True)
    log = open(log_path, "a", encoding="utf-8")
    start = time.monotonic()
    t_last, tokens_since = time.monotonic(), 0
    stopped_early = False
    while step < args.steps:
        lr = lr_at(step, args)
        for g in opt.param_groups:
            g["lr"] = lr
        x, y = batch_at(train_tokens, step, args)
        logits, stats = model(x)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        aux = stats.aux_loss()
        opt.zero_grad(set_to_none=True)
        (loss + args.aux_coef * aux).backward()
        gnorm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip))
        opt.step()
        step += 1
        tokens_since += x.numel()
        if step % args.log_every == 0 or step == args.steps:
            now = time.monotonic()
            usage = torch.stack(stats.usage).mean(0).tolist() if stats.usage else []
            rec = {"step": step, "loss": round(float(loss), 4), "aux": round(float(aux), 4), "lr": lr,
                   "grad_norm": round(gnorm, 3), "tok_per_s": round(tokens_since / (now - t_last), 1),
                   "expert_usage": [round(u, 3) for u in usage]}
            log.write(json.dumps(rec) + "\n")
            log.flush()
            print("step %5d  loss %.4f  aux %.3f  lr %.2e  gnorm %.2f  %.0f tok/s" % (
                step, rec["loss"], rec["aux"], lr, gnorm, rec["tok_per_s"]), flush=True)
            t_last, tokens_since = now, 0
        if step % args.eval_every == 0 or step == args.steps:
            vloss, vcount = evaluate_loss(model, windows, args.batch)
            log.write(json.dumps({"step": step, "val_loss": round(vloss, 5), "val_ppl": round(math.exp(vloss), 4),
                                  "val_tokens": vcount}) + "\n")
            log.flush()
            print("step %5d  validation loss %.4f  perplexity %.3f (%d tokens)" % (step, vloss, math.exp(vloss), vcount),
                  flush=True)
        if step % args.ckpt_every == 0 or step == args.steps:
            save_checkpoint(ckpt_path, model, opt, step, args, cfg)
        if args.max_minutes and time.monotonic() - start > 60 * args.max_minutes and step < args.steps:
            save_checkpoint(ckpt_path, model, opt, step, args, cfg)
            print("train: --max-minutes reached at step %d; rerun with --resume to continue" % step, flush=True)
            stopped_early = True
            break
    log.close()
    if stopped_early:
        return 3  # run.sh treats 3 as "not finished yet"

    vloss, vcount = evaluate_loss(model, windows, args.batch)
    export_dir = export_hf(model, cfg, args.tokenizer, os.path.join(args.run_dir, "export", args.arch))
    final = {"arch": args.arch, "steps": step, "parameters": n_params, "val_loss": vloss, "val_ppl": math.exp(vloss),
             "val_tokens": vcount, "export": export_dir, "config": cfg,
             "train_seconds_this_sitting": round(time.monotonic() - start, 1)}
    if args.cflow:
        cflow_file, text = engine_smoke_test(args.cflow, export_dir, args.run_dir)
        final["engine_smoke_test"] = {"file": cflow_file, "greedy_16": text}
        print("train: engine (f32, greedy, 16 tokens): %r" % text, flush=True)
    dump_json(final, os.path.join(args.run_dir, "final.json"))
    print("train: done: %s validation perplexity %.3f; exported %s" % (args.arch, math.exp(vloss), export_dir),
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
