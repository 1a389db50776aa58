#!/usr/bin/python3
"""Generates engine/src/tokenizer/tokenizer_unicode_data.cpp from the Unicode Character Database.

Lives in engine/tools/ because the engine is the only consumer of its output and src/ is for
sources that are compiled (engine/CMakeLists.txt globs src/); it runs with the stdlib only so a
plain Debian /usr/bin/python3 can regenerate the file.

Input: the UCD text files of Debian's `unicode-data` package (/usr/share/unicode):
UnicodeData.txt (general category, canonical combining class, canonical decomposition, simple
lowercase) and SpecialCasing.txt (unconditional full lowercase, e.g. U+0130 -> i + U+0307). The
files are read rather than Python's `unicodedata` so the output depends only on the UCD files
and not on which Unicode version the running Python was built with.

Output, byte for byte deterministic (sorted tables, no timestamps): the character classes P*,
Cc/Cf, Mn and Zs as sorted codepoint ranges, and the BERT fold table: for every codepoint whose
lowercase-then-NFD-without-Mn form differs from itself, that form. Codepoints that bert_fold()
handles before the table lookup are left out: Hangul syllables (decomposed arithmetically there)
and Mn marks (dropped there).

Regenerate: cmake --build <build dir> --target cflow_unicode_data
Check:      tests/engine/tokenizer/unicode_data_generator_test.cpp compares with the committed file.
"""

import argparse
import os
import re
import sys
import tempfile

DEFAULT_UCD_DIR = "/usr/share/unicode"
MAX_CODEPOINT = 0x10FFFF
FOLD_MAX_OUT = 3  # FoldEntry::out in the generated C++

# Hangul syllable arithmetic (Unicode ch. 3.12); must match bert_fold() below.
S_BASE, L_BASE, V_BASE, T_BASE = 0xAC00, 0x1100, 0x1161, 0x11A7
V_COUNT, T_COUNT, S_COUNT = 21, 28, 11172


class UcdError(Exception):
    pass


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")


def read_version(ucd_dir):
    # UnicodeData.txt carries no version; its sibling files name theirs on line one
    # ("# SpecialCasing-15.0.0.txt"). Two of them must agree so a mixed directory is caught.
    versions = {}
    for name in ("SpecialCasing.txt", "DerivedAge.txt"):
        path = os.path.join(ucd_dir, name)
        if not os.path.exists(path):
            continue
        first = read_lines(path)[0]
        m = re.match(r"#\s*" + re.escape(name[:-4]) + r"-(\d+\.\d+\.\d+)\.txt", first)
        if not m:
            raise UcdError(f"{path}: no version on line 1 ({first!r})")
        versions[name] = m.group(1)
    if "SpecialCasing.txt" not in versions:
        raise UcdError(f"{ucd_dir}/SpecialCasing.txt is missing")
    if len(set(versions.values())) != 1:
        raise UcdError(f"{ucd_dir}: files from different Unicode versions: {versions}")
    return versions["SpecialCasing.txt"]


def read_unicode_data(ucd_dir):
    """Returns {cp: (category, ccc, canonical decomposition or None, simple lowercase or None)}."""
    path = os.path.join(ucd_dir, "UnicodeData.txt")
    chars = {}
    range_first = None
    for lineno, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        fields = line.split(";")
        if len(fields) != 15:
            raise UcdError(f"{path}:{lineno}: expected 15 fields, got {len(fields)}")
        cp = int(fields[0], 16)
        name, category, ccc = fields[1], fields[2], int(fields[3])
        decomposition = None
        if fields[5] and not fields[5].startswith("<"):  # <tag> marks compatibility mappings
            decomposition = [int(x, 16) for x in fields[5].split()]
        lower = int(fields[13], 16) if fields[13] else None
        # Large blocks are given as a First/Last pair sharing one set of properties.
        if name.endswith(", First>"):
            range_first = cp
            continue
        if name.endswith(", Last>"):
            if range_first is None:
                raise UcdError(f"{path}:{lineno}: range end without a start")
            for c in range(range_first, cp + 1):
                chars[c] = (category, ccc, decomposition, lower)
            range_first = None
            continue
        chars[cp] = (category, ccc, decomposition, lower)
    return chars


def read_special_lowercase(ucd_dir):
    """Unconditional full lowercase mappings of SpecialCasing.txt: {cp: [cps]}.

    The conditional ones (Final_Sigma, language-specific) depend on context or locale, which a
    per-codepoint table cannot express; BERT's str.lower() and HF's char::to_lowercase use the
    unconditional mappings too.
    """
    path = os.path.join(ucd_dir, "SpecialCasing.txt")
    lower = {}
    for lineno, line in enumerate(read_lines(path), 1):
        data = line.split("#", 1)[0].strip()
        if not data:
            continue
        fields = [f.strip() for f in data.split(";")]
        if len(fields) < 4:
            raise UcdError(f"{path}:{lineno}: expected at least 4 fields")
        if len(fields) > 4 and fields[4]:
            continue
        lower[int(fields[0], 16)] = [int(x, 16) for x in fields[1].split()]
    return lower


def nfd(cps, chars):
    out = []
    for cp in cps:
        if S_BASE <= cp < S_BASE + S_COUNT:
            index = cp - S_BASE
            out.append(L_BASE + index // (V_COUNT * T_COUNT))
            out.append(V_BASE + (index % (V_COUNT * T_COUNT)) // T_COUNT)
            if index % T_COUNT:
                out.append(T_BASE + index % T_COUNT)
            continue
        entry = chars.get(cp)
        if entry and entry[2]:
            out.extend(nfd(entry[2], chars))
        else:
            out.append(cp)
    # Canonical ordering: a stable sort by combining class within each run of non-starters.
    ccc = [chars[c][1] if c in chars else 0 for c in out]
    i = 0
    while i < len(out):
        if ccc[i] == 0:
            i += 1
            continue
        j = i
        while j < len(out) and ccc[j] != 0:
            j += 1
        run = sorted(zip(ccc[i:j], range(i, j), out[i:j]))
        out[i:j] = [c for _, _, c in run]
        ccc[i:j] = [k for k, _, _ in run]
        i = j
    return out


def category(chars, cp):
    entry = chars.get(cp)
    return entry[0] if entry else "Cn"


def ranges_where(chars, predicate):
    ranges = []
    for cp in range(MAX_CODEPOINT + 1):
        if not predicate(category(chars, cp)):
            continue
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    return ranges


def fold_table(chars, special_lower):
    table = []
    for cp in sorted(chars):
        if S_BASE <= cp < S_BASE + S_COUNT or category(chars, cp) == "Mn":
            continue
        if cp in special_lower:
            lowered = special_lower[cp]
        else:
            simple = chars[cp][3]
            lowered = [simple if simple is not None else cp]
        folded = [c for c in nfd(lowered, chars) if category(chars, c) != "Mn"]
        if folded == [cp]:
            continue
        if not 1 <= len(folded) <= FOLD_MAX_OUT:
            # bert_fold() looks the table up only for non-Mn input, and FoldEntry holds 1..3
            # codepoints; a new Unicode version breaking that needs the C++ widened first.
            raise UcdError(f"U+{cp:04X} folds to {len(folded)} codepoints; FoldEntry holds 1..{FOLD_MAX_OUT}")
        table.append((cp, folded))
    return table


HEADER = """\
// Unicode character tables for the tokenizers (WordPiece normalization and splitting).
// GENERATED by engine/tools/gen_unicode_data.py from the Unicode Character Database @VERSION@
// (Debian's unicode-data package); do not edit by hand. Regenerate with
// `cmake --build <build dir> --target cflow_unicode_data`; unicode_data_generator_test checks it.
// Records general category P* (punctuation), Cc/Cf (control), Mn (combining marks), Zs (space
// separators) as ranges; and for each codepoint (outside the Hangul syllables, which are
// decomposed arithmetically, and the Mn marks, which are dropped) whose lowercase-then-NFD-without-Mn
// form differs from itself, that form.
// Kept here rather than in PCRE2 so WordPiece works in builds without PCRE2 (the Windows cross build).
#include <algorithm>
#include <cstdint>
#include <iterator>
#include <vector>

#include "tokenizer/tokenizer_common.h"

namespace cflow::tok {

namespace {

struct CodepointRange {
    uint32_t first;
    uint32_t last;
};

struct FoldEntry {
    uint32_t cp;
    uint32_t count;
    uint32_t out[3];
};

"""

FOOTER = """\

template <size_t N>
bool in_ranges(const CodepointRange (&table)[N], uint32_t cp) {
    const auto* it = std::upper_bound(std::begin(table), std::end(table), cp,
                                      [](uint32_t value, const CodepointRange& range) { return value < range.first; });
    return it != std::begin(table) && cp <= std::prev(it)->last;
}

} // namespace

bool is_punctuation(uint32_t cp) { return in_ranges(kPunctuation, cp); }
bool is_control_char(uint32_t cp) { return in_ranges(kControl, cp); }
bool is_combining_mark(uint32_t cp) { return in_ranges(kCombiningMark, cp); }
bool is_space_separator(uint32_t cp) { return in_ranges(kSpaceSeparator, cp); }

void bert_fold(uint32_t cp, std::vector<uint32_t>& out) {
    // Hangul syllables decompose arithmetically into their conjoining jamo (Unicode ch. 3.12).
    constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
    constexpr uint32_t kVCount = 21, kTCount = 28, kSCount = 11172;
    if (cp >= kSBase && cp < kSBase + kSCount) {
        const uint32_t index = cp - kSBase;
        out.push_back(kLBase + index / (kVCount * kTCount));
        out.push_back(kVBase + (index % (kVCount * kTCount)) / kTCount);
        if (index % kTCount != 0) out.push_back(kTBase + index % kTCount);
        return;
    }
    if (is_combining_mark(cp)) return;
    const auto* it = std::lower_bound(std::begin(kFold), std::end(kFold), cp,
                                      [](const FoldEntry& entry, uint32_t value) { return entry.cp < value; });
    if (it == std::end(kFold) || it->cp != cp) {
        out.push_back(cp);
        return;
    }
    out.insert(out.end(), it->out, it->out + it->count);
}

} // namespace cflow::tok
"""


def emit_table(decl, items, per_line):
    lines = [decl + " = {"]
    for i in range(0, len(items), per_line):
        lines.append("    " + ", ".join(items[i:i + per_line]) + ",")
    lines.append("};")
    return "\n".join(lines) + "\n"


def render(version, punctuation, control, combining, space, fold):
    def range_items(ranges):
        return [f"{{0x{a:X}, 0x{b:X}}}" for a, b in ranges]

    def fold_item(cp, out):
        padded = out + [0] * (FOLD_MAX_OUT - len(out))
        return f"{{0x{cp:X}, {len(out)}, {{{', '.join(f'0x{c:X}' for c in padded)}}}}}"

    return (HEADER.replace("@VERSION@", version)
            + emit_table("constexpr CodepointRange kPunctuation[]", range_items(punctuation), 6)
            + emit_table("constexpr CodepointRange kControl[]", range_items(control), 6)
            + emit_table("constexpr CodepointRange kCombiningMark[]", range_items(combining), 6)
            + emit_table("constexpr CodepointRange kSpaceSeparator[]", range_items(space), 6)
            + emit_table("constexpr FoldEntry kFold[]", [fold_item(cp, out) for cp, out in fold], 3)
            + FOOTER)


def generate(ucd_dir):
    if not os.path.exists(os.path.join(ucd_dir, "UnicodeData.txt")):
        raise UcdError(f"{ucd_dir}/UnicodeData.txt not found: install Debian's unicode-data package "
                       "(packaging/debian-build-deps.txt)")
    version = read_version(ucd_dir)
    chars = read_unicode_data(ucd_dir)
    special_lower = read_special_lowercase(ucd_dir)
    return render(version,
                  ranges_where(chars, lambda gc: gc.startswith("P")),
                  ranges_where(chars, lambda gc: gc in ("Cc", "Cf")),
                  ranges_where(chars, lambda gc: gc == "Mn"),
                  ranges_where(chars, lambda gc: gc == "Zs"),
                  fold_table(chars, special_lower))


def write_atomically(path, text):
    # A half-written file in the source tree would break the build, so swap in a complete one.
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".gen_unicode_data.", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--ucd-dir", default=DEFAULT_UCD_DIR,
                        help=f"directory with UnicodeData.txt and SpecialCasing.txt (default {DEFAULT_UCD_DIR})")
    parser.add_argument("-o", "--output", help="file to write (default: stdout)")
    args = parser.parse_args()
    try:
        text = generate(args.ucd_dir)
    except (OSError, UcdError, ValueError) as e:
        print(f"gen_unicode_data.py: {e}", file=sys.stderr)
        return 1
    if args.output:
        write_atomically(args.output, text)
    else:
        sys.stdout.buffer.write(text.encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
