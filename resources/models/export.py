#!/usr/bin/python3
"""Exports zoo models as traced TorchScript files for HAP Studio.

Usage:
  export.py --model NAME | --all  --preset tiny|default  --out DIR
            [--set key=value ...] [--trace-batch 2] [--quiet]
  export.py --list

Each model is built with torch.manual_seed(0), put in training mode (dropout
active) and traced at ``--trace-batch`` with ``check_trace=False``. The trace
is batch-size agnostic, so it is valid at the declared batch of the preset.
The result is written to ``DIR/<name>-<preset>.pt`` with the input spec
stored inside the archive as the extra file ``hap/inputs.json``:

  {"format": "hap-inputs", "version": 1,
   "inputs": [{"name": ..., "shape": [...], "dtype": ..., "low": .., "high": ..}],
   "model": {"name": ..., "preset": ..., "config": {...constructor args...},
             "parameters": N, "trace_batch": 2}}

``inputs`` lists forward's arguments in order at the declared batch; ``low``
and ``high`` (the half-open range of valid values) appear for integer inputs
only. ``parameters`` is the model's parameter element count. ``--set``
overrides a constructor argument (or ``batch``); values parse as int, then
float, then true/false, else stay strings. Every run re-exports (write to a
temporary file, then rename, so an interrupted run leaves no partial file).
"""

import argparse
import contextlib
import json
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402

SPEC_FILE = "hap/inputs.json"


def parse_value(text):
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    lowered = text.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    return text


def parse_overrides(items):
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--set expects key=value, got {item!r}")
        overrides[key] = parse_value(value)
    return overrides


def example_inputs(spec):
    """Random tensors matching an input spec (integers within [low, high))."""
    tensors = []
    for entry in spec:
        dtype = getattr(torch, entry["dtype"])
        if "low" in entry:
            tensors.append(torch.randint(entry["low"], entry["high"],
                                         entry["shape"], dtype=dtype))
        else:
            tensors.append(torch.randn(entry["shape"], dtype=dtype))
    return tensors


def forward_argument_names(traced):
    """Names of the traced forward's arguments, without ``self``."""
    return [arg.name for arg in traced.forward.schema.arguments[1:]]


@contextlib.contextmanager
def parameters_on_meta():
    """While active, every new ``nn.Parameter`` holds a meta tensor.

    The tensor a module passes in is dropped at once (large weights come from
    ``torch.empty``, whose pages are never touched), and the initialisers that
    follow (``nn.init.*``) run on the meta tensor, so no weight is ever
    materialised. Buffers are untouched: they stay real tensors with their
    values.
    """
    original = nn.Parameter.__new__

    def meta_parameter(cls, data=None, requires_grad=True):
        if data is not None:
            data = torch.empty(data.shape, dtype=data.dtype, device="meta")
        return original(cls, data, requires_grad)

    nn.Parameter.__new__ = meta_parameter
    try:
        yield
    finally:
        nn.Parameter.__new__ = original


def replace_parameters_by_zero_views(model):
    """Gives every parameter a zero-stride CPU view of one zero of its shape.

    Shared parameters stay shared (one replacement per original).
    """
    replaced = {}
    for module in model.modules():
        for key, p in list(module._parameters.items()):
            if p is None:
                continue
            if id(p) not in replaced:
                view = torch.zeros((), dtype=p.dtype).expand(p.shape)
                replaced[id(p)] = nn.Parameter(view, p.requires_grad)
            module._parameters[key] = replaced[id(p)]


def export(name, preset, overrides, trace_batch, out_dir, shape_only=False,
           output=None):
    """Traces one model and writes it; returns (path, parameters).

    With ``shape_only`` the model is built with its parameters on the meta
    device (no weight is allocated, whatever the model's size) and every
    parameter is then saved as a zero-stride view of one zero, so memory and
    file stay small: enough to plan it (shapes and dtypes are exact), not to
    train it (the runtime refuses such a file; the spec records
    ``"weights": "shape-only"``). Buffers keep their real values.
    """
    torch.manual_seed(0)
    if shape_only:
        with parameters_on_meta():
            model, config, batch = zoo.build(name, preset, overrides)
        replace_parameters_by_zero_views(model)
    else:
        model, config, batch = zoo.build(name, preset, overrides)
    model.train()
    parameters = sum(p.numel() for p in model.parameters())
    # A shape-only trace keeps no autograd history: the recorded graph is the
    # same, and memory no longer grows with the activations of every layer.
    with torch.no_grad() if shape_only else contextlib.nullcontext():
        traced = torch.jit.trace(
            model, tuple(example_inputs(model.input_spec(trace_batch))),
            check_trace=False)

    spec = model.input_spec(batch)
    names = forward_argument_names(traced)
    if names != [entry["name"] for entry in spec]:
        raise RuntimeError(f"{name}: input spec names {spec} do not match "
                           f"forward arguments {names}")
    document = {
        "format": "hap-inputs",
        "version": 1,
        "inputs": spec,
        "model": {"name": name, "preset": preset, "config": config,
                  "parameters": parameters, "trace_batch": trace_batch,
                  "weights": "shape-only" if shape_only else "initialised"},
    }
    path = output or os.path.join(out_dir, f"{name}-{preset}.pt")
    partial = path + ".partial"
    torch.jit.save(traced, partial,
                   _extra_files={SPEC_FILE: json.dumps(document)})
    os.replace(partial, path)
    return path, parameters


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--model", choices=sorted(zoo.MODELS))
    which.add_argument("--all", action="store_true")
    which.add_argument("--list", action="store_true",
                       help="print the models and their presets")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--set", action="append", default=[],
                        metavar="KEY=VALUE",
                        help="override a constructor argument or the batch")
    parser.add_argument("--trace-batch", type=int, default=2)
    parser.add_argument("--out", help="output directory")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--shape-only", action="store_true",
                        help="save parameters as zero-stride views: a small "
                             "file for planning only, not for training")
    parser.add_argument("--output", metavar="FILE",
                        help="file name for a single --model (default "
                             "OUT/NAME-PRESET.pt)")
    args = parser.parse_args()

    if args.list:
        for name in zoo.MODELS:
            presets = ", ".join(
                f"{p} (batch {e['batch']})" for p, e in zoo.PRESETS[name].items())
            print(f"{name}: {presets}")
        return
    if args.output and not args.out:
        args.out = os.path.dirname(args.output) or "."
    if not args.out:
        parser.error("--out is required")
    if args.output and args.all:
        parser.error("--output names one file: use it with --model")
    names = list(zoo.MODELS) if args.all else [args.model]
    for name in names:
        if args.preset not in zoo.PRESETS[name]:
            parser.error(f"model {name!r} has no preset {args.preset!r} "
                         f"(known: {', '.join(zoo.PRESETS[name])})")
    overrides = parse_overrides(args.set)
    os.makedirs(args.out, exist_ok=True)
    for name in names:
        start = time.perf_counter()
        try:
            path, parameters = export(name, args.preset, overrides,
                                      args.trace_batch, args.out,
                                      args.shape_only, args.output)
        except zoo.ConfigError as error:
            raise SystemExit(f"export.py: {name}: {error}")
        if not args.quiet:
            print(f"{path}  {parameters} parameters  "
                  f"{time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
