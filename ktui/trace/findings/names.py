"""What the analysis looks for, by name: the calls, attributes and modules of each class of
finding, and the regexes of the embedded CUDA / C++.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import lru_cache


class _Screened:
    """A compiled regex behind a text screen: ``needles``, substrings one of which every match
    contains (read off the pattern's alternatives), so that a text with none of them is not
    searched. Python's regex engine tries each position of the text for a pattern that starts
    with ``\\b`` and an alternation; ``needle in text`` is one C loop. The embedded CUDA/C++
    checks ran a dozen such patterns over every native source: 29 % of an analysis' time.
    ``tests/test_findings_screens.py`` checks each screen against its pattern (an example of
    every alternative passes the screen; searched and screened agree on every kernel held)."""

    __slots__ = ("needles", "pattern")

    def __init__(self, pattern: str, needles: tuple[str, ...], flags: int = 0) -> None:
        self.pattern = re.compile(pattern, flags)
        self.needles = needles

    def may(self, text: str) -> bool:
        return any(n in text for n in self.needles)

    def search(self, text: str) -> re.Match[str] | None:
        return self.pattern.search(text) if self.may(text) else None

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.pattern.finditer(text) if self.may(text) else iter(())


# ---- names ------------------------------------------------------------------------------------

_FALLBACK_OPS = frozenset({
    "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "einsum", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "softmax", "log_softmax", "layer_norm",
    "group_norm", "batch_norm", "instance_norm", "linear", "scaled_dot_product_attention", "tensordot",
    "chain_matmul", "cumsum", "cumprod", "logsumexp", "max_pool2d", "avg_pool2d", "mv", "cdist",
})
_NN_COMPUTE = re.compile(r"^(Linear|Bilinear|Conv\w*|ConvTranspose\w*|BatchNorm\w*|LayerNorm|GroupNorm|"
                         r"InstanceNorm\w*|RMSNorm|MultiheadAttention|Transformer\w*|LSTM|GRU|RNN|"
                         r"Softmax|LogSoftmax|MaxPool\w*|AvgPool\w*|AdaptiveAvgPool\w*|AdaptiveMaxPool\w*|"
                         r"Embedding\w*|GELU|ReLU|SiLU|Sigmoid|Tanh|Mish|ELU|SELU|Softplus|LeakyReLU|"
                         r"Hardtanh|Hardswish|Dropout\w*|Upsample|PixelShuffle)$")
_VIEWISH = frozenset({"contiguous", "view", "reshape", "view_as", "reshape_as", "flatten", "squeeze",
                      "unsqueeze", "t", "transpose", "permute", "expand", "expand_as", "as_strided", "narrow",
                      "select", "detach", "unflatten", "movedim", "swapaxes", "unbind", "split", "chunk",
                      "T", "mT", "data", "to", "cuda", "float", "type_as"})
_NOT_INPLACE = frozenset({"requires_grad_", "share_memory_", "record_stream_", "retain_grad_"})
_EMPTY_CTORS = frozenset({"torch.empty", "torch.empty_like", "torch.empty_strided", "torch.Tensor",
                          "torch.FloatTensor"})
_EMPTY_METHODS = frozenset({"new_empty", "new_empty_strided"})
_TIMER_WORDS = ("perf_counter", "monotonic", "process_time", "time_ns", "elapsed_time", "Event", "synchronize",
                "do_bench", "timeit", "default_timer", "Timer", "thread_time", "clock")
_STATS_ROOTS = ("statistics.", "numpy.mean", "numpy.median", "numpy.std", "numpy.percentile",
                "numpy.quantile", "numpy.min", "numpy.max", "torch.median", "torch.mean", "torch.std",
                "torch.quantile", "math.fsum")
_COMPARE_NAMES = ("allclose", "isclose", "equal", "assert_close", "assert_allclose", "testing",
                  "__eq__", "__ne__", "__bool__", "eq", "ne", "all", "any", "abs", "sub", "item",
                  "tolist", "isnan", "isfinite", "max", "float")
_PATCH_ROOTS = frozenset({"time", "torch", "triton", "numpy", "statistics", "builtins", "gc", "sys", "os",
                          "inspect", "threading", "math", "random", "timeit", "ktui", "kernelbench",
                          "popcorn_pri", "__main__", "functools", "traceback", "io", "json", "subprocess",
                          "multiprocessing", "logging", "warnings", "cupy", "contextlib", "importlib"})
_THREAD_CALLS = {
    "threading.Thread": "starts a threading.Thread", "threading.Timer": "starts a threading.Timer",
    "_thread.start_new_thread": "starts a raw thread", "_thread.start_new": "starts a raw thread",
    "concurrent.futures.ThreadPoolExecutor": "creates a thread pool",
    "concurrent.futures.ProcessPoolExecutor": "creates a process pool",
    "concurrent.futures.thread.ThreadPoolExecutor": "creates a thread pool",
    "multiprocessing.Process": "starts a process", "multiprocessing.Pool": "creates a process pool",
    "multiprocessing.pool.ThreadPool": "creates a thread pool", "multiprocessing.dummy.Pool": "creates a thread pool",
    "multiprocessing.get_context": "uses multiprocessing", "torch.multiprocessing.Process": "starts a process",
    "torch.multiprocessing.spawn": "spawns processes", "os.fork": "forks the process",
    "os.forkpty": "forks the process", "os.posix_spawn": "spawns a process", "os.spawnv": "spawns a process",
    "os.spawnl": "spawns a process", "os.system": "runs a shell command", "os.popen": "runs a shell command",
    "subprocess.Popen": "starts a subprocess", "subprocess.run": "runs a subprocess",
    "subprocess.call": "runs a subprocess", "subprocess.check_call": "runs a subprocess",
    "subprocess.check_output": "runs a subprocess", "subprocess.getoutput": "runs a subprocess",
    "asyncio.run": "runs an asyncio loop", "asyncio.new_event_loop": "creates an asyncio loop",
    "os.execv": "replaces the process", "os.execl": "replaces the process", "os.execvp": "replaces the process",
}
#: thread / pool constructors whose work a join can wait for
_JOINABLE = frozenset({"threading.Thread", "threading.Timer", "concurrent.futures.ThreadPoolExecutor",
                       "concurrent.futures.ProcessPoolExecutor", "concurrent.futures.thread.ThreadPoolExecutor",
                       "multiprocessing.Process", "multiprocessing.Pool", "multiprocessing.pool.ThreadPool",
                       "multiprocessing.dummy.Pool", "torch.multiprocessing.Process"})
_THREAD_BASES = frozenset({"threading.Thread", "multiprocessing.Process", "threading.Timer"})
_FRAME_CALLS = {
    "inspect.stack": "reads the call stack (inspect.stack)", "inspect.currentframe": "takes its own frame",
    "inspect.getouterframes": "reads the caller's frames", "inspect.getframeinfo": "reads frame info",
    "inspect.trace": "reads the traceback frames", "inspect.getmodule": "inspects its caller's module",
    "sys._getframe": "reads the caller's frame (sys._getframe)", "sys._current_frames": "reads every thread's frame",
    "traceback.extract_stack": "reads the call stack (traceback)", "traceback.format_stack": "reads the call stack",
    "traceback.walk_stack": "walks the call stack", "sys.settrace": "installs a trace hook",
    "sys.setprofile": "installs a profile hook", "threading.settrace": "installs a trace hook",
    "threading.setprofile": "installs a profile hook", "sys.addaudithook": "installs an audit hook",
}
_FRAME_ATTRS = frozenset({"f_back", "f_locals", "f_globals", "f_code", "f_lineno", "gi_frame", "tb_frame",
                          "cr_frame", "f_builtins"})
#: calls that draw a new non-deterministic seed (they tell nothing about the inputs' seed)
_FRESH_SEED = frozenset({"torch.seed", "torch.random.seed", "torch.cuda.seed", "torch.cuda.seed_all"})
_RNG_CALLS = frozenset({
    "torch.initial_seed", "torch.manual_seed", "torch.seed", "torch.get_rng_state", "torch.set_rng_state",
    "torch.random.initial_seed", "torch.random.manual_seed", "torch.random.seed", "torch.random.get_rng_state",
    "torch.random.set_rng_state", "torch.cuda.initial_seed", "torch.cuda.manual_seed", "torch.cuda.manual_seed_all",
    "torch.cuda.seed", "torch.cuda.seed_all", "torch.cuda.get_rng_state", "torch.cuda.set_rng_state",
    "torch.cuda.get_rng_state_all", "torch.cuda.set_rng_state_all", "random.seed", "random.getstate",
    "random.setstate", "numpy.random.seed", "numpy.random.get_state", "numpy.random.set_state"})


#: Python's own profiler and tracer hooks: asking whether one is attached is asking "am I being
#: profiled?" (cProfile, a tracing harness, a debugger)
_TRACE_HOOKS = frozenset({"sys.getprofile", "sys.gettrace", "threading.getprofile", "threading.gettrace",
                          "sys.monitoring.get_tool"})


def _profiler_query(name: str) -> bool:
    """torch.autograd._profiler_enabled, torch._C._autograd._kineto_enabled,
    torch.autograd.profiler._is_profiler_enabled and the like: a question no kernel needs to ask
    (annotating with record_function is not one)."""
    low = name.lower()
    return ("profiler" in low or "kineto" in low) and "enabled" in low


_GC_CALLS = {"gc.get_objects": "walks every live object (gc.get_objects)",
             "gc.get_referrers": "finds who references an object (gc.get_referrers)",
             "gc.get_referents": "walks object references (gc.get_referents)",
             "gc.get_stats": None, "gc.collect": None, "gc.disable": None, "gc.enable": None, "gc.isenabled": None,
             "gc.freeze": None, "gc.callbacks": "hooks the garbage collector"}
_BACKEND_CALLS = frozenset({"torch.set_float32_matmul_precision", "torch.set_flush_denormal",
                            "torch.use_deterministic_algorithms", "torch.set_default_dtype",
                            "torch.set_default_tensor_type", "torch.set_default_device", "torch.set_num_threads",
                            "torch.set_num_interop_threads", "torch.backends.cudnn.flags",
                            "torch.backends.cuda.preferred_linalg_library",
                            "torch.backends.cuda.preferred_blas_library",
                            "torch.backends.cuda.enable_flash_sdp", "torch.backends.cuda.enable_math_sdp",
                            "torch.backends.cuda.enable_mem_efficient_sdp", "torch.set_grad_enabled",
                            "torch.cuda.set_sync_debug_mode", "torch._C._set_cublas_allow_tf32",
                            "torch.cuda.memory.set_per_process_memory_fraction",
                            "torch.cuda.set_per_process_memory_fraction"})
_GRAPH_CALLS = frozenset({"torch.cuda.CUDAGraph", "torch.cuda.graph", "torch.cuda.make_graphed_callables",
                          "torch.cuda.graphs.CUDAGraph", "torch.cuda.graphs.graph", "triton.testing.do_bench_cudagraph"})
_ENV_CALLS = {"os.getenv": "reads the environment", "os.putenv": "changes the environment",
              "os.unsetenv": "changes the environment", "os.environ.get": "reads the environment",
              "os.environ.copy": "reads the environment", "os.environ.update": "changes the environment",
              "os.environ.pop": "changes the environment", "os.environ.items": "reads the environment",
              "os.environ.keys": "reads the environment", "os.environ.values": "reads the environment",
              "open": "opens a file", "io.open": "opens a file", "os.open": "opens a file",
              "os.listdir": "lists a directory", "os.scandir": "lists a directory", "os.walk": "walks a directory",
              "glob.glob": "lists files", "os.remove": "deletes a file", "os.unlink": "deletes a file",
              "os.rename": "renames a file", "os.replace": "replaces a file", "shutil.rmtree": "deletes a directory",
              "shutil.copy": "copies a file", "shutil.copyfile": "copies a file", "shutil.move": "moves a file",
              "socket.socket": "opens a network socket", "socket.create_connection": "opens a network connection",
              "urllib.request.urlopen": "makes a network request", "requests.get": "makes a network request",
              "requests.post": "makes a network request", "http.client.HTTPConnection": "opens a network connection",
              "os.chdir": "changes the working directory", "pickle.load": "unpickles a file",
              "torch.load": "loads a file", "numpy.load": "loads a file", "os.getppid": "looks up its parent process",
              "pathlib.Path.home": "looks at the home directory", "os.path.expanduser": "looks at the home directory",
              # who and where it runs: a kernel can behave one way under a harness's machine and another here
              "socket.gethostname": "reads the host's name", "socket.getfqdn": "reads the host's name",
              "platform.node": "reads the host's name", "platform.uname": "reads the host's identity",
              "os.uname": "reads the host's identity", "getpass.getuser": "reads the user's name",
              "os.getlogin": "reads the user's name", "os.getuid": "reads the user's id",
              "os.geteuid": "reads the user's id"}
_PATH_METHODS = frozenset({"read_text", "read_bytes", "write_text", "write_bytes", "open", "unlink",
                           "iterdir", "glob", "rglob", "touch"})
_BUILD_ENV = frozenset({"TORCH_CUDA_ARCH_LIST", "MAX_JOBS", "CUDA_HOME", "CUDA_PATH", "TORCH_EXTENSIONS_DIR",
                        "CXX", "CC", "NVCC_APPEND_FLAGS", "NVCC_PREPEND_FLAGS", "TRITON_CACHE_DIR",
                        "CUDA_LAUNCH_BLOCKING", "TORCH_USE_CUDA_DSA", "TORCH_NVCC_FLAGS", "CUDA_VISIBLE_DEVICES",
                        "CUDA_DEVICE_MAX_CONNECTIONS", "TRITON_PRINT_AUTOTUNING", "CUTLASS_PATH",
                        "PYTORCH_ROCM_ARCH", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "CUDA_MODULE_LOADING"})
#: cuDNN settings that choose among its full-precision algorithms (speed, determinism, workspace)
_CUDNN_SPEED = frozenset({"torch.backends.cudnn.benchmark", "torch.backends.cudnn.deterministic",
                          "torch.backends.cudnn.fastest", "torch.backends.cudnn.workspace_limit",
                          "torch.backends.cudnn.enabled"})
#: torch's defaults of its precision flags: setting one to its default changes nothing
_TORCH_FLAG_DEFAULTS = {"torch.backends.cudnn.allow_tf32": True, "torch.backends.cuda.matmul.allow_tf32": False,
                        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": True,
                        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": True}
#: a C/C++/CUDA source file (written out to be compiled)
_SOURCE_FILE = re.compile(r"\.(?:cu|cuh|cpp|cc|cxx|c|h|hpp)$")
#: where a toolkit or library lives (THUNDERKITTENS_ROOT, CUTLASS_DIR ...): build configuration
_BUILD_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*_(?:ROOT|HOME|PATH|DIR|INCLUDE|INCLUDE_DIR|LIB|LIBRARY_PATH)$")
_PROCESS_CALLS = {"os._exit": "exits the process", "sys.exit": "exits the interpreter",
                  "os.kill": "sends a signal", "os.killpg": "sends a signal to a process group",
                  "signal.signal": "installs a signal handler", "signal.alarm": "schedules a signal",
                  "signal.setitimer": "schedules a signal", "atexit.register": "runs code at interpreter exit",
                  "os.abort": "aborts the process", "exit": "exits the interpreter", "quit": "exits the interpreter",
                  "os.setsid": "detaches from its session", "os.dup2": "redirects a file descriptor",
                  "os.close": "closes a file descriptor", "sys.setrecursionlimit": None}
_DYNAMIC = {"exec": "executes a string as code (exec)", "eval": "evaluates a string as code (eval)",
            "compile": "compiles a string as code", "__import__": "imports by computed name",
            "importlib.import_module": "imports by computed name", "importlib.reload": "reloads a module",
            "types.FunctionType": "builds a function from a code object",
            "marshal.loads": "loads a code object", "runpy.run_path": "runs a file as code"}
_OUTPUT_CALLS = frozenset({"print", "sys.stdout.write", "sys.stderr.write", "sys.__stdout__.write",
                           "sys.__stderr__.write", "logging.info", "logging.warning", "logging.error",
                           "logging.critical", "logging.debug", "os.write", "sys.stdout.buffer.write",
                           "sys.stderr.buffer.write", "builtins.print"})
_HARNESS_WORDS = re.compile(
    r"(?i)(\bpass(?:ed)?\b|\bfail(?:ed)?\b(?!\s+to\b)|(?<!in)correct|speedup|runtime|\btrials?\b|μs|\bus\b|\bms\b|verdict|"
    r"reproduced|\[meta\]|submit_kernel|run_correctness|max_abs|abs_err|rel_err|\"status\"|\"ok\"|"
    r"\"result\"|\"stage\"|\"kind\"|timing|elapsed|mean=|median|compile_kernel|all matched)")
#: what a printed line claims about the kernel (a harness's verdict), as opposed to describing an error
_VERDICT_CLAIM = re.compile(r"(?i)\bpass(?:ed|es)\b|(?<!in)correct|speedup|reproduced|all matched|\bok\b|\[meta\]|"
                            r"\"status\"|\"result\"")
_JOIN_TEXT = ("wait_stream", "synchronize(", ".synchronize", "cudaStreamSynchronize", "cudaDeviceSynchronize",
              "cudaStreamWaitEvent", "wait_event", ".wait(", "record_stream")
_STREAM_TEXT = _Screened(r"torch\.cuda\.Stream\s*\(|cudaStreamCreate\w*\s*\(|getStreamFromPool\s*\(|"
                          r"torch\.cuda\.stream\s*\(\s*torch\.cuda\.Stream|cuda\.Stream\s*\(", ("tream",))
_GRAPH_TEXT = _Screened(r"\b(cudaStreamBeginCapture|cudaGraphLaunch|cudaGraphInstantiate\w*|cuGraphLaunch)\b",
                          ("Capture", "Graph"))
_LIB_TEXT = _Screened(r"\b(cublas\w*[Gg]em[mv]\w*|cublasLtMatmul|cublas[SDHCZ](?:dot|axpy|trsm|syrk|scal)\w*|"
                       r"cudnn\w+Forward\w*|"
                       r"cudnnConvolution\w*|(?:at|torch)::(?:matmul|mm|bmm|addmm|baddbmm|einsum|conv\w*d|softmax|"
                       r"log_softmax|linear|layer_norm|batch_norm|group_norm|scaled_dot_product_attention|"
                       r"native_layer_norm|_softmax|cudnn_convolution\w*|relu|gelu|sigmoid|tanh|sum|mean|"
                       r"max_pool\w*|avg_pool\w*|cumsum|norm)|torch::nn::functional::\w+|at::native::\w+|"
                       r"cutlass::gemm::device::\w+)\s*[(<]", ("cublas", "cudnn", "::"))
# the environment, or who runs the process: argv[0] through glibc's globals, the auxiliary vector, the parent
_CPP_ENV = _Screened(r"(?<![.\w])((?:std::)?(?:secure_)?getenv|environ|_wgetenv|GetEnvironmentVariable\w*|"
                     r"program_invocation(?:_short)?_name|__progname|getauxval|getppid)\b\s*[(\[]?",
                     ("getenv", "environ", "GetEnvironmentVariable", "program_invocation", "__progname", "getauxval",
                      "getppid"))
_CPP_FILE = _Screened(r"\b(?:std::)?[io]?fstream\s+\w+\s*[({][^;]*|\b(?:std::)?[io]?fstream\s*\([^;]*|\bfopen\s*\([^;]*|(?:::|\b)open\s*\(\s*\"[^\"]*\"|"
                       r"\"/proc/[^\"]*\"|\"/sys/[^\"]*\"|\breadlink\s*\(|\bopendir\s*\(|"
                       # POSIX open of any path (``::open(path.c_str(), O_RDONLY)``), a shell's output
                       r"::open(?:at|64)?\s*\(|\bopenat\s*\(|\bpopen\s*\(",
                          ("fstream", "open", "/proc/", "/sys/", "readlink"))
# a static map whose key is a pointer (void*, float*, at::Half* ...)
_CPP_PTR_MAP = _Screened(r"\bstatic\s+(?:thread_local\s+)?(?:std::)?(?:unordered_)?map\s*<\s*(?:const\s+)?"
                          r"[\w:]+\s*\*", ("static",))
# ...or an integer that holds one (keyed on data_ptr's address)
_CPP_INT_MAP = _Screened(r"\bstatic\s+(?:thread_local\s+)?(?:std::)?(?:unordered_)?map\s*<\s*(?:std::)?"
                          r"(?:uintptr_t|intptr_t|int64_t|uint64_t|size_t|long|unsigned long|long long)\b",
                          ("static",))
# a static pointer later compared with a tensor's data_ptr (the "same buffer as last time" test)
_CPP_STATIC_PTR = _Screened(r"\bstatic\s+(?:const\s+)?[\w:]+\s*(?:const\s*)?\*\s*(\w+)\s*(?:=|;)", ("static",))
_CPP_QUERY = _Screened(r"\b(cudaEventQuery|cudaStreamQuery|cuEventQuery|cuStreamQuery|hipEventQuery|hipStreamQuery|"
                        r"cudaEventElapsedTime|cuEventElapsedTime)\s*\(|"
                        # c10's own: ``at::cuda::getCurrentCUDAStream().query()``, ``stream.query()``, ``ev.query()``
                        r"\b(\w*(?:[Ss]tream|[Ee]vent|\bev)\w*(?:\s*\(\s*\))?\s*\.\s*query)\s*\(\s*\)",
                       ("Query", "ElapsedTime", "query"))
# any static whose type holds a pointer or a pointer-sized integer (``static std::uintptr_t keys[64];``,
# ``static std::vector<std::pair<const void*, torch::Tensor>> seen;``): a cache keyed on buffers when the
# code also compares a tensor's data_ptr with something other than another data_ptr or a constant
_CPP_STATIC_PTRISH = _Screened(r"\bstatic\s+(?!const\s+char\b|char\b|constexpr\b)(?:thread_local\s+)?"
                               r"([^;=(){}]*?(?:\*|\bu?intptr_t\b)[^;=(){}]*?)\s*\b(\w+)\s*(?:\[[^\]]*\]\s*)?[;={]",
                               ("static",))
_CPP_THREAD = _Screened(r"\b(std::thread|pthread_create|boost::thread)\b", ("thread",))
_CPP_JOIN = _Screened(r"\.join\s*\(\s*\)|\bpthread_join\s*\(", ("join",))
_CPP_DETACH = _Screened(r"\.detach\s*\(\s*\)|\bpthread_detach\s*\(", ("detach",))
_GLOBAL = re.compile(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(\w+)\s*\([^)]*\)\s*\{", re.S)
_MARKER_NAMES = re.compile(r"(?i)marker|dummy|noop|no_op|touch|placeholder|presence|empty_kernel|fake")
_HALF_TEXT = _Screened(r"\b(CUBLAS_COMPUTE_32F_FAST_16F|CUBLAS_COMPUTE_32F_FAST_16BF|CUBLAS_COMPUTE_32F_FAST_TF32|"
                        r"CUBLAS_COMPUTE_16F|CUBLAS_TF32_TENSOR_OP_MATH|wmma::precision::tf32|"
                        r"input_precision\s*=\s*[\"']tf32|"
                        # CUDA C++ half / bfloat16 / fp8 arithmetic and conversions, ATen's half types
                        r"__half2?|half2|__nv_bfloat162?|__nv_fp8_\w+|__float2half\w*|__floats2half2\w*|"
                        r"__float2bfloat16\w*|__h(?:add|mul|fma|sub|div)2?|(?:at|torch|c10)::k(?:Half|BFloat16)|"
                        r"c10::(?:Half|BFloat16)|at::(?:Half|BFloat16)|ScalarType::(?:Half|BFloat16))\b",
                          ("CUBLAS_", "wmma", "input_precision", "half", "Half", "bfloat16", "BFloat16", "__nv_fp8_", "__h"))
_HALF_DTYPES = frozenset({"torch.float16", "torch.half", "torch.bfloat16", "torch.float8_e4m3fn",
                          "torch.float8_e5m2", "torch.float8_e4m3fnuz", "torch.float8_e5m2fnuz"})
_HALF_METHODS = frozenset({"half", "bfloat16"})
_REF_HALF = re.compile(r"(?i)float16|bfloat16|\bhalf\b|\bbf16\b|\bfp16\b|float8|fp8|tf32")


@lru_cache(maxsize=256)
def ref_is_half(text: str) -> bool:
    """Whether a problem's reference (or a precision) is below fp32: asked of the one reference
    once per native source and per check; a case-blind search of the whole reference each time."""
    return _REF_HALF.search(text) is not None
_CPP_DEF = _Screened(r"(?m)^\s*(?:#\s*define\s+(\w+)\s+\(?(\d+)\)?\s*$|(?:static\s+)?(?:constexpr|const)\s+"
                      r"(?:int|int64_t|long|size_t|unsigned|int32_t)\s+(\w+)\s*=\s*(\d+)\s*;)", ("define", "const"))

_GPU_MARKERS = ("load_inline", "cpp_extension.load", "__global__", "<<<", "triton.jit", "@jit",
                "tl.program_id", "cuda.jit", "RawKernel", "RawModule", "cute.", "tilelang", "cuda.core")


