"""The rules real consumers of Chrome Trace files apply, written out so the
tests can apply them to gputrace's output (none of these tools is a test
dependency: see README "What the trace shows" for the versions checked).

- legacy_slice_at(): the legacy catapult trace viewer (chrome://tracing),
  tracing/model/slice_group.html findSliceAtTs over the sub-slice tree built
  by createSubSlicesImpl_ (bounds rounded to the display unit, ns here),
  with tracing/base/math/sorted_array_utils.html
  findIndexInSortedClosedIntervals: times in ms (ts / 1000), closed
  intervals, the earlier of two touching slices first.
- check_nesting(): every row's slices nest, exactly and in that tree.
- holding(): the issue's stricter reading of the same: every slice whose
  [ts, ts + dur] holds the time, as a reader adds floats (us or ms).
- perfetto_flow_ends(): Perfetto's JSON importer (trace_processor, read at
  google/perfetto ec5d16b, 2026-08): a track's events sorted by ts, then
  (TraceSorter SlowOperatorLess, on once a trace has an "X") an "X" before
  a shorter one (key INT64_MAX - dur; an instant's and a flow's INT64_MAX),
  then file order; "X" and thread instants pushed on the track's stack after
  MaybeCloseStack (a slice popped when it ends before the new one, or at it
  unless both have no length); "s", and "f" with "bp":"e", bound to the stack's
  top (GetTopmostSliceOnTrack), which nothing closes first.
- HTA (Holistic Trace Analysis 0.6, hta/common/trace_file.py and
  trace_filter.py): a trace's rank is the first match of "rank":\\s+(\\d+)
  on a line; events with an integer args.stream >= 0 are GPU work.
- legacy_process_order(): the legacy viewer's order of processes
  (tracing/model/process.html Process.compare, process_base.html): sortIndex
  (process_sort_index, 0 without one), then name, then labels, then pid."""
import bisect
import collections
import decimal
import gzip
import json
import math
import re

SLICE_PHASES = ("X", "i", "I")


def load_exact(path):
    """The trace with ts/dur as Decimal (the exact digits written)."""
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw, parse_float=decimal.Decimal)


def ns(d):
    return int(decimal.Decimal(d) * 1000)


class Slice:
    def __init__(self, ev, order):
        self.ev = ev
        self.order = order
        self.ts = decimal.Decimal(ev["ts"])
        self.dur = decimal.Decimal(ev.get("dur", 0)) if ev["ph"] == "X" else decimal.Decimal(0)
        self.start_ns, self.end_ns = ns(self.ts), ns(self.ts + self.dur)
        # as a reader computes them
        self.f_start, self.f_end = float(self.ts), float(self.ts) + float(self.dur)
        self.m_start = float(self.ts) / 1000
        self.m_end = self.m_start + float(self.dur) / 1000
        self.sub = []

    def holds(self, t):
        tf = float(t)
        return (self.f_start <= tf <= self.f_end) or \
            (self.m_start <= tf / 1000 <= self.m_end)

    def args(self):
        return self.ev.get("args") or {}

    def correlations(self):
        a = self.args()
        return {a.get("correlation"), a.get("correlation2")} - {None}


def rows(trace):
    """(pid, tid) -> slices in file order."""
    out = collections.defaultdict(list)
    for n, ev in enumerate(trace["traceEvents"]):
        if ev.get("ph") in SLICE_PHASES and ev.get("s", "t") == "t" and "ts" in ev:
            out[(ev["pid"], ev["tid"])].append(Slice(ev, n))
    return out


# ---- the legacy catapult viewer ----

def _rounded_less(a, b):
    """TimeDisplayModes.ns.roundedLess: ms rounded to whole ns."""
    return math.floor(a * 1e6 + 0.5) < math.floor(b * 1e6 + 0.5)


def _bounds(outer, inner):
    return not _rounded_less(inner.m_start, outer.m_start) and \
        not _rounded_less(outer.m_end, inner.m_end)


def legacy_tree(slices):
    """createSubSlicesImpl_: top-level slices, each with .sub."""
    order = sorted(slices, key=lambda s: (s.m_start, s.order))
    for s in order:
        s.sub = []
    top = []

    def add(root, child):
        if _bounds(root, child):
            if root.sub and add(root.sub[-1], child):
                return True
            root.sub.append(child)
            return True
        return False

    root = None
    for s in order:
        if root is None or not add(root, s):
            root = s
            top.append(s)
    return top


def _closed_index(ary, val):
    """findIndexInSortedClosedIntervals over slices, in ms."""
    if not ary:
        return 0  # ary.length: nothing
    lo, hi, hit = 0, len(ary) - 1, -1
    while lo <= hi:  # findLowIndexInSortedArray
        i = (lo + hi) // 2
        c = ary[i].m_start - val
        if c < 0:
            lo = i + 1
        elif c > 0:
            hi = i - 1
        else:
            hit, hi = i, i - 1
    i = hit if hit != -1 else lo
    inside = lambda s: s.m_start <= val <= s.m_end
    if i == 0:
        return 0 if inside(ary[0]) else -1
    if i < len(ary):
        if inside(ary[i - 1]):
            return i - 1
        if inside(ary[i]):
            return i
        return len(ary)
    return i - 1 if inside(ary[i - 1]) else len(ary)


def legacy_slice_at(top, ts_us):
    """findSliceAtTs: the slice a flow end at ts_us binds to, or None."""
    val = float(ts_us) / 1000
    i = _closed_index(top, val)
    if i == -1 or i == len(top):
        return None
    cur = top[i]
    while True:
        i = _closed_index(cur.sub, val)
        if i == -1 or i == len(cur.sub):
            return cur
        cur = cur.sub[i]


# ---- the rule ----

def holding(slices, t):
    """The slices holding t, outermost first; raises when they are not
    strictly nested (siblings that touch, or two the same)."""
    held = [s for s in slices if s.holds(t)]
    held.sort(key=lambda s: (s.start_ns - s.end_ns, s.start_ns))
    for outer, inner in zip(held, held[1:]):
        nested = outer.start_ns <= inner.start_ns and inner.end_ns <= outer.end_ns
        same = (outer.start_ns, outer.end_ns) == (inner.start_ns, inner.end_ns)
        assert nested and not same, (
            f"at {t}: {outer.ev['name']} [{outer.ts}, +{outer.dur}] and "
            f"{inner.ev['name']} [{inner.ts}, +{inner.dur}] both hold it, not nested")
    return held


def check_short_targets(starts, target):
    """README: a slice shorter than 3 ns holds its arrow end at its start, and
    the next slice of its row starts 1 ns after it at the earliest: no other
    slice starts on that end, nor inside the slice (a kernel of the same tick
    after a run of zero-length ones started on the last of them, and both
    rules read the pair as nested, so neither saw it). starts: the row's
    slices' starts in ns, sorted."""
    if target.end_ns - target.start_ns >= 3:
        return
    free_until = max(target.start_ns + 1, target.end_ns)
    there = bisect.bisect_left(starts, free_until) - bisect.bisect_left(starts, target.start_ns)
    assert there == 1, (
        f"{there - 1} other slice(s) start on the arrow end of {target.ev['name']} "
        f"[{target.ts}, +{target.dur}] (shorter than 3 ns) or inside it")


def check_flows(trace):
    """Every ac2g arrow binds, under both rules, to a device slice carrying
    the correlation of the innermost host slice holding its start, and each
    end's slice shorter than 3 ns has no slice starting on it
    (check_short_targets). Returns the number of arrows checked."""
    by_row = rows(trace)
    trees = {k: legacy_tree(v) for k, v in by_row.items()}
    starts = {k: sorted(s.start_ns for s in v) for k, v in by_row.items()}
    ends = collections.defaultdict(dict)
    for ev in trace["traceEvents"]:
        if ev.get("cat") == "ac2g" and ev.get("ph") in ("s", "f"):
            ends[ev["id"]][ev["ph"]] = ev
    n = 0
    for fid, e in ends.items():
        s, f = e["s"], e["f"]
        assert f.get("bp") == "e", f
        srow, frow = (s["pid"], s["tid"]), (f["pid"], f["tid"])
        src = holding(by_row[srow], s["ts"])
        dst = holding(by_row[frow], f["ts"])
        assert src and dst, (fid, s, f)
        host, dev = src[-1], dst[-1]
        corr = host.args().get("correlation")
        assert corr is not None and corr in dev.correlations(), (
            f"arrow {fid}: from {host.ev['name']} (correlation {corr}) lands on "
            f"{dev.ev['name']} {dev.args()}")
        check_short_targets(starts[srow], host)
        check_short_targets(starts[frow], dev)
        assert legacy_slice_at(trees[srow], s["ts"]) is host, (fid, "legacy s")
        assert legacy_slice_at(trees[frow], f["ts"]) is dev, (
            f"arrow {fid}: the legacy viewer binds it to "
            f"{legacy_slice_at(trees[frow], f['ts']).ev['name']}, not {dev.ev['name']}")
        n += 1
    return n


def check_nesting(trace):
    """Every row's slices nest (two are apart, or one holds the other), in exact
    ns and as the legacy viewer reads them (legacy_tree: none of a row's
    top-level slices overlaps the next, so none is drawn over another); Perfetto
    nests a track's slices alike. Returns the number of rows checked."""
    n = 0
    for row, slices in rows(trace).items():
        spans = [s for s in slices if s.ev["ph"] == "X"]
        order = sorted(spans, key=lambda s: (s.start_ns, -s.end_ns, s.order))
        open_ = []
        for s in order:
            while open_ and open_[-1].end_ns <= s.start_ns:
                open_.pop()
            assert not open_ or s.end_ns <= open_[-1].end_ns, (
                f"row {row}: {s.ev['name']} [{s.ts}, +{s.dur}] crosses "
                f"{open_[-1].ev['name']} [{open_[-1].ts}, +{open_[-1].dur}]")
            open_.append(s)
        top = legacy_tree(spans)
        for a, b in zip(top, top[1:]):
            assert not _rounded_less(b.m_start, a.m_end), (
                f"row {row}: the legacy viewer draws {b.ev['name']} [{b.ts}, +{b.dur}] over "
                f"{a.ev['name']} [{a.ts}, +{a.dur}]")
        n += 1
    return n


def check_rounding(trace):
    """On every row, a slice that ends (exactly) at or before another begins
    also ends there as readers add it up, in us and in ms. Returns the
    number of touching pairs seen."""
    touching = 0
    for row, slices in rows(trace).items():
        order = sorted(slices, key=lambda s: (s.start_ns, s.order))
        ended = []  # heap of (end_ns, f_end, m_end) not yet closed
        import heapq
        closed_f = closed_m = -math.inf
        for s in order:
            while ended and ended[0][0] <= s.start_ns:
                end_ns, f_end, m_end = heapq.heappop(ended)
                closed_f, closed_m = max(closed_f, f_end), max(closed_m, m_end)
                touching += end_ns == s.start_ns
            assert closed_f <= s.f_start and closed_m <= s.m_start, (
                f"row {row}: a slice ending before {s.ev['name']} at {s.ts} adds up past it "
                f"({closed_f!r} > {s.f_start!r})")
            heapq.heappush(ended, (s.end_ns, s.f_end, s.m_end))
    return touching


# ---- HTA ----

HTA_RANK = re.compile(r'"rank":\s+(\d+)')


def hta_rank(path):
    """create_rank_to_trace_dict: the first line matching, or None (rank 0)."""
    opener = gzip.open if open(path, "rb").read(2) == b"\x1f\x8b" else open
    with opener(path, "rt") as f:
        for line in f:
            m = HTA_RANK.search(line)
            if m:
                return int(m.group(1))
    return None


def hta_stream(ev):
    """normalize_gpu_stream_numbers: args.stream as an int, -1 if it is none."""
    v = (ev.get("args") or {}).get("stream")
    return v if isinstance(v, int) and not isinstance(v, bool) else -1


def hta_gpu_work(trace):
    """trace_filter GPU kernels: stream >= 0 and correlation >= 0."""
    return [e for e in trace["traceEvents"] if e.get("ph") == "X" and hta_stream(e) >= 0
            and (e.get("args") or {}).get("correlation", -1) >= 0]


# ---- Perfetto ----

PERFETTO_MAX = (1 << 63) - 1


def perfetto_flow_ends(trace):
    """{(cat, id, ph): the event of the slice Perfetto binds that end to, or None}."""
    per = collections.defaultdict(list)
    for n, e in enumerate(trace["traceEvents"]):
        ph = e.get("ph")
        if ph == "X" or (ph in ("i", "I") and e.get("s", "t") == "t") or ph == "s" or \
                (ph == "f" and e.get("bp") == "e"):
            dur = ns(e.get("dur", 0)) if ph == "X" else 0
            key = PERFETTO_MAX - dur if ph == "X" else PERFETTO_MAX
            per[(e["pid"], e.get("tid"))].append((ns(e["ts"]), key, n, ph, dur, e))
    bound = {}
    for evs in per.values():
        evs.sort(key=lambda x: x[:3])
        stack = []
        for ts, _, _, ph, dur, e in evs:
            if ph in ("s", "f"):
                bound[(e.get("cat"), e["id"], ph)] = stack[-1][2] if stack else None
                continue
            while stack:
                top_ts, top_dur, _ = stack[-1]
                end = top_ts + top_dur
                if end < ts or (end == ts and not (top_dur == 0 and dur == 0)):
                    stack.pop()
                    continue
                break
            stack.append((ts, dur, e))
    return bound


def check_perfetto_flows(trace):
    """Every ac2g arrow, as Perfetto binds it, goes from the host call to a
    device event carrying that call's correlation, of the kind the writer drew
    it to (an instant only where it drew it to one). Returns the arrows checked."""
    bound = perfetto_flow_ends(trace)
    drawn = {}
    for ev in trace["traceEvents"]:
        if ev.get("cat") == "ac2g" and ev.get("ph") == "f":
            drawn[ev["id"]] = ev
    by_row = rows(trace)
    n = 0
    for fid, f in drawn.items():
        src, dst = bound.get(("ac2g", fid, "s")), bound.get(("ac2g", fid, "f"))
        assert src is not None and dst is not None, (fid, src, dst)
        corr = (src.get("args") or {}).get("correlation")
        d = dst.get("args") or {}
        # the slice the writer meant: the innermost holding the end (check_flows)
        meant = holding(by_row[(f["pid"], f["tid"])], f["ts"])[-1].ev
        assert corr is not None and corr in (d.get("correlation"), d.get("correlation2")) \
            and dst is meant, (
            f"arrow {fid}: Perfetto binds it from {src['name']} (correlation {corr}) to "
            f"{dst['ph']} {dst['name']} {d}, not to {meant['name']} at {meant['ts']}")
        n += 1
    return n


def legacy_process_order(trace):
    """The pids of a trace's processes, top to bottom as the legacy viewer lists
    them (names compared as Python compares them: ours are plain ASCII)."""
    sort, name, labels, pids = {}, {}, {}, set()
    for e in trace["traceEvents"]:
        if "pid" not in e:
            continue
        pid = int(e["pid"])
        pids.add(pid)
        if e.get("ph") != "M":
            continue
        args = e.get("args") or {}
        if e.get("name") == "process_sort_index":
            sort[pid] = int(args["sort_index"])
        elif e.get("name") == "process_name":
            name[pid] = args.get("name")
        elif e.get("name") == "process_labels":
            labels[pid] = [args.get("labels")]
    # comparePossiblyUndefinedValues: a name before none
    return sorted(pids, key=lambda p: (sort.get(p, 0), name.get(p) is None, name.get(p) or "",
                                       labels.get(p, []), p))
