"""benchmarks/real_sweeps_count.py ROOT harbor|kernelbench (issue 21).

Per set: runs read, outcomes that match the set's own result files (read here independently of
ktui), final kernels recovered, references found. Results: benchmarks/results/real_sweeps.md.
"""
import collections
import json
import os
import re
import sys

from ktui.trace.index import scan
from ktui.trace.reader import load

root, kind = sys.argv[1], sys.argv[2]
runs, issues = scan(root, use_cache=False, jobs=0)
match = total_truth = kern = refs = named = 0
by_model = collections.defaultdict(lambda: [0, 0, 0])  # ktui passed, truth passed, runs
origins = collections.Counter()
for s in runs:
    p = os.path.join(root, s.path)
    run = load(p)
    kern += run.final_kernel is not None and bool(run.final_kernel.code)
    refs += bool(run.problem.reference_source)
    named += bool(s.problem)
    if run.problem.reference_origin:
        origins[run.problem.reference_origin.split(":")[0]] += 1
    truth = None
    d = os.path.dirname(p)
    if kind == "harbor":
        truth = "passed" if json.load(open(os.path.join(d, "reward.json")))["reward"] > 0 else "failed"
    elif kind == "kernelbench":
        m = re.match(r"(?:level_\d+_)?problem_(\d+)(?:_sample_(\d+))?_kernel\.py", os.path.basename(p))
        pid = m.group(1)
        er = os.path.join(d, "eval_results.json")
        dr = os.path.join(d, "detailed_results.json")
        if os.path.exists(er):
            e = json.load(open(er)).get(pid)
            e = e[0] if isinstance(e, list) else e
            truth = "incomplete" if e is None else ("passed" if e.get("correctness") else "failed")
        elif os.path.exists(dr):
            e = next((x for x in json.load(open(dr))["results"] if str(x["problem_id"]) == pid), None)
            truth = "incomplete" if e is None else ("passed" if (e.get("eval_result") or {}).get("correctness") else "failed")
        else:
            truth = "incomplete"
    total_truth += 1
    match += s.outcome == truth
    b = by_model[s.model]
    b[0] += s.outcome == "passed"
    b[1] += truth == "passed"
    b[2] += 1
print(f"runs read {len(runs)}; problem named {named}; outcomes matching the set's own files {match}/{total_truth}; "
      f"final kernels recovered {kern}; references found {refs} {dict(origins)}")
for m, (a, t, n) in sorted(by_model.items()):
    print(f"  {m}: ktui {a}/{n} passed, the set's files {t}/{n}")
print("issues:", [str(i) for i in issues if i.severity != "info"][:5])
