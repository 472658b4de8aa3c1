#!/usr/bin/python3
"""Benchmark of issue 30: plans that win when they run, before and after `hap tune`.

For every model, rank mix and emulation of a slow device it measures, on this machine:

  HAP       HAP's default plan (`hap plan`, default figures of the emulated cluster's inventory)
  HAP-tuned the plan `hap tune` returns (its rounds: plan, run, calibrate, re-plan)
  DP-EV     data parallelism, even shares (`hap plan --baseline dp-ev`)
  DP-CP     data parallelism, shares proportional to speed (`--baseline dp-cp`)
  FSDP      fully sharded data parallelism (`--baseline fsdp`)
  Megatron  tensor parallelism (`--baseline megatron`), where the model has attention or an MLP
  DDP-CP    PyTorch DistributedDataParallel on DP-CP's pieces (bench/ddp_worker.py), under the
            CPU-share emulation (it has no --slowdown)

Mixes: "3" is 3 ranks at speeds 1, 0.5, 0.25; "4" is 4 ranks at 0.5, 0.5, 0.25, 0.25.
Emulations: "cpu-share" holds each rank to its speed as a share of one core (`hap launch
--cpu-share`: a slow or busy host, its collectives slowed too); "slowdown" runs each rank's
computation 1/speed times slower while its collectives run at full speed (`hap launch --slowdown`:
a slower accelerator). The planner is given an inventory of the mix (cluster_yaml below): one core's
figures of resources/clusters/local-cpu-hetero-3.yaml scaled by each rank's speed, its per-call
collective cost scaled too under cpu-share and not under slowdown.

Every plan runs --repeats times, interleaved, each run --steps measured steps after --warmup; the
figure is the mean of rank 0's measured step times over all runs, the spread their standard
deviation. Per configuration it prints the runs, then a summary: HAP before and after tuning against
the best measured baseline, whether the targets of issue 30 hold, and the prediction's ranking of
the plans against the measured one. Everything is written to OUT/results.json.

Usage (scripts/bench-tune.sh builds first and passes --build):
  bench_tune.py --build BUILD [--models mlp,bert,...] [--mixes 3,4] [--emulations cpu-share,slowdown]
                [--steps 8] [--warmup 3] [--repeats 2] [--tune-rounds 3] [--no-tune] [--no-ddp] [--out DIR]
"""

import argparse
import itertools
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_hetero_cpu import heap_env, mean_std, measured_steps  # noqa: E402

# The zoo at CPU scale (resources/models/export.py --preset tiny with these settings): a step of
# tens to hundreds of milliseconds on one core.
ZOO = {
    "mlp": ["batch=256", "features=512", "hidden=2048"],
    "bert": ["batch=16", "embed=128", "heads=4", "layers=2", "hidden=512", "seq_len=64", "vocab=2048", "dropout=0"],
    "vit": ["batch=24", "embed=128", "heads=4", "layers=2", "hidden=512", "image_size=32", "dropout=0"],
    "vgg19": ["batch=16", "width=16", "classifier=256", "pool=2"],
    "bert_moe": ["batch=16", "embed=128", "heads=4", "layers=2", "hidden=512", "moe_hidden=256", "seq_len=64",
                 "vocab=2048", "devices=4", "dropout=0"],
}
# Corpus models (resources/corpus/export.py), as exported there: batch 8.
CORPUS = ["resnet50", "mobilenet_v3_small", "efficientnet_b0", "densenet121", "vit", "swin", "convnext",
          "transformer_encoder", "transformer", "lstm"]
MIXES = {"3": [1.0, 0.5, 0.25], "4": [0.5, 0.5, 0.25, 0.25]}
CORE = {"flops": 50e9, "memory_bandwidth": 10e9, "op_overhead": 10e-6, "collective_call": 400e-6}
LINK = "{bandwidth: 1GB/s, latency: 100us}"


def run(cmd, log=None, check=True, **kw):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if log:
        with open(log, "w") as f:
            f.write(p.stdout)
    if check and p.returncode != 0:
        raise RuntimeError(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-3000:]}")
    return p


def cluster_yaml(name, speeds, emulation):
    """One device type and one single-device machine per rank, on loopback."""
    lines = [f"name: {name}", f'description: "{len(speeds)} CPU ranks at speeds '
             f'{",".join(f"{s:g}" for s in speeds)} ({emulation})"', "device_types:"]
    for r, s in enumerate(speeds):
        call = CORE["collective_call"] / (s if emulation == "cpu-share" else 1)
        lines.append(f"  r{r}: {{flops: {{float32: {CORE['flops'] * s / 1e9:.6g}G}}, memory: 8GiB, "
                     f"memory_bandwidth: {CORE['memory_bandwidth'] * s / 1e9:.6g}GB/s, "
                     f"op_overhead: {CORE['op_overhead'] / s * 1e6:.6g}us, collective_call: {call * 1e6:.6g}us}}")
    lines.append("machines:")
    for r in range(len(speeds)):
        lines.append(f"  - {{name: rank{r}, host: 127.0.0.1, device_type: r{r}, count: 1, link: {LINK}}}")
    lines.append(f"network: {LINK}")
    return "\n".join(lines) + "\n"


def emulation_args(speeds, emulation):
    if emulation == "cpu-share":
        return ["--cpu-share", ",".join(f"{s:g}" for s in speeds)]
    top = max(speeds)
    # Under --slowdown every rank has the CPU it wants: the fastest computes at full speed.
    return ["--slowdown", ",".join(f"{top / s:g}" for s in speeds)]


def model_files(a, out):
    """name -> (path, [--input ...])"""
    files = {}
    for name in a.models:
        if name.startswith("corpus:"):
            corpus = os.path.join(out, "corpus")
            base = name.split(":", 1)[1]
            path = os.path.join(corpus, f"{base}.pt")
            if not os.path.exists(path):
                run(["/usr/bin/python3", os.path.join(ROOT, "resources", "corpus", "export.py"), "--out", corpus,
                     "--model", base, "--quiet"])
            with open(os.path.join(corpus, "corpus.json")) as f:
                entry = next(m for m in json.load(f)["models"] if m["name"] == base)
            files[name] = (path, sum((["--input", i] for i in entry["inputs"]), []))
        else:
            path = os.path.join(out, f"{name}-cpu.pt")
            if not os.path.exists(path):
                cmd = ["/usr/bin/python3", os.path.join(ROOT, "resources", "models", "export.py"), "--model", name,
                       "--preset", "tiny", "--output", path, "--quiet"]
                for s in ZOO[name]:
                    cmd += ["--set", s]
                run(cmd)
            files[name] = (path, [])
    return files


def bench_one(a, hap, ddp_env, model, inputs, mix, emulation, out):
    speeds = MIXES[mix]
    tag = f"{os.path.basename(model)[:-3]}-{mix}-{emulation}"
    work = os.path.join(out, tag)
    os.makedirs(work, exist_ok=True)
    cluster = os.path.join(work, "cluster.yaml")
    with open(cluster, "w") as f:
        f.write(cluster_yaml(f"bench-{mix}-{emulation}", speeds, emulation))
    emu = emulation_args(speeds, emulation)
    worker_args = ["--warmup", str(a.warmup), "--lr", "0.01", "--momentum", "0.9", "--optimizer", "sgd"]

    plans = {}
    for name, extra in (("HAP", []), ("DP-EV", ["--baseline", "dp-ev"]), ("DP-CP", ["--baseline", "dp-cp"]),
                        ("FSDP", ["--baseline", "fsdp"]), ("Megatron", ["--baseline", "megatron"])):
        path = os.path.join(work, f"{name.lower()}.json")
        p = run([hap, "plan", model, "-c", cluster, "-q", "--no-profile", "-o", path] + inputs + extra, check=False)
        if p.returncode == 0:
            with open(path) as f:
                plans[name] = (path, json.load(f)["prediction"]["iteration_seconds"])
        else:
            print(f"  {name}: not planned: {p.stdout.strip().splitlines()[-1] if p.stdout.strip() else '?'}")
    tune = None
    if not a.no_tune:
        db = os.path.join(work, "tune.db")
        if os.path.exists(db):
            os.remove(db)
        tuned = os.path.join(work, "hap-tuned.json")
        p = run([hap, "tune", model, "-c", cluster, "--local", "--db", db, "--rounds", str(a.tune_rounds),
                 "--steps", str(a.steps), "--warmup", str(a.warmup), "-o", tuned] + inputs + emu,
                log=os.path.join(work, "tune.log"), check=False)
        if p.returncode == 0:
            with open(tuned) as f:
                plans["HAP-tuned"] = (tuned, json.load(f)["prediction"]["iteration_seconds"])
            tune = p.stdout
            print("  " + "\n  ".join(l for l in p.stdout.splitlines() if l.strip()))
        else:
            print(f"  hap tune failed (see {work}/tune.log)")

    runs = [(n, n, None) for n in ("HAP", "HAP-tuned", "DP-EV", "DP-CP", "FSDP", "Megatron") if n in plans]
    # DDP stretches nothing: it runs under the CPU-share emulation only.
    if not a.no_ddp and "DP-CP" in plans and emulation == "cpu-share":
        runs.append(("DDP-CP", "DP-CP", os.path.join(HERE, "ddp_worker.py")))
    steps = {n: [] for n, _, _ in runs}
    failed = {}
    for k, (name, plan, worker) in itertools.product(range(a.repeats), runs):
        if name in failed:
            continue
        metrics = os.path.join(work, f"{name}-{k + 1}.jsonl")
        if os.path.exists(metrics):
            os.remove(metrics)
        cmd = [hap, "launch", plans[plan][0], "--local", "--steps", str(a.steps), "--timeout", "900"] + emu
        if worker:
            cmd += ["--worker", worker, "--"] + [w for w in worker_args if w not in ("--optimizer", "sgd")]
        else:
            cmd += ["--"] + worker_args
        cmd += ["--metrics", metrics]
        p = run(cmd, log=os.path.join(work, f"{name}-{k + 1}.log"), check=False,
                env=dict(os.environ, **ddp_env) if worker else None)
        if p.returncode != 0:
            failed[name] = p.stdout.strip().splitlines()[-1] if p.stdout.strip() else "?"
            print(f"  {name}: failed: {failed[name]}")
            continue
        xs, _ = measured_steps(metrics)
        steps[name] += xs
    results = {}
    for name, plan, _ in runs:
        if steps[name]:
            m, sd = mean_std(steps[name])
            results[name] = {"measured": m, "spread": sd, "predicted": plans[plan][1]}
    return {"model": os.path.basename(model), "mix": mix, "emulation": emulation, "results": results,
            "failed": failed, "tune": tune}


def summarise(c):
    r = c["results"]
    baselines = {n: v for n, v in r.items() if n not in ("HAP", "HAP-tuned")}
    lines = []
    for n, v in sorted(r.items(), key=lambda kv: kv[1]["measured"]):
        lines.append(f"    {n:<10} {v['measured'] * 1e3:9.1f} ± {v['spread'] * 1e3:6.1f} ms   predicted "
                     f"{v['predicted'] * 1e3:8.1f} ms")
    if not baselines:
        return lines, None
    best_name, best = min(baselines.items(), key=lambda kv: kv[1]["measured"])
    out = {"best_baseline": best_name}
    for n in ("HAP", "HAP-tuned"):
        if n in r:
            ratio = r[n]["measured"] / best["measured"]
            tolerance = (r[n]["spread"] + best["spread"]) / best["measured"]
            out[n] = ratio
            lines.append(f"    {n} / best baseline ({best_name}): {ratio:.3f}  (spread {tolerance:.3f})")
            out[n + "-within-spread"] = ratio <= 1 + tolerance
    # Ranking: every pair whose measured gap exceeds both spreads.
    agree = total = 0
    names = list(r)
    for i, j in itertools.combinations(names, 2):
        a, b = r[i], r[j]
        if abs(a["measured"] - b["measured"]) > a["spread"] + b["spread"]:
            total += 1
            agree += (a["predicted"] < b["predicted"]) == (a["measured"] < b["measured"])
    out["ranking"] = (agree, total)
    lines.append(f"    ranking by prediction matches the measured one on {agree} of {total} separated pairs")
    return lines, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True)
    ap.add_argument("--models", default=",".join(list(ZOO) + [f"corpus:{m}" for m in CORPUS]),
                    help="zoo names (mlp, bert, vit, vgg19, bert_moe) and corpus:NAME, comma-separated")
    ap.add_argument("--mixes", default="3,4")
    ap.add_argument("--emulations", default="cpu-share,slowdown")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--tune-rounds", type=int, default=3)
    ap.add_argument("--no-tune", action="store_true")
    ap.add_argument("--no-ddp", action="store_true")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    a.models = [m for m in a.models.split(",") if m]
    hap = os.path.join(a.build, "app", "cli", "hap")
    out = a.out or os.path.join(a.build, "bench-tune")
    os.makedirs(out, exist_ok=True)
    ddp_env = heap_env(os.path.join(a.build, "app", "worker", "hap-worker"))
    files = model_files(a, out)
    configs = []
    for name in a.models:
        model, inputs = files[name]
        for mix in a.mixes.split(","):
            for emulation in a.emulations.split(","):
                print(f"\n== {name} · {len(MIXES[mix])} ranks at {','.join(f'{s:g}' for s in MIXES[mix])} · "
                      f"{emulation}", flush=True)
                c = bench_one(a, hap, ddp_env, model, inputs, mix, emulation, out)
                lines, s = summarise(c)
                c["summary"] = s
                print("\n".join(lines), flush=True)
                configs.append(c)
                with open(os.path.join(out, "results.json"), "w") as f:
                    json.dump(configs, f, indent=1)

    # Over every configuration.
    def geomean(xs):
        return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")
    summaries = [c["summary"] for c in configs if c["summary"]]
    print("\n== over all configurations")
    for n in ("HAP", "HAP-tuned"):
        ratios = [s[n] for s in summaries if n in s]
        if ratios:
            held = sum(1 for s in summaries if s.get(n + "-within-spread"))
            print(f"  {n}: geometric mean {geomean(ratios):.3f} x the best baseline's step "
                  f"(speedup {1 / geomean(ratios):.3f}); at or below it within the spread on {held} of "
                  f"{len(ratios)}; worst {max(ratios):.3f}")
    agree = sum(s["ranking"][0] for s in summaries)
    total = sum(s["ranking"][1] for s in summaries)
    print(f"  ranking by prediction matches the measured one on {agree} of {total} separated pairs")
    print(f"  results: {os.path.join(out, 'results.json')}")


if __name__ == "__main__":
    main()
