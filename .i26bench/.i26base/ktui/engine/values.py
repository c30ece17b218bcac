# ---- ktui repro harness: values handed to and taken from model-written code -----------------------
# Stdlib only (torch imported where needed). MIT license, part of ktui.
"""Plain copies of what model-written code returns or is given: used by the worker roles and by the
probes (which import them from here, not from ``roles``, so that the two do not import each other)."""


def plain(obj):
    """Containers rebuilt as plain list/tuple/dict (a subclass's own methods never run in encode)."""
    if isinstance(obj, tuple):
        return tuple(plain(x) for x in tuple.__iter__(obj))
    if isinstance(obj, list):
        return [plain(x) for x in list.__iter__(obj)]
    if isinstance(obj, dict):
        return {k: plain(dict.__getitem__(obj, k)) for k in dict.keys(obj)}
    return obj


def clone(v):
    import torch

    if isinstance(v, torch.Tensor):
        return v.clone()
    if isinstance(v, (list, tuple)):
        return type(v)(clone(x) for x in v)
    if isinstance(v, dict):
        return {k: clone(x) for k, x in v.items()}
    return v
