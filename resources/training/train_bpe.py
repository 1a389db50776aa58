#!/usr/bin/env python3
"""Trains the project's byte-level BPE vocabulary on the training split.

    python3 resources/training/train_bpe.py CORPUS_DIR OUT_DIR [--vocab-size 4096] [--cflow PATH]

Reads CORPUS_DIR/train.txt (make_corpus.py), writes OUT_DIR/tokenizer.json,
OUT_DIR/tokenizer_config.json and OUT_DIR/bpe_manifest.json (token counts per split, bytes per
token, timings, check results).

Vocabulary: <|bos|> = 0, <|eos|> = 1 (special), the 256 bytes = 2..257 (all of them, so every
byte string is encodable), then VOCAB_SIZE - 258 merges. Pre-tokenisation and the byte-level
mapping are those of bpe_tokenizer.py (GPT-2's regex after splitting off single digits; the
C++ engine runs the same as tokenizer.ggml.pre = "starcoder"). Training is the classic
algorithm over word frequencies: count every adjacent pair inside every distinct pre-token
weighted by its frequency, merge the most frequent pair (ties: the pair whose byte strings sort
first), and update only the words that contain it (an index pair -> words, and a max-heap with
lazy invalidation), so each merge costs time proportional to the words it touches.

Self-checks (the script fails if any does not hold):
  * each of the 256 byte tokens decodes to its byte, and encode/decode round-trips every
    character U+0000..U+00FF, a string of all of them, and a few multi-byte characters;
  * encode/decode round-trips the whole validation text exactly;
  * with --cflow: the C++ engine (`cflow tokenize OUT_DIR/tokenizer.json --ids`) gives the same
    ids as the Python encoder on the validation text and on the check strings.
"""
import argparse
import collections
import heapq
import json
import os
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpe_tokenizer as bt  # noqa: E402

CHECK_STRINGS = [
    "Once upon a time, there was a little cat named Tom.", "He said, \"I'm 3 years old!\" It's 12:30.",
    "  two  spaces\tand a tab\nnew line\n\n", "caf\u00e9 na\u00efve \u00fcber", "\u4f60\u597d \U0001F600",
    "they'll we've I'd you're", "", " ", "\u2581odd\u2581marks \u00a0nbsp", "x" * 300,
]


def word_counts(stories):
    counts = collections.Counter()
    for story in stories:
        counts.update(bt.pre_tokenize(story))
    return counts


def train(word_freq, vocab_size, log_every=500):
    """-> merges [(left, right)] in rank order."""
    words = []  # list of symbol lists (byte-level strings)
    freqs = []
    for w, f in word_freq.items():
        words.append(list(bt.to_symbols(w)))
        freqs.append(f)
    pair_count = collections.Counter()
    pair_words = collections.defaultdict(set)
    for i, syms in enumerate(words):
        f = freqs[i]
        for a, b in zip(syms, syms[1:]):
            pair_count[(a, b)] += f
            pair_words[(a, b)].add(i)
    heap = [(-c, p) for p, c in pair_count.items()]
    heapq.heapify(heap)
    merges = []
    pieces = set(bt.BYTE_TO_UNICODE.values())
    n_new = vocab_size - len(bt.SPECIALS) - 256
    new_tokens = 0
    start = time.monotonic()
    while new_tokens < n_new and heap:
        neg, pair = heapq.heappop(heap)
        if pair_count.get(pair, 0) != -neg:
            continue  # stale entry: the count changed since it was pushed
        if -neg < 2:
            break  # nothing occurs twice any more: more merges would only memorise
        merges.append(pair)
        a, b = pair
        merged = a + b
        if merged not in pieces:  # two merges can build the same string ("ab"+"c", "a"+"bc"): one token
            pieces.add(merged)
            new_tokens += 1
        changed = set()
        for i in list(pair_words[pair]):
            syms = words[i]
            f = freqs[i]
            # remove this word's old pairs, merge, add its new pairs
            for x, y in zip(syms, syms[1:]):
                pair_count[(x, y)] -= f
                changed.add((x, y))
            out = []
            j = 0
            while j < len(syms):
                if j + 1 < len(syms) and syms[j] == a and syms[j + 1] == b:
                    out.append(merged)
                    j += 2
                else:
                    out.append(syms[j])
                    j += 1
            words[i] = out
            for x, y in zip(out, out[1:]):
                pair_count[(x, y)] += f
                pair_words[(x, y)].add(i)
                changed.add((x, y))
        del pair_count[pair]
        del pair_words[pair]
        changed.discard(pair)
        for p in changed:
            c = pair_count.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pair_count.pop(p, None)
        if log_every and len(merges) % log_every == 0:
            print("train_bpe: %d merges, %d/%d new tokens (%.1f s)" % (len(merges), new_tokens, n_new,
                                                                       time.monotonic() - start), flush=True)
    return merges


def build_vocab(merges):
    vocab = {s: i for i, s in enumerate(bt.SPECIALS)}
    for b in range(256):
        vocab[bt.BYTE_TO_UNICODE[b]] = len(vocab)
    for a, b in merges:
        if a + b not in vocab:
            vocab[a + b] = len(vocab)
    return vocab


def self_check(tok, valid_text):
    problems = []
    for b in range(256):
        i = tok.vocab[bt.BYTE_TO_UNICODE[b]]
        if tok.token_bytes(i) != bytes([b]):
            problems.append("byte token %d does not decode to byte %d" % (i, b))
    texts = [chr(c) for c in range(256)] + ["".join(chr(c) for c in range(256))] + CHECK_STRINGS
    for t in texts:
        if tok.decode(tok.encode(t)) != t:
            problems.append("round trip fails for %r" % t[:40])
    ids = tok.encode(valid_text)
    if tok.decode(ids) != valid_text:
        problems.append("round trip of the validation text fails")
    return problems


def engine_check(cflow, tokenizer_path, tok, texts):
    """The C++ tokenizer (cflow tokenize) must give the Python encoder's ids."""
    problems = []
    for t in texts:
        proc = subprocess.run([cflow, "tokenize", tokenizer_path, "--ids"], input=t.encode("utf-8"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
        if proc.returncode != 0:
            return ["cflow tokenize failed: %s" % proc.stderr.decode("utf-8", "replace").strip()]
        got = [int(x) for x in proc.stdout.split()]
        want = tok.encode(t)
        if got != want:
            k = next((i for i, (g, w) in enumerate(zip(got, want)) if g != w), min(len(got), len(want)))
            problems.append("engine ids differ for %r at token %d: engine %s, python %s" % (
                t[:40], k, got[k:k + 5], want[k:k + 5]))
    return problems


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("corpus_dir")
    p.add_argument("out_dir")
    p.add_argument("--vocab-size", type=int, default=4096)
    p.add_argument("--max-positions", type=int, default=512, help="model_max_length in tokenizer_config.json")
    p.add_argument("--cflow", help="check the C++ tokenizer against the Python one with this cflow CLI")
    args = p.parse_args(argv)
    if args.vocab_size < 258:
        p.error("--vocab-size must be at least 258 (2 special + 256 byte tokens)")

    t0 = time.monotonic()
    train_stories = bt.read_stories(os.path.join(args.corpus_dir, "train.txt"))
    freq = word_counts(train_stories)
    t1 = time.monotonic()
    print("train_bpe: %d stories, %d distinct pre-tokens (%.1f s)" % (len(train_stories), len(freq), t1 - t0))
    merges = train(freq, args.vocab_size)
    t2 = time.monotonic()
    vocab = build_vocab(merges)
    print("train_bpe: %d merges, vocabulary %d (%.1f s)" % (len(merges), len(vocab), t2 - t1))

    os.makedirs(args.out_dir, exist_ok=True)
    tok_path = os.path.join(args.out_dir, "tokenizer.json")
    with open(tok_path, "w", encoding="utf-8", newline="\n") as f:
        json.dump(bt.tokenizer_json(vocab, merges), f, indent=1, ensure_ascii=False)
        f.write("\n")
    with open(os.path.join(args.out_dir, "tokenizer_config.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(bt.tokenizer_config(args.max_positions), f, indent=2)
        f.write("\n")

    tok = bt.Tokenizer.load(tok_path)  # check what was written, not the in-memory tables
    with open(os.path.join(args.corpus_dir, "valid.txt"), "r", encoding="utf-8") as f:
        valid_text = f.read()
    problems = self_check(tok, valid_text)
    engine = None
    if args.cflow:
        problems += engine_check(args.cflow, tok_path, tok, [valid_text] + [t for t in CHECK_STRINGS if t])
        engine = "same ids as cflow tokenize on valid.txt and %d check strings" % len([t for t in CHECK_STRINGS if t])
    if problems:
        for pr in problems[:20]:
            print("train_bpe: CHECK FAILED: " + pr, file=sys.stderr)
        return 1

    splits = {}
    for name in ("train", "valid", "test"):
        path = os.path.join(args.corpus_dir, name + ".txt")
        if not os.path.exists(path):
            continue
        stories = bt.read_stories(path)
        n_tok = sum(len(tok.encode(s)) for s in stories)
        n_bytes = sum(len(s.encode("utf-8")) for s in stories)
        splits[name] = {"stories": len(stories), "tokens": n_tok, "bytes": n_bytes,
                        "bytes_per_token": round(n_bytes / max(n_tok, 1), 3)}
    t3 = time.monotonic()
    manifest = {"vocab_size": len(vocab), "merges": len(merges), "specials": {s: vocab[s] for s in bt.SPECIALS},
                "pre_tokenizer": "Digits(individual) + ByteLevel GPT-2 regex (tokenizer.ggml.pre starcoder)",
                "splits": splits, "seconds": {"count": round(t1 - t0, 1), "merge": round(t2 - t1, 1),
                                              "check_and_count": round(t3 - t2, 1)},
                "self_check": "256 byte tokens, %d check strings and valid.txt round-trip" % (len(CHECK_STRINGS) + 257),
                "engine_check": engine}
    with open(os.path.join(args.out_dir, "bpe_manifest.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    print("train_bpe: checks passed; tokens %s" % ", ".join("%s %d (%.2f B/tok)" % (
        k, v["tokens"], v["bytes_per_token"]) for k, v in splits.items()))
    if engine:
        print("train_bpe: engine check: " + engine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
