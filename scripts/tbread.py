#!/usr/bin/env python3
"""Independent reader of one tablebase file (see docs/FORMAT.md).

  tbread.py FILE --header          print the header JSON as stored
  tbread.py FILE RANK [RANK...]    print "RANK VALUE_WORD" per rank
  tbread.py FILE --all             print every value as one line of digits 0-3

Checks the magic, version, header CRC, footer and index CRC, and the compressed
and raw CRC32 of every block it reads (--all: every block, and the whole-file
CRC). Uses the Python module zstandard if importable, else the zstd command.
Exit status 1 with a message naming the file if anything is wrong, 2 on bad usage.
"""
import json, mmap, os, shutil, struct, subprocess, sys, zlib  # standard library only

MAGIC, END_MAGIC, VERSION = b"RETROTB1", b"RETROEND", 1
ENCODING, WORDS = "2bit:draw,win,loss,illegal", ("draw", "win", "loss", "illegal")
ENTRY, FOOTER = 20, 32
DIGITS = [bytes(48 + ((b >> s) & 3) for s in (0, 2, 4, 6)) for b in range(256)]  # LSB first
try:
    import zstandard
except ImportError:  # fall back on the zstd command
    zstandard = None


class Bad(Exception):
    """The file is damaged or not a tablebase this reader reads (exit status 1)."""


def decompress(frames, sizes, first):
    """Blocks first, first+1, ...: their zstd frames decompressed and concatenated."""
    if zstandard is not None:
        d, out = zstandard.ZstdDecompressor(), []
        for b, (frame, size) in enumerate(zip(frames, sizes), first):
            try:
                out.append(d.decompress(frame, max_output_size=size))
            except zstandard.ZstdError as e:
                raise Bad(f"block {b} does not decompress: {e}")
        return b"".join(out)
    if shutil.which("zstd") is None:
        raise Bad("cannot decompress: neither the Python module zstandard nor the zstd command is available")
    p = subprocess.run(["zstd", "-d", "-c", "-q"], input=b"".join(frames), capture_output=True)
    if p.returncode != 0:
        err = p.stderr.decode(errors="replace").strip()
        raise Bad(f"blocks {first}..{first + len(frames) - 1} do not decompress (zstd -d: {err})")
    return p.stdout


class Tablebase:
    def __init__(self, path):
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.data = d = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        if size < 8 or d[:8] != MAGIC:
            raise Bad("not a tablebase (bad magic)")
        version, json_len = struct.unpack_from("<II", d, 8) if size >= 16 else (VERSION, 1 << 21)
        if version != VERSION:
            raise Bad(f"format version {version} not supported (this reader reads {VERSION})")
        start = 16 + json_len + 4  # first block
        if json_len > 1 << 20 or size < start + FOOTER:
            raise Bad("truncated (or implausible header length)")
        self.raw_json = raw_json = d[16:16 + json_len]
        if zlib.crc32(raw_json) != struct.unpack_from("<I", d, 16 + json_len)[0]:
            raise Bad("header checksum mismatch")
        self.header = h = json.loads(raw_json)
        if h.get("format_version") != VERSION or h.get("value_encoding") != ENCODING:
            raise Bad("header format_version or value_encoding not supported")
        self.n, self.bp = h.get("positions"), h.get("block_positions")
        if not isinstance(self.n, int) or not isinstance(self.bp, int) or not 1 <= self.bp <= 1 << 32:
            raise Bad(f"header positions {self.n} or block_positions {self.bp} invalid")
        if d[size - 8:] != END_MAGIC:
            raise Bad("truncated or extended (no end marker at the end of the file)")
        index_off, blocks, index_crc, self.file_crc = struct.unpack_from("<QQII", d, size - FOOTER)
        self.blocks = -(-self.n // self.bp)
        if blocks != self.blocks:
            raise Bad(f"footer says {blocks} blocks, header implies {self.blocks}")
        if index_off < start or index_off + blocks * ENTRY != size - FOOTER:
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

    def frame(self, b):
        off, clen, ccrc, _ = self.index[b]
        if zlib.crc32(frame := self.data[off:off + clen]) != ccrc:
            raise Bad(f"block {b} compressed checksum mismatch (file corrupt)")
        return frame

    def blocks_raw(self, first, count):
        """Checked packed bytes of blocks first .. first+count-1, one bytes object per block."""
        bs = range(first, first + count)
        sizes = [(self.block_len(b) + 3) // 4 for b in bs]
        raw = decompress([self.frame(b) for b in bs], sizes, first)
        out, at = [], 0
        for b, size in zip(bs, sizes):
            part, at = raw[at:at + size], at + size
            if len(part) != size or zlib.crc32(part) != self.index[b][3]:
                raise Bad(f"block {b} raw checksum mismatch (file corrupt)")
            out.append(part)
        if at != len(raw):
            raise Bad(f"blocks {first}..{first + count - 1} decompress to too many bytes")
        return out

    def value(self, rank):
        if not 0 <= rank < self.n:
            raise Bad(f"rank {rank} out of range (the layer has {self.n} positions)")
        b, i = divmod(rank, self.bp)
        return (self.blocks_raw(b, 1)[0][i // 4] >> (2 * (i % 4))) & 3

    def write_all(self, out):
        for b in range(self.blocks):  # name a damaged block before the whole-file CRC does
            self.frame(b)
        if zlib.crc32(memoryview(self.data)[:len(self.data) - FOOTER]) != self.file_crc:
            raise Bad("whole-file checksum mismatch")
        batch = 256  # blocks per decompression call (one zstd process per batch)
        for first in range(0, self.blocks, batch):
            for b, raw in enumerate(self.blocks_raw(first, min(batch, self.blocks - first)), first):
                out.write(b"".join(DIGITS[x] for x in raw)[:self.block_len(b)])
        out.write(b"\n")


def main(args):
    if len(args) < 2 or not (args[1:] in (["--header"], ["--all"]) or all(a.isdigit() for a in args[1:])):
        print(__doc__.strip(), file=sys.stderr)
        return 2
    try:
        tb = Tablebase(path := args[0])
        if args[1] == "--header":
            print(tb.raw_json.decode())
        elif args[1] == "--all":
            tb.write_all(sys.stdout.buffer)
        else:
            for r in map(int, args[1:]):
                print(r, WORDS[tb.value(r)])
    except BrokenPipeError:  # output cut short (e.g. by head): not the file's fault
        return 1
    except (Bad, OSError, ValueError, struct.error) as e:
        print(f"tbread: {path}: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
