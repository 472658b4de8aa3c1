#!/usr/bin/python3
"""Plans and checks the corpus of real architectures (export.py) as a user would: for each model,
`hap plan` with the model's --input arguments on 3 CPU ranks with uneven shares and on the
4-GPU cluster (a100-p100-4), then `hap launch --local` of 3 training steps with `--check` on 1, 2
and 3 CPU ranks (uneven shares), and prints one table.

Usage:
  run.py --corpus DIR [--hap PATH] [--model NAME ...] [--subset ci] [--steps 3] [--json FILE]

The table has, per model: its parameters and graph nodes; whether every inferred shape agrees with
one real CPU run (`hap inspect --verify-shapes`: "ok (N values)", or how many differ); the ops
planned replicated because no sharding rule exists (and how many nodes) and their share of the
forward FLOPs; HAP's speedup over DP-CP on the 3 CPU ranks and on
the GPU cluster, as the cost model predicts it (no plan is timed: the columns say 'predicted');
and the check's verdict on 1, 2 and 3 ranks with its worst relative errors (loss / gradient /
parameter). A verdict that is not PASS names what failed. Exit status:
0 when every model passes on every rank count, 1 otherwise.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARES = {1: None, 2: "0.6,0.4", 3: "0.5,0.3,0.2"}
GPU_CLUSTER = os.path.join(ROOT, "resources", "clusters", "a100-p100-4.yaml")
CPU_CLUSTER = os.path.join(ROOT, "resources", "clusters", "local-cpu-3.yaml")


def cpu_cluster(folder, ranks):
    """local-cpu-3.yaml with `ranks` devices."""
    path = os.path.join(folder, f"local-cpu-{ranks}.yaml")
    with open(CPU_CLUSTER) as f:
        text = f.read()
    text = text.replace("count: 3", f"count: {ranks}").replace("name: local-cpu-3", f"name: local-cpu-{ranks}")
    with open(path, "w") as f:
        f.write(text)
    return path


def run(cmd, timeout):
    start = time.time()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
        return p.returncode, p.stdout, time.time() - start
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        return 124, out + f"\n(timed out after {timeout} s)", time.time() - start


def plan(hap, model, inputs, cluster, out, shares=None):
    cmd = [hap, "plan", model, "-c", cluster, "-o", out, "-q"]
    for spec in inputs:
        cmd += ["--input", spec]
    if shares:
        cmd += ["--ratios", shares]
    code, text, _ = run(cmd, 600)
    if code != 0:
        return None, text.strip().splitlines()[-1] if text.strip() else f"exit {code}"
    with open(out) as f:
        return json.load(f), None


def speedup(p):
    hap = p["prediction"]["iteration_seconds"]
    dpcp = p["baselines"].get("dp-cp", {}).get("iteration_seconds")
    return dpcp / hap if dpcp and hap > 0 else None


def iteration_times(p):
    """The two predicted iteration times a speedup is the ratio of (the test checks them against it)."""
    return {"hap": p["prediction"]["iteration_seconds"],
            "dp-cp": p["baselines"].get("dp-cp", {}).get("iteration_seconds")}


CHECK = re.compile(r"check rank 0: loss error ([0-9.e+-]+).*?gradient error ([0-9.e+-]+).*?parameter error ([0-9.e+-]+).*?; (PASS|FAIL)")


def check(hap, plan_path, steps):
    code, text, seconds = run([hap, "launch", plan_path, "--local", "--steps", str(steps), "--timeout", "900", "--",
                               "--check", "--warmup", "0", "--lr", "0.01"], 960)
    m = CHECK.search(text)
    if m and m.group(4) == "PASS" and code == 0:
        return {"ok": True, "loss": float(m.group(1)), "gradient": float(m.group(2)),
                "parameter": float(m.group(3)), "seconds": seconds}
    if m:
        line = [l for l in text.splitlines() if "check rank 0" in l][0]
        return {"ok": False, "why": line.split("check rank 0: ", 1)[1], "seconds": seconds}
    errors = [l for l in text.splitlines() if "error" in l.lower() or "failed" in l.lower()]
    return {"ok": False, "why": (errors[-1] if errors else text.strip()[-300:]), "seconds": seconds}


def verify_shapes(hap, model, inputs):
    """`hap inspect --verify-shapes`: the importer's inferred shapes against one real CPU run."""
    cmd = [hap, "inspect", model, "--verify-shapes", "--json"]
    for spec in inputs:
        cmd += ["--input", spec]
    code, text, _ = run(cmd, 600)
    try:
        r = json.loads(text[text.index("{"):])
        return {"ok": code == 0 and not r["mismatches"], "values": r["values"],
                "mismatches": [m["message"] for m in r["mismatches"]]}
    except (ValueError, KeyError):
        return {"ok": False, "values": 0, "mismatches": [text.strip().splitlines()[-1] if text.strip() else f"exit {code}"]}


def check_model(hap, corpus, entry, steps, work):
    model = os.path.join(corpus, entry["file"])
    result = {"name": entry["name"], "parameters": entry["parameters"], "source": entry["source"]}
    result["shapes"] = verify_shapes(hap, model, entry["inputs"])
    p3, error = plan(hap, model, entry["inputs"], cpu_cluster(work, 3), os.path.join(work, "cpu3.json"), SHARES[3])
    if error:
        result["error"] = f"hap plan: {error}"
        return result
    result["nodes"] = p3["model"]["nodes"]
    result["unsharded"] = [u["message"] for u in p3.get("unsharded", [])]
    result["unsharded_flops"] = p3.get("unsharded_flops_share", 0.0)
    result["speedup_cpu3"] = speedup(p3)
    result["seconds_cpu3"] = iteration_times(p3)
    gpu, error = plan(hap, model, entry["inputs"], GPU_CLUSTER, os.path.join(work, "gpu4.json"))
    result["speedup_gpu4"] = speedup(gpu) if gpu else None
    result["seconds_gpu4"] = iteration_times(gpu) if gpu else None
    if error:
        result["gpu_error"] = error
    result["checks"] = {}
    for ranks in (1, 2, 3):
        path = os.path.join(work, f"check{ranks}.json")
        _, error = plan(hap, model, entry["inputs"], cpu_cluster(work, ranks), path, SHARES[ranks])
        result["checks"][ranks] = {"ok": False, "why": f"hap plan: {error}"} if error else check(hap, path, steps)
    return result


def passed(r):
    return "error" not in r and all(c["ok"] for c in r["checks"].values()) and r["shapes"]["ok"]


def cell(c):
    if c["ok"]:
        return f"PASS {max(c['gradient'], c['parameter']):.0e}"
    return "FAIL"


def shapes_cell(r):
    """The shape check's column: every value verified, or how many differ from LibTorch's."""
    s = r["shapes"]
    return f"ok ({s['values']})" if s["ok"] else f"{len(s['mismatches'])} differ"


def table(results):
    # The two speedup columns are the cost model's predictions (hap plan's baselines), not measured runs.
    rows = [["model", "params", "nodes", "shapes", "replicated (no rule)", "FLOPs replicated (no rule)", "predicted vs DP-CP cpu3",
             "predicted vs DP-CP gpu4", "1 rank", "2 ranks", "3 ranks"]]
    for r in results:
        if "error" in r:
            rows.append([r["name"], f"{r['parameters'] / 1e6:.2f}M", "-", shapes_cell(r), r["error"][:60], "-", "-", "-", "-", "-", "-"])
            continue
        ops = ", ".join(re.sub(r"no sharding rule for (\S+) \((\d+) nodes?\).*", r"\1×\2", u) for u in r["unsharded"])
        fmt = lambda s: f"{s:.2f}x" if s else "-"
        rows.append([r["name"], f"{r['parameters'] / 1e6:.2f}M", str(r["nodes"]), shapes_cell(r), ops or "none",
                     f"{100 * r['unsharded_flops']:.1f}%", fmt(r["speedup_cpu3"]),
                     fmt(r["speedup_gpu4"])] + [cell(r["checks"][k]) for k in (1, 2, 3)])
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", required=True, help="folder written by export.py (with corpus.json)")
    parser.add_argument("--hap", default=os.path.join(ROOT, "build", "app", "cli", "hap"))
    parser.add_argument("--model", action="append", default=[])
    parser.add_argument("--subset", choices=["ci"])
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--json", help="also write the results as JSON")
    a = parser.parse_args()
    with open(os.path.join(a.corpus, "corpus.json")) as f:
        corpus = json.load(f)
    entries = [e for e in corpus["models"] if (not a.model or e["name"] in a.model) and (a.subset != "ci" or e["ci"])]
    if a.model and len(entries) != len(a.model):
        missing = set(a.model) - {e["name"] for e in entries}
        raise SystemExit(f"not in {a.corpus}/corpus.json: {', '.join(sorted(missing))} (export them first)")
    results = []
    for e in entries:
        with tempfile.TemporaryDirectory() as work:
            start = time.time()
            r = check_model(a.hap, a.corpus, e, a.steps, work)
            r["seconds"] = time.time() - start
        results.append(r)
        verdict = "PASS" if passed(r) else "FAIL"
        print(f"{e['name']}: {verdict} ({r['seconds']:.0f} s)", file=sys.stderr, flush=True)
        if not passed(r):
            for ranks, c in r.get("checks", {}).items():
                if not c["ok"]:
                    print(f"  {ranks} rank{'s' if ranks > 1 else ''}: {c['why']}", file=sys.stderr)
            if "error" in r:
                print(f"  {r['error']}", file=sys.stderr)
            for m in r["shapes"]["mismatches"]:
                print(f"  shapes: {m}", file=sys.stderr)
    print(table(results))
    good = sum(passed(r) for r in results)
    print(f"\n{good} of {len(results)} models pass the check on 1, 2 and 3 ranks "
          f"({corpus.get('torch', '?')} / torchvision {corpus.get('torchvision', '?')}).")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if good == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
