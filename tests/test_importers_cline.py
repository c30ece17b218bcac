"""Cline's ``api_conversation_history.json`` (a task's messages as Cline sends them to the model).

The real file (mike4567/MRA04242026 at 7644913, 443 messages of Cline 3.x with claude_4_5_opus:
one line of 1.48 MB, no licence found, so not copied) was detected as a chat-message log and then
read as nothing: "line is a JSON list that is neither a message nor a rollout" (a JSON array of
messages on one line was read only pretty-printed). Once read, its 231 calls had no result:
Cline gives a call's result as a text block of the next user message, "[read_file for 'x']
Result:\\n...", not as a tool_result block. The structural file below has the real file's shapes
(``ts`` in epoch ms, ``modelInfo``, ``metrics.tokens.{prompt, completion, cached}``, results with
"Command failed with exit code N." and ``<final_file_content path=...>``, a task resumed after an
interruption, a plan answered by the user's words, a refused write); its values are made up. See benchmarks/results/real_traces.md,
"2026-12-06 (helper traces35)".
"""

from __future__ import annotations

import json
from pathlib import Path

from ktui.trace.importers import load
from ktui.trace.importers.common import search_replace_blocks
from ktui.trace.model import FAILED, OK

ST = Path(__file__).parent / "fixtures" / "formats" / "structural"
CLINE = ST / "cline_3x_api_conversation_history_one_line.json"


def test_one_line_array_of_messages_is_read():
    run = load(str(CLINE))
    assert run.format == "chat-messages"
    assert len(run.turns) == 8 and len(run.calls) == 9
    assert run.model == "claude-sonnet-4-5"
    # the task inside Cline's <task> tags, not the environment details sent after it
    assert run.problem.prompt == ("Write a Triton kernel for the ReLU in ref.py into solution.py and check it with "
                                  "python check.py.")


def test_results_in_text_blocks_pair_with_their_calls_and_say_their_status():
    run = load(str(CLINE))
    assert [(c.name, c.status) for c in run.calls] == [
        ("write_to_file", OK),
        ("execute_command", FAILED),  # "Command failed with exit code 1."
        ("replace_in_file", OK),
        ("execute_command", OK),  # "Command executed successfully (exit code 0)."
        ("read_file", OK),  # two results in one user message, in order
        ("ask_followup_question", FAILED),  # interrupted, the task resumed: it never got one
        ("write_to_file", FAILED),  # "The user denied this operation."
        ("plan_mode_respond", OK),  # answered by the user's next message, in prose
        ("attempt_completion", OK),
    ]
    assert run.calls[1].result.effect == {"exit_code": 1}
    assert run.calls[4].name == "read_file" and run.calls[4].result.summary.startswith("1 | import torch")
    # the interrupted call: Cline tells the model to assume it did not succeed; every call has a result
    assert run.calls[5].result.summary.startswith("no result: the task was interrupted here and resumed later")
    assert run.calls[7].result.summary == "the user: no, just finish"
    assert not run.problems and run.terminal_state != "dangling_call"
    # the result blocks are not the user's words
    assert not any("] Result:" in text for _line, kind, _a, text in run.messages if kind == "user")


def test_tokens_time_and_the_files_as_saved():
    run = load(str(CLINE))
    data = json.loads(CLINE.read_text())
    # metrics.tokens.prompt includes the cached tokens: counted once
    assert (run.tokens_in, run.tokens_out) == (87850, 690)
    assert [t.tokens_in for t in run.turns] == [m["metrics"]["tokens"]["prompt"] for m in data if m["role"] == "assistant"]
    # a turn's model time: from the message it answered to its own ``ts``
    assert [t.llm_ms for t in run.turns] == [6000, 4000, 6000, 3000, 3000, 5000, 2000, 1000]
    # v1 is the file as saved (the user changed BLOCK in the diff view), not the call's content;
    # v2 the replace_in_file on it; the refused write of notes.md is no version
    v1 = data[1]["content"][1]["input"]["content"].replace("BLOCK=1024", "BLOCK=256")
    assert [k.label for k in run.kernels] == ["v1", "v2"]
    assert run.kernels[0].code == v1
    assert run.kernels[1].code == v1.replace("triton.cdiv(n, 1024)", "triton.cdiv(n, 256)")
    assert any("the user changed the content before it was saved" in n for _l, n in run.notes)


def test_search_replace_blocks():
    d = "------- SEARCH\na\nb\n=======\nc\n+++++++ REPLACE\n\n<<<<<<< SEARCH\nx\n=======\n>>>>>>> REPLACE"
    assert search_replace_blocks(d) == [("a\nb", "c"), ("x", "")]
    assert search_replace_blocks("------- SEARCH\na\n=======\nb\n") == []  # not closed
    assert search_replace_blocks("no markers") == [] and search_replace_blocks(None) == []
    # Roo Code's apply_diff (the shape of real apply_diff calls quoted in public transcripts)
    roo = "<<<<<<< SEARCH\n:start_line:13\n-------\n    def f():\n=======\n    def g():\n>>>>>>> REPLACE"
    assert search_replace_blocks(roo) == [("    def f():", "    def g():")]
    assert search_replace_blocks("------- SEARCH\n-------\nx\n=======\ny\n+++++++ REPLACE") == [("-------\nx", "y")]
