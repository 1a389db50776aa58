#!/usr/bin/env python3
"""Hostile and unlucky clients against a running `cflow serve`, for the figures of issue 38 in
TESTING.md (run by hand; the CI suite has bounded versions in tests/server/http_limits_test.cpp).

  cflow serve --port 8090 &                      # the bundled default model
  tests/server/hostile/hostile_clients.py attacks --port 8090 --pid $!
  tests/server/hostile/hostile_clients.py soak --port 8090 --pid $! --minutes 30

`attacks` runs each attack of the issue once and prints the server's resident memory (VmRSS, and
the peak VmHWM) after it and whether a well-formed client was still answered. `soak` keeps 8
clients busy with a mix of streamed and whole replies, clients that leave mid-stream or while
queued, oversized and malformed requests and slow heads; every 10 s it prints the server's memory,
and at the end the count of well-formed requests that failed (which must be 0).
Standard library only."""
import argparse
import json
import random
import socket
import threading
import time

HOST = "127.0.0.1"


def memory_mb(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                fields[name] = int(value.split()[0]) / 1024
    return fields.get("VmRSS", 0.0), fields.get("VmHWM", 0.0)


def connect(port, timeout=30.0):
    sock = socket.create_connection((HOST, port), timeout=timeout)
    return sock


def read_all(sock, limit=1 << 20):
    data = b""
    try:
        while len(data) < limit:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return data


def status_of(response):
    try:
        return int(response.split(b" ", 2)[1])
    except (IndexError, ValueError):
        return 0


def request(port, method, path, body=None, timeout=60.0):
    """One request on its own connection; returns (status, body bytes)."""
    sock = connect(port, timeout)
    head = f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n"
    payload = b""
    if body is not None:
        payload = json.dumps(body).encode()
        head += f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
    sock.sendall(head.encode() + b"\r\n" + payload)
    response = read_all(sock, 64 << 20)
    sock.close()
    head, _, rest = response.partition(b"\r\n\r\n")
    if b"transfer-encoding: chunked" in head.lower():
        rest = dechunk(rest)
    return status_of(response), rest


def dechunk(body):
    """The payload of a chunked body (streams and generations are sent chunked); a framing
    error keeps what was decoded, so the caller's check fails on it."""
    out, pos = b"", 0
    while True:
        end = body.find(b"\r\n", pos)
        if end < 0:
            return out
        try:
            size = int(body[pos:end].split(b";")[0], 16)
        except ValueError:
            return out
        if size == 0:
            return out
        out += body[end + 2:end + 2 + size]
        pos = end + 2 + size + 2


def healthy(port, timeout=5.0):
    try:
        return request(port, "GET", "/health", timeout=timeout)[0] == 200
    except OSError:
        return False


def chat(stream, max_tokens=16):
    return {"messages": [{"role": "user", "content": "Tell me a story about a cat."}], "max_tokens": max_tokens,
            "stream": stream}


def send_forever(sock, first, filler, total):
    try:
        sock.sendall(first)
        sent = 0
        while sent < total:
            sock.sendall(filler)
            sent += len(filler)
    except OSError:
        pass


def attack_endless_line(port):
    """4 sockets: 'GET /' then 256 MiB without a newline each."""
    socks = [connect(port) for _ in range(4)]
    threads = [threading.Thread(target=send_forever, args=(s, b"GET /", b"a" * 65536, 256 << 20)) for s in socks]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    statuses = [status_of(read_all(s, 4096)) for s in socks]
    return f"answers {statuses}"


def attack_chunked_body(port):
    """A chunked body of 256 MiB to /v1/chat/completions."""
    sock = connect(port)
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n").encode()
    piece = b"10000\r\n" + b" " * 65536 + b"\r\n"
    send_forever(sock, head, piece, 256 << 20)
    return f"answer {status_of(read_all(sock, 4096))}"


def attack_slowloris(port, connections=64, seconds=20):
    """`connections` heads, one header line every 2 s; a well-formed client asks /health each second."""
    stop = threading.Event()

    def slow():
        try:
            sock = connect(port)
            sock.sendall(b"GET /health HTTP/1.1\r\n")
            i = 0
            while not stop.is_set():
                sock.sendall(f"X-{i}: v\r\n".encode())
                i += 1
                stop.wait(2)
        except OSError:
            pass

    threads = [threading.Thread(target=slow) for _ in range(connections)]
    for t in threads:
        t.start()
    time.sleep(2)
    answered, latencies = 0, []
    began = time.time()
    while time.time() - began < seconds:
        t0 = time.time()
        if healthy(port, timeout=10):
            answered += 1
            latencies.append(time.time() - t0)
        time.sleep(1)
    stop.set()
    for t in threads:
        t.join()
    worst = max(latencies) if latencies else float("nan")
    return f"{answered} of {int(seconds)} /health answered (slowest {worst:.2f} s)"


def attack_large_bodies(port, count=60, size=7 << 20):
    """`count` chat requests with a 7 MB message each (answered 400 or 200), then idle memory."""
    text = "x" * size
    statuses = set()
    for _ in range(count):
        statuses.add(request(port, "POST", "/v1/chat/completions",
                             {"messages": [{"role": "user", "content": text}], "max_tokens": 1})[0])
    time.sleep(1)
    return f"answers {sorted(statuses)}"


def run_attacks(args):
    attacks = [("endless request line", attack_endless_line), ("chunked body 256 MiB", attack_chunked_body),
               ("slowloris 64 x one line / 2 s", attack_slowloris), ("60 bodies of 7 MB", attack_large_bodies)]
    rss, hwm = memory_mb(args.pid)
    print(f"start: VmRSS {rss:.1f} MB, VmHWM {hwm:.1f} MB")
    for name, attack in attacks:
        began = time.time()
        outcome = attack(args.port)
        rss, hwm = memory_mb(args.pid)
        print(f"{name}: {outcome}; {time.time() - began:.1f} s; after: VmRSS {rss:.1f} MB, VmHWM {hwm:.1f} MB; "
              f"/health {'answered' if healthy(args.port) else 'NOT answered'}", flush=True)


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.counts = {}
        self.failures = []

    def add(self, kind, ok, detail=""):
        with self.lock:
            done, failed = self.counts.get(kind, (0, 0))
            self.counts[kind] = (done + 1, failed + (0 if ok else 1))
            if not ok and len(self.failures) < 20:
                self.failures.append(f"{kind}: {detail}")


def soak_client(port, until, tally, seed):
    rng = random.Random(seed)
    while time.time() < until:
        kind = rng.choices(["stream", "whole", "leave_mid_stream", "leave_queued", "oversized", "malformed",
                            "slow_head"], weights=[30, 30, 10, 10, 8, 8, 4])[0]
        try:
            if kind == "stream":
                status, body = request(port, "POST", "/v1/chat/completions", chat(True, rng.randint(4, 24)))
                tally.add(kind, status == 200 and body.rstrip().endswith(b"data: [DONE]"), f"{status} {body[-80:]!r}")
            elif kind == "whole":
                status, body = request(port, "POST", "/v1/completions",
                                       {"prompt": "Once upon a time", "max_tokens": rng.randint(4, 24)})
                tally.add(kind, status == 200 and b'"choices"' in body, f"{status} {body[:80]!r}")
            elif kind in ("leave_mid_stream", "leave_queued"):
                sock = connect(port)
                payload = json.dumps(chat(True, 64)).encode()
                sock.sendall((f"POST /v1/chat/completions HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
                              f"Content-Length: {len(payload)}\r\n\r\n").encode() + payload)
                if kind == "leave_mid_stream":
                    sock.recv(512)
                else:
                    time.sleep(0.05)
                sock.close()
                tally.add(kind, True)
            elif kind == "oversized":
                sock = connect(port)
                sock.sendall(f"POST /v1/chat/completions HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {64 << 20}\r\n\r\n"
                             .encode())
                status = status_of(read_all(sock, 4096))
                sock.close()
                tally.add(kind, status == 413, str(status))
            elif kind == "malformed":
                sock = connect(port)
                sock.sendall(b"GET / HTTP/1.1\nHost: x\n\n")
                status = status_of(read_all(sock, 4096))
                sock.close()
                tally.add(kind, status == 400, str(status))
            else:  # slow_head: the head never finishes; the server cuts it (408) or asks it to leave (503)
                sock = connect(port)
                sock.sendall(b"GET /health HTTP/1.1\r\n")
                status = status_of(read_all(sock, 4096))
                sock.close()
                tally.add(kind, status in (408, 503), str(status))
        except OSError as error:
            tally.add(kind, kind.startswith("leave"), repr(error))


def run_soak(args):
    tally = Tally()
    until = time.time() + args.minutes * 60
    threads = [threading.Thread(target=soak_client, args=(args.port, until, tally, seed)) for seed in range(args.clients)]
    for t in threads:
        t.start()
    began = time.time()
    samples = []
    while any(t.is_alive() for t in threads):
        time.sleep(10)
        rss, hwm = memory_mb(args.pid)
        samples.append(rss)
        print(f"{time.time() - began:6.0f} s: VmRSS {rss:.1f} MB, VmHWM {hwm:.1f} MB", flush=True)
    for t in threads:
        t.join()
    print("requests:", json.dumps({k: {"done": d, "failed": f} for k, (d, f) in sorted(tally.counts.items())}))
    print(f"VmRSS first {samples[0]:.1f} MB, last {samples[-1]:.1f} MB, max {max(samples):.1f} MB")
    for failure in tally.failures:
        print("FAILED", failure)
    well_formed_failed = sum(f for k, (d, f) in tally.counts.items() if k in ("stream", "whole"))
    hostile_mishandled = sum(f for k, (d, f) in tally.counts.items() if k not in ("stream", "whole"))
    print("well-formed requests failed:", well_formed_failed, "; hostile ones answered otherwise than expected:",
          hostile_mishandled)
    return 1 if well_formed_failed or hostile_mishandled else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["attacks", "soak"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True, help="the server's process id (for its memory)")
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    if args.mode == "attacks":
        run_attacks(args)
        return 0
    return run_soak(args)


if __name__ == "__main__":
    raise SystemExit(main())
