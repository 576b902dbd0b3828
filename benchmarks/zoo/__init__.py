"""The model zoo: real architectures (torchvision, Hugging Face transformers, seeded random
weights) converted by their usual tools into every format Estuary reads, then imported, compiled
(llvm-cpu), run and compared with torch, with compile time, compile memory and latency beside
onnxruntime and tract.

    python -m benchmarks.zoo [--models a,b] [--formats f,g] [--jobs N] [--force]
    python benchmarks/zoo/run.py ...                  # the same

Modules: models.py (the model list), export.py (the conversions), job.py (one stage of one cell,
run in a child process), run.py (the driver: results JSONL, resumable), table.py (docs/zoo.md).
"""
