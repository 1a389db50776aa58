"""The project's byte-level BPE tokenizer in Python: pre-tokenisation, encoding, decoding and the
HF tokenizer.json / tokenizer_config.json it is stored as. train_bpe.py learns the merges;
train.py / evaluate.py encode text with them. Standard library only.

Pre-tokenisation must be exactly what the C++ engine runs for the vocabulary we ship, or the
trained model would see different token sequences in the engine than in training:

* tokenizer.json's pre_tokenizer is Sequence[Digits(individual_digits=true), ByteLevel(use_regex=true)].
  formats/src/hf_tokenizer.cpp::pre_tokenizer_name maps that to tokenizer.ggml.pre = "starcoder",
  and engine/src/tokenizer_bpe.cpp runs "starcoder" as two regexes, each splitting every piece of
  the previous one into matches and the gaps between them (PCRE2, UTF + UCP):
      1. \\p{N}                                   (every numeric character on its own)
      2. 's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)   (GPT-2's regex)
  HF tokenizers runs the same two steps (Digits isolates each digit, then ByteLevel's GPT-2 regex).
* Why not the plain ByteLevel pre-tokenizer ("gpt2")? When this was written the engine rejected
  the name "gpt2" that hf_tokenizer.cpp gives it (it knew only llama.cpp's "gpt-2"; both are accepted
  now). "starcoder" is GPT-2's regex plus one-digit numbers, which a small story vocabulary prefers
  anyway (no merges spent on multi-digit numbers), and it is what train_bpe.py checks against the engine.
* Python's `re` has no \\p{..}: PATTERN below spells \\p{L} and \\p{N} as explicit code-point ranges
  built from unicodedata (general categories L* and N*), and \\s as PCRE2's UCP \\s (\\p{Z}, \\h, \\v:
  U+0009-000D, 0020, 0085, 00A0, 1680, 180E, 2000-200A, 2028, 2029, 202F, 205F, 3000), not
  Python's str.isspace (which adds U+001C-001F and drops U+180E). Python's Unicode tables may be a
  version apart from PCRE2's; that matters only for characters assigned in between, none of which
  occur in these stories.

Bytes map to GPT-2's printable stand-ins (bytes_to_unicode), merges are applied lowest rank
first, leftmost first on equal rank (what tokenizer_bpe.cpp's priority queue does).
"""
import json
import re
import sys
import unicodedata

BOS = "<|bos|>"
EOS = "<|eos|>"
SPECIALS = [BOS, EOS]  # ids 0 and 1; the 256 byte tokens are 2..257, merges from 258


def bytes_to_unicode():
    """GPT-2's byte -> printable character table (printable Latin-1 maps to itself, the rest to U+0100..)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_TO_UNICODE = bytes_to_unicode()
UNICODE_TO_BYTE = {c: b for b, c in BYTE_TO_UNICODE.items()}


def _category_class(prefix):
    """Regex character-class body with every code point whose general category starts with prefix."""
    ranges = []
    start = prev = None
    for cp in range(sys.maxunicode + 1):
        if unicodedata.category(chr(cp)).startswith(prefix):
            if start is None:
                start = cp
            elif cp != prev + 1:
                ranges.append((start, prev))
                start = cp
            prev = cp
    if start is not None:
        ranges.append((start, prev))
    return "".join(("\\U%08x" % a) if a == b else ("\\U%08x-\\U%08x" % (a, b)) for a, b in ranges)


_L = _category_class("L")
_N = _category_class("N")
# PCRE2's \s with PCRE2_UCP: \p{Z} (Zs, Zl, Zp) plus \h and \v.
_S = "\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u180e\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"

DIGIT_PATTERN = re.compile("[%s]" % _N)
PATTERN = re.compile("'s|'t|'re|'ve|'m|'ll|'d| ?[%s]+| ?[%s]+| ?[^%s%s%s]+|[%s]+(?![^%s])" % (
    _L, _N, _S, _L, _N, _S, _S))
SPECIAL_PATTERN = re.compile("|".join(re.escape(s) for s in SPECIALS))


def _split(regex, pieces):
    """Every piece -> its matches and the gaps between them, in order (llama.cpp's unicode_regex_split)."""
    out = []
    for piece in pieces:
        done = 0
        for m in regex.finditer(piece):
            if m.start() > done:
                out.append(piece[done:m.start()])
            out.append(m.group())
            done = m.end()
        if done < len(piece):
            out.append(piece[done:])
    return out


def pre_tokenize(text):
    """Text (no special tokens) -> the pieces BPE runs on, as the engine splits them."""
    if not text:
        return []
    return _split(PATTERN, _split(DIGIT_PATTERN, [text]))


def to_symbols(piece):
    """A piece -> its UTF-8 bytes as GPT-2 stand-in characters."""
    return "".join(BYTE_TO_UNICODE[b] for b in piece.encode("utf-8"))


class Tokenizer:
    def __init__(self, vocab, merges):
        self.vocab = vocab  # piece (byte-level string) -> id
        self.id_to_piece = {i: p for p, i in vocab.items()}
        self.merges = merges  # [(left, right)] in rank order
        self.ranks = {pair: r for r, pair in enumerate(merges)}
        self.bos_id = vocab[BOS]
        self.eos_id = vocab[EOS]
        self._cache = {}

    @classmethod
    def load(cls, tokenizer_json_path):
        with open(tokenizer_json_path, "r", encoding="utf-8") as f:
            tok = json.load(f)
        vocab = dict(tok["model"]["vocab"])
        for a in tok.get("added_tokens", []):
            vocab[a["content"]] = a["id"]
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in tok["model"]["merges"]]
        return cls(vocab, merges)

    def __len__(self):
        return max(self.id_to_piece) + 1

    def _bpe(self, symbols):
        """Merge the adjacent pair of lowest rank, leftmost first, until none is left."""
        parts = list(symbols)
        while len(parts) > 1:
            best = None
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best is None or r < best[0]):
                    best = (r, i)
            if best is None:
                break
            i = best[1]
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        return parts

    def encode_ordinary(self, text):
        """Text -> ids; special-token strings in the text are ordinary text."""
        ids = []
        for piece in pre_tokenize(text):
            hit = self._cache.get(piece)
            if hit is None:
                hit = [self.vocab[p] for p in self._bpe(to_symbols(piece))]
                if len(self._cache) < 1 << 18:
                    self._cache[piece] = hit
            ids.extend(hit)
        return ids

    def encode(self, text, add_bos=False, add_eos=False, parse_special=False):
        ids = [self.bos_id] if add_bos else []
        if parse_special:
            done = 0
            for m in SPECIAL_PATTERN.finditer(text):
                ids.extend(self.encode_ordinary(text[done:m.start()]))
                ids.append(self.vocab[m.group()])
                done = m.end()
            ids.extend(self.encode_ordinary(text[done:]))
        else:
            ids.extend(self.encode_ordinary(text))
        if add_eos:
            ids.append(self.eos_id)
        return ids

    def token_bytes(self, i):
        piece = self.id_to_piece[i]
        if piece in SPECIALS:
            return b""  # control tokens print nothing (as the engine's decode)
        return bytes(UNICODE_TO_BYTE[c] for c in piece)

    def decode_bytes(self, ids):
        return b"".join(self.token_bytes(i) for i in ids)

    def decode(self, ids):
        return self.decode_bytes(ids).decode("utf-8", "replace")


def tokenizer_json(vocab, merges):
    """HF tokenizer.json: BPE without byte fallback (tokenizer.ggml.model gpt2), byte-level."""
    added = [{"id": vocab[s], "content": s, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for s in SPECIALS]
    model_vocab = {p: i for p, i in sorted(vocab.items(), key=lambda kv: kv[1]) if p not in SPECIALS}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True}]},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": BOS, "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": BOS, "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {BOS: {"id": BOS, "ids": [vocab[BOS]], "tokens": [BOS]}}},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": model_vocab, "merges": ["%s %s" % m for m in merges]},
    }


def tokenizer_config(max_positions):
    return {
        "add_bos_token": True,
        "add_eos_token": False,
        "bos_token": BOS,
        "eos_token": EOS,
        "unk_token": None,
        "pad_token": None,
        "clean_up_tokenization_spaces": False,
        "model_max_length": max_positions,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }


def read_stories(path):
    """A corpus file of make_corpus.py: stories separated by one blank line."""
    with open(path, "r", encoding="utf-8") as f:
        text = f.read()
    return [s.strip("\n") for s in text.split("\n\n") if s.strip()]
