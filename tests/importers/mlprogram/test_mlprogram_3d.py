"""3-D convolution and pooling (torch Conv3d / MaxPool3d / AvgPool3d converted with ct.convert to
rank-5 MIL conv, max_pool, avg_pool), against the same module on torch CPU."""
import numpy as np
import pytest

import estuary

torch = pytest.importorskip("torch")


class Volume(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv3d(4, 6, (3, 2, 3), stride=(2, 1, 1), padding=(1, 0, 1), dilation=(1, 2, 1))
        self.grouped = torch.nn.Conv3d(4, 4, 2, groups=2, bias=False)

    def forward(self, x):
        a = self.conv(x)
        b = self.grouped(x)
        return torch.cat([
            a.flatten(), b.flatten(),
            torch.nn.functional.max_pool3d(x, (2, 3, 2), stride=(1, 2, 2), padding=(1, 1, 0)).flatten(),
            torch.nn.functional.avg_pool3d(x, 3, stride=2, padding=1, count_include_pad=True).flatten(),
            torch.nn.functional.avg_pool3d(x, 3, stride=2, padding=1, count_include_pad=False).flatten(),
            torch.nn.functional.avg_pool3d(x, 2, stride=2, ceil_mode=True, count_include_pad=False).flatten(),
        ])


def test_conv_and_pool_3d(tmp_path):
    import coremltools as ct

    torch.manual_seed(12)
    model = Volume().eval()
    x = torch.randn(2, 4, 5, 7, 6)
    ml = ct.convert(torch.jit.trace(model, x), inputs=[ct.TensorType(name="x", shape=x.shape)],
                    convert_to="mlprogram", minimum_deployment_target=ct.target.iOS17,
                    compute_precision=ct.precision.FLOAT32)
    spec = ml.get_spec().mlProgram.functions["main"]
    ops = {op.type for op in spec.block_specializations[spec.opset].operations}
    assert {"conv", "max_pool", "avg_pool"} <= ops, ops
    path = str(tmp_path / "volume.mlpackage")
    ml.save(path)
    got = next(iter(estuary.load(estuary.compile(path)).run({"x": x.numpy()}).values()))
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
