"""`gputrace report TRACE -o report.html`, opened in a real headless browser
(Debian's chromium, installed by `make deps`): the page renders without a
console error or a blocked load, its numbers equal the summary's, and its
screenshot shows the charts."""
import html.parser
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import zlib

import pytest

from ci_helpers import CI_APP, gt, traced

KERNEL_BLUE = (0x35, 0x67, 0xd6)
API_ORANGE = (0xc2, 0x62, 0x0c)


def chromium(tmp_path, *args):
    exe = shutil.which("chromium")
    assert exe, "chromium is not installed: `make deps` installs it (Debian package chromium)"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path / "home"),
           "LANG": "C.UTF-8"}
    p = subprocess.run([exe, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
                        "--disable-extensions", "--disable-background-networking",
                        f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr",
                        "--v=0", *args], env=env, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode(errors="replace")[-3000:]
    return p


def console_problems(stderr):
    """What the page said on the console (errors, CSP refusals, failed loads)."""
    text = stderr.decode(errors="replace")
    return [l for l in text.splitlines()
            if "CONSOLE" in l or "Uncaught" in l or "Refused to" in l or "net::ERR" in l]


class Dom(html.parser.HTMLParser):
    """Elements as (tag, attrs, text) in document order."""

    def __init__(self, text):
        super().__init__()
        self.elements, self.stack = [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        el = [tag, dict(attrs), ""]
        self.elements.append(el)
        if tag not in ("meta", "br", "rect", "input", "link"):
            self.stack.append(el)

    def handle_startendtag(self, tag, attrs):
        self.elements.append([tag, dict(attrs), ""])

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        for el in self.stack:
            el[2] += data

    def find(self, **attrs):
        return [e for e in self.elements if all(e[1].get(k.replace("_", "-")) == v
                                                for k, v in attrs.items())]

    def by_id(self, id_):
        found = self.find(id=id_)
        assert len(found) == 1, id_
        return found[0]


def read_png(path):
    """(width, height, bytes per pixel, rows) of an 8-bit RGB/RGBA PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, []
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
    bpp = 3 if ctype == 2 else 4
    raw, stride = zlib.decompress(b"".join(idat)), w * bpp
    prev, rows = bytearray(stride), []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if f == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif f == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif f == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def test_report_renders_with_the_summary_numbers(tmp_path):
    trace, _, _ = traced(tmp_path, "run", 10, 64)
    s = json.loads(gt(["summary", "--json", "-", trace], tmp_path).stdout)
    out = tmp_path / "report.html"
    p = gt(["report", trace, "-o", out], tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    page = out.read_text()
    # self-contained: nothing to fetch, no font to load
    assert not re.search(r"""\b(src|href)\s*=|url\(|@import|@font-face|https?://""", page)

    dump = chromium(tmp_path, "--dump-dom", out.as_uri())
    assert console_problems(dump.stderr) == []
    dom = Dom(dump.stdout.decode())
    root = dom.elements[0]
    assert root[0] == "html" and root[1].get("data-ready") == "1", "the page script did not finish"
    assert root[1]["data-kernels"] == str(s["totals"]["kernels"]["count"])

    # overview cards: data and visible text
    for id_, value in (("n-kernels", s["totals"]["kernels"]["count"]),
                       ("n-kernel-names", s["totals"]["kernels"]["distinct"]),
                       ("n-api", s["totals"]["api_calls"]["count"]),
                       ("n-copies", s["totals"]["copies"]["count"]),
                       ("n-lost", s["lost"]["total"])):
        el = dom.by_id(id_)
        assert (int(float(el[1]["data-value"])), el[2]) == (value, str(value)), id_
    assert float(dom.by_id("copy-bytes")[1]["data-value"]) == s["totals"]["copies"]["bytes"]
    assert float(dom.by_id("kernel-time")[1]["data-value"]) == s["totals"]["kernels"]["total_ns"]
    assert int(dom.by_id("lost-total")[1]["data-value"]) == s["lost"]["total"] == 0
    assert int(dom.by_id("errors-total")[1]["data-value"]) == s["errors"]["total"] == 0
    assert dom.by_id("n-errors")[2] == "0"

    def table(cls, key):
        body = [e for e in dom.elements if e[0] == "table" and cls in e[1].get("class", "")]
        assert len(body) == 1, cls
        start = dom.elements.index(body[0]) + 1
        end = next((i for i in range(start, len(dom.elements)) if dom.elements[i][0] == "table"),
                   len(dom.elements))
        trs = [e for e in dom.elements[start:end] if e[0] == "tr" and e[1].get("class") == "row"]
        return {e[1][key]: e for e in trs}

    for cls, key in (("kernels", "kernels"), ("apis", "api_calls")):
        got = table(cls, "data-name")
        assert set(got) == {r["name"] for r in s[key]}, cls
        for r in s[key]:
            a = got[r["name"]][1]
            assert [int(a[f"data-{k}"]) for k in ("count", "total-ns", "mean-ns", "min-ns",
                                                  "max-ns")] == \
                [r["count"], r["total_ns"], r["mean_ns"], r["min_ns"], r["max_ns"]], r
            assert got[r["name"]][2].startswith(r["name"] + str(r["count"]))  # visible cells
    got = table("copies", "data-kind")
    assert {k: (int(e[1]["data-count"]), int(e[1]["data-bytes"]), int(e[1]["data-total-ns"]))
            for k, e in got.items()} == \
        {r["kind"]: (r["count"], r["bytes"], r["total_ns"]) for r in s["copies"]}

    # one timeline per device; its columns add up to the device's busy time
    figs = [e for e in dom.elements if e[0] == "figure" and "device" in e[1].get("class", "")]
    assert [f[1]["data-device"] for f in figs] == [d["name"] for d in s["devices"]]
    for fig, d in zip(figs, s["devices"]):
        assert int(fig[1]["data-busy-ns"]) == d["busy_ns"]
        start = dom.elements.index(fig)
        end = next(i for i in range(start + 1, len(dom.elements))
                   if dom.elements[i][0] == "figure" or dom.elements[i][1].get("id") == "kernels")
        buckets = [float(e[1]["data-busy"]) for e in dom.elements[start:end]
                   if e[0] == "rect" and e[1].get("class") == "bucket"]
        assert len(buckets) >= 5
        assert sum(buckets) == pytest.approx(d["busy_ns"], abs=1.0)

    # who ran what, where
    assert dom.by_id("command")[2] == f"{CI_APP} 10 64"
    assert dom.by_id("host")[2] == socket.gethostname()
    assert dom.by_id("trace")[2] == str(trace)

    # the picture: not blank, and both bar charts drawn
    shot = tmp_path / "shot.png"
    pic = chromium(tmp_path, "--hide-scrollbars", "--window-size=1100,1500",
                   f"--screenshot={shot}", out.as_uri())
    assert console_problems(pic.stderr) == []
    w, h, bpp, rows = read_png(shot)
    assert (w, h) == (1100, 1500)
    colors, blue, orange, white = set(), 0, 0, 0
    for row in rows[::2]:
        for x in range(0, w * bpp, bpp * 2):
            px = tuple(row[x:x + 3])
            colors.add(px)
            white += px == (255, 255, 255)
            blue += px == KERNEL_BLUE
            orange += px == API_ORANGE
    sampled = (h // 2) * (w // 2)
    assert white < 0.9 * sampled and len(colors) > 50
    assert blue > 200 and orange > 200, (blue, orange)


def test_report_lists_the_calls_that_failed(tmp_path):
    """A trace with failed calls: the overview's "API errors" card is marked bad and the
    section lists each call and error with its count, as the summary's errors.calls."""
    trace = tmp_path / "t.json"
    calls = [("cudaMalloc", "cudaErrorMemoryAllocation")] * 2 + \
        [("cudaStreamQuery", "cudaErrorNotReady"), ("zeCommandListClose", "ZE_<&>")]
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": n, "pid": 1, "tid": 1, "ts": i, "dur": 1,
         "args": {"result": 2, "error": err}} for i, (n, err) in enumerate(calls)]}))
    out = tmp_path / "r.html"
    assert gt(["report", trace, "-o", out], tmp_path).returncode == 0
    dom = Dom(out.read_text())
    card = dom.by_id("n-errors")
    assert (card[1]["data-value"], card[2]) == ("3", "3")
    assert dom.by_id("errors-total")[1]["data-value"] == "3"
    rows = [(e[1]["data-name"], e[1]["data-error"], e[1]["data-count"]) for e in dom.elements
            if e[0] == "tr" and "data-error" in e[1]]
    assert rows == [("cudaMalloc", "cudaErrorMemoryAllocation", "2"),
                    ("zeCommandListClose", "ZE_<&>", "1")]


def test_console_errors_are_seen(tmp_path):
    """The console check above can fail: a page with a script error and a
    blocked load is caught."""
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html><body><img src="https://example.invalid/x.png">'
                   "<script>undefined_function();</script></body></html>")
    p = chromium(tmp_path, "--dump-dom", bad.as_uri())
    assert any("undefined_function" in l for l in console_problems(p.stderr)), \
        p.stderr.decode(errors="replace")[-2000:]


def test_report_of_a_merged_trace_and_errors(tmp_path):
    a, _, _ = traced(tmp_path, "a", 2, 64)
    b, _, _ = traced(tmp_path, "b", 3, 32)
    m = tmp_path / "m.json.gz"
    assert gt(["merge", "-o", m, a, b], tmp_path).returncode == 0
    p = gt(["report", m], tmp_path)  # default name beside the trace: m.html
    assert p.returncode == 0, p.stderr.decode()
    page = (tmp_path / "m.html").read_text()
    # a compressed trace named without .json: its .gz is dropped too
    shutil.copy(m, tmp_path / "n.gz")
    p = gt(["report", tmp_path / "n.gz"], tmp_path)
    assert p.returncode == 0, p.stderr.decode()
    assert re.search(r'<span id="trace">[^<]*n\.gz</span>', (tmp_path / "n.html").read_text())
    assert not (tmp_path / "n.gz.html").exists()
    s = json.loads(gt(["summary", "--json", "-", m], tmp_path).stdout)
    embedded = re.search(r'<script type="application/json" id="gputrace-summary">(.*?)</script>',
                         page, re.S).group(1)
    assert json.loads(embedded)["kernels"] == s["kernels"]
    assert page.count('<tr class="row"><td>ci_app') == 0  # names carry host/rank after merge
    # the first process's command heads the page; the table lists both
    assert re.search(f'<div id="command"><code>{CI_APP} 2 64</code>', page)
    assert page.count(f"<code>{CI_APP} 2 64</code>") == 2
    assert page.count(f"<code>{CI_APP} 3 32</code>") == 1
    assert len(re.findall(r'<figure class="device"', page)) == len(s["devices"])
    # errors: no trace, a summary JSON (no timeline in it), two traces
    assert gt(["report"], tmp_path).returncode == 2
    assert gt(["report", a, b], tmp_path).returncode == 2
    notrace = tmp_path / "x.json"
    notrace.write_text("hello")
    r = gt(["report", notrace, "-o", tmp_path / "x.html"], tmp_path)
    assert r.returncode == 2 and "not a readable trace" in r.stderr.decode()
    assert not (tmp_path / "x.html").exists()


def latin1_trace(tmp_path, kernels=("k\u00e9rnel",)):
    """A trace whose file name, process name, host and exe hold Latin-1 bytes
    (no part of a UTF-8 character), and a name with markup in it."""
    dev = 1 << 30
    ev = [{"ph": "M", "name": "process_name", "pid": 5, "tid": 0, "args": {"name": "APPNAME"}},
          {"ph": "X", "cat": "ze_api", "name": "<b>&call", "pid": 5, "tid": 5, "ts": 1,
           "dur": 500}]
    ev += [{"ph": "X", "cat": "kernel", "name": k, "pid": dev + 1, "tid": 1, "ts": 2 + i,
            "dur": 1, "args": {}} for i, k in enumerate(kernels)]
    raw = json.dumps({"traceEvents": ev}).encode()[:-1]
    raw = raw.replace(b"APPNAME", b"app\xe9</title>")
    raw += (b', "gputrace": {"pid": 5, "hostname": "h\xe9st", "exe": "/bin/\xe9xe", '
            b'"host_pids": [5]}}')
    path = tmp_path / os.fsdecode(b"caf\xe9.json")
    path.write_bytes(raw)
    return path


def test_report_of_names_not_utf8_is_utf8(tmp_path):
    """The page says UTF-8: a byte of a path, host or name that is no part of a
    UTF-8 character is written as U+FFFD (the header wrote it raw), and markup
    in a name is text."""
    t = latin1_trace(tmp_path)
    p = gt(["report", t, "-o", tmp_path / "r.html"], tmp_path)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    page = (tmp_path / "r.html").read_bytes().decode("utf-8")  # raises if not UTF-8
    assert "<title>gputrace report: app\ufffd&lt;/title&gt;</title>" in page
    assert '<span id="host">h\ufffdst</span>' in page
    assert '<span id="trace">' + str(t).replace(os.fsdecode(b"\xe9"), "\ufffd") + "</span>" in page
    assert "<h1>gputrace report: app\ufffd&lt;/title&gt;</h1>" in page
    assert "&lt;b&gt;&amp;call" in page and "<b>&" not in page
    assert "k\u00e9rnel" in page
    Dom(page)  # parses


def test_report_one_row_left_out_is_said_in_the_singular(tmp_path):
    """51 kernels, 50 listed: "1 more row in the summary JSON" (was "1 more rows")."""
    t = latin1_trace(tmp_path, [f"k{i:02d}" for i in range(51)])
    p = gt(["report", t, "-o", tmp_path / "r.html"], tmp_path)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    page = (tmp_path / "r.html").read_text()
    assert "<p class=\"none\">1 more row in the summary JSON (gputrace summary --json).</p>" \
        in page, re.findall(r"<p class=\"none\">[^<]*</p>", page)


def test_report_counts_of_one_are_said_in_the_singular(tmp_path):
    """A device of one span, one event lost: "1 span", "1 event was lost" (were
    "1 spans", "1 events were lost")."""
    ev = [{"ph": "X", "cat": "ze_api", "name": "zeInit", "pid": 5, "tid": 5, "ts": 1, "dur": 9},
          {"ph": "X", "cat": "kernel", "name": "k", "pid": (1 << 30) + 1, "tid": 1, "ts": 2,
           "dur": 1, "args": {}}]
    t = tmp_path / "one.json"
    t.write_text(json.dumps({"traceEvents": ev, "gputrace": {
        "pid": 5, "host_pids": [5], "events_lost": 1, "lost_by_reason": {"ring_full": 1}}}))
    p = gt(["report", t, "-o", tmp_path / "r.html"], tmp_path)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    page = (tmp_path / "r.html").read_text()
    assert re.search(r"<span>busy [^<]*, 1 span</span>", page), page
    assert ">1 event was lost (counted, not in the trace)." in page
