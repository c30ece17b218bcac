"""The text screens of the native-source regexes (:class:`ktui.trace.findings.names._Screened`):
a text with none of a pattern's needles is not searched, so every match must contain one. Each
alternative of each screened pattern has an example here that the bare pattern matches and the
screen lets through (a needle left out of a screen fails here); and on every kernel held, and
on the module sources, the screened and the bare search agree match for match."""

from __future__ import annotations

from pathlib import Path

import pytest

from ktui.trace import load
from ktui.trace.findings import names
from ktui.trace.findings.names import _Screened

ROOT = Path(__file__).resolve().parents[1]

# one example (at least) for every alternative of every screened pattern
EXAMPLES: dict[str, list[str]] = {
    "_STREAM_TEXT": ["s = torch.cuda.Stream()", "cudaStreamCreateWithFlags(&s, 0)", "cudaStreamCreate(&s)",
                     "at::cuda::getStreamFromPool()", "with torch.cuda.stream(torch.cuda.Stream()):",
                     "x = cuda.Stream (  )"],
    "_GRAPH_TEXT": ["cudaStreamBeginCapture(s, m);", "cudaGraphLaunch(g, s);", "cudaGraphInstantiateWithFlags(&e, g, 0);",
                    "cudaGraphInstantiate(&e, g, 0, 0, 0);", "cuGraphLaunch(e, s);"],
    "_LIB_TEXT": ["cublasSgemm(h, a, b)", "cublasGemmEx(h, ...)", "cublasHgemv(h)", "cublasLtMatmul(h, d)",
                  "cublasSdot(h, n)", "cublasDaxpy(h)", "cublasStrsm(h)", "cublasZsyrk(h)", "cublasCscal(h)",
                  "cudnnConvolutionForward(h)", "cudnnActivationForward(h)", "cudnnConvolutionBackwardData(h)",
                  "at::matmul(a, b)", "torch::mm(a, b)", "at::bmm(a, b)", "at::addmm(c, a, b)", "at::baddbmm(c, a, b)",
                  "at::einsum(\"ij\", {a})", "at::conv2d(x, w)", "at::softmax(x, 1)", "at::log_softmax(x, 1)",
                  "torch::linear(x, w)", "at::layer_norm(x, s)", "at::batch_norm(x)", "at::group_norm(x)",
                  "at::scaled_dot_product_attention(q, k, v)", "at::native_layer_norm(x)", "at::_softmax(x)",
                  "at::cudnn_convolution(x)", "at::relu(x)", "at::gelu(x)", "at::sigmoid(x)", "at::tanh(x)",
                  "at::sum(x)", "at::mean(x)", "at::max_pool2d(x)", "at::avg_pool1d(x)", "at::cumsum(x, 0)",
                  "at::norm(x)", "torch::nn::functional::relu(x)", "at::native::add(x)",
                  "cutlass::gemm::device::Gemm<float>"],
    "_CPP_ENV": ["getenv(\"X\")", "std::getenv(\"X\")", "secure_getenv(\"X\")", "char **e = environ;",
                 "_wgetenv(L\"X\")", "GetEnvironmentVariableA(\"X\", b, n)", "strstr(program_invocation_short_name, p)",
                 "program_invocation_name[0]", "extern char* __progname;", "getauxval(AT_EXECFN)", "getppid()"],
    "_CPP_FILE": ["std::ifstream f(\"x\");", "ofstream out{path};", "std::fstream (\"x\")", "fopen(\"x\", \"r\")",
                  "::open(\"/tmp/x\", 0)", "open(\"x\")", "const char* p = \"/proc/self/maps\";",
                  "\"/sys/class/x\"", "readlink(path, b, n)", "opendir(path)", "::open(path.c_str(), O_RDONLY)",
                  "::openat(dfd, p, 0)", "::open64(p, 0)", "openat(AT_FDCWD, p, 0)", "popen(cmd, \"r\")"],
    "_CPP_PTR_MAP": ["static std::unordered_map<void*, int> m;", "static map<const float *, T> m;",
                     "static thread_local std::map<at::Half*, int> m;"],
    "_CPP_INT_MAP": ["static std::unordered_map<uintptr_t, at::Tensor> c;", "static map<intptr_t, int> c;",
                     "static std::map<std::int64_t, int> c;", "static std::map<uint64_t, int> c;",
                     "static std::map<size_t, int> c;", "static std::map<long, int> c;",
                     "static std::map<unsigned long, int> c;", "static std::map<long long, int> c;"],
    "_CPP_STATIC_PTRISH": ["static std::uintptr_t keys[64];", "static std::vector<std::pair<const void*, at::Tensor>> v;",
                           "static intptr_t last = 0;", "static thread_local float* p{};"],
    "_CPP_STATIC_PTR": ["static float* last = nullptr;", "static const void *p;", "static at::Half const * q = 0;"],
    "_CPP_QUERY": ["cudaEventQuery(e)", "cudaStreamQuery(s)", "cuEventQuery(e)", "cuStreamQuery(s)",
                   "hipEventQuery(e)", "hipStreamQuery(s)", "cudaEventElapsedTime(&ms, a, b)", "cuEventElapsedTime(&ms, a, b)",
                   "at::cuda::getCurrentCUDAStream().query()", "stream.query()", "ev.query ( )", "done_event.query()"],
    "_CPP_THREAD": ["std::thread t(f);", "pthread_create(&t, 0, f, 0);", "boost::thread t(f);"],
    "_CPP_JOIN": ["t.join();", "t.join ( )", "pthread_join(t, 0);"],
    "_CPP_DETACH": ["t.detach();", "pthread_detach(t);"],
    "_HALF_TEXT": ["CUBLAS_COMPUTE_32F_FAST_16F", "CUBLAS_COMPUTE_32F_FAST_16BF", "CUBLAS_COMPUTE_32F_FAST_TF32",
                   "CUBLAS_COMPUTE_16F", "CUBLAS_TF32_TENSOR_OP_MATH", "wmma::precision::tf32",
                   "input_precision = 'tf32'", "input_precision=\"tf32\"", "__half x;", "__half2 y;", "half2 z;",
                   "__nv_bfloat16 a;", "__nv_bfloat162 b;", "__nv_fp8_e4m3 c;", "__float2half(x)",
                   "__float2half_rn(x)", "__floats2half2_rn(a, b)", "__float2bfloat16(x)", "__hadd(a, b)",
                   "__hmul2(a, b)", "__hfma(a, b, c)", "__hsub(a, b)", "__hdiv(a, b)", "at::kHalf", "torch::kBFloat16",
                   "c10::kHalf", "c10::Half", "c10::BFloat16", "at::Half", "at::BFloat16", "ScalarType::Half",
                   "ScalarType::BFloat16"],
    "_CPP_DEF": ["#define N 4096", "#  define BLOCK (256)", "constexpr int K = 64;", "static const int M = 8;",
                 "const int64_t D = 3;", "const long L = 2;", "const size_t S = 1;", "constexpr unsigned U = 5;",
                 "const int32_t W = 7;"],
}


def _screened() -> dict[str, _Screened]:
    return {k: v for k, v in vars(names).items() if isinstance(v, _Screened)}


def test_every_screened_pattern_has_examples():
    assert set(_screened()) == set(EXAMPLES)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_every_alternative_passes_its_screen(name):
    sp = _screened()[name]
    for text in EXAMPLES[name]:
        assert sp.pattern.search(text), (name, text)  # the example is one the pattern matches
        assert sp.may(text), (name, text)  # ... and the screen lets it through
        assert sp.search(text).group(0) == sp.pattern.search(text).group(0)


def test_a_text_without_the_needles_is_not_searched():
    sp = names._CPP_THREAD
    assert not sp.may("x = a + b;") and sp.search("x = a + b;") is None and list(sp.finditer("int x;")) == []


def _texts() -> list[str]:
    out = [p.read_text(encoding="utf-8") for p in sorted((ROOT / "ktui").rglob("*.py"))]
    paths = sorted((ROOT / "tests" / "fixtures" / "hacks").glob("*.jsonl"))
    paths += sorted((ROOT.parent / "shared" / "fixtures").rglob("*.jsonl")) + [ROOT / "traces" / "popcorn_l1_p27_grok-4.3.jsonl"]
    for p in paths:
        run = load(p, keep_events=False)
        out += [k.code for k in run.kernels if isinstance(k.code, str)]
        if run.problem.reference_source:
            out.append(run.problem.reference_source)
    return out


def test_screened_and_bare_searches_agree_on_every_text_held():
    texts = _texts()
    assert len(texts) > 300
    hits = 0
    for name, sp in _screened().items():
        for text in texts:
            want = [(m.span(), m.groups()) for m in sp.pattern.finditer(text)]
            assert [(m.span(), m.groups()) for m in sp.finditer(text)] == want, name
            got = sp.search(text)
            assert (got.span() if got else None) == (want[0][0] if want else None), name
            hits += bool(want)
    assert hits > 50  # the texts match often: the agreement covers matches, not only their absence
