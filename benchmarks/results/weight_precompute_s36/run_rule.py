import ast, pickle, sys
sys.path.insert(0,'.')
from ktui.trace.findings.weights import weight_precompute
rows = pickle.load(open('/tmp/hk_corpus.pkl','rb'))
n=0
for src, code, ref in rows:
    try: tree=ast.parse(code)
    except Exception: continue
    r=weight_precompute(tree, ref)
    if r:
        n+=1
        print(f"{src[:95]} | L{getattr(r[0],'lineno',0)} {r[1][:150]}")
print('flagged', n, 'of', len(rows), file=sys.stderr)
