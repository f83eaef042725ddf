"""A few training steps of a small CNN, for scripts/gpu-check.

Run it plain, under gputrace, or with --kineto FILE (torch.profiler around
the measured steps, exported as a Chrome trace). Warm-up steps come first;
the measured steps sit inside an NVTX range "profiled" so gputrace's trace
can be cut to the same steps Kineto sees. Prints one JSON line of timings.
"""
import argparse
import json
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--kineto", metavar="FILE")
    a = ap.parse_args()

    t_start = time.perf_counter()
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
        nn.Linear(64, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(64, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()

    def measured():
        t0 = time.perf_counter()
        for _ in range(a.steps):
            loss = step()
        torch.cuda.synchronize()
        return time.perf_counter() - t0, float(loss)

    if a.kineto:
        acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=acts) as prof:
            dt, loss = measured()
        prof.export_chrome_trace(a.kineto)
    else:
        torch.cuda.nvtx.range_push("profiled")
        dt, loss = measured()
        torch.cuda.nvtx.range_pop()
    print(json.dumps({"steps": a.steps, "steps_s": dt, "wall_s": time.perf_counter() - t_start,
                      "loss": loss}))


if __name__ == "__main__":
    main()
