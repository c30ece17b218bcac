"""Gemini CLI chat recordings of 2026 (issue 21, held-out pass of helper traces).

Real files read: 75 recordings of LAF-US/IDAHO-VAULT (c1c3fe9b, ``.gemini/tmp/<project>/chats/``,
March-April 2026, gemini-2.5-pro / gemini-3-flash-preview; "All rights reserved": not copied, see
``benchmarks/results/real_traces.md``). Three defects, each tested here on a minimal recording of
the same structure (fields as the real files have them: ``kind``, ``summary``, ``directories``;
``toolCalls[].resultDisplay`` of ``write_file`` / ``replace`` with ``fileDiff``, ``fileName``,
``filePath``, ``originalContent``, ``newContent``, ``diffStat``, ``isNewFile``):

- 8 sessions whose only message is the user's prompt (the model never answered) were "not a
  trace (looks like a JSON object ...)";
- a subagent's own recording (``chats/<parent session>/<id>.json``, ``kind: "subagent"``) was
  listed like a session of its own, nothing saying what it is;
- a ``replace`` whose file the user had changed outside the recorded calls (a ``read_file`` shows
  the new text, the edit's ``old_string`` is only in it) was kept as a partial version with a
  warning, although the tool's result shows the whole file before and after.
"""

from __future__ import annotations

import json

from ktui.trace import load
from ktui.trace.importers import detect

V1 = ("import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef _k(x, y, n, B: tl.constexpr):\n"
      "    i = tl.program_id(0) * B + tl.arange(0, B)\n    tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)\n\n"
      "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        y = torch.empty_like(x)\n"
      "        _k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), B=1024)\n        return y\n")
# the user changed the block size by hand between the two recorded calls
USER = V1.replace("B=1024)", "B=512)")
V2 = USER.replace("B=512)", "B=256)")


def _display(path, before, after, new_file=False):
    return {"fileDiff": "Index: k.py\n...", "fileName": "k.py", "filePath": "C:\\work\\" + path,
            "originalContent": before, "newContent": after,
            "diffStat": {"model_added_lines": 1, "model_removed_lines": 1}, "isNewFile": new_file}


def _call(cid, name, args, status, output, display=None):
    r = {"id": cid, "name": name, "args": args, "status": status, "timestamp": "2026-04-20T05:00:00.000Z",
         "result": [{"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}],
         "description": "", "displayName": name, "renderOutputAsMarkdown": True}
    if display is not None:
        r["resultDisplay"] = display
    return r


def _gemini(mid, ts, calls, text=""):
    return {"id": mid, "timestamp": ts, "type": "gemini", "content": text, "thoughts": [],
            "tokens": {"input": 1000, "output": 10, "cached": 0, "thoughts": 5, "tool": 0, "total": 1015},
            "model": "gemini-3-flash-preview", "toolCalls": calls}


def _session(msgs, **extra):
    return {"sessionId": "ec34be90-0000-4000-8000-000000000000", "projectHash": "f528f00f",
            "startTime": "2026-04-20T04:27:00.000Z", "lastUpdated": "2026-04-20T05:10:00.000Z",
            "messages": msgs, "kind": "main", **extra}


def test_a_session_the_model_never_answered_is_a_session(tmp_path):
    p = tmp_path / "session-2026-03-29T01-28-a8c22046.json"
    p.write_text(json.dumps({"sessionId": "a8c22046", "projectHash": "f528f00f",
                             "startTime": "2026-03-29T01:28:31.119Z", "lastUpdated": "2026-03-29T01:28:31.119Z",
                             "messages": [{"id": "u1", "timestamp": "2026-03-29T01:28:31.119Z", "type": "user",
                                           "content": [{"text": "UPDATE GOVERNANCE so that every agent asks"}]}]}))
    assert detect(str(p)).name == "gemini-cli"
    run = load(str(p))
    assert run.format == "gemini-cli" and not run.problems and run.turns == []
    assert any("UPDATE GOVERNANCE" in m[3] for m in run.messages)
    # a JSON object of another kind with user messages only is still not a Gemini recording
    q = tmp_path / "other.json"
    q.write_text(json.dumps({"sessionId": "x", "messages": [{"type": "user", "content": "hi"}]}))
    assert detect(str(q)).name != "gemini-cli"


def test_a_subagent_recording_says_what_it_is(tmp_path):
    d = tmp_path / "chats" / "b1f31681-4b57-4337-8bc5-ac73580f752a"
    d.mkdir(parents=True)
    p = d / "tl63m8.json"
    p.write_text(json.dumps({
        "sessionId": "tl63m8", "projectHash": "idaho-vault", "startTime": "2026-04-16T22:58:42.000Z",
        "lastUpdated": "2026-04-16T23:00:30.000Z", "kind": "subagent",
        "directories": ["C:\\work", "C:\\Users\\u\\.gemini"],
        "summary": "{\n  \"response\": \"Memory operations completed\"\n}",
        "messages": [{"id": "u1", "timestamp": "2026-04-16T22:58:42.000Z", "type": "user",
                      "content": [{"text": "\n# Initial Context\n"}]},
                     _gemini("g1", "2026-04-16T22:58:50.000Z",
                             [_call("c1", "read_file", {"file_path": "GEMINI.md"}, "success", "# memories")])]}))
    run = load(str(p))
    assert run.persona == "subagent tl63m8"
    notes = " | ".join(n[1] for n in run.notes)
    assert "subagent of b1f31681-4b57-4337-8bc5-ac73580f752a" in notes
    assert "summary:" in notes and "Memory operations completed" in notes
    main = tmp_path / "main.json"
    main.write_text(json.dumps(_session([{"id": "u1", "timestamp": "2026-04-20T04:27:00.000Z", "type": "user",
                                          "content": "hi"}], summary="User wants to boot.")))
    r2 = load(str(main))
    assert r2.persona == "gemini-cli" and any("summary: User wants to boot." in n[1] for n in r2.notes)


def test_an_edit_applies_to_the_file_the_tool_showed_not_a_replay(tmp_path):
    msgs = [
        {"id": "u1", "timestamp": "2026-04-20T04:27:00.000Z", "type": "user", "content": [{"text": "write k.py"}]},
        _gemini("g1", "2026-04-20T04:28:00.000Z",
                [_call("w1", "write_file", {"file_path": "k.py", "content": V1}, "success",
                       "Successfully created and wrote to new file: C:\\work\\k.py.", _display("k.py", "", V1, True))]),
        {"id": "u2", "timestamp": "2026-04-20T04:40:00.000Z", "type": "user",
         "content": [{"text": "I changed the block size; now make it 256"}]},
        _gemini("g2", "2026-04-20T04:41:00.000Z",
                [_call("r1", "read_file", {"file_path": "k.py"}, "success", USER)]),
        _gemini("g3", "2026-04-20T04:42:00.000Z",
                [_call("e1", "replace", {"file_path": "k.py", "old_string": "B=512)", "new_string": "B=256)",
                                         "instruction": "use a block of 256"}, "success",
                       "Successfully modified file: C:\\work\\k.py (1 replacements).", _display("k.py", USER, V2))]),
        # a cancelled write shows a proposed newContent too: it changed nothing
        _gemini("g4", "2026-04-20T04:43:00.000Z",
                [_call("w2", "write_file", {"file_path": "k.py", "content": "print(1)\n"}, "cancelled", "",
                       _display("k.py", V2, "print(1)\n"))]),
    ]
    p = tmp_path / "session-2026-04-20T04-27-ec34be90.json"
    p.write_text(json.dumps(_session(msgs)))
    run = load(str(p))
    assert [pr.message for pr in run.problems] == []
    ks = run.kernels
    assert [k.code for k in ks] == [V1, V2]
    assert not any(k.partial for k in ks)
    assert any("had changed since the trace last showed it" in n[1] for n in run.notes)
