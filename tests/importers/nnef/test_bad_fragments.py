"""Fragment definitions the Khronos parser would expand without bound (it crashes the process on
them) are refused before it sees them, with one clear error."""
import pytest

import estuary

HEAD = "version 1.0;\nextension KHR_enable_fragment_definitions;\n"
GRAPH = "graph g( x ) -> ( y ) { x = external<scalar>(shape = [1]); y = f(x); }\n"


def compile_text(tmp_path, text):
    path = tmp_path / "graph.nnef"
    path.write_text(text)
    return estuary.compile(str(path))


def test_self_recursive_fragment(tmp_path):
    text = HEAD + "fragment f( x: tensor<scalar> ) -> ( y: tensor<scalar> ) { y = f(x); }\n" + GRAPH
    with pytest.raises(estuary.ModelImportError, match=r"fragment 'f' calls itself \(f -> f\)"):
        compile_text(tmp_path, text)


def test_mutually_recursive_fragments(tmp_path):
    text = HEAD + ("fragment f( x: tensor<scalar> ) -> ( y: tensor<scalar> ) { t = relu(x); y = g2(t); }\n"
                   "fragment g2( x: tensor<scalar> ) -> ( y: tensor<scalar> ) { y = f(x); }\n") + GRAPH
    with pytest.raises(estuary.ModelImportError, match=r"calls itself \((f -> g2 -> f|g2 -> f -> g2)\)"):
        compile_text(tmp_path, text)


def test_expansion_bomb(tmp_path, monkeypatch):
    """25 fragments, each calling the one before twice: 2^25 relus (and the external) from a few lines."""
    lines = ["fragment f0( x: tensor<scalar> ) -> ( y: tensor<scalar> ) { y = relu(x); }"]
    lines += [f"fragment f{k}( x: tensor<scalar> ) -> ( y: tensor<scalar> ) {{ t = f{k - 1}(x); y = f{k - 1}(t); }}"
              for k in range(1, 26)]
    text = HEAD + "\n".join(lines) + "\n" + GRAPH.replace("f(x)", "f25(x)")
    with pytest.raises(estuary.ModelImportError, match="expands to 33554433 operations.*ESTUARY_NNEF_MAX_OPS"):
        compile_text(tmp_path, text)


def test_nested_fragments_within_the_limit_compile(tmp_path, monkeypatch):
    """Four levels (16 relus) compile; the limit is the environment's when set."""
    lines = ["fragment f0( x: tensor<scalar> ) -> ( y: tensor<scalar> ) { y = relu(x); }"]
    lines += [f"fragment f{k}( x: tensor<scalar> ) -> ( y: tensor<scalar> ) {{ t = f{k - 1}(x); y = f{k - 1}(t); }}"
              for k in range(1, 5)]
    text = HEAD + "\n".join(lines) + "\n" + GRAPH.replace("f(x)", "f4(x)")
    assert compile_text(tmp_path, text).vmfb
    monkeypatch.setenv("ESTUARY_NNEF_MAX_OPS", "8")
    with pytest.raises(estuary.ModelImportError, match="expands to 17 operations through its fragments, more than the limit of 8"):
        compile_text(tmp_path, text)


def test_deeply_chained_fragments_and_a_bad_limit(tmp_path, monkeypatch):
    lines = ["fragment f0( x: tensor<scalar> ) -> ( y: tensor<scalar> ) { y = relu(x); }"]
    lines += [f"fragment f{k}( x: tensor<scalar> ) -> ( y: tensor<scalar> ) {{ y = f{k - 1}(x); }}"
              for k in range(1, 300)]
    text = HEAD + "\n".join(lines) + "\n" + GRAPH.replace("f(x)", "f299(x)")
    with pytest.raises(estuary.ModelImportError, match="nests fragments more than 256 deep"):
        compile_text(tmp_path, text)
    monkeypatch.setenv("ESTUARY_NNEF_MAX_OPS", "lots")
    with pytest.raises(estuary.ModelImportError, match="ESTUARY_NNEF_MAX_OPS must be a whole number"):
        compile_text(tmp_path, HEAD + GRAPH.replace("f(x)", "relu(x)"))
