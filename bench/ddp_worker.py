#!/usr/bin/python3
"""PyTorch DistributedDataParallel worker: the reference point of benchmark (b).

Runs the model of a HAP plan with torch.nn.parallel.DistributedDataParallel (Gloo) under the same
torchrun environment contract as hap-worker, so `hap launch --local --worker bench/ddp_worker.py`
starts it with the same CPU shares:

  ddp_worker.py PLAN [--steps N] [--warmup W] [--lr X] [--momentum M] [--seed S] [--metrics F]

The batch pieces come from the plan's input loads (the exact lengths each rank holds): run it with a
DP-EV plan (`hap plan --baseline dp-ev`) for plain DDP with even pieces, with a DP-CP plan for DDP
with pieces proportional to device speed. Every rank's loss is scaled by W * n_r / N (n_r of N rows
on rank r, W ranks) so that DDP's gradient average is the gradient of the global mean loss, as on
one device. Data: seeded synthetic batches of the plan's shapes, integers in the model's ranges
(hap/inputs.json), like hap-worker's `--data synthetic`; drawn before a step's clock starts.

Timing matches hap-worker's: per step from after the batch is drawn to after the global loss is
all-reduced (forward, backward with DDP's overlapped bucketed all-reduce, SGD step). Rank 0
prints a line per step and a summary, and with --metrics writes JSON lines in hap-worker's format.
"""

import argparse
import json
import math
import os
import resource
import sys
import time

import torch
import torch.distributed as dist


def fail(message):
    print(f"ddp_worker: error: {message}", file=sys.stderr, flush=True)
    sys.exit(1)


def input_pieces(plan, world):
    """Per forward argument: (name, dtype, global shape), and the rows of the batch per rank.

    The rows are the lengths of the plan's batch split (its inputs loaded as G(0)); every input's
    dimension 0 is taken to be the batch, as in the zoo, including inputs the plan loads whole and
    slices later."""
    loads = {}
    for step in plan["program"]:
        if step.get("kind") == "convert" and step.get("instruction") in ("load", "load-shard"):
            loads[step["to"]["name"]] = step["to"]
    inputs, splits = [], set()
    for spec in plan["model"]["inputs"]:
        to = loads.get(spec["name"])
        if to is None:
            fail(f"the plan loads no input named {spec['name']}")
        if to["rel"] == "G(0)":
            splits.add(tuple(to["lengths"]))
        elif to["rel"] != "I":
            fail(f"input {spec['name']} is loaded as {to['rel']}; DDP needs a data-parallel plan "
                 "(hap plan --baseline dp-ev|dp-cp)")
        inputs.append((spec["name"], spec["dtype"], spec["shape"]))
    if len(splits) != 1:
        fail("the plan does not split its inputs on the batch dimension with one set of lengths: "
             "DDP needs a data-parallel plan (hap plan --baseline dp-ev|dp-cp)")
    rows = list(splits.pop())
    if len(rows) != world:
        fail(f"the plan has {len(rows)} devices but WORLD_SIZE is {world}")
    return inputs, rows


def load_model(model_path):
    """The TorchScript module, and the valid range (low, high) of each integer input by name from
    the file's hap/inputs.json (empty when it has none)."""
    extra = {"hap/inputs.json": ""}
    model = torch.jit.load(model_path, _extra_files=extra, map_location="cpu")
    spec = json.loads(extra["hap/inputs.json"]) if extra["hap/inputs.json"] else {}
    return model, {e["name"]: (e.get("low"), e.get("high")) for e in spec.get("inputs", [])}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("plan")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--metrics")
    parser.add_argument("--threads", type=int, default=1)
    a = parser.parse_args()

    with open(a.plan) as f:
        plan = json.load(f)
    model_path = plan["model"]["path"]
    if not os.path.isabs(model_path) and not os.path.exists(model_path):
        model_path = os.path.join(os.path.dirname(a.plan), os.path.basename(model_path))
    if not os.path.exists(model_path):
        fail(f"model file {plan['model']['path']} not found")

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(a.threads)
    inputs, lengths = input_pieces(plan, world)  # forward arguments; batch rows per rank
    model, ranges = load_model(model_path)
    if lengths[rank] == 0:
        fail(f"rank {rank} holds no rows of the batch; DDP cannot run an empty piece")
    batch_rows = sum(lengths)
    scale = world * lengths[rank] / batch_rows

    dist.init_process_group("gloo", rank=rank, world_size=world)
    model.train()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=a.lr, momentum=a.momentum)

    def batch(iteration):
        g = torch.Generator().manual_seed(a.seed * 1_000_003 + iteration * 7919 + rank)
        tensors = []
        for name, dtype, shape in inputs:
            shape = [lengths[rank]] + list(shape[1:])
            t = getattr(torch, dtype)
            if t.is_floating_point:
                tensors.append(torch.randn(shape, generator=g, dtype=t))
            else:
                low, high = ranges.get(name, (0, 2))
                tensors.append(torch.randint(low if low is not None else 0, high if high is not None else 2,
                                             shape, generator=g, dtype=t))
        return tensors

    metrics = open(a.metrics, "w") if rank == 0 and a.metrics else None
    times, loss_value = [], math.nan
    dist.barrier()
    usage_start = resource.getrusage(resource.RUSAGE_SELF)
    for k in range(a.warmup + a.steps):
        tensors = batch(k)
        if k == a.warmup:
            usage_start = resource.getrusage(resource.RUSAGE_SELF)
        start = time.perf_counter()
        loss = ddp(*tensors)
        (loss * scale).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        global_loss = loss.detach().double().reshape(1) * (lengths[rank] / batch_rows)
        dist.all_reduce(global_loss)
        seconds = time.perf_counter() - start
        loss_value = global_loss.item()
        warmup = k < a.warmup
        if not warmup:
            times.append(seconds)
        if rank == 0:
            print(f"step {k + 1}/{a.warmup + a.steps}: loss {loss_value:.6f}, {seconds * 1e3:.2f} ms"
                  f"{' (warm-up)' if warmup else ''}", flush=True)
            if metrics:
                metrics.write(json.dumps({"step": k + 1, "loss": loss_value, "seconds": seconds,
                                          "samples_per_second": batch_rows / seconds, "warmup": warmup}) + "\n")
    # Every rank's CPU time and minor page faults per measured step, as hap-worker reports them.
    usage_end = resource.getrusage(resource.RUSAGE_SELF)
    usage = torch.zeros(2, world, dtype=torch.float64)
    if a.steps > 0:
        usage[0, rank] = (usage_end.ru_utime + usage_end.ru_stime - usage_start.ru_utime - usage_start.ru_stime) / a.steps
        usage[1, rank] = (usage_end.ru_minflt - usage_start.ru_minflt) / a.steps
    dist.all_reduce(usage)
    mean = sum(times) / len(times) if times else 0.0
    std = math.sqrt(sum((t - mean) ** 2 for t in times) / (len(times) - 1)) if len(times) > 1 else 0.0
    if rank == 0:
        print(f"{len(times)} steps: {mean * 1e3:.3f} ± {std * 1e3:.3f} ms per iteration, "
              f"{batch_rows / mean if mean else 0:.1f} samples/s, final loss {loss_value:.6f}", flush=True)
        if metrics:
            metrics.write(json.dumps({"summary": True, "steps": len(times), "mean_seconds": mean,
                                      "std_seconds": std, "samples_per_second": batch_rows / mean if mean else 0,
                                      "final_loss": loss_value,
                                      "predicted_seconds": plan["prediction"]["iteration_seconds"],
                                      "rank_cpu_seconds": usage[0].tolist(),
                                      "rank_minor_faults": usage[1].tolist()}) + "\n")
            metrics.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
