#!/usr/bin/env python3
"""Independent reader of one tablebase file (docs/FORMAT.md).

  tbread.py FILE --header          print the header JSON
  tbread.py FILE RANK [RANK...]    print "RANK VALUE_WORD" per rank
  tbread.py FILE --all             print every value as one line of digits 0-3

Checks magic, version, header CRC, footer, index CRC and the compressed and raw
CRC32 of every block it reads (--all reads every block and also checks the
whole-file CRC). Needs the `zstandard` module or the `zstd` command. Exits 1
with a message naming the file on any inconsistency.
"""
import json
import mmap
import os
import shutil
import struct
import subprocess
import sys
import zlib

MAGIC, END_MAGIC, VERSION = b"RETROTB1", b"RETROEND", 1
ENCODING = "2bit:draw,win,loss,illegal"
WORDS = ("draw", "win", "loss", "illegal")
ENTRY, FOOTER = 20, 32
DIGITS = [bytes(48 + ((b >> s) & 3) for s in (0, 2, 4, 6)) for b in range(256)]

try:
    import zstandard
except ImportError:
    zstandard = None


class Bad(Exception):
    pass


def decompress(frames):
    """Decompresses a list of zstd frames; returns their outputs concatenated."""
    if zstandard is not None:
        d = zstandard.ZstdDecompressor()
        return b"".join(d.decompress(f) for f in frames)
    if shutil.which("zstd") is None:
        raise Bad("neither the Python module zstandard nor the zstd command is available")
    p = subprocess.run(["zstd", "-d", "-c", "-q"], input=b"".join(frames), capture_output=True)
    if p.returncode != 0:
        raise Bad("zstd -d failed: " + p.stderr.decode(errors="replace").strip())
    return p.stdout


class Tablebase:
    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        d = self.data
        if d[:8] != MAGIC:
            raise Bad("not a tablebase (bad magic)")
        if len(d) < 16:
            raise Bad("truncated (header)")
        version, json_len = struct.unpack_from("<II", d, 8)
        if version != VERSION:
            raise Bad(f"format version {version} not supported (this reader reads {VERSION})")
        start = 16 + json_len + 4
        if json_len > 1 << 20 or len(d) < start + FOOTER:
            raise Bad("truncated or implausible header")
        raw_json = d[16:16 + json_len]
        if zlib.crc32(raw_json) != struct.unpack_from("<I", d, 16 + json_len)[0]:
            raise Bad("header checksum mismatch")
        self.header = h = json.loads(raw_json)
        if h.get("format_version") != VERSION or h.get("value_encoding") != ENCODING:
            raise Bad("header format_version or value_encoding not supported")
        self.n, self.bp = h["positions"], h["block_positions"]
        if not 1 <= self.bp <= 1 << 32:
            raise Bad(f"block_positions {self.bp} out of range")
        if d[-8:] != END_MAGIC:
            raise Bad("truncated or extended (no end marker at the end of the file)")
        index_off, blocks, index_crc, self.file_crc = struct.unpack_from("<QQII", d, len(d) - FOOTER)
        self.blocks = -(-self.n // self.bp)
        if blocks != self.blocks:
            raise Bad(f"footer says {blocks} blocks, header implies {self.blocks}")
        if index_off < start or index_off + blocks * ENTRY != len(d) - FOOTER:
            raise Bad("index does not end at the footer")
        index = d[index_off:index_off + blocks * ENTRY]
        if zlib.crc32(index) != index_crc:
            raise Bad("index checksum mismatch")
        self.index = [struct.unpack_from("<QIII", index, i * ENTRY) for i in range(blocks)]
        at = start
        for b, (off, clen, _, _) in enumerate(self.index):
            if off != at or clen == 0:
                raise Bad(f"index entry for block {b} inconsistent")
            at += clen
        if at != index_off:
            raise Bad("blocks do not end at the index")

    def block_len(self, b):
        return min(self.n, (b + 1) * self.bp) - b * self.bp

    def blocks_raw(self, first, count):
        """Checked, decompressed packed bytes of blocks first..first+count-1, one per block."""
        entries = self.index[first:first + count]
        frames = []
        for b, (off, clen, ccrc, _) in enumerate(entries, first):
            frame = self.data[off:off + clen]
            if zlib.crc32(frame) != ccrc:
                raise Bad(f"block {b} compressed checksum mismatch (file corrupt)")
            frames.append(frame)
        try:
            raw = decompress(frames)
        except Bad:
            raise
        except Exception as e:  # zstandard.ZstdError and the like
            raise Bad(f"blocks {first}..{first + count - 1} do not decompress: {e}")
        out, at = [], 0
        for b, (_, _, _, rcrc) in enumerate(entries, first):
            size = (self.block_len(b) + 3) // 4
            part = raw[at:at + size]
            at += size
            if len(part) != size or zlib.crc32(part) != rcrc:
                raise Bad(f"block {b} raw checksum mismatch (file corrupt)")
            out.append(part)
        if at != len(raw):
            raise Bad(f"blocks {first}..{first + count - 1} decompress to the wrong length")
        return out

    def value(self, rank):
        if not 0 <= rank < self.n:
            raise Bad(f"rank {rank} out of range (the layer has {self.n} positions)")
        b, i = divmod(rank, self.bp)
        raw = self.blocks_raw(b, 1)[0]
        return (raw[i // 4] >> (2 * (i % 4))) & 3

    def write_all(self, out):
        if zlib.crc32(memoryview(self.data)[:len(self.data) - FOOTER]) != self.file_crc:
            raise Bad("whole-file checksum mismatch")
        batch = 256  # blocks per zstd call (one subprocess per batch without zstandard)
        for first in range(0, self.blocks, batch):
            for b, raw in enumerate(self.blocks_raw(first, min(batch, self.blocks - first)), first):
                out.write(b"".join(DIGITS[x] for x in raw)[:self.block_len(b)])
        out.write(b"\n")


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    path, args = argv[0], argv[1:]
    if args not in (["--header"], ["--all"]) and not all(a.isdigit() for a in args):
        print(f"tbread: expected --header, --all or decimal ranks, got {' '.join(args)}", file=sys.stderr)
        return 2
    try:
        tb = Tablebase(path)
        if args == ["--header"]:
            print(json.dumps(tb.header, indent=2))
        elif args == ["--all"]:
            tb.write_all(sys.stdout.buffer)
        else:
            for r in map(int, args):
                print(r, WORDS[tb.value(r)])
    except (Bad, OSError, KeyError, json.JSONDecodeError, struct.error) as e:
        print(f"tbread: {path}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
