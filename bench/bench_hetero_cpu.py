#!/usr/bin/python3
"""Benchmark (b) of the runtime: a heterogeneous CPU cluster emulated on this machine.

N local workers, each held to a share of one CPU by `hap launch --cpu-share` (a CPU-time quota), train
the same model on the same kind of data (seeded synthetic batches of the same shapes) five ways:

  HAP     HAP's plan (search + LP ratios) run by hap-worker
  DP-EV   data parallelism, even batch shares (hap plan --baseline dp-ev) run by hap-worker
  DP-CP   data parallelism, shares proportional to speed (--baseline dp-cp) run by hap-worker
  DDP-EV  PyTorch DistributedDataParallel (Gloo), even shares (bench/ddp_worker.py, DP-EV's pieces)
  DDP-CP  the same with DP-CP's pieces

The DDP workers run with hap-worker's heap (heap_env below).

Every configuration runs --rounds times, interleaved with the others so that drift of the machine
hits all alike. It prints per-iteration time (mean ± std over the measured steps of all rounds,
rank 0's clock), each run's time
relative to HAP's, and the planner's prediction for each plan (DDP runs are predicted by the plan
whose pieces they use).

The planner sees the emulated cluster as one device type per share: the speed of one core scaled
by the share. The speed of one core is calibrated first: a 1-rank run at full share is measured
and the per-core FLOP/s, memory bandwidth and per-op overhead are scaled by one factor so that
the 1-device plan's prediction equals that measurement. The links are the loopback figures of
resources/clusters/local-cpu-3.yaml (1 GB/s, 100 us). Nothing else is fitted.

Usage (scripts/bench-hetero.sh builds first and passes --build):
  bench_hetero_cpu.py --build BUILD [--model bert|mlp|vit] [--shares 1,0.5,0.25] [--steps 10]
                      [--rounds 2] [--warmup 5] [--out DIR] [--only HAP,DP-CP,...]
"""

import argparse
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# CPU-sized presets: a step takes about a second on one core, far above the 20 ms quota period.
# Without dropout: hap-worker draws its dropout masks with its own counter-based generator (each
# rank only its piece, runtime/core/counter_rng.h), DDP with PyTorch's; that is not what this
# compares.
MODELS = {
    "bert": ["batch=32", "embed=256", "heads=4", "layers=4", "hidden=1024", "seq_len=64", "vocab=4096", "dropout=0"],
    "mlp": ["batch=256", "features=512", "hidden=2048"],
    "vit": ["batch=48", "embed=256", "heads=4", "layers=4", "hidden=1024", "image_size=32", "dropout=0"],
}

# One core as the planner first assumes it (resources/clusters/local-cpu-3.yaml), before scaling.
CORE = {"flops": 50e9, "memory_bandwidth": 10e9, "op_overhead": 10e-6}
LINK = "{bandwidth: 1GB/s, latency: 100us}"


def heap_env(worker_binary):
    """The environment that gives a DDP worker hap-worker's heap (runtime/core/heap_policy.h), so that the
    comparison is of the runtimes, not of malloc settings: jemalloc preloaded with the same
    configuration when hap-worker is linked with it, else glibc's thresholds as tunables."""
    libs = subprocess.run(["ldd", worker_binary], stdout=subprocess.PIPE, text=True).stdout
    for line in libs.splitlines():
        if "libjemalloc" in line and "=>" in line:
            return {"LD_PRELOAD": line.split("=>")[1].split()[0], "MALLOC_CONF": "dirty_decay_ms:-1,muzzy_decay_ms:-1"}
    return {"GLIBC_TUNABLES": "glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824"}


def run(cmd, log=None, **kw):
    """Runs cmd; on failure prints its output and exits."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if log:
        with open(log, "w") as f:
            f.write(p.stdout)
    if p.returncode != 0:
        sys.exit(f"bench_hetero_cpu: failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-4000:]}")
    return p.stdout


def cluster_yaml(name, shares, scale):
    """One device type and one single-device machine per rank, on loopback."""
    lines = [f"name: {name}",
             f'description: "{len(shares)} CPU ranks held to shares {",".join(f"{s:g}" for s in shares)} of one core"',
             "device_types:"]
    for r, s in enumerate(shares):
        lines.append(f"  cpu-{r}-share-{s:g}: {{flops: {{float32: {CORE['flops'] * scale * s / 1e9:.6g}G}}, memory: 8GiB, "
                     f"memory_bandwidth: {CORE['memory_bandwidth'] * scale * s / 1e9:.6g}GB/s, "
                     f"op_overhead: {CORE['op_overhead'] / (scale * s) * 1e6:.6g}us}}")
    lines.append("machines:")
    for r, s in enumerate(shares):
        lines.append(f"  - {{name: rank{r}, host: 127.0.0.1, device_type: cpu-{r}-share-{s:g}, count: 1, link: {LINK}}}")
    lines.append(f"network: {LINK}")
    return "\n".join(lines) + "\n"


def measured_steps(metrics_path):
    """The per-step seconds after the warm-up, and the summary line, of a metrics file."""
    steps, summary = [], None
    with open(metrics_path) as f:
        for line in f:
            j = json.loads(line)
            if j.get("summary"):
                summary = j
            elif not j["warmup"]:
                steps.append(j["seconds"])
    if summary is None:
        sys.exit(f"bench_hetero_cpu: no summary in {metrics_path}")
    return steps, summary


def mean_std(xs):
    m = sum(xs) / len(xs)
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory (app/cli/hap, app/worker/hap-worker)")
    ap.add_argument("--model", choices=sorted(MODELS), default="bert")
    ap.add_argument("--shares", default="1,0.5,0.25", help="CPU share of each rank, 2 to 4 values in (0, 1]")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=2, help="runs of every configuration, interleaved; steps pooled")
    ap.add_argument("--warmup", type=int, default=5,
                    help="steps left out of the timing; DDP reaches its steady state (buckets rebuilt, the "
                    "profiling executor done) after about 4")
    ap.add_argument("--out", default=None, help="work directory (default BUILD/bench-hetero)")
    ap.add_argument("--only", default="HAP,DP-EV,DP-CP,DDP-EV,DDP-CP", help="runs to make, comma-separated")
    a = ap.parse_args()

    shares = [float(s) for s in a.shares.split(",")]
    if not 2 <= len(shares) <= 4 or not all(0 < s <= 1 for s in shares):
        sys.exit("--shares: give 2 to 4 values in (0, 1], e.g. 1,0.5,0.25")
    if sum(shares) > os.cpu_count():
        print(f"warning: the shares sum to {sum(shares):g} cores but this machine has {os.cpu_count()}",
              file=sys.stderr)
    hap = os.path.join(a.build, "app", "cli", "hap")
    ddp_env = heap_env(os.path.join(a.build, "app", "worker", "hap-worker"))
    out = a.out or os.path.join(a.build, "bench-hetero")
    os.makedirs(out, exist_ok=True)
    model = os.path.join(out, f"{a.model}-cpu.pt")
    if not os.path.exists(model):
        cmd = ["/usr/bin/python3", os.path.join(ROOT, "resources", "models", "export.py"), "--model", a.model,
               "--preset", "tiny", "--output", model, "--quiet"]
        for s in MODELS[a.model]:
            cmd += ["--set", s]
        run(cmd)
    # Both workers: SGD with momentum (ddp_worker.py has no other optimizer).
    worker_args = ["--warmup", str(a.warmup), "--lr", "0.01", "--momentum", "0.9"]

    def launch(plan, name, cpu_share, worker=None):
        metrics = os.path.join(out, f"{name}.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        cmd = [hap, "launch", plan, "--local", "--steps", str(a.steps), "--timeout", "900",
               "--cpu-share", ",".join(f"{s:g}" for s in cpu_share)]
        if worker:
            cmd += ["--worker", worker, "--"] + worker_args
        else:
            cmd += ["--", "--optimizer", "sgd"] + worker_args
        cmd += ["--metrics", metrics]
        run(cmd, log=os.path.join(out, f"{name}.log"), env=dict(os.environ, **ddp_env) if worker else None)
        return measured_steps(metrics)

    # 1. Calibrate one core: the 1-device plan's prediction against a 1-rank run at full share.
    with open(os.path.join(out, "one-core.yaml"), "w") as f:
        f.write(cluster_yaml("one-core", [1.0], 1.0))
    one = os.path.join(out, "one-core.json")
    run([hap, "plan", model, "-c", os.path.join(out, "one-core.yaml"), "-q", "--no-baselines", "-o", one])
    _, s1 = launch(one, "one-core", [1.0])
    scale = s1["predicted_seconds"] / s1["mean_seconds"]
    print(f"calibration: 1 rank at full share {s1['mean_seconds'] * 1e3:.1f} ms, predicted "
          f"{s1['predicted_seconds'] * 1e3:.1f} ms at {CORE['flops'] / 1e9:g} GFLOP/s -> one core = "
          f"{CORE['flops'] * scale / 1e9:.1f} GFLOP/s, {CORE['memory_bandwidth'] * scale / 1e9:.2f} GB/s",
          flush=True)

    # 2. The emulated cluster and the three plans.
    cluster = os.path.join(out, "cluster.yaml")
    with open(cluster, "w") as f:
        f.write(cluster_yaml(f"cpu-shares-{len(shares)}", shares, scale))
    plans = {}
    for name, extra in (("HAP", []), ("DP-EV", ["--baseline", "dp-ev"]), ("DP-CP", ["--baseline", "dp-cp"])):
        path = os.path.join(out, f"{name.lower()}.json")
        text = run([hap, "plan", model, "-c", cluster, "-q", "-o", path] + extra)
        if name == "HAP":
            print(text.split("\n\n")[1].rstrip() + "\n", flush=True)
        with open(path) as f:
            plans[name] = (path, json.load(f))

    # 3. The runs.
    runs = [("HAP", "HAP", None), ("DP-EV", "DP-EV", None), ("DP-CP", "DP-CP", None),
            ("DDP-EV", "DP-EV", os.path.join(ROOT, "bench", "ddp_worker.py")),
            ("DDP-CP", "DP-CP", os.path.join(ROOT, "bench", "ddp_worker.py"))]
    wanted = set(a.only.split(","))
    steps = {name: [] for name, _, _ in runs if name in wanted}
    cpu = {name: [] for name in steps}  # per round: every rank's CPU seconds per measured step
    for k in range(a.rounds):
        for name, plan_name, worker in runs:
            if name not in wanted:
                continue
            xs, summary = launch(plans[plan_name][0], f"{name}-{k + 1}", shares, worker)
            steps[name] += xs
            cpu[name].append(summary["rank_cpu_seconds"])
            m, sd = mean_std(xs)
            print(f"round {k + 1} {name:<7} {m * 1e3:9.1f} ± {sd * 1e3:6.1f} ms", flush=True)
    results = []
    for name, plan_name, _ in runs:
        if name in wanted:
            plan = plans[plan_name][1]
            m, sd = mean_std(steps[name])
            results.append((name, m, sd, plan["prediction"]["iteration_seconds"], plan["ratios"]["segments"][0]["ratios"],
                            cpu[name]))

    # 4. The table.
    base = next((r[1] for r in results if r[0] == "HAP"), None)
    print(f"\n{a.model} ({plans['HAP'][1]['model']['parameters'] / 1e6:.2f}M parameters, batch "
          f"{plans['HAP'][1]['model']['inputs'][0]['shape'][0]}), {len(shares)} ranks at CPU shares "
          f"{','.join(f'{s:g}' for s in shares)}, {a.rounds} x {a.steps} steps after {a.warmup} warm-up each")
    print(f"{'run':<7} {'measured':>20} {'vs HAP':>7} {'predicted':>11} {'pred/meas':>9}  {'shares (segment 0)':<20} "
          "CPU ms per step by rank (share of its CPU budget used)")
    for name, mean, std, predicted, ratios, rounds in results:
        rel = f"{mean / base:.2f}x" if base else ""
        per_rank = [sum(r[j] for r in rounds) / len(rounds) for j in range(len(shares))]
        busy = ", ".join(f"{c * 1e3:.0f} ({c / s / mean:.0%})" for c, s in zip(per_rank, shares))
        print(f"{name:<7} {mean * 1e3:10.1f} ± {std * 1e3:5.1f} ms {rel:>7} {predicted * 1e3:8.1f} ms "
              f"{predicted / mean:9.2f}  {','.join(f'{r:.3f}' for r in ratios):<20} {busy}")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"model": a.model, "shares": shares, "steps": a.steps, "rounds": a.rounds, "calibration_scale": scale,
                   "runs": [{"name": n, "mean_seconds": m, "std_seconds": sd, "predicted_seconds": p, "ratios": r,
                             "rank_cpu_seconds_per_round": c}
                            for n, m, sd, p, r, c in results]}, f, indent=1)


if __name__ == "__main__":
    main()
