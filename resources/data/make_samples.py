#!/usr/bin/python3
"""Makes the offline data samples in resources/data (see README.md there).

Subcommands (each deterministic: the same inputs give byte-identical files):

  text    Extracts running English text from a SWORD zText Bible module (Debian package
          sword-text-web: the World English Bible, public domain), whole books from the start
          until at least --min-bytes, footnotes and section headings removed.
  tokens  Word-level tokenizer: lower-case, words and punctuation; vocabulary = the V-1 most
          frequent tokens + <unk> (id 0). Writes tokens.bin (little-endian uint16, or int32 for
          V > 65536) and vocab.txt (one token per line, line i = id i).
  cifar   CIFAR-10 binary records (1 label byte + 1024 R + 1024 G + 1024 B bytes, row-major 32x32)
          of procedurally drawn shapes whose label is the shape class. Synthetic, not CIFAR.
  all     Remakes the committed samples from the committed text: tokens-v128/ and cifar-sample.bin.

Standard library only.
"""

import argparse
import collections
import html
import math
import os
import random
import re
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_TEXT = os.path.join(HERE, "text", "bible-web-excerpt.txt")
UNK = "<unk>"


# ---------------------------------------------------------------------------------------------
# text: SWORD zText module -> plain text
# ---------------------------------------------------------------------------------------------

def _ztext_entries(module_dir, testament):
    """Yields the decoded OSIS markup of every verse entry of one testament ("ot" or "nt"), in
    index order. zText layout: .bzs = blocks (offset, size, uncompressed size: 3 x uint32),
    .bzv = verses (block, start, length: uint32, uint32, uint16), .bzz = zlib blocks."""
    def read(ext):
        with open(os.path.join(module_dir, testament + ext), "rb") as f:
            return f.read()
    bzs, bzv, bzz = read(".bzs"), read(".bzv"), read(".bzz")
    blocks = [struct.unpack_from("<III", bzs, i) for i in range(0, len(bzs) - 11, 12)]
    cache = {}
    for i in range(0, len(bzv) - 9, 10):
        block, start, length = struct.unpack_from("<IIH", bzv, i)
        if length == 0:
            continue
        if block not in cache:
            cache.clear()
            offset, size, _ = blocks[block]
            cache[block] = zlib.decompress(bzz[offset:offset + size])
        yield cache[block][start:start + length].decode("utf-8")


_BOOK = re.compile(r'<div\b(?=[^>]*\btype="book")(?=[^>]*\bsID=)[^>]*\bosisID="([^"]+)"[^>]*>')
_BOOK_NAME = re.compile(r'<milestone\b(?=[^>]*\btype="x-usfm-h")[^>]*\bn="([^"]+)"[^>]*/>')
_BREAK = re.compile(r'<(?:div\b[^>]*\btype="x-p"[^>]*\bsID|chapter\b[^>]*\bsID|l\b[^>]*\bsID|lb\b)[^>]*>')
# A footnote between two words stands for the space between them ("God<note/>created").
_NOTE_BETWEEN_WORDS = re.compile(r'(?<=\S)<note\b.*?</note>(?=<w\b)', re.S)
_DROP = re.compile(r'<note\b.*?</note>|<title\b.*?</title>', re.S)
_TAG = re.compile(r"<[^>]*>")


def _plain(markup):
    """Running text of OSIS markup: paragraph, chapter and poetry-line starts become newlines;
    footnotes and headings are dropped."""
    text = _NOTE_BETWEEN_WORDS.sub(" ", markup)
    text = _DROP.sub("", text)
    text = _BREAK.sub("\n", text)
    text = html.unescape(_TAG.sub("", text))
    return text


def cmd_text(args):
    books = []          # [name, [pieces]]
    for testament in ("ot", "nt"):
        for entry in _ztext_entries(args.sword_module, testament):
            parts = _BOOK.split(entry)     # text, osisID, text, osisID, ...
            if books:
                books[-1][1].append(_plain(parts[0]))
            for k in range(1, len(parts), 2):
                name = _BOOK_NAME.search(parts[k + 1])
                books.append([name.group(1) if name else parts[k], [_plain(parts[k + 1])]])
    if not books:
        sys.exit(f"{args.sword_module}: no book found; expected a SWORD zText module folder "
                 "(…/modules/texts/ztext/engWEB2015eb)")
    out, size, used = [], 0, []
    for name, pieces in books:
        body = " ".join(pieces)
        lines = [" ".join(line.split()) for line in body.split("\n")]
        book = name + "\n\n" + "\n".join(line for line in lines if line) + "\n\n"
        out.append(book)
        used.append(name)
        size += len(book.encode("utf-8"))
        if size >= args.min_bytes:
            break
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    text = "".join(out).rstrip("\n") + "\n"
    with open(args.out, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    print(f"{args.out}: {len(text.encode('utf-8'))} bytes, {len(used)} books ({used[0]} .. {used[-1]})")


# ---------------------------------------------------------------------------------------------
# tokens: word-level tokenizer
# ---------------------------------------------------------------------------------------------

# A word is letters/digits with inner apostrophes ("don't", "israel's"); every other
# non-space character is a token of its own.
_TOKEN = re.compile(r"[^\W_]+(?:['\u2019][^\W_]+)*|[^\w\s]|_")


def tokenize(text):
    return _TOKEN.findall(text.lower().replace("\u2019", "'"))


def build_vocab(tokens, size):
    """<unk> (id 0), then the size-1 most frequent tokens, ties broken by the token's text."""
    if size < 2:
        sys.exit(f"--vocab {size}: a vocabulary needs at least 2 entries (<unk> and one word)")
    counts = collections.Counter(tokens)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [UNK] + [t for t, _ in ranked[:size - 1]]


def write_tokens(text_path, vocab_size, out_dir):
    with open(text_path, encoding="utf-8") as f:
        tokens = tokenize(f.read())
    vocab = build_vocab(tokens, vocab_size)
    index = {t: i for i, t in enumerate(vocab)}
    ids = [index.get(t, 0) for t in tokens]
    dtype = "uint16" if vocab_size <= 65536 else "int32"
    fmt = "<%d%s" % (len(ids), "H" if dtype == "uint16" else "i")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "tokens.bin"), "wb") as f:
        f.write(struct.pack(fmt, *ids))
    with open(os.path.join(out_dir, "vocab.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(t + "\n" for t in vocab))
    unk = sum(1 for i in ids if i == 0)
    if len(vocab) < vocab_size:
        print(f"note: the text has only {len(vocab) - 1} distinct tokens: vocab.txt has {len(vocab)} "
              f"entries, and every id is below {vocab_size}")
    print(f"{out_dir}: {len(ids)} tokens ({dtype}), vocabulary {len(vocab)} "
          f"(of {len(set(tokens))} distinct), <unk> {100.0 * unk / max(1, len(ids)):.1f}%")


def cmd_tokens(args):
    write_tokens(args.text, args.vocab, args.out)


# ---------------------------------------------------------------------------------------------
# cifar: CIFAR-10-format records of drawn shapes
# ---------------------------------------------------------------------------------------------

CLASSES = ["disc", "square", "triangle", "horizontal bar", "vertical bar", "plus", "x-cross",
           "ring", "diamond", "checkerboard"]


def _inside(label, x, y, cx, cy, r):
    """Whether pixel centre (x, y) is on shape `label` centred at (cx, cy) with radius r."""
    dx, dy = x - cx, y - cy
    t = max(1.5, r / 3.0)          # stroke half-width
    if label == 0:
        return dx * dx + dy * dy <= r * r
    if label == 1:
        return abs(dx) <= r * 0.8 and abs(dy) <= r * 0.8
    if label == 2:                  # upward triangle
        return -r <= dy <= r * 0.8 and abs(dx) <= (dy + r) * 0.55
    if label == 3:
        return abs(dx) <= r and abs(dy) <= t
    if label == 4:
        return abs(dy) <= r and abs(dx) <= t
    if label == 5:
        return (abs(dx) <= r and abs(dy) <= t) or (abs(dy) <= r and abs(dx) <= t)
    if label == 6:
        return max(abs(dx), abs(dy)) <= r and min(abs(dx - dy), abs(dx + dy)) <= t * 1.4
    if label == 7:
        d = math.sqrt(dx * dx + dy * dy)
        return r - 2 * t <= d <= r
    if label == 8:
        return abs(dx) + abs(dy) <= r
    if label == 9:
        return max(abs(dx), abs(dy)) <= r and (int((dx + r) // (r / 2)) + int((dy + r) // (r / 2))) % 2 == 0
    raise AssertionError(label)


def _record(rng, label):
    cx, cy = rng.uniform(12, 20), rng.uniform(12, 20)
    r = rng.uniform(7, 11)
    while True:
        fg = [rng.randrange(256) for _ in range(3)]
        bg = [rng.randrange(256) for _ in range(3)]
        if sum(abs(a - b) for a, b in zip(fg, bg)) >= 240:   # keep the shape visible
            break
    planes = [bytearray(1024) for _ in range(3)]
    for y in range(32):
        for x in range(32):
            colour = fg if _inside(label, x + 0.5, y + 0.5, cx, cy, r) else bg
            for c in range(3):
                v = colour[c] + rng.randint(-12, 12)
                planes[c][y * 32 + x] = min(255, max(0, v))
    return bytes([label]) + bytes(planes[0]) + bytes(planes[1]) + bytes(planes[2])


def write_cifar(path, records, seed):
    rng = random.Random(seed)
    labels = [i % len(CLASSES) for i in range(records)]   # balanced classes, shuffled
    rng.shuffle(labels)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        for label in labels:
            f.write(_record(rng, label))
    print(f"{path}: {records} records of {len(CLASSES)} shape classes ({records * 3073} bytes)")


def cmd_cifar(args):
    write_cifar(args.out, args.records, args.seed)


# ---------------------------------------------------------------------------------------------

def cmd_all(args):
    write_tokens(args.text, 128, os.path.join(HERE, "tokens-v128"))
    write_cifar(os.path.join(HERE, "cifar-sample.bin"), 400, 0)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("text", help="extract text from a SWORD zText module")
    t.add_argument("--sword-module", required=True,
                   help="the module folder, e.g. /tmp/web/usr/share/sword/modules/texts/ztext/engWEB2015eb")
    t.add_argument("--min-bytes", type=int, default=1_000_000, help="stop after the book that reaches this size")
    t.add_argument("--out", default=DEFAULT_TEXT)
    t.set_defaults(run=cmd_text)
    k = sub.add_parser("tokens", help="tokenize a text into tokens.bin + vocab.txt")
    k.add_argument("--text", default=DEFAULT_TEXT)
    k.add_argument("--vocab", type=int, default=128, help="vocabulary size V including <unk>")
    k.add_argument("--out", required=True, help="output folder")
    k.set_defaults(run=cmd_tokens)
    c = sub.add_parser("cifar", help="write CIFAR-10-format records of drawn shapes")
    c.add_argument("--records", type=int, default=400)
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--out", required=True)
    c.set_defaults(run=cmd_cifar)
    a = sub.add_parser("all", help="remake tokens-v128/ and cifar-sample.bin")
    a.add_argument("--text", default=DEFAULT_TEXT)
    a.set_defaults(run=cmd_all)
    args = p.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
