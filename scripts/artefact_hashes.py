"""Print the SHA-256 of every benchmark model's .vmfb in every form (WebNN, Core ML, NNEF).

A refactor that should not change code generation keeps these byte-identical:

    python scripts/artefact_hashes.py > before.txt   # on the old tree
    python scripts/artefact_hashes.py > after.txt    # on the new one; diff the two

Options: --models (default: the five of benchmarks/run.py), --formats, --target, --cpu, --keep DIR.
"""
import argparse
import hashlib
import os
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

import models  # noqa: E402
import run as bench  # noqa: E402


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default=",".join(models.MODELS))
    p.add_argument("--formats", default=",".join(bench.FORMATS))
    p.add_argument("--target", default="llvm-cpu")
    p.add_argument("--cpu", default="host")
    p.add_argument("--keep", help="also write the .vmfb files into this folder")
    args = p.parse_args(argv)
    import estuary

    # a fixed folder: the model's path is recorded in the artefact (locations, signature)
    work = os.path.join(tempfile.gettempdir(), "estuary-artefact-hashes")
    os.makedirs(work, exist_ok=True)
    for name in args.models.split(","):
        model = models.MODELS_ALL[name]()[0]
        for fmt in args.formats.split(","):
            path = bench.emit(model, name, fmt, work)
            art = estuary.compile(path, target=args.target, cpu=args.cpu)
            if args.keep:
                os.makedirs(args.keep, exist_ok=True)
                art.save(os.path.join(args.keep, f"{name}.{fmt}.vmfb"))
            print(f"{hashlib.sha256(art.vmfb).hexdigest()}  {name}.{fmt}.vmfb", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
