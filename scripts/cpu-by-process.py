#!/usr/bin/env python3
"""Accounts the machine's CPU time to the processes that used it.

Run it beside a command and stop it with SIGTERM when the command ends:

    scripts/cpu-by-process.py /tmp/cpu.json & sampler=$!
    ./.ci/run
    kill $sampler

It reads /proc every 2 seconds and, when stopped, writes to the named file
the wall time, the CPU-seconds the machine was busy (from /proc/stat) and
the CPU-seconds of each class of process (each Cassandra node by its
directory, DynamoDB Local, dynalite, moto, each test binary, the Go
compiler and linker, ...), largest first. A process that lived less than
the 2-second period may be missed; the machine's total has every one.
"""
import json
import os
import re
import signal
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")
seen = {}  # (pid, start time) -> [class, CPU ticks]


def classify(cmd):
    line = " ".join(cmd)
    base = os.path.basename(cmd[0]) if cmd else "?"
    if base == "java":
        m = re.search(r"-Dcassandra\.config=file://(\S+)/conf/", line)
        if m:
            return "cassandra:" + m.group(1)
        return "dynamodb-local" if "DynamoDBLocal" in line else "java"
    if base.endswith(".test"):
        return "test:" + base
    if base in ("compile", "link", "asm", "cgo", "vet"):
        return "go:" + base
    for name in ("dynalite", "moto", "chrom", "pytest"):
        if name in line:
            return name
    return "other:" + base


def busy():
    with open("/proc/stat") as f:
        v = list(map(int, f.readline().split()[1:]))
    return sum(v) - v[3] - v[4]  # less idle and iowait


def sample():
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                st = f.read()
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = [x.decode(errors="replace") for x in f.read().split(b"\0") if x]
        except OSError:
            continue
        fields = st[st.rfind(")") + 2:].split()
        ticks = int(fields[11]) + int(fields[12])  # utime + stime
        key = (pid, fields[19])
        if key in seen:
            seen[key][1] = ticks
        else:
            seen[key] = [classify(cmd), ticks]


def main():
    out = sys.argv[1]
    t0, b0 = time.time(), busy()
    sample()
    base = {k: v[1] for k, v in seen.items()}

    def finish(*_):
        sample()
        sums = {}
        for k, (cls, ticks) in seen.items():
            d = ticks - base.get(k, 0)
            if d > 0:
                sums[cls] = round(sums.get(cls, 0) + d / HZ, 2)
        with open(out, "w") as f:
            json.dump({"wall_s": round(time.time() - t0, 1),
                       "busy_cpu_s": round((busy() - b0) / HZ, 1),
                       "by_class": dict(sorted(sums.items(), key=lambda x: -x[1]))}, f, indent=1)
        sys.exit(0)

    signal.signal(signal.SIGTERM, finish)
    while True:
        time.sleep(2)
        sample()


if __name__ == "__main__":
    main()
