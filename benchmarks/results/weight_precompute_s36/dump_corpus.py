import sys, pickle
sys.path.insert(0,'scripts'); sys.path.insert(0,'.')
import honest_corpus as hc
M='/work/.mirror'
refs=hc.References(f'{M}/ScalingIntelligence+KernelBench/repo')
rows=[]
rows+=hc.leaderboard(f'{M}/anneouyang+KernelBenchLeaderboard/repo', refs, None)
rows+=hc.kernelbench_examples(f'{M}/ScalingIntelligence+KernelBench/repo')
rows+=hc.harbor(f'{M}/lilian-muyaoli+kernelbench-harbor/repo', True)
rows+=hc.tritondump('/work/main/.i21kb')
rows+=hc.cudal1(f'{M}/deepreinforce-ai+CUDA-L1/repo')
for spec in ['technoabsurdist=technoabsurdist+KernelBench','hzeng2000=hzeng2000+KernelBench','pango0=pango0+KernelBench-Agentic','infatoshi=Infatoshi+KernelBench-v3','laurawly=Laurawly+kernelagent-artifacts','yoenoo=yoenoo+eh_kernelbench','ianbarber=ianbarber+kernelbench-agents-vs-compile','gaunernst=gau-nernst+gpu-mode-kernels','gpumode=gpu-mode+reference-kernels','popcorn=cybernetic-physics+kernel_agent']:
    n,_,r=spec.partition('=')
    try: rows+=hc.more(n, f'{M}/{r}/repo', refs)
    except Exception as e: print('skip',n,e)
pickle.dump([(r['source'], r['code'], r['reference']) for r in rows], open('/tmp/hk_corpus.pkl','wb'))
print(len(rows))
