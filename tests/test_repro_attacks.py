"""The attack corpus: kernels written to cheat, to leak, to persist or to crash ktui (CPU, CI).

Each test runs hostile model-style code through the real path (ktui -> judge process ->
sandboxed reference and candidate workers) and asserts the outcome: the verdict is not forged (a
wrong kernel is "correctness disagrees"), nothing outside the sandbox's temp dir changed, no
process survives, no secret reached the kernel by any path, and this process is alive.

The secrets below are fake, made up for these tests.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from conftest import BUILD_TIMEOUT_S, needs

from ktui.engine import protocol
from ktui.repro import cache
from ktui.repro.recorded import recorded_for
from ktui.repro.runner import run_request
from ktui.repro.verdict import CORRECTNESS_DISAGREES, NOT_REPRODUCIBLE, compare

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "repro"
pytestmark = needs("torch")

FAKE_SECRETS = {
    "PGPASSWORD": "ktui-fake-pg-5f1e", "AWS_SECRET_ACCESS_KEY": "ktui-fake-aws-9a2b", "GITHUB_TOKEN": "ktui-fake-gh-77c3",
    "DATABASE_URL": "postgres://u:ktui-fake-db-31d0@h/db", "SECRET_KEY_BASE": "ktui-fake-skb-c0de",
    "GH_PAT": "ktui-fake-pat-ab12", "AWS_ACCESS_KEY_ID": "ktui-fake-akid-4d4d", "OPENAI_API_KEY": "ktui-fake-oai-e5e5",
    "SSH_AUTH_SOCK": "/tmp/ktui-fake-agent.sock",
}
REF = (FIX / "reference_scaled_relu.txt").read_text()
# scripts/gpu/sandbox.sh runs the same corpus with CUDA kernels on an H200
DEVICE = os.environ.get("KTUI_TEST_ATTACK_DEVICE", "cpu")
WRONG = "        return x * 3.0  # wrong on purpose: the reference is 2 * relu(x)\n"


def kernel(body: str, prelude: str = "", forward_tail: str = WRONG) -> str:
    return ("import os, sys, torch, torch.nn as nn\n" + textwrap.dedent(prelude) + "\n"
            "class ModelNew(nn.Module):\n"
            "    def forward(self, x):\n"
            + textwrap.indent(textwrap.dedent(body), "        ") + "\n" + forward_tail)


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A fake user: home with dotfiles and credentials, a trace folder, ktui's cache, secrets in
    the environment; the state of all of it before the run."""
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = ktui-fake-aws-9a2b\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text("ktui-fake-ssh-key\n")
    (home / ".bashrc").write_text("# fake bashrc\n")
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "run.jsonl").write_text((FIX / "cpu_wrong.jsonl").read_text())
    cache_dir = tmp_path / "cache"
    (cache_dir / "build" / "another-kernels-build").mkdir(parents=True)
    (cache_dir / "build" / "another-kernels-build" / "ext.so").write_text("not a real library")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("KTUI_CACHE_DIR", str(cache_dir))
    for k, v in FAKE_SECRETS.items():
        monkeypatch.setenv(k, v)
    cache._key()  # the integrity key exists before any kernel runs
    w = {"home": home, "traces": traces, "cache": cache_dir, "tmp": tmp_path,
         "token": f"ktui-attack-{os.getpid()}-{int(time.time() * 1000)}"}
    w["before"] = snapshot(w)
    return w


def snapshot(w) -> dict[str, tuple[int, int]]:
    out = {}
    for root in (w["home"], w["traces"], w["cache"] / "build" / "another-kernels-build"):
        for p in root.rglob("*"):
            st = p.lstat()
            out[str(p)] = (st.st_size, st.st_mtime_ns)
    key = w["cache"] / cache.KEY_FILE
    out[str(key)] = (key.stat().st_size, key.stat().st_mtime_ns)
    return out


def survivors(token: str) -> list[int]:
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            if token.encode() in (d / "cmdline").read_bytes():
                found.append(int(d.name))
        except OSError:
            continue
    return found


def run(code: str, w=None, tmp_path=None, **kw) -> dict:
    root = (w["tmp"] if w else tmp_path)
    req = {"kernel_code": code, "reference_source": REF, "device": DEVICE, "trials": 5, "correctness_trials": 3,
           "build_root": str((w["cache"] if w else root) / "build")}
    req.update(kw.pop("req", {}))
    return run_request(req, run_timeout=kw.pop("run_timeout", 60), compile_timeout=BUILD_TIMEOUT_S, **kw)


def verdict(result: dict) -> str:
    from ktui.trace import load

    r = load(str(FIX / "cpu_wrong.jsonl"))  # the trace recorded a pass
    return compare(recorded_for(r, r.kernel("v1")), result).verdict


def assert_untouched(w, result):
    assert snapshot(w) == w["before"], "a file outside the sandbox changed"
    assert not list(Path("/tmp").glob(w["token"] + "*")), "the kernel wrote outside its temp dir"
    time.sleep(0.3)
    assert survivors(w["token"]) == [], "a process the kernel started survived"
    out = json.dumps(result)
    for v in FAKE_SECRETS.values():
        assert v not in out, "a secret reached the kernel"
    assert "LEAK" not in out


# ---- everything a kernel can reach from inside -------------------------------------------------

HOSTILE = '''
import glob, signal, socket, subprocess
T = {token!r}
found = []
def leak(what):
    found.append(what)
    print("LEAK " + what, flush=True)
for k in {secret_names!r}:
    if os.environ.get(k):
        leak("env " + k + "=" + os.environ[k])
for p in glob.glob("/proc/*/environ") + ["/proc/%d/environ" % os.getppid()]:
    try:
        data = open(p, "rb").read()
    except OSError:
        continue
    for v in {secret_values!r}:
        if v.encode() in data:
            leak("proc environ " + p + " " + v)
for p in [{home!r} + "/.aws/credentials", {home!r} + "/.ssh/id_ed25519", {cache!r} + "/.hmac-key"]:
    try:
        leak("read " + p + " " + open(p).read(40))
    except OSError:
        pass
for p in [{home!r} + "/.bashrc", {traces!r} + "/run.jsonl", {traces!r} + "/next-to-the-trace.txt",
          {cache!r} + "/results/forged.json", {cache!r} + "/build/another-kernels-build/ext.so",
          {cache!r} + "/build/mine.txt", "/tmp/" + T + "-escape", os.path.expanduser("~") + "/../" + T]:
    try:
        with open(p, "a") as fh:
            fh.write("pwned")
        if not p.startswith(os.getcwd()):
            leak("wrote " + p)
    except OSError:
        pass
try:
    others = os.listdir({cache!r} + "/build")
    leak("listed other builds " + repr(others))
except OSError:
    pass
for p in glob.glob("/proc/[0-9]*/fd/1") + ["/dev/tty"]:
    if p.startswith("/proc/%d/" % os.getpid()) or p.startswith("/proc/self/"):
        continue
    try:
        with open(p, "w") as fh:
            fh.write("\\x1b]0;pwned\\x07")
        leak("terminal " + p)
    except OSError:
        pass
try:
    socket.create_connection(("1.1.1.1", 80), timeout=2)
    leak("network")
except OSError:
    pass
# a setsid double-fork daemon that should outlive ktui
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", T])
    os._exit(0)
'''


def test_hostile_kernel_reaches_nothing(world):
    w = world
    pre = HOSTILE.format(token=w["token"], secret_names=sorted(FAKE_SECRETS), secret_values=sorted(FAKE_SECRETS.values()),
                         home=str(w["home"]), cache=str(w["cache"]), traces=str(w["traces"]))
    res = run(kernel("pass", prelude=pre), w)
    assert res["status"] == "completed", res.get("failure")
    assert not res["correctness"]["passed"]
    assert verdict(res) == CORRECTNESS_DISAGREES
    assert_untouched(w, res)
    # and it said which protections were in force
    words = " ".join(res["sandbox"]["candidate"])
    assert "PID namespace" in words and "read-only" in words and "capabilities dropped" in words


def test_patching_the_judge_changes_nothing(world):
    # everything a kernel can name in its own process: the comparison, allclose/equal, the
    # harness module, the timers, the worker's own state; the judge lives elsewhere
    body = '''
import gc, time
import ktui.engine.compare as C
C.compare_outputs = lambda *a, **k: {"passed": True, "reason": None}
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.Tensor.__eq__ = lambda *a, **k: True
time.perf_counter = lambda: 0.0
for o in gc.get_objects():
    if type(o).__name__ == "Server":
        o.role = "reference"
'''
    res = run(kernel(body), world)
    assert res["status"] == "completed", res.get("failure")
    assert not res["correctness"]["passed"]
    assert verdict(res) == CORRECTNESS_DISAGREES
    assert_untouched(world, res)


def test_timer_patch_cannot_shrink_the_reported_time(world):
    # a correct kernel that sleeps 2 ms per call and patches every clock it can find
    # (the patch is made once: a gc walk on every call takes 0.3 s on a loaded 2-core host and
    # the timed stage then runs past its deadline, which is not what this test is about)
    body = '''
import gc, time
if not getattr(ModelNew, "_patched", False):
    ModelNew._patched = True
    ModelNew._sleep = time.sleep
    time.perf_counter = lambda: 0.0
    for o in gc.get_objects():
        if type(o).__name__ == "Primitives":
            o.perf = lambda: 0.0
ModelNew._sleep(0.002)
'''
    res = run(kernel(body, forward_tail="        return torch.relu(x) * 2.0\n"), world,
              req={"correctness_trials": 2, "trials": 3})
    assert res["status"] == "completed", res.get("failure")
    t = res["timing"]
    assert t["kernel"]["median_us"] > 1500, t["kernel"]  # reported: the judge's clock, not 0
    if DEVICE == "cuda":
        # on a GPU the worker times with CUDA events, which no Python clock patch reaches: the
        # events bracket the 2 ms sleep, so the worker's own figure holds and agrees with the judge
        assert t["kernel"]["source"].startswith("worker timer"), t["kernel"]
        assert not any(f["class"] == "timer_disagrees" for f in res["findings"])
        return
    assert t["kernel"]["source"] == "judge wall clock"
    assert any(f["class"] == "timer_disagrees" for f in res["findings"])
    assert any(c["name"] == "timer_cross_check" and c["ok"] is False for c in res["checks"])


@pytest.mark.parametrize("forge", ["garbage", "valid-looking"])
def test_forging_the_protocol_on_every_fd(world, forge):
    if forge == "garbage":
        body = '''
import json
for fd in range(0, 64):
    if fd in (1, 2):
        continue
    for msg in (b'[1]', b'[' * 200000, b'{"id": 1, "ok": true, "data": {"outputs": "pass"}}',
                json.dumps({"event": "result", "status": "completed", "verdict": "reproduced"}).encode()):
        try:
            os.write(fd, msg)
        except OSError:
            pass
'''
    else:  # a well-formed reply with the id the judge waits for, carrying a forged output
        body = '''
import gc
from ktui.engine import protocol, shm
srv = next(o for o in gc.get_objects() if type(o).__name__ == "Server")
fds = []
forged = {"outputs": shm.encode_value(torch.relu(x) * 2.0 + 1.0, fds), "types": ["torch.Tensor"],
          "overrides": [], "inputs_after": None}
protocol.send(srv.sock, {"id": srv.req_id, "ok": True, "data": forged}, fds)
'''
    res = run(kernel(body), world)
    v = verdict(res)
    assert v in (CORRECTNESS_DISAGREES, NOT_REPRODUCIBLE), (v, res.get("failure"))
    assert not (res.get("correctness") or {}).get("passed")
    if res["status"] == "failed":
        assert res["failure"]["kind"] == "protocol_error"
        assert "worker protocol error" in res["failure"]["message"]
    assert_untouched(world, res)


def test_killing_the_parent_and_everything_visible(world):
    body = f'''
import signal
for pid in [os.getppid(), {os.getpid()}] + [int(p) for p in os.listdir("/proc") if p.isdigit()]:
    if pid not in (0, os.getpid()):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
'''
    res = run(kernel(body), world)
    assert res["status"] == "completed", res.get("failure")
    assert verdict(res) == CORRECTNESS_DISAGREES
    assert_untouched(world, res)


def test_fork_and_exit_holding_the_channel(world):
    body = f'''
if os.fork() == 0:
    os.execvp(sys.executable, [sys.executable, "-c", "import time; time.sleep(600)", {world["token"]!r}])
os._exit(3)
'''
    t0 = time.monotonic()
    res = run(kernel(body), world)
    assert time.monotonic() - t0 < 45  # not the stage timeout
    assert res["failure"]["kind"] == "exit" and "status 3" in res["failure"]["message"]
    assert_untouched(world, res)


def test_memory_flood_is_stopped(world):
    body = '''
hog = []
while True:
    hog.append(bytearray(64 << 20))
'''
    res = run(kernel(body), world, req={"memory_limit": 768 << 20})
    assert res["status"] == "failed"
    assert res["failure"]["kind"] in ("memory_limit", "runtime_error", "oom"), res["failure"]
    assert not cache.cacheable(res) or res["failure"]["kind"] != "memory_limit"


def test_output_flood_is_capped(world):
    body = '''
chunk = "x" * 65536 + "\\n"
for _ in range(400):
    sys.stdout.write(chunk)
sys.stdout.flush()
'''
    res = run(kernel(body), world, req={"output_cap": 2 << 20})
    assert res["status"] == "failed" and res["failure"]["kind"] == "output_limit", res.get("failure")
    assert len(res.get("stderr_tail", "")) <= 20000


def test_external_sigkill_is_not_cached(world):
    body = '''
while True:
    pass
'''
    from ktui.engine.sandbox import descendants

    def on_progress(p):
        if p.stage == "correctness" and p.state == "trial":
            threading.Timer(1.0, kill_candidate).start()

    def kill_candidate():
        for pid in descendants(os.getpid()):
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"--role\x00candidate" in cmd and b"unshare" not in cmd:
                os.kill(pid, signal.SIGKILL)

    res = run(kernel(body), world, on_progress=on_progress)
    assert res["failure"]["kind"] == "killed", res["failure"]
    assert "not cached" in res["failure"]["message"]
    assert not cache.cacheable(res)


def test_markup_and_escapes_in_error_texts_stay_text(world):
    body = '''
raise RuntimeError("oops [/] [bold]x[/bold] \\x1b]0;pwned\\x07 \\x1b[31mred")
'''
    res = run(kernel(body), world)
    assert res["failure"]["kind"] == "runtime_error"
    import io

    from rich.console import Console

    from ktui.report.repro import render_report, render_summary
    from ktui.repro.api import ReproReport
    from ktui.trace import load

    r = load(str(FIX / "cpu_wrong.jsonl"))
    kv = r.kernel("v1")
    rec = recorded_for(r, kv)
    rep = ReproReport(trace="t", version="v1", sha1=kv.sha1, first_turn=None, turns=[1], request={}, result=res,
                      comparison=compare(rec, res), recorded=rec)
    buf = io.StringIO()
    con = Console(file=buf, width=120, force_terminal=False, color_system=None)
    render_report(con, rep)
    render_summary(con, [rep])
    text = buf.getvalue()
    assert "oops [/]" in text and "[bold]x[/bold]" in text
    assert "\x1b" not in text and "␛]0;pwned" in text
    from ktui.view.doc import plain_lines
    from ktui.view.repro import repro_view

    shown = "\n".join(plain_lines(repro_view(rep).parts))  # what the app's panel draws
    assert "oops [/]" in shown and "\x1b" not in shown


# ---- the protocol and the cache, directly ------------------------------------------------------------

@pytest.mark.parametrize("payload", [b"[1]", b"[" * 200000, b"{" * 40 + b"}" * 40, b"not json", b"\xff\xfe",
                                     b'{"id": 1, "ok": true, "data": {"outputs": "x"}}',
                                     b'{"id": 1, "ok": true, "data": {"outputs": [], "types": "x", "overrides": []}}',
                                     b'{"id": 1, "progress": {"what": ["x"]}}',
                                     b'{"id": "1", "ok": false, "error": {}}',
                                     b'{"id": 1, "ok": true, "data": {"outputs": {"__tensor__": 0, "dtype": "float32",'
                                     b' "shape": [1], "nbytes": 4, "type": "Tensor"}, "types": [], "overrides": []}}',
                                     b'{"id": 1, "ok": false, "error": {"kind": 1, "message": "m", "fatal": true}}'])
def test_malformed_messages_are_protocol_errors(payload):
    a, b = protocol.socketpair()
    try:
        b.send(payload)
        with pytest.raises(protocol.ProtocolError):
            msg, fds = protocol.recv(a)
            protocol.check_reply("forward", msg, len(fds))
    finally:
        a.close()
        b.close()


def test_oversized_message_is_refused_without_reading_it_all():
    a, b = protocol.socketpair()
    try:
        try:
            b.send(b"[" * (protocol.MAX_MESSAGE_BYTES * 4))
        except OSError:
            return  # the kernel refused it already (EMSGSIZE): nothing can reach the judge
        with pytest.raises(protocol.ProtocolError):
            protocol.recv(a)
    finally:
        a.close()
        b.close()


def test_unsealed_or_lying_tensor_memfds_are_refused():
    import torch

    from ktui.engine import shm

    fd = os.memfd_create("x", os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 16)
    desc = {"__tensor__": 0, "dtype": "float32", "shape": [4], "nbytes": 16, "type": "Tensor"}
    with pytest.raises(protocol.ProtocolError):
        shm.import_tensor(desc, [fd])  # not sealed: the sender could still change it
    os.close(fd)
    fds: list[int] = []
    d = shm.export_tensor(torch.arange(4, dtype=torch.float32), fds)
    bad = dict(d, shape=[8], nbytes=32)
    with pytest.raises(protocol.ProtocolError):
        shm.import_tensor(bad, fds)
    assert shm.import_tensor(d, fds).tolist() == [0.0, 1.0, 2.0, 3.0]
    with pytest.raises(PermissionError):
        os.write(fds[0], b"x")  # sealed against writes
    shm.close_fds(fds)


def test_the_whole_pipeline_runs_without_numpy(tmp_path):
    """numpy is not a dependency (torch's CPU wheel does not pull it in): with numpy made
    unimportable in the judge and both workers, a torch-only kernel still completes and
    passes. Tensors cross as memfds copied through a mapping, not through `Tensor.numpy()`."""
    fake = tmp_path / "no-numpy" / "numpy"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text('raise ModuleNotFoundError("numpy is hidden by this test", name="numpy")\n')
    env = dict(os.environ, KTUI_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONPATH=os.pathsep.join([str(fake.parent), os.environ.get("PYTHONPATH", "")]))
    check = subprocess.run([sys.executable, "-c", "import numpy"], env=env, capture_output=True, text=True)
    assert "hidden by this test" in check.stderr  # the shadow works
    trace = REPO / "tests" / "fixtures" / "hacks" / "honest_relu_torch.jsonl"
    before = trace.read_bytes()
    p = subprocess.run([sys.executable, "-m", "ktui", "repro", str(trace), "--final", "--device", "cpu",
                        "--trials", "5", "--timeout", "120", "--fresh", "--json"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.stdout.strip(), p.stderr[-3000:]  # the exit status follows the verdict; the JSON is what counts
    out = json.loads(p.stdout)
    rep = out[0] if isinstance(out, list) else out
    result = rep["result"]
    assert result["status"] == "completed", result.get("failure")
    c = result["correctness"]
    assert c["passed"] is True and c["trials_passed"] == c["trials"] > 0 and c["held_out"]["passed"] is True
    assert trace.read_bytes() == before


def test_tensors_cross_without_numpy():
    """export/import round trip, every dtype the protocol knows, with numpy unimportable."""
    code = textwrap.dedent("""
        import sys
        sys.modules["numpy"] = None
        import torch
        from ktui.engine import shm, protocol
        for name in protocol.DTYPES:
            dt = getattr(torch, name, None)
            if not isinstance(dt, torch.dtype):
                continue
            src = (torch.arange(24) % 7).to(dt).reshape(2, 3, 4).transpose(0, 2)  # not contiguous
            for t in (src, src[:0]):
                fds = []
                d = shm.export_tensor(t, fds)
                back = shm.import_tensor(d, fds)
                assert back.dtype == t.dtype and back.shape == t.shape, name
                assert torch.equal(back, t.contiguous()), name
                shm.close_fds(fds)
        print("ok")
    """)
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    if "No module named 'torch'" in p.stderr:
        pytest.skip("needs torch")
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-3000:]


def test_cache_entries_are_signed_and_shape_checked(world):
    entry = {"kernel_sha1": "ab" * 20, "key": "k1", "request": {}, "options": {},
             "result": {"status": "completed", "correctness": {"passed": True, "trials": 5, "trials_passed": 5,
                                                               "max_abs_error": 0.0, "max_rel_error": 0.0},
                        "checks": [], "notes": []}}
    p = cache.store(entry)
    assert cache.load("ab" * 20, "k1")["result"]["correctness"]["passed"]
    data = json.loads(p.read_text())
    # a forged change of the verdict's inputs: the MAC no longer matches
    data["entry"]["result"]["correctness"]["trials_passed"] = 4
    p.write_text(json.dumps(data))
    assert cache.load("ab" * 20, "k1") is None
    # an entry written without the key (what a kernel that reached the cache dir could do)
    p.write_text(json.dumps({"v": cache.ENTRY_VERSION, "mac": "0" * 64, "entry": entry}))
    assert cache.load("ab" * 20, "k1") is None
    # correctly signed but the wrong shape (an older ktui, a bug): re-run, never a crash
    for bad in ({"status": "completed", "correctness": {"passed": "yes"}},
                {"status": "failed", "failure": {"kind": "crash"}},
                {"status": "completed", "timing": {"kernel": {"mean_us": "fast"}}},
                {"status": "completed", "checks": [1]}, [1], "x"):
        e = dict(entry, result=bad)
        p.write_text(json.dumps({"v": cache.ENTRY_VERSION, "mac": cache._mac(cache._key(), e), "entry": e}))
        assert cache.load("ab" * 20, "k1") is None
    for raw in ("{", "[" * 100000, "null", '{"v": 2}'):
        p.write_text(raw)
        assert cache.load("ab" * 20, "k1") is None
        assert cache.entries_for("ab" * 20) == []


def test_secrets_never_reach_the_judge_environment(world):
    from ktui.engine.sandbox import Spec, worker_env
    from ktui.repro.runner import judge_env

    for env in (judge_env(), worker_env(Spec(str(world["tmp"])))):
        for k, v in FAKE_SECRETS.items():
            assert k not in env and v not in json.dumps(env)


def test_export_embeds_trace_strings_as_literals(tmp_path):
    import ast

    from ktui.repro.export import export_script
    from ktui.trace import load

    run_ = load(str(FIX / "cpu_run.jsonl"))
    kv = run_.kernel("v3")
    evil = 'x"""\nimport os; os.system("touch PWNED")\n"""\'\'\' \\ \\n end \\'

    class Problem:
        title = evil

    class Run:
        path, problem, calls, turns, metrics, final_kernel = run_.path, Problem(), run_.calls, run_.turns, None, None
    run_ = Run()
    ref = REF + '\n# """ \'\'\' \\\n'
    text = export_script(run_, kv, ref, evil, script_name="re\npro.py")
    tree = ast.parse(text)
    values = {t.id: n.value for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
              if isinstance(t, ast.Name)}
    assert ast.literal_eval(values["PROBLEM_TITLE"]) == evil
    assert ast.literal_eval(values["REFERENCE_ORIGIN"]) == evil
    assert ast.literal_eval(values["REFERENCE_SOURCE"]) == ref
    assert ast.literal_eval(values["KERNEL_SOURCE"]) == kv.code
    script = tmp_path / "repro.py"
    script.write_text(text)
    out = subprocess.run([sys.executable, str(script), "--help"], capture_output=True, text=True, cwd=tmp_path,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert not (tmp_path / "PWNED").exists()


# ---- ktui killed while a kernel hangs ---------------------------------------------------------------

@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_signal_to_ktui_repro_leaves_nothing_behind(tmp_path, sig):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), KTUI_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.Popen([sys.executable, "-m", "ktui", "repro", str(FIX / "cpu_hang.jsonl"), "--device", "cpu",
                             "--timeout", "300", "--fresh"], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    from procwatch import survivors, wait_for_hanging_candidate

    try:
        seen = wait_for_hanging_candidate(proc.pid)
        os.kill(proc.pid, sig)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert survivors(seen) == [], "processes survived"
    assert list(tmp.iterdir()) == [], f"temp dirs left: {list(tmp.iterdir())}"



def test_judge_clock_sizing_survives_huge_cpu_waits(tmp_path, monkeypatch):
    """The judge's wall-clock pass is sized from the raw time (an upper bound per forward), so
    however much waiting for a CPU is taken out afterwards (a busy host; here the judge's own
    wait is made to swallow every pass) it never asks a slow kernel for 100,000 forwards.
    Before, a pass measured as 0 after the waits were discounted gave F = 100,000 and the
    timing stage ran out of time. The busy host is said in the result."""
    from ktui.engine import oslib, pipeline

    ticks = iter(range(0, 10**18, 10**12))  # every reading 1,000 s later than the last
    monkeypatch.setattr(oslib, "own_runqueue_wait_ns", lambda: next(ticks))
    slow = textwrap.dedent("""
        import torch, torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                y = torch.relu(x) * 2.0
                for _ in range(200):
                    y = torch.relu(x) * 2.0
                return y
    """)
    req = {"kernel_code": slow, "reference_source": REF, "device": "cpu", "trials": 5, "correctness_trials": 2,
           "build_root": str(tmp_path / "build"), "run_timeout": 30.0, "compile_timeout": float(BUILD_TIMEOUT_S),
           "tmp_root": str(tmp_path)}
    res = pipeline.run_request(req)
    assert res["status"] == "completed", res.get("failure")
    cc = res["timing"]["cross_check"]
    assert cc["kernel_forwards"] < 1000, cc
    assert any("the host was busy" in n for n in res["notes"]), res["notes"]


def test_a_busy_spell_during_the_first_judge_clock_is_timed_again(tmp_path, monkeypatch):
    """A disagreement between the worker's timer and ktui's clock is confirmed by measuring both
    again, back to back: here ktui's first wall-clock pass of each side is made 50x slower (a busy
    spell that slowed only it). The honest kernel gets no finding, the re-measured time is the one
    reported, and the result says what happened."""
    from ktui.engine import pipeline

    real = pipeline.Judge._wall
    seen: dict[str, int] = {}

    def busy_first(self, w, slots, label, **kw):
        per, forwards, held = real(self, w, slots, label, **kw)
        if "interleaved" in label:  # the interleaved passes are not what this test slows down
            return per, forwards, held
        seen[label] = seen.get(label, 0) + 1
        if seen[label] == 1:
            per = [x * 50 + 500.0 for x in per]
        return per, forwards, held

    monkeypatch.setattr(pipeline.Judge, "_wall", busy_first)
    honest = textwrap.dedent("""
        import torch, torch.nn as nn
        class ModelNew(nn.Module):
            def forward(self, x):
                return torch.relu(x) * 2.0
    """)
    req = {"kernel_code": honest, "reference_source": REF, "device": "cpu", "trials": 5, "correctness_trials": 2,
           "build_root": str(tmp_path / "build"), "run_timeout": 60.0, "compile_timeout": float(BUILD_TIMEOUT_S),
           "tmp_root": str(tmp_path)}
    res = pipeline.run_request(req)
    assert res["status"] == "completed", res.get("failure")
    assert seen == {"kernel": 2, "reference": 2}  # each side measured again, once
    assert [f["class"] for f in res["findings"] if f["class"] == "timer_disagrees"] == []
    t = res["timing"]
    for side in ("kernel", "reference"):
        # (on a loaded CPU ktui's clock may be the one reported, with a note: never a finding)
        assert t[side + "_first"]["mean_us"] > 0
        assert t[side]["source"].startswith("worker timer") or t[side]["source"] == "judge wall clock"
        assert t[side]["mean_us"] * (1 + 4.0) + 50.0 >= t["cross_check"][f"{side}_wall_us"]
    assert sum("timed again together with it" in n for n in res["notes"]) == 2, res["notes"]


def test_host_devices_are_out_of_reach(tmp_path):
    """A worker's /dev holds only null, zero, full, random, urandom (and, on a GPU, NVIDIA's
    nodes) and its /dev/shm. Run as root, the user namespace maps a worker to the real root and
    the host's /dev would let it open raw disks, the console, /dev/kmsg, terminals, /dev/kvm:
    the kernel tries every node the host has, and to create one."""
    host = sorted(n for n in os.listdir("/dev") if not os.path.islink(os.path.join("/dev", n)))
    code = textwrap.dedent(f"""
        import os, json
        opened, made = [], None
        for n in {host!r}:
            p = os.path.join("/dev", n)
            for fl in (os.O_RDONLY, os.O_WRONLY):
                try:
                    os.close(os.open(p, fl | os.O_NONBLOCK | os.O_NOCTTY))
                    opened.append(n)
                    break
                except OSError:
                    pass
        try:
            os.close(os.open("/dev/ktui-made-this", os.O_WRONLY | os.O_CREAT))
            made = "created"
        except OSError as e:
            made = e.strerror
        # take the minimal /dev away, or mount a devtmpfs over it, or go round it through /proc
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        remount = [libc.umount2(b"/dev", 2), libc.mount(b"none", b"/dev", b"devtmpfs", 0, None)]
        for n in {host!r}:
            for root in ("/proc/1/root", "/proc/self/root"):
                try:
                    os.close(os.open(root + "/dev/" + n, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY))
                    opened.append(root + "/dev/" + n)
                except OSError:
                    pass
        raise RuntimeError("DEVPROBE " + json.dumps({{"opened": sorted(set(opened)), "made": made,
                                                     "remount": remount,
                                                     "listing": sorted(os.listdir("/dev"))}}))
    """)
    res = run(code, tmp_path=tmp_path)
    msg = (res.get("failure") or {}).get("message", "")
    assert "DEVPROBE " in msg, res.get("failure")
    got = json.loads(msg.split("DEVPROBE ", 1)[1])
    allowed = {"null", "zero", "full", "random", "urandom", "shm"}
    gpu = {n for n in got["opened"] if n.startswith("nvidia")} if DEVICE == "cuda" else set()
    via_proc = {f"{r}/dev/{n}" for r in ("/proc/1/root", "/proc/self/root") for n in allowed | gpu}
    assert set(got["opened"]) <= allowed | gpu | via_proc, got["opened"]
    assert got["remount"] == [-1, -1]  # no umount, no mount: capabilities are dropped
    assert {"null", "zero", "urandom"} <= set(got["opened"])
    assert set(got["listing"]) <= allowed | gpu | {"fd", "stdin", "stdout", "stderr"}, got["listing"]
    assert got["made"] != "created"
    assert not os.path.exists("/dev/ktui-made-this")
    report = res["sandbox"]["candidate_report"]
    assert report["minimal_dev"] is True and report["dev_writable"] is False


PREDICTS_INPUTS = '''
import hashlib, torch, torch.nn as nn
B, N = 8, 64
def _held_out(seed, seeds):  # ktui's own formula, read from its source
    s = int(hashlib.sha1(f"ktui-held-out-{seed}".encode()).hexdigest()[:8], 16) % (2**31 - 1)
    while s in seeds or s == seed:
        s += 1
    return s
class ModelNew(nn.Module):
    """Knows which inputs it will be judged on: the seed ktui set before building it is
    torch.initial_seed(), and the trial seeds used to follow from it. It answers only those
    (its "precomputed" table) and is wrong on any input it could not predict."""
    def __init__(self):
        super().__init__()
        base = torch.initial_seed()
        gen = torch.Generator().manual_seed(base)
        seeds = [int(torch.randint(0, 2**31 - 1, (1,), generator=gen)) for _ in range(16)]
        self.known = []
        for s in seeds + [base, _held_out(base, seeds[:3]), _held_out(base, seeds[:5])]:
            torch.manual_seed(s)
            self.known.append(torch.randn(B, N))
        torch.manual_seed(base)
    def forward(self, x):
        for k in self.known:
            if k.shape == x.shape and torch.equal(k, x.cpu()):
                return torch.relu(x) * 2.0
        return x * 3.0
'''


def test_inputs_cannot_be_predicted_from_the_seed_the_kernel_sees(tmp_path):
    """Every input is drawn from a seed only the judge and the reference worker know (new each
    run, recorded in the result): a kernel that rebuilds the inputs from the seed it is built
    under (torch.initial_seed()) and ktui's published formulas answers none of them. With the
    input seed equal to the build seed (as it was), the same kernel passes every trial."""
    res = run(PREDICTS_INPUTS, tmp_path=tmp_path)
    assert res["status"] == "completed", res.get("failure")
    assert not res["correctness"]["passed"], res["correctness"]
    seeds = res["seeds"]
    assert seeds["init"] == 42 and seeds["inputs"] != 42 and 0 < seeds["inputs"] < 2**31
    again = run(PREDICTS_INPUTS, tmp_path=tmp_path)
    assert again["seeds"]["inputs"] != seeds["inputs"]  # a new one each run
    # the control: inputs from the build seed are predictable, and this kernel then passes them all
    old = run(PREDICTS_INPUTS, tmp_path=tmp_path, req={"input_seed": 42, "correctness_trials": 3})
    assert old["correctness"]["passed"] and old["correctness"]["held_out"]["passed"], old["correctness"]
