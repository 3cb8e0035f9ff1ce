"""torch.ops.autoreg.*: gradcheck, agreement with grid_sample (autoreg.ops.reference),
the dispatcher's own checks (torch.library.opcheck: schema, fake kernels, autograd
registration) and torch.compile."""
import pytest
import torch

import autoreg
from autoreg import ops


def volumes(dtype, shape=(5, 6, 7), channels=2, scale=1.5, seed=0):
    g = torch.Generator().manual_seed(seed)
    image = torch.rand((1, channels) + shape, generator=g, dtype=dtype)
    u = (torch.rand((1, 3) + shape, generator=g, dtype=dtype) - 0.5) * 2 * scale
    return image, u


@pytest.mark.parametrize("padding", ["zeros", "border"])
def test_warp_matches_grid_sample_forward_and_backward(padding):
    image, u = volumes(torch.float64, (9, 10, 11), scale=3.0)
    a = [t.clone().requires_grad_() for t in (image, u)]
    b = [t.clone().requires_grad_() for t in (image, u)]
    ours = ops.warp(*a, "linear", padding)
    theirs = ops.reference.warp(*b, "linear", padding)
    torch.testing.assert_close(ours, theirs, atol=1e-12, rtol=0)
    weights = torch.rand_like(ours)
    (ours * weights).sum().backward()
    (theirs * weights).sum().backward()
    torch.testing.assert_close(a[0].grad, b[0].grad, atol=1e-10, rtol=0)
    torch.testing.assert_close(a[1].grad, b[1].grad, atol=1e-10, rtol=0)


def test_nearest_matches_grid_sample():
    image, u = volumes(torch.float32, (8, 8, 8), scale=2.0)
    u = u.round() + 0.25  # no ties, where rounding rules differ
    torch.testing.assert_close(ops.warp(image, u, "nearest"), ops.reference.warp(image, u, "nearest"), atol=0, rtol=0)


def test_compose_and_integrate_match_the_reference():
    _, u = volumes(torch.float64, (8, 9, 10))
    _, v = volumes(torch.float64, (8, 9, 10), seed=1)
    torch.testing.assert_close(ops.compose(u, v), ops.reference.compose(u, v), atol=1e-12, rtol=0)
    torch.testing.assert_close(ops.integrate(v, 5), ops.reference.integrate(v, 5), atol=1e-10, rtol=0)


@pytest.mark.parametrize("padding", ["zeros", "border"])
def test_warp_gradcheck(padding):
    image, u = volumes(torch.float64, (4, 5, 6), scale=0.8)
    # away from voxel boundaries, where trilinear interpolation is not differentiable
    u = u.round() + 0.3 + 0.4 * (u - u.round()).abs()
    assert torch.autograd.gradcheck(lambda i, d: ops.warp(i, d, "linear", padding),
                                    (image.requires_grad_(), u.requires_grad_()))


def test_compose_and_integrate_gradcheck():
    _, u = volumes(torch.float64, (4, 4, 5), scale=0.3)
    _, v = volumes(torch.float64, (4, 4, 5), scale=0.3, seed=1)
    assert torch.autograd.gradcheck(ops.compose, (u.requires_grad_(), v.requires_grad_()))
    assert torch.autograd.gradcheck(lambda w: ops.integrate(w, 3), (v.detach().clone().requires_grad_(),))


def test_opcheck():
    image, u = volumes(torch.float64, (4, 5, 6))
    torch.library.opcheck(torch.ops.autoreg.warp.default, (image.requires_grad_(), u.requires_grad_(), "linear", "border"))
    torch.library.opcheck(torch.ops.autoreg.compose.default, (u.detach().requires_grad_(), u.detach().flip(2)))


def test_torch_compile_traces_the_operators():
    image, u = volumes(torch.float32, (6, 6, 6))

    def f(image, u):
        return ops.warp(image, ops.compose(u, u) * 0.5).sum()

    compiled = torch.compile(f, backend="aot_eager", fullgraph=True)
    torch.testing.assert_close(compiled(image, u), f(image, u))


def test_errors_name_the_operator():
    with pytest.raises(RuntimeError, match="autoreg::warp"):
        ops.warp(torch.rand(1, 1, 4, 4, 4), torch.rand(1, 2, 4, 4, 4))
