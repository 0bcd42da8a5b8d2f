"""Interleaved side-by-side timing: per case, R rounds of (meshccl serial,
scipy, meshccl cpu_threads=0, cc3d), one call each; median and min in ms."""
import sys, time, json, statistics
sys.path.insert(0, 'benchmarks'); sys.path.insert(0, '.')
import numpy as np
import bench, meshccl, cc3d
from scipy import ndimage
R = int(sys.argv[1]) if len(sys.argv) > 1 else 7
out = {}
for case in bench.standard_cases():
    x = np.ascontiguousarray(bench.generate(case, np))
    c = case.connectivity
    tools = {
        'serial': lambda: meshccl.label(x, connectivity=c, return_num=True),
        'threads': lambda: meshccl.label(x, connectivity=c, cpu_threads=0, return_num=True),
        'cc3d': lambda: cc3d.connected_components(x, connectivity={(2,1):4,(2,2):8,(3,1):6,(3,2):18,(3,3):26}[(x.ndim,c)], return_N=True),
    }
    if not case.multi:
        st = ndimage.generate_binary_structure(x.ndim, c)
        tools['scipy'] = lambda: ndimage.label(x, st)
    crop = np.ascontiguousarray(x[(slice(0, 32),) * x.ndim])
    meshccl.label(crop, connectivity=c); meshccl.label(crop, connectivity=c, cpu_threads=0)
    t = {k: [] for k in tools}
    for r in range(R):
        for k, f in tools.items():
            t0 = time.perf_counter(); f(); t[k].append((time.perf_counter() - t0) * 1e3)
    out[case.name] = {k: {'median': statistics.median(v), 'min': min(v), 'all': v} for k, v in t.items()}
    print(case.name, ' '.join(f"{k} med {v['median']:.1f} min {v['min']:.1f}" for k, v in out[case.name].items()), flush=True)
json.dump({'date_utc': time.strftime('%Y-%m-%d %H:%M:%S UTC', time.gmtime()), 'rounds': R, 'cases': out},
          open(sys.argv[2] if len(sys.argv) > 2 else '/tmp/benchruns/interleave.json', 'w'), indent=1)
