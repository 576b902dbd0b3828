"""NNEF models (a folder, a .tar/.tgz/.tar.gz container, or a bare graph.nnef) -> `nn` modules.

    load_model(source, shapes=None)

Converters live in importers/nnef/ops/<family>.py (each module registers its operations in
importers/nnef/ops.OPS; all of them are imported here). See docs/nnef.md for decisions.
"""


def load_model(source, shapes=None):
    """Import an NNEF model into an NNModule; `shapes` overrides external shapes {name: [dims]}."""
    import estuary.dialects  # noqa: F401
    from estuary.importers.nnef.container import ModelFiles
    from estuary.importers.nnef.converter import Converter
    from estuary.importers.nnef.loader import infer_shapes, parse
    from estuary.importers.nnef.ops import OPS

    OPS.load()
    files = ModelFiles(source)
    try:
        text = files.graph_text()
        quant_text = files.quant_text()
        graph = infer_shapes(files, parse(files, text, quant_text), shapes, text)
        return Converter(graph, files, text).build()
    finally:
        files.close()


__all__ = ["load_model"]
