"""fedlib.models: output shapes and parameter counts against the layer specifications."""

import pytest
import torch

import fedlib
from fedlib import models, participation, problems


@pytest.mark.parametrize("name", sorted(models.available()))
def test_shape_and_parameter_count(name):
    m = models.build(name, seed=0)
    x = torch.zeros(3, *models.input_shape(name))
    assert m(x).shape == (3, 10)
    assert models.param_count(m) == models.spec_param_count(name)


def test_known_counts_and_cifar100():
    assert models.spec_param_count("fedsum_mnist_cnn") == 51480      # 100+1820+49050+510
    assert models.param_count(models.build("resnet18", num_classes=100)) == \
        models.spec_param_count("resnet18", num_classes=100)
    assert models.build("resnet18", num_classes=100)(torch.zeros(2, 3, 32, 32)).shape == (2, 100)


def test_seeded_initialisation():
    a, b = models.build("wj_cifar10_cnn", seed=3), models.build("wj_cifar10_cnn", seed=3)
    c = models.build("wj_cifar10_cnn", seed=4)
    pa, pb, pc = (torch.nn.utils.parameters_to_vector(m.parameters()) for m in (a, b, c))
    assert torch.equal(pa, pb) and not torch.equal(pa, pc)
    k = models.build("fedau_cifar10_cnn", seed=0)
    conv = k.convs[0]
    assert torch.count_nonzero(conv.bias) == 0                         # Kaiming init: zero biases
    assert abs(float(conv.weight.detach().std()) - (2 / 27) ** 0.5) < 0.05


def test_wang_ji_cnns_init_as_stated():
    """Wang & Ji's CIFAR-10 CNN initialises as the authors' code (IBM/fl-arbitrary-participation,
    model/cnn_cifar10.py): Kaiming-normal weights (ReLU gain, fan-in) and zero biases for the conv
    and hidden linear layers, the output layer as PyTorch's default. Their FashionMNIST CNN keeps
    PyTorch's default (uniform, nonzero biases), as notebook 08's paper store was computed;
    ``wj_fmnist_cnn_kaiming`` is that CNN with the authors' init."""
    kinds = (torch.nn.Conv2d, torch.nn.Linear)
    for name, n_layers in (("wj_cifar10_cnn", 5), ("wj_fmnist_cnn_kaiming", 4)):
        m = models.build(name, seed=0)
        layers = [x for x in m.modules() if isinstance(x, kinds)]
        assert len(layers) == n_layers
        for x in layers[:-1]:
            fan_in = x.weight[0].numel()
            assert torch.count_nonzero(x.bias) == 0
            # >= 800 draws a layer: a sample std within 10% is > 4 of its standard errors (1 / sqrt(2 n))
            assert abs(float(x.weight.detach().std()) / (2 / fan_in) ** 0.5 - 1) < 0.1
        assert torch.count_nonzero(layers[-1].bias) > 0
        assert float(layers[-1].weight.detach().abs().max()) <= layers[-1].weight[0].numel() ** -0.5
    f, k = models.build("wj_fmnist_cnn", seed=0), models.build("wj_fmnist_cnn_kaiming", seed=0)
    assert all(torch.count_nonzero(x.bias) > 0 for x in f.modules() if isinstance(x, kinds))
    # the two differ in their init only
    assert [p.shape for p in f.parameters()] == [p.shape for p in k.parameters()]


def test_short_names_are_of_known_models():
    """A claim's setting names a model by its short name; a model without one by its own name."""
    assert models.short_name("wj_fmnist_cnn") == "Wang & Ji's CNN"
    assert models.short_name("resnet18") == "resnet18"
    from fedlib.models import _SHORT
    assert set(_SHORT) <= set(models.available())


def test_resnet_groupnorm_has_no_running_state_and_batchnorm_option():
    m = models.build("resnet18")
    assert not list(m.buffers())
    assert any(isinstance(x, torch.nn.GroupNorm) for x in m.modules())
    bn = models.build("resnet18", norm="batch")
    assert not any(b.numel() for b in bn.buffers() if b.dtype.is_floating_point)
    with pytest.raises(ValueError, match="^norm"):
        models.build("resnet18", norm="layer")
    with pytest.raises(ValueError, match="^model"):
        models.build("vgg")


def test_torchvision_block_structure_when_available():
    try:
        import torchvision
    except Exception:  # noqa: BLE001 - CUDA build of torchvision on CPU machines
        pytest.skip("torchvision cannot be imported here")
    tv = torchvision.models.resnet18(num_classes=10)
    ours = models.build("resnet18")
    tv_blocks = [len(getattr(tv, f"layer{i}")) for i in range(1, 5)]
    assert tv_blocks == [2, 2, 2, 2] and len(ours.layers) == sum(tv_blocks)
    tv_convs = [m.weight.shape for n, m in tv.named_modules() if isinstance(m, torch.nn.Conv2d)
                and n.startswith("layer")]
    our_convs = [m.weight.shape for n, m in ours.named_modules() if isinstance(m, torch.nn.Conv2d)
                 and n.startswith("layers")]
    assert tv_convs == our_convs


@pytest.mark.parametrize("dataset,model,part", [
    ("mnist", "fedsum_mnist_cnn", {"partition": "dirichlet", "alpha": 0.5}),
    ("fashion_mnist", "wj_fmnist_cnn", {"partition": "majority_label", "similarity": 0.05}),
    ("svhn", "fedau_svhn_cnn", {"partition": "iid"}),
    ("cifar10", "focus_cifar10_cnn", {"partition": "dirichlet_prior", "alpha": 0.05}),
    ("cifar100", "resnet18", {"partition": "iid"}),
    ("cinic10", "fedau_cifar10_cnn", {"partition": "one_class"}),
])
def test_neural_problem_on_stand_ins_runs_one_round(dataset, model, part):
    prob = problems.neural(dataset=dataset, model=model, num_clients=10, batch_size=4, synthetic=True,
                           synthetic_sizes=(200, 20), **part)
    sched = participation.build("uniform", 10, 1, seed=0, per_round=2, local_steps=1)
    res = fedlib.run("fedsum", prob, sched, lr_local=0.01, progress=False)
    assert not res.diverged and res.history["test_acc"].notna().all()
    assert prob.label_counts.shape[0] == 10


def test_model_dataset_shape_mismatch():
    with pytest.raises(ValueError, match="^model"):
        problems.neural(dataset="mnist", model="fedsum_cifar10_cnn", synthetic=True,
                        synthetic_sizes=(100, 10), num_clients=5, partition="iid")


@pytest.mark.parametrize("model", sorted(models.available()))
def test_every_model_runs_a_vectorized_round(model):
    dataset = "mnist" if models.input_shape(model)[0] == 1 else "cifar10"
    prob = problems.neural(dataset=dataset, model=model, num_clients=4, batch_size=2, synthetic=True,
                           synthetic_sizes=(40, 8), partition="iid")
    sched = participation.build("full", 4, 1, local_steps=1)
    x0 = prob.initial_params()
    res = fedlib.run("fedavg", prob, sched, lr_local=0.01, progress=False)
    assert res.params.shape == x0.shape and not torch.equal(res.params, x0)
