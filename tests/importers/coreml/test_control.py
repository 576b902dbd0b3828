"""Core ML control flow: branch (constant condition inlined, run-time condition selected), loop
(unrolled: fixed count, constant input count, while loop with a constant-folded condition,
loopBreak/loopContinue), and the clear errors for data-dependent control flow."""
import numpy as np
import pytest

pytest.importorskip("coremltools")
from coremltools.models import datatypes  # noqa: E402
from coremltools.models.neural_network import NeuralNetworkBuilder  # noqa: E402

from tests.importers.coreml.util import run, save  # noqa: E402
from estuary.base.errors import EstuaryError  # noqa: E402


def builder(inputs, outputs):
    return NeuralNetworkBuilder([(n, datatypes.Array(*s)) for n, s in inputs], [(n, None) for n in outputs],
                                disable_rank5_shape_mapping=True)


def sub(spec):
    return NeuralNetworkBuilder(nn_spec=spec, disable_rank5_shape_mapping=True)


def _const(b, name, value):
    value = np.asarray(value, np.float32).reshape(-1)
    b.add_load_constant_nd(name, name, value, value.shape)


def test_branches_and_loops(tmp_path, rng):
    x = rng.standard_normal((2, 3)).astype(np.float32)
    outs = ["bc", "br", "bo", "l3", "ln", "lw", "lb"]
    b = builder([("x", x.shape), ("flag", (1,))], outs)
    _const(b, "one", 1.0)
    _const(b, "two", 2.0)
    _const(b, "zero", 0.0)
    # branch on a constant: the else side is inlined
    b.add_copy("bc0", "x", "bc")
    br = b.add_branch("constant_branch", "zero")
    sub(br.branch.ifBranch).add_multiply_broadcastable("m", ["x", "two"], "bc")
    sub(br.branch.elseBranch).add_add_broadcastable("a", ["x", "one"], "bc")
    # branch on a run-time flag: both computed, selected
    b.add_copy("br0", "x", "br")
    br = b.add_branch("runtime_branch", "flag")
    sub(br.branch.ifBranch).add_multiply_broadcastable("m", ["x", "two"], "br")
    sub(br.branch.elseBranch).add_add_broadcastable("a", ["x", "one"], "br")
    # run-time branch writing only on one side: the else side keeps the value from before
    b.add_copy("bo0", "x", "bo")
    br = b.add_branch("one_sided", "flag")
    sub(br.branch.ifBranch).add_multiply_broadcastable("m", ["bo", "two"], "bo")
    # for loop, 3 iterations: l3 = l3 * 2 + 1
    b.add_copy("l30", "x", "l3")
    lp = b.add_loop("for3", max_iterations=3)
    body = sub(lp.loop.bodyNetwork)
    body.add_multiply_broadcastable("m", ["l3", "two"], "t")
    body.add_add_broadcastable("a", ["t", "one"], "l3")
    # loop count from a constant input (4): ln = ln + 1
    _const(b, "four", 4.0)
    b.add_copy("ln0", "x", "ln")
    lp = b.add_loop("for_input", input_name="four")
    sub(lp.loop.bodyNetwork).add_add_broadcastable("a", ["ln", "one"], "ln")
    # while loop: i = 0; while i < 70: lw = lw + 1; i = i + 1 (the condition folds to a constant)
    b.add_copy("lw0", "x", "lw")
    b.add_copy("i0", "zero", "i")
    _const(b, "five", 70.0)
    lp = b.add_loop("while5", condition="c", condition_network=None)
    cond = sub(lp.loop.conditionNetwork)
    cond.add_less_than("lt", ["i", "five"], "c")
    body = sub(lp.loop.bodyNetwork)
    body.add_add_broadcastable("m", ["lw", "one"], "lw")
    body.add_add_broadcastable("inc", ["i", "one"], "i")
    # loopBreak in a constant branch after 2 iterations, loopContinue skipping the second half
    b.add_copy("lb0", "x", "lb")
    b.add_copy("j0", "zero", "j")
    _const(b, "two_c", 2.0)
    lp = b.add_loop("with_break", max_iterations=10)
    body = sub(lp.loop.bodyNetwork)
    body.add_add_broadcastable("inc", ["j", "one"], "j")
    body.add_add_broadcastable("a", ["lb", "one"], "lb")
    body.add_greater_than("ge", ["j", "two_c"], "stop", use_greater_than_equal=True)
    stop = body.add_branch("maybe_stop", "stop")
    sub(stop.branch.ifBranch).add_loop_break("brk")
    body.add_loop_continue("cont")
    body.add_multiply_broadcastable("never", ["lb", "zero"], "lb")
    path = save(b, tmp_path)
    for flag in (1.0, 0.0):
        got = run(path, {"x": x, "flag": np.array([flag], np.float32)})
        x64 = x.astype(np.float64)
        np.testing.assert_array_equal(got["bc"], (x64 + 1).astype(np.float32))
        np.testing.assert_array_equal(got["br"], (x64 * 2 if flag else x64 + 1).astype(np.float32))
        np.testing.assert_array_equal(got["bo"], (x64 * 2 if flag else x64).astype(np.float32))
        l3 = x.copy()
        for _ in range(3):  # float32 arithmetic, one layer at a time
            l3 = l3 * np.float32(2) + np.float32(1)
        np.testing.assert_array_equal(got["l3"], l3)
        np.testing.assert_array_equal(got["ln"], (x.astype(np.float32) + 1 + 1 + 1 + 1))
        lw = x.copy()
        for _ in range(70):
            lw = lw + np.float32(1)
        np.testing.assert_array_equal(got["lw"], lw)
        np.testing.assert_array_equal(got["lb"], (x.astype(np.float32) + 1 + 1))


def test_data_dependent_loop_is_refused(tmp_path):
    b = builder([("x", (1,))], ["y"])
    b.add_copy("y0", "x", "y")
    _const(b, "one", 1.0)
    lp = b.add_loop("runtime_while", condition="c")
    sub(lp.loop.conditionNetwork).add_greater_than("gt", ["y", "one"], "c")
    sub(lp.loop.bodyNetwork).add_add_broadcastable("a", ["y", "one"], "y")
    with pytest.raises(EstuaryError) as e:
        run(save(b, tmp_path), {"x": np.array([3.0], np.float32)})
    assert "runtime_while" in str(e.value) and "data-dependent" in str(e.value)
