"""trawl-dask's checkpoints of finished shards (``--state``): a versioned file format with a
digest of its content, data only (loading one never runs anything), written through temporary
files of random names never followed through a link, in a folder only its owner can write."""

import hashlib
import json
import os

from ._common import Fatal

#: A checkpoint's first line; the format's version is its last word.
CHECKPOINT_MAGIC = b"trawl-dask checkpoint 1\n"
#: The map result's fields a checkpoint keeps, in order: bytes, then the parts (a list of bytes).
_CHECKPOINT_BYTES = ("report", "records", "totals")


#: A checkpoint header's size at most: the lengths of a shard's fields and a few plain values.
_HEADER_MAX = 1 << 20


class CheckpointError(Exception):
    """A checkpoint that is not one trawl-dask wrote whole: refused, and its shard read again."""


def _private_dir(path):
    """Creates the state folder (mode 0700), or checks that an existing one is a directory the
    user owns and that no one else can write into: checkpoints feed the report, and a folder
    others can write into lets them plant a file or a link where a checkpoint goes."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.stat(path)
    except OSError as e:
        raise Fatal(f"--state {path}: {e.strerror}")
    import stat

    if not stat.S_ISDIR(st.st_mode):
        raise Fatal(f"--state {path}: not a directory")
    if st.st_uid != os.geteuid():
        raise Fatal(f"--state {path}: owned by uid {st.st_uid}, not by you (uid {os.geteuid()}); "
                    "name a folder of your own")
    if st.st_mode & 0o022:
        raise Fatal(f"--state {path}: others can write into it (mode {stat.S_IMODE(st.st_mode):04o}); "
                    f"chmod go-w it, or name a folder of your own")


def _checkpoint_encode(result):
    """A map result as a checkpoint: the magic line, a JSON header (lengths of the byte fields
    and parts, and the plain values), the bytes, and a BLAKE2b-256 of all that came before.
    Nothing in it is code: loading one never runs anything, as a pickle would."""
    blobs = [result[k] for k in _CHECKPOINT_BYTES] + list(result["parts"])
    header = json.dumps({
        "sizes": [len(b) for b in blobs],
        "parts": len(result["parts"]),
        "seconds": float(result.get("seconds", 0.0)),
        "began": float(result.get("began", 0.0)),
        "worker": str(result.get("worker", "")),
    }).encode()
    body = CHECKPOINT_MAGIC + len(header).to_bytes(4, "big") + header + b"".join(blobs)
    return body + hashlib.blake2b(body, digest_size=32).digest()


def _checkpoint_decode(data):
    """The map result a checkpoint holds; CheckpointError for anything else."""
    if not data.startswith(CHECKPOINT_MAGIC):
        raise CheckpointError("not a trawl-dask checkpoint of this version")
    if len(data) < len(CHECKPOINT_MAGIC) + 4 + 32:
        raise CheckpointError("truncated")
    body, digest = data[:-32], data[-32:]
    if hashlib.blake2b(body, digest_size=32).digest() != digest:
        raise CheckpointError("damaged (its digest does not match)")
    at = len(CHECKPOINT_MAGIC)
    n = int.from_bytes(body[at:at + 4], "big")
    at += 4
    try:
        h = json.loads(body[at:at + n])
        sizes, parts = h["sizes"], h["parts"]
        ok = (isinstance(sizes, list) and all(isinstance(x, int) and x >= 0 for x in sizes)
              and isinstance(parts, int) and parts == len(sizes) - len(_CHECKPOINT_BYTES))
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok or at + n + sum(sizes) != len(body):
        raise CheckpointError("damaged (its header does not match its contents)")
    at += n
    blobs = []
    for size in sizes:
        blobs.append(body[at:at + size])
        at += size
    out = dict(zip(_CHECKPOINT_BYTES, blobs))
    out["parts"] = blobs[len(_CHECKPOINT_BYTES):]
    out["seconds"] = float(h.get("seconds", 0.0))
    out["began"] = float(h.get("began", 0.0))
    out["worker"] = str(h.get("worker", ""))
    return out


def _write_private(folder, path, data, prefix):
    """Writes ``data`` to ``path`` through a temporary file of a random name created with
    O_EXCL and O_NOFOLLOW (mkstemp) in ``folder``, synced, then renamed over ``path``: a link
    planted at either name is never written through."""
    import tempfile

    fd, tmp = tempfile.mkstemp(dir=folder, prefix=prefix, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _checkpoint_write(folder, path, result):
    """Writes a checkpoint (see ``_write_private``)."""
    _write_private(folder, path, _checkpoint_encode(result), ".ckpt-")


def _json_write(folder, path, value):
    """A small JSON file, written as checkpoints are."""
    _write_private(folder, path, json.dumps(value).encode(), ".run-")


def _checkpoint_read(path):
    """Reads a checkpoint, never through a link and never from anything but a regular file."""
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if isinstance(e, FileNotFoundError):
            raise
        raise CheckpointError(f"cannot be opened as a plain file ({e.strerror})")
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise CheckpointError("not a regular file")
        # The size its header declares, checked before the rest is read: a damaged or planted
        # file of gigabytes is refused at once, not read whole first.
        head = f.read(len(CHECKPOINT_MAGIC) + 4)
        if not head.startswith(CHECKPOINT_MAGIC) or len(head) < len(CHECKPOINT_MAGIC) + 4:
            raise CheckpointError("not a trawl-dask checkpoint of this version")
        n = int.from_bytes(head[len(CHECKPOINT_MAGIC):], "big")
        if n > _HEADER_MAX:
            raise CheckpointError(f"damaged (a header of {n} bytes)")
        header = f.read(n)
        try:
            sizes = json.loads(header)["sizes"]
            declared = len(head) + n + sum(int(x) for x in sizes) + 32
        except (ValueError, KeyError, TypeError):
            raise CheckpointError("damaged (its header does not decode)") from None
        if declared != st.st_size:
            raise CheckpointError(f"damaged (its header declares {declared} bytes; the file has {st.st_size})")
        return _checkpoint_decode(head + header + f.read())
