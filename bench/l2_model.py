#!/usr/bin/env python3
"""bench: a model of the DRAM reads of the Hopper GEMM's persistent schedule (templates/gemm_sm90.cuh).

Every CTA (or cluster) of a persistent grid takes cluster tiles c, c + clusters, c + 2 clusters, ... in the
order gemm_raster_m / gemm_raster_n give (groups of RASTER tile rows, down the rows first), and all run in
lockstep: at step k of wave w each loads the 64-wide k-block k of its tile's rows of A (128 x 64) and of its
tile's columns of B (BN x 64; one load per cluster, multicast). The L2 is one LRU cache of --l2-mb; a block
not in it is read from DRAM. C and the page/sector details are left out. The grid is the library's
(gemm_sm90_launch_shape): the fewest waves the SMs allow, with as few clusters as those waves need (--grid
even; 128 CTAs for 512 tiles on 132 SMs), or one cluster per SM slot as before the twentieth session (--grid
full). No tail in K slices is modelled.

Calibration: with --l2-mb 25 (the H100's 50 MB L2 is two partitions) it gives 187 MB at bf16 4096^3 for
128 x 256 tiles, one CTA each, raster 8 on 132 SMs (--grid full): ncu measured 187 MB read from DRAM for that kernel
(BENCHMARKS.md, fifteenth session; cuBLAS's 151 MB). It is a guide to which schedules read less, not a
timing model: the raster-16 default it puts at 149 MB ran 0.3-0.5% faster than raster 8 on the H100.

  python3 bench/l2_model.py --shape 4096x4096x4096 --grid full,even --raster 8,16 --cluster 1,2
"""
import argparse
from collections import OrderedDict


def raster_mn(pid, tiles_m, tiles_n, group):
    """gemm_raster_m / gemm_raster_n of templates/gemm_common.cuh."""
    base = pid // (group * tiles_n) * group
    rows = min(group, tiles_m - base)
    r = pid % (group * tiles_n)
    return base + r % rows, r // rows


def dram_mb(m, n, k, sms, raster, cluster, l2_mb, bn=256, bm=128, elem_bytes=2, even=True):
    """(clusters, waves, MB read from DRAM, MB moved L2 -> SMs) for one schedule."""
    tiles_m, tiles_n, kblocks = -(-m // bm), -(-n // bn), -(-k // 64)
    rows_c = -(-tiles_m // cluster)
    tiles = rows_c * tiles_n
    clusters = min(tiles, max(1, sms // cluster))
    waves = -(-tiles // clusters)
    if even:
        clusters = -(-tiles // waves)
    cap, used, dram, moved = l2_mb * 2**20, 0, 0, 0
    lru = OrderedDict()
    for w in range(waves):
        for kb in range(kblocks):
            for c in range(clusters):
                u = c + w * clusters
                if u >= tiles:
                    continue
                mc, tn = raster_mn(u, rows_c, tiles_n, raster)
                for rank in range(cluster):
                    loads = [(("A", mc * cluster + rank, kb), bm * 64 * elem_bytes)]
                    if rank == 0:
                        loads.append((("B", tn, kb), bn * 64 * elem_bytes))
                    for key, size in loads:
                        moved += size
                        if key in lru:
                            lru.move_to_end(key)
                            continue
                        dram += size
                        lru[key] = size
                        used += size
                        while used > cap:
                            used -= lru.popitem(last=False)[1]
    return clusters, waves, dram / 1e6, moved / 1e6


def ints(text):
    return [int(x) for x in text.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shape", default="4096x4096x4096", help="MxNxK[,MxNxK...] (the kernel's frame)")
    ap.add_argument("--sms", type=ints, default=[132], help="the GPU's SMs (comma list)")
    ap.add_argument("--grid", default="full,even",
                    help="full (a cluster per SM slot), even (the library's: the fewest waves, evenly; comma list)")
    ap.add_argument("--raster", type=ints, default=[8, 16], help="tile rows per group (comma list)")
    ap.add_argument("--cluster", type=ints, default=[1, 2], help="CTAs per cluster (comma list)")
    ap.add_argument("--bn", type=int, default=256, help="tile width (128 x BN tiles)")
    ap.add_argument("--l2-mb", type=float, default=25.0, help="the LRU cache's size in MB (25: H100 calibration)")
    args = ap.parse_args()
    grids = args.grid.split(",")
    if any(g not in ("full", "even") for g in grids):
        ap.error(f"--grid {args.grid}: each item is full or even")
    print("shape | cluster | SMs | grid | clusters | raster | waves | DRAM MB | L2->SM MB")
    for text in args.shape.split(","):
        m, n, k = (int(x) for x in text.split("x"))
        for cluster in args.cluster:
            for sms in args.sms:
                for grid in grids:
                    for raster in args.raster:
                        clusters, waves, dram, moved = dram_mb(m, n, k, sms, raster, cluster, args.l2_mb, bn=args.bn,
                                                               even=grid == "even")
                        print(f"{text} | {cluster} | {sms} | {grid} | {clusters} | {raster} | {waves} | {dram:.0f}"
                              f" | {moved:.0f}")


if __name__ == "__main__":
    main()
