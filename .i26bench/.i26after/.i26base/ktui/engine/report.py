# ---- ktui repro harness: a plain-text summary of a result (used by exported scripts) ------
# Stdlib only. MIT license, part of ktui.


def format_result(result, recorded=None):
    """A plain-text summary of a result dict (and, optionally, what the trace recorded)."""
    lines = []
    env = result.get("environment") or {}
    where = env.get("gpu") or env.get("cpu") or env.get("device") or "?"
    lines.append(f"environment: {where} · {env.get('device', '?')} · torch {env.get('torch', '?')} · "
                 f"CUDA {env.get('cuda') or '-'} · driver {env.get('driver') or '-'}")
    f = result.get("failure")
    if f:
        at = f" trial {f['trial']}" if f.get("trial") else ""
        lines.append(f"FAILED during {f['stage']}{at}: {f['kind']}: {f['message']}")
    c = result.get("correctness")
    if c:
        lines.append(f"correctness: {'PASS' if c['passed'] else 'FAIL'} ({c['trials_passed']}/{c['trials']} trials"
                     + (f", held-out {'pass' if c['held_out']['passed'] else 'FAIL'}" if c.get("held_out") else "")
                     + f"), max abs err {c['max_abs_error']:.3g}, max rel err {c['max_rel_error']:.3g}"
                     + (f" — {c['mismatch']}" if c.get("mismatch") else ""))
    t = result.get("timing")
    if t and t.get("kernel"):
        k, r = t["kernel"], t["reference"]
        lines.append(f"timing ({t['method_used']}, {t['trials']} trials): kernel mean {k['mean_us']:.2f} us "
                     f"(median {k['median_us']:.2f}, IQR {k.get('iqr_us', 0):.2f}, std {k['std_us']:.2f}, min {k['min_us']:.2f}, "
                     f"max {k['max_us']:.2f}); reference mean {r['mean_us']:.2f} us; speedup {t['speedup']:.3f}x")
        if t.get("floor"):
            lines.append(f"timer floor: {t['floor']['busy_queue_us']:.2f} us (naive {t['floor']['naive_us']:.2f} us)")
    elif t and t.get("error"):
        lines.append(f"timing: {t['error']}")
    if t and t.get("host_bound"):
        lines.append(t["host_bound"]["reason"])
    sb = result.get("sandbox") or {}
    if sb.get("candidate"):
        lines.append("sandbox (candidate): " + ", ".join(sb["candidate"]))
    for fnd in result.get("findings") or []:
        lines.append(f"finding {fnd.get('class')}: {fnd.get('reason')}")
    m = result.get("memory")
    if m:
        lines.append(f"memory peak: kernel {m['kernel_peak_mb']:.2f} MiB, reference {m['ref_peak_mb']:.2f} MiB")
    la = result.get("launches")
    if la:
        lines.append(f"launches per forward: kernel {la['num_kernels']}, reference {la['ref_num_kernels']}")
    for ch in result.get("checks") or []:
        mark = {True: "ok", False: "FLAG", None: "n/a"}[ch["ok"]]
        lines.append(f"check {ch['name']}: {mark} — {ch['detail']}")
    if recorded:
        lines.append("recorded in the trace:")
        for k, v in recorded.items():
            lines.append(f"  {k}: {v}")
    return "\n".join(lines)
