#!/usr/bin/python3
"""The cost model's accuracy benchmark (issue 19 item 6): measure, record, calibrate, report held-out.

On this machine it emulates heterogeneous CPU clusters as benchmark (b) does (bench/bench_hetero_cpu.py:
local ranks each held by `hap launch --cpu-share` to a share of one core, one device type per share),
and then:

1. creates a fresh profile store in the output folder and profiles this machine into ONE profile,
   one `hap profile` per share type: the first (type cpu-1) also measures the collectives among 3
   local ranks and stores their fits for both link classes (loopback stands for the links inside and
   between the emulated machines); every other type is measured at its share (`--cpu-share S`) and
   added to the same profile (`--merge`);
2. writes the emulated clusters, each naming that profile (`profile: NAME`):
     mix A: 3 machines of one rank each at shares 1, 0.5, 0.25 (benchmark b's cluster);
     mix B: 2 machines of 2 ranks each, at shares 0.5 and 0.25 (4 ranks, 1.5 cores): intra- and
            inter-machine collectives, and Megatron's tensor parallelism inside a machine;
   device types cpu-<share> (the inventory's roofline figures: one core's 50 GFLOP/s, 10 GB/s and
   10 us per op, scaled by the share; the profile overrides them where it measured), 4 GiB per rank,
   loopback links of resources/clusters/local-cpu-3.yaml (1 GB/s, 100 us);
3. for every model below, plans HAP and every baseline that applies (DP-EV, DP-CP, FSDP, Megatron)
   on each mix with `hap plan --db` (a baseline `hap plan` refuses is skipped and reported; Megatron
   does not apply where every machine holds one device: with nothing to split inside a machine it is
   DP-EV), and runs each plan with `hap launch --local --cpu-share ... --db` (SGD with momentum,
   synthetic data), recorded in the store with the label "MODEL STRATEGY MIX";
4. runs `hap calibrate` holding out a balanced half of the (model, plan) pairs (within every model
   and mix, every second plan by id, the first one held out in every second group, so that HAP and
   each baseline are held out about as often as fitted), prints its output, then a summary of the
   held-out figures against the issue's targets: step-time MAPE <= 10%, peak-memory MAPE <= 5%,
   every pair of competing plans ranked right.

The models are the zoo's (resources/models/zoo.py) at CPU scale: benchmark (b)'s presets for BERT,
ViT and the MLP (a step of 0.1-0.7 s on one core, far above the quota's 20 ms period, ~5M parameters,
no dropout: hap-worker draws full-size dropout masks on every rank, a cost no plan changes), and
likewise sized VGG19 (width 32, 32x32 images, batch 32) and BERT-MoE (2 layers, one of them MoE with
8 experts, batch 16). The paper's
"default" presets would take 10-100 s a step on this 2-core machine; the "tiny" ones (batch 4) run in
a few ms, where the launch floor and the quota's period, not the plan, decide the step. --quick
takes the MLP and VGG19 only, 3 measured steps, and `hap profile --quick`.

Usage (scripts/bench-accuracy.sh builds hap and hap-worker first and passes --build):
  bench_accuracy.py --build BUILD [--quick] [--models mlp,bert,...] [--out DIR] [--steps N]
                    [--warmup W] [--profile quick|full] [--mix-a SPEC] [--mix-b SPEC]
                    [--strategies hap,dp-ev,dp-cp,fsdp,megatron]
A mix SPEC lists machines as SHARE or SHAREx COUNT: "1,0.5,0.25" (3 one-rank machines),
"0.5x2,0.25x2" (2 machines of 2 ranks).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PYTHON = "/usr/bin/python3"

# CPU-scale presets: (zoo preset, overrides). Step on one core at full share, SGD, measured with
# eager PyTorch on the 2-core build machine: MLP ~80 ms, BERT ~600 ms, ViT ~700 ms, VGG19 ~150-300 ms,
# BERT-MoE ~200-300 ms.
MODELS = {
    "mlp": ("tiny", ["batch=256", "features=512", "hidden=2048", "layers=2", "classes=10"]),
    "bert": ("tiny", ["batch=32", "embed=256", "heads=4", "layers=4", "hidden=1024", "seq_len=64", "vocab=4096",
                      "dropout=0"]),
    "vit": ("tiny", ["batch=48", "embed=256", "heads=4", "layers=4", "hidden=1024", "image_size=32", "dropout=0"]),
    "vgg19": ("tiny", ["batch=32", "width=32", "classifier=512", "pool=1", "dropout=0"]),
    "bert_moe": ("tiny", ["batch=16", "embed=256", "heads=4", "layers=2", "hidden=1024", "seq_len=64",
                          "vocab=4096", "moe_hidden=512", "devices=4", "experts_per_device=2", "dropout=0"]),
}
QUICK_MODELS = ["mlp", "vgg19"]
STRATEGIES = ["hap", "dp-ev", "dp-cp", "fsdp", "megatron"]
LABEL = {"hap": "HAP", "dp-ev": "DP-EV", "dp-cp": "DP-CP", "fsdp": "FSDP", "megatron": "Megatron"}

# One core as the inventory states it before any profile (resources/clusters/local-cpu-3.yaml).
CORE = {"flops": 50e9, "memory_bandwidth": 10e9, "op_overhead": 10e-6}
LINK = "{bandwidth: 1GB/s, latency: 100us}"
PROFILE = "emulated-cpu"

TARGETS = {"step_mape": 0.10, "memory_mape": 0.05}


def log(line=""):
    print(line, flush=True)


def run(cmd, logfile=None, check=True, **kw):
    """Runs cmd and returns (returncode, output). With check, a failure prints the output and exits."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if logfile:
        with open(logfile, "w") as f:
            f.write(" ".join(cmd) + "\n\n" + p.stdout)
    if check and p.returncode != 0:
        sys.exit(f"bench_accuracy: failed ({p.returncode}): {' '.join(cmd)}\n{p.stdout[-4000:]}")
    return p.returncode, p.stdout


def last_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[-1].strip() if lines else "(no output)"


def parse_mix(spec, what):
    """'0.5x2,0.25x2' -> [(0.5, 2), (0.25, 2)]: machines as (share, ranks)."""
    machines = []
    for part in spec.split(","):
        m = re.fullmatch(r"\s*([0-9.]+)\s*(?:x\s*([0-9]+))?\s*", part)
        if not m:
            sys.exit(f"{what}: '{part}' is not SHARE or SHARExCOUNT (e.g. 1,0.5,0.25 or 0.5x2,0.25x2)")
        share, count = float(m.group(1)), int(m.group(2) or 1)
        if not 0 < share <= 1 or count < 1:
            sys.exit(f"{what}: '{part}': the share must be in (0, 1] and the count at least 1")
        machines.append((share, count))
    if sum(c for _, c in machines) < 2:
        sys.exit(f"{what}: give at least 2 ranks")
    return machines


def type_name(share):
    return f"cpu-{share:g}"


def rank_shares(machines):
    return [s for s, c in machines for _ in range(c)]


def cluster_yaml(name, machines):
    """One device type per share, one machine per (share, count) entry, all on loopback."""
    shares = rank_shares(machines)
    lines = [f"name: {name}",
             f'description: "{len(shares)} CPU ranks on {len(machines)} emulated machines, held to shares '
             f'{",".join(f"{s:g}" for s in shares)} of one core"',
             f"profile: {PROFILE}",
             "device_types:"]
    for s in sorted({s for s, _ in machines}, reverse=True):
        lines.append(f"  {type_name(s)}: {{flops: {{float32: {CORE['flops'] * s / 1e9:.6g}G}}, memory: 4GiB, "
                     f"memory_bandwidth: {CORE['memory_bandwidth'] * s / 1e9:.6g}GB/s, "
                     f"op_overhead: {CORE['op_overhead'] / s * 1e6:.6g}us}}")
    lines.append("machines:")
    for i, (s, c) in enumerate(machines):
        lines.append(f"  - {{name: m{i}-{type_name(s)}, host: 127.0.0.1, device_type: {type_name(s)}, count: {c}, "
                     f"link: {LINK}}}")
    lines.append(f"network: {LINK}")
    return "\n".join(lines) + "\n"


def parse_calibrate(text):
    """The 'Fit runs' and 'Held-out runs' blocks of `hap calibrate`'s output as dicts."""
    out = {}
    blocks = re.split(r"^(Fit runs|Held-out runs)", text, flags=re.M)
    for i in range(1, len(blocks) - 1, 2):
        name, body = blocks[i], blocks[i + 1]
        d = {}
        m = re.search(r"\((\d+) runs\)", body)
        d["runs"] = int(m.group(1)) if m else 0
        m = re.search(r"step time\s+MAPE\s+(\S+)%\s+->\s+(\S+)%\s+Pearson\s+(\S+)\s+->\s+(\S+)", body)
        if m:
            d["step_mape"] = (float(m.group(1)) / 100, float(m.group(2)) / 100)
            d["step_pearson"] = (float(m.group(3)), float(m.group(4)))
        m = re.search(r"peak memory\s+MAPE\s+(\S+)%\s+->\s+(\S+)%\s+Pearson\s+(\S+)\s+->\s+(\S+)", body)
        if m:
            d["memory_mape"] = (float(m.group(1)) / 100, float(m.group(2)) / 100)
            d["memory_pearson"] = (float(m.group(3)), float(m.group(4)))
        m = re.search(r"plan ranking\s+(\d+)/(\d+) pairs right\s+->\s+(\d+)/(\d+)", body)
        if m:
            d["ranking"] = ((int(m.group(1)), int(m.group(2))), (int(m.group(3)), int(m.group(4))))
        out["fit" if name == "Fit runs" else "held_out"] = d
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", required=True, help="build directory (app/cli/hap, app/worker/hap-worker)")
    ap.add_argument("--quick", action="store_true",
                    help=f"smoke run: models {','.join(QUICK_MODELS)}, 3 measured steps, hap profile --quick")
    ap.add_argument("--models", default=None, help=f"comma-separated, of {','.join(MODELS)} (default: all)")
    ap.add_argument("--strategies", default=",".join(STRATEGIES), help="comma-separated, of " + ",".join(STRATEGIES))
    ap.add_argument("--out", default=None, help="work directory, emptied first (default BUILD/bench-accuracy)")
    ap.add_argument("--steps", type=int, default=None, help="measured steps per run (default 5; --quick 3)")
    ap.add_argument("--warmup", type=int, default=None, help="warm-up steps per run, not measured (default 2; --quick 1)")
    ap.add_argument("--profile", choices=["quick", "full"], default=None,
                    help="hap profile --quick or the full profile (default full; --quick: quick)")
    ap.add_argument("--mix-a", default="1,0.5,0.25", help="mix A's machines (default %(default)s)")
    ap.add_argument("--mix-b", default="0.5x2,0.25x2", help="mix B's machines (default %(default)s)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per launch before it is stopped")
    a = ap.parse_args()

    models = (a.models.split(",") if a.models else QUICK_MODELS if a.quick else list(MODELS))
    for m in models:
        if m not in MODELS:
            sys.exit(f"--models: unknown model '{m}' (known: {', '.join(MODELS)})")
    strategies = a.strategies.split(",")
    for s in strategies:
        if s not in STRATEGIES:
            sys.exit(f"--strategies: unknown strategy '{s}' (known: {', '.join(STRATEGIES)})")
    steps = a.steps if a.steps is not None else 3 if a.quick else 5
    warmup = a.warmup if a.warmup is not None else 1 if a.quick else 2
    profile_quick = (a.profile or ("quick" if a.quick else "full")) == "quick"
    mixes = {"A": parse_mix(a.mix_a, "--mix-a"), "B": parse_mix(a.mix_b, "--mix-b")}
    for name, machines in mixes.items():
        total = sum(rank_shares(machines))
        if total > (os.cpu_count() or 1):
            log(f"warning: mix {name}'s shares sum to {total:g} cores but this machine has {os.cpu_count()}")

    built = [os.path.join(a.build, "app", "cli", "hap"), os.path.join(a.build, "app", "worker", "hap-worker")]
    for exe in built:
        if not os.access(exe, os.X_OK):
            sys.exit(f"bench_accuracy: {exe} is not built (scripts/bench-accuracy.sh builds it)")
    out = os.path.abspath(a.out or os.path.join(a.build, "bench-accuracy"))
    if os.path.isdir(out):
        shutil.rmtree(out)
    for sub in ("bin", "models", "plans", "logs"):
        os.makedirs(os.path.join(out, sub))
    # Run copies: a rebuild during the benchmark must not change (or remove) the programs it runs.
    # hap finds hap-worker beside itself, and hap profile starts its own copy for its children.
    for exe in built:
        shutil.copy2(exe, os.path.join(out, "bin"))
    hap = os.path.join(out, "bin", "hap")
    db = os.path.join(out, "profiles.db")
    started = time.monotonic()
    phase_seconds = {}
    log(f"bench_accuracy: store {db}; models {','.join(models)}; strategies {','.join(strategies)}; "
        f"{warmup} warm-up + {steps} measured steps per run; hap profile{' --quick' if profile_quick else ''}")

    # 1. One profile with a measured entry per share type.
    t0 = time.monotonic()
    shares = sorted({s for machines in mixes.values() for s, _ in machines}, reverse=True)
    for i, s in enumerate(shares):
        cmd = [hap, "profile", "--name", PROFILE, "--device-type", type_name(s), "--cpu-share", f"{s:g}", "--db", db]
        if profile_quick:
            cmd.append("--quick")
        if i == 0:  # the collectives once, among 3 unthrottled ranks, for both link classes
            cmd += ["--ranks", "3", "--link-class", "intra,inter"]
        else:
            cmd += ["--ranks", "1", "--merge"]
        t = time.monotonic()
        _, text = run(cmd, logfile=os.path.join(out, "logs", f"profile-{type_name(s)}.log"))
        log(f"profile {type_name(s)}: {time.monotonic() - t:.0f} s: {last_line(text.split('hap profile: done')[0])}")
    phase_seconds["profile"] = time.monotonic() - t0

    # 2. The clusters.
    clusters = {}
    for name, machines in mixes.items():
        path = os.path.join(out, f"mix-{name}.yaml")
        with open(path, "w") as f:
            f.write(cluster_yaml(f"emulated-{name}", machines))
        clusters[name] = path
        log(f"mix {name}: {len(rank_shares(machines))} ranks at shares "
            f"{','.join(f'{s:g}' for s in rank_shares(machines))} on {len(machines)} machines ({path})")

    # 3. Models, plans, runs.
    t0 = time.monotonic()
    skipped, failed, runs = [], [], []
    for model in models:
        preset, overrides = MODELS[model]
        path = os.path.join(out, "models", f"{model}-cpu.pt")
        cmd = [PYTHON, os.path.join(ROOT, "resources", "models", "export.py"), "--model", model, "--preset", preset,
               "--output", path, "--quiet"]
        for o in overrides:
            cmd += ["--set", o]
        run(cmd)
        for mix, machines in mixes.items():
            cpu_share = ",".join(f"{s:g}" for s in rank_shares(machines))
            for strategy in strategies:
                what = f"{model} {LABEL[strategy]} {mix}"
                if strategy == "megatron" and all(c == 1 for _, c in machines):
                    skipped.append((what, "every machine holds one device: no tensor parallelism inside a "
                                          "machine, Megatron is DP-EV there"))
                    continue
                plan = os.path.join(out, "plans", f"{model}-{strategy}-{mix}.json")
                cmd = [hap, "plan", path, "-c", clusters[mix], "--db", db, "-q", "--no-baselines", "-o", plan]
                if strategy != "hap":
                    cmd += ["--baseline", strategy]
                t = time.monotonic()
                rc, text = run(cmd, logfile=os.path.join(out, "logs", f"plan-{model}-{strategy}-{mix}.log"),
                               check=False)
                plan_seconds = time.monotonic() - t
                if rc != 0:
                    skipped.append((what, f"hap plan refused: {last_line(text)}"))
                    log(f"{what:<22} plan refused ({plan_seconds:.1f} s): {last_line(text)}")
                    continue
                with open(plan) as f:
                    predicted = json.load(f)["prediction"]["iteration_seconds"]
                cmd = [hap, "launch", plan, "--local", "--steps", str(steps), "--timeout", str(a.timeout),
                       "--cpu-share", cpu_share, "--db", db, "--label", what,
                       "--", "--optimizer", "sgd", "--lr", "0.01", "--momentum", "0.9", "--warmup", str(warmup)]
                t = time.monotonic()
                rc, text = run(cmd, logfile=os.path.join(out, "logs", f"launch-{model}-{strategy}-{mix}.log"),
                               check=False)
                if rc != 0:
                    failed.append((what, last_line(text)))
                    log(f"{what:<22} launch FAILED ({time.monotonic() - t:.0f} s): {last_line(text)}")
                    continue
                runs.append(what)
                log(f"{what:<22} planned in {plan_seconds:5.1f} s, predicted {predicted * 1e3:8.1f} ms, "
                    f"run in {time.monotonic() - t:5.1f} s")
    phase_seconds["plan and run"] = time.monotonic() - t0

    # 4. Calibrate on half, report the other half.
    _, text = run([hap, "runs", "--db", db, "--json"])
    recorded = json.loads(text)
    groups = {}  # (model, mix) -> plan ids
    for r in recorded:
        if r["status"] != "succeeded" or r["plan_id"] is None:
            continue
        model, _, mix = r["label"].split(" ")
        groups.setdefault((models.index(model), mix), set()).add(r["plan_id"])
    held_out = []
    for g, key in enumerate(sorted(groups)):
        ids = sorted(groups[key])
        held_out += ids[g % 2::2]
    if not recorded or len(held_out) == 0:
        sys.exit("bench_accuracy: too few succeeded runs to hold any out")
    strategy_of = {r["plan_id"]: r["label"] for r in recorded}
    log(f"\nheld out (plan ids): {','.join(map(str, sorted(held_out)))}: "
        f"{'; '.join(strategy_of[p] for p in sorted(held_out))}")
    t0 = time.monotonic()
    cmd = [hap, "calibrate", "--db", db, "--name", PROFILE + "-calibrated", "--hold-out",
           ",".join(map(str, sorted(held_out)))]
    _, text = run(cmd, logfile=os.path.join(out, "logs", "calibrate.log"))
    phase_seconds["calibrate"] = time.monotonic() - t0
    log(f"\n$ hap calibrate --db {db} --name {PROFILE}-calibrated --hold-out ...\n{text.rstrip()}")

    # 5. Summary.
    figures = parse_calibrate(text)
    h = figures.get("held_out", {})
    total = time.monotonic() - started
    log("\nSummary (held-out runs: plans not used in the fit)")
    log(f"  models {','.join(models)}; mixes A = {a.mix_a}, B = {a.mix_b}; {len(runs)} runs recorded, "
        f"{len(held_out)} plans held out")

    def verdict(ok):
        return "meets" if ok else "MISSES"

    if "step_mape" in h:
        b, f = h["step_mape"]
        pb, pf = h["step_pearson"]
        log(f"  step time    MAPE {b:7.1%} -> {f:7.1%}  (target <= {TARGETS['step_mape']:.0%}: "
            f"{verdict(f <= TARGETS['step_mape'])}); Pearson {pb:.3f} -> {pf:.3f}")
    if "memory_mape" in h:
        b, f = h["memory_mape"]
        log(f"  peak memory  MAPE {b:7.1%} -> {f:7.1%}  (target <= {TARGETS['memory_mape']:.0%}: "
            f"{verdict(f <= TARGETS['memory_mape'])})")
    if "ranking" in h:
        (rb, nb), (rf, nf) = h["ranking"]
        log(f"  plan ranking {rb}/{nb} -> {rf}/{nf} pairs right  (target: every pair: {verdict(rf == nf)})")
    else:
        log("  plan ranking: no pair of competing held-out plans")
    if not h:
        log("  (hap calibrate printed no held-out block)")
    for what, why in skipped:
        log(f"  skipped {what}: {why}")
    for what, why in failed:
        log(f"  FAILED  {what}: {why}")
    log(f"  wall time {total / 60:.1f} min ("
        + ", ".join(f"{k} {v / 60:.1f} min" for k, v in phase_seconds.items()) + ")")
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"models": models, "strategies": strategies, "mixes": {"A": a.mix_a, "B": a.mix_b},
                   "steps": steps, "warmup": warmup, "profile_quick": profile_quick, "runs": runs,
                   "held_out_plans": sorted(held_out), "skipped": skipped, "failed": failed,
                   "calibrate": figures, "wall_seconds": total, "phase_seconds": phase_seconds}, f, indent=1)
    log(f"  store, plans, logs and results.json in {out}")


if __name__ == "__main__":
    main()
