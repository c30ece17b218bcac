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
from conftest import needs

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
    src = tmp_path / "b"
    (src / "ext").mkdir(parents=True)
    (src / "ext" / "ext.so").write_bytes(b"\x7fELF fake")
    (src / "ext" / "build.ninja").write_text("rule x\n")
    sh = src / "ext" / "sh"
    sh.write_bytes(b"#!/bin/sh\n")
    os.chmod(sh, 0o6777)  # set-uid, set-gid, world-writable
    os.mkfifo(src / "ext" / "fifo")
    os.symlink("/etc/passwd", src / "ext" / "out")
    os.symlink("ext.so", src / "ext" / "in")
    (src / "ext" / "lock").write_text("")
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(src / "ext" / "sock"))
    old = 1_000_000_000
    os.utime(src / "ext" / "ext.so", (old, old))
    dst = tmp_path / "cache" / "key"
    res = buildcache.publish(str(src), str(dst))
    s.close()
    assert res["stored"], res
    names = {p.name: p for p in dst.rglob("*")}
    assert set(names) == {"ext", "ext.so", "build.ninja", "sh"}, sorted(names)
    for p in names.values():
        st = p.lstat()
        assert stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)
        assert not st.st_mode & (stat.S_ISUID | stat.S_ISGID | stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH), oct(st.st_mode)
    assert int(names["ext.so"].stat().st_mtime) == old  # ninja finds the copy up to date
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
    # RLIMIT_AS; the watchdog counts it against a 256 MiB limit
    w = _launch(code, memory_limit=256 << 20)
    _wait(w, 120)
    assert w.limit_hit is not None and w.limit_hit[0] == "memory_limit", (w.limit_hit, w.tail("stderr")[-2000:])
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
    body = PROBE.read_text().split('if __name__ == "__main__":')[0]
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
                      run_timeout=240, compile_timeout=240)
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
    return run_request(r, run_timeout=240, compile_timeout=240)


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
    data = _wall(dict(args, forwards=1, keep=[0] if args.get("keep") else None), fds, out)
    return {{"forwards": int(args.get("forwards", 1)) * {mult}}}
def _forged_outputs(args, fds, out):
    data = _outs(args, fds, out)
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
os.chmod(_d + "/ext/sh", 0o6755)
os.mkfifo(_d + "/ext/fifo")
os.symlink("/etc/passwd", _d + "/ext/passwd")
os.symlink("/", _d + "/ext/root")
'''


@needs("torch")
def test_nothing_of_a_build_but_regular_files_reaches_the_cache(tmp_path):
    # written while the kernel loads (its build): a set-uid shell, a FIFO, links out; written
    # while it runs: a file that must never reach the cache
    code = model(BUILD_LITTER, body='open(os.environ["TORCH_EXTENSIONS_DIR"] + "/ext/at-run-time", "w").write("x")\n')
    res = judge_run(tmp_path, code)
    assert res["status"] == "completed", res.get("failure")
    stored = list((tmp_path / "cache" / "build").rglob("*"))
    names = {p.name for p in stored}
    assert "ext.so" in names and "sh" in names, names
    assert not {"fifo", "passwd", "root", "at-run-time"} & names, names
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
