import sys, time; sys.path.insert(0,'benchmarks'); sys.path.insert(0,'.')
import numpy as np, bench, meshccl, cc3d
from scipy import ndimage
case = [c for c in bench.standard_cases() if c.name == sys.argv[1]][0]
x = np.ascontiguousarray(bench.generate(case, np)); c = case.connectivity
st = ndimage.generate_binary_structure(x.ndim, c)
crop = np.ascontiguousarray(x[(slice(0,32),)*x.ndim]); meshccl.label(crop, connectivity=c); meshccl.label(crop, connectivity=c, cpu_threads=0)
def t(f):
    t0=time.perf_counter(); f(); return (time.perf_counter()-t0)*1e3
S = lambda: meshccl.label(x, connectivity=c, return_num=True)
others = {'none': None, 'scipy': lambda: ndimage.label(x, st), 'threads': lambda: meshccl.label(x, connectivity=c, cpu_threads=0, return_num=True),
          'cc3d': lambda: cc3d.connected_components(x, connectivity=4 if (x.ndim,c)==(2,1) else 8, return_N=True), 'none2': None}
for k, o in others.items():
    v = []
    for i in range(3):
        if o: o()
        v.append(t(S))
    print(case.name, 'serial after', k, ' '.join(f'{a:.0f}' for a in v), flush=True)
