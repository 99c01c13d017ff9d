#!/usr/bin/env python3
"""cluster_lat.py - where a cluster job's time goes (bench/README.md, cluster).

  PX_BENCH_LOG_LEVEL=trace px_bench_cluster --trace T 2> LOG
  bench/cluster_lat.py T LOG

T: the bench's stamps per measured job (id, submit, publish ack, result
received; monotonic ns). LOG: the daemons' stderr, with the workers'
`cluster-lat <id> <step> <ns>` lines (service/cluster/cluster_int.h). Prints
the p50 of each step since the previous one, over the jobs that have them.
"""
import re
import statistics
import sys

STEPS = ["bell", "fetched", "marked", "admit", "started", "answer", "drained",
         "published", "acked"]


def main():
    jobs = {}
    with open(sys.argv[1]) as f:
        for line in f:
            i, t0, t1, t2 = line.split()
            if i.startswith("rtt-c"):
                jobs[i] = {"submit": int(t0), "puback": int(t1), "result": int(t2)}
    pat = re.compile(r"cluster-lat (\S+) (\S+) (\d+)")
    with open(sys.argv[2], errors="replace") as f:
        for line in f:
            m = pat.search(line)
            if m and m.group(1) in jobs:
                j, step, t = jobs[m.group(1)], m.group(2), int(m.group(3))
                if step not in j or (step == "bell" and t < j[step]):
                    j[step] = t  # the first bell of the three workers
    rows = [("submit -> bench's publish ack", "submit", "puback")]
    prev = "submit"
    for s in STEPS:
        rows.append(("%s -> %s" % (prev, s), prev, s))
        prev = s
    rows.append(("answer -> result at the bench", "answer", "result"))
    rows.append(("total (submit -> result)", "submit", "result"))
    print("%-40s %9s %6s" % ("step", "p50 ms", "n"))
    for name, a, b in rows:
        d = [(j[b] - j[a]) / 1e6 for j in jobs.values() if a in j and b in j]
        if d:
            print("%-40s %9.3f %6d" % (name, statistics.median(d), len(d)))


if __name__ == "__main__":
    main()
