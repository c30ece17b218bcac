"""A third pass of attacks on the sandbox (tests/fixtures/sandbox/probe_fresh.py, the first pass's
probe.py again, and the limit / IPC / leftover attacks of tests/test_sandbox_namespaces.py), run at
the sandbox level (ktui.engine.sandbox.Launched, no torch) as the current user and, when run as
root, again as uid 65534 through setpriv with the system Python. A fake home full of planted
credentials, a fake XDG_RUNTIME_DIR with a listening bus socket, a REAL ssh-agent holding a key
(ssh-agent, ssh-keygen, ssh-add when installed), a key in the session keyring, inheritable
descriptors of the home. Every class runs twice: outside the sandbox (the control: it must get
through) and inside (it must not).

    python benchmarks/bench_sandbox_fresh_attacks.py --out benchmarks/results/sandbox_fresh_attacks_cpu.md
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIX = REPO / "tests" / "fixtures" / "sandbox"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(FIX))

CRED_FILES = (".netrc", ".config/gh/hosts.yml", ".docker/config.json", ".kube/config", ".config/pip/pip.conf",
              ".pypirc", ".git-credentials", ".aws/credentials", ".local/share/keyrings/login.keyring",
              ".config/gcloud/credentials.db", ".gnupg/private-keys-v1.d/k.key", ".config/hub",
              ".config/containers/auth.json", ".huggingface/token", ".wandb/settings", ".netrc-work")


def _listen(path: Path) -> socket.socket:
    path.parent.mkdir(parents=True, exist_ok=True)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(16)

    def run():
        while True:
            try:
                c, _ = s.accept()
                c.close()
            except OSError:
                return
    threading.Thread(target=run, daemon=True).start()
    return s


def _real_agent(tmp: Path) -> tuple[str | None, int | None]:
    """A real ssh-agent holding a fresh key: (socket path, agent pid), or (None, None)."""
    if not (shutil.which("ssh-agent") and shutil.which("ssh-keygen") and shutil.which("ssh-add")):
        return None, None
    sock = tmp / "ssh-XXXX" / "agent.4242"
    sock.parent.mkdir(parents=True)
    key = tmp / "agentkey"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    out = subprocess.run(["ssh-agent", "-s", "-a", str(sock)], capture_output=True, text=True, check=True).stdout
    pid = int(out.split("SSH_AGENT_PID=")[1].split(";")[0])
    subprocess.run(["ssh-add", "-q", str(key)], env=dict(os.environ, SSH_AUTH_SOCK=str(sock)), check=True,
                   capture_output=True)
    key.unlink()
    return str(sock), pid


def plant(tmp: Path) -> tuple[dict, list, list]:
    tok = f"{os.getpid()}{time.time_ns() % 10**9}"
    markers = []
    home = tmp / "home"
    for i, rel in enumerate(CRED_FILES):
        m = f"ktui-fake-cred{i}-{tok}"
        markers.append(m)
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(f"password {m}\n")
    run = tmp / "run" / "user" / str(os.getuid())
    socks = [_listen(run / "bus"), _listen(run / "keyring" / "control"), _listen(run / "gnupg" / "S.gpg-agent")]
    agent, agent_pid = _real_agent(tmp)
    env_m = [f"ktui-fake-env{i}-{tok}" for i in range(2)]
    markers += env_m
    os.environ.update({"LC_MYCOMPANY_PROD_PW": env_m[0], "TRITON_REMOTE_CACHE_URL": f"redis://u:{env_m[1]}@h:1/0",
                       "HOME": str(home), "XDG_RUNTIME_DIR": str(run),
                       "DBUS_SESSION_BUS_ADDRESS": f"unix:path={run / 'bus'}"})
    if agent:
        os.environ["SSH_AUTH_SOCK"] = agent
    from sandbox_corpus import join_fresh_session_keyring, plant_key

    km = f"ktui-fake-key-{tok}"
    if join_fresh_session_keyring():
        plant_key(km.encode(), -3)
    # descriptors a careless launcher would pass on: the home as a folder, a secret file
    fds = [os.open(home, os.O_RDONLY | os.O_DIRECTORY), os.open(home / ".netrc", os.O_RDONLY)]
    for fd in fds:
        os.set_inheritable(fd, True)
    sibling = subprocess.Popen(["sleep", "600"])  # stands for the other worker and the user's shell
    targets = []
    for name in ("cache/builds", "other-worker", "trace-dir"):
        (tmp / name).mkdir(parents=True, exist_ok=True)
        targets.append(str(tmp / name))
    cgroups = [ln.split(":", 2)[2] for ln in Path("/proc/self/cgroup").read_text().splitlines()
               if ln.split(":", 2)[2] not in ("/", "")]
    plan = {"markers": markers + [km], "markers_rev": [], "home": str(home), "credential_files": list(CRED_FILES),
            "sockets": [str(run / "bus")] + ([agent] if agent else []), "socket_roots": [str(tmp)],
            "victims": [os.getpid(), sibling.pid], "targets": targets, "hostname": socket.gethostname(),
            "cgroup_paths": cgroups, "key_desc": "ktui-planted-key", "roots": ["/", str(home), str(tmp)]}
    return plan, socks, [sibling, agent_pid, fds]


def run_probe(plan: dict, sandboxed: bool, fds: list) -> dict:
    from ktui.engine import sandbox

    work = tempfile.mkdtemp(prefix="ktui-fresh-worker-")
    build = tempfile.mkdtemp(prefix="ktui-fresh-build-")
    p = dict(plan, enter=str(REPO) if sandboxed else None, mine=[work, build, sandbox.BUILD_MOUNT])
    argv = [sys.executable, str(FIX / "probe_fresh.py"), json.dumps(p)]
    argv1 = [sys.executable, "-c", "import json, sys; sys.path.insert(0, %r); import probe; p = json.loads(sys.argv[1])\n"
             "if p.get('enter'):\n sys.path.insert(0, p['enter']); from ktui.engine import sandbox; sandbox.enter()\n"
             "print('PROBE ' + json.dumps(probe.probe(p)), flush=True)" % str(FIX), json.dumps(p)]
    out = {}
    try:
        for a in (argv, argv1):
            if not sandboxed:
                r = subprocess.run(a, capture_output=True, text=True, timeout=600, pass_fds=fds, cwd=work)
                text, err = r.stdout, r.stderr
            else:
                spec = sandbox.Spec(work, binds=[(build, sandbox.BUILD_MOUNT)], python_path=[str(REPO), str(FIX)],
                                    argv=a, memory_limit=2 << 30)
                w = sandbox.Launched(spec, a)
                try:
                    w.proc.wait(timeout=600)
                finally:
                    w.close()
                text, err = w.tail("stdout"), w.tail("stderr")
            line = [ln for ln in text.splitlines() if ln.startswith("PROBE ")]
            got = json.loads(line[-1][6:]) if line else {"probe failed": [err[-300:]]}
            if isinstance(got, list):  # probe.py: one list, "CLASS: what"
                d: dict = {}
                names = {"file": "files", "socket": "sockets", "keyring": "keyrings"}
                for item in got:
                    c = item.split(":", 1)[0]
                    d.setdefault("first pass: " + names.get(c, c), []).append(item)
                for c in ("files", "home", "env", "proc", "sockets", "keyrings"):
                    d.setdefault("first pass: " + c, [])
                got = d
            out.update(got)
    finally:
        from ktui.engine.oslib import remove_tree

        remove_tree(work)
        remove_tree(build)
    return out


LIMITS = {
    "sysv_memory_nobody_maps": ("SYSV_HOARD", {"memory_limit": 256 << 20}),
    "memfd_in_flight_over_a_socket": ("SCM_HIDE", {"memory_limit": 256 << 20}),
    "files_in_the_temp_dir": ("DISK_FILL", {"memory_limit": 256 << 20, "disk_limit": 128 << 20}),
    "inodes_in_the_temp_dir": ("INODE_FILL", {"memory_limit": 256 << 20, "disk_entries": 1000}),
}


LEFTOVERS = '''
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        libc.prctl(1, 0)
        nul = os.open("/dev/null", os.O_RDWR)
        for i in (0, 1, 2): os.dup2(nul, i)
        os.execv("/bin/sleep", ["sleep", "%s"])
    os._exit(0)
os.makedirs("litter/inner", exist_ok=True)
open("litter/inner/f", "w").write("x")
os.chmod("litter/inner", 0); os.chmod("litter", 0o100)
print("OUT 1", flush=True)
'''


def run_limits(sandboxed_ok: bool) -> dict:
    import sandbox_corpus as T  # the attacks' code, as tests/test_sandbox_namespaces.py runs it
    from sandbox_corpus import _launch, _wait

    from ktui.engine import sandbox

    out = {}
    if not sandboxed_ok:
        return out
    avail, _t = sandbox.host_memory()
    for name, (code, kw) in LIMITS.items():
        if name == "memfd_in_flight_over_a_socket":
            kw = dict(kw, host_memory_floor=(avail or 0) - (512 << 20))
        w = _launch(getattr(T, code), **kw)
        _wait(w, 120)
        stdout = w.tail("stdout")
        if w.limit_hit:
            out[name] = {"held": True, "what": f"{w.limit_hit[0]}: {w.limit_hit[1]}"}
        elif code == "SYSV_HOARD":
            got = int(json.loads(stdout.split("OUT ")[-1].split()[0])) if "OUT " in stdout else 0
            out[name] = {"held": got <= 64 << 20, "what": f"{got >> 20} MiB held in segments nobody maps "
                                                          "(limit 256 MiB)"}
        else:
            out[name] = {"held": False, "what": "not stopped: " + stdout[-100:]}
    w = _launch(T.SOCKET_HOARD, memory_limit=256 << 20)
    _wait(w, 90)
    tot = int(w.tail("stdout").split("OUT ")[-1].split()[0]) if "OUT " in w.tail("stdout") else 0
    out["unix_socket_buffers"] = {"held": tot <= 256 << 20 or w.limit_hit is not None,
                                  "what": (f"{w.limit_hit[0]}: {w.limit_hit[1]}" if w.limit_hit else
                                           f"{tot >> 20} MiB queued in one process's socket buffers (limit 256 MiB)")}
    mark = f"{1000 + os.getpid() % 1000}.321"
    work_holder = {}
    w = _launch(LEFTOVERS % mark)
    work_holder["dir"] = w.spec.work_dir
    _wait(w, 60)
    from ktui.engine.oslib import remove_tree

    remove_tree(w.spec.work_dir)  # what the judge does with a worker's folder
    time.sleep(0.5)
    alive = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                if mark.encode() in Path(f"/proc/{d}/cmdline").read_bytes():
                    alive.append(int(d))
            except OSError:
                pass
    for pid in alive:
        os.kill(pid, 9)
    out["daemon_setsid_double_fork"] = {"held": not alive, "what": f"{len(alive)} left running"}
    left = os.path.exists(work_holder["dir"])
    out["folder_made_unremovable"] = {"held": not left, "what": "left after the run" if left else "removed"}
    if left:
        subprocess.run(["chmod", "-R", "u+rwx", work_holder["dir"]])
        shutil.rmtree(work_holder["dir"], ignore_errors=True)
    for name, code in (("nested_user_namespace", "NESTED"),):
        got, w = T.run_code(getattr(T, code))
        out[name] = {"held": bool(got) and got[0] != 0,
                     "what": f"unshare(CLONE_NEWUSER) = {got[0]}" if got else w.tail("stderr")[-100:]}
    return out


def run_ipc() -> dict:
    """The IPC, /etc and host-name attacks of tests/test_sandbox_namespaces.py, control and
    sandboxed: {attack: {"control": [...], "inside": [...]}} (what got through)."""
    import ctypes.util

    import sandbox_corpus as T

    lc = ctypes.CDLL(None, use_errno=True)
    lc.shmat.restype = ctypes.c_void_p
    name = ctypes.util.find_library("rt") or "librt.so.1"
    try:
        rt = ctypes.CDLL(name, use_errno=True)
    except OSError:
        rt = None
    tok = f"{os.getpid()}{time.time_ns() % 10**6}"
    marker = f"ktui-fake-ipc-{tok}"
    key = 0x6B760000 + os.getpid() % 0xFFFF
    sid = lc.shmget(ctypes.c_int(key), ctypes.c_size_t(4096), 0o1000 | 0o600)
    qid = lc.msgget(ctypes.c_int(key), 0o1000 | 0o600)
    a = lc.shmat(sid, None, 0)
    ctypes.memmove(a, marker.encode(), len(marker))
    lc.shmdt(ctypes.c_void_p(a))

    class Buf(ctypes.Structure):
        _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 256)]

    lc.msgsnd(qid, ctypes.byref(Buf(1, marker.encode())), len(marker), 0)
    mq = f"/ktui-bench-{tok}"
    if rt is not None:
        rt.mq_open(mq.encode(), os.O_RDWR | os.O_CREAT, 0o600, None)
    leave = {"key": key + 1, "mq": f"/ktui-bench-left-{tok}"}

    def left():
        out = []
        s_ = lc.shmget(ctypes.c_int(leave["key"]), 0, 0)
        if s_ >= 0:
            out.append("shm")
            lc.shmctl(s_, 0, None)
        q = lc.msgget(ctypes.c_int(leave["key"]), 0)
        if q >= 0:
            out.append("msg")
            lc.msgctl(q, 0, None)
        if rt is not None and rt.mq_unlink(leave["mq"].encode()) == 0:
            out.append("mq")
        return out

    def control(code):
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("OUT ")]
        return json.loads(line[-1][4:]) if line else ["failed: " + r.stderr[-200:]]

    def inside(code):
        got, w = T.run_code(code)
        return got if got is not None else ["failed: " + w.tail("stderr")[-200:]]

    etc = [os.path.join(d, n) for d, _s, fs in os.walk("/etc") for n in fs
           if os.path.isfile(os.path.join(d, n)) and not os.path.islink(os.path.join(d, n))
           and not os.stat(os.path.join(d, n)).st_mode & 0o004 and os.stat(os.path.join(d, n)).st_size]
    read_etc = ("import json\ngot = []\nfor p in %r:\n    try:\n        if open(p, 'rb').read(64):\n"
                "            got.append(p)\n    except OSError:\n        pass\nprint('OUT ' + json.dumps(got), flush=True)"
                % etc)
    host = "import json, socket\nprint('OUT ' + json.dumps([socket.gethostname()]), flush=True)"
    out = {}
    try:
        plan = json.dumps({"markers": [marker], "key": key, "mq": mq})
        out["ipc: the user's SysV segments and queues, POSIX queues"] = {
            "control": control(T.READ_IPC % plan), "inside": inside(T.READ_IPC % plan)}
        c = control(T.LEAVE_IPC % json.dumps(leave))
        still = left()
        c = [f"{x} left after the process ended" for x in c if x in still]
        inside(T.LEAVE_IPC % json.dumps(leave))
        out["ipc: objects that outlive the worker"] = {"control": c,
                                                       "inside": [f"{x} left after the worker ended" for x in left()]}
        out["/etc files only root may read"] = {"control": control(read_etc), "inside": inside(read_etc)}
        here = socket.gethostname()
        out["the machine's name"] = {"control": [h for h in control(host) if h == here],
                                     "inside": [h for h in inside(host) if h == here]}
    finally:
        lc.shmctl(sid, 0, None)
        lc.msgctl(qid, 0, None)
        if rt is not None:
            rt.mq_unlink(mq.encode())
        left()
    return out


def run_here(ipc_only: bool = False) -> dict:
    from ktui.engine import sandbox

    ipc = run_ipc() if sandbox.detect()["namespaces"] else {}
    if ipc_only:
        return {"control": {}, "inside": {}, "limits": {}, "ipc": ipc, "ssh_agent": False, "namespaces": True}
    tmp = Path(tempfile.mkdtemp(prefix="ktui-fresh-"))
    os.chmod(tmp, 0o755)
    plan, socks, (sibling, agent_pid, fds) = plant(tmp)
    ns = sandbox.detect()["namespaces"]
    try:
        control = run_probe(plan, False, fds)
        inside = run_probe(plan, True, fds) if ns else {}
        limits = run_limits(ns)
    finally:
        sibling.kill()
        if agent_pid:
            os.kill(agent_pid, 15)
        for s in socks:
            s.close()
        for fd in fds:
            os.close(fd)
        shutil.rmtree(tmp, ignore_errors=True)
    return {"control": control, "inside": inside, "limits": limits, "ssh_agent": bool(agent_pid),
            "namespaces": ns, "ipc": ipc}


def run_as_nobody(ipc_only: bool = False) -> tuple[dict | None, str]:
    py = "/usr/bin/python3"
    if os.getuid() != 0:
        return None, "not root: this run is the normal-user column"
    if not os.path.exists(py) or not shutil.which("setpriv"):
        return None, "no /usr/bin/python3 or setpriv"
    env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--reset-env", py,
                        str(Path(__file__).resolve()), "--child"] + (["--ipc-only"] if ipc_only else []), capture_output=True, text=True, timeout=3000,
                       env=env, cwd="/tmp")
    lines = [ln for ln in r.stdout.splitlines() if ln.startswith("ROWS ")]
    if not lines:
        return None, f"the unprivileged run failed: {(r.stderr or r.stdout)[-600:]}"
    return json.loads(lines[-1][5:]), "uid 65534 via setpriv, /usr/bin/python3"


def _cell(items) -> str:
    if items is None:
        return "not run"
    if not items:
        return "held"
    return "GOT THROUGH: " + "; ".join(str(s)[:90] for s in items[:2]) + (f" (+{len(items) - 2})" if len(items) > 2
                                                                          else "")


def table(root: dict, user: dict | None, who: str) -> str:
    out = [f"| attack (class) | control ({who}) | sandboxed ({who}) | control (uid 65534) | sandboxed (uid 65534) |",
           "|---|---|---|---|---|"]
    for c in root["control"]:
        ctl = root["control"].get(c) or []
        uctl = (user or {}).get("control", {}).get(c) if user else None
        out.append(f"| {c} | {len(ctl)} item(s) | {_cell(root['inside'].get(c))} | "
                   f"{'not run' if uctl is None else f'{len(uctl)} item(s)'} | "
                   f"{_cell((user or {}).get('inside', {}).get(c)) if user else 'not run'} |")
    for c, r in (root.get("ipc") or {}).items():
        u = (user or {}).get("ipc", {}).get(c) if user else None
        out.append(f"| {c} | {len(r['control'])} item(s) | {_cell(r['inside'])} | "
                   f"{'not run' if u is None else str(len(u['control'])) + ' item(s)'} | "
                   f"{'not run' if u is None else _cell(u['inside'])} |")
    out += ["", "| limit / leftover attack | " + who + " | uid 65534 |", "|---|---|---|"]
    for c, r in root["limits"].items():
        u = (user or {}).get("limits", {}).get(c)
        def cell(x):
            return "not run" if x is None else ("held" if x["held"] else "GOT THROUGH") + ": " + x["what"][:160]
        out.append(f"| {c} | {cell(r)} | {cell(u)} |")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--ipc-only", action="store_true", help="only the IPC, /etc and host-name rows (a minute)")
    a = ap.parse_args()
    if a.child:
        print("ROWS " + json.dumps(run_here(a.ipc_only)), flush=True)
        return 0
    who = "root" if os.getuid() == 0 else f"uid {os.getuid()}"
    root = run_here(a.ipc_only)
    print("ROOT " + json.dumps(root), flush=True)
    user, note = run_as_nobody(a.ipc_only)
    print("USER " + json.dumps(user), flush=True)
    body = "\n".join([
        f"# Sandbox, third pass of attacks (CPU, {platform.node() or 'host'}, {time.strftime('%Y-%m-%d')})", "",
        "Command: `python benchmarks/bench_sandbox_fresh_attacks.py --out "
        "benchmarks/results/sandbox_fresh_attacks_cpu.md`", "",
        f"Kernel {platform.release()}, Python {platform.python_version()}; real ssh-agent: "
        f"{'yes' if root['ssh_agent'] else 'no (not installed)'}; normal-user column: {note}.", "",
        "Control: the same probe as a plain child of the planting process (with its inheritable descriptors): "
        "the number of items it got. Sandboxed: ktui.engine.sandbox.Launched (what every worker gets).", "",
        table(root, user, who), ""])
    print(body)
    if a.out:
        Path(a.out).write_text(body + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
