#!/usr/bin/env python3
"""Long fuzzing campaigns over every input format and corrupted artefacts (tests/fuzz/).

    scripts/fuzz_campaign.py --count 4000 --jobs 2 --work /tmp/fuzz [--formats webnn,nnef] [--seed 1] [--full-every 10] [--batch 50]

Writes the cases and results.jsonl into --work, keeps the mutants that did not end 'ok' or a
clean error (with their logs), prints the format x outcome table, and exits 1 when any case
reported an internal error, raised a raw exception, crashed, hung or ran out of memory."""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))

from fuzz import campaign, seeds  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=1000, help="mutants per format (default 1000)")
    ap.add_argument("--formats", default=",".join(seeds.FORMATS), help=f"comma-separated, of {seeds.FORMATS}")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per case before it counts as a hang")
    ap.add_argument("--memory", type=float, default=6.0, help="GiB of address space per case")
    ap.add_argument("--work", default="fuzz-work", help="folder for seeds, mutants, logs and results")
    ap.add_argument("--full-every", type=int, default=1,
                    help="compile with IREE and run every Nth mutant; the others stop after Estuary's lowering")
    ap.add_argument("--batch", type=int, default=1,
                    help="cases each worker process runs in turn (a fork per case costs more than most cases: docs/design.md)")
    ap.add_argument("--keep", action="store_true", help="keep every mutant, not only the bad ones")
    args = ap.parse_args()
    formats = tuple(f for f in args.formats.split(",") if f)
    unknown = set(formats) - set(seeds.FORMATS)
    if unknown:
        ap.error(f"unknown formats {sorted(unknown)}")
    start = time.time()
    results = campaign.run(args.work, formats, args.count, args.seed, args.jobs, args.timeout,
                           int(args.memory * (1 << 30)), args.keep, max(1, args.full_every), max(1, args.batch))
    print(campaign.table(results))
    print(f"\n{len(results)} cases in {time.time() - start:.0f} s; results in {args.work}/results.jsonl")
    bad = campaign.bad(results)
    for r in bad:
        print(f"{r['outcome']}: {r['format']} {r['path']} (seed {r['seed']}): {r['detail']}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
