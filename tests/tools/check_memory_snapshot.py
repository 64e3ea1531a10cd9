#!/usr/bin/env python3
"""Checks a memory snapshot as PyTorch's memory viewer (torch/utils/viz/MemoryViz.js) reads it.

  check_memory_snapshot.py FILE.pickle EXPECTED_PEAK [--below FRACTION] [--no-stage-frames]

Loads FILE with plain `pickle` (run it with `python3 -S`: no site-packages, so no torch), checks
the keys the viewer reads on the snapshot, its segments and blocks and every trace event, replays
alloc / free_completed and compares the highest live bytes with EXPECTED_PEAK (exactly; with
--below F: within [EXPECTED_PEAK * (1 - F), EXPECTED_PEAK], for CUDA, whose events carry requested
sizes while its peak counts rounded blocks). Unless --no-stage-frames, alloc events must carry
frames naming memsweep's stages. Exits 1 naming the first problem; prints a summary line.
"""
import pickle
import sys

ACTIONS = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "snapshot", "oom"}
SEGMENT_KEYS = ["device", "address", "total_size", "allocated_size", "active_size",
                "requested_size", "stream", "segment_type", "blocks"]
BLOCK_KEYS = ["size", "requested_size", "state", "frames"]
STAGES = ("forward (step ", "backward (step ", "optimizer_step (step ")


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check_frames(frames, where):
    if not isinstance(frames, list):
        fail(f"{where}: frames is {type(frames).__name__}, not a list")
    for frame in frames:
        for key, kind in (("filename", str), ("line", int), ("name", str)):
            if not isinstance(frame.get(key), kind):
                fail(f"{where}: frame {frame!r} lacks {key} ({kind.__name__})")


def main(argv):
    args = [a for a in argv[1:] if not a.startswith("--")]
    below = None
    if "--below" in argv:
        below = float(argv[argv.index("--below") + 1])
        args.remove(argv[argv.index("--below") + 1])
    path, expected = args[0], int(args[1])
    with open(path, "rb") as f:
        snapshot = pickle.load(f)
    if "torch" in sys.modules:
        fail("loading the snapshot imported torch")
    if not isinstance(snapshot, dict):
        fail(f"the snapshot is a {type(snapshot).__name__}, not a dict")
    for key in ("segments", "device_traces"):
        if key not in snapshot:
            fail(f"no '{key}' key (keys: {sorted(snapshot)})")
    for i, segment in enumerate(snapshot["segments"]):
        for key in SEGMENT_KEYS:
            if key not in segment:
                fail(f"segment {i} lacks '{key}'")
        covered = 0
        for j, block in enumerate(segment["blocks"]):
            for key in BLOCK_KEYS:
                if key not in block:
                    fail(f"segment {i} block {j} lacks '{key}'")
            check_frames(block["frames"], f"segment {i} block {j}")
            covered += block["size"]
        if covered != segment["total_size"]:
            fail(f"segment {i}: blocks cover {covered} of {segment['total_size']} bytes")
    traces = snapshot["device_traces"]
    if not isinstance(traces, list) or not traces or not isinstance(traces[0], list):
        fail("device_traces is not a list of per-device lists")
    events = [e for trace in traces for e in trace]
    if not events:
        fail("no events")
    live, current, peak, allocs, stage_frames = {}, 0, 0, 0, 0
    for n, event in enumerate(events):
        action = event.get("action")
        if action not in ACTIONS:
            fail(f"event {n}: action {action!r}")
        address_key = "device_free" if action == "oom" else "addr"
        for key, kind in ((address_key, int), ("size", int), ("stream", int), ("time_us", int)):
            if not isinstance(event.get(key), kind):
                fail(f"event {n} ({action}): {key} is {event.get(key)!r}")
        check_frames(event.get("frames", []), f"event {n} ({action})")
        if action == "alloc":
            allocs += 1
            live[event["addr"]] = event["size"]
            current += event["size"]
            peak = max(peak, current)
            if any(f["name"].startswith(STAGES) for f in event.get("frames", [])):
                stage_frames += 1
        elif action == "free_completed":
            # A block allocated before recording started leaves live bytes the replay never saw.
            current -= live.pop(event["addr"], event["size"])
    print(f"events {len(events)}, allocs {allocs}, allocs with stage frames {stage_frames}, "
          f"segments {len(snapshot['segments'])}, replay peak {peak}, expected {expected}")
    if "--no-stage-frames" not in argv and stage_frames == 0:
        fail("no alloc event has a frame naming a stage (forward/backward/optimizer_step)")
    if below is None and peak != expected:
        fail(f"replayed peak {peak} != expected {expected}")
    if below is not None and not expected * (1 - below) <= peak <= expected:
        fail(f"replayed peak {peak} not within [{expected * (1 - below)}, {expected}]")
    print("OK")


if __name__ == "__main__":
    main(sys.argv)
