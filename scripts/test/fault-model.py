#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What the channel session's liveness rules imply under random loss, in heartbeat units.

The model behind the expectations of Tests/EndToEndTests/FaultEndToEndTests.swift: each
direction drops a datagram with probability p; a heartbeat goes out every interval h and
is answered unless its HEARTBEAT or its answer is lost; INTERRUPTED comes 4 h after the last
answer (the 4th beat's answer races that deadline: `race` is the chance it wins); then
join attempts at once and with full-jitter backoff (base h/2, cap 8 h, at least base/4) until
one is answered; LOST 10 h after the last answer. A join takes two round trips (protocol
version 2, docs/PROTOCOL.md §12.6): an INIT and its RESPONSE, then the CONFIRM (sent at once)
and its ACCEPT; once a RESPONSE came, each later attempt repeats the CONFIRM (its ticket
outlives these outages). Usage: scripts/test/fault-model.py [BEATS]
"""
import random
import sys


def run(p, beats, race, rnd):
    t, last, next_beat = 0.0, 0.0, 1.0
    interrupted = lost = 0
    outages = []
    while t < beats:
        due = last + 4
        if next_beat < due - 1e-9 or (abs(next_beat - due) < 1e-9 and rnd.random() < race):
            t, next_beat = next_beat, next_beat + 1
            if rnd.random() >= p and rnd.random() >= p:
                last = t
            continue
        # RECONNECTING/INTERRUPTED at last + 4 h: rejoin until a CONFIRM is answered.
        interrupted += 1
        t, attempt, reported_lost, responded = last + 4, 0, False, False
        while True:
            attempt += 1
            if not reported_lost and t >= last + 10:
                lost, reported_lost = lost + 1, True
            if not responded:  # the INIT and its RESPONSE
                responded = rnd.random() >= p and rnd.random() >= p
            if responded and rnd.random() >= p and rnd.random() >= p:  # CONFIRM, ACCEPT
                break
            t += max(0.125, rnd.uniform(0, min(8, 0.5 * 2 ** (attempt - 1))))
        outages.append(t - (last + 4))
        last, next_beat = t, t + 1
    return interrupted, lost, outages


def main():
    window = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    rnd = random.Random(1)
    for p in (0.10, 0.30):
        for race in (0.0, 0.5, 1.0):
            beats = 1_000_000
            i, l, o = run(p, beats, race, rnd)
            print(f"loss {p:.0%} each way, 4th answer wins {race:.0%}: INTERRUPTED every "
                  f"{beats / i:.0f} beats, LOST in {100 * l / i:.1f} % of outages, "
                  f"mean outage {sum(o) / len(o):.2f} h")
        runs = 4000
        hit = sum(run(p, window, 0.5, rnd)[0] > 0 for _ in range(runs))
        print(f"loss {p:.0%}: at least one INTERRUPTED within {window} beats in "
              f"{100 * hit / runs:.0f} % of runs")


if __name__ == "__main__":
    main()
