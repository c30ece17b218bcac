"""Gemini CLI chat recordings as JSON lines (issue 21, held-out pass of helper traces).

Gemini CLI now appends its chat recording to ``chats/session-<time>-<id8>.jsonl`` (its
``ChatRecordingService``, ``packages/core/src/services/chatRecordingService.ts`` and
``chatRecordingTypes.ts`` in google-gemini/gemini-cli, Apache-2.0): a metadata line, message
records written again whole as their tool calls and tokens come (the last copy wins, in the
place of the first), ``{"$set": ...}`` metadata updates and ``{"$rewindTo": id}`` truncations.
Before: a file of these lines was read as the ensemble format or "not a trace". No real
``.jsonl`` recording was found in the stored repositories (the 75 real recordings read, of
LAF-US/IDAHO-VAULT, are all the legacy ``.json``); the file below is written with the record
shapes of that source, and its messages have the fields of the real recordings.
"""

from __future__ import annotations

import json

from ktui.trace import load
from ktui.trace.importers import detect

V1 = ("import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef _k(x, y, n, B: tl.constexpr):\n"
      "    i = tl.program_id(0) * B + tl.arange(0, B)\n    tl.store(y + i, tl.load(x + i, mask=i < n) * 2, mask=i < n)\n\n"
      "class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        y = torch.empty_like(x)\n"
      "        _k[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), B=1024)\n        return y\n")
V2 = V1.replace("B=1024)", "B=256)")


def _resp(cid, name, output):
    return [{"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}]


def _gemini(mid, ts, calls=None, text="", tokens=True):
    m = {"id": mid, "timestamp": ts, "type": "gemini", "content": text, "model": "gemini-3-flash-preview",
         "thoughts": [{"subject": "Plan", "description": "write the kernel", "timestamp": ts}]}
    if tokens:
        m["tokens"] = {"input": 1000, "output": 10, "cached": 0, "thoughts": 5, "tool": 0, "total": 1015}
    if calls is not None:
        m["toolCalls"] = calls
    return m


def _lines(records):
    return "".join(json.dumps(r) + "\n" for r in records)


def _write_call(cid, path, content, before):
    return {"id": cid, "name": "write_file", "args": {"file_path": path, "content": content}, "status": "success",
            "timestamp": "2026-10-02T10:00:20.000Z", "result": _resp(cid, "write_file", f"Successfully wrote {path}"),
            "resultDisplay": {"fileDiff": "...", "fileName": path, "filePath": "/work/" + path,
                              "originalContent": before, "newContent": content, "isNewFile": before == ""}}


def _recording():
    return [
        {"sessionId": "0cbe84f9-f6fa-42ab-a3a1-86cbe3cab45c", "projectHash": "f528f00f",
         "startTime": "2026-10-02T10:00:00.000Z", "lastUpdated": "2026-10-02T10:00:00.000Z", "kind": "main"},
        {"id": "u1", "timestamp": "2026-10-02T10:00:01.000Z", "type": "user", "content": [{"text": "write k.py"}]},
        _gemini("g1", "2026-10-02T10:00:10.000Z", tokens=False),  # written as the response starts
        {"$set": {"lastUpdated": "2026-10-02T10:00:10.000Z"}},
        # written again, whole, once its call ran and its tokens came: this copy is the message
        _gemini("g1", "2026-10-02T10:00:10.000Z", [_write_call("w1", "k.py", V1, "")]),
        _gemini("g2", "2026-10-02T10:00:30.000Z", [_write_call("w2", "k.py", V2, V1)]),
        {"id": "u2", "timestamp": "2026-10-02T10:01:00.000Z", "type": "user", "content": [{"text": "undo that"}]},
        _gemini("g3", "2026-10-02T10:01:05.000Z", text="Reverting."),
        {"$rewindTo": "u2"},  # /rewind: u2 and g3 are gone
        {"$set": {"summary": "Write a Triton doubling kernel"}},
    ]


def test_a_jsonl_recording_is_folded_as_gemini_cli_loads_it(tmp_path):
    p = tmp_path / "session-2026-10-02T10-00-0cbe84f9.jsonl"
    p.write_text(_lines(_recording()))
    assert detect(str(p)).name == "gemini-cli-jsonl"
    run = load(str(p))
    assert run.format == "gemini-cli-jsonl" and not run.problems
    assert len(run.turns) == 2 and [c.name for c in run.calls] == ["write_file", "write_file"]
    assert [k.code for k in run.kernels] == [V1, V2]
    assert run.model == "gemini-3-flash-preview" and run.tokens_in == 2000
    texts = [m[3] for m in run.messages]
    assert "write k.py" in texts and "undo that" not in texts and not any("Reverting" in (t.text or "") for t in run.turns)
    notes = " | ".join(n[1] for n in run.notes)
    assert "written again" in notes and "1 rewind dropped 2 messages" in notes
    assert "summary: Write a Triton doubling kernel" in notes
    # each message at the line of its last copy
    assert run.turns[0].first_line == 5 and run.turns[1].first_line == 6


def test_set_messages_replaces_the_list_and_a_subagent_recording(tmp_path):
    recs = _recording()[:5] + [{"$set": {"messages": [
        {"id": "x1", "timestamp": "2026-10-02T10:05:00.000Z", "type": "user", "content": "start over"}]}}]
    d = tmp_path / "chats" / "0cbe84f9-f6fa-42ab-a3a1-86cbe3cab45c"
    d.mkdir(parents=True)
    p = d / "tl63m8.jsonl"
    recs[0] = dict(recs[0], sessionId="tl63m8", kind="subagent", directories=["/work"])
    p.write_text(_lines(recs))
    run = load(str(p))
    assert run.turns == [] and any(m[3] == "start over" for m in run.messages)
    assert run.persona == "subagent tl63m8"
    assert any("replaced by a '$set'" in n[1] for n in run.notes)


def test_torn_last_line_and_bad_records(tmp_path):
    data = _lines(_recording())
    p = tmp_path / "s.jsonl"
    p.write_text(data[: len(data) - 30])  # the last line still being written
    run = load(str(p))
    assert run.format == "gemini-cli-jsonl" and len(run.turns) >= 2
    q = tmp_path / "t.jsonl"
    q.write_text(_lines(_recording()[:2] + [{"id": "z", "type": "nope", "timestamp": "x", "content": 1}, [1, 2],
                                           {"$rewindTo": "never-seen"}]))
    r = load(str(q))
    assert r.format == "gemini-cli-jsonl" and r.turns == [] and r.problems
    assert any("dropped" in n[1] and "rewind" in n[1] for n in r.notes)
