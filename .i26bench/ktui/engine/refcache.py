# ---- ktui repro harness: the reference's outputs, computed once per problem -----------------------
# A sweep judges many kernels of one problem on the same inputs (``ktui verify`` gives every kernel
# of a problem one secret input seed): the reference's outputs on the judged inputs (the correctness
# trials, the held-out trial, the timed inputs) are computed once and kept here, keyed by (harness,
# reference source sha1, input seed, init seed, device, torch), and reused for every other kernel.
#
# Inside the judge's trust boundary: only the judge reads and writes this directory (it is masked
# from every worker, like the build cache's root); an entry is the reference worker's own reply, and
# it is used only when the inputs the reference makes now are byte for byte those it was computed on
# (their digest is in the entry), so a reference whose inputs are not a function of the seed is simply
# run again. Stored with torch.save, read with torch.load(weights_only=True). MIT license, part of ktui.
import hashlib
import json
import mmap
import os
import tempfile

from .defaults import HARNESS_VERSION
from .errors import sha1_text


def inputs_digest(value, fds):
    """sha1 of a held value tree: its descriptors (dtype, shape, strides; not the fd numbers) and
    the bytes of every memfd it names."""
    h = hashlib.sha1()

    def strip(v):
        if isinstance(v, list):
            return [strip(x) for x in v]
        if isinstance(v, dict):
            return {k: (strip(x) if k != "__tensor__" else "t") for k, x in sorted(v.items())}
        return v

    h.update(json.dumps(strip(value), sort_keys=True, default=str).encode())
    for fd in fds:
        size = os.fstat(fd).st_size
        h.update(str(size).encode())
        if size:
            with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as mm:
                h.update(mm)
    return h.hexdigest()


class ReferenceCache:
    """The reference's outputs for one (reference, input seed, init seed, device) on disk."""

    def __init__(self, root, reference_source, input_seed, init_seed, device_desc):
        try:
            from importlib.metadata import version

            tv = version("torch")
        except Exception:  # noqa: BLE001 - no torch metadata: still a key
            tv = "?"
        key = sha1_text("|".join([str(HARNESS_VERSION), sha1_text(reference_source or ""), str(int(input_seed)),
                                  str(int(init_seed)), str(device_desc), tv]))
        self.dir = os.path.join(root, key[:2], key)
        self.hits = self.misses = self.stored = 0
        self.rejected = 0  # entries whose inputs differed from the reference's inputs now

    def _path(self, seed):
        return os.path.join(self.dir, f"{int(seed)}.pt")

    def get(self, seed, digest):
        """The cached outputs for inputs of ``seed`` whose digest is ``digest``, or None."""
        import torch

        p = self._path(seed)
        if not os.path.exists(p):
            self.misses += 1
            return None
        try:
            entry = torch.load(p, map_location="cpu", weights_only=True)
        except Exception:  # noqa: BLE001 - a damaged entry: computed again
            self.misses += 1
            return None
        if not isinstance(entry, dict) or entry.get("digest") != digest or "outputs" not in entry:
            self.rejected += 1
            return None
        self.hits += 1
        return entry["outputs"]

    def put(self, seed, digest, outputs):
        """Keep the reference's decoded outputs for inputs of ``seed`` (atomically; errors ignored)."""
        import torch

        try:
            os.makedirs(self.dir, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.dir, suffix=".tmp")
            os.close(fd)
            torch.save({"digest": digest, "outputs": outputs}, tmp)
            os.replace(tmp, self._path(seed))
            self.stored += 1
        except Exception:  # noqa: BLE001 - a cache that cannot be written is only slower
            try:
                os.unlink(tmp)
            except Exception:  # noqa: BLE001
                pass

    def summary(self):
        return {"hits": self.hits, "misses": self.misses, "stored": self.stored, "rejected": self.rejected}


class CachedOutputs:
    """The reference's outputs from the cache, in the shape the judge's comparison reads (a held
    value: ``value`` for its size check, ``decoded()``)."""

    owns = False

    def __init__(self, outputs):
        self._decoded = outputs
        self.fds = []
        self.value = _descriptors(outputs)

    def decoded(self):
        return self._decoded

    def close(self):
        pass


def _descriptors(v):
    import torch

    if isinstance(v, torch.Tensor):
        return {"__tensor__": -1, "nbytes": int(v.numel() * v.element_size())}
    if isinstance(v, (list, tuple)):
        return [_descriptors(x) for x in v]
    if isinstance(v, dict):
        return {k: _descriptors(x) for k, x in v.items()}
    return v
