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
    from estuary.importers.nnef import tract_reader
    from estuary.importers.nnef.loader import ParserRefusal, infer_shapes, parse, precheck
    from estuary.importers.nnef.ops import OPS

    OPS.load()
    files = ModelFiles(source)
    try:
        text, quant_text = precheck(files, files.graph_text(), files.quant_text())
        if tract_reader.is_tract_document(text):
            return tract_reader.load(files, text, quant_text, shapes)
        try:
            graph = infer_shapes(files, parse(files, text, quant_text, checked=True), shapes, text)
        except ParserRefusal as refusal:
            return _as_exported(files, text, quant_text, shapes, refusal)
        return Converter(graph, files, text).build()
    finally:
        files.close()


def _as_exported(files, text, quant_text, shapes, refusal):
    """A document the Khronos parser refuses, read with tract's rules as exporters rely on them
    (torch-to-nnef's Khronos target: a rank-0 variable as epsilon, `gelu(x, 0.0)`, a redefined
    `gelu`, `erf`, ...); when that fails too, the parser's refusal is the error."""
    from estuary.base.errors import EstuaryError
    from estuary.importers.nnef import tract_reader
    from estuary.importers.nnef.loader import ParserRefusal

    if quant_text is not None:
        raise refusal
    try:
        return tract_reader.load(files, text, None, shapes)
    except EstuaryError as e:
        raise ParserRefusal(f"{refusal}\n(read with tract's conventions instead: {e})") from None


__all__ = ["load_model"]
