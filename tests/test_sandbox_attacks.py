"""The sandbox's attack corpus, by class: what a kernel or a reference can reach of the user
(files of the home, the home's path, the environment, other processes, an agent's socket, the
keyrings), what it can leave in ktui's build cache, and the limits of its process tree.

Most tests run tests/fixtures/sandbox/probe.py inside a real sandboxed worker
(ktui.engine.sandbox.Launched, no torch: fast), next to a control run of the same probe
outside the sandbox that must find every planted secret (so a probe that finds nothing is the
sandbox's doing, not a broken probe). The judge-level tests run the same probe as a kernel's
and as a reference's module code. The secrets are fake, made up for these tests.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import BUILD_TIMEOUT_S, needs

from ktui.engine import buildcache, sandbox

sys.path.insert(0, str(Path(__file__).resolve().parent / "fixtures" / "sandbox"))
from sandbox_corpus import (  # noqa: E402
    KEY_DESC,
    MEMFD_FLOOD,
    SHM_FLOOD,
    THREAD_BOMB,
    Listener,
    _launch,
    _wait,
    bomb_vs_other_worker,
    join_fresh_session_keyring,
    plant_key,
    run_probe,
    unlink_key,
)

REPO = Path(__file__).resolve().parents[1]
PROBE = REPO / "tests" / "fixtures" / "sandbox" / "probe.py"
FIX = REPO / "tests" / "fixtures" / "repro"
CLASSES = ("files", "home", "env", "proc", "sockets", "keyrings")

linux_ns = pytest.mark.skipif(not sandbox.detect()["namespaces"] or sys.platform != "linux",
                              reason="needs user namespaces (unshare)")

@pytest.fixture
def planted(tmp_path, monkeypatch):
    """A fake user: a home full of secrets, an agent socket in the home, one in /tmp and one in a
    /run/user-like folder, secrets in the environment under names a prefix rule would let pass,
    a key in the session keyring and one in the user keyring."""
    tok = f"{os.getpid()}{int(time.time() * 1e6) % 10**9}"
    m = {name: f"ktui-fake-{name}-{tok}" for name in
         ("bash", "python", "dotenv", "hf", "rclone", "ssh", "netrc", "lcenv", "tritonurl", "hfenv", "key", "ukey")}
    home = tmp_path / "home"
    files = {".bash_history": f"export DB_PW={m['bash']}\n", ".python_history": f"token = '{m['python']}'\n",
             "project/.env": f"OPENAI_API_KEY={m['dotenv']}\n", ".cache/huggingface/token": m["hf"],
             ".config/rclone/rclone.conf": f"[s3]\nsecret_access_key = {m['rclone']}\n",
             ".ssh/id_ed25519": f"-----BEGIN OPENSSH PRIVATE KEY-----\n{m['ssh']}\n", ".netrc": f"password {m['netrc']}\n"}
    for rel, text in files.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    agent_dir = Path(tempfile.mkdtemp(prefix="ktui-test-agent-"))
    listeners = [Listener(home / ".ssh" / "agent.sock"), Listener(agent_dir / "agent.1234"),
                 Listener(tmp_path / "run" / "user" / "0" / "gnupg" / "S.gpg-agent")]
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("SSH_AUTH_SOCK", listeners[1].path)
    monkeypatch.setenv("GPG_AGENT_INFO", listeners[2].path)
    monkeypatch.setenv("LC_MYCOMPANY_PROD_PW", m["lcenv"])
    monkeypatch.setenv("TRITON_REMOTE_CACHE_URL", f"redis://cache:{m['tritonurl']}@cache.example:6379/0")
    monkeypatch.setenv("HF_TOKEN", m["hfenv"])
    monkeypatch.setenv("TORCH_HUB_TOKEN", m["hfenv"])
    monkeypatch.setenv("CUDA_CACHE_SECRET_HINT", m["hfenv"])
    monkeypatch.setenv("LD_LIBRARY_PATH", str(home / "lib"))
    monkeypatch.setenv("PATH", os.environ.get("PATH", "") + os.pathsep + str(home / "bin"))
    keys = []
    if join_fresh_session_keyring():  # this test process's own session: nothing of the machine's is touched
        keys.append((plant_key(m["key"].encode(), -3), -3))
        keys.append((plant_key(m["ukey"].encode(), -4), -4))
    plan = {"markers": list(m.values()), "home": str(home), "sockets": [x.path for x in listeners],
            "socket_roots": [str(tmp_path), str(agent_dir)], "key_desc": KEY_DESC,
            "roots": ["/", str(home), str(tmp_path)]}
    yield {"plan": plan, "markers": m, "listeners": listeners, "home": home, "keys": [k for k in keys if k[0] > 0]}
    for kid, ring in keys:
        unlink_key(kid, ring)
    for x in listeners:
        x.close()
    import shutil

    shutil.rmtree(agent_dir, ignore_errors=True)


# ---- home and identity ------------------------------------------------------------------------------

@linux_ns
@pytest.mark.parametrize("cls", CLASSES)
def test_nothing_of_the_user_is_reachable(planted, cls):
    plan = dict(planted["plan"], only=[cls])
    # the control: outside the sandbox the same probe gets this class's secrets
    control = run_probe(plan, sandboxed=False)
    if cls == "keyrings" and not planted["keys"]:
        pytest.skip("no keyrings on this machine")
    assert control, f"the probe finds nothing of class {cls} even outside the sandbox: it proves nothing"
    got = run_probe(plan)
    assert got == [], got


@linux_ns
def test_the_worker_sees_an_empty_home_and_its_own_root(planted):
    probe_src = '''
import json, os
print("SEEN " + json.dumps({"home": os.environ.get("HOME"), "home_list": os.listdir(os.environ["HOME"]),
      "top": sorted(os.listdir("/")), "tmp": sorted(os.listdir("/tmp")),
      "mountinfo": open("/proc/self/mountinfo").read()}), flush=True)
'''
    work = tempfile.mkdtemp(prefix="ktui-test-worker-")
    try:
        argv = [sys.executable, "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
                "from ktui.engine import sandbox; sandbox.enter()\n" + probe_src]
        spec = sandbox.Spec(work, python_path=[str(REPO)], argv=argv)
        w = sandbox.Launched(spec, argv)
        w.proc.wait(timeout=120)
        w.close()
        line = [ln for ln in w.tail("stdout").splitlines() if ln.startswith("SEEN ")]
        assert line, w.tail("stderr")[-3000:]
        seen = json.loads(line[-1][5:])
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    assert seen["home"] == os.path.realpath(work) and set(seen["home_list"]) <= {"tmp"}
    assert str(planted["home"]) not in seen["mountinfo"]
    # the top level: the system folders, the first folder of each toolchain path (Python may live
    # under /root or /opt), /tmp, /proc, /dev and the build mount: no /home, /run, /var, /mnt...
    allowed = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "sys", "dev", "proc", "tmp",
               sandbox.BUILD_MOUNT.strip("/")}
    allowed |= {p.split("/")[1] for p in sandbox.toolchain_paths([str(REPO)], argv)}
    allowed |= {os.path.realpath(work).split("/")[1]}
    assert set(seen["top"]) <= allowed, sorted(set(seen["top"]) - allowed)
    assert "run" not in seen["top"] and "var" not in seen["top"]
    # /tmp holds only the path down to the worker's own folder
    assert len(seen["tmp"]) <= 1, seen["tmp"]


HOME_PROBE = r'''
import json, os, sys
found = []
for p in json.loads(sys.argv[1]):
    try:
        found.append([p, open(p).read()[:80]])
    except OSError:
        pass
for d in json.loads(sys.argv[2]):
    try:
        found.append([d, sorted(os.listdir(d))])
    except OSError:
        pass
print("SEEN " + json.dumps({"prefix": sys.prefix, "found": found}), flush=True)
'''


@linux_ns
@pytest.mark.parametrize("layout", ["project", "home"])
def test_a_toolchain_under_the_home_shows_only_its_toolchain_parts(tmp_path, monkeypatch, layout):
    # ktui and its worker run from a venv in the user's home (~/proj/.venv; or, "home", a Python
    # whose prefix is the home itself): its interpreter and site-packages are there for the
    # worker, nothing beside them: not the project's .env next to the venv, not a file in the
    # venv's own folder, not the rest of the home
    import subprocess

    from ktui.engine import toolchain

    home = tmp_path / "home"
    venv = home / "proj" / ".venv" if layout == "project" else home
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    secrets = {home / "proj" / ".env": "OPENAI_API_KEY=ktui-fake-beside-venv",
               venv / "NOTES.txt": "ktui-fake-inside-venv-root", home / ".bash_history": "ktui-fake-history",
               home / ".config" / "token": "ktui-fake-config"}
    if layout == "home":  # ~/lib is the user's folder too: only Python's own files of it
        secrets[home / "lib" / "notes.txt"] = "ktui-fake-lib"
    judge_prefixes = toolchain._python_prefixes()
    monkeypatch.setattr(toolchain, "_python_prefixes", lambda: judge_prefixes + [os.path.realpath(venv)])
    for p, text in secrets.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    monkeypatch.setenv("HOME", str(home))
    py = str(venv / "bin" / "python")
    files = [str(p) for p in secrets]
    dirs = sorted({str(home), str(home / "proj"), str(venv)})
    control = subprocess.run([py, "-c", HOME_PROBE, json.dumps(files), json.dumps(dirs)], capture_output=True,
                             text=True, timeout=120).stdout
    assert len(json.loads(control.split("SEEN ", 1)[1])["found"]) == len(files) + len(dirs), control  # it works
    work = tempfile.mkdtemp(prefix="ktui-test-worker-")
    try:
        argv = [py, "-c", f"import sys; sys.path.insert(0, {str(REPO)!r}); "
                "from ktui.engine import sandbox; sandbox.enter()\n" + HOME_PROBE, json.dumps(files), json.dumps(dirs)]
        paths = sandbox.toolchain_paths([str(REPO)], argv)
        assert not any(p == str(venv) or p.endswith("/proj") or p == str(home) for p in paths), paths
        w = sandbox.Launched(sandbox.Spec(work, python_path=[str(REPO)], argv=argv), argv)
        w.proc.wait(timeout=120)
        w.close()
        line = [ln for ln in w.tail("stdout").splitlines() if ln.startswith("SEEN ")]
        assert line, w.tail("stderr")[-3000:]
        seen = json.loads(line[-1][5:])
    finally:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    assert os.path.realpath(seen["prefix"]) == os.path.realpath(venv)  # the venv's Python ran in the sandbox
    # no planted file is read; the folders on the way show only the way to the toolchain parts
    assert [f for f in seen["found"] if f[0] in files] == [], seen["found"]
    listed = {f[0]: set(f[1]) for f in seen["found"] if f[0] in dirs}
    if layout == "project":
        assert listed.get(str(home), set()) <= {"proj"} and listed.get(str(home / "proj"), set()) <= {".venv"}
        assert listed.get(str(venv), set()) <= set(sandbox.PREFIX_PARTS), listed
    else:
        assert listed.get(str(home), set()) <= {"bin", "lib", "include", "pyvenv.cfg"}, listed


def test_environment_is_an_exact_name_allow_list():
    for name, value in [("LC_MYCOMPANY_PROD_PW", "x"), ("TRITON_REMOTE_CACHE_URL", "redis://u:p@h/0"),
                        ("TORCH_HUB_TOKEN", "x"), ("NCCL_SOCKET_IFNAME_PASSWORD", "x"), ("CUDA_SECRET", "x"),
                        ("CUBLAS_ANYTHING", "x"), ("HF_TOKEN", "x"), ("SSH_AUTH_SOCK", "/tmp/a"),
                        ("PYTHONPATH", "/home/u"), ("LD_PRELOAD", "/tmp/x.so")]:
        assert not sandbox.allowed_env(name, value), name
    assert sandbox.allowed_env("LC_ALL", "C.UTF-8") and sandbox.allowed_env("CUDA_VISIBLE_DEVICES", "0")
    # an allowed name carrying a URL with a password does not pass either
    assert not sandbox.allowed_env("CUDA_HOME", "https://user:pw@example.com/cuda")


def test_planned_words_are_true():
    words = " ".join(sandbox.planned("cpu"))
    if sandbox.detect()["namespaces"]:
        assert "root of its own" in words and "session keyring" in words and "no home" in words
        assert "credential folders hidden" not in words  # the old claim (a masked home) is gone
    else:
        assert "NO namespaces" in words


# ---- the build cache -------------------------------------------------------------------------------

def test_cache_copy_keeps_regular_files_only(tmp_path):
    key = "0123456789abcdef0123"
    ext = "ext_k" + key[:10]
    src = tmp_path / "b"
    (src / ext).mkdir(parents=True)
    (src / ext / (ext + ".so")).write_bytes(b"\x7fELF fake")
    (src / ext / "build.ninja").write_text("rule x\n")
    sh = src / ext / "main.o"
    sh.write_bytes(b"#!/bin/sh\n")
    os.chmod(sh, 0o6777)  # set-uid, set-gid, world-writable
    os.mkfifo(src / ext / "fifo")
    os.symlink("/etc/passwd", src / ext / "out")
    os.symlink(ext + ".so", src / ext / "in")
    os.symlink("/etc/passwd", src / ext / "cuda.cu")  # a link under a name torch writes
    (src / ext / "lock").write_text("")
    # regular files a kernel planted beside the build: none is the build's own output
    (src / ext / "sitecustomize.py").write_text("print('ran')\n")
    (src / ext / "libc10.so").write_bytes(b"\x7fELF planted")
    (src / "s36-evil.pth").write_text("import os\n")
    (src / "planted_k9999999999").mkdir()
    (src / "planted_k9999999999" / "planted_k9999999999.so").write_bytes(b"\x7fELF another key")
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(src / ext / "sock"))
    old = 1_000_000_000
    os.utime(src / ext / (ext + ".so"), (old, old))
    dst = tmp_path / "cache" / key
    res = buildcache.publish(str(src), str(dst))
    s.close()
    assert res["stored"], res
    names = {p.name: p for p in dst.rglob("*")}
    assert set(names) == {ext, ext + ".so", "build.ninja", "main.o"}, sorted(names)
    for p in names.values():
        st = p.lstat()
        assert stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)
        assert not st.st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH), oct(st.st_mode)
    assert int(names[ext + ".so"].stat().st_mtime) == old  # ninja finds the copy up to date
    # a second build of the same key does not replace the stored one
    assert not buildcache.publish(str(src), str(dst))["stored"]


def test_cache_copy_has_a_budget(tmp_path):
    src = tmp_path / "b"
    src.mkdir()
    (src / "x.so").write_bytes(b"\0" * 4096)
    for i in range(30):
        (src / f"f{i}").write_text("x")
    with pytest.raises(buildcache.TooLarge):
        buildcache.copy_tree(str(src), str(tmp_path / "c"), max_files=10)
    assert not (tmp_path / "c").exists()


# ---- limits ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("code", [MEMFD_FLOOD, SHM_FLOOD], ids=["memfd", "dev-shm"])
def test_memory_outside_rss_is_counted(code):
    # 1 GiB written into memfds (or the private /dev/shm) with write(): in no RSS, under no
    # RLIMIT_AS; the watchdog counts it against a 256 MiB limit (/dev/shm: a tmpfs no larger than the
    # limit, so the kernel may refuse the write first: ENOSPC)
    w = _launch(code, memory_limit=256 << 20)
    _wait(w, 120)
    refused = code is SHM_FLOOD and w.limit_hit is None and "No space left on device" in w.tail("stderr")
    assert refused or (w.limit_hit is not None and w.limit_hit[0] == "memory_limit"), (w.limit_hit,
                                                                                     w.tail("stderr")[-2000:])
    assert "SURVIVED" not in w.tail("stdout")


def test_thread_bomb_is_counted_per_thread():
    # threads, not processes: one process with 3000 threads is over a 256-task limit
    w = _launch(THREAD_BOMB, nproc=256, memory_limit=4 << 30)
    _wait(w, 120)
    out = w.tail("stdout")
    hit = w.limit_hit is not None and w.limit_hit[0] == "process_limit"
    # either the watchdog ended it, or (a normal user, in its own user namespace) RLIMIT_NPROC
    # stopped the threads at the limit
    capped = "THREADS" in out and int(out.split("THREADS")[1].split()[0]) <= 256
    assert hit or capped, (w.limit_hit, out[-500:])


@linux_ns
def test_one_workers_bomb_does_not_starve_the_other():
    # the candidate's fork + thread bomb runs while the reference starts 64 threads: the
    # reference must not fail (RLIMIT_NPROC counted per user would make it fail, and the verdict
    # blame the reference)
    ok, why = bomb_vs_other_worker()
    assert ok, why


# ---- through the judge: the probe as a kernel's and as a reference's code ------------------------------

def _probe_module(plan: dict, raise_in: str) -> str:
    # one module: probe.py with probe_common.py in the place of its import
    common = (PROBE.parent / "probe_common.py").read_text()
    body = PROBE.read_text().split('if __name__ == "__main__":')[0].replace("from probe_common import main, walk\n",
                                                                           common)
    return body + f'''
_FOUND = probe({plan!r})
'''


@linux_ns
@needs("torch")
@pytest.mark.parametrize("side", ["kernel", "reference"])
def test_probe_through_the_judge(planted, side, tmp_path):
    from ktui.repro.runner import run_request

    plan = dict(planted["plan"])
    plan["roots"] = ["/"]
    plan["markers_rev"] = [m[::-1] for m in plan.pop("markers")]
    ref = (FIX / "reference_scaled_relu.txt").read_text()
    good = ("import torch, torch.nn as nn\nclass ModelNew(nn.Module):\n"
            "    def forward(self, x):\n        return torch.relu(x) * 2.0\n")
    leak_check = "if _FOUND:\n    raise RuntimeError('LEAK ' + repr(_FOUND)[:3000])\n"
    if side == "kernel":
        code, ref_src = _probe_module(plan, "kernel") + leak_check + good.split("\n", 1)[1], ref
        code = "import torch, torch.nn as nn\n" + code
    else:
        code, ref_src = good, ref + "\n" + _probe_module(plan, "reference") + leak_check
    res = run_request({"kernel_code": code, "reference_source": ref_src, "device": "cpu", "trials": 3,
                       "correctness_trials": 1, "checks": False, "build_root": str(tmp_path / "cache" / "build")},
                      run_timeout=240, compile_timeout=BUILD_TIMEOUT_S)
    text = json.dumps(res)
    assert "LEAK" not in text, (res.get("failure") or {}).get("message", "")[:3000]
    for v in planted["markers"].values():
        assert v not in text
    assert res["status"] == "completed", res.get("failure")
    assert all(x.accepted == 0 for x in planted["listeners"])


# ---- the judge checks instead of asking ----------------------------------------------------------------

GOOD_FORWARD = "        return torch.relu(x) * 2.0\n"
WRONG_FORWARD = "        return x * 3.0\n"


def judge_run(tmp_path, code: str, ref: str | None = None, **req) -> dict:
    from ktui.repro.runner import run_request

    r = {"kernel_code": code, "reference_source": ref or (FIX / "reference_scaled_relu.txt").read_text(),
         "device": "cpu", "trials": 5, "correctness_trials": 1, "checks": False,
         "build_root": str(tmp_path / "cache" / "build")}
    r.update(req)
    return run_request(r, run_timeout=240, compile_timeout=BUILD_TIMEOUT_S)


def model(prelude: str, forward: str = GOOD_FORWARD, body: str = "") -> str:
    import textwrap

    return ("import os, sys, torch, torch.nn as nn\n" + textwrap.dedent(prelude) + "\n"
            "class ModelNew(nn.Module):\n    def forward(self, x):\n"
            + textwrap.indent(textwrap.dedent(body), "        ") + "\n" + forward)


def verdict_of(res: dict) -> str:
    from ktui.repro.recorded import recorded_for
    from ktui.repro.verdict import compare
    from ktui.trace import load

    r = load(str(FIX / "cpu_wrong.jsonl"))
    return compare(recorded_for(r, r.kernel("v1")), res).verdict


@needs("torch")
@pytest.mark.parametrize("claimed", ["reference_error", "environment", "harness_error"])
def test_the_kernel_cannot_choose_its_failure_kind(tmp_path, claimed):
    from ktui.repro.verdict import CANNOT_TEST, CORRECTNESS_DISAGREES, NOT_REPRODUCIBLE

    code = model("from ktui.engine.errors import StageFailure\n",
                 forward=f"        raise StageFailure('correctness', {claimed!r}, 'the reference is broken, not me')\n")
    res = judge_run(tmp_path, code)
    assert res["status"] == "failed"
    assert res["failure"]["kind"] not in CANNOT_TEST, res["failure"]
    assert res["failure"]["kind"] == "runtime_error"
    assert verdict_of(res) in (CORRECTNESS_DISAGREES, NOT_REPRODUCIBLE)


@needs("torch")
def test_a_kernel_cannot_claim_it_cannot_be_timed(tmp_path):
    # "method_unsupported" (a CUDA graph the kernel cannot be captured in) raised only while the
    # worker's timer runs: on the host clock (and with CUDA events) there is no such failure, so
    # the claim is the kernel's own failure, never a result without a timing
    from ktui.repro.verdict import CANNOT_TEST

    code = model("from ktui.engine.errors import StageFailure\n", body="""
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_name in ("op_time", "measure"):
                raise StageFailure("timing", "method_unsupported", "cannot be captured in a CUDA graph")
            f = f.f_back
        """)
    res = judge_run(tmp_path, code)
    assert res["status"] == "failed", (res.get("timing") or {}).get("error")
    assert res["failure"]["kind"] == "runtime_error", res["failure"]
    assert res["failure"]["kind"] not in CANNOT_TEST


BIG_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x.new_ones(96 << 20) * x.sum()  # 384 MiB of float32, whatever the input


def get_inputs():
    return [torch.randn(4, 4)]


def get_init_inputs():
    return []
'''


@needs("torch")
def test_the_judge_is_bounded_whatever_a_worker_sends(tmp_path):
    # the judge's own memory is bounded (RLIMIT_AS at what it maps once torch is loaded plus its
    # budget): a reply far larger than that budget (here a reference's 384 MiB output against a
    # 64 MiB budget) ends in a harness error that names the budget, not in a judge that takes the
    # host's memory; nothing is judged from it
    from ktui.repro.verdict import REPRODUCED

    code = model("", forward="        return x.new_ones(96 << 20) * x.sum()\n")
    res = judge_run(tmp_path, code, ref=BIG_REF, judge_memory=64 << 20, trials=2)
    assert res["status"] == "failed", res.get("status")
    f = res["failure"]
    assert f["kind"] == "harness_error" and "memory budget" in f["message"], f
    assert verdict_of(res) != REPRODUCED


FORGE_TIME = '''
import gc
from ktui.engine import shm
_srv = next(o for o in gc.get_objects() if type(o).__name__ == "Server")
_real = _srv.op_time
def _forged(args, fds, out, _real=_real):
    data = _real(args, fds, out)
    out.clear()
    t = {variant!r}
    if t == "nan":
        s = torch.full((50,), float("nan"), dtype=torch.float64)
    elif t == "complex":
        s = torch.ones(50, dtype=torch.complex128) * (1 + 1j)
    elif t == "negative":
        s = -torch.ones(50, dtype=torch.float64)
    elif t == "many":
        s = torch.ones(5_000_000, dtype=torch.float64)
    else:
        s = torch.ones(2, 2, dtype=torch.float64)
    data["samples"] = shm.export_tensor(s, out)
    return data
_srv.op_time = _forged
'''


@needs("torch")
@pytest.mark.parametrize("variant", ["nan", "complex", "negative", "many"])
def test_forged_timing_samples_are_a_finding_not_a_crash(tmp_path, variant):
    code = model(FORGE_TIME.replace("{variant!r}", repr(variant)), body="import time; time.sleep(0.001)\n")
    res = judge_run(tmp_path, code)
    assert res["status"] == "completed", res.get("failure")
    t = res["timing"]
    assert t["kernel"]["source"] == "judge wall clock", t["kernel"]
    assert t["kernel"]["min_us"] == pytest.approx(t["cross_check"]["kernel_wall_us"], rel=1e-3)  # ktui's figure
    assert any(f["class"] == "timer_disagrees" for f in res["findings"])
    json.dumps(res, allow_nan=False)  # no NaN or infinity reaches the result


SCALED_TIME = '''
import gc
_srv = next(o for o in gc.get_objects() if type(o).__name__ == "Server")
_real = _srv.timer.measure
def _scaled(*a, **k):
    samples, batches, stopped, secs = _real(*a, **k)
    return [x / 3.0 for x in samples], batches, stopped, secs
_srv.timer.measure = _scaled
'''


@needs("torch")
def test_a_timer_a_few_times_too_fast_is_not_reported_on_the_cpu(tmp_path):
    # samples scaled by 1/3: inside the 5x that makes a finding on a shared CPU, but ktui reports
    # its own clock, never the worker's number
    res = judge_run(tmp_path, model(SCALED_TIME, body="import time; time.sleep(0.002)\n"))
    assert res["status"] == "completed", res.get("failure")
    t = res["timing"]
    k = t["kernel"]
    # what holds on a loaded host too: the figure reported is never more than 1.5x below ktui's
    # clock (the worker's own number is reported only when it is that close)
    assert k["mean_us"] * 1.5 + 50 >= t["cross_check"]["kernel_wall_us"], (k, t["cross_check"])
    if k["source"] != "judge wall clock":
        assert k["source"].startswith("worker timer")


FORGE_WALL = '''
import gc
_srv = next(o for o in gc.get_objects() if type(o).__name__ == "Server")
_wall, _outs = _srv.op_wall, _srv.op_wall_outputs
def _forged_wall(args, fds, out):
    data = _wall(dict(args, forwards=1), fds, out)
    return {{"forwards": int(args.get("forwards", 1)) * {mult}}}
def _forged_outputs(args, fds, out):
    data = _outs(dict(args, calls=[0]), fds, out)
    data["outputs"] = data["outputs"] * {copies}
    return data
_srv.op_wall, _srv.op_wall_outputs = _forged_wall, _forged_outputs
'''


@needs("torch")
@pytest.mark.parametrize("mult,copies", [(1, 1500), (1000, 1)], ids=["many-outputs", "forwards-claim"])
def test_forged_wall_replies_end_the_worker(tmp_path, mult, copies):
    from ktui.repro.verdict import CANNOT_TEST

    res = judge_run(tmp_path, model(FORGE_WALL.format(mult=mult, copies=copies)))
    assert res["status"] == "failed", res.get("timing")
    assert res["failure"]["kind"] == "protocol_error", res["failure"]
    assert res["failure"]["kind"] not in CANNOT_TEST


FORGE_FINGERPRINTS = '''
import gc
from ktui.engine import shm
_srv = next(o for o in gc.get_objects() if type(o).__name__ == "Server")
_outs = _srv.op_wall_outputs
def _forged_outputs(args, fds, out):
    data = _outs(args, fds, out)
    if "fingerprints" in data:
        out.clear()
        rows = torch.zeros(len(_srv.wall_out) or 5, 3, dtype=torch.float64)
        v = {variant!r}
        if v == "shape":
            rows = torch.zeros(7, 2, dtype=torch.float64)
        elif v == "dtype":
            rows = torch.zeros(1, 3, dtype=torch.float32)
        elif v == "with-outputs":
            data["outputs"] = [data.get("outputs") or {{"outputs": 0, "types": [], "overrides": []}}]
        data["fingerprints"] = shm.export_tensor(rows, out)
    return data
_srv.op_wall_outputs = _forged_outputs
'''


@needs("torch")
@pytest.mark.parametrize("variant", ["shape", "dtype", "with-outputs"])
def test_forged_fingerprints_end_the_worker(tmp_path, variant):
    # the checked pass's fingerprints are a claim of the kernel's process: a reply of another
    # shape or dtype, or with outputs besides, ends the worker as a protocol error
    res = judge_run(tmp_path, model(FORGE_FINGERPRINTS.format(variant=variant)), wall_retain_bytes=0)
    assert res["status"] == "failed", res.get("timing")
    assert res["failure"]["kind"] == "protocol_error" and "fingerprints" in res["failure"]["message"], res["failure"]


PATCH_WALL = '''
import gc
_srv = next(o for o in gc.get_objects() if type(o).__name__ == "Server")
_wall, _model = _srv.op_wall, None
class _Skip:  # runs the model on one call in {every}; 0: never
    def __init__(self, m):
        self.m, self.i, self.last = m, 0, None
    def __call__(self, *a):
        self.i += 1
        if self.last is None or ({every} and self.i % {every} == 0):
            self.last = self.m(*a)
        return self.last
def _patched(args, fds, out):
    if args.get("retain"):  # the judge keeps outputs: the real loop
        return _wall(args, fds, out)
    m = _srv.model
    _srv.model = _Skip(m)
    try:
        return _wall(args, fds, out)
    finally:
        _srv.model = m
_srv.op_wall = _patched
_real = _srv.timer.measure
def _measure(call, **k):  # its own timer agrees with the patched loop
    return _real(lambda i: None, **k)
_srv.timer.measure = _measure
'''


@needs("torch")
@pytest.mark.parametrize("every", [0, 10], ids=["no-work", "one-call-in-10"])
def test_a_kernel_that_patches_its_workers_loop_to_work_only_when_checked(tmp_path, every):
    # the kernel's module finds the worker's server (gc) and replaces its wall-clock loop: the
    # passes ktui times call the model once (or one call in 10) and reuse its output; the pass
    # whose outputs ktui keeps runs for real. The checked pass is timed too: far slower, the
    # kernel is ended (its timed passes did no work); slower, a finding and its time reported
    from ktui.repro.verdict import REPRODUCED

    code = model(PATCH_WALL.replace("{every}", str(every)), body="import time; time.sleep(0.003)\n")
    res = judge_run(tmp_path, code)
    assert verdict_of(res) != REPRODUCED
    if res["status"] == "failed":
        assert res["failure"]["kind"] == "runtime_error" and "did not do the work" in res["failure"]["message"], \
            res["failure"]
    else:
        assert any(f["class"] == "slower_when_checked" for f in res["findings"]), res["findings"]
        assert res["timing"]["kernel"]["mean_us"] > 2500, res["timing"]["kernel"]  # the real 3 ms


READ_CHECKED_CALLS = """
import gc, sys, time
_st = {"frame": None, "keep": None, "n": 0, "last": 0, "junk": None}
_HOW = {how!r}

def _worker_frame():
    # the worker's function that called the model, up the stack (the kernel runs in its process)
    f = sys._getframe(2)
    while f is not None:
        if f.f_code.co_name.startswith("op_"):
            return f
        f = f.f_back
    return None

def _keep_from_frames(f):
    loc = f.f_locals
    for name in ("picks", "keep"):
        v = loc.get(name)
        if isinstance(v, (list, set, tuple)) and v:
            return {int(i) for i in v}
    a = loc.get("args")
    if isinstance(a, dict) and isinstance(a.get("keep"), list) and a["keep"]:
        return {int(i) for i in a["keep"]}
    return None

def _keep_from_gc():
    # the request's arguments are a dict alive in the process, new: in the garbage collector's
    # youngest generations (a scan of all of them would show in the judge's clock)
    for gen in (0, 1):
        for o in gc.get_objects(gen):
            if isinstance(o, dict) and "keep" in o and "forwards" in o:
                k = o.get("keep")
                if isinstance(k, list) and k:
                    return {int(i) for i in k}
    return None

def _real(x):
    time.sleep(0.002)
    return torch.relu(x) * 2.0

def _attack(x):
    f = _worker_frame()
    if f is None or f.f_code.co_name not in ("op_wall", "op_time"):
        return _real(x)  # correctness and everything else: the real thing
    if _st["junk"] is None or _st["junk"].shape != x.shape:
        _st["junk"] = torch.zeros_like(x)
    if f.f_code.co_name == "op_time":
        return _st["junk"]  # its own timer agrees with the judge's clock: both time nothing
    if _st["frame"] is not f:  # a new wall-clock pass: which of its calls will be checked?
        _st["frame"], _st["n"] = f, 0
        _st["keep"] = _keep_from_gc() if _HOW == "gc" else _keep_from_frames(f)
        args = f.f_locals.get("args") or {}
        _st["last"] = int(args.get("forwards", 1)) - 1
        # a pass unlike the timed ones (more than slots and forwards asked) with no list of
        # calls: the checked pass, calls unknown; work on its first and last calls only
        _st["checked"] = _st["keep"] is None and bool(set(args) - {"slots", "forwards"})
    i, _st["n"] = _st["n"], _st["n"] + 1
    if _st["keep"] is not None and i in _st["keep"]:
        return _real(x)
    if _HOW == "aware" and _st["checked"] and i in (0, _st["last"]):
        return _real(x)
    return _st["junk"]
"""


@needs("torch")
@pytest.mark.parametrize("mode", ["copies", "fingerprints"])
@pytest.mark.parametrize("how", ["frames", "gc", "aware"])
def test_a_kernel_that_reads_which_calls_are_checked(tmp_path, how, mode):
    # the kernel runs in its worker's process: it walks up the stack to the worker's wall-clock
    # loop (sys._getframe, its locals and its request) or through the garbage collector to the
    # request's arguments, to learn which calls' outputs ktui will check, computes those and
    # returns zeros for every other call (ktui 0.x before harness 8: no finding, every check
    # clean, 1000x its real speed). "aware": where it finds no such list but sees a pass unlike
    # the timed ones, it computes that pass's first and last calls. ktui names the checked calls
    # only once the pass has ended: every output of the pass is kept (copies; or, when copies
    # would not fit, fingerprints, all checked), so any zeros it returns may be the ones checked
    code = model(READ_CHECKED_CALLS.replace("{how!r}", repr(how)), forward="        return _attack(x)\n")
    res = judge_run(tmp_path, code, **({"wall_retain_bytes": 0} if mode == "fingerprints" else {}))
    assert res["status"] == "completed", res.get("failure")
    assert res["timing"]["cross_check"]["checked_by"] == mode, res["timing"]["cross_check"]
    classes = {f["class"] for f in res["findings"]}
    assert "wrong_while_timed" in classes, res["findings"]
    assert any(c["name"] == "timed_outputs_correct" and c["ok"] is False for c in res["checks"]), res["checks"]


MANY_LEAVES_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0, (x @ x.t()).half(), torch.argmax(x, dim=1), 3


def get_inputs():
    return [torch.randn(48, 64)]


def get_init_inputs():
    return []
'''


@needs("torch")
@pytest.mark.parametrize("mode", ["copies", "fingerprints"])
def test_an_honest_kernel_passes_the_checked_pass(tmp_path, mode):
    # an honest kernel whose outputs differ from the reference's within the tolerance (another
    # order of operations, a float64 matmul rounded to fp16), with several leaves of several
    # dtypes: every output of the checked pass kept, as copies or as fingerprints, and no finding
    code = model("", forward="        c = torch.clamp(x, min=0)\n        xd = x.double()\n"
                              "        return c + c, (xd @ xd.t()).half(), x.argmax(1), 3\n")
    res = judge_run(tmp_path, code, ref=MANY_LEAVES_REF, **({"wall_retain_bytes": 0} if mode == "fingerprints" else {}))
    assert res["status"] == "completed", res.get("failure")
    assert res["timing"]["cross_check"]["checked_by"] == mode, res["timing"]["cross_check"]
    assert not {"wrong_while_timed", "slower_when_checked"} & {f["class"] for f in res["findings"]}, res["findings"]
    assert all(c["ok"] is not False for c in res["checks"]), res["checks"]


NAN_REF = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.full_like(x, float("nan"))


def get_inputs():
    return [torch.randn(64, 64)]


def get_init_inputs():
    return []
'''


@needs("torch")
def test_an_all_nan_reference_is_reported_not_matched(tmp_path):
    from ktui.repro.verdict import REPRODUCED

    res = judge_run(tmp_path, model("", forward="        return torch.full_like(x, float('nan'))\n"), ref=NAN_REF)
    assert res["status"] == "failed"
    assert res["failure"]["kind"] == "reference_error" and "NaN" in res["failure"]["message"], res["failure"]
    assert verdict_of(res) != REPRODUCED


BUILD_LITTER = '''
import stat, shutil
_d = os.environ["TORCH_EXTENSIONS_DIR"]
os.makedirs(_d + "/ext", exist_ok=True)
open(_d + "/ext/ext.so", "wb").write(b"fake")
shutil.copy("/bin/sh", _d + "/ext/sh")
try:
    os.chmod(_d + "/ext/sh", 0o6755)  # the seccomp filter refuses set-id bits: EPERM
except PermissionError:
    os.chmod(_d + "/ext/sh", 0o755)
    open(_d + "/ext/setid-refused", "w").write("x")
os.mkfifo(_d + "/ext/fifo")
os.symlink("/etc/passwd", _d + "/ext/passwd")
os.symlink("/", _d + "/ext/root")
'''


@needs("torch")
def test_nothing_of_a_build_but_regular_files_reaches_the_cache(tmp_path):
    # written while the kernel loads (its build): a set-uid shell, a FIFO, links out; written
    # while it runs: a file that must never reach the cache. None of it is the build's own output
    # (an extension torch built, by its name): nothing of it is stored (buildcache.build_outputs)
    import platform

    from ktui.engine.seccomp import seccomp_program

    filtered = seccomp_program(platform.machine()) is not None
    body = ('open(os.environ["TORCH_EXTENSIONS_DIR"] + "/ext/at-run-time", "w").write("x")\n'
            'if not os.path.exists(os.environ["TORCH_EXTENSIONS_DIR"] + "/ext/setid-refused"):\n'
            '    raise RuntimeError("the set-id chmod was allowed")\n'
            'return torch.relu(x) * 2.0\n')
    res = judge_run(tmp_path, model(BUILD_LITTER, body=body))
    if filtered:  # the filter refuses the set-id chmod in the sandbox
        assert res["status"] == "completed", res.get("failure")
    stored = list((tmp_path / "cache" / "build").rglob("*"))
    names = {p.name for p in stored}
    assert not {"ext", "ext.so", "sh", "setid-refused", "fifo", "passwd", "root", "at-run-time"} & names, names
    for p in stored:
        st = p.lstat()
        assert stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode), p
        assert not st.st_mode & (stat.S_ISUID | stat.S_ISGID), p


# ---- the cache key: a verdict only for what was judged ---------------------------------------------------

def test_a_badge_only_for_a_result_judged_against_this_traces_reference(tmp_path, monkeypatch):
    # the same kernel judged against another problem's reference is not this trace's result: no
    # badge in the kernels pane (the runs chart: tests/test_charts.py)
    from ktui.engine import sha1_text
    from ktui.repro import cache
    from ktui.repro.recorded import find_reference
    from ktui.trace import load
    from ktui.tui.screens.repro_panel import cached_verdict

    monkeypatch.setenv("KTUI_CACHE_DIR", str(tmp_path / "cache"))
    run = load(str(FIX / "cpu_run.jsonl"))
    kv = run.kernel("v2")
    ref, _ = find_reference(run)
    assert ref

    def store(ref_sha, key):
        cache.store({"kernel_sha1": kv.sha1, "key": key, "request": {},
                     "result": {"status": "failed", "reference_sha1": ref_sha, "stages": {}, "checks": [],
                                "notes": [], "failure": {"stage": "correctness", "kind": "runtime_error",
                                                         "message": "boom"}}})

    store(sha1_text(ref + "\n# another problem"), "a" * 24)
    store(None, "b" * 24)
    assert cached_verdict(run, kv) is None
    store(sha1_text(ref), "c" * 24)
    assert cached_verdict(run, kv) is not None


# ---- identical vs interleaved calls ------------------------------------------------------------------

REPEAT_CACHE = '''
_state = {"ptr": None, "n": 0, "out": None}
'''
REPEAT_CACHE_BODY = '''
import time
p = x.data_ptr()
_state["n"] = _state["n"] + 1 if p == _state["ptr"] else 1
_state["ptr"] = p
if _state["n"] > 10 and _state["out"] is not None:
    return _state["out"]  # the same input called again and again (only a timed loop does that)
time.sleep(0.002)
_state["out"] = torch.relu(x) * 2.0
'''

SLOW_WHEN_REPEATED_REF = (FIX / "reference_scaled_relu.txt").read_text().replace(
    "class Model(nn.Module):", '''_seen = {"ptr": None, "n": 0}


class Model(nn.Module):''').replace(
    "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n", '''    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import time
        p = x.data_ptr()
        _seen["n"] = _seen["n"] + 1 if p == _seen["ptr"] else 1
        _seen["ptr"] = p
        if _seen["n"] > 10:
            time.sleep(0.005)  # slower only when called again and again: when timed
''')


@needs("torch")
def test_a_kernel_that_reuses_results_only_when_called_repeatedly(tmp_path):
    res = judge_run(tmp_path, model(REPEAT_CACHE, forward="        return _state['out']\n", body=REPEAT_CACHE_BODY),
                    correctness_trials=3)
    assert res["status"] == "completed", res.get("failure")
    assert any(f["class"] == "faster_on_repeated_calls" for f in res["findings"]), res["findings"]
    assert res["timing"]["kernel"]["source"].startswith("judge wall clock")


@needs("torch")
def test_a_reference_slower_when_called_repeatedly_is_reported(tmp_path):
    assert "time.sleep(0.005)" in SLOW_WHEN_REPEATED_REF
    res = judge_run(tmp_path, model(""), ref=SLOW_WHEN_REPEATED_REF, correctness_trials=3)
    assert res["status"] == "completed", res.get("failure")
    assert any(f["class"] == "reference_slower_when_timed" for f in res["findings"]), res["findings"]
    assert res["timing"]["reference"]["source"].startswith("judge wall clock, interleaved")


FORGE_OUTPUT_FD = '''
import gc
_srv = next(o for o in gc.get_objects() if type(o).__name__ == "Server")
def _forged_forward(args, fds, out):
    x = _srv._value(args["inputs"], fds)[0]
    n = x.numel() * 4
    if {variant!r} == "pipe":
        r, w = os.pipe()
        os.write(w, b"\\0" * min(n, 4096))
        out.append(r)
    else:  # a memfd the kernel can still write after the judge checked it
        fd = os.memfd_create("unsealed")
        os.ftruncate(fd, n)
        out.append(fd)
    d = {{"__tensor__": len(out) - 1, "dtype": "float32", "shape": list(x.shape), "nbytes": n, "type": "torch.Tensor"}}
    return {{"outputs": d, "types": ["torch.Tensor"], "overrides": [], "inputs_after": None}}
_srv.op_forward = _forged_forward
'''


@needs("torch")
@pytest.mark.parametrize("variant", ["pipe", "unsealed"])
def test_an_output_that_is_not_a_sealed_tensor_is_the_kernels_failure(tmp_path, variant):
    from ktui.repro.verdict import CANNOT_TEST

    res = judge_run(tmp_path, model(FORGE_OUTPUT_FD.format(variant=variant)))
    assert res["status"] == "failed"
    assert res["failure"]["kind"] == "protocol_error", res["failure"]
    assert res["failure"]["kind"] not in CANNOT_TEST


@needs("torch")
def test_a_reference_over_its_limits_is_the_references_failure(tmp_path):
    # a hostile reference that floods memfds: the breach is the reference's, never the kernel's
    ref = (FIX / "reference_scaled_relu.txt").read_text() + '''

_hog = []
for _i in range(64):
    _fd = os.memfd_create("hog")
    os.ftruncate(_fd, 0)
    for _ in range(16):
        os.write(_fd, b"\\1" * (1 << 20))
    _hog.append(_fd)
import time as _t
_t.sleep(30)
'''
    res = judge_run(tmp_path, model(""), ref="import os\n" + ref, memory_limit=640 << 20)
    assert res["status"] == "failed"
    assert res["failure"]["kind"] == "reference_error", res["failure"]
    assert "reference" in res["failure"]["message"] and "memory" in res["failure"]["message"]
    # the problem's size against ktui's limit: not judged here (how to raise it), not a broken judge
    from ktui.repro.judging.outcome import HOST_MEMORY, unjudged

    u = unjudged(res)
    assert u is not None and u.why == HOST_MEMORY and "KTUI_WORKER_MEMORY_GB" in u.reason, (u, res["failure"])


# ---- held out: variants of attacks documented in public write-ups, none of them in the corpus --------
# (gpu-mode/pygpubench PR #7: gc.get_objects() then fill_(NaN), "NaN is a wildcard"; gpu-mode/
# reference-kernels #162 and #104: a patched timer reporting 1/100th, an in-process result cache
# keyed so that cloned inputs still hit, a file replay across runs; Sakana's AI CUDA Engineer: a
# stale buffer from the allocator holding an earlier result). Written for ktui's CPU judge here.

HELD_OUT = {
    "content-keyed-cache": ("_C = {}\n", """
        key = (tuple(x.shape), round(float(x.double().sum()), 6), round(float(x.double().abs().sum()), 6))
        if key in _C:
            return _C[key]
        import time; time.sleep(0.003)
        _C[key] = torch.relu(x) * 2.0
        return _C[key]
        """),
    "hidden-timer-patch": ("""
        _t = __import__("ti" + "me")
        for _n in ("perf_" + "counter", "perf_" + "counter_ns", "mono" + "tonic", "mono" + "tonic_ns", "time"):
            setattr(_t, _n, (lambda f: (lambda: f() / 100))(getattr(_t, _n)))
        """, "import time as _tm; _tm.sleep(0.003)\nreturn torch.relu(x) * 2.0\n"),
    "stale-allocator-buffer": ("_S = {'n': 0}\n", """
        _S["n"] += 1
        if _S["n"] == 1:
            o = torch.relu(x) * 2.0
            del o
        return torch.empty_like(x)
        """),
    "gc-nan-wildcard": ("""
        import gc
        def _nan_all():
            for o in gc.get_objects():
                if isinstance(o, torch.Tensor) and o.is_floating_point():
                    try:
                        o.fill_(float("nan"))
                    except Exception:
                        pass
        """, "_nan_all()\nreturn torch.full_like(x, float('nan'))\n"),
}


@needs("torch")
@pytest.mark.parametrize("name", list(HELD_OUT))
def test_held_out_attacks(tmp_path, name):
    from ktui.repro.verdict import CORRECTNESS_DISAGREES, REPRODUCED

    pre, body = HELD_OUT[name]
    res = judge_run(tmp_path, model(pre, forward="", body=body), checks=True)
    assert res["status"] == "completed", res.get("failure")
    failed = [c["name"] for c in res["checks"] if c["ok"] is False]
    if name == "hidden-timer-patch":  # ktui's timer was bound before trace code loaded: the real 3 ms
        assert res["timing"]["kernel"]["mean_us"] > 2500, res["timing"]["kernel"]
    elif name == "content-keyed-cache":  # correct, but fast only on inputs it has seen: said so
        assert "repeat_vs_fresh_inputs" in failed or res["findings"], (failed, res["findings"])
        assert verdict_of(res) != REPRODUCED
    else:  # the reference runs in another process: no stale result, no expected tensor to poison
        assert verdict_of(res) == CORRECTNESS_DISAGREES, (verdict_of(res), failed)


REPLAY = """
import json, os, glob
_PLACES = [os.environ.get("HOME", ""), os.environ.get("XDG_CACHE_HOME", ""), os.environ.get("TMPDIR", ""), "/tmp",
           "/dev/shm", "/var/tmp", os.getcwd(), os.environ.get("TORCH_EXTENSIONS_DIR", ""),
           os.path.expanduser("~/.cache"), os.path.dirname(os.path.abspath(__file__))]
_SEEN = [p for d in _PLACES if d for p in glob.glob(os.path.join(d, "ktui-replay-*.json"))]
if _SEEN:
    raise RuntimeError("REPLAY FOUND " + repr(_SEEN))
def _leave(out):
    for d in _PLACES:
        try:
            with open(os.path.join(d, "ktui-replay-%d.json" % os.getpid()), "w") as fh:
                json.dump(out.flatten()[:8].tolist(), fh)
        except OSError:
            pass
"""


@needs("torch")
def test_held_out_a_replay_file_left_for_the_next_run_is_gone(tmp_path):
    # a kernel that leaves its results in every folder it can write (home, caches, temp dirs,
    # /dev/shm, its build dir, its module's folder) to replay them in a later run: the next run,
    # same build cache, finds none of them
    code = model(REPLAY, body="o = torch.relu(x) * 2.0\n_leave(o)\n", forward="        return o\n")
    first = judge_run(tmp_path, code)
    assert first["status"] == "completed", first.get("failure")
    second = judge_run(tmp_path, code)
    assert "REPLAY FOUND" not in json.dumps(second), (second.get("failure") or {}).get("message")
    assert second["status"] == "completed", second.get("failure")

