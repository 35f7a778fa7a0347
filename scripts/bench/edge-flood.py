#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Measures tether-edge under a flood of garbage datagrams (docs/PROTOCOL.md, "Security").

Starts `tether-edge serve` on loopback, joins two members that speak the protocol (a
HEARTBEAT every 100 ms each, every answer timed), then floods the server from many source
ports with random bytes, protocol headers with random bodies, HEARTBEATs and JOINs under
random cookies, for a set time, from a separate process. Prints the datagrams sent per
second, the server's resident memory before, at the end of and after the flood, the
members' heartbeats answered and their longest wait for an answer, and the server's own
counters and table sizes (`--print-counters`).

    scripts/bench/edge-flood.py --edge build/install/bin/tether-edge [--seconds 10] [--sources 256]
                          [--rate DATAGRAMS_PER_SECOND]
"""
import argparse
import multiprocessing
import os
import random
import re
import socket
import struct
import subprocess
import threading
import time

APP, CERT, CHANNEL = "demo-app", "demo-certificate", "lobby"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def udp_receive_drops():
    """The kernel's count of UDP datagrams dropped for a full receive buffer (all sockets)."""
    with open("/proc/net/snmp") as f:
        rows = [line.split() for line in f if line.startswith("Udp:")]
    return int(dict(zip(rows[0][1:], rows[1][1:]))["RcvbufErrors"])


def token(edge, uid):
    out = subprocess.run(
        [edge, "token", "--app-id", APP, "--app-certificate", CERT, "--channel", CHANNEL,
         "--uid", str(uid), "--expire-seconds", "3600"], check=True, capture_output=True,
        text=True)
    return out.stdout.split()[0].encode()


def join_bytes(cookie, uid, tok):
    body = struct.pack(">IB", uid, 0) + bytes([len(APP)]) + APP.encode()
    body += bytes([len(CHANNEL)]) + CHANNEL.encode() + struct.pack(">H", len(tok)) + tok
    return b"TH\x01\x01" + struct.pack(">Q", cookie) + body


class Member(threading.Thread):
    """Joins, then sends a HEARTBEAT every 100 ms and times each HEARTBEAT_ACK."""

    def __init__(self, port, uid, tok):
        super().__init__(daemon=True)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.connect(("127.0.0.1", port))
        self.sock.settimeout(0.01)
        self.cookie = random.getrandbits(63) + 1
        self.uid, self.tok = uid, tok
        self.sent, self.acked, self.worst_wait, self.other = 0, 0, 0.0, 0
        self.joined = threading.Event()
        self.stop = threading.Event()
        self.pending = {}

    def run(self):
        while not self.joined.is_set() and not self.stop.is_set():
            self.sock.send(join_bytes(self.cookie, self.uid, self.tok))
            self.receive(0.2)
        seq, next_beat = 0, time.monotonic()
        while not self.stop.is_set():
            now = time.monotonic()
            if now >= next_beat:
                seq += 1
                self.sock.send(b"TH\x01\x02" + struct.pack(">QI", self.cookie, seq))
                self.pending[seq] = now
                self.sent += 1
                next_beat += 0.1
            self.receive(0.01)

    def receive(self, wait):
        end = time.monotonic() + wait
        while time.monotonic() < end:
            try:
                data = self.sock.recv(2048)
            except socket.timeout:
                return
            if len(data) < 12 or data[:3] != b"TH\x01":
                continue
            kind = data[3]
            if kind == 0x81:
                self.joined.set()
            elif kind == 0x83 and len(data) == 24:
                seq = struct.unpack(">I", data[12:16])[0]
                t = self.pending.pop(seq, None)
                if t is not None:
                    self.acked += 1
                    self.worst_wait = max(self.worst_wait, time.monotonic() - t)
            elif kind != 0x84:
                self.other += 1


def garbage(rng):
    kind = rng.randrange(4)
    if kind == 0:
        return rng.randbytes(rng.randrange(300))
    if kind == 1:
        return b"TH\x01" + bytes([rng.randrange(6)]) + rng.randbytes(8 + rng.randrange(200))
    if kind == 2:
        return b"TH\x01\x02" + rng.randbytes(12)
    return join_bytes(rng.getrandbits(64), 0, b"a" * 68)


def flood(port, sources, seconds, rate, result):
    rng = random.Random(7)
    socks = []
    for _ in range(sources):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setblocking(False)
        socks.append(s)
    pool = [garbage(rng) for _ in range(4096)]
    target, sent, i = ("127.0.0.1", port), 0, 0
    start = time.monotonic()
    end = start + seconds
    while time.monotonic() < end:
        if rate and sent > rate * (time.monotonic() - start):
            time.sleep(0.001)
            continue
        for _ in range(64):
            try:
                socks[i % sources].sendto(pool[i % len(pool)], target)
                sent += 1
            except BlockingIOError:
                pass
            i += 1
    result.put(sent)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--edge", required=True)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--sources", type=int, default=256)
    p.add_argument("--rate", type=float, default=0, help="datagrams/s at most (0: flat out)")
    a = p.parse_args()

    edge = subprocess.Popen(
        [a.edge, "serve", "--listen", "127.0.0.1:0", "--app-id", APP, "--app-certificate", CERT,
         "--print-counters"], stdout=subprocess.PIPE, text=True)
    port = int(re.search(r":(\d+)$", edge.stdout.readline().strip()).group(1))
    members = [Member(port, uid, token(a.edge, uid)) for uid in (1, 2)]
    for m in members:
        m.start()
    for m in members:
        if not m.joined.wait(5):
            raise SystemExit("a member could not join")
    time.sleep(2)
    base = [(m.sent, m.acked) for m in members]
    rss_before = rss_kib(edge.pid)
    result = multiprocessing.Queue()
    flooder = multiprocessing.Process(target=flood, args=(port, a.sources, a.seconds, a.rate, result))
    drops_before = udp_receive_drops()
    start = time.monotonic()
    flooder.start()
    rss_peak = rss_before
    while flooder.is_alive():
        rss_peak = max(rss_peak, rss_kib(edge.pid))
        time.sleep(0.1)
    elapsed = time.monotonic() - start
    sent = result.get()
    drops = udp_receive_drops() - drops_before
    rss_end = rss_kib(edge.pid)
    during = [(m.sent - s, m.acked - k) for m, (s, k) in zip(members, base)]
    time.sleep(2)
    rss_after = rss_kib(edge.pid)
    for m in members:
        m.stop.set()
    for m in members:
        m.join()
    edge.terminate()
    tail = edge.communicate(timeout=10)[0].strip().splitlines()

    print(f"flood: {sent} datagrams from {a.sources} source ports in {elapsed:.1f} s "
          f"= {sent / elapsed:,.0f} datagrams/s; the kernel dropped {drops} datagrams for full "
          f"receive buffers meanwhile (any socket)")
    print(f"edge RSS: {rss_before} KiB before, {rss_peak} KiB peak, {rss_end} KiB at the end, "
          f"{rss_after} KiB 2 s after")
    for m, (s, k) in zip(members, during):
        print(f"member uid {m.uid}: {k}/{s} heartbeats answered during the flood, "
              f"{m.acked}/{m.sent} in all; longest wait for an answer {m.worst_wait * 1000:.0f} ms")
    for line in tail:
        print(f"edge: {line}")


if __name__ == "__main__":
    main()
