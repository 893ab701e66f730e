"""Checks a running `trawl serve` with Python's own HTTP client (urllib, http.client).

usage: serve_check.py BASE_URL DIR KEYFRAMES_JSON
KEYFRAMES_JSON: ffprobe's keyframes of DIR/avc_aac.flv as [[dts_ms, tag_offset], ...]; the
copies DIR/many/c0.flv .. c19.flv are the same bytes. Seek bodies are saved as
DIR/seek_N.flv for the caller to decode with ffmpeg. Exits non-zero on the first failure.
"""
import concurrent.futures
import http.client
import json
import os
import struct
import sys
import urllib.parse
import urllib.request

base, root, keys = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
data = open(os.path.join(root, "avc_aac.flv"), "rb").read()
host = urllib.parse.urlparse(base).netloc


def get(path, method="GET", headers=None):
    req = urllib.request.Request(base + path, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict((k.lower(), v) for k, v in r.headers.items()), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict((k.lower(), v) for k, v in e.headers.items()), e.read()


def raw_status(path):
    c = http.client.HTTPConnection(host, timeout=30)
    c.putrequest("GET", path, skip_host=False)
    c.endheaders()
    s = c.getresponse().status
    c.close()
    return s


def tags(body):
    """(type, timestamp_ms, payload) of each tag of an FLV byte string."""
    assert body[:3] == b"FLV", body[:16]
    pos = struct.unpack(">I", body[5:9])[0] + 4
    while pos + 11 <= len(body):
        t = body[pos] & 0x1F
        size = int.from_bytes(body[pos + 1:pos + 4], "big")
        ts = int.from_bytes(body[pos + 4:pos + 7], "big") | (body[pos + 7] << 24)
        yield t, ts, body[pos + 11:pos + 11 + size]
        pos += 11 + size + 4


def expected_key(n):
    before = [k for k in keys if k[0] <= n * 1000]
    return before[-1] if before else keys[0]


def check_seek(path, n, body):
    want_ts, want_pos = expected_key(n)
    assert body.endswith(data[want_pos:]), f"{path}: body does not end with the file from {want_pos}"
    video = [(ts, p) for t, ts, p in tags(body) if t == 9]
    pictures = [(ts, p) for ts, p in video if p[1] == 1]
    ts, p = pictures[0]
    assert p[0] >> 4 == 1, f"{path}: first picture is not a keyframe"
    assert ts == want_ts and ts <= n * 1000, f"{path}: first picture at {ts} ms, want {want_ts}"
    if want_pos != keys[0][1]:
        assert video[0][1][:2] == b"\x17\x00", f"{path}: no AVC sequence header before the seek"
        assert any(t == 8 and p[1] == 0 for t, _, p in tags(body)), f"{path}: no AAC config"


for n in [0, 3, 4.5, 5.99]:
    st, h, body = get(f"/avc_aac.flv?start={n}")
    assert st == 200, st
    assert int(h["content-length"]) == len(body)
    check_seek(f"start={n}", n, body)
    if n in (0, 3, 4.5):
        open(os.path.join(root, f"seek_{n}.flv"), "wb").write(body)
print("seconds: ok")

# Bytes, as nginx's flv module takes them: the keyframe's offset gives the same stream.
t2, p2 = keys[1]
st, _, by_bytes = get(f"/avc_aac.flv?start={p2}")
st2, _, by_secs = get(f"/avc_aac.flv?start={t2 / 1000}")
assert st == st2 == 200 and by_bytes == by_secs, "bytes and seconds disagree"
print("bytes: ok")

st, h, body = get("/avc_aac.flv", method="HEAD")
assert st == 200 and body == b"" and int(h["content-length"]) == len(data), (st, h)
assert h.get("accept-ranges") == "bytes"
st, h, body = get("/avc_aac.flv", headers={"Range": "bytes=100-199"})
assert st == 206 and body == data[100:200], st
assert h["content-range"] == f"bytes 100-199/{len(data)}", h
st, h, body = get("/avc_aac.flv", headers={"Range": f"bytes={len(data)}-"})
assert st == 416, st
st, _, body = get("/avc_aac.flv")
assert st == 200 and body == data
print("head/range/whole: ok")

for p in ["/../secret.txt", "/%2e%2e/secret.txt", "/many/%2E%2E/%2e%2e/secret.txt", "/out_link.flv"]:
    s = raw_status(p)
    assert s == 403, f"{p}: {s}"
assert raw_status("/nope.flv") == 404
assert get("/avc_aac.flv?start=abc")[0] == 400
# A number past the duration that is no keyframe's offset: seconds past the end, 416.
st, h, body = get("/avc_aac.flv?start=9999")
assert st == 416 and b"past the end" in body, (st, body)
assert h["content-range"] == f"bytes */{len(data)}", h
print("refusals: ok")

# Single flight: 50 simultaneous first requests for one file compute its index once.
with concurrent.futures.ThreadPoolExecutor(50) as ex:
    rs = list(ex.map(lambda _: get("/many/c0.flv?start=3"), range(50)))
notes = [h.get("x-trawl-index") for _, h, _ in rs]
assert notes.count("computed") == 1 and notes.count("cached") == 49, notes
print("single flight: ok")

# 200 concurrent seeks of different files and times.
def one(i):
    n = (i * 7 % 60) / 10
    path = f"/many/c{i % 20}.flv?start={n}"
    st, h, body = get(path)
    assert st == 200, (path, st)
    check_seek(path, n, body)
    return True

with concurrent.futures.ThreadPoolExecutor(200) as ex:
    assert all(ex.map(one, range(200)))
print("200 concurrent seeks: ok")
