"""Reads a Perfetto trace with Perfetto's own protobuf classes (the `perfetto` package on
PyPI) and prints what tests/tracing.rs compares with the jlive trace it came from, as JSON:
each thread track's name, its slices by name, and whatever broke Perfetto's rules (an
interned name used before its definition, a packet needing incremental state before it was
cleared, an end with no open slice, a slice never ended, time going back on a track)."""

import json
import sys

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TrackEvent, TracePacket

trace = Trace()
with open(sys.argv[1], "rb") as f:
    trace.ParseFromString(f.read())

names = {}
cleared = False
threads = {}
open_slices = {}
last_ts = {}
slices = {}
instants = []
broken = []
for i, p in enumerate(trace.packet):
    if p.trusted_packet_sequence_id != 1:
        broken.append(f"packet {i}: sequence {p.trusted_packet_sequence_id}")
    if p.sequence_flags & TracePacket.SEQ_INCREMENTAL_STATE_CLEARED:
        cleared = True
    if p.sequence_flags & TracePacket.SEQ_NEEDS_INCREMENTAL_STATE and not cleared:
        broken.append(f"packet {i} needs incremental state before it was cleared")
    for n in p.interned_data.event_names:
        names[n.iid] = n.name
    if p.HasField("track_descriptor"):
        d = p.track_descriptor
        if d.HasField("thread"):
            threads[d.uuid] = d.thread.thread_name
    if not p.HasField("track_event"):
        continue
    e = p.track_event
    track = e.track_uuid
    if p.timestamp < last_ts.get(track, 0):
        broken.append(f"packet {i}: time goes back on track {track}")
    last_ts[track] = p.timestamp
    stack = open_slices.setdefault(track, [])
    if e.type == TrackEvent.TYPE_SLICE_BEGIN:
        if e.name_iid not in names:
            broken.append(f"packet {i}: name {e.name_iid} used before it was interned")
        name = names.get(e.name_iid, "?")
        stack.append(name)
        per = slices.setdefault(threads.get(track, str(track)), {})
        per[name] = per.get(name, 0) + 1
    elif e.type == TrackEvent.TYPE_SLICE_END:
        if not stack:
            broken.append(f"packet {i}: an end with no open slice on track {track}")
        else:
            stack.pop()
    elif e.type == TrackEvent.TYPE_INSTANT:
        instants.append(e.name)
for track, stack in open_slices.items():
    if stack:
        broken.append(f"track {track}: {len(stack)} slices never ended")

json.dump(
    {
        "threads": sorted(threads.values()),
        "slices": slices,
        "instants": instants,
        "broken": broken,
    },
    sys.stdout,
)
