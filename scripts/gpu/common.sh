# Shared set-up of the scripts in scripts/gpu/ (sourced, not run): the repository root as the working
# folder, $OUT made, ktui on PYTHONPATH (with the carried wheels of .whl/ when they are there and not
# yet installed), and the machine written to $OUT/environment.txt.
#
#     . "$(dirname "$0")/common.sh"
#     gpu_setup /tmp/ktui-some-cache      # KTUI_CACHE_DIR unless already set
#     gpu_environment "extra line"...      # $OUT/environment.txt, also printed

gpu_setup() {
    cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
    : "${OUT:?set OUT to the results directory}"
    mkdir -p "$OUT"
    local site=/tmp/ktui-site
    if compgen -G ".whl/*.whl" >/dev/null && ! python3 -c "import textual, orjson" 2>/dev/null; then
        python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
            --target "$site" .whl/*.whl >/dev/null 2>&1 || echo "warning: the wheels of .whl/ did not install" >&2
    fi
    [ -d "$site" ] && PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
    export KTUI_CACHE_DIR="${KTUI_CACHE_DIR:-${1:-$(mktemp -d)/ktui-cache}}"
}

gpu_environment() {
    {
        echo "date: $(date -u +%FT%TZ)  commit: $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
        nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm,clocks.max.sm \
            --format=csv,noheader 2>&1
        echo "cpu cores: $(nproc); memory: $(grep MemAvailable /proc/meminfo)"
        python3 -c "import sys, torch
try:
    import triton; tv = triton.__version__
except Exception as e:
    tv = 'none (%s)' % type(e).__name__
print('python', sys.version.split()[0], '| torch', torch.__version__, '| cuda', torch.version.cuda,
      '| triton', tv, '| cuda available', torch.cuda.is_available())" 2>&1
        local line
        for line in "$@"; do echo "$line"; done
    } > "$OUT/environment.txt"
    cat "$OUT/environment.txt"
}
