#!/usr/bin/env python3
"""Generates the model zoo's training corpus with OUR engine from stories260K.

    python3 resources/training/make_corpus.py OUT [--stories N] [--cflow PATH] [--jobs 2]

One story = one `cflow generate` call on the f32 conversion of llama2.c's stories260K
(../shared/assets/models/llama2c-stories260K, MIT): seed i (a fixed, deterministic list:
--seed-base + 0 .. N-1), opening prompt PROMPTS[i % len(PROMPTS)], --temp 1.0 --top-p 0.9
with top-k and min-p switched off (so top-p alone truncates), at most 256 new tokens.
Calls run two at a time (--jobs); every finished story is appended to OUT/raw.jsonl at once,
so an interrupted run resumes where it stopped (seeds already in raw.jsonl are skipped).

Then: a story cut off by the token limit loses its unfinished last sentence; stories are
deduplicated (exact text, then whitespace-normalised text; the lowest seed wins); each is
assigned to train / valid / test by a hash of its normalised text (90 / 5 / 5), so the split
does not depend on generation order; OUT/{train,valid,test}.txt hold the stories separated
by one blank line (blank lines inside a story are collapsed first, so the separator is
unambiguous) and OUT/manifest.json the counts, a token estimate, the seed range, the
settings and the sha256 of every file.

Wall time: one story takes about 0.1-0.3 s of one core (stories260K decodes ~900 tok/s
single-threaded here), so the default 24,000 stories (about 3 M tokens of our 4096-token BPE)
take roughly 25-55 minutes with --jobs 2, depending on how loaded the machine is. The
measured rate of the test run is in resources/training/README.md.

Pure Python 3 (standard library only); either interpreter works.
"""
import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_MODEL_DIR = os.path.join(os.path.dirname(REPO), "shared", "assets", "models", "llama2c-stories260K")

# Fifty story openings (fixed order: story i uses PROMPTS[i % 50]). Plain ASCII, in the style the
# stories260K model was trained on, so it continues them fluently.
PROMPTS = [
    "Once upon a time",
    "Once upon a time, there was a little girl named",
    "Once upon a time, there was a little boy named",
    "One day,",
    "One sunny day,",
    "One rainy day,",
    "Lily and Ben were",
    "Tom had a big red ball.",
    "Sara wanted to",
    "There was a small dog named",
    "In a big forest, there lived",
    "The little bird",
    "Mom said,",
    "Tim and his mom went to the park.",
    "Anna found a shiny",
    "The cat sat on",
    "It was a cold winter day.",
    "Max liked to play with",
    "A little fish lived in",
    "The sun was shining and",
    "Sue had a new toy.",
    "Every morning,",
    "Jack was a happy boy who",
    "The old man had a garden.",
    "Once there was a kind",
    "Lucy looked out of the window and saw",
    "The bunny hopped into",
    "Ben's dad had a car.",
    "In the town, there was a",
    "Emma loved to draw.",
    "The princess lived in a castle",
    "A big truck came down the road.",
    "Sam was sad because",
    "The frog jumped",
    "Mia and her friend",
    "At school, the teacher said",
    "The bear woke up and",
    "Joe wanted a cookie.",
    "It was Kate's birthday.",
    "The little car could not",
    "Grandma made a pie",
    "Bob saw a big box.",
    "The duck and the cat",
    "Amy went to the beach with",
    "There was a tall tree in",
    "Spot the dog was very",
    "The moon was bright",
    "Timmy lost his",
    "A girl named Zoe had a",
    "The wind was blowing and",
]

SPLIT_PERCENT = (("train", 90), ("valid", 5), ("test", 5))  # by hash of the normalised story
_SENTENCE_END = re.compile(r'[.!?]["\')]?')


def normalise_ws(text):
    return " ".join(text.split())


def clean_story(text, hit_limit):
    """Strip trailing spaces per line, collapse blank lines (the file separator is a blank line) and,
    for a story stopped by the token limit, drop the unfinished last sentence."""
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    text = "\n".join(ln for ln in lines if ln.strip()).strip()
    if hit_limit:
        ends = list(_SENTENCE_END.finditer(text))
        text = text[:ends[-1].end()] if ends else ""
    return text


def split_of(story):
    """train / valid / test from the first 8 bytes of sha256(normalised story): stable across runs."""
    bucket = int.from_bytes(hashlib.sha256(normalise_ws(story).encode("utf-8")).digest()[:8], "big") % 100
    edge = 0
    for name, percent in SPLIT_PERCENT:
        edge += percent
        if bucket < edge:
            return name
    raise AssertionError("split percentages do not add up to 100")


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def find_cflow(explicit):
    for path in [explicit, os.environ.get("CFLOW"), os.path.join(REPO, "build", "app", "cflow")]:
        if path and os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.abspath(path)
    sys.exit("make_corpus: no cflow CLI found (pass --cflow PATH or set CFLOW)")


def convert_source_model(cflow, model_dir, work_dir):
    out = os.path.join(work_dir, "stories260K-f32.cflow")
    if not os.path.exists(out):
        tmp = out + ".tmp"
        subprocess.run([cflow, "convert", os.path.join(model_dir, "stories260K.bin"), "--tokenizer",
                        os.path.join(model_dir, "tok512.bin"), "-o", tmp, "--quant", "f32", "--quiet"],
                       check=True, stdout=subprocess.DEVNULL)
        os.replace(tmp, out)
    return out


def generate_one(cflow, model, seed, prompt, args):
    """One story: the CLI prints prompt + generated text on stdout; stats go to stderr (off)."""
    cmd = [cflow, "generate", model, "-p", prompt, "-n", str(args.max_tokens), "--temp", str(args.temp),
           "--top-p", str(args.top_p), "--top-k", "0", "--min-p", "0", "--seed", str(seed), "--threads", "1"]
    # Without --no-stats the CLI prints a summary line on stderr that says whether the story
    # ended at </s> ("stop: end_of_generation") or at the token limit.
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    if proc.returncode != 0:
        raise RuntimeError("cflow generate seed %d failed (rc %d): %s" % (seed, proc.returncode,
                                                                        proc.stderr.decode("utf-8", "replace")[-500:]))
    stderr = proc.stderr.decode("utf-8", "replace")
    m = re.search(r"generated (\d+) tokens.*stop: (\S+)", stderr)
    if not m:
        raise RuntimeError("cflow generate seed %d: no summary line on stderr: %r" % (seed, stderr[-300:]))
    return {"seed": seed, "prompt": prompt, "text": proc.stdout.decode("utf-8", "replace"),
            "generated_tokens": int(m.group(1)), "stop": m.group(2)}


def load_raw(path):
    done = {}
    if os.path.exists(path):
        with open(path, "r", encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by an interrupted write: regenerated below
                done[rec["seed"]] = rec
    return done


def generate_all(args, cflow, model, raw_path):
    seeds = list(range(args.seed_base, args.seed_base + args.stories))
    done = load_raw(raw_path)
    todo = [s for s in seeds if s not in done]
    if done:
        print("make_corpus: %d of %d stories already in %s" % (len(seeds) - len(todo), len(seeds), raw_path))
    start = time.monotonic()
    with open(raw_path, "a", encoding="utf-8") as raw, \
            concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        # Threads only wait on the child processes; the children do the work.
        futures = {pool.submit(generate_one, cflow, model, s, PROMPTS[(s - args.seed_base) % len(PROMPTS)], args): s
                   for s in todo}
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            try:
                rec = fut.result()
            except Exception:
                # Without this the pool would keep generating every remaining story with nobody
                # writing them down (seen when the cflow binary was rebuilt under a running job).
                for other in futures:
                    other.cancel()
                raise
            raw.write(json.dumps(rec, ensure_ascii=False) + "\n")
            raw.flush()
            done[rec["seed"]] = rec
            if n % 500 == 0 or n == len(todo):
                rate = n / max(time.monotonic() - start, 1e-9)
                print("make_corpus: %d/%d stories, %.1f stories/s, about %.0f s left" % (
                    n, len(todo), rate, (len(todo) - n) / rate), flush=True)
    elapsed = time.monotonic() - start
    return [done[s] for s in seeds], elapsed, len(todo)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out")
    p.add_argument("--stories", type=int, default=24000, help="stories to generate (default 24000, ~3 M tokens)")
    p.add_argument("--seed-base", type=int, default=1, help="story i uses seed SEED_BASE + i")
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--temp", type=float, default=1.0)
    p.add_argument("--top-p", type=float, default=0.9)
    p.add_argument("--jobs", type=int, default=2, help="cflow generate processes at a time")
    p.add_argument("--cflow", help="path to the cflow CLI (default: $CFLOW, else build/app/cflow)")
    p.add_argument("--model-dir", default=DEFAULT_MODEL_DIR, help="folder with stories260K.bin and tok512.bin")
    args = p.parse_args(argv)
    if args.stories < 1 or args.jobs < 1:
        p.error("--stories and --jobs must be >= 1")

    os.makedirs(args.out, exist_ok=True)
    work = os.path.join(args.out, "work")
    os.makedirs(work, exist_ok=True)
    cflow = find_cflow(args.cflow)
    model = convert_source_model(cflow, args.model_dir, work)
    raw_path = os.path.join(args.out, "raw.jsonl")
    records, elapsed, generated_now = generate_all(args, cflow, model, raw_path)

    splits = {name: [] for name, _ in SPLIT_PERCENT}
    seen_exact, seen_ws = set(), set()
    stats = {"generated": len(records), "stopped_at_eos": 0, "stopped_at_limit": 0, "empty_after_trim": 0,
             "duplicate_exact": 0, "duplicate_whitespace": 0, "generated_tokens_stories260k": 0}
    for rec in records:  # seed order: the lowest seed of a duplicate group is kept
        hit_limit = rec["stop"] in ("max_tokens", "context_full")  # else end_of_generation (</s>)
        stats["stopped_at_limit" if hit_limit else "stopped_at_eos"] += 1
        stats["generated_tokens_stories260k"] += rec["generated_tokens"]
        story = clean_story(rec["text"], hit_limit)
        if not story:
            stats["empty_after_trim"] += 1
            continue
        if story in seen_exact:
            stats["duplicate_exact"] += 1
            continue
        seen_exact.add(story)
        key = normalise_ws(story)
        if key in seen_ws:
            stats["duplicate_whitespace"] += 1
            continue
        seen_ws.add(key)
        splits[split_of(story)].append(story)

    files = {}
    for name, stories in splits.items():
        path = os.path.join(args.out, name + ".txt")
        text = "\n\n".join(stories) + ("\n" if stories else "")
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        n_bytes = len(text.encode("utf-8"))
        files[name] = {"file": name + ".txt", "stories": len(stories), "bytes": n_bytes,
                       # 3.9 bytes per token measured for the 4096-token BPE on these stories
                       # (train_bpe.py's bpe_manifest.json has the exact count)
                       "tokens_estimate": int(round(n_bytes / 3.9)), "sha256": sha256_file(path)}
    manifest = {
        "generator": "resources/training/make_corpus.py",
        "source_model": "llama2.c stories260K (MIT), converted to f32 .cflow",
        "settings": {"stories": args.stories, "seeds": [args.seed_base, args.seed_base + args.stories - 1],
                     "max_tokens": args.max_tokens, "temp": args.temp, "top_p": args.top_p, "top_k": 0, "min_p": 0,
                     "prompts": len(PROMPTS),
                     "prompts_sha256": hashlib.sha256("\n".join(PROMPTS).encode("utf-8")).hexdigest(),
                     "split_percent": dict(SPLIT_PERCENT)},
        "counts": stats,
        "files": files,
        "tokens_estimate_total": sum(f["tokens_estimate"] for f in files.values()),
        "raw_sha256": sha256_file(raw_path),
        "generation_seconds_this_run": round(elapsed, 1),
        "stories_generated_this_run": generated_now,
    }
    with open(os.path.join(args.out, "manifest.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(manifest, f, indent=2, sort_keys=True)
        f.write("\n")
    print("make_corpus: %d stories kept (train %d, valid %d, test %d), ~%d tokens; %d generated in %.1f s" % (
        sum(len(s) for s in splits.values()), len(splits["train"]), len(splits["valid"]), len(splits["test"]),
        manifest["tokens_estimate_total"], generated_now, elapsed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
