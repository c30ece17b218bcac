"""Aider chat histories (``.aider.chat.history.md``): turns, prompts, replies, edits as versions.

The structure is Aider's own (aider/io.py: ``# aider chat started at``, ``#### `` for what the user
typed, ``> `` for Aider's output with a Markdown line break, plain Markdown for the model's reply),
as real histories show it: 0xRickx/Kangaroo_2.2.5 d6f1292 (GPL-3.0), AndrewJacop/Simple-Calulator
8424ac2, 0xf1e/health-analyzer-poc 87686c1 (no licence found: not copied; the shapes below are
written after them) and Aider's own ``tests/fixtures/chat-history.md`` (Aider-AI/aider 5dc9490,
Apache-2.0: ``REAL_SESSION`` below is one session of it, its SEARCH / REPLACE block cut to
the lines it changes).
"""

from __future__ import annotations

from ktui.trace.importers import detect, load
from ktui.trace.index.walk import looked_at
from ktui.trace.model import FAILED, OK

# A minimal history of the same structure as the real ones, on a CUDA kernel: a whole-file write
# (whole format), a SEARCH / REPLACE edit that applies, one that fails to match (Aider's report,
# quoted on its first line only, as 0.82 writes it), a reply cut off by ^C, /run with a
# verifier's output, a reply with a Markdown "#### heading".
KERNEL_HISTORY = """
# aider chat started at 2025-05-04 17:02:36

> Aider v0.82.2  \n> Main model: openrouter/qwen/qwen3-coder with whole edit format  \n> Git repo: .git with 3 files  \n
#### write a CUDA kernel for vector add in add.cu  \n
Here is the kernel.

add.cu
```cuda
__global__ void add(const float* a, const float* b, float* c, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
```

> Tokens: 3.2k sent, 222 received. Cost: $0.0020 message, $0.0020 session.  \n> Applied edit to add.cu  \n> Commit c339495 feat: add vector add kernel  \n
#### /model openrouter/deepseek/deepseek-chat-v3.1  \n> Main model: openrouter/deepseek/deepseek-chat-v3.1 with diff edit format  \n
#### use a grid-stride loop  \n
#### Plan

add.cu
```cuda
<<<<<<< SEARCH
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
=======
    for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
        c[i] = a[i] + b[i];
>>>>>>> REPLACE
```

add.cu
```cuda
<<<<<<< SEARCH
    int j = 0;
=======
    int j = 1;
>>>>>>> REPLACE
```

> Tokens: 10k sent, 1.5k received. Cost: $0.0042 message, $0.0062 session.  \n> Applied edit to add.cu  \n> # 1 SEARCH/REPLACE block failed to match!

## SearchReplaceNoExactMatch: This SEARCH block failed to exactly match lines in add.cu
<<<<<<< SEARCH
    int j = 0;
=======
    int j = 1;
>>>>>>> REPLACE

The SEARCH section must exactly match an existing block of lines including all white space, comments, indentation, docstrings, etc

# The other 1 SEARCH/REPLACE block were applied successfully.
Don't re-send them.
Just reply with fixed versions of the block above that failed to match.  \n
#### /run python check.py  \n> Running python check.py  \n> correct: True  \n> speedup: 1.8x  \n
#### unroll it by 4  \n
add.cu
```cuda
<<<<<<< SEARCH
        c[i] = a[i] + b[i];
=======
        c[i] = a[i] + b[i]; // unrolled
>>>>>>> REPLACE
```
>  \n>  \n> ^C again to exit  \n"""

INPUT_HISTORY = """
# 2025-05-04 17:06:57.158813
+write a CUDA kernel for vector add in add.cu

# 2025-05-04 17:08:48.583248
+/model openrouter/deepseek/deepseek-chat-v3.1

# 2025-05-04 17:09:10.000000
+use a grid-stride loop

# 2025-05-04 17:11:28.167581
+/run python check.py

# 2025-05-04 17:12:00.500000
+unroll it by 4
"""


def _write(tmp_path, text=KERNEL_HISTORY, inputs=INPUT_HISTORY):
    p = tmp_path / ".aider.chat.history.md"
    p.write_text(text)
    if inputs is not None:
        (tmp_path / ".aider.input.history").write_text(inputs)
    return p


def test_detected_by_its_launch_header_and_listed_in_a_folder(tmp_path):
    p = _write(tmp_path)
    assert detect(str(p)).name == "aider"
    assert looked_at(".aider.chat.history.md")  # `runs DIR` / `validate DIR` list it
    assert not looked_at("README.md")


def test_turns_prompt_model_tokens_and_cost(tmp_path):
    run = load(str(_write(tmp_path)))
    assert run.format == "aider" and not [p for p in run.problems if p.severity == "error"]
    assert run.problem.prompt == "write a CUDA kernel for vector add in add.cu"
    assert len(run.turns) == 3  # three replies (the ^C'd one included)
    assert [t.tokens_in for t in run.turns] == [3200, 10000, None]
    assert [t.tokens_out for t in run.turns] == [222, 1500, None]
    assert run.turns[0].usd == 0.002 and run.turns[1].usd == 0.0042
    assert run.model == "openrouter/deepseek/deepseek-chat-v3.1"  # wrote 2 of the 3 replies (each named once)
    assert "Plan" in (run.turns[1].text or "")  # the reply's "#### Plan" heading is not a user input
    users = [m[3] for m in run.messages if m[1] == "user"]
    assert users == ["write a CUDA kernel for vector add in add.cu", "use a grid-stride loop", "unroll it by 4"]
    assert any("Aider commit c339495" in n for _, n in run.notes)


def test_edits_are_calls_and_applied_ones_are_kernel_versions(tmp_path):
    run = load(str(_write(tmp_path)))
    edits = [c for c in run.calls if c.name in ("edit", "write")]
    assert [(c.name, c.status) for c in edits] == [("write", OK), ("edit", OK), ("edit", FAILED), ("edit", FAILED)]
    assert "failed to match" in edits[2].result.summary
    assert "said nothing" in edits[3].result.summary  # cut off by ^C: Aider applied nothing
    assert [k.path for k in run.kernels] == ["add.cu", "add.cu"]
    v1, v2 = run.kernels
    assert not v1.partial and not v2.partial
    assert "if (i < n) c[i]" in v1.code
    assert "i += blockDim.x * gridDim.x" in v2.code and "int j" not in v2.code
    assert "unrolled" not in v2.code  # the unapplied edit is no version
    assert run.final_kernel_number == 2


def test_run_command_is_a_call_with_its_output_and_tests_the_kernel(tmp_path):
    run = load(str(_write(tmp_path)))
    (c,) = [c for c in run.calls if c.name == "run"]
    assert c.args["command"] == "python check.py" and c.actor == "user"
    assert "speedup: 1.8x" in c.result.summary
    assert run.metrics is not None and run.metrics.correct is True and run.metrics.speedup == 1.8


def test_prompt_times_from_the_input_history_beside_it(tmp_path):
    run = load(str(_write(tmp_path)))
    starts = [t.start_ms for t in run.turns]
    assert starts[0] is not None and starts[1] - starts[0] == 2 * 60_000 + 12_842  # 17:06:57.158 -> 17:09:10.000
    assert starts[2] - starts[1] == 2 * 60_000 + 50_500
    assert all(t.llm_ms is None for t in run.turns)  # the files time prompts, not replies


def test_without_the_input_history_only_the_launch_is_timed(tmp_path):
    run = load(str(_write(tmp_path, inputs=None)))
    assert {t.start_ms for t in run.turns} == {run.started_ms}
    assert any("no .aider.input.history" in n for _, n in run.notes)


# Aider-AI/aider 5dc9490, tests/fixtures/chat-history.md (Apache-2.0), one session (its edit block
# cut to the lines it changes; the rest as written)
REAL_SESSION = """
# aider chat started at 2024-08-05 19:33:32

> /Users/gauthier/Projects/aider/.venv/bin/aider aider/utils.py  \n> Aider v0.47.2-dev  \n> Models: claude-3-5-sonnet-20240620 with diff edit format, weak model claude-3-haiku-20240307  \n> Git repo: .git with 300 files  \n> Repo-map: using 1024 tokens  \n> Added aider/utils.py to the chat.  \n> Use /help <question> for help, run "aider --help" to see cmd line args  \n
#### Use the Spinner instead of the inlined custom spinner  \n
Certainly! I'll modify the `run_install` function in the `aider/utils.py` file to use the `Spinner` class instead of the inline custom spinner. Here's the change:

aider/utils.py
```python
<<<<<<< SEARCH
        spinner = itertools.cycle(["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"])
        last_update = time.time()
        update_interval = 0.2  # 5 times per second

        while True:
            char = process.stdout.read(1)
            if not char:
                break

            output.append(char)

            current_time = time.time()
            if current_time - last_update >= update_interval:
                print(f" Installing... {next(spinner)}", end="\\r", flush=True)
                last_update = current_time

        return_code = process.wait()
=======
        spinner = Spinner("Installing...")

        while True:
            char = process.stdout.read(1)
            if not char:
                break

            output.append(char)
            spinner.step()

        spinner.end()
        return_code = process.wait()
>>>>>>> REPLACE
```

This change replaces the custom spinner implementation with the `Spinner` class.

> Tokens: 5,244 sent, 604 received. Cost: $0.02 request, $0.02 session.  \n> Applied edit to aider/utils.py  \n> Commit fd43cd4 feat: Use the Spinner instead of the inlined custom spinner  \n> You can use /undo to revert and discard commit fd43cd4.  \n
#### /diff  \n
#### /ex  \n"""


def test_a_real_session_of_aiders_own_history(tmp_path):
    run = load(str(_write(tmp_path, REAL_SESSION, None)))
    assert run.format == "aider" and not run.problems
    assert run.model == "claude-3-5-sonnet-20240620"  # "Models: X with diff edit format, weak model Y"
    assert run.problem.prompt == "Use the Spinner instead of the inlined custom spinner"
    (t,) = run.turns
    assert (t.tokens_in, t.tokens_out, t.usd) == (5244, 604, 0.02)
    (c,) = run.calls
    assert c.name == "edit" and c.args["path"] == "aider/utils.py" and c.status == OK
    assert c.args["new_string"].startswith('        spinner = Spinner("Installing...")')
    assert [m[3] for m in run.messages if m[1] == "command"] == ["/diff", "/ex"]
    assert run.kernels == []  # a Python utility, not a kernel


def test_a_history_whose_head_was_cut_is_still_read(tmp_path):
    # Aider's fixture opens mid-session: an editor mode line, then Aider's quoted output
    head = "-*- mode: fundamental -*-\n" + "".join(f"> line {i}  \n" for i in range(8))
    run = load(str(_write(tmp_path, head + REAL_SESSION, None)))
    assert run.format == "aider" and len(run.turns) == 1
    plain = tmp_path / "notes.md"
    plain.write_text("# Notes\n\n> a quote\n\nsome text\n")
    assert detect(str(plain)).name != "aider"



def test_numbers_out_of_range_are_not_read(tmp_path):
    text = ("\n# aider chat started at 2024-01-01 00:00:00\n\n#### hi  \n\nreply\n\n"
            f"> Tokens: {'9' * 400}k sent, 5 received. Cost: $... message, $1 session.  \n")
    run = load(str(_write(tmp_path, text, None)))
    assert run.format == "aider" and not run.problems  # was an OverflowError / ValueError
    assert (run.turns[0].tokens_in, run.turns[0].tokens_out, run.turns[0].usd) == (None, 5, None)
