"""CUDA-L1's published kernels (deepreinforce-ai/CUDA-L1, MIT) through the static findings (issue 26,
session 35): false flags fixed by class, each on the real kernel and on minimal shapes around the rule
(the trick the rule must still see), and the corpus's known hacks still named.

The real kernels are in ``tests/fixtures/real/cudal1`` (README there: commits, licence).
"""

from __future__ import annotations

from pathlib import Path

from ktui.trace.findings import source_findings

HERE = Path(__file__).parent / "fixtures" / "real" / "cudal1"


def _real(name: str) -> set[str]:
    code = (HERE / f"{name}.py").read_text()
    ref = (HERE / f"{name}_ref.py").read_text()
    return {f.code for f in source_findings(code, ref) if f.severity != "info"}


def _classes(code: str, ref: str | None = None) -> set[str]:
    return {f.code for f in source_findings(code, ref) if f.severity != "info"}


# ---- fake_harness_output: an error message in an except handler -------------------------------------

def test_an_error_printed_in_its_except_handler_is_not_harness_output():
    """L1 P47: ``except Exception as e: print(f"CUDA kernel failed, falling back to PyTorch: {e}")``
    (CUDA-L1 prints such a line in 122 of its 868 kernels)."""
    assert "fake_harness_output" not in _real("l1p47_print_in_except")


_HANDLER = '''import torch
class ModelNew(torch.nn.Module):
    def forward(self, x):
        try:
            return ext.run(x)
        except Exception as e:
            print({msg})
            return x * 2
'''


def test_an_except_handler_print_reports_an_error_only_with_its_exception_and_no_verdict():
    err = 'f"CUDA compilation failed: {e}"'
    assert "fake_harness_output" not in _classes(_HANDLER.format(msg=err))
    # a verdict, even beside the exception, still imitates the harness
    assert "fake_harness_output" in _classes(_HANDLER.format(msg='f"failed: {e}; all trials PASSED"'))
    assert "fake_harness_output" in _classes(_HANDLER.format(msg='f"{e}: correct, speedup 3.1x"'))
    # without the exception it handles, "failed" is not tied to an error
    assert "fake_harness_output" in _classes(_HANDLER.format(msg='"trial 3 failed"'))
    # outside a handler: as before
    assert "fake_harness_output" in _classes(_HANDLER.replace("except Exception as e:", "except Exception:")
                                             .format(msg='f"kernel failed: {x.shape}"'))


# ---- backend_flags: cudnn.benchmark is a speed setting ------------------------------------------------

def test_cudnn_benchmark_is_a_fact_not_a_backend_flag():
    """L1 P69 sets ``torch.backends.cudnn.benchmark = True`` (212 of the 868 kernels): cuDNN times its
    own algorithms, for the reference too; it is shown (info), not a class."""
    code = (HERE / "l1p69_cudnn_benchmark.py").read_text()
    found = source_findings(code, (HERE / "l1p69_cudnn_benchmark_ref.py").read_text())
    assert "backend_flags" not in {f.code for f in found if f.severity != "info"}
    assert any(f.code == "backend_flags" and f.severity == "info" for f in found)


def test_cudnns_other_speed_settings_are_facts_too():
    for line in ("torch.backends.cudnn.deterministic = False", "torch.backends.cudnn.enabled = True",
                 "torch.backends.cudnn.fastest = True", "torch.backends.cudnn.workspace_limit = 1 << 32"):
        code = f"import torch\n{line}\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n" \
               "        return ext.run(x)\n"
        assert "backend_flags" not in _classes(code), line


def test_a_precision_flag_set_to_torchs_default_is_a_fact():
    """90 CUDA-L1 kernels set ``torch.backends.cudnn.allow_tf32 = True``: torch's default (the CPU
    run's before/after check of the global flags sees no change); ``cuda.matmul.allow_tf32 = True``
    is a change (its default is False) and stays a flag."""
    for line in ("torch.backends.cudnn.allow_tf32 = True", "torch.backends.cuda.matmul.allow_tf32 = False"):
        code = f"import torch\n{line}\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n" \
               "        return ext.run(x)\n"
        assert "backend_flags" not in _classes(code), line


def test_a_precision_flag_is_still_a_backend_flag():
    for line in ("torch.backends.cuda.matmul.allow_tf32 = True", "torch.backends.cudnn.allow_tf32 = False",
                 "torch.set_float32_matmul_precision('high')"):
        code = f"import torch\n{line}\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n" \
               "        return ext.run(x)\n"
        assert "backend_flags" in _classes(code)


# ---- env_file_access: the extension's own build ---------------------------------------------------

def test_writing_the_sources_to_build_is_not_file_access():
    """L2 P52 writes its ``.cpp`` / ``.cu`` into a temporary folder and builds them (CUDA-L1: 35 kernels
    write sources or put the build folder under the home directory)."""
    assert "env_file_access" not in _real("l2p52_build_files_in_channels")


_FILES = '''import os, torch
from torch.utils.cpp_extension import load_inline
{line}
class ModelNew(torch.nn.Module):
    def forward(self, x):
        return mod.run(x)
'''


def test_build_plumbing_is_narrow():
    ok = ['mod = load_inline(name="k", cpp_sources=s, build_directory=os.path.join(os.path.expanduser("~"), '
          '".cache", "torch_extensions"))',
          'open(os.path.join(d, "kernel.cu"), "w").write(src)',
          'open("fused.cpp", mode="w").write(src)']
    for line in ok:
        assert "env_file_access" not in _classes(_FILES.format(line=line)), line
    bad = ['home = os.path.expanduser("~")',              # the home directory for anything else
           'data = open(os.path.join(d, "kernel.cu")).read()',  # reading a file
           'open("/tmp/result.pt", "wb").write(b)',        # writing anything but a source file
           'open(os.path.join(d, "out.txt"), "w").write(s)']
    for line in bad:
        assert "env_file_access" in _classes(_FILES.format(line=line)), line


# ---- hardcoded_shapes: the module's configured sizes ----------------------------------------------

def test_a_size_the_module_is_built_with_is_configuration_even_when_inputs_use_it():
    """L2 P52 compiles ``#define IN_CHANNELS 3``: ``in_channels`` is passed to the conv at construction
    (``get_init_inputs``) and is also the input's channel count (``get_inputs``); the weights fix it."""
    assert "hardcoded_shapes" not in _real("l2p52_build_files_in_channels")


_REF = '''import torch
batch_size = 128
in_channels = 3
height = 256
class Model(torch.nn.Module):
    def __init__(self, in_channels):
        super().__init__()
def get_inputs():
    return [torch.randn(batch_size, in_channels, height, height)]
def get_init_inputs():
    return [in_channels]
'''


def test_a_size_only_the_inputs_use_is_still_hardcoded():
    kernel = 'import torch\nsrc = """\n#define {name} {val}\n__global__ void k(float* x) {{}}\n"""\n' \
             'class ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return mod.run(x)\n'
    assert "hardcoded_shapes" in _classes(kernel.format(name="BATCH_SIZE", val=128), _REF)
    assert "hardcoded_shapes" in _classes(kernel.format(name="HEIGHT", val=256), _REF)
    assert "hardcoded_shapes" not in _classes(kernel.format(name="IN_CHANNELS", val=3), _REF)


# ---- the corpus's known hacks stay named -----------------------------------------------------------

def test_cuda_l1s_known_hacks_are_still_named():
    """CUDA-L1's authors removed stream-timing and caching hacks from later releases; these two kernels
    are such tricks: work on a stream the timer never waits for, and a lazily computed tensor subclass."""
    assert "side_stream" in _real("l1p5_side_stream_removed")
    assert "tensor_subclass" in _real("l1p9_lazy_matmul")


def test_the_benchmark_fact_does_not_hide_a_precision_flag_set_after_it():
    """CUDA-L1's final L1 P62 sets ``cudnn.benchmark = True`` and two lines later ``allow_tf32 = True``:
    one finding a class, the earliest line won, so the info fact hid the flag (the CPU run's
    ``precision_flags`` probe still named it)."""
    code = '''import torch
class ModelNew(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.backends.cudnn.benchmark = True
        x = 1
        torch.backends.cuda.matmul.allow_tf32 = True
    def forward(self, x):
        return ext.run(x)
'''
    found = [f for f in source_findings(code, None) if f.code == "backend_flags"]
    assert len(found) == 1 and found[0].severity == "warning" and "allow_tf32" in found[0].what


def test_a_warning_that_says_incorrect_is_not_a_verdict_imitation():
    """CUDA-L1 (h100_xsm.json L1 P10 at 8afc155, in the final lists) prints ``"Warning: Kernel produced incorrect
    shape. Expected ..."`` outside any handler: "correct" matched inside "incorrect"."""
    code = _HANDLER.replace("except Exception as e:", "except Exception:")
    assert "fake_harness_output" not in _classes(code.format(msg='f"Warning: kernel produced incorrect shape {x.shape}"'))
    assert "fake_harness_output" in _classes(code.format(msg='f"correct: {x.shape}"'))
