"""What a worker sees of /proc and /sys (the prologue's, inside its own mount namespace, before its
capabilities are dropped). Stdlib only. MIT license, part of ktui.

- /proc: :data:`PROC_READ_ONLY` read-only and :data:`PROC_MASKED` hidden (:func:`harden_proc`).
- /sys, one of three views (the spec's ``sysfs``):
  - ``minimal`` (:func:`minimal_sysfs`): an empty read-only tmpfs holding, bound from a sysfs of the
    worker's own network namespace, only the CPUs, the NUMA nodes and transparent huge pages'
    settings, its loopback, and, for a GPU worker, the NVIDIA PCI devices, the nvidia driver's
    entry and its modules. No firmware tables (ACPI, DMI), disks, network devices, other PCI
    devices, kernel knobs. Modelled on gVisor's sysfs, which runs CUDA through nvproxy with CPUs and empty folders
    only (google/gvisor pkg/sentry/fsimpl/sys);
  - ``own`` (:func:`own_sysfs`): a whole sysfs of its own network namespace (no interface of the
    machine, everything else);
  - ``host``: the host's /sys bound read-only (the caller does it).
"""
import ctypes
import os

from .oslib import (
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_RDONLY,
    MS_REC,
    MS_REMOUNT,
    _locked_flags,
    _mount,
    libc,
)

SYSFS_MODES = ("minimal", "own", "host")

#: what of the worker's /proc is read-only (the defaults of runc/moby's ``ReadonlyPaths``): /proc/sys
#: above all. A sysctl file's permission is its mode against the caller's uid, not a capability: as
#: root (ktui run as root maps the worker's root to the host's) a worker could write the host's
#: ``kernel.core_pattern`` (a ``|program`` there runs as the host's root on the next crash anywhere),
#: ``vm.drop_caches``; as any user, the caps the prologue lowered in its own IPC namespace (shmmax:
#: 1 TiB again) are its to raise back
PROC_READ_ONLY = ("/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus", "/proc/fs")
#: ...and what is hidden (moby's ``MaskedPaths``): /proc/keys lists the descriptions of the keys in
#: the user's own keyrings (@u, @us), which no session keyring of its own hides; kernel memory and
#: timer tables
PROC_MASKED = ("/proc/keys", "/proc/key-users", "/proc/kcore", "/proc/timer_list", "/proc/sched_debug",
               "/proc/latency_stats", "/proc/acpi", "/proc/scsi", "/proc/asound")


def harden_proc(report):
    """Make :data:`PROC_READ_ONLY` read-only and cover :data:`PROC_MASKED` (a file with /dev/null, a
    folder with an empty read-only tmpfs) in this process's /proc (its own mount namespace's; the
    capabilities dropped after this keep the worker from undoing it). Fills ``report["proc_read_only"]``
    and ``report["proc_masked"]``; True when /proc/sys is read-only."""
    import stat

    for p in PROC_READ_ONLY:
        if not os.path.lexists(p):
            continue
        try:
            _mount(p, p, None, MS_BIND | MS_REC)
            _mount(None, p, None, MS_BIND | MS_REMOUNT | MS_RDONLY | _locked_flags(p))
            report["proc_read_only"].append(p)
        except OSError as exc:
            report["errors"].append(f"{p}: {exc}")
    for p in PROC_MASKED:
        try:
            st = os.lstat(p)
        except OSError:
            continue
        try:
            if stat.S_ISDIR(st.st_mode):
                _mount("tmpfs", p, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=4k,mode=0555")
            else:
                _mount("/dev/null", p, None, MS_BIND)
            report["proc_masked"].append(p)
        except OSError as exc:
            report["errors"].append(f"{p}: {exc}")
    return "/proc/sys" in report["proc_read_only"]


def own_sysfs(target, report):
    """A sysfs of the worker's own network namespace at ``target`` (read-only) instead of the
    host's /sys: /sys/class/net then lists its loopback only, not the machine's interfaces. False
    when the kernel refuses (the caller binds the host's then)."""
    try:
        _mount("sysfs", target, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        report["own_sysfs"] = True
        report["sysfs"] = "own"
        return True
    except OSError as exc:
        report["errors"].append(f"sysfs: {exc}")
        return False


#: what any worker's minimal /sys holds (relative to /sys): the CPUs (online, possible, caches and
#: topology: torch's cpuinfo, OpenMP, oneDNN read them), the NUMA nodes, THP settings (glibc), and
#: its own network namespace's interfaces (the loopback only)
SYSFS_KEEP = ("devices/system/cpu", "devices/system/node", "kernel/mm/transparent_hugepage", "class/net",
              "devices/virtual/net")
#: ...and a GPU worker's: the NVIDIA PCI devices (vendor 0x10de) with their bus/pci/devices links,
#: the driver's entry and these modules
NVIDIA_PCI_VENDORS = ("0x10de",)
GPU_MODULES = ("nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem")
#: top-level folders of sysfs, made (empty) so that a program listing them finds the usual layout
SYSFS_TOP = ("block", "bus", "class", "dev", "devices", "firmware", "fs", "kernel", "module", "power")


def _pci_entries(sysfs, vendors):
    """(folders to keep, {link path: link text}) for the PCI devices of ``vendors`` in a sysfs
    mounted at ``sysfs`` (paths relative to it)."""
    keep, links = [], {}
    base = os.path.join(sysfs, "bus", "pci", "devices")
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return keep, links
    for name in names:
        link = os.path.join(base, name)
        try:
            with open(os.path.join(link, "vendor")) as fh:
                if fh.read().strip().lower() not in vendors:
                    continue
            text = os.readlink(link)
            with open(os.path.join(link, "uevent")) as fh:
                driver = [ln.split("=", 1)[1].strip() for ln in fh if ln.startswith("DRIVER=")]
        except OSError:
            continue
        rel = os.path.relpath(os.path.realpath(link), os.path.realpath(sysfs))
        if rel.startswith("..") or not rel.startswith("devices/"):
            continue
        keep.append(rel)
        links[f"bus/pci/devices/{name}"] = text
        for d in driver:
            if d and "/" not in d and f"bus/pci/drivers/{d}" not in keep:
                keep.append(f"bus/pci/drivers/{d}")
    if keep:
        keep += [f"module/{m}" for m in GPU_MODULES]
    return [k for k in keep if os.path.isdir(os.path.join(sysfs, k))], links


def minimal_sysfs(target, gpu, report, vendors=NVIDIA_PCI_VENDORS, fresh=True):
    """Mount the minimal /sys at ``target``: a fresh sysfs (this network namespace's) first, the
    folders to keep opened in it, then an empty tmpfs over it holding the usual top-level folders,
    each kept folder bound back at its own path (read-only), the devices' bus/pci/devices links,
    and the tmpfs made read-only. Where the kernel refuses a fresh sysfs (a container whose /sys
    has masked parts), or ``fresh`` is False, the folders are bound from the host's /sys instead,
    less the network ones (the host's interfaces). ``vendors``: the PCI vendor ids a GPU worker
    keeps. Fills ``report["sysfs"]``, ``report["sysfs_kept"]`` and ``report["sysfs_source"]``;
    False when it could not be built (anything mounted on the way is detached, and the caller
    binds the host's /sys)."""
    source, stacked = target, 0
    try:
        if not fresh:
            raise OSError(0, "not asked for")
        _mount("sysfs", target, "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
        stacked = 1
    except OSError as exc:
        report["errors"].append(f"sysfs: {exc} (the minimal /sys is bound from the host's)")
        source = "/sys"
    keep = [k for k in SYSFS_KEEP if os.path.isdir(os.path.join(source, k))
            and (source == target or "net" not in k.split("/"))]
    links = {}
    if gpu:
        extra, links = _pci_entries(source, tuple(v.lower() for v in vendors))
        keep += extra
    held = []
    try:
        for rel in keep:
            held.append((rel, os.open(os.path.join(source, rel), os.O_PATH | os.O_DIRECTORY)))
        _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=256k,mode=0755")
        stacked += 1
        for top in SYSFS_TOP:
            os.makedirs(os.path.join(target, top), exist_ok=True)
        for rel, fd in held:
            dst = os.path.join(target, rel)
            os.makedirs(dst, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", dst, None, MS_BIND)
            stacked += 1
        for rel, text in links.items():
            dst = os.path.join(target, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.symlink(text, dst)
        _mount(None, target, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError as exc:
        report["errors"].append(f"minimal sysfs: {exc}")
        libc().umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
        for _ in range(stacked):  # MNT_DETACH of the whole stack at target (binds below it go with it)
            if libc().umount2(target.encode(), 2) != 0:
                break
        return False
    finally:
        for _rel, fd in held:
            try:
                os.close(fd)
            except OSError:
                pass
    report["sysfs"] = "minimal"
    report["sysfs_kept"] = keep
    report["sysfs_source"] = "own" if source == target else "host"
    report["sysfs_gpu"] = any(k.startswith("devices/pci") for k in keep)
    return True


def mount_sysfs(target, spec, report):
    """The worker's /sys at ``target`` (a folder of its new root) as ``spec["sysfs"]`` says
    (``minimal`` falls back to ``own``, which falls back to the host's). True when done here; False:
    the caller binds the host's /sys (``report["sysfs"]`` is then "host")."""
    mode = spec.get("sysfs") or "host"
    gpu = spec.get("device", "cpu") != "cpu"
    if spec.get("sysfs_note"):
        report["sysfs_note"] = spec["sysfs_note"]
    if mode == "minimal" and minimal_sysfs(target, gpu, report):
        return True
    if mode in ("minimal", "own") and not gpu and own_sysfs(target, report):
        return True
    report["sysfs"] = "host"
    return False
